//! The per-process writable layer: a size-limited tmpfs and an overlay of the pristine copy,
//! mounted in a mount namespace of the process's own between fork and exec.

use super::is_root;
use std::path::{Path, PathBuf};

/// The mounts that give one process its writable layer: a tmpfs of the scratch size at
/// `layer` holding the overlay's upper and work directories and the process's `/tmp`, and
/// the overlay of the pristine copy at `layer/merged`. Made in the child, in a mount
/// namespace of its own, so they vanish with the sandbox and never touch the host's mounts.
#[derive(Clone)]
pub(super) struct OverlayMounts {
    pub(super) layer_path: PathBuf,
    pub(super) merged_path: PathBuf,
    layer: std::ffi::CString,
    upper: std::ffi::CString,
    work: std::ffi::CString,
    tmp: std::ffi::CString,
    merged: std::ffi::CString,
    tmpfs_opts: std::ffi::CString,
    overlay_opts: std::ffi::CString,
    /// Owner of the upper directory (the sandbox's user run as root, else elench's own).
    uid: u32,
    gid: u32,
    /// Not root: the lines for `/proc/self/uid_map` and `gid_map` of the user namespace the
    /// mounts are made in (elench's ids mapped to themselves, so that bubblewrap, nesting
    /// its own user namespace, runs the process as the same user).
    userns: Option<(std::ffi::CString, std::ffi::CString)>,
}

impl OverlayMounts {
    pub(super) fn new(
        lower: &Path,
        work: &Path,
        (uid, gid): (u32, u32),
        size: u64,
    ) -> Result<OverlayMounts, String> {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let layer = work.join("layer");
        std::fs::create_dir_all(&layer).map_err(|e| format!("{}: {e}", layer.display()))?;
        let c = |p: &Path| {
            CString::new(p.as_os_str().as_bytes())
                .map_err(|_| format!("{}: a NUL byte in the path", p.display()))
        };
        // overlayfs splits its options at `,` and `:`, and treats `\` as an escape.
        for p in [lower, &layer] {
            if p.as_os_str().as_bytes().iter().any(|b| b",:\\".contains(b)) {
                return Err(format!(
                    "{}: an overlay cannot name a path holding `,`, `:` or `\\`",
                    p.display()
                ));
            }
        }
        let sub = |n: &str| c(&layer.join(n));
        let opts = format!(
            "lowerdir={},upperdir={},workdir={}",
            lower.display(),
            layer.join("upper").display(),
            layer.join("work").display()
        );
        Ok(OverlayMounts {
            merged_path: layer.join("merged"),
            layer: c(&layer)?,
            upper: sub("upper")?,
            work: sub("work")?,
            tmp: sub("tmp")?,
            merged: sub("merged")?,
            // Inodes bounded too: each costs kernel memory that `size` does not count.
            tmpfs_opts: CString::new(format!(
                "size={size},nr_inodes={},mode=0755",
                (size / 4096).clamp(1024, 1 << 20)
            ))
            .map_err(|e| e.to_string())?,
            overlay_opts: CString::new(opts).map_err(|_| "a NUL byte in a path".to_owned())?,
            uid,
            gid,
            userns: if is_root() {
                None
            } else {
                let line = |id: u32| CString::new(format!("{id} {id} 1\n"));
                Some((
                    line(uid).map_err(|e| e.to_string())?,
                    line(gid).map_err(|e| e.to_string())?,
                ))
            },
            layer_path: layer,
        })
    }

    /// In the child between fork and exec: system calls only. `enter`: also make the overlay
    /// the working directory (for a process that runs without bubblewrap).
    pub(super) fn mount(&self, enter: bool) -> std::io::Result<()> {
        let ok = |r: libc::c_int| {
            if r == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        };
        let null = std::ptr::null::<libc::c_char>();
        let flags = libc::MS_NOSUID | libc::MS_NODEV;
        // SAFETY: every pointer is a NUL-terminated string owned by `self`, or null where
        // mount(2) allows it.
        unsafe {
            match &self.userns {
                None => ok(libc::unshare(libc::CLONE_NEWNS))?,
                Some((uid_map, gid_map)) => {
                    // The new mount namespace belongs to the new user namespace, in which
                    // this process may mount a tmpfs and an overlay (Linux 5.11 and later).
                    ok(libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS))?;
                    write_proc(c"/proc/self/setgroups", c"deny")?;
                    write_proc(c"/proc/self/uid_map", uid_map)?;
                    write_proc(c"/proc/self/gid_map", gid_map)?;
                }
            }
            // Nothing mounted here propagates back to the host.
            ok(libc::mount(
                null,
                c"/".as_ptr(),
                null,
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ))?;
            ok(libc::mount(
                c"tmpfs".as_ptr(),
                self.layer.as_ptr(),
                c"tmpfs".as_ptr(),
                flags,
                self.tmpfs_opts.as_ptr().cast(),
            ))?;
            ok(libc::mkdir(self.upper.as_ptr(), 0o755))?;
            ok(libc::chown(self.upper.as_ptr(), self.uid, self.gid))?;
            ok(libc::mkdir(self.work.as_ptr(), 0o700))?;
            ok(libc::mkdir(self.tmp.as_ptr(), 0o700))?;
            ok(libc::chmod(self.tmp.as_ptr(), 0o1777))?;
            ok(libc::mkdir(self.merged.as_ptr(), 0o755))?;
            ok(libc::mount(
                c"overlay".as_ptr(),
                self.merged.as_ptr(),
                c"overlay".as_ptr(),
                flags,
                self.overlay_opts.as_ptr().cast(),
            ))?;
            if enter {
                ok(libc::chdir(self.merged.as_ptr()))?;
            }
        }
        Ok(())
    }
}

/// Writes `data` to a file of `/proc` in one write, between fork and exec: system calls only.
fn write_proc(path: &std::ffi::CStr, data: &std::ffi::CStr) -> std::io::Result<()> {
    let len = data.to_bytes().len();
    // SAFETY: both pointers are NUL-terminated strings the caller owns; `fd` is ours.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let n = libc::write(fd, data.as_ptr().cast(), len);
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        if n < 0 || n as usize != len {
            return Err(err);
        }
    }
    Ok(())
}
