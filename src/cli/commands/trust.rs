//! Which keys a command trusts: `--trust ROLE:NAME:PUBKEY.pem` arguments (and, once a store
//! exists, its trusted keys).

use crate::cli::failure::Failure;
use crate::keys::{read_public_key_pem, Role, TrustSet, TrustedKey};
use std::path::Path;

/// Parses one `ROLE:NAME:PATH` argument and reads the key it names.
pub fn parse_trust_arg(arg: &str) -> Result<TrustedKey, Failure> {
    let mut parts = arg.splitn(3, ':');
    let (Some(role), Some(name), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(Failure::Usage(format!(
            "--trust {arg:?}: expected ROLE:NAME:PUBKEY.pem (for example harness:ci:ci.pub)"
        )));
    };
    let role: Role = role
        .parse()
        .map_err(|e| Failure::Usage(format!("--trust {arg:?}: {e}")))?;
    let pem = crate::cli::files::read_key_file(Path::new(path))?;
    let key = read_public_key_pem(&pem).map_err(|r| Failure::rejected(r, Some(path.to_owned())))?;
    TrustedKey::new(role, name, key).map_err(|r| Failure::rejected(r, Some(path.to_owned())))
}

/// The keys a command trusts: the store's, when there is one, and those given with
/// `--trust`.
pub fn for_command(g: &crate::cli::globals::Globals, args: &[String]) -> Result<TrustSet, Failure> {
    with_store(crate::cli::common::open_store_if_any(g)?.as_ref(), args)
}

/// The keys of `store` (if any) and those given on the command line.
pub fn with_store(
    store: Option<&crate::store::Store>,
    args: &[String],
) -> Result<TrustSet, Failure> {
    let mut keys = match store {
        Some(store) => store.trust_set()?.keys().to_vec(),
        None => Vec::new(),
    };
    for k in from_args(args)?.keys() {
        if !keys.iter().any(|have| have.keyid == k.keyid) {
            keys.push(k.clone());
        }
    }
    Ok(TrustSet::new(keys))
}

/// The trust set given on the command line.
pub fn from_args(args: &[String]) -> Result<TrustSet, Failure> {
    let keys = args
        .iter()
        .map(|a| parse_trust_arg(a))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(TrustSet::new(keys))
}
