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
use crate::store::Store;
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

/// A warning about the signed claim: its code and message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SignWarning {
    pub code: &'static str,
    pub message: String,
}

/// A signed claim. Serialises as the stable `sign` data fields (DESIGN 5); the envelope and
/// the role are for the caller to write and to say.
#[derive(Debug, Clone, Serialize)]
pub struct SignOutput {
    pub id: String,
    pub kind: Kind,
    pub origin: OriginKind,
    pub producer: String,
    /// The keyid that signed.
    pub signers: Vec<String>,
    pub warnings: Vec<SignWarning>,
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

    let (pem, key_source) = match &input.key {
        KeySource::File(path) => (
            super::keys::read_key_file(path)?,
            path.display().to_string(),
        ),
        KeySource::Pem { pem, source } => (pem.clone(), source.clone()),
    };
    let sk = read_signing_key_pem(&pem).map_err(|r| Failure::rejected(r, Some(key_source)))?;
    let kid = keyid(&sk.verifying_key());
    let store = ctx.open_store_if_any()?;
    let trusted = super::keys::trust_with_store(store.as_ref(), &input.trust)?;
    let role = match (trusted.get(&kid), input.role) {
        (Some(k), Some(r)) if k.role != r => {
            return Err(Failure::Usage(format!(
                "--role {r} contradicts the trusted key {kid}, whose role is {}",
                k.role
            )))
        }
        (Some(k), _) => k.role,
        (None, Some(r)) => r,
        (None, None) => {
            return Err(Failure::Usage(format!(
                "the role of key {kid} is unknown: pass --role ROLE or --trust ROLE:NAME:PUBKEY.pem"
            )))
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
) -> Result<Vec<SignWarning>, Failure> {
    let mut out = Vec::new();
    if claim.kind == Kind::Assertion
        && value
            .get("anchor")
            .is_some_and(crate::anchor::span_without_digest)
    {
        out.push(SignWarning {
            code: Code::NoContentDigest.as_str(),
            message: super::add::no_content_digest(&claim.id),
        });
    }
    if let Some(store) = store {
        for (field, list) in [("target", &claim.target), ("dependsOn", &claim.depends_on)] {
            let ids: Vec<&str> = list.iter().map(String::as_str).collect();
            for (other, seen) in ids.iter().zip(store.contains_each(&ids)?) {
                if !seen {
                    out.push(SignWarning {
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
