//! Reading a tree's files the way its tree OID sees them: regular files only, symbolic links
//! never followed (a link could lead out of the tree), `.git` skipped everywhere and the store
//! skipped at the top, and (unless `--no-ignore`) what the ignore rules leave out of the tree
//! left out here too: [`walk`] takes its files from [`crate::tree::list`].

use super::digest::Normalised;
use super::AnchorError;
use crate::tree::{FileKind, Kept, Listing, Selection};
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What is at a tree path.
#[derive(Debug)]
pub enum Entry {
    /// A regular file and its bytes.
    File(Vec<u8>),
    /// Nothing, or something that is not a regular file reached without links.
    Absent,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> AnchorError + '_ {
    move |source| AnchorError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The file at `rel` (a path as [`super::tree_path`] gives it) under `dir`. A missing file, a
/// directory, or a path through a symbolic link is `Absent`; other failures are errors.
pub fn read(dir: &Path, rel: &str) -> Result<Entry, AnchorError> {
    let mut full = dir.to_path_buf();
    let parts: Vec<&str> = rel.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        full.push(part);
        let meta = match fs::symlink_metadata(&full) {
            Ok(m) => m,
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                return Ok(Entry::Absent)
            }
            Err(e) => return Err(io(&full)(e)),
        };
        let last = i + 1 == parts.len();
        let wanted = if last {
            meta.file_type().is_file()
        } else {
            meta.file_type().is_dir()
        };
        if !wanted {
            return Ok(Entry::Absent);
        }
    }
    fs::read(&full).map(Entry::File).map_err(io(&full))
}

/// Every regular file of the tree of `dir` (as [`crate::tree::list`] selects them) as
/// (tree path, full path), sorted by tree path. Names that are not UTF-8 are left out: an
/// anchor's path is JSON text and cannot name them.
pub fn walk(dir: &Path, selection: Selection) -> Result<Vec<(String, PathBuf)>, AnchorError> {
    let listing = crate::tree::list(dir, selection)?;
    let mut out: Vec<(String, PathBuf)> = listing
        .files
        .into_iter()
        .filter(|f| f.kind == FileKind::File)
        .filter_map(|f| Some((f.rel.to_str()?.to_owned(), f.path)))
        .collect();
    out.sort();
    Ok(out)
}

/// The regular files of a directory's tree, by tree path, and their normalised text once
/// read: what every resolver at that tree reads its files from, shared by them. A file is
/// read once, from the bytes the tree's hashing kept when it was handed them
/// ([`TreeFiles::from_listing`]), else from the directory by [`read`] (the reference way);
/// a path the tree does not list (ignored, a link, missing) has no file, whatever is on disk.
pub struct TreeFiles {
    dir: PathBuf,
    /// Tree paths (UTF-8), sorted.
    paths: Vec<String>,
    /// By path: its bytes not yet normalised (kept by the tree's hashing), or its text once
    /// read (None: not text).
    slots: Vec<Mutex<Slot>>,
}

enum Slot {
    Unread(Option<Vec<u8>>),
    Read(Option<Arc<Normalised>>),
}

impl TreeFiles {
    /// The files of the tree of `dir` (listed with `selection`), to be read from disk.
    pub fn listed(dir: &Path, selection: Selection) -> Result<TreeFiles, AnchorError> {
        let paths = walk(dir, selection)?.into_iter().map(|(rel, _)| rel);
        Ok(TreeFiles::of(dir, paths.map(|p| (p, None)).collect()))
    }

    /// The files of `listing` (the tree of `dir`), with the bytes its hashing kept, by
    /// position in its files ([`crate::tree::Listing::ids_keeping`]); a file whose bytes
    /// were not kept is read from disk when asked for.
    pub fn from_listing(dir: &Path, listing: &Listing, kept: Kept) -> TreeFiles {
        let mut kept = kept.into_iter();
        let files = listing
            .files
            .iter()
            .map(|f| (f, kept.next().flatten()))
            .filter(|(f, _)| f.kind == FileKind::File)
            .filter_map(|(f, bytes)| Some((f.rel.to_str()?.to_owned(), bytes)))
            .collect();
        TreeFiles::of(dir, files)
    }

    fn of(dir: &Path, mut files: Vec<(String, Option<Vec<u8>>)>) -> TreeFiles {
        files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let (paths, slots) = files
            .into_iter()
            .map(|(p, bytes)| (p, Mutex::new(Slot::Unread(bytes))))
            .unzip();
        TreeFiles {
            dir: dir.to_path_buf(),
            paths,
            slots,
        }
    }

    /// Every tree path, sorted.
    pub fn paths(&self) -> &[String] {
        &self.paths
    }

    /// The normalised text of the file at tree path `rel`: None when the tree has no regular
    /// file there, or it is not text.
    pub fn text(&self, rel: &str) -> Result<Option<Arc<Normalised>>, AnchorError> {
        match self.paths.binary_search_by(|p| p.as_str().cmp(rel)) {
            Ok(i) => self.text_at(i),
            Err(_) => Ok(None),
        }
    }

    /// [`TreeFiles::text`] of the `i`th path.
    pub fn text_at(&self, i: usize) -> Result<Option<Arc<Normalised>>, AnchorError> {
        let Some(slot) = self.slots.get(i) else {
            return Ok(None);
        };
        // A poisoned lock only means another reader panicked; the slot is still whole.
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        let bytes = match &mut *slot {
            Slot::Read(text) => return Ok(text.clone()),
            Slot::Unread(kept) => match kept.take() {
                Some(bytes) => Some(bytes),
                None => match read(&self.dir, &self.paths[i])? {
                    Entry::File(bytes) => Some(bytes),
                    Entry::Absent => None,
                },
            },
        };
        // A binary file cannot hold the lines of a text anchor.
        let text = bytes.and_then(|b| Normalised::from_vec(b).ok().map(Arc::new));
        *slot = Slot::Read(text.clone());
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_read_never_follows_links_and_walk_skips_git() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        fs::create_dir_all(d.join("src/deep")).unwrap();
        fs::create_dir_all(d.join(".git")).unwrap();
        fs::create_dir_all(d.join(".elench")).unwrap();
        fs::write(d.join("src/deep/a.rs"), "a\n").unwrap();
        fs::write(d.join("b.rs"), "b\n").unwrap();
        fs::write(d.join(".git/HEAD"), "x\n").unwrap();
        fs::write(d.join(".elench/FORMAT"), "x\n").unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret"), "s\n").unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(outside.path(), d.join("out")).unwrap();
            std::os::unix::fs::symlink(d.join("b.rs"), d.join("link.rs")).unwrap();
        }
        assert!(matches!(read(d, "src/deep/a.rs").unwrap(), Entry::File(b) if b == b"a\n"));
        assert!(matches!(read(d, "src").unwrap(), Entry::Absent));
        assert!(matches!(read(d, "nope/a.rs").unwrap(), Entry::Absent));
        assert!(matches!(read(d, "b.rs/x").unwrap(), Entry::Absent));
        #[cfg(unix)]
        {
            assert!(matches!(read(d, "out/secret").unwrap(), Entry::Absent));
            assert!(matches!(read(d, "link.rs").unwrap(), Entry::Absent));
        }
        let names: Vec<String> = walk(d, Selection::Committed)
            .unwrap()
            .into_iter()
            .map(|(r, _)| r)
            .collect();
        assert_eq!(names, ["b.rs", "src/deep/a.rs"]);
    }

    #[test]
    fn files_walk_leaves_out_what_the_ignore_rules_leave_out() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        fs::create_dir_all(d.join("target/debug")).unwrap();
        fs::write(d.join(".gitignore"), "/target\n*.tmp\n").unwrap();
        fs::write(d.join("target/debug/out.rs"), "x\n").unwrap();
        fs::write(d.join("a.tmp"), "x\n").unwrap();
        fs::write(d.join("a.rs"), "x\n").unwrap();
        let names =
            |s| -> Vec<String> { walk(d, s).unwrap().into_iter().map(|(r, _)| r).collect() };
        assert_eq!(names(Selection::Committed), [".gitignore", "a.rs"]);
        assert_eq!(
            names(Selection::All),
            [".gitignore", "a.rs", "a.tmp", "target/debug/out.rs"]
        );
    }
}
