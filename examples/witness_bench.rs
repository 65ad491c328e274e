//! The remote sequence's Merkle work at 100,000 and 1,000,000 envelopes (docs/benchmarks.md):
//! loading the kept leaf hashes into a tree, the set that keeps an envelope from entering
//! twice, appending 100 new ones, the root, a consistency proof from the old size and its
//! verification.
//!
//!     cargo run --release --example witness_bench [N...]     (default: 100000 1000000)

use elench::witness::merkle::{leaf_hash, verify_consistency, Hash, Tree};
use std::collections::HashSet;
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
    println!("| envelopes | hash N leaves (ms) | load N kept leaf hashes (ms) | set of N (ms) | 100 new: leaves + tree (ms) | root (ms) | proof N → N+100 (ms) | verify (ms) |");
    println!("|---|---|---|---|---|---|---|---|");
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
        let mut tree = Tree::from_leaf_hashes(bytes.chunks_exact(32).map(|c| {
            let mut h = [0u8; 32];
            h.copy_from_slice(c);
            h
        }));
        let load = ms(t);

        let t = Instant::now();
        let mut seen: HashSet<Hash> = tree.leaf_hashes().iter().copied().collect();
        let set = ms(t);

        let old_root = tree.root();
        let t = Instant::now();
        for i in n..n + 100 {
            let h = leaf_hash(&entry(i));
            if seen.insert(h) {
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
            "| {n} | {hash_all:.0} | {load:.1} | {set:.1} | {add:.2} | {root_ms:.3} | {proof_ms:.3} | {verify_ms:.3} |"
        );
    }
}
