//! Signed envelopes made with the library, for the fold property tests and the durability
//! tests. Included from each test file with `mod support_envelopes;`, so each test binary gets
//! its own copy and most use only part of it, hence the `dead_code` allowance.
//!
//! - [`Keys`]: three deterministic keys (harness, agent, human), as a trust set, as trusted
//!   keys for a library store, and as PEM files for `elench keys add`.
//! - [`Spec`] builds a claim (assertion or record); [`Keys::sign`] fills in its id, wraps it in
//!   a Statement and signs it with the key whose role may say it.
//! - [`Rng`]: a tiny seeded generator (SplitMix64), so tests need no extra crates.
//! - [`lib_store`] / [`cli_store`]: a store with the three keys trusted, through the library
//!   or through the binary.
#![allow(dead_code)]

use assert_cmd::Command;
use ed25519_dalek::SigningKey;
use elench::envelope::{sign_envelope, statement::statement_bytes, PAYLOAD_TYPE};
use elench::keys::{keyid, public_key_pem, Role, TrustSet, TrustedKey};
use elench::store::Store;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `anchor.tree` of every claim made here (64 lowercase hex).
pub const TREE: &str = "6b1e2c3d4f5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";

/// A well-formed claim id that no claim made here has: a premise the store never sees.
pub fn dangling_id(n: u64) -> String {
    format!("cl_{:064x}", 0xdead_0000_0000u64 + n)
}

/// A signed claim: its id, its envelope text (one line) and its kind.
#[derive(Debug, Clone)]
pub struct Signed {
    pub id: String,
    pub envelope: String,
    pub kind: &'static str,
    pub target: Vec<String>,
    pub depends_on: Vec<String>,
    /// The claim as given to [`Keys::sign`] (without its id), to sign it again.
    pub claim: Value,
    /// The key that signed this envelope.
    pub signer: Signer,
}

/// Who signs: the key's role decides what it may say (docs/claims.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signer {
    Harness,
    Agent,
    Human,
    /// A key no store trusts.
    Stranger,
}

/// The four keys, made from fixed bytes so runs are reproducible.
pub struct Keys {
    pub harness: SigningKey,
    pub agent: SigningKey,
    pub human: SigningKey,
    pub stranger: SigningKey,
}

impl Default for Keys {
    fn default() -> Self {
        Keys::new()
    }
}

impl Keys {
    pub fn new() -> Keys {
        Keys {
            harness: SigningKey::from_bytes(&[0x11; 32]),
            agent: SigningKey::from_bytes(&[0x22; 32]),
            human: SigningKey::from_bytes(&[0x33; 32]),
            stranger: SigningKey::from_bytes(&[0x44; 32]),
        }
    }

    pub fn key(&self, s: Signer) -> &SigningKey {
        match s {
            Signer::Harness => &self.harness,
            Signer::Agent => &self.agent,
            Signer::Human => &self.human,
            Signer::Stranger => &self.stranger,
        }
    }

    /// The three trusted keys (the stranger is not among them).
    pub fn trusted(&self) -> Vec<TrustedKey> {
        [
            (Role::Harness, "harness", &self.harness),
            (Role::Agent, "agent", &self.agent),
            (Role::Human, "human", &self.human),
        ]
        .into_iter()
        .map(|(role, name, sk)| TrustedKey::new(role, name, sk.verifying_key()).unwrap())
        .collect()
    }

    pub fn trust_set(&self) -> TrustSet {
        TrustSet::new(self.trusted())
    }

    /// Writes `harness.pub.pem`, `agent.pub.pem`, `human.pub.pem` into `dir`.
    pub fn write_public_pems(&self, dir: &Path) -> Vec<(&'static str, PathBuf)> {
        std::fs::create_dir_all(dir).unwrap();
        [
            ("harness", &self.harness),
            ("agent", &self.agent),
            ("human", &self.human),
        ]
        .into_iter()
        .map(|(role, sk)| {
            let path = dir.join(format!("{role}.pub.pem"));
            std::fs::write(&path, public_key_pem(&sk.verifying_key()).unwrap()).unwrap();
            (role, path)
        })
        .collect()
    }

    /// Fills in the claim's id, wraps it in a Statement and signs it with `signer`.
    pub fn sign(&self, claim: &Value, signer: Signer) -> Signed {
        let (c, map) = elench::claim::with_id(claim)
            .unwrap_or_else(|e| panic!("test claim is invalid: {e:?}\n{claim:#}"));
        let payload = statement_bytes(&map, TREE);
        let sk = self.key(signer);
        let envelope = sign_envelope(PAYLOAD_TYPE, &payload, sk, &keyid(&sk.verifying_key()));
        Signed {
            id: c.id,
            envelope,
            kind: c.kind.as_str(),
            target: c.target,
            depends_on: c.depends_on,
            claim: claim.clone(),
            signer,
        }
    }

    /// Signs a predicate map exactly as given (no id filled in, no validation): for envelopes
    /// ingest must reject.
    pub fn sign_raw_predicate(&self, predicate: &Map<String, Value>, signer: Signer) -> String {
        let payload = statement_bytes(predicate, TREE);
        let sk = self.key(signer);
        sign_envelope(PAYLOAD_TYPE, &payload, sk, &keyid(&sk.verifying_key()))
    }
}

/// A claim to make. `kind` is the claim kind; `origin` its origin kind.
#[derive(Debug, Clone)]
pub struct Spec {
    pub kind: &'static str,
    pub origin: &'static str,
    pub text: String,
    pub target: Vec<String>,
    pub depends_on: Vec<String>,
}

impl Spec {
    pub fn assertion(text: impl Into<String>, depends_on: &[String]) -> Spec {
        Spec {
            kind: "assertion",
            origin: "agent-asserted",
            text: text.into(),
            target: Vec::new(),
            depends_on: depends_on.to_vec(),
        }
    }

    pub fn record(
        kind: &'static str,
        origin: &'static str,
        text: impl Into<String>,
        target: &[String],
        depends_on: &[String],
    ) -> Spec {
        Spec {
            kind,
            origin,
            text: text.into(),
            target: target.to_vec(),
            depends_on: depends_on.to_vec(),
        }
    }

    /// The claim JSON, without its id.
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "kind": self.kind,
            "assertion": {"form": "annotation", "text": self.text},
            "origin": {"kind": self.origin, "producer": {"id": format!("producer-{}", self.origin)}},
            "anchor": {"tree": TREE, "strategy": "multi"},
            "timestamp": 1_700_000_000,
        });
        if !self.depends_on.is_empty() {
            v["dependsOn"] = json!(self.depends_on);
        }
        if self.kind != "assertion" {
            v["target"] = json!(self.target);
        }
        v
    }

    /// The key that may sign this claim (harness for harness-observed, and so on).
    pub fn natural_signer(&self) -> Signer {
        match self.origin {
            "harness-observed" => Signer::Harness,
            "human-asserted" => Signer::Human,
            _ => Signer::Agent,
        }
    }

    pub fn sign(&self, keys: &Keys) -> Signed {
        keys.sign(&self.to_json(), self.natural_signer())
    }
}

/// An assertion signed by the agent.
pub fn assertion(keys: &Keys, text: &str, depends_on: &[&str]) -> Signed {
    let deps: Vec<String> = depends_on.iter().map(|s| s.to_string()).collect();
    Spec::assertion(text, &deps).sign(keys)
}

/// A record of `kind` on `target`, signed by the key its kind needs (verification: harness;
/// residue-acceptance: human; falsification and supersession: agent).
pub fn record(
    keys: &Keys,
    kind: &'static str,
    text: &str,
    target: &[&str],
    deps: &[&str],
) -> Signed {
    let origin = match kind {
        "verification" => "harness-observed",
        "residue-acceptance" => "human-asserted",
        _ => "agent-asserted",
    };
    let t: Vec<String> = target.iter().map(|s| s.to_string()).collect();
    let d: Vec<String> = deps.iter().map(|s| s.to_string()).collect();
    Spec::record(kind, origin, text, &t, &d).sign(keys)
}

/// A library store at `dir` with the three keys trusted.
pub fn lib_store(dir: &Path, keys: &Keys) -> Store {
    let (store, _) = Store::init(dir, Duration::from_secs(30)).expect("store opens");
    for k in keys.trusted() {
        store.add_key(&k).expect("key added");
    }
    store
}

/// Verifies and adds envelopes to a library store, in the given order.
pub fn lib_add_all<'a>(store: &Store, envelopes: impl IntoIterator<Item = &'a Signed>) {
    let trust = store.trust_set().unwrap();
    for s in envelopes {
        let accepted = elench::ingest::verify_envelope(s.envelope.as_bytes(), &trust)
            .unwrap_or_else(|e| panic!("envelope {} rejected: {e:?}", s.id));
        store.add(&accepted, s.envelope.as_bytes()).unwrap();
    }
}

/// The `elench` binary with a clean environment (stdout piped, so its output is JSON).
pub fn elench() -> Command {
    let mut cmd = Command::cargo_bin("elench").expect("the elench binary is built");
    cmd.env_remove("ELENCH_STORE")
        .env_remove("CI")
        .env_remove("NO_COLOR");
    cmd
}

/// The path of the built `elench` binary, for `std::process::Command`.
pub fn elench_path() -> PathBuf {
    assert_cmd::cargo::cargo_bin("elench")
}

/// What one invocation produced: exit code and the stdout JSON object.
#[derive(Debug)]
pub struct Out {
    pub code: i32,
    pub json: Value,
    pub stderr: String,
}

/// Runs `elench --store STORE ARGS…` and parses its stdout as one JSON object.
pub fn run(store: &Path, args: &[&str]) -> Out {
    run_with(store, args, &[])
}

/// [`run`] with these environment variables set (e.g. `ELENCH_VERIFY_BATCH`).
pub fn run_with(store: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let out = elench()
        .arg("--store")
        .arg(store)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("elench runs");
    let code = out.status.code().expect("elench exited with a code");
    let text = String::from_utf8(out.stdout).expect("stdout is UTF-8");
    let json: Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "stdout of elench {args:?} is not one JSON object ({e}):\n{text}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(
        json["meta"]["exit_code"].as_i64(),
        Some(code as i64),
        "meta.exit_code must equal the exit code: {json}"
    );
    Out {
        code,
        json,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `elench init` and `keys add` of the three keys, through the binary.
pub fn cli_store(store: &Path, keys: &Keys, pem_dir: &Path) {
    let out = run(store, &["init"]);
    assert_eq!(out.code, 0, "init: {}", out.json);
    for (role, pem) in keys.write_public_pems(pem_dir) {
        let out = run(
            store,
            &[
                "keys",
                "add",
                "--role",
                role,
                "--name",
                role,
                pem.to_str().unwrap(),
            ],
        );
        assert_eq!(out.code, 0, "keys add {role}: {}", out.json);
    }
}

/// Writes envelopes as a bundle, one per line.
pub fn write_bundle<'a>(path: &Path, envelopes: impl IntoIterator<Item = &'a Signed>) {
    let mut text = String::new();
    for s in envelopes {
        text.push_str(&s.envelope);
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
}

/// `elench export -o FILE` and the file's bytes.
pub fn export(store: &Path, file: &Path) -> Vec<u8> {
    let out = run(store, &["export", "-o", file.to_str().unwrap()]);
    assert_eq!(out.code, 0, "export: {}", out.json);
    std::fs::read(file).unwrap()
}

/// A small seeded generator (SplitMix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..hi` (hi exclusive, hi > lo).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }
}

/// `n` valid envelopes in creation order: assertions with premises among earlier claims (and
/// now and then one the store never sees), interleaved with records on earlier claims.
pub fn graph(keys: &Keys, n: usize, seed: u64, tag: &str) -> Vec<Signed> {
    let mut rng = Rng::new(seed);
    let mut out: Vec<Signed> = Vec::with_capacity(n);
    for i in 0..n {
        let earlier = |rng: &mut Rng, out: &Vec<Signed>| out[rng.below(out.len())].id.clone();
        let s = if i < 3 || rng.chance(75) {
            let mut deps = Vec::new();
            if !out.is_empty() {
                for _ in 0..rng.below(3) {
                    deps.push(earlier(&mut rng, &out));
                }
            }
            if rng.chance(5) {
                deps.push(dangling_id(i as u64));
            }
            deps.sort();
            deps.dedup();
            Spec::assertion(format!("{tag} assertion {i}"), &deps).sign(keys)
        } else {
            let t = earlier(&mut rng, &out);
            let kind = match rng.below(4) {
                0 => "verification",
                1 => "falsification",
                2 => "supersession",
                _ => "residue-acceptance",
            };
            let deps = if rng.chance(30) {
                vec![earlier(&mut rng, &out)]
            } else {
                Vec::new()
            };
            let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
            record(keys, kind, &format!("{tag} record {i}"), &[&t], &deps)
        };
        out.push(s);
    }
    out
}

/// The kind of a random record in the property tests, weighted as they were written:
/// falsifications most, then verifications, supersessions and acceptances.
pub fn record_kind() -> impl proptest::strategy::Strategy<Value = elench::claim::Kind> {
    use elench::claim::Kind;
    use proptest::prelude::*;
    prop_oneof![
        3 => Just(Kind::Verification),
        4 => Just(Kind::Falsification),
        2 => Just(Kind::Supersession),
        2 => Just(Kind::ResidueAcceptance),
    ]
}

/// The ids `indices` pick from `from`, sorted, each once.
pub fn pick(indices: &[proptest::sample::Index], from: &[Signed]) -> Vec<String> {
    let mut out: Vec<String> = indices
        .iter()
        .map(|i| from[i.index(from.len())].id.clone())
        .collect();
    out.sort();
    out.dedup();
    out
}
