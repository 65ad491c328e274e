//! `why`: a shortest `dependsOn` path from one claim to a premise it rests on.

use super::ids::{require_claim_ids, resolve_claim_id};
use super::picture::{shown, Shown};
use super::{Context, Failure};
use crate::claim::Gist;
use crate::fold::{Fold, Status};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What `why` is asked.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WhyInput {
    /// The claim that may rest on the other (whole id, or a unique prefix).
    pub from: String,
    /// The premise it may rest on.
    pub to: String,
    /// Also what a picture of the path shows (every claim on it).
    #[serde(default)]
    pub picture: bool,
}

/// One claim on the path.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct Step {
    pub id: String,
    pub status: Status,
    /// Its `assertion.text`, whole (null when it has none).
    pub text: Value,
}

/// What `why` answers: its JSON is the command's `data`. No path is an answer, not a
/// failure.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct WhyOutput {
    pub from: String,
    pub to: String,
    /// `[from, …, to]`, each naming the next among its premises; null when there is none.
    pub path: Option<Vec<String>>,
    /// The number of `dependsOn` steps, or null.
    pub length: Option<usize>,
    pub steps: Vec<Step>,
    /// With no path: whether `to` rests on `from` instead (the arguments swapped).
    pub reverse_path: bool,
    /// With `picture`: the claims a picture of the path shows.
    #[serde(skip)]
    pub picture: Option<Shown>,
}

/// The shortest path (the first in id order among equals; `graph::why`), as one snapshot
/// of the log.
pub fn why(ctx: &Context, input: &WhyInput) -> Result<WhyOutput, Failure> {
    require_claim_ids([&input.from, &input.to])?;
    let store = ctx.open_store()?;
    let _snapshot = store.pin()?;
    let from = resolve_claim_id(&store, &input.from)?;
    let to = resolve_claim_id(&store, &input.to)?;
    let path = crate::graph::why(&store, &from, &to)?;
    let reverse_path = match &path {
        None => crate::graph::why(&store, &to, &from)?.is_some(),
        Some(_) => false,
    };
    let mut fold = Fold::new(&store);
    let mut steps = Vec::new();
    for id in path.iter().flatten() {
        let status = fold.effective(id)?.status;
        // Reading the claim from the log checks it; its text is what people see.
        let text = store
            .get(id)?
            .and_then(|c| c.body.text_value().cloned())
            .unwrap_or(Value::Null);
        steps.push(Step {
            id: id.clone(),
            status,
            text,
        });
    }
    let picture = match input.picture {
        true => {
            let ids = path.clone().unwrap_or_default();
            Some(shown(&store, &mut fold, &ids, usize::MAX, false)?)
        }
        false => None,
    };
    Ok(WhyOutput {
        length: path.as_ref().map(|p| p.len() - 1),
        from,
        to,
        path,
        steps,
        reverse_path,
        picture,
    })
}
