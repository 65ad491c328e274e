//! `elench gate` over 10,000 files and 100,000 claims in scope, and `elench status --at` of
//! one claim, against hashing the same files with `sha256sum`, all in one run.
//!
//!     cargo bench --bench gate
//!
//! Builds once under target/bench-gate (later runs reuse it): an old and a new tree of 10,000
//! files of 60 lines; 100,000 assertions, 10 per file, spans of 1 to 5 lines; half made at
//! the new tree (anchored), half at the old one (carried: in odd files a line was added at the
//! top, so their spans moved down one line; in every 100th file an edited line leaves some
//! stale); 10,000 harness verifications. The store is filled through the binary
//! (`elench add` of a bundle), so this measures the commands as a user runs them.
//! Prints the median of several runs of each command and its ratio to `sha256sum`, and the
//! part of the gate that is its tree: hashing the files and resolving every anchor from them.

use ed25519_dalek::SigningKey;
use elench::anchor::{content_digest, Applies, Resolver};
use elench::claim::{Body, Claim};
use elench::ingest::seal;
use elench::keys::public_key_pem;
use serde_json::{json, Value};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const FILES: usize = 10_000;
const LINES: usize = 60;
const CLAIMS_PER_FILE: usize = 10;
const BIN: &str = env!("CARGO_BIN_EXE_elench");

fn file_lines(k: usize, new: bool) -> Vec<String> {
    let mut lines = Vec::with_capacity(LINES + 1);
    if new && k % 2 == 1 {
        lines.push(format!("// file {k}: a line added above every span"));
    }
    for j in 0..LINES {
        let mut l = format!("    let v{j} = f{k}({j}) + {};", (k * 31 + j * 7) % 97);
        if new && k.is_multiple_of(100) && j == 7 {
            l.push_str(" // edited");
        }
        lines.push(l);
    }
    lines
}

fn text(lines: &[String]) -> String {
    let mut t = lines.join("\n");
    t.push('\n');
    t
}

fn rel(k: usize) -> String {
    format!("src/m{:03}/f{k:05}.rs", k / 100)
}

fn write_tree(dir: &Path, new: bool) {
    for k in 0..FILES {
        let p = dir.join(rel(k));
        fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
        fs::write(p, text(&file_lines(k, new))).expect("write");
    }
}

fn elench(args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .args(args)
        .env_remove("ELENCH_STORE")
        .stdin(Stdio::null())
        .output()
        .expect("elench runs")
}

fn tree_oid(dir: &Path) -> String {
    elench::tree::tree_oid(dir).expect("tree oid")
}

struct Built {
    root: PathBuf,
    store: PathBuf,
    new: PathBuf,
    policy: PathBuf,
    carried_claim: String,
    /// The 100,000 assertions, regenerated each run (signing is deterministic, so they are
    /// the ones in the store), for timing resolution alone.
    /// Each claim with its body (as sealed, but for the id, which resolution never reads).
    claims: Vec<(Claim, Body)>,
}

/// Every envelope of the bench in bundle order, and the assertions among them. Deterministic:
/// fixed keys, fixed content, Ed25519 signatures are deterministic.
fn envelopes(old_tree: &str, new_tree: &str) -> (Vec<String>, Vec<(Claim, Body)>, String) {
    let agent = SigningKey::from_bytes(&[21; 32]);
    let harness = SigningKey::from_bytes(&[22; 32]);
    let carried_file = 1; // odd: its spans moved down one line
    let mut envs = Vec::with_capacity(FILES * (CLAIMS_PER_FILE + 1));
    let mut claims = Vec::with_capacity(FILES * CLAIMS_PER_FILE);
    let mut carried_claim = String::new();
    for k in 0..FILES {
        let (old_text, new_text) = (text(&file_lines(k, false)), text(&file_lines(k, true)));
        let shift = u64::from(k % 2 == 1);
        for i in 0..CLAIMS_PER_FILE {
            let start = (i * 6 + 1) as u64;
            let end = start + (i % 5) as u64;
            let at_new = (k + i) % 2 == 0;
            let (tree, body, range) = if at_new {
                (new_tree, &new_text, (start + shift, end + shift))
            } else {
                (old_tree, &old_text, (start, end))
            };
            let digest = content_digest(body.as_bytes(), Some(range)).expect("digest");
            let claim = json!({
                "kind": "assertion",
                "assertion": {"form": "annotation", "text": format!("span {i} of file {k} holds")},
                "origin": {"kind": "agent-asserted", "producer": {"id": "bench-agent"}},
                "anchor": {"tree": tree, "strategy": "multi", "path": rel(k),
                           "range": [range.0, range.1], "contentDigest": digest},
                "timestamp": 1_764_000_000,
            });
            let (c, env) = seal(&claim, &agent).expect("seal");
            envs.push(env);
            if i == 0 {
                let record: Value = json!({
                    "kind": "verification", "target": [c.id],
                    "assertion": {"form": "annotation", "text": "checked"},
                    "origin": {"kind": "harness-observed", "producer": {"id": "bench-ci"}},
                    "anchor": {"tree": new_tree, "strategy": "multi"},
                    "timestamp": 1_764_000_100,
                });
                let (_, env) = seal(&record, &harness).expect("seal");
                envs.push(env);
            }
            if k == carried_file && !at_new {
                carried_claim = c.id.clone();
            }
            claims.push((c, Body::new(claim)));
        }
    }
    (envs, claims, carried_claim)
}

fn build() -> Built {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-gate");
    let store = root.join("store");
    let (old, new) = (root.join("old"), root.join("new"));
    let policy = root.join("policy.toml");
    let marker = root.join("built");
    let fresh = !marker.exists();
    if fresh {
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root).expect("bench dir");
        eprintln!("building {} (once)…", root.display());
        write_tree(&old, false);
        write_tree(&new, true);
        fs::write(&policy, "[rules]\nmax_unevaluated = 1000000\n").expect("policy");
    }
    // Each tree is a repository of its own: the bench folder lies under `target/`, which the
    // checkout's ignore rules leave out, and a tree inside an ignored folder has no OID.
    for dir in [&old, &new] {
        if !dir.join(".git").exists() {
            let o = Command::new("git")
                .args(["init", "-q"])
                .current_dir(dir)
                .status()
                .expect("git runs");
            assert!(o.success(), "git init {}", dir.display());
        }
    }
    let (old_tree, new_tree) = (tree_oid(&old), tree_oid(&new));
    let (envs, claims, carried_claim) = envelopes(&old_tree, &new_tree);
    if fresh {
        fill_store(&root, &store, &envs);
        fs::write(&marker, "").expect("marker");
    }
    Built {
        root,
        store,
        new,
        policy,
        carried_claim,
        claims,
    }
}

/// A store trusting the bench keys, filled through `elench add` of one bundle.
fn fill_store(root: &Path, store: &Path, envs: &[String]) {
    let bundle = root.join("bundle.intoto.jsonl");
    let mut out = std::io::BufWriter::new(fs::File::create(&bundle).expect("bundle"));
    for env in envs {
        writeln!(out, "{env}").expect("write");
    }
    out.flush().expect("flush");
    drop(out);
    let s = store.to_str().expect("utf-8 path");
    assert!(elench(&["--store", s, "init"]).status.success(), "init");
    let agent = SigningKey::from_bytes(&[21; 32]);
    let harness = SigningKey::from_bytes(&[22; 32]);
    for (role, key) in [("agent", &agent), ("harness", &harness)] {
        let pem = root.join(format!("{role}.pub"));
        fs::write(&pem, public_key_pem(&key.verifying_key()).expect("pem")).expect("pub");
        let o = elench(&[
            "--store",
            s,
            "keys",
            "add",
            "--role",
            role,
            "--name",
            role,
            pem.to_str().expect("utf-8"),
        ]);
        assert!(o.status.success(), "keys add: {o:?}");
    }
    let t = Instant::now();
    let o = elench(&["--store", s, "add", bundle.to_str().expect("utf-8")]);
    assert!(
        o.status.success(),
        "add: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    eprintln!(
        "added {} envelopes in {:.1} s",
        envs.len(),
        t.elapsed().as_secs_f64()
    );
    let _ = fs::remove_file(&bundle); // 100+ MB, no longer needed
}

/// Median wall time of `runs` runs of `f`.
fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

fn main() {
    let b = build();
    let s = b.store.to_str().expect("utf-8");
    let new = b.new.to_str().expect("utf-8");
    let policy = b.policy.to_str().expect("utf-8");

    // What the gate decides, once, to show the scope is what this claims it is.
    let o = elench(&["--store", s, "gate", "--policy", policy, "--at", new]);
    let report: Value = serde_json::from_slice(&o.stdout).expect("gate JSON");
    let counts = &report["data"]["counts"];
    let o = elench(&["--store", s, "status", &b.carried_claim, "--at", new]);
    let status: Value = serde_json::from_slice(&o.stdout).expect("status JSON");
    let applies = &status["data"]["claims"][0];

    let sha = || {
        let o = Command::new("sh")
            .current_dir(&b.root)
            .args([
                "-c",
                "find new -path new/.git -prune -o -type f -print0 | xargs -0 sha256sum > /dev/null",
            ])
            .status()
            .expect("sha256sum runs");
        assert!(o.success(), "sha256sum failed");
    };
    sha(); // warm the page cache for everyone
    let t_sha = median(5, sha);
    let t_tree = median(5, || {
        assert!(elench(&["tree", new]).status.success());
    });
    let t_gate = median(5, || {
        elench(&["--store", s, "gate", "--policy", policy, "--at", new]);
    });
    let refs: Vec<(&Claim, &Body)> = b.claims.iter().map(|(c, b)| (c, b)).collect();
    let tree = tree_oid(&b.new);
    let t_resolve = median(5, || {
        // As the gate does: the tree hashed once, its files kept and handed to a fresh
        // resolver (read and normalised again each time).
        let listing =
            elench::tree::list(&b.new, elench::tree::Selection::Committed).expect("listing");
        let (ids, kept) = listing.ids_keeping().expect("hashing");
        assert_eq!(ids.oid(), tree);
        let files = elench::anchor::files::TreeFiles::from_listing(&b.new, &listing, kept);
        let r = Resolver::new(&b.new, &tree)
            .with_files(std::sync::Arc::new(files))
            .resolve_all(&refs)
            .expect("resolve");
        assert_eq!(
            r.iter().filter(|r| r.applies == Applies::Stale).count(),
            100
        );
    });
    let t_status = median(9, || {
        assert!(
            elench(&["--store", s, "status", &b.carried_claim, "--at", new])
                .status
                .success()
        );
    });
    let ratio = |t: Duration| t.as_secs_f64() / t_sha.as_secs_f64();
    println!(
        "gate scope: in_scope {}, anchored {}, carried {}, stale {}; pass {}",
        counts["in_scope"],
        counts["applies"]["anchored"],
        counts["applies"]["carried"],
        counts["applies"]["stale"],
        report["data"]["pass"]
    );
    println!(
        "status --at of {}: applies {}, resolved {}",
        b.carried_claim, applies["applies"], applies["resolved"]
    );
    println!("| command | median | vs sha256sum |");
    println!("|---|---|---|");
    for (name, t) in [
        ("sha256sum of the 10,000 files (baseline)", t_sha),
        ("elench tree (the tree OID alone)", t_tree),
        ("elench gate, 100,000 claims in scope", t_gate),
        (
            "of which: hashing the tree and resolving the 100,000 anchors from its files (in-process)",
            t_resolve,
        ),
        ("elench status ID --at, one carried claim", t_status),
    ] {
        println!(
            "| {name} | {:.0} ms | {:.2}x |",
            t.as_secs_f64() * 1000.0,
            ratio(t)
        );
    }
}
