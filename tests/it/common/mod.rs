//! Helpers shared by the CLI integration tests.
//!
//! Each test binary that says `mod common;` gets its own copy, and most use only a part of it,
//! hence the `dead_code` allowance.
//!
//! - [`elench`] runs the real binary with stdout piped, so stdout is exactly one JSON object
//!   (docs/output.md), and returns `(exit code, parsed JSON)`.
//! - [`make_key`] / [`make_keys`] create keys through `elench keys generate --pub-out`.
//! - [`ClaimBuilder`] builds claim JSON (assertions and records) as `serde_json::Value`.
//! - [`sign_cli`] signs a claim through `elench sign`; [`sign_claim_raw`] and
//!   [`sign_payload_raw`] sign with the library, for envelopes `elench sign` would refuse.
//! - [`trust_args`] turns keys into `--trust ROLE:NAME:PUB.pem` arguments.
#![allow(dead_code)]

use assert_cmd::Command;
use ed25519_dalek::SigningKey;
use elench::envelope::{sign_envelope, statement::statement_bytes, PAYLOAD_TYPE};
use elench::keys::read_signing_key_pem;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A tree OID usable as `anchor.tree` (64 lowercase hex).
pub const TREE: &str = "4f2d6c1a9b3e5d7f0a8c6e4b2d0f9e7c5a3b1d8f6e4c2a0b9d7f5e3c1a2b4d6e";

/// A well-formed claim id, for `target` / `dependsOn` members.
pub fn some_id(n: u8) -> String {
    format!("cl_{}", hex::encode([n; 32]))
}

/// The `elench` binary, with stdout and stderr captured (so stdout is not a terminal) and
/// without environment that would change its behaviour.
pub fn command(dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("elench").expect("the elench binary is built");
    cmd.current_dir(dir)
        .env_remove("ELENCH_STORE")
        .env_remove("CI")
        .env_remove("NO_COLOR");
    cmd
}

/// What one invocation produced.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs elench with `args` in `dir` and returns its exit code, stdout and stderr.
pub fn run_raw<S: AsRef<std::ffi::OsStr>>(dir: &Path, args: &[S]) -> Run {
    let out = command(dir).args(args).output().expect("elench runs");
    Run {
        code: out.status.code().expect("elench exited with a code"),
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs elench with `args` in `dir`; stdout must be exactly one JSON object (the output
/// envelope). Returns the exit code and that object. Also checks the envelope's invariants:
/// `ok` is true exactly when the exit code is 0 and `meta.exit_code` is the real exit code.
pub fn elench<S: AsRef<std::ffi::OsStr>>(dir: &Path, args: &[S]) -> (i32, Value) {
    let run = run_raw(dir, args);
    let json = parse_one_object(&run);
    assert_eq!(
        json["ok"],
        json!(run.code == 0),
        "ok must be true exactly when the exit code is 0: {json}"
    );
    assert_eq!(
        json["meta"]["exit_code"],
        json!(run.code),
        "meta.exit_code must equal the real exit code: {json}"
    );
    (run.code, json)
}

fn parse_one_object(run: &Run) -> Value {
    let text = run.stdout.trim_end_matches('\n');
    assert!(
        !text.is_empty() && !text.contains('\n'),
        "stdout must be exactly one JSON line; got {:?} (stderr {:?})",
        run.stdout,
        run.stderr
    );
    assert!(
        !text.contains('\u{1b}'),
        "no ANSI escapes in JSON mode: {text:?}"
    );
    let value: Value = serde_json::from_str(text).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {:?} (stderr {:?})",
            run.stdout, run.stderr
        )
    });
    assert!(value.is_object(), "stdout must be a JSON object: {value}");
    value
}

/// The lines of `--format jsonl` output, each read as one JSON value.
pub fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Asserts that a command failed as a rejection with `code`: exit 2, `ok:false`,
/// `meta.exit_code == 2`, `error.code == code`. Returns the `error` object.
pub fn assert_rejected(result: &(i32, Value), code: &str) -> Value {
    let (exit, json) = result;
    assert_eq!(*exit, 2, "expected exit 2 for {code}: {json}");
    assert_eq!(json["ok"], json!(false), "{json}");
    assert_eq!(json["meta"]["exit_code"], json!(2), "{json}");
    assert_eq!(json["error"]["code"], json!(code), "{json}");
    assert!(
        json["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "an error has a message: {json}"
    );
    json["error"].clone()
}

/// A key made by `elench keys generate`.
#[derive(Debug, Clone)]
pub struct KeyPair {
    pub role: String,
    pub name: String,
    /// Private key, PEM PKCS#8.
    pub private: PathBuf,
    /// Public key, PEM SubjectPublicKeyInfo.
    pub public: PathBuf,
    pub keyid: String,
}

impl KeyPair {
    /// `ROLE:NAME:PUB.pem`, the value of a `--trust` argument.
    pub fn trust_spec(&self) -> String {
        format!("{}:{}:{}", self.role, self.name, self.public.display())
    }

    /// The private key, read with the library.
    pub fn signing_key(&self) -> SigningKey {
        let pem = std::fs::read_to_string(&self.private).expect("private key file");
        read_signing_key_pem(&pem).expect("elench reads its own private keys")
    }
}

/// Makes a key with `role` and `name` in `dir` through `elench keys generate --pub-out`
/// (files `NAME.key` and `NAME.pub`).
pub fn make_key(dir: &Path, role: &str, name: &str) -> KeyPair {
    let private = dir.join(format!("{name}.key"));
    let public = dir.join(format!("{name}.pub"));
    let (code, out) = elench(
        dir,
        &[
            "keys",
            "generate",
            "--role",
            role,
            "--name",
            name,
            "--out",
            private.to_str().unwrap(),
            "--pub-out",
            public.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "keys generate failed: {out}");
    let keyid = out["data"]["keyid"]
        .as_str()
        .expect("keys generate reports data.keyid")
        .to_owned();
    KeyPair {
        role: role.to_owned(),
        name: name.to_owned(),
        private,
        public,
        keyid,
    }
}

/// One key of each role, made in the same directory.
#[derive(Debug, Clone)]
pub struct Keys {
    pub harness: KeyPair,
    pub agent: KeyPair,
    pub human: KeyPair,
}

impl Keys {
    /// `--trust` arguments for all three keys.
    pub fn trust_all(&self) -> Vec<String> {
        trust_args(&[&self.harness, &self.agent, &self.human])
    }
}

/// Makes a harness key `ci`, an agent key `bot` and a human key `alice` in `dir`.
pub fn make_keys(dir: &Path) -> Keys {
    Keys {
        harness: make_key(dir, "harness", "ci"),
        agent: make_key(dir, "agent", "bot"),
        human: make_key(dir, "human", "alice"),
    }
}

/// `["--trust", "ROLE:NAME:PUB.pem", …]` for each key.
pub fn trust_args(keys: &[&KeyPair]) -> Vec<String> {
    keys.iter()
        .flat_map(|k| ["--trust".to_owned(), k.trust_spec()])
        .collect()
}

/// Builds claim JSON. Defaults make a valid claim: anchor [`TREE`] with strategy `multi`,
/// timestamp 1700000000, producer `model-x`, an annotation assertion.
#[derive(Debug, Clone)]
pub struct ClaimBuilder {
    value: Value,
}

impl ClaimBuilder {
    /// An `assertion` claim, agent-asserted, whose assertion is an annotation with `text`.
    pub fn assertion(text: &str) -> ClaimBuilder {
        ClaimBuilder {
            value: json!({
                "kind": "assertion",
                "assertion": {"form": "annotation", "text": text},
                "origin": {"kind": "agent-asserted", "producer": {"id": "model-x"}},
                "anchor": {"tree": TREE, "strategy": "multi"},
                "timestamp": 1_700_000_000,
            }),
        }
    }

    /// A record (`falsification`, `verification`, `supersession`, `residue-acceptance`)
    /// acting on `targets`. Its origin is the one the authority table asks of that kind:
    /// harness-observed for a verification, human-asserted for a residue-acceptance,
    /// agent-asserted otherwise (change it with [`ClaimBuilder::origin`]).
    pub fn record(kind: &str, targets: &[&str]) -> ClaimBuilder {
        let origin = match kind {
            "verification" => "harness-observed",
            "residue-acceptance" => "human-asserted",
            _ => "agent-asserted",
        };
        let mut b = ClaimBuilder::assertion(&format!("{kind} record"));
        b.value["kind"] = json!(kind);
        b.value["target"] = json!(targets);
        b.value["origin"]["kind"] = json!(origin);
        b
    }

    pub fn origin(mut self, kind: &str) -> Self {
        self.value["origin"]["kind"] = json!(kind);
        self
    }

    pub fn producer(mut self, id: &str) -> Self {
        self.value["origin"]["producer"]["id"] = json!(id);
        self
    }

    pub fn text(mut self, text: &str) -> Self {
        self.value["assertion"]["text"] = json!(text);
        self
    }

    pub fn tree(mut self, tree: &str) -> Self {
        self.value["anchor"]["tree"] = json!(tree);
        self
    }

    pub fn timestamp(mut self, t: i64) -> Self {
        self.value["timestamp"] = json!(t);
        self
    }

    /// Makes the assertion a predicate with an expression in `language`.
    pub fn predicate(mut self, language: &str, source: &str) -> Self {
        self.value["assertion"]["form"] = json!("predicate");
        self.value["assertion"]["expression"] = json!({"language": language, "source": source});
        self
    }

    pub fn depends_on(mut self, ids: &[&str]) -> Self {
        self.value["dependsOn"] = json!(ids);
        self
    }

    /// Sets a top-level member (any name, any value, valid or not).
    pub fn set(mut self, name: &str, value: Value) -> Self {
        self.object().insert(name.to_owned(), value);
        self
    }

    /// Removes a top-level member.
    pub fn remove(mut self, name: &str) -> Self {
        self.object().remove(name);
        self
    }

    /// The claim, without an `id`.
    pub fn build(self) -> Value {
        self.value
    }

    /// The claim with its correct `id` (computed, not validated: the claim may still be
    /// invalid in other ways).
    pub fn build_with_id(self) -> Value {
        with_computed_id(&self.value)
    }

    fn object(&mut self) -> &mut Map<String, Value> {
        self.value.as_object_mut().expect("a claim is an object")
    }
}

/// `claim` with its `id` member set to the id its content gives.
pub fn with_computed_id(claim: &Value) -> Value {
    let mut obj = claim.as_object().expect("a claim is an object").clone();
    let id = elench::claim::compute_id(&obj).expect("the claim canonicalizes");
    obj.insert("id".into(), json!(id));
    Value::Object(obj)
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A fresh file name in a test's directory.
pub fn fresh_name(stem: &str, ext: &str) -> String {
    format!("{stem}-{}.{ext}", COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// Signs `claim` through `elench sign --key … --role …`, writing the envelope in `dir`.
/// Asserts success and returns the envelope's path and the claim id `sign` reported.
pub fn sign_cli(dir: &Path, claim: &Value, key: &KeyPair) -> (PathBuf, String) {
    let claim_path = dir.join(fresh_name("claim", "json"));
    std::fs::write(&claim_path, serde_json::to_vec_pretty(claim).unwrap()).unwrap();
    sign_file_cli(dir, &claim_path, key)
}

/// Signs the claim file at `claim_path` through `elench sign`; as [`sign_cli`].
pub fn sign_file_cli(dir: &Path, claim_path: &Path, key: &KeyPair) -> (PathBuf, String) {
    let out = dir.join(fresh_name("envelope", "dsse"));
    let (code, json) = elench(
        dir,
        &[
            "sign",
            claim_path.to_str().unwrap(),
            "--key",
            key.private.to_str().unwrap(),
            "--role",
            &key.role,
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "sign failed: {json}");
    assert!(out.exists(), "sign wrote no envelope");
    let id = json["data"]["id"]
        .as_str()
        .expect("sign reports data.id")
        .to_owned();
    (out, id)
}

/// Signs `payload` as a DSSE envelope with the library (no checks at all) and writes it to
/// a fresh file in `dir`.
pub fn sign_payload_raw(dir: &Path, payload_type: &str, payload: &[u8], key: &KeyPair) -> PathBuf {
    let text = sign_envelope(payload_type, payload, &key.signing_key(), &key.keyid);
    let path = dir.join(fresh_name("raw", "dsse"));
    std::fs::write(&path, text).unwrap();
    path
}

/// Wraps `claim` exactly as given (no id is added or checked) in a Statement whose subject
/// digest is `subject_tree`, signs it with the library and writes the envelope in `dir`.
pub fn sign_claim_raw(dir: &Path, claim: &Value, subject_tree: &str, key: &KeyPair) -> PathBuf {
    let obj = claim.as_object().expect("a claim is an object");
    let payload = statement_bytes(obj, subject_tree);
    sign_payload_raw(dir, PAYLOAD_TYPE, &payload, key)
}

/// Runs `elench verify ENVELOPE` trusting `keys`.
pub fn verify(dir: &Path, envelope: &Path, keys: &[&KeyPair]) -> (i32, Value) {
    let mut args = vec!["verify".to_owned(), envelope.display().to_string()];
    args.extend(trust_args(keys));
    elench(dir, &args)
}

// ---------------------------------------------------------------------------------------
// Stores (added for the claim-log scenario and blast tests).
// ---------------------------------------------------------------------------------------

/// A store at `DIR/NAME` (named with `--store`, never found by walking up) in a temporary
/// directory, trusting one key of each role (those of [`make_keys`], made in the same
/// directory). Dropping it removes the directory.
pub struct KeyedStore {
    pub tmp: tempfile::TempDir,
    pub store: PathBuf,
    pub keys: Keys,
}

impl KeyedStore {
    /// A fresh store `store` trusting a fresh harness, agent and human key.
    pub fn new() -> KeyedStore {
        let tmp = tempfile::tempdir().expect("a temporary directory");
        let keys = make_keys(tmp.path());
        let store = tmp.path().join("store");
        init_store_trusting(
            tmp.path(),
            &store,
            &[&keys.harness, &keys.agent, &keys.human],
        );
        KeyedStore { tmp, store, keys }
    }

    /// The temporary directory (the working directory of every command).
    pub fn dir(&self) -> &Path {
        self.tmp.path()
    }

    /// `elench --store STORE ARGS…` in [`KeyedStore::dir`].
    pub fn run<S: AsRef<std::ffi::OsStr>>(&self, args: &[S]) -> (i32, Value) {
        elench(self.dir(), &with_store(&self.store, args))
    }

    /// The store's `export` bundle, byte for byte.
    pub fn export(&self) -> Vec<u8> {
        export_bundle(self.dir(), &self.store)
    }
}

/// `["--store", STORE, ARGS…]`.
pub fn with_store<S: AsRef<std::ffi::OsStr>>(store: &Path, args: &[S]) -> Vec<std::ffi::OsString> {
    let mut out = vec!["--store".into(), store.as_os_str().to_owned()];
    out.extend(args.iter().map(|a| a.as_ref().to_owned()));
    out
}

/// `elench --store STORE init`, then `keys add` for each key; asserts success.
pub fn init_store_trusting(dir: &Path, store: &Path, keys: &[&KeyPair]) {
    let (code, json) = elench(dir, &with_store(store, &["init"]));
    assert_eq!(code, 0, "init failed: {json}");
    for k in keys {
        let public = k.public.display().to_string();
        let (code, json) = elench(
            dir,
            &with_store(
                store,
                &["keys", "add", "--role", &k.role, "--name", &k.name, &public],
            ),
        );
        assert_eq!(code, 0, "keys add failed: {json}");
        assert_eq!(json["data"]["keyid"], json!(k.keyid), "{json}");
    }
}

/// `elench --store STORE export` to stdout: the bundle's bytes (asserts exit 0). Used as a
/// snapshot of the whole store: bad input must leave it byte-identical.
pub fn export_bundle(dir: &Path, store: &Path) -> Vec<u8> {
    let out = command(dir)
        .args(with_store(store, &["export", "-o", "-"]))
        .output()
        .expect("elench runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "export failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// As [`elench`], with `stdin` piped to the process.
pub fn elench_with_stdin<S: AsRef<std::ffi::OsStr>>(
    dir: &Path,
    args: &[S],
    stdin: &[u8],
) -> (i32, Value) {
    let out = command(dir)
        .args(args)
        .write_stdin(stdin.to_vec())
        .output()
        .expect("elench runs");
    let run = Run {
        code: out.status.code().expect("elench exited with a code"),
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    let json = parse_one_object(&run);
    assert_eq!(json["ok"], json!(run.code == 0), "{json}");
    assert_eq!(json["meta"]["exit_code"], json!(run.code), "{json}");
    (run.code, json)
}

/// The envelope text (one line) of `claim` taken exactly as given, wrapped in a Statement
/// whose subject is the claim's `anchor.tree` and signed with the library by `key`.
pub fn envelope_text(claim: &Value, key: &KeyPair) -> String {
    let obj = claim.as_object().expect("a claim is an object");
    let tree = claim["anchor"]["tree"].as_str().unwrap_or(TREE);
    let payload = statement_bytes(obj, tree);
    sign_envelope(PAYLOAD_TYPE, &payload, &key.signing_key(), &key.keyid)
}

/// The `id` member of a claim built with [`ClaimBuilder::build_with_id`].
pub fn claim_id(claim: &Value) -> String {
    claim["id"]
        .as_str()
        .expect("the claim has an id")
        .to_owned()
}

/// What a child process ended with: its exit code (None if a signal ended it) and both of
/// its output streams.
pub struct Finished {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Waits for `child`, whose stdout and stderr are piped, reading both beside it so neither
/// pipe can fill and stall it; kills it and panics (naming `what`) if it runs past `limit`.
pub fn finish_within(
    mut child: std::process::Child,
    limit: std::time::Duration,
    what: &str,
) -> Finished {
    use std::io::Read;
    let reader = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = reader(Box::new(child.stdout.take().expect("stdout is piped")));
    let err = reader(Box::new(child.stderr.take().expect("stderr is piped")));
    let started = std::time::Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not end within {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Finished {
        code,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}
