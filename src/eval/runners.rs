//! Test runners the operator chooses for `test(name)`: cargo's libtest, pytest, or any
//! command that writes JUnit XML. A runner turns the test names of one `check` into one
//! process to start, and reads back, for each name, whether that test ran and passed. A test
//! that did not run (not found, filtered out, skipped, or the build failed) is `NotRun`:
//! inconclusive, never a verdict.
//!
//! The process is the code under test: it can print or write anything a runner prints. What
//! is read here refuses the forgeries that cost nothing (a pass line printed before the test
//! binary exits 0 without libtest's summary; a report of passes from a command that exited
//! non-zero), not a forgery of the runner's whole output.

use quick_xml::events::Event;

/// Where a runner's JUnit report goes, inside the claim's report directory.
pub const JUNIT_FILE: &str = "junit.xml";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Runner {
    /// `cargo test --no-fail-fast -- --exact NAME…`; NAME is libtest's full path
    /// (`module::test`).
    Cargo,
    /// `PYTHON -m pytest NODEID…` with a JUnit report; NAME is the node id.
    Pytest { python: String },
    /// `sh -c CMD` with `$ELENCH_TESTS` (the names, one a line), `$ELENCH_TEST` (the first)
    /// and `$ELENCH_JUNIT`.
    Junit(String),
}

/// What a runner says about one test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestVerdict {
    Passed,
    Failed,
    NotRun(String),
}

/// The verdicts one run of a runner gives: one per name asked for, in order. Err: the run
/// as a whole decides nothing (its output is not what the runner writes, or it wrote none),
/// and why.
pub type Reading = Result<Vec<TestVerdict>, String>;

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

    /// Whether this runner's verdicts are read from a JUnit report (else from stdout).
    pub fn writes_report(&self) -> bool {
        !matches!(self, Runner::Cargo)
    }

    /// The one process for the tests `names` (at least one): argv and extra environment.
    /// `out` is the report directory as the process sees it.
    pub fn command(&self, names: &[String], out: &str) -> (Vec<String>, Vec<(String, String)>) {
        let junit = format!("{out}/{JUNIT_FILE}");
        match self {
            Runner::Cargo => {
                let mut argv: Vec<String> = ["cargo", "test", "--no-fail-fast", "--", "--exact"]
                    .iter()
                    .map(|s| s.to_string())
                    .collect();
                argv.extend(names.iter().cloned());
                (
                    argv,
                    vec![
                        ("CARGO_TERM_COLOR".into(), "never".into()),
                        ("CARGO_NET_OFFLINE".into(), "true".into()),
                    ],
                )
            }
            Runner::Pytest { python } => {
                let mut argv = vec![
                    python.clone(),
                    "-m".into(),
                    "pytest".into(),
                    "-p".into(),
                    "no:cacheprovider".into(),
                    "-q".into(),
                    format!("--junitxml={junit}"),
                ];
                argv.extend(names.iter().cloned());
                (argv, vec![("PYTHONDONTWRITEBYTECODE".into(), "1".into())])
            }
            Runner::Junit(cmd) => (
                vec!["sh".into(), "-c".into(), cmd.clone()],
                vec![
                    ("ELENCH_TESTS".into(), names.join("\n")),
                    (
                        "ELENCH_TEST".into(),
                        names.first().cloned().unwrap_or_default(),
                    ),
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
        if name.contains('\n') || name.contains('\0') {
            return Err(format!(
                "{name:?} holds a line break or a NUL, which no runner takes"
            ));
        }
        Ok(())
    }

    /// The verdict on each of `names` from one run that exited with `exit`: its stdout
    /// (`stdout_cut`: elench kept only the start of it) and the JUnit report, if one was
    /// written.
    pub fn read(
        &self,
        names: &[String],
        exit: i32,
        stdout: &[u8],
        stdout_cut: bool,
        junit: Option<&[u8]>,
    ) -> Reading {
        match self {
            Runner::Cargo => {
                if stdout_cut {
                    return Err(
                        "its output was longer than elench reads, so libtest's summaries \
                                cannot all be seen"
                            .into(),
                    );
                }
                let run = Libtest::read(stdout);
                run.consistent_with(exit)?;
                Ok(names.iter().map(|n| run.verdict(n)).collect())
            }
            Runner::Pytest { .. } => {
                let xml = junit.ok_or_else(|| "pytest wrote no JUnit report".to_owned())?;
                let cases =
                    parse_junit(xml).map_err(|e| format!("the JUnit report is unreadable: {e}"))?;
                Ok(junit_verdicts(&cases, names, exit, "pytest", |name, c| {
                    c.matches(name) || pytest_node_matches(name, c)
                }))
            }
            Runner::Junit(_) => {
                let xml = junit.ok_or_else(|| {
                    "the command wrote no JUnit report to $ELENCH_JUNIT".to_owned()
                })?;
                let cases =
                    parse_junit(xml).map_err(|e| format!("the JUnit report is unreadable: {e}"))?;
                Ok(junit_verdicts(
                    &cases,
                    names,
                    exit,
                    "the command",
                    |name, c| c.matches(name),
                ))
            }
        }
    }

    /// The names pytest refused as naming no test ("ERROR: not found: …", "ERROR: file or
    /// directory not found: …"), when a run exited with its usage error (4): pytest then runs
    /// none of the others. Empty for other runners and other runs.
    pub fn not_found(
        &self,
        names: &[String],
        exit: i32,
        stdout: &[u8],
        stderr: &[u8],
    ) -> Vec<String> {
        if !matches!(self, Runner::Pytest { .. }) || exit != 4 {
            return Vec::new();
        }
        let text = [
            String::from_utf8_lossy(stdout),
            String::from_utf8_lossy(stderr),
        ]
        .concat();
        let mut refused = Vec::new();
        for line in text.lines() {
            let Some(spec) = line
                .strip_prefix("ERROR: not found: ")
                .or_else(|| line.strip_prefix("ERROR: file or directory not found: "))
            else {
                continue;
            };
            let spec = spec.trim();
            for n in names {
                // pytest names the argument as given, or as an absolute path.
                let hit = spec == n
                    || spec.ends_with(&format!("/{n}"))
                    || n.strip_prefix(spec)
                        .is_some_and(|rest| rest.starts_with("::"));
                if hit && !refused.contains(n) {
                    refused.push(n.clone());
                }
            }
        }
        refused
    }

    /// What most likely kept a run from giving a report, judged from what it wrote: advice
    /// naming the flags that fix it, when the cause is a known one.
    pub fn likely_cause(&self, exit: Option<i32>, stdout: &[u8], stderr: &[u8]) -> Option<String> {
        let out = String::from_utf8_lossy(stdout);
        let err = String::from_utf8_lossy(stderr);
        let said = |s: &str| err.contains(s) || out.contains(s);
        match self {
            Runner::Pytest { python } => {
                if said("No module named pytest") {
                    Some(format!(
                        "{python} has no pytest: give --python PATH, a Python that has pytest \
                         (a virtual environment's bin/python), and --expose the directories it \
                         and its packages live in (the virtual environment)"
                    ))
                } else if exit == Some(127) || said("execvp") || said("No such file or directory") {
                    Some(format!(
                        "{python} could not be started in the sandbox: give --python the path \
                         of a Python that is visible there (under /usr, or --expose its directory)"
                    ))
                } else {
                    None
                }
            }
            Runner::Cargo => {
                if said("execvp cargo") || exit == Some(127) {
                    Some(
                        "cargo is not visible in the sandbox: --expose the directories of the \
                         toolchain (for rustup: --expose ~/.cargo --expose ~/.rustup)"
                            .into(),
                    )
                } else if said("no default toolchain") || said("rustup could not choose") {
                    Some("rustup has no toolchain in the sandbox: --expose ~/.rustup".into())
                } else if said("--offline")
                    || said("failed to download")
                    || said("no matching package")
                    || said("failed to get")
                {
                    Some(
                        "the crate's dependencies are not in the exposed cargo cache (the \
                         sandbox has no network): run `cargo fetch --locked` on the host and \
                         --expose the cargo home (~/.cargo)"
                            .into(),
                    )
                } else if said("could not compile") {
                    Some("the crate did not build: see the compiler's errors on stderr".into())
                } else {
                    None
                }
            }
            Runner::Junit(_) => {
                if exit == Some(127) || said("not found") {
                    Some(
                        "the command (or a program it runs) was not found in the sandbox: \
                         --expose the directories it lives in"
                            .into(),
                    )
                } else if said("Permission denied") {
                    Some(
                        "the command was refused a file: write the report into \
                         $ELENCH_JUNIT (the file exists; do not replace it), and expose what \
                         the command reads"
                            .into(),
                    )
                } else {
                    None
                }
            }
        }
    }
}

/// The end of a process's output, at most `max` bytes, on whole lines where it can.
pub fn tail(bytes: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end();
    if text.len() <= max {
        return text.to_owned();
    }
    let mut from = text.len() - max;
    while !text.is_char_boundary(from) {
        from += 1;
    }
    let cut = &text[from..];
    match cut.find('\n') {
        Some(i) if i + 1 < cut.len() => format!("…{}", &cut[i + 1..]),
        _ => format!("…{cut}"),
    }
}

/// libtest's summary of one test binary: `test result: ok. P passed; F failed; I ignored; M
/// measured; X filtered out; finished in …`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Summary {
    ok: bool,
    passed: usize,
    failed: usize,
    ignored: usize,
    measured: usize,
}

impl Summary {
    fn parse(line: &str) -> Option<Summary> {
        let rest = line.strip_prefix("test result: ")?;
        let (ok, rest) = if let Some(r) = rest.strip_prefix("ok. ") {
            (true, r)
        } else {
            (false, rest.strip_prefix("FAILED. ")?)
        };
        let mut fields = rest.split("; ");
        let mut count = |word: &str| -> Option<usize> {
            let f = fields.next()?;
            let (n, w) = f.split_once(' ')?;
            (w == word).then_some(())?;
            n.parse().ok()
        };
        let s = Summary {
            ok,
            passed: count("passed")?,
            failed: count("failed")?,
            ignored: count("ignored")?,
            measured: count("measured")?,
        };
        count("filtered out")?;
        fields.next()?.strip_prefix("finished in ")?;
        Some(s)
    }
}

/// One test's line: `test NAME ... ok|FAILED|ignored[, reason]` (` - should panic` after the
/// name of a `#[should_panic]` test).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    Ok,
    Failed,
    Ignored,
    /// A benchmark's line, or another result libtest may print.
    Other,
}

fn result_line(line: &str) -> Option<(&str, Line)> {
    let rest = line.strip_prefix("test ")?;
    let (name, result) = rest.rsplit_once(" ... ")?;
    let name = name.strip_suffix(" - should panic").unwrap_or(name);
    let r = match result {
        "ok" => Line::Ok,
        "FAILED" => Line::Failed,
        r if r == "ignored" || r.starts_with("ignored, ") => Line::Ignored,
        _ => Line::Other,
    };
    Some((name, r))
}

/// The output of one test binary: from `running N tests` to its summary.
#[derive(Debug, Default)]
struct Section {
    declared: usize,
    results: Vec<(String, Line)>,
    /// Past the `failures:` heading: what follows is the failing tests' own output.
    in_failures: bool,
    summary: Option<Summary>,
}

impl Section {
    /// Whether the summary counts the lines listed, and the lines are the tests announced.
    fn consistent(&self) -> bool {
        let Some(s) = self.summary else {
            return false;
        };
        let n = |l: Line| self.results.iter().filter(|(_, r)| *r == l).count();
        n(Line::Ok) == s.passed
            && n(Line::Failed) == s.failed
            && n(Line::Ignored) == s.ignored
            && s.ok == (s.failed == 0)
            && s.passed + s.failed + s.ignored + s.measured == self.declared
    }
}

/// What `cargo test` printed on stdout: one section per test binary it ran.
#[derive(Debug, Default)]
struct Libtest {
    sections: Vec<Section>,
    /// Summaries with no `running N tests` before them.
    stray: usize,
    /// Whether the last line that is not blank is a summary.
    ends_with_summary: bool,
}

fn running_line(line: &str) -> Option<usize> {
    let rest = line.strip_prefix("running ")?;
    let n = rest
        .strip_suffix(" tests")
        .or_else(|| rest.strip_suffix(" test"))?;
    n.parse().ok()
}

impl Libtest {
    fn read(stdout: &[u8]) -> Libtest {
        let text = String::from_utf8_lossy(stdout);
        let mut run = Libtest::default();
        let mut open: Option<Section> = None;
        for line in text.lines() {
            let line = line.trim_end();
            if !line.is_empty() {
                run.ends_with_summary = false;
            }
            if let Some(n) = running_line(line) {
                // A section that never printed its summary stays as it is: unfinished.
                run.sections.extend(open.take());
                open = Some(Section {
                    declared: n,
                    ..Section::default()
                });
            } else if let Some(s) = Summary::parse(line) {
                match open.take() {
                    Some(mut sec) => {
                        sec.summary = Some(s);
                        run.sections.push(sec);
                    }
                    None => run.stray += 1,
                }
                run.ends_with_summary = true;
            } else if let Some(sec) = open.as_mut().filter(|s| !s.in_failures) {
                if line == "failures:" {
                    sec.in_failures = true;
                } else if let Some((name, r)) = result_line(line) {
                    sec.results.push((name.to_owned(), r));
                }
            }
        }
        run.sections.extend(open);
        run
    }

    /// Whether cargo's exit status agrees with what libtest printed. cargo exits 0 only when
    /// every test binary ended with its summary and none failed, and 101 when a test failed
    /// or a binary ended early; anything else means the output is not libtest's own (or cargo
    /// did not get to run it), and no test in it is judged.
    fn consistent_with(&self, exit: i32) -> Result<(), String> {
        if self.sections.is_empty() {
            return Err("cargo ran no test binary (no libtest output on stdout)".into());
        }
        let unfinished = self.sections.iter().filter(|s| s.summary.is_none()).count();
        let failed = self
            .sections
            .iter()
            .any(|s| s.summary.is_some_and(|s| !s.ok));
        match exit {
            0 if unfinished > 0 => Err(format!(
                "cargo exited 0, but {unfinished} test binary's output ended without libtest's \
                 summary (a test can print a pass line and exit before its assertion): the \
                 output is not libtest's own, and decides no test"
            )),
            0 if failed => Err(
                "cargo exited 0, but a libtest summary says a test failed: the output is not \
                 libtest's own, and decides no test"
                    .into(),
            ),
            0 if self.stray > 0 || !self.ends_with_summary => Err(
                "cargo exited 0, but its output does not end as libtest ends it (with one \
                 summary per test binary): it decides no test"
                    .into(),
            ),
            0 => Ok(()),
            101 if failed || unfinished > 0 => Ok(()),
            101 => Err(
                "cargo exited 101 (a failure), yet every libtest summary says ok: the output \
                 decides no test"
                    .into(),
            ),
            other => Err(format!(
                "cargo exited {other}, which is not how cargo test ends a run of tests"
            )),
        }
    }

    /// One test's verdict: a failure listed in a binary whose summary counts it, a pass only
    /// there too, and nothing from a binary that never printed a matching summary.
    fn verdict(&self, name: &str) -> TestVerdict {
        let mut seen = Vec::new();
        for s in &self.sections {
            for (n, r) in &s.results {
                if n == name {
                    seen.push((*r, s.consistent(), s.summary.is_some()));
                }
            }
        }
        if seen.iter().any(|(r, ok, _)| *r == Line::Failed && *ok) {
            return TestVerdict::Failed;
        }
        if seen.iter().any(|(_, _, finished)| !finished) {
            return TestVerdict::NotRun(format!(
                "the test binary running {name} ended before libtest's summary (it exited or \
                 was killed mid-run; see the transcript)"
            ));
        }
        if seen.iter().any(|(_, ok, _)| !ok) {
            return TestVerdict::NotRun(format!(
                "the libtest summary of the binary running {name} does not count the results \
                 it listed: its output decides nothing"
            ));
        }
        if seen.iter().any(|(r, _, _)| *r == Line::Ignored) {
            return TestVerdict::NotRun(format!("{name} is ignored"));
        }
        if seen.iter().any(|(r, _, _)| *r == Line::Ok) {
            return TestVerdict::Passed;
        }
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

/// The verdicts a JUnit report gives `names`. A process that exited non-zero with no failing
/// testcase in its report says something went wrong that the report does not show: its
/// passes decide nothing (its failures still count).
fn junit_verdicts(
    cases: &[Case],
    names: &[String],
    exit: i32,
    who: &str,
    wanted: impl Fn(&str, &Case) -> bool,
) -> Vec<TestVerdict> {
    let any_failure = cases.iter().any(|c| c.result == CaseResult::Failed);
    names
        .iter()
        .map(|n| match junit_verdict(cases, |c| wanted(n, c)) {
            TestVerdict::Passed if exit != 0 && !any_failure => TestVerdict::NotRun(format!(
                "{who} exited {exit} while its report says the test passed and no test failed: \
                 the report does not account for the failure, so its pass decides nothing"
            )),
            v => v,
        })
        .collect()
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

    fn names(ns: &[&str]) -> Vec<String> {
        ns.iter().map(|s| s.to_string()).collect()
    }

    /// The verdict on each name from a run that exited 0 (stdout for cargo, else the report).
    fn read(r: &Runner, ns: &[&str], exit: i32, out: &[u8], junit: Option<&str>) -> Reading {
        r.read(&names(ns), exit, out, false, junit.map(str::as_bytes))
    }

    fn one(r: &Runner, n: &str, exit: i32, out: &[u8], junit: Option<&str>) -> TestVerdict {
        match read(r, &[n], exit, out, junit) {
            Ok(v) => v[0].clone(),
            Err(why) => TestVerdict::NotRun(why),
        }
    }

    #[test]
    fn junit_names_match_by_name_or_qualified_name() {
        let r = Runner::Junit("true".into());
        let v = |n: &str| one(&r, n, 0, b"", Some(REPORT));
        assert_eq!(v("test_ok"), TestVerdict::Passed);
        assert_eq!(v("tests.test_x.test_ok"), TestVerdict::Passed);
        assert_eq!(v("tests.test_x::test_bad"), TestVerdict::Failed);
        assert_eq!(v("suite.errs"), TestVerdict::Failed);
        assert!(matches!(v("test_skip"), TestVerdict::NotRun(_)));
        assert!(matches!(v("test_nothing"), TestVerdict::NotRun(_)));
        assert!(read(&r, &["test_ok"], 0, b"", None).is_err());
        // Many names from one report, each on its own.
        let many = read(
            &r,
            &["test_ok", "test_bad", "test_nothing"],
            1,
            b"",
            Some(REPORT),
        );
        let many = many.unwrap();
        assert_eq!(many[0], TestVerdict::Passed);
        assert_eq!(many[1], TestVerdict::Failed);
        assert!(matches!(many[2], TestVerdict::NotRun(_)));
    }

    #[test]
    fn a_failed_exit_with_a_report_of_passes_decides_nothing() {
        let r = Runner::Junit("true".into());
        let passes = r#"<testsuite><testcase name="t1"/><testcase name="t2"/></testsuite>"#;
        assert_eq!(one(&r, "t1", 0, b"", Some(passes)), TestVerdict::Passed);
        let TestVerdict::NotRun(why) = one(&r, "t1", 3, b"", Some(passes)) else {
            panic!("a pass from a command that exited 3");
        };
        assert!(why.contains("exited 3"), "{why}");
        // A failing testcase explains the exit: both verdicts stand.
        let mixed = r#"<testsuite><testcase name="t1"/><testcase name="t2"><failure/></testcase></testsuite>"#;
        assert_eq!(one(&r, "t1", 1, b"", Some(mixed)), TestVerdict::Passed);
        assert_eq!(one(&r, "t2", 1, b"", Some(mixed)), TestVerdict::Failed);
    }

    #[test]
    fn pytest_node_ids_map_to_junit_names() {
        let r = Runner::Pytest {
            python: "python3".into(),
        };
        let v = |n: &str| one(&r, n, 1, b"", Some(REPORT));
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
    fn pytest_names_the_node_ids_it_refuses() {
        let r = Runner::Pytest {
            python: "python3".into(),
        };
        let ns = names(&["tests/a.py::t1", "tests/a.py::t2", "tests/b.py::t3"]);
        let err = b"ERROR: not found: /tree/tests/a.py::t2\n(no match in any of [<Module a.py>])\n\
                    ERROR: file or directory not found: tests/b.py\n";
        assert_eq!(
            r.not_found(&ns, 4, b"", err),
            names(&["tests/a.py::t2", "tests/b.py::t3"])
        );
        // Only pytest's usage error says so.
        assert!(r.not_found(&ns, 1, b"", err).is_empty());
        assert!(Runner::Cargo.not_found(&ns, 4, b"", err).is_empty());
    }

    const LIBTEST: &str = "
running 4 tests
test a::ok ... ok
test a::bad ... FAILED
test a::later ... ignored, slow
test a::panics - should panic ... ok

failures:

---- a::bad stdout ----
test a::other ... ok
thread 'a::bad' panicked

failures:
    a::bad

test result: FAILED. 2 passed; 1 failed; 1 ignored; 0 measured; 3 filtered out; finished in 0.01s


running 0 tests

test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 1 filtered out; finished in 0.00s

";

    #[test]
    fn libtest_output_decides_cargo_tests() {
        let v = |n: &str| one(&Runner::Cargo, n, 101, LIBTEST.as_bytes(), None);
        assert_eq!(v("a::ok"), TestVerdict::Passed);
        assert_eq!(v("a::bad"), TestVerdict::Failed);
        assert_eq!(v("a::panics"), TestVerdict::Passed);
        assert!(matches!(v("a::later"), TestVerdict::NotRun(_)));
        // A failing test's own output is not a result line.
        assert!(matches!(v("a::other"), TestVerdict::NotRun(_)));
        // A prefix of a name is not the name.
        assert!(matches!(v("a::o"), TestVerdict::NotRun(_)));
        assert!(matches!(
            one(&Runner::Cargo, "a::ok", 101, b"", None),
            TestVerdict::NotRun(_)
        ));
    }

    #[test]
    fn a_pass_line_without_libtest_summary_decides_nothing() {
        // The test printed its own pass line and exited 0 before its assertion; cargo went
        // on to the next binary, which ended properly, and exited 0.
        let forged = "
running 2 tests
test t::adds ... ok
test t::forged ... ok

running 0 tests

test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 1 filtered out; finished in 0.00s

";
        let TestVerdict::NotRun(why) = one(&Runner::Cargo, "t::forged", 0, forged.as_bytes(), None)
        else {
            panic!("a forged pass");
        };
        assert!(why.contains("without libtest's summary"), "{why}");
        // The pass lines alone, with no summary at all.
        let bare = "running 1 test\ntest t::forged ... ok\n";
        assert!(matches!(
            one(&Runner::Cargo, "t::forged", 0, bare.as_bytes(), None),
            TestVerdict::NotRun(_)
        ));
        // A summary that does not count the lines listed.
        let miscounted = "running 1 test\ntest t::a ... ok\ntest t::b ... ok\n\n\
            test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n";
        assert!(matches!(
            one(&Runner::Cargo, "t::a", 0, miscounted.as_bytes(), None),
            TestVerdict::NotRun(_)
        ));
        // The exit status must agree with the summaries.
        let ok = "running 1 test\ntest t::a ... ok\n\n\
            test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n";
        assert_eq!(
            one(&Runner::Cargo, "t::a", 0, ok.as_bytes(), None),
            TestVerdict::Passed
        );
        assert!(matches!(
            one(&Runner::Cargo, "t::a", 101, ok.as_bytes(), None),
            TestVerdict::NotRun(_)
        ));
        assert!(matches!(
            one(&Runner::Cargo, "t::a", 1, ok.as_bytes(), None),
            TestVerdict::NotRun(_)
        ));
        // Cut output is not read.
        assert!(Runner::Cargo
            .read(&names(&["t::a"]), 0, ok.as_bytes(), true, None)
            .is_err());
        // A binary that crashed (cargo 101): its tests decide nothing, the others stand.
        let crashed = "running 2 tests\ntest t::a ... ok\n\nrunning 1 test\ntest u::b ... ok\n\n\
            test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n";
        let v = read(
            &Runner::Cargo,
            &["t::a", "u::b"],
            101,
            crashed.as_bytes(),
            None,
        )
        .unwrap();
        assert!(matches!(v[0], TestVerdict::NotRun(_)));
        assert_eq!(v[1], TestVerdict::Passed);
    }

    #[test]
    fn the_likely_cause_names_the_flags_that_fix_it() {
        let py = Runner::Pytest {
            python: "python3".into(),
        };
        let cause = py
            .likely_cause(Some(1), b"", b"/usr/bin/python3: No module named pytest\n")
            .unwrap();
        assert!(
            cause.contains("--python") && cause.contains("--expose"),
            "{cause}"
        );
        let cause = Runner::Cargo
            .likely_cause(
                Some(1),
                b"",
                b"bwrap: execvp cargo: No such file or directory\n",
            )
            .unwrap();
        assert!(cause.contains("--expose"), "{cause}");
        assert_eq!(
            Runner::Cargo.likely_cause(Some(101), b"", b"all fine"),
            None
        );
        assert_eq!(tail(b"a\nb\nc\n", 100), "a\nb\nc");
        assert_eq!(tail(b"line one\nline two\n", 10), "…line two");
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
        assert!(Runner::Cargo.check_name("a\nb").is_err());
        let (argv, env) = Runner::Junit("x".into()).command(&names(&["a", "b"]), "/o");
        assert_eq!(argv, ["sh", "-c", "x"]);
        assert!(env.contains(&("ELENCH_TESTS".into(), "a\nb".into())));
        assert!(env.contains(&("ELENCH_TEST".into(), "a".into())));
        let (argv, _) = Runner::Cargo.command(&names(&["a", "b"]), "/o");
        assert_eq!(argv[argv.len() - 3..], ["--exact", "a", "b"]);
    }
}
