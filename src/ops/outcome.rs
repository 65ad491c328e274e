//! What a request that may change the store came to, decided here once for every front end:
//! its `effect` (the CLI Agent Spec's word for the change, for the request as a whole) and,
//! for a request of many inputs, whether they were taken whole, in part or not at all, which
//! gives the error code and so the exit class. The CLI and the MCP server read these from
//! the operations' outputs; neither works them out again.

use crate::error::Code;
use serde::Serialize;

/// What a request changed, as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Something new was stored (a claim, a file, a key).
    Created,
    /// Something stored was changed (a new signature on a stored claim, a key retired,
    /// damage moved aside).
    Updated,
    /// Nothing changed: it was all there already.
    Noop,
    /// A dry run that would have stored something new.
    WouldCreate,
    /// A dry run that would have changed something stored.
    WouldUpdate,
}

impl Effect {
    /// The effect of an append from its counts: a new claim is `created`, only new
    /// signatures on stored claims `updated`, nothing new `noop`; a dry run says what would
    /// be.
    pub fn of_counts(created: usize, merged: usize, dry_run: bool) -> Effect {
        match (created > 0, merged > 0, dry_run) {
            (true, _, false) => Effect::Created,
            (true, _, true) => Effect::WouldCreate,
            (false, true, false) => Effect::Updated,
            (false, true, true) => Effect::WouldUpdate,
            (false, false, _) => Effect::Noop,
        }
    }

    /// The effect of a request that changed something or not.
    pub fn updated_if(changed: bool) -> Effect {
        if changed {
            Effect::Updated
        } else {
            Effect::Noop
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Created => "created",
            Effect::Updated => "updated",
            Effect::Noop => "noop",
            Effect::WouldCreate => "would_create",
            Effect::WouldUpdate => "would_update",
        }
    }
}

impl std::fmt::Display for Effect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How much of a request of many inputs (envelopes, claims) was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// Every input was accepted (or there were none to refuse).
    Whole,
    /// Some were accepted and some refused: `PARTIAL_FAILURE`.
    Partial { accepted: usize, refused: usize },
    /// Every input was refused: `ALL_REJECTED`.
    NoneOf { refused: usize },
}

impl Taken {
    pub fn of(accepted: usize, refused: usize) -> Taken {
        match (accepted, refused) {
            (_, 0) => Taken::Whole,
            (0, refused) => Taken::NoneOf { refused },
            (accepted, refused) => Taken::Partial { accepted, refused },
        }
    }

    /// The code a front end reports, None when all was taken.
    pub fn code(self) -> Option<Code> {
        match self {
            Taken::Whole => None,
            Taken::Partial { .. } => Some(Code::PartialFailure),
            Taken::NoneOf { .. } => Some(Code::AllRejected),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effects_follow_the_counts() {
        assert_eq!(Effect::of_counts(1, 1, false), Effect::Created);
        assert_eq!(Effect::of_counts(0, 1, false), Effect::Updated);
        assert_eq!(Effect::of_counts(0, 0, false), Effect::Noop);
        assert_eq!(Effect::of_counts(2, 0, true), Effect::WouldCreate);
        assert_eq!(Effect::of_counts(0, 2, true), Effect::WouldUpdate);
        assert_eq!(Effect::of_counts(0, 0, true), Effect::Noop);
        assert_eq!(serde_json::json!(Effect::WouldCreate), "would_create");
    }

    #[test]
    fn taken_gives_the_code() {
        assert_eq!(Taken::of(3, 0), Taken::Whole);
        assert_eq!(Taken::of(0, 0).code(), None);
        assert_eq!(Taken::of(1, 2).code(), Some(Code::PartialFailure));
        assert_eq!(Taken::of(0, 2).code(), Some(Code::AllRejected));
    }
}
