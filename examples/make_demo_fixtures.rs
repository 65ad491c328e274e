//! Writes `fixtures/demo/`: the keys and signed envelopes `elench demo` replays.
//!
//! Keys come from fixed seeds and Ed25519 signatures are deterministic, so running this again
//! reproduces the shipped files byte for byte (a test checks that).
//!
//!     cargo run --example make_demo_fixtures -- fixtures/demo

use ed25519_dalek::SigningKey;
use elench::ingest::seal;
use elench::keys::public_key_pem;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The tree every demo claim is about (the tree OID of an imaginary checkout).
const TREE: &str = "5f1b6a0e3c9d2b7a48e6f0c1d3a5b7c9e1f2a4b6c8d0e2f4a6b8c0d2e4f6a8b0";

fn key(name: &str) -> SigningKey {
    let seed: [u8; 32] = Sha256::digest(format!("elench demo key: {name}")).into();
    SigningKey::from_bytes(&seed)
}

struct Writer {
    dir: PathBuf,
}

impl Writer {
    fn sign(&self, file: &str, claim: Value, signer: &SigningKey) -> String {
        let (c, env) = seal(&claim, signer).unwrap_or_else(|e| panic!("{file}: {e}"));
        std::fs::write(self.dir.join(file), format!("{env}\n")).expect("write envelope");
        c.id
    }
}

/// The small real tree under `fixtures/demo/tree` that `elench check` reads in the demo.
fn demo_tree() -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/demo/tree");
    elench::tree::tree_oid(&dir).expect("tree id of fixtures/demo/tree")
}

fn assertion(text: &str, source: Option<&str>, premises: &[&str], t: i64) -> Value {
    let assertion = match source {
        Some(src) => json!({"form": "predicate", "text": text,
            "expression": {"language": "elench-predicate-v1", "source": src}}),
        None => json!({"form": "annotation", "text": text}),
    };
    json!({
        "kind": "assertion",
        "assertion": assertion,
        "origin": {"kind": "agent-asserted", "producer": {"id": "demo-agent/1.0", "sessionId": "demo-session"}},
        "anchor": {"tree": TREE, "strategy": "multi", "path": "src/parse.rs"},
        "timestamp": t,
        "dependsOn": premises,
    })
}

fn record(kind: &str, target: &str, text: &str, report: &str, t: i64) -> Value {
    json!({
        "kind": kind,
        "target": [target],
        "assertion": {"form": "annotation", "text": text},
        "origin": {"kind": "harness-observed", "producer": {"id": "demo-harness/2.3", "hermeticity": "container"}},
        "anchor": {"tree": TREE, "strategy": "multi"},
        "timestamp": t,
        "evidence": [{"kind": "test-report", "digest": hex::encode(Sha256::digest(report.as_bytes())), "uri": report}],
    })
}

fn main() {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "fixtures/demo".into()),
    );
    std::fs::create_dir_all(&dir).expect("create output directory");
    let agent = key("agent");
    let harness = key("harness");
    for (name, k) in [("agent", &agent), ("harness", &harness)] {
        let pem = public_key_pem(&k.verifying_key()).expect("encode public key");
        std::fs::write(Path::new(&dir).join(format!("{name}.pub")), pem).expect("write key");
    }
    let w = Writer { dir };
    let parse = w.sign(
        "1-parse-rejects-empty.dsse",
        assertion(
            "parse() rejects empty input with an error, never a panic",
            Some("test(\"parse_rejects_empty\").passed"),
            &[],
            1_764_000_000,
        ),
        &agent,
    );
    let loader = w.sign(
        "2-config-loader-total.dsse",
        assertion(
            "load_config() returns an error for every malformed file, because parse() does",
            None,
            &[&parse],
            1_764_000_060,
        ),
        &agent,
    );
    let refactor = w.sign(
        "3-refactor-keeps-behaviour.dsse",
        assertion(
            "moving config loading into the startup path keeps behaviour",
            Some("run(\"cargo test --test startup\").exit == 0"),
            &[&loader],
            1_764_000_120,
        ),
        &agent,
    );
    let verification = w.sign(
        "4-verify-parse.dsse",
        record(
            "verification",
            &parse,
            "parse_rejects_empty passed",
            "reports/run-101.xml",
            1_764_000_300,
        ),
        &harness,
    );
    let falsification = w.sign(
        "5-falsify-parse.dsse",
        record(
            "falsification",
            &parse,
            "fuzzing found a panic: parse(\"\\n\") overflows the line counter",
            "reports/fuzz-17.json",
            1_764_000_900,
        ),
        &harness,
    );
    w.sign(
        "6-falsify-the-falsification.dsse",
        record(
            "falsification",
            &falsification,
            "fuzz-17 ran against a stale build, not this tree; re-run passes",
            "reports/fuzz-18.json",
            1_764_001_500,
        ),
        &harness,
    );
    // Claims about a real tree, for `elench check` to examine in the demo.
    let tree = demo_tree();
    let mut no_unwrap = assertion(
        "nothing in parse.rs unwraps: every failure is returned as an error",
        Some("grep(\".unwrap()\", \"src/parse.rs\") == 0"),
        &[],
        1_764_002_000,
    );
    no_unwrap["anchor"]["tree"] = json!(tree);
    let no_unwrap = w.sign("7-parse-never-unwraps.dsse", no_unwrap, &agent);
    let mut cli = assertion(
        "the CLI answers every malformed config with a message, never a panic",
        None,
        &[&no_unwrap],
        1_764_002_060,
    );
    cli["anchor"]["tree"] = json!(tree);
    w.sign("8-cli-never-panics.dsse", cli, &agent);
    let _ = (refactor, verification);
}
