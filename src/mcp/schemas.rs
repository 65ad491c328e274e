//! The JSON Schemas (2020-12) of every tool's input and output.
//!
//! Input schemas are the contract the server holds calls to: every call's arguments are
//! validated against them before anything runs, so a wrong argument is refused with the
//! JSON pointer of the field. Output schemas describe `structuredContent` of a successful
//! call; members may be added, none renamed (like the CLI's `data`). A failed call has no
//! structured content: it is `isError: true` with the JSON `{"error": {...}, "warnings":
//! [...]}` as its text (see [`error`]), since clients check structured content against the
//! output schema. A result the byte cap cut also carries `truncation` (see [`truncation`]
//! and `bound`).

use serde_json::{json, Value};

/// Claim statuses, exactly as the fold names them.
const STATUSES: [&str; 5] = [
    "unevaluated",
    "verified",
    "falsified",
    "superseded",
    "revoked",
];
/// The kinds of claim, as `claim::Kind` spells them.
fn kinds() -> Vec<&'static str> {
    elench::claim::Kind::ALL
        .iter()
        .map(|k| k.as_str())
        .collect()
}
const APPLIES: [&str; 4] = ["anchored", "carried", "stale", "unanchored"];

/// A claim id or a unique prefix of one (as the CLI accepts).
fn id_or_prefix(what: &str) -> Value {
    json!({
        "type": "string",
        "pattern": "^cl_[0-9a-f]{4,64}$",
        "description": format!("{what}: a claim id (cl_ and 64 hex digits) or a unique prefix \
                                of at least 4 hex digits after cl_"),
    })
}

fn id() -> Value {
    json!({"type": "string", "pattern": "^cl_[0-9a-f]{64}$"})
}

fn ids() -> Value {
    json!({"type": "array", "items": id()})
}

fn status() -> Value {
    json!({"type": "string", "enum": STATUSES})
}

fn text_list(description: &str) -> Value {
    json!({"type": "array", "items": {"type": "string"}, "description": description})
}

/// `warnings`, on every result: what the operation noticed on the way (a torn tail cut, an
/// index rebuilt, a premise missing), each with its stable code.
pub fn warnings() -> Value {
    json!({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
            "required": ["code", "message"]
        }
    })
}

/// `truncation`, on a result the byte cap cut: the cap, the whole result's size, and how to
/// get the rest.
pub fn truncation() -> Value {
    json!({
        "type": "object",
        "description": "Present only when the result was cut to the server's byte cap \
                        (ELENCH_MAX_OUTPUT_BYTES when it started)",
        "properties": {
            "cap": {"type": "integer", "minimum": 0},
            "size": {"type": "integer", "minimum": 0,
                     "description": "The bytes the whole result would have taken"},
            "hint": {"type": "string", "description": "How to get the rest"}
        },
        "required": ["cap", "size", "hint"]
    })
}

/// An object schema with these properties, `required` members, and `warnings` and
/// `truncation` added.
fn output(mut properties: Value, required: &[&str]) -> Value {
    properties["warnings"] = warnings();
    properties["truncation"] = truncation();
    let mut req: Vec<&str> = required.to_vec();
    req.push("warnings");
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": properties,
        "required": req,
    })
}

/// An input object schema: only these members.
fn input(properties: Value, required: &[&str]) -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// One claim's standing, as `status` reports it (its stable fields, docs/output.md).
fn claim_status() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": id(),
            "status": status(),
            "own_status": status(),
            "kind": {"type": "string", "enum": kinds()},
            "origin": {"type": "string"},
            "producer": {"type": "string"},
            "signers": {"type": "array", "items": {"type": "string"}},
            "decided_by": ids(),
            "revoked_by": {"type": "array", "items": {
                "type": "object",
                "properties": {"root": id(), "path": ids()},
                "required": ["root", "path"]
            }},
            "missing_premises": ids(),
            "stale_premises": ids(),
            "accepted": {"type": "boolean"},
            "accepted_by": ids(),
            "history": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "id": id(), "kind": {"type": "string"}, "seq": {"type": "integer"},
                    "tree": {"type": "string", "description": "The tree the record observed"},
                    "own_status": status(), "status": status(), "live": {"type": "boolean"}
                },
                "required": ["id", "kind", "seq", "status"]
            }},
            "text": {"type": ["string", "null"]},
        },
        "required": ["id", "status", "own_status", "kind", "origin", "producer", "signers",
                     "decided_by", "revoked_by", "missing_premises", "stale_premises",
                     "accepted_by", "history"]
    })
}

fn pagination() -> Value {
    json!({
        "type": "object",
        "properties": {
            "total": {"type": ["integer", "null"]},
            "returned": {"type": "integer"},
            "truncated": {"type": "boolean"},
            "has_more": {"type": "boolean"},
            "next_cursor": {"type": ["string", "null"],
                            "description": "Give it as cursor for the next page"}
        },
        "required": ["total", "returned", "truncated", "has_more", "next_cursor"]
    })
}

fn limit() -> Value {
    limit_of("How many items (default 20)")
}

fn limit_of(description: &str) -> Value {
    json!({"type": "integer", "minimum": 1, "maximum": 10000, "description": description})
}

fn cursor() -> Value {
    // Every cursor elench gives is a position, a number.
    json!({"type": "string", "pattern": "^[0-9]{1,20}$",
           "description": "Where to go on: the next_cursor of the previous page"})
}

pub fn claims_for_input() -> Value {
    input(
        json!({
            "paths": text_list(
                "Files or folders of the tree, relative to its top (src/lib.rs, src); the \
                 claims anchored in any of them. Absent or empty: every claim"),
            "limit": limit(),
            "cursor": cursor(),
        }),
        &[],
    )
}

pub fn claims_for_output() -> Value {
    let mut row = claim_status();
    row["properties"]["applies"] = json!({"type": "string", "enum": APPLIES});
    row["properties"]["resolved"] = json!({
        "description": "Where its lines are in this tree (null unless it applies)",
        "anyOf": [{"type": "null"}, {
            "type": "object",
            "properties": {
                "path": {"type": ["string", "null"]},
                "range": {"type": ["array", "null"], "items": {"type": "integer"},
                          "minItems": 2, "maxItems": 2}
            },
            "required": ["path", "range"]
        }]
    });
    row["properties"]["anchor_path"] = json!({"type": ["string", "null"],
                                              "description": "The path its anchor names"});
    if let Some(req) = row["required"].as_array_mut() {
        req.push(json!("applies"));
        req.push(json!("resolved"));
    }
    output(
        json!({
            "tree": {"type": "string", "description": "The tree's id (git's SHA-256 tree id)"},
            "as_of": {"type": "integer", "minimum": 0},
            "claims": {"type": "array", "items": row},
            "pagination": pagination()
        }),
        &["tree", "claims", "as_of", "pagination"],
    )
}

pub fn status_input() -> Value {
    input(
        json!({
            "ids": {"type": "array", "items": id_or_prefix("A claim"), "minItems": 1,
                    "maxItems": 1000},
            "limit": limit_of("How many of ids (default: all)"),
            "cursor": cursor(),
        }),
        &["ids"],
    )
}

pub fn status_output() -> Value {
    output(
        json!({
            "claims": {"type": "array", "items": claim_status()},
            "tree": {"type": "string",
                     "description": "The server's tree, where the statuses stand: only the \
                                     verdicts that apply there count"},
            "as_of": {"type": "integer", "minimum": 0,
                      "description": "How many log entries were folded"},
            "pagination": pagination()
        }),
        &["claims", "as_of", "pagination"],
    )
}

pub fn blast_input() -> Value {
    input(
        json!({
            "id": id_or_prefix("The claim whose falsification is asked about"),
            "depth": {"type": "integer", "minimum": 0, "maximum": 1000000,
                      "description": "Only this many layers of dependents (with invert: of \
                                      premises)"},
            "invert": {"type": "boolean",
                       "description": "What the claim rests on instead: its premises, theirs, \
                                       and so on, in the same layers (affected is then empty)"},
            "limit": limit_of("How many items (default: all): the members layer by layer, \
                               the root first, then the affected claims"),
            "cursor": cursor(),
        }),
        &["id"],
    )
}

pub fn blast_output() -> Value {
    output(
        json!({
            "root": id(),
            "count": {"type": "integer", "minimum": 0,
                      "description": "Members, the root excluded"},
            "layers": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "depth": {"type": "integer", "minimum": 0},
                    "claims": {"type": "array", "items": {
                        "type": "object",
                        "properties": {
                            "id": id(), "kind": {"type": "string"}, "status": status(),
                            "via": {"anyOf": [id(), {"type": "null"}]}
                        },
                        "required": ["id", "kind", "status", "via"]
                    }}
                },
                "required": ["depth", "claims"]
            }},
            "affected": {"type": "array", "items": {
                "type": "object",
                "properties": {"id": id(), "status": status(), "decided_by": ids()},
                "required": ["id", "status"]
            }},
            "truncated": {"type": "boolean",
                          "description": "Whether depth left members out"},
            "pagination": {
                "description": "The page's items are the members layer by layer (the root \
                                first), then the affected claims; total counts them all",
                "allOf": [pagination()]
            }
        }),
        &["root", "count", "layers", "affected", "pagination"],
    )
}

pub fn why_input() -> Value {
    input(
        json!({
            "from": id_or_prefix("The claim that may rest on the other"),
            "to": id_or_prefix("The premise it may rest on"),
        }),
        &["from", "to"],
    )
}

pub fn why_output() -> Value {
    output(
        json!({
            "from": id(),
            "to": id(),
            "path": {"description": "[from, …, to], each naming the next among its premises \
                                     (dependsOn); null when from does not rest on to",
                     "anyOf": [{"type": "array", "items": id(), "minItems": 1},
                               {"type": "null"}]},
            "length": {"type": ["integer", "null"], "minimum": 0,
                       "description": "The number of dependsOn steps, or null"},
            "steps": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "id": id(),
                    "status": status(),
                    "text": {"type": ["string", "null"]}
                },
                "required": ["id", "status", "text"]
            }},
            "reverse_path": {"type": "boolean",
                             "description": "With no path: whether to rests on from instead"}
        }),
        &["from", "to", "path", "length", "steps", "reverse_path"],
    )
}

pub fn show_input() -> Value {
    input(
        json!({
            "id": id_or_prefix("The claim"),
            "evidence": {"type": "boolean",
                         "description": "Also the evidence blobs it names (check's transcripts)"}
        }),
        &["id"],
    )
}

pub fn show_output() -> Value {
    output(
        json!({
            "id": id(),
            "seq": {"type": "integer", "minimum": 0, "description": "Its number in the log"},
            "claim": {"type": "object", "description": "The claim as signed"},
            "signers": {"type": "array", "items": {"type": "object"}},
            "status": status(),
            "history": {"type": "array", "items": {"type": "object"}},
            "evidence": {"type": "array", "items": {"type": "object"}}
        }),
        &["id", "claim", "signers", "status", "history"],
    )
}

pub fn log_input() -> Value {
    input(json!({"limit": limit(), "cursor": cursor()}), &[])
}

pub fn log_output() -> Value {
    output(
        json!({
            "entries": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "seq": {"type": "integer"}, "id": id(), "kind": {"type": "string"},
                    "origin": {"type": "string"}, "producer": {"type": "string"},
                    "target": ids(), "depends_on": ids(),
                    "signers": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["seq", "id", "kind", "origin", "producer"]
            }},
            "pagination": pagination()
        }),
        &["entries", "pagination"],
    )
}

/// The fields of one claim in the short form of `elench claim --batch` (docs/claims.md);
/// in a list (`refs`), premises and targets may also be `@N`, the list's Nth claim.
fn short_claim(refs: bool) -> Value {
    let reference = |what: &str| {
        let mut r = id_or_prefix(what);
        if refs {
            r["pattern"] = json!("^(cl_[0-9a-f]{4,64}|@[1-9][0-9]{0,3})$");
            r["description"] = json!(format!(
                "{what}: a claim id, a unique prefix of one, or @N for the Nth claim of this list"
            ));
        }
        r
    };
    json!({
        "text": {"type": "string", "minLength": 1,
                 "description": "What the claim says, in words"},
        "kind": {"type": "string", "enum": kinds(), "description": "Default: assertion"},
        "predicate": {"type": "string",
                      "description": "An elench-predicate-v1 expression that check can \
                                      evaluate, e.g. exists(\"src/lib.rs\")"},
        "anchor": text_list("PATH or PATH:START-END in the server's tree; the claim \
                             records the lines' content digest. Absent: the whole tree"),
        "depends_on": {"type": "array", "items": reference("A premise")},
        "target": {"type": "array", "items": reference("A claim this record acts on"),
                   "description": "For records (falsification, verification, \
                                   supersession, residue-acceptance)"},
        "evidence": text_list("KIND[:DIGEST|:EXIT|:URI], as `elench claim --evidence`"),
        "session": {"type": "string", "description": "The producer's session id"},
        "timestamp": {"type": "integer", "minimum": 0,
                      "description": "Seconds since 1970 (default: now); given, the id is \
                                      reproducible"}
    })
}

/// The single-claim fields, which `claims` replaces.
const SHORT_FIELDS: [&str; 9] = [
    "text",
    "kind",
    "predicate",
    "anchor",
    "depends_on",
    "target",
    "evidence",
    "session",
    "timestamp",
];

pub fn claim_input() -> Value {
    let mut properties = short_claim(false);
    properties["dry_run"] = json!({"type": "boolean",
                                   "description": "Build and sign, append nothing"});
    properties["claims"] = json!({
        "type": "array",
        "minItems": 1,
        "maxItems": 4096,
        "items": {"type": "object", "properties": short_claim(true),
                  "additionalProperties": false},
        "description": "A chain of claims in one call, appended as one group (in place of the \
                        single claim's fields): a claim names an earlier one of the list as \
                        @N (1 is the first) in depends_on or target"
    });
    let mut s = input(properties, &[]);
    // With a list, the single claim's fields are not also given.
    let forbidden: serde_json::Map<String, Value> = SHORT_FIELDS
        .iter()
        .map(|f| ((*f).to_owned(), json!(false)))
        .collect();
    s["dependentSchemas"] = json!({"claims": {"properties": forbidden}});
    s
}

fn claim_row() -> Value {
    json!({
        "id": id(),
        "effect": {"type": "string", "enum": ["created", "merged", "noop"],
                   "description": "created: a new claim; merged: a new signature on a \
                                   stored claim; noop: stored already. In a dry run, what \
                                   the append would do"},
        "status": {"anyOf": [status(), {"type": "null"}],
                   "description": "Its status after the append (null in a dry run)"},
        "kind": {"type": "string", "enum": kinds()},
        "origin": {"type": "string"},
        "producer": {"type": "string"},
        "signer": {"type": "string", "description": "The keyid that signed it"},
        "line": {"type": ["integer", "null"], "description": "Its place in claims (1 first)"},
        "claim": {"type": "object", "description": "The claim as signed (dry run)"},
        "envelope": {"type": "object", "description": "The signed envelope (dry run)"}
    })
}

pub fn claim_output() -> Value {
    // One claim given: its row's fields at the top too, as the command line puts its id.
    let mut properties = claim_row();
    properties["claims"] = json!({"type": "array", "items": {
        "type": "object",
        "properties": claim_row(),
        "required": ["id", "effect", "status", "kind", "origin", "producer", "signer"]
    }});
    for count in ["created", "merged", "noop"] {
        properties[count] = json!({"type": "integer", "minimum": 0});
    }
    properties["dry_run"] = json!({"type": "boolean"});
    properties["effect"] = json!({
        "type": "string",
        "enum": ["created", "updated", "noop", "would_create", "would_update"],
        "description": "The call as a whole, as the command line reports it: created when a \
                        claim is new, updated when only new signatures were added, noop when \
                        all was stored already; would_create or would_update in a dry run"
    });
    output(
        properties,
        &["claims", "created", "merged", "noop", "dry_run", "effect"],
    )
}

pub fn check_input() -> Value {
    input(
        json!({
            "ids": {"type": "array", "items": id_or_prefix("A predicate claim"),
                    "description": "The claims to evaluate (or all: true)"},
            "all": {"type": "boolean",
                    "description": "Every predicate claim that applies at the tree"},
            "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": 86400,
                        "description": "Seconds one claim's evaluation may take"},
            "repeat": {"type": "integer", "minimum": 1, "maximum": 100,
                       "description": "Evaluate each claim this many times; a verdict \
                                       needs them all to agree"},
            "force": {"type": "boolean",
                      "description": "Evaluate again a claim already decided at this tree"}
        }),
        &[],
    )
}

pub fn check_output() -> Value {
    output(
        json!({
            "checked": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "id": id(),
                    "outcome": {"type": "string", "enum": ["verified", "falsified",
                                "inconclusive", "not-applicable", "unchanged", "flaky"]},
                    "reason": {"type": ["string", "null"]},
                    "record": {"anyOf": [id(), {"type": "null"}]},
                    "evidence": {"type": ["string", "null"],
                                 "description": "SHA-256 of the stored transcript"},
                    "seconds": {"type": ["number", "null"],
                                "description": "How long the evaluation took"}
                },
                "required": ["id", "outcome", "record"]
            }},
            "tree": {"type": "string", "description": "The checked tree's id"},
            "hermeticity": {"type": "string", "enum": ["container", "none"]},
            "counts": {"type": "object"},
            "effect": {"type": "string", "enum": ["created", "noop"]}
        }),
        &["checked", "tree", "counts", "effect"],
    )
}

pub fn gate_input() -> Value {
    let mut s = input(
        json!({
            "policy": {"type": "string",
                       "description": "The policy file (TOML), a file of the server's \
                                       tree, relative to its top"},
            "policy_toml": {"type": "string", "description": "The policy itself, as TOML text"}
        }),
        &[],
    );
    s["oneOf"] = json!([{"required": ["policy"]}, {"required": ["policy_toml"]}]);
    s
}

pub fn gate_output() -> Value {
    output(
        json!({
            "pass": {"type": "boolean", "description": "Whether the tree may ship"},
            "tree": {"type": "string"},
            "violations": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "id": {"anyOf": [id(), {"type": "null"}]},
                    "rule": {"type": "string"},
                    "status": {"anyOf": [status(), {"type": "null"}]},
                    "applies": {"type": ["string", "null"]},
                    "message": {"type": "string"}
                },
                "required": ["id", "rule", "status", "applies"]
            }},
            "counts": {"type": "object"}
        }),
        &["pass", "violations", "counts"],
    )
}

pub fn trust_show_input() -> Value {
    input(json!({}), &[])
}

/// `trust_show`: what `elench trust show` reports (docs/trust.md).
pub fn trust_show_output() -> Value {
    let entries = json!({"type": "array", "items": {"type": "object"}});
    output(
        json!({
            "pins": entries.clone(),
            "chain": entries.clone(),
            "in_force": {"type": ["object", "null"]},
            "local_keys": entries.clone(),
            "waiting": entries.clone(),
            "missing_version": {"type": ["integer", "null"]},
            "equivocations": entries,
        }),
        &[
            "pins",
            "chain",
            "in_force",
            "local_keys",
            "waiting",
            "equivocations",
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every schema compiles as 2020-12 (a typo in a keyword's value would not).
    #[test]
    fn every_schema_compiles() {
        for s in [
            claims_for_input(),
            claims_for_output(),
            status_input(),
            status_output(),
            blast_input(),
            blast_output(),
            why_input(),
            why_output(),
            show_input(),
            show_output(),
            log_input(),
            log_output(),
            claim_input(),
            claim_output(),
            check_input(),
            check_output(),
            gate_input(),
            gate_output(),
        ] {
            jsonschema::draft202012::new(&s).unwrap();
            assert_eq!(s["type"], "object");
        }
    }

    #[test]
    fn gate_input_takes_one_policy() {
        let v = jsonschema::draft202012::new(&gate_input()).unwrap();
        assert!(v.is_valid(&json!({"policy": "p.toml"})));
        assert!(v.is_valid(&json!({"policy_toml": "[rules]"})));
        assert!(!v.is_valid(&json!({})));
        assert!(!v.is_valid(&json!({"policy": "a", "policy_toml": "b"})));
        assert!(!v.is_valid(&json!({"policy": "a", "other": 1})));
    }
}
