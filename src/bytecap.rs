//! The byte cap on what elench answers (`ELENCH_MAX_OUTPUT_BYTES`), in one place for both
//! front ends: the cap read from the environment (the CLI per command, the MCP server once
//! at start), and the pieces both cut with: a value's JSON size, the heaviest value under a
//! JSON pointer, and a text shortened with `…` on a character boundary. How each front end
//! cuts (the CLI's envelope and `meta`, a tool result's page and `truncation`) stays its own.

use serde_json::Value;

/// The largest JSON answer elench writes unless `ELENCH_MAX_OUTPUT_BYTES` says otherwise.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 1 << 20;
/// The smallest cap `ELENCH_MAX_OUTPUT_BYTES` can set: room for the envelope's own members
/// and the truncation notice.
pub const MIN_MAX_OUTPUT_BYTES: usize = 1024;

/// The cap `ELENCH_MAX_OUTPUT_BYTES` sets (`None`: no cap), or, when it is not a number of
/// bytes, the default and the message of the warning that says so.
pub fn from_env() -> (Option<usize>, Option<String>) {
    match std::env::var("ELENCH_MAX_OUTPUT_BYTES") {
        Err(_) => (Some(DEFAULT_MAX_OUTPUT_BYTES), None),
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(0) => (None, None),
            Ok(n) => (Some(n.max(MIN_MAX_OUTPUT_BYTES)), None),
            Err(_) => (
                Some(DEFAULT_MAX_OUTPUT_BYTES),
                Some(format!(
                    "ELENCH_MAX_OUTPUT_BYTES={v:?} is not a number of bytes; the default \
                     {DEFAULT_MAX_OUTPUT_BYTES} applies"
                )),
            ),
        },
    }
}

/// The bytes of `v`'s JSON, `None` when it cannot be written.
pub fn json_size(v: &Value) -> Option<usize> {
    serde_json::to_vec(v).ok().map(|b| b.len())
}

/// The JSON pointer of the value under `v` (`at` being its pointer) that `weigh` weighs
/// most, and its weight; among equals, the first in document order (parents before their
/// children).
pub fn heaviest(
    v: &Value,
    at: &str,
    weigh: &dyn Fn(&Value) -> Option<usize>,
) -> Option<(String, usize)> {
    let mut best: Option<(String, usize)> = weigh(v).map(|w| (at.to_owned(), w));
    let children: Vec<(String, &Value)> = match v {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, x)| (format!("{at}/{i}"), x))
            .collect(),
        Value::Object(m) => m
            .iter()
            .map(|(k, x)| (format!("{at}/{}", crate::json::escape_token(k)), x))
            .collect(),
        _ => Vec::new(),
    };
    for (ptr, child) in children {
        if let Some((p, w)) = heaviest(child, &ptr, weigh) {
            if best.as_ref().is_none_or(|(_, b)| w > *b) {
                best = Some((p, w));
            }
        }
    }
    best
}

/// `s` cut to at most `keep` bytes (less, to end on a character boundary) and `…` added.
pub fn shorten(s: &mut String, keep: usize) {
    let mut keep = keep.min(s.len());
    while !s.is_char_boundary(keep) {
        keep -= 1;
    }
    s.truncate(keep);
    s.push('…');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_heaviest_is_the_first_of_equals() {
        let v = json!({"a": [1, 2], "b": {"c": [3, 4]}, "d": [5, 6, 7]});
        let arrays = |x: &Value| x.as_array().map(Vec::len);
        assert_eq!(heaviest(&v, "", &arrays), Some(("/d".into(), 3)));
        let v = json!({"a": [1, 2], "b": {"c": [3, 4]}});
        assert_eq!(heaviest(&v, "/data", &arrays), Some(("/data/a".into(), 2)));
    }

    #[test]
    fn shortening_ends_on_a_character() {
        let mut s = "aé".to_owned();
        shorten(&mut s, 2);
        assert_eq!(s, "a…");
    }
}
