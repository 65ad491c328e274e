//! The evidence of one evaluation: every primitive call with its arguments and result, and
//! the output of every process. It is stored as one blob; a record's evidence digest is the
//! SHA-256 of these bytes.

use serde::Serialize;
use serde_json::Value;

/// A process a primitive started, as observed.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessRecord {
    pub argv: Vec<String>,
    /// `exited`, `signaled`, `timed-out` or `not-started`.
    pub ending: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// Output beyond the cap was dropped.
    pub truncated: bool,
    /// The JUnit XML report the runner wrote, when it wrote one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub junit: Option<String>,
}

/// One primitive call.
#[derive(Debug, Clone, Serialize)]
pub struct Call {
    pub call: &'static str,
    pub args: Vec<String>,
    /// The value, or null when the call was inconclusive.
    pub result: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process: Option<ProcessRecord>,
}

/// One run of the test runner, shared by every claim of the `check` that calls `test(…)`:
/// the names it was asked for and its processes (one; pytest's again without the node ids it
/// refused as naming no test).
#[derive(Debug, Clone, Serialize)]
pub struct TestRun {
    pub names: Vec<String>,
    pub processes: Vec<ProcessRecord>,
}

/// One evaluation of the whole predicate (`--repeat` makes several).
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    /// The test runs its `test(…)` calls read their results from.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tests: Vec<TestRun>,
    pub calls: Vec<Call>,
    /// `true`, `false` or `"inconclusive"`.
    pub value: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Everything `check` observed about one claim.
#[derive(Debug, Clone, Serialize)]
pub struct Transcript {
    /// The tree checked (its OID): first, so a reader sees at once what was observed.
    pub tree: String,
    pub claim: String,
    pub expression: String,
    pub hermeticity: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
    /// Set when output was cut to keep the transcript within its bound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<String>,
    pub runs: Vec<Run>,
}

/// The evidence kind and exit code a record states (`test-report` when a test ran,
/// `process-exit` with the last exit code when only `run` did, else `artifact-digest`).
pub fn evidence_kind(runs: &[Run]) -> (&'static str, Option<i32>) {
    let calls = || runs.iter().flat_map(|r| r.calls.iter());
    let tests_ran = runs
        .iter()
        .any(|r| r.tests.iter().any(|t| !t.processes.is_empty()));
    if tests_ran || calls().any(|c| c.call == "test" && c.process.is_some()) {
        return ("test-report", None);
    }
    let last_exit = calls()
        .filter(|c| c.call == "run")
        .filter_map(|c| c.process.as_ref().and_then(|p| p.exit))
        .next_back();
    match last_exit {
        Some(code) => ("process-exit", Some(code)),
        None => ("artifact-digest", None),
    }
}

impl Transcript {
    /// The blob's bytes (pretty JSON, for people reading `show --evidence`).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec_pretty(self).unwrap_or_default();
        v.push(b'\n');
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &'static str, exit: Option<i32>) -> Call {
        Call {
            call: name,
            args: vec![],
            result: json!(null),
            reason: None,
            process: exit.map(|e| ProcessRecord {
                argv: vec![],
                ending: "exited".into(),
                exit: Some(e),
                signal: None,
                stdout: String::new(),
                stderr: String::new(),
                truncated: false,
                junit: None,
            }),
        }
    }

    fn run(calls: Vec<Call>) -> Run {
        Run {
            tests: Vec::new(),
            calls,
            value: json!(true),
            reason: None,
        }
    }

    #[test]
    fn evidence_kind_follows_what_ran() {
        assert_eq!(
            evidence_kind(&[run(vec![call("grep", None)])]),
            ("artifact-digest", None)
        );
        assert_eq!(
            evidence_kind(&[run(vec![call("run", Some(1)), call("run", Some(3))])]),
            ("process-exit", Some(3))
        );
        assert_eq!(
            evidence_kind(&[run(vec![call("run", Some(1)), call("test", Some(0))])]),
            ("test-report", None)
        );
        // A test call reads a shared run, which the evaluation carries.
        let mut shared = run(vec![call("run", Some(1)), call("test", None)]);
        assert_eq!(evidence_kind(&[shared.clone()]), ("process-exit", Some(1)));
        shared.tests.push(TestRun {
            names: vec!["t".into()],
            processes: call("test", Some(0)).process.into_iter().collect(),
        });
        assert_eq!(evidence_kind(&[shared]), ("test-report", None));
    }
}
