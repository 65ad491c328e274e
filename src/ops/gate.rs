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
    /// The policy file (TOML).
    pub policy: PathBuf,
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
    /// The policy file as given.
    #[serde(skip)]
    pub policy_path: String,
}

/// The gate's decision on the tree under the policy, from the log alone; an empty scope
/// the policy allows goes to the observer as `EMPTY_SCOPE`.
pub fn gate(ctx: &Context, input: &GateInput) -> Result<GateOutput, Failure> {
    let shown = input.policy.display().to_string();
    let text = std::fs::read(&input.policy).map_err(|e| Failure::io(&shown, e))?;
    let text = String::from_utf8(text).map_err(|e| Failure::BadPolicy {
        path: shown.clone(),
        error: crate::gate::PolicyError {
            message: format!("not UTF-8 text ({e})"),
            line: 0,
            column: 0,
        },
    })?;
    let policy = Policy::parse(&text).map_err(|error| Failure::BadPolicy {
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
    let mut outcome = evaluate(&policy, &ids, &mut fold, &mut resolver)?;
    if policy.rules.witness_fresh {
        let found = witness_fresh(ctx, &store, &policy.rules.witness_remote)?;
        outcome.counts.violations.remote_rewound += found.len() as u64;
        outcome.pass &= found.is_empty();
        outcome.violations.extend(found);
    }
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

/// The rule `witness_fresh`: submits remote `name`'s checkpoint to the witnesses of the
/// policy kept with it (`elench remote witnesses`); every finding is a violation of rule
/// `remote-rewound`, and so is a remote with no witness policy (it fails closed).
fn witness_fresh(
    ctx: &Context,
    store: &crate::store::Store,
    name: &str,
) -> Result<Vec<Violation>, Failure> {
    use crate::ops::sync::sync_failure;
    use crate::sync::witnessed;
    let violation = |message: String| Violation {
        id: None,
        rule: crate::gate::Rule::RemoteRewound,
        status: None,
        applies: None,
        message,
        path: None,
        range: None,
        text: None,
    };
    let policy = witnessed::kept_policy(store.root(), name).map_err(|m| Failure::Precondition {
        code: crate::error::Code::BadPolicy,
        message: format!("the witness policy of remote {name}: {m}"),
    })?;
    let Some(policy) = policy else {
        return Ok(vec![violation(format!(
            "witness_fresh: remote {name} has no witness policy (`elench remote witnesses \
             {name} FILE`), so nobody can say whether its log was rewound"
        ))]);
    };
    let stop = || false;
    let timeout = std::time::Duration::from_secs(30);
    let opts = crate::sync::Options {
        wait: ctx.wait,
        progress: false,
        stop: &stop,
        connect_timeout: Some(timeout),
        reaper: ctx.reaper(),
    };
    let mut session = crate::sync::Session::open(store, name, opts).map_err(sync_failure)?;
    let trust = crate::sync::local::trust(store)?.0;
    let checks = witnessed::PullChecks {
        policy: Some(&policy),
        fresh: true,
        timeout,
    };
    let report = session
        .check_checkpoint(&checks, &trust)
        .map_err(sync_failure)?;
    Ok(report
        .findings
        .into_iter()
        .map(|f| violation(format!("{}: {}", f.code.as_str(), f.message)))
        .collect())
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
             max_unevaluated {}, min_harness_keys {}, stale {}, min_in_scope {}, \
             remote-rewound {})",
            self.violations.len(),
            self.policy_path,
            c.forbid,
            c.max_unevaluated,
            c.min_harness_keys,
            c.stale,
            c.min_in_scope,
            c.remote_rewound
        )))
    }
}
