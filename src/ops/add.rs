//! `add`: verify envelopes and append the accepted ones to the log.
//!
//! Each envelope is judged on its own; one bad envelope never stops the others. A thread reads
//! the inputs; envelopes are verified in chunks on every core while a thread of its own
//! appends the chunks already verified (one fsync per group: group commit), and an envelope
//! is reported (acknowledged to the observer, and in the result) only after its group's
//! fsync. A chunk ends after 100 ms without new input and is appended as soon as it is
//! verified, so a slow producer's envelopes are acknowledged promptly, without waiting for
//! the next one.
//! With `-` among the inputs the store is opened only when the first envelope arrives. The
//! writer lock is taken per group, so other writers interleave and readers never wait.
//! Re-adding an envelope already in the log is a no-op without verifying it again, whatever
//! has happened to its keys since.

mod read;

pub use read::{display_source, sign_hint, unsigned_claim_role};
use read::{expand_inputs, origin_text, spawn_reader, Input, Item, Origin};

use super::{Context, Failure, Observer, Stop};
use crate::envelope::Envelope;
use crate::error::{Code, Rejection};
use crate::keys::TrustSet;
use crate::store::stage::{self, Reading};
use crate::store::{record, DryRun, Effect, Staged, Store};
use rayon::prelude::*;
use rustc_hash::FxHashSet as HashSet;
use serde::Serialize;
use std::fmt::Write as _;
use std::sync::mpsc::sync_channel;
use std::time::Duration;

/// Envelopes verified together and appended as one group (one fsync): the first group of a
/// batch holds up to FIRST_GROUP, each later one up to twice its predecessor's limit, up to
/// GROUP. The first envelopes are acknowledged early; a long batch pays few fsyncs. The store
/// applies a group to the index in transactions sized to the index (`Store::commit_group`):
/// up to 4,096 records in a large one, so a group holds that many.
const FIRST_GROUP: usize = 256;
const GROUP: usize = 4096;
/// A group commits after this long without new input.
const IDLE: Duration = Duration::from_millis(100);
/// Verified chunks waiting to be appended: how far verifying may run ahead of the fsyncs.
const AHEAD: usize = 4;
/// At most this many envelopes are appended as one group when verified chunks have piled up
/// behind a slow fsync.
const MERGED: usize = 4 * GROUP;
/// Accepted envelopes listed in `data.claims` unless `--list-all`: the report stays bounded
/// however large the batch (counts and every rejection are always there).
const LISTED: usize = 100;
/// Ignored bundle lines listed in `data.foreign`; the rest are counted in `data.ignored`.
const FOREIGN_LISTED: usize = 1000;
/// DANGLING_REFERENCE warnings listed; the rest are counted.
const WARNED: usize = 100;

/// What to add.
#[derive(Debug, Clone, Default)]
pub struct AddInput {
    /// Envelopes (.dsse, .json), bundles (.intoto.jsonl, .jsonl), directories (searched
    /// recursively for those), or `-` for a bundle on stdin.
    pub inputs: Vec<String>,
    /// List every accepted envelope in `claims` (else the first 100).
    pub list_all: bool,
    /// Verify and report what would be added, storing nothing.
    pub dry_run: bool,
}

/// An accepted envelope, as `claims` lists it.
#[derive(Debug, Clone, Serialize)]
pub struct Added {
    pub id: String,
    /// `created`, `merged` or `noop`.
    pub effect: &'static str,
    pub source: String,
    pub line: Option<usize>,
}

/// A rejected input, as `rejections` lists it.
#[derive(Debug, Clone, Serialize)]
pub struct Refusal {
    pub source: String,
    pub line: Option<usize>,
    pub code: crate::error::Code,
    pub message: String,
    pub pointer: Option<String>,
}

/// A bundle line holding another kind of attestation, passed over.
#[derive(Debug, Clone, Serialize)]
pub struct ForeignLine {
    pub source: String,
    pub line: Option<usize>,
    pub kind: String,
}

/// What `add` did. Counts add up: every input is created, merged, noop, rejected, skipped
/// or ignored.
#[derive(Debug, Serialize)]
pub struct AddOutput {
    pub created: usize,
    pub merged: usize,
    pub noop: usize,
    pub rejected: usize,
    /// Unsigned claim JSONs found in directories and left alone.
    pub skipped: usize,
    /// Bundle lines of other attestations, passed over.
    pub ignored: usize,
    /// The first 1,000 of those.
    pub foreign: Vec<ForeignLine>,
    pub dry_run: bool,
    /// The accepted envelopes (the first 100 unless `list_all`).
    pub claims: Vec<Added>,
    pub claims_truncated: bool,
    pub rejections: Vec<Refusal>,
    /// The log's record count afterwards (None when no store was opened).
    pub as_of: Option<u64>,
    /// What the run comes to when it is not plain success: a rejection, every input
    /// rejected, some rejected (partial), nothing to add, the store failing, or a stop.
    #[serde(skip)]
    pub failure: Option<Failure>,
    /// The inputs were a batch (several, or a bundle): each envelope was acknowledged to
    /// the observer as its group became durable.
    #[serde(skip)]
    pub batch: bool,
}

impl AddOutput {
    /// Some inputs accepted, some rejected.
    pub fn partial(&self) -> bool {
        self.created + self.merged + self.noop > 0 && self.rejected > 0
    }

    /// What the run changed, as a whole: `created` when a claim is new, `updated` when
    /// only new signatures were added, `noop` when nothing was; `would_…` in a dry run.
    pub fn effect(&self) -> super::outcome::Effect {
        super::outcome::Effect::of_counts(self.created, self.merged, self.dry_run)
    }

    /// "N created, N merged, N already present, N rejected".
    pub fn counts_text(&self) -> String {
        counts_text(self.created, self.merged, self.noop, self.rejected)
    }
}

fn counts_text(created: usize, merged: usize, noop: usize, rejected: usize) -> String {
    format!("{created} created, {merged} merged, {noop} already present, {rejected} rejected")
}

/// One input after verification.
enum Prepared {
    Ready {
        origin: Origin,
        staged: Staged,
    },
    Refused {
        origin: Origin,
        rejection: Rejection,
        /// The claim id its payload names and its digest, when it is JSON: an envelope
        /// already stored is a no-op even if it would not verify today (its key retired since).
        stored_as: Option<(String, [u8; 32])>,
    },
    Skipped {
        message: String,
    },
    /// A bundle line holding another kind of attestation (`kind`: its payloadType or
    /// predicateType): passed over, as the in-toto bundle convention asks of consumers.
    Foreign {
        origin: Origin,
        kind: String,
    },
    /// A trust policy: taken in order by `crate::trust::admit` when its chunk is appended.
    Policy {
        origin: Origin,
        bytes: Vec<u8>,
    },
    /// Refused because no trusted key verified it: looked at again when appended (a root
    /// key's signature is `ROLE_VIOLATION`; a policy taken earlier in the run may trust it).
    Untrusted {
        origin: Origin,
        rejection: Rejection,
        stored_as: Option<(String, [u8; 32])>,
        bytes: Vec<u8>,
    },
}

/// An envelope refused for want of a trusted key, verified again against the store's trust
/// now (a policy taken earlier in the run may have changed it).
/// In a dry run (`predicted`: the trust the policies judged so far would leave), the keys of
/// the policy that would be in force count beside the store's.
fn retry_with_store_trust(
    store: &Store,
    bytes: &[u8],
    predicted: Option<&crate::trust::State>,
) -> Result<Option<Staged>, Failure> {
    let (mut trust, generation) = store.trust_snapshot()?;
    if let Some(p) = predicted.and_then(crate::trust::State::in_force) {
        let mut keys = trust.keys().to_vec();
        for (k, vk) in &p.keys {
            if keys.iter().any(|have| have.keyid == k.keyid) {
                continue;
            }
            if let Ok(key) = crate::keys::TrustedKey::new(k.role, &k.name, *vk) {
                keys.push(key);
            }
        }
        trust = crate::keys::TrustSet::new(keys);
    }
    let Ok(json) = Envelope::parse_json(bytes) else {
        return Ok(None);
    };
    let Ok(accepted) = crate::ingest::verify_json(&json, &trust) else {
        return Ok(None);
    };
    let Ok(canonical) = record::canonical_of(&json) else {
        return Ok(None);
    };
    Ok(Some(Staged {
        digest: record::envelope_digest(&canonical),
        canonical,
        accepted,
        trust_generation: generation,
    }))
}

struct Batch<'o> {
    claims: Vec<Added>,
    listed_all: bool,
    rejections: Vec<Refusal>,
    observer: &'o dyn Observer,
    dangling: usize,
    /// Created assertions whose anchor names a span without a contentDigest.
    no_digest: usize,
    created: usize,
    merged: usize,
    noop: usize,
    /// Unsigned claim JSONs found in directories and left alone.
    skipped: usize,
    /// Bundle lines of other attestations, passed over: how many, and the first
    /// [`FOREIGN_LISTED`] as `{source, line, kind}`.
    ignored: usize,
    foreign: Vec<ForeignLine>,
    /// `--dry-run`: judge, never store; the claims and envelopes this run would have added.
    dry_run: Option<DryRun>,
    /// In a dry run: the team's trust as the policies judged so far would have left it.
    dry_trust: Option<crate::trust::State>,
    last_rejection: Option<Failure>,
    /// Acknowledge each envelope to the observer (a batch).
    ack_lines: bool,
    /// The acknowledgement lines of the group being reported, handed over together.
    ack_buffer: String,
    /// A policy taken in this run changed the store's trust.
    trust_changed: bool,
    /// Policies taken in the chunk being appended, reported after it.
    policies: Vec<(String, Effect, Origin)>,
}

/// Adds the envelopes `input` names to the store of `ctx`, waiting up to its `wait` for the
/// store's writer lock for each group. Each envelope is judged on its own; one bad envelope
/// never stops the others. Warnings go to the context's observer, and in a batch each
/// envelope is acknowledged there once durable; `stop` ends the run after the envelopes in
/// hand, which are appended and reported.
pub fn add(ctx: &Context, input: &AddInput, stop: &dyn Stop) -> Result<AddOutput, Failure> {
    let observer = ctx.observer();
    let root = ctx.store_root()?;
    Store::check(&root)?;
    let files = expand_inputs(&input.inputs)?;
    let is_batch = files.len() > 1 || files.iter().any(|f| f.bundle);
    let mut batch = Batch::new(observer, input, is_batch);
    // Files are there already: take the store now, so that waiting for it comes first.
    let mut store = if files.iter().all(|f| f.path != "-") {
        Some(ctx.open_store_at(&root)?)
    } else {
        None
    };
    let rx = spawn_reader(files);
    let mut input = Input {
        rx,
        group: FIRST_GROUP,
        done: false,
    };
    // The store is taken once there is something to add (stdin may be slow to start).
    let first = input.first_chunk(stop);
    let mut fatal = None;
    if first.is_some() && store.is_none() {
        match ctx.open_store_at(&root) {
            Ok(s) => store = Some(s),
            Err(e) => fatal = Some(e),
        }
    }
    if let (Some(first), Some(st)) = (first, store.as_ref()) {
        fatal = append_all(st, &mut batch, first, &mut input, stop);
    }
    let as_of = match store.as_ref().map(Store::count).transpose() {
        Ok(n) => n,
        Err(e) => {
            fatal.get_or_insert(e.into());
            None
        }
    };
    Ok(batch.finish(as_of, fatal, stop.received()))
}

/// Verifies chunk after chunk on the rayon pool while a thread of its own appends what is
/// verified. The appender is not a pool thread on purpose: it spends much of its time
/// waiting for fsync (from a few milliseconds to a second on a busy disk), and a pool thread
/// blocked there is a core not verifying. When fsyncs fall behind, the chunks verified
/// meanwhile are appended together as one group (one fsync, up to MERGED envelopes), so the
/// appender catches up instead of paying one fsync per chunk. Returns the failure that
/// stopped the batch, if one did.
fn append_all(
    store: &Store,
    batch: &mut Batch<'_>,
    first: Vec<Item>,
    input: &mut Input,
    stop: &dyn Stop,
) -> Option<Failure> {
    let (verified, to_append) = sync_channel::<Vec<Prepared>>(AHEAD);
    std::thread::scope(|scope| {
        let appender = scope.spawn(move || -> Option<Failure> {
            let mut appended = 0;
            while let Ok(mut group) = to_append.recv() {
                while group.len() < MERGED {
                    match to_append.try_recv() {
                        Ok(more) => group.extend(more),
                        Err(_) => break,
                    }
                }
                appended += group.len();
                if let Err(e) = batch.commit(store, group) {
                    // Dropping the receiver stops the verifying side at its next chunk.
                    return Some(e);
                }
            }
            // A long batch ends with the index on disk (one fsync), so that a machine that
            // stops later does not make the next command rebuild it; a short one leaves that
            // to the kernel, as the log is what holds its envelopes.
            if appended as u64 >= crate::store::SYNC_AFTER {
                if let Err(e) = store.sync_index() {
                    return Some(e.into());
                }
            }
            None
        });
        let mut fatal = None;
        let mut chunk = first;
        loop {
            let (trust, generation) = match store.trust_snapshot() {
                Ok(t) => t,
                Err(e) => {
                    fatal = Some(e.into());
                    break;
                }
            };
            let prepared = verify_chunk(chunk, &trust, generation);
            if !prepared.is_empty() && verified.send(prepared).is_err() {
                break; // the appender stopped, and says why
            }
            // An interrupt lets the chunks in hand finish: they are appended and reported.
            if stop.received().is_some() {
                break;
            }
            chunk = input.next_chunk(stop);
            if chunk.is_empty() {
                break;
            }
        }
        drop(verified);
        let appended = appender
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        appended.or(fatal)
    })
}

fn verify_chunk(chunk: Vec<Item>, trust: &TrustSet, generation: u64) -> Vec<Prepared> {
    chunk
        .into_par_iter()
        .with_max_len(crate::store::VERIFY_PIECE)
        .map(|item| match item {
            Item::Skipped { message } => Prepared::Skipped { message },
            Item::Refused { origin, rejection } => Prepared::Refused {
                origin,
                rejection,
                stored_as: None,
            },
            Item::Envelope {
                origin,
                bytes,
                lead,
                trail,
            } => {
                let reading = match stage::read(&bytes, trust) {
                    Ok(reading) => reading,
                    // The position of text that is not JSON is the file's, as `verify` gives
                    // it.
                    Err(rejection) if rejection.code == Code::BadJson => {
                        let whole = [bytes.as_slice(), &trail].concat();
                        let shifted = crate::json::parse_unique_keys(&whole)
                            .err()
                            .map(|e| Envelope::json_rejection(e.shifted(lead.0, lead.1)));
                        Reading {
                            verdict: Err(shifted.unwrap_or(rejection)),
                            canonical: None,
                        }
                    }
                    Err(rejection) => Reading {
                        verdict: Err(rejection),
                        canonical: None,
                    },
                };
                let mut rejection = match reading.verdict {
                    // A trust policy is never accepted as a claim (its predicateType is not
                    // a claim's), so it is looked for only among the refused: a bulk add of
                    // claims does not read every envelope a second time to ask.
                    Err(_) if crate::trust::is_policy(&bytes) => {
                        return Prepared::Policy { origin, bytes };
                    }
                    Err(rejection) => rejection,
                    Ok(accepted) => {
                        let reading = Reading {
                            verdict: Ok(accepted),
                            canonical: reading.canonical,
                        };
                        return match Staged::of(reading, generation) {
                            Ok(staged) => Prepared::Ready { origin, staged },
                            Err(rejection) => Prepared::Refused {
                                origin,
                                rejection,
                                stored_as: None,
                            },
                        };
                    }
                };
                // A bundle may carry other attestations beside elench's claims; what they
                // are is readable without any key, so they are passed over whoever signed
                // them. A lone file of another type is still refused: it was given to elench
                // as a claim.
                if origin.line.is_some() {
                    if let Some(kind) = crate::ingest::foreign_kind(&bytes) {
                        return Prepared::Foreign { kind, origin };
                    }
                }
                let digest = reading.canonical.as_deref().map(record::envelope_digest);
                let stored_as = digest.and_then(|d| record::claimed_id(&bytes).map(|id| (id, d)));
                if rejection.code == Code::BadEnvelope {
                    if let Some(role) = unsigned_claim_role(&bytes) {
                        rejection.message = format!(
                            "this is a claim, not a signed envelope; {}",
                            sign_hint(&origin.source, role)
                        );
                    }
                }
                if rejection.code == Code::UntrustedSigner {
                    return Prepared::Untrusted {
                        origin,
                        rejection,
                        stored_as,
                        bytes,
                    };
                }
                Prepared::Refused {
                    origin,
                    rejection,
                    stored_as,
                }
            }
        })
        .collect()
}

impl<'o> Batch<'o> {
    fn new(observer: &'o dyn Observer, input: &AddInput, is_batch: bool) -> Batch<'o> {
        Batch {
            claims: Vec::new(),
            listed_all: input.list_all,
            rejections: Vec::new(),
            observer,
            dangling: 0,
            no_digest: 0,
            created: 0,
            merged: 0,
            noop: 0,
            skipped: 0,
            ignored: 0,
            foreign: Vec::new(),
            dry_run: input.dry_run.then(Default::default),
            dry_trust: None,
            last_rejection: None,
            ack_lines: is_batch,
            ack_buffer: String::new(),
            trust_changed: false,
            policies: Vec::new(),
        }
    }

    /// Appends one verified chunk (the lock is taken per group) and records the outcomes.
    fn commit(&mut self, store: &Store, chunk: Vec<Prepared>) -> Result<(), Failure> {
        let result = self.commit_chunk(store, chunk);
        // Policies taken in this chunk are reported like envelopes.
        for (id, effect, origin) in std::mem::take(&mut self.policies) {
            self.accepted(&id, effect, &origin);
        }
        result
    }

    fn commit_chunk(&mut self, store: &Store, chunk: Vec<Prepared>) -> Result<(), Failure> {
        let mut ready = Vec::with_capacity(chunk.len());
        let mut order = Vec::with_capacity(chunk.len());
        for p in chunk {
            match p {
                Prepared::Skipped { message } => {
                    self.skipped += 1;
                    self.observer.warn("SKIPPED_UNSIGNED_CLAIM", message);
                }
                Prepared::Foreign { origin, kind } => {
                    if self.ack_lines {
                        let _ =
                            writeln!(self.ack_buffer, "ignored {} ({kind})", origin_text(&origin));
                    }
                    self.ignored += 1;
                    if self.foreign.len() < FOREIGN_LISTED {
                        self.foreign.push(ForeignLine {
                            source: origin.source,
                            line: origin.line,
                            kind,
                        });
                    }
                }
                Prepared::Ready { origin, staged } => {
                    order.push((origin, None));
                    ready.push(staged);
                }
                Prepared::Policy { origin, bytes } => {
                    let taken = if self.dry_run.is_some() {
                        // What adding it would do, judged against the chain as this run
                        // would have left it; nothing is written.
                        let trust = match self.dry_trust.as_mut() {
                            Some(t) => t,
                            None => self.dry_trust.insert(
                                crate::trust::state_of(store)
                                    .map_err(super::trust::trust_failure)?
                                    .as_ref()
                                    .clone(),
                            ),
                        };
                        crate::trust::predict(trust, &bytes)
                    } else {
                        crate::trust::admit(store, &bytes)
                    };
                    match taken {
                        Ok(a) => {
                            if !a.applied.is_empty() {
                                self.trust_changed = true;
                            }
                            if let Some(m) = a.missing {
                                self.observer.warn(
                                    Code::PolicyWaiting.as_str(),
                                    format!(
                                        "trust policy version {} ({}) waits for version {m}, \
                                         which this store lacks",
                                        a.version, a.id
                                    ),
                                );
                            }
                            let effect = match a.effect {
                                "created" => Effect::Created,
                                "waiting" => Effect::Merged,
                                _ => Effect::Noop,
                            };
                            self.policies.push((a.id, effect, origin));
                        }
                        Err(crate::trust::TrustError::Rejected(r)) => {
                            order.push((origin, Some((r, None))));
                        }
                        Err(e) => return Err(super::trust::trust_failure(e)),
                    }
                }
                Prepared::Untrusted {
                    origin,
                    rejection,
                    stored_as,
                    bytes,
                } => {
                    if let Some(name) = crate::trust::root_signer(store, &bytes) {
                        let r = match crate::ingest::foreign_kind(&bytes) {
                            Some(kind) => Rejection::at(
                                Code::UnsupportedPredicateType,
                                "/payload",
                                format!(
                                    "signed by root key {name}, and {kind} is neither an elench \
                                     claim nor a trust policy ({})",
                                    crate::trust::PREDICATE_TYPE
                                ),
                            ),
                            None => Rejection::at(
                                Code::RoleViolation,
                                "/signatures",
                                format!(
                                "signed by root key {name}: root keys sign trust policies only, \
                                 never claims; sign the claim with a key of the role it needs"
                                ),
                            ),
                        };
                        order.push((origin, Some((r, None))));
                        continue;
                    }
                    if self.trust_changed {
                        if let Some(staged) =
                            retry_with_store_trust(store, &bytes, self.dry_trust.as_ref())?
                        {
                            order.push((origin, None));
                            ready.push(staged);
                            continue;
                        }
                    }
                    let stored = match stored_as {
                        Some((id, d)) if store.holds_envelope(&id, &d)? => Some(id),
                        _ => None,
                    };
                    order.push((origin, Some((rejection, stored))));
                }
                Prepared::Refused {
                    origin,
                    rejection,
                    stored_as,
                } => {
                    // Stored already: a no-op, whatever its key's state now.
                    let stored = match stored_as {
                        Some((id, d)) if store.holds_envelope(&id, &d)? => Some(id),
                        _ => None,
                    };
                    order.push((origin, Some((rejection, stored))));
                }
            }
        }
        let ids: Vec<String> = ready.iter().map(|s| s.accepted.claim.id.clone()).collect();
        let refs: Vec<(Vec<String>, Vec<String>)> = ready
            .iter()
            .map(|s| {
                (
                    s.accepted.claim.target.clone(),
                    s.accepted.claim.depends_on.clone(),
                )
            })
            .collect();
        let unverified: Vec<usize> = ready
            .iter()
            .map(|s| s.accepted.unverified_signatures)
            .collect();
        let no_digest: Vec<bool> = ready
            .iter()
            .map(|s| span_without_digest(&s.accepted))
            .collect();
        // The claims the group's new claims name that the store does not hold: the append
        // finds them as it writes the index; a dry run, which writes nothing, looks each up.
        let (outcomes, absent): (_, HashSet<String>) = if ready.is_empty() {
            (Vec::new(), HashSet::default())
        } else if let Some(so_far) = self.dry_run.as_mut() {
            // What the append would do, from what is stored and what this run has judged.
            let outcomes = store.predict_group(&ready, so_far)?;
            let referenced: Vec<&str> = refs
                .iter()
                .flat_map(|(targets, premises)| targets.iter().chain(premises))
                .map(String::as_str)
                .collect();
            let absent = referenced
                .iter()
                .zip(store.contains_each(&referenced)?)
                .filter(|(_, stored)| !stored)
                .map(|(id, _)| (*id).to_owned())
                .collect();
            (outcomes, absent)
        } else {
            let appended = store.commit_group_noting(ready)?;
            (appended.outcomes, appended.unheld.into_iter().collect())
        };
        let mut outcomes = outcomes.into_iter();
        let mut k = 0;
        for (origin, refused) in order {
            match refused {
                Some((_, Some(id))) => self.accepted(&id, Effect::Noop, &origin),
                Some((rejection, None)) => self.reject(rejection, origin),
                None => {
                    let outcome = outcomes.next().ok_or_else(|| {
                        Failure::Internal("the store returned fewer outcomes than envelopes".into())
                    })?;
                    match outcome {
                        Ok(effect) => {
                            if effect == Effect::Created {
                                self.check_dangling(&absent, &ids[k], &refs[k]);
                                if no_digest[k] {
                                    self.no_digest += 1;
                                    if self.no_digest <= WARNED {
                                        self.observer
                                            .warn("NO_CONTENT_DIGEST", no_content_digest(&ids[k]));
                                    }
                                }
                            }
                            if unverified[k] > 0 {
                                self.observer.warn(
                                    "UNVERIFIED_SIGNATURE",
                                    format!(
                                        "{}: {} signature(s) in the envelope were not verified by \
                                         any trusted key",
                                        ids[k], unverified[k]
                                    ),
                                );
                            }
                            self.accepted(&ids[k], effect, &origin);
                        }
                        Err(rejection) => self.reject(rejection, origin),
                    }
                    k += 1;
                }
            }
        }
        self.flush_acks();
        Ok(())
    }

    /// Hands over the group's acknowledgement lines at once, not one per envelope, and the
    /// counts so far.
    fn flush_acks(&mut self) {
        if !self.ack_buffer.is_empty() {
            self.observer.acknowledge(&self.ack_buffer);
            self.ack_buffer.clear();
        }
        if self.ack_lines {
            self.observer.status(&self.counts_text());
        }
    }

    fn check_dangling(
        &mut self,
        absent: &HashSet<String>,
        id: &str,
        refs: &(Vec<String>, Vec<String>),
    ) {
        for (field, list) in [("target", &refs.0), ("dependsOn", &refs.1)] {
            for other in list {
                if absent.contains(other) {
                    self.dangling += 1;
                    if self.dangling <= WARNED {
                        self.observer.warn(
                            "DANGLING_REFERENCE",
                            format!(
                                "{id} names {other} in {field}, which the store has not seen yet"
                            ),
                        );
                    }
                }
            }
        }
    }

    fn accepted(&mut self, id: &str, effect: Effect, origin: &Origin) {
        match effect {
            Effect::Created => self.created += 1,
            Effect::Merged => self.merged += 1,
            Effect::Noop => self.noop += 1,
        }
        let word = effect.as_str();
        if self.ack_lines {
            let would = if self.dry_run.is_some() {
                "would be "
            } else {
                ""
            };
            let _ = writeln!(
                self.ack_buffer,
                "{would}{word} {id} {}",
                origin_text(origin)
            );
        }
        if self.listed_all || self.claims.len() < LISTED {
            self.claims.push(Added {
                id: id.to_owned(),
                effect: word,
                source: origin.source.clone(),
                line: origin.line,
            });
        }
    }

    fn counts_text(&self) -> String {
        counts_text(self.created, self.merged, self.noop, self.rejections.len())
    }

    fn reject(&mut self, r: Rejection, origin: Origin) {
        if self.ack_lines {
            let _ = writeln!(
                self.ack_buffer,
                "rejected {} {}: {}",
                origin_text(&origin),
                r.code,
                r.message
            );
        }
        self.rejections.push(Refusal {
            source: origin.source.clone(),
            line: origin.line,
            code: r.code,
            message: r.message.clone(),
            pointer: r.pointer.clone(),
        });
        self.last_rejection = Some(Failure::Rejected {
            rejection: r,
            input: Some(origin.source),
            line: origin.line,
        });
    }

    fn finish(
        mut self,
        as_of: Option<u64>,
        fatal: Option<Failure>,
        signal: Option<i32>,
    ) -> AddOutput {
        let rejected = self.rejections.len();
        let accepted = self.created + self.merged + self.noop;
        let ignored = self.ignored;
        let failure = if fatal.is_some() {
            fatal
        } else if let Some(signal) = signal {
            Some(Failure::interrupted(signal))
        } else if accepted == 0 && rejected == 0 && ignored > 0 {
            // Only other attestations: nothing to do, and nothing wrong.
            None
        } else if accepted == 0 && rejected == 0 && self.skipped > 0 {
            Some(Failure::usage(None, format!(
                "no envelopes found in the inputs, only {} unsigned claim(s): sign each with \
                 `elench sign CLAIM.json ‹-key› KEY.pem` (see the warnings), then add the .dsse files",
                self.skipped
            )))
        } else if accepted == 0 && rejected == 0 {
            Some(Failure::usage(
                None,
                "no envelopes found in the inputs".into(),
            ))
        } else if accepted == 0 && rejected == 1 {
            self.last_rejection.take()
        } else if accepted == 0 {
            Some(Failure::AllRejected(format!(
                "all {rejected} envelopes were rejected; see data.rejections"
            )))
        } else if rejected > 0 {
            Some(Failure::Partial(format!(
                "{rejected} of {} envelopes were rejected (see data.rejections); the other {accepted} {}",
                accepted + rejected,
                if self.dry_run.is_some() { "would be stored" } else { "are stored" }
            )))
        } else {
            None
        };
        if self.no_digest > WARNED {
            self.observer.warn(
                "NO_CONTENT_DIGEST",
                format!(
                    "{} more assertions name a path in their anchor without a contentDigest",
                    self.no_digest - WARNED
                ),
            );
        }
        if self.dangling > WARNED {
            self.observer.warn(
                "DANGLING_REFERENCE",
                format!(
                    "{} more references name claims the store has not seen yet",
                    self.dangling - WARNED
                ),
            );
        }
        if ignored > 0 {
            self.observer
                .warn("FOREIGN_STATEMENT", foreign_message(ignored, &self.foreign));
        }
        AddOutput {
            created: self.created,
            merged: self.merged,
            noop: self.noop,
            rejected,
            skipped: self.skipped,
            ignored,
            claims_truncated: accepted > self.claims.len(),
            foreign: self.foreign,
            dry_run: self.dry_run.is_some(),
            claims: self.claims,
            rejections: self.rejections,
            as_of,
            failure,
            batch: self.ack_lines,
        }
    }
}

/// The `NO_CONTENT_DIGEST` warning's message for claim `id`.
pub fn no_content_digest(id: &str) -> String {
    format!(
        "{id}: its anchor names a path but carries no contentDigest, so it can never carry \
         to another tree (it is stale there); fill the anchor with `elench sign ‹-anchor› \
         PATH[:START-END]` or from `elench anchor`"
    )
}

/// The FOREIGN_STATEMENT warning: which lines of which bundles were passed over, and what
/// they are.
fn foreign_message(ignored: usize, foreign: &[ForeignLine]) -> String {
    let mut by_source: Vec<(&str, Vec<String>)> = Vec::new();
    for f in foreign.iter().take(LISTED) {
        let source = f.source.as_str();
        let line = format!("{} ({})", f.line.unwrap_or_default(), f.kind);
        match by_source.iter_mut().find(|(s, _)| *s == source) {
            Some((_, lines)) => lines.push(line),
            None => by_source.push((source, vec![line])),
        }
    }
    let listed: Vec<String> = by_source
        .into_iter()
        .map(|(s, lines)| format!("{s} line(s) {}", lines.join(", ")))
        .collect();
    let more = ignored.saturating_sub(foreign.len().min(LISTED));
    format!(
        "{ignored} bundle line(s) hold other attestations than elench claims and were ignored, \
         as the in-toto bundle convention asks: {}{} (see data.foreign)",
        listed.join("; "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    )
}

/// Whether an accepted envelope holds an assertion whose anchor names a span (a path or a
/// range) without a `contentDigest`. Read from the body, or from the summary the fast path
/// kept of it (which holds the anchor's members but its tree).
fn span_without_digest(a: &crate::ingest::Accepted) -> bool {
    if a.claim.kind != crate::claim::Kind::Assertion {
        return false;
    }
    match &a.text {
        crate::ingest::Read::Whole(body) => {
            crate::claim::Gist::anchor(body).is_some_and(crate::anchor::span_without_digest)
        }
        crate::ingest::Read::Summary(text) => {
            // Only which members are there matters: read without building values, since a
            // bulk add reads one summary per envelope.
            use serde::de::IgnoredAny;
            #[derive(serde::Deserialize)]
            struct Summary {
                anchor: Option<AnchorMembers>,
            }
            #[derive(serde::Deserialize)]
            struct AnchorMembers {
                path: Option<IgnoredAny>,
                range: Option<IgnoredAny>,
                #[serde(rename = "contentDigest")]
                content_digest: Option<IgnoredAny>,
            }
            serde_json::from_str::<Summary>(text)
                .ok()
                .and_then(|s| s.anchor)
                .is_some_and(|a| {
                    (a.path.is_some() || a.range.is_some()) && a.content_digest.is_none()
                })
        }
    }
}
