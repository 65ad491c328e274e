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

use super::git::{Blob, Entry, Listed, Repo};
use super::memory;
use super::policies;
use super::remote::PendingEntry;
use super::{
    holds, layout, Conflict, Ignored, Outcome, Rejected, Session, SyncError, Unverified,
    LISTED_MAX, PAGE, PROGRESS_FROM,
};
use crate::envelope::MAX_ENVELOPE_BYTES;
use crate::error::{Code, Rejection};
use crate::keys::TrustSet;
use crate::store::{record, Effect, Staged, Store, StoreError};

use std::collections::HashSet;

/// Envelopes verified and appended together (one fsync), at most.
const INGEST_GROUP: usize = 1024;
/// Bytes of envelopes held for one group, at most: a group of large envelopes is appended
/// sooner.
const INGEST_GROUP_BYTES: usize = 32 << 20;
/// Refused entries kept in the state to be offered again by the next pull, at most.
pub(super) const PENDING_MAX: usize = 10_000;

/// An entry of the remote to look at, with the envelope its path names (claim id and
/// digest) when it has the layout's shape, and whether the store holds that envelope.
struct Wanted {
    entry: Entry,
    named: Option<(String, String)>,
    held: bool,
}

/// One pull's work in progress: what it found so far, and the envelopes read but not yet
/// ingested.
struct Run<'a> {
    store: &'a Store,
    trust: (TrustSet, u64),
    stop: &'a dyn Fn() -> bool,
    progress: bool,
    out: Outcome,
    /// Read, waiting to be ingested as one group: the entry and its bytes.
    group: Vec<(Wanted, Vec<u8>)>,
    group_bytes: usize,
    /// Refused entries to offer again next time (None: more than [`PENDING_MAX`]).
    pending: Option<Vec<PendingEntry>>,
    /// An envelope was stored from a path other than its own (or in other bytes than its
    /// canonical form): the remote does not hold it where push looks for it.
    elsewhere: bool,
}

impl Run<'_> {
    /// Looks at one page of the listing: skips what the store holds, reports submodules and
    /// other bytes at an envelope's path, reads the rest and ingests it. False: stopped.
    fn page(&mut self, repo: &Repo, listed: Vec<Listed>) -> Result<bool, SyncError> {
        let mut wanted = Vec::with_capacity(listed.len());
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
            wanted.push(Wanted { entry, named, held });
        }
        let oids: Vec<String> = wanted.iter().map(|w| w.entry.blob.clone()).collect();
        let mut wanted = wanted.into_iter();
        let mut failure = None;
        let mut stopped = false;
        repo.read_blobs(&oids, MAX_ENVELOPE_BYTES as u64, |_, blob| {
            let Some(w) = wanted.next() else {
                return Ok(false);
            };
            if let Err(e) = self.take(w, blob) {
                failure = Some(e);
                return Ok(false);
            }
            if (self.stop)() {
                stopped = true;
                return Ok(false);
            }
            Ok(true)
        })?;
        if let Some(e) = failure {
            return Err(e);
        }
        if self.progress && self.out.examined >= PROGRESS_FROM {
            eprintln!(
                "pull: {} entries of the remote looked at, {} envelopes read",
                self.out.examined, self.out.fetched
            );
        }
        Ok(!stopped)
    }

    /// One entry's blob: skipped (the store holds it), refused (unreadable, too large), or
    /// put in the group to ingest.
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
                self.refuse(&w.entry, Code::Unreadable, message);
            }
            Blob::TooLarge(n) => {
                let message =
                    format!("{n} bytes, over the limit of {MAX_ENVELOPE_BYTES} bytes (1 MiB)");
                self.refuse(&w.entry, Code::TooLarge, message);
            }
            Blob::Content(bytes) => {
                self.group_bytes += bytes.len();
                self.group.push((w, bytes));
                if self.group.len() >= INGEST_GROUP || self.group_bytes >= INGEST_GROUP_BYTES {
                    self.flush()?;
                }
            }
        }
        Ok(())
    }

    /// A refused entry: counted, listed (the first ones), and kept to be offered again.
    fn refuse(&mut self, entry: &Entry, code: Code, message: String) {
        self.out.rejected += 1;
        if self.out.rejections.len() < LISTED_MAX {
            self.out.rejections.push(Rejected {
                path: entry.path.clone(),
                blob: entry.blob.clone(),
                code: code.as_str().to_owned(),
                message,
            });
        }
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
    }

    /// Verifies the group on every core and appends what is accepted, with one fsync.
    fn flush(&mut self) -> Result<(), SyncError> {
        if self.group.is_empty() {
            return Ok(());
        }
        let (entries, bytes): (Vec<Wanted>, Vec<Vec<u8>>) =
            std::mem::take(&mut self.group).into_iter().unzip();
        self.group_bytes = 0;
        let results = ingest_batch(self.store, &self.trust, &bytes)?;
        for ((w, result), raw) in entries.into_iter().zip(results).zip(&bytes) {
            match result {
                Ingested::Rejected(r) => match crate::ingest::foreign_kind(raw) {
                    // Another kind of attestation: passed over, never a rejection.
                    Some(kind) => {
                        self.out.ignored += 1;
                        if self.out.ignored_entries.len() < LISTED_MAX {
                            self.out.ignored_entries.push(Ignored {
                                path: w.entry.path,
                                blob: w.entry.blob,
                                kind,
                            });
                        }
                    }
                    None => self.refuse(&w.entry, r.code, r.message),
                },
                Ingested::Stored {
                    effect,
                    claim_id,
                    digest,
                    unverified,
                } => {
                    match effect {
                        Effect::Created => self.out.created += 1,
                        Effect::Merged => self.out.merged += 1,
                        Effect::Noop => self.out.noop += 1,
                    }
                    if unverified > 0 && self.out.unverified.len() < LISTED_MAX {
                        self.out.unverified.push(Unverified {
                            id: claim_id.clone(),
                            signatures: unverified,
                        });
                    }
                    let own = w.named.as_ref() == Some(&(claim_id, digest.clone()))
                        && digest_hex(raw) == digest;
                    if effect != Effect::Noop && !own {
                        self.elsewhere = true;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Lowercase hex of the SHA-256 of an envelope's bytes (its identity, when they are its
/// canonical form: the form that travels).
fn digest_hex(bytes: &[u8]) -> String {
    hex::encode(record::envelope_digest(bytes))
}

/// What ingesting one envelope did.
#[derive(Debug)]
enum Ingested {
    Stored {
        effect: Effect,
        claim_id: String,
        /// Lowercase hex SHA-256 of its canonical form.
        digest: String,
        /// Signatures in it that no trusted key verified.
        unverified: usize,
    },
    Rejected(Rejection),
}

/// Runs the ordinary ingest on a batch of envelopes (staged on every core, verified against
/// the local trust state, never the remote's) and appends the accepted ones, in canonical
/// form, as one group: one fsync for the batch.
fn ingest_batch(
    store: &Store,
    trust: &(TrustSet, u64),
    batch: &[Vec<u8>],
) -> Result<Vec<Ingested>, StoreError> {
    use rayon::prelude::*;
    let verdicts: Vec<Result<Staged, Rejection>> = batch
        .par_iter()
        .map(|bytes| Staged::new(bytes, &trust.0, trust.1))
        .collect();
    let staged: Vec<Staged> = verdicts.iter().flatten().cloned().collect();
    let mut stored = if staged.is_empty() {
        Vec::new()
    } else {
        store.commit_group(staged)?
    }
    .into_iter();
    let mut out = Vec::with_capacity(batch.len());
    for v in verdicts {
        out.push(match v {
            Err(r) => Ingested::Rejected(r),
            Ok(staged) => match stored.next() {
                Some(Ok(effect)) => Ingested::Stored {
                    effect,
                    claim_id: staged.accepted.claim.id,
                    digest: hex::encode(staged.digest),
                    unverified: staged.accepted.unverified_signatures,
                },
                Some(Err(r)) => Ingested::Rejected(r),
                None => {
                    return Err(StoreError::Corrupt(
                        "the store returned fewer outcomes than envelopes".into(),
                    ))
                }
            },
        });
    }
    Ok(out)
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
        // Policies first: the claims their keys signed are then taken in this same pull.
        policies::pull(self.store, &repo, &head, &mut out)?;
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
        let mut run = Run {
            store,
            trust: store.trust_snapshot()?,
            stop: self.stop,
            progress: self.progress,
            out,
            group: Vec::new(),
            group_bytes: 0,
            pending: Some(Vec::new()),
            elsewhere: false,
        };
        let mut going = true;
        if base.as_deref() != Some(head.as_str()) {
            repo.entries(base.as_deref(), &head, layout::LAYOUT_DIR, PAGE, |page| {
                let page: Vec<Listed> = page
                    .into_iter()
                    .filter(|l| match l {
                        Listed::File(e) => !offered.contains(&(e.path.as_str(), e.blob.as_str())),
                        Listed::Submodule(_) => true,
                    })
                    .collect();
                going = run.page(&repo, page)?;
                Ok::<bool, SyncError>(going)
            })?;
        }
        for chunk in again.chunks(PAGE) {
            if !going {
                break;
            }
            going = run.page(&repo, chunk.iter().cloned().map(Listed::File).collect())?;
        }
        run.flush()?;
        let Run {
            mut out,
            pending,
            elsewhere,
            ..
        } = run;
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
        let dir = crate::scratch::ScratchDir::new("elench-pull");
        let (store, _) = Store::init(
            &dir.path().join("store"),
            &crate::store::Options::new(std::time::Duration::from_secs(5)),
        )
        .unwrap();
        let stop = || false;
        let mut run = Run {
            store: &store,
            trust: store.trust_snapshot().unwrap(),
            stop: &stop,
            progress: false,
            out: Outcome::default(),
            group: Vec::new(),
            group_bytes: 0,
            pending: Some(Vec::new()),
            elsewhere: false,
        };
        let entry = |i: usize| Entry {
            path: format!("v1/junk/{i}"),
            blob: format!("{i:040x}"),
        };
        for i in 0..PENDING_MAX {
            run.refuse(&entry(i), Code::BadJson, "not JSON".into());
        }
        assert_eq!(run.pending.as_ref().map(Vec::len), Some(PENDING_MAX));
        assert_eq!(run.out.rejections.len(), LISTED_MAX);
        run.refuse(&entry(PENDING_MAX), Code::BadJson, "not JSON".into());
        assert!(run.pending.is_none());
        run.refuse(&entry(PENDING_MAX + 1), Code::BadJson, "not JSON".into());
        assert!(run.pending.is_none());
        // Counted exactly, listed up to the bound.
        assert_eq!(run.out.rejected, PENDING_MAX + 2);
        assert_eq!(run.out.rejections.len(), LISTED_MAX);
        assert_eq!(run.out.rejections[0].path, "v1/junk/0");
    }
}
