//! `elench why`: a shortest `dependsOn` path between two claims.

use super::corrupt;
use crate::fold::{ClaimSource, FoldError};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// A shortest `dependsOn` path from `from` to `to` (`elench why`): `[from, …, to]`, each
/// claim naming the next among its premises, or None when `from` does not rest on `to`.
///
/// Among equally short paths the one whose ids, read in order, sort first is chosen, so the
/// answer is a function of the claim set alone. The walk reads only `from`'s ancestry,
/// breadth-first, and stops at `to`'s depth; premises the store has never seen end a branch.
pub fn why<S: ClaimSource>(
    src: &S,
    from: &str,
    to: &str,
) -> Result<Option<Vec<String>>, FoldError> {
    // Every id after `from` is a premise the store named.
    let premises_of = |id: &str| -> Result<Vec<String>, FoldError> {
        Ok(match src.named_claim(id)? {
            Some(c) => {
                let mut p = c.claim.depends_on;
                p.sort();
                p.dedup();
                p
            }
            None => Vec::new(),
        })
    };
    if src.claim(from)?.is_none() {
        return Err(FoldError::NotFound(from.to_owned()));
    }
    if src.claim(to)?.is_none() {
        return Err(FoldError::NotFound(to.to_owned()));
    }
    if from == to {
        return Ok(Some(vec![from.to_owned()]));
    }
    // Layers of the ancestry, each claim at its shortest distance from `from`, with its
    // premises.
    let mut seen: HashSet<String> = HashSet::default();
    seen.insert(from.to_owned());
    let mut layers: Vec<Vec<(String, Vec<String>)>> = Vec::new();
    let mut frontier = vec![from.to_owned()];
    let mut found = false;
    while !frontier.is_empty() && !found {
        let mut layer = Vec::with_capacity(frontier.len());
        let mut next = Vec::new();
        for id in frontier {
            let premises = premises_of(&id)?;
            for p in &premises {
                if p == to {
                    found = true;
                }
                if seen.insert(p.clone()) {
                    next.push(p.clone());
                }
            }
            layer.push((id, premises));
        }
        layers.push(layer);
        frontier = next;
    }
    if !found {
        return Ok(None);
    }
    // Backwards from `to`: the claims of each layer that reach it in the layers left.
    let mut leads: Vec<HashSet<String>> = vec![HashSet::default(); layers.len() + 1];
    leads[layers.len()].insert(to.to_owned());
    for k in (0..layers.len()).rev() {
        let (here, after) = leads.split_at_mut(k + 1);
        for (id, premises) in &layers[k] {
            if premises.iter().any(|p| after[0].contains(p)) {
                here[k].insert(id.clone());
            }
        }
    }
    // Forwards from `from`: the smallest premise that still leads to `to`, step by step.
    let premises: HashMap<&str, &Vec<String>> = layers
        .iter()
        .flatten()
        .map(|(id, p)| (id.as_str(), p))
        .collect();
    let mut path = vec![from.to_owned()];
    for next_leads in leads.iter().skip(1) {
        let here = path.last().map(String::as_str).unwrap_or(from);
        let step = premises
            .get(here)
            .and_then(|ps| ps.iter().find(|p| next_leads.contains(*p)));
        match step {
            Some(p) => path.push(p.clone()),
            None => {
                return Err(corrupt(format!(
                    "the path from {from} to {to} broke at {here}"
                )))
            }
        }
    }
    Ok(Some(path))
}
