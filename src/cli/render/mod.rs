//! Documents for other tools, rendered from the commands' results (`--format sarif`, `dot`,
//! `mermaid`, `junit`, `github`): pure functions of the library's result types, so the
//! same log gives the same bytes (JUnit's timestamp aside).

pub mod github;
pub mod graph;
pub mod junit;
pub mod sarif;

use super::args::ArgError;
use super::output::Format;
use super::Command;

/// The format's name as `--format` takes it.
pub fn format_name(f: Format) -> &'static str {
    match f {
        Format::Json => "json",
        Format::Jsonl => "jsonl",
        Format::Tsv => "tsv",
        Format::Text => "text",
        Format::Plain => "plain",
        Format::Sarif => "sarif",
        Format::Dot => "dot",
        Format::Mermaid => "mermaid",
        Format::Junit => "junit",
        Format::Github => "github",
    }
}

/// A document format the command cannot write, as an argument error (refused before
/// anything runs, like every other).
pub fn format_error(command: &Command, format: Format) -> Option<ArgError> {
    if !format.is_product() {
        return None;
    }
    let name = format_name(format);
    let ok = match (format, command) {
        (Format::Sarif, Command::Gate(_)) => true,
        (Format::Sarif, Command::Status(a)) => {
            if a.at.is_none() {
                return Some(ArgError::new(
                    "--format",
                    Some(name),
                    "status --format sarif needs --at DIR: SARIF locates each claim in the \
                     tree it is checked against",
                ));
            }
            true
        }
        (Format::Dot | Format::Mermaid, Command::Blast(_) | Command::Status(_)) => true,
        (Format::Dot | Format::Mermaid, Command::Why(_)) => true,
        (Format::Junit, Command::Check(_)) => true,
        (Format::Github, Command::Gate(_) | Command::Check(_)) => true,
        _ => false,
    };
    (!ok).then(|| {
        ArgError::new(
            "--format",
            Some(name),
            format!(
                "--format {name} is not a format of `{}`: sarif is written by gate and status \
                 --at, dot and mermaid by blast, status and why, junit by check, github by gate \
                 and check",
                command.name()
            ),
        )
    })
}

/// `blast --format dot|mermaid`: the blast radius as a picture.
pub fn blast_picture(
    store: &crate::store::Store,
    b: &crate::graph::Blast,
    format: Format,
    max_nodes: usize,
) -> Result<super::output::Report, super::failure::Failure> {
    let mut fold = crate::fold::Fold::new(store);
    let mut lookup = |id: &str| super::commands::why::info(store, &mut fold, id);
    let picture = graph::Picture::of_blast(b, &mut lookup, max_nodes)?;
    let title = format!(
        "blast radius of {}: {} dependent claim(s)",
        super::output::short_id(&b.root),
        b.count
    );
    Ok(picture_report(&picture, format, &title))
}

/// `status --format dot|mermaid`: the claims listed, then what decides each (its records,
/// the premises it rests on directly, the paths of its revocation), drawn together.
pub fn status_picture(
    store: &crate::store::Store,
    reports: &[crate::fold::ClaimStatus],
    format: Format,
    max_nodes: usize,
) -> Result<super::output::Report, super::failure::Failure> {
    let mut ids: Vec<String> = reports.iter().map(|r| r.id.clone()).collect();
    for r in reports {
        ids.extend(r.decided_by.iter().cloned());
        for c in &r.revoked_by {
            ids.extend(c.path.iter().cloned());
        }
        ids.extend(r.stale_premises.iter().cloned());
        ids.extend(r.accepted_by.iter().cloned());
    }
    for r in reports {
        if let Some(c) = store.get_fold(&r.id)? {
            ids.extend(c.claim.depends_on);
        }
    }
    let mut fold = crate::fold::Fold::new(store);
    let mut lookup = |id: &str| super::commands::why::info(store, &mut fold, id);
    let picture = graph::Picture::of(&ids, &mut lookup, max_nodes, true)?;
    let title = format!("status of {} claim(s) and what decides them", reports.len());
    Ok(picture_report(&picture, format, &title))
}

fn picture_report(picture: &graph::Picture, format: Format, title: &str) -> super::output::Report {
    let doc = if format == Format::Dot {
        picture.dot(title)
    } else {
        picture.mermaid(title)
    };
    super::output::Report {
        product: Some(doc),
        ..super::output::Report::default()
    }
}
