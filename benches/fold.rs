//! Status and blast-radius cost against the size of the log.
//!
//!     cargo bench --bench fold
//!
//! Each store holds a fixed neighbourhood (a chain of 10 premises under the measured claim,
//! a verification and a falsification of the chain's root, and a 100-claim closure below the
//! blast root) plus N unrelated claims. If a query reads only the neighbourhood, as
//! docs/status.md and docs/blast.md require, its time stays flat as N grows from 1,000 to 10,000.
//! Stores are built once under target/bench-stores and reused.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ed25519_dalek::SigningKey;
use elench::fold::Fold;
use elench::graph::blast;
use elench::ingest::{seal, verify_envelope};
use elench::keys::{Role, TrustedKey};
use elench::store::Store;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;

const TREE: &str = "0d1b2a3c4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9";

fn assertion(text: &str, premises: &[String]) -> Value {
    json!({"kind": "assertion", "assertion": {"form": "annotation", "text": text},
           "origin": {"kind": "agent-asserted", "producer": {"id": "bench"}},
           "anchor": {"tree": TREE, "strategy": "multi"}, "timestamp": 1, "dependsOn": premises})
}

fn record(kind: &str, target: &str, text: &str) -> Value {
    json!({"kind": kind, "target": [target], "assertion": {"form": "annotation", "text": text},
           "origin": {"kind": "harness-observed", "producer": {"id": "bench-harness"}},
           "anchor": {"tree": TREE, "strategy": "multi"}, "timestamp": 2})
}

struct Built {
    store: Store,
    status_target: String,
    blast_root: String,
}

fn build(n: usize) -> Built {
    let agent = SigningKey::from_bytes(&[11; 32]);
    let harness = SigningKey::from_bytes(&[12; 32]);
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("target/bench-stores/n{n}"));
    let fresh = !dir.join("FORMAT").exists();
    let (store, _) =
        Store::init(&dir, &elench::store::Options::new(Duration::from_secs(30))).expect("store");
    let add = |store: &Store, claim: Value, key: &SigningKey| -> String {
        let (c, env) = seal(&claim, key).expect("seal");
        if fresh {
            let trust = store.trust_set().expect("keys");
            let accepted = verify_envelope(env.as_bytes(), &trust).expect("valid");
            store.add(&accepted, env.as_bytes()).expect("add");
        }
        c.id
    };
    if fresh {
        for (role, key) in [(Role::Agent, &agent), (Role::Harness, &harness)] {
            let k = TrustedKey::new(role, role.as_str(), key.verifying_key()).expect("key");
            store.add_key(&k).expect("add key");
        }
    }
    // The neighbourhood of the status target: a chain of 10 premises.
    let mut chain: Vec<String> = Vec::new();
    for i in 0..10 {
        let premises: Vec<String> = chain.last().cloned().into_iter().collect();
        chain.push(add(
            &store,
            assertion(&format!("chain {i}"), &premises),
            &agent,
        ));
    }
    let target = add(&store, assertion("status target", &chain[9..]), &agent);
    add(
        &store,
        record("verification", &chain[0], "verified"),
        &harness,
    );
    add(
        &store,
        record("falsification", &chain[0], "falsified"),
        &harness,
    );
    // A 100-claim closure: root, 9 children, 90 grandchildren.
    let root = add(&store, assertion("blast root", &[]), &agent);
    for i in 0..9 {
        let child = add(
            &store,
            assertion(&format!("child {i}"), std::slice::from_ref(&root)),
            &agent,
        );
        for j in 0..10 {
            add(
                &store,
                assertion(&format!("grandchild {i}.{j}"), std::slice::from_ref(&child)),
                &agent,
            );
        }
    }
    // Unrelated claims, in small chains of their own.
    if fresh {
        let mut prev: Option<String> = None;
        for i in 0..n {
            let premises: Vec<String> = if i % 5 == 0 {
                Vec::new()
            } else {
                prev.clone().into_iter().collect()
            };
            prev = Some(add(
                &store,
                assertion(&format!("unrelated {i}"), &premises),
                &agent,
            ));
        }
    }
    Built {
        store,
        status_target: target,
        blast_root: root,
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("query");
    group.sample_size(30);
    for n in [1_000usize, 10_000] {
        let b = build(n);
        group.bench_with_input(BenchmarkId::new("status", n), &b, |bench, b| {
            bench.iter(|| {
                let mut fold = Fold::new(&b.store);
                let r = fold.report(&b.status_target).expect("status");
                assert_eq!(r.status.as_str(), "revoked");
            })
        });
        group.bench_with_input(BenchmarkId::new("blast_100", n), &b, |bench, b| {
            bench.iter(|| {
                let mut fold = Fold::new(&b.store);
                let r = blast(&mut fold, &b.blast_root, None).expect("blast");
                assert_eq!(r.count, 99);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
