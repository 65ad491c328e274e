//! The LMDB environments a caller has open, by folder.
//!
//! LMDB refuses to open one environment twice in a process (heed keeps its own record of
//! the folders open and answers `EnvAlreadyOpened`), so every handle on a folder's index
//! must share one environment. Whoever runs operations owns an [`Environments`] (the CLI one
//! per command line, the MCP server one for its life, `ops::Context` carries it) and every
//! store it opens takes its environment from there; an environment stays open while the
//! registry names it or a handle holds it, and LMDB closes it when the last goes.

use super::fault::{IndexWatch, Unwatched, Watched};
use heed::Env;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Which file an environment opened: device and inode of its `data.mdb`.
pub(super) type FileId = (u64, u64);

/// One open environment, shared by every [`super::Index`] of its folder.
pub(super) struct Opened {
    pub(super) env: Env,
    /// The file the environment opened, to tell whether the folder still holds it.
    pub(super) data: Option<FileId>,
    /// Its transactions, counted for resizes and told to the watch.
    pub(super) watched: Arc<Watched>,
}

/// The environments a caller has open, by canonical folder, and the [`IndexWatch`] their
/// transactions are told to. Cloning shares them.
#[derive(Clone)]
pub struct Environments {
    open: Arc<Mutex<HashMap<PathBuf, Arc<Opened>>>>,
    watch: Arc<dyn IndexWatch>,
}

impl std::fmt::Debug for Environments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let open = self.open.lock().map(|m| m.len()).unwrap_or(0);
        f.debug_struct("Environments")
            .field("open", &open)
            .finish_non_exhaustive()
    }
}

impl Default for Environments {
    fn default() -> Environments {
        Environments::new()
    }
}

impl Environments {
    /// None open yet, and no watch: a fault reading an index is nobody's to answer.
    pub fn new() -> Environments {
        Environments::watched(Arc::new(Unwatched))
    }

    /// None open yet; every transaction of an index opened through these is told to `watch`.
    pub fn watched(watch: Arc<dyn IndexWatch>) -> Environments {
        Environments {
            open: Arc::new(Mutex::new(HashMap::new())),
            watch,
        }
    }

    /// The environment open in `canonical`, or the one `open` opens there (then kept).
    pub(super) fn get_or_open(
        &self,
        canonical: &Path,
        open: impl FnOnce() -> Result<(Env, Option<FileId>), super::IndexError>,
    ) -> Result<Arc<Opened>, super::IndexError> {
        let mut map = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(o) = map.get(canonical) {
            return Ok(o.clone());
        }
        let (env, data) = open()?;
        let opened = Arc::new(Opened {
            env,
            data,
            watched: Arc::new(Watched::new(canonical, self.watch.clone())),
        });
        map.insert(canonical.to_path_buf(), opened.clone());
        Ok(opened)
    }

    /// Lets go of the environment in `dir` (before its files are replaced): LMDB closes it
    /// once no handle holds it either.
    pub fn forget(&self, dir: &Path) {
        if let Ok(canonical) = std::fs::canonicalize(dir) {
            let mut map = self.open.lock().unwrap_or_else(|p| p.into_inner());
            map.remove(&canonical);
        }
    }

    /// Whether an environment is open in `dir` through these.
    pub fn is_open(&self, dir: &Path) -> bool {
        std::fs::canonicalize(dir).is_ok_and(|c| {
            self.open
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains_key(&c)
        })
    }
}
