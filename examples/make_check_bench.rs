//! Signs the predicate claims of `benches/check/run.sh` in one process: one agent claim per
//! line of SOURCES (a predicate's source), anchored to TREE, written as one envelope per line
//! to OUT. Signing 10,000 claims with one `elench sign` process each took minutes; this takes
//! about a second.
//!
//!     cargo run --release --example make_check_bench -- KEY.pem TREE SOURCES OUT
//!
//! The claims are the ones the script's `claims` function writes: `timestamp` 1764000000 + n
//! for the n-th line (from 1), so the same inputs give the same claims.

use elench::ingest::seal;
use elench::keys::read_signing_key_pem;
use serde_json::json;
use std::io::{BufRead, Write};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(key), Some(tree), Some(sources), Some(out)) =
        (args.get(1), args.get(2), args.get(3), args.get(4))
    else {
        eprintln!("usage: make_check_bench KEY.pem TREE SOURCES OUT");
        std::process::exit(2);
    };
    let pem = std::fs::read_to_string(key).unwrap_or_else(|e| fail(key, e));
    let key = read_signing_key_pem(&pem).unwrap_or_else(|e| fail(key, e.message));
    let sources = std::fs::File::open(sources).unwrap_or_else(|e| fail(sources, e));
    let file = std::fs::File::create(out).unwrap_or_else(|e| fail(out, e));
    let mut bundle = std::io::BufWriter::new(file);
    for (n, line) in std::io::BufReader::new(sources).lines().enumerate() {
        let source = line.unwrap_or_else(|e| fail("SOURCES", e));
        let claim = json!({
            "kind": "assertion",
            "assertion": {"form": "predicate",
                          "expression": {"language": "elench-predicate-v1", "source": source}},
            "origin": {"kind": "agent-asserted", "producer": {"id": "bench"}},
            "anchor": {"tree": tree, "strategy": "multi"},
            "timestamp": 1_764_000_000 + n as i64 + 1,
        });
        let (_, envelope) =
            seal(&claim, &key).unwrap_or_else(|e| fail(&format!("line {}", n + 1), e.message));
        writeln!(bundle, "{envelope}").unwrap_or_else(|e| fail(out, e));
    }
    bundle.flush().unwrap_or_else(|e| fail(out, e));
}

fn fail(what: &str, why: impl std::fmt::Display) -> ! {
    eprintln!("make_check_bench: {what}: {why}");
    std::process::exit(1);
}
