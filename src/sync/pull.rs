//! Pull: take from the remote the envelopes this store lacks, through the ordinary ingest.
//!
//! Only what is new is looked at: the tree diff between the commit pulled last time and the
//! remote's head, plus the envelopes refused last time (they may be accepted now that their
//! key is trusted). Refused envelopes are reported and stay in the remote; nothing the remote
//! says is believed except the bytes, which ingest judges against the local trust store.

use super::git::{Blob, Entry};
use super::local::{self, Ingested};
use super::remote::PendingEntry;
use super::{layout, Outcome, Rejected, Session, SyncError, PROGRESS_FROM};
use crate::envelope::MAX_ENVELOPE_BYTES;
use crate::error::Code;
use crate::store::Effect;

/// Envelopes verified and appended together (one fsync).
const INGEST_GROUP: usize = 1024;
use std::collections::BTreeSet;

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

        // Skip what the store holds already, judged by the path; the content decides the rest.
        let mut wanted = Vec::new();
        for e in entries {
            if let Some((id, digest)) = layout::parse_path(&e.path) {
                if local::has_envelope(store, id, digest)? {
                    continue;
                }
            }
            wanted.push(e);
        }
        if wanted.len() >= PROGRESS_FROM {
            self.note(&format!("pull: {} envelopes to check", wanted.len()));
        }

        let trust = local::trust(store)?;
        let oids: Vec<String> = wanted.iter().map(|e| e.blob.clone()).collect();
        let mut failure: Option<SyncError> = None;
        let stop = self.stop;
        let progress = self.progress && wanted.len() >= PROGRESS_FROM;
        // Envelopes are ingested in groups: verified on every core, appended with one fsync.
        let mut pending: Vec<(usize, Vec<u8>)> = Vec::new();
        let flush =
            |pending: &mut Vec<(usize, Vec<u8>)>, out: &mut Outcome| -> Result<(), SyncError> {
                if pending.is_empty() {
                    return Ok(());
                }
                let (indexes, bytes): (Vec<usize>, Vec<Vec<u8>>) = pending.drain(..).unzip();
                let results = local::ingest_batch(store, &trust, &bytes)?;
                for (i, result) in indexes.into_iter().zip(results) {
                    let entry = &wanted[i];
                    match result {
                        Ingested::Rejected(r) => out.rejections.push(Rejected {
                            path: entry.path.clone(),
                            blob: entry.blob.clone(),
                            code: r.code.as_str().to_owned(),
                            message: r.message,
                        }),
                        Ingested::Stored(Effect::Created) => out.created += 1,
                        Ingested::Stored(Effect::Merged) => out.merged += 1,
                        Ingested::Stored(Effect::Noop) => out.noop += 1,
                    }
                }
                Ok(())
            };
        repo.read_blobs(&oids, MAX_ENVELOPE_BYTES as u64, |i, blob| {
            let entry = &wanted[i];
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
                        if let Err(e) = flush(&mut pending, &mut out) {
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
            if let Err(e) = flush(&mut pending, &mut out) {
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
        if all_pushed && after == count + (out.created + out.merged) as u64 {
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
