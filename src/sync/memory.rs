//! What a store remembers of a remote, so that a remote moved back is noticed.
//!
//! Whoever can push the log's ref can move it back to before a falsification; a store that
//! took the log from there afterwards would never learn of it. So each store keeps, per
//! remote, the remote's commit as it last left it (`SyncState::held`): the head a pull found
//! holding everything remembered before, or the commit a push wrote (which holds every local
//! envelope). Every envelope of that commit's tree that the store holds was exchanged with the
//! remote. No copy of the envelopes is kept: the commit is in the store's private repository
//! (never pruned), and the store's own log says which of its envelopes it holds.
//!
//! A pull compares that commit with the remote's head: an envelope at its own path in the
//! remembered tree, held here, and no longer at that path in the head (gone, or other bytes
//! there) is lost. The cost grows with what changed between the two commits, not with the
//! log. The memory stays until the remote holds everything again (the next push writes it
//! back), so every pull until then reports the loss; [`forget`] is the way out for a store
//! that cannot push, and takes the remote's history as it is.
//!
//! What it cannot see: a remote rewound before this store ever exchanged with it, and an
//! envelope that only ever stood beside its path (a remote path taken by other bytes). A fresh
//! store has no memory; that is what witnessed checkpoints are for.

use super::git::{Listed, Repo};
use super::{layout, SyncError, PAGE};
use crate::store::Store;

/// Envelopes a remote held once and holds no longer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Rewound {
    /// How many.
    pub count: usize,
    /// The claim ids of the first [`LISTED`] of them, sorted, each once.
    pub ids: Vec<String>,
    /// Their paths in the remote's tree (the first [`LISTED`]).
    pub paths: Vec<String>,
    /// The remote's log commit this store remembers (it held them).
    pub before: String,
    /// The remote's log commit now (None: the remote has no log any more).
    pub now: Option<String>,
}

/// Paths and ids listed, at most.
pub const LISTED: usize = 1000;

/// The folders of the remote's tree the memory covers.
pub const DIRS: &[&str] = &[layout::LAYOUT_DIR, super::policies::DIR];

/// What of `before` (the remembered commit) that this store holds is not in `now`. None when
/// nothing is lost, or when `before` is not in the private repository (a memory lost with it).
pub fn lost(
    store: &Store,
    repo: &Repo,
    before: &str,
    now: Option<&str>,
) -> Result<Option<Rewound>, SyncError> {
    if Some(before) == now || !repo.has_commit(before)? {
        return Ok(None);
    }
    let mut found = Rewound {
        count: 0,
        ids: Vec::new(),
        paths: Vec::new(),
        before: before.to_owned(),
        now: now.map(str::to_owned),
    };
    let policies = super::policies::held(store)?;
    for dir in DIRS {
        // The entries of `before` that `now` lacks or holds otherwise.
        repo.entries(now, before, dir, PAGE, |page| {
            for l in page {
                let Listed::File(e) = l else { continue };
                // A claim's envelope, or a trust policy (named by its version), held here.
                let id = if let Some((id, digest)) = layout::parse_path(&e.path) {
                    if !super::holds(store, id, digest)? {
                        continue;
                    }
                    id.to_owned()
                } else if let Some((version, digest)) = super::policies::parse_path(&e.path) {
                    if !policies.iter().any(|p| p == digest) {
                        continue;
                    }
                    format!("trust policy version {version}")
                } else {
                    continue;
                };
                found.count += 1;
                if found.paths.len() < LISTED {
                    found.paths.push(e.path.clone());
                    found.ids.push(id);
                }
            }
            Ok::<bool, SyncError>(true)
        })?;
    }
    found.ids.sort();
    found.ids.dedup();
    Ok((found.count > 0).then_some(found))
}

/// What [`forget`] cleared: everything this store remembered of a remote's past.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Forgotten {
    /// The remote's commit as this store last left it (None: nothing remembered).
    pub held: Option<String>,
    /// The remote's sequence of envelopes this store kept: how many entries.
    pub sequence_size: u64,
    /// The last checkpoint this store verified or wrote there.
    pub checkpoint: Option<super::witnessed::CheckpointSeen>,
    /// How many witnesses' last cosigned sizes this store knew.
    pub witnesses: usize,
}

impl Forgotten {
    /// Whether anything was remembered at all.
    pub fn anything(&self) -> bool {
        self.held.is_some()
            || self.sequence_size > 0
            || self.checkpoint.is_some()
            || self.witnesses > 0
    }
}

/// Forgets what this store remembers of remote `name`'s past, so that the history the remote
/// shows now is taken as it is: the commit the remote held when this store last left it, the
/// remote's sequence of envelopes and the last checkpoint seen there, and the sizes its
/// witnesses last cosigned. The way out for a store that cannot push what a rewound remote
/// lost (`REMOTE_REWOUND` on every pull otherwise). Nothing of the store's log is touched; the
/// next exchange starts remembering again. Holds the store's sync lock.
pub fn forget(
    root: &std::path::Path,
    name: &str,
    wait: std::time::Duration,
) -> Result<Forgotten, SyncError> {
    super::remote::find(root, name)?;
    let _lock = super::remote::SyncLock::acquire(root, wait)?;
    // The witness memory first: a crash after it leaves `held`, which the next pull still
    // checks, and forgetting again finishes the job.
    let (sequence_size, checkpoint, witnesses) = super::witnessed::forget(root, name)?;
    let mut state = super::remote::load_state(root, name);
    let held = state.held.take();
    if held.is_some() {
        super::remote::save_state(root, name, &state)?;
    }
    Ok(Forgotten {
        held,
        sequence_size,
        checkpoint,
        witnesses,
    })
}
