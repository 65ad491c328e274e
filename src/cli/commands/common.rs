//! What several commands share: opening the store, pagination.

use crate::cli::args::ArgError;
use crate::cli::failure::Failure;
use crate::cli::Globals;
use crate::store::Store;
use indicatif::ProgressDrawTarget;
use serde_json::{json, Value};
use std::time::Duration;

/// Opens the store the globals name (or the nearest `.elench`).
pub fn open_store(g: &Globals) -> Result<Store, Failure> {
    g.context().open_store()
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
    g.context().open_store_unsettled()
}

/// Opens the store if there is one; no store is not an error here.
pub fn open_store_if_any(g: &Globals) -> Result<Option<Store>, Failure> {
    g.context().open_store_if_any()
}

pub use crate::ops::ids::{
    claim_id_errors, claim_id_problem, require_claim_ids, resolve_claim_id, resolve_claim_ids,
    MIN_PREFIX_HEX,
};

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
pub fn rebuild_spinner(what: &str) -> Option<crate::ops::Progress> {
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
