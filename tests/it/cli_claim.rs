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

use crate::common;

use common::{
    command, elench, elench_with_stdin, export_bundle, fresh_name, init_store_trusting, make_keys,
    with_store, KeyPair, KeyedStore, Keys,
};
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

// ---------------------------------------------------------------------------------------
// A world: one set of keys, a tree to make claims about, and as many stores as a test needs.
// ---------------------------------------------------------------------------------------

struct World {
    tmp: tempfile::TempDir,
    keys: Keys,
    /// The directory the claims are about.
    tree: PathBuf,
}

impl World {
    fn new() -> World {
        let tmp = tempfile::tempdir().unwrap();
        let keys = make_keys(tmp.path());
        let tree = tmp.path().join("tree");
        std::fs::create_dir_all(tree.join("src")).unwrap();
        std::fs::write(
            tree.join("src/lib.rs"),
            "pub fn parse(s: &str) -> Option<u8> {\n    s.bytes().next()\n}\n",
        )
        .unwrap();
        World { tmp, keys, tree }
    }

    fn dir(&self) -> &Path {
        self.tmp.path()
    }

    /// A fresh store trusting the three keys.
    fn store(&self, name: &str) -> PathBuf {
        let store = self.dir().join(name);
        init_store_trusting(
            self.dir(),
            &store,
            &[&self.keys.harness, &self.keys.agent, &self.keys.human],
        );
        store
    }

    fn run(&self, store: &Path, args: &[&str]) -> (i32, Value) {
        elench(self.dir(), &with_store(store, args))
    }

    /// `elench claim ARGS… --at TREE --key KEY` against `store`; asserts success, returns
    /// the report.
    fn claim(&self, store: &Path, key: &KeyPair, args: &[&str]) -> Value {
        let mut line: Vec<&str> = vec!["claim"];
        line.extend_from_slice(args);
        line.extend_from_slice(&["--at", p(&self.tree), "--key", p(&key.private)]);
        let (code, json) = self.run(store, &line);
        assert_eq!(code, 0, "claim failed: {json}");
        json
    }

    /// The id of the one claim `claim` made.
    fn claim_id(&self, store: &Path, key: &KeyPair, args: &[&str]) -> String {
        let json = self.claim(store, key, args);
        assert_eq!(json["data"]["created"], json!(1), "{json}");
        json["data"]["id"].as_str().unwrap().to_owned()
    }

    /// The file flow: the claim JSON written out, `sign` (with `--anchor` when given), then
    /// `add`. Returns the id `sign` reported.
    fn sign_and_add(
        &self,
        store: &Path,
        key: &KeyPair,
        claim: &Value,
        anchor: Option<&str>,
    ) -> String {
        let path = self.dir().join(fresh_name("claim", "json"));
        std::fs::write(&path, serde_json::to_vec_pretty(claim).unwrap()).unwrap();
        let out = self.dir().join(fresh_name("envelope", "dsse"));
        let mut line = vec!["sign", p(&path), "--key", p(&key.private), "-o", p(&out)];
        if let Some(spec) = anchor {
            line.extend_from_slice(&["--anchor", spec, "--at", p(&self.tree)]);
        }
        let (code, json) = self.run(store, &line);
        assert_eq!(code, 0, "sign failed: {json}");
        let id = json["data"]["id"].as_str().unwrap().to_owned();
        let (code, json) = self.run(store, &["add", p(&out)]);
        assert_eq!(code, 0, "add failed: {json}");
        assert_eq!(json["data"]["created"], json!(1), "{json}");
        id
    }

    fn tree_oid(&self) -> String {
        let (code, json) = elench(self.dir(), &["tree", p(&self.tree)]);
        assert_eq!(code, 0, "{json}");
        json["data"]["tree"].as_str().unwrap().to_owned()
    }

    /// `status` of `ids` and `blast` of each, `data` only (meta holds timings).
    fn standing(&self, store: &Path, ids: &[String]) -> Value {
        let mut args = vec!["status"];
        args.extend(ids.iter().map(String::as_str));
        let (code, status) = self.run(store, &args);
        assert_eq!(code, 0, "{status}");
        let blasts: Vec<Value> = ids
            .iter()
            .map(|id| {
                let (code, blast) = self.run(store, &["blast", id]);
                assert_eq!(code, 0, "{blast}");
                blast["data"].clone()
            })
            .collect();
        json!({"status": status["data"], "blast": blasts})
    }
}

const T: i64 = 1_700_000_000;

fn ts(n: i64) -> String {
    (T + n).to_string()
}

/// The five claims of the chain, one `elench claim` call each. Returns their ids.
fn five_by_claim(w: &World, store: &Path) -> Vec<String> {
    let k = &w.keys;
    let first = w.claim_id(
        store,
        &k.agent,
        &[
            "parse reads the first byte",
            "--predicate",
            "exists(\"src/lib.rs\")",
            "--anchor",
            "src/lib.rs:1-3",
            "--timestamp",
            &ts(1),
        ],
    );
    // Prefixes, as an agent would copy them from the last answer.
    let short = &first[..10];
    let second = w.claim_id(
        store,
        &k.agent,
        &[
            "callers may rely on it",
            "--depends-on",
            short,
            "--timestamp",
            &ts(2),
        ],
    );
    let falsified = w.claim_id(
        store,
        &k.harness,
        &[
            "the predicate failed",
            "--kind",
            "falsification",
            "--target",
            short,
            "--evidence",
            "process-exit:1",
            "--timestamp",
            &ts(3),
        ],
    );
    let verified = w.claim_id(
        store,
        &k.harness,
        &[
            "--kind",
            "verification",
            "--target",
            &second[..12],
            "--timestamp",
            &ts(4),
        ],
    );
    let accepted = w.claim_id(
        store,
        &k.human,
        &[
            "known residue",
            "--kind",
            "residue-acceptance",
            "--target",
            &second,
            "--timestamp",
            &ts(5),
        ],
    );
    vec![first, second, falsified, verified, accepted]
}

/// The same five claims written as JSON, signed with `sign` and added with `add`.
fn five_by_files(w: &World, store: &Path) -> Vec<String> {
    let k = &w.keys;
    let whole = json!({"tree": w.tree_oid(), "strategy": "multi"});
    let claim = |kind: &str, text: Option<&str>, origin: &str, producer: &str, n: i64| {
        let mut assertion = json!({"form": "annotation"});
        if let Some(t) = text {
            assertion["text"] = json!(t);
        }
        json!({
            "kind": kind,
            "assertion": assertion,
            "origin": {"kind": origin, "producer": {"id": producer}},
            "anchor": whole,
            "timestamp": T + n,
        })
    };
    let mut first = claim(
        "assertion",
        Some("parse reads the first byte"),
        "agent-asserted",
        "bot",
        1,
    );
    first["assertion"]["form"] = json!("predicate");
    first["assertion"]["expression"] =
        json!({"language": "elench-predicate-v1", "source": "exists(\"src/lib.rs\")"});
    let first = w.sign_and_add(store, &k.agent, &first, Some("src/lib.rs:1-3"));
    let mut second = claim(
        "assertion",
        Some("callers may rely on it"),
        "agent-asserted",
        "bot",
        2,
    );
    second["dependsOn"] = json!([first]);
    let second = w.sign_and_add(store, &k.agent, &second, None);
    let mut falsified = claim(
        "falsification",
        Some("the predicate failed"),
        "harness-observed",
        "ci",
        3,
    );
    // An observation states its target's inputs at the tree it observed (what `claim`
    // adds): the file the predicate reads, and the whole tree for a claim about it.
    let ids = elench::tree::list(&w.tree, elench::tree::Selection::Committed)
        .unwrap()
        .ids()
        .unwrap();
    let reads = elench::anchor::inputs::reads_of(
        &elench::claim::predicate::parse("exists(\"src/lib.rs\")").unwrap(),
    );
    let inputs_of_first = elench::anchor::inputs::digest(&reads, &ids);
    let whole_tree = w.tree_oid();
    let inputs = |target: &str, digest: &str| {
        json!({"kind": "artifact-digest", "digest": digest,
               "uri": format!("elench:inputs:{target}")})
    };
    falsified["target"] = json!([first]);
    falsified["evidence"] = json!([{"kind": "process-exit", "exitCode": 1},
                                   inputs(&first, &inputs_of_first)]);
    let falsified = w.sign_and_add(store, &k.harness, &falsified, None);
    let mut verified = claim("verification", None, "harness-observed", "ci", 4);
    verified["target"] = json!([second]);
    verified["evidence"] = json!([inputs(&second, &whole_tree)]);
    let verified = w.sign_and_add(store, &k.harness, &verified, None);
    let mut accepted = claim(
        "residue-acceptance",
        Some("known residue"),
        "human-asserted",
        "alice",
        5,
    );
    accepted["target"] = json!([second]);
    accepted["evidence"] = json!([inputs(&second, &whole_tree)]);
    let accepted = w.sign_and_add(store, &k.human, &accepted, None);
    vec![first, second, falsified, verified, accepted]
}

#[test]
fn five_claims_by_claim_by_batch_and_by_files_are_the_same_log() {
    let w = World::new();
    let by_claim = w.store("by-claim");
    let by_batch = w.store("by-batch");
    let by_files = w.store("by-files");

    let ids = five_by_claim(&w, &by_claim);
    let file_ids = five_by_files(&w, &by_files);
    assert_eq!(ids, file_ids, "the same claims get the same ids");

    // One call: the chain as JSON Lines, @N naming an earlier line.
    let batch = [
        json!({"text": "parse reads the first byte", "predicate": "exists(\"src/lib.rs\")",
               "anchor": ["src/lib.rs:1-3"], "timestamp": T + 1}),
        json!({"text": "callers may rely on it", "depends_on": ["@1"], "timestamp": T + 2}),
        json!({"text": "the predicate failed", "kind": "falsification", "target": ["@1"],
               "evidence": ["process-exit:1"], "timestamp": T + 3}),
        json!({"kind": "verification", "target": ["@2"], "timestamp": T + 4}),
        json!({"text": "known residue", "kind": "residue-acceptance", "target": ["@2"],
               "timestamp": T + 5}),
    ];
    // Three keys given; the falsification names its signer, the verification and the
    // residue acceptance get the key of the role they need.
    let mut lines = batch.to_vec();
    lines[2]["signer"] = json!("harness");
    let text: String = lines.iter().map(|v| format!("{v}\n")).collect();
    let (code, json) = elench_with_stdin(
        w.dir(),
        &with_store(
            &by_batch,
            &[
                "claim",
                "--batch",
                "-",
                "--at",
                p(&w.tree),
                "--key",
                p(&w.keys.agent.private),
                "--key",
                p(&w.keys.harness.private),
                "--key",
                p(&w.keys.human.private),
            ],
        ),
        text.as_bytes(),
    );
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["data"]["created"], json!(5), "{json}");
    let got: Vec<&str> = json["data"]["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(got, ids, "{json}");
    let row = &json["data"]["claims"][1];
    assert_eq!(row["line"], json!(2), "{json}");
    assert_eq!(row["signer"], json!(w.keys.agent.keyid), "{json}");
    assert_eq!(
        json["data"]["claims"][4]["signer"],
        json!(w.keys.human.keyid),
        "{json}"
    );
    assert_eq!(
        json["data"]["claims"][3]["signer"],
        json!(w.keys.harness.keyid),
        "{json}"
    );
    // The status after the whole group: the falsification came in the same call.
    assert_eq!(
        json["data"]["claims"][0]["status"],
        json!("falsified"),
        "{json}"
    );

    // status and blast answer the same in all three stores, and the logs hold the same
    // envelopes, byte for byte, in the same order.
    let want = w.standing(&by_files, &ids);
    assert_eq!(w.standing(&by_claim, &ids), want);
    assert_eq!(w.standing(&by_batch, &ids), want);
    let files_log = export_bundle(w.dir(), &by_files);
    assert_eq!(export_bundle(w.dir(), &by_claim), files_log);
    assert_eq!(export_bundle(w.dir(), &by_batch), files_log);
    // And the standing is the one the records make.
    let (_, status) = w.run(&by_claim, &["status", &ids[0], &ids[1]]);
    assert_eq!(
        status["data"]["claims"][0]["status"],
        json!("falsified"),
        "{status}"
    );
    assert_eq!(
        status["data"]["claims"][1]["status"],
        json!("revoked"),
        "{status}"
    );
}

#[test]
fn a_batch_chains_claims_with_at_n_in_one_group() {
    let w = World::new();
    let store = w.store("s");
    let text = [
        json!({"text": "a", "anchor": "src/lib.rs:2", "timestamp": T}),
        json!({"text": "b", "depends_on": ["@1"], "timestamp": T}),
        json!({"text": "c", "depends_on": ["@1", "@2"], "timestamp": T}),
    ]
    .iter()
    .map(|v| format!("{v}\n"))
    .collect::<String>();
    let path = w.dir().join("chain.jsonl");
    std::fs::write(&path, &text).unwrap();
    let json = w.claim(&store, &w.keys.agent, &["--batch", p(&path)]);
    let claims = json["data"]["claims"].as_array().unwrap();
    assert_eq!(claims.len(), 3, "{json}");
    let ids: Vec<String> = claims
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect();
    // The first claim's blast holds the other two: the chain is in dependsOn.
    let (code, blast) = w.run(&store, &["blast", &ids[0]]);
    assert_eq!(code, 0, "{blast}");
    assert_eq!(blast["data"]["count"], json!(2), "{blast}");
    let (_, shown) = w.run(&store, &["show", &ids[2]]);
    let shown = shown.to_string();
    assert!(
        shown.contains(&ids[0]) && shown.contains(&ids[1]),
        "{shown}"
    );
}

#[test]
fn claim_with_a_timestamp_is_the_envelope_sign_writes() {
    let w = World::new();
    let store = w.store("s");
    // The dry run shows the envelope `claim` would append; `sign -o -` of the same claim
    // written as JSON gives the same bytes.
    let (code, json) = w.run(
        &store,
        &[
            "claim",
            "the first byte",
            "--anchor",
            "src/lib.rs:1-3",
            "--producer",
            "model-7",
            "--session",
            "s-1",
            "--evidence",
            "test-report:sha256:00ff",
            "--timestamp",
            &ts(9),
            "--at",
            p(&w.tree),
            "--key",
            p(&w.keys.agent.private),
            "--dry-run",
        ],
    );
    assert_eq!(code, 0, "{json}");
    let row = &json["data"]["claims"][0];
    let from_claim = format!("{}\n", row["envelope"]);
    let hand = json!({
        "timestamp": T + 9,
        "kind": "assertion",
        "assertion": {"text": "the first byte", "form": "annotation"},
        "origin": {"kind": "agent-asserted", "producer": {"id": "model-7", "sessionId": "s-1"}},
        "evidence": [{"kind": "test-report", "digest": "sha256:00ff"}],
        "anchor": {"strategy": "multi"},
    });
    let path = w.dir().join("hand.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&hand).unwrap()).unwrap();
    let out = command(w.dir())
        .args(with_store(
            &store,
            &[
                "sign",
                p(&path),
                "--key",
                p(&w.keys.agent.private),
                "--anchor",
                "src/lib.rs:1-3",
                "--at",
                p(&w.tree),
                "-o",
                "-",
            ],
        ))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), from_claim);
    // The dry run appended nothing; the real call appends exactly that envelope.
    assert_eq!(export_bundle(w.dir(), &store), b"");
    let id = w.claim_id(
        &store,
        &w.keys.agent,
        &[
            "the first byte",
            "--anchor",
            "src/lib.rs:1-3",
            "--producer",
            "model-7",
            "--session",
            "s-1",
            "--evidence",
            "test-report:sha256:00ff",
            "--timestamp",
            &ts(9),
        ],
    );
    assert_eq!(json!(id), row["id"]);
    assert_eq!(
        String::from_utf8(export_bundle(w.dir(), &store)).unwrap(),
        from_claim
    );
}

#[test]
fn id_only_prints_the_id_and_the_producer_comes_from_the_environment() {
    let w = World::new();
    let store = w.store("s");
    let out = command(w.dir())
        .env("ELENCH_PRODUCER", "model-from-env")
        .env("ELENCH_KEY", &w.keys.agent.private)
        .args(with_store(
            &store,
            &[
                "claim",
                "x",
                "--at",
                p(&w.tree),
                "--id-only",
                "--timestamp",
                &ts(0),
            ],
        ))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let id = stdout.trim_end();
    assert!(
        id.starts_with("cl_") && id.len() == 67 && stdout.ends_with('\n'),
        "{stdout:?}"
    );
    let (_, status) = w.run(&store, &["status", id]);
    assert_eq!(
        status["data"]["claims"][0]["producer"],
        json!("model-from-env"),
        "{status}"
    );
}

#[test]
fn a_premise_the_store_lacks_is_allowed_with_a_warning_a_target_is_not() {
    let w = World::new();
    let store = w.store("s");
    let absent = format!("cl_{}", "ab".repeat(32));
    let json = w.claim(&store, &w.keys.agent, &["x", "--depends-on", &absent]);
    let codes: Vec<&str> = json["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["MISSING_PREMISE"], "{json}");
    let before = export_bundle(w.dir(), &store);
    let (code, json) = w.run(
        &store,
        &[
            "claim",
            "--kind",
            "falsification",
            "--target",
            &absent,
            "--at",
            p(&w.tree),
            "--key",
            p(&w.keys.agent.private),
        ],
    );
    assert_eq!(code, 5, "{json}");
    assert_eq!(json["error"]["code"], json!("NOT_FOUND"), "{json}");
    assert_eq!(export_bundle(w.dir(), &store), before);
}

// ---------------------------------------------------------------------------------------
// Refusals: each appends nothing.
// ---------------------------------------------------------------------------------------

/// Runs `claim ARGS… --at TREE --key KEY`, which must fail with exit `exit` and `code`,
/// leaving the store's export as it was. Returns the error object.
fn refused(w: &World, store: &Path, key: &KeyPair, args: &[&str], exit: i32, code: &str) -> Value {
    let before = export_bundle(w.dir(), store);
    let mut line: Vec<&str> = vec!["claim"];
    line.extend_from_slice(args);
    line.extend_from_slice(&["--at", p(&w.tree), "--key", p(&key.private)]);
    let (got, json) = w.run(store, &line);
    assert_eq!(got, exit, "{json}");
    assert_eq!(json["error"]["code"], json!(code), "{json}");
    assert_eq!(export_bundle(w.dir(), store), before, "nothing is appended");
    json["error"].clone()
}

/// Two timestamps whose claims (agent key `bot`, text "x", whole tree `tree`) share the
/// first four hex digits of their ids, found with the library's own draft.
fn colliding_timestamps(tree: &str) -> (i64, i64, String) {
    use elench::claim::draft::Draft;
    use elench::claim::{Kind, OriginKind};
    let mut seen = std::collections::HashMap::new();
    for t in 0..100_000i64 {
        let mut anchor = serde_json::Map::new();
        anchor.insert("tree".into(), json!(tree));
        anchor.insert("strategy".into(), json!("multi"));
        let d = Draft {
            kind: Kind::Assertion,
            text: Some("x".into()),
            predicate: None,
            anchor,
            depends_on: vec![],
            target: vec![],
            evidence: vec![],
            origin: OriginKind::AgentAsserted,
            producer: "bot".into(),
            session: None,
            timestamp: t,
        };
        let id = d.build().unwrap().0.id;
        let prefix = id[..7].to_owned();
        if let Some(other) = seen.insert(prefix.clone(), t) {
            return (other, t, prefix);
        }
    }
    panic!("no two ids share four hex digits in 100,000 claims");
}

#[test]
fn an_ambiguous_or_unknown_prefix_appends_nothing() {
    let w = World::new();
    let store = w.store("s");
    let (t1, t2, prefix) = colliding_timestamps(&w.tree_oid());
    let a = w.claim_id(
        &store,
        &w.keys.agent,
        &["x", "--timestamp", &t1.to_string()],
    );
    let b = w.claim_id(
        &store,
        &w.keys.agent,
        &["x", "--timestamp", &t2.to_string()],
    );
    assert!(a.starts_with(&prefix) && b.starts_with(&prefix));
    let err = refused(
        &w,
        &store,
        &w.keys.agent,
        &["y", "--depends-on", &prefix],
        2,
        "AMBIGUOUS_ID",
    );
    let mut candidates: Vec<&str> = err["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    candidates.sort();
    let mut want = [a.as_str(), b.as_str()];
    want.sort();
    assert_eq!(candidates, want, "{err}");
    // A prefix that matches nothing, as a premise and as a target.
    let unknown = if prefix.starts_with("cl_0") {
        "cl_ffff"
    } else {
        "cl_0000"
    };
    refused(
        &w,
        &store,
        &w.keys.agent,
        &["y", "--depends-on", unknown],
        5,
        "NOT_FOUND",
    );
    refused(
        &w,
        &store,
        &w.keys.harness,
        &["--kind", "verification", "--target", unknown],
        5,
        "NOT_FOUND",
    );
}

#[test]
fn a_predicate_that_does_not_parse_names_line_and_column_and_appends_nothing() {
    let w = World::new();
    let store = w.store("s");
    let err = refused(
        &w,
        &store,
        &w.keys.agent,
        &["p", "--predicate", "exists(\"src/lib.rs\") &&\n  exists("],
        2,
        "PREDICATE_PARSE_ERROR",
    );
    let message = err["message"].as_str().unwrap();
    assert!(message.contains("line 2, column"), "{err}");
    assert_eq!(
        err["pointer"],
        json!("/assertion/expression/source"),
        "{err}"
    );
}

#[test]
fn a_role_the_key_does_not_have_appends_nothing() {
    let w = World::new();
    let store = w.store("s");
    let target = w.claim_id(&store, &w.keys.agent, &["x"]);
    // A verification needs a harness key; a residue acceptance a human one.
    let err = refused(
        &w,
        &store,
        &w.keys.agent,
        &["--kind", "verification", "--target", &target],
        2,
        "ROLE_VIOLATION",
    );
    assert!(
        err["message"].as_str().unwrap().contains("harness"),
        "{err}"
    );
    refused(
        &w,
        &store,
        &w.keys.harness,
        &["--kind", "residue-acceptance", "--target", &target],
        2,
        "ROLE_VIOLATION",
    );
    // A key the store does not trust signs nothing it could add.
    let stranger = common::make_key(w.dir(), "agent", "stranger");
    refused(&w, &store, &stranger, &["x"], 2, "UNTRUSTED_SIGNER");
}

#[test]
fn a_bad_batch_line_appends_nothing_and_names_line_and_field() {
    let w = World::new();
    let store = w.store("s");
    let cases: [(&str, i32, &str, &str); 5] = [
        // An earlier line is fine; line 2 names a line that is not before it.
        (
            "{\"text\":\"a\"}\n{\"text\":\"b\",\"depends_on\":[\"@2\"]}\n",
            2,
            "BAD_ARGUMENTS",
            "line 2, depends_on",
        ),
        (
            "{\"text\":\"a\"}\n{\"text\":\"b\",\"predicate\":\"exists(\"}\n",
            2,
            "PREDICATE_PARSE_ERROR",
            "line 2, predicate",
        ),
        (
            "{\"text\":\"a\"}\n{\"text\":\"b\",\"evidence\":[\"vibes\"]}\n",
            2,
            "BAD_ARGUMENTS",
            "line 2, evidence",
        ),
        (
            "{\"text\":\"a\"}\n{\"text\":\"b\",\"kind\":\"verification\",\"target\":[\"@1\"]}\n",
            2,
            "ROLE_VIOLATION",
            "line 2, kind",
        ),
        (
            "{\"text\":\"a\"}\n{\"txet\":\"b\"}\n",
            2,
            "BAD_ARGUMENTS",
            "line 2",
        ),
    ];
    for (text, exit, code, place) in cases {
        let path = w.dir().join(fresh_name("batch", "jsonl"));
        std::fs::write(&path, text).unwrap();
        let err = refused(
            &w,
            &store,
            &w.keys.agent,
            &["--batch", p(&path)],
            exit,
            code,
        );
        assert!(
            err["message"].as_str().unwrap().contains(place),
            "{place}: {err}"
        );
    }
}

#[test]
fn arguments_that_are_no_claim_or_two_anchors_append_nothing() {
    let w = World::new();
    let store = w.store("s");
    w.claim_id(&store, &w.keys.agent, &["x"]);
    // A path where an id belongs is refused before anything is looked up.
    let err = refused(
        &w,
        &store,
        &w.keys.agent,
        &["y", "--depends-on", "../cl_0000"],
        2,
        "INVALID_AGENT_INPUT",
    );
    assert_eq!(err["rejected_pattern"], json!("path_traversal"), "{err}");
    // A claim has one anchor; a record needs a target; an assertion says something.
    let err = refused(
        &w,
        &store,
        &w.keys.agent,
        &["y", "--anchor", "src/lib.rs:1", "--anchor", "src/lib.rs:2"],
        2,
        "BAD_ARGUMENTS",
    );
    assert!(
        err["message"].as_str().unwrap().contains("one anchor"),
        "{err}"
    );
    refused(
        &w,
        &store,
        &w.keys.agent,
        &["y", "--kind", "falsification"],
        2,
        "SCHEMA_VIOLATION",
    );
    refused(&w, &store, &w.keys.agent, &["  "], 2, "SCHEMA_VIOLATION");
    // A file the tree does not hold cannot be anchored.
    refused(
        &w,
        &store,
        &w.keys.agent,
        &["y", "--anchor", "src/nope.rs"],
        2,
        "IO_ERROR",
    );
}

#[test]
fn a_claim_larger_than_an_envelope_may_be_is_too_large_and_appends_nothing() {
    let w = World::new();
    let store = w.store("s");
    let line = json!({"text": "big", "producer": "p".repeat(1_100_000)});
    let path = w.dir().join("big.jsonl");
    std::fs::write(&path, format!("{{\"text\":\"small\"}}\n{line}\n")).unwrap();
    let err = refused(
        &w,
        &store,
        &w.keys.agent,
        &["--batch", p(&path)],
        2,
        "TOO_LARGE",
    );
    assert_eq!(err["line"], json!(2), "{err}");
}

/// A file git tracks that ignore rules leave out of the tree: `claim` warns
/// `TRACKED_IGNORED` in the very words `tree` uses for the same directory (one message, from
/// one place), naming the file and what to do.
#[test]
fn claim_warns_tracked_ignored_in_the_words_tree_uses() {
    let ks = KeyedStore::new();
    let repo = ks.dir().join("repo");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::create_dir_all(repo.join("gen")).unwrap();
    std::fs::write(repo.join("src/a.rs"), "fn a() {}\n").unwrap();
    std::fs::write(repo.join("gen/out.rs"), "generated\n").unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .current_dir(&repo)
            .env("HOME", ks.dir())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .args(args)
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    // Tracked first, ignored after: git still commits gen/out.rs.
    std::fs::write(repo.join(".gitignore"), "gen/\n").unwrap();
    let tracked_ignored = |json: &Value| -> Vec<String> {
        json["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["code"] == "TRACKED_IGNORED")
            .map(|w| w["message"].as_str().unwrap().to_owned())
            .collect()
    };
    let home = |args: &[&str]| {
        let out = command(ks.dir())
            .env("HOME", ks.dir())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .args(with_store(&ks.store, args))
            .output()
            .expect("elench runs");
        let json: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
        assert_eq!(out.status.code(), Some(0), "{json}");
        json
    };
    let by_tree = tracked_ignored(&home(&["tree", p(&repo)]));
    let by_claim = tracked_ignored(&home(&[
        "claim",
        "a is small",
        "--anchor",
        "src/a.rs",
        "--at",
        p(&repo),
        "--key",
        p(&ks.keys.agent.private),
    ]));
    assert_eq!(by_tree.len(), 1, "{by_tree:?}");
    assert!(by_tree[0].contains("(first: gen/out.rs)"), "{by_tree:?}");
    assert_eq!(by_claim, by_tree, "one message for one warning");
}
