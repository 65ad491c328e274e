//! Takes a store from an older layout to the current one (`migrations/`). Runs under the
//! writer lock, before the store is opened; the FORMAT file is rewritten last, so a migration
//! interrupted part-way is simply run again.

use super::log::{Appender, Head, Kind, Log};
use super::{record, StoreError};
use std::path::Path;

#[path = "../../migrations/0001_initial.rs"]
mod m0001;
#[path = "../../migrations/0002_log.rs"]
mod m0002;

/// Every layout, in order. The last one's number is the current format version.
const LAYOUTS: &[(u32, &str)] = &[
    (m0001::VERSION, m0001::DESCRIPTION),
    (m0002::VERSION, m0002::DESCRIPTION),
];

/// The layout version this binary writes.
pub fn current_version() -> u32 {
    LAYOUTS.last().map(|m| m.0).unwrap_or(0)
}

/// Brings the store at `root` from layout `found` to the current one.
pub fn migrate(root: &Path, found: u32) -> Result<(), StoreError> {
    if found == 1 {
        from_layout1(root)?;
    }
    super::write_format_file(root)
}

fn from_layout1(root: &Path) -> Result<(), StoreError> {
    let db_dir = root.join("db");
    let old = m0001_dir(root, &db_dir);
    let layout = m0002::read_layout1(&old).map_err(StoreError::Corrupt)?;
    // Start from nothing: a previous attempt may have left part of a log.
    for dir in [root.join(super::LOG_DIR), root.join(super::INDEX_DIR)] {
        super::index::Index::forget(&dir);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|source| StoreError::Io {
                path: dir.clone(),
                source,
            })?;
        }
    }
    let log = Log::new(root.join(super::LOG_DIR));
    let mut appender = Appender::new(log, Head::EMPTY);
    for (keyid, role, name, public_key, _) in &layout.keys {
        let role: crate::keys::Role = role
            .parse()
            .map_err(|why| StoreError::Corrupt(format!("key {keyid}: {why}")))?;
        let event = record::KeyAdd {
            keyid: keyid.clone(),
            role,
            name: name.clone(),
            public_key: public_key.clone(),
        };
        appender.stage(Kind::KeyAdd, &record::encode_event(&event));
    }
    let mut seen = std::collections::HashSet::new();
    for env in &layout.envelopes {
        let canonical = record::canonical_envelope(env).map_err(StoreError::Corrupt)?;
        if seen.insert(record::envelope_digest(&canonical)) {
            appender.stage(Kind::Envelope, &canonical);
        }
    }
    for (keyid, _, _, _, retired) in &layout.keys {
        if *retired {
            let event = record::KeyRetire {
                keyid: keyid.clone(),
            };
            appender.stage(Kind::KeyRetire, &record::encode_event(&event));
        }
    }
    appender.commit()?;
    // The sled database steps aside (kept, not deleted) before FORMAT says layout 2.
    if old == db_dir {
        let kept = root.join("db.layout1");
        std::fs::rename(&db_dir, &kept).map_err(|source| StoreError::Io {
            path: db_dir.clone(),
            source,
        })?;
    }
    Ok(())
}

/// Where the layout 1 database is: `db/`, or `db.layout1/` if an earlier attempt moved it.
fn m0001_dir(root: &Path, db_dir: &Path) -> std::path::PathBuf {
    if db_dir.exists() {
        db_dir.to_path_buf()
    } else {
        root.join("db.layout1")
    }
}
