//! `elench demo`: the operation (`ops::demo`) run in a scratch directory or a kept folder,
//! and its story rendered.

use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::output::Report;
use elench::store::STORE_DIR;
use serde_json::{json, Value};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Keep the demo store in DIR/.elench instead of a temporary directory
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
}

pub fn run(a: DemoArgs, g: &Globals) -> Result<Report, Failure> {
    if let Some(d) = &a.keep {
        let root = d.join(STORE_DIR);
        if root.exists() {
            return Err(Failure::usage(
                None,
                format!(
                    "{} already exists; the demo needs a fresh directory",
                    root.display()
                ),
            ));
        }
    }
    let out = elench::ops::demo::demo(&g.context(), a.keep.as_deref())?;
    // The story quotes command lines; the library marks their options, the CLI words them.
    let mut text = crate::cli::words::text(&out.text);
    if let Some(root) = &out.store {
        text.push_str(&format!(
            "\nThe demo store is kept at {}; try `elench --store {} log`.\n",
            root.display(),
            root.display()
        ));
    }
    Ok(Report::new(
        json!({
            "store": match &out.store {
                None => Value::Null,
                Some(root) => json!(root.display().to_string()),
            },
            "claims": out.claims.iter().map(|(n, id)| json!({"name": n, "id": id})).collect::<Vec<_>>(),
            "steps": out.steps,
        }),
        text,
    ))
}
