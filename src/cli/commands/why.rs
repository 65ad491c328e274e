//! `elench why A B`: a shortest `dependsOn` path from claim A to claim B, or none.

use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::output::{short_id, Format, Report, Style};
use crate::cli::render::graph::Picture;
use elench::ops::picture::Shown;
use elench::ops::why::{why, WhyInput, WhyOutput};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Each claim on the path names the next among its premises (dependsOn): \
                        A rests on B through them, and a falsification of B revokes A along \
                        it. Among equally short paths, the one whose ids sort first is shown. \
                        No path is not an error: data.path is null, exit 0."
)]
pub struct WhyArgs {
    /// The claim that rests on the other (cl_…, or a unique prefix of at least 4 hex digits)
    #[arg(value_parser = crate::cli::values::claim_id)]
    pub from: crate::cli::values::ClaimRef,
    /// The premise it may rest on
    #[arg(value_parser = crate::cli::values::claim_id)]
    pub to: crate::cli::values::ClaimRef,
}

pub fn run(a: WhyArgs, g: &Globals) -> Result<Report, Failure> {
    let format = Format::detect(g.format.as_deref());
    let out = why(
        &g.context(),
        &WhyInput {
            from: a.from.into(),
            to: a.to.into(),
            picture: matches!(format, Format::Dot | Format::Mermaid),
        },
    )?;
    if let Some(shown) = &out.picture {
        return Ok(picture(&out, shown, format));
    }
    let data = serde_json::to_value(&out).map_err(|e| Failure::Internal(format!("why: {e}")))?;
    Ok(Report::new(data, text(&out, &Style::new(g.mode))))
}

fn text(out: &WhyOutput, style: &Style) -> String {
    let (from, to) = (short_id(&out.from), short_id(&out.to));
    match &out.path {
        Some(p) => {
            let mut t = format!(
                "{from} rests on {to} through {} dependsOn step(s):\n",
                p.len() - 1
            );
            for (i, s) in out.steps.iter().enumerate() {
                let arrow = if i == 0 { "  " } else { "└ " };
                let prose = s
                    .text
                    .as_str()
                    .map(|t| crate::cli::render::graph::shorten(t, 60))
                    .unwrap_or_default();
                t.push_str(&format!(
                    "{}{arrow}{} {}  {}\n",
                    "  ".repeat(i),
                    style.id(&s.id),
                    style.status(s.status.as_str()),
                    style.dim(&prose)
                ));
            }
            t
        }
        None => {
            let swapped = if out.reverse_path {
                format!(" (the other way round there is one: elench why {to} {from})")
            } else {
                String::new()
            };
            format!(
                "no dependsOn path from {from} to {to}: {from} does not rest on {to}{swapped}\n"
            )
        }
    }
}

/// The path drawn: its claims, premise to dependent.
fn picture(out: &WhyOutput, shown: &Shown, format: Format) -> Report {
    let picture = Picture::of(shown);
    let title = format!(
        "why {} rests on {}: {}",
        short_id(&out.from),
        short_id(&out.to),
        match &out.path {
            Some(p) => format!("{} step(s)", p.len() - 1),
            None => "no dependsOn path".into(),
        }
    );
    let doc = if format == Format::Dot {
        picture.dot(&title)
    } else {
        picture.mermaid(&title)
    };
    Report {
        product: Some(doc),
        ..Report::default()
    }
}
