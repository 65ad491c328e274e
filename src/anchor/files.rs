//! Reading a tree's files the way its tree OID sees them: regular files only, symbolic links
//! never followed (a link could lead out of the tree), `.git` skipped everywhere and the store
//! skipped at the top, and (unless `--no-ignore`) what the ignore rules leave out of the tree
//! left out here too: [`walk`] takes its files from [`crate::tree::list`].

use super::AnchorError;
use crate::tree::{FileKind, Selection};
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

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
