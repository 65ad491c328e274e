//! `elench export -o FILE|-`: the log as an in-toto bundle (`ops::export`), written to FILE
//! (atomically) or stdout.

use crate::cli::common::refuse_inside_store;
use crate::cli::failure::Failure;
use crate::cli::files::write_atomically;
use crate::cli::globals::Globals;
use crate::cli::output::Report;
use elench::ops::export::{bundle, Bundle};
use serde_json::json;

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// Write the bundle to FILE (atomically); `-` writes the bundle itself to stdout in place
    /// of the JSON report (which then goes to stderr as text)
    #[arg(short = 'o', long = "output", visible_alias = "out", value_name = "FILE", required = true,
          value_parser = crate::cli::files::output_path)]
    pub out: String,
}

pub fn run(a: ExportArgs, g: &Globals) -> Result<Report, Failure> {
    if a.out == "-" {
        g.stdout_for_product("bundle")?;
    }
    let store = g.context().open_store()?;
    if a.out != "-" {
        refuse_inside_store(std::path::Path::new(&a.out), store.root())?;
    }
    let Bundle {
        bytes,
        envelopes: n,
    } = bundle(&store)?;
    match a.out.as_str() {
        "-" => {
            crate::cli::files::product_to_stdout(&bytes)?;
            eprintln!("exported {n} envelopes");
            Ok(Report {
                stdout_taken: true,
                ..Report::default()
            })
        }
        path => {
            let existed = std::path::Path::new(path).exists();
            write_atomically(std::path::Path::new(path), &bytes)?;
            Ok(Report::new(
                json!({"path": path, "envelopes": n,
                       "effect": if existed { "updated" } else { "created" }}),
                format!("exported {n} envelopes to {path}\n"),
            ))
        }
    }
}
