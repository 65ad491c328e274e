//! C2SP tlog checkpoints: the note text `ORIGIN\nSIZE\nBASE64(ROOT)\n` (elench writes and
//! reads no extension lines), signed by the log's key and cosigned by witnesses; and the
//! body of a tlog-witness `add-checkpoint` request.

use super::merkle::{Hash, MAX_PROOF_HASHES};
use super::note::{self, Note, NoteError, NoteSignature};
use base64::Engine;
use ed25519_dalek::SigningKey;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// A log's head: its origin, how many leaves, and the Merkle root over them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub origin: String,
    pub size: u64,
    pub root: Hash,
}

/// Why a checkpoint's text was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("checkpoint: {0}")]
pub struct CheckpointError(pub String);

fn err(msg: impl Into<String>) -> CheckpointError {
    CheckpointError(msg.into())
}

/// Reads a decimal number as the C2SP texts write sizes: ASCII digits, no sign, no leading
/// zero (but `0` itself).
pub fn parse_decimal(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0'))
    {
        return None;
    }
    s.parse().ok()
}

/// Reads a hash written in standard base64; only the one spelling `encode` gives.
pub fn parse_hash(s: &str) -> Option<Hash> {
    let bytes = B64.decode(s).ok()?;
    let h: Hash = bytes.try_into().ok()?;
    (B64.encode(h) == s).then_some(h)
}

pub fn encode_hash(h: &Hash) -> String {
    B64.encode(h)
}

impl Checkpoint {
    /// The note text: origin, size and root, each on its line.
    pub fn body(&self) -> String {
        format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            B64.encode(self.root)
        )
    }

    /// Reads a checkpoint's note text: exactly three lines, each ending in a newline.
    pub fn parse(text: &str) -> Result<Checkpoint, CheckpointError> {
        let Some(body) = text.strip_suffix('\n') else {
            return Err(err("the text does not end in a newline"));
        };
        let lines: Vec<&str> = body.split('\n').collect();
        if lines.len() < 3 {
            return Err(err(format!(
                "{} lines; a checkpoint has origin, size and root",
                lines.len()
            )));
        }
        if lines.len() > 3 {
            return Err(err(format!(
                "{} extension line(s) after the root; elench reads checkpoints without them",
                lines.len() - 3
            )));
        }
        let origin = lines[0];
        if origin.is_empty() || origin.chars().any(char::is_control) {
            return Err(err("the origin line is empty or holds a control character"));
        }
        let size = parse_decimal(lines[1]).ok_or_else(|| {
            err(format!(
                "the size line {:?} is not a decimal number without leading zeros",
                lines[1]
            ))
        })?;
        let root = parse_hash(lines[2]).ok_or_else(|| {
            err(format!(
                "the root line {:?} is not the base64 of 32 bytes",
                lines[2]
            ))
        })?;
        Ok(Checkpoint {
            origin: origin.to_owned(),
            size,
            root,
        })
    }

    /// Signs the checkpoint with the log's key; the note's key name is the origin.
    pub fn sign(&self, key: &SigningKey) -> Result<Note, NoteError> {
        let text = self.body();
        let sig = note::sign(&text, &self.origin, key)?;
        Ok(Note {
            text,
            signatures: vec![sig],
        })
    }
}

/// The body of `POST <prefix>/add-checkpoint`: `old N`, one base64 line per proof hash, a
/// blank line, then the signed checkpoint.
pub fn add_checkpoint_body(old: u64, proof: &[Hash], signed: &Note) -> Result<String, String> {
    if proof.len() > MAX_PROOF_HASHES {
        return Err(format!(
            "a consistency proof of {} hashes; a witness takes at most {MAX_PROOF_HASHES}",
            proof.len()
        ));
    }
    let mut out = format!("old {old}\n");
    for h in proof {
        out.push_str(&B64.encode(h));
        out.push('\n');
    }
    out.push('\n');
    out.push_str(&signed.to_text());
    Ok(out)
}

/// Adds to `note` the signature lines it does not already carry (a witness's cosignatures).
pub fn merge_signatures(note: &mut Note, extra: &[NoteSignature]) {
    for s in extra {
        if !note.signatures.contains(s) {
            note.signatures.push(s.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::witness::note::NoteSignature;

    // tlog-checkpoint.md, the example.
    const SOFA: &str = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n\n\u{2014} example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n";

    #[test]
    fn the_checkpoint_example_reads_and_writes_back() {
        let note = Note::parse(SOFA.as_bytes()).unwrap();
        let cp = Checkpoint::parse(&note.text).unwrap();
        assert_eq!(cp.origin, "example.com/behind-the-sofa");
        assert_eq!(cp.size, 20852163);
        assert_eq!(
            encode_hash(&cp.root),
            "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I="
        );
        assert_eq!(cp.body(), note.text);
        assert_eq!(note.to_text(), SOFA);
        // The log's key name is the origin; its key ID the four bytes the line starts with.
        assert_eq!(note.signatures[0].name, cp.origin);
        assert_eq!(note.signatures[0].key_id, 0x033de0ae);
    }

    #[test]
    fn the_cosignature_example_is_a_checkpoint_with_two_signatures() {
        // tlog-cosignature.md, the opening example.
        let text = format!(
            "{SOFA}\u{2014} witness.example.com/w1 jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA==\n"
        );
        let note = Note::parse(text.as_bytes()).unwrap();
        assert_eq!(note.signatures.len(), 2);
        assert_eq!(note.signatures[1].name, "witness.example.com/w1");
        assert_eq!(Checkpoint::parse(&note.text).unwrap().size, 20852163);
    }

    #[test]
    fn the_add_checkpoint_example_body_is_written_byte_for_byte() {
        // tlog-witness.md, "add-checkpoint", the example request body.
        let want = "old 20852014\n\
PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=\n\
jrJZDmY8Y7SyJE0MWLpLozkIVMSMZcD5kvuKxPC3swk=\n\
5+pKlUdi2LeF/BcMHBn+Ku6yhPGNCswZZD1X/6QgPd8=\n\
/6WVhPs2CwSsb5rYBH5cjHV/wSmA79abXAwhXw3Kj/0=\n\
\n\
example.com/behind-the-sofa\n\
20852163\n\
CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n\
\n\
\u{2014} example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n\
\u{2014} example.com/behind-the-sofa opLqBQsREYCgu6xQkYQwJr9fo45a62DN9EdmHXnZdXNqlcVGlCum2Wks+49/V6267UEjw6QUXTS5Rovnzv++qbSzm9Q=\n";
        let proof: Vec<Hash> = [
            "PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=",
            "jrJZDmY8Y7SyJE0MWLpLozkIVMSMZcD5kvuKxPC3swk=",
            "5+pKlUdi2LeF/BcMHBn+Ku6yhPGNCswZZD1X/6QgPd8=",
            "/6WVhPs2CwSsb5rYBH5cjHV/wSmA79abXAwhXw3Kj/0=",
        ]
        .iter()
        .map(|s| parse_hash(s).unwrap())
        .collect();
        let mut note = Note::parse(SOFA.as_bytes()).unwrap();
        merge_signatures(
            &mut note,
            &NoteSignature::parse_lines("\u{2014} example.com/behind-the-sofa opLqBQsREYCgu6xQkYQwJr9fo45a62DN9EdmHXnZdXNqlcVGlCum2Wks+49/V6267UEjw6QUXTS5Rovnzv++qbSzm9Q=\n").unwrap(),
        );
        assert_eq!(add_checkpoint_body(20852014, &proof, &note).unwrap(), want);
        assert!(add_checkpoint_body(0, &[[0; 32]; 64], &note).is_err());
    }

    #[test]
    fn the_add_checkpoint_example_response_reads_as_three_signatures() {
        // tlog-witness.md, "add-checkpoint", the example response body.
        let body = "\u{2014} witness.example/w1 CMp+6LWBU0anHGH5aNDTJkH/gj79sG+T6+iP2ThYN5krrDJbR1HDnucjL39QsZTSvVjyQLrdk3DXDqI5G2HgLatVs0pWh6Up69HVOw==\n\
\u{2014} witness.example/w1 I7rEps0pvK2UqkS2gSpVUDhrhVtQV9lgF6pRrWAvjJHjyWpW7VcE3SiOlVlbQNt64vWhO+DlkL0+UfzuOBMh9ChdMkP1vi/lCAsmlw==\n\
\u{2014} witness.example/w2 AWui8Sk55XjYLOijihBjhqEH6nS1ndDymE0a+6idX7pLcnoB+dhnz0854aLZgrrKbYKA7nC3HNJhm/kWl7oJlqU3rXXvpysAdyP3wQ==\n";
        let sigs = NoteSignature::parse_lines(body).unwrap();
        assert_eq!(sigs.len(), 3);
        assert_eq!(sigs[2].name, "witness.example/w2");
        assert!(sigs.iter().all(|s| s.signature.len() == 72));
        let back: String = sigs.iter().map(NoteSignature::line).collect();
        assert_eq!(back, body);
    }

    #[test]
    fn checkpoint_text_is_read_strictly() {
        let root = "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=";
        assert!(Checkpoint::parse(&format!("o\n0\n{root}\n")).is_ok());
        for bad in [
            format!("o\n01\n{root}\n"),
            format!("o\n-1\n{root}\n"),
            format!("o\n+1\n{root}\n"),
            format!("o\n1\n{root}"),
            format!("o\n1\n{root}\next\n"),
            format!("\n1\n{root}\n"),
            "o\n1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I\n".to_owned(),
            "o\n1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2\n".to_owned(),
            format!("o\n18446744073709551616\n{root}\n"),
            "o\n1\n".to_owned(),
        ] {
            assert!(Checkpoint::parse(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_signed_checkpoint_verifies_under_the_origin_s_key() {
        let k = crate::witness::note::tests::key(9);
        let cp = Checkpoint {
            origin: "github.com/acme/widgets".into(),
            size: 5,
            root: [7; 32],
        };
        let note = cp.sign(&k).unwrap();
        let v = note::Vkey::new(&cp.origin, note::KeyType::Ed25519, k.verifying_key()).unwrap();
        assert_eq!(note::verify(&note, &[v]).unwrap().len(), 1);
        let again = Note::parse(note.to_text().as_bytes()).unwrap();
        assert_eq!(Checkpoint::parse(&again.text).unwrap(), cp);
    }
}
