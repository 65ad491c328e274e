//! INTERIM: each tool's call into the library, until the `ops` function of each operation
//! exists; then each function here becomes one `ops` call and this file goes.
//! Every adapter opens the store anew: another process may append between calls.

use super::tools::{BlastIn, CheckIn, ClaimIn, ClaimsForIn, GateIn, LogIn, ShowIn, StatusIn};
use super::Config;
use crate::anchor::{Anchor, Resolver};
use crate::fold::Fold;
use crate::ops::check::CheckInput;
use crate::ops::claim::{ClaimRequest, ShortClaim};
use crate::ops::{Failure, Observer};
use crate::store::Store;
use serde_json::{json, Value};

/// How many candidates an ambiguous short id lists.
const MAX_CANDIDATES: usize = 10;

fn open(config: &Config, observer: &dyn Observer) -> Result<Store, Failure> {
    let store = Store::open(&config.store, config.wait);
    // The store still reports what it noticed on open through process-wide state.
    for (code, message) in crate::store::take_warnings() {
        observer.warn(&code, message);
    }
    Ok(store?)
}

fn resolve(store: &Store, arg: &str) -> Result<String, Failure> {
    if crate::claim::is_claim_id(arg) {
        return Ok(arg.to_owned());
    }
    let mut found = store.ids_with_prefix(arg, MAX_CANDIDATES + 1)?;
    match found.len() {
        0 => Err(Failure::claim_not_found(&[arg.to_owned()])),
        1 => Ok(found.remove(0)),
        n => {
            found.truncate(MAX_CANDIDATES);
            Err(Failure::Ambiguous {
                input: arg.to_owned(),
                candidates: found,
                more: n > MAX_CANDIDATES,
            })
        }
    }
}

fn internal(what: &str, e: impl std::fmt::Display) -> Failure {
    Failure::Internal(format!("{what}: {e}"))
}

pub fn status(config: &Config, a: StatusIn, observer: &dyn Observer) -> Result<Value, Failure> {
    let store = open(config, observer)?;
    let _snapshot = store.pin()?;
    let as_of = store.count()?;
    let ids = a
        .ids
        .iter()
        .map(|i| resolve(&store, i))
        .collect::<Result<Vec<_>, _>>()?;
    let mut fold = Fold::new(&store);
    let unknown: Vec<String> = ids
        .iter()
        .filter(|id| !matches!(store.contains(id), Ok(true)))
        .cloned()
        .collect();
    if !unknown.is_empty() {
        return Err(Failure::claim_not_found(&unknown));
    }
    let mut claims = Vec::with_capacity(ids.len());
    for id in &ids {
        let r = fold.report(id)?;
        let mut v = serde_json::to_value(&r).map_err(|e| internal("status", e))?;
        let stored = store.get(id)?;
        v["text"] = stored
            .as_ref()
            .and_then(|c| c.claim.body.pointer("/assertion/text").cloned())
            .unwrap_or(Value::Null);
        claims.push(v);
    }
    Ok(json!({"claims": claims, "as_of": as_of}))
}

pub fn blast(config: &Config, a: BlastIn, observer: &dyn Observer) -> Result<Value, Failure> {
    let store = open(config, observer)?;
    let _snapshot = store.pin()?;
    let id = resolve(&store, &a.id)?;
    let bulk = crate::graph::blast_bulk(&store, &id, a.depth)?;
    serde_json::to_value(bulk.to_blast()).map_err(|e| internal("blast", e))
}

pub fn show(config: &Config, a: ShowIn, observer: &dyn Observer) -> Result<Value, Failure> {
    let store = open(config, observer)?;
    let id = resolve(&store, &a.id)?;
    let stored = store
        .get(&id)?
        .ok_or_else(|| Failure::claim_not_found(std::slice::from_ref(&id)))?;
    let mut fold = Fold::new(&store);
    let status = fold.report(&id)?;
    Ok(json!({
        "id": id,
        "seq": stored.seq,
        "claim": stored.claim.body,
        "signers": stored.signers,
        "status": status.status,
        "history": status.history,
    }))
}

pub fn log(config: &Config, a: LogIn, observer: &dyn Observer) -> Result<Value, Failure> {
    let limit = a.limit.unwrap_or(20);
    let start: u64 = match &a.cursor {
        None => 0,
        Some(c) => c
            .parse()
            .map_err(|_| Failure::Usage(format!("cursor {c:?} is not a cursor elench gave")))?,
    };
    let store = open(config, observer)?;
    let _snapshot = store.pin()?;
    let mut page = store.arrivals(start, limit.saturating_add(1))?;
    let more = page.len() > limit;
    page.truncate(limit);
    let next = more.then(|| (start + page.len() as u64).to_string());
    let mut entries = Vec::with_capacity(page.len());
    for (seq, id) in &page {
        let c = store.get(id)?.ok_or_else(|| {
            Failure::Internal(format!("arrival #{seq} names {id}, which is not stored"))
        })?;
        entries.push(json!({
            "seq": seq,
            "id": id,
            "kind": c.claim.kind,
            "origin": c.claim.origin,
            "producer": c.claim.producer,
            "target": c.claim.target,
            "depends_on": c.claim.depends_on,
            "signers": c.signers.iter().map(|s| s.keyid.clone()).collect::<Vec<_>>(),
        }));
    }
    Ok(json!({
        "entries": entries,
        "pagination": {
            "total": store.count()?,
            "returned": page.len(),
            "truncated": next.is_some(),
            "has_more": next.is_some(),
            "next_cursor": next,
        }
    }))
}

fn tree_failure(e: crate::tree::TreeError) -> Failure {
    Failure::Io {
        path: e.path().display().to_string(),
        message: e.to_string(),
    }
}

/// Whether `path` is one of `wanted`: the path itself, a file under a folder given, or a
/// match of a glob given.
fn path_matches(path: &str, wanted: &[globset::GlobMatcher], folders: &[String]) -> bool {
    wanted.iter().any(|g| g.is_match(path))
        || folders.iter().any(|f| {
            path == f
                || path
                    .strip_prefix(f.as_str())
                    .is_some_and(|r| r.starts_with('/'))
        })
}

pub fn claims_for(
    config: &Config,
    a: ClaimsForIn,
    observer: &dyn Observer,
) -> Result<Value, Failure> {
    let mut globs = Vec::new();
    let mut folders = Vec::new();
    for p in &a.paths {
        let p = p.trim_end_matches('/').trim_start_matches("./");
        folders.push(p.to_owned());
        let g = globset::GlobBuilder::new(p)
            .literal_separator(true)
            .build()
            .map_err(|e| Failure::Usage(format!("paths: {p:?} is not a glob: {}", e.kind())))?;
        globs.push(g.compile_matcher());
    }
    let store = open(config, observer)?;
    let _snapshot = store.pin()?;
    let listing =
        crate::tree::list(&config.at, crate::tree::Selection::Committed).map_err(tree_failure)?;
    let tree = listing.oid().map_err(tree_failure)?;
    let mut resolver = Resolver::new(&config.at, &tree);
    let mut fold = Fold::new(&store);
    let mut out = Vec::new();
    for id in store.claim_ids()? {
        let summary = fold.require_summary(&id)?;
        let claim = &summary.claim;
        if claim.kind.as_str() != "assertion" {
            continue;
        }
        let res = resolver.resolve(claim)?;
        let (path, range) = if res.applies.applies() {
            (res.path.clone(), res.range)
        } else {
            let anchor = Anchor::of(claim)?;
            (anchor.path, anchor.range.map(|(s, e)| [s, e]))
        };
        let wanted = if a.paths.is_empty() {
            res.applies != crate::anchor::Applies::Unanchored
        } else {
            path.as_deref()
                .is_some_and(|p| path_matches(p, &globs, &folders))
        };
        if !wanted {
            continue;
        }
        let status = fold.effective(&id)?.status;
        if !a.status.is_empty() && !a.status.iter().any(|s| s == status.as_str()) {
            continue;
        }
        let text = store
            .get(&id)?
            .and_then(|c| c.claim.body.pointer("/assertion/text").cloned())
            .unwrap_or(Value::Null);
        out.push(json!({
            "id": id,
            "status": status,
            "kind": claim.kind,
            "applies": res.applies,
            "path": path,
            "range": range,
            "text": text,
        }));
    }
    Ok(json!({"tree": tree, "count": out.len(), "claims": out}))
}

pub fn gate(config: &Config, a: GateIn, observer: &dyn Observer) -> Result<Value, Failure> {
    let (shown, text) = match (a.policy, a.policy_toml) {
        (Some(p), None) => {
            let path = config.at.join(&p);
            let bytes = std::fs::read(&path).map_err(|e| Failure::io(&p, e))?;
            let text = String::from_utf8(bytes).map_err(|e| Failure::BadPolicy {
                path: p.clone(),
                error: crate::gate::PolicyError {
                    message: format!("not UTF-8 text ({e})"),
                    line: 0,
                    column: 0,
                },
            })?;
            (p, text)
        }
        (None, Some(t)) => ("policy_toml".to_owned(), t),
        _ => {
            return Err(Failure::Usage(
                "gate: give policy or policy_toml, one".into(),
            ))
        }
    };
    let policy = crate::gate::Policy::parse(&text)
        .map_err(|error| Failure::BadPolicy { path: shown, error })?;
    let store = open(config, observer)?;
    let _snapshot = store.pin()?;
    let listing =
        crate::tree::list(&config.at, crate::tree::Selection::Committed).map_err(tree_failure)?;
    let tree = listing.oid().map_err(tree_failure)?;
    let ids = store.claim_ids()?;
    let mut fold = Fold::new(&store);
    let mut resolver = Resolver::new(&config.at, &tree);
    let outcome = crate::gate::evaluate(&policy, &ids, &mut fold, &mut resolver)?;
    Ok(json!({
        "pass": outcome.pass,
        "tree": tree,
        "policy": policy.to_json(),
        "violations": outcome.violations,
        "counts": outcome.counts,
    }))
}

pub fn claim(config: &Config, a: ClaimIn, observer: &dyn Observer) -> Result<Value, Failure> {
    let key = config.key.as_ref().ok_or_else(|| {
        Failure::Internal(
            "claim is served only with a key; the tool list should not have it".into(),
        )
    })?;
    let short = ShortClaim {
        text: a.text,
        kind: a.kind,
        predicate: a.predicate,
        anchor: a.anchor,
        depends_on: a.depends_on,
        target: a.target,
        evidence: a.evidence,
        // The producer and the signer are the server's, never the call's.
        producer: None,
        session: a.session,
        timestamp: a.timestamp,
        signer: None,
    };
    let mut request = ClaimRequest::numbered(vec![short], key.key.clone());
    request.at = Some(config.at.clone());
    request.producer = config.producer.clone();
    request.dry_run = a.dry_run;
    let store = open(config, observer)?;
    let out = crate::ops::claim::claim(&store, request, observer)?;
    if let Some(r) = out.rejections.first() {
        return Err(Failure::Invalid {
            code: r.code,
            message: format!("the store refused the claim: {}", r.message),
        });
    }
    let row = out
        .claims
        .into_iter()
        .next()
        .ok_or_else(|| Failure::Internal("claim: one claim asked, none made".into()))?;
    let mut v = serde_json::to_value(&row).map_err(|e| internal("claim", e))?;
    if let Value::Object(m) = &mut v {
        m.remove("source");
        m.remove("line");
        m.insert("dry_run".into(), json!(out.dry_run));
    }
    Ok(v)
}

pub fn check(config: &Config, a: CheckIn, observer: &dyn Observer) -> Result<Value, Failure> {
    let key = config
        .harness_key
        .as_ref()
        .ok_or_else(|| Failure::Internal("check is served only with --harness-key".into()))?;
    if a.ids.is_empty() && !a.all {
        return Err(Failure::Usage(
            "check: give ids, or all: true for every predicate claim that applies".into(),
        ));
    }
    if !a.ids.is_empty() && a.all {
        return Err(Failure::Usage(
            "check: give ids or all: true, not both".into(),
        ));
    }
    let mut input = CheckInput::new(a.ids, key.path.clone());
    input.all = a.all;
    input.at = Some(config.at.clone());
    input.force = a.force;
    if let Some(t) = a.timeout {
        input.claim_timeout = std::time::Duration::from_secs_f64(t);
    }
    if let Some(r) = a.repeat {
        input.repeat = r;
    }
    let out = crate::ops::check::check(
        Some(&config.store),
        config.wait,
        &input,
        observer,
        &crate::ops::Never,
    )?;
    if let Some(f) = out.stopped {
        return Err(f);
    }
    serde_json::to_value(&out).map_err(|e| internal("check", e))
}
