//! Writing the index: [`Writer`], one write transaction applying log records in order,
//! and [`Apply`], what the writer and the audit both do with a record.

use super::codec::{
    decode, distinct, encode, id_text, node_key, node_pair, node_value, record_kind_value,
    AncestryEntry, Checked, ClaimEntry, IdKey, Incoming, KeyEntry, Meta, Node, NodeValue,
    OrderEntry, TrustEventAt, FORMAT, ORIGIN_KEY, TRUST_EVENTS_KEY,
};
use super::reader::{claim_in, entry_at, incoming_in, keys_in, read_meta};
use super::{fault, unsynced, Dbs, Index, IndexError};
use crate::claim::Kind;
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
        let budget = self.transaction_budget();
        let mut w = Writer {
            budget,
            txn,
            dbs: self.dbs,
            legacy: self.legacy.clone(),
            meta,
            counted: FxHashMap::default(),
            pairs: Pairs::default(),
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

/// Which pair table a pair goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PairTable {
    /// `by_target`: target node ‖ record node, holding the record's kind.
    Targets(Kind),
    /// `by_premise`: premise node ‖ dependent node.
    Premises,
}

/// Pair keys gathered for the commit, by table.
#[derive(Debug, Default)]
pub(super) struct Pairs {
    targets: Vec<([u8; 16], Kind)>,
    premises: Vec<[u8; 16]>,
}

/// One write transaction over the index, applying log records in order.
pub struct Writer<'e> {
    /// [`Index::transaction_budget`] when the transaction began.
    budget: u64,
    pub(super) txn: RwTxn<'e>,
    /// Pairs counted in this transaction and not yet in `incoming`, by node (written at
    /// commit, [`Writer::write_counts`]).
    pub(super) counted: FxHashMap<Node, Incoming>,
    /// The `by_target` and `by_premise` pairs of the records applied in this transaction,
    /// written at commit in key order ([`Writer::write_pairs`]).
    pub(super) pairs: Pairs,
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
            self.dbs.ancestry,
        ]
        .iter()
        .chain(&self.legacy)
        {
            db.clear(&mut self.txn)?;
        }
        self.meta = Meta::EMPTY;
        self.counted.clear();
        self.pairs = Pairs::default();
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

    /// Pairs `first`, a target or premise of the claim numbered `second`, with it in the
    /// table `to` names, and counts the pair for `first`'s `incoming` entry (`count`); the
    /// commit writes both. Returns `first`'s node.
    pub(super) fn add_pair(
        &mut self,
        to: PairTable,
        first: &IdKey,
        second: Node,
        count: fn(&mut Incoming),
    ) -> Result<Node, IndexError> {
        let (value, _) = self.node_of(first, false)?;
        if !value.claimed {
            if let Some(unclaimed) = self.unclaimed.as_mut() {
                unclaimed.push(*first);
            }
        }
        let key = node_pair(value.node, second);
        match to {
            PairTable::Targets(kind) => self.pairs.targets.push((key, kind)),
            PairTable::Premises => self.pairs.premises.push(key),
        }
        count(self.counted.entry(value.node).or_default());
        Ok(value.node)
    }

    /// Writes the pairs gathered in this transaction, each table's in key order. A new
    /// claim's premise is most often an old claim at a random place of the table; in key
    /// order, the searches of one transaction go down the B-tree from left to right and
    /// meet the pages the last one touched, instead of a random page each (measured at
    /// 950,000 claims: about 4% less CPU time of the appending thread).
    pub(super) fn write_pairs(&mut self) -> Result<(), IndexError> {
        let Pairs {
            mut targets,
            mut premises,
        } = std::mem::take(&mut self.pairs);
        // A record names each target once (`distinct`), so no key repeats with two kinds.
        targets.sort_unstable_by_key(|&(key, _)| key);
        for (key, kind) in &targets {
            self.dbs
                .by_target
                .put(&mut self.txn, key, &record_kind_value(*kind))?;
        }
        premises.sort_unstable();
        for key in &premises {
            self.dbs.by_premise.put(&mut self.txn, key, &[])?;
        }
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

    /// How many bytes of log records this transaction may apply before a long run of them
    /// (a rebuild) commits and begins another: past it, the map could run out of room.
    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// Writes the meta entry and commits.
    pub fn commit(mut self) -> Result<Meta, IndexError> {
        self.write_pairs()?;
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
                self.add_pair(
                    PairTable::Targets(entry.kind),
                    &t,
                    value.node,
                    Incoming::count_record,
                )?;
            }
            let distinct_premises = distinct(&entry.depends_on);
            let mut premises = Vec::with_capacity(distinct_premises.len());
            for p in &distinct_premises {
                premises.push(self.add_pair(
                    PairTable::Premises,
                    p,
                    value.node,
                    Incoming::count_dependent,
                )?);
            }
            let ancestry = AncestryEntry {
                id,
                kind: entry.kind,
                premises,
            };
            // Numbered now, the claim's node is the largest that has an entry here too.
            self.dbs
                .ancestry
                .put_with_flags(&mut self.txn, flags, &key, &ancestry.encode())?;
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

#[cfg(test)]
mod tests {
    use super::super::codec::pair;
    use super::*;
    use crate::claim::{Body, Claim, Kind, OriginKind};
    use crate::ingest::{Read, Signer};
    use crate::keys::Role;
    use crate::store::index::Environments;
    use proptest::prelude::*;

    fn id(n: u8) -> IdKey {
        let mut k = [7u8; 32];
        k[0] = n;
        k
    }

    /// The kind of claim `c`: an assertion when it targets nothing, else a record of one of
    /// the four kinds.
    fn kind_of_claim(c: u8, targets: &[u8]) -> Kind {
        if targets.is_empty() {
            return Kind::Assertion;
        }
        [
            Kind::Verification,
            Kind::Falsification,
            Kind::Supersession,
            Kind::ResidueAcceptance,
        ][usize::from(c % 4)]
    }

    /// Claim `c` of a log, naming `premises` and `targets` (claim numbers, any order; some
    /// the log never holds) as its premises and targets.
    fn accepted(c: u8, premises: &[u8], targets: &[u8]) -> Accepted {
        let ids = |ns: &[u8]| ns.iter().map(|&n| id_text(&id(n))).collect::<Vec<_>>();
        Accepted {
            claim: Claim {
                id: id_text(&id(c)),
                kind: kind_of_claim(c, targets),
                target: ids(targets),
                depends_on: ids(premises),
                origin: OriginKind::AgentAsserted,
                producer: format!("p{c}"),
                anchor_tree: "a".repeat(64),
                timestamp: i64::from(c),
            },
            signers: vec![Signer {
                keyid: "0".repeat(64),
                role: Role::Agent,
                name: "k".into(),
            }],
            unverified_signatures: 0,
            text: Read::Whole(Body::new(
                serde_json::json!({"assertion": {"form": "prose", "text": format!("c{c}")}}),
            )),
        }
    }

    /// A claim of a test log: its number, then the claims it names as premises and targets.
    type Named = (u8, Vec<u8>, Vec<u8>);

    /// Applies `claims` (claim, premises, targets), `per_transaction` records a transaction.
    fn written(claims: &[Named], per_transaction: usize) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
        let tmp = tempfile::tempdir().unwrap();
        let index = Index::open(&Environments::new(), tmp.path()).unwrap();
        for (part, records) in claims.chunks(per_transaction.max(1)).enumerate() {
            let mut w = index.write().unwrap();
            for (i, (c, premises, targets)) in records.iter().enumerate() {
                let n = (part * per_transaction + i) as u64;
                let pos = Position {
                    n,
                    segment: 1,
                    offset: 100 * n,
                };
                let digest = [*c; 32];
                w.apply_envelope(
                    pos,
                    [*c; 32],
                    100,
                    &digest,
                    &accepted(*c, premises, targets),
                )
                .unwrap();
            }
            w.commit().unwrap();
        }
        // Each distinct target and premise of each claim is paired with it, as the reader
        // numbers them; a target's pair holds the record's kind.
        {
            let r = index.read().unwrap();
            let node = |n: u8| node_key(r.node(&id(n)).unwrap().unwrap());
            let expected = |of: fn(&Named) -> &Vec<u8>, value: fn(&Named) -> Vec<u8>| {
                let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = claims
                    .iter()
                    .flat_map(|c| {
                        let mut named = of(c).clone();
                        named.sort_unstable();
                        named.dedup();
                        named
                            .into_iter()
                            .map(|n| (pair(&node(n), &node(c.0)), value(c)))
                    })
                    .collect();
                pairs.sort_unstable();
                pairs
            };
            let stored = |db: Checked| -> Vec<(Vec<u8>, Vec<u8>)> {
                db.iter(&r.txn)
                    .unwrap()
                    .map(|e| {
                        let (k, v) = e.unwrap();
                        (k.to_vec(), v.to_vec())
                    })
                    .collect()
            };
            assert_eq!(stored(r.dbs.by_premise), expected(|c| &c.1, |_| Vec::new()));
            assert_eq!(
                stored(r.dbs.by_target),
                expected(
                    |c| &c.2,
                    |c| record_kind_value(kind_of_claim(c.0, &c.2)).to_vec()
                )
            );
        }
        let t = index.stored_tables();
        drop(index);
        t
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 32, failure_persistence: None, ..ProptestConfig::default() })]

        /// The pairs a transaction gathers and writes at its commit, in key order, are each
        /// claim's distinct targets and premises as the reader numbers them, and make the
        /// same index, byte for byte, as writing each record in a transaction of its own: the
        /// premises and targets named in any order, repeated, named before they arrive or
        /// never stored.
        #[test]
        fn pairs_written_at_commit_make_the_index_one_record_at_a_time_makes(
            claims in prop::collection::vec(
                (prop::collection::vec(0u8..60, 0..4), prop::collection::vec(0u8..60, 0..3)),
                1..40,
            ),
            per_transaction in 2usize..40,
        ) {
            // Claim i is 100 + i. A name below 20 is a claim the log never holds; the others
            // name the claims of the log, earlier or later ones, never the claim itself.
            let named = |me: u8, ns: Vec<u8>| -> Vec<u8> {
                ns.into_iter()
                    .map(|n| if n < 20 { n } else { 80 + n })
                    .filter(|&n| n != me)
                    .collect()
            };
            let claims: Vec<Named> = claims
                .into_iter()
                .enumerate()
                .map(|(i, (p, t))| {
                    let me = 100 + i as u8;
                    (me, named(me, p), named(me, t))
                })
                .collect();
            prop_assert_eq!(written(&claims, per_transaction), written(&claims, 1));
        }
    }
}
