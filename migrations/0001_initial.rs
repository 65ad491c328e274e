//! Layout 1 (elench 0.1, sled): one sled database in `db/` with trees
//! - `envelopes`: claim id → the envelope bytes exactly as received
//! - `claims`:    claim id → JSON of the stored claim (typed view, signers, arrival number)
//! - `arrivals`:  arrival number (u64 big-endian) → claim id
//! - `by_target`, `by_premise`: index pairs
//! - `keys`:      keyid → JSON of the trusted key (role, name, public key, retired)
//! - `meta`:      `format_version`, `count`
//!
//! Nothing writes this layout any more; migration 0002 reads it.

pub const VERSION: u32 = 1;
pub const DESCRIPTION: &str = "sled database: envelopes, claims, arrivals, indexes, keys, meta";
