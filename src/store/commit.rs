//! Writing a store: groups of verified envelopes and trust events, appended under the
//! writer lock (the log's fsync first, then the index).

use super::index::{id_key, id_text, Apply, IdKey};
use super::log::{self, Appender, Kind};
use super::{record, trust_set_of, Effect, Staged, Store, StoreError, WriterLock};
use crate::error::Rejection;
use crate::ingest::Accepted;
use crate::keys::{TrustSet, TrustedKey};
use std::sync::atomic::Ordering;

/// Records per index transaction when a group is appended, for an index of `claims` claims:
/// 1/256 of them, at least 1,024 and at most 4,096. Each new claim inserts at a random place
/// of the `nodes` table, and a transaction writes every page it touched once: in a large
/// index nearly one page per insert, fewer when a transaction holds more records. But LMDB
/// reuses the pages a commit frees only two commits later, so the file keeps about two
/// transactions' pages beyond its contents: a fixed cost that a small index would feel.
/// Measured when claims and premise pairs were keyed by hash too (index format 2): at a
/// million claims, 4,096 instead of 1,024 halved the system time of a bulk `add` for 5% more
/// index; at 100,000, 2,048 made the index 10% larger. With format 3, 4,096 at 100,000 was
/// within the noise (docs/benchmarks.md).
fn index_transaction(claims: u64) -> usize {
    usize::try_from(claims / 256)
        .unwrap_or(usize::MAX)
        .clamp(1024, 4096)
}

/// What appending a group did: each envelope's effect or rejection, in order, and the
/// targets and premises of the claims it created that the store did not hold once the group
/// was in (an id for each such mention, repeats included), as the index's writes found them.
#[derive(Debug, Default)]
pub struct Appended {
    pub outcomes: Vec<Result<Effect, Rejection>>,
    pub unheld: Vec<String>,
}

/// The largest frame buffer a store keeps between groups: a full group of envelopes of
/// about 2 KB each, so that a long-lived process that once appended a large group does not
/// hold its memory.
pub(super) const KEPT_FRAME_BYTES: usize = 16 << 20;

impl Store {
    /// Appends one accepted envelope (verified against [`Store::trust_set`]) durably.
    pub fn add(&self, accepted: &Accepted, envelope: &[u8]) -> Result<Effect, StoreError> {
        let canonical = record::canonical_envelope(envelope).map_err(StoreError::Corrupt)?;
        let staged = Staged {
            digest: record::envelope_digest(&canonical),
            canonical,
            accepted: accepted.clone(),
            // Unknown generation: re-verified under the lock.
            trust_generation: self.trust_seen.load(Ordering::Relaxed),
        };
        let lock = self.lock()?;
        let mut out = self
            .commit_group_locked(&lock, vec![staged], false)?
            .outcomes;
        match out.pop() {
            Some(Ok(effect)) => Ok(effect),
            Some(Err(r)) => Err(StoreError::Rejected(r)),
            None => Err(StoreError::Corrupt("an append returned nothing".into())),
        }
    }

    /// Makes the index's writes durable, so that a machine that stops later does not make the
    /// next command rebuild it (see `index::unsynced`). Worth one fsync after a long write.
    pub fn sync_index(&self) -> Result<(), StoreError> {
        if self.read_only {
            return Ok(());
        }
        Ok(self.index.sync()?)
    }

    /// Appends a group of verified envelopes under the writer lock: one fsync for the group,
    /// then one index transaction. An envelope verified under an older trust state is
    /// verified again first. Returns each envelope's effect or rejection, in order.
    pub fn commit_group(
        &self,
        group: Vec<Staged>,
    ) -> Result<Vec<Result<Effect, Rejection>>, StoreError> {
        let lock = self.lock()?;
        Ok(self.commit_group_locked(&lock, group, false)?.outcomes)
    }

    /// [`Store::commit_group`], saying too which claims the new claims name that the store
    /// does not hold (`DANGLING_REFERENCE`), found by the index's own writes instead of a
    /// second lookup of every id.
    pub fn commit_group_noting(&self, group: Vec<Staged>) -> Result<Appended, StoreError> {
        let lock = self.lock()?;
        self.commit_group_locked(&lock, group, true)
    }

    fn commit_group_locked(
        &self,
        _lock: &WriterLock,
        group: Vec<Staged>,
        // Whether to find the claims the group names and the store does not hold: only a
        // caller that reads `unheld` pays for the lookups once the group is in.
        note_unheld: bool,
    ) -> Result<Appended, StoreError> {
        let meta = self.index.read()?.meta()?;
        let mut trust: Option<TrustSet> = None;
        let mut outcomes: Vec<Result<Effect, Rejection>> = Vec::with_capacity(group.len());
        let frames = std::mem::take(&mut *self.frames.lock().unwrap_or_else(|p| p.into_inner()));
        let mut appender = Appender::with_buffer(self.log.clone(), meta.head, frames);
        appender.reserve(group.len(), group.iter().map(|s| s.canonical.len()).sum());
        let mut to_apply: Vec<(log::Placed, Staged)> = Vec::with_capacity(group.len());
        let mut seen_now: rustc_hash::FxHashSet<[u8; 32]> = Default::default();
        let mut new_claims: rustc_hash::FxHashSet<String> = Default::default();
        {
            let r = self.index.read()?;
            for staged in group {
                let stored = match id_key(&staged.accepted.claim.id) {
                    Some(k) => r.claim(&k)?,
                    None => None,
                };
                if seen_now.contains(&staged.digest)
                    || stored
                        .as_ref()
                        .is_some_and(|e| e.envelopes.iter().any(|x| x.digest == staged.digest))
                {
                    outcomes.push(Ok(Effect::Noop));
                    continue;
                }
                let mut staged = staged;
                if staged.trust_generation != meta.counts.trust_events {
                    if trust.is_none() {
                        trust = Some(trust_set_of(r.keys()?)?);
                    }
                    let t = trust
                        .as_ref()
                        .ok_or_else(|| StoreError::Corrupt("trust state vanished".into()))?;
                    match crate::ingest::verify_envelope(&staged.canonical, t) {
                        Ok(a) => staged.accepted = a,
                        Err(rej) => {
                            outcomes.push(Err(rej));
                            continue;
                        }
                    }
                }
                let id = staged.accepted.claim.id.clone();
                let exists = new_claims.contains(&id) || stored.is_some();
                outcomes.push(Ok(if exists {
                    Effect::Merged
                } else {
                    Effect::Created
                }));
                new_claims.insert(id);
                seen_now.insert(staged.digest);
                let placed = appender.stage(Kind::Envelope, &staged.canonical);
                to_apply.push((placed, staged));
            }
        }
        if to_apply.is_empty() {
            return Ok(Appended {
                outcomes,
                unheld: Vec::new(),
            });
        }
        appender.commit()?;
        let frames = appender.into_buffer();
        if frames.capacity() <= KEPT_FRAME_BYTES {
            *self.frames.lock().unwrap_or_else(|p| p.into_inner()) = frames;
        }
        // The group is durable from here; the index follows, in transactions of at most
        // `index_transaction` records: LMDB reuses the pages a commit frees only two commits
        // later, so one transaction for a large group would grow the index file.
        let mut unclaimed: Vec<IdKey> = Vec::new();
        for part in to_apply.chunks(index_transaction(meta.counts.claims)) {
            let mut w = self.index.write()?;
            if note_unheld {
                w.note_unclaimed();
            }
            for (placed, staged) in part {
                w.apply_envelope(
                    placed.pos,
                    placed.chain,
                    placed.frame_len,
                    &staged.digest,
                    &staged.accepted,
                )?;
            }
            unclaimed.append(&mut w.take_unclaimed());
            w.commit()?;
        }
        // A claim named before it arrived later in the same group is held now.
        let mut unheld = Vec::new();
        if !unclaimed.is_empty() {
            let r = self.index.read()?;
            for key in unclaimed {
                if !r.has_claim(&key)? {
                    unheld.push(id_text(&key));
                }
            }
        }
        Ok(Appended { outcomes, unheld })
    }

    fn append_event_locked(&self, kind: Kind, payload: Vec<u8>) -> Result<(), StoreError> {
        let meta = self.index.read()?.meta()?;
        let mut appender = Appender::new(self.log.clone(), meta.head);
        let placed = appender.stage(kind, &payload);
        appender.commit()?;
        let (pos, chain, frame_len) = (placed.pos, placed.chain, placed.frame_len);
        let mut w = self.index.write()?;
        match kind {
            Kind::KeyAdd => {
                let e: record::KeyAdd =
                    record::decode_event(&payload).map_err(StoreError::Corrupt)?;
                w.apply_key_add(pos, chain, frame_len, &e)?;
            }
            Kind::KeyRetire => {
                let e: record::KeyRetire =
                    record::decode_event(&payload).map_err(StoreError::Corrupt)?;
                w.apply_key_retire(pos, chain, frame_len, &e.keyid)?;
            }
            Kind::Pin | Kind::Policy => w.apply_trust_record(pos, chain, frame_len)?,
            Kind::Envelope => {
                return Err(StoreError::Corrupt(
                    "an envelope is not a trust event".into(),
                ))
            }
        }
        w.commit()?;
        Ok(())
    }

    /// Adds a trusted key. Returns false if that keyid is already trusted (nothing changes).
    pub fn add_key(&self, key: &TrustedKey) -> Result<bool, StoreError> {
        let lock = self.lock()?;
        if self.index.read()?.key(&key.keyid)?.is_some() {
            return Ok(false);
        }
        self.append_key_add_locked(key)?;
        drop(lock);
        Ok(true)
    }

    /// Trusts a key with the role and name given: adds it, or gives a key already trusted
    /// (and not retired) that role and name from this record on, as a team's policy that
    /// moved it to another role asks. Returns whether a record was appended.
    pub fn grant_key(&self, key: &TrustedKey) -> Result<bool, StoreError> {
        let lock = self.lock()?;
        if let Some(held) = self.index.read()?.key(&key.keyid)? {
            if held.retired_at.is_some() || (held.role == key.role && held.name == key.name) {
                return Ok(false);
            }
        }
        self.append_key_add_locked(key)?;
        drop(lock);
        Ok(true)
    }

    /// Appends the `key-add` event of `key` (the caller holds the writer lock).
    fn append_key_add_locked(&self, key: &TrustedKey) -> Result<(), StoreError> {
        let event = record::KeyAdd {
            keyid: key.keyid.clone(),
            role: key.role,
            name: key.name.clone(),
            public_key: hex::encode(key.key.as_bytes()),
        };
        self.append_event_locked(Kind::KeyAdd, record::encode_event(&event))
    }

    /// Appends a pin or a trust policy record (`kind`, its payload in canonical form) durably.
    /// The caller (the trust layer) decided it belongs in the log.
    pub fn append_trust_record(&self, kind: Kind, payload: &[u8]) -> Result<(), StoreError> {
        if !kind.is_trust_record() {
            return Err(StoreError::Corrupt(format!(
                "{kind:?} is not a trust record"
            )));
        }
        record::check_trust_record(kind, payload).map_err(StoreError::Corrupt)?;
        let lock = self.lock()?;
        self.append_event_locked(kind, payload.to_vec())?;
        drop(lock);
        Ok(())
    }

    /// Retires a key. Returns None for an unknown keyid, else whether it changed.
    pub fn retire_key(&self, keyid: &str) -> Result<Option<bool>, StoreError> {
        let lock = self.lock()?;
        let Some(key) = self.index.read()?.key(keyid)? else {
            return Ok(None);
        };
        if key.retired_at.is_some() {
            return Ok(Some(false));
        }
        let event = record::KeyRetire {
            keyid: keyid.to_owned(),
        };
        self.append_event_locked(Kind::KeyRetire, record::encode_event(&event))?;
        drop(lock);
        Ok(Some(true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{read_public_key_pem, Role, TrustedKey};

    const AGENT_PUB: &str = include_str!("../../fixtures/demo/agent.pub");
    /// No premises.
    const PARSE: &str = include_str!("../../fixtures/demo/1-parse-rejects-empty.dsse");
    /// Rests on PARSE.
    const LOADER: &str = include_str!("../../fixtures/demo/2-config-loader-total.dsse");
    /// Rests on LOADER.
    const REFACTOR: &str = include_str!("../../fixtures/demo/3-refactor-keeps-behaviour.dsse");

    #[test]
    fn an_append_names_what_its_new_claims_name_and_the_store_does_not_hold() {
        let dir = crate::scratch::ScratchDir::new("elench-commit");
        let options = super::super::Options::new(std::time::Duration::from_secs(5));
        let (store, _) = Store::init(&dir.path().join("store"), &options).unwrap();
        let key = TrustedKey::new(
            Role::Agent,
            "demo-agent",
            read_public_key_pem(AGENT_PUB).unwrap(),
        )
        .unwrap();
        store.add_key(&key).unwrap();
        let (trust, generation) = store.trust_snapshot().unwrap();
        let staged = |text: &str| Staged::new(text.as_bytes(), &trust, generation).unwrap();
        let id = |s: &Staged| s.accepted.claim.id.clone();
        let (parse, loader, refactor) = (staged(PARSE), staged(LOADER), staged(REFACTOR));
        // REFACTOR names LOADER, which comes later in the same group: held once the group is
        // in. LOADER names PARSE, which nothing brought.
        let appended = store
            .commit_group_noting(vec![refactor.clone(), loader.clone()])
            .unwrap();
        assert_eq!(appended.unheld, [id(&parse)]);
        assert!(appended.outcomes.iter().all(|o| o == &Ok(Effect::Created)));
        // Envelopes already stored create nothing and name nothing; PARSE names no claim.
        let again = store
            .commit_group_noting(vec![loader, parse.clone(), refactor])
            .unwrap();
        assert!(again.unheld.is_empty());
        assert_eq!(
            again.outcomes,
            [Ok(Effect::Noop), Ok(Effect::Created), Ok(Effect::Noop)]
        );
        // The frame buffer kept between groups is handed back empty.
        assert!(store.frames.lock().unwrap().is_empty());
    }
}
