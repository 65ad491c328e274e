//! Property tests of the claim id (docs/envelope.md): `cl_` + hex SHA-256 of the RFC 8785 form of
//! the claim without its `id`.
//!
//! For random valid claims (random texts, timestamps, producers, optional members, kinds):
//! - the id does not depend on member order, whitespace or string escaping: the claim is
//!   written as JSON text by hand with members shuffled at every level, random whitespace and
//!   randomly `\u`-escaped characters, parsed back (serde_json keeps member order here, since
//!   the crate enables `preserve_order`), and must get the same id;
//! - changing any one field (text, timestamp, producer id, tree, strategy, target, …) changes
//!   the id.

use elench::claim::{compute_id, with_id};
use elench::json::parse_strict;
use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// A claim as generated, before it is turned into JSON.
#[derive(Debug, Clone)]
struct Spec {
    kind: &'static str,
    origin: &'static str,
    targets: Vec<String>,
    text: Option<String>,
    form_predicate: bool,
    producer: String,
    session: Option<String>,
    hermeticity: Option<&'static str>,
    tree: String,
    strategy: &'static str,
    path: Option<String>,
    range: Option<(i64, i64)>,
    timestamp: i64,
    depends_on: Vec<String>,
    evidence_exit: Option<i64>,
}

impl Spec {
    fn to_value(&self) -> Value {
        let mut assertion = Map::new();
        if self.form_predicate {
            assertion.insert("form".into(), json!("predicate"));
            assertion.insert(
                "expression".into(),
                json!({"language": "elench-predicate-v1", "source": "exists(\"src/lib.rs\")"}),
            );
        } else {
            assertion.insert("form".into(), json!("annotation"));
        }
        if let Some(t) = &self.text {
            assertion.insert("text".into(), json!(t));
        }
        let mut producer = Map::new();
        producer.insert("id".into(), json!(self.producer));
        if let Some(s) = &self.session {
            producer.insert("sessionId".into(), json!(s));
        }
        if let Some(h) = self.hermeticity {
            producer.insert("hermeticity".into(), json!(h));
        }
        let mut anchor = Map::new();
        anchor.insert("tree".into(), json!(self.tree));
        anchor.insert("strategy".into(), json!(self.strategy));
        if let Some(p) = &self.path {
            anchor.insert("path".into(), json!(p));
        }
        if let Some((s, e)) = self.range {
            anchor.insert("range".into(), json!([s, e]));
        }
        let mut claim = Map::new();
        claim.insert("kind".into(), json!(self.kind));
        if self.kind != "assertion" {
            claim.insert("target".into(), json!(self.targets));
        }
        claim.insert("assertion".into(), Value::Object(assertion));
        claim.insert(
            "origin".into(),
            json!({"kind": self.origin, "producer": Value::Object(producer)}),
        );
        claim.insert("anchor".into(), Value::Object(anchor));
        claim.insert("timestamp".into(), json!(self.timestamp));
        if !self.depends_on.is_empty() {
            claim.insert("dependsOn".into(), json!(self.depends_on));
        }
        if let Some(code) = self.evidence_exit {
            claim.insert(
                "evidence".into(),
                json!([{"kind": "process-exit", "exitCode": code}]),
            );
        }
        Value::Object(claim)
    }
}

fn hex64() -> impl Strategy<Value = String> {
    "[0-9a-f]{64}"
}

fn claim_id() -> impl Strategy<Value = String> {
    hex64().prop_map(|h| format!("cl_{h}"))
}

/// Text with any characters (including quotes, backslashes, controls and astral ones).
fn text() -> impl Strategy<Value = String> {
    prop_oneof!["\\PC{0,60}", "[a-z \"\\\\/\\x00-\\x1f\\x7fé€😀]{0,40}",]
}

fn spec() -> impl Strategy<Value = Spec> {
    let kind = prop_oneof![
        Just(("assertion", "agent-asserted")),
        Just(("assertion", "harness-observed")),
        Just(("assertion", "human-asserted")),
        Just(("falsification", "agent-asserted")),
        Just(("supersession", "human-asserted")),
        Just(("verification", "harness-observed")),
        Just(("residue-acceptance", "human-asserted")),
    ];
    (
        (
            kind,
            prop::collection::vec(claim_id(), 1..4),
            prop::option::of(text()),
            any::<bool>(),
            "\\PC{1,30}",
            prop::option::of("[a-zA-Z0-9-]{1,20}"),
            prop::option::of(prop_oneof![
                Just("none"),
                Just("container"),
                Just("vm"),
                Just("hermetic-derivation")
            ]),
        ),
        (
            hex64(),
            prop_oneof![
                Just("path-range"),
                Just("symbol"),
                Just("content-digest"),
                Just("multi")
            ],
            prop::option::of("[a-z/._]{1,30}"),
            prop::option::of((1i64..10_000, 0i64..10_000)),
            // Timestamps an IEEE double holds exactly (I-JSON), negative ones included.
            -(1i64 << 53)..=(1i64 << 53),
            prop::collection::vec(claim_id(), 0..4),
            prop::option::of(-255i64..=255),
        ),
    )
        .prop_map(
            |(
                ((kind, origin), targets, text, form_predicate, producer, session, hermeticity),
                (tree, strategy, path, range, timestamp, depends_on, evidence_exit),
            )| Spec {
                kind,
                origin,
                targets,
                text,
                form_predicate: form_predicate && kind == "assertion",
                producer,
                session,
                hermeticity,
                tree,
                strategy,
                path,
                range: range.map(|(s, len)| (s, s + len)),
                timestamp,
                depends_on,
                evidence_exit,
            },
        )
}

/// A tiny deterministic generator, seeded by proptest, for the layout choices.
struct Layout(u64);

impl Layout {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn space(&mut self) -> &'static str {
        ["", "", " ", "\n", "\t", "  \r\n  "][self.below(6)]
    }
}

/// Writes `value` as JSON text: object members in a random order, random insignificant
/// whitespace, and each string character either raw or as a `\u` escape.
fn write_shuffled(value: &Value, layout: &mut Layout, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            for i in (1..members.len()).rev() {
                let j = layout.below(i + 1);
                members.swap(i, j);
            }
            out.push('{');
            for (i, (k, v)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(layout.space());
                write_string(k, layout, out);
                out.push_str(layout.space());
                out.push(':');
                out.push_str(layout.space());
                write_shuffled(v, layout, out);
                out.push_str(layout.space());
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(layout.space());
                write_shuffled(v, layout, out);
                out.push_str(layout.space());
            }
            out.push(']');
        }
        Value::String(s) => write_string(s, layout, out),
        other => out.push_str(&other.to_string()),
    }
}

fn write_string(s: &str, layout: &mut Layout, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        let must_escape = c == '"' || c == '\\' || (c as u32) < 0x20;
        if must_escape || layout.below(4) == 0 {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{:04x}", u));
            }
        } else {
            out.push(c);
        }
    }
    out.push('"');
}

fn id_of(value: &Value) -> String {
    compute_id(value.as_object().unwrap()).unwrap()
}

/// One-field changes, each of which must change the id. Returns (what changed, claim).
fn mutations(spec: &Spec) -> Vec<(&'static str, Value)> {
    let mut out = Vec::new();
    let mut push = |what: &'static str, s: Spec| out.push((what, s.to_value()));

    let mut s = spec.clone();
    s.text = Some(format!("{}.", spec.text.clone().unwrap_or_default()));
    push("text", s);

    let mut s = spec.clone();
    s.text = match &spec.text {
        Some(_) => None,
        None => Some(String::new()),
    };
    push("text presence", s);

    let mut s = spec.clone();
    s.timestamp = if spec.timestamp < (1i64 << 53) {
        spec.timestamp + 1
    } else {
        spec.timestamp - 1
    };
    push("timestamp", s);

    let mut s = spec.clone();
    s.producer.push('x');
    push("producer id", s);

    let mut s = spec.clone();
    s.session = match &spec.session {
        Some(x) => Some(format!("{x}x")),
        None => Some("session".into()),
    };
    push("producer sessionId", s);

    let mut s = spec.clone();
    let last = if spec.tree.ends_with('0') { "1" } else { "0" };
    s.tree = format!("{}{last}", &spec.tree[..63]);
    push("anchor tree", s);

    let mut s = spec.clone();
    s.strategy = if spec.strategy == "multi" {
        "symbol"
    } else {
        "multi"
    };
    push("anchor strategy", s);

    let mut s = spec.clone();
    s.origin = match spec.origin {
        "agent-asserted" => "human-asserted",
        _ => "agent-asserted",
    };
    push("origin kind", s);

    let mut s = spec.clone();
    s.depends_on.push(format!("cl_{}", "e".repeat(64)));
    push("dependsOn", s);

    if spec.kind == "assertion" {
        let mut s = spec.clone();
        s.form_predicate = !spec.form_predicate;
        push("assertion form", s);
    } else {
        let mut s = spec.clone();
        let t = &spec.targets[0];
        let last = if t.ends_with('0') { "1" } else { "0" };
        s.targets[0] = format!("{}{last}", &t[..t.len() - 1]);
        push("target", s);

        let mut s = spec.clone();
        s.targets.reverse();
        s.targets.push(spec.targets[0].clone());
        push("target list", s);

        let mut s = spec.clone();
        s.kind = if spec.kind == "falsification" {
            "supersession"
        } else {
            "falsification"
        };
        push("kind", s);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Generated claims are valid claims, and `with_id` gives them the id `compute_id` does.
    #[test]
    fn generated_claims_are_valid(spec in spec()) {
        let value = spec.to_value();
        let (claim, obj) = with_id(&value)
            .map_err(|e| TestCaseError::fail(format!("{e} for {value}")))?;
        prop_assert_eq!(&claim.id, &id_of(&value));
        prop_assert_eq!(obj.get("id"), Some(&json!(claim.id)));
    }

    /// The id does not depend on member order, whitespace, string escapes or an `id` member.
    #[test]
    fn id_ignores_layout(spec in spec(), seed in any::<u64>(), with_stale_id in any::<bool>()) {
        let value = spec.to_value();
        let want = id_of(&value);
        prop_assert!(want.starts_with("cl_") && want.len() == 67);

        let mut value_with_id = value.clone();
        if with_stale_id {
            value_with_id["id"] = json!(format!("cl_{}", "0".repeat(64)));
        }
        let mut layout = Layout(seed | 1);
        let mut text = String::new();
        write_shuffled(&value_with_id, &mut layout, &mut text);

        // Read as serde_json does (order kept) and as elench's strict reader does.
        let parsed: Value = serde_json::from_str(&text)
            .map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
        prop_assert_eq!(id_of(&parsed), want.clone(), "serde_json read of {}", text);
        let strict = parse_strict(text.as_bytes())
            .map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
        prop_assert_eq!(id_of(&strict), want.clone(), "strict read of {}", text);

        // And `with_id` (what `elench sign` does) agrees.
        let (claim, _) = with_id(&strict).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(claim.id, want);
    }

    /// Changing any one field changes the id.
    #[test]
    fn id_changes_with_any_field(spec in spec()) {
        let base = id_of(&spec.to_value());
        for (what, changed) in mutations(&spec) {
            prop_assert_ne!(&changed, &spec.to_value(), "{} must change the claim", what);
            prop_assert_ne!(id_of(&changed), base.clone(), "changing {} kept the id", what);
        }
    }
}
