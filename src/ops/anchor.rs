//! Anchors and trees as `elench anchor`, `elench tree` and `sign --anchor` make them: the
//! anchor object for a span of a file in a tree, and a tree's OID.

use super::tree::{relative_to, tracked_ignored, TreeWarning};
use super::Failure;
use crate::anchor::{self, Strategy};
use crate::tree::{Listing, Selection};
use serde_json::{Map, Value};
use std::path::Path;

/// The anchor object for `PATH[:START-END]` in `dir`, with `dir`'s tree OID (ignore rules
/// honoured).
pub fn anchor_at(dir: &Path, spec: &str, strategy: Strategy) -> Result<Value, Failure> {
    anchor_at_with(dir, spec, strategy, Selection::Committed).map(|(a, _)| a)
}

/// [`anchor_at`] with a choice of the tree's files, and `TRACKED_IGNORED` if it applies. A
/// file the tree leaves out cannot be anchored: the claim would name a tree that does not
/// hold it.
pub fn anchor_at_with(
    dir: &Path,
    spec: &str,
    strategy: Strategy,
    selection: Selection,
) -> Result<(Value, Option<TreeWarning>), Failure> {
    let (path, range) = anchor::parse_spec(spec).map_err(|m| Failure::usage(None, m))?;
    let rel = relative_to(dir, &path)?;
    // The file first, then the whole tree: a typo fails before the tree is hashed.
    let mut anchor = anchor::make(dir, "", &rel, range, strategy)?;
    let listing = crate::tree::list(dir, selection).map_err(Failure::from)?;
    in_listing(&anchor, &listing, dir)?;
    let tree = listing.oid().map_err(Failure::from)?;
    anchor.insert("tree".into(), Value::String(tree));
    Ok((Value::Object(anchor), tracked_ignored(dir, &listing)))
}

/// Refuses an anchor whose file `listing` (the tree of `dir`) leaves out: the claim would
/// name a tree that does not hold it.
pub(super) fn in_listing(
    anchor: &Map<String, Value>,
    listing: &Listing,
    dir: &Path,
) -> Result<(), Failure> {
    match anchor.get("path") {
        Some(Value::String(p)) if !listing.has_file(p) => Err(anchor::AnchorError::Ignored {
            path: p.clone(),
            dir: dir.to_path_buf(),
        }
        .into()),
        _ => Ok(()),
    }
}
