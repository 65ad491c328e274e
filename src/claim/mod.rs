//! The claim: its schema, the rules the schema cannot say, its canonical id, and the
//! predicate language (docs/claims.md).
//!
//! [`validate`] is the single gate: a [`Claim`] value exists only for a predicate that passed
//! the schema, the extra rules and the id check.

pub mod draft;
pub mod id;
pub mod model;
pub mod predicate;
pub mod schema;

pub use id::{compute_id, is_claim_id};
pub use model::{AnchorParts, Body, Claim, Gist, Kind, OriginKind, Summary, SummaryParts};

/// The `uri` of the evidence entry in which an observation (a verification, falsification
/// or residue-acceptance) records its target's inputs digest at the tree it observed: this
/// prefix, then the target's id (docs/claims.md, "Observations").
pub const INPUTS_URI_PREFIX: &str = "elench:inputs:";

use crate::error::{Code, Rejection};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// Checks a claim completely and returns its header and `predicate` as its body (moved, not
/// copied). Pointers in errors are relative to the claim (the statement's `predicate`).
pub fn validate(predicate: Value) -> Result<(Claim, Body), Rejection> {
    schema::check(&predicate)?;
    let obj = predicate
        .as_object()
        .ok_or_else(|| Rejection::at(Code::SchemaViolation, "", "claim must be an object"))?;
    check_extra_rules(obj)?;
    let id = id::check_id(obj)?;
    typed(id, predicate)
}

/// Fills in (or replaces a stale) `id` and validates the result: what `elench sign` signs.
pub fn with_id(claim: &Value) -> Result<(Claim, Map<String, Value>), Rejection> {
    let mut obj = claim
        .as_object()
        .cloned()
        .ok_or_else(|| Rejection::at(Code::SchemaViolation, "", "claim must be a JSON object"))?;
    let id = compute_id(&obj)?;
    obj.insert("id".into(), Value::String(id));
    let (claim, _) = validate(Value::Object(obj.clone()))?;
    Ok((claim, obj))
}

/// What docs/claims.md requires beyond the schema.
fn check_extra_rules(obj: &Map<String, Value>) -> Result<(), Rejection> {
    check_anchor(obj)?;
    check_expression(obj)
}

fn check_anchor(obj: &Map<String, Value>) -> Result<(), Rejection> {
    let Some(anchor) = obj.get("anchor").and_then(Value::as_object) else {
        return Ok(()); // the schema already requires it
    };
    let tree = anchor.get("tree").and_then(Value::as_str).unwrap_or("");
    if !is_tree_oid(tree) {
        return Err(Rejection::at(
            Code::SchemaViolation,
            "/anchor/tree",
            format!(
                "anchor.tree {tree:?} is not an elench tree OID (64 lowercase hex; `elench tree DIR` computes it)"
            ),
        ));
    }
    if let Some(range) = anchor.get("range").and_then(Value::as_array) {
        let start = range.first().and_then(as_integer);
        let end = range.get(1).and_then(as_integer);
        if !is_line_range(start, end) {
            return Err(Rejection::at(
                Code::SchemaViolation,
                "/anchor/range",
                format!("anchor.range must be [start, end] with 1 <= start <= end; got {range:?}"),
            ));
        }
    }
    Ok(())
}

/// Whether `tree` is an elench tree OID: 64 lowercase hex digits.
pub(crate) fn is_tree_oid(tree: &str) -> bool {
    tree.len() == 64
        && tree
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Whether an anchor's range `[start, end]` names lines: `1 <= start <= end`.
pub(crate) fn is_line_range(start: Option<i64>, end: Option<i64>) -> bool {
    matches!((start, end), (Some(s), Some(e)) if 1 <= s && s <= e)
}

fn check_expression(obj: &Map<String, Value>) -> Result<(), Rejection> {
    let Some(assertion) = obj.get("assertion").and_then(Value::as_object) else {
        return Ok(());
    };
    if assertion.get("form").and_then(Value::as_str) != Some("predicate") {
        return Ok(());
    }
    let Some(expr) = assertion.get("expression").and_then(Value::as_object) else {
        return Err(Rejection::at(
            Code::PredicateWithoutExpression,
            "/assertion/expression",
            "assertion.form is \"predicate\" but there is no expression: a predicate without an \
             executable expression is an annotation wearing a costume (use form \"annotation\")",
        ));
    };
    let source = expr.get("source").and_then(Value::as_str).unwrap_or("");
    let language = expr.get("language").and_then(Value::as_str).unwrap_or("");
    let digest = expr.get("digest").map(Value::as_str);
    match expression_rejection(source, language, digest) {
        Some(rejection) => Err(rejection),
        None => Ok(()),
    }
}

/// What is wrong with a predicate's expression, if anything: a blank source, an unknown
/// language, a source that does not parse, or a `digest` (`Some(None)`: present but not a
/// string) other than the SHA-256 of the source.
pub(crate) fn expression_rejection(
    source: &str,
    language: &str,
    digest: Option<Option<&str>>,
) -> Option<Rejection> {
    if source.trim().is_empty() {
        return Some(Rejection::at(
            Code::PredicateWithoutExpression,
            "/assertion/expression/source",
            "assertion.expression.source is empty",
        ));
    }
    if language != predicate::LANGUAGE {
        return Some(Rejection::at(
            Code::UnknownPredicateLanguage,
            "/assertion/expression/language",
            format!(
                "expression language {language:?} is not known; the known language is {:?}",
                predicate::LANGUAGE
            ),
        ));
    }
    if let Err(e) = predicate::parse(source) {
        return Some(Rejection::at(
            Code::PredicateParseError,
            "/assertion/expression/source",
            format!("expression does not parse: {e} (byte offset {})", e.offset),
        ));
    }
    if let Some(digest) = digest {
        let want = hex::encode(Sha256::digest(source.as_bytes()));
        if digest != Some(want.as_str()) {
            return Some(Rejection::at(
                Code::PredicateDigestMismatch,
                "/assertion/expression/digest",
                format!("expression.digest must be the lowercase hex SHA-256 of source, {want}"),
            ));
        }
    }
    None
}

/// An integer as JSON Schema counts one: `5` and `5.0` alike (both canonicalize to `5`).
fn as_integer(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0)
            .map(|f| f as i64)
    })
}

/// Builds the typed view of a schema-valid claim.
fn typed(id: String, predicate: Value) -> Result<(Claim, Body), Rejection> {
    let kind: Kind = serde_json::from_value(predicate["kind"].clone())
        .map_err(|e| Rejection::at(Code::SchemaViolation, "/kind", e.to_string()))?;
    let origin: OriginKind = serde_json::from_value(predicate["origin"]["kind"].clone())
        .map_err(|e| Rejection::at(Code::SchemaViolation, "/origin/kind", e.to_string()))?;
    let ids = |name: &str| -> Vec<String> {
        predicate[name]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let claim = Claim {
        id,
        kind,
        target: ids("target"),
        depends_on: ids("dependsOn"),
        origin,
        producer: predicate["origin"]["producer"]["id"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        anchor_tree: predicate["anchor"]["tree"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        timestamp: as_integer(&predicate["timestamp"]).ok_or_else(|| {
            Rejection::at(
                Code::SchemaViolation,
                "/timestamp",
                "timestamp must be an integer number of seconds",
            )
        })?,
    };
    Ok((claim, Body::new(predicate)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claim(assertion: Value) -> Value {
        json!({
            "kind": "assertion",
            "assertion": assertion,
            "origin": {"kind": "agent-asserted", "producer": {"id": "p"}},
            "anchor": {"tree": "a".repeat(64), "strategy": "multi"},
            "timestamp": 1
        })
    }

    fn code(v: Value) -> Code {
        with_id(&v).unwrap_err().code
    }

    #[test]
    fn predicate_rules() {
        let ok = claim(
            json!({"form":"predicate","expression":{"language":"elench-predicate-v1","source":"exists(\"a\")"}}),
        );
        with_id(&ok).unwrap();
        assert_eq!(
            code(claim(json!({"form":"predicate"}))),
            Code::PredicateWithoutExpression
        );
        assert_eq!(
            code(claim(
                json!({"form":"predicate","expression":{"language":"elench-predicate-v1","source":"  "}})
            )),
            Code::PredicateWithoutExpression
        );
        assert_eq!(
            code(claim(
                json!({"form":"predicate","expression":{"language":"cel","source":"true"}})
            )),
            Code::UnknownPredicateLanguage
        );
        assert_eq!(
            code(claim(
                json!({"form":"predicate","expression":{"language":"elench-predicate-v1","source":"exists("}})
            )),
            Code::PredicateParseError
        );
        let src = "exists(\"a\")";
        let digest = hex::encode(Sha256::digest(src.as_bytes()));
        with_id(&claim(json!({"form":"predicate","expression":{"language":"elench-predicate-v1","source":src,"digest":digest}}))).unwrap();
        assert_eq!(
            code(claim(
                json!({"form":"predicate","expression":{"language":"elench-predicate-v1","source":src,"digest":"00"}})
            )),
            Code::PredicateDigestMismatch
        );
    }

    #[test]
    fn anchor_rules() {
        let mut v = claim(json!({"form":"annotation"}));
        v["anchor"]["tree"] = json!("A".repeat(64));
        assert_eq!(code(v.clone()), Code::SchemaViolation);
        v["anchor"]["tree"] = json!("a".repeat(64));
        v["anchor"]["range"] = json!([5, 4]);
        assert_eq!(
            with_id(&v).unwrap_err().pointer.as_deref(),
            Some("/anchor/range")
        );
        v["anchor"]["range"] = json!([0, 4]);
        assert_eq!(code(v.clone()), Code::SchemaViolation);
        v["anchor"]["range"] = json!([4, 4]);
        with_id(&v).unwrap();
    }

    #[test]
    fn id_is_checked_and_filled() {
        let v = claim(json!({"form":"annotation"}));
        let (c, obj) = with_id(&v).unwrap();
        assert_eq!(obj["id"], json!(c.id));
        let mut forged = Value::Object(obj);
        forged["timestamp"] = json!(2);
        assert_eq!(validate(forged).unwrap_err().code, Code::IdMismatch);
    }
}
