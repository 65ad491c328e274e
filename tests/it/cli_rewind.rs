//! A remote moved back (`git update-ref refs/elench/log` to an older commit) is seen by every
//! store that exchanged with it before: its pull exits 3 with `REMOTE_REWOUND` naming what the
//! remote lost, its push writes it back, and a fresh store then sees the claim falsified.
//!
//! Skips (with a message) where git is not installed.

use crate::common;

use common::{assertion, have_git, record, run, store_with_remote, write_bundle, Keys, Signed};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;

fn bare(dir: &Path) -> PathBuf {
    let path = dir.join("remote.git");
    let st = Command::new("git")
        .args(["init", "--quiet", "--bare"])
        .arg(&path)
        .status()
        .unwrap();
    assert!(st.success());
    path
}

fn git(remote: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(remote)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Where the remote's log ref points now.
fn log_ref(remote: &Path) -> String {
    git(remote, &["rev-parse", "refs/elench/log"])
}

/// Keys, a temporary folder, and in it an empty bare remote.
fn keys_tmp_remote() -> (Keys, tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let remote = bare(tmp.path());
    (Keys::new(), tmp, remote)
}

/// Writes `claim` alone into the bundle `file` and adds it to `store`.
fn add_in_a_bundle(store: &Path, file: &Path, claim: &Signed) {
    write_bundle(file, [claim]);
    assert_eq!(run(store, &["add", file.to_str().unwrap()]).code, 0);
}

fn status_of(store: &Path, id: &str) -> String {
    let out = run(store, &["status", id]);
    assert_eq!(out.code, 0, "{}", out.json);
    out.json["data"]["claims"][0]["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The issue's scenario: a claim pushed, its falsification pushed, the ref moved back.
#[test]
fn a_rewound_remote_is_named_by_the_store_that_was_there_and_repaired_by_its_push() {
    if !have_git() {
        return;
    }
    let (keys, tmp, remote) = keys_tmp_remote();
    let a = store_with_remote(tmp.path(), "a", &keys, &remote);

    let claim = assertion(&keys, "parse rejects empty input", &[]);
    add_in_a_bundle(&a, &tmp.path().join("c.jsonl"), &claim);
    assert_eq!(run(&a, &["push"]).code, 0);
    let before_falsification = log_ref(&remote);

    let fals = record(&keys, "falsification", "it accepts it", &[&claim.id], &[]);
    add_in_a_bundle(&a, &tmp.path().join("f.jsonl"), &fals);
    let out = run(&a, &["push"]);
    assert_eq!(out.code, 0, "{}", out.json);
    let with_falsification = log_ref(&remote);
    assert_ne!(before_falsification, with_falsification);

    // Anyone who can push moves the ref back.
    git(
        &remote,
        &["update-ref", "refs/elench/log", &before_falsification],
    );

    // A fresh store sees nothing wrong: that is what a store without memory cannot know.
    let fresh = store_with_remote(tmp.path(), "fresh", &keys, &remote);
    assert_eq!(run(&fresh, &["pull"]).code, 0);
    assert_eq!(status_of(&fresh, &claim.id), "unevaluated");

    // The store that was there names the loss.
    let out = run(&a, &["pull"]);
    assert_eq!(out.code, 3, "{}\n{}", out.json, out.stderr);
    assert_eq!(
        out.json["error"]["code"],
        json!("REMOTE_REWOUND"),
        "{}",
        out.json
    );
    let message = out.json["error"]["message"].as_str().unwrap();
    assert!(message.contains(&fals.id), "{message}");
    assert!(message.contains(&with_falsification), "{message}");
    assert!(message.contains(&before_falsification), "{message}");
    let rewound = &out.json["data"]["rewound"];
    assert_eq!(rewound["count"], json!(1), "{}", out.json);
    assert_eq!(rewound["ids"], json!([fals.id]), "{}", out.json);
    assert_eq!(rewound["before"], json!(with_falsification));
    assert_eq!(rewound["now"], json!(before_falsification));
    // Pulling again changes nothing: the memory stays until the remote holds it again.
    let again = run(&a, &["pull"]);
    assert_eq!(again.code, 3, "{}", again.json);
    assert_eq!(again.json["error"]["code"], json!("REMOTE_REWOUND"));

    // Its push writes it back.
    let out = run(&a, &["push"]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(out.json["data"]["pushed"], json!(1), "{}", out.json);
    let tree = git(
        &remote,
        &["ls-tree", "-r", "--name-only", "refs/elench/log"],
    );
    assert!(tree.contains(&fals.id), "{tree}");
    assert_eq!(run(&a, &["pull"]).code, 0);

    // A fresh store then sees the claim falsified.
    let later = store_with_remote(tmp.path(), "later", &keys, &remote);
    assert_eq!(run(&later, &["pull"]).code, 0);
    assert_eq!(status_of(&later, &claim.id), "falsified");
    // And the first fresh store, pulling again, too.
    assert_eq!(run(&fresh, &["pull"]).code, 0);
    assert_eq!(status_of(&fresh, &claim.id), "falsified");
}

/// A store that only pulled remembers what it pulled; `sync` names the loss, writes it back
/// in the same run, and still exits 3 so that the rewind is not missed.
#[test]
fn a_store_that_pulled_remembers_and_sync_names_and_repairs() {
    if !have_git() {
        return;
    }
    let (keys, tmp, remote) = keys_tmp_remote();
    let a = store_with_remote(tmp.path(), "a", &keys, &remote);
    let b = store_with_remote(tmp.path(), "b", &keys, &remote);

    let claim = assertion(&keys, "the cache is coherent", &[]);
    add_in_a_bundle(&a, &tmp.path().join("c.jsonl"), &claim);
    assert_eq!(run(&a, &["push"]).code, 0);
    let first = log_ref(&remote);
    let fals = record(&keys, "falsification", "it is not", &[&claim.id], &[]);
    add_in_a_bundle(&a, &tmp.path().join("f.jsonl"), &fals);
    assert_eq!(run(&a, &["push"]).code, 0);
    // b pulls both.
    let out = run(&b, &["pull"]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(out.json["data"]["created"], json!(2));

    git(&remote, &["update-ref", "refs/elench/log", &first]);

    let out = run(&b, &["sync"]);
    assert_eq!(out.code, 3, "{}", out.json);
    assert_eq!(out.json["error"]["code"], json!("REMOTE_REWOUND"));
    assert_eq!(out.json["data"]["rewound"]["ids"], json!([fals.id]));
    assert_eq!(out.json["data"]["pushed"], json!(1), "{}", out.json);
    // Written back: both stores now exchange cleanly.
    assert_eq!(run(&b, &["sync"]).code, 0);
    assert_eq!(run(&a, &["pull"]).code, 0);
}

/// A remote that only grew is never reported, however the stores take turns.
#[test]
fn a_remote_that_only_grows_is_not_reported() {
    if !have_git() {
        return;
    }
    let (keys, tmp, remote) = keys_tmp_remote();
    let a = store_with_remote(tmp.path(), "a", &keys, &remote);
    let b = store_with_remote(tmp.path(), "b", &keys, &remote);
    for i in 0..3 {
        let c = assertion(&keys, &format!("claim {i}"), &[]);
        let file = tmp.path().join(format!("{i}.jsonl"));
        write_bundle(&file, [&c]);
        let s = if i % 2 == 0 { &a } else { &b };
        assert_eq!(run(s, &["add", file.to_str().unwrap()]).code, 0);
        for s in [&a, &b] {
            let out = run(s, &["sync"]);
            assert_eq!(out.code, 0, "{}", out.json);
        }
    }
}

/// A real rewind: the ref moved back and others pushed on top of it, so the remote's history
/// differs from the one this store saw. The store's push writes back what it lost, and that
/// is the end of it: the next pull and sync are clean (what the remote holds is again a
/// superset of what the store exchanged with it), for it and for a store that only pulled.
#[test]
fn after_a_rewind_with_work_on_top_the_push_that_writes_back_clears_it() {
    if !have_git() {
        return;
    }
    let (keys, tmp, remote) = keys_tmp_remote();
    let a = store_with_remote(tmp.path(), "a", &keys, &remote);
    let b = store_with_remote(tmp.path(), "b", &keys, &remote);
    let claim = assertion(&keys, "the queue never drops", &[]);
    add_in_a_bundle(&a, &tmp.path().join("c.jsonl"), &claim);
    assert_eq!(run(&a, &["push"]).code, 0);
    let first = log_ref(&remote);
    let fals = record(&keys, "falsification", "it drops", &[&claim.id], &[]);
    add_in_a_bundle(&a, &tmp.path().join("f.jsonl"), &fals);
    let more = assertion(&keys, "the queue is ordered", &[]);
    add_in_a_bundle(&a, &tmp.path().join("m.jsonl"), &more);
    assert_eq!(run(&a, &["push"]).code, 0);
    assert_eq!(run(&b, &["pull"]).code, 0);

    // Moved back, and someone else's work lands on top of the old commit.
    git(&remote, &["update-ref", "refs/elench/log", &first]);
    let c = store_with_remote(tmp.path(), "c", &keys, &remote);
    let other = assertion(&keys, "the queue has a bound", &[]);
    add_in_a_bundle(&c, &tmp.path().join("o.jsonl"), &other);
    assert_eq!(run(&c, &["push"]).code, 0);

    let out = run(&a, &["pull"]);
    assert_eq!(out.code, 3, "{}", out.json);
    assert_eq!(out.json["error"]["code"], json!("REMOTE_REWOUND"));
    assert_eq!(
        out.json["data"]["rewound"]["count"],
        json!(2),
        "{}",
        out.json
    );
    // The push writes both back; from then on every exchange is clean.
    let out = run(&a, &["push"]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(out.json["data"]["pushed"], json!(2), "{}", out.json);
    let out = run(&a, &["pull"]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(run(&a, &["sync"]).code, 0);
    // b, which only pulled, finds everything it saw there again.
    let out = run(&b, &["pull"]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(out.json["data"]["created"], json!(1), "{}", out.json);
    assert_eq!(status_of(&b, &claim.id), "falsified");
}
