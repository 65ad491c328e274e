//! The three readings of a stored claim: `Store::get_fold` (the header), `get_light` (the
//! header and the index's summary) and `get` (the header and the body as signed) agree on the
//! header, and the summary holds exactly the body's anchor and assertion form and text,
//! whether ingest read the payload whole or the fast way.

use crate::common;

use common::{lib_store, record, Keys, Signed, Signer};
use elench::claim::Gist;
use elench::envelope::Envelope;
use serde_json::{json, Value};

/// Claims whose bodies hold more than the summary keeps: evidence, an expression, anchor
/// members in an unusual order.
fn claims(keys: &Keys) -> Vec<Signed> {
    let tree = common::TREE;
    let annotated = keys.sign(
        &json!({
            "kind": "assertion",
            "assertion": {"form": "annotation", "text": "parse rejects empty input"},
            "origin": {"kind": "agent-asserted", "producer": {"id": "p"}},
            "anchor": {"path": "src/lib.rs", "strategy": "multi", "tree": tree},
            "timestamp": 1_700_000_001,
        }),
        Signer::Agent,
    );
    let predicate = keys.sign(
        &json!({
            "kind": "assertion",
            "assertion": {"form": "predicate", "text": "the file is there",
                          "expression": {"language": "elench-predicate-v1",
                                         "source": "exists(\"src/lib.rs\")"}},
            "origin": {"kind": "agent-asserted", "producer": {"id": "p"}},
            "anchor": {"tree": tree, "strategy": "multi"},
            "timestamp": 1_700_000_002,
        }),
        Signer::Agent,
    );
    let verified = record(keys, "verification", "checked", &[&predicate.id], &[]);
    // An observation that states its target's inputs (and other evidence the summary
    // leaves out), members in an unusual order.
    let observed = keys.sign(
        &json!({
            "kind": "verification",
            "target": [predicate.id],
            "assertion": {"text": "seen", "form": "annotation"},
            "origin": {"kind": "harness-observed", "producer": {"id": "ci"}},
            "anchor": {"tree": tree, "strategy": "multi"},
            "timestamp": 1_700_000_003,
            "evidence": [
                {"kind": "test-report", "digest": "ab"},
                {"uri": format!("elench:inputs:{}", predicate.id), "digest": "cd",
                 "kind": "artifact-digest"},
            ],
        }),
        Signer::Harness,
    );
    vec![annotated, predicate, verified, observed]
}

/// The claim as signed: what was given to the key, with its id.
fn signed_body(s: &Signed) -> Value {
    let mut v = s.claim.clone();
    v["id"] = json!(s.id);
    v
}

fn check_readings(store: &elench::store::Store, s: &Signed) {
    let fold = store.get_fold(&s.id).unwrap().expect("stored");
    let light = store.get_light(&s.id).unwrap().expect("stored");
    let full = store.get(&s.id).unwrap().expect("stored");
    assert_eq!(fold.claim, full.claim);
    assert_eq!(light.claim, full.claim);
    assert_eq!((fold.seq, &fold.signers), (full.seq, &full.signers));
    assert_eq!(full.body.as_value(), &signed_body(s));
    assert_eq!(light.body.anchor(), full.body.anchor(), "{}", s.id);
    assert_eq!(light.body.form(), full.body.form());
    assert_eq!(light.body.text_value(), full.body.text_value());
    // A predicate's source, and an observation's inputs entries, which judging a claim at
    // a tree reads; the summary keeps nothing else.
    assert_eq!(
        light
            .body
            .as_value()
            .pointer("/assertion/expression/source"),
        (full.body.form() == Some("predicate"))
            .then(|| full.body.as_value().pointer("/assertion/expression/source"))
            .flatten()
    );
    let summary = light.body.as_value().as_object().expect("an object");
    assert!(summary
        .keys()
        .all(|k| k == "anchor" || k == "assertion" || k == "evidence"));
    let assertion = light.body.as_value()["assertion"].as_object().unwrap();
    assert!(assertion
        .keys()
        .all(|k| k == "form" || k == "text" || k == "expression"));
    let kept: Vec<&serde_json::Value> = light.body.as_value()["evidence"]
        .as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let inputs: Vec<serde_json::Value> = full
        .body
        .evidence()
        .iter()
        .filter(|e| {
            e["uri"]
                .as_str()
                .is_some_and(|u| u.starts_with("elench:inputs:"))
        })
        .map(|e| serde_json::json!({"uri": e["uri"], "digest": e["digest"]}))
        .collect();
    assert_eq!(kept, inputs.iter().collect::<Vec<_>>(), "{}", s.id);
}

#[test]
fn getters_agree_on_the_header_and_the_summary_is_the_bodys_gist() {
    let keys = Keys::new();
    let signed = claims(&keys);
    // Read whole (`verify_envelope`) in one store, the fast way (`verify_for_store`) in the
    // other: the index keeps the same summary either way.
    for fast in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let store = lib_store(tmp.path(), &keys);
        let trust = store.trust_set().unwrap();
        for s in &signed {
            let bytes = s.envelope.as_bytes();
            let accepted = if fast {
                elench::ingest::verify_for_store(Envelope::parse(bytes).unwrap(), &trust)
            } else {
                elench::ingest::verify_envelope(bytes, &trust)
            }
            .unwrap();
            assert_eq!(
                matches!(accepted.text, elench::ingest::Read::Summary(_)),
                fast,
                "{}",
                s.id
            );
            store.add(&accepted, bytes).unwrap();
        }
        for s in &signed {
            check_readings(&store, s);
        }
    }
}
