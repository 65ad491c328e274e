//! Stopping a command before it is done: SIGINT, SIGTERM, and its time limit (`--timeout`).
//!
//! One mechanism serves all three. SIGINT and SIGTERM are caught from the process's first
//! instructions ([`catch_before_main`], then [`catch_signals`] as `run` begins), so a stop
//! that comes while elench is still starting is recorded too. [`start`] runs once, before the
//! command: it starts a watchdog thread that knows the command's time limit and answers for
//! a stop already recorded. A stop is
//! recorded as a signal number, and the time limit counts as SIGALRM, the classic alarm, so
//! that every place that asks "was I stopped?" asks it the same way.
//!
//! Commands that can stop at a safe point (`add`, `check`, `push`, `pull`, `sync`) call
//! [`Interrupt::install`], poll [`Interrupt::received`], finish the envelope or claim in hand,
//! and report what they did: `CANCELLED` (exit 130 or 143) or `TIMEOUT` (exit 10). For every
//! other command, and for one of those that has not stopped within [`GRACE`] (it waits on a
//! child process, say), the watchdog answers instead: it waits until no process is appending
//! to the store (the store's writer lock is free; at most [`LOCK_GRACE`]), writes the same
//! error envelope, removes scratch directories and ends the process. Reading commands hold
//! nothing that a stop could leave half-done; the store's own writes are group commits that
//! the watchdog does not cut into. A second SIGINT or SIGTERM ends the process at once.

use super::failure::Failure;
use super::output::{emit, Format, Report};
use serde_json::json;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The signal number a stop at the time limit is recorded as.
pub const TIMEOUT_SIGNAL: i32 = libc::SIGALRM;
/// How long a command that stops at safe points gets to do so before the watchdog answers.
pub const GRACE: Duration = Duration::from_secs(3);
/// How long the watchdog waits for the store's writer lock before ending the process anyway
/// (the holder is then another process, or a rebuild that a later open redoes).
pub const LOCK_GRACE: Duration = Duration::from_secs(2);
/// How often the watchdog looks.
const TICK: Duration = Duration::from_millis(25);

struct State {
    /// 0, or the signal that stopped the command (TIMEOUT_SIGNAL for the time limit).
    stop: Arc<AtomicUsize>,
    /// The command stops at safe points and reports for itself.
    cooperative: AtomicBool,
    /// The time limit in force, in milliseconds; u64::MAX before `start` (no limit known).
    limit_ms: AtomicU64,
}

fn state() -> &'static State {
    static STATE: OnceLock<State> = OnceLock::new();
    STATE.get_or_init(|| {
        let stop = Arc::new(AtomicUsize::new(0));
        // A first signal arms `again`; a second one, while the first is being answered,
        // ends the process at once with its own exit code. The shutdown is registered first
        // so that it sees `again` as the previous signal left it.
        let again = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let _ = signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, again.clone());
            let _ = signal_hook::flag::register(sig, again.clone());
            let _ = signal_hook::flag::register_usize(sig, stop.clone(), sig as usize);
        }
        State {
            stop,
            cooperative: AtomicBool::new(false),
            limit_ms: AtomicU64::new(u64::MAX),
        }
    })
}

/// The time limit in force for this invocation, in milliseconds (0: none), once known.
pub fn limit_ms() -> Option<u64> {
    match state().limit_ms.load(Ordering::SeqCst) {
        u64::MAX => None,
        ms => Some(ms),
    }
}

/// What the watchdog needs to answer for the command.
pub struct Watch {
    pub format: Format,
    pub command: &'static str,
    pub started: Instant,
    /// The time limit; `None` means none (`--timeout 0`).
    pub limit: Option<Duration>,
    /// `--store` as given, to find the store's writer lock.
    pub store: Option<PathBuf>,
}

/// A SIGINT or SIGTERM that arrived before [`state`] registered its handlers.
static EARLY: AtomicUsize = AtomicUsize::new(0);

extern "C" fn record_early(sig: libc::c_int) {
    // Only an atomic store: all a signal handler may do.
    EARLY.store(sig as usize, Ordering::SeqCst);
}

/// Records SIGINT and SIGTERM from the process's first instructions on. The elench binary
/// runs this as an ELF constructor, before `main` and before Rust's runtime starts, since a
/// debug build spends milliseconds there and the default action would end the process
/// unanswered. The handler only records; [`catch_signals`] takes what it recorded over.
/// (Only the binary installs it: a test process linking the library keeps its own signals.)
pub extern "C" fn catch_before_main() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is a valid initial value; the handler is
        // async-signal-safe (one atomic store) and has the signature sa_handler expects.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = record_early as extern "C" fn(libc::c_int) as libc::sighandler_t;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Catches SIGINT and SIGTERM for the rest of the process: the first thing elench's `run`
/// does, so that a stop in its first milliseconds is recorded (and answered by the watchdog
/// once [`start`] knows the command) instead of ending the process unanswered.
pub fn catch_signals() {
    let st = state();
    // A stop that came before the handlers: signal-hook has replaced (and chains to) the
    // early handler, so nothing more lands in EARLY after this.
    let early = EARLY.load(Ordering::SeqCst);
    if early != 0 {
        let _ = st
            .stop
            .compare_exchange(0, early, Ordering::SeqCst, Ordering::SeqCst);
    }
}

/// Records the time limit of a command that will not run (its line did not parse), so that
/// its answer still says the limit in force, like every other.
pub fn record_limit(limit: Option<Duration>) {
    let ms = limit.map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX - 1));
    state().limit_ms.store(ms, Ordering::SeqCst);
}

/// Starts the watchdog, which answers for a stop (a signal caught since [`catch_signals`],
/// or the time limit).
pub fn start(w: Watch) {
    let st = state();
    let ms = w
        .limit
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX - 1));
    st.limit_ms.store(ms, Ordering::SeqCst);
    let deadline = w.limit.map(|d| w.started + d);
    let _ = std::thread::Builder::new()
        .name("elench-watchdog".into())
        .spawn(move || watch(w, deadline));
}

fn watch(w: Watch, deadline: Option<Instant>) {
    let st = state();
    let signal = loop {
        if super::output::emitted() {
            return;
        }
        let s = st.stop.load(Ordering::SeqCst);
        if s != 0 {
            break s as i32;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            let alarm = TIMEOUT_SIGNAL as usize;
            let _ = st
                .stop
                .compare_exchange(0, alarm, Ordering::SeqCst, Ordering::SeqCst);
            continue;
        }
        std::thread::sleep(TICK);
    };
    if st.cooperative.load(Ordering::SeqCst) {
        let asked = Instant::now();
        while asked.elapsed() < GRACE {
            if super::output::emitted() {
                return;
            }
            std::thread::sleep(TICK);
        }
    }
    let _lock = hold_writer_lock(w.store.as_deref());
    // The stop may have changed meanwhile (a signal after the time limit).
    let signal = match st.stop.load(Ordering::SeqCst) {
        0 => signal,
        s => s as i32,
    };
    crate::scratch::remove_all();
    // A git process waiting on a remote that does not answer must not outlive elench.
    crate::child_env::end_all();
    let report = Report {
        data: json!({"partial": true}),
        failure: Some(Failure::Interrupted { signal }),
        stdout_taken: super::output::product_on_stdout(),
        ..Report::default()
    };
    let code = emit(w.format, w.command, w.started, report);
    std::process::exit(code);
}

/// Takes the store's writer lock (an advisory lock on its LOCK file) so that the process
/// never ends in the middle of a group commit, its own or another's; gives up after
/// LOCK_GRACE. The lock is released when the process ends.
fn hold_writer_lock(store: Option<&std::path::Path>) -> Option<std::fs::File> {
    let root = crate::store::locate(store).ok()?;
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

/// A command's handle on the stop: commands that stop at safe points install it.
pub struct Interrupt {
    signal: Arc<AtomicUsize>,
}

impl Interrupt {
    /// Declares that the command stops at safe points and reports for itself, and returns
    /// the handle it polls. (SIGINT and SIGTERM are caught from the start of `run`, or from
    /// here if nothing caught them before.)
    pub fn install() -> Interrupt {
        let st = state();
        st.cooperative.store(true, Ordering::SeqCst);
        Interrupt {
            signal: st.stop.clone(),
        }
    }

    /// The signal received, if any; [`TIMEOUT_SIGNAL`] when the time limit has passed.
    pub fn received(&self) -> Option<i32> {
        match self.signal.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s as i32),
        }
    }
}

/// The name of a signal as people and the spec write it.
pub fn signal_name(signal: i32) -> String {
    match signal {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGALRM => "SIGALRM".into(),
        s => format!("signal {s}"),
    }
}
