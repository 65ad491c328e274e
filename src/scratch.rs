//! A uniquely named temporary directory, removed when dropped: where `demo` and the
//! conformance runner build throwaway stores. Every live one is also listed, so that a
//! process ended early (a time limit, a signal) can remove them on its way out.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The scratch directories of this process that have not been dropped yet.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Removes every scratch directory of this process (for a process about to end without
/// running destructors).
pub fn remove_all() {
    let live = match LIVE.lock() {
        Ok(mut l) => std::mem::take(&mut *l),
        Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
    };
    for p in live {
        let _ = std::fs::remove_dir_all(p);
    }
}

pub struct ScratchDir {
    path: PathBuf,
}

impl ScratchDir {
    /// A path under the system's temporary directory that no other scratch directory of any
    /// process uses (process id, time, and a counter). Not created: callers make what they need.
    pub fn new(prefix: &str) -> ScratchDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let path = std::env::temp_dir().join(format!(
            "{prefix}-{}-{nanos}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        if let Ok(mut l) = LIVE.lock() {
            l.push(path.clone());
        }
        ScratchDir { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
        if let Ok(mut l) = LIVE.lock() {
            l.retain(|p| p != &self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn distinct_and_removed() {
        let a = super::ScratchDir::new("elench-test");
        let b = super::ScratchDir::new("elench-test");
        assert_ne!(a.path(), b.path());
        std::fs::create_dir_all(a.path().join("x")).unwrap();
        let p = a.path().to_path_buf();
        drop(a);
        assert!(!p.exists());
    }
}
