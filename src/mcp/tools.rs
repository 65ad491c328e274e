//! The tools: their names, descriptions, annotations and schemas, and the call of each, which
//! is one call into the library (never a subprocess of elench).

use super::bound::{self, Items, Page};
use super::inputs::{
    BlastIn, CheckIn, ClaimIn, ClaimsForIn, GateIn, LogIn, ShortIn, ShowIn, StatusIn, TrustShowIn,
    WhyIn,
};
use super::schemas::{
    self, BlastOut, ClaimOut, ClaimRow, GateOut, MaybePaged, Paged, Refusal, TrustShown,
};
use super::Config;
use elench::ops::blast::BlastInput;
use elench::ops::check::{CheckInput, CheckOutput};
use elench::ops::claim::ClaimRequest;
use elench::ops::claims_for::ClaimsForInput;
use elench::ops::gate::{GateInput, PolicyPlace};
use elench::ops::log::{LogInput, LogOutput};
use elench::ops::page::{PageRequest, Pagination};
use elench::ops::show::{ShowInput, ShowOutput};
use elench::ops::status::{StatusInput, StatusOutput};
use elench::ops::why::{WhyInput, WhyOutput};
use elench::ops::{self, Context, Failure, Observer, Stop};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// One tool as the server lists it.
#[derive(Debug, Clone, Copy)]
pub struct ToolDef {
    /// The stable name agents call it by.
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    /// `readOnlyHint`: it changes nothing (served under `--read-only`).
    pub read_only: bool,
    /// `idempotentHint`: the same call again changes nothing more.
    pub idempotent: bool,
    /// Served only with a harness key (`check`, whose records it signs).
    pub needs_harness_key: bool,
    pub input: fn() -> Value,
    pub output: fn() -> Value,
    /// How to get the whole of a result the byte cap cut and no cursor continues (the hint
    /// of its `truncation`).
    pub whole: &'static str,
}

/// The hint for a tool whose command-line twin gives the same answer whole.
const WHOLE_ON_THE_COMMAND_LINE: &str = "the command line gives the whole answer \
     (ELENCH_MAX_OUTPUT_BYTES=0 lifts its cap)";

/// Every tool, in the order `tools/list` gives them. Nothing elench does destroys anything:
/// the log is append-only, so `destructiveHint` is false throughout.
pub const TOOLS: [ToolDef; 10] = [
    ToolDef {
        name: "claims_for",
        title: "Claims about these paths",
        description: "The claims anchored in the given files or folders of the server's \
                      tree (or every claim), each with its status and how it applies there: \
                      anchored (made at this tree), carried (its lines are unchanged here), \
                      stale (its lines changed or are gone), unanchored (a whole-tree claim \
                      about another tree). Read this before changing code.",
        read_only: true,
        idempotent: true,
        needs_harness_key: false,
        input: schemas::input::<ClaimsForIn>,
        output: schemas::output::<MaybePaged<StatusOutput>>,
        whole: WHOLE_ON_THE_COMMAND_LINE,
    },
    ToolDef {
        name: "status",
        title: "Status of claims",
        description: "Each claim's standing, folded from the log: unevaluated, verified, \
                      falsified, superseded or revoked (a premise fell), with the records that \
                      decided it, the falsified roots that revoke it (roots: each placed at \
                      the server's tree, with its text), missing and stale premises, and its \
                      history.",
        read_only: true,
        idempotent: true,
        needs_harness_key: false,
        input: schemas::input::<StatusIn>,
        output: schemas::output::<Paged<StatusOutput>>,
        whole: WHOLE_ON_THE_COMMAND_LINE,
    },
    ToolDef {
        name: "blast",
        title: "Blast radius",
        description: "What a falsification of a claim revokes: every claim built on it \
                      through dependsOn, in layers by depth, and the claims outside whose \
                      status a record inside decides (affected). With invert: what the \
                      claim rests on instead, its premises and theirs, in the same layers. \
                      Each claim comes with its text, each member with its premises.",
        read_only: true,
        idempotent: true,
        needs_harness_key: false,
        input: schemas::input::<BlastIn>,
        output: schemas::output::<Paged<BlastOut>>,
        whole: WHOLE_ON_THE_COMMAND_LINE,
    },
    ToolDef {
        name: "why",
        title: "Why one claim rests on another",
        description: "A shortest dependsOn path from one claim to a premise it rests on \
                      (from, to: ids or unique prefixes): each claim on the path names the \
                      next among its premises, so a falsification of `to` revokes `from` \
                      along it. No path is an answer (path: null; reverse_path says whether \
                      `to` rests on `from` instead), not an error.",
        read_only: true,
        idempotent: true,
        needs_harness_key: false,
        input: schemas::input::<WhyIn>,
        output: schemas::output::<WhyOutput>,
        whole: WHOLE_ON_THE_COMMAND_LINE,
    },
    ToolDef {
        name: "show",
        title: "Show a claim",
        description: "A claim as signed, who signed it, its status and the records that \
                      target it.",
        read_only: true,
        idempotent: true,
        needs_harness_key: false,
        input: schemas::input::<ShowIn>,
        output: schemas::output::<ShowOutput>,
        whole: "`elench show ID` on the command line gives the claim whole \
                (ELENCH_MAX_OUTPUT_BYTES=0 lifts its cap)",
    },
    ToolDef {
        name: "log",
        title: "The log",
        description: "The claims in arrival order, a page at a time (limit, cursor).",
        read_only: true,
        idempotent: true,
        needs_harness_key: false,
        input: schemas::input::<LogIn>,
        output: schemas::output::<Paged<LogOutput>>,
        whole: "`show` of an entry's id gives that claim",
    },
    ToolDef {
        name: "trust_show",
        title: "The team's trust policy",
        description: "The chain of trust policies this store holds: the pinned root keys, \
                      each version reached, the policy in force (its keys and roles, the keys \
                      it declares compromised, its expiry), versions waiting for a missing \
                      one, equivocations, and keys trusted locally beside the policy.",
        read_only: true,
        idempotent: true,
        needs_harness_key: false,
        input: schemas::input::<TrustShowIn>,
        output: schemas::output::<TrustShown>,
        whole: WHOLE_ON_THE_COMMAND_LINE,
    },
    ToolDef {
        name: "claim",
        title: "Record a claim",
        description: "Builds a claim (an assertion by default, or a record acting on target \
                      claims), signs it with the server's key and appends it to the log; or \
                      a chain of them in one call (claims, where @N names the Nth). Anchors \
                      are read from the server's tree; ids may be unique prefixes. The \
                      signer, origin and store are the server's, never the caller's.",
        read_only: false,
        idempotent: false,
        needs_harness_key: false,
        input: schemas::input::<ClaimIn>,
        output: schemas::output::<ClaimOut>,
        whole: "every claim listed was appended as the counts say; `status` of their ids \
                gives each one's standing",
    },
    ToolDef {
        name: "check",
        title: "Check predicate claims",
        description: "Evaluates predicate claims at the server's tree in a sandbox (no \
                      network, the tree read-only underneath) and appends what was observed \
                      as verification or falsification records signed with the server's \
                      harness key.",
        read_only: false,
        idempotent: false,
        needs_harness_key: true,
        input: schemas::input::<CheckIn>,
        output: schemas::output::<CheckOutput>,
        whole: "what it recorded is in the log: `status` of the ids gives each outcome",
    },
    ToolDef {
        name: "gate",
        title: "Dry-run a release gate",
        description: "Decides from the log alone whether the server's tree may ship under a \
                      policy (TOML: scope and rules), naming every claim that breaks a rule. \
                      A tree that may not ship is an answer (pass: false), not an error. \
                      A revoked claim's violation comes with the falsified roots it rests on \
                      (roots: each placed at the server's tree, with its text), and \
                      policy_place says where the policy file is.",
        read_only: true,
        idempotent: true,
        needs_harness_key: false,
        input: schemas::input::<GateIn>,
        output: schemas::output::<GateOut>,
        whole: "pass and the counts are for the whole tree; `elench gate` on the command \
                line names every violation (ELENCH_MAX_OUTPUT_BYTES=0 lifts its cap)",
    },
];

/// The tools this server offers: `check` only with a harness key, and under `--read-only`
/// only the tools that change nothing.
pub fn served(config: &Config) -> Vec<&'static ToolDef> {
    TOOLS
        .iter()
        .filter(|t| !t.needs_harness_key || config.harness_key.is_some())
        .filter(|t| t.read_only || !config.read_only)
        .collect()
}

/// Why a tool this server has is not served, for the protocol error of a call to it.
pub fn not_served(config: &Config, name: &str) -> String {
    match TOOLS.iter().find(|t| t.name == name) {
        Some(t) if config.read_only && !t.read_only => format!(
            "tool {name} is not served: this server was started with --read-only, which \
             serves only the tools that change nothing"
        ),
        Some(t) if t.needs_harness_key => format!(
            "tool {name} is not served: start the server with --harness-key HARNESS.pem to \
             offer it"
        ),
        _ => {
            let names: Vec<&str> = served(config).iter().map(|t| t.name).collect();
            format!("no tool {name:?}; the tools are {}", names.join(", "))
        }
    }
}

/// Arguments that pass the input schema but not the typed reading (which the schema should
/// have caught) are refused the same way.
fn read<T: for<'de> Deserialize<'de>>(tool: &str, args: Value) -> Result<T, Failure> {
    serde_json::from_value(args).map_err(|e| {
        Failure::usage(
            None,
            format!("{tool}: the arguments do not fit its input: {e}"),
        )
    })
}

fn to_json(tool: &str, out: &impl Serialize) -> Result<Value, Failure> {
    serde_json::to_value(out)
        .map_err(|e| Failure::Internal(format!("{tool}: cannot write the result: {e}")))
}

/// `value` with `pagination` added, as [`Paged`] writes it, for a page taken of the JSON.
fn with_pagination(mut value: Value, pagination: &Pagination) -> Value {
    if let Value::Object(m) = &mut value {
        m.insert("pagination".into(), json!(pagination));
    }
    value
}

fn page(limit: Option<usize>, cursor: Option<String>) -> PageRequest {
    PageRequest {
        limit: limit.unwrap_or(elench::ops::page::DEFAULT_LIMIT),
        cursor,
    }
}

/// The `claim` tool's arguments: `claims` and `dry_run` taken out, the rest read as the one
/// claim's [`ShortIn`], whose unknown fields are refused as ever (serde refuses none
/// through a flattened member).
fn read_claim(mut args: Value) -> Result<ClaimIn, Failure> {
    let mut take = |field: &str| args.as_object_mut().and_then(|m| m.remove(field));
    let claims = take("claims").map(|v| read("claim", v)).transpose()?;
    let dry_run = take("dry_run").map(|v| read("claim", v)).transpose()?;
    Ok(ClaimIn {
        one: read("claim", args)?,
        claims: claims.flatten(),
        dry_run: dry_run.unwrap_or(false),
    })
}

/// A tool's result, and where its page is when it has one (for the byte cap to cut).
#[derive(Debug)]
pub struct Answer {
    pub value: Value,
    pub page: Option<Page>,
    /// The call failed with this, and `value` is the data that goes with the error (a
    /// `claim` call the store took only in part, or not at all): as the CLI reports the
    /// same request, error and data together.
    pub failure: Option<Failure>,
}

impl Answer {
    fn whole(value: Value) -> Answer {
        Answer {
            value,
            page: None,
            failure: None,
        }
    }
}

/// Runs tool `name` with arguments that passed its input schema: one `ops` call, under a
/// context fixed by the server's configuration; warnings go to `observer`, and a long
/// operation (`check`) stops between claims once `stop` says so.
pub fn call(
    config: &Config,
    name: &str,
    args: Value,
    observer: Arc<dyn Observer>,
    stop: &dyn Stop,
) -> Result<Answer, Failure> {
    // The store is opened by each call: another process may append between calls.
    let ctx = Context::new(Some(config.store.clone()), config.wait, observer)
        .with_reaper(config.reaper.clone())
        .with_environments(config.envs.clone());
    let at = Some(config.at.clone());
    match name {
        "claims_for" => {
            let a: ClaimsForIn = read(name, args)?;
            let out = ops::claims_for::claims_for(
                &ctx,
                &ClaimsForInput {
                    paths: a.paths,
                    at,
                    no_ignore: false,
                    page: page(a.limit, a.cursor),
                },
            )?;
            let paged = out.pagination.is_some();
            let value = to_json(
                name,
                &MaybePaged {
                    data: &out,
                    pagination: out.pagination.clone(),
                },
            )?;
            Ok(Answer {
                value,
                page: paged.then_some(Page {
                    items: Items::At("/claims"),
                    cursors: out.cursors,
                }),
                failure: None,
            })
        }
        "status" => {
            let a: StatusIn = read(name, args)?;
            // The library folds the ids given whole; the window is taken here, before it
            // reads anything.
            let (start, end, pagination) =
                bound::window(a.ids.len(), a.limit, a.cursor.as_deref())?;
            // At the server's tree: only the observations that apply there count.
            let input = StatusInput {
                ids: a.ids[start..end].iter().map(|i| i.0.clone()).collect(),
                at: at.clone(),
                // A revoked claim's falsified roots, placed at the tree, as documents show.
                places: true,
                ..StatusInput::default()
            };
            let data = ops::status::status(&ctx, &input)?;
            Ok(Answer {
                value: to_json(name, &Paged { data, pagination })?,
                page: Some(Page {
                    items: Items::At("/claims"),
                    cursors: (start..end).map(|i| i.to_string()).collect(),
                }),
                failure: None,
            })
        }
        "blast" => {
            let a: BlastIn = read(name, args)?;
            let input = BlastInput {
                id: a.id.0,
                depth: a.depth,
                invert: a.invert,
                // What the CLI's documents show: each claim's text, each member's premises.
                with_texts: true,
                at,
                no_ignore: false,
                picture: None,
            };
            let mut v = to_json(name, &BlastOut::of(&ops::blast::blast(&ctx, &input)?))?;
            let len = bound::count(&v, Items::Blast);
            let (start, end, pagination) = bound::window(len, a.limit, a.cursor.as_deref())?;
            bound::keep(&mut v, Items::Blast, start, end);
            Ok(Answer {
                value: with_pagination(v, &pagination),
                page: Some(Page {
                    items: Items::Blast,
                    cursors: (start..end).map(|i| i.to_string()).collect(),
                }),
                failure: None,
            })
        }
        "why" => {
            let a: WhyIn = read(name, args)?;
            let input = WhyInput {
                from: a.from.0,
                to: a.to.0,
                picture: false,
            };
            Ok(Answer::whole(to_json(name, &ops::why::why(&ctx, &input)?)?))
        }
        "show" => {
            let a: ShowIn = read(name, args)?;
            let input = ShowInput {
                id: a.id.0,
                evidence: a.evidence,
            };
            Ok(Answer::whole(to_json(
                name,
                &ops::show::show(&ctx, &input)?,
            )?))
        }
        "log" => {
            let a: LogIn = read(name, args)?;
            let input = LogInput {
                page: page(a.limit, a.cursor),
                with_status: false,
            };
            let out = ops::log::log(&ctx, &input)?;
            let value = to_json(
                name,
                &Paged {
                    data: &out,
                    pagination: out.pagination.clone(),
                },
            )?;
            Ok(Answer {
                value,
                page: Some(Page {
                    items: Items::At("/entries"),
                    cursors: out.cursors,
                }),
                failure: None,
            })
        }
        "trust_show" => {
            let _: TrustShowIn = read(name, args)?;
            // Read through its type, so the result is what its output schema says.
            let shown: TrustShown = read(name, ops::trust::show(&ctx)?)?;
            Ok(Answer::whole(to_json(name, &shown)?))
        }
        "claim" => claim(config, &ctx, read_claim(args)?),
        "check" => check(config, &ctx, read(name, args)?, stop).map(Answer::whole),
        "gate" => gate(config, &ctx, read(name, args)?).map(Answer::whole),
        _ => Err(Failure::Internal(format!("tool {name} has no handler"))),
    }
}

fn claim(config: &Config, ctx: &Context, a: ClaimIn) -> Result<Answer, Failure> {
    let key = config.key.as_ref().ok_or_else(|| {
        Failure::Internal("claim is served only with a key; it should not be listed".into())
    })?;
    // Root keys sign trust policies only: a server started with one records nothing.
    let keyid = elench::keys::keyid(&key.key.verifying_key());
    let trust = elench::store::Store::open(&config.store, &ctx.store_options())
        .ok()
        .and_then(|s| elench::trust::state_of(&s).ok());
    if let Some(st) = trust {
        if st.root_keyids().contains(&keyid) {
            return Err(Failure::Invalid {
                code: elench::error::Code::RoleViolation,
                message: format!(
                    "the server's key {keyid} is a root key of the team's trust policy: root \
                     keys sign trust policies only, never claims; start the server with an \
                     agent's key (--key)"
                ),
            });
        }
    }
    let (claims, single) = match a.claims {
        // The input schema refuses the single claim's fields beside a list.
        Some(list) => (list.into_iter().map(ShortIn::into_short).collect(), false),
        None => (vec![a.one.into_short()], true),
    };
    let mut request = ClaimRequest::numbered(claims, key.key.clone());
    request.at = Some(config.at.clone());
    request.producer = config.producer.clone();
    request.dry_run = a.dry_run;
    if !single {
        // Errors and rows name the list and the claim's place in it.
        request.batch = Some("claims".into());
    }
    let out = ops::claim::claim_at(ctx, request)?;
    // Whether the store took every claim, and the call's effect, as the operation decides
    // them (the CLI reports the same).
    let failure = out.failure();
    let list = !single;
    let rows: Vec<ClaimRow> = out.claims.iter().map(|r| ClaimRow::of(r, list)).collect();
    let refused = failure.is_some();
    let result = ClaimOut {
        one: (single && !refused)
            .then(|| out.claims.first().map(|r| ClaimRow::of(r, false)))
            .flatten(),
        claims: rows,
        created: out.created,
        merged: out.merged,
        noop: out.noop,
        dry_run: out.dry_run,
        // The call as a whole (a single claim's own row effect is in `claims`).
        effect: out.effect(),
        rejected: refused.then_some(out.rejected),
        rejections: refused.then(|| {
            out.rejections
                .iter()
                .map(|r| Refusal {
                    line: if list { r.line } else { None },
                    code: r.code,
                    message: r.message.clone(),
                    pointer: r.pointer.clone(),
                })
                .collect()
        }),
    };
    Ok(Answer {
        value: to_json("claim", &result)?,
        page: None,
        failure,
    })
}

fn check(config: &Config, ctx: &Context, a: CheckIn, stop: &dyn Stop) -> Result<Value, Failure> {
    let key = config.harness_key.as_ref().ok_or_else(|| {
        Failure::Internal("check is served only with --harness-key; it should not be listed".into())
    })?;
    if a.ids.is_empty() != a.all {
        return Err(Failure::usage(
            None,
            "check: give ids, or all: true for every predicate claim that applies, not both".into(),
        ));
    }
    let ids = a.ids.into_iter().map(String::from).collect();
    let mut input = CheckInput::new(ids, key.key.clone());
    input.key_file = Some(key.path.clone());
    input.all = a.all;
    input.at = Some(config.at.clone());
    input.force = a.force;
    if let Some(t) = a.timeout {
        input.claim_timeout = std::time::Duration::from_secs_f64(t);
    }
    if let Some(r) = a.repeat {
        input.repeat = r;
    }
    let mut out = ops::check::check(ctx, &input, stop)?;
    out.word_reasons(&super::words::say);
    // Stopped part way: what was recorded stands in the log; the call failed.
    if let Some(f) = out.stopped {
        return Err(f);
    }
    to_json("check", &out)
}

/// The largest policy file the `gate` tool reads.
const MAX_POLICY_BYTES: u64 = 1 << 20;

/// A policy file named by a call: a regular file inside the server's tree, reached without
/// leaving it. (The command line reads any file its user names; a tool's caller gets only
/// the tree it was given, so a policy error's text can quote nothing from elsewhere.)
fn policy_in_tree(at: &Path, given: &str) -> Result<PathBuf, Failure> {
    let refuse = |why: &str| {
        Failure::usage(
            None,
            format!(
                "gate: policy {given:?} {why}; give a file of the server's tree, relative to its \
             top, or the policy itself as policy_toml"
            ),
        )
    };
    let rel = Path::new(given);
    let plain = rel
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !plain {
        return Err(refuse("is not a path inside the tree"));
    }
    let real = std::fs::canonicalize(at.join(rel)).map_err(|e| Failure::io(given, e))?;
    if !real.starts_with(at) {
        return Err(refuse("leads outside the tree (through a symbolic link)"));
    }
    let meta = std::fs::metadata(&real).map_err(|e| Failure::io(given, e))?;
    if !meta.is_file() {
        return Err(refuse("is not a regular file"));
    }
    if meta.len() > MAX_POLICY_BYTES {
        return Err(refuse("is larger than 1 MiB"));
    }
    Ok(real)
}

fn gate(config: &Config, ctx: &Context, a: GateIn) -> Result<Value, Failure> {
    // The operation takes the policy's text; errors name the policy as the call gave it.
    // `file`: the policy file's path in the tree, where a document places the policy.
    let (policy, policy_name, file) = match (a.policy, a.policy_toml) {
        (Some(p), None) => {
            let path = policy_in_tree(&config.at, &p)?;
            let file = path
                .strip_prefix(&config.at)
                .ok()
                .and_then(Path::to_str)
                .map(|f| f.replace(std::path::MAIN_SEPARATOR, "/"));
            (
                std::fs::read(&path).map_err(|e| Failure::io(&p, e))?,
                p,
                file,
            )
        }
        (None, Some(text)) => (text.into_bytes(), "policy_toml".to_owned(), None),
        _ => {
            return Err(Failure::usage(
                None,
                "gate: give policy or policy_toml, one".into(),
            ))
        }
    };
    let input = GateInput {
        policy,
        policy_name,
        at: Some(config.at.clone()),
        no_ignore: false,
        // What the CLI's documents place: revoked claims' falsified roots, the policy.
        places: true,
    };
    // A tree that may not ship is the answer (pass: false), not a failure of the call.
    let out = ops::gate::gate(ctx, &input)?;
    // The operation reads a policy's name against the process's directory, which need not
    // be the server's tree: the place is the file's path in the tree, at the line the
    // operation found; a policy given inline is in no file.
    let line = out.policy_place.as_ref().and_then(|p| p.line);
    let place = file.map(|path| PolicyPlace { path, line });
    to_json("gate", &GateOut::of(out, place))
}
