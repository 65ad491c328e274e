//! `check`: evaluate predicate claims against a tree and append what the harness observed (a
//! verification for true, a falsification for false), signed with a harness key, with the
//! evaluation transcript kept as a blob in the store.

use super::error::ArgError;
use super::{Context, Failure, Observer, Stop};
use crate::anchor::{Applies as AnchorApplies, AtTree, Resolution, Resolver};
use crate::claim::predicate::{self, Expr};
use crate::claim::{Body, Claim, Gist};
use crate::error::{Code, Rejection};
use crate::eval::paths::Tree;
use crate::eval::runners::Runner;
use crate::eval::sandbox::{find_bwrap, Confinement, Layer, Limits, Sandbox, BWRAP_MISSING};
use crate::eval::shared::SharedTests;
use crate::eval::transcript::evidence_kind;
use crate::eval::{evaluate_claim, uses_processes, Evaluation, Outcome as Evaluated, Setup};
use crate::fold::{Fold, Status};
use crate::ingest::seal;
use crate::keys::{check_authority, keyid, Role};
use crate::store::{blobs, Staged, Store};
use crate::tree::TreeIds;
use ed25519_dalek::SigningKey;
use serde::Serialize;
use serde_json::json;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
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

/// The limits given as 0, which mean nothing: the flags that name them.
fn zero_limits(input: &CheckInput) -> Vec<&'static str> {
    let mut zero = Vec::new();
    for (flag, value) in [
        ("‹timeout›", u64::from(!input.claim_timeout.is_zero())),
        ("‹repeat›", u64::from(input.repeat)),
        ("‹jobs›", input.jobs as u64),
        ("‹memory›", input.memory_mib),
        ("‹processes›", input.processes),
        ("‹scratch›", input.scratch_mib),
    ] {
        if value == 0 {
            zero.push(flag);
        }
    }
    zero
}

/// The refusal of limits given as 0: one error per flag, naming it (the CLI's value parsers
/// refuse 0 too; a caller of the library, or a value that reached `check` another way, such
/// as the global `--timeout` written before the command, is answered the same).
fn zero_limits_failure(zero: &[&str]) -> Option<Failure> {
    Failure::arguments(
        zero.iter()
            .map(|flag| ArgError::new(*flag, Some("0"), format!("{flag} must be more than 0")))
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
        return Err(Failure::Usage(format!(
            "‹at› {}: not a directory",
            at.display()
        )));
    }
    let mut expose = Vec::new();
    for e in &input.expose {
        let abs = e
            .canonicalize()
            .map_err(|err| Failure::Usage(format!("‹expose› {}: {err}", e.display())))?;
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

/// Whether a claim speaks about the tree being checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applies {
    /// Its anchor tree is this tree.
    Anchored,
    /// Made about an earlier tree, and the lines it is about are here unchanged (by their
    /// content digest): evaluated here, and recorded against where the lines are now.
    Carried(Resolution),
    NotApplicable(String),
}

/// The one place that decides whether a claim is evaluated at a tree: its anchor tree is
/// the tree's OID, or it carries over to it; a stale or unanchored claim is never evaluated
/// against code it does not speak about.
pub fn applicability<G: Gist>(
    claim: &Claim,
    text: &G,
    resolver: &mut Resolver,
) -> Result<Applies, Failure> {
    let r = resolver.resolve(claim, text)?;
    Ok(match r.applies {
        AnchorApplies::Anchored => Applies::Anchored,
        AnchorApplies::Carried => Applies::Carried(r),
        AnchorApplies::Stale => Applies::NotApplicable(format!(
            "anchored to tree {}; the lines it is about changed or are gone here, or it has no \
             content digest to show them unchanged (stale)",
            claim.anchor_tree
        )),
        AnchorApplies::Unanchored => Applies::NotApplicable(format!(
            "a claim about the whole tree {}, not the checked tree {} (unanchored)",
            claim.anchor_tree,
            resolver.tree()
        )),
    })
}

/// A claim selected for evaluation.
pub struct Target {
    pub claim: Claim,
    /// The claim as signed (its anchor goes into the record).
    pub body: Body,
    pub source: String,
    pub expr: Expr,
    /// Its own status at the checked tree (only the observations that apply there count).
    pub own: Status,
    /// Where a carried claim's lines are in the checked tree (None when anchored there).
    pub carried: Option<Resolution>,
    /// The digest of its inputs at the checked tree, which the record states so that the
    /// verdict applies wherever those inputs are the same.
    pub inputs: Option<String>,
}

/// The predicate of a claim, if it is one this elench evaluates.
pub fn predicate_of(body: &Body) -> Result<(String, Expr), String> {
    let a = body.assertion();
    if a["form"].as_str() != Some("predicate") {
        return Err("an annotation: nothing to evaluate".into());
    }
    let lang = a["expression"]["language"].as_str().unwrap_or_default();
    if lang != predicate::LANGUAGE {
        return Err(format!(
            "its language {lang:?} is not {}",
            predicate::LANGUAGE
        ));
    }
    let source = a["expression"]["source"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let expr = predicate::parse(&source).map_err(|e| format!("its predicate: {e}"))?;
    Ok((source, expr))
}

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

/// `inner` relative to `outer`, when it lies inside it.
fn inside(outer: &Path, inner: &Path) -> Option<PathBuf> {
    let o = outer.canonicalize().ok()?;
    let i = inner.canonicalize().ok()?;
    i.strip_prefix(&o).ok().map(Path::to_path_buf)
}

fn now_secs() -> i64 {
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

/// The claims to evaluate, and the ones reported without evaluation (not applicable).
/// Applicability and status (at the checked tree: only the observations that apply there
/// count) come from the index; the predicate is read from the log only for claims that will
/// be evaluated.
fn select(
    store: &Store,
    a: &CheckInput,
    dir: &Path,
    tree: TreeIds,
) -> Result<(Vec<Target>, Vec<Checked>), Failure> {
    let selection = crate::tree::Selection::from_no_ignore(a.no_ignore);
    let mut resolver = Resolver::new(dir, tree.oid()).with_selection(selection);
    let view = AtTree::new(store, tree, dir, selection);
    let mut fold = Fold::new(&view);
    let mut targets = Vec::new();
    let mut skipped = Vec::new();
    let full = |id: &str| -> Result<(Claim, Body), Failure> {
        store
            .get(id)?
            .map(|c| (c.claim, c.body))
            .ok_or_else(|| Failure::NotFound {
                code: crate::error::Code::NotFound,
                message: format!("no claim {id} in the store"),
            })
    };
    if a.all {
        for id in store.claim_ids()? {
            let Ok(light) = fold.require_summary(&id) else {
                continue;
            };
            if light.body.form() != Some("predicate") {
                continue;
            }
            let carried = match applicability(&light.claim, &light.body, &mut resolver)? {
                Applies::Anchored => None,
                Applies::Carried(r) => Some(r),
                Applies::NotApplicable(_) => continue,
            };
            // Evaluated unless an observation that applies at this tree decided it (or it
            // was superseded): a verdict about another tree is no answer here. `--force`
            // evaluates it again.
            let decided = fold.own(&id)?;
            let own = decided.status;
            if own != Status::Unevaluated && !a.force {
                skipped.push(Checked {
                    id: id.clone(),
                    outcome: Outcome::Unchanged,
                    reason: Some(format!(
                        "already {own} at this tree (by {}); ‹force› evaluates it again",
                        decided.decided_by.join(", ")
                    )),
                    record: None,
                    evidence: None,
                    seconds: None,
                });
                continue;
            }
            let (claim, body) = full(&id)?;
            let Ok((source, expr)) = predicate_of(&body) else {
                continue;
            };
            targets.push(Target {
                inputs: view.inputs_of(&id)?,
                claim,
                body,
                source,
                expr,
                own,
                carried,
            });
        }
        return Ok((targets, skipped));
    }
    let ids = super::ids::resolve_claim_ids(store, &a.ids)?;
    let mut seen = std::collections::HashSet::new();
    for id in &ids {
        if !seen.insert(id.clone()) {
            continue;
        }
        let (claim, body) = full(id)?;
        let (source, expr) = match predicate_of(&body) {
            Ok(x) => x,
            Err(why) => {
                skipped.push(Checked::skipped(id, why));
                continue;
            }
        };
        let carried = match applicability(&claim, &body, &mut resolver)? {
            Applies::Anchored => None,
            Applies::Carried(r) => Some(r),
            Applies::NotApplicable(why) => {
                skipped.push(Checked::skipped(id, why));
                continue;
            }
        };
        let own = fold.own(id)?.status;
        targets.push(Target {
            inputs: view.inputs_of(id)?,
            claim,
            body,
            source,
            expr,
            own,
            carried,
        });
    }
    Ok((targets, skipped))
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
