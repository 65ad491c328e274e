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
pub mod index;
pub mod log;
mod migrate;
pub mod rebuild;
pub mod record;

pub use index::{ClaimEntry, Environments, IndexWatch, KeyEntry, Meta};
pub use log::{Damage, Head, Position, Tail};
pub use migrate::current_version;

use crate::claim::{Body, Claim, Summary};
use crate::error::Rejection;
use crate::ingest::{Accepted, Signer};
use crate::keys::{Role, TrustSet, TrustedKey};
use crate::observer::{Observer, Silent};
use ed25519_dalek::VerifyingKey;
use index::{id_key, id_text, Apply, Index};
use log::{Appender, Kind, Log};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
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
const LOCK_FILE: &str = "LOCK";
pub const QUARANTINE_DIR: &str = "quarantine";
/// Records per index transaction when a group is appended, for an index of `claims` claims:
/// 1/256 of them, at least 1,024 and at most 4,096. Each new claim inserts at a random place
/// of the `nodes` table, and a transaction writes every page it touched once: in a large
/// index nearly one page per insert, fewer when a transaction holds more records. But LMDB
/// reuses the pages a commit frees only two commits later, so the file keeps about two
/// transactions' pages beyond its contents: a fixed cost that a small index would feel.
/// Measured when claims and premise pairs were keyed by hash too (index format 2): at a
/// million claims, 4,096 instead of 1,024 halved the system time of a bulk `add` for 5% more
/// index; at 100,000, 2,048 made the index 10% larger. With format 3, 4,096 at 100,000 was
/// within the noise (docs/benchmarks.md).
fn index_transaction(claims: u64) -> usize {
    usize::try_from(claims / 256)
        .unwrap_or(usize::MAX)
        .clamp(1024, 4096)
}

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

/// An envelope verified (outside the lock) and ready to append.
#[derive(Debug, Clone)]
pub struct Staged {
    pub canonical: Vec<u8>,
    pub digest: [u8; 32],
    pub accepted: Accepted,
    /// The trust generation (number of trust events) it was verified under.
    pub trust_generation: u64,
}

/// Who hears a store's warnings (TORN_TAIL, INDEX_REBUILT, …) and the progress of the
/// rebuilds and catch-ups opening it starts by itself: the observer it was opened with.
pub type Observed = Arc<dyn Observer>;

/// The observer of a store opened without one: nobody hears anything.
fn silent() -> Observed {
    Arc::new(Silent)
}

pub struct Store {
    root: PathBuf,
    log: Log,
    index: Index,
    wait: Duration,
    /// Trust generation of the last `trust_set()` handed out (for `add`); u64::MAX: none.
    trust_seen: AtomicU64,
    /// Nobody can write the store (read-only file system or permissions): it is read as the
    /// last writer left it, and every write is refused.
    read_only: bool,
    /// Hears the warnings and progress of this store's work.
    observer: Observed,
    /// Where its index's environment is open, shared with the caller's other stores.
    envs: Environments,
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

/// How the index stands against the log.
#[derive(Debug)]
enum Standing {
    Current,
    /// The log has records the index has not seen (or a torn tail).
    Behind,
    /// The index must be rebuilt: why.
    Rebuild(String),
    /// The log no longer holds what the index saw (acknowledged records lost, or a trust
    /// event damaged): `STORE_CORRUPT`, why.
    Lost(String),
}

impl Store {
    /// Creates a store at `root` (or opens the one already there). Returns whether it was new.
    /// Nobody hears its warnings: [`Store::init_with`] names who does.
    pub fn init(root: &Path, wait: Duration) -> Result<(Store, bool), StoreError> {
        Store::init_with(root, wait, silent(), &Environments::new())
    }

    /// [`Store::init`], with `observer` hearing the store's warnings and progress, and its
    /// index opened through `envs` (shared with the caller's other stores).
    pub fn init_with(
        root: &Path,
        wait: Duration,
        observer: Observed,
        envs: &Environments,
    ) -> Result<(Store, bool), StoreError> {
        if root.join(FORMAT_FILE).is_file() {
            return Ok((Store::open_with(root, wait, observer, envs)?, false));
        }
        std::fs::create_dir_all(root.join(LOG_DIR)).map_err(io_err(root))?;
        let store = Store::open_parts(root, wait, &observer, envs)?;
        // The FORMAT file is written last: its presence marks a complete store.
        write_format_file(root)?;
        Ok((store, true))
    }

    /// Checks that `root` holds a store this binary can open, without opening (or locking) it.
    pub fn check(root: &Path) -> Result<(), StoreError> {
        let found = read_format_file(root)?;
        let supported = current_version();
        if found > supported {
            return Err(StoreError::FormatTooNew { found, supported });
        }
        Ok(())
    }

    /// Opens an existing store. Never waits for a writer, unless the index must be rebuilt
    /// or an older layout migrated (up to `wait`). Nobody hears its warnings:
    /// [`Store::open_with`] names who does.
    ///
    /// Its index is opened through environments of its own: a second store of the same
    /// folder opened while this one lives must share them ([`Store::open_with`]).
    pub fn open(root: &Path, wait: Duration) -> Result<Store, StoreError> {
        Store::open_with(root, wait, silent(), &Environments::new())
    }

    /// [`Store::open`], with `observer` hearing the store's warnings (a torn tail cut, an
    /// index rebuilt) and the progress of a rebuild, on opening and after, and its index
    /// opened through `envs` (shared with the caller's other stores).
    pub fn open_with(
        root: &Path,
        wait: Duration,
        observer: Observed,
        envs: &Environments,
    ) -> Result<Store, StoreError> {
        let found = read_format_file(root)?;
        let supported = current_version();
        if found > supported {
            return Err(StoreError::FormatTooNew { found, supported });
        }
        if let Some(why) = migrate::disagreement(root, found) {
            // Said before any lock is taken: a read-only store gets the same answer.
            return Err(StoreError::Corrupt(why));
        }
        if found < supported {
            let lock = acquire_lock(root, wait)?;
            migrate::migrate(root, found, envs)?;
            drop(lock);
        }
        let store = Store::open_parts(root, wait, &observer, envs)?;
        match store.settle(None) {
            Ok(()) => Ok(store),
            // Damage found on the way is rebuilt into fresh files, never read again.
            Err(StoreError::IndexDamaged(_)) if !store.read_only => {
                drop(store);
                let index_dir = root.join(INDEX_DIR);
                envs.forget(&index_dir);
                let _lock = acquire_lock(root, wait)?;
                let log = Log::new(root.join(LOG_DIR));
                let why = "the index was found damaged when it was opened";
                let index = Store::replace_index_locked(root, &log, wait, why, &observer, envs)?;
                let store = Store::assemble(root, log, index, wait, false, observer, envs);
                store.settle(Some(&_lock))?;
                Ok(store)
            }
            Err(e) => Err(e),
        }
    }

    /// `fsck --repair` of a store that cannot be opened because FORMAT names an older layout
    /// than the one on disk: when no layout 1 database waits in `db/` (unmigrated), FORMAT is
    /// made to name the current layout (the log, if any, is the store; nothing else
    /// changes). Returns whether it did.
    pub fn repair_format(root: &Path, wait: Duration) -> Result<bool, StoreError> {
        let found = read_format_file(root)?;
        if found >= current_version() || root.join("db").is_dir() {
            return Ok(false);
        }
        let _lock = acquire_lock(root, wait)?;
        write_format_file(root)?;
        Ok(true)
    }

    /// Opens a store without bringing the index level with the log (for `fsck`, which
    /// reports what it finds instead).
    pub fn open_unsettled(root: &Path, wait: Duration) -> Result<Store, StoreError> {
        Store::open_unsettled_with(root, wait, silent(), &Environments::new())
    }

    /// [`Store::open_unsettled`], with `observer` hearing the store's warnings and progress,
    /// and its index opened through `envs`.
    pub fn open_unsettled_with(
        root: &Path,
        wait: Duration,
        observer: Observed,
        envs: &Environments,
    ) -> Result<Store, StoreError> {
        Store::check(root)?;
        let found = read_format_file(root)?;
        if found < current_version() {
            return Store::open_with(root, wait, observer, envs);
        }
        if let Some(why) = migrate::disagreement(root, found) {
            return Err(StoreError::Corrupt(why));
        }
        Store::open_parts(root, wait, &observer, envs)
    }

    fn refuse_if_read_only(&self) -> Result<(), StoreError> {
        if self.read_only {
            return Err(StoreError::ReadOnly(self.root.clone()));
        }
        Ok(())
    }

    /// Whether the store can only be read.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Takes the writer lock without touching the index.
    pub fn lock_unsettled(&self) -> Result<WriterLock, StoreError> {
        self.refuse_if_read_only()?;
        acquire_lock(&self.root, self.wait)
    }

    fn assemble(
        root: &Path,
        log: Log,
        index: Index,
        wait: Duration,
        read_only: bool,
        observer: Observed,
        envs: &Environments,
    ) -> Store {
        Store {
            root: root.to_path_buf(),
            log,
            index,
            wait,
            trust_seen: AtomicU64::new(u64::MAX),
            read_only,
            observer,
            envs: envs.clone(),
        }
    }

    /// Who hears this store's warnings and progress.
    pub fn observer(&self) -> &dyn Observer {
        &*self.observer
    }

    fn open_parts(
        root: &Path,
        wait: Duration,
        observer: &Observed,
        envs: &Environments,
    ) -> Result<Store, StoreError> {
        let log = Log::new(root.join(LOG_DIR));
        let index_dir = root.join(INDEX_DIR);
        let marker = index::unsynced::path_in(&index_dir);
        if is_read_only(root) {
            // Checked before LMDB reads a page that may be lost.
            if let Ok(Some(other)) = index::unsynced::from_other_boot(&marker) {
                return Err(StoreError::ReadOnlyIndexStale {
                    path: root.to_path_buf(),
                    why: index::unsynced::reason(&other),
                });
            }
            let index = Index::open_read_only(envs, &index_dir).map_err(|e| {
                StoreError::Invalid(
                    root.to_path_buf(),
                    format!("the store is read-only and its index cannot be read ({e})"),
                )
            })?;
            return Ok(Store::assemble(
                root,
                log,
                index,
                wait,
                true,
                observer.clone(),
                envs,
            ));
        }
        let index = Store::writable_index(root, &log, wait, observer, envs)?;
        Ok(Store::assemble(
            root,
            log,
            index,
            wait,
            false,
            observer.clone(),
            envs,
        ))
    }

    /// The index of a store that can be written, opened; rebuilt into fresh files first when
    /// it was found damaged, may have lost pages with an earlier boot, or cannot be opened.
    fn writable_index(
        root: &Path,
        log: &Log,
        wait: Duration,
        observer: &Observed,
        envs: &Environments,
    ) -> Result<Index, StoreError> {
        let index_dir = root.join(INDEX_DIR);
        let marker = index::unsynced::path_in(&index_dir);
        // An index a command found damaged (`index::fault`) is never read again: it
        // is rebuilt into fresh files.
        if index::fault::marked(&index_dir) {
            let _lock = acquire_lock(root, wait)?;
            if index::fault::marked(&index_dir) {
                return Store::replace_index_locked(
                    root,
                    log,
                    wait,
                    "an earlier command found the index damaged",
                    observer,
                    envs,
                );
            }
        }
        // An index that may have lost pages with an earlier boot is rebuilt into fresh files
        // before anything reads it: rebuilt in place, LMDB would walk its damaged trees to
        // free their pages and hand those pages out again.
        // (A record that cannot be read is left to opening the index, which says what is
        // wrong or, for an index that is not a folder, replaces it.)
        if let Ok(Some(_)) = index::unsynced::from_other_boot(&marker) {
            let _lock = acquire_lock(root, wait)?;
            // Another process may have rebuilt it meanwhile.
            if let Ok(Some(other)) = index::unsynced::from_other_boot(&marker) {
                let why = index::unsynced::reason(&other);
                return Store::replace_index_locked(root, log, wait, &why, observer, envs);
            }
        }
        Ok(match open_index(envs, &index_dir) {
            Ok(i) => i,
            Err(Unopened::Damaged(why)) => {
                // Unopenable: only the writer may replace it.
                let _lock = acquire_lock(root, wait)?;
                // Another process may have rebuilt it meanwhile.
                match open_index(envs, &index_dir) {
                    Ok(i) => i,
                    Err(Unopened::InUse(why)) => return Err(StoreError::IndexInUse(why)),
                    Err(_) => Store::replace_index_locked(
                        root,
                        log,
                        wait,
                        &format!("the index could not be opened ({why})"),
                        observer,
                        envs,
                    )?,
                }
            }
            Err(Unopened::Resource(why)) => return Err(StoreError::IndexUnavailable(why)),
            // Never rebuilt: another handle of this process reads it.
            Err(Unopened::InUse(why)) => return Err(StoreError::IndexInUse(why)),
        })
    }

    /// Moves the index's files aside and rebuilds it from the log in fresh ones. The caller
    /// holds the writer lock.
    fn replace_index_locked(
        root: &Path,
        log: &Log,
        wait: Duration,
        why: &str,
        observer: &Observed,
        envs: &Environments,
    ) -> Result<Index, StoreError> {
        let index_dir = root.join(INDEX_DIR);
        envs.forget(&index_dir);
        let aside = root.join(format!(
            "index.replaced-{}-{}",
            unix_time(),
            std::process::id()
        ));
        match std::fs::rename(&index_dir, &aside) {
            Ok(()) => {
                let _ = std::fs::remove_dir_all(&aside).or_else(|_| std::fs::remove_file(&aside));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            // Never rebuilt in place: without the folder moved aside, its files go.
            Err(_) => {
                for name in ["data.mdb", "lock.mdb", index::unsynced::FILE] {
                    let file = index_dir.join(name);
                    match std::fs::remove_file(&file) {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(source) => return Err(StoreError::Io { path: file, source }),
                    }
                }
            }
        }
        let index = open_index(envs, &index_dir).map_err(|e| match e {
            Unopened::InUse(why) => StoreError::IndexInUse(why),
            Unopened::Resource(why) => StoreError::Corrupt(format!("resource: {why}")),
            Unopened::Damaged(why) => StoreError::Corrupt(why),
        })?;
        let store = Store::assemble(
            root,
            log.clone(),
            index.clone(),
            wait,
            false,
            observer.clone(),
            envs,
        );
        store.rebuild_locked(why)?;
        Ok(index)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn log(&self) -> &Log {
        &self.log
    }

    pub fn index(&self) -> &Index {
        &self.index
    }

    /// Compares the index with the log. On the usual path it reads the index's last record
    /// and the trust events; only a log that no longer holds what the index saw is compared
    /// with the index record by record ([`Store::lost_or_other`]).
    fn standing(&self) -> Result<Standing, StoreError> {
        if let Some(other) = self.index.unsynced_from_other_boot()? {
            // Pages written in that boot may be lost: the index cannot vouch for anything,
            // and the log's own rule (a torn final frame was never acknowledged) decides.
            return Ok(Standing::Rebuild(index::unsynced::reason(&other)));
        }
        let (meta, format, origin, trust_events) = {
            let r = self.index.read()?;
            // The format first: an index in another one may not read as this one.
            let format = r.format()?;
            if format != 0 && format != index::FORMAT {
                return Ok(other_format(format));
            }
            let (Ok(origin), Ok(trust_events)) = (r.origin(), r.trust_events()) else {
                return Ok(Standing::Rebuild(
                    "the index's record of which log it indexes cannot be read".into(),
                ));
            };
            (r.meta()?, format, origin, trust_events)
        };
        let segments = self.log.segments()?;
        if meta.head.records == 0 {
            let any = segments
                .iter()
                .any(|&s| self.log.segment_len(s).map(|l| l > 0).unwrap_or(true));
            return Ok(if any {
                Standing::Behind
            } else {
                Standing::Current
            });
        }
        // Format 0 (none written) is only an index that never held a record.
        if format != index::FORMAT {
            return Ok(other_format(format));
        }
        let Some(last) = meta.last else {
            return Ok(Standing::Rebuild("the index names no last record".into()));
        };
        if !self.log_holds_head(&meta, last, &segments)? {
            return self.lost_or_other(&meta, origin);
        }
        // The log holds what the index saw. An index from before the index recorded which
        // log it indexes is rebuilt once (a read-only store is read as it is).
        let (Some(_), Some(events)) = (origin, trust_events) else {
            if self.read_only {
                return Ok(Standing::Current);
            }
            return Ok(Standing::Rebuild(
                "the index does not record which log it indexes (an earlier elench wrote it)"
                    .into(),
            ));
        };
        // The trust state every writer verifies against rests on these records: damage in
        // one stops every command, as it stops `fsck`.
        for (pos, chain) in events {
            match self.log.read_at(pos) {
                Ok(r) if r.chain == chain && r.kind != Kind::Envelope => continue,
                Ok(_) | Err(log::LogError::Damaged(_)) => {
                    return self.trust_event_failed(&meta, pos)
                }
                Err(e) => return Err(e.into()),
            }
        }
        let len = self.log.segment_len(meta.head.segment)?;
        if len > meta.head.end || segments.iter().any(|&s| s > meta.head.segment) {
            return Ok(Standing::Behind);
        }
        Ok(Standing::Current)
    }

    /// A trust event the index names did not read back as the index saw it. The log is read
    /// up to the index's head to tell damage to the log (`STORE_CORRUPT`, where the reading
    /// stopped) from an index whose record of its trust events is wrong (rebuilt).
    fn trust_event_failed(&self, meta: &Meta, at: Position) -> Result<Standing, StoreError> {
        let (head, tail) = self
            .log
            .scan(Head::EMPTY, |rec| Ok(rec.pos.n + 1 < meta.head.records))?;
        match tail {
            Tail::Damaged(d) => Ok(Standing::Lost(format!(
                "{d}; the trust state every new envelope is verified against rests on the \
                 records up to record {} (a trust event), so nothing can be added; \
                 `elench fsck --repair` moves the damaged part aside",
                at.n
            ))),
            _ if head.records < meta.head.records => self.lost_or_other(meta, None),
            _ => Ok(Standing::Rebuild(format!(
                "the index names a trust event at record {} that the log does not hold there",
                at.n
            ))),
        }
    }

    /// Why the log no longer holds records the index saw (acknowledged records lost or
    /// damaged, or a damaged trust event), if that is so: what `fsck` reports as damage
    /// even where the log alone would read as ending in an unfinished append.
    pub fn acknowledged_loss(&self) -> Option<String> {
        match self.standing() {
            Ok(Standing::Lost(why)) | Err(StoreError::Corrupt(why)) => Some(why),
            _ => None,
        }
    }

    /// Whether the log still holds the index's head: its segment is as long as the index
    /// saw, and the last record the index applied is there, whole, with the index's chain.
    fn log_holds_head(
        &self,
        meta: &Meta,
        last: Position,
        segments: &[u64],
    ) -> Result<bool, StoreError> {
        if !segments.contains(&meta.head.segment)
            || self.log.segment_len(meta.head.segment)? < meta.head.end
        {
            return Ok(false);
        }
        match self.log.read_at(last) {
            Ok(r) => Ok(r.chain == meta.head.chain),
            Err(log::LogError::Damaged(_)) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// The log does not hold the index's head. If every record the log still has is what the
    /// index saw there, acknowledged records were lost or damaged: `STORE_CORRUPT`, whatever
    /// the log's end looks like (a record cut inside is never taken for a torn tail, which
    /// only an append the index never saw leaves). If the log differs from what the index
    /// saw (another log, or one rewritten before the index's head), the index is rebuilt.
    fn lost_or_other(
        &self,
        meta: &Meta,
        origin: Option<log::Chain>,
    ) -> Result<Standing, StoreError> {
        let r = self.index.read()?;
        let mut envelopes = 0u64;
        let mut differs: Option<String> = None;
        let (head, tail) = self.log.scan(Head::EMPTY, |rec| {
            if rec.pos.n >= meta.head.records {
                return Ok(false);
            }
            let same = if rec.pos.n == 0 && origin.is_some_and(|o| o != rec.chain) {
                false
            } else {
                indexed_as(&r, &rec, envelopes).unwrap_or(false)
            };
            if rec.kind == Kind::Envelope {
                envelopes += 1;
            }
            if !same {
                differs = Some(format!(
                    "the log differs from what the index saw at record {} (the index is of \
                     another log, or of one rewritten since)",
                    rec.pos.n
                ));
            }
            Ok(same)
        })?;
        if let Some(why) = differs {
            return Ok(Standing::Rebuild(why));
        }
        if head.records >= meta.head.records {
            // Every record the index saw is there after all.
            return Ok(Standing::Behind);
        }
        let how = match tail {
            Tail::Clean if head.records == 0 => "the log holds no records".to_owned(),
            Tail::Clean => format!(
                "the log ends after record {} (log segment {} at byte {})",
                head.records.wrapping_sub(1),
                log::segment_name(head.segment),
                head.end
            ),
            Tail::Torn {
                segment, offset, ..
            } => format!(
                "the log ends inside record {} (log segment {} at byte {offset}), which was \
                 acknowledged: it is cut short, not an unfinished append",
                head.records,
                log::segment_name(segment)
            ),
            Tail::Damaged(d) => format!("record {} is damaged: {d}", head.records),
        };
        Ok(Standing::Lost(format!(
            "{how}, but the index has seen {} records: acknowledged records are missing or \
             damaged; `elench fsck --repair` moves the damaged part aside and rebuilds from \
             what is left",
            meta.head.records
        )))
    }

    /// Brings the index level with the log. With `lock` (a writer) always; without, only if
    /// the lock is free (a reader never waits, except for a rebuild).
    fn settle(&self, lock: Option<&WriterLock>) -> Result<(), StoreError> {
        if self.read_only {
            // Read what the last writer committed; nothing can be caught up or rebuilt.
            return match self.standing()? {
                Standing::Rebuild(why) => Err(StoreError::ReadOnlyIndexStale {
                    path: self.root.clone(),
                    why,
                }),
                Standing::Lost(why) => Err(StoreError::Corrupt(why)),
                _ => Ok(()),
            };
        }
        match self.standing()? {
            Standing::Current => Ok(()),
            Standing::Lost(why) => {
                if lock.is_some() {
                    return Err(StoreError::Corrupt(why));
                }
                // A writer may be part-way through changing the log (`fsck --repair` cuts it
                // before it rebuilds the index): judged again once it is done.
                let _l = acquire_lock(&self.root, self.wait)?;
                match self.standing()? {
                    Standing::Lost(why) => Err(StoreError::Corrupt(why)),
                    Standing::Rebuild(why) => self.rebuild_locked(&why),
                    Standing::Behind => self.catch_up_locked(),
                    Standing::Current => Ok(()),
                }
            }
            Standing::Behind => {
                if lock.is_some() {
                    return self.catch_up_locked();
                }
                match try_lock(&self.root)? {
                    Some(_l) => match self.standing()? {
                        Standing::Behind => self.catch_up_locked(),
                        Standing::Lost(why) => Err(StoreError::Corrupt(why)),
                        Standing::Rebuild(why) => self.rebuild_locked(&why),
                        Standing::Current => Ok(()),
                    },
                    // A writer is at work; it will catch up. Read what it committed.
                    None => Ok(()),
                }
            }
            Standing::Rebuild(why) => {
                if lock.is_some() {
                    return self.rebuild_locked(&why);
                }
                let _l = acquire_lock(&self.root, self.wait)?;
                match self.standing()? {
                    Standing::Rebuild(why) => self.rebuild_locked(&why),
                    Standing::Behind => self.catch_up_locked(),
                    Standing::Current => Ok(()),
                    Standing::Lost(why) => Err(StoreError::Corrupt(why)),
                }
            }
        }
    }

    fn catch_up_locked(&self) -> Result<(), StoreError> {
        let from = self.index.read()?.meta()?;
        let listener = self.observer.progress(
            if from.head.records == 0 {
                "rebuilding the index"
            } else {
                "bringing the index up to date"
            },
            None,
        );
        let tail = rebuild::apply_log(
            &self.log,
            &self.index,
            from.head,
            listener.as_deref().map(|l| l as _),
        )?;
        drop(listener);
        let now = self.index.read()?.meta()?.head.records;
        // A long catch-up ends with the index on disk, as a rebuild does.
        if now.saturating_sub(from.head.records) >= SYNC_AFTER {
            self.index.sync()?;
        }
        if from.head.records == 0 && now > 0 {
            self.observer.warn(
                crate::error::Code::IndexRebuilt.as_str(),
                format!("the index was missing or empty; rebuilt it from the log ({now} records)"),
            );
        }
        self.handle_tail(tail)
    }

    /// Rebuilds the index from the whole log. The caller holds the writer lock.
    pub fn rebuild_locked(&self, why: &str) -> Result<(), StoreError> {
        let listener = self.observer.progress("rebuilding the index", None);
        let tail =
            rebuild::rebuild_all(&self.log, &self.index, listener.as_deref().map(|l| l as _))?;
        drop(listener);
        let records = self.index.read()?.meta()?.head.records;
        self.observer.warn(
            crate::error::Code::IndexRebuilt.as_str(),
            format!("{why}; rebuilt the index from the log ({records} records)"),
        );
        self.handle_tail(tail)
    }

    fn handle_tail(&self, tail: Tail) -> Result<(), StoreError> {
        handle_tail_of(&self.root, &self.log, tail, &*self.observer)
    }

    /// Takes the writer lock (waiting up to `--wait`) and brings the index level with the log.
    pub fn lock(&self) -> Result<WriterLock, StoreError> {
        self.refuse_if_read_only()?;
        let lock = acquire_lock(&self.root, self.wait)?;
        self.settle(Some(&lock))?;
        Ok(lock)
    }

    // ---- reading ----

    /// Makes every read of this thread one snapshot of the index until the pin is dropped:
    /// a command that answers from many reads (`status --all`, `gate`, `blast`) answers as
    /// of one state of the log, whatever a writer commits meanwhile.
    pub fn pin(&self) -> Result<index::Pin, StoreError> {
        Ok(self.index.pin()?)
    }

    /// The index contradicts itself (`why`): it is marked damaged, so that the next command
    /// rebuilds it, and this is the error to end with.
    pub fn index_damaged(&self, why: &str) -> StoreError {
        index::fault::mark(&self.index_dir());
        StoreError::IndexDamaged(format!(
            "the index is damaged ({why}); it is a cache of the log: the next command \
             rebuilds it, or run `elench reindex`"
        ))
    }

    /// Number of claims in the log (the next arrival number).
    pub fn count(&self) -> Result<u64, StoreError> {
        Ok(self.index.read()?.meta()?.counts.claims)
    }

    /// The log state `(n, chain_n)` the index reflects, and its counts.
    pub fn meta(&self) -> Result<Meta, StoreError> {
        Ok(self.index.read()?.meta()?)
    }

    pub fn contains(&self, id: &str) -> Result<bool, StoreError> {
        let Some(k) = id_key(id) else {
            return Ok(false);
        };
        Ok(self.index.read()?.has_claim(&k)?)
    }

    /// [`Store::contains`] of each id, read in one transaction.
    pub fn contains_each(&self, ids: &[&str]) -> Result<Vec<bool>, StoreError> {
        let r = self.index.read()?;
        ids.iter()
            .map(|id| match id_key(id) {
                Some(k) => Ok(r.has_claim(&k)?),
                None => Ok(false),
            })
            .collect()
    }

    /// The index entry of a claim (no log read).
    pub fn entry(&self, id: &str) -> Result<Option<ClaimEntry>, StoreError> {
        let Some(k) = id_key(id) else {
            return Ok(None);
        };
        Ok(self.index.read()?.claim(&k)?)
    }

    /// A claim's header, the fields the fold reads, from the index alone.
    pub fn get_fold(&self, id: &str) -> Result<Option<StoredClaim>, StoreError> {
        Ok(self.entry(id)?.map(|e| stored_claim(id, e, ())))
    }

    /// [`Store::get_fold`] of an id the index itself names (a stored claim's target or
    /// premise, a record targeting one): None when the log names it and does not hold it;
    /// an index that does not know the id at all is damaged (`INDEX_DAMAGED`).
    pub fn get_fold_named(&self, id: &str) -> Result<Option<StoredClaim>, StoreError> {
        let Some(k) = id_key(id) else {
            return Ok(None);
        };
        let entry = self.index.read()?.named_claim(&k)?;
        Ok(entry.map(|e| stored_claim(id, e, ())))
    }

    /// A claim with everything the fold, scopes and anchors need, without reading the log:
    /// its header and the index's [`Summary`] of its body. For the claim as signed, use
    /// [`Store::get`].
    pub fn get_light(&self, id: &str) -> Result<Option<StoredClaim<Summary>>, StoreError> {
        match self.entry(id)? {
            None => Ok(None),
            Some(e) => {
                let body = e.summary_body().map_err(|why| {
                    StoreError::Corrupt(format!("index summary of {id} is unreadable: {why}"))
                })?;
                Ok(Some(stored_claim(id, e, body)))
            }
        }
    }

    /// A claim in full: its body is read (and checked) from the log.
    pub fn get(&self, id: &str) -> Result<Option<StoredClaim<Body>>, StoreError> {
        let Some(entry) = self.entry(id)? else {
            return Ok(None);
        };
        let record = self.log.read_at(entry.first)?;
        let body = claim_body(&record.payload).map_err(|why| {
            StoreError::Corrupt(format!(
                "record {} (claim {id}) is unreadable: {why}",
                entry.first.n
            ))
        })?;
        Ok(Some(stored_claim(id, entry, body)))
    }

    /// The claim's first envelope, in canonical form.
    pub fn envelope(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let Some(entry) = self.entry(id)? else {
            return Ok(None);
        };
        Ok(Some(self.log.read_at(entry.first)?.payload))
    }

    /// Whether the claim `id` is stored with the envelope whose digest (SHA-256 of its
    /// canonical bytes) is `digest`.
    pub fn holds_envelope(&self, id: &str, digest: &[u8; 32]) -> Result<bool, StoreError> {
        let Some(k) = id_key(id) else {
            return Ok(false);
        };
        Ok(self.index.read()?.holds_envelope(&k, digest)?)
    }

    /// Number of envelopes in the log.
    pub fn envelope_count(&self) -> Result<u64, StoreError> {
        Ok(self.index.read()?.meta()?.counts.envelopes)
    }

    /// [`Store::holds_envelope`] with the digest in hex.
    pub fn has_envelope(&self, id: &str, digest_hex: &str) -> Result<bool, StoreError> {
        let mut d = [0u8; 32];
        if hex::decode_to_slice(digest_hex, &mut d).is_err() {
            return Ok(false);
        }
        self.holds_envelope(id, &d)
    }

    /// Envelopes in log order from envelope number `from`, at most `limit`.
    pub fn envelope_records(
        &self,
        from: u64,
        limit: usize,
    ) -> Result<Vec<EnvelopeRecord>, StoreError> {
        let r = self.index.read()?;
        let mut out = Vec::new();
        for e in r.envelope_order(from, limit)? {
            let bytes = self.log.read_at(e.pos)?.payload;
            out.push(EnvelopeRecord {
                seq: e.number,
                claim_id: id_text(&e.claim),
                digest: hex::encode(record::envelope_digest(&bytes)),
                bytes,
            });
        }
        Ok(out)
    }

    /// Ids of the records whose `target` contains `id`.
    pub fn records_targeting(&self, id: &str) -> Result<Vec<String>, StoreError> {
        let Some(k) = id_key(id) else {
            return Ok(Vec::new());
        };
        Ok(self
            .index
            .read()?
            .records_targeting(&k)?
            .iter()
            .map(|k| id_text(k))
            .collect())
    }

    /// Ids of the claims whose `dependsOn` contains `id`.
    pub fn dependents(&self, id: &str) -> Result<Vec<String>, StoreError> {
        let Some(k) = id_key(id) else {
            return Ok(Vec::new());
        };
        Ok(self
            .index
            .read()?
            .dependents(&k)?
            .iter()
            .map(|k| id_text(k))
            .collect())
    }

    /// Claim ids in arrival order, starting at arrival number `from`, at most `limit`.
    pub fn arrivals(&self, from: u64, limit: usize) -> Result<Vec<(u64, String)>, StoreError> {
        Ok(self
            .index
            .read()?
            .arrivals(from, limit)?
            .into_iter()
            .map(|(n, k)| (n, id_text(&k)))
            .collect())
    }

    /// Ids of every stored claim (in id order).
    pub fn claim_ids(&self) -> Result<Vec<String>, StoreError> {
        let r = self.index.read()?;
        let n = r.meta()?.counts.claims;
        let mut ids: Vec<String> = r
            .arrivals(0, n as usize)?
            .into_iter()
            .map(|(_, k)| id_text(&k))
            .collect();
        ids.sort();
        Ok(ids)
    }

    /// Claim ids starting with `prefix` (`cl_` and at least one hex digit), at most `limit`.
    pub fn ids_with_prefix(&self, prefix: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        let hex_part = prefix
            .strip_prefix(crate::claim::id::ID_PREFIX)
            .unwrap_or(prefix);
        if !hex_part
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        {
            return Ok(Vec::new());
        }
        Ok(self
            .index
            .read()?
            .ids_with_prefix(hex_part, limit)?
            .iter()
            .map(|k| id_text(k))
            .collect())
    }

    // ---- trusted keys ----

    pub fn get_key(&self, keyid: &str) -> Result<Option<StoredKey>, StoreError> {
        Ok(self.index.read()?.key(keyid)?.map(stored_key))
    }

    /// Every trusted key, retired ones included, in keyid order.
    pub fn list_keys(&self) -> Result<Vec<StoredKey>, StoreError> {
        Ok(self
            .index
            .read()?
            .keys()?
            .into_iter()
            .map(stored_key)
            .collect())
    }

    /// The current trust state (retired keys kept, marked).
    pub fn trust_set(&self) -> Result<TrustSet, StoreError> {
        let r = self.index.read()?;
        let generation = r.meta()?.counts.trust_events;
        let set = trust_set_of(r.keys()?)?;
        self.trust_seen.store(generation, Ordering::Relaxed);
        Ok(set)
    }

    /// The current trust state and its generation (the number of trust events).
    pub fn trust_snapshot(&self) -> Result<(TrustSet, u64), StoreError> {
        let r = self.index.read()?;
        let generation = r.meta()?.counts.trust_events;
        Ok((trust_set_of(r.keys()?)?, generation))
    }

    // ---- writing ----

    /// Appends one accepted envelope (verified against [`Store::trust_set`]) durably.
    pub fn add(&self, accepted: &Accepted, envelope: &[u8]) -> Result<Effect, StoreError> {
        let canonical = record::canonical_envelope(envelope).map_err(StoreError::Corrupt)?;
        let staged = Staged {
            digest: record::envelope_digest(&canonical),
            canonical,
            accepted: accepted.clone(),
            // Unknown generation: re-verified under the lock.
            trust_generation: self.trust_seen.load(Ordering::Relaxed),
        };
        let lock = self.lock()?;
        let mut out = self.commit_group_locked(&lock, vec![staged])?;
        match out.pop() {
            Some(Ok(effect)) => Ok(effect),
            Some(Err(r)) => Err(StoreError::Rejected(r)),
            None => Err(StoreError::Corrupt("an append returned nothing".into())),
        }
    }

    /// Makes the index's writes durable, so that a machine that stops later does not make the
    /// next command rebuild it (see `index::unsynced`). Worth one fsync after a long write.
    pub fn sync_index(&self) -> Result<(), StoreError> {
        if self.read_only {
            return Ok(());
        }
        Ok(self.index.sync()?)
    }

    /// Appends a group of verified envelopes under the writer lock: one fsync for the group,
    /// then one index transaction. An envelope verified under an older trust state is
    /// verified again first. Returns each envelope's effect or rejection, in order.
    pub fn commit_group(
        &self,
        group: Vec<Staged>,
    ) -> Result<Vec<Result<Effect, Rejection>>, StoreError> {
        let lock = self.lock()?;
        self.commit_group_locked(&lock, group)
    }

    fn commit_group_locked(
        &self,
        _lock: &WriterLock,
        group: Vec<Staged>,
    ) -> Result<Vec<Result<Effect, Rejection>>, StoreError> {
        let meta = self.index.read()?.meta()?;
        let mut trust: Option<TrustSet> = None;
        let mut outcomes: Vec<Result<Effect, Rejection>> = Vec::with_capacity(group.len());
        let mut appender = Appender::new(self.log.clone(), meta.head);
        appender.reserve(group.len(), group.iter().map(|s| s.canonical.len()).sum());
        let mut to_apply: Vec<(log::Placed, Staged)> = Vec::with_capacity(group.len());
        let mut seen_now: rustc_hash::FxHashSet<[u8; 32]> = Default::default();
        let mut new_claims: rustc_hash::FxHashSet<String> = Default::default();
        {
            let r = self.index.read()?;
            for staged in group {
                let stored = match id_key(&staged.accepted.claim.id) {
                    Some(k) => r.claim(&k)?,
                    None => None,
                };
                if seen_now.contains(&staged.digest)
                    || stored
                        .as_ref()
                        .is_some_and(|e| e.envelopes.iter().any(|x| x.digest == staged.digest))
                {
                    outcomes.push(Ok(Effect::Noop));
                    continue;
                }
                let mut staged = staged;
                if staged.trust_generation != meta.counts.trust_events {
                    if trust.is_none() {
                        trust = Some(trust_set_of(r.keys()?)?);
                    }
                    let t = trust
                        .as_ref()
                        .ok_or_else(|| StoreError::Corrupt("trust state vanished".into()))?;
                    match crate::ingest::verify_envelope(&staged.canonical, t) {
                        Ok(a) => staged.accepted = a,
                        Err(rej) => {
                            outcomes.push(Err(rej));
                            continue;
                        }
                    }
                }
                let id = staged.accepted.claim.id.clone();
                let exists = new_claims.contains(&id) || stored.is_some();
                outcomes.push(Ok(if exists {
                    Effect::Merged
                } else {
                    Effect::Created
                }));
                new_claims.insert(id);
                seen_now.insert(staged.digest);
                let placed = appender.stage(Kind::Envelope, &staged.canonical);
                to_apply.push((placed, staged));
            }
        }
        if to_apply.is_empty() {
            return Ok(outcomes);
        }
        appender.commit()?;
        // The group is durable from here; the index follows, in transactions of at most
        // `index_transaction` records: LMDB reuses the pages a commit frees only two commits
        // later, so one transaction for a large group would grow the index file.
        for part in to_apply.chunks(index_transaction(meta.counts.claims)) {
            let mut w = self.index.write()?;
            for (placed, staged) in part {
                w.apply_envelope(
                    placed.pos,
                    placed.chain,
                    placed.frame_len,
                    &staged.digest,
                    &staged.accepted,
                )?;
            }
            w.commit()?;
        }
        Ok(outcomes)
    }

    fn append_event_locked(&self, kind: Kind, payload: Vec<u8>) -> Result<(), StoreError> {
        let meta = self.index.read()?.meta()?;
        let mut appender = Appender::new(self.log.clone(), meta.head);
        let placed = appender.stage(kind, &payload);
        appender.commit()?;
        let (pos, chain, frame_len) = (placed.pos, placed.chain, placed.frame_len);
        let mut w = self.index.write()?;
        match kind {
            Kind::KeyAdd => {
                let e: record::KeyAdd =
                    record::decode_event(&payload).map_err(StoreError::Corrupt)?;
                w.apply_key_add(pos, chain, frame_len, &e)?;
            }
            Kind::KeyRetire => {
                let e: record::KeyRetire =
                    record::decode_event(&payload).map_err(StoreError::Corrupt)?;
                w.apply_key_retire(pos, chain, frame_len, &e.keyid)?;
            }
            Kind::Envelope => {
                return Err(StoreError::Corrupt(
                    "an envelope is not a trust event".into(),
                ))
            }
        }
        w.commit()?;
        Ok(())
    }

    /// Adds a trusted key. Returns false if that keyid is already trusted (nothing changes).
    pub fn add_key(&self, key: &TrustedKey) -> Result<bool, StoreError> {
        let lock = self.lock()?;
        if self.index.read()?.key(&key.keyid)?.is_some() {
            return Ok(false);
        }
        let event = record::KeyAdd {
            keyid: key.keyid.clone(),
            role: key.role,
            name: key.name.clone(),
            public_key: hex::encode(key.key.as_bytes()),
        };
        self.append_event_locked(Kind::KeyAdd, record::encode_event(&event))?;
        drop(lock);
        Ok(true)
    }

    /// Retires a key. Returns None for an unknown keyid, else whether it changed.
    pub fn retire_key(&self, keyid: &str) -> Result<Option<bool>, StoreError> {
        let lock = self.lock()?;
        let Some(key) = self.index.read()?.key(keyid)? else {
            return Ok(None);
        };
        if key.retired_at.is_some() {
            return Ok(Some(false));
        }
        let event = record::KeyRetire {
            keyid: keyid.to_owned(),
        };
        self.append_event_locked(Kind::KeyRetire, record::encode_event(&event))?;
        drop(lock);
        Ok(Some(true))
    }

    /// `elench reindex`: rebuild the index from the log, under the writer lock.
    /// `progress` hears how many log records are read and applied so far.
    /// The index is rebuilt into fresh files (never reading the old ones, which may be
    /// damaged), so the store is consumed: open it again to read the new index.
    pub fn reindex(self, progress: Option<&(dyn Fn(u64) + Sync)>) -> Result<Meta, StoreError> {
        let observer = self.observer.clone();
        let envs = self.envs.clone();
        let (root, wait) = self.close();
        Store::reindex_at_with(&root, wait, progress, observer, &envs)
    }

    /// [`Store::reindex`] of the store at `root`, without opening its index at all (a damaged
    /// one can fault when read).
    pub fn reindex_at(
        root: &Path,
        wait: Duration,
        progress: Option<&(dyn Fn(u64) + Sync)>,
    ) -> Result<Meta, StoreError> {
        Store::reindex_at_with(root, wait, progress, silent(), &Environments::new())
    }

    /// [`Store::reindex_at`], with `observer` hearing the store's warnings, through `envs`.
    pub fn reindex_at_with(
        root: &Path,
        wait: Duration,
        progress: Option<&(dyn Fn(u64) + Sync)>,
        observer: Observed,
        envs: &Environments,
    ) -> Result<Meta, StoreError> {
        let log = Store::unopened(root, wait, &observer, envs)?;
        let _lock = acquire_lock(root, wait)?;
        rebuild_aside_locked(root, &log, progress, &*observer, envs)
    }

    /// Lets go of this store's index (so that its files can be replaced) and says where the
    /// store is.
    fn close(self) -> (PathBuf, Duration) {
        self.envs.forget(&self.index_dir());
        (self.root.clone(), self.wait)
    }

    /// The log of the store at `root`, checked (format, layout migrated, writable) without
    /// opening the index.
    fn unopened(
        root: &Path,
        wait: Duration,
        observer: &Observed,
        envs: &Environments,
    ) -> Result<Log, StoreError> {
        Store::check(root)?;
        if read_format_file(root)? < current_version() {
            let (root, _) = Store::open_with(root, wait, observer.clone(), envs)?.close();
            return Ok(Log::new(root.join(LOG_DIR)));
        }
        if is_read_only(root) {
            return Err(StoreError::ReadOnly(root.to_path_buf()));
        }
        Ok(Log::new(root.join(LOG_DIR)))
    }

    /// `fsck --repair`: moves everything from the first damaged record on into
    /// `quarantine/<time>/` and rebuilds the index from what is left, until the log reads
    /// whole and every record of it applies: a frame that is whole but does not verify (or
    /// repeats an envelope) is damage too, and so is a segment that is missing, misnumbered
    /// or empty before the end. Nothing is deleted. Returns the first damage found (None
    /// when the log was sound or only ended in an unfinished append) and the files moved.
    /// The index is rebuilt into fresh files, so the store is consumed: open it again.
    pub fn repair(self) -> Result<Repaired, StoreError> {
        let observer = self.observer.clone();
        let envs = self.envs.clone();
        let (root, wait) = self.close();
        Store::repair_at_with(&root, wait, observer, &envs)
    }

    /// [`Store::repair`] of the store at `root`. Its index is read only to learn what it
    /// vouches for, and not at all when a command found it damaged (`index::fault`): the
    /// rebuilt index is written into fresh files.
    pub fn repair_at(root: &Path, wait: Duration) -> Result<Repaired, StoreError> {
        Store::repair_at_with(root, wait, silent(), &Environments::new())
    }

    /// [`Store::repair_at`], with `observer` hearing the store's warnings, through `envs`.
    pub fn repair_at_with(
        root: &Path,
        wait: Duration,
        observer: Observed,
        envs: &Environments,
    ) -> Result<Repaired, StoreError> {
        let log = Store::unopened(root, wait, &observer, envs)?;
        // What the index vouches for, before it is rebuilt: a log cut inside a record the
        // index saw lost an acknowledged record, which is damage, not an unfinished append.
        // Only a log that ends in a torn record needs the answer, so only then is the old
        // index read (before the writer lock is taken here: opening may take it itself).
        let (_, tail) = log.scan(Head::EMPTY, |_| Ok(true))?;
        let acknowledged_loss = match tail {
            Tail::Torn { .. } if !index::fault::marked(&root.join(INDEX_DIR)) => {
                match Store::open_unsettled_with(root, wait, observer.clone(), envs) {
                    Ok(store) => {
                        let why = store.acknowledged_loss();
                        store.close();
                        why
                    }
                    Err(_) => None,
                }
            }
            _ => None,
        };
        let _lock = acquire_lock(root, wait)?;
        let dest = fresh_quarantine(root);
        let mut out = Repaired {
            damage: None,
            moved: Vec::new(),
            quarantine: dest.clone(),
        };
        let mut last_cut: Option<(u64, u64)> = None;
        loop {
            let (_, tail) = log.scan(Head::EMPTY, |_| Ok(true))?;
            let (cut, is_damage) = match tail {
                Tail::Clean => match rebuild_aside_locked(root, &log, None, &*observer, envs) {
                    Ok(_) => break,
                    Err(StoreError::Damaged(d)) => (d, true),
                    Err(e) => return Err(e),
                },
                Tail::Torn {
                    segment,
                    offset,
                    bytes,
                } => (
                    Damage {
                        segment,
                        offset,
                        reason: match &acknowledged_loss {
                            Some(why) => why.clone(),
                            None => format!("an unfinished final record ({bytes} bytes)"),
                        },
                    },
                    acknowledged_loss.is_some(),
                ),
                Tail::Damaged(d) => (d, true),
            };
            // Every cut moves bytes out of the log, so this ends; the same cut twice would
            // mean the move did nothing.
            if last_cut == Some((cut.segment, cut.offset)) {
                return Err(StoreError::Corrupt(format!(
                    "{cut}: moving it aside did not remove it"
                )));
            }
            last_cut = Some((cut.segment, cut.offset));
            out.moved
                .extend(log.quarantine_from(cut.segment, cut.offset, &dest)?);
            if out.damage.is_none() && is_damage {
                out.damage = Some(cut);
            }
        }
        Ok(out)
    }

    pub fn index_dir(&self) -> PathBuf {
        self.root.join(INDEX_DIR)
    }
}

/// What `fsck --repair` did.
#[derive(Debug)]
pub struct Repaired {
    /// The first damage found (None when the log was sound or only ended in an unfinished
    /// append, which was moved aside too).
    pub damage: Option<Damage>,
    /// The files written into (or moved to) the quarantine folder.
    pub moved: Vec<String>,
    /// `quarantine/<time>/`.
    pub quarantine: PathBuf,
}

fn handle_tail_of(
    root: &Path,
    log: &Log,
    tail: Tail,
    observer: &dyn Observer,
) -> Result<(), StoreError> {
    match tail {
        Tail::Clean => Ok(()),
        Tail::Torn {
            segment,
            offset,
            bytes,
        } => {
            // Cut off, but kept: nothing elench does deletes bytes of the log.
            let dest = fresh_quarantine(root);
            log.quarantine_from(segment, offset, &dest)?;
            observer.warn(
                crate::error::Code::TornTail.as_str(),
                format!(
                    "the log ended in an incomplete record ({bytes} bytes at byte {offset} of \
                     segment {}), left by an interrupted append that was never acknowledged; \
                     it was cut off and kept in {}",
                    log::segment_name(segment),
                    dest.display()
                ),
            );
            Ok(())
        }
        Tail::Damaged(d) => Err(StoreError::Corrupt(format!(
            "{d}; `elench fsck --repair` moves the damaged part aside"
        ))),
    }
}

/// Rebuilds the index from the log into a fresh folder beside it and puts that in its
/// place; the old files are removed unread. The caller holds the writer lock, and no index
/// of this store is open in the process.
fn rebuild_aside_locked(
    root: &Path,
    log: &Log,
    progress: Option<&(dyn Fn(u64) + Sync)>,
    observer: &dyn Observer,
    envs: &Environments,
) -> Result<Meta, StoreError> {
    let index_dir = root.join(INDEX_DIR);
    let fresh = root.join(format!("index.new-{}-{}", unix_time(), std::process::id()));
    let _ = std::fs::remove_dir_all(&fresh);
    let built = (|| {
        let index = Index::open(envs, &fresh)?;
        let tail = rebuild::rebuild_all(log, &index, progress);
        let meta = index.read().and_then(|r| r.meta());
        envs.forget(&fresh);
        drop(index);
        handle_tail_of(root, log, tail?, observer)?;
        Ok::<Meta, StoreError>(meta?)
    })();
    // A rebuild that stopped (damage `fsck --repair` moves aside, say) leaves no half-built
    // folder in the store: it holds nothing the log does not.
    let meta = match built {
        Ok(meta) => meta,
        Err(e) => {
            envs.forget(&fresh);
            let _ = std::fs::remove_dir_all(&fresh);
            return Err(e);
        }
    };
    envs.forget(&index_dir);
    let aside = root.join(format!(
        "index.replaced-{}-{}",
        unix_time(),
        std::process::id()
    ));
    let moved = match std::fs::rename(&index_dir, &aside) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(source) => {
            return Err(StoreError::Io {
                path: index_dir,
                source,
            })
        }
    };
    std::fs::rename(&fresh, &index_dir).map_err(|source| StoreError::Io {
        path: fresh.clone(),
        source,
    })?;
    crate::atomic_file::sync_dir(root).map_err(|source| StoreError::Io {
        path: root.to_path_buf(),
        source,
    })?;
    if moved {
        let _ = std::fs::remove_dir_all(&aside).or_else(|_| std::fs::remove_file(&aside));
    }
    Ok(meta)
}

/// Whether nobody can write the store: its LOCK file cannot be opened for writing because
/// the file system is read-only or permissions forbid it.
fn is_read_only(root: &Path) -> bool {
    let path = root.join(LOCK_FILE);
    match std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
    {
        Ok(_) => false,
        Err(e) => matches!(
            e.kind(),
            std::io::ErrorKind::ReadOnlyFilesystem | std::io::ErrorKind::PermissionDenied
        ),
    }
}

/// An index in a format this elench does not read is rebuilt, never read.
fn other_format(format: u32) -> Standing {
    Standing::Rebuild(format!(
        "the index is in format {format}, and this elench reads format {}",
        index::FORMAT
    ))
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

/// Why the index could not be opened.
enum Unopened {
    /// It is open already through other environments of this process (never damage: the
    /// index is kept).
    InUse(String),
    /// A shortage of memory or address space (never damage: the index is kept).
    Resource(String),
    /// Any other failure, a panic inside LMDB's wrapper included: a reason to rebuild.
    Damaged(String),
}

/// Opens the index and reads its meta, saying why not ([`Unopened`]).
fn open_index(envs: &Environments, dir: &Path) -> Result<Index, Unopened> {
    let why = |e: index::IndexError| {
        if let index::IndexError::InUse(_) = e {
            Unopened::InUse(e.to_string())
        } else if e.is_resource() {
            Unopened::Resource(format!(
                "{e}; the index is not damaged: give elench more memory or address space"
            ))
        } else {
            Unopened::Damaged(e.to_string())
        }
    };
    // A panic leaves the registry as it was: nothing is inserted before LMDB opened.
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| Index::open(envs, dir))) {
        // The meta entry of an index in another format may not read as this one's: such an
        // index opens, and is rebuilt for its format.
        Ok(Ok(i)) => match i.read().and_then(|r| match r.format()? {
            index::FORMAT => r.meta().map(drop),
            _ => Ok(()),
        }) {
            Ok(()) => Ok(i),
            Err(e) => Err(why(e)),
        },
        Ok(Err(e)) => Err(why(e)),
        Err(_) => Err(Unopened::Damaged("opening it panicked".into())),
    }
}

fn stored_key(k: KeyEntry) -> StoredKey {
    StoredKey {
        keyid: k.keyid,
        role: k.role,
        name: k.name,
        public_key: hex::encode(k.public_key),
        retired: k.retired_at.is_some(),
    }
}

/// The trust set of the given key states.
pub fn trust_set_of(keys: Vec<KeyEntry>) -> Result<TrustSet, StoreError> {
    let mut out = Vec::with_capacity(keys.len());
    for k in keys {
        let vk = VerifyingKey::from_bytes(&k.public_key)
            .map_err(|e| StoreError::Corrupt(format!("key {}: {e}", k.keyid)))?;
        out.push(TrustedKey {
            keyid: k.keyid,
            role: k.role,
            name: k.name,
            key: vk,
            retired: k.retired_at.is_some(),
        });
    }
    Ok(TrustSet::new(out))
}

fn stored_claim<B>(id: &str, e: ClaimEntry, body: B) -> StoredClaim<B> {
    StoredClaim {
        claim: Claim {
            id: id.to_owned(),
            kind: e.kind,
            target: e.target.iter().map(|k| id_text(k)).collect(),
            depends_on: e.depends_on.iter().map(|k| id_text(k)).collect(),
            origin: e.origin,
            producer: e.producer,
            anchor_tree: e.anchor_tree,
            timestamp: e.timestamp,
        },
        body,
        signers: e.signers,
        seq: e.seq,
    }
}

/// The claim (the Statement's predicate) inside a stored canonical envelope.
fn claim_body(envelope: &[u8]) -> Result<Body, String> {
    let env = crate::envelope::Envelope::parse(envelope).map_err(|r| r.message)?;
    let statement = crate::envelope::Statement::parse(&env.payload).map_err(|r| r.message)?;
    Ok(Body::new(statement.predicate))
}

/// Whether the index applied `rec` (the log's record `rec.pos.n`, whose envelopes before it
/// number `envelopes`) as it is: the same envelope at the same place, or the same trust event
/// at the same record number.
fn indexed_as(
    r: &index::Reader<'_>,
    rec: &log::Record,
    envelopes: u64,
) -> Result<bool, StoreError> {
    Ok(match rec.kind {
        Kind::Envelope => {
            let Some(e) = r.envelope_order(envelopes, 1)?.pop() else {
                return Ok(false);
            };
            e.number == envelopes
                && e.pos == rec.pos
                && r.holds_envelope(&e.claim, &record::envelope_digest(&rec.payload))?
        }
        Kind::KeyAdd => {
            let Ok(event) = record::decode_event::<record::KeyAdd>(&rec.payload) else {
                return Ok(false);
            };
            r.key(&event.keyid)?.is_some_and(|k| {
                k.added_at == rec.pos.n
                    && k.role == event.role
                    && k.name == event.name
                    && hex::encode(k.public_key) == event.public_key
            })
        }
        Kind::KeyRetire => {
            let Ok(event) = record::decode_event::<record::KeyRetire>(&rec.payload) else {
                return Ok(false);
            };
            r.key(&event.keyid)?
                .is_some_and(|k| k.retired_at.is_some_and(|at| at <= rec.pos.n))
        }
    })
}
