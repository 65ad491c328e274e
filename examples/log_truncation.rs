//! Campaign: damage a store's log at random places and check what elench makes of it (issue 23
//! acceptance). Not part of `cargo test`; run it with
//!
//! ```text
//! cargo build && cargo run --example log_truncation -- [RUNS] [SEED]
//! ```
//!
//! (`ELENCH_BIN=PATH` runs another build of the binary instead.)
//!
//! It builds one store through the binary (three `keys add`, claims, a `keys retire`, more
//! claims: every record in it acknowledged), then, on a fresh copy each time:
//! - RUNS truncations at random offsets, half anywhere in the log and half inside its last
//!   three records (where a cut looks most like a torn tail);
//! - RUNS flipped bytes at random offsets.
//!
//! For each it checks:
//! 1. no acknowledged record is dropped without `STORE_CORRUPT`: after a truncation `status`
//!    must fail with `STORE_CORRUPT` (every cut drops an acknowledged record), never answer
//!    with fewer claims or warn `TORN_TAIL`; after a flip `fsck` must find `STORE_CORRUPT`;
//! 2. `fsck --repair` exits 0, after which `status` opens the store and `fsck` is clean;
//! 3. nothing is deleted: the log and `quarantine/` together hold at least the bytes the
//!    damaged log held.
//!
//! It prints its figures and exits 1 if any check failed.

#[path = "../tests/support_envelopes/mod.rs"]
mod support_envelopes;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use support_envelopes::{graph, write_bundle, Keys, Rng, Spec};

struct Out {
    code: i32,
    json: Value,
}

/// The binary under test: `ELENCH_BIN`, or the one built beside this example.
fn binary() -> PathBuf {
    if let Some(path) = std::env::var_os("ELENCH_BIN") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("current exe");
    // target/debug/examples/log_truncation → target/debug/elench
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target directory");
    dir.join("elench")
}

fn run(store: &Path, args: &[&str]) -> Out {
    let out = Command::new(binary())
        .arg("--store")
        .arg(store)
        .args(args)
        .env_remove("ELENCH_STORE")
        .env_remove("CI")
        .output()
        .expect("elench runs");
    let text = String::from_utf8_lossy(&out.stdout);
    Out {
        code: out.status.code().unwrap_or(-1),
        json: serde_json::from_str(text.trim()).unwrap_or(Value::Null),
    }
}

fn must(out: Out, what: &str) -> Out {
    assert_eq!(out.code, 0, "{what}: {}", out.json);
    out
}

fn error_code(out: &Out) -> String {
    out.json["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn warned(out: &Out, code: &str) -> bool {
    out.json["warnings"]
        .as_array()
        .is_some_and(|w| w.iter().any(|w| w["code"] == code))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

fn bytes_under(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .map(|e| {
            let p = e.unwrap().path();
            if p.is_dir() {
                bytes_under(&p)
            } else {
                std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0)
            }
        })
        .sum()
}

fn segment(store: &Path) -> PathBuf {
    store.join("log").join(format!("{:020}.seg", 0))
}

/// The base store: every record acknowledged. Returns its directory and the records' offsets.
fn base_store(dir: &Path) -> (PathBuf, Vec<u64>) {
    let keys = Keys::new();
    let store = dir.join("base");
    must(run(&store, &["init"]), "init");
    for (role, pem) in keys.write_public_pems(&dir.join("pems")) {
        let pem = pem.to_str().unwrap();
        must(
            run(
                &store,
                &["keys", "add", "--role", role, "--name", role, pem],
            ),
            "keys add",
        );
    }
    let bundle = dir.join("first.intoto.jsonl");
    write_bundle(&bundle, &graph(&keys, 40, 7, "campaign"));
    must(run(&store, &["add", bundle.to_str().unwrap()]), "add");
    let human = elench::keys::keyid(&keys.human.verifying_key());
    must(run(&store, &["keys", "retire", "--yes", &human]), "retire");
    let later: Vec<_> = (0..10)
        .map(|i| Spec::assertion(format!("after the retirement {i}"), &[]).sign(&keys))
        .collect();
    write_bundle(&bundle, &later);
    must(run(&store, &["add", bundle.to_str().unwrap()]), "add");
    must(run(&store, &["fsck"]), "fsck of the base store");
    let mut offsets = Vec::new();
    elench::store::log::Log::new(store.join("log"))
        .scan(elench::store::log::Head::EMPTY, |r| {
            offsets.push(r.pos.offset);
            Ok(true)
        })
        .unwrap();
    (store, offsets)
}

#[derive(Default)]
struct Figures {
    runs: u32,
    detected: u32,
    silent_loss: u32,
    torn_tail: u32,
    repaired: u32,
    opens_after: u32,
    fsck_clean_after: u32,
    nothing_deleted: u32,
    claims_left: Vec<u64>,
    failures: Vec<String>,
}

impl Figures {
    fn print(&self, what: &str) {
        let mut left = self.claims_left.clone();
        left.sort_unstable();
        println!(
            "{what}: {} runs; STORE_CORRUPT {}/{}; dropped silently {}; taken for TORN_TAIL {}; \
             fsck --repair exit 0 {}/{}; opens after {}/{}; fsck clean after {}/{}; \
             nothing deleted {}/{}; claims left after repair: min {} median {} max {}",
            self.runs,
            self.detected,
            self.runs,
            self.silent_loss,
            self.torn_tail,
            self.repaired,
            self.runs,
            self.opens_after,
            self.runs,
            self.fsck_clean_after,
            self.runs,
            self.nothing_deleted,
            self.runs,
            left.first().copied().unwrap_or(0),
            left.get(left.len() / 2).copied().unwrap_or(0),
            left.last().copied().unwrap_or(0),
        );
        for f in &self.failures {
            println!("  FAILED {f}");
        }
    }
}

/// Repairs, then checks the store opens and fsck is clean; `held` is the bytes the damaged
/// log held.
fn repair_and_check(store: &Path, held: u64, what: &str, f: &mut Figures) {
    let out = run(store, &["fsck", "--repair"]);
    if out.code == 0 {
        f.repaired += 1;
    } else {
        f.failures.push(format!(
            "{what}: fsck --repair exit {}: {}",
            out.code, out.json
        ));
    }
    let kept = bytes_under(&store.join("log")) + bytes_under(&store.join("quarantine"));
    if kept >= held {
        f.nothing_deleted += 1;
    } else {
        f.failures.push(format!(
            "{what}: {held} bytes before the repair, {kept} after"
        ));
    }
    let status = run(store, &["status", "--all", "--limit", "10000"]);
    if status.code == 0 {
        f.opens_after += 1;
        f.claims_left.push(
            status.json["data"]["claims"]
                .as_array()
                .map_or(0, |a| a.len()) as u64,
        );
    } else {
        f.failures.push(format!(
            "{what}: status after repair exit {}: {}",
            status.code, status.json
        ));
    }
    let fsck = run(store, &["fsck"]);
    if fsck.code == 0 {
        f.fsck_clean_after += 1;
    } else {
        f.failures.push(format!(
            "{what}: fsck after repair exit {}: {}",
            fsck.code, fsck.json
        ));
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let runs: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(60);
    let seed: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(23);
    assert!(
        binary().is_file(),
        "build the binary first: cargo build ({})",
        binary().display()
    );
    let tmp = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let (base, offsets) = base_store(tmp.path());
    let original = std::fs::read(segment(&base)).unwrap();
    let len = original.len() as u64;
    let claims = run(&base, &["status", "--all", "--limit", "10000"]).json["data"]["claims"]
        .as_array()
        .map_or(0, |a| a.len());
    println!(
        "base store: {} records ({claims} claims), {len} bytes of log; seed {seed}",
        offsets.len()
    );
    let tail_from = offsets[offsets.len().saturating_sub(3)];
    let mut rng = Rng::new(seed);

    let mut cut = Figures::default();
    for i in 0..runs {
        let at = if i % 2 == 0 {
            rng.range(0, len)
        } else {
            rng.range(tail_from, len)
        };
        let store = tmp.path().join(format!("cut-{i}"));
        copy_dir(&base, &store);
        std::fs::write(segment(&store), &original[..at as usize]).unwrap();
        let what = format!("cut at byte {at} of {len}");
        cut.runs += 1;
        let out = run(&store, &["status", "--all", "--limit", "10000"]);
        if out.code == 4 && error_code(&out) == "STORE_CORRUPT" {
            cut.detected += 1;
        } else {
            if warned(&out, "TORN_TAIL") {
                cut.torn_tail += 1;
            }
            if out.code == 0 {
                cut.silent_loss += 1;
            }
            cut.failures.push(format!(
                "{what}: status exit {} ({})",
                out.code,
                error_code(&out)
            ));
        }
        repair_and_check(&store, at, &what, &mut cut);
    }
    cut.print("truncations");

    let mut flip = Figures::default();
    for i in 0..runs {
        let at = rng.range(0, len);
        let store = tmp.path().join(format!("flip-{i}"));
        copy_dir(&base, &store);
        let mut bytes = original.clone();
        bytes[at as usize] ^= 1 << rng.below(8);
        std::fs::write(segment(&store), &bytes).unwrap();
        let what = format!("flip at byte {at} of {len}");
        flip.runs += 1;
        let out = run(&store, &["fsck"]);
        if out.code == 4 && error_code(&out) == "STORE_CORRUPT" {
            flip.detected += 1;
        } else {
            if out.code == 0 {
                flip.silent_loss += 1;
            }
            flip.failures.push(format!(
                "{what}: fsck exit {} ({})",
                out.code,
                error_code(&out)
            ));
        }
        repair_and_check(&store, len, &what, &mut flip);
    }
    flip.print("flipped bytes");
    println!("{:.1} s", started.elapsed().as_secs_f64());
    if !cut.failures.is_empty() || !flip.failures.is_empty() {
        std::process::exit(1);
    }
}
