//! `trust sign | show | pin` and `init --root-key`: the team's trust policies (`crate::trust`).

use super::{Context, Failure};
use crate::error::Code;
use crate::trust::{self, Admitted, Pinned, TrustError};
use ed25519_dalek::SigningKey;
use serde::Serialize;
use serde_json::{json, Value};
use std::path::Path;

/// The failure a trust error is reported as: a refusal is exit 2 with its own code.
pub fn trust_failure(e: TrustError) -> Failure {
    match e {
        TrustError::Rejected(r) => Failure::rejected(r, None),
        TrustError::Io { path, message } => Failure::Io { path, message },
        TrustError::Store(s) => s.into(),
    }
}

/// Pins a root public key (PEM text read from `source`).
pub fn pin(ctx: &Context, pem: &str, name: Option<&str>) -> Result<Pinned, Failure> {
    let store = ctx.open_store()?;
    trust::pin(&store, pem, name).map_err(trust_failure)
}

/// Takes a policy envelope into the store.
pub fn admit(ctx: &Context, bytes: &[u8]) -> Result<Admitted, Failure> {
    let store = ctx.open_store()?;
    let a = trust::admit(&store, bytes).map_err(trust_failure)?;
    if let Some(m) = a.missing {
        ctx.observer().warn(
            Code::PolicyWaiting.as_str(),
            format!(
                "trust policy version {} ({}) waits for version {m}, which this store lacks",
                a.version, a.id
            ),
        );
    }
    Ok(a)
}

/// What `trust sign` made.
#[derive(Debug, Clone, Serialize)]
pub struct SignedPolicy {
    pub id: String,
    pub version: u64,
    pub team: String,
    pub chain: String,
    /// Root keys (of this version, and of the one before) whose signatures it carries.
    pub signed_by: Vec<String>,
    /// The envelope, canonical JSON.
    #[serde(skip)]
    pub envelope: Vec<u8>,
    /// With `--append`: what admitting it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub appended: Option<Admitted>,
}

/// Signs `input`: a `trust.toml` (the next version, built on the store's chain) or a policy
/// envelope (one more signature). `append` takes the result into the store.
pub fn sign(
    ctx: &Context,
    input: &Path,
    key: &SigningKey,
    version: Option<u64>,
    append: bool,
) -> Result<SignedPolicy, Failure> {
    let bytes = std::fs::read(input).map_err(|e| Failure::io(input.display(), e))?;
    let store = ctx.open_store_if_any()?;
    let st = match &store {
        Some(s) => trust::state_of(s).map_err(trust_failure)?,
        None => Default::default(),
    };
    let refuse = |r| Failure::rejected(r, Some(input.display().to_string()));
    let envelope = if trust::is_policy(&bytes) {
        trust::source::sign_more(&bytes, key).map_err(refuse)?
    } else {
        let text = String::from_utf8(bytes).map_err(|_| {
            Failure::rejected(
                crate::error::Rejection::new(
                    Code::PolicyInvalid,
                    "neither a policy envelope nor a trust.toml (not UTF-8 text)",
                ),
                Some(input.display().to_string()),
            )
        })?;
        let statement = trust::source::statement(input, &text, &st, version).map_err(refuse)?;
        trust::source::sign_new(&statement, key).map_err(refuse)?
    };
    let p = trust::policy::read(&envelope).map_err(refuse)?;
    let mut roots = p.root_keys.clone();
    if p.version() >= 2 {
        if let Some(prev) = st.chain.get(p.version() as usize - 2) {
            roots.extend(prev.root_keys.iter().cloned());
        }
    }
    let me = crate::keys::keyid(&key.verifying_key());
    if !roots.iter().any(|(k, _)| k.keyid == me) {
        return Err(refuse(crate::error::Rejection::new(
            Code::PolicyThreshold,
            format!(
                "key {me} is not a root key of version {} (roots: {}) nor of the version before \
                 it here: its signature would count for nothing",
                p.version(),
                p.root_names()
            ),
        )));
    }
    let mut signed_by = p.signed_by(&roots);
    signed_by.dedup();
    let appended = match (append, &store) {
        (true, Some(s)) => Some(trust::admit(s, &envelope).map_err(trust_failure)?),
        (true, None) => {
            return Err(Failure::Precondition {
                code: Code::StoreNotFound,
                message: "appending a policy needs a store: run `elench init`, or give ‹-store›"
                    .into(),
            })
        }
        _ => None,
    };
    Ok(SignedPolicy {
        id: p.id(),
        version: p.version(),
        team: p.team.clone(),
        chain: p.chain.clone(),
        signed_by,
        envelope,
        appended,
    })
}

/// `trust show`: pins, the chain, the policy in force and its keys, what waits, expiry.
pub fn show(ctx: &Context) -> Result<Value, Failure> {
    let store = ctx.open_store()?;
    let st = trust::state_of(&store).map_err(trust_failure)?;
    let now = trust::now();
    let chain: Vec<Value> = st
        .chain
        .iter()
        .map(|p| json!({"version": p.version(), "id": p.id(), "digest": p.digest,
                        "root_threshold": p.predicate.root.threshold,
                        "root": p.root_keys.iter().map(|(k, _)| json!({"keyid": k.keyid, "name": k.name})).collect::<Vec<_>>()}))
        .collect();
    let in_force = st.in_force().map(|p| {
        json!({
            "version": p.version(),
            "id": p.id(),
            "team": p.team,
            "chain": p.chain,
            "expires": p.predicate.expires,
            "expired": p.expires_at().is_some_and(|t| t <= now),
            "keys": p.keys.iter().map(|(k, _)| json!({"keyid": k.keyid, "name": k.name, "role": k.role})).collect::<Vec<_>>(),
            "compromised": p.predicate.compromised,
        })
    });
    let policy_keys: std::collections::BTreeSet<String> = st
        .in_force()
        .map(|p| p.keys.iter().map(|(k, _)| k.keyid.clone()).collect())
        .unwrap_or_default();
    let local: Vec<Value> = store
        .list_keys()?
        .into_iter()
        .filter(|k| !k.retired && !policy_keys.contains(&k.keyid))
        .map(|k| json!({"keyid": k.keyid, "name": k.name, "role": k.role}))
        .collect();
    let waiting: Vec<Value> = st
        .waiting
        .iter()
        .map(|p| json!({"version": p.version(), "id": p.id(), "digest": p.digest}))
        .collect();
    let equivocations: Vec<Value> = st
        .equivocations
        .iter()
        .map(|p| json!({"version": p.version(), "id": p.id(), "digest": p.digest}))
        .collect();
    Ok(json!({
        "pins": st.pins.iter().map(|p| json!({"keyid": p.keyid, "name": p.name})).collect::<Vec<_>>(),
        "chain": chain,
        "in_force": in_force,
        "local_keys": local,
        "waiting": waiting,
        "missing_version": st.missing_version(),
        "equivocations": equivocations,
    }))
}
