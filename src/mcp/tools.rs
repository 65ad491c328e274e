//! The tools: their names, descriptions, annotations and schemas, and the call of each, which
//! is one call into the library (never a subprocess of elench).

use super::{adapters, schemas, Config};
use crate::ops::{Failure, Observer};
use serde::Deserialize;
use serde_json::Value;

/// One tool as the server lists it.
#[derive(Debug, Clone, Copy)]
pub struct ToolDef {
    /// The stable name agents call it by.
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    /// `readOnlyHint`: it changes nothing (served under `--read-only`).
    pub read_only: bool,
    /// `idempotentHint`: the same call again changes nothing more.
    pub idempotent: bool,
    /// Served only with a harness key (`check`, whose records it signs).
    pub needs_harness_key: bool,
    pub input: fn() -> Value,
    pub output: fn() -> Value,
}

/// Every tool, in the order `tools/list` gives them. Nothing elench does destroys anything:
/// the log is append-only, so `destructiveHint` is false throughout.
pub const TOOLS: [ToolDef; 8] = [
    ToolDef {
        name: "claims_for",
        title: "Claims about these paths",
        description: "The claims about the given paths of the server's tree (or about the \
                      whole tree), each with its status and whether it applies there: \
                      anchored (made at this tree), carried (its lines are unchanged here), \
                      stale (its lines changed or are gone), unanchored (a whole-tree claim \
                      about another tree). Read this before changing code.",
        read_only: true,
        idempotent: true,
        needs_harness_key: false,
        input: schemas::claims_for_input,
        output: schemas::claims_for_output,
    },
    ToolDef {
        name: "status",
        title: "Status of claims",
        description: "Each claim's standing, folded from the log: unevaluated, verified, \
                      falsified, superseded or revoked (a premise fell), with the records that \
                      decided it, the falsified roots that revoke it, missing and stale \
                      premises, and its history.",
        read_only: true,
        idempotent: true,
        needs_harness_key: false,
        input: schemas::status_input,
        output: schemas::status_output,
    },
    ToolDef {
        name: "blast",
        title: "Blast radius",
        description: "What a falsification of a claim revokes: every claim built on it \
                      through dependsOn, in layers by depth, and the claims outside whose \
                      status a record inside decides (affected).",
        read_only: true,
        idempotent: true,
        needs_harness_key: false,
        input: schemas::blast_input,
        output: schemas::blast_output,
    },
    ToolDef {
        name: "show",
        title: "Show a claim",
        description: "A claim as signed, who signed it, its status and the records that \
                      target it.",
        read_only: true,
        idempotent: true,
        needs_harness_key: false,
        input: schemas::show_input,
        output: schemas::show_output,
    },
    ToolDef {
        name: "log",
        title: "The log",
        description: "The claims in arrival order, a page at a time (limit, cursor).",
        read_only: true,
        idempotent: true,
        needs_harness_key: false,
        input: schemas::log_input,
        output: schemas::log_output,
    },
    ToolDef {
        name: "claim",
        title: "Record a claim",
        description: "Builds a claim (an assertion by default, or a record acting on target \
                      claims), signs it with the server's key and appends it to the log. \
                      Anchors are read from the server's tree; ids may be unique prefixes. \
                      The signer, origin and store are the server's, never the caller's.",
        read_only: false,
        idempotent: false,
        needs_harness_key: false,
        input: schemas::claim_input,
        output: schemas::claim_output,
    },
    ToolDef {
        name: "check",
        title: "Check predicate claims",
        description: "Evaluates predicate claims at the server's tree in a sandbox (no \
                      network, the tree read-only underneath) and appends what was observed \
                      as verification or falsification records signed with the server's \
                      harness key.",
        read_only: false,
        idempotent: false,
        needs_harness_key: true,
        input: schemas::check_input,
        output: schemas::check_output,
    },
    ToolDef {
        name: "gate",
        title: "Dry-run a release gate",
        description: "Decides from the log alone whether the server's tree may ship under a \
                      policy (TOML: scope and rules), naming every claim that breaks a rule. \
                      A tree that may not ship is an answer (pass: false), not an error.",
        read_only: true,
        idempotent: true,
        needs_harness_key: false,
        input: schemas::gate_input,
        output: schemas::gate_output,
    },
];

/// The tools this server offers: `check` only with a harness key, and under `--read-only`
/// only the tools that change nothing.
pub fn served(config: &Config) -> Vec<&'static ToolDef> {
    TOOLS
        .iter()
        .filter(|t| !t.needs_harness_key || config.harness_key.is_some())
        .filter(|t| t.read_only || !config.read_only)
        .collect()
}

/// Why a tool this server has is not served, for the protocol error of a call to it.
pub fn not_served(config: &Config, name: &str) -> String {
    match TOOLS.iter().find(|t| t.name == name) {
        Some(t) if config.read_only && !t.read_only => format!(
            "tool {name} is not served: this server was started with --read-only, which \
             serves only the tools that change nothing"
        ),
        Some(t) if t.needs_harness_key => format!(
            "tool {name} is not served: start the server with --harness-key HARNESS.pem to \
             offer it"
        ),
        _ => {
            let names: Vec<&str> = served(config).iter().map(|t| t.name).collect();
            format!("no tool {name:?}; the tools are {}", names.join(", "))
        }
    }
}

/// Arguments that pass the input schema but not the typed reading (which the schema should
/// have caught) are refused the same way.
fn read<T: for<'de> Deserialize<'de>>(tool: &str, args: Value) -> Result<T, Failure> {
    serde_json::from_value(args)
        .map_err(|e| Failure::Usage(format!("{tool}: the arguments do not fit its input: {e}")))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClaimsForIn {
    pub paths: Vec<String>,
    pub status: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatusIn {
    pub ids: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlastIn {
    pub id: String,
    pub depth: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShowIn {
    pub id: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogIn {
    pub limit: Option<usize>,
    pub cursor: Option<String>,
}

/// DESIGN 12's short form of one claim. The signer, origin and producer are the server's:
/// there is no field for them, and a call naming one is refused by the input schema.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClaimIn {
    pub text: Option<String>,
    pub kind: Option<crate::claim::Kind>,
    pub predicate: Option<String>,
    pub anchor: Vec<String>,
    pub depends_on: Vec<String>,
    pub target: Vec<String>,
    pub evidence: Vec<String>,
    pub session: Option<String>,
    pub timestamp: Option<i64>,
    pub dry_run: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CheckIn {
    pub ids: Vec<String>,
    pub all: bool,
    pub timeout: Option<f64>,
    pub repeat: Option<u32>,
    pub force: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GateIn {
    pub policy: Option<String>,
    pub policy_toml: Option<String>,
}

/// Runs tool `name` with arguments that passed its input schema; warnings go to `observer`.
pub fn call(
    config: &Config,
    name: &str,
    args: Value,
    observer: &dyn Observer,
) -> Result<Value, Failure> {
    match name {
        "claims_for" => adapters::claims_for(config, read(name, args)?, observer),
        "status" => adapters::status(config, read(name, args)?, observer),
        "blast" => adapters::blast(config, read(name, args)?, observer),
        "show" => adapters::show(config, read(name, args)?, observer),
        "log" => adapters::log(config, read(name, args)?, observer),
        "claim" => adapters::claim(config, read(name, args)?, observer),
        "check" => adapters::check(config, read(name, args)?, observer),
        "gate" => adapters::gate(config, read(name, args)?, observer),
        _ => Err(Failure::Internal(format!("tool {name} has no handler"))),
    }
}
