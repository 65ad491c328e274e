//! Real test runners under `check`: a tiny cargo crate and a tiny pytest project, each with
//! one passing, one failing and one missing test (verified / falsified / inconclusive).
//! Where a tool is missing the test says `skipped:` and passes.

use crate::check_support;

use check_support::{bwrap_works, outcome, Bench};
use std::path::PathBuf;
use std::process::Command;

/// Sandbox flags: the sandbox where bwrap works, else unconfined (the runners are what is
/// tested here; confinement has its own tests).
fn sandbox_args() -> Vec<String> {
    if bwrap_works() {
        vec![]
    } else {
        eprintln!("note: bwrap unavailable; runner processes run with --no-sandbox");
        vec!["--no-sandbox".into()]
    }
}

fn run_check(b: &Bench, extra: Vec<String>, ids: &[&String]) -> serde_json::Value {
    let mut args: Vec<String> = sandbox_args();
    args.extend(extra);
    args.extend(["--timeout".into(), "300".into()]);
    args.extend(ids.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out) = b.check(&refs);
    assert_eq!(code, 3, "the missing test makes the run partial: {out}");
    out
}

/// Where cargo and rustc live: CARGO_HOME and RUSTUP_HOME (or their defaults).
fn toolchain_dirs() -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut dirs = Vec::new();
    for (var, default) in [("CARGO_HOME", ".cargo"), ("RUSTUP_HOME", ".rustup")] {
        let d = std::env::var_os(var)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(default)));
        if let Some(d) = d.filter(|d| d.is_dir()) {
            dirs.push(d);
        }
    }
    // A cargo installed outside those (a distribution package) is under /usr, always visible.
    dirs
}

#[test]
fn cargo_libtest_passing_failing_and_missing() {
    if Command::new("cargo").arg("--version").output().is_err() {
        eprintln!("skipped: cargo is not on PATH");
        return;
    }
    let b = Bench::new(&[
        (
            "Cargo.toml",
            "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
        ),
        (
            "src/lib.rs",
            "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    \
             #[test]\n    fn adds() {\n        assert_eq!(super::add(1, 2), 3);\n    }\n    \
             #[test]\n    fn adds_wrong() {\n        assert_eq!(super::add(1, 2), 4);\n    }\n}\n",
        ),
    ]);
    let pass = b.claim(r#"test("tests::adds").passed"#);
    let fail = b.claim(r#"test("tests::adds_wrong").passed"#);
    let missing = b.claim(r#"test("tests::subtracts").passed"#);
    let mut extra = vec!["--runner".to_owned(), "cargo".to_owned()];
    for d in toolchain_dirs() {
        extra.extend(["--expose".to_owned(), d.display().to_string()]);
    }
    let out = run_check(&b, extra, &[&pass, &fail, &missing]);
    assert_eq!(outcome(&out, &pass), "verified", "{out}");
    assert_eq!(outcome(&out, &fail), "falsified", "{out}");
    assert_eq!(outcome(&out, &missing), "inconclusive", "{out}");
    // The build happened in the scratch copy, not in the checkout.
    assert!(!b.tree.join("target").exists());
    // The record's evidence is a test report.
    let rec = check_support::entry(&out, &pass)["record"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, shown) = b.ks.run(&["show", &rec, "--evidence"]);
    assert_eq!(shown["data"]["claim"]["evidence"][0]["kind"], "test-report");
    // One cargo run for the three claims, which the transcript carries.
    let run = &shown["data"]["evidence"][0]["blob"]["runs"][0];
    assert_eq!(run["calls"][0]["call"], "test");
    assert_eq!(
        run["tests"][0]["names"],
        serde_json::json!(["tests::adds", "tests::adds_wrong", "tests::subtracts"])
    );
    let process = &run["tests"][0]["processes"][0];
    assert_eq!(process["argv"][0], "cargo");
    assert!(process["stdout"]
        .as_str()
        .unwrap()
        .contains("test tests::adds ... ok"));
}

/// A Python that has pytest, and the directories it needs visible: (interpreter, dirs).
fn python_with_pytest() -> Option<(String, Vec<String>)> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys, pytest, os; print(os.path.realpath(sys.executable)); \
             print(sys.prefix); print(sys.base_prefix); print(os.path.dirname(pytest.__file__))",
        ])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let mut lines = text.lines().map(str::to_owned);
    let exe = lines.next()?;
    let dirs: Vec<String> = lines.filter(|l| !l.is_empty()).collect();
    Some((exe, dirs))
}

#[test]
fn pytest_passing_failing_and_missing() {
    let Some((python, dirs)) = python_with_pytest() else {
        eprintln!("skipped: no python3 with pytest (pip install pytest)");
        return;
    };
    let b = Bench::new(&[
        (
            "tests/test_calc.py",
            "def test_adds():\n    assert 1 + 2 == 3\n\n\ndef test_adds_wrong():\n    assert 1 + 2 == 4\n\n\n\
             class TestGroup:\n    def test_in_class(self):\n        assert True\n",
        ),
        ("tests/__init__.py", ""),
    ]);
    let pass = b.claim(r#"test("tests/test_calc.py::test_adds").passed"#);
    let fail = b.claim(r#"test("tests/test_calc.py::test_adds_wrong").passed"#);
    let missing = b.claim(r#"test("tests/test_calc.py::test_subtracts").passed"#);
    let in_class = b.claim(r#"test("tests/test_calc.py::TestGroup::test_in_class").passed"#);
    let mut extra = vec![
        "--runner".to_owned(),
        "pytest".to_owned(),
        "--python".to_owned(),
        python,
    ];
    for d in dirs {
        // Under /usr the sandbox sees it anyway.
        if !d.starts_with("/usr") {
            extra.extend(["--expose".to_owned(), d]);
        }
    }
    let out = run_check(&b, extra, &[&pass, &fail, &missing, &in_class]);
    assert_eq!(outcome(&out, &pass), "verified", "{out}");
    assert_eq!(outcome(&out, &fail), "falsified", "{out}");
    assert_eq!(outcome(&out, &missing), "inconclusive", "{out}");
    assert_eq!(outcome(&out, &in_class), "verified", "{out}");
}

#[test]
fn junit_command_reports_are_read_by_name() {
    // A "test suite" in shell: it writes one JUnit report of all its cases, and says which
    // test it was asked for.
    let script = r#"echo "asked for $ELENCH_TEST"
cat > "$ELENCH_JUNIT" <<'XML'
<testsuite>
<testcase classname="suite" name="good"/>
<testcase classname="suite" name="bad"><failure message="no"/></testcase>
<testcase classname="suite" name="skip"><skipped/></testcase>
</testsuite>
XML
"#;
    let b = Bench::new(&[("suite.sh", script)]);
    let good = b.claim(r#"test("suite.good").passed"#);
    let bad = b.claim(r#"test("suite::bad").passed"#);
    let skip = b.claim(r#"test("skip").passed"#);
    let missing = b.claim(r#"test("other").passed"#);
    let out = run_check(
        &b,
        vec!["--runner".into(), "junit:sh suite.sh".into()],
        &[&good, &bad, &skip, &missing],
    );
    assert_eq!(outcome(&out, &good), "verified", "{out}");
    assert_eq!(outcome(&out, &bad), "falsified", "{out}");
    assert_eq!(outcome(&out, &skip), "inconclusive", "{out}");
    assert_eq!(outcome(&out, &missing), "inconclusive", "{out}");
}

/// A `junit:CMD` "suite" that runs every test named in `$ELENCH_TESTS`, once for all of them:
/// `good` passes, `bad` fails, and any other name is not in its report. It prints a mark of
/// its own run (a random id) and the names it was given, so a transcript shows which run it
/// read.
const SUITE: &str = r#"echo "run $(cat /proc/sys/kernel/random/uuid)"
printf 'asked for %s\n' "$ELENCH_TESTS" | tr '\n' ' '; echo
{
  echo '<testsuite>'
  printf '%s\n' "$ELENCH_TESTS" | while read -r name; do
    case "$name" in
      good) echo '<testcase name="good"/>' ;;
      bad) echo '<testcase name="bad"><failure message="no"/></testcase>' ;;
    esac
  done
  echo '</testsuite>'
} > "$ELENCH_JUNIT"
exit 1
"#;

/// The transcript stored as a record's evidence.
fn transcript(b: &Bench, out: &serde_json::Value, id: &str) -> serde_json::Value {
    let rec = check_support::entry(out, id)["record"]
        .as_str()
        .unwrap_or_else(|| panic!("{id} has no record: {out}"))
        .to_owned();
    let (code, shown) = b.ks.run(&["show", &rec, "--evidence"]);
    assert_eq!(code, 0, "{shown}");
    shown["data"]["evidence"][0]["blob"].clone()
}

#[test]
fn the_test_claims_of_a_check_share_one_run_of_the_runner() {
    let b = Bench::new(&[("suite.sh", SUITE)]);
    let good = b.claim(r#"test("good").passed"#);
    let bad = b.claim(r#"test("bad").passed"#);
    let missing = b.claim(r#"test("missing").passed"#);
    let runner = "junit:sh suite.sh".to_owned();
    let out = run_check(
        &b,
        vec!["--runner".into(), runner],
        &[&good, &bad, &missing],
    );
    // Each claim decided on its own, from the one report.
    assert_eq!(outcome(&out, &good), "verified", "{out}");
    assert_eq!(outcome(&out, &bad), "falsified", "{out}");
    assert_eq!(outcome(&out, &missing), "inconclusive", "{out}");
    assert!(
        check_support::entry(&out, &missing)["reason"]
            .as_str()
            .unwrap()
            .contains("no testcase of that name"),
        "{out}"
    );
    // Both transcripts hold the same single run, asked for all three names.
    let mut marks = Vec::new();
    for id in [&good, &bad] {
        let t = transcript(&b, &out, id);
        assert_eq!(t["tree"], b.tree_oid(), "the tree checked comes first: {t}");
        let runs = t["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 1, "{t}");
        let tests = runs[0]["tests"].as_array().unwrap();
        assert_eq!(tests.len(), 1, "one run of the runner: {t}");
        assert_eq!(
            tests[0]["names"],
            serde_json::json!(["good", "bad", "missing"])
        );
        let processes = tests[0]["processes"].as_array().unwrap();
        assert_eq!(processes.len(), 1, "one process: {t}");
        let stdout = processes[0]["stdout"].as_str().unwrap();
        assert!(stdout.contains("asked for good bad missing"), "{stdout}");
        marks.push(stdout.lines().next().unwrap().to_owned());
        assert_eq!(runs[0]["calls"][0]["call"], "test");
    }
    assert_eq!(marks[0], marks[1], "the same run: {marks:?}");

    // --repeat 3: three runs, each read by every claim.
    let b = Bench::new(&[("suite.sh", SUITE)]);
    let good = b.claim(r#"test("good").passed"#);
    let also = b.claim(r#"test("good").passed && !test("bad").passed"#);
    let out = run_check(
        &b,
        vec![
            "--runner".into(),
            "junit:sh suite.sh".into(),
            "--repeat".into(),
            "3".into(),
        ],
        &[&good, &also, &missing_claim(&b)],
    );
    assert_eq!(outcome(&out, &good), "verified", "{out}");
    assert_eq!(outcome(&out, &also), "verified", "{out}");
    let marks = |id: &str| -> Vec<String> {
        transcript(&b, &out, id)["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let tests = r["tests"].as_array().unwrap();
                assert_eq!(tests.len(), 1);
                tests[0]["processes"][0]["stdout"]
                    .as_str()
                    .unwrap()
                    .lines()
                    .next()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    };
    let (a, c) = (marks(&good), marks(&also));
    assert_eq!(a.len(), 3);
    assert_eq!(a, c, "each repeat is one run that both claims read");
    assert!(a[0] != a[1] && a[1] != a[2], "three runs: {a:?}");
}

/// A claim on a test the suite does not have (keeps the run partial, as `run_check` expects).
fn missing_claim(b: &Bench) -> String {
    b.claim(r#"test("missing").passed"#)
}

#[test]
fn a_runner_that_exits_non_zero_with_a_report_of_passes_is_not_believed() {
    // The report says the test passed; the command says it failed.
    let script = r#"echo '<testsuite><testcase name="t1"/></testsuite>' > "$ELENCH_JUNIT"
exit 1
"#;
    let b = Bench::new(&[("suite.sh", script)]);
    let t1 = b.claim(r#"test("t1").passed"#);
    let out = run_check(
        &b,
        vec!["--runner".into(), "junit:sh suite.sh".into()],
        &[&t1],
    );
    assert_eq!(outcome(&out, &t1), "inconclusive", "{out}");
    let reason = check_support::entry(&out, &t1)["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(reason.contains("exited 1"), "{reason}");
}

#[test]
fn a_runner_that_writes_no_report_says_why() {
    // A Python without pytest, as python3 -m pytest answers there.
    let fake_python = "#!/bin/sh\necho \"/usr/bin/python3: No module named pytest\" >&2\nexit 1\n";
    let b = Bench::new(&[("fakepython", fake_python)]);
    {
        use std::os::unix::fs::PermissionsExt;
        let p = b.tree.join("fakepython");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let t = b.claim(r#"test("tests/test_x.py::test_y").passed"#);
    let out = run_check(
        &b,
        vec![
            "--runner".into(),
            "pytest".into(),
            "--python".into(),
            "./fakepython".into(),
        ],
        &[&t],
    );
    let reason = check_support::entry(&out, &t)["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(reason.contains("wrote no JUnit report"), "{reason}");
    assert!(reason.contains("exited 1"), "the exit: {reason}");
    assert!(
        reason.contains("No module named pytest"),
        "its stderr: {reason}"
    );
    assert!(
        reason.contains("--python") && reason.contains("--expose"),
        "what to do: {reason}"
    );
    // Nothing is recorded, but what the runner printed is kept as the result's evidence.
    let digest = check_support::entry(&out, &t)["evidence"]
        .as_str()
        .expect("an inconclusive run names its transcript")
        .to_owned();
    let blob =
        b.ks.store
            .join("blobs/sha256")
            .join(&digest[..2])
            .join(&digest);
    let transcript = std::fs::read_to_string(&blob).expect("the transcript blob is in the store");
    assert!(
        transcript.contains("No module named pytest"),
        "the runner's stderr is in the transcript: {transcript}"
    );
    assert_eq!(
        check_support::entry(&out, &t)["record"],
        serde_json::Value::Null
    );

    // Any runner: the exit and the end of what it said.
    let b = Bench::new(&[("x", "")]);
    let t = b.claim(r#"test("t").passed"#);
    let out = run_check(
        &b,
        vec![
            "--runner".into(),
            "junit:echo 'cannot find the suite config' >&2; exit 2".into(),
        ],
        &[&t],
    );
    let reason = check_support::entry(&out, &t)["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(reason.contains("wrote no JUnit report"), "{reason}");
    assert!(reason.contains("exited 2"), "{reason}");
    assert!(reason.contains("cannot find the suite config"), "{reason}");
}

#[test]
fn a_test_that_prints_its_own_pass_and_exits_is_not_verified() {
    if Command::new("cargo").arg("--version").output().is_err() {
        eprintln!("skipped: cargo is not on PATH");
        return;
    }
    // The test writes libtest's pass line itself and exits 0 before its assertion, so
    // libtest never prints its summary; cargo goes on and exits 0.
    let b = Bench::new(&[
        (
            "Cargo.toml",
            "[package]\nname = \"forger\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
        ),
        (
            "src/lib.rs",
            "#[cfg(test)]\nmod tests {\n    #[test]\n    fn forged() {\n        \
             use std::io::Write;\n        \
             let mut out = std::io::stdout();\n        \
             let _ = out.write_all(b\"test tests::forged ... ok\\n\");\n        \
             let _ = out.flush();\n        \
             std::process::exit(0);\n        \
             #[allow(unreachable_code)]\n        assert_eq!(1, 2);\n    }\n}\n",
        ),
    ]);
    let forged = b.claim(r#"test("tests::forged").passed"#);
    let mut extra = vec!["--runner".to_owned(), "cargo".to_owned()];
    for d in toolchain_dirs() {
        extra.extend(["--expose".to_owned(), d.display().to_string()]);
    }
    let out = run_check(&b, extra, &[&forged]);
    assert_eq!(outcome(&out, &forged), "inconclusive", "{out}");
    let reason = check_support::entry(&out, &forged)["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(reason.contains("without libtest's summary"), "{reason}");
    assert_eq!(b.status(&forged), "unevaluated");
}
