//! The index: LMDB (through heed) beside the log, rebuildable from it at any time.
//!
//! Every claim id the log names, as a claim or as a claim's target or premise, gets a
//! [`Node`] number, in the order the log first names it. The other tables key claims by
//! that number, so the claims of one stretch of the log sit together in them (numbers
//! grow with arrival) instead of at random places in a B-tree keyed by hash.
//!
//! Databases (numbers are u64 big-endian, so key order is number order; claim ids are their
//! 32 hash bytes, keyids their hex text):
//! - `meta`: `meta` ([`Meta`]: the log head indexed up to, the position of the last indexed
//!   record, counts of claims, envelopes, trust events, nodes and keys) and `format` (the
//!   index's own layout version, [`FORMAT`]; an index in another format is rebuilt)
//! - `nodes`: id → [`NodeValue`] (its node, and whether the log holds it as a claim); the
//!   only table keyed by hash
//! - `claims`: node → [`ClaimEntry`] (the claim's id, the fields the fold reads, its signers,
//!   arrival number, where its first envelope sits in the log, and the number and digest of
//!   each of its envelopes: an envelope is found through its claim, so no table is keyed by
//!   digest). A node named only as a target or premise has no entry.
//! - `incoming`: node → [`Incoming`] (how many records target the id and how many claims
//!   name it as a premise), for every node
//! - `ancestry`: node → [`AncestryEntry`] (the claim's id, its kind and the nodes of its
//!   premises), for every stored claim: all that a walk up a claim's premises reads of each
//!   claim it passes, in a table of a few dozen bytes a claim. The claims table holds the
//!   same facts among a kilobyte of others, and names premises by id, each a lookup in
//!   `nodes`; a walk through thousands of ancestors paid both on every step.
//! - `envelope_order`: envelope number → [`OrderEntry`] (its claim and position)
//! - `arrivals`: claim arrival number → id
//! - `by_target`: target node ‖ record node → the record's kind (so that reading the
//!   records of a claim tells what each decides without a lookup of each record's entry);
//!   `by_premise`: premise node ‖ dependent node → ()
//! - `keys`: keyid → [`KeyEntry`] (the trust state: the fold of the log's trust events)
//!
//! Databases keyed by a growing number are written with LMDB's append mode, so their pages
//! are filled, not split in half; the summary leaves out what other fields hold. Writing a
//! claim dirties one page at a random place (in `nodes`) where keys by id dirtied one per
//! table, which is most of what a large index costs to write (docs/benchmarks.md).
//!
//! Every value ends in a checksum of its table, key and value ([`Checked`]). A damaged branch
//! page can still send a search or a walk past entries whose checksums are sound, so what a
//! read finds is held to counts kept elsewhere, in checksummed values: the pairs of a node
//! to its [`Incoming`], the keys to `meta`, numbered tables to `meta`; an id the
//! index names must be found in `nodes`, and a claim `nodes` calls stored in `claims`. A
//! read that falls short is [`IndexError::Inconsistent`], damage.
//!
//! Invariants: the index is written only under the store's writer lock, one transaction per
//! group of log records, after the log's fsync; it is not synced per commit (the log is the
//! truth, and a disagreeing index is rebuilt), and before a commit the disk may not hold,
//! `index/UNSYNCED` names the boot that holds it ([`unsynced`]). Readers use LMDB read
//! transactions and never wait for the writer.

mod audit;
mod codec;
mod envs;
pub mod fault;
pub mod meta_pages;
mod reader;
pub mod unsynced;
mod writer;

pub use audit::Audit;
pub(crate) use codec::Checked;
use codec::{decode, encode, node_of_key, pair};
pub use codec::{
    distinct, id_key, id_text, node_key, record_kind, stored_value, summary_body, summary_of,
    AncestryEntry, ClaimEdges, ClaimEntry, ClaimRef, Counts, EdgesRef, EnvelopeEntry, EnvelopeRef,
    IdKey, Incoming, KeyEntry, Meta, Node, NodeValue, OrderEntry, Table, TrustEventAt, FORMAT,
    ORIGIN_KEY, TRUST_EVENTS_KEY,
};
pub use envs::Environments;
pub use fault::IndexWatch;
pub use reader::{second_node, Pin, Reader};
pub use writer::{Apply, Writer};

use envs::{FileId, Opened};
use heed::types::Bytes;
use heed::{Env, EnvFlags, EnvOpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("index: {0}")]
    Lmdb(#[from] heed::Error),
    #[error("index entry {what} is unreadable: {why}")]
    Decode { what: String, why: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// [`Writer::apply_envelope`] was given an envelope the claim already holds; the
    /// transaction is left half-applied and must be abandoned.
    #[error("claim {claim} already holds this envelope")]
    DuplicateEnvelope { claim: String },
    /// LMDB has the environment open already, through another [`Environments`] of this
    /// process: the caller opened one store twice without sharing its environments.
    #[error(
        "the index in {} is open already in this process, through other environments (a \
         store opened twice at once must share one `Environments`)",
        .0.display()
    )]
    InUse(PathBuf),
    /// The index contradicts itself: a lookup or a walk found fewer entries than another
    /// entry says there are (a damaged page sent it past them), or an entry that another one
    /// names is missing. Damage.
    #[error("the index contradicts itself: {0}")]
    Inconsistent(String),
    /// LMDB's own meta pages cannot be what LMDB wrote ([`meta_pages`]): the file is
    /// damaged, and LMDB is not let read it.
    #[error("{0}")]
    File(String),
}

impl IndexError {
    /// Whether the process ran short of memory or address space (or of LMDB's own slots):
    /// never a sign of damage, and never a reason to replace the index.
    pub fn is_resource(&self) -> bool {
        use heed::MdbError as M;
        let io = |e: &std::io::Error| {
            e.kind() == std::io::ErrorKind::OutOfMemory
                || matches!(
                    e.raw_os_error(),
                    Some(libc::ENOMEM | libc::EAGAIN | libc::ENOSPC)
                )
        };
        match self {
            IndexError::Lmdb(heed::Error::Io(e)) | IndexError::Io { source: e, .. } => io(e),
            // Not MDB_CURSOR_FULL: a cursor's stack fills only on a tree deeper than any
            // LMDB writes (a damaged page that points back up the tree).
            IndexError::Lmdb(heed::Error::Mdb(e)) => matches!(
                e,
                M::MapFull | M::ReadersFull | M::TlsFull | M::TxnFull | M::MapResized
            ),
            _ => false,
        }
    }

    /// Whether the error says the index's bytes are damaged (rather than that the process
    /// ran out of something, or the file system failed it): then the index is rebuilt.
    pub fn is_damage(&self) -> bool {
        use heed::MdbError as M;
        match self {
            IndexError::Decode { .. } | IndexError::Inconsistent(_) | IndexError::File(_) => true,
            IndexError::Lmdb(heed::Error::Decoding(_)) => true,
            IndexError::Lmdb(heed::Error::Mdb(e)) => matches!(
                e,
                M::PageNotFound
                    | M::Corrupted
                    | M::Panic
                    | M::VersionMismatch
                    | M::Invalid
                    | M::Incompatible
                    | M::BadTxn
                    | M::PageFull
                    | M::BadValSize
                    | M::CursorFull
                    // Only the writer's appends can meet a key already there: the counts in
                    // `meta` say the key is new, so the table contradicts them.
                    | M::KeyExist
            ),
            _ => false,
        }
    }
}

const MIB: u64 = 1 << 20;

/// Room to leave in the map beyond `used` bytes: as much again, at least 256 MiB (far more
/// than one transaction of the writer dirties).
fn headroom(used: u64) -> u64 {
    used.max(256 * MIB)
}

/// The map size for an index of `used` bytes: with headroom, in whole 64 MiB (a multiple of
/// any page size).
fn map_size_for(used: u64) -> usize {
    let want = used.saturating_add(headroom(used));
    let rounded = want.div_ceil(64 * MIB).saturating_mul(64 * MIB);
    usize::try_from(rounded).unwrap_or(usize::MAX & !(64 * MIB as usize - 1))
}

/// Sets close-on-exec on every descriptor of this process open on a file under `dir` (LMDB's
/// data file is opened without it).
pub fn close_on_exec_under(dir: &Path) {
    let Ok(fds) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    for fd in fds.flatten() {
        let Some(n) = fd.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(target) = std::fs::read_link(fd.path()) else {
            continue;
        };
        if target.starts_with(dir) {
            // SAFETY: fcntl on a descriptor number; a closed or reused one fails or gets a flag
            // it should have anyway.
            unsafe {
                let flags = libc::fcntl(n, libc::F_GETFD);
                if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
                    libc::fcntl(n, libc::F_SETFD, flags | libc::FD_CLOEXEC);
                }
            }
        }
    }
}

/// How the index differs from what the log gives it ([`Audit`]); each holds the entry's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Difference {
    /// The log gives the entry; the index lacks it.
    Missing(Vec<u8>),
    /// The index holds an entry the log does not account for.
    Extra(Vec<u8>),
    /// The index holds the entry with another value.
    Changed(Vec<u8>),
    /// LMDB could not read it (a damaged page); the audit stops there, since LMDB fails every
    /// later read of the transaction.
    Unreadable(Vec<u8>),
    /// The table holds `found` entries where the log gives `expected`, and no entry could
    /// be named (for example, LMDB's own count in the file disagrees with its pages).
    Count { expected: u64, found: u64 },
}

#[derive(Clone, Copy)]
struct Dbs {
    meta: Checked,
    nodes: Checked,
    claims: Checked,
    envelope_order: Checked,
    arrivals: Checked,
    by_target: Checked,
    by_premise: Checked,
    keys: Checked,
    incoming: Checked,
    ancestry: Checked,
}

const DB_NAMES: [&str; 10] = [
    "meta",
    "nodes",
    "claims",
    "envelope_order",
    "arrivals",
    "by_target",
    "by_premise",
    "keys",
    "incoming",
    "ancestry",
];

/// Databases earlier index formats had and this one does not; a rebuild empties them.
const LEGACY_DB_NAMES: [&str; 2] = ["claim_envelopes", "envelopes"];

/// The index of one store.
#[derive(Clone)]
pub struct Index {
    /// The environment, shared with every other handle on the folder ([`Environments`]).
    opened: Arc<Opened>,
    dbs: Dbs,
    legacy: Vec<Checked>,
    /// The `UNSYNCED` file ([`unsynced`]).
    unsynced: PathBuf,
}

fn file_id(path: &Path) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

impl Index {
    /// Opens (creating if needed) the index in `dir`, through `envs` (the environment of a
    /// folder already open there is shared).
    pub fn open(envs: &Environments, dir: &Path) -> Result<Index, IndexError> {
        Index::open_mode(envs, dir, false)
    }

    /// Opens an existing index that cannot be written (a store on a read-only file system
    /// or without write permission): no lock file, no database created.
    pub fn open_read_only(envs: &Environments, dir: &Path) -> Result<Index, IndexError> {
        Index::open_mode(envs, dir, true)
    }

    fn open_mode(envs: &Environments, dir: &Path, read_only: bool) -> Result<Index, IndexError> {
        if !read_only {
            std::fs::create_dir_all(dir).map_err(|source| IndexError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let canonical = std::fs::canonicalize(dir).map_err(|source| IndexError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let opened = envs.get_or_open(&canonical, || {
            // LMDB trusts its meta pages: damage there is found before it reads them.
            if let Some(why) = meta_pages::damage(&canonical.join("data.mdb")) {
                return Err(IndexError::File(why));
            }
            let mut options = EnvOpenOptions::new();
            // The map is sized to the file with room to grow (grown before a write that
            // could need more, `Index::make_room`), not a fixed reservation: under a
            // limit on address space (`ulimit -v`) a terabyte cannot be mapped.
            let file = std::fs::metadata(canonical.join("data.mdb")).map_or(0, |m| m.len());
            options
                .map_size(map_size_for(file))
                .max_dbs(16)
                .max_readers(1024);
            // SAFETY: NO_SYNC only drops the index's own fsyncs: the log is fsynced, a
            // killed process leaves its writes in the page cache, and a machine that stopped
            // before the disk held them is told by the `UNSYNCED` file (module
            // `unsynced`), so the index is rebuilt. Without boot ids there is no such file
            // and NO_META_SYNC keeps LMDB's own guarantee. READ_ONLY with NO_LOCK is for
            // stores nobody can write, so no writer can change the pages under the
            // reader. The environment is opened once per registry (`Environments`), and
            // heed refuses a second one of the folder in the process (`InUse`).
            let env = unsafe {
                if read_only {
                    options.flags(EnvFlags::READ_ONLY | EnvFlags::NO_LOCK);
                } else if unsynced::boot_id().is_some() {
                    options.flags(EnvFlags::NO_SYNC);
                } else {
                    options.flags(EnvFlags::NO_META_SYNC);
                }
                options.open(&canonical)
            }
            .map_err(|e| match e {
                heed::Error::EnvAlreadyOpened => IndexError::InUse(canonical.clone()),
                e => IndexError::Lmdb(e),
            })?;
            // LMDB opens data.mdb without close-on-exec: a child process (a predicate's
            // runner) would inherit a descriptor that writes the index.
            close_on_exec_under(&canonical);
            Ok((env, file_id(&canonical.join("data.mdb"))))
        })?;
        let env = &opened.env;
        let _active = fault::Active::new(&opened.watched);
        let mut dbs = Vec::with_capacity(DB_NAMES.len());
        let mut legacy = Vec::new();
        if read_only {
            let rtxn = env.read_txn()?;
            for name in DB_NAMES {
                let db = env
                    .open_database::<Bytes, Bytes>(&rtxn, Some(name))?
                    .ok_or_else(|| IndexError::Decode {
                        what: format!("database {name}"),
                        why: "missing from a read-only index".into(),
                    })?;
                dbs.push(db);
            }
            rtxn.commit()?;
        } else {
            // Most opens find every database: a read transaction does, without waiting for a
            // writer or writing anything.
            let rtxn = env.read_txn()?;
            for name in DB_NAMES {
                match env.open_database::<Bytes, Bytes>(&rtxn, Some(name))? {
                    Some(db) => dbs.push(db),
                    None => break,
                }
            }
            rtxn.commit()?;
            if dbs.len() < DB_NAMES.len() {
                dbs.clear();
                let mut wtxn = env.write_txn()?;
                for name in DB_NAMES {
                    dbs.push(env.create_database::<Bytes, Bytes>(&mut wtxn, Some(name))?);
                }
                unsynced::mark(&unsynced::path_in(&canonical))?;
                wtxn.commit()?;
            }
            let rtxn = env.read_txn()?;
            for name in LEGACY_DB_NAMES {
                if let Some(db) = env.open_database::<Bytes, Bytes>(&rtxn, Some(name))? {
                    legacy.push(Checked(db, u8::MAX));
                }
            }
            rtxn.commit()?;
        }
        let dbs = Dbs {
            meta: Checked(dbs[0], 0),
            nodes: Checked(dbs[1], 1),
            claims: Checked(dbs[2], 2),
            envelope_order: Checked(dbs[3], 3),
            arrivals: Checked(dbs[4], 4),
            by_target: Checked(dbs[5], 5),
            by_premise: Checked(dbs[6], 6),
            keys: Checked(dbs[7], 7),
            incoming: Checked(dbs[8], 8),
            ancestry: Checked(dbs[9], 9),
        };
        drop(_active);
        // A read-only index is checked against the file too (it cannot be rebuilt, so a
        // command says so instead of reading pages that may be lost).
        let unsynced = unsynced::path_in(&canonical);
        Ok(Index {
            opened,
            dbs,
            legacy,
            unsynced,
        })
    }

    fn env(&self) -> &Env {
        &self.opened.env
    }

    /// Begins a transaction (the caller holds one [`fault::Active`] for it, and no
    /// transaction yet); when another process grew the file past this process's map
    /// (MDB_MAP_RESIZED), adopts the new size and begins again.
    fn begin<'s, T>(&'s self, f: impl Fn(&'s Env) -> heed::Result<T>) -> Result<T, IndexError> {
        match f(self.env()) {
            Err(heed::Error::Mdb(heed::MdbError::MapResized)) => {
                // Other threads' transactions are short: wait for a moment without any.
                for _ in 0..1000 {
                    if self.resize_holding(0, 1)? {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                Ok(f(self.env())?)
            }
            other => Ok(other?),
        }
    }

    /// Remaps the environment at `size` bytes (0: the size the file's writer recorded), when
    /// no transaction of this process is open (LMDB requires that); false when one is.
    fn resize(&self, size: usize) -> Result<bool, IndexError> {
        self.resize_holding(size, 0)
    }

    /// [`Index::resize`] by a caller that holds `held` [`fault::Active`]s without a
    /// transaction.
    fn resize_holding(&self, size: usize, held: usize) -> Result<bool, IndexError> {
        let Some(_excl) = fault::Exclusive::take(&self.opened.watched, held) else {
            return Ok(false);
        };
        // SAFETY: no transaction of this process is open, and none can begin until `_excl`
        // is dropped (fault::Exclusive).
        unsafe { self.env().resize(size)? };
        Ok(true)
    }

    /// The bytes of the map the committed index uses.
    fn used(&self) -> u64 {
        let info = self.env().info();
        let page = self.env().stat().page_size as u64;
        (info.last_page_number as u64 + 1) * page
    }

    /// How many bytes of log records one write transaction may apply before it commits:
    /// a quarter of the headroom, half of the room [`Index::make_room`] keeps free. The
    /// index takes fewer bytes than the records it holds, and the pages a transaction
    /// changes are copied, not overwritten, so their copies need room too until it commits.
    /// (When the map cannot grow, a write that runs out of room fails with
    /// `INDEX_UNAVAILABLE`, never as damage.)
    pub(super) fn transaction_budget(&self) -> u64 {
        headroom(self.used()) / 4
    }

    /// Grows the map before a write when what is left of it could be too little for one
    /// transaction: the map is sized to the data, never a fixed address-space reservation.
    fn make_room(&self) -> Result<(), IndexError> {
        let info = self.env().info();
        let used = self.used();
        let left = (info.map_size as u64).saturating_sub(used);
        if left >= headroom(used) / 2 {
            return Ok(());
        }
        // Readers on other threads are short and never wait for this one: when little room
        // is left, wait for a moment without any (bounded: this thread may hold one itself).
        for _ in 0..1000 {
            if self.resize(map_size_for(used))? || left >= headroom(used) / 4 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        Ok(())
    }

    /// Makes every committed write of the index durable and removes its `UNSYNCED` file
    /// (module [`unsynced`]): after a long write (a rebuild, a bulk add), so that a machine
    /// that stops later finds the index whole and does not rebuild it.
    pub fn sync(&self) -> Result<(), IndexError> {
        let path = &self.unsynced;
        if !path.exists() {
            return Ok(());
        }
        // An environment whose files another process moved aside (and rebuilt anew) syncs its
        // own, orphaned file: the new index's record is not this one's to remove.
        let here = path.parent().map(|dir| file_id(&dir.join("data.mdb")));
        if self.opened.data.is_none() || here != Some(self.opened.data) {
            return Ok(());
        }
        // Held so that no writer commits between the fsync and the removal.
        let txn = self.env().write_txn()?;
        self.env().force_sync()?;
        unsynced::clear(path)?;
        txn.abort();
        Ok(())
    }

    /// The earlier boot in which the index was written and not synced, if any: writes made
    /// then may be lost, and the index must be rebuilt.
    pub fn unsynced_from_other_boot(&self) -> Result<Option<String>, IndexError> {
        unsynced::from_other_boot(&self.unsynced)
    }

    /// Bytes the index occupies on disk.
    pub fn disk_size(&self) -> Result<u64, IndexError> {
        Ok(self.env().real_disk_size()?)
    }

    pub fn clear_stale_readers(&self) {
        let _ = self.env().clear_stale_readers();
    }

    /// Every entry of every table as stored (values with their checksums), table by table
    /// in key order: what tests compare whole indexes by.
    #[cfg(test)]
    fn stored_tables(&self) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
        let r = self.read().unwrap();
        let d = r.dbs;
        [
            d.meta,
            d.nodes,
            d.claims,
            d.envelope_order,
            d.arrivals,
            d.by_target,
            d.by_premise,
            d.keys,
            d.incoming,
            d.ancestry,
        ]
        .iter()
        .map(|db| {
            db.0.iter(&r.txn)
                .unwrap()
                .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
                .collect()
        })
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::{Kind, OriginKind};
    use crate::store::log::Position;
    use proptest::prelude::*;

    fn key(n: u16) -> IdKey {
        let mut k = [0u8; 32];
        k[..2].copy_from_slice(&n.to_be_bytes());
        k[31] = 7;
        k
    }

    proptest! {
        /// An id's text is its prefix and the lowercase hex of its bytes, as the claim's own
        /// id is written.
        #[test]
        fn an_ids_text_is_its_prefix_and_lowercase_hex(key in proptest::array::uniform32(any::<u8>())) {
            let text = id_text(&key);
            prop_assert_eq!(&text, &format!("cl_{}", hex::encode(key)));
            prop_assert_eq!(id_key(&text), Some(key));
        }
    }

    #[test]
    fn the_map_grows_before_a_write_that_could_fill_it_and_a_flipped_value_is_damage() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("index");
        let index = Index::open(&Environments::new(), &dir).unwrap();
        // As if opened by a process that mapped the file when it was small.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !index.resize(1 << 20).unwrap() {
            assert!(std::time::Instant::now() < deadline);
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(index.env().info().map_size, 1 << 20);
        let value = vec![0x5a; 2000];
        for round in 0..4u64 {
            let mut w = index.write().unwrap();
            for n in 0..1000u64 {
                let k = (round * 1000 + n).to_be_bytes();
                w.dbs.envelope_order.put(&mut w.txn, &k, &value).unwrap();
            }
            w.commit().unwrap();
        }
        let info = index.env().info();
        assert!(info.map_size >= map_size_for(8 << 20), "{}", info.map_size);
        let r = index.read().unwrap();
        let stored = r
            .dbs
            .envelope_order
            .get(&r.txn, &7u64.to_be_bytes())
            .unwrap();
        assert_eq!(stored, Some(&value[..]));
        drop(r);
        // A value written without its checksum (a flipped byte reads the same) is damage.
        let mut w = index.write().unwrap();
        w.dbs
            .envelope_order
            .0
            .put(&mut w.txn, &7u64.to_be_bytes(), &value)
            .unwrap();
        w.commit().unwrap();
        let r = index.read().unwrap();
        let err = r
            .dbs
            .envelope_order
            .get(&r.txn, &7u64.to_be_bytes())
            .unwrap_err();
        assert!(err.is_damage(), "{err}");
        assert!(!err.is_resource());
        drop(r);
    }

    #[test]
    fn a_commit_marks_the_index_and_only_its_own_files_sync_clears_it() {
        if unsynced::boot_id().is_none() {
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("index");
        let index = Index::open(&Environments::new(), &dir).unwrap();
        let marker = dir.join(unsynced::FILE);
        index.write().unwrap().commit().unwrap();
        assert!(marker.exists());
        index.sync().unwrap();
        assert!(!marker.exists());
        index.write().unwrap().commit().unwrap();
        assert!(marker.exists());
        // Another process moves these files aside and builds a new index in their place,
        // with writes of its own not yet on disk: this environment's sync is of its own,
        // orphaned file, and must leave the new index's record alone.
        std::fs::rename(&dir, tmp.path().join("aside")).unwrap();
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("data.mdb"), b"another file").unwrap();
        std::fs::write(&marker, unsynced::boot_id().unwrap()).unwrap();
        index.sync().unwrap();
        assert!(marker.exists());
    }

    /// A full cursor stack (a tree that points back up itself), a key the counts say is new
    /// and a contradiction are damage; a full map or reader table is a lack of resources.
    #[test]
    fn damage_and_a_lack_of_resources_are_told_apart() {
        use heed::MdbError as M;
        let lmdb = |e: M| IndexError::Lmdb(heed::Error::Mdb(e));
        for e in [
            lmdb(M::CursorFull),
            lmdb(M::KeyExist),
            lmdb(M::Corrupted),
            IndexError::Inconsistent("x".into()),
            IndexError::File("x".into()),
        ] {
            assert!(e.is_damage() && !e.is_resource(), "{e}");
            let s = crate::store::StoreError::from(e);
            assert!(
                matches!(s, crate::store::StoreError::IndexDamaged(_)),
                "{s}"
            );
        }
        for e in [lmdb(M::MapFull), lmdb(M::ReadersFull), lmdb(M::MapResized)] {
            assert!(e.is_resource() && !e.is_damage(), "{e}");
            let s = crate::store::StoreError::from(e);
            assert!(
                matches!(s, crate::store::StoreError::IndexUnavailable(_)),
                "{s}"
            );
        }
    }

    /// The borrowed decoding of an entry's leading fields agrees with decoding all of it.
    #[test]
    fn edges_decode_from_the_entry_prefix() {
        let entry = |target: Vec<IdKey>, depends_on: Vec<IdKey>| ClaimEntry {
            id: key(77),
            kind: Kind::Falsification,
            origin: OriginKind::AgentAsserted,
            producer: "p/1".repeat(50),
            target,
            depends_on,
            anchor_tree: "t".into(),
            timestamp: -3,
            seq: 300,
            signers: Vec::new(),
            first: Position {
                n: 1,
                segment: 2,
                offset: 3,
            },
            summary: "{}".into(),
            envelopes: vec![EnvelopeRef {
                number: 1,
                digest: [9; 32],
            }],
        };
        for (t, d) in [
            (vec![], vec![]),
            (vec![key(1)], vec![]),
            (vec![], vec![key(2), key(3)]),
            ((0..200).map(key).collect(), (0..130).map(key).collect()),
        ] {
            let e = entry(t, d);
            let bytes = encode(&e);
            let got = EdgesRef::decode(&node_key(4), &bytes).unwrap().to_owned();
            assert_eq!(
                got,
                ClaimEdges {
                    id: e.id,
                    kind: e.kind,
                    target: e.target.clone(),
                    depends_on: e.depends_on.clone(),
                }
            );
            // A cut entry is an error, never a panic.
            for cut in 0..bytes.len().min(80) {
                let _ = EdgesRef::decode(&node_key(4), &bytes[..cut]);
            }
            assert!(EdgesRef::decode(&node_key(4), &bytes[..3]).is_err());
            assert!(EdgesRef::decode(&node_key(4), &bytes[..35]).is_err());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

        /// A sorted walk finds exactly what one prefix lookup per key finds, whether the keys
        /// are dense (stepping) or far apart (seeking), present or not, at the table's ends.
        #[test]
        fn walk_sorted_equals_a_lookup_per_key(
            pairs in prop::collection::btree_set((0u16..400, 0u16..4), 0..300),
            wanted in prop::collection::btree_set(0u16..420, 0..120),
        ) {
            let tmp = tempfile::tempdir().unwrap();
            let index = Index::open(&Environments::new(), tmp.path()).unwrap();
            {
                let mut w = index.write().unwrap();
                for (a, b) in &pairs {
                    let k = pair(&node_key(*a as Node), &node_key(*b as Node));
                    w.dbs.by_premise.put(&mut w.txn, &k, &[]).unwrap();
                }
                w.commit().unwrap();
            }
            let r = index.read().unwrap();
            let keys: Vec<Node> = wanted.iter().map(|&n| n as Node).collect();
            let mut walked: Vec<(usize, Node)> = Vec::new();
            r.walk_sorted(Table::Premises, &keys, |i, k, v| {
                assert!(v.is_empty());
                walked.push((i, second_node(k).unwrap()));
                Ok(())
            })
            .unwrap();
            let mut looked_up = Vec::new();
            for (i, &k) in keys.iter().enumerate() {
                for d in r.paired_nodes(r.dbs.by_premise, k).unwrap() {
                    looked_up.push((i, d));
                }
            }
            prop_assert_eq!(walked, looked_up);
            drop(r);
            drop(index);
        }

        /// The same for the claims and incoming tables, whose keys are whole nodes: a walk of
        /// few keys looks each one up, a walk of many steps through the table; both find what
        /// `get` finds.
        #[test]
        fn a_walk_of_claims_equals_a_lookup_per_key(
            stored in prop::collection::btree_set(0u16..400, 0..300),
            wanted in prop::collection::btree_set(0u16..420, 0..120),
            incoming in any::<bool>(),
        ) {
            let tmp = tempfile::tempdir().unwrap();
            let index = Index::open(&Environments::new(), tmp.path()).unwrap();
            let (table, db) = if incoming {
                (Table::Incoming, index.dbs.incoming)
            } else {
                (Table::Claims, index.dbs.claims)
            };
            {
                let mut w = index.write().unwrap();
                for n in &stored {
                    db.put(&mut w.txn, &node_key(*n as Node), &n.to_be_bytes()).unwrap();
                }
                w.commit().unwrap();
            }
            let r = index.read().unwrap();
            let keys: Vec<Node> = wanted.iter().map(|&n| n as Node).collect();
            let mut walked: Vec<(usize, Vec<u8>, Vec<u8>)> = Vec::new();
            r.walk_sorted(table, &keys, |i, k, v| {
                walked.push((i, k.to_vec(), v.to_vec()));
                Ok(())
            })
            .unwrap();
            let mut looked_up = Vec::new();
            for (i, &k) in keys.iter().enumerate() {
                if let Some(v) = db.get(&r.txn, &node_key(k)).unwrap() {
                    looked_up.push((i, node_key(k).to_vec(), v.to_vec()));
                }
            }
            prop_assert_eq!(walked, looked_up);
            drop(r);
            drop(index);
        }
    }
}
