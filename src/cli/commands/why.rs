//! `elench why A B`: a shortest `dependsOn` path from claim A to claim B, or none.

use super::common::{open_store, require_claim_ids, resolve_claim_id};
use crate::cli::failure::Failure;
use crate::cli::output::{claim_text, short_id, Format, Report, Style};
use crate::cli::render::graph::Picture;
use crate::cli::Globals;
use crate::fold::Fold;
use serde_json::json;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Each claim on the path names the next among its premises (dependsOn): \
                        A rests on B through them, and a falsification of B revokes A along \
                        it. Among equally short paths, the one whose ids sort first is shown. \
                        No path is not an error: data.path is null, exit 0."
)]
pub struct WhyArgs {
    /// The claim that rests on the other (cl_…, or a unique prefix of at least 4 hex digits)
    pub from: String,
    /// The premise it may rest on
    pub to: String,
}

pub fn run(a: WhyArgs, g: &Globals) -> Result<Report, Failure> {
    require_claim_ids([&a.from, &a.to])?;
    let store = open_store(g)?;
    // One read transaction for the whole answer: a snapshot as of one state of the log.
    let _snapshot = store.pin()?;
    let from = resolve_claim_id(&store, &a.from)?;
    let to = resolve_claim_id(&store, &a.to)?;
    let path = crate::graph::why(&store, &from, &to)?;
    // Said when there is no path but the other way round there is: the arguments swapped.
    let reverse = match &path {
        None => crate::graph::why(&store, &to, &from)?.is_some(),
        Some(_) => false,
    };
    let mut fold = Fold::new(&store);
    let mut steps = Vec::new();
    for id in path.iter().flatten() {
        let status = fold.effective(id)?.status;
        let text = store
            .get(id)?
            .map(|c| claim_text(&c.claim.body))
            .unwrap_or_default();
        steps.push((id.clone(), status, text));
    }
    let format = Format::detect(g.format.as_deref());
    if matches!(format, Format::Dot | Format::Mermaid) {
        let ids: Vec<String> = path.clone().unwrap_or_default();
        let mut lookup = |id: &str| crate::cli::render::info(&store, &mut fold, id);
        let picture = Picture::of(&ids, &mut lookup, usize::MAX, false)?;
        let title = format!(
            "why {} rests on {}: {}",
            short_id(&from),
            short_id(&to),
            match &path {
                Some(p) => format!("{} step(s)", p.len() - 1),
                None => "no dependsOn path".into(),
            }
        );
        let doc = if format == Format::Dot {
            picture.dot(&title)
        } else {
            picture.mermaid(&title)
        };
        return Ok(Report {
            product: Some(doc),
            ..Report::default()
        });
    }
    let style = Style::new(g.mode);
    let text = match &path {
        Some(p) => {
            let mut t = format!(
                "{} rests on {} through {} dependsOn step(s):\n",
                short_id(&from),
                short_id(&to),
                p.len() - 1
            );
            for (i, (id, status, prose)) in steps.iter().enumerate() {
                let arrow = if i == 0 { "  " } else { "└ " };
                t.push_str(&format!(
                    "{}{arrow}{} {}  {}\n",
                    "  ".repeat(i),
                    style.id(id),
                    style.status(status.as_str()),
                    style.dim(prose)
                ));
            }
            t
        }
        None => format!(
            "no dependsOn path from {} to {}: {} does not rest on {}{}\n",
            short_id(&from),
            short_id(&to),
            short_id(&from),
            short_id(&to),
            if reverse {
                format!(
                    " (the other way round there is one: elench why {} {})",
                    short_id(&to),
                    short_id(&from)
                )
            } else {
                String::new()
            }
        ),
    };
    let data = json!({
        "from": from,
        "to": to,
        "path": path,
        "length": path.as_ref().map(|p| p.len() - 1),
        "steps": steps.iter().map(|(id, status, text)| json!({"id": id, "status": status, "text": text})).collect::<Vec<_>>(),
        "reverse_path": reverse,
    });
    Ok(Report::new(data, text))
}
