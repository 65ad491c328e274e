//! The authority table of docs/claims.md: which roles may sign which claims.

use super::Role;
use crate::claim::{Claim, Kind, OriginKind};
use crate::error::{Code, Rejection};

/// Whether a key with `role` may sign `claim`. Returns the violated rule otherwise.
pub fn check_authority(role: Role, claim: &Claim) -> Result<(), Rejection> {
    let origin_ok = match claim.origin {
        OriginKind::HarnessObserved => role == Role::Harness,
        OriginKind::HumanAsserted => role == Role::Human,
        OriginKind::AgentAsserted => matches!(role, Role::Agent | Role::Harness),
    };
    if !origin_ok {
        let needs = match claim.origin {
            OriginKind::HarnessObserved => "a harness key",
            OriginKind::HumanAsserted => "a human key",
            OriginKind::AgentAsserted => "an agent or harness key",
        };
        return Err(Rejection::at(
            Code::RoleViolation,
            "/origin/kind",
            format!(
                "origin.kind {} requires {needs}; the signing key's role is {role}",
                claim.origin
            ),
        ));
    }
    match claim.kind {
        Kind::Verification
            if role != Role::Harness || claim.origin != OriginKind::HarnessObserved =>
        {
            Err(Rejection::at(
                Code::RoleViolation,
                "/kind",
                format!(
                    "a verification must be harness-observed and signed by a harness key; \
                     this one is {} signed by {}",
                    claim.origin,
                    role.a_key()
                ),
            ))
        }
        Kind::ResidueAcceptance
            if role != Role::Human || claim.origin != OriginKind::HumanAsserted =>
        {
            Err(Rejection::at(
                Code::RoleViolation,
                "/kind",
                format!(
                    "a residue-acceptance must be human-asserted and signed by a human key; \
                     this one is {} signed by {}",
                    claim.origin,
                    role.a_key()
                ),
            ))
        }
        _ => Ok(()),
    }
}
