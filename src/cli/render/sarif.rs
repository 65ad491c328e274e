//! SARIF 2.1.0 (`--format sarif` on `gate` and `status --at`): the claims in violation as
//! code-scanning results, each located at its anchor.
//!
//! One result per claim, under the rule of its gravest violation (the others named in the
//! message), located at the claim's path and lines at the tree, with the claim id as a
//! partial fingerprint so an alert keeps its identity from run to run. A revoked claim
//! points at its falsified root(s) as related locations. A claim that names no file (a
//! claim about a whole tree) is a run-level notification tied to its rule: code scanning
//! places every result in a file, and refuses a log with a result that has none. A scope
//! with too few claims is a result at the policy file, on its `min_in_scope` line: the gate
//! fails on it, so code scanning must show it. Residue a human accepted is not a violation
//! and is left out.

use elench::anchor::Applies;
use elench::fold::Status;
use elench::gate::{Rule, Violation};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The published schema, named by every document.
pub const SCHEMA_URI: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

/// Every rule a result can name, gravest first: (id, short description, help).
pub const RULES: [(&str, &str, &str); 9] = [
    (
        "elench/falsified",
        "A claim about this code was falsified",
        "A live falsification record targets the claim: what it says does not hold. Fix the \
         code, or supersede the claim with one that is true.",
    ),
    (
        "elench/revoked",
        "A claim rests on a falsified premise",
        "A premise in the claim's dependsOn (directly or further up) is falsified, so the claim \
         no longer stands. The related location is the falsified root.",
    ),
    (
        "elench/stale",
        "The code a claim is about changed",
        "The claim's lines are gone or changed at this tree, or its anchor carries no \
         contentDigest, so nothing shows it still applies. Check it again or make a new claim.",
    ),
    (
        "elench/superseded",
        "A superseded claim is in scope and the policy forbids it",
        "A supersession record replaced the claim; the policy forbids superseded claims in scope.",
    ),
    (
        "elench/unevaluated",
        "A claim was never checked",
        "No live verification or falsification decides the claim, and no human accepted it as \
         residue. Run `elench check` on it, or accept it with a residue-acceptance record.",
    ),
    (
        "elench/harness-keys",
        "A claim is verified by too few harness keys",
        "The policy's min_harness_keys asks for live verifications signed by more distinct \
         harness keys than this claim has.",
    ),
    (
        "elench/forbidden",
        "A claim has a status the policy forbids",
        "The policy's forbid list names this status.",
    ),
    (
        "elench/remote-rewound",
        "The remote's log could not be shown unrewound",
        "The policy's witness_fresh asked the witnesses of the remote's log: one has seen a \
         larger or another tree of it, or the checkpoint could not be confirmed.",
    ),
    (
        "elench/empty-scope",
        "Too few claims in scope to judge the tree",
        "Fewer claims apply at this tree than the policy's min_in_scope: a gate that judged \
         nothing says nothing about the tree.",
    ),
];

fn rule_index(id: &str) -> usize {
    RULES
        .iter()
        .position(|r| r.0 == id)
        .unwrap_or(RULES.len() - 1)
}

/// The rule a gate violation falls under.
pub fn rule_of(v: &Violation) -> &'static str {
    match v.rule {
        Rule::Forbid => match v.status {
            Some(Status::Falsified) => "elench/falsified",
            Some(Status::Revoked) => "elench/revoked",
            Some(Status::Superseded) => "elench/superseded",
            Some(Status::Unevaluated) => "elench/unevaluated",
            _ => "elench/forbidden",
        },
        Rule::MaxUnevaluated => "elench/unevaluated",
        Rule::MinHarnessKeys => "elench/harness-keys",
        Rule::Stale => "elench/stale",
        Rule::MinInScope => "elench/empty-scope",
        Rule::PolicyExpired => "elench/policy-expired",
        Rule::PolicyEquivocation => "elench/policy-equivocation",
        Rule::RemoteRewound => "elench/remote-rewound",
    }
}

/// A place in the tree: a relative path and, unless the anchor is the whole file, lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub path: String,
    pub range: Option<[u64; 2]>,
}

impl Place {
    /// A place, when `path` is one inside a tree: relative, `/`-separated, no empty, `.` or
    /// `..` segment. A claim's anchor path is whatever its author wrote; a stale claim's is
    /// reported as written, so one that would name a file outside the checkout (`../x`,
    /// `/etc/passwd`) gets no location at all rather than a wrong one.
    pub fn new(path: &str, range: Option<[u64; 2]>) -> Option<Place> {
        let inside = !path.is_empty()
            && path
                .split('/')
                .all(|seg| !seg.is_empty() && seg != "." && seg != "..")
            && !path.chars().any(char::is_control);
        inside.then(|| Place {
            path: path.to_owned(),
            range,
        })
    }
}

/// The falsified claim a revoked one rests on.
#[derive(Debug, Clone)]
pub struct Root {
    pub id: String,
    pub text: Option<String>,
    /// Where it is at this tree, when it applies here.
    pub place: Option<Place>,
}

/// One claim in violation.
#[derive(Debug, Clone)]
pub struct Finding {
    pub id: String,
    /// Rule ids it breaks, gravest first (at least one).
    pub rules: Vec<&'static str>,
    pub status: Option<Status>,
    pub applies: Option<Applies>,
    /// Where it is (none: a claim about a whole tree; it becomes a notification).
    pub place: Option<Place>,
    pub text: Option<String>,
    /// Why, in words, one per rule broken.
    pub reasons: Vec<String>,
    pub roots: Vec<Root>,
}

/// What a run reports.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub findings: Vec<Finding>,
    /// Violations of the scope as a whole: (rule id, message).
    pub scope: Vec<(&'static str, String)>,
    /// Where the scope's violations are located: the policy file.
    pub policy: Option<Place>,
    pub properties: Value,
}

/// The gate's violations, one finding per claim; `roots` gives the falsified roots of a
/// revoked claim.
pub fn from_gate<E>(
    violations: &[Violation],
    roots: &mut dyn FnMut(&str) -> Result<Vec<Root>, E>,
) -> Result<Report, E> {
    let mut by_claim: BTreeMap<&str, Vec<&Violation>> = BTreeMap::new();
    let mut scope = Vec::new();
    for v in violations {
        match &v.id {
            Some(id) => by_claim.entry(id).or_default().push(v),
            None => scope.push((rule_of(v), v.message.clone())),
        }
    }
    let mut findings = Vec::with_capacity(by_claim.len());
    for (id, vs) in by_claim {
        let mut rules: Vec<&'static str> = vs.iter().map(|v| rule_of(v)).collect();
        rules.sort_by_key(|r| rule_index(r));
        rules.dedup();
        let first = vs[0];
        let revoked = vs.iter().any(|v| v.status == Some(Status::Revoked));
        findings.push(Finding {
            id: id.to_owned(),
            rules,
            status: first.status,
            applies: first.applies,
            place: first
                .path
                .as_deref()
                .and_then(|p| Place::new(p, first.range)),
            text: first.text.clone(),
            reasons: vs.iter().map(|v| v.message.clone()).collect(),
            roots: if revoked { roots(id)? } else { Vec::new() },
        });
    }
    Ok(Report {
        findings,
        scope,
        policy: None,
        properties: Value::Null,
    })
}

/// Percent-encodes a relative path as a URI reference: every byte but the unreserved ones
/// and `/`.
fn uri_of(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn physical(place: &Place) -> Value {
    let mut loc = json!({"artifactLocation": {"uri": uri_of(&place.path)}});
    if let Some([start, end]) = place.range {
        loc["region"] = json!({"startLine": start.max(1), "endLine": end.max(start).max(1)});
    }
    loc
}

fn message_of(f: &Finding) -> String {
    let mut m = format!(
        "Claim {} is {}",
        f.id,
        f.status.map_or("in violation", |s| s.as_str())
    );
    if let Some(a) = f.applies {
        m.push_str(&format!(" ({} at this tree)", a.as_str()));
    }
    if let Some(t) = &f.text {
        m.push_str(&format!(": \"{}\"", super::graph::one_line(t)));
    }
    m.push('.');
    for r in &f.reasons {
        m.push(' ');
        // The gate's reasons are clauses; here each is a sentence.
        let mut chars = r.chars();
        if let Some(first) = chars.next() {
            m.extend(first.to_uppercase());
            m.push_str(chars.as_str());
        }
        if !r.ends_with('.') {
            m.push('.');
        }
    }
    for (i, root) in f.roots.iter().enumerate() {
        // An embedded link to the related location, as SARIF's messages allow.
        m.push_str(&format!(" It rests on falsified [{}]({}).", root.id, i + 1));
    }
    m
}

/// The SARIF document (pretty-printed JSON, members in a fixed order).
pub fn render(r: &Report) -> String {
    let rules: Vec<Value> = RULES
        .iter()
        .map(|(id, short, help)| {
            json!({
                "id": id,
                "name": id.trim_start_matches("elench/").replace('-', "_"),
                "shortDescription": {"text": short},
                "fullDescription": {"text": help},
                "help": {"text": help},
                "defaultConfiguration": {"level": "error"},
            })
        })
        .collect();
    let mut results = Vec::new();
    let mut notifications = Vec::new();
    for f in &r.findings {
        let rule = f.rules[0];
        let message = message_of(f);
        let Some(place) = &f.place else {
            notifications.push(json!({
                "level": "error",
                "message": {"text": format!("{message} It names no file, so it is reported here rather than as a result.")},
                "associatedRule": {"id": rule, "index": rule_index(rule)},
                "properties": {"claim": f.id},
            }));
            continue;
        };
        let mut result = json!({
            "ruleId": rule,
            "ruleIndex": rule_index(rule),
            "kind": "fail",
            "level": "error",
            "message": {"text": message},
            "locations": [{"physicalLocation": physical(place)}],
            "partialFingerprints": {"elenchClaimId/v1": f.id},
            "properties": {
                "claim": f.id,
                "status": f.status.map(Status::as_str),
                "applies": f.applies.map(Applies::as_str),
                "rules": f.rules,
            },
        });
        if !f.roots.is_empty() {
            let related: Vec<Value> = f
                .roots
                .iter()
                .enumerate()
                .map(|(i, root)| {
                    let mut text = format!("falsified root {}", root.id);
                    if let Some(t) = &root.text {
                        text.push_str(&format!(": \"{}\"", super::graph::one_line(t)));
                    }
                    let mut loc = json!({"id": i + 1, "message": {"text": text}});
                    if let Some(p) = &root.place {
                        loc["physicalLocation"] = physical(p);
                    }
                    loc
                })
                .collect();
            result["relatedLocations"] = Value::Array(related);
        }
        results.push(result);
    }
    for (rule, message) in &r.scope {
        let mut result = json!({
            "ruleId": rule,
            "ruleIndex": rule_index(rule),
            "kind": "fail",
            "level": "error",
            "message": {"text": format!("The gate fails: {message}.")},
            "partialFingerprints": {"elenchRule/v1": rule},
            "properties": {"rules": [rule]},
        });
        if let Some(place) = &r.policy {
            result["locations"] = json!([{"physicalLocation": physical(place)}]);
        }
        results.push(result);
    }
    let doc = json!({
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "elench",
                "semanticVersion": env!("CARGO_PKG_VERSION"),
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "invocations": [{
                "executionSuccessful": true,
                "toolExecutionNotifications": notifications,
            }],
            "results": results,
            "properties": r.properties,
        }],
    });
    // Plain values and strings: printing them cannot fail.
    let mut out = serde_json::to_string_pretty(&doc).unwrap_or_default();
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_uri_references() {
        assert_eq!(uri_of("src/a b/ü#1.rs"), "src/a%20b/%C3%BC%231.rs");
        assert_eq!(uri_of("https://x"), "https%3A//x");
    }

    #[test]
    fn only_paths_inside_a_tree_are_places() {
        assert!(Place::new("src/lib.rs", None).is_some());
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a//b",
            "./a",
            "a/",
            "a\nb",
        ] {
            assert!(
                Place::new(&bad.replace("\\n", "\n"), None).is_none(),
                "{bad:?}"
            );
        }
    }
}
