//! Stopping a command before it is done: SIGINT, SIGTERM, and its time limit (`--timeout`).
//!
//! One mechanism serves all three. SIGINT and SIGTERM are caught from the process's first
//! instructions ([`catch_before_main`], then [`catch_signals`] as `run` begins), so a stop
//! that comes while elench is still starting is recorded too. `cli::watchdog::start` runs
//! once, before the command: it starts a watchdog thread that knows the command's time limit
//! and answers for a stop already recorded. This module only records (it writes nothing, so
//! the output can ask it whether to stop); the watchdog answers. A stop is
//! recorded as a signal number, and the time limit counts as SIGALRM, the classic alarm, so
//! that every place that asks "was I stopped?" asks it the same way.
//!
//! Commands that can stop at a safe point (`add`, `check`, `push`, `pull`, `sync`) call
//! [`Interrupt::install`], poll [`Interrupt::received`], finish the envelope or claim in hand,
//! and report what they did: `CANCELLED` (exit 130 or 143) or `TIMEOUT` (exit 10). For every
//! other command, and for one of those that has not stopped within the watchdog's `GRACE`
//! (it waits on a child process, say), the watchdog answers instead: it waits until no
//! process is appending to the store (the store's writer lock is free; at most its
//! `LOCK_GRACE`), writes the same
//! error envelope, removes scratch directories and ends the process. Reading commands hold
//! nothing that a stop could leave half-done; the store's own writes are group commits that
//! the watchdog does not cut into. A second SIGINT or SIGTERM ends the process at once.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The signal number a stop at the time limit is recorded as (the failure's own constant).
pub use elench::ops::error::TIMEOUT_SIGNAL;
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

/// A SIGINT or SIGTERM that arrived before [`state`] registered its handlers.
static EARLY: AtomicUsize = AtomicUsize::new(0);

extern "C" fn record_early(sig: libc::c_int) {
    // Only an atomic store: all a signal handler may do.
    EARLY.store(sig as usize, Ordering::SeqCst);
}

/// Records SIGINT and SIGTERM from the process's first instructions on. The elench binary
/// runs this from its pre-initialisation array (`.preinit_array`), which the dynamic loader
/// calls before any shared library's initialiser, before the allocator's and Rust's runtime's
/// own and before `main`: a debug build spends milliseconds there, and the default action
/// would end the process unanswered. Before it, only the kernel and the dynamic loader have
/// run (loading and relocating the binary); a signal then kills the process as it would any
/// program, the one window docs/output.md names. The handler only records;
/// [`catch_signals`] takes what it recorded over. It calls only `sigemptyset` and
/// `sigaction`, which need nothing initialised. (Only the binary installs it: a test process
/// linking the library keeps its own signals.)
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
/// once `cli::watchdog::start` knows the command) instead of ending the process unanswered.
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

/// Records the time limit in force (`None`: none) for [`limit_ms`].
pub fn set_limit(limit: Option<Duration>) {
    let ms = limit.map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX - 1));
    state().limit_ms.store(ms, Ordering::SeqCst);
}

/// The signal that stopped the command (TIMEOUT_SIGNAL for the time limit), if one did.
pub fn stopped() -> Option<i32> {
    match state().stop.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s as i32),
    }
}

/// Records that the time limit has passed, unless a signal stopped the command first.
pub fn time_is_up() {
    let alarm = TIMEOUT_SIGNAL as usize;
    let _ = state()
        .stop
        .compare_exchange(0, alarm, Ordering::SeqCst, Ordering::SeqCst);
}

/// Whether the command stops at safe points and reports for itself ([`Interrupt::install`]).
pub fn cooperative() -> bool {
    state().cooperative.load(Ordering::SeqCst)
}

/// Records the time limit of a command that will not run (its line did not parse), so that
/// its answer still says the limit in force, like every other.
pub fn record_limit(limit: Option<Duration>) {
    set_limit(limit);
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
