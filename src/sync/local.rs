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
use crate::store::{Effect, Staged, Store, StoreError};

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
    Stored {
        effect: Effect,
        claim_id: String,
        /// Lowercase hex SHA-256 of its canonical form.
        digest: String,
        /// Signatures in it that no trusted key verified.
        unverified: usize,
    },
    Rejected(Rejection),
}

/// RFC 8785 canonical bytes of an envelope's JSON (the form the log keeps), or None if it is
/// not JSON.
pub fn canonical(bytes: &[u8]) -> Option<Vec<u8>> {
    crate::store::record::canonical_envelope(bytes).ok()
}

pub fn digest_hex(bytes: &[u8]) -> String {
    hex::encode(crate::store::record::envelope_digest(bytes))
}

/// The number of positions in the local log: every envelope before it has been seen.
pub fn envelope_count(store: &Store) -> Result<u64, StoreError> {
    store.envelope_count()
}

/// Up to `limit` envelopes from position `from` on, in log order.
pub fn local_envelopes_since(
    store: &Store,
    from: u64,
    limit: usize,
) -> Result<Vec<LocalEnvelope>, StoreError> {
    Ok(store
        .envelope_records(from, limit)?
        .into_iter()
        .map(|e| LocalEnvelope {
            seq: e.seq,
            claim_id: e.claim_id,
            digest: e.digest,
            bytes: e.bytes,
        })
        .collect())
}

/// Whether the store holds the envelope whose canonical digest is `digest` (hex; a digest
/// that is not 64 hex digits names nothing it holds).
pub fn has_envelope(store: &Store, claim_id: &str, digest: &str) -> Result<bool, StoreError> {
    let mut d = [0u8; 32];
    if hex::decode_to_slice(digest, &mut d).is_err() {
        return Ok(false);
    }
    store.holds_envelope(claim_id, &d)
}

/// The trust set pulls are verified against: the local one, never the remote's, and its
/// generation.
pub fn trust(store: &Store) -> Result<(TrustSet, u64), StoreError> {
    store.trust_snapshot()
}

/// Runs the ordinary ingest on a batch of envelopes (verified on every core) and appends the
/// accepted ones, in canonical form, as one group: one fsync for the batch.
pub fn ingest_batch(
    store: &Store,
    trust: &(TrustSet, u64),
    batch: &[Vec<u8>],
) -> Result<Vec<Ingested>, StoreError> {
    use rayon::prelude::*;
    let verdicts: Vec<Result<Staged, Rejection>> = batch
        .par_iter()
        .map(|bytes| {
            let accepted = verify_envelope(bytes, &trust.0)?;
            let canonical = canonical(bytes).ok_or_else(|| {
                // verify_envelope parsed it, so this cannot happen; refuse rather than store
                // something other than the canonical form.
                Rejection::new(Code::BadEnvelope, "the envelope has no canonical JSON form")
            })?;
            Ok(Staged {
                digest: crate::store::record::envelope_digest(&canonical),
                canonical,
                accepted,
                trust_generation: trust.1,
            })
        })
        .collect();
    let staged: Vec<Staged> = verdicts.iter().flatten().cloned().collect();
    let mut stored = if staged.is_empty() {
        Vec::new()
    } else {
        store.commit_group(staged)?
    }
    .into_iter();
    let mut out = Vec::with_capacity(batch.len());
    for v in verdicts {
        out.push(match v {
            Err(r) => Ingested::Rejected(r),
            Ok(staged) => match stored.next() {
                Some(Ok(effect)) => Ingested::Stored {
                    effect,
                    claim_id: staged.accepted.claim.id,
                    digest: hex::encode(staged.digest),
                    unverified: staged.accepted.unverified_signatures,
                },
                Some(Err(r)) => Ingested::Rejected(r),
                None => {
                    return Err(StoreError::Corrupt(
                        "the store returned fewer outcomes than envelopes".into(),
                    ))
                }
            },
        });
    }
    Ok(out)
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
