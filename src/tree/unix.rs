//! Reading a directory on unix: walking it under git's ignore rules and hashing its files
//! as git's blobs (modes, symbolic links, the executable bit).

use std::fs::{self, File};
use std::io::{ErrorKind, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;

use super::{
    object_hasher, object_oid, tree_object_oid, Entry, FileKind, Listing, Oid, Selection,
    TreeError, TreeFile, MODE_TREE,
};

/// Object ids by path, collected while hashing (see [`super::TreeIds`]).
pub(super) type Ids = std::collections::HashMap<Vec<u8>, (&'static str, Oid)>;

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> TreeError + '_ {
    move |source| TreeError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A directory being walked.
struct Frame {
    /// This directory relative to the root (empty for the root).
    rel: PathBuf,
    /// Children not yet visited, in name order.
    pending: std::vec::IntoIter<std::ffi::OsString>,
    /// This directory's `.gitignore`, if it has rules.
    rules: Option<Gitignore>,
}

/// The rules that hold for the whole walk: the `.gitignore` files above the root, then
/// `.git/info/exclude` and the global excludes.
struct Fixed {
    /// The root with every symbolic link resolved, the base every matcher strips.
    root: PathBuf,
    /// The `.gitignore` files of the directories between the enclosing work tree's top
    /// and the root's parent, nearest first (empty outside a work tree).
    above: Vec<Gitignore>,
    /// `info/exclude` and the global excludes, matched from the work tree's top.
    outer: Vec<Gitignore>,
}

/// The git work tree a directory lies in, found as git finds it: the nearest directory
/// at or above it holding `.git` (a repository directory, or a `gitdir:` file).
pub(super) struct WorkTree {
    /// The work tree's top.
    pub(super) top: PathBuf,
    /// The directory relative to the top (empty when it is the top).
    pub(super) rel: PathBuf,
    /// The work tree's own git directory (where its index is).
    pub(super) own: PathBuf,
    /// The common git directory (where `info/exclude` and `config` are).
    pub(super) common: PathBuf,
}

/// The work tree `root` (absolute, links resolved) lies in, or None: none above it, or
/// `root` lies inside a `.git` directory (which git never commits).
pub(super) fn enclosing(root: &Path) -> Option<WorkTree> {
    for top in root.ancestors() {
        let Some((own, common)) = git_dirs(top) else {
            continue;
        };
        // A `.git` that is no repository (no HEAD) does not make a work tree for git.
        if !own.join("HEAD").is_file() {
            continue;
        }
        let rel = root.strip_prefix(top).ok()?.to_path_buf();
        if rel.iter().any(|c| c == ".git") {
            return None;
        }
        return Some(WorkTree {
            top: top.to_path_buf(),
            rel,
            own,
            common,
        });
    }
    None
}

pub(super) fn list(dir: &Path, selection: Selection) -> Result<Listing, TreeError> {
    // The root itself may be reached through a symbolic link.
    let meta = fs::metadata(dir).map_err(io_error(dir))?;
    if !meta.is_dir() {
        return Err(TreeError::NotADirectory {
            path: dir.to_path_buf(),
        });
    }
    let honour = selection == Selection::Committed;
    // Matchers strip their own directory from the paths they are given; absolute paths
    // built from one base keep that exact. Links are resolved so that the work tree
    // found above is the one git finds (git works in the physical directory).
    let root = fs::canonicalize(dir).map_err(io_error(dir))?;
    let fixed = if honour {
        let work = enclosing(&root);
        // Patterns of `info/exclude` and the global file are relative to the work tree's
        // top (to the directory itself outside one).
        let base = work.as_ref().map_or(root.as_path(), |w| w.top.as_path());
        let outer = outer_rules(base, work.as_ref().map(|w| w.common.as_path()))?;
        let above = match &work {
            Some(w) => rules_above(dir, w, &outer)?,
            None => Vec::new(),
        };
        Fixed { root, above, outer }
    } else {
        Fixed {
            root,
            above: Vec::new(),
            outer: Vec::new(),
        }
    };
    let mut files = Vec::new();
    let mut ignored = Vec::new();
    let mut stack: Vec<Frame> = vec![open(dir, &fixed, PathBuf::new(), honour)?];
    while let Some(top) = stack.last_mut() {
        let Some(name) = top.pending.next() else {
            stack.pop();
            continue;
        };
        let rel = top.rel.join(&name);
        let path = dir.join(&rel);
        let meta = fs::symlink_metadata(&path).map_err(io_error(&path))?;
        let kind = meta.file_type();
        if !(kind.is_dir() || kind.is_file() || kind.is_symlink()) {
            // Sockets, FIFOs and devices are not tracked by git.
            continue;
        }
        // Git matches a symbolic link as a file, even one that leads to a directory.
        if honour && is_ignored(&stack, &fixed, &rel, kind.is_dir()) {
            ignored.push(rel);
            continue;
        }
        if kind.is_dir() {
            let frame = open(dir, &fixed, rel, honour)?;
            stack.push(frame);
        } else {
            let kind = if kind.is_symlink() {
                FileKind::Symlink
            } else {
                FileKind::File
            };
            files.push(TreeFile { rel, path, kind });
        }
    }
    files.sort_unstable_by(|a, b| a.rel.cmp(&b.rel));
    ignored.sort_unstable();
    Ok(Listing { files, ignored })
}

/// Opens the directory `rel` of the walk: its children and its `.gitignore`.
fn open(dir: &Path, fixed: &Fixed, rel: PathBuf, honour: bool) -> Result<Frame, TreeError> {
    let path = dir.join(&rel);
    let top = rel.as_os_str().is_empty();
    let mut children = Vec::new();
    for entry in fs::read_dir(&path).map_err(io_error(&path))? {
        let entry = entry.map_err(io_error(&path))?;
        let name = entry.file_name();
        if name == ".git" || (top && name == ".elench") {
            continue;
        }
        children.push(name);
    }
    // Visit in name order so that any error reported is deterministic.
    children.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    let rules = if honour {
        gitignore_of(&fixed.root.join(&rel))?
    } else {
        None
    };
    Ok(Frame {
        rel,
        pending: children.into_iter(),
        rules,
    })
}

/// Whether git would leave `rel` out: the nearest `.gitignore` with a matching line
/// decides, then `info/exclude`, then the global excludes. Only called for entries
/// whose directories were not left out, which is how git never re-includes a file
/// below an excluded directory.
fn is_ignored(stack: &[Frame], fixed: &Fixed, rel: &Path, is_dir: bool) -> bool {
    let abs = fixed.root.join(rel);
    let nested = stack.iter().rev().filter_map(|f| f.rules.as_ref());
    let rules = nested.chain(fixed.above.iter()).chain(fixed.outer.iter());
    matched(rules, &abs, is_dir).is_some()
}

/// The rule that leaves `abs` out, asking `rules` in order of precedence: the first
/// matcher with a matching line decides (a negation re-includes).
fn matched<'a>(
    rules: impl Iterator<Item = &'a Gitignore>,
    abs: &Path,
    is_dir: bool,
) -> Option<&'a ignore::gitignore::Glob> {
    for rules in rules {
        match rules.matched(abs, is_dir) {
            Match::None => continue,
            Match::Ignore(glob) => return Some(glob),
            Match::Whitelist(_) => return None,
        }
    }
    None
}

/// The `.gitignore` files of the directories from the work tree's top down to the
/// parent of the root, nearest first, as git reads them on its way down: each directory
/// on the way is matched against the rules above it, and one they leave out means git
/// commits nothing of the root ([`TreeError::Ignored`]).
fn rules_above(
    dir: &Path,
    work: &WorkTree,
    outer: &[Gitignore],
) -> Result<Vec<Gitignore>, TreeError> {
    // Top-down while reading; reversed at the end.
    let mut loaded: Vec<Gitignore> = Vec::new();
    let mut at = work.top.clone();
    for name in work.rel.iter() {
        loaded.extend(gitignore_of(&at)?);
        at.push(name);
        let rules = loaded.iter().rev().chain(outer.iter());
        if let Some(glob) = matched(rules, &at, true) {
            return Err(TreeError::Ignored {
                path: dir.to_path_buf(),
                excluded: at,
                rule: glob.original().to_owned(),
                rules_file: glob.from().map(Path::to_path_buf).unwrap_or_default(),
            });
        }
    }
    loaded.reverse();
    Ok(loaded)
}

/// The rules of the `.gitignore` in the directory `abs` (absolute, links resolved), if
/// it has any. A `.gitignore` that is a link (which could lead anywhere) is not read, as
/// git does not read it either.
fn gitignore_of(abs: &Path) -> Result<Option<Gitignore>, TreeError> {
    let file = abs.join(".gitignore");
    match fs::symlink_metadata(&file) {
        Ok(m) if m.is_file() => load(abs, &file, m.len()),
        _ => Ok(None),
    }
}

/// `info/exclude` of the common git directory `common` (if any), then the global
/// excludes, their patterns taken relative to `base`.
fn outer_rules(base: &Path, common: Option<&Path>) -> Result<Vec<Gitignore>, TreeError> {
    let mut out = Vec::new();
    let files = [
        common.map(|g| g.join("info").join("exclude")),
        ignore::gitignore::gitconfig_excludes_path(),
    ];
    for file in files.into_iter().flatten() {
        match fs::metadata(&file) {
            Ok(m) if m.is_file() => out.extend(load(base, &file, m.len())?),
            _ => {}
        }
    }
    Ok(out)
}

/// The work tree's own git directory (where its index is) and the common one (where
/// `info/exclude` and `config` are); the same directory unless it is a linked work tree.
fn git_dirs(root: &Path) -> Option<(PathBuf, PathBuf)> {
    let dotgit = root.join(".git");
    let meta = fs::metadata(&dotgit).ok()?;
    if meta.is_dir() {
        return Some((dotgit.clone(), dotgit));
    }
    if !meta.is_file() {
        return None;
    }
    let text = read_small(&dotgit)?;
    let gitdir = root.join(text.strip_prefix("gitdir:")?.trim());
    match read_small(&gitdir.join("commondir")) {
        Some(common) => {
            let common = gitdir.join(common.trim());
            Some((gitdir, common))
        }
        None => Some((gitdir.clone(), gitdir)),
    }
}

/// The paths (relative to `root`) git's index tracks that lie at or under one of
/// `ignored`, the index being that of the work tree `root` lies in. None when there is
/// no index elench can read (no work tree, another index version, or damage): the check
/// is a courtesy, never a reason to fail.
pub(super) fn tracked_but_ignored(root: &Path, ignored: &[PathBuf]) -> Option<Vec<PathBuf>> {
    use std::collections::HashSet;
    use std::ffi::OsStr;
    if ignored.is_empty() {
        return Some(Vec::new());
    }
    let WorkTree {
        rel, own, common, ..
    } = enclosing(&fs::canonicalize(root).ok()?)?;
    let config = read_small_limit(&common.join("config"), 1 << 20).unwrap_or_default();
    let sha256 = config.lines().any(|l| {
        let l = l.trim().to_ascii_lowercase();
        l.starts_with("objectformat") && l.contains("sha256")
    });
    // Only a regular file of a sane size: `.git` may come with the tree, and its index
    // could be a link to a device that never ends.
    let index = own.join("index");
    let meta = fs::metadata(&index).ok()?;
    if !meta.is_file() || meta.len() > MAX_INDEX {
        return None;
    }
    let mut data = Vec::new();
    File::open(&index)
        .ok()?
        .take(MAX_INDEX)
        .read_to_end(&mut data)
        .ok()?;
    let paths = index_paths(&data, if sha256 { 32 } else { 20 })?;
    let ignored: HashSet<&Path> = ignored.iter().map(PathBuf::as_path).collect();
    // The index names paths from the work tree's top; the listing, from `root`.
    let mut out: Vec<PathBuf> = paths
        .iter()
        .map(|p| Path::new(OsStr::from_bytes(p.strip_suffix(b"/").unwrap_or(p))))
        .filter_map(|p| p.strip_prefix(&rel).ok())
        .filter(|p| p.ancestors().any(|a| ignored.contains(a)))
        .map(Path::to_path_buf)
        .collect();
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// The paths of the entries of a git index file (versions 2 to 4; `hash` is the object
/// id length), or None when it is not one. Every read is bounds-checked: the file comes
/// with the tree and may be anything.
pub(super) fn index_paths(data: &[u8], hash: usize) -> Option<Vec<Vec<u8>>> {
    let u32_at = |at: usize| -> Option<u32> {
        Some(u32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?))
    };
    if data.get(..4)? != b"DIRC" {
        return None;
    }
    let version = u32_at(4)?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let count = usize::try_from(u32_at(8)?).ok()?;
    // An entry takes at least 40 + hash + 2 + 1 bytes: no more can fit.
    if count > data.len() / (43 + hash) {
        return None;
    }
    let mut out = Vec::with_capacity(count);
    let mut prev: Vec<u8> = Vec::new();
    let mut pos = 12usize;
    for _ in 0..count {
        let start = pos;
        let flags_at = start.checked_add(40 + hash)?;
        let flags = u16::from_be_bytes(data.get(flags_at..flags_at + 2)?.try_into().ok()?);
        pos = flags_at + 2;
        if version >= 3 && flags & 0x4000 != 0 {
            pos += 2;
        }
        let rest = data.get(pos..)?;
        let path = if version == 4 {
            // The name is the previous one minus N bytes, plus a NUL-terminated suffix.
            let (strip, used) = varint(rest)?;
            let rest = rest.get(used..)?;
            let nul = rest.iter().position(|&b| b == 0)?;
            let keep = prev.len().checked_sub(usize::try_from(strip).ok()?)?;
            let mut path = prev[..keep].to_vec();
            path.extend_from_slice(&rest[..nul]);
            pos += used + nul + 1;
            path
        } else {
            let nul = rest.iter().position(|&b| b == 0)?;
            // The entry is NUL-padded (1 to 8 bytes) to a multiple of 8.
            let len = pos - start + nul;
            pos = start.checked_add((len + 8) & !7)?;
            rest[..nul].to_vec()
        };
        prev.clone_from(&path);
        out.push(path);
    }
    Some(out)
}

/// Git's offset varint (index version 4): the value and the bytes it took.
fn varint(data: &[u8]) -> Option<(u64, usize)> {
    let mut value: u64 = 0;
    for (i, &c) in data.iter().enumerate().take(10) {
        if i > 0 {
            value = value.checked_add(1)?.checked_mul(128)?;
        }
        value = value.checked_add(u64::from(c & 127))?;
        if c & 128 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// A short text file (a pointer written by git), or None.
fn read_small(path: &Path) -> Option<String> {
    read_small_limit(path, 4096)
}

/// The first `limit` bytes of a regular text file, or None.
fn read_small_limit(path: &Path, limit: u64) -> Option<String> {
    if !fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    File::open(path)
        .ok()?
        .take(limit)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// A git index larger than this is not read (the warning it feeds is a courtesy).
const MAX_INDEX: u64 = 1 << 30;

/// Git does not read a pattern file larger than this (its `PATTERN_MAX_FILE_SIZE`).
const MAX_RULES_FILE: u64 = 100 << 20;

/// The rules of the ignore file `file` (`len` bytes), matched against paths under `base`;
/// None when it has none. A pattern that does not parse matches nothing, and a file
/// larger than git reads is not read, as in git; a file that cannot be read is an error.
fn load(base: &Path, file: &Path, len: u64) -> Result<Option<Gitignore>, TreeError> {
    if len > MAX_RULES_FILE {
        return Ok(None);
    }
    let mut builder = GitignoreBuilder::new(base);
    if let Some(e) = builder.add(file) {
        if let Some(source) = io_failure(e) {
            return Err(TreeError::Io {
                path: file.to_path_buf(),
                source,
            });
        }
    }
    let rules = builder.build().map_err(|e| TreeError::Rules {
        path: file.to_path_buf(),
        message: e.to_string(),
    })?;
    Ok((!rules.is_empty()).then_some(rules))
}

/// The read failure inside an ignore-file error, if it is one. A line that is not UTF-8
/// is not a read failure (the lines before it still count).
fn io_failure(e: ignore::Error) -> Option<std::io::Error> {
    match e {
        ignore::Error::Partial(errs) => errs.into_iter().find_map(io_failure),
        ignore::Error::WithLineNumber { err, .. }
        | ignore::Error::WithPath { err, .. }
        | ignore::Error::WithDepth { err, .. } => io_failure(*err),
        ignore::Error::Io(e) if e.kind() != ErrorKind::InvalidData => Some(e),
        _ => None,
    }
}

/// What hashing one file of a listing gives: its entry's mode and object id, and its bytes
/// when they were kept.
struct Hashed {
    mode: &'static str,
    oid: Oid,
    bytes: Option<Vec<u8>>,
}

/// A file larger than this is hashed as a stream and its bytes are not kept.
const KEEP_FILE_MAX: u64 = 8 << 20;

/// At most this many bytes of a tree's files are kept in all; the files hashed after the
/// budget is spent are streamed.
const KEEP_TOTAL_MAX: u64 = 256 << 20;

/// The tree id of `files` (sorted by path, as [`list`] gives them). The files are read and
/// hashed on every core; the tree is put together in path order, so the first error in that
/// order is the one reported. With `kept`, the bytes of each regular file (within
/// [`KEEP_FILE_MAX`] and [`KEEP_TOTAL_MAX`]) are kept there, by position in `files`: the
/// bytes that were hashed, read once.
pub(super) fn hash_listing(
    files: &[TreeFile],
    mut ids: Option<&mut Ids>,
    kept: Option<&mut super::Kept>,
) -> Result<Oid, TreeError> {
    use rayon::prelude::*;
    let budget = kept
        .is_some()
        .then(|| std::sync::atomic::AtomicU64::new(KEEP_TOTAL_MAX));
    let hashed: Vec<Result<Hashed, TreeError>> = files
        .par_iter()
        .map(|file| hash_entry(file, budget.as_ref()))
        .collect();
    let mut bytes_out = Vec::new();
    let keep = kept.is_some();
    // One open directory per level of the current file's path: its name and the entries
    // hashed so far. Files of one directory are adjacent in path order, so a directory is
    // finished as soon as a file outside it comes.
    let mut open: Vec<(Vec<u8>, Vec<Entry>)> = vec![(Vec::new(), Vec::new())];
    for (file, hashed) in files.iter().zip(hashed) {
        let Hashed { mode, oid, bytes } = hashed?;
        if keep {
            bytes_out.push(bytes);
        }
        let parts: Vec<&[u8]> = file.rel.iter().map(|c| c.as_bytes()).collect();
        let Some((leaf, dirs)) = parts.split_last() else {
            continue;
        };
        let common = open[1..]
            .iter()
            .zip(dirs.iter())
            .take_while(|((name, _), d)| name.as_slice() == **d)
            .count();
        while open.len() > common + 1 {
            close(&mut open, ids.as_deref_mut());
        }
        for d in &dirs[common..] {
            open.push((d.to_vec(), Vec::new()));
        }
        if let Some(ids) = ids.as_deref_mut() {
            ids.insert(file.rel.as_os_str().as_bytes().to_vec(), (mode, oid));
        }
        if let Some((_, entries)) = open.last_mut() {
            entries.push(Entry {
                name: leaf.to_vec(),
                mode,
                oid,
            });
        }
    }
    while open.len() > 1 {
        close(&mut open, ids.as_deref_mut());
    }
    let mut root = open.pop().map(|(_, e)| e).unwrap_or_default();
    if let Some(kept) = kept {
        *kept = bytes_out;
    }
    Ok(tree_object_oid(&mut root))
}

/// One file of a listing hashed: a link as its target, a regular file as its bytes (kept
/// when `budget` is given and has room for them).
fn hash_entry(
    file: &TreeFile,
    budget: Option<&std::sync::atomic::AtomicU64>,
) -> Result<Hashed, TreeError> {
    Ok(match file.kind {
        FileKind::Symlink => {
            let target = fs::read_link(&file.path).map_err(io_error(&file.path))?;
            Hashed {
                mode: "120000",
                oid: object_oid("blob", target.as_os_str().as_bytes()),
                bytes: None,
            }
        }
        FileKind::File => {
            let (oid, executable, bytes) = hash_file(&file.path, budget)?;
            Hashed {
                mode: if executable { "100755" } else { "100644" },
                oid,
                bytes,
            }
        }
    })
}

/// Finishes the innermost open directory into an entry of its parent. Every open
/// directory holds a file, so none is empty (git records no empty directory).
fn close(open: &mut Vec<(Vec<u8>, Vec<Entry>)>, ids: Option<&mut Ids>) {
    if let Some((name, mut entries)) = open.pop() {
        let oid = tree_object_oid(&mut entries);
        if let Some(ids) = ids {
            let mut path = Vec::new();
            for (part, _) in open[1..].iter() {
                path.extend_from_slice(part);
                path.push(b'/');
            }
            path.extend_from_slice(&name);
            ids.insert(path, (MODE_TREE, oid));
        }
        if let Some((_, parent)) = open.last_mut() {
            parent.push(Entry {
                name,
                mode: MODE_TREE,
                oid,
            });
        }
    }
}

/// Hashes a regular file into a blob id; also reports the owner-exec bit. With `budget`,
/// a file small enough for what is left of it is read whole and its bytes returned (the
/// budget spent by them); any other is streamed. A link found where the listing saw a
/// regular file is never followed: the file changed.
fn hash_file(
    path: &Path,
    budget: Option<&std::sync::atomic::AtomicU64>,
) -> Result<(Oid, bool, Option<Vec<u8>>), TreeError> {
    use std::os::unix::fs::OpenOptionsExt;
    use std::sync::atomic::Ordering;
    let changed = || TreeError::Changed {
        path: path.to_path_buf(),
    };
    let mut file = match fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(changed()),
        Err(e) => return Err(io_error(path)(e)),
    };
    // Use the opened file's own metadata, so size and mode belong to the
    // bytes actually read even if the path was swapped meanwhile.
    let meta = file.metadata().map_err(io_error(path))?;
    if !meta.is_file() {
        return Err(changed());
    }
    let len = meta.len();
    let executable = meta.permissions().mode() & 0o100 != 0;
    let mut hasher = object_hasher("blob", len);
    let keep = budget.is_some_and(|b| {
        len <= KEEP_FILE_MAX
            && b.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                left.checked_sub(len)
            })
            .is_ok()
    });
    if keep {
        // The whole file in one buffer of its size; one byte more read would mean it grew.
        let mut bytes = Vec::with_capacity(usize::try_from(len).map_err(|_| changed())?);
        (&mut file)
            .take(len.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(io_error(path))?;
        if bytes.len() as u64 != len {
            return Err(changed());
        }
        sha2::Digest::update(&mut hasher, &bytes);
        return Ok((
            sha2::Digest::finalize(hasher).into(),
            executable,
            Some(bytes),
        ));
    }
    let size = usize::try_from(len).unwrap_or(usize::MAX);
    let mut buf = vec![0u8; size.saturating_add(1).min(64 * 1024)];
    let mut total: u64 = 0;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_error(path)(e)),
        };
        total = total.saturating_add(n as u64);
        if total > len {
            break;
        }
        sha2::Digest::update(&mut hasher, &buf[..n]);
    }
    if total != len {
        return Err(changed());
    }
    Ok((sha2::Digest::finalize(hasher).into(), executable, None))
}
