//! The gate's decision: which claims are in scope at a tree, and which of them break a rule.
//!
//! The answer depends only on the set of claims, the directory's files and the policy: claims
//! are visited in id order, and nothing reads arrival order or the clock, so anyone holding
//! the same log and policy gets the same report, byte for byte.
//!
//! Scope: assertions (records act through status, never in scope) that pass the policy's
//! filters and apply at the tree (`anchored` or `carried`), plus, for the `stale` rule, those
//! whose span changed or cannot be shown unchanged (no `contentDigest`). `unanchored` claims
//! (about the whole of another tree) are left out and counted. A gate with fewer claims in
//! scope than `min_in_scope` fails: one that judged nothing says nothing about the tree, and
//! never passes only because claims were left aside.

use super::policy::{Form, Policy, StaleRule};
use crate::anchor::at_tree::is_observation;
use crate::anchor::{Anchor, AnchorError, Applies, AtTree, Resolver};
use crate::claim::{Gist, Kind, OriginKind, Summary, SummaryParts};
use crate::fold::dense::{DenseFold, Nodes};
use crate::fold::{ClaimSource, Fold, FoldError, Status};
use crate::ingest::Signer;
use crate::keys::Role;
use crate::store::index::id_text;
use crate::store::index::{ClaimRef, IdKey};
use crate::store::{AllClaims, StoreError, StoredClaim};
use serde::Serialize;
use std::collections::BTreeSet;
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error(transparent)]
    Fold(#[from] FoldError),
    #[error(transparent)]
    Anchor(#[from] AnchorError),
}

/// A rule of the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    Forbid,
    MaxUnevaluated,
    MinHarnessKeys,
    Stale,
    /// Fewer claims in scope than the policy asks for (`EMPTY_SCOPE`).
    MinInScope,
    /// The team's trust policy in force has expired (`POLICY_EXPIRED`).
    #[serde(rename = "policy-expired")]
    PolicyExpired,
    /// The team's root keys signed two policies of one version (`POLICY_EQUIVOCATION`).
    #[serde(rename = "policy-equivocation")]
    PolicyEquivocation,
    /// `witness_fresh`: the remote's log could not be shown unrewound (docs/witness.md).
    #[serde(rename = "remote-rewound")]
    RemoteRewound,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::Forbid => "forbid",
            Rule::MaxUnevaluated => "max_unevaluated",
            Rule::MinHarnessKeys => "min_harness_keys",
            Rule::Stale => "stale",
            Rule::MinInScope => "min_in_scope",
            Rule::PolicyExpired => "policy-expired",
            Rule::PolicyEquivocation => "policy-equivocation",
            Rule::RemoteRewound => "remote-rewound",
        }
    }
}

/// One claim breaking one rule; or the scope as a whole (`min_in_scope`), with no claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct Violation {
    /// The claim; null for `min_in_scope`, which no single claim breaks.
    pub id: Option<String>,
    pub rule: Rule,
    pub status: Option<Status>,
    pub applies: Option<Applies>,
    /// Why, in words.
    pub message: String,
    /// The path the claim is about at this tree (or was, when stale).
    pub path: Option<String>,
    /// Its lines there (or the claim's own, when stale); none for a whole-file anchor.
    pub range: Option<[u64; 2]>,
    /// The claim's `assertion.text`, when it has one.
    pub text: Option<String>,
}

/// Effective statuses of the claims in scope that apply at the tree.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct StatusCounts {
    pub unevaluated: u64,
    pub verified: u64,
    pub falsified: u64,
    pub superseded: u64,
    pub revoked: u64,
}

/// How the claims in scope apply.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct AppliesCounts {
    pub anchored: u64,
    pub carried: u64,
    pub stale: u64,
}

/// Violations per rule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct RuleCounts {
    pub forbid: u64,
    pub max_unevaluated: u64,
    pub min_harness_keys: u64,
    pub stale: u64,
    pub min_in_scope: u64,
    /// The trust rules: listed only when broken, so a gate without a policy reads as before.
    #[serde(skip_serializing_if = "is_zero")]
    pub policy_expired: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub policy_equivocation: u64,
    /// `witness_fresh`: findings about the remote's log (listed only when there are some).
    #[serde(skip_serializing_if = "is_zero")]
    pub remote_rewound: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct Counts {
    /// Assertions in scope (applying or stale).
    pub in_scope: u64,
    pub applies: AppliesCounts,
    /// Assertions left out because they speak about the whole of another tree.
    pub unanchored: u64,
    /// Assertions left out by the scope's filters.
    pub filtered_out: u64,
    /// Over the claims in scope that apply (anchored or carried).
    pub status: StatusCounts,
    /// Unevaluated claims a human accepted as residue: counted apart, never against
    /// `max_unevaluated`.
    pub accepted: u64,
    /// Unevaluated claims nobody accepted: what `max_unevaluated` bounds.
    pub unevaluated_unaccepted: u64,
    pub violations: RuleCounts,
}

/// The gate's report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outcome {
    pub pass: bool,
    /// Sorted by claim id, then rule.
    pub violations: Vec<Violation>,
    pub counts: Counts,
}

/// What judging a claim in scope asks of the log, for the `i`th candidate: its effective
/// status, whether a human accepted it as residue, how many harness keys verified it, and
/// its `assertion.text` (only for a violation).
trait Verdicts {
    fn id(&self, i: usize) -> String;
    fn status(&mut self, i: usize) -> Result<Status, GateError>;
    fn accepted(&mut self, i: usize) -> Result<bool, GateError>;
    fn harness_keys(&mut self, i: usize) -> Result<usize, GateError>;
    fn text(&mut self, i: usize) -> Result<Option<String>, GateError>;
}

/// Evaluates `policy` over the claims `ids` (any order; records and unknown kinds are
/// skipped) at the directory `resolver` reads. This is the reference reading, through the
/// fold; [`evaluate_all`] gives the same outcome from a store's claims read at once.
pub fn evaluate<S: ClaimSource>(
    policy: &Policy,
    ids: &[String],
    fold: &mut Fold<'_, S>,
    resolver: &mut Resolver,
) -> Result<Outcome, GateError> {
    let mut ids: Vec<&String> = ids.iter().collect();
    ids.sort();
    ids.dedup();

    let mut filtered_out = 0;
    // Filters that need no file first, so resolution only reads what may be in scope.
    let mut candidates: Vec<Arc<StoredClaim<Summary>>> = Vec::new();
    // Records are never in scope: only the assertions' summaries are read, all at once.
    let mut assertions: Vec<&str> = Vec::with_capacity(ids.len());
    for id in ids {
        if fold.require(id)?.claim.kind == Kind::Assertion {
            assertions.push(id);
        }
    }
    for stored in fold.require_summaries(&assertions)? {
        let c = &stored.claim;
        let form = stored.body.form().and_then(Form::parse);
        if passes_filters(policy, c.origin, &c.producer, form) {
            candidates.push(stored);
        } else {
            filtered_out += 1;
        }
    }
    let anchors = candidates
        .iter()
        .map(|s| Anchor::of(&s.claim, &s.body))
        .collect::<Result<Vec<_>, _>>()?;
    struct ByFold<'a, 'f, S: ClaimSource> {
        fold: &'a mut Fold<'f, S>,
        candidates: &'a [Arc<StoredClaim<Summary>>],
    }
    impl<S: ClaimSource> Verdicts for ByFold<'_, '_, S> {
        fn id(&self, i: usize) -> String {
            self.candidates[i].claim.id.clone()
        }
        fn status(&mut self, i: usize) -> Result<Status, GateError> {
            Ok(self.fold.effective(&self.candidates[i].claim.id)?.status)
        }
        fn accepted(&mut self, i: usize) -> Result<bool, GateError> {
            Ok(!self
                .fold
                .own(&self.candidates[i].claim.id)?
                .accepted_by
                .is_empty())
        }
        fn harness_keys(&mut self, i: usize) -> Result<usize, GateError> {
            Ok(harness_keys(self.fold, &self.candidates[i].claim.id)?)
        }
        fn text(&mut self, i: usize) -> Result<Option<String>, GateError> {
            Ok(self.candidates[i].body.text().map(str::to_owned))
        }
    }
    let mut by_fold = ByFold {
        fold,
        candidates: &candidates,
    };
    judge(policy, &anchors, filtered_out, resolver, &mut by_fold)
}

/// [`evaluate`] over every claim of a store read at once (`all`), with statuses at the tree
/// of `at` (a view of `all`): the same outcome, byte for byte, by a quicker road. Each
/// assertion's summary is read for its anchor and form without building a JSON value (one
/// of another shape is read the reference way), and statuses are folded over the claims'
/// slots ([`DenseFold`]), not a memo keyed by id text. The view decides which observations
/// act at the tree, as it does for the fold.
pub fn evaluate_all(
    policy: &Policy,
    all: &AllClaims<'_>,
    at: &AtTree<'_, AllClaims<'_>>,
    resolver: &mut Resolver,
) -> Result<Outcome, GateError> {
    // In id order, as the reference visits them (a slot's key sorts as its id text). Sorted
    // on every core by the id's first 8 bytes held beside each, so that nearly every
    // comparison is of two numbers in hand, not of two ids behind pointers.
    let mut by_id: Vec<(u64, u32, &ClaimRef<'_>)> = all
        .stored()
        .filter(|(_, e)| e.kind == Kind::Assertion)
        .map(|(slot, e)| (id_prefix(e.id), slot, e))
        .collect();
    {
        use rayon::prelude::*;
        by_id.par_sort_unstable_by(|a, b| id_order((a.0, a.2.id), (b.0, b.2.id)));
    }
    let assertions: Vec<(u32, &ClaimRef<'_>)> = by_id.into_iter().map(|(_, s, e)| (s, e)).collect();
    // Each summary read on every core; what passes the filters kept in id order, and the
    // first error in that order the one reported, as the reference does.
    let reference = |e: &ClaimRef<'_>| -> Result<StoredClaim<Summary>, GateError> {
        let id = id_text(e.id);
        all.get_light(&id)
            .map_err(FoldError::from)?
            .ok_or(GateError::Fold(FoldError::NotFound(id)))
    };
    let read = |&(slot, e): &(u32, &ClaimRef<'_>)| -> Result<Option<(u32, Anchor)>, GateError> {
        let parts = SummaryParts::parse(e.summary);
        let form = match &parts {
            Some(p) => p.form().and_then(Form::parse),
            None => reference(e)?.body.form().and_then(Form::parse),
        };
        if !passes_filters(policy, e.origin, e.producer, form) {
            return Ok(None);
        }
        let quick = parts
            .as_ref()
            .and_then(|p| Anchor::from_parts(e.anchor_tree, p));
        let anchor = match quick {
            Some(a) => a,
            None => {
                let s = reference(e)?;
                Anchor::of(&s.claim, &s.body)?
            }
        };
        Ok(Some((slot, anchor)))
    };
    let read: Vec<Result<Option<(u32, Anchor)>, GateError>> = {
        use rayon::prelude::*;
        assertions.par_iter().map(read).collect()
    };
    let mut filtered_out = 0;
    let mut slots = Vec::with_capacity(read.len());
    let mut anchors = Vec::with_capacity(read.len());
    for r in read {
        match r? {
            Some((slot, anchor)) => {
                slots.push(slot);
                anchors.push(anchor);
            }
            None => filtered_out += 1,
        }
    }
    let nodes = SlotNodes { all, at };
    let mut by_slot = BySlot {
        all,
        slots: &slots,
        fold: DenseFold::new(&nodes, ClaimSource::compromise(all)),
    };
    judge(policy, &anchors, filtered_out, resolver, &mut by_slot)
}

/// The first 8 bytes of an id as a number: ids ordered by it are in id order, except among
/// ids that share those bytes.
fn id_prefix(id: &IdKey) -> u64 {
    let mut first = [0u8; 8];
    first.copy_from_slice(&id[..8]);
    u64::from_be_bytes(first)
}

/// The order of two ids, each given with its [`id_prefix`]: the ids' own order.
fn id_order(a: (u64, &IdKey), b: (u64, &IdKey)) -> std::cmp::Ordering {
    a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1))
}

/// What [`evaluate_all`] folds for each of `ids` (claims `all` stores): own status, whether a
/// live residue-acceptance targets it, and effective status, at the tree of `at`. The same
/// as the fold over `at` gives; a test holds them equal.
pub fn statuses_by_slot(
    all: &AllClaims<'_>,
    at: &AtTree<'_, AllClaims<'_>>,
    ids: &[String],
) -> Result<Vec<(Status, bool, Status)>, GateError> {
    let nodes = SlotNodes { all, at };
    let mut fold = DenseFold::new(&nodes, ClaimSource::compromise(all));
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let slot = all
            .slot_of(id)
            .filter(|&s| all.entry_at(s).is_some())
            .ok_or_else(|| GateError::Fold(FoldError::NotFound(id.clone())))?;
        let (own, accepted) = fold.own(slot).map_err(FoldError::from)?;
        let effective = fold.effective(slot).map_err(FoldError::from)?;
        out.push((own, accepted, effective));
    }
    Ok(out)
}

/// The claims of a store read at once, by slot, as they stand at one tree.
struct SlotNodes<'a, 's> {
    all: &'a AllClaims<'s>,
    at: &'a AtTree<'a, AllClaims<'s>>,
}

impl Nodes for SlotNodes<'_, '_> {
    fn node_count(&self) -> usize {
        self.all.node_count()
    }
    fn kind(&self, node: u32) -> Option<Kind> {
        self.all.kind(node)
    }
    fn signers(&self, node: u32) -> &[Signer] {
        self.all.signers(node)
    }
    fn records(&self, node: u32) -> &[u32] {
        self.all.records(node)
    }
    fn premises(&self, node: u32, out: &mut Vec<u32>) -> Result<(), StoreError> {
        self.all.premises(node, out)
    }
    fn applies(&self, record: u32, target: u32) -> Result<bool, StoreError> {
        // What the view decides at once, without a record's text: anything but an
        // observation, or an observation of this very tree, acts here.
        let Some(r) = self.all.entry_at(record) else {
            return Ok(true);
        };
        if !is_observation(r.kind) || r.anchor_tree == self.at.tree() {
            return Ok(true);
        }
        self.at.applies(&id_text(r.id), &self.name(target))
    }
    fn name(&self, node: u32) -> String {
        self.all.name(node)
    }
    fn contradiction(&self, why: String) -> StoreError {
        Nodes::contradiction(self.all, why)
    }
}

struct BySlot<'a, 'n, 's> {
    all: &'a AllClaims<'s>,
    slots: &'a [u32],
    fold: DenseFold<'n, SlotNodes<'a, 's>>,
}

impl Verdicts for BySlot<'_, '_, '_> {
    fn id(&self, i: usize) -> String {
        self.all
            .entry_at(self.slots[i])
            .map(|e| id_text(e.id))
            .unwrap_or_default()
    }
    fn status(&mut self, i: usize) -> Result<Status, GateError> {
        Ok(self
            .fold
            .effective(self.slots[i])
            .map_err(FoldError::from)?)
    }
    fn accepted(&mut self, i: usize) -> Result<bool, GateError> {
        Ok(self.fold.own(self.slots[i]).map_err(FoldError::from)?.1)
    }
    fn harness_keys(&mut self, i: usize) -> Result<usize, GateError> {
        Ok(self
            .fold
            .harness_keys(self.slots[i])
            .map_err(FoldError::from)?)
    }
    fn text(&mut self, i: usize) -> Result<Option<String>, GateError> {
        if let Some(text) = self
            .all
            .entry_at(self.slots[i])
            .and_then(|e| SummaryParts::text(e.summary))
        {
            return Ok(text);
        }
        let id = self.id(i);
        Ok(self
            .all
            .get_light(&id)
            .map_err(FoldError::from)?
            .and_then(|s| s.body.text().map(str::to_owned)))
    }
}

/// The judging both readings share: resolves the candidates' anchors (each passed the
/// filters that need no file; `filtered_out` did not) and applies the policy's rules.
fn judge(
    policy: &Policy,
    anchors: &[Anchor],
    filtered_out: u64,
    resolver: &mut Resolver,
    v: &mut dyn Verdicts,
) -> Result<Outcome, GateError> {
    let mut counts = Counts {
        filtered_out,
        ..Counts::default()
    };
    let resolutions = resolver.resolve_anchors(anchors)?;

    let rules = &policy.rules;
    let mut violations = Vec::new();
    let mut unaccepted = Vec::new();
    for (i, (anchor, res)) in anchors.iter().zip(resolutions).enumerate() {
        if res.applies == Applies::Unanchored {
            counts.unanchored += 1;
            continue;
        }
        let (path, range) = match res.applies {
            Applies::Stale => (anchor.path.as_deref(), anchor.range.map(|(s, e)| [s, e])),
            _ => (res.path.as_deref(), res.range),
        };
        if let Some(globs) = &policy.scope.paths {
            if !path.is_some_and(|p| globs.is_match(p)) {
                counts.filtered_out += 1;
                continue;
            }
        }
        counts.in_scope += 1;
        let status = v.status(i)?;
        let violation =
            |v: &mut dyn Verdicts, rule: Rule, message: String| -> Result<Violation, GateError> {
                Ok(Violation {
                    id: Some(v.id(i)),
                    rule,
                    status: Some(status),
                    applies: Some(res.applies),
                    message,
                    path: path.map(str::to_owned),
                    range,
                    text: v.text(i)?,
                })
            };
        if res.applies == Applies::Stale {
            counts.applies.stale += 1;
            if rules.stale == StaleRule::Fail {
                let no_digest = anchor.content_digest.is_none();
                violations.push(violation(
                    v,
                    Rule::Stale,
                    if no_digest {
                        "the claim names a path but carries no contentDigest: nothing can show \
                         its lines unchanged at this tree"
                            .into()
                    } else {
                        "the lines this claim is about changed or are gone at this tree".into()
                    },
                )?);
            }
            continue;
        }
        match res.applies {
            Applies::Anchored => counts.applies.anchored += 1,
            _ => counts.applies.carried += 1,
        }
        let slot = match status {
            Status::Unevaluated => &mut counts.status.unevaluated,
            Status::Verified => &mut counts.status.verified,
            Status::Falsified => &mut counts.status.falsified,
            Status::Superseded => &mut counts.status.superseded,
            Status::Revoked => &mut counts.status.revoked,
        };
        *slot += 1;
        if rules.forbid.contains(&status) {
            violations.push(violation(
                v,
                Rule::Forbid,
                format!("the policy forbids {status} claims"),
            )?);
        }
        match status {
            Status::Unevaluated => {
                if v.accepted(i)? {
                    counts.accepted += 1;
                } else {
                    // Made a violation only if there are too many: the id and the text
                    // are read then.
                    unaccepted.push((i, res.applies, path.map(str::to_owned), range));
                }
            }
            Status::Verified if rules.min_harness_keys > 0 => {
                let keys = v.harness_keys(i)?;
                if (keys as u64) < rules.min_harness_keys {
                    violations.push(violation(
                        v,
                        Rule::MinHarnessKeys,
                        format!(
                            "verified by {keys} distinct harness key(s); the policy asks for {}",
                            rules.min_harness_keys
                        ),
                    )?);
                }
            }
            _ => {}
        }
    }
    counts.unevaluated_unaccepted = unaccepted.len() as u64;
    if counts.unevaluated_unaccepted > rules.max_unevaluated {
        let message = format!(
            "unevaluated and not accepted: {} such claims in scope, the policy allows {}",
            counts.unevaluated_unaccepted, rules.max_unevaluated
        );
        for (i, applies, path, range) in unaccepted {
            violations.push(Violation {
                id: Some(v.id(i)),
                rule: Rule::MaxUnevaluated,
                status: Some(Status::Unevaluated),
                applies: Some(applies),
                message: message.clone(),
                path,
                range,
                text: v.text(i)?,
            });
        }
    }
    // Stale claims under `stale = "ignore"` are in scope but judged by no rule: they do not
    // make a scope that would otherwise be empty say anything about the tree.
    let ignored = match rules.stale {
        StaleRule::Ignore => counts.applies.stale,
        StaleRule::Fail => 0,
    };
    let judged = counts.in_scope - ignored;
    if judged < rules.min_in_scope {
        violations.push(Violation {
            id: None,
            rule: Rule::MinInScope,
            status: None,
            applies: None,
            message: format!(
                "EMPTY_SCOPE: {judged} claim(s) judged at this tree, the policy asks for at \
                 least {} (left aside: {} unanchored, {} filtered out, {ignored} stale and \
                 ignored); a gate that judged nothing says nothing about the tree",
                rules.min_in_scope, counts.unanchored, counts.filtered_out
            ),
            path: None,
            range: None,
            text: None,
        });
    }
    // Claims in id order, then the scope's own violation (no id) last.
    violations
        .sort_by(|a, b| (a.id.is_none(), &a.id, a.rule).cmp(&(b.id.is_none(), &b.id, b.rule)));
    for v in &violations {
        let slot = match v.rule {
            Rule::Forbid => &mut counts.violations.forbid,
            Rule::MaxUnevaluated => &mut counts.violations.max_unevaluated,
            Rule::MinHarnessKeys => &mut counts.violations.min_harness_keys,
            Rule::Stale => &mut counts.violations.stale,
            Rule::MinInScope => &mut counts.violations.min_in_scope,
            Rule::PolicyExpired => &mut counts.violations.policy_expired,
            Rule::PolicyEquivocation => &mut counts.violations.policy_equivocation,
            Rule::RemoteRewound => &mut counts.violations.remote_rewound,
        };
        *slot += 1;
    }
    Ok(Outcome {
        pass: violations.is_empty(),
        violations,
        counts,
    })
}

/// The scope's origin, producer and form filters (the path filter needs the resolution).
fn passes_filters(policy: &Policy, origin: OriginKind, producer: &str, form: Option<Form>) -> bool {
    let s = &policy.scope;
    if let Some(origins) = &s.origins {
        if !origins.contains(&origin) {
            return false;
        }
    }
    if let Some(producers) = &s.producers {
        if !producers.is_match(producer) {
            return false;
        }
    }
    if let Some(forms) = &s.forms {
        if !form.is_some_and(|f| forms.contains(&f)) {
            return false;
        }
    }
    true
}

/// Distinct harness keys that signed the live verifications deciding a verified claim.
fn harness_keys<S: ClaimSource>(fold: &mut Fold<'_, S>, id: &str) -> Result<usize, FoldError> {
    let own = fold.own(id)?;
    let mut keys = BTreeSet::new();
    for r in &own.decided_by {
        let rec = fold.require_named(r)?;
        for s in &rec.signers {
            if s.role == Role::Harness {
                keys.insert(s.keyid.clone());
            }
        }
    }
    Ok(keys.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::Claim;
    use crate::ingest::Signer;
    use crate::store::StoreError;
    use serde_json::json;
    use std::collections::HashMap;

    #[test]
    fn ids_sorted_by_their_prefix_first_are_in_id_order() {
        // Ids that share their first 8 bytes, and ids that differ only there.
        let mut ids: Vec<IdKey> = Vec::new();
        for first in [0u8, 7, 255] {
            for last in [0u8, 1, 200] {
                let mut id = [first; 32];
                id[31] = last;
                id[8] = last.wrapping_mul(3);
                ids.push(id);
            }
        }
        ids.reverse();
        let mut quick: Vec<(u64, &IdKey)> = ids.iter().map(|id| (id_prefix(id), id)).collect();
        quick.sort_unstable_by(|a, b| id_order(*a, *b));
        let mut plain: Vec<&IdKey> = ids.iter().collect();
        plain.sort_unstable();
        assert_eq!(quick.iter().map(|q| q.1).collect::<Vec<_>>(), plain);
    }

    const HERE: &str = "1111111111111111111111111111111111111111111111111111111111111111";
    const ELSEWHERE: &str = "2222222222222222222222222222222222222222222222222222222222222222";

    #[derive(Default)]
    struct Mem(HashMap<String, StoredClaim<Summary>>);

    impl ClaimSource for Mem {
        fn claim(&self, id: &str) -> Result<Option<StoredClaim>, StoreError> {
            Ok(self.0.get(id).map(|c| StoredClaim {
                claim: c.claim.clone(),
                body: (),
                signers: c.signers.clone(),
                seq: c.seq,
            }))
        }
        fn claim_summary(&self, id: &str) -> Result<Option<StoredClaim<Summary>>, StoreError> {
            Ok(self.0.get(id).cloned())
        }
        fn records_targeting(&self, id: &str) -> Result<Vec<String>, StoreError> {
            Ok(self
                .0
                .values()
                .filter(|s| s.claim.target.iter().any(|t| t == id))
                .map(|s| s.claim.id.clone())
                .collect())
        }
        fn dependents(&self, id: &str) -> Result<Vec<String>, StoreError> {
            Ok(self
                .0
                .values()
                .filter(|s| s.claim.depends_on.iter().any(|t| t == id))
                .map(|s| s.claim.id.clone())
                .collect())
        }
    }

    impl Mem {
        fn put(
            &mut self,
            id: &str,
            kind: Kind,
            target: &[&str],
            anchor: serde_json::Value,
            keys: &[(&str, Role)],
        ) {
            let claim = Claim {
                id: id.into(),
                kind,
                target: target.iter().map(|t| t.to_string()).collect(),
                depends_on: vec![],
                origin: OriginKind::AgentAsserted,
                producer: "p".into(),
                anchor_tree: anchor["tree"].as_str().unwrap().into(),
                timestamp: 0,
            };
            let body = Summary::new(
                json!({"anchor": anchor, "assertion": {"form": "annotation", "text": format!("claim {id}")}}),
            );
            let signers = keys
                .iter()
                .map(|(k, role)| Signer {
                    keyid: k.to_string(),
                    role: *role,
                    name: k.to_string(),
                })
                .collect();
            let seq = self.0.len() as u64;
            self.0.insert(
                id.into(),
                StoredClaim {
                    claim,
                    body,
                    signers,
                    seq,
                },
            );
        }
    }

    fn run(mem: &Mem, policy: &str, dir: &std::path::Path) -> Outcome {
        let policy = Policy::parse(policy).unwrap();
        let ids: Vec<String> = mem.0.keys().cloned().collect();
        let mut fold = Fold::new(mem);
        let mut resolver = Resolver::new(dir, HERE);
        evaluate(&policy, &ids, &mut fold, &mut resolver).unwrap()
    }

    #[test]
    fn gate_default_policy_names_each_violation() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a.rs"), "changed\n").unwrap();
        let here = json!({"tree": HERE, "strategy": "multi", "path": "src/a.rs"});
        let stale = json!({"tree": ELSEWHERE, "strategy": "multi", "path": "a.rs",
                           "contentDigest": crate::anchor::content_digest(b"old\n", None).unwrap()});
        let other = json!({"tree": ELSEWHERE, "strategy": "multi"});
        let mut m = Mem::default();
        m.put("cl_a", Kind::Assertion, &[], here.clone(), &[]);
        m.put("cl_b", Kind::Assertion, &[], here.clone(), &[]);
        m.put(
            "cl_v",
            Kind::Verification,
            &["cl_b"],
            here.clone(),
            &[("k1", Role::Harness), ("k2", Role::Agent)],
        );
        m.put("cl_c", Kind::Assertion, &[], here.clone(), &[]);
        m.put("cl_f", Kind::Falsification, &["cl_c"], here.clone(), &[]);
        m.put("cl_d", Kind::Assertion, &[], stale, &[]);
        m.put("cl_e", Kind::Assertion, &[], other, &[]);
        m.put("cl_g", Kind::Assertion, &[], here.clone(), &[]);
        m.put("cl_r", Kind::ResidueAcceptance, &["cl_g"], here, &[]);

        let out = run(&m, "", tmp.path());
        let got: Vec<(&str, &str)> = out
            .violations
            .iter()
            .map(|v| (v.id.as_deref().unwrap(), v.rule.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("cl_a", "max_unevaluated"),
                ("cl_c", "forbid"),
                ("cl_d", "stale")
            ]
        );
        assert!(!out.pass);
        let c = &out.counts;
        assert_eq!((c.in_scope, c.unanchored, c.filtered_out), (5, 1, 0));
        assert_eq!((c.applies.anchored, c.applies.stale), (4, 1));
        assert_eq!(
            (c.status.unevaluated, c.status.verified, c.status.falsified),
            (2, 1, 1)
        );
        assert_eq!((c.accepted, c.unevaluated_unaccepted), (1, 1));
        assert_eq!(out.violations[0].text.as_deref(), Some("claim cl_a"));

        // Two harness keys asked for, one (k1; k2 is an agent) behind the verification.
        let out = run(
            &m,
            "[rules]\nmin_harness_keys = 2\nmax_unevaluated = 1\nstale = \"ignore\"\n",
            tmp.path(),
        );
        let got: Vec<(&str, &str)> = out
            .violations
            .iter()
            .map(|v| (v.id.as_deref().unwrap(), v.rule.as_str()))
            .collect();
        assert_eq!(got, [("cl_b", "min_harness_keys"), ("cl_c", "forbid")]);

        // Narrowed to a path no bad claim is about: nothing judged, so it fails, unless the
        // policy allows an empty scope.
        let out = run(&m, "[scope]\npaths = [\"docs/**\"]\n", tmp.path());
        assert!(!out.pass, "{out:?}");
        assert_eq!(out.counts.in_scope, 0);
        assert_eq!(out.violations.len(), 1);
        assert_eq!(out.violations[0].rule, Rule::MinInScope);
        assert_eq!(out.violations[0].id, None);
        assert_eq!(out.counts.violations.min_in_scope, 1);
        let out = run(
            &m,
            "[scope]\npaths = [\"docs/**\"]\n[rules]\nmin_in_scope = 0\n",
            tmp.path(),
        );
        assert!(out.pass, "{out:?}");
    }
}
