//! `gate`: may the tree ship, given the log and a policy?
//!
//! A failing gate is a decision, not an error: the answer says so (`pass` false) and
//! [`GateOutput::failure`] is the `GATE_FAILED` failure a front end reports with it.

use super::tree::{tree_dir, tree_ids_at};
use super::{Context, Failure};
use crate::anchor::{AtTree, Resolver};
use crate::fold::Fold;
use crate::gate::{evaluate, Counts, Policy, StaleRule, Violation};
use crate::tree::Selection;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;

/// What `gate` is asked.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GateInput {
    /// The policy's text (TOML), as read by the front end.
    pub policy: Vec<u8>,
    /// How errors and the report name the policy: the file it was read from, or what the
    /// caller calls it.
    pub policy_name: String,
    /// The tree (default: the enclosing checkout, else the working directory).
    pub at: Option<PathBuf>,
    /// Keep the files ignore rules leave out of the tree.
    pub no_ignore: bool,
}

/// What `gate` answers: its JSON is the command's `data`.
#[derive(Debug, Clone, Serialize)]
pub struct GateOutput {
    pub pass: bool,
    pub tree: String,
    /// The policy in force, defaults filled in.
    pub policy: Value,
    /// Sorted by claim id, then rule.
    pub violations: Vec<Violation>,
    pub counts: Counts,
    /// The policy as parsed.
    #[serde(skip)]
    pub parsed: Policy,
    /// The policy as the input names it.
    #[serde(skip)]
    pub policy_path: String,
}

/// The gate's decision on the tree under the policy, from the log alone; an empty scope
/// the policy allows goes to the observer as `EMPTY_SCOPE`.
pub fn gate(ctx: &Context, input: &GateInput) -> Result<GateOutput, Failure> {
    let shown = input.policy_name.clone();
    let text = std::str::from_utf8(&input.policy).map_err(|e| Failure::BadPolicy {
        path: shown.clone(),
        error: crate::gate::PolicyError {
            message: format!("not UTF-8 text ({e})"),
            line: 0,
            column: 0,
        },
    })?;
    let policy = Policy::parse(text).map_err(|error| Failure::BadPolicy {
        path: shown.clone(),
        error,
    })?;
    let dir = tree_dir(input.at.as_deref())?;
    let store = ctx.open_store()?;
    // One read transaction for the whole answer: a snapshot as of one state of the log.
    let _snapshot = store.pin()?;
    let selection = Selection::from_no_ignore(input.no_ignore);
    let tree_ids = tree_ids_at(&dir, selection, ctx.observer())?;
    let tree = tree_ids.oid().to_owned();
    let ids = store.claim_ids()?;
    // Statuses at this tree: only the observations that apply here count.
    let at_tree = AtTree::new(&store, tree_ids, &dir, selection);
    let mut fold = Fold::new(&at_tree);
    let mut resolver = Resolver::new(&dir, &tree).with_selection(selection);
    let outcome = evaluate(&policy, &ids, &mut fold, &mut resolver)?;
    // Only with `min_in_scope = 0` can a gate that judged nothing pass; say so.
    let ignored_stale = match policy.rules.stale {
        StaleRule::Ignore => outcome.counts.applies.stale,
        StaleRule::Fail => 0,
    };
    if outcome.counts.in_scope == ignored_stale && outcome.pass {
        ctx.observer().warn(
            crate::error::Code::EmptyScope.as_str(),
            "no claim in scope was judged at this tree (none in scope, or only stale ones the \
             policy ignores) and the policy allows it (min_in_scope = 0): the gate passes \
             without judging anything; check the policy's [scope] and that the claims' anchors \
             apply here"
                .to_owned(),
        );
    }
    Ok(GateOutput {
        pass: outcome.pass,
        tree,
        policy: policy.to_json(),
        violations: outcome.violations,
        counts: outcome.counts,
        parsed: policy,
        policy_path: shown,
    })
}

impl GateOutput {
    /// `GATE_FAILED` when the tree may not ship, naming how many violations of which rules.
    pub fn failure(&self) -> Option<Failure> {
        if self.pass {
            return None;
        }
        let c = &self.counts.violations;
        let empty = if c.min_in_scope > 0 {
            format!(
                "EMPTY_SCOPE: fewer claims judged than the policy's min_in_scope ({}); ",
                self.parsed.rules.min_in_scope
            )
        } else {
            String::new()
        };
        Some(Failure::GateFailed(format!(
            "the tree may not ship: {empty}{} violation(s) of {} (forbid {}, \
             max_unevaluated {}, min_harness_keys {}, stale {}, min_in_scope {})",
            self.violations.len(),
            self.policy_path,
            c.forbid,
            c.max_unevaluated,
            c.min_harness_keys,
            c.stale,
            c.min_in_scope
        )))
    }
}
