//! `elench status ID…` / `--all`: the fold of the log for each claim, and why.

use crate::cli::common::{pagination_json, Page};
use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::output::{one_line, short_id, Format, Mode, Report, Style};
use elench::anchor::Applies;
use elench::fold::{ClaimStatus, Status};
use elench::ops;
use elench::ops::status::{Resolved, StatusFilters, StatusInput, StatusOutput, StatusRow};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Claim ids (cl_…, or unique prefixes of at least 4 hex digits)
    #[arg(conflicts_with = "all", required_unless_present = "all",
          value_parser = crate::cli::values::claim_id)]
    pub ids: Vec<crate::cli::values::ClaimRef>,
    /// Every claim, in arrival order, paginated
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub page: Page,
    /// Also say whether each claim applies at the tree in DIR (anchored, carried, stale,
    /// unanchored) and where its lines are there
    #[arg(long, value_name = "DIR")]
    pub at: Option<PathBuf>,
    /// With --at: keep the files that .gitignore, .git/info/exclude and the global excludes
    /// leave out of the tree (as `anchor --no-ignore` did)
    #[arg(long, requires = "at")]
    pub no_ignore: bool,
    /// With --all --at: only claims that apply this way (repeatable)
    #[arg(long, requires = "all", requires = "at", value_name = "HOW",
          value_parser = ["anchored", "carried", "stale", "unanchored"])]
    pub applies: Vec<String>,
    /// With --all: only claims with this (effective) status (repeatable)
    #[arg(long, requires = "all", value_name = "STATUS",
          value_parser = ["unevaluated", "verified", "falsified", "superseded", "revoked"])]
    pub status: Vec<String>,
    /// With --all: only claims of this kind (repeatable)
    #[arg(long, requires = "all", value_name = "KIND", value_enum)]
    pub kind: Vec<elench::claim::Kind>,
    /// With --all: only claims of this origin (repeatable)
    #[arg(long, requires = "all", value_name = "ORIGIN",
          value_parser = ["harness-observed", "agent-asserted", "human-asserted"])]
    pub origin: Vec<String>,
    /// With --all: only claims about a path matching this glob (repeatable; with --at, the
    /// path where the lines are at that tree)
    #[arg(long, requires = "all", value_name = "GLOB", value_parser = crate::cli::values::glob)]
    pub path: Vec<String>,
    /// With --format dot or mermaid: draw at most this many claims
    #[arg(long, value_name = "N", default_value_t = crate::cli::render::graph::DEFAULT_MAX_NODES)]
    pub max_nodes: usize,
}

impl StatusArgs {
    /// The arguments as the operation takes them.
    pub fn input(&self) -> StatusInput {
        StatusInput {
            ids: crate::cli::values::claim_strings(&self.ids),
            all: self.all,
            page: self.page.request(),
            at: self.at.clone(),
            no_ignore: self.no_ignore,
            filters: StatusFilters {
                applies: self.applies.clone(),
                status: self.status.clone(),
                kind: self.kind.iter().map(|k| k.as_str().to_owned()).collect(),
                origin: self.origin.clone(),
                path: self.path.clone(),
            },
            picture: None,
            places: false,
        }
    }
}

pub fn run(a: StatusArgs, g: &Globals) -> Result<Report, Failure> {
    let format = crate::cli::output::Format::detect(g.format.as_deref());
    let mut input = a.input();
    if matches!(format, Format::Dot | Format::Mermaid) {
        input.picture = Some(a.max_nodes);
    }
    input.places = format == Format::Sarif;
    let out = ops::status::status(&g.context(), &input)?;
    if format.is_product() {
        return crate::cli::render::status_document(&out, format);
    }
    report(&out, g.mode)
}

/// The report of a `status` answer: its JSON, and text for people.
pub fn report(out: &StatusOutput, mode: Mode) -> Result<Report, Failure> {
    let style = Style::new(mode);
    let texts: Vec<String> = out
        .claims
        .iter()
        .map(|row| {
            let prose = row.text.as_str().map(one_line).unwrap_or_default();
            let t = text_of(&row.status, &prose, &style);
            match row.applies {
                Some(applies) => format!("{t}  applies: {}\n", applies_text(applies, row)),
                None => t,
            }
        })
        .collect();
    let mut text = texts.join("\n");
    // A page that is not the whole list says how to get the rest, as `log` does.
    if let Some(next) = out
        .pagination
        .as_ref()
        .and_then(|p| p.next_cursor.as_deref())
    {
        text.push_str(&format!("(more: --cursor {next})\n"));
    }
    let data =
        serde_json::to_value(out).map_err(|e| Failure::Internal(format!("status report: {e}")))?;
    Ok(Report {
        data,
        text: format!("{text}(as of {} log entries)\n", out.as_of),
        pagination: out.pagination.as_ref().map(pagination_json),
        cursors: out.cursors.clone(),
        ..Report::default()
    })
}

fn applies_text(applies: Applies, row: &StatusRow) -> String {
    let mut t = applies.to_string();
    if applies == Applies::Carried || applies == Applies::Anchored {
        if let Some(Some(Resolved {
            path: Some(p),
            range,
        })) = &row.resolved
        {
            t.push_str(&format!(" at {p}"));
            if let Some([s, e]) = range {
                t.push_str(&format!(":{s}-{e}"));
            }
        }
    }
    t
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
