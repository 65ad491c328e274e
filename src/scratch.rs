//! A uniquely named temporary directory, removed when dropped: where `demo` and the
//! conformance runner build throwaway stores.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

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
        ScratchDir { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
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
