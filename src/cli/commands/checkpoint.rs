//! `elench checkpoint [-o FILE] [--key KEY]`: the log's state `(n, chain_n)`, optionally
//! signed ([`elench::ops::checkpoint`]). Keep it somewhere else; `elench fsck --checkpoint FILE`
//! later proves the log still extends it: nothing before it was changed, removed or reordered.

use crate::cli::common::refuse_inside_store;
use crate::cli::failure::Failure;
use crate::cli::files::write_atomically;
use crate::cli::globals::Globals;
use crate::cli::output::Report;
use elench::ops::checkpoint::{checkpoint, CheckpointOutput};
use std::path::Path;

#[derive(Debug, clap::Args)]
pub struct CheckpointArgs {
    /// Also write the checkpoint (the JSON of `data`) to FILE
    #[arg(short = 'o', long = "output", visible_alias = "out", value_name = "FILE",
          value_parser = crate::cli::files::output_path)]
    pub out: Option<String>,
    /// Sign the checkpoint with this private key (PEM PKCS#8 Ed25519)
    #[arg(long, value_name = "KEY.pem")]
    pub key: Option<String>,
    /// Instead, the checkpoint of remote NAME's log: the size and RFC 6962 Merkle root of its
    /// sequence of envelopes (docs/witness.md)
    #[arg(long, value_name = "NAME", conflicts_with_all = ["out", "key"],
          value_parser = crate::cli::values::remote_name)]
    pub remote: Option<crate::cli::values::RemoteName>,
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
    let c = checkpoint(&store, key.as_ref())?;
    if let Some(out) = &a.out {
        // The file is the JSON of `data` without `effect`, which `fsck --checkpoint` reads.
        let mut bytes =
            serde_json::to_vec_pretty(&c).map_err(|e| Failure::Internal(e.to_string()))?;
        bytes.push(b'\n');
        write_atomically(Path::new(out), &bytes)?;
    }
    let text = format!(
        "n {}\nchain {}{}\n",
        c.n,
        c.chain,
        c.signature
            .as_ref()
            .map(|s| format!("\nsigned by {}", s.keyid))
            .unwrap_or_default()
    );
    let out = CheckpointOutput {
        checkpoint: c,
        // The checkpoint file is the only thing this command may write.
        effect: if a.out.is_some() { "created" } else { "noop" },
    };
    let data = crate::cli::common::to_data(&out)?;
    Ok(Report::new(data, text))
}
