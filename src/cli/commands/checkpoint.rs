//! `elench checkpoint [-o FILE [--form note|json]] [--key KEY] [--origin ORIGIN]`: the
//! log's state `(n, chain_n)` and the same state as a C2SP checkpoint note, optionally signed
//! ([`elench::ops::checkpoint`]). Keep it somewhere else; `elench fsck --checkpoint FILE` later
//! proves the log still extends it: nothing before it was changed, removed or reordered.

use crate::cli::common::refuse_inside_store;
use crate::cli::failure::Failure;
use crate::cli::files::write_atomically;
use crate::cli::globals::Globals;
use crate::cli::output::Report;
use elench::ops::checkpoint::{checkpoint, CheckpointOutput};
use std::path::Path;

#[derive(Debug, clap::Args)]
pub struct CheckpointArgs {
    /// Also write the checkpoint to FILE: the JSON of `data` without `note` and `effect`
    /// (`{n, chain}`, as before), or with `--form note` the C2SP note (`data.note.text`)
    #[arg(short = 'o', long = "output", visible_alias = "out", value_name = "FILE",
          value_parser = crate::cli::files::output_path)]
    pub out: Option<String>,
    /// Sign the checkpoint with this private key (PEM PKCS#8 Ed25519): the JSON form's
    /// signature and the note's signature line, under the note key named by the origin
    #[arg(long, value_name = "KEY.pem")]
    pub key: Option<String>,
    /// The C2SP checkpoint's origin, also the name of the note key that signs it (default:
    /// `elench-log/` and the first 16 hex digits of the chain value after the log's first
    /// record; `elench-log/empty` for an empty log)
    #[arg(long, value_name = "ORIGIN", value_parser = origin)]
    pub origin: Option<String>,
    /// What `-o` writes: `json` (the `{n, chain}` form) or `note` (the C2SP checkpoint note)
    #[arg(long, value_name = "FORM", default_value = "json", requires = "out",
          value_parser = ["note", "json"])]
    pub form: String,
    /// Instead, the checkpoint of remote NAME's log: the size and RFC 6962 Merkle root of its
    /// sequence of envelopes (docs/witness.md)
    #[arg(long, value_name = "NAME", conflicts_with_all = ["out", "key", "origin"],
          value_parser = crate::cli::values::remote_name)]
    pub remote: Option<crate::cli::values::RemoteName>,
}

/// An origin is a note key name: not empty, no space, no `+`, no control character.
fn origin(s: &str) -> Result<String, String> {
    if elench::witness::note::valid_key_name(s) {
        Ok(s.to_owned())
    } else {
        Err(
            "an origin names a note key: not empty, without spaces, `+` or control characters"
                .to_owned(),
        )
    }
}

pub fn run(a: CheckpointArgs, g: &Globals) -> Result<Report, Failure> {
    let store = g.context().open_store()?;
    if let Some(name) = &a.remote {
        let ctx = g.context();
        let c = elench::ops::sync::remote_checkpoint(
            &store,
            name,
            Some(std::time::Duration::from_secs(30)),
            std::time::Duration::from_secs(g.wait),
            ctx.reaper(),
        )?;
        let mut text = format!("remote {}\nsize {}\nroot {}\n", c.remote, c.size, c.root);
        if let Some(w) = &c.written {
            text.push_str(&format!(
                "written checkpoint: {} size {} root {}\n",
                w.origin, w.size, w.root
            ));
        }
        let data = crate::cli::common::to_data(&c)?;
        return Ok(Report::new(data, text));
    }
    if let Some(out) = &a.out {
        refuse_inside_store(Path::new(out), store.root())?;
    }
    let key = match &a.key {
        None => None,
        Some(path) => Some(crate::cli::files::read_signing_key_file(Path::new(path))?),
    };
    let (c, note) = checkpoint(&store, key.as_ref(), a.origin.as_deref())?;
    if let Some(out) = &a.out {
        let bytes = if a.form == "json" {
            // The JSON of `data` without `note` and `effect`, which `fsck --checkpoint` reads.
            let mut b =
                serde_json::to_vec_pretty(&c).map_err(|e| Failure::Internal(e.to_string()))?;
            b.push(b'\n');
            b
        } else {
            note.text.clone().into_bytes()
        };
        write_atomically(Path::new(out), &bytes)?;
    }
    let text = format!(
        "n {}\nchain {}{}\n\n{}",
        c.n,
        c.chain,
        c.signature
            .as_ref()
            .map(|s| format!("\nsigned by {}", s.keyid))
            .unwrap_or_default(),
        note.text
    );
    let out = CheckpointOutput {
        checkpoint: c,
        note,
        // The checkpoint file is the only thing this command may write.
        effect: if a.out.is_some() { "created" } else { "noop" },
    };
    let data = crate::cli::common::to_data(&out)?;
    Ok(Report::new(data, text))
}
