//! `blast`: what a falsification of a claim revokes, layer by layer, or (`invert`) what the
//! claim rests on.

use super::ids::{require_claim_ids, resolve_claim_id};
use super::picture::{shown, Shown};
use super::tree::{tree_dir, tree_ids_at};
use super::{Context, Failure};
use crate::anchor::AtTree;
use crate::claim::Gist;
use crate::fold::{ClaimSource, Fold};
use crate::graph::{blast_bulk, rests_on, BulkBlast};
use crate::store::Store;
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
    /// Only this many layers of dependents (inverted: of premises).
    pub depth: Option<usize>,
    /// What the claim rests on instead: its premises, theirs, and so on, in the same
    /// layers (`affected` is then empty).
    #[serde(default)]
    pub invert: bool,
    /// Also read each claim's text and premises from the log (for people: the tree of the
    /// radius; costs a read per claim).
    pub with_texts: bool,
    /// Statuses at the tree in this directory (only the observations that apply there
    /// count); None: log-wide.
    #[serde(default)]
    pub at: Option<PathBuf>,
    /// With `at`: keep the files ignore rules leave out of the tree.
    #[serde(default)]
    pub no_ignore: bool,
    /// Also what a picture of the answer shows, at most this many claims (the root, the
    /// layers in order, then the affected claims and the records deciding each).
    #[serde(default)]
    pub picture: Option<usize>,
}

/// What `blast` answers: its JSON (`root`, `count`, `layers`, `affected`, …) is the
/// command's `data`, and [`BulkBlast::write_json`] writes the same bytes without building
/// a value.
#[derive(Debug, Clone)]
pub struct BlastOutput {
    pub bulk: BulkBlast,
    /// Whether it is what the root rests on (`invert`).
    pub inverted: bool,
    /// With `with_texts`: the `assertion.text` of each member and affected claim that has
    /// one.
    pub texts: HashMap<String, Value>,
    /// With `with_texts`: each member's premises (`dependsOn`), read in the same snapshot.
    pub premises: HashMap<String, Vec<String>>,
    /// With `picture`: the claims a picture of the answer shows.
    pub picture: Option<Shown>,
}

impl Serialize for BlastOutput {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.bulk.to_blast().serialize(s)
    }
}

/// The blast radius of a claim (or what it rests on), as one snapshot of the log.
pub fn blast(ctx: &Context, input: &BlastInput) -> Result<BlastOutput, Failure> {
    require_claim_ids([&input.id])?;
    let store = ctx.open_store()?;
    // One read transaction for the whole answer: a snapshot as of one state of the log.
    let _snapshot = store.pin()?;
    let id = resolve_claim_id(&store, &input.id)?;
    let (bulk, picture) = match &input.at {
        None => {
            let mut fold = Fold::new(&store);
            let bulk = if input.invert {
                bulk_of(&rests_on(&mut fold, &id, input.depth)?)?
            } else if fold.has_compromise() {
                // A compromise declared by the team's trust policy decides statuses the bulk
                // reading does not see: the reference blast through the fold then.
                bulk_of(&crate::graph::blast(&mut fold, &id, input.depth)?)?
            } else {
                // Log-wide: the radius read from the index in bulk.
                blast_bulk(&store, &id, input.depth)?
            };
            let picture = picture_of(&store, &mut fold, &bulk, input.picture)?;
            (bulk, picture)
        }
        Some(at) => {
            // At a tree: through the fold over what applies there (the reference blast).
            let dir = tree_dir(Some(at))?;
            let selection = Selection::from_no_ignore(input.no_ignore);
            let ids = tree_ids_at(&dir, selection, ctx.observer())?;
            let view = AtTree::new(&store, ids, &dir, selection);
            let mut fold = Fold::new(&view);
            let b = if input.invert {
                rests_on(&mut fold, &id, input.depth)?
            } else {
                crate::graph::blast(&mut fold, &id, input.depth)?
            };
            let bulk = bulk_of(&b)?;
            let picture = picture_of(&store, &mut fold, &bulk, input.picture)?;
            (bulk, picture)
        }
    };
    let mut texts = HashMap::new();
    let mut premises = HashMap::new();
    if input.with_texts {
        // Claim texts live in the log; read only when asked.
        let b = bulk.to_blast();
        let members = b.layers.iter().flat_map(|l| l.claims.iter().map(|m| &m.id));
        for (id, member) in members
            .map(|id| (id, true))
            .chain(b.affected.iter().map(|x| (&x.id, false)))
        {
            if texts.contains_key(id) || premises.contains_key(id) {
                continue;
            }
            let Some(c) = store.get(id)? else {
                continue;
            };
            if let Some(t) = c.body.text_value() {
                texts.insert(id.clone(), t.clone());
            }
            if member {
                premises.insert(id.clone(), c.claim.depends_on);
            }
        }
    }
    Ok(BlastOutput {
        bulk,
        inverted: input.invert,
        texts,
        premises,
        picture,
    })
}

fn bulk_of(b: &crate::graph::Blast) -> Result<BulkBlast, Failure> {
    BulkBlast::from_blast(b)
        .ok_or_else(|| Failure::Internal("blast: a member is not a claim".into()))
}

/// What a picture of `bulk` shows, its statuses folded by `fold`: the root, the layers in
/// order (a cap cuts the deepest), then the affected claims, and the records deciding each.
fn picture_of<S: ClaimSource>(
    store: &Store,
    fold: &mut Fold<'_, S>,
    bulk: &BulkBlast,
    max: Option<usize>,
) -> Result<Option<Shown>, Failure> {
    let Some(max) = max else {
        return Ok(None);
    };
    let b = bulk.to_blast();
    let ids: Vec<String> = b
        .layers
        .iter()
        .flat_map(|l| l.claims.iter().map(|m| m.id.clone()))
        .chain(b.affected.iter().map(|a| a.id.clone()))
        .collect();
    Ok(Some(shown(store, fold, &ids, max, true)?))
}
