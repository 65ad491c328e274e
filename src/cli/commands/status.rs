//! `elench status ID…` / `--all`: the fold of the log for each claim, and why.

use super::common::{open_store, require_claim_ids, resolve_claim_ids, Page};
use crate::cli::failure::Failure;
use crate::cli::output::{Report, Warning};
use crate::cli::Globals;
use crate::fold::{ClaimStatus, Fold, Status};
use serde_json::json;

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Claim ids (cl_…, or unique prefixes of at least 4 hex digits)
    #[arg(conflicts_with = "all")]
    pub ids: Vec<String>,
    /// Every claim, in arrival order, paginated
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub page: Page,
}

/// What `status` takes, for when it was given nothing.
const USAGE: &str = "elench status <ID>... (full ids or unique prefixes such as cl_1a2b), \
                     or elench status --all [--limit N] [--cursor C] for every claim";

pub fn run(a: StatusArgs, g: &Globals) -> Result<Report, Failure> {
    if a.ids.is_empty() && !a.all {
        return Err(Failure::Usage(format!(
            "status needs claim ids or --all. Usage: {USAGE}"
        )));
    }
    require_claim_ids(&a.ids)?;
    let store = open_store(g)?;
    let as_of = store.count()?;
    let (ids, pagination_meta) = if a.all {
        let (page, meta) = a.page.of_arrivals(&store)?;
        (page.into_iter().map(|(_, id)| id).collect(), Some(meta))
    } else {
        (resolve_claim_ids(&store, &a.ids)?, None)
    };
    let mut fold = Fold::new(&store);
    let mut unknown = Vec::new();
    for id in &ids {
        if fold.claim(id)?.is_none() {
            unknown.push(id.clone());
        }
    }
    if !unknown.is_empty() {
        return Err(Failure::claim_not_found(&unknown));
    }
    let mut reports = Vec::with_capacity(ids.len());
    let mut warnings = Vec::new();
    for id in &ids {
        let r = fold.report(id)?;
        for d in &r.decided_by_revoked {
            let roots: Vec<&str> = d.revoked_by.iter().map(|c| c.root.as_str()).collect();
            warnings.push(Warning::new(
                "DECIDED_BY_REVOKED_RECORD",
                format!(
                    "{} is {} by record {}, which is itself revoked (falsified premise {}); \
                     falsify the record to disarm it",
                    r.id,
                    r.own_status,
                    d.record,
                    roots.join(", ")
                ),
            ));
        }
        reports.push(r);
    }
    let text = reports.iter().map(text_of).collect::<Vec<_>>().join("\n");
    Ok(Report {
        data: json!({"claims": reports, "as_of": as_of}),
        text: format!("{text}(as of {as_of} log entries)\n"),
        warnings,
        pagination: pagination_meta,
        ..Report::default()
    })
}

fn text_of(r: &ClaimStatus) -> String {
    let mut t = format!("{}  {}", r.id, r.status);
    if r.status != r.own_status {
        t.push_str(&format!(" (own: {})", r.own_status));
    }
    if r.accepted {
        t.push_str(" (accepted)");
    }
    t.push_str(&format!(
        "\n  {} · {} · producer {}\n",
        r.kind, r.origin, r.producer
    ));
    if !r.decided_by.is_empty() {
        t.push_str(&format!("  decided by {}\n", r.decided_by.join(", ")));
    }
    for d in &r.decided_by_revoked {
        t.push_str(&format!(
            "  ! deciding record {} is itself revoked\n",
            d.record
        ));
    }
    if r.status == Status::Revoked {
        for c in &r.revoked_by {
            t.push_str(&format!(
                "  revoked by falsified {}\n    path {}\n",
                c.root,
                c.path.join(" → ")
            ));
        }
    }
    for p in &r.missing_premises {
        t.push_str(&format!("  missing premise {p} (not in the store)\n"));
    }
    for p in &r.stale_premises {
        t.push_str(&format!("  stale premise {p} (superseded)\n"));
    }
    if !r.accepted_by.is_empty() {
        t.push_str(&format!(
            "  residue accepted by {}\n",
            r.accepted_by.join(", ")
        ));
    }
    if !r.history.is_empty() {
        t.push_str("  history:\n");
        for h in &r.history {
            t.push_str(&format!(
                "    #{} {} {} ({}{})\n",
                h.seq,
                h.kind,
                h.id,
                h.status,
                if h.live { "" } else { ", not acting" }
            ));
        }
    }
    t
}
