//! The store: an append-only log of framed, checksummed, hash-chained records (the source of
//! truth) and an LMDB index beside it that can be rebuilt from the log at any time.
//!
//! Layout of a store directory (`.elench/`):
//! - `FORMAT`: `elench-store <version>`, written last by `init`, read (bounded) before anything
//! - `log/`: segment files (see [`log`])
//! - `index/`: the LMDB environment (see [`index`])
//! - `LOCK`: the writer lock (an advisory file lock; the kernel drops it when a process dies)
//! - `blobs/`: content-addressed evidence, `quarantine/`: what `fsck --repair` moved aside
//!
//! Invariants:
//! - Append-only: nothing here deletes or rewrites an acknowledged record.
//! - One writer at a time (the lock), any number of readers that never wait for it: readers
//!   see the index as the last writer committed it.
//! - A group of records is acknowledged only after the log's fsync; the index follows in one
//!   transaction, and an index that lags the log is caught up by the next writer (or reader
//!   that finds the lock free).
//! - An index that disagrees with the log (chain value), is missing or cannot be opened is
//!   rebuilt from the log, with the warning INDEX_REBUILT. The log is never "repaired" from
//!   the index.
//! - Whether an envelope is accepted depends on the trust state at its position in the log.

pub mod blobs;
mod commit;
pub mod index;
pub mod log;
mod migrate;
mod open;
mod query;
pub mod rebuild;
pub mod record;
mod repair;
pub mod stage;

pub use commit::Appended;
pub use index::{ClaimEntry, Environments, IndexWatch, KeyEntry, Meta};
pub use log::{Damage, Head, Position, Tail};
pub use migrate::current_version;
pub use query::{trust_set_of, AllClaims, Snapshot};
pub use repair::Repaired;
pub use stage::{DryRun, Staged};

use crate::claim::Claim;
use crate::error::Rejection;
use crate::ingest::Signer;
use crate::keys::Role;
use crate::observer::{Observer, Silent};
use index::Index;
use log::Log;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The directory name `init` creates and commands look for.
pub const STORE_DIR: &str = ".elench";
const FORMAT_FILE: &str = "FORMAT";
const LOG_DIR: &str = "log";
const INDEX_DIR: &str = "index";
/// Records a write applies to the index (a catch-up, a batch of `add`) from which it ends
/// with an fsync of the index.
pub const SYNC_AFTER: u64 = 1024;
/// Envelopes one thread verifies in a row, at most, when a group is verified on every core
/// (about a millisecond of work). Rayon splits a range only when an idle thread steals from
/// it, and a piece already running is not split: unbounded, the pieces were a quarter of a
/// group, and a group's last one kept one core busy for tens of milliseconds while the other
/// waited (`fsck` used 1.85 of its 2 cores, 1.94 with this bound).
pub const VERIFY_PIECE: usize = 32;
const LOCK_FILE: &str = "LOCK";
pub const QUARANTINE_DIR: &str = "quarantine";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no elench store at {0} (run `elench init`)")]
    NotFound(PathBuf),
    #[error("the store at {path} is held by another elench process; waited {waited_secs} s")]
    Busy { path: PathBuf, waited_secs: u64 },
    #[error("the store has layout version {found}; this elench supports up to {supported}: upgrade elench")]
    FormatTooNew { found: u32, supported: u32 },
    #[error("store is damaged: {0}")]
    Corrupt(String),
    /// A store of an older layout that this build has no migration for (layout 1 needs the
    /// `layout1` feature). Nothing was changed.
    #[error("{0}")]
    MigrationUnavailable(String),
    /// A record of the log that is whole (checksums, chain) but cannot be used: it does not
    /// verify, is not canonical, or repeats an envelope.
    #[error("store is damaged: {0}; `elench fsck --repair` moves the damaged part aside")]
    Damaged(Damage),
    #[error("{0} is not an elench store: {1}")]
    Invalid(PathBuf, String),
    #[error(
        "the store at {0} is read-only (file system or permissions): it can be read, not written"
    )]
    ReadOnly(PathBuf),
    /// A read-only store whose index would have to be rebuilt before it can be read.
    #[error("the store at {path} is read-only, and its index must be rebuilt before it can be read: {why}")]
    ReadOnlyIndexStale { path: PathBuf, why: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The index's bytes are damaged (a cache of the log): it is marked, and the next command
    /// rebuilds it.
    #[error("{0}")]
    IndexDamaged(String),
    /// The index could not be mapped or grown: the process ran short of memory or address
    /// space. Not damage.
    #[error("the index could not be used: {0}")]
    IndexUnavailable(String),
    /// The caller opened one store twice at once through different [`Environments`], which
    /// LMDB refuses (a fault of the caller, not of the store).
    #[error("{0}")]
    IndexInUse(String),
    /// The trust state changed between verifying an envelope and appending it, and under the
    /// new state the envelope is refused.
    #[error("{}", .0.message)]
    Rejected(Rejection),
}

impl From<log::LogError> for StoreError {
    fn from(e: log::LogError) -> StoreError {
        match e {
            log::LogError::Io { path, source } => StoreError::Io { path, source },
            log::LogError::Damaged(d) => StoreError::Corrupt(d.to_string()),
        }
    }
}

impl From<index::IndexError> for StoreError {
    fn from(e: index::IndexError) -> StoreError {
        if let index::IndexError::InUse(_) = e {
            return StoreError::IndexInUse(e.to_string());
        }
        if e.is_damage() {
            // The next command rebuilds it without reading it.
            index::fault::mark_entered();
            return StoreError::IndexDamaged(format!(
                "the index is damaged ({e}); it is a cache of the log: the next command \
                 rebuilds it, or run `elench reindex`"
            ));
        }
        if e.is_resource() {
            return StoreError::IndexUnavailable(format!(
                "{e}; the index is not damaged: give elench more memory or address space"
            ));
        }
        StoreError::Corrupt(format!(
            "{e} (`elench reindex` rebuilds the index from the log)"
        ))
    }
}

/// A claim as the store reports it: its header, and `body`, what was read of its text:
/// nothing (`()`, [`Store::get_fold`]), the index's [`Summary`] ([`Store::get_light`]) or the
/// whole [`Body`] as signed ([`Store::get`]).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredClaim<B = ()> {
    pub claim: Claim,
    pub body: B,
    /// The union of the keys that verified any of the claim's envelopes, sorted by keyid.
    pub signers: Vec<Signer>,
    /// Arrival number: 0 for the first claim ever added.
    pub seq: u64,
}

/// A trusted key as the store reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredKey {
    pub keyid: String,
    pub role: Role,
    pub name: String,
    /// Hex of the 32 raw public key bytes.
    pub public_key: String,
    pub retired: bool,
}

/// What appending one accepted envelope did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// A new claim.
    Created,
    /// A new envelope of a claim already stored; its signers joined the claim's.
    Merged,
    /// That exact envelope was already in the log.
    Noop,
}

impl Effect {
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Created => "created",
            Effect::Merged => "merged",
            Effect::Noop => "noop",
        }
    }
}

/// One envelope of the log, in canonical form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvelopeRecord {
    /// Envelope number: 0 for the first envelope in the log.
    pub seq: u64,
    pub claim_id: String,
    /// Lowercase hex SHA-256 of `bytes`.
    pub digest: String,
    pub bytes: Vec<u8>,
}

/// Who hears a store's warnings (TORN_TAIL, INDEX_REBUILT, …) and the progress of the
/// rebuilds and catch-ups opening it starts by itself: the observer it was opened with.
pub type Observed = Arc<dyn Observer>;

/// How a store is opened ([`Store::open`], [`Store::init`], [`Store::open_unsettled`],
/// [`Store::reindex_at`], [`Store::repair_at`]), and how it works after.
#[derive(Clone)]
pub struct Options {
    /// How long to wait for the writer lock (another process writing).
    pub wait: Duration,
    /// Who hears the store's warnings (TORN_TAIL, INDEX_REBUILT, …) and the progress of the
    /// rebuilds and catch-ups it starts by itself.
    pub observer: Observed,
    /// Where its index's environment is open, shared with the caller's other stores: LMDB
    /// opens a folder's environment once per process, so a second store of the same folder
    /// opened while the first lives must share them (or is `IndexInUse`).
    pub envs: Environments,
}

impl Options {
    /// Waits up to `wait` for the writer lock; nobody hears anything; environments of its
    /// own.
    pub fn new(wait: Duration) -> Options {
        Options {
            wait,
            observer: Arc::new(Silent),
            envs: Environments::new(),
        }
    }

    /// With `observer` hearing the store's warnings and progress.
    pub fn observer(mut self, observer: Observed) -> Options {
        self.observer = observer;
        self
    }

    /// With the index opened through `envs` (shared with the caller's other stores).
    pub fn envs(mut self, envs: &Environments) -> Options {
        self.envs = envs.clone();
        self
    }
}

pub struct Store {
    root: PathBuf,
    log: Log,
    index: Index,
    /// Trust generation of the last `trust_set()` handed out (for `add`); u64::MAX: none.
    trust_seen: AtomicU64,
    /// Nobody can write the store (read-only file system or permissions): it is read as the
    /// last writer left it, and every write is refused.
    read_only: bool,
    /// How it was opened: the wait for the writer lock, who hears its work, its environments.
    options: Options,
    /// What a layer above derived from the store's trust records (the team's trust state),
    /// kept while this opening lives so it is read once (see [`Store::derived`]).
    derived: std::sync::Mutex<Option<Arc<dyn std::any::Any + Send + Sync>>>,
    /// The buffer the last group's log frames were written from, kept (up to
    /// `commit::KEPT_FRAME_BYTES`) for the next group: a bulk `add` writes a group of
    /// megabytes every few milliseconds, and fresh memory for each costs a page fault per
    /// page.
    frames: std::sync::Mutex<Vec<u8>>,
}

/// Where the store is: an explicit path, or `.elench` in the working directory or the
/// nearest ancestor that has one.
pub fn locate(explicit: Option<&Path>) -> Result<PathBuf, StoreError> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    let cwd = std::env::current_dir().map_err(|source| StoreError::Io {
        path: PathBuf::from("."),
        source,
    })?;
    cwd.ancestors()
        .map(|d| d.join(STORE_DIR))
        .find(|d| d.join(FORMAT_FILE).is_file())
        .ok_or_else(|| StoreError::NotFound(cwd.join(STORE_DIR)))
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Reads the FORMAT file (at most 64 bytes: anything longer is not one).
fn read_format_file(root: &Path) -> Result<u32, StoreError> {
    let path = root.join(FORMAT_FILE);
    let file = File::open(&path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            StoreError::NotFound(root.to_path_buf())
        } else {
            StoreError::Io {
                path: path.clone(),
                source: e,
            }
        }
    })?;
    let mut text = String::new();
    file.take(65)
        .read_to_string(&mut text)
        .map_err(io_err(&path))?;
    let invalid = || {
        StoreError::Invalid(
            root.to_path_buf(),
            format!("{} is not an elench FORMAT file", path.display()),
        )
    };
    if text.len() > 64 {
        return Err(invalid());
    }
    text.trim()
        .strip_prefix("elench-store ")
        .and_then(|v| v.parse().ok())
        .ok_or_else(invalid)
}

fn write_format_file(root: &Path) -> Result<(), StoreError> {
    let path = root.join(FORMAT_FILE);
    crate::atomic_file::write(
        &path,
        format!("elench-store {}\n", current_version()).as_bytes(),
    )
    .map_err(io_err(&path))
}

/// The writer lock, held until dropped.
pub struct WriterLock {
    _file: File,
}

/// How long unit tests wait for a store's lock. Not zero: while another test of the same
/// binary starts a process, the child holds a copy of every open file until it runs its
/// program, and the lock (an advisory lock held through an open file) stays held by that
/// copy for that moment after the store lets it go.
#[cfg(test)]
pub(crate) const TEST_LOCK_WAIT: Duration = Duration::from_secs(30);

fn acquire_lock(root: &Path, wait: Duration) -> Result<WriterLock, StoreError> {
    let path = root.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io_err(&path))?;
    let started = Instant::now();
    let mut pause = Duration::from_millis(2);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(WriterLock { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => {
                if started.elapsed() >= wait {
                    return Err(StoreError::Busy {
                        path: root.to_path_buf(),
                        waited_secs: started.elapsed().as_secs(),
                    });
                }
                std::thread::sleep(pause.min(wait.saturating_sub(started.elapsed())));
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io_err(&path)(e)),
        }
    }
}

fn try_lock(root: &Path) -> Result<Option<WriterLock>, StoreError> {
    acquire_lock(root, Duration::ZERO)
        .map(Some)
        .or_else(|e| match e {
            StoreError::Busy { .. } => Ok(None),
            other => Err(other),
        })
}

/// A folder of `quarantine/` no earlier repair used (two repairs in one second get two).
fn fresh_quarantine(root: &Path) -> PathBuf {
    let base = root.join(QUARANTINE_DIR);
    let time = unix_time();
    (0u32..)
        .map(|k| match k {
            0 => base.join(time.to_string()),
            k => base.join(format!("{time}-{k}")),
        })
        .find(|d| !d.exists())
        .unwrap_or_else(|| base.join(format!("{time}-{}", std::process::id())))
}

fn unix_time() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
