//! Small gaps of team trust, through the binary: root keys sign trust policies only
//! (`claim --key ROOT.pem` and `keys add ROOT.pub` are ROLE_VIOLATION, for a pinned root and
//! for a root of the policy in force alike), and `add --dry-run` predicts what adding a
//! policy would do. Each leaves the store as it was.

use crate::common;

use common::{claim_id, envelope_text, fixed_key, run, warning_codes, with_computed_id};
use common::{write_trust_toml, ClaimBuilder, KeyPair, Out};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A store pinning r1, with version 1 of a policy in force whose root is r1 and r2 (so r2 is
/// a root of the policy in force, not pinned) and which trusts an agent key.
struct Roots {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    store: PathBuf,
    r1: KeyPair,
    r2: KeyPair,
    agent: KeyPair,
}

fn ok(o: Out) -> Out {
    assert_eq!(o.code, 0, "{}\n{}", o.json, o.stderr);
    o
}

fn roots() -> Roots {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let k = dir.join("keys");
    let r1 = fixed_key(&k, "human", "root1", 0x61);
    let r2 = fixed_key(&k, "human", "root2", 0x62);
    let agent = fixed_key(&k, "agent", "bot", 0x63);
    let store = dir.join("store");
    ok(run(
        &store,
        &["init", "--root-key", r1.public.to_str().unwrap()],
    ));
    let toml = dir.join("v1.toml");
    write_trust_toml(&toml, "example.org/team", &[&r1, &r2], 1, &[&agent], "");
    let out = dir.join("v1.dsse");
    ok(run(
        &store,
        &[
            "trust",
            "sign",
            toml.to_str().unwrap(),
            "--key",
            r1.private.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--append",
        ],
    ));
    std::fs::create_dir_all(dir.join("work")).unwrap();
    std::fs::write(dir.join("work/a.txt"), "a\n").unwrap();
    Roots {
        _tmp: tmp,
        dir,
        store,
        r1,
        r2,
        agent,
    }
}

/// The trust state, the exported log and the keys: what a refusal must leave as it was.
fn snapshot(store: &Path) -> (Value, Vec<u8>, Value) {
    let show = ok(run(store, &["trust", "show"])).json["data"].clone();
    let bundle = store.with_extension("snap.jsonl");
    ok(run(store, &["export", "-o", bundle.to_str().unwrap()]));
    let keys = ok(run(store, &["keys", "list"])).json["data"].clone();
    (show, std::fs::read(&bundle).unwrap(), keys)
}

fn role_violation(r: &Roots, o: &Out, key: &KeyPair, before: &(Value, Vec<u8>, Value)) {
    assert_eq!(o.code, 2, "{}", o.json);
    assert_eq!(o.json["error"]["code"], "ROLE_VIOLATION", "{}", o.json);
    assert!(o.json.to_string().contains(&key.keyid), "{}", o.json);
    assert_eq!(&snapshot(&r.store), before, "the refusal changed the store");
}

#[test]
fn claim_with_a_root_key_is_a_role_violation_and_records_nothing() {
    let r = roots();
    let work = r.dir.join("work");
    let claim = |key: &KeyPair| {
        run(
            &r.store,
            &[
                "claim",
                "the root says so",
                "--at",
                work.to_str().unwrap(),
                "--key",
                key.private.to_str().unwrap(),
            ],
        )
    };
    let before = snapshot(&r.store);
    for root in [&r.r1, &r.r2] {
        role_violation(&r, &claim(root), root, &before);
    }
    // Beside a trusted key too: a root key signs nothing.
    let both = run(
        &r.store,
        &[
            "claim",
            "the root says so",
            "--at",
            work.to_str().unwrap(),
            "--key",
            r.agent.private.to_str().unwrap(),
            "--key",
            r.r2.private.to_str().unwrap(),
        ],
    );
    role_violation(&r, &both, &r.r2, &before);
    // The agent key the policy grants still claims.
    ok(claim(&r.agent));
}

#[test]
fn keys_add_of_a_root_key_is_a_role_violation_and_trusts_nothing() {
    let r = roots();
    let before = snapshot(&r.store);
    for root in [&r.r1, &r.r2] {
        let o = run(
            &r.store,
            &[
                "keys",
                "add",
                "--role",
                "human",
                "--name",
                "root-as-human",
                root.public.to_str().unwrap(),
            ],
        );
        role_violation(&r, &o, root, &before);
    }
}

/// `add --dry-run FILES…` on `store`.
fn dry_run(store: &Path, files: &[&Path]) -> Out {
    let mut args = vec!["add", "--dry-run"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    run(store, &args)
}

/// The effect a dry run reported for each input, in order.
fn effects(o: &Out) -> Vec<String> {
    o.json["data"]["claims"]
        .as_array()
        .unwrap_or_else(|| panic!("no claims: {}", o.json))
        .iter()
        .map(|c| c["effect"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn add_dry_run_of_policies_predicts_created_waiting_noop_and_refusals_and_changes_nothing() {
    let r = roots();
    // Version 2 (built on the store that holds version 1) keeps the agent key.
    let toml = r.dir.join("v2.toml");
    write_trust_toml(
        &toml,
        "example.org/team",
        &[&r.r1, &r.r2],
        1,
        &[&r.agent],
        "",
    );
    let v2 = r.dir.join("v2.dsse");
    ok(run(
        &r.store,
        &[
            "trust",
            "sign",
            toml.to_str().unwrap(),
            "--key",
            r.r1.private.to_str().unwrap(),
            "-o",
            v2.to_str().unwrap(),
        ],
    ));
    let v1 = r.dir.join("v1.dsse");
    // A claim by the agent key, which only the policy grants.
    let claim = with_computed_id(&ClaimBuilder::assertion("granted by the policy").build());
    let cid = claim_id(&claim);
    let cfile = r.dir.join("claim.dsse");
    std::fs::write(&cfile, envelope_text(&claim, &r.agent)).unwrap();

    // A fresh store pinning r1.
    let fresh = r.dir.join("fresh");
    ok(run(
        &fresh,
        &["init", "--root-key", r.r1.public.to_str().unwrap()],
    ));
    let before = snapshot(&fresh);

    // Version 2 alone would wait for version 1.
    let o = ok(dry_run(&fresh, &[&v2]));
    assert_eq!(o.json["meta"]["dry_run"], json!(true), "{}", o.json);
    assert_eq!(effects(&o), vec!["merged"], "{}", o.json);
    assert!(
        warning_codes(&o).contains(&"POLICY_WAITING".to_owned()),
        "{}",
        o.json
    );
    assert_eq!(snapshot(&fresh), before);

    // Versions 1 and 2 and a claim their key signed: all would be created, in one run.
    let o = ok(dry_run(&fresh, &[&v1, &v2, &cfile]));
    assert_eq!(
        effects(&o),
        vec!["created", "created", "created"],
        "{}",
        o.json
    );
    let ids = o.json["data"]["claims"].to_string();
    assert!(ids.contains(&cid), "{}", o.json);
    assert_eq!(snapshot(&fresh), before, "a dry run changed the store");

    // Taken for real, version 1 again would change nothing.
    ok(run(&fresh, &["add", v1.to_str().unwrap()]));
    let taken = snapshot(&fresh);
    assert_eq!(effects(&ok(dry_run(&fresh, &[&v1]))), vec!["noop"]);
    assert_eq!(snapshot(&fresh), taken);

    // A store that pins nothing: the refusal `add` would give, and nothing changes.
    let unpinned = r.dir.join("unpinned");
    ok(run(&unpinned, &["init"]));
    let before = snapshot(&unpinned);
    let o = dry_run(&unpinned, &[&v1]);
    assert_eq!(o.code, 2, "{}", o.json);
    assert!(o.json.to_string().contains("POLICY_UNPINNED"), "{}", o.json);
    assert_eq!(snapshot(&unpinned), before);
}
