//! `elench claim [TEXT] [--kind K] [--predicate EXPR] [--anchor PATH[:START-END]] …
//! --key KEY.pem`: build, sign and append a claim in one call (or a chain of them with
//! `--batch`). Arguments in, one `ops::claim` call, the report out.

use crate::cli::failure::Failure;
use crate::cli::files::{display_source, read_limited, read_signing_key_file};
use crate::cli::globals::Globals;
use crate::cli::output::Report;
use elench::ops::claim::{self as op, ClaimOutput, ClaimRequest, Entry, ShortClaim};
use elench::ops::Context;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::PathBuf;

/// The largest `--batch` file read (a batch holds at most `ops::claim::MAX_CLAIMS` claims).
const MAX_BATCH_BYTES: usize = 16 << 20;

#[derive(Debug, clap::Args)]
pub struct ClaimArgs {
    /// What the claim says (assertion.text); an assertion needs TEXT or --predicate
    #[arg(value_name = "TEXT")]
    pub text: Option<String>,
    /// The kind of claim; every kind but assertion acts on claims named with --target
    #[arg(long, value_name = "KIND", value_enum)]
    pub kind: Option<elench::claim::Kind>,
    /// An elench-predicate-v1 expression (`elench check` can evaluate it); parsed now, and a
    /// parse error gives its line and column. Without it the claim is an annotation
    #[arg(long, value_name = "EXPR")]
    pub predicate: Option<String>,
    /// What the claim is about: a file of the tree and optionally its lines; its path, lines
    /// and normalised contentDigest are recorded. Without it, the claim is about the whole
    /// tree. A claim has one anchor
    #[arg(long, value_name = "PATH[:START-END]")]
    pub anchor: Vec<String>,
    /// The tree the claim is about (default: the enclosing git work tree, else the current
    /// directory)
    #[arg(long, value_name = "DIR")]
    pub at: Option<PathBuf>,
    /// A premise (repeatable): a claim id or a unique prefix of one (cl_ and 4+ hex digits).
    /// A full id the store does not hold yet is allowed (warning MISSING_PREMISE)
    #[arg(long = "depends-on", value_name = "ID", value_parser = crate::cli::values::claim_id)]
    pub depends_on: Vec<crate::cli::values::ClaimRef>,
    /// A claim the record acts on (repeatable): a stored claim's id or unique prefix
    #[arg(long, value_name = "ID", value_parser = crate::cli::values::claim_id)]
    pub target: Vec<crate::cli::values::ClaimRef>,
    /// Evidence (repeatable): process-exit:EXIT, test-report[:DIGEST|:URI],
    /// artifact-digest:DIGEST, external-attestation:URI
    #[arg(long, value_name = "KIND[:DIGEST|:EXIT|:URI]")]
    pub evidence: Vec<String>,
    /// The private key that signs (PEM PKCS#8; also ELENCH_KEY); the store must trust it, and
    /// its role there gives the origin: agent → agent-asserted, harness → harness-observed,
    /// human → human-asserted. Repeatable: a claim is then signed by the first key, or by
    /// the one --signer (or a batch line's "signer") names; a verification or a
    /// residue-acceptance by the key of the role it needs, when the first lacks it
    #[arg(long, env = "ELENCH_KEY", value_name = "KEY.pem", required = true)]
    pub key: Vec<PathBuf>,
    /// Which of the --key keys signs: its name in the store, its role, or its keyid (8 or
    /// more of its first hex digits)
    #[arg(long, value_name = "NAME|ROLE|KEYID")]
    pub signer: Option<String>,
    /// Who made the claim (origin.producer.id; default ELENCH_PRODUCER, else the key's name
    /// in the store)
    #[arg(long, value_name = "ID")]
    pub producer: Option<String>,
    /// The producer's session (origin.producer.sessionId)
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// The claim's time, Unix seconds (default now); given, the id is reproducible
    #[arg(long, value_name = "SECS", allow_negative_numbers = true)]
    pub timestamp: Option<i64>,
    /// Build, check and sign, print the claim and the envelope, and append nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Print only the claim id (one a line for a batch); errors go to stderr
    #[arg(long)]
    pub id_only: bool,
    /// Claims as JSON Lines, one a line, in the short form {"text", "kind", "predicate",
    /// "anchor", "depends_on", "target", "evidence", "producer", "session", "timestamp",
    /// "signer"};
    /// "@N" in depends_on or target names line N's claim. `-` reads stdin (at most 64 KiB;
    /// a larger batch goes in a file). All are appended as one group, or none
    #[arg(long, value_name = "FILE|-", conflicts_with_all = ["text", "kind", "predicate", "anchor", "depends_on", "target", "evidence", "timestamp", "signer"])]
    pub batch: Option<String>,
}

pub fn run(a: ClaimArgs, g: &Globals) -> Result<Report, Failure> {
    run_in(a, g, &g.context())
}

/// [`run`] under a context the caller made (its observer hears the warnings): what a
/// library caller or a test that must act between the claims' sealing and their append
/// runs.
pub fn run_in(a: ClaimArgs, g: &Globals, ctx: &Context) -> Result<Report, Failure> {
    if a.id_only {
        if let Some(f @ ("json" | "jsonl" | "tsv")) = g.format.as_deref() {
            return Err(Failure::usage(
                None,
                format!("--id-only prints bare ids, where --format {f} needs the report; give one"),
            ));
        }
    }
    let id_only = a.id_only;
    let result = claim(a, ctx);
    if id_only {
        return Ok(print_ids(result));
    }
    result
}

fn claim(a: ClaimArgs, ctx: &Context) -> Result<Report, Failure> {
    let (claims, batch) = match &a.batch {
        Some(path) => {
            let source = display_source(path);
            let bytes = read_limited(path, MAX_BATCH_BYTES)?;
            (op::parse_batch(&source, &bytes)?, Some(source))
        }
        None => {
            let kind = a.kind;
            let short = ShortClaim {
                text: a.text.clone(),
                kind,
                predicate: a.predicate.clone(),
                anchor: a.anchor.clone(),
                depends_on: crate::cli::values::claim_strings(&a.depends_on),
                target: crate::cli::values::claim_strings(&a.target),
                evidence: a.evidence.clone(),
                producer: None,
                session: None,
                timestamp: a.timestamp,
                signer: a.signer.clone(),
            };
            (
                vec![Entry {
                    line: 1,
                    claim: short,
                }],
                None,
            )
        }
    };
    let keys = a
        .key
        .iter()
        .map(|path| read_signing_key_file(path))
        .collect::<Result<Vec<_>, _>>()?;
    let producer = match a.producer {
        Some(p) => Some(p),
        None => producer_from_env()?,
    };
    // Warnings (MISSING_PREMISE, TRACKED_IGNORED, the store's own) reach the report through
    // the CLI's observer, which the context carries.
    let out = op::claim_at(
        ctx,
        ClaimRequest {
            claims,
            batch,
            keys,
            at: a.at,
            producer,
            session: a.session,
            dry_run: a.dry_run,
        },
    )?;
    render(out)
}

/// `ELENCH_PRODUCER`, when set to something.
fn producer_from_env() -> Result<Option<String>, Failure> {
    match std::env::var("ELENCH_PRODUCER") {
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => Ok(Some(v)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(Failure::usage(
            None,
            "ELENCH_PRODUCER is not text: unset it or give --producer ID".into(),
        )),
    }
}

fn render(out: ClaimOutput) -> Result<Report, Failure> {
    let mut text = String::new();
    let would = if out.dry_run { "would be " } else { "" };
    for c in &out.claims {
        let place = c.line.map(|l| format!("line {l}: ")).unwrap_or_default();
        let status = c.status.map(|s| format!(", {s}")).unwrap_or_default();
        let _ = writeln!(
            text,
            "{place}{would}{} {} ({} {}, by {}, key {}{status})",
            c.effect,
            c.id,
            c.kind,
            c.origin,
            c.producer,
            &c.signer[..c.signer.len().min(12)]
        );
        if out.dry_run {
            if let Some(claim) = &c.claim {
                let pretty = serde_json::to_string_pretty(claim).unwrap_or_default();
                let _ = writeln!(text, "claim:\n{pretty}");
            }
            // The envelope as one line, the exact bytes `claim` would append (what `sign -o`
            // would write), so it can be saved and added as it is.
            if let Some(envelope) = &c.envelope {
                let _ = writeln!(text, "envelope:\n{envelope}");
            }
        }
    }
    for r in &out.rejections {
        let place = r.line.map(|l| format!("line {l}: ")).unwrap_or_default();
        let _ = writeln!(text, "{place}rejected {}: {}", r.code, r.message);
    }
    if out.dry_run {
        text.push_str("dry run: nothing was appended\n");
    }
    // Whether the store took every claim, decided by the operation.
    let failure = out.failure();
    let single =
        (out.claims.len() == 1 && out.rejections.is_empty()).then(|| out.claims[0].id.clone());
    let mut data = serde_json::to_value(&out)
        .map_err(|e| Failure::Internal(format!("cannot write the report: {e}")))?;
    // One claim: its id at the top, as `sign` reports it.
    if let (Some(id), Value::Object(m)) = (single, &mut data) {
        m.insert("id".into(), json!(id));
    }
    // The call as a whole, as `add` says it (the CLI Agent Spec's `effect`).
    if let Value::Object(m) = &mut data {
        m.insert("effect".into(), json!(out.effect()));
    }
    let mut report = Report::new(data, text);
    report.meta.insert("dry_run".into(), json!(out.dry_run));
    report.failure = failure;
    Ok(report)
}

/// `--id-only`: the ids on stdout, one a line; a failure as usual on stderr.
fn print_ids(result: Result<Report, Failure>) -> Report {
    let taken = |failure| Report {
        failure: Some(failure),
        stdout_taken: true,
        ..Report::default()
    };
    let mut report = match result {
        Ok(r) => r,
        Err(f) => return taken(f),
    };
    let ids: String = report.data["claims"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .filter_map(|c| c["id"].as_str())
                .map(|id| format!("{id}\n"))
                .collect()
        })
        .unwrap_or_default();
    if let Err(f) = crate::cli::files::product_to_stdout(ids.as_bytes()) {
        return taken(f);
    }
    crate::cli::output::warnings_to_stderr(&report.warnings);
    report.stdout_taken = true;
    report
}
