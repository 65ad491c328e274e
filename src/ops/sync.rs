//! `push`, `pull`, `sync`: exchange the log with a git remote; and the remotes a store
//! knows (`remote add`, `remote list`). Pull verifies every envelope it takes against the
//! local trust store; the ones it refuses are listed with their codes, stay in the remote,
//! and are offered again on the next pull.

use super::{Context, Failure, Observer, Stop};
use crate::reaper::Reaper;
use crate::store::Store;
use crate::sync::git::GitError;
use crate::sync::remote::{self, Remote, SyncLock};
use crate::sync::{Conflict, Ignored, Options, Rejected, Session, SyncError};
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;

/// Which exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Push,
    Pull,
    /// Pull, then push.
    Sync,
}

impl Direction {
    pub fn verb(self) -> &'static str {
        match self {
            Direction::Push => "push",
            Direction::Pull => "pull",
            Direction::Sync => "sync",
        }
    }
}

/// One exchange with a remote.
#[derive(Debug, Clone)]
pub struct SyncInput {
    /// The remote's name.
    pub remote: String,
    pub direction: Direction,
    /// How long the remote may take to answer the first contact (None: no bound).
    pub connect_timeout: Option<Duration>,
    /// How long to wait for another exchange of the same store to finish.
    pub wait: Duration,
    /// Let git and the exchange draw their progress on stderr (a terminal is watching).
    pub progress: bool,
}

/// What an exchange did. For a pull, `fetched` = `created` + `merged` + `noop` +
/// `rejected` + `ignored`.
#[derive(Debug, Serialize)]
pub struct SyncOutput {
    pub remote: String,
    pub url: String,
    pub object_format: Option<&'static str>,
    pub fetched: usize,
    pub created: usize,
    pub merged: usize,
    pub noop: usize,
    pub rejected: usize,
    pub ignored: usize,
    /// Remote envelopes this store refused (the first 1,000; `rejected` counts them all);
    /// they stay in the remote.
    pub rejections: Vec<Rejected>,
    /// Remote entries that are other attestations than elench claims (the first 1,000;
    /// `ignored` counts them all).
    pub foreign: Vec<Ignored>,
    /// Remote paths holding other bytes than the envelope they name (the first 1,000), and
    /// how many there are.
    pub conflicts: Vec<Conflict>,
    pub conflicted: usize,
    pub pushed: usize,
    pub attempts: usize,
    pub examined: usize,
    pub compared: usize,
    pub remote_head: Option<String>,
    /// `updated` when the log grew here (pull) or there (push), else `noop`.
    pub effect: &'static str,
    /// Stopped early (what is counted is done), or a partial pull (rejected envelopes).
    #[serde(skip)]
    pub failure: Option<Failure>,
}

/// Warnings listed one by one; the rest are counted.
const LISTED: usize = 100;

/// Exchanges the log of `store` with a remote. Warnings go to `observer`; `stop` ends the
/// exchange between envelopes, keeping what was done; `reaper` (the front end's, as
/// `Context::reaper`) ends git should elench end first.
pub fn exchange(
    store: &Store,
    input: &SyncInput,
    reaper: &Arc<Reaper>,
    observer: &dyn Observer,
    stop: &dyn Stop,
) -> Result<SyncOutput, Failure> {
    let stopped = || stop.received().is_some();
    let opts = Options {
        wait: input.wait,
        progress: input.progress,
        stop: &stopped,
        connect_timeout: input.connect_timeout,
        reaper,
    };
    let mut session = Session::open(store, &input.remote, opts).map_err(sync_failure)?;
    let url = session.remote().url.clone();
    let outcome = match input.direction {
        Direction::Push => session.push(),
        Direction::Pull => session.pull(),
        Direction::Sync => session.sync(),
    };
    let o = match (outcome, stop.received()) {
        // A signal at a terminal reaches git too; its failure is the interruption.
        (Err(_), Some(signal)) => return Err(Failure::interrupted(signal)),
        (o, _) => o.map_err(sync_failure)?,
    };
    for c in o.conflicts.iter().take(LISTED) {
        let message = match &c.placed_at {
            // Pull: a submodule where an envelope could be; nothing to read there.
            None if c.submodule => format!(
                "{} on the remote is a submodule (a gitlink, not written by elench), not an \
                 envelope: nothing there can be read, and an envelope meant for that path must \
                 be beside it (push puts it there)",
                c.path
            ),
            // Pull: the path names an envelope its bytes are not.
            None => format!(
                "{} on the remote holds other bytes than the envelope its name gives (not \
                 written by elench); they were judged like any others",
                c.path
            ),
            Some(p) if *p == c.envelope_path => format!(
                "{} on the remote is not a folder, so nothing can go beside it: envelope {} \
                 was written at its own path, replacing it",
                c.path, c.envelope_path
            ),
            Some(p) => format!(
                "{} on the remote holds other bytes than envelope {} (not written by elench); \
                 it is kept, and the envelope is at {p} beside it, so it still reaches every \
                 store",
                c.path, c.envelope_path
            ),
        };
        observer.warn("REMOTE_CONFLICT", message);
    }
    if o.conflicted > LISTED {
        observer.warn(
            "REMOTE_CONFLICT",
            format!(
                "{} more remote paths hold other bytes than their envelopes (data.conflicts \
                 lists the first {}, data.conflicted counts them all)",
                o.conflicted - LISTED,
                o.conflicts.len()
            ),
        );
    }
    if o.ignored > 0 {
        let paths: Vec<String> = o
            .ignored_entries
            .iter()
            .take(LISTED)
            .map(|i| format!("{} ({})", i.path, i.kind))
            .collect();
        let more = o.ignored.saturating_sub(paths.len());
        observer.warn(
            "FOREIGN_STATEMENT",
            format!(
                "{} entries of the remote are other attestations than elench claims, ignored as \
                 the in-toto bundle convention asks: {}{}",
                o.ignored,
                paths.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            ),
        );
    }
    for u in o.unverified.iter().take(LISTED) {
        observer.warn(
            "UNVERIFIED_SIGNATURE",
            format!(
                "{}: {} signature(s) in the envelope were not verified by any trusted key",
                u.id, u.signatures
            ),
        );
    }
    let failure = if o.interrupted {
        Some(Failure::interrupted(stop.received().unwrap_or(2)))
    } else if o.rejected > 0 {
        // The remote holds envelopes this store refused: a partial exchange (exit 3), named
        // one by one so that a script sees which without reading data.
        let listed: Vec<String> = o
            .rejections
            .iter()
            .take(LISTED)
            .map(|r| format!("{} ({})", r.path, r.code))
            .collect();
        let more = o.rejected.saturating_sub(listed.len());
        Some(Failure::Partial(format!(
            "{} envelope(s) of the remote were rejected and left there: {}{}; see \
             data.rejections. The next pull offers them again, e.g. after `elench keys add` of \
             their key",
            o.rejected,
            listed.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        )))
    } else {
        None
    };
    Ok(SyncOutput {
        remote: input.remote.clone(),
        url,
        object_format: o.object_format,
        fetched: o.fetched,
        created: o.created,
        merged: o.merged,
        noop: o.noop,
        rejected: o.rejected,
        ignored: o.ignored,
        rejections: o.rejections,
        foreign: o.ignored_entries,
        conflicts: o.conflicts,
        conflicted: o.conflicted,
        pushed: o.pushed,
        attempts: o.attempts,
        examined: o.examined,
        compared: o.compared,
        remote_head: o.remote_head,
        // The log grew here (pull) or there (push), or nothing changed.
        effect: if o.created + o.merged + o.pushed > 0 {
            "updated"
        } else {
            "noop"
        },
        failure,
    })
}

/// What `remote add` did.
#[derive(Debug, Clone, Serialize)]
pub struct RemoteAdded {
    pub name: String,
    /// The URL as stored (a relative path made absolute).
    pub url: String,
    /// False when the remote was there already with this URL.
    pub added: bool,
    /// `created` or `noop`.
    pub effect: &'static str,
}

/// Adds a remote to the store of `ctx`; `url` may be a path relative to the working
/// directory.
pub fn add_remote(ctx: &Context, name: &str, url: &str) -> Result<RemoteAdded, Failure> {
    let root = &ctx.store_root()?;
    Store::check(root)?;
    let cwd = std::env::current_dir().map_err(|e| Failure::io(".", e))?;
    let url = remote::normalize_url(url, &cwd).map_err(sync_failure)?;
    let _lock = SyncLock::acquire(root, ctx.wait).map_err(sync_failure)?;
    let added = remote::add(root, name, &url).map_err(sync_failure)?;
    Ok(RemoteAdded {
        name: name.to_owned(),
        url,
        added,
        effect: if added { "created" } else { "noop" },
    })
}

/// The remotes of the store of `ctx`.
pub fn list_remotes(ctx: &Context) -> Result<Vec<Remote>, Failure> {
    let root = ctx.store_root()?;
    Store::check(&root)?;
    remote::list(&root).map_err(sync_failure)
}

/// The failure a sync error is reported as.
pub fn sync_failure(e: SyncError) -> Failure {
    let message = e.to_string();
    match e {
        SyncError::Store(s) => s.into(),
        SyncError::Git(GitError::Missing(_)) => Failure::Precondition {
            code: crate::error::Code::GitNotFound,
            message: format!("{message}; install git"),
        },
        SyncError::Git(_) => Failure::Unavailable {
            code: crate::error::Code::GitFailed,
            message: format!("{message}; check the remote's URL and access, then run again"),
        },
        SyncError::BadName(_) | SyncError::BadUrl(_) => Failure::Usage(message),
        SyncError::UnknownRemote(_) => Failure::NotFound {
            code: crate::error::Code::RemoteNotFound,
            message,
        },
        SyncError::RemoteExists { .. } => Failure::Invalid {
            code: crate::error::Code::RemoteExists,
            message: format!("{message}; choose another name"),
        },
        SyncError::Config(_) => Failure::Precondition {
            code: crate::error::Code::StoreInvalid,
            message,
        },
        SyncError::Io(m) => Failure::Io {
            path: "store".into(),
            message: m,
        },
        SyncError::Busy(_) => Failure::Unavailable {
            code: crate::error::Code::SyncBusy,
            message: format!("{message}; try again, or raise ‹wait›"),
        },
        SyncError::PushRejected { .. } => Failure::Unavailable {
            code: crate::error::Code::PushRejected,
            message,
        },
        SyncError::PushRefused { .. } => Failure::Precondition {
            code: crate::error::Code::PushRefused,
            message,
        },
        SyncError::Unreachable { .. } => Failure::Unavailable {
            code: crate::error::Code::RemoteUnreachable,
            message,
        },
        SyncError::NotALog { .. } => Failure::Invalid {
            code: crate::error::Code::RemoteNotALog,
            message,
        },
    }
}
