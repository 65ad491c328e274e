//! Remotes and what was last exchanged with each, kept as small JSON files in the store:
//! `remotes.json` (names and URLs) and `sync/<name>.json` (per-remote state), each replaced
//! atomically. `sync/lock` keeps two exchanges of one store from overlapping.

use super::git::ObjectFormat;
use super::SyncError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const REMOTES_FILE: &str = "remotes.json";
const SYNC_DIR: &str = "sync";

/// A named remote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Remote {
    pub name: String,
    pub url: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct RemotesFile {
    remotes: Vec<Remote>,
}

/// Names become file names and parts of git ref names: letters, digits, `.`, `_`, `-`, not
/// starting with `.` or `-`, at most 64 characters, not ending in `.lock`.
pub fn check_name(name: &str) -> Result<(), SyncError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        && !name.starts_with(['.', '-'])
        && !name.contains("..")
        && !name.ends_with(".lock");
    if ok {
        Ok(())
    } else {
        Err(SyncError::BadName(name.to_owned()))
    }
}

/// Refuses what can be no URL or path at all: nothing, an option (`-…`), a line break or a
/// NUL.
pub fn check_url(url: &str) -> Result<(), SyncError> {
    if url.is_empty() || url.starts_with('-') || url.contains(['\n', '\0']) {
        return Err(SyncError::BadUrl(url.to_owned()));
    }
    Ok(())
}

/// Makes a local path absolute (git runs elsewhere than the caller's working directory);
/// URLs (`scheme://…`) and scp-like `host:path` addresses are kept as given.
pub fn normalize_url(url: &str, cwd: &Path) -> Result<String, SyncError> {
    check_url(url)?;
    let first_colon = url.find(':');
    let first_slash = url.find('/');
    let remote_syntax = url.contains("://")
        || matches!((first_colon, first_slash), (Some(c), Some(s)) if c < s)
        || (first_colon.is_some() && first_slash.is_none());
    if remote_syntax {
        return Ok(url.to_owned());
    }
    let path = cwd.join(url);
    let path = path.canonicalize().unwrap_or(path);
    Ok(path.to_string_lossy().into_owned())
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SyncError + '_ {
    move |e| SyncError::Io(format!("{}: {e}", path.display()))
}

/// The remotes of a store, sorted by name.
pub fn list(store_root: &Path) -> Result<Vec<Remote>, SyncError> {
    let path = store_root.join(REMOTES_FILE);
    match std::fs::read(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(io(&path)(e)),
        Ok(bytes) => {
            let file: RemotesFile = serde_json::from_slice(&bytes)
                .map_err(|e| SyncError::Config(format!("{}: {e}", path.display())))?;
            Ok(file.remotes)
        }
    }
}

pub fn find(store_root: &Path, name: &str) -> Result<Remote, SyncError> {
    check_name(name)?;
    list(store_root)?
        .into_iter()
        .find(|r| r.name == name)
        .ok_or_else(|| SyncError::UnknownRemote(name.to_owned()))
}

/// Adds a remote. Adding the same name and URL again changes nothing (returns false); the
/// same name with another URL is refused.
pub fn add(store_root: &Path, name: &str, url: &str) -> Result<bool, SyncError> {
    check_name(name)?;
    let mut remotes = list(store_root)?;
    if let Some(r) = remotes.iter().find(|r| r.name == name) {
        if r.url == url {
            return Ok(false);
        }
        return Err(SyncError::RemoteExists {
            name: name.to_owned(),
            url: r.url.clone(),
        });
    }
    remotes.push(Remote {
        name: name.to_owned(),
        url: url.to_owned(),
    });
    remotes.sort_by(|a, b| a.name.cmp(&b.name));
    let path = store_root.join(REMOTES_FILE);
    let json = serde_json::to_vec_pretty(&RemotesFile { remotes })
        .map_err(|e| SyncError::Config(e.to_string()))?;
    crate::atomic_file::write(&path, &json).map_err(io(&path))?;
    Ok(true)
}

/// What was last exchanged with one remote. Every field is an optimisation: a state that is
/// missing, unreadable or stale only makes the next exchange look at more, never skip
/// something.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncState {
    /// The object format of the remote when the commits below were recorded.
    #[serde(default)]
    pub format: Option<ObjectFormat>,
    /// A remote commit every envelope of which was offered to ingest.
    #[serde(default)]
    pub pulled: Option<String>,
    /// Envelopes of the remote that ingest refused; offered again on every pull.
    #[serde(default)]
    pub pending: Vec<PendingEntry>,
    /// The local log's length after that pull (a shorter log means something was lost).
    #[serde(default)]
    pub pulled_local: u64,
    /// A remote commit holding every local envelope before `pushed_pos`.
    #[serde(default)]
    pub pushed: Option<String>,
    #[serde(default)]
    pub pushed_pos: u64,
    /// The remote's log commit as this store last left it: every envelope of it the store
    /// holds was exchanged with the remote, which must never lose one (`memory`). Unlike the
    /// fields above it is no optimisation: without it a rewound remote goes unnoticed.
    #[serde(default)]
    pub held: Option<String>,
    /// The policies a remote commit's trust folder names, as the last pull listed it: while
    /// the remote's head is that commit and the store holds every one of them, a pull has
    /// none to take and need not list the folder again.
    #[serde(default)]
    pub trust_listed: Option<TrustListed>,
    /// Policies of this store a remote commit holds at their paths, in their very bytes (a
    /// push found them there or wrote them): while the remote's head is that commit and the
    /// store has no other policy, a push has none to write and need not look them up.
    #[serde(default)]
    pub trust_pushed: Option<TrustListed>,
}

/// Digests of policies, as found in the trust folder of `commit` (`policies::parse_path`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustListed {
    pub commit: String,
    pub digests: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingEntry {
    pub path: String,
    pub blob: String,
}

fn state_path(store_root: &Path, name: &str) -> PathBuf {
    store_root.join(SYNC_DIR).join(format!("{name}.json"))
}

pub fn load_state(store_root: &Path, name: &str) -> SyncState {
    std::fs::read(state_path(store_root, name))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

pub fn save_state(store_root: &Path, name: &str, state: &SyncState) -> Result<(), SyncError> {
    let path = state_path(store_root, name);
    let dir = store_root.join(SYNC_DIR);
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let json = serde_json::to_vec_pretty(state).map_err(|e| SyncError::Config(e.to_string()))?;
    crate::atomic_file::write(&path, &json).map_err(io(&path))
}

/// The private repository for one object format.
pub fn repo_dir(store_root: &Path, format: ObjectFormat) -> PathBuf {
    store_root.join("git").join(format.as_str())
}

/// Held while one process exchanges with remotes; released when dropped (or when the
/// process dies, however it dies).
pub struct SyncLock {
    _file: std::fs::File,
}

impl SyncLock {
    pub fn acquire(store_root: &Path, wait: Duration) -> Result<SyncLock, SyncError> {
        let dir = store_root.join(SYNC_DIR);
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let path = dir.join("lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io(&path))?;
        let started = Instant::now();
        loop {
            // std's advisory lock (flock), released with the file however the process ends.
            match file.try_lock() {
                Ok(()) => return Ok(SyncLock { _file: file }),
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(e)) => return Err(io(&path)(e)),
            }
            if started.elapsed() >= wait {
                return Err(SyncError::Busy(started.elapsed().as_secs()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_escape_a_file_or_ref_name_are_refused() {
        for good in ["origin", "team-ci", "a.b_c", "X1"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            ".hidden",
            "-x",
            "a/b",
            "a..b",
            "x.lock",
            "sp ace",
            &"n".repeat(65),
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn local_paths_become_absolute_and_urls_stay_as_given() {
        let cwd = Path::new("/work/here");
        assert_eq!(
            normalize_url("remote.git", cwd).unwrap(),
            "/work/here/remote.git"
        );
        assert_eq!(normalize_url("/srv/r.git", cwd).unwrap(), "/srv/r.git");
        for url in [
            "https://example.org/r.git",
            "ssh://git@host/r.git",
            "git@host:team/r.git",
            "host:r.git",
        ] {
            assert_eq!(normalize_url(url, cwd).unwrap(), url);
        }
        assert!(normalize_url("--upload-pack=x", cwd).is_err());
        assert!(normalize_url("", cwd).is_err());
    }

    #[test]
    fn remotes_are_added_once_listed_by_name_and_a_clash_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(list(tmp.path()).unwrap().is_empty());
        assert!(add(tmp.path(), "origin", "/a").unwrap());
        assert!(add(tmp.path(), "backup", "/b").unwrap());
        assert!(!add(tmp.path(), "origin", "/a").unwrap());
        assert!(matches!(
            add(tmp.path(), "origin", "/c"),
            Err(SyncError::RemoteExists { .. })
        ));
        let names: Vec<String> = list(tmp.path())
            .unwrap()
            .into_iter()
            .map(|r| r.name)
            .collect();
        assert_eq!(names, ["backup", "origin"]);
        assert_eq!(find(tmp.path(), "origin").unwrap().url, "/a");
        assert!(matches!(
            find(tmp.path(), "nope"),
            Err(SyncError::UnknownRemote(_))
        ));
    }

    #[test]
    fn state_round_trips_and_an_unreadable_one_counts_as_empty() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(load_state(tmp.path(), "origin"), SyncState::default());
        let s = SyncState {
            format: Some(ObjectFormat::Sha256),
            pulled: Some("ab".repeat(32)),
            pending: vec![PendingEntry {
                path: "v1/x".into(),
                blob: "cd".repeat(32),
            }],
            pulled_local: 7,
            pushed: None,
            pushed_pos: 3,
            held: Some("ef".repeat(32)),
            trust_listed: Some(TrustListed {
                commit: "ef".repeat(32),
                digests: vec!["01".repeat(32)],
            }),
            trust_pushed: None,
        };
        save_state(tmp.path(), "origin", &s).unwrap();
        assert_eq!(load_state(tmp.path(), "origin"), s);
        std::fs::write(tmp.path().join("sync/origin.json"), b"{not json").unwrap();
        assert_eq!(load_state(tmp.path(), "origin"), SyncState::default());
    }

    #[test]
    fn a_second_lock_waits_then_reports_busy() {
        let tmp = tempfile::tempdir().unwrap();
        let held = SyncLock::acquire(tmp.path(), Duration::ZERO).unwrap();
        assert!(matches!(
            SyncLock::acquire(tmp.path(), Duration::from_millis(100)),
            Err(SyncError::Busy(_))
        ));
        drop(held);
        // Not at once: a child process another test forks in this process holds a copy of
        // every descriptor (and so the lock) until it execs.
        assert!(SyncLock::acquire(tmp.path(), Duration::from_secs(10)).is_ok());
    }
}
