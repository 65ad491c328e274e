//! The record that the index holds writes the disk may not have yet.
//!
//! The index is written without fsync (the log is what makes a record durable), so its
//! latest pages live in the kernel's page cache until the kernel writes them back. A killed
//! process loses nothing there; a machine that stops (a kernel crash, a power cut) can lose
//! some pages and keep others, and LMDB then reads a tree that is neither the old one nor the
//! new one, without any error. So before the first write the disk may not hold, the writer
//! records durably, in the file `UNSYNCED` beside the index, the boot it is made in (the
//! kernel's boot id). An fsync of the index ([`super::Index::sync`]) removes the file. An
//! index whose `UNSYNCED` names another boot may have lost writes with that boot and is
//! rebuilt from the log; within one boot the page cache holds every write, so it is read as
//! it is.
//!
//! Where the system gives no boot id the file is never written and LMDB syncs its own data
//! pages at every commit instead (`NO_META_SYNC`), which keeps the index whole at the cost of
//! one fsync per commit.

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

/// Where the file goes for the index in `dir`, when this system names its boots.
pub fn path_in(dir: &Path) -> Option<PathBuf> {
    boot_id().map(|_| dir.join(FILE))
}

/// Records durably that this boot may hold unsynced writes of the index, unless the file
/// already says so. Called inside the write transaction, before its commit, so a concurrent
/// [`clear`] cannot come between the check and the commit.
pub fn mark(path: &Path) -> Result<(), IndexError> {
    let Some(boot) = boot_id() else {
        return Ok(());
    };
    if recorded(path)?.as_deref() == Some(boot) {
        return Ok(());
    }
    crate::atomic_file::write(path, boot.as_bytes()).map_err(|source| IndexError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Removes the file once the index's writes are on disk. A removal the disk loses leaves a
/// file that only asks for a rebuild nobody needed.
pub fn clear(path: &Path) -> Result<(), IndexError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(IndexError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// The boot the file names when it is not this one: writes made then may be lost.
pub fn from_other_boot(path: &Path) -> Result<Option<String>, IndexError> {
    let Some(boot) = boot_id() else {
        return Ok(None);
    };
    Ok(recorded(path)?.filter(|other| other != boot))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_once_clears_and_tells_another_boot() {
        let Some(boot) = boot_id() else {
            return; // a system without boot ids never writes the file
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        assert_eq!(from_other_boot(&path).unwrap(), None);
        mark(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), boot);
        assert_eq!(from_other_boot(&path).unwrap(), None);
        std::fs::write(&path, "an-earlier-boot\n").unwrap();
        assert_eq!(
            from_other_boot(&path).unwrap().as_deref(),
            Some("an-earlier-boot")
        );
        std::fs::write(&path, [0xff, 0xfe]).unwrap();
        assert_eq!(from_other_boot(&path).unwrap().as_deref(), Some(""));
        mark(&path).unwrap();
        assert_eq!(from_other_boot(&path).unwrap(), None);
        clear(&path).unwrap();
        assert!(!path.exists());
        clear(&path).unwrap();
    }
}
