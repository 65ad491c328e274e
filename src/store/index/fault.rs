//! A damaged index, as the index itself sees it: the `index/DAMAGED` file, and who is told
//! when a transaction of the index is open.
//!
//! LMDB has no checksums: a flipped byte in a page pointer sends it to an address outside
//! its map (SIGSEGV) or past the end of the file (SIGBUS). The index is a cache, so that is
//! not a reason to die without an answer; but a signal handler belongs to the process, not
//! to a library. So the index only says when one of its transactions is open, and whose
//! `DAMAGED` file a fault then should leave, to an [`IndexWatch`] its caller hands it (with
//! the [`super::Environments`] it opens indexes through): the CLI's watch answers a fault
//! with `INDEX_DAMAGED` (module `cli::fault`); without one ([`Unwatched`]) nothing is told.
//!
//! The same guard ([`Active`]) counts the transactions open on each environment, so that the
//! map is resized only when none is ([`Exclusive`]), as LMDB requires.

use std::cell::Cell;
use std::ffi::CStr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The file that marks an index as damaged (read by the store on open).
pub const FILE: &str = "DAMAGED";

/// Who hears that a transaction of an index begins and ends: what a handler of SIGSEGV and
/// SIGBUS needs to tell a fault in the index from any other. Both are called on the thread
/// of the transaction, for every transaction, so they must be cheap; a watch that is read
/// from a signal handler keeps what `enter` gives it in atomics.
pub trait IndexWatch: Send + Sync {
    /// A transaction of the index whose `DAMAGED` file is `marker` begins (or opening it
    /// reads its pages). `marker` lives as long as the process, so a signal handler may
    /// read it at any time.
    fn enter(&self, marker: &'static CStr);
    /// The transaction [`IndexWatch::enter`] announced has ended.
    fn leave(&self);
}

/// The watch of a caller that handles no faults: nobody is told anything.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unwatched;

impl IndexWatch for Unwatched {
    fn enter(&self, _marker: &'static CStr) {}
    fn leave(&self) {}
}

/// The value of an environment's count of open transactions while its map is being
/// resized: no transaction may begin.
const EXCLUSIVE: usize = usize::MAX;

/// What an environment shares with every guard of its transactions.
pub(super) struct Watched {
    /// Transactions of the environment open in this process, or [`EXCLUSIVE`].
    active: AtomicUsize,
    /// Its `DAMAGED` file, NUL-terminated; leaked once per environment opened, since a
    /// signal handler may read it after the environment is gone.
    marker: &'static CStr,
    watch: Arc<dyn IndexWatch>,
}

impl Watched {
    pub(super) fn new(dir: &Path, watch: Arc<dyn IndexWatch>) -> Watched {
        use std::os::unix::ffi::OsStrExt;
        let marker: &'static CStr = std::ffi::CString::new(dir.join(FILE).as_os_str().as_bytes())
            .map(|c| &*Box::leak(c.into_boxed_c_str()))
            .unwrap_or(c"");
        Watched {
            active: AtomicUsize::new(0),
            marker,
            watch,
        }
    }
}

thread_local! {
    /// The `DAMAGED` file of the index whose transaction this thread began last: an error
    /// that says the index is damaged is turned into a store error by `?` far from the index
    /// (`From<IndexError> for StoreError`), and it was found by a transaction of this
    /// thread.
    static ENTERED: Cell<Option<&'static CStr>> = const { Cell::new(None) };
}

impl Watched {
    /// A transaction begins: the watch is told, and it waits for a resize of the map.
    pub(super) fn acquire(&self) {
        self.watch.enter(self.marker);
        ENTERED.with(|e| e.set(Some(self.marker)));
        loop {
            let n = self.active.load(Ordering::SeqCst);
            if n == EXCLUSIVE {
                // A resize of the map, which takes a moment.
                std::thread::yield_now();
                continue;
            }
            if self
                .active
                .compare_exchange(n, n + 1, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                return;
            }
        }
    }

    /// The transaction [`Watched::acquire`] announced has ended.
    pub(super) fn release(&self) {
        self.active.fetch_sub(1, Ordering::SeqCst);
        self.watch.leave();
    }
}

/// Held while a transaction of the index is open: the watch is told, and the map is not
/// resized.
pub(super) struct Active<'w>(&'w Watched);

impl<'w> Active<'w> {
    pub(super) fn new(watched: &'w Watched) -> Active<'w> {
        watched.acquire();
        Active(watched)
    }
}

impl Drop for Active<'_> {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// Held while the map is resized: taken only when no transaction of the environment is
/// open, and no transaction begins until it is dropped.
pub(super) struct Exclusive<'w> {
    watched: &'w Watched,
    /// The [`Active`]s the taker holds itself (with no transaction open yet), given back on
    /// drop.
    held: usize,
}

impl<'w> Exclusive<'w> {
    /// Taken when the only [`Active`]s of the environment are the `held` ones of the caller.
    pub(super) fn take(watched: &'w Watched, held: usize) -> Option<Exclusive<'w>> {
        watched
            .active
            .compare_exchange(held, EXCLUSIVE, Ordering::SeqCst, Ordering::SeqCst)
            .ok()
            .map(|_| Exclusive { watched, held })
    }
}

impl Drop for Exclusive<'_> {
    fn drop(&mut self) {
        self.watched.active.store(self.held, Ordering::SeqCst);
    }
}

/// Whether the index in `dir` was marked damaged.
pub fn marked(dir: &Path) -> bool {
    dir.join(FILE).exists()
}

/// Marks the index in `dir` damaged, so that the next command rebuilds it.
pub fn mark(dir: &Path) {
    let _ = std::fs::write(dir.join(FILE), b"");
}

/// Marks damaged the index whose transaction this thread began last (an error from LMDB or
/// a value that does not decode says so), so that the next command rebuilds it.
pub fn mark_entered() {
    let Some(marker) = ENTERED.with(Cell::get) else {
        return;
    };
    use std::os::unix::ffi::OsStrExt;
    let path = Path::new(std::ffi::OsStr::from_bytes(marker.to_bytes()));
    if path.parent().is_some_and(Path::is_dir) {
        let _ = std::fs::write(path, b"");
    }
}
