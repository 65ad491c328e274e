//! Rows for pipelines: `--format jsonl` (one object a line, then a summary line) and `tsv`.

use super::escapes::terminal_safe;
use serde_json::{json, Value};

/// The last line of a successful `jsonl` answer, the CLI Agent Spec's stream summary
/// (REQ-O-004): `_summary: true`, how many rows came before it, a list page's pagination
/// (`total`, `returned`, `truncated`, `has_more`, `next_cursor`), the exit code and the
/// duration. A reader of rows learns that the answer is whole and where the next page
/// starts; a failure ends on the error envelope instead.
pub(super) fn summary_line(envelope: &Value, rows: usize) -> Value {
    let mut summary = json!({"_summary": true, "rows": rows});
    if let Some(page) = envelope["meta"]["pagination"].as_object() {
        for (k, v) in page {
            summary[k] = v.clone();
        }
    }
    summary["exit_code"] = envelope["meta"]["exit_code"].clone();
    summary["duration_ms"] = envelope["meta"]["duration_ms"].clone();
    summary
}

/// The rows of a result: the items of its list (the longest array of objects at the top of
/// `data`), or `data` itself as one row. A page of a list command (`list`) has rows even
/// when they are none.
pub fn rows(data: &Value, list: bool) -> Vec<Value> {
    match data {
        Value::Null => Vec::new(),
        Value::Array(items) => items.clone(),
        // A result that is one list (`{"remotes": [...]}`) has its items as rows, none when
        // it is empty.
        Value::Object(m)
            if m.len() == 1
                && m.values()
                    .all(|v| v.as_array().is_some_and(|a| a.iter().all(Value::is_object))) =>
        {
            m.values()
                .next()
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        }
        Value::Object(m) => {
            let longest = m
                .values()
                .filter_map(Value::as_array)
                .filter(|a| a.iter().all(Value::is_object))
                .filter(|a| list || !a.is_empty())
                .fold(None::<&Vec<Value>>, |best, a| match best {
                    Some(b) if b.len() >= a.len() => Some(b),
                    _ => Some(a),
                });
            match longest {
                Some(items) => items.clone(),
                None => vec![data.clone()],
            }
        }
        other => vec![other.clone()],
    }
}

/// Rows as tab-separated values: a header of every member name (in order of first
/// appearance), then one line a row. Strings are written as they are (tabs and newlines as
/// `\t` and `\n`), other values as JSON; a missing member is empty.
pub fn tsv(rows: &[Value]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut header: Vec<String> = Vec::new();
    for r in rows {
        match r {
            Value::Object(m) => {
                for k in m.keys() {
                    if !header.contains(k) {
                        header.push(k.clone());
                    }
                }
            }
            _ if !header.iter().any(|h| h == "value") => header.push("value".into()),
            _ => {}
        }
    }
    // Tab and line feed written as escapes; no other control character survives.
    let cell = |v: Option<&Value>| match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => terminal_safe(
            &s.replace('\\', "\\\\")
                .replace('\t', "\\t")
                .replace('\n', "\\n"),
            false,
        ),
        Some(other) => other.to_string(),
    };
    let mut out = header
        .iter()
        .map(|h| cell(Some(&Value::String(h.clone()))))
        .collect::<Vec<_>>()
        .join("\t");
    out.push('\n');
    for r in rows {
        let line: Vec<String> = header
            .iter()
            .map(|h| match r {
                Value::Object(m) => cell(m.get(h)),
                other if h == "value" => cell(Some(other)),
                _ => String::new(),
            })
            .collect();
        out.push_str(&line.join("\t"));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rows_and_tsv() {
        let data = json!({"count": 2, "claims": [{"id": "a", "n": 1}, {"id": "b\tc", "x": [1]}]});
        let r = rows(&data, false);
        assert_eq!(r.len(), 2);
        assert_eq!(tsv(&r), "id\tn\tx\na\t1\t\nb\\tc\t\t[1]\n");
        let one = json!({"tree": "t", "warnings": []});
        assert_eq!(rows(&one, false), vec![one.clone()]);
        assert!(rows(&json!({"entries": [], "n": 1}), true).is_empty());
        assert!(rows(&Value::Null, false).is_empty());
    }
}
