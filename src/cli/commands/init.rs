//! `elench init [DIR]`: create a store.

use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::output::Report;
use crate::store::{Store, STORE_DIR};
use serde_json::json;
use std::path::PathBuf;
use std::time::Duration;

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
    let (store, created) = Store::init_with(
        &root,
        Duration::from_secs(g.wait),
        crate::cli::output::observer(),
        &g.envs,
    )?;
    let path = std::fs::canonicalize(store.root()).unwrap_or_else(|_| root.clone());
    let text = if created {
        format!("created an empty elench store at {}\n", path.display())
    } else {
        format!(
            "an elench store already exists at {} (nothing changed)\n",
            path.display()
        )
    };
    Ok(Report::new(
        json!({
            "path": path.display().to_string(),
            "created": created,
            "effect": if created { "created" } else { "noop" },
            "format_version": crate::store::current_version(),
            "claims": store.count()?,
        }),
        text,
    ))
}
