//! What ingest pays for a predicate's regular expressions, against a baseline in the same run.
//!
//!     cargo bench --bench regex_ingest
//!
//! - `verify/plain`: the whole ingest check (`verify_envelope`) of an annotation claim;
//! - `verify/32_heavy_regexes`: the same for a predicate holding the most regexes a predicate
//!   may (32), each `(\w{50}){4}`, slow to compile and quick to parse;
//! - `compile/32_heavy_regexes`: compiling those 32 patterns with `regex::bytes`, which is
//!   what ingest used to do while holding the store, and what evaluation now does.
//!
//! Ingest should stay within a small factor of `verify/plain`; `compile` shows what it no
//! longer pays.

use criterion::{criterion_group, criterion_main, Criterion};
use ed25519_dalek::SigningKey;
use elench::ingest::{seal, verify_envelope};
use elench::keys::{Role, TrustSet, TrustedKey};
use serde_json::{json, Value};
use std::time::Duration;

const TREE: &str = "0d1b2a3c4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9";
const HEAVY: &str = r"(\w{50}){4}";

fn claim(assertion: Value) -> Value {
    json!({"kind": "assertion", "assertion": assertion,
           "origin": {"kind": "agent-asserted", "producer": {"id": "bench"}},
           "anchor": {"tree": TREE, "strategy": "multi"}, "timestamp": 1})
}

fn bench(c: &mut Criterion) {
    let key = SigningKey::from_bytes(&[7; 32]);
    let trust = TrustSet::new(vec![TrustedKey::new(
        Role::Agent,
        "bench",
        key.verifying_key(),
    )
    .expect("a sound key")]);
    let plain = claim(json!({"form": "annotation", "text": "plain"}));
    let source = vec![format!("run(\"x\").stdout.matches({:?})", HEAVY); 32].join(" && ");
    let heavy = claim(json!({"form": "predicate", "text": "heavy",
        "expression": {"language": "elench-predicate-v1", "source": source}}));
    let (_, plain_env) = seal(&plain, &key).expect("the plain claim seals");
    let (_, heavy_env) = seal(&heavy, &key).expect("the heavy claim seals");

    let mut g = c.benchmark_group("regex_ingest");
    g.measurement_time(Duration::from_secs(3));
    g.bench_function("verify/plain", |b| {
        b.iter(|| verify_envelope(plain_env.as_bytes(), &trust).expect("accepted"))
    });
    g.bench_function("verify/32_heavy_regexes", |b| {
        b.iter(|| verify_envelope(heavy_env.as_bytes(), &trust).expect("accepted"))
    });
    g.sample_size(10);
    // Compiling in the loop is what is measured.
    #[allow(clippy::regex_creation_in_loops)]
    g.bench_function("compile/32_heavy_regexes", |b| {
        b.iter(|| {
            for _ in 0..32 {
                regex::bytes::Regex::new(HEAVY).expect("compiles");
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
