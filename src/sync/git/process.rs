//! Running git: a command with the caller's `GIT_*` variables dropped, its output read
//! whole or within a time limit (the remote's first answer), and how ssh is told to give up
//! as soon (`Reach`).

use super::GitError;
use crate::reaper::{Bound, Reaper};
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// Variables that would point git at another repository or change what it reads.
pub(super) const CALLER_ENV: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_QUARANTINE_PATH",
    "GIT_TRACE_PACKET",
    "GIT_DEFAULT_HASH",
];

pub(super) fn git() -> Command {
    let mut cmd = Command::new("git");
    for v in CALLER_ENV {
        cmd.env_remove(v);
    }
    // A prompt for credentials would hang a pipeline; a person at a terminal may answer one.
    if !std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        cmd.env("GIT_TERMINAL_PROMPT", "0");
    }
    cmd.stdin(Stdio::null());
    // No descriptor of elench's (the store's database) reaches git or its helpers.
    crate::child_env::no_inherited_fds(&mut cmd);
    cmd
}

pub(super) fn spawn_error(command: &str, e: std::io::Error) -> GitError {
    if e.kind() == std::io::ErrorKind::NotFound {
        GitError::Missing("`git` is not on PATH".into())
    } else {
        GitError::Failed {
            command: command.into(),
            message: e.to_string(),
        }
    }
}

/// The last lines of git's stderr, which say what went wrong.
pub(super) fn stderr_summary(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("hint:"))
        .collect();
    let tail = &lines[lines.len().saturating_sub(4)..];
    if tail.is_empty() {
        "no message".into()
    } else {
        tail.join("; ")
    }
}

/// Runs a prepared command to completion; fails unless it exits 0.
pub(super) fn output(mut cmd: Command, name: &str) -> Result<Vec<u8>, GitError> {
    let out = cmd.output().map_err(|e| spawn_error(name, e))?;
    if !out.status.success() {
        return Err(GitError::Failed {
            command: name.into(),
            message: stderr_summary(&out.stderr),
        });
    }
    Ok(out.stdout)
}

/// How git reaches a remote: how long the remote may take to answer elench's first contact
/// (`ls-remote`), and the ssh command that makes ssh's own connection give up as soon.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reach {
    /// `None`: no bound of its own (the command's time limit still holds).
    pub connect_timeout: Option<Duration>,
    /// `GIT_SSH_COMMAND` for git's ssh transport; `None` for other transports and when the
    /// user has an ssh command of their own (`GIT_SSH_COMMAND`, `GIT_SSH` or
    /// `core.sshCommand`), which is left as it is.
    ssh_command: Option<String>,
}

impl Reach {
    /// How to reach `url` with this connect timeout.
    pub fn new(url: &str, connect_timeout: Option<Duration>) -> Reach {
        let ssh_command = match connect_timeout {
            Some(t) if is_ssh_url(url) && !own_ssh_command() => {
                Some(format!("ssh -o ConnectTimeout={}", whole_seconds(t)))
            }
            _ => None,
        };
        Reach {
            connect_timeout,
            ssh_command,
        }
    }

    pub(super) fn apply(&self, cmd: &mut Command) {
        if let Some(c) = &self.ssh_command {
            cmd.env("GIT_SSH_COMMAND", c);
        }
    }
}

/// ssh's `ConnectTimeout` takes whole seconds: a fraction is rounded up, never to 0 (none).
pub(super) fn whole_seconds(t: Duration) -> u64 {
    (t.as_secs() + u64::from(t.subsec_nanos() > 0)).max(1)
}

/// Whether git reaches `url` through ssh: `ssh://`, `git+ssh://`, `ssh+git://`, or git's
/// scp-like `[user@]host:path` (a colon before any slash).
pub fn is_ssh_url(url: &str) -> bool {
    if let Some(i) = url.find("://") {
        let scheme = url[..i].to_ascii_lowercase();
        return matches!(scheme.as_str(), "ssh" | "git+ssh" | "ssh+git");
    }
    match (url.find(':'), url.find('/')) {
        (Some(colon), Some(slash)) => colon > 0 && colon < slash,
        (Some(colon), None) => colon > 0,
        _ => false,
    }
}

/// Whether the user tells git which ssh to run: `GIT_SSH_COMMAND` or `GIT_SSH` in the
/// environment, or `core.sshCommand` in any configuration git reads here.
pub(super) fn own_ssh_command() -> bool {
    let set = |v: Option<std::ffi::OsString>| v.is_some_and(|s| !s.is_empty());
    if set(std::env::var_os("GIT_SSH_COMMAND")) || set(std::env::var_os("GIT_SSH")) {
        return true;
    }
    let mut cmd = git();
    cmd.args(["config", "--get", "core.sshCommand"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    cmd.output()
        .is_ok_and(|o| o.status.success() && !o.stdout.trim_ascii().is_empty())
}

/// How often a bounded git process is looked at.
pub(super) const POLL: Duration = Duration::from_millis(10);
/// How long the output of a process that has ended may take to arrive (a process it started
/// may still hold its pipes).
pub(super) const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// A pipe read to its end on a thread of its own, so that neither pipe of a child can fill
/// up while the other is read.
pub(super) struct Drain {
    buf: Arc<Mutex<Vec<u8>>>,
    done: mpsc::Receiver<()>,
    /// The pipe is known to be closed (its end was waited for).
    closed: bool,
}

impl Drain {
    pub(super) fn start(pipe: Option<impl Read + Send + 'static>) -> Drain {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let (tx, done) = mpsc::channel();
        if let Some(mut pipe) = pipe {
            let into = buf.clone();
            std::thread::spawn(move || {
                let mut chunk = [0u8; 8192];
                while let Ok(n @ 1..) = pipe.read(&mut chunk) {
                    into.lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .extend_from_slice(&chunk[..n]);
                }
                let _ = tx.send(());
            });
        }
        Drain {
            buf,
            done,
            closed: false,
        }
    }

    /// Waits until the pipe is closed, for at most `limit`: whether it is.
    pub(super) fn wait_closed(&mut self, limit: Duration) -> bool {
        // Disconnected: there was no pipe, or its reader ended.
        if !self.closed
            && !matches!(
                self.done.recv_timeout(limit),
                Err(mpsc::RecvTimeoutError::Timeout)
            )
        {
            self.closed = true;
        }
        self.closed
    }

    /// What was read, once the pipe is closed or [`DRAIN_GRACE`] has passed.
    pub(super) fn take(self) -> Vec<u8> {
        if !self.closed {
            let _ = self.done.recv_timeout(DRAIN_GRACE);
        }
        std::mem::take(&mut *self.buf.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// Runs a prepared command to its end, as `Command::output` does, but for no longer than
/// `limit` (if any): then it is ended and the answer is [`GitError::TimedOut`]. It ends with
/// elench, too, if elench ends first (`reaper` reaps). Without a controlling
/// terminal the command runs in a process group of its own, so that what git started (ssh,
/// a remote helper) ends with it. With one it stays in elench's, where ssh can still ask a
/// person for a passphrase (a process outside the terminal's foreground group cannot read
/// it) and Ctrl-C reaches it; then only git is ended, and ssh ends at its own
/// `ConnectTimeout`, the same limit.
pub(super) fn output_within(
    mut cmd: Command,
    name: &str,
    limit: Option<Duration>,
    reaper: &Arc<Reaper>,
) -> Result<std::process::Output, GitError> {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let own_group = std::fs::File::open("/dev/tty").is_err();
    if own_group {
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    }
    let child = cmd.spawn().map_err(|e| spawn_error(name, e))?;
    // Ended with elench too, should elench end first (the command's time limit).
    let mut child = Bound::new(child, own_group, reaper);
    let mut stdout = Drain::start(child.child_mut().stdout.take());
    let stderr = Drain::start(child.child_mut().stderr.take());
    let started = Instant::now();
    // Git closes its output as it ends: until then the wait is for that, not a fixed pause,
    // so a quick answer is taken as soon as it is complete; then a few short looks until the
    // process has ended too.
    let mut pause = Duration::from_millis(1);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if limit.is_none_or(|l| started.elapsed() < l) => {
                if stdout.wait_closed(POLL) {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(POLL);
                }
            }
            _ => break None,
        }
    };
    let Some(status) = status else {
        child.end();
        return Err(GitError::TimedOut {
            command: name.into(),
            after: limit.unwrap_or_default(),
        });
    };
    Ok(std::process::Output {
        status,
        stdout: stdout.take(),
        stderr: stderr.take(),
    })
}
