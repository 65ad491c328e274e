//! The whole ingest validation of one envelope (docs/envelope.md to 1.7), without storing it.
//!
//! Envelope → signature under a trusted, unretired key → Statement → claim (schema, extra
//! rules, id) → subject → authority of the verifying key's role. Validity depends only on the
//! bytes and the trust set, never on the log (docs/envelope.md).

use crate::claim::{self, Body, Claim};
use crate::envelope::statement::statement_bytes;
use crate::envelope::{sign_envelope, Candidate, Envelope, Statement, PAYLOAD_TYPE};
use crate::error::{Code, Rejection};
use crate::keys::{check_authority, keyid, Role, TrustSet, TrustedKey};
use ed25519_dalek::SigningKey;

mod typed;

/// What a DSSE envelope carries when it is another kind of attestation than an elench
/// claim: `payloadType X` when its payloadType is not in-toto's, `predicateType X` when it
/// is an in-toto statement of another predicate type (SLSA provenance, say). None for
/// everything else, an elench claim or bytes of no such shape (those get the ordinary
/// rejection). Both fields are readable before any signature is checked, so the answer
/// does not depend on keys: a bundle or a remote may carry attestations of every kind, and
/// the in-toto bundle convention asks consumers to pass over what they do not recognise.
pub fn foreign_kind(bytes: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let payload_type = v.get("payloadType")?.as_str()?;
    if payload_type != PAYLOAD_TYPE {
        return Some(format!("payloadType {payload_type}"));
    }
    let payload = crate::envelope::dsse::decode_base64(v.get("payload")?.as_str()?)?;
    let statement: serde_json::Value = serde_json::from_slice(&payload).ok()?;
    let predicate_type = statement.get("predicateType")?.as_str()?;
    (predicate_type != crate::envelope::PREDICATE_TYPE)
        .then(|| format!("predicateType {predicate_type}"))
}

/// A key that verified an envelope's signature.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct Signer {
    pub keyid: String,
    pub role: Role,
    pub name: String,
}

/// An envelope that passed every check.
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted {
    pub claim: Claim,
    pub signers: Vec<Signer>,
    /// Signatures in the envelope that no trusted key verified.
    pub unverified_signatures: usize,
    /// What was read of the claim's text: the whole body, or only what the store keeps of
    /// it (when [`verify_for_store`] read the payload the fast way).
    pub text: Read,
}

/// What ingest read of a claim's text.
#[derive(Debug, Clone, PartialEq)]
pub enum Read {
    /// The predicate as signed.
    Whole(Body),
    /// Only the index's summary of it, already written as the index's summary text
    /// (`store::index::summary_of`).
    Summary(String),
}

/// Validates one envelope's bytes against the trust set.
pub fn verify_envelope(bytes: &[u8], trust: &TrustSet) -> Result<Accepted, Rejection> {
    verify_read(Envelope::parse(bytes)?, trust)
}

/// Validates an envelope already read as JSON ([`Envelope::parse_json`]).
pub fn verify_json(json: &serde_json::Value, trust: &TrustSet) -> Result<Accepted, Rejection> {
    verify_read(Envelope::from_json(json)?, trust)
}

/// Validates an envelope already read (as [`Envelope::from_canonical`] reads one).
pub fn verify_read(envelope: Envelope, trust: &TrustSet) -> Result<Accepted, Rejection> {
    verify_with(envelope, trust, Way::Whole)
}

/// As [`verify_read`], for an envelope on its way into the store (`add`, rebuilds, `fsck`).
/// A payload of the common shape is read without building its JSON value (`typed`): the
/// claim's body is then not kept, and [`Accepted::text`] holds only what the store keeps of it.
/// Any other payload is read in full. The verdict is the same either way.
pub fn verify_for_store(envelope: Envelope, trust: &TrustSet) -> Result<Accepted, Rejection> {
    verify_with(envelope, trust, Way::Stored)
}

/// Whether the payload may be read the fast way, which keeps no body and writes its
/// summary instead ([`verify_for_store`]).
enum Way {
    Whole,
    Stored,
}

fn verify_with(envelope: Envelope, trust: &TrustSet, way: Way) -> Result<Accepted, Rejection> {
    let active: Vec<_> = trust.active().collect();
    let candidates = candidates_of(&active);
    let verified = envelope
        .verify(&candidates, 1, &[PAYLOAD_TYPE])
        .map_err(|e| explain_retired(e, &envelope, trust))?;
    // From here on only the verified payload bytes are read.
    let fast = match way {
        Way::Stored => typed::read(&verified.payload),
        Way::Whole => None,
    };
    let (claim, text) = match fast {
        Some((claim, summary)) => (claim, Read::Summary(summary)),
        None => {
            let (claim, body) = read_claim(&verified.payload)?;
            (claim, Read::Whole(body))
        }
    };
    let signers: Vec<Signer> = verified
        .verifying_keys
        .iter()
        .map(|&i| Signer {
            keyid: active[i].keyid.clone(),
            role: active[i].role,
            name: active[i].name.clone(),
        })
        .collect();
    // Any verifying key whose role may say this is enough.
    let mut last_violation = None;
    for s in &signers {
        match check_authority(s.role, &claim) {
            Ok(()) => {
                return Ok(Accepted {
                    claim,
                    signers,
                    unverified_signatures: verified.unverified_signatures,
                    text,
                })
            }
            Err(e) => last_violation = Some(e),
        }
    }
    Err(last_violation
        .unwrap_or_else(|| Rejection::new(Code::UntrustedSigner, "no trusted key signed this"))
        .within("/predicate"))
}

/// The keys an envelope's signatures are tried against.
fn candidates_of<'k>(keys: &[&'k TrustedKey]) -> Vec<Candidate<'k>> {
    keys.iter()
        .map(|k| Candidate {
            keyid: &k.keyid,
            key: &k.key,
        })
        .collect()
}

/// The full reading of a verified payload: the Statement, the claim's every check, the
/// subject.
fn read_claim(payload: &[u8]) -> Result<(Claim, Body), Rejection> {
    let mut statement = Statement::parse(payload)?;
    let predicate = std::mem::take(&mut statement.predicate);
    let (claim, body) = claim::validate(predicate).map_err(|e| e.within("/predicate"))?;
    statement.check_subject(&claim.anchor_tree)?;
    Ok((claim, body))
}

/// The producer's side of ingest: gives a claim its id (replacing a stale one), validates it,
/// wraps it in a Statement about its anchor tree and signs it. Returns the checked claim and
/// the envelope's JSON text. Whether the key's role may sign it is the caller's check
/// (`check_authority`), since only the caller knows the role.
pub fn seal(claim: &serde_json::Value, key: &SigningKey) -> Result<(Claim, String), Rejection> {
    let (checked, obj) = claim::with_id(claim)?;
    let payload = statement_bytes(&obj, &checked.anchor_tree);
    let envelope = sign_envelope(PAYLOAD_TYPE, &payload, key, &keyid(&key.verifying_key()));
    Ok((checked, envelope))
}

/// A signature by a retired key is untrusted for new envelopes; say so plainly.
fn explain_retired(err: Rejection, envelope: &Envelope, trust: &TrustSet) -> Rejection {
    if err.code != Code::UntrustedSigner && err.code != Code::BadSignature {
        return err;
    }
    let retired: Vec<_> = trust.keys().iter().filter(|k| k.retired).collect();
    match envelope.verify(&candidates_of(&retired), 1, &[PAYLOAD_TYPE]) {
        Ok(v) => {
            let names: Vec<String> = v
                .verifying_keys
                .iter()
                .map(|&i| format!("{} ({})", retired[i].name, retired[i].keyid))
                .collect();
            Rejection::at(
                Code::UntrustedSigner,
                "/signatures",
                format!(
                    "the envelope is signed only by retired key(s) {}; a retired key signs nothing new",
                    names.join(", ")
                ),
            )
        }
        Err(_) => err,
    }
}

#[cfg(test)]
mod foreign_tests {
    use super::foreign_kind;
    use base64::Engine;

    fn envelope(payload_type: &str, payload: &serde_json::Value) -> Vec<u8> {
        let b64 = base64::engine::general_purpose::STANDARD.encode(payload.to_string());
        serde_json::json!({"payloadType": payload_type, "payload": b64, "signatures": []})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn other_payload_and_predicate_types_are_foreign_and_nothing_else_is() {
        let slsa = serde_json::json!({"_type": "https://in-toto.io/Statement/v1",
            "predicateType": "https://slsa.dev/provenance/v1", "subject": [], "predicate": {}});
        let ours = serde_json::json!({"_type": "https://in-toto.io/Statement/v1",
            "predicateType": crate::envelope::PREDICATE_TYPE, "predicate": {}});
        assert_eq!(
            foreign_kind(&envelope(super::PAYLOAD_TYPE, &slsa)).as_deref(),
            Some("predicateType https://slsa.dev/provenance/v1")
        );
        assert_eq!(
            foreign_kind(&envelope("application/vnd.cyclonedx+json", &ours)).as_deref(),
            Some("payloadType application/vnd.cyclonedx+json")
        );
        assert_eq!(foreign_kind(&envelope(super::PAYLOAD_TYPE, &ours)), None);
        for other in [&b"not json"[..], b"{}", b"[1]", br#"{"payloadType": 7}"#] {
            assert_eq!(foreign_kind(other), None);
        }
        // An in-toto payload that is not JSON, or has no predicateType, is not recognisably
        // foreign: the ordinary rejection says what is wrong with it.
        let b64 = base64::engine::general_purpose::STANDARD.encode("nope");
        let junk = format!(
            r#"{{"payloadType":"{}","payload":"{b64}"}}"#,
            super::PAYLOAD_TYPE
        );
        assert_eq!(foreign_kind(junk.as_bytes()), None);
    }
}
