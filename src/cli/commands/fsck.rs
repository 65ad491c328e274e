//! `elench fsck [--repair] [--checkpoint FILE]`: check the whole store.
//!
//! Every record's checksums and chain value; every envelope verified again against the trust
//! state at its position, with its claim id recomputed (on every core); every entry of the
//! index checked against what the log gives it (`rebuild::audit_log`); and, with `--checkpoint`, that the log still
//! extends an earlier checkpoint. `--repair` moves everything from the first damaged record
//! on into `quarantine/` and rebuilds the index.

use super::checkpoint::{chain_bytes, read_checkpoint, Checkpoint};
use crate::cli::common::{open_store, open_store_unsettled};
use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::output::{Report, Warning};
use crate::keys::read_public_key_pem;
use crate::store::index::Difference;
use crate::store::log::Head;
use crate::store::{rebuild, Store, Tail};
use ed25519_dalek::VerifyingKey;
use serde_json::{json, Value};

#[derive(Debug, clap::Args)]
pub struct FsckArgs {
    /// Move everything from the first damaged record on into quarantine/ (nothing is
    /// deleted) and rebuild the index; exits 0 once the store is usable again
    #[arg(long)]
    pub repair: bool,
    /// Also prove that the log still extends this checkpoint (from `elench checkpoint -o`)
    #[arg(long, value_name = "FILE")]
    pub checkpoint: Option<String>,
    /// The public key (PEM) that signed the checkpoint; its signature is checked against
    /// this key only, never against the store's own keys (whoever can write the store can
    /// add a key there)
    #[arg(long, value_name = "PUB.pem", requires = "checkpoint")]
    pub key: Option<std::path::PathBuf>,
}

struct Problems(Vec<Value>);

impl Problems {
    fn add(&mut self, code: &str, message: String) {
        self.0.push(json!({"code": code, "message": message}));
    }
}

/// What a check found.
pub struct Findings {
    pub records: u64,
    pub envelopes: u64,
    pub claims: u64,
    pub problems: Vec<Value>,
    /// The log itself is damaged (not just the index).
    pub log_damaged: bool,
}

pub fn run(a: FsckArgs, g: &Globals) -> Result<Report, Failure> {
    let checkpoint = a.checkpoint.as_deref().map(read_checkpoint).transpose()?;
    let key = match &a.key {
        None => None,
        Some(path) => {
            let pem = crate::cli::files::read_key_file(path)?;
            Some(
                read_public_key_pem(&pem)
                    .map_err(|r| Failure::rejected(r, Some(path.display().to_string())))?,
            )
        }
    };
    let mut warnings = Vec::new();
    if let (Some(c), None) = (&checkpoint, &key) {
        if let Some(s) = &c.signature {
            warnings.push(Warning::new(
                "CHECKPOINT_UNVERIFIED",
                format!(
                    "the checkpoint's signature (by {}) was not checked: pass --key PUB.pem, the \
                     public key you expect to have signed it",
                    s.keyid
                ),
            ));
        }
    }
    let wait = std::time::Duration::from_secs(g.wait);
    let mut repaired = Value::Null;
    let mut text = String::new();
    if a.repair {
        // Before the store is opened: a FORMAT naming an older layout than the one on disk
        // keeps every command out, and the index is rebuilt into fresh files, never read when
        // a command found it damaged (a damaged one can fault when read).
        let root = crate::store::locate(g.store.as_deref())?;
        let format_repaired = Store::repair_format(&root, wait)?;
        if format_repaired {
            text.push_str(&format!(
                "FORMAT named an older layout than the log on disk; it now names layout {}\n",
                crate::store::current_version()
            ));
        }
        let crate::store::Repaired {
            damage,
            moved,
            quarantine: dest,
        } = Store::repair_at_with(&root, wait, crate::cli::output::observer())?;
        text.push_str(&match &damage {
            Some(d) => format!(
                "repaired: {d}; moved {} file(s) to {}; the index was rebuilt\n",
                moved.len(),
                dest.display()
            ),
            None if moved.is_empty() => "the log was sound; the index was rebuilt\n".into(),
            None => format!(
                "cut an unfinished final record into {}; the index was rebuilt\n",
                dest.display()
            ),
        });
        repaired = json!({
            "damage": damage.map(|d| d.to_string()),
            "moved": moved,
            "quarantine": if moved_any(&dest) { Some(dest.display().to_string()) } else { None },
            "format": format_repaired,
        });
    }
    // Opened like any command (a missing index is rebuilt, a torn tail cut, each with its
    // warning); if the store is too damaged for that, fsck still looks and reports.
    let store = match open_store(g) {
        Ok(s) => s,
        Err(Failure::Corrupt(why)) => match open_store_unsettled(g) {
            Ok(s) => s,
            // The store cannot be opened at all: say why the first attempt failed.
            Err(Failure::Corrupt(_)) => return Err(Failure::Corrupt(why)),
            Err(e) => return Err(e),
        },
        Err(e) => return Err(e),
    };
    let f = check(
        &store,
        checkpoint.as_ref().map(|c| CheckpointCheck {
            checkpoint: c,
            key: key.as_ref(),
        }),
    )?;
    text.push_str(&format!(
        "checked {} records ({} envelopes of {} claims): {} problem(s)\n",
        f.records,
        f.envelopes,
        f.claims,
        f.problems.len()
    ));
    for p in &f.problems {
        text.push_str(&format!(
            "  {} {}\n",
            p["code"].as_str().unwrap_or_default(),
            p["message"].as_str().unwrap_or_default()
        ));
    }
    let failure = if f.problems.is_empty() {
        None
    } else if f.log_damaged {
        Some(Failure::Precondition {
            code: crate::error::Code::StoreCorrupt,
            message: format!(
                "the log is damaged ({} problem(s), see data.problems); `elench fsck --repair` \
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
    Ok(Report {
        data: json!({
            "records": f.records,
            "envelopes": f.envelopes,
            "claims": f.claims,
            "claims_checked": f.claims,
            "problems": f.problems,
            "repaired": repaired,
        }),
        text,
        failure,
        warnings,
        ..Report::default()
    })
}

fn moved_any(dest: &std::path::Path) -> bool {
    std::fs::read_dir(dest)
        .map(|mut d| d.next().is_some())
        .unwrap_or(false)
}

/// A checkpoint to hold the log to, and the key its signature must verify under (if any).
#[derive(Clone, Copy)]
pub struct CheckpointCheck<'a> {
    pub checkpoint: &'a Checkpoint,
    pub key: Option<&'a VerifyingKey>,
}

/// Checks the store: see the module comment.
pub fn check(store: &Store, checkpoint: Option<CheckpointCheck>) -> Result<Findings, Failure> {
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
    let audited = crate::cli::progress::with_records_bar("checking", total, |progress| {
        rebuild::audit_log(store.log(), &live, 20, progress)
    });
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
    let meta = audited.meta;
    if let Some(c) = checkpoint {
        if !check_checkpoint(store, c, &mut p)? {
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
        "nodes" | "claims" if key.len() == 32 => id(key),
        "claims" => format!("node {}", number(key)),
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

/// Returns whether the log still extends the checkpoint.
fn check_checkpoint(store: &Store, cc: CheckpointCheck, p: &mut Problems) -> Result<bool, Failure> {
    let c = cc.checkpoint;
    if let Some(key) = cc.key {
        if let Err(why) = super::checkpoint::verify_signature(c, key) {
            p.add("CHECKPOINT_SIGNATURE", why);
        }
    }
    // read_checkpoint admitted only the canonical spelling; compared as bytes.
    let want = chain_bytes(&c.chain).ok_or_else(|| Failure::Invalid {
        code: crate::error::Code::BadCheckpoint,
        message: format!(
            "the checkpoint's chain {:?} is not 64 lowercase hex digits",
            c.chain
        ),
    })?;
    let mut at = None;
    if c.n == 0 {
        at = Some(Head::EMPTY);
    } else {
        let (head, _) = store
            .log()
            .scan(Head::EMPTY, |r| Ok(r.pos.n + 1 < c.n))
            .map_err(|e| Failure::Corrupt(e.to_string()))?;
        if head.records == c.n {
            at = Some(head);
        }
    }
    let before = p.0.len();
    match at {
        None => p.add(
            "CHECKPOINT_MISMATCH",
            format!(
                "the checkpoint covers {} records, but the log no longer holds that many intact",
                c.n
            ),
        ),
        Some(h) if h.chain != want => p.add(
            "CHECKPOINT_MISMATCH",
            format!(
                "after {} records the log's chain is {}, not the checkpoint's {}: something \
                 before the checkpoint was changed, removed or reordered",
                c.n,
                hex::encode(h.chain),
                c.chain
            ),
        ),
        Some(_) => {}
    }
    Ok(p.0.len() == before)
}
