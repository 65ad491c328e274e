//! The JSON Schemas (2020-12) of every tool's input and output, derived with `schemars` from
//! the types the arguments are read into (`inputs`) and the operations' outputs, so kinds,
//! statuses and fields are spelled once, by their Rust types.
//!
//! Input schemas are the contract the server holds calls to: every call's arguments are
//! validated against them before anything runs, so a wrong argument is refused with the
//! JSON pointer of the field. Output schemas describe `structuredContent` of a successful
//! call ([`Output`]: the operation's output, `warnings`, and `truncation` when the byte cap
//! cut it); members may be added, none renamed (like the CLI's `data`). A failed call has
//! no structured content: it is `isError: true` with the JSON `{"error": {...}, "warnings":
//! [...]}` as its text, since clients check structured content against the output schema.

use elench::ops::page::Pagination;
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The settings both directions share: 2020-12, every subschema written in place (a
/// client reads one tool's schema alone).
fn settings() -> SchemaSettings {
    SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true)
}

/// The schema of what a tool takes: `T` as it is read.
pub fn input<T: JsonSchema>() -> Value {
    settings()
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// The schema of a successful result whose data is `T` as it is written.
pub fn output<T: JsonSchema>() -> Value {
    settings()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<Output<T>>()
        .to_value()
}

/// What the operation noticed on the way (a torn tail cut, an index rebuilt, a premise
/// missing), each with its stable code.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Warning {
    pub code: String,
    pub message: String,
}

/// Present only when the result was cut to the server's byte cap (ELENCH_MAX_OUTPUT_BYTES
/// when it started): the cap, the whole result's size, and how to get the rest.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Truncation {
    pub cap: usize,
    /// The bytes the whole result would have taken
    pub size: usize,
    /// How to get the rest
    pub hint: String,
}

// Only its schema is used: the server adds `warnings` (and the byte cap `truncation`) to the
// data's JSON.
/// A successful result: the data, what the server noticed on the way, and whether the byte
/// cap cut it
#[derive(Serialize, JsonSchema)]
#[allow(dead_code)]
pub struct Output<T> {
    #[serde(flatten)]
    pub data: T,
    pub warnings: Vec<Warning>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncation: Option<Truncation>,
}

// The CLI puts `pagination` in `meta`; a tool result has only one object.
/// A page of a list, and where it stands in the whole
#[derive(Serialize, JsonSchema)]
pub struct Paged<T> {
    #[serde(flatten)]
    pub data: T,
    /// Give `next_cursor` as `cursor` for the next page.
    pub pagination: Pagination,
}

/// A page of claims when every claim is listed; all of them when paths are given
#[derive(Serialize, JsonSchema)]
pub struct MaybePaged<T> {
    #[serde(flatten)]
    pub data: T,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pagination: Option<Pagination>,
}

/// One claim a `claim` call made: the command line's row, without `source` (every claim
/// came from the call), and `line` only for a list.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ClaimRow {
    pub id: String,
    /// created: a new claim; merged: a new signature on a stored claim; noop: stored
    /// already. In a dry run, what the append would do
    pub effect: &'static str,
    /// Its place in claims (1 first)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    pub kind: elench::claim::Kind,
    pub origin: elench::claim::OriginKind,
    pub producer: String,
    /// The keyid that signed it
    pub signer: String,
    /// Its status after the append (null in a dry run)
    #[schemars(with = "Option<elench::fold::Status>")]
    pub status: Option<&'static str>,
    /// The claim as signed (dry run)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claim: Option<Value>,
    /// The signed envelope (dry run)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub envelope: Option<Value>,
}

impl ClaimRow {
    pub fn of(row: &elench::ops::claim::ClaimRow, list: bool) -> ClaimRow {
        ClaimRow {
            id: row.id.clone(),
            effect: row.effect,
            line: if list { row.line } else { None },
            kind: row.kind,
            origin: row.origin,
            producer: row.producer.clone(),
            signer: row.signer.clone(),
            status: row.status,
            claim: row.claim.clone(),
            envelope: row.envelope.clone(),
        }
    }
}

/// A claim of the call the store refused.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Refusal {
    /// Its place in claims (1 first)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[schemars(with = "String")]
    pub code: elench::error::Code,
    pub message: String,
    pub pointer: Option<String>,
}

/// What a `claim` call did.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ClaimOut {
    /// One claim given and stored: its row's fields at the top too, as the command line
    /// puts its id.
    #[serde(flatten)]
    pub one: Option<ClaimRow>,
    pub claims: Vec<ClaimRow>,
    pub created: usize,
    pub merged: usize,
    pub noop: usize,
    pub dry_run: bool,
    /// The call as a whole, as the command line reports it: created when a claim is new,
    /// updated when only new signatures were added, noop when all was stored already;
    /// would_create or would_update in a dry run
    pub effect: elench::ops::outcome::Effect,
    /// When the store refused some: how many
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejected: Option<usize>,
    /// When the store refused some: which, and why
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejections: Option<Vec<Refusal>>,
}

/// `blast`: the blast radius as the command line's JSON gives it, with what its documents
/// show of each claim: its text, and a member's premises.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BlastOut {
    pub root: String,
    /// Members, the root excluded
    pub count: usize,
    pub layers: Vec<BlastLayer>,
    pub affected: Vec<BlastAffected>,
    /// Whether depth left members out
    pub truncated: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct BlastLayer {
    pub depth: usize,
    pub claims: Vec<BlastMember>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct BlastMember {
    #[serde(flatten)]
    pub member: elench::graph::Member,
    /// Its assertion.text (null when it has none)
    pub text: Value,
    /// Its premises (dependsOn), read in the same snapshot
    pub premises: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct BlastAffected {
    #[serde(flatten)]
    pub affected: elench::graph::Affected,
    /// Its assertion.text (null when it has none)
    pub text: Value,
}

impl BlastOut {
    /// `out` read with its texts and premises.
    pub fn of(out: &elench::ops::blast::BlastOutput) -> BlastOut {
        let b = out.bulk.to_blast();
        let text = |id: &str| out.texts.get(id).cloned().unwrap_or(Value::Null);
        BlastOut {
            layers: b
                .layers
                .into_iter()
                .map(|l| BlastLayer {
                    depth: l.depth,
                    claims: l
                        .claims
                        .into_iter()
                        .map(|m| BlastMember {
                            text: text(&m.id),
                            premises: out.premises.get(&m.id).cloned().unwrap_or_default(),
                            member: m,
                        })
                        .collect(),
                })
                .collect(),
            affected: b
                .affected
                .into_iter()
                .map(|a| BlastAffected {
                    text: text(&a.id),
                    affected: a,
                })
                .collect(),
            root: b.root,
            count: b.count,
            truncated: b.truncated,
        }
    }
}

/// `gate`: the gate's answer as the command line's JSON gives it, with what its documents
/// place beside the violations: a revoked claim's falsified roots, and the policy file.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GateOut {
    pub pass: bool,
    pub tree: String,
    /// The policy in force, defaults filled in
    pub policy: Value,
    /// Sorted by claim id, then rule
    pub violations: Vec<GateViolation>,
    pub counts: elench::gate::Counts,
    /// Where the policy file is in the tree, at its min_in_scope line (where a violation of
    /// the scope as a whole is placed); null for a policy given as policy_toml
    pub policy_place: Option<elench::ops::gate::PolicyPlace>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct GateViolation {
    #[serde(flatten)]
    pub violation: elench::gate::Violation,
    /// For a claim revoked at the tree: the falsified claims it rests on (log-wide), each
    /// with its text and, when it applies at the tree, its path and lines there; left out
    /// when there are none
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub roots: Vec<elench::ops::roots::Root>,
}

impl GateOut {
    /// `out` with each revoked claim's roots beside its violations, the policy at `place`.
    pub fn of(
        out: elench::ops::gate::GateOutput,
        place: Option<elench::ops::gate::PolicyPlace>,
    ) -> GateOut {
        let roots = out.roots;
        let roots_of = |v: &elench::gate::Violation| match (&v.id, v.status) {
            (Some(id), Some(elench::fold::Status::Revoked)) => {
                roots.get(id).cloned().unwrap_or_default()
            }
            _ => Vec::new(),
        };
        GateOut {
            pass: out.pass,
            tree: out.tree,
            policy: out.policy,
            violations: out
                .violations
                .into_iter()
                .map(|v| GateViolation {
                    roots: roots_of(&v),
                    violation: v,
                })
                .collect(),
            counts: out.counts,
            policy_place: place,
        }
    }
}

// The operation answers JSON; this type reads it, so the result is what its schema says.
/// The team's trust policies, as `elench trust show` reports them (docs/trust.md)
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TrustShown {
    /// The pinned root keys
    pub pins: Vec<Map<String, Value>>,
    /// Each version of the policy reached
    pub chain: Vec<Map<String, Value>>,
    /// The policy in force: its keys and roles, the keys it declares compromised, its expiry
    pub in_force: Option<Map<String, Value>>,
    /// Keys trusted locally beside the policy
    pub local_keys: Vec<Map<String, Value>>,
    /// Versions waiting for a missing one
    pub waiting: Vec<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_version: Option<u64>,
    pub equivocations: Vec<Map<String, Value>>,
    /// Whatever else the report holds
    #[serde(flatten)]
    pub more: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::inputs::GateIn;
    use crate::mcp::tools::TOOLS;
    use serde_json::json;

    /// Every schema compiles as 2020-12 (a typo in a keyword's value would not).
    #[test]
    fn every_schema_compiles() {
        for t in TOOLS {
            for s in [(t.input)(), (t.output)()] {
                jsonschema::draft202012::new(&s).unwrap();
                assert_eq!(s["type"], "object", "{}: {s}", t.name);
            }
            assert_eq!(
                (t.input)()["additionalProperties"],
                json!(false),
                "{}",
                t.name
            );
        }
    }

    #[test]
    fn gate_input_takes_one_policy() {
        let v = jsonschema::draft202012::new(&input::<GateIn>()).unwrap();
        assert!(v.is_valid(&json!({"policy": "p.toml"})));
        assert!(v.is_valid(&json!({"policy_toml": "[rules]"})));
        assert!(!v.is_valid(&json!({})));
        assert!(!v.is_valid(&json!({"policy": "a", "policy_toml": "b"})));
        assert!(!v.is_valid(&json!({"policy": "a", "other": 1})));
    }

    /// Kinds and statuses come from their enums: every kind is offered where a kind is.
    #[test]
    fn kinds_and_statuses_are_the_enums() {
        let kinds: Vec<&str> = elench::claim::Kind::ALL
            .iter()
            .map(|k| k.as_str())
            .collect();
        let s = input::<crate::mcp::inputs::ClaimIn>();
        let offered: Vec<&Value> = s["properties"]["kind"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|k| !k.is_null())
            .collect();
        assert_eq!(json!(offered), json!(kinds), "{s}");
        let s = output::<elench::ops::status::StatusOutput>();
        let status = &s["properties"]["claims"]["items"]["properties"]["status"];
        assert!(
            status["enum"].as_array().is_some_and(|e| e.len() == 5),
            "{s}"
        );
    }

    #[test]
    fn a_list_of_claims_replaces_the_single_fields() {
        let v = jsonschema::draft202012::new(&input::<crate::mcp::inputs::ClaimIn>()).unwrap();
        assert!(v.is_valid(&json!({"text": "a"})));
        assert!(
            v.is_valid(&json!({"claims": [{"text": "a"}, {"text": "b", "depends_on": ["@1"]}]}))
        );
        assert!(!v.is_valid(&json!({"claims": [{"text": "a"}], "text": "b"})));
        assert!(!v.is_valid(&json!({"text": "a", "depends_on": ["@1"]})));
        assert!(!v.is_valid(&json!({"text": "a", "producer": "x"})));
        assert!(!v.is_valid(&json!({"claims": [{"text": "a", "signer": "x"}]})));
    }
}
