//! Reading a store: the claims, envelopes, edges and trusted keys its index holds.

use super::index::{self, id_key, id_text, ClaimRef};
use super::log::Kind;
use super::{
    record, ClaimEntry, EnvelopeRecord, KeyEntry, Meta, Store, StoreError, StoredClaim, StoredKey,
};
use crate::claim::{Body, Claim, Summary};
use crate::ingest::Signer;
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

    /// One read of the index held open, for reads that borrow from it ([`AllClaims`]): the
    /// thread's pinned transaction, pinned now when none is (a thread holds one read
    /// transaction at a time, so every other read meanwhile must share it).
    pub fn snapshot(&self) -> Result<Snapshot<'_>, StoreError> {
        let pin = if self.index.is_pinned() {
            None
        } else {
            Some(self.pin()?)
        };
        Ok(Snapshot {
            store: self,
            reader: self.index.read()?,
            _pin: pin,
        })
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

/// [`stored_claim`] from a borrowed entry: only the fields the header keeps are copied.
fn stored_claim_ref<B>(id: &str, e: &ClaimEntry, body: B) -> StoredClaim<B> {
    StoredClaim {
        claim: Claim {
            id: id.to_owned(),
            kind: e.kind,
            target: e.target.iter().map(|k| id_text(k)).collect(),
            depends_on: e.depends_on.iter().map(|k| id_text(k)).collect(),
            origin: e.origin,
            producer: e.producer.clone(),
            anchor_tree: e.anchor_tree.clone(),
            timestamp: e.timestamp,
        },
        body,
        signers: e.signers.clone(),
        seq: e.seq,
    }
}

fn stored_claim<B>(id: &str, e: ClaimEntry, body: B) -> StoredClaim<B> {
    stored_claim_ref(id, &e, body)
}

/// The claim (the Statement's predicate) inside a stored canonical envelope.
fn claim_body(envelope: &[u8]) -> Result<Body, String> {
    let env = crate::envelope::Envelope::parse(envelope).map_err(|r| r.message)?;
    let statement = crate::envelope::Statement::parse(&env.payload).map_err(|r| r.message)?;
    Ok(Body::new(statement.predicate))
}

/// One read transaction of a store's index, held open: what [`AllClaims`] borrows its
/// entries from. It is the thread's pinned transaction ([`Store::pin`]), so every read of
/// the store on this thread while it lives is of the same state.
pub struct Snapshot<'s> {
    store: &'s Store,
    reader: index::Reader<'s>,
    /// The pin this snapshot made, if it made one; released after the reader.
    _pin: Option<index::Pin>,
}

impl Snapshot<'_> {
    /// Every stored claim at once, read in one walk of the index (see [`AllClaims`]).
    pub fn all_claims(&self) -> Result<AllClaims<'_>, StoreError> {
        let entries = self.reader.all_claim_refs()?;
        AllClaims::new(self.store, entries)
    }
}

/// Every stored claim of a store, read in one walk of its claims table, and the edges
/// between them worked out from the claims' own `target` and `dependsOn`: for a command
/// that reads most of the log (a gate), one pass instead of a lookup per claim and per
/// edge. It answers what the store answers ([`Store::get_fold`], [`Store::get_light`],
/// [`Store::records_targeting`], [`Store::dependents`], [`Store::get_fold_named`]) as of
/// the snapshot it was read in.
///
/// The entries are the index's own bytes, borrowed from the snapshot's transaction and read
/// field by field ([`ClaimRef`]); the claims signed by the same keys share one decoded list
/// of signers. Per claim it holds its borrowed entry, its slot in a map of ids, and the
/// slots of the records and claims that name it.
pub struct AllClaims<'a> {
    store: &'a Store,
    /// Every id the log names (a stored claim, or a target or premise of one): its slot.
    slots: rustc_hash::FxHashMap<index::IdKey, u32>,
    /// Every stored claim's entry, in the order the walk read them.
    entries: Vec<ClaimRef<'a>>,
    /// By entry: its signers, as a place in `signer_lists`.
    signers_of: Vec<u32>,
    /// Each distinct list of signers the entries hold.
    signer_lists: Vec<Vec<Signer>>,
    /// By slot: where its entry is in `entries` ([`NAMED_ONLY`]: the log only names it).
    entry_of: Vec<u32>,
    /// By entry: its slot.
    slot_of_entry: Vec<u32>,
    /// By slot: the records targeting it, and the claims naming it as a premise.
    records: Vec<Vec<u32>>,
    dependents: Vec<Vec<u32>>,
    /// The slots of each entry's premises, as its `dependsOn` lists them, one entry after
    /// another: entry `i`'s are `premise_slots[premises_from[i]..premises_from[i + 1]]`. A
    /// fold visits a claim's premises once per claim above it, so they are looked up once
    /// here rather than by id on every visit.
    premise_slots: Vec<u32>,
    premises_from: Vec<u32>,
}

/// The place in [`AllClaims::entry_of`] of an id the log names and does not hold.
const NAMED_ONLY: u32 = u32::MAX;

impl<'a> AllClaims<'a> {
    fn new(store: &'a Store, entries: Vec<ClaimRef<'a>>) -> Result<AllClaims<'a>, StoreError> {
        if entries.len() >= NAMED_ONLY as usize {
            return Err(store.index_damaged("its claims table holds more entries than it can"));
        }
        let mut out = AllClaims {
            store,
            slots: rustc_hash::FxHashMap::default(),
            entries: Vec::new(),
            signers_of: Vec::with_capacity(entries.len()),
            signer_lists: Vec::new(),
            entry_of: Vec::with_capacity(entries.len()),
            slot_of_entry: Vec::with_capacity(entries.len()),
            records: Vec::with_capacity(entries.len()),
            dependents: Vec::with_capacity(entries.len()),
            premise_slots: Vec::new(),
            premises_from: Vec::with_capacity(entries.len() + 1),
        };
        out.slots.reserve(entries.len());
        out.premises_from.push(0);
        let mut lists: rustc_hash::FxHashMap<&'a [u8], u32> = Default::default();
        for (i, e) in entries.iter().enumerate() {
            let me = out.slot(e.id);
            if out.entry_of[me as usize] != NAMED_ONLY {
                return Err(
                    store.index_damaged(&format!("its claims table holds {} twice", id_text(e.id)))
                );
            }
            out.entry_of[me as usize] = i as u32;
            out.slot_of_entry.push(me);
            let list = match lists.get(e.signers) {
                Some(&list) => list,
                None => {
                    let decoded = ClaimRef::decode_signers(e.signers).map_err(StoreError::from)?;
                    let list = out.signer_lists.len() as u32;
                    out.signer_lists.push(decoded);
                    lists.insert(e.signers, list);
                    list
                }
            };
            out.signers_of.push(list);
            let target: Vec<index::IdKey> = e.target().copied().collect();
            for t in index::distinct(&target) {
                let t = out.slot(&t);
                out.records[t as usize].push(me);
            }
            let from = out.premise_slots.len();
            for p in e.depends_on() {
                let p = out.slot(p);
                out.premise_slots.push(p);
            }
            if out.premise_slots.len() >= NAMED_ONLY as usize {
                return Err(store.index_damaged("its claims name more premises than it can"));
            }
            out.premises_from.push(out.premise_slots.len() as u32);
            // One id has one slot, so distinct slots are the distinct premises.
            let mine = &out.premise_slots[from..];
            for p in index::distinct(mine) {
                out.dependents[p as usize].push(me);
            }
        }
        out.entries = entries;
        Ok(out)
    }

    /// The slot of `id`, given one now if it has none.
    fn slot(&mut self, id: &index::IdKey) -> u32 {
        let next = self.entry_of.len() as u32;
        let slot = *self.slots.entry(*id).or_insert(next);
        if slot == next {
            self.entry_of.push(NAMED_ONLY);
            self.records.push(Vec::new());
            self.dependents.push(Vec::new());
        }
        slot
    }

    /// The place in `entries` of the claim `id`.
    fn place(&self, id: &str) -> Option<usize> {
        let slot = *self.slots.get(&id_key(id)?)?;
        self.place_at(slot)
    }

    fn place_at(&self, slot: u32) -> Option<usize> {
        let at = *self.entry_of.get(slot as usize)?;
        (at != NAMED_ONLY).then_some(at as usize)
    }

    /// The store the claims were read from.
    pub fn store(&self) -> &'a Store {
        self.store
    }

    /// How many slots there are: one for each id the log names, stored or not.
    pub fn slot_count(&self) -> usize {
        self.entry_of.len()
    }

    /// The slot of `id`, when the log names it.
    pub fn slot_of(&self, id: &str) -> Option<u32> {
        self.slot_of_key(&id_key(id)?)
    }

    /// The slot of the id `key`, when the log names it.
    pub fn slot_of_key(&self, key: &index::IdKey) -> Option<u32> {
        self.slots.get(key).copied()
    }

    /// The entry of the claim in `slot`: None when the log only names it (or no such slot).
    pub fn entry_at(&self, slot: u32) -> Option<&ClaimRef<'a>> {
        self.entries.get(self.place_at(slot)?)
    }

    /// The kind of the claim in `slot`: None when the log only names it (or no such slot).
    pub fn kind_at(&self, slot: u32) -> Option<crate::claim::Kind> {
        self.entry_at(slot).map(|e| e.kind)
    }

    /// The signers of the claim in `slot` (none when the log only names it).
    pub fn signers_at(&self, slot: u32) -> &[Signer] {
        self.place_at(slot)
            .map_or(&[], |place| self.signers_of_place(place))
    }

    /// The signers of the entry at `place` in `entries`.
    fn signers_of_place(&self, place: usize) -> &[Signer] {
        self.signers_of
            .get(place)
            .and_then(|&list| self.signer_lists.get(list as usize))
            .map_or(&[], Vec::as_slice)
    }

    /// The slots of the premises of the claim in `slot`, in its `dependsOn` order, repeats
    /// kept (none when the log only names it).
    pub fn premises_at(&self, slot: u32) -> &[u32] {
        let Some(place) = self.place_at(slot) else {
            return &[];
        };
        match (
            self.premises_from.get(place),
            self.premises_from.get(place + 1),
        ) {
            (Some(&from), Some(&to)) => self
                .premise_slots
                .get(from as usize..to as usize)
                .unwrap_or(&[]),
            _ => &[],
        }
    }

    /// The slots of the records targeting the claim in `slot` (each once, stored, in no
    /// particular order).
    pub fn records_at(&self, slot: u32) -> &[u32] {
        self.records.get(slot as usize).map_or(&[], Vec::as_slice)
    }

    /// Every stored claim, by slot, in no particular order.
    pub fn stored(&self) -> impl Iterator<Item = (u32, &ClaimRef<'a>)> {
        self.slot_of_entry.iter().copied().zip(self.entries.iter())
    }

    /// Ids of every stored claim, in id order.
    pub fn ids(&self) -> Vec<String> {
        let mut keys: Vec<&index::IdKey> = self.entries.iter().map(|e| e.id).collect();
        keys.sort_unstable();
        keys.into_iter().map(|k| id_text(k)).collect()
    }

    /// The header of the entry at `place` in `entries`, with `body`.
    fn stored_claim<B>(&self, id: &str, place: usize, body: B) -> StoredClaim<B> {
        let e = &self.entries[place];
        StoredClaim {
            claim: Claim {
                id: id.to_owned(),
                kind: e.kind,
                target: e.target().map(|k| id_text(k)).collect(),
                depends_on: e.depends_on().map(|k| id_text(k)).collect(),
                origin: e.origin,
                producer: e.producer.to_owned(),
                anchor_tree: e.anchor_tree.to_owned(),
                timestamp: e.timestamp,
            },
            body,
            signers: self.signers_of_place(place).to_vec(),
            seq: e.seq,
        }
    }

    /// [`Store::get_fold`].
    pub fn get_fold(&self, id: &str) -> Option<StoredClaim> {
        self.place(id).map(|p| self.stored_claim(id, p, ()))
    }

    /// [`Store::get_light`].
    pub fn get_light(&self, id: &str) -> Result<Option<StoredClaim<Summary>>, StoreError> {
        let Some(place) = self.place(id) else {
            return Ok(None);
        };
        let e = &self.entries[place];
        let body = index::summary_body(e.summary, e.anchor_tree).map_err(|why| {
            StoreError::Corrupt(format!("index summary of {id} is unreadable: {why}"))
        })?;
        Ok(Some(self.stored_claim(id, place, body)))
    }

    /// [`AllClaims::get_light`] of each id, in order, worked out on every core.
    pub fn get_light_each(
        &self,
        ids: &[&str],
    ) -> Result<Vec<Option<StoredClaim<Summary>>>, StoreError> {
        use rayon::prelude::*;
        ids.par_iter().map(|id| self.get_light(id)).collect()
    }

    /// [`Store::get_fold_named`]: an id the log never named is damage.
    pub fn get_fold_named(&self, id: &str) -> Result<Option<StoredClaim>, StoreError> {
        let Some(k) = id_key(id) else {
            return Ok(None);
        };
        match self.slots.get(&k) {
            Some(&slot) => Ok(self.place_at(slot).map(|p| self.stored_claim(id, p, ()))),
            None => Err(self.store.index_damaged(&format!(
                "the index names {id} and its nodes table has no entry for it"
            ))),
        }
    }

    fn paired(&self, id: &str, of: &[Vec<u32>]) -> Vec<String> {
        let Some(&slot) = id_key(id).and_then(|k| self.slots.get(&k)) else {
            return Vec::new();
        };
        let mut keys: Vec<&index::IdKey> = of[slot as usize]
            .iter()
            .filter_map(|&s| self.entry_at(s).map(|e| e.id))
            .collect();
        keys.sort_unstable();
        keys.into_iter().map(|k| id_text(k)).collect()
    }

    /// [`Store::records_targeting`].
    pub fn records_targeting(&self, id: &str) -> Vec<String> {
        self.paired(id, &self.records)
    }

    /// [`Store::dependents`].
    pub fn dependents(&self, id: &str) -> Vec<String> {
        self.paired(id, &self.dependents)
    }
}
