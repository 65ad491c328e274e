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
    /// Checkpoints and witnesses (docs/witness.md): what push signs and asks, what pull
    /// checks.
    pub witness: WitnessInput,
}

/// The witness part of an exchange.
#[derive(Debug, Clone, Default)]
pub struct WitnessInput {
    /// `push --log-key`: sign the remote's checkpoint and ask the witnesses to cosign it.
    pub log_key: Option<ed25519_dalek::SigningKey>,
    /// `push --origin`: the origin where no policy's `log` line names the log key.
    pub origin: Option<String>,
    /// `--witness-policy FILE` (already read); None: the policy kept with the remote.
    pub policy: Option<crate::witness::policy::Policy>,
    /// `pull --witness-fresh`.
    pub fresh: bool,
    /// Bounds each whole witness request (None: 30 s).
    pub timeout: Option<Duration>,
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
    /// Envelopes the remote held when this store last exchanged with it and holds no longer
    /// (`REMOTE_REWOUND`); absent when it lost nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rewound: Option<crate::sync::memory::Rewound>,
    /// `updated` when the log grew here (pull) or there (push), else `noop`.
    pub effect: &'static str,
    /// `push --log-key`: the checkpoint written and who cosigned it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub witnessed: Option<crate::sync::witnessed::PushReport>,
    /// Pull: the remote's checkpoint and what its checks found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<crate::sync::witnessed::PullReport>,
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
    if input.direction == Direction::Pull {
        // The checkpoint's checks follow on the head pulled (witness_steps).
        session.check_after_pull();
    }
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
    let (witnessed, checkpoint) = witness_steps(store, &mut session, input, &o)?;
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
    } else if let Some(r) = &o.rewound {
        Some(rewound_failure(&input.remote, &url, r, input.direction))
    } else if let Some(f) = witness_failure(witnessed.as_ref(), checkpoint.as_ref()) {
        Some(f)
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
        rewound: o.rewound,
        // The log grew here (pull) or there (push), or nothing changed.
        effect: if o.created + o.merged + o.pushed > 0 {
            "updated"
        } else {
            "noop"
        },
        witnessed,
        checkpoint,
        failure,
    })
}

/// `REMOTE_REWOUND` (exit 3): what the remote lost, when it had it and what it holds now.
fn rewound_failure(
    name: &str,
    url: &str,
    r: &crate::sync::memory::Rewound,
    direction: Direction,
) -> Failure {
    let listed: Vec<&str> = r.ids.iter().take(10).map(String::as_str).collect();
    let more = r.count.saturating_sub(listed.len());
    let now = r.now.as_deref().unwrap_or("nothing (the ref is gone)");
    let repair = if direction == Direction::Sync {
        "this sync's push wrote them back"
    } else {
        "`elench push` writes them back"
    };
    Failure::Coded {
        code: crate::error::Code::RemoteRewound,
        message: format!(
            "remote {name} ({url}) no longer holds {} envelope(s) it held when this store last \
             exchanged with it, of claim(s) {}{}: its log was at {} then and is at {now} now \
             (someone moved {} back or rewrote it). What it still holds was pulled; {repair}. \
             See data.rewound",
            r.count,
            listed.join(", "),
            if more > 0 {
                format!(" and {more} more envelope(s)")
            } else {
                String::new()
            },
            r.before,
            crate::sync::layout::LOG_REF,
        ),
    }
}

/// The witness steps of an exchange: after a push with a log key, the checkpoint; after a
/// pull, its checks (with a policy, or a `log` key trusted, or a checkpoint on the remote).
fn witness_steps(
    store: &Store,
    session: &mut Session<'_>,
    input: &SyncInput,
    o: &crate::sync::Outcome,
) -> Result<
    (
        Option<crate::sync::witnessed::PushReport>,
        Option<crate::sync::witnessed::PullReport>,
    ),
    Failure,
> {
    use crate::sync::witnessed;
    if o.interrupted {
        return Ok((None, None));
    }
    let w = &input.witness;
    let timeout = w.timeout.unwrap_or(Duration::from_secs(30));
    let kept;
    let policy = match &w.policy {
        Some(p) => Some(p),
        None => {
            kept = witnessed::kept_policy(store.root(), &input.remote).map_err(|m| {
                Failure::Precondition {
                    code: crate::error::Code::BadPolicy,
                    message: format!("the witness policy of remote {}: {m}", input.remote),
                }
            })?;
            kept.as_ref()
        }
    };
    let mut pulled = None;
    if input.direction != Direction::Push {
        let trust = store.trust_snapshot()?.0;
        let checks = witnessed::PullChecks {
            policy,
            fresh: w.fresh,
            timeout,
        };
        pulled = Some(
            session
                .check_checkpoint(&checks, &trust)
                .map_err(sync_failure)?,
        );
    }
    let mut pushed = None;
    if input.direction != Direction::Pull {
        if let Some(key) = &w.log_key {
            let p = witnessed::PushCheckpoint {
                key,
                origin: w.origin.as_deref(),
                policy,
                timeout,
            };
            pushed = Some(session.push_checkpoint(&p).map_err(sync_failure)?);
        }
    }
    Ok((pushed, pulled))
}

/// Exit 3 with the first witness code that holds (`REMOTE_REWOUND` first).
fn witness_failure(
    pushed: Option<&crate::sync::witnessed::PushReport>,
    pulled: Option<&crate::sync::witnessed::PullReport>,
) -> Option<Failure> {
    use crate::error::Code;
    if let Some(f) = pulled.and_then(|p| p.findings.first()) {
        let more = pulled.map_or(0, |p| p.findings.len()) - 1;
        return Some(Failure::Witness {
            code: f.code,
            message: if more > 0 {
                format!("{} (and {more} more: data.checkpoint.findings)", f.message)
            } else {
                f.message.clone()
            },
        });
    }
    let p = pushed?;
    if let Some(why) = &p.rewound {
        return Some(Failure::Witness {
            code: Code::RemoteRewound,
            message: why.clone(),
        });
    }
    if !p.quorum {
        let missing: Vec<String> = p
            .not_cosigned
            .iter()
            .map(|(n, why)| format!("{n}: {why}"))
            .collect();
        return Some(Failure::Witness {
            code: Code::WitnessQuorum,
            message: format!(
                "the checkpoint was written with {} cosignature(s) ({}), below the witness \
                 policy's quorum; no cosignature from {}",
                p.cosigned_by.len(),
                p.cosigned_by.join(", "),
                missing.join("; ")
            ),
        });
    }
    None
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

/// What `remote witnesses` kept.
#[derive(Debug, Clone, Serialize)]
pub struct WitnessesSet {
    pub name: String,
    /// How many witnesses the policy names.
    pub witnesses: usize,
    /// Whether it asks for cosignatures (false: `quorum none`).
    pub quorum: bool,
    pub effect: &'static str,
}

/// Keeps the tlog-policy file `file` as the witness policy of remote `name`.
pub fn set_witnesses(ctx: &Context, name: &str, file: &str) -> Result<WitnessesSet, Failure> {
    let root = &ctx.store_root()?;
    Store::check(root)?;
    remote::find(root, name).map_err(sync_failure)?;
    let bytes = std::fs::read(file).map_err(|e| Failure::io(file, e))?;
    let _lock = SyncLock::acquire(root, ctx.wait).map_err(sync_failure)?;
    let p =
        crate::sync::witnessed::set_policy(root, name, &bytes).map_err(|m| Failure::Invalid {
            code: crate::error::Code::BadPolicy,
            message: format!("{file} is not a witness policy (C2SP tlog-policy): {m}"),
        })?;
    Ok(WitnessesSet {
        name: name.to_owned(),
        witnesses: p.witnesses.len(),
        quorum: p.wants_witnesses(),
        effect: "updated",
    })
}

/// What `remote forget` cleared.
#[derive(Debug, Clone, Serialize)]
pub struct RemoteForgotten {
    pub name: String,
    pub forgotten: crate::sync::memory::Forgotten,
    /// `updated` when something was remembered, else `noop`.
    pub effect: &'static str,
}

/// Forgets what the store of `ctx` remembers of remote `name`'s past (`sync::memory::forget`),
/// warning (`MEMORY_FORGOTTEN`) with what that was: the next pull takes the history the
/// remote shows as it is.
pub fn forget_remote(ctx: &Context, name: &str) -> Result<RemoteForgotten, Failure> {
    let root = &ctx.store_root()?;
    Store::check(root)?;
    let f = crate::sync::memory::forget(root, name, ctx.wait).map_err(sync_failure)?;
    if f.anything() {
        let mut what = Vec::new();
        if let Some(h) = &f.held {
            what.push(format!("its log at commit {h} as this store last left it"));
        }
        if f.sequence_size > 0 {
            what.push(format!("its sequence of {} envelope(s)", f.sequence_size));
        }
        if let Some(c) = &f.checkpoint {
            what.push(format!(
                "the last checkpoint seen there ({} entries, root {})",
                c.size, c.root
            ));
        }
        if f.witnesses > 0 {
            what.push(format!(
                "the sizes {} witness(es) last cosigned",
                f.witnesses
            ));
        }
        ctx.observer().warn(
            crate::error::Code::MemoryForgotten.as_str(),
            format!(
                "this store no longer remembers of remote {name}: {}. The next pull takes \
                 whatever history the remote shows as it is, so a rewind before now can no \
                 longer be noticed here",
                what.join("; ")
            ),
        );
    }
    Ok(RemoteForgotten {
        name: name.to_owned(),
        effect: if f.anything() { "updated" } else { "noop" },
        forgotten: f,
    })
}

/// `checkpoint --remote NAME`: the remote's sequence of envelopes now.
#[derive(Debug, Clone, Serialize)]
pub struct RemoteCheckpoint {
    pub remote: String,
    /// How many envelopes the remote's sequence holds.
    pub size: u64,
    /// Its RFC 6962 Merkle root, base64.
    pub root: String,
    /// The checkpoint written in the remote's log, if any.
    pub written: Option<crate::sync::witnessed::CheckpointView>,
}

pub fn remote_checkpoint(
    store: &Store,
    name: &str,
    connect_timeout: Option<Duration>,
    wait: Duration,
    reaper: &Arc<Reaper>,
) -> Result<RemoteCheckpoint, Failure> {
    let stop = || false;
    let opts = Options {
        wait,
        progress: false,
        stop: &stop,
        connect_timeout,
        reaper,
    };
    let mut session = Session::open(store, name, opts).map_err(sync_failure)?;
    let (size, root, written) = session.remote_checkpoint().map_err(sync_failure)?;
    Ok(RemoteCheckpoint {
        remote: name.to_owned(),
        size,
        root: crate::witness::checkpoint::encode_hash(&root),
        written,
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
        SyncError::BadName(_) | SyncError::BadUrl(_) => Failure::usage(None, message),
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
