//! Evaluating the selected claims, `jobs` at a time, and recording what changes a status:
//! the evidence blobs first, then the sealed records as one group, signed with the harness
//! key.

use super::{Checked, Outcome, Target};
use crate::claim::Gist;
use crate::error::{Code, Rejection};
use crate::eval::shared::SharedTests;
use crate::eval::transcript::evidence_kind;
use crate::eval::{evaluate_claim, Evaluation, Outcome as Evaluated, Setup};
use crate::fold::Status;
use crate::ingest::seal;
use crate::keys::{check_authority, keyid, Role};
use crate::ops::{Context, Failure, Observer, Stop};
use crate::store::{blobs, Staged, Store};
use ed25519_dalek::SigningKey;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

/// How `check` reaches the store while it records.
pub enum StoreAccess<'a> {
    /// A store the caller holds open throughout (the demo).
    Held(&'a Store),
    /// Opened for each batch of records and closed again, so that a long evaluation never
    /// keeps other elench processes (agents adding claims) waiting for the store.
    Reopen { root: PathBuf, ctx: &'a Context },
}

impl StoreAccess<'_> {
    fn with<R>(&self, f: impl FnOnce(&Store) -> Result<R, Failure>) -> Result<R, Failure> {
        match self {
            StoreAccess::Held(s) => f(s),
            StoreAccess::Reopen { root, ctx } => f(&ctx.open_store_at(root)?),
        }
    }
}

/// Who signs the records, and how.
pub struct Signer {
    pub key: SigningKey,
    pub producer: String,
    pub force: bool,
}

pub(super) fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Checks that the store trusts `key` as a harness (`file`: where it was read from, for the
/// errors).
pub fn harness_key(
    key: &SigningKey,
    file: Option<&Path>,
    store: &Store,
) -> Result<SigningKey, Failure> {
    let shown = file.map(|f| f.display().to_string());
    let sk = key.clone();
    let kid = keyid(&sk.verifying_key());
    let trust = store.trust_set()?;
    match trust.get(&kid) {
        Some(k) if k.retired => Err(Failure::rejected(
            Rejection::new(Code::UntrustedSigner, format!("key {kid} is retired")),
            shown.clone(),
        )),
        Some(k) if k.role != Role::Harness => Err(Failure::rejected(
            Rejection::new(
                Code::RoleViolation,
                format!(
                    "key {kid} has role {}; check records are harness-observed and need a harness key",
                    k.role
                ),
            ),
            shown.clone(),
        )),
        Some(_) => Ok(sk),
        None => Err(Failure::rejected(
            Rejection::new(
                Code::UntrustedSigner,
                format!("key {kid} is not trusted in the store (add it with `elench keys add ‹-role› harness`)"),
            ),
            shown.clone(),
        )),
    }
}

/// Evaluates `targets` (`jobs` at a time) and records what changes a status. Returns the
/// results in the order of `targets`, and a failure that stopped recording, if any. An
/// interrupt stops between claims: what was recorded stays recorded.
pub fn check_claims(
    store: &StoreAccess<'_>,
    setup: &Setup,
    signer: &Signer,
    targets: Vec<Target>,
    jobs: usize,
    stop: &dyn Stop,
    observer: &dyn Observer,
) -> (Vec<Checked>, Option<Failure>) {
    let total = targets.len();
    // Every test the claims call, run together: one run of the runner (per repeat) for all.
    let shared = SharedTests::plan(
        setup.runner.as_ref(),
        targets.iter().map(|t| &t.expr),
        setup.repeat,
    );
    let shared = &shared;
    let next = AtomicUsize::new(0);
    let mut results: Vec<Option<Checked>> = vec![None; total];
    let mut failure = None;
    let stopped = || stop.received().is_some();
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel::<(usize, Evaluation)>();
        for _ in 0..jobs.min(total.max(1)) {
            let tx = tx.clone();
            let targets = &targets;
            let next = &next;
            let stopped = &stopped;
            scope.spawn(move || loop {
                if stopped() {
                    break;
                }
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(t) = targets.get(i) else {
                    break;
                };
                let e = evaluate_claim(setup, shared, &t.claim.id, &t.source, &t.expr);
                if tx.send((i, e)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut done = 0usize;
        // Records are made in batches: whatever has finished when the store is opened.
        while let Ok(first) = rx.recv() {
            let mut batch = vec![first];
            while let Ok(more) = rx.try_recv() {
                batch.push(more);
            }
            let mut made: Vec<(usize, Checked)> = Vec::new();
            if failure.is_none() {
                let r =
                    store.with(|st| record_batch(st, setup, signer, &targets, &batch, &mut made));
                if let Err(f) = r {
                    failure = Some(f);
                }
            }
            for (i, e) in &batch {
                done += 1;
                let mut c = match made.iter().position(|(j, _)| j == i) {
                    Some(k) => made.swap_remove(k).1,
                    None => Checked {
                        id: targets[*i].claim.id.clone(),
                        outcome: Outcome::Inconclusive,
                        reason: Some("not recorded: recording failed".into()),
                        record: None,
                        evidence: None,
                        seconds: None,
                    },
                };
                c.seconds = Some(e.duration.as_millis() as f64 / 1000.0);
                observer.acknowledge(&format!("[{done}/{total}] {} {}\n", c.id, c.outcome));
                results[*i] = Some(c);
            }
        }
    });
    (results.into_iter().flatten().collect(), failure)
}

/// Records a batch of evaluations: decides each in order, writes the evidence blobs of
/// those that change a status (all of them durable before any record naming them is
/// appended), then appends their records as one group. A failure stops at the claim it
/// concerns; results before it stand, and those not in `made` are reported not recorded.
fn record_batch(
    store: &Store,
    setup: &Setup,
    signer: &Signer,
    targets: &[Target],
    batch: &[(usize, Evaluation)],
    made: &mut Vec<(usize, Checked)>,
) -> Result<(), Failure> {
    let mut pending: Vec<(usize, Pending)> = Vec::new();
    let mut kept: Vec<Vec<u8>> = Vec::new();
    let mut stop = None;
    for (i, e) in batch {
        match decide(setup, signer, &targets[*i], e) {
            Ok(Decided::Done(c, transcript)) => {
                kept.extend(transcript);
                made.push((*i, c));
            }
            Ok(Decided::Record(p)) => pending.push((*i, *p)),
            Err(f) => {
                stop = Some(f);
                break;
            }
        }
    }
    if !pending.is_empty() {
        let (trust, generation) = store.trust_snapshot()?;
        let mut staged = Vec::with_capacity(pending.len());
        for (k, (_, p)) in pending.iter().enumerate() {
            let id = Some(p.checked.id.clone());
            let verified = Staged::new(p.envelope.as_bytes(), &trust, generation)
                .map_err(|r| Failure::rejected(r, id));
            match verified {
                Ok(s) => staged.push(s),
                Err(f) => {
                    stop = Some(f);
                    pending.truncate(k);
                    break;
                }
            }
        }
        let evidence: Vec<&[u8]> = pending
            .iter()
            .map(|(_, p)| p.evidence.as_slice())
            .chain(kept.iter().map(Vec::as_slice))
            .collect();
        put_blobs(store, &evidence)?;
        kept.clear();
        let outcomes = if staged.is_empty() {
            Vec::new()
        } else {
            store.commit_group(staged)?
        };
        for ((i, p), outcome) in pending.into_iter().zip(outcomes) {
            match outcome {
                Ok(_) => made.push((i, p.checked)),
                Err(r) => {
                    let f = Failure::rejected(r, Some(p.checked.id.clone()));
                    stop.get_or_insert(f);
                }
            }
        }
    }
    if !kept.is_empty() {
        let kept: Vec<&[u8]> = kept.iter().map(Vec::as_slice).collect();
        put_blobs(store, &kept)?;
    }
    match stop {
        Some(f) => Err(f),
        None => Ok(()),
    }
}

/// Makes evidence blobs durable in the store.
fn put_blobs(store: &Store, bytes: &[&[u8]]) -> Result<(), Failure> {
    blobs::put_many(store.root(), bytes).map_err(|err| Failure::Io {
        path: store.root().join("blobs").display().to_string(),
        message: err.to_string(),
    })?;
    Ok(())
}

/// What one evaluation comes to before the store is reached.
enum Decided {
    /// Nothing to record; a transcript to keep as the result's evidence when a runner ran
    /// and decided nothing (what it printed is the user's only clue why).
    Done(Checked, Option<Vec<u8>>),
    /// A sealed record to append, and the evidence blob it names.
    Record(Box<Pending>),
}

struct Pending {
    /// The result once the record is appended.
    checked: Checked,
    envelope: String,
    evidence: Vec<u8>,
}

/// Turns one evaluation into a result, and a sealed record when it changes the claim's
/// status (or `--force`).
fn decide(setup: &Setup, signer: &Signer, t: &Target, e: &Evaluation) -> Result<Decided, Failure> {
    let id = t.claim.id.clone();
    let mut c = Checked {
        id: id.clone(),
        outcome: Outcome::Inconclusive,
        reason: None,
        record: None,
        evidence: None,
        seconds: None,
    };
    let (kind, value) = match &e.outcome {
        Evaluated::Inconclusive(why) | Evaluated::Flaky(why) => {
            if matches!(e.outcome, Evaluated::Flaky(_)) {
                c.outcome = Outcome::Flaky;
            }
            c.reason = Some(why.clone());
            let kept = (!e.transcript.runs.is_empty()).then(|| e.transcript.to_bytes());
            c.evidence = kept.as_deref().map(blobs::digest);
            return Ok(Decided::Done(c, kept));
        }
        Evaluated::True => ("verification", true),
        Evaluated::False => ("falsification", false),
    };
    // A verification changes only an unevaluated claim; a falsification anything not yet
    // falsified.
    let changes = if value {
        t.own == Status::Unevaluated
    } else {
        t.own != Status::Falsified
    };
    if !changes && !signer.force {
        c.outcome = Outcome::Unchanged;
        c.reason = Some(format!(
            "the predicate is {value}; the claim is already {} and a {kind} would not change that",
            t.own
        ));
        return Ok(Decided::Done(c, None));
    }
    let bytes = e.transcript.to_bytes();
    let digest = blobs::digest(&bytes);
    let (ev_kind, exit) = evidence_kind(&e.transcript.runs);
    let mut evidence = json!({"kind": ev_kind, "digest": digest});
    if let Some(code) = exit {
        evidence["exitCode"] = json!(code);
    }
    let mut anchor = t.body.anchor().cloned().unwrap_or_default();
    if !anchor.is_object() {
        anchor = json!({"strategy": "multi"});
    }
    anchor["tree"] = json!(setup.tree_oid);
    // A carried claim's record is anchored where its lines are now.
    if let Some(r) = &t.carried {
        if let Some(path) = &r.path {
            anchor["path"] = json!(path);
        }
        match r.range {
            Some(range) => anchor["range"] = json!(range),
            None => {
                if let Some(obj) = anchor.as_object_mut() {
                    obj.remove("range");
                }
            }
        }
    }
    let mut shown: String = t.source.chars().take(1500).collect();
    if shown.len() < t.source.len() {
        shown.push('…');
    }
    let text = format!(
        "elench check: `{shown}` is {value} at tree {}",
        setup.tree_oid
    );
    // The tree observed is the record's anchor tree; the digest of what the predicate read
    // there lets the verdict apply wherever that is unchanged.
    let mut evidence = vec![evidence];
    if let Some(inputs) = &t.inputs {
        evidence.push(crate::anchor::inputs::evidence_entry(&id, inputs));
    }
    let claim = json!({
        "kind": kind,
        "target": [id],
        "assertion": {"form": "annotation", "text": text},
        "origin": {"kind": "harness-observed",
                   "producer": {"id": signer.producer,
                                "hermeticity": setup.sandbox.hermeticity()}},
        "anchor": anchor,
        "timestamp": now_secs(),
        "evidence": evidence,
    });
    let (sealed, envelope) =
        seal(&claim, &signer.key).map_err(|r| Failure::rejected(r, Some(id.clone())))?;
    check_authority(Role::Harness, &sealed).map_err(|r| Failure::rejected(r, Some(id.clone())))?;
    c.outcome = if value {
        Outcome::Verified
    } else {
        Outcome::Falsified
    };
    c.record = Some(sealed.id);
    c.evidence = Some(digest);
    Ok(Decided::Record(Box::new(Pending {
        checked: c,
        envelope,
        evidence: bytes,
    })))
}
