//! Pull: take from the remote the envelopes this store lacks, through the ordinary ingest.
//!
//! Only what is new is looked at: the tree diff between the commit pulled last time and the
//! remote's head, plus the envelopes refused last time (they may be accepted now that their
//! key is trusted). Refused envelopes are reported and stay in the remote; other kinds of
//! attestation (another payloadType or predicateType) are counted as ignored, never refused.
//! Nothing the remote says is believed except the bytes, which ingest judges against the
//! local trust store: a path is taken as the envelope it names only if it holds its bytes.
//!
//! Memory is bounded whatever the remote holds: the listing is read a page at a time as git
//! writes it, envelopes are ingested in groups bounded by count and by bytes, the lists of the
//! outcome keep their first [`LISTED_MAX`] items (their counts are exact), and at most
//! [`PENDING_MAX`] refusals are kept to offer again: past that, the pull records no new
//! starting point, so the next one looks at the same entries again.

use super::git::{Blob, BlobStream, Entry, Listed, Repo};
use super::memory;
use super::policies;
use super::remote::{PendingEntry, TrustListed};
use super::{
    holds, layout, Conflict, Ignored, Outcome, Rejected, Session, SyncError, Unverified,
    LEAVES_KEPT, LISTED_MAX, PAGE, PROGRESS_FROM,
};
use crate::envelope::MAX_ENVELOPE_BYTES;
use crate::error::Code;
use crate::keys::TrustSet;
use crate::store::{record, Effect, Staged, Store, StoreError};

use std::collections::{HashSet, VecDeque};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

/// Envelopes verified together on every core, at most.
const INGEST_GROUP: usize = 1024;
/// Bytes of envelopes held for one group, at most: a group of large envelopes is verified
/// and appended sooner.
const INGEST_GROUP_BYTES: usize = 16 << 20;
/// Envelopes appended as one group (one fsync of the log, one of the index), at most: when
/// verified groups wait for the appender, it appends them together, up to this many and
/// [`INGEST_GROUP_BYTES`] bytes, so that a pull whose disk syncs are slower than its
/// verification pays fewer of them.
const APPEND_GROUP: usize = 4 * INGEST_GROUP;
/// Refused entries kept in the state to be offered again by the next pull, at most.
pub(super) const PENDING_MAX: usize = 10_000;

/// An entry of the remote to look at, with the envelope its path names (claim id and
/// digest) when it has the layout's shape, and whether the store holds that envelope.
struct Wanted {
    entry: Entry,
    named: Option<(String, String)>,
    held: bool,
}

/// Groups read and waiting for the verifier, at most: how far reading may run ahead of
/// verifying.
const READ_AHEAD: usize = 1;
/// Groups verified and waiting for the appender, at most: how far verifying may run ahead
/// of the appends (and how many groups the appender may take as one).
const AHEAD: usize = 3;
/// Entries whose blobs are asked for ahead of the one being taken, at most: git reads and
/// inflates them meanwhile.
const ASKED_AHEAD: usize = 2 * PAGE;

/// One pull's reading side: what it found so far, the entries whose blobs are asked for,
/// and the envelopes read but not yet verified. Each group read goes to the verifier (a
/// thread of its own, [`verify`], which verifies it on every core while the next group is
/// read), then to the appender (another, [`append`]), which appends and counts.
struct Run<'a> {
    store: &'a Store,
    repo: &'a Repo,
    stop: &'a dyn Fn() -> bool,
    progress: bool,
    /// What the reading side counts: entries examined, envelopes fetched, conflicts.
    out: Outcome,
    /// The blobs of these entries are asked for, in this order.
    asked: VecDeque<Wanted>,
    /// One `cat-file --batch` for the whole pull, started with the first blob asked for.
    blobs: Option<BlobStream>,
    /// Read, waiting to be verified as one group: the entry and its bytes.
    group: Vec<(Wanted, Vec<u8>)>,
    group_bytes: usize,
    /// Entries refused before verification (unreadable, too large), going with the next
    /// group so that every refusal is counted in one place.
    refused: Vec<Judged>,
    /// To the verifier; None once it or the appender stopped (the appender says why when
    /// joined).
    verifier: Option<SyncSender<Read>>,
    /// Stopped by a signal.
    stopped: bool,
    /// How many leaf hashes of the blobs read are kept for the checkpoint's sequence: those
    /// of each group that still fits under [`LEAVES_KEPT`].
    leaves: usize,
}

/// A group read, for the verifier: the entries refused before verification, the entries
/// read with their bytes, and whether their leaf hashes are kept.
struct Read {
    refused: Vec<Judged>,
    group: Vec<(Wanted, Vec<u8>)>,
    keep: bool,
}

/// A group verified, for the appender: every entry judged, in the order read, the bytes of
/// the envelopes to append, and the leaf hashes (None: not kept).
struct Verified {
    judged: Vec<Judged>,
    bytes: usize,
    leaves: Option<Vec<Leaf>>,
}

/// What verifying an entry's bytes found.
enum Verdict {
    Refused(Code, String),
    /// Another kind of attestation than an elench claim (its kind).
    Foreign(String),
    /// Verified and ready to append; true when the path it came from is its own and holds its
    /// canonical bytes.
    Staged(Box<Staged>, bool),
}

struct Judged {
    entry: Entry,
    verdict: Verdict,
}

/// A blob's leaf hash for the checkpoint's sequence, computed as the blob is verified.
type Leaf = (super::BlobKey, crate::witness::merkle::Hash);

impl Run<'_> {
    /// Looks at one page of the listing: skips what the store holds, reports submodules,
    /// asks for the blobs of the rest, and takes the blobs asked for before, keeping at most
    /// [`ASKED_AHEAD`] asked and not taken. False: stopped.
    fn page(&mut self, listed: Vec<Listed>) -> Result<bool, SyncError> {
        let mut oids = Vec::with_capacity(listed.len());
        for l in listed {
            self.out.examined += 1;
            let entry = match l {
                Listed::File(e) => e,
                // No bytes to judge: say what stands where an envelope could be.
                Listed::Submodule(path) => {
                    self.out.conflict(Conflict {
                        path: path.clone(),
                        envelope_path: path,
                        placed_at: None,
                        submodule: true,
                    });
                    continue;
                }
            };
            // What the store holds already is skipped, judged by the path and then by the
            // bytes: a path counts as the envelope it names only if it holds that envelope's
            // canonical bytes (whatever the remote's paths say, their content decides).
            let named =
                layout::parse_path(&entry.path).map(|(id, d)| (id.to_owned(), d.to_owned()));
            let held = match &named {
                Some((id, digest)) => holds(self.store, id, digest)?,
                None => false,
            };
            oids.push(entry.blob.clone());
            self.asked.push_back(Wanted { entry, named, held });
        }
        if !oids.is_empty() {
            let blobs = match self.blobs.as_mut() {
                Some(b) => b,
                None => self
                    .blobs
                    .insert(self.repo.blob_stream(MAX_ENVELOPE_BYTES as u64)?),
            };
            blobs.request(oids)?;
        }
        let going = self.take_until(ASKED_AHEAD)?;
        if self.progress && self.out.examined >= PROGRESS_FROM {
            eprintln!(
                "pull: {} entries of the remote looked at, {} envelopes read",
                self.out.examined, self.out.fetched
            );
        }
        Ok(going)
    }

    /// Takes blobs asked for until at most `left` are left asked for. False: stopped.
    fn take_until(&mut self, left: usize) -> Result<bool, SyncError> {
        while self.asked.len() > left {
            let (Some(w), Some(blobs)) = (self.asked.pop_front(), self.blobs.as_mut()) else {
                break;
            };
            let blob = blobs.next_blob()?;
            self.take(w, blob)?;
            if self.verifier.is_none() {
                // The appender stopped; joining it says why.
                return Ok(false);
            }
            if (self.stop)() {
                self.stopped = true;
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// One entry's blob: skipped (the store holds it), refused (unreadable, too large), or
    /// put in the group to verify.
    fn take(&mut self, w: Wanted, blob: Blob) -> Result<(), SyncError> {
        if let (Blob::Content(bytes), Some((_, digest))) = (&blob, &w.named) {
            if digest_hex(bytes) == *digest {
                if w.held {
                    // The envelope the path names, which the store holds.
                    return Ok(());
                }
            } else {
                // Other bytes than the envelope the path names: report them, then let
                // ingest judge them like any others.
                self.out.conflict(Conflict {
                    path: w.entry.path.clone(),
                    envelope_path: w.entry.path.clone(),
                    placed_at: None,
                    submodule: false,
                });
            }
        }
        self.out.fetched += 1;
        match blob {
            Blob::Missing => {
                let message = format!(
                    "the remote's tree names blob {}, which git cannot read",
                    w.entry.blob
                );
                self.refused.push(Judged {
                    entry: w.entry,
                    verdict: Verdict::Refused(Code::Unreadable, message),
                });
            }
            Blob::TooLarge(n) => {
                let message =
                    format!("{n} bytes, over the limit of {MAX_ENVELOPE_BYTES} bytes (1 MiB)");
                self.refused.push(Judged {
                    entry: w.entry,
                    verdict: Verdict::Refused(Code::TooLarge, message),
                });
            }
            Blob::Content(bytes) => {
                self.group_bytes += bytes.len();
                self.group.push((w, bytes));
                if self.group.len() >= INGEST_GROUP || self.group_bytes >= INGEST_GROUP_BYTES {
                    self.flush();
                }
            }
        }
        Ok(())
    }

    /// Hands the group read to the verifier.
    fn flush(&mut self) {
        if self.group.is_empty() && self.refused.is_empty() {
            return;
        }
        let group = std::mem::take(&mut self.group);
        self.group_bytes = 0;
        let keep = self.leaves + group.len() <= LEAVES_KEPT;
        if keep {
            self.leaves += group.len();
        }
        let read = Read {
            refused: std::mem::take(&mut self.refused),
            group,
            keep,
        };
        let sent = self.verifier.as_ref().is_some_and(|v| v.send(read).is_ok());
        if !sent {
            self.verifier = None;
        }
    }

    /// Takes every blob asked for (unless stopped), verifies what is in hand and ends the
    /// stream. False: stopped.
    fn finish(&mut self) -> Result<bool, SyncError> {
        let going = !self.stopped && self.take_until(0)?;
        self.flush();
        if let Some(blobs) = self.blobs.take() {
            if going && self.verifier.is_some() {
                blobs.finish()?;
            }
        }
        Ok(going)
    }
}

/// The verifier: verifies each group read on every core, in the order read, and hands it to
/// the appender.
fn verify(trust: &(TrustSet, u64), reads: Receiver<Read>, to_append: SyncSender<Verified>) {
    while let Ok(read) = reads.recv() {
        if to_append.send(judge(read, trust)).is_err() {
            return; // the appender stopped
        }
    }
}

/// Verifies a group read on every core.
fn judge(read: Read, trust: &(TrustSet, u64)) -> Verified {
    use rayon::prelude::*;
    let (trust, generation) = (&trust.0, trust.1);
    let Read {
        mut refused,
        group,
        keep,
    } = read;
    let (verified, leaves): (Vec<Judged>, Vec<Option<Leaf>>) = group
        .into_par_iter()
        .with_max_len(crate::store::VERIFY_PIECE)
        .map(|(w, raw)| {
            let leaf = keep
                .then(|| super::blob_key(&w.entry.blob))
                .flatten()
                .map(|key| (key, crate::witness::merkle::leaf_hash(&raw)));
            let verdict = match Staged::new(&raw, trust, generation) {
                Ok(staged) => {
                    let own = raw == staged.canonical
                        && w.named.as_ref().is_some_and(|(id, digest)| {
                            *id == staged.accepted.claim.id && *digest == hex::encode(staged.digest)
                        });
                    Verdict::Staged(Box::new(staged), own)
                }
                Err(r) => match crate::ingest::foreign_kind(&raw) {
                    Some(kind) => Verdict::Foreign(kind),
                    None => Verdict::Refused(r.code, r.message),
                },
            };
            (
                Judged {
                    entry: w.entry,
                    verdict,
                },
                leaf,
            )
        })
        .unzip();
    let bytes = verified
        .iter()
        .map(|j| match &j.verdict {
            Verdict::Staged(s, _) => s.canonical.len(),
            _ => 0,
        })
        .sum();
    refused.extend(verified);
    Verified {
        judged: refused,
        bytes,
        leaves: keep.then(|| leaves.into_iter().flatten().collect()),
    }
}

/// What the appender counts: what the verified envelopes did when appended, and every
/// refusal.
struct Tally {
    created: usize,
    merged: usize,
    noop: usize,
    rejected: usize,
    rejections: Vec<Rejected>,
    ignored: usize,
    ignored_entries: Vec<Ignored>,
    unverified: Vec<Unverified>,
    /// Refused entries to offer again next time (None: more than [`PENDING_MAX`]).
    pending: Option<Vec<PendingEntry>>,
    /// An envelope was stored from a path other than its own (or in other bytes than its
    /// canonical form): the remote does not hold it where push looks for it.
    elsewhere: bool,
    /// The leaf hashes kept of the blobs verified.
    leaves: Vec<Leaf>,
}

impl Tally {
    fn new() -> Tally {
        Tally {
            created: 0,
            merged: 0,
            noop: 0,
            rejected: 0,
            rejections: Vec::new(),
            ignored: 0,
            ignored_entries: Vec::new(),
            unverified: Vec::new(),
            pending: Some(Vec::new()),
            elsewhere: false,
            leaves: Vec::new(),
        }
    }

    /// A refused entry: counted, listed (the first ones), and kept to be offered again.
    fn refuse(&mut self, entry: Entry, code: Code, message: String) {
        self.rejected += 1;
        if let Some(p) = &mut self.pending {
            if p.len() < PENDING_MAX {
                p.push(PendingEntry {
                    path: entry.path.clone(),
                    blob: entry.blob.clone(),
                });
            } else {
                self.pending = None;
            }
        }
        if self.rejections.len() < LISTED_MAX {
            self.rejections.push(Rejected {
                path: entry.path,
                blob: entry.blob,
                code: code.as_str().to_owned(),
                message,
            });
        }
    }

    /// Appends a judged group's verified envelopes (one fsync) and counts what each entry
    /// came to.
    fn append(&mut self, store: &Store, group: Vec<Judged>) -> Result<(), StoreError> {
        let mut staged = Vec::new();
        let mut rest = Vec::with_capacity(group.len());
        for j in group {
            match j.verdict {
                Verdict::Staged(s, own) => {
                    rest.push((
                        j.entry,
                        Ok((
                            s.accepted.claim.id.clone(),
                            s.accepted.unverified_signatures,
                            own,
                        )),
                    ));
                    staged.push(*s);
                }
                other => rest.push((j.entry, Err(other))),
            }
        }
        let mut stored = if staged.is_empty() {
            Vec::new()
        } else {
            store.commit_group(staged)?
        }
        .into_iter();
        for (entry, judged) in rest {
            match judged {
                Err(Verdict::Foreign(kind)) => {
                    // Another kind of attestation: passed over, never a rejection.
                    self.ignored += 1;
                    if self.ignored_entries.len() < LISTED_MAX {
                        self.ignored_entries.push(Ignored {
                            path: entry.path,
                            blob: entry.blob,
                            kind,
                        });
                    }
                }
                Err(Verdict::Refused(code, message)) => self.refuse(entry, code, message),
                Err(Verdict::Staged(..)) => {}
                Ok((claim_id, unverified, own)) => match stored.next() {
                    Some(Ok(effect)) => {
                        match effect {
                            Effect::Created => self.created += 1,
                            Effect::Merged => self.merged += 1,
                            Effect::Noop => self.noop += 1,
                        }
                        if unverified > 0 && self.unverified.len() < LISTED_MAX {
                            self.unverified.push(Unverified {
                                id: claim_id,
                                signatures: unverified,
                            });
                        }
                        if effect != Effect::Noop && !own {
                            self.elsewhere = true;
                        }
                    }
                    Some(Err(r)) => self.refuse(entry, r.code, r.message),
                    None => {
                        return Err(StoreError::Corrupt(
                            "the store returned fewer outcomes than envelopes".into(),
                        ))
                    }
                },
            }
        }
        Ok(())
    }
}

/// The appender: appends each verified group as it comes, and counts. Groups that waited
/// for it are appended together (up to [`APPEND_GROUP`] envelopes and [`INGEST_GROUP_BYTES`]
/// bytes), in the order read.
fn append(store: &Store, groups: Receiver<Verified>) -> Result<Tally, StoreError> {
    let mut tally = Tally::new();
    while let Ok(first) = groups.recv() {
        let (mut count, mut bytes) = (first.judged.len(), first.bytes);
        let mut taken = vec![first];
        while count < APPEND_GROUP && bytes < INGEST_GROUP_BYTES {
            let Ok(next) = groups.try_recv() else { break };
            count += next.judged.len();
            bytes += next.bytes;
            taken.push(next);
        }
        let mut judged = Vec::with_capacity(count);
        for v in taken {
            judged.extend(v.judged);
            tally.leaves.extend(v.leaves.into_iter().flatten());
        }
        tally.append(store, judged)?;
    }
    Ok(tally)
}

/// Lowercase hex of the SHA-256 of an envelope's bytes (its identity, when they are its
/// canonical form: the form that travels).
fn digest_hex(bytes: &[u8]) -> String {
    hex::encode(record::envelope_digest(bytes))
}

impl Session<'_> {
    pub fn pull(&mut self) -> Result<Outcome, SyncError> {
        let (repo, head) = self.connect()?;
        let store = self.store;
        // Before anything is taken: does the remote still hold what it held?
        let rewound = match &self.state.held {
            Some(held) => memory::lost(store, &repo, held, head.as_deref())?,
            None => None,
        };
        let mut out = Outcome {
            object_format: Some(repo.format.as_str()),
            remote_head: head.clone(),
            rewound: rewound.clone(),
            ..Outcome::default()
        };
        let Some(head) = head else {
            return Ok(out);
        };
        self.list_sequence_ahead(&repo, &head);
        // Policies first: the claims their keys signed are then taken in this same pull.
        let listed = self
            .state
            .trust_listed
            .as_ref()
            .filter(|t| t.commit == head)
            .map(|t| t.digests.as_slice());
        let listed = policies::pull(self.store, &repo, &head, listed, &mut out)?;
        self.state.trust_listed = listed.map(|digests| TrustListed {
            commit: head.clone(),
            digests,
        });
        let store = self.store;
        let count = store.envelope_count()?;
        // Whether the remote already holds every local envelope (see the end).
        let all_pushed = self.push_start(&repo, Some(&head))? == count;
        // The last pull's commit is a valid starting point only if it is still here and the
        // local log has not shrunk (a repair moves damaged records aside; pull them again).
        let base = match &self.state.pulled {
            Some(p) if self.state.pulled_local <= count && repo.has_commit(p)? => Some(p.clone()),
            _ => None,
        };
        // Refused last time: offered again after what is new (once each, so an entry both
        // new and refused before is looked at as a refused one).
        let again: Vec<Entry> = match &base {
            Some(_) => self
                .state
                .pending
                .iter()
                .map(|p| Entry {
                    path: p.path.clone(),
                    blob: p.blob.clone(),
                })
                .collect(),
            None => Vec::new(),
        };
        let offered: HashSet<(&str, &str)> = again
            .iter()
            .map(|e| (e.path.as_str(), e.blob.as_str()))
            .collect();
        let trust = store.trust_snapshot()?;
        let stop = self.stop;
        let progress = self.progress;
        // Read here, verify and append on threads of their own: git reads the next blobs
        // while the cores verify the last group read and the one before is appended.
        let (out, going, tally) = std::thread::scope(|scope| {
            let (to_append, groups) = sync_channel::<Verified>(AHEAD);
            let appender = scope.spawn(move || append(store, groups));
            let (to_verify, reads) = sync_channel::<Read>(READ_AHEAD);
            let trust = &trust;
            let verifier = scope.spawn(move || verify(trust, reads, to_append));
            let mut run = Run {
                store,
                repo: &repo,
                stop,
                progress,
                out,
                asked: VecDeque::new(),
                blobs: None,
                group: Vec::new(),
                group_bytes: 0,
                refused: Vec::new(),
                verifier: Some(to_verify),
                stopped: false,
                leaves: 0,
            };
            let read = (|| -> Result<bool, SyncError> {
                let mut going = true;
                if base.as_deref() != Some(head.as_str()) {
                    repo.entries(base.as_deref(), &head, layout::LAYOUT_DIR, PAGE, |page| {
                        let page: Vec<Listed> = page
                            .into_iter()
                            .filter(|l| match l {
                                Listed::File(e) => {
                                    !offered.contains(&(e.path.as_str(), e.blob.as_str()))
                                }
                                Listed::Submodule(_) => true,
                            })
                            .collect();
                        going = run.page(page)?;
                        Ok::<bool, SyncError>(going)
                    })?;
                }
                for chunk in again.chunks(PAGE) {
                    if !going {
                        break;
                    }
                    going = run.page(chunk.iter().cloned().map(Listed::File).collect())?;
                }
                // What was read is verified and appended, stopped or not.
                let finished = run.finish()?;
                Ok(going && finished)
            })();
            // The verifier, then the appender, end with the last group sent.
            let Run {
                out,
                verifier: sender,
                blobs,
                stopped,
                ..
            } = run;
            drop(sender);
            drop(blobs);
            verifier
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            let tally = appender
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            // The appender's failure first: it is why reading stopped, if it did.
            let tally = tally?;
            let going = read? && !stopped;
            Ok::<_, SyncError>((out, going, tally))
        })?;
        self.leaves.extend(tally.leaves);
        let mut out = out;
        out.created += tally.created;
        out.merged += tally.merged;
        out.noop += tally.noop;
        out.rejected += tally.rejected;
        let room = LISTED_MAX.saturating_sub(out.rejections.len());
        out.rejections
            .extend(tally.rejections.into_iter().take(room));
        out.ignored += tally.ignored;
        out.ignored_entries = tally.ignored_entries;
        out.unverified = tally.unverified;
        let (pending, elsewhere) = (tally.pending, tally.elsewhere);
        out.interrupted = !going;
        // A long pull ends with the index on disk, as a long `add` does (store::index::unsynced).
        if (out.created + out.merged) as u64 >= crate::store::SYNC_AFTER {
            store.sync_index()?;
        }
        if out.interrupted {
            // Nothing recorded: the next pull looks at the same envelopes again and skips
            // the ones stored meanwhile.
            return Ok(out);
        }
        let Some(pending) = pending else {
            // More refusals than the state keeps: no new starting point either, so that
            // the next pull still offers every one of them again.
            return Ok(out);
        };
        let after = store.envelope_count()?;
        // If the remote held every local envelope before this pull, and every envelope
        // appended since came from this pull (none from another writer), it holds them all
        // now: the next push need not look at what was just pulled.
        // Not so if one came from another path than its own: the next push writes it there.
        if all_pushed && !elsewhere && after == count + (out.created + out.merged) as u64 {
            self.state.pushed = Some(head.clone());
            self.state.pushed_pos = after;
        }
        if rewound.is_none() {
            // Everything remembered is still there, and what the head holds was offered.
            self.state.held = Some(head.clone());
        }
        self.state.pulled = Some(head);
        self.state.pulled_local = after;
        self.state.pending = pending;
        self.save()?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_past_what_the_state_keeps_leave_no_starting_point() {
        let mut tally = Tally::new();
        let entry = |i: usize| Entry {
            path: format!("v1/junk/{i}"),
            blob: format!("{i:040x}"),
        };
        for i in 0..PENDING_MAX {
            tally.refuse(entry(i), Code::BadJson, "not JSON".into());
        }
        assert_eq!(tally.pending.as_ref().map(Vec::len), Some(PENDING_MAX));
        assert_eq!(tally.rejections.len(), LISTED_MAX);
        tally.refuse(entry(PENDING_MAX), Code::BadJson, "not JSON".into());
        assert!(tally.pending.is_none());
        tally.refuse(entry(PENDING_MAX + 1), Code::BadJson, "not JSON".into());
        assert!(tally.pending.is_none());
        // Counted exactly, listed up to the bound.
        assert_eq!(tally.rejected, PENDING_MAX + 2);
        assert_eq!(tally.rejections.len(), LISTED_MAX);
        assert_eq!(tally.rejections[0].path, "v1/junk/0");
    }
}
