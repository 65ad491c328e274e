//! Whether a claim applies at a directory, and where its span is there.
//!
//! A claim made about one tree applies to another only where what it is about is
//! demonstrably unchanged, so resolution fails closed:
//!
//! - `anchored`: the claim's tree is the directory's tree;
//! - `carried`: the claim has a `contentDigest` and the same normalised lines are found at
//!   its path (at any range; the span keeps its length), or, with strategy `content-digest`,
//!   in any file of the directory;
//! - `stale`: it has a digest, but the lines are gone or changed; or it names a span (a path,
//!   a range) but carries no digest, so nothing can show that span unchanged;
//! - `unanchored`: a whole-tree claim (no path, no range, no digest) about another tree: it
//!   speaks of that tree only.
//!
//! Resolution reads only the directory's files and the claim, never the old tree. When the
//! lines occur more than once in the file, the occurrence nearest the claim's own range wins
//! (the earlier one on a tie); across files, the claim's own path first, then path order.

use super::digest::Normalised;
use super::files::TreeFiles;
use super::model::{tree_path, Anchor, Strategy};
use super::AnchorError;
use crate::claim::{Claim, Gist};
use crate::tree::Selection;
use serde::Serialize;
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How a claim applies at a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Applies {
    Anchored,
    Carried,
    Stale,
    Unanchored,
}

impl Applies {
    pub fn as_str(self) -> &'static str {
        match self {
            Applies::Anchored => "anchored",
            Applies::Carried => "carried",
            Applies::Stale => "stale",
            Applies::Unanchored => "unanchored",
        }
    }

    pub fn parse(s: &str) -> Option<Applies> {
        Some(match s {
            "anchored" => Applies::Anchored,
            "carried" => Applies::Carried,
            "stale" => Applies::Stale,
            "unanchored" => Applies::Unanchored,
            _ => return None,
        })
    }

    /// `anchored` or `carried`: the claim speaks about this tree.
    pub fn applies(self) -> bool {
        matches!(self, Applies::Anchored | Applies::Carried)
    }
}

impl fmt::Display for Applies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A claim resolved at a tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resolution {
    pub applies: Applies,
    /// Where the span is in this tree: the claim's own path when anchored, where it was found
    /// when carried, none otherwise.
    pub path: Option<String>,
    /// The span's lines in this tree (`[start, end]`, 1-based, inclusive), or none for a
    /// whole-file anchor, or when it does not apply.
    pub range: Option<[u64; 2]>,
}

impl Resolution {
    fn not_here(applies: Applies) -> Resolution {
        Resolution {
            applies,
            path: None,
            range: None,
        }
    }
}

/// Resolves claims at one directory, keeping each file it has read (normalised) for the next.
pub struct Resolver {
    dir: PathBuf,
    tree: String,
    /// The tree's files, listed when first needed unless handed over.
    files: Option<Arc<TreeFiles>>,
    /// Which files make the tree (ignore rules honoured unless `--no-ignore`).
    selection: Selection,
}

/// A claim that must be looked for across the tree: its digest and span length.
struct Search {
    index: usize,
    digest: [u8; 32],
    len: Option<usize>,
}

impl Resolver {
    pub fn new(dir: &Path, dir_tree_oid: &str) -> Resolver {
        Resolver {
            dir: dir.to_path_buf(),
            tree: dir_tree_oid.to_owned(),
            files: None,
            selection: Selection::Committed,
        }
    }

    /// Reads the tree with this choice of files (the one its tree OID was computed with).
    pub fn with_selection(mut self, selection: Selection) -> Resolver {
        self.selection = selection;
        self
    }

    /// Reads the tree's files from `files` (the same tree, listed with the same selection),
    /// shared with whoever else holds them, instead of listing and reading the directory
    /// itself: what the tree's hashing read is not read again.
    pub fn with_files(mut self, files: Arc<TreeFiles>) -> Resolver {
        self.files = Some(files);
        self
    }

    /// The directory's tree OID, as given.
    pub fn tree(&self) -> &str {
        &self.tree
    }

    /// Resolves one claim, its anchor read from `text` (its body or summary).
    pub fn resolve<G: Gist>(&mut self, claim: &Claim, text: &G) -> Result<Resolution, AnchorError> {
        let mut out = self.resolve_all(&[(claim, text)])?;
        out.pop().ok_or_else(|| AnchorError::BadAnchor {
            id: claim.id.clone(),
            message: "resolution produced no answer".into(),
        })
    }

    /// Resolves every claim, in order. Claims whose lines may have moved to another file are
    /// searched for together: one pass over the tree per distinct span length, however many
    /// claims are looked for.
    pub fn resolve_all<G: Gist>(
        &mut self,
        claims: &[(&Claim, &G)],
    ) -> Result<Vec<Resolution>, AnchorError> {
        let anchors = claims
            .iter()
            .map(|(claim, text)| Anchor::of(claim, *text))
            .collect::<Result<Vec<_>, _>>()?;
        self.resolve_anchors(&anchors)
    }

    /// [`Resolver::resolve_all`] of claims whose anchors are already read, in order. Each
    /// anchor's own file is read and searched on every core; a failure is the one the first
    /// failing anchor in order meets, as if they were resolved one by one.
    pub fn resolve_anchors(&mut self, anchors: &[Anchor]) -> Result<Vec<Resolution>, AnchorError> {
        use rayon::prelude::*;
        // One anchor (`status --at ID`) is not worth handing to the thread pool.
        let tree = self.tree.as_str();
        let plans: Vec<Local> = if anchors.len() < 2 {
            anchors.iter().map(|a| plan(tree, a)).collect()
        } else {
            anchors
                .par_iter()
                .with_min_len(64)
                .map(|a| plan(tree, a))
                .collect()
        };
        // The tree is listed only when some anchor reads a file of it.
        let files = if plans.iter().any(|p| matches!(p, Local::InFile { .. })) {
            Some(self.files()?)
        } else {
            None
        };
        let finish = |p: Local| finish(files.as_deref(), p);
        let finished: Vec<Result<(Resolution, Option<SearchFor>), AnchorError>> = if plans.len() < 2
        {
            plans.into_iter().map(finish).collect()
        } else {
            plans.into_par_iter().with_min_len(64).map(finish).collect()
        };
        let mut out = Vec::with_capacity(finished.len());
        let mut searches = Vec::new();
        for (index, r) in finished.into_iter().enumerate() {
            let (r, search) = r?;
            if let (Some((digest, len)), Applies::Stale) = (search, r.applies) {
                searches.push(Search { index, digest, len });
            }
            out.push(r);
        }
        if !searches.is_empty() {
            self.search_tree(&searches, &mut out)?;
        }
        Ok(out)
    }

    /// Looks for each search's lines in every text file, in path order; the first file that
    /// has them wins, at its first occurrence.
    fn search_tree(
        &mut self,
        searches: &[Search],
        out: &mut [Resolution],
    ) -> Result<(), AnchorError> {
        let mut by_len: HashMap<Option<usize>, HashMap<[u8; 32], Vec<usize>>> = HashMap::new();
        for s in searches {
            by_len
                .entry(s.len)
                .or_default()
                .entry(s.digest)
                .or_default()
                .push(s.index);
        }
        let files = self.files()?;
        let paths = files.paths();
        let mut lens: Vec<Option<usize>> = by_len.keys().copied().collect();
        lens.sort_unstable();
        for len in lens {
            let Some(wanted) = by_len.get_mut(&len) else {
                continue;
            };
            for (i, path) in paths.iter().enumerate() {
                if wanted.is_empty() {
                    break;
                }
                let Some(file) = files.text_at(i)? else {
                    continue;
                };
                let windows: Vec<Option<(usize, usize)>> = match len {
                    None => vec![None],
                    Some(l) if l <= file.lines() => {
                        (0..=file.lines() - l).map(|f| Some((f, l))).collect()
                    }
                    Some(_) => Vec::new(),
                };
                for w in windows {
                    let Some(d) = file.raw_digest(w) else {
                        continue;
                    };
                    if let Some(indices) = wanted.remove(&d) {
                        for i in indices {
                            out[i] = Resolution {
                                applies: Applies::Carried,
                                path: Some(path.clone()),
                                range: w.map(|(f, l)| [f as u64 + 1, (f + l) as u64]),
                            };
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The tree's files: as handed over, else listed now (once).
    fn files(&mut self) -> Result<Arc<TreeFiles>, AnchorError> {
        if let Some(f) = &self.files {
            return Ok(f.clone());
        }
        let files = Arc::new(TreeFiles::listed(&self.dir, self.selection)?);
        self.files = Some(files.clone());
        Ok(files)
    }
}

/// What to look for across the tree when a `content-digest` claim is not at its own path: the
/// span's digest and length (None: the whole file).
type SearchFor = ([u8; 32], Option<usize>);

/// What resolving one anchor takes: an answer from the anchor alone, or its own file's lines.
enum Local {
    /// Decided without reading a file; `search` when the lines may be elsewhere in the tree.
    Done(Resolution, Option<SearchFor>),
    /// Carried if the span is in the file at `rel`, the occurrence nearest line `near`.
    InFile {
        rel: String,
        digest: [u8; 32],
        len: Option<usize>,
        near: u64,
        search: bool,
    },
}

/// How anchor `a` resolves at the tree `tree`, as far as the anchor alone tells.
fn plan(tree: &str, a: &Anchor) -> Local {
    if a.tree == tree {
        return Local::Done(
            Resolution {
                applies: Applies::Anchored,
                path: a.path.clone(),
                range: a.range.map(|(s, e)| [s, e]),
            },
            None,
        );
    }
    let Some(digest) = a.content_digest.as_deref() else {
        // A span without its digest can never be shown unchanged: stale, so that a gate
        // sees it. Only a claim about the whole tree is about that tree alone.
        let whole_tree = a.path.is_none() && a.range.is_none();
        let applies = if whole_tree {
            Applies::Unanchored
        } else {
            Applies::Stale
        };
        return Local::Done(Resolution::not_here(applies), None);
    };
    // A digest that is not 32 bytes of lowercase hex can match nothing.
    let raw: Option<[u8; 32]> = (digest.bytes().all(|b| !b.is_ascii_uppercase()))
        .then(|| hex::decode(digest).ok()?.try_into().ok())
        .flatten();
    let Some(raw) = raw else {
        return Local::Done(Resolution::not_here(Applies::Stale), None);
    };
    let len = match a.range {
        None => None,
        Some((s, e)) => match usize::try_from(e - s + 1) {
            Ok(l) => Some(l),
            // Longer than any file could be.
            Err(_) => return Local::Done(Resolution::not_here(Applies::Stale), None),
        },
    };
    let search = a.strategy == Strategy::ContentDigest;
    match a.path.as_deref().and_then(tree_path) {
        Some(rel) => Local::InFile {
            rel,
            digest: raw,
            len,
            near: a.range.map_or(0, |(s, _)| s.saturating_sub(1)),
            search,
        },
        None => Local::Done(
            Resolution::not_here(Applies::Stale),
            search.then_some((raw, len)),
        ),
    }
}

/// The answer for `p`, reading its own file from `files` (the tree's, present whenever a
/// plan reads a file).
fn finish(
    files: Option<&TreeFiles>,
    p: Local,
) -> Result<(Resolution, Option<SearchFor>), AnchorError> {
    let (rel, digest, len, near, search) = match p {
        Local::Done(r, search) => return Ok((r, search)),
        Local::InFile {
            rel,
            digest,
            len,
            near,
            search,
        } => (rel, digest, len, near, search),
    };
    if let Some(file) = files.map(|f| f.text(&rel)).transpose()?.flatten() {
        if let Some(range) = find_in_file(&file, &digest, len, near) {
            let found = Resolution {
                applies: Applies::Carried,
                path: Some(rel),
                range,
            };
            return Ok((found, None));
        }
    }
    Ok((
        Resolution::not_here(Applies::Stale),
        search.then_some((digest, len)),
    ))
}

/// Where a span of `len` lines (or the whole file, `None`) with this digest is in `file`:
/// `Some(range)` (range None for the whole file), or None when it is not there. Among several
/// occurrences, the one starting nearest 0-based line `near` wins, the earlier on a tie.
fn find_in_file(
    file: &Normalised,
    digest: &[u8; 32],
    len: Option<usize>,
    near: u64,
) -> Option<Option<[u64; 2]>> {
    let Some(len) = len else {
        return (file.raw_digest(None).as_ref() == Some(digest)).then_some(None);
    };
    if len == 0 || len > file.lines() {
        return None;
    }
    let last = file.lines() - len;
    let near = usize::try_from(near).unwrap_or(usize::MAX).min(last);
    // Walk outwards from `near`: at each distance, the earlier candidate first.
    for dist in 0..=last {
        let below = near.checked_sub(dist);
        let above = near.checked_add(dist).filter(|&f| f <= last && dist > 0);
        if below.is_none() && above.is_none() {
            break;
        }
        for first in [below, above].into_iter().flatten() {
            if file.raw_digest(Some((first, len))).as_ref() == Some(digest) {
                return Some(Some([first as u64 + 1, (first + len) as u64]));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One claim resolved at `dir` by a fresh resolver.
    fn resolve(
        claim: &(Claim, Body),
        dir: &Path,
        dir_tree_oid: &str,
    ) -> Result<Resolution, AnchorError> {
        Resolver::new(dir, dir_tree_oid).resolve(&claim.0, &claim.1)
    }
    use crate::anchor::digest::content_digest;
    use crate::claim::{Body, Kind, OriginKind};
    use serde_json::json;
    use std::fs;

    const OLD: &str = "1111111111111111111111111111111111111111111111111111111111111111";
    const NEW: &str = "2222222222222222222222222222222222222222222222222222222222222222";

    fn claim(anchor: serde_json::Value) -> (Claim, Body) {
        let header = Claim {
            id: "cl_test".into(),
            kind: Kind::Assertion,
            target: vec![],
            depends_on: vec![],
            origin: OriginKind::AgentAsserted,
            producer: "p".into(),
            anchor_tree: anchor["tree"].as_str().unwrap_or(OLD).to_owned(),
            timestamp: 0,
        };
        (header, Body::new(json!({ "anchor": anchor })))
    }

    fn digest(text: &str, range: Option<(u64, u64)>) -> String {
        content_digest(text.as_bytes(), range).unwrap()
    }

    const FILE: &str = "fn a() {}\nfn b() {\n    1\n}\nfn c() {}\n";

    #[test]
    fn resolve_moved_span_is_carried_with_new_range() {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir(tmp.path().join("src")).unwrap();
        fs::write(
            tmp.path().join("src/x.rs"),
            format!("// new\n// lines\n{FILE}"),
        )
        .unwrap();
        let c = claim(json!({"tree": OLD, "strategy": "multi", "path": "src/x.rs",
                             "range": [2, 4], "contentDigest": digest(FILE, Some((2, 4)))}));
        let r = resolve(&c, tmp.path(), NEW).unwrap();
        assert_eq!(r.applies, Applies::Carried);
        assert_eq!(r.path.as_deref(), Some("src/x.rs"));
        assert_eq!(r.range, Some([4, 6]));
    }

    #[test]
    fn resolve_own_tree_is_anchored_even_without_digest() {
        let tmp = tempfile::tempdir().unwrap();
        let c =
            claim(json!({"tree": NEW, "strategy": "multi", "path": "gone.rs", "range": [1, 2]}));
        let r = resolve(&c, tmp.path(), NEW).unwrap();
        assert_eq!(
            r,
            Resolution {
                applies: Applies::Anchored,
                path: Some("gone.rs".into()),
                range: Some([1, 2])
            }
        );
        // At another tree, a span without a digest is stale (nothing shows it unchanged),
        // even where the file is still there; only a whole-tree claim is unanchored.
        fs::write(tmp.path().join("gone.rs"), "fn a() {}\n").unwrap();
        for a in [
            json!({"tree": OLD, "strategy": "multi", "path": "gone.rs"}),
            json!({"tree": OLD, "strategy": "multi", "path": "gone.rs", "range": [1, 1]}),
            json!({"tree": OLD, "strategy": "content-digest", "path": "gone.rs"}),
        ] {
            assert_eq!(
                resolve(&claim(a.clone()), tmp.path(), NEW).unwrap().applies,
                Applies::Stale,
                "{a}"
            );
        }
        let c = claim(json!({"tree": OLD, "strategy": "multi"}));
        assert_eq!(
            resolve(&c, tmp.path(), NEW).unwrap().applies,
            Applies::Unanchored
        );
    }

    #[test]
    fn resolve_prefers_nearest_occurrence() {
        let f = Normalised::new(b"x\ny\nx\ny\nx\ny\n").unwrap();
        let d = f.raw_digest(Some((0, 2))).unwrap();
        assert_eq!(find_in_file(&f, &d, Some(2), 0), Some(Some([1, 2])));
        assert_eq!(find_in_file(&f, &d, Some(2), 3), Some(Some([3, 4])));
        assert_eq!(find_in_file(&f, &d, Some(2), 100), Some(Some([5, 6])));
        assert_eq!(find_in_file(&f, &d, Some(7), 0), None);
    }

    #[test]
    fn resolve_content_digest_searches_other_files_and_multi_does_not() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("a.rs"), "other\n").unwrap();
        fs::write(tmp.path().join("renamed.rs"), FILE).unwrap();
        fs::write(tmp.path().join("blob.bin"), b"\0\0").unwrap();
        let anchor = |strategy: &str, range: Option<[u64; 2]>| {
            let mut a = json!({"tree": OLD, "strategy": strategy, "path": "old.rs",
                               "contentDigest": digest(FILE, range.map(|r| (r[0], r[1])))});
            if let Some(r) = range {
                a["range"] = json!(r);
            }
            claim(a)
        };
        let mut res = Resolver::new(tmp.path(), NEW);
        let cs = [
            anchor("multi", Some([2, 4])),
            anchor("content-digest", Some([2, 4])),
            anchor("content-digest", None),
            anchor("multi", None),
        ];
        let refs: Vec<(&Claim, &Body)> = cs.iter().map(|(c, b)| (c, b)).collect();
        let got = res.resolve_all(&refs).unwrap();
        assert_eq!(got[0].applies, Applies::Stale);
        assert_eq!(got[1].applies, Applies::Carried);
        assert_eq!(got[1].path.as_deref(), Some("renamed.rs"));
        assert_eq!(got[1].range, Some([2, 4]));
        assert_eq!(got[2].applies, Applies::Carried);
        assert_eq!(got[2].range, None);
        assert_eq!(got[3].applies, Applies::Stale);
    }

    #[test]
    fn resolve_edit_inside_span_or_bad_digest_is_stale() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("x.rs"), FILE.replace("1", "2")).unwrap();
        for d in [
            digest(FILE, Some((2, 4))),
            "zz".into(),
            digest(FILE, Some((2, 4))).to_uppercase(),
        ] {
            let c = claim(json!({"tree": OLD, "strategy": "multi", "path": "x.rs",
                                 "range": [2, 4], "contentDigest": d}));
            assert_eq!(
                resolve(&c, tmp.path(), NEW).unwrap().applies,
                Applies::Stale
            );
        }
        // A path that leaves the tree never resolves.
        let c = claim(json!({"tree": OLD, "strategy": "multi", "path": "../x.rs",
                             "contentDigest": digest(FILE, None)}));
        assert_eq!(
            resolve(&c, tmp.path(), NEW).unwrap().applies,
            Applies::Stale
        );
    }

    #[test]
    fn resolve_whole_file_carries_only_when_all_of_it_matches() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("x.rs"), format!("{FILE}// more\n")).unwrap();
        let c = claim(json!({"tree": OLD, "strategy": "multi", "path": "x.rs",
                             "contentDigest": digest(FILE, None)}));
        assert_eq!(
            resolve(&c, tmp.path(), NEW).unwrap().applies,
            Applies::Stale
        );
        fs::write(tmp.path().join("x.rs"), FILE.replace('\n', "  \r\n")).unwrap();
        let r = resolve(&c, tmp.path(), NEW).unwrap();
        assert_eq!((r.applies, r.range), (Applies::Carried, None));
    }
}
