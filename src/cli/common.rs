//! What several commands share: opening the store, pagination, `--id-only`. Below every
//! command module, so that no command imports another.

use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::output::Report;
use serde_json::Value;

/// An operation's result as a report's `data`.
pub fn to_data(v: &impl serde::Serialize) -> Result<Value, Failure> {
    serde_json::to_value(v).map_err(|e| Failure::Internal(e.to_string()))
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
        return Err(Failure::usage(
            None,
            format!(
            "{} is inside the store {}; only elench's store writes there: choose a path outside it",
            path.display(),
            root.display()
        ),
        ));
    }
    Ok(())
}

/// `--limit` and `--cursor` for lists.
#[derive(Debug, Clone, clap::Args)]
pub struct Page {
    /// How many items to return, 1 to 10000
    #[arg(long, default_value_t = 20, value_parser = crate::cli::values::limit)]
    pub limit: usize,
    /// Where to continue: the `next_cursor` of the previous page
    #[arg(long, value_parser = crate::cli::values::cursor)]
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

use elench::ops::page::{PageRequest, Pagination};

/// [`Pagination`] as the `meta.pagination` object.
pub fn pagination_json(p: &Pagination) -> Value {
    // Plain fields: serialising them cannot fail.
    serde_json::to_value(p).unwrap_or_default()
}

/// `--id-only`: stdout gets the claim id and a newline and nothing else; a failure goes to
/// stderr (with its exit code), so `$(…)` never captures an error as an id.
pub fn print_id_only(r: Result<Report, Failure>, g: &Globals) -> Result<Report, Failure> {
    let taken = |failure| Report {
        failure: Some(failure),
        stdout_taken: true,
        ..Report::default()
    };
    if let Some(f @ ("json" | "jsonl" | "tsv")) = g.format.as_deref() {
        return Ok(taken(Failure::usage(
            None,
            format!("--id-only prints the bare id, where --format {f} needs the report; give one"),
        )));
    }
    let mut report = match r {
        Ok(report) => report,
        Err(f) => return Ok(taken(f)),
    };
    if let Some(f) = report.failure.take() {
        return Ok(taken(f));
    }
    let Some(id) = report.data["id"].as_str() else {
        return Ok(taken(Failure::Internal("no id to print".into())));
    };
    if let Err(f) = crate::cli::files::product_to_stdout(format!("{id}\n").as_bytes()) {
        return Ok(taken(f));
    }
    crate::cli::output::warnings_to_stderr(&report.warnings);
    report.stdout_taken = true;
    Ok(report)
}
