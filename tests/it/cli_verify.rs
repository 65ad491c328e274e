//! Issue 2's acceptance, through the real binary: every rejection of `elench verify` with its
//! own error code, exit 2 and (where a field is to blame) the JSON pointer of that field; the
//! sign/verify round trip; and the CLI frame (help, version, usage errors).
//!
//! Envelopes that `elench sign` refuses to make (role violations, forged ids, broken claims)
//! are signed with the library (`sign_envelope` over `statement_bytes`), so the verifier, not
//! the signer, is what refuses them.

use crate::common;

use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use base64::Engine;
use common::{
    assert_rejected, elench, make_key, make_keys, run_raw, sign_claim_raw, sign_cli,
    sign_payload_raw, some_id, trust_args, verify, with_computed_id, ClaimBuilder, KeyPair, TREE,
};
use elench::envelope::{sign_envelope, statement::statement_bytes, PAYLOAD_TYPE};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Verifies `claim` (taken as is, id and all) signed by `key` with the library, trusting all
/// three keys, and checks the rejection `code` at `pointer`. Returns the `error` object.
fn rejects_claim(
    dir: &Path,
    keys: &common::Keys,
    claim: &Value,
    key: &KeyPair,
    code: &str,
    pointer: &str,
) -> Value {
    let env = sign_claim_raw(dir, claim, TREE, key);
    let result = verify_all(dir, &env, keys);
    let error = assert_rejected(&result, code);
    assert_eq!(error["pointer"], json!(pointer), "{error}");
    error
}

fn verify_all(dir: &Path, envelope: &Path, keys: &common::Keys) -> (i32, Value) {
    verify(dir, envelope, &[&keys.harness, &keys.agent, &keys.human])
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn write_json(dir: &Path, name: &str, value: &Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, value.to_string()).unwrap();
    path
}

/// A valid agent claim, signed through `elench sign` by the agent key.
fn signed_agent_claim(dir: &Path, keys: &common::Keys) -> (PathBuf, String) {
    sign_cli(
        dir,
        &ClaimBuilder::assertion("parse rejects empty input").build(),
        &keys.agent,
    )
}

// ---------------------------------------------------------------------------------------------
// Signatures and keys

#[test]
fn tampered_payload_is_bad_signature() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    let (env_path, _) = signed_agent_claim(dir, &keys);
    let mut env = read_json(&env_path);
    let payload = STANDARD.decode(env["payload"].as_str().unwrap()).unwrap();
    let text = String::from_utf8(payload).unwrap();
    let tampered = text.replace("parse rejects empty input", "parse accepts empty input");
    assert_ne!(tampered, text);
    env["payload"] = json!(STANDARD.encode(tampered));
    let path = write_json(dir, "tampered-payload.dsse", &env);
    let error = assert_rejected(&verify_all(dir, &path, &keys), "BAD_SIGNATURE");
    assert_eq!(error["pointer"], json!("/signatures"));
}

#[test]
fn tampered_payload_type_is_bad_signature() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    let (env_path, _) = signed_agent_claim(dir, &keys);
    let mut env = read_json(&env_path);
    env["payloadType"] = json!("application/vnd.in-toto+json; charset=latin1");
    let path = write_json(dir, "tampered-type.dsse", &env);
    let error = assert_rejected(&verify_all(dir, &path, &keys), "BAD_SIGNATURE");
    assert_eq!(error["pointer"], json!("/signatures"));
}

/// A keyid is only a hint. A trusted key's signature under a keyid in another tool's form
/// verifies; once the payload is altered, no trusted key verifies it, and the refusal says
/// exactly that (altered, or an unknown key) without naming the hint as the signer, from
/// `verify` and from `add` alike.
#[test]
fn a_tampered_envelope_under_a_foreign_keyid_is_no_trusted_key_verifies() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    let (env_path, _) = signed_agent_claim(dir, &keys);
    let mut env = read_json(&env_path);
    env["signatures"][0]["keyid"] = json!("ci-signer-2024");
    let hinted = write_json(dir, "foreign-hint.dsse", &env);
    let (code, out) = verify_all(dir, &hinted, &keys);
    assert_eq!(code, 0, "a hint does not decide trust: {out}");
    let payload = STANDARD.decode(env["payload"].as_str().unwrap()).unwrap();
    let text = String::from_utf8(payload).unwrap();
    env["payload"] = json!(STANDARD.encode(text.replace("rejects", "accepts")));
    let path = write_json(dir, "foreign-hint-tampered.dsse", &env);
    let store = dir.join("store");
    common::init_store_trusting(dir, &store, &keys.trusted_pairs());
    for result in [
        verify_all(dir, &path, &keys),
        elench(
            dir,
            &common::with_store(&store, &["add", path.to_str().unwrap()]),
        ),
    ] {
        let error = assert_rejected(&result, "BAD_SIGNATURE");
        assert_eq!(error["pointer"], json!("/signatures"), "{error}");
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains("no trusted key verifies the signature")
                && message.contains("altered")
                && message.contains("does not trust"),
            "{message}"
        );
        assert!(!message.contains("ci-signer-2024"), "{message}");
    }
}

#[test]
fn signature_by_an_untrusted_key_is_untrusted_signer() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    let stranger = make_key(dir, "agent", "stranger");
    let (env_path, _) = sign_cli(
        dir,
        &ClaimBuilder::assertion("from a stranger").build(),
        &stranger,
    );
    let error = assert_rejected(&verify_all(dir, &env_path, &keys), "UNTRUSTED_SIGNER");
    assert_eq!(error["pointer"], json!("/signatures"));
    // The same envelope verifies once its key is trusted.
    let (code, out) = verify(dir, &env_path, &[&stranger]);
    assert_eq!(code, 0, "{out}");
}

/// SPKI PEM of a small-order Ed25519 public key: the identity point (y = 1).
fn weak_public_key_pem() -> String {
    let mut der = hex::decode("302a300506032b6570032100").unwrap();
    let mut point = [0u8; 32];
    point[0] = 1;
    der.extend_from_slice(&point);
    format!(
        "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
        STANDARD.encode(der)
    )
}

#[test]
fn weak_trusted_key_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    let (env_path, _) = signed_agent_claim(dir, &keys);
    std::fs::write(dir.join("weak.pub"), weak_public_key_pem()).unwrap();
    let result = elench(
        dir,
        &[
            "verify",
            env_path.to_str().unwrap(),
            "--trust",
            "agent:x:weak.pub",
        ],
    );
    let error = assert_rejected(&result, "WEAK_KEY");
    assert_eq!(error["source"], json!("weak.pub"), "{error}");
    // Refused even beside a good key: a weak key is never taken into the trust set.
    let mut args = vec!["verify".to_owned(), env_path.display().to_string()];
    args.extend(trust_args(&[&keys.agent]));
    args.extend(["--trust".to_owned(), "agent:x:weak.pub".to_owned()]);
    assert_rejected(&elench(dir, &args), "WEAK_KEY");
}

// ---------------------------------------------------------------------------------------------
// Who may say what (docs/claims.md)

#[test]
fn role_violation_agent_key_with_harness_observed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    let claim = ClaimBuilder::assertion("the suite passed")
        .origin("harness-observed")
        .build_with_id();
    rejects_claim(
        dir,
        &keys,
        &claim,
        &keys.agent,
        "ROLE_VIOLATION",
        "/predicate/origin/kind",
    );
}

#[test]
fn role_violation_agent_signed_verification() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    // Agent-asserted, so the origin is fine for an agent key: the kind is what is refused.
    let claim = ClaimBuilder::record("verification", &[&some_id(1)])
        .origin("agent-asserted")
        .build_with_id();
    let error = rejects_claim(
        dir,
        &keys,
        &claim,
        &keys.agent,
        "ROLE_VIOLATION",
        "/predicate/kind",
    );
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("signed by an agent key") && !message.contains("a agent"),
        "{message}"
    );
    // A harness-observed verification by an agent key is refused too (on its origin).
    let claim = ClaimBuilder::record("verification", &[&some_id(1)]).build_with_id();
    rejects_claim(
        dir,
        &keys,
        &claim,
        &keys.agent,
        "ROLE_VIOLATION",
        "/predicate/origin/kind",
    );
}

#[test]
fn role_violation_harness_signed_residue_acceptance() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    // A harness may relay agent-asserted claims, so only the kind is at fault here.
    let claim = ClaimBuilder::record("residue-acceptance", &[&some_id(2)])
        .origin("agent-asserted")
        .build_with_id();
    let error = rejects_claim(
        dir,
        &keys,
        &claim,
        &keys.harness,
        "ROLE_VIOLATION",
        "/predicate/kind",
    );
    assert!(
        error["message"].as_str().unwrap().contains("human"),
        "{error}"
    );
}

#[test]
fn role_violation_human_asserted_by_agent_key() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    let claim = ClaimBuilder::assertion("I reviewed this")
        .origin("human-asserted")
        .build_with_id();
    rejects_claim(
        dir,
        &keys,
        &claim,
        &keys.agent,
        "ROLE_VIOLATION",
        "/predicate/origin/kind",
    );
    // The same claim signed by the human key is accepted.
    let env = sign_claim_raw(dir, &claim, TREE, &keys.human);
    let (code, out) = verify_all(dir, &env, &keys);
    assert_eq!(code, 0, "{out}");
}

// ---------------------------------------------------------------------------------------------
// Id and subject

#[test]
fn id_mismatch() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    let mut claim = ClaimBuilder::assertion("original").build_with_id();
    claim["assertion"]["text"] = json!("edited after the id was computed");
    rejects_claim(
        dir,
        &keys,
        &claim,
        &keys.agent,
        "ID_MISMATCH",
        "/predicate/id",
    );
}

#[test]
fn subject_mismatch() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    let claim = ClaimBuilder::assertion("anchored elsewhere").build_with_id();
    let other_tree = "0".repeat(64);
    let env = sign_claim_raw(dir, &claim, &other_tree, &keys.agent);
    let error = assert_rejected(&verify_all(dir, &env, &keys), "SUBJECT_MISMATCH");
    assert_eq!(error["pointer"], json!("/subject"));
}

// ---------------------------------------------------------------------------------------------
// Schema violations, each with the pointer of the offending field

fn schema_violation(claim: Value, pointer: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    let signer = match claim["origin"]["kind"].as_str() {
        Some("harness-observed") => keys.harness.clone(),
        Some("human-asserted") => keys.human.clone(),
        _ => keys.agent.clone(),
    };
    let error = rejects_claim(dir, &keys, &claim, &signer, "SCHEMA_VIOLATION", pointer);
    let violations = error["violations"]
        .as_array()
        .unwrap_or_else(|| panic!("a schema violation lists its violations: {error}"));
    assert!(
        violations.iter().any(|v| v["pointer"] == json!(pointer)),
        "{error}"
    );
}

#[test]
fn schema_violation_missing_anchor() {
    let claim = ClaimBuilder::assertion("no anchor")
        .remove("anchor")
        .build_with_id();
    schema_violation(claim, "/predicate/anchor");
}

#[test]
fn schema_violation_bad_id_pattern() {
    let claim = ClaimBuilder::assertion("bad id")
        .set("id", json!("cl_NOT-HEX"))
        .build();
    schema_violation(claim, "/predicate/id");
}

#[test]
fn schema_violation_target_on_an_assertion() {
    let claim = ClaimBuilder::assertion("assertions act on nothing")
        .set("target", json!([some_id(3)]))
        .build_with_id();
    schema_violation(claim, "/predicate/target");
}

#[test]
fn schema_violation_falsification_without_target() {
    let claim = ClaimBuilder::record("falsification", &[])
        .remove("target")
        .build_with_id();
    schema_violation(claim, "/predicate/target");
}

#[test]
fn schema_violation_residue_acceptance_with_empty_target() {
    let claim = ClaimBuilder::record("residue-acceptance", &[]).build_with_id();
    assert_eq!(claim["target"], json!([]));
    schema_violation(claim, "/predicate/target");
}

#[test]
fn schema_violation_text_over_2000_chars() {
    let claim = ClaimBuilder::assertion(&"é".repeat(2001)).build_with_id();
    schema_violation(claim, "/predicate/assertion/text");
}

#[test]
fn schema_violation_unknown_top_level_field() {
    let claim = ClaimBuilder::assertion("extra member")
        .set("status", json!("verified"))
        .build_with_id();
    schema_violation(claim, "/predicate/status");
}

#[test]
fn text_of_exactly_2000_chars_is_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    let claim = ClaimBuilder::assertion(&"é".repeat(2000)).build_with_id();
    let env = sign_claim_raw(dir, &claim, TREE, &keys.agent);
    let (code, out) = verify_all(dir, &env, &keys);
    assert_eq!(code, 0, "{out}");
}

// ---------------------------------------------------------------------------------------------
// Predicates (docs/claims.md)

#[test]
fn predicate_without_expression() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    let mut claim = ClaimBuilder::assertion("a costume").build();
    claim["assertion"]["form"] = json!("predicate");
    let claim = with_computed_id(&claim);
    rejects_claim(
        dir,
        &keys,
        &claim,
        &keys.agent,
        "PREDICATE_WITHOUT_EXPRESSION",
        "/predicate/assertion/expression",
    );
}

#[test]
fn unparsable_predicate_gives_a_position() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    // The error is at the stray `)`, byte offset 18.
    let source = r#"exists("src/a.rs"))"#;
    let claim = ClaimBuilder::assertion("does not parse")
        .predicate("elench-predicate-v1", source)
        .build_with_id();
    let error = rejects_claim(
        dir,
        &keys,
        &claim,
        &keys.agent,
        "PREDICATE_PARSE_ERROR",
        "/predicate/assertion/expression/source",
    );
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("offset 18") || message.contains("column 19"),
        "the message gives the position: {message}"
    );
}

#[test]
fn unknown_predicate_language() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    let claim = ClaimBuilder::assertion("cel is not spoken here")
        .predicate("cel", "size(x) > 0")
        .build_with_id();
    rejects_claim(
        dir,
        &keys,
        &claim,
        &keys.agent,
        "UNKNOWN_PREDICATE_LANGUAGE",
        "/predicate/assertion/expression/language",
    );
}

#[test]
fn valid_predicate_is_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    let claim = ClaimBuilder::assertion("the parser has a test")
        .predicate(
            "elench-predicate-v1",
            r#"grep(/fn parse/, "src") > 0 && test("parse_empty").passed"#,
        )
        .build();
    let (env, id) = sign_cli(dir, &claim, &keys.agent);
    let (code, out) = verify_all(dir, &env, &keys);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["data"]["id"], json!(id));
}

// ---------------------------------------------------------------------------------------------
// Payload and envelope bytes

#[test]
fn duplicate_json_keys_in_the_payload() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    let claim = ClaimBuilder::assertion("twice").build_with_id();
    let text = String::from_utf8(statement_bytes(claim.as_object().unwrap(), TREE)).unwrap();
    // A second `timestamp` inside the predicate: readers that keep the first and readers
    // that keep the last would see different claims.
    let needle = "\"timestamp\":1700000000";
    assert!(text.contains(needle), "{text}");
    let doubled = text.replacen(needle, &format!("{needle},\"timestamp\":1"), 1);
    let env = sign_payload_raw(dir, PAYLOAD_TYPE, doubled.as_bytes(), &keys.agent);
    let error = assert_rejected(&verify_all(dir, &env, &keys), "DUPLICATE_KEY");
    let pointer = error["pointer"].as_str().unwrap_or_default();
    assert!(
        pointer.starts_with("/predicate"),
        "the pointer names the predicate: {error}"
    );
    assert!(
        error["message"].as_str().unwrap().contains("timestamp"),
        "the message names the key: {error}"
    );
}

#[test]
fn duplicate_json_keys_in_the_envelope() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    let (env_path, _) = signed_agent_claim(dir, &keys);
    let text = std::fs::read_to_string(&env_path).unwrap();
    let doubled = text.replacen(
        "\"payloadType\":",
        "\"payloadType\":\"text/plain\",\"payloadType\":",
        1,
    );
    assert_ne!(doubled, text);
    let path = dir.join("dup-envelope.dsse");
    std::fs::write(&path, doubled).unwrap();
    assert_rejected(&verify_all(dir, &path, &keys), "DUPLICATE_KEY");
}

#[test]
fn non_json_payload() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    let env = sign_payload_raw(dir, PAYLOAD_TYPE, b"this is not JSON {", &keys.agent);
    assert_rejected(&verify_all(dir, &env, &keys), "BAD_STATEMENT");
}

#[test]
fn envelope_over_one_mib_is_too_large() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    let (env_path, _) = signed_agent_claim(dir, &keys);
    // A valid envelope padded with whitespace past 1 MiB.
    let mut bytes = std::fs::read(&env_path).unwrap();
    bytes.resize(1024 * 1024 + 1, b' ');
    let path = dir.join("big.dsse");
    std::fs::write(&path, &bytes).unwrap();
    assert_rejected(&verify_all(dir, &path, &keys), "TOO_LARGE");
    // Exactly 1 MiB is within the limit.
    bytes.truncate(1024 * 1024);
    std::fs::write(&path, &bytes).unwrap();
    let (code, out) = verify_all(dir, &path, &keys);
    assert_eq!(code, 0, "{out}");
}

// ---------------------------------------------------------------------------------------------
// Round trips

#[test]
fn sign_then_verify_gives_the_same_id() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    let premise = some_id(7);
    let claim = ClaimBuilder::assertion("blast radius follows dependsOn")
        .depends_on(&[&premise])
        .build();
    let (env, id) = sign_cli(dir, &claim, &keys.agent);
    assert_eq!(id, with_computed_id(&claim)["id"].as_str().unwrap());
    let (code, out) = verify_all(dir, &env, &keys);
    assert_eq!(code, 0, "{out}");
    let data = &out["data"];
    assert_eq!(data["id"], json!(id));
    assert_eq!(data["kind"], json!("assertion"));
    assert_eq!(data["origin"], json!("agent-asserted"));
    assert_eq!(data["producer"], json!("model-x"));
    assert_eq!(data["signers"], json!([keys.agent.keyid]));
    assert_eq!(out["error"], Value::Null);

    // Records of each kind, each by a key allowed to sign it.
    for (kind, key) in [
        ("falsification", &keys.agent),
        ("supersession", &keys.agent),
        ("verification", &keys.harness),
        ("residue-acceptance", &keys.human),
    ] {
        let record = ClaimBuilder::record(kind, &[&id]).build();
        let (env, record_id) = sign_cli(dir, &record, key);
        let (code, out) = verify_all(dir, &env, &keys);
        assert_eq!(code, 0, "{kind}: {out}");
        assert_eq!(out["data"]["id"], json!(record_id), "{kind}");
        assert_eq!(out["data"]["kind"], json!(kind));
        assert_eq!(out["data"]["signers"], json!([key.keyid]));
    }
}

#[test]
fn sign_with_a_stale_id_replaces_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    let fresh = ClaimBuilder::assertion("stale id").build();
    let stale = ClaimBuilder::assertion("stale id")
        .set("id", json!(some_id(9)))
        .build();
    let (_, id1) = sign_cli(dir, &fresh, &keys.agent);
    let (env, id2) = sign_cli(dir, &stale, &keys.agent);
    assert_eq!(id1, id2);
    assert_ne!(id2, some_id(9));
    let (code, out) = verify_all(dir, &env, &keys);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn reserialized_claim_gets_the_same_id() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    let compact = r#"{"kind":"assertion","assertion":{"form":"annotation","text":"caf\u00e9 au lait"},"origin":{"kind":"agent-asserted","producer":{"id":"model-x","sessionId":"s1"}},"anchor":{"tree":"TREE","strategy":"multi","range":[3,9]},"timestamp":1700000000,"dependsOn":[]}"#
        .replace("TREE", TREE);
    // The same claim, members in another order at every level, other whitespace, and the
    // non-ASCII character written raw instead of escaped.
    let shuffled = "\n{\r\n  \"timestamp\" : 1700000000,\n\t\"dependsOn\" : [ ],\n  \"anchor\": { \"range\" : [ 3 , 9 ], \"strategy\":\"multi\", \"tree\" : \"TREE\" },\n  \"origin\":{\"producer\":{\"sessionId\":\"s1\",   \"id\":\"model-x\"},\"kind\":\"agent-asserted\"},\n  \"assertion\" : {\"text\":\"café au lait\" , \"form\" : \"annotation\"},\n  \"kind\":\"assertion\"\n}\n\n"
        .replace("TREE", TREE);
    let a = dir.join("compact.json");
    let b = dir.join("shuffled.json");
    std::fs::write(&a, compact).unwrap();
    std::fs::write(&b, shuffled).unwrap();
    let (env_a, id_a) = common::sign_file_cli(dir, &a, &keys.agent);
    let (env_b, id_b) = common::sign_file_cli(dir, &b, &keys.agent);
    assert_eq!(id_a, id_b);
    for env in [env_a, env_b] {
        let (code, out) = verify_all(dir, &env, &keys);
        assert_eq!(code, 0, "{out}");
        assert_eq!(out["data"]["id"], json!(id_a));
    }
    // Any change of content changes the id.
    let edited = dir.join("edited.json");
    std::fs::write(
        &edited,
        std::fs::read_to_string(&b)
            .unwrap()
            .replace("1700000000", "1700000001"),
    )
    .unwrap();
    let (_, id_c) = common::sign_file_cli(dir, &edited, &keys.agent);
    assert_ne!(id_c, id_a);
}

#[test]
fn sign_refuses_a_claim_the_key_may_not_sign() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    let claim = ClaimBuilder::assertion("the suite passed")
        .origin("harness-observed")
        .build();
    std::fs::write(dir.join("claim.json"), claim.to_string()).unwrap();
    let out = dir.join("claim.dsse");
    let result = elench(
        dir,
        &[
            "sign",
            "claim.json",
            "--key",
            keys.agent.private.to_str().unwrap(),
            "--role",
            "agent",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    let error = assert_rejected(&result, "ROLE_VIOLATION");
    assert_eq!(error["pointer"], json!("/origin/kind"), "{error}");
    assert!(!out.exists(), "nothing is written");
    let leftovers: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("dsse"))
        .collect();
    assert!(leftovers.is_empty(), "no envelope files: {leftovers:?}");

    // The role also comes from a --trust entry for the signing key.
    let mut args = vec![
        "sign".to_owned(),
        "claim.json".to_owned(),
        "--key".to_owned(),
        keys.agent.private.display().to_string(),
        "-o".to_owned(),
        out.display().to_string(),
    ];
    args.extend(trust_args(&[&keys.agent]));
    assert_rejected(&elench(dir, &args), "ROLE_VIOLATION");
    assert!(!out.exists(), "nothing is written");
}

#[test]
fn url_safe_base64_envelope_is_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    let sk = keys.agent.signing_key();
    // Find a claim whose payload and signature both encode differently in the two alphabets,
    // so that the URL-safe envelope really uses `-` or `_`.
    for n in 0..500 {
        let claim = ClaimBuilder::assertion(&format!("url-safe ??>> {n}")).build();
        let (checked, obj) = elench::claim::with_id(&claim).unwrap();
        let payload = statement_bytes(&obj, &checked.anchor_tree);
        let text = sign_envelope(PAYLOAD_TYPE, &payload, &sk, &keys.agent.keyid);
        let mut env: Value = serde_json::from_str(&text).unwrap();
        let sig = STANDARD
            .decode(env["signatures"][0]["sig"].as_str().unwrap())
            .unwrap();
        let (p_std, p_url) = (STANDARD.encode(&payload), URL_SAFE.encode(&payload));
        let (s_std, s_url) = (STANDARD.encode(&sig), URL_SAFE.encode(&sig));
        if p_std == p_url || s_std == s_url {
            continue;
        }
        env["payload"] = json!(p_url);
        env["signatures"][0]["sig"] = json!(s_url);
        let path = write_json(dir, "url-safe.dsse", &env);
        let (code, out) = verify_all(dir, &path, &keys);
        assert_eq!(code, 0, "{out}");
        assert_eq!(out["data"]["id"], json!(checked.id));
        return;
    }
    panic!("no claim gave a payload and signature that differ in URL-safe base64");
}

#[test]
fn unknown_envelope_fields_are_ignored() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);
    let (env_path, id) = signed_agent_claim(dir, &keys);
    let mut env = read_json(&env_path);
    env["x-note"] = json!("not signed, not read");
    env["signatures"][0]["x-extra"] = json!(1);
    let path = write_json(dir, "extra.dsse", &env);
    let (code, out) = verify_all(dir, &path, &keys);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["data"]["id"], json!(id));
}

// ---------------------------------------------------------------------------------------------
// The CLI frame

#[test]
fn help_exits_0_with_empty_stdout_when_piped() {
    let tmp = tempfile::tempdir().unwrap();
    for args in [
        &["--help"][..],
        &["verify", "--help"][..],
        &["sign", "--help"][..],
        &["keys", "generate", "--help"][..],
    ] {
        let run = run_raw(tmp.path(), args);
        assert_eq!(run.code, 0, "{args:?}");
        assert_eq!(run.stdout, "", "{args:?}: stdout stays empty");
        assert!(run.stderr.contains("Usage"), "{args:?}: help on stderr");
    }
}

#[test]
fn version_prints_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let run = run_raw(tmp.path(), &["--version"]);
    assert_eq!(run.code, 0);
    assert!(run.stdout.ends_with('\n'), "{:?}", run.stdout);
    assert_eq!(run.stdout.lines().count(), 1, "{:?}", run.stdout);
    assert!(
        run.stdout.contains(env!("CARGO_PKG_VERSION")),
        "{:?}",
        run.stdout
    );
}

#[test]
fn usage_error_is_a_json_error_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for args in [
        &["verify"][..],
        &["frobnicate"][..],
        &["verify", "x.dsse", "--no-such-flag"][..],
    ] {
        let result = elench(dir, args);
        let error = assert_rejected(&result, "BAD_ARGUMENTS");
        assert!(
            error["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{args:?}"
        );
    }
    // A malformed --trust is a usage error too.
    let result = elench(dir, &["verify", "x.dsse", "--trust", "agent-only"]);
    assert_rejected(&result, "BAD_ARGUMENTS");
}

/// JSON Schema 2020-12 counts `1700000000.0` as an integer, so such a claim passes the schema
/// (and JCS writes it as `1700000000`, so its id is the integer claim's id). The typed view
/// must then carry the same timestamp.
#[test]
fn integral_float_timestamp_keeps_its_value() {
    let claim = ClaimBuilder::assertion("float timestamp").build();
    let text = claim.to_string().replace("1700000000", "1700000000.0");
    let value = elench::json::parse_strict(text.as_bytes()).unwrap();
    let (checked, _) = elench::claim::with_id(&value).expect("schema-valid");
    assert_eq!(checked.id, with_computed_id(&claim)["id"].as_str().unwrap());
    assert_eq!(checked.timestamp, 1_700_000_000);
}
