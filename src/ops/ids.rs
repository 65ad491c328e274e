//! Claim ids as people and agents give them: whole, or a unique prefix of at least
//! [`MIN_PREFIX_HEX`] hex digits after `cl_` (like git's short hashes).

use super::error::{InputError, Param};
use super::Failure;
use crate::store::Store;

/// Fewest hex digits after `cl_` that a short id may have.
pub const MIN_PREFIX_HEX: usize = 4;
/// How many candidates an ambiguous short id lists.
pub const MAX_CANDIDATES: usize = 10;

/// Whether `arg` is a claim id or a short one: `cl_` then 4 to 64 lowercase hex digits.
pub fn is_id_or_prefix(arg: &str) -> bool {
    arg.strip_prefix("cl_").is_some_and(|hex| {
        (MIN_PREFIX_HEX..=64).contains(&hex.len())
            && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// Why `arg` cannot be a claim id or a short one, if it cannot.
pub fn claim_id_problem(arg: &str) -> Option<String> {
    (!is_id_or_prefix(arg)).then(|| {
        format!(
            "{arg:?} is not a claim id: give cl_ followed by 64 lowercase hex digits, or a \
             unique prefix of at least {MIN_PREFIX_HEX} of them (as `elench log` shows)"
        )
    })
}

/// Every argument of `param` that cannot be a claim id.
pub fn claim_id_errors<'a>(
    param: Param,
    ids: impl IntoIterator<Item = &'a String>,
) -> Vec<InputError> {
    ids.into_iter()
        .filter_map(|id| claim_id_problem(id).map(|m| InputError::identifier(param, id, m)))
        .collect()
}

/// Refuses arguments that cannot be claim ids or short ids (a bad argument, exit 2, rather
/// than an id that is merely unknown, exit 5), before any work is done.
pub fn require_claim_ids<'a>(ids: impl IntoIterator<Item = &'a String>) -> Result<(), Failure> {
    match Failure::inputs(claim_id_errors(Param::Id, ids)) {
        Some(f) => Err(f),
        None => Ok(()),
    }
}

/// The full id a claim id argument names. A full id is returned as given (whether it is
/// stored is the caller's question); a short one must match exactly one stored claim.
pub fn resolve_claim_id(store: &Store, arg: &str) -> Result<String, Failure> {
    require_claim_ids([&arg.to_owned()])?;
    if crate::claim::is_claim_id(arg) {
        return Ok(arg.to_owned());
    }
    let mut found = store.ids_with_prefix(arg, MAX_CANDIDATES + 1)?;
    match found.len() {
        0 => Err(Failure::claim_not_found(&[arg.to_owned()])),
        1 => Ok(found.remove(0)),
        n => {
            let more = n > MAX_CANDIDATES;
            found.truncate(MAX_CANDIDATES);
            Err(Failure::Ambiguous {
                input: arg.to_owned(),
                candidates: found,
                more,
            })
        }
    }
}

/// [`resolve_claim_id`] for each argument, in order.
pub fn resolve_claim_ids(store: &Store, args: &[String]) -> Result<Vec<String>, Failure> {
    args.iter().map(|a| resolve_claim_id(store, a)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_prefixes_are_told_from_other_text() {
        assert!(is_id_or_prefix("cl_abcd"));
        assert!(is_id_or_prefix(&format!("cl_{}", "0".repeat(64))));
        assert!(!is_id_or_prefix("cl_abc"));
        assert!(!is_id_or_prefix("cl_ABCD"));
        assert!(!is_id_or_prefix(&format!("cl_{}", "0".repeat(65))));
        assert!(!is_id_or_prefix("abcd"));
        let errors = claim_id_errors(Param::Id, [&"cl_../x".to_owned()]);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].pattern, Some("path_traversal"));
    }
}
