//! Reading the log into an index: catch-up after a crash, `reindex`, `fsck --repair`, and
//! `fsck`'s independent rebuild all go through [`apply_log`].
//!
//! Every envelope record is verified again against the trust state at its position (the
//! fold of the trust events before it), on every core; its claim id is recomputed on the way.
//! A record that no longer verifies, is not in canonical form, or repeats an envelope is
//! damage: the log is never silently reinterpreted.

use super::index::{Index, Writer};
use super::log::{Head, Kind, Log, LogError, Record, Tail};
use super::record;
use super::{trust_set_of, StoreError};
use crate::envelope::Envelope;
use crate::ingest::{verify_json, Accepted};
use crate::keys::TrustSet;
use rayon::prelude::*;

/// Envelopes verified together (in parallel) before being applied in order.
const VERIFY_BATCH: usize = 4096;
/// Records per index transaction during a long rebuild.
const COMMIT_EVERY: u64 = 100_000;

struct Run<'i> {
    index: &'i Index,
    writer: Option<Writer<'i>>,
    trust: TrustSet,
    /// Envelope records read and not yet verified.
    batch: Vec<Record>,
    /// Envelope records verified and not yet applied: applied while the next batch is
    /// verified, so both cores stay busy.
    pending: Option<(Vec<Record>, Vec<Verdict>)>,
    since_commit: u64,
    progress: Option<&'i (dyn Fn(u64) + Sync)>,
}

/// What verifying a stored envelope found.
type Verdict = Result<Accepted, String>;

fn damaged(rec: &Record, reason: String) -> StoreError {
    StoreError::Corrupt(
        super::log::Damage {
            segment: rec.pos.segment,
            offset: rec.pos.offset,
            reason,
        }
        .to_string(),
    )
}

/// Verifies stored envelopes on every core.
fn verify_batch(batch: &[Record], trust: &TrustSet) -> Vec<Verdict> {
    batch
        .par_iter()
        .map(|rec| {
            // One reading of the JSON serves the canonical-form check and the checks.
            let json = Envelope::parse_json(&rec.payload)
                .map_err(|r| format!("the stored envelope is unreadable: {}", r.message))?;
            if record::canonical_of(&json)? != rec.payload {
                return Err("the envelope is not stored in canonical form".to_owned());
            }
            verify_json(&json, trust).map_err(|r| {
                format!(
                    "the envelope no longer verifies against the trust state at its \
                     position: {} {}",
                    r.code.as_str(),
                    r.message
                )
            })
        })
        .collect()
}

/// Applies verified envelopes in log order; the first one that failed is damage.
fn apply_verified(
    w: &mut Writer<'_>,
    batch: &[Record],
    verdicts: Vec<Verdict>,
) -> Result<(), StoreError> {
    for (rec, verdict) in batch.iter().zip(verdicts) {
        let accepted = verdict.map_err(|why| damaged(rec, why))?;
        let digest = record::envelope_digest(&rec.payload);
        if super::index::id_key(&accepted.claim.id).is_none() {
            return Err(damaged(rec, "the claim id is not a claim id".into()));
        }
        // A repeated envelope is found by the insert itself (no lookup per envelope).
        match w.apply_envelope(
            rec.pos,
            rec.chain,
            rec.frame_len,
            &digest,
            &accepted.claim,
            &accepted.signers,
        ) {
            Ok(_) => {}
            Err(super::index::IndexError::DuplicateEnvelope { .. }) => {
                return Err(damaged(
                    rec,
                    "the same envelope appears twice in the log".into(),
                ))
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

impl<'i> Run<'i> {
    fn writer(&mut self) -> Result<&mut Writer<'i>, StoreError> {
        if self.writer.is_none() {
            self.writer = Some(self.index.write()?);
        }
        self.writer
            .as_mut()
            .ok_or_else(|| StoreError::Corrupt("index writer vanished".into()))
    }

    /// Verifies the batch read so far while the previously verified one is applied.
    fn flush(&mut self) -> Result<(), StoreError> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.batch);
        let pending = self.pending.take();
        self.writer()?;
        let Run { writer, trust, .. } = self;
        let w = writer
            .as_mut()
            .ok_or_else(|| StoreError::Corrupt("index writer vanished".into()))?;
        let (applied, verdicts) = rayon::join(
            || match pending {
                Some((b, v)) => apply_verified(w, &b, v).map(|()| b.len() as u64),
                None => Ok(0),
            },
            || verify_batch(&batch, trust),
        );
        self.since_commit += applied?;
        self.pending = Some((batch, verdicts));
        self.maybe_commit()
    }

    /// Applies what is verified and not yet applied.
    fn drain(&mut self) -> Result<(), StoreError> {
        if let Some((b, v)) = self.pending.take() {
            apply_verified(self.writer()?, &b, v)?;
            self.since_commit += b.len() as u64;
            self.maybe_commit()?;
        }
        Ok(())
    }

    fn maybe_commit(&mut self) -> Result<(), StoreError> {
        if self.since_commit >= COMMIT_EVERY {
            if let Some(w) = self.writer.take() {
                let meta = w.commit()?;
                if let Some(p) = self.progress {
                    p(meta.head.records);
                }
            }
            self.since_commit = 0;
        }
        Ok(())
    }

    fn event(&mut self, rec: &Record) -> Result<(), StoreError> {
        // A trust event changes what later envelopes are verified against.
        self.flush()?;
        self.drain()?;
        let w = self.writer()?;
        match rec.kind {
            Kind::KeyAdd => {
                let e: record::KeyAdd =
                    record::decode_event(&rec.payload).map_err(|why| damaged(rec, why))?;
                w.apply_key_add(rec.pos, rec.chain, rec.frame_len, &e)?;
            }
            Kind::KeyRetire => {
                let e: record::KeyRetire =
                    record::decode_event(&rec.payload).map_err(|why| damaged(rec, why))?;
                w.apply_key_retire(rec.pos, rec.chain, rec.frame_len, &e.keyid)?;
            }
            Kind::Envelope => {}
        }
        self.trust = trust_set_of(w.keys()?)?;
        self.since_commit += 1;
        Ok(())
    }
}

/// Applies every record after `from` (which must be the index's head) to `index`, and
/// returns how the log ends. Damage before the end is an error; a torn or damaged tail is
/// returned for the caller to handle (everything before it has been applied).
pub fn apply_log(
    log: &Log,
    index: &Index,
    from: Head,
    progress: Option<&(dyn Fn(u64) + Sync)>,
) -> Result<Tail, StoreError> {
    apply(log, index, from, false, progress)
}

/// Rebuilds `index` from the whole log. The old contents are cleared in the same
/// transaction as the first records are applied, so a rebuild that fails early leaves the
/// old index as it was.
pub fn rebuild_all(
    log: &Log,
    index: &Index,
    progress: Option<&(dyn Fn(u64) + Sync)>,
) -> Result<Tail, StoreError> {
    apply(log, index, Head::EMPTY, true, progress)
}

fn apply(
    log: &Log,
    index: &Index,
    from: Head,
    clear: bool,
    progress: Option<&(dyn Fn(u64) + Sync)>,
) -> Result<Tail, StoreError> {
    let mut writer = index.write()?;
    if clear {
        writer.clear()?;
    }
    if writer.meta().head != from {
        return Err(StoreError::Corrupt(
            "the index moved while it was being caught up".into(),
        ));
    }
    let trust = trust_set_of(writer.keys()?)?;
    let mut run = Run {
        index,
        writer: Some(writer),
        trust,
        batch: Vec::new(),
        pending: None,
        since_commit: 0,
        progress,
    };
    let mut failure: Option<StoreError> = None;
    let scanned = log.scan(from, |rec| {
        let step = match rec.kind {
            Kind::Envelope => {
                run.batch.push(rec);
                if run.batch.len() >= VERIFY_BATCH {
                    run.flush()
                } else {
                    Ok(())
                }
            }
            _ => run.event(&rec),
        };
        match step {
            Ok(()) => Ok(true),
            Err(e) => {
                failure = Some(e);
                Ok(false)
            }
        }
    });
    let (_, tail) = scanned.map_err(|e: LogError| StoreError::from(e))?;
    if let Some(e) = failure {
        return Err(e);
    }
    run.flush()?;
    run.drain()?;
    if let Some(w) = run.writer.take() {
        w.commit()?;
    }
    Ok(tail)
}
