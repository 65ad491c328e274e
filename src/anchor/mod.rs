//! Anchors: what a claim is about, and whether it still applies when the tree moves on.
//!
//! - [`digest`]: the normalised content digest of a span of lines;
//! - [`model`]: a claim's anchor as carry-over reads it, and the paths anchors may name;
//! - [`files`]: reading a tree's files without leaving it;
//! - [`resolve`]: `anchored` / `carried` / `stale` / `unanchored` for a claim at a directory;
//! - [`make`] (here): the anchor object for a span, what `elench anchor` prints and
//!   `elench sign --anchor` fills in.

pub mod at_tree;
pub mod digest;
pub mod files;
pub mod inputs;
pub mod model;
pub mod resolve;

pub use at_tree::AtTree;
pub use digest::{content_digest, DigestError};
pub use model::{span_without_digest, tree_path, Anchor, Strategy};
pub use resolve::{Applies, Resolution, Resolver};

use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

/// Why an anchor could not be made or a claim resolved.
#[derive(Debug, thiserror::Error)]
pub enum AnchorError {
    /// The path cannot name a file of the tree.
    #[error("{path:?} is not a path inside the tree (relative, '/'-separated, no '..', not in .git or the store)")]
    BadPath { path: String },
    /// No regular file at the path (symbolic links are not followed).
    #[error("{path}: no regular file at this path in {}", dir.display())]
    NoFile { path: String, dir: PathBuf },
    /// The file's content cannot be anchored, or the range is not in it.
    #[error("{path}: {source}")]
    Digest {
        path: String,
        #[source]
        source: DigestError,
    },
    /// Reading the file system failed.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The directory's tree cannot be listed.
    #[error(transparent)]
    Tree(#[from] crate::tree::TreeError),
    /// The file is there but the ignore rules leave it out of the tree.
    #[error("{path}: ignored (a .gitignore, .git/info/exclude or the global excludes leave it out of the tree of {}); anchor a file of the tree, or pass --no-ignore", dir.display())]
    Ignored { path: String, dir: PathBuf },
    /// A stored claim's anchor is not what ingest lets through.
    #[error("claim {id}: {message}")]
    BadAnchor { id: String, message: String },
}

/// The anchor object for lines `range` (or the whole file) of `path` in `dir`, whose tree
/// OID is `tree`: `tree`, `strategy`, `path`, `range` (left out for a whole file) and
/// `contentDigest`, ready to put in a claim.
pub fn make(
    dir: &Path,
    tree: &str,
    path: &str,
    range: Option<(u64, u64)>,
    strategy: Strategy,
) -> Result<Map<String, Value>, AnchorError> {
    let rel = tree_path(path).ok_or_else(|| AnchorError::BadPath {
        path: path.to_owned(),
    })?;
    let bytes = match files::read(dir, &rel)? {
        files::Entry::File(b) => b,
        files::Entry::Absent => {
            return Err(AnchorError::NoFile {
                path: rel,
                dir: dir.to_path_buf(),
            })
        }
    };
    let digest = content_digest(&bytes, range).map_err(|source| AnchorError::Digest {
        path: rel.clone(),
        source,
    })?;
    let mut anchor = Map::new();
    anchor.insert("tree".into(), json!(tree));
    anchor.insert("strategy".into(), json!(strategy.as_str()));
    anchor.insert("path".into(), json!(rel));
    if let Some((s, e)) = range {
        anchor.insert("range".into(), json!([s, e]));
    }
    anchor.insert("contentDigest".into(), json!(digest));
    Ok(anchor)
}

/// Splits `PATH[:START-END]` (or `PATH:LINE`). A suffix that is not made of digits belongs to
/// the path, so paths with colons still work; one that is digits but not a range is an error.
pub fn parse_spec(spec: &str) -> Result<(String, Option<(u64, u64)>), String> {
    let Some((path, tail)) = spec.rsplit_once(':') else {
        return Ok((spec.to_owned(), None));
    };
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (a, b) = tail.split_once('-').unwrap_or((tail, tail));
    if !(numeric(a) && numeric(b)) {
        return Ok((spec.to_owned(), None));
    }
    let bad = || {
        format!(
            "{spec:?}: the lines must be START-END with 1 <= START <= END (e.g. src/lib.rs:10-24)"
        )
    };
    let (start, end) = match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(s), Ok(e)) if 1 <= s && s <= e => (s, e),
        _ => return Err(bad()),
    };
    if path.is_empty() {
        return Err(bad());
    }
    Ok((path.to_owned(), Some((start, end))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchor_spec_parses_ranges_and_keeps_colons_in_paths() {
        assert_eq!(parse_spec("a.rs"), Ok(("a.rs".into(), None)));
        assert_eq!(parse_spec("a.rs:3-5"), Ok(("a.rs".into(), Some((3, 5)))));
        assert_eq!(parse_spec("a.rs:7"), Ok(("a.rs".into(), Some((7, 7)))));
        assert_eq!(parse_spec("dir:x/a.rs"), Ok(("dir:x/a.rs".into(), None)));
        assert_eq!(
            parse_spec("a:b.rs:1-2"),
            Ok(("a:b.rs".into(), Some((1, 2))))
        );
        for bad in ["a.rs:0-2", "a.rs:5-3", "a.rs:0", ":1-2"] {
            assert!(parse_spec(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn anchor_make_covers_file_or_span() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a.rs"), "x\ny \r\n").unwrap();
        let a = make(tmp.path(), "t", "./a.rs", Some((2, 2)), Strategy::Multi).unwrap();
        assert_eq!(a["path"], json!("a.rs"));
        assert_eq!(a["range"], json!([2, 2]));
        assert_eq!(
            a["contentDigest"],
            json!(content_digest(b"y\n", None).unwrap())
        );
        let whole = make(tmp.path(), "t", "a.rs", None, Strategy::ContentDigest).unwrap();
        assert!(!whole.contains_key("range"));
        assert_eq!(whole["strategy"], json!("content-digest"));
        assert!(matches!(
            make(tmp.path(), "t", "a.rs", Some((2, 3)), Strategy::Multi),
            Err(AnchorError::Digest {
                source: DigestError::OutOfBounds { lines: 2, .. },
                ..
            })
        ));
        assert!(matches!(
            make(tmp.path(), "t", "b.rs", None, Strategy::Multi),
            Err(AnchorError::NoFile { .. })
        ));
        assert!(matches!(
            make(tmp.path(), "t", "../a.rs", None, Strategy::Multi),
            Err(AnchorError::BadPath { .. })
        ));
    }
}
