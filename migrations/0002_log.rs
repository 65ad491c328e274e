//! Layout 2: the log and its index (see `src/store/mod.rs`).
//!
//! From layout 1: every trusted key becomes a `key-add` record, every envelope (in arrival
//! order, in canonical form) an envelope record, and every retired key a `key-retire` record
//! after them (layout 1 did not record when a key was retired, and each of its envelopes was
//! accepted while its signer was active). The index is then built from the new log, which
//! verifies every envelope again. The sled database is kept, renamed `db.layout1/`, until
//! the user removes it; a migration interrupted part-way starts again from it.

use std::path::Path;

pub const VERSION: u32 = 2;
pub const DESCRIPTION: &str = "append-only log of checksummed, hash-chained records + LMDB index";

/// What layout 1 held, read once.
pub struct Layout1 {
    /// (keyid, role, name, public key hex, retired)
    pub keys: Vec<(String, String, String, String, bool)>,
    /// Envelope bytes as received, in arrival order.
    pub envelopes: Vec<Vec<u8>>,
}

/// Reads layout 1 (a sled database). Only builds with the `layout1` feature carry sled.
#[cfg(feature = "layout1")]
pub fn read_layout1(db_dir: &Path) -> Result<Layout1, String> {
    let db = sled::Config::new()
        .path(db_dir)
        .open()
        .map_err(|e| format!("cannot open the layout 1 database: {e}"))?;
    let tree = |name: &str| db.open_tree(name).map_err(|e| e.to_string());
    let mut keys = Vec::new();
    for item in tree("keys")?.iter() {
        let (_, v) = item.map_err(|e| e.to_string())?;
        let k: serde_json::Value = serde_json::from_slice(&v).map_err(|e| e.to_string())?;
        let s = |f: &str| k[f].as_str().unwrap_or_default().to_owned();
        keys.push((
            s("keyid"),
            s("role"),
            s("name"),
            s("public_key"),
            k["retired"].as_bool().unwrap_or(false),
        ));
    }
    let envelopes_tree = tree("envelopes")?;
    let mut envelopes = Vec::new();
    for item in tree("arrivals")?.iter() {
        let (_, id) = item.map_err(|e| e.to_string())?;
        let env = envelopes_tree
            .get(&id)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("claim {} has no envelope", String::from_utf8_lossy(&id)))?;
        envelopes.push(env.to_vec());
    }
    Ok(Layout1 { keys, envelopes })
}

/// Whether this build can read layout 1: sled is a dependency only with the `layout1`
/// feature, so that every other build stays free of it.
pub const CAN_READ_LAYOUT1: bool = cfg!(feature = "layout1");

/// Without the `layout1` feature there is no reader; `migrate` refuses before calling this.
#[cfg(not(feature = "layout1"))]
pub fn read_layout1(db_dir: &Path) -> Result<Layout1, String> {
    Err(format!(
        "{}: this build cannot read layout 1 (built without the `layout1` feature)",
        db_dir.display()
    ))
}
