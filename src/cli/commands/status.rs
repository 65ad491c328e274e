//! `elench status ID…` / `--all`: the fold of the log for each claim, and why.

use super::anchor::{tree_dir, tree_of};
use super::common::{
    claim_id_errors, open_store, pagination, require_claim_ids, resolve_claim_ids, Page,
};
use crate::anchor::{Anchor, Applies, Resolution, Resolver};
use crate::cli::args::ArgError;
use crate::cli::failure::Failure;
use crate::cli::output::{claim_text, short_id, Format, Report, Style, Warning};
use crate::cli::Globals;
use crate::fold::{ClaimStatus, Fold, Status};
use crate::store::{Store, StoredClaim};
use crate::tree::Selection;
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Claim ids (cl_…, or unique prefixes of at least 4 hex digits)
    #[arg(conflicts_with = "all")]
    pub ids: Vec<String>,
    /// Every claim, in arrival order, paginated
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub page: Page,
    /// Also say whether each claim applies at the tree in DIR (anchored, carried, stale,
    /// unanchored) and where its lines are there
    #[arg(long, value_name = "DIR")]
    pub at: Option<PathBuf>,
    /// With --at: keep the files that .gitignore, .git/info/exclude and the global excludes
    /// leave out of the tree (as `anchor --no-ignore` did)
    #[arg(long, requires = "at")]
    pub no_ignore: bool,
    /// With --all --at: only claims that apply this way (repeatable)
    #[arg(long, requires = "all", requires = "at", value_name = "HOW",
          value_parser = ["anchored", "carried", "stale", "unanchored"])]
    pub applies: Vec<String>,
    /// With --all: only claims with this (effective) status (repeatable)
    #[arg(long, requires = "all", value_name = "STATUS",
          value_parser = ["unevaluated", "verified", "falsified", "superseded", "revoked"])]
    pub status: Vec<String>,
    /// With --all: only claims of this kind (repeatable)
    #[arg(long, requires = "all", value_name = "KIND",
          value_parser = ["assertion", "falsification", "verification", "supersession", "residue-acceptance"])]
    pub kind: Vec<String>,
    /// With --all: only claims of this origin (repeatable)
    #[arg(long, requires = "all", value_name = "ORIGIN",
          value_parser = ["harness-observed", "agent-asserted", "human-asserted"])]
    pub origin: Vec<String>,
    /// With --all: only claims about a path matching this glob (repeatable; with --at, the
    /// path where the lines are at that tree)
    #[arg(long, requires = "all", value_name = "GLOB")]
    pub path: Vec<String>,
    /// With --format dot or mermaid: draw at most this many claims
    #[arg(long, value_name = "N", default_value_t = crate::cli::render::graph::DEFAULT_MAX_NODES)]
    pub max_nodes: usize,
}

/// What `status` takes, for when it was given nothing.
const USAGE: &str = "elench status <ID>... (full ids or unique prefixes such as cl_1a2b), \
                     or elench status --all [--limit N] [--cursor C] for every claim";

/// The `--all` filters.
struct Filters {
    applies: Vec<String>,
    status: Vec<String>,
    kind: Vec<String>,
    origin: Vec<String>,
    path: Option<GlobSet>,
}

impl Filters {
    fn from_args(a: &StatusArgs) -> Result<Option<Filters>, Failure> {
        if a.applies.is_empty()
            && a.status.is_empty()
            && a.kind.is_empty()
            && a.origin.is_empty()
            && a.path.is_empty()
        {
            return Ok(None);
        }
        let path = if a.path.is_empty() {
            None
        } else {
            let mut set = GlobSetBuilder::new();
            for p in &a.path {
                let g = glob(p).map_err(|e| Failure::Usage(glob_problem(p, &e)))?;
                set.add(g);
            }
            Some(
                set.build()
                    .map_err(|e| Failure::Usage(format!("--path: {e}")))?,
            )
        };
        Ok(Some(Filters {
            applies: a.applies.clone(),
            status: a.status.clone(),
            kind: a.kind.clone(),
            origin: a.origin.clone(),
            path,
        }))
    }

    /// Whether the claim passes every filter; reads its status only when asked to.
    fn pass(
        &self,
        fold: &mut Fold<'_, Store>,
        c: &StoredClaim,
        res: Option<&Resolution>,
    ) -> Result<bool, Failure> {
        let claim = &c.claim;
        let any = |list: &[String], v: &str| list.is_empty() || list.iter().any(|x| x == v);
        if !any(&self.kind, claim.kind.as_str()) || !any(&self.origin, claim.origin.as_str()) {
            return Ok(false);
        }
        if let Some(r) = res {
            if !any(&self.applies, r.applies.as_str()) {
                return Ok(false);
            }
        }
        if let Some(globs) = &self.path {
            let path = match res {
                Some(r) if r.applies.applies() => r.path.clone(),
                _ => Anchor::of(claim)?.path,
            };
            if !path.is_some_and(|p| globs.is_match(p)) {
                return Ok(false);
            }
        }
        if !self.status.is_empty() {
            let status = fold.effective(&claim.id)?.status;
            if !any(&self.status, status.as_str()) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// Claims `status --all` reads per round when filtering.
const FILTER_BATCH: usize = 512;

fn needs_ids() -> String {
    format!("status needs claim ids or --all. Usage: {USAGE}")
}

/// What `run` refuses before it opens the store, every one at once, for the check of the
/// whole command line ([`crate::cli::args`]): no ids, ids that cannot be claim ids, a
/// `--path` that is not a glob, and with `--all` the page.
pub fn argument_errors(a: &StatusArgs) -> Vec<ArgError> {
    let mut errors = Vec::new();
    if a.ids.is_empty() && !a.all {
        errors.push(ArgError::new("<ID>", None, needs_ids()));
    }
    errors.extend(claim_id_errors("<ID>", &a.ids));
    for p in &a.path {
        if let Err(e) = glob(p) {
            errors.push(ArgError::new("--path", Some(p), glob_problem(p, &e)));
        }
    }
    if a.all {
        errors.extend(a.page.argument_errors());
    }
    errors
}

fn glob(p: &str) -> Result<globset::Glob, globset::Error> {
    GlobBuilder::new(p).literal_separator(true).build()
}

fn glob_problem(p: &str, e: &globset::Error) -> String {
    format!("--path {p:?} is not a glob: {}", e.kind())
}

pub fn run(a: StatusArgs, g: &Globals) -> Result<Report, Failure> {
    if a.ids.is_empty() && !a.all {
        return Err(Failure::Usage(needs_ids()));
    }
    require_claim_ids(&a.ids)?;
    let filters = Filters::from_args(&a)?;
    let store = open_store(g)?;
    // One read transaction for the whole answer: a snapshot as of one state of the log.
    let _snapshot = store.pin()?;
    let as_of = store.count()?;
    let mut tracked = None;
    let mut resolver = match &a.at {
        Some(at) => {
            let dir = tree_dir(Some(at))?;
            let selection = Selection::from_no_ignore(a.no_ignore);
            let (tree, warning) = tree_of(&dir, selection)?;
            tracked = warning;
            Some(Resolver::new(&dir, &tree).with_selection(selection))
        }
        None => None,
    };
    let mut fold = Fold::new(&store);
    // With --all, each claim's arrival number is the cursor that starts at it.
    let (ids, pagination_meta, cursors) = match (&filters, a.all) {
        (Some(f), true) => {
            let (page, meta) = filtered_page(&store, &mut fold, resolver.as_mut(), f, &a.page)?;
            let cursors = page.iter().map(|(seq, _)| seq.to_string()).collect();
            (
                page.into_iter().map(|(_, id)| id).collect(),
                Some(meta),
                cursors,
            )
        }
        (_, true) => {
            let (page, meta) = a.page.of_arrivals(&store)?;
            let cursors = page.iter().map(|(seq, _)| seq.to_string()).collect();
            (
                page.into_iter().map(|(_, id)| id).collect(),
                Some(meta),
                cursors,
            )
        }
        (_, false) => (resolve_claim_ids(&store, &a.ids)?, None, Vec::new()),
    };
    let mut unknown = Vec::new();
    for id in &ids {
        if fold.claim(id)?.is_none() {
            unknown.push(id.clone());
        }
    }
    if !unknown.is_empty() && a.all {
        // The index listed them itself.
        let why = format!("it lists claim {} and has no entry for it", unknown[0]);
        return Err(store.index_damaged(&why).into());
    }
    if !unknown.is_empty() {
        return Err(Failure::claim_not_found(&unknown));
    }
    let mut reports = Vec::with_capacity(ids.len());
    let mut proses = Vec::with_capacity(ids.len());
    // What the text shows beside each status, whole, for the JSON rows: the claim's text
    // and the path its anchor names.
    let mut about = Vec::with_capacity(ids.len());
    let mut warnings: Vec<Warning> = tracked.into_iter().collect();
    for id in &ids {
        // Reading the claim's record from the log checks it: a damaged record is
        // STORE_CORRUPT, never a status. Its text is what people see beside the status.
        let stored = store.get(id)?;
        proses.push(
            stored
                .as_ref()
                .map(|c| claim_text(&c.claim.body))
                .unwrap_or_default(),
        );
        about.push(match &stored {
            // A shown field never fails the status: an anchor that cannot be read shows none.
            Some(c) => (
                c.claim.body.pointer("/assertion/text").cloned(),
                Anchor::of(&c.claim).ok().and_then(|a| a.path),
            ),
            None => (None, None),
        });
        let r = fold.report(id)?;
        for d in &r.decided_by_revoked {
            let roots: Vec<&str> = d.revoked_by.iter().map(|c| c.root.as_str()).collect();
            warnings.push(Warning::new(
                "DECIDED_BY_REVOKED_RECORD",
                format!(
                    "{} is {} by record {}, which is itself revoked (falsified premise {}); \
                     falsify the record to disarm it",
                    r.id,
                    r.own_status,
                    d.record,
                    roots.join(", ")
                ),
            ));
        }
        reports.push(r);
    }
    let format = crate::cli::output::Format::detect(g.format.as_deref());
    if format.is_product() {
        warnings.extend(crate::cli::render::page_cut(pagination_meta.as_ref()));
    }
    if matches!(format, Format::Dot | Format::Mermaid) {
        let picture = crate::cli::render::status_picture(&store, &reports, format, a.max_nodes)?;
        return Ok(Report {
            warnings,
            ..picture
        });
    }
    if let (Format::Sarif, Some(resolver)) = (format, resolver.as_mut()) {
        let doc = crate::cli::render::status_sarif(&reports, &mut fold, resolver)?;
        return Ok(Report {
            warnings,
            product: Some(doc),
            ..Report::default()
        });
    }
    let style = Style::new(g.mode);
    let texts: Vec<String> = reports
        .iter()
        .zip(&proses)
        .map(|(r, prose)| text_of(r, prose, &style))
        .collect();
    let (mut claims, mut text) = match resolver.as_mut() {
        None => (
            serde_json::to_value(&reports)
                .map_err(|e| Failure::Internal(format!("status report: {e}")))?,
            texts.join("\n"),
        ),
        Some(resolver) => with_applies(&mut fold, resolver, &reports, &texts)?,
    };
    if let Value::Array(rows) = &mut claims {
        for (row, (prose, path)) in rows.iter_mut().zip(about) {
            row["text"] = prose.unwrap_or(Value::Null);
            row["anchor_path"] = json!(path);
        }
    }
    // A page that is not the whole list says how to get the rest, as `log` does.
    if let Some(next) = pagination_meta
        .as_ref()
        .and_then(|p| p["next_cursor"].as_str())
    {
        text.push_str(&format!("(more: --cursor {next})\n"));
    }
    let mut data = json!({"claims": claims, "as_of": as_of});
    if let Some(r) = &resolver {
        data["tree"] = json!(r.tree());
    }
    Ok(Report {
        data,
        text: format!("{text}(as of {as_of} log entries)\n"),
        warnings,
        pagination: pagination_meta,
        cursors,
        ..Report::default()
    })
}

/// One page of `--all` after the filters: claims (with their arrival numbers) in arrival
/// order from the cursor, and the cursor (an arrival number) of the first match left over.
fn filtered_page(
    store: &Store,
    fold: &mut Fold<'_, Store>,
    mut resolver: Option<&mut Resolver>,
    f: &Filters,
    page: &Page,
) -> Result<(Vec<(u64, String)>, Value), Failure> {
    let limit = page.limit()?;
    let mut from = page.start()?;
    let mut ids = Vec::new();
    loop {
        let batch = store.arrivals(from, FILTER_BATCH)?;
        let Some(&(last, _)) = batch.last() else {
            let meta = pagination(ids.len(), None, None);
            return Ok((ids, meta));
        };
        let mut claims: Vec<Arc<StoredClaim>> = Vec::with_capacity(batch.len());
        for (_, id) in &batch {
            claims.push(fold.require_summary(id)?);
        }
        let resolutions = match resolver.as_deref_mut() {
            Some(r) => {
                let refs: Vec<_> = claims.iter().map(|c| &c.claim).collect();
                Some(r.resolve_all(&refs)?)
            }
            None => None,
        };
        for (i, (seq, id)) in batch.iter().enumerate() {
            let res = resolutions.as_ref().and_then(|r| r.get(i));
            if f.pass(fold, &claims[i], res)? {
                if ids.len() == limit {
                    let meta = pagination(ids.len(), None, Some(*seq));
                    return Ok((ids, meta));
                }
                ids.push((*seq, id.clone()));
            }
        }
        from = last + 1;
    }
}

/// The reports as JSON with `applies` and `resolved` (`{path, range}`, null unless the claim
/// applies) added, and their text with one more line each.
fn with_applies(
    fold: &mut Fold<'_, Store>,
    resolver: &mut Resolver,
    reports: &[ClaimStatus],
    texts: &[String],
) -> Result<(Value, String), Failure> {
    let mut claims = Vec::with_capacity(reports.len());
    for r in reports {
        claims.push(fold.require_summary(&r.id)?);
    }
    let refs: Vec<_> = claims.iter().map(|c| &c.claim).collect();
    let resolutions = resolver.resolve_all(&refs)?;
    let mut out = Vec::with_capacity(reports.len());
    let mut lines = Vec::with_capacity(reports.len());
    for ((r, res), text) in reports.iter().zip(&resolutions).zip(texts) {
        let mut v = serde_json::to_value(r)
            .map_err(|e| Failure::Internal(format!("status report: {e}")))?;
        v["applies"] = json!(res.applies);
        v["resolved"] = if res.applies.applies() {
            json!({"path": res.path, "range": res.range})
        } else {
            Value::Null
        };
        out.push(v);
        lines.push(format!("{text}  applies: {}\n", applies_text(res)));
    }
    Ok((Value::Array(out), lines.join("\n")))
}

fn applies_text(res: &Resolution) -> String {
    let mut t = res.applies.to_string();
    if res.applies == Applies::Carried || res.applies == Applies::Anchored {
        if let Some(p) = &res.path {
            t.push_str(&format!(" at {p}"));
            if let Some([s, e]) = res.range {
                t.push_str(&format!(":{s}-{e}"));
            }
        }
    }
    t
}

/// Several ids, short, for people.
fn shorts(ids: &[String]) -> String {
    ids.iter()
        .map(|i| short_id(i))
        .collect::<Vec<_>>()
        .join(", ")
}

fn text_of(r: &ClaimStatus, prose: &str, st: &Style) -> String {
    let mut t = format!("{}  {}", st.id(&r.id), st.status(r.status.as_str()));
    if r.status != r.own_status {
        t.push_str(&format!(" (own: {})", r.own_status));
    }
    if r.accepted {
        t.push_str(" (accepted)");
    }
    if !prose.is_empty() {
        t.push_str(&format!("  {}", st.dim(prose)));
    }
    t.push_str(&format!(
        "\n  {} · {} · producer {} · {}\n",
        r.kind, r.origin, r.producer, r.id
    ));
    if !r.decided_by.is_empty() {
        t.push_str(&format!("  decided by {}\n", shorts(&r.decided_by)));
    }
    for d in &r.decided_by_revoked {
        t.push_str(&format!(
            "  ! deciding record {} is itself revoked\n",
            short_id(&d.record)
        ));
    }
    if r.status == Status::Revoked {
        for c in &r.revoked_by {
            let path: Vec<&str> = c.path.iter().map(|p| short_id(p)).collect();
            t.push_str(&format!(
                "  revoked by falsified {}\n    path {}\n",
                short_id(&c.root),
                path.join(" → ")
            ));
        }
    }
    for p in &r.missing_premises {
        t.push_str(&format!("  missing premise {p} (not in the store)\n"));
    }
    for p in &r.stale_premises {
        t.push_str(&format!("  stale premise {p} (superseded)\n"));
    }
    if !r.accepted_by.is_empty() {
        t.push_str(&format!(
            "  residue accepted by {}\n",
            shorts(&r.accepted_by)
        ));
    }
    if !r.history.is_empty() {
        t.push_str("  history:\n");
        for h in &r.history {
            t.push_str(&format!(
                "    #{} {} {} ({}{})\n",
                h.seq,
                h.kind,
                short_id(&h.id),
                h.status,
                if h.live { "" } else { ", not acting" }
            ));
        }
    }
    t
}
