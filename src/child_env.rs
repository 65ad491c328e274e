//! What the environment of every process elench starts (git, `check`'s runners and the
//! commands a predicate runs) says about people: there is no pager to page through, no
//! editor to type into, no colour to read, so no child can wait for a person who is not
//! there (the CLI Agent Spec's pager, editor and colour rules).
//!
//! The children that must not outlive elench are bound to the front end's reaper
//! (`reaper::Bound`).

/// Pagers: `cat`, or told to quit at once. Set always: elench never pages its own output
/// either.
pub const NO_PAGER: [(&str, &str); 5] = [
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("MANPAGER", "cat"),
    ("LESS", "-F -X -R"),
    ("MORE", ""),
];

/// Editors: `true`, which exits at once with success; and git never asks for credentials.
/// Set when no person is at a terminal.
pub const NO_PROMPT: [(&str, &str); 4] = [
    ("EDITOR", "true"),
    ("VISUAL", "true"),
    ("GIT_EDITOR", "true"),
    ("GIT_TERMINAL_PROMPT", "0"),
];

/// Sets these in this process's environment, which every child inherits: the pagers always,
/// the editors and git's prompt unless a person is at a terminal (`interactive`), and
/// `NO_COLOR=1` when the environment forbids colour. Call before any other thread starts.
pub fn harden(interactive: bool, colour_off: bool) {
    for (k, v) in NO_PAGER {
        std::env::set_var(k, v);
    }
    if !interactive {
        for (k, v) in NO_PROMPT {
            std::env::set_var(k, v);
        }
    }
    if colour_off {
        std::env::set_var("NO_COLOR", "1");
    }
}

/// The same settings for a process that runs without a terminal and with a cleared
/// environment (`check`'s sandbox): all of them.
pub fn for_sandbox() -> Vec<(String, String)> {
    NO_PAGER
        .iter()
        .chain(NO_PROMPT.iter())
        .chain([("NO_COLOR", "1")].iter())
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Marks every descriptor from `first` up as close-on-exec, in a child between fork and
/// exec: whatever elench holds open (the store's database, a pipe to another child, a key
/// file being read on another thread) must not reach a program it starts. Marking rather
/// than closing keeps the standard library's own exec-error pipe working until the exec.
/// Only system calls: safe in a `pre_exec` closure.
pub fn cloexec_from(first: i32) -> std::io::Result<()> {
    let first = first.max(0) as libc::c_uint;
    // SAFETY: close_range(2) with CLOSE_RANGE_CLOEXEC only changes descriptor flags.
    let r = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC as libc::c_uint,
        )
    };
    if r == 0 {
        return Ok(());
    }
    // Kernels before 5.11: every descriptor below the limit, one by one.
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct it is given.
    let top = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
        lim.rlim_cur.min(1 << 20) as libc::c_int
    } else {
        1 << 16
    };
    for fd in first as libc::c_int..top {
        // SAFETY: F_SETFD on a descriptor that is not open fails with EBADF, harmlessly.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    Ok(())
}

/// Makes `cmd` start with only the descriptors it is given (0, 1, 2): see [`cloexec_from`].
pub fn no_inherited_fds(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure makes system calls only; it allocates nothing.
    unsafe {
        cmd.pre_exec(|| cloexec_from(3));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The descriptors a child started with `cmd` holds.
    fn child_fds(mut cmd: std::process::Command) -> String {
        cmd.args(["-c", "ls /proc/$$/fd; true"]);
        String::from_utf8(cmd.output().unwrap().stdout).unwrap()
    }

    #[test]
    fn a_child_inherits_no_descriptor_but_0_1_2() {
        // An inheritable descriptor, as a library might leave one (LMDB's, before a fix).
        // SAFETY: dup of stdin gives a new descriptor without close-on-exec, closed below.
        let fd = unsafe { libc::dup(0) };
        assert!(fd > 2);
        let leaked = child_fds(std::process::Command::new("sh"));
        let mut cmd = std::process::Command::new("sh");
        no_inherited_fds(&mut cmd);
        let clean = child_fds(cmd);
        // SAFETY: closing the descriptor dup made above, once.
        unsafe { libc::close(fd) };
        assert!(leaked.lines().any(|l| l == fd.to_string()), "{leaked}");
        assert_eq!(clean, "0\n1\n2\n");
    }
}
