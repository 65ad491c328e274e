//! The `git` executable as object store and transport.
//!
//! Each store keeps private bare repositories (one per object format, since a repository
//! can only exchange objects with remotes of its own format). Objects are written in bulk
//! with `fast-import`, read in bulk with `cat-file --batch`, compared with `diff-tree`, and
//! moved with `fetch` / `push`. Every call names the private repository explicitly and drops
//! the caller's `GIT_*` variables, so running inside a checkout or a hook changes nothing.

use crate::reaper::{Bound, Reaper};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// The hash a repository names its objects with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ObjectFormat {
    Sha1,
    Sha256,
}

impl ObjectFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectFormat::Sha1 => "sha1",
            ObjectFormat::Sha256 => "sha256",
        }
    }

    fn from_name(name: &str) -> Option<ObjectFormat> {
        match name {
            "sha1" => Some(ObjectFormat::Sha1),
            "sha256" => Some(ObjectFormat::Sha256),
            _ => None,
        }
    }

    fn from_oid(oid: &str) -> Option<ObjectFormat> {
        match oid.len() {
            40 => Some(ObjectFormat::Sha1),
            64 => Some(ObjectFormat::Sha256),
            _ => None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("cannot run git ({0}); elench needs the git executable for remotes")]
    Missing(String),
    #[error("git {command} failed: {message}")]
    Failed { command: String, message: String },
    #[error("git {command}: {detail}")]
    Unexpected { command: String, detail: String },
    /// The remote did not answer within the connect timeout; git (and what it started) was
    /// ended.
    #[error("git {command} got no answer within {} s", after.as_secs_f64())]
    TimedOut { command: String, after: Duration },
}

/// Variables that would point git at another repository or change what it reads.
const CALLER_ENV: &[&str] = &[
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

fn git() -> Command {
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

fn spawn_error(command: &str, e: std::io::Error) -> GitError {
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
fn stderr_summary(stderr: &[u8]) -> String {
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
fn output(mut cmd: Command, name: &str) -> Result<Vec<u8>, GitError> {
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

    fn apply(&self, cmd: &mut Command) {
        if let Some(c) = &self.ssh_command {
            cmd.env("GIT_SSH_COMMAND", c);
        }
    }
}

/// ssh's `ConnectTimeout` takes whole seconds: a fraction is rounded up, never to 0 (none).
fn whole_seconds(t: Duration) -> u64 {
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
fn own_ssh_command() -> bool {
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
const POLL: Duration = Duration::from_millis(10);
/// How long the output of a process that has ended may take to arrive (a process it started
/// may still hold its pipes).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// A pipe read to its end on a thread of its own, so that neither pipe of a child can fill
/// up while the other is read.
struct Drain {
    buf: Arc<Mutex<Vec<u8>>>,
    done: mpsc::Receiver<()>,
}

impl Drain {
    fn start(pipe: Option<impl Read + Send + 'static>) -> Drain {
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
        Drain { buf, done }
    }

    /// What was read, once the pipe is closed or [`DRAIN_GRACE`] has passed.
    fn take(self) -> Vec<u8> {
        let _ = self.done.recv_timeout(DRAIN_GRACE);
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
fn output_within(
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
    let stdout = Drain::start(child.child_mut().stdout.take());
    let stderr = Drain::start(child.child_mut().stderr.take());
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if limit.is_none_or(|l| started.elapsed() < l) => std::thread::sleep(POLL),
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

fn is_hex(s: &str) -> bool {
    s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// One entry of a tree listing: a file's path and its blob id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub path: String,
    pub blob: String,
}

/// An entry of a tree listing under the layout folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listed {
    /// A file (of either mode) or a symbolic link: a blob, whose bytes are read.
    File(Entry),
    /// A submodule (a gitlink, naming a commit of another repository): no bytes to read.
    Submodule(String),
}

/// The git mode of a submodule entry.
const SUBMODULE_MODE: &str = "160000";

/// A blob as `cat-file --batch` returned it.
#[derive(Debug)]
pub enum Blob {
    Content(Vec<u8>),
    /// Larger than the limit asked for; not read.
    TooLarge(u64),
    /// Absent, or not a blob.
    Missing,
}

/// What a tree holds at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum At {
    /// Nothing (a path through a file also holds nothing: git cannot look below a file).
    Nothing,
    Blob {
        oid: String,
        size: u64,
    },
    Tree(String),
    /// Another kind of object (a submodule's commit).
    Other(String),
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
fn refused_ref(summary: &str, stderr: &[u8]) -> Pushed {
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
fn remote_said(stderr: &[u8]) -> Option<String> {
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
fn says_no_write_access(stderr: &[u8]) -> bool {
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
const PUSH_STDERR_KEPT: usize = 64 << 10;

/// A private bare repository.
#[derive(Debug, Clone)]
pub struct Repo {
    dir: PathBuf,
    pub format: ObjectFormat,
    /// Let git draw its progress on the terminal (stderr).
    pub progress: bool,
    /// How `fetch` and `push` reach the remote (the ssh command bounding ssh's connection).
    pub reach: Reach,
}

impl Repo {
    /// Opens the repository at `dir`, creating it first if needed. Creation happens in a
    /// temporary directory that is renamed into place, so a crash never leaves half a
    /// repository where the next run would look.
    pub fn open_or_init(dir: &Path, format: ObjectFormat) -> Result<Repo, GitError> {
        let repo = Repo {
            dir: dir.to_path_buf(),
            format,
            progress: false,
            reach: Reach::default(),
        };
        if dir.join("HEAD").is_file() {
            return Ok(repo);
        }
        let parent = dir.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent).map_err(|e| GitError::Failed {
            command: "init".into(),
            message: format!("{}: {e}", parent.display()),
        })?;
        let tmp = parent.join(format!(".init-{}-{}", format.as_str(), std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let mut cmd = git();
        cmd.args(["init", "--quiet", "--bare"])
            .arg(format!("--object-format={}", format.as_str()))
            .arg(&tmp);
        output(cmd, "init")?;
        // Nothing is ever pruned here (state files name commits no ref may hold); objects
        // always arrive as packs, which `consolidate` merges; hooks have no business here.
        // Written straight into the new repository's config: one process fewer per setting.
        let settings = "[gc]\n\tauto = 0\n[maintenance]\n\tauto = false\n\
                        [fastimport]\n\tunpackLimit = 1\n[fetch]\n\tunpackLimit = 1\n\
                        \twriteCommitGraph = false\n[core]\n\thooksPath = hooks\n\
                        \tlogAllRefUpdates = false\n";
        let config = tmp.join("config");
        std::fs::OpenOptions::new()
            .append(true)
            .open(&config)
            .and_then(|mut f| f.write_all(settings.as_bytes()).and_then(|_| f.sync_all()))
            .map_err(|e| GitError::Failed {
                command: "init".into(),
                message: format!("{}: {e}", config.display()),
            })?;
        match std::fs::rename(&tmp, dir) {
            Ok(()) => {}
            // Another process made it first: use theirs.
            Err(_) if dir.join("HEAD").is_file() => {
                let _ = std::fs::remove_dir_all(&tmp);
            }
            Err(e) => {
                let _ = std::fs::remove_dir_all(&tmp);
                return Err(GitError::Failed {
                    command: "init".into(),
                    message: format!("{}: {e}", dir.display()),
                });
            }
        }
        Ok(repo)
    }

    fn cmd(&self) -> Command {
        let mut cmd = git();
        cmd.arg("--git-dir").arg(&self.dir);
        cmd
    }

    fn run(&self, args: &[&str], name: &str) -> Result<Vec<u8>, GitError> {
        let mut cmd = self.cmd();
        cmd.args(args);
        output(cmd, name)
    }

    /// Every exchange adds a pack; lookups slow down as packs pile up, so past a bound they
    /// are merged into one. Nothing is dropped (unreachable objects are kept too), and an
    /// interrupted repack leaves the old packs in place.
    pub fn consolidate(&self, max_packs: usize) -> Result<bool, GitError> {
        let packs = std::fs::read_dir(self.dir.join("objects").join("pack"))
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".pack"))
                    .count()
            })
            .unwrap_or(0);
        if packs <= max_packs {
            return Ok(false);
        }
        self.run(
            &[
                "repack",
                "-a",
                "-d",
                "-q",
                "--keep-unreachable",
                "--no-write-bitmap-index",
            ],
            "repack",
        )?;
        Ok(true)
    }

    /// Whether the repository holds commit `oid` (itself a commit: a tag that points at one
    /// is not).
    pub fn has_commit(&self, oid: &str) -> Result<bool, GitError> {
        Ok(self.object_type(oid)?.as_deref() == Some("commit"))
    }

    /// The type of object `oid` (`commit`, `tree`, `blob`, `tag`), or None when the
    /// repository does not hold it.
    pub fn object_type(&self, oid: &str) -> Result<Option<String>, GitError> {
        if ObjectFormat::from_oid(oid) != Some(self.format) || !is_hex(oid) {
            return Ok(None);
        }
        let out = self
            .cmd()
            .args(["cat-file", "-t", oid])
            .stderr(Stdio::null())
            .output()
            .map_err(|e| spawn_error("cat-file", e))?;
        if !out.status.success() {
            return Ok(None);
        }
        Ok(Some(String::from_utf8_lossy(&out.stdout).trim().to_owned()))
    }

    /// Points `refname` at `oid` (keeping what it references safe from pruning).
    pub fn update_ref(&self, refname: &str, oid: &str) -> Result<(), GitError> {
        self.run(&["update-ref", refname, oid], "update-ref")
            .map(drop)
    }

    fn delete_ref(&self, refname: &str) -> Result<(), GitError> {
        self.run(&["update-ref", "-d", refname], "update-ref")
            .map(drop)
    }

    fn rev_parse(&self, refname: &str) -> Result<String, GitError> {
        let out = self.run(&["rev-parse", "--verify", "--quiet", refname], "rev-parse")?;
        let oid = String::from_utf8_lossy(&out).trim().to_owned();
        if ObjectFormat::from_oid(&oid) != Some(self.format) {
            return Err(GitError::Unexpected {
                command: "rev-parse".into(),
                detail: format!("{refname} resolved to {oid:?}"),
            });
        }
        Ok(oid)
    }

    /// Fetches the remote's log and returns the commit fetched (also recorded, best effort,
    /// in `tracking`). The fetch lands on a ref of its own, so a git process left over from
    /// a killed run can never hold a lock this one needs.
    pub fn fetch(&self, url: &str, remote_ref: &str, tracking: &str) -> Result<String, GitError> {
        let landing = unique_ref("fetch");
        let mut cmd = self.cmd();
        cmd.args([
            "fetch",
            "--no-tags",
            "--no-write-fetch-head",
            "--no-recurse-submodules",
        ]);
        // Quiet but for progress: no list of updated refs (one is elench's internal ref).
        cmd.arg("--quiet");
        if self.progress {
            cmd.arg("--progress");
        }
        cmd.args(["--", url, &format!("+{remote_ref}:{landing}")]);
        self.reach.apply(&mut cmd);
        if self.progress {
            cmd.stderr(Stdio::inherit());
            let status = cmd.status().map_err(|e| spawn_error("fetch", e))?;
            if !status.success() {
                return Err(GitError::Failed {
                    command: "fetch".into(),
                    message: "see git's message above".into(),
                });
            }
        } else {
            output(cmd, "fetch")?;
        }
        let oid = self.rev_parse(&landing)?;
        // Drop the landing ref and point the tracking ref at the head in one process; this
        // is bookkeeping, so a failure (a lock held by a killed run's git) is ignored.
        let mut cmd = self.cmd();
        cmd.args(["update-ref", "--stdin"]).stdin(Stdio::piped());
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        if let Ok(mut child) = cmd.spawn() {
            if let Some(mut w) = child.stdin.take() {
                let _ = write!(w, "delete {landing}\nupdate {tracking} {oid}\n");
            }
            let _ = child.wait();
        }
        Ok(oid)
    }

    /// Pushes `oid` to the remote's `remote_ref`, as a fast-forward only. Tells a race lost
    /// to another pusher ([`Pushed::Lost`]) from a remote that will not take the update at
    /// all ([`Pushed::Refused`]).
    pub fn push(&self, url: &str, oid: &str, remote_ref: &str) -> Result<Pushed, GitError> {
        let mut cmd = self.cmd();
        cmd.args(["push", "--porcelain", "--no-verify"]);
        // Quiet but for progress: no list of updated refs (one is elench's internal ref).
        cmd.arg("--quiet");
        if self.progress {
            cmd.arg("--progress");
        }
        cmd.args(["--", url, &format!("{oid}:{remote_ref}")]);
        self.reach.apply(&mut cmd);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| spawn_error("push", e))?;
        // stderr is kept (to quote what the remote said) and, on a terminal, shown as it
        // comes (git's progress).
        let echo = self.progress;
        let err_pipe = child.stderr.take();
        let errs = std::thread::spawn(move || {
            let mut kept = Vec::new();
            if let Some(mut pipe) = err_pipe {
                let mut chunk = [0u8; 8192];
                while let Ok(n @ 1..) = pipe.read(&mut chunk) {
                    if echo {
                        let _ = std::io::stderr().write_all(&chunk[..n]);
                    }
                    kept.extend_from_slice(&chunk[..n]);
                    if kept.len() > PUSH_STDERR_KEPT {
                        kept.drain(..kept.len() - PUSH_STDERR_KEPT);
                    }
                }
            }
            kept
        });
        let mut stdout = Vec::new();
        if let Some(mut out) = child.stdout.take() {
            let _ = out.read_to_end(&mut stdout);
        }
        let status = child.wait().map_err(|e| spawn_error("push", e))?;
        let stderr = errs.join().unwrap_or_default();
        let stdout = String::from_utf8_lossy(&stdout);
        // Porcelain lines: "<flag>\t<from>:<to>\t<summary>"; '!' is a refused ref.
        let refused = stdout
            .lines()
            .find(|l| l.starts_with('!') && l.contains(remote_ref));
        if status.success() && refused.is_none() {
            return Ok(Pushed::Done);
        }
        if let Some(line) = refused {
            let why = line.split('\t').nth(2).unwrap_or("[rejected]");
            return Ok(refused_ref(why, &stderr));
        }
        if says_no_write_access(&stderr) {
            return Ok(Pushed::Refused(stderr_summary(&stderr)));
        }
        Err(GitError::Failed {
            command: "push".into(),
            message: stderr_summary(&stderr),
        })
    }

    /// Entries under the layout folder that are in `new` and not (or not the same, or not of
    /// the same type: a file become a symbolic link) in `old`.
    pub fn added(&self, old: &str, new: &str, dir: &str) -> Result<Vec<Entry>, GitError> {
        self.collect_files(Some(old), new, dir)
    }

    /// Every file (and submodule) under `dir` in `commit`, or with `old`, every one that is
    /// in `commit` and not (not the same, not of the same type) in `old`: handed to `each` a
    /// page of at most `page` at a time as git lists them, so that however large the tree,
    /// only one page is held. `each` returns false to stop early.
    pub fn entries<E: From<GitError>>(
        &self,
        old: Option<&str>,
        commit: &str,
        dir: &str,
        page: usize,
        mut each: impl FnMut(Vec<Listed>) -> Result<bool, E>,
    ) -> Result<(), E> {
        let (name, args): (&str, Vec<&str>) = match old {
            // -z records: ":<mode> <mode> <oid> <oid> <status>\0<path>\0"
            Some(old) => (
                "diff-tree",
                vec![
                    "diff-tree",
                    "-r",
                    "-z",
                    "--no-renames",
                    "--diff-filter=AMT",
                    old,
                    commit,
                    "--",
                    dir,
                ],
            ),
            // -z records: "<mode> <type> <oid>\t<path>\0"
            None => ("ls-tree", vec!["ls-tree", "-r", "-z", commit, "--", dir]),
        };
        let mut child = self
            .cmd()
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| spawn_error(name, e))?;
        let stderr = Drain::start(child.stderr.take());
        let Some(stdout) = child.stdout.take() else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(GitError::Unexpected {
                command: name.into(),
                detail: "no stdout pipe".into(),
            }
            .into());
        };
        let mut reader = BufReader::new(stdout);
        let unexpected = |detail: String| GitError::Unexpected {
            command: name.into(),
            detail,
        };
        let mut field = Vec::new();
        let mut read_field = |reader: &mut BufReader<std::process::ChildStdout>| {
            field.clear();
            match reader.read_until(0, &mut field) {
                Ok(0) => Ok(None),
                Ok(_) => {
                    if field.last() == Some(&0) {
                        field.pop();
                    }
                    Ok(Some(String::from_utf8_lossy(&field).into_owned()))
                }
                Err(e) => Err(unexpected(e.to_string())),
            }
        };
        let mut pending: Vec<Listed> = Vec::new();
        let mut stopped = false;
        let result: Result<(), E> = (|| {
            while let Some(rec) = read_field(&mut reader)? {
                if rec.is_empty() {
                    continue;
                }
                // The mode and object of the entry as `commit` has it, and its path.
                let (mode, oid, path) = if old.is_some() {
                    let path = read_field(&mut reader)?
                        .ok_or_else(|| unexpected("a record without a path".into()))?;
                    let parts: Vec<&str> = rec.trim_start_matches(':').split(' ').collect();
                    let (Some(mode), Some(oid)) = (parts.get(1), parts.get(3)) else {
                        return Err(unexpected(format!("record {rec:?}")).into());
                    };
                    ((*mode).to_owned(), (*oid).to_owned(), path)
                } else {
                    let (meta, path) = rec
                        .split_once('\t')
                        .ok_or_else(|| unexpected(format!("record {rec:?}")))?;
                    let parts: Vec<&str> = meta.split(' ').collect();
                    let (Some(mode), Some(oid)) = (parts.first(), parts.get(2)) else {
                        return Err(unexpected(format!("record {rec:?}")).into());
                    };
                    ((*mode).to_owned(), (*oid).to_owned(), path.to_owned())
                };
                if is_file_mode(&mode) {
                    pending.push(Listed::File(Entry { path, blob: oid }));
                } else if mode == SUBMODULE_MODE {
                    pending.push(Listed::Submodule(path));
                }
                if pending.len() >= page && !each(std::mem::take(&mut pending))? {
                    stopped = true;
                    return Ok(());
                }
            }
            if !pending.is_empty() && !each(std::mem::take(&mut pending))? {
                stopped = true;
            }
            Ok(())
        })();
        drop(reader);
        if result.is_err() || stopped {
            let _ = child.kill();
            let _ = child.wait();
            return result;
        }
        let status = child.wait().map_err(|e| spawn_error(name, e))?;
        if !status.success() {
            return Err(GitError::Failed {
                command: name.into(),
                message: stderr_summary(&stderr.take()),
            }
            .into());
        }
        Ok(())
    }

    /// The files of [`Repo::entries`], all of them.
    fn collect_files(
        &self,
        old: Option<&str>,
        commit: &str,
        dir: &str,
    ) -> Result<Vec<Entry>, GitError> {
        let mut files = Vec::new();
        self.entries::<GitError>(old, commit, dir, 4096, |page| {
            files.extend(page.into_iter().filter_map(|l| match l {
                Listed::File(e) => Some(e),
                Listed::Submodule(_) => None,
            }));
            Ok(true)
        })?;
        Ok(files)
    }

    /// Whether anything under `dir` in `old` is missing from `new`, or changed there (its
    /// content, or its type).
    pub fn lost_any(&self, old: &str, new: &str, dir: &str) -> Result<bool, GitError> {
        let status = self
            .cmd()
            .args([
                "diff-tree",
                "-r",
                "--quiet",
                "--no-renames",
                "--diff-filter=DMT",
                old,
                new,
                "--",
                dir,
            ])
            .stderr(Stdio::null())
            .status()
            .map_err(|e| spawn_error("diff-tree", e))?;
        match status.code() {
            Some(0) => Ok(false),
            Some(1) => Ok(true),
            _ => Err(GitError::Failed {
                command: "diff-tree".into(),
                message: format!("comparing {old} with {new} ended with {status}"),
            }),
        }
    }

    /// Every file under `dir` in `commit`.
    pub fn list(&self, commit: &str, dir: &str) -> Result<Vec<Entry>, GitError> {
        self.collect_files(None, commit, dir)
    }

    /// For each `(treeish, path)`, what the tree of `treeish` holds at `path`. Asking for one
    /// name in a tree already found costs one tree read, where a path from the commit costs
    /// one per folder on the way.
    pub fn at_each(&self, asked: &[(&str, &str)]) -> Result<Vec<At>, GitError> {
        let requests: Vec<String> = asked.iter().map(|(t, p)| format!("{t}:{p}\n")).collect();
        let mut answers = Vec::with_capacity(asked.len());
        self.batch("--batch-check", requests, |reader| {
            for _ in 0..asked.len() {
                let mut line = String::new();
                if reader.read_line(&mut line)? == 0 {
                    return Err(unexpected_eof());
                }
                let line = line.trim_end();
                // "<oid> <type> <size>", or "<what was asked> missing" (nothing there, or
                // a path through a file).
                if line.ends_with(" missing") {
                    answers.push(At::Nothing);
                    continue;
                }
                let parts: Vec<&str> = line.split(' ').collect();
                answers.push(match parts.as_slice() {
                    [oid, "blob", size] => At::Blob {
                        oid: (*oid).to_owned(),
                        size: size.parse().map_err(|_| bad_header(line))?,
                    },
                    [oid, "tree", _] => At::Tree((*oid).to_owned()),
                    [_, kind, _] => At::Other((*kind).to_owned()),
                    _ => return Err(bad_header(line)),
                });
            }
            Ok(())
        })?;
        Ok(answers)
    }

    /// Reads blobs in bulk, handing each to `each` in order; blobs larger than `limit` are
    /// not read (a remote is trusted for transport only, so its sizes are not either).
    pub fn read_blobs(
        &self,
        oids: &[String],
        limit: u64,
        mut each: impl FnMut(usize, Blob) -> std::io::Result<bool>,
    ) -> Result<(), GitError> {
        let requests: Vec<String> = oids.iter().map(|o| format!("{o}\n")).collect();
        self.batch("--batch", requests, |reader| {
            for i in 0..oids.len() {
                let mut header = String::new();
                if reader.read_line(&mut header)? == 0 {
                    return Err(unexpected_eof());
                }
                let parts: Vec<&str> = header.trim_end().split(' ').collect();
                let blob = match parts.as_slice() {
                    [_, "blob", size] => {
                        let size: u64 = size.parse().map_err(|_| bad_header(&header))?;
                        if size > limit {
                            std::io::copy(
                                &mut reader.by_ref().take(size + 1),
                                &mut std::io::sink(),
                            )?;
                            Blob::TooLarge(size)
                        } else {
                            let mut buf = vec![0; size as usize + 1];
                            reader.read_exact(&mut buf)?;
                            buf.pop();
                            Blob::Content(buf)
                        }
                    }
                    [_, "missing"] => Blob::Missing,
                    [_, _kind, size] => {
                        let size: u64 = size.parse().map_err(|_| bad_header(&header))?;
                        std::io::copy(&mut reader.by_ref().take(size + 1), &mut std::io::sink())?;
                        Blob::Missing
                    }
                    _ => return Err(bad_header(&header)),
                };
                if !each(i, blob)? {
                    break;
                }
            }
            Ok(())
        })
    }

    /// Runs `cat-file MODE`, feeding `requests` from a thread (so neither pipe can fill up
    /// while the other waits) and reading the answers with `read`.
    fn batch(
        &self,
        mode: &str,
        requests: Vec<String>,
        read: impl FnOnce(&mut BufReader<std::process::ChildStdout>) -> std::io::Result<()>,
    ) -> Result<(), GitError> {
        if requests.is_empty() {
            return Ok(());
        }
        let mut child = self
            .cmd()
            .args(["cat-file", mode])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| spawn_error("cat-file", e))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(GitError::Unexpected {
                command: "cat-file".into(),
                detail: "no pipes".into(),
            });
        };
        let writer = std::thread::spawn(move || {
            let mut w = BufWriter::new(stdin);
            for r in &requests {
                if w.write_all(r.as_bytes()).is_err() {
                    return;
                }
            }
            let _ = w.flush();
        });
        let mut reader = BufReader::new(stdout);
        let result = read(&mut reader);
        drop(reader);
        if result.is_err() {
            let _ = child.kill();
        }
        let _ = writer.join();
        let out = child
            .wait_with_output()
            .map_err(|e| spawn_error("cat-file", e))?;
        match result {
            Ok(()) => Ok(()),
            Err(e) => Err(GitError::Failed {
                command: format!("cat-file {mode}"),
                message: format!("{e}; {}", stderr_summary(&out.stderr)),
            }),
        }
    }

    /// The commits of `head`'s first-parent chain that `base` does not reach (all of them
    /// without `base`), oldest first, each with the files under `dirs` it adds or changes
    /// against its first parent (a root commit: every file), sorted by the bytes of their
    /// paths. Submodules and deletions add nothing. Also returns the first parent of the
    /// oldest commit listed. Used for a remote's sequence of envelopes (`witness`).
    #[allow(clippy::type_complexity)]
    pub fn first_parent_additions(
        &self,
        base: Option<&str>,
        head: &str,
        dirs: &[&str],
    ) -> Result<(Option<String>, Vec<(String, Vec<Entry>)>), GitError> {
        let mut args = vec!["rev-list", "--first-parent", "--reverse", "--parents", head];
        let not_base;
        if let Some(b) = base {
            not_base = format!("^{b}");
            args.push(&not_base);
        }
        let listed = self.run(&args, "rev-list")?;
        let mut commits = Vec::new();
        let mut requests = String::new();
        let mut first_parent = None;
        for line in String::from_utf8_lossy(&listed).lines() {
            let mut ids = line.split(' ');
            let (Some(c), parent) = (ids.next(), ids.next()) else {
                continue;
            };
            if commits.is_empty() {
                first_parent = parent.map(str::to_owned);
            }
            commits.push((c.to_owned(), Vec::new()));
            requests.push_str(c);
            if let Some(p) = parent {
                requests.push(' ');
                requests.push_str(p);
            }
            requests.push('\n');
        }
        if commits.is_empty() {
            return Ok((None, commits));
        }
        let mut cmd = self.cmd();
        cmd.args([
            "diff-tree",
            "--stdin",
            "-r",
            "-z",
            "--root",
            "--no-renames",
            "--",
        ])
        .args(dirs)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| spawn_error("diff-tree", e))?;
        let stdin = child.stdin.take();
        let writer = std::thread::spawn(move || {
            if let Some(mut w) = stdin {
                let _ = w.write_all(requests.as_bytes());
            }
        });
        let out = child
            .wait_with_output()
            .map_err(|e| spawn_error("diff-tree", e))?;
        let _ = writer.join();
        if !out.status.success() {
            return Err(GitError::Failed {
                command: "diff-tree".into(),
                message: stderr_summary(&out.stderr),
            });
        }
        let index: std::collections::HashMap<&str, usize> = commits
            .iter()
            .enumerate()
            .map(|(i, (c, _))| (c.as_str(), i))
            .collect();
        let mut found: Vec<Vec<Entry>> = vec![Vec::new(); commits.len()];
        let mut fields = out.stdout.split(|&b| b == 0).filter(|f| !f.is_empty());
        let mut current: Option<usize> = None;
        let bad = |what: &str| GitError::Unexpected {
            command: "diff-tree".into(),
            detail: what.to_owned(),
        };
        while let Some(f) = fields.next() {
            let f = String::from_utf8_lossy(f);
            // Skip the newline that may follow a commit id.
            let f = f.trim_start_matches('\n');
            if let Some(raw) = f.strip_prefix(':') {
                let path = fields
                    .next()
                    .ok_or_else(|| bad("an entry without its path"))?;
                let parts: Vec<&str> = raw.split(' ').collect();
                let [_, mode, _, blob, status] = parts.as_slice() else {
                    return Err(bad(&format!("entry {raw:?}")));
                };
                let i = current.ok_or_else(|| bad("an entry before any commit"))?;
                if *status != "D" && is_file_mode(mode) {
                    found[i].push(Entry {
                        path: String::from_utf8_lossy(path).into_owned(),
                        blob: (*blob).to_owned(),
                    });
                }
            } else {
                let id = f.trim();
                current = Some(
                    *index
                        .get(id)
                        .ok_or_else(|| bad(&format!("commit {id:?}")))?,
                );
            }
        }
        for ((_, entries), mut f) in commits.iter_mut().zip(found) {
            f.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
            *entries = f;
        }
        Ok((first_parent, commits))
    }

    /// Starts writing one commit with `fast-import`.
    pub fn fast_import(&self) -> Result<FastImport, GitError> {
        let mut child = self
            .cmd()
            .args(["fast-import", "--quiet", "--force", "--done"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| spawn_error("fast-import", e))?;
        let Some(stdin) = child.stdin.take() else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(GitError::Unexpected {
                command: "fast-import".into(),
                detail: "no stdin pipe".into(),
            });
        };
        Ok(FastImport {
            repo: self.clone(),
            child: Some(child),
            stdin: Some(BufWriter::with_capacity(1 << 20, stdin)),
            refname: unique_ref("import"),
            started: false,
            files: 0,
        })
    }
}

/// A ref name no other process uses: for carrying one result out of one git command.
fn unique_ref(purpose: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("refs/elench/tmp/{purpose}-{}-{nanos}", std::process::id())
}

/// Entries whose blob a pull reads: files of either mode, and symbolic links, whose blob is
/// bytes like any other. Push counts a path as an envelope's by its bytes whatever its mode,
/// so pull must read every blob push could have counted.
fn is_file_mode(mode: &str) -> bool {
    matches!(mode, "100644" | "100755" | "120000")
}

fn unexpected_eof() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "git stopped answering")
}

fn bad_header(header: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("unreadable cat-file header {:?}", header.trim_end()),
    )
}

/// One commit being written by `git fast-import`. Dropping it unfinished aborts the import
/// (the stream never says `done`), leaving nothing behind but garbage objects.
pub struct FastImport {
    repo: Repo,
    child: Option<Child>,
    stdin: Option<BufWriter<ChildStdin>>,
    refname: String,
    started: bool,
    files: usize,
}

impl FastImport {
    fn write(&mut self, bytes: &[u8]) -> Result<(), GitError> {
        let Some(w) = self.stdin.as_mut() else {
            return Err(GitError::Unexpected {
                command: "fast-import".into(),
                detail: "the stream is closed".into(),
            });
        };
        match w.write_all(bytes) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.failure(e.to_string())),
        }
    }

    /// Why fast-import stopped: its own message, if it has exited.
    fn failure(&mut self, fallback: String) -> GitError {
        self.stdin = None;
        let message = match self.child.take().map(Child::wait_with_output) {
            Some(Ok(out)) if !out.status.success() => stderr_summary(&out.stderr),
            _ => fallback,
        };
        GitError::Failed {
            command: "fast-import".into(),
            message,
        }
    }

    /// Opens the commit: fixed identity and message, on top of `parent` (or a root commit).
    pub fn begin(&mut self, parent: Option<&str>) -> Result<(), GitError> {
        let mut head = format!(
            "reset {r}\ncommit {r}\nauthor {id}\ncommitter {id}\ndata {n}\n{msg}",
            r = self.refname,
            id = super::layout::IDENTITY,
            n = super::layout::MESSAGE.len(),
            msg = super::layout::MESSAGE,
        );
        if let Some(p) = parent {
            head.push_str(&format!("from {p}\n"));
        }
        self.write(head.as_bytes())?;
        self.started = true;
        Ok(())
    }

    /// Adds one file to the commit's tree (on top of the parent's tree).
    pub fn add(&mut self, path: &str, bytes: &[u8]) -> Result<(), GitError> {
        let header = format!("M 100644 inline {path}\ndata {}\n", bytes.len());
        self.write(header.as_bytes())?;
        self.write(bytes)?;
        self.write(b"\n")?;
        self.files += 1;
        Ok(())
    }

    pub fn files(&self) -> usize {
        self.files
    }

    /// Ends the stream and returns the new commit's id.
    pub fn finish(mut self) -> Result<String, GitError> {
        if !self.started {
            return Err(GitError::Unexpected {
                command: "fast-import".into(),
                detail: "no commit was begun".into(),
            });
        }
        self.write(b"\ndone\n")?;
        if let Some(mut w) = self.stdin.take() {
            if let Err(e) = w.flush() {
                return Err(self.failure(e.to_string()));
            }
        }
        let Some(child) = self.child.take() else {
            return Err(GitError::Unexpected {
                command: "fast-import".into(),
                detail: "already finished".into(),
            });
        };
        let out = child
            .wait_with_output()
            .map_err(|e| spawn_error("fast-import", e))?;
        if !out.status.success() {
            return Err(GitError::Failed {
                command: "fast-import".into(),
                message: stderr_summary(&out.stderr),
            });
        }
        let oid = self.repo.rev_parse(&self.refname)?;
        // The ref only carried the commit out of fast-import; the caller's refs keep it.
        let _ = self.repo.delete_ref(&self.refname);
        Ok(oid)
    }
}

impl Drop for FastImport {
    fn drop(&mut self) {
        self.stdin = None;
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn have_git() -> bool {
        Command::new("git").arg("--version").output().is_ok()
    }

    fn bare(dir: &Path, format: ObjectFormat) -> PathBuf {
        let p = dir.join(format!("remote-{}.git", format.as_str()));
        let st = Command::new("git")
            .args(["init", "--quiet", "--bare"])
            .arg(format!("--object-format={}", format.as_str()))
            .arg(&p)
            .status()
            .unwrap();
        assert!(st.success());
        p
    }

    fn commit(repo: &Repo, parent: Option<&str>, files: &[(&str, &[u8])]) -> String {
        let mut fi = repo.fast_import().unwrap();
        fi.begin(parent).unwrap();
        for (p, b) in files {
            fi.add(p, b).unwrap();
        }
        fi.finish().unwrap()
    }

    #[test]
    fn a_lost_race_is_told_from_a_refusal() {
        for race in [
            "[rejected] (fetch first)",
            "[rejected] (non-fast-forward)",
            "[rejected] (stale info)",
            "[remote rejected] (failed to update ref)",
            "[remote rejected] (cannot lock ref 'refs/elench/log': is at 1 but expected 2)",
        ] {
            assert_eq!(refused_ref(race, b""), Pushed::Lost(race.into()), "{race}");
        }
        let stderr = b"remote: Resolving deltas: 100% (1/1)\rremote: denied by policy   \n\
                       remote: \x1b[31mno\x1b[0m\nerror: failed to push some refs\n";
        assert_eq!(
            refused_ref("[remote rejected] (pre-receive hook declined)", stderr),
            Pushed::Refused(
                "[remote rejected] (pre-receive hook declined); the remote said: denied by \
                 policy / [31mno[0m"
                    .into()
            )
        );
        assert_eq!(
            refused_ref("[remote rejected] (protected branch hook declined)", b""),
            Pushed::Refused("[remote rejected] (protected branch hook declined)".into())
        );
        assert!(says_no_write_access(
            b"remote: Permission to o/r.git denied to github-actions[bot].\nfatal: unable to \
              access 'https://github.com/o/r/': The requested URL returned error: 403\n"
        ));
        assert!(!says_no_write_access(
            b"fatal: unable to access 'https://h/': Could not resolve host: h\n"
        ));
    }

    #[test]
    fn ssh_urls_are_told_from_others() {
        for url in [
            "ssh://git@example.org/x.git",
            "git+ssh://example.org/x",
            "SSH://example.org/x",
            "git@example.org:x.git",
            "example.org:x",
            "host:",
        ] {
            assert!(is_ssh_url(url), "{url}");
        }
        for url in [
            "/srv/x.git",
            "./x:y",
            "https://example.org/x.git",
            "git://127.0.0.1:9/x",
            "file:///srv/x",
            ":x",
        ] {
            assert!(!is_ssh_url(url), "{url}");
        }
        assert_eq!(whole_seconds(Duration::from_millis(1500)), 2);
        assert_eq!(whole_seconds(Duration::from_millis(1)), 1);
        assert_eq!(whole_seconds(Duration::from_secs(30)), 30);
    }

    #[test]
    fn a_command_past_its_limit_is_ended_with_what_it_started() {
        let started = Instant::now();
        let mut cmd = Command::new("sh");
        // A child of its own that would outlive it, holding the pipes.
        cmd.args(["-c", "sleep 30 & sleep 30"]);
        let got = output_within(
            cmd,
            "sleep",
            Some(Duration::from_millis(300)),
            &Reaper::new(),
        );
        assert!(matches!(got, Err(GitError::TimedOut { .. })), "{got:?}");
        assert!(started.elapsed() < Duration::from_secs(10));
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo out; echo err >&2; exit 3"]);
        let out = output_within(cmd, "sh", Some(Duration::from_secs(30)), &Reaper::new()).unwrap();
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
    }

    #[test]
    fn write_push_list_diff_and_read_in_both_formats() {
        if !have_git() {
            eprintln!("skipped: git is not installed");
            return;
        }
        for format in [ObjectFormat::Sha1, ObjectFormat::Sha256] {
            let tmp = tempfile::tempdir().unwrap();
            let remote = bare(tmp.path(), format);
            let url = remote.to_str().unwrap();
            let empty =
                ls_remote(url, "refs/elench/log", &Reach::default(), &Reaper::new()).unwrap();
            assert_eq!(empty, RemoteHead { format, head: None });

            let repo = Repo::open_or_init(&tmp.path().join("private"), format).unwrap();
            let c1 = commit(&repo, None, &[("v1/aa/x/1", b"one"), ("v1/bb/y/2", b"two")]);
            assert_eq!(c1.len(), if format == ObjectFormat::Sha1 { 40 } else { 64 });
            // Same content, same commit: ids depend on nothing but the tree and parent.
            let again = commit(&repo, None, &[("v1/bb/y/2", b"two"), ("v1/aa/x/1", b"one")]);
            assert_eq!(c1, again);
            assert_eq!(
                repo.push(url, &c1, "refs/elench/log").unwrap(),
                Pushed::Done
            );
            assert_eq!(
                ls_remote(url, "refs/elench/log", &Reach::default(), &Reaper::new())
                    .unwrap()
                    .head
                    .as_deref(),
                Some(c1.as_str())
            );

            let c2 = commit(&repo, Some(&c1), &[("v1/cc/z/3", b"three")]);
            let added = repo.added(&c1, &c2, "v1").unwrap();
            assert_eq!(added.len(), 1);
            assert_eq!(added[0].path, "v1/cc/z/3");
            assert!(!repo.lost_any(&c1, &c2, "v1").unwrap());
            assert!(repo.lost_any(&c2, &c1, "v1").unwrap());
            // A file become a symbolic link of the same bytes is a change both ways.
            let mut fi = Command::new("git")
                .arg("--git-dir")
                .arg(&repo.dir)
                .args(["fast-import", "--quiet", "--force"])
                .stdin(Stdio::piped())
                .spawn()
                .unwrap();
            write!(
                fi.stdin.take().unwrap(),
                "commit refs/x\ncommitter x <x@x> 0 +0000\ndata 0\nfrom {c2}\n\
                 M 120000 inline v1/cc/z/3\ndata 5\nthree\n"
            )
            .unwrap();
            assert!(fi.wait().unwrap().success());
            let linked = repo.rev_parse("refs/x").unwrap();
            assert!(repo.lost_any(&c2, &linked, "v1").unwrap());
            let retyped = repo.added(&c2, &linked, "v1").unwrap();
            assert_eq!(retyped.len(), 1, "{retyped:?}");
            assert_eq!(repo.list(&linked, "v1").unwrap().len(), 3);
            assert_eq!(repo.list(&c2, "v1").unwrap().len(), 3);
            let at = repo
                .at_each(&[
                    (c2.as_str(), "v1/aa/x/1"),
                    (c2.as_str(), "v1/dd/q/4"),
                    (c2.as_str(), "v1/aa"),
                    (c2.as_str(), "v1/aa/x/1/below"),
                ])
                .unwrap();
            assert!(matches!(&at[0], At::Blob { size: 3, .. }), "{at:?}");
            assert_eq!(at[1], At::Nothing);
            assert!(
                matches!(&at[2], At::Tree(oid) if oid.len() == c2.len()),
                "{at:?}"
            );
            assert_eq!(at[3], At::Nothing);
            assert_eq!(repo.object_type(&c2).unwrap().as_deref(), Some("commit"));
            let At::Blob { oid, .. } = &at[0] else {
                unreachable!()
            };
            assert_eq!(repo.object_type(oid).unwrap().as_deref(), Some("blob"));
            assert!(!repo.has_commit(oid).unwrap());

            let mut got = Vec::new();
            let oids = vec![added[0].blob.clone(), "0".repeat(c1.len())];
            repo.read_blobs(&oids, 1024, |_, b| {
                got.push(format!("{b:?}"));
                Ok(true)
            })
            .unwrap();
            assert_eq!(
                got,
                vec![
                    format!("{:?}", Blob::Content(b"three".to_vec())),
                    "Missing".to_owned()
                ]
            );
            let mut sizes = Vec::new();
            repo.read_blobs(&oids[..1], 2, |_, b| {
                sizes.push(matches!(b, Blob::TooLarge(5)));
                Ok(true)
            })
            .unwrap();
            assert_eq!(sizes, vec![true]);

            // A second writer's commit on the old head is refused as a non-fast-forward.
            let other = commit(&repo, None, &[("v1/ee/w/5", b"five")]);
            assert_eq!(
                repo.push(url, &c2, "refs/elench/log").unwrap(),
                Pushed::Done
            );
            assert!(matches!(
                repo.push(url, &other, "refs/elench/log").unwrap(),
                Pushed::Lost(_)
            ));
            // Fetching into a fresh repository brings the head and its objects.
            let fresh = Repo::open_or_init(&tmp.path().join("fresh"), format).unwrap();
            let head = fresh
                .fetch(url, "refs/elench/log", "refs/elench/remotes/origin")
                .unwrap();
            assert_eq!(head, c2);
            assert!(fresh.has_commit(&c2).unwrap());
            assert!(!fresh.has_commit(&other).unwrap());

            // Consolidating packs keeps every object, reachable from a ref or not.
            assert!(repo.consolidate(0).unwrap());
            for oid in [&c1, &c2, &other] {
                assert!(repo.has_commit(oid).unwrap());
            }
            assert!(!repo.consolidate(1).unwrap());
        }
    }
}
