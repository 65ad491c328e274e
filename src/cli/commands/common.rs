//! What several commands share: opening the store, pagination.

use crate::cli::args::ArgError;
use crate::cli::failure::Failure;
use crate::cli::Globals;
use crate::store::Store;
use indicatif::ProgressDrawTarget;
use serde_json::Value;
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
    /// The page as the operations take it.
    pub fn request(&self) -> PageRequest {
        PageRequest {
            limit: self.limit,
            cursor: self.cursor.clone(),
        }
    }

    /// The cursor as a position (the number of items to skip, or an arrival number).
    pub fn start(&self) -> Result<u64, Failure> {
        self.request().start()
    }

    pub fn limit(&self) -> Result<usize, Failure> {
        self.request().limit()
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
        let (page, meta) = self.request().of_arrivals(store)?;
        Ok((page, pagination_json(&meta)))
    }

    /// One page of an in-memory list, its `meta.pagination`, and the cursor that starts at
    /// each of its items (see [`Report::cursors`](crate::cli::output::Report)).
    pub fn of_slice<'a, T>(
        &self,
        items: &'a [T],
    ) -> Result<(&'a [T], Value, Vec<String>), Failure> {
        let (page, meta, cursors) = self.request().of_slice(items)?;
        Ok((page, pagination_json(&meta), cursors))
    }
}

pub use crate::ops::page::MAX_LIMIT;
use crate::ops::page::{cursor_problem, limit_problem, PageRequest, Pagination};

/// The `meta.pagination` object ([`Pagination`]).
pub fn pagination(returned: usize, total: Option<u64>, next: Option<u64>) -> Value {
    pagination_json(&Pagination::new(returned, total, next))
}

/// [`Pagination`] as the `meta.pagination` object.
pub fn pagination_json(p: &Pagination) -> Value {
    // Plain fields: serialising them cannot fail.
    serde_json::to_value(p).unwrap_or_default()
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

/// A listener that moves a bar on stderr over `total` records, only when stderr is a
/// terminal; the bar is cleared when the listener is dropped (the work ended, however).
pub fn records_bar(verb: &str, total: u64) -> Option<crate::ops::Progress> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = show_bar(
        indicatif::ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden())
            .with_finish(indicatif::ProgressFinish::AndClear),
        "{msg} {bar:30} {pos}/{len} records ({eta} left)",
        verb,
    );
    Some(Box::new(move |n| bar.set_position(n)))
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
