//! The byte cap on a tool result: the same `ELENCH_MAX_OUTPUT_BYTES` (`elench::bytecap`, read
//! once, when the server starts) that bounds the command line's JSON, cut the same way
//! (`elench::bytecap::cut`), so that one call cannot pour megabytes into an agent's context.
//!
//! A result over the cap is cut to whole JSON, never mid-value: first its page loses items
//! from the end (at least one is kept, so that a cursor always moves on), and `pagination`
//! says where the next page starts; what is still too large (a result with no page, or one
//! item larger than the cap) has its larger lists cut and its long texts shortened with
//! `…`. A cut result carries `truncation` (`cap`, `size`: the whole result's bytes, `hint`:
//! how to get the rest) and the warning `RESPONSE_TRUNCATED`.

use super::schemas::{Truncation, Warning};
use elench::ops::page::Pagination;
use serde_json::{json, Value};

/// Where a result's page of items is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Items {
    /// The array at this JSON pointer.
    At(&'static str),
    /// `blast`: its members layer by layer (`layers[].claims[]`, the root first), then
    /// `affected`.
    Blast,
}

/// A result's page: where its items are, and the cursor that starts at each of them.
#[derive(Debug, Clone)]
pub struct Page {
    pub items: Items,
    pub cursors: Vec<String>,
}

/// How many items of the page `v` holds.
pub fn count(v: &Value, items: Items) -> usize {
    match items {
        Items::At(ptr) => v.pointer(ptr).and_then(Value::as_array).map_or(0, Vec::len),
        Items::Blast => {
            let members: usize = v["layers"]
                .as_array()
                .map_or(0, |ls| ls.iter().map(|l| len(&l["claims"])).sum());
            members + len(&v["affected"])
        }
    }
}

/// The JSON bytes of each item of the page `v`, in order.
fn item_sizes(v: &Value, items: Items) -> Vec<usize> {
    let of = |a: &Value| -> Vec<usize> {
        a.as_array()
            .map_or_else(Vec::new, |xs| xs.iter().map(size).collect())
    };
    match items {
        Items::At(ptr) => v.pointer(ptr).map_or_else(Vec::new, of),
        Items::Blast => {
            let mut sizes: Vec<usize> = v["layers"].as_array().map_or_else(Vec::new, |ls| {
                ls.iter().flat_map(|l| of(&l["claims"])).collect()
            });
            sizes.extend(of(&v["affected"]));
            sizes
        }
    }
}

fn len(v: &Value) -> usize {
    v.as_array().map_or(0, Vec::len)
}

/// Keeps the items `start..end` of the page `v` (positions past its end are ignored).
pub fn keep(v: &mut Value, items: Items, start: usize, end: usize) {
    match items {
        Items::At(ptr) => {
            if let Some(Value::Array(a)) = v.pointer_mut(ptr) {
                keep_part(a, 0, start, end);
            }
        }
        Items::Blast => {
            // The members layer by layer, then the affected claims: one numbering.
            let mut at = 0;
            if let Some(Value::Array(layers)) = v.get_mut("layers") {
                for layer in layers.iter_mut() {
                    if let Some(Value::Array(claims)) = layer.get_mut("claims") {
                        at += keep_part(claims, at, start, end);
                    }
                }
                // A layer with none of the page's members is left out.
                layers.retain(|l| len(&l["claims"]) > 0);
            }
            if let Some(Value::Array(affected)) = v.get_mut("affected") {
                keep_part(affected, at, start, end);
            }
        }
    }
}

/// Keeps of `part`, whose first item is item `at` of the whole, the items that fall in
/// `start..end` of the whole; returns how many `part` had.
fn keep_part(part: &mut Vec<Value>, at: usize, start: usize, end: usize) -> usize {
    let n = part.len();
    let e = end.saturating_sub(at).min(n);
    let s = start.saturating_sub(at).min(e);
    part.truncate(e);
    part.drain(..s);
    n
}

/// The window `cursor..cursor+limit` of a list of `len` items that the library gives whole
/// (`status` of given ids, `blast`): its bounds and pagination. No limit: to the end.
pub fn window(
    len: usize,
    limit: Option<usize>,
    cursor: Option<&str>,
) -> Result<(usize, usize, Pagination), elench::ops::Failure> {
    let start = match cursor {
        None => 0,
        Some(c) => match c.parse::<usize>() {
            // A cursor names an item; past the end is no cursor this list gave.
            Ok(n) if n < len => n,
            _ => {
                return Err(elench::ops::Failure::usage(
                    Some(elench::ops::error::Param::Cursor),
                    format!(
                        "cursor {c:?} is not a next_cursor of this list ({len} item(s)); give the \
                     next_cursor of the previous page, with the other arguments as they were"
                    ),
                ))
            }
        },
    };
    let end = match limit {
        Some(l) => start.saturating_add(l).min(len),
        None => len,
    };
    let next = (end < len).then_some(end as u64);
    Ok((
        start,
        end,
        Pagination::new(end - start, Some(len as u64), next),
    ))
}

fn size(v: &Value) -> usize {
    elench::bytecap::json_size(v).unwrap_or(usize::MAX)
}

/// Strings at most this long are never shortened: ids, digests, keyids, enum values.
const SHORT_TEXT: usize = 96;
/// Lists smaller than this many bytes are never cut (a `range`, a list of two ids).
const SMALL_LIST: usize = 256;

/// `v` (a successful result, `warnings` included) within `cap` bytes, or `None` when even cut
/// down it does not fit. `tool` and `whole` (how to get a result that has no page whole)
/// word the hint.
pub fn fit(
    v: Value,
    cap: Option<usize>,
    page: Option<&Page>,
    tool: &str,
    whole: &str,
) -> Option<Value> {
    let Some(cap) = cap else { return Some(v) };
    let full = size(&v);
    if full <= cap {
        return Some(v);
    }
    // Fewer items of the page: the most that fit, and at least one.
    let paged = page.filter(|p| count(&v, p.items) > 0 && count(&v, p.items) == p.cursors.len());
    if let Some(p) = paged {
        // Each item costs at least its own bytes: no more than fit alone are ever kept,
        // which keeps the search below to a value about the cap's size.
        let mut hi = 0;
        let mut used = 0;
        for bytes in item_sizes(&v, p.items) {
            used += bytes;
            if used > cap {
                break;
            }
            hi += 1;
        }
        let hi = hi.max(1);
        let mut v = v;
        keep(&mut v, p.items, 0, hi);
        let cut_page = |n: usize| {
            let mut r = v.clone();
            keep(&mut r, p.items, 0, n);
            let hint = match p.cursors.get(n) {
                Some(next) => format!(
                    "{n} of this page's {} item(s) fit the server's cap of {cap} bytes \
                     (ELENCH_MAX_OUTPUT_BYTES when it started); call {tool} again with cursor \
                     {next:?} and the other arguments as they were for the rest",
                    p.cursors.len()
                ),
                None => String::new(),
            };
            if let Some(next) = p.cursors.get(n) {
                let pg = &mut r["pagination"];
                if pg.is_object() {
                    pg["returned"] = json!(n);
                    pg["truncated"] = json!(true);
                    pg["has_more"] = json!(true);
                    pg["next_cursor"] = json!(next);
                }
            }
            (r, hint)
        };
        let (mut lo, mut hi) = (1, hi);
        // The largest n in 1..=hi whose result fits; 1 when none does.
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            let (mut r, hint) = cut_page(mid);
            mark(&mut r, cap, full, &hint);
            if size(&r) <= cap {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let (mut r, hint) = cut_page(lo);
        let mut probe = r.clone();
        mark(&mut probe, cap, full, &hint);
        if size(&probe) <= cap {
            return Some(probe);
        }
        // One item is larger than the cap: shorten it (and whatever else is large).
        let shortened = format!(
            "the one item here is larger than the server's cap of {cap} bytes \
             (ELENCH_MAX_OUTPUT_BYTES when it started), so its long texts or lists were \
             shortened (…): {whole}"
        );
        let hint = if hint.is_empty() {
            shortened
        } else {
            format!("{hint}; {shortened}")
        };
        return shrink(&mut r, cap, full, &hint).then_some(r);
    }
    let mut r = v;
    let hint = format!(
        "the result is larger than the server's cap of {cap} bytes (ELENCH_MAX_OUTPUT_BYTES \
         when it started), so its longer lists lost items from their end and its long texts \
         were shortened (…): {whole}"
    );
    shrink(&mut r, cap, full, &hint).then_some(r)
}

/// Adds `truncation` and the `RESPONSE_TRUNCATED` warning.
fn mark(v: &mut Value, cap: usize, full: usize, hint: &str) {
    v["truncation"] = json!(Truncation {
        cap,
        size: full,
        hint: hint.to_owned(),
    });
    if let Some(ws) = v["warnings"].as_array_mut() {
        ws.push(json!(Warning {
            code: elench::error::Code::ResponseTruncated.as_str().to_owned(),
            message: format!(
                "the result was cut to the server's {cap}-byte cap (ELENCH_MAX_OUTPUT_BYTES); \
                 truncation.hint says how to get the rest"
            ),
        }));
    }
}

/// How a tool result is cut once its page is: any list of some size keeps at least one
/// item, and ids, digests and enum values are never shortened.
const RULES: elench::bytecap::Rules = elench::bytecap::Rules {
    lists: &[""],
    texts: &[""],
    keep: 1,
    small_list: SMALL_LIST,
    short_text: SHORT_TEXT,
    steps: 4096,
};

/// Cuts the largest lists (never below one item) and then shortens the longest texts of `v`
/// until it and its marks fit `cap` ([`elench::bytecap::cut`]). False when they cannot.
fn shrink(v: &mut Value, cap: usize, full: usize, hint: &str) -> bool {
    let mut marked = v.clone();
    mark(&mut marked, cap, full, hint);
    // The marks' own bytes, counted once: cutting never changes them.
    let overhead = size(&marked).saturating_sub(size(v));
    let budget = cap.saturating_sub(overhead);
    match elench::bytecap::cut(v, budget, &RULES) {
        (elench::bytecap::End::Fits, _) => {
            mark(v, cap, full, hint);
            size(v) <= cap
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_page(n: usize) -> (Value, Page) {
        let entries: Vec<Value> = (0..n)
            .map(|i| json!({"seq": i, "text": "x".repeat(50)}))
            .collect();
        let v = json!({
            "entries": entries,
            "pagination": {"total": n + 5, "returned": n, "truncated": true,
                           "has_more": true, "next_cursor": (n + 100).to_string()},
            "warnings": []
        });
        let cursors = (100..100 + n).map(|i| i.to_string()).collect();
        (
            v,
            Page {
                items: Items::At("/entries"),
                cursors,
            },
        )
    }

    #[test]
    fn a_page_over_the_cap_keeps_the_items_that_fit_and_its_cursor_goes_on() {
        let (v, page) = log_page(200);
        let out = fit(v.clone(), Some(4000), Some(&page), "log", "").unwrap();
        let bytes = serde_json::to_vec(&out).unwrap().len();
        assert!(bytes <= 4000, "{bytes}");
        let kept = out["entries"].as_array().unwrap().len();
        assert!(kept > 10 && kept < 200, "{kept}");
        assert_eq!(out["pagination"]["returned"], json!(kept));
        assert_eq!(
            out["pagination"]["next_cursor"],
            json!((100 + kept).to_string())
        );
        assert_eq!(out["pagination"]["total"], json!(205));
        assert_eq!(out["warnings"][0]["code"], "RESPONSE_TRUNCATED");
        assert!(out["truncation"]["hint"]
            .as_str()
            .unwrap()
            .contains(&format!("cursor \"{}\"", 100 + kept)));
        // The most that fit: one more would not.
        let mut more = v.clone();
        keep(&mut more, page.items, 0, kept + 1);
        assert!(serde_json::to_vec(&more).unwrap().len() > 4000 - 400);
        // Under the cap, or with none, nothing changes.
        assert_eq!(
            fit(v.clone(), Some(1 << 20), Some(&page), "log", ""),
            Some(v.clone())
        );
        assert_eq!(fit(v.clone(), None, Some(&page), "log", ""), Some(v));
    }

    #[test]
    fn one_item_larger_than_the_cap_is_shortened_and_still_moves_on() {
        let v = json!({
            "entries": [{"seq": 0, "text": "é".repeat(5000)}, {"seq": 1, "text": "b"}],
            "pagination": {"total": 2, "returned": 2, "truncated": false,
                           "has_more": false, "next_cursor": null},
            "warnings": []
        });
        let page = Page {
            items: Items::At("/entries"),
            cursors: vec!["0".into(), "1".into()],
        };
        let out = fit(v, Some(1024), Some(&page), "log", "whole").unwrap();
        assert!(serde_json::to_vec(&out).unwrap().len() <= 1024);
        assert_eq!(out["entries"].as_array().unwrap().len(), 1);
        assert!(out["entries"][0]["text"].as_str().unwrap().ends_with('…'));
        assert_eq!(out["pagination"]["next_cursor"], "1");
    }

    #[test]
    fn texts_just_over_the_short_length_do_not_hold_the_cut_up() {
        // Many texts of 97 to 99 bytes: shortening them would not make them shorter, so
        // they are left, and the lists are what is cut.
        let rows: Vec<Value> = (0..100).map(|_| json!({"t": "x".repeat(98)})).collect();
        let v = json!({"rows": rows, "warnings": []});
        let out = fit(v, Some(2048), None, "t", "").unwrap();
        assert!(serde_json::to_vec(&out).unwrap().len() <= 2048);
        assert!(out["rows"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["t"].as_str().unwrap().len() == 98));
        // One text of 99 bytes that alone is over: TOO_LARGE is the answer, not a loop.
        let v = json!({"t": "y".repeat(99), "warnings": []});
        assert_eq!(fit(v, Some(64), None, "t", ""), None);
    }

    #[test]
    fn a_result_with_no_page_loses_list_items_but_never_ids() {
        let id = format!("cl_{}", "a".repeat(64));
        let violations: Vec<Value> = (0..300)
            .map(|_| json!({"id": id, "message": "m".repeat(40)}))
            .collect();
        let v = json!({"pass": false, "violations": violations, "warnings": []});
        let out = fit(v, Some(2048), None, "gate", "ask the command line").unwrap();
        assert!(serde_json::to_vec(&out).unwrap().len() <= 2048);
        let kept = out["violations"].as_array().unwrap();
        assert!(!kept.is_empty() && kept.len() < 300);
        assert!(kept.iter().all(|x| x["id"] == json!(id)));
        assert_eq!(out["pass"], json!(false));
        assert!(out["truncation"]["hint"]
            .as_str()
            .unwrap()
            .ends_with("ask the command line"));
    }

    #[test]
    fn blast_pages_are_members_layer_by_layer_then_affected() {
        let v = json!({
            "layers": [
                {"depth": 0, "claims": [{"id": "r"}]},
                {"depth": 1, "claims": [{"id": "a"}, {"id": "b"}]},
                {"depth": 2, "claims": [{"id": "c"}]}
            ],
            "affected": [{"id": "x"}, {"id": "y"}]
        });
        assert_eq!(count(&v, Items::Blast), 6);
        let mut w = v.clone();
        keep(&mut w, Items::Blast, 2, 5);
        assert_eq!(
            w,
            json!({
                "layers": [
                    {"depth": 1, "claims": [{"id": "b"}]},
                    {"depth": 2, "claims": [{"id": "c"}]}
                ],
                "affected": [{"id": "x"}]
            })
        );
        let (s, e, p) = window(6, Some(4), Some("2")).unwrap();
        assert_eq!((s, e), (2, 6));
        assert_eq!(p.next_cursor, None);
        let (_, e, p) = window(6, Some(3), None).unwrap();
        assert_eq!((e, p.next_cursor.as_deref()), (3, Some("3")));
        assert!(window(6, None, Some("6")).is_err());
        assert!(window(6, None, Some("x")).is_err());
    }
}
