//! What several commands share: opening the store, pagination.

use crate::cli::args::ArgError;
use crate::cli::failure::Failure;
use crate::cli::Globals;
use crate::store::{locate, Store};
use indicatif::ProgressDrawTarget;
use serde_json::{json, Value};
use std::time::Duration;

/// Opens the store the globals name (or the nearest `.elench`).
pub fn open_store(g: &Globals) -> Result<Store, Failure> {
    let root = locate(g.store.as_deref())?;
    Ok(Store::open(&root, Duration::from_secs(g.wait))?)
}

/// Refuses an output path inside the store: only the store writes there.
pub fn refuse_inside_store(
    path: &std::path::Path,
    store_root: &std::path::Path,
) -> Result<(), Failure> {
    let root = std::fs::canonicalize(store_root).unwrap_or_else(|_| store_root.to_path_buf());
    // The file may not exist yet: resolve its folder.
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let Ok(dir) = std::fs::canonicalize(parent) else {
        return Ok(());
    };
    if dir.starts_with(&root) {
        return Err(Failure::Usage(format!(
            "{} is inside the store {}; only elench's store writes there: choose a path outside it",
            path.display(),
            root.display()
        )));
    }
    Ok(())
}

/// Opens the store without bringing its index level with the log (`fsck`).
pub fn open_store_unsettled(g: &Globals) -> Result<Store, Failure> {
    let root = locate(g.store.as_deref())?;
    Ok(Store::open_unsettled(&root, Duration::from_secs(g.wait))?)
}

/// Opens the store if there is one; no store is not an error here.
pub fn open_store_if_any(g: &Globals) -> Result<Option<Store>, Failure> {
    match locate(g.store.as_deref()) {
        Ok(root) => match Store::open(&root, Duration::from_secs(g.wait)) {
            Ok(s) => Ok(Some(s)),
            Err(crate::store::StoreError::NotFound(_)) if g.store.is_none() => Ok(None),
            Err(e) => Err(e.into()),
        },
        Err(crate::store::StoreError::NotFound(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Fewest hex digits after `cl_` that a short id may have.
pub const MIN_PREFIX_HEX: usize = 4;
/// How many candidates an ambiguous short id lists.
const MAX_CANDIDATES: usize = 10;

/// Whether `arg` is a claim id or a short one: `cl_` then 4 to 64 lowercase hex digits.
fn is_id_or_prefix(arg: &str) -> bool {
    arg.strip_prefix("cl_").is_some_and(|hex| {
        (MIN_PREFIX_HEX..=64).contains(&hex.len())
            && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// Why `arg` cannot be a claim id or a short one, if it cannot.
pub fn claim_id_problem(arg: &str) -> Option<String> {
    (!is_id_or_prefix(arg)).then(|| {
        format!(
            "{arg:?} is not a claim id: give cl_ followed by 64 lowercase hex digits, or a \
             unique prefix of at least {MIN_PREFIX_HEX} of them (as `elench log` shows)"
        )
    })
}

/// Refuses arguments that cannot be claim ids or short ids (a bad argument, exit 2, rather
/// than an id that is merely unknown, exit 5). Lets a command refuse before doing any work.
pub fn require_claim_ids<'a>(ids: impl IntoIterator<Item = &'a String>) -> Result<(), Failure> {
    match Failure::arguments(claim_id_errors("<ID>", ids)) {
        Some(f) => Err(f),
        None => Ok(()),
    }
}

/// Every argument of `param` that cannot be a claim id, for the check of the whole command
/// line ([`crate::cli::args`]).
pub fn claim_id_errors<'a>(
    param: &str,
    ids: impl IntoIterator<Item = &'a String>,
) -> Vec<ArgError> {
    ids.into_iter()
        .filter_map(|id| claim_id_problem(id).map(|m| ArgError::identifier(param, id, m)))
        .collect()
}

/// The full id a claim id argument names. A full id is returned as given (whether it is
/// stored is the caller's question); a short one must match exactly one stored claim.
pub fn resolve_claim_id(store: &Store, arg: &str) -> Result<String, Failure> {
    require_claim_ids([&arg.to_owned()])?;
    if crate::claim::is_claim_id(arg) {
        return Ok(arg.to_owned());
    }
    let mut found = store.ids_with_prefix(arg, MAX_CANDIDATES + 1)?;
    match found.len() {
        0 => Err(Failure::claim_not_found(&[arg.to_owned()])),
        1 => Ok(found.remove(0)),
        n => {
            let more = n > MAX_CANDIDATES;
            found.truncate(MAX_CANDIDATES);
            Err(Failure::Ambiguous {
                input: arg.to_owned(),
                candidates: found,
                more,
            })
        }
    }
}

/// [`resolve_claim_id`] for each argument, in order.
pub fn resolve_claim_ids(store: &Store, args: &[String]) -> Result<Vec<String>, Failure> {
    args.iter().map(|a| resolve_claim_id(store, a)).collect()
}

/// `--limit` and `--cursor` for lists.
#[derive(Debug, Clone, clap::Args)]
pub struct Page {
    /// How many items to return, 1 to 10000
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// Where to continue: the `next_cursor` of the previous page
    #[arg(long)]
    pub cursor: Option<String>,
}

impl Page {
    /// The cursor as a position (the number of items to skip, or an arrival number).
    pub fn start(&self) -> Result<u64, Failure> {
        match &self.cursor {
            None => Ok(0),
            Some(c) => c.parse().map_err(|_| Failure::Usage(cursor_problem(c))),
        }
    }

    pub fn limit(&self) -> Result<usize, Failure> {
        if !(1..=MAX_LIMIT).contains(&self.limit) {
            return Err(Failure::Usage(limit_problem()));
        }
        Ok(self.limit)
    }

    /// What [`Page::limit`] and [`Page::start`] refuse, both at once, for the check of the
    /// whole command line ([`crate::cli::args`]).
    pub fn argument_errors(&self) -> Vec<ArgError> {
        let mut errors = Vec::new();
        if self.limit().is_err() {
            let shown = self.limit.to_string();
            errors.push(ArgError::new("--limit", Some(&shown), limit_problem()));
        }
        if let Some(c) = &self.cursor {
            if c.parse::<u64>().is_err() {
                errors.push(ArgError::new("--cursor", Some(c), cursor_problem(c)));
            }
        }
        errors
    }

    /// One page of the log in arrival order, and its `meta.pagination`.
    pub fn of_arrivals(&self, store: &Store) -> Result<(Vec<(u64, String)>, Value), Failure> {
        let start = self.start()?;
        let limit = self.limit()?;
        let mut page = store.arrivals(start, limit.saturating_add(1))?;
        let more = page.len() > limit;
        page.truncate(limit);
        let next = more.then(|| start + page.len() as u64);
        let meta = pagination(page.len(), Some(store.count()?), next);
        Ok((page, meta))
    }

    /// One page of an in-memory list, its `meta.pagination`, and the cursor that starts at
    /// each of its items (see [`Report::cursors`](crate::cli::output::Report)).
    pub fn of_slice<'a, T>(
        &self,
        items: &'a [T],
    ) -> Result<(&'a [T], Value, Vec<String>), Failure> {
        let start = usize::try_from(self.start()?)
            .unwrap_or(usize::MAX)
            .min(items.len());
        let end = start.saturating_add(self.limit()?).min(items.len());
        let next = (end < items.len()).then_some(end as u64);
        Ok((
            &items[start..end],
            pagination(end - start, Some(items.len() as u64), next),
            (start..end).map(|i| i.to_string()).collect(),
        ))
    }
}

/// The largest page `--limit` allows.
pub const MAX_LIMIT: usize = 10_000;

fn limit_problem() -> String {
    format!("--limit must be between 1 and {MAX_LIMIT}")
}

fn cursor_problem(c: &str) -> String {
    format!("--cursor {c:?} is not a cursor elench gave")
}

/// The `meta.pagination` object, with every field the CLI Agent Spec requires: `total`
/// (items over all pages, null when not known), `returned` (in this page), `truncated` (the
/// limit cut the list short), `has_more` and `next_cursor` (null on the last page).
pub fn pagination(returned: usize, total: Option<u64>, next: Option<u64>) -> Value {
    json!({
        "total": total,
        "returned": returned,
        "truncated": next.is_some(),
        "has_more": next.is_some(),
        "next_cursor": next.map(|n| n.to_string()),
    })
}

/// Runs `walk` with a progress callback that moves a bar on stderr over the log's `total`
/// records (`fsck`, `reindex`), only when stderr is a terminal: piped or scripted runs get
/// the final report alone. The bar is cleared when the walk ends, however it ends.
pub fn with_records_bar<R>(
    verb: &str,
    total: u64,
    walk: impl FnOnce(Option<&(dyn Fn(u64) + Sync)>) -> R,
) -> R {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return walk(None);
    }
    let bar = show_bar(
        indicatif::ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden()),
        "{msg} {bar:30} {pos}/{len} records ({eta} left)",
        verb,
    );
    let result = walk(Some(&|n| bar.set_position(n)));
    bar.finish_and_clear();
    result
}

/// A rebuild or catch-up that lasts longer than this gets a spinner: quick ones stay silent.
const SPINNER_AFTER: Duration = Duration::from_millis(500);

/// The listener for rebuilds the store starts by itself on open ([`crate::store::Progress`]):
/// on a terminal, once the work has taken [`SPINNER_AFTER`], a spinner on stderr counts the
/// records applied (how many there are is unknown while the index is missing); it is
/// cleared when the listener is dropped at the end of the work.
pub fn rebuild_spinner(what: &str) -> Option<crate::store::Progress> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let what = what.to_owned();
    let started = std::time::Instant::now();
    let spinner = std::sync::OnceLock::<indicatif::ProgressBar>::new();
    Some(Box::new(move |n| {
        if started.elapsed() < SPINNER_AFTER {
            return;
        }
        let bar = spinner.get_or_init(|| {
            let bar = indicatif::ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden())
                .with_finish(indicatif::ProgressFinish::AndClear);
            bar.set_position(n);
            show_bar(bar, "{msg} {spinner} {pos} records", &what)
        });
        bar.set_position(n);
    }))
}

/// Shows a bar made hidden on stderr, ticking, with its style and message set first (so its
/// first frame is whole), and registered so that the report of a command stopped in the
/// middle of its work clears it.
fn show_bar(bar: indicatif::ProgressBar, template: &str, message: &str) -> indicatif::ProgressBar {
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar.set_message(message.to_owned());
    bar.set_draw_target(ProgressDrawTarget::stderr());
    crate::cli::output::progress_shown(&bar);
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}
