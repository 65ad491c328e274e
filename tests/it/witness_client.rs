//! elench's tlog-witness client against a witness that is not elench's code
//! (`tlog_witness`, written from the C2SP texts alone), on loopback: a first cosignature,
//! a consistency proof from the size the witness cosigned, a 409 and the retry from the size
//! it names, a rewound and a forked log, an unknown origin, a log key the witness does not
//! trust, and the bounds: a witness that never answers, a redirect, an answer too large, a
//! 409 without its content type.

use crate::tlog_witness::{Mode, TestWitness};
use ed25519_dalek::SigningKey;
use elench::witness::checkpoint::Checkpoint;
use elench::witness::client::{cosign, Client, Outcome, Witness};
use elench::witness::merkle::Tree;
use elench::witness::note::Vkey;
use std::time::{Duration, Instant};

const ORIGIN: &str = "example.org/elench-test-log";

fn log_key() -> SigningKey {
    SigningKey::from_bytes(&[42; 32])
}

fn tree(n: u32) -> Tree {
    let mut t = Tree::new();
    for i in 0..n {
        t.push(format!("entry {i}").as_bytes());
    }
    t
}

fn witness() -> TestWitness {
    TestWitness::start(
        "witness.test/w1",
        7,
        vec![(ORIGIN.to_owned(), log_key().verifying_key())],
    )
}

/// Asks `w` to cosign the checkpoint of `t` signed by `key`, from `old`.
fn ask(w: &TestWitness, t: &Tree, key: &SigningKey, old: u64, timeout: Duration) -> Outcome {
    let cp = Checkpoint {
        origin: ORIGIN.into(),
        size: t.size(),
        root: t.root(),
    };
    let note = cp.sign(key).unwrap();
    let vkey = Vkey::parse(&w.vkey()).unwrap();
    let client = Client::new(timeout);
    let wit = Witness {
        name: "w1",
        vkey: &vkey,
        url: &w.url,
    };
    cosign(&client, &wit, &cp, &note, old, &|m| {
        t.consistency_proof(m, t.size()).ok()
    })
}

const T: Duration = Duration::from_secs(10);

#[test]
fn a_witness_cosigns_then_cosigns_a_larger_tree_with_a_proof() {
    let w = witness();
    let t = tree(5);
    let Outcome::Cosigned { old, time, .. } = ask(&w, &t, &log_key(), 0, T) else {
        panic!("not cosigned")
    };
    assert_eq!(old, 0);
    assert!(time > 1_600_000_000);
    assert_eq!(w.latest(ORIGIN), Some((5, t.root())));
    let t2 = tree(13);
    let got = ask(&w, &t2, &log_key(), 5, T);
    assert!(matches!(got, Outcome::Cosigned { old: 5, .. }), "{got:?}");
    assert_eq!(w.latest(ORIGIN), Some((13, t2.root())));
    // The request carried `old 5`, the proof's hashes, a blank line and the checkpoint.
    let last = w.requests().pop().unwrap();
    let proof = t2.consistency_proof(5, 13).unwrap();
    assert!(last.starts_with("old 5\n"), "{last}");
    assert_eq!(
        last.split("\n\n").next().unwrap().lines().count(),
        1 + proof.len()
    );
    // The same checkpoint again, from its own size: cosigned again.
    assert!(matches!(
        ask(&w, &t2, &log_key(), 13, T),
        Outcome::Cosigned { old: 13, .. }
    ));
}

#[test]
fn a_409_is_followed_by_a_request_from_the_size_it_names() {
    let w = witness();
    let t = tree(20);
    w.set_latest(ORIGIN, 7, t.root_at(7).unwrap());
    let got = ask(&w, &t, &log_key(), 0, T);
    assert!(matches!(got, Outcome::Cosigned { old: 7, .. }), "{got:?}");
    assert_eq!(w.requests().len(), 2);
}

#[test]
fn a_rewound_log_meets_a_witness_that_saw_more() {
    let w = witness();
    let big = tree(30);
    assert!(matches!(
        ask(&w, &big, &log_key(), 0, T),
        Outcome::Cosigned { .. }
    ));
    // The log shows 12 entries now: the witness names 30 in its 409.
    let small = tree(12);
    assert_eq!(
        ask(&w, &small, &log_key(), 12, T),
        Outcome::Ahead { witness_size: 30 }
    );
    assert_eq!(
        ask(&w, &small, &log_key(), 0, T),
        Outcome::Ahead { witness_size: 30 }
    );
    assert_eq!(w.latest(ORIGIN), Some((30, big.root())));
}

#[test]
fn a_forked_log_of_the_same_size_is_refused_with_422() {
    let w = witness();
    let t = tree(9);
    assert!(matches!(
        ask(&w, &t, &log_key(), 0, T),
        Outcome::Cosigned { .. }
    ));
    let mut fork = Tree::new();
    for i in 0..9u32 {
        fork.push(format!("other {i}").as_bytes());
    }
    let got = ask(&w, &fork, &log_key(), 9, T);
    assert!(matches!(got, Outcome::Inconsistent { .. }), "{got:?}");
    // A fork that grows: the proof from 9 does not lead from the root the witness holds.
    let mut longer = fork.clone();
    longer.push(b"more");
    let got = ask(&w, &longer, &log_key(), 9, T);
    assert!(matches!(got, Outcome::Inconsistent { .. }), "{got:?}");
}

#[test]
fn an_unknown_origin_or_an_untrusted_log_key_gets_no_cosignature() {
    let w = TestWitness::start("witness.test/w1", 7, vec![]);
    let Outcome::Failed { message } = ask(&w, &tree(3), &log_key(), 0, T) else {
        panic!()
    };
    assert!(message.contains("404"), "{message}");
    let w = witness();
    let other = SigningKey::from_bytes(&[43; 32]);
    let Outcome::Failed { message } = ask(&w, &tree(3), &other, 0, T) else {
        panic!()
    };
    assert!(message.contains("403"), "{message}");
}

#[test]
fn a_silent_witness_is_given_up_within_the_time_limit() {
    let w = witness();
    w.set_mode(Mode::Silent);
    let start = Instant::now();
    let Outcome::Failed { message } = ask(&w, &tree(3), &log_key(), 0, Duration::from_millis(700))
    else {
        panic!()
    };
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert!(message.contains("no answer within"), "{message}");
}

#[test]
fn redirects_are_not_followed_and_answers_are_bounded() {
    let w = witness();
    let other = witness();
    w.set_mode(Mode::Redirect(format!("{}/add-checkpoint", other.url)));
    let Outcome::Failed { message } = ask(&w, &tree(3), &log_key(), 0, T) else {
        panic!()
    };
    assert!(message.contains("302"), "{message}");
    assert!(other.requests().is_empty());
    w.set_mode(Mode::Flood(300 * 1024));
    let Outcome::Failed { message } = ask(&w, &tree(3), &log_key(), 0, T) else {
        panic!()
    };
    assert!(message.contains("bytes"), "{message}");
    w.set_mode(Mode::UntypedConflict);
    let Outcome::Failed { message } = ask(&w, &tree(3), &log_key(), 0, T) else {
        panic!()
    };
    assert!(message.contains("text/x.tlog.size"), "{message}");
}

#[test]
fn a_cosignature_by_another_key_is_not_taken() {
    // The witness signs with seed 7; the client expects the key of seed 8 under its name.
    let w = witness();
    let t = tree(4);
    let cp = Checkpoint {
        origin: ORIGIN.into(),
        size: t.size(),
        root: t.root(),
    };
    let note = cp.sign(&log_key()).unwrap();
    let wrong = Vkey::new(
        "witness.test/w1",
        elench::witness::note::KeyType::Cosignature,
        SigningKey::from_bytes(&[8; 32]).verifying_key(),
    )
    .unwrap();
    let got = cosign(
        &Client::new(T),
        &Witness {
            name: "w1",
            vkey: &wrong,
            url: &w.url,
        },
        &cp,
        &note,
        0,
        &|m| t.consistency_proof(m, t.size()).ok(),
    );
    let Outcome::Failed { message } = got else {
        panic!("{got:?}")
    };
    assert!(message.contains("without a valid cosignature"), "{message}");
}
