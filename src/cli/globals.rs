//! The settings every command receives from the global options.

use crate::cli::failure::Failure;
use crate::cli::output::{self, Mode};
use elench::reaper::Reaper;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Global settings every command receives.
#[derive(Debug, Clone)]
pub struct Globals {
    pub store: Option<PathBuf>,
    pub wait: u64,
    pub mode: Mode,
    /// `--format` as given (None when the mode was detected).
    pub format: Option<String>,
    /// The one reaper of this process, which the watchdog reaps when it ends elench early:
    /// every operation's children and scratch directories are listed with it.
    pub reaper: Arc<Reaper>,
    /// The index environments of every store the command opens, watched for faults
    /// (`cli::fault`).
    pub envs: elench::store::Environments,
}

impl Globals {
    /// The settings of the operations this command line runs: its store, its wait, the
    /// CLI's observer ([`output::observer`]), which puts warnings into the report and shows
    /// progress on a terminal, the process's reaper and the command's index environments.
    pub fn context(&self) -> elench::ops::Context {
        self.context_with(output::observer())
    }

    /// [`Globals::context`] with another observer (a command's own, which passes on to the
    /// CLI's what it does not handle itself).
    pub fn context_with(&self, observer: Arc<dyn elench::ops::Observer>) -> elench::ops::Context {
        elench::ops::Context::new(self.store.clone(), Duration::from_secs(self.wait), observer)
            .with_reaper(self.reaper.clone())
            .with_environments(self.envs.clone())
    }

    /// For `-o -`: the product itself goes to stdout instead of the JSON report, which an
    /// explicit `--format json` forbids.
    pub fn stdout_for_product(&self, what: &str) -> Result<(), Failure> {
        if let Some(f @ ("json" | "jsonl" | "tsv")) = self.format.as_deref() {
            return Err(Failure::usage(
                None,
                format!(
                "-o - writes the {what} itself to stdout, where --format {f} needs the report; \
                 give -o FILE instead"
            ),
            ));
        }
        output::take_stdout_for_product();
        Ok(())
    }
}
