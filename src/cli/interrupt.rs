//! SIGINT and SIGTERM for long commands: the command finishes the envelope in hand, reports
//! what it did, and exits 130 or 143. Commands that do not install this keep the default
//! (the process ends at once; the store's transactions keep it consistent either way).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

pub struct Interrupt {
    signal: Arc<AtomicUsize>,
}

impl Interrupt {
    /// Catches SIGINT and SIGTERM from now on. If the handlers cannot be installed the
    /// command still runs, with the default behaviour.
    pub fn install() -> Interrupt {
        let signal = Arc::new(AtomicUsize::new(0));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let _ = signal_hook::flag::register_usize(sig, Arc::clone(&signal), sig as usize);
        }
        Interrupt { signal }
    }

    /// The signal received, if any.
    pub fn received(&self) -> Option<i32> {
        match self.signal.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s as i32),
        }
    }
}
