//! The typed view of a validated claim: what the store, the fold and the graph read.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// `kind` of a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
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
#[serde(rename_all = "kebab-case")]
pub enum OriginKind {
    HarnessObserved,
    AgentAsserted,
    HumanAsserted,
}

impl Kind {
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

/// A claim that passed every check of `claim::validate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// The claim exactly as signed (the statement's predicate).
    pub body: Value,
}
