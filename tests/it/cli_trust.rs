//! Trust policies through the binary: `init --root-key`, `trust sign | show | pin`, `add`
//! of policies, and every case that fails closed, each leaving the store as it was.

use crate::common;

use common::{fixed_key, have_git, run, write_trust_toml, ClaimBuilder, KeyPair, Out};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Root keys r1..r3, a harness key and an agent key, with their files.
struct Team {
    dir: PathBuf,
    roots: Vec<KeyPair>,
    harness: KeyPair,
    agent: KeyPair,
}

impl Team {
    fn new(dir: &Path) -> Team {
        let k = dir.join("keys");
        Team {
            dir: dir.to_path_buf(),
            roots: (0..3)
                .map(|i| fixed_key(&k, "human", &format!("root{}", i + 1), 0x60 + i))
                .collect(),
            harness: fixed_key(&k, "harness", "ci", 0x71),
            agent: fixed_key(&k, "agent", "bot", 0x72),
        }
    }

    /// A trust.toml with these roots (indices), threshold and keys (pairs), written to
    /// `name`.
    fn toml(
        &self,
        name: &str,
        roots: &[usize],
        threshold: u64,
        keys: &[&KeyPair],
        extra: &str,
    ) -> PathBuf {
        let roots: Vec<&KeyPair> = roots.iter().map(|&i| &self.roots[i]).collect();
        let path = self.dir.join(name);
        write_trust_toml(&path, "example.org/team", &roots, threshold, keys, extra);
        path
    }

    /// A store at `name`, pinning the roots given.
    fn store(&self, name: &str, pins: &[usize]) -> PathBuf {
        let store = self.dir.join(name);
        let mut args = vec!["init".to_owned()];
        for &i in pins {
            args.push("--root-key".into());
            args.push(self.roots[i].public.to_str().unwrap().into());
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(&store, &refs);
        assert_eq!(out.code, 0, "{}", out.json);
        store
    }
}

fn sign(store: &Path, input: &Path, root: &KeyPair, out: &Path, extra: &[&str]) -> Out {
    let mut args = vec![
        "trust",
        "sign",
        input.to_str().unwrap(),
        "--key",
        root.private.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run(store, &args)
}

fn ok(o: Out) -> Out {
    assert_eq!(o.code, 0, "{}\n{}", o.json, o.stderr);
    o
}

fn add(store: &Path, file: &Path) -> Out {
    run(store, &["add", file.to_str().unwrap()])
}

/// Signs `input` with `root` into `out` and appends it to `store`; it must succeed.
fn sign_and_append(store: &Path, input: &Path, root: &KeyPair, out: &Path) -> Out {
    ok(sign(store, input, root, out, &["--append"]))
}

/// Runs `gate` on `store` over an empty tree with a policy that asks for nothing in scope,
/// so only the trust state can make it fail.
fn gate_on_an_empty_tree(dir: &Path, store: &Path) -> Out {
    let policy = dir.join("gate.toml");
    std::fs::write(&policy, "[rules]\nmin_in_scope = 0\n").unwrap();
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    run(
        store,
        &[
            "gate",
            "--policy",
            policy.to_str().unwrap(),
            "--at",
            work.to_str().unwrap(),
        ],
    )
}

/// Asserts that the gate on `store` (see [`gate_on_an_empty_tree`]) fails, naming `rule`.
fn assert_the_gate_fails(dir: &Path, store: &Path, rule: &str) {
    let g = gate_on_an_empty_tree(dir, store);
    assert_eq!(g.code, 79, "{}", g.json);
    assert!(g.json["data"].to_string().contains(rule), "{}", g.json);
}

/// Everything a refusal must leave as it was: the trust state and the exported log.
fn snapshot(store: &Path) -> (Value, Vec<u8>, Value) {
    let show = ok(run(store, &["trust", "show"])).json["data"].clone();
    let bundle = store.with_extension("snap.jsonl");
    ok(run(store, &["export", "-o", bundle.to_str().unwrap()]));
    let keys = ok(run(store, &["keys", "list"])).json["data"].clone();
    (show, std::fs::read(&bundle).unwrap(), keys)
}

/// Adds `file` to `store` and asserts it refused as [`refused`] does.
fn add_refused(
    store: &Path,
    before: &(Value, Vec<u8>, Value),
    file: &Path,
    code: &str,
    names: &[&str],
) {
    refused(store, before, &add(store, file), code, names);
}

/// Asserts `o` refused with `code`, naming each of `names`, and `store` is unchanged.
fn refused(store: &Path, before: &(Value, Vec<u8>, Value), o: &Out, code: &str, names: &[&str]) {
    assert_eq!(o.code, 2, "{}", o.json);
    let text = o.json.to_string();
    assert!(text.contains(code), "expected {code}: {}", o.json);
    for n in names {
        assert!(text.contains(n), "expected {n} named: {}", o.json);
    }
    assert_eq!(&snapshot(store), before, "the refusal changed the store");
}

/// A claim signed by `key` (harness-observed for a harness key, agent-asserted else).
fn claim_file(dir: &Path, key: &KeyPair, text: &str) -> (PathBuf, String) {
    let origin = if key.role == "harness" {
        "harness-observed"
    } else {
        "agent-asserted"
    };
    let claim = ClaimBuilder::assertion(text).origin(origin).build();
    let id = common::claim_id(&common::with_computed_id(&claim));
    let env = common::envelope_text(&common::with_computed_id(&claim), key);
    let path = dir.join(common::fresh_name("claim", "dsse"));
    std::fs::write(&path, env).unwrap();
    (path, id)
}

/// A policy envelope of an arbitrary Statement, signed by `keys` (to build what `trust sign`
/// would refuse to).
fn raw_policy(dir: &Path, statement: &Value, keys: &[&KeyPair]) -> PathBuf {
    use base64::Engine;
    let payload = elench::jcs::canonical(statement).unwrap();
    let sigs: Vec<Value> = keys
        .iter()
        .map(|k| {
            use ed25519_dalek::Signer;
            let sig = k
                .signing
                .sign(&elench::envelope::pae(elench::envelope::PAYLOAD_TYPE, &payload));
            json!({"keyid": k.keyid, "sig": base64::engine::general_purpose::STANDARD.encode(sig.to_bytes())})
        })
        .collect();
    let env = json!({"payloadType": elench::envelope::PAYLOAD_TYPE,
                     "payload": base64::engine::general_purpose::STANDARD.encode(&payload),
                     "signatures": sigs});
    let path = dir.join(common::fresh_name("raw-policy", "dsse"));
    std::fs::write(&path, env.to_string()).unwrap();
    path
}

/// The Statement inside a policy envelope file.
fn statement_of(file: &Path) -> Value {
    use base64::Engine;
    let env: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    let payload = base64::engine::general_purpose::STANDARD
        .decode(env["payload"].as_str().unwrap())
        .unwrap();
    serde_json::from_slice(&payload).unwrap()
}

#[test]
fn a_pinned_store_takes_the_chain_and_trusts_its_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let t = Team::new(tmp.path());
    let s = t.store("s", &[0]);
    // Before any policy, the harness key is not trusted.
    let (claim, id) = claim_file(tmp.path(), &t.harness, "suite passed");
    assert_eq!(
        add(&s, &claim).json["error"]["code"],
        json!("UNTRUSTED_SIGNER")
    );

    let v1 = t.toml("v1.toml", &[0], 1, &[&t.harness], "");
    let out = sign_and_append(&s, &v1, &t.roots[0], &tmp.path().join("v1.dsse"));
    assert_eq!(out.json["data"]["version"], json!(1));
    assert_eq!(out.json["data"]["appended"]["effect"], json!("created"));
    let show = ok(run(&s, &["trust", "show"])).json;
    assert_eq!(show["data"]["in_force"]["version"], json!(1), "{show}");
    assert_eq!(
        show["data"]["in_force"]["keys"][0]["keyid"],
        json!(t.harness.keyid)
    );
    let out = ok(add(&s, &claim));
    assert_eq!(out.json["data"]["created"], json!(1), "{}", out.json);

    // Version 2 adds the agent key; version 3 drops the harness key, which is retired.
    let v2 = t.toml("v2.toml", &[0], 1, &[&t.harness, &t.agent], "");
    sign_and_append(&s, &v2, &t.roots[0], &tmp.path().join("v2.dsse"));
    let v3 = t.toml("v3.toml", &[0], 1, &[&t.agent], "");
    sign_and_append(&s, &v3, &t.roots[0], &tmp.path().join("v3.dsse"));
    let keys = ok(run(&s, &["keys", "list"])).json;
    let text = keys.to_string();
    assert!(text.contains(&t.agent.keyid), "{keys}");
    let (claim2, _) = claim_file(tmp.path(), &t.harness, "another run");
    assert_eq!(
        add(&s, &claim2).code,
        2,
        "a dropped key verifies nothing new"
    );
    // What it signed before stays.
    assert_eq!(
        ok(run(&s, &["status", &id])).json["data"]["claims"][0]["status"],
        json!("unevaluated")
    );
    let (by_agent, agent_id) = claim_file(tmp.path(), &t.agent, "the agent's");
    ok(add(&s, &by_agent));

    // A fresh store pinned to the root takes the exported bundle: policies first, then the
    // agent's claim (its key trusted by the policies read before it); the harness's claim
    // is refused there, its key dropped before that store ever trusted it.
    let bundle = tmp.path().join("all.intoto.jsonl");
    ok(run(&s, &["export", "-o", bundle.to_str().unwrap()]));
    let fresh = t.store("fresh", &[0]);
    let out = add(&fresh, &bundle);
    assert_eq!(out.json["data"]["created"], json!(4), "{}", out.json);
    assert_eq!(out.json["data"]["rejected"], json!(1), "{}", out.json);
    assert_eq!(
        ok(run(&fresh, &["trust", "show"])).json["data"]["in_force"]["version"],
        json!(3)
    );
    ok(run(&fresh, &["status", &agent_id]));
}

#[test]
fn no_pin_refuses_every_policy() {
    let tmp = tempfile::tempdir().unwrap();
    let t = Team::new(tmp.path());
    let maker = t.store("maker", &[0]);
    let v1 = t.toml("v1.toml", &[0], 1, &[&t.harness], "");
    let file = tmp.path().join("v1.dsse");
    ok(sign(&maker, &v1, &t.roots[0], &file, &[]));
    let s = t.store("unpinned", &[]);
    let before = snapshot(&s);
    let o = add(&s, &file);
    refused(&s, &before, &o, "POLICY_UNPINNED", &["version 1", "root1"]);
}

#[test]
fn a_first_version_whose_root_holds_no_pin_or_too_few_signatures_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let t = Team::new(tmp.path());
    let maker = t.store("maker", &[0, 1]);
    // Root r1 only, while the store pins r2.
    let v1 = t.toml("v1.toml", &[0], 1, &[&t.harness], "");
    let file = tmp.path().join("v1.dsse");
    ok(sign(&maker, &v1, &t.roots[0], &file, &[]));
    let s = t.store("pins-r2", &[1]);
    let before = snapshot(&s);
    add_refused(
        &s,
        &before,
        &file,
        "POLICY_ROOT_UNPINNED",
        &["version 1", "root1", "root2"],
    );

    // Roots r1, r2 with threshold 2, signed by r1 alone (and r1's signature twice).
    let v1 = t.toml("v1b.toml", &[0, 1], 2, &[&t.harness], "");
    let file = tmp.path().join("v1b.dsse");
    ok(sign(&maker, &v1, &t.roots[0], &file, &[]));
    let s = t.store("pins-r1", &[0]);
    let before = snapshot(&s);
    add_refused(
        &s,
        &before,
        &file,
        "POLICY_THRESHOLD",
        &["version 1", "root1", "root2"],
    );
    let twice = raw_policy(
        tmp.path(),
        &statement_of(&file),
        &[&t.roots[0], &t.roots[0]],
    );
    add_refused(
        &s,
        &before,
        &twice,
        "POLICY_THRESHOLD",
        &["needs 2", "has 1"],
    );
    // With r2's signature added, it is taken.
    ok(sign(&maker, &file, &t.roots[1], &file, &[]));
    assert_eq!(ok(add(&s, &file)).json["data"]["created"], json!(1));
}

#[test]
fn a_next_version_needs_both_roots_the_right_previous_and_no_gap() {
    let tmp = tempfile::tempdir().unwrap();
    let t = Team::new(tmp.path());
    let s = t.store("s", &[0]);
    let v1 = t.toml("v1.toml", &[0], 1, &[&t.harness], "");
    sign_and_append(&s, &v1, &t.roots[0], &tmp.path().join("v1.dsse"));

    // Version 2 rotates the root to r2, signed by r2 only: version 1's root did not sign.
    let v2 = t.toml("v2.toml", &[1], 1, &[&t.harness], "");
    let f2 = tmp.path().join("v2.dsse");
    let before = snapshot(&s);
    // `trust sign` refuses a key that is no root of either version; r2 is v2's own root.
    ok(sign(&s, &v2, &t.roots[1], &f2, &[]));
    add_refused(
        &s,
        &before,
        &f2,
        "POLICY_THRESHOLD",
        &["version 2", "version 1's", "root1"],
    );
    // Signed by r1 only: its own root (r2) did not sign.
    let f2b = tmp.path().join("v2b.dsse");
    ok(sign(&s, &v2, &t.roots[0], &f2b, &[]));
    add_refused(
        &s,
        &before,
        &f2b,
        "POLICY_THRESHOLD",
        &["version 2", "its own", "root2"],
    );
    // Both: taken.
    ok(sign(&s, &f2b, &t.roots[1], &f2b, &[]));
    ok(add(&s, &f2b));

    // Another store holding another version 1 of the same root: version 2 names the wrong
    // previous there.
    let other = t.store("other", &[0]);
    let v1x = t.toml("v1x.toml", &[0], 1, &[&t.agent], "");
    sign_and_append(&other, &v1x, &t.roots[0], &tmp.path().join("v1x.dsse"));
    let before = snapshot(&other);
    add_refused(
        &other,
        &before,
        &f2b,
        "POLICY_PREVIOUS_MISMATCH",
        &["version 2", "previous"],
    );

    // A gap: version 4 of s's chain waits for 3; `trust show` names it; then both apply.
    let v3 = t.toml("v3.toml", &[1], 1, &[&t.harness, &t.agent], "");
    let f3 = tmp.path().join("v3.dsse");
    sign_and_append(&s, &v3, &t.roots[1], &f3);
    let v4 = t.toml("v4.toml", &[1], 1, &[&t.agent], "");
    let f4 = tmp.path().join("v4.dsse");
    ok(sign(&s, &v4, &t.roots[1], &f4, &[]));
    let fresh = t.store("gap", &[0]);
    ok(add(&fresh, &tmp.path().join("v1.dsse")));
    ok(add(&fresh, &f2b));
    let out = ok(add(&fresh, &f4));
    assert!(
        out.json.to_string().contains("POLICY_WAITING"),
        "{}",
        out.json
    );
    let show = ok(run(&fresh, &["trust", "show"])).json;
    assert_eq!(show["data"]["missing_version"], json!(3), "{show}");
    assert_eq!(show["data"]["in_force"]["version"], json!(2));
    ok(add(&fresh, &f3));
    let show = ok(run(&fresh, &["trust", "show"])).json;
    assert_eq!(show["data"]["in_force"]["version"], json!(4), "{show}");
    assert_eq!(show["data"]["missing_version"], json!(null));
}

#[test]
fn two_valid_envelopes_of_one_version_are_an_equivocation_everyone_hears_of() {
    let tmp = tempfile::tempdir().unwrap();
    let t = Team::new(tmp.path());
    let s = t.store("s", &[0]);
    let v1 = t.toml("v1.toml", &[0], 1, &[&t.harness], "");
    let a = sign_and_append(&s, &v1, &t.roots[0], &tmp.path().join("v1.dsse"));
    let v1x = t.toml("v1x.toml", &[0], 1, &[&t.agent], "");
    let maker = t.store("maker", &[0]);
    let b = ok(sign(
        &maker,
        &v1x,
        &t.roots[0],
        &tmp.path().join("v1x.dsse"),
        &[],
    ));
    let (before_show, before_log, before_keys) = snapshot(&s);
    let o = add(&s, &tmp.path().join("v1x.dsse"));
    assert_eq!(o.code, 2, "{}", o.json);
    let text = o.json.to_string();
    assert!(text.contains("POLICY_EQUIVOCATION"), "{text}");
    let (ida, idb) = (
        a.json["data"]["id"].as_str().unwrap(),
        b.json["data"]["id"].as_str().unwrap(),
    );
    assert!(
        text.contains(ida) && text.contains(idb),
        "both named: {text}"
    );
    // The chain, the log and the keys are as they were; the evidence is kept.
    let (show, log, keys) = snapshot(&s);
    assert_eq!(
        (&show["in_force"], &show["chain"], &keys),
        (
            &before_show["in_force"],
            &before_show["chain"],
            &before_keys
        )
    );
    // The log holds no claim either way; the bundle now carries the evidence too.
    assert!(log.len() > before_log.len());
    assert_eq!(show["equivocations"][0]["id"], json!(idb));
    // Every command warns.
    let st = ok(run(&s, &["log"]));
    assert!(
        st.json["warnings"]
            .to_string()
            .contains("POLICY_EQUIVOCATION"),
        "{}",
        st.json
    );
    // The gate fails.
    assert_the_gate_fails(tmp.path(), &s, "policy-equivocation");
}

#[test]
fn another_chain_another_type_unknown_members_double_roles_and_root_signed_claims_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let t = Team::new(tmp.path());
    let s = t.store("s", &[0]);
    let v1 = t.toml("v1.toml", &[0], 1, &[&t.harness], "");
    let f1 = tmp.path().join("v1.dsse");
    sign_and_append(&s, &v1, &t.roots[0], &f1);
    let before = snapshot(&s);

    // Another chain's version 2 (a chain rooted in r2).
    let other = t.store("other", &[1]);
    let w1 = t.toml("w1.toml", &[1], 1, &[&t.agent], "");
    sign_and_append(&other, &w1, &t.roots[1], &tmp.path().join("w1.dsse"));
    let w2 = t.toml("w2.toml", &[1], 1, &[&t.agent, &t.harness], "");
    let fw2 = tmp.path().join("w2.dsse");
    ok(sign(&other, &w2, &t.roots[1], &fw2, &[]));
    add_refused(
        &s,
        &before,
        &fw2,
        "POLICY_CHAIN_MISMATCH",
        &["version 2", "example.org/team"],
    );

    // Another predicateType.
    let mut st = statement_of(&f1);
    st["predicateType"] = json!("https://elench.dev/trust-policy/v9");
    let f = raw_policy(tmp.path(), &st, &[&t.roots[0]]);
    add_refused(&s, &before, &f, "UNSUPPORTED_PREDICATE_TYPE", &[]);

    // An unknown member of the predicate (version 2, properly chained and signed).
    let v2 = t.toml("v2.toml", &[0], 1, &[&t.harness], "");
    let f2 = tmp.path().join("v2.dsse");
    ok(sign(&s, &v2, &t.roots[0], &f2, &[]));
    let mut st = statement_of(&f2);
    st["predicate"]["delegations"] = json!([{"paths": ["src/"]}]);
    let f = raw_policy(tmp.path(), &st, &[&t.roots[0]]);
    add_refused(&s, &before, &f, "POLICY_INVALID", &["delegations"]);

    // A key listed twice with different roles.
    let mut st = statement_of(&f2);
    let mut twice = st["predicate"]["keys"][0].clone();
    twice["role"] = json!("agent");
    st["predicate"]["keys"].as_array_mut().unwrap().push(twice);
    let f = raw_policy(tmp.path(), &st, &[&t.roots[0]]);
    add_refused(
        &s,
        &before,
        &f,
        "POLICY_INVALID",
        &["listed twice", "harness", "agent"],
    );
    // The same through `trust sign`.
    let bad = t.toml(
        "bad.toml",
        &[0],
        1,
        &[
            &t.harness,
            &KeyPair {
                role: "agent".into(),
                ..t.harness.clone()
            },
        ],
        "",
    );
    let o = sign(&s, &bad, &t.roots[0], &tmp.path().join("bad.dsse"), &[]);
    refused(&s, &before, &o, "POLICY_INVALID", &["listed twice"]);

    // A claim signed by a root key.
    let root_as_agent = KeyPair {
        role: "agent".into(),
        ..t.roots[0].clone()
    };
    let (c, _) = claim_file(tmp.path(), &root_as_agent, "the root says so");
    add_refused(
        &s,
        &before,
        &c,
        "ROLE_VIOLATION",
        &["root1", "root keys sign trust policies only"],
    );
}

#[test]
fn an_expired_policy_warns_everywhere_fails_the_gate_and_ingest_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let t = Team::new(tmp.path());
    let s = t.store("s", &[0]);
    let v1 = t.toml(
        "v1.toml",
        &[0],
        1,
        &[&t.harness],
        "expires = \"2001-01-01T00:00:00Z\"",
    );
    sign_and_append(&s, &v1, &t.roots[0], &tmp.path().join("v1.dsse"));
    let (c, _) = claim_file(tmp.path(), &t.harness, "still taken");
    let o = ok(add(&s, &c));
    assert_eq!(o.json["data"]["created"], json!(1));
    assert!(
        o.json["warnings"].to_string().contains("POLICY_EXPIRED"),
        "{}",
        o.json
    );
    let l = ok(run(&s, &["log"]));
    let w = l.json["warnings"].to_string();
    assert!(
        w.contains("POLICY_EXPIRED") && w.contains("version 1"),
        "{}",
        l.json
    );
    assert_the_gate_fails(tmp.path(), &s, "policy-expired");
}

#[test]
fn policies_travel_through_a_remote_and_a_pinned_store_takes_them_with_the_claims() {
    if !have_git() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let t = Team::new(tmp.path());
    let remote = tmp.path().join("remote.git");
    assert!(std::process::Command::new("git")
        .args(["init", "--quiet", "--bare"])
        .arg(&remote)
        .status()
        .unwrap()
        .success());
    let a = t.store("a", &[0]);
    let v1 = t.toml("v1.toml", &[0], 1, &[&t.harness], "");
    sign_and_append(&a, &v1, &t.roots[0], &tmp.path().join("v1.dsse"));
    let (c, id) = claim_file(tmp.path(), &t.harness, "travels");
    ok(add(&a, &c));
    ok(run(
        &a,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    ));
    let pushed = ok(run(&a, &["push"]));
    assert_eq!(pushed.json["data"]["pushed"], json!(2), "{}", pushed.json);
    let tree = std::process::Command::new("git")
        .arg("--git-dir")
        .arg(&remote)
        .args(["ls-tree", "-r", "--name-only", "refs/elench/log"])
        .output()
        .unwrap();
    let tree = String::from_utf8(tree.stdout).unwrap();
    assert!(tree.lines().any(|l| l.starts_with("trust/1/")), "{tree}");

    // Pinned to the root: the policy, then the claim, in one pull.
    let b = t.store("b", &[0]);
    ok(run(
        &b,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    ));
    let pulled = ok(run(&b, &["pull"]));
    assert_eq!(pulled.json["data"]["created"], json!(2), "{}", pulled.json);
    ok(run(&b, &["status", &id]));
    // Each store's first sync catches up once: A's computes the remote's sequence for the
    // checkpoint's checks (its push left that to the next pull), B's looks its policy up on
    // the remote (its pull took it from there but does not record so). Then nothing is new
    // on either side: a sync of either store asks the remote for its head and nothing more
    // (the policy is known to be there, and here), and writes nothing.
    ok(run(&a, &["sync"]));
    ok(run(&b, &["sync"]));
    for store in [&a, &b, &a, &b] {
        let before = crate::cli_sync::sync_files(store);
        let (out, idle) = crate::cli_sync::git_run(store, "sync", tmp.path());
        assert_eq!(out.code, 0, "{}", out.json);
        assert_eq!(out.json["data"]["pushed"], json!(0), "{}", out.json);
        crate::cli_sync::only_ls_remote(&idle);
        assert_eq!(crate::cli_sync::sync_files(store), before);
    }

    // Not pinned: the policy is refused (POLICY_UNPINNED), and so the claim; nothing changes.
    let u = t.store("u", &[]);
    ok(run(
        &u,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    ));
    let before = snapshot(&u);
    let pulled = run(&u, &["pull"]);
    assert_eq!(pulled.code, 3, "{}", pulled.json);
    assert!(
        pulled.json.to_string().contains("POLICY_UNPINNED"),
        "{}",
        pulled.json
    );
    assert_eq!(snapshot(&u), before);
    // And again: a remote that has not moved still holds a policy this store refused, and
    // every pull says so.
    let again = run(&u, &["pull"]);
    assert_eq!(again.code, 3, "{}", again.json);
    assert!(
        again.json.to_string().contains("POLICY_UNPINNED"),
        "{}",
        again.json
    );
    assert_eq!(snapshot(&u), before);
    // Pinned now: the next pull takes the policy and the claim.
    let p = ok(run(
        &u,
        &["trust", "pin", t.roots[0].public.to_str().unwrap()],
    ));
    let pulled = ok(run(&u, &["pull"]));
    assert_eq!(
        pulled.json["data"]["created"],
        json!(2),
        "{} {}",
        p.json,
        pulled.json
    );
}

/// `claim` signed by `key`, written to a file: (path, id).
fn signed_file(dir: &Path, claim: &Value, key: &KeyPair) -> (PathBuf, String) {
    let with_id = common::with_computed_id(claim);
    let id = common::claim_id(&with_id);
    let path = dir.join(common::fresh_name("claim", "dsse"));
    std::fs::write(&path, common::envelope_text(&with_id, key)).unwrap();
    (path, id)
}

fn status_row(store: &Path, id: &str) -> Value {
    ok(run(store, &["status", id])).json["data"]["claims"][0].clone()
}

#[test]
fn a_declared_compromise_falsifies_what_only_that_key_signed_and_all_that_rests_on_it() {
    let tmp = tempfile::tempdir().unwrap();
    let t = Team::new(tmp.path());
    let s = t.store("s", &[0]);
    let v1 = t.toml("v1.toml", &[0], 1, &[&t.harness, &t.agent], "");
    sign_and_append(&s, &v1, &t.roots[0], &tmp.path().join("v1.dsse"));
    // A (agent), verified by V (harness); D (harness) and E (agent) resting on D.
    let (fa, a) = signed_file(
        tmp.path(),
        &ClaimBuilder::assertion("parse is total").build(),
        &t.agent,
    );
    ok(add(&s, &fa));
    let v = ClaimBuilder::record("verification", &[&a]).build();
    let (fv, vid) = signed_file(tmp.path(), &v, &t.harness);
    ok(add(&s, &fv));
    let d = ClaimBuilder::assertion("the suite passed")
        .origin("harness-observed")
        .build();
    let (fd, did) = signed_file(tmp.path(), &d, &t.harness);
    ok(add(&s, &fd));
    let e = ClaimBuilder::assertion("ship it")
        .depends_on(&[&did])
        .build();
    let (fe, eid) = signed_file(tmp.path(), &e, &t.agent);
    ok(add(&s, &fe));
    assert_eq!(status_row(&s, &a)["status"], json!("verified"));
    // Before anyone declares it, `blast --signer` shows what a compromise of the harness key
    // would take down: what it alone signed (V, D), what rests on them (E), and A, whose
    // verification it signed.
    let mut own = vec![vid.clone(), did.clone()];
    own.sort();
    let before = ok(run(&s, &["blast", "--signer", "ci"])).json["data"].clone();
    let layer = |d: &Value, n: usize| -> Vec<String> {
        d["layers"][n]["claims"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(layer(&before, 0), own, "{before}");
    assert_eq!(layer(&before, 1), vec![eid.clone()], "{before}");
    assert_eq!(before["affected"][0]["id"], json!(a), "{before}");
    assert_eq!(
        before["affected"][0]["decided_by"],
        json!([vid]),
        "{before}"
    );
    assert_eq!(before["signer"]["compromised"], json!(false), "{before}");

    // Version 2 declares the harness key compromised.
    let extra = format!("compromised = [{:?}]", t.harness.keyid);
    let v2 = t.toml("v2.toml", &[0], 1, &[&t.harness, &t.agent], &extra);
    let p2 = sign_and_append(&s, &v2, &t.roots[0], &tmp.path().join("v2.dsse"));
    let tp = p2.json["data"]["id"].as_str().unwrap().to_owned();
    let dr = status_row(&s, &did);
    assert_eq!(dr["status"], json!("falsified"), "{dr}");
    assert_eq!(dr["decided_by"], json!([tp]), "{dr}");
    assert_eq!(status_row(&s, &eid)["status"], json!("revoked"));
    assert_eq!(status_row(&s, &vid)["status"], json!("falsified"));
    // The verification it signed no longer counts.
    assert_eq!(status_row(&s, &a)["status"], json!("unevaluated"));
    // The blast radius agrees.
    let b = ok(run(&s, &["blast", &did])).json;
    assert!(b.to_string().contains(&eid), "{b}");
    assert!(b.to_string().contains("revoked"), "{b}");
    // And so does `blast --signer`: the same claims, now falsified and revoked by the fold.
    let after = ok(run(&s, &["blast", "--signer", "ci"])).json["data"].clone();
    assert_eq!(after["signer"]["compromised"], json!(true), "{after}");
    assert_eq!(layer(&after, 0), own, "{after}");
    assert_eq!(layer(&after, 1), vec![eid.clone()], "{after}");
    for m in after["layers"][0]["claims"].as_array().unwrap() {
        assert_eq!(m["status"], json!("falsified"), "{after}");
    }
    assert_eq!(
        after["layers"][1]["claims"][0]["status"],
        json!("revoked"),
        "{after}"
    );
}

#[test]
fn a_key_moved_to_another_role_by_the_next_version_signs_as_that_role_only() {
    let tmp = tempfile::tempdir().unwrap();
    let t = Team::new(tmp.path());
    let s = t.store("s", &[0]);
    // Version 1 lists the CI key as a harness key; version 2 lists the same key as human.
    let v1 = t.toml("v1.toml", &[0], 1, &[&t.harness], "");
    sign_and_append(&s, &v1, &t.roots[0], &tmp.path().join("v1.dsse"));
    let (observed, _) = claim_file(tmp.path(), &t.harness, "suite passed");
    ok(add(&s, &observed));
    let as_human = fixed_key(&tmp.path().join("keys-human"), "human", "ci", 0x71);
    assert_eq!(as_human.keyid, t.harness.keyid);
    let v2 = t.toml("v2.toml", &[0], 1, &[&as_human], "");
    sign_and_append(&s, &v2, &t.roots[0], &tmp.path().join("v2.dsse"));
    let keys = ok(run(&s, &["keys", "list"])).json;
    assert!(
        keys["data"].to_string().contains("\"role\":\"human\""),
        "the key takes the role of the policy in force: {keys}"
    );
    // A harness-observed claim it signs now is refused; a human-asserted one is taken.
    let (again, _) = claim_file(tmp.path(), &t.harness, "suite passed again");
    let o = add(&s, &again);
    assert!(
        o.json.to_string().contains("ROLE_VIOLATION"),
        "a human key may not sign a harness observation: {}",
        o.json
    );
    let claim = ClaimBuilder::assertion("reviewed by a person")
        .origin("human-asserted")
        .build();
    let env = common::envelope_text(&common::with_computed_id(&claim), &as_human);
    let path = tmp.path().join("human.dsse");
    std::fs::write(&path, env).unwrap();
    let o = ok(add(&s, &path));
    assert_eq!(o.json["data"]["created"], json!(1), "{}", o.json);
    // What it signed as a harness key before stays.
    let out = ok(run(&s, &["fsck"]));
    assert_eq!(out.code, 0);
}

#[test]
fn a_store_of_the_previous_layout_carries_its_trust_folder_into_the_log() {
    let tmp = tempfile::tempdir().unwrap();
    let t = Team::new(tmp.path());
    // The team's chain: version 1, 2 and 3, made in another store.
    let maker = t.store("maker", &[0]);
    let v1 = t.toml("v1.toml", &[0], 1, &[&t.harness], "");
    sign_and_append(&maker, &v1, &t.roots[0], &tmp.path().join("v1.dsse"));
    let v2 = t.toml("v2.toml", &[0], 1, &[&t.harness, &t.agent], "");
    sign_and_append(&maker, &v2, &t.roots[0], &tmp.path().join("v2.dsse"));
    let v3 = t.toml("v3.toml", &[0], 1, &[&t.agent], "");
    ok(sign(
        &maker,
        &v3,
        &t.roots[0],
        &tmp.path().join("v3.dsse"),
        &["--append"],
    ));

    // A store as the previous layout left it: the root pinned in trust/pins.json, version 1
    // in trust/chain/, version 3 waiting in trust/waiting/, and the key version 1 grants
    // added to the log; its FORMAT names layout 2.
    let old = t.store("old", &[]);
    ok(run(
        &old,
        &[
            "keys",
            "add",
            t.harness.public.to_str().unwrap(),
            "--role",
            "harness",
            "--name",
            "ci",
        ],
    ));
    let canonical = |file: &str| {
        let v: Value =
            serde_json::from_slice(&std::fs::read(tmp.path().join(file)).unwrap()).unwrap();
        elench::jcs::canonical(&v).unwrap()
    };
    let digest = |bytes: &[u8]| {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(bytes))
    };
    let trust = old.join("trust");
    for d in ["chain", "waiting", "equivocation"] {
        std::fs::create_dir_all(trust.join(d)).unwrap();
    }
    let pem = std::fs::read_to_string(&t.roots[0].public).unwrap();
    let pins = json!([{"keyid": t.roots[0].keyid, "name": "root1", "publicKey": pem}]);
    std::fs::write(trust.join("pins.json"), pins.to_string()).unwrap();
    std::fs::write(trust.join("chain/0000000001.json"), canonical("v1.dsse")).unwrap();
    let waiting = canonical("v3.dsse");
    std::fs::write(
        trust.join(format!("waiting/{}.json", digest(&waiting))),
        &waiting,
    )
    .unwrap();
    std::fs::write(old.join("FORMAT"), "elench-store 2\n").unwrap();

    // Opening migrates it: the same trust, now folded from the log's records.
    let show = ok(run(&old, &["trust", "show"])).json["data"].clone();
    assert_eq!(show["in_force"]["version"], json!(1), "{show}");
    assert_eq!(show["pins"][0]["keyid"], json!(t.roots[0].keyid), "{show}");
    assert_eq!(show["missing_version"], json!(2), "{show}");
    assert_eq!(show["waiting"][0]["version"], json!(3), "{show}");
    let format = std::fs::read_to_string(old.join("FORMAT")).unwrap();
    assert_eq!(
        format.trim(),
        format!("elench-store {}", elench::store::current_version())
    );
    assert!(!trust.exists(), "the folder is set aside");
    assert!(old.join("trust.layout2/chain/0000000001.json").is_file());
    ok(run(&old, &["fsck"]));
    // The checkpoint counts the records the migration appended (a key-add, a pin and two
    // policies).
    let cp = ok(run(&old, &["checkpoint"])).json;
    assert_eq!(cp["data"]["n"], json!(4), "{cp}");
    assert_eq!(cp["data"]["note"]["size"], json!(4), "{cp}");

    // Version 2 arrives: it and the waiting version 3 come into force.
    let o = ok(add(&old, &tmp.path().join("v2.dsse")));
    assert_eq!(o.json["data"]["created"], json!(1), "{}", o.json);
    let show = ok(run(&old, &["trust", "show"])).json["data"].clone();
    assert_eq!(show["in_force"]["version"], json!(3), "{show}");
    assert_eq!(show["waiting"], json!([]), "{show}");
    // Export carries the whole chain.
    let bundle = tmp.path().join("old.jsonl");
    ok(run(&old, &["export", "-o", bundle.to_str().unwrap()]));
    assert_eq!(std::fs::read_to_string(&bundle).unwrap().lines().count(), 3);
}

#[test]
fn fsck_checks_every_policy_record_where_it_sits() {
    let tmp = tempfile::tempdir().unwrap();
    let t = Team::new(tmp.path());
    let maker = t.store("maker", &[0]);
    let v1 = t.toml("v1.toml", &[0], 1, &[&t.harness], "");
    ok(sign(
        &maker,
        &v1,
        &t.roots[0],
        &tmp.path().join("v1.dsse"),
        &[],
    ));
    // A previous-layout store whose trust folder holds a version 1 but pins nothing (a
    // folder written by hand): migrated, the policy record does not hold where it sits.
    let s = t.store("s", &[]);
    let env: Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("v1.dsse")).unwrap()).unwrap();
    std::fs::create_dir_all(s.join("trust/chain")).unwrap();
    std::fs::write(
        s.join("trust/chain/0000000001.json"),
        elench::jcs::canonical(&env).unwrap(),
    )
    .unwrap();
    std::fs::write(s.join("FORMAT"), "elench-store 2\n").unwrap();
    let show = ok(run(&s, &["trust", "show"])).json["data"].clone();
    assert_eq!(show["in_force"], Value::Null, "{show}");
    let f = run(&s, &["fsck"]);
    assert_ne!(f.code, 0, "{}", f.json);
    assert!(
        f.json.to_string().contains("POLICY_INVALID") && f.json.to_string().contains("pins"),
        "{}",
        f.json
    );
}
