//! `elench anchor PATH[:START-END] [--at DIR] [--strategy S]`: the anchor object for a span,
//! ready to put in a claim. Also the tree-directory rules `gate`, `sign --anchor` and
//! `status --at` share.

use crate::anchor::{self, Strategy};
use crate::cli::failure::Failure;
use crate::cli::output::{Report, Warning};
use crate::cli::Globals;
use crate::tree::Selection;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct AnchorArgs {
    /// The file, relative to DIR, and optionally its lines: PATH, PATH:START-END or PATH:LINE
    #[arg(value_name = "PATH[:START-END]")]
    pub spec: String,
    /// The tree the file is in (default: the enclosing checkout, i.e. the nearest directory
    /// upwards holding .git, else the working directory)
    #[arg(long, value_name = "DIR")]
    pub at: Option<PathBuf>,
    /// How the claim is found again in later trees: multi and path-range look in the same
    /// file (the lines may move), content-digest in any file of the tree
    #[arg(long, default_value = "multi", value_parser = ["multi", "content-digest", "path-range"])]
    pub strategy: String,
    /// Keep the files that .gitignore, .git/info/exclude and the global excludes leave out
    /// of the tree (the tree is then what `git add -A --force` would commit)
    #[arg(long)]
    pub no_ignore: bool,
}

pub fn run(a: AnchorArgs, _g: &Globals) -> Result<Report, Failure> {
    let dir = tree_dir(a.at.as_deref())?;
    let strategy = Strategy::parse(&a.strategy)
        .ok_or_else(|| Failure::Usage(format!("unknown strategy {:?}", a.strategy)))?;
    let (anchor, warning) = anchor_at_with(
        &dir,
        &a.spec,
        strategy,
        Selection::from_no_ignore(a.no_ignore),
    )?;
    let text = serde_json::to_string_pretty(&anchor)
        .map_err(|e| Failure::Internal(format!("cannot print the anchor: {e}")))?;
    let mut report = Report::new(
        json!({"anchor": anchor, "dir": dir.display().to_string()}),
        format!("{text}\n"),
    );
    report.warnings.extend(warning);
    Ok(report)
}

/// The anchor object for `PATH[:START-END]` in `dir`, with `dir`'s tree OID (ignore rules
/// honoured).
pub fn anchor_at(dir: &Path, spec: &str, strategy: Strategy) -> Result<Value, Failure> {
    anchor_at_with(dir, spec, strategy, Selection::Committed).map(|(a, _)| a)
}

/// [`anchor_at`] with a choice of the tree's files, and `TRACKED_IGNORED` if it applies. A
/// file the tree leaves out cannot be anchored: the claim would name a tree that does not
/// hold it.
pub fn anchor_at_with(
    dir: &Path,
    spec: &str,
    strategy: Strategy,
    selection: Selection,
) -> Result<(Value, Option<Warning>), Failure> {
    let (path, range) = anchor::parse_spec(spec).map_err(Failure::Usage)?;
    let rel = relative_to(dir, &path)?;
    // The file first, then the whole tree: a typo fails before the tree is hashed.
    let mut anchor = anchor::make(dir, "", &rel, range, strategy)?;
    let listing = crate::tree::list(dir, selection).map_err(tree_failure)?;
    if let Some(Value::String(p)) = anchor.get("path") {
        if !listing.has_file(p) {
            return Err(anchor::AnchorError::Ignored {
                path: p.clone(),
                dir: dir.to_path_buf(),
            }
            .into());
        }
    }
    let tree = listing.oid().map_err(tree_failure)?;
    anchor.insert("tree".into(), Value::String(tree));
    Ok((Value::Object(anchor), tracked_ignored(dir, &listing)))
}

/// `--at DIR` or, without it, the enclosing checkout: the nearest directory from the working
/// directory upwards that holds `.git` (a directory, or a file in a git worktree), else the
/// working directory.
pub fn tree_dir(at: Option<&Path>) -> Result<PathBuf, Failure> {
    if let Some(dir) = at {
        return match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() => Ok(dir.to_path_buf()),
            Ok(_) => Err(Failure::Usage(format!(
                "--at {}: not a directory",
                dir.display()
            ))),
            Err(e) => Err(Failure::io(dir.display(), e)),
        };
    }
    let cwd = std::env::current_dir().map_err(|e| Failure::io(".", e))?;
    Ok(cwd
        .ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(&cwd)
        .to_path_buf())
}

/// The elench tree OID of `dir`, ignore rules honoured.
pub fn tree_oid(dir: &Path) -> Result<String, Failure> {
    tree_oid_with(dir, Selection::Committed)
}

/// The elench tree OID of `dir` with a choice of files (`--no-ignore`).
pub fn tree_oid_with(dir: &Path, selection: Selection) -> Result<String, Failure> {
    crate::tree::tree_oid_with(dir, selection).map_err(tree_failure)
}

/// The elench tree OID of `dir`, and `TRACKED_IGNORED` when git tracks files there that the
/// tree leaves out.
pub fn tree_of(dir: &Path, selection: Selection) -> Result<(String, Option<Warning>), Failure> {
    let listing = crate::tree::list(dir, selection).map_err(tree_failure)?;
    let oid = listing.oid().map_err(tree_failure)?;
    Ok((oid, tracked_ignored(dir, &listing)))
}

/// `TRACKED_IGNORED` when git's index in `dir` tracks files that the listing leaves out as
/// ignored: git keeps committing them, so the commit holds code the tree (and every claim
/// about it, and `check`) does not.
pub fn tracked_ignored(dir: &Path, listing: &crate::tree::Listing) -> Option<Warning> {
    crate::ops::check::tracked_ignored(dir, listing).map(|(code, m)| Warning::new(code, m))
}

/// A tree that cannot be listed or hashed, naming the path at fault.
pub fn tree_failure(e: crate::tree::TreeError) -> Failure {
    Failure::Io {
        path: e.path().display().to_string(),
        message: e.to_string(),
    }
}

/// `path` as a path inside `dir`: relative paths are taken as they are; an absolute one must
/// lie under `dir`.
fn relative_to(dir: &Path, path: &str) -> Result<String, Failure> {
    let p = Path::new(path);
    if !p.is_absolute() {
        return Ok(path.to_owned());
    }
    let outside = || {
        Failure::Usage(format!(
            "{path} is not inside {}; give a path relative to --at DIR",
            dir.display()
        ))
    };
    let root = dir
        .canonicalize()
        .map_err(|e| Failure::io(dir.display(), e))?;
    let parent = p.parent().ok_or_else(outside)?;
    let name = p.file_name().ok_or_else(outside)?;
    let parent = parent
        .canonicalize()
        .map_err(|e| Failure::io(parent.display(), e))?;
    let rel = parent.join(name);
    let rel = rel.strip_prefix(&root).map_err(|_| outside())?;
    rel.to_str()
        .map(str::to_owned)
        .ok_or_else(|| Failure::Usage(format!("{path} is not UTF-8")))
}
