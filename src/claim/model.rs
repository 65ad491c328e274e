//! The typed view of a validated claim: what the store, the fold and the graph read.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

// With the `cli` feature it is also the command line's `--kind` value (clap spells the
// variants in kebab case, as serde does) and the MCP schemas' enum of kinds.
/// `kind` of a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema, clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Assertion,
    Falsification,
    Verification,
    Supersession,
    ResidueAcceptance,
}

/// `origin.kind` of a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum OriginKind {
    HarnessObserved,
    AgentAsserted,
    HumanAsserted,
}

impl Kind {
    /// Every kind, in the order the schema lists them: where a front end offers the kinds
    /// (the CLI's `--kind`, the MCP schemas), it takes them from here.
    pub const ALL: [Kind; 5] = [
        Kind::Assertion,
        Kind::Falsification,
        Kind::Verification,
        Kind::Supersession,
        Kind::ResidueAcceptance,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Assertion => "assertion",
            Kind::Falsification => "falsification",
            Kind::Verification => "verification",
            Kind::Supersession => "supersession",
            Kind::ResidueAcceptance => "residue-acceptance",
        }
    }
}

impl OriginKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OriginKind::HarnessObserved => "harness-observed",
            OriginKind::AgentAsserted => "agent-asserted",
            OriginKind::HumanAsserted => "human-asserted",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for OriginKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The header of a claim that passed every check of `claim::validate`: the fields the fold,
/// the graph and the index read. The claim's text is elsewhere, in a [`Body`] (the whole
/// predicate as signed) or a [`Summary`] (what the index keeps of it), so the type says
/// which one a caller holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    pub id: String,
    pub kind: Kind,
    /// Records act on these (empty for assertions).
    pub target: Vec<String>,
    /// Premises.
    pub depends_on: Vec<String>,
    pub origin: OriginKind,
    pub producer: String,
    pub anchor_tree: String,
    pub timestamp: i64,
}

/// What every reading of a claim's text holds: its anchor (with `tree`) and its assertion's
/// form and text. Both [`Body`] and [`Summary`] give it.
pub trait Gist {
    /// The JSON read: the predicate, or the index's abbreviation of it (same shape).
    fn json(&self) -> &Value;
    /// The `anchor` object, if there is one.
    fn anchor(&self) -> Option<&Value> {
        self.json().get("anchor")
    }
    /// `assertion.form`.
    fn form(&self) -> Option<&str> {
        self.json()
            .pointer("/assertion/form")
            .and_then(Value::as_str)
    }
    /// `assertion.text`, as stored (a JSON string, or absent).
    fn text_value(&self) -> Option<&Value> {
        self.json().pointer("/assertion/text")
    }
    /// `assertion.text` as a string.
    fn text(&self) -> Option<&str> {
        self.text_value().and_then(Value::as_str)
    }
}

/// The claim as signed: the Statement's predicate, whole (read from the log).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Body(Value);

impl Body {
    /// Wraps a predicate; `claim::validate` is what checks it.
    pub fn new(predicate: Value) -> Body {
        Body(predicate)
    }
    pub fn as_value(&self) -> &Value {
        &self.0
    }
    pub fn into_value(self) -> Value {
        self.0
    }
    /// The `assertion` object (`Null` for a record).
    pub fn assertion(&self) -> &Value {
        &self.0["assertion"]
    }
    /// The `evidence` entries (none when absent).
    pub fn evidence(&self) -> &[Value] {
        self.0["evidence"].as_array().map_or(&[], Vec::as_slice)
    }
}

impl Gist for Body {
    fn json(&self) -> &Value {
        &self.0
    }
}

/// What the index keeps of a claim's body, read without the log: `anchor` (with its tree)
/// and `assertion.{form,text}`, nothing else.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Summary(Value);

impl Summary {
    /// Wraps the summary as the body it abbreviates (`store::index::ClaimEntry::summary_body`).
    pub fn new(abbreviated: Value) -> Summary {
        Summary(abbreviated)
    }
    pub fn as_value(&self) -> &Value {
        &self.0
    }
}

impl Gist for Summary {
    fn json(&self) -> &Value {
        &self.0
    }
}

/// The members of an index summary's JSON that a gate reads before it resolves anchors,
/// borrowed from the text: no JSON value is built. Only the plain shape is read this way:
/// every member present has the type it must have (no `null`), no string holds an escape,
/// no member is repeated. For anything else [`SummaryParts::parse`] answers None and the
/// summary is read as a [`Summary`], whose reading is the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub struct SummaryParts<'a> {
    #[serde(default, deserialize_with = "present", borrow)]
    pub anchor: Option<AnchorParts<'a>>,
    #[serde(default, deserialize_with = "present", borrow)]
    pub assertion: Option<AssertionParts<'a>>,
}

/// `anchor`'s members as [`SummaryParts`] reads them (its `tree` is the claim's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub struct AnchorParts<'a> {
    #[serde(default, deserialize_with = "present")]
    pub strategy: Option<&'a str>,
    #[serde(default, deserialize_with = "present")]
    pub path: Option<&'a str>,
    #[serde(default, deserialize_with = "present")]
    pub range: Option<[u64; 2]>,
    #[serde(default, deserialize_with = "present", rename = "contentDigest")]
    pub content_digest: Option<&'a str>,
}

/// `assertion.form`, as [`SummaryParts`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub struct AssertionParts<'a> {
    #[serde(default, deserialize_with = "present")]
    pub form: Option<&'a str>,
}

/// A member that is there: it must have its type (`null` is not an absent member).
fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

impl<'a> SummaryParts<'a> {
    /// Reads an index summary's JSON text (`{"anchor": …, "assertion": {"form", "text"}}`),
    /// or None when it is not of the plain shape (see [`SummaryParts`]).
    pub fn parse(json: &'a str) -> Option<SummaryParts<'a>> {
        serde_json::from_str(json).ok()
    }

    /// `assertion.form`.
    pub fn form(&self) -> Option<&'a str> {
        self.assertion.and_then(|a| a.form)
    }

    /// `assertion.text` of an index summary's JSON text, read without a JSON value (escapes
    /// decoded); None when the summary is not of the plain shape (then read it as a
    /// [`Summary`]).
    pub fn text(json: &str) -> Option<Option<String>> {
        #[derive(Deserialize)]
        struct Outer {
            #[serde(default, deserialize_with = "present")]
            assertion: Option<Inner>,
        }
        #[derive(Deserialize)]
        struct Inner {
            #[serde(default, deserialize_with = "present")]
            text: Option<String>,
        }
        let outer: Outer = serde_json::from_str(json).ok()?;
        Some(outer.assertion.and_then(|a| a.text))
    }
}
