//! A temporary directory of elench's own, removed when dropped: where `demo` and the
//! conformance runner build throwaway stores and `check` copies the tree. Each is listed with
//! the front end's [`Reaper`] while it lives, so that a process ended early (a time limit, a
//! signal) removes it on its way out.

use crate::reaper::Reaper;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How many names are tried before giving up: each is 64 random bits, so a second try
/// means someone made that path first.
const TRIES: usize = 16;

pub struct ScratchDir {
    path: PathBuf,
    reaper: Option<Arc<Reaper>>,
}

impl ScratchDir {
    /// Makes a new, empty directory under the system's temporary directory, readable by
    /// elench's user alone, listed with `reaper` until dropped. Its name (`prefix`, the
    /// process id, a random number) is made here, never taken over: a path that exists
    /// already (another process's, or one planted by someone who guessed it) is never used.
    pub fn create(prefix: &str, reaper: &Arc<Reaper>) -> std::io::Result<ScratchDir> {
        ScratchDir::make(prefix, Some(reaper))
    }

    /// [`ScratchDir::create`] without a reaper: removed on drop, but not by an early exit.
    pub fn unlisted(prefix: &str) -> std::io::Result<ScratchDir> {
        ScratchDir::make(prefix, None)
    }

    /// For tests: [`ScratchDir::unlisted`], which must succeed.
    #[cfg(test)]
    pub fn new(prefix: &str) -> ScratchDir {
        ScratchDir::unlisted(prefix).expect("a scratch directory for a test")
    }

    fn make(prefix: &str, reaper: Option<&Arc<Reaper>>) -> std::io::Result<ScratchDir> {
        use rand_core::RngCore;
        use std::os::unix::fs::DirBuilderExt;
        let mut last = None;
        for _ in 0..TRIES {
            let path = std::env::temp_dir().join(format!(
                "{prefix}-{}-{:016x}",
                std::process::id(),
                rand_core::OsRng.next_u64()
            ));
            let make = |p: &Path| std::fs::DirBuilder::new().mode(0o700).create(p);
            let made = match reaper {
                Some(r) => r.make_dir(&path, make),
                None => make(&path),
            };
            match made {
                Ok(()) => {
                    return Ok(ScratchDir {
                        path,
                        reaper: reaper.cloned(),
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    last = Some(with_path(&path, e));
                }
                Err(e) => return Err(with_path(&path, e)),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("no scratch directory name")))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// `e`, saying which path it is about.
fn with_path(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(
        e.kind(),
        format!("cannot make scratch directory {}: {e}", path.display()),
    )
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
        if let Some(r) = &self.reaper {
            r.forget_dir(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn distinct_private_and_removed() {
        let a = ScratchDir::new("elench-test");
        let b = ScratchDir::new("elench-test");
        assert_ne!(a.path(), b.path());
        let mode = std::fs::metadata(a.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::create_dir_all(a.path().join("x")).unwrap();
        let p = a.path().to_path_buf();
        drop(a);
        assert!(!p.exists());
    }

    #[test]
    fn listed_while_alive_and_removed_by_a_reap() {
        let r = Reaper::new();
        let kept = ScratchDir::create("elench-test", &r).unwrap();
        let dropped = ScratchDir::create("elench-test", &r).unwrap();
        let gone = dropped.path().to_path_buf();
        drop(dropped);
        assert_eq!(r.dirs(), vec![kept.path().to_path_buf()]);
        std::fs::write(kept.path().join("f"), "x").unwrap();
        r.reap();
        assert!(!kept.path().exists() && !gone.exists());
        // After the reap nothing new is made.
        assert!(ScratchDir::create("elench-test", &r).is_err());
    }
}
