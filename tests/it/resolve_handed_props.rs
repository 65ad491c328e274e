//! The gate resolves anchors from the files its tree hashing already read
//! (`Listing::ids_keeping`, `anchor::files::TreeFiles::from_listing`) instead of listing and
//! reading the directory again. Held here to the reference, a resolver that lists the tree
//! and reads each file itself: on random trees with text and binary files, links to files,
//! to directories and out of the tree, ignored files and directories, and anchors naming
//! files that are there, missing, ignored, reached through a link or outside the tree, both
//! resolve every claim alike, with the ignore rules read and with `--no-ignore`.

use crate::anchor_props::{claim, NEW, OLD};
use elench::anchor::files::TreeFiles;
use elench::anchor::{content_digest, Applies, Resolver};
use elench::claim::{Body, Claim};
use elench::tree::{self, Selection};
use proptest::prelude::*;
use serde_json::json;
use std::fs;
use std::path::Path;
use std::sync::Arc;

/// Where files may be. `build/` and `*.tmp` are what the ignore file (when there is one)
/// leaves out; `lnk` is where a link to `src` may be.
const PATHS: [&str; 7] = [
    "a.rs",
    "src/b.rs",
    "src/c.rs",
    "docs/d.md",
    "build/e.rs",
    "x.tmp",
    "bin.dat",
];

/// What anchors may name beyond those: a file through a linked directory, paths out of the
/// tree, a link to a file, git's own folder.
const MORE: [&str; 5] = [
    "lnk/b.rs",
    "../outside.rs",
    "out/secret.rs",
    "f.link",
    ".git/x",
];

#[derive(Debug, Clone)]
enum Content {
    Text(Vec<String>),
    Binary,
    Missing,
}

fn line() -> impl Strategy<Value = String> {
    "[ab \t\r]{0,4}"
}

fn content() -> impl Strategy<Value = Content> {
    prop_oneof![
        6 => prop::collection::vec(line(), 0..8).prop_map(Content::Text),
        1 => Just(Content::Binary),
        2 => Just(Content::Missing),
    ]
}

#[derive(Debug, Clone)]
struct Span {
    /// Which path the claim names.
    path: usize,
    /// Which file's text its digest is taken from (PATHS, then the file outside the tree).
    source: usize,
    start: usize,
    len: usize,
    whole: bool,
    digest: bool,
    content_strategy: bool,
}

fn span() -> impl Strategy<Value = Span> {
    (
        0..PATHS.len() + MORE.len(),
        0..PATHS.len() + 1,
        (0usize..8, 1usize..4),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.9),
        prop::bool::weighted(0.3),
    )
        .prop_map(
            |(path, source, (start, len), whole, digest, content_strategy)| Span {
                path,
                source,
                start,
                len,
                whole,
                digest,
                content_strategy,
            },
        )
}

fn text(lines: &[String]) -> String {
    let mut t = lines.join("\n");
    if !lines.is_empty() {
        t.push('\n');
    }
    t
}

#[derive(Debug, Clone)]
struct Layout {
    files: Vec<Content>,
    outside: Vec<String>,
    ignore_file: bool,
    link_dir: bool,
    link_out: bool,
    link_file: bool,
}

fn layout() -> impl Strategy<Value = Layout> {
    (
        prop::collection::vec(content(), PATHS.len()),
        prop::collection::vec(line(), 1..6),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(files, outside, ignore_file, link_dir, link_out, link_file)| Layout {
                files,
                outside,
                ignore_file,
                link_dir,
                link_out,
                link_file,
            },
        )
}

/// Makes the tree in `root/tree` (and a file outside it, in `root`); the tree's directory.
fn make(root: &Path, l: &Layout) -> std::path::PathBuf {
    let dir = root.join("tree");
    fs::create_dir_all(dir.join("src")).unwrap();
    for (path, c) in PATHS.iter().zip(&l.files) {
        let p = dir.join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        match c {
            Content::Text(lines) => fs::write(p, text(lines)).unwrap(),
            Content::Binary => fs::write(p, b"a\n\0b\n").unwrap(),
            Content::Missing => {}
        }
    }
    fs::write(root.join("outside.rs"), text(&l.outside)).unwrap();
    fs::create_dir_all(root.join("secret")).unwrap();
    fs::write(root.join("secret/secret.rs"), text(&l.outside)).unwrap();
    if l.ignore_file {
        fs::write(dir.join(".gitignore"), "build/\n*.tmp\n").unwrap();
    }
    if l.link_dir {
        std::os::unix::fs::symlink("src", dir.join("lnk")).unwrap();
    }
    if l.link_out {
        std::os::unix::fs::symlink(root.join("secret"), dir.join("out")).unwrap();
    }
    if l.link_file {
        std::os::unix::fs::symlink("a.rs", dir.join("f.link")).unwrap();
    }
    fs::create_dir_all(dir.join(".git")).unwrap();
    fs::write(dir.join(".git/x"), text(&l.outside)).unwrap();
    dir
}

fn claims(l: &Layout, spans: &[Span]) -> Vec<(Claim, Body)> {
    spans
        .iter()
        .map(|s| {
            let path = PATHS.iter().chain(MORE.iter()).nth(s.path).unwrap();
            let source = match l.files.get(s.source) {
                Some(Content::Text(lines)) => text(lines),
                Some(_) => String::new(),
                None => text(&l.outside),
            };
            let lines = source.lines().count();
            let mut anchor = json!({"tree": OLD, "path": path,
                "strategy": if s.content_strategy { "content-digest" } else { "multi" }});
            let range = (!s.whole).then(|| {
                let start = 1 + s.start % lines.max(1);
                (start as u64, (start + s.len - 1) as u64)
            });
            if let Some((a, b)) = range {
                anchor["range"] = json!([a, b]);
            }
            if s.digest {
                // A span past the file's end gets a digest that can match nothing.
                let d = content_digest(source.as_bytes(), range).unwrap_or_else(|_| "0".repeat(64));
                anchor["contentDigest"] = json!(d);
            }
            claim(anchor)
        })
        .collect()
}

/// The handed road: the tree hashed once, its kept bytes handed to the resolver.
fn handed(dir: &Path, selection: Selection) -> Resolver {
    let listing = tree::list(dir, selection).unwrap();
    let (ids, kept) = listing.ids_keeping().unwrap();
    assert_eq!(ids.oid(), listing.oid().unwrap());
    let files = TreeFiles::from_listing(dir, &listing, kept);
    Resolver::new(dir, NEW)
        .with_selection(selection)
        .with_files(Arc::new(files))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 128,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn resolution_from_the_hashed_files_is_the_reference(
        l in layout(),
        spans in prop::collection::vec(span(), 1..160),
        no_ignore in any::<bool>(),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = make(tmp.path(), &l);
        let selection = Selection::from_no_ignore(no_ignore);
        let cs = claims(&l, &spans);
        let refs: Vec<(&Claim, &Body)> = cs.iter().map(|(c, b)| (c, b)).collect();
        let reference = Resolver::new(&dir, NEW)
            .with_selection(selection)
            .resolve_all(&refs)
            .map_err(|e| e.to_string());
        let quick = handed(&dir, selection).resolve_all(&refs).map_err(|e| e.to_string());
        prop_assert_eq!(&quick, &reference);
        // One at a time too: a single anchor is resolved on the calling thread, a batch of
        // more than 64 in pieces on every core.
        let mut one = handed(&dir, selection);
        for (r, c) in refs.iter().enumerate() {
            let got = one.resolve(c.0, c.1).map_err(|e| e.to_string());
            prop_assert_eq!(got.as_ref().ok(), reference.as_ref().ok().map(|v| &v[r]));
        }
    }
}

/// Resolution reads the very bytes the tree's id was computed from: a file changed on disk
/// after the tree was hashed is not read again.
#[test]
fn resolution_reads_the_bytes_the_tree_was_hashed_from() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let body = "fn a() {}\nfn b() {}\n";
    fs::write(dir.join("a.rs"), body).unwrap();
    let c = claim(
        json!({"tree": OLD, "strategy": "multi", "path": "a.rs", "range": [2, 2],
                         "contentDigest": content_digest(body.as_bytes(), Some((2, 2))).unwrap()}),
    );
    let mut resolver = handed(dir, Selection::Committed);
    fs::write(dir.join("a.rs"), "changed since\n").unwrap();
    let r = resolver.resolve(&c.0, &c.1).unwrap();
    assert_eq!((r.applies, r.range), (Applies::Carried, Some([2, 2])));
    // The reference reads the file now on disk.
    let r = Resolver::new(dir, NEW).resolve(&c.0, &c.1).unwrap();
    assert_eq!(r.applies, Applies::Stale);
}
