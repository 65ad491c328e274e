//! A remote's log as a transparency log (docs/witness.md): its sequence of envelopes, the
//! checkpoint a log key signs over it and witnesses cosign, and the checks a pull makes.
//!
//! The sequence: the blobs under `v1/` and `trust/` in the order the first-parent history of
//! `refs/elench/log` added them, each commit's new or changed ones sorted by the bytes of
//! their paths, a blob already in the sequence not added again, a blob over 1 MiB (no
//! envelope) left out. Its leaves are the blobs' bytes; each store keeps the Merkle tree of
//! the remote's sequence it has seen, every level (`sync/<name>.tree/`, with
//! `sync/<name>.witness.json`), so a pull or push hashes only what is new and loads the rest
//! without hashing.

use super::git::{Additions, At, Blob, BlobKey, Pushed, Repo};
use super::{layout, Session, SyncError};
use crate::envelope::MAX_ENVELOPE_BYTES;
use crate::error::Code;
use crate::keys::{Role, TrustSet};
use crate::witness::checkpoint::{encode_hash, parse_hash, Checkpoint};
use crate::witness::client::{cosign, Client, Outcome, Witness};
use crate::witness::merkle::{leaf_hash, Hash, Tree};
use crate::witness::note::{self, KeyType, Note, Vkey};
use crate::witness::policy::Policy;
use ed25519_dalek::SigningKey;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where the checkpoint lives in the remote log's tree.
pub const CHECKPOINT_PATH: &str = "checkpoint";
/// The folders whose blobs make the sequence.
const SEQUENCE_DIRS: [&str; 2] = [layout::LAYOUT_DIR, "trust"];

/// What this store last saw of a remote's sequence and checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct WitnessState {
    /// The remote commit the kept leaves stop at.
    #[serde(default)]
    head: Option<String>,
    /// How many leaves the leaves file holds for it.
    #[serde(default)]
    size: u64,
    /// The last checkpoint this store verified or wrote for the remote: size and root.
    #[serde(default)]
    checkpoint: Option<(u64, String)>,
    /// The size each witness (by vkey) last cosigned, as far as this store knows.
    #[serde(default)]
    cosigned: BTreeMap<String, u64>,
    /// The checkpoint file of a remote commit as a pull last read it, so that a remote that
    /// has not moved is not asked again.
    #[serde(default)]
    note: Option<NoteSeen>,
}

/// What a remote commit holds at [`CHECKPOINT_PATH`]: the note's text, or None when nothing
/// there reads as a note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct NoteSeen {
    commit: String,
    text: Option<String>,
}

/// Notes longer than this are read from the remote's commit each time, not kept in the state.
const NOTE_KEPT: usize = 16 * 1024;

fn state_path(root: &Path, name: &str) -> PathBuf {
    root.join("sync").join(format!("{name}.witness.json"))
}

/// The kept tree: one file per level (`0` the leaf hashes, `1` the hashes of pairs, …).
fn levels_dir(root: &Path, name: &str) -> PathBuf {
    root.join("sync").join(format!("{name}.tree"))
}

/// The first `n` leaves' tree from the level files in `dir`, if they hold it. Each level is
/// read straight into its place: one copy from the page cache, no hashing.
pub fn load_levels(dir: &Path, n: u64) -> Option<Tree> {
    use std::io::Read;
    let mut levels = Vec::new();
    let mut h = 0;
    while n >> h > 0 {
        let want = (n >> h) as usize;
        let mut f = std::fs::File::open(dir.join(format!("{h}"))).ok()?;
        if f.metadata().ok()?.len() < want as u64 * 32 {
            return None;
        }
        // Room to grow, so the next appends do not copy the level.
        let mut level: Vec<Hash> = Vec::with_capacity(want + want / 16 + 1024);
        level.resize(want, [0u8; 32]);
        f.read_exact(level.as_flattened_mut()).ok()?;
        levels.push(level);
        h += 1;
    }
    Tree::from_levels(levels)
}

/// Of the `new` leaf hashes, those neither among the `kept` ones nor earlier in `new`, in
/// their order: what enters the sequence (an entry enters it once). One pass over the kept
/// hashes, each tested against a 65,536-bit filter of two bytes of the new ones; only those
/// that pass it are looked up.
pub fn unseen(kept: &[Hash], new: Vec<Hash>) -> Vec<Hash> {
    let mut candidates: rustc_hash::FxHashSet<Hash> = new.iter().copied().collect();
    let slot = |h: &Hash| usize::from(u16::from_le_bytes([h[0], h[1]]));
    let mut filter = vec![0u64; 1024];
    for h in &candidates {
        filter[slot(h) >> 6] |= 1 << (slot(h) & 63);
    }
    for h in kept {
        if filter[slot(h) >> 6] & (1 << (slot(h) & 63)) != 0 {
            candidates.remove(h);
            if candidates.is_empty() {
                break;
            }
        }
    }
    // Still a candidate: not kept, and not taken earlier in this batch.
    new.into_iter().filter(|h| candidates.remove(h)).collect()
}

/// Writes what `path` lacks of `level` (the file is cut first if it holds more: a kept tree
/// that was recomputed), and syncs it.
fn save_level(path: &Path, level: &[Hash]) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom, Write};
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)?;
    let have = f.metadata()?.len() / 32;
    let want = level.len() as u64;
    // Hashes already there are kept only if they are these (a recomputed tree rewrites).
    let mut keep = have.min(want);
    if keep > 0 {
        use std::io::Read;
        let mut last = [0u8; 32];
        f.seek(SeekFrom::Start((keep - 1) * 32))?;
        f.read_exact(&mut last)?;
        if last != level[keep as usize - 1] {
            keep = 0;
        }
    }
    f.set_len(keep * 32)?;
    f.seek(SeekFrom::Start(keep * 32))?;
    let tail: Vec<u8> = level[keep as usize..].iter().flatten().copied().collect();
    f.write_all(&tail)?;
    f.sync_data()
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SyncError + '_ {
    move |e| SyncError::Io(format!("{}: {e}", path.display()))
}

/// A checkpoint this store saw: its size and root (base64).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckpointSeen {
    pub size: u64,
    pub root: String,
}

/// Removes what this store kept of remote `name`'s sequence, checkpoint and witnesses (the
/// tree's files first, then the state naming them): the kept size, the last checkpoint seen,
/// and how many witnesses' sizes were known.
pub(super) fn forget(
    root: &Path,
    name: &str,
) -> Result<(u64, Option<CheckpointSeen>, usize), SyncError> {
    let path = state_path(root, name);
    let state: WitnessState = std::fs::read(&path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let dir = levels_dir(root, name);
    match std::fs::remove_dir_all(&dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(&dir)(e)),
        _ => {}
    }
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(&path)(e)),
        _ => {}
    }
    let seen = state
        .checkpoint
        .map(|(size, root)| CheckpointSeen { size, root });
    Ok((state.size, seen, state.cosigned.len()))
}

/// The witness policy kept with a remote (`elench remote witnesses NAME FILE`).
pub fn policy_path(root: &Path, name: &str) -> PathBuf {
    root.join("sync").join(format!("{name}.witnesses"))
}

/// Keeps `bytes` (a tlog-policy file, checked) as the witness policy of remote `name`.
pub fn set_policy(root: &Path, name: &str, bytes: &[u8]) -> Result<Policy, String> {
    let p = Policy::parse(bytes).map_err(|e| e.to_string())?;
    let path = policy_path(root, name);
    std::fs::create_dir_all(root.join("sync")).map_err(|e| e.to_string())?;
    crate::atomic_file::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(p)
}

/// The witness policy kept with remote `name`, if any.
pub fn kept_policy(root: &Path, name: &str) -> Result<Option<Policy>, String> {
    let path = policy_path(root, name);
    match std::fs::read(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
        Ok(b) => Policy::parse(&b)
            .map(Some)
            .map_err(|e| format!("{}: {e}", path.display())),
    }
}

/// A remote's sequence as far as its head, and whether it still extends what was kept.
pub struct Sequence {
    pub tree: Tree,
    /// The tree differs from the kept one (grown, or computed anew).
    pub changed: bool,
    /// The kept sequence is not a prefix of this one: how many leaves were kept, and a
    /// sentence on what differs.
    pub rewound: Option<String>,
}

/// What of the `kept` sequence the `now` one lacks, in a sentence (None: nothing). A
/// sequence that holds every kept entry but not as its prefix (a remote moved back, then the
/// lost envelopes written back after others' work) has lost nothing: it is taken as the
/// remote's sequence from then on.
fn lost_leaves(kept: &Tree, now: &Tree) -> Option<String> {
    let n = kept.size() as usize;
    let (old, new) = (kept.leaf_hashes(), now.leaf_hashes());
    if new.len() >= n && new[..n] == *old {
        return None;
    }
    let there: rustc_hash::FxHashSet<&Hash> = new.iter().collect();
    let missing = old.iter().filter(|h| !there.contains(h)).count();
    (missing > 0).then(|| {
        format!(
            "{missing} of the {n} entries this store saw in the remote's sequence of envelopes              are no longer in it (it has {} now)",
            new.len()
        )
    })
}

/// A problem a pull found with the remote's checkpoint, with its code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    #[serde(serialize_with = "code_str")]
    pub code: Code,
    pub message: String,
}

fn code_str<S: serde::Serializer>(c: &Code, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(c.as_str())
}

/// What pull checks beyond envelopes.
pub struct PullChecks<'a> {
    pub policy: Option<&'a Policy>,
    /// Also submit the checkpoint to the witnesses.
    pub fresh: bool,
    pub timeout: Duration,
}

/// What the checkpoint checks of a pull found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PullReport {
    /// The remote's checkpoint, when it has one: origin, size, root (base64).
    pub checkpoint: Option<CheckpointView>,
    /// The size of the remote's sequence.
    pub sequence_size: u64,
    /// Policy witnesses whose cosignature on the remote's checkpoint verified.
    pub cosigned_by: Vec<String>,
    /// With `--witness-fresh`: witnesses that cosigned it now.
    pub fresh_by: Vec<String>,
    /// Problems, `REMOTE_REWOUND` first.
    pub findings: Vec<Finding>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckpointView {
    pub origin: String,
    pub size: u64,
    pub root: String,
}

impl From<&Checkpoint> for CheckpointView {
    fn from(c: &Checkpoint) -> Self {
        CheckpointView {
            origin: c.origin.clone(),
            size: c.size,
            root: encode_hash(&c.root),
        }
    }
}

/// What push does with the log key.
pub struct PushCheckpoint<'a> {
    pub key: &'a SigningKey,
    /// `--origin`, where no policy's `log` line names the key.
    pub origin: Option<&'a str>,
    pub policy: Option<&'a Policy>,
    pub timeout: Duration,
}

/// What the checkpoint step of a push did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PushReport {
    pub checkpoint: Option<CheckpointView>,
    /// Witnesses that cosigned (by their policy names).
    pub cosigned_by: Vec<String>,
    /// Witnesses that did not, and why.
    pub not_cosigned: Vec<(String, String)>,
    /// Whether the cosignatures meet the policy's quorum (true without a policy).
    pub quorum: bool,
    /// Whether a commit with the checkpoint was pushed (false: the remote had it already).
    pub written: bool,
    /// A witness has cosigned a larger tree of this log than the remote's: its message.
    pub rewound: Option<String>,
    /// Checkpoints signed and offered: more than one when another pusher moved the log
    /// while this one was asking the witnesses.
    pub attempts: usize,
}

/// How one attempt to write the checkpoint ended.
enum Attempt {
    Written(PushReport),
    /// Another pusher moved the log first (git's words).
    Lost(String),
}

/// How many times a checkpoint that lost the race for the log is signed and offered again.
const CHECKPOINT_ATTEMPTS: usize = 3;

/// The first-parent additions the sequence at `head` needs after `base`, listed by a thread
/// of its own while a pull reads (what [`Repo::first_parent_additions`] returns).
pub(super) struct Ahead {
    base: Option<String>,
    head: String,
    listing: std::thread::JoinHandle<Result<Additions, super::git::GitError>>,
}

impl Session<'_> {
    /// Says that the checkpoint's checks follow this session's pull
    /// ([`Session::check_checkpoint`] on the head it pulled): the pull then lists the commits
    /// the remote's sequence lacks on a thread of its own while it reads and verifies, instead
    /// of after it.
    pub fn check_after_pull(&mut self) {
        self.list_ahead = true;
    }

    /// Starts listing what the sequence at `head` will need (see [`Session::check_after_pull`]).
    pub(super) fn list_sequence_ahead(&self, repo: &Repo, head: &str) {
        if !self.list_ahead {
            return;
        }
        // The base [`Session::sequence_at`] starts from, if the kept tree loads.
        let state = self.load_witness_json();
        let base = state.head.filter(|_| state.size > 0);
        if base.as_deref() == Some(head) {
            return;
        }
        let (repo, asked, tip) = (repo.clone(), base.clone(), head.to_owned());
        let listing = std::thread::spawn(move || {
            repo.first_parent_additions(asked.as_deref(), &tip, &SEQUENCE_DIRS)
        });
        *self.ahead.lock().unwrap_or_else(|p| p.into_inner()) = Some(Ahead {
            base,
            head: head.to_owned(),
            listing,
        });
    }

    /// [`Repo::first_parent_additions`] of the sequence's folders: the listing started
    /// ahead when it was for these very commits, or a new one.
    fn additions(
        &self,
        repo: &Repo,
        base: Option<&str>,
        head: &str,
    ) -> Result<Additions, SyncError> {
        let ahead = self.ahead.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(a) = ahead.filter(|a| a.base.as_deref() == base && a.head == head) {
            return Ok(a
                .listing
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?);
        }
        Ok(repo.first_parent_additions(base, head, &SEQUENCE_DIRS)?)
    }

    fn load_witness_state(&self) -> (WitnessState, Tree) {
        let state = self.load_witness_json();
        self.load_kept(state)
    }

    /// The state file alone (not the kept tree).
    fn load_witness_json(&self) -> WitnessState {
        std::fs::read(state_path(self.store.root(), &self.remote.name))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// The kept tree the state names.
    fn load_kept(&self, state: WitnessState) -> (WitnessState, Tree) {
        let root = self.store.root();
        let name = &self.remote.name;
        match load_levels(&levels_dir(root, name), state.size) {
            Some(tree) => (state, tree),
            // Missing, short or of no tree: start over (it only costs hashing), from empty
            // files, so that what is saved next is one tree. (A tree saved later always
            // extends the one kept: a sequence that does not is rewound, and not saved.)
            None => {
                let _ = std::fs::remove_dir_all(levels_dir(root, name));
                (WitnessState::default(), Tree::new())
            }
        }
    }

    /// Keeps the tree's levels (each level's file gets only what it lacks, then is synced)
    /// and then the state naming its size: a crash between the two leaves longer files,
    /// which the next load cuts to the size the state names.
    fn save_witness_state(&self, state: &WitnessState, tree: &Tree) -> Result<(), SyncError> {
        let root = self.store.root();
        let name = &self.remote.name;
        let dir = levels_dir(root, name);
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        for (h, level) in tree.levels().iter().enumerate() {
            let path = dir.join(format!("{h}"));
            save_level(&path, level).map_err(io(&path))?;
        }
        self.save_witness_json(state)
    }

    /// The state file alone, for a state whose tree is kept already.
    fn save_witness_json(&self, state: &WitnessState) -> Result<(), SyncError> {
        let path = state_path(self.store.root(), &self.remote.name);
        let json = serde_json::to_vec_pretty(state).map_err(|e| SyncError::Io(e.to_string()))?;
        crate::atomic_file::write(&path, &json).map_err(io(&path))?;
        Ok(())
    }

    /// The remote's sequence at `head`: the kept one grown by the commits after its head,
    /// or, when the kept head is not on `head`'s first-parent chain, computed anew (and
    /// compared with the kept one).
    fn sequence_at(
        &self,
        repo: &Repo,
        head: &str,
        state: &mut WitnessState,
        kept: Tree,
    ) -> Result<Sequence, SyncError> {
        let mut rewound = None;
        let mut tree = kept.clone();
        let mut base = state.head.clone().filter(|_| kept.size() > 0);
        if let Some(b) = &base {
            if b == head {
                return Ok(Sequence {
                    tree,
                    changed: false,
                    rewound: None,
                });
            }
            let added = self.additions(repo, Some(b), head)?;
            if added.commits > 0 && added.first_parent.as_deref() == Some(b.as_str()) {
                self.grow(repo, &mut tree, added.blobs)?;
                state.head = Some(head.to_owned());
                state.size = tree.size();
                return Ok(Sequence {
                    tree,
                    changed: true,
                    rewound,
                });
            }
            base = None;
        }
        if base.is_none() {
            tree = Tree::new();
            let added = self.additions(repo, None, head)?;
            self.grow(repo, &mut tree, added.blobs)?;
            if kept.size() > 0 {
                rewound = lost_leaves(&kept, &tree);
            }
            state.head = Some(head.to_owned());
            state.size = tree.size();
        }
        Ok(Sequence {
            tree,
            changed: true,
            rewound,
        })
    }

    /// Appends the blobs the commits add, skipping those already in the sequence: the new
    /// leaves are hashed, then the kept ones scanned once for them ([`unseen`]; no set of
    /// every leaf is built), so a pull of k new envelopes costs k hashes, a scan, and
    /// O(k log n).
    fn grow(&self, repo: &Repo, tree: &mut Tree, blobs: Vec<BlobKey>) -> Result<(), SyncError> {
        // Blobs this session's pull read are hashed already; the others are read here.
        let mut new: Vec<Option<Hash>> = blobs.iter().map(|k| self.leaves.get(k)).collect();
        let unread_at: Vec<usize> = (0..new.len()).filter(|&i| new[i].is_none()).collect();
        let unread: Vec<BlobKey> = unread_at.iter().map(|&i| blobs[i]).collect();
        drop(blobs);
        repo.read_blob_keys(unread, MAX_ENVELOPE_BYTES as u64, |j, blob| {
            if let (Blob::Content(bytes), Some(&i)) = (blob, unread_at.get(j)) {
                new[i] = Some(leaf_hash(&bytes));
            }
            Ok(true)
        })?;
        for h in unseen(tree.leaf_hashes(), new.into_iter().flatten().collect()) {
            tree.push_leaf_hash(h);
        }
        Ok(())
    }

    /// The checkpoint note at `commit`, if its tree has one that reads as a note.
    fn read_checkpoint(&self, repo: &Repo, commit: &str) -> Result<Option<Note>, SyncError> {
        let at = repo.at_each(&[(commit, CHECKPOINT_PATH)])?;
        let Some(At::Blob { oid, .. }) = at.into_iter().next() else {
            return Ok(None);
        };
        let mut found = None;
        repo.read_blobs(&[oid], note::MAX_NOTE_BYTES as u64, |_, blob| {
            if let Blob::Content(b) = blob {
                found = Note::parse(&b).ok();
            }
            Ok(false)
        })?;
        Ok(found)
    }

    /// The checkpoint note at `commit`, as [`Session::read_checkpoint`], taken from `state`
    /// when a pull read it there before, and remembered in it otherwise.
    fn checkpoint_at(
        &self,
        repo: &Repo,
        commit: &str,
        state: &mut WitnessState,
    ) -> Result<Option<Note>, SyncError> {
        if let Some(seen) = state.note.as_ref().filter(|n| n.commit == commit) {
            return Ok(seen
                .text
                .as_ref()
                .and_then(|t| Note::parse(t.as_bytes()).ok()));
        }
        let note = self.read_checkpoint(repo, commit)?;
        let text = note.as_ref().map(Note::to_text);
        // A note is kept only if it reads back as the same note.
        let kept = text.filter(|t| {
            t.len() <= NOTE_KEPT && Note::parse(t.as_bytes()).ok().as_ref() == note.as_ref()
        });
        state.note = match (&note, kept) {
            (None, _) => Some(NoteSeen {
                commit: commit.to_owned(),
                text: None,
            }),
            (Some(_), Some(t)) => Some(NoteSeen {
                commit: commit.to_owned(),
                text: Some(t),
            }),
            (Some(_), None) => None,
        };
        Ok(note)
    }

    /// `elench checkpoint --remote NAME`: the remote's sequence and root now, and its
    /// checkpoint file if it has one.
    pub fn remote_checkpoint(&mut self) -> Result<(u64, Hash, Option<CheckpointView>), SyncError> {
        let (repo, head) = self.connect()?;
        let Some(head) = head else {
            return Ok((0, Tree::new().root(), None));
        };
        let (mut state, kept) = self.load_witness_state();
        let seq = self.sequence_at(&repo, &head, &mut state, kept)?;
        if seq.rewound.is_none() {
            self.save_witness_state(&state, &seq.tree)?;
        }
        let written = self
            .read_checkpoint(&repo, &head)?
            .and_then(|n| Checkpoint::parse(&n.text).ok())
            .map(|c| CheckpointView::from(&c));
        Ok((seq.tree.size(), seq.tree.root(), written))
    }

    /// After a push: signs the remote's sequence at its head with the log key, asks every
    /// witness of the policy to cosign it, and writes checkpoint and cosignatures at
    /// `checkpoint` in a commit on top of the head. When another pusher moved the log
    /// between reading the head and writing that commit, it all starts over on the new head
    /// (its sequence, the signature, the witnesses, from the sizes they cosigned meanwhile),
    /// at most [`CHECKPOINT_ATTEMPTS`] times.
    pub fn push_checkpoint(&mut self, input: &PushCheckpoint<'_>) -> Result<PushReport, SyncError> {
        // What the witnesses cosigned in a lost attempt stands for the next one.
        let mut cosigned = BTreeMap::new();
        let mut last = String::new();
        for attempt in 0..CHECKPOINT_ATTEMPTS {
            if attempt > 0 {
                if (self.stop)() {
                    break;
                }
                std::thread::sleep(super::push::backoff(attempt - 1));
            }
            match self.checkpoint_once(input, &mut cosigned)? {
                Attempt::Written(mut report) => {
                    report.attempts = attempt + 1;
                    return Ok(report);
                }
                Attempt::Lost(why) => last = why,
            }
        }
        // Keep what the witnesses cosigned, so the next push asks them from there.
        if !cosigned.is_empty() {
            let (mut state, tree) = self.load_witness_state();
            for (k, n) in cosigned {
                let e = state.cosigned.entry(k).or_insert(0);
                *e = (*e).max(n);
            }
            self.save_witness_state(&state, &tree)?;
        }
        Err(SyncError::PushRejected {
            attempts: CHECKPOINT_ATTEMPTS,
            reason: format!("while writing the checkpoint: {last}"),
        })
    }

    /// One attempt of [`Session::push_checkpoint`] over the remote's head now; `cosigned`
    /// gathers the sizes witnesses cosigned, across attempts.
    fn checkpoint_once(
        &mut self,
        input: &PushCheckpoint<'_>,
        cosigned: &mut BTreeMap<String, u64>,
    ) -> Result<Attempt, SyncError> {
        let (repo, head) = self.connect()?;
        let Some(head) = head else {
            return Ok(Attempt::Written(PushReport {
                quorum: input.policy.is_none_or(|p| !p.wants_witnesses()),
                ..PushReport::default()
            }));
        };
        let public = input.key.verifying_key();
        let origin = input
            .policy
            .and_then(|p| p.logs.iter().find(|l| l.vkey.key == public))
            .map(|l| l.vkey.name.clone())
            .or(input.origin.map(str::to_owned))
            .ok_or_else(|| {
                SyncError::Config(
                    "the checkpoint needs an origin: a `log` line of the witness policy naming \
                     this log key, or --origin"
                        .into(),
                )
            })?;
        let (mut state, kept) = self.load_witness_state();
        for (k, n) in cosigned.iter() {
            let e = state.cosigned.entry(k.clone()).or_insert(0);
            *e = (*e).max(*n);
        }
        let seq = self.sequence_at(&repo, &head, &mut state, kept)?;
        let tree = seq.tree;
        let cp = Checkpoint {
            origin: origin.clone(),
            size: tree.size(),
            root: tree.root(),
        };
        let mut signed = cp
            .sign(input.key)
            .map_err(|e| SyncError::Config(format!("the log key cannot sign: {e}")))?;
        let mut report = PushReport {
            checkpoint: Some(CheckpointView::from(&cp)),
            ..PushReport::default()
        };
        // Cosignatures the remote's checkpoint already carries for this very tree are kept.
        let existing = self.read_checkpoint(&repo, &head)?;
        let mut have: HashSet<usize> = HashSet::new();
        if let (Some(old), Some(policy)) = (&existing, input.policy) {
            if old.text == signed.text {
                for (i, w) in policy.witnesses.iter().enumerate() {
                    for s in old.signatures.iter().filter(|s| w.vkey.names(s)) {
                        if let Ok(Some(_)) = w.vkey.verify(&old.text, s) {
                            if have.insert(i) {
                                signed.signatures.push(s.clone());
                            }
                        }
                    }
                }
            }
        }
        if let Some(policy) = input.policy {
            let client = Client::new(input.timeout);
            let proof = |m: u64| tree.consistency_proof(m, tree.size()).ok();
            for (i, w) in policy.witnesses.iter().enumerate() {
                let name = w.display_name();
                if have.contains(&i) {
                    report.cosigned_by.push(name);
                    continue;
                }
                let Some(url) = &w.url else {
                    report
                        .not_cosigned
                        .push((name, "the policy gives no URL for it".into()));
                    continue;
                };
                let key = w.vkey.to_string();
                let old = state.cosigned.get(&key).copied().unwrap_or(0);
                let wit = Witness {
                    name: &name,
                    vkey: &w.vkey,
                    url,
                };
                // The witness is sent the checkpoint as the log signed it.
                let log_signed = Note {
                    text: signed.text.clone(),
                    signatures: vec![signed.signatures[0].clone()],
                };
                match cosign(&client, &wit, &cp, &log_signed, old, &proof) {
                    Outcome::Cosigned { signature, .. } => {
                        cosigned.insert(key.clone(), cp.size);
                        state.cosigned.insert(key, cp.size);
                        signed.signatures.push(signature);
                        have.insert(i);
                        report.cosigned_by.push(name);
                    }
                    Outcome::Ahead { witness_size } => {
                        let why = format!(
                            "it has cosigned a tree of {witness_size} entries of this log, \
                             larger than the remote's {}: the remote was rewound",
                            cp.size
                        );
                        report
                            .rewound
                            .get_or_insert(format!("witness {name}: {why}"));
                        report.not_cosigned.push((name, why));
                    }
                    Outcome::Inconsistent { message } => {
                        let why = format!(
                            "422: the checkpoint is not consistent with what it cosigned ({message})"
                        );
                        report
                            .rewound
                            .get_or_insert(format!("witness {name}: {why}"));
                        report.not_cosigned.push((name, why));
                    }
                    Outcome::Failed { message } => report.not_cosigned.push((name, message)),
                }
            }
            report.quorum = policy.satisfied(|i| have.contains(&i));
        } else {
            report.quorum = true;
        }
        let text = signed.to_text();
        let unchanged = existing.as_ref().is_some_and(|e| e.to_text() == text);
        if !unchanged {
            let mut fi = repo.fast_import()?;
            fi.begin(Some(&head))?;
            fi.add(CHECKPOINT_PATH, text.as_bytes())?;
            let commit = fi.finish()?;
            match repo.push(&self.remote.url, &commit, layout::LOG_REF)? {
                Pushed::Done => {
                    self.track(&repo, &commit);
                    self.connected = Some((repo.clone(), Some(commit.clone())));
                    report.written = true;
                    // The new commit adds no envelope: the sequence and the push position
                    // stand for it as they did for its parent.
                    state.head = Some(commit.clone());
                    if self.state.pushed.as_deref() == Some(head.as_str()) {
                        self.state.pushed = Some(commit.clone());
                    }
                    if self.state.pulled.as_deref() == Some(head.as_str()) {
                        self.state.pulled = Some(commit.clone());
                    }
                    // Nor does it touch the trust folder.
                    let s = &mut self.state;
                    for t in [&mut s.trust_listed, &mut s.trust_pushed]
                        .into_iter()
                        .flatten()
                    {
                        if t.commit == head {
                            t.commit = commit.clone();
                        }
                    }
                    self.save()?;
                }
                Pushed::Refused(why) => {
                    return Err(SyncError::PushRefused {
                        name: self.remote.name.clone(),
                        url: self.remote.url.clone(),
                        reason: why,
                    })
                }
                Pushed::Lost(why) => {
                    // The head this session knew is gone: the next attempt asks again.
                    self.connected = None;
                    return Ok(Attempt::Lost(why));
                }
            }
        }
        state.checkpoint = Some((cp.size, encode_hash(&cp.root)));
        state.size = tree.size();
        self.save_witness_state(&state, &tree)?;
        Ok(Attempt::Written(report))
    }

    /// After a pull: checks the remote's checkpoint against the sequence pulled, the log
    /// keys this store trusts, the policy's quorum, the last checkpoint this store saw, and,
    /// with `fresh`, the witnesses themselves.
    pub fn check_checkpoint(
        &mut self,
        checks: &PullChecks<'_>,
        trust: &TrustSet,
    ) -> Result<PullReport, SyncError> {
        let (repo, head) = self.connect()?;
        let mut report = PullReport::default();
        let wants = checks.policy.is_some_and(Policy::wants_witnesses);
        let finding = |code: Code, message: String| Finding { code, message };
        let Some(head) = head else {
            if wants {
                report.findings.push(finding(
                    Code::NoCheckpoint,
                    format!(
                        "remote {} has no log, so no checkpoint, and the witness policy asks \
                         for cosignatures",
                        self.remote.name
                    ),
                ));
            }
            return Ok(report);
        };
        let mut state = self.load_witness_json();
        let before = state.clone();
        let note = self.checkpoint_at(&repo, &head, &mut state)?;
        let parsed = note
            .as_ref()
            .and_then(|n| Checkpoint::parse(&n.text).ok().map(|c| (n, c)));
        let no_checkpoint = || {
            finding(
                Code::NoCheckpoint,
                format!(
                    "remote {} has no readable checkpoint (`{CHECKPOINT_PATH}` in its log), \
                     and the witness policy asks for cosignatures",
                    self.remote.name
                ),
            )
        };
        if parsed.is_none() && state.head.as_deref() == Some(head.as_str()) {
            // The remote's head is the one the kept sequence stops at, and it has no
            // checkpoint to check the sequence against: nothing to load, compute or keep.
            report.sequence_size = state.size;
            if wants {
                report.findings.push(no_checkpoint());
            }
            if state != before {
                self.save_witness_json(&state)?;
            }
            return Ok(report);
        }
        let (mut state, kept) = self.load_kept(state);
        let seq = self.sequence_at(&repo, &head, &mut state, kept)?;
        let (tree, changed) = (seq.tree, seq.changed);
        report.sequence_size = tree.size();
        if let Some(why) = seq.rewound {
            report.findings.push(finding(
                Code::RemoteRewound,
                format!("remote {}: {why}", self.remote.name),
            ));
        }
        let unchanged = (!changed).then_some(&before);
        let Some((note, cp)) = parsed else {
            if wants {
                report.findings.push(no_checkpoint());
            }
            return self.finish_pull_report(report, state, tree, None, unchanged);
        };
        report.checkpoint = Some(CheckpointView::from(&cp));
        // The log's signature, by a `log` key this store trusts, named as the origin.
        let log_keys: Vec<Vkey> = trust
            .active()
            .filter(|k| k.role == Role::Log)
            .filter_map(|k| Vkey::new(&cp.origin, KeyType::Ed25519, k.key).ok())
            .collect();
        let log_key = log_keys
            .iter()
            .find(|k| note::verify(note, std::slice::from_ref(k)).is_ok());
        let Some(log_key) = log_key else {
            let code = if wants {
                Code::NoCheckpoint
            } else {
                Code::WitnessQuorum
            };
            let message = format!(
                "remote {}'s checkpoint (origin {}) is not signed by a log key this store \
                 trusts ({} trusted); trust the log's key with `elench keys add --role log`",
                self.remote.name,
                cp.origin,
                log_keys.len()
            );
            if wants || !log_keys.is_empty() {
                report.findings.push(finding(code, message));
            }
            return self.finish_pull_report(report, state, tree, None, unchanged);
        };
        // The root over the sequence pulled.
        let matches = tree.root_at(cp.size).is_ok_and(|r| r == cp.root);
        if !matches {
            report.findings.push(finding(
                Code::CheckpointMismatch,
                format!(
                    "remote {}'s checkpoint says {} entries with root {}, but {}",
                    self.remote.name,
                    cp.size,
                    encode_hash(&cp.root),
                    match tree.root_at(cp.size) {
                        Ok(r) => format!(
                            "the first {} entries of its sequence have root {}",
                            cp.size,
                            encode_hash(&r)
                        ),
                        Err(_) => format!("its sequence has only {} entries", tree.size()),
                    }
                ),
            ));
        }
        // Consistency with the last checkpoint this store saw.
        if let Some((size, root)) = &state.checkpoint {
            let (size, root) = (*size, parse_hash(root));
            if cp.size < size {
                report.findings.push(finding(
                    Code::RemoteRewound,
                    format!(
                        "remote {}'s checkpoint has {} entries, fewer than the {size} of the \
                         last checkpoint this store saw there",
                        self.remote.name, cp.size
                    ),
                ));
            } else if matches && root.is_some_and(|r| tree.root_at(size).ok() != Some(r)) {
                report.findings.push(finding(
                    Code::RemoteRewound,
                    format!(
                        "remote {}'s log is not consistent with the checkpoint of {size} \
                         entries this store saw there before",
                        self.remote.name
                    ),
                ));
            }
        }
        // The quorum of cosignatures.
        if let Some(policy) = checks.policy {
            match crate::witness::verify_witnessed(note, log_key, policy) {
                Ok(w) => {
                    report.cosigned_by = w
                        .cosigned
                        .iter()
                        .map(|(i, _)| policy.witnesses[*i].display_name())
                        .collect();
                    if !w.quorum && !checks.fresh {
                        report.findings.push(finding(
                            Code::WitnessQuorum,
                            format!(
                                "remote {}'s checkpoint is cosigned by {} of the policy's \
                                 witnesses ({}), which does not meet its quorum",
                                self.remote.name,
                                w.cosigned.len(),
                                report.cosigned_by.join(", ")
                            ),
                        ));
                    }
                }
                Err(e) => report.findings.push(finding(
                    Code::WitnessQuorum,
                    format!("remote {}'s checkpoint: {e}", self.remote.name),
                )),
            }
            if checks.fresh {
                self.ask_fresh(policy, &cp, note, &tree, checks.timeout, &mut report);
            }
        }
        let verified = matches.then_some(&cp);
        self.finish_pull_report(report, state, tree, verified, unchanged)
    }

    /// `--witness-fresh`: submits the checkpoint to each witness from its own size; a
    /// witness that has cosigned a larger or another tree of this log makes it rewound.
    fn ask_fresh(
        &self,
        policy: &Policy,
        cp: &Checkpoint,
        note: &Note,
        tree: &Tree,
        timeout: Duration,
        report: &mut PullReport,
    ) {
        let client = Client::new(timeout);
        let proof = |m: u64| tree.consistency_proof(m, cp.size).ok();
        let log_only = Note {
            text: note.text.clone(),
            signatures: note
                .signatures
                .iter()
                .filter(|s| s.name == cp.origin)
                .cloned()
                .collect(),
        };
        let mut fresh = HashSet::new();
        let mut failed = Vec::new();
        for (i, w) in policy.witnesses.iter().enumerate() {
            let name = w.display_name();
            let Some(url) = &w.url else {
                failed.push(format!("{name}: no URL in the policy"));
                continue;
            };
            let wit = Witness {
                name: &name,
                vkey: &w.vkey,
                url,
            };
            match cosign(&client, &wit, cp, &log_only, cp.size, &proof) {
                Outcome::Cosigned { .. } => {
                    fresh.insert(i);
                    report.fresh_by.push(name);
                }
                Outcome::Ahead { witness_size } => report.findings.push(Finding {
                    code: Code::RemoteRewound,
                    message: format!(
                        "witness {name} has cosigned {witness_size} entries of log {}, more \
                         than the {} the remote's checkpoint shows: the remote was rewound",
                        cp.origin, cp.size
                    ),
                }),
                Outcome::Inconsistent { message } => report.findings.push(Finding {
                    code: Code::RemoteRewound,
                    message: format!(
                        "witness {name} refused the remote's checkpoint as inconsistent with \
                         what it cosigned of log {} (422: {message}): the remote shows a \
                         forked or rewound log",
                        cp.origin
                    ),
                }),
                Outcome::Failed { message } => failed.push(format!("{name}: {message}")),
            }
        }
        if !policy.satisfied(|i| fresh.contains(&i)) {
            report.findings.push(Finding {
                code: Code::WitnessQuorum,
                message: format!(
                    "--witness-fresh: {} witness(es) cosigned the remote's checkpoint now ({}), \
                     which does not meet the policy's quorum{}",
                    fresh.len(),
                    report.fresh_by.join(", "),
                    if failed.is_empty() {
                        String::new()
                    } else {
                        format!("; no cosignature from {}", failed.join("; "))
                    }
                ),
            });
        }
    }

    fn finish_pull_report(
        &self,
        mut report: PullReport,
        mut state: WitnessState,
        tree: Tree,
        verified: Option<&Checkpoint>,
        unchanged: Option<&WitnessState>,
    ) -> Result<PullReport, SyncError> {
        report
            .findings
            .sort_by_key(|f| if f.code == Code::RemoteRewound { 0 } else { 1 });
        let rewound = report
            .findings
            .iter()
            .any(|f| f.code == Code::RemoteRewound);
        // What this store remembers only moves forward: a rewound remote leaves it as it was,
        // so the next pull says so again.
        if !rewound {
            if let Some(cp) = verified {
                state.checkpoint = Some((cp.size, encode_hash(&cp.root)));
            }
            state.size = tree.size();
            // `unchanged`: the state as loaded, its tree as kept; written again only if the
            // state differs from it (the tree, unchanged, is kept already).
            match unchanged {
                Some(loaded) if *loaded == state => {}
                Some(_) => self.save_witness_json(&state)?,
                None => self.save_witness_state(&state, &tree)?,
            }
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unseen_keeps_the_new_hashes_once_in_order_and_none_already_kept() {
        let h = |b: u8| [b; 32];
        let kept: Vec<Hash> = (0..200).map(h).collect();
        // 5 and 7 are kept; 250 comes twice; 251 shares its first two bytes with nothing.
        let new = vec![h(250), h(5), h(251), h(250), h(7), h(252)];
        assert_eq!(unseen(&kept, new), vec![h(250), h(251), h(252)]);
        assert_eq!(unseen(&[], vec![h(1), h(1)]), vec![h(1)]);
        assert_eq!(unseen(&kept, Vec::new()), Vec::<Hash>::new());
        // Same two first bytes, other hash: a filter hit that is no match.
        let mut other = h(5);
        other[31] = 0;
        assert_eq!(unseen(&kept, vec![other]), vec![other]);
    }

    #[test]
    fn levels_saved_are_loaded_back_as_the_same_tree() {
        let dir = tempfile::tempdir().unwrap();
        let tree = Tree::from_leaf_hashes((0..1000u32).map(|i| leaf_hash(&i.to_le_bytes())));
        for (h, level) in tree.levels().iter().enumerate() {
            save_level(&dir.path().join(format!("{h}")), level).unwrap();
        }
        let back = load_levels(dir.path(), 1000).unwrap();
        assert_eq!(back.root(), tree.root());
        let prefix = load_levels(dir.path(), 600).unwrap();
        assert_eq!(Some(prefix.root()), tree.root_at(600).ok());
        assert!(load_levels(dir.path(), 1001).is_none());
    }
}
