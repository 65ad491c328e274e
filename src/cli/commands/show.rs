//! `elench show ID`: the claim as signed, who signed it, and the records that target it.

use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::output::{claim_text, one_line, short_id, Report, Style};
use elench::ops::show::{show, ShowInput};

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// The claim id (cl_…, or a unique prefix of at least 4 hex digits)
    #[arg(value_parser = crate::cli::values::claim_id)]
    pub id: crate::cli::values::ClaimRef,
    /// Also print the evidence blobs the claim names (evaluation transcripts kept by
    /// `check`)
    #[arg(long)]
    pub evidence: bool,
}

pub fn run(a: ShowArgs, g: &Globals) -> Result<Report, Failure> {
    let out = show(
        &g.context(),
        &ShowInput {
            id: a.id.into(),
            evidence: a.evidence,
        },
    )?;
    let pretty =
        serde_json::to_string_pretty(&out.claim).map_err(|e| Failure::Internal(e.to_string()))?;
    let signers: Vec<String> = out
        .signers
        .iter()
        .map(|s| format!("{} ({} {})", s.keyid, s.role, s.name))
        .collect();
    let style = Style::new(g.mode);
    let mut text = format!(
        "{}  {}  {}\n{}, #{} in the log\nsigned by {}\n{pretty}\n",
        style.id(&out.id),
        style.status(out.status.as_str()),
        style.dim(&claim_text(&out.claim)),
        out.id,
        out.seq,
        signers.join(", ")
    );
    for (h, prose) in out.history.iter().zip(&out.history_texts) {
        let prose = prose.as_str().map(one_line).unwrap_or_default();
        text.push_str(&format!(
            "  #{} {} {} ({})  {}\n",
            h.seq,
            h.kind,
            short_id(&h.id),
            h.status,
            style.dim(&prose)
        ));
    }
    for e in out.evidence.iter().flatten() {
        match &e.body {
            Some(body) => text.push_str(&format!(
                "\nevidence {} sha256:{}\n{body}",
                e.kind, e.digest
            )),
            None => text.push_str(&format!(
                "\nevidence {} sha256:{}: not in this store\n",
                e.kind, e.digest
            )),
        }
    }
    let data = serde_json::to_value(&out).map_err(|e| Failure::Internal(format!("show: {e}")))?;
    Ok(Report::new(data, text))
}
