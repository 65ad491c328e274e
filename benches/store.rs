//! The store at scale, as a user runs it: whole `elench` processes against 100k and 1M claims,
//! each figure a ratio to a baseline measured beside it in the same run (the machines are
//! shared and noisy).
//!
//!     cargo bench --bench store                       # realistic workload, 100,000 claims
//!     cargo bench --bench store -- --sizes 100000,1000000
//!     cargo bench --bench store -- --workload annotation    # the one-line workload
//!     cargo bench --bench store -- --workload realistic,annotation
//!     cargo bench --bench store -- --only blast             # some measurements only
//!
//!     cargo bench --bench store -- --sizes 10000000 --only ingest-both,short,blast,bytes,fsck
//!
//! `--only` takes a comma-separated list of `ingest` (one core, then both), `ingest-both`
//! (both cores only), `short`, `blast`, `bytes`, `fsck` (default: all), or `generate` (sign
//! the corpus and stop). Without an ingest, the store of an earlier run is reused when there
//! is one. After each size's figures comes the
//! peak resident memory of every kind of command it ran (`/usr/bin/time`'s maximum resident
//! set size).
//!
//! Two workloads (`--workload`, default `realistic`), each labelled in the output:
//!
//! - `realistic`: claims as agents and harnesses write them (mean payload about 1 KB). 92%
//!   assertions (30% of all claims predicates in elench-predicate-v1, the rest annotations),
//!   5% verifications and 1% falsifications signed by a harness key as `elench check` writes
//!   them, 1% supersessions and 1% residue-acceptances signed by a human key. Text of 100 to
//!   2,000 characters (most of it short), anchors with path, range, content digest and often
//!   a symbol, some evidence, 0 to 3 premises among earlier claims. Deterministic: a fixed
//!   seed, so a size's corpus is the same on every machine, and a smaller size's claims are
//!   the first claims of a larger one's.
//! - `annotation`: one-line annotation claims with one premise (about 400 bytes of payload),
//!   the workload of every figure before the realistic one existed.
//!
//! Envelopes are generated with the project's own signing code (`ingest::seal`) into
//! `target/bench-store/<workload>-n<N>/` and reused by later runs. Both workloads give `blast`
//! one root whose `dependsOn` closure holds 100,000 claims once there are enough (below that,
//! every annotation claim, or the 74% of realistic claims that have premises): see
//! `plan_annotation` and `plan_realistic`. Goals (issue "The log"), printed as met or MISSED:
//! - bulk ingest >= 0.6x the one-core `verify_strict` rate of the same envelopes with one
//!   core, >= 1.0x with both;
//! - `status ID` and `show ID` <= 2x `elench --version` (of a probe in the middle of the
//!   log, and of the slowest of its last 20 claims); `add one.dsse` <= 3x;
//! - `blast` of the 100k closure <= 1 s and <= 3x an in-memory BFS of the same edges;
//! - store bytes <= 2x envelope bytes; `fsck` <= 1.5x the raw verify time on the same cores.
//!
//! Every ingest and `fsck` run is paired with a run of its baseline (`verify_strict` of a
//! 20,000-envelope sample, one core or both, each envelope against its own signer's key) made
//! just before it, and the ratio reported is the median of the pairs' (three pairs up to
//! 100,000 claims, one at a million): the machine's speed drifts over a run of minutes, and a
//! baseline measured minutes away made the same code read 0.52x or 0.64x. The best of three
//! baselines at the start is printed too, for reference.

use ed25519_dalek::{Signature, SigningKey, VerifyingKey};
use elench::envelope::{pae, Envelope, PAYLOAD_TYPE};
use elench::ingest::seal;
use elench::keys::{keyid, public_key_pem};
use rayon::prelude::*;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TREE: &str = "0d1b2a3c4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9";
const CLOSURE: usize = 100_000;
/// Claims signed and written per step of `generate`: the memory it holds for envelopes.
const GENERATE_CHUNK: usize = 100_000;
/// The realistic workload's seed.
const SEED: u64 = 0x656c_656e_6368_0001;
/// The generators' version, kept beside a corpus: a corpus of another version is made again.
/// Change it with anything that changes the claims generated.
const GENERATOR: u64 = 3;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Workload {
    Realistic,
    Annotation,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::Realistic => "realistic",
            Workload::Annotation => "annotation",
        }
    }

    fn parse(s: &str) -> Option<Workload> {
        match s {
            "realistic" => Some(Workload::Realistic),
            "annotation" => Some(Workload::Annotation),
            _ => None,
        }
    }

    fn said(self) -> &'static str {
        match self {
            Workload::Realistic => {
                "claims as agents write them: predicates, annotations, harness records, \
                 human records; text of 100 to 2,000 characters; 0 to 3 premises"
            }
            Workload::Annotation => "one-line annotation claims with one premise each",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Annotation,
    Predicate,
    Verification,
    Falsification,
    Supersession,
    Acceptance,
}

impl Kind {
    const ALL: [Kind; 6] = [
        Kind::Annotation,
        Kind::Predicate,
        Kind::Verification,
        Kind::Falsification,
        Kind::Supersession,
        Kind::Acceptance,
    ];

    fn label(self) -> &'static str {
        match self {
            Kind::Annotation => "assertion (annotation), agent",
            Kind::Predicate => "assertion (predicate), agent",
            Kind::Verification => "verification, harness",
            Kind::Falsification => "falsification, harness",
            Kind::Supersession => "supersession, human",
            Kind::Acceptance => "residue-acceptance, human",
        }
    }

    fn is_assertion(self) -> bool {
        matches!(self, Kind::Annotation | Kind::Predicate)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Signer {
    Agent,
    Harness,
    Human,
}

/// The workload's signing keys; the store under test trusts each in its role.
struct Keys {
    agent: SigningKey,
    harness: SigningKey,
    human: SigningKey,
}

impl Keys {
    fn new() -> Keys {
        Keys {
            agent: SigningKey::from_bytes(&[21; 32]),
            harness: SigningKey::from_bytes(&[22; 32]),
            human: SigningKey::from_bytes(&[23; 32]),
        }
    }

    fn of(&self, s: Signer) -> &SigningKey {
        match s {
            Signer::Agent => &self.agent,
            Signer::Harness => &self.harness,
            Signer::Human => &self.human,
        }
    }

    /// (role, name, key) of every key the workload signs with.
    fn trusted(&self, w: Workload) -> Vec<(&'static str, &'static str, &SigningKey)> {
        let mut k = vec![("agent", "bench", &self.agent)];
        if w == Workload::Realistic {
            k.push(("harness", "bench-harness", &self.harness));
            k.push(("human", "bench-human", &self.human));
        }
        k
    }

    fn by_keyid(&self) -> HashMap<String, VerifyingKey> {
        [&self.agent, &self.harness, &self.human]
            .into_iter()
            .map(|k| (keyid(&k.verifying_key()), k.verifying_key()))
            .collect()
    }
}

/// A claim before ids exist: what it is and which earlier claims (by position) it names.
struct Spec {
    kind: Kind,
    premises: Vec<u32>,
    targets: Vec<u32>,
}

/// A workload's claims in arrival order. Claim 0 is the root whose closure `blast` measures.
struct Plan {
    specs: Vec<Spec>,
    /// Members of claim 0's `dependsOn` closure, claim 0 included.
    closure: usize,
}

fn plan(w: Workload, n: usize) -> Plan {
    match w {
        Workload::Realistic => plan_realistic(n),
        Workload::Annotation => plan_annotation(n),
    }
}

/// Two binary trees over `dependsOn`, rooted at 0 and at CLOSURE: blast of 0 reaches the
/// first min(n, CLOSURE) claims, contiguous in the log.
fn plan_annotation(n: usize) -> Plan {
    let parent = |i: usize| match i {
        0 => None,
        i if i < CLOSURE => Some((i - 1) / 2),
        i if i == CLOSURE => None,
        i => Some(CLOSURE + (i - CLOSURE - 1) / 2),
    };
    Plan {
        specs: (0..n)
            .map(|i| Spec {
                kind: Kind::Annotation,
                premises: parent(i).map(|p| p as u32).into_iter().collect(),
                targets: Vec::new(),
            })
            .collect(),
        closure: n.min(CLOSURE),
    }
}

/// A small deterministic generator (SplitMix64), so corpora are the same everywhere.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The generator for claim i's content: a function of i alone.
    fn for_claim(i: usize, salt: u64) -> Rng {
        Rng(SEED ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ salt.rotate_left(32))
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }

    /// An element of `xs`, half the time among its last `window`: work builds on what was
    /// just said as much as on anything older.
    fn pick_recent<T: Copy>(&mut self, xs: &[T], window: usize) -> T {
        if self.chance(0.5) {
            xs[xs.len() - 1 - self.below(xs.len().min(window))]
        } else {
            *self.pick(xs)
        }
    }
}

/// The realistic mix, claim by claim (every share is of all claims):
/// - 5% verifications and 1% falsifications of an earlier predicate, signed by the harness;
/// - 1% supersessions of an earlier assertion, 1% residue-acceptances of one to three, signed
///   by a human;
/// - the rest assertions, predicates for 30% of all claims and annotations for the others,
///   with 0 premises (20%), 1 (40%), 2 (25%) or 3 (15%).
///
/// The graph gives `blast` one large closure the way a project gives one: a foundational
/// claim (claim 0) that most work in one area builds on. An assertion with premises takes its
/// first among the claims already in the current area's closure (any of them, so the closure
/// stays shallow, as a project's is), and the others among the area's earlier assertions,
/// half of them recent. So every assertion with a premise is in the closure and nothing else
/// is: records and assertions without premises are interleaved with it in the log, as they
/// are in a real one. The first area ends once its closure holds CLOSURE claims (about the
/// first 136,000 claims; below that size the closure is about 74% of them) and a second area
/// with a root of its own holds the rest, its premises never in the first area.
fn plan_realistic(n: usize) -> Plan {
    let mut rng = Rng::new(SEED);
    let mut specs: Vec<Spec> = Vec::with_capacity(n);
    let mut closure: Vec<u32> = Vec::new();
    let mut area: Vec<u32> = Vec::new();
    let mut assertions: Vec<u32> = Vec::new();
    let mut predicates: Vec<u32> = Vec::new();
    let mut first_closure: Option<usize> = None;
    for i in 0..n {
        let me = i as u32;
        if i == 0 || (first_closure.is_none() && closure.len() == CLOSURE) {
            if i > 0 {
                first_closure = Some(closure.len());
            }
            closure = vec![me];
            area = vec![me];
            assertions.push(me);
            specs.push(Spec {
                kind: Kind::Annotation,
                premises: Vec::new(),
                targets: Vec::new(),
            });
            continue;
        }
        let r = rng.unit();
        let kind = if r < 0.05 && !predicates.is_empty() {
            Kind::Verification
        } else if (0.05..0.06).contains(&r) && !predicates.is_empty() {
            Kind::Falsification
        } else if (0.06..0.07).contains(&r) {
            Kind::Supersession
        } else if (0.07..0.08).contains(&r) {
            Kind::Acceptance
        } else if rng.chance(0.30 / 0.92) {
            Kind::Predicate
        } else {
            Kind::Annotation
        };
        let mut spec = Spec {
            kind,
            premises: Vec::new(),
            targets: Vec::new(),
        };
        match kind {
            Kind::Verification | Kind::Falsification => {
                spec.targets.push(rng.pick_recent(&predicates, 200));
            }
            Kind::Supersession => spec.targets.push(rng.pick_recent(&assertions, 200)),
            Kind::Acceptance => {
                for _ in 0..1 + rng.below(3) {
                    let t = rng.pick_recent(&assertions, 200);
                    if !spec.targets.contains(&t) {
                        spec.targets.push(t);
                    }
                }
            }
            Kind::Annotation | Kind::Predicate => {
                let r = rng.unit();
                let k = if r < 0.20 {
                    0
                } else if r < 0.60 {
                    1
                } else if r < 0.85 {
                    2
                } else {
                    3
                };
                if k > 0 {
                    spec.premises.push(*rng.pick(&closure));
                    for _ in 1..k {
                        let p = rng.pick_recent(&area, 64);
                        if !spec.premises.contains(&p) {
                            spec.premises.push(p);
                        }
                    }
                    closure.push(me);
                }
                area.push(me);
                assertions.push(me);
                if kind == Kind::Predicate {
                    predicates.push(me);
                }
            }
        }
        specs.push(spec);
    }
    Plan {
        specs,
        closure: first_closure.unwrap_or(closure.len()),
    }
}

fn sha256_hex(s: &str) -> String {
    hex::encode(Sha256::digest(s.as_bytes()))
}

const DIRS: &[&str] = &[
    "src/parser",
    "src/store",
    "src/store/index",
    "src/fold",
    "src/anchor",
    "src/eval",
    "src/cli/commands",
    "src/sync",
    "src/gate",
    "src/net/http",
];
const FILES: &[&str] = &[
    "mod.rs",
    "reader.rs",
    "writer.rs",
    "walk.rs",
    "model.rs",
    "errors.rs",
    "config.rs",
    "retry.rs",
];
const FUNCS: &[&str] = &[
    "parse_expr",
    "read_frame",
    "fold_status",
    "walk_closure",
    "resolve_anchor",
    "load_policy",
    "open_index",
    "append_group",
    "verify_envelope",
    "canonicalize",
    "spawn_worker",
    "retry_request",
];
const NOUNS: &[&str] = &[
    "parser",
    "tokenizer",
    "index writer",
    "log reader",
    "status fold",
    "closure walk",
    "anchor resolver",
    "sandbox",
    "policy loader",
    "response cache",
    "scheduler",
    "config loader",
    "retry loop",
    "store lock",
    "serializer",
];
const VERBS: &[&str] = &[
    "rejects",
    "accepts",
    "returns an error on",
    "propagates",
    "ignores",
    "retries",
    "logs and skips",
    "normalises",
    "validates",
    "caches",
];
const OBJECTS: &[&str] = &[
    "empty input",
    "a truncated frame",
    "duplicate keys",
    "an unknown field",
    "a stale premise",
    "a missing file",
    "non-UTF-8 paths",
    "negative offsets",
    "an expired token",
    "a second writer",
    "a symlink out of the tree",
    "a zero-length body",
];
const CONDS: &[&str] = &[
    "the store is locked",
    "the input ends mid-record",
    "the tree changed since the claim",
    "two writers race",
    "the remote is unreachable",
    "the file is empty",
    "a signal arrives during the write",
    "the configuration names an unknown key",
];
const CRATES: &[&str] = &["serde", "regex", "tokio", "rand", "syn", "hashbrown"];
const WORDS: &[&str] = &["TODO", "unwrap(", "panic!", "dbg!", "println!", "FIXME"];

fn path_of(r: &mut Rng) -> String {
    format!("{}/{}", r.pick(DIRS), r.pick(FILES))
}

/// Prose of exactly `chars` characters, as agents write it: sentences naming code, some
/// quotes and backticks, paragraphs, the odd non-ASCII character.
fn prose(r: &mut Rng, chars: usize) -> String {
    let mut s = String::new();
    while s.chars().count() < chars {
        if !s.is_empty() {
            s.push_str(if r.chance(0.15) { "\n\n" } else { " " });
        }
        let sentence = match r.below(6) {
            0 => format!(
                "The {} {} {} when {}.",
                r.pick(NOUNS),
                r.pick(VERBS),
                r.pick(OBJECTS),
                r.pick(CONDS)
            ),
            1 => format!(
                "`{}` in `{}` {} {}; see line {}.",
                r.pick(FUNCS),
                path_of(r),
                r.pick(VERBS),
                r.pick(OBJECTS),
                1 + r.below(900)
            ),
            2 => format!(
                "Checked by reading the code: {} is handled before the {} runs, so \"{}\" cannot reach it.",
                r.pick(OBJECTS),
                r.pick(NOUNS),
                r.pick(CONDS)
            ),
            3 => format!(
                "This relies on the {} never seeing {} after {}.",
                r.pick(NOUNS),
                r.pick(OBJECTS),
                r.pick(FUNCS)
            ),
            4 => format!(
                "Note \u{2014} the {} changed in session s-{}; before, it {} {}.",
                r.pick(NOUNS),
                r.below(5000),
                r.pick(VERBS),
                r.pick(OBJECTS)
            ),
            _ => format!(
                "If {}, the caller gets the error from `{}` and nothing is written.",
                r.pick(CONDS),
                r.pick(FUNCS)
            ),
        };
        s.push_str(&sentence);
    }
    s.chars().take(chars).collect()
}

/// 100 to 2,000 characters, most of them short: three in four of 100 to 250, the others
/// log-uniform from 250 to 2,000 (a mean of about 340).
fn text_len(r: &mut Rng) -> usize {
    if r.chance(0.75) {
        100 + r.below(151)
    } else {
        ((250.0 * 8f64.powf(r.unit())) as usize).clamp(250, 2000)
    }
}

/// The tree a claim at position i was made at: a new tree every 400 claims.
fn tree_at(i: usize) -> String {
    sha256_hex(&format!("bench tree {}", i / 400))
}

/// An assertion's anchor: path, range, the range's content digest, often a symbol.
fn anchor_of(i: usize) -> Value {
    let mut r = Rng::for_claim(i, 2);
    let path = path_of(&mut r);
    let start = 1 + r.below(800);
    let end = start + r.below(60);
    let mut a = json!({
        "tree": tree_at(i),
        "strategy": "multi",
        "path": path,
        "range": [start, end],
        "contentDigest": sha256_hex(&format!("{path}:{start}:{end}:{i}")),
    });
    if r.chance(0.4) {
        let module = path
            .trim_start_matches("src/")
            .trim_end_matches(".rs")
            .replace('/', "::");
        a["symbol"] = json!(format!("elench::{module}::{}", r.pick(FUNCS)));
    }
    a
}

/// One clause of elench-predicate-v1, boolean.
fn clause(r: &mut Rng) -> String {
    let f = r.pick(FUNCS);
    match r.below(9) {
        0 | 1 => format!(
            "test(\"{}::tests::{f}_{}\").passed",
            r.pick(DIRS).trim_start_matches("src/").replace('/', "::"),
            r.pick(OBJECTS).replace(['-', ' '], "_")
        ),
        2 => format!(r#"grep(/unsafe\s*\{{/, "{}") == 0"#, r.pick(DIRS)),
        3 => format!(
            "grep(\"{}\", \"{}\") <= {}",
            r.pick(WORDS),
            path_of(r),
            r.below(4)
        ),
        4 => format!(
            "exists(\"{}\") && !exists(\"{}/legacy.rs\")",
            path_of(r),
            r.pick(DIRS)
        ),
        5 => format!(
            "run(\"cargo tree --duplicates\").stdout.contains(\"{}\") == false",
            r.pick(CRATES)
        ),
        6 => format!(
            "(run(\"./scripts/check-{f}.sh\").exit == 0 || test(\"{f}_is_optional\").passed)"
        ),
        7 => format!(r#"grep(/fn {f}\(/, "{}") == 1"#, path_of(r)),
        _ => format!(
            "run(\"git log -1 --format=%s\").stdout.matches(\"^(fix|feat|docs)\\\\({f}\\\\): \")"
        ),
    }
}

/// A predicate's source: one to three clauses joined by `&&`; a function of i alone, so a
/// record about claim i can quote it.
fn predicate_source(i: usize) -> String {
    let mut r = Rng::for_claim(i, 3);
    let k = 1 + r.below(3);
    (0..k)
        .map(|_| clause(&mut r))
        .collect::<Vec<_>>()
        .join(" && ")
}

fn timestamp(i: usize) -> i64 {
    1_764_000_000 + 3 * i as i64
}

/// Claim i of the realistic workload, and who signs it.
fn realistic_claim(i: usize, spec: &Spec, ids: &[String]) -> (Value, Signer) {
    let mut r = Rng::for_claim(i, 1);
    let names =
        |xs: &[u32]| -> Vec<&str> { xs.iter().map(|&x| ids[x as usize].as_str()).collect() };
    let (mut c, signer) = match spec.kind {
        Kind::Annotation | Kind::Predicate => {
            let len = text_len(&mut r);
            let text = prose(&mut r, len);
            let mut assertion = json!({"form": "annotation", "text": text});
            if spec.kind == Kind::Predicate {
                let source = predicate_source(i);
                let mut expr = json!({"language": "elench-predicate-v1", "source": source});
                if r.chance(0.7) {
                    expr["digest"] = json!(sha256_hex(&source));
                }
                assertion["form"] = json!("predicate");
                assertion["expression"] = expr;
            }
            let mut c = json!({
                "kind": "assertion",
                "assertion": assertion,
                "origin": {"kind": "agent-asserted",
                           "producer": {"id": format!("coding-agent/{}", 1 + (i / 20_000) % 4),
                                        "sessionId": format!("s-{}", i / 150)}},
                "anchor": anchor_of(i),
                "timestamp": timestamp(i),
            });
            let e = r.unit();
            if e < 0.20 {
                c["evidence"] = json!([{"kind": "artifact-digest",
                    "digest": sha256_hex(&format!("artifact {i}")),
                    "uri": format!("file://target/debug/deps/elench-{:016x}", r.next())}]);
            } else if e < 0.25 {
                c["evidence"] = json!([{"kind": "external-attestation",
                    "uri": format!("https://ci.example.org/runs/{}/attestation.json", i / 50)}]);
            }
            (c, Signer::Agent)
        }
        // As `elench check` writes them.
        Kind::Verification | Kind::Falsification => {
            let target = spec.targets[0] as usize;
            let source = predicate_source(target);
            let holds = spec.kind == Kind::Verification;
            let tree = tree_at(i);
            let mut anchor = anchor_of(target);
            anchor["tree"] = json!(tree);
            let digest = sha256_hex(&format!("transcript {i}"));
            let evidence = if source.starts_with("test(") {
                json!({"kind": "test-report", "digest": digest})
            } else {
                json!({"kind": "process-exit", "digest": digest, "exitCode": if holds { 0 } else { 1 }})
            };
            let c = json!({
                "kind": if holds { "verification" } else { "falsification" },
                "target": names(&spec.targets),
                "assertion": {"form": "annotation",
                              "text": format!("elench check: `{source}` is {holds} at tree {tree}")},
                "origin": {"kind": "harness-observed",
                           "producer": {"id": format!("elench-check/0.2 ci-runner-{}", i % 7),
                                        "hermeticity": "container"}},
                "anchor": anchor,
                "timestamp": timestamp(i),
                "evidence": [evidence],
            });
            (c, Signer::Harness)
        }
        Kind::Supersession | Kind::Acceptance => {
            let len = text_len(&mut r);
            let text = prose(&mut r, len);
            let c = json!({
                "kind": if spec.kind == Kind::Supersession { "supersession" } else { "residue-acceptance" },
                "target": names(&spec.targets),
                "assertion": {"form": "annotation", "text": text},
                "origin": {"kind": "human-asserted",
                           "producer": {"id": *r.pick(&["alice@example.org", "bob@example.org"])}},
                "anchor": {"tree": tree_at(i), "strategy": "multi"},
                "timestamp": timestamp(i),
            });
            (c, Signer::Human)
        }
    };
    if !spec.premises.is_empty() {
        c["dependsOn"] = json!(names(&spec.premises));
    }
    (c, signer)
}

fn annotation_claim(i: usize, premise: Option<&str>) -> Value {
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

/// Claim i of a workload, the ids of the claims before it known.
fn build(w: Workload, i: usize, spec: &Spec, ids: &[String]) -> (Value, Signer) {
    match w {
        Workload::Realistic => realistic_claim(i, spec, ids),
        Workload::Annotation => (
            annotation_claim(i, spec.premises.first().map(|&p| ids[p as usize].as_str())),
            Signer::Agent,
        ),
    }
}

struct Corpus {
    workload: Workload,
    dir: PathBuf,
    bundle: PathBuf,
    ids: Vec<String>,
    plan: Plan,
    envelope_bytes: u64,
    /// The in-toto Statements the envelopes sign.
    payload_bytes: u64,
    /// The claims alone, without their ids, in compact JSON.
    claim_bytes: u64,
}

fn generate(w: Workload, n: usize, keys: &Keys) -> Corpus {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("target/bench-store/{}-n{n}", w.name()));
    std::fs::create_dir_all(&dir).unwrap();
    let bundle = dir.join("bundle.intoto.jsonl");
    let ids_file = dir.join("ids.txt");
    let meta_file = dir.join("meta.json");
    let plan = plan(w, n);
    if bundle.exists() && ids_file.exists() && meta_file.exists() {
        let ids: Vec<String> = std::fs::read_to_string(&ids_file)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        let meta: Value = serde_json::from_slice(&std::fs::read(&meta_file).unwrap()).unwrap();
        if ids.len() == n && meta["generator"] == json!(GENERATOR) {
            return Corpus {
                workload: w,
                dir,
                bundle,
                ids,
                plan,
                envelope_bytes: meta["envelopeBytes"].as_u64().unwrap(),
                payload_bytes: meta["payloadBytes"].as_u64().unwrap(),
                claim_bytes: meta["claimBytes"].as_u64().unwrap(),
            };
        }
    }
    // A store made from another corpus would answer for other claims.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    eprintln!("generating {n} signed envelopes ({} workload)…", w.name());
    let started = Instant::now();
    // Written a chunk at a time, so that memory holds one chunk's envelopes and not the whole
    // bundle (ten million realistic envelopes are 20 GB). Within a chunk, level by level: a
    // claim's id depends on the ids it names, and those before the chunk are known.
    let mut ids: Vec<String> = vec![String::new(); n];
    let mut out = std::io::BufWriter::new(std::fs::File::create(&bundle).unwrap());
    let (mut envelope_bytes, mut payload_bytes, mut claim_bytes) = (0u64, 0u64, 0u64);
    let mut deepest = 0;
    for first in (0..n).step_by(GENERATE_CHUNK) {
        let end = (first + GENERATE_CHUNK).min(n);
        let mut level = vec![0usize; end - first];
        let mut levels: Vec<Vec<usize>> = Vec::new();
        for i in first..end {
            let s = &plan.specs[i];
            let l = s
                .premises
                .iter()
                .chain(&s.targets)
                .map(|&p| p as usize)
                .filter(|&p| p >= first)
                .map(|p| level[p - first] + 1)
                .max()
                .unwrap_or(0);
            level[i - first] = l;
            if levels.len() <= l {
                levels.push(Vec::new());
            }
            levels[l].push(i);
        }
        deepest = deepest.max(levels.len());
        let mut envs: Vec<String> = vec![String::new(); end - first];
        for members in &levels {
            let made: Vec<(usize, String, String, usize, usize)> = members
                .par_iter()
                .map(|&i| {
                    let (claim, signer) = build(w, i, &plan.specs[i], &ids);
                    let (c, env) = seal(&claim, keys.of(signer))
                        .unwrap_or_else(|e| panic!("claim {i} does not seal: {e:?}\n{claim:#}"));
                    let payload = Envelope::parse(env.as_bytes()).unwrap().payload.len();
                    (i, c.id, env, payload, claim.to_string().len())
                })
                .collect();
            for (i, id, env, payload, claim) in made {
                ids[i] = id;
                envs[i - first] = env;
                payload_bytes += payload as u64;
                claim_bytes += claim as u64;
            }
        }
        for e in &envs {
            envelope_bytes += e.len() as u64;
            out.write_all(e.as_bytes()).unwrap();
            out.write_all(b"\n").unwrap();
        }
        if n > GENERATE_CHUNK {
            eprintln!("  {end} of {n} ({:.0?})", started.elapsed());
        }
    }
    out.flush().unwrap();
    std::fs::write(&ids_file, ids.join("\n")).unwrap();
    std::fs::write(
        &meta_file,
        json!({"generator": GENERATOR, "envelopeBytes": envelope_bytes,
               "payloadBytes": payload_bytes, "claimBytes": claim_bytes})
        .to_string(),
    )
    .unwrap();
    eprintln!(
        "  generated in {:.1?} (at most {deepest} levels of premises and targets in a chunk)",
        started.elapsed(),
    );
    Corpus {
        workload: w,
        dir,
        bundle,
        ids,
        plan,
        envelope_bytes,
        payload_bytes,
        claim_bytes,
    }
}

/// The workload's shape, printed before its figures.
fn describe(c: &Corpus) {
    let n = c.ids.len();
    println!("Workload `{}`: {}.\n", c.workload.name(), c.workload.said());
    println!(
        "- mean payload {:.0} bytes (the claim alone, without its id: {:.0}), mean envelope \
         {:.0} bytes ({:.1} MB of envelopes)",
        c.payload_bytes as f64 / n as f64,
        c.claim_bytes as f64 / n as f64,
        c.envelope_bytes as f64 / n as f64,
        c.envelope_bytes as f64 / 1e6
    );
    let mut mix = String::new();
    for k in Kind::ALL {
        let count = c.plan.specs.iter().filter(|s| s.kind == k).count();
        if count > 0 {
            mix.push_str(&format!(
                "{}{} {:.1}%",
                if mix.is_empty() { "" } else { "; " },
                k.label(),
                100.0 * count as f64 / n as f64
            ));
        }
    }
    println!("- mix: {mix}");
    let mut premises = [0usize; 4];
    let mut assertions = 0;
    for s in c.plan.specs.iter().filter(|s| s.kind.is_assertion()) {
        premises[s.premises.len().min(3)] += 1;
        assertions += 1;
    }
    println!(
        "- premises of an assertion: {}",
        (0..4)
            .map(|k| format!(
                "{k}: {:.0}%",
                100.0 * premises[k] as f64 / assertions.max(1) as f64
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "- `blast` root: claim 0, whose `dependsOn` closure holds {} claims\n",
        c.plan.closure
    );
}
/// Raw Ed25519 `verify_strict` over each envelope's PAE: the baseline ingest is measured
/// against. Returns envelopes per second.
fn verify_rate(envelopes: &[(Vec<u8>, Signature, VerifyingKey)], parallel: bool) -> f64 {
    let started = Instant::now();
    let ok = if parallel {
        envelopes
            .par_iter()
            .filter(|(m, s, k)| k.verify_strict(m, s).is_ok())
            .count()
    } else {
        envelopes
            .iter()
            .filter(|(m, s, k)| k.verify_strict(m, s).is_ok())
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
    run_measured(cmd, true)
}

/// Runs a command that must succeed, timed; with `peak`, under `/usr/bin/time` (where there is
/// one) to record its peak resident memory. The wrapper's own start (about a millisecond) is
/// inside the time, so commands timed against `--version` run without it and have their
/// memory taken by one more run (`median`). Why not `wait4` here: a child started from this
/// process, which holds the whole plan and every id, inherits this process's peak at `exec`.
fn run_measured(cmd: &mut Command, peak: bool) -> (Duration, Value) {
    let mut wrapped = peak.then(|| time_wrapped(cmd)).flatten();
    let started = Instant::now();
    let out = match wrapped.as_mut() {
        Some((w, _)) => w.output(),
        None => cmd.output(),
    }
    .expect("elench runs");
    let took = started.elapsed();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    if let Some((_, report)) = wrapped {
        let kib = std::fs::read_to_string(&report)
            .ok()
            .and_then(|t| t.lines().last().and_then(|l| l.trim().parse::<u64>().ok()));
        let _ = std::fs::remove_file(&report);
        if let Some(kib) = kib {
            note_peak(command_label(cmd), kib);
        }
    }
    (took, v)
}

/// `cmd` run under `/usr/bin/time -f %M -o REPORT`, and REPORT; none without `/usr/bin/time`.
fn time_wrapped(cmd: &Command) -> Option<(Command, PathBuf)> {
    let time = Path::new("/usr/bin/time");
    if !time.exists() {
        return None;
    }
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let report = std::env::temp_dir().join(format!(
        "elench-bench-peak-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let mut w = Command::new(time);
    w.args(["-f", "%M", "-o"])
        .arg(&report)
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => w.env(k, v),
            None => w.env_remove(k),
        };
    }
    if let Some(d) = cmd.get_current_dir() {
        w.current_dir(d);
    }
    // Every command measured here reads no input and is read only for its standard output.
    w.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    Some((w, report))
}

/// What a measured command is, for the peak-memory table: its subcommand, and for `add`
/// whether it read a bundle or one envelope and on how many cores.
fn command_label(cmd: &Command) -> String {
    let mut args = cmd.get_args().map(|a| a.to_string_lossy().into_owned());
    if cmd.get_program() == "taskset" {
        // taskset -c CPU ELENCH …
        args.nth(2);
    }
    let args: Vec<String> = args.collect();
    let mut rest = Vec::new();
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--store" | "--format" => i += 2,
            a => {
                rest.push(a.to_owned());
                i += 1;
            }
        }
    }
    let sub = rest.first().cloned().unwrap_or_default();
    if sub != "add" {
        return sub;
    }
    let one_core = cmd
        .get_envs()
        .any(|(k, v)| k == "RAYON_NUM_THREADS" && v.is_some_and(|v| v == "1"));
    match rest.get(1) {
        Some(f) if f.ends_with(".jsonl") && one_core => "add BUNDLE (one core)".into(),
        Some(f) if f.ends_with(".jsonl") => "add BUNDLE".into(),
        _ => "add ONE.dsse".into(),
    }
}

/// Peak resident memory of each kind of command run for the current size: label, runs, the
/// largest peak (KiB).
static PEAKS: std::sync::Mutex<Vec<(String, usize, u64)>> = std::sync::Mutex::new(Vec::new());

fn note_peak(label: String, kib: u64) {
    let mut peaks = PEAKS.lock().unwrap();
    match peaks.iter_mut().find(|(l, _, _)| *l == label) {
        Some(p) => {
            p.1 += 1;
            p.2 = p.2.max(kib);
        }
        None => peaks.push((label, 1, kib)),
    }
}

fn report_peaks() {
    let peaks = std::mem::take(&mut *PEAKS.lock().unwrap());
    if peaks.is_empty() {
        if !Path::new("/usr/bin/time").exists() {
            println!("\nPeak memory not measured: no /usr/bin/time on this machine.");
        }
        return;
    }
    println!(
        "\nPeak resident memory of each command (`/usr/bin/time`'s maximum resident set size, the largest of its runs):\n"
    );
    println!("| command | runs | peak resident memory |");
    println!("|---|---|---|");
    for (label, runs, kib) in peaks {
        println!(
            "| `{label}` | {runs} | {:.1} MB |",
            kib as f64 * 1024.0 / 1e6
        );
    }
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
    let mut times: Vec<Duration> = (0..runs)
        .map(|i| run_measured(&mut make(i), false).0)
        .collect();
    // Its peak memory, from one more run of the first (the timed runs go without the wrapper).
    run_measured(&mut make(0), true);
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

fn fresh_store(c: &Corpus, name: &str, keys: &Keys) -> PathBuf {
    let store = c.dir.join(name);
    let _ = std::fs::remove_dir_all(&store);
    run_ok(elench(&store).arg("init"));
    for (role, key_name, key) in keys.trusted(c.workload) {
        let pem = c.dir.join(format!("{role}.pub.pem"));
        std::fs::write(&pem, public_key_pem(&key.verifying_key()).unwrap()).unwrap();
        run_ok(
            elench(&store)
                .args(["keys", "add", "--role", role, "--name", key_name])
                .arg(&pem),
        );
    }
    store
}

/// Which measurements to run (`--only`); all by default.
struct Only(Option<Vec<String>>);

impl Only {
    fn wants(&self, what: &str) -> bool {
        self.0.as_ref().is_none_or(|o| o.iter().any(|x| x == what))
    }
}

fn bench(w: Workload, n: usize, only: &Only) {
    let keys = Keys::new();
    let c = generate(w, n, &keys);
    PEAKS.lock().unwrap().clear();
    println!("\n## `{}` workload, {n} claims\n", w.name());
    describe(&c);
    let mut lines = Vec::new();
    let both_cores_ingest = only.wants("ingest") || only.wants("ingest-both");
    let needs_verify = both_cores_ingest || only.wants("fsck");
    let by_keyid = keys.by_keyid();
    // Baseline: verify_strict over the same envelopes (a sample of up to 50,000), each against
    // the key that signed it.
    let sample: Vec<(Vec<u8>, Signature, VerifyingKey)> = if needs_verify {
        // Only the lines sampled: a million realistic envelopes are 2 GB.
        std::io::BufRead::lines(std::io::BufReader::new(
            std::fs::File::open(&c.bundle).unwrap(),
        ))
        .take(50_000)
        .map(|l| {
            let l = l.unwrap();
            let e = Envelope::parse(l.as_bytes()).unwrap();
            let sig = Signature::from_slice(&e.signatures[0].sig).unwrap();
            let key = by_keyid[e.signatures[0].keyid.as_deref().unwrap()];
            (pae(PAYLOAD_TYPE, &e.payload), sig, key)
        })
        .collect()
    } else {
        Vec::new()
    };
    // The baseline of one pair: a smaller sample, verified just before the measured run.
    let paired_sample = &sample[..sample.len().min(PAIRED_SAMPLE)];
    let baseline = |parallel: bool| move || verify_rate(paired_sample, parallel);
    if needs_verify {
        // The best of three runs each, for reference.
        let best = |parallel: bool| {
            (0..3)
                .map(|_| verify_rate(&sample, parallel))
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
            || one_core_add(&fresh_store(&c, "store-1core", &keys)),
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
    let reads_store = ["short", "blast", "bytes", "fsck"]
        .iter()
        .any(|m| only.wants(m));
    if both_cores_ingest || (reads_store && !store.join("index").exists()) {
        let add = || {
            let store = fresh_store(&c, "store", &keys);
            let (t, v) = run_ok(elench(&store).arg("add").arg(&c.bundle));
            assert_eq!(v["data"]["created"], json!(n));
            t
        };
        if both_cores_ingest {
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
        short_commands(&c, &store, &keys, n, &mut lines);
    }
    if only.wants("blast") {
        blast(&c, &store, &mut lines);
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
    report_peaks();
}

fn short_commands(c: &Corpus, store: &Path, keys: &Keys, n: usize, lines: &mut Vec<Line>) {
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
    // Any claim, not one probe: the slowest of the log's last 20 claims, whose premise
    // ancestries are the deepest (each the median of 5 processes).
    let last = &c.ids[n.saturating_sub(20)..n];
    for (name, args) in [("status ID", "status"), ("show ID", "show")] {
        let mut slowest = (Duration::ZERO, 0);
        for (k, id) in last.iter().enumerate() {
            let t = median(5, |_| {
                let mut cmd = elench(store);
                cmd.arg(args).arg(id);
                cmd
            });
            if t > slowest.0 {
                slowest = (t, k);
            }
        }
        let (_, v) = run_ok(elench(store).arg("status").arg(&last[slowest.1]));
        let claim = &v["data"]["claims"][0];
        let roots = claim["revoked_by"].as_array().map_or(0, Vec::len);
        let at = n - last.len() + slowest.1;
        let (whole, tainted) = ancestry(&c.plan, at);
        lines.push(Line {
            what: format!("`{name}`, the slowest of the log's last 20 claims"),
            value: format!(
                "{:.1?} (claim {at} of the log, {}, {roots} falsified roots; an ancestry of {} \
                 claims, {} of them falsified or below a falsified claim)",
                slowest.0,
                claim["status"].as_str().unwrap_or("?"),
                whole,
                tainted
            ),
            ratio: slowest.0.as_secs_f64() / version.as_secs_f64(),
            goal: Some(("<=", 2.0)),
        });
    }
    // Realistic single claims name a premise, one outside the closure `blast` measures (an
    // assertion without premises of its own) so that they leave that closure as it was.
    let outside: Vec<u32> = match c.workload {
        Workload::Realistic => (n / 3..n)
            .filter(|&i| {
                let s = &c.plan.specs[i];
                s.kind.is_assertion() && s.premises.is_empty()
            })
            .take(21)
            .map(|i| i as u32)
            .collect(),
        Workload::Annotation => Vec::new(),
    };
    let singles: Vec<PathBuf> = (0..21)
        .map(|k| {
            // An assertion of the workload's kind, not yet in the store.
            let spec = Spec {
                kind: if k % 3 == 0 {
                    Kind::Predicate
                } else {
                    Kind::Annotation
                },
                premises: outside.get(k).copied().into_iter().collect(),
                targets: Vec::new(),
            };
            let (claim, signer) = build(c.workload, 10_000_000 + k, &spec, &c.ids);
            let (_, env) = seal(&claim, keys.of(signer)).unwrap();
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

/// How many claims the premise ancestry of claim `at` holds (itself excluded), and how many
/// of those have in their own ancestry, or are, a claim some falsification of the log targets:
/// the part of the ancestry a revocation can come through.
fn ancestry(plan: &Plan, at: usize) -> (usize, usize) {
    let mut seen = vec![false; at + 1];
    let mut stack = vec![at as u32];
    while let Some(x) = stack.pop() {
        for &p in &plan.specs[x as usize].premises {
            if !seen[p as usize] {
                seen[p as usize] = true;
                stack.push(p);
            }
        }
    }
    let mut falsified = vec![false; at + 1];
    for s in plan.specs.iter().filter(|s| s.kind == Kind::Falsification) {
        for &t in &s.targets {
            if let Some(f) = falsified.get_mut(t as usize) {
                *f = true;
            }
        }
    }
    // Premises come before their claims, so one pass in log order decides each.
    let mut tainted = falsified;
    for x in 0..at {
        if seen[x] && !tainted[x] {
            tainted[x] = plan.specs[x].premises.iter().any(|&p| tainted[p as usize]);
        }
    }
    let count = seen.iter().filter(|&&s| s).count();
    let reachable = (0..at).filter(|&x| seen[x] && tainted[x]).count();
    (count, reachable)
}

/// Runs of `blast` and of its baseline; the median of each is reported.
const BLAST_RUNS: usize = 5;

fn blast(c: &Corpus, store: &Path, lines: &mut Vec<Line>) {
    // Blast of the 100k closure against an in-memory BFS of the same edges, producing the
    // same layered list of ids.
    let closure = c.plan.closure;
    let mut adjacency: HashMap<&str, Vec<&str>> = HashMap::new();
    for (i, s) in c.plan.specs.iter().enumerate() {
        for &p in &s.premises {
            adjacency
                .entry(c.ids[p as usize].as_str())
                .or_default()
                .push(c.ids[i].as_str());
        }
    }
    let mut bfs_times = Vec::new();
    let mut bfs_json = Vec::new();
    let mut bfs_layers = 0;
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
        bfs_layers = layers.len();
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
            "in-memory BFS of the {closure}-claim closure, to JSON (baseline, {} bytes, {bfs_layers} layers)",
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
    let workloads: Vec<Workload> = match args.iter().position(|a| a == "--workload") {
        None => vec![Workload::Realistic],
        Some(i) => args
            .get(i + 1)
            .map(String::as_str)
            .unwrap_or("")
            .split(',')
            .map(|w| {
                Workload::parse(w).unwrap_or_else(|| {
                    eprintln!("--workload takes realistic, annotation or both (comma-separated), not {w:?}");
                    std::process::exit(2)
                })
            })
            .collect(),
    };
    println!(
        "# elench store benchmark ({} cores)",
        rayon::current_num_threads()
    );
    for &w in &workloads {
        for &n in &sizes {
            bench(w, n, &only);
        }
    }
}
