//! `gate`: may the tree ship, given the log and a policy?
//!
//! A failing gate is a decision, not an error: the answer says so (`pass` false) and
//! [`GateOutput::failure`] is the `GATE_FAILED` failure a front end reports with it.

use super::roots::{roots_at, Root};
use super::tree::{tree_dir, tree_files_at};
use super::{Context, Failure};
use crate::anchor::{AtTree, Resolver};
use crate::fold::{Fold, Status};
use crate::gate::{evaluate_all, Counts, Policy, StaleRule, Violation};
use crate::tree::Selection;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    /// Also what a document places beside the violations: each revoked claim's falsified
    /// roots at the tree, and where the policy is.
    #[serde(default)]
    pub places: bool,
}

/// What `gate` answers: its JSON is the command's `data`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
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
    /// With `places`: the falsified roots (log-wide) of each claim with a violation as
    /// revoked, placed at the tree.
    #[serde(skip)]
    pub roots: BTreeMap<String, Vec<Root>>,
    /// With `places`: where the policy is.
    #[serde(skip)]
    pub policy_place: Option<PolicyPlace>,
}

/// Where a document places what the policy says of the scope as a whole (too few claims in
/// it): the policy file, at its `min_in_scope` line when it sets one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct PolicyPlace {
    /// The file's path in the tree when it lies inside; otherwise (the CI recipe reads the
    /// policy from a trusted copy outside the checkout) its name, the path a repository
    /// keeps its policy at by the recipe's convention.
    pub path: String,
    /// The `min_in_scope` line (from 1), when the policy sets one.
    pub line: Option<u64>,
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
    let snapshot = store.snapshot()?;
    // The tree's files are read once: hashed for its id, and kept for resolving anchors. A
    // gate also reads most of the log: every claim at once, in one walk of the index. The
    // two need nothing of each other, so the tree is hashed on a thread of its own while
    // this one reads the claims (much of the claims' reading is on one core, and so is the
    // tree's listing). The tree's error, when there is one, is the one reported, as when it
    // was read first.
    let observer = ctx.observer();
    let (tree_read, claims_read) = std::thread::scope(|s| {
        let tree = s.spawn(|| tree_files_at(&dir, selection, observer));
        let claims = snapshot.all_claims();
        let tree = tree
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (tree, claims)
    });
    let (tree_ids, files) = tree_read?;
    let all = claims_read?;
    let files = std::sync::Arc::new(files);
    let tree = tree_ids.oid().to_owned();
    // Statuses at this tree: only the observations that apply here count.
    let at_tree = AtTree::new(&all, tree_ids, &dir, selection).with_files(files.clone());
    let mut resolver = Resolver::new(&dir, &tree)
        .with_selection(selection)
        .with_files(files);
    let mut outcome = evaluate_all(&policy, &all, &at_tree, &mut resolver)?;
    // The team's trust: an expired policy in force, or an equivocation, fails the gate.
    if let Ok(st) = crate::trust::state_of(&store) {
        for (code, message) in st.warnings(crate::trust::now()) {
            let rule = match code {
                crate::error::Code::PolicyExpired => crate::gate::Rule::PolicyExpired,
                _ => crate::gate::Rule::PolicyEquivocation,
            };
            match rule {
                crate::gate::Rule::PolicyExpired => outcome.counts.violations.policy_expired += 1,
                _ => outcome.counts.violations.policy_equivocation += 1,
            }
            outcome.violations.push(crate::gate::Violation {
                id: None,
                rule,
                status: None,
                applies: None,
                message,
                path: None,
                range: None,
                text: None,
            });
            outcome.pass = false;
        }
    }
    if policy.rules.witness_fresh {
        let found = witness_fresh(
            ctx,
            &store,
            &policy.rules.witness_remote,
            policy.rules.witness_timeout,
        )?;
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
    let mut roots = BTreeMap::new();
    let mut policy_place = None;
    if input.places {
        let mut wide = Fold::new(&store);
        for v in &outcome.violations {
            if let (Some(id), Some(Status::Revoked)) = (&v.id, v.status) {
                if !roots.contains_key(id) {
                    roots.insert(id.clone(), roots_at(&mut wide, &mut resolver, id)?);
                }
            }
        }
        policy_place = place_of_policy(Path::new(&input.policy_name), &dir, text);
    }
    Ok(GateOutput {
        pass: outcome.pass,
        tree,
        policy: policy.to_json(),
        violations: outcome.violations,
        counts: outcome.counts,
        parsed: policy,
        policy_path: shown,
        roots,
        policy_place,
    })
}

/// Where the policy `file` (its `text`) is, for a document about the tree at `tree`.
fn place_of_policy(file: &Path, tree: &Path, text: &str) -> Option<PolicyPlace> {
    let inside = match (file.canonicalize(), tree.canonicalize()) {
        (Ok(f), Ok(t)) => f.strip_prefix(&t).ok().map(Path::to_path_buf),
        _ => None,
    };
    let path = inside.or_else(|| file.file_name().map(PathBuf::from))?;
    let path = path.to_str()?.replace(std::path::MAIN_SEPARATOR, "/");
    let line = text
        .lines()
        .position(|l| {
            l.trim_start()
                .strip_prefix("min_in_scope")
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map(|i| i as u64 + 1);
    Some(PolicyPlace { path, line })
}

/// The rule `witness_fresh`: submits remote `name`'s checkpoint to the witnesses of the
/// policy kept with it (`elench remote witnesses`); every finding is a violation of rule
/// `remote-rewound`, and so is a remote with no witness policy (it fails closed). Each
/// witness request, and the remote's first answer, may take `policy_timeout` seconds.
fn witness_fresh(
    ctx: &Context,
    store: &crate::store::Store,
    name: &str,
    policy_timeout: u64,
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
    let timeout = std::time::Duration::from_secs(policy_timeout);
    let opts = crate::sync::Options {
        wait: ctx.wait,
        progress: false,
        stop: &stop,
        connect_timeout: Some(timeout),
        reaper: ctx.reaper(),
    };
    let mut session = crate::sync::Session::open(store, name, opts).map_err(sync_failure)?;
    let trust = store.trust_snapshot()?.0;
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
             max_unevaluated {}, min_harness_keys {}, stale {}, min_in_scope {}{}{})",
            self.violations.len(),
            self.policy_path,
            c.forbid,
            c.max_unevaluated,
            c.min_harness_keys,
            c.stale,
            c.min_in_scope,
            if c.policy_expired + c.policy_equivocation > 0 {
                format!(
                    ", policy-expired {}, policy-equivocation {}",
                    c.policy_expired, c.policy_equivocation
                )
            } else {
                String::new()
            },
            if c.remote_rewound > 0 {
                format!(", remote-rewound {}", c.remote_rewound)
            } else {
                String::new()
            },
        )))
    }
}
