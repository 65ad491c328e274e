//! `log`: the claims in arrival order, a page at a time.

use super::page::{PageRequest, Pagination};
use super::{Context, Failure};
use crate::claim::{Gist, Kind, OriginKind};
use crate::fold::Status;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What `log` is asked.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LogInput {
    pub page: PageRequest,
    /// Also fold each entry's status (for people; the entries stay what was logged).
    pub with_status: bool,
}

/// What `log` answers: its JSON is the command's `data`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct LogOutput {
    pub entries: Vec<LogEntry>,
    /// What the page holds of the whole log.
    #[serde(skip)]
    pub pagination: Pagination,
    /// The cursor that starts at each entry (its arrival number).
    #[serde(skip)]
    pub cursors: Vec<String>,
}

/// One claim of the log.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct LogEntry {
    pub seq: u64,
    pub id: String,
    pub kind: Kind,
    pub origin: OriginKind,
    pub producer: String,
    pub target: Vec<String>,
    pub depends_on: Vec<String>,
    /// Keyids.
    pub signers: Vec<String>,
    /// With `with_status`: its effective status now.
    #[serde(skip)]
    pub status: Option<Status>,
    /// Its `assertion.text` (null when none).
    #[serde(skip)]
    pub text: Value,
}

/// One page of the log in arrival order.
pub fn log(ctx: &Context, input: &LogInput) -> Result<LogOutput, Failure> {
    let store = ctx.open_store()?;
    let (page, pagination) = input.page.of_arrivals(&store)?;
    let mut entries = Vec::with_capacity(page.len());
    let mut fold = crate::fold::Fold::new(&store);
    for (seq, id) in &page {
        // The index listed it itself: an entry it cannot find is damage.
        let c = store.get(id)?.ok_or_else(|| {
            store.index_damaged(&format!(
                "arrival #{seq} names {id}, and it has no entry for it"
            ))
        })?;
        let status = if input.with_status {
            Some(fold.effective(id)?.status)
        } else {
            None
        };
        entries.push(LogEntry {
            seq: *seq,
            id: id.clone(),
            kind: c.claim.kind,
            origin: c.claim.origin,
            producer: c.claim.producer.clone(),
            target: c.claim.target.clone(),
            depends_on: c.claim.depends_on.clone(),
            signers: c.signers.iter().map(|s| s.keyid.clone()).collect(),
            status,
            text: c.body.text_value().cloned().unwrap_or(Value::Null),
        });
    }
    Ok(LogOutput {
        entries,
        pagination,
        cursors: page.iter().map(|(seq, _)| seq.to_string()).collect(),
    })
}
