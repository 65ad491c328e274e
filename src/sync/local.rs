//! Every place sync touches the local store, and nothing else: reading envelopes in log
//! order, asking whether an envelope is held, and ingesting one. Keeping these together lets
//! the store change underneath without sync noticing.
//!
//! An envelope is identified by the SHA-256 of its canonical form (RFC 8785 of the envelope
//! JSON); that form is what travels, so stores that hold the same envelopes hold the same
//! bytes.

use crate::error::{Code, Rejection};
use crate::ingest::verify_envelope;
use crate::keys::TrustSet;
use crate::store::{Effect, Store, StoreError};
use sha2::{Digest, Sha256};

/// One envelope of the local log, in canonical form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalEnvelope {
    /// Position in the local log (0 for the first envelope).
    pub seq: u64,
    pub claim_id: String,
    /// Lowercase hex SHA-256 of `bytes`.
    pub digest: String,
    pub bytes: Vec<u8>,
}

/// What ingesting one envelope did.
#[derive(Debug)]
pub enum Ingested {
    Stored(Effect),
    Rejected(Rejection),
}

/// RFC 8785 canonical bytes of an envelope's JSON, or None if it is not JSON.
pub fn canonical(bytes: &[u8]) -> Option<Vec<u8>> {
    let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    serde_json_canonicalizer::to_vec(&value).ok()
}

pub fn digest_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The number of positions in the local log: every envelope before it has been seen.
pub fn envelope_count(store: &Store) -> Result<u64, StoreError> {
    store.count()
}

/// Up to `limit` envelopes from position `from` on, in log order.
pub fn local_envelopes_since(
    store: &Store,
    from: u64,
    limit: usize,
) -> Result<Vec<LocalEnvelope>, StoreError> {
    let mut out = Vec::new();
    for (seq, id) in store.arrivals(from, limit)? {
        let raw = store.envelope(&id)?.ok_or_else(|| {
            StoreError::Corrupt(format!(
                "log position {seq} names {id}, whose envelope is missing"
            ))
        })?;
        let bytes = canonical(&raw).ok_or_else(|| {
            StoreError::Corrupt(format!("the stored envelope of {id} is not JSON"))
        })?;
        out.push(LocalEnvelope {
            seq,
            digest: digest_hex(&bytes),
            claim_id: id,
            bytes,
        });
    }
    Ok(out)
}

/// Whether the store holds the envelope of `claim_id` whose canonical digest is `digest`.
pub fn has_envelope(store: &Store, claim_id: &str, digest: &str) -> Result<bool, StoreError> {
    match store.envelope(claim_id)? {
        None => Ok(false),
        Some(raw) => Ok(canonical(&raw).is_some_and(|c| digest_hex(&c) == digest)),
    }
}

/// The trust set pulls are verified against: the local one, never the remote's.
pub fn trust(store: &Store) -> Result<TrustSet, StoreError> {
    store.trust_set()
}

/// Runs the ordinary ingest on `bytes` and stores the envelope, in canonical form, if it is
/// accepted.
pub fn ingest(store: &Store, trust: &TrustSet, bytes: &[u8]) -> Result<Ingested, StoreError> {
    let accepted = match verify_envelope(bytes, trust) {
        Ok(a) => a,
        Err(r) => return Ok(Ingested::Rejected(r)),
    };
    let Some(canonical) = canonical(bytes) else {
        // verify_envelope parsed it, so this cannot happen; refuse rather than store
        // something other than the canonical form.
        return Ok(Ingested::Rejected(Rejection::new(
            Code::BadEnvelope,
            "the envelope has no canonical JSON form",
        )));
    };
    Ok(Ingested::Stored(store.add(&accepted, &canonical)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_canonical_form_ignores_member_order_and_whitespace() {
        let a = canonical(br#"{"signatures":[], "payloadType":"t","payload":"cA=="}"#).unwrap();
        let b =
            canonical(b"{\"payload\":\"cA==\",\n\"payloadType\":\"t\",\"signatures\":[]}").unwrap();
        assert_eq!(a, b);
        assert_eq!(
            a,
            br#"{"payload":"cA==","payloadType":"t","signatures":[]}"#
        );
        assert_eq!(digest_hex(&a), digest_hex(&b));
        assert_eq!(digest_hex(&a).len(), 64);
        assert_eq!(canonical(b"not json"), None);
    }
}
