//! Opening a store: its FORMAT, the layout migration, the index opened (or rebuilt into
//! fresh files) and brought level with the log; the writer lock.

use super::index::{self, Index};
use super::log::{self, Kind, Log};
use super::rebuild;
use super::{
    acquire_lock, current_version, fresh_quarantine, io_err, migrate, read_format_file, record,
    try_lock, unix_time, write_format_file, Environments, Head, Meta, Observer, Options, Position,
    Store, StoreError, Tail, WriterLock, FORMAT_FILE, INDEX_DIR, LOCK_FILE, LOG_DIR, SYNC_AFTER,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;

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
    /// Creates a store at `root` (or opens the one already there), as `options` say. Returns
    /// whether it was new.
    pub fn init(root: &Path, options: &Options) -> Result<(Store, bool), StoreError> {
        if root.join(FORMAT_FILE).is_file() {
            return Ok((Store::open(root, options)?, false));
        }
        std::fs::create_dir_all(root.join(LOG_DIR)).map_err(io_err(root))?;
        let store = Store::open_parts(root, options)?;
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
    /// or an older layout migrated (up to `options.wait`). `options.observer` hears the
    /// store's warnings (a torn tail cut, an index rebuilt) and the progress of a rebuild, on
    /// opening and after; its index is opened through `options.envs`: a second store of the
    /// same folder opened while this one lives must share them.
    pub fn open(root: &Path, options: &Options) -> Result<Store, StoreError> {
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
            let lock = acquire_lock(root, options.wait)?;
            migrate::migrate(root, found, &options.envs)?;
            drop(lock);
        }
        let store = Store::open_parts(root, options)?;
        match store.settle(None) {
            Ok(()) => Ok(store),
            // Damage found on the way is rebuilt into fresh files, never read again.
            Err(StoreError::IndexDamaged(_)) if !store.read_only => {
                drop(store);
                let index_dir = root.join(INDEX_DIR);
                options.envs.forget(&index_dir);
                let _lock = acquire_lock(root, options.wait)?;
                let log = Log::new(root.join(LOG_DIR));
                let why = "the index was found damaged when it was opened";
                let index = Store::replace_index_locked(root, &log, why, options)?;
                let store = Store::assemble(root, log, index, false, options);
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
    pub fn repair_format(root: &Path, options: &Options) -> Result<bool, StoreError> {
        let found = read_format_file(root)?;
        if found >= current_version()
            || root.join("db").is_dir()
            || migrate::trust_folder_waits(root)
        {
            return Ok(false);
        }
        let _lock = acquire_lock(root, options.wait)?;
        write_format_file(root)?;
        Ok(true)
    }

    /// Opens a store without bringing the index level with the log (for `fsck`, which
    /// reports what it finds instead).
    pub fn open_unsettled(root: &Path, options: &Options) -> Result<Store, StoreError> {
        Store::check(root)?;
        let found = read_format_file(root)?;
        if found < current_version() {
            return Store::open(root, options);
        }
        if let Some(why) = migrate::disagreement(root, found) {
            return Err(StoreError::Corrupt(why));
        }
        Store::open_parts(root, options)
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
        acquire_lock(&self.root, self.options.wait)
    }

    fn assemble(root: &Path, log: Log, index: Index, read_only: bool, options: &Options) -> Store {
        Store {
            root: root.to_path_buf(),
            log,
            index,
            trust_seen: AtomicU64::new(u64::MAX),
            frames: Default::default(),
            read_only,
            options: options.clone(),
            derived: std::sync::Mutex::new(None),
        }
    }

    /// What the caller kept with [`Store::keep_derived`] for this opening, if it is a `T`:
    /// a value derived from the store's trust records (the team's trust state), read once per
    /// opening instead of once per use.
    pub fn derived<T: std::any::Any + Send + Sync>(&self) -> Option<std::sync::Arc<T>> {
        let kept = self.derived.lock().ok()?.clone()?;
        kept.downcast::<T>().ok()
    }

    /// Keeps `value` for [`Store::derived`] (replacing what was kept).
    pub fn keep_derived<T: std::any::Any + Send + Sync>(&self, value: std::sync::Arc<T>) {
        if let Ok(mut slot) = self.derived.lock() {
            *slot = Some(value);
        }
    }

    /// Forgets what [`Store::keep_derived`] kept: the records it was derived from changed.
    pub fn forget_derived(&self) {
        if let Ok(mut slot) = self.derived.lock() {
            *slot = None;
        }
    }

    /// Who hears this store's warnings and progress.
    pub fn observer(&self) -> &dyn Observer {
        &*self.options.observer
    }

    fn open_parts(root: &Path, options: &Options) -> Result<Store, StoreError> {
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
            let index = Index::open_read_only(&options.envs, &index_dir).map_err(|e| {
                StoreError::Invalid(
                    root.to_path_buf(),
                    format!("the store is read-only and its index cannot be read ({e})"),
                )
            })?;
            return Ok(Store::assemble(root, log, index, true, options));
        }
        let index = Store::writable_index(root, &log, options)?;
        Ok(Store::assemble(root, log, index, false, options))
    }

    /// The index of a store that can be written, opened; rebuilt into fresh files first when
    /// it was found damaged, may have lost pages with an earlier boot, or cannot be opened.
    fn writable_index(root: &Path, log: &Log, options: &Options) -> Result<Index, StoreError> {
        let (wait, envs) = (options.wait, &options.envs);
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
                    "an earlier command found the index damaged",
                    options,
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
                return Store::replace_index_locked(root, log, &why, options);
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
                        &format!("the index could not be opened ({why})"),
                        options,
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
        why: &str,
        options: &Options,
    ) -> Result<Index, StoreError> {
        let envs = &options.envs;
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
        let store = Store::assemble(root, log.clone(), index.clone(), false, options);
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
                let _l = acquire_lock(&self.root, self.options.wait)?;
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
                let _l = acquire_lock(&self.root, self.options.wait)?;
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
        let listener = self.options.observer.progress(
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
            self.options.observer.warn(
                crate::error::Code::IndexRebuilt.as_str(),
                format!("the index was missing or empty; rebuilt it from the log ({now} records)"),
            );
        }
        self.handle_tail(tail)
    }

    /// Rebuilds the index from the whole log. The caller holds the writer lock.
    pub fn rebuild_locked(&self, why: &str) -> Result<(), StoreError> {
        let listener = self.options.observer.progress("rebuilding the index", None);
        let tail =
            rebuild::rebuild_all(&self.log, &self.index, listener.as_deref().map(|l| l as _))?;
        drop(listener);
        let records = self.index.read()?.meta()?.head.records;
        self.options.observer.warn(
            crate::error::Code::IndexRebuilt.as_str(),
            format!("{why}; rebuilt the index from the log ({records} records)"),
        );
        self.handle_tail(tail)
    }

    fn handle_tail(&self, tail: Tail) -> Result<(), StoreError> {
        handle_tail_of(&self.root, &self.log, tail, &*self.options.observer)
    }

    /// Takes the writer lock (waiting up to `--wait`) and brings the index level with the log.
    pub fn lock(&self) -> Result<WriterLock, StoreError> {
        self.refuse_if_read_only()?;
        let lock = acquire_lock(&self.root, self.options.wait)?;
        self.settle(Some(&lock))?;
        Ok(lock)
    }

    pub fn index_dir(&self) -> PathBuf {
        self.root.join(INDEX_DIR)
    }
}

pub(super) fn handle_tail_of(
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

/// Whether nobody can write the store: its LOCK file cannot be opened for writing because
/// the file system is read-only or permissions forbid it.
pub(super) fn is_read_only(root: &Path) -> bool {
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

/// Whether the index noted a trust event at `rec`'s place with `rec`'s chain value.
fn noted_trust_event(r: &index::Reader<'_>, rec: &log::Record) -> bool {
    r.trust_events()
        .ok()
        .flatten()
        .is_some_and(|events| events.contains(&(rec.pos, rec.chain)))
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
                hex::encode(k.public_key) == event.public_key
                    && (k.added_at == rec.pos.n && k.role == event.role && k.name == event.name
                        || noted_trust_event(r, rec))
            })
        }
        Kind::Pin | Kind::Policy => noted_trust_event(r, rec),
        Kind::KeyRetire => {
            let Ok(event) = record::decode_event::<record::KeyRetire>(&rec.payload) else {
                return Ok(false);
            };
            r.key(&event.keyid)?
                .is_some_and(|k| k.retired_at.is_some_and(|at| at <= rec.pos.n))
        }
    })
}
