//! What every operation is given: where the store is, how long to wait for it, and who
//! hears warnings and progress.

use super::{Failure, Observer};
use crate::reaper::Reaper;
use crate::store::{locate, Environments, Options, Store, StoreError};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The settings an operation runs under, fixed by the front end that calls it.
#[derive(Clone)]
pub struct Context {
    /// The store named explicitly (`--store`, the MCP server's start), or None for `.elench`
    /// in the working directory or the nearest ancestor that has one.
    pub store: Option<PathBuf>,
    /// How long to wait for a store another process holds before STORE_BUSY.
    pub wait: Duration,
    observer: Arc<dyn Observer>,
    reaper: Arc<Reaper>,
    /// The index environments every store this context opens shares (LMDB opens one
    /// folder's once per process), and who is told of their transactions.
    envs: Environments,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("store", &self.store)
            .field("wait", &self.wait)
            .finish_non_exhaustive()
    }
}

impl Context {
    /// A context whose warnings and progress go to `observer`; a store it opens keeps the
    /// observer, so what the store notices later (a torn tail cut, an index rebuilt) is
    /// heard too. Its stores share environments of their own ([`Context::with_environments`]
    /// names others).
    pub fn new(store: Option<PathBuf>, wait: Duration, observer: Arc<dyn Observer>) -> Context {
        Context {
            store,
            wait,
            observer,
            reaper: Reaper::new(),
            envs: Environments::new(),
        }
    }

    /// The same context with the front end's reaper, which ends the children and removes
    /// the scratch directories of its operations should the process end early (without
    /// one, each context has its own that nobody reaps: only drops clean up).
    pub fn with_reaper(mut self, reaper: Arc<Reaper>) -> Context {
        self.reaper = reaper;
        self
    }

    /// The reaper of this context's operations.
    pub fn reaper(&self) -> &Arc<Reaper> {
        &self.reaper
    }

    /// This context, opening its stores' indexes through `envs`: a front end that runs many
    /// operations in one process (the MCP server) or watches the index for faults (the CLI)
    /// hands every context the same.
    pub fn with_environments(mut self, envs: Environments) -> Context {
        self.envs = envs;
        self
    }

    /// The index environments this context's stores share.
    pub fn environments(&self) -> &Environments {
        &self.envs
    }

    /// Who hears warnings and progress.
    pub fn observer(&self) -> &dyn Observer {
        &*self.observer
    }

    /// The observer, to hand to something that keeps it (a store).
    pub fn shared_observer(&self) -> Arc<dyn Observer> {
        self.observer.clone()
    }

    /// How this context opens stores: its wait, its observer, its environments.
    pub fn store_options(&self) -> Options {
        Options::new(self.wait)
            .observer(self.shared_observer())
            .envs(&self.envs)
    }

    /// Where the store is (it need not exist).
    pub fn store_root(&self) -> Result<PathBuf, Failure> {
        Ok(locate(self.store.as_deref())?)
    }

    /// Opens the store, bringing its index level with the log.
    pub fn open_store(&self) -> Result<Store, Failure> {
        let root = self.store_root()?;
        self.open_store_at(&root)
    }

    /// Opens the store at `root`, bringing its index level with the log.
    pub fn open_store_at(&self, root: &Path) -> Result<Store, Failure> {
        let store = Store::open(root, &self.store_options())?;
        // What every command says of the team's trust: an expired policy, an equivocation.
        if let Ok(st) = crate::trust::state_of(&store) {
            for (code, message) in st.warnings(crate::trust::now()) {
                self.observer().warn(code.as_str(), message);
            }
        }
        Ok(store)
    }

    /// Opens the store without bringing its index level with the log (`fsck`, which reports
    /// what it finds instead).
    pub fn open_store_unsettled(&self) -> Result<Store, Failure> {
        let root = self.store_root()?;
        Ok(Store::open_unsettled(&root, &self.store_options())?)
    }

    /// Opens the store if there is one: no `.elench` found is not an error here, but a store
    /// named explicitly must exist.
    pub fn open_store_if_any(&self) -> Result<Option<Store>, Failure> {
        match locate(self.store.as_deref()) {
            Ok(root) => match Store::open(&root, &self.store_options()) {
                Ok(s) => Ok(Some(s)),
                Err(StoreError::NotFound(_)) if self.store.is_none() => Ok(None),
                Err(e) => Err(e.into()),
            },
            Err(StoreError::NotFound(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}
