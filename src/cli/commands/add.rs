//! `elench add FILE…|DIR|-`: verify envelopes and append the accepted ones to the log
//! ([`elench::ops::add`] does the work). A batch acknowledges each envelope on stderr once its
//! group is durable: a line each off a terminal, a spinner with the counts on one.

use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::interrupt::Interrupt;
use crate::cli::output::Report;
use elench::ops::add::{self as op, AddInput, AddOutput};
use elench::ops::{Observer, Progress};
use std::io::{IsTerminal, Write as _};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Accepted envelopes the text lists when no acknowledgement line listed them.
const LISTED: usize = 100;

#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// Envelopes (.dsse, .json), bundles (.intoto.jsonl: one envelope a line), directories
    /// (searched recursively for those), or `-` for a bundle on stdin
    #[arg(required_unless_present = "input_file", value_name = "INPUT")]
    pub inputs: Vec<String>,
    /// An input given by flag (repeatable), as any INPUT is: a file, a directory, or `-`
    /// for a bundle on stdin (read line by line, each line at most 1 MiB)
    #[arg(long, value_name = "PATH")]
    pub input_file: Vec<String>,
    /// List every accepted envelope in data.claims (by default the first 100; counts and
    /// every rejection are always reported)
    #[arg(long)]
    pub list_all: bool,
    /// Verify every envelope and report what would be added, without storing anything
    #[arg(long)]
    pub dry_run: bool,
}

/// The CLI's observer (warnings for the report, the spinner of a rebuild), with each
/// acknowledgement shown as it comes.
struct Watch {
    cli: Arc<dyn Observer>,
    on_terminal: bool,
    spinner: OnceLock<indicatif::ProgressBar>,
}

impl Observer for Watch {
    fn warn(&self, code: &str, message: String) {
        self.cli.warn(code, message);
    }
    fn progress(&self, what: &str, total: Option<u64>) -> Option<Progress> {
        self.cli.progress(what, total)
    }
    fn acknowledge(&self, lines: &str) {
        if !self.on_terminal {
            let _ = std::io::stderr().write_all(lines.as_bytes());
        }
    }
    fn status(&self, summary: &str) {
        if self.on_terminal {
            let bar = self.spinner.get_or_init(|| {
                let bar = indicatif::ProgressBar::new_spinner();
                bar.enable_steady_tick(Duration::from_millis(200));
                bar
            });
            bar.set_message(summary.to_owned());
        }
    }
}

pub fn run(mut a: AddArgs, g: &Globals) -> Result<Report, Failure> {
    let interrupt = Interrupt::install();
    no_huge_pages();
    // --input-file is one more input, after those given as arguments.
    a.inputs.append(&mut a.input_file);
    let input = AddInput {
        inputs: a.inputs,
        list_all: a.list_all,
        dry_run: a.dry_run,
    };
    let watch = Arc::new(Watch {
        cli: crate::cli::output::observer(),
        on_terminal: std::io::stderr().is_terminal(),
        spinner: OnceLock::new(),
    });
    let ctx = g.context_with(watch.clone());
    let out = op::add(&ctx, &input, &|| interrupt.received());
    if let Some(bar) = watch.spinner.get() {
        bar.finish_and_clear();
    }
    Ok(report(out?))
}

/// Asks the kernel not to back this process's memory with transparent huge pages. A bulk
/// `add` keeps taking fresh memory from the allocator (a group's buffers, the index's pages)
/// and handing it back; where huge pages are on, each first touch of such memory zeroes a
/// whole 2 MiB page, which a profile of a one-core bulk `add` showed as 10% of its samples
/// (`clear_page_erms`) and its system time fell by about 40% without them (see the store
/// section of docs/benchmarks.md). Only a hint: where the call fails nothing changes.
fn no_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes plain integers and touches no memory of ours.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

fn report(mut out: AddOutput) -> Report {
    let mut text = format!(
        "{}{}{}{}\n",
        if out.dry_run {
            "dry run, nothing stored: would be "
        } else {
            ""
        },
        out.counts_text(),
        if out.skipped > 0 {
            format!(", {} unsigned claim(s) skipped", out.skipped)
        } else {
            String::new()
        },
        if out.ignored > 0 {
            format!(", {} other attestation(s) ignored", out.ignored)
        } else {
            String::new()
        }
    );
    // A batch off a terminal already listed each envelope on stderr as it was acknowledged.
    if !out.batch || std::io::stderr().is_terminal() {
        for c in out.claims.iter().take(LISTED) {
            text.push_str(&format!("  {} {} {}\n", c.effect, c.id, c.source));
        }
    }
    for r in &out.rejections {
        let line = r.line.map(|l| format!(" line {l}")).unwrap_or_default();
        text.push_str(&format!(
            "  rejected {}{line}: {} {}\n",
            r.source, r.code, r.message
        ));
    }
    let failure = out.failure.take();
    let partial = out.partial();
    let mut data =
        serde_json::to_value(&out).unwrap_or_else(|e| serde_json::json!({"error": e.to_string()}));
    // The batch as a whole (the CLI Agent Spec's `effect`), as the operation decides it.
    if let Some(obj) = data.as_object_mut() {
        obj.insert("effect".into(), serde_json::json!(out.effect()));
    }
    let mut report = Report {
        data,
        text,
        partial,
        failure,
        ..Report::default()
    };
    report
        .meta
        .insert("dry_run".into(), serde_json::json!(out.dry_run));
    report
}
