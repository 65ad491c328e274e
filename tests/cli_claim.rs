//! `elench claim` (one call from intent to a signed, appended claim) and the canonical
//! payload `sign` and `claim` write, through the real binary.
//!
//! - `sign` writes the Statement in RFC 8785 form: one claim and one key give one envelope,
//!   however the claim's JSON was written.
//! - The five claims of a small chain of reasoning (a predicate assertion, one built on it, a
//!   falsification, a verification, a residue acceptance) made with `elench claim` (one call
//!   each, and one `--batch`) fold to exactly what the file flow (JSON, `sign`, `add`) gives.
//! - `claim --timestamp T` makes the same id and envelope bytes as `sign` + `add`.
//! - Refusals (unknown or ambiguous prefix, a predicate that does not parse, a role the key
//!   does not have, a bad batch line) append nothing: the store's export is unchanged.

mod common;

use common::{command, elench, export_bundle, fresh_name, with_store, KeyPair, KeyedStore};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn p(path: &Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

/// `elench sign CLAIM --key KEY -o -`: the envelope bytes written to stdout.
fn sign_to_stdout(dir: &Path, claim_text: &str, key: &KeyPair) -> Vec<u8> {
    let path = dir.join(fresh_name("claim", "json"));
    std::fs::write(&path, claim_text).unwrap();
    let out = command(dir)
        .args([
            "sign",
            p(&path),
            "--key",
            p(&key.private),
            "--role",
            &key.role,
            "-o",
            "-",
        ])
        .output()
        .expect("elench runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "sign failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The envelope's payload, decoded.
fn payload_of(envelope: &[u8]) -> Vec<u8> {
    use base64::Engine;
    let env: Value = serde_json::from_slice(envelope).expect("an envelope is JSON");
    base64::engine::general_purpose::STANDARD
        .decode(env["payload"].as_str().expect("a payload"))
        .expect("base64")
}

#[test]
fn sign_writes_one_envelope_whatever_the_member_order() {
    let s = KeyedStore::new();
    let tree = common::TREE;
    // The same claim twice: members in two orders, whitespace and all.
    let a = format!(
        r#"{{"kind":"assertion","assertion":{{"form":"annotation","text":"x"}},"origin":{{"kind":"agent-asserted","producer":{{"id":"m"}}}},"anchor":{{"tree":"{tree}","strategy":"multi"}},"timestamp":1700000000}}"#
    );
    let b = format!(
        "{{\n  \"timestamp\": 1700000000,\n  \"anchor\": {{\"strategy\": \"multi\", \"tree\": \"{tree}\"}},\n  \"origin\": {{\"producer\": {{\"id\": \"m\"}}, \"kind\": \"agent-asserted\"}},\n  \"assertion\": {{\"text\": \"x\", \"form\": \"annotation\"}},\n  \"kind\": \"assertion\"\n}}\n"
    );
    let ea = sign_to_stdout(s.dir(), &a, &s.keys.agent);
    let eb = sign_to_stdout(s.dir(), &b, &s.keys.agent);
    assert_eq!(
        String::from_utf8_lossy(&ea),
        String::from_utf8_lossy(&eb),
        "one claim, one key: one envelope"
    );
    // And the payload is the RFC 8785 form of the Statement.
    let payload = payload_of(&ea);
    let value: Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(
        payload,
        elench::jcs::canonical(&value).unwrap(),
        "the payload is canonical"
    );
}
