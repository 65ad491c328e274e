//! C2SP signed notes: a text ending in a newline, a blank line, and one or more signature
//! lines `— NAME base64(key ID || signature)`; verifier keys (`vkey`s,
//! `NAME+hex(key ID)+base64(type || public key)`); Ed25519 note signatures (type 0x01) and
//! timestamped Ed25519 checkpoint cosignatures (`cosignature/v1`, type 0x04).
//!
//! Parsing never panics and bounds what it reads: a note of at most [`MAX_NOTE_BYTES`] with
//! at most [`MAX_SIGNATURES`] signature lines. Signatures are checked with Ed25519's strict
//! verification, and a key that matches a signature's name and key ID but does not verify it
//! makes the whole note fail, as the text asks.

use base64::Engine;
use ed25519_dalek::{Signature as EdSignature, Signer as _, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};
use std::fmt;

/// The most bytes a note may have.
pub const MAX_NOTE_BYTES: usize = 256 * 1024;
/// The most signature lines a note may carry (the text asks for at least 16).
pub const MAX_SIGNATURES: usize = 64;

/// The em dash (U+2014) and space that open a signature line.
const SIG_PREFIX: &str = "\u{2014} ";

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// Signature type byte of an Ed25519 note signature.
pub const TYPE_ED25519: u8 = 0x01;
/// Signature type byte of a timestamped Ed25519 checkpoint cosignature.
pub const TYPE_COSIGNATURE: u8 = 0x04;

/// Why a note, a signature line or a vkey was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoteError {
    #[error("{0}")]
    Malformed(String),
    #[error("the signature by {name} (key ID {key_id:08x}) does not verify")]
    BadSignature { name: String, key_id: u32 },
    #[error("no signature by a known key ({known})")]
    NoKnownSignature { known: String },
}

fn malformed(msg: impl Into<String>) -> NoteError {
    NoteError::Malformed(msg.into())
}

/// Whether `name` may be a key name: non-empty, no Unicode space, no `+`, no control
/// character.
pub fn valid_key_name(name: &str) -> bool {
    !name.is_empty()
        && !name
            .chars()
            .any(|c| c.is_whitespace() || c == '+' || c.is_control())
}

/// A key ID: the first four bytes, big-endian, of SHA-256(name || 0x0A || type || key).
pub fn key_id(name: &str, sig_type: u8, public_key: &[u8]) -> u32 {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([b'\n', sig_type]);
    h.update(public_key);
    let d = h.finalize();
    u32::from_be_bytes([d[0], d[1], d[2], d[3]])
}

/// One signature line: the key's name, its key ID and the signature bytes after the ID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteSignature {
    pub name: String,
    pub key_id: u32,
    pub signature: Vec<u8>,
}

impl NoteSignature {
    /// Reads one line (without its newline): `— NAME base64`.
    pub fn parse_line(line: &str) -> Result<NoteSignature, NoteError> {
        let rest = line.strip_prefix(SIG_PREFIX).ok_or_else(|| {
            malformed(format!(
                "signature line {line:?} does not start with \"— \""
            ))
        })?;
        let (name, b64) = rest.split_once(' ').ok_or_else(|| {
            malformed(format!(
                "signature line {line:?} has no space after the key name"
            ))
        })?;
        if !valid_key_name(name) {
            return Err(malformed(format!(
                "signature line {line:?}: key name {name:?} is empty or holds a space or '+'"
            )));
        }
        let bytes = B64
            .decode(b64)
            .map_err(|e| malformed(format!("signature line of {name}: not base64: {e}")))?;
        if bytes.len() < 5 {
            return Err(malformed(format!(
                "signature line of {name}: {} bytes, fewer than a key ID and a signature",
                bytes.len()
            )));
        }
        Ok(NoteSignature {
            name: name.to_owned(),
            key_id: u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
            signature: bytes[4..].to_vec(),
        })
    }

    /// Reads signature lines, each ending in a newline (a witness's answer, a note's tail).
    pub fn parse_lines(text: &str) -> Result<Vec<NoteSignature>, NoteError> {
        if text.is_empty() {
            return Err(malformed("no signature lines"));
        }
        let Some(body) = text.strip_suffix('\n') else {
            return Err(malformed("the signature lines do not end in a newline"));
        };
        let sigs = body
            .split('\n')
            .map(NoteSignature::parse_line)
            .collect::<Result<Vec<_>, _>>()?;
        if sigs.len() > MAX_SIGNATURES {
            return Err(malformed(format!(
                "{} signature lines, more than {MAX_SIGNATURES}",
                sigs.len()
            )));
        }
        Ok(sigs)
    }

    /// The line as a note carries it, with its newline.
    pub fn line(&self) -> String {
        let mut bytes = self.key_id.to_be_bytes().to_vec();
        bytes.extend_from_slice(&self.signature);
        format!("{SIG_PREFIX}{} {}\n", self.name, B64.encode(bytes))
    }
}

/// A signed note: its text (ending in a newline) and its signatures, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub text: String,
    pub signatures: Vec<NoteSignature>,
}

impl Note {
    /// Reads a note. The text is everything before the last blank line.
    pub fn parse(bytes: &[u8]) -> Result<Note, NoteError> {
        if bytes.len() > MAX_NOTE_BYTES {
            return Err(malformed(format!(
                "the note has {} bytes, more than {MAX_NOTE_BYTES}",
                bytes.len()
            )));
        }
        let s = std::str::from_utf8(bytes)
            .map_err(|e| malformed(format!("the note is not UTF-8: {e}")))?;
        if let Some(c) = s.chars().find(|&c| c != '\n' && (c as u32) < 0x20) {
            return Err(malformed(format!(
                "the note holds the control character U+{:04X}",
                c as u32
            )));
        }
        let Some(at) = s.rfind("\n\n") else {
            return Err(malformed(
                "the note has no blank line before its signatures",
            ));
        };
        let (text, sigs) = (&s[..=at], &s[at + 2..]);
        Ok(Note {
            text: text.to_owned(),
            signatures: NoteSignature::parse_lines(sigs)?,
        })
    }

    /// The note as text: its text, a blank line, its signature lines.
    pub fn to_text(&self) -> String {
        let mut out = self.text.clone();
        out.push('\n');
        for s in &self.signatures {
            out.push_str(&s.line());
        }
        out
    }
}

/// What kind of signatures a verifier key checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    /// An Ed25519 signature over the note text (type 0x01): a log's key.
    Ed25519,
    /// A timestamped `cosignature/v1` Ed25519 signature (type 0x04): a witness's key.
    Cosignature,
}

impl KeyType {
    pub fn byte(self) -> u8 {
        match self {
            KeyType::Ed25519 => TYPE_ED25519,
            KeyType::Cosignature => TYPE_COSIGNATURE,
        }
    }
}

/// A verifier key: name, key ID, type and Ed25519 public key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vkey {
    pub name: String,
    pub key_id: u32,
    pub kind: KeyType,
    pub key: VerifyingKey,
}

impl Vkey {
    /// The verifier key of `key` under `name`, its key ID computed as the text gives it.
    pub fn new(name: &str, kind: KeyType, key: VerifyingKey) -> Result<Vkey, NoteError> {
        if !valid_key_name(name) {
            return Err(malformed(format!(
                "key name {name:?} is empty or holds a space or '+'"
            )));
        }
        if key.is_weak() {
            return Err(malformed(format!(
                "the key of {name} is weak (a small-order point)"
            )));
        }
        Ok(Vkey {
            name: name.to_owned(),
            key_id: key_id(name, kind.byte(), key.as_bytes()),
            kind,
            key,
        })
    }

    /// Reads `NAME+hex(key ID)+base64(type || key)`. The key ID must be the one the key
    /// and name give; only Ed25519 (0x01) and Ed25519 cosignature (0x04) keys are read.
    pub fn parse(s: &str) -> Result<Vkey, NoteError> {
        // The name holds no '+' and the key ID none; the base64 key may.
        let mut parts = s.splitn(3, '+');
        let (Some(name), Some(id), Some(b64)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(malformed(format!(
                "vkey {s:?} is not NAME+KEYID+KEY (three parts joined by '+')"
            )));
        };
        if id.len() != 8 || !id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(malformed(format!(
                "vkey of {name}: key ID {id:?} is not 8 lowercase hex digits"
            )));
        }
        let id = u32::from_str_radix(id, 16)
            .map_err(|e| malformed(format!("vkey of {name}: key ID: {e}")))?;
        let raw = B64
            .decode(b64)
            .map_err(|e| malformed(format!("vkey of {name}: key is not base64: {e}")))?;
        let kind = match raw.first() {
            Some(&TYPE_ED25519) => KeyType::Ed25519,
            Some(&TYPE_COSIGNATURE) => KeyType::Cosignature,
            Some(t) => {
                return Err(malformed(format!(
                    "vkey of {name}: signature type 0x{t:02x} is not supported (0x01 Ed25519, \
                     0x04 Ed25519 cosignature)"
                )))
            }
            None => return Err(malformed(format!("vkey of {name}: the key is empty"))),
        };
        let key: [u8; 32] = raw[1..].try_into().map_err(|_| {
            malformed(format!(
                "vkey of {name}: an Ed25519 key has 32 bytes, this one {}",
                raw.len() - 1
            ))
        })?;
        let key = VerifyingKey::from_bytes(&key)
            .map_err(|e| malformed(format!("vkey of {name}: not an Ed25519 key: {e}")))?;
        let v = Vkey::new(name, kind, key)?;
        if v.key_id != id {
            return Err(malformed(format!(
                "vkey of {name}: key ID {id:08x} is not the key's ({:08x})",
                v.key_id
            )));
        }
        Ok(v)
    }

    /// Whether a signature line names this key (same name and key ID).
    pub fn names(&self, sig: &NoteSignature) -> bool {
        sig.name == self.name && sig.key_id == self.key_id
    }

    /// Checks one signature of this key over a note's text. For a cosignature key, returns
    /// the signature's timestamp.
    pub fn verify(&self, text: &str, sig: &NoteSignature) -> Result<Option<u64>, NoteError> {
        let bad = || NoteError::BadSignature {
            name: sig.name.clone(),
            key_id: sig.key_id,
        };
        if !self.names(sig) {
            return Err(bad());
        }
        match self.kind {
            KeyType::Ed25519 => {
                let s = EdSignature::from_slice(&sig.signature).map_err(|_| bad())?;
                self.key
                    .verify_strict(text.as_bytes(), &s)
                    .map_err(|_| bad())?;
                Ok(None)
            }
            KeyType::Cosignature => {
                if sig.signature.len() != 72 {
                    return Err(bad());
                }
                let mut t = [0u8; 8];
                t.copy_from_slice(&sig.signature[..8]);
                let time = u64::from_be_bytes(t);
                if time > i64::MAX as u64 {
                    return Err(bad());
                }
                let s = EdSignature::from_slice(&sig.signature[8..]).map_err(|_| bad())?;
                self.key
                    .verify_strict(&cosignature_message(time, text), &s)
                    .map_err(|_| bad())?;
                Ok(Some(time))
            }
        }
    }
}

impl fmt::Display for Vkey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut raw = vec![self.kind.byte()];
        raw.extend_from_slice(self.key.as_bytes());
        write!(f, "{}+{:08x}+{}", self.name, self.key_id, B64.encode(raw))
    }
}

/// What a cosignature signs: `cosignature/v1`, `time T`, then the checkpoint's note text.
pub fn cosignature_message(time: u64, text: &str) -> Vec<u8> {
    format!("cosignature/v1\ntime {time}\n{text}").into_bytes()
}

/// Signs a note text as `name` with an Ed25519 note signature (type 0x01).
pub fn sign(text: &str, name: &str, key: &SigningKey) -> Result<NoteSignature, NoteError> {
    let v = Vkey::new(name, KeyType::Ed25519, key.verifying_key())?;
    Ok(NoteSignature {
        name: v.name,
        key_id: v.key_id,
        signature: key.sign(text.as_bytes()).to_bytes().to_vec(),
    })
}

/// A signature that verified: the key's name, and a cosignature's timestamp.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub name: String,
    pub key_id: u32,
    pub time: Option<u64>,
}

/// Verifies a note against the keys the caller knows: a signature naming no known key is
/// ignored; one naming a known key must verify, or the whole note fails; at least one must.
/// Returns the signatures that verified, in the note's order.
pub fn verify(note: &Note, keys: &[Vkey]) -> Result<Vec<Verified>, NoteError> {
    let mut out = Vec::new();
    for sig in &note.signatures {
        if let Some(k) = keys.iter().find(|k| k.names(sig)) {
            let time = k.verify(&note.text, sig)?;
            if !out
                .iter()
                .any(|v: &Verified| v.name == sig.name && v.key_id == sig.key_id)
            {
                out.push(Verified {
                    name: sig.name.clone(),
                    key_id: sig.key_id,
                    time,
                });
            }
        }
    }
    if out.is_empty() {
        return Err(NoteError::NoKnownSignature {
            known: keys
                .iter()
                .map(|k| format!("{}+{:08x}", k.name, k.key_id))
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A cosignature, as a witness makes it (tests only: elench ships no witness).
    pub(crate) fn cosign(text: &str, name: &str, key: &SigningKey, time: u64) -> NoteSignature {
        let mut signature = time.to_be_bytes().to_vec();
        signature.extend_from_slice(&key.sign(&cosignature_message(time, text)).to_bytes());
        NoteSignature {
            name: name.to_owned(),
            key_id: key_id(name, TYPE_COSIGNATURE, key.verifying_key().as_bytes()),
            signature,
        }
    }

    pub(crate) fn key(seed: u8) -> SigningKey {
        SigningKey::from_bytes(&[seed; 32])
    }

    // signed-note.md, "Verifier keys" / "Example": this vkey verifies this note.
    const EXAMPLE_VKEY: &str =
        "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k";
    const EXAMPLE_NOTE: &str = "This is an example message.\n\n\u{2014} example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n";

    #[test]
    fn the_signed_note_example_verifies_under_its_vkey() {
        let v = Vkey::parse(EXAMPLE_VKEY).unwrap();
        assert_eq!(v.name, "example.com/foo");
        assert_eq!(v.key_id, 0x530d903a);
        assert_eq!(v.kind, KeyType::Ed25519);
        // The key ID is SHA-256(name || 0x0A || 0x01 || key)[:4], recomputed here.
        assert_eq!(
            key_id("example.com/foo", 0x01, v.key.as_bytes()),
            0x530d903a
        );
        assert_eq!(v.to_string(), EXAMPLE_VKEY);
        let note = Note::parse(EXAMPLE_NOTE.as_bytes()).unwrap();
        assert_eq!(note.text, "This is an example message.\n");
        assert_eq!(note.to_text(), EXAMPLE_NOTE);
        let got = verify(&note, std::slice::from_ref(&v)).unwrap();
        assert_eq!(
            got,
            vec![Verified {
                name: "example.com/foo".into(),
                key_id: 0x530d903a,
                time: None
            }]
        );
        // One changed byte of the text fails the note.
        let mut bad = note.clone();
        bad.text = "This is an example message!\n".into();
        assert!(matches!(
            verify(&bad, &[v]),
            Err(NoteError::BadSignature { .. })
        ));
    }

    #[test]
    fn the_poem_note_splits_at_its_last_blank_line() {
        // signed-note.md, the opening example: a text holding a blank line of its own.
        let poem = "Ognuno sta solo sul cuor della terra\ntrafitto da un raggio di sole:\n\ned \u{e8} subito sera.\n\n\u{2014} quasimodo.example/salvatore NnugSzTjtVAewIS+Z/iJhUPeFDkO/5QQ2i5ddnGITLlC+EhfLW9oJKONrMouFSQU0xMcXxj99ihAQwaqP3ZekRwNtIc=\n";
        let note = Note::parse(poem.as_bytes()).unwrap();
        assert_eq!(
            note.text,
            "Ognuno sta solo sul cuor della terra\ntrafitto da un raggio di sole:\n\ned \u{e8} subito sera.\n"
        );
        assert_eq!(note.signatures.len(), 1);
        assert_eq!(note.signatures[0].name, "quasimodo.example/salvatore");
        assert_eq!(note.signatures[0].key_id, 0x367ba04b);
        assert_eq!(note.signatures[0].signature.len(), 64);
        assert_eq!(note.to_text(), poem);
        // Its key is not given: a note with no known key's signature is refused.
        let other = Vkey::new(
            "quasimodo.example/salvatore",
            KeyType::Ed25519,
            key(1).verifying_key(),
        )
        .unwrap();
        assert!(matches!(
            verify(&note, &[other]),
            Err(NoteError::NoKnownSignature { .. })
        ));
    }

    #[test]
    fn the_cosignature_example_carries_its_timestamp_and_key_id() {
        // tlog-cosignature.md, the example checkpoint's witness line: key ID, then the 8-byte
        // big-endian timestamp 1679315147 its "signed message" example shows.
        let line = "\u{2014} witness.example.com/w1 jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA==";
        let s = NoteSignature::parse_line(line).unwrap();
        assert_eq!(s.name, "witness.example.com/w1");
        assert_eq!(s.key_id, 0x8d66cf3f);
        assert_eq!(s.signature.len(), 72);
        assert_eq!(
            u64::from_be_bytes(s.signature[..8].try_into().unwrap()),
            1679315147
        );
        // tlog-cosignature.md, "Ed25519 signed message": the exact bytes signed.
        let body =
            "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n";
        assert_eq!(
            cosignature_message(1679315147, body),
            b"cosignature/v1\ntime 1679315147\nexample.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
        );
    }

    #[test]
    fn cosignatures_verify_with_type_4_key_ids_and_fail_when_anything_changes() {
        let body = "example.com/log\n3\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n";
        let w = key(7);
        let sig = cosign(body, "witness.example/w1", &w, 1_700_000_000);
        let v = Vkey::new(
            "witness.example/w1",
            KeyType::Cosignature,
            w.verifying_key(),
        )
        .unwrap();
        assert_eq!(
            v.key_id,
            key_id("witness.example/w1", 0x04, w.verifying_key().as_bytes())
        );
        assert_ne!(
            v.key_id,
            key_id("witness.example/w1", 0x01, w.verifying_key().as_bytes())
        );
        assert_eq!(v.verify(body, &sig), Ok(Some(1_700_000_000)));
        assert_eq!(Vkey::parse(&v.to_string()).unwrap(), v);
        // Another time in the 8 bytes: the signature no longer covers the message.
        let mut later = sig.clone();
        later.signature[7] ^= 1;
        assert!(v.verify(body, &later).is_err());
        // A timestamp beyond 2^63 - 1 is refused.
        let mut huge = sig.clone();
        huge.signature[0] = 0x80;
        assert!(v.verify(body, &huge).is_err());
        // An Ed25519 note key of the same key does not verify a cosignature (other key ID).
        let plain = Vkey::new("witness.example/w1", KeyType::Ed25519, w.verifying_key()).unwrap();
        assert!(!plain.names(&sig));
        assert!(v
            .verify(
                "example.com/log\n4\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",
                &sig
            )
            .is_err());
    }

    #[test]
    fn a_known_key_whose_signature_fails_fails_the_note_even_beside_a_good_one() {
        let k = key(3);
        let text = "hello\n";
        let good = sign(text, "a.example/k", &k).unwrap();
        let mut bad = good.clone();
        bad.signature[0] ^= 1;
        let v = Vkey::new("a.example/k", KeyType::Ed25519, k.verifying_key()).unwrap();
        let note = Note {
            text: text.into(),
            signatures: vec![good.clone(), bad],
        };
        assert!(matches!(
            verify(&note, std::slice::from_ref(&v)),
            Err(NoteError::BadSignature { .. })
        ));
        // A signature under another name with the same ID, or the same name and another ID,
        // is not the known key's: ignored.
        let mut other_name = good.clone();
        other_name.name = "b.example/k".into();
        let mut other_id = good.clone();
        other_id.key_id ^= 1;
        let note = Note {
            text: text.into(),
            signatures: vec![other_name, other_id, good],
        };
        assert_eq!(verify(&note, &[v]).unwrap().len(), 1);
    }

    #[test]
    fn malformed_notes_and_vkeys_are_refused_by_name() {
        for bad in [
            &b"no blank line\n\xe2\x80\x94 a x\n"[..],
            b"text\n\n",
            b"text\n\nsig line without dash\n",
            b"text\n\n\xe2\x80\x94 a AAAAAA==\n",
            b"text\n\n\xe2\x80\x94 a+b AAAAAAAA\n",
            b"text\n\n\xe2\x80\x94 a AAAAAAAA",
            b"te\rxt\n\n\xe2\x80\x94 a AAAAAAAA\n",
            b"\xff\n\n\xe2\x80\x94 a AAAAAAAA\n",
        ] {
            assert!(
                Note::parse(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        let big = vec![b'a'; MAX_NOTE_BYTES + 1];
        assert!(Note::parse(&big).is_err());
        let many = format!(
            "t\n\n{}",
            "\u{2014} a AAAAAAAA\n".repeat(MAX_SIGNATURES + 1)
        );
        assert!(Note::parse(many.as_bytes()).is_err());
        for bad in [
            "example.com/foo+530d903b+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k",
            "example.com/foo+530D903A+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k",
            "example.com/foo+530d903a",
            "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k+x",
            "example.com/foo+530d903a+AkyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k=",
            "example.com/foo+530d903a+",
        ] {
            assert!(Vkey::parse(bad).is_err(), "{bad}");
        }
    }
}
