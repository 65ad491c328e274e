//! Issue 3's scenarios, through the real binary: each builds its own store in a temporary
//! directory, adds signed envelopes with `elench add`, and asserts the exact effective
//! status (and own status where it matters) of every claim involved, with the reasons
//! `status` gives (decided_by, revoked_by, stale and missing premises, acceptance, history).
//!
//! Also: `add` batches (noop re-adds, partial batches, bundles with a bad line, stdin), key
//! retirement, forged cycles, pagination, and STORE_NOT_FOUND. Every command that rejects
//! input goes through [`rejecting`], which asserts that the store's `export` is
//! byte-identical before and after.
//!
//! Envelopes are signed with the library (`envelope_text`), so the binary under test, not
//! the signer, decides what is accepted.

use crate::common;

use common::{
    assert_rejected, claim_id, elench, elench_with_stdin, envelope_text, export_bundle, fresh_name,
    init_store_trusting, make_key, some_id, with_computed_id, with_store, ClaimBuilder, KeyPair,
    KeyedStore, TREE,
};
use elench::envelope::{pae, PAYLOAD_TYPE};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

fn p(path: &Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

/// Writes the envelope of `claim` (taken exactly as given) signed by `key` to a fresh file.
fn write_envelope(s: &KeyedStore, claim: &Value, key: &KeyPair) -> PathBuf {
    let path = s.dir().join(fresh_name("env", "dsse"));
    std::fs::write(&path, envelope_text(claim, key)).unwrap();
    path
}

/// The envelope of `b` with its correct id, signed by `key`: its path and the claim id.
fn envelope(s: &KeyedStore, b: ClaimBuilder, key: &KeyPair) -> (PathBuf, String) {
    let claim = b.build_with_id();
    (write_envelope(s, &claim, key), claim_id(&claim))
}

/// Signs and adds one claim; asserts it was created (exit 0, no rejection). Returns its id.
fn put(s: &KeyedStore, b: ClaimBuilder, key: &KeyPair) -> String {
    let (path, id) = envelope(s, b, key);
    let (code, json) = s.run(&["add", p(&path)]);
    assert_eq!(code, 0, "add failed: {json}");
    let data = &json["data"];
    assert_eq!(data["created"], json!(1), "{json}");
    assert_eq!(data["noop"], json!(0), "{json}");
    assert_eq!(data["rejected"], json!(0), "{json}");
    assert_eq!(
        data["claims"],
        json!([{"id": id, "effect": "created", "source": p(&path), "line": null}]),
        "{json}"
    );
    id
}

/// Runs a command that must fail and asserts that the store is unchanged: its `export` is
/// byte-identical before and after. Returns the command's result.
fn rejecting<S: AsRef<std::ffi::OsStr>>(s: &KeyedStore, args: &[S]) -> (i32, Value) {
    let before = s.export();
    let result = s.run(args);
    assert_ne!(result.0, 0, "expected a failure: {}", result.1);
    let after = s.export();
    assert!(
        after == before,
        "a rejected command changed the store:\nbefore:\n{}\nafter:\n{}\n{}",
        String::from_utf8_lossy(&before),
        String::from_utf8_lossy(&after),
        result.1
    );
    result
}

/// `status IDS…`: the reports (in the order asked) and the whole output. Asserts exit 0.
fn status(s: &KeyedStore, ids: &[&str]) -> (Vec<Value>, Value) {
    let mut args = vec!["status"];
    args.extend_from_slice(ids);
    let (code, json) = s.run(&args);
    assert_eq!(code, 0, "status failed: {json}");
    let claims = json["data"]["claims"]
        .as_array()
        .unwrap_or_else(|| panic!("status reports data.claims: {json}"))
        .clone();
    assert_eq!(claims.len(), ids.len(), "{json}");
    for (c, id) in claims.iter().zip(ids) {
        assert_eq!(c["id"], json!(id), "{json}");
    }
    (claims, json)
}

/// Asserts, in one `status` call, the effective and own status of every claim listed as
/// `(label, id, status, own_status)`. Returns each report by label.
fn expect(
    s: &KeyedStore,
    want: &[(&'static str, &str, &str, &str)],
) -> BTreeMap<&'static str, Value> {
    let ids: Vec<&str> = want.iter().map(|w| w.1).collect();
    let (claims, json) = status(s, &ids);
    let mut out = BTreeMap::new();
    for ((label, _, st, own), c) in want.iter().zip(claims) {
        assert_eq!(c["status"], json!(st), "status of {label}: {c}\n{json}");
        assert_eq!(
            c["own_status"],
            json!(own),
            "own_status of {label}: {c}\n{json}"
        );
        out.insert(*label, c);
    }
    out
}

/// The codes of the warnings of one output.
fn warning_codes(json: &Value) -> Vec<String> {
    json["warnings"]
        .as_array()
        .expect("warnings is an array")
        .iter()
        .map(|w| w["code"].as_str().expect("a warning has a code").to_owned())
        .collect()
}

/// `blast ARGS…`: asserts exit 0 and returns `data`.
fn blast(s: &KeyedStore, args: &[&str]) -> Value {
    let mut all = vec!["blast"];
    all.extend_from_slice(args);
    let (code, json) = s.run(&all);
    assert_eq!(code, 0, "blast failed: {json}");
    json["data"].clone()
}

/// A layer of a blast report as `[(id, status, via)]`.
fn layer(data: &Value, depth: usize) -> Vec<(String, String, Value)> {
    let l = &data["layers"][depth];
    assert_eq!(l["depth"], json!(depth), "{data}");
    l["claims"]
        .as_array()
        .unwrap_or_else(|| panic!("layer {depth} has claims: {data}"))
        .iter()
        .map(|m| {
            (
                m["id"].as_str().unwrap().to_owned(),
                m["status"].as_str().unwrap().to_owned(),
                m["via"].clone(),
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// The fold
// ---------------------------------------------------------------------------------------

#[test]
fn a_claim_is_unevaluated_until_a_harness_verification_verifies_it() {
    let s = KeyedStore::new();
    let k = &s.keys;
    let x = put(
        &s,
        ClaimBuilder::assertion("parse rejects empty input"),
        &k.agent,
    );

    let r = expect(&s, &[("x", &x, "unevaluated", "unevaluated")]);
    let rx = &r["x"];
    assert_eq!(rx["kind"], json!("assertion"));
    assert_eq!(rx["origin"], json!("agent-asserted"));
    assert_eq!(rx["producer"], json!("model-x"));
    assert_eq!(rx["signers"], json!([k.agent.keyid]));
    for empty in [
        "decided_by",
        "decided_by_revoked",
        "revoked_by",
        "missing_premises",
        "stale_premises",
        "accepted_by",
        "history",
    ] {
        assert_eq!(rx[empty], json!([]), "{empty}: {rx}");
    }
    assert_eq!(rx["accepted"], json!(false));

    // Only a harness verifies: the same record signed by the agent is refused.
    let (by_agent, _) = envelope(&s, ClaimBuilder::record("verification", &[&x]), &k.agent);
    assert_rejected(&rejecting(&s, &["add", p(&by_agent)]), "ROLE_VIOLATION");
    expect(&s, &[("x", &x, "unevaluated", "unevaluated")]);

    let v = put(&s, ClaimBuilder::record("verification", &[&x]), &k.harness);
    let (_, json) = status(&s, &[&x]);
    assert_eq!(json["data"]["as_of"], json!(2), "{json}");
    assert_eq!(warning_codes(&json), Vec::<String>::new());
    let r = expect(
        &s,
        &[
            ("x", &x, "verified", "verified"),
            ("v", &v, "unevaluated", "unevaluated"),
        ],
    );
    assert_eq!(r["x"]["decided_by"], json!([v]));
    assert_eq!(r["x"]["revoked_by"], json!([]));
    assert_eq!(
        r["x"]["history"],
        json!([{"id": v, "kind": "verification", "seq": 1,
                "tree": TREE, "own_status": "unevaluated", "status": "unevaluated", "live": true}])
    );
    assert_eq!(r["v"]["kind"], json!("verification"));
    assert_eq!(r["v"]["origin"], json!("harness-observed"));
    assert_eq!(r["v"]["signers"], json!([k.harness.keyid]));
    assert_eq!(r["v"]["seq"], json!(1));
}

#[test]
fn a_falsification_wins_over_a_verification_in_either_order() {
    let s = KeyedStore::new();
    let k = &s.keys;
    // x: verified, then falsified by an agent-asserted falsification.
    let x = put(&s, ClaimBuilder::assertion("x"), &k.agent);
    let vx = put(&s, ClaimBuilder::record("verification", &[&x]), &k.harness);
    expect(&s, &[("x", &x, "verified", "verified")]);
    let fx = put(&s, ClaimBuilder::record("falsification", &[&x]), &k.agent);
    // y: falsified by a harness-observed falsification first, verified afterwards.
    let y = put(&s, ClaimBuilder::assertion("y"), &k.agent);
    let harness_falsification =
        || ClaimBuilder::record("falsification", &[&y]).origin("harness-observed");
    let (by_agent, _) = envelope(&s, harness_falsification(), &k.agent);
    assert_rejected(&rejecting(&s, &["add", p(&by_agent)]), "ROLE_VIOLATION");
    let fy = put(&s, harness_falsification(), &k.harness);
    let vy = put(&s, ClaimBuilder::record("verification", &[&y]), &k.harness);

    let r = expect(
        &s,
        &[
            ("x", &x, "falsified", "falsified"),
            ("vx", &vx, "unevaluated", "unevaluated"),
            ("fx", &fx, "unevaluated", "unevaluated"),
            ("y", &y, "falsified", "falsified"),
            ("fy", &fy, "unevaluated", "unevaluated"),
            ("vy", &vy, "unevaluated", "unevaluated"),
        ],
    );
    assert_eq!(r["x"]["decided_by"], json!([fx]));
    assert_eq!(r["y"]["decided_by"], json!([fy]));
    assert_eq!(r["fy"]["origin"], json!("harness-observed"));
    // Both records stay in the history, in arrival order, both live.
    let hist = |c: &Value| -> Vec<(String, bool)> {
        c["history"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h["id"].as_str().unwrap().to_owned(),
                    h["live"] == json!(true),
                )
            })
            .collect()
    };
    assert_eq!(hist(&r["x"]), vec![(vx.clone(), true), (fx.clone(), true)]);
    assert_eq!(hist(&r["y"]), vec![(fy.clone(), true), (vy.clone(), true)]);
}

#[test]
fn a_falsified_premise_revokes_a_chain_with_its_cause_and_paths() {
    let s = KeyedStore::new();
    let k = &s.keys;
    let a = put(&s, ClaimBuilder::assertion("a"), &k.agent);
    let b = put(&s, ClaimBuilder::assertion("b").depends_on(&[&a]), &k.agent);
    let c = put(&s, ClaimBuilder::assertion("c").depends_on(&[&b]), &k.agent);
    expect(
        &s,
        &[
            ("a", &a, "unevaluated", "unevaluated"),
            ("b", &b, "unevaluated", "unevaluated"),
            ("c", &c, "unevaluated", "unevaluated"),
        ],
    );

    let f = put(&s, ClaimBuilder::record("falsification", &[&a]), &k.agent);
    let r = expect(
        &s,
        &[
            ("a", &a, "falsified", "falsified"),
            ("b", &b, "revoked", "unevaluated"),
            ("c", &c, "revoked", "unevaluated"),
            ("f", &f, "unevaluated", "unevaluated"),
        ],
    );
    assert_eq!(r["a"]["decided_by"], json!([f]));
    assert_eq!(r["a"]["revoked_by"], json!([]));
    assert_eq!(r["b"]["revoked_by"], json!([{"root": a, "path": [a, b]}]));
    assert_eq!(
        r["c"]["revoked_by"],
        json!([{"root": a, "path": [a, b, c]}])
    );
    assert_eq!(r["b"]["decided_by"], json!([]));
    assert_eq!(r["c"]["missing_premises"], json!([]));

    let data = blast(&s, &[&a]);
    assert_eq!(data["root"], json!(a));
    assert_eq!(data["count"], json!(2));
    assert_eq!(data["truncated"], json!(false));
    assert_eq!(data["affected"], json!([]));
    assert_eq!(data["layers"].as_array().unwrap().len(), 3, "{data}");
    assert_eq!(
        layer(&data, 0),
        vec![(a.clone(), "falsified".into(), Value::Null)]
    );
    assert_eq!(
        layer(&data, 1),
        vec![(b.clone(), "revoked".into(), json!(a))]
    );
    assert_eq!(
        layer(&data, 2),
        vec![(c.clone(), "revoked".into(), json!(b))]
    );
}

#[test]
fn a_diamond_is_revoked_once_and_listed_once() {
    let s = KeyedStore::new();
    let k = &s.keys;
    let a = put(&s, ClaimBuilder::assertion("a"), &k.agent);
    let b = put(&s, ClaimBuilder::assertion("b").depends_on(&[&a]), &k.agent);
    let c = put(&s, ClaimBuilder::assertion("c").depends_on(&[&a]), &k.agent);
    let d = put(
        &s,
        ClaimBuilder::assertion("d").depends_on(&[&b, &c]),
        &k.agent,
    );

    // Before any falsification: a diamond is no cycle.
    expect(
        &s,
        &[
            ("a", &a, "unevaluated", "unevaluated"),
            ("b", &b, "unevaluated", "unevaluated"),
            ("c", &c, "unevaluated", "unevaluated"),
            ("d", &d, "unevaluated", "unevaluated"),
        ],
    );
    let data = blast(&s, &[&a]);
    assert_eq!(data["count"], json!(3), "{data}");

    let f = put(&s, ClaimBuilder::record("falsification", &[&a]), &k.agent);
    let r = expect(
        &s,
        &[
            ("a", &a, "falsified", "falsified"),
            ("b", &b, "revoked", "unevaluated"),
            ("c", &c, "revoked", "unevaluated"),
            ("d", &d, "revoked", "unevaluated"),
            ("f", &f, "unevaluated", "unevaluated"),
        ],
    );
    assert_eq!(r["b"]["revoked_by"], json!([{"root": a, "path": [a, b]}]));
    assert_eq!(r["c"]["revoked_by"], json!([{"root": a, "path": [a, c]}]));
    let causes = r["d"]["revoked_by"].as_array().unwrap();
    assert_eq!(causes.len(), 1, "d is revoked once, by a: {}", r["d"]);
    assert_eq!(causes[0]["root"], json!(a));
    let path: Vec<&str> = causes[0]["path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert_eq!(path.len(), 3, "{}", r["d"]);
    assert_eq!(path[0], a);
    assert!(path[1] == b || path[1] == c, "{}", r["d"]);
    assert_eq!(path[2], d);

    let data = blast(&s, &[&a]);
    assert_eq!(data["count"], json!(3), "{data}");
    assert_eq!(data["layers"].as_array().unwrap().len(), 3, "{data}");
    assert_eq!(
        layer(&data, 0),
        vec![(a.clone(), "falsified".into(), Value::Null)]
    );
    let l1 = layer(&data, 1);
    let mut want_l1 = vec![
        (b.clone(), "revoked".to_owned(), json!(a)),
        (c.clone(), "revoked".to_owned(), json!(a)),
    ];
    want_l1.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(l1, want_l1, "layer 1 is b and c, sorted by id");
    let l2 = layer(&data, 2);
    assert_eq!(l2.len(), 1, "d is listed once: {data}");
    assert_eq!(l2[0].0, d);
    assert_eq!(l2[0].1, "revoked");
    assert!(l2[0].2 == json!(b) || l2[0].2 == json!(c), "{data}");
}

#[test]
fn falsifying_a_verification_reverts_its_target_to_unevaluated() {
    let s = KeyedStore::new();
    let k = &s.keys;
    let x = put(&s, ClaimBuilder::assertion("x"), &k.agent);
    let v = put(&s, ClaimBuilder::record("verification", &[&x]), &k.harness);
    expect(&s, &[("x", &x, "verified", "verified")]);
    let f = put(&s, ClaimBuilder::record("falsification", &[&v]), &k.agent);
    let r = expect(
        &s,
        &[
            ("x", &x, "unevaluated", "unevaluated"),
            ("v", &v, "falsified", "falsified"),
            ("f", &f, "unevaluated", "unevaluated"),
        ],
    );
    assert_eq!(r["x"]["decided_by"], json!([]));
    assert_eq!(r["v"]["decided_by"], json!([f]));
    assert_eq!(
        r["x"]["history"],
        json!([{"id": v, "kind": "verification", "seq": 1,
                "tree": TREE, "own_status": "falsified", "status": "falsified", "live": false}])
    );
}

#[test]
fn falsifying_a_falsification_reverts_its_targets_and_unrevokes_dependents() {
    let s = KeyedStore::new();
    let k = &s.keys;
    let x = put(&s, ClaimBuilder::assertion("x"), &k.agent);
    let b = put(&s, ClaimBuilder::assertion("b").depends_on(&[&x]), &k.agent);
    let c = put(&s, ClaimBuilder::assertion("c").depends_on(&[&b]), &k.agent);
    let v = put(&s, ClaimBuilder::record("verification", &[&x]), &k.harness);
    let f = put(&s, ClaimBuilder::record("falsification", &[&x]), &k.agent);
    // y has no verification: its falsification's fall leaves it unevaluated.
    let y = put(&s, ClaimBuilder::assertion("y"), &k.agent);
    let fy = put(
        &s,
        ClaimBuilder::record("falsification", &[&y]).origin("harness-observed"),
        &k.harness,
    );
    let r = expect(
        &s,
        &[
            ("x", &x, "falsified", "falsified"),
            ("b", &b, "revoked", "unevaluated"),
            ("c", &c, "revoked", "unevaluated"),
            ("v", &v, "unevaluated", "unevaluated"),
            ("f", &f, "unevaluated", "unevaluated"),
            ("y", &y, "falsified", "falsified"),
            ("fy", &fy, "unevaluated", "unevaluated"),
        ],
    );
    assert_eq!(
        r["c"]["revoked_by"],
        json!([{"root": x, "path": [x, b, c]}])
    );

    let g = put(
        &s,
        ClaimBuilder::record("falsification", &[&f, &fy]),
        &k.agent,
    );
    let r = expect(
        &s,
        &[
            ("x", &x, "verified", "verified"),
            ("b", &b, "unevaluated", "unevaluated"),
            ("c", &c, "unevaluated", "unevaluated"),
            ("v", &v, "unevaluated", "unevaluated"),
            ("f", &f, "falsified", "falsified"),
            ("y", &y, "unevaluated", "unevaluated"),
            ("fy", &fy, "falsified", "falsified"),
            ("g", &g, "unevaluated", "unevaluated"),
        ],
    );
    assert_eq!(r["x"]["decided_by"], json!([v]));
    assert_eq!(r["f"]["decided_by"], json!([g]));
    assert_eq!(r["fy"]["decided_by"], json!([g]));
    assert_eq!(r["b"]["revoked_by"], json!([]));
    assert_eq!(r["c"]["revoked_by"], json!([]));
    assert_eq!(r["y"]["decided_by"], json!([]));
    // The history keeps the fallen falsification, not acting.
    assert_eq!(
        r["x"]["history"],
        json!([
            {"id": v, "kind": "verification", "seq": 3,
             "tree": TREE, "own_status": "unevaluated", "status": "unevaluated", "live": true},
            {"id": f, "kind": "falsification", "seq": 4,
             "tree": TREE, "own_status": "falsified", "status": "falsified", "live": false},
        ])
    );
    assert_eq!(
        r["y"]["history"],
        json!([{"id": fy, "kind": "falsification", "seq": 6,
                "tree": TREE, "own_status": "falsified", "status": "falsified", "live": false}])
    );

    let data = blast(&s, &[&x]);
    assert_eq!(
        layer(&data, 0),
        vec![(x.clone(), "verified".into(), Value::Null)]
    );
    assert_eq!(
        layer(&data, 1),
        vec![(b.clone(), "unevaluated".into(), json!(x))]
    );
    assert_eq!(
        layer(&data, 2),
        vec![(c.clone(), "unevaluated".into(), json!(b))]
    );
}

#[test]
fn a_revoked_verification_still_verifies_and_is_flagged() {
    let s = KeyedStore::new();
    let k = &s.keys;
    let pr = put(
        &s,
        ClaimBuilder::assertion("the harness config is right"),
        &k.agent,
    );
    let x = put(&s, ClaimBuilder::assertion("x"), &k.agent);
    let v = put(
        &s,
        ClaimBuilder::record("verification", &[&x]).depends_on(&[&pr]),
        &k.harness,
    );
    let (_, json) = status(&s, &[&x]);
    assert_eq!(warning_codes(&json), Vec::<String>::new(), "{json}");
    assert_eq!(json["data"]["claims"][0]["decided_by_revoked"], json!([]));

    let f = put(&s, ClaimBuilder::record("falsification", &[&pr]), &k.agent);
    let r = expect(
        &s,
        &[
            ("p", &pr, "falsified", "falsified"),
            ("v", &v, "revoked", "unevaluated"),
            ("x", &x, "verified", "verified"),
            ("f", &f, "unevaluated", "unevaluated"),
        ],
    );
    let cause = json!([{"root": pr, "path": [pr, v]}]);
    assert_eq!(r["v"]["revoked_by"], cause);
    assert_eq!(r["x"]["decided_by"], json!([v]));
    assert_eq!(r["x"]["revoked_by"], json!([]));
    assert_eq!(
        r["x"]["decided_by_revoked"],
        json!([{"record": v, "revoked_by": cause}])
    );
    assert_eq!(
        r["x"]["history"],
        json!([{"id": v, "kind": "verification", "seq": 2,
                "tree": TREE, "own_status": "unevaluated", "status": "revoked", "live": true}])
    );

    let (_, json) = status(&s, &[&x]);
    assert_eq!(
        warning_codes(&json),
        vec!["DECIDED_BY_REVOKED_RECORD"],
        "{json}"
    );
    let message = json["warnings"][0]["message"].as_str().unwrap();
    assert!(message.contains(&x) && message.contains(&v), "{message}");

    let data = blast(&s, &[&pr]);
    assert_eq!(data["count"], json!(1), "{data}");
    assert_eq!(data["layers"].as_array().unwrap().len(), 2, "{data}");
    assert_eq!(
        layer(&data, 0),
        vec![(pr.clone(), "falsified".into(), Value::Null)]
    );
    assert_eq!(
        layer(&data, 1),
        vec![(v.clone(), "revoked".into(), json!(pr))]
    );
    assert_eq!(
        data["affected"],
        json!([{"id": x, "status": "verified", "decided_by": [v]}])
    );
}

#[test]
fn a_supersession_marks_its_target_and_leaves_dependents_as_they_were() {
    let s = KeyedStore::new();
    let k = &s.keys;
    let a = put(&s, ClaimBuilder::assertion("a"), &k.agent);
    let b = put(&s, ClaimBuilder::assertion("b").depends_on(&[&a]), &k.agent);
    let c = put(&s, ClaimBuilder::assertion("c").depends_on(&[&a]), &k.agent);
    let vc = put(&s, ClaimBuilder::record("verification", &[&c]), &k.harness);
    let d = put(&s, ClaimBuilder::assertion("d").depends_on(&[&b]), &k.agent);
    let sup = put(&s, ClaimBuilder::record("supersession", &[&a]), &k.agent);
    let r = expect(
        &s,
        &[
            ("a", &a, "superseded", "superseded"),
            ("b", &b, "unevaluated", "unevaluated"),
            ("c", &c, "verified", "verified"),
            ("vc", &vc, "unevaluated", "unevaluated"),
            ("d", &d, "unevaluated", "unevaluated"),
            ("sup", &sup, "unevaluated", "unevaluated"),
        ],
    );
    assert_eq!(r["a"]["decided_by"], json!([sup]));
    assert_eq!(r["b"]["stale_premises"], json!([a]));
    assert_eq!(r["c"]["stale_premises"], json!([a]));
    assert_eq!(r["d"]["stale_premises"], json!([]));
    for label in ["b", "c", "d"] {
        assert_eq!(r[label]["revoked_by"], json!([]), "{label}");
    }
    assert_eq!(r["c"]["decided_by"], json!([vc]));
}

#[test]
fn a_residue_acceptance_accepts_an_unevaluated_claim() {
    let s = KeyedStore::new();
    let k = &s.keys;
    let x = put(&s, ClaimBuilder::assertion("x"), &k.agent);
    let r = expect(&s, &[("x", &x, "unevaluated", "unevaluated")]);
    assert_eq!(r["x"]["accepted"], json!(false));

    let (by_agent, _) = envelope(
        &s,
        ClaimBuilder::record("residue-acceptance", &[&x]),
        &k.agent,
    );
    assert_rejected(&rejecting(&s, &["add", p(&by_agent)]), "ROLE_VIOLATION");

    let acc = put(
        &s,
        ClaimBuilder::record("residue-acceptance", &[&x]),
        &k.human,
    );
    let r = expect(
        &s,
        &[
            ("x", &x, "unevaluated", "unevaluated"),
            ("acc", &acc, "unevaluated", "unevaluated"),
        ],
    );
    assert_eq!(r["x"]["accepted"], json!(true));
    assert_eq!(r["x"]["accepted_by"], json!([acc]));
    assert_eq!(r["x"]["decided_by"], json!([]));
    assert_eq!(r["acc"]["origin"], json!("human-asserted"));
    assert_eq!(r["acc"]["signers"], json!([k.human.keyid]));
}

/// In one bundle, a premise that arrives after the claim naming it is not missing (the
/// warning is judged once the whole group is in), one the bundle lacks is, for every claim
/// that names it, and a record's target counts like a premise.
#[test]
fn a_premise_later_in_the_same_bundle_is_not_dangling_and_a_missing_one_is() {
    let s = KeyedStore::new();
    let k = &s.keys;
    let (q_env, q) = envelope(&s, ClaimBuilder::assertion("q, late"), &k.agent);
    let (_, m) = envelope(&s, ClaimBuilder::assertion("m, never added"), &k.agent);
    let (c_env, _) = envelope(&s, ClaimBuilder::assertion("c").depends_on(&[&q]), &k.agent);
    let (d_env, d) = envelope(
        &s,
        ClaimBuilder::assertion("d").depends_on(&[&q, &m]),
        &k.agent,
    );
    let (f_env, f) = envelope(&s, ClaimBuilder::record("falsification", &[&m]), &k.agent);
    let bundle = s.dir().join("late-premise.intoto.jsonl");
    let lines: Vec<String> = [&c_env, &d_env, &f_env, &q_env]
        .iter()
        .map(|e| std::fs::read_to_string(e).unwrap().trim().to_owned())
        .collect();
    std::fs::write(&bundle, lines.join("\n") + "\n").unwrap();
    let (code, json) = s.run(&["add", p(&bundle)]);
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["data"]["created"], json!(4), "{json}");
    assert_eq!(
        warning_codes(&json),
        vec!["DANGLING_REFERENCE", "DANGLING_REFERENCE"],
        "{json}"
    );
    let messages: Vec<&str> = json["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["message"].as_str().unwrap())
        .collect();
    assert!(
        messages[0].contains(&d) && messages[0].contains(&m) && messages[0].contains("dependsOn"),
        "{json}"
    );
    assert!(
        messages[1].contains(&f) && messages[1].contains(&m) && messages[1].contains("target"),
        "{json}"
    );
    assert!(messages.iter().all(|m| !m.contains(&q)), "{json}");
}

#[test]
fn a_missing_premise_is_a_warning_not_a_revocation() {
    let s = KeyedStore::new();
    let k = &s.keys;
    // q is made (its id is known) but not added yet.
    let (q_env, q) = envelope(&s, ClaimBuilder::assertion("q"), &k.agent);
    let (c_env, c) = envelope(&s, ClaimBuilder::assertion("c").depends_on(&[&q]), &k.agent);
    let (code, json) = s.run(&["add", p(&c_env)]);
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["data"]["created"], json!(1));
    assert_eq!(warning_codes(&json), vec!["DANGLING_REFERENCE"], "{json}");
    assert!(json["warnings"][0]["message"]
        .as_str()
        .unwrap()
        .contains(&q));

    let r = expect(&s, &[("c", &c, "unevaluated", "unevaluated")]);
    assert_eq!(r["c"]["missing_premises"], json!([q]));
    assert_eq!(r["c"]["revoked_by"], json!([]));
    let (code, json) = rejecting(&s, &["status", &q]);
    assert_eq!(
        (code, &json["error"]["code"]),
        (5, &json!("NOT_FOUND")),
        "{json}"
    );

    // The premise arrives: nothing is missing, nothing revoked.
    let (code, json) = s.run(&["add", p(&q_env)]);
    assert_eq!((code, &json["data"]["created"]), (0, &json!(1)), "{json}");
    let r = expect(
        &s,
        &[
            ("q", &q, "unevaluated", "unevaluated"),
            ("c", &c, "unevaluated", "unevaluated"),
        ],
    );
    assert_eq!(r["c"]["missing_premises"], json!([]));

    // Then it is falsified: c falls with it.
    let f = put(&s, ClaimBuilder::record("falsification", &[&q]), &k.agent);
    let r = expect(
        &s,
        &[
            ("q", &q, "falsified", "falsified"),
            ("c", &c, "revoked", "unevaluated"),
            ("f", &f, "unevaluated", "unevaluated"),
        ],
    );
    assert_eq!(r["c"]["revoked_by"], json!([{"root": q, "path": [q, c]}]));

    // The other order: the falsification arrives before its target, which arrives last.
    let (q2_env, q2) = envelope(&s, ClaimBuilder::assertion("q2"), &k.agent);
    let c2 = put(
        &s,
        ClaimBuilder::assertion("c2").depends_on(&[&q2]),
        &k.agent,
    );
    let (f2_env, f2) = envelope(&s, ClaimBuilder::record("falsification", &[&q2]), &k.agent);
    let (code, json) = s.run(&["add", p(&f2_env)]);
    assert_eq!(code, 0, "{json}");
    assert_eq!(warning_codes(&json), vec!["DANGLING_REFERENCE"], "{json}");
    let r = expect(
        &s,
        &[
            ("c2", &c2, "unevaluated", "unevaluated"),
            ("f2", &f2, "unevaluated", "unevaluated"),
        ],
    );
    assert_eq!(r["c2"]["missing_premises"], json!([q2]));
    let (code, json) = s.run(&["add", p(&q2_env)]);
    assert_eq!(code, 0, "{json}");
    let r = expect(
        &s,
        &[
            ("q2", &q2, "falsified", "falsified"),
            ("c2", &c2, "revoked", "unevaluated"),
            ("f2", &f2, "unevaluated", "unevaluated"),
        ],
    );
    assert_eq!(
        r["c2"]["revoked_by"],
        json!([{"root": q2, "path": [q2, c2]}])
    );
    assert_eq!(r["c2"]["missing_premises"], json!([]));
}

#[test]
fn an_unknown_id_is_not_found() {
    let s = KeyedStore::new();
    let x = put(&s, ClaimBuilder::assertion("x"), &s.keys.agent);
    let unknown = some_id(0xab);
    for args in [
        vec!["status", unknown.as_str()],
        vec!["status", x.as_str(), unknown.as_str()],
        vec!["blast", unknown.as_str()],
        vec!["show", unknown.as_str()],
    ] {
        let (code, json) = rejecting(&s, &args);
        assert_eq!(code, 5, "{args:?}: {json}");
        assert_eq!(
            json["error"]["code"],
            json!("NOT_FOUND"),
            "{args:?}: {json}"
        );
        assert!(
            json["error"]["message"]
                .as_str()
                .unwrap()
                .contains(&unknown),
            "{json}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// add
// ---------------------------------------------------------------------------------------

#[test]
fn re_adding_is_a_noop() {
    let s = KeyedStore::new();
    let k = &s.keys;
    let claim = ClaimBuilder::assertion("x").build_with_id();
    let x = claim_id(&claim);
    let env = write_envelope(&s, &claim, &k.agent);
    let (code, json) = s.run(&["add", p(&env)]);
    assert_eq!(code, 0, "{json}");
    let before = s.export();

    let (code, json) = s.run(&["add", p(&env)]);
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["ok"], json!(true));
    assert_eq!(json["data"]["created"], json!(0));
    assert_eq!(json["data"]["noop"], json!(1));
    assert_eq!(json["data"]["rejected"], json!(0));
    assert_eq!(
        json["data"]["claims"],
        json!([{"id": x, "effect": "noop", "source": p(&env), "line": null}])
    );
    assert!(s.export() == before, "a noop add changed the store");
    // The same claim in another envelope (a harness relaying the agent's claim): same id,
    // the new envelope is kept too ("merged"), and the claim's signers are the union.
    let relayed = write_envelope(&s, &claim, &k.harness);
    let (code, json) = s.run(&["add", p(&relayed)]);
    assert_eq!(code, 0, "{json}");
    assert_eq!(
        json["data"]["claims"],
        json!([{"id": x, "effect": "merged", "source": p(&relayed), "line": null}])
    );
    assert_eq!(s.export().iter().filter(|&&b| b == b'\n').count(), 2);
    let r = expect(&s, &[("x", &x, "unevaluated", "unevaluated")]);
    let mut signers = vec![k.agent.keyid.clone(), k.harness.keyid.clone()];
    signers.sort();
    assert_eq!(r["x"]["signers"], json!(signers));
    // And adding the relayed one again is a noop.
    let (code, json) = s.run(&["add", p(&relayed)]);
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["data"]["noop"], json!(1));
}

#[test]
fn a_batch_of_good_and_bad_files_is_partial_and_names_each_rejection() {
    let s = KeyedStore::new();
    let k = &s.keys;
    let stranger = make_key(s.dir(), "agent", "stranger");
    let (good1, id1) = envelope(&s, ClaimBuilder::assertion("good 1"), &k.agent);
    let (good2, id2) = envelope(&s, ClaimBuilder::assertion("good 2"), &k.agent);
    let (untrusted, _) = envelope(&s, ClaimBuilder::assertion("untrusted"), &stranger);
    let (role, _) = envelope(&s, ClaimBuilder::record("verification", &[&id1]), &k.agent);
    // A valid signature over another payload.
    let mut tampered: Value = serde_json::from_slice(&std::fs::read(&good1).unwrap()).unwrap();
    let other: Value = serde_json::from_str(&envelope_text(
        &ClaimBuilder::assertion("other").build_with_id(),
        &k.agent,
    ))
    .unwrap();
    tampered["payload"] = other["payload"].clone();
    let tampered_path = s.dir().join("tampered.dsse");
    std::fs::write(&tampered_path, tampered.to_string()).unwrap();
    let forged_claim = {
        let mut c = ClaimBuilder::assertion("forged").build_with_id();
        c["id"] = json!(some_id(7));
        c
    };
    let forged = write_envelope(&s, &forged_claim, &k.agent);
    let garbage = s.dir().join("garbage.json");
    std::fs::write(&garbage, b"this is not an envelope").unwrap();

    let before = s.export();
    let files = [
        &good1,
        &untrusted,
        &role,
        &tampered_path,
        &good2,
        &forged,
        &garbage,
    ];
    let mut args = vec!["add"];
    args.extend(files.iter().map(|f| p(f)));
    let (code, json) = s.run(&args);
    assert_eq!(code, 3, "{json}");
    assert_eq!(json["ok"], json!(false));
    let data = &json["data"];
    assert_eq!(data["created"], json!(2), "{json}");
    assert_eq!(data["noop"], json!(0), "{json}");
    assert_eq!(data["rejected"], json!(5), "{json}");
    assert_eq!(
        data["claims"],
        json!([
            {"id": id1, "effect": "created", "source": p(&good1), "line": null},
            {"id": id2, "effect": "created", "source": p(&good2), "line": null},
        ])
    );
    let rejections: Vec<(String, Value, String)> = data["rejections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["source"].as_str().unwrap().to_owned(),
                r["line"].clone(),
                r["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        rejections,
        vec![
            (
                p(&untrusted).to_owned(),
                Value::Null,
                "UNTRUSTED_SIGNER".to_owned()
            ),
            (
                p(&role).to_owned(),
                Value::Null,
                "ROLE_VIOLATION".to_owned()
            ),
            (
                p(&tampered_path).to_owned(),
                Value::Null,
                "BAD_SIGNATURE".to_owned()
            ),
            (p(&forged).to_owned(), Value::Null, "ID_MISMATCH".to_owned()),
            (p(&garbage).to_owned(), Value::Null, "BAD_JSON".to_owned()),
        ],
        "{json}"
    );
    // Only the good envelopes were appended, in canonical form, in the order given.
    let mut want = before.clone();
    for g in [&good1, &good2] {
        let bytes = std::fs::read(g).unwrap();
        want.extend_from_slice(&elench::store::record::canonical_envelope(&bytes).unwrap());
        want.push(b'\n');
    }
    assert!(
        s.export() == want,
        "the store holds exactly the good envelopes"
    );

    // Only bad files: exit 2, ALL_REJECTED, nothing changes.
    let result = rejecting(&s, &["add", p(&untrusted), p(&garbage)]);
    assert_rejected(&result, "ALL_REJECTED");
    assert_eq!(result.1["data"]["rejected"], json!(2), "{}", result.1);
    // One bad file: exit 2 with its own code.
    assert_rejected(&rejecting(&s, &["add", p(&forged)]), "ID_MISMATCH");
    // Good (already present) and bad: partial, and still nothing changes.
    let (code, json) = rejecting(&s, &["add", p(&good1), p(&tampered_path)]);
    assert_eq!(code, 3, "{json}");
    assert_eq!(json["data"]["noop"], json!(1), "{json}");
}

/// A store with three claims (a, b on a, and a falsification of a), exported with
/// `export -o`; returns the store and the bundle's lines.
fn exported_store() -> (KeyedStore, Vec<String>) {
    let s = KeyedStore::new();
    let k = &s.keys;
    let a = put(&s, ClaimBuilder::assertion("a"), &k.agent);
    put(&s, ClaimBuilder::assertion("b").depends_on(&[&a]), &k.agent);
    put(&s, ClaimBuilder::record("falsification", &[&a]), &k.agent);
    let bundle = s.dir().join("log.intoto.jsonl");
    let (code, json) = s.run(&["export", "-o", p(&bundle)]);
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["data"]["envelopes"], json!(3), "{json}");
    let text = std::fs::read_to_string(&bundle).unwrap();
    assert!(
        std::fs::read(&bundle).unwrap() == s.export(),
        "export -o equals export"
    );
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), 3);
    (s, lines)
}

#[test]
fn a_bundle_with_a_bad_line_names_that_line() {
    let (a, lines) = exported_store();
    let store_b = a.dir().join("store-b");
    let k = &a.keys;
    init_store_trusting(a.dir(), &store_b, &[&k.harness, &k.agent, &k.human]);
    let run_b = |args: &[&str]| elench(a.dir(), &with_store(&store_b, args));

    let bad = a.dir().join("bad.intoto.jsonl");
    let text = format!(
        "{}\n\n{}\n{{\"payloadType\": \"application/vnd.in-toto+json\",\n{}\n",
        lines[0], lines[1], lines[2]
    );
    std::fs::write(&bad, text).unwrap();
    let (code, json) = run_b(&["add", p(&bad)]);
    assert_eq!(code, 3, "{json}");
    let data = &json["data"];
    assert_eq!(data["created"], json!(3), "{json}");
    assert_eq!(data["rejected"], json!(1), "{json}");
    let sources: Vec<String> = data["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| format!("{}:{}", c["source"].as_str().unwrap(), c["line"]))
        .collect();
    let src = p(&bad);
    assert_eq!(
        sources,
        vec![format!("{src}:1"), format!("{src}:3"), format!("{src}:5")]
    );
    let rej = &data["rejections"][0];
    assert_eq!(rej["source"], json!(src), "{json}");
    assert_eq!(rej["line"], json!(4), "{json}");
    assert_eq!(rej["code"], json!("BAD_JSON"), "{json}");
    // Store b now holds exactly what a holds.
    assert!(export_bundle(a.dir(), &store_b) == a.export());

    // A bundle whose only envelope is bad (line 2, after a blank line): exit 2 with its
    // code and line; the store is unchanged.
    let before = a.export();
    let only_bad = a.dir().join("only-bad.intoto.jsonl");
    std::fs::write(
        &only_bad,
        format!("\n{}x\n", &lines[0][..lines[0].len() - 1]),
    )
    .unwrap();
    let result = rejecting(&a, &["add", p(&only_bad)]);
    let error = assert_rejected(&result, "BAD_JSON");
    assert_eq!(
        result.1["data"]["rejections"][0]["line"],
        json!(2),
        "{}",
        result.1
    );
    assert_eq!(error["line"], json!(2), "{error}");
    assert!(a.export() == before);
}

#[test]
fn add_dash_reads_a_bundle_on_stdin() {
    let (a, lines) = exported_store();
    let store_c = a.dir().join("store-c");
    let k = &a.keys;
    init_store_trusting(a.dir(), &store_c, &[&k.harness, &k.agent, &k.human]);
    let bundle = a.export();
    let (code, json) = elench_with_stdin(a.dir(), &with_store(&store_c, &["add", "-"]), &bundle);
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["data"]["created"], json!(3), "{json}");
    let sources: Vec<String> = json["data"]["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| format!("{}:{}", c["source"].as_str().unwrap(), c["line"]))
        .collect();
    assert_eq!(sources, vec!["<stdin>:1", "<stdin>:2", "<stdin>:3"]);
    assert!(export_bundle(a.dir(), &store_c) == bundle);

    // Again, with a bad line: the good ones are noops, the bad one is named by its line.
    let input = format!("{}\n{}\nnot json\n", lines[0], lines[1]);
    let before = export_bundle(a.dir(), &store_c);
    let (code, json) = elench_with_stdin(
        a.dir(),
        &with_store(&store_c, &["add", "-"]),
        input.as_bytes(),
    );
    assert_eq!(code, 3, "{json}");
    assert_eq!(json["data"]["noop"], json!(2), "{json}");
    let rej = &json["data"]["rejections"][0];
    assert_eq!(
        (&rej["source"], &rej["line"], &rej["code"]),
        (&json!("<stdin>"), &json!(3), &json!("BAD_JSON")),
        "{json}"
    );
    assert!(export_bundle(a.dir(), &store_c) == before);
}

// ---------------------------------------------------------------------------------------
// Keys
// ---------------------------------------------------------------------------------------

/// An envelope over `claim` with one signature by each of `keys`.
fn multi_signed(claim: &Value, keys: &[&KeyPair]) -> String {
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine;
    use ed25519_dalek::Signer;
    let payload =
        elench::envelope::statement::statement_bytes(claim.as_object().unwrap(), common::TREE);
    let signed = pae(PAYLOAD_TYPE, &payload);
    let sigs: Vec<Value> = keys
        .iter()
        .map(|k| {
            let sig = k.signing_key().sign(&signed);
            json!({"keyid": k.keyid, "sig": STANDARD.encode(sig.to_bytes())})
        })
        .collect();
    json!({"payloadType": PAYLOAD_TYPE, "payload": STANDARD.encode(&payload), "signatures": sigs})
        .to_string()
}

#[test]
fn a_retired_key_signs_nothing_new_and_what_it_signed_stays() {
    let s = KeyedStore::new();
    let k = &s.keys;
    let x = put(
        &s,
        ClaimBuilder::assertion("signed before retirement"),
        &k.agent,
    );

    let (code, json) = s.run(&["keys", "retire", "--yes", &k.agent.keyid]);
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["data"]["retired"], json!(true), "{json}");
    let (code, json) = s.run(&["keys", "list"]);
    assert_eq!(code, 0, "{json}");
    let retired: BTreeMap<String, bool> = json["data"]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["keyid"].as_str().unwrap().to_owned(),
                k["retired"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(retired.len(), 3, "retired keys stay listed: {json}");
    assert!(retired[&k.agent.keyid]);
    assert!(!retired[&k.harness.keyid]);
    assert!(!retired[&k.human.keyid]);

    // New envelopes signed only by it are rejected, and change nothing.
    let (y_env, y) = envelope(&s, ClaimBuilder::assertion("signed after"), &k.agent);
    assert_rejected(&rejecting(&s, &["add", p(&y_env)]), "UNTRUSTED_SIGNER");
    let (code, json) = rejecting(&s, &["status", &y]);
    assert_eq!(code, 5, "{json}");
    assert_eq!(json["error"]["code"], json!("NOT_FOUND"), "{json}");

    // Signed by it and by a trusted key: accepted on the trusted key's signature.
    let z_claim = ClaimBuilder::assertion("signed by both").build_with_id();
    let z_env = s.dir().join("both.dsse");
    std::fs::write(&z_env, multi_signed(&z_claim, &[&k.agent, &k.harness])).unwrap();
    let (code, json) = s.run(&["add", p(&z_env)]);
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["data"]["created"], json!(1), "{json}");

    // What it signed before stays, with its signer, and fsck is clean.
    let r = expect(
        &s,
        &[
            ("x", &x, "unevaluated", "unevaluated"),
            ("z", &claim_id(&z_claim), "unevaluated", "unevaluated"),
        ],
    );
    assert_eq!(r["x"]["signers"], json!([k.agent.keyid]));
    let z_signers = r["z"]["signers"].as_array().unwrap();
    assert!(z_signers.contains(&json!(k.harness.keyid)), "{}", r["z"]);
    let (code, json) = s.run(&["fsck"]);
    assert_eq!(code, 0, "fsck after retirement: {json}");

    // Retiring an unknown key: not found, nothing changes. Retiring again: a noop.
    let (code, json) = rejecting(&s, &["keys", "retire", &"ab".repeat(32)]);
    assert_eq!(code, 5, "{json}");
    assert_eq!(json["ok"], json!(false));
    assert!(
        json["error"]["code"]
            .as_str()
            .unwrap()
            .ends_with("NOT_FOUND"),
        "{json}"
    );
    let (code, json) = s.run(&["keys", "retire", "--yes", &k.agent.keyid]);
    assert_eq!(code, 0, "{json}");
}

// ---------------------------------------------------------------------------------------
// Forged cycles
// ---------------------------------------------------------------------------------------

#[test]
fn a_forged_cycle_cannot_be_ingested() {
    let s = KeyedStore::new();
    let k = &s.keys;
    // x0 is an honest claim; its id is what a forger would like x to have.
    let x0 = ClaimBuilder::assertion("x").build_with_id();
    let x0_id = claim_id(&x0);

    // y names x0's id as a premise, honestly (its own id is right): accepted, dangling.
    let y_claim = ClaimBuilder::assertion("y")
        .depends_on(&[&x0_id])
        .build_with_id();
    let y = claim_id(&y_claim);
    let y_env = write_envelope(&s, &y_claim, &k.agent);
    let (code, json) = s.run(&["add", p(&y_env)]);
    assert_eq!(code, 0, "{json}");

    // To close the cycle, x must depend on y yet keep the id x0_id, which was computed
    // without that premise: the id cannot be both, so x is rejected.
    let mut x_forged = x0.clone();
    x_forged["dependsOn"] = json!([y]);
    let env = write_envelope(&s, &x_forged, &k.agent);
    assert_rejected(&rejecting(&s, &["add", p(&env)]), "ID_MISMATCH");

    // A claim that is its own premise, and a record that targets itself.
    let mut self_premise = x0.clone();
    self_premise["dependsOn"] = json!([x0_id]);
    let env = write_envelope(&s, &self_premise, &k.agent);
    assert_rejected(&rejecting(&s, &["add", p(&env)]), "ID_MISMATCH");
    let f0 = ClaimBuilder::record("falsification", &[&y]).build_with_id();
    let mut self_target = f0.clone();
    self_target["target"] = json!([claim_id(&f0)]);
    let env = write_envelope(&s, &self_target, &k.agent);
    assert_rejected(&rejecting(&s, &["add", p(&env)]), "ID_MISMATCH");

    // Two claims naming each other's (made-up) ids, in one batch: both rejected.
    let (i1, i2) = (some_id(1), some_id(2));
    let mut c1 = ClaimBuilder::assertion("c1").depends_on(&[&i2]).build();
    c1["id"] = json!(i1);
    let mut c2 = ClaimBuilder::assertion("c2").depends_on(&[&i1]).build();
    c2["id"] = json!(i2);
    let e1 = write_envelope(&s, &c1, &k.agent);
    let e2 = write_envelope(&s, &c2, &k.agent);
    let result = rejecting(&s, &["add", p(&e1), p(&e2)]);
    assert_rejected(&result, "ALL_REJECTED");
    let codes: Vec<&Value> = result.1["data"]["rejections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["code"])
        .collect();
    assert_eq!(codes, vec![&json!("ID_MISMATCH"), &json!("ID_MISMATCH")]);

    // Nothing forged was stored.
    for id in [&x0_id, &claim_id(&f0), &i1, &i2] {
        let (code, json) = rejecting(&s, &["status", id]);
        assert_eq!(code, 5, "{id}: {json}");
    }
    // x with its true id is accepted; it is not what y names, so no cycle exists.
    let x_true = with_computed_id(&x_forged);
    let x = claim_id(&x_true);
    assert_ne!(x, x0_id);
    let env = write_envelope(&s, &x_true, &k.agent);
    let (code, json) = s.run(&["add", p(&env)]);
    assert_eq!(code, 0, "{json}");
    let r = expect(
        &s,
        &[
            ("y", &y, "unevaluated", "unevaluated"),
            ("x", &x, "unevaluated", "unevaluated"),
        ],
    );
    assert_eq!(r["y"]["missing_premises"], json!([x0_id]));
    assert_eq!(r["x"]["missing_premises"], json!([]));
    let data = blast(&s, &[&x]);
    assert_eq!(data["count"], json!(0), "{data}");
    let data = blast(&s, &[&y]);
    assert_eq!(data["count"], json!(1), "{data}");
    assert_eq!(
        layer(&data, 1),
        vec![(x.clone(), "unevaluated".into(), json!(y))]
    );
}

// ---------------------------------------------------------------------------------------
// Pagination
// ---------------------------------------------------------------------------------------

fn page_ids(json: &Value, list: &str) -> Vec<String> {
    json["data"][list]
        .as_array()
        .unwrap_or_else(|| panic!("data.{list}: {json}"))
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn log_and_status_all_paginate() {
    let s = KeyedStore::new();
    let mut ids = Vec::new();
    let mut bundle = String::new();
    for i in 0..25 {
        let c = ClaimBuilder::assertion(&format!("claim {i}")).build_with_id();
        ids.push(claim_id(&c));
        bundle.push_str(&envelope_text(&c, &s.keys.agent));
        bundle.push('\n');
    }
    let path = s.dir().join("many.intoto.jsonl");
    std::fs::write(&path, bundle).unwrap();
    let (code, json) = s.run(&["add", p(&path)]);
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["data"]["created"], json!(25));

    for (cmd, list) in [
        (vec!["log"], "entries"),
        (vec!["status", "--all"], "claims"),
    ] {
        let (code, first) = s.run(&cmd);
        assert_eq!(code, 0, "{first}");
        let pg = &first["meta"]["pagination"];
        assert_eq!(pg["returned"], json!(20), "{cmd:?}: {first}");
        assert_eq!(pg["has_more"], json!(true), "{cmd:?}: {first}");
        assert_eq!(page_ids(&first, list), ids[..20].to_vec(), "{cmd:?}");
        let cursor = pg["next_cursor"]
            .as_str()
            .expect("a next_cursor")
            .to_owned();

        let mut next = cmd.clone();
        next.extend(["--cursor", &cursor]);
        let (code, second) = s.run(&next);
        assert_eq!(code, 0, "{second}");
        let pg = &second["meta"]["pagination"];
        assert_eq!(pg["returned"], json!(5), "{cmd:?}: {second}");
        assert_eq!(pg["has_more"], json!(false), "{cmd:?}: {second}");
        assert_eq!(pg["next_cursor"], Value::Null, "{cmd:?}: {second}");
        assert_eq!(page_ids(&second, list), ids[20..].to_vec(), "{cmd:?}");

        // --limit 10: pages of 10, 10 and 5, together the whole log in arrival order.
        let mut all = Vec::new();
        let mut cursor: Option<String> = None;
        let mut sizes = Vec::new();
        loop {
            let mut args = cmd.clone();
            args.extend(["--limit", "10"]);
            if let Some(c) = &cursor {
                args.extend(["--cursor", c.as_str()]);
            }
            let (code, json) = s.run(&args);
            assert_eq!(code, 0, "{json}");
            let page = page_ids(&json, list);
            sizes.push(page.len());
            all.extend(page);
            match json["meta"]["pagination"]["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => break,
            }
        }
        assert_eq!(sizes, vec![10, 10, 5], "{cmd:?}");
        assert_eq!(all, ids, "{cmd:?}");
    }
    let (_, first) = s.run(&["log"]);
    let seqs: Vec<u64> = first["data"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (0..20).collect::<Vec<u64>>());
    let (_, st) = s.run(&["status", "--all"]);
    assert_eq!(st["data"]["as_of"], json!(25));
}

// ---------------------------------------------------------------------------------------
// No store
// ---------------------------------------------------------------------------------------

#[test]
fn commands_without_a_store_fail_with_store_not_found() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap();
    for ancestor in dir.ancestors() {
        assert!(
            !ancestor.join(".elench").exists(),
            "{} has an .elench store; this test needs a directory without one above it",
            ancestor.display()
        );
    }
    let id = some_id(1);
    let missing = dir.join("nowhere");
    let missing_store = ["--store", p(&missing)];
    for args in [
        vec!["status", "--all"],
        vec!["status", id.as_str()],
        vec!["blast", id.as_str()],
        vec!["log"],
        vec!["add", "x.dsse"],
        vec!["fsck"],
        vec!["keys", "list"],
        [&missing_store[..], &["log"]].concat(),
    ] {
        let (code, json) = elench(&dir, &args);
        assert_eq!(code, 4, "{args:?}: {json}");
        assert_eq!(
            json["error"]["code"],
            json!("STORE_NOT_FOUND"),
            "{args:?}: {json}"
        );
    }
    assert!(!dir.join(".elench").exists(), "nothing was created");
    assert!(!missing.exists(), "nothing was created");
}

#[test]
fn add_reads_a_directory_recursively() {
    let (a, lines) = exported_store();
    let store_d = a.dir().join("store-d");
    let k = &a.keys;
    init_store_trusting(a.dir(), &store_d, &[&k.harness, &k.agent, &k.human]);
    // dir/1.dsse (line 1), dir/sub/2.json (line 2), dir/sub/deeper/3.intoto.jsonl (line 3),
    // and a file that is neither, which is not read.
    let dir = a.dir().join("inbox");
    std::fs::create_dir_all(dir.join("sub/deeper")).unwrap();
    std::fs::write(dir.join("1.dsse"), &lines[0]).unwrap();
    std::fs::write(dir.join("sub/2.json"), &lines[1]).unwrap();
    std::fs::write(
        dir.join("sub/deeper/3.intoto.jsonl"),
        format!("{}\n", lines[2]),
    )
    .unwrap();
    std::fs::write(dir.join("notes.txt"), "not an envelope").unwrap();
    let (code, json) = elench(a.dir(), &with_store(&store_d, &["add", p(&dir)]));
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["data"]["created"], json!(3), "{json}");
    assert_eq!(json["data"]["rejected"], json!(0), "{json}");
    let sources: Vec<String> = json["data"]["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| match c["line"].as_u64() {
            Some(line) => format!("{}:{line}", c["source"].as_str().unwrap()),
            None => c["source"].as_str().unwrap().to_owned(),
        })
        .collect();
    let d = p(&dir);
    assert_eq!(
        sources,
        vec![
            format!("{d}/1.dsse"),
            format!("{d}/sub/2.json"),
            format!("{d}/sub/deeper/3.intoto.jsonl:1"),
        ]
    );
    assert!(export_bundle(a.dir(), &store_d) == a.export());
}
