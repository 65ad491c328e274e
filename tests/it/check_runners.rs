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
    let call = &shown["data"]["evidence"][0]["blob"]["runs"][0]["calls"][0];
    assert!(call["process"]["stdout"]
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
