//! `elench tree [DIR]`: the elench tree OID of a directory.

use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::output::{Report, Warning};
use serde_json::json;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct TreeArgs {
    /// Directory to hash (default: the working directory)
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Keep the files that .gitignore, .git/info/exclude and the global excludes leave out
    /// (the tree is then what `git add -A --force` would commit)
    #[arg(long)]
    pub no_ignore: bool,
}

pub fn run(args: TreeArgs, _g: &Globals) -> Result<Report, Failure> {
    let selection = elench::tree::Selection::from_no_ignore(args.no_ignore);
    let (oid, warning) = elench::ops::tree::tree_of(&args.dir, selection)?;
    let mut report = Report::new(
        json!({"tree": oid, "path": args.dir.display().to_string()}),
        format!("{oid}\n"),
    );
    report
        .warnings
        .extend(warning.map(|(code, m)| Warning::new(code, m)));
    Ok(report)
}
