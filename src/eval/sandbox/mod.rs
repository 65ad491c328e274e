//! Confinement for every process a predicate starts (`test`, `run`).
//!
//! A `check` copies the tree once per job slot (a pristine copy nothing writes to); every
//! process sees that copy as its working directory through a writable layer of its own that
//! is thrown away when it ends ([`Layer`]), a read-only view of the system (`/usr`, `/etc`,
//! the library and binary directories), a private `/tmp`, and whatever the operator exposes
//! read-only (toolchains, caches). No network, no home directory, no store, no keys, no
//! descriptor of elench's. Limits: wall time (the claim's deadline), address space, process
//! count, and the space its writes may take. At the deadline the whole sandbox is killed and
//! `run` returns only once every process in it is gone.
//!
//! The per-process layer is an overlay (the pristine copy underneath, the process's writes
//! in a size-limited tmpfs above) mounted in a mount namespace of the process's own before
//! bubblewrap (or, unconfined, the process itself) starts. Not run as root, that namespace
//! belongs to a new user namespace mapping elench's uid and gid to themselves, where an
//! unprivileged process may mount both (Linux 5.11); bubblewrap nests its own in it. Where
//! overlays cannot be mounted even so, each process gets a fresh copy of the pristine copy
//! instead, removed when it ends.
//!
//! The reference confinement is bubblewrap: new PID, network, IPC and UTS namespaces; killing
//! the sandbox's first process makes the kernel end every other process in its namespace.
//! When elench runs as root the sandboxed command drops to an unprivileged uid of its own
//! (with `setpriv`), since the kernel does not apply a process-count limit to root.
//!
//! Without bubblewrap (`Confinement::None`, chosen only by the operator) processes run in
//! the scratch copy with the same limits, in their own process group, and are killed as a
//! group; that is best effort, and records made that way say `hermeticity: none`.
//!
//! Here: the sandbox, its limits and one process's run. The writable layer's mounts are
//! `overlay`, the copies of the tree `copy`, and the watching of a running process (its
//! output, its pid, its end) `process`.

mod copy;
mod overlay;
mod process;

pub use copy::{clone_dir, copy_tree, give_away, make_dir};

use crate::reaper::Reaper;
use crate::scratch::ScratchDir;
use overlay::OverlayMounts;
use process::{
    exited_unreaped, is_full, read_child_pid, spawn_reader, wait_gone, ExitWatch, RemoveOnDrop,
};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// Where the process sees its copy of the tree inside the sandbox.
pub const TREE_INSIDE: &str = "/tree";
/// A writable directory for reports (JUnit XML) that outlives the process.
pub const OUT_INSIDE: &str = "/elench-out";
/// How much of each output stream is kept.
pub const OUTPUT_CAP: usize = 1 << 20;
/// Default space for one process's writes (its layer over the tree, and `/tmp`), bytes.
pub const SCRATCH_DEFAULT: u64 = 1 << 30;
/// A root-run sandbox drops to an unprivileged uid of its own, so that the process limit
/// (which the kernel counts per user) counts only that sandbox's processes, never another
/// claim's evaluated beside it. The uids come from a range no account uses.
const SANDBOX_UID_BASE: u32 = 3_000_000_000;

/// A uid for one job slot (whose processes run one at a time): distinct across the slots
/// of this process (a number from its `reaper`, which every operation of the process
/// shares), and (through the process id) unlikely to meet another `check` running at the
/// same time.
pub fn sandbox_uid(reaper: &Reaper) -> u32 {
    let n = (reaper.number() % 1000) as u32;
    SANDBOX_UID_BASE + (std::process::id() % 1_000_000) * 1000 + n
}

/// How often a running process's watch looks whether `check` was interrupted.
const CANCEL_EVERY: Duration = Duration::from_millis(20);

/// How each process gets its own writable view of the pristine copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    /// An overlay over the pristine copy with its writes in a tmpfs (size-limited), in a
    /// mount namespace of the process's own (and, not root, a user namespace of its own):
    /// nothing is copied per process.
    Overlay,
    /// A fresh copy of the pristine copy per process, removed when it ends.
    Copy,
}

#[derive(Debug, Clone)]
pub enum Confinement {
    /// bubblewrap at this path.
    Bwrap(PathBuf),
    /// No sandbox (`--no-sandbox`).
    None,
}

#[derive(Debug, Clone)]
pub struct Limits {
    /// Address-space limit per process, bytes.
    pub memory: u64,
    /// Processes (threads count too) the sandbox may have at once.
    pub processes: u64,
    /// Space for one process's writes: its layer over the tree and its `/tmp` together
    /// (a tmpfs of this size), and the largest file any process may write, bytes.
    pub scratch: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory: 2 << 30,
            processes: 256,
            scratch: SCRATCH_DEFAULT,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Sandbox {
    pub confinement: Confinement,
    /// Host paths made visible read-only at the same place (absolute).
    pub expose: Vec<PathBuf>,
    pub limits: Limits,
    /// Set by [`Sandbox::probe`] to the best this machine allows.
    pub layer: Layer,
    /// Lists the scratch directories of the sandbox's slots and draws its numbers (the
    /// front end's, from `ops::Context::reaper`).
    pub reaper: Arc<Reaper>,
}

/// How a process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    Exited(i32),
    Signaled(i32),
    TimedOut,
    /// Ended because `check` was interrupted.
    Cancelled,
    NotStarted(String),
}

#[derive(Debug, Clone)]
pub struct Output {
    pub ending: Ending,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Some output beyond [`OUTPUT_CAP`] was dropped.
    pub truncated: bool,
    /// Its stdout, in particular, was cut.
    pub stdout_cut: bool,
    /// The process's writes filled its scratch space (its writes may have failed).
    pub scratch_full: bool,
}

/// One process to run.
pub struct Job<'a> {
    /// Program and arguments, as the process sees paths.
    pub argv: Vec<String>,
    /// Environment beyond the sandbox's own (PATH, HOME, TMPDIR, LANG).
    pub env: Vec<(String, String)>,
    /// The pristine copy of the tree (host path): never written, whatever the process does.
    pub tree: &'a Path,
    /// The report directory (host path).
    pub out: &'a Path,
    /// A directory of the slot's own where the process's writable layer is made.
    pub work: &'a Path,
    pub deadline: Instant,
    /// Set when `check` is interrupted: the process is ended as at the deadline.
    pub cancel: Option<&'a AtomicBool>,
    /// The uid a root-run sandbox drops to (it owns the scratch copy).
    pub uid: u32,
    /// How much of its stdout is kept (its stderr: [`OUTPUT_CAP`]).
    pub stdout_cap: usize,
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// What to do when bubblewrap is not installed.
pub const BWRAP_MISSING: &str = "install it (Debian and Ubuntu: `apt-get install bubblewrap`; \
     Fedora: `dnf install bubblewrap`; Alpine: `apk add bubblewrap`; Arch: `pacman -S \
     bubblewrap`), or pass --no-sandbox to run the processes unconfined (records then say \
     hermeticity: none)";

/// bubblewrap on PATH, if any.
pub fn find_bwrap() -> Option<PathBuf> {
    find_on_path("bwrap")
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

impl Sandbox {
    /// The hermeticity a record made with this sandbox states.
    pub fn hermeticity(&self) -> &'static str {
        match self.confinement {
            Confinement::Bwrap(_) => "container",
            Confinement::None => "none",
        }
    }

    /// The report directory as the process sees it.
    pub fn out_inside(&self, job_out: &Path) -> String {
        match self.confinement {
            Confinement::Bwrap(_) => OUT_INSIDE.to_owned(),
            Confinement::None => job_out.display().to_string(),
        }
    }

    /// Whether a sandbox can be made here, and with which [`Layer`]: runs a process that
    /// writes in its tree, with an overlay where elench may mount one, else with a copy.
    /// Err says why no sandbox can be made.
    pub fn probe(&mut self) -> Result<(), String> {
        // Not root, the overlay is mounted in a user namespace of the process's own, which
        // some kernels or policies refuse: then the copy.
        self.layer = Layer::Overlay;
        if self.probe_once().is_ok() {
            return Ok(());
        }
        self.layer = Layer::Copy;
        self.probe_once()
    }

    fn probe_once(&self) -> Result<(), String> {
        if let Confinement::Bwrap(_) = self.confinement {
            if is_root() && !Path::new("/usr/bin/setpriv").is_file() {
                return Err(
                    "elench runs as root and /usr/bin/setpriv (util-linux), which the \
                            sandbox needs to drop to an unprivileged user, is missing"
                        .into(),
                );
            }
        }
        let scratch =
            ScratchDir::create("elench-probe", &self.reaper).map_err(|e| e.to_string())?;
        let uid = sandbox_uid(&self.reaper);
        let tree = scratch.path().join("tree");
        let out = scratch.path().join("out");
        let work = scratch.path().join("work");
        for d in [&tree, &out, &work] {
            make_dir(d, 0o755)?;
        }
        give_away(&tree, uid)?;
        give_away(&out, uid)?;
        // The process's own /tmp is `$TMPDIR` (unconfined, in its layer); unconfined with a
        // copy it is the host's, not to be written to.
        let tmp = match (&self.confinement, self.layer) {
            (Confinement::None, Layer::Copy) => "",
            _ => " && echo y > \"$TMPDIR/probe\"",
        };
        let o = self.run(Job {
            argv: vec![
                "sh".into(),
                "-c".into(),
                format!("echo x > probe && test -s probe{tmp}"),
            ],
            env: Vec::new(),
            tree: &tree,
            out: &out,
            work: &work,
            deadline: Instant::now() + Duration::from_secs(30),
            cancel: None,
            uid,
            stdout_cap: OUTPUT_CAP,
        });
        match o.ending {
            Ending::Exited(0) => Ok(()),
            Ending::NotStarted(why) => Err(why),
            other => Err(format!(
                "a test process in the sandbox ended with {other:?}: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            )),
        }
    }

    fn environment(&self, extra: &[(String, String)], tree: &str) -> Vec<(String, String)> {
        let path =
            std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".to_owned());
        let mut env = vec![
            ("PATH".to_owned(), path),
            ("HOME".to_owned(), "/tmp".to_owned()),
            ("TMPDIR".to_owned(), "/tmp".to_owned()),
            ("LANG".to_owned(), "C.UTF-8".to_owned()),
            ("PWD".to_owned(), tree.to_owned()),
        ];
        // Nobody is at a terminal in here: no pager, no editor, no colour.
        env.extend(crate::child_env::for_sandbox());
        // An exposed toolchain keeps the variable that names it (rustup's proxies need it).
        let home = std::env::var_os("HOME").map(PathBuf::from);
        for (var, default) in [("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo")] {
            let value = std::env::var_os(var)
                .map(PathBuf::from)
                .or_else(|| home.as_ref().map(|h| h.join(default)));
            if let Some(v) = value {
                if self.expose.iter().any(|e| v.starts_with(e)) {
                    env.push((var.to_owned(), v.display().to_string()));
                }
            }
        }
        env.extend(extra.iter().cloned());
        env
    }

    fn bwrap_args(&self, job: &Job<'_>, view: &Path, overlay: Option<&Path>) -> Vec<String> {
        let mut a: Vec<String> = [
            "--unshare-ipc",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--die-with-parent",
            "--new-session",
            "--info-fd",
            "3",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if !is_root() {
            a.push("--unshare-user".into());
        }
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        a.extend(s(&[
            "--ro-bind",
            "/usr",
            "/usr",
            "--ro-bind",
            "/etc",
            "/etc",
        ]));
        for d in ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"] {
            let p = Path::new(d);
            match std::fs::symlink_metadata(p) {
                Ok(m) if m.file_type().is_symlink() => {
                    if let Ok(t) = std::fs::read_link(p) {
                        a.extend(s(&["--symlink", &t.display().to_string(), d]));
                    }
                }
                Ok(m) if m.is_dir() => a.extend(s(&["--ro-bind", d, d])),
                _ => {}
            }
        }
        a.extend(s(&["--proc", "/proc", "--dev", "/dev"]));
        match overlay {
            // The process's /tmp shares the size-limited tmpfs of its layer.
            Some(layer) => a.extend(s(&[
                "--bind",
                &layer.join("tmp").display().to_string(),
                "/tmp",
            ])),
            None => a.extend(s(&[
                "--size",
                &self.limits.scratch.to_string(),
                "--perms",
                "1777",
                "--tmpfs",
                "/tmp",
            ])),
        }
        let mut made: Vec<PathBuf> = Vec::new();
        for e in &self.expose {
            if !e.exists() || ["/usr", "/etc"].iter().any(|s| e.starts_with(s)) {
                continue;
            }
            // Mount points on the way are made world-traversable, so an unprivileged
            // process can reach the toolchain even when the host's home is private.
            let mut ancestors: Vec<&Path> = e.ancestors().skip(1).collect();
            ancestors.reverse();
            for anc in ancestors {
                if anc == Path::new("/") || made.iter().any(|m| m == anc) {
                    continue;
                }
                made.push(anc.to_path_buf());
                a.extend(s(&["--perms", "0755", "--dir", &anc.display().to_string()]));
            }
            let p = e.display().to_string();
            a.extend(s(&["--ro-bind", &p, &p]));
        }
        a.extend(s(&[
            "--bind",
            &view.display().to_string(),
            TREE_INSIDE,
            "--bind",
            &job.out.display().to_string(),
            OUT_INSIDE,
            "--chdir",
            TREE_INSIDE,
            "--clearenv",
        ]));
        for (k, v) in self.environment(&job.env, TREE_INSIDE) {
            a.extend(["--setenv".to_owned(), k, v]);
        }
        a.push("--".into());
        if is_root() {
            a.extend(s(&[
                "/usr/bin/setpriv",
                &format!("--reuid={}", job.uid),
                &format!("--regid={}", job.uid),
                "--clear-groups",
                "--no-new-privs",
                "--",
            ]));
        }
        a.extend(job.argv.iter().cloned());
        a
    }

    /// Runs one process to its end or the job's deadline, whichever is first.
    pub fn run(&self, job: Job<'_>) -> Output {
        let not_started = |why: String| Output {
            ending: Ending::NotStarted(why),
            stdout: Vec::new(),
            stderr: Vec::new(),
            truncated: false,
            stdout_cut: false,
            scratch_full: false,
        };
        if Instant::now() >= job.deadline {
            return Output {
                ending: Ending::TimedOut,
                stdout: Vec::new(),
                stderr: Vec::new(),
                truncated: false,
                stdout_cut: false,
                scratch_full: false,
            };
        }
        // The process's own writable view of the pristine copy.
        let overlay = match self.layer {
            Layer::Overlay => {
                let ids = if is_root() {
                    (job.uid, job.uid)
                } else {
                    // SAFETY: geteuid and getegid have no preconditions and cannot fail.
                    unsafe { (libc::geteuid(), libc::getegid()) }
                };
                match OverlayMounts::new(job.tree, job.work, ids, self.limits.scratch) {
                    Ok(m) => Some(m),
                    Err(why) => return not_started(why),
                }
            }
            Layer::Copy => None,
        };
        // Unconfined, the process itself moves into its layer (bubblewrap does it otherwise).
        let enter = matches!(self.confinement, Confinement::None);
        let mut _copy: Option<RemoveOnDrop> = None;
        let view: PathBuf = match &overlay {
            Some(m) => m.merged_path.clone(),
            None => {
                // The slot's own work folder, where nothing else makes names.
                let d = job.work.join(format!("p{}", self.reaper.number()));
                _copy = Some(RemoveOnDrop(d.clone()));
                if let Err(why) = clone_dir(job.tree, &d, job.uid) {
                    return not_started(format!("cannot copy the tree for the process: {why}"));
                }
                d
            }
        };
        let mut info = [-1i32; 2];
        let mut cmd = match &self.confinement {
            Confinement::Bwrap(bwrap) => {
                // SAFETY: `info` is a valid array of two ints for pipe2 to fill.
                if unsafe { libc::pipe2(info.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
                    return not_started(format!(
                        "cannot make a pipe: {}",
                        std::io::Error::last_os_error()
                    ));
                }
                let mut c = Command::new(bwrap);
                c.args(self.bwrap_args(
                    &job,
                    &view,
                    overlay.as_ref().map(|m| m.layer_path.as_path()),
                ));
                c
            }
            Confinement::None => {
                let Some((prog, args)) = job.argv.split_first() else {
                    return not_started("nothing to run".into());
                };
                let mut c = Command::new(prog);
                c.args(args).env_clear();
                if overlay.is_none() {
                    // (With an overlay, the process moves there itself once it is mounted.)
                    c.current_dir(&view);
                }
                let tree = view.display().to_string();
                c.envs(self.environment(&job.env, &tree));
                if let Some(m) = &overlay {
                    // Its /tmp is the host's; its own is in the tmpfs of its layer.
                    let tmp = m.layer_path.join("tmp").display().to_string();
                    c.env("TMPDIR", &tmp).env("HOME", &tmp);
                }
                c
            }
        };
        let limits = self.limits.clone();
        let info_w = info[1];
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mounts = overlay.clone();
        // SAFETY: between fork and exec the closure only makes system calls (setrlimit,
        // unshare, open/write/close of /proc/self files, mount, mkdir, dup2, close_range)
        // on strings made before the fork, and allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                let set = |res, v: u64| {
                    let r = libc::rlimit {
                        rlim_cur: v as libc::rlim_t,
                        rlim_max: v as libc::rlim_t,
                    };
                    libc::setrlimit(res, &r)
                };
                set(libc::RLIMIT_NPROC, limits.processes);
                set(libc::RLIMIT_AS, limits.memory);
                set(libc::RLIMIT_CORE, 0);
                // No single file beyond the scratch space, wherever it is written.
                set(libc::RLIMIT_FSIZE, limits.scratch);
                // The caller's umask (CI jobs often set 077) neither shapes the layer's
                // folders nor what the process writes: the same files, whoever runs check.
                libc::umask(0o022);
                if let Some(m) = &mounts {
                    m.mount(enter)?;
                }
                if info_w >= 0 && libc::dup2(info_w, 3) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // Nothing else of elench's reaches the process (bubblewrap closes the
                // info descriptor before it starts the command).
                crate::child_env::cloexec_from(if info_w >= 0 { 4 } else { 3 })
            });
        }
        let spawned = cmd.spawn();
        if info_w >= 0 {
            // SAFETY: the write end is ours; the child has its own copy as fd 3.
            unsafe { libc::close(info_w) };
        }
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => {
                if info[0] >= 0 {
                    // SAFETY: closing our own read end once.
                    unsafe { libc::close(info[0]) };
                }
                return not_started(match &self.confinement {
                    Confinement::Bwrap(bwrap) if e.kind() == std::io::ErrorKind::NotFound => {
                        format!(
                            "bubblewrap ({}) is not installed: {}",
                            bwrap.display(),
                            BWRAP_MISSING
                        )
                    }
                    Confinement::Bwrap(bwrap) => {
                        format!("cannot start bubblewrap ({}): {e}", bwrap.display())
                    }
                    Confinement::None => format!("cannot start {}: {e}", job.argv.join(" ")),
                });
            }
        };
        // A hold on the process's tmpfs (through its mount namespace), to see at the end
        // whether its writes filled it.
        let layer_fs = overlay.as_ref().and_then(|m| {
            use std::os::unix::fs::OpenOptionsExt;
            let p = format!("/proc/{}/root{}", child.id(), m.layer_path.display());
            std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_PATH | libc::O_DIRECTORY)
                .open(p)
                .ok()
        });
        // Read on the side: if the report never comes, the deadline still holds.
        let (pid_tx, pid_rx) = mpsc::channel();
        if info[0] >= 0 {
            let fd = info[0];
            std::thread::spawn(move || {
                let _ = pid_tx.send(read_child_pid(fd));
            });
        }
        let mut inner_pid: Option<i32> = None;
        let (tx, rx) = mpsc::channel();
        let readers = [
            child
                .stdout
                .take()
                .map(|s| spawn_reader(Box::new(s), 0, job.stdout_cap, tx.clone())),
            child
                .stderr
                .take()
                .map(|s| spawn_reader(Box::new(s), 1, OUTPUT_CAP, tx.clone())),
        ];
        drop(tx);
        let pgid = child.id() as i32;
        let watch = ExitWatch::new(pgid);
        let mut timed_out = false;
        let mut cancelled = false;
        loop {
            if let Ok(p) = pid_rx.try_recv() {
                inner_pid = p;
            }
            if exited_unreaped(pgid) {
                break;
            }
            let cancelled_now = job.cancel.is_some_and(|c| c.load(Ordering::SeqCst));
            if cancelled_now || Instant::now() >= job.deadline {
                timed_out = true;
                cancelled = cancelled_now;
                if let Some(p) = inner_pid {
                    // The sandbox's first process: ending it ends its PID namespace.
                    // SAFETY: plain kill(2); the process is alive, its parent unreaped.
                    unsafe { libc::kill(p, libc::SIGKILL) };
                }
                break;
            }
            // Woken by the exit itself; the slice bounds how late an interrupt is seen.
            let left = job.deadline.saturating_duration_since(Instant::now());
            watch.wait(left.min(CANCEL_EVERY));
        }
        // Whatever the main process left behind goes too (in a sandbox the namespace went
        // with it; without one, its process group). The group leader is not reaped yet, so
        // the group id cannot have been reused.
        // SAFETY: plain kill(2) of our child's process group.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        let status = child.wait().ok();
        if timed_out {
            if inner_pid.is_none() {
                inner_pid = pid_rx
                    .recv_timeout(Duration::from_millis(200))
                    .ok()
                    .flatten();
            }
            if let Some(pid) = inner_pid {
                wait_gone(pid);
            }
        }
        let (mut stdout, mut stderr, mut truncated) = (Vec::new(), Vec::new(), false);
        let mut stdout_cut = false;
        let live = readers.iter().filter(|r| r.is_some()).count();
        for _ in 0..live {
            match rx.recv_timeout(Duration::from_secs(5)) {
                Ok((0, bytes, cut)) => {
                    stdout = bytes;
                    stdout_cut = cut;
                    truncated |= cut;
                }
                Ok((_, bytes, cut)) => {
                    stderr = bytes;
                    truncated |= cut;
                }
                // A process that escaped its group still holds the pipe: stop waiting.
                Err(_) => break,
            }
        }
        use std::os::unix::process::ExitStatusExt;
        let ending = if cancelled {
            Ending::Cancelled
        } else if timed_out {
            Ending::TimedOut
        } else {
            match status {
                Some(st) => match (st.code(), st.signal()) {
                    (Some(c), _) => Ending::Exited(c),
                    (None, Some(s)) => Ending::Signaled(s),
                    (None, None) => Ending::NotStarted("no exit status".into()),
                },
                None => Ending::NotStarted("lost track of the process".into()),
            }
        };
        Output {
            ending,
            stdout,
            stderr,
            truncated,
            stdout_cut,
            scratch_full: layer_fs.is_some_and(|f| is_full(&f)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::paths::Tree;
    use std::os::unix::fs::PermissionsExt;

    fn unconfined() -> Sandbox {
        Sandbox {
            confinement: Confinement::None,
            expose: Vec::new(),
            limits: Limits::default(),
            layer: Layer::Copy,
            reaper: Reaper::new(),
        }
    }

    /// `dir` holds the pristine tree at `dir/tree` and per-process layers under `dir/work`.
    fn job<'a>(cmd: &str, dir: &'a Path, secs: u64) -> Job<'a> {
        for d in ["tree", "work"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        let tree: &'a Path = Box::leak(dir.join("tree").into_boxed_path());
        let work: &'a Path = Box::leak(dir.join("work").into_boxed_path());
        Job {
            argv: vec!["sh".into(), "-c".into(), cmd.into()],
            env: vec![("EXTRA".into(), "yes".into())],
            tree,
            out: dir,
            work,
            deadline: Instant::now() + Duration::from_secs(secs),
            cancel: None,
            uid: sandbox_uid(&Reaper::new()),
            stdout_cap: OUTPUT_CAP,
        }
    }

    #[test]
    fn the_copy_holds_what_the_tree_id_covers_minus_hidden_paths() {
        let s = ScratchDir::new("elench-copy");
        let src = s.path().join("src");
        for d in ["a/.git", ".elench", "keys", "b"] {
            std::fs::create_dir_all(src.join(d)).unwrap();
        }
        std::fs::write(src.join("a/x.sh"), "echo").unwrap();
        std::fs::set_permissions(src.join("a/x.sh"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::fs::write(src.join("a/.git/HEAD"), "ref").unwrap();
        std::fs::write(src.join(".elench/FORMAT"), "x").unwrap();
        std::fs::write(src.join("keys/h.pem"), "secret").unwrap();
        std::fs::write(src.join("b/.elench"), "a file, not the store").unwrap();
        std::os::unix::fs::symlink("../a/x.sh", src.join("b/link")).unwrap();
        let tree = Tree::new(&src).hide(Path::new("keys/h.pem"));
        let dst = s.path().join("dst");
        copy_tree(&tree, &dst, sandbox_uid(&Reaper::new())).unwrap();
        let mode = std::fs::metadata(dst.join("a/x.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o111, 0o111);
        assert!(!dst.join("a/.git").exists());
        assert!(!dst.join(".elench").exists());
        assert!(!dst.join("keys/h.pem").exists());
        assert!(dst.join("b/.elench").is_file());
        assert_eq!(
            std::fs::read_link(dst.join("b/link")).unwrap(),
            Path::new("../a/x.sh")
        );
    }

    #[test]
    fn a_copy_inside_its_own_tree_does_not_copy_itself() {
        let s = ScratchDir::new("elench-copy");
        std::fs::create_dir_all(s.path().join("src")).unwrap();
        std::fs::write(s.path().join("src/a"), "a").unwrap();
        let dst = s.path().join("scratch/tree");
        copy_tree(&Tree::new(s.path()), &dst, sandbox_uid(&Reaper::new())).unwrap();
        assert!(dst.join("src/a").is_file());
        assert!(!dst.join("scratch").exists());
    }

    #[test]
    fn output_exit_code_and_environment_are_captured() {
        let s = ScratchDir::new("elench-run");
        std::fs::create_dir_all(s.path()).unwrap();
        let o = unconfined().run(job(
            "echo out; echo err >&2; echo $EXTRA; exit 7",
            s.path(),
            30,
        ));
        assert_eq!(o.ending, Ending::Exited(7));
        assert_eq!(o.stdout, b"out\nyes\n");
        assert_eq!(o.stderr, b"err\n");
        assert!(!o.truncated);
        let o = unconfined().run(job("head -c 3000000 /dev/zero", s.path(), 30));
        assert_eq!(o.stdout.len(), OUTPUT_CAP);
        assert!(o.truncated);
    }

    #[test]
    fn the_deadline_ends_the_process_and_what_it_left_behind() {
        let s = ScratchDir::new("elench-run");
        std::fs::create_dir_all(s.path()).unwrap();
        let marker = s.path().join("late");
        let cmd = format!("(sleep 2; touch {}) & sleep 60", marker.display());
        let o = unconfined().run(job(&cmd, s.path(), 1));
        assert_eq!(o.ending, Ending::TimedOut);
        std::thread::sleep(Duration::from_millis(2500));
        assert!(
            !marker.exists(),
            "a background process outlived the deadline"
        );
    }
}
