//! Verifying one envelope (`elench verify`): the whole ingest validation against the trusted
//! keys (the store's and those given), nothing stored.

use super::{Context, Failure};
use crate::claim::{Kind, OriginKind};
use crate::error::Code;
use crate::ingest::{verify_envelope, Accepted, Signer};
use crate::observer::Warning;
use crate::ops::error::Param;
use serde::Serialize;

/// Reads the envelope's bytes. Called only once there are trusted keys to verify against,
/// so that no input (stdin, a file) is read for a verification that cannot happen.
pub type ReadEnvelope<'a> = Box<dyn FnOnce() -> Result<Vec<u8>, Failure> + 'a>;

/// What to verify.
pub struct VerifyInput<'a> {
    pub envelope: ReadEnvelope<'a>,
    /// The envelope's name in errors (a path, or `stdin`).
    pub source: String,
    /// Further trusted keys, `ROLE:NAME:PUBKEY.pem` (`--trust`), beside the store's.
    pub trust: Vec<String>,
}

/// An envelope that passed every check. Serialises as the stable `verify` data fields
/// (docs/output.md: the stable `data` fields).
#[derive(Debug, Clone, Serialize)]
pub struct VerifyOutput {
    pub id: String,
    pub kind: Kind,
    pub origin: OriginKind,
    pub producer: String,
    /// The keyids that verified.
    pub signers: Vec<String>,
    pub signer_details: Vec<Signer>,
    pub target: Vec<String>,
    pub depends_on: Vec<String>,
    pub anchor_tree: String,
    pub warnings: Vec<Warning>,
}

/// Verifies one envelope as `add` would, storing nothing. A claim given where an envelope
/// belongs is refused with how to sign it.
pub fn verify(ctx: &Context, input: VerifyInput<'_>) -> Result<VerifyOutput, Failure> {
    let store = ctx.open_store_if_any()?;
    let trusted = super::keys::trust_with_store(store.as_ref(), &input.trust)?;
    if trusted.keys().is_empty() {
        return Err(Failure::usage(Some(Param::Trust),
            "no trusted keys: pass ‹trust› ROLE:NAME:PUBKEY.pem, or add keys to a store with `elench keys add`".into(),
        ));
    }
    let bytes = (input.envelope)()?;
    let source = input.source;
    let accepted = verify_envelope(&bytes, &trusted).map_err(|mut r| {
        if r.code == Code::BadEnvelope {
            if let Some(role) = super::add::unsigned_claim_role(bytes.trim_ascii()) {
                r.message = format!(
                    "this is a claim, not a signed envelope; {}",
                    super::add::sign_hint(&source, role)
                );
            }
        }
        Failure::rejected(r, Some(source.clone()))
    })?;
    Ok(output(accepted))
}

fn output(a: Accepted) -> VerifyOutput {
    let mut warnings = Vec::new();
    if a.unverified_signatures > 0 {
        warnings.push(Warning {
            code: Code::UnverifiedSignature.as_str(),
            message: format!(
                "{} signature(s) in the envelope were not verified by any trusted key",
                a.unverified_signatures
            ),
        });
    }
    let c = a.claim;
    VerifyOutput {
        id: c.id,
        kind: c.kind,
        origin: c.origin,
        producer: c.producer,
        signers: a.signers.iter().map(|s| s.keyid.clone()).collect(),
        signer_details: a.signers,
        target: c.target,
        depends_on: c.depends_on,
        anchor_tree: c.anchor_tree,
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::pem::public_key_pem;
    use crate::ops::Silent;
    use ed25519_dalek::SigningKey;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    fn context() -> (tempfile::TempDir, Context) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join(".elench");
        drop(
            crate::store::Store::init(
                &root,
                &crate::store::Options::new(crate::store::TEST_LOCK_WAIT),
            )
            .unwrap(),
        );
        let ctx = Context::new(Some(root), crate::store::TEST_LOCK_WAIT, Arc::new(Silent));
        (dir, ctx)
    }

    #[test]
    fn without_trusted_keys_the_envelope_is_never_read() {
        let (_dir, ctx) = context();
        let read = AtomicBool::new(false);
        let err = verify(
            &ctx,
            VerifyInput {
                envelope: Box::new(|| {
                    read.store(true, Ordering::SeqCst);
                    Ok(Vec::new())
                }),
                source: "e.dsse".into(),
                trust: Vec::new(),
            },
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("no trusted keys"), "{err}");
        assert!(!read.load(Ordering::SeqCst));
    }

    #[test]
    fn a_claim_given_for_an_envelope_is_told_how_to_sign_it() {
        let (dir, ctx) = context();
        let pub_path = dir.path().join("k.pub");
        let key = SigningKey::from_bytes(&[3; 32]);
        std::fs::write(&pub_path, public_key_pem(&key.verifying_key()).unwrap()).unwrap();
        let claim =
            br#"{"kind":"assertion","origin":{"kind":"agent-asserted","producer":{"id":"a"}}}"#;
        let err = verify(
            &ctx,
            VerifyInput {
                envelope: Box::new(|| Ok(claim.to_vec())),
                source: "c.json".into(),
                trust: vec![format!("agent:a:{}", pub_path.display())],
            },
        )
        .unwrap_err();
        assert_eq!(err.code().as_str(), "BAD_ENVELOPE");
        assert!(
            err.to_string()
                .starts_with("this is a claim, not a signed envelope; "),
            "{err}"
        );
    }
}
