//! How the caller tells a long operation to stop at its next safe point.
//!
//! The operations that stop early (`add`, `check`, `push`, `pull`, `sync`) poll a [`Stop`]
//! between units of work, finish the unit in hand, and report what they did. The CLI answers
//! from its signal handlers and time limit; a caller with nothing to stop them passes
//! [`Never`].

/// Asked between units of work: the signal that asks the operation to stop, if one came
/// (SIGALRM for a time limit, as the CLI records it).
pub trait Stop: Sync {
    fn received(&self) -> Option<i32>;
}

/// Never asks to stop.
#[derive(Debug, Default, Clone, Copy)]
pub struct Never;

impl Stop for Never {
    fn received(&self) -> Option<i32> {
        None
    }
}

impl<F: Fn() -> Option<i32> + Sync> Stop for F {
    fn received(&self) -> Option<i32> {
        self()
    }
}
