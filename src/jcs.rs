//! RFC 8785 (JCS) canonical JSON, the form claim ids and stored envelopes are hashed in.
//!
//! Ingest canonicalises every envelope and every claim, so this sits on the hot path. The
//! values elench meets hold strings, booleans, nulls, arrays, objects and integers, and for
//! those the canonical form is simple: members sorted by the UTF-16 code units of their names,
//! strings escaped minimally, integers in plain decimal. That is written here directly. Any
//! other number (a fraction, an exponent, an integer beyond ±2^53, where a double no longer
//! holds it exactly) needs ECMAScript's number formatting, so the whole value then goes
//! through the `serde_json_canonicalizer` crate instead. A property test holds the two to the
//! same bytes.

use serde::ser::SerializeMap;
use serde_json::{Map, Value};

/// Largest integer magnitude written directly (2^53): every integer up to it is exact in a
/// double and prints as its decimal digits.
const MAX_EXACT: u64 = 1 << 53;

/// The canonical bytes of `value`.
pub fn canonical(value: &Value) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::with_capacity(1024);
    if write_value(value, &mut out).is_some() {
        return Ok(out);
    }
    serde_json_canonicalizer::to_vec(value)
}

/// The canonical bytes of the object `fields` without its member `skip` (a claim's id is the
/// hash of the claim without `id`).
pub fn canonical_without(
    fields: &Map<String, Value>,
    skip: &str,
) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::with_capacity(1024);
    if write_object(fields, Some(skip), &mut out).is_some() {
        return Ok(out);
    }
    serde_json_canonicalizer::to_vec(&Without { fields, skip })
}

/// An object without one member, for the crate's serializer.
struct Without<'a> {
    fields: &'a Map<String, Value>,
    skip: &'a str,
}

impl serde::Serialize for Without<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let kept = self.fields.iter().filter(|(k, _)| k.as_str() != self.skip);
        let mut map = s.serialize_map(Some(kept.clone().count()))?;
        for (k, v) in kept {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// Writes `value` canonically; None when it holds a number this writer leaves to the crate.
fn write_value(value: &Value, out: &mut Vec<u8>) -> Option<()> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => {
            if let Some(u) = n.as_u64().filter(|u| *u <= MAX_EXACT) {
                out.extend_from_slice(u.to_string().as_bytes());
            } else if let Some(i) = n.as_i64().filter(|i| i.unsigned_abs() <= MAX_EXACT) {
                out.extend_from_slice(i.to_string().as_bytes());
            } else {
                return None;
            }
        }
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(item, out)?;
            }
            out.push(b']');
        }
        Value::Object(fields) => write_object(fields, None, out)?,
    }
    Some(())
}

fn write_object(fields: &Map<String, Value>, skip: Option<&str>, out: &mut Vec<u8>) -> Option<()> {
    let mut members: Vec<(&String, &Value)> = fields
        .iter()
        .filter(|(k, _)| Some(k.as_str()) != skip)
        .collect();
    // RFC 8785 orders members by the UTF-16 code units of their names. For names in ASCII
    // (nearly all) that is byte order; otherwise compare the code units themselves.
    if members.iter().all(|(k, _)| k.is_ascii()) {
        members.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    } else {
        members.sort_unstable_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
    }
    out.push(b'{');
    for (i, (k, v)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_string(k, out);
        out.push(b':');
        write_value(v, out)?;
    }
    out.push(b'}');
    Some(())
}

/// A JSON string as RFC 8785 writes it: `"` and `\` escaped, the control characters as `\b`,
/// `\t`, `\n`, `\f`, `\r` or `\u00xx` (lowercase hex), everything else as itself.
fn write_string(s: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut unicode = *b"\\u0000";
    while let Some(i) = next_escape(bytes, start) {
        let b = bytes[i];
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x09 => b"\\t",
            0x0a => b"\\n",
            0x0c => b"\\f",
            0x0d => b"\\r",
            _ => {
                unicode[4] = HEX[(b >> 4) as usize];
                unicode[5] = HEX[(b & 15) as usize];
                &unicode
            }
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(escape);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

fn needs_escape(b: u8) -> bool {
    (b < 0x20) | (b == b'"') | (b == b'\\')
}

/// The first byte at or after `from` that must be escaped. Long plain runs (a base64 payload
/// is most of an envelope) are skipped 16 bytes at a time: a fixed-size test without early
/// exit, which the compiler turns into vector instructions.
fn next_escape(bytes: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while let Some(chunk) = bytes.get(i..i + 16) {
        if chunk.iter().fold(false, |any, &b| any | needs_escape(b)) {
            break;
        }
        i += 16;
    }
    bytes[i..]
        .iter()
        .position(|&b| needs_escape(b))
        .map(|k| i + k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn crate_form(value: &Value) -> Vec<u8> {
        serde_json_canonicalizer::to_vec(value).unwrap()
    }

    fn without(value: &Value, skip: &str) -> Value {
        let mut v = value.clone();
        if let Some(fields) = v.as_object_mut() {
            fields.remove(skip);
        }
        v
    }

    #[test]
    fn writes_what_rfc_8785_writes() {
        let v = json!({
            "b": [true, false, null, -7, 9007199254740992u64],
            "a": {"\u{e9}": "x", "z": "\"\\\u{1}\n\u{7f}\u{2028}"},
            "\u{1f600}": 1, "\u{fb33}": 2,
            "id": "gone"
        });
        let fields = v.as_object().unwrap();
        assert_eq!(
            canonical_without(fields, "id").unwrap(),
            crate_form(&without(&v, "id"))
        );
        assert_eq!(canonical(&v).unwrap(), crate_form(&v));
        // Names beyond the BMP sort by their UTF-16 surrogates, before U+FB33.
        let text = String::from_utf8(canonical(&v).unwrap()).unwrap();
        assert!(text.find('\u{1f600}').unwrap() < text.find('\u{fb33}').unwrap());
    }

    #[test]
    fn numbers_it_does_not_write_go_to_the_crate() {
        for v in [
            json!({"n": 1.5}),
            json!([1e21]),
            json!(-0.0),
            json!(9007199254740993u64),
        ] {
            assert!(write_value(&v, &mut Vec::new()).is_none(), "{v}");
            assert_eq!(canonical(&v).unwrap(), crate_form(&v));
        }
        let v = json!({"id": 1, "n": 0.1});
        assert_eq!(
            canonical_without(v.as_object().unwrap(), "id").unwrap(),
            crate_form(&json!({"n": 0.1}))
        );
    }

    fn arb_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            any::<String>().prop_map(Value::String),
            "[\\x00-\\x7f]{0,8}".prop_map(Value::String),
            // Long plain runs with the occasional escape, on either side of a 16-byte step.
            "([A-Za-z0-9+/=]{0,40}[\"\\\\\\x00-\\x1f\\x7f\u{e9}]?){0,4}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(any::<String>(), inner.clone(), 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
                prop::collection::btree_map("[a-z\u{e9}\u{1f600}]{0,3}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Whatever path a value takes, its bytes are the crate's RFC 8785 bytes.
        #[test]
        fn equals_the_canonicalizer_crate(v in arb_value(), skip in "[a-z]{0,2}") {
            prop_assert_eq!(canonical(&v).unwrap(), crate_form(&v));
            if let Some(fields) = v.as_object() {
                prop_assert_eq!(
                    canonical_without(fields, &skip).unwrap(),
                    crate_form(&without(&v, &skip))
                );
            }
        }
    }
}
