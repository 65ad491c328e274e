//! What people and agents meet at the command line, through the real binary: regular
//! expression bounds at ingest, envelope leniency for ignored fields, claim id prefixes,
//! hints in errors, key and add safety flags, `--id-only`, text output, `man` and
//! `completions`.

use crate::common;

use common::{claim_id, elench, envelope_text, run_raw, ClaimBuilder, KeyedStore, TREE};
use serde_json::json;

/// A predicate of `n` copies of a pattern that is slow to compile and quick to parse.
fn heavy_regex_predicate(n: usize) -> String {
    vec![r#"run("true").stdout.matches("(\\w{50}){4}")"#; n].join(" && ")
}

fn write(s: &KeyedStore, name: &str, text: &str) -> String {
    let p = s.dir().join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

// ---- 1. regular expressions: syntax only at ingest, bounded ----

#[test]
fn many_heavy_regexes_are_refused_by_count_before_any_work() {
    let s = KeyedStore::new();
    let claim = ClaimBuilder::assertion("heavy")
        .predicate("elench-predicate-v1", &heavy_regex_predicate(200))
        .build_with_id();
    let env = write(&s, "heavy.dsse", &envelope_text(&claim, &s.keys.agent));
    let (code, out) = s.run(&["verify", &env]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(out["error"]["code"], "PREDICATE_PARSE_ERROR", "{out}");
    let msg = out["error"]["message"].as_str().unwrap();
    assert!(msg.contains("at most 32"), "the limit is named: {msg}");
    // The store stays as it was and is free for the next writer.
    let (code, out) = s.run(&["add", &env]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(s.run(&["log"]).1["data"]["entries"], json!([]));
}

#[test]
fn heavy_regexes_within_the_bounds_are_accepted_without_compiling() {
    let s = KeyedStore::new();
    // 32 patterns that would each take a noticeable time to compile: ingest only parses
    // them, so verify, add and fsck all succeed (and quickly; the bench measures it).
    let claim = ClaimBuilder::assertion("heavy but bounded")
        .predicate("elench-predicate-v1", &heavy_regex_predicate(32))
        .build_with_id();
    let env = write(&s, "heavy.dsse", &envelope_text(&claim, &s.keys.agent));
    let (code, out) = s.run(&["verify", &env]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = s.run(&["add", &env]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["data"]["created"], 1);
    let (code, out) = s.run(&["fsck"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn an_overlong_or_invalid_regex_is_a_parse_error_with_its_position() {
    let s = KeyedStore::new();
    let long = format!(r#"grep(/{}/, "src") > 0"#, "a".repeat(1025));
    let invalid = r#"grep(/\p{NoSuchClass}/, "src") > 0"#;
    for (source, needle) in [(long.as_str(), "1024 bytes"), (invalid, "invalid regular")] {
        let claim = ClaimBuilder::assertion("x")
            .predicate("elench-predicate-v1", source)
            .build_with_id();
        let env = write(&s, "bad.dsse", &envelope_text(&claim, &s.keys.agent));
        let (code, out) = s.run(&["verify", &env]);
        assert_eq!(code, 2, "{out}");
        assert_eq!(out["error"]["code"], "PREDICATE_PARSE_ERROR", "{out}");
        assert!(
            out["error"]["message"].as_str().unwrap().contains(needle),
            "{out}"
        );
        assert!(
            out["error"]["message"]
                .as_str()
                .unwrap()
                .contains("column 6"),
            "{out}"
        );
    }
}

// ---- 2. blast: affected lists a record once; --depth truncates only when it cuts ----

/// Signs `claim` (with its id) by `key` and adds it; returns its id.
fn add_claim(s: &KeyedStore, claim: serde_json::Value, key: &common::KeyPair) -> String {
    let id = claim_id(&claim);
    let env = write(s, &format!("{id}.dsse"), &envelope_text(&claim, key));
    let (code, out) = s.run(&["add", &env]);
    assert_eq!(code, 0, "{out}");
    id
}

#[test]
fn blast_depth_is_not_truncated_when_nothing_is_left_out() {
    let s = KeyedStore::new();
    let r = add_claim(
        &s,
        ClaimBuilder::assertion("R").build_with_id(),
        &s.keys.agent,
    );
    let p = add_claim(
        &s,
        ClaimBuilder::assertion("P")
            .depends_on(&[&r])
            .build_with_id(),
        &s.keys.agent,
    );
    let q = add_claim(
        &s,
        ClaimBuilder::assertion("Q")
            .depends_on(&[&r, &p])
            .build_with_id(),
        &s.keys.agent,
    );
    let (code, out) = s.run(&["blast", &r, "--depth", "1"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["data"]["count"], 2, "{out}");
    assert_eq!(out["data"]["truncated"], false, "{out}");
    // A chain that does go on is truncated.
    let z = add_claim(
        &s,
        ClaimBuilder::assertion("Z")
            .depends_on(&[&q])
            .build_with_id(),
        &s.keys.agent,
    );
    let (_, out) = s.run(&["blast", &r, "--depth", "1"]);
    assert_eq!(out["data"]["truncated"], true, "{out}");
    let (_, out) = s.run(&["blast", &r]);
    assert_eq!(out["data"]["truncated"], false, "{out}");
    assert_eq!(
        out["data"]["layers"][2]["claims"][0]["id"],
        json!(z),
        "{out}"
    );
}

#[test]
fn blast_affected_names_a_record_once_when_it_repeats_a_target() {
    let s = KeyedStore::new();
    let x = add_claim(
        &s,
        ClaimBuilder::assertion("X").build_with_id(),
        &s.keys.agent,
    );
    let t = add_claim(
        &s,
        ClaimBuilder::assertion("T").build_with_id(),
        &s.keys.agent,
    );
    let v = ClaimBuilder::record("verification", &[&t, &t])
        .depends_on(&[&x])
        .build_with_id();
    let v = add_claim(&s, v, &s.keys.harness);
    let (code, out) = s.run(&["blast", &x]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out["data"]["affected"],
        json!([{"id": t, "status": "verified", "decided_by": [v]}]),
        "{out}"
    );
}

// ---- 3. ignored envelope fields are ignored; the subject names the tree as gitTree ----

#[test]
fn unknown_envelope_fields_with_huge_numbers_are_ignored() {
    let s = KeyedStore::new();
    let claim = ClaimBuilder::assertion("annotated envelope").build_with_id();
    let mut env: serde_json::Value =
        serde_json::from_str(&envelope_text(&claim, &s.keys.agent)).unwrap();
    env["x-note"] = json!(1e300);
    let text = env
        .to_string()
        .replace("}", r#","x-count":18446744073709551616123}"#);
    let path = write(&s, "noted.dsse", &text);
    let (code, out) = s.run(&["verify", &path]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["data"]["id"], json!(claim_id(&claim)));
    // Inside the claim the strict rule stays: it protects ids.
    let big = ClaimBuilder::assertion("big")
        .set("timestamp", json!(1))
        .build_with_id();
    let bad = envelope_text(&big, &s.keys.agent);
    let obj: serde_json::Value = serde_json::from_str(&bad).unwrap();
    let payload = elench::envelope::dsse::decode_base64(obj["payload"].as_str().unwrap()).unwrap();
    let payload = String::from_utf8(payload)
        .unwrap()
        .replace(r#""timestamp":1"#, r#""timestamp":9007199254740993"#);
    let path = common::sign_payload_raw(
        s.dir(),
        elench::envelope::PAYLOAD_TYPE,
        payload.as_bytes(),
        &s.keys.agent,
    );
    let (code, out) = s.run(&["verify", path.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(out["error"]["pointer"], "/predicate/timestamp", "{out}");
}

#[test]
fn the_subject_must_name_the_tree_as_git_tree() {
    let s = KeyedStore::new();
    let claim = ClaimBuilder::assertion("subject").build_with_id();
    let statement = json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "tree", "digest": {"sha256": TREE}}],
        "predicateType": "https://elench.dev/claim/v0.1",
        "predicate": claim,
    });
    let path = common::sign_payload_raw(
        s.dir(),
        elench::envelope::PAYLOAD_TYPE,
        statement.to_string().as_bytes(),
        &s.keys.agent,
    );
    let (code, out) = s.run(&["verify", path.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(out["error"]["code"], "SUBJECT_MISMATCH", "{out}");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("gitTree"),
        "{out}"
    );
}

// ---- 6. claim id prefixes ----

/// Two claims whose ids share their first `hex` digits (searched among deterministic claims).
fn claims_sharing_prefix(hex: usize) -> (serde_json::Value, serde_json::Value) {
    let mut seen: std::collections::HashMap<String, serde_json::Value> = Default::default();
    for i in 0.. {
        let c = ClaimBuilder::assertion(&format!("claim number {i}")).build_with_id();
        let prefix = claim_id(&c)[..3 + hex].to_owned();
        if let Some(other) = seen.remove(&prefix) {
            return (other, c);
        }
        seen.insert(prefix, c);
    }
    unreachable!()
}

#[test]
fn short_ids_work_wherever_a_claim_id_is_an_argument() {
    let s = KeyedStore::new();
    let (a, b) = claims_sharing_prefix(4);
    let a = add_claim(&s, a, &s.keys.agent);
    let b = add_claim(&s, b, &s.keys.agent);
    let dep = add_claim(
        &s,
        ClaimBuilder::assertion("dependent")
            .depends_on(&[&a])
            .build_with_id(),
        &s.keys.agent,
    );
    // A unique prefix: the shortest that tells a from b, and a longer one.
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let short_a = &a[..common + 1];
    for args in [
        vec!["status", short_a],
        vec!["show", short_a],
        vec!["blast", short_a],
        vec!["status", &a[..20]],
    ] {
        let (code, out) = s.run(&args);
        assert_eq!(code, 0, "{args:?}: {out}");
        let text = out["data"].to_string();
        assert!(text.contains(&a), "{args:?} resolved to the full id: {out}");
    }
    let (_, out) = s.run(&["blast", short_a]);
    assert_eq!(out["data"]["root"], json!(a));
    assert_eq!(out["data"]["layers"][1]["claims"][0]["id"], json!(dep));
    let (_, out) = s.run(&["status", short_a, &dep[..8]]);
    let ids: Vec<&str> = out["data"]["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![a.as_str(), dep.as_str()]);

    // Ambiguous: an error listing every candidate, nothing done.
    let shared = &a[..7];
    for cmd in ["status", "show", "blast"] {
        let (code, out) = s.run(&[cmd, shared]);
        assert_eq!(code, 2, "{cmd}: {out}");
        assert_eq!(out["error"]["code"], "AMBIGUOUS_ID", "{out}");
        let msg = out["error"]["message"].as_str().unwrap();
        assert!(msg.contains(&a) && msg.contains(&b), "{msg}");
    }
    // Unknown prefix: NOT_FOUND, with what to try next.
    let unknown = if a.starts_with("cl_ffff") {
        "cl_0000"
    } else {
        "cl_ffff"
    };
    let unknown = if b.starts_with(unknown) || dep.starts_with(unknown) {
        "cl_fffe"
    } else {
        unknown
    };
    let (code, out) = s.run(&["status", unknown]);
    assert_eq!(code, 5, "{out}");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("status --all"),
        "{out}"
    );
    // Too short, or not hex: a bad argument.
    for bad in ["cl_abc", "cl_ABCD", "abcd1234"] {
        let (code, out) = s.run(&["show", bad]);
        assert_eq!(code, 2, "{bad}: {out}");
        assert_eq!(out["error"]["code"], "BAD_ARGUMENTS", "{out}");
    }
}

#[test]
fn conformance_attest_takes_a_short_claim_id() {
    let s = KeyedStore::new();
    let target = add_claim(
        &s,
        ClaimBuilder::assertion("conforms").build_with_id(),
        &s.keys.agent,
    );
    let report = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/reports/declaration-all-pass.json");
    let (code, out) = s.run(&[
        "conformance",
        "attest",
        report.to_str().unwrap(),
        "--claim",
        &target[..10],
        "--key",
        s.keys.harness.private.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["data"]["target"], json!(target), "{out}");
}

// ---- 8. errors say what to do next ----

#[test]
fn adding_an_unsigned_claim_says_to_sign_it_and_with_which_key() {
    let s = KeyedStore::new();
    let claim = ClaimBuilder::record("verification", &[&common::some_id(1)])
        .build_with_id()
        .to_string();
    let path = write(&s, "verify.json", &claim);
    let (code, out) = s.run(&["add", &path]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(out["error"]["code"], "BAD_ENVELOPE", "{out}");
    let msg = out["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("elench sign") && msg.contains("harness key"),
        "{msg}"
    );
    // verify says the same.
    let (code, out) = s.run(&["verify", &path]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("elench sign"),
        "{out}"
    );

    let human = ClaimBuilder::assertion("h")
        .origin("human-asserted")
        .build()
        .to_string();
    let path = write(&s, "human.json", &human);
    let (_, out) = s.run(&["add", &path]);
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("human key"),
        "{out}"
    );
}

#[test]
fn adding_a_directory_skips_unsigned_claims_with_a_note() {
    let s = KeyedStore::new();
    let dir = s.dir().join("claims");
    std::fs::create_dir(&dir).unwrap();
    let signed = ClaimBuilder::assertion("signed").build_with_id();
    std::fs::write(dir.join("a.dsse"), envelope_text(&signed, &s.keys.agent)).unwrap();
    std::fs::write(
        dir.join("b.json"),
        ClaimBuilder::assertion("unsigned").build().to_string(),
    )
    .unwrap();
    let (code, out) = s.run(&["add", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["data"]["created"], 1, "{out}");
    assert_eq!(out["data"]["rejected"], 0, "{out}");
    assert_eq!(out["data"]["skipped"], 1, "{out}");
    let w = &out["warnings"][0];
    assert_eq!(w["code"], "SKIPPED_UNSIGNED_CLAIM", "{out}");
    assert!(w["message"].as_str().unwrap().contains("b.json"), "{out}");
    assert!(w["message"].as_str().unwrap().contains("agent"), "{out}");

    // Only unsigned claims: nothing to add, and the error says why.
    std::fs::remove_file(dir.join("a.dsse")).unwrap();
    let (code, out) = s.run(&["add", dir.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("elench sign"),
        "{out}"
    );
}

#[test]
fn role_violation_names_the_role_needed() {
    let s = KeyedStore::new();
    let v = ClaimBuilder::record("verification", &[&common::some_id(2)]).build_with_id();
    let path = write(&s, "v.dsse", &envelope_text(&v, &s.keys.agent));
    let (code, out) = s.run(&["add", &path]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(out["error"]["code"], "ROLE_VIOLATION", "{out}");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("harness key"),
        "{out}"
    );
}

#[test]
fn status_without_ids_shows_its_usage_and_bare_elench_shows_help() {
    let s = KeyedStore::new();
    let (code, out) = s.run(&["status"]);
    assert_eq!(code, 2, "{out}");
    let msg = out["error"]["message"].as_str().unwrap();
    assert!(msg.contains("--all") && msg.contains("<ID>"), "{msg}");

    let run = run_raw(s.dir(), &[] as &[&str]);
    assert_eq!(run.code, 0, "bare elench is help: {run:?}");
    assert!(
        run.stdout.is_empty(),
        "help goes to stderr off a terminal: {run:?}"
    );
    assert!(run.stderr.contains("Usage: elench") && run.stderr.contains("status"));
    let run = run_raw(s.dir(), &["status", "--help"]);
    assert!(run.stderr.contains("--all"), "{run:?}");
}

// ---- 9. keys generate --trust; keys retire asks, --yes, --dry-run; add --dry-run ----

#[test]
fn keys_generate_can_trust_the_new_key_in_the_same_step() {
    let s = KeyedStore::new();
    let out_path = s.dir().join("new.pem");
    let (code, out) = s.run(&[
        "keys",
        "generate",
        "--role",
        "human",
        "--name",
        "bob",
        "--out",
        out_path.to_str().unwrap(),
        "--trust",
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["data"]["trusted"], true);
    let keyid = out["data"]["keyid"].as_str().unwrap().to_owned();
    let (_, list) = s.run(&["keys", "list"]);
    let listed = list["data"]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["keyid"] == json!(keyid))
        .cloned();
    assert_eq!(
        listed,
        Some(json!({"keyid": keyid, "role": "human", "name": "bob", "retired": false}))
    );
    // Without a store, --trust fails and leaves no key file behind.
    let lone = tempfile::tempdir().unwrap();
    let path = lone.path().join("k.pem");
    let (code, out) = elench(
        lone.path(),
        &[
            "keys",
            "generate",
            "--role",
            "agent",
            "--name",
            "x",
            "--out",
            path.to_str().unwrap(),
            "--trust",
        ],
    );
    assert_eq!(code, 4, "{out}");
    assert!(!path.exists());
}

#[test]
fn keys_retire_refuses_without_yes_off_a_terminal_and_dry_run_changes_nothing() {
    let s = KeyedStore::new();
    let keyid = s.keys.agent.keyid.clone();
    let retired = |s: &KeyedStore| {
        let (_, list) = s.run(&["keys", "list"]);
        list["data"]["keys"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["keyid"] == json!(keyid))
            .map(|k| k["retired"].clone())
    };
    let (code, out) = s.run(&["keys", "retire", &keyid]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out["error"]["message"].as_str().unwrap().contains("--yes"),
        "{out}"
    );
    assert_eq!(retired(&s), Some(json!(false)));

    let (code, out) = s.run(&["keys", "retire", "--dry-run", &keyid]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["data"]["effect"], "would_update", "{out}");
    assert_eq!(retired(&s), Some(json!(false)));

    let (code, out) = s.run(&["keys", "retire", "--yes", &keyid]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(retired(&s), Some(json!(true)));
    // Unknown keys are not found, with or without --yes.
    let (code, _) = s.run(&["keys", "retire", &"cd".repeat(32)]);
    assert_eq!(code, 5);
}

#[test]
fn add_dry_run_verifies_without_storing() {
    let s = KeyedStore::new();
    let good = ClaimBuilder::assertion("good").build_with_id();
    let good = write(&s, "good.dsse", &envelope_text(&good, &s.keys.agent));
    let bad = ClaimBuilder::record("verification", &[&common::some_id(3)]).build_with_id();
    let bad = write(&s, "bad.dsse", &envelope_text(&bad, &s.keys.agent));
    let before = s.export();
    let (code, out) = s.run(&["add", "--dry-run", &good, &good, &bad]);
    assert_eq!(code, 3, "partial, as the real add would be: {out}");
    assert_eq!(out["data"]["dry_run"], true);
    assert_eq!(out["data"]["created"], 1, "{out}");
    assert_eq!(out["data"]["noop"], 1, "{out}");
    assert_eq!(out["data"]["rejected"], 1, "{out}");
    assert_eq!(out["error"]["code"], "PARTIAL_FAILURE", "{out}");
    assert_eq!(s.export(), before, "nothing stored");
    let (code, out) = s.run(&["add", &good]);
    assert_eq!(code, 0);
    assert_eq!(out["data"]["created"], 1, "{out}");
}

// ---- 10. --id-only for scripts ----

#[test]
fn sign_and_verify_print_only_the_id_with_id_only() {
    let s = KeyedStore::new();
    let claim = ClaimBuilder::assertion("scripted").build();
    let path = write(&s, "scripted.json", &claim.to_string());
    let key = s.keys.agent.private.to_str().unwrap();
    let run = run_raw(
        s.dir(),
        &common::with_store(&s.store, &["sign", &path, "--key", key, "--id-only"]),
    );
    assert_eq!(run.code, 0, "{run:?}");
    let id = run.stdout.trim_end_matches('\n');
    assert_eq!(run.stdout, format!("{id}\n"), "only the id and a newline");
    assert!(elench::claim::is_claim_id(id), "{id:?}");
    let dsse = s.dir().join("scripted.dsse");
    assert!(dsse.exists(), "the envelope is still written");
    let run = run_raw(
        s.dir(),
        &common::with_store(&s.store, &["verify", dsse.to_str().unwrap(), "--id-only"]),
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, format!("{id}\n"));

    // A failure prints nothing on stdout, the error on stderr, and keeps its exit code.
    let run = run_raw(
        s.dir(),
        &common::with_store(&s.store, &["verify", &path, "--id-only"]),
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("error[BAD_ENVELOPE]"), "{run:?}");
    // --format json asks for the report, --id-only for the bare id: one or the other.
    let (code, _) = elench(
        s.dir(),
        &common::with_store(
            &s.store,
            &["--format", "json", "verify", dsse.to_str().unwrap()],
        ),
    );
    assert_eq!(code, 0);
    let run = run_raw(
        s.dir(),
        &common::with_store(
            &s.store,
            &[
                "--format",
                "json",
                "verify",
                dsse.to_str().unwrap(),
                "--id-only",
            ],
        ),
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.stdout, "");
}

// ---- 7. text output: short id, status and the claim's text; colour only on a terminal ----

/// A store with a claim and a falsification of it, and the claim's id.
fn falsified_store() -> (KeyedStore, String) {
    let s = KeyedStore::new();
    let a = add_claim(
        &s,
        ClaimBuilder::assertion("parse rejects empty input").build_with_id(),
        &s.keys.agent,
    );
    let b = ClaimBuilder::assertion("load_config never panics")
        .depends_on(&[&a])
        .build_with_id();
    add_claim(&s, b, &s.keys.agent);
    let f = ClaimBuilder::record("falsification", &[&a])
        .text("parse(\"\") panics")
        .build_with_id();
    add_claim(&s, f, &s.keys.agent);
    (s, a)
}

#[test]
fn text_output_shows_short_ids_status_and_claim_text() {
    let (s, a) = falsified_store();
    let short = &a[..15];
    for (args, want) in [
        (
            vec!["status", &a],
            vec![short, "falsified", "parse rejects empty input"],
        ),
        (
            vec!["log"],
            vec![
                short,
                "falsified",
                "parse rejects empty input",
                "revoked",
                "load_config never panics",
            ],
        ),
        (
            vec!["blast", &a],
            vec![short, "revoked", "load_config never panics"],
        ),
        (
            vec!["show", &a],
            vec![
                short,
                "falsified",
                "parse rejects empty input",
                "parse(\"\") panics",
            ],
        ),
    ] {
        let mut full = vec!["--format", "text"];
        full.extend(args.iter().copied());
        let run = run_raw(s.dir(), &common::with_store(&s.store, &full));
        assert_eq!(run.code, 0, "{args:?}: {run:?}");
        for w in want {
            assert!(
                run.stdout.contains(w),
                "{args:?} shows {w:?}: {}",
                run.stdout
            );
        }
        // The status sits on the same line as the short id and the text.
        let line = run
            .stdout
            .lines()
            .find(|l| l.contains(short) && l.contains("parse rejects empty input"));
        assert!(line.is_some(), "{args:?}: {}", run.stdout);
        assert!(!run.stdout.contains('\u{1b}'), "no colour off a terminal");
    }
}

#[test]
fn colour_only_on_a_terminal_and_never_with_no_color() {
    let (s, a) = falsified_store();
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: `script` (util-linux) is not installed, no terminal to test on");
        return;
    }
    let bin = common::elench_path();
    let line = format!("{} --store {} status {a}", bin.display(), s.store.display());
    let on_tty = |no_color: bool| {
        let mut cmd = std::process::Command::new("script");
        cmd.args(["-qec", &line, "/dev/null"])
            .env_remove("CI")
            .env_remove("NO_COLOR")
            .env("TERM", "xterm");
        if no_color {
            cmd.env("NO_COLOR", "1");
        }
        let out = cmd.output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let coloured = on_tty(false);
    assert!(coloured.contains("falsified"), "{coloured:?}");
    assert!(
        coloured.contains('\u{1b}'),
        "colour on a terminal: {coloured:?}"
    );
    // NO_COLOR removes colour and changes nothing else: text stays text on a terminal.
    let plain = on_tty(true);
    assert!(!plain.contains('\u{1b}'), "{plain:?}");
    assert!(
        plain.contains("falsified") && !plain.trim_start().starts_with('{'),
        "text, not JSON: {plain:?}"
    );
    let line = format!("{line} --format text");
    let mut cmd = std::process::Command::new("script");
    cmd.args(["-qec", &line, "/dev/null"])
        .env("NO_COLOR", "1")
        .env("TERM", "xterm");
    let text = String::from_utf8_lossy(&cmd.output().unwrap().stdout).into_owned();
    assert!(
        text.contains("falsified") && !text.contains('\u{1b}'),
        "{text:?}"
    );
}

// ---- 5. man pages and shell completions from the clap definitions ----

#[test]
fn man_pages_and_completions_are_generated_from_the_definitions() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_raw(dir.path(), &["man"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains(".TH elench 1"), "roff on stdout");
    assert!(run.stdout.contains("blast"), "lists the commands");

    // The directory is made when it does not exist yet, parents included.
    let pages = dir.path().join("share/man/man1");
    let (code, out) = elench(dir.path(), &["man", "-o", pages.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(pages.is_dir());
    // A file in the way is an error that names it.
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let (code, out) = elench(dir.path(), &["man", "-o", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(out["error"]["code"], "IO_ERROR", "{out}");
    for name in [
        "elench.1",
        "elench-status.1",
        "elench-keys-retire.1",
        "elench-completions.1",
    ] {
        let text = std::fs::read_to_string(pages.join(name)).unwrap();
        assert!(
            text.starts_with(".ie") || text.contains(".TH"),
            "{name} is roff"
        );
    }
    let retire = std::fs::read_to_string(pages.join("elench-keys-retire.1")).unwrap();
    assert!(
        retire.contains("dry\\-run") && retire.contains("yes"),
        "{retire}"
    );

    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef elench"),
        ("fish", "complete -c elench"),
    ] {
        let run = run_raw(dir.path(), &["completions", shell]);
        assert_eq!(run.code, 0, "{shell}: {run:?}");
        assert!(
            run.stdout.contains(marker),
            "{shell}: {}",
            &run.stdout[..200.min(run.stdout.len())]
        );
        assert!(
            run.stdout.contains("blast") && run.stdout.contains("--store"),
            "{shell}"
        );
    }
    // The bash script is valid bash.
    let script = dir.path().join("elench.bash");
    let (code, _) = elench(
        dir.path(),
        &["completions", "bash", "-o", script.to_str().unwrap()],
    );
    assert_eq!(code, 0);
    if let Ok(out) = std::process::Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
    {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // --format json wants the report on stdout, where the product would go.
    let (code, out) = elench(dir.path(), &["--format", "json", "completions", "zsh"]);
    assert_eq!(code, 2, "{out}");
    let (code, _) = elench(dir.path(), &["completions", "tcsh"]);
    assert_eq!(code, 2);
}

#[test]
fn keys_retire_asks_on_a_terminal() {
    let s = KeyedStore::new();
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: `script` (util-linux) is not installed, no terminal to test on");
        return;
    }
    let bin = common::elench_path();
    let keyid = s.keys.human.keyid.clone();
    let line = format!(
        "{} --store {} keys retire {keyid}",
        bin.display(),
        s.store.display()
    );
    let answer = |text: &str| {
        let mut child = std::process::Command::new("script")
            .args(["-qec", &line, "/dev/null"])
            .env_remove("CI")
            .env_remove("NO_COLOR")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let retired = |s: &KeyedStore| {
        let (_, list) = s.run(&["keys", "list"]);
        list["data"]["keys"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["keyid"] == json!(keyid) && k["retired"] == json!(true))
    };
    let (code, screen) = answer("n\n");
    assert_eq!(code, Some(2), "{screen}");
    assert!(screen.contains("[y/N]"), "it asked: {screen}");
    assert!(!retired(&s));
    let (code, screen) = answer("y\n");
    assert_eq!(code, Some(0), "{screen}");
    assert!(retired(&s));
}

/// The lines of `elench --help`, as a person reads them off a pipe.
fn help_lines(dir: &std::path::Path) -> Vec<String> {
    let r = run_raw(dir, &["--help"]);
    assert_eq!(r.code, 0, "{r:?}");
    r.stderr.lines().map(str::to_owned).collect()
}

/// `--help` starts with the commands (the about line and the usage before them, no
/// paragraphs), fits a screen, and says only what is true.
#[test]
fn help_puts_the_commands_first_and_stays_short() {
    let tmp = tempfile::tempdir().unwrap();
    let lines = help_lines(tmp.path());
    let commands = lines
        .iter()
        .position(|l| l == "Commands:")
        .expect("a Commands: section");
    assert!(
        commands <= 4,
        "only the about line and the usage come before the commands: {lines:#?}"
    );
    assert!(lines.len() <= 55, "{} lines: {lines:#?}", lines.len());
    let text = lines.join("\n");
    // NO_COLOR only removes colour; it does not switch to JSON.
    assert!(!text.contains("NO_COLOR set"), "{text}");
    for exit in ["79", "130/143", "10 time limit"] {
        assert!(text.contains(exit), "{exit}: {text}");
    }
}
