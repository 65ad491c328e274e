//! A damage campaign against real stores, through the real binary: what an attacker (or a
//! bad disk) can do to the bytes of a store, and what elench must answer.
//!
//!     cargo build --release && cargo run --release --example store_campaign
//!     cargo run --release --example store_campaign -- --flips 200 --cuts 60 --reads 1000
//!
//! Options: `--bin PATH` (default `target/release/elench`), `--claims N` (default 300),
//! `--flips N`, `--log-flips N`, `--cuts N`, `--reads N`, `--seed N`,
//! `--only flips,logflips,cuts,reads,branches,metapages` (the last two run only when named),
//! `--branch-claims N` (default 3000), `--stride N` (default 1), `--jobs N` (default 2),
//! `--blast` (with `branches`: also `blast` of the first claim after each flip that left
//! `status --all` as it was).
//!
//! Four properties, each counted and printed, with the failures named:
//! 1. **Index flips**: one random byte of `index/data.mdb` flipped. `status --all` never dies
//!    without a JSON answer, and never answers other statuses unless it says `INDEX_REBUILT`
//!    or fails with an error. `fsck` never crashes.
//! 2. **Log cuts**: the log truncated at a random offset inside it (half of them in its last
//!    4 KiB). Every record there was
//!    acknowledged, so `status --all` either still shows every claim as before or fails with
//!    `STORE_CORRUPT`: an acknowledged record is never dropped quietly (`TORN_TAIL`).
//! 3. **Log flips**: one random byte of a log segment flipped: `fsck` finds it
//!    (`STORE_CORRUPT`).
//! 4. **Repairs**: after each flip and each cut, `fsck --repair`, then the store opens
//!    (`status --all` answers) and `fsck` is clean, and nothing was deleted: the log and
//!    `quarantine/` together hold every byte the damaged log held.
//! 5. **Snapshots**: `status --all` beside a writer appending claims and records: every
//!    answer is whole (every record it says decided a claim, and every record in a claim's
//!    history, is in the same answer).
//! 6. **Branch pages** (`--only branches`): in a store of `--branch-claims` claims and records,
//!    every byte LMDB uses of every branch page of the index's B-trees (the page header, the
//!    table of node offsets and the nodes: child page numbers, key sizes, keys; not the free
//!    space between them), one flip at a time on a fresh copy (every `--stride`-th byte):
//!    `status --all` answers exactly what it answered before the flip, or fails with
//!    `INDEX_DAMAGED` and the next command rebuilds the index and answers exactly that. An
//!    answer that differs with exit 0 and no `INDEX_REBUILT` is a silent change.
//! 7. **Meta pages** (`--only metapages`): every byte of LMDB's two meta pages, one flip at a
//!    time: `status --all`, then `add` of one more record, then `status --all`. Every answer
//!    is the true one (before or after the `add`), or `INDEX_DAMAGED` followed by a command
//!    that rebuilds; no other error (`STORE_CORRUPT` would send the user to repair a log that
//!    is sound, `INDEX_UNAVAILABLE` to look for memory).
//!
//! Exits 1 when any property failed. Not part of `cargo test`: it runs minutes.

use ed25519_dalek::SigningKey;
use elench::ingest::seal;
use elench::keys::public_key_pem;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

const TREE: &str = "4f2d6c1a9b3e5d7f0a8c6e4b2d0f9e7c5a3b1d8f6e4c2a0b9d7f5e3c1a2b4d6e";

/// A small deterministic generator (xorshift64*), so a failing run can be repeated by seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

struct Options {
    bin: PathBuf,
    claims: usize,
    flips: usize,
    cuts: usize,
    log_flips: usize,
    reads: usize,
    seed: u64,
    only: Option<BTreeSet<String>>,
    branch_claims: usize,
    stride: usize,
    jobs: usize,
    blast: bool,
}

impl Options {
    fn parse() -> Options {
        let mut o = Options {
            bin: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/elench"),
            claims: 300,
            flips: 200,
            cuts: 60,
            log_flips: 60,
            reads: 1000,
            seed: 0x5eed_e1e4c4,
            only: None,
            branch_claims: 3000,
            stride: 1,
            jobs: 2,
            blast: false,
        };
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut i = 0;
        while i < args.len() {
            let value = args.get(i + 1).cloned().unwrap_or_default();
            let number = || -> usize {
                value
                    .parse()
                    .unwrap_or_else(|_| usage(&format!("{} needs a number", args[i])))
            };
            match args[i].as_str() {
                "--bin" => o.bin = PathBuf::from(&value),
                "--claims" => o.claims = number(),
                "--flips" => o.flips = number(),
                "--cuts" => o.cuts = number(),
                "--log-flips" => o.log_flips = number(),
                "--reads" => o.reads = number(),
                "--seed" => o.seed = number() as u64,
                "--only" => o.only = Some(value.split(',').map(str::to_owned).collect()),
                "--branch-claims" => o.branch_claims = number(),
                "--stride" => o.stride = number().max(1),
                "--jobs" => o.jobs = number().max(1),
                "--blast" => {
                    o.blast = true;
                    i += 1;
                    continue;
                }
                // `cargo bench`/`cargo run` may pass this through.
                "--bench" => {
                    i += 1;
                    continue;
                }
                other => usage(&format!("unknown option {other}")),
            }
            i += 2;
        }
        if !o.bin.is_file() {
            usage(&format!(
                "no elench binary at {} (cargo build --release, or --bin PATH)",
                o.bin.display()
            ));
        }
        o
    }

    fn wants(&self, part: &str) -> bool {
        match &self.only {
            Some(o) => o.contains(part),
            // The page sweeps run for a long time: only when named.
            None => !matches!(part, "branches" | "metapages"),
        }
    }
}

fn usage(problem: &str) -> ! {
    eprintln!("store_campaign: {problem}");
    eprintln!("usage: store_campaign [--bin PATH] [--claims N] [--flips N] [--cuts N] [--log-flips N] [--reads N] [--seed N] [--only flips,logflips,cuts,reads,branches,metapages] [--branch-claims N] [--stride N] [--jobs N] [--blast]");
    std::process::exit(2)
}

/// What one command answered.
struct Answer {
    /// None when the process was ended by a signal.
    code: Option<i32>,
    json: Option<Value>,
    stderr: String,
}

impl Answer {
    fn error_code(&self) -> Option<&str> {
        self.json.as_ref()?["error"]["code"].as_str()
    }
    fn warned(&self, code: &str) -> bool {
        self.json.as_ref().is_some_and(|j| {
            j["warnings"]
                .as_array()
                .is_some_and(|w| w.iter().any(|x| x["code"] == code))
        })
    }
    fn ok(&self) -> bool {
        self.code == Some(0) && self.json.as_ref().is_some_and(|j| j["ok"] == true)
    }
    fn describe(&self) -> String {
        match (&self.code, self.error_code()) {
            (None, _) => format!(
                "killed by a signal; stderr {:?}",
                self.stderr.chars().take(200).collect::<String>()
            ),
            (Some(c), Some(e)) => format!("exit {c} {e}"),
            (Some(c), None) if self.json.is_none() => format!("exit {c} without a JSON answer"),
            (Some(c), None) => format!("exit {c}"),
        }
    }
}

fn elench(bin: &Path, store: &Path, args: &[&str]) -> Answer {
    let out: Output = Command::new(bin)
        .arg("--store")
        .arg(store)
        .args(args)
        .env_remove("ELENCH_STORE")
        .env_remove("NO_COLOR")
        .env("ELENCH_TIMEOUT", "120")
        // Whole answers: a listing cut at the response cap would look torn.
        .env("ELENCH_MAX_OUTPUT_BYTES", "268435456")
        .output()
        .expect("elench runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let json = serde_json::from_str::<Value>(text.trim_end()).ok();
    Answer {
        code: out.status.code(),
        json,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Every claim's effective status, from `status --all`.
fn statuses(answer: &Answer) -> Option<BTreeMap<String, String>> {
    let claims = answer.json.as_ref()?["data"]["claims"].as_array()?;
    Some(
        claims
            .iter()
            .map(|c| {
                (
                    c["id"].as_str().unwrap_or("").to_owned(),
                    c["status"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect(),
    )
}

const ALL: &[&str] = &["status", "--all", "--limit", "10000"];

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
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

/// One of the store's log segments, drawn at random.
fn random_segment(store: &Path, rng: &mut Rng) -> PathBuf {
    let mut segments: Vec<PathBuf> = std::fs::read_dir(store.join("log"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    segments.sort();
    segments.swap_remove(rng.below(segments.len() as u64) as usize)
}

fn key(seed: u8) -> SigningKey {
    SigningKey::from_bytes(&[seed; 32])
}

fn claim(text: &str, depends: &[String], kind: &str, targets: &[String], ts: usize) -> Value {
    let origin = match kind {
        "verification" | "falsification" => "harness-observed",
        _ => "agent-asserted",
    };
    let mut c = json!({
        "kind": kind,
        "assertion": {"form": "annotation", "text": text},
        "origin": {"kind": origin, "producer": {"id": "campaign"}},
        "anchor": {"tree": TREE, "strategy": "multi"},
        "timestamp": 1_764_000_000 + ts,
    });
    if !depends.is_empty() {
        c["dependsOn"] = json!(depends);
    }
    if !targets.is_empty() {
        c["target"] = json!(targets);
    }
    c
}

/// Claims and records over earlier claims: premises, verifications, falsifications.
fn corpus(n: usize, offset: usize, rng: &mut Rng, earlier: &mut Vec<String>) -> Vec<String> {
    let (agent, harness) = (key(1), key(2));
    let mut envelopes = Vec::with_capacity(n);
    for i in 0..n {
        let k = offset + i;
        let pick = |rng: &mut Rng, earlier: &[String]| -> Vec<String> {
            if earlier.is_empty() {
                return vec![];
            }
            let mut v: Vec<String> = (0..=rng.below(2))
                .map(|_| earlier[rng.below(earlier.len() as u64) as usize].clone())
                .collect();
            v.sort();
            v.dedup();
            v
        };
        let (c, signer) = match (k % 10, earlier.is_empty()) {
            (3, false) => (
                claim(
                    &format!("verified {k}"),
                    &[],
                    "verification",
                    &pick(rng, earlier)[..1],
                    k,
                ),
                &harness,
            ),
            (7, false) => (
                claim(
                    &format!("falsified {k}"),
                    &[],
                    "falsification",
                    &pick(rng, earlier)[..1],
                    k,
                ),
                &harness,
            ),
            _ => (
                claim(
                    &format!("claim {k}: the parser rejects input {k}"),
                    &pick(rng, earlier),
                    "assertion",
                    &[],
                    k,
                ),
                &agent,
            ),
        };
        let (checked, envelope) = seal(&c, signer).expect("a campaign claim seals");
        earlier.push(checked.id);
        envelopes.push(envelope);
    }
    envelopes
}

fn make_store(
    o: &Options,
    dir: &Path,
    name: &str,
    claims: usize,
    rng: &mut Rng,
    ids: &mut Vec<String>,
) -> PathBuf {
    let store = dir.join(name);
    let must = |a: Answer, what: &str| {
        if !a.ok() {
            panic!("{what}: {} {:?}", a.describe(), a.json);
        }
    };
    must(elench(&o.bin, &store, &["init"]), "init");
    for (seed, role, name) in [(1u8, "agent", "agent"), (2, "harness", "harness")] {
        let pem = dir.join(format!("{name}.pub"));
        std::fs::write(&pem, public_key_pem(&key(seed).verifying_key()).unwrap()).unwrap();
        let pem = pem.to_string_lossy().into_owned();
        must(
            elench(
                &o.bin,
                &store,
                &["keys", "add", "--role", role, "--name", name, &pem],
            ),
            "keys add",
        );
    }
    // Two groups with a trust event between them, so cuts land in trust events too.
    let half = claims / 2;
    for (part, (n, offset)) in [(half, 0), (claims - half, half)].into_iter().enumerate() {
        let bundle = dir.join(format!("{name}-part{part}.intoto.jsonl"));
        std::fs::write(&bundle, corpus(n, offset, rng, ids).join("\n") + "\n").unwrap();
        must(
            elench(&o.bin, &store, &["add", &bundle.to_string_lossy()]),
            "add",
        );
        if part == 0 {
            let spare = dir.join("spare.pub");
            std::fs::write(&spare, public_key_pem(&key(9).verifying_key()).unwrap()).unwrap();
            let spare = spare.to_string_lossy().into_owned();
            must(
                elench(
                    &o.bin,
                    &store,
                    &["keys", "add", "--role", "agent", "--name", "spare", &spare],
                ),
                "keys add spare",
            );
            let keyid = elench::keys::keyid(&key(9).verifying_key());
            must(
                elench(&o.bin, &store, &["keys", "retire", "--yes", &keyid]),
                "keys retire",
            );
        }
    }
    store
}

struct Tally {
    name: &'static str,
    runs: usize,
    outcomes: BTreeMap<String, usize>,
    failures: Vec<String>,
}

impl Tally {
    fn new(name: &'static str) -> Tally {
        Tally {
            name,
            runs: 0,
            outcomes: BTreeMap::new(),
            failures: vec![],
        }
    }
    fn saw(&mut self, outcome: &str) {
        *self.outcomes.entry(outcome.to_owned()).or_default() += 1;
    }
    fn fail(&mut self, what: String) {
        self.failures.push(what);
    }
    fn print(&self) {
        println!(
            "{}: {} runs, {} failure(s)",
            self.name,
            self.runs,
            self.failures.len()
        );
        for (k, v) in &self.outcomes {
            println!("  {v:>5}  {k}");
        }
        for f in self.failures.iter().take(20) {
            println!("  FAILED: {f}");
        }
    }
}

/// After damage: `fsck --repair`, then the store opens and `fsck` is clean.
/// Nothing is deleted either: the log and `quarantine/` together hold at least the bytes the
/// damaged log held.
fn repair(o: &Options, store: &Path, label: &str, tally: &mut Tally) {
    let damaged_log = bytes_under(&store.join("log"));
    let fixed = elench(&o.bin, store, &["fsck", "--repair"]);
    let kept = bytes_under(&store.join("log")) + bytes_under(&store.join("quarantine"));
    if kept < damaged_log {
        tally.fail(format!(
            "{label}: fsck --repair deleted log bytes ({kept} kept of {damaged_log})"
        ));
    }
    if fixed.code.is_none() {
        tally.fail(format!("{label}: fsck --repair {}", fixed.describe()));
        return;
    }
    let opens = elench(&o.bin, store, ALL);
    let clean = elench(&o.bin, store, &["fsck"]);
    if !opens.ok() {
        tally.fail(format!(
            "{label}: after fsck --repair ({}), status --all {}",
            fixed.describe(),
            opens.describe()
        ));
    } else if !clean.ok() {
        tally.fail(format!(
            "{label}: after fsck --repair ({}), fsck {}",
            fixed.describe(),
            clean.describe()
        ));
    } else {
        tally.saw("repaired: opens, fsck clean");
    }
}

fn flips(o: &Options, dir: &Path, pristine: &Path, before: &BTreeMap<String, String>) -> Tally {
    let mut t = Tally::new("index byte flips");
    let mut rng = Rng(o.seed ^ 0xf11b);
    for i in 0..o.flips {
        let store = dir.join(format!("flip{i}"));
        copy_dir(pristine, &store);
        let data = store.join("index/data.mdb");
        let mut bytes = std::fs::read(&data).unwrap();
        let at = rng.below(bytes.len() as u64) as usize;
        bytes[at] ^= 1 << rng.below(8);
        std::fs::write(&data, &bytes).unwrap();
        t.runs += 1;
        let label = format!("flip {i} at byte {at}");
        let a = elench(&o.bin, &store, ALL);
        match (a.code, &a.json) {
            (None, _) | (Some(_), None) => {
                t.fail(format!("{label}: status --all {}", a.describe()))
            }
            _ if a.ok() => match statuses(&a) {
                Some(s) if &s == before => t.saw(if a.warned("INDEX_REBUILT") {
                    "same statuses, INDEX_REBUILT"
                } else {
                    "same statuses"
                }),
                _ if a.warned("INDEX_REBUILT") => {
                    t.fail(format!("{label}: rebuilt, yet statuses differ"))
                }
                _ => t.fail(format!("{label}: statuses changed without a word")),
            },
            _ => t.saw(&format!("error {}", a.error_code().unwrap_or("?"))),
        }
        let f = elench(&o.bin, &store, &["fsck"]);
        if f.code.is_none() || f.json.is_none() {
            t.fail(format!("{label}: fsck {}", f.describe()));
        }
        repair(o, &store, &label, &mut t);
        let _ = std::fs::remove_dir_all(&store);
    }
    t
}

/// One flipped byte anywhere in the log: `fsck` must find it (`STORE_CORRUPT`): every byte of
/// a record is covered by its checksums or its chain.
fn log_flips(o: &Options, dir: &Path, pristine: &Path) -> Tally {
    let mut t = Tally::new("log byte flips");
    let mut rng = Rng(o.seed ^ 0x10f1);
    for i in 0..o.log_flips {
        let store = dir.join(format!("logflip{i}"));
        copy_dir(pristine, &store);
        let segment = &random_segment(&store, &mut rng);
        let mut bytes = std::fs::read(segment).unwrap();
        let at = rng.below(bytes.len() as u64) as usize;
        bytes[at] ^= 1 << rng.below(8);
        std::fs::write(segment, &bytes).unwrap();
        t.runs += 1;
        let label = format!(
            "log flip {i}: {} at byte {at}",
            segment.file_name().unwrap().to_string_lossy()
        );
        let f = elench(&o.bin, &store, &["fsck"]);
        if f.error_code() == Some("STORE_CORRUPT") {
            t.saw("fsck: STORE_CORRUPT");
        } else {
            t.fail(format!("{label}: fsck {}", f.describe()));
        }
        repair(o, &store, &label, &mut t);
        let _ = std::fs::remove_dir_all(&store);
    }
    t
}

fn cuts(o: &Options, dir: &Path, pristine: &Path, before: &BTreeMap<String, String>) -> Tally {
    let mut t = Tally::new("log truncations");
    let mut rng = Rng(o.seed ^ 0xc075);
    for i in 0..o.cuts {
        let store = dir.join(format!("cut{i}"));
        copy_dir(pristine, &store);
        let segment = &random_segment(&store, &mut rng);
        let len = std::fs::metadata(segment).unwrap().len();
        // Half the cuts land anywhere, half in the log's last 4 KiB: inside the last
        // records, where a cut looks most like a torn (never acknowledged) tail.
        let at = if i % 2 == 0 {
            rng.below(len)
        } else {
            len - 1 - rng.below(len.min(4096))
        };
        std::fs::OpenOptions::new()
            .write(true)
            .open(segment)
            .unwrap()
            .set_len(at)
            .unwrap();
        t.runs += 1;
        let label = format!(
            "cut {i}: {} at {at} of {len}",
            segment.file_name().unwrap().to_string_lossy()
        );
        let a = elench(&o.bin, &store, ALL);
        if a.ok() {
            match statuses(&a) {
                Some(s) if &s == before => t.saw("every claim still there"),
                _ => t.fail(format!(
                    "{label}: claims dropped without STORE_CORRUPT (warned TORN_TAIL: {})",
                    a.warned("TORN_TAIL")
                )),
            }
        } else if a.error_code() == Some("STORE_CORRUPT") {
            t.saw("STORE_CORRUPT");
        } else {
            t.fail(format!("{label}: status --all {}", a.describe()));
        }
        repair(o, &store, &label, &mut t);
        let _ = std::fs::remove_dir_all(&store);
    }
    t
}

fn reads(o: &Options, dir: &Path, pristine: &Path, ids: &[String]) -> Tally {
    let mut t = Tally::new("status --all beside a writer");
    let store = dir.join("reads");
    copy_dir(pristine, &store);
    let mut rng = Rng(o.seed ^ 0x4ead);
    let mut earlier = ids.to_vec();
    // Enough envelopes, added one by one, to keep the writer busy while the reads run.
    let extra = corpus(o.reads.max(50), ids.len(), &mut rng, &mut earlier);
    let files: Vec<PathBuf> = extra
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let p = dir.join(format!("extra{i}.dsse"));
            std::fs::write(&p, e).unwrap();
            p
        })
        .collect();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (bin, store, stop) = (o.bin.clone(), store.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut added = 0;
            for f in &files {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                if elench(&bin, &store, &["add", &f.to_string_lossy()]).ok() {
                    added += 1;
                }
            }
            added
        })
    };
    for i in 0..o.reads {
        t.runs += 1;
        let a = elench(&o.bin, &store, ALL);
        if !a.ok() {
            t.fail(format!("read {i}: {}", a.describe()));
            continue;
        }
        let data = &a.json.as_ref().unwrap()["data"];
        let claims = data["claims"].as_array().cloned().unwrap_or_default();
        let present: BTreeSet<&str> = claims.iter().filter_map(|c| c["id"].as_str()).collect();
        let as_of = data["as_of"].as_u64().unwrap_or(0) as usize;
        let mut torn = vec![];
        for c in &claims {
            let named = c["decided_by"].as_array().into_iter().flatten().chain(
                c["history"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|h| &h["id"]),
            );
            for r in named {
                if let Some(r) = r.as_str() {
                    if !present.contains(r) {
                        torn.push(format!("{} names {r}", c["id"]));
                    }
                }
            }
        }
        if claims.len() > as_of {
            torn.push(format!("{} claims but as_of {as_of}", claims.len()));
        }
        if a.warned("RESPONSE_TRUNCATED") {
            torn.push("the answer was cut at the response cap".into());
        }
        if torn.is_empty() {
            t.saw("whole");
        } else {
            t.fail(format!("read {i} (as_of {as_of}): torn: {}", torn[0]));
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let added = writer.join().unwrap();
    t.saw(&format!("(writer appended {added} envelopes meanwhile)"));
    t
}

/// LMDB's file layout, as far as the page sweeps need it (liblmdb's `MDB_page`, `MDB_meta`,
/// `MDB_db` and `MDB_node`, in a 64-bit build of data version 1).
mod lmdb {
    use std::collections::BTreeSet;

    /// Page header: page number (8 bytes), padding (2), flags (2), lower and upper bounds of
    /// the free space (2 each); the table of node offsets follows.
    pub const HEADER: usize = 16;
    const P_BRANCH: u16 = 0x01;
    const P_LEAF: u16 = 0x02;
    /// A leaf node whose data is a database record (`MDB_db`): a named table.
    const F_SUBDATA: u16 = 0x02;
    const MAGIC: u32 = 0xBEEF_C0DE;
    /// Where `mm_dbs` starts in a meta page (after magic, version, address and map size), and
    /// the size of one `MDB_db` (pad, flags, depth, three page counts, entries, root).
    const DBS: usize = HEADER + 4 + 4 + 8 + 8;
    const DB_LEN: usize = 48;
    const ROOT_IN_DB: usize = 40;
    /// The bytes of a meta page LMDB reads: the header, `MDB_meta` (two `MDB_db`s, the last
    /// page number and the transaction id).
    pub const META_LEN: usize = DBS + 2 * DB_LEN + 8 + 8;

    fn u16_at(b: &[u8], at: usize) -> Option<u16> {
        Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
    }
    fn u32_at(b: &[u8], at: usize) -> Option<u32> {
        Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
    }
    fn u64_at(b: &[u8], at: usize) -> Option<u64> {
        Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
    }

    /// A branch page in use: its table, its number, and the ranges of bytes LMDB reads in it.
    pub struct Branch {
        pub table: String,
        pub pgno: u64,
        pub used: Vec<std::ops::Range<usize>>,
    }

    pub struct File<'a> {
        bytes: &'a [u8],
        pub psize: usize,
    }

    impl<'a> File<'a> {
        pub fn read(bytes: &'a [u8]) -> Option<File<'a>> {
            if u32_at(bytes, HEADER)? != MAGIC {
                return None;
            }
            // The page size is kept in the free-space table's record (`mm_psize`).
            let psize = u32_at(bytes, DBS)? as usize;
            (psize >= 512).then_some(File { bytes, psize })
        }

        fn page(&self, pgno: u64) -> Option<&'a [u8]> {
            let start = usize::try_from(pgno).ok()?.checked_mul(self.psize)?;
            self.bytes.get(start..start.checked_add(self.psize)?)
        }

        /// The meta page in force: the one with the larger transaction id.
        fn meta(&self) -> Option<&'a [u8]> {
            let txnid = |p: &[u8]| u64_at(p, DBS + 2 * DB_LEN + 8);
            let (m0, m1) = (self.page(0)?, self.page(1)?);
            Some(if txnid(m1)? > txnid(m0)? { m1 } else { m0 })
        }

        /// The nodes of a page: (flags, key, the node's data or child, from its start).
        fn nodes(page: &'a [u8]) -> Vec<(u16, &'a [u8], u64, usize)> {
            let lower = u16_at(page, 12).unwrap_or(0) as usize;
            let mut out = Vec::new();
            for i in 0..lower.saturating_sub(HEADER) / 2 {
                let Some(at) = u16_at(page, HEADER + 2 * i).map(usize::from) else {
                    break;
                };
                let (Some(lo), Some(hi), Some(flags), Some(ksize)) = (
                    u16_at(page, at),
                    u16_at(page, at + 2),
                    u16_at(page, at + 4),
                    u16_at(page, at + 6),
                ) else {
                    break;
                };
                let Some(key) = page.get(at + 8..at + 8 + ksize as usize) else {
                    break;
                };
                // A branch node's child: its low 48 bits in lo, hi and flags.
                let child = u64::from(lo) | u64::from(hi) << 16 | u64::from(flags) << 32;
                out.push((flags, key, child, at + 8 + ksize as usize));
            }
            out
        }

        /// Walks the tree under `root`, calling `leaf` on each leaf page and collecting the
        /// branch pages.
        fn walk(
            &self,
            table: &str,
            root: u64,
            seen: &mut BTreeSet<u64>,
            branches: &mut Vec<Branch>,
            leaf: &mut dyn FnMut(&'a [u8]),
        ) {
            let mut stack = vec![root];
            while let Some(pgno) = stack.pop() {
                if pgno == u64::MAX || !seen.insert(pgno) {
                    continue;
                }
                let Some(page) = self.page(pgno) else {
                    continue;
                };
                let flags = u16_at(page, 10).unwrap_or(0);
                if flags & P_BRANCH != 0 {
                    let lower = u16_at(page, 12).unwrap_or(0) as usize;
                    let upper = u16_at(page, 14).unwrap_or(0) as usize;
                    branches.push(Branch {
                        table: table.to_owned(),
                        pgno,
                        used: vec![0..lower.min(self.psize), upper.min(self.psize)..self.psize],
                    });
                    stack.extend(Self::nodes(page).into_iter().map(|(_, _, child, _)| child));
                } else if flags & P_LEAF != 0 {
                    leaf(page);
                }
            }
        }

        /// Every branch page of the main table and of the named tables (the free-space
        /// table is left out: only writers read it), in page order.
        pub fn branches(&self) -> Vec<Branch> {
            let Some(meta) = self.meta() else {
                return Vec::new();
            };
            let main_root = u64_at(meta, DBS + DB_LEN + ROOT_IN_DB).unwrap_or(u64::MAX);
            let mut seen = BTreeSet::new();
            let mut branches = Vec::new();
            let mut tables: Vec<(String, u64)> = Vec::new();
            self.walk("(main)", main_root, &mut seen, &mut branches, &mut |page| {
                for (flags, key, _, data) in Self::nodes(page) {
                    if flags & F_SUBDATA != 0 {
                        let root = u64_at(page, data + ROOT_IN_DB).unwrap_or(u64::MAX);
                        tables.push((String::from_utf8_lossy(key).into_owned(), root));
                    }
                }
            });
            for (table, root) in tables {
                self.walk(&table, root, &mut seen, &mut branches, &mut |_| {});
            }
            branches.sort_by_key(|b| b.pgno);
            branches
        }
    }
}

/// The answer of `status --all`, whole (every field of every claim), or None.
fn answer_data(a: &Answer) -> Option<&Value> {
    a.json
        .as_ref()
        .map(|j| &j["data"])
        .filter(|d| d.is_object())
}

/// Flips one bit of byte `at` of the store's index.
fn flip_index_byte(store: &Path, at: usize, bit: u64) {
    let data = store.join("index/data.mdb");
    let mut bytes = std::fs::read(&data).unwrap();
    bytes[at] ^= 1 << bit;
    std::fs::write(&data, &bytes).unwrap();
}

/// Runs `work(i)` for `0..n` on `jobs` threads.
fn in_parallel(jobs: usize, n: usize, work: impl Fn(usize) + Sync) {
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= n {
                    break;
                }
                work(i);
            });
        }
    });
}

/// Runs `args` on a damaged store and says what became of it: the answer `truth`, or
/// `INDEX_DAMAGED` and the next command rebuilding and answering `truth`; anything else is a
/// failure, named with `label`.
fn judge(
    o: &Options,
    store: &Path,
    args: &[&str],
    truth: &Value,
    label: &str,
) -> (String, Option<String>) {
    let command = args[0];
    let a = elench(&o.bin, store, args);
    match (a.code, answer_data(&a)) {
        (None, _) | (Some(_), None) if a.error_code().is_none() => (
            "died".to_owned(),
            Some(format!("{label}: {command} {}", a.describe())),
        ),
        (Some(0), Some(d)) if d == truth && a.warned("INDEX_REBUILT") => {
            ("same answer, INDEX_REBUILT".to_owned(), None)
        }
        (Some(0), Some(d)) if d == truth => ("same answer".to_owned(), None),
        (Some(0), Some(_)) if a.warned("INDEX_REBUILT") => (
            "rebuilt, yet a different answer".to_owned(),
            Some(format!(
                "{label}: {command}: rebuilt, yet a different answer"
            )),
        ),
        (Some(0), Some(_)) => (
            "SILENT CHANGE".to_owned(),
            Some(format!(
                "{label}: {command}: a different answer, exit 0, no warning"
            )),
        ),
        _ if a.error_code() == Some("INDEX_DAMAGED") => {
            let next = elench(&o.bin, store, args);
            if next.ok() && next.warned("INDEX_REBUILT") && answer_data(&next) == Some(truth) {
                ("INDEX_DAMAGED, the next command rebuilt".to_owned(), None)
            } else {
                (
                    "INDEX_DAMAGED, the next command did not rebuild".to_owned(),
                    Some(format!(
                        "{label}: {command}: INDEX_DAMAGED, then {}",
                        next.describe()
                    )),
                )
            }
        }
        _ => (
            format!("error {}", a.error_code().unwrap_or("?")),
            Some(format!("{label}: {command} {}", a.describe())),
        ),
    }
}

/// Every used byte of every branch page, one flip at a time (see the module comment).
fn branch_sweep(o: &Options, dir: &Path, pristine: &Path) -> Tally {
    let truth = elench(&o.bin, pristine, ALL);
    let truth = answer_data(&truth)
        .expect("the pristine store answers")
        .clone();
    // With `--blast`: the blast radius of the first claim, whose closure is the largest.
    let root = truth["claims"][0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let blast: Option<([&str; 2], Value)> = o.blast.then(|| {
        let args = ["blast", root.as_str()];
        let want = answer_data(&elench(&o.bin, pristine, &args))
            .expect("the pristine store answers blast")
            .clone();
        (args, want)
    });
    let n_claims = truth["claims"].as_array().map_or(0, Vec::len);
    let bytes = std::fs::read(pristine.join("index/data.mdb")).unwrap();
    let file = lmdb::File::read(&bytes).expect("an LMDB file");
    let branches = file.branches();
    let mut per_table: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut flips: Vec<(usize, String)> = Vec::new();
    for b in &branches {
        let e = per_table.entry(&b.table).or_default();
        e.0 += 1;
        for r in &b.used {
            e.1 += r.len();
            for at in r.clone() {
                flips.push((b.pgno as usize * file.psize + at, b.table.clone()));
            }
        }
    }
    let total = flips.len();
    let flips: Vec<(usize, String)> = flips.into_iter().step_by(o.stride).collect();
    println!(
        "branch pages: {} claims and records, index of {} bytes, {} branch pages in use \
         ({total} bytes used); flipping every {} byte(s): {} flips",
        n_claims,
        bytes.len(),
        branches.len(),
        o.stride,
        flips.len()
    );
    for (table, (pages, used)) in &per_table {
        println!("  {table}: {pages} branch page(s), {used} bytes used");
    }
    let t = std::sync::Mutex::new(Tally::new("index branch-page flips"));
    let started = Instant::now();
    let done = std::sync::atomic::AtomicUsize::new(0);
    in_parallel(o.jobs, flips.len(), |i| {
        let (at, table) = &flips[i];
        let store = dir.join(format!("branch{i}"));
        copy_dir(pristine, &store);
        let bit = Rng(o.seed ^ (*at as u64).wrapping_mul(0x9e37_79b9)).below(8);
        flip_index_byte(&store, *at, bit);
        let label = format!("{table} byte {at} bit {bit}");
        let (mut outcome, mut failure) = judge(o, &store, ALL, &truth, &label);
        // The answer did not change and nothing was found: the damage may lie where
        // `status` never reads (the premise pairs); `blast` reads them.
        if let (Some((args, want)), "same answer") = (&blast, outcome.as_str()) {
            let (b, f) = judge(o, &store, args, want, &label);
            outcome = format!("same answer; blast: {b}");
            failure = f;
        }
        let _ = std::fs::remove_dir_all(&store);
        let mut t = t.lock().unwrap();
        t.runs += 1;
        t.saw(&format!("{table}: {outcome}"));
        if let Some(f) = failure {
            t.fail(f);
        }
        let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        if n.is_multiple_of(500) {
            eprintln!("  {n} of {} flips, {:.0?}", flips.len(), started.elapsed());
        }
    });
    t.into_inner().unwrap()
}

/// Every byte LMDB reads of its two meta pages, one flip at a time (see the module comment).
fn meta_sweep(o: &Options, dir: &Path, pristine: &Path, ids: &[String]) -> Tally {
    let before = elench(&o.bin, pristine, ALL);
    let before = answer_data(&before)
        .expect("the pristine store answers")
        .clone();
    // One more record: a falsification of a claim with dependents' statuses to change.
    let (_, extra) = seal(
        &claim("falsified late", &[], "falsification", &ids[..1], 9_999_999),
        &key(2),
    )
    .expect("the extra record seals");
    let extra_file = dir.join("meta-extra.dsse");
    std::fs::write(&extra_file, &extra).unwrap();
    let extra_file = extra_file.to_string_lossy().into_owned();
    let after = {
        let store = dir.join("meta-truth");
        copy_dir(pristine, &store);
        assert!(elench(&o.bin, &store, &["add", &extra_file]).ok());
        let a = elench(&o.bin, &store, ALL);
        let d = answer_data(&a)
            .expect("the store answers after the add")
            .clone();
        let _ = std::fs::remove_dir_all(&store);
        d
    };
    let bytes = std::fs::read(pristine.join("index/data.mdb")).unwrap();
    let psize = lmdb::File::read(&bytes).expect("an LMDB file").psize;
    let flips: Vec<usize> = (0..2)
        .flat_map(|p| p * psize..p * psize + lmdb::META_LEN)
        .step_by(o.stride)
        .collect();
    println!(
        "meta pages: {} bytes each read by LMDB; {} flips",
        lmdb::META_LEN,
        flips.len()
    );
    let t = std::sync::Mutex::new(Tally::new("index meta-page flips"));
    in_parallel(o.jobs, flips.len(), |i| {
        let at = flips[i];
        let store = dir.join(format!("meta{i}"));
        copy_dir(pristine, &store);
        let bit = Rng(o.seed ^ (at as u64 + 1).wrapping_mul(0x9e37_79b9)).below(8);
        flip_index_byte(&store, at, bit);
        let label = format!("meta page {} byte {} bit {bit}", at / psize, at % psize);
        let mut steps = Vec::new();
        let mut failure = None;
        // The true answers: before the add, after it, or (an add that failed after its
        // record reached the log) either.
        let mut truths: Vec<&Value> = vec![&before];
        let mut damaged_before = false;
        for (step, args) in [
            ("status", ALL.to_vec()),
            ("add", vec!["add", extra_file.as_str()]),
            ("status", ALL.to_vec()),
        ] {
            let a = elench(&o.bin, &store, &args);
            let said = match (a.code, a.error_code()) {
                (Some(0), None) => {
                    if step == "add" {
                        truths = vec![&after];
                        "ok".to_owned()
                    } else {
                        match answer_data(&a) {
                            Some(d) if truths.contains(&d) => "true answer".to_owned(),
                            _ => {
                                failure.get_or_insert(format!("{label}: {step}: another answer"));
                                "ANOTHER ANSWER".to_owned()
                            }
                        }
                    }
                }
                (Some(_), Some("INDEX_DAMAGED")) if !damaged_before => {
                    if step == "add" {
                        truths = vec![&before, &after];
                    }
                    "INDEX_DAMAGED".to_owned()
                }
                _ => {
                    failure.get_or_insert(format!("{label}: {step}: {}", a.describe()));
                    a.describe()
                }
            };
            damaged_before = a.error_code() == Some("INDEX_DAMAGED");
            let rebuilt = if a.warned("INDEX_REBUILT") {
                " (rebuilt)"
            } else {
                ""
            };
            steps.push(format!("{step}: {said}{rebuilt}"));
        }
        let _ = std::fs::remove_dir_all(&store);
        let mut t = t.lock().unwrap();
        t.runs += 1;
        t.saw(&steps.join(", "));
        if let Some(f) = failure {
            t.fail(f);
        }
    });
    t.into_inner().unwrap()
}

fn main() {
    let o = Options::parse();
    let dir = elench::scratch::ScratchDir::unlisted("elench-campaign").unwrap();
    let started = Instant::now();
    let mut rng = Rng(o.seed);
    let mut ids = vec![];
    let small = ["flips", "logflips", "cuts", "reads"]
        .iter()
        .any(|p| o.wants(p));
    let pristine = make_store(&o, dir.path(), "pristine", o.claims, &mut rng, &mut ids);
    let before = statuses(&elench(&o.bin, &pristine, ALL)).expect("the pristine store answers");
    if small {
        println!(
            "store of {} claims and records, 3 trust events (seed {:#x}, binary {})",
            before.len(),
            o.seed,
            o.bin.display()
        );
    }
    let mut tallies = vec![];
    if o.wants("branches") || o.wants("metapages") {
        let mut ids = vec![];
        let mut rng = Rng(o.seed ^ 0xb4a9c4);
        let big = make_store(&o, dir.path(), "pages", o.branch_claims, &mut rng, &mut ids);
        if o.wants("branches") {
            tallies.push(branch_sweep(&o, dir.path(), &big));
        }
        if o.wants("metapages") {
            tallies.push(meta_sweep(&o, dir.path(), &big, &ids));
        }
    }
    if o.wants("flips") {
        tallies.push(flips(&o, dir.path(), &pristine, &before));
    }
    if o.wants("logflips") {
        tallies.push(log_flips(&o, dir.path(), &pristine));
    }
    if o.wants("cuts") {
        tallies.push(cuts(&o, dir.path(), &pristine, &before));
    }
    if o.wants("reads") {
        tallies.push(reads(&o, dir.path(), &pristine, &ids));
    }
    let mut failed = 0;
    for t in &tallies {
        t.print();
        failed += t.failures.len();
    }
    println!("{failed} failure(s) in {:.0?}", started.elapsed());
    if failed > 0 {
        std::process::exit(1);
    }
}
