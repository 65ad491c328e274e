//! Documents for other tools, rendered from the commands' results (`--format sarif`, `dot`,
//! `mermaid`, `junit`, `github`): pure functions of the library's result types, so the
//! same log gives the same bytes (JUnit's timestamp and times aside).

pub mod github;
pub mod graph;
pub mod junit;
pub mod sarif;
pub mod tree;

use super::failure::Failure;
use super::output::{Format, Report, Warning};
use std::collections::{HashMap, HashSet};

/// `blast --format dot|mermaid`: the radius (or, inverted, what the claim rests on) as a
/// picture of the claims the operation chose to show.
pub fn blast_picture(
    b: &elench::graph::Blast,
    shown: &elench::ops::picture::Shown,
    inverted: bool,
    format: Format,
) -> Report {
    let short = super::output::short_id(&b.root);
    let picture = graph::Picture::of_blast(b, shown);
    let title = if inverted {
        format!("{short} rests on {} claim(s)", b.count)
    } else {
        format!("blast radius of {short}: {} dependent claim(s)", b.count)
    };
    picture_report(&picture, format, &title)
}

/// A blast radius as a picture (see [`blast_picture`]) under the caller's title.
pub fn blast_picture_titled(
    b: &elench::graph::Blast,
    shown: &elench::ops::picture::Shown,
    title: &str,
    format: Format,
) -> Report {
    picture_report(&graph::Picture::of_blast(b, shown), format, title)
}

/// `status --format dot|mermaid|sarif`: the claims of the answer as a picture (of the
/// claims the operation chose to show), or (with a tree) those that do not stand there as
/// SARIF. A document of one page of `--all` says on stderr that more follow.
pub fn status_document(
    out: &elench::ops::status::StatusOutput,
    format: Format,
) -> Result<Report, Failure> {
    let mut report = match (format, &out.tree, &out.picture) {
        (Format::Sarif, Some(tree), _) => Report {
            product: Some(status_sarif(out, tree)),
            ..Report::default()
        },
        (_, _, Some(shown)) => {
            let picture = graph::Picture::of(shown);
            let title = format!(
                "status of {} claim(s) and what decides them",
                out.claims.len()
            );
            picture_report(&picture, format, &title)
        }
        _ => return Err(Failure::Internal("status: no document asked".into())),
    };
    let next = out
        .pagination
        .as_ref()
        .and_then(|p| p.next_cursor.as_deref());
    report.warnings.extend(page_cut(next));
    Ok(report)
}

fn picture_report(picture: &graph::Picture, format: Format, title: &str) -> Report {
    let doc = if format == Format::Dot {
        picture.dot(title)
    } else {
        picture.mermaid(title)
    };
    Report {
        product: Some(doc),
        ..Report::default()
    }
}

/// The falsified roots an operation placed at its tree, as SARIF's related locations.
fn roots_of(roots: &[elench::ops::roots::Root]) -> Vec<sarif::Root> {
    roots
        .iter()
        .map(|r| sarif::Root {
            id: r.id.clone(),
            text: r.text.clone(),
            place: place_of(&r.path, r.range),
        })
        .collect()
}

fn place_of(path: &Option<String>, range: Option<[u64; 2]>) -> Option<sarif::Place> {
    path.as_deref().and_then(|p| sarif::Place::new(p, range))
}

/// `gate --format sarif|github`: the gate's answer as a document, the falsified roots of
/// revoked claims placed at the gate's tree as the operation found them.
pub fn gate_document(out: &elench::ops::gate::GateOutput, format: Format) -> String {
    let mut roots = |id: &str| -> Result<Vec<sarif::Root>, std::convert::Infallible> {
        Ok(out.roots.get(id).map(|r| roots_of(r)).unwrap_or_default())
    };
    let Ok(mut report) = sarif::from_gate(&out.violations, &mut roots);
    report.policy = out
        .policy_place
        .as_ref()
        .and_then(|p| sarif::Place::new(&p.path, p.line.map(|n| [n, n])));
    report.properties =
        serde_json::json!({"pass": out.pass, "tree": out.tree, "counts": out.counts});
    match format {
        Format::Github => github::render(&report),
        _ => sarif::render(&report),
    }
}

/// `status --at DIR --format sarif`: the listed claims that do not stand at the tree (an
/// assertion falsified, revoked, stale or unevaluated; residue a human accepted is left
/// out, and so are records and claims about other whole trees).
fn status_sarif(out: &elench::ops::status::StatusOutput, tree: &str) -> String {
    use elench::anchor::Applies;
    use elench::fold::Status;
    let mut findings = Vec::new();
    for row in &out.claims {
        let r = &row.status;
        let Some(applies) = row.applies else {
            continue;
        };
        if r.kind != "assertion" || r.accepted || applies == Applies::Unanchored {
            continue;
        }
        let mut rules = Vec::new();
        let mut reasons = Vec::new();
        match r.status {
            Status::Falsified => {
                rules.push("elench/falsified");
                reasons.push(format!("Decided by {}", r.decided_by.join(", ")));
            }
            Status::Revoked => rules.push("elench/revoked"),
            Status::Unevaluated if applies != Applies::Stale => {
                rules.push("elench/unevaluated");
                reasons.push("No record decides it and no human accepted it".to_owned());
            }
            _ => {}
        }
        if applies == Applies::Stale {
            rules.push("elench/stale");
            reasons
                .push("Its lines changed at this tree, or nothing shows them unchanged".to_owned());
        }
        if rules.is_empty() {
            continue;
        }
        rules.sort_by_key(|r| sarif::RULES.iter().position(|x| x.0 == *r));
        let place = match (&row.resolved, applies.applies()) {
            (Some(Some(res)), true) => place_of(&res.path, res.range),
            _ => place_of(&row.anchor_path, row.anchor_range),
        };
        findings.push(sarif::Finding {
            id: r.id.clone(),
            rules,
            status: Some(r.status),
            applies: Some(applies),
            place,
            text: row.text.as_str().map(str::to_owned),
            reasons,
            roots: roots_of(&row.roots),
        });
    }
    findings.sort_by(|a, b| a.id.cmp(&b.id));
    sarif::render(&sarif::Report {
        findings,
        scope: Vec::new(),
        policy: None,
        properties: serde_json::json!({"tree": tree}),
    })
}

/// `check --format junit|github`: the claims checked, each with its text and where it is at
/// the checked tree, and, when falsified, the end of its transcript (`details`, as the
/// operation read them).
pub fn check_document(
    out: &elench::ops::check::CheckOutput,
    details: &HashMap<String, elench::ops::check::Detail>,
    format: Format,
) -> String {
    use elench::ops::check::Outcome;
    let mut cases = Vec::with_capacity(out.checked.len());
    for c in &out.checked {
        if c.outcome == Outcome::NotApplicable {
            continue;
        }
        let d = details.get(&c.id).cloned().unwrap_or_default();
        let place = place_of(&d.path, d.range);
        cases.push(junit::Case {
            id: c.id.clone(),
            text: d.text,
            path: place.as_ref().map(|p| p.path.clone()),
            range: place.and_then(|p| p.range),
            outcome: c.outcome.as_str().to_owned(),
            reason: c.reason.clone(),
            record: c.record.clone(),
            evidence: c.evidence.clone(),
            transcript: d.transcript,
            seconds: c.seconds,
        });
    }
    match format {
        Format::Github => github::render_check(&cases),
        _ => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs() as i64)
                .unwrap_or(0);
            let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
                .filter(|h| !h.is_empty())
                .unwrap_or_else(|| "localhost".to_owned());
            junit::render(
                &cases,
                &junit::Suite {
                    tree: out.tree.clone(),
                    hermeticity: out.hermeticity.to_owned(),
                    timestamp: junit::utc_timestamp(now),
                    hostname,
                },
            )
        }
    }
}

/// `blast`'s text: the tree of the radius (`--invert`: of what the root rests on), from the
/// members' texts and premises the operation read; one tree under each claim of the first
/// layer (the root, or the claims a key alone signed).
pub fn blast_text(
    b: &elench::graph::Blast,
    texts: &HashMap<String, serde_json::Value>,
    premises: &HashMap<String, Vec<String>>,
    invert: bool,
    depth: Option<usize>,
    style: &super::output::Style,
) -> String {
    let members: HashSet<&str> = b
        .layers
        .iter()
        .flat_map(|l| l.claims.iter().map(|m| m.id.as_str()))
        .collect();
    let mut label_of: HashMap<String, String> = HashMap::new();
    let mut children: HashMap<String, Vec<String>> = HashMap::new();
    for layer in &b.layers {
        for m in &layer.claims {
            let prose = texts
                .get(&m.id)
                .and_then(|t| t.as_str())
                .map(|t| graph::shorten(t, 60))
                .unwrap_or_default();
            label_of.insert(
                m.id.clone(),
                format!(
                    "{} {} {}  {}",
                    style.id(&m.id),
                    style.status(m.status.as_str()),
                    m.kind,
                    style.dim(&prose)
                ),
            );
            for p in premises.get(&m.id).into_iter().flatten() {
                if !members.contains(p.as_str()) {
                    continue;
                }
                // Premise → dependent, or, inverted, dependent → premise.
                let (parent, child) = if invert {
                    (m.id.clone(), p.clone())
                } else {
                    (p.clone(), m.id.clone())
                };
                children.entry(parent).or_default().push(child);
            }
        }
    }
    for kids in children.values_mut() {
        kids.sort();
        kids.dedup();
    }
    let mut label = |id: &str| label_of.get(id).cloned().unwrap_or_else(|| id.to_owned());
    let roots: Vec<&str> = match b.layers.first() {
        Some(l) => l.claims.iter().map(|m| m.id.as_str()).collect(),
        None => Vec::new(),
    };
    roots
        .iter()
        .map(|r| tree::render(r, &children, &mut label, depth))
        .collect()
}

/// A document made from one page of `status --all` covers that page only: a warning says
/// where the rest starts, since the document itself has no room for it.
pub fn page_cut(next_cursor: Option<&str>) -> Option<Warning> {
    let next = next_cursor?;
    Some(Warning::new(
        "PAGE_CUT",
        format!(
            "this document covers one page of claims; more follow (--cursor {next}, or a \
             larger --limit, up to {})",
            elench::ops::page::MAX_LIMIT
        ),
    ))
}
