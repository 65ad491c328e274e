//! `elench check`: evaluate predicate claims against a tree and append what the harness
//! observed, signed with a harness key ([`elench::ops::check`] does the work).

use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::interrupt::Interrupt;
use crate::cli::output::{Report, Warning};
use elench::eval::runners::Runner;
use elench::ops::check::{self as op, CheckInput, CheckOutput, Outcome};
use elench::ops::{Observer, Progress};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Claim ids (cl_…) to check
    #[arg(required_unless_present = "all", conflicts_with = "all",
          value_parser = crate::cli::values::claim_id)]
    pub ids: Vec<crate::cli::values::ClaimRef>,
    /// Every predicate claim that applies at the tree and is still unevaluated
    #[arg(long)]
    pub all: bool,
    /// The tree to check against (default: the enclosing checkout, found by walking up to a
    /// directory holding .git, else the working directory)
    #[arg(long, value_name = "DIR")]
    pub at: Option<PathBuf>,
    /// Keep the files that .gitignore, .git/info/exclude and the global excludes leave out
    /// of the tree: in its tree OID, in what predicates read and in the sandbox's copy
    #[arg(long)]
    pub no_ignore: bool,
    /// A harness private key (PEM PKCS#8) trusted in the store; records are signed with it
    #[arg(long, value_name = "HARNESS.pem")]
    pub key: PathBuf,
    /// The producer id the records state (default: elench/VERSION check)
    #[arg(long, value_name = "ID")]
    pub producer: Option<String>,
    /// Wall-time limit for one evaluation of one claim (each of --repeat gets its own),
    /// seconds. The whole command's limit is --command-timeout or
    /// ELENCH_TIMEOUT (default 3600 s)
    // The id is the global option's, so that clap does not give `check` a second
    // `--timeout`; the value type is the same (the parser shares values by id).
    #[arg(id = "timeout", long = "timeout", visible_alias = "claim-timeout",
          default_value = "300", value_name = "SECS", value_parser = crate::cli::values::positive_seconds)]
    pub claim_timeout: Duration,
    /// Evaluate each claim N times; record only when all N agree (else: flaky)
    #[arg(long, default_value_t = 1, value_name = "N",
          value_parser = crate::cli::values::positive_u32)]
    pub repeat: u32,
    /// Evaluate N claims at once
    #[arg(long, default_value_t = 1, value_name = "N",
          value_parser = crate::cli::values::positive_usize)]
    pub jobs: usize,
    /// What runs test(NAME): cargo (libtest, NAME = module::test), pytest (NAME = node id),
    /// or junit:CMD (CMD runs with the names in $ELENCH_TESTS, one a line, the first also
    /// in $ELENCH_TEST, and writes JUnit XML to $ELENCH_JUNIT). The tests of all the claims
    /// run together, once per --repeat
    #[arg(long, value_name = "RUNNER", value_parser = crate::cli::values::runner)]
    pub runner: Option<String>,
    /// The Python interpreter the pytest runner uses
    #[arg(long, value_name = "PATH")]
    pub python: Option<String>,
    /// Make a host path visible read-only inside the sandbox (toolchains, caches); repeatable.
    /// An exposed ~/.cargo or ~/.rustup keeps CARGO_HOME / RUSTUP_HOME
    #[arg(long, value_name = "PATH")]
    pub expose: Vec<PathBuf>,
    /// Address-space limit per process, in MiB
    #[arg(long, default_value_t = 2048, value_name = "MIB",
          value_parser = crate::cli::values::positive_u64)]
    pub memory: u64,
    /// Process limit for one claim's sandbox
    #[arg(long, default_value_t = 256, value_name = "N",
          value_parser = crate::cli::values::positive_u64)]
    pub processes: u64,
    /// Space for each process's writes (its layer over the tree and its /tmp), and the
    /// largest file it may write, in MiB
    #[arg(long, default_value_t = 1024, value_name = "MIB",
          value_parser = crate::cli::values::positive_u64)]
    pub scratch: u64,
    /// Run processes without a sandbox (records then say hermeticity: none)
    #[arg(long)]
    pub no_sandbox: bool,
    /// Record the result even when it changes no status
    #[arg(long)]
    pub force: bool,
}

impl CheckArgs {
    /// The runner `--runner` names, or why it names none.
    fn runner(&self) -> Result<Option<Runner>, String> {
        self.runner
            .as_deref()
            .map(|r| Runner::parse(r, self.python.as_deref()))
            .transpose()
            .map_err(|e| format!("--runner: {e}"))
    }

    fn input(&self, runner: Option<Runner>, key: ed25519_dalek::SigningKey) -> CheckInput {
        CheckInput {
            ids: crate::cli::values::claim_strings(&self.ids),
            all: self.all,
            at: self.at.clone(),
            no_ignore: self.no_ignore,
            key,
            key_file: Some(self.key.clone()),
            producer: self.producer.clone(),
            claim_timeout: self.claim_timeout,
            repeat: self.repeat,
            jobs: self.jobs,
            runner,
            expose: self.expose.clone(),
            memory_mib: self.memory,
            processes: self.processes,
            scratch_mib: self.scratch,
            no_sandbox: self.no_sandbox,
            force: self.force,
            details: false,
        }
    }
}

/// The CLI's observer (warnings for the report, the spinner of a rebuild), with each claim
/// shown on a terminal as it is decided.
struct Watch {
    cli: Arc<dyn Observer>,
    on_terminal: bool,
}

impl Observer for Watch {
    fn warn(&self, code: &str, message: String) {
        self.cli.warn(code, message);
    }
    fn progress(&self, what: &str, total: Option<u64>) -> Option<Progress> {
        self.cli.progress(what, total)
    }
    fn acknowledge(&self, lines: &str) {
        if self.on_terminal {
            eprint!("{}", crate::cli::output::terminal_safe(lines, false));
        }
    }
}

pub fn run(a: CheckArgs, g: &Globals) -> Result<Report, Failure> {
    // From the start, so an early Ctrl-C is answered with a report, not a dead process.
    let interrupt = Interrupt::install();
    let format = crate::cli::output::Format::detect(g.format.as_deref());
    let runner = a.runner().map_err(|m| Failure::usage(None, m))?;
    // The operation takes the key itself; the file is named in its errors and hidden from
    // the evaluations.
    let key = elench::ops::keys::read_signing_key_file(&a.key)?;
    let mut input = a.input(runner, key);
    input.details = matches!(
        format,
        crate::cli::output::Format::Junit | crate::cli::output::Format::Github
    );
    let watch = Watch {
        cli: crate::cli::output::observer(),
        on_terminal: std::io::stderr().is_terminal(),
    };
    let ctx = g.context_with(Arc::new(watch));
    let mut out = op::check(&ctx, &input, &|| interrupt.received())?;
    out.word_reasons(&crate::cli::words::say);
    let product = out
        .details
        .take()
        .map(|details| details.map(|d| crate::cli::render::check_document(&out, &d, format)));
    let mut report = report(out);
    match product {
        Some(Ok(doc)) => report.product = Some(doc),
        // What was recorded stays recorded and reported; the document could not be made.
        Some(Err(f)) if report.failure.is_none() => report.failure = Some(f),
        _ => {}
    }
    Ok(report)
}

fn report(mut out: CheckOutput) -> Report {
    let failure = out.stopped.take();
    let checked = &out.checked;
    let mut warnings = Vec::new();
    let mut text = format!("checked {} claim(s) at tree {}\n", checked.len(), out.tree);
    for c in checked {
        text.push_str(&format!("  {:<15} {}", c.outcome.as_str(), c.id));
        if let Some(r) = &c.record {
            text.push_str(&format!("  record {r}"));
        }
        if let Some(why) = &c.reason {
            text.push_str(&format!("\n                  {why}"));
        }
        text.push('\n');
        if c.outcome.undecided() {
            warnings.push(Warning::new(
                if c.outcome == Outcome::Flaky {
                    "FLAKY"
                } else {
                    "INCONCLUSIVE"
                },
                format!(
                    "{}: {}",
                    c.id,
                    c.reason.as_deref().unwrap_or("no reason given")
                ),
            ));
        }
    }
    let partial = !warnings.is_empty();
    // Exit 3 carries an error object that says what it means here.
    let failure = match failure {
        None if partial => {
            let decided = out.counts.verified + out.counts.falsified + out.counts.unchanged;
            let not_applicable = out.counts.not_applicable;
            let rest = match (decided, not_applicable) {
                (0, 0) => "no claim was decided".to_owned(),
                (0, n) => format!("no claim was decided ({n} not applicable at this tree)"),
                (d, 0) => format!("{d} other claim(s) were decided"),
                (d, n) => {
                    format!("{d} other claim(s) were decided ({n} not applicable at this tree)")
                }
            };
            Some(Failure::PartialWith {
                message: format!(
                    "{} claim(s) came out inconclusive or flaky and nothing was recorded for \
                     them (see warnings); {rest}",
                    warnings.len()
                ),
                suggestion:
                    "Read the INCONCLUSIVE and FLAKY warnings (and data.checked[].reason): \
                             each names a claim and why it was not decided; fix the cause (a \
                             --runner, --expose, --timeout, a sandbox) and run check again",
            })
        }
        other => other,
    };
    let data =
        serde_json::to_value(&out).unwrap_or_else(|e| serde_json::json!({"error": e.to_string()}));
    Report {
        data,
        text,
        warnings,
        partial,
        failure,
        ..Report::default()
    }
}
