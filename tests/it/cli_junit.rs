//! `check --format junit` read by a real JUnit consumer (`xmllint` against the Apache Ant
//! JUnit schema vendored in fixtures/schemas), and `check --format github`.

use crate::check_support;
use crate::common;

use check_support::Bench;
use common::{fresh_name, sign_anchored_cli, ClaimBuilder};
use std::path::Path;

const FILES: &[(&str, &str)] = &[
    (
        "src/lib.rs",
        "pub fn parse(s: &str) -> u32 {\n    s.len() as u32\n}\n",
    ),
    ("src/odd, name.rs", "unsafe fn raw() {}\n"),
];

/// A predicate claim anchored to lines of a file of the bench's tree, with `text`.
fn anchored(b: &Bench, text: &str, source: &str, spec: &str) -> String {
    let claim = ClaimBuilder::assertion(text)
        .predicate("elench-predicate-v1", source)
        .build();
    let (env, id) = sign_anchored_cli(b.dir(), &claim, &b.ks.keys.agent, spec, &b.tree);
    let (code, added) = b.ks.run(&["add", env.to_str().unwrap()]);
    assert_eq!(code, 0, "{added}");
    id
}

fn has_xmllint() -> bool {
    std::process::Command::new("xmllint")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `xmllint --schema JUnit.xsd`: asserts the document is valid.
fn assert_valid_junit(dir: &Path, xml: &str) {
    let file = dir.join(fresh_name("report", "xml"));
    std::fs::write(&file, xml).unwrap();
    let xsd = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/schemas/JUnit.xsd");
    let out = std::process::Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(&xsd)
        .arg(&file)
        .output()
        .expect("xmllint runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "not valid JUnit XML: {stderr}\n{xml}");
    assert!(stderr.contains("validates"), "{stderr}");
}

fn bench_with_every_outcome() -> (Bench, [String; 4]) {
    let b = Bench::new(FILES);
    let verified = anchored(
        &b,
        "parse <exists> & \"works\"",
        r#"exists("src/lib.rs")"#,
        "src/lib.rs:1-3",
    );
    let falsified = anchored(
        &b,
        "no unsafe code\nanywhere",
        r#"grep("unsafe", "src") == 0"#,
        "src/odd, name.rs:1-1",
    );
    // No runner can say whether this test passed: inconclusive.
    let inconclusive = b.claim(r#"test("tests::nowhere").passed"#);
    // About another tree: not applicable, not evaluated, not listed.
    let elsewhere = b.claim_full(r#"exists("x")"#, &"0".repeat(64), &[]);
    (b, [verified, falsified, inconclusive, elsewhere])
}

#[test]
fn junit_of_a_check_is_valid_ant_junit_with_a_case_per_claim_evaluated() {
    let (b, [verified, falsified, inconclusive, elsewhere]) = bench_with_every_outcome();
    let mut cmd = b.check_command(&[
        &verified,
        &falsified,
        &inconclusive,
        &elsewhere,
        "--runner",
        "cargo",
    ]);
    let out = cmd.arg("--format").arg("junit").output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(3),
        "inconclusive: exit 3; {stderr}\n{stdout}"
    );
    assert!(stdout.starts_with("<?xml"), "{stdout}");
    assert!(
        stdout.contains("tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\""),
        "{stdout}"
    );
    // Names: short id and text (escaped); the file is the class.
    assert!(
        stdout.contains(&format!(
        "name=\"{} parse &lt;exists&gt; &amp; &quot;works&quot;\" classname=\"elench.src/lib.rs\"",
        &verified[..15]
    )),
        "{stdout}"
    );
    assert!(stdout.contains(&format!(
        "name=\"{} no unsafe code anywhere\"",
        &falsified[..15]
    )));
    // The failure carries the evidence: the record and the transcript's end.
    let failure = &stdout[stdout.find("<failure").unwrap()..stdout.find("</failure>").unwrap()];
    assert!(failure.contains("falsification record cl_"), "{failure}");
    assert!(failure.contains("evidence sha256:"), "{failure}");
    assert!(failure.contains("grep"), "the transcript: {failure}");
    assert!(
        stdout.contains("<skipped message=\"inconclusive: "),
        "{stdout}"
    );
    assert!(
        !stdout.contains(&elsewhere[..15]),
        "not applicable: not listed"
    );
    if !has_xmllint() {
        eprintln!("skipped: xmllint is not installed");
        return;
    }
    assert_valid_junit(b.dir(), &stdout);
}

#[test]
fn github_annotations_of_a_check_mark_falsified_and_inconclusive_claims() {
    let (b, [verified, falsified, inconclusive, _]) = bench_with_every_outcome();
    let mut cmd = b.check_command(&[&verified, &falsified, &inconclusive, "--runner", "cargo"]);
    let out = cmd.arg("--format").arg("github").output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(3));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(
        lines[0].starts_with("::error file=src/odd%2C name.rs,line=1,endLine=1,title="),
        "{stdout}"
    );
    assert!(lines[0].contains("no unsafe code%0Aanywhere"), "{stdout}");
    assert!(lines[1].starts_with("::warning title="), "{stdout}");
    assert!(!stdout.contains(&verified));
}

/// The value of attribute `name` in the first element of `xml` that has it after `from`.
fn attribute<'a>(xml: &'a str, from: &str, name: &str) -> &'a str {
    let at = xml
        .find(from)
        .unwrap_or_else(|| panic!("no {from} in {xml}"));
    let rest = &xml[at..];
    let key = format!(" {name}=\"");
    let start = rest
        .find(&key)
        .unwrap_or_else(|| panic!("no {name} in {rest}"))
        + key.len();
    let len = rest[start..].find('"').unwrap();
    &rest[start..start + len]
}

#[test]
fn junit_gives_each_case_the_time_its_evaluation_took_and_names_the_tree() {
    let b = Bench::new(FILES);
    let slow = anchored(
        &b,
        "takes a while",
        r#"run("sleep 0.3").exit == 0"#,
        "src/lib.rs:1-3",
    );
    let quick = b.claim(r#"exists("src/lib.rs")"#);
    let mut args = vec![slow.as_str(), quick.as_str()];
    if !check_support::bwrap_works() {
        args.push("--no-sandbox");
    }
    let out = b
        .check_command(&args)
        .arg("--format")
        .arg("junit")
        .output()
        .unwrap();
    let xml = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{xml}");
    let time = |from: &str| -> f64 { attribute(&xml, from, "time").parse().unwrap() };
    let slow_time = time(&format!("<testcase name=\"{}", &slow[..15]));
    assert!(slow_time >= 0.3, "{xml}");
    assert!(slow_time < 60.0, "{xml}");
    let quick_time = time(&format!("<testcase name=\"{}", &quick[..15]));
    assert!(quick_time < slow_time, "{xml}");
    // Milliseconds, and the suite's time is its cases'.
    let shown = attribute(&xml, &format!("<testcase name=\"{}", &slow[..15]), "time");
    assert_eq!(shown.split('.').nth(1).map(str::len), Some(3), "{shown}");
    assert!(time("<testsuite ") >= slow_time, "{xml}");
    // The tree checked: the suite's name and a property.
    let tree = b.tree_oid();
    assert!(
        attribute(&xml, "<testsuite ", "name").contains(&tree),
        "{xml}"
    );
    assert!(
        xml.contains(&format!("<property name=\"tree\" value=\"{tree}\"/>")),
        "{xml}"
    );
    // The JSON answer carries the same durations.
    let b2 = Bench::new(FILES);
    let slow2 = b2.claim(r#"run("sleep 0.3").exit == 0"#);
    let mut args = vec![slow2.as_str()];
    if !check_support::bwrap_works() {
        args.push("--no-sandbox");
    }
    let (code, json) = b2.check(&args);
    assert_eq!(code, 0, "{json}");
    let seconds = check_support::entry(&json, &slow2)["seconds"]
        .as_f64()
        .unwrap();
    assert!((0.3..60.0).contains(&seconds), "{json}");
    if has_xmllint() {
        assert_valid_junit(b.dir(), &xml);
    }
}
