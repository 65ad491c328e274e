//! The claim's JSON Schema (2020-12), embedded in the binary and checked with a real validator.
//!
//! Every violation is reported with the JSON pointer of the offending field. A missing
//! required member points at where that member belongs (`/anchor`), and an unexpected member
//! at itself, so the pointer always names the field to fix.

use crate::error::{Code, Rejection, Violation};
use jsonschema::error::ValidationErrorKind;
use jsonschema::Validator;
use serde_json::Value;
use std::sync::OnceLock;

/// The claim's JSON Schema (2020-12), the normative definition of a claim, compiled in.
pub const CLAIM_SCHEMA: &str = include_str!("claim.schema.json");

fn validator() -> &'static Validator {
    static VALIDATOR: OnceLock<Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        // The schema ships inside the binary and is covered by tests, so failing here is a
        // build defect, not an input error.
        let schema: Value =
            serde_json::from_str(CLAIM_SCHEMA).expect("embedded claim schema is valid JSON");
        jsonschema::draft202012::new(&schema).expect("embedded claim schema compiles")
    })
}

/// Every violation of `instance` against `validator`, each with the pointer of the field to
/// fix, sorted by pointer. Shared by every schema elench embeds.
pub fn collect_violations(validator: &Validator, instance: &Value) -> Vec<Violation> {
    let mut violations: Vec<Violation> = Vec::new();
    for err in validator.iter_errors(instance) {
        let base = err.instance_path().as_str().to_owned();
        let message = err.masked().to_string();
        match err.kind() {
            ValidationErrorKind::Required { property } => {
                let name = property.as_str().unwrap_or_default();
                violations.push(Violation {
                    pointer: format!("{base}/{}", crate::json::escape_token(name)),
                    message: format!("required member {name:?} is missing"),
                });
            }
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                for name in unexpected {
                    violations.push(Violation {
                        pointer: format!("{base}/{}", crate::json::escape_token(name)),
                        message: format!("unknown member {name:?} is not allowed here"),
                    });
                }
            }
            _ => violations.push(Violation {
                pointer: base,
                message,
            }),
        }
    }
    violations.sort_by(|a, b| a.pointer.cmp(&b.pointer));
    violations.dedup();
    violations
}

/// Validates a claim (the predicate) against the schema, reporting every violation.
pub fn check(claim: &Value) -> Result<(), Rejection> {
    // The common case, a valid claim, takes the validator's short-circuiting path; only an
    // invalid one is walked again for every violation and its pointer.
    if validator().is_valid(claim) {
        return Ok(());
    }
    let violations = collect_violations(validator(), claim);
    if violations.is_empty() {
        return Ok(());
    }
    let first = &violations[0];
    let message = if violations.len() == 1 {
        format!(
            "claim violates the schema at {}: {}",
            first.pointer_or_root(),
            first.message
        )
    } else {
        format!(
            "claim violates the schema in {} places; first at {}: {}",
            violations.len(),
            first.pointer_or_root(),
            first.message
        )
    };
    Err(Rejection {
        code: Code::SchemaViolation,
        pointer: Some(first.pointer.clone()),
        message,
        details: violations,
    })
}

trait PointerDisplay {
    fn pointer_or_root(&self) -> &str;
}

impl PointerDisplay for Violation {
    fn pointer_or_root(&self) -> &str {
        if self.pointer.is_empty() {
            "the top level"
        } else {
            &self.pointer
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn base() -> Value {
        json!({
            "id": format!("cl_{}", "0".repeat(64)),
            "kind": "assertion",
            "assertion": {"form": "annotation", "text": "x"},
            "origin": {"kind": "agent-asserted", "producer": {"id": "p"}},
            "anchor": {"tree": "a".repeat(64), "strategy": "multi"},
            "timestamp": 1
        })
    }

    fn pointers(v: &Value) -> Vec<String> {
        check(v)
            .unwrap_err()
            .details
            .into_iter()
            .map(|d| d.pointer)
            .collect()
    }

    #[test]
    fn accepts_a_minimal_claim() {
        check(&base()).unwrap();
    }

    #[test]
    fn reports_pointers_of_each_violation() {
        let mut v = base();
        v.as_object_mut().unwrap().remove("anchor");
        assert_eq!(pointers(&v), vec!["/anchor"]);

        let mut v = base();
        v["id"] = json!("cl_XYZ");
        assert_eq!(pointers(&v), vec!["/id"]);

        let mut v = base();
        v["extra"] = json!(1);
        v["assertion"]["text"] = json!("x".repeat(2001));
        assert_eq!(pointers(&v), vec!["/assertion/text", "/extra"]);
    }

    #[test]
    fn applies_the_all_of_conditionals() {
        let t = format!("cl_{}", "1".repeat(64));
        let mut v = base();
        v["target"] = json!([t]);
        assert_eq!(pointers(&v), vec!["/target"]);

        let mut v = base();
        v["kind"] = json!("falsification");
        assert_eq!(pointers(&v), vec!["/target"]);

        let mut v = base();
        v["kind"] = json!("residue-acceptance");
        v["target"] = json!([]);
        assert_eq!(pointers(&v), vec!["/target"]);

        let mut v = base();
        v["kind"] = json!("verification");
        v["target"] = json!([t]);
        check(&v).unwrap();
    }
}
