//! Issue 4: conformance reports as evidence, through the real binary.
//! `check` on every report fixture (sound and broken), `attest` round trips through `add`
//! and `status`, and `conformance run` on the shipped corpus.

use crate::common;

use common::{copy_dir, elench, sign_cli, ClaimBuilder, KeyedStore};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn reports() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/reports")
}

fn report(name: &str) -> String {
    reports().join(name).display().to_string()
}

fn violation_codes(json: &Value) -> Vec<String> {
    json["data"]["violations"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| v["code"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn sound_reports_pass_check() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "declaration-schema-example.json",
        "declaration-all-pass.json",
        "declaration-one-failed.json",
        "declaration-one-error.json",
        "declaration-hand-maintained.json",
        "result-doc-example-failing.json",
        "result-level1-pass.json",
        "result-level2-fail.json",
        "result-level1-incomplete.json",
        "result-in-envelope.json",
        "result-in-envelope-pass.json",
    ] {
        let (code, json) = elench(dir.path(), &["conformance", "check", &report(name)]);
        assert_eq!(code, 0, "{name}: {json}");
        assert_eq!(json["data"]["sound"], true, "{name}");
        assert!(violation_codes(&json).is_empty(), "{name}: {json}");
    }
}

#[test]
fn hand_maintained_declaration_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let (code, json) = elench(
        dir.path(),
        &[
            "conformance",
            "check",
            &report("declaration-hand-maintained.json"),
        ],
    );
    assert_eq!(code, 0);
    assert_eq!(json["warnings"][0]["code"], "HAND_MAINTAINED", "{json}");
}

/// Every invariant has a broken report that `check` rejects with that invariant's code.
#[test]
fn each_broken_report_is_rejected_with_its_code() {
    let dir = tempfile::tempdir().unwrap();
    let cases = report("corpus-cases.txt");
    let table: [(&str, &str, &str); 18] = [
        (
            "broken-declaration-schema.json",
            "SCHEMA_VIOLATION",
            "/commons_commit",
        ),
        (
            "broken-declaration-denominator.json",
            "DENOMINATOR_INTACT",
            "/result/total",
        ),
        (
            "broken-declaration-enumeration-missing.json",
            "ENUMERATION_MISSING",
            "/failed_cases",
        ),
        (
            "broken-declaration-enumeration-length.json",
            "ENUMERATION_LENGTH",
            "/failed_cases",
        ),
        (
            "broken-declaration-enumeration-overlap.json",
            "ENUMERATION_OVERLAP",
            "/error_cases/0",
        ),
        (
            "broken-declaration-enumeration-duplicate.json",
            "ENUMERATION_DUPLICATE",
            "/failed_cases/1",
        ),
        (
            "broken-declaration-total-vs-corpus.json",
            "TOTAL_MATCHES_CORPUS",
            "/result/total",
        ),
        (
            "broken-declaration-case-not-in-corpus.json",
            "CASE_NOT_IN_CORPUS",
            "/failed_cases/0",
        ),
        ("broken-result-schema.json", "SCHEMA_VIOLATION", "/tool"),
        (
            "broken-result-doc-example-invalid-status.json",
            "CHECK_STATUS_INVALID",
            "/checks/0/status",
        ),
        (
            "broken-result-pass-with-failures.json",
            "PASS_WITH_FAILURES",
            "/checks/0/failures",
        ),
        (
            "broken-result-fail-without-failures.json",
            "FAIL_WITHOUT_FAILURES",
            "/checks/1/failures",
        ),
        (
            "broken-result-skip-without-reason.json",
            "SKIPPED_REASON",
            "/checks/2/skipped_reason",
        ),
        (
            "broken-result-reason-without-skip.json",
            "SKIPPED_REASON",
            "/checks/0/skipped_reason",
        ),
        (
            "broken-result-summary.json",
            "SUMMARY_MISMATCH",
            "/summary/passed",
        ),
        (
            "broken-result-level.json",
            "LEVEL_MISMATCH",
            "/levels/level_1",
        ),
        ("broken-envelope-ok.json", "ENVELOPE_OK", "/ok"),
        (
            "broken-envelope-exit-code.json",
            "ENVELOPE_EXIT_CODE",
            "/meta/exit_code",
        ),
    ];
    for (name, code, pointer) in table {
        let (exit, json) = elench(
            dir.path(),
            &["conformance", "check", &report(name), "--cases", &cases],
        );
        assert_eq!(exit, 2, "{name}: {json}");
        assert_eq!(json["error"]["code"], "UNSOUND_REPORT", "{name}");
        assert_eq!(json["data"]["sound"], false, "{name}");
        let found = json["data"]["violations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["code"] == code && v["pointer"] == pointer);
        assert!(found, "{name}: expected {code} at {pointer}, got {json}");
    }
}

#[test]
fn the_corpus_check_needs_the_case_list() {
    let dir = tempfile::tempdir().unwrap();
    // Without --cases the total cannot be compared with anything.
    let (exit, _) = elench(
        dir.path(),
        &[
            "conformance",
            "check",
            &report("broken-declaration-total-vs-corpus.json"),
        ],
    );
    assert_eq!(exit, 0);
    // A JSON case list (objects with `id`) works like the text one.
    let list = dir.path().join("cases.json");
    std::fs::write(
        &list,
        r#"{"cases":[{"id":"schema__a"},{"id":"schema__b"},"schema__c","fold__d"]}"#,
    )
    .unwrap();
    let (exit, json) = elench(
        dir.path(),
        &[
            "conformance",
            "check",
            &report("broken-declaration-total-vs-corpus.json"),
            "--cases",
            &list.display().to_string(),
        ],
    );
    assert_eq!(exit, 2);
    assert!(violation_codes(&json).contains(&"TOTAL_MATCHES_CORPUS".to_owned()));
}

#[test]
fn unknown_formats_and_non_json_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x.json");
    std::fs::write(&f, r#"{"hello":"world"}"#).unwrap();
    let (exit, json) = elench(
        dir.path(),
        &["conformance", "check", &f.display().to_string()],
    );
    assert_eq!(exit, 2);
    assert_eq!(json["error"]["code"], "UNKNOWN_REPORT_FORMAT");
    std::fs::write(&f, "not json").unwrap();
    let (exit, json) = elench(
        dir.path(),
        &["conformance", "check", &f.display().to_string()],
    );
    assert_eq!(exit, 2);
    assert_eq!(json["error"]["code"], "BAD_REPORT");
}

/// A store with an agent claim `a` and a claim `b` built on it.
fn store_with_claims() -> (KeyedStore, String, String) {
    let s = KeyedStore::new();
    let (pa, a) = sign_cli(
        s.dir(),
        &ClaimBuilder::assertion("the CLI follows the agent spec").build(),
        &s.keys.agent,
    );
    let (pb, b) = sign_cli(
        s.dir(),
        &ClaimBuilder::assertion("agents can script it")
            .depends_on(&[&a])
            .build(),
        &s.keys.agent,
    );
    let (code, json) = s.run(&["add", &pa.display().to_string(), &pb.display().to_string()]);
    assert_eq!(code, 0, "{json}");
    (s, a, b)
}

fn status_of(s: &KeyedStore, id: &str) -> Value {
    let (code, json) = s.run(&["status", id]);
    assert_eq!(code, 0, "{json}");
    json["data"]["claims"][0].clone()
}

fn attest(s: &KeyedStore, report_name: &str, claim: &str, extra: &[&str]) -> (i32, Value) {
    let key = s.keys.harness.private.display().to_string();
    let path = report(report_name);
    let mut args = vec![
        "conformance",
        "attest",
        &path,
        "--claim",
        claim,
        "--key",
        &key,
    ];
    args.extend_from_slice(extra);
    s.run(&args)
}

#[test]
fn a_passing_level_verifies_the_claim() {
    let (s, a, _) = store_with_claims();
    let (code, json) = attest(&s, "result-level1-pass.json", &a, &[]);
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["data"]["kind"], "verification");
    let record = json["data"]["id"].as_str().unwrap().to_owned();
    let st = status_of(&s, &a);
    assert_eq!(st["status"], "verified");
    assert_eq!(st["decided_by"][0], record.as_str());
    // The record carries the report's digest and path as evidence, harness-observed.
    let (_, shown) = s.run(&["show", &record]);
    let claim = &shown["data"]["claim"];
    assert_eq!(claim["origin"]["kind"], "harness-observed");
    let bytes = std::fs::read(reports().join("result-level1-pass.json")).unwrap();
    use sha2::Digest;
    assert_eq!(
        claim["evidence"][0]["digest"],
        hex::encode(sha2::Sha256::digest(&bytes))
    );
    assert_eq!(claim["evidence"][0]["kind"], "test-report");
    assert!(claim["assertion"]["text"]
        .as_str()
        .unwrap()
        .contains("2 passed"));
}

#[test]
fn a_failing_level_falsifies_the_claim_and_revokes_its_dependents() {
    let (s, a, b) = store_with_claims();
    // level_1 of this result passes, level_2 fails.
    let (code, json) = attest(&s, "result-level2-fail.json", &a, &["--level", "level_2"]);
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["data"]["kind"], "falsification");
    assert_eq!(status_of(&s, &a)["status"], "falsified");
    let sb = status_of(&s, &b);
    assert_eq!(sb["status"], "revoked");
    assert_eq!(sb["revoked_by"][0]["root"], a.as_str());
}

#[test]
fn declarations_verify_or_falsify() {
    let (s, a, b) = store_with_claims();
    let (code, json) = attest(&s, "declaration-all-pass.json", &a, &[]);
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["data"]["kind"], "verification");
    assert_eq!(status_of(&s, &a)["status"], "verified");
    let (code, json) = attest(&s, "declaration-one-failed.json", &b, &[]);
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["data"]["kind"], "falsification");
    assert_eq!(status_of(&s, &b)["status"], "falsified");
}

#[test]
fn incomplete_inconclusive_and_unmeasured_reports_change_nothing() {
    let (s, a, _) = store_with_claims();
    let before = s.export();
    for (name, code) in [
        ("result-level1-incomplete.json", "LEVEL_INCOMPLETE"),
        ("declaration-one-error.json", "INCONCLUSIVE"),
        ("declaration-hand-maintained.json", "NOT_A_MEASUREMENT"),
    ] {
        let (exit, json) = attest(&s, name, &a, &[]);
        assert_eq!(exit, 4, "{name}: {json}");
        assert_eq!(json["error"]["code"], code, "{name}");
    }
    // An unsound report attests nothing either.
    let (exit, json) = attest(&s, "broken-result-summary.json", &a, &[]);
    assert_eq!(exit, 2, "{json}");
    assert_eq!(json["error"]["code"], "UNSOUND_REPORT");
    assert_eq!(s.export(), before, "nothing may be added");
    assert_eq!(status_of(&s, &a)["status"], "unevaluated");
}

#[test]
fn attest_needs_a_trusted_harness_key_and_a_known_claim() {
    let (s, a, _) = store_with_claims();
    let before = s.export();
    let agent = s.keys.agent.private.display().to_string();
    let path = report("result-level1-pass.json");
    let (exit, json) = s.run(&[
        "conformance",
        "attest",
        &path,
        "--claim",
        &a,
        "--key",
        &agent,
    ]);
    assert_eq!(exit, 2, "{json}");
    assert_eq!(json["error"]["code"], "ROLE_VIOLATION");
    let unknown = common::some_id(7);
    let (exit, json) = attest(&s, "result-level1-pass.json", &unknown, &[]);
    assert_eq!(exit, 5, "{json}");
    assert_eq!(json["error"]["code"], "NOT_FOUND");
    assert_eq!(s.export(), before);
}

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/conformance")
}

#[test]
fn the_shipped_corpus_passes_and_its_declaration_is_sound() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("declaration.json");
    let (code, json) = elench(
        dir.path(),
        &[
            "conformance",
            "run",
            &corpus().display().to_string(),
            "-o",
            &out.display().to_string(),
        ],
    );
    assert_eq!(code, 0, "{json}");
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(corpus().join("manifest.json")).unwrap()).unwrap();
    let n = manifest["cases"].as_array().unwrap().len();
    assert!(n >= 60, "the corpus has {n} cases");
    let r = &json["data"]["result"];
    assert_eq!(r["total"], n);
    assert_eq!(r["passed"], n, "{json}");
    assert_eq!(json["data"]["declaration_source"], "derived-from-runner");
    // Each area is covered.
    for area in ["envelope", "schema", "roles", "id", "fold", "blast"] {
        let count = manifest["cases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["id"].as_str().unwrap().starts_with(&format!("{area}__")))
            .count();
        assert!(count >= 5, "area {area} has {count} cases");
    }
    // `check` passes on the declaration, against the corpus's own case list.
    let manifest_path = corpus().join("manifest.json").display().to_string();
    let (code, checked) = elench(
        dir.path(),
        &[
            "conformance",
            "check",
            &out.display().to_string(),
            "--cases",
            &manifest_path,
        ],
    );
    assert_eq!(code, 0, "{checked}");
}

#[test]
fn a_wrong_expectation_is_reported_failed_and_enumerated() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("corpus");
    copy_dir(&corpus(), &copy);
    // Pick a status case and claim the wrong status for one of its claims.
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(copy.join("manifest.json")).unwrap()).unwrap();
    let victim = manifest["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .find(|id| {
            let e: Value = serde_json::from_slice(
                &std::fs::read(copy.join(id).join("expected.json")).unwrap(),
            )
            .unwrap();
            e["expect"]["kind"] == "status"
        })
        .expect("a status case");
    let path = copy.join(&victim).join("expected.json");
    let mut e: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let claims = e["expect"]["claims"].as_object_mut().unwrap();
    let (id, status) = claims.iter_mut().next().unwrap();
    let wrong = if status == "superseded" {
        "verified"
    } else {
        "superseded"
    };
    let id = id.clone();
    *status = Value::from(wrong);
    std::fs::write(&path, serde_json::to_vec(&e).unwrap()).unwrap();

    let (code, json) = elench(
        dir.path(),
        &["conformance", "run", &copy.display().to_string()],
    );
    assert_eq!(code, 4, "{json}");
    assert_eq!(json["error"]["code"], "CONFORMANCE_CASES_FAILED");
    let d = &json["data"];
    assert_eq!(d["result"]["failed"], 1, "{d}");
    assert_eq!(d["failed_cases"], serde_json::json!([victim]));
    let total = d["result"]["total"].as_u64().unwrap();
    assert_eq!(d["result"]["passed"].as_u64().unwrap(), total - 1);
    let _ = id;
}

#[test]
fn cases_outside_the_declared_scopes_are_not_applicable() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("corpus");
    copy_dir(&corpus(), &copy);
    let path = copy.join("manifest.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let first = m["cases"][0]["id"].as_str().unwrap().to_owned();
    m["cases"][0]["scope"] = Value::from("specs/not-implemented.json");
    std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
    let (code, json) = elench(
        dir.path(),
        &["conformance", "run", &copy.display().to_string()],
    );
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["data"]["result"]["not_applicable"], 1);
    assert_eq!(
        json["data"]["not_applicable_cases"],
        serde_json::json!([first])
    );
}

/// `cargo test` builds the examples; the generator must reproduce the shipped corpus byte for
/// byte (fixed seeds, fixed timestamps, deterministic Ed25519), so the corpus is what its
/// source says it is.
#[test]
fn the_corpus_is_reproducible() {
    let exe = std::env::current_exe().unwrap();
    let generator = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("examples/make_conformance_corpus"))
        .unwrap();
    if !generator.exists() {
        eprintln!("skipped: {} is not built", generator.display());
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("corpus");
    let status = std::process::Command::new(&generator)
        .arg(&target)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let mut shipped = Vec::new();
    list_files(&corpus(), &corpus(), &mut shipped);
    let mut made = Vec::new();
    list_files(&target, &target, &mut made);
    assert_eq!(shipped, made, "the same files");
    for rel in &shipped {
        let a = std::fs::read(corpus().join(rel)).unwrap();
        let b = std::fs::read(target.join(rel)).unwrap();
        assert!(
            a == b,
            "{} differs from what the generator makes",
            rel.display()
        );
    }
}

fn list_files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        if e.file_type().unwrap().is_dir() {
            list_files(root, &e.path(), out);
        } else {
            out.push(e.path().strip_prefix(root).unwrap().to_path_buf());
        }
    }
}

/// With `--at DIR`, an attested verdict observes DIR's tree and states the claim's inputs
/// there: it applies wherever the files its predicate reads are the same, and nowhere else.
#[test]
fn an_attested_verdict_at_a_tree_applies_where_the_claims_inputs_are_the_same() {
    let s = KeyedStore::new();
    let work = s.dir().join("w");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("spec.md"), "level 1\n").unwrap();
    std::fs::write(work.join("other.txt"), "x\n").unwrap();
    let at = work.display().to_string();
    let key = s.keys.agent.private.display().to_string();
    let (code, json) = s.run(&[
        "claim",
        "the spec is met",
        "--predicate",
        r#"grep("level", "spec.md") == 1"#,
        "--at",
        &at,
        "--key",
        &key,
    ]);
    assert_eq!(code, 0, "{json}");
    let claim = json["data"]["claims"][0]["id"].as_str().unwrap().to_owned();
    let (code, json) = attest(&s, "result-level1-pass.json", &claim, &["--at", &at]);
    assert_eq!(code, 0, "{json}");
    let record = json["data"]["id"].as_str().unwrap().to_owned();
    let (_, shown) = s.run(&["show", &record]);
    let uri = format!("elench:inputs:{claim}");
    assert!(
        shown["data"]["claim"]["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["uri"].as_str() == Some(uri.as_str())),
        "{shown}"
    );
    let here = |s: &KeyedStore| {
        let (code, json) = s.run(&["status", &claim, "--at", &at]);
        assert_eq!(code, 0, "{json}");
        json["data"]["claims"][0]["status"].clone()
    };
    std::fs::write(work.join("other.txt"), "y\n").unwrap();
    assert_eq!(here(&s), "verified");
    std::fs::write(work.join("spec.md"), "level 1\nlevel 2\n").unwrap();
    assert_eq!(here(&s), "unevaluated");
    // --tree and --at that disagree are refused.
    let (code, json) = attest(
        &s,
        "result-level1-pass.json",
        &claim,
        &["--at", &at, "--tree", &"0".repeat(64)],
    );
    assert_eq!(code, 2, "{json}");
}
