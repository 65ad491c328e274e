//! `elench reindex`: rebuild the index from the log (it is never the source of truth).

use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::output::Report;
use elench::store::Store;
use serde_json::json;

#[derive(Debug, clap::Args)]
pub struct ReindexArgs {}

pub fn run(_a: ReindexArgs, g: &Globals) -> Result<Report, Failure> {
    let root = elench::store::locate(g.store.as_deref())?;
    let wait = std::time::Duration::from_secs(g.wait);
    // The index being replaced is never read (it may be damaged): the bar counts records
    // without knowing how many there are.
    let meta = crate::cli::progress::with_records_bar("reindexing", 0, |progress| {
        let options = elench::store::Options::new(wait)
            .observer(crate::cli::output::observer())
            .envs(&g.envs);
        Store::reindex_at(&root, &options, progress)
    });
    let meta = meta?;
    Ok(Report::new(
        json!({
            "records": meta.head.records,
            "claims": meta.counts.claims,
            "envelopes": meta.counts.envelopes,
            "chain": hex::encode(meta.head.chain),
            "effect": "updated",
        }),
        format!(
            "rebuilt the index from {} log records ({} claims, {} envelopes)\n",
            meta.head.records, meta.counts.claims, meta.counts.envelopes
        ),
    ))
}
