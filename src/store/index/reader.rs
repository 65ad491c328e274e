//! Reading the index: [`Reader`], one read transaction (or the thread's pinned one,
//! [`Pin`]).

use super::codec::{
    checked, decode, id_text, node_key, node_of_key, node_value, AncestryEntry, Checked,
    ClaimEdges, ClaimEntry, ClaimRef, EdgesRef, EnvelopeEntry, IdKey, Incoming, KeyEntry, Meta,
    Node, NodeValue, OrderEntry, Table, TrustEventAt, CHECK_LEN, ORIGIN_KEY, TRUST_EVENTS_KEY,
};
use super::{fault, Dbs, Index, IndexError};
use crate::claim::Kind;
use crate::store::log::Chain;
use heed::{RoTxn, WithTls};
use std::cell::RefCell;
use std::ops::Bound;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;

impl Index {
    pub fn read(&self) -> Result<Reader<'_>, IndexError> {
        let pinned = PINNED.with(|p| {
            p.borrow()
                .iter()
                .find(|(dir, _)| dir.as_path() == self.env().path())
                .map(|(_, txn)| txn.clone())
        });
        let active = fault::Active::new(&self.opened.watched);
        let txn = match pinned {
            Some(txn) => Txn::Pinned(txn),
            None => Txn::Own(self.begin(|env| env.read_txn())?),
        };
        Ok(Reader {
            txn,
            dbs: self.dbs,
            _active: active,
        })
    }

    /// Whether this thread holds a pin ([`Index::pin`]) of this index.
    pub fn is_pinned(&self) -> bool {
        PINNED.with(|p| {
            p.borrow()
                .iter()
                .any(|(dir, _)| dir.as_path() == self.env().path())
        })
    }

    /// Makes every read of this index on this thread one transaction, until the [`Pin`] is
    /// dropped: what a command answers is then one state of the index, whatever a writer
    /// commits meanwhile.
    pub fn pin(&self) -> Result<Pin, IndexError> {
        let dir = self.env().path().to_path_buf();
        let active = fault::Active::new(&self.opened.watched);
        let txn = self.begin(|env| env.clone().static_read_txn())?;
        PINNED.with(|p| p.borrow_mut().push((dir.clone(), Rc::new(txn))));
        // The pin holds the transaction from here, and releases it when dropped.
        std::mem::forget(active);
        Ok(Pin {
            dir,
            watched: self.opened.watched.clone(),
        })
    }
}

/// The index format recorded in `meta` (0 when none is: an index from before formats).
pub(super) fn read_format(txn: &RoTxn, dbs: &Dbs) -> Result<u32, IndexError> {
    let Some(raw) = dbs.meta.0.get(txn, b"format")? else {
        return Ok(0);
    };
    match checked(dbs.meta.1, b"format", raw) {
        Ok(b) => decode(b, "format"),
        // Formats before 4 kept no checksums: the number alone; format 4's checksums left
        // out the table. Such an index is rebuilt for its format, not reported as damaged.
        Err(e) => match postcard::take_from_bytes::<u32>(raw) {
            Ok((old, [])) if old < 4 => Ok(old),
            Ok((4, check)) if check.len() == CHECK_LEN => {
                let value = &raw[..raw.len() - CHECK_LEN];
                let crc = crc32c::crc32c_append(crc32c::crc32c(b"format"), value);
                if crc.to_le_bytes() == check {
                    Ok(4)
                } else {
                    Err(e)
                }
            }
            _ => Err(e),
        },
    }
}

pub(super) fn read_meta(txn: &RoTxn, dbs: &Dbs) -> Result<Meta, IndexError> {
    match dbs.meta.get(txn, b"meta")? {
        None => Ok(Meta::EMPTY),
        Some(b) => decode(b, "meta"),
    }
}

/// What `nodes` says of `id`, read in any transaction; None when the log never named it.
pub(super) fn node_in(txn: &RoTxn, dbs: &Dbs, id: &IdKey) -> Result<Option<NodeValue>, IndexError> {
    dbs.nodes
        .get(txn, id)?
        .map(|v| node_value(id, v))
        .transpose()
}

/// What `nodes` says of an id that the index itself names (a stored claim's target or
/// premise, a record's claim): the log named it, so a lookup that misses is damage (a
/// damaged page sent it past the entry), never an id the log does not know.
pub(super) fn named_node_in(txn: &RoTxn, dbs: &Dbs, id: &IdKey) -> Result<NodeValue, IndexError> {
    node_in(txn, dbs, id)?.ok_or_else(|| {
        IndexError::Inconsistent(format!(
            "the index names {} and its nodes table has no entry for it",
            id_text(id)
        ))
    })
}

/// The encoded entry of the claim `id`, whose `nodes` entry is `value`: there exactly when
/// `nodes` says the log holds the claim (a lookup that misses it is damage), and holding
/// that claim's id.
pub(super) fn entry_at<'t>(
    txn: &'t RoTxn,
    dbs: &Dbs,
    id: &IdKey,
    value: NodeValue,
) -> Result<Option<(Node, &'t [u8])>, IndexError> {
    if !value.claimed {
        return Ok(None);
    }
    match dbs.claims.get(txn, &node_key(value.node))? {
        Some(b) if b.starts_with(id) => Ok(Some((value.node, b))),
        Some(_) => Err(IndexError::Inconsistent(format!(
            "the claims entry of node {} is not {}'s",
            value.node,
            id_text(id)
        ))),
        None => Err(IndexError::Inconsistent(format!(
            "its nodes table lists claim {} as node {} and its claims table has no entry \
             for it",
            id_text(id),
            value.node
        ))),
    }
}

/// The encoded entry of the claim `id` (none when `id` is no stored claim) in any transaction.
pub(super) fn entry_bytes<'t>(
    txn: &'t RoTxn,
    dbs: &Dbs,
    id: &IdKey,
) -> Result<Option<(Node, &'t [u8])>, IndexError> {
    match node_in(txn, dbs, id)? {
        None => Ok(None),
        Some(value) => entry_at(txn, dbs, id, value),
    }
}

/// A claim's entry, read in any transaction (a reader's or the writer's).
pub(super) fn claim_in(
    txn: &RoTxn,
    dbs: &Dbs,
    id: &IdKey,
) -> Result<Option<ClaimEntry>, IndexError> {
    match entry_bytes(txn, dbs, id)? {
        None => Ok(None),
        Some((_, b)) => decode_claim(b, id).map(Some),
    }
}

/// A claims entry decoded; the id is made text only to name a failure.
fn decode_claim(bytes: &[u8], id: &IdKey) -> Result<ClaimEntry, IndexError> {
    decode(bytes, "claims").map_err(|e| match e {
        IndexError::Decode { why, .. } => IndexError::Decode {
            what: format!("claims/{}", id_text(id)),
            why,
        },
        e => e,
    })
}

/// The trust state, read in any transaction: `expected` keys (the count `meta` keeps), or
/// the walk was sent past some of them, which is damage.
pub(super) fn keys_in(txn: &RoTxn, dbs: &Dbs, expected: u64) -> Result<Vec<KeyEntry>, IndexError> {
    let mut out = Vec::new();
    for item in dbs.keys.iter(txn)? {
        let (_, v) = item?;
        out.push(decode(v, "keys")?);
    }
    found_all("keys", || "the trust state", expected, out.len())?;
    Ok(out)
}

/// The count of the pairs naming the node `node`, in any transaction: every node the log
/// named has one, so a lookup that misses it is damage.
pub(super) fn incoming_in(txn: &RoTxn, dbs: &Dbs, node: Node) -> Result<Incoming, IndexError> {
    match dbs.incoming.get(txn, &node_key(node))? {
        Some(v) => decode(v, "incoming"),
        None => Err(IndexError::Inconsistent(format!(
            "its incoming table has no entry for node {node}"
        ))),
    }
}

/// Checks that a read found the `expected` entries another entry counts: fewer (or more) is
/// damage, never an answer.
/// `of` names what was counted; it is only called to say so (an id's text costs more than
/// the check).
pub(super) fn found_all<S: std::fmt::Display>(
    table: &str,
    of: impl FnOnce() -> S,
    expected: u64,
    found: usize,
) -> Result<(), IndexError> {
    if found as u64 == expected {
        return Ok(());
    }
    Err(IndexError::Inconsistent(format!(
        "{table} holds {found} entries for {} where the index counts {expected}",
        of()
    )))
}

/// A consistent view of the index (one LMDB read transaction).
pub struct Reader<'e> {
    pub(super) txn: Txn<'e>,
    pub(super) dbs: Dbs,
    pub(super) _active: fault::Active<'e>,
}

/// A read transaction of the reader's own, or the one pinned for the thread ([`Index::pin`]).
pub(super) enum Txn<'e> {
    Own(RoTxn<'e, WithTls>),
    Pinned(Rc<RoTxn<'static, WithTls>>),
}

impl<'e> std::ops::Deref for Txn<'e> {
    type Target = RoTxn<'e, WithTls>;
    fn deref(&self) -> &RoTxn<'e, WithTls> {
        match self {
            Txn::Own(t) => t,
            Txn::Pinned(t) => t,
        }
    }
}

thread_local! {
    /// The read transaction pinned on this thread, by the environment's folder.
    static PINNED: RefCell<Vec<(PathBuf, Rc<RoTxn<'static, WithTls>>)>> =
        const { RefCell::new(Vec::new()) };
}

/// While it lives, every read of its index on this thread is one transaction: a command's
/// answer is a snapshot of one state of the index ([`Index::pin`]).
pub struct Pin {
    dir: PathBuf,
    /// The pinned transaction's environment, released when the transaction ends.
    watched: Arc<fault::Watched>,
}

impl Drop for Pin {
    fn drop(&mut self) {
        PINNED.with(|p| p.borrow_mut().retain(|(dir, _)| dir != &self.dir));
        self.watched.release();
    }
}

impl Reader<'_> {
    pub fn meta(&self) -> Result<Meta, IndexError> {
        read_meta(&self.txn, &self.dbs)
    }

    /// The layout version the index was written in (0: from before versions were recorded).
    pub fn format(&self) -> Result<u32, IndexError> {
        read_format(&self.txn, &self.dbs)
    }

    /// The chain value of the first record of the log the index was built from (None: an
    /// empty log, or an index written before this was recorded).
    pub fn origin(&self) -> Result<Option<Chain>, IndexError> {
        self.dbs
            .meta
            .get(&self.txn, ORIGIN_KEY)?
            .map(|b| decode(b, "meta/origin"))
            .transpose()
    }

    /// The trust events applied, in log order (None: an index written before they were
    /// recorded).
    pub fn trust_events(&self) -> Result<Option<Vec<TrustEventAt>>, IndexError> {
        self.dbs
            .meta
            .get(&self.txn, TRUST_EVENTS_KEY)?
            .map(|b| decode(b, "meta/trust_events"))
            .transpose()
    }

    pub fn claim(&self, id: &IdKey) -> Result<Option<ClaimEntry>, IndexError> {
        claim_in(&self.txn, &self.dbs, id)
    }

    /// The entry of a claim that the index itself names (a stored claim's target or
    /// premise, a record a pair names): None when the log names it and does not hold it; a
    /// lookup that does not find the id at all is damage.
    pub fn named_claim(&self, id: &IdKey) -> Result<Option<ClaimEntry>, IndexError> {
        let value = named_node_in(&self.txn, &self.dbs, id)?;
        match entry_at(&self.txn, &self.dbs, id, value)? {
            None => Ok(None),
            Some((_, b)) => decode_claim(b, id).map(Some),
        }
    }

    /// [`Reader::named_claim`] without decoding the whole entry: the claim's node and its
    /// id, kind and edges (see [`EdgesRef`]), borrowed from the transaction.
    pub fn named_claim_edges<'t>(
        &'t self,
        id: &IdKey,
    ) -> Result<Option<(Node, EdgesRef<'t>)>, IndexError> {
        let value = named_node_in(&self.txn, &self.dbs, id)?;
        match entry_at(&self.txn, &self.dbs, id, value)? {
            None => Ok(None),
            Some((node, b)) => EdgesRef::decode(&node_key(node), b).map(|e| Some((node, e))),
        }
    }

    /// The node of `id`; None when the log never named it.
    pub fn node(&self, id: &IdKey) -> Result<Option<Node>, IndexError> {
        Ok(self.node_value(id)?.map(|v| v.node))
    }

    /// What `nodes` keeps of `id` (its node, and whether the log holds its claim); None when
    /// the log never named it.
    pub fn node_value(&self, id: &IdKey) -> Result<Option<NodeValue>, IndexError> {
        node_in(&self.txn, &self.dbs, id)
    }

    /// The node of the stored claim `id`; None when no such claim is stored.
    pub fn claim_node(&self, id: &IdKey) -> Result<Option<Node>, IndexError> {
        Ok(entry_bytes(&self.txn, &self.dbs, id)?.map(|(node, _)| node))
    }

    /// A claim's id, kind and edges (see [`ClaimEdges`]), without decoding the whole entry.
    pub fn claim_edges(&self, id: &IdKey) -> Result<Option<ClaimEdges>, IndexError> {
        match entry_bytes(&self.txn, &self.dbs, id)? {
            None => Ok(None),
            Some((node, b)) => EdgesRef::decode(&node_key(node), b).map(|e| Some(e.to_owned())),
        }
    }

    /// The id and kind of the claim numbered `node`; None when that node is no stored claim
    /// (an id named only as a target or premise).
    pub fn node_claim(&self, node: Node) -> Result<Option<(IdKey, Kind)>, IndexError> {
        let key = node_key(node);
        match self.dbs.claims.get(&self.txn, &key)? {
            None => Ok(None),
            Some(b) => EdgesRef::decode(&key, b).map(|e| Some((*e.id, e.kind))),
        }
    }

    /// Visits the entries of `table` whose keys begin with one of the nodes `keys`, which
    /// must be sorted ascending without repeats, as `f(position in keys, entry key, entry
    /// value)`, in key order. One cursor moves forward through the table: a key near the last
    /// one is reached by stepping, a far one by a fresh seek after a few steps ([`Table`]),
    /// so the cost grows with `keys` and what they hold, never with the table. When the keys
    /// are sparse in the claims table, whose keys are whole nodes, each is looked up instead.
    pub fn walk_sorted<'t>(
        &'t self,
        table: Table,
        keys: &[Node],
        mut f: impl FnMut(usize, &[u8], &'t [u8]) -> Result<(), IndexError>,
    ) -> Result<(), IndexError> {
        let db = match table {
            Table::Claims => self.dbs.claims,
            Table::Targets => self.dbs.by_target,
            Table::Premises => self.dbs.by_premise,
            Table::Incoming => self.dbs.incoming,
            Table::Ancestry => self.dbs.ancestry,
        };
        let Some(&first) = keys.first() else {
            return Ok(());
        };
        // When the keys are sparse in the table (on average more entries between two of them
        // than steps allowed), stepping first would only add to every seek: seek at once.
        // Nodes are numbered densely, and each numbers at most one claim and few pairs, so the
        // span of the keys tells how far apart they lie, wherever they are in the table.
        let span = keys.last().map_or(0, |&last| last.saturating_sub(first)) + 1;
        let gap = span / keys.len() as u64;
        let max_steps = if gap > table.steps() as u64 {
            0
        } else {
            table.steps()
        };
        // A claim's key is its whole node, so there a seek is a lookup, which needs no cursor
        // of its own (a fresh cursor per seek was most of a sparse walk's cost).
        if max_steps == 0 && matches!(table, Table::Claims | Table::Incoming | Table::Ancestry) {
            for (i, &n) in keys.iter().enumerate() {
                let k = node_key(n);
                if let Some(v) = db.get(&self.txn, &k)? {
                    f(i, &k, v)?;
                }
            }
            return Ok(());
        }
        // The walk steps over entries of other keys without checking them (they are not
        // read); each entry handed to `f` is checked.
        let (raw, table_number) = (db.0, db.1);
        let seek = |k: &[u8]| raw.range(&self.txn, &(Bound::Included(k), Bound::Unbounded));
        let mut it = seek(&node_key(first))?;
        let mut cur = it.next().transpose()?;
        for (i, &n) in keys.iter().enumerate() {
            let k = node_key(n);
            let mut steps = 0;
            while let Some((ek, _)) = cur {
                if ek >= &k[..] {
                    break;
                }
                if steps == max_steps {
                    it = seek(&k)?;
                    cur = it.next().transpose()?;
                    break;
                }
                steps += 1;
                cur = it.next().transpose()?;
            }
            while let Some((ek, ev)) = cur {
                if !ek.starts_with(&k) {
                    break;
                }
                f(i, ek, checked(table_number, ek, ev)?)?;
                cur = it.next().transpose()?;
            }
            if cur.is_none() {
                // The table ends before the remaining keys.
                break;
            }
        }
        Ok(())
    }

    /// Every claim entry, in node order: one walk of the claims table, not a lookup per id.
    /// `meta` counts the claims, so a walk that a damaged page sends past some of them (or
    /// that finds more) is damage, never a shorter answer.
    /// Each entry is read in place: its fields borrowed from this transaction
    /// ([`ClaimRef`]), nothing copied, decoded on every core.
    pub fn all_claim_refs(&self) -> Result<Vec<ClaimRef<'_>>, IndexError> {
        use rayon::prelude::*;
        let expected = self.meta()?.counts.claims;
        // The walk is one cursor; the entries it finds are decoded on every core.
        let mut raw = Vec::with_capacity(usize::try_from(expected).unwrap_or(0));
        for item in self.dbs.claims.iter(&self.txn)? {
            let (k, v) = item?;
            let node = node_of_key(k).ok_or_else(|| IndexError::Decode {
                what: "claims".into(),
                why: format!("a key of {} bytes", k.len()),
            })?;
            raw.push((node, v));
        }
        found_all("claims", || "the log", expected, raw.len())?;
        // Decoded straight into the one vector of entries the caller keeps.
        fn one<'t>(&(node, v): &(Node, &'t [u8])) -> Result<ClaimRef<'t>, IndexError> {
            ClaimRef::decode(node, v)
        }
        match raw.par_iter().map(one).collect::<Result<Vec<_>, _>>() {
            Ok(entries) => Ok(entries),
            // The first entry that does not decode, in the table's order, is the one named.
            Err(any) => Err(raw.iter().map(one).find_map(Result::err).unwrap_or(any)),
        }
    }

    pub fn has_claim(&self, id: &IdKey) -> Result<bool, IndexError> {
        Ok(entry_bytes(&self.txn, &self.dbs, id)?.is_some())
    }

    /// Whether the claim `id` is stored with the envelope whose digest is `digest`.
    pub fn holds_envelope(&self, id: &IdKey, digest: &[u8; 32]) -> Result<bool, IndexError> {
        Ok(self
            .claim(id)?
            .is_some_and(|e| e.envelopes.iter().any(|x| &x.digest == digest)))
    }

    /// The envelope with this number, which the index says exists.
    pub(super) fn numbered_envelope(&self, number: u64) -> Result<EnvelopeEntry, IndexError> {
        let v = self
            .dbs
            .envelope_order
            .get(&self.txn, &number.to_be_bytes())?
            .ok_or_else(|| IndexError::Decode {
                what: format!("envelope_order/{number}"),
                why: "missing, though an index entry names it".into(),
            })?;
        let e: OrderEntry = decode(v, "envelope_order")?;
        Ok(EnvelopeEntry {
            claim: e.claim,
            pos: e.pos,
            number,
        })
    }

    /// Second halves of the pair keys starting with the node `first`.
    pub(super) fn paired_nodes(&self, db: Checked, first: Node) -> Result<Vec<Node>, IndexError> {
        pairs_in(&self.txn, db, first)
    }

    /// The ids of the claims paired with `first` in a pair table, sorted. The `incoming`
    /// table counts the pairs of every id the log names (`count`): a read that finds another
    /// number was sent past some of them by a damaged page, which is damage.
    pub(super) fn pairs(
        &self,
        db: Checked,
        count: fn(&Incoming) -> u64,
        first: &IdKey,
    ) -> Result<Vec<IdKey>, IndexError> {
        let Some(node) = self.node(first)? else {
            return Ok(Vec::new());
        };
        let expected = count(&incoming_in(&self.txn, &self.dbs, node)?);
        let seconds = self.paired_nodes(db, node)?;
        found_all(
            pair_table(db, &self.dbs),
            || id_text(first),
            expected,
            seconds.len(),
        )?;
        let mut out = Vec::with_capacity(seconds.len());
        for second in seconds {
            // The second of a pair is always a stored claim (the record or the dependent).
            let (id, _) = self.node_claim(second)?.ok_or_else(|| {
                IndexError::Inconsistent(format!(
                    "a pair names node {second}, and its claims table has no entry for it"
                ))
            })?;
            out.push(id);
        }
        out.sort_unstable();
        Ok(out)
    }

    /// What `nodes` says of an id that the index itself names (a stored claim's premise or
    /// target): its node, and whether the log holds it as a claim. A lookup that misses is
    /// damage, never an id the log does not know.
    pub fn named_node(&self, id: &IdKey) -> Result<NodeValue, IndexError> {
        named_node_in(&self.txn, &self.dbs, id)
    }

    /// What a walk up premises reads of the claim numbered `node`: its [`AncestryEntry`],
    /// and the nodes of the records targeting it, in node order, as many as its `incoming`
    /// entry counts. None when the log names the node without holding its claim; a node
    /// with a claims entry and no ancestry entry is damage. The record pairs are read only
    /// when the count says there are some: damage hides entries from a read, it does not
    /// add them, so a count of none leaves nothing to look for.
    pub fn ancestry_step(
        &self,
        node: Node,
    ) -> Result<Option<(AncestryEntry, Vec<Node>)>, IndexError> {
        let key = node_key(node);
        let Some(value) = self.dbs.ancestry.get(&self.txn, &key)? else {
            self.without_ancestry(node)?;
            return Ok(None);
        };
        let entry = AncestryEntry::decode(node, value)?;
        let expected = incoming_in(&self.txn, &self.dbs, node)?.records;
        let records = if expected == 0 {
            Vec::new()
        } else {
            self.paired_nodes(self.dbs.by_target, node)?
        };
        found_all("by_target", || id_text(&entry.id), expected, records.len())?;
        Ok(Some((entry, records)))
    }

    /// What a node without an `ancestry` entry is: a premise the log names and does not
    /// hold, unless the claims table holds its claim, which is damage.
    pub fn without_ancestry(&self, node: Node) -> Result<(), IndexError> {
        match self.dbs.claims.get(&self.txn, &node_key(node))? {
            None => Ok(()),
            Some(_) => Err(IndexError::Inconsistent(format!(
                "its claims table holds node {node} and its ancestry table has no entry for it"
            ))),
        }
    }

    /// The id of the stored claim numbered `node` (a record a pair names): a node without a
    /// claims entry is damage.
    pub fn node_id(&self, node: Node) -> Result<IdKey, IndexError> {
        self.node_claim(node)?.map(|(id, _)| id).ok_or_else(|| {
            IndexError::Inconsistent(format!(
                "a pair names node {node}, and its claims table has no entry for it"
            ))
        })
    }

    pub fn records_targeting(&self, id: &IdKey) -> Result<Vec<IdKey>, IndexError> {
        self.pairs(self.dbs.by_target, |i| i.records, id)
    }

    /// The nodes of the records targeting the stored claim numbered `node`, in node order,
    /// and its kind. The claim's entry must be there and its `incoming` entry count those
    /// records: the caller knows the node to be a stored claim (a member of a closure, a
    /// record), so anything else is damage.
    pub fn claim_records(&self, node: Node) -> Result<(Vec<Node>, Kind), IndexError> {
        let key = node_key(node);
        let entry = self.dbs.claims.get(&self.txn, &key)?.ok_or_else(|| {
            IndexError::Inconsistent(format!(
                "a pair names node {node}, and its claims table has no entry for it"
            ))
        })?;
        let edges = EdgesRef::decode(&key, entry)?;
        Ok((self.records_of(node, edges.id)?, edges.kind))
    }

    /// [`Reader::claim_records`] of a stored claim whose entry the caller has read already
    /// (`id` is its id): the nodes of the records targeting it, checked against their count
    /// in `incoming`, without reading the entry again.
    pub fn records_of(&self, node: Node, id: &IdKey) -> Result<Vec<Node>, IndexError> {
        let expected = incoming_in(&self.txn, &self.dbs, node)?.records;
        let records = self.paired_nodes(self.dbs.by_target, node)?;
        found_all("by_target", || id_text(id), expected, records.len())?;
        Ok(records)
    }

    pub fn dependents(&self, id: &IdKey) -> Result<Vec<IdKey>, IndexError> {
        self.pairs(self.dbs.by_premise, |i| i.dependents, id)
    }

    /// The envelopes of a claim, in log order.
    pub fn claim_envelopes(&self, id: &IdKey) -> Result<Vec<EnvelopeEntry>, IndexError> {
        let Some(entry) = self.claim(id)? else {
            return Ok(Vec::new());
        };
        entry
            .envelopes
            .iter()
            .map(|e| self.numbered_envelope(e.number))
            .collect()
    }

    /// Values of a database keyed by a big-endian number, from number `from` on, at most
    /// `limit`, each decoded by `value`.
    /// The numbers run from 0 to `total` - 1 without a gap: any other key, or fewer entries,
    /// is damage.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn numbered<T>(
        &self,
        db: Checked,
        what: &str,
        total: u64,
        from: u64,
        limit: usize,
        value: impl Fn(&[u8]) -> Result<T, IndexError>,
    ) -> Result<Vec<(u64, T)>, IndexError> {
        let gap = |n: u64| IndexError::Decode {
            what: format!("{what}/{n}"),
            why: "missing: the numbers have a gap".into(),
        };
        let mut out = Vec::new();
        let start = from.to_be_bytes();
        for item in db
            .range(&self.txn, &(Bound::Included(&start[..]), Bound::Unbounded))?
            .take(limit)
        {
            let (k, v) = item?;
            let n = u64::from_be_bytes(k.try_into().map_err(|_| IndexError::Decode {
                what: what.to_owned(),
                why: "key is not 8 bytes".into(),
            })?);
            let want = from + out.len() as u64;
            if n != want {
                return Err(gap(want));
            }
            out.push((n, value(v)?));
        }
        let want = total.saturating_sub(from).min(limit as u64);
        if (out.len() as u64) < want {
            return Err(gap(from + out.len() as u64));
        }
        Ok(out)
    }

    /// Claim ids in arrival order from arrival number `from`, at most `limit`.
    pub fn arrivals(&self, from: u64, limit: usize) -> Result<Vec<(u64, IdKey)>, IndexError> {
        let total = self.meta()?.counts.claims;
        self.numbered(self.dbs.arrivals, "arrivals", total, from, limit, |v| {
            v.try_into().map_err(|_| IndexError::Decode {
                what: "arrivals".into(),
                why: "value is not 32 bytes".into(),
            })
        })
    }

    /// Envelopes in log order from envelope number `from`, at most `limit`.
    pub fn envelope_order(
        &self,
        from: u64,
        limit: usize,
    ) -> Result<Vec<EnvelopeEntry>, IndexError> {
        let total = self.meta()?.counts.envelopes;
        Ok(self
            .numbered(
                self.dbs.envelope_order,
                "envelope_order",
                total,
                from,
                limit,
                |v| decode::<OrderEntry>(v, "envelope_order"),
            )?
            .into_iter()
            .map(|(number, e)| EnvelopeEntry {
                claim: e.claim,
                pos: e.pos,
                number,
            })
            .collect())
    }

    /// Ids whose hex starts with `hex_prefix`, at most `limit`.
    pub fn ids_with_prefix(
        &self,
        hex_prefix: &str,
        limit: usize,
    ) -> Result<Vec<IdKey>, IndexError> {
        let even = hex_prefix.len() / 2 * 2;
        let Ok(bytes) = hex::decode(&hex_prefix[..even]) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for item in self.dbs.nodes.prefix_iter(&self.txn, &bytes)? {
            let (k, v) = item?;
            if !hex::encode(k).starts_with(hex_prefix) {
                continue;
            }
            let id: IdKey = k.try_into().map_err(|_| IndexError::Decode {
                what: "nodes entry".into(),
                why: "key is not 32 bytes".into(),
            })?;
            // Ids named only as targets or premises have a node and no claim.
            if node_value(&id, v)?.claimed {
                out.push(id);
                if out.len() >= limit {
                    break;
                }
            }
        }
        Ok(out)
    }

    pub fn keys(&self) -> Result<Vec<KeyEntry>, IndexError> {
        keys_in(&self.txn, &self.dbs, self.meta()?.counts.keys)
    }

    pub fn key(&self, keyid: &str) -> Result<Option<KeyEntry>, IndexError> {
        match self.dbs.keys.get(&self.txn, keyid.as_bytes())? {
            None => Ok(None),
            Some(v) => decode(v, "keys").map(Some),
        }
    }
}

/// Second halves of the pair keys of `db` starting with the node `first`, in any
/// transaction. A range, not a prefix walk: the entry after the last pair is read (and its
/// checksum checked) too, so a pair whose first half a flipped bit moved out of the prefix is
/// found damaged instead of silently missing.
pub(super) fn pairs_in(txn: &RoTxn, db: Checked, first: Node) -> Result<Vec<Node>, IndexError> {
    let mut out = Vec::new();
    let prefix = node_key(first);
    for item in db.range(txn, &(Bound::Included(&prefix[..]), Bound::Unbounded))? {
        let (k, _) = item?;
        if !k.starts_with(&prefix) {
            break;
        }
        out.push(second_node(k)?);
    }
    Ok(out)
}

/// The name of a pair table, for messages.
pub(super) fn pair_table(db: Checked, dbs: &Dbs) -> &'static str {
    if db.1 == dbs.by_target.1 {
        "by_target"
    } else {
        "by_premise"
    }
}

/// The second node of a pair key (first node ‖ second node).
pub fn second_node(pair: &[u8]) -> Result<Node, IndexError> {
    Some(pair)
        .filter(|p| p.len() == 16)
        .and_then(|p| node_of_key(&p[8..]))
        .ok_or_else(|| IndexError::Decode {
            what: "pair key".into(),
            why: format!("{} bytes", pair.len()),
        })
}
