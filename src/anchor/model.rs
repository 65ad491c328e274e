//! A claim's `anchor` as carry-over reads it, and the paths anchors may name.

use super::AnchorError;
use crate::claim::{Claim, Gist, SummaryParts};
use serde_json::Value;
use std::fmt;

/// How an anchor finds its span in a later tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// The span may move inside its file (the default).
    Multi,
    /// As `multi`; the path names the file, the digest finds the lines in it.
    PathRange,
    /// As `multi`; no symbol resolution is done, so the path and digest decide.
    Symbol,
    /// The digest is found anywhere in the tree: the span may move to another file.
    ContentDigest,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Multi => "multi",
            Strategy::PathRange => "path-range",
            Strategy::Symbol => "symbol",
            Strategy::ContentDigest => "content-digest",
        }
    }

    pub fn parse(s: &str) -> Option<Strategy> {
        Some(match s {
            "multi" => Strategy::Multi,
            "path-range" => Strategy::PathRange,
            "symbol" => Strategy::Symbol,
            "content-digest" => Strategy::ContentDigest,
            _ => return None,
        })
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The members of `anchor` that carry-over reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchor {
    pub tree: String,
    pub strategy: Strategy,
    pub path: Option<String>,
    /// 1-based, inclusive, `start <= end`.
    pub range: Option<(u64, u64)>,
    pub content_digest: Option<String>,
}

impl Anchor {
    /// Reads the anchor of a validated claim from its body or summary (`text`). Ingest has
    /// already checked its shape, so an error here means the claim did not come through
    /// ingest.
    pub fn of<G: Gist + ?Sized>(claim: &Claim, text: &G) -> Result<Anchor, AnchorError> {
        let bad = |message: String| AnchorError::BadAnchor {
            id: claim.id.clone(),
            message,
        };
        let a = text
            .anchor()
            .and_then(Value::as_object)
            .ok_or_else(|| bad("the claim has no anchor object".into()))?;
        let strategy = match a.get("strategy") {
            None => Strategy::Multi,
            Some(v) => v
                .as_str()
                .and_then(Strategy::parse)
                .ok_or_else(|| bad(format!("anchor.strategy {v} is not a known strategy")))?,
        };
        let text = |name: &str| -> Result<Option<String>, AnchorError> {
            match a.get(name) {
                None => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(v) => Err(bad(format!("anchor.{name} {v} is not a string"))),
            }
        };
        let range = match a.get("range") {
            None => None,
            Some(v) => {
                let pair = v.as_array().and_then(|r| match r.as_slice() {
                    [s, e] => Some((s.as_u64()?, e.as_u64()?)),
                    _ => None,
                });
                match pair {
                    Some((s, e)) if 1 <= s && s <= e => Some((s, e)),
                    _ => return Err(bad(format!("anchor.range {v} is not [start, end]"))),
                }
            }
        };
        Ok(Anchor {
            tree: claim.anchor_tree.clone(),
            strategy,
            path: text("path")?,
            range,
            content_digest: text("contentDigest")?,
        })
    }
}

impl Anchor {
    /// [`Anchor::of`] from the parts of an index summary read without a JSON value, for a
    /// claim about `tree`: the same
    /// anchor when the parts hold one; None when the summary has no anchor or one that
    /// [`Anchor::of`] refuses (an unknown strategy, a range that is not `[start, end]`), so
    /// that the caller reads it the reference way and reports what it reports.
    pub fn from_parts(tree: &str, parts: &SummaryParts<'_>) -> Option<Anchor> {
        let a = parts.anchor?;
        let strategy = match a.strategy {
            None => Strategy::Multi,
            Some(s) => Strategy::parse(s)?,
        };
        let range = match a.range {
            None => None,
            Some([s, e]) if 1 <= s && s <= e => Some((s, e)),
            Some(_) => return None,
        };
        Some(Anchor {
            tree: tree.to_owned(),
            strategy,
            path: a.path.map(str::to_owned),
            range,
            content_digest: a.content_digest.map(str::to_owned),
        })
    }
}

/// Whether an `anchor` object names a span (a path or a range) but carries no
/// `contentDigest`: such a claim can never be shown unchanged at another tree, so it is
/// `stale` everywhere but its own tree (`NO_CONTENT_DIGEST` warns when it is signed or added).
pub fn span_without_digest(anchor: &Value) -> bool {
    let Some(a) = anchor.as_object() else {
        return false;
    };
    (a.contains_key("path") || a.contains_key("range")) && !a.contains_key("contentDigest")
}

/// A path inside a tree in the one form anchors use: relative, `/`-separated, no `.` or
/// empty components. `None` when it cannot name a file of the tree: absolute, through `..`,
/// into `.git`, or into the store at the top (the tree OID leaves both out).
pub fn tree_path(path: &str) -> Option<String> {
    if path.starts_with('/') {
        return None;
    }
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let forbidden = |i: usize, p: &str| p == ".." || p == ".git" || (i == 0 && p == ".elench");
    if parts.is_empty() || parts.iter().enumerate().any(|(i, p)| forbidden(i, p)) {
        return None;
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_path_normalises_and_refuses_escapes() {
        assert_eq!(tree_path("src/lib.rs").as_deref(), Some("src/lib.rs"));
        assert_eq!(tree_path("./src//lib.rs").as_deref(), Some("src/lib.rs"));
        for bad in [
            "",
            ".",
            "/etc/passwd",
            "../x",
            "src/../../x",
            ".git/config",
            ".elench/x",
        ] {
            assert_eq!(tree_path(bad), None, "{bad}");
        }
        // Only the top-level .elench is the store.
        assert_eq!(tree_path("a/.elench").as_deref(), Some("a/.elench"));
    }
}
