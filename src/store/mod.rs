//! The store: one sled database holding the append-only claim log and its indexes
//! (DESIGN section 4).
//!
//! Invariants:
//! - Append-only. No function here deletes or rewrites a claim; re-adding an id is a no-op.
//! - One `add` is one sled transaction over every tree it touches, then a flush: when `add`
//!   returns, the claim, its envelope, its arrival number and all its index entries are
//!   durable together, or none of them is.
//! - Only one process holds the store; others wait up to a bound, then get `Busy`.
//! - A store written by a newer layout is refused before sled opens it.

pub mod blobs;
mod migrate;

pub use migrate::current_version;

use crate::claim::Claim;
use crate::ingest::{Accepted, Signer};
use crate::keys::{Role, TrustSet, TrustedKey};
use ed25519_dalek::VerifyingKey;
use serde::{Deserialize, Serialize};
use sled::transaction::{ConflictableTransactionError, TransactionError};
use sled::Transactional;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The directory name `init` creates and commands look for.
pub const STORE_DIR: &str = ".elench";
/// A plain-text file beside the database naming its layout version, read before sled opens.
const FORMAT_FILE: &str = "FORMAT";
const DB_DIR: &str = "db";
const ID_LEN: usize = 67; // "cl_" + 64 hex

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no elench store at {0} (run `elench init`)")]
    NotFound(PathBuf),
    #[error("the store at {path} is held by another elench process; waited {waited_secs} s")]
    Busy { path: PathBuf, waited_secs: u64 },
    #[error("the store has layout version {found}; this elench supports up to {supported}: upgrade elench")]
    FormatTooNew { found: u32, supported: u32 },
    #[error("store is damaged: {0}")]
    Corrupt(String),
    #[error("{0} is not an elench store: {1}")]
    Invalid(PathBuf, String),
    #[error("storage error: {0}")]
    Sled(#[from] sled::Error),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A claim as the store keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredClaim {
    pub claim: Claim,
    pub signers: Vec<Signer>,
    /// Arrival number: 0 for the first claim ever added.
    pub seq: u64,
}

/// A trusted key as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredKey {
    pub keyid: String,
    pub role: Role,
    pub name: String,
    /// Hex of the 32 raw public key bytes.
    pub public_key: String,
    pub retired: bool,
}

/// What `add` did with one accepted envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    Created,
    Noop,
}

pub struct Store {
    root: PathBuf,
    db: sled::Db,
    envelopes: sled::Tree,
    claims: sled::Tree,
    arrivals: sled::Tree,
    by_target: sled::Tree,
    by_premise: sled::Tree,
    keys: sled::Tree,
    meta: sled::Tree,
}

/// Where the store is: an explicit path, or `.elench` in the working directory or the
/// nearest ancestor that has one.
pub fn locate(explicit: Option<&Path>) -> Result<PathBuf, StoreError> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    let cwd = std::env::current_dir().map_err(|source| StoreError::Io {
        path: PathBuf::from("."),
        source,
    })?;
    cwd.ancestors()
        .map(|d| d.join(STORE_DIR))
        .find(|d| d.join(FORMAT_FILE).is_file())
        .ok_or_else(|| StoreError::NotFound(cwd.join(STORE_DIR)))
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn read_format_file(root: &Path) -> Result<u32, StoreError> {
    let path = root.join(FORMAT_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            StoreError::NotFound(root.to_path_buf())
        } else {
            StoreError::Io {
                path: path.clone(),
                source: e,
            }
        }
    })?;
    text.trim()
        .strip_prefix("elench-store ")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| {
            StoreError::Invalid(
                root.to_path_buf(),
                format!("{} is not an elench FORMAT file", path.display()),
            )
        })
}

impl Store {
    /// Creates a store at `root` (or opens the one already there). Returns whether it was new.
    pub fn init(root: &Path, wait: Duration) -> Result<(Store, bool), StoreError> {
        if root.join(FORMAT_FILE).is_file() {
            return Ok((Store::open(root, wait)?, false));
        }
        std::fs::create_dir_all(root).map_err(io_err(root))?;
        let store = Store::open_db(root, wait)?;
        migrate::migrate(&store.db)?;
        // The FORMAT file is written last: its presence marks a complete store.
        let path = root.join(FORMAT_FILE);
        crate::atomic_file::write(
            &path,
            format!("elench-store {}\n", current_version()).as_bytes(),
        )
        .map_err(io_err(&path))?;
        Ok((store, true))
    }

    /// Checks that `root` holds a store this binary can open, without opening (or locking) it.
    pub fn check(root: &Path) -> Result<(), StoreError> {
        let found = read_format_file(root)?;
        let supported = current_version();
        if found > supported {
            return Err(StoreError::FormatTooNew { found, supported });
        }
        Ok(())
    }

    /// Opens an existing store, waiting up to `wait` for another process to release it.
    pub fn open(root: &Path, wait: Duration) -> Result<Store, StoreError> {
        Store::check(root)?;
        let store = Store::open_db(root, wait)?;
        let applied = migrate::migrate(&store.db)?;
        if !applied.is_empty() {
            let path = root.join(FORMAT_FILE);
            crate::atomic_file::write(
                &path,
                format!("elench-store {}\n", current_version()).as_bytes(),
            )
            .map_err(io_err(&path))?;
        }
        Ok(store)
    }

    fn open_db(root: &Path, wait: Duration) -> Result<Store, StoreError> {
        let started = Instant::now();
        let mut pause = Duration::from_millis(5);
        let db = loop {
            let attempt = sled::Config::new()
                .path(root.join(DB_DIR))
                .flush_every_ms(None)
                .cache_capacity(64 * 1024 * 1024)
                .open();
            match attempt {
                Ok(db) => break db,
                Err(sled::Error::Io(e)) if e.to_string().contains("could not acquire lock") => {
                    if started.elapsed() >= wait {
                        return Err(StoreError::Busy {
                            path: root.to_path_buf(),
                            waited_secs: started.elapsed().as_secs(),
                        });
                    }
                    std::thread::sleep(pause.min(wait.saturating_sub(started.elapsed())));
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                Err(e) => return Err(e.into()),
            }
        };
        Ok(Store {
            root: root.to_path_buf(),
            envelopes: db.open_tree("envelopes")?,
            claims: db.open_tree("claims")?,
            arrivals: db.open_tree("arrivals")?,
            by_target: db.open_tree("by_target")?,
            by_premise: db.open_tree("by_premise")?,
            keys: db.open_tree("keys")?,
            meta: db.open_tree("meta")?,
            db,
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Number of claims in the log (the next arrival number).
    pub fn count(&self) -> Result<u64, StoreError> {
        read_u64(self.meta.get("count")?.as_deref(), "meta/count")
    }

    /// Appends an accepted claim with all its index entries, atomically and durably.
    pub fn add(&self, accepted: &Accepted, envelope: &[u8]) -> Result<Effect, StoreError> {
        let id = accepted.claim.id.as_str();
        let trees = (
            &self.envelopes,
            &self.claims,
            &self.arrivals,
            &self.by_target,
            &self.by_premise,
            &self.meta,
        );
        let result = trees.transaction(
            |(envelopes, claims, arrivals, by_target, by_premise, meta)| {
                if claims.get(id)?.is_some() {
                    return Ok(Effect::Noop);
                }
                let seq = read_u64(meta.get("count")?.as_deref(), "meta/count")
                    .map_err(ConflictableTransactionError::Abort)?;
                let stored = StoredClaim {
                    claim: accepted.claim.clone(),
                    signers: accepted.signers.clone(),
                    seq,
                };
                let json = serde_json::to_vec(&stored).map_err(|e| {
                    ConflictableTransactionError::Abort(StoreError::Corrupt(e.to_string()))
                })?;
                envelopes.insert(id, envelope)?;
                claims.insert(id, json)?;
                arrivals.insert(&seq.to_be_bytes(), id)?;
                for t in &accepted.claim.target {
                    by_target.insert(pair_key(t, id), &[])?;
                }
                for p in &accepted.claim.depends_on {
                    by_premise.insert(pair_key(p, id), &[])?;
                }
                meta.insert("count", &(seq + 1).to_be_bytes())?;
                Ok(Effect::Created)
            },
        );
        let effect = match result {
            Ok(e) => e,
            Err(TransactionError::Abort(e)) => return Err(e),
            Err(TransactionError::Storage(e)) => return Err(e.into()),
        };
        if effect == Effect::Created {
            self.db.flush()?;
        }
        Ok(effect)
    }

    pub fn contains(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self.claims.contains_key(id)?)
    }

    pub fn get(&self, id: &str) -> Result<Option<StoredClaim>, StoreError> {
        match self.claims.get(id)? {
            None => Ok(None),
            Some(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| StoreError::Corrupt(format!("claim {id}: {e}"))),
        }
    }

    pub fn envelope(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.envelopes.get(id)?.map(|v| v.to_vec()))
    }

    /// Ids of the records whose `target` contains `id`.
    pub fn records_targeting(&self, id: &str) -> Result<Vec<String>, StoreError> {
        scan_pairs(&self.by_target, id)
    }

    /// Ids of the claims whose `dependsOn` contains `id`.
    pub fn dependents(&self, id: &str) -> Result<Vec<String>, StoreError> {
        scan_pairs(&self.by_premise, id)
    }

    /// Claim ids in arrival order, starting at arrival number `from`, at most `limit`.
    pub fn arrivals(&self, from: u64, limit: usize) -> Result<Vec<(u64, String)>, StoreError> {
        let mut out = Vec::new();
        for item in self.arrivals.range(from.to_be_bytes()..).take(limit) {
            let (k, v) = item?;
            let seq = read_u64(Some(&k), "arrivals key")?;
            out.push((seq, utf8(&v, "arrivals value")?));
        }
        Ok(out)
    }

    /// Every entry of an index tree, as (first id, second id).
    pub fn index_entries(&self, index: Index) -> Result<Vec<(String, String)>, StoreError> {
        let tree = match index {
            Index::Target => &self.by_target,
            Index::Premise => &self.by_premise,
        };
        let mut out = Vec::new();
        for item in tree.iter() {
            let (k, _) = item?;
            out.push(split_pair(&k)?);
        }
        Ok(out)
    }

    /// Ids of every stored claim (in id order).
    pub fn claim_ids(&self) -> Result<Vec<String>, StoreError> {
        self.claims
            .iter()
            .keys()
            .map(|k| {
                k.map_err(StoreError::from)
                    .and_then(|k| utf8(&k, "claims key"))
            })
            .collect()
    }

    // ---- trusted keys ----

    /// Adds a trusted key. Returns false if that keyid is already trusted (nothing changes).
    pub fn add_key(&self, key: &TrustedKey) -> Result<bool, StoreError> {
        let stored = StoredKey {
            keyid: key.keyid.clone(),
            role: key.role,
            name: key.name.clone(),
            public_key: hex::encode(key.key.as_bytes()),
            retired: false,
        };
        let json = serde_json::to_vec(&stored).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let added = self
            .keys
            .compare_and_swap(&key.keyid, None as Option<&[u8]>, Some(json))?
            .is_ok();
        self.db.flush()?;
        Ok(added)
    }

    /// Marks a key retired. Returns None for an unknown keyid, else whether it changed.
    pub fn retire_key(&self, keyid: &str) -> Result<Option<bool>, StoreError> {
        let Some(mut key) = self.get_key(keyid)? else {
            return Ok(None);
        };
        if key.retired {
            return Ok(Some(false));
        }
        key.retired = true;
        let json = serde_json::to_vec(&key).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        self.keys.insert(keyid, json)?;
        self.db.flush()?;
        Ok(Some(true))
    }

    pub fn get_key(&self, keyid: &str) -> Result<Option<StoredKey>, StoreError> {
        match self.keys.get(keyid)? {
            None => Ok(None),
            Some(b) => serde_json::from_slice(&b)
                .map(Some)
                .map_err(|e| StoreError::Corrupt(format!("key {keyid}: {e}"))),
        }
    }

    /// Every trusted key, retired ones included, in keyid order.
    pub fn list_keys(&self) -> Result<Vec<StoredKey>, StoreError> {
        let mut out = Vec::new();
        for item in self.keys.iter() {
            let (k, v) = item?;
            let key: StoredKey = serde_json::from_slice(&v).map_err(|e| {
                StoreError::Corrupt(format!("key {}: {e}", String::from_utf8_lossy(&k)))
            })?;
            out.push(key);
        }
        Ok(out)
    }

    /// The store's keys as a trust set (retired keys are kept, marked).
    pub fn trust_set(&self) -> Result<TrustSet, StoreError> {
        let mut keys = Vec::new();
        for k in self.list_keys()? {
            let bytes: [u8; 32] = hex::decode(&k.public_key)
                .ok()
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| StoreError::Corrupt(format!("key {}: bad public key", k.keyid)))?;
            let vk = VerifyingKey::from_bytes(&bytes)
                .map_err(|e| StoreError::Corrupt(format!("key {}: {e}", k.keyid)))?;
            keys.push(TrustedKey {
                keyid: k.keyid,
                role: k.role,
                name: k.name,
                key: vk,
                retired: k.retired,
            });
        }
        Ok(TrustSet::new(keys))
    }
}

/// The two index trees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Index {
    /// target → record
    Target,
    /// premise → dependent
    Premise,
}

fn pair_key(first: &str, second: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(first.len() + second.len());
    k.extend_from_slice(first.as_bytes());
    k.extend_from_slice(second.as_bytes());
    k
}

fn split_pair(key: &[u8]) -> Result<(String, String), StoreError> {
    if key.len() != 2 * ID_LEN {
        return Err(StoreError::Corrupt(format!(
            "index key of {} bytes; expected {}",
            key.len(),
            2 * ID_LEN
        )));
    }
    let (a, b) = key.split_at(ID_LEN);
    Ok((utf8(a, "index key")?, utf8(b, "index key")?))
}

fn scan_pairs(tree: &sled::Tree, first: &str) -> Result<Vec<String>, StoreError> {
    let mut out = Vec::new();
    for item in tree.scan_prefix(first.as_bytes()) {
        let (k, _) = item?;
        let (a, b) = split_pair(&k)?;
        if a == first {
            out.push(b);
        }
    }
    Ok(out)
}

fn utf8(bytes: &[u8], what: &str) -> Result<String, StoreError> {
    String::from_utf8(bytes.to_vec())
        .map_err(|_| StoreError::Corrupt(format!("{what} is not UTF-8")))
}

fn read_u64(bytes: Option<&[u8]>, what: &str) -> Result<u64, StoreError> {
    let b = bytes.ok_or_else(|| StoreError::Corrupt(format!("{what} is missing")))?;
    let arr: [u8; 8] = b
        .try_into()
        .map_err(|_| StoreError::Corrupt(format!("{what} is not an 8-byte number")))?;
    Ok(u64::from_be_bytes(arr))
}
