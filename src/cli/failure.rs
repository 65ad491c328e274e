//! The library's failures as the command line ends with them: the exit number of each
//! [`ExitClass`], and the errors the command line finds in its own arguments ([`ArgError`])
//! before any operation runs. The rest of the library's error type is re-exported, so that
//! the CLI names one module for both.
pub use elench::ops::error::*;

use elench::error::Exit;

/// The exit code of a gate that decided the tree may not ship; used by nothing else. It is
/// `gate`'s own code, from the range the CLI Agent Spec keeps for command-specific codes
/// (79–125, declared per command: REQ-F-001, REQ-C-001), so it means nothing the spec's
/// shared table gives another meaning (6 there is CONFLICT).
pub const GATE_FAILED_EXIT: i32 = 79;
/// The exit code of a command stopped at its time limit (the CLI Agent Spec's `TIMEOUT`).
pub const TIMEOUT_EXIT: i32 = 10;

/// The number a process ends with for a failure of `class`.
pub fn exit_number(class: ExitClass) -> i32 {
    match class {
        ExitClass::Refused => 2,
        ExitClass::Partial => 3,
        ExitClass::Precondition => 4,
        ExitClass::NotFound => 5,
        ExitClass::Unavailable => 12,
        ExitClass::GateFailed => GATE_FAILED_EXIT,
        ExitClass::Timeout => TIMEOUT_EXIT,
        ExitClass::Signal(signal) => 128 + signal,
        ExitClass::OfCode(code) => match code.exit() {
            Exit::Status(n) => n,
            _ => 1,
        },
        ExitClass::Internal => 1,
    }
}

/// A failure's exit number ([`exit_number`] of its class).
pub trait ExitNumber {
    fn exit_code(&self) -> i32;
}

impl ExitNumber for Failure {
    fn exit_code(&self) -> i32 {
        exit_number(self.exit_class())
    }
}

/// One error found on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError {
    /// The argument, as the command line names it: an option (`--limit`), a positional
    /// argument (`<ID>`), the token itself when it means nothing to elench (`--frobnicate`),
    /// or an environment variable (`ELENCH_TIMEOUT`).
    pub param: String,
    /// The value refused, when one was given.
    pub value: Option<String>,
    /// What is wrong, and what to do.
    pub message: String,
    /// For a made-up identifier, the pattern that gave it away ([`rejected_pattern`]); its
    /// code is then [`AGENT_INPUT_CODE`].
    pub pattern: Option<&'static str>,
}

impl ArgError {
    pub fn new(param: impl Into<String>, value: Option<&str>, message: impl Into<String>) -> Self {
        ArgError {
            param: param.into(),
            value: value.map(str::to_owned),
            message: message.into(),
            pattern: None,
        }
    }

    /// An identifier `param` refused as `value`: [`AGENT_INPUT_CODE`] when it holds a
    /// [`rejected_pattern`], the message then saying which; else an ordinary argument error.
    pub fn identifier(param: impl Into<String>, value: &str, message: impl Into<String>) -> Self {
        let e = InputError::identifier(Input::Named(param.into()), value, message);
        ArgError {
            param: match e.param {
                Input::Named(n) => n,
                Input::Param(p) => p.name().to_owned(),
            },
            value: e.value,
            message: e.message,
            pattern: e.pattern,
        }
    }

    /// The input error the library reports it as.
    pub fn to_input(&self) -> InputError {
        InputError {
            param: Input::Named(self.param.clone()),
            value: self.value.clone(),
            message: self.message.clone(),
            pattern: self.pattern,
        }
    }
}

/// The failure of a command line with these argument errors (the first one's message is the
/// failure's), `None` when there are none.
pub fn arguments(errors: Vec<ArgError>) -> Option<Failure> {
    Failure::inputs(errors.iter().map(ArgError::to_input).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use elench::error::{Code, Rejection};
    use serde_json::Value;

    /// The exit code of each kind of failure is the one its code's class gives.
    #[test]
    fn each_failure_exits_as_its_code_says() {
        let rejection = Rejection::new(Code::BadSignature, "x");
        let failures = [
            Failure::rejected(rejection, None),
            Failure::AllRejected("x".into()),
            Failure::usage(None, "x".into()),
            arguments(vec![ArgError::new("--x", None, "x")]).unwrap(),
            arguments(vec![ArgError::identifier("<ID>", "../x", "x")]).unwrap(),
            Failure::io("p", "x"),
            Failure::Invalid {
                code: Code::BinaryFile,
                message: "x".into(),
            },
            Failure::Ambiguous {
                input: "x".into(),
                candidates: vec![],
                more: false,
            },
            Failure::ConfirmationRequired {
                message: "x".into(),
                would_affect: Value::Null,
            },
            Failure::Precondition {
                code: Code::StoreNotFound,
                message: "x".into(),
            },
            Failure::claim_not_found(&["cl_x".into()]),
            Failure::Unavailable {
                code: Code::StoreBusy,
                message: "x".into(),
            },
            Failure::partial_default(),
            Failure::GateFailed("x".into()),
            Failure::interrupted(TIMEOUT_SIGNAL),
            Failure::Corrupt("x".into()),
            Failure::Internal("x".into()),
        ];
        for f in failures {
            let code = f.code();
            assert_eq!(code.exit(), Exit::Status(f.exit_code()), "{code}");
        }
        let stopped = Failure::interrupted(2);
        assert_eq!(stopped.code().exit(), Exit::Signal);
        assert_eq!(stopped.exit_code(), 130);
    }
}
