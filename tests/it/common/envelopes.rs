//! Signed envelopes: in memory with the library ([`Keys::sign`], [`envelope_text`]) and,
//! where a test is about the CLI's signing, through `elench sign` ([`sign_cli`]).

use super::claims::{ClaimBuilder, TREE};
use super::cli::elench;
use super::fresh_name;
use super::keys::{trust_args, KeyPair, Keys, Signer};
use elench::envelope::{sign_envelope, statement::statement_bytes, PAYLOAD_TYPE};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// A signed claim: its id, its envelope text (one line) and what it says.
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

impl Keys {
    /// Fills in the claim's id (the claim must be valid), wraps it in a Statement and signs
    /// it with `signer`.
    pub fn sign(&self, claim: &Value, signer: Signer) -> Signed {
        let (c, map) = elench::claim::with_id(claim)
            .unwrap_or_else(|e| panic!("test claim is invalid: {e:?}\n{claim:#}"));
        let envelope = statement_envelope(&map, self.key(signer));
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
}

impl ClaimBuilder {
    /// The key whose role may say this claim: harness for harness-observed, human for
    /// human-asserted, agent otherwise.
    pub fn natural_signer(&self) -> Signer {
        match self.origin_kind() {
            "harness-observed" => Signer::Harness,
            "human-asserted" => Signer::Human,
            _ => Signer::Agent,
        }
    }

    /// The claim signed in memory by [`ClaimBuilder::natural_signer`].
    pub fn sign(&self, keys: &Keys) -> Signed {
        keys.sign(self.json(), self.natural_signer())
    }
}

/// An assertion with `text` and premises `depends_on`, signed by the agent.
pub fn assertion(keys: &Keys, text: &str, depends_on: &[&str]) -> Signed {
    ClaimBuilder::assertion(text)
        .depends_on(depends_on)
        .sign(keys)
}

/// A record of `kind` on `target` with `text` and premises `deps`, signed by the key its
/// kind needs (verification: harness; residue-acceptance: human; falsification and
/// supersession: agent).
pub fn record(keys: &Keys, kind: &str, text: &str, target: &[&str], deps: &[&str]) -> Signed {
    ClaimBuilder::record(kind, target)
        .text(text)
        .depends_on(deps)
        .sign(keys)
}

/// `predicate` exactly as given (no id filled in, nothing checked) in a Statement whose
/// subject is its `anchor.tree` (or [`TREE`] if it has none), signed by `key`.
fn statement_envelope(predicate: &Map<String, Value>, key: &KeyPair) -> String {
    let tree = predicate
        .get("anchor")
        .and_then(|a| a.get("tree"))
        .and_then(Value::as_str)
        .unwrap_or(TREE);
    let payload = statement_bytes(predicate, tree);
    sign_envelope(PAYLOAD_TYPE, &payload, &key.signing, &key.keyid)
}

/// The envelope text (one line) of `claim` taken exactly as given (no id added, nothing
/// checked), wrapped in a Statement whose subject is the claim's `anchor.tree` and signed
/// with the library by `key`: for envelopes `elench sign` or ingest would refuse.
pub fn envelope_text(claim: &Value, key: &KeyPair) -> String {
    statement_envelope(claim.as_object().expect("a claim is an object"), key)
}

/// Signs `payload` as a DSSE envelope with the library (no checks at all) and writes it to
/// a fresh file in `dir`.
pub fn sign_payload_raw(dir: &Path, payload_type: &str, payload: &[u8], key: &KeyPair) -> PathBuf {
    let text = sign_envelope(payload_type, payload, &key.signing, &key.keyid);
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

/// Writes envelopes as a bundle, one per line.
pub fn write_bundle<'a>(path: &Path, envelopes: impl IntoIterator<Item = &'a Signed>) {
    let mut text = String::new();
    for s in envelopes {
        text.push_str(&s.envelope);
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
}

/// Signs `claim` through `elench sign --key … --role …`, writing the envelope in `dir`.
/// Asserts success and returns the envelope's path and the claim id `sign` reported.
/// `key` needs its files (keys of [`super::make_keys`] have them).
pub fn sign_cli(dir: &Path, claim: &Value, key: &KeyPair) -> (PathBuf, String) {
    let claim_path = dir.join(fresh_name("claim", "json"));
    std::fs::write(&claim_path, serde_json::to_vec_pretty(claim).unwrap()).unwrap();
    sign_file_cli(dir, &claim_path, key)
}

/// Signs the claim file at `claim_path` through `elench sign`; as [`sign_cli`].
pub fn sign_file_cli(dir: &Path, claim_path: &Path, key: &KeyPair) -> (PathBuf, String) {
    sign_file_cli_with(dir, claim_path, key, &[])
}

/// [`sign_cli`] with `--anchor SPEC --at TREE_DIR`: the claim anchored to a span of a file
/// of the tree in `tree_dir`.
pub fn sign_anchored_cli(
    dir: &Path,
    claim: &Value,
    key: &KeyPair,
    spec: &str,
    tree_dir: &Path,
) -> (PathBuf, String) {
    let claim_path = dir.join(fresh_name("claim", "json"));
    std::fs::write(&claim_path, serde_json::to_vec_pretty(claim).unwrap()).unwrap();
    let at = ["--anchor", spec, "--at", tree_dir.to_str().unwrap()];
    sign_file_cli_with(dir, &claim_path, key, &at)
}

fn sign_file_cli_with(
    dir: &Path,
    claim_path: &Path,
    key: &KeyPair,
    extra: &[&str],
) -> (PathBuf, String) {
    let out = dir.join(fresh_name("envelope", "dsse"));
    let mut args = vec![
        "sign",
        claim_path.to_str().unwrap(),
        "--key",
        key.private.to_str().unwrap(),
        "--role",
        &key.role,
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-o", out.to_str().unwrap()]);
    let (code, json) = elench(dir, &args);
    assert_eq!(code, 0, "sign failed: {json}");
    assert!(out.exists(), "sign wrote no envelope");
    let id = json["data"]["id"]
        .as_str()
        .expect("sign reports data.id")
        .to_owned();
    (out, id)
}

/// Runs `elench verify ENVELOPE` trusting `keys`.
pub fn verify(dir: &Path, envelope: &Path, keys: &[&KeyPair]) -> (i32, Value) {
    let mut args = vec!["verify".to_owned(), envelope.display().to_string()];
    args.extend(trust_args(keys));
    elench(dir, &args)
}
