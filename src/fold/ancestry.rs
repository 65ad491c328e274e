//! effective(c) over the store's index, by node number: the road [`Fold::effective`] takes
//! for a store when no compromise is in force.
//!
//! It computes what the fold's walk computes, with two differences of cost only. It reads
//! each claim of the ancestry once, through one read transaction, from the index's
//! `ancestry` table: its id, its kind and its premises by node (never the claim's other
//! fields, and no lookup of a premise by id), and the records targeting it only when some
//! do. And it stops at a claim whose own status is falsified or superseded: such a claim's
//! effective status is its own, whatever lies above it, so the ancestry beyond it is never
//! read. A revoked claim's causes are kept as ids (32 bytes each) and turned into text
//! once, for the claims asked about.
//!
//! [`Fold::effective`]: super::Fold::effective

use super::{Effective, Status};
use crate::claim::Kind;
use crate::store::index::{id_key, id_text, IdKey, IndexError, Node, NodeValue, Reader};
use crate::store::{Store, StoreError};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::collections::BTreeMap;

/// What the walk reads of one stored claim.
struct Entry {
    id: IdKey,
    kind: Kind,
    /// The nodes of its distinct premises, stored or not.
    premises: Vec<Node>,
    /// The records targeting it.
    records: Vec<Node>,
}

/// effective(c) with its causes as ids: for each falsified root, one shortest path from the
/// root to c (ties broken by the smaller sequence of ids).
struct Eff {
    status: Status,
    causes: BTreeMap<IdKey, Vec<IdKey>>,
}

/// What the walks of one [`Fold`](super::Fold) have read and decided, by node, so that a
/// later claim's walk stops at what an earlier one reached (`status --all`, a gate: the
/// ancestry each claim shares with others is read once). Valid for one snapshot of the
/// index, as the fold's own memo is.
#[derive(Default)]
pub struct QuickMemo {
    /// Ids whose node the walks looked up, with whether the log holds the claim (None: the
    /// log never named the id).
    nodes: HashMap<IdKey, Option<NodeValue>>,
    /// Each node read, and its entry (None: the log names it and does not hold its claim).
    entries: HashMap<Node, Option<Entry>>,
    own: HashMap<Node, Status>,
    eff: HashMap<Node, Eff>,
}

struct Walk<'a, 'r> {
    store: &'a Store,
    r: &'a Reader<'r>,
    entries: &'a mut HashMap<Node, Option<Entry>>,
    own: &'a mut HashMap<Node, Status>,
    eff: &'a mut HashMap<Node, Eff>,
}

fn ix<T>(r: Result<T, IndexError>) -> Result<T, StoreError> {
    r.map_err(StoreError::from)
}

/// effective(id) and effective(p) of each premise `p` of `id` the walk decided (all of
/// them, unless `id`'s own status made them irrelevant); None when `id` is no stored claim.
pub(super) fn effective(
    store: &Store,
    id: &str,
    memo: &mut QuickMemo,
) -> Result<Option<Vec<(String, Effective)>>, StoreError> {
    let Some(key) = id_key(id) else {
        return Ok(None);
    };
    let r = ix(store.index().read())?;
    let value = match memo.nodes.get(&key) {
        Some(v) => *v,
        None => {
            let v = ix(r.node_value(&key))?;
            memo.nodes.insert(key, v);
            v
        }
    };
    let Some(NodeValue {
        node,
        claimed: true,
    }) = value
    else {
        return Ok(None);
    };
    let mut w = Walk {
        store,
        r: &r,
        entries: &mut memo.entries,
        own: &mut memo.own,
        eff: &mut memo.eff,
    };
    if !w.load(node)? {
        return Err(w.damaged(format!(
            "its nodes table lists claim {id} as stored at node {node}, and its ancestry \
             table has no entry for it"
        )));
    }
    if w.entry(node).id != key {
        return Err(w.damaged(format!(
            "its ancestry table holds another claim than {id} at node {node}"
        )));
    }
    w.effective(node)?;
    let mut out = Vec::new();
    let premises = w.entry(node).premises.clone();
    for n in std::iter::once(node).chain(premises) {
        if let (Some(e), Some(Some(entry))) = (w.eff.get(&n), w.entries.get(&n)) {
            out.push((id_text(&entry.id), as_text(e)));
        }
    }
    Ok(Some(out))
}

fn as_text(e: &Eff) -> Effective {
    Effective {
        status: e.status,
        causes: e
            .causes
            .iter()
            .map(|(root, path)| (id_text(root), path.iter().map(|k| id_text(k)).collect()))
            .collect(),
    }
}

/// Keeps the shorter path to a root (then the smaller sequence of ids), as the fold does.
fn offer(causes: &mut BTreeMap<IdKey, Vec<IdKey>>, root: &IdKey, path: Vec<IdKey>) {
    match causes.get(root) {
        Some(existing) if (existing.len(), existing) <= (path.len(), &path) => {}
        _ => {
            causes.insert(*root, path);
        }
    }
}

impl Walk<'_, '_> {
    fn damaged(&self, why: String) -> StoreError {
        self.store.index_damaged(&why)
    }

    fn cycle(&self, node: Node) -> StoreError {
        let named = match self.entries.get(&node) {
            Some(Some(e)) => id_text(&e.id),
            _ => format!("node {node}"),
        };
        self.damaged(format!(
            "claim {named} takes part in a cycle, which content addressing makes impossible"
        ))
    }

    /// Reads the claim numbered `node`, once: whether the log holds it.
    fn load(&mut self, node: Node) -> Result<bool, StoreError> {
        if let Some(e) = self.entries.get(&node) {
            return Ok(e.is_some());
        }
        let entry = ix(self.r.ancestry_step(node))?.map(|(a, records)| Entry {
            id: a.id,
            kind: a.kind,
            premises: a.premises,
            records,
        });
        let stored = entry.is_some();
        self.entries.insert(node, entry);
        Ok(stored)
    }

    /// The entry of a node [`Walk::load`] found stored.
    fn entry(&self, node: Node) -> &Entry {
        match self.entries.get(&node) {
            Some(Some(e)) => e,
            _ => unreachable!("node {node} was loaded as a stored claim"),
        }
    }

    /// The records of the stored claim `node`: each one must be stored too (a pair names
    /// only a record the log holds), so one that is not is damage.
    fn records(&mut self, node: Node) -> Result<Vec<Node>, StoreError> {
        let records = self.entry(node).records.clone();
        for &rn in &records {
            if !self.load(rn)? {
                return Err(self.damaged(format!(
                    "a target pair names node {rn} as a record, and the index holds no claim \
                     there"
                )));
            }
        }
        Ok(records)
    }

    /// own(x): what the live records targeting it decide, each record's own status first
    /// (iteratively: a chain of records of any length cannot overflow the stack).
    fn own(&mut self, node: Node) -> Result<Status, StoreError> {
        if let Some(s) = self.own.get(&node) {
            return Ok(*s);
        }
        // A node's records, read on its first visit, ride the stack to its second.
        let mut stack: Vec<(Node, Option<Vec<Node>>)> = vec![(node, None)];
        let mut in_progress: HashSet<Node> = HashSet::default();
        while let Some((x, expanded)) = stack.pop() {
            if self.own.contains_key(&x) {
                continue;
            }
            if let Some(records) = expanded {
                let mut live = Vec::with_capacity(records.len());
                for rn in &records {
                    if !self.own.get(rn).ok_or_else(|| self.cycle(*rn))?.is_live() {
                        continue;
                    }
                    live.push(self.entry(*rn).kind);
                }
                let status = super::own_by_kinds(live);
                self.own.insert(x, status);
                in_progress.remove(&x);
                continue;
            }
            let records = self.records(x)?;
            in_progress.insert(x);
            let at = stack.len();
            stack.push((x, None));
            for &rn in &records {
                if in_progress.contains(&rn) {
                    return Err(self.cycle(rn));
                }
                if !self.own.contains_key(&rn) {
                    stack.push((rn, None));
                }
            }
            stack[at].1 = Some(records);
        }
        self.own.get(&node).copied().ok_or_else(|| self.cycle(node))
    }

    /// The premises of the stored claim `node` that the log holds.
    fn stored_premises(&mut self, node: Node) -> Result<Vec<Node>, StoreError> {
        let named = self.entry(node).premises.clone();
        let mut stored = Vec::with_capacity(named.len());
        for p in named {
            if self.load(p)? {
                stored.push(p);
            }
        }
        Ok(stored)
    }

    /// effective(x) for x and the part of its ancestry it depends on, children first.
    fn effective(&mut self, node: Node) -> Result<(), StoreError> {
        // A node's stored premises, read on its first visit, ride the stack to its second.
        let mut stack: Vec<(Node, Option<Vec<Node>>)> = vec![(node, None)];
        let mut in_progress: HashSet<Node> = HashSet::default();
        while let Some((x, expanded)) = stack.pop() {
            if self.eff.contains_key(&x) {
                continue;
            }
            let own = self.own(x)?;
            if matches!(own, Status::Falsified | Status::Superseded) {
                // Its own status stands whatever its premises are: they are not read.
                self.eff.insert(
                    x,
                    Eff {
                        status: own,
                        causes: BTreeMap::new(),
                    },
                );
                in_progress.remove(&x);
                continue;
            }
            if let Some(premises) = expanded {
                let k = self.entry(x).id;
                let mut causes: BTreeMap<IdKey, Vec<IdKey>> = BTreeMap::new();
                for pn in &premises {
                    let pe = self.eff.get(pn).ok_or_else(|| self.cycle(*pn))?;
                    match pe.status {
                        Status::Falsified => {
                            let pk = self.entry(*pn).id;
                            offer(&mut causes, &pk, vec![pk, k]);
                        }
                        Status::Revoked => {
                            for (root, path) in &pe.causes {
                                let mut longer = Vec::with_capacity(path.len() + 1);
                                longer.extend_from_slice(path);
                                longer.push(k);
                                offer(&mut causes, root, longer);
                            }
                        }
                        _ => {}
                    }
                }
                let status = if causes.is_empty() {
                    own
                } else {
                    Status::Revoked
                };
                self.eff.insert(x, Eff { status, causes });
                in_progress.remove(&x);
                continue;
            }
            let premises = self.stored_premises(x)?;
            in_progress.insert(x);
            let at = stack.len();
            stack.push((x, None));
            for &pn in &premises {
                if in_progress.contains(&pn) {
                    return Err(self.cycle(pn));
                }
                if !self.eff.contains_key(&pn) {
                    stack.push((pn, None));
                }
            }
            stack[at].1 = Some(premises);
        }
        Ok(())
    }
}
