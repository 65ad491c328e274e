//! `grep(pattern, path)` and `exists(path)`: reads of the tree, exact so that two harnesses
//! agree. A match is counted per line (lines split on LF; a final line without LF counts),
//! on bytes; a string pattern is a literal substring, a `/…/` pattern a Rust regex. Under a
//! directory, every regular file counts, in byte order of names, recursively; symbolic links
//! inside a directory are not followed, and what the tree id leaves out is skipped.
//!
//! Files are read as a stream, one line at a time, so memory stays bounded whatever their
//! size: a line longer than [`MAX_LINE`] makes the call inconclusive, and so does the
//! claim's deadline passing while a large tree is read.

use super::paths::{PathError, Tree};
use regex::bytes::Regex;
use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Instant;

/// The longest line `grep` matches against, bytes.
pub const MAX_LINE: usize = 8 << 20;

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
    #[error("{path:?} has a line longer than {MAX_LINE} bytes, the most grep matches against")]
    LineTooLong { path: String },
    #[error("the claim's time limit ended grep while it read {path:?}")]
    TimedOut { path: String },
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

    /// Matching lines in `bytes`, at once: the reference the streaming count is tested against.
    #[cfg(test)]
    fn count_lines(&self, bytes: &[u8]) -> i64 {
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

impl Pattern {
    /// Matching lines in the file at `p` (`shown` in errors), read as a stream.
    fn count_file(
        &self,
        p: &Path,
        shown: &str,
        deadline: Option<Instant>,
    ) -> Result<i64, ReadError> {
        let io = |e: std::io::Error| ReadError::Io {
            path: p.display().to_string(),
            message: e.to_string(),
        };
        let mut r = BufReader::with_capacity(64 << 10, std::fs::File::open(p).map_err(io)?);
        let mut line: Vec<u8> = Vec::new();
        let mut count = 0i64;
        let mut since_check = 0usize;
        loop {
            let buf = r.fill_buf().map_err(io)?;
            if buf.is_empty() {
                // A final line without LF counts.
                if !line.is_empty() && self.0.is_match(&line) {
                    count += 1;
                }
                return Ok(count);
            }
            let (take, ended) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (i, true),
                None => (buf.len(), false),
            };
            if line.len() + take > MAX_LINE {
                return Err(ReadError::LineTooLong {
                    path: shown.to_owned(),
                });
            }
            line.extend_from_slice(&buf[..take]);
            let used = take + usize::from(ended);
            r.consume(used);
            if ended {
                if self.0.is_match(&line) {
                    count += 1;
                }
                line.clear();
            }
            since_check += used;
            if since_check >= 1 << 20 {
                since_check = 0;
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return Err(ReadError::TimedOut {
                        path: shown.to_owned(),
                    });
                }
            }
        }
    }
}

/// `grep(pattern, path)`: the number of matching lines in the file at `path`, or in every
/// regular file under the directory at `path`. Nothing at `path` is an error (a mistyped
/// path must not count as "no matches"). `deadline`: the claim's, past which it stops.
pub fn grep(
    tree: &Tree,
    pattern: &Pattern,
    path: &str,
    deadline: Option<Instant>,
) -> Result<i64, ReadError> {
    let (real, parts) = tree
        .resolve(path)?
        .ok_or_else(|| ReadError::Missing(path.to_owned()))?;
    let io = |p: &Path, e: std::io::Error| ReadError::Io {
        path: p.display().to_string(),
        message: e.to_string(),
    };
    let meta = std::fs::metadata(&real).map_err(|e| io(&real, e))?;
    if meta.is_file() {
        return pattern.count_file(&real, path, deadline);
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
                let meta = std::fs::symlink_metadata(&p).map_err(|e| io(&p, e))?;
                if tree.is_secret(&p, &meta) {
                    continue;
                }
                let shown: Vec<String> = child
                    .iter()
                    .map(|c| c.to_string_lossy().into_owned())
                    .collect();
                let n = pattern.count_file(&p, &shown.join("/"), deadline)?;
                total = total.saturating_add(n);
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
        assert_eq!(grep(&t, &lit, "src/a.rs", None).unwrap(), 2);
        assert_eq!(
            grep(&t, &Pattern::literal("nowhere").unwrap(), "src/a.rs", None).unwrap(),
            0
        );
        let re = Pattern::regex(r"^unsafe\s").unwrap();
        assert_eq!(grep(&t, &re, "src/a.rs", None).unwrap(), 2);
        // A literal is not a regex.
        assert_eq!(
            grep(&t, &Pattern::literal("y.unwrap()").unwrap(), "src", None).unwrap(),
            1
        );
        assert_eq!(
            grep(&t, &Pattern::literal("(").unwrap(), "src", None).unwrap(),
            2
        );
    }

    #[test]
    fn counts_under_a_directory_without_leaving_or_seeing_git() {
        let (_s, t) = setup();
        let lit = Pattern::literal("unsafe").unwrap();
        // a.rs: 2, sub/b.rs: 1 (its last line has no LF); the link out is not followed,
        // .git is not part of the tree.
        assert_eq!(grep(&t, &lit, "src", None).unwrap(), 3);
        assert_eq!(grep(&t, &lit, "", None).unwrap(), 3);
        assert_eq!(grep(&t, &lit, "empty", None).unwrap(), 0);
    }

    #[test]
    fn line_splitting_is_on_lf_only() {
        let (_s, t) = setup();
        // "a\r", "\r", "b": the empty pattern matches every line.
        assert_eq!(
            grep(&t, &Pattern::literal("").unwrap(), "crlf.txt", None).unwrap(),
            3
        );
        assert_eq!(
            grep(&t, &Pattern::regex("^$").unwrap(), "crlf.txt", None).unwrap(),
            0
        );
        assert_eq!(Pattern::literal("").unwrap().count_lines(b""), 0);
        assert_eq!(Pattern::literal("").unwrap().count_lines(b"\n"), 1);
    }

    #[test]
    fn missing_and_escaping_paths_are_errors() {
        let (_s, t) = setup();
        let lit = Pattern::literal("unsafe").unwrap();
        assert!(matches!(
            grep(&t, &lit, "nope", None),
            Err(ReadError::Missing(_))
        ));
        assert!(matches!(
            grep(&t, &lit, "src/sub/out", None),
            Err(ReadError::Path(_))
        ));
        assert!(matches!(
            grep(&t, &lit, "../outside", None),
            Err(ReadError::Path(_))
        ));
        assert!(matches!(
            grep(&t, &lit, "/etc/passwd", None),
            Err(ReadError::Path(_))
        ));
        assert!(matches!(exists(&t, "src/sub/out"), Err(ReadError::Path(_))));
        assert!(exists(&t, "src/sub/b.rs").unwrap());
        assert!(!exists(&t, "src/sub/c.rs").unwrap());
        assert!(!exists(&t, ".git/c").unwrap());
    }

    #[test]
    fn streaming_counts_as_the_whole_file_would() {
        let s = crate::scratch::ScratchDir::new("elench-grep");
        std::fs::create_dir_all(s.path()).unwrap();
        let t = Tree::new(s.path());
        let lit = Pattern::literal("ab").unwrap();
        let re = Pattern::regex("^a.*b$").unwrap();
        // Lines that straddle the reader's 64 KiB buffer, and endings of every kind.
        let long = "x".repeat(70_000);
        for body in [
            String::new(),
            "\n".into(),
            "ab".into(),
            "ab\n".into(),
            "ab\n\nab".into(),
            format!("a{long}b\nab\n{long}ab"),
            format!("{long}\n{long}\nab\n"),
        ] {
            std::fs::write(s.path().join("f"), &body).unwrap();
            for p in [&lit, &re] {
                assert_eq!(
                    grep(&t, p, "f", None).unwrap(),
                    p.count_lines(body.as_bytes()),
                    "{:?}",
                    &body[..body.len().min(20)]
                );
            }
        }
    }

    #[test]
    fn a_line_longer_than_the_bound_is_refused_and_a_past_deadline_stops_reading() {
        let s = crate::scratch::ScratchDir::new("elench-grep");
        std::fs::create_dir_all(s.path()).unwrap();
        let t = Tree::new(s.path());
        let f = std::fs::File::create(s.path().join("big")).unwrap();
        f.set_len(MAX_LINE as u64 + 1).unwrap();
        let lit = Pattern::literal("x").unwrap();
        assert!(matches!(
            grep(&t, &lit, "big", None),
            Err(ReadError::LineTooLong { .. })
        ));
        let lines = "a\n".repeat(1 << 20);
        std::fs::write(s.path().join("many"), &lines).unwrap();
        let past = Instant::now();
        assert!(matches!(
            grep(&t, &lit, "many", Some(past)),
            Err(ReadError::TimedOut { .. })
        ));
        assert_eq!(grep(&t, &lit, "many", None).unwrap(), 0);
    }
}
