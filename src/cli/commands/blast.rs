//! `elench blast ID [--depth N]`: what a falsification of a claim revokes.

use super::common::{open_store, require_claim_ids, resolve_claim_id};
use crate::cli::failure::Failure;
use crate::cli::output::{claim_text, short_id, Mode, Report, Style};
use crate::cli::Globals;
use crate::fold::Fold;
use crate::graph::blast;

#[derive(Debug, clap::Args)]
pub struct BlastArgs {
    /// The claim id (cl_…, or a unique prefix of at least 4 hex digits)
    pub id: String,
    /// Only this many layers of dependents
    #[arg(long)]
    pub depth: Option<usize>,
}

pub fn run(a: BlastArgs, g: &Globals) -> Result<Report, Failure> {
    require_claim_ids([&a.id])?;
    let store = open_store(g)?;
    let id = resolve_claim_id(&store, &a.id)?;
    let mut fold = Fold::new(&store);
    let b = blast(&mut fold, &id, a.depth)?;
    let style = Style::new(g.mode);
    // Claim texts live in the log; read them only when a person will see them.
    let prose_of = |id: &str| -> Result<String, Failure> {
        if g.mode != Mode::Text {
            return Ok(String::new());
        }
        Ok(store
            .get(id)?
            .map(|c| claim_text(&c.claim.body))
            .unwrap_or_default())
    };
    let mut text = format!(
        "blast radius of {}: {} dependent claim(s){}\n",
        b.root,
        b.count,
        if b.truncated {
            " within --depth (more beyond)"
        } else {
            ""
        }
    );
    for layer in &b.layers {
        text.push_str(&format!("depth {}\n", layer.depth));
        for m in &layer.claims {
            let via = m
                .via
                .as_ref()
                .map(|v| format!(" via {}", short_id(v)))
                .unwrap_or_default();
            let prose = prose_of(&m.id)?;
            text.push_str(&format!(
                "  {} {} {}{via}  {}\n",
                style.id(&m.id),
                style.status(&format!("{:<11}", m.status.as_str())),
                m.kind,
                style.dim(&prose)
            ));
        }
    }
    if !b.affected.is_empty() {
        text.push_str("affected (outside the closure, decided by a record inside it):\n");
        for x in &b.affected {
            let by: Vec<&str> = x.decided_by.iter().map(|d| short_id(d)).collect();
            let prose = prose_of(&x.id)?;
            text.push_str(&format!(
                "  {} {} by {}  {}\n",
                style.id(&x.id),
                style.status(x.status.as_str()),
                by.join(", "),
                style.dim(&prose)
            ));
        }
    }
    let data = serde_json::to_value(&b).map_err(|e| Failure::Internal(e.to_string()))?;
    Ok(Report::new(data, text))
}
