//! Witnessed checkpoints through the binary, real git, and two witnesses that are not
//! elench's code (`tlog_witness`, written from the C2SP texts alone) on loopback:
//!
//! - push with two witnesses and quorum 2: the remote's log carries a checkpoint cosigned by
//!   both, which a fresh store verifies on pull; `checkpoint --remote` gives its size and root;
//! - the remote rewound (its ref moved back) and a fresh store pulling with
//!   `--witness-fresh`: `REMOTE_REWOUND` (without it, the fresh store cannot tell);
//! - a forked log (same size, another root): the witnesses answer 422, `REMOTE_REWOUND`;
//! - a witness down: the push lands, exits 3 with `WITNESS_QUORUM`, and the next push, with
//!   nothing new, asks the missing witness again;
//! - a witness policy and a remote without checkpoint: `NO_CHECKPOINT`.
//!
//! Each test skips (with a message) where git is not installed.

use crate::common::{self, cli_store, have_git, run, write_bundle, Keys};
use crate::tlog_witness::{vkey, Mode, TestWitness};
use ed25519_dalek::SigningKey;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

const ORIGIN: &str = "example.org/widgets-log";

struct World {
    tmp: tempfile::TempDir,
    keys: Keys,
    remote: PathBuf,
    log_key: PathBuf,
    log_pub: PathBuf,
    policy: PathBuf,
    w1: TestWitness,
    w2: TestWitness,
    stores: usize,
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

impl World {
    fn new() -> World {
        let tmp = tempfile::tempdir().unwrap();
        let remote = tmp.path().join("remote.git");
        let st = Command::new("git")
            .args(["init", "--quiet", "--bare"])
            .arg(&remote)
            .status()
            .unwrap();
        assert!(st.success());
        let log = SigningKey::from_bytes(&[77; 32]);
        let log_pair = common::KeyPair::in_memory("log", "widgets-log", log.clone())
            .write_files(&tmp.path().join("log-key"));
        let w1 = TestWitness::start(
            "witness.test/one",
            11,
            vec![(ORIGIN.to_owned(), log.verifying_key())],
        );
        let w2 = TestWitness::start(
            "witness.test/two",
            12,
            vec![(ORIGIN.to_owned(), log.verifying_key())],
        );
        let policy = tmp.path().join("witnesses.policy");
        std::fs::write(
            &policy,
            format!(
                "# the widgets log and its two witnesses\n\
                 log {}\n\
                 witness W1 {} {}\n\
                 witness W2 {} {}\n\
                 group both all W1 W2\n\
                 quorum both\n",
                vkey(ORIGIN, 0x01, &log.verifying_key()),
                w1.vkey(),
                w1.url,
                w2.vkey(),
                w2.url
            ),
        )
        .unwrap();
        World {
            keys: Keys::new(),
            remote,
            log_key: log_pair.private,
            log_pub: log_pair.public,
            policy,
            w1,
            w2,
            tmp,
            stores: 0,
        }
    }

    /// A fresh store trusting the claim keys and the log key, with `origin` at the remote.
    fn store(&mut self) -> PathBuf {
        self.stores += 1;
        let store = self.tmp.path().join(format!("store{}", self.stores));
        cli_store(
            &store,
            &self.keys,
            &self.tmp.path().join(format!("pems{}", self.stores)),
        );
        let out = run(
            &store,
            &[
                "keys",
                "add",
                "--role",
                "log",
                "--name",
                "widgets-log",
                self.log_pub.to_str().unwrap(),
            ],
        );
        assert_eq!(out.code, 0, "{}", out.json);
        let out = run(
            &store,
            &["remote", "add", "origin", self.remote.to_str().unwrap()],
        );
        assert_eq!(out.code, 0, "{}", out.json);
        store
    }

    fn add(&self, store: &Path, texts: &[&str]) {
        let envs: Vec<_> = texts
            .iter()
            .map(|t| common::assertion(&self.keys, t, &[]))
            .collect();
        let file = store.with_extension(format!("{}.jsonl", texts.join("-").len()));
        write_bundle(&file, &envs);
        let out = run(store, &["add", file.to_str().unwrap()]);
        assert_eq!(out.code, 0, "{}", out.json);
    }

    fn push(&self, store: &Path, extra: &[&str]) -> common::Out {
        let mut args = vec![
            "push",
            "--log-key",
            self.log_key.to_str().unwrap(),
            "--witness-policy",
            self.policy.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        run(store, &args)
    }

    fn remote_checkpoint(&self) -> String {
        git(&self.remote, &["show", "refs/elench/log:checkpoint"])
    }

    /// Where the remote's log ref points now.
    fn log_ref(&self) -> String {
        git(&self.remote, &["rev-parse", "refs/elench/log"])
    }

    /// Moves the remote's log ref back to `to` (as `log_ref` gave it), checkpoint and all,
    /// as whoever can push could.
    fn move_log_back(&self, to: &str) {
        git(&self.remote, &["update-ref", "refs/elench/log", to.trim()]);
    }

    /// Where git is installed, a world whose store `a` pushed three claims: `(world, a)`.
    fn with_three_pushed() -> Option<(World, PathBuf)> {
        if !have_git() {
            return None;
        }
        let mut w = World::new();
        let a = w.store_that_pushed(&["one", "two", "three"]);
        Some((w, a))
    }

    /// A new store holding `texts`, pushed to the remote with the witnesses.
    fn store_that_pushed(&mut self, texts: &[&str]) -> PathBuf {
        let store = self.store();
        self.add(&store, texts);
        assert_eq!(self.push(&store, &[]).code, 0);
        store
    }
}

fn code(out: &common::Out) -> &str {
    out.json["error"]["code"].as_str().unwrap_or("")
}

#[test]
fn a_push_with_two_witnesses_writes_a_checkpoint_both_cosigned_and_a_fresh_store_checks_it() {
    if !have_git() {
        return;
    }
    let mut w = World::new();
    let a = w.store();
    w.add(&a, &["one", "two", "three"]);
    let out = w.push(&a, &[]);
    assert_eq!(out.code, 0, "{}", out.json);
    let witnessed = &out.json["data"]["witnessed"];
    assert_eq!(
        witnessed["cosigned_by"],
        json!(["W1", "W2"]),
        "{}",
        out.json
    );
    assert_eq!(witnessed["quorum"], json!(true));
    assert_eq!(witnessed["checkpoint"]["size"], json!(3));
    // The remote's checkpoint: origin, size, root, a blank line, the log's signature and
    // the two cosignatures.
    let text = w.remote_checkpoint();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], ORIGIN);
    assert_eq!(lines[1], "3");
    assert_eq!(lines[2], witnessed["checkpoint"]["root"].as_str().unwrap());
    assert_eq!(lines[3], "");
    assert!(
        lines[4].starts_with(&format!("\u{2014} {ORIGIN} ")),
        "{text}"
    );
    assert!(lines[5].starts_with("\u{2014} witness.test/one "), "{text}");
    assert!(lines[6].starts_with("\u{2014} witness.test/two "), "{text}");
    assert_eq!(w.w1.latest(ORIGIN).map(|l| l.0), Some(3));
    assert_eq!(w.w2.latest(ORIGIN).map(|l| l.0), Some(3));

    // `checkpoint --remote`: the same size and root, recomputed from the remote's log.
    let out = run(&a, &["checkpoint", "--remote", "origin"]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(out.json["data"]["size"], json!(3));
    assert_eq!(out.json["data"]["root"], json!(lines[2]));

    // A fresh store with the policy kept with its remote: the pull verifies everything.
    let b = w.store();
    let out = run(
        &b,
        &["remote", "witnesses", "origin", w.policy.to_str().unwrap()],
    );
    assert_eq!(out.code, 0, "{}", out.json);
    let out = run(&b, &["pull"]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(out.json["data"]["created"], json!(3));
    let c = &out.json["data"]["checkpoint"];
    assert_eq!(c["cosigned_by"], json!(["W1", "W2"]), "{}", out.json);
    assert_eq!(c["findings"], json!([]));
    assert_eq!(c["sequence_size"], json!(3));
    // With --witness-fresh too: both witnesses cosign it again.
    let out = run(&b, &["pull", "--witness-fresh"]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(
        out.json["data"]["checkpoint"]["fresh_by"],
        json!(["W1", "W2"])
    );

    // A second push grows the log; each witness gets a consistency proof from 3.
    w.add(&a, &["four", "five"]);
    let out = w.push(&a, &[]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(
        out.json["data"]["witnessed"]["checkpoint"]["size"],
        json!(5)
    );
    let last = w.w1.requests().pop().unwrap();
    assert!(last.starts_with("old 3\n"), "{last}");
    let out = run(&b, &["pull"]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(
        out.json["data"]["checkpoint"]["checkpoint"]["size"],
        json!(5)
    );
}

#[test]
fn a_rewound_remote_is_caught_by_a_fresh_store_that_asks_the_witnesses() {
    let Some((mut w, a)) = World::with_three_pushed() else {
        return;
    };
    let at_three = w.log_ref();
    w.add(&a, &["falsification of something"]);
    w.add(&a, &["five"]);
    let out = w.push(&a, &[]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(w.w1.latest(ORIGIN).map(|l| l.0), Some(5));
    // Whoever can push moves the log back, checkpoint and all.
    w.move_log_back(&at_three);

    // A fresh store (a CI runner) without asking the witnesses sees a consistent log of 3.
    let b = w.store();
    let policy = w.policy.to_str().unwrap().to_owned();
    let out = run(&b, &["pull", "--witness-policy", &policy]);
    assert_eq!(out.code, 0, "{}", out.json);
    // Asking them: both have cosigned 5 entries of this log.
    let c = w.store();
    let out = run(
        &c,
        &["pull", "--witness-policy", &policy, "--witness-fresh"],
    );
    assert_eq!(out.code, 3, "{}", out.json);
    assert_eq!(code(&out), "REMOTE_REWOUND", "{}", out.json);
    let message = out.json["error"]["message"].as_str().unwrap();
    assert!(message.contains("5"), "{message}");
    // What verified is still ingested.
    assert_eq!(out.json["data"]["created"], json!(3));
}

#[test]
fn a_forked_log_of_the_same_size_is_refused_by_the_witnesses() {
    let Some((mut w, _)) = World::with_three_pushed() else {
        return;
    };
    // Another history of three envelopes, signed with the same log key, written elsewhere
    // and then forced onto the remote: same size, another root.
    let other = w.tmp.path().join("other.git");
    assert!(Command::new("git")
        .args(["init", "--quiet", "--bare"])
        .arg(&other)
        .status()
        .unwrap()
        .success());
    let f = w.store();
    let out = run(&f, &["remote", "add", "fork", other.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.json);
    w.add(&f, &["uno", "dos", "tres"]);
    let out = run(
        &f,
        &[
            "push",
            "fork",
            "--log-key",
            w.log_key.to_str().unwrap(),
            "--witness-policy",
            w.policy.to_str().unwrap(),
        ],
    );
    // The witnesses refuse to cosign the fork (422): reported, the checkpoint still written.
    assert_eq!(out.code, 3, "{}", out.json);
    assert_eq!(code(&out), "REMOTE_REWOUND", "{}", out.json);
    git(
        &w.remote,
        &[
            "fetch",
            "--quiet",
            other.to_str().unwrap(),
            "+refs/elench/log:refs/elench/log",
        ],
    );
    let c = w.store();
    let policy = w.policy.to_str().unwrap().to_owned();
    let out = run(
        &c,
        &["pull", "--witness-policy", &policy, "--witness-fresh"],
    );
    assert_eq!(out.code, 3, "{}", out.json);
    assert_eq!(code(&out), "REMOTE_REWOUND", "{}", out.json);
    assert!(
        out.json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("422"),
        "{}",
        out.json
    );
}

#[test]
fn a_witness_down_leaves_the_push_below_quorum_and_the_next_push_asks_it_again() {
    if !have_git() {
        return;
    }
    let mut w = World::new();
    let a = w.store();
    w.add(&a, &["one", "two", "three"]);
    w.w2.set_mode(Mode::Silent);
    let out = w.push(&a, &["--connect-timeout", "1"]);
    assert_eq!(out.code, 3, "{}", out.json);
    assert_eq!(code(&out), "WITNESS_QUORUM", "{}", out.json);
    let message = out.json["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("below the witness policy's quorum; no cosignature from W2"),
        "{message}"
    );
    // Nothing lost: the envelopes and the checkpoint with W1's cosignature are there.
    assert_eq!(out.json["data"]["pushed"], json!(3));
    assert_eq!(out.json["data"]["witnessed"]["cosigned_by"], json!(["W1"]));
    let not: &Value = &out.json["data"]["witnessed"]["not_cosigned"];
    assert!(not.to_string().contains("no answer within"), "{not}");
    assert_eq!(w.remote_checkpoint().lines().count(), 6);
    // A fresh store with the policy sees too few cosignatures.
    let b = w.store();
    let policy = w.policy.to_str().unwrap().to_owned();
    let out = run(&b, &["pull", "--witness-policy", &policy]);
    assert_eq!(out.code, 3, "{}", out.json);
    assert_eq!(code(&out), "WITNESS_QUORUM", "{}", out.json);
    assert_eq!(out.json["data"]["created"], json!(3));
    // The witness is back: a push with nothing new asks it again.
    w.w2.set_mode(Mode::Honest);
    let out = w.push(&a, &[]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(out.json["data"]["pushed"], json!(0));
    assert_eq!(
        out.json["data"]["witnessed"]["cosigned_by"],
        json!(["W1", "W2"])
    );
    let out = run(&b, &["pull", "--witness-policy", &policy]);
    assert_eq!(out.code, 0, "{}", out.json);
}

#[test]
fn a_remote_without_checkpoint_fails_closed_under_a_witness_policy() {
    if !have_git() {
        return;
    }
    let mut w = World::new();
    let a = w.store();
    w.add(&a, &["one"]);
    let out = run(&a, &["push"]);
    assert_eq!(out.code, 0, "{}", out.json);
    let b = w.store();
    let policy = w.policy.to_str().unwrap().to_owned();
    let out = run(&b, &["pull", "--witness-policy", &policy]);
    assert_eq!(out.code, 3, "{}", out.json);
    assert_eq!(code(&out), "NO_CHECKPOINT", "{}", out.json);
    assert_eq!(out.json["data"]["created"], json!(1));
    // Without a policy nothing is asked of the remote.
    let c = w.store();
    assert_eq!(run(&c, &["pull"]).code, 0);
}

/// Replaces the remote's checkpoint with `text`, in a commit made with git by hand.
fn write_checkpoint_by_hand(w: &World, text: &str) {
    let work = w.tmp.path().join("by-hand");
    let g = |args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(&work)
            .args(["-c", "user.name=mallory", "-c", "user.email=m@example.org"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    assert!(Command::new("git")
        .args(["init", "--quiet"])
        .arg(&work)
        .status()
        .unwrap()
        .success());
    g(&[
        "fetch",
        "--quiet",
        w.remote.to_str().unwrap(),
        "refs/elench/log",
    ]);
    g(&["checkout", "--quiet", "FETCH_HEAD"]);
    std::fs::write(work.join("checkpoint"), text).unwrap();
    g(&["add", "checkpoint"]);
    g(&["commit", "--quiet", "-m", "a checkpoint"]);
    g(&[
        "push",
        "--quiet",
        w.remote.to_str().unwrap(),
        "HEAD:refs/elench/log",
    ]);
}

#[test]
fn a_checkpoint_that_does_not_describe_the_log_beside_it_is_a_mismatch() {
    let Some((mut w, _)) = World::with_three_pushed() else {
        return;
    };
    // Signed with the log key, but over another root.
    let cp = elench::witness::checkpoint::Checkpoint {
        origin: ORIGIN.into(),
        size: 3,
        root: [9; 32],
    };
    let note = cp.sign(&SigningKey::from_bytes(&[77; 32])).unwrap();
    write_checkpoint_by_hand(&w, &note.to_text());
    let b = w.store();
    let out = run(&b, &["pull"]);
    assert_eq!(out.code, 3, "{}", out.json);
    assert_eq!(code(&out), "CHECKPOINT_MISMATCH", "{}", out.json);
    assert_eq!(out.json["data"]["created"], json!(3));
}

#[test]
fn a_store_that_pulled_before_notices_the_remote_moved_back_without_asking_anyone() {
    let Some((mut w, a)) = World::with_three_pushed() else {
        return;
    };
    let at_three = w.log_ref();
    w.add(&a, &["four"]);
    assert_eq!(w.push(&a, &[]).code, 0);
    let b = w.store();
    assert_eq!(run(&b, &["pull"]).code, 0);
    w.move_log_back(&at_three);
    let out = run(&b, &["pull"]);
    assert_eq!(out.code, 3, "{}", out.json);
    assert_eq!(code(&out), "REMOTE_REWOUND", "{}", out.json);
    // Said again on the next pull: what the store remembers does not move back.
    let out = run(&b, &["pull"]);
    assert_eq!(code(&out), "REMOTE_REWOUND", "{}", out.json);
}

#[test]
fn the_gate_s_witness_fresh_rule_fails_on_a_rewound_remote() {
    if !have_git() {
        return;
    }
    let mut w = World::new();
    let a = w.store_that_pushed(&["one", "two"]);
    let at_two = w.log_ref();
    w.add(&a, &["three"]);
    assert_eq!(w.push(&a, &[]).code, 0);
    let tree = w.tmp.path().join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(tree.join("README"), "hello\n").unwrap();
    let gate_policy = w.tmp.path().join("gate.toml");
    std::fs::write(
        &gate_policy,
        "[rules]\nmin_in_scope = 0\nwitness_fresh = true\n",
    )
    .unwrap();
    let b = w.store();
    let gate = |store: &Path| {
        run(
            store,
            &[
                "gate",
                "--policy",
                gate_policy.to_str().unwrap(),
                "--at",
                tree.to_str().unwrap(),
            ],
        )
    };
    // No witness policy kept with the remote: it fails closed.
    let out = gate(&b);
    assert_eq!(out.code, 79, "{}", out.json);
    assert_eq!(
        out.json["data"]["violations"][0]["rule"],
        json!("remote-rewound")
    );
    let out = run(
        &b,
        &["remote", "witnesses", "origin", w.policy.to_str().unwrap()],
    );
    assert_eq!(out.code, 0, "{}", out.json);
    let out = gate(&b);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(
        out.json["data"]["policy"]["rules"]["witness_fresh"],
        json!(true)
    );
    w.move_log_back(&at_two);
    let c = w.store();
    let out = run(
        &c,
        &["remote", "witnesses", "origin", w.policy.to_str().unwrap()],
    );
    assert_eq!(out.code, 0, "{}", out.json);
    let out = gate(&c);
    assert_eq!(out.code, 79, "{}", out.json);
    let v = &out.json["data"]["violations"][0];
    assert_eq!(v["rule"], json!("remote-rewound"), "{}", out.json);
    assert!(
        v["message"].as_str().unwrap().starts_with("REMOTE_REWOUND"),
        "{v}"
    );
    // Both witnesses saw more, and so neither cosigned it now: below the quorum too.
    assert_eq!(
        out.json["data"]["counts"]["violations"]["remote_rewound"],
        json!(3)
    );
}

#[test]
fn a_checkpoint_that_loses_the_race_for_the_log_is_signed_again_over_the_new_head() {
    let Some((mut w, a)) = World::with_three_pushed() else {
        return;
    };
    let b = w.store();
    w.add(&b, &["five"]);
    w.add(&a, &["four"]);
    // While the first witness is asked, another store pushes: the log moves between the
    // head the checkpoint was computed over and the commit that writes it.
    let other = b.clone();
    w.w1.before_next_answer(move || {
        let out = run(&other, &["push"]);
        assert_eq!(out.code, 0, "{}", out.json);
    });
    let out = w.push(&a, &[]);
    assert_eq!(out.code, 0, "{}", out.json);
    let witnessed = &out.json["data"]["witnessed"];
    assert_eq!(witnessed["attempts"], json!(2), "{}", out.json);
    assert_eq!(witnessed["checkpoint"]["size"], json!(5), "{}", out.json);
    assert_eq!(witnessed["cosigned_by"], json!(["W1", "W2"]));
    assert_eq!(w.remote_checkpoint().lines().nth(1), Some("5"));
    // The witnesses were asked again from the size they cosigned in the lost attempt.
    let last = w.w2.requests().pop().unwrap();
    assert!(last.starts_with("old 4\n"), "{last}");
    // A fresh store verifies it.
    let c = w.store();
    let policy = w.policy.to_str().unwrap().to_owned();
    let out = run(&c, &["pull", "--witness-policy", &policy]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(out.json["data"]["created"], json!(5));
}

#[test]
fn a_store_that_cannot_push_accepts_the_remote_s_new_history_with_remote_forget() {
    let Some((mut w, a)) = World::with_three_pushed() else {
        return;
    };
    let at_three = w.log_ref();
    w.add(&a, &["four"]);
    assert_eq!(w.push(&a, &[]).code, 0);
    let b = w.store();
    let out = run(&b, &["pull"]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(
        out.json["data"]["checkpoint"]["checkpoint"]["size"],
        json!(4)
    );
    let at_four = w.log_ref();
    w.move_log_back(&at_three);
    assert_eq!(code(&run(&b, &["pull"])), "REMOTE_REWOUND");

    let out = run(&b, &["remote", "forget", "origin"]);
    assert_eq!(out.code, 0, "{}", out.json);
    let f = &out.json["data"]["forgotten"];
    assert_eq!(f["held"], json!(at_four.trim()), "{}", out.json);
    assert_eq!(f["sequence_size"], json!(4), "{}", out.json);
    assert_eq!(f["checkpoint"]["size"], json!(4), "{}", out.json);
    assert_eq!(out.json["data"]["effect"], json!("updated"));
    let warning = &out.json["warnings"][0];
    assert_eq!(warning["code"], json!("MEMORY_FORGOTTEN"), "{}", out.json);
    let message = warning["message"].as_str().unwrap();
    assert!(message.contains(at_four.trim()), "{message}");
    assert!(message.contains("4 entries"), "{message}");

    // The remote's history now is taken as it is, and remembered from here on.
    let out = run(&b, &["pull"]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(
        out.json["data"]["checkpoint"]["checkpoint"]["size"],
        json!(3)
    );
    assert_eq!(run(&b, &["pull"]).code, 0);
    // An unknown remote is named.
    let out = run(&b, &["remote", "forget", "upstream"]);
    assert_eq!(out.code, 5, "{}", out.json);
}

#[test]
fn a_log_key_trusted_by_a_trust_policy_verifies_the_remote_s_checkpoint() {
    let Some((w, _)) = World::with_three_pushed() else {
        return;
    };
    let dir = w.tmp.path().join("team");
    let root = common::fixed_key(&dir, "human", "root", 0x61);
    let log = common::fixed_key(&dir, "log", "widgets-log", 77);
    let claims = w.keys.write_files(&dir);
    let policy = w.policy.to_str().unwrap().to_owned();
    // Two stores pinned to the team's root; the policy of one lists the log key too.
    let pinned = |name: &str, with_log: bool| {
        let store = w.tmp.path().join(name);
        let out = run(
            &store,
            &["init", "--root-key", root.public.to_str().unwrap()],
        );
        assert_eq!(out.code, 0, "{}", out.json);
        let mut keys: Vec<&common::KeyPair> = claims.trusted_pairs().to_vec();
        if with_log {
            keys.push(&log);
        }
        let toml = w.tmp.path().join(format!("{name}.toml"));
        common::write_trust_toml(&toml, "example.org/widgets", &[&root], 1, &keys, "");
        let signed = w.tmp.path().join(format!("{name}.dsse"));
        let out = run(
            &store,
            &[
                "trust",
                "sign",
                toml.to_str().unwrap(),
                "--key",
                root.private.to_str().unwrap(),
                "-o",
                signed.to_str().unwrap(),
                "--append",
            ],
        );
        assert_eq!(out.code, 0, "{}", out.json);
        let out = run(
            &store,
            &["remote", "add", "origin", w.remote.to_str().unwrap()],
        );
        assert_eq!(out.code, 0, "{}", out.json);
        store
    };
    let with = pinned("with-log", true);
    let out = run(&with, &["pull", "--witness-policy", &policy]);
    assert_eq!(out.code, 0, "{}", out.json);
    let c = &out.json["data"]["checkpoint"];
    assert_eq!(c["findings"], json!([]), "{}", out.json);
    assert_eq!(c["checkpoint"]["size"], json!(3));
    assert_eq!(c["cosigned_by"], json!(["W1", "W2"]));
    // The same team without the log key in its policy cannot verify the checkpoint.
    let without = pinned("without-log", false);
    let out = run(&without, &["pull", "--witness-policy", &policy]);
    assert_eq!(out.code, 3, "{}", out.json);
    assert_eq!(code(&out), "NO_CHECKPOINT", "{}", out.json);
}

#[test]
fn the_gate_s_witness_timeout_bounds_each_witness_request() {
    let Some((mut w, _)) = World::with_three_pushed() else {
        return;
    };
    let b = w.store();
    let out = run(
        &b,
        &["remote", "witnesses", "origin", w.policy.to_str().unwrap()],
    );
    assert_eq!(out.code, 0, "{}", out.json);
    let tree = w.tmp.path().join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    let gate_policy = w.tmp.path().join("gate.toml");
    std::fs::write(
        &gate_policy,
        "[rules]\nmin_in_scope = 0\nwitness_fresh = true\nwitness_timeout = 1\n",
    )
    .unwrap();
    w.w2.set_mode(Mode::Silent);
    let started = std::time::Instant::now();
    let out = run(
        &b,
        &[
            "gate",
            "--policy",
            gate_policy.to_str().unwrap(),
            "--at",
            tree.to_str().unwrap(),
        ],
    );
    let took = started.elapsed();
    assert_eq!(out.code, 79, "{}", out.json);
    assert!(took < std::time::Duration::from_secs(20), "{took:?}");
    assert_eq!(
        out.json["data"]["policy"]["rules"]["witness_timeout"],
        json!(1)
    );
    let v = out.json["data"]["violations"].to_string();
    assert!(v.contains("W2") && v.contains("within 1"), "{v}");
    // A limit that is none is refused, with its line.
    std::fs::write(&gate_policy, "[rules]\nwitness_timeout = 0\n").unwrap();
    let out = run(
        &b,
        &[
            "gate",
            "--policy",
            gate_policy.to_str().unwrap(),
            "--at",
            tree.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 2, "{}", out.json);
    assert!(
        out.json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("witness_timeout"),
        "{}",
        out.json
    );
}
