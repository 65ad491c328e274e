//! `elench log`: the claims in arrival order, paginated.

use crate::cli::common::{pagination_json, Page};
use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::output::{one_line, Mode, Report, Style};
use elench::ops::log::{log, LogInput};

#[derive(Debug, clap::Args)]
pub struct LogArgs {
    #[command(flatten)]
    pub page: Page,
}

pub fn run(a: LogArgs, g: &Globals) -> Result<Report, Failure> {
    // Status is folded only for text: a person reading the log wants to see where each
    // claim stands; the JSON entries stay what was logged.
    let out = log(
        &g.context(),
        &LogInput {
            page: a.page.request(),
            with_status: g.mode == Mode::Text,
        },
    )?;
    let mut text = String::new();
    let style = Style::new(g.mode);
    for e in &out.entries {
        if let Some(status) = e.status {
            text.push_str(&format!(
                "#{} {} {} {:<13} {}  {}\n",
                e.seq,
                style.id(&e.id),
                style.status(&format!("{:<11}", status.as_str())),
                e.kind.as_str(),
                e.producer,
                style.dim(&e.text.as_str().map(one_line).unwrap_or_default())
            ));
        }
    }
    if out.entries.is_empty() {
        text.push_str("the log is empty\n");
    }
    if let Some(next) = &out.pagination.next_cursor {
        text.push_str(&format!("(more: --cursor {next})\n"));
    }
    let data = serde_json::to_value(&out).map_err(|e| Failure::Internal(format!("log: {e}")))?;
    Ok(Report {
        data,
        text,
        pagination: Some(pagination_json(&out.pagination)),
        cursors: out.cursors,
        ..Report::default()
    })
}
