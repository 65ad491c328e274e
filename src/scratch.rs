//! A temporary directory of elench's own, removed when dropped: where `demo` and the
//! conformance runner build throwaway stores and `check` copies the tree. Each is listed with
//! the front end's [`Reaper`] while it lives, so that a process ended early (a time limit, a
//! signal) removes it on its way out.
//!
//! A process killed outright (SIGKILL, the machine's OOM killer) removes nothing, and a
//! `check`'s copy of the tree may hold the tree's secrets (`.env` files and the like). So
//! scratch directories live in one folder per user, `$TMPDIR/elench-<uid>` (mode 0700, the
//! user's own), each named after the process that made it: its pid, this boot, its PID
//! namespace and the process's start time. Every new scratch directory first removes those
//! of processes that are gone ([`sweep`]); a pid alone would not do, since the kernel reuses
//! pids, and a pid of another PID namespace (a container sharing the folder) names nothing
//! here, so those are left to their own namespace.

use crate::reaper::Reaper;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How many names are tried before giving up: each is 64 random bits, so a second try
/// means someone made that path first.
const TRIES: usize = 16;

pub struct ScratchDir {
    path: PathBuf,
    reaper: Option<Arc<Reaper>>,
}

impl ScratchDir {
    /// Makes a new, empty directory in this user's scratch folder (see [`root`]), readable by
    /// elench's user alone, listed with `reaper` until dropped. Its name (`prefix`, the
    /// process's identity, a random number) is made here, never taken over: a path that
    /// exists already (another process's, or one planted by someone who guessed it) is never
    /// used. What processes that are gone left there is removed first.
    pub fn create(prefix: &str, reaper: &Arc<Reaper>) -> std::io::Result<ScratchDir> {
        ScratchDir::make(prefix, Some(reaper))
    }

    /// [`ScratchDir::create`] without a reaper: removed on drop, but not by an early exit.
    pub fn unlisted(prefix: &str) -> std::io::Result<ScratchDir> {
        ScratchDir::make(prefix, None)
    }

    /// For tests: [`ScratchDir::unlisted`], which must succeed.
    #[cfg(test)]
    pub fn new(prefix: &str) -> ScratchDir {
        ScratchDir::unlisted(prefix).expect("a scratch directory for a test")
    }

    fn make(prefix: &str, reaper: Option<&Arc<Reaper>>) -> std::io::Result<ScratchDir> {
        use rand_core::RngCore;
        use std::os::unix::fs::DirBuilderExt;
        let me = Owner::me();
        // Without a folder of the user's own, straight in the temporary directory: still
        // private, but nothing finds it again should this process be killed.
        let parent = match root() {
            Some(r) => {
                sweep_in(&r);
                r
            }
            None => std::env::temp_dir(),
        };
        let mut last = None;
        for _ in 0..TRIES {
            let path = parent.join(format!(
                "{prefix}-{}-{:016x}",
                me.mark(),
                rand_core::OsRng.next_u64()
            ));
            let make = |p: &Path| std::fs::DirBuilder::new().mode(0o700).create(p);
            let made = match reaper {
                Some(r) => r.make_dir(&path, make),
                None => make(&path),
            };
            match made {
                Ok(()) => {
                    return Ok(ScratchDir {
                        path,
                        reaper: reaper.cloned(),
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    last = Some(with_path(&path, e));
                }
                Err(e) => return Err(with_path(&path, e)),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("no scratch directory name")))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// `e`, saying which path it is about.
fn with_path(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(
        e.kind(),
        format!("cannot make scratch directory {}: {e}", path.display()),
    )
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        remove_tree(&self.path);
        if let Some(r) = &self.reaper {
            r.forget_dir(&self.path);
        }
    }
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// This user's scratch folder, `$TMPDIR/elench-<uid>`, made (mode 0700) if missing. None
/// when it cannot be made, or when what is at that path is not a folder this user owns (a
/// link, or another user's: someone made it first), which is then left alone.
pub fn root() -> Option<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let uid = euid();
    let path = std::env::temp_dir().join(format!("elench-{uid}"));
    match std::fs::DirBuilder::new().mode(0o700).create(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(_) => return None,
    }
    let m = std::fs::symlink_metadata(&path).ok()?;
    if !m.is_dir() || m.uid() != uid {
        return None;
    }
    // The user's own: whatever the umask made it, nobody else may look in.
    if m.mode() & 0o077 != 0 {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)).ok()?;
    }
    Some(path)
}

/// Removes what processes that are gone left in this user's scratch folder. A `check` calls
/// it before it starts, so what a killed one copied does not stay for good.
pub fn sweep() {
    if let Some(r) = root() {
        sweep_in(&r);
    }
}

fn sweep_in(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    let me = Owner::me();
    for e in entries.flatten() {
        // Only what a scratch directory's name says was a process that is gone: a name of
        // another shape is not elench's to remove.
        let Some(owner) = Owner::from_name(&e.file_name()) else {
            continue;
        };
        if owner.is_gone(&me) && e.file_type().is_ok_and(|t| t.is_dir()) {
            remove_tree(&e.path());
        }
    }
}

/// The process a scratch directory belongs to: its pid, the boot it ran in (the first
/// eight hex digits of the kernel's boot id), its PID namespace (the namespace's inode) and
/// its start time (clock ticks after boot). Together they name one process: the kernel
/// reuses pids, never within one boot and namespace with the same start time.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Owner {
    pid: u32,
    boot: String,
    ns: u64,
    start: u64,
}

impl Owner {
    fn me() -> Owner {
        let pid = std::process::id();
        Owner {
            pid,
            boot: boot_mark(),
            ns: pid_namespace(),
            start: start_time(pid).unwrap_or(0),
        }
    }

    /// `PID-BOOT-NS-START`, as a scratch directory's name carries it.
    fn mark(&self) -> String {
        format!("{}-{}-{}-{}", self.pid, self.boot, self.ns, self.start)
    }

    /// Reads `PREFIX-PID-BOOT-NS-START-RANDOM` back.
    fn from_name(name: &OsStr) -> Option<Owner> {
        let name = name.to_str()?;
        let mut parts = name.rsplitn(6, '-');
        let random = parts.next()?;
        let start = parts.next()?.parse().ok()?;
        let ns = parts.next()?.parse().ok()?;
        let boot = parts.next()?;
        let pid = parts.next()?.parse().ok()?;
        let prefix = parts.next()?;
        let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
        (prefix.starts_with("elench") && hex(random, 16) && hex(boot, 8)).then(|| Owner {
            pid,
            boot: boot.to_owned(),
            ns,
            start,
        })
    }

    /// Whether the process is gone (seen from `me`, this process).
    fn is_gone(&self, me: &Owner) -> bool {
        if self.boot != me.boot {
            // Made before the machine last started.
            return true;
        }
        if self.ns != me.ns {
            // A process of another PID namespace: its pid means nothing here.
            return false;
        }
        if self.pid == me.pid {
            return self.start != me.start;
        }
        match start_time(self.pid) {
            // A start time of 0: the maker could not read its own; the pid is all there is.
            Some(t) => self.start != 0 && t != self.start,
            // No such process; or no /proc to ask, then kill(2) says.
            None => !Path::new("/proc/self/stat").exists() || !pid_alive(self.pid),
        }
    }
}

/// The first eight hex digits of this boot's id, or `00000000` where the kernel gives none.
fn boot_mark() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.chars().filter(char::is_ascii_hexdigit).take(8).collect())
        .filter(|s: &String| s.len() == 8)
        .unwrap_or_else(|| "00000000".to_owned())
}

/// The inode of this process's PID namespace (`/proc/self/ns/pid`), or 0 where there is
/// none to read.
fn pid_namespace() -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/ns/pid").map_or(0, |m| m.ino())
}

/// When process `pid` started (field 22 of `/proc/PID/stat`, clock ticks after boot).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count after its end.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // SAFETY: kill(2) with signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Removes a directory and everything in it, links as links. A folder a process made
/// unwritable or untraversable (`chmod 0`) is opened up first, so that nothing stays.
pub fn remove_tree(path: &Path) {
    if std::fs::remove_dir_all(path).is_ok() || !path.exists() {
        return;
    }
    open_up(path);
    let _ = std::fs::remove_dir_all(path);
}

/// Makes every folder under `path` (never through a link) the owner's to list and change.
fn open_up(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => {
                let mode = m.permissions().mode() | 0o700;
                let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode));
            }
            _ => continue,
        }
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(e.path());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn distinct_private_and_removed() {
        let a = ScratchDir::new("elench-test");
        let b = ScratchDir::new("elench-test");
        assert_ne!(a.path(), b.path());
        let mode = std::fs::metadata(a.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::create_dir_all(a.path().join("x")).unwrap();
        let p = a.path().to_path_buf();
        drop(a);
        assert!(!p.exists());
    }

    #[test]
    fn listed_while_alive_and_removed_by_a_reap() {
        let r = Reaper::new();
        let kept = ScratchDir::create("elench-test", &r).unwrap();
        let dropped = ScratchDir::create("elench-test", &r).unwrap();
        let gone = dropped.path().to_path_buf();
        drop(dropped);
        assert_eq!(r.dirs(), vec![kept.path().to_path_buf()]);
        std::fs::write(kept.path().join("f"), "x").unwrap();
        r.reap();
        assert!(!kept.path().exists() && !gone.exists());
        // After the reap nothing new is made.
        assert!(ScratchDir::create("elench-test", &r).is_err());
    }

    #[test]
    fn names_carry_their_maker_and_read_back() {
        let me = Owner::me();
        assert!(me.start > 0, "no start time for this process");
        let s = ScratchDir::new("elench-check");
        let name = s.path().file_name().unwrap().to_owned();
        assert_eq!(Owner::from_name(&name), Some(me.clone()));
        assert!(!Owner::from_name(&name).unwrap().is_gone(&me));
        for other in [
            "notes",
            "elench-check",
            "x-1-abcdef01-7-2-0123456789abcdef",
            "elench-check-1-abcdef01-2-0123456789abcdef",
        ] {
            assert_eq!(Owner::from_name(OsStr::new(other)), None, "{other}");
        }
    }

    #[test]
    fn a_sweep_removes_what_processes_that_are_gone_left_and_nothing_else() {
        let root = root().expect("a scratch folder of this user's own");
        let mode = std::fs::metadata(&root).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        let me = Owner::me();
        // A process that has ended; this one, as if started at another time; another boot.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let name = |pid: u32, boot: &str, ns: u64, start: u64, n: u64| {
            format!("elench-check-{pid}-{boot}-{ns}-{start}-{n:016x}")
        };
        let names = [
            name(dead, &me.boot, me.ns, me.start + 1, 1),
            name(me.pid, &me.boot, me.ns, me.start + 1, 2),
            name(me.pid, "0badb007", me.ns, me.start, 3),
        ];
        let mut left = Vec::new();
        for n in &names {
            let p = root.join(n);
            std::fs::create_dir_all(p.join("tree/locked")).unwrap();
            std::fs::write(p.join("tree/.env"), "SECRET=1").unwrap();
            // A folder the process made untraversable does not keep it there.
            std::fs::set_permissions(
                p.join("tree/locked"),
                std::fs::Permissions::from_mode(0o000),
            )
            .unwrap();
            left.push(p);
        }
        let mine = ScratchDir::new("elench-check");
        let foreign = root.join(format!("notes-{}", me.pid));
        std::fs::create_dir_all(&foreign).unwrap();
        // A process of another PID namespace, whatever its pid: not judged from here.
        let elsewhere = root.join(name(dead, &me.boot, me.ns + 1, 1, 4));
        std::fs::create_dir_all(&elsewhere).unwrap();
        sweep();
        for p in &left {
            assert!(!p.exists(), "{} was left", p.display());
        }
        assert!(
            mine.path().is_dir(),
            "a live process's directory was removed"
        );
        assert!(foreign.is_dir(), "a folder of another shape was removed");
        assert!(
            elsewhere.is_dir(),
            "another namespace's directory was removed"
        );
        std::fs::remove_dir(&foreign).unwrap();
        std::fs::remove_dir(&elsewhere).unwrap();
    }
}
