//! `elench log`: the claims in arrival order, paginated.

use super::common::{open_store, Page};
use crate::cli::failure::Failure;
use crate::cli::output::{claim_text, Report, Style};
use crate::cli::Globals;
use serde_json::json;

#[derive(Debug, clap::Args)]
pub struct LogArgs {
    #[command(flatten)]
    pub page: Page,
}

pub fn run(a: LogArgs, g: &Globals) -> Result<Report, Failure> {
    let store = open_store(g)?;
    let (page, pagination_meta) = a.page.of_arrivals(&store)?;
    let mut entries = Vec::with_capacity(page.len());
    let mut text = String::new();
    let style = Style::new(g.mode);
    // Status is folded only for text: a person reading the log wants to see where each
    // claim stands; the JSON entries stay what was logged.
    let mut fold = crate::fold::Fold::new(&store);
    for (seq, id) in &page {
        let c = store.get(id)?.ok_or_else(|| {
            Failure::Internal(format!("arrival #{seq} names {id}, which is not stored"))
        })?;
        if g.mode == crate::cli::output::Mode::Text {
            let status = fold.effective(id)?.status;
            text.push_str(&format!(
                "#{seq} {} {} {:<13} {}  {}\n",
                style.id(id),
                style.status(&format!("{:<11}", status.as_str())),
                c.claim.kind.as_str(),
                c.claim.producer,
                style.dim(&claim_text(&c.claim.body))
            ));
        }
        entries.push(json!({
            "seq": seq,
            "id": id,
            "kind": c.claim.kind,
            "origin": c.claim.origin,
            "producer": c.claim.producer,
            "target": c.claim.target,
            "depends_on": c.claim.depends_on,
            "signers": c.signers.iter().map(|s| s.keyid.clone()).collect::<Vec<_>>(),
        }));
    }
    if entries.is_empty() {
        text.push_str("the log is empty\n");
    }
    if let Some(next) = pagination_meta["next_cursor"].as_str() {
        text.push_str(&format!("(more: --cursor {next})\n"));
    }
    Ok(Report {
        data: json!({"entries": entries}),
        text,
        pagination: Some(pagination_meta),
        cursors: page.iter().map(|(seq, _)| seq.to_string()).collect(),
        ..Report::default()
    })
}
