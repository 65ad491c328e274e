//! Signing one claim (`elench sign`): the claim read strictly, its anchor filled when asked,
//! its id computed, the signing key's role found and its authority checked, the envelope
//! sealed, and what `add` would warn about said now, while it is still easy to fix.

use super::anchor::anchor_at;
use super::tree::tree_dir;
use super::{Context, Failure};
use crate::anchor::Strategy;
use crate::claim::{self, Kind, OriginKind};
use crate::error::{Code, Rejection};
use crate::ingest::seal;
use crate::json::{parse_strict, JsonError};
use crate::keys::{check_authority, keyid, read_signing_key_pem, Role};
use crate::observer::Warning;
use crate::ops::error::Param;
use crate::store::Store;
use ed25519_dalek::SigningKey;
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Where the signing key comes from.
#[derive(Debug, Clone)]
pub enum KeySource {
    /// A PEM (PKCS#8) file, read only once the claim has been found good, so that a bad
    /// claim is reported before a missing key.
    File(PathBuf),
    /// PEM text already read; `source` names it in errors.
    Pem { pem: String, source: String },
}

impl KeySource {
    /// The signing key, and the name errors give its source by.
    pub(super) fn read(&self) -> Result<(SigningKey, String), Failure> {
        match self {
            KeySource::File(path) => Ok((
                super::keys::read_signing_key_file(path)?,
                path.display().to_string(),
            )),
            KeySource::Pem { pem, source } => read_signing_key_pem(pem)
                .map(|sk| (sk, source.clone()))
                .map_err(|r| Failure::rejected(r, Some(source.clone()))),
        }
    }
}

/// What to sign, and with what.
#[derive(Debug, Clone)]
pub struct SignInput {
    /// The claim's bytes (JSON; its `id` may be absent or stale: it is computed).
    pub claim: Vec<u8>,
    /// The claim's name in errors (a path, or `stdin`).
    pub source: String,
    /// `PATH[:START-END]`: replace the claim's anchor span by this one (`--anchor`).
    pub anchor: Option<String>,
    /// The tree the anchor's path is in (default: the enclosing checkout).
    pub at: Option<PathBuf>,
    pub key: KeySource,
    /// The key's role when the trusted keys do not say it (`--role`).
    pub role: Option<Role>,
    /// Further trusted keys, `ROLE:NAME:PUBKEY.pem` (`--trust`), beside the store's.
    pub trust: Vec<String>,
}

/// A signed claim. Serialises as the stable `sign` data fields (docs/output.md); the envelope and
/// the role are for the caller to write and to say.
#[derive(Debug, Clone, Serialize)]
pub struct SignOutput {
    pub id: String,
    pub kind: Kind,
    pub origin: OriginKind,
    pub producer: String,
    /// The keyid that signed.
    pub signers: Vec<String>,
    pub warnings: Vec<Warning>,
    /// The anchor as filled, when one was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anchor: Option<Value>,
    /// The signing key's role.
    #[serde(skip)]
    pub role: Role,
    /// The envelope's text (canonical, one line, no newline).
    #[serde(skip)]
    pub envelope: String,
}

/// Signs one claim. Nothing is written: the envelope is in the result. The store, when there
/// is one, lends its trusted keys (for the role) and its claims (for `DANGLING_REFERENCE`).
pub fn sign(ctx: &Context, input: &SignInput) -> Result<SignOutput, Failure> {
    let reject = |r: Rejection| Failure::rejected(r, Some(input.source.clone()));
    let mut value = parse_strict(&input.claim).map_err(|e| {
        let code = match e {
            JsonError::DuplicateKey { .. } => Code::DuplicateKey,
            JsonError::Syntax { .. } => Code::BadJson,
            _ => Code::SchemaViolation,
        };
        reject(Rejection {
            code,
            pointer: e.pointer().map(str::to_owned),
            message: format!("claim: {e}"),
            details: Vec::new(),
        })
    })?;
    if let Some(spec) = &input.anchor {
        fill_anchor(&mut value, spec, input.at.as_deref()).map_err(|f| match f {
            Failure::Rejected { rejection, .. } => reject(rejection),
            other => other,
        })?;
    }
    let (claim, _) = claim::with_id(&value).map_err(reject)?;

    let (sk, _) = input.key.read()?;
    let kid = keyid(&sk.verifying_key());
    let store = ctx.open_store_if_any()?;
    let trusted = super::keys::trust_with_store(store.as_ref(), &input.trust)?;
    let role = match (trusted.get(&kid), input.role) {
        (Some(k), Some(r)) if k.role != r => {
            return Err(Failure::usage(
                Some(Param::Role),
                format!(
                    "‹role› {r} contradicts the trusted key {kid}, whose role is {}",
                    k.role
                ),
            ))
        }
        (Some(k), _) => k.role,
        (None, Some(r)) => r,
        (None, None) => {
            return Err(Failure::usage(
                Some(Param::Role),
                format!(
                    "the role of key {kid} is unknown: pass ‹role› ROLE or ‹trust› \
                     ROLE:NAME:PUBKEY.pem"
                ),
            ))
        }
    };
    check_authority(role, &claim).map_err(reject)?;

    let (_, envelope) = seal(&value, &sk).map_err(reject)?;
    let warnings = sign_warnings(&claim, &value, store.as_ref())?;
    let anchor = input
        .anchor
        .as_ref()
        .map(|_| value.get("anchor").cloned().unwrap_or(Value::Null));
    Ok(SignOutput {
        id: claim.id,
        kind: claim.kind,
        origin: claim.origin,
        producer: claim.producer,
        signers: vec![kid],
        warnings,
        anchor,
        role,
        envelope,
    })
}

/// What `add` would warn about this claim: an assertion whose anchor names a span without
/// its `contentDigest` (it can never carry to another tree), and, when there is a store,
/// claims named in `target` or `dependsOn` that it has not seen.
fn sign_warnings(
    claim: &claim::Claim,
    value: &Value,
    store: Option<&Store>,
) -> Result<Vec<Warning>, Failure> {
    let mut out = Vec::new();
    if claim.kind == Kind::Assertion
        && value
            .get("anchor")
            .is_some_and(crate::anchor::span_without_digest)
    {
        out.push(Warning {
            code: Code::NoContentDigest.as_str(),
            message: super::add::no_content_digest(&claim.id),
        });
    }
    if let Some(store) = store {
        for (field, list) in [("target", &claim.target), ("dependsOn", &claim.depends_on)] {
            let ids: Vec<&str> = list.iter().map(String::as_str).collect();
            for (other, seen) in ids.iter().zip(store.contains_each(&ids)?) {
                if !seen {
                    out.push(Warning {
                        code: Code::DanglingReference.as_str(),
                        message: format!(
                            "{} names {other} in {field}, which the store has not seen yet",
                            claim.id
                        ),
                    });
                }
            }
        }
    }
    Ok(out)
}

/// Replaces the claim's anchor span by the one `spec` names in the tree at `at`: tree, path,
/// range (none for a whole file) and contentDigest. Other anchor members stay, and so does
/// the strategy (multi when there is none).
fn fill_anchor(value: &mut Value, spec: &str, at: Option<&Path>) -> Result<(), Failure> {
    let not_object = || {
        Failure::rejected(
            Rejection::at(Code::SchemaViolation, "", "claim must be a JSON object"),
            None,
        )
    };
    let strategy = value
        .pointer("/anchor/strategy")
        .and_then(Value::as_str)
        .and_then(Strategy::parse)
        .unwrap_or(Strategy::Multi);
    let dir = tree_dir(at)?;
    let Value::Object(fresh) = anchor_at(&dir, spec, strategy)? else {
        return Err(Failure::Internal("an anchor is an object".into()));
    };
    let obj = value.as_object_mut().ok_or_else(not_object)?;
    let mut anchor = obj
        .get("anchor")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    anchor.remove("range");
    for (k, v) in fresh {
        anchor.insert(k, v);
    }
    obj.insert("anchor".into(), Value::Object(anchor));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::pem::{public_key_pem, signing_key_pem};
    use crate::ops::verify::{verify, VerifyInput};
    use crate::ops::Silent;
    use ed25519_dalek::SigningKey;
    use std::sync::Arc;

    /// An agent's annotation that depends on a claim no store has seen.
    const CLAIM: &str = r#"{
      "kind": "assertion",
      "assertion": {"form": "annotation", "text": "load_config never panics on an empty file"},
      "origin": {"kind": "agent-asserted", "producer": {"id": "example-agent/1.0"}},
      "anchor": {"tree": "9ba3f9417f51f1b6784891a68c2f8aa8a2b3965a67b72e8eb59e3f30ba724b5e",
                 "strategy": "path-range", "path": "src/lib.rs",
                 "contentDigest": "e3e483c8ade8be11dc8979dcce46e381255c14aa0f610cf1758498f6915f3450"},
      "timestamp": 1764000060,
      "dependsOn": ["cl_b0ac4cf1fce6feed085b3f8e2afe02a9531d799d4e21ad56d1d265b27b362fef"]
    }"#;

    /// A fresh, empty store, and a context naming it.
    fn store() -> (tempfile::TempDir, Context) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join(".elench");
        drop(
            Store::init(
                &root,
                &crate::store::Options::new(crate::store::TEST_LOCK_WAIT),
            )
            .unwrap(),
        );
        let ctx = Context::new(Some(root), crate::store::TEST_LOCK_WAIT, Arc::new(Silent));
        (dir, ctx)
    }

    fn key() -> SigningKey {
        SigningKey::from_bytes(&[7; 32])
    }

    fn input(claim: &str, role: Option<Role>, trust: Vec<String>) -> SignInput {
        SignInput {
            claim: claim.as_bytes().to_vec(),
            source: "claim.json".into(),
            anchor: None,
            at: None,
            key: KeySource::Pem {
                pem: signing_key_pem(&key()).unwrap(),
                source: "key.pem".into(),
            },
            role,
            trust,
        }
    }

    /// `ROLE:NAME:PATH` trusting the test key, its public half written under `dir`.
    fn trust(dir: &Path, role: &str) -> String {
        let path = dir.join("key.pub");
        std::fs::write(&path, public_key_pem(&key().verifying_key()).unwrap()).unwrap();
        format!("{role}:test:{}", path.display())
    }

    #[test]
    fn a_signed_claim_verifies_with_the_id_computed_from_its_text() {
        let (dir, ctx) = store();
        let signed = sign(&ctx, &input(CLAIM, Some(Role::Agent), Vec::new())).unwrap();
        let value: Value = serde_json::from_str(CLAIM).unwrap();
        let (claim, _) = claim::with_id(&value).unwrap();
        assert_eq!(signed.id, claim.id);
        assert!(signed.id.starts_with("cl_"), "{}", signed.id);
        assert_eq!(signed.role, Role::Agent);
        let kid = keyid(&key().verifying_key());
        assert_eq!(signed.signers, vec![kid.clone()]);
        assert_eq!(signed.anchor, None);

        let envelope = signed.envelope.clone();
        let verified = verify(
            &ctx,
            VerifyInput {
                envelope: Box::new(move || Ok(envelope.into_bytes())),
                source: "claim.dsse".into(),
                trust: vec![trust(dir.path(), "agent")],
            },
        )
        .unwrap();
        assert_eq!(verified.id, signed.id);
        assert_eq!(verified.signers, vec![kid]);
        assert_eq!(verified.producer, "example-agent/1.0");
        assert!(verified.warnings.is_empty(), "{:?}", verified.warnings);

        // The data fields a front end reports, in the order docs/output.md gives; the envelope and
        // the role are not among them.
        let data = serde_json::to_value(&signed).unwrap();
        let keys: Vec<&str> = data
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            ["id", "kind", "origin", "producer", "signers", "warnings"]
        );
    }

    #[test]
    fn a_premise_the_store_has_not_seen_is_warned_about() {
        let (_dir, ctx) = store();
        let signed = sign(&ctx, &input(CLAIM, Some(Role::Agent), Vec::new())).unwrap();
        assert_eq!(signed.warnings.len(), 1, "{:?}", signed.warnings);
        let w = &signed.warnings[0];
        assert_eq!(w.code, "DANGLING_REFERENCE");
        assert!(
            w.message.contains(
                "names cl_b0ac4cf1fce6feed085b3f8e2afe02a9531d799d4e21ad56d1d265b27b362fef in dependsOn"
            ),
            "{}",
            w.message
        );
    }

    #[test]
    fn a_role_that_contradicts_the_trusted_key_is_refused() {
        let (dir, ctx) = store();
        let human = trust(dir.path(), "human");
        let err = sign(&ctx, &input(CLAIM, Some(Role::Agent), vec![human.clone()])).unwrap_err();
        assert_eq!(err.code().as_str(), "BAD_ARGUMENTS");
        assert!(
            err.to_string()
                .contains("‹role› agent contradicts the trusted key"),
            "{err}"
        );
        // Without --role the trusted key's role decides, and a human may not sign an
        // agent's claim.
        let err = sign(&ctx, &input(CLAIM, None, vec![human])).unwrap_err();
        assert_eq!(err.code().as_str(), "ROLE_VIOLATION", "{err}");
        // No role at all: the key's role is unknown.
        let err = sign(&ctx, &input(CLAIM, None, Vec::new())).unwrap_err();
        assert!(err.to_string().contains("is unknown"), "{err}");
    }

    #[test]
    fn a_claim_that_is_not_json_names_its_source_and_reads_no_key() {
        let (_dir, ctx) = store();
        let mut bad = input("{\"kind\": ", Some(Role::Agent), Vec::new());
        // A key file that does not exist: the claim is refused first.
        bad.key = KeySource::File(PathBuf::from("/nonexistent/key.pem"));
        let err = sign(&ctx, &bad).unwrap_err();
        assert_eq!(err.code().as_str(), "BAD_JSON");
        assert!(
            err.to_json().to_string().contains("claim.json"),
            "{}",
            err.to_json()
        );
    }
}
