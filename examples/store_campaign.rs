//! A damage campaign against real stores, through the real binary: what an attacker (or a
//! bad disk) can do to the bytes of a store, and what elench must answer.
//!
//!     cargo build --release && cargo run --release --example store_campaign
//!     cargo run --release --example store_campaign -- --flips 200 --cuts 60 --reads 1000
//!
//! Options: `--bin PATH` (default `target/release/elench`), `--claims N` (default 300),
//! `--flips N`, `--log-flips N`, `--cuts N`, `--reads N`, `--seed N`,
//! `--only flips,logflips,cuts,reads`.
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
        self.only.as_ref().is_none_or(|o| o.contains(part))
    }
}

fn usage(problem: &str) -> ! {
    eprintln!("store_campaign: {problem}");
    eprintln!("usage: store_campaign [--bin PATH] [--claims N] [--flips N] [--cuts N] [--log-flips N] [--reads N] [--seed N] [--only flips,logflips,cuts,reads]");
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

fn make_store(o: &Options, dir: &Path, rng: &mut Rng, ids: &mut Vec<String>) -> PathBuf {
    let store = dir.join("pristine");
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
    let half = o.claims / 2;
    for (part, (n, offset)) in [(half, 0), (o.claims - half, half)].into_iter().enumerate() {
        let bundle = dir.join(format!("part{part}.intoto.jsonl"));
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

fn main() {
    let o = Options::parse();
    let dir = elench::scratch::ScratchDir::unlisted("elench-campaign").unwrap();
    let started = Instant::now();
    let mut rng = Rng(o.seed);
    let mut ids = vec![];
    let pristine = make_store(&o, dir.path(), &mut rng, &mut ids);
    let before = statuses(&elench(&o.bin, &pristine, ALL)).expect("the pristine store answers");
    println!(
        "store of {} claims and records, 3 trust events (seed {:#x}, binary {})",
        before.len(),
        o.seed,
        o.bin.display()
    );
    let mut tallies = vec![];
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
