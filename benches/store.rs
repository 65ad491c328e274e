//! The store at scale, as a user runs it: whole `elench` processes against 100k and 1M claims,
//! each figure a ratio to a baseline measured beside it in the same run (the machines are
//! shared and noisy).
//!
//!     cargo bench --bench store                       # 100,000 claims
//!     cargo bench --bench store -- --sizes 100000,1000000
//!     cargo bench --bench store -- --only blast             # some measurements only
//!
//! `--only` takes a comma-separated list of `ingest`, `short`, `blast`, `bytes`, `fsck`
//! (default: all). Without `ingest`, the store of an earlier run is reused when there is one.
//!
//! Envelopes are generated with the project's own signing code (`ingest::seal`) into
//! `target/bench-store/n<N>/` and reused by later runs. The claims form two binary trees
//! over `dependsOn`: the first 100,000 claims are one tree (so `blast` of its root reaches a
//! 100,000-claim closure), the rest another. Goals (issue "The log"), printed as met or MISSED:
//! - bulk ingest >= 0.6x the one-core `verify_strict` rate of the same envelopes with one
//!   core, >= 1.0x with both;
//! - `status ID` and `show ID` <= 2x `elench --version`; `add one.dsse` <= 3x;
//! - `blast` of the 100k closure <= 1 s and <= 3x an in-memory BFS of the same edges;
//! - store bytes <= 2x envelope bytes; `fsck` <= 1.5x the raw verify time on the same cores.
//!
//! Every ingest and `fsck` run is paired with a run of its baseline (`verify_strict` of a
//! 20,000-envelope sample, one core or both) made just before it, and the ratio reported is
//! the median of the pairs' (three pairs up to 100,000 claims, one at a million): the
//! machine's speed drifts over a run of minutes, and a baseline measured minutes away made
//! the same code read 0.52x or 0.64x. The best of three baselines at the start is printed
//! too, for reference.

use ed25519_dalek::{Signature, SigningKey};
use elench::envelope::{pae, Envelope, PAYLOAD_TYPE};
use elench::ingest::seal;
use elench::keys::public_key_pem;
use rayon::prelude::*;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TREE: &str = "0d1b2a3c4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9";
const CLOSURE: usize = 100_000;

fn claim(i: usize, premise: Option<&str>) -> Value {
    let mut c = json!({
        "kind": "assertion",
        "assertion": {"form": "annotation", "text": format!("bench claim {i}: the parser rejects input {i}")},
        "origin": {"kind": "agent-asserted", "producer": {"id": "bench-agent/1"}},
        "anchor": {"tree": TREE, "strategy": "multi", "path": "src/lib.rs"},
        "timestamp": 1_764_000_000 + i as i64,
    });
    if let Some(p) = premise {
        c["dependsOn"] = json!([p]);
    }
    c
}

/// Parent of claim i: binary trees rooted at 0 and at CLOSURE.
fn parent(i: usize) -> Option<usize> {
    match i {
        0 => None,
        i if i < CLOSURE => Some((i - 1) / 2),
        i if i == CLOSURE => None,
        i => Some(CLOSURE + (i - CLOSURE - 1) / 2),
    }
}

struct Corpus {
    dir: PathBuf,
    bundle: PathBuf,
    ids: Vec<String>,
    envelope_bytes: u64,
}

fn generate(n: usize, agent: &SigningKey) -> Corpus {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("target/bench-store/n{n}"));
    std::fs::create_dir_all(&dir).unwrap();
    let bundle = dir.join("bundle.intoto.jsonl");
    let ids_file = dir.join("ids.txt");
    if bundle.exists() && ids_file.exists() {
        let ids: Vec<String> = std::fs::read_to_string(&ids_file)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        if ids.len() == n {
            let envelope_bytes = std::fs::metadata(&bundle).unwrap().len() - n as u64;
            return Corpus {
                dir,
                bundle,
                ids,
                envelope_bytes,
            };
        }
    }
    eprintln!("generating {n} signed envelopes…");
    let started = Instant::now();
    let mut ids: Vec<String> = vec![String::new(); n];
    let mut envs: Vec<String> = vec![String::new(); n];
    // Level by level: a claim's id depends on its premise's.
    let mut level: Vec<usize> = (0..n).filter(|&i| parent(i).is_none()).collect();
    while !level.is_empty() {
        let made: Vec<(usize, String, String)> = level
            .par_iter()
            .map(|&i| {
                let p = parent(i).map(|p| ids[p].clone());
                let (c, env) = seal(&claim(i, p.as_deref()), agent).expect("seal");
                (i, c.id, env)
            })
            .collect();
        for (i, id, env) in made {
            ids[i] = id;
            envs[i] = env;
        }
        let mut next = Vec::new();
        for &i in &level {
            for child in children(i, n) {
                next.push(child);
            }
        }
        level = next;
    }
    let mut out = std::io::BufWriter::new(std::fs::File::create(&bundle).unwrap());
    let mut envelope_bytes = 0;
    for e in &envs {
        envelope_bytes += e.len() as u64;
        out.write_all(e.as_bytes()).unwrap();
        out.write_all(b"\n").unwrap();
    }
    out.flush().unwrap();
    std::fs::write(&ids_file, ids.join("\n")).unwrap();
    eprintln!("  generated in {:.1?}", started.elapsed());
    Corpus {
        dir,
        bundle,
        ids,
        envelope_bytes,
    }
}

fn children(i: usize, n: usize) -> Vec<usize> {
    let (base, local) = if i < CLOSURE {
        (0, i)
    } else {
        (CLOSURE, i - CLOSURE)
    };
    let limit = if i < CLOSURE { CLOSURE.min(n) } else { n };
    [2 * local + 1, 2 * local + 2]
        .into_iter()
        .map(|c| base + c)
        .filter(|&c| c < limit)
        .collect()
}

/// Raw Ed25519 `verify_strict` over each envelope's PAE: the baseline ingest is measured
/// against. Returns envelopes per second.
fn verify_rate(
    envelopes: &[(Vec<u8>, Signature)],
    key: &ed25519_dalek::VerifyingKey,
    parallel: bool,
) -> f64 {
    let started = Instant::now();
    let ok = if parallel {
        envelopes
            .par_iter()
            .filter(|(m, s)| key.verify_strict(m, s).is_ok())
            .count()
    } else {
        envelopes
            .iter()
            .filter(|(m, s)| key.verify_strict(m, s).is_ok())
            .count()
    };
    assert_eq!(ok, envelopes.len());
    envelopes.len() as f64 / started.elapsed().as_secs_f64()
}

fn elench(store: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_elench"));
    c.arg("--store").arg(store).arg("--format").arg("json");
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    c
}

fn run_ok(cmd: &mut Command) -> (Duration, Value) {
    let started = Instant::now();
    let out = cmd.output().expect("elench runs");
    let took = started.elapsed();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    (took, v)
}

/// Pairs of each ingest and fsck measurement (the median is reported); at a million claims one
/// (a run takes about a minute).
const RUNS: usize = 3;
/// Envelopes in the sample a paired baseline verifies (about a second on one core).
const PAIRED_SAMPLE: usize = 20_000;

fn runs_for(n: usize) -> usize {
    if n <= CLOSURE {
        RUNS
    } else {
        1
    }
}

fn runs_said(n: usize) -> String {
    match runs_for(n) {
        1 => "one run beside its baseline".into(),
        k => format!("median of {k}, each beside its baseline"),
    }
}

/// One measured run and the baseline rate measured just before it.
struct Pair {
    took: Duration,
    baseline: f64,
    ratio: f64,
}

/// `runs` pairs of a baseline run (a rate) followed by a measured run; the pair with the
/// median ratio.
fn paired(
    runs: usize,
    mut baseline: impl FnMut() -> f64,
    mut run: impl FnMut() -> Duration,
    ratio: impl Fn(Duration, f64) -> f64,
) -> Pair {
    let mut pairs: Vec<Pair> = (0..runs)
        .map(|_| {
            let baseline = baseline();
            let took = run();
            Pair {
                took,
                baseline,
                ratio: ratio(took, baseline),
            }
        })
        .collect();
    pairs.sort_by(|a, b| a.ratio.total_cmp(&b.ratio));
    pairs.swap_remove(runs / 2)
}

/// Median wall time of `runs` runs of a command.
fn median(runs: usize, mut make: impl FnMut(usize) -> Command) -> Duration {
    let mut times: Vec<Duration> = (0..runs).map(|i| run_ok(&mut make(i)).0).collect();
    times.sort();
    times[runs / 2]
}

struct Line {
    what: String,
    value: String,
    ratio: f64,
    goal: Option<(&'static str, f64)>,
}

fn report(lines: &[Line]) {
    println!("| measure | value | ratio | goal |");
    println!("|---|---|---|---|");
    for l in lines {
        let goal = match l.goal {
            None => String::new(),
            Some((op, g)) => {
                let met = if op == ">=" {
                    l.ratio >= g
                } else {
                    l.ratio <= g
                };
                format!("{op} {g} {}", if met { "met" } else { "MISSED" })
            }
        };
        println!("| {} | {} | {:.2}x | {goal} |", l.what, l.value, l.ratio);
    }
}

fn fresh_store(c: &Corpus, name: &str, agent: &SigningKey) -> PathBuf {
    let store = c.dir.join(name);
    let _ = std::fs::remove_dir_all(&store);
    run_ok(elench(&store).arg("init"));
    let pem = c.dir.join("agent.pub.pem");
    std::fs::write(&pem, public_key_pem(&agent.verifying_key()).unwrap()).unwrap();
    run_ok(
        elench(&store)
            .args(["keys", "add", "--role", "agent", "--name", "bench"])
            .arg(&pem),
    );
    store
}

/// Which measurements to run (`--only`); all by default.
struct Only(Option<Vec<String>>);

impl Only {
    fn wants(&self, what: &str) -> bool {
        self.0.as_ref().is_none_or(|o| o.iter().any(|x| x == what))
    }
}

fn bench(n: usize, only: &Only) {
    let agent = SigningKey::from_bytes(&[21; 32]);
    let c = generate(n, &agent);
    println!("\n## {n} claims\n");
    let mut lines = Vec::new();
    let needs_verify = only.wants("ingest") || only.wants("fsck");
    let agent_key = agent.verifying_key();
    // Baseline: verify_strict over the same envelopes (a sample of up to 50,000).
    let sample: Vec<(Vec<u8>, Signature)> = if needs_verify {
        std::fs::read_to_string(&c.bundle)
            .unwrap()
            .lines()
            .take(50_000)
            .map(|l| {
                let e = Envelope::parse(l.as_bytes()).unwrap();
                let sig = Signature::from_slice(&e.signatures[0].sig).unwrap();
                (pae(PAYLOAD_TYPE, &e.payload), sig)
            })
            .collect()
    } else {
        Vec::new()
    };
    // The baseline of one pair: a smaller sample, verified just before the measured run.
    let paired_sample = &sample[..sample.len().min(PAIRED_SAMPLE)];
    let baseline = |parallel: bool| move || verify_rate(paired_sample, &agent_key, parallel);
    if needs_verify {
        // The best of three runs each, for reference.
        let best = |parallel: bool| {
            (0..3)
                .map(|_| verify_rate(&sample, &agent_key, parallel))
                .fold(0.0, f64::max)
        };
        let (one_core, both_cores) = (best(false), best(true));
        lines.push(Line {
            what: "verify_strict, one core (baseline; best of 3 at the start)".into(),
            value: format!("{one_core:.0} envelopes/s"),
            ratio: 1.0,
            goal: None,
        });
        lines.push(Line {
            what: "verify_strict, both cores (best of 3 at the start)".into(),
            value: format!("{both_cores:.0} envelopes/s"),
            ratio: both_cores / one_core,
            goal: None,
        });
    }
    let rate_ratio = |t: Duration, baseline: f64| n as f64 / t.as_secs_f64() / baseline;
    let rate_said = |p: &Pair, what: &str| {
        format!(
            "{:.0} envelopes/s ({:.1?}; {}, whose {what} baseline ran at {:.0}/s)",
            n as f64 / p.took.as_secs_f64(),
            p.took,
            runs_said(n),
            p.baseline
        )
    };

    // Bulk ingest with one core, then with both, at every size.
    if only.wants("ingest") {
        // One verifying thread, and the whole process (its input reader too) on one CPU
        // where `taskset` exists, so "one core" is not helped by the other.
        let pinned = Command::new("taskset")
            .arg("-V")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        let one_core_add = |store: &Path| {
            let mut cmd = if pinned {
                let mut t = Command::new("taskset");
                t.args(["-c", "0", env!("CARGO_BIN_EXE_elench")]);
                t.arg("--store").arg(store).args(["--format", "json"]);
                t.stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null());
                t
            } else {
                elench(store)
            };
            let (t, v) = run_ok(cmd.env("RAYON_NUM_THREADS", "1").arg("add").arg(&c.bundle));
            assert_eq!(v["data"]["created"], json!(n));
            t
        };
        let p = paired(
            RUNS,
            baseline(false),
            || one_core_add(&fresh_store(&c, "store-1core", &agent)),
            rate_ratio,
        );
        lines.push(Line {
            what: format!(
                "`add` bundle, one core ({})",
                if pinned {
                    "taskset -c 0"
                } else {
                    "one rayon thread, not pinned"
                }
            ),
            value: rate_said(&p, "one-core"),
            ratio: p.ratio,
            goal: Some((">=", 0.6)),
        });
    }
    // The store every later measurement reads: made here, or reused from an earlier run.
    let store = c.dir.join("store");
    if only.wants("ingest") || !store.join("index").exists() {
        let add = || {
            let store = fresh_store(&c, "store", &agent);
            let (t, v) = run_ok(elench(&store).arg("add").arg(&c.bundle));
            assert_eq!(v["data"]["created"], json!(n));
            t
        };
        if only.wants("ingest") {
            let p = paired(runs_for(n), baseline(false), add, rate_ratio);
            lines.push(Line {
                what: "`add` bundle, both cores".into(),
                value: rate_said(&p, "one-core"),
                ratio: p.ratio,
                goal: Some((">=", 1.0)),
            });
        } else {
            add();
        }
    }
    if only.wants("short") {
        short_commands(&c, &store, &agent, n, &mut lines);
    }
    if only.wants("blast") {
        blast(&c, &store, n, &mut lines);
    }
    if only.wants("bytes") {
        bytes(&c, &store, &mut lines);
    }
    if only.wants("fsck") {
        // fsck against the raw verify time of its envelopes on both cores.
        let records = (n + 21) as f64;
        let p = paired(
            runs_for(n),
            baseline(true),
            || {
                let (t, v) = run_ok(elench(&store).arg("fsck"));
                assert_eq!(v["data"]["problems"], json!([]));
                t
            },
            |t, both_cores| t.as_secs_f64() / (records / both_cores),
        );
        let raw = Duration::from_secs_f64(records / p.baseline);
        lines.push(Line {
            what: "`fsck` vs raw verify_strict of its envelopes on both cores".into(),
            value: format!(
                "{:.1?} vs {raw:.1?} ({}, both cores at {:.0}/s)",
                p.took,
                runs_said(n),
                p.baseline
            ),
            ratio: p.ratio,
            goal: Some(("<=", 1.5)),
        });
    }
    report(&lines);
}

fn short_commands(c: &Corpus, store: &Path, agent: &SigningKey, n: usize, lines: &mut Vec<Line>) {
    // Short commands against `--version`.
    let version = median(21, |_| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_elench"));
        c.arg("--version").stdout(Stdio::piped());
        c
    });
    lines.push(Line {
        what: "`elench --version` (baseline)".into(),
        value: format!("{version:.1?}"),
        ratio: 1.0,
        goal: None,
    });
    let probe = &c.ids[n / 2 + 7];
    for (name, args) in [("status ID", "status"), ("show ID", "show")] {
        let t = median(21, |_| {
            let mut cmd = elench(store);
            cmd.arg(args).arg(probe);
            cmd
        });
        lines.push(Line {
            what: format!("`{name}`"),
            value: format!("{t:.1?}"),
            ratio: t.as_secs_f64() / version.as_secs_f64(),
            goal: Some(("<=", 2.0)),
        });
    }
    let singles: Vec<PathBuf> = (0..21)
        .map(|k| {
            let (_, env) = seal(&claim(10_000_000 + k, None), agent).unwrap();
            let p = c.dir.join(format!("one-{k}.dsse"));
            std::fs::write(&p, env).unwrap();
            p
        })
        .collect();
    let t = median(21, |k| {
        let mut cmd = elench(store);
        cmd.arg("add").arg(&singles[k]);
        cmd
    });
    lines.push(Line {
        what: "`add one.dsse`".into(),
        value: format!("{t:.1?}"),
        ratio: t.as_secs_f64() / version.as_secs_f64(),
        goal: Some(("<=", 3.0)),
    });
}

/// Runs of `blast` and of its baseline; the median of each is reported.
const BLAST_RUNS: usize = 5;

fn blast(c: &Corpus, store: &Path, n: usize, lines: &mut Vec<Line>) {
    // Blast of the 100k closure against an in-memory BFS of the same edges, producing the
    // same layered list of ids.
    let closure = n.min(CLOSURE);
    let mut adjacency: HashMap<&str, Vec<&str>> = HashMap::new();
    for i in 0..n {
        if let Some(p) = parent(i) {
            adjacency
                .entry(c.ids[p].as_str())
                .or_default()
                .push(c.ids[i].as_str());
        }
    }
    let mut bfs_times = Vec::new();
    let mut bfs_json = Vec::new();
    for _ in 0..BLAST_RUNS {
        let bfs_started = Instant::now();
        let mut depth: HashMap<&str, usize> = HashMap::new();
        let mut queue = VecDeque::from([c.ids[0].as_str()]);
        depth.insert(c.ids[0].as_str(), 0);
        let mut layers: Vec<Vec<&str>> = Vec::new();
        while let Some(id) = queue.pop_front() {
            let d = depth[id];
            if layers.len() <= d {
                layers.push(Vec::new());
            }
            layers[d].push(id);
            for &next in adjacency.get(id).map(Vec::as_slice).unwrap_or(&[]) {
                if !depth.contains_key(next) {
                    depth.insert(next, d + 1);
                    queue.push_back(next);
                }
            }
        }
        for l in &mut layers {
            l.sort_unstable();
        }
        bfs_json = serde_json::to_vec(&layers).unwrap();
        bfs_times.push(bfs_started.elapsed());
        assert_eq!(depth.len(), closure);
    }
    bfs_times.sort();
    let bfs = bfs_times[BLAST_RUNS / 2];
    let mut times = Vec::new();
    for _ in 0..BLAST_RUNS {
        // The whole answer, as the baseline produces it: no response size cap.
        let (t, v) = run_ok(
            elench(store)
                .env("ELENCH_MAX_OUTPUT_BYTES", "0")
                .arg("blast")
                .arg(&c.ids[0]),
        );
        assert_eq!(v["data"]["count"], json!(closure - 1));
        times.push(t);
    }
    times.sort();
    let t = times[BLAST_RUNS / 2];
    lines.push(Line {
        what: format!(
            "in-memory BFS of the {closure}-claim closure, to JSON (baseline, {} bytes)",
            bfs_json.len()
        ),
        value: format!("{bfs:.1?}"),
        ratio: 1.0,
        goal: None,
    });
    lines.push(Line {
        what: format!("`blast ROOT` ({closure}-claim closure), vs 1 s"),
        value: format!("{t:.1?}"),
        ratio: t.as_secs_f64(),
        goal: Some(("<=", 1.0)),
    });
    lines.push(Line {
        what: "`blast ROOT` vs the in-memory BFS".into(),
        value: format!("{t:.1?}"),
        ratio: t.as_secs_f64() / bfs.as_secs_f64(),
        goal: Some(("<=", 3.0)),
    });
}

fn bytes(c: &Corpus, store: &Path, lines: &mut Vec<Line>) {
    let du = |p: &Path| -> u64 {
        let mut total = 0;
        let mut stack = vec![p.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let e = e.unwrap();
                let m = std::fs::symlink_metadata(e.path()).unwrap();
                if m.is_dir() {
                    stack.push(e.path());
                } else {
                    // Allocated bytes, so sparse files count for what they hold.
                    use std::os::unix::fs::MetadataExt;
                    total += m.blocks() * 512;
                }
            }
        }
        total
    };
    let store_bytes = du(store);
    lines.push(Line {
        what: "store bytes on disk vs envelope bytes".into(),
        value: format!(
            "{:.1} MB vs {:.1} MB",
            store_bytes as f64 / 1e6,
            c.envelope_bytes as f64 / 1e6
        ),
        ratio: store_bytes as f64 / c.envelope_bytes as f64,
        goal: Some(("<=", 2.0)),
    });
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let sizes: Vec<usize> = args
        .iter()
        .position(|a| a == "--sizes")
        .and_then(|i| args.get(i + 1))
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![CLOSURE]);
    let only = Only(
        args.iter()
            .position(|a| a == "--only")
            .and_then(|i| args.get(i + 1))
            .map(|s| s.split(',').map(str::to_owned).collect()),
    );
    println!(
        "# elench store benchmark ({} cores)",
        rayon::current_num_threads()
    );
    for n in sizes {
        bench(n, &only);
    }
}
