//! `elench show ID`: the claim as signed, who signed it, and the records that target it.

use super::common::{open_store, require_claim_ids, resolve_claim_id};
use crate::cli::failure::Failure;
use crate::cli::output::{claim_text, short_id, Report, Style};
use crate::cli::Globals;
use crate::fold::Fold;
use crate::store::blobs;
use serde_json::json;

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// The claim id (cl_…, or a unique prefix of at least 4 hex digits)
    pub id: String,
    /// Also print the evidence blobs the claim names (evaluation transcripts kept by
    /// `check`)
    #[arg(long)]
    pub evidence: bool,
}

pub fn run(a: ShowArgs, g: &Globals) -> Result<Report, Failure> {
    require_claim_ids([&a.id])?;
    let store = open_store(g)?;
    let id = resolve_claim_id(&store, &a.id)?;
    // The claim as signed is read from the log (and checked there); the fold needs only
    // the index.
    let stored = store.get(&id)?.ok_or_else(|| Failure::NotFound {
        code: "NOT_FOUND",
        message: format!("no claim {id} in the store"),
    })?;
    let mut fold = Fold::new(&store);
    let status = fold.report(&id)?;
    let pretty = serde_json::to_string_pretty(&stored.claim.body)
        .map_err(|e| Failure::Internal(e.to_string()))?;
    let signers: Vec<String> = stored
        .signers
        .iter()
        .map(|s| format!("{} ({} {})", s.keyid, s.role, s.name))
        .collect();
    let style = Style::new(g.mode);
    let mut text = format!(
        "{}  {}  {}\n{id}, #{} in the log\nsigned by {}\n{pretty}\n",
        style.id(&id),
        style.status(status.status.as_str()),
        style.dim(&claim_text(&stored.claim.body)),
        stored.seq,
        signers.join(", ")
    );
    for h in &status.history {
        let prose = store
            .get(&h.id)?
            .map(|c| claim_text(&c.claim.body))
            .unwrap_or_default();
        text.push_str(&format!(
            "  #{} {} {} ({})  {}\n",
            h.seq,
            h.kind,
            short_id(&h.id),
            h.status,
            style.dim(&prose)
        ));
    }
    let mut data = json!({
        "id": id,
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
