//! Rebuilding a store's index in fresh files (`reindex`) and moving a damaged log's
//! tail aside (`fsck --repair`).

use super::index::{self, Index};
use super::log::Log;
use super::open::{handle_tail_of, is_read_only};
use super::rebuild;
use super::{
    acquire_lock, current_version, fresh_quarantine, read_format_file, unix_time, Damage, Head,
    Meta, Options, Store, StoreError, Tail, INDEX_DIR, LOG_DIR,
};
use std::path::{Path, PathBuf};

impl Store {
    /// `elench reindex`: rebuild the index from the log, under the writer lock.
    /// `progress` hears how many log records are read and applied so far.
    /// The index is rebuilt into fresh files (never reading the old ones, which may be
    /// damaged), so the store is consumed: open it again to read the new index.
    pub fn reindex(self, progress: Option<&(dyn Fn(u64) + Sync)>) -> Result<Meta, StoreError> {
        let (root, options) = self.close();
        Store::reindex_at(&root, &options, progress)
    }

    /// [`Store::reindex`] of the store at `root`, without opening its index at all (a damaged
    /// one can fault when read); `options.observer` hears the store's warnings.
    pub fn reindex_at(
        root: &Path,
        options: &Options,
        progress: Option<&(dyn Fn(u64) + Sync)>,
    ) -> Result<Meta, StoreError> {
        let log = Store::unopened(root, options)?;
        let _lock = acquire_lock(root, options.wait)?;
        rebuild_aside_locked(root, &log, progress, options)
    }

    /// Lets go of this store's index (so that its files can be replaced) and says where the
    /// store is.
    fn close(self) -> (PathBuf, Options) {
        self.options.envs.forget(&self.index_dir());
        (self.root.clone(), self.options.clone())
    }

    /// The log of the store at `root`, checked (format, layout migrated, writable) without
    /// opening the index.
    fn unopened(root: &Path, options: &Options) -> Result<Log, StoreError> {
        Store::check(root)?;
        if read_format_file(root)? < current_version() {
            let (root, _) = Store::open(root, options)?.close();
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
        let (root, options) = self.close();
        Store::repair_at(&root, &options)
    }

    /// [`Store::repair`] of the store at `root`. Its index is read only to learn what it
    /// vouches for, and not at all when a command found it damaged (`index::fault`): the
    /// rebuilt index is written into fresh files.
    pub fn repair_at(root: &Path, options: &Options) -> Result<Repaired, StoreError> {
        let wait = options.wait;
        let log = Store::unopened(root, options)?;
        // What the index vouches for, before it is rebuilt: a log cut inside a record the
        // index saw lost an acknowledged record, which is damage, not an unfinished append.
        // Only a log that ends in a torn record needs the answer, so only then is the old
        // index read (before the writer lock is taken here: opening may take it itself).
        let (_, tail) = log.scan(Head::EMPTY, |_| Ok(true))?;
        let acknowledged_loss = match tail {
            Tail::Torn { .. } if !index::fault::marked(&root.join(INDEX_DIR)) => {
                match Store::open_unsettled(root, options) {
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
                Tail::Clean => match rebuild_aside_locked(root, &log, None, options) {
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

/// Rebuilds the index from the log into a fresh folder beside it and puts that in its
/// place; the old files are removed unread. The caller holds the writer lock, and no index
/// of this store is open in the process.
fn rebuild_aside_locked(
    root: &Path,
    log: &Log,
    progress: Option<&(dyn Fn(u64) + Sync)>,
    options: &Options,
) -> Result<Meta, StoreError> {
    let envs = &options.envs;
    let index_dir = root.join(INDEX_DIR);
    let fresh = root.join(format!("index.new-{}-{}", unix_time(), std::process::id()));
    let _ = std::fs::remove_dir_all(&fresh);
    let built = (|| {
        let index = Index::open(envs, &fresh)?;
        let tail = rebuild::rebuild_all(log, &index, progress);
        let meta = index.read().and_then(|r| r.meta());
        envs.forget(&fresh);
        drop(index);
        handle_tail_of(root, log, tail?, &*options.observer)?;
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
