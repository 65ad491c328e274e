//! Test runners the operator chooses for `test(name)`: cargo's libtest, pytest, or any
//! command that writes JUnit XML. A runner turns a test name into a process to start and
//! reads back whether that one test ran and passed. A test that did not run (not found,
//! filtered out, skipped, or the build failed) is `NotRun`: inconclusive, never a verdict.

use quick_xml::events::Event;

/// Where a runner's JUnit report goes, inside the claim's report directory.
pub const JUNIT_FILE: &str = "junit.xml";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Runner {
    /// `cargo test -- --exact NAME`; NAME is libtest's full path (`module::test`).
    Cargo,
    /// `PYTHON -m pytest NODEID` with a JUnit report; NAME is the node id.
    Pytest { python: String },
    /// `sh -c CMD` with `$ELENCH_TEST` and `$ELENCH_JUNIT`.
    Junit(String),
}

/// What a runner says about one test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestVerdict {
    Passed,
    Failed,
    NotRun(String),
}

impl Runner {
    /// `cargo`, `pytest` or `junit:CMD`.
    pub fn parse(spec: &str, python: Option<&str>) -> Result<Runner, String> {
        match spec {
            "cargo" => Ok(Runner::Cargo),
            "pytest" => Ok(Runner::Pytest {
                python: python.unwrap_or("python3").to_owned(),
            }),
            s => match s.strip_prefix("junit:") {
                Some(cmd) if !cmd.trim().is_empty() => Ok(Runner::Junit(cmd.to_owned())),
                _ => Err(format!(
                    "unknown runner {spec:?}: expected cargo, pytest or junit:CMD"
                )),
            },
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Runner::Cargo => "cargo".into(),
            Runner::Pytest { python } => format!("pytest ({python})"),
            Runner::Junit(cmd) => format!("junit:{cmd}"),
        }
    }

    /// The process for one test: argv and extra environment. `out` is the report directory
    /// as the process sees it.
    pub fn command(&self, name: &str, out: &str) -> (Vec<String>, Vec<(String, String)>) {
        let junit = format!("{out}/{JUNIT_FILE}");
        match self {
            Runner::Cargo => (
                ["cargo", "test", "--no-fail-fast", "--", "--exact", name]
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
                vec![
                    ("CARGO_TERM_COLOR".into(), "never".into()),
                    ("CARGO_NET_OFFLINE".into(), "true".into()),
                ],
            ),
            Runner::Pytest { python } => (
                vec![
                    python.clone(),
                    "-m".into(),
                    "pytest".into(),
                    "-p".into(),
                    "no:cacheprovider".into(),
                    "-q".into(),
                    format!("--junitxml={junit}"),
                    name.to_owned(),
                ],
                vec![("PYTHONDONTWRITEBYTECODE".into(), "1".into())],
            ),
            Runner::Junit(cmd) => (
                vec!["sh".into(), "-c".into(), cmd.clone()],
                vec![
                    ("ELENCH_TEST".into(), name.to_owned()),
                    ("ELENCH_JUNIT".into(), junit),
                ],
            ),
        }
    }

    /// Whether a name can be handed to this runner at all.
    pub fn check_name(&self, name: &str) -> Result<(), String> {
        if name.is_empty() {
            return Err("the test name is empty".into());
        }
        if name.starts_with('-') {
            return Err(format!("{name:?} looks like an option, not a test name"));
        }
        Ok(())
    }

    /// The verdict from the process's stdout and the JUnit report (if one was written).
    pub fn verdict(&self, name: &str, stdout: &[u8], junit: Option<&[u8]>) -> TestVerdict {
        match self {
            Runner::Cargo => libtest_verdict(name, stdout),
            Runner::Pytest { .. } => match junit {
                Some(xml) => match parse_junit(xml) {
                    Ok(cases) => {
                        junit_verdict(&cases, |c| c.matches(name) || pytest_node_matches(name, c))
                    }
                    Err(e) => TestVerdict::NotRun(format!("the JUnit report is unreadable: {e}")),
                },
                None => TestVerdict::NotRun("pytest wrote no JUnit report".into()),
            },
            Runner::Junit(_) => match junit {
                Some(xml) => match parse_junit(xml) {
                    Ok(cases) => junit_verdict(&cases, |c| c.matches(name)),
                    Err(e) => TestVerdict::NotRun(format!("the JUnit report is unreadable: {e}")),
                },
                None => {
                    TestVerdict::NotRun("the command wrote no JUnit report to $ELENCH_JUNIT".into())
                }
            },
        }
    }
}

/// libtest prints `test NAME ... ok|FAILED|ignored` for every test it ran or skipped.
fn libtest_verdict(name: &str, stdout: &[u8]) -> TestVerdict {
    let text = String::from_utf8_lossy(stdout);
    let prefix = format!("test {name} ... ");
    let (mut ok, mut failed, mut ignored) = (0, 0, 0);
    for line in text.lines() {
        if let Some(rest) = line.trim_end().strip_prefix(&prefix) {
            if rest == "ok" {
                ok += 1;
            } else if rest.starts_with("FAILED") {
                failed += 1;
            } else if rest.starts_with("ignored") {
                ignored += 1;
            }
        }
    }
    if failed > 0 {
        TestVerdict::Failed
    } else if ignored > 0 {
        TestVerdict::NotRun(format!("{name} is ignored"))
    } else if ok > 0 {
        TestVerdict::Passed
    } else {
        TestVerdict::NotRun(format!("no test named {name} ran"))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaseResult {
    Passed,
    Failed,
    Skipped,
}

/// One `<testcase>` of a JUnit report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    pub name: String,
    pub classname: String,
    pub result: CaseResult,
}

impl Case {
    /// A testcase is the requested test when its `name`, `classname.name` or
    /// `classname::name` equals the requested name.
    pub fn matches(&self, wanted: &str) -> bool {
        self.name == wanted
            || (!self.classname.is_empty()
                && (format!("{}.{}", self.classname, self.name) == wanted
                    || format!("{}::{}", self.classname, self.name) == wanted))
    }
}

/// pytest reports `tests/test_x.py::TestC::test_y` as classname `tests.test_x.TestC`, name
/// `test_y`.
fn pytest_node_matches(node: &str, c: &Case) -> bool {
    let parts: Vec<&str> = node.split("::").collect();
    let Some((last, rest)) = parts.split_last() else {
        return false;
    };
    let Some((file, classes)) = rest.split_first() else {
        return false;
    };
    let module = file.strip_suffix(".py").unwrap_or(file).replace('/', ".");
    let mut classname = module;
    for cl in classes {
        classname.push('.');
        classname.push_str(cl);
    }
    c.classname == classname && c.name == *last
}

fn junit_verdict(cases: &[Case], wanted: impl Fn(&Case) -> bool) -> TestVerdict {
    let hits: Vec<&Case> = cases.iter().filter(|c| wanted(c)).collect();
    if hits.iter().any(|c| c.result == CaseResult::Failed) {
        TestVerdict::Failed
    } else if hits.iter().any(|c| c.result == CaseResult::Skipped) {
        TestVerdict::NotRun("the test was skipped".into())
    } else if hits.is_empty() {
        TestVerdict::NotRun(format!(
            "no testcase of that name among the {} in the report",
            cases.len()
        ))
    } else {
        TestVerdict::Passed
    }
}

/// Every `<testcase>` in a JUnit XML report: a `<failure>` or `<error>` child fails it, a
/// `<skipped>` child skips it, neither passes it.
pub fn parse_junit(xml: &[u8]) -> Result<Vec<Case>, String> {
    let mut reader = quick_xml::Reader::from_reader(xml);
    let mut buf = Vec::new();
    let mut cases = Vec::new();
    let mut open: Option<Case> = None;
    loop {
        let ev = reader
            .read_event_into(&mut buf)
            .map_err(|e| format!("at byte {}: {e}", reader.buffer_position()))?;
        match ev {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let empty = matches!(ev, Event::Empty(_));
                match e.local_name().as_ref() {
                    b"testcase" => {
                        let mut case = Case {
                            name: String::new(),
                            classname: String::new(),
                            result: CaseResult::Passed,
                        };
                        for a in e.attributes().flatten() {
                            let v = a.unescape_value().map_err(|e| e.to_string())?.into_owned();
                            match a.key.local_name().as_ref() {
                                b"name" => case.name = v,
                                b"classname" => case.classname = v,
                                _ => {}
                            }
                        }
                        if empty {
                            cases.push(case);
                        } else {
                            open = Some(case);
                        }
                    }
                    b"failure" | b"error" => {
                        if let Some(c) = open.as_mut() {
                            c.result = CaseResult::Failed;
                        }
                    }
                    b"skipped" => {
                        if let Some(c) = open.as_mut() {
                            if c.result != CaseResult::Failed {
                                c.result = CaseResult::Skipped;
                            }
                        }
                    }
                    _ => {}
                }
            }
            Event::End(ref e) if e.local_name().as_ref() == b"testcase" => {
                if let Some(c) = open.take() {
                    cases.push(c);
                }
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    Ok(cases)
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="4">
<testcase classname="tests.test_x" name="test_ok" time="0.001"/>
<testcase classname="tests.test_x" name="test_bad"><failure message="assert 1 == 2">boom</failure></testcase>
<testcase classname="tests.test_x.TestC" name="test_m[1]"><system-out>hi &amp; bye</system-out></testcase>
<testcase classname="tests.test_x" name="test_skip"><skipped message="no"/></testcase>
<testcase classname="suite" name="errs"><error message="x"/></testcase>
</testsuite></testsuites>"#;

    #[test]
    fn junit_reports_parse() {
        let cases = parse_junit(REPORT.as_bytes()).unwrap();
        assert_eq!(cases.len(), 5);
        assert_eq!(cases[0].result, CaseResult::Passed);
        assert_eq!(cases[1].result, CaseResult::Failed);
        assert_eq!(cases[2].result, CaseResult::Passed);
        assert_eq!(cases[3].result, CaseResult::Skipped);
        assert_eq!(cases[4].result, CaseResult::Failed);
        assert!(parse_junit(b"<testsuite><testcase name='x'></testsuite>").is_err());
    }

    #[test]
    fn junit_names_match_by_name_or_qualified_name() {
        let r = Runner::Junit("true".into());
        let v = |n: &str| r.verdict(n, b"", Some(REPORT.as_bytes()));
        assert_eq!(v("test_ok"), TestVerdict::Passed);
        assert_eq!(v("tests.test_x.test_ok"), TestVerdict::Passed);
        assert_eq!(v("tests.test_x::test_bad"), TestVerdict::Failed);
        assert_eq!(v("suite.errs"), TestVerdict::Failed);
        assert!(matches!(v("test_skip"), TestVerdict::NotRun(_)));
        assert!(matches!(v("test_nothing"), TestVerdict::NotRun(_)));
        assert!(matches!(
            r.verdict("test_ok", b"", None),
            TestVerdict::NotRun(_)
        ));
    }

    #[test]
    fn pytest_node_ids_map_to_junit_names() {
        let r = Runner::Pytest {
            python: "python3".into(),
        };
        let v = |n: &str| r.verdict(n, b"", Some(REPORT.as_bytes()));
        assert_eq!(v("tests/test_x.py::test_ok"), TestVerdict::Passed);
        assert_eq!(v("tests/test_x.py::test_bad"), TestVerdict::Failed);
        assert_eq!(v("tests/test_x.py::TestC::test_m[1]"), TestVerdict::Passed);
        assert!(matches!(
            v("tests/test_x.py::test_missing"),
            TestVerdict::NotRun(_)
        ));
        assert!(matches!(
            v("tests/test_y.py::test_ok"),
            TestVerdict::NotRun(_)
        ));
    }

    #[test]
    fn libtest_output_decides_cargo_tests() {
        let out = b"running 2 tests\ntest a::ok ... ok\ntest a::bad ... FAILED\ntest a::later ... ignored, slow\n";
        assert_eq!(libtest_verdict("a::ok", out), TestVerdict::Passed);
        assert_eq!(libtest_verdict("a::bad", out), TestVerdict::Failed);
        assert!(matches!(
            libtest_verdict("a::later", out),
            TestVerdict::NotRun(_)
        ));
        // A prefix of a name is not the name.
        assert!(matches!(
            libtest_verdict("a::o", out),
            TestVerdict::NotRun(_)
        ));
        assert!(matches!(
            libtest_verdict("a::ok", b""),
            TestVerdict::NotRun(_)
        ));
    }

    #[test]
    fn runner_specs() {
        assert_eq!(Runner::parse("cargo", None), Ok(Runner::Cargo));
        assert_eq!(
            Runner::parse("junit:make test", None),
            Ok(Runner::Junit("make test".into()))
        );
        assert!(Runner::parse("junit:", None).is_err());
        assert!(Runner::parse("mocha", None).is_err());
        assert!(Runner::Cargo.check_name("-x").is_err());
    }
}
