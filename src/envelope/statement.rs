//! in-toto Statement v1: the payload of an elench envelope.
//!
//! Parsed from exactly the verified payload bytes. Checks the Statement's own rules and that
//! the predicate type is the elench claim; the claim itself is checked by `claim`.

use crate::error::{Code, Rejection};
use crate::json::{parse_strict, JsonError};
use serde_json::{json, Map, Value};

pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
pub const PREDICATE_TYPE: &str = "https://elench.dev/claim/v0.1";
/// The subject digest algorithm that names a tree: the claim's `anchor.tree` must be given
/// under this name (a SHA-256 of something else is not a tree id, however it looks).
pub const TREE_DIGEST: &str = "gitTree";

/// A Statement whose structure has been checked; `predicate` is the claim, unchecked.
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    /// Every digest of every subject, as (algorithm, value).
    pub subject_digests: Vec<(String, String)>,
    pub predicate: Value,
}

fn bad(pointer: &str, message: impl Into<String>) -> Rejection {
    Rejection::at(Code::BadStatement, pointer, message)
}

impl Statement {
    /// Parses verified payload bytes as a Statement carrying an elench claim.
    pub fn parse(payload: &[u8]) -> Result<Statement, Rejection> {
        let mut value = parse_strict(payload).map_err(|e| match e {
            JsonError::DuplicateKey { .. } => Rejection {
                code: Code::DuplicateKey,
                pointer: e.pointer().map(str::to_owned),
                message: format!("payload: {e}"),
                details: Vec::new(),
            },
            // A number beyond ±2^53 (or nesting too deep) inside the claim breaks a rule of
            // the claim, as `elench sign` reports it of the same claim: SCHEMA_VIOLATION,
            // with the field's pointer. Elsewhere the Statement itself is at fault.
            JsonError::NotIJson { ref pointer, .. }
                if pointer == "/predicate" || pointer.starts_with("/predicate/") =>
            {
                let at = pointer.clone();
                Rejection {
                    code: Code::SchemaViolation,
                    message: format!("claim: {e}"),
                    details: vec![crate::error::Violation {
                        pointer: at.clone(),
                        message: e.to_string(),
                    }],
                    pointer: Some(at),
                }
            }
            other => Rejection {
                code: Code::BadStatement,
                pointer: other.pointer().map(str::to_owned),
                message: format!("payload is not an in-toto Statement: {other}"),
                details: Vec::new(),
            },
        })?;
        let obj = value
            .as_object_mut()
            .ok_or_else(|| bad("", "payload must be a JSON object (an in-toto Statement)"))?;
        match obj.get("_type") {
            Some(Value::String(t)) if t == STATEMENT_TYPE => {}
            Some(Value::String(t)) => {
                return Err(bad(
                    "/_type",
                    format!("_type is {t:?}; expected {STATEMENT_TYPE:?}"),
                ))
            }
            _ => return Err(bad("/_type", format!("_type must be {STATEMENT_TYPE:?}"))),
        }
        let subjects = match obj.get("subject") {
            Some(Value::Array(a)) if !a.is_empty() => a,
            _ => return Err(bad("/subject", "subject must be a non-empty array")),
        };
        let mut subject_digests = Vec::new();
        for (i, s) in subjects.iter().enumerate() {
            let at = format!("/subject/{i}");
            let s = s
                .as_object()
                .ok_or_else(|| bad(&at, "a subject must be an object"))?;
            if let Some(name) = s.get("name") {
                if !name.is_string() {
                    return Err(bad(&format!("{at}/name"), "name must be a string"));
                }
            }
            let digest = match s.get("digest") {
                Some(Value::Object(d)) if !d.is_empty() => d,
                _ => {
                    return Err(bad(
                        &format!("{at}/digest"),
                        "digest must be a non-empty object of algorithm to hex value",
                    ))
                }
            };
            for (alg, v) in digest {
                let v = v.as_str().ok_or_else(|| {
                    bad(
                        &format!("{at}/digest/{}", crate::json::escape_token(alg)),
                        "a digest value must be a string",
                    )
                })?;
                subject_digests.push((alg.clone(), v.to_owned()));
            }
        }
        match obj.get("predicateType") {
            Some(Value::String(t)) if t == PREDICATE_TYPE => {}
            Some(Value::String(t)) => {
                return Err(Rejection::at(
                    Code::UnsupportedPredicateType,
                    "/predicateType",
                    format!("predicateType {t:?} is not supported; expected {PREDICATE_TYPE:?}"),
                ))
            }
            _ => return Err(bad("/predicateType", "predicateType must be a string")),
        }
        // Moved out, not copied: the claim is the bulk of the payload.
        let predicate = match obj.remove("predicate") {
            Some(p @ Value::Object(_)) => p,
            _ => return Err(bad("/predicate", "predicate must be an object (the claim)")),
        };
        Ok(Statement {
            subject_digests,
            predicate,
        })
    }

    /// Checks that some subject's `gitTree` digest equals the claim's `anchor.tree`.
    pub fn check_subject(&self, anchor_tree: &str) -> Result<(), Rejection> {
        if self
            .subject_digests
            .iter()
            .any(|(alg, d)| alg == TREE_DIGEST && d == anchor_tree)
        {
            return Ok(());
        }
        let listed: Vec<String> = self
            .subject_digests
            .iter()
            .map(|(alg, d)| format!("{alg}:{d}"))
            .collect();
        let hint = if self.subject_digests.iter().any(|(_, d)| d == anchor_tree) {
            format!(" (the tree is there, but not as a {TREE_DIGEST:?} digest; `elench sign` writes it so)")
        } else {
            String::new()
        };
        Err(Rejection::at(
            Code::SubjectMismatch,
            "/subject",
            format!(
                "no subject has a {TREE_DIGEST:?} digest equal to the claim's anchor.tree \
                 {anchor_tree}; subjects have [{}]{hint}",
                listed.join(", ")
            ),
        ))
    }
}

/// Wraps a claim in a Statement whose subject is its anchor tree, and serializes it in its
/// RFC 8785 form: one claim signed with one key is one envelope, whatever member order or
/// whitespace the claim was written with.
pub fn statement_bytes(predicate: &Map<String, Value>, anchor_tree: &str) -> Vec<u8> {
    let st = json!({
        "_type": STATEMENT_TYPE,
        "subject": [{"name": "tree", "digest": {TREE_DIGEST: anchor_tree}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": predicate,
    });
    // Canonical form fails only for a number JSON text cannot hold, which a `Value` never
    // has; the plain text is then still a correct Statement.
    crate::jcs::canonical(&st).unwrap_or_else(|_| st.to_string().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(v: Value) -> Result<Statement, Rejection> {
        Statement::parse(v.to_string().as_bytes())
    }

    #[test]
    fn checks_type_subject_and_predicate_type() {
        let good = json!({"_type": STATEMENT_TYPE, "subject":[{"name":"t","digest":{"gitTree":"ab"}}],
            "predicateType": PREDICATE_TYPE, "predicate": {}});
        let s = st(good.clone()).unwrap();
        assert!(s.check_subject("ab").is_ok());
        assert_eq!(
            s.check_subject("cd").unwrap_err().code,
            Code::SubjectMismatch
        );

        // The tree under another algorithm name is not the tree.
        let mut v = good.clone();
        v["subject"][0]["digest"] = json!({"sha256": "ab"});
        let e = st(v).unwrap().check_subject("ab").unwrap_err();
        assert_eq!(e.code, Code::SubjectMismatch);
        assert!(e.message.contains("gitTree"), "{}", e.message);

        let mut v = good.clone();
        v["predicateType"] = json!("https://slsa.dev/provenance/v1");
        assert_eq!(st(v).unwrap_err().code, Code::UnsupportedPredicateType);

        let mut v = good.clone();
        v["_type"] = json!("https://in-toto.io/Statement/v0.1");
        assert_eq!(st(v).unwrap_err().pointer.as_deref(), Some("/_type"));

        let mut v = good.clone();
        v["subject"] = json!([]);
        assert_eq!(st(v).unwrap_err().pointer.as_deref(), Some("/subject"));

        assert_eq!(
            Statement::parse(b"not json").unwrap_err().code,
            Code::BadStatement
        );
    }
}
