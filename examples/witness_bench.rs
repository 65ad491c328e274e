//! The remote sequence's Merkle work at 100,000 and 1,000,000 envelopes (docs/benchmarks.md):
//! loading the kept leaf hashes into a tree, hashing 100 new envelopes and scanning the kept
//! leaves for them (an envelope enters the sequence once), appending them, the root, a
//! consistency proof from the old size and its verification.
//!
//!     cargo run --release --example witness_bench [N...]     (default: 100000 1000000)

use elench::witness::merkle::{leaf_hash, verify_consistency, Hash, Tree};
use std::time::Instant;

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

fn main() {
    let sizes: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![100_000, 1_000_000]
    } else {
        sizes
    };
    println!("| envelopes | hash N leaves (ms) | rebuild from N leaf hashes (ms) | load N kept levels from files (ms) | 100 new: hash + scan N (ms) | append 100 (ms) | root (ms) | proof N → N+100 (ms) | verify (ms) |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for n in sizes {
        // An envelope is about 1 KiB.
        let entry = |i: u64| {
            let mut e = vec![b'x'; 1024];
            e[..8].copy_from_slice(&i.to_le_bytes());
            e
        };
        let t = Instant::now();
        let leaves: Vec<Hash> = (0..n).map(|i| leaf_hash(&entry(i))).collect();
        let hash_all = ms(t);
        let bytes: Vec<u8> = leaves.iter().flatten().copied().collect();

        let t = Instant::now();
        let tree = Tree::from_leaf_hashes(bytes.chunks_exact(32).map(|c| {
            let mut h = [0u8; 32];
            h.copy_from_slice(c);
            h
        }));
        let load = ms(t);

        // What a store keeps: one file per level; loading reads them back without hashing.
        let dir = std::env::temp_dir().join(format!("elench-witness-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (h, level) in tree.levels().iter().enumerate() {
            let b: Vec<u8> = level.iter().flatten().copied().collect();
            std::fs::write(dir.join(format!("{h}")), b).unwrap();
        }
        let t = Instant::now();
        let mut levels = Vec::new();
        for h in 0..tree.levels().len() {
            let b = std::fs::read(dir.join(format!("{h}"))).unwrap();
            let mut level: Vec<Hash> = Vec::with_capacity(b.len() / 32 + b.len() / 512 + 1024);
            level.extend(b.chunks_exact(32).map(|c| {
                let mut x = [0u8; 32];
                x.copy_from_slice(c);
                x
            }));
            levels.push(level);
        }
        let mut tree = Tree::from_levels(levels).unwrap();
        let load_levels = ms(t);
        std::fs::remove_dir_all(&dir).unwrap();

        let old_root = tree.root();
        let t = Instant::now();
        let fresh: Vec<Hash> = (n..n + 100).map(|i| leaf_hash(&entry(i))).collect();
        let mut candidates: rustc_hash::FxHashSet<Hash> = fresh.iter().copied().collect();
        for h in tree.leaf_hashes() {
            candidates.remove(h);
        }
        let scan = ms(t);

        let t = Instant::now();
        for h in fresh {
            if candidates.remove(&h) {
                tree.push_leaf_hash(h);
            }
        }
        let add = ms(t);

        let t = Instant::now();
        let root = tree.root();
        let root_ms = ms(t);

        let t = Instant::now();
        let proof = tree.consistency_proof(n, n + 100).unwrap();
        let proof_ms = ms(t);

        let t = Instant::now();
        verify_consistency(n, n + 100, &old_root, &root, &proof).unwrap();
        let verify_ms = ms(t);
        println!(
            "| {n} | {hash_all:.0} | {load:.1} | {load_levels:.1} | {scan:.1} | {add:.3} | {root_ms:.3} | {proof_ms:.3} | {verify_ms:.3} |"
        );
    }
}
