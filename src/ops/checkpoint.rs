//! `checkpoint`: the log's state `(n, chain_n)`, optionally signed, and the same state as a
//! C2SP tlog-checkpoint (origin, size, RFC 6962 Merkle root over the records' payloads) signed
//! as a C2SP note; and holding the log to an earlier checkpoint of either form
//! (`fsck --checkpoint`): nothing before it was changed, removed or reordered.

use super::Failure;
use crate::envelope::pae;
use crate::keys::keyid;
use crate::store::log::Head;
use crate::store::Store;
use crate::witness::checkpoint::{encode_hash, Checkpoint as TlogCheckpoint};
use crate::witness::merkle::{Frontier, Hash};
use crate::witness::note::{self, KeyType, Note, Vkey};
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

/// The same state as a C2SP tlog-checkpoint: `text` is the note (`origin`, `size`, `root`,
/// then the signature line) with a key, or only the checkpoint's three lines without one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NoteForm {
    pub origin: String,
    pub size: u64,
    /// The RFC 6962 Merkle root (base64) whose leaves are the records' payloads, in order.
    pub root: String,
    pub text: String,
}

/// What `checkpoint` gives: the checkpoint, its note form, and whether a file was written.
#[derive(Debug, Clone, Serialize)]
pub struct CheckpointOutput {
    #[serde(flatten)]
    pub checkpoint: Checkpoint,
    pub note: NoteForm,
    /// `created` when the checkpoint was written to a file, else `noop`.
    pub effect: &'static str,
}

/// The origin a local checkpoint takes when none is given: `elench-log/` and the first 16 hex
/// digits of the chain value after the log's first record (what names this log wherever it
/// is copied), or `elench-log/empty` for an empty log.
pub fn default_origin(first_chain: Option<&[u8; 32]>) -> String {
    match first_chain {
        Some(c) => format!("elench-log/{}", &hex::encode(c)[..16]),
        None => "elench-log/empty".to_owned(),
    }
}

/// The Merkle root over the payloads of a prefix of the log, the head after it, and the chain
/// value of the log's first record (None for an empty prefix).
struct Prefix {
    root: Hash,
    head: Head,
    first: Option<[u8; 32]>,
}

/// The log's first `size` records as a [`Prefix`]; None when the log no longer holds `size`
/// intact records.
fn prefix_root(store: &Store, size: u64) -> Result<Option<Prefix>, Failure> {
    let mut f = Frontier::new();
    let mut first = None;
    if size == 0 {
        return Ok(Some(Prefix {
            root: f.root(),
            head: Head::EMPTY,
            first,
        }));
    }
    let (head, _) = store
        .log()
        .scan(Head::EMPTY, |r| {
            if r.pos.n == 0 {
                first = Some(r.chain);
            }
            f.push(&r.payload);
            Ok(r.pos.n + 1 < size)
        })
        .map_err(|e| Failure::Corrupt(e.to_string()))?;
    Ok((head.records == size && f.size() == size).then(|| Prefix {
        root: f.root(),
        head,
        first,
    }))
}

/// The store's checkpoint now, signed with `key` when one is given, in both forms; the
/// note's origin is `origin`, or [`default_origin`].
pub fn checkpoint(
    store: &Store,
    key: Option<&SigningKey>,
    origin: Option<&str>,
) -> Result<(Checkpoint, NoteForm), Failure> {
    let head = store.meta()?.head;
    let Prefix {
        root,
        head: at,
        first,
    } = prefix_root(store, head.records)?.ok_or_else(|| {
        Failure::Corrupt(format!(
            "the log holds fewer than the {} intact records its head names",
            head.records
        ))
    })?;
    if at.chain != head.chain {
        return Err(Failure::Corrupt(format!(
            "after {} records the log's chain is {}, not the head's {}",
            head.records,
            hex::encode(at.chain),
            hex::encode(head.chain)
        )));
    }
    let tlog = TlogCheckpoint {
        origin: origin.map_or_else(|| default_origin(first.as_ref()), str::to_owned),
        size: head.records,
        root,
    };
    let text = match key {
        None => tlog.body(),
        Some(sk) => tlog
            .sign(sk)
            .map_err(|e| Failure::Invalid {
                code: crate::error::Code::BadArguments,
                message: format!("origin {:?}: {e}", tlog.origin),
            })?
            .to_text(),
    };
    let form = NoteForm {
        origin: tlog.origin.clone(),
        size: tlog.size,
        root: encode_hash(&tlog.root),
        text,
    };
    Ok((json_checkpoint(head, key), form))
}

fn json_checkpoint(head: Head, key: Option<&SigningKey>) -> Checkpoint {
    let chain = hex::encode(head.chain);
    let signature = key.map(|sk| {
        let sig = sk.sign(&signed_bytes(head.records, &chain));
        CheckpointSignature {
            keyid: keyid(&sk.verifying_key()),
            sig: base64::engine::general_purpose::STANDARD.encode(sig.to_bytes()),
        }
    });
    Checkpoint {
        n: head.records,
        chain,
        signature,
    }
}

/// A checkpoint file as `fsck --checkpoint` reads it: the JSON form, or the C2SP form (a
/// signed note, or the checkpoint's three lines alone when it was written without a key).
#[derive(Debug, Clone)]
pub enum Kept {
    Json(Checkpoint),
    Note {
        checkpoint: TlogCheckpoint,
        note: Option<Note>,
    },
}

impl Kept {
    /// Who signed it, as the file says (not yet verified).
    pub fn signed_by(&self) -> Option<String> {
        match self {
            Kept::Json(c) => c.signature.as_ref().map(|s| s.keyid.clone()),
            Kept::Note { note: Some(n), .. } => Some(
                n.signatures
                    .iter()
                    .map(|s| format!("{}+{:08x}", s.name, s.key_id))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            Kept::Note { note: None, .. } => None,
        }
    }
}

/// Reads a checkpoint file written by `checkpoint -o`, in either form: JSON when its first
/// non-blank byte is `{`, else the C2SP note (or a bare, unsigned tlog-checkpoint).
pub fn read_checkpoint(path: &str) -> Result<Kept, Failure> {
    let bytes = std::fs::read(path).map_err(|e| Failure::io(path, e))?;
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
        return read_json_checkpoint(path, &bytes).map(Kept::Json);
    }
    let bad = |why: String| Failure::Invalid {
        code: crate::error::Code::BadCheckpoint,
        message: format!(
            "{path} is neither a checkpoint's JSON ({{\"n\", \"chain\"}}) nor a C2SP \
             checkpoint note: {why}"
        ),
    };
    match Note::parse(&bytes) {
        Ok(n) => {
            let checkpoint = TlogCheckpoint::parse(&n.text).map_err(|e| bad(e.to_string()))?;
            Ok(Kept::Note {
                checkpoint,
                note: Some(n),
            })
        }
        Err(note_err) => {
            // Without a signature line it may be the checkpoint's text alone (no `--key`).
            let text = std::str::from_utf8(&bytes).map_err(|_| bad(note_err.to_string()))?;
            let checkpoint = TlogCheckpoint::parse(text)
                .map_err(|e| bad(format!("as a note: {note_err}; as a bare checkpoint: {e}")))?;
            Ok(Kept::Note {
                checkpoint,
                note: None,
            })
        }
    }
}

/// The JSON form. The chain must be exactly what `checkpoint` writes, 64 lowercase hex
/// digits: the signature covers that text, and a second spelling of the same value would be
/// a second text to sign or to compare.
fn read_json_checkpoint(path: &str, bytes: &[u8]) -> Result<Checkpoint, Failure> {
    let c: Checkpoint = serde_json::from_slice(bytes).map_err(|e| Failure::Invalid {
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

/// Checks a checkpoint note's signature against `key`, the public key the person running
/// fsck named, as the note key named by the checkpoint's origin.
pub fn verify_note_signature(
    c: &TlogCheckpoint,
    note: Option<&Note>,
    key: &VerifyingKey,
) -> Result<(), String> {
    let vkey = Vkey::new(&c.origin, KeyType::Ed25519, *key).map_err(|e| {
        format!(
            "the checkpoint's origin {:?} cannot name a key: {e}",
            c.origin
        )
    })?;
    let Some(n) = note else {
        return Err(format!(
            "the checkpoint is not signed, but ‹key› asks for a signature by {}+{:08x}",
            vkey.name, vkey.key_id
        ));
    };
    note::verify(n, &[vkey])
        .map(|_| ())
        .map_err(|e| format!("the checkpoint note under the key given: {e}"))
}

/// A checkpoint to hold the log to, and the key its signature must verify under (if any).
#[derive(Clone, Copy)]
pub struct CheckpointCheck<'a> {
    pub checkpoint: &'a Kept,
    pub key: Option<&'a VerifyingKey>,
}

/// What holding the log to a checkpoint found: each problem as (code, message), and whether
/// the log still extends it.
pub struct Held {
    pub problems: Vec<(&'static str, String)>,
    pub extends: bool,
}

/// Holds the log to a checkpoint: its signature (when a key is given), and that the log's
/// first `n` records still give its chain value (the JSON form) or its Merkle root (the note
/// form) (`fsck --checkpoint`).
pub fn hold(store: &Store, cc: CheckpointCheck) -> Result<Held, Failure> {
    let mut problems = Vec::new();
    let mismatch = match cc.checkpoint {
        Kept::Json(c) => {
            if let Some(key) = cc.key {
                if let Err(why) = verify_signature(c, key) {
                    problems.push(("CHECKPOINT_SIGNATURE", why));
                }
            }
            hold_chain(store, c)?
        }
        Kept::Note { checkpoint, note } => {
            if let Some(key) = cc.key {
                if let Err(why) = verify_note_signature(checkpoint, note.as_ref(), key) {
                    problems.push(("CHECKPOINT_SIGNATURE", why));
                }
            }
            match prefix_root(store, checkpoint.size)? {
                None => Some(format!(
                    "the checkpoint covers {} records, but the log no longer holds that many \
                     intact",
                    checkpoint.size
                )),
                Some(p) if p.root != checkpoint.root => Some(format!(
                    "the Merkle root of the log's first {} records is {}, not the checkpoint's \
                     {}: something before the checkpoint was changed, removed or reordered",
                    checkpoint.size,
                    encode_hash(&p.root),
                    encode_hash(&checkpoint.root)
                )),
                Some(_) => None,
            }
        }
    };
    let extends = mismatch.is_none();
    if let Some(m) = mismatch {
        problems.push(("CHECKPOINT_MISMATCH", m));
    }
    Ok(Held { problems, extends })
}

/// The JSON form: whether the log's first `n` records still give its chain value.
fn hold_chain(store: &Store, c: &Checkpoint) -> Result<Option<String>, Failure> {
    // read_checkpoint admitted only the canonical spelling; compared as bytes.
    let want = chain_bytes(&c.chain).ok_or_else(|| Failure::Invalid {
        code: crate::error::Code::BadCheckpoint,
        message: format!(
            "the checkpoint's chain {:?} is not 64 lowercase hex digits",
            c.chain
        ),
    })?;
    let at = if c.n == 0 {
        Some(Head::EMPTY)
    } else {
        let (head, _) = store
            .log()
            .scan(Head::EMPTY, |r| Ok(r.pos.n + 1 < c.n))
            .map_err(|e| Failure::Corrupt(e.to_string()))?;
        (head.records == c.n).then_some(head)
    };
    Ok(match at {
        None => Some(format!(
            "the checkpoint covers {} records, but the log no longer holds that many intact",
            c.n
        )),
        Some(h) if h.chain != want => Some(format!(
            "after {} records the log's chain is {}, not the checkpoint's {}: something before \
             the checkpoint was changed, removed or reordered",
            c.n,
            hex::encode(h.chain),
            c.chain
        )),
        Some(_) => None,
    })
}
