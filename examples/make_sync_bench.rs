//! Writes the inputs of `benches/sync.sh`: signed envelopes for the sync benchmark, the
//! public keys that verify them, and the same envelopes as git fast-import streams, for the
//! plain-git baseline.
//!
//!     cargo run --release --example make_sync_bench -- DIR BASE EXTRA
//!
//! DIR gets `agent.pub.pem`, `base.intoto.jsonl` (BASE envelopes), `extra.intoto.jsonl`
//! (EXTRA more), and `base.fi` / `extra.fi`: the same envelopes, in canonical form, at the
//! paths elench gives them, as commits on `refs/heads/main` (the second on top of the first).
//! Keys come from a fixed seed, so runs are reproducible.

use ed25519_dalek::SigningKey;
use elench::ingest::seal;
use elench::keys::public_key_pem;
use elench::store::record;
use elench::sync::layout;
use serde_json::json;
use std::io::Write;
use std::path::Path;

const TREE: &str = "7c1e0b9a2d4f6a8c0e2b4d6f8a0c2e4b6d8f0a2c4e6b8d0f2a4c6e8b0d2f4a6c";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(dir), Some(base), Some(extra)) = (args.get(1), args.get(2), args.get(3)) else {
        eprintln!("usage: make_sync_bench DIR BASE EXTRA");
        std::process::exit(2);
    };
    let base: usize = base.parse().expect("BASE is a number");
    let extra: usize = extra.parse().expect("EXTRA is a number");
    let dir = Path::new(dir);
    std::fs::create_dir_all(dir).expect("create DIR");
    let key = SigningKey::from_bytes(&[0x5b; 32]);
    std::fs::write(
        dir.join("agent.pub.pem"),
        public_key_pem(&key.verifying_key()).expect("public key PEM"),
    )
    .expect("write key");
    let mut ids: Vec<String> = Vec::with_capacity(base + extra);
    write_part(dir, "base", 0..base, &key, &mut ids, None);
    write_part(
        dir,
        "extra",
        base..base + extra,
        &key,
        &mut ids,
        Some("main"),
    );
}

fn write_part(
    dir: &Path,
    name: &str,
    range: std::ops::Range<usize>,
    key: &SigningKey,
    ids: &mut Vec<String>,
    parent: Option<&str>,
) {
    let mut bundle = std::io::BufWriter::new(
        std::fs::File::create(dir.join(format!("{name}.intoto.jsonl"))).expect("bundle"),
    );
    let mut fi =
        std::io::BufWriter::new(std::fs::File::create(dir.join(format!("{name}.fi"))).expect("fi"));
    let msg = format!("{name}\n");
    write!(
        fi,
        "commit refs/heads/main\ncommitter bench <bench@localhost> 0 +0000\ndata {}\n{msg}",
        msg.len()
    )
    .expect("fi");
    if let Some(p) = parent {
        writeln!(fi, "from refs/heads/{p}^0").expect("fi");
    }
    for i in range {
        // Every tenth claim builds on an earlier one, as real logs do.
        let deps: Vec<&String> = if i % 10 == 9 {
            ids.get(i / 2).into_iter().collect()
        } else {
            Vec::new()
        };
        let claim = json!({
            "kind": "assertion",
            "assertion": {"form": "annotation", "text": format!("benchmark claim {i}")},
            "origin": {"kind": "agent-asserted", "producer": {"id": "bench/1"}},
            "anchor": {"tree": TREE, "strategy": "multi"},
            "timestamp": 1_700_000_000 + i as i64,
            "dependsOn": deps,
        });
        let (c, env) = seal(&claim, key).expect("benchmark claims are valid");
        writeln!(bundle, "{env}").expect("bundle");
        let canonical = record::canonical_envelope(env.as_bytes()).expect("an envelope is JSON");
        let path = layout::envelope_path(&c.id, &hex::encode(record::envelope_digest(&canonical)));
        write!(fi, "M 100644 inline {path}\ndata {}\n", canonical.len()).expect("fi");
        fi.write_all(&canonical).expect("fi");
        fi.write_all(b"\n").expect("fi");
        ids.push(c.id);
    }
    fi.write_all(b"\n").expect("fi");
    bundle.flush().expect("bundle");
    fi.flush().expect("fi");
}
