//! The log as it speaks of one tree: status at a tree is the ordinary fold over the
//! assertions, the supersessions and the observations that apply there.
//!
//! [`AtTree`] is a [`ClaimSource`] over another one that leaves out, from the records
//! targeting a claim, each observation (a verification, falsification or
//! residue-acceptance) that does not apply at the tree. Nothing else changes, so the fold
//! run over it is the same fold, with everything proven of it, over the records that apply.
//!
//! An observation applies to its target at tree T when T is the tree it observed (its
//! anchor tree), or when the target's inputs at T ([`super::inputs`]) have the digest the
//! observation recorded for that target. An observation that recorded no digest (every
//! record written before digests were, or a hand-written one) applies at its own tree only,
//! except one that observed a claim without a predicate at that claim's own tree: its
//! inputs were the claim's own span, so it applies wherever the claim carries.
//!
//! Premises are judged at T too, through the same fold: a claim is revoked at T only by
//! premises falsified at T.

use super::inputs;
use super::{Anchor, AnchorError, Applies, Resolver};
use crate::claim::{Claim, Gist, Kind, Summary};
use crate::fold::ClaimSource;
use crate::store::{StoreError, StoredClaim};
use crate::tree::{Selection, TreeIds};
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;

/// Whether records of this kind are observations of one tree.
pub fn is_observation(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Verification | Kind::Falsification | Kind::ResidueAcceptance
    )
}

/// The claims of `src` as they stand at one tree (see the module documentation).
pub struct AtTree<'s, S: ClaimSource> {
    src: &'s S,
    ids: TreeIds,
    /// Finds a span claim's lines in the tree's directory (carry-over).
    resolver: RefCell<Resolver>,
    /// Each claim's inputs digest at the tree, once worked out (None: it reads nothing
    /// here, a span that is gone).
    inputs: RefCell<HashMap<String, Option<String>>>,
}

impl<'s, S: ClaimSource> AtTree<'s, S> {
    /// The view of `src` at the tree of `dir`, whose entries are `ids` (listed with
    /// `selection`).
    pub fn new(src: &'s S, ids: TreeIds, dir: &Path, selection: Selection) -> AtTree<'s, S> {
        let resolver = Resolver::new(dir, ids.oid()).with_selection(selection);
        AtTree {
            src,
            ids,
            resolver: RefCell::new(resolver),
            inputs: RefCell::new(HashMap::new()),
        }
    }

    /// The view reads the tree's files from `files` (its own tree's, listed with the same
    /// selection), shared with other readers of that tree, instead of reading them again.
    pub fn with_files(self, files: std::sync::Arc<super::files::TreeFiles>) -> AtTree<'s, S> {
        let resolver = self.resolver.into_inner().with_files(files);
        AtTree {
            resolver: RefCell::new(resolver),
            ..self
        }
    }

    /// The tree's id.
    pub fn tree(&self) -> &str {
        self.ids.oid()
    }

    /// The tree's entries.
    pub fn ids(&self) -> &TreeIds {
        &self.ids
    }

    /// The source this view reads.
    pub fn inner(&self) -> &'s S {
        self.src
    }

    /// The inputs digest of claim `id` at this tree (None when it has none here: a span
    /// that is gone or changed, or a claim the source does not hold).
    pub fn inputs_of(&self, id: &str) -> Result<Option<String>, StoreError> {
        if let Some(known) = self.inputs.borrow().get(id) {
            return Ok(known.clone());
        }
        let found = match self.src.claim_summary(id)? {
            Some(c) => self.inputs_at(&c)?,
            None => None,
        };
        self.inputs
            .borrow_mut()
            .insert(id.to_owned(), found.clone());
        Ok(found)
    }

    fn inputs_at(&self, c: &StoredClaim<Summary>) -> Result<Option<String>, StoreError> {
        let mut resolver = self.resolver.borrow_mut();
        match claim_inputs(&c.claim, &c.body, &self.ids, &mut resolver) {
            Ok(found) => Ok(found),
            Err(AnchorError::Io { path, source }) => Err(StoreError::Io { path, source }),
            // An anchor ingest would not pass, or a file that cannot be read as lines:
            // nothing can be shown unchanged.
            Err(_) => Ok(None),
        }
    }

    /// Whether record `record` acts on `target` at this tree.
    pub fn applies(&self, record: &str, target: &str) -> Result<bool, StoreError> {
        // A record the source lacks is left for the fold to report.
        let Some(header) = self.src.claim(record)? else {
            return Ok(true);
        };
        if !is_observation(header.claim.kind) || header.claim.anchor_tree == self.ids.oid() {
            return Ok(true);
        }
        let Some(r) = self.src.claim_summary(record)? else {
            return Ok(true);
        };
        let expected = match inputs::recorded(&r.body, target) {
            Some(d) => d.to_owned(),
            None => {
                // Recorded before inputs were: only an observation of a claim without a
                // predicate, at that claim's own tree, knows what it read (the span).
                let Some(t) = self.src.claim_summary(target)? else {
                    return Ok(false);
                };
                if inputs::claim_reads(&t.body).is_some()
                    || t.claim.anchor_tree != r.claim.anchor_tree
                {
                    return Ok(false);
                }
                match Anchor::of(&t.claim, &t.body) {
                    Ok(a) => span_inputs(&a),
                    Err(_) => return Ok(false),
                }
            }
        };
        Ok(self.inputs_of(target)?.as_deref() == Some(expected.as_str()))
    }
}

/// The inputs digest of a claim at the tree `ids` (`resolver` reads that tree's directory):
/// a predicate's reads, or a span found there (anchored or carried); None for a span that is
/// gone or changed there.
pub fn claim_inputs<G: Gist>(
    claim: &Claim,
    text: &G,
    ids: &TreeIds,
    resolver: &mut Resolver,
) -> Result<Option<String>, AnchorError> {
    if let Some(reads) = inputs::claim_reads(text) {
        return Ok(Some(inputs::digest(&reads, ids)));
    }
    // A claim without a predicate reads its span.
    let anchor = Anchor::of(claim, text)?;
    if anchor.path.is_none() && anchor.range.is_none() {
        return Ok(Some(ids.oid().to_owned()));
    }
    Ok(match resolver.resolve(claim, text)?.applies {
        Applies::Anchored | Applies::Carried => Some(span_inputs(&anchor)),
        Applies::Stale | Applies::Unanchored => None,
    })
}

/// The inputs digest of a claim without a predicate at its own tree (its span, or that
/// tree), which needs no directory; None for a predicate, whose inputs only a tree's
/// entries give.
pub fn own_inputs<G: Gist>(claim: &Claim, text: &G) -> Option<String> {
    if inputs::claim_reads(text).is_some() {
        return None;
    }
    Anchor::of(claim, text).ok().map(|a| span_inputs(&a))
}

/// A span claim's inputs wherever its span is found: its content digest, or for a span
/// without one (which only its own tree shows) that tree.
fn span_inputs(a: &Anchor) -> String {
    match (&a.path, &a.range, &a.content_digest) {
        (None, None, _) => a.tree.clone(),
        (_, _, Some(d)) => d.clone(),
        _ => a.tree.clone(),
    }
}

impl<S: ClaimSource> ClaimSource for AtTree<'_, S> {
    fn claim(&self, id: &str) -> Result<Option<StoredClaim>, StoreError> {
        self.src.claim(id)
    }
    fn claim_summary(&self, id: &str) -> Result<Option<StoredClaim<Summary>>, StoreError> {
        self.src.claim_summary(id)
    }
    fn claim_summaries(
        &self,
        ids: &[&str],
    ) -> Result<Vec<Option<StoredClaim<Summary>>>, StoreError> {
        self.src.claim_summaries(ids)
    }
    fn records_targeting(&self, id: &str) -> Result<Vec<String>, StoreError> {
        let mut out = Vec::new();
        for r in self.src.records_targeting(id)? {
            if self.applies(&r, id)? {
                out.push(r);
            }
        }
        Ok(out)
    }
    fn dependents(&self, id: &str) -> Result<Vec<String>, StoreError> {
        self.src.dependents(id)
    }
    fn compromise(&self) -> Option<std::sync::Arc<crate::fold::Compromise>> {
        self.src.compromise()
    }
}
