//! `elench show ID`: the claim as signed, who signed it, and the records that target it.

use super::common::{open_store, require_claim_ids};
use crate::cli::failure::Failure;
use crate::cli::output::Report;
use crate::cli::Globals;
use crate::fold::Fold;
use crate::store::blobs;
use serde_json::json;

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// The claim id (cl_…)
    pub id: String,
    /// Also print the evidence blobs the claim names (evaluation transcripts kept by
    /// `check`)
    #[arg(long)]
    pub evidence: bool,
}

pub fn run(a: ShowArgs, g: &Globals) -> Result<Report, Failure> {
    require_claim_ids([&a.id])?;
    let store = open_store(g)?;
    let mut fold = Fold::new(&store);
    let stored = fold.require(&a.id)?;
    let status = fold.report(&a.id)?;
    let pretty = serde_json::to_string_pretty(&stored.claim.body)
        .map_err(|e| Failure::Internal(e.to_string()))?;
    let signers: Vec<String> = stored
        .signers
        .iter()
        .map(|s| format!("{} ({} {})", s.keyid, s.role, s.name))
        .collect();
    let mut text = format!(
        "{}  #{} in the log, {}\nsigned by {}\n{pretty}\n",
        a.id,
        stored.seq,
        status.status,
        signers.join(", ")
    );
    for h in &status.history {
        text.push_str(&format!(
            "  #{} {} {} ({})\n",
            h.seq, h.kind, h.id, h.status
        ));
    }
    let mut data = json!({
        "id": a.id,
        "seq": stored.seq,
        "claim": stored.claim.body,
        "signers": stored.signers,
        "status": status.status,
        "history": status.history,
    });
    if a.evidence {
        let mut shown = Vec::new();
        for e in stored.claim.body["evidence"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let Some(digest) = e["digest"].as_str() else {
                continue;
            };
            let kind = e["kind"].as_str().unwrap_or_default();
            // Only digests that name blobs can be shown; others (a report's hash) are not
            // kept by the store.
            let blob = match blobs::get(store.root(), digest) {
                Ok(b) => b,
                Err(blobs::BlobError::BadDigest(_)) => None,
                Err(err) => return Err(Failure::Corrupt(err.to_string())),
            };
            match blob {
                Some(bytes) => {
                    let body = String::from_utf8_lossy(&bytes).into_owned();
                    text.push_str(&format!("\nevidence {kind} sha256:{digest}\n{body}"));
                    let parsed = serde_json::from_slice::<serde_json::Value>(&bytes)
                        .unwrap_or(serde_json::Value::String(body));
                    shown.push(
                        json!({"kind": kind, "digest": digest, "found": true, "blob": parsed}),
                    );
                }
                None => {
                    text.push_str(&format!(
                        "\nevidence {kind} sha256:{digest}: not in this store\n"
                    ));
                    shown.push(
                        json!({"kind": kind, "digest": digest, "found": false, "blob": null}),
                    );
                }
            }
        }
        data["evidence"] = json!(shown);
    }
    Ok(Report::new(data, text))
}
