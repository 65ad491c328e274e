//! RFC 8785 (JCS) canonical JSON, the form claim ids and stored envelopes are hashed in.
//!
//! This is elench's one canonical-JSON writer. Ingest canonicalises every envelope and every
//! claim, so it sits on the hot path: members sorted by the UTF-16 code units of their names,
//! strings escaped minimally, integers up to 2^53 in plain decimal, written straight into a
//! buffer. Any other number (a fraction, an exponent, an integer beyond ±2^53, where a double
//! no longer holds it exactly) is the double it denotes, written as ECMAScript's
//! `Number.prototype.toString` writes it (the `ryu-js` crate), as RFC 8785 prescribes.
//! [`Canon`] writes an object member by member for the fast ingest reading, which holds typed
//! fields rather than a `Value`. Property tests hold the output to an independent RFC 8785
//! implementation, and the RFC's own vectors to their expected bytes.

use serde_json::{Map, Number, Value};

/// Largest integer magnitude written directly (2^53): every integer up to it is exact in a
/// double and prints as its decimal digits.
const MAX_EXACT: u64 = 1 << 53;

/// The canonical bytes of `value`. Every JSON value has them; the `Result` is kept for the
/// callers that treat canonicalisation as fallible.
pub fn canonical(value: &Value) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::with_capacity(1024);
    write_value(value, &mut out);
    Ok(out)
}

/// The canonical bytes of the object `fields` without its member `skip` (a claim's id is the
/// hash of the claim without `id`).
pub fn canonical_without(
    fields: &Map<String, Value>,
    skip: &str,
) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::with_capacity(1024);
    write_object(fields, Some(skip), &mut out);
    Ok(out)
}

fn write_value(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(n, out),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(item, out);
            }
            out.push(b']');
        }
        Value::Object(fields) => write_object(fields, None, out),
    }
}

/// A number as RFC 8785 writes it: the double it denotes, in ECMAScript's shortest form.
/// Integers a double holds exactly print as their digits without going through a double.
fn write_number(n: &Number, out: &mut Vec<u8>) {
    if let Some(u) = n.as_u64().filter(|u| *u <= MAX_EXACT) {
        out.extend_from_slice(u.to_string().as_bytes());
    } else if let Some(i) = n.as_i64().filter(|i| i.unsigned_abs() <= MAX_EXACT) {
        out.extend_from_slice(i.to_string().as_bytes());
    } else {
        // serde_json holds every other number as u64, i64 or a finite f64; the integers
        // round to the nearest double, as an ECMAScript reader would read them.
        let double = n
            .as_f64()
            .or_else(|| n.as_u64().map(|u| u as f64))
            .or_else(|| n.as_i64().map(|i| i as f64))
            .unwrap_or(0.0);
        out.extend_from_slice(ryu_js::Buffer::new().format(double).as_bytes());
    }
}

fn write_object(fields: &Map<String, Value>, skip: Option<&str>, out: &mut Vec<u8>) {
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
        write_value(v, out);
    }
    out.push(b'}');
}

/// Writes one canonical object at a time from typed fields, for the fast ingest reading.
/// The caller names members in RFC 8785 order (for the ASCII names it writes, byte order);
/// commas go before every member but the first of its object.
pub(crate) struct Canon(pub(crate) Vec<u8>);

impl Canon {
    pub(crate) fn open(&mut self) {
        self.0.push(b'{');
    }
    pub(crate) fn close(&mut self) {
        self.0.push(b'}');
    }
    pub(crate) fn key(&mut self, name: &str) {
        if !matches!(self.0.last(), Some(b'{')) {
            self.0.push(b',');
        }
        write_string(name, &mut self.0);
        self.0.push(b':');
    }
    pub(crate) fn opt_str(&mut self, name: &str, value: Option<&str>) {
        if let Some(v) = value {
            self.key(name);
            write_string(v, &mut self.0);
        }
    }
    pub(crate) fn opt_strs<'s>(
        &mut self,
        name: &str,
        items: Option<impl IntoIterator<Item = &'s str>>,
    ) {
        if let Some(items) = items {
            self.key(name);
            self.0.push(b'[');
            for (i, item) in items.into_iter().enumerate() {
                if i > 0 {
                    self.0.push(b',');
                }
                write_string(item, &mut self.0);
            }
            self.0.push(b']');
        }
    }
    /// An integer the strict reader accepted (at most 2^53 in magnitude): its digits.
    pub(crate) fn int(&mut self, n: i64) {
        self.0.extend_from_slice(n.to_string().as_bytes());
    }
    /// A member holding an array of such integers, when there is one.
    pub(crate) fn opt_ints(&mut self, name: &str, items: Option<&[i64]>) {
        if let Some(items) = items {
            self.key(name);
            self.0.push(b'[');
            for (i, n) in items.iter().enumerate() {
                if i > 0 {
                    self.0.push(b',');
                }
                self.int(*n);
            }
            self.0.push(b']');
        }
    }
}

/// `text` without the whitespace JSON allows around a value, when what is left is already
/// the canonical form of the JSON it holds ([`is_canonical`]). That slice is then the
/// canonical bytes, with no value built or written; None leaves the text to a full reading.
pub fn canonical_text(text: &[u8]) -> Option<&[u8]> {
    let trimmed = trim_space(text)?;
    is_canonical(trimmed).then_some(trimmed)
}

/// `text` without the whitespace JSON allows around a value; None when nothing else is left.
pub(crate) fn trim_space(text: &[u8]) -> Option<&[u8]> {
    let is_space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let start = text.iter().position(|b| !is_space(b))?;
    let end = text.iter().rposition(|b| !is_space(b))? + 1;
    Some(&text[start..end])
}

/// Whether `text` is exactly what [`canonical`] writes for the JSON it holds, so that reading
/// it (even strictly: no duplicate member, bounded nesting) and writing it again would give
/// the same bytes. A conservative test: true only for texts made of what this module writes
/// itself (integers up to 2^53, member names in ASCII without escapes) nested at most
/// [`MAX_CHECKED_DEPTH`] deep; any other text, canonical or not, answers false.
pub fn is_canonical(text: &[u8]) -> bool {
    if std::str::from_utf8(text).is_err() {
        return false;
    }
    let mut at = 0;
    canonical_value(text, &mut at, 0) && at == text.len()
}

/// Deepest nesting [`is_canonical`] follows; the strict reader allows more, so a text that
/// passes here never fails there for its depth.
const MAX_CHECKED_DEPTH: usize = 64;
const _: () = assert!(MAX_CHECKED_DEPTH < crate::json::MAX_DEPTH);

fn canonical_value(t: &[u8], at: &mut usize, depth: usize) -> bool {
    match t.get(*at) {
        Some(b'{') => canonical_object(t, at, depth),
        Some(b'[') => canonical_array(t, at, depth),
        Some(b'"') => canonical_string(t, at, false),
        Some(b't') => literal(t, at, b"true"),
        Some(b'f') => literal(t, at, b"false"),
        Some(b'n') => literal(t, at, b"null"),
        Some(b'-' | b'0'..=b'9') => canonical_integer(t, at),
        _ => false,
    }
}

fn literal(t: &[u8], at: &mut usize, word: &[u8]) -> bool {
    let found = t[*at..].starts_with(word);
    if found {
        *at += word.len();
    }
    found
}

fn canonical_object(t: &[u8], at: &mut usize, depth: usize) -> bool {
    let mut previous: Option<&[u8]> = None;
    canonical_elements(t, at, depth, b'}', |at| {
        let start = *at;
        if !canonical_string(t, at, true) {
            return false;
        }
        // ASCII names without escapes: their bytes are their UTF-16 code units, so strictly
        // ascending bytes are RFC 8785's order, and no name can repeat.
        let name = &t[start + 1..*at - 1];
        if previous.is_some_and(|p| p >= name) || t.get(*at) != Some(&b':') {
            return false;
        }
        previous = Some(name);
        *at += 1;
        canonical_value(t, at, depth + 1)
    })
}

fn canonical_array(t: &[u8], at: &mut usize, depth: usize) -> bool {
    canonical_elements(t, at, depth, b']', |at| canonical_value(t, at, depth + 1))
}

/// An object's members or an array's items: the opening bracket at `at`, elements read by
/// `element` and separated by commas, then `close`.
fn canonical_elements(
    t: &[u8],
    at: &mut usize,
    depth: usize,
    close: u8,
    mut element: impl FnMut(&mut usize) -> bool,
) -> bool {
    if depth >= MAX_CHECKED_DEPTH {
        return false;
    }
    *at += 1;
    if t.get(*at) == Some(&close) {
        *at += 1;
        return true;
    }
    loop {
        if !element(at) {
            return false;
        }
        match t.get(*at) {
            Some(b',') => *at += 1,
            Some(&c) if c == close => {
                *at += 1;
                return true;
            }
            _ => return false,
        }
    }
}

/// A string as [`write_string`] writes it; a member name must also be ASCII without escapes.
fn canonical_string(t: &[u8], at: &mut usize, member_name: bool) -> bool {
    if t.get(*at) != Some(&b'"') {
        return false;
    }
    let mut i = *at + 1;
    loop {
        let Some(next) = next_escape(t, i) else {
            return false; // no closing quote
        };
        if member_name && !t[i..next].is_ascii() {
            return false;
        }
        match t[next] {
            b'"' => {
                *at = next + 1;
                return true;
            }
            b'\\' if !member_name => {
                let Some(len) = canonical_escape(&t[next + 1..]) else {
                    return false;
                };
                i = next + 1 + len;
            }
            _ => return false, // a raw control character, or an escape in a name
        }
    }
}

/// The length of the escape after a backslash when it is the one [`write_string`] writes.
fn canonical_escape(rest: &[u8]) -> Option<usize> {
    match rest.first()? {
        b'"' | b'\\' | b'b' | b't' | b'n' | b'f' | b'r' => Some(1),
        b'u' => {
            let hex = rest.get(1..5)?;
            let digit = |d: u8| match d {
                b'0'..=b'9' => Some(d - b'0'),
                b'a'..=b'f' => Some(d - b'a' + 10),
                _ => None,
            };
            let code = (hex[0] == b'0' && hex[1] == b'0')
                .then(|| Some(digit(hex[2])? << 4 | digit(hex[3])?))
                .flatten()?;
            // Only control characters without a short escape are written as \u00xx.
            (code < 0x20 && !matches!(code, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d)).then_some(5)
        }
        _ => None,
    }
}

/// An integer as [`write_value`] writes it: plain decimal, no sign on zero, at most 2^53.
fn canonical_integer(t: &[u8], at: &mut usize) -> bool {
    let negative = t[*at] == b'-';
    let start = *at + usize::from(negative);
    let digits = t[start..].iter().take_while(|d| d.is_ascii_digit()).count();
    let end = start + digits;
    if digits == 0 || digits > 16 || matches!(t.get(end), Some(b'.' | b'e' | b'E')) {
        return false;
    }
    if t[start] == b'0' && (digits > 1 || negative) {
        return false;
    }
    let n = t[start..end]
        .iter()
        .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
    if n > MAX_EXACT {
        return false;
    }
    *at = end;
    true
}

/// A JSON string as RFC 8785 writes it: `"` and `\` escaped, the control characters as `\b`,
/// `\t`, `\n`, `\f`, `\r` or `\u00xx` (lowercase hex), everything else as itself.
pub(crate) fn write_string(s: &str, out: &mut Vec<u8>) {
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
    fn numbers_beyond_integers_are_written_as_ecmascript_writes_them() {
        // RFC 8785 appendix B and section 3.2.2.3, plus the edges of the direct path.
        for (v, text) in [
            (json!(1.5), "1.5"),
            (json!(1e21), "1e+21"),
            (json!(1e20), "100000000000000000000"),
            (json!(-0.0), "0"),
            (json!(0.000001), "0.000001"),
            (json!(1e-7), "1e-7"),
            (json!(4.5e-7), "4.5e-7"),
            (json!(333333333.3333333), "333333333.3333333"),
            (json!(5e-324), "5e-324"),
            (json!(1.7976931348623157e308), "1.7976931348623157e+308"),
            (json!(9007199254740992u64), "9007199254740992"),
            (json!(-9007199254740992i64), "-9007199254740992"),
            (json!(9007199254740993u64), "9007199254740992"),
            (json!(295147905179352830000.0), "295147905179352830000"),
            (json!(u64::MAX), "18446744073709552000"),
            (json!(i64::MIN), "-9223372036854776000"),
        ] {
            assert_eq!(
                String::from_utf8(canonical(&v).unwrap()).unwrap(),
                text,
                "{v}"
            );
            assert_eq!(canonical(&v).unwrap(), crate_form(&v), "{v}");
        }
        let v = json!({"id": 1, "n": 0.1});
        assert_eq!(
            canonical_without(v.as_object().unwrap(), "id").unwrap(),
            crate_form(&json!({"n": 0.1}))
        );
    }

    /// Long plain runs with the occasional escape, on either side of a 16-byte step.
    const PLAIN_RUNS: &str = "([A-Za-z0-9+/=]{0,40}[\"\\\\\\x00-\\x1f\\x7f\u{e9}]?){0,4}";

    /// Arrays and objects (member names drawn from `names`) over `leaf`, nested up to
    /// `depth` deep, about `size` values in all, at most `width` items each.
    fn nested(
        leaf: impl Strategy<Value = Value> + 'static,
        names: &'static str,
        depth: u32,
        size: u32,
        width: usize,
    ) -> impl Strategy<Value = Value> {
        leaf.prop_recursive(depth, size, width as u32, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..width).prop_map(Value::Array),
                prop::collection::btree_map(names, inner, 0..width)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn arb_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            any::<f64>()
                .prop_filter("JSON holds finite numbers", |f| f.is_finite())
                .prop_map(Value::from),
            any::<String>().prop_map(Value::String),
            "[\\x00-\\x7f]{0,8}".prop_map(Value::String),
            PLAIN_RUNS.prop_map(Value::String),
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

    #[test]
    fn canonical_texts_are_recognised_and_near_misses_are_not() {
        for yes in [
            r#"{"a":[1,-2,0,9007199254740992,-9007199254740992],"b":{"c":null,"d":true}}"#,
            r#"{"":"x","A":"\"\\\b\t\n\f\r\u001f\u0000","a":"é/😀"}"#,
            r#"[]"#,
            r#"{}"#,
            r#""plain""#,
            "\"\\u000b\u{7f}\"", // \u000b has no short escape; DEL is written as itself
            r#"false"#,
        ] {
            assert!(is_canonical(yes.as_bytes()), "{yes}");
            let read = crate::json::parse_unique_keys(yes.as_bytes()).unwrap();
            assert_eq!(canonical(&read).unwrap(), yes.as_bytes(), "{yes}");
        }
        for no in [
            r#"{"b":1,"a":2}"#,      // members out of order
            r#"{"a":1,"a":1}"#,      // a repeated member
            r#"{"a": 1}"#,           // whitespace
            r#"{"a":1} "#,           // whitespace after (canonical_text trims it)
            r#"[-0]"#,               // a signed zero
            r#"[01]"#,               // a leading zero
            r#"[1.0]"#,              // a fraction
            r#"[1e2]"#,              // an exponent
            r#"[9007199254740993]"#, // beyond 2^53
            r#"["\u0008"]"#,         // \b has a short escape
            r#"["\u001F"]"#,         // upper-case hex
            r#"["\u00e9"]"#,         // only control characters are escaped
            r#"["\u007f"]"#,         // nor is DEL
            r#"["\/"]"#,             // `/` is written as itself
            "[\"\u{1}\"]",           // a raw control character
            r#"{"é":1}"#,            // a name outside ASCII (left to the full reading)
            r#"{"\n":1}"#,           // an escaped name (likewise)
            r#"[1]x"#,               // text after the value
            r#"[1,]"#,
            r#"{"a"}"#,
            r#"tru"#,
            r#""open"#,
        ] {
            assert!(!is_canonical(no.as_bytes()), "{no}");
        }
        assert_eq!(canonical_text(b" \n{\"a\":1}\r\n"), Some(&b"{\"a\":1}"[..]));
        assert_eq!(canonical_text(b" \n"), None);
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(is_canonical(deep(MAX_CHECKED_DEPTH).as_bytes()));
        assert!(!is_canonical(deep(MAX_CHECKED_DEPTH + 1).as_bytes()));
        assert!(!is_canonical(b"[\"\xff\"]"), "not UTF-8");
    }

    /// Values this module writes itself: names in ASCII, integers up to 2^53.
    fn arb_plain_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-(MAX_EXACT as i64)..=MAX_EXACT as i64).prop_map(Value::from),
            any::<String>().prop_map(Value::String),
            PLAIN_RUNS.prop_map(Value::String),
        ];
        nested(leaf, "[ -~&&[^\"\\\\]]{0,4}", 4, 48, 6)
    }

    fn arb_small_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-20i64..=20).prop_map(Value::from),
            "[ab\\\\\"\\x00-\\x02]{0,3}".prop_map(Value::String),
        ];
        nested(leaf, "[a-c]{0,2}", 3, 16, 4)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// What this module writes of such a value is recognised as canonical.
        #[test]
        fn written_text_is_recognised(v in arb_plain_value()) {
            prop_assert!(is_canonical(&canonical(&v).unwrap()));
        }

        /// The law the fast readers rest on: a text recognised as canonical reads (strictly)
        /// and writes back as the same bytes. Checked on canonical texts of small values
        /// (few names, small numbers, so that edits make repeated or disordered names, signed
        /// zeros and leading zeros) with up to two bytes inserted, replaced or removed.
        #[test]
        fn recognised_text_is_its_own_canonical_form(
            v in arb_small_value(),
            edits in prop::collection::vec(
                (
                    any::<prop::sample::Index>(),
                    prop_oneof![
                        any::<u8>(),
                        prop::sample::select(b" ,:{}[]\"\\-0159abcetnu".to_vec()),
                    ],
                    0..3u8,
                ),
                1..3,
            ),
        ) {
            let mut text = canonical(&v).unwrap();
            for (at, byte, edit) in edits {
                let i = at.index(text.len() + 1);
                match edit {
                    0 => text.insert(i, byte),
                    1 if i < text.len() => text[i] = byte,
                    _ if i < text.len() => {
                        text.remove(i);
                    }
                    _ => {}
                }
            }
            if is_canonical(&text) {
                let read = crate::json::parse_strict(&text);
                prop_assert!(read.is_ok(), "{:?} passed but does not read", String::from_utf8_lossy(&text));
                prop_assert_eq!(canonical(&read.unwrap()).unwrap(), text);
            }
        }
    }
}
