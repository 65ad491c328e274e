//! Witnessed checkpoints, in the C2SP formats byte for byte (docs/witness.md):
//!
//! - `merkle`: RFC 6962 Merkle trees, kept incrementally, and RFC 9162 consistency proofs;
//! - `note`: signed notes, verifier keys, Ed25519 signatures and `cosignature/v1`;
//! - `checkpoint`: tlog-checkpoint texts and the body of a tlog-witness request;
//! - `policy`: tlog-policy files and their quorum;
//! - `client`: the HTTP exchange with a tlog-witness witness.
//!
//! Everything but `client` is pure: no file, no network, no clock.

pub mod checkpoint;
pub mod client;
pub mod merkle;
pub mod note;
pub mod policy;

use checkpoint::Checkpoint;
use note::{Note, NoteError, Vkey};
use policy::Policy;

/// A checkpoint whose log signature verified, and which of a policy's witnesses cosigned it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Witnessed {
    pub checkpoint: Checkpoint,
    /// Indexes into the policy's witnesses whose cosignature verified, with its timestamp.
    pub cosigned: Vec<(usize, u64)>,
    /// Whether those meet the policy's quorum.
    pub quorum: bool,
}

/// Why a signed checkpoint was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WitnessedError {
    #[error("{0}")]
    Note(#[from] NoteError),
    #[error("{0}")]
    Checkpoint(#[from] checkpoint::CheckpointError),
    #[error("the checkpoint's origin is {origin:?}, but the log key is named {key:?}")]
    Origin { origin: String, key: String },
}

/// Checks a signed checkpoint: its text, the log's signature (the log key's name must be the
/// origin), and each policy witness's cosignature. A signature by a known key that fails to
/// verify refuses the whole note; signatures by unknown keys are ignored.
pub fn verify_witnessed(
    note: &Note,
    log: &Vkey,
    policy: &Policy,
) -> Result<Witnessed, WitnessedError> {
    let checkpoint = Checkpoint::parse(&note.text)?;
    if checkpoint.origin != log.name {
        return Err(WitnessedError::Origin {
            origin: checkpoint.origin,
            key: log.name.clone(),
        });
    }
    note::verify(note, std::slice::from_ref(log))?;
    let mut cosigned = Vec::new();
    for (i, w) in policy.witnesses.iter().enumerate() {
        for s in note.signatures.iter().filter(|s| w.vkey.names(s)) {
            if let Some(time) = w.vkey.verify(&note.text, s)? {
                if !cosigned.iter().any(|(j, _)| *j == i) {
                    cosigned.push((i, time));
                }
            }
        }
    }
    let quorum = policy.satisfied(|i| cosigned.iter().any(|(j, _)| *j == i));
    Ok(Witnessed {
        checkpoint,
        cosigned,
        quorum,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use note::tests::{cosign, key};
    use note::KeyType;

    #[test]
    fn a_cosigned_checkpoint_meets_its_quorum_and_a_bad_cosignature_fails_it() {
        let log = key(1);
        let (w1, w2) = (key(2), key(3));
        let v1 = Vkey::new("w1.example", KeyType::Cosignature, w1.verifying_key()).unwrap();
        let v2 = Vkey::new("w2.example", KeyType::Cosignature, w2.verifying_key()).unwrap();
        let policy = Policy::parse(
            format!("witness A {v1}\nwitness B {v2}\ngroup G all A B\nquorum G\n").as_bytes(),
        )
        .unwrap();
        let cp = Checkpoint {
            origin: "example.org/log".into(),
            size: 10,
            root: [1; 32],
        };
        let mut n = cp.sign(&log).unwrap();
        let lv = Vkey::new("example.org/log", KeyType::Ed25519, log.verifying_key()).unwrap();
        let got = verify_witnessed(&n, &lv, &policy).unwrap();
        assert!(!got.quorum);
        n.signatures.push(cosign(&n.text, "w1.example", &w1, 100));
        assert!(!verify_witnessed(&n, &lv, &policy).unwrap().quorum);
        n.signatures.push(cosign(&n.text, "w2.example", &w2, 101));
        let got = verify_witnessed(&n, &lv, &policy).unwrap();
        assert!(got.quorum);
        assert_eq!(got.cosigned, vec![(0, 100), (1, 101)]);
        // A tampered cosignature by a known witness refuses the note.
        let mut bad = n.clone();
        bad.signatures[2].signature[20] ^= 1;
        assert!(verify_witnessed(&bad, &lv, &policy).is_err());
        // Another log key named like the origin: no known signature.
        let other = Vkey::new("example.org/log", KeyType::Ed25519, key(9).verifying_key()).unwrap();
        assert!(verify_witnessed(&n, &other, &policy).is_err());
        let renamed =
            Vkey::new("example.org/other", KeyType::Ed25519, log.verifying_key()).unwrap();
        assert!(matches!(
            verify_witnessed(&n, &renamed, &policy),
            Err(WitnessedError::Origin { .. })
        ));
    }
}
