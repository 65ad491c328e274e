//! Which keys a command trusts: `--trust ROLE:NAME:PUBKEY.pem` arguments (and, once a store
//! exists, its trusted keys). The work is [`crate::ops::keys`]'s.

use crate::cli::failure::Failure;
use crate::keys::TrustSet;

pub use crate::ops::keys::trust_with_store as with_store;

/// The keys a command trusts: the store's, when there is one, and those given with
/// `--trust`.
pub fn for_command(g: &crate::cli::Globals, args: &[String]) -> Result<TrustSet, Failure> {
    with_store(g.context().open_store_if_any()?.as_ref(), args)
}
