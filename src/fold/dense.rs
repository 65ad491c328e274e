//! The fold's statuses over node numbers: for a command that folds most of the log at once
//! (a gate), without the [`super::Fold`]'s memo of claims and lists keyed by id text.
//!
//! It decides the same rules as the fold (own status from the live records targeting a
//! claim, first match wins; effective status revoked by a falsified or revoked premise; a
//! claim signed only by compromised keys falsified), but keeps only what a status needs: one
//! byte of own status and one of effective status per node, and whether a live
//! residue-acceptance targets it. It names no causes and no paths: a command that shows
//! those asks the fold. `tests/it/gate_fast_props.rs` holds it to the fold on random graphs.

use super::{own_by_kinds, Compromise, Status};
use crate::claim::Kind;
use crate::ingest::Signer;
use crate::keys::Role;
use crate::store::index::id_text;
use crate::store::{AllClaims, StoreError};
use std::collections::BTreeSet;
use std::sync::Arc;

/// A claim graph by node number: what [`DenseFold`] reads.
pub trait Nodes {
    /// How many nodes there are (node numbers run from 0).
    fn node_count(&self) -> usize;
    /// The kind of a stored claim; None for a node the graph only names.
    fn kind(&self, node: u32) -> Option<Kind>;
    /// Who signed a stored claim (its authorising signatures).
    fn signers(&self, node: u32) -> &[Signer];
    /// The records whose `target` names `node`, each once; every one stored.
    fn records(&self, node: u32) -> &[u32];
    /// The nodes a stored claim names as premises, in `out` (stored or not).
    fn premises(&self, node: u32, out: &mut Vec<u32>) -> Result<(), StoreError>;
    /// Whether `record` acts on `target` (a view of the log at one tree leaves some out).
    fn applies(&self, record: u32, target: u32) -> Result<bool, StoreError>;
    /// The claim id of a node, for messages.
    fn name(&self, node: u32) -> String;
    /// The graph contradicts itself (a cycle): the error to end with.
    fn contradiction(&self, why: String) -> StoreError;
}

const UNKNOWN: u8 = 0;
const BUSY: u8 = 0x80;
const ACCEPTED: u8 = 0x40;

fn code(s: Status) -> u8 {
    match s {
        Status::Unevaluated => 1,
        Status::Verified => 2,
        Status::Falsified => 3,
        Status::Superseded => 4,
        Status::Revoked => 5,
    }
}

fn status(c: u8) -> Status {
    match c & 0x0f {
        2 => Status::Verified,
        3 => Status::Falsified,
        4 => Status::Superseded,
        5 => Status::Revoked,
        _ => Status::Unevaluated,
    }
}

/// Own and effective statuses of the nodes of one graph, worked out on demand and kept.
pub struct DenseFold<'g, N: Nodes> {
    nodes: &'g N,
    /// By node: UNKNOWN, BUSY while its records are folded, else the status code, with
    /// ACCEPTED when a live residue-acceptance targets it.
    own: Vec<u8>,
    /// By node: UNKNOWN, BUSY while its premises are folded, else the status code.
    effective: Vec<u8>,
    compromise: Option<Arc<Compromise>>,
}

impl<'g, N: Nodes> DenseFold<'g, N> {
    /// A fold over `nodes`, with the keys a trust policy declares compromised, if any.
    pub fn new(nodes: &'g N, compromise: Option<Arc<Compromise>>) -> Self {
        let n = nodes.node_count();
        DenseFold {
            nodes,
            own: vec![UNKNOWN; n],
            effective: vec![UNKNOWN; n],
            compromise,
        }
    }

    fn cycle(&self, node: u32) -> StoreError {
        self.nodes.contradiction(format!(
            "claim {} takes part in a cycle, which content addressing makes impossible",
            self.nodes.name(node)
        ))
    }

    fn stored(&self, node: u32) -> Result<(), StoreError> {
        match self.nodes.kind(node) {
            Some(_) => Ok(()),
            None => Err(self.nodes.contradiction(format!(
                "it names {} as a stored claim and holds no entry for it",
                self.nodes.name(node)
            ))),
        }
    }

    /// The records targeting `node` that act on it.
    fn live_candidates(&self, node: u32) -> Result<Vec<u32>, StoreError> {
        let mut out = Vec::new();
        for &r in self.nodes.records(node) {
            if self.nodes.applies(r, node)? {
                out.push(r);
            }
        }
        Ok(out)
    }

    /// own(node) of a stored claim, and whether a live residue-acceptance targets it.
    pub fn own(&mut self, node: u32) -> Result<(Status, bool), StoreError> {
        self.stored(node)?;
        let mut stack: Vec<(u32, Option<Vec<u32>>)> = vec![(node, None)];
        while let Some((x, kids)) = stack.pop() {
            let state = self.own[x as usize];
            match kids {
                Some(kids) => self.finish_own(x, &kids)?,
                None if state != UNKNOWN => {}
                None => {
                    let kids = self.live_candidates(x)?;
                    self.own[x as usize] = BUSY;
                    let me = stack.len();
                    stack.push((x, None));
                    for &k in &kids {
                        match self.own[k as usize] {
                            BUSY => return Err(self.cycle(k)),
                            UNKNOWN => stack.push((k, None)),
                            _ => {}
                        }
                    }
                    stack[me].1 = Some(kids);
                }
            }
        }
        let c = self.own[node as usize];
        Ok((status(c), c & ACCEPTED != 0))
    }

    fn finish_own(&mut self, x: u32, recs: &[u32]) -> Result<(), StoreError> {
        let mut live = Vec::with_capacity(recs.len());
        let mut accepted = false;
        for &r in recs {
            let c = self.own[r as usize];
            if c == UNKNOWN || c == BUSY {
                return Err(self.cycle(r));
            }
            if !status(c).is_live() {
                continue;
            }
            let Some(kind) = self.nodes.kind(r) else {
                self.stored(r)?;
                continue;
            };
            accepted |= kind == Kind::ResidueAcceptance;
            live.push(kind);
        }
        let compromised = match &self.compromise {
            Some(c) => self.nodes.kind(x).is_some() && c.takes_down(self.nodes.signers(x)),
            None => false,
        };
        let s = if compromised {
            Status::Falsified
        } else {
            own_by_kinds(live)
        };
        self.own[x as usize] = code(s) | if accepted { ACCEPTED } else { 0 };
        Ok(())
    }

    /// effective(node) of a stored claim.
    pub fn effective(&mut self, node: u32) -> Result<Status, StoreError> {
        self.stored(node)?;
        let mut stack: Vec<(u32, Option<Vec<u32>>)> = vec![(node, None)];
        let mut premises = Vec::new();
        while let Some((x, kids)) = stack.pop() {
            match kids {
                Some(kids) => self.finish_effective(x, &kids)?,
                None if self.effective[x as usize] != UNKNOWN => {}
                None => {
                    premises.clear();
                    self.nodes.premises(x, &mut premises)?;
                    let kids: Vec<u32> = premises
                        .iter()
                        .copied()
                        .filter(|&p| self.nodes.kind(p).is_some())
                        .collect();
                    self.effective[x as usize] = BUSY;
                    let me = stack.len();
                    stack.push((x, None));
                    for &k in &kids {
                        match self.effective[k as usize] {
                            BUSY => return Err(self.cycle(k)),
                            UNKNOWN => stack.push((k, None)),
                            _ => {}
                        }
                    }
                    stack[me].1 = Some(kids);
                }
            }
        }
        Ok(status(self.effective[node as usize]))
    }

    fn finish_effective(&mut self, x: u32, premises: &[u32]) -> Result<(), StoreError> {
        let (own, _) = self.own(x)?;
        let mut revoked = false;
        if !matches!(own, Status::Falsified | Status::Superseded) {
            for &p in premises {
                let c = self.effective[p as usize];
                if c == UNKNOWN || c == BUSY {
                    return Err(self.cycle(p));
                }
                revoked |= matches!(status(c), Status::Falsified | Status::Revoked);
            }
        }
        self.effective[x as usize] = code(if revoked { Status::Revoked } else { own });
        Ok(())
    }

    /// The distinct harness keys that signed the live verifications deciding a verified
    /// claim (none for a claim that is not verified by its records).
    pub fn harness_keys(&mut self, node: u32) -> Result<usize, StoreError> {
        let (own, _) = self.own(node)?;
        if own != Status::Verified {
            return Ok(0);
        }
        let nodes = self.nodes;
        let mut keys: BTreeSet<&str> = BTreeSet::new();
        for r in self.live_candidates(node)? {
            if nodes.kind(r) != Some(Kind::Verification) || !self.own(r)?.0.is_live() {
                continue;
            }
            for s in nodes.signers(r) {
                if s.role == Role::Harness {
                    keys.insert(s.keyid.as_str());
                }
            }
        }
        Ok(keys.len())
    }
}

/// Every claim of a store read at once ([`AllClaims`]), by slot, log-wide: every record acts
/// on its targets. A view of the log at one tree filters the records and asks this for the
/// rest.
impl Nodes for AllClaims<'_> {
    fn node_count(&self) -> usize {
        self.slot_count()
    }
    fn kind(&self, node: u32) -> Option<Kind> {
        self.kind_at(node)
    }
    fn signers(&self, node: u32) -> &[Signer] {
        self.signers_at(node)
    }
    fn records(&self, node: u32) -> &[u32] {
        self.records_at(node)
    }
    fn premises(&self, node: u32, out: &mut Vec<u32>) -> Result<(), StoreError> {
        out.extend_from_slice(self.premises_at(node));
        Ok(())
    }
    fn applies(&self, _record: u32, _target: u32) -> Result<bool, StoreError> {
        Ok(true)
    }
    fn name(&self, node: u32) -> String {
        match self.entry_at(node) {
            Some(e) => id_text(e.id),
            None => format!("slot {node}"),
        }
    }
    fn contradiction(&self, why: String) -> StoreError {
        self.store().index_damaged(&why)
    }
}
