//! `elench init [DIR]`: create a store (`ops::init`) where DIR or `--store` says.

use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::output::Report;
use crate::store::STORE_DIR;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// Directory in which to create .elench (default: the working directory; --store names
    /// the store directory itself)
    pub dir: Option<PathBuf>,
}

pub fn run(a: InitArgs, g: &Globals) -> Result<Report, Failure> {
    let root = match (&g.store, a.dir) {
        (Some(_), Some(_)) => {
            return Err(Failure::Usage(
                "give either DIR or --store, not both".into(),
            ))
        }
        (Some(s), None) => s.clone(),
        (None, Some(d)) => d.join(STORE_DIR),
        (None, None) => PathBuf::from(STORE_DIR),
    };
    let made = crate::ops::init::init(&g.context(), &root)?;
    let text = if made.created {
        format!("created an empty elench store at {}\n", made.path)
    } else {
        format!(
            "an elench store already exists at {} (nothing changed)\n",
            made.path
        )
    };
    let data = crate::cli::common::to_data(&made)?;
    Ok(Report::new(data, text))
}
