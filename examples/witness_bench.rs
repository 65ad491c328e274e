//! What the checkpoint adds to a pull or push of 100 new envelopes, at 100,000 and 1,000,000
//! envelopes (docs/benchmarks.md), beside a baseline measured in the same run: `git fetch` of
//! those 100 new envelopes as one commit, the transport part of the pull itself.
//!
//! The checkpoint work is elench's own code on a kept tree, as a store keeps it (one file per
//! level): loading it (`load_levels`), hashing the 100 new envelopes and scanning the kept
//! leaves for them (`unseen`: an envelope enters the sequence once), appending them, the
//! root, a consistency proof from the old size and its verification. Each figure is the
//! median of 5 runs. For comparison, what the store avoids: hashing every envelope again.
//!
//!     cargo run --release --example witness_bench [N...]     (default: 100000 1000000)

use elench::sync::witnessed::{load_levels, unseen};
use elench::witness::merkle::{leaf_hash, verify_consistency, Hash, Tree};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// The goal: the checkpoint of a 1,000,000-envelope remote with 100 new, beyond the pull.
const GOAL_MS: f64 = 50.0;
const NEW: u64 = 100;
const RUNS: usize = 5;

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// An envelope of about 1 KiB.
fn entry(i: u64) -> Vec<u8> {
    let mut e = vec![b'x'; 1024];
    e[..8].copy_from_slice(&i.to_le_bytes());
    e
}

fn git(dir: &Path, args: &[&str]) -> bool {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.org",
        ])
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The median time of `git fetch` of one commit holding the 100 new envelopes into an empty
/// repository (None where git is missing).
fn git_fetch_baseline(tmp: &Path, n: u64) -> Option<f64> {
    let src = tmp.join("src");
    std::fs::create_dir_all(src.join("v1")).ok()?;
    if !git(&src, &["init", "--quiet"]) {
        return None;
    }
    for i in n..n + NEW {
        std::fs::write(src.join("v1").join(format!("{i}.json")), entry(i)).ok()?;
    }
    if !git(&src, &["add", "v1"]) || !git(&src, &["commit", "--quiet", "-m", "100"]) {
        return None;
    }
    let mut times = Vec::new();
    for r in 0..RUNS {
        let dst = tmp.join(format!("dst{r}"));
        if !git(tmp, &["init", "--quiet", "--bare", dst.to_str()?]) {
            return None;
        }
        let t = Instant::now();
        if !git(&dst, &["fetch", "--quiet", src.to_str()?, "HEAD:refs/x"]) {
            return None;
        }
        times.push(ms(t));
    }
    Some(median(times))
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
    println!("| envelopes | load kept tree (ms) | 100 new: hash + scan (ms) | append + root (ms) | proof + verify (ms) | checkpoint total (ms) | baseline: git fetch of the 100 (ms) | ratio | goal (< {GOAL_MS:.0} ms) | for comparison: hash N leaves (ms) |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for n in sizes {
        let tmp =
            std::env::temp_dir().join(format!("elench-witness-bench-{}-{n}", std::process::id()));
        let levels_dir = tmp.join("tree");
        std::fs::create_dir_all(&levels_dir).unwrap();

        let t = Instant::now();
        let tree = Tree::from_leaf_hashes((0..n).map(|i| leaf_hash(&entry(i))));
        let hash_all = ms(t);
        for (h, level) in tree.levels().iter().enumerate() {
            std::fs::write(levels_dir.join(format!("{h}")), level.as_flattened()).unwrap();
        }
        let old_root = tree.root();
        drop(tree);
        let fresh: Vec<Vec<u8>> = (n..n + NEW).map(entry).collect();

        let (mut load, mut scan, mut add, mut proof_ms, mut total) =
            (vec![], vec![], vec![], vec![], vec![]);
        for _ in 0..RUNS {
            let start = Instant::now();
            let t = Instant::now();
            let mut tree = load_levels(&levels_dir, n).expect("the levels just written");
            load.push(ms(t));

            let t = Instant::now();
            let new: Vec<Hash> = fresh.iter().map(|e| leaf_hash(e)).collect();
            let new = unseen(tree.leaf_hashes(), new);
            scan.push(ms(t));

            let t = Instant::now();
            for h in new {
                tree.push_leaf_hash(h);
            }
            let root = tree.root();
            add.push(ms(t));

            let t = Instant::now();
            let proof = tree.consistency_proof(n, n + NEW).unwrap();
            verify_consistency(n, n + NEW, &old_root, &root, &proof).unwrap();
            proof_ms.push(ms(t));
            total.push(ms(start));
        }
        let baseline = git_fetch_baseline(&tmp, n);
        std::fs::remove_dir_all(&tmp).unwrap();

        let total = median(total);
        let (base, ratio) = match baseline {
            Some(b) => (format!("{b:.1}"), format!("{:.2}", total / b)),
            None => ("(no git)".into(), "-".into()),
        };
        let goal = if total < GOAL_MS { "met" } else { "missed" };
        println!(
            "| {n} | {:.1} | {:.1} | {:.3} | {:.3} | {total:.1} | {base} | {ratio} | {goal} | {hash_all:.0} |",
            median(load),
            median(scan),
            median(add),
            median(proof_ms),
        );
    }
}
