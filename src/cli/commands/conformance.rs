//! `elench conformance check|attest|run`: conformance reports as evidence.

use crate::cli::common::open_store;
use crate::cli::failure::Failure;
use crate::cli::files::{display_source, read_limited};
use crate::cli::globals::Globals;
use crate::cli::output::{Report, Warning};
use crate::conformance::corpus::{self, Verdict};
use crate::conformance::report::{self, Checked, Format};
use crate::error::{Code, Rejection};
use crate::ingest::{seal, verify_envelope};
use crate::keys::{check_authority, keyid, read_signing_key_pem};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::PathBuf;

/// Reports larger than this are refused.
const MAX_REPORT_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, clap::Subcommand)]
pub enum ConformanceCommand {
    /// Check a conformance declaration or a ConformanceResult (bare or in its envelope):
    /// schema and arithmetic; exit 0 when sound, 2 with every violation
    Check(CheckArgs),
    /// Check a report, then record it as a harness-observed verification or falsification
    /// of a claim (signed with a harness key, added to the store)
    Attest(AttestArgs),
    /// Run a conformance corpus against this elench and print the declaration
    Run(RunArgs),
}

impl ConformanceCommand {
    pub fn name(&self) -> &'static str {
        match self {
            ConformanceCommand::Check(_) => "conformance check",
            ConformanceCommand::Attest(_) => "conformance attest",
            ConformanceCommand::Run(_) => "conformance run",
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The report (JSON; `-` reads stdin)
    pub report: String,
    /// The corpus's case list: a JSON file with a `cases` array (of ids, or of objects with
    /// `id`), or a text file with one id a line. Enables the total_matches_corpus check
    #[arg(long, value_name = "FILE")]
    pub cases: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct AttestArgs {
    /// The report (JSON)
    pub report: String,
    /// The claim the report bears on (its id, or a unique prefix of at least 4 hex digits)
    #[arg(long, value_name = "cl_…", value_parser = crate::cli::values::claim_id)]
    pub claim: crate::cli::values::ClaimRef,
    /// A harness private key (PEM PKCS#8) trusted in the store
    #[arg(long, value_name = "HARNESS.pem")]
    pub key: PathBuf,
    /// For a ConformanceResult: which level decides (level_1, level_2 or level_3)
    #[arg(long, default_value = "level_1")]
    pub level: String,
    /// The anchor tree (default: the target claim's)
    #[arg(long, value_name = "TREE")]
    pub tree: Option<String>,
    /// The corpus's case list, as for `check`
    #[arg(long, value_name = "FILE")]
    pub cases: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The corpus directory (with manifest.json)
    #[arg(default_value = "fixtures/conformance")]
    pub corpus: PathBuf,
    /// Also write the declaration (pretty JSON) to this file
    #[arg(short = 'o', long = "output", visible_alias = "out", value_name = "FILE",
          value_parser = crate::cli::files::output_path_buf)]
    pub out: Option<PathBuf>,
}

pub fn run(cmd: ConformanceCommand, g: &Globals) -> Result<Report, Failure> {
    match cmd {
        ConformanceCommand::Check(a) => check(a),
        ConformanceCommand::Attest(a) => attest(a, g),
        ConformanceCommand::Run(a) => run_corpus(a, g),
    }
}

fn read_report(path: &str) -> Result<(Vec<u8>, Value), Failure> {
    let source = display_source(path);
    let bytes = read_limited(path, MAX_REPORT_BYTES)?;
    let value = crate::json::parse_strict(&bytes).map_err(|e| Failure::Invalid {
        code: crate::error::Code::BadReport,
        message: format!("{source}: {e}"),
    })?;
    Ok((bytes, value))
}

/// Reads a case list: JSON `{"cases": [...]}` (ids or objects with `id`), or one id a line.
fn read_cases(path: &PathBuf) -> Result<Vec<String>, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| Failure::io(path.display(), e))?;
    if let Ok(v) = serde_json::from_str::<Value>(&text) {
        let cases = v
            .get("cases")
            .and_then(Value::as_array)
            .ok_or_else(|| Failure::Invalid {
                code: crate::error::Code::BadCaseList,
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
                        code: crate::error::Code::BadCaseList,
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

fn checked_report(
    path: &str,
    cases: Option<&PathBuf>,
) -> Result<(Vec<u8>, Value, Checked), Failure> {
    let (bytes, value) = read_report(path)?;
    let corpus = cases.map(read_cases).transpose()?;
    let checked = report::check(&value, corpus.as_deref()).map_err(|m| Failure::Invalid {
        code: crate::error::Code::UnknownReportFormat,
        message: format!("{}: {m}", display_source(path)),
    })?;
    Ok((bytes, value, checked))
}

fn warnings_of(c: &Checked) -> Vec<Warning> {
    c.warnings
        .iter()
        .map(|w| Warning::new(w.code, format!("{}: {}", w.pointer, w.message)))
        .collect()
}

fn unsound(c: &Checked, path: &str) -> Failure {
    Failure::Invalid {
        code: crate::error::Code::UnsoundReport,
        message: format!(
            "{} has {} violation(s); first: {} at {}: {}",
            display_source(path),
            c.violations.len(),
            c.violations[0].code,
            c.violations[0].pointer,
            c.violations[0].message
        ),
    }
}

fn check(a: CheckArgs) -> Result<Report, Failure> {
    let (_, _, c) = checked_report(&a.report, a.cases.as_ref())?;
    let mut text = format!(
        "{}: {} ({})\n",
        display_source(&a.report),
        if c.is_sound() { "sound" } else { "UNSOUND" },
        serde_json::to_value(c.format)
            .unwrap_or_default()
            .as_str()
            .unwrap_or_default()
    );
    for x in &c.violations {
        text.push_str(&format!("  {} at {}: {}\n", x.code, x.pointer, x.message));
    }
    let failure = (!c.is_sound()).then(|| unsound(&c, &a.report));
    Ok(Report {
        data: json!({
            "format": c.format,
            "sound": c.is_sound(),
            "violations": c.violations,
            "counts": c.counts,
        }),
        text,
        warnings: warnings_of(&c),
        failure,
        ..Report::default()
    })
}

/// What a sound report says about the claim: Some(kind) or a reason to attest nothing.
fn decide(value: &Value, c: &Checked, level: &str) -> Result<(&'static str, String), Failure> {
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
                    code: crate::error::Code::NotAMeasurement,
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
                    code: crate::error::Code::Inconclusive,
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
                return Err(Failure::Usage(format!(
                    "--level {level:?}: expected level_1, level_2 or level_3"
                )));
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
                    code: crate::error::Code::LevelIncomplete,
                    message: format!(
                        "{level} is incomplete: a skipped check is never a pass, so nothing is attested"
                    ),
                }),
            }
        }
    }
}

fn attest(a: AttestArgs, g: &Globals) -> Result<Report, Failure> {
    let (bytes, value, c) = checked_report(&a.report, a.cases.as_ref())?;
    if !c.is_sound() {
        let mut f = unsound(&c, &a.report);
        if let Failure::Invalid { message, .. } = &mut f {
            message.push_str(" (an unsound report attests nothing)");
        }
        return Err(f);
    }
    let (kind, text) = decide(&value, &c, &a.level)?;

    let key_path = a.key.display().to_string();
    let pem = crate::cli::files::read_key_file(&a.key)?;
    let sk =
        read_signing_key_pem(&pem).map_err(|r| Failure::rejected(r, Some(key_path.clone())))?;
    let kid = keyid(&sk.verifying_key());

    let store = open_store(g)?;
    let claim_id = crate::cli::common::resolve_claim_id(&store, &a.claim)?;
    let trust = store.trust_set()?;
    let role = match trust.get(&kid) {
        Some(k) if !k.retired => k.role,
        Some(_) => {
            return Err(Failure::rejected(
                Rejection::new(Code::UntrustedSigner, format!("key {kid} is retired")),
                Some(key_path),
            ))
        }
        None => {
            return Err(Failure::rejected(
                Rejection::new(
                    Code::UntrustedSigner,
                    format!("key {kid} is not trusted in the store (add it with `elench keys add --role harness`)"),
                ),
                Some(key_path),
            ))
        }
    };
    let mut warnings = warnings_of(&c);
    let tree = match (&a.tree, store.get(&claim_id)?) {
        (Some(t), found) => {
            if found.is_none() {
                warnings.push(Warning::new(
                    "DANGLING_REFERENCE",
                    format!("{} is not in the store yet", claim_id),
                ));
            }
            t.clone()
        }
        (None, Some(target)) => target.claim.anchor_tree,
        (None, None) => {
            return Err(Failure::NotFound {
                code: crate::error::Code::NotFound,
                message: format!("no claim {} in the store (or give --tree)", claim_id),
            })
        }
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let claim = json!({
        "kind": kind,
        "target": [claim_id],
        "assertion": {"form": "annotation", "text": text},
        "origin": {"kind": "harness-observed",
                   "producer": {"id": format!("elench/{} conformance attest", env!("CARGO_PKG_VERSION"))}},
        "anchor": {"tree": tree, "strategy": "multi"},
        "timestamp": now,
        "evidence": [{"kind": "test-report",
                      "digest": hex::encode(Sha256::digest(&bytes)),
                      "uri": a.report}],
    });
    let input = Some(display_source(&a.report));
    let (checked, envelope) = seal(&claim, &sk).map_err(|r| Failure::rejected(r, input.clone()))?;
    check_authority(role, &checked).map_err(|r| Failure::rejected(r, Some(key_path.clone())))?;
    let accepted =
        verify_envelope(envelope.as_bytes(), &trust).map_err(|r| Failure::rejected(r, input))?;
    let effect = store.add(&accepted, envelope.as_bytes())?;
    let effect = effect.as_str();
    Ok(Report {
        data: json!({
            "id": checked.id,
            "kind": kind,
            "target": claim_id,
            "effect": effect,
            "annotation": text,
            "report_digest": hex::encode(Sha256::digest(&bytes)),
        }),
        text: format!("{effect} {kind} {} of {}\n  {text}\n", checked.id, claim_id),
        warnings,
        ..Report::default()
    })
}

fn run_corpus(a: RunArgs, g: &Globals) -> Result<Report, Failure> {
    let (declaration, results) = corpus::run(&a.corpus, &g.reaper, |r| {
        let word = match &r.verdict {
            Verdict::Pass => "pass".to_owned(),
            Verdict::Fail(why) => format!("FAIL ({why})"),
            Verdict::NotApplicable => "not-applicable".to_owned(),
            Verdict::Error(why) => format!("ERROR ({why})"),
        };
        eprintln!("{} {word}", r.id);
    })
    .map_err(|e| Failure::Invalid {
        code: crate::error::Code::BadCorpus,
        message: e.to_string(),
    })?;
    if let Some(out) = &a.out {
        let text = serde_json::to_string_pretty(&declaration)
            .map_err(|e| Failure::Internal(e.to_string()))?;
        crate::cli::files::write_atomically(out, format!("{text}\n").as_bytes())?;
    }
    let r = &declaration["result"];
    let bad = r["failed"].as_u64().unwrap_or(0) + r["error"].as_u64().unwrap_or(0);
    // The declaration file is the only thing this command may write.
    let effect = if a.out.is_some() { "created" } else { "noop" };
    let mut text = format!(
        "{} cases: {} passed, {} failed, {} not applicable, {} error\n",
        r["total"], r["passed"], r["failed"], r["not_applicable"], r["error"]
    );
    for c in results
        .iter()
        .filter(|c| matches!(c.verdict, Verdict::Fail(_) | Verdict::Error(_)))
    {
        text.push_str(&format!("  {} {:?}\n", c.id, c.verdict));
    }
    let failure = (bad > 0).then(|| Failure::Precondition {
        code: crate::error::Code::ConformanceCasesFailed,
        message: format!(
            "{bad} case(s) failed or could not be run; see data.failed_cases and data.error_cases"
        ),
    });
    let mut data = declaration;
    data["effect"] = json!(effect);
    Ok(Report {
        data,
        text,
        failure,
        ..Report::default()
    })
}
