//! `elench export -o FILE|-`: the log as an in-toto bundle, one envelope a line, in arrival
//! order. Envelopes are written byte for byte as received; one received with line breaks
//! inside is written on one line with its insignificant whitespace removed (its signature
//! covers the PAE, not the envelope text, so it verifies the same).

use super::common::open_store;
use crate::cli::failure::Failure;
use crate::cli::files::write_atomically;
use crate::cli::output::Report;
use crate::cli::Globals;
use crate::store::Store;
use serde_json::json;
use std::io::Write;

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// Write the bundle to FILE (atomically); `-` writes the bundle itself to stdout in place
    /// of the JSON report (which then goes to stderr as text)
    #[arg(short = 'o', long = "out", value_name = "FILE", required = true)]
    pub out: String,
}

/// The bundle's bytes.
pub fn bundle(store: &Store) -> Result<(Vec<u8>, u64), Failure> {
    let mut out = Vec::new();
    let mut n = 0;
    let mut from = 0;
    loop {
        let page = store.arrivals(from, 1024)?;
        let Some(last) = page.last() else { break };
        from = last.0 + 1;
        for (seq, id) in &page {
            let env = store.envelope(id)?.ok_or_else(|| {
                Failure::Internal(format!(
                    "arrival #{seq} names {id}, whose envelope is missing"
                ))
            })?;
            if env.contains(&b'\n') || env.contains(&b'\r') {
                let v: serde_json::Value = serde_json::from_slice(&env)
                    .map_err(|e| Failure::Internal(format!("stored envelope {id}: {e}")))?;
                out.extend_from_slice(v.to_string().as_bytes());
            } else {
                out.extend_from_slice(&env);
            }
            out.push(b'\n');
            n += 1;
        }
    }
    Ok((out, n))
}

pub fn run(a: ExportArgs, g: &Globals) -> Result<Report, Failure> {
    if a.out == "-" {
        g.stdout_for_product("bundle")?;
    }
    let store = open_store(g)?;
    let (bytes, n) = bundle(&store)?;
    match a.out.as_str() {
        "-" => {
            let mut out = std::io::stdout().lock();
            out.write_all(&bytes)
                .and_then(|_| out.flush())
                .map_err(|e| Failure::io("<stdout>", e))?;
            eprintln!("exported {n} envelopes");
            Ok(Report {
                stdout_taken: true,
                ..Report::default()
            })
        }
        path => {
            write_atomically(std::path::Path::new(path), &bytes)?;
            Ok(Report::new(
                json!({"path": path, "envelopes": n}),
                format!("exported {n} envelopes to {path}\n"),
            ))
        }
    }
}
