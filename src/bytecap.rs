//! The byte cap on what elench answers (`ELENCH_MAX_OUTPUT_BYTES`), in one place for both
//! front ends: the cap read from the environment (the CLI per command, the MCP server once
//! at start), and the one way an answer is cut to it ([`cut`]): the heaviest list loses
//! items from its end, then the longest text is shortened with `…`, always to whole JSON.
//! Each front end gives its [`Rules`] (where to cut, what never to cut) and words the cut
//! its own way (the CLI's `meta`, a tool result's page and `truncation`).

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

/// How an answer may be cut.
#[derive(Debug, Clone, Copy)]
pub struct Rules<'a> {
    /// The JSON pointers under which lists may lose items, in order: the heaviest list under
    /// the first that holds one is cut.
    pub lists: &'a [&'a str],
    /// The JSON pointers under which texts may be shortened.
    pub texts: &'a [&'a str],
    /// Items a list always keeps (a list no longer than this is never cut).
    pub keep: usize,
    /// Lists of fewer bytes than this are never cut (a `range`, a pair of ids).
    pub small_list: usize,
    /// Texts are never shortened below this many bytes (ids, digests, enum values).
    pub short_text: usize,
    /// The most cuts tried.
    pub steps: usize,
}

/// The first list [`cut`] shortened: its pointer, how many items it had, how many it kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListCut {
    pub pointer: String,
    pub before: usize,
    pub kept: usize,
}

/// How [`cut`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The value fits the budget.
    Fits,
    /// Nothing the rules allow is left to cut, and it does not fit.
    NothingToCut,
    /// The rules' steps ran out before it fit.
    OutOfSteps,
}

/// Cuts `v` until its JSON takes at most `budget` bytes: each step, the heaviest list the
/// rules allow keeps the longest run of its first items that fits (never fewer than
/// `rules.keep`, always at least one fewer), or, with no list to cut, the longest text is
/// shortened by the excess (never below `rules.short_text`). Returns how it ended and the
/// first list cut.
pub fn cut(v: &mut Value, budget: usize, rules: &Rules) -> (End, Option<ListCut>) {
    let size = |x: &Value| json_size(x).unwrap_or(usize::MAX);
    let mut first: Option<ListCut> = None;
    for _ in 0..rules.steps {
        let now = size(v);
        if now <= budget {
            return (End::Fits, first);
        }
        let over = now - budget;
        let list = |x: &Value| match x {
            Value::Array(a) if a.len() > rules.keep => {
                Some(size(x)).filter(|s| *s >= rules.small_list)
            }
            _ => None,
        };
        if let Some((ptr, list_size)) = heaviest_under(v, rules.lists, &list) {
            let Some(Value::Array(items)) = v.pointer_mut(&ptr) else {
                break;
            };
            let before = items.len();
            // The longest run of first items whose list, brackets and commas, fits the room.
            let room = budget.saturating_sub(now - list_size);
            let mut used = 2;
            let mut kept = 0;
            for item in items.iter() {
                let n = size(item).saturating_add(usize::from(kept > 0));
                if used + n > room {
                    break;
                }
                used += n;
                kept += 1;
            }
            let kept = kept.max(rules.keep).min(before - 1);
            items.truncate(kept);
            match &mut first {
                None => {
                    first = Some(ListCut {
                        pointer: ptr,
                        before,
                        kept,
                    })
                }
                Some(f) if f.pointer == ptr => f.kept = kept,
                Some(_) => {}
            }
            continue;
        }
        // Longer than a shortened text (`short_text` and `…`), so each step makes one shorter.
        let text = |x: &Value| match x {
            Value::String(s) if s.len() > rules.short_text + 3 => Some(s.len()),
            _ => None,
        };
        let Some((ptr, n)) = heaviest_under(v, rules.texts, &text) else {
            return (End::NothingToCut, first);
        };
        if let Some(Value::String(s)) = v.pointer_mut(&ptr) {
            // `…` is 3 bytes; escapes can make the JSON longer than the text, so go on.
            shorten(s, n.saturating_sub(over + 3).max(rules.short_text));
        }
    }
    if size(v) <= budget {
        return (End::Fits, first);
    }
    (End::OutOfSteps, first)
}

/// [`heaviest`] under the first of `pointers` that holds anything `weigh` weighs.
fn heaviest_under(
    v: &Value,
    pointers: &[&str],
    weigh: &dyn Fn(&Value) -> Option<usize>,
) -> Option<(String, usize)> {
    pointers
        .iter()
        .find_map(|p| v.pointer(p).and_then(|x| heaviest(x, p, weigh)))
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
    fn a_cut_keeps_the_longest_run_that_fits_then_shortens_texts() {
        let rules = Rules {
            lists: &["/a"],
            texts: &[""],
            keep: 1,
            small_list: 0,
            short_text: 4,
            steps: 100,
        };
        let mut v = json!({"a": {"l": [1, 2, 3, 4, 5, 6]}, "t": "x".repeat(40)});
        let whole = json_size(&v).unwrap();
        let (end, first) = cut(&mut v, whole - 6, &rules);
        assert_eq!(end, End::Fits);
        // Six items less three (and their commas) fit: 1,2,3 stay.
        assert_eq!(v["a"]["l"], json!([1, 2, 3]));
        let first = first.unwrap();
        assert_eq!(
            (first.pointer.as_str(), first.before, first.kept),
            ("/a/l", 6, 3)
        );
        // The list at its floor: the text is what gives.
        let budget = json_size(&v).unwrap() - 20;
        let (end, _) = cut(&mut v, budget, &rules);
        assert_eq!(end, End::Fits);
        assert_eq!(v["a"]["l"], json!([1]));
        assert!(v["t"].as_str().unwrap().ends_with('…'));
        // Nothing the rules allow is left.
        assert_eq!(cut(&mut v, 5, &rules).0, End::NothingToCut);
    }

    #[test]
    fn shortening_ends_on_a_character() {
        let mut s = "aé".to_owned();
        shorten(&mut s, 2);
        assert_eq!(s, "a…");
    }
}
