//! Strict JSON reading: I-JSON (RFC 7493) as RFC 8785 requires of its input.
//!
//! serde_json alone keeps the last of duplicate object keys, which would let two parties read
//! different claims from the same bytes. This parser refuses duplicates and numbers beyond
//! ±2^53, where an IEEE double no longer holds every integer (they could canonicalize to a
//! different number), and says where, as a JSON pointer.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Value};
use std::fmt;

/// Largest integer magnitude an IEEE 754 double represents exactly (2^53).
const MAX_SAFE_INTEGER: u64 = 1 << 53;
/// Deeper nesting than this is refused rather than risk the stack.
pub(crate) const MAX_DEPTH: usize = 128;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonError {
    /// Not JSON at all; `line` and `column` count from 1 over the bytes given (the column in
    /// bytes, as serde_json counts it).
    #[error("not JSON: {message} at line {line} column {column}")]
    Syntax {
        message: String,
        line: usize,
        column: usize,
    },
    #[error("duplicate object key {key:?} at {pointer}")]
    DuplicateKey { pointer: String, key: String },
    #[error("not I-JSON at {pointer}: {reason}")]
    NotIJson { pointer: String, reason: String },
}

impl JsonError {
    /// The JSON pointer of the offending member, when there is one.
    pub fn pointer(&self) -> Option<&str> {
        match self {
            JsonError::Syntax { .. } => None,
            JsonError::DuplicateKey { pointer, .. } | JsonError::NotIJson { pointer, .. } => {
                Some(pointer)
            }
        }
    }
}

impl JsonError {
    /// The same error for text that started `lines` lines and (on its first line) `columns`
    /// bytes into a file: where a reader cut leading whitespace, the position is the file's.
    pub fn shifted(self, lines: usize, columns: usize) -> JsonError {
        match self {
            JsonError::Syntax {
                message,
                line,
                column,
            } => JsonError::Syntax {
                message,
                column: if line == 1 { column + columns } else { column },
                line: line + lines,
            },
            other => other,
        }
    }
}

/// Where text starts in a file after `skipped` was cut from its front: the lines and the
/// bytes on the last of them, for [`JsonError::shifted`].
pub fn offset_of(skipped: &[u8]) -> (usize, usize) {
    let lines = skipped.iter().filter(|&&b| b == b'\n').count();
    let columns = match skipped.iter().rposition(|&b| b == b'\n') {
        Some(i) => skipped.len() - i - 1,
        None => skipped.len(),
    };
    (lines, columns)
}

/// Parses `bytes` as one strict JSON value.
pub fn parse_strict(bytes: &[u8]) -> Result<Value, JsonError> {
    parse_with(bytes, true)
}

/// Parses `bytes` refusing duplicate keys and deep nesting, but keeping any finite number,
/// however large. For JSON whose numbers elench never reads, such as a DSSE envelope (its
/// fields are strings; unknown fields, which consumers must ignore, may hold anything).
pub fn parse_unique_keys(bytes: &[u8]) -> Result<Value, JsonError> {
    parse_with(bytes, false)
}

fn parse_with(bytes: &[u8], exact_numbers: bool) -> Result<Value, JsonError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let mut failure: Option<JsonError> = None;
    let seed = Strict {
        path: Path::Root,
        depth: 0,
        exact_numbers,
        failure: &mut failure,
    };
    let result = seed.deserialize(&mut de).and_then(|v| de.end().map(|_| v));
    match (result, failure) {
        (Ok(v), None) => Ok(v),
        (_, Some(f)) => Err(f),
        (Err(e), None) => Err(syntax_error(bytes, &e)),
    }
}

/// serde_json's syntax error with its position as members, and a true message where its
/// own misleads: a lone UTF-16 surrogate escape (`"\ud800"`) is reported by serde_json as
/// "unexpected end of hex escape" although the escape is whole.
fn syntax_error(bytes: &[u8], e: &serde_json::Error) -> JsonError {
    let full = e.to_string();
    // serde_json appends " at line L column C" to its message; the position is kept apart.
    let mut message = match full.rfind(" at line ") {
        Some(i) => full[..i].to_owned(),
        None => full,
    };
    if message.contains("hex escape") {
        if let Some(unit) = escape_before(bytes, e.line(), e.column()) {
            if (0xD800..=0xDBFF).contains(&unit) {
                message = format!(
                    "lone surrogate \\u{unit:04x}: a high surrogate escape must be followed by \
                     a low one (\\udc00 to \\udfff); JSON text must be Unicode"
                );
            } else if (0xDC00..=0xDFFF).contains(&unit) {
                message = format!(
                    "lone surrogate \\u{unit:04x}: a low surrogate escape must follow a high \
                     one (\\ud800 to \\udbff); JSON text must be Unicode"
                );
            }
        }
    }
    JsonError::Syntax {
        message,
        line: e.line(),
        column: e.column(),
    }
}

/// The code unit of the last `\uXXXX` escape that starts at or before line `line`, column
/// `column` (1-based, in bytes), if there is one within the 12 bytes before.
fn escape_before(bytes: &[u8], line: usize, column: usize) -> Option<u32> {
    let line_start = if line <= 1 {
        0
    } else {
        bytes
            .iter()
            .enumerate()
            .filter(|&(_, &b)| b == b'\n')
            .nth(line - 2)
            .map(|(i, _)| i + 1)?
    };
    let at = (line_start + column).min(bytes.len());
    let from = at.saturating_sub(12);
    let window = &bytes[from..at];
    let i = window.windows(2).rposition(|w| w == b"\\u")?;
    let hex = window.get(i + 2..i + 6)?;
    u32::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
}

/// Escapes one reference token of a JSON pointer (RFC 6901).
pub fn escape_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Where a value sits, as a chain of borrowed steps back to the root: the JSON pointer is
/// spelled out only when something is refused, never for every value read.
#[derive(Clone, Copy)]
enum Path<'p> {
    Root,
    Key(&'p Path<'p>, &'p str),
    Index(&'p Path<'p>, usize),
}

impl Path<'_> {
    fn pointer(&self) -> String {
        match self {
            Path::Root => String::new(),
            Path::Key(parent, key) => format!("{}/{}", parent.pointer(), escape_token(key)),
            Path::Index(parent, i) => format!("{}/{i}", parent.pointer()),
        }
    }
}

struct Strict<'p, 'f> {
    path: Path<'p>,
    depth: usize,
    /// Refuse numbers beyond ±2^53 (I-JSON).
    exact_numbers: bool,
    failure: &'f mut Option<JsonError>,
}

impl Strict<'_, '_> {
    fn fail<E: de::Error>(&mut self, err: JsonError) -> E {
        let msg = err.to_string();
        *self.failure = Some(err);
        E::custom(msg)
    }

    fn not_ijson<E: de::Error>(&mut self, reason: String) -> E {
        let pointer = self.path.pointer();
        self.fail(JsonError::NotIJson { pointer, reason })
    }
}

impl<'de> DeserializeSeed<'de> for Strict<'_, '_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_, '_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(mut self, v: i64) -> Result<Value, E> {
        if self.exact_numbers && v.unsigned_abs() > MAX_SAFE_INTEGER {
            return Err(self.not_ijson(format!(
                "integer {v} is outside ±2^53 and cannot be represented exactly"
            )));
        }
        Ok(Value::from(v))
    }

    fn visit_u64<E: de::Error>(mut self, v: u64) -> Result<Value, E> {
        if self.exact_numbers && v > MAX_SAFE_INTEGER {
            return Err(self.not_ijson(format!(
                "integer {v} is outside ±2^53 and cannot be represented exactly"
            )));
        }
        Ok(Value::from(v))
    }

    fn visit_f64<E: de::Error>(mut self, v: f64) -> Result<Value, E> {
        // Integers too large for u64 arrive here as doubles; beyond 2^53 a double no longer
        // holds every integer, so refuse them as the integer paths do.
        if self.exact_numbers && v.abs() > MAX_SAFE_INTEGER as f64 {
            return Err(self.not_ijson(format!("number {v} is outside ±2^53")));
        }
        match serde_json::Number::from_f64(v) {
            Some(n) => Ok(Value::Number(n)),
            None => Err(self.not_ijson("number is not finite".into())),
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Value, A::Error> {
        if self.depth >= MAX_DEPTH {
            return Err(self.not_ijson(format!("nested deeper than {MAX_DEPTH} levels")));
        }
        let mut items = Vec::new();
        loop {
            let child = Strict {
                path: Path::Index(&self.path, items.len()),
                depth: self.depth + 1,
                exact_numbers: self.exact_numbers,
                failure: &mut *self.failure,
            };
            match seq.next_element_seed(child)? {
                Some(v) => items.push(v),
                None => break,
            }
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Value, A::Error> {
        if self.depth >= MAX_DEPTH {
            return Err(self.not_ijson(format!("nested deeper than {MAX_DEPTH} levels")));
        }
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            // One lookup both refuses a duplicate and finds the new member's place.
            let slot = match out.entry(key) {
                Entry::Vacant(slot) => slot,
                Entry::Occupied(taken) => {
                    let key = taken.key().clone();
                    let pointer = Path::Key(&self.path, &key).pointer();
                    return Err(self.fail(JsonError::DuplicateKey { pointer, key }));
                }
            };
            let child = Strict {
                path: Path::Key(&self.path, slot.key()),
                depth: self.depth + 1,
                exact_numbers: self.exact_numbers,
                failure: &mut *self.failure,
            };
            let value = map.next_value_seed(child)?;
            slot.insert(value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_plain_json() {
        let v = parse_strict(br#"{"a":[1,2,{"b":null}],"c":"\u00e9","d":1.5}"#).unwrap();
        assert_eq!(v["a"][2]["b"], Value::Null);
        assert_eq!(v["c"], "é");
    }

    #[test]
    fn refuses_duplicate_keys_with_pointer() {
        let err = parse_strict(br#"{"a":{"x":1,"y":2,"x":3}}"#).unwrap_err();
        assert_eq!(
            err,
            JsonError::DuplicateKey {
                pointer: "/a/x".into(),
                key: "x".into()
            }
        );
        let err = parse_strict(br#"[{"k":1,"k":1}]"#).unwrap_err();
        assert_eq!(err.pointer(), Some("/0/k"));
    }

    #[test]
    fn refuses_unsafe_integers_and_trailing_text() {
        assert!(matches!(
            parse_strict(br#"{"t":9007199254740993}"#),
            Err(JsonError::NotIJson { .. })
        ));
        assert!(parse_strict(br#"{"t":9007199254740992}"#).is_ok());
        assert!(matches!(
            parse_strict(br#"{"t":18446744073709551616}"#),
            Err(JsonError::NotIJson { .. })
        ));
        assert!(matches!(
            parse_strict(br#"{"t":-1e300}"#),
            Err(JsonError::NotIJson { .. })
        ));
        assert!(parse_strict(br#"{"t":1.5e3}"#).is_ok());
        assert!(matches!(
            parse_strict(br#"{} x"#),
            Err(JsonError::Syntax { .. })
        ));
        assert!(matches!(
            parse_strict(br#""\ud800""#),
            Err(JsonError::Syntax { .. })
        ));
    }

    #[test]
    fn unique_keys_mode_keeps_large_numbers_but_not_duplicates() {
        let v = parse_unique_keys(br#"{"a":1e300,"b":18446744073709551616,"c":-9007199254740993}"#)
            .unwrap();
        assert_eq!(v["a"].as_f64(), Some(1e300));
        assert!(v["b"].is_number() && v["c"].is_number());
        assert!(matches!(
            parse_unique_keys(br#"{"a":1,"a":2}"#),
            Err(JsonError::DuplicateKey { .. })
        ));
        assert!(parse_unique_keys("[".repeat(100_000).as_bytes()).is_err());
        // The strict mode is unchanged.
        assert!(parse_strict(br#"{"a":1e300}"#).is_err());
    }

    #[test]
    fn lone_surrogates_are_named_and_positions_kept() {
        for (text, unit) in [
            (r#""\ud800""#, "d800"),
            (r#"{"a":"x\uDBFFy"}"#, "dbff"),
            (r#"["\udc00"]"#, "dc00"),
        ] {
            let err = parse_strict(text.as_bytes()).unwrap_err().to_string();
            assert!(
                err.contains(&format!("lone surrogate \\u{unit}")),
                "{text}: {err}"
            );
        }
        // A high surrogate followed by another escape: serde_json's words are true then.
        let err = parse_strict(b"[\n\"\\ud800\\u0041\"]")
            .unwrap_err()
            .to_string();
        assert!(err.contains("lone leading surrogate"), "{err}");
        // A truncated escape keeps serde_json's own words.
        let err = parse_strict(br#""\u12""#).unwrap_err().to_string();
        assert!(!err.contains("surrogate"), "{err}");
        let err = parse_strict(b"{\n  x\n}").unwrap_err();
        assert!(
            matches!(
                err,
                JsonError::Syntax {
                    line: 2,
                    column: 3,
                    ..
                }
            ),
            "{err:?}"
        );
        assert_eq!(offset_of(b"\n\n  "), (2, 2));
        assert!(matches!(
            err.clone().shifted(2, 2),
            JsonError::Syntax {
                line: 4,
                column: 3,
                ..
            }
        ));
        assert!(matches!(
            parse_strict(b"{x}").unwrap_err().shifted(0, 4),
            JsonError::Syntax {
                line: 1,
                column: 6,
                ..
            }
        ));
    }

    #[test]
    fn refuses_deep_nesting_without_overflow() {
        let deep = "[".repeat(100_000);
        assert!(parse_strict(deep.as_bytes()).is_err());
    }

    #[test]
    fn pointer_tokens_are_escaped() {
        let err = parse_strict(br#"{"a/b":{"q":1,"q":2}}"#).unwrap_err();
        assert_eq!(err.pointer(), Some("/a~1b/q"));
    }
}
