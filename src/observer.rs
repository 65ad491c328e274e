//! Who hears what an operation has to say besides its result: warnings and progress.
//!
//! Library code never writes to stderr or keeps warnings in process-wide state: each front
//! end passes an [`Observer`] in. The CLI turns warnings into the report's `warnings` and
//! progress into bars on a terminal; the MCP server collects warnings into the tool result.

use std::sync::Mutex;

/// A warning an operation returns inside its result (where the command's `data` carries
/// it, as `sign`'s and `verify`'s do), rather than telling the observer: its code and
/// message.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Warning {
    pub code: &'static str,
    pub message: String,
}

/// Hears a count of units done so far (records applied, claims checked).
pub type Progress = Box<dyn Fn(u64) + Send + Sync>;

/// Receives an operation's warnings and progress.
pub trait Observer: Send + Sync {
    /// A warning with its stable UPPER_SNAKE code (TORN_TAIL, INDEX_REBUILT, …).
    fn warn(&self, code: &str, message: String);

    /// A listener for the progress of long work, given what is being done and, when known,
    /// how many units it has. None: nobody listens (the default).
    fn progress(&self, _what: &str, _total: Option<u64>) -> Option<Progress> {
        None
    }

    /// Lines that acknowledge work as it is done, one unit a line, written together: `add`
    /// acknowledges each envelope of a batch once its group is durable, `check` each claim as
    /// it is decided. Default: nobody watches.
    fn acknowledge(&self, _lines: &str) {}

    /// A one-line summary of a long operation's progress so far (`add`: the running counts),
    /// for a spinner. Default: nobody watches.
    fn status(&self, _summary: &str) {}
}

/// Hears nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct Silent;

impl Observer for Silent {
    fn warn(&self, _code: &str, _message: String) {}
}

/// Keeps every warning, in the order raised, for the caller to take.
#[derive(Debug, Default)]
pub struct Collected {
    warnings: Mutex<Vec<(String, String)>>,
}

impl Collected {
    /// Takes the warnings raised so far, leaving none.
    pub fn take(&self) -> Vec<(String, String)> {
        std::mem::take(&mut *self.warnings.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl Observer for Collected {
    fn warn(&self, code: &str, message: String) {
        self.warnings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((code.to_owned(), message));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collected_keeps_warnings_in_order_and_take_empties_it() {
        let c = Collected::default();
        c.warn("TORN_TAIL", "a".into());
        c.warn("INDEX_REBUILT", "b".into());
        let got = c.take();
        assert_eq!(
            got,
            vec![
                ("TORN_TAIL".to_owned(), "a".to_owned()),
                ("INDEX_REBUILT".to_owned(), "b".to_owned())
            ]
        );
        assert!(c.take().is_empty());
    }
}
