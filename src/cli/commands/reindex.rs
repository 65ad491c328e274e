//! `elench reindex`: rebuild the index from the log (it is never the source of truth).

use super::common::open_store_unsettled;
use crate::cli::failure::Failure;
use crate::cli::output::Report;
use crate::cli::Globals;
use serde_json::json;

#[derive(Debug, clap::Args)]
pub struct ReindexArgs {}

pub fn run(_a: ReindexArgs, g: &Globals) -> Result<Report, Failure> {
    let store = open_store_unsettled(g)?;
    // The index being replaced says how long the log was; a guess only if it is damaged.
    let total = store.meta().map(|m| m.head.records).unwrap_or(0);
    let meta =
        super::common::with_records_bar("reindexing", total, |progress| store.reindex(progress));
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
