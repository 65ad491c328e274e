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
use crate::claim::Gist;
use crate::fold::Fold;
use crate::store::Store;
use std::collections::{HashMap, HashSet};

/// The store, for what a document needs beyond the operation's answer (a claim's premises,
/// texts, a falsified root's place).
fn open(g: &super::globals::Globals) -> Result<crate::store::Store, Failure> {
    crate::cli::common::open_store(g)
}

/// `blast --format dot|mermaid`: the radius (or, inverted, what the claim rests on) as a
/// picture of the claims the operation chose to show.
pub fn blast_picture(
    b: &crate::graph::Blast,
    shown: &crate::ops::picture::Shown,
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

/// `status --format dot|mermaid|sarif`: the claims of the answer as a picture (of the
/// claims the operation chose to show), or (with a tree) those that do not stand there as
/// SARIF. A document of one page of `--all` says on stderr that more follow.
pub fn status_document(
    g: &super::globals::Globals,
    out: &crate::ops::status::StatusOutput,
    at: Option<&std::path::Path>,
    no_ignore: bool,
    format: Format,
) -> Result<Report, Failure> {
    let mut report = match (format, &out.tree, &out.picture) {
        (Format::Sarif, Some(tree), _) => {
            let store = open(g)?;
            let _snapshot = store.pin()?;
            let dir = crate::ops::tree::tree_dir(at)?;
            let mut resolver = crate::anchor::Resolver::new(&dir, tree)
                .with_selection(crate::tree::Selection::from_no_ignore(no_ignore));
            let doc = status_sarif(&store, out, &mut resolver)?;
            Report {
                product: Some(doc),
                ..Report::default()
            }
        }
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

/// The falsified roots of a revoked claim, each placed where it is at the resolver's tree.
fn roots_at(
    fold: &mut Fold<'_, Store>,
    resolver: &mut crate::anchor::Resolver,
    id: &str,
) -> Result<Vec<sarif::Root>, Failure> {
    let report = fold.report(id)?;
    let mut roots: Vec<String> = report.revoked_by.iter().map(|c| c.root.clone()).collect();
    roots.sort();
    roots.dedup();
    let mut out = Vec::with_capacity(roots.len());
    for root in roots {
        let c = fold.require_summary(&root)?;
        let res = resolver.resolve(&c.claim, &c.body)?;
        out.push(sarif::Root {
            text: assertion_text(&c.body),
            place: place_of(&res.path, res.range).filter(|_| res.applies.applies()),
            id: root,
        });
    }
    Ok(out)
}

fn assertion_text<G: Gist>(text: &G) -> Option<String> {
    text.text().map(str::to_owned)
}

fn place_of(path: &Option<String>, range: Option<[u64; 2]>) -> Option<sarif::Place> {
    path.as_deref().and_then(|p| sarif::Place::new(p, range))
}

/// `gate --format sarif|github`: the gate's answer as a document. The falsified roots of
/// revoked claims are read from the store and placed at the gate's tree.
pub fn gate_document(
    g: &super::globals::Globals,
    out: &crate::ops::gate::GateOutput,
    at: Option<&std::path::Path>,
    no_ignore: bool,
    format: Format,
) -> Result<String, Failure> {
    let store = open(g)?;
    let _snapshot = store.pin()?;
    let dir = crate::ops::tree::tree_dir(at)?;
    let mut resolver = crate::anchor::Resolver::new(&dir, &out.tree)
        .with_selection(crate::tree::Selection::from_no_ignore(no_ignore));
    let mut fold = Fold::new(&store);
    let mut roots = |id: &str| roots_at(&mut fold, &mut resolver, id);
    let mut report = sarif::from_gate(&out.violations, &mut roots)?;
    report.policy = policy_place(&out.policy_path, &dir);
    report.properties =
        serde_json::json!({"pass": out.pass, "tree": out.tree, "counts": out.counts});
    Ok(match format {
        Format::Github => github::render(&report),
        _ => sarif::render(&report),
    })
}

/// Where a document places what the policy says of the scope as a whole (too few claims in
/// it): the policy file, at its `min_in_scope` line when it sets one. The file's path in the
/// tree when it lies inside; otherwise (the CI recipe reads the policy from a trusted copy
/// outside the checkout) its name, the path a repository keeps its policy at by the recipe's
/// convention.
fn policy_place(policy: &str, tree: &std::path::Path) -> Option<sarif::Place> {
    let file = std::path::Path::new(policy);
    let inside = match (file.canonicalize(), tree.canonicalize()) {
        (Ok(f), Ok(t)) => f.strip_prefix(&t).ok().map(std::path::Path::to_path_buf),
        _ => None,
    };
    let path = inside.or_else(|| file.file_name().map(std::path::PathBuf::from))?;
    let path = path.to_str()?.replace(std::path::MAIN_SEPARATOR, "/");
    let line = std::fs::read_to_string(file).ok().and_then(|text| {
        text.lines()
            .position(|l| {
                l.trim_start()
                    .strip_prefix("min_in_scope")
                    .is_some_and(|rest| rest.trim_start().starts_with('='))
            })
            .map(|i| i as u64 + 1)
    });
    sarif::Place::new(&path, line.map(|n| [n, n]))
}

/// `status --at DIR --format sarif`: the listed claims that do not stand at the tree (an
/// assertion falsified, revoked, stale or unevaluated; residue a human accepted is left
/// out, and so are records and claims about other whole trees).
fn status_sarif(
    store: &Store,
    out: &crate::ops::status::StatusOutput,
    resolver: &mut crate::anchor::Resolver,
) -> Result<String, Failure> {
    use crate::anchor::{Anchor, Applies};
    use crate::fold::Status;
    let mut fold = Fold::new(store);
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
            _ => {
                let c = fold.require_summary(&r.id)?;
                let a = Anchor::of(&c.claim, &c.body)?;
                place_of(&a.path, a.range.map(|(s, e)| [s, e]))
            }
        };
        findings.push(sarif::Finding {
            id: r.id.clone(),
            rules,
            status: Some(r.status),
            applies: Some(applies),
            place,
            text: row.text.as_str().map(str::to_owned),
            reasons,
            roots: if r.status == Status::Revoked {
                roots_at(&mut fold, resolver, &r.id)?
            } else {
                Vec::new()
            },
        });
    }
    findings.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(sarif::render(&sarif::Report {
        findings,
        scope: Vec::new(),
        policy: None,
        properties: serde_json::json!({"tree": resolver.tree()}),
    }))
}

/// The last bytes of a transcript a failure shows.
const TRANSCRIPT_TAIL: usize = 4096;

/// `check --format junit|github`: the claims checked, each with its text and where it is at
/// the checked tree, and, when falsified, the end of its transcript.
pub fn check_document(
    g: &super::globals::Globals,
    out: &crate::ops::check::CheckOutput,
    no_ignore: bool,
    format: Format,
) -> Result<String, Failure> {
    use crate::ops::check::Outcome;
    let store = open(g)?;
    let _snapshot = store.pin()?;
    let mut resolver = crate::anchor::Resolver::new(std::path::Path::new(&out.at), &out.tree)
        .with_selection(crate::tree::Selection::from_no_ignore(no_ignore));
    let mut cases = Vec::with_capacity(out.checked.len());
    for c in &out.checked {
        if c.outcome == Outcome::NotApplicable {
            continue;
        }
        let (text, place) = match store.get_light(&c.id)? {
            Some(s) => {
                let res = resolver.resolve(&s.claim, &s.body)?;
                (
                    assertion_text(&s.body).unwrap_or_default(),
                    place_of(&res.path, res.range).filter(|_| res.applies.applies()),
                )
            }
            None => (String::new(), None),
        };
        // The evidence is kept for `elench show`; a blob that cannot be read only shortens
        // the report.
        let transcript = match (&c.evidence, c.outcome) {
            (Some(d), Outcome::Falsified) => crate::store::blobs::get(store.root(), d)
                .ok()
                .flatten()
                .map(|bytes| {
                    let from = bytes.len().saturating_sub(TRANSCRIPT_TAIL);
                    String::from_utf8_lossy(&bytes[from..]).into_owned()
                }),
            _ => None,
        };
        cases.push(junit::Case {
            id: c.id.clone(),
            text,
            path: place.as_ref().map(|p| p.path.clone()),
            range: place.and_then(|p| p.range),
            outcome: c.outcome.as_str().to_owned(),
            reason: c.reason.clone(),
            record: c.record.clone(),
            evidence: c.evidence.clone(),
            transcript,
            seconds: c.seconds,
        });
    }
    Ok(match format {
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
    })
}

/// `blast`'s text: the tree of the radius (`--invert`: of what the root rests on), from the
/// members' texts and premises the operation read.
pub fn blast_text(
    b: &crate::graph::Blast,
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
    tree::render(&b.root, &children, &mut label, depth)
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
            crate::ops::page::MAX_LIMIT
        ),
    ))
}
