//! The helpers of the integration tests: one family, split by concern.
//!
//! - `keys.rs`: [`KeyPair`] (role, name, signing key, keyid, and its PEM files once written)
//!   and [`Keys`] (harness, agent, human and a stranger no store trusts), in memory
//!   ([`Keys::new`], fixed bytes) or made by `elench keys generate` ([`make_keys`]).
//! - `claims.rs`: [`ClaimBuilder`], the one way to write claim JSON (assertions, records).
//! - `envelopes.rs`: signing in memory ([`Keys::sign`] gives a [`Signed`], [`envelope_text`]
//!   signs a claim exactly as given) and through `elench sign` ([`sign_cli`]) where a test is
//!   about the CLI's signing.
//! - `cli.rs`: running the real binary ([`elench`], [`run_raw`], [`command`], [`run`]).
//! - `stores.rs`: stores with the keys trusted, through the CLI ([`KeyedStore`],
//!   [`cli_store`]) or the library ([`lib_store`]).
//! - `random.rs`: a seeded generator and random claim graphs for the property and load tests.
//!
//! Everything is re-exported here, so tests say `common::NAME`. Most tests use only a part,
//! hence the `dead_code` allowance.
#![allow(dead_code)]

mod claims;
mod cli;
mod envelopes;
mod keys;
mod random;
mod stores;

pub use claims::*;
pub use cli::*;
pub use envelopes::*;
pub use keys::*;
pub use random::*;
pub use stores::*;

use std::sync::atomic::{AtomicUsize, Ordering};

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A fresh file name in a test's directory.
pub fn fresh_name(stem: &str, ext: &str) -> String {
    format!("{stem}-{}.{ext}", COUNTER.fetch_add(1, Ordering::Relaxed))
}
