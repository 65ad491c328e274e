//! A claim's inputs at a tree: what its verdict depends on there, as one digest.
//!
//! A verdict (a verification, a falsification, a residue-acceptance) is an observation of
//! one tree. It speaks for another tree only where everything the claim reads is the same,
//! so each observation records the digest of its target's inputs at the tree it observed,
//! and applies at another tree where the inputs digest there is equal (docs/status.md,
//! "Verdicts per tree", gives the exact bytes):
//!
//! - a predicate that only calls `exists` and `grep` reads the entries at its paths: a
//!   file by its bytes (git's blob id), a directory by its subtree (git's tree id, which
//!   covers names, modes and contents); a path with nothing there reads as absent, so
//!   `exists` of a missing file carries until the file appears. The digest is SHA-256 of
//!   `elench-inputs-v1\n` followed by one line `PATH NUL ENTRY LF` per distinct path in
//!   byte order, where ENTRY is `MODE SP HEX` (git's mode and object id) or `absent`;
//! - a predicate that calls `test` or `run` reads the whole tree (a build and a process can
//!   read anything), and so does a path that passes through a symbolic link or cannot be
//!   read inside the tree: its inputs digest is the tree id itself;
//! - a claim without a predicate reads its anchored span: its inputs digest is the span's
//!   `contentDigest` wherever the span is found (where the claim is anchored or carried),
//!   and the tree id for a claim about the whole tree (or a span without a digest, at its
//!   own tree).
//!
//! Everything here reads a [`TreeIds`] (the object ids the tree's listing already hashed)
//! and the claim's text, never a file.

use crate::claim::predicate::{self, Arg, Expr, Func};
use crate::claim::Gist;
use crate::tree::TreeIds;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;

/// The domain line every path-list digest starts with.
const DOMAIN: &[u8] = b"elench-inputs-v1\n";

pub use crate::claim::INPUTS_URI_PREFIX as EVIDENCE_URI_PREFIX;

/// What a predicate reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reads {
    /// The whole tree (`test`, `run`, or a path that cannot be pinned to entries).
    WholeTree,
    /// These paths, normalised (`/`-separated, no empty or `.` parts), sorted.
    Paths(BTreeSet<String>),
}

/// A predicate path as the evaluator reads it: `""` and `.` parts dropped; None when it
/// leaves the tree (absolute, `..`, a NUL byte), which the evaluator refuses.
pub fn normalise(path: &str) -> Option<String> {
    if path.starts_with('/') || path.as_bytes().contains(&0) {
        return None;
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// The paths (or the whole tree) a parsed predicate reads.
pub fn reads_of(expr: &Expr) -> Reads {
    let mut paths = BTreeSet::new();
    let mut whole = false;
    let mut stack = vec![expr];
    while let Some(e) = stack.pop() {
        match e {
            Expr::Or(items) | Expr::And(items) => stack.extend(items.iter()),
            Expr::Not(inner) => stack.push(inner),
            Expr::Cmp { lhs, rhs, .. } => {
                stack.push(lhs);
                stack.push(rhs);
            }
            Expr::Field { base, .. } | Expr::Method { base, .. } => stack.push(base),
            Expr::Call { func, args } => match func {
                Func::Test | Func::Run => whole = true,
                Func::Exists | Func::Grep => match args.last() {
                    Some(Arg::Str(p)) => match normalise(p) {
                        Some(p) => {
                            paths.insert(p);
                        }
                        None => whole = true,
                    },
                    _ => whole = true,
                },
            },
            Expr::Int(_) | Expr::Str(_) | Expr::Bool(_) => {}
        }
    }
    if whole {
        Reads::WholeTree
    } else {
        Reads::Paths(paths)
    }
}

/// The inputs digest of `reads` at the tree `ids` (64 lowercase hex).
pub fn digest(reads: &Reads, ids: &TreeIds) -> String {
    let Reads::Paths(paths) = reads else {
        return ids.oid().to_owned();
    };
    // A path through a symbolic link reads wherever the link leads: the whole tree.
    if paths.iter().any(|p| through_link(p, ids)) {
        return ids.oid().to_owned();
    }
    let mut h = Sha256::new();
    h.update(DOMAIN);
    for p in paths {
        h.update(p.as_bytes());
        h.update([0u8]);
        match ids.entry(p) {
            Some((mode, oid)) => {
                h.update(mode.as_bytes());
                h.update(b" ");
                h.update(hex::encode(oid).as_bytes());
            }
            None => h.update(b"absent"),
        }
        h.update(b"\n");
    }
    hex::encode(h.finalize())
}

/// Whether `path` or a directory above it is a symbolic link in the tree.
fn through_link(path: &str, ids: &TreeIds) -> bool {
    let mut end = 0;
    loop {
        let next = path[end..].find('/').map(|i| end + i);
        let prefix = &path[..next.unwrap_or(path.len())];
        if !prefix.is_empty() && ids.entry(prefix).is_some_and(|(m, _)| m == "120000") {
            return true;
        }
        match next {
            Some(i) => end = i + 1,
            None => return false,
        }
    }
}

/// The predicate source of a claim's text (its body, or the index's summary, which keeps
/// the source alone: ingest accepts predicates only in elench's language).
pub fn predicate_source<G: Gist + ?Sized>(text: &G) -> Option<&str> {
    let a = text.json().get("assertion")?;
    if a.get("form")?.as_str()? != "predicate" {
        return None;
    }
    a.get("expression")?.get("source")?.as_str()
}

/// What a claim reads at any tree, from its text: a predicate's reads, or None for a claim
/// without one (it reads its anchored span).
pub fn claim_reads<G: Gist + ?Sized>(text: &G) -> Option<Reads> {
    let source = predicate_source(text)?;
    Some(match predicate::parse(source) {
        Ok(expr) => reads_of(&expr),
        // Ingest parsed it; a source that does not parse here reads everything.
        Err(_) => Reads::WholeTree,
    })
}

/// The inputs digest an observation recorded for `target`, if it recorded one.
pub fn recorded<'a, G: Gist + ?Sized>(record: &'a G, target: &str) -> Option<&'a str> {
    let items = record.json().get("evidence")?.as_array()?;
    items.iter().find_map(|e| {
        let uri = e.get("uri")?.as_str()?;
        (uri.strip_prefix(EVIDENCE_URI_PREFIX)? == target)
            .then(|| e.get("digest")?.as_str())
            .flatten()
    })
}

/// The evidence entry that records `digest` as `target`'s inputs.
pub fn evidence_entry(target: &str, digest: &str) -> serde_json::Value {
    serde_json::json!({
        "kind": "artifact-digest",
        "digest": digest,
        "uri": format!("{EVIDENCE_URI_PREFIX}{target}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads(src: &str) -> Reads {
        reads_of(&predicate::parse(src).unwrap())
    }

    fn paths(list: &[&str]) -> Reads {
        Reads::Paths(list.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn a_predicate_reads_the_paths_it_names_or_the_whole_tree() {
        assert_eq!(reads(r#"exists("a.rs")"#), paths(&["a.rs"]));
        assert_eq!(
            reads(r#"grep("x", "./src//a.rs") > 0 && !exists("b")"#),
            paths(&["b", "src/a.rs"])
        );
        assert_eq!(reads(r#"grep(/x+/, ".") == 1"#), paths(&[""]));
        assert_eq!(reads(r#"test("t").passed"#), Reads::WholeTree);
        assert_eq!(
            reads(r#"exists("a") || run("true").exit == 0"#),
            Reads::WholeTree
        );
        assert_eq!(reads(r#"exists("../a")"#), Reads::WholeTree);
    }

    #[test]
    fn the_digest_changes_with_what_is_read_and_only_that() {
        let t0 = TreeIds::of_files(&[("a.rs", b"one"), ("b.txt", b"ok"), ("d/c", b"c")]);
        let t1 = TreeIds::of_files(&[("a.rs", b"two"), ("b.txt", b"ok"), ("d/c", b"c")]);
        let t2 = TreeIds::of_files(&[("a.rs", b"one"), ("b.txt", b"ok"), ("d/c", b"C")]);
        let b = paths(&["b.txt"]);
        assert_eq!(digest(&b, &t0), digest(&b, &t1));
        let d = paths(&["d"]);
        assert_eq!(digest(&d, &t0), digest(&d, &t1));
        assert_ne!(digest(&d, &t0), digest(&d, &t2));
        let a = paths(&["a.rs"]);
        assert_ne!(digest(&a, &t0), digest(&a, &t1));
        // Absent carries until it appears.
        let gone = paths(&["nope"]);
        assert_eq!(digest(&gone, &t0), digest(&gone, &t1));
        let t3 = TreeIds::of_files(&[("a.rs", b"one"), ("nope", b"")]);
        assert_ne!(digest(&gone, &t0), digest(&gone, &t3));
        assert_eq!(digest(&Reads::WholeTree, &t0), t0.oid());
        assert_eq!(digest(&paths(&[""]), &t0).len(), 64);
    }
}
