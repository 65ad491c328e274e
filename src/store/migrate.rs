//! Applies the numbered migrations of `migrations/` to bring a store to the current layout.

use super::StoreError;

#[path = "../../migrations/0001_initial.rs"]
mod m0001;

type Apply = fn(&sled::Db) -> sled::Result<()>;

/// Every migration, in order. The last one's number is the current format version.
const MIGRATIONS: &[(u32, &str, Apply)] = &[(m0001::VERSION, m0001::DESCRIPTION, m0001::apply)];

/// The layout version this binary writes.
pub fn current_version() -> u32 {
    MIGRATIONS.last().map(|m| m.0).unwrap_or(0)
}

/// Reads the store's format version (0 for a store that has none yet).
pub fn stored_version(db: &sled::Db) -> Result<u32, StoreError> {
    let meta = db.open_tree("meta")?;
    match meta.get("format_version")? {
        None => Ok(0),
        Some(v) => {
            let bytes: [u8; 4] = v.as_ref().try_into().map_err(|_| {
                StoreError::Corrupt("meta/format_version is not a 4-byte number".into())
            })?;
            Ok(u32::from_be_bytes(bytes))
        }
    }
}

/// Refuses a newer store; applies pending migrations to an older one.
pub fn migrate(db: &sled::Db) -> Result<Vec<u32>, StoreError> {
    let found = stored_version(db)?;
    let supported = current_version();
    if found > supported {
        return Err(StoreError::FormatTooNew { found, supported });
    }
    let mut applied = Vec::new();
    for (version, _, apply) in MIGRATIONS.iter().filter(|m| m.0 > found) {
        apply(db)?;
        db.open_tree("meta")?
            .insert("format_version", &version.to_be_bytes())?;
        applied.push(*version);
    }
    if !applied.is_empty() {
        db.flush()?;
    }
    Ok(applied)
}
