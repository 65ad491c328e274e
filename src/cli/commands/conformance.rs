//! `elench conformance check|attest|run`: conformance reports as evidence.

use crate::cli::common::to_data;
use crate::cli::failure::Failure;
use crate::cli::files::{display_source, read_limited};
use crate::cli::globals::Globals;
use crate::cli::output::{Report, Warning};
use elench::conformance::corpus::{self, Verdict};
use elench::ops::conformance::{self, AttestInput, ReportInput};
use elench::ops::sign::KeySource;
use serde_json::json;
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
    /// The anchor tree (default: the target claim's, or the tree at --at)
    #[arg(long, value_name = "TREE")]
    pub tree: Option<String>,
    /// The directory the report was made from: the record observes its tree and states the
    /// claim's inputs there, so the verdict applies wherever they are the same
    #[arg(long, value_name = "DIR")]
    pub at: Option<PathBuf>,
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

/// The report (`-`: stdin) and the case list, as the operations read them.
fn report_input(path: &str, cases: Option<&PathBuf>) -> Result<ReportInput, Failure> {
    Ok(ReportInput {
        bytes: read_limited(path, MAX_REPORT_BYTES)?,
        source: display_source(path),
        cases: cases.cloned(),
    })
}

fn check(a: CheckArgs) -> Result<Report, Failure> {
    let c = conformance::check(&report_input(&a.report, a.cases.as_ref())?)?;
    let mut text = format!(
        "{}: {} ({})\n",
        display_source(&a.report),
        if c.sound { "sound" } else { "UNSOUND" },
        serde_json::to_value(c.format)
            .unwrap_or_default()
            .as_str()
            .unwrap_or_default()
    );
    for x in &c.violations {
        text.push_str(&format!("  {} at {}: {}\n", x.code, x.pointer, x.message));
    }
    let warnings = c
        .warnings
        .iter()
        .map(|w| Warning::new(w.code, format!("{}: {}", w.pointer, w.message)))
        .collect();
    Ok(Report {
        data: to_data(&c)?,
        text,
        warnings,
        failure: c.unsound(),
        ..Report::default()
    })
}

fn attest(a: AttestArgs, g: &Globals) -> Result<Report, Failure> {
    let input = AttestInput {
        report: report_input(&a.report, a.cases.as_ref())?,
        uri: a.report.clone(),
        claim: a.claim.to_string(),
        key: KeySource::File(a.key.clone()),
        level: a.level.clone(),
        tree: a.tree.clone(),
        at: a.at.clone(),
    };
    let made = conformance::attest(&g.context(), &input)?;
    let text = format!(
        "{} {} {} of {}\n  {}\n",
        made.effect, made.kind, made.id, made.target, made.annotation
    );
    let warnings = made.warnings.iter().map(Warning::from).collect();
    Ok(Report {
        data: to_data(&made)?,
        text,
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
        eprintln!(
            "{}",
            crate::cli::output::terminal_safe(&format!("{} {word}", r.id), false)
        );
    })
    .map_err(|e| Failure::Invalid {
        code: elench::error::Code::BadCorpus,
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
        code: elench::error::Code::ConformanceCasesFailed,
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
