//! `elench checkpoint [-o FILE] [--key KEY]`: the log's state `(n, chain_n)`, optionally
//! signed. Keep it somewhere else; `elench fsck --checkpoint FILE` later proves the log still
//! extends it: nothing before it was changed, removed or reordered.

use crate::cli::common::{open_store, refuse_inside_store};
use crate::cli::failure::Failure;
use crate::cli::files::write_atomically;
use crate::cli::globals::Globals;
use crate::cli::output::Report;
use crate::envelope::pae;
use crate::keys::{keyid, read_signing_key_pem};
use base64::Engine;
use ed25519_dalek::{Signature, Signer as _, VerifyingKey};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// What the signature covers: the DSSE pre-authentication encoding of the checkpoint's
/// canonical JSON `{"chain","n"}` under this type, so it can never pass for an envelope.
pub const CHECKPOINT_TYPE: &str = "application/vnd.elench.checkpoint+json";

#[derive(Debug, clap::Args)]
pub struct CheckpointArgs {
    /// Also write the checkpoint (the JSON of `data`) to FILE
    #[arg(short = 'o', long = "output", visible_alias = "out", value_name = "FILE",
          value_parser = crate::cli::files::output_path)]
    pub out: Option<String>,
    /// Sign the checkpoint with this private key (PEM PKCS#8 Ed25519)
    #[arg(long, value_name = "KEY.pem")]
    pub key: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointSignature {
    pub keyid: String,
    pub sig: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub n: u64,
    pub chain: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<CheckpointSignature>,
}

fn signed_bytes(n: u64, chain: &str) -> Vec<u8> {
    let body = format!("{{\"chain\":\"{chain}\",\"n\":{n}}}");
    pae(CHECKPOINT_TYPE, body.as_bytes())
}

pub fn run(a: CheckpointArgs, g: &Globals) -> Result<Report, Failure> {
    let store = open_store(g)?;
    if let Some(out) = &a.out {
        refuse_inside_store(std::path::Path::new(out), store.root())?;
    }
    let head = store.meta()?.head;
    let chain = hex::encode(head.chain);
    let signature = match &a.key {
        None => None,
        Some(path) => {
            let text = crate::cli::files::read_key_file(std::path::Path::new(path))?;
            let sk = read_signing_key_pem(&text)
                .map_err(|r| Failure::rejected(r, Some(path.clone())))?;
            let sig = sk.sign(&signed_bytes(head.records, &chain));
            Some(CheckpointSignature {
                keyid: keyid(&sk.verifying_key()),
                sig: base64::engine::general_purpose::STANDARD.encode(sig.to_bytes()),
            })
        }
    };
    let c = Checkpoint {
        n: head.records,
        chain,
        signature,
    };
    let mut data = serde_json::to_value(&c).map_err(|e| Failure::Internal(e.to_string()))?;
    if let Some(out) = &a.out {
        let mut bytes =
            serde_json::to_vec_pretty(&data).map_err(|e| Failure::Internal(e.to_string()))?;
        bytes.push(b'\n');
        write_atomically(std::path::Path::new(out), &bytes)?;
    }
    // The checkpoint file is the only thing this command may write.
    data["effect"] = json!(if a.out.is_some() { "created" } else { "noop" });
    let text = format!(
        "n {}\nchain {}{}\n",
        c.n,
        c.chain,
        c.signature
            .as_ref()
            .map(|s| format!("\nsigned by {}", s.keyid))
            .unwrap_or_default()
    );
    Ok(Report::new(json!(data), text))
}

/// Reads a checkpoint file written by `checkpoint -o`. The chain must be exactly what
/// `checkpoint` writes, 64 lowercase hex digits: the signature covers that text, and a
/// second spelling of the same value would be a second text to sign or to compare.
pub fn read_checkpoint(path: &str) -> Result<Checkpoint, Failure> {
    let bytes = std::fs::read(path).map_err(|e| Failure::io(path, e))?;
    let c: Checkpoint = serde_json::from_slice(&bytes).map_err(|e| Failure::Invalid {
        code: crate::error::Code::BadCheckpoint,
        message: format!("{path} is not a checkpoint (expected {{\"n\", \"chain\"}}): {e}"),
    })?;
    if chain_bytes(&c.chain).is_none() {
        return Err(Failure::Invalid {
            code: crate::error::Code::BadCheckpoint,
            message: format!(
                "{path}: chain must be 64 lowercase hex digits, as `elench checkpoint` writes it; \
                 got {:?}",
                c.chain
            ),
        });
    }
    Ok(c)
}

/// The chain value a checkpoint names, if it is spelled canonically (64 lowercase hex).
pub fn chain_bytes(chain: &str) -> Option<[u8; 32]> {
    if chain.len() != 64
        || !chain
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return None;
    }
    let mut out = [0u8; 32];
    hex::decode_to_slice(chain, &mut out).ok()?;
    Some(out)
}

/// Checks a checkpoint's signature against `key`, the public key the person running fsck
/// named. Never against a key from the store: whoever can write the store can add a key to
/// its trust set and sign a checkpoint of a rewritten log with it.
pub fn verify_signature(c: &Checkpoint, key: &VerifyingKey) -> Result<(), String> {
    let expected = keyid(key);
    let Some(s) = &c.signature else {
        return Err(format!(
            "the checkpoint is not signed, but --key asks for a signature by {expected}"
        ));
    };
    let sig_bytes = crate::envelope::dsse::decode_base64(&s.sig)
        .ok_or_else(|| "the checkpoint's signature is not base64".to_owned())?;
    let sig = Signature::from_slice(&sig_bytes)
        .map_err(|e| format!("the checkpoint's signature is not an Ed25519 signature: {e}"))?;
    if key
        .verify_strict(&signed_bytes(c.n, &c.chain), &sig)
        .is_ok()
    {
        return Ok(());
    }
    // The file's keyid is only a hint (it is not signed); it helps say what went wrong.
    Err(if s.keyid != expected {
        format!(
            "the checkpoint's signature does not verify under the key given ({expected}); the \
             file says it was signed by {}",
            s.keyid
        )
    } else {
        format!(
            "the checkpoint's signature does not verify under the key given ({expected}): the \
             file was changed after it was signed"
        )
    })
}
