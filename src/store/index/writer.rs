//! Writing the index: [`Writer`], one write transaction applying log records in order,
//! and [`Apply`], what the writer and the audit both do with a record.

use super::codec::{
    decode, distinct, encode, id_text, node_key, node_value, pair, Checked, ClaimEntry, IdKey,
    Incoming, KeyEntry, Meta, Node, NodeValue, OrderEntry, TrustEventAt, FORMAT, ORIGIN_KEY,
    TRUST_EVENTS_KEY,
};
use super::reader::{claim_in, entry_at, incoming_in, keys_in, read_meta};
use super::{fault, unsynced, Dbs, Index, IndexError};
use crate::ingest::Accepted;
use crate::store::log::{Chain, Position};
use heed::{PutFlags, RwTxn};
use rustc_hash::FxHashMap;
use std::path::Path;

impl Index {
    /// A write transaction that applies records after those the index holds.
    pub fn write(&self) -> Result<Writer<'_>, IndexError> {
        self.writer(false)
    }

    /// A write transaction over an emptied index, and the tables of earlier formats emptied
    /// too (a rebuild in place starts here): what the index held is not read, so an index
    /// in another format, whose `meta` may not read as this one's, is rebuilt too.
    pub fn rewrite(&self) -> Result<Writer<'_>, IndexError> {
        self.writer(true)
    }

    fn writer(&self, cleared: bool) -> Result<Writer<'_>, IndexError> {
        self.make_room()?;
        let active = fault::Active::new(&self.opened.watched);
        let txn = self.begin(|env| env.write_txn())?;
        let meta = if cleared {
            Meta::EMPTY
        } else {
            read_meta(&txn, &self.dbs)?
        };
        let mut w = Writer {
            txn,
            dbs: self.dbs,
            legacy: self.legacy.clone(),
            meta,
            counted: FxHashMap::default(),
            unclaimed: None,
            unsynced: &self.unsynced,
            _active: active,
        };
        if cleared {
            w.clear()?;
        } else {
            // The next id the log names is numbered from the count `meta` keeps; LMDB's own
            // count of the table (a number in the file) must agree, or the number would be
            // given twice.
            let nodes = w.dbs.nodes.len(&w.txn)?;
            if nodes != w.meta.counts.nodes {
                return Err(IndexError::Inconsistent(format!(
                    "its nodes table holds {nodes} entries where its meta counts {}",
                    w.meta.counts.nodes
                )));
            }
        }
        Ok(w)
    }
}

/// One write transaction over the index, applying log records in order.
pub struct Writer<'e> {
    pub(super) txn: RwTxn<'e>,
    /// Pairs counted in this transaction and not yet in `incoming`, by node (written at
    /// commit, [`Writer::write_counts`]).
    pub(super) counted: FxHashMap<Node, Incoming>,
    /// When asked for ([`Writer::note_unclaimed`]): the targets and premises of the claims
    /// applied that were not stored claims when their pair was written, in that order. The
    /// pair's write looks each one up anyway, so the answer costs nothing more.
    pub(super) unclaimed: Option<Vec<IdKey>>,
    pub(super) dbs: Dbs,
    pub(super) legacy: Vec<Checked>,
    pub(super) meta: Meta,
    pub(super) unsynced: &'e Path,
    pub(super) _active: fault::Active<'e>,
}

/// Where a log's records go, in log order: an index being written ([`Writer`]), or the live
/// index being checked against the log ([`Audit`]). Both work out each record's entries
/// with the same functions ([`ClaimEntry::first`], [`ClaimEntry::add_envelope`],
/// [`KeyEntry::added`], [`KeyEntry::retire`], [`Meta::advance`]).
pub trait Apply {
    /// Applies an accepted envelope record; a repeated envelope is
    /// [`IndexError::DuplicateEnvelope`].
    #[allow(clippy::too_many_arguments)]
    fn apply_envelope(
        &mut self,
        pos: Position,
        chain: Chain,
        frame_len: u64,
        digest: &[u8; 32],
        accepted: &Accepted,
    ) -> Result<(), IndexError>;
    fn apply_key_add(
        &mut self,
        pos: Position,
        chain: Chain,
        frame_len: u64,
        key: &crate::store::record::KeyAdd,
    ) -> Result<(), IndexError>;
    fn apply_key_retire(
        &mut self,
        pos: Position,
        chain: Chain,
        frame_len: u64,
        keyid: &str,
    ) -> Result<(), IndexError>;
    /// Applies a pin or a policy record: it changes no key here, and its place is noted
    /// among the trust events so that the trust layer finds it again without reading the log.
    fn apply_trust_record(
        &mut self,
        pos: Position,
        chain: Chain,
        frame_len: u64,
    ) -> Result<(), IndexError>;
    /// The trust state after the records applied so far.
    fn keys(&self) -> Result<Vec<KeyEntry>, IndexError>;
}

impl Writer<'_> {
    pub fn meta(&self) -> Meta {
        self.meta
    }

    pub fn claim(&self, id: &IdKey) -> Result<Option<ClaimEntry>, IndexError> {
        claim_in(&self.txn, &self.dbs, id)
    }

    /// From now on, notes each target and premise of an applied claim that was not a stored
    /// claim when its pair was written (its id was unknown, or only named so far): what
    /// [`Writer::take_unclaimed`] hands back. Only a caller that reads the answer asks, so a
    /// rebuild keeps nothing per claim.
    pub fn note_unclaimed(&mut self) {
        self.unclaimed.get_or_insert_with(Vec::new);
    }

    /// The ids noted since [`Writer::note_unclaimed`] (repeats included), and notes afresh.
    pub fn take_unclaimed(&mut self) -> Vec<IdKey> {
        self.unclaimed
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Empties every database, and those of earlier formats (a rebuild starts here).
    pub fn clear(&mut self) -> Result<(), IndexError> {
        for db in [
            self.dbs.meta,
            self.dbs.nodes,
            self.dbs.claims,
            self.dbs.envelope_order,
            self.dbs.arrivals,
            self.dbs.by_target,
            self.dbs.by_premise,
            self.dbs.keys,
            self.dbs.incoming,
        ]
        .iter()
        .chain(&self.legacy)
        {
            db.clear(&mut self.txn)?;
        }
        self.meta = Meta::EMPTY;
        self.counted.clear();
        Ok(())
    }

    /// What `nodes` says of `id`, numbering it now if the log never named it before (then
    /// `true`, and `claimed` says whether it is the id of the claim being added).
    pub(super) fn node_of(
        &mut self,
        id: &IdKey,
        claimed: bool,
    ) -> Result<(NodeValue, bool), IndexError> {
        let fresh = NodeValue {
            node: self.meta.counts.nodes,
            claimed,
        };
        match self
            .dbs
            .nodes
            .get_or_put(&mut self.txn, id, &fresh.encode())?
        {
            Some(v) => Ok((node_value(id, &v)?, false)),
            None => {
                self.meta.number_node();
                // Nothing names it yet; nodes only grow, so the entry goes at the end.
                self.dbs.incoming.put_with_flags(
                    &mut self.txn,
                    PutFlags::APPEND,
                    &node_key(fresh.node),
                    &encode(&Incoming::default()),
                )?;
                Ok((fresh, true))
            }
        }
    }

    /// Pairs `first`, a target or premise of the claim numbered `second`, with it in `db`,
    /// and counts the pair for `first`'s `incoming` entry (`count`), which the commit
    /// writes.
    pub(super) fn add_pair(
        &mut self,
        db: Checked,
        first: &IdKey,
        second: Node,
        count: fn(&mut Incoming),
    ) -> Result<(), IndexError> {
        let (value, _) = self.node_of(first, false)?;
        if !value.claimed {
            if let Some(unclaimed) = self.unclaimed.as_mut() {
                unclaimed.push(*first);
            }
        }
        let key = node_key(value.node);
        db.put(&mut self.txn, &pair(&key, &node_key(second)), &[])?;
        count(self.counted.entry(value.node).or_default());
        Ok(())
    }

    /// Adds the pairs counted in this transaction to the `incoming` entries, in node order:
    /// one update per node however many pairs named it, and one pass through the table.
    pub(super) fn write_counts(&mut self) -> Result<(), IndexError> {
        let mut counted: Vec<(Node, Incoming)> = self.counted.drain().collect();
        counted.sort_unstable_by_key(|&(node, _)| node);
        for (node, more) in counted {
            let mut incoming = incoming_in(&self.txn, &self.dbs, node)?;
            incoming.add(more);
            self.dbs
                .incoming
                .put(&mut self.txn, &node_key(node), &encode(&incoming))?;
        }
        Ok(())
    }

    /// Records what says which log this is: the first record's chain value, and where each
    /// trust event sits.
    pub(super) fn note_record(
        &mut self,
        pos: Position,
        chain: Chain,
        trust_event: bool,
    ) -> Result<(), IndexError> {
        // Envelopes after the first record write nothing here: a bulk add pays no lookup.
        if pos.n != 0 && !trust_event {
            return Ok(());
        }
        if pos.n == 0 {
            self.dbs
                .meta
                .put(&mut self.txn, ORIGIN_KEY, &encode(&chain))?;
        }
        let mut events: Vec<TrustEventAt> = match self.dbs.meta.get(&self.txn, TRUST_EVENTS_KEY)? {
            Some(b) if pos.n != 0 => decode(b, "meta/trust_events")?,
            _ => Vec::new(),
        };
        if trust_event {
            events.push((pos, chain));
        }
        self.dbs
            .meta
            .put(&mut self.txn, TRUST_EVENTS_KEY, &encode(&events))?;
        Ok(())
    }

    /// Writes the meta entry and commits.
    pub fn commit(mut self) -> Result<Meta, IndexError> {
        self.write_counts()?;
        let meta = self.meta;
        self.dbs.meta.put(&mut self.txn, b"meta", &encode(&meta))?;
        self.dbs
            .meta
            .put(&mut self.txn, b"format", &encode(&FORMAT))?;
        unsynced::mark(self.unsynced)?;
        self.txn.commit()?;
        Ok(meta)
    }
}

impl Apply for Writer<'_> {
    fn apply_envelope(
        &mut self,
        pos: Position,
        chain: Chain,
        frame_len: u64,
        digest: &[u8; 32],
        accepted: &Accepted,
    ) -> Result<(), IndexError> {
        let (id, envelope) = self.meta.next_envelope(&accepted.claim, digest)?;
        let number = envelope.number;
        // Numbers only grow: append mode fills pages instead of splitting them.
        self.dbs.envelope_order.put_with_flags(
            &mut self.txn,
            PutFlags::APPEND,
            &number.to_be_bytes(),
            &encode(&OrderEntry { claim: id, pos }),
        )?;
        self.meta.counts.envelopes += 1;
        let (value, numbered_now) = self.node_of(&id, true)?;
        let key = node_key(value.node);
        if value.claimed && !numbered_now {
            // A later envelope of a stored claim: its signers join the claim's.
            let mut stored: ClaimEntry = match entry_at(&self.txn, &self.dbs, &id, value)? {
                Some((_, b)) => decode(b, &format!("claims/{}", id_text(&id)))?,
                None => return Err(IndexError::Inconsistent("a claim vanished".into())),
            };
            stored.add_envelope(&id, envelope, &accepted.signers)?;
            self.dbs.claims.put(&mut self.txn, &key, &encode(&stored))?;
        } else {
            // A claim the log named before it arrived is a stored one now.
            if !numbered_now {
                let claimed = NodeValue {
                    claimed: true,
                    ..value
                };
                self.dbs.nodes.put(&mut self.txn, &id, &claimed.encode())?;
            }
            let entry = ClaimEntry::first(id, accepted, pos, self.meta.counts.claims, envelope);
            // A claim the log never named before has the largest node: its entry goes at the
            // end.
            let flags = if numbered_now {
                PutFlags::APPEND
            } else {
                PutFlags::empty()
            };
            self.dbs
                .claims
                .put_with_flags(&mut self.txn, flags, &key, &encode(&entry))?;
            self.dbs.arrivals.put_with_flags(
                &mut self.txn,
                PutFlags::APPEND,
                &entry.seq.to_be_bytes(),
                &id,
            )?;
            for t in distinct(&entry.target) {
                self.add_pair(self.dbs.by_target, &t, value.node, Incoming::count_record)?;
            }
            for p in distinct(&entry.depends_on) {
                self.add_pair(
                    self.dbs.by_premise,
                    &p,
                    value.node,
                    Incoming::count_dependent,
                )?;
            }
            self.meta.counts.claims += 1;
        }
        self.meta.advance(pos, chain, frame_len);
        self.note_record(pos, chain, false)
    }

    fn apply_key_add(
        &mut self,
        pos: Position,
        chain: Chain,
        frame_len: u64,
        key: &crate::store::record::KeyAdd,
    ) -> Result<(), IndexError> {
        let entry = KeyEntry::added(pos, key)?;
        match self.dbs.keys.get(&self.txn, key.keyid.as_bytes())? {
            None => {
                self.dbs
                    .keys
                    .put(&mut self.txn, key.keyid.as_bytes(), &encode(&entry))?;
                self.meta.count_key();
            }
            Some(v) => {
                let mut held: KeyEntry = decode(v, "keys")?;
                if held.regrant(key) {
                    self.dbs
                        .keys
                        .put(&mut self.txn, key.keyid.as_bytes(), &encode(&held))?;
                }
            }
        }
        self.meta.advance_past_trust_event(pos, chain, frame_len);
        self.note_record(pos, chain, true)
    }

    fn apply_key_retire(
        &mut self,
        pos: Position,
        chain: Chain,
        frame_len: u64,
        keyid: &str,
    ) -> Result<(), IndexError> {
        if let Some(v) = self.dbs.keys.get(&self.txn, keyid.as_bytes())? {
            let mut entry: KeyEntry = decode(v, "keys")?;
            if entry.retire(pos) {
                self.dbs
                    .keys
                    .put(&mut self.txn, keyid.as_bytes(), &encode(&entry))?;
            }
        }
        self.meta.advance_past_trust_event(pos, chain, frame_len);
        self.note_record(pos, chain, true)
    }

    fn apply_trust_record(
        &mut self,
        pos: Position,
        chain: Chain,
        frame_len: u64,
    ) -> Result<(), IndexError> {
        self.meta.advance_past_trust_event(pos, chain, frame_len);
        self.note_record(pos, chain, true)
    }

    fn keys(&self) -> Result<Vec<KeyEntry>, IndexError> {
        keys_in(&self.txn, &self.dbs, self.meta.counts.keys)
    }
}
