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
        std::thread::sleep(Duration::from_millis(5));
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
