//! A claim from its short form: the few fields a producer means (kind, text, predicate,
//! anchor, premises, targets, evidence, who and when), the rest filled in the one way the
//! claim format wants it, and the id computed. What `elench claim` signs.
//!
//! Everything here is local and pure: the anchor comes computed (its tree and span are read
//! by the caller), ids come expanded, the origin comes from the signing key's role. The
//! result goes through [`super::with_id`], so a draft is held to every rule a claim is.

use super::predicate::LANGUAGE as PREDICATE_LANGUAGE;
use super::{with_id, Claim, Kind, OriginKind};
use crate::error::{Code, Rejection};
use serde_json::{json, Map, Value};

/// A claim before its id: every field resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    pub kind: Kind,
    /// `assertion.text`.
    pub text: Option<String>,
    /// An `elench-predicate-v1` source: `assertion.form` is then `predicate`, else
    /// `annotation`.
    pub predicate: Option<String>,
    /// The anchor object, its `tree` included.
    pub anchor: Map<String, Value>,
    pub depends_on: Vec<String>,
    pub target: Vec<String>,
    /// Evidence objects, as [`parse_evidence`] makes them.
    pub evidence: Vec<Value>,
    pub origin: OriginKind,
    pub producer: String,
    pub session: Option<String>,
    /// Unix seconds.
    pub timestamp: i64,
}

impl Draft {
    /// The claim as JSON, without its id. Optional members are left out when empty, as a
    /// producer writing the JSON by hand would, so the two give the same id.
    pub fn to_value(&self) -> Value {
        let mut assertion = Map::new();
        match &self.predicate {
            Some(source) => {
                assertion.insert("form".into(), json!("predicate"));
                assertion.insert(
                    "expression".into(),
                    json!({"language": PREDICATE_LANGUAGE, "source": source}),
                );
            }
            None => {
                assertion.insert("form".into(), json!("annotation"));
            }
        }
        if let Some(text) = &self.text {
            assertion.insert("text".into(), json!(text));
        }
        let mut producer = Map::new();
        producer.insert("id".into(), json!(self.producer));
        if let Some(session) = &self.session {
            producer.insert("sessionId".into(), json!(session));
        }
        let mut claim = Map::new();
        claim.insert("kind".into(), json!(self.kind.as_str()));
        claim.insert("assertion".into(), Value::Object(assertion));
        claim.insert(
            "origin".into(),
            json!({"kind": self.origin.as_str(), "producer": producer}),
        );
        claim.insert("anchor".into(), Value::Object(self.anchor.clone()));
        claim.insert("timestamp".into(), json!(self.timestamp));
        if !self.target.is_empty() {
            claim.insert("target".into(), json!(self.target));
        }
        if !self.depends_on.is_empty() {
            claim.insert("dependsOn".into(), json!(self.depends_on));
        }
        if !self.evidence.is_empty() {
            claim.insert("evidence".into(), Value::Array(self.evidence.clone()));
        }
        Value::Object(claim)
    }

    /// The claim with its id, checked like any claim (schema, predicate parse, id).
    pub fn build(&self) -> Result<(Claim, Map<String, Value>), Rejection> {
        with_id(&self.to_value())
    }
}

/// The evidence kinds of the claim format.
pub const EVIDENCE_KINDS: [&str; 4] = [
    "process-exit",
    "test-report",
    "artifact-digest",
    "external-attestation",
];

/// One evidence object from `KIND[:VALUE]`: `process-exit:N` gives `exitCode` N;
/// `external-attestation:URI` gives `uri`; `test-report:X` and `artifact-digest:X` give
/// `uri` when X holds `://`, else `digest` (so `artifact-digest:sha256:ab…` is a digest).
/// The split is at the first colon, so a value may hold colons.
pub fn parse_evidence(spec: &str) -> Result<Value, String> {
    let (kind, value) = match spec.split_once(':') {
        Some((k, v)) => (k, Some(v)),
        None => (spec, None),
    };
    if !EVIDENCE_KINDS.contains(&kind) {
        return Err(format!(
            "evidence {spec:?}: the kind must be one of {}",
            EVIDENCE_KINDS.join(", ")
        ));
    }
    let mut obj = Map::new();
    obj.insert("kind".into(), json!(kind));
    match value {
        None => {}
        Some("") => {
            return Err(format!(
                "evidence {spec:?}: nothing after the colon (leave the colon out for none)"
            ))
        }
        Some(v) if kind == "process-exit" => {
            let code: i64 = v.parse().map_err(|_| {
                format!("evidence {spec:?}: process-exit takes an exit code, a whole number")
            })?;
            obj.insert("exitCode".into(), json!(code));
        }
        Some(v) if kind == "external-attestation" || v.contains("://") => {
            obj.insert("uri".into(), json!(v));
        }
        Some(v) => {
            obj.insert("digest".into(), json!(v));
        }
    }
    Ok(Value::Object(obj))
}

/// A rule of the draft itself that the schema would only say less plainly: records need
/// targets, assertions have none, an annotation needs text.
pub fn shape_problem(
    kind: Kind,
    has_text: bool,
    has_predicate: bool,
    targets: usize,
) -> Option<Rejection> {
    match kind {
        Kind::Assertion if targets > 0 => Some(Rejection::at(
            Code::SchemaViolation,
            "/target",
            "an assertion acts on no claim: --target is for records (falsification, \
             verification, supersession, residue-acceptance); premises go in --depends-on",
        )),
        Kind::Assertion if !has_text && !has_predicate => Some(Rejection::at(
            Code::SchemaViolation,
            "/assertion",
            "an assertion says something: give its TEXT, or --predicate EXPR",
        )),
        k if k != Kind::Assertion && targets == 0 => Some(Rejection::at(
            Code::SchemaViolation,
            "/target",
            format!("a {k} acts on claims: name them with --target ID"),
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TREE: &str = "4f2d6c1a9b3e5d7f0a8c6e4b2d0f9e7c5a3b1d8f6e4c2a0b9d7f5e3c1a2b4d6e";

    fn draft() -> Draft {
        let mut anchor = Map::new();
        anchor.insert("tree".into(), json!(TREE));
        anchor.insert("strategy".into(), json!("multi"));
        Draft {
            kind: Kind::Assertion,
            text: Some("parse rejects empty input".into()),
            predicate: None,
            anchor,
            depends_on: Vec::new(),
            target: Vec::new(),
            evidence: Vec::new(),
            origin: OriginKind::AgentAsserted,
            producer: "model-x".into(),
            session: None,
            timestamp: 1_700_000_000,
        }
    }

    #[test]
    fn a_draft_is_the_claim_a_person_would_write() {
        let (claim, obj) = draft().build().unwrap();
        let hand = json!({
            "kind": "assertion",
            "assertion": {"form": "annotation", "text": "parse rejects empty input"},
            "origin": {"kind": "agent-asserted", "producer": {"id": "model-x"}},
            "anchor": {"tree": TREE, "strategy": "multi"},
            "timestamp": 1_700_000_000,
        });
        let (by_hand, _) = with_id(&hand).unwrap();
        assert_eq!(claim.id, by_hand.id);
        assert_eq!(obj["id"], json!(claim.id));
    }

    #[test]
    fn a_predicate_draft_is_parsed_and_a_bad_one_names_its_position() {
        let mut d = draft();
        d.predicate = Some("exists(\"src/lib.rs\")".into());
        let (_, obj) = d.build().unwrap();
        assert_eq!(obj["assertion"]["form"], json!("predicate"));
        d.predicate = Some("exists(".into());
        let err = d.build().unwrap_err();
        assert_eq!(err.code, Code::PredicateParseError);
        assert!(err.message.contains("line 1"), "{}", err.message);
    }

    #[test]
    fn evidence_specs() {
        assert_eq!(
            parse_evidence("process-exit:0").unwrap(),
            json!({"kind": "process-exit", "exitCode": 0})
        );
        assert_eq!(
            parse_evidence("artifact-digest:sha256:ab").unwrap(),
            json!({"kind": "artifact-digest", "digest": "sha256:ab"})
        );
        assert_eq!(
            parse_evidence("test-report:https://ci/r.xml").unwrap(),
            json!({"kind": "test-report", "uri": "https://ci/r.xml"})
        );
        assert_eq!(
            parse_evidence("external-attestation:urn:x").unwrap(),
            json!({"kind": "external-attestation", "uri": "urn:x"})
        );
        assert_eq!(
            parse_evidence("test-report").unwrap(),
            json!({"kind": "test-report"})
        );
        assert!(parse_evidence("process-exit:zero").is_err());
        assert!(parse_evidence("vibes:1").is_err());
        assert!(parse_evidence("test-report:").is_err());
    }

    #[test]
    fn shape_rules() {
        assert!(shape_problem(Kind::Assertion, true, false, 0).is_none());
        assert!(shape_problem(Kind::Assertion, false, true, 0).is_none());
        assert!(shape_problem(Kind::Assertion, false, false, 0).is_some());
        assert!(shape_problem(Kind::Assertion, true, false, 1).is_some());
        assert!(shape_problem(Kind::Falsification, false, false, 0).is_some());
        assert!(shape_problem(Kind::Falsification, false, false, 1).is_none());
    }
}
