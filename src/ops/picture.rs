//! What a picture of the claim graph shows (`--format dot|mermaid` on `blast`, `status` and
//! `why`): which claims, in the order they are wanted, and what is drawn of each, read in
//! the operation's snapshot. Drawing them is the front end's.

use super::Failure;
use crate::claim::Gist;
use crate::fold::{ClaimSource, Fold, Status};
use crate::store::Store;
use std::collections::HashSet;

/// What a picture shows of a claim: its text, kind, effective status, edges and the records
/// deciding its own status.
#[derive(Debug, Clone)]
pub struct ClaimInfo {
    pub text: String,
    pub kind: String,
    pub status: Status,
    pub depends_on: Vec<String>,
    pub target: Vec<String>,
    /// The live records that decide its own status: drawn beside it, so the picture shows
    /// why a claim is falsified or verified.
    pub decided_by: Vec<String>,
}

/// The claims a picture shows, in the order they were wanted (a picture cut to size keeps
/// the first), and how many more were wanted than it holds.
#[derive(Debug, Clone, Default)]
pub struct Shown {
    pub claims: Vec<(String, ClaimInfo)>,
    pub left_out: usize,
    /// The most it holds (`--max-nodes`).
    pub max: usize,
}

/// What a picture shows of `id` (None for a claim the store has never seen): what the claim
/// says from `store`, its statuses from `fold`.
pub fn info<S: ClaimSource>(
    store: &Store,
    fold: &mut Fold<'_, S>,
    id: &str,
) -> Result<Option<ClaimInfo>, Failure> {
    let Some(c) = store.get(id)? else {
        return Ok(None);
    };
    let status = fold.effective(id)?.status;
    let decided_by = fold.own(id)?.decided_by.clone();
    Ok(Some(ClaimInfo {
        text: c.body.text().map(str::to_owned).unwrap_or_default(),
        kind: c.claim.kind.as_str().to_owned(),
        status,
        depends_on: c.claim.depends_on,
        target: c.claim.target,
        decided_by,
    }))
}

/// The claims a picture of `ids` shows: `ids` in priority order, then, with `with_records`,
/// the records deciding each (as they come), at most `max` of them.
pub fn shown<S: ClaimSource>(
    store: &Store,
    fold: &mut Fold<'_, S>,
    ids: &[String],
    max: usize,
    with_records: bool,
) -> Result<Shown, Failure> {
    let mut queue: Vec<String> = Vec::with_capacity(ids.len());
    let mut seen = HashSet::new();
    for id in ids {
        if seen.insert(id.clone()) {
            queue.push(id.clone());
        }
    }
    let mut claims = Vec::new();
    let mut i = 0;
    while i < queue.len() && claims.len() < max {
        let id = queue[i].clone();
        i += 1;
        if let Some(info) = info(store, fold, &id)? {
            for r in info.decided_by.iter().filter(|_| with_records) {
                if seen.insert(r.clone()) {
                    queue.push(r.clone());
                }
            }
            claims.push((id, info));
        }
    }
    Ok(Shown {
        claims,
        left_out: queue.len() - i,
        max,
    })
}
