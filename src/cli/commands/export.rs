//! `elench export -o FILE|-`: the log as an in-toto bundle, one envelope a line, in log
//! order. Each line is the envelope exactly as the log keeps it (its canonical RFC 8785 form,
//! which is one line), so two stores holding the same envelopes export the same lines.

use crate::cli::common::refuse_inside_store;
use crate::cli::failure::Failure;
use crate::cli::files::write_atomically;
use crate::cli::globals::Globals;
use crate::cli::output::Report;
use crate::store::Store;
use serde_json::json;
use std::io::Write;

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// Write the bundle to FILE (atomically); `-` writes the bundle itself to stdout in place
    /// of the JSON report (which then goes to stderr as text)
    #[arg(short = 'o', long = "output", visible_alias = "out", value_name = "FILE", required = true,
          value_parser = crate::cli::files::output_path)]
    pub out: String,
}

/// Writes the bundle to `out` page by page; returns the number of envelopes.
pub fn write_bundle(store: &Store, out: &mut dyn Write) -> Result<u64, Failure> {
    let mut n = 0;
    loop {
        let page = store.envelope_records(n, 4096)?;
        if page.is_empty() {
            break;
        }
        for e in &page {
            out.write_all(&e.bytes)
                .and_then(|_| out.write_all(b"\n"))
                .map_err(|e| Failure::io("bundle", e))?;
        }
        n += page.len() as u64;
    }
    Ok(n)
}

/// The bundle's bytes.
pub fn bundle(store: &Store) -> Result<(Vec<u8>, u64), Failure> {
    let mut out = Vec::new();
    let n = write_bundle(store, &mut out)?;
    Ok((out, n))
}

pub fn run(a: ExportArgs, g: &Globals) -> Result<Report, Failure> {
    if a.out == "-" {
        g.stdout_for_product("bundle")?;
    }
    let store = g.context().open_store()?;
    if a.out != "-" {
        refuse_inside_store(std::path::Path::new(&a.out), store.root())?;
    }
    let (bytes, n) = bundle(&store)?;
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
