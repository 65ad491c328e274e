//! `claim`: from intent to a signed, appended claim in one call, no JSON by hand.
//!
//! Each claim comes in its short form ([`ShortClaim`]); the operation computes its anchor from
//! the tree, expands id prefixes against the store (and `"@N"`, an earlier line of the same
//! batch), takes the origin from the signing key's role and the producer from the request or
//! the key's name, builds the claim (`claim::draft`), checks who may say it (section 1.6 of
//! the contract, as ingest will), seals it and appends the whole batch as one group through
//! the store's ordinary path (`Store::commit_group`, as `add`). Everything that can be wrong
//! with any claim is found before anything is signed, so a refused batch appends nothing.

use super::add::Refusal;
use super::outcome::Taken;
use super::tree::{relative_to, tree_dir};
use super::{Context, Failure, Observer};
use crate::anchor::at_tree::{claim_inputs, is_observation};
use crate::anchor::{self, inputs, Resolver, Strategy};
use crate::claim::draft::{self, Draft};
use crate::claim::{is_claim_id, Body, Claim, Gist, Kind, OriginKind};
use crate::envelope::MAX_ENVELOPE_BYTES;
use crate::error::{Code, Rejection};
use crate::fold::Fold;
use crate::ingest::{seal, Signer};
use crate::keys::{check_authority, keyid, Role};
use crate::ops::error::Param;
use crate::store::{DryRun, Effect, Staged, Store};
use crate::tree::{Listing, Selection, TreeIds};
use ed25519_dalek::SigningKey;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Claims in one request: a batch is one group of the log, and its report lists every line.
pub const MAX_CLAIMS: usize = 4096;

/// One claim in the short form: the flags of `elench claim`, one line of `--batch`, the input
/// of an MCP `claim` call. Absent fields take their defaults (kind `assertion`, timestamp
/// now, producer from the request or the key).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ShortClaim {
    /// `assertion.text`.
    pub text: Option<String>,
    /// `assertion` (default), `falsification`, `verification`, `supersession` or
    /// `residue-acceptance`.
    pub kind: Option<Kind>,
    /// An `elench-predicate-v1` expression: the assertion's form is then `predicate`.
    pub predicate: Option<String>,
    /// `PATH[:START-END]` in the tree (at most one: a claim has one anchor). None: the claim
    /// is about the whole tree.
    #[serde(deserialize_with = "one_or_many")]
    pub anchor: Vec<String>,
    /// Premises: ids, unique prefixes, or `@N` (line N of the same batch).
    pub depends_on: Vec<String>,
    /// Claims a record acts on: ids, unique prefixes, or `@N`.
    pub target: Vec<String>,
    /// `KIND[:DIGEST|:EXIT|:URI]` (`claim::draft::parse_evidence`).
    pub evidence: Vec<String>,
    /// `origin.producer.id`; overrides the request's.
    pub producer: Option<String>,
    /// `origin.producer.sessionId`; overrides the request's.
    pub session: Option<String>,
    /// Unix seconds (given, the id is reproducible).
    pub timestamp: Option<i64>,
    /// Which of the request's keys signs: its name in the store, its role, or its keyid.
    /// Default: the first key, or, for a verification or a residue-acceptance, the key of
    /// the role that kind needs when the first key lacks it.
    pub signer: Option<String>,
}

/// A string or a list of strings (a batch line may write `"anchor": "src/a.rs:3-9"`).
fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    })
}

/// One claim of a request and the number it answers to as `@N` (its line in a batch file).
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub line: usize,
    pub claim: ShortClaim,
}

/// What to claim, and who signs it.
pub struct ClaimRequest {
    /// The claims, in order; [`ClaimRequest::numbered`] numbers them from 1.
    pub claims: Vec<Entry>,
    /// Where a batch came from (a file, or `stdin`): errors and rows then name it and the
    /// line. None for one claim given directly.
    pub batch: Option<String>,
    /// The signing keys, at least one; each claim is signed by one of them
    /// ([`ShortClaim::signer`]), and that key's role in the store's trust set decides its
    /// origin. Only these keys can sign: a claim's input chooses among them, never beyond.
    pub keys: Vec<SigningKey>,
    /// The tree the anchors are in. None: the enclosing git work tree of the working
    /// directory, else the working directory.
    pub at: Option<PathBuf>,
    /// The producer of claims that name none (the CLI passes `--producer`, else
    /// `ELENCH_PRODUCER`); None: the key's name in the store.
    pub producer: Option<String>,
    /// The session of claims that name none.
    pub session: Option<String>,
    /// Build, check and sign, but append nothing.
    pub dry_run: bool,
}

impl ClaimRequest {
    /// A request for `claims`, numbered 1, 2, … for `@N`.
    pub fn numbered(claims: Vec<ShortClaim>, key: SigningKey) -> ClaimRequest {
        ClaimRequest::numbered_with_keys(claims, vec![key])
    }

    /// [`ClaimRequest::numbered`] with several keys to sign with.
    pub fn numbered_with_keys(claims: Vec<ShortClaim>, keys: Vec<SigningKey>) -> ClaimRequest {
        ClaimRequest {
            claims: claims
                .into_iter()
                .enumerate()
                .map(|(i, claim)| Entry { line: i + 1, claim })
                .collect(),
            batch: None,
            keys,
            at: None,
            producer: None,
            session: None,
            dry_run: false,
        }
    }
}

/// What `claim` did: `add`'s result (counts, accepted claims, rejections) and each claim's
/// status after the append.
#[derive(Debug, Clone, Serialize)]
pub struct ClaimOutput {
    pub created: usize,
    pub merged: usize,
    pub noop: usize,
    pub rejected: usize,
    pub claims: Vec<ClaimRow>,
    /// Claims the store refused at the append (a key retired meanwhile, say), as `add`
    /// lists its refusals.
    pub rejections: Vec<Refusal>,
    /// Nothing was appended: the rows say what would be.
    pub dry_run: bool,
    /// The keys given, in order, as the store knows them: keyid, role and name.
    pub signers: Vec<Signer>,
}

impl ClaimOutput {
    /// What the request changed, as a whole (`effect`): `created` when a claim is new,
    /// `updated` when only new signatures were added, `noop` when all was stored already;
    /// `would_…` in a dry run.
    pub fn effect(&self) -> super::outcome::Effect {
        super::outcome::Effect::of_counts(self.created, self.merged, self.dry_run)
    }

    /// How much of the request the store took.
    pub fn taken(&self) -> Taken {
        Taken::of(self.created + self.merged + self.noop, self.rejected)
    }

    /// The failure a front end reports beside the data when the store refused some or all of
    /// the claims (`PARTIAL_FAILURE`, `ALL_REJECTED`); None when it took them all.
    pub fn failure(&self) -> Option<Failure> {
        match self.taken() {
            Taken::Whole => None,
            Taken::NoneOf { refused } => Some(Failure::AllRejected(format!(
                "the store refused all {refused} claim(s); see data.rejections"
            ))),
            Taken::Partial { accepted, refused } => Some(Failure::Partial(format!(
                "the store refused {refused} of {} claims (see data.rejections); the other \
                 {accepted} are stored",
                refused + accepted
            ))),
        }
    }
}

/// One claim made.
#[derive(Debug, Clone, Serialize)]
pub struct ClaimRow {
    pub id: String,
    /// `created`, `merged` (a new signature on a stored claim) or `noop` (that envelope
    /// was stored already); in a dry run, what the append would do.
    pub effect: &'static str,
    /// The batch's source, or `claim`.
    pub source: String,
    /// Its line in the batch (None for one claim given directly).
    pub line: Option<usize>,
    pub kind: Kind,
    pub origin: OriginKind,
    pub producer: String,
    /// The keyid of the key that signed it.
    pub signer: String,
    /// Its effective status after the append (`unevaluated`, `verified`, …); None in a dry run.
    pub status: Option<&'static str>,
    /// The claim as signed (the Statement's predicate): in a dry run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claim: Option<Value>,
    /// The signed envelope: in a dry run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub envelope: Option<Value>,
}

/// One claim built and sealed, not yet appended.
struct Sealed {
    signer: String,
    line: Option<usize>,
    claim: Value,
    envelope: String,
    staged: Staged,
}

/// [`claim`] in the store `ctx` names, opened once the request is known to be well formed;
/// warnings go to its observer.
pub fn claim_at(ctx: &Context, req: ClaimRequest) -> Result<ClaimOutput, Failure> {
    check_request(&req)?;
    let store = ctx.open_store()?;
    claim(&store, req, ctx.observer())
}

/// What is wrong with a request before the store is opened.
fn check_request(req: &ClaimRequest) -> Result<(), Failure> {
    if req.claims.is_empty() {
        return Err(Failure::usage(
            None,
            "nothing to claim: the batch holds no claim".into(),
        ));
    }
    if req.claims.len() > MAX_CLAIMS {
        return Err(Failure::usage(
            None,
            format!(
                "{} claims in one batch; at most {MAX_CLAIMS}: split it",
                req.claims.len()
            ),
        ));
    }
    if req.keys.is_empty() {
        return Err(Failure::usage(
            Some(Param::Key),
            "no key to sign with: give ‹key› KEY.pem".into(),
        ));
    }
    Ok(())
}

/// Builds, checks, signs and (unless a dry run) appends the request's claims as one group;
/// [`claim_at`] has checked the request.
fn claim(
    store: &Store,
    req: ClaimRequest,
    observer: &dyn Observer,
) -> Result<ClaimOutput, Failure> {
    let (trust, generation) = store.trust_snapshot()?;
    for key in &req.keys {
        super::keys::refuse_root_key(store, &keyid(&key.verifying_key()), "sign claims")?;
    }
    let signers = req
        .keys
        .iter()
        .map(|key| signer_of(&trust, key))
        .collect::<Result<Vec<_>, _>>()?;
    let source = req.batch.clone().unwrap_or_else(|| "claim".to_owned());
    let mut tree = TreeAt::new(req.at.as_deref());
    let now = now_seconds();
    // Ids of the lines built so far, for `@N`.
    let mut by_line: HashMap<usize, String> = HashMap::new();
    // The claims of the lines built so far, for an observation of one of them.
    let mut earlier: HashMap<String, (Claim, Body)> = HashMap::new();
    let mut sealed: Vec<Sealed> = Vec::with_capacity(req.claims.len());
    for entry in &req.claims {
        let line = req.batch.as_ref().map(|_| entry.line);
        let in_line = |field: &str, f: Failure| match line {
            Some(n) => at_line(&source, n, field, f),
            None => f,
        };
        let c = &entry.claim;
        let kind = c.kind.unwrap_or(Kind::Assertion);
        let k =
            choose_signer(&signers, c.signer.as_deref(), kind).map_err(|f| in_line("signer", f))?;
        let signer = &signers[k];
        let origin = match signer.role {
            Role::Agent => OriginKind::AgentAsserted,
            Role::Harness => OriginKind::HarnessObserved,
            Role::Human => OriginKind::HumanAsserted,
            // A log key signs checkpoints, no claim: ingest refuses it (ROLE_VIOLATION).
            Role::Log => OriginKind::AgentAsserted,
        };
        if let Some(r) = draft::shape_problem(
            kind,
            c.text.as_deref().is_some_and(|t| !t.trim().is_empty()),
            c.predicate.is_some(),
            c.target.len(),
        ) {
            let field = if r.pointer.as_deref() == Some("/target") {
                "target"
            } else {
                "text"
            };
            return Err(in_line(field, Failure::rejected(r, None)));
        }
        let anchor = match c.anchor.as_slice() {
            [] => tree.whole().map_err(|f| in_line("anchor", f))?,
            [spec] => tree.span(spec).map_err(|f| in_line("anchor", f))?,
            _ => {
                return Err(in_line(
                    "anchor",
                    Failure::usage(
                        Some(Param::Anchor),
                        format!(
                            "{} anchors given; a claim has one anchor: make one claim per span \
                         (a ‹batch› makes several in one call)",
                            c.anchor.len()
                        ),
                    ),
                ))
            }
        };
        let depends_on = expand_all(store, &c.depends_on, entry.line, &by_line, true, observer)
            .map_err(|f| in_line("depends_on", f))?;
        let target = expand_all(store, &c.target, entry.line, &by_line, false, observer)
            .map_err(|f| in_line("target", f))?;
        let mut evidence = c
            .evidence
            .iter()
            .map(|e| draft::parse_evidence(e))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|m| in_line("evidence", Failure::usage(None, m)))?;
        if is_observation(kind) {
            // An observation of the tree at --at: it records each target's inputs there, so
            // its verdict applies wherever they are the same (and nowhere else).
            for t in &target {
                let uri = format!("{}{t}", crate::claim::INPUTS_URI_PREFIX);
                if evidence
                    .iter()
                    .any(|e| e["uri"].as_str() == Some(uri.as_str()))
                {
                    continue;
                }
                let found = match earlier.get(t) {
                    Some((claim, body)) => tree.inputs_of(claim, body),
                    None => match store.get_light(t)? {
                        Some(stored) => tree.inputs_of(&stored.claim, &stored.body),
                        None => Ok(None),
                    },
                }
                .map_err(|f| in_line("target", f))?;
                if let Some(digest) = found {
                    evidence.push(inputs::evidence_entry(t, &digest));
                }
            }
        }
        let producer = c
            .producer
            .clone()
            .or_else(|| req.producer.clone())
            .unwrap_or_else(|| signer.name.clone());
        let signer_keyid = signer.keyid.clone();
        if producer.is_empty() {
            return Err(in_line(
                "producer",
                Failure::usage(
                    None,
                    "the producer is empty: name who made the claim".into(),
                ),
            ));
        }
        let d = Draft {
            kind,
            text: c.text.clone(),
            predicate: c.predicate.clone(),
            anchor,
            depends_on,
            target,
            evidence,
            origin,
            producer,
            session: c.session.clone().or_else(|| req.session.clone()),
            timestamp: c.timestamp.unwrap_or(now),
        };
        let field_of = |r: &Rejection| pointer_field(r.pointer.as_deref());
        let (checked, obj) = d.build().map_err(|r| {
            let field = field_of(&r);
            in_line(field, Failure::rejected(r, None))
        })?;
        // Who may say what, before anything is signed.
        check_authority(signer.role, &checked)
            .map_err(|r| in_line("kind", Failure::rejected(r, None)))?;
        let claim_value = Value::Object(obj);
        let (_, envelope) = seal(&claim_value, &req.keys[k]).map_err(|r| {
            let field = field_of(&r);
            in_line(field, Failure::rejected(r, None))
        })?;
        let staged = stage(&envelope, &trust, generation).map_err(|r| in_line("kind", r))?;
        by_line.insert(entry.line, checked.id.clone());
        earlier.insert(
            checked.id.clone(),
            (checked.clone(), Body::new(claim_value.clone())),
        );
        sealed.push(Sealed {
            signer: signer_keyid,
            line,
            claim: claim_value,
            envelope,
            staged,
        });
    }
    if let Some((code, message)) = tree.tracked_ignored() {
        observer.warn(code, message);
    }
    append(store, sealed, req.dry_run, &source, signers)
}

/// The store's view of a signing key: it must be trusted there and not retired.
fn signer_of(trust: &crate::keys::TrustSet, key: &SigningKey) -> Result<Signer, Failure> {
    let kid = keyid(&key.verifying_key());
    match trust.get(&kid) {
        Some(k) if k.retired => Err(untrusted(format!(
            "the key {kid} ({}) is retired in this store, and a retired key signs nothing \
             new: sign with a key that is trusted and not retired (`elench keys list`)",
            k.name
        ))),
        Some(k) => Ok(Signer {
            keyid: kid.clone(),
            role: k.role,
            name: k.name.clone(),
        }),
        None => Err(untrusted(format!(
            "the key {kid} is not trusted by this store, so nothing it signs could be added: \
             trust its public key first (`elench keys add ‹-role› ROLE ‹-name› NAME KEY.pub`)"
        ))),
    }
}

/// Which of `signers` signs a claim of `kind`: the one `wanted` names (name, role or keyid
/// prefix of at least 8 digits), else the first, unless `kind` needs a role the first lacks
/// and another key has it.
fn choose_signer(signers: &[Signer], wanted: Option<&str>, kind: Kind) -> Result<usize, Failure> {
    let given = || {
        signers
            .iter()
            .map(|s| {
                format!(
                    "{} ({}, {})",
                    s.name,
                    s.role,
                    &s.keyid[..s.keyid.len().min(12)]
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(w) = wanted {
        let matches: Vec<usize> = (0..signers.len())
            .filter(|&i| {
                let s = &signers[i];
                s.name == w || s.role.as_str() == w || (w.len() >= 8 && s.keyid.starts_with(w))
            })
            .collect();
        return match matches.as_slice() {
            [i] => Ok(*i),
            [] => Err(Failure::usage(
                None,
                format!("signer {w:?} is none of the keys given: {}", given()),
            )),
            _ => Err(Failure::usage(
                None,
                format!(
                    "signer {w:?} names several of the keys given ({}): give a name or a keyid",
                    given()
                ),
            )),
        };
    }
    let needs = match kind {
        Kind::Verification => Some(Role::Harness),
        Kind::ResidueAcceptance => Some(Role::Human),
        _ => None,
    };
    Ok(match needs {
        Some(role) if signers[0].role != role => {
            signers.iter().position(|s| s.role == role).unwrap_or(0)
        }
        _ => 0,
    })
}

/// UNTRUSTED_SIGNER for a key the store would not accept.
fn untrusted(message: String) -> Failure {
    Failure::rejected(Rejection::new(Code::UntrustedSigner, message), None)
}

/// Reads a sealed envelope as `add` would, so that what is appended is what ingest accepts.
fn stage(
    envelope: &str,
    trust: &crate::keys::TrustSet,
    generation: u64,
) -> Result<Staged, Failure> {
    let bytes = envelope.as_bytes();
    // A claim can be made larger than ingest takes (a long producer, much evidence): say so
    // as `add` would, before anything is appended.
    if bytes.len() > MAX_ENVELOPE_BYTES {
        return Err(Failure::rejected(
            Rejection::new(
                Code::TooLarge,
                format!(
                    "the signed claim is {} bytes, more than the {MAX_ENVELOPE_BYTES} an \
                     envelope may have: keep claims small, and cite large evidence by digest",
                    bytes.len()
                ),
            ),
            None,
        ));
    }
    Staged::new(bytes, trust, generation).map_err(|r| Failure::rejected(r, None))
}

/// Appends the sealed claims as one group (or, in a dry run, says what that would do) and
/// reads each one's status.
fn append(
    store: &Store,
    sealed: Vec<Sealed>,
    dry_run: bool,
    source: &str,
    signers: Vec<Signer>,
) -> Result<ClaimOutput, Failure> {
    let mut out = ClaimOutput {
        created: 0,
        merged: 0,
        noop: 0,
        rejected: 0,
        claims: Vec::with_capacity(sealed.len()),
        rejections: Vec::new(),
        dry_run,
        signers,
    };
    let mut shown = Vec::with_capacity(sealed.len());
    let mut staged = Vec::with_capacity(sealed.len());
    for s in sealed {
        shown.push((s.line, s.claim, s.envelope, s.signer));
        staged.push(s.staged);
    }
    let summaries: Vec<_> = staged
        .iter()
        .map(|s| {
            let c = &s.accepted.claim;
            (c.id.clone(), c.kind, c.origin, c.producer.clone())
        })
        .collect();
    let outcomes: Vec<Result<Effect, Rejection>> = if dry_run {
        store.predict_group(&staged, &mut DryRun::default())?
    } else {
        store.commit_group(staged)?
    };
    if outcomes.len() != summaries.len() {
        return Err(Failure::Internal(
            "the store returned another number of outcomes than envelopes".into(),
        ));
    }
    let mut fold = Fold::new(store);
    for ((outcome, (id, kind, origin, producer)), (line, claim, envelope, signer)) in
        outcomes.into_iter().zip(summaries).zip(shown)
    {
        match outcome {
            Ok(effect) => {
                match effect {
                    Effect::Created => out.created += 1,
                    Effect::Merged => out.merged += 1,
                    Effect::Noop => out.noop += 1,
                }
                let status = if dry_run {
                    None
                } else {
                    Some(fold.report(&id)?.status.as_str())
                };
                let envelope = if dry_run {
                    Some(serde_json::from_str(&envelope).map_err(|e| {
                        Failure::Internal(format!("an envelope elench wrote is not JSON: {e}"))
                    })?)
                } else {
                    None
                };
                out.claims.push(ClaimRow {
                    id,
                    effect: effect.as_str(),
                    source: source.to_owned(),
                    line,
                    kind,
                    origin,
                    producer,
                    signer,
                    status,
                    claim: dry_run.then_some(claim),
                    envelope,
                });
            }
            Err(r) => {
                out.rejected += 1;
                out.rejections.push(Refusal {
                    source: source.to_owned(),
                    line,
                    code: r.code,
                    message: r.message,
                    pointer: r.pointer,
                });
            }
        }
    }
    Ok(out)
}

/// The short-form field a claim pointer falls in (for a batch line's error).
fn pointer_field(pointer: Option<&str>) -> &'static str {
    let p = pointer.unwrap_or("");
    if p.starts_with("/assertion/expression") {
        "predicate"
    } else if p.starts_with("/assertion") {
        "text"
    } else if p.starts_with("/dependsOn") {
        "depends_on"
    } else if p.starts_with("/target") {
        "target"
    } else if p.starts_with("/evidence") {
        "evidence"
    } else if p.starts_with("/anchor") {
        "anchor"
    } else if p.starts_with("/origin/producer") {
        "producer"
    } else if p.starts_with("/timestamp") {
        "timestamp"
    } else {
        "kind"
    }
}

/// The failure `f` of line `n`'s field `field` of the batch `source`, naming both.
fn at_line(source: &str, n: usize, field: &str, f: Failure) -> Failure {
    let place = format!("{source} line {n}, {field}");
    match f {
        Failure::Rejected { mut rejection, .. } => {
            rejection.message = format!("{place}: {}", rejection.message);
            Failure::Rejected {
                rejection,
                input: Some(source.to_owned()),
                line: Some(n),
            }
        }
        Failure::Usage {
            code,
            param,
            message: m,
        } => Failure::Usage {
            code,
            param,
            message: format!("{place}: {m}"),
        },
        Failure::NotFound { code, message } => Failure::NotFound {
            code,
            message: format!("{place}: {message}"),
        },
        Failure::Ambiguous {
            input,
            candidates,
            more,
        } => Failure::Ambiguous {
            input: format!("{input} ({place})"),
            candidates,
            more,
        },
        Failure::Io { path, message } => Failure::Io {
            path,
            message: format!("{place}: {message}"),
        },
        other => other,
    }
}

/// The full ids `args` name, in order: `@N` is line N of this batch (an earlier one); a full
/// id is taken as given when the store holds it (for premises, also when it does not:
/// `MISSING_PREMISE`); a short one must match exactly one stored claim.
fn expand_all(
    store: &Store,
    args: &[String],
    line: usize,
    by_line: &HashMap<usize, String>,
    premises: bool,
    observer: &dyn Observer,
) -> Result<Vec<String>, Failure> {
    let mut out: Vec<String> = Vec::with_capacity(args.len());
    for arg in args {
        let id = if let Some(n) = arg.strip_prefix('@') {
            let n: usize = n.parse().map_err(|_| {
                Failure::usage(
                    None,
                    format!("{arg:?}: @N names line N of the batch, a whole number"),
                )
            })?;
            match by_line.get(&n) {
                Some(id) => id.clone(),
                None if n >= line => {
                    return Err(Failure::usage(
                        None,
                        format!(
                            "{arg}: a claim can only name claims made before it (line {n} is not \
                         before line {line})"
                        ),
                    ))
                }
                None => {
                    return Err(Failure::usage(
                        None,
                        format!("{arg}: no claim of this batch is on line {n}"),
                    ))
                }
            }
        } else if is_claim_id(arg) {
            if !store.contains(arg)? && !by_line.values().any(|id| id == arg) {
                if !premises {
                    return Err(Failure::claim_not_found(std::slice::from_ref(arg)));
                }
                observer.warn(
                    "MISSING_PREMISE",
                    format!(
                        "{arg} is named as a premise but the store does not hold it (yet): \
                         until it arrives, `status` lists it in missing_premises"
                    ),
                );
            }
            arg.clone()
        } else {
            expand_prefix(store, arg)?
        };
        // Naming a claim twice says nothing more.
        if !out.contains(&id) {
            out.push(id);
        }
    }
    Ok(out)
}

/// The one stored claim whose id starts with `prefix` (a full id the caller has handled).
fn expand_prefix(store: &Store, prefix: &str) -> Result<String, Failure> {
    if !super::ids::is_id_or_prefix(prefix) {
        return Err(Failure::usage(
            None,
            format!(
                "{prefix:?} is not a claim id: give cl_ followed by 64 lowercase hex digits, a \
             unique prefix of at least {} of them, or @N for line N of a batch",
                super::ids::MIN_PREFIX_HEX
            ),
        ));
    }
    super::ids::resolve_claim_id(store, prefix)
}

fn now_seconds() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// Reads the short forms of a `--batch`: JSON Lines, one claim a line; blank lines are
/// skipped but counted, so `@N` is the file's line N. A line that is not a short claim is
/// an error naming the line (and the field, when serde names one).
pub fn parse_batch(source: &str, text: &[u8]) -> Result<Vec<Entry>, Failure> {
    let text = std::str::from_utf8(text).map_err(|e| {
        Failure::usage(None, format!("{source}: the batch is not UTF-8 text ({e})"))
    })?;
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let value =
            crate::json::parse_unique_keys(raw.as_bytes()).map_err(|e| Failure::Rejected {
                rejection: Rejection::new(
                    match e {
                        crate::json::JsonError::DuplicateKey { .. } => Code::DuplicateKey,
                        _ => Code::BadJson,
                    },
                    format!("{source} line {n}: {e}"),
                ),
                input: Some(source.to_owned()),
                line: Some(n),
            })?;
        let claim: ShortClaim = serde_json::from_value(value).map_err(|e| {
            Failure::usage(
                None,
                format!(
                    "{source} line {n}: {e} (a line holds text, kind, predicate, anchor, \
                 depends_on, target, evidence, producer, session, timestamp, signer)"
                ),
            )
        })?;
        out.push(Entry { line: n, claim });
    }
    if out.is_empty() {
        return Err(Failure::usage(
            None,
            format!("{source}: the batch holds no claim"),
        ));
    }
    Ok(out)
}

/// The tree claims are anchored in: listed and hashed once per request, and only when a
/// claim needs it.
struct TreeAt<'a> {
    at: Option<&'a Path>,
    found: Option<(PathBuf, Listing, String)>,
    /// The tree's entries and a resolver over it, for observations' inputs digests.
    judged: Option<(TreeIds, Resolver)>,
}

impl<'a> TreeAt<'a> {
    fn new(at: Option<&'a Path>) -> TreeAt<'a> {
        TreeAt {
            at,
            found: None,
            judged: None,
        }
    }

    fn get(&mut self) -> Result<&(PathBuf, Listing, String), Failure> {
        if self.found.is_none() {
            let dir = tree_dir(self.at)?;
            let listing = crate::tree::list(&dir, Selection::Committed).map_err(Failure::from)?;
            let ids = listing.ids().map_err(Failure::from)?;
            let oid = ids.oid().to_owned();
            let resolver = Resolver::new(&dir, &oid);
            self.judged = Some((ids, resolver));
            self.found = Some((dir, listing, oid));
        }
        self.found
            .as_ref()
            .ok_or_else(|| Failure::Internal("the tree was not listed".into()))
    }

    /// The anchor of a claim about the whole tree.
    fn whole(&mut self) -> Result<Map<String, Value>, Failure> {
        let (_, _, oid) = self.get()?;
        let mut anchor = Map::new();
        anchor.insert("tree".into(), Value::String(oid.clone()));
        anchor.insert(
            "strategy".into(),
            Value::String(Strategy::Multi.as_str().into()),
        );
        Ok(anchor)
    }

    /// The anchor of `PATH[:START-END]`: tree, strategy, path, range and contentDigest, as
    /// `elench anchor` prints it.
    fn span(&mut self, spec: &str) -> Result<Map<String, Value>, Failure> {
        let (path, range) = anchor::parse_spec(spec).map_err(|m| Failure::usage(None, m))?;
        let (dir, listing, oid) = self.get()?;
        let rel = relative_to(dir, &path)?;
        let a = anchor::make(dir, oid, &rel, range, Strategy::Multi)?;
        super::anchor::in_listing(&a, listing, dir)?;
        Ok(a)
    }

    /// The inputs digest of `claim` at this tree: what an observation of it made here
    /// records, so that its verdict applies wherever those inputs are the same.
    fn inputs_of<G: Gist>(&mut self, claim: &Claim, text: &G) -> Result<Option<String>, Failure> {
        self.get()?;
        let (ids, resolver) = self
            .judged
            .as_mut()
            .ok_or_else(|| Failure::Internal("the tree was not listed".into()))?;
        Ok(claim_inputs(claim, text, ids, resolver)?)
    }

    /// `TRACKED_IGNORED` (the one message of `ops::tree`), when the tree was listed and git
    /// tracks files it leaves out.
    fn tracked_ignored(&self) -> Option<(&'static str, String)> {
        let (dir, listing, _) = self.found.as_ref()?;
        super::tree::tracked_ignored(dir, listing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_line_reads_the_short_form_and_refuses_unknown_fields() {
        let got = parse_batch(
            "b",
            b"{\"text\":\"a\",\"anchor\":\"src/a.rs:1-2\"}\n\n{\"kind\":\"falsification\",\"target\":[\"@1\"]}\n",
        )
        .unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].claim.anchor, vec!["src/a.rs:1-2".to_owned()]);
        assert_eq!(got[1].line, 3);
        assert_eq!(got[1].claim.kind, Some(Kind::Falsification));
        let err = parse_batch("b", b"{\"txt\":\"a\"}\n").unwrap_err();
        assert!(err.to_string().contains("line 1"), "{err}");
        assert!(err.to_string().contains("txt"), "{err}");
        let err = parse_batch("b", b"{\"text\":\"a\"}\n{\"text\":\n").unwrap_err();
        assert_eq!(err.code().as_str(), "BAD_JSON");
    }

    #[test]
    fn pointers_map_to_short_form_fields() {
        assert_eq!(
            pointer_field(Some("/assertion/expression/source")),
            "predicate"
        );
        assert_eq!(pointer_field(Some("/dependsOn/0")), "depends_on");
        assert_eq!(pointer_field(None), "kind");
    }
}
