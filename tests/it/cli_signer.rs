//! `blast --signer KEY` through the binary: what a compromise of a key would take down
//! before anyone declares it.

use crate::common;

use common::{claim_id, envelope_text, with_computed_id, ClaimBuilder, KeyPair, KeyedStore};
use serde_json::{json, Value};
use std::path::PathBuf;

/// Writes `claim` (its id filled in) signed by each of `keys` into one envelope file.
fn signed(s: &KeyedStore, claim: &Value, keys: &[&KeyPair]) -> (PathBuf, String) {
    use base64::Engine;
    use ed25519_dalek::Signer;
    let claim = with_computed_id(claim);
    let id = claim_id(&claim);
    let mut env: Value = serde_json::from_str(&envelope_text(&claim, keys[0])).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD;
    let payload = b64.decode(env["payload"].as_str().unwrap()).unwrap();
    let pae = elench::envelope::pae(elench::envelope::PAYLOAD_TYPE, &payload);
    for k in &keys[1..] {
        let sig = k.signing.sign(&pae);
        env["signatures"]
            .as_array_mut()
            .unwrap()
            .push(json!({"keyid": k.keyid, "sig": b64.encode(sig.to_bytes())}));
    }
    let path = s.dir().join(common::fresh_name("claim", "dsse"));
    std::fs::write(&path, env.to_string()).unwrap();
    let (code, out) = s.run(&["add", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    (path, id)
}

/// The agent signs A1 and A2 alone; D1 (human) rests on A1, D2 (harness) on D1; C, signed by
/// the agent and the human, rests on nothing and is not taken down, nor is E (human) which
/// rests on C; V, a verification the agent cannot sign, is left out.
struct Scene {
    s: KeyedStore,
    a1: String,
    a2: String,
    d1: String,
    d2: String,
    c: String,
    e: String,
}

fn scene() -> Scene {
    let s = KeyedStore::new();
    let (agent, human, harness) = (&s.keys.agent, &s.keys.human, &s.keys.harness);
    let a1 = signed(
        &s,
        &ClaimBuilder::assertion("parse is total").build(),
        &[agent],
    )
    .1;
    let a2 = signed(&s, &ClaimBuilder::assertion("no panics").build(), &[agent]).1;
    let d1 = ClaimBuilder::assertion("the parser is safe to ship")
        .origin("human-asserted")
        .depends_on(&[&a1])
        .build();
    let d1 = signed(&s, &d1, &[human]).1;
    let d2 = ClaimBuilder::assertion("release notes hold")
        .origin("harness-observed")
        .depends_on(&[&d1])
        .build();
    let d2 = signed(&s, &d2, &[harness]).1;
    let c = signed(
        &s,
        &ClaimBuilder::assertion("two people say so").build(),
        &[agent, human],
    )
    .1;
    let e = ClaimBuilder::assertion("built on the co-signed one")
        .origin("human-asserted")
        .depends_on(&[&c])
        .build();
    let e = signed(&s, &e, &[human]).1;
    Scene {
        s,
        a1,
        a2,
        d1,
        d2,
        c,
        e,
    }
}

fn layer_ids(data: &Value, depth: usize) -> Vec<String> {
    data["layers"][depth]["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_keys_own_claims_and_what_rests_on_them_and_nothing_co_signed() {
    let sc = scene();
    let agent = &sc.s.keys.agent;
    let mut roots = vec![sc.a1.clone(), sc.a2.clone()];
    roots.sort();
    // By keyid, by a prefix of it and by name: the same answer.
    let by_id = sc.s.run(&["blast", "--signer", &agent.keyid]);
    assert_eq!(by_id.0, 0, "{}", by_id.1);
    for key in [&agent.keyid[..8], agent.name.as_str()] {
        let again = sc.s.run(&["blast", "--signer", key]);
        assert_eq!(again.1["data"], by_id.1["data"], "--signer {key}");
    }
    let d = &by_id.1["data"];
    assert_eq!(d["signer"]["keyid"], json!(agent.keyid), "{d}");
    assert_eq!(d["signer"]["name"], json!(agent.name), "{d}");
    assert_eq!(d["signer"]["compromised"], json!(false), "{d}");
    assert_eq!(d["signed"], json!(2), "{d}");
    assert_eq!(d["count"], json!(2), "{d}");
    assert_eq!(layer_ids(d, 0), roots, "{d}");
    assert_eq!(layer_ids(d, 1), vec![sc.d1.clone()], "{d}");
    assert_eq!(layer_ids(d, 2), vec![sc.d2.clone()], "{d}");
    assert_eq!(d["layers"][1]["claims"][0]["via"], json!(sc.a1), "{d}");
    assert_eq!(d["layers"][0]["claims"][0]["via"], Value::Null, "{d}");
    assert_eq!(d["truncated"], json!(false), "{d}");
    // A claim another trusted key co-signed stands, and so does what rests on it.
    let all = d.to_string();
    assert!(!all.contains(&sc.c), "co-signed claim taken down: {d}");
    assert!(!all.contains(&sc.e), "{d}");

    // --depth cuts the layers below the key's claims.
    let cut =
        sc.s.run(&["blast", "--signer", &agent.name, "--depth", "1"])
            .1;
    assert_eq!(cut["data"]["layers"].as_array().unwrap().len(), 2, "{cut}");
    assert_eq!(cut["data"]["truncated"], json!(true), "{cut}");

    // The text names the key and counts, and shows each claim under the one it rests on.
    let plain = ["--format", "plain", "blast", "--signer", "bot"];
    let text = common::run_raw(sc.s.dir(), &common::with_store(&sc.s.store, &plain));
    assert_eq!(text.code, 0, "{}", text.stderr);
    let t = &text.stdout;
    assert!(
        t.contains("would take down 2 claim(s) it alone signed and 2 resting on them"),
        "{t}"
    );
    assert!(t.contains(&sc.d2[..15]) && !t.contains(&sc.c[..15]), "{t}");

    // A picture: every claim taken down is a node; the co-signed one is not.
    let dot = ["--format", "dot", "blast", "--signer", "bot"];
    let dot = common::run_raw(sc.s.dir(), &common::with_store(&sc.s.store, &dot));
    assert_eq!(dot.code, 0, "{}", dot.stderr);
    assert!(dot.stdout.starts_with("digraph"), "{}", dot.stdout);
    for id in [&sc.a1, &sc.a2, &sc.d1, &sc.d2] {
        assert!(dot.stdout.contains(id.as_str()), "{id}: {}", dot.stdout);
    }
    assert!(!dot.stdout.contains(&sc.c), "{}", dot.stdout);

    // The human alone signed D1 and E; C, co-signed, stays.
    let human = sc.s.run(&["blast", "--signer", "alice"]).1;
    let mut want = vec![sc.d1.clone(), sc.e.clone()];
    want.sort();
    assert_eq!(layer_ids(&human["data"], 0), want, "{human}");
    assert!(!human["data"].to_string().contains(&sc.c), "{human}");
}

#[test]
fn an_unknown_or_ambiguous_key_and_a_signer_with_invert_or_an_id_are_refused() {
    let sc = scene();
    let unknown = sc.s.run(&["blast", "--signer", "nobody"]);
    assert_eq!(unknown.0, 5, "{}", unknown.1);
    assert_eq!(
        unknown.1["error"]["code"],
        json!("KEY_NOT_FOUND"),
        "{}",
        unknown.1
    );
    assert!(unknown.1.to_string().contains("nobody"), "{}", unknown.1);

    // Two keys of one name: the name is ambiguous, and both are listed.
    let twin = KeyPair::in_memory(
        "agent",
        "bot",
        ed25519_dalek::SigningKey::from_bytes(&[0x55; 32]),
    )
    .write_files(&sc.s.dir().join("twin"));
    let added = sc.s.run(&[
        "keys",
        "add",
        "--role",
        "agent",
        "--name",
        "bot",
        twin.public.to_str().unwrap(),
    ]);
    assert_eq!(added.0, 0, "{}", added.1);
    let bot = sc.s.run(&["blast", "--signer", "bot"]);
    assert_eq!(bot.0, 2, "{}", bot.1);
    assert_eq!(bot.1["error"]["code"], json!("BAD_ARGUMENTS"), "{}", bot.1);
    let m = bot.1.to_string();
    assert!(
        m.contains("\\\"bot\\\"") && m.contains(&twin.keyid) && m.contains(&sc.s.keys.agent.keyid),
        "{m}"
    );

    for args in [
        vec!["blast", "--signer", "bot", "--invert"],
        vec!["blast", &sc.a1, "--signer", "bot"],
        vec!["blast"],
    ] {
        let (code, out) = sc.s.run(&args);
        assert_eq!(code, 2, "{args:?}: {out}");
        assert_eq!(
            out["error"]["code"],
            json!("BAD_ARGUMENTS"),
            "{args:?}: {out}"
        );
    }
}
