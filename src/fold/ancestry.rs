//! effective(c) over the store's index, by node number: the road [`Fold::effective`] takes
//! for a store when no compromise is in force.
//!
//! It computes what the fold's walk computes, with two differences of cost only. It reads
//! each claim of the ancestry once, through one read transaction, as its kind, the ids of
//! its premises and the nodes of the records targeting it (never the claim's other fields,
//! and no text per claim until the answer). And it stops at a claim whose own status is
//! falsified or superseded: such a claim's effective status is its own, whatever lies above
//! it, so the ancestry beyond it is never read. A revoked claim's causes are kept as ids
//! (32 bytes each) and turned into text once, for the claims asked about.
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
    kind: Kind,
    /// The premises the store holds, as (id, node), in id order, each once.
    premises: Vec<(IdKey, Node)>,
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
    /// Ids whose node the walks looked up, and whether each is a stored claim.
    nodes: HashMap<IdKey, NodeValue>,
    entries: HashMap<Node, Entry>,
    own: HashMap<Node, Status>,
    eff: HashMap<Node, Eff>,
}

struct Walk<'a, 'r> {
    store: &'a Store,
    r: &'a Reader<'r>,
    nodes: &'a mut HashMap<IdKey, NodeValue>,
    entries: &'a mut HashMap<Node, Entry>,
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
    let node = match memo.nodes.get(&key) {
        Some(v) if v.claimed => v.node,
        Some(_) => return Ok(None),
        None => {
            let Some(node) = ix(r.claim_node(&key))? else {
                return Ok(None);
            };
            memo.nodes.insert(
                key,
                NodeValue {
                    node,
                    claimed: true,
                },
            );
            node
        }
    };
    let mut w = Walk {
        store,
        r: &r,
        nodes: &mut memo.nodes,
        entries: &mut memo.entries,
        own: &mut memo.own,
        eff: &mut memo.eff,
    };
    w.effective(key, node)?;
    let mut out = Vec::new();
    let premises: Vec<(IdKey, Node)> = w
        .entries
        .get(&node)
        .map(|e| e.premises.clone())
        .unwrap_or_default();
    for (k, n) in std::iter::once((key, node)).chain(premises) {
        if let Some(e) = w.eff.get(&n) {
            out.push((id_text(&k), as_text(e)));
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
    fn cycle(&self, key: &IdKey) -> StoreError {
        self.store.index_damaged(&format!(
            "claim {} takes part in a cycle, which content addressing makes impossible",
            id_text(key)
        ))
    }

    /// Reads the entry of the stored claim `key` at `node`, once.
    fn load(&mut self, key: &IdKey, node: Node) -> Result<(), StoreError> {
        if self.entries.contains_key(&node) {
            return Ok(());
        }
        let (kind, named, records) = ix(self.r.fold_entry(key, node))?;
        let mut premises = Vec::with_capacity(named.len());
        for p in named {
            let v = match self.nodes.get(&p) {
                Some(v) => *v,
                None => {
                    let v = ix(self.r.named_node(&p))?;
                    self.nodes.insert(p, v);
                    v
                }
            };
            if v.claimed {
                premises.push((p, v.node));
            }
        }
        premises.sort_unstable();
        premises.dedup();
        self.entries.insert(
            node,
            Entry {
                kind,
                premises,
                records,
            },
        );
        Ok(())
    }

    /// own(x): what the live records targeting it decide, each record's own status first
    /// (iteratively: a chain of records of any length cannot overflow the stack).
    fn own(&mut self, key: IdKey, node: Node) -> Result<Status, StoreError> {
        if let Some(s) = self.own.get(&node) {
            return Ok(*s);
        }
        let mut stack: Vec<(IdKey, Node, bool)> = vec![(key, node, false)];
        let mut in_progress: HashSet<Node> = HashSet::default();
        while let Some((k, x, expanded)) = stack.pop() {
            if self.own.contains_key(&x) {
                continue;
            }
            self.load(&k, x)?;
            let records = self.entries[&x].records.clone();
            if expanded {
                let mut live = Vec::with_capacity(records.len());
                for rn in &records {
                    if !self.own.get(rn).ok_or_else(|| self.cycle(&k))?.is_live() {
                        continue;
                    }
                    if let Some(e) = self.entries.get(rn) {
                        live.push(e.kind);
                    }
                }
                let status = super::own_by_kinds(live);
                self.own.insert(x, status);
                in_progress.remove(&x);
                continue;
            }
            in_progress.insert(x);
            stack.push((k, x, true));
            for rn in records {
                if in_progress.contains(&rn) {
                    return Err(self.cycle(&k));
                }
                if !self.own.contains_key(&rn) {
                    let rk = ix(self.r.node_id(rn))?;
                    stack.push((rk, rn, false));
                }
            }
        }
        self.own.get(&node).copied().ok_or_else(|| self.cycle(&key))
    }

    /// effective(x) for x and the part of its ancestry it depends on, children first.
    fn effective(&mut self, key: IdKey, node: Node) -> Result<(), StoreError> {
        let mut stack: Vec<(IdKey, Node, bool)> = vec![(key, node, false)];
        let mut in_progress: HashSet<Node> = HashSet::default();
        while let Some((k, x, expanded)) = stack.pop() {
            if self.eff.contains_key(&x) {
                continue;
            }
            let own = self.own(k, x)?;
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
            let premises = self.entries[&x].premises.clone();
            if expanded {
                let mut causes: BTreeMap<IdKey, Vec<IdKey>> = BTreeMap::new();
                for (pk, pn) in &premises {
                    let pe = self.eff.get(pn).ok_or_else(|| self.cycle(pk))?;
                    match pe.status {
                        Status::Falsified => offer(&mut causes, pk, vec![*pk, k]),
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
            in_progress.insert(x);
            stack.push((k, x, true));
            for (pk, pn) in premises {
                if in_progress.contains(&pn) {
                    return Err(self.cycle(&pk));
                }
                if !self.eff.contains_key(&pn) {
                    stack.push((pk, pn, false));
                }
            }
        }
        Ok(())
    }
}
