//! Sharing a log through git remotes.
//!
//! The log is a grow-only set of content-addressed envelopes and status is a function of
//! that set, so two stores converge by giving each other what the other lacks. A remote holds
//! the set under one ref as a tree with one file per envelope at a path derived from its
//! content (`layout`); elench's commits are deterministic. Pull ingests what is new through
//! the ordinary ingest against the local trust store (a remote is trusted for transport
//! only); push writes one commit holding what the remote lacks on top of its head, and when
//! another pusher came first fetches, rebuilds on the new head (a union, never a conflict)
//! and tries again; a remote that refuses the update itself is reported, not asked again.
//!
//! Files: `git` (the git executable: running it, what a remote says, the packs a push
//! writes itself), `layout` (ref, paths, commit identity), `remote` (configuration,
//! per-remote state, the lock), `pull`, `push`. Both reach the local store
//! through its own calls only: envelopes in log order, `holds_envelope`, and a pull's
//! envelopes staged (`store::stage`) and appended as one group, as `add` does.

pub mod git;
pub mod layout;
pub mod memory;
pub mod policies;
mod pull;
mod push;
pub mod remote;
pub mod witnessed;

use crate::reaper::Reaper;
use crate::store::{Store, StoreError};
use git::{blob_key, BlobKey, GitError, Repo};
use remote::{Remote, SyncLock, SyncState};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0:?} is not a usable remote name: use letters, digits, '.', '_' and '-', not starting with '.' or '-'")]
    BadName(String),
    #[error("{0:?} is not a usable remote URL: give a path to a repository, or a URL git accepts")]
    BadUrl(String),
    #[error("no remote named {0:?}; add one with `elench remote add {0} URL`")]
    UnknownRemote(String),
    #[error("a remote named {name:?} already exists with URL {url}")]
    RemoteExists { name: String, url: String },
    #[error("remote configuration is unreadable: {0}")]
    Config(String),
    #[error("{0}")]
    Io(String),
    #[error("another elench process is exchanging with remotes from this store; waited {0} s")]
    Busy(u64),
    #[error("the remote refused the push {attempts} times (last: {reason}); others are pushing too, try again")]
    PushRejected { attempts: usize, reason: String },
    #[error(
        "remote {name} ({url}) refused the push to {ref_name}: {reason} (git's words). This is \
         no contention, so it was not tried again: the same push gets the same answer until \
         whoever keeps the remote lets these credentials write {ref_name} (write access for \
         the token or key, no hook or ref protection that declines it)",
        ref_name = layout::LOG_REF
    )]
    PushRefused {
        name: String,
        url: String,
        reason: String,
    },
    #[error(
        "{ref_name} on remote {name} ({url}) points at {oid}, a {kind}, not a commit: a log is a \
         commit, so nothing was taken from it or written to it; whoever keeps the remote must point \
         the ref at a log commit again (or delete it: `git update-ref -d {ref_name}` in the remote)",
        ref_name = layout::LOG_REF
    )]
    NotALog {
        name: String,
        url: String,
        oid: String,
        kind: String,
    },
    #[error(
        "remote {name} ({url}) did not answer within the connect timeout of {} s{}; make sure \
         it is up and reachable from here (its address, the network, a firewall or VPN), then \
         run again, or give it longer with --connect-timeout SECONDS (0 for no limit)",
        limit.as_secs_f64(),
        detail.as_deref().map(|d| format!(" (git: {d})")).unwrap_or_default()
    )]
    Unreachable {
        name: String,
        url: String,
        limit: Duration,
        /// git's own words, when git itself gave up (ssh's `ConnectTimeout`).
        detail: Option<String>,
    },
}

/// One envelope of the remote that ingest refused.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Rejected {
    pub path: String,
    pub blob: String,
    pub code: String,
    pub message: String,
}

/// A remote path holding other bytes than the envelope that belongs there.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Conflict {
    /// The path that holds something else (the envelope's own path, or a file where the
    /// layout needs a folder on the way to it).
    pub path: String,
    /// The envelope's own path.
    pub envelope_path: String,
    /// Push: where the envelope was written instead, or found from an earlier push. None
    /// for pull, which only reports it.
    pub placed_at: Option<String>,
    /// What holds the path is a submodule (a gitlink), not bytes.
    #[serde(skip)]
    pub submodule: bool,
}

/// An entry of the remote that is another kind of attestation than an elench claim: never
/// ingested, never a rejection.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Ignored {
    pub path: String,
    pub blob: String,
    /// What it is (its payloadType, or its predicateType).
    pub kind: String,
}

/// An accepted envelope with signatures no trusted key verified.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Unverified {
    pub id: String,
    pub signatures: usize,
}

/// What an exchange did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Outcome {
    /// Envelopes read from the remote that this store did not hold.
    pub fetched: usize,
    /// Of those, how many created a claim, joined one already stored, or changed nothing.
    pub created: usize,
    pub merged: usize,
    pub noop: usize,
    /// How many were refused, and the first [`LISTED_MAX`] of them.
    pub rejected: usize,
    pub rejections: Vec<Rejected>,
    /// Of those, how many are other attestations than elench claims (foreign statements),
    /// and the first [`LISTED_MAX`] of them.
    pub ignored: usize,
    pub ignored_entries: Vec<Ignored>,
    /// Remote paths found holding other bytes than the envelope they name: how many, and
    /// the first [`LISTED_MAX`] of them.
    pub conflicted: usize,
    pub conflicts: Vec<Conflict>,
    /// Envelopes taken with signatures no trusted key verified (the first [`LISTED_MAX`]).
    pub unverified: Vec<Unverified>,
    /// Envelopes this store added to the remote.
    pub pushed: usize,
    /// Commits built and offered to the remote (more than one when others pushed first).
    pub attempts: usize,
    /// Remote entries a pull looked at (new since the last pull, and those refused then):
    /// what the pull's cost grows with.
    pub examined: usize,
    /// Local envelopes a push compared with the remote (those after the position of the
    /// last exchange): what the push's cost grows with.
    pub compared: usize,
    /// The remote's log commit after the exchange (None: the remote has no log).
    pub remote_head: Option<String>,
    /// The remote's object format.
    pub object_format: Option<&'static str>,
    /// Envelopes the remote held when this store last exchanged with it and holds no longer
    /// (pull and sync; `memory`).
    pub rewound: Option<memory::Rewound>,
    /// Stopped early by a signal; what is counted here is done, the rest is left for the
    /// next run.
    #[serde(skip)]
    pub interrupted: bool,
}

impl Outcome {
    /// Counts a conflict, and lists it among the first [`LISTED_MAX`].
    pub fn conflict(&mut self, c: Conflict) {
        self.conflicted += 1;
        if self.conflicts.len() < LISTED_MAX {
            self.conflicts.push(c);
        }
    }
}

/// Options of one exchange.
pub struct Options<'a> {
    /// How long to wait for another exchange of the same store to finish.
    pub wait: Duration,
    /// Show progress on stderr (a terminal is watching).
    pub progress: bool,
    /// Asked between envelopes: stop now?
    pub stop: &'a dyn Fn() -> bool,
    /// How long the remote may take to answer the first contact (`None`: no bound but the
    /// command's time limit); ssh's own connection is given as long.
    pub connect_timeout: Option<Duration>,
    /// Ends the git processes of the exchange should elench end first.
    pub reaper: &'a Arc<Reaper>,
}

/// An exchange with one remote, holding the store's sync lock.
pub struct Session<'a> {
    store: &'a Store,
    remote: Remote,
    state: SyncState,
    /// The state as the file holds it: an exchange that changed nothing writes nothing.
    saved: SyncState,
    progress: bool,
    stop: &'a dyn Fn() -> bool,
    reach: git::Reach,
    reaper: &'a Arc<Reaper>,
    /// The private repository and the remote's head as this session last saw or left it
    /// (the head's objects are here): one `ls-remote` serves a whole sync, pull, push and
    /// checkpoint. Forgotten when a push finds the remote moved meanwhile.
    connected: Option<(Repo, Option<String>)>,
    /// The leaf hashes (`witness::merkle::leaf_hash`) of blobs this session's pull read, by
    /// blob id, so that the checkpoint's sequence need not read them again (at most
    /// [`LEAVES_KEPT`]).
    leaves: Leaves,
    /// Whether a pull starts listing what the checkpoint's sequence needs (the commits its
    /// kept sequence lacks) beside its own reading ([`Session::check_after_pull`]).
    list_ahead: bool,
    /// That listing, once started.
    ahead: std::sync::Mutex<Option<witnessed::Ahead>>,
    _lock: SyncLock,
}

impl<'a> Session<'a> {
    pub fn open(store: &'a Store, name: &str, opts: Options<'a>) -> Result<Session<'a>, SyncError> {
        let root = store.root();
        let remote = remote::find(root, name)?;
        let lock = SyncLock::acquire(root, opts.wait)?;
        // Read under the lock: the previous holder may just have written it.
        let state = remote::load_state(root, name);
        let reach = git::Reach::new(&remote.url, opts.connect_timeout);
        Ok(Session {
            store,
            remote,
            saved: state.clone(),
            state,
            progress: opts.progress,
            stop: opts.stop,
            reach,
            reaper: opts.reaper,
            connected: None,
            leaves: Leaves::default(),
            list_ahead: false,
            ahead: std::sync::Mutex::new(None),
            _lock: lock,
        })
    }

    /// The remote's head and format (`ls-remote`), within the connect timeout: a remote that
    /// does not answer in time is [`SyncError::Unreachable`].
    fn ls_remote(&self) -> Result<git::RemoteHead, SyncError> {
        let unreachable = |detail| SyncError::Unreachable {
            name: self.remote.name.clone(),
            url: self.remote.url.clone(),
            limit: self.reach.connect_timeout.unwrap_or_default(),
            detail,
        };
        match git::ls_remote(&self.remote.url, layout::LOG_REF, &self.reach, self.reaper) {
            Err(GitError::TimedOut { .. }) => Err(unreachable(None)),
            // ssh gave up first, at the same limit.
            Err(GitError::Failed { message, .. })
                if self.reach.connect_timeout.is_some() && message.contains("timed out") =>
            {
                Err(unreachable(Some(message)))
            }
            other => Ok(other?),
        }
    }

    pub fn remote(&self) -> &Remote {
        &self.remote
    }

    fn tracking_ref(&self) -> String {
        format!("refs/elench/remotes/{}", self.remote.name)
    }

    /// Writes the state, unless the file holds it already.
    fn save(&mut self) -> Result<(), SyncError> {
        if self.state == self.saved {
            return Ok(());
        }
        remote::save_state(self.store.root(), &self.remote.name, &self.state)?;
        self.saved = self.state.clone();
        Ok(())
    }

    /// Asks the remote for its head and format, opens the private repository of that
    /// format, and makes sure the head's objects are here. Returns the head. Asked once per
    /// session: later calls get the head as this session last saw or left it (a push that
    /// finds it moved meanwhile asks again).
    fn connect(&mut self) -> Result<(Repo, Option<String>), SyncError> {
        if let Some(c) = &self.connected {
            return Ok(c.clone());
        }
        let seen = self.ls_remote()?;
        if self.state.format != Some(seen.format) {
            // Commit ids of another format mean nothing here: start over.
            self.state = SyncState {
                format: Some(seen.format),
                ..SyncState::default()
            };
        }
        let mut repo = Repo::open_or_init(
            &remote::repo_dir(self.store.root(), seen.format),
            seen.format,
        )?;
        repo.progress = self.progress;
        repo.reach = self.reach.clone();
        // The commits the state names were found or written here: a remote that has not
        // moved since costs no question to git.
        let s = &self.state;
        repo.known_commits(
            [&s.pulled, &s.pushed, &s.held]
                .into_iter()
                .flatten()
                .map(String::as_str),
        );
        repo.consolidate(MAX_PACKS)?;
        let head = match seen.head {
            None => None,
            Some(h) => Some(self.bring(&repo, &h)?),
        };
        self.connected = Some((repo.clone(), head.clone()));
        Ok((repo, head))
    }

    /// Makes commit `head` (or wherever the remote's log has moved since) available locally.
    /// The ref must name a commit: a tree, blob or tag there is refused, since a tree would
    /// be read as a log's tree and then fail every push, and a tag is nothing elench writes.
    fn bring(&self, repo: &Repo, head: &str) -> Result<String, SyncError> {
        if repo.has_commit(head)? {
            self.track(repo, head);
            return Ok(head.to_owned());
        }
        let fetched = repo.fetch(&self.remote.url, layout::LOG_REF, &self.tracking_ref())?;
        match repo.object_type(&fetched)? {
            Some(kind) if kind == "commit" => Ok(fetched),
            kind => Err(SyncError::NotALog {
                name: self.remote.name.clone(),
                url: self.remote.url.clone(),
                oid: fetched,
                kind: kind.unwrap_or_else(|| "missing object".into()),
            }),
        }
    }

    /// Records the remote's last known head in the private repository, for people looking
    /// at it with git. Nothing depends on it (the private repository is never pruned), so a
    /// failure, e.g. a lock held by a git process of a killed run, is ignored.
    /// A ref already there (the remote has not moved since) is not written again.
    fn track(&self, repo: &Repo, head: &str) {
        let tracking = self.tracking_ref();
        if !repo.points_at(&tracking, head) {
            let _ = repo.update_ref(&tracking, head);
        }
    }

    /// Pull, then push.
    pub fn sync(&mut self) -> Result<Outcome, SyncError> {
        let mut out = self.pull()?;
        if out.interrupted {
            return Ok(out);
        }
        let pushed = self.push()?;
        out.pushed = pushed.pushed;
        out.conflicted += pushed.conflicted;
        for c in pushed.conflicts {
            if out.conflicts.len() < LISTED_MAX {
                out.conflicts.push(c);
            }
        }
        out.attempts = pushed.attempts;
        out.compared = pushed.compared;
        out.remote_head = pushed.remote_head;
        out.interrupted = pushed.interrupted;
        Ok(out)
    }
}

/// The lists of an [`Outcome`] (refusals, conflicts, foreign entries) keep this many items;
/// their counts go on. The JSON answer is cut at 1 MiB anyway (`ELENCH_MAX_OUTPUT_BYTES`), and
/// a remote holding any number of entries must not make a pull's memory grow with them.
pub const LISTED_MAX: usize = 1000;

/// Leaf hashes of blobs a pull read that are kept for the checkpoint's sequence, at most
/// (64 bytes each: 64 MiB). A first pull of more reads the rest again for the sequence.
const LEAVES_KEPT: usize = 1 << 20;

/// Leaf hashes by blob id, kept sorted by key: 64 bytes a blob, where a map of hex ids
/// took about 100.
#[derive(Default)]
struct Leaves(Vec<(BlobKey, crate::witness::merkle::Hash)>);

impl Leaves {
    fn extend(&mut self, more: Vec<(BlobKey, crate::witness::merkle::Hash)>) {
        if more.is_empty() {
            return;
        }
        self.0.extend(more);
        self.0.sort_unstable_by_key(|(k, _)| *k);
    }

    /// The leaf hash kept for the blob whose id is `key`.
    fn get(&self, key: &BlobKey) -> Option<crate::witness::merkle::Hash> {
        let i = self.0.binary_search_by(|(k, _)| k.cmp(key)).ok()?;
        Some(self.0[i].1)
    }
}

/// Batches of this many envelopes are read from the store or checked against the remote at
/// a time.
const PAGE: usize = 4096;
/// The private repository's packs are merged when there are more than this many.
const MAX_PACKS: usize = 64;
/// Progress lines appear for transfers of at least this many envelopes.
const PROGRESS_FROM: usize = 2000;

/// Whether the store holds the envelope whose canonical digest is `digest` (hex; a digest
/// that is not 64 hex digits names nothing it holds).
pub(crate) fn holds(store: &Store, claim_id: &str, digest: &str) -> Result<bool, StoreError> {
    let mut d = [0u8; 32];
    if hex::decode_to_slice(digest, &mut d).is_err() {
        return Ok(false);
    }
    store.holds_envelope(claim_id, &d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaf_hashes_are_found_by_the_blob_ids_of_either_format() {
        let sha1 = "0123456789abcdef0123456789abcdef01234567";
        let sha256 = "ff".repeat(32);
        assert_eq!(blob_key(sha1).map(|k| k[19]), Some(0x67));
        assert_eq!(blob_key(sha1).map(|k| k[20]), Some(0));
        assert_eq!(blob_key(&sha256), Some([0xff; 32]));
        for bad in ["abc", "zz", &"00".repeat(33)] {
            assert_eq!(blob_key(bad), None, "{bad}");
        }
        let mut leaves = Leaves::default();
        let hash = |b: u8| [b; 32];
        leaves.extend(vec![(blob_key(&sha256).unwrap(), hash(2))]);
        leaves.extend(vec![(blob_key(sha1).unwrap(), hash(1))]);
        leaves.extend(Vec::new());
        let get = |oid: &str| blob_key(oid).and_then(|k| leaves.get(&k));
        assert_eq!(get(sha1), Some(hash(1)));
        assert_eq!(get(&sha256), Some(hash(2)));
        assert_eq!(get(&"ee".repeat(32)), None);
    }
}
