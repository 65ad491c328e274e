//! The `git` executable as object store and transport.
//!
//! Each store keeps private bare repositories (one per object format, since a repository
//! can only exchange objects with remotes of its own format). A push's objects are written
//! as a pack of elench's own (`pack`), a checkpoint's with `fast-import`; objects are read in
//! bulk with `cat-file --batch`, compared with `diff-tree`, and moved with `fetch` / `push`.
//! Every call names the private repository explicitly and drops the caller's `GIT_*`
//! variables, so running inside a checkout or a hook changes nothing.

mod fast_import;
mod pack;
mod process;
mod remote;
mod stream;

pub use fast_import::FastImport;
pub use pack::PackWrite;
pub use process::{is_ssh_url, Reach};
pub use remote::{ls_remote, Pushed, RemoteHead};
pub use stream::BlobStream;

use process::{git, output, spawn_error, stderr_summary, Drain};
use remote::{is_hex, refused_ref, says_no_write_access, PUSH_STDERR_KEPT};

use std::collections::HashSet;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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

    /// The bytes of an object id.
    pub fn id_bytes(self) -> usize {
        match self {
            ObjectFormat::Sha1 => 20,
            ObjectFormat::Sha256 => 32,
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

/// One entry of a tree listing: a file's path and its blob id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub path: String,
    pub blob: String,
}

/// A blob's id as bytes (a SHA-1 id padded with zeros): a key half the size of its hex.
pub type BlobKey = [u8; 32];

/// The key of the blob id `oid` (hex), if it is one.
pub fn blob_key(oid: &str) -> Option<BlobKey> {
    let mut key = [0u8; 32];
    let n = oid.len() / 2;
    if !oid.len().is_multiple_of(2) || n > key.len() {
        return None;
    }
    hex::decode_to_slice(oid, &mut key[..n]).ok()?;
    Some(key)
}

/// What [`Repo::first_parent_additions`] lists.
#[derive(Debug, Default)]
pub struct Additions {
    /// The first parent of the oldest commit listed.
    pub first_parent: Option<String>,
    /// How many commits were listed.
    pub commits: usize,
    /// The blobs they add, commit by commit, each commit's in the order of their paths'
    /// bytes: 32 bytes a blob, however many a first listing holds.
    pub blobs: Vec<BlobKey>,
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

/// A private bare repository.
#[derive(Debug, Clone)]
pub struct Repo {
    dir: PathBuf,
    pub format: ObjectFormat,
    /// Let git draw its progress on the terminal (stderr).
    pub progress: bool,
    /// How `fetch` and `push` reach the remote (the ssh command bounding ssh's connection).
    pub reach: Reach,
    /// Commits found here already (shared by clones): nothing is ever pruned from the
    /// private repository, so a commit found once is asked about no more.
    commits: Arc<Mutex<HashSet<String>>>,
    /// This opening created the repository: it holds nothing yet, whatever a state file
    /// recorded of an earlier one.
    pub created: bool,
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
            commits: Arc::default(),
            created: false,
        };
        if dir.join("HEAD").is_file() {
            return Ok(repo);
        }
        let repo = Repo {
            created: true,
            ..repo
        };
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
        let known = |c: &Arc<Mutex<HashSet<String>>>| {
            c.lock().unwrap_or_else(|p| p.into_inner()).contains(oid)
        };
        if known(&self.commits) {
            return Ok(true);
        }
        let here = self.object_type(oid)?.as_deref() == Some("commit");
        if here {
            self.commits
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(oid.to_owned());
        }
        Ok(here)
    }

    /// Takes `oids` as commits this repository holds without asking git: commits an earlier
    /// exchange found or wrote here and recorded (nothing is ever pruned here). Ignored for a
    /// repository this opening created, which holds nothing yet.
    pub fn known_commits<'s>(&self, oids: impl IntoIterator<Item = &'s str>) {
        if self.created {
            return;
        }
        let mut known = self.commits.lock().unwrap_or_else(|p| p.into_inner());
        for oid in oids {
            if ObjectFormat::from_oid(oid) == Some(self.format) && is_hex(oid) {
                known.insert(oid.to_owned());
            }
        }
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

    /// Whether `refname` is a loose ref pointing at `oid` already (read from its file, no
    /// git process; a packed ref or anything unreadable is not).
    pub fn points_at(&self, refname: &str, oid: &str) -> bool {
        std::fs::read(self.dir.join(refname))
            .is_ok_and(|b| b.strip_suffix(b"\n").unwrap_or(&b) == oid.as_bytes())
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
        self.batch("--batch-check", requests.into_iter(), |reader| {
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
        each: impl FnMut(usize, Blob) -> std::io::Result<bool>,
    ) -> Result<(), GitError> {
        let requests: Vec<String> = oids.iter().map(|o| format!("{o}\n")).collect();
        self.read_each(requests.into_iter(), limit, each)
    }

    /// [`Repo::read_blobs`] by key: the requests are written from the keys as git takes
    /// them, so a long list costs its 32 bytes a blob and no more.
    pub fn read_blob_keys(
        &self,
        keys: Vec<BlobKey>,
        limit: u64,
        each: impl FnMut(usize, Blob) -> std::io::Result<bool>,
    ) -> Result<(), GitError> {
        let width = self.format.id_bytes();
        let requests = keys.into_iter().map(move |k| {
            let mut line = hex::encode(&k[..width]);
            line.push('\n');
            line
        });
        self.read_each(requests, limit, each)
    }

    fn read_each<R>(
        &self,
        requests: R,
        limit: u64,
        mut each: impl FnMut(usize, Blob) -> std::io::Result<bool>,
    ) -> Result<(), GitError>
    where
        R: ExactSizeIterator<Item = String> + Send + 'static,
    {
        let count = requests.len();
        self.batch("--batch", requests, |reader| {
            for i in 0..count {
                let blob = stream::read_one(reader, limit)?.ok_or_else(unexpected_eof)?;
                if !each(i, blob)? {
                    break;
                }
            }
            Ok(())
        })
    }

    /// Starts `cat-file MODE` with its three pipes, and hands over the child with its stdin
    /// and stdout taken (stderr stays on the child).
    pub(super) fn cat_file(
        &self,
        mode: &str,
    ) -> Result<
        (
            std::process::Child,
            std::process::ChildStdin,
            std::process::ChildStdout,
        ),
        GitError,
    > {
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
        Ok((child, stdin, stdout))
    }

    /// Runs `cat-file MODE`, feeding `requests` from a thread (so neither pipe can fill up
    /// while the other waits) and reading the answers with `read`.
    fn batch<R>(
        &self,
        mode: &str,
        requests: R,
        read: impl FnOnce(&mut BufReader<std::process::ChildStdout>) -> std::io::Result<()>,
    ) -> Result<(), GitError>
    where
        R: ExactSizeIterator<Item = String> + Send + 'static,
    {
        if requests.len() == 0 {
            return Ok(());
        }
        let (mut child, stdin, stdout) = self.cat_file(mode)?;
        let writer = std::thread::spawn(move || {
            let mut w = BufWriter::new(stdin);
            for r in requests {
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
    /// without `base`), oldest first, and the blobs of the files under `dirs` each adds or
    /// changes against its first parent (a root commit: every file), each commit's in the
    /// order of their paths' bytes. Submodules and deletions add nothing. Used for a remote's
    /// sequence of envelopes (`witness`).
    ///
    /// git's output is read as it comes and only each blob's id is kept: a first listing of
    /// ten million envelopes holds 320 MB, where the output whole and its paths took about
    /// 3 GB. `diff-tree -r` walks each tree in git's order, which for whole paths is the
    /// order of their bytes (a folder sorts as its name and a slash); a commit whose paths
    /// come otherwise has a tree git did not write, and is refused, never reordered.
    pub fn first_parent_additions(
        &self,
        base: Option<&str>,
        head: &str,
        dirs: &[&str],
    ) -> Result<Additions, GitError> {
        let mut args = vec!["rev-list", "--first-parent", "--reverse", "--parents", head];
        let not_base;
        if let Some(b) = base {
            not_base = format!("^{b}");
            args.push(&not_base);
        }
        let listed = self.run(&args, "rev-list")?;
        let mut commits: Vec<String> = Vec::new();
        let mut requests = String::new();
        let mut out = Additions::default();
        for line in String::from_utf8_lossy(&listed).lines() {
            let mut ids = line.split(' ');
            let (Some(c), parent) = (ids.next(), ids.next()) else {
                continue;
            };
            if commits.is_empty() {
                out.first_parent = parent.map(str::to_owned);
            }
            commits.push(c.to_owned());
            requests.push_str(c);
            if let Some(p) = parent {
                requests.push(' ');
                requests.push_str(p);
            }
            requests.push('\n');
        }
        out.commits = commits.len();
        if commits.is_empty() {
            return Ok(out);
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
        // Read beside stdout, so that neither pipe fills while the other is read.
        let stderr = Drain::start(child.stderr.take());
        let stdin = child.stdin.take();
        let writer = std::thread::spawn(move || {
            if let Some(mut w) = stdin {
                let _ = w.write_all(requests.as_bytes());
            }
        });
        let parsed = match child.stdout.take() {
            Some(stdout) => read_additions(BufReader::new(stdout), &commits, &mut out.blobs),
            None => Err(unexpected("diff-tree", "no output")),
        };
        if parsed.is_err() {
            let _ = child.kill();
        }
        let _ = writer.join();
        let status = child.wait().map_err(|e| spawn_error("diff-tree", e))?;
        parsed?;
        if !status.success() {
            return Err(GitError::Failed {
                command: "diff-tree".into(),
                message: stderr_summary(&stderr.take()),
            });
        }
        Ok(out)
    }
}

fn unexpected(command: &str, detail: &str) -> GitError {
    GitError::Unexpected {
        command: command.into(),
        detail: detail.to_owned(),
    }
}

/// Reads `diff-tree --stdin -r -z` output for `commits` (asked in that order), pushing the
/// blob of each file added or changed (see [`Repo::first_parent_additions`]).
fn read_additions(
    mut reader: impl BufRead,
    commits: &[String],
    blobs: &mut Vec<BlobKey>,
) -> Result<(), GitError> {
    let bad = |what: &str| unexpected("diff-tree", what);
    let io = |e: std::io::Error| bad(&format!("reading its output: {e}"));
    // Where each commit was asked: git answers in that order, and says nothing of a commit
    // that changes nothing under the folders.
    let asked: std::collections::HashMap<&str, usize> = commits
        .iter()
        .enumerate()
        .map(|(i, c)| (c.as_str(), i))
        .collect();
    let mut current: Option<usize> = None;
    let (mut field, mut path, mut last) = (Vec::new(), Vec::new(), Vec::new());
    loop {
        field.clear();
        if reader.read_until(0, &mut field).map_err(io)? == 0 {
            return Ok(());
        }
        let f = field.strip_suffix(&[0]).unwrap_or(&field);
        // A commit id may be followed by a newline.
        let f = f.trim_ascii();
        if f.is_empty() {
            continue;
        }
        let Some(raw) = f.strip_prefix(b":") else {
            let id = String::from_utf8_lossy(f);
            let at = *asked
                .get(id.as_ref())
                .ok_or_else(|| bad(&format!("commit {id:?}")))?;
            if current.is_some_and(|c| c >= at) {
                return Err(bad(&format!("commit {id:?} out of the order asked")));
            }
            current = Some(at);
            last.clear();
            continue;
        };
        path.clear();
        if reader.read_until(0, &mut path).map_err(io)? == 0 {
            return Err(bad("an entry without its path"));
        }
        if path.last() == Some(&0) {
            path.pop();
        }
        let raw = String::from_utf8_lossy(raw);
        let parts: Vec<&str> = raw.split(' ').collect();
        let [_, mode, _, blob, status] = parts.as_slice() else {
            return Err(bad(&format!("entry {raw:?}")));
        };
        if current.is_none() {
            return Err(bad("an entry before any commit"));
        }
        if *status == "D" || !is_file_mode(mode) {
            continue;
        }
        if !last.is_empty() && path <= last {
            return Err(bad(&format!(
                "path {:?} after {:?}: a tree out of git's order",
                String::from_utf8_lossy(&path),
                String::from_utf8_lossy(&last)
            )));
        }
        blobs.push(blob_key(blob).ok_or_else(|| bad(&format!("blob id {blob:?}")))?);
        std::mem::swap(&mut last, &mut path);
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

#[cfg(test)]
mod tests {
    use super::process::{output_within, whole_seconds};
    use super::*;
    use crate::reaper::Reaper;
    use std::time::Instant;

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

    /// The blob ids of `paths` in `commit`, in the order of the paths' bytes: the listing's
    /// order worked out apart from it, through `git ls-tree` and a sort.
    fn blobs_by_path_bytes(repo: &Repo, commit: &str, paths: &[&str]) -> Vec<BlobKey> {
        let mut sorted: Vec<&str> = paths.to_vec();
        sorted.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        sorted
            .iter()
            .map(|p| {
                let out = repo.run(&["ls-tree", commit, "--", p], "ls-tree").unwrap();
                let line = String::from_utf8(out).unwrap();
                let oid = line.split_whitespace().nth(2).unwrap();
                blob_key(oid).unwrap()
            })
            .collect()
    }

    #[test]
    fn first_parent_additions_list_each_commits_blobs_in_the_order_of_their_paths_bytes() {
        if !have_git() {
            eprintln!("skipped: git is not installed");
            return;
        }
        for format in [ObjectFormat::Sha1, ObjectFormat::Sha256] {
            let tmp = tempfile::tempdir().unwrap();
            let repo = Repo::open_or_init(&tmp.path().join("private"), format).unwrap();
            // Folder names where git's tree order and a careless one differ: "1-a" sorts
            // before "1" (a folder sorts as "1/"), and "10" after it.
            let first: Vec<(&str, &[u8])> = vec![
                ("trust/10/y", b"ten"),
                ("trust/1/x", b"one"),
                ("trust/1-a/z", b"one-a"),
                ("v1/bb/q/2", b"two"),
                ("v1/aa/p/1", b"first"),
                ("other/ignored", b"not in the folders"),
            ];
            let c1 = commit(&repo, None, &first);
            let mut second = first.clone();
            second.push(("v1/ab/r/3", b"three"));
            second.push(("trust/2/w", b"two"));
            second[4] = ("v1/aa/p/1", b"changed");
            let c2 = commit(&repo, Some(&c1), &second);
            let dirs = ["trust", "v1"];

            let all = repo.first_parent_additions(None, &c2, &dirs).unwrap();
            assert_eq!((all.first_parent, all.commits), (None, 2));
            let mut expected = blobs_by_path_bytes(
                &repo,
                &c1,
                &[
                    "trust/10/y",
                    "trust/1/x",
                    "trust/1-a/z",
                    "v1/bb/q/2",
                    "v1/aa/p/1",
                ],
            );
            expected.extend(blobs_by_path_bytes(
                &repo,
                &c2,
                &["v1/ab/r/3", "trust/2/w", "v1/aa/p/1"],
            ));
            assert_eq!(all.blobs, expected);

            let after = repo.first_parent_additions(Some(&c1), &c2, &dirs).unwrap();
            assert_eq!(
                (after.first_parent.as_deref(), after.commits),
                (Some(&*c1), 1)
            );
            assert_eq!(after.blobs, expected[5..]);
            let none = repo.first_parent_additions(Some(&c2), &c2, &dirs).unwrap();
            assert_eq!((none.commits, none.blobs.len()), (0, 0));
        }
    }

    #[test]
    fn a_listing_out_of_git_order_or_of_another_commit_is_refused() {
        let commits = ["c1".to_owned(), "c2".to_owned()];
        let (a, b) = ("11".repeat(20), "22".repeat(20));
        let entry = |blob: &str, status: &str, mode: &str, path: &str| {
            format!(
                ":000000 {mode} {} {blob} {status}\0{path}\0",
                "00".repeat(20)
            )
        };
        let read = |text: String| {
            let mut blobs = Vec::new();
            read_additions(text.as_bytes(), &commits, &mut blobs).map(|()| blobs)
        };
        // Deletions and submodules add nothing; a newline after a commit id is allowed.
        let fine = format!(
            "c1\0{}{}{}\nc2\0{}",
            entry(&a, "A", "100644", "v1/a"),
            entry(&b, "D", "100644", "v1/b"),
            entry(&b, "A", "160000", "v1/c"),
            entry(&b, "M", "100755", "v1/a"),
        );
        assert_eq!(
            read(fine).unwrap(),
            vec![blob_key(&a).unwrap(), blob_key(&b).unwrap()]
        );
        let unordered = format!(
            "c1\0{}{}",
            entry(&a, "A", "100644", "v1/b"),
            entry(&b, "A", "100644", "v1/a")
        );
        let err = read(unordered).unwrap_err().to_string();
        assert!(err.contains("out of git's order"), "{err}");
        let twice = format!("c2\0{}c1\0", entry(&a, "A", "100644", "v1/a"));
        assert!(read(twice).is_err());
        assert!(read(format!("c3\0{}", entry(&a, "A", "100644", "v1/a"))).is_err());
        assert!(read(entry(&a, "A", "100644", "v1/a")).is_err());
        assert!(read(format!("c1\0{}", entry("zz", "A", "100644", "v1/a"))).is_err());
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
