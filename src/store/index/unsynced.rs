//! The record that the index holds writes the disk may not have yet.
//!
//! The index is written without fsync (the log is what makes a record durable), so its
//! latest pages live in the kernel's page cache until the kernel writes them back. A killed
//! process loses nothing there; a machine that stops (a kernel crash, a power cut) can lose
//! some pages and keep others, and LMDB then reads a tree that is neither the old one nor the
//! new one, without any error. So before the first write the disk may not hold, the writer
//! records durably, in the file `UNSYNCED` beside the index, the boot it is made in (the
//! kernel's boot id). An fsync of the index ([`super::Index::sync`]) removes the file; nothing
//! else does, and a later write never replaces a file naming another boot. An index whose
//! `UNSYNCED` names another boot (or none) may have lost writes with that boot and is
//! rebuilt from the log into fresh files; within one boot the page cache holds every write,
//! so it is read as it is.
//!
//! Where the system gives no boot id the file is never written and LMDB syncs its own data
//! pages at every commit instead (`NO_META_SYNC`), which keeps the index whole at the cost of
//! one fsync per commit; a file found there (left by a system that has boot ids) still asks
//! for a rebuild.

use super::IndexError;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The file's name inside the index directory.
pub const FILE: &str = "UNSYNCED";

/// Bound on what is read of the file: a boot id is 36 characters.
const MAX_LEN: u64 = 256;

/// This boot of the machine, as the kernel names it; `None` where it does not.
pub fn boot_id() -> Option<&'static str> {
    static BOOT: OnceLock<Option<String>> = OnceLock::new();
    BOOT.get_or_init(|| {
        let text = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        let id = text.trim();
        (!id.is_empty()).then(|| id.to_owned())
    })
    .as_deref()
}

/// The boot named in the file at `path`, or `None` when there is no file.
fn recorded(path: &Path) -> Result<Option<String>, IndexError> {
    use std::io::Read;
    let io = |source| IndexError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    let mut text = String::new();
    match file.take(MAX_LEN).read_to_string(&mut text) {
        Ok(_) => Ok(Some(text.trim().to_owned())),
        // Not text: it names no boot this machine ever had.
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => Ok(Some(String::new())),
        Err(e) => Err(io(e)),
    }
}

/// Where the file goes for the index in `dir`.
pub fn path_in(dir: &Path) -> PathBuf {
    dir.join(FILE)
}

/// Records durably that this boot may hold unsynced writes of the index. Called inside the
/// write transaction, before its commit, so a concurrent [`clear`] cannot come between the
/// check and the commit.
///
/// A file that names another boot, or none, is left as it is: it says that pages may already
/// be lost, which only a rebuild and [`clear`] may forget. A new file is written whole under
/// a name of its own, synced, and linked into place, so `UNSYNCED` never shows less than a
/// boot id; the folder is synced after the link, and again by every writer that finds the
/// file naming this boot within a minute of its link (a writer killed between the link and
/// the sync may have left the name only in the page cache, until the file system commits
/// it by itself, within seconds).
pub fn mark(path: &Path) -> Result<(), IndexError> {
    use std::io::Write;
    let Some(boot) = boot_id() else {
        return Ok(());
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let io = |at: &Path| {
        let at = at.to_path_buf();
        move |source| IndexError::Io { path: at, source }
    };
    match recorded(path)? {
        Some(found) if found == boot => {
            if recently_linked(path) {
                crate::atomic_file::sync_dir(dir).map_err(io(dir))?;
            }
            return Ok(());
        }
        Some(_) => return Ok(()),
        None => {}
    }
    let whole = dir.join(format!(".{FILE}.{}", std::process::id()));
    let written = std::fs::File::create(&whole)
        .and_then(|mut f| f.write_all(boot.as_bytes()).and_then(|()| f.sync_all()));
    let linked = written.and_then(|()| match std::fs::hard_link(&whole, path) {
        // Another writer of this boot linked its own meanwhile.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    });
    let _ = std::fs::remove_file(&whole);
    linked.map_err(io(path))?;
    crate::atomic_file::sync_dir(dir).map_err(io(dir))
}

/// Whether the file was linked so recently that its name may not be on disk yet if the
/// writer that linked it was killed before syncing the folder. File systems commit such
/// changes within seconds on their own (ext4's journal every 5 s by default), so an older
/// file is taken as on disk and costs no sync.
fn recently_linked(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(path) else {
        return true;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(i64::MAX);
    now.saturating_sub(meta.ctime()) < RECENT_SECS
}

/// How long after its link a file's name is synced again by the writers that find it.
const RECENT_SECS: i64 = 60;

/// Removes the file once the index's writes are on disk, with any file a writer killed
/// while making one left beside it (both are done under the index's write transaction, so
/// no writer is making one now). A removal the disk loses leaves a file that only asks for
/// a rebuild nobody needed.
pub fn clear(path: &Path) -> Result<(), IndexError> {
    if let Some(dir) = path.parent() {
        let partial = format!(".{FILE}.");
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            if entry.file_name().to_string_lossy().starts_with(&partial) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(IndexError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// What the file names when the index's writes may be lost: another boot, or none (`""`: the
/// file is damaged, or this system gives no boot id to compare with).
pub fn from_other_boot(path: &Path) -> Result<Option<String>, IndexError> {
    let found = recorded(path)?;
    Ok(match boot_id() {
        Some(boot) => found.filter(|other| other != boot),
        None => found,
    })
}

/// Why an index with such a file is rebuilt, for the `INDEX_REBUILT` warning.
pub fn reason(other: &str) -> String {
    if other.is_empty() {
        "the index's record of writes not yet on disk (index/UNSYNCED) names no boot this \
         machine can check, so those writes may be lost"
            .to_owned()
    } else {
        format!(
            "the machine has restarted since the index was last written (in boot {other:?}), \
             and those writes may not have reached the disk"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_once_keeps_another_boots_record_and_clears() {
        let Some(boot) = boot_id() else {
            return; // a system without boot ids never writes the file
        };
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(dir.path());
        assert_eq!(from_other_boot(&path).unwrap(), None);
        mark(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), boot);
        assert_eq!(from_other_boot(&path).unwrap(), None);
        mark(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), boot);
        // Another boot's record is the stronger one: writing again does not replace it.
        std::fs::write(&path, "an-earlier-boot\n").unwrap();
        mark(&path).unwrap();
        assert_eq!(
            from_other_boot(&path).unwrap().as_deref(),
            Some("an-earlier-boot")
        );
        // A record that names no boot (empty, or not text) is kept too.
        for nameless in [&b""[..], &[0xff, 0xfe][..]] {
            std::fs::write(&path, nameless).unwrap();
            mark(&path).unwrap();
            assert_eq!(from_other_boot(&path).unwrap().as_deref(), Some(""));
        }
        assert!(reason("").contains("names no boot"));
        // No temporary file is left beside it.
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
        assert!(reason("b").contains("restarted"));
        // What a writer killed while making the file leaves beside it goes with it.
        let partial = dir.path().join(format!(".{FILE}.4242"));
        std::fs::write(&partial, boot).unwrap();
        clear(&path).unwrap();
        assert!(!path.exists());
        assert!(!partial.exists());
        clear(&path).unwrap();
        mark(&path).unwrap();
        assert_eq!(from_other_boot(&path).unwrap(), None);
    }
}
