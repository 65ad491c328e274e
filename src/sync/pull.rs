//! Pull: take from the remote the envelopes this store lacks, through the ordinary ingest.
//!
//! Only what is new is looked at: the tree diff between the commit pulled last time and the
//! remote's head, plus the envelopes refused last time (they may be accepted now that their
//! key is trusted). Refused envelopes are reported and stay in the remote; other kinds of
//! attestation (another payloadType or predicateType) are counted as ignored, never refused.
//! Nothing the remote says is believed except the bytes, which ingest judges against the
//! local trust store: a path is taken as the envelope it names only if it holds its bytes.

use super::git::{Blob, Entry};
use super::local::{self, Ingested};
use super::remote::PendingEntry;
use super::{
    layout, Conflict, Ignored, Outcome, Rejected, Session, SyncError, Unverified, PROGRESS_FROM,
};
use crate::envelope::MAX_ENVELOPE_BYTES;
use crate::error::Code;
use crate::store::Effect;

use std::collections::BTreeSet;

/// Envelopes verified and appended together (one fsync).
const INGEST_GROUP: usize = 1024;

/// An entry of the remote to look at, with the envelope its path names (claim id and
/// digest) when it has the layout's shape, and whether the store holds that envelope.
struct Wanted {
    entry: Entry,
    named: Option<(String, String)>,
    held: bool,
}

impl Session<'_> {
    pub fn pull(&mut self) -> Result<Outcome, SyncError> {
        let (repo, head) = self.connect()?;
        let mut out = Outcome {
            object_format: Some(repo.format.as_str()),
            remote_head: head.clone(),
            ..Outcome::default()
        };
        let Some(head) = head else {
            return Ok(out);
        };
        let store = self.store;
        let count = local::envelope_count(store)?;
        // Whether the remote already holds every local envelope (see the end).
        let all_pushed = self.push_start(&repo, Some(&head))? == count;
        // The last pull's commit is a valid starting point only if it is still here and the
        // local log has not shrunk (a repair moves damaged records aside; pull them again).
        let base = match &self.state.pulled {
            Some(p) if self.state.pulled_local <= count && repo.has_commit(p)? => Some(p.clone()),
            _ => None,
        };
        let mut entries: Vec<Entry> = match &base {
            Some(b) if *b == head => Vec::new(),
            Some(b) => repo.added(b, &head, layout::LAYOUT_DIR)?,
            None => repo.list(&head, layout::LAYOUT_DIR)?,
        };
        if base.is_some() {
            entries.extend(self.state.pending.iter().map(|p| Entry {
                path: p.path.clone(),
                blob: p.blob.clone(),
            }));
        }
        let mut seen = BTreeSet::new();
        entries.retain(|e| seen.insert((e.path.clone(), e.blob.clone())));
        out.examined = entries.len();

        // What the store holds already is skipped, judged by the path and then by the bytes:
        // a path counts as the envelope it names only if it holds that envelope's canonical
        // bytes (whatever the remote's paths say, their content decides).
        let mut wanted = Vec::new();
        for e in entries {
            let named = layout::parse_path(&e.path).map(|(id, d)| (id.to_owned(), d.to_owned()));
            let held = match &named {
                Some((id, digest)) => local::has_envelope(store, id, digest)?,
                None => false,
            };
            wanted.push(Wanted {
                entry: e,
                named,
                held,
            });
        }
        if wanted.len() >= PROGRESS_FROM {
            self.note(&format!("pull: {} envelopes to check", wanted.len()));
        }

        let trust = local::trust(store)?;
        let oids: Vec<String> = wanted.iter().map(|w| w.entry.blob.clone()).collect();
        let mut failure: Option<SyncError> = None;
        let stop = self.stop;
        let progress = self.progress && wanted.len() >= PROGRESS_FROM;
        // Whether an envelope was stored from a path other than its own (or in other bytes
        // than its canonical form): the remote does not hold it where push looks for it.
        let mut elsewhere = false;
        // Envelopes are ingested in groups: verified on every core, appended with one fsync.
        let mut pending: Vec<(usize, Vec<u8>)> = Vec::new();
        let flush = |pending: &mut Vec<(usize, Vec<u8>)>,
                     out: &mut Outcome,
                     elsewhere: &mut bool|
         -> Result<(), SyncError> {
            if pending.is_empty() {
                return Ok(());
            }
            let (indexes, bytes): (Vec<usize>, Vec<Vec<u8>>) = pending.drain(..).unzip();
            let results = local::ingest_batch(store, &trust, &bytes)?;
            for ((i, result), raw) in indexes.into_iter().zip(results).zip(&bytes) {
                let w = &wanted[i];
                match result {
                    Ingested::Rejected(r) => match crate::ingest::foreign_kind(raw) {
                        // Another kind of attestation: passed over, never a rejection.
                        Some(kind) => {
                            out.ignored += 1;
                            out.ignored_entries.push(Ignored {
                                path: w.entry.path.clone(),
                                blob: w.entry.blob.clone(),
                                kind,
                            });
                        }
                        None => out.rejections.push(Rejected {
                            path: w.entry.path.clone(),
                            blob: w.entry.blob.clone(),
                            code: r.code.as_str().to_owned(),
                            message: r.message,
                        }),
                    },
                    Ingested::Stored {
                        effect,
                        claim_id,
                        digest,
                        unverified,
                    } => {
                        match effect {
                            Effect::Created => out.created += 1,
                            Effect::Merged => out.merged += 1,
                            Effect::Noop => out.noop += 1,
                        }
                        if unverified > 0 {
                            out.unverified.push(Unverified {
                                id: claim_id.clone(),
                                signatures: unverified,
                            });
                        }
                        let own = w.named.as_ref() == Some(&(claim_id, digest.clone()))
                            && local::digest_hex(raw) == digest;
                        if effect != Effect::Noop && !own {
                            *elsewhere = true;
                        }
                    }
                }
            }
            Ok(())
        };
        repo.read_blobs(&oids, MAX_ENVELOPE_BYTES as u64, |i, blob| {
            let w = &wanted[i];
            let entry = &w.entry;
            if let (Blob::Content(bytes), Some((_, digest))) = (&blob, &w.named) {
                if local::digest_hex(bytes) == *digest {
                    if w.held {
                        // The envelope the path names, which the store holds.
                        return Ok(true);
                    }
                } else {
                    // Other bytes than the envelope the path names: report them, then let
                    // ingest judge them like any others.
                    out.conflicts.push(Conflict {
                        path: entry.path.clone(),
                        envelope_path: entry.path.clone(),
                        placed_at: None,
                    });
                }
            }
            let reject = |out: &mut Outcome, code: Code, message: String| {
                out.rejections.push(Rejected {
                    path: entry.path.clone(),
                    blob: entry.blob.clone(),
                    code: code.as_str().to_owned(),
                    message,
                });
            };
            out.fetched += 1;
            match blob {
                Blob::Missing => reject(
                    &mut out,
                    Code::Unreadable,
                    format!(
                        "the remote's tree names blob {}, which git cannot read",
                        entry.blob
                    ),
                ),
                Blob::TooLarge(n) => reject(
                    &mut out,
                    Code::TooLarge,
                    format!("{n} bytes, over the limit of {MAX_ENVELOPE_BYTES} bytes (1 MiB)"),
                ),
                Blob::Content(bytes) => {
                    pending.push((i, bytes));
                    if pending.len() >= INGEST_GROUP {
                        if let Err(e) = flush(&mut pending, &mut out, &mut elsewhere) {
                            failure = Some(e);
                            return Ok(false);
                        }
                    }
                }
            }
            if progress && out.fetched.is_multiple_of(1000) {
                eprintln!("pull: {}/{} envelopes", out.fetched, wanted.len());
            }
            if stop() {
                out.interrupted = true;
                return Ok(false);
            }
            Ok(true)
        })?;
        if failure.is_none() {
            if let Err(e) = flush(&mut pending, &mut out, &mut elsewhere) {
                failure = Some(e);
            }
        }
        out.rejected = out.rejections.len();
        if let Some(f) = failure {
            return Err(f);
        }
        // A long pull ends with the index on disk, as a long `add` does (store::index::unsynced).
        if (out.created + out.merged) as u64 >= crate::store::SYNC_AFTER {
            store.sync_index()?;
        }
        if out.interrupted {
            // Nothing recorded: the next pull looks at the same envelopes again and skips
            // the ones stored meanwhile.
            return Ok(out);
        }
        let after = local::envelope_count(store)?;
        // If the remote held every local envelope before this pull, and every envelope
        // appended since came from this pull (none from another writer), it holds them all
        // now: the next push need not look at what was just pulled.
        // Not so if one came from another path than its own: the next push writes it there.
        if all_pushed && !elsewhere && after == count + (out.created + out.merged) as u64 {
            self.state.pushed = Some(head.clone());
            self.state.pushed_pos = after;
        }
        self.state.pulled = Some(head);
        self.state.pulled_local = after;
        self.state.pending = out
            .rejections
            .iter()
            .map(|r| PendingEntry {
                path: r.path.clone(),
                blob: r.blob.clone(),
            })
            .collect();
        self.save()?;
        Ok(out)
    }
}
