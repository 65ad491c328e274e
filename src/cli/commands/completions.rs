//! `elench completions SHELL`: a shell completion script generated from the command-line
//! definitions.

use crate::cli::failure::Failure;
use crate::cli::files::write_atomically;
use crate::cli::globals::Globals;
use crate::cli::output::Report;
use serde_json::json;

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh or fish (also elvish, powershell)
    pub shell: clap_complete::Shell,
    /// Write the script to FILE; without it the script goes to stdout in place of the report
    /// (e.g. `elench completions bash > ~/.local/share/bash-completion/completions/elench`)
    #[arg(short = 'o', long = "output", visible_alias = "out", value_name = "FILE",
          value_parser = crate::cli::files::output_path)]
    pub out: Option<String>,
}

/// `definition`: the whole command line's clap definition, which the dispatcher hands in.
pub fn run(a: CompletionsArgs, g: &Globals, definition: clap::Command) -> Result<Report, Failure> {
    let mut cmd = definition;
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "elench", &mut script);
    match a.out.as_deref() {
        None | Some("-") => {
            g.stdout_for_product("completion script")?;
            crate::cli::files::product_to_stdout(&script)?;
            Ok(Report {
                stdout_taken: true,
                ..Report::default()
            })
        }
        Some(path) => {
            write_atomically(std::path::Path::new(path), &script)?;
            Ok(Report::new(
                json!({"path": path, "shell": a.shell.to_string(), "effect": "created"}),
                format!("wrote the {} completion script to {path}\n", a.shell),
            ))
        }
    }
}
