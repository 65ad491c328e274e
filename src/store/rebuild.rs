//! Reading the log into an index: catch-up after a crash, `reindex` and `fsck --repair` go
//! through [`apply_log`]; `fsck` reads it the same way into an [`Audit`] of the live index
//! ([`audit_log`]).
//!
//! Every envelope record is verified again against the trust state at its position (the
//! fold of the trust events before it), on every core; its claim id is recomputed on the way.
//! A record that no longer verifies, is not in canonical form, or repeats an envelope is
//! damage: the log is never silently reinterpreted.

use super::index::{Apply, Audit, Difference, Index, Meta, Reader, Writer};
use super::log::{Head, Kind, Log, Record, Tail};
use super::record;
use super::{trust_set_of, StoreError};
use crate::ingest::Accepted;
use crate::keys::TrustSet;
use rayon::prelude::*;

/// Envelopes verified together (in parallel) before being applied in order, unless
/// `ELENCH_VERIFY_BATCH` says otherwise (tests set a small batch to cross batch boundaries
/// with a few hundred claims rather than thousands).
const VERIFY_BATCH: usize = 4096;

/// The verify batch in force: `ELENCH_VERIFY_BATCH` when it is a number from 1 to 65,536,
/// else [`VERIFY_BATCH`].
fn verify_batch_size() -> usize {
    std::env::var("ELENCH_VERIFY_BATCH")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| (1..=65_536).contains(n))
        .unwrap_or(VERIFY_BATCH)
}
/// Records per index transaction during a long rebuild, at most (fewer when their bytes
/// pass the writer's budget, [`Writer::budget`]).
const COMMIT_EVERY: u64 = 100_000;

/// Where the verified records go.
enum Sink<'i, 'r, 'e> {
    /// An index written in transactions of at most [`COMMIT_EVERY`] records and about a
    /// writer's budget of log bytes ([`Writer::budget`]).
    Index {
        index: &'i Index,
        writer: Option<Writer<'i>>,
    },
    /// The live index, checked.
    Audit(Audit<'r, 'e>),
}

struct Run<'i, 'r, 'e> {
    sink: Sink<'i, 'r, 'e>,
    trust: TrustSet,
    /// Envelope records read and not yet verified.
    batch: Vec<Record>,
    /// Envelope records verified and not yet applied: applied while the next batch is
    /// verified, so both cores stay busy.
    pending: Option<(Vec<Record>, Vec<Verdict>)>,
    /// An applied batch's emptied vectors, for the next batch's records and verdicts: the
    /// same few allocations serve the whole log.
    spare: (Vec<Record>, Vec<Verdict>),
    /// Where the payloads of applied records go back to the log's reader for reuse.
    recycle: Option<std::sync::mpsc::Sender<Vec<Vec<u8>>>>,
    since_commit: u64,
    /// The log bytes of the records applied since the last commit.
    bytes_since_commit: u64,
    progress: Option<&'i (dyn Fn(u64) + Sync)>,
}

/// What verifying a stored envelope found: the envelope accepted, with its digest.
type Verdict = Result<(Accepted, [u8; 32]), String>;

/// A record that is whole but cannot be applied: where it is, so that `fsck --repair` can
/// move it (and what follows) aside.
fn damaged(rec: &Record, reason: String) -> StoreError {
    StoreError::Damaged(super::log::Damage {
        segment: rec.pos.segment,
        offset: rec.pos.offset,
        reason,
    })
}

/// Verifies stored envelopes on every core, into `verdicts` (emptied first).
fn verify_batch(batch: &[Record], trust: &TrustSet, verdicts: &mut Vec<Verdict>) {
    batch
        .par_iter()
        .with_max_len(super::VERIFY_PIECE)
        .map(|rec| {
            // Read as every writer reads an envelope (canonical text the fast way); a stored
            // one must be its own canonical form.
            let reading = super::stage::read(&rec.payload, trust)
                .map_err(|r| format!("the stored envelope is unreadable: {}", r.message))?;
            if reading.canonical.as_deref() != Some(rec.payload.as_slice()) {
                return Err("the envelope is not stored in canonical form".to_owned());
            }
            let accepted = reading.verdict.map_err(|r| {
                format!(
                    "the envelope no longer verifies against the trust state at its \
                     position: {} {}",
                    r.code.as_str(),
                    r.message
                )
            })?;
            // Hashed here, on every core, rather than on the thread that applies in order.
            Ok((accepted, record::envelope_digest(&rec.payload)))
        })
        .collect_into_vec(verdicts)
}

/// Applies verified envelopes in log order; the first one that failed is damage.
fn apply_verified(
    w: &mut dyn Apply,
    batch: &[Record],
    verdicts: &mut Vec<Verdict>,
) -> Result<(), StoreError> {
    for (rec, verdict) in batch.iter().zip(verdicts.drain(..)) {
        let (accepted, digest) = verdict.map_err(|why| damaged(rec, why))?;
        if super::index::id_key(&accepted.claim.id).is_none() {
            return Err(damaged(rec, "the claim id is not a claim id".into()));
        }
        // A repeated envelope is found by the insert itself (no lookup per envelope).
        match w.apply_envelope(rec.pos, rec.chain, rec.frame_len, &digest, &accepted) {
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

impl<'i> Sink<'i, '_, '_> {
    /// Where the next records go (a write transaction is begun when there is none).
    fn apply(&mut self) -> Result<&mut dyn Apply, StoreError> {
        match self {
            Sink::Index { index, writer } => {
                if writer.is_none() {
                    *writer = Some(index.write()?);
                }
                match writer {
                    Some(w) => Ok(w),
                    None => Err(StoreError::Corrupt("index writer vanished".into())),
                }
            }
            Sink::Audit(a) => Ok(a),
        }
    }
}

impl<'i, 'r, 'e> Run<'i, 'r, 'e> {
    /// Verifies the batch read so far while the previously verified one is applied.
    fn flush(&mut self) -> Result<(), StoreError> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let (records, mut verdicts) = std::mem::take(&mut self.spare);
        let batch = std::mem::replace(&mut self.batch, records);
        let pending = self.pending.take();
        let done = pending
            .as_ref()
            .and_then(|(b, _)| b.last())
            .map(|r| r.pos.n);
        let Run { sink, trust, .. } = self;
        let w = sink.apply()?;
        // The batch is verified on the pool's threads while this one applies the last.
        let mut applied = Ok(());
        let mut spent = None;
        rayon::in_place_scope(|s| {
            s.spawn(|_| verify_batch(&batch, trust, &mut verdicts));
            if let Some((b, mut v)) = pending {
                applied = apply_verified(w, &b, &mut v);
                spent = Some((b, v));
            }
        });
        applied?;
        if let Some(spent) = spent {
            self.count_applied(&spent.0);
            self.reuse(spent);
        }
        self.reached(done);
        self.pending = Some((batch, verdicts));
        self.maybe_commit()
    }

    /// Applies what is verified and not yet applied.
    fn drain(&mut self) -> Result<(), StoreError> {
        if let Some((b, mut v)) = self.pending.take() {
            apply_verified(self.sink.apply()?, &b, &mut v)?;
            self.count_applied(&b);
            self.reached(b.last().map(|r| r.pos.n));
            self.reuse((b, v));
            self.maybe_commit()?;
        }
        Ok(())
    }

    /// Keeps an applied batch's vectors for the next batch, and hands its payloads back to
    /// the log's reader.
    fn reuse(&mut self, (mut records, mut verdicts): (Vec<Record>, Vec<Verdict>)) {
        verdicts.clear();
        if let Some(back) = &self.recycle {
            let payloads: Vec<Vec<u8>> = records.drain(..).map(|r| r.payload).collect();
            // A reader that has stopped takes none back: they are dropped.
            let _ = back.send(payloads);
        }
        records.clear();
        self.spare = (records, verdicts);
    }

    /// Tells the progress callback that the records up to number `last` are read and
    /// applied.
    fn reached(&self, last: Option<u64>) {
        if let (Some(p), Some(n)) = (self.progress, last) {
            p(n + 1);
        }
    }

    /// Counts applied records towards the next commit.
    fn count_applied(&mut self, records: &[Record]) {
        self.since_commit += records.len() as u64;
        self.bytes_since_commit += records.iter().map(|r| r.frame_len).sum::<u64>();
    }

    fn maybe_commit(&mut self) -> Result<(), StoreError> {
        let over_budget = match &self.sink {
            Sink::Index {
                writer: Some(w), ..
            } => self.bytes_since_commit >= w.budget(),
            _ => false,
        };
        if self.since_commit >= COMMIT_EVERY || over_budget {
            if let Sink::Index { writer, .. } = &mut self.sink {
                if let Some(w) = writer.take() {
                    w.commit()?;
                }
            }
            self.since_commit = 0;
            self.bytes_since_commit = 0;
        }
        Ok(())
    }

    fn event(&mut self, rec: &Record) -> Result<(), StoreError> {
        // A trust event changes what later envelopes are verified against.
        self.flush()?;
        self.drain()?;
        let w = self.sink.apply()?;
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
            Kind::Pin | Kind::Policy => {
                record::check_trust_record(rec.kind, &rec.payload)
                    .map_err(|why| damaged(rec, why))?;
                w.apply_trust_record(rec.pos, rec.chain, rec.frame_len)?;
            }
            Kind::Envelope => {}
        }
        self.trust = trust_set_of(w.keys()?)?;
        self.since_commit += 1;
        self.reached(Some(rec.pos.n));
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
/// old index as it was. A rebuild ends with the index on disk ([`Index::sync`]).
pub fn rebuild_all(
    log: &Log,
    index: &Index,
    progress: Option<&(dyn Fn(u64) + Sync)>,
) -> Result<Tail, StoreError> {
    let tail = apply(log, index, Head::EMPTY, true, progress)?;
    index.sync()?;
    Ok(tail)
}

fn apply(
    log: &Log,
    index: &Index,
    from: Head,
    clear: bool,
    progress: Option<&(dyn Fn(u64) + Sync)>,
) -> Result<Tail, StoreError> {
    let writer = if clear {
        index.rewrite()?
    } else {
        index.write()?
    };
    if writer.meta().head != from {
        return Err(StoreError::Corrupt(
            "the index moved while it was being caught up".into(),
        ));
    }
    let trust = trust_set_of(writer.keys()?)?;
    let mut run = Run::new(
        Sink::Index {
            index,
            writer: Some(writer),
        },
        trust,
        progress,
    );
    let tail = run.read(log, from)?;
    if let Sink::Index {
        writer: Some(w), ..
    } = run.sink
    {
        w.commit()?;
    }
    Ok(tail)
}

/// What [`audit_log`] found.
pub struct Audited {
    /// How the log ends, or the damage that stopped the reading.
    pub tail: Result<Tail, StoreError>,
    /// The index state the records read give (all of them, when the log is sound).
    pub meta: Meta,
    /// How the live index differs from the log (at most `limit` per table); only looked
    /// for when the whole log was read and is sound.
    pub differences: Vec<(&'static str, Difference)>,
}

/// Ids up to which `fsck` numbers the ids itself ([`Audit::new`], about 50 bytes an id: at
/// most about 150 MB), unless `ELENCH_FSCK_OWN_IDS` says otherwise; beyond, it numbers them
/// from the index ([`Audit::bounded`]: a few bytes an id, and a lookup in the `nodes` B-tree
/// for every id a claim names, 1.2% more CPU time at 100,000 claims). Numbering its own, the
/// audit names what differs in the same pass; the bounded one reads the log a second time to
/// name it.
const FSCK_OWN_IDS: u64 = 3_000_000;

/// Reads and verifies the whole log as a rebuild does, checking the live index against it
/// record by record instead of writing a second index ([`Audit`]). An index that names more
/// ids than [`FSCK_OWN_IDS`] is read with the ids numbered from the index itself, holding a
/// few bytes per id ([`Audit::bounded`]); only when that finds the index differs is the log
/// read again by an audit that numbers every id itself and names each difference
/// ([`Audit::new`]), which a smaller index is read with from the start.
pub fn audit_log(
    log: &Log,
    live: &Reader<'_>,
    limit: usize,
    progress: Option<&(dyn Fn(u64) + Sync)>,
) -> Result<Audited, StoreError> {
    let own_ids = std::env::var("ELENCH_FSCK_OWN_IDS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(FSCK_OWN_IDS);
    // The index's own count says which way is cheaper; either finds what the other does.
    let named = live.meta().map_or(0, |m| m.counts.nodes);
    if named > own_ids {
        let first = audit_with(log, Audit::bounded(live, limit), progress)?;
        if first.differences.is_empty() {
            return Ok(first);
        }
    }
    // The index's count is only a hint for the room to make, and bounded.
    let room = usize::try_from(named.min(own_ids).min(FSCK_OWN_IDS)).unwrap_or(0);
    audit_with(log, Audit::new(live, limit, room), progress)
}

fn audit_with(
    log: &Log,
    audit: Audit<'_, '_>,
    progress: Option<&(dyn Fn(u64) + Sync)>,
) -> Result<Audited, StoreError> {
    let mut run = Run::new(Sink::Audit(audit), TrustSet::default(), progress);
    let tail = run.read(log, Head::EMPTY);
    let Sink::Audit(audit) = run.sink else {
        return Err(StoreError::Corrupt("the audit vanished".into()));
    };
    let meta = audit.meta();
    let differences = match &tail {
        Ok(Tail::Clean) | Ok(Tail::Torn { .. }) => audit.finish(),
        _ => Vec::new(),
    };
    Ok(Audited {
        tail,
        meta,
        differences,
    })
}

impl<'i, 'r, 'e> Run<'i, 'r, 'e> {
    fn new(
        sink: Sink<'i, 'r, 'e>,
        trust: TrustSet,
        progress: Option<&'i (dyn Fn(u64) + Sync)>,
    ) -> Self {
        Run {
            sink,
            trust,
            batch: Vec::new(),
            pending: None,
            spare: (Vec::new(), Vec::new()),
            recycle: None,
            since_commit: 0,
            bytes_since_commit: 0,
            progress,
        }
    }

    /// Reads every record after `from` into the sink. Damage before the end is an error;
    /// a torn or damaged tail is returned (everything before it has been applied).
    fn read(&mut self, log: &Log, from: Head) -> Result<Tail, StoreError> {
        // The log is read (and its checksums and chain checked) on a thread of its own, up to
        // a batch ahead: read between batches on this thread, it left both cores idle while
        // the next batch was read.
        let batch = verify_batch_size();
        self.batch.reserve(batch);
        self.spare.0.reserve(batch);
        let (records, received) = std::sync::mpsc::sync_channel::<Record>(batch);
        // Applied records' payloads come back to the reader, which reads the next ones into
        // them: the records in flight (a few batches) are all the buffers there are.
        let (give_back, given_back) = std::sync::mpsc::channel::<Vec<Vec<u8>>>();
        self.recycle = Some(give_back);
        std::thread::scope(|scope| {
            let reader = scope.spawn(move || {
                let mut stash: Vec<Vec<u8>> = Vec::new();
                let spare = || {
                    if stash.is_empty() {
                        if let Ok(more) = given_back.try_recv() {
                            stash = more;
                        }
                    }
                    stash.pop().unwrap_or_default()
                };
                // A closed channel means the records' user stopped: so does the reading.
                log.scan_reusing(from, spare, |rec| Ok(records.send(rec).is_ok()))
            });
            let mut failure: Option<StoreError> = None;
            for rec in &received {
                let step = match rec.kind {
                    Kind::Envelope => {
                        self.batch.push(rec);
                        if self.batch.len() >= batch {
                            self.flush()
                        } else {
                            Ok(())
                        }
                    }
                    _ => self.event(&rec),
                };
                if let Err(e) = step {
                    failure = Some(e);
                    break;
                }
            }
            drop(received);
            let scanned = reader
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            if let Some(e) = failure {
                return Err(e);
            }
            let (_, tail) = scanned.map_err(StoreError::from)?;
            self.flush()?;
            self.drain()?;
            Ok(tail)
        })
    }
}
