//! What each tool takes: the types its arguments are read into, whose JSON Schemas
//! (`schemas::input`) are the input schemas the server lists and holds every call to.
//! Limits and patterns are written on the fields; a field's doc comment is its description.

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use std::borrow::Cow;

/// A claim id, or a unique prefix of one (at least 4 hex digits after `cl_`), as the
/// command line accepts.
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct IdOrPrefix(pub String);

impl JsonSchema for IdOrPrefix {
    fn schema_name() -> Cow<'static, str> {
        "IdOrPrefix".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": "^cl_[0-9a-f]{4,64}$",
            "description": "A claim id (cl_ and 64 hex digits) or a unique prefix of at least \
                            4 hex digits after cl_",
        })
    }
}

/// In a list of claims (`claim`'s `claims`): a claim id, a unique prefix of one, or `@N`,
/// the list's Nth claim.
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct ListRef(pub String);

impl JsonSchema for ListRef {
    fn schema_name() -> Cow<'static, str> {
        "ListRef".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": "^(cl_[0-9a-f]{4,64}|@[1-9][0-9]{0,3})$",
            "description": "A claim id, a unique prefix of one, or @N for the Nth claim of \
                            this list",
        })
    }
}

impl From<IdOrPrefix> for String {
    fn from(r: IdOrPrefix) -> String {
        r.0
    }
}

impl From<ListRef> for String {
    fn from(r: ListRef) -> String {
        r.0
    }
}

/// Every cursor elench gives is a position, a number.
const CURSOR: &str = "^[0-9]{1,20}$";

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ClaimsForIn {
    /// Files or folders of the tree, relative to its top (src/lib.rs, src); the claims
    /// anchored in any of them. Absent or empty: every claim
    pub paths: Vec<String>,
    /// How many items (default 20)
    #[schemars(range(min = 1, max = 10000))]
    pub limit: Option<usize>,
    /// Where to go on: the next_cursor of the previous page
    #[schemars(pattern(CURSOR))]
    pub cursor: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusIn {
    /// The claims
    #[schemars(length(min = 1, max = 1000))]
    pub ids: Vec<IdOrPrefix>,
    /// How many of ids (default: all)
    #[schemars(range(min = 1, max = 10000))]
    pub limit: Option<usize>,
    /// Where to go on: the next_cursor of the previous page
    #[schemars(pattern(CURSOR))]
    pub cursor: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BlastIn {
    /// The claim whose falsification is asked about
    pub id: IdOrPrefix,
    /// Only this many layers of dependents (with invert: of premises)
    #[schemars(range(min = 0, max = 1000000))]
    pub depth: Option<usize>,
    /// What the claim rests on instead: its premises, theirs, and so on, in the same layers
    /// (affected is then empty)
    #[serde(default)]
    pub invert: bool,
    /// How many items (default: all): the members layer by layer, the root first, then the
    /// affected claims
    #[schemars(range(min = 1, max = 10000))]
    pub limit: Option<usize>,
    /// Where to go on: the next_cursor of the previous page
    #[schemars(pattern(CURSOR))]
    pub cursor: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WhyIn {
    /// The claim that may rest on the other
    pub from: IdOrPrefix,
    /// The premise it may rest on
    pub to: IdOrPrefix,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShowIn {
    /// The claim
    pub id: IdOrPrefix,
    /// Also the evidence blobs it names (check's transcripts)
    #[serde(default)]
    pub evidence: bool,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct LogIn {
    /// How many items (default 20)
    #[schemars(range(min = 1, max = 10000))]
    pub limit: Option<usize>,
    /// Where to go on: the next_cursor of the previous page
    #[schemars(pattern(CURSOR))]
    pub cursor: Option<String>,
}

/// `trust_show` takes nothing.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrustShowIn {}

// `R` is how a claim names others (in a list, `@N` too). The signer, origin and producer
// are the server's: there is no field for them, and a call naming one is refused by the
// input schema.
/// One claim in the short form of `elench claim --batch` (docs/claims.md)
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
#[schemars(bound = "R: JsonSchema")]
pub struct ShortIn<R = IdOrPrefix> {
    /// What the claim says, in words
    #[schemars(length(min = 1))]
    pub text: Option<String>,
    /// Default: assertion
    pub kind: Option<elench::claim::Kind>,
    /// An elench-predicate-v1 expression that check can evaluate, e.g. exists("src/lib.rs")
    pub predicate: Option<String>,
    /// PATH or PATH:START-END in the server's tree; the claim records the lines' content
    /// digest. Absent: the whole tree
    pub anchor: Vec<String>,
    /// Its premises
    pub depends_on: Vec<R>,
    /// For records (every kind but assertion): the claims it acts on
    pub target: Vec<R>,
    /// KIND[:DIGEST|:EXIT|:URI], as `elench claim --evidence`
    pub evidence: Vec<String>,
    /// The producer's session id
    pub session: Option<String>,
    /// Seconds since 1970 (default: now); given, the id is reproducible
    #[schemars(range(min = 0))]
    pub timestamp: Option<i64>,
}

impl<R> Default for ShortIn<R> {
    fn default() -> Self {
        ShortIn {
            text: None,
            kind: None,
            predicate: None,
            anchor: Vec::new(),
            depends_on: Vec::new(),
            target: Vec::new(),
            evidence: Vec::new(),
            session: None,
            timestamp: None,
        }
    }
}

impl<R: Into<String>> ShortIn<R> {
    pub fn into_short(self) -> elench::ops::claim::ShortClaim {
        elench::ops::claim::ShortClaim {
            text: self.text,
            kind: self.kind,
            predicate: self.predicate,
            anchor: self.anchor,
            depends_on: self.depends_on.into_iter().map(Into::into).collect(),
            target: self.target.into_iter().map(Into::into).collect(),
            evidence: self.evidence,
            // The producer and the signer are the server's, never the call's.
            producer: None,
            session: self.session,
            timestamp: self.timestamp,
            signer: None,
        }
    }
}

// Read by `tools::read_claim`: serde cannot refuse unknown fields through a flattened
// member.
/// One claim (its fields here) or a chain of them (claims)
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = the_list_replaces_the_fields)]
pub struct ClaimIn {
    #[serde(flatten)]
    pub one: ShortIn,
    /// A chain of claims in one call, appended as one group (in place of the single claim's
    /// fields): a claim names an earlier one of the list as @N (1 is the first) in
    /// depends_on or target
    #[schemars(length(min = 1, max = 4096))]
    pub claims: Option<Vec<ShortIn<ListRef>>>,
    /// Build and sign, append nothing
    #[serde(default)]
    pub dry_run: bool,
}

/// With a list, the single claim's fields are not also given; and no other member.
fn the_list_replaces_the_fields(schema: &mut Schema) {
    let one: Vec<String> = schema
        .get("properties")
        .and_then(|p| p.as_object())
        .map(|p| {
            p.keys()
                .filter(|k| *k != "claims" && *k != "dry_run")
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let forbidden: serde_json::Map<String, serde_json::Value> = one
        .into_iter()
        .map(|k| (k, serde_json::Value::Bool(false)))
        .collect();
    schema.insert(
        "dependentSchemas".into(),
        serde_json::json!({"claims": {"properties": forbidden}}),
    );
    schema.insert("additionalProperties".into(), false.into());
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CheckIn {
    /// The predicate claims to evaluate (or all: true)
    pub ids: Vec<IdOrPrefix>,
    /// Every predicate claim that applies at the tree
    pub all: bool,
    /// Seconds one claim's evaluation may take
    #[schemars(range(max = 86400), extend("exclusiveMinimum" = 0))]
    pub timeout: Option<f64>,
    /// Evaluate each claim this many times; a verdict needs them all to agree
    #[schemars(range(min = 1, max = 100))]
    pub repeat: Option<u32>,
    /// Evaluate again a claim already decided at this tree
    pub force: bool,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
#[schemars(extend("oneOf" = [{"required": ["policy"]}, {"required": ["policy_toml"]}]))]
pub struct GateIn {
    /// The policy file (TOML), a file of the server's tree, relative to its top
    pub policy: Option<String>,
    /// The policy itself, as TOML text
    pub policy_toml: Option<String>,
}
