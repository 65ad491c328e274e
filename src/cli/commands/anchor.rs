//! `elench anchor PATH[:START-END] [--at DIR] [--strategy S]`: the anchor object for a span,
//! ready to put in a claim. Also the tree-directory rules `gate`, `sign --anchor` and
//! `status --at` share.

use crate::anchor::{self, Strategy};
use crate::cli::failure::Failure;
use crate::cli::output::Report;
use crate::cli::Globals;
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
}

pub fn run(a: AnchorArgs, _g: &Globals) -> Result<Report, Failure> {
    let dir = tree_dir(a.at.as_deref())?;
    let strategy = Strategy::parse(&a.strategy)
        .ok_or_else(|| Failure::Usage(format!("unknown strategy {:?}", a.strategy)))?;
    let anchor = anchor_at(&dir, &a.spec, strategy)?;
    let text = serde_json::to_string_pretty(&anchor)
        .map_err(|e| Failure::Internal(format!("cannot print the anchor: {e}")))?;
    Ok(Report::new(
        json!({"anchor": anchor, "dir": dir.display().to_string()}),
        format!("{text}\n"),
    ))
}

/// The anchor object for `PATH[:START-END]` in `dir`, with `dir`'s tree OID.
pub fn anchor_at(dir: &Path, spec: &str, strategy: Strategy) -> Result<Value, Failure> {
    let (path, range) = anchor::parse_spec(spec).map_err(Failure::Usage)?;
    let rel = relative_to(dir, &path)?;
    // The file first, then the whole tree: a typo fails before the tree is hashed.
    let mut anchor = anchor::make(dir, "", &rel, range, strategy)?;
    anchor.insert("tree".into(), Value::String(tree_oid(dir)?));
    Ok(Value::Object(anchor))
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

/// The elench tree OID of `dir`.
pub fn tree_oid(dir: &Path) -> Result<String, Failure> {
    crate::tree::tree_oid(dir).map_err(|e| Failure::Io {
        path: dir.display().to_string(),
        message: e.to_string(),
    })
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
