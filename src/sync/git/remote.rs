//! What a remote says: where its log is and in which object format (`ls-remote`, the first
//! contact, within the connect timeout), and what git's answer to a push means (landed, a
//! lost race, or a refusal that trying again would not change).

use super::process::{git, output_within, stderr_summary, Reach};
use super::{GitError, ObjectFormat};
use crate::reaper::Reaper;
use std::sync::Arc;

/// What `ls-remote` says about a remote's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteHead {
    pub format: ObjectFormat,
    /// The commit `refs/elench/log` points at, or None when the remote has no log yet.
    pub head: Option<String>,
}

/// Asks the remote where its log is and which object format it uses (read from the
/// protocol's capability advertisement; then from the length of an advertised id; a remote
/// that says neither is taken as SHA-1, git's default). It is elench's first contact with
/// the remote, so it is what the connect timeout bounds: the whole exchange, whatever the
/// transport.
/// `reaper` ends git should elench end first.
pub fn ls_remote(
    url: &str,
    refname: &str,
    reach: &Reach,
    reaper: &Arc<Reaper>,
) -> Result<RemoteHead, GitError> {
    let mut cmd = git();
    cmd.args(["-c", "protocol.version=2", "ls-remote", "--", url, refname])
        .env("GIT_TRACE_PACKET", "1");
    reach.apply(&mut cmd);
    let out = output_within(cmd, "ls-remote", reach.connect_timeout, reaper)?;
    if !out.status.success() {
        return Err(GitError::Failed {
            command: "ls-remote".into(),
            message: stderr_summary(
                &out.stderr
                    .split(|b| *b == b'\n')
                    .filter(|l| !l.windows(7).any(|w| w == b"packet:"))
                    .flat_map(|l| l.iter().copied().chain([b'\n']))
                    .collect::<Vec<u8>>(),
            ),
        });
    }
    let trace = String::from_utf8_lossy(&out.stderr);
    // Protocol v2 sends it as a capability line, v0 among the first ref's capabilities;
    // either way it arrives on a line git traces as received ("<").
    let advertised = trace.lines().filter(|l| l.contains('<')).find_map(|l| {
        let value = l.split("object-format=").nth(1)?;
        let end = value
            .find(|c: char| c.is_whitespace() || c == '\\' || c == '\0')
            .unwrap_or(value.len());
        ObjectFormat::from_name(&value[..end])
    });
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut head = None;
    for line in stdout.lines() {
        let mut parts = line.split('\t');
        if let (Some(oid), Some(name)) = (parts.next(), parts.next()) {
            if name == refname {
                head = Some(oid.to_owned());
            }
        }
    }
    let format = advertised
        .or_else(|| head.as_deref().and_then(ObjectFormat::from_oid))
        .unwrap_or(ObjectFormat::Sha1);
    if let Some(h) = &head {
        if ObjectFormat::from_oid(h) != Some(format) || !is_hex(h) {
            return Err(GitError::Unexpected {
                command: "ls-remote".into(),
                detail: format!("{refname} is {h:?}, not a {} object id", format.as_str()),
            });
        }
    }
    Ok(RemoteHead { format, head })
}

pub(super) fn is_hex(s: &str) -> bool {
    s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Whether a push landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pushed {
    Done,
    /// Someone else's update came first (the ref moved on: not a fast-forward any more, or
    /// locked or changed while the remote applied it): fetch, merge and try again. git's
    /// words.
    Lost(String),
    /// The remote will not take the update, whoever pushes first: a hook declined it, the
    /// ref is protected, the credentials may not write. Trying again gets the same answer.
    /// git's words, and the remote's own when it gave any.
    Refused(String),
}

/// What git's porcelain summary of a refused ref (`[rejected] (fetch first)`, `[remote
/// rejected] (pre-receive hook declined)`) says happened: a lost race when the ref moved on
/// or was busy, else a refusal. What the remote printed (`remote:` lines of `stderr`) is
/// quoted with a refusal.
pub(super) fn refused_ref(summary: &str, stderr: &[u8]) -> Pushed {
    const RACE: &[&str] = &[
        "non-fast-forward",
        "fetch first",
        "stale info",
        "failed to lock",
        "cannot lock",
        "failed to update ref",
        "incorrect old value",
        "but expected",
    ];
    let lower = summary.to_ascii_lowercase();
    if RACE.iter().any(|w| lower.contains(w)) {
        return Pushed::Lost(summary.to_owned());
    }
    match remote_said(stderr) {
        Some(said) => Pushed::Refused(format!("{summary}; the remote said: {said}")),
        None => Pushed::Refused(summary.to_owned()),
    }
}

/// The remote's own lines in git's stderr (`remote: …`), joined, the last few, each cut to
/// a line's worth.
pub(super) fn remote_said(stderr: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<String> = text
        .split(['\r', '\n'])
        .filter_map(|l| l.trim().strip_prefix("remote:"))
        .map(str::trim)
        // Not the remote's progress ("Resolving deltas: 100% (3/3)").
        .filter(|l| !l.is_empty() && !l.contains("% ("))
        .map(|l| l.chars().filter(|c| !c.is_control()).take(300).collect())
        .collect();
    let tail = &lines[lines.len().saturating_sub(6)..];
    (!tail.is_empty()).then(|| tail.join(" / "))
}

/// Whether git's stderr for a push that reported no ref says the remote refused the
/// credentials' right to write (an HTTP 403, an ssh server's "permission denied", a
/// read-only token), rather than that the connection failed.
pub(super) fn says_no_write_access(stderr: &[u8]) -> bool {
    let text = String::from_utf8_lossy(stderr).to_ascii_lowercase();
    [
        "error: 403",
        "returned error: 403",
        "permission to",
        "permission denied",
        "write access",
        "not allowed to push",
        "read-only",
        "read only",
        "forbidden",
    ]
    .iter()
    .any(|w| text.contains(w))
}

/// How much of a push's stderr is kept to quote.
pub(super) const PUSH_STDERR_KEPT: usize = 64 << 10;
