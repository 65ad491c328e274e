//! The command line's byte cap on its JSON answer (`ELENCH_MAX_OUTPUT_BYTES`): the envelope
//! is cut to whole JSON and `meta` says what was cut and how to get the rest.

use super::{push_warning, Warning};
use serde_json::{json, Value};

/// The cap in force (`None`: no cap), and a warning when `ELENCH_MAX_OUTPUT_BYTES` is not
/// a number of bytes (the default applies then). `elench mcp` reads it once, at start.
pub(crate) fn output_cap() -> (Option<usize>, Option<Warning>) {
    let (cap, bad) = elench::bytecap::from_env();
    (cap, bad.map(|m| Warning::new("BAD_ENVIRONMENT", m)))
}

fn json_len(v: &Value) -> usize {
    elench::bytecap::json_size(v).unwrap_or(0)
}

/// How the command line cuts its envelope: lists in `data` (then in `warnings`) down to none,
/// then texts in `data`, to any length.
const RULES: elench::bytecap::Rules = elench::bytecap::Rules {
    lists: &["/data", "/warnings"],
    texts: &["/data"],
    keep: 0,
    small_list: 0,
    short_text: 0,
    steps: 64,
};

/// Cuts the response to at most `cap` bytes (REQ-F-052): the largest list in `data` loses
/// items from its end (then the next largest, then the longest strings), and `meta` says
/// so: `truncated`, `total_count`, `returned_count` and `truncation_hint`, the command line
/// that gets the rest. When the list cut is a page (`cursors` has a cursor for each of its
/// items), `meta.pagination` is brought in line: its `next_cursor` continues right after the
/// last item returned.
pub(super) fn enforce_cap(envelope: &mut Value, cap: usize, cursors: &[String]) {
    let full = json_len(envelope);
    if full <= cap {
        return;
    }
    let original = envelope.clone();
    // Cut to a budget that leaves room for what is added below; if the result is still too
    // large, cut again from the original with less.
    let mut budget = cap.saturating_sub(320);
    for _ in 0..8 {
        *envelope = original.clone();
        let first_cut = cut_to(envelope, budget);
        annotate_cut(envelope, cap, full, first_cut, cursors);
        let len = json_len(envelope);
        if len <= cap {
            return;
        }
        budget = budget.saturating_sub(len - cap + 16);
    }
}

/// Cuts `data` (then `warnings`) until the envelope is at most `budget` bytes
/// ([`elench::bytecap::cut`]); with nothing left to cut, `data` goes. Returns the first
/// list cut: its pointer, its length, and how many items it kept.
fn cut_to(envelope: &mut Value, budget: usize) -> Option<(String, usize, usize)> {
    let (end, first) = elench::bytecap::cut(envelope, budget, &RULES);
    if end == elench::bytecap::End::NothingToCut {
        envelope["data"] = Value::Null;
    }
    first.map(|c| (c.pointer, c.before, c.kept))
}

/// The `meta` members and the warning that say a response was cut.
fn annotate_cut(
    envelope: &mut Value,
    cap: usize,
    full: usize,
    first_cut: Option<(String, usize, usize)>,
    cursors: &[String],
) {
    let cut_list = first_cut
        .as_ref()
        .is_some_and(|(ptr, _, _)| ptr.starts_with("/data"));
    let (before, kept) = first_cut.map_or((0, 0), |(_, b, k)| (b, k));
    let meta = &mut envelope["meta"];
    meta["truncated"] = json!(true);
    let mut hint = None;
    if cut_list {
        let total = meta["pagination"]["total"]
            .as_u64()
            .unwrap_or(before as u64);
        meta["total_count"] = json!(total);
        meta["returned_count"] = json!(kept);
        let page = meta.get_mut("pagination").filter(|p| p.is_object());
        let next = cursors.get(kept).filter(|_| cursors.len() == before);
        if let (Some(p), Some(next)) = (page, next) {
            p["returned"] = json!(kept);
            p["truncated"] = json!(true);
            p["has_more"] = json!(true);
            p["next_cursor"] = json!(next);
            hint = Some(page_hint(kept.max(1), next));
        }
    }
    let hint = hint.unwrap_or_else(|| {
        // No page to turn: the same command with a cap that fits the whole answer.
        let needed = full.div_ceil(1024) * 1024 + 4096;
        format!("ELENCH_MAX_OUTPUT_BYTES={needed} {}", command_line(&[]))
    });
    meta["truncation_hint"] = json!(hint);
    push_warning(
        envelope,
        Warning::new(
            "RESPONSE_TRUNCATED",
            format!(
                "the response was cut to the {cap}-byte cap (ELENCH_MAX_OUTPUT_BYTES); \
                 meta.truncation_hint gets the rest"
            ),
        ),
    );
}

/// This invocation's command line with `--limit` and `--cursor` set for the next page.
fn page_hint(limit: usize, cursor: &str) -> String {
    let mut args: Vec<String> = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        if a == "--limit" || a == "--cursor" {
            it.next();
            continue;
        }
        if a.starts_with("--limit=") || a.starts_with("--cursor=") {
            continue;
        }
        args.push(a);
    }
    args.extend([
        "--limit".into(),
        limit.to_string(),
        "--cursor".into(),
        cursor.to_owned(),
    ]);
    command_line(&args)
}

/// `elench` and the arguments (this invocation's when `args` is empty), quoted for a shell.
fn command_line(args: &[String]) -> String {
    let own: Vec<String>;
    let args = if args.is_empty() {
        own = std::env::args().skip(1).collect();
        &own
    } else {
        args
    };
    let mut line = String::from("elench");
    for a in args {
        line.push(' ');
        line.push_str(&shell_quote(a));
    }
    line
}

fn shell_quote(a: &str) -> String {
    let plain = !a.is_empty()
        && a.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@%+".contains(&b));
    if plain {
        a.to_owned()
    } else {
        format!("'{}'", a.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_cap_cuts_the_largest_list_and_says_so() {
        let items: Vec<Value> = (0..1000)
            .map(|i| json!({"id": i, "pad": "x".repeat(100)}))
            .collect();
        let mut env = json!({
            "ok": true, "data": {"entries": items}, "error": null, "warnings": [],
            "meta": {"exit_code": 0, "pagination": {"total": 5000, "returned": 1000,
                     "truncated": true, "has_more": true, "next_cursor": "1500"}}
        });
        let cursors: Vec<String> = (500..1500).map(|i: u32| i.to_string()).collect();
        enforce_cap(&mut env, 20_000, &cursors);
        assert!(json_len(&env) <= 20_000, "{}", json_len(&env));
        let kept = env["data"]["entries"].as_array().unwrap().len();
        assert!(kept > 50 && kept < 1000, "{kept}");
        assert_eq!(env["meta"]["truncated"], true);
        assert_eq!(env["meta"]["total_count"], 5000);
        assert_eq!(env["meta"]["returned_count"], kept);
        let p = &env["meta"]["pagination"];
        assert_eq!(p["returned"], kept);
        assert_eq!(p["next_cursor"], json!((500 + kept).to_string()));
        let hint = env["meta"]["truncation_hint"].as_str().unwrap();
        assert!(
            hint.ends_with(&format!("--limit {kept} --cursor {}", 500 + kept)),
            "{hint}"
        );
        assert_eq!(env["warnings"][0]["code"], "RESPONSE_TRUNCATED");
    }

    #[test]
    fn the_cap_shortens_a_lone_long_string() {
        let mut env = json!({"ok": true, "data": {"text": "y".repeat(50_000)}, "error": null,
                             "warnings": [], "meta": {"exit_code": 0}});
        enforce_cap(&mut env, 10_000, &[]);
        assert!(json_len(&env) <= 10_000);
        assert!(env["data"]["text"].as_str().unwrap().ends_with('…'));
        assert!(env["meta"]["truncation_hint"]
            .as_str()
            .unwrap()
            .starts_with("ELENCH_MAX_OUTPUT_BYTES="));
    }
}
