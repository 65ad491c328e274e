//! Blast radius (docs/blast.md): what a falsification of a claim revokes.
//!
//! Edges run premise → dependent. The closure is discovered breadth-first through the
//! store's premise index (so the cost grows with the closure, never with the log) into a
//! petgraph graph; breadth-first order gives each member its shortest depth. Each member
//! appears once, at that depth, with the smallest-id premise one layer up that reaches it
//! (read from the graph's incoming edges); members are sorted by id within a layer.

use crate::fold::{ClaimSource, Fold, FoldError, Status};
use petgraph::graph::{DiGraph, NodeIndex};
use rustc_hash::FxHashMap as HashMap;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Member {
    pub id: String,
    pub kind: &'static str,
    pub status: Status,
    /// The premise it was reached through (None for the root).
    pub via: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Layer {
    pub depth: usize,
    pub claims: Vec<Member>,
}

/// A claim outside the closure whose status is decided by a record inside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Affected {
    pub id: String,
    pub status: Status,
    /// The deciding record(s) inside the closure.
    pub decided_by: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Blast {
    pub root: String,
    /// Members excluding the root.
    pub count: usize,
    pub layers: Vec<Layer>,
    pub affected: Vec<Affected>,
    /// Whether `--depth` left members out.
    pub truncated: bool,
}

/// Computes the blast radius of `root`, down to `max_depth` layers when given.
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
            let c = fold.require(&id)?;
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

    // Targets outside the closure whose own status a member record decides.
    let mut affected: BTreeMap<String, Affected> = BTreeMap::new();
    for m in &members {
        let c = fold.require(m)?;
        // A record may name the same target twice; it decides it once.
        let targets: BTreeSet<&String> = c.claim.target.iter().collect();
        for t in targets {
            if members.contains(t) || fold.claim(t)?.is_none() {
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

    Ok(Blast {
        root: root.to_owned(),
        count: members.len().saturating_sub(1),
        layers,
        affected: affected.into_values().collect(),
        truncated,
    })
}
