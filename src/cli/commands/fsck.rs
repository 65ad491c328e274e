//! `elench fsck [--repair] [--checkpoint FILE]`: check the whole store
//! ([`crate::ops::fsck`]), with a bar over the log's records on a terminal.

use crate::cli::failure::Failure;
use crate::cli::output::Report;
use crate::cli::Globals;
use crate::ops::fsck::{fsck, FsckInput};
use crate::ops::{Context, Observer, Progress};
use indicatif::ProgressDrawTarget;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct FsckArgs {
    /// Move everything from the first damaged record on into quarantine/ (nothing is
    /// deleted) and rebuild the index; exits 0 once the store is usable again
    #[arg(long)]
    pub repair: bool,
    /// Also prove that the log still extends this checkpoint (from `elench checkpoint -o`)
    #[arg(long, value_name = "FILE")]
    pub checkpoint: Option<String>,
    /// The public key (PEM) that signed the checkpoint; its signature is checked against
    /// this key only, never against the store's own keys (whoever can write the store can
    /// add a key there)
    #[arg(long, value_name = "PUB.pem", requires = "checkpoint")]
    pub key: Option<std::path::PathBuf>,
}

/// The CLI's observer (warnings for the report, the spinner of a rebuild), with the walk
/// over the log shown as a bar on a terminal.
struct Watch {
    cli: Arc<dyn Observer>,
}

impl Observer for Watch {
    fn warn(&self, code: &str, message: String) {
        self.cli.warn(code, message);
    }

    /// The check's walk: a bar on stderr over the log's records, only when stderr is a
    /// terminal (piped or scripted runs get the final report alone), cleared when the walk
    /// ends. Anything else (a rebuild on open) is the CLI's.
    fn progress(&self, what: &str, total: Option<u64>) -> Option<Progress> {
        if what != "checking" {
            return self.cli.progress(what, total);
        }
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let bar = indicatif::ProgressBar::with_draw_target(total, ProgressDrawTarget::hidden())
            .with_finish(indicatif::ProgressFinish::AndClear);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{msg} {bar:30} {pos}/{len} records ({eta} left)",
        ) {
            bar.set_style(style);
        }
        bar.set_message(what.to_owned());
        bar.set_draw_target(ProgressDrawTarget::stderr());
        // So that the report of a command stopped in the middle clears it.
        crate::cli::output::progress_shown(&bar);
        bar.enable_steady_tick(Duration::from_millis(200));
        Some(Box::new(move |n| bar.set_position(n)))
    }
}

pub fn run(a: FsckArgs, g: &Globals) -> Result<Report, Failure> {
    let input = FsckInput {
        repair: a.repair,
        checkpoint: a.checkpoint,
        key: a.key,
    };
    let watch = Watch {
        cli: crate::cli::output::observer(),
    };
    let ctx = Context::new(
        g.store.clone(),
        Duration::from_secs(g.wait),
        Arc::new(watch),
    );
    let out = fsck(&ctx, &input);
    let mut out = out?;
    let mut text = String::new();
    if let Some(r) = &out.repaired {
        if r.format {
            text.push_str(&format!(
                "FORMAT named an older layout than the log on disk; it now names layout {}\n",
                crate::store::current_version()
            ));
        }
        text.push_str(&match &r.damage {
            Some(d) => format!(
                "repaired: {d}; moved {} file(s) to {}; the index was rebuilt\n",
                r.moved.len(),
                r.quarantine_dir.display()
            ),
            None if r.moved.is_empty() => "the log was sound; the index was rebuilt\n".into(),
            None => format!(
                "cut an unfinished final record into {}; the index was rebuilt\n",
                r.quarantine_dir.display()
            ),
        });
    }
    text.push_str(&format!(
        "checked {} records ({} envelopes of {} claims): {} problem(s)\n",
        out.records,
        out.envelopes,
        out.claims,
        out.problems.len()
    ));
    for p in &out.problems {
        text.push_str(&format!("  {} {}\n", p.code, p.message));
    }
    let failure = out.failure.take();
    let data = serde_json::to_value(&out).map_err(|e| Failure::Internal(e.to_string()))?;
    Ok(Report {
        data,
        text,
        failure,
        ..Report::default()
    })
}
