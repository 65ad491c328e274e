//! `grep(pattern, path)` and `exists(path)`: reads of the tree, exact so that two harnesses
//! agree. A match is counted per line (lines split on LF; a final line without LF counts),
//! on bytes; a string pattern is a literal substring, a `/…/` pattern a Rust regex. Under a
//! directory, every regular file counts, in byte order of names, recursively; symbolic links
//! inside a directory are not followed, and what the tree id leaves out is skipped.

use super::paths::{PathError, Tree};
use regex::bytes::Regex;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Path(#[from] PathError),
    #[error("nothing at {0:?} in the tree")]
    Missing(String),
    #[error("{0:?} is neither a regular file nor a directory")]
    NotAFile(String),
    #[error("invalid regular expression {pattern:?}: {message}")]
    Regex { pattern: String, message: String },
    #[error("cannot read {path}: {message}")]
    Io { path: String, message: String },
}

/// A compiled grep pattern.
pub struct Pattern(Regex);

impl Pattern {
    /// A literal substring.
    pub fn literal(s: &str) -> Result<Pattern, ReadError> {
        Pattern::regex(&regex::escape(s))
    }

    /// A Rust regex, as the parser checked it at ingest.
    pub fn regex(s: &str) -> Result<Pattern, ReadError> {
        Regex::new(s).map(Pattern).map_err(|e| ReadError::Regex {
            pattern: s.to_owned(),
            message: e.to_string(),
        })
    }

    /// Matching lines in `bytes`.
    pub fn count_lines(&self, bytes: &[u8]) -> i64 {
        if bytes.is_empty() {
            return 0;
        }
        let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        body.split(|&b| b == b'\n')
            .filter(|line| self.0.is_match(line))
            .count() as i64
    }
}

/// `exists(path)`: whether an entry is at `path` (symbolic links followed inside the tree).
pub fn exists(tree: &Tree, path: &str) -> Result<bool, ReadError> {
    Ok(tree.resolve(path)?.is_some())
}

/// `grep(pattern, path)`: the number of matching lines in the file at `path`, or in every
/// regular file under the directory at `path`. Nothing at `path` is an error (a mistyped
/// path must not count as "no matches").
pub fn grep(tree: &Tree, pattern: &Pattern, path: &str) -> Result<i64, ReadError> {
    let (real, parts) = tree
        .resolve(path)?
        .ok_or_else(|| ReadError::Missing(path.to_owned()))?;
    let io = |p: &Path, e: std::io::Error| ReadError::Io {
        path: p.display().to_string(),
        message: e.to_string(),
    };
    let meta = std::fs::metadata(&real).map_err(|e| io(&real, e))?;
    if meta.is_file() {
        let bytes = std::fs::read(&real).map_err(|e| io(&real, e))?;
        return Ok(pattern.count_lines(&bytes));
    }
    if !meta.is_dir() {
        return Err(ReadError::NotAFile(path.to_owned()));
    }
    // Depth-first in byte order, with an explicit stack so deep trees cannot overflow.
    let mut total = 0i64;
    let mut stack: Vec<(std::path::PathBuf, Vec<OsString>)> = vec![(real, parts)];
    while let Some((dir, parts)) = stack.pop() {
        let mut entries: Vec<(OsString, std::fs::FileType)> = Vec::new();
        for e in std::fs::read_dir(&dir).map_err(|e| io(&dir, e))? {
            let e = e.map_err(|e| io(&dir, e))?;
            let ft = e.file_type().map_err(|err| io(&e.path(), err))?;
            entries.push((e.file_name(), ft));
        }
        entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let mut subdirs = Vec::new();
        for (name, ft) in entries {
            let mut child = parts.clone();
            child.push(name.clone());
            if tree.is_hidden(&child) {
                continue;
            }
            let p = dir.join(&name);
            if ft.is_file() {
                let bytes = std::fs::read(&p).map_err(|e| io(&p, e))?;
                total = total.saturating_add(pattern.count_lines(&bytes));
            } else if ft.is_dir() {
                subdirs.push((p, child));
            }
        }
        // Reversed so the smallest name is walked first (the sum does not depend on it,
        // but a transcript that lists files would).
        stack.extend(subdirs.into_iter().rev());
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (crate::scratch::ScratchDir, Tree) {
        let s = crate::scratch::ScratchDir::new("elench-grep");
        let r = s.path().join("t");
        std::fs::create_dir_all(r.join("src/sub")).unwrap();
        std::fs::create_dir_all(r.join("empty")).unwrap();
        std::fs::create_dir_all(r.join(".git")).unwrap();
        std::fs::write(r.join("src/a.rs"), "unsafe {}\nsafe\nunsafe fn x()\n").unwrap();
        std::fs::write(r.join("src/sub/b.rs"), "let x = y.unwrap();\nunsafe").unwrap();
        std::fs::write(r.join(".git/c"), "unsafe\n").unwrap();
        std::fs::write(r.join("crlf.txt"), "a\r\n\r\nb").unwrap();
        std::os::unix::fs::symlink("../../../outside", r.join("src/sub/out")).unwrap();
        std::fs::write(s.path().join("outside"), "unsafe\nunsafe\n").unwrap();
        let t = Tree::new(&r);
        (s, t)
    }

    #[test]
    fn counts_matching_lines_in_a_file() {
        let (_s, t) = setup();
        let lit = Pattern::literal("unsafe").unwrap();
        assert_eq!(grep(&t, &lit, "src/a.rs").unwrap(), 2);
        assert_eq!(
            grep(&t, &Pattern::literal("nowhere").unwrap(), "src/a.rs").unwrap(),
            0
        );
        let re = Pattern::regex(r"^unsafe\s").unwrap();
        assert_eq!(grep(&t, &re, "src/a.rs").unwrap(), 2);
        // A literal is not a regex.
        assert_eq!(
            grep(&t, &Pattern::literal("y.unwrap()").unwrap(), "src").unwrap(),
            1
        );
        assert_eq!(grep(&t, &Pattern::literal("(").unwrap(), "src").unwrap(), 2);
    }

    #[test]
    fn counts_under_a_directory_without_leaving_or_seeing_git() {
        let (_s, t) = setup();
        let lit = Pattern::literal("unsafe").unwrap();
        // a.rs: 2, sub/b.rs: 1 (its last line has no LF); the link out is not followed,
        // .git is not part of the tree.
        assert_eq!(grep(&t, &lit, "src").unwrap(), 3);
        assert_eq!(grep(&t, &lit, "").unwrap(), 3);
        assert_eq!(grep(&t, &lit, "empty").unwrap(), 0);
    }

    #[test]
    fn line_splitting_is_on_lf_only() {
        let (_s, t) = setup();
        // "a\r", "\r", "b": the empty pattern matches every line.
        assert_eq!(
            grep(&t, &Pattern::literal("").unwrap(), "crlf.txt").unwrap(),
            3
        );
        assert_eq!(
            grep(&t, &Pattern::regex("^$").unwrap(), "crlf.txt").unwrap(),
            0
        );
        assert_eq!(Pattern::literal("").unwrap().count_lines(b""), 0);
        assert_eq!(Pattern::literal("").unwrap().count_lines(b"\n"), 1);
    }

    #[test]
    fn missing_and_escaping_paths_are_errors() {
        let (_s, t) = setup();
        let lit = Pattern::literal("unsafe").unwrap();
        assert!(matches!(grep(&t, &lit, "nope"), Err(ReadError::Missing(_))));
        assert!(matches!(
            grep(&t, &lit, "src/sub/out"),
            Err(ReadError::Path(_))
        ));
        assert!(matches!(
            grep(&t, &lit, "../outside"),
            Err(ReadError::Path(_))
        ));
        assert!(matches!(
            grep(&t, &lit, "/etc/passwd"),
            Err(ReadError::Path(_))
        ));
        assert!(matches!(exists(&t, "src/sub/out"), Err(ReadError::Path(_))));
        assert!(exists(&t, "src/sub/b.rs").unwrap());
        assert!(!exists(&t, "src/sub/c.rs").unwrap());
        assert!(!exists(&t, ".git/c").unwrap());
    }
}
