//! Which claims `check` evaluates at a tree: those that apply there (anchored to it, or
//! carried over to it with their lines unchanged) and hold a predicate this elench reads.

use super::{CheckInput, Checked, Outcome};
use crate::anchor::{Applies as AnchorApplies, AtTree, Resolution, Resolver};
use crate::claim::predicate::{self, Expr};
use crate::claim::{Body, Claim, Gist};
use crate::fold::{Fold, Status};
use crate::ops::Failure;
use crate::store::Store;
use crate::tree::TreeIds;
use std::path::Path;

/// Whether a claim speaks about the tree being checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applies {
    /// Its anchor tree is this tree.
    Anchored,
    /// Made about an earlier tree, and the lines it is about are here unchanged (by their
    /// content digest): evaluated here, and recorded against where the lines are now.
    Carried(Resolution),
    NotApplicable(String),
}

/// The one place that decides whether a claim is evaluated at a tree: its anchor tree is
/// the tree's OID, or it carries over to it; a stale or unanchored claim is never evaluated
/// against code it does not speak about.
pub fn applicability<G: Gist>(
    claim: &Claim,
    text: &G,
    resolver: &mut Resolver,
) -> Result<Applies, Failure> {
    let r = resolver.resolve(claim, text)?;
    Ok(match r.applies {
        AnchorApplies::Anchored => Applies::Anchored,
        AnchorApplies::Carried => Applies::Carried(r),
        AnchorApplies::Stale => Applies::NotApplicable(format!(
            "anchored to tree {}; the lines it is about changed or are gone here, or it has no \
             content digest to show them unchanged (stale)",
            claim.anchor_tree
        )),
        AnchorApplies::Unanchored => Applies::NotApplicable(format!(
            "a claim about the whole tree {}, not the checked tree {} (unanchored)",
            claim.anchor_tree,
            resolver.tree()
        )),
    })
}

/// A claim selected for evaluation.
pub struct Target {
    pub claim: Claim,
    /// The claim as signed (its anchor goes into the record).
    pub body: Body,
    pub source: String,
    pub expr: Expr,
    /// Its own status at the checked tree (only the observations that apply there count).
    pub own: Status,
    /// Where a carried claim's lines are in the checked tree (None when anchored there).
    pub carried: Option<Resolution>,
    /// The digest of its inputs at the checked tree, which the record states so that the
    /// verdict applies wherever those inputs are the same.
    pub inputs: Option<String>,
}

/// The predicate of a claim, if it is one this elench evaluates.
pub fn predicate_of(body: &Body) -> Result<(String, Expr), String> {
    let a = body.assertion();
    if a["form"].as_str() != Some("predicate") {
        return Err("an annotation: nothing to evaluate".into());
    }
    let lang = a["expression"]["language"].as_str().unwrap_or_default();
    if lang != predicate::LANGUAGE {
        return Err(format!(
            "its language {lang:?} is not {}",
            predicate::LANGUAGE
        ));
    }
    let source = a["expression"]["source"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let expr = predicate::parse(&source).map_err(|e| format!("its predicate: {e}"))?;
    Ok((source, expr))
}

/// The claims to evaluate, and the ones reported without evaluation (not applicable).
/// Applicability and status (at the checked tree: only the observations that apply there
/// count) come from the index; the predicate is read from the log only for claims that will
/// be evaluated.
pub(super) fn select(
    store: &Store,
    a: &CheckInput,
    dir: &Path,
    tree: TreeIds,
) -> Result<(Vec<Target>, Vec<Checked>), Failure> {
    let selection = crate::tree::Selection::from_no_ignore(a.no_ignore);
    let mut resolver = Resolver::new(dir, tree.oid()).with_selection(selection);
    let view = AtTree::new(store, tree, dir, selection);
    let mut fold = Fold::new(&view);
    let mut targets = Vec::new();
    let mut skipped = Vec::new();
    let full = |id: &str| -> Result<(Claim, Body), Failure> {
        store
            .get(id)?
            .map(|c| (c.claim, c.body))
            .ok_or_else(|| Failure::NotFound {
                code: crate::error::Code::NotFound,
                message: format!("no claim {id} in the store"),
            })
    };
    if a.all {
        for id in store.claim_ids()? {
            let Ok(light) = fold.require_summary(&id) else {
                continue;
            };
            if light.body.form() != Some("predicate") {
                continue;
            }
            let carried = match applicability(&light.claim, &light.body, &mut resolver)? {
                Applies::Anchored => None,
                Applies::Carried(r) => Some(r),
                Applies::NotApplicable(_) => continue,
            };
            // Evaluated unless an observation that applies at this tree decided it (or it
            // was superseded): a verdict about another tree is no answer here. `--force`
            // evaluates it again.
            let decided = fold.own(&id)?;
            let own = decided.status;
            if own != Status::Unevaluated && !a.force {
                skipped.push(Checked {
                    id: id.clone(),
                    outcome: Outcome::Unchanged,
                    reason: Some(format!(
                        "already {own} at this tree (by {}); ‹force› evaluates it again",
                        decided.decided_by.join(", ")
                    )),
                    record: None,
                    evidence: None,
                    seconds: None,
                });
                continue;
            }
            let (claim, body) = full(&id)?;
            let Ok((source, expr)) = predicate_of(&body) else {
                continue;
            };
            targets.push(Target {
                inputs: view.inputs_of(&id)?,
                claim,
                body,
                source,
                expr,
                own,
                carried,
            });
        }
        return Ok((targets, skipped));
    }
    let ids = crate::ops::ids::resolve_claim_ids(store, &a.ids)?;
    let mut seen = std::collections::HashSet::new();
    for id in &ids {
        if !seen.insert(id.clone()) {
            continue;
        }
        let (claim, body) = full(id)?;
        let (source, expr) = match predicate_of(&body) {
            Ok(x) => x,
            Err(why) => {
                skipped.push(Checked::skipped(id, why));
                continue;
            }
        };
        let carried = match applicability(&claim, &body, &mut resolver)? {
            Applies::Anchored => None,
            Applies::Carried(r) => Some(r),
            Applies::NotApplicable(why) => {
                skipped.push(Checked::skipped(id, why));
                continue;
            }
        };
        let own = fold.own(id)?.status;
        targets.push(Target {
            inputs: view.inputs_of(id)?,
            claim,
            body,
            source,
            expr,
            own,
            carried,
        });
    }
    Ok((targets, skipped))
}
