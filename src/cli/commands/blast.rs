//! `elench blast ID [--depth N]`: what a falsification of a claim revokes.

use super::common::{open_store, require_claim_ids, resolve_claim_id};
use crate::cli::failure::Failure;
use crate::cli::output::{claim_text, short_id, Format, JsonData, Mode, Report, Style};
use crate::cli::Globals;
use crate::graph::{blast_bulk, BulkBlast};

impl JsonData for BulkBlast {
    fn write_json(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        BulkBlast::write_json(self, out)
    }
    fn to_value(&self) -> serde_json::Value {
        // Plain structs and strings: serialising them into a value cannot fail.
        serde_json::to_value(self.to_blast()).unwrap_or_default()
    }
}

#[derive(Debug, clap::Args)]
pub struct BlastArgs {
    /// The claim id (cl_…, or a unique prefix of at least 4 hex digits)
    pub id: String,
    /// Only this many layers of dependents
    #[arg(long)]
    pub depth: Option<usize>,
    /// With --format dot or mermaid: draw at most this many claims (the shallowest)
    #[arg(long, value_name = "N", default_value_t = crate::cli::render::graph::DEFAULT_MAX_NODES)]
    pub max_nodes: usize,
    /// What the claim rests on instead: its premises, theirs, and so on
    #[arg(long)]
    pub invert: bool,
}

pub fn run(a: BlastArgs, g: &Globals) -> Result<Report, Failure> {
    require_claim_ids([&a.id])?;
    let store = open_store(g)?;
    // One read transaction for the whole answer: a snapshot as of one state of the log.
    let _snapshot = store.pin()?;
    let id = resolve_claim_id(&store, &a.id)?;
    let format = crate::cli::output::Format::detect(g.format.as_deref());
    let picture = matches!(format, Format::Dot | Format::Mermaid);
    let mut bulk = if a.invert {
        None
    } else {
        Some(blast_bulk(&store, &id, a.depth)?)
    };
    if !picture && g.mode != Mode::Text {
        if let Some(bulk) = bulk.take() {
            // Written to stdout straight from the member arrays: a large closure never
            // becomes a `Value` tree or a string per member.
            return Ok(Report::streaming(bulk, String::new()));
        }
    }
    let b = match &bulk {
        Some(bulk) => bulk.to_blast(),
        None => crate::graph::rests_on(&mut crate::fold::Fold::new(&store), &id, a.depth)?,
    };
    if picture {
        return crate::cli::render::blast_picture(&store, &b, format, a.max_nodes, a.invert);
    }
    let Some(bulk) = bulk else {
        // --invert: what the root rests on, in the layers of a blast radius.
        let value = serde_json::to_value(&b)
            .map_err(|e| Failure::Internal(format!("blast report: {e}")))?;
        let mut text = String::new();
        if g.mode == Mode::Text {
            let style = Style::new(g.mode);
            text = crate::cli::render::blast_text(&store, &b, true, a.depth, &style)?;
            text.push_str(&format!(
                "\n{} rests on {} claim(s){}\n",
                b.root,
                b.count,
                if b.truncated {
                    " within --depth (more beyond)"
                } else {
                    ""
                }
            ));
        }
        return Ok(Report::new(value, text));
    };
    let style = Style::new(g.mode);
    // Claim texts live in the log; read them only when a person will see them.
    let prose_of = |id: &str| -> Result<String, Failure> {
        Ok(store
            .get(id)?
            .map(|c| claim_text(&c.claim.body))
            .unwrap_or_default())
    };
    let tree = crate::cli::render::blast_text(&store, &b, false, a.depth, &style)?;
    let mut text = format!(
        "{tree}\nblast radius of {}: {} dependent claim(s){}\n",
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
    Ok(Report::streaming(bulk, text))
}
