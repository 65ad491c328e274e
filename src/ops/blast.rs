//! `blast`: what a falsification of a claim revokes, layer by layer.

use super::ids::{require_claim_ids, resolve_claim_id};
use super::tree::{tree_dir, tree_ids_at};
use super::{Context, Failure};
use crate::anchor::AtTree;
use crate::claim::Gist;
use crate::fold::Fold;
use crate::graph::{blast_bulk, BulkBlast};
use crate::tree::Selection;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;

/// What `blast` is asked.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BlastInput {
    /// The claim id (whole, or a unique prefix).
    pub id: String,
    /// Only this many layers of dependents.
    pub depth: Option<usize>,
    /// Also read each claim's text from the log (for people; costs a read per claim).
    pub with_texts: bool,
    /// Statuses at the tree in this directory (only the observations that apply there
    /// count); None: log-wide.
    #[serde(default)]
    pub at: Option<PathBuf>,
    /// With `at`: keep the files ignore rules leave out of the tree.
    #[serde(default)]
    pub no_ignore: bool,
}

/// What `blast` answers: its JSON (`root`, `count`, `layers`, `affected`, …) is the
/// command's `data`, and [`BulkBlast::write_json`] writes the same bytes without building
/// a value.
#[derive(Debug, Clone)]
pub struct BlastOutput {
    pub bulk: BulkBlast,
    /// With `with_texts`: the `assertion.text` of each member and affected claim that has
    /// one.
    pub texts: HashMap<String, Value>,
}

impl Serialize for BlastOutput {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.bulk.to_blast().serialize(s)
    }
}

/// The blast radius of a claim, as one snapshot of the log.
pub fn blast(ctx: &Context, input: &BlastInput) -> Result<BlastOutput, Failure> {
    require_claim_ids([&input.id])?;
    let store = ctx.open_store()?;
    // One read transaction for the whole answer: a snapshot as of one state of the log.
    let _snapshot = store.pin()?;
    let id = resolve_claim_id(&store, &input.id)?;
    let compromise = crate::fold::ClaimSource::compromise(&store).is_some();
    let bulk = match &input.at {
        // A compromise declared by the team's trust policy decides statuses the bulk reading
        // does not see: the reference blast through the fold then.
        None if compromise => {
            let b = crate::graph::blast(&mut Fold::new(&store), &id, input.depth)?;
            BulkBlast::from_blast(&b)
                .ok_or_else(|| Failure::Internal("blast: a member is not a claim".into()))?
        }
        None => blast_bulk(&store, &id, input.depth)?,
        Some(at) => {
            // At a tree: the reference blast through the fold over what applies there.
            let dir = tree_dir(Some(at))?;
            let selection = Selection::from_no_ignore(input.no_ignore);
            let ids = tree_ids_at(&dir, selection, ctx.observer())?;
            let view = AtTree::new(&store, ids, &dir, selection);
            let b = crate::graph::blast(&mut Fold::new(&view), &id, input.depth)?;
            BulkBlast::from_blast(&b).ok_or_else(|| {
                Failure::Internal("blast at a tree: a member is not a claim".into())
            })?
        }
    };
    let mut texts = HashMap::new();
    if input.with_texts {
        // Claim texts live in the log; read only when asked.
        let b = bulk.to_blast();
        let ids = b
            .layers
            .iter()
            .flat_map(|l| l.claims.iter().map(|m| &m.id))
            .chain(b.affected.iter().map(|x| &x.id));
        for id in ids {
            if texts.contains_key(id) {
                continue;
            }
            if let Some(t) = store.get(id)?.and_then(|c| c.body.text_value().cloned()) {
                texts.insert(id.clone(), t);
            }
        }
    }
    Ok(BlastOutput { bulk, texts })
}
