//! Migration 0001: the initial layout.
//!
//! Trees (all keys are UTF-8 ids unless said otherwise):
//! - `envelopes`: claim id → the envelope bytes exactly as received
//! - `claims`:    claim id → JSON of the stored claim (typed view, signers, arrival number)
//! - `arrivals`:  arrival number (u64 big-endian) → claim id
//! - `by_target`: target id ++ record id → empty (the records acting on a claim)
//! - `by_premise`: premise id ++ dependent id → empty (the claims built on a claim)
//! - `keys`:      keyid → JSON of the trusted key (role, name, public key, retired)
//! - `meta`:      `format_version` (u32 BE), `count` (u64 BE, the next arrival number)
//!
//! An empty store needs only its trees opened and its counter set.

pub const VERSION: u32 = 1;
pub const DESCRIPTION: &str =
    "initial layout: envelopes, claims, arrivals, target and premise indexes, keys, meta";

pub fn apply(db: &sled::Db) -> sled::Result<()> {
    for name in [
        "envelopes",
        "claims",
        "arrivals",
        "by_target",
        "by_premise",
        "keys",
        "meta",
    ] {
        db.open_tree(name)?;
    }
    let meta = db.open_tree("meta")?;
    if meta.get("count")?.is_none() {
        meta.insert("count", &0u64.to_be_bytes())?;
    }
    Ok(())
}
