//! `elench manifest`: every command, its flags, danger level and exit codes in one JSON
//! object (the CLI Agent Spec's ManifestResponse; `cli::describe`).

use crate::cli::describe::manifest;
use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::output::Report;
use serde_json::Map;

#[derive(Debug, clap::Args)]
pub struct ManifestArgs {}

/// `definition`: the whole command line's clap definition, which the dispatcher hands in.
pub fn run(_a: ManifestArgs, _g: &Globals, definition: clap::Command) -> Result<Report, Failure> {
    let m = manifest(definition);
    let n = m["commands"].as_object().map_or(0, Map::len);
    let mut text = format!("{n} commands (elench manifest --format json for the whole table)\n");
    if let Some(cmds) = m["commands"].as_object() {
        for (path, c) in cmds {
            text.push_str(&format!(
                "  {:<22} {:<11} {}\n",
                path.replace('.', " "),
                c["danger_level"].as_str().unwrap_or_default(),
                c["description"].as_str().unwrap_or_default()
            ));
        }
    }
    Ok(Report::new(m, text))
}
