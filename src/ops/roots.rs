//! The falsified roots a revoked claim rests on, each placed where it is at a tree: what a
//! document (SARIF's related locations) shows beside a revoked claim of `gate` or `status
//! --at`.

use super::Failure;
use crate::anchor::Resolver;
use crate::claim::Gist;
use crate::fold::{ClaimSource, Fold};

/// A falsified claim a revoked one rests on.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct Root {
    pub id: String,
    /// Its `assertion.text`.
    pub text: Option<String>,
    /// Where its lines are at the tree, when it applies there.
    pub path: Option<String>,
    pub range: Option<[u64; 2]>,
}

/// The falsified roots of `id` (by `fold`, in id order, each once), placed by `resolver`.
pub fn roots_at<S: ClaimSource>(
    fold: &mut Fold<'_, S>,
    resolver: &mut Resolver,
    id: &str,
) -> Result<Vec<Root>, Failure> {
    let report = fold.report(id)?;
    let mut roots: Vec<String> = report.revoked_by.iter().map(|c| c.root.clone()).collect();
    roots.sort();
    roots.dedup();
    let mut out = Vec::with_capacity(roots.len());
    for root in roots {
        let c = fold.require_summary(&root)?;
        let res = resolver.resolve(&c.claim, &c.body)?;
        let applies = res.applies.applies();
        out.push(Root {
            text: c.body.text().map(str::to_owned),
            path: res.path.filter(|_| applies),
            range: res.range.filter(|_| applies),
            id: root,
        });
    }
    Ok(out)
}
