//! Copies of the tree a sandbox runs in: the pristine copy of what the tree id covers, and a
//! fresh copy of it per process where overlays cannot be mounted. Modes are set as git would
//! check files out, whatever the umask.

use super::is_root;
use crate::eval::paths::Tree;
use std::path::{Path, PathBuf};

/// Copies a directory made by [`copy_tree`] as it is (its content is already the tree's):
/// regular files with their mode, links as links, directories.
pub fn clone_dir(from: &Path, to: &Path, uid: u32) -> Result<(), String> {
    let err = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    make_dir(to, 0o755)?;
    give_away(to, uid)?;
    let mut stack = vec![(from.to_path_buf(), to.to_path_buf())];
    while let Some((src_dir, dst_dir)) = stack.pop() {
        for e in std::fs::read_dir(&src_dir).map_err(|e| err(&src_dir, e))? {
            let e = e.map_err(|e| err(&src_dir, e))?;
            let (src, dst) = (e.path(), dst_dir.join(e.file_name()));
            let ft = e.file_type().map_err(|e| err(&src, e))?;
            if !copy_entry(&src, &dst, &ft)? {
                continue;
            }
            if ft.is_dir() {
                stack.push((src, dst.clone()));
            }
            give_away(&dst, uid)?;
        }
    }
    Ok(())
}

/// Copies one directory entry of type `ft` (as read, links not followed) from `src` to `dst`:
/// a symbolic link as a link, a directory as an empty one (its content is the caller's to
/// walk), a regular file with its executable bit. Anything else is not copied: `Ok(false)`.
/// Modes are set explicitly, whatever the umask (CI jobs often run under `umask 077`) and
/// whatever the checkout's own: folders 0755, files 0644 or 0755, as git would check them
/// out, so the sandbox's user can read the copy and a process sees the same tree either way.
fn copy_entry(src: &Path, dst: &Path, ft: &std::fs::FileType) -> Result<bool, String> {
    use std::os::unix::fs::PermissionsExt;
    let err = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    if ft.is_symlink() {
        let target = std::fs::read_link(src).map_err(|e| err(src, e))?;
        std::os::unix::fs::symlink(&target, dst).map_err(|e| err(dst, e))?;
    } else if ft.is_dir() {
        make_dir(dst, 0o755)?;
    } else if ft.is_file() {
        std::fs::copy(src, dst).map_err(|e| err(src, e))?;
        let mode = std::fs::metadata(dst)
            .map_err(|e| err(dst, e))?
            .permissions()
            .mode();
        let mode = if mode & 0o111 != 0 { 0o755 } else { 0o644 };
        std::fs::set_permissions(dst, std::fs::Permissions::from_mode(mode))
            .map_err(|e| err(dst, e))?;
    } else {
        return Ok(false);
    }
    Ok(true)
}

/// Makes the folder `p` (its parent must exist) with exactly `mode`, whatever the umask.
pub fn make_dir(p: &Path, mode: u32) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let err = |e: std::io::Error| format!("{}: {e}", p.display());
    std::fs::DirBuilder::new()
        .mode(mode)
        .create(p)
        .map_err(err)?;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).map_err(err)
}

/// Makes a scratch path usable by the unprivileged account a root-run sandbox drops to.
pub fn give_away(p: &Path, uid: u32) -> Result<(), String> {
    if is_root() {
        std::os::unix::fs::lchown(p, Some(uid), Some(uid))
            .map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(())
}

/// Copies the tree's content (what its tree id covers, minus hidden paths) to `dest`:
/// regular files with their executable bit, symbolic links as links, directories.
pub fn copy_tree(tree: &Tree, dest: &Path, uid: u32) -> Result<(), String> {
    let err = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent).map_err(|e| err(parent, e))?;
    }
    make_dir(dest, 0o755)?;
    give_away(dest, uid)?;
    // When the scratch directory lies inside the tree (`--at /tmp`), the copy must not
    // copy itself.
    use std::os::unix::fs::MetadataExt;
    let ident = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    let own: Vec<(u64, u64)> = [Some(dest), dest.parent()]
        .into_iter()
        .flatten()
        .filter_map(ident)
        .collect();
    let mut stack: Vec<(PathBuf, PathBuf, Vec<std::ffi::OsString>)> =
        vec![(tree.root().to_path_buf(), dest.to_path_buf(), Vec::new())];
    while let Some((from, to, parts)) = stack.pop() {
        for e in std::fs::read_dir(&from).map_err(|e| err(&from, e))? {
            let e = e.map_err(|e| err(&from, e))?;
            let mut child = parts.clone();
            child.push(e.file_name());
            if tree.is_hidden(&child) {
                continue;
            }
            let src = e.path();
            let dst = to.join(e.file_name());
            let ft = e.file_type().map_err(|e| err(&src, e))?;
            if ft.is_dir() && ident(&src).is_some_and(|i| own.contains(&i)) {
                continue;
            }
            // The harness key under another name (a hard link, a copy) stays out too.
            if ft.is_file() {
                let meta = std::fs::symlink_metadata(&src).map_err(|e| err(&src, e))?;
                if tree.is_secret(&src, &meta) {
                    continue;
                }
            }
            if !copy_entry(&src, &dst, &ft)? {
                continue;
            }
            if ft.is_dir() {
                stack.push((src, dst.clone(), child));
            }
            give_away(&dst, uid)?;
        }
    }
    Ok(())
}
