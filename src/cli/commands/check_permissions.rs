//! `elench check-permissions [--for COMMAND]`: the credential scopes commands need, against
//! the ones held (the CLI Agent Spec's built-in). elench holds no credential and needs none
//! (a remote is reached with git's own credentials, which git keeps): every command declares
//! `required_scopes: []`, so every command is covered and none is over-privileged. The
//! command exists so that an agent can ask elench what it asks any tool.

use crate::cli::describe::manifest;
use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::output::Report;
use serde_json::{json, Map, Value};

#[derive(Debug, clap::Args)]
pub struct CheckPermissionsArgs {
    /// One command, as `elench manifest` names it (`keys retire` or `keys.retire`)
    #[arg(long = "for", value_name = "COMMAND")]
    pub for_command: Option<String>,
}

fn coverage(entry: &Value) -> Value {
    json!({
        "required_scopes": entry["required_scopes"],
        "covered": true,
        "over_privileged": false,
    })
}

/// `definition`: the whole command line's clap definition, which the dispatcher hands in.
pub fn run(
    a: CheckPermissionsArgs,
    _g: &Globals,
    definition: clap::Command,
) -> Result<Report, Failure> {
    let m = manifest(definition);
    let empty = Map::new();
    let commands = m["commands"].as_object().unwrap_or(&empty);
    match a.for_command {
        Some(name) => {
            let path = name.split_whitespace().collect::<Vec<_>>().join(".");
            let Some(entry) = commands.get(&path) else {
                return Err(Failure::NotFound {
                    code: elench::error::Code::CommandNotFound,
                    message: format!(
                        "there is no command {name:?}; `elench manifest` lists every command"
                    ),
                });
            };
            let mut data = coverage(entry);
            data["command"] = json!(path.replace('.', " "));
            data["active_scopes"] = json!([]);
            Ok(Report::new(
                data,
                format!(
                    "{} needs no credential scope; elench holds no credential\n",
                    path.replace('.', " ")
                ),
            ))
        }
        None => {
            let table: Map<String, Value> = commands
                .iter()
                .map(|(path, entry)| (path.replace('.', " "), coverage(entry)))
                .collect();
            let n = table.len();
            Ok(Report::new(
                json!({"active_scopes": [], "commands": table}),
                format!(
                    "{n} commands, none needs a credential scope; elench holds no credential\n"
                ),
            ))
        }
    }
}
