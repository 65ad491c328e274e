//! `elench tree [DIR]`: the elench tree OID of a directory.

use crate::cli::failure::Failure;
use crate::cli::output::Report;
use crate::cli::Globals;
use serde_json::json;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct TreeArgs {
    /// Directory to hash (default: the working directory)
    #[arg(default_value = ".")]
    pub dir: PathBuf,
}

pub fn run(args: TreeArgs, _g: &Globals) -> Result<Report, Failure> {
    let oid = crate::tree::tree_oid(&args.dir).map_err(|e| Failure::Io {
        path: args.dir.display().to_string(),
        message: e.to_string(),
    })?;
    Ok(Report::new(
        json!({"tree": oid, "path": args.dir.display().to_string()}),
        format!("{oid}\n"),
    ))
}
