//! What an elench process must end or remove should it end early, kept by the front end
//! that runs the operations (the CLI for one command, the MCP server for its session) and
//! handed to each operation through `ops::Context`: the children that must not outlive
//! elench ([`Bound`]: `git ls-remote` waiting on a remote that never answers) and the
//! scratch directories not yet dropped (`scratch::ScratchDir`). The CLI's watchdog, which
//! ends the process at a time limit or a signal without running destructors, calls
//! [`Reaper::reap`] on its way out.
//!
//! It also draws numbers that must differ between the operations of one process (the
//! sandbox's uids, its per-process copies), since two operations of the MCP server may run
//! at once.
//!
//! Nothing here is process-wide: a library user that never ends early may give each
//! operation a fresh one (`ops::Context::new` does).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Debug, Default)]
pub struct Reaper {
    children: Mutex<Children>,
    dirs: Mutex<Dirs>,
    numbers: AtomicU64,
}

/// The bound children still running: their pids, and whether each leads a process group
/// of its own (then the whole group is ended). `reaped`: [`Reaper::reap`] ran, so a child
/// bound later is ended at once.
#[derive(Debug, Default)]
struct Children {
    live: Vec<(u32, bool)>,
    reaped: bool,
}

/// The scratch directories not yet dropped; `reaped` as for [`Children`].
#[derive(Debug, Default)]
struct Dirs {
    live: Vec<PathBuf>,
    reaped: bool,
}

/// A poisoned lock still holds a usable list: a panic elsewhere must not stop the cleanup.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Reaper {
    pub fn new() -> Arc<Reaper> {
        Arc::new(Reaper::default())
    }

    /// Removes every scratch directory listed here and ends every bound child still
    /// running, for a process about to end without running destructors. What is made or
    /// bound afterwards is refused or ended at once, so nothing slips in between this and
    /// the end of the process.
    pub fn reap(&self) {
        let dirs = {
            let mut d = lock(&self.dirs);
            d.reaped = true;
            std::mem::take(&mut d.live)
        };
        for p in dirs {
            let _ = std::fs::remove_dir_all(p);
        }
        // Held to the end: a child is never signalled after it was reaped (see `Bound`).
        let mut c = lock(&self.children);
        c.reaped = true;
        for (pid, group) in &c.live {
            kill(*pid, *group);
        }
    }

    /// A number no earlier call on this reaper returned (until it wraps, after 2^64).
    pub fn number(&self) -> u64 {
        self.numbers.fetch_add(1, Ordering::Relaxed)
    }

    /// Makes a scratch directory with `make` and lists it, under the lock [`Reaper::reap`]
    /// takes, so that a reap either removes it or comes first and nothing is made.
    pub(crate) fn make_dir(
        &self,
        path: &Path,
        make: impl FnOnce(&Path) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let mut d = lock(&self.dirs);
        if d.reaped {
            return Err(std::io::Error::other(
                "elench is ending: no new scratch directory",
            ));
        }
        make(path)?;
        d.live.push(path.to_path_buf());
        Ok(())
    }

    /// Forgets a scratch directory that was removed.
    pub(crate) fn forget_dir(&self, path: &Path) {
        lock(&self.dirs).live.retain(|p| p != path);
    }

    /// The scratch directories listed now (for tests).
    pub fn dirs(&self) -> Vec<PathBuf> {
        lock(&self.dirs).live.clone()
    }

    /// The pids of the bound children running now (for tests).
    pub fn children(&self) -> Vec<u32> {
        lock(&self.children).live.iter().map(|(p, _)| *p).collect()
    }
}

fn kill(pid: u32, group: bool) {
    if let Ok(pid) = i32::try_from(pid) {
        let target = if group { -pid } else { pid };
        // SAFETY: kill(2) only sends a signal; no memory is involved.
        unsafe { libc::kill(target, libc::SIGKILL) };
    }
}

/// A child process that ends with elench: when its reaper reaps (the watchdog answering for
/// a command at its time limit), or when this handle is dropped. Waiting and ending go
/// through the same lock as [`Reaper::reap`], so a pid is never signalled after its process
/// was reaped (when the pid may already be another process's).
pub struct Bound {
    child: std::process::Child,
    group: bool,
    reaped: bool,
    reaper: Arc<Reaper>,
}

impl Bound {
    /// `group`: the child leads a process group of its own (spawned with `process_group(0)`).
    /// A child bound after its reaper reaped is ended at once.
    pub fn new(child: std::process::Child, group: bool, reaper: &Arc<Reaper>) -> Bound {
        let mut c = lock(&reaper.children);
        if c.reaped {
            kill(child.id(), group);
        } else {
            c.live.push((child.id(), group));
        }
        drop(c);
        Bound {
            child,
            group,
            reaped: false,
            reaper: reaper.clone(),
        }
    }

    pub fn child_mut(&mut self) -> &mut std::process::Child {
        &mut self.child
    }

    /// `Child::try_wait`; a child that has ended is forgotten.
    pub fn try_wait(&mut self) -> std::io::Result<Option<std::process::ExitStatus>> {
        let mut c = lock(&self.reaper.children);
        let r = self.child.try_wait();
        if !matches!(r, Ok(None)) {
            self.reaped = true;
            let id = self.child.id();
            c.live.retain(|(p, _)| *p != id);
        }
        r
    }

    /// Ends the child (and its group) and reaps it.
    pub fn end(&mut self) {
        if self.reaped {
            return;
        }
        let mut c = lock(&self.reaper.children);
        kill(self.child.id(), self.group);
        let _ = self.child.wait();
        self.reaped = true;
        let id = self.child.id();
        c.live.retain(|(p, _)| *p != id);
    }
}

impl Drop for Bound {
    fn drop(&mut self) {
        self.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn sleeper() -> std::process::Child {
        let mut cmd = std::process::Command::new("sleep");
        cmd.arg("30");
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        cmd.spawn().unwrap()
    }

    /// Whether `pid` has ended (a zombie counts: its parent, this test, has not waited yet).
    fn ended(pid: u32) -> bool {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        stat.is_empty() || stat.split(") ").nth(1).is_some_and(|s| s.starts_with('Z'))
    }

    fn wait_until(what: impl Fn() -> bool) -> bool {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if what() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    #[test]
    fn reaping_ends_the_children_of_that_reaper_only() {
        let (mine, other) = (Reaper::new(), Reaper::new());
        let mut a = Bound::new(sleeper(), true, &mine);
        let mut b = Bound::new(sleeper(), true, &other);
        let (pa, pb) = (a.child_mut().id(), b.child_mut().id());
        assert_eq!(mine.children(), vec![pa]);
        mine.reap();
        assert!(wait_until(|| ended(pa)), "the reaped child still runs");
        assert!(!ended(pb), "another reaper's child was ended");
        // Bound after the reap: ended at once.
        let mut late = Bound::new(sleeper(), true, &mine);
        let pl = late.child_mut().id();
        assert!(
            wait_until(|| ended(pl)),
            "a child bound after the reap runs on"
        );
        b.end();
        assert!(ended(pb));
        assert!(other.children().is_empty());
        drop((a, late));
    }

    #[test]
    fn numbers_differ() {
        let r = Reaper::new();
        let n: std::collections::BTreeSet<u64> = (0..100).map(|_| r.number()).collect();
        assert_eq!(n.len(), 100);
    }
}
