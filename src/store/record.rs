//! What the payloads of log records are: envelopes in canonical form, and trust events.

use crate::keys::Role;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The canonical form of an envelope: RFC 8785 of its JSON, unknown fields kept. Signatures
/// cover the payload, not this serialisation, so canonicalising never invalidates one; two
/// stores holding the same envelopes hold the same bytes.
pub fn canonical_envelope(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| format!("envelope is not JSON: {e}"))?;
    canonical_of(&value)
}

/// [`canonical_envelope`] of an envelope already read as JSON.
pub fn canonical_of(envelope: &serde_json::Value) -> Result<Vec<u8>, String> {
    crate::jcs::canonical(envelope).map_err(|e| format!("cannot canonicalise: {e}"))
}

/// An envelope's identity: SHA-256 of its canonical bytes.
pub fn envelope_digest(canonical: &[u8]) -> [u8; 32] {
    Sha256::digest(canonical).into()
}

/// The claim id an envelope's payload names, read without verifying anything: enough to find
/// the envelope among that claim's stored ones (the digest then decides), never to trust it.
pub fn claimed_id(envelope: &[u8]) -> Option<String> {
    let env = crate::envelope::Envelope::parse(envelope).ok()?;
    let statement = crate::envelope::Statement::parse(&env.payload).ok()?;
    statement.predicate.get("id")?.as_str().map(str::to_owned)
}

/// A key became trusted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyAdd {
    pub keyid: String,
    pub role: Role,
    pub name: String,
    /// Hex of the 32 raw public key bytes.
    pub public_key: String,
}

/// A key was retired: it verifies nothing appended after this record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRetire {
    pub keyid: String,
}

/// A root key was pinned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pin {
    pub keyid: String,
    pub name: String,
    /// PEM SubjectPublicKeyInfo.
    #[serde(rename = "publicKey")]
    pub public_key: String,
}

/// What the store itself checks of a pin or policy record: a pin reads as one, a policy is
/// an envelope in canonical form. Whether a policy holds is the trust layer's to say.
pub fn check_trust_record(kind: super::log::Kind, payload: &[u8]) -> Result<(), String> {
    match kind {
        super::log::Kind::Pin => decode_event::<Pin>(payload).map(drop),
        super::log::Kind::Policy => match canonical_envelope(payload) {
            Ok(c) if c == payload => Ok(()),
            Ok(_) => Err("a trust policy record is not in canonical form".into()),
            Err(e) => Err(format!("a trust policy record is not an envelope: {e}")),
        },
        other => Err(format!("{other:?} is not a trust record")),
    }
}

/// Trust event payloads are canonical JSON, so the log's bytes are a function of the events.
pub fn encode_event<T: Serialize>(event: &T) -> Vec<u8> {
    let value = serde_json::to_value(event).unwrap_or(serde_json::Value::Null);
    crate::jcs::canonical(&value).unwrap_or_default()
}

pub fn decode_event<T: for<'de> Deserialize<'de>>(payload: &[u8]) -> Result<T, String> {
    serde_json::from_slice(payload).map_err(|e| format!("trust event is not readable: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_form_ignores_spelling() {
        let a = canonical_envelope(
            br#"{ "payload":"eA==", "payloadType":"t","signatures":[],"x":1.0}"#,
        )
        .unwrap();
        let b =
            canonical_envelope(br#"{"x":1,"signatures":[],"payloadType":"t","payload":"eA=="}"#)
                .unwrap();
        assert_eq!(a, b);
        assert_eq!(envelope_digest(&a), envelope_digest(&b));
        assert!(canonical_envelope(b"not json").is_err());
    }

    #[test]
    fn events_round_trip() {
        let e = KeyAdd {
            keyid: "ab".into(),
            role: Role::Harness,
            name: "ci".into(),
            public_key: "00".into(),
        };
        let back: KeyAdd = decode_event(&encode_event(&e)).unwrap();
        assert_eq!(back, e);
    }
}
