//! `elench anchor PATH[:START-END] [--at DIR] [--strategy S]`: the anchor object for a span,
//! ready to put in a claim (`ops::anchor`).

use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::output::{Report, Warning};
use elench::anchor::Strategy;
use elench::ops::anchor::anchor_at_with;
use elench::ops::tree::tree_dir;
use elench::tree::Selection;
use serde_json::json;
use std::path::PathBuf;

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
        .ok_or_else(|| Failure::usage(None, format!("unknown strategy {:?}", a.strategy)))?;
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
    report
        .warnings
        .extend(warning.map(|(code, m)| Warning::new(code, m)));
    Ok(report)
}
