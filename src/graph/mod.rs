//! Blast radius (docs/blast.md): what a falsification of a claim revokes.
//!
//! Edges run premise → dependent. The closure is discovered breadth-first through the
//! store's premise index (so the cost grows with the closure, never with the log);
//! breadth-first order gives each member its shortest depth. Each member appears once, at
//! that depth, with the smallest-id premise one layer up that reaches it; members are sorted
//! by id within a layer.
//!
//! Two implementations give the same answer:
//! - [`blast`], over any [`ClaimSource`] through the memoizing [`Fold`]: the reference, and
//!   what in-memory sources use;
//! - [`blast_bulk`] (and [`blast_store`], its answer as a [`Blast`]), what the CLI runs: it
//!   reads the closure from the index in bulk (one read transaction; forward walks through
//!   the premise index layer by layer, then through the claim and target tables for all
//!   members in id order, one lightly decoded entry per member), gives members dense numbers
//!   and folds them with `Vec` memos in topological order. Premises outside the closure are
//!   folded in the same transaction, status only (their ancestry read entry by entry); only
//!   the targets in `affected` go through the general [`Fold`]. Its JSON is written from the
//!   arrays ([`BulkBlast::write_json`]).
//!
//! The reference and the types are here; the bulk reading is `bulk`, the shortest path of
//! `elench why` is `why`.

mod bulk;
mod why;

pub use bulk::{blast_bulk, blast_store, BulkBlast};
pub use why::why;

use crate::fold::{ClaimSource, Fold, FoldError, Status};
use crate::store::StoreError;
use petgraph::graph::{DiGraph, NodeIndex};
use rustc_hash::FxHashMap as HashMap;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct Member {
    pub id: String,
    #[cfg_attr(feature = "cli", schemars(with = "crate::claim::Kind"))]
    pub kind: &'static str,
    pub status: Status,
    /// The premise it was reached through (None for the root).
    pub via: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct Layer {
    pub depth: usize,
    pub claims: Vec<Member>,
}

/// A claim outside the closure whose status is decided by a record inside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct Affected {
    pub id: String,
    pub status: Status,
    /// The deciding record(s) inside the closure.
    pub decided_by: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct Blast {
    pub root: String,
    /// Members excluding the root.
    pub count: usize,
    pub layers: Vec<Layer>,
    pub affected: Vec<Affected>,
    /// Whether `--depth` left members out.
    pub truncated: bool,
}

/// Computes the blast radius of `root`, down to `max_depth` layers when given, through the
/// general fold (the reference for [`blast_store`]).
pub fn blast<S: ClaimSource>(
    fold: &mut Fold<'_, S>,
    root: &str,
    max_depth: Option<usize>,
) -> Result<Blast, FoldError> {
    fold.require(root)?;
    let src = fold.source();

    let mut graph: DiGraph<String, ()> = DiGraph::new();
    let mut index: HashMap<String, NodeIndex> = HashMap::default();
    let root_ix = graph.add_node(root.to_owned());
    index.insert(root.to_owned(), root_ix);
    let mut depth_of: HashMap<NodeIndex, usize> = HashMap::default();
    depth_of.insert(root_ix, 0);

    // Breadth-first discovery through the premise index, one layer at a time.
    let mut frontier = vec![root.to_owned()];
    let mut depth = 0;
    let mut truncated = false;
    while !frontier.is_empty() {
        if max_depth.is_some_and(|m| depth >= m) {
            // Truncated only when some dependent was left out: one already discovered
            // (R→P, R→Q, P→Q with --depth 1: Q is in) is not beyond the cut.
            for id in &frontier {
                if src.dependents(id)?.iter().any(|d| !index.contains_key(d)) {
                    truncated = true;
                    break;
                }
            }
            break;
        }
        let mut next = Vec::new();
        for id in &frontier {
            let from = index[id];
            let mut deps = src.dependents(id)?;
            deps.sort();
            deps.dedup();
            for d in deps {
                let to = match index.get(&d) {
                    Some(&ix) => ix,
                    None => {
                        let ix = graph.add_node(d.clone());
                        index.insert(d.clone(), ix);
                        depth_of.insert(ix, depth + 1);
                        next.push(d);
                        ix
                    }
                };
                graph.update_edge(from, to, ());
            }
        }
        frontier = next;
        depth += 1;
    }

    let mut by_depth: BTreeMap<usize, Vec<(String, Option<String>)>> = BTreeMap::new();
    for (&node, &d) in &depth_of {
        let via = graph
            .neighbors_directed(node, petgraph::Direction::Incoming)
            .filter(|p| d > 0 && depth_of.get(p) == Some(&(d - 1)))
            .map(|p| graph[p].clone())
            .min();
        by_depth
            .entry(d)
            .or_default()
            .push((graph[node].clone(), via));
    }

    let mut layers = Vec::new();
    let mut members: BTreeSet<String> = BTreeSet::new();
    for (d, mut ids) in by_depth {
        ids.sort();
        let mut claims = Vec::with_capacity(ids.len());
        for (id, via) in ids {
            // The root is the caller's; the others are dependents the store named.
            let c = if d == 0 {
                fold.require(&id)?
            } else {
                fold.require_named(&id)?
            };
            let status = fold.effective(&id)?.status;
            members.insert(id.clone());
            claims.push(Member {
                kind: c.claim.kind.as_str(),
                id,
                status,
                via: if d == 0 { None } else { via },
            });
        }
        layers.push(Layer { depth: d, claims });
    }

    let affected = affected_by(fold, &members)?;

    Ok(Blast {
        root: root.to_owned(),
        count: members.len().saturating_sub(1),
        layers,
        affected,
        truncated,
    })
}

/// The claims outside `members` whose own status a record in `members` decides, sorted by
/// id, each with the member records that decide it (for a radius's `affected`).
pub fn affected_by<S: ClaimSource>(
    fold: &mut Fold<'_, S>,
    members: &BTreeSet<String>,
) -> Result<Vec<Affected>, FoldError> {
    let mut affected: BTreeMap<String, Affected> = BTreeMap::new();
    for m in members {
        let c = fold.require(m)?;
        // A record may name the same target twice; it decides it once.
        let targets: BTreeSet<&String> = c.claim.target.iter().collect();
        for t in targets {
            if members.contains(t) || fold.named(t)?.is_none() {
                continue;
            }
            if fold.own(t)?.decided_by.iter().any(|r| r == m) {
                let status = fold.effective(t)?.status;
                let entry = affected.entry(t.clone()).or_insert_with(|| Affected {
                    id: t.clone(),
                    status,
                    decided_by: Vec::new(),
                });
                entry.decided_by.push(m.clone());
            }
        }
    }
    Ok(affected.into_values().collect())
}

/// What `root` rests on (`blast --invert`): every claim reachable from it along `dependsOn`,
/// followed from dependent to premise, in breadth-first layers as [`blast`] gives them (each
/// claim once, at its shortest depth; `via` the smallest-id claim one layer up that names it
/// as a premise; sorted by id in a layer). Premises the store has never seen are left out
/// (status lists them as missing). `affected` is empty: records act on their targets, not
/// on what those rest on.
pub fn rests_on<S: ClaimSource>(
    fold: &mut Fold<'_, S>,
    root: &str,
    max_depth: Option<usize>,
) -> Result<Blast, FoldError> {
    fold.require(root)?;
    let mut depth_of: HashMap<String, usize> = HashMap::default();
    depth_of.insert(root.to_owned(), 0);
    let mut layers = vec![Layer {
        depth: 0,
        claims: vec![Member {
            id: root.to_owned(),
            kind: fold.require(root)?.claim.kind.as_str(),
            status: fold.effective(root)?.status,
            via: None,
        }],
    }];
    let mut frontier = vec![root.to_owned()];
    let mut truncated = false;
    let mut depth = 0;
    while !frontier.is_empty() {
        // Premise → the smallest-id claim of this layer naming it, for those first reached.
        let mut next: BTreeMap<String, String> = BTreeMap::new();
        for id in &frontier {
            let c = fold.require(id)?;
            for p in &c.claim.depends_on {
                if depth_of.contains_key(p) || fold.named(p)?.is_none() {
                    continue;
                }
                let via = next.entry(p.clone()).or_insert_with(|| id.clone());
                if id < via {
                    *via = id.clone();
                }
            }
        }
        if next.is_empty() {
            break;
        }
        if max_depth.is_some_and(|m| depth >= m) {
            truncated = true;
            break;
        }
        depth += 1;
        let mut claims = Vec::with_capacity(next.len());
        for (id, via) in &next {
            depth_of.insert(id.clone(), depth);
            claims.push(Member {
                id: id.clone(),
                kind: fold.require(id)?.claim.kind.as_str(),
                status: fold.effective(id)?.status,
                via: Some(via.clone()),
            });
        }
        layers.push(Layer { depth, claims });
        frontier = next.into_keys().collect();
    }
    Ok(Blast {
        root: root.to_owned(),
        count: depth_of.len() - 1,
        layers,
        affected: Vec::new(),
        truncated,
    })
}

/// The store holds what no valid store can: `why` says what.
fn corrupt(why: String) -> FoldError {
    FoldError::Store(StoreError::Corrupt(why))
}
