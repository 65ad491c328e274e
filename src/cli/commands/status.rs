//! `elench status ID…` / `--all`: the fold of the log for each claim, and why.

use super::common::{open_store, require_claim_ids, resolve_claim_ids, Page};
use crate::cli::failure::Failure;
use crate::cli::output::{claim_text, short_id, Report, Style, Warning};
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
        // Reading the claim's record from the log checks it: a damaged record is
        // STORE_CORRUPT, never a status.
        store.get(id)?;
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
    let style = Style::new(g.mode);
    let mut texts = Vec::with_capacity(reports.len());
    for r in &reports {
        let prose = store
            .get(&r.id)?
            .map(|c| claim_text(&c.claim.body))
            .unwrap_or_default();
        texts.push(text_of(r, &prose, &style));
    }
    let text = texts.join("\n");
    Ok(Report {
        data: json!({"claims": reports, "as_of": as_of}),
        text: format!("{text}(as of {as_of} log entries)\n"),
        warnings,
        pagination: pagination_meta,
        ..Report::default()
    })
}

/// Several ids, short, for people.
fn shorts(ids: &[String]) -> String {
    ids.iter()
        .map(|i| short_id(i))
        .collect::<Vec<_>>()
        .join(", ")
}

fn text_of(r: &ClaimStatus, prose: &str, st: &Style) -> String {
    let mut t = format!("{}  {}", st.id(&r.id), st.status(r.status.as_str()));
    if r.status != r.own_status {
        t.push_str(&format!(" (own: {})", r.own_status));
    }
    if r.accepted {
        t.push_str(" (accepted)");
    }
    if !prose.is_empty() {
        t.push_str(&format!("  {}", st.dim(prose)));
    }
    t.push_str(&format!(
        "\n  {} · {} · producer {} · {}\n",
        r.kind, r.origin, r.producer, r.id
    ));
    if !r.decided_by.is_empty() {
        t.push_str(&format!("  decided by {}\n", shorts(&r.decided_by)));
    }
    for d in &r.decided_by_revoked {
        t.push_str(&format!(
            "  ! deciding record {} is itself revoked\n",
            short_id(&d.record)
        ));
    }
    if r.status == Status::Revoked {
        for c in &r.revoked_by {
            let path: Vec<&str> = c.path.iter().map(|p| short_id(p)).collect();
            t.push_str(&format!(
                "  revoked by falsified {}\n    path {}\n",
                short_id(&c.root),
                path.join(" → ")
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
            shorts(&r.accepted_by)
        ));
    }
    if !r.history.is_empty() {
        t.push_str("  history:\n");
        for h in &r.history {
            t.push_str(&format!(
                "    #{} {} {} ({}{})\n",
                h.seq,
                h.kind,
                short_id(&h.id),
                h.status,
                if h.live { "" } else { ", not acting" }
            ));
        }
    }
    t
}
