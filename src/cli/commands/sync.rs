//! `elench push [NAME]`, `pull [NAME]`, `sync [NAME]`: exchange the log with a git remote
//! (default `origin`). Pull verifies every envelope it takes against the local trust store;
//! the ones it refuses are listed with their codes, stay in the remote, and are offered again
//! on the next pull.

use crate::cli::common::open_store;
use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::interrupt::Interrupt;
use crate::cli::output::{Report, Warning};
use crate::sync::git::GitError;
use crate::sync::{Options, Outcome, Session, SyncError};
use serde_json::json;
use std::io::IsTerminal;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct RemoteArg {
    /// The remote (see `elench remote list`)
    #[arg(default_value = "origin")]
    pub name: String,
    /// How long the remote may take to answer elench's first contact, in seconds (fractions
    /// allowed; 0: no limit). Default: 30 when no person is at a terminal, none at one. An
    /// ssh remote's connection gets the same limit (ssh -o ConnectTimeout) unless
    /// GIT_SSH_COMMAND, GIT_SSH or core.sshCommand names an ssh command of your own. A
    /// remote that does not answer in time is REMOTE_UNREACHABLE (exit 12, retryable); the
    /// whole command's limit is --timeout
    #[arg(long, value_name = "SECONDS", value_parser = crate::cli::values::parse_seconds)]
    pub connect_timeout: Option<Duration>,
}

/// The connect timeout when `--connect-timeout` is not given and no person is at a terminal:
/// long enough for any remote that answers at all, short enough that an agent is not kept
/// waiting on one that never will.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// `--connect-timeout` as given (0: none), else the default: [`DEFAULT_CONNECT_TIMEOUT`]
/// when no person is at a terminal; none at one, where ssh may be asking that person for a
/// passphrase and Ctrl-C is at hand.
fn connect_timeout(given: Option<Duration>, interactive: bool) -> Option<Duration> {
    match given {
        Some(d) if d.is_zero() => None,
        Some(d) => Some(d),
        None if interactive => None,
        None => Some(DEFAULT_CONNECT_TIMEOUT),
    }
}

/// Which exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Push,
    Pull,
    Sync,
}

pub fn run(direction: Direction, a: RemoteArg, g: &Globals) -> Result<Report, Failure> {
    let store = open_store(g)?;
    let interrupt = Interrupt::install();
    let stop = || interrupt.received().is_some();
    // A person at a terminal, as for git's prompt (`child_env::harden`).
    let interactive = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let opts = Options {
        wait: Duration::from_secs(g.wait),
        progress: std::io::stderr().is_terminal(),
        stop: &stop,
        connect_timeout: connect_timeout(a.connect_timeout, interactive),
    };
    let mut session = Session::open(&store, &a.name, opts).map_err(sync_failure)?;
    let url = session.remote().url.clone();
    let outcome = match direction {
        Direction::Push => session.push(),
        Direction::Pull => session.pull(),
        Direction::Sync => session.sync(),
    };
    let outcome = match (outcome, interrupt.received()) {
        // A signal at a terminal reaches git too; its failure is the interruption.
        (Err(_), Some(signal)) => return Err(Failure::interrupted(signal)),
        (o, _) => o.map_err(sync_failure)?,
    };
    Ok(report(direction, &a.name, &url, outcome, &interrupt))
}

fn report(
    direction: Direction,
    name: &str,
    url: &str,
    o: Outcome,
    interrupt: &Interrupt,
) -> Report {
    let verb = match direction {
        Direction::Push => "push",
        Direction::Pull => "pull",
        Direction::Sync => "sync",
    };
    let head = o.remote_head.as_deref().unwrap_or("(no log yet)");
    let mut text = format!("{verb} {name} ({url})\n");
    if direction != Direction::Push {
        text.push_str(&format!(
            "  fetched {} new envelope(s): {} created, {} merged, {} already held, {} rejected, \
             {} ignored\n",
            o.fetched, o.created, o.merged, o.noop, o.rejected, o.ignored
        ));
    }
    if direction != Direction::Pull {
        text.push_str(&format!("  pushed {} envelope(s)\n", o.pushed));
    }
    text.push_str(&format!("  remote log at {head}\n"));
    for r in &o.rejections {
        text.push_str(&format!(
            "  rejected {}: {} {}\n",
            r.path, r.code, r.message
        ));
    }
    let mut warnings = Vec::new();
    for c in o.conflicts.iter().take(LISTED) {
        let message = match &c.placed_at {
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
        warnings.push(Warning::new("REMOTE_CONFLICT", message));
    }
    if o.conflicts.len() > LISTED {
        warnings.push(Warning::new(
            "REMOTE_CONFLICT",
            format!(
                "{} more remote paths hold other bytes than their envelopes (see data.conflicts)",
                o.conflicts.len() - LISTED
            ),
        ));
    }
    if o.ignored > 0 {
        let paths: Vec<String> = o
            .ignored_entries
            .iter()
            .take(LISTED)
            .map(|i| format!("{} ({})", i.path, i.kind))
            .collect();
        let more = o.ignored.saturating_sub(paths.len());
        warnings.push(Warning::new(
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
        ));
    }
    for u in o.unverified.iter().take(LISTED) {
        warnings.push(Warning::new(
            "UNVERIFIED_SIGNATURE",
            format!(
                "{}: {} signature(s) in the envelope were not verified by any trusted key",
                u.id, u.signatures
            ),
        ));
    }
    let failure = if o.interrupted {
        Some(Failure::interrupted(interrupt.received().unwrap_or(2)))
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
    Report {
        data: json!({
            "remote": name,
            "url": url,
            "object_format": o.object_format,
            "fetched": o.fetched,
            "created": o.created,
            "merged": o.merged,
            "noop": o.noop,
            "rejected": o.rejected,
            "ignored": o.ignored,
            "rejections": o.rejections,
            "foreign": o.ignored_entries,
            "conflicts": o.conflicts,
            "pushed": o.pushed,
            "attempts": o.attempts,
            "examined": o.examined,
            "compared": o.compared,
            "remote_head": o.remote_head,
            // The log grew here (pull) or there (push), or nothing changed.
            "effect": if o.created + o.merged + o.pushed > 0 { "updated" } else { "noop" },
        }),
        text,
        warnings,
        partial: o.rejected > 0,
        failure,
        ..Report::default()
    }
}

/// Warnings listed one by one; the rest are counted.
const LISTED: usize = 100;

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
            message: format!("{message}; try again, or raise --wait"),
        },
        SyncError::PushRejected { .. } => Failure::Unavailable {
            code: crate::error::Code::PushRejected,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connect_timeout_is_given_or_bounded_when_nobody_can_wait_it_out() {
        let s = Duration::from_secs;
        assert_eq!(connect_timeout(Some(s(2)), true), Some(s(2)));
        assert_eq!(connect_timeout(Some(s(0)), false), None);
        assert_eq!(connect_timeout(None, false), Some(DEFAULT_CONNECT_TIMEOUT));
        assert_eq!(connect_timeout(None, true), None);
    }
}
