//! `checkpoint`: the log's state `(n, chain_n)`, optionally signed; and holding the log to
//! an earlier checkpoint (`fsck --checkpoint`): nothing before it was changed, removed or
//! reordered.

use super::Failure;
use crate::envelope::pae;
use crate::keys::keyid;
use crate::store::log::Head;
use crate::store::Store;
use base64::Engine;
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};

/// What the signature covers: the DSSE pre-authentication encoding of the checkpoint's
/// canonical JSON `{"chain","n"}` under this type, so it can never pass for an envelope.
pub const CHECKPOINT_TYPE: &str = "application/vnd.elench.checkpoint+json";

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

/// What `checkpoint` gives: the checkpoint, and whether a file was written.
#[derive(Debug, Clone, Serialize)]
pub struct CheckpointOutput {
    #[serde(flatten)]
    pub checkpoint: Checkpoint,
    /// `created` when the checkpoint was written to a file, else `noop`.
    pub effect: &'static str,
}

/// The store's checkpoint now, signed with `key` when one is given.
pub fn checkpoint(store: &Store, key: Option<&SigningKey>) -> Result<Checkpoint, Failure> {
    let head = store.meta()?.head;
    let chain = hex::encode(head.chain);
    let signature = key.map(|sk| {
        let sig = sk.sign(&signed_bytes(head.records, &chain));
        CheckpointSignature {
            keyid: keyid(&sk.verifying_key()),
            sig: base64::engine::general_purpose::STANDARD.encode(sig.to_bytes()),
        }
    });
    Ok(Checkpoint {
        n: head.records,
        chain,
        signature,
    })
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
            "the checkpoint is not signed, but ‹key› asks for a signature by {expected}"
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

/// A checkpoint to hold the log to, and the key its signature must verify under (if any).
#[derive(Clone, Copy)]
pub struct CheckpointCheck<'a> {
    pub checkpoint: &'a Checkpoint,
    pub key: Option<&'a VerifyingKey>,
}

/// What holding the log to a checkpoint found: each problem as (code, message), and whether
/// the log still extends it.
pub struct Held {
    pub problems: Vec<(&'static str, String)>,
    pub extends: bool,
}

/// Holds the log to a checkpoint: its signature (when a key is given), and that the log's
/// first `n` records still give its chain value (`fsck --checkpoint`).
pub fn hold(store: &Store, cc: CheckpointCheck) -> Result<Held, Failure> {
    let c = cc.checkpoint;
    let mut problems = Vec::new();
    if let Some(key) = cc.key {
        if let Err(why) = verify_signature(c, key) {
            problems.push(("CHECKPOINT_SIGNATURE", why));
        }
    }
    // read_checkpoint admitted only the canonical spelling; compared as bytes.
    let want = chain_bytes(&c.chain).ok_or_else(|| Failure::Invalid {
        code: crate::error::Code::BadCheckpoint,
        message: format!(
            "the checkpoint's chain {:?} is not 64 lowercase hex digits",
            c.chain
        ),
    })?;
    let mut at = None;
    if c.n == 0 {
        at = Some(Head::EMPTY);
    } else {
        let (head, _) = store
            .log()
            .scan(Head::EMPTY, |r| Ok(r.pos.n + 1 < c.n))
            .map_err(|e| Failure::Corrupt(e.to_string()))?;
        if head.records == c.n {
            at = Some(head);
        }
    }
    let mut extends = true;
    match at {
        None => problems.push((
            "CHECKPOINT_MISMATCH",
            format!(
                "the checkpoint covers {} records, but the log no longer holds that many intact",
                c.n
            ),
        )),
        Some(h) if h.chain != want => problems.push((
            "CHECKPOINT_MISMATCH",
            format!(
                "after {} records the log's chain is {}, not the checkpoint's {}: something \
                 before the checkpoint was changed, removed or reordered",
                c.n,
                hex::encode(h.chain),
                c.chain
            ),
        )),
        Some(_) => {}
    }
    if problems
        .iter()
        .any(|(code, _)| *code == "CHECKPOINT_MISMATCH")
    {
        extends = false;
    }
    Ok(Held { problems, extends })
}
