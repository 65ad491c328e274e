//! `elench push [NAME]`, `pull [NAME]`, `sync [NAME]`: exchange the log with a git remote
//! (default `origin`) through [`elench::ops::sync`].

use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::interrupt::Interrupt;
use crate::cli::output::{Report, Warning};
use elench::ops::sync::{exchange, SyncInput, SyncOutput};
use elench::ops::Collected;
use std::io::IsTerminal;
use std::time::Duration;

pub use elench::ops::sync::Direction;

#[derive(Debug, clap::Args)]
pub struct RemoteArg {
    /// The remote (see `elench remote list`)
    #[arg(default_value = "origin", value_parser = crate::cli::values::remote_name)]
    pub name: crate::cli::values::RemoteName,
    /// How long the remote may take to answer elench's first contact, in seconds (fractions
    /// allowed; 0: no limit). Default: 30 when no person is at a terminal, none at one. An
    /// ssh remote's connection gets the same limit (ssh -o ConnectTimeout) unless
    /// GIT_SSH_COMMAND, GIT_SSH or core.sshCommand names an ssh command of your own. A
    /// remote that does not answer in time is REMOTE_UNREACHABLE (exit 12, retryable); the
    /// whole command's limit is --timeout
    #[arg(long, value_name = "SECONDS", value_parser = crate::cli::values::parse_seconds)]
    pub connect_timeout: Option<Duration>,
    /// push, sync: sign the remote's checkpoint with this log key (PEM PKCS#8 Ed25519) and
    /// ask the witness policy's witnesses to cosign it; it is written at `checkpoint` in the
    /// remote's log (docs/witness.md)
    #[arg(long, value_name = "LOG.pem")]
    pub log_key: Option<String>,
    /// push, sync: the checkpoint's origin, where no `log` line of the witness policy names
    /// the log key
    #[arg(long, value_name = "ORIGIN")]
    pub origin: Option<String>,
    /// A C2SP tlog-policy file: the witnesses, their URLs and the quorum (default: the one
    /// kept with the remote by `elench remote witnesses NAME FILE`)
    #[arg(long, value_name = "FILE")]
    pub witness_policy: Option<String>,
    /// pull, sync: also submit the remote's checkpoint to the witnesses; one that has
    /// cosigned a larger or another tree of this log makes the pull fail with REMOTE_REWOUND
    #[arg(long)]
    pub witness_fresh: bool,
}

/// Reads a tlog-policy file given on the command line.
pub fn read_witness_policy(path: &str) -> Result<elench::witness::policy::Policy, Failure> {
    let bytes = std::fs::read(path).map_err(|e| Failure::io(path, e))?;
    elench::witness::policy::Policy::parse(&bytes).map_err(|e| Failure::Invalid {
        code: elench::error::Code::BadPolicy,
        message: format!("{path} is not a witness policy (C2SP tlog-policy): {e}"),
    })
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

pub fn run(direction: Direction, a: RemoteArg, g: &Globals) -> Result<Report, Failure> {
    let ctx = g.context();
    let store = ctx.open_store()?;
    let interrupt = Interrupt::install();
    // A person at a terminal, as for git's prompt (`child_env::harden`).
    let interactive = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let input = SyncInput {
        remote: a.name.into(),
        direction,
        connect_timeout: connect_timeout(a.connect_timeout, interactive),
        wait: Duration::from_secs(g.wait),
        progress: std::io::stderr().is_terminal(),
        witness: elench::ops::sync::WitnessInput {
            log_key: match &a.log_key {
                None => None,
                Some(p) => Some(crate::cli::files::read_signing_key_file(
                    std::path::Path::new(p),
                )?),
            },
            origin: a.origin.clone(),
            policy: a
                .witness_policy
                .as_deref()
                .map(read_witness_policy)
                .transpose()?,
            fresh: a.witness_fresh,
            timeout: connect_timeout(a.connect_timeout, interactive),
        },
    };
    let warnings = Collected::default();
    let out = exchange(&store, &input, ctx.reaper(), &warnings, &|| {
        interrupt.received()
    })?;
    let mut report = report(direction, out);
    report.warnings = warnings
        .take()
        .into_iter()
        .map(|(code, message)| Warning::new(&code, message))
        .collect();
    Ok(report)
}

fn report(direction: Direction, mut o: SyncOutput) -> Report {
    let head = o.remote_head.as_deref().unwrap_or("(no log yet)");
    let mut text = format!("{} {} ({})\n", direction.verb(), o.remote, o.url);
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
    if let Some(r) = &o.rewound {
        text.push_str(&format!(
            "  the remote lost {} envelope(s) it held at {}: {}\n",
            r.count,
            r.before,
            r.ids.join(", ")
        ));
    }
    if let Some(w) = &o.witnessed {
        if let Some(c) = &w.checkpoint {
            text.push_str(&format!(
                "  checkpoint {} size {} root {}; cosigned by {}\n",
                c.origin,
                c.size,
                c.root,
                if w.cosigned_by.is_empty() {
                    "no witness".to_owned()
                } else {
                    w.cosigned_by.join(", ")
                }
            ));
        }
        for (n, why) in &w.not_cosigned {
            text.push_str(&format!("  witness {n} did not cosign: {why}\n"));
        }
    }
    if let Some(c) = &o.checkpoint {
        if let Some(cp) = &c.checkpoint {
            text.push_str(&format!(
                "  remote checkpoint {} size {} (sequence {}); cosigned by {}\n",
                cp.origin,
                cp.size,
                c.sequence_size,
                if c.cosigned_by.is_empty() {
                    "no policy witness".to_owned()
                } else {
                    c.cosigned_by.join(", ")
                }
            ));
        }
    }
    for r in &o.rejections {
        text.push_str(&format!(
            "  rejected {}: {} {}\n",
            r.path, r.code, r.message
        ));
    }
    let failure = o.failure.take();
    let data =
        serde_json::to_value(&o).unwrap_or_else(|e| serde_json::json!({"error": e.to_string()}));
    Report {
        data,
        text,
        partial: o.rejected > 0,
        failure,
        ..Report::default()
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
