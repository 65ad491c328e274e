//! `show`: a claim as signed, who signed it, and the records that target it.

use super::ids::{require_claim_ids, resolve_claim_id};
use super::{Context, Failure};
use crate::claim::Gist;
use crate::fold::{Fold, HistoryEntry, Status};
use crate::ingest::Signer;
use crate::store::blobs;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What `show` is asked.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ShowInput {
    /// The claim id (whole, or a unique prefix).
    pub id: String,
    /// Also the evidence blobs the claim names (transcripts kept by `check`).
    pub evidence: bool,
}

/// What `show` answers: its JSON is the command's `data`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct ShowOutput {
    pub id: String,
    /// Its arrival number.
    pub seq: u64,
    /// The claim exactly as signed.
    pub claim: Value,
    pub signers: Vec<Signer>,
    pub status: Status,
    /// The records targeting it, in arrival order.
    pub history: Vec<HistoryEntry>,
    /// With `evidence`: each blob the claim names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Vec<Evidence>>,
    /// The claim text of each record in `history`, in its order (for people).
    #[serde(skip)]
    pub history_texts: Vec<Value>,
}

/// One evidence blob a claim names.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct Evidence {
    pub kind: String,
    pub digest: String,
    /// Whether this store holds it.
    pub found: bool,
    /// The blob as JSON, or as text when it is not JSON; null when not found.
    pub blob: Value,
    /// The blob's bytes as text (for people).
    #[serde(skip)]
    pub body: Option<String>,
}

/// A claim as signed, its signers, status and history, and with `evidence` its blobs.
pub fn show(ctx: &Context, input: &ShowInput) -> Result<ShowOutput, Failure> {
    require_claim_ids([&input.id])?;
    let store = ctx.open_store()?;
    // One snapshot of the index for every read below (and one read transaction, not one
    // per lookup).
    let _snapshot = store.pin()?;
    let id = resolve_claim_id(&store, &input.id)?;
    // The claim as signed is read from the log (and checked there); the fold needs only
    // the index.
    let stored = store.get(&id)?.ok_or_else(|| Failure::NotFound {
        code: crate::error::Code::NotFound,
        message: format!("no claim {id} in the store"),
    })?;
    let mut fold = Fold::new(&store);
    let status = fold.report(&id)?;
    let mut history_texts = Vec::with_capacity(status.history.len());
    for h in &status.history {
        history_texts.push(
            store
                .get(&h.id)?
                .and_then(|c| c.body.text_value().cloned())
                .unwrap_or(Value::Null),
        );
    }
    let evidence = if input.evidence {
        let mut shown = Vec::new();
        for e in stored.body.evidence() {
            let Some(digest) = e["digest"].as_str() else {
                continue;
            };
            let kind = e["kind"].as_str().unwrap_or_default().to_owned();
            // Only digests that name blobs can be shown; others (a report's hash) are not
            // kept by the store.
            let blob = match blobs::get(store.root(), digest) {
                Ok(b) => b,
                Err(blobs::BlobError::BadDigest(_)) => None,
                Err(err) => return Err(Failure::Corrupt(err.to_string())),
            };
            shown.push(match blob {
                Some(bytes) => {
                    let body = String::from_utf8_lossy(&bytes).into_owned();
                    let parsed = serde_json::from_slice::<Value>(&bytes)
                        .unwrap_or_else(|_| Value::String(body.clone()));
                    Evidence {
                        kind,
                        digest: digest.to_owned(),
                        found: true,
                        blob: parsed,
                        body: Some(body),
                    }
                }
                None => Evidence {
                    kind,
                    digest: digest.to_owned(),
                    found: false,
                    blob: Value::Null,
                    body: None,
                },
            });
        }
        Some(shown)
    } else {
        None
    };
    Ok(ShowOutput {
        id,
        seq: stored.seq,
        claim: stored.body.into_value(),
        signers: stored.signers,
        status: status.status,
        history: status.history,
        evidence,
        history_texts,
    })
}
