//! Checking conformance reports: a conformance declaration, a ConformanceResult, or a
//! ConformanceResult inside its ResponseEnvelope.
//!
//! A number that cannot be checked is testimony; these checks turn the numbers of a report
//! into measurements or refuse them. Every violation has a stable code and the JSON pointer
//! of what is wrong.

use crate::claim::schema::collect_violations;
use jsonschema::Validator;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::OnceLock;

pub const DECLARATION_SCHEMA: &str = include_str!("conformance-declaration.schema.json");
pub const RESULT_SCHEMA: &str = include_str!("conformance-result.schema.json");

/// One thing wrong with a report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    pub code: &'static str,
    pub pointer: String,
    pub message: String,
}

fn v(code: &'static str, pointer: impl Into<String>, message: impl Into<String>) -> Violation {
    Violation {
        code,
        pointer: pointer.into(),
        message: message.into(),
    }
}

/// Which format a report is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Declaration,
    Result,
    ResultInEnvelope,
}

/// Level verdicts of a ConformanceResult.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LevelVerdict {
    Pass,
    Fail,
    Incomplete,
}

/// The outcome of checking a report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Checked {
    pub format: Format,
    pub violations: Vec<Violation>,
    pub warnings: Vec<Violation>,
    /// The counts the report states (for a declaration, its `result`; for a result, its
    /// summary and levels).
    pub counts: Value,
}

impl Checked {
    pub fn is_sound(&self) -> bool {
        self.violations.is_empty()
    }
}

fn compile(text: &str, formats: bool) -> Validator {
    // Both schemas are embedded and covered by tests: failing here is a build defect.
    let schema: Value = serde_json::from_str(text).expect("embedded schema is valid JSON");
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(formats)
        .build(&schema)
        .expect("embedded schema compiles")
}

fn declaration_validator() -> &'static Validator {
    static V: OnceLock<Validator> = OnceLock::new();
    V.get_or_init(|| compile(DECLARATION_SCHEMA, true))
}

fn result_validator() -> &'static Validator {
    static V: OnceLock<Validator> = OnceLock::new();
    V.get_or_init(|| compile(RESULT_SCHEMA, true))
}

/// Tells the format of a report from its members.
pub fn detect(report: &Value) -> Option<Format> {
    let obj = report.as_object()?;
    if obj.contains_key("declared_tables") || obj.contains_key("commons_commit") {
        return Some(Format::Declaration);
    }
    if obj.contains_key("checks") && obj.contains_key("levels") {
        return Some(Format::Result);
    }
    let looks_enveloped = ["ok", "data", "error", "meta"]
        .iter()
        .all(|k| obj.contains_key(*k));
    if looks_enveloped {
        return Some(Format::ResultInEnvelope);
    }
    None
}

/// Checks a report. `corpus`, when given, is the list of case ids of the corpus the report
/// was measured against.
pub fn check(report: &Value, corpus: Option<&[String]>) -> Result<Checked, String> {
    match detect(report) {
        Some(Format::Declaration) => Ok(check_declaration(report, corpus)),
        Some(Format::Result) => Ok(check_result(report, "", Format::Result)),
        Some(Format::ResultInEnvelope) => Ok(check_envelope(report, corpus)),
        None => Err(
            "not a conformance declaration, a ConformanceResult, or a ResponseEnvelope \
             carrying one (expected `declared_tables`/`result`, `checks`/`levels`, or \
             `ok`/`data`/`error`/`meta`)"
                .into(),
        ),
    }
}

fn schema_violations(validator: &Validator, instance: &Value, prefix: &str) -> Vec<Violation> {
    collect_violations(validator, instance)
        .into_iter()
        .map(|x| {
            v(
                "SCHEMA_VIOLATION",
                format!("{prefix}{}", x.pointer),
                x.message,
            )
        })
        .collect()
}

fn count(value: &Value, key: &str) -> Option<i64> {
    value.get(key).and_then(Value::as_i64)
}

// ---- declarations ----

const ENUMERATIONS: [(&str, &str); 3] = [
    ("not_applicable", "not_applicable_cases"),
    ("failed", "failed_cases"),
    ("error", "error_cases"),
];

fn check_declaration(d: &Value, corpus: Option<&[String]>) -> Checked {
    let mut out = schema_violations(declaration_validator(), d, "");
    let mut warnings = Vec::new();
    let result = d.get("result").cloned().unwrap_or(Value::Null);

    // denominator_intact: total = passed + failed + not_applicable + error.
    let parts = ["passed", "failed", "not_applicable", "error"].map(|k| count(&result, k));
    if let (Some(total), [Some(p), Some(f), Some(n), Some(e)]) = (count(&result, "total"), parts) {
        if total != p + f + n + e {
            out.push(v(
                "DENOMINATOR_INTACT",
                "/result/total",
                format!(
                    "total is {total} but passed + failed + not_applicable + error = {p} + {f} + {n} + {e} = {}",
                    p + f + n + e
                ),
            ));
        }
    }

    // Each enumeration: present when its count is non-zero, as long as its count, no
    // duplicates; and no id in two enumerations.
    let mut owner: HashMap<String, &str> = HashMap::new();
    for (count_key, list_key) in ENUMERATIONS {
        let n = count(&result, count_key);
        let list = d.get(list_key).and_then(Value::as_array);
        match (n, list) {
            (Some(n), None) if n > 0 => out.push(v(
                "ENUMERATION_MISSING",
                format!("/{list_key}"),
                format!("result.{count_key} is {n} but {list_key} is absent: every such case must be named"),
            )),
            (Some(n), Some(list)) if list.len() as i64 != n => out.push(v(
                "ENUMERATION_LENGTH",
                format!("/{list_key}"),
                format!("{list_key} names {} case(s) but result.{count_key} is {n}", list.len()),
            )),
            _ => {}
        }
        let mut seen = HashSet::new();
        for (i, id) in list.into_iter().flatten().enumerate() {
            let Some(id) = id.as_str() else { continue };
            if !seen.insert(id) {
                out.push(v(
                    "ENUMERATION_DUPLICATE",
                    format!("/{list_key}/{i}"),
                    format!("{id} is listed twice in {list_key}"),
                ));
                continue;
            }
            match owner.get(id) {
                Some(other) => out.push(v(
                    "ENUMERATION_OVERLAP",
                    format!("/{list_key}/{i}"),
                    format!("{id} is in both {other} and {list_key}: a case has one verdict"),
                )),
                None => {
                    owner.insert(id.to_owned(), list_key);
                }
            }
        }
    }

    // total_matches_corpus, when the corpus is known.
    if let Some(cases) = corpus {
        let corpus_set: HashSet<&str> = cases.iter().map(String::as_str).collect();
        if let Some(total) = count(&result, "total") {
            if total != cases.len() as i64 {
                out.push(v(
                    "TOTAL_MATCHES_CORPUS",
                    "/result/total",
                    format!(
                        "total is {total} but the corpus holds {} cases: cases were skipped or invented",
                        cases.len()
                    ),
                ));
            }
        }
        for (_, list_key) in ENUMERATIONS {
            for (i, id) in d
                .get(list_key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                if let Some(id) = id.as_str() {
                    if !corpus_set.contains(id) {
                        out.push(v(
                            "CASE_NOT_IN_CORPUS",
                            format!("/{list_key}/{i}"),
                            format!("{id} is not a case of the corpus"),
                        ));
                    }
                }
            }
        }
    }

    if d.get("declaration_source").and_then(Value::as_str) == Some("hand-maintained") {
        warnings.push(v(
            "HAND_MAINTAINED",
            "/declaration_source",
            "declared_tables is hand-maintained: a claim about what the runner accepts, not a measurement of it",
        ));
    }
    Checked {
        format: Format::Declaration,
        violations: out,
        warnings,
        counts: result,
    }
}

// ---- ConformanceResult ----

const LEVELS: [(&str, i64); 3] = [("level_1", 1), ("level_2", 2), ("level_3", 3)];

/// Level N looks at checks of level <= N: any fail gives fail, else any skip gives
/// incomplete, else pass.
pub fn derive_level(checks: &[Value], level: i64) -> LevelVerdict {
    let relevant = checks.iter().filter(|c| {
        c.get("level")
            .and_then(Value::as_i64)
            .is_some_and(|l| l <= level)
    });
    let mut verdict = LevelVerdict::Pass;
    for c in relevant {
        match c.get("status").and_then(Value::as_str) {
            Some("fail") => return LevelVerdict::Fail,
            Some("skip") => verdict = LevelVerdict::Incomplete,
            _ => {}
        }
    }
    verdict
}

fn check_result(r: &Value, prefix: &str, format: Format) -> Checked {
    let mut out = schema_violations(result_validator(), r, prefix);
    let checks: Vec<Value> = r
        .get("checks")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut tally: BTreeMap<&str, i64> = BTreeMap::new();
    for (i, c) in checks.iter().enumerate() {
        let at = format!("{prefix}/checks/{i}");
        let status = c.get("status").and_then(Value::as_str);
        let failures = c.get("failures").and_then(Value::as_array).map(Vec::len);
        match status {
            Some(s @ ("pass" | "fail" | "skip")) => *tally.entry(s).or_default() += 1,
            other => out.push(v(
                "CHECK_STATUS_INVALID",
                format!("{at}/status"),
                format!(
                    "status must be pass, fail or skip; got {}",
                    other.map_or("nothing".into(), |s| format!("{s:?}"))
                ),
            )),
        }
        match (status, failures) {
            (Some("pass"), Some(n)) if n > 0 => out.push(v(
                "PASS_WITH_FAILURES",
                format!("{at}/failures"),
                format!("a passing check lists {n} failure(s)"),
            )),
            (Some("fail"), n) if n.unwrap_or(0) == 0 => out.push(v(
                "FAIL_WITHOUT_FAILURES",
                format!("{at}/failures"),
                "a failing check must list at least one failure as evidence",
            )),
            _ => {}
        }
        let has_reason = c.get("skipped_reason").is_some();
        if (status == Some("skip")) != has_reason {
            out.push(v(
                "SKIPPED_REASON",
                format!("{at}/skipped_reason"),
                if has_reason {
                    "skipped_reason is present on a check that was not skipped"
                } else {
                    "a skipped check must say why (skipped_reason)"
                },
            ));
        }
    }
    let summary = r.get("summary").cloned().unwrap_or(Value::Null);
    for (key, status) in [("passed", "pass"), ("failed", "fail"), ("skipped", "skip")] {
        let stated = count(&summary, key);
        let actual = tally.get(status).copied().unwrap_or(0);
        if stated.is_some_and(|s| s != actual) {
            out.push(v(
                "SUMMARY_MISMATCH",
                format!("{prefix}/summary/{key}"),
                format!(
                    "summary.{key} is {} but {actual} check(s) have status {status}",
                    stated.unwrap_or_default()
                ),
            ));
        }
    }
    let levels = r.get("levels").cloned().unwrap_or(Value::Null);
    let mut derived = serde_json::Map::new();
    for (key, n) in LEVELS {
        let want = derive_level(&checks, n);
        let want_str = serde_json::to_value(want).unwrap_or(Value::Null);
        derived.insert(key.to_owned(), want_str.clone());
        if let Some(stated) = levels.get(key).and_then(Value::as_str) {
            if Some(stated) != want_str.as_str() {
                out.push(v(
                    "LEVEL_MISMATCH",
                    format!("{prefix}/levels/{key}"),
                    format!(
                        "{key} is {stated:?} but the checks of level <= {n} give {}",
                        want_str
                    ),
                ));
            }
        }
    }
    Checked {
        format,
        violations: out,
        warnings: Vec::new(),
        counts: serde_json::json!({"summary": summary, "levels": levels, "derived_levels": derived}),
    }
}

fn check_envelope(e: &Value, corpus: Option<&[String]>) -> Checked {
    let data = e.get("data").cloned().unwrap_or(Value::Null);
    // `elench conformance run` wraps its declaration in elench's own envelope.
    if detect(&data) == Some(Format::Declaration) {
        let mut c = check_declaration(&data, corpus);
        for x in c.violations.iter_mut().chain(c.warnings.iter_mut()) {
            x.pointer = format!("/data{}", x.pointer);
        }
        return c;
    }
    if data.is_null() || data.get("checks").is_none() {
        return Checked {
            format: Format::ResultInEnvelope,
            violations: vec![v(
                "NOT_A_RESULT",
                "/data",
                "the envelope's data is not a ConformanceResult",
            )],
            warnings: Vec::new(),
            counts: Value::Null,
        };
    }
    let mut checked = check_result(&data, "/data", Format::ResultInEnvelope);
    let any_failed = data
        .get("checks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c.get("status").and_then(Value::as_str) == Some("fail"));
    let want_exit = if any_failed { 4 } else { 0 };
    let exit = e
        .get("meta")
        .and_then(|m| m.get("exit_code"))
        .and_then(Value::as_i64);
    match exit {
        Some(x) if x != want_exit => checked.violations.push(v(
            "ENVELOPE_EXIT_CODE",
            "/meta/exit_code",
            format!("meta.exit_code is {x} but the result gives {want_exit} (0 when no check failed, else 4)"),
        )),
        None => checked.violations.push(v(
            "ENVELOPE_EXIT_CODE",
            "/meta/exit_code",
            "meta.exit_code is missing",
        )),
        _ => {}
    }
    let ok = e.get("ok").and_then(Value::as_bool);
    if ok != Some(want_exit == 0) {
        checked.violations.push(v(
            "ENVELOPE_OK",
            "/ok",
            format!(
                "ok is {} but the result gives exit code {want_exit}, so ok must be {}",
                e.get("ok").map_or("missing".into(), Value::to_string),
                want_exit == 0
            ),
        ));
    }
    checked
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn codes(c: &Checked) -> Vec<&'static str> {
        c.violations.iter().map(|x| x.code).collect()
    }

    #[test]
    fn the_declaration_schema_example_is_sound() {
        let schema: Value = serde_json::from_str(DECLARATION_SCHEMA).unwrap();
        let c = check(&schema["example"], None).unwrap();
        assert!(c.is_sound(), "{:?}", c.violations);
    }

    #[test]
    fn declaration_arithmetic() {
        let d = json!({"runtime":"r","commons_commit":"0000000","declared_tables":["a.json"],
            "result":{"total":5,"passed":3,"failed":1,"not_applicable":0,"error":0},
            "failed_cases":["x__y"]});
        assert!(codes(&check(&d, None).unwrap()).contains(&"DENOMINATOR_INTACT"));
        let corpus = vec!["x__y".to_string(), "x__z".to_string()];
        let c = check(&d, Some(&corpus)).unwrap();
        assert!(codes(&c).contains(&"TOTAL_MATCHES_CORPUS"));
    }

    #[test]
    fn levels_are_derived() {
        let checks = vec![
            json!({"level": 1, "status": "pass"}),
            json!({"level": 2, "status": "skip"}),
            json!({"level": 3, "status": "fail"}),
        ];
        assert_eq!(derive_level(&checks, 1), LevelVerdict::Pass);
        assert_eq!(derive_level(&checks, 2), LevelVerdict::Incomplete);
        assert_eq!(derive_level(&checks, 3), LevelVerdict::Fail);
    }
}
