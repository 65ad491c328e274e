//! Why an input was refused: a stable code, a message that names the field, and a JSON pointer.
//!
//! Every validation layer (envelope, statement, claim, keys) reports a [`Rejection`]. The codes
//! are part of the CLI contract (docs/output.md): agents branch on them, so a code is never
//! renamed. Exit codes are assigned from them in one place, `cli::exit`.

use std::fmt;

/// A stable, UPPER_SNAKE error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    /// The text is not JSON at all (with its line and column).
    BadJson,
    BadEnvelope,
    BadSignature,
    UntrustedSigner,
    UnsupportedPayloadType,
    BadStatement,
    UnsupportedPredicateType,
    SubjectMismatch,
    SchemaViolation,
    DuplicateKey,
    IdMismatch,
    PredicateWithoutExpression,
    UnknownPredicateLanguage,
    PredicateParseError,
    PredicateDigestMismatch,
    RoleViolation,
    TooLarge,
    BadKey,
    WeakKey,
    /// An input that could not be read at all.
    Unreadable,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::BadJson => "BAD_JSON",
            Code::BadEnvelope => "BAD_ENVELOPE",
            Code::BadSignature => "BAD_SIGNATURE",
            Code::UntrustedSigner => "UNTRUSTED_SIGNER",
            Code::UnsupportedPayloadType => "UNSUPPORTED_PAYLOAD_TYPE",
            Code::BadStatement => "BAD_STATEMENT",
            Code::UnsupportedPredicateType => "UNSUPPORTED_PREDICATE_TYPE",
            Code::SubjectMismatch => "SUBJECT_MISMATCH",
            Code::SchemaViolation => "SCHEMA_VIOLATION",
            Code::DuplicateKey => "DUPLICATE_KEY",
            Code::IdMismatch => "ID_MISMATCH",
            Code::PredicateWithoutExpression => "PREDICATE_WITHOUT_EXPRESSION",
            Code::UnknownPredicateLanguage => "UNKNOWN_PREDICATE_LANGUAGE",
            Code::PredicateParseError => "PREDICATE_PARSE_ERROR",
            Code::PredicateDigestMismatch => "PREDICATE_DIGEST_MISMATCH",
            Code::RoleViolation => "ROLE_VIOLATION",
            Code::TooLarge => "TOO_LARGE",
            Code::BadKey => "BAD_KEY",
            Code::WeakKey => "WEAK_KEY",
            Code::Unreadable => "IO_ERROR",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One reason an input was refused. `details` holds further violations of the same code
/// (a schema check reports every offending field, not only the first).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct Rejection {
    pub code: Code,
    pub message: String,
    pub pointer: Option<String>,
    pub details: Vec<Violation>,
}

/// One offending field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub pointer: String,
    pub message: String,
}

impl Rejection {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Rejection {
            code,
            message: message.into(),
            pointer: None,
            details: Vec::new(),
        }
    }

    pub fn at(code: Code, pointer: impl Into<String>, message: impl Into<String>) -> Self {
        Rejection {
            code,
            message: message.into(),
            pointer: Some(pointer.into()),
            details: Vec::new(),
        }
    }

    /// Prefixes the pointer, for a rejection found inside a nested document
    /// (the claim sits at `/predicate` of the statement).
    pub fn within(mut self, prefix: &str) -> Self {
        self.pointer = self.pointer.map(|p| format!("{prefix}{p}"));
        for d in &mut self.details {
            d.pointer = format!("{prefix}{}", d.pointer);
        }
        self
    }
}
