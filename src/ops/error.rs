//! Every way a command can fail, and the one place that maps each to an error code and an
//! exit class (docs/output.md). The numbers a process exits with are the command line's
//! (`cli::failure`); here a failure only says which kind of ending it is ([`ExitClass`]).

use crate::error::{Code, Rejection};
use serde_json::{json, Value};

/// Which kind of ending a failure is. Each front end gives it its own form: the command line
/// an exit number (`cli::failure`), the MCP server a tool result marked as an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitClass {
    /// Nothing was changed: an input, the request or the data it named was refused.
    Refused,
    /// Part of the work was done and stands; the rest was not.
    Partial,
    /// Something the command needs is missing or unusable (no store, damaged data).
    Precondition,
    /// The id or key asked about does not exist.
    NotFound,
    /// Busy for now; the identical request may succeed later.
    Unavailable,
    /// The gate decided the tree may not ship: an answer, not an error of elench's.
    GateFailed,
    /// Stopped at the time limit.
    Timeout,
    /// Stopped by this signal.
    Signal(i32),
    /// As the code's own row of the error table says.
    OfCode(Code),
    /// A bug or an environment fault elench did not expect.
    Internal,
}

/// The signal a stop at the time limit is recorded as (the classic alarm), so that every
/// place that asks "was I stopped?" asks it the same way.
pub const TIMEOUT_SIGNAL: i32 = libc::SIGALRM;

/// An input of an operation, by what it is. The library never spells how a front end takes
/// it: a message names one as `‹limit›` (an input of this request) or `‹-role›` (an option of
/// a command line given as advice), and each front end words it (`word`): the CLI as its
/// option (`--limit`), the MCP server as the call's field (`limit`) where the call has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Param {
    All,
    Anchor,
    At,
    Batch,
    Checkpoint,
    CommandTimeout,
    Cursor,
    Expose,
    Force,
    /// The claim ids a request names.
    Id,
    Jobs,
    Key,
    Level,
    Limit,
    Memory,
    Name,
    NoIgnore,
    NoSandbox,
    Path,
    Processes,
    Repair,
    Repeat,
    Role,
    Scratch,
    Store,
    Timeout,
    Tree,
    Trust,
    Wait,
}

impl Param {
    pub const ALL: [Param; 29] = [
        Param::All,
        Param::Anchor,
        Param::At,
        Param::Batch,
        Param::Checkpoint,
        Param::CommandTimeout,
        Param::Cursor,
        Param::Expose,
        Param::Force,
        Param::Id,
        Param::Jobs,
        Param::Key,
        Param::Level,
        Param::Limit,
        Param::Memory,
        Param::Name,
        Param::NoIgnore,
        Param::NoSandbox,
        Param::Path,
        Param::Processes,
        Param::Repair,
        Param::Repeat,
        Param::Role,
        Param::Scratch,
        Param::Store,
        Param::Timeout,
        Param::Tree,
        Param::Trust,
        Param::Wait,
    ];

    /// Its name in messages: lower case, words joined by `_`.
    pub fn name(self) -> &'static str {
        match self {
            Param::All => "all",
            Param::Anchor => "anchor",
            Param::At => "at",
            Param::Batch => "batch",
            Param::Checkpoint => "checkpoint",
            Param::CommandTimeout => "command_timeout",
            Param::Cursor => "cursor",
            Param::Expose => "expose",
            Param::Force => "force",
            Param::Id => "id",
            Param::Jobs => "jobs",
            Param::Key => "key",
            Param::Level => "level",
            Param::Limit => "limit",
            Param::Memory => "memory",
            Param::Name => "name",
            Param::NoIgnore => "no_ignore",
            Param::NoSandbox => "no_sandbox",
            Param::Path => "path",
            Param::Processes => "processes",
            Param::Repair => "repair",
            Param::Repeat => "repeat",
            Param::Role => "role",
            Param::Scratch => "scratch",
            Param::Store => "store",
            Param::Timeout => "timeout",
            Param::Tree => "tree",
            Param::Trust => "trust",
            Param::Wait => "wait",
        }
    }

    pub fn from_name(name: &str) -> Option<Param> {
        Param::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// How a message names a [`Param`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named {
    /// `‹name›`: an input of the request that failed.
    Input(Param),
    /// `‹-name›`: an option of an elench command line the message advises running.
    Advice(Param),
}

/// `text` with every `‹name›` and `‹-name›` a [`Param`] has replaced by what `say` makes of
/// it; anything else between the marks is left as it is.
pub fn word(text: &str, say: &dyn Fn(Named) -> String) -> String {
    if !text.contains('‹') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('‹') {
        out.push_str(&rest[..open]);
        let after = &rest[open + '‹'.len_utf8()..];
        let named = after.find('›').and_then(|close| {
            let inner = &after[..close];
            let named = match inner.strip_prefix('-') {
                Some(n) => Param::from_name(n).map(Named::Advice),
                None => Param::from_name(inner).map(Named::Input),
            };
            named.map(|n| (n, close))
        });
        match named {
            Some((n, close)) => {
                out.push_str(&say(n));
                rest = &after[close + '›'.len_utf8()..];
            }
            None => {
                out.push('‹');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Every string in `v` worded by `say` ([`word`]): the `error` object of a failure.
pub fn word_json(v: &mut Value, say: &dyn Fn(Named) -> String) {
    match v {
        Value::String(s) if s.contains('‹') => *s = word(s, say),
        Value::Array(items) => items.iter_mut().for_each(|i| word_json(i, say)),
        Value::Object(m) => m.values_mut().for_each(|i| word_json(i, say)),
        _ => {}
    }
}

/// The name of a signal as people and the spec write it.
pub fn signal_name(signal: i32) -> String {
    match signal {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGALRM => "SIGALRM".into(),
        s => format!("signal {s}"),
    }
}

fn stopped_message(signal: i32, limit_ms: Option<u64>) -> String {
    if signal == TIMEOUT_SIGNAL {
        let limit = match limit_ms {
            Some(ms) if ms > 0 => format!("the time limit of {}", seconds_text(ms)),
            _ => "its time limit".to_owned(),
        };
        format!(
            "stopped at {limit}; everything reported as done is stored (raise the limit with \
             ‹-timeout› SECONDS, on check ‹-command_timeout› SECONDS; 0 for none)"
        )
    } else {
        format!(
            "interrupted by {}; everything reported as done is stored",
            signal_name(signal)
        )
    }
}

/// Milliseconds as seconds for people: "30 s", "0.5 s".
fn seconds_text(ms: u64) -> String {
    // A whole number of seconds prints without a fraction ("30 s").
    format!("{} s", ms as f64 / 1000.0)
}

/// The code of an argument error; the response's `error.code` too, unless the first error is
/// a made-up identifier ([`AGENT_INPUT_CODE`]).
pub const CODE: Code = Code::BadArguments;

/// The code of an identifier (a claim id, a keyid, a remote name) refused because it holds a
/// pattern no identifier has and an agent's made-up one often does: a path traversal,
/// percent-encoding, a query or a fragment (the CLI Agent Spec's REQ-F-045).
pub const AGENT_INPUT_CODE: Code = Code::InvalidAgentInput;

/// The pattern a refused identifier holds, by the name `error.rejected_pattern` gives it, if it
/// holds one: `path_traversal` (`../`, `..\`, also percent-encoded: `..%2f`, `%2e%2e/`),
/// `percent_encoded` (`%` and two hex digits), `query` (`?` or `&`) or `fragment` (`#`).
/// Only ever asked about a value already refused: it decides the code, never whether a value
/// is accepted. File paths are never asked about: they are the caller's own files, `../` and
/// all.
pub fn rejected_pattern(value: &str) -> Option<&'static str> {
    let lower = value.to_ascii_lowercase();
    let decoded = lower
        .replace("%2e", ".")
        .replace("%2f", "/")
        .replace("%5c", "\\");
    let traversal = decoded == ".."
        || ["../", "..\\", "/..", "\\.."]
            .iter()
            .any(|t| decoded.contains(t));
    let bytes = value.as_bytes();
    let percent = bytes
        .windows(3)
        .any(|w| w[0] == b'%' && w[1].is_ascii_hexdigit() && w[2].is_ascii_hexdigit());
    if traversal {
        Some("path_traversal")
    } else if percent {
        Some("percent_encoded")
    } else if value.contains(['?', '&']) {
        Some("query")
    } else if value.contains('#') {
        Some("fragment")
    } else {
        None
    }
}

/// What a rejected pattern is, for people.
fn pattern_text(pattern: &str) -> &'static str {
    match pattern {
        "path_traversal" => "a path traversal (`..` beside a path separator)",
        "percent_encoded" => "percent-encoding (`%` and two hex digits)",
        "query" => "a query (`?` or `&`)",
        _ => "a fragment (`#`)",
    }
}

/// Which input an [`InputError`] is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// An input of the operation, by what it is; each front end words it (`‹limit›`).
    Param(Param),
    /// An input as the front end that refused it names it, shown as it is: something the
    /// library has no [`Param`] for (a token that means nothing, an environment variable).
    Named(String),
}

impl From<Param> for Input {
    fn from(p: Param) -> Input {
        Input::Param(p)
    }
}

/// One refused input of a request, found before any work was done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    pub param: Input,
    /// The value refused, when one was given.
    pub value: Option<String>,
    /// What is wrong, and what to do.
    pub message: String,
    /// For a made-up identifier, the pattern that gave it away ([`rejected_pattern`]); its
    /// code is then [`AGENT_INPUT_CODE`].
    pub pattern: Option<&'static str>,
}

impl InputError {
    pub fn new(param: impl Into<Input>, value: Option<&str>, message: impl Into<String>) -> Self {
        InputError {
            param: param.into(),
            value: value.map(str::to_owned),
            message: message.into(),
            pattern: None,
        }
    }

    /// An identifier `param` refused as `value`: [`AGENT_INPUT_CODE`] when it holds a
    /// [`rejected_pattern`], the message then saying which; else an ordinary input error.
    pub fn identifier(param: impl Into<Input>, value: &str, message: impl Into<String>) -> Self {
        let mut e = InputError::new(param, Some(value), message);
        if let Some(p) = rejected_pattern(value) {
            e.message = format!(
                "{}; it holds {}, which no identifier has",
                e.message,
                pattern_text(p)
            );
            e.pattern = Some(p);
        }
        e
    }

    /// `BAD_ARGUMENTS`, or `INVALID_AGENT_INPUT` for a made-up identifier.
    pub fn code(&self) -> Code {
        if self.pattern.is_some() {
            AGENT_INPUT_CODE
        } else {
            CODE
        }
    }

    /// One entry of `error.errors`: `{code, param, message, value?, rejected_pattern?}` (the
    /// CLI Agent Spec's validation error, REQ-C-006; the pattern, REQ-F-045). A [`Param`] is
    /// written as its mark (`‹limit›`), for the front end to word.
    pub fn to_json(&self) -> Value {
        let param = match &self.param {
            Input::Param(p) => format!("‹{}›", p.name()),
            Input::Named(n) => n.clone(),
        };
        let mut v = json!({"code": self.code(), "param": param, "message": self.message});
        if let Some(value) = &self.value {
            v["value"] = json!(value);
        }
        if let Some(p) = self.pattern {
            v["rejected_pattern"] = json!(p);
        }
        v
    }
}

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// An input was refused (exit 2). `source` names the file, `line` the bundle line.
    #[error("{}", .rejection.message)]
    Rejected {
        rejection: Rejection,
        input: Option<String>,
        line: Option<usize>,
    },
    /// Several inputs, all refused (exit 2).
    #[error("{0}")]
    AllRejected(String),
    /// The request itself is wrong (exit 2): `code` says how (`BAD_ARGUMENTS` unless told),
    /// `param` which input is at fault, when one is; each front end words it.
    #[error("{message}")]
    Usage {
        code: Code,
        param: Option<Param>,
        message: String,
    },
    /// Inputs of the request are wrong, found before any work was done (exit 2): `message`
    /// says what is wrong first, `errors` is every error found, that one included.
    #[error("{message}")]
    Inputs {
        message: String,
        errors: Vec<InputError>,
    },
    /// A file could not be read or written (exit 2: nothing was changed).
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    /// Stored or supplied data is wrong in a way other than one refused input (exit 2).
    #[error("{message}")]
    Invalid { code: Code, message: String },
    /// A short claim id matches several claims (exit 2): `candidates` are the first of them,
    /// `more` says whether there are others.
    #[error("{input} matches several claims: {}{}; give more digits", .candidates.join(", "), if *.more { ", and more" } else { "" })]
    Ambiguous {
        input: String,
        candidates: Vec<String>,
        more: bool,
    },
    /// A destructive command was not confirmed (exit 2, nothing changed); `would_affect` says
    /// what it would have changed.
    #[error("{message}")]
    ConfirmationRequired {
        message: String,
        would_affect: Value,
    },
    /// A precondition is not met, e.g. no store (exit 4).
    #[error("{message}")]
    Precondition { code: Code, message: String },
    /// An id or key that does not exist (exit 5).
    #[error("{message}")]
    NotFound { code: Code, message: String },
    /// Retryable unavailability, e.g. the store is locked (exit 12).
    #[error("{message}")]
    Unavailable { code: Code, message: String },
    /// Some inputs were accepted and some rejected (exit 3); `data` says which.
    #[error("{0}")]
    Partial(String),
    /// Exit 3 from a command whose partial result is not rejected inputs (`check`: claims
    /// that came out inconclusive), with what to do about it in place of the manual's
    /// suggestion for `PARTIAL_FAILURE`, which speaks of `data.rejections`.
    #[error("{message}")]
    PartialWith {
        message: String,
        suggestion: &'static str,
    },
    /// A failure whose code decides its exit code (`Code::exit`; exit 1 for a code that
    /// names none): `REMOTE_REWOUND` and the trust policy's codes.
    #[error("{message}")]
    Coded { code: Code, message: String },
    /// A remote's log could not be shown whole and unrewound, or its witnesses did not meet
    /// their quorum (exit 3): what verified is still ingested, what was pushed is there.
    #[error("{message}")]
    Witness { code: Code, message: String },
    /// A policy file that does not parse or says something impossible (exit 2).
    #[error("{path}: {error}")]
    BadPolicy {
        path: String,
        error: crate::gate::PolicyError,
    },
    /// The gate ran and the tree may not ship (exit 79): a decision, not
    /// an error of elench's, so CI can tell "may not ship" from "could not decide".
    #[error("{0}")]
    GateFailed(String),
    /// Stopped early, after finishing the work in hand: by SIGINT (exit 130) or SIGTERM
    /// (exit 143), `CANCELLED`; or at the time limit, recorded as SIGALRM
    /// ([`TIMEOUT_SIGNAL`]), `TIMEOUT` with exit 10. `limit_ms`: the time limit in force, in
    /// milliseconds (0: none), when the front end knows it; the operation that stopped does
    /// not, so the front end fills it in ([`Failure::interrupted`] leaves it out).
    #[error("{}", stopped_message(*signal, *limit_ms))]
    Interrupted { signal: i32, limit_ms: Option<u64> },
    /// Stored data is damaged (exit 4: a precondition; `fsck` says more, `fsck --repair` fixes).
    #[error("{0}")]
    Corrupt(String),
    /// A bug or an environment fault elench did not expect (exit 1).
    #[error("{0}")]
    Internal(String),
}

impl Failure {
    /// The request is wrong ([`Failure::Usage`], `BAD_ARGUMENTS`), at `param` when one input
    /// is at fault.
    pub fn usage(param: Option<Param>, message: String) -> Failure {
        Failure::Usage {
            code: CODE,
            param,
            message,
        }
    }

    pub fn rejected(rejection: Rejection, input: Option<String>) -> Failure {
        Failure::Rejected {
            rejection,
            input,
            line: None,
        }
    }

    /// Stopped by `signal` ([`Failure::Interrupted`]), the time limit not yet known.
    pub fn interrupted(signal: i32) -> Failure {
        Failure::Interrupted {
            signal,
            limit_ms: None,
        }
    }

    pub fn io(path: impl std::fmt::Display, err: impl std::fmt::Display) -> Failure {
        Failure::Io {
            path: path.to_string(),
            message: err.to_string(),
        }
    }

    pub fn code(&self) -> Code {
        match self {
            Failure::Rejected { rejection, .. } => rejection.code,
            Failure::AllRejected(_) => Code::AllRejected,
            Failure::ConfirmationRequired { .. } => Code::ConfirmationRequired,
            Failure::Usage { code, .. } => *code,
            // The first error's: INVALID_AGENT_INPUT when it is a made-up identifier.
            Failure::Inputs { errors, .. } => errors.first().map_or(CODE, InputError::code),
            Failure::Io { .. } => Code::Unreadable,
            Failure::Precondition { code, .. }
            | Failure::Invalid { code, .. }
            | Failure::NotFound { code, .. }
            | Failure::Unavailable { code, .. }
            | Failure::Coded { code, .. }
            | Failure::Witness { code, .. } => *code,
            Failure::Interrupted { signal, .. } if *signal == TIMEOUT_SIGNAL => Code::Timeout,
            Failure::Interrupted { .. } => Code::Cancelled,
            Failure::Partial(_) | Failure::PartialWith { .. } => Code::PartialFailure,
            Failure::BadPolicy { .. } => Code::BadPolicy,
            Failure::GateFailed(_) => Code::GateFailed,
            Failure::Ambiguous { .. } => Code::AmbiguousId,
            Failure::Internal(_) => Code::Internal,
            Failure::Corrupt(_) => Code::StoreCorrupt,
        }
    }

    /// Which kind of ending it is; each front end gives the class its own form.
    pub fn exit_class(&self) -> ExitClass {
        match self {
            Failure::Rejected { .. }
            | Failure::AllRejected(_)
            | Failure::Usage { .. }
            | Failure::Inputs { .. }
            | Failure::Io { .. }
            | Failure::Invalid { .. }
            | Failure::ConfirmationRequired { .. }
            | Failure::BadPolicy { .. }
            | Failure::Ambiguous { .. } => ExitClass::Refused,
            Failure::GateFailed(_) => ExitClass::GateFailed,
            Failure::Internal(_) => ExitClass::Internal,
            Failure::Corrupt(_) | Failure::Precondition { .. } => ExitClass::Precondition,
            Failure::Interrupted { signal, .. } if *signal == TIMEOUT_SIGNAL => ExitClass::Timeout,
            Failure::Interrupted { signal, .. } => ExitClass::Signal(*signal),
            Failure::Partial(_) | Failure::PartialWith { .. } | Failure::Witness { .. } => {
                ExitClass::Partial
            }
            Failure::Coded { code, .. } => ExitClass::OfCode(*code),
            Failure::NotFound { .. } => ExitClass::NotFound,
            Failure::Unavailable { .. } => ExitClass::Unavailable,
        }
    }

    /// The `error` object of the JSON envelope.
    pub fn to_json(&self) -> Value {
        // `retryable`: whether the identical call may succeed (only a busy store); exit 2
        // promises nothing was changed (the spec's "validation" phase).
        let mut obj = json!({
            "code": self.code().as_str(),
            "message": self.to_string(),
            "retryable": matches!(self, Failure::Unavailable { .. }),
        });
        if self.exit_class() == ExitClass::Refused {
            obj["phase"] = json!("validation");
        }
        obj["suggestion"] = json!(self.code().suggestion());
        match self {
            Failure::Rejected {
                rejection,
                input,
                line,
            } => {
                obj["pointer"] = json!(rejection.pointer);
                if let Some(s) = input {
                    obj["source"] = json!(s);
                }
                if let Some(l) = line {
                    obj["line"] = json!(l);
                }
                if !rejection.details.is_empty() {
                    obj["violations"] = Value::Array(
                        rejection
                            .details
                            .iter()
                            .map(|v| json!({"pointer": v.pointer, "message": v.message}))
                            .collect(),
                    );
                }
            }
            Failure::Inputs { errors, .. } => {
                // REQ-F-045: a made-up identifier names the value and the pattern it holds.
                if let Some(first) = errors.first().filter(|e| e.pattern.is_some()) {
                    obj["input_value"] = json!(first.value);
                    obj["rejected_pattern"] = json!(first.pattern);
                }
                obj["errors"] = Value::Array(errors.iter().map(InputError::to_json).collect());
            }
            Failure::Io { path, .. } => obj["path"] = json!(path),
            Failure::PartialWith { suggestion, .. } => obj["suggestion"] = json!(suggestion),
            // An agent picks from the candidates without parsing the message.
            Failure::Ambiguous {
                input,
                candidates,
                more,
            } => {
                obj["input_value"] = json!(input);
                obj["candidates"] = json!(candidates);
                obj["candidates_truncated"] = json!(more);
            }
            Failure::BadPolicy { path, error } => {
                obj["path"] = json!(path);
                obj["line"] = json!(error.line);
                obj["column"] = json!(error.column);
            }
            Failure::ConfirmationRequired { would_affect, .. } => {
                obj["context"] = json!({"would_affect": would_affect,
                                        "danger_level": "destructive"});
            }
            // The spec's cancellation and timeout errors: what stopped the command, while it
            // was executing.
            Failure::Interrupted { signal, limit_ms } => {
                obj["phase"] = json!("execution");
                obj["context"] = if *signal == TIMEOUT_SIGNAL {
                    json!({"timeout_ms": limit_ms})
                } else {
                    json!({"signal": signal_name(*signal)})
                };
            }
            _ => {}
        }
        obj
    }

    /// The error as people read it on stderr.
    pub fn to_text(&self) -> String {
        let mut out = format!("error[{}]: {self}", self.code());
        if let Failure::Rejected {
            rejection,
            input,
            line,
        } = self
        {
            if let Some(s) = input {
                out.push_str(&format!("\n  input: {s}"));
                if let Some(l) = line {
                    out.push_str(&format!(" line {l}"));
                }
            }
            if rejection.details.len() > 1 {
                for v in &rejection.details {
                    out.push_str(&format!("\n  at {}: {}", v.pointer, v.message));
                }
            } else if let Some(p) = &rejection.pointer {
                out.push_str(&format!("\n  at: {}", if p.is_empty() { "/" } else { p }));
            }
        }
        if let Failure::Inputs { errors, .. } = self {
            // Each further error on a line of its own, as the first.
            for e in errors.iter().skip(1) {
                out.push_str(&format!("\nerror[{}]: {}", e.code(), e.message));
            }
        }
        if let Failure::Unavailable { .. } = self {
            out.push_str("\n  (retryable)");
        }
        out
    }
}

impl Failure {
    /// The failure of a request with these input errors (the first one's message is the
    /// failure's), `None` when there are none.
    pub fn inputs(errors: Vec<InputError>) -> Option<Failure> {
        let message = errors.first()?.message.clone();
        Some(Failure::Inputs { message, errors })
    }

    /// The error of a report that is partial without saying more.
    pub fn partial_default() -> Failure {
        Failure::Partial("partial success: some inputs were rejected; see data".into())
    }

    /// NOT_FOUND for claim ids, with where to look next.
    pub fn claim_not_found(ids: &[String]) -> Failure {
        Failure::NotFound {
            code: crate::error::Code::NotFound,
            message: format!(
                "no claim {} in the store; `elench status ‹-all›` or `elench log` lists the \
                 claims there, and a unique prefix of an id (cl_ and at least 4 hex digits) \
                 is enough",
                ids.join(", ")
            ),
        }
    }
}

impl From<crate::store::StoreError> for Failure {
    fn from(e: crate::store::StoreError) -> Failure {
        use crate::store::StoreError as E;
        match e {
            E::NotFound(_) => Failure::Precondition {
                code: crate::error::Code::StoreNotFound,
                message: e.to_string(),
            },
            E::Busy { .. } => Failure::Unavailable {
                code: crate::error::Code::StoreBusy,
                message: format!("{e}; try again, or raise ‹wait›"),
            },
            E::ReadOnly(_) => Failure::Precondition {
                code: crate::error::Code::StoreReadOnly,
                message: format!("{e}; copy it somewhere writable to change it"),
            },
            E::ReadOnlyIndexStale { .. } => Failure::Precondition {
                code: crate::error::Code::StoreReadOnly,
                message: format!(
                    "{e}; copy the store somewhere writable, where the first command rebuilds it"
                ),
            },
            E::FormatTooNew { .. } => Failure::Precondition {
                code: crate::error::Code::StoreFormatTooNew,
                message: e.to_string(),
            },
            E::MigrationUnavailable(_) => Failure::Precondition {
                code: crate::error::Code::StoreMigrationUnavailable,
                message: e.to_string(),
            },
            E::Invalid(..) | E::Io { .. } => Failure::Precondition {
                code: crate::error::Code::StoreInvalid,
                message: format!("cannot use the store: {e}"),
            },
            E::Corrupt(_) | E::Damaged(_) => {
                Failure::Corrupt(format!("{e} (`elench fsck` says more)"))
            }
            E::IndexDamaged(_) => Failure::Precondition {
                code: crate::error::Code::IndexDamaged,
                message: e.to_string(),
            },
            E::IndexUnavailable(_) => Failure::Precondition {
                code: crate::error::Code::IndexUnavailable,
                message: e.to_string(),
            },
            // A caller that opened one store twice at once without sharing its environments.
            E::IndexInUse(_) => Failure::Internal(e.to_string()),
            E::Rejected(rejection) => Failure::Rejected {
                rejection,
                input: None,
                line: None,
            },
        }
    }
}

impl From<crate::fold::FoldError> for Failure {
    fn from(e: crate::fold::FoldError) -> Failure {
        match e {
            crate::fold::FoldError::NotFound(id) => Failure::claim_not_found(&[id]),
            crate::fold::FoldError::Store(s) => s.into(),
        }
    }
}

/// A tree that cannot be listed or hashed, naming the path at fault. A directory the ignore
/// rules of its work tree leave out has no tree (`BAD_TREE`, naming the rule).
impl From<crate::tree::TreeError> for Failure {
    fn from(e: crate::tree::TreeError) -> Failure {
        match e {
            crate::tree::TreeError::Ignored { .. } => Failure::Invalid {
                code: crate::error::Code::BadTree,
                message: e.to_string(),
            },
            e => Failure::Io {
                path: e.path().display().to_string(),
                message: e.to_string(),
            },
        }
    }
}

impl From<crate::anchor::AnchorError> for Failure {
    fn from(e: crate::anchor::AnchorError) -> Failure {
        use crate::anchor::{AnchorError as E, DigestError as D};
        let message = e.to_string();
        match e {
            E::BadPath { .. } => Failure::usage(None, message),
            E::NoFile { path, dir } => Failure::Io {
                path: dir.join(path).display().to_string(),
                message: "no regular file here (symbolic links are not followed); \
                          the path is relative to ‹at› DIR"
                    .into(),
            },
            E::Io { path, source } => Failure::io(path.display(), source),
            E::Tree(t) => Failure::from(t),
            E::Ignored { .. } => Failure::usage(None, message),
            E::Digest { source, .. } => match source {
                D::Binary { .. } => Failure::Invalid {
                    code: crate::error::Code::BinaryFile,
                    message,
                },
                D::OutOfBounds { .. } => Failure::Invalid {
                    code: crate::error::Code::RangeOutOfBounds,
                    message: format!("{message}; give lines inside the file"),
                },
                D::BadRange { .. } => Failure::usage(None, message),
            },
            // Ingest never lets such an anchor in: the stored data is damaged.
            E::BadAnchor { .. } => Failure::Corrupt(format!("{message} (run `elench fsck`)")),
        }
    }
}

impl From<crate::gate::GateError> for Failure {
    fn from(e: crate::gate::GateError) -> Failure {
        match e {
            crate::gate::GateError::Fold(f) => f.into(),
            crate::gate::GateError::Anchor(a) => a.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_come_with_the_codes() {
        let f = Failure::Precondition {
            code: Code::StoreNotFound,
            message: "x".into(),
        };
        let s = f.to_json()["suggestion"].as_str().unwrap().to_owned();
        assert!(s.contains("elench init"), "{s}");
    }
}
