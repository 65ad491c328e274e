//! Watching one running process: its output read up to a cap, the pid bubblewrap reports,
//! whether it exited, and the wait for a killed namespace to empty.

use std::io::Read;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

type Chunk = (u8, Vec<u8>, bool);

pub(super) fn spawn_reader(
    mut r: Box<dyn Read + Send>,
    which: u8,
    cap: usize,
    tx: mpsc::Sender<Chunk>,
) {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut cut = false;
        let mut buf = [0u8; 16 * 1024];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = cap.saturating_sub(kept.len());
                    if n > room {
                        cut = true;
                    }
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
            }
        }
        let _ = tx.send((which, kept, cut));
    });
}

/// bubblewrap's `--info-fd` reports the host pid of the sandbox's first process.
pub(super) fn read_child_pid(fd: i32) -> Option<i32> {
    use std::os::fd::FromRawFd;
    // SAFETY: `fd` is the read end of our pipe, owned from here on by the File.
    let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
    let mut text = String::new();
    let _ = f.read_to_string(&mut text);
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("child-pid")?
        .as_i64()
        .and_then(|p| i32::try_from(p).ok())
}

/// Whether our child has exited, without reaping it.
pub(super) fn exited_unreaped(pid: i32) -> bool {
    // SAFETY: waitid fills `info`, a zeroed siginfo_t we own; WNOWAIT leaves the child
    // waitable for `Child::wait`.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let r = libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        // An error (no such child) means there is nothing left to wait for.
        r != 0 || info.si_pid() != 0
    }
}

/// How the run of a process learns that it exited: a pidfd of it, which becomes readable the
/// moment it exits (it is not reaped: `Child::wait` still reaps it), where the kernel has
/// them (Linux 5.3); else a short sleep between looks. A `run("true")` takes a few
/// milliseconds, so sleeping 5 ms between looks cost as much again as the process itself.
pub(super) struct ExitWatch(Option<std::os::fd::OwnedFd>);

/// The longest a watch sleeps between looks without a pidfd.
const LOOK_EVERY: Duration = Duration::from_millis(5);

impl ExitWatch {
    pub(super) fn new(pid: i32) -> ExitWatch {
        use std::os::fd::FromRawFd;
        // SAFETY: pidfd_open(2) takes a pid and flags and returns a new descriptor (close on
        // exec) or -1; the descriptor is then owned by the OwnedFd alone.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        let fd = i32::try_from(fd).ok().filter(|fd| *fd >= 0);
        // SAFETY: see above: a fresh descriptor nothing else owns.
        ExitWatch(fd.map(|fd| unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }))
    }

    /// Waits at most `most`, and returns as soon as the process exits (without a pidfd: at
    /// most [`LOOK_EVERY`], whatever `most`).
    pub(super) fn wait(&self, most: Duration) {
        use std::os::fd::AsRawFd;
        let Some(fd) = &self.0 else {
            std::thread::sleep(most.min(LOOK_EVERY));
            return;
        };
        let mut p = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // Rounded up, so that a wait never spins on 0 before the time is out.
        let ms = i32::try_from(most.as_micros().div_ceil(1000)).unwrap_or(i32::MAX);
        // SAFETY: poll(2) on one pollfd we own; an interruption only ends the wait early.
        unsafe { libc::poll(&mut p, 1, ms) };
    }
}

/// Waits (bounded) until a killed namespace's first process is gone or a zombie: the kernel
/// ends every other process of the namespace before that.
pub(super) fn wait_gone(pid: i32) {
    let stat = format!("/proc/{pid}/stat");
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        match std::fs::read_to_string(&stat) {
            Err(_) => return,
            Ok(s) => {
                let state = s
                    .rsplit(')')
                    .next()
                    .and_then(|r| r.split_whitespace().next());
                if matches!(state, Some("Z" | "X")) {
                    return;
                }
            }
        }
        std::thread::sleep(LOOK_EVERY);
    }
}

/// Whether a filesystem has (almost) no room or no inodes left.
pub(super) fn is_full(f: &std::fs::File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: fstatfs fills the zeroed struct it is given, from a descriptor we own.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatfs(f.as_raw_fd(), &mut st) } != 0 {
        return false;
    }
    let free = (st.f_bavail as u64).saturating_mul(st.f_bsize as u64);
    free < 64 << 10 || (st.f_files > 0 && st.f_ffree == 0)
}

/// A directory removed (without following links) when this is dropped.
pub(super) struct RemoveOnDrop(pub(super) PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_wakes_when_the_process_exits_and_leaves_it_to_be_reaped() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 0.2"])
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let watch = ExitWatch::new(pid);
        assert!(watch.0.is_some(), "this kernel has pidfds (Linux 5.3)");
        let started = Instant::now();
        // Long enough that only the exit can end the wait in time.
        while !exited_unreaped(pid) {
            watch.wait(Duration::from_secs(60));
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "not woken by the exit"
            );
        }
        assert!(started.elapsed() >= Duration::from_millis(100));
        assert!(child.wait().unwrap().success());
        // A watch with nothing to watch only sleeps a short while.
        let started = Instant::now();
        ExitWatch(None).wait(Duration::from_secs(60));
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}
