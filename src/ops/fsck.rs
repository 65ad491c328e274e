//! `fsck`: check the whole store.
//!
//! Every record's checksums and chain value; every envelope verified again against the trust
//! state at its position, with its claim id recomputed (on every core); every entry of the
//! index checked against what the log gives it (`rebuild::audit_log`); every trust policy
//! record checked again where it sits (`trust::verify_records`); and, with a
//! checkpoint, that the log still extends it. `repair` first moves everything from the first
//! damaged record on into `quarantine/` and rebuilds the index.

use super::checkpoint::{hold, read_checkpoint, CheckpointCheck};
use super::{Context, Failure, Observer};
use crate::keys::read_public_key_pem;
use crate::store::index::Difference;
use crate::store::{rebuild, Store, Tail};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// What to check.
#[derive(Debug, Clone, Default)]
pub struct FsckInput {
    /// Move the damaged part of the log aside and rebuild the index first.
    pub repair: bool,
    /// A checkpoint file (from `checkpoint -o`) the log must still extend.
    pub checkpoint: Option<String>,
    /// The public key (PEM) that must have signed the checkpoint; never one of the store's.
    pub key: Option<PathBuf>,
}

/// One problem found.
#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    pub code: &'static str,
    pub message: String,
}

/// What `repair` did.
#[derive(Debug, Clone, Serialize)]
pub struct Repair {
    /// The first damage found, if the log was damaged.
    pub damage: Option<String>,
    /// The files moved into the quarantine folder.
    pub moved: Vec<String>,
    /// `quarantine/<time>/`, when anything went there.
    pub quarantine: Option<String>,
    /// `FORMAT` named an older layout than the log on disk and was set right.
    pub format: bool,
    /// Where the quarantine folder is (or would have been).
    #[serde(skip)]
    pub quarantine_dir: PathBuf,
}

/// What `fsck` found.
#[derive(Debug, Serialize)]
pub struct FsckOutput {
    pub records: u64,
    pub envelopes: u64,
    pub claims: u64,
    pub claims_checked: u64,
    pub problems: Vec<Problem>,
    pub repaired: Option<Repair>,
    /// STORE_CORRUPT when the log itself is damaged, FSCK_PROBLEMS when only the index is.
    #[serde(skip)]
    pub failure: Option<Failure>,
}

impl FsckOutput {
    /// `updated` when `repair` moved damage aside, else `noop` (a check only reads).
    pub fn effect(&self) -> super::outcome::Effect {
        super::outcome::Effect::updated_if(
            self.repaired
                .as_ref()
                .is_some_and(|r| r.damage.is_some() || !r.moved.is_empty()),
        )
    }
}

struct Problems(Vec<Problem>);

impl Problems {
    fn add(&mut self, code: &'static str, message: String) {
        self.0.push(Problem { code, message });
    }
}

/// What a check found.
pub struct Findings {
    pub records: u64,
    pub envelopes: u64,
    pub claims: u64,
    pub problems: Vec<Problem>,
    /// The log itself is damaged (not just the index).
    pub log_damaged: bool,
}

/// Checks the store of `ctx`, repairing it first when asked. A store too damaged to open
/// like any command is still looked at and reported on. Warnings go to the context's
/// observer, and the progress of the walk over the log.
pub fn fsck(ctx: &Context, input: &FsckInput) -> Result<FsckOutput, Failure> {
    let observer = ctx.observer();
    let checkpoint = input
        .checkpoint
        .as_deref()
        .map(read_checkpoint)
        .transpose()?;
    let key = match &input.key {
        None => None,
        Some(path) => {
            let pem = super::keys::read_key_file(path)?;
            Some(
                read_public_key_pem(&pem)
                    .map_err(|r| Failure::rejected(r, Some(path.display().to_string())))?,
            )
        }
    };
    if let (Some(c), None) = (&checkpoint, &key) {
        if let Some(by) = c.signed_by() {
            observer.warn(
                "CHECKPOINT_UNVERIFIED",
                format!(
                    "the checkpoint's signature (by {by}) was not checked: pass ‹key› PUB.pem, \
                     the public key you expect to have signed it"
                ),
            );
        }
    }
    let mut repaired = None;
    if input.repair {
        // Before the store is opened: a FORMAT naming an older layout than the one on disk
        // keeps every command out, and the index is rebuilt into fresh files, never read when
        // a command found it damaged (a damaged one can fault when read).
        let root = ctx.store_root()?;
        let options = ctx.store_options();
        let format_repaired = Store::repair_format(&root, &options)?;
        let crate::store::Repaired {
            damage,
            moved,
            quarantine: dest,
        } = Store::repair_at(&root, &options)?;
        repaired = Some(Repair {
            damage: damage.map(|d| d.to_string()),
            moved,
            quarantine: moved_any(&dest).then(|| dest.display().to_string()),
            format: format_repaired,
            quarantine_dir: dest,
        });
    }
    // Opened like any command (a missing index is rebuilt, a torn tail cut, each with its
    // warning); if the store is too damaged for that, fsck still looks and reports.
    let opened = match ctx.open_store() {
        Ok(s) => s,
        Err(Failure::Corrupt(why)) => match ctx.open_store_unsettled() {
            Ok(s) => s,
            // The store cannot be opened at all: say why the first attempt failed.
            Err(Failure::Corrupt(_)) => return Err(Failure::Corrupt(why)),
            Err(e) => return Err(e),
        },
        Err(e) => return Err(e),
    };
    let f = check(
        &opened,
        checkpoint.as_ref().map(|c| CheckpointCheck {
            checkpoint: c,
            key: key.as_ref(),
        }),
        observer,
    )?;
    let failure = if f.problems.is_empty() {
        None
    } else if f.log_damaged {
        Some(Failure::Precondition {
            code: crate::error::Code::StoreCorrupt,
            message: format!(
                "the log is damaged ({} problem(s), see data.problems); `elench fsck ‹-repair›` \
                 moves the damaged part aside, then pull or add the lost envelopes again",
                f.problems.len()
            ),
        })
    } else {
        Some(Failure::Precondition {
            code: crate::error::Code::FsckProblems,
            message: format!(
                "the store has {} problem(s), see data.problems; `elench reindex` rebuilds the \
                 index from the log",
                f.problems.len()
            ),
        })
    };
    Ok(FsckOutput {
        records: f.records,
        envelopes: f.envelopes,
        claims: f.claims,
        claims_checked: f.claims,
        problems: f.problems,
        repaired,
        failure,
    })
}

fn moved_any(dest: &Path) -> bool {
    std::fs::read_dir(dest)
        .map(|mut d| d.next().is_some())
        .unwrap_or(false)
}

/// Checks the store: see the module comment.
pub fn check(
    store: &Store,
    checkpoint: Option<CheckpointCheck>,
    observer: &dyn Observer,
) -> Result<Findings, Failure> {
    let mut p = Problems(Vec::new());
    let mut log_damaged = false;
    // The writer lock keeps the log still while it is read (readers are not held up).
    // (A read-only store has no writer to keep still.)
    let _lock = if store.is_read_only() {
        None
    } else {
        Some(store.lock_unsettled()?)
    };
    // Asked before the audit's read transaction is open (one per thread).
    let loss = store.acknowledged_loss();
    let live = store
        .index()
        .read()
        .map_err(|e| Failure::Corrupt(format!("the index cannot be read: {e}")))?;
    let total = live.meta().map(|m| m.head.records).unwrap_or(0);
    let progress = observer.progress("checking", Some(total));
    let audited = rebuild::audit_log(store.log(), &live, 20, progress.as_deref().map(|f| f as _));
    drop(progress);
    let audited =
        audited.map_err(|e| Failure::Corrupt(format!("the index cannot be read: {e}")))?;
    // The index vouches for what was acknowledged: a log that ends before it (even in what
    // reads as an unfinished append) lost acknowledged records.
    let loss = match audited.tail {
        Ok(Tail::Clean) | Ok(Tail::Torn { .. }) => loss,
        _ => None,
    };
    match audited.tail {
        _ if loss.is_some() => {
            log_damaged = true;
            p.add("STORE_CORRUPT", loss.unwrap_or_default());
        }
        Ok(Tail::Clean) => {}
        Ok(Tail::Torn {
            segment,
            offset,
            bytes,
        }) => p.add(
            "TORN_TAIL",
            format!(
                "log segment {} ends in an unfinished record ({bytes} bytes at byte {offset}); \
                 the next writer cuts it",
                crate::store::log::segment_name(segment)
            ),
        ),
        Ok(Tail::Damaged(d)) => {
            log_damaged = true;
            p.add("STORE_CORRUPT", d.to_string());
        }
        Err(e) => {
            log_damaged = true;
            p.add("STORE_CORRUPT", e.to_string());
        }
    }
    for (db, difference) in audited.differences {
        let what = match difference {
            Difference::Missing(k) => {
                format!("entry {} is missing (the log gives it)", describe(db, &k))
            }
            Difference::Extra(k) => format!(
                "entry {} should not be there (the log does not give it)",
                describe(db, &k)
            ),
            Difference::Changed(k) => format!(
                "entry {} holds a different value (the log gives another)",
                describe(db, &k)
            ),
            Difference::Unreadable(k) => format!(
                "entry {} cannot be read (a damaged page; nothing after it was checked)",
                describe(db, &k)
            ),
            Difference::Count { expected, found } => {
                format!("holds {found} entries where the log gives {expected}")
            }
        };
        p.add("INDEX_DISAGREES", format!("index database {db}: {what}"));
    }
    drop(live);
    // The trust records folded again, each policy checked where it sits in the log.
    if !log_damaged {
        if let Err(e) = crate::trust::verify_records(store) {
            p.add("POLICY_INVALID", e.to_string());
        }
    }
    let meta = audited.meta;
    if let Some(c) = checkpoint {
        let held = hold(store, c)?;
        for (code, message) in held.problems {
            p.add(code, message);
        }
        if !held.extends {
            log_damaged = true;
        }
    }
    Ok(Findings {
        records: meta.head.records,
        envelopes: meta.counts.envelopes,
        claims: meta.counts.claims,
        problems: p.0,
        log_damaged,
    })
}

/// An index key as a reader knows it: an id, a keyid, or numbers (nodes, arrivals).
fn describe(db: &str, key: &[u8]) -> String {
    let number = |k: &[u8]| match <[u8; 8]>::try_from(k) {
        Ok(b) => u64::from_be_bytes(b).to_string(),
        Err(_) => hex::encode(k),
    };
    let id = crate::store::index::id_text;
    // The audit names entries by id where it knows them; one only the index holds has nodes.
    match db {
        "nodes" | "claims" | "incoming" if key.len() == 32 => id(key),
        "claims" | "incoming" => format!("node {}", number(key)),
        "by_target" | "by_premise" if key.len() == 64 => {
            format!("{} ‖ {}", id(&key[..32]), id(&key[32..]))
        }
        "by_target" | "by_premise" if key.len() == 16 => {
            format!("node {} ‖ node {}", number(&key[..8]), number(&key[8..]))
        }
        "arrivals" | "envelope_order" => number(key),
        "keys" | "meta" => String::from_utf8_lossy(key).into_owned(),
        _ => hex::encode(key),
    }
}
