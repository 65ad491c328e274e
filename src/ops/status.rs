//! `status`: the fold of the log for given claims, or a filtered page of every claim, and
//! with a tree whether each applies there.

use super::ids::{require_claim_ids, resolve_claim_ids};
use super::page::{PageRequest, Pagination};
use super::picture::{shown, Shown};
use super::roots::{roots_at, Root};
use super::tree::{tree_dir, tree_ids_at};
use super::{Context, Failure, Observer};
use crate::anchor::{Anchor, Applies, AtTree, Resolution, Resolver};
use crate::claim::{Gist, Summary};
use crate::fold::dense::DenseFold;
use crate::fold::{ClaimSource, ClaimStatus, Fold, Status};
use crate::ops::error::Param;
use crate::store::{Store, StoredClaim};
use crate::tree::{Selection, TreeIds};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

/// What `status` is asked.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StatusInput {
    /// Claim ids (whole, or unique prefixes); none with `all`.
    pub ids: Vec<String>,
    /// Every claim, in arrival order, a page at a time.
    pub all: bool,
    /// With `all`: which page.
    pub page: PageRequest,
    /// Also say whether each claim applies at the tree in this directory.
    pub at: Option<PathBuf>,
    /// With `at`: keep the files ignore rules leave out of the tree.
    pub no_ignore: bool,
    /// With `all`: only claims passing these.
    pub filters: StatusFilters,
    /// Also what a picture of the answer shows, at most this many claims: those listed,
    /// then what decides each (its records, the premises it rests on directly, the paths of
    /// its revocation).
    #[serde(default)]
    pub picture: Option<usize>,
    /// With `at`: also the falsified roots of each revoked assertion, placed at the tree
    /// (what a document shows beside it).
    #[serde(default)]
    pub places: bool,
}

/// The filters of `status --all`; an empty list lets everything through.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StatusFilters {
    /// How the claim applies at the tree (`anchored`, `carried`, `stale`, `unanchored`;
    /// needs a tree).
    pub applies: Vec<String>,
    /// Effective status.
    pub status: Vec<String>,
    pub kind: Vec<String>,
    pub origin: Vec<String>,
    /// Globs a claim's path must match (at the tree, where its lines are there).
    pub path: Vec<String>,
}

impl StatusFilters {
    fn is_empty(&self) -> bool {
        self.applies.is_empty()
            && self.status.is_empty()
            && self.kind.is_empty()
            && self.origin.is_empty()
            && self.path.is_empty()
    }
}

/// What `status` answers: its JSON is the command's `data`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct StatusOutput {
    pub claims: Vec<StatusRow>,
    /// The number of log entries folded.
    pub as_of: u64,
    /// The tree the claims were judged at, when one was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tree: Option<String>,
    /// With `all`: what the page holds of the whole list.
    #[serde(skip)]
    pub pagination: Option<Pagination>,
    /// With `all`: the cursor that starts at each claim (its arrival number).
    #[serde(skip)]
    pub cursors: Vec<String>,
    /// With `picture`: the claims a picture of the answer shows (statuses log-wide).
    #[serde(skip)]
    pub picture: Option<Shown>,
}

/// One claim's standing.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct StatusRow {
    #[serde(flatten)]
    pub status: ClaimStatus,
    /// With a tree: how the claim applies there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applies: Option<Applies>,
    /// With a tree: where its lines are there (null unless it applies).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved: Option<Option<Resolved>>,
    /// The claim's `assertion.text`, whole (null when it has none).
    pub text: Value,
    /// The path its anchor names.
    pub anchor_path: Option<String>,
    /// The lines its anchor names.
    #[serde(skip)]
    pub anchor_range: Option<[u64; 2]>,
    /// With `places`, for a revoked assertion judged at the tree: the falsified roots it
    /// rests on (log-wide), each placed at the tree. Written only when there are some (the
    /// command line asks for them only for documents).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub roots: Vec<Root>,
}

/// Where a claim's lines are at a tree.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct Resolved {
    pub path: Option<String>,
    pub range: Option<[u64; 2]>,
}

/// What `status` takes, for when it was given nothing.
const USAGE: &str = "elench status <ID>... (full ids or unique prefixes such as cl_1a2b), \
                     or elench status ‹-all› [‹-limit› N] [‹-cursor› C] for every claim";

/// Why a `status` with neither ids nor `all` is refused.
pub fn needs_ids() -> String {
    format!("status needs claim ids or ‹all›. Usage: {USAGE}")
}

/// A `--path` glob: `*` stays inside one path segment.
pub fn glob(p: &str) -> Result<globset::Glob, globset::Error> {
    GlobBuilder::new(p).literal_separator(true).build()
}

/// Why `p` is not a glob.
pub fn glob_problem(p: &str, e: &globset::Error) -> String {
    format!("‹path› {p:?} is not a glob: {}", e.kind())
}

/// The filters, compiled.
pub(super) struct Filters<'a> {
    given: &'a StatusFilters,
    path: Option<GlobSet>,
}

impl<'a> Filters<'a> {
    pub(super) fn compile(f: &'a StatusFilters) -> Result<Option<Filters<'a>>, Failure> {
        if f.is_empty() {
            return Ok(None);
        }
        let path = if f.path.is_empty() {
            None
        } else {
            let mut set = GlobSetBuilder::new();
            for p in &f.path {
                let g =
                    glob(p).map_err(|e| Failure::usage(Some(Param::Path), glob_problem(p, &e)))?;
                set.add(g);
            }
            Some(
                set.build()
                    .map_err(|e| Failure::usage(Some(Param::Path), format!("‹path›: {e}")))?,
            )
        };
        Ok(Some(Filters { given: f, path }))
    }

    /// Whether the claim passes every filter; asks its effective status (`status`) only
    /// when a filter needs it.
    fn pass(
        &self,
        c: &StoredClaim<Summary>,
        res: Option<&Resolution>,
        status: impl FnOnce() -> Result<Status, Failure>,
    ) -> Result<bool, Failure> {
        let claim = &c.claim;
        let f = self.given;
        let any = |list: &[String], v: &str| list.is_empty() || list.iter().any(|x| x == v);
        if !any(&f.kind, claim.kind.as_str()) || !any(&f.origin, claim.origin.as_str()) {
            return Ok(false);
        }
        if let Some(r) = res {
            if !any(&f.applies, r.applies.as_str()) {
                return Ok(false);
            }
        }
        if let Some(globs) = &self.path {
            let path = match res {
                Some(r) if r.applies.applies() => r.path.clone(),
                _ => Anchor::of(claim, &c.body)?.path,
            };
            if !path.is_some_and(|p| globs.is_match(p)) {
                return Ok(false);
            }
        }
        if !f.status.is_empty() {
            let status = status()?;
            if !any(&f.status, status.as_str()) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// Claims `status --all` reads per round when filtering.
const FILTER_BATCH: usize = 512;

impl Filters<'_> {
    /// Whether a claim whose effective status is `status` fails the filters whatever else
    /// it is: the status filter rejects it and no other filter could fail with an error
    /// first (a path filter reads the claim's anchor, which can).
    fn rejects_status(&self, status: Status) -> bool {
        let f = self.given;
        self.path.is_none()
            && !f.status.is_empty()
            && !f.status.iter().any(|s| s == status.as_str())
    }
}

/// The fold for each claim asked about, or a page of every claim; warnings (a record
/// deciding a claim that is itself revoked, files git tracks that the tree leaves out) go to
/// the context's observer.
pub fn status(ctx: &Context, input: &StatusInput) -> Result<StatusOutput, Failure> {
    if input.ids.is_empty() && !input.all {
        return Err(Failure::usage(Some(Param::Id), needs_ids()));
    }
    require_claim_ids(&input.ids)?;
    let filters = Filters::compile(&input.filters)?;
    let store = ctx.open_store()?;
    let tree = match &input.at {
        Some(at) => Some(tree_for(ctx, Some(at), input.no_ignore)?),
        None => None,
    };
    status_in(ctx.observer(), &store, input, filters, tree)
}

/// The tree claims are judged at: its entries, its directory, and which files make it.
pub(super) struct TreeAt {
    pub ids: TreeIds,
    pub dir: PathBuf,
    pub selection: Selection,
}

/// The tree at `at` (or the enclosing checkout), listed and hashed once.
pub(super) fn tree_for(
    ctx: &Context,
    at: Option<&std::path::Path>,
    no_ignore: bool,
) -> Result<TreeAt, Failure> {
    let dir = tree_dir(at)?;
    let selection = Selection::from_no_ignore(no_ignore);
    let ids = tree_ids_at(&dir, selection, ctx.observer())?;
    Ok(TreeAt {
        ids,
        dir,
        selection,
    })
}

/// The statuses asked for: log-wide, or at a tree (only the observations that apply there
/// count, and each claim says how it applies there).
pub(super) fn status_in(
    observer: &dyn Observer,
    store: &Store,
    input: &StatusInput,
    filters: Option<Filters<'_>>,
    tree: Option<TreeAt>,
) -> Result<StatusOutput, Failure> {
    match tree {
        Some(t) => {
            let resolver = Resolver::new(&t.dir, t.ids.oid()).with_selection(t.selection);
            let view = AtTree::new(store, t.ids, &t.dir, t.selection);
            status_with(observer, store, &view, input, filters, Some(resolver))
        }
        None => status_with(observer, store, store, input, filters, None),
    }
}

fn status_with<S: ClaimSource>(
    observer: &dyn Observer,
    store: &Store,
    source: &S,
    input: &StatusInput,
    filters: Option<Filters<'_>>,
    mut resolver: Option<Resolver>,
) -> Result<StatusOutput, Failure> {
    // One read transaction for the whole answer: a snapshot as of one state of the log.
    let _snapshot = store.pin()?;
    let as_of = store.count()?;
    let mut fold = Fold::new(source);
    // With `all`, each claim's arrival number is the cursor that starts at it.
    let (ids, pagination, cursors) = match (&filters, input.all) {
        (Some(f), true) => {
            let (page, meta) = filtered_page(store, &mut fold, resolver.as_mut(), f, &input.page)?;
            let cursors = page.iter().map(|(seq, _)| seq.to_string()).collect();
            (
                page.into_iter().map(|(_, id)| id).collect(),
                Some(meta),
                cursors,
            )
        }
        (_, true) => {
            let (page, meta) = input.page.of_arrivals(store)?;
            let cursors = page.iter().map(|(seq, _)| seq.to_string()).collect();
            (
                page.into_iter().map(|(_, id)| id).collect(),
                Some(meta),
                cursors,
            )
        }
        (_, false) => (resolve_claim_ids(store, &input.ids)?, None, Vec::new()),
    };
    let mut unknown = Vec::new();
    for id in &ids {
        if fold.claim(id)?.is_none() {
            unknown.push(id.clone());
        }
    }
    if !unknown.is_empty() && input.all {
        // The index listed them itself.
        let why = format!("it lists claim {} and has no entry for it", unknown[0]);
        return Err(store.index_damaged(&why).into());
    }
    if !unknown.is_empty() {
        return Err(Failure::claim_not_found(&unknown));
    }
    let mut rows = Vec::with_capacity(ids.len());
    for id in &ids {
        // Reading the claim's record from the log checks it: a damaged record is
        // STORE_CORRUPT, never a status.
        let stored = store.get(id)?;
        let (text, anchor) = match &stored {
            // A shown field never fails the status: an anchor that cannot be read shows none.
            Some(c) => (
                c.body.text_value().cloned().unwrap_or(Value::Null),
                Anchor::of(&c.claim, &c.body).ok(),
            ),
            None => (Value::Null, None),
        };
        let anchor_range = anchor.as_ref().and_then(|a| a.range).map(|(s, e)| [s, e]);
        let anchor_path = anchor.and_then(|a| a.path);
        let r = fold.report(id)?;
        for d in &r.decided_by_revoked {
            let roots: Vec<&str> = d.revoked_by.iter().map(|c| c.root.as_str()).collect();
            observer.warn(
                crate::error::Code::DecidedByRevokedRecord.as_str(),
                format!(
                    "{} is {} by record {}, which is itself revoked (falsified premise {}); \
                     falsify the record to disarm it",
                    r.id,
                    r.own_status,
                    d.record,
                    roots.join(", ")
                ),
            );
        }
        rows.push(StatusRow {
            status: r,
            applies: None,
            resolved: None,
            text,
            anchor_path,
            anchor_range,
            roots: Vec::new(),
        });
    }
    if let Some(resolver) = resolver.as_mut() {
        let mut claims = Vec::with_capacity(rows.len());
        for r in &rows {
            claims.push(fold.require_summary(&r.status.id)?);
        }
        let refs: Vec<_> = claims.iter().map(|c| (&c.claim, &c.body)).collect();
        let resolutions = resolver.resolve_all(&refs)?;
        for (row, res) in rows.iter_mut().zip(resolutions) {
            row.applies = Some(res.applies);
            row.resolved = Some(res.applies.applies().then_some(Resolved {
                path: res.path,
                range: res.range,
            }));
        }
        if input.places {
            // The roots are those of the log-wide status, placed at this tree.
            let mut wide = Fold::new(store);
            for row in rows.iter_mut() {
                let r = &row.status;
                if r.kind == "assertion"
                    && !r.accepted
                    && r.status == Status::Revoked
                    && row.applies.is_some_and(|a| a != Applies::Unanchored)
                {
                    row.roots = roots_at(&mut wide, resolver, &r.id)?;
                }
            }
        }
    }
    let picture = match input.picture {
        Some(max) => Some(picture_of(store, &rows, max)?),
        None => None,
    };
    Ok(StatusOutput {
        claims: rows,
        as_of,
        tree: resolver.as_ref().map(|r| r.tree().to_owned()),
        pagination,
        cursors,
        picture,
    })
}

/// What a picture of `rows` shows: the claims listed, then what decides each (its records,
/// the premises it rests on directly, the paths of its revocation), statuses log-wide.
fn picture_of(store: &Store, rows: &[StatusRow], max: usize) -> Result<Shown, Failure> {
    let mut ids: Vec<String> = rows.iter().map(|r| r.status.id.clone()).collect();
    for r in rows.iter().map(|r| &r.status) {
        ids.extend(r.decided_by.iter().cloned());
        for c in &r.revoked_by {
            ids.extend(c.path.iter().cloned());
        }
        ids.extend(r.stale_premises.iter().cloned());
        ids.extend(r.accepted_by.iter().cloned());
    }
    for r in rows {
        if let Some(c) = store.get_fold(&r.status.id)? {
            ids.extend(c.claim.depends_on);
        }
    }
    shown(store, &mut Fold::new(store), &ids, max, true)
}

/// One page of `all` after the filters: claims (with their arrival numbers) in arrival
/// order from the cursor, and the cursor (an arrival number) of the first match left over.
fn filtered_page<S: ClaimSource>(
    store: &Store,
    fold: &mut Fold<'_, S>,
    mut resolver: Option<&mut Resolver>,
    f: &Filters<'_>,
    page: &PageRequest,
) -> Result<(Vec<(u64, String)>, Pagination), Failure> {
    let limit = page.limit()?;
    let mut from = page.start()?;
    let mut ids = Vec::new();
    // A filter on the log-wide status that matches rarely folds most of the log, and the
    // fold keeps every claim's causes as text (at 100,000 claims, 0.9 GB and 4 to 5 s for
    // `--status falsified`). Folding every claim's status at once by slot instead costs a
    // walk of the whole claims table, about a tenth of what the fold costs per claim: so
    // the fold goes on while it has read less than a tenth of the log, and once it has
    // read that much without filling the page, the statuses of all are folded at once. A
    // page that fills early never pays for the whole log; one that does not pays at most
    // about twice the cheaper of the two.
    let switch_at = match resolver.is_none() && !f.given.status.is_empty() {
        true => Some((store.count()? / 10).max(FILTER_BATCH as u64)),
        false => None,
    };
    let mut read = 0u64;
    loop {
        if switch_at.is_some_and(|at| read >= at) {
            return filtered_page_wide(store, fold, f, from, limit, ids);
        }
        let batch = store.arrivals(from, FILTER_BATCH)?;
        read += batch.len() as u64;
        let Some(&(last, _)) = batch.last() else {
            return Ok(last_page(ids));
        };
        let mut claims: Vec<Arc<StoredClaim<Summary>>> = Vec::with_capacity(batch.len());
        for (_, id) in &batch {
            claims.push(fold.require_summary(id)?);
        }
        let resolutions = match resolver.as_deref_mut() {
            Some(r) => {
                let refs: Vec<_> = claims.iter().map(|c| (&c.claim, &c.body)).collect();
                Some(r.resolve_all(&refs)?)
            }
            None => None,
        };
        for (i, (seq, id)) in batch.iter().enumerate() {
            let res = resolutions.as_ref().and_then(|r| r.get(i));
            if f.pass(&claims[i], res, || Ok(fold.effective(id)?.status))? {
                if let Some(page) = take(&mut ids, limit, *seq, id) {
                    return Ok(page);
                }
            }
        }
        from = last + 1;
    }
}

/// Puts the claim `id` (arrival number `seq`), which passed the filters, on the page; when
/// the page is full already, the page as it is, with `seq` as the cursor of the rest.
fn take(
    ids: &mut Vec<(u64, String)>,
    limit: usize,
    seq: u64,
    id: &str,
) -> Option<(Vec<(u64, String)>, Pagination)> {
    if ids.len() == limit {
        let meta = Pagination::new(ids.len(), None, Some(seq));
        return Some((std::mem::take(ids), meta));
    }
    ids.push((seq, id.to_owned()));
    None
}

/// The page when the log has no more claims.
fn last_page(ids: Vec<(u64, String)>) -> (Vec<(u64, String)>, Pagination) {
    let n = ids.len();
    (ids, Pagination::new(n, None, None))
}

/// The rest of [`filtered_page`] from arrival number `from`, with `ids` found so far, the
/// log-wide statuses of every claim folded at once by slot ([`DenseFold`] over
/// [`AllClaims`](crate::store::AllClaims), one walk of the index): the same page, in less
/// time and memory when the filter matches rarely.
fn filtered_page_wide<S: ClaimSource>(
    store: &Store,
    fold: &mut Fold<'_, S>,
    f: &Filters<'_>,
    mut from: u64,
    limit: usize,
    mut ids: Vec<(u64, String)>,
) -> Result<(Vec<(u64, String)>, Pagination), Failure> {
    let snapshot = store.snapshot()?;
    let all = snapshot.all_claims()?;
    let mut statuses = DenseFold::new(&all, ClaimSource::compromise(&all));
    loop {
        let batch = store.arrivals(from, FILTER_BATCH)?;
        let Some(&(last, _)) = batch.last() else {
            return Ok(last_page(ids));
        };
        for (seq, id) in &batch {
            let slot = all
                .slot_of(id)
                .filter(|&s| all.entry_at(s).is_some())
                .ok_or_else(|| {
                    store.index_damaged(&format!(
                        "its arrivals list claim {id} and its claims table has no entry for it"
                    ))
                })?;
            let status = statuses.effective(slot)?;
            if f.rejects_status(status) {
                continue;
            }
            let claim = fold.require_summary(id)?;
            if f.pass(&claim, None, || Ok(status))? {
                if let Some(page) = take(&mut ids, limit, *seq, id) {
                    return Ok(page);
                }
            }
        }
        from = last + 1;
    }
}
