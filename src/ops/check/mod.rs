//! `check`: evaluate predicate claims against a tree and append what the harness observed (a
//! verification for true, a falsification for false), signed with a harness key, with the
//! evaluation transcript kept as a blob in the store.
//!
//! Here: the input, the output and the run of one `check`. Which claims are evaluated at the
//! tree is `select`; evaluating them and recording what changes a status is `record`.

mod record;
mod select;

pub use record::{check_claims, harness_key, Signer, StoreAccess};
pub use select::{applicability, predicate_of, Applies, Target};

use super::error::{InputError, Param};
use super::{Context, Failure, Stop};
use crate::claim::Gist;
use crate::eval::paths::Tree;
use crate::eval::runners::Runner;
use crate::eval::sandbox::{find_bwrap, Confinement, Layer, Limits, Sandbox, BWRAP_MISSING};
use crate::eval::{uses_processes, Setup};
use ed25519_dalek::SigningKey;
use select::select;
use serde::Serialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// What to check, where, and how.
#[derive(Debug, Clone)]
pub struct CheckInput {
    /// Claim ids or unique prefixes of them; ignored with `all`.
    pub ids: Vec<String>,
    /// Every predicate claim that applies at the tree and is still unevaluated.
    pub all: bool,
    /// The tree to check against; None: the enclosing checkout of the working directory.
    pub at: Option<PathBuf>,
    /// Keep the files that ignore rules leave out of the tree.
    pub no_ignore: bool,
    /// The harness key that signs the records, trusted in the store as a harness.
    pub key: SigningKey,
    /// The file the key was read from, if any: hidden from every evaluation (by path,
    /// inode and bytes) and named in errors about the key.
    pub key_file: Option<PathBuf>,
    /// The producer id the records state (None: `elench/VERSION check`).
    pub producer: Option<String>,
    /// Wall time for one evaluation of one claim.
    pub claim_timeout: Duration,
    /// Evaluations per claim; recorded only when all agree.
    pub repeat: u32,
    /// Claims evaluated at once.
    pub jobs: usize,
    /// What runs `test(NAME)`.
    pub runner: Option<Runner>,
    /// Host paths visible read-only inside the sandbox.
    pub expose: Vec<PathBuf>,
    /// Address-space limit per process, MiB.
    pub memory_mib: u64,
    /// Process limit for one claim's sandbox.
    pub processes: u64,
    /// Space for each process's writes, MiB.
    pub scratch_mib: u64,
    /// Run processes unconfined (records say `hermeticity: none`).
    pub no_sandbox: bool,
    /// Record the result even when it changes no status.
    pub force: bool,
    /// Also what a document shows of each claim checked (`CheckOutput::details`).
    pub details: bool,
}

impl CheckInput {
    /// A check of `ids` (all predicate claims when empty) signed with `key`, with the
    /// defaults of `elench check`.
    pub fn new(ids: Vec<String>, key: SigningKey) -> CheckInput {
        CheckInput {
            all: ids.is_empty(),
            ids,
            at: None,
            no_ignore: false,
            key,
            key_file: None,
            producer: None,
            claim_timeout: Duration::from_secs(300),
            repeat: 1,
            jobs: 1,
            runner: None,
            expose: Vec::new(),
            memory_mib: 2048,
            processes: 256,
            scratch_mib: 1024,
            no_sandbox: false,
            force: false,
            details: false,
        }
    }
}

/// What came of one claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Verified,
    Falsified,
    Unchanged,
    NotApplicable,
    Inconclusive,
    Flaky,
}

impl Outcome {
    /// Every outcome, in the order `counts` lists them.
    pub const ALL: [Outcome; 6] = [
        Outcome::Verified,
        Outcome::Falsified,
        Outcome::Unchanged,
        Outcome::NotApplicable,
        Outcome::Inconclusive,
        Outcome::Flaky,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Verified => "verified",
            Outcome::Falsified => "falsified",
            Outcome::Unchanged => "unchanged",
            Outcome::NotApplicable => "not-applicable",
            Outcome::Inconclusive => "inconclusive",
            Outcome::Flaky => "flaky",
        }
    }

    /// Not decided: nothing was recorded, and the run is a partial result.
    pub fn undecided(self) -> bool {
        matches!(self, Outcome::Inconclusive | Outcome::Flaky)
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One line of `checked`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct Checked {
    pub id: String,
    pub outcome: Outcome,
    pub reason: Option<String>,
    /// The record appended (a verification or falsification), if any.
    pub record: Option<String>,
    /// The digest of the transcript blob the record names.
    pub evidence: Option<String>,
    /// How long the evaluation took (all its repeats, and any shared test run it waited
    /// for), in seconds to the millisecond; None when the claim was not evaluated.
    pub seconds: Option<f64>,
}

impl Checked {
    fn skipped(id: &str, reason: String) -> Checked {
        Checked {
            id: id.to_owned(),
            outcome: Outcome::NotApplicable,
            reason: Some(reason),
            record: None,
            evidence: None,
            seconds: None,
        }
    }
}

/// How many claims came to each outcome.
#[derive(Debug, Clone, Default, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct Counts {
    pub verified: usize,
    pub falsified: usize,
    pub unchanged: usize,
    #[serde(rename = "not-applicable")]
    pub not_applicable: usize,
    pub inconclusive: usize,
    pub flaky: usize,
}

impl Counts {
    fn of(checked: &[Checked]) -> Counts {
        let n = |o: Outcome| checked.iter().filter(|c| c.outcome == o).count();
        Counts {
            verified: n(Outcome::Verified),
            falsified: n(Outcome::Falsified),
            unchanged: n(Outcome::Unchanged),
            not_applicable: n(Outcome::NotApplicable),
            inconclusive: n(Outcome::Inconclusive),
            flaky: n(Outcome::Flaky),
        }
    }
}

/// What `check` did.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct CheckOutput {
    /// The checked tree's OID.
    pub tree: String,
    /// The directory it was read from.
    pub at: String,
    /// `container` (bubblewrap) or `none`.
    pub hermeticity: &'static str,
    pub checked: Vec<Checked>,
    pub counts: Counts,
    /// `created` when records were appended, else `noop`.
    pub effect: &'static str,
    /// What stopped recording part way (a store failure, or the stop asked for), with the
    /// results before it standing in `checked`.
    #[serde(skip)]
    pub stopped: Option<Failure>,
    /// With `details`: what a document shows of each claim checked (not those that did not
    /// apply), by id, read after the records were appended; a failure to read them leaves
    /// what was recorded standing.
    #[serde(skip)]
    pub details: Option<Result<HashMap<String, Detail>, Failure>>,
}

/// What a document (JUnit, workflow commands) shows of a checked claim beside its result.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Detail {
    /// Its `assertion.text` (empty when it has none).
    pub text: String,
    /// Where its lines are at the checked tree, when it applies there.
    pub path: Option<String>,
    pub range: Option<[u64; 2]>,
    /// When falsified: the end of its transcript, at most [`TRANSCRIPT_TAIL`] bytes (none
    /// when the blob cannot be read: that only shortens the document).
    pub transcript: Option<String>,
}

/// The last bytes of a transcript a document shows.
pub const TRANSCRIPT_TAIL: usize = 4096;

/// [`Detail`] of each claim `checked` names, read from the store of `ctx` at the tree
/// `at` (`tree`).
fn details(
    ctx: &Context,
    checked: &[Checked],
    at: &Path,
    tree: &str,
    selection: crate::tree::Selection,
) -> Result<HashMap<String, Detail>, Failure> {
    let store = ctx.open_store()?;
    let _snapshot = store.pin()?;
    let mut resolver = crate::anchor::Resolver::new(at, tree).with_selection(selection);
    let mut out = HashMap::new();
    for c in checked {
        if c.outcome == Outcome::NotApplicable {
            continue;
        }
        let mut d = Detail::default();
        if let Some(s) = store.get_light(&c.id)? {
            let res = resolver.resolve(&s.claim, &s.body)?;
            d.text = s.body.text().map(str::to_owned).unwrap_or_default();
            if res.applies.applies() {
                d.path = res.path;
                d.range = res.range;
            }
        }
        if let (Some(digest), Outcome::Falsified) = (&c.evidence, c.outcome) {
            d.transcript = crate::store::blobs::get(store.root(), digest)
                .ok()
                .flatten()
                .map(|bytes| {
                    let from = bytes.len().saturating_sub(TRANSCRIPT_TAIL);
                    String::from_utf8_lossy(&bytes[from..]).into_owned()
                });
        }
        out.insert(c.id.clone(), d);
    }
    Ok(out)
}

impl CheckOutput {
    /// Each claim's reason worded by a front end (a reason may name an input, as
    /// `‹force›`: [`crate::ops::error::word`]).
    pub fn word_reasons(&mut self, say: &dyn Fn(crate::ops::error::Named) -> String) {
        for c in &mut self.checked {
            if let Some(r) = &mut c.reason {
                *r = crate::ops::error::word(r, say);
            }
        }
    }
}

/// The limits given as 0, which mean nothing.
fn zero_limits(input: &CheckInput) -> Vec<Param> {
    let mut zero = Vec::new();
    for (param, value) in [
        (Param::Timeout, u64::from(!input.claim_timeout.is_zero())),
        (Param::Repeat, u64::from(input.repeat)),
        (Param::Jobs, input.jobs as u64),
        (Param::Memory, input.memory_mib),
        (Param::Processes, input.processes),
        (Param::Scratch, input.scratch_mib),
    ] {
        if value == 0 {
            zero.push(param);
        }
    }
    zero
}

/// The refusal of limits given as 0: one error per input, naming it (the CLI's value parsers
/// refuse 0 too; a caller of the library, or a value that reached `check` another way, such
/// as the global time limit written before the command, is answered the same).
fn zero_limits_failure(zero: &[Param]) -> Option<Failure> {
    Failure::inputs(
        zero.iter()
            .map(|p| InputError::new(*p, Some("0"), format!("‹{}› must be more than 0", p.name())))
            .collect(),
    )
}

/// Checks the claims `input` names against its tree, in the store of `ctx`, waiting up to its
/// `wait` for the store each time it records. The store is opened per batch of records, never
/// held through an evaluation. Warnings go to the context's observer, and each claim is
/// acknowledged there as it is decided; `stop` ends the run between claims (and the
/// processes in flight), keeping what was recorded.
pub fn check(ctx: &Context, input: &CheckInput, stop: &dyn Stop) -> Result<CheckOutput, Failure> {
    let observer = ctx.observer();
    if let Some(refused) = zero_limits_failure(&zero_limits(input)) {
        return Err(refused);
    }
    let at = match &input.at {
        Some(d) => d.clone(),
        None => super::tree::tree_dir(None)?,
    };
    if !at.is_dir() {
        return Err(Failure::usage(
            Some(Param::At),
            format!("‹at› {}: not a directory", at.display()),
        ));
    }
    let mut expose = Vec::new();
    for e in &input.expose {
        let abs = e.canonicalize().map_err(|err| {
            Failure::usage(
                Some(Param::Expose),
                format!("‹expose› {}: {err}", e.display()),
            )
        })?;
        expose.push(abs);
    }
    // One listing gives the tree OID and what the evaluation must not see, so the claim's
    // tree, what predicates read and the sandbox's copy are one set of files.
    let selection = crate::tree::Selection::from_no_ignore(input.no_ignore);
    let listing = crate::tree::list(&at, selection)
        .and_then(|l| Ok((l.ids()?, super::tree::tracked_ignored(&at, &l), l.ignored)))
        .map_err(|e| Failure::Invalid {
            code: crate::error::Code::BadTree,
            message: format!("‹at› {}: {e}", at.display()),
        })?;
    let (tree_ids, tracked, ignored) = listing;
    let tree_oid = tree_ids.oid().to_owned();

    let store = ctx.open_store()?;
    let key = harness_key(&input.key, input.key_file.as_deref(), &store)?;

    // What the sandbox must never see, even when it sits in the tree.
    let mut tree = Tree::new(&at);
    for hide in std::iter::once(store.root()).chain(input.key_file.as_deref()) {
        if let Some(rel) = inside(&at, hide) {
            tree = tree.hide(&rel);
        }
    }
    // Ignored files are not in the tree: build outputs and secrets next to the code.
    for rel in &ignored {
        tree = tree.hide(rel);
    }
    // Nor is the key under another name: a hard link to it, or a copy of its bytes.
    if let Some(file) = &input.key_file {
        tree = tree
            .hide_file(file)
            .map_err(|e| Failure::io(file.display(), e))?;
    }
    // What an earlier check that was killed outright left in the scratch folder goes now.
    crate::scratch::sweep();

    let (targets, mut checked) = select(&store, input, &at, tree_ids)?;
    let access = StoreAccess::Reopen {
        root: store.root().to_path_buf(),
        ctx,
    };
    drop(store);
    let needs_processes = targets.iter().any(|t| uses_processes(&t.expr));
    let bwrap = find_bwrap();
    if needs_processes && !input.no_sandbox && bwrap.is_none() {
        return Err(Failure::Precondition {
            code: crate::error::Code::SandboxUnavailable,
            message: format!(
                "claims to check start processes, and bubblewrap (`bwrap`), the sandbox they \
                 run in, is not installed (not found on PATH): {BWRAP_MISSING}"
            ),
        });
    }
    let confinement = if input.no_sandbox {
        Confinement::None
    } else {
        Confinement::Bwrap(bwrap.unwrap_or_else(|| PathBuf::from("bwrap")))
    };
    let mut sandbox = Sandbox {
        confinement,
        expose,
        limits: Limits {
            memory: input.memory_mib.saturating_mul(1 << 20),
            processes: input.processes,
            scratch: input.scratch_mib.saturating_mul(1 << 20),
        },
        layer: Layer::Copy,
        reaper: ctx.reaper().clone(),
    };
    if needs_processes && input.no_sandbox {
        // Only to choose how each process gets its own layer; unconfined, a copy always works.
        let _ = sandbox.probe();
    }
    if needs_processes && !input.no_sandbox {
        if let Err(why) = sandbox.probe() {
            return Err(Failure::Precondition {
                code: crate::error::Code::SandboxUnavailable,
                message: format!(
                    "claims to check start processes, and no sandbox can be made here ({why}); \
                     install bubblewrap (bwrap), or pass ‹no_sandbox› to run them unconfined \
                     (records then say hermeticity: none)"
                ),
            });
        }
    }
    let setup = Setup {
        tree,
        tree_oid: tree_oid.clone(),
        sandbox,
        denied: None,
        runner: input.runner.clone(),
        timeout: input.claim_timeout,
        repeat: input.repeat,
        cancel: AtomicBool::new(false),
        slots: Default::default(),
    };
    let signer = Signer {
        key,
        producer: input
            .producer
            .clone()
            .unwrap_or_else(|| format!("elench/{} check", env!("CARGO_PKG_VERSION"))),
        force: input.force,
    };
    // A stop also ends the processes in flight, so check stops promptly.
    let finished = AtomicBool::new(false);
    let (done, failure) = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !finished.load(Ordering::SeqCst) {
                if stop.received().is_some() {
                    setup.cancel.store(true, Ordering::SeqCst);
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let r = check_claims(
            &access, &setup, &signer, targets, input.jobs, stop, observer,
        );
        finished.store(true, Ordering::SeqCst);
        r
    });
    checked.extend(done);
    let mut failure = failure;
    if failure.is_none() {
        if let Some(signal) = stop.received() {
            failure = Some(Failure::interrupted(signal));
        }
    }
    // Not a partial result: the claims were decided, about a tree that lacks these files.
    if let Some((code, message)) = tracked {
        observer.warn(code, message);
    }
    let details = input
        .details
        .then(|| details(ctx, &checked, &at, &tree_oid, selection));
    Ok(CheckOutput {
        details,
        tree: tree_oid,
        at: at.display().to_string(),
        hermeticity: setup.sandbox.hermeticity(),
        counts: Counts::of(&checked),
        // Records appended to the log, or none.
        effect: if checked.iter().any(|c| c.record.is_some()) {
            "created"
        } else {
            "noop"
        },
        checked,
        stopped: failure,
    })
}

/// `inner` relative to `outer`, when it lies inside it.
fn inside(outer: &Path, inner: &Path) -> Option<PathBuf> {
    let o = outer.canonicalize().ok()?;
    let i = inner.canonicalize().ok()?;
    i.strip_prefix(&o).ok().map(Path::to_path_buf)
}
