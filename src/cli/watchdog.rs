//! The watchdog: the thread that answers for a command stopped by SIGINT, SIGTERM or its
//! time limit when the command does not answer itself (see `cli::interrupt`, which records
//! the stop; this module writes the answer).

use crate::cli::failure::Failure;
use crate::cli::interrupt;
use crate::cli::output::{self, emit, Format, Report};
use elench::reaper::Reaper;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a command that stops at safe points gets to do so before the watchdog answers.
pub const GRACE: Duration = Duration::from_secs(3);
/// How long the watchdog waits for the store's writer lock before ending the process anyway
/// (the holder is then another process, or a rebuild that a later open redoes).
pub const LOCK_GRACE: Duration = Duration::from_secs(2);
/// How often the watchdog looks.
const TICK: Duration = Duration::from_millis(25);

/// What the watchdog needs to answer for the command.
pub struct Watch {
    pub format: Format,
    pub command: &'static str,
    pub started: Instant,
    /// The time limit; `None` means none (`--timeout 0`).
    pub limit: Option<Duration>,
    /// `--store` as given, to find the store's writer lock.
    pub store: Option<PathBuf>,
    /// The command's reaper: its scratch directories and the children that must not
    /// outlive elench (a git process waiting on a remote that does not answer).
    pub reaper: Arc<Reaper>,
}

/// Starts the watchdog, which answers for a stop (a signal caught since `catch_signals`,
/// or the time limit).
pub fn start(w: Watch) {
    interrupt::set_limit(w.limit);
    let deadline = w.limit.map(|d| w.started + d);
    let _ = std::thread::Builder::new()
        .name("elench-watchdog".into())
        .spawn(move || watch(w, deadline));
}

fn watch(w: Watch, deadline: Option<Instant>) {
    let signal = loop {
        if output::emitted() {
            return;
        }
        if let Some(s) = interrupt::stopped() {
            break s;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            interrupt::time_is_up();
            continue;
        }
        std::thread::sleep(TICK);
    };
    if interrupt::cooperative() {
        let asked = Instant::now();
        while asked.elapsed() < GRACE {
            if output::emitted() {
                return;
            }
            std::thread::sleep(TICK);
        }
    }
    let _lock = hold_writer_lock(w.store.as_deref());
    // The stop may have changed meanwhile (a signal after the time limit).
    let signal = interrupt::stopped().unwrap_or(signal);
    w.reaper.reap();
    let report = Report {
        data: json!({"partial": true}),
        failure: Some(Failure::Interrupted {
            signal,
            limit_ms: interrupt::limit_ms(),
        }),
        stdout_taken: output::product_on_stdout(),
        ..Report::default()
    };
    let code = emit(w.format, w.command, w.started, report);
    std::process::exit(code);
}

/// Takes the store's writer lock (an advisory lock on its LOCK file) so that the process
/// never ends in the middle of a group commit, its own or another's; gives up after
/// LOCK_GRACE. The lock is released when the process ends.
fn hold_writer_lock(store: Option<&std::path::Path>) -> Option<std::fs::File> {
    let root = elench::store::locate(store).ok()?;
    // The layout's writer lock (see ARCHITECTURE.md, "Storage layout").
    let file = std::fs::File::open(root.join("LOCK")).ok()?;
    let asked = Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => return Some(file),
            Err(std::fs::TryLockError::WouldBlock) if asked.elapsed() < LOCK_GRACE => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(_) => return None,
        }
    }
}
