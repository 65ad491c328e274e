//! Takes a store from an older layout to the current one (`migrations/`). Runs under the
//! writer lock, before the store is opened; the FORMAT file is rewritten last, so a migration
//! interrupted part-way is simply run again.
//!
//! A migration never deletes log data: it runs only when the older layout is on disk, it
//! writes the new log beside the old data (`log.migrating/`) and moves it into place whole,
//! and a `log/` already there is taken over only when it is a prefix of what the migration
//! writes (a migration interrupted after its log was in place); anything else is a FORMAT
//! that disagrees with the disk, `STORE_CORRUPT`, and nothing is touched.

use super::log::{Appender, Head, Kind, Log};
use super::{record, StoreError};
use std::path::{Path, PathBuf};

#[path = "../../migrations/0001_initial.rs"]
mod m0001;
#[path = "../../migrations/0002_log.rs"]
mod m0002;
#[path = "../../migrations/0003_trust_records.rs"]
mod m0003;

/// Every layout, in order. The last one's number is the current format version.
const LAYOUTS: &[(u32, &str)] = &[
    (m0001::VERSION, m0001::DESCRIPTION),
    (m0002::VERSION, m0002::DESCRIPTION),
    (m0003::VERSION, m0003::DESCRIPTION),
];

/// Where the new log is written before it is moved into place.
const STAGING_DIR: &str = "log.migrating";
/// Layout 1's database, and the name it is kept under once migrated.
const LAYOUT1_DIR: &str = "db";
const LAYOUT1_KEPT: &str = "db.layout1";

/// The layout version this binary writes.
pub fn current_version() -> u32 {
    LAYOUTS.last().map(|m| m.0).unwrap_or(0)
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Whether `dir` holds any file or folder (a missing folder holds nothing).
fn holds_anything(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .map(|mut d| d.next().is_some())
        .unwrap_or(false)
}

/// What the disk says of a store whose FORMAT names `found`, when that disagrees: None when
/// the layout FORMAT names is what is on disk (or may be, part-way through its migration).
pub fn disagreement(root: &Path, found: u32) -> Option<String> {
    let log_dir = root.join(super::LOG_DIR);
    let layout1 = root.join(LAYOUT1_DIR).is_dir() || root.join(LAYOUT1_KEPT).is_dir();
    if !LAYOUTS.iter().any(|l| l.0 == found) {
        return Some(format!(
            "FORMAT names layout {found}, which no elench ever wrote (layouts are {})",
            LAYOUTS
                .iter()
                .map(|l| l.0.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if found == 1 && !layout1 {
        return Some(if holds_anything(&log_dir) {
            format!(
                "FORMAT names layout 1 (a sled database in {LAYOUT1_DIR}/), but the store holds \
                 no such database and a layout {} log in log/: FORMAT disagrees with what is on \
                 disk, so nothing was migrated or changed; `elench fsck --repair` makes FORMAT \
                 name the layout on disk",
                current_version()
            )
        } else {
            format!(
                "FORMAT names layout 1 (a sled database in {LAYOUT1_DIR}/), but the store holds \
                 neither that database nor a log"
            )
        });
    }
    if found >= 2 && root.join(LAYOUT1_DIR).is_dir() && !holds_anything(&log_dir) {
        return Some(format!(
            "FORMAT names layout {found}, but the store holds a layout 1 database in \
             {LAYOUT1_DIR}/ and no log: FORMAT disagrees with what is on disk; write \
             `elench-store 1` to FORMAT to migrate that database"
        ));
    }
    None
}

/// Brings the store at `root` from layout `found` to the current one.
pub fn migrate(root: &Path, found: u32, envs: &super::Environments) -> Result<(), StoreError> {
    if let Some(why) = disagreement(root, found) {
        return Err(StoreError::Corrupt(why));
    }
    if found == 1 {
        from_layout1(root, envs)?;
    }
    if found <= 2 {
        from_layout2(root)?;
    }
    super::write_format_file(root)
}

/// Whether a layout 2 `trust/` folder waits to be carried into the log.
pub fn trust_folder_waits(root: &Path) -> bool {
    root.join(m0003::OLD_DIR).is_dir()
}

/// Appends layout 2's pins and policies to the log as records (see `migrations/0003`), then
/// sets the folder aside. Run again after an interruption, it appends them again, which
/// changes nothing: a pin or policy already in the log is taken once.
fn from_layout2(root: &Path) -> Result<(), StoreError> {
    let old = root.join(m0003::OLD_DIR);
    if !old.is_dir() {
        return Ok(());
    }
    let trust = m0003::read_layout2_trust(&old).map_err(StoreError::Corrupt)?;
    let log = Log::new(root.join(super::LOG_DIR));
    let (head, tail) = log.scan(Head::EMPTY, |_| Ok(true))?;
    match tail {
        super::log::Tail::Clean => {}
        // Never acknowledged: set aside as opening does, before appending after it.
        super::log::Tail::Torn {
            segment, offset, ..
        } => {
            log.quarantine_from(segment, offset, &super::fresh_quarantine(root))?;
        }
        super::log::Tail::Damaged(d) => {
            return Err(StoreError::Corrupt(format!(
                "{d}; the trust folder was not carried into the log: `elench fsck --repair` \
                 moves the damaged part aside"
            )))
        }
    }
    let mut appender = Appender::new(log, head);
    for pin in &trust.pins {
        let bytes = crate::jcs::canonical(pin)
            .map_err(|e| StoreError::Corrupt(format!("{}: a pin: {e}", old.display())))?;
        record::check_trust_record(Kind::Pin, &bytes)
            .map_err(|why| StoreError::Corrupt(format!("{}: {why}", old.display())))?;
        appender.stage(Kind::Pin, &bytes);
    }
    for envelope in &trust.policies {
        let bytes = record::canonical_envelope(envelope)
            .map_err(|why| StoreError::Corrupt(format!("{}: {why}", old.display())))?;
        appender.stage(Kind::Policy, &bytes);
    }
    appender.commit()?;
    let kept = root.join(m0003::KEPT_DIR);
    if kept.exists() {
        move_aside(&kept, &super::fresh_quarantine(root).join(m0003::KEPT_DIR))?;
    }
    std::fs::rename(&old, &kept).map_err(io_err(&old))?;
    crate::atomic_file::sync_dir(root).map_err(io_err(root))?;
    Ok(())
}

fn from_layout1(root: &Path, envs: &super::Environments) -> Result<(), StoreError> {
    let db_dir = root.join(LAYOUT1_DIR);
    let old = if db_dir.is_dir() {
        db_dir.clone()
    } else {
        root.join(LAYOUT1_KEPT)
    };
    if !m0002::CAN_READ_LAYOUT1 {
        // Checked before anything is written: the store stays exactly as elench 0.1 left it.
        return Err(StoreError::MigrationUnavailable(format!(
            "{} is a store of elench 0.1 (layout 1: a sled database in {}/), and this elench \
             was built without the layout 1 migration, so nothing was changed. Migrate it once \
             with a build that has it: `cargo install elench --features layout1`, or in elench's \
             source tree `cargo run --release --features layout1 -- fsck --store {}`. Any \
             command of that build migrates the store; every build opens it afterwards",
            root.display(),
            old.file_name()
                .and_then(|n| n.to_str())
                .unwrap_or(LAYOUT1_DIR),
            root.display()
        )));
    }
    let layout = m0002::read_layout1(&old).map_err(StoreError::Corrupt)?;
    // The new log is written aside; a previous attempt's is elench's own scratch, made
    // from the database still here, and is written again.
    let staging = root.join(STAGING_DIR);
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(io_err(&staging))?;
    }
    let mut appender = Appender::new(Log::new(staging.clone()), Head::EMPTY);
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
    std::fs::create_dir_all(&staging).map_err(io_err(&staging))?;
    appender.commit()?;
    let log_dir = root.join(super::LOG_DIR);
    let aside = root
        .join(super::QUARANTINE_DIR)
        .join(format!("migration-{}", super::unix_time()));
    if holds_anything(&log_dir) {
        // Only a log this migration wrote (all or part of it) is taken over.
        if !is_prefix_of(&log_dir, &staging)? {
            return Err(StoreError::Corrupt(format!(
                "FORMAT names layout 1, but log/ holds a log that migrating {} does not give \
                 (records the layout 1 database does not hold): FORMAT disagrees with what is \
                 on disk, so nothing was migrated or changed; `elench fsck --repair` makes \
                 FORMAT name the layout on disk",
                old.display()
            )));
        }
        move_aside(&log_dir, &aside.join(super::LOG_DIR))?;
    } else if log_dir.exists() {
        std::fs::remove_dir(&log_dir).map_err(io_err(&log_dir))?;
    }
    // An index beside no log of layout 2 indexes nothing this store holds.
    let index_dir = root.join(super::INDEX_DIR);
    if index_dir.exists() {
        envs.forget(&index_dir);
        move_aside(&index_dir, &aside.join(super::INDEX_DIR))?;
    }
    std::fs::rename(&staging, &log_dir).map_err(io_err(&staging))?;
    crate::atomic_file::sync_dir(root).map_err(io_err(root))?;
    // The sled database steps aside (kept, not deleted) before FORMAT says layout 2.
    if old == db_dir {
        let kept = root.join(LAYOUT1_KEPT);
        std::fs::rename(&db_dir, &kept).map_err(io_err(&db_dir))?;
    }
    Ok(())
}

fn move_aside(from: &Path, to: &Path) -> Result<(), StoreError> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(io_err(parent))?;
    }
    std::fs::rename(from, to).map_err(io_err(from))
}

/// Whether every file of `dir` is a byte prefix of the file of that name in `of` (a
/// migration's log cut short by an interruption).
fn is_prefix_of(dir: &Path, of: &Path) -> Result<bool, StoreError> {
    for entry in std::fs::read_dir(dir).map_err(io_err(dir))? {
        let entry = entry.map_err(io_err(dir))?;
        let path: PathBuf = entry.path();
        if !path.is_file() {
            return Ok(false);
        }
        let mine = std::fs::read(&path).map_err(io_err(&path))?;
        let theirs = match std::fs::read(of.join(entry.file_name())) {
            Ok(b) => b,
            Err(_) => return Ok(false),
        };
        if !theirs.starts_with(&mine) {
            return Ok(false);
        }
    }
    Ok(true)
}
