//! The tree an operation judges claims at (`status --at`, `gate`, `claims_for`).

use super::{Failure, Observer};
use crate::ops::error::Param;
use crate::tree::{Listing, Selection};
use std::path::{Path, PathBuf};

/// The directory a tree is read from: `at` when given (it must be a directory), else the
/// enclosing checkout (the nearest directory upwards holding `.git`), else the working
/// directory.
pub fn tree_dir(at: Option<&Path>) -> Result<PathBuf, Failure> {
    if let Some(dir) = at {
        return match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() => Ok(dir.to_path_buf()),
            Ok(_) => Err(Failure::usage(
                Some(Param::At),
                format!("‹at› {}: not a directory", dir.display()),
            )),
            Err(e) => Err(Failure::io(dir.display(), e)),
        };
    }
    let cwd = std::env::current_dir().map_err(|e| Failure::io(".", e))?;
    Ok(cwd
        .ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(&cwd)
        .to_path_buf())
}

/// The elench tree OID of `dir`; `TRACKED_IGNORED` goes to `observer` when git tracks files
/// there that the tree leaves out.
pub fn tree_at(
    dir: &Path,
    selection: Selection,
    observer: &dyn Observer,
) -> Result<String, Failure> {
    let (oid, warning) = tree_of(dir, selection)?;
    if let Some((code, message)) = warning {
        observer.warn(code, message);
    }
    Ok(oid)
}

/// [`tree_at`] with the object id of every entry of the tree kept: what judging claims at
/// a tree reads their inputs from.
pub fn tree_ids_at(
    dir: &Path,
    selection: Selection,
    observer: &dyn Observer,
) -> Result<crate::tree::TreeIds, Failure> {
    let (ids, warning) = tree_ids_of(dir, selection)?;
    if let Some((code, message)) = warning {
        observer.warn(code, message);
    }
    Ok(ids)
}

/// [`tree_ids_at`] with the files of the tree kept, as their hashing read them: what
/// resolves anchors at the tree next (the gate) reads them from, so each file is listed,
/// opened and read once.
pub fn tree_files_at(
    dir: &Path,
    selection: Selection,
    observer: &dyn Observer,
) -> Result<(crate::tree::TreeIds, crate::anchor::files::TreeFiles), Failure> {
    let listing = crate::tree::list(dir, selection).map_err(Failure::from)?;
    let (ids, kept) = listing.ids_keeping().map_err(Failure::from)?;
    if let Some((code, message)) = tracked_ignored(dir, &listing) {
        observer.warn(code, message);
    }
    let files = crate::anchor::files::TreeFiles::from_listing(dir, &listing, kept);
    Ok((ids, files))
}

/// A `TRACKED_IGNORED` warning: its code and message.
pub type TreeWarning = (&'static str, String);

/// The elench tree OID of `dir`, and `TRACKED_IGNORED` when git tracks files there that the
/// tree leaves out.
pub fn tree_of(dir: &Path, selection: Selection) -> Result<(String, Option<TreeWarning>), Failure> {
    let listing = crate::tree::list(dir, selection).map_err(Failure::from)?;
    let oid = listing.oid().map_err(Failure::from)?;
    Ok((oid, tracked_ignored(dir, &listing)))
}

/// [`tree_of`] with the object id of every entry kept (what predicates' inputs are read
/// from), from the same one pass of hashing.
pub fn tree_ids_of(
    dir: &Path,
    selection: Selection,
) -> Result<(crate::tree::TreeIds, Option<TreeWarning>), Failure> {
    let listing = crate::tree::list(dir, selection).map_err(Failure::from)?;
    let ids = listing.ids().map_err(Failure::from)?;
    Ok((ids, tracked_ignored(dir, &listing)))
}

/// `TRACKED_IGNORED` when git's index in `dir` tracks files that the listing leaves out as
/// ignored: git keeps committing them, so the commit holds code the tree (and every claim
/// about it, and `check`) does not. Every operation that lists a tree (`tree`, `anchor`,
/// `claim`, `status --at`, `gate`, `check`) warns with this one message.
pub fn tracked_ignored(dir: &Path, listing: &Listing) -> Option<(&'static str, String)> {
    let tracked = crate::tree::tracked_but_ignored(dir, listing);
    let first = tracked.first()?;
    Some((
        crate::error::Code::TrackedIgnored.as_str(),
        // `claim` and the MCP tools have no --no-ignore: the advice says where it applies.
        format!(
            "{} file(s) that git tracks in {} are left out of its tree because ignore rules \
             match them (first: {}); git still commits them, so claims about this tree and \
             `check` do not cover them. Untrack them (git rm --cached), change the rules, or \
             read the tree with ‹no_ignore› where the command has it",
            tracked.len(),
            dir.display(),
            first.display()
        ),
    ))
}

/// `path` as a path inside `dir`: relative paths are taken as they are; an absolute one must
/// lie under `dir`.
pub fn relative_to(dir: &Path, path: &str) -> Result<String, Failure> {
    let p = Path::new(path);
    if !p.is_absolute() {
        return Ok(path.to_owned());
    }
    let outside = || {
        Failure::usage(
            None,
            format!(
                "{path} is not inside {}; give a path relative to ‹at› DIR",
                dir.display()
            ),
        )
    };
    let root = dir
        .canonicalize()
        .map_err(|e| Failure::io(dir.display(), e))?;
    let parent = p.parent().ok_or_else(outside)?;
    let name = p.file_name().ok_or_else(outside)?;
    let parent = parent
        .canonicalize()
        .map_err(|e| Failure::io(parent.display(), e))?;
    let rel = parent.join(name);
    let rel = rel.strip_prefix(&root).map_err(|_| outside())?;
    rel.to_str()
        .map(str::to_owned)
        .ok_or_else(|| Failure::usage(None, format!("{path} is not UTF-8")))
}
