//! The claim id (docs/envelope.md): `cl_` + hex SHA-256 of the RFC 8785 (JCS) canonical form of the
//! claim without its `id` member. Member order and whitespace never change it; any change of
//! content does.

use crate::error::{Code, Rejection};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

pub const ID_PREFIX: &str = "cl_";

/// RFC 8785 canonical bytes of a JSON value.
pub fn canonical_bytes(value: &Value) -> Result<Vec<u8>, Rejection> {
    crate::jcs::canonical(value).map_err(not_canonical)
}

fn not_canonical(e: serde_json::Error) -> Rejection {
    Rejection::new(
        Code::SchemaViolation,
        format!("claim cannot be canonicalized (RFC 8785): {e}"),
    )
}

/// Computes the id of a claim, ignoring any `id` member it already has.
pub fn compute_id(claim: &Map<String, Value>) -> Result<String, Rejection> {
    let bytes = crate::jcs::canonical_without(claim, "id").map_err(not_canonical)?;
    Ok(id_of_canonical(&bytes))
}

/// The id of a claim whose canonical form without `id` is `canonical`: the prefix and the
/// lowercase hex SHA-256 of those bytes.
pub(crate) fn id_of_canonical(canonical: &[u8]) -> String {
    id_of_digest(&Sha256::digest(canonical))
}

/// The id whose digest is `digest` (the SHA-256 an id names, as the index keys it): the
/// prefix and its lowercase hex, written once into a string of its size (ingest and the
/// index's readers make one per claim).
pub(crate) fn id_of_digest(digest: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut id = String::with_capacity(ID_PREFIX.len() + 2 * digest.len());
    id.push_str(ID_PREFIX);
    for &b in digest {
        id.push(char::from(HEX[usize::from(b >> 4)]));
        id.push(char::from(HEX[usize::from(b & 0x0f)]));
    }
    id
}

/// Checks the `id` member against the recomputed id.
pub fn check_id(claim: &Map<String, Value>) -> Result<String, Rejection> {
    let expected = compute_id(claim)?;
    match claim.get("id").and_then(Value::as_str) {
        Some(id) if id == expected => Ok(expected),
        Some(id) => Err(Rejection::at(
            Code::IdMismatch,
            "/id",
            format!("id is {id} but the claim's content gives {expected}"),
        )),
        None => Err(Rejection::at(Code::SchemaViolation, "/id", "id is missing")),
    }
}

/// Whether `text` has the form of a claim id.
pub fn is_claim_id(text: &str) -> bool {
    text.strip_prefix(ID_PREFIX).is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn id_ignores_member_order_and_the_id_member() {
        let a = json!({"b": 1, "a": [true, "x"], "id": "cl_whatever"});
        let b: Value = serde_json::from_str(r#"{ "a" : [ true , "x" ] , "b" : 1 }"#).unwrap();
        assert_eq!(
            compute_id(a.as_object().unwrap()).unwrap(),
            compute_id(b.as_object().unwrap()).unwrap()
        );
    }

    #[test]
    fn id_is_sha256_of_jcs() {
        // JCS of {"a":1} is exactly those 7 bytes.
        let id = compute_id(json!({"a": 1}).as_object().unwrap()).unwrap();
        let want = hex::encode(Sha256::digest(br#"{"a":1}"#));
        assert_eq!(id, format!("cl_{want}"));
        assert!(is_claim_id(&id));
        assert!(!is_claim_id("cl_ABC"));
    }
}
