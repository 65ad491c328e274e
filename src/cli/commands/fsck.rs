//! `elench fsck [--repair] [--checkpoint FILE]`: check the whole store
//! ([`elench::ops::fsck`]).

use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::output::Report;
use elench::ops::fsck::{fsck, FsckInput};

#[derive(Debug, clap::Args)]
pub struct FsckArgs {
    /// Move everything from the first damaged record on into quarantine/ (nothing is
    /// deleted) and rebuild the index; exits 0 once the store is usable again
    #[arg(long)]
    pub repair: bool,
    /// Also prove that the log still extends this checkpoint (from `elench checkpoint -o`)
    #[arg(long, value_name = "FILE")]
    pub checkpoint: Option<String>,
    /// The public key (PEM) that signed the checkpoint; its signature is checked against
    /// this key only, never against the store's own keys (whoever can write the store can
    /// add a key there)
    #[arg(long, value_name = "PUB.pem", requires = "checkpoint")]
    pub key: Option<std::path::PathBuf>,
}

pub fn run(a: FsckArgs, g: &Globals) -> Result<Report, Failure> {
    let input = FsckInput {
        repair: a.repair,
        checkpoint: a.checkpoint,
        key: a.key,
    };
    // The CLI's observer draws the walk over the log as a bar on a terminal.
    let mut out = fsck(&g.context(), &input)?;
    let mut text = String::new();
    if let Some(r) = &out.repaired {
        if r.format {
            text.push_str(&format!(
                "FORMAT named an older layout than the log on disk; it now names layout {}\n",
                elench::store::current_version()
            ));
        }
        text.push_str(&match &r.damage {
            Some(d) => format!(
                "repaired: {d}; moved {} file(s) to {}; the index was rebuilt\n",
                r.moved.len(),
                r.quarantine_dir.display()
            ),
            None if r.moved.is_empty() => "the log was sound; the index was rebuilt\n".into(),
            None => format!(
                "cut an unfinished final record into {}; the index was rebuilt\n",
                r.quarantine_dir.display()
            ),
        });
    }
    text.push_str(&format!(
        "checked {} records ({} envelopes of {} claims): {} problem(s)\n",
        out.records,
        out.envelopes,
        out.claims,
        out.problems.len()
    ));
    for p in &out.problems {
        text.push_str(&format!("  {} {}\n", p.code, p.message));
    }
    let failure = out.failure.take();
    let mut data = crate::cli::common::to_data(&out)?;
    if let Some(obj) = data.as_object_mut() {
        obj.insert("effect".into(), serde_json::json!(out.effect()));
    }
    Ok(Report {
        data,
        text,
        failure,
        ..Report::default()
    })
}
