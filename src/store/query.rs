//! Reading a store: the claims, envelopes, edges and trusted keys its index holds.

use super::index::{self, id_key, id_text};
use super::log::Kind;
use super::{
    record, ClaimEntry, EnvelopeRecord, KeyEntry, Meta, Store, StoreError, StoredClaim, StoredKey,
};
use crate::claim::{Body, Claim, Summary};
use crate::keys::{TrustSet, TrustedKey};
use ed25519_dalek::VerifyingKey;
use std::sync::atomic::Ordering;

impl Store {
    /// Makes every read of this thread one snapshot of the index until the pin is dropped:
    /// a command that answers from many reads (`status --all`, `gate`, `blast`) answers as
    /// of one state of the log, whatever a writer commits meanwhile.
    pub fn pin(&self) -> Result<index::Pin, StoreError> {
        Ok(self.index.pin()?)
    }

    /// The index contradicts itself (`why`): it is marked damaged, so that the next command
    /// rebuilds it, and this is the error to end with.
    pub fn index_damaged(&self, why: &str) -> StoreError {
        index::fault::mark(&self.index_dir());
        StoreError::IndexDamaged(format!(
            "the index is damaged ({why}); it is a cache of the log: the next command \
             rebuilds it, or run `elench reindex`"
        ))
    }

    /// Number of claims in the log (the next arrival number).
    pub fn count(&self) -> Result<u64, StoreError> {
        Ok(self.index.read()?.meta()?.counts.claims)
    }

    /// The log state `(n, chain_n)` the index reflects, and its counts.
    pub fn meta(&self) -> Result<Meta, StoreError> {
        Ok(self.index.read()?.meta()?)
    }

    pub fn contains(&self, id: &str) -> Result<bool, StoreError> {
        let Some(k) = id_key(id) else {
            return Ok(false);
        };
        Ok(self.index.read()?.has_claim(&k)?)
    }

    /// [`Store::contains`] of each id, read in one transaction.
    pub fn contains_each(&self, ids: &[&str]) -> Result<Vec<bool>, StoreError> {
        let r = self.index.read()?;
        ids.iter()
            .map(|id| match id_key(id) {
                Some(k) => Ok(r.has_claim(&k)?),
                None => Ok(false),
            })
            .collect()
    }

    /// The index entry of a claim (no log read).
    pub fn entry(&self, id: &str) -> Result<Option<ClaimEntry>, StoreError> {
        let Some(k) = id_key(id) else {
            return Ok(None);
        };
        Ok(self.index.read()?.claim(&k)?)
    }

    /// A claim's header, the fields the fold reads, from the index alone.
    pub fn get_fold(&self, id: &str) -> Result<Option<StoredClaim>, StoreError> {
        Ok(self.entry(id)?.map(|e| stored_claim(id, e, ())))
    }

    /// [`Store::get_fold`] of an id the index itself names (a stored claim's target or
    /// premise, a record targeting one): None when the log names it and does not hold it;
    /// an index that does not know the id at all is damaged (`INDEX_DAMAGED`).
    pub fn get_fold_named(&self, id: &str) -> Result<Option<StoredClaim>, StoreError> {
        let Some(k) = id_key(id) else {
            return Ok(None);
        };
        let entry = self.index.read()?.named_claim(&k)?;
        Ok(entry.map(|e| stored_claim(id, e, ())))
    }

    /// A claim with everything the fold, scopes and anchors need, without reading the log:
    /// its header and the index's [`Summary`] of its body. For the claim as signed, use
    /// [`Store::get`].
    pub fn get_light(&self, id: &str) -> Result<Option<StoredClaim<Summary>>, StoreError> {
        match self.entry(id)? {
            None => Ok(None),
            Some(e) => {
                let body = e.summary_body().map_err(|why| {
                    StoreError::Corrupt(format!("index summary of {id} is unreadable: {why}"))
                })?;
                Ok(Some(stored_claim(id, e, body)))
            }
        }
    }

    /// A claim in full: its body is read (and checked) from the log.
    pub fn get(&self, id: &str) -> Result<Option<StoredClaim<Body>>, StoreError> {
        let Some(entry) = self.entry(id)? else {
            return Ok(None);
        };
        let record = self.log.read_at(entry.first)?;
        let body = claim_body(&record.payload).map_err(|why| {
            StoreError::Corrupt(format!(
                "record {} (claim {id}) is unreadable: {why}",
                entry.first.n
            ))
        })?;
        Ok(Some(stored_claim(id, entry, body)))
    }

    /// The claim's first envelope, in canonical form.
    pub fn envelope(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let Some(entry) = self.entry(id)? else {
            return Ok(None);
        };
        Ok(Some(self.log.read_at(entry.first)?.payload))
    }

    /// Whether the claim `id` is stored with the envelope whose digest (SHA-256 of its
    /// canonical bytes) is `digest`.
    pub fn holds_envelope(&self, id: &str, digest: &[u8; 32]) -> Result<bool, StoreError> {
        let Some(k) = id_key(id) else {
            return Ok(false);
        };
        Ok(self.index.read()?.holds_envelope(&k, digest)?)
    }

    /// Number of envelopes in the log.
    pub fn envelope_count(&self) -> Result<u64, StoreError> {
        Ok(self.index.read()?.meta()?.counts.envelopes)
    }

    /// Envelopes in log order from envelope number `from`, at most `limit`.
    pub fn envelope_records(
        &self,
        from: u64,
        limit: usize,
    ) -> Result<Vec<EnvelopeRecord>, StoreError> {
        let r = self.index.read()?;
        let mut out = Vec::new();
        for e in r.envelope_order(from, limit)? {
            let bytes = self.log.read_at(e.pos)?.payload;
            out.push(EnvelopeRecord {
                seq: e.number,
                claim_id: id_text(&e.claim),
                digest: hex::encode(record::envelope_digest(&bytes)),
                bytes,
            });
        }
        Ok(out)
    }

    /// Ids of the records whose `target` contains `id`.
    pub fn records_targeting(&self, id: &str) -> Result<Vec<String>, StoreError> {
        let Some(k) = id_key(id) else {
            return Ok(Vec::new());
        };
        Ok(self
            .index
            .read()?
            .records_targeting(&k)?
            .iter()
            .map(|k| id_text(k))
            .collect())
    }

    /// Ids of the claims whose `dependsOn` contains `id`.
    pub fn dependents(&self, id: &str) -> Result<Vec<String>, StoreError> {
        let Some(k) = id_key(id) else {
            return Ok(Vec::new());
        };
        Ok(self
            .index
            .read()?
            .dependents(&k)?
            .iter()
            .map(|k| id_text(k))
            .collect())
    }

    /// Claim ids in arrival order, starting at arrival number `from`, at most `limit`.
    pub fn arrivals(&self, from: u64, limit: usize) -> Result<Vec<(u64, String)>, StoreError> {
        Ok(self
            .index
            .read()?
            .arrivals(from, limit)?
            .into_iter()
            .map(|(n, k)| (n, id_text(&k)))
            .collect())
    }

    /// Ids of every stored claim (in id order).
    pub fn claim_ids(&self) -> Result<Vec<String>, StoreError> {
        let r = self.index.read()?;
        let n = r.meta()?.counts.claims;
        let mut ids: Vec<String> = r
            .arrivals(0, n as usize)?
            .into_iter()
            .map(|(_, k)| id_text(&k))
            .collect();
        ids.sort();
        Ok(ids)
    }

    /// Claim ids starting with `prefix` (`cl_` and at least one hex digit), at most `limit`.
    pub fn ids_with_prefix(&self, prefix: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        let hex_part = prefix
            .strip_prefix(crate::claim::id::ID_PREFIX)
            .unwrap_or(prefix);
        if !hex_part
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        {
            return Ok(Vec::new());
        }
        Ok(self
            .index
            .read()?
            .ids_with_prefix(hex_part, limit)?
            .iter()
            .map(|k| id_text(k))
            .collect())
    }

    // ---- trusted keys ----

    pub fn get_key(&self, keyid: &str) -> Result<Option<StoredKey>, StoreError> {
        Ok(self.index.read()?.key(keyid)?.map(stored_key))
    }

    /// Every trusted key, retired ones included, in keyid order.
    pub fn list_keys(&self) -> Result<Vec<StoredKey>, StoreError> {
        Ok(self
            .index
            .read()?
            .keys()?
            .into_iter()
            .map(stored_key)
            .collect())
    }

    /// The pin and policy records of the log, in log order, as `(kind, payload)`: found
    /// through the index's list of trust events, so reading them costs what they are, not
    /// what the log is.
    pub fn trust_records(&self) -> Result<Vec<(Kind, Vec<u8>)>, StoreError> {
        let events = self.index.read()?.trust_events()?.unwrap_or_default();
        let mut out = Vec::new();
        for (pos, chain) in events {
            let rec = self.log.read_at(pos)?;
            if rec.chain != chain {
                return Err(self.index_damaged(&format!(
                    "the trust event the index places at record {} is not in the log there",
                    pos.n
                )));
            }
            if rec.kind.is_trust_record() {
                out.push((rec.kind, rec.payload));
            }
        }
        Ok(out)
    }

    /// The current trust state (retired keys kept, marked).
    pub fn trust_set(&self) -> Result<TrustSet, StoreError> {
        let r = self.index.read()?;
        let generation = r.meta()?.counts.trust_events;
        let set = trust_set_of(r.keys()?)?;
        self.trust_seen.store(generation, Ordering::Relaxed);
        Ok(set)
    }

    /// The current trust state and its generation (the number of trust events).
    pub fn trust_snapshot(&self) -> Result<(TrustSet, u64), StoreError> {
        let r = self.index.read()?;
        let generation = r.meta()?.counts.trust_events;
        Ok((trust_set_of(r.keys()?)?, generation))
    }
}

fn stored_key(k: KeyEntry) -> StoredKey {
    StoredKey {
        keyid: k.keyid,
        role: k.role,
        name: k.name,
        public_key: hex::encode(k.public_key),
        retired: k.retired_at.is_some(),
    }
}

/// The trust set of the given key states.
pub fn trust_set_of(keys: Vec<KeyEntry>) -> Result<TrustSet, StoreError> {
    let mut out = Vec::with_capacity(keys.len());
    for k in keys {
        let vk = VerifyingKey::from_bytes(&k.public_key)
            .map_err(|e| StoreError::Corrupt(format!("key {}: {e}", k.keyid)))?;
        out.push(TrustedKey {
            keyid: k.keyid,
            role: k.role,
            name: k.name,
            key: vk,
            retired: k.retired_at.is_some(),
        });
    }
    Ok(TrustSet::new(out))
}

fn stored_claim<B>(id: &str, e: ClaimEntry, body: B) -> StoredClaim<B> {
    StoredClaim {
        claim: Claim {
            id: id.to_owned(),
            kind: e.kind,
            target: e.target.iter().map(|k| id_text(k)).collect(),
            depends_on: e.depends_on.iter().map(|k| id_text(k)).collect(),
            origin: e.origin,
            producer: e.producer,
            anchor_tree: e.anchor_tree,
            timestamp: e.timestamp,
        },
        body,
        signers: e.signers,
        seq: e.seq,
    }
}

/// The claim (the Statement's predicate) inside a stored canonical envelope.
fn claim_body(envelope: &[u8]) -> Result<Body, String> {
    let env = crate::envelope::Envelope::parse(envelope).map_err(|r| r.message)?;
    let statement = crate::envelope::Statement::parse(&env.payload).map_err(|r| r.message)?;
    Ok(Body::new(statement.predicate))
}
