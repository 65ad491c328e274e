//! Conformance reports (`elench conformance check|attest`): a report checked for soundness
//! against its schema (and a corpus's case list), and a sound one attested as a harness's
//! verification or falsification of a claim, appended to the store.

use super::sign::KeySource;
use super::{Context, Failure};
use crate::conformance::report::{self, Checked, Format, Violation};
use crate::error::{Code, Rejection};
use crate::ingest::{seal, verify_envelope};
use crate::keys::{check_authority, keyid};
use crate::observer::Warning;
use crate::ops::error::Param;
use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// A report to read.
#[derive(Debug, Clone)]
pub struct ReportInput {
    /// The report's bytes (JSON).
    pub bytes: Vec<u8>,
    /// The report's name in errors (a path, or `stdin`).
    pub source: String,
    /// The corpus's case list (JSON `{"cases": [...]}` or one id a line), read only once the
    /// report has been read as JSON.
    pub cases: Option<PathBuf>,
}

/// A report checked. Serialises as `conformance check`'s data.
#[derive(Debug, Clone, Serialize)]
pub struct ReportCheck {
    pub format: Format,
    pub sound: bool,
    pub violations: Vec<Violation>,
    pub counts: Value,
    /// What the report does that is allowed but worth saying.
    #[serde(skip)]
    pub warnings: Vec<Violation>,
    #[serde(skip)]
    source: String,
}

impl ReportCheck {
    /// `UNSOUND_REPORT` naming the first violation, when there is one.
    pub fn unsound(&self) -> Option<Failure> {
        let first = self.violations.first()?;
        Some(Failure::Invalid {
            code: Code::UnsoundReport,
            message: format!(
                "{} has {} violation(s); first: {} at {}: {}",
                self.source,
                self.violations.len(),
                first.code,
                first.pointer,
                first.message
            ),
        })
    }
}

/// Reads and checks a report; an unsound one is an answer ([`ReportCheck::unsound`] says
/// how to fail), not a failure.
pub fn check(input: &ReportInput) -> Result<ReportCheck, Failure> {
    read_report(input).map(|(c, _)| c)
}

/// The report read as strict JSON and checked, and its value (for `attest` to decide on).
fn read_report(input: &ReportInput) -> Result<(ReportCheck, Value), Failure> {
    let value = crate::json::parse_strict(&input.bytes).map_err(|e| Failure::Invalid {
        code: Code::BadReport,
        message: format!("{}: {e}", input.source),
    })?;
    let corpus = input.cases.as_deref().map(read_cases).transpose()?;
    let checked = report::check(&value, corpus.as_deref()).map_err(|m| Failure::Invalid {
        code: Code::UnknownReportFormat,
        message: format!("{}: {m}", input.source),
    })?;
    let sound = checked.is_sound();
    let Checked {
        format,
        violations,
        warnings,
        counts,
    } = checked;
    let c = ReportCheck {
        format,
        sound,
        violations,
        counts,
        warnings,
        source: input.source.clone(),
    };
    Ok((c, value))
}

/// Reads a case list: JSON `{"cases": [...]}` (ids or objects with `id`), or one id a line.
fn read_cases(path: &Path) -> Result<Vec<String>, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| Failure::io(path.display(), e))?;
    if let Ok(v) = serde_json::from_str::<Value>(&text) {
        let cases = v
            .get("cases")
            .and_then(Value::as_array)
            .ok_or_else(|| Failure::Invalid {
                code: Code::BadCaseList,
                message: format!("{}: a JSON case list needs a `cases` array", path.display()),
            })?;
        return cases
            .iter()
            .enumerate()
            .map(|(i, c)| {
                c.as_str()
                    .or_else(|| c.get("id").and_then(Value::as_str))
                    .map(str::to_owned)
                    .ok_or_else(|| Failure::Invalid {
                        code: Code::BadCaseList,
                        message: format!(
                            "{}: /cases/{i} is neither an id nor an object with `id`",
                            path.display()
                        ),
                    })
            })
            .collect();
    }
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect())
}

/// What to attest, and with what.
#[derive(Debug, Clone)]
pub struct AttestInput {
    pub report: ReportInput,
    /// The report's path as given, recorded as the evidence's `uri`.
    pub uri: String,
    /// The claim the report bears on: its id or a unique prefix.
    pub claim: String,
    /// A harness key trusted in the store.
    pub key: KeySource,
    /// For a ConformanceResult: the level that decides (`level_1`, `level_2`, `level_3`).
    pub level: String,
    /// The anchor tree (default: the target claim's, or the tree at `at`).
    pub tree: Option<String>,
    /// The directory whose tree the report observed: the record is anchored to its tree and
    /// states the claim's inputs there, so it applies wherever they are the same.
    pub at: Option<std::path::PathBuf>,
}

/// The record appended. Serialises as `conformance attest`'s data.
#[derive(Debug, Clone, Serialize)]
pub struct Attested {
    pub id: String,
    /// `verification` or `falsification`.
    pub kind: &'static str,
    /// The claim it bears on.
    pub target: String,
    /// `created`, `merged` or `noop`.
    pub effect: &'static str,
    pub annotation: String,
    pub report_digest: String,
    /// The report's warnings (`pointer: message`), then `DANGLING_REFERENCE` for a target
    /// the store has not seen.
    #[serde(skip)]
    pub warnings: Vec<Warning>,
}

/// Attests a sound report: a verification or falsification of `claim`, signed with a harness
/// key the store trusts, checked as ingest would and appended.
pub fn attest(ctx: &Context, input: &AttestInput) -> Result<Attested, Failure> {
    let (c, value) = read_report(&input.report)?;
    if let Some(mut f) = c.unsound() {
        if let Failure::Invalid { message, .. } = &mut f {
            message.push_str(" (an unsound report attests nothing)");
        }
        return Err(f);
    }
    let (kind, text) = decide(&value, &c, &input.level)?;

    let (sk, key_source) = input.key.read()?;
    let kid = keyid(&sk.verifying_key());

    let store = ctx.open_store()?;
    let claim_id = super::ids::resolve_claim_id(&store, &input.claim)?;
    let trust = store.trust_set()?;
    let role = match trust.get(&kid) {
        Some(k) if !k.retired => k.role,
        Some(_) => {
            return Err(Failure::rejected(
                Rejection::new(Code::UntrustedSigner, format!("key {kid} is retired")),
                Some(key_source),
            ))
        }
        None => {
            return Err(Failure::rejected(
                Rejection::new(
                    Code::UntrustedSigner,
                    format!("key {kid} is not trusted in the store (add it with `elench keys add ‹-role› harness`)"),
                ),
                Some(key_source),
            ))
        }
    };
    let mut warnings: Vec<Warning> = c
        .warnings
        .iter()
        .map(|w| Warning {
            code: w.code,
            message: format!("{}: {}", w.pointer, w.message),
        })
        .collect();
    let target = store.get(&claim_id)?;
    // With the tree's directory, the claim's inputs there (whatever it reads). Without it,
    // only a claim without a predicate observed at its own tree: it read its span, so the
    // record says so and applies wherever the claim carries; otherwise the record applies at
    // its tree only.
    let mut at_tree = None;
    let inputs = match (&input.at, &target) {
        (Some(dir), t) => {
            let (ids, _) = super::tree::tree_ids_of(dir, crate::tree::Selection::Committed)?;
            if let Some(given) = input.tree.as_ref().filter(|g| **g != ids.oid()) {
                return Err(Failure::usage(
                    Some(Param::Tree),
                    format!(
                        "‹tree› {given} is not the tree at ‹at› {} ({}); give one of them",
                        dir.display(),
                        ids.oid()
                    ),
                ));
            }
            let found = match t {
                Some(t) => {
                    let mut resolver = crate::anchor::Resolver::new(dir, ids.oid());
                    crate::anchor::at_tree::claim_inputs(&t.claim, &t.body, &ids, &mut resolver)?
                }
                None => None,
            };
            at_tree = Some(ids.oid().to_owned());
            found
        }
        (None, t) => t.as_ref().and_then(|t| {
            let own_tree = input
                .tree
                .as_ref()
                .is_none_or(|tree| *tree == t.claim.anchor_tree);
            own_tree
                .then(|| crate::anchor::at_tree::own_inputs(&t.claim, &t.body))
                .flatten()
        }),
    };
    let tree = match (at_tree.as_ref().or(input.tree.as_ref()), target) {
        (Some(t), found) => {
            if found.is_none() {
                warnings.push(Warning {
                    code: Code::DanglingReference.as_str(),
                    message: format!("{} is not in the store yet", claim_id),
                });
            }
            t.clone()
        }
        (None, Some(target)) => target.claim.anchor_tree,
        (None, None) => {
            return Err(Failure::NotFound {
                code: Code::NotFound,
                message: format!("no claim {} in the store (or give ‹tree›)", claim_id),
            })
        }
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let digest = hex::encode(Sha256::digest(&input.report.bytes));
    let claim = json!({
        "kind": kind,
        "target": [claim_id],
        "assertion": {"form": "annotation", "text": text},
        "origin": {"kind": "harness-observed",
                   "producer": {"id": format!("elench/{} conformance attest", env!("CARGO_PKG_VERSION"))}},
        "anchor": {"tree": tree, "strategy": "multi"},
        "timestamp": now,
        "evidence": [{"kind": "test-report",
                      "digest": digest,
                      "uri": input.uri}],
    });
    let mut claim = claim;
    if let (Some(inputs), Some(list)) = (inputs, claim["evidence"].as_array_mut()) {
        list.push(crate::anchor::inputs::evidence_entry(&claim_id, &inputs));
    }
    let source = Some(input.report.source.clone());
    let (checked, envelope) =
        seal(&claim, &sk).map_err(|r| Failure::rejected(r, source.clone()))?;
    check_authority(role, &checked).map_err(|r| Failure::rejected(r, Some(key_source.clone())))?;
    let accepted =
        verify_envelope(envelope.as_bytes(), &trust).map_err(|r| Failure::rejected(r, source))?;
    let effect = store.add(&accepted, envelope.as_bytes())?;
    Ok(Attested {
        id: checked.id,
        kind,
        target: claim_id,
        effect: effect.as_str(),
        annotation: text,
        report_digest: digest,
        warnings,
    })
}

/// What a sound report says about the claim: its kind and annotation, or why it attests
/// nothing.
fn decide(value: &Value, c: &ReportCheck, level: &str) -> Result<(&'static str, String), Failure> {
    match c.format {
        Format::Declaration => {
            let d = if value.get("result").is_some() {
                value
            } else {
                value.get("data").unwrap_or(value)
            };
            let r = &d["result"];
            let n = |k: &str| r.get(k).and_then(Value::as_i64).unwrap_or(0);
            let counts = format!(
                "{} total: {} passed, {} failed, {} not applicable, {} error",
                n("total"),
                n("passed"),
                n("failed"),
                n("not_applicable"),
                n("error")
            );
            let runtime = d.get("runtime").and_then(Value::as_str).unwrap_or("?");
            if d.get("declaration_source").and_then(Value::as_str) == Some("hand-maintained") {
                return Err(Failure::Precondition {
                    code: Code::NotAMeasurement,
                    message: "the declaration is hand-maintained: a claim, not a measurement; \
                              it cannot be attested as harness-observed"
                        .into(),
                });
            }
            let text = format!("conformance declaration of {runtime}: {counts}");
            if n("failed") > 0 {
                Ok(("falsification", text))
            } else if n("error") > 0 {
                Err(Failure::Precondition {
                    code: Code::Inconclusive,
                    message: format!(
                        "{} case(s) could not be run and none failed: the declaration decides nothing",
                        n("error")
                    ),
                })
            } else {
                Ok(("verification", text))
            }
        }
        Format::Result | Format::ResultInEnvelope => {
            if !["level_1", "level_2", "level_3"].contains(&level) {
                return Err(Failure::usage(
                    Some(Param::Level),
                    format!("‹level› {level:?}: expected level_1, level_2 or level_3"),
                ));
            }
            let r = if c.format == Format::Result {
                value
            } else {
                &value["data"]
            };
            let verdict = r["levels"][level].as_str().unwrap_or_default();
            let s = &r["summary"];
            let text = format!(
                "conformance result of {}: {level} {verdict} ({} passed, {} failed, {} skipped checks)",
                r["tool"].as_str().unwrap_or("?"),
                s["passed"],
                s["failed"],
                s["skipped"]
            );
            match verdict {
                "pass" => Ok(("verification", text)),
                "fail" => Ok(("falsification", text)),
                _ => Err(Failure::Precondition {
                    code: Code::LevelIncomplete,
                    message: format!(
                        "{level} is incomplete: a skipped check is never a pass, so nothing is attested"
                    ),
                }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_that_is_not_json_is_refused_before_the_case_list_is_read() {
        let input = ReportInput {
            bytes: b"{\"result\": ".to_vec(),
            source: "r.json".into(),
            cases: Some(PathBuf::from("/nonexistent/cases.txt")),
        };
        let err = check(&input).unwrap_err();
        assert_eq!(err.code().as_str(), "BAD_REPORT");
        assert!(err.to_string().starts_with("r.json: "), "{err}");
    }

    #[test]
    fn a_sound_check_has_no_failure_and_an_unsound_one_names_its_first_violation() {
        let c = |violations: Vec<Violation>| ReportCheck {
            format: Format::Declaration,
            sound: violations.is_empty(),
            violations,
            counts: Value::Null,
            warnings: Vec::new(),
            source: "r.json".into(),
        };
        assert!(c(Vec::new()).unsound().is_none());
        let v = Violation {
            code: "TOTAL_MATCHES_CORPUS",
            pointer: "/result/total".into(),
            message: "3 is not 4".into(),
        };
        let f = c(vec![v]).unsound().unwrap();
        assert_eq!(f.code().as_str(), "UNSOUND_REPORT");
        assert_eq!(
            f.to_string(),
            "r.json has 1 violation(s); first: TOTAL_MATCHES_CORPUS at /result/total: 3 is not 4"
        );
    }
}
