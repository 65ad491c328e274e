//! The fold is a function of the *set* of accepted claims (docs/status.md, issue 3
//! "Order independence"): random claim graphs added in different orders to separate stores
//! give identical status for every claim, agree with a small independent model of the rules,
//! and a store that receives another's export converges to it.
//!
//! The graphs include what simpler generators miss: records whose premises are records, a
//! record naming the same target twice, envelopes that break the role rules (rejected, and
//! then absent from every store), the same claim signed twice by different keys, and the
//! blast radius of every claim checked against a model (members, depths, `affected`,
//! `--depth` truncation).

use crate::common;

use common::{
    assertion, dangling_id, export, lib_add_all, lib_store, pick, record, record_kind, refs, run,
    ClaimBuilder, Keys, Rng, Signed, Signer,
};
use elench::claim::Kind;
use elench::fold::{ClaimStatus, Fold, Status};
use elench::store::Store;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

// ---------------------------------------------------------------------------------------------
// Random graphs

#[derive(Debug, Clone)]
struct AssertionPlan {
    /// Premises among the assertions made before this one.
    premises: Vec<Index>,
    /// Also names a premise that is never added.
    dangling: bool,
    /// Harness-observed (signed by the harness) instead of agent-asserted.
    harness: bool,
}

#[derive(Debug, Clone)]
struct RecordPlan {
    kind: Kind,
    /// Targets among every claim made before this one (assertions and records).
    targets: Vec<Index>,
    /// Premises among the assertions (so records can be revoked).
    premises: Vec<Index>,
    /// For falsifications and supersessions: harness-observed by the harness instead of
    /// agent-asserted by the agent.
    harness: bool,
    /// Signed by the harness key although agent-asserted (a harness may relay an agent).
    relayed: bool,
    /// Premises drawn from every claim made before (records included), not only assertions.
    premises_from_all: bool,
    /// Names its first target a second time.
    repeat_target: bool,
}

/// An envelope that breaks the role rules (docs/claims.md): ingest must reject it.
#[derive(Debug, Clone, Copy)]
enum Violation {
    /// A verification signed by the agent key.
    AgentVerifies,
    /// A human-asserted assertion signed by the agent key.
    AgentSpeaksForHuman,
    /// A residue-acceptance signed by the harness key.
    HarnessAccepts,
}

#[derive(Debug, Clone)]
struct Plan {
    assertions: Vec<AssertionPlan>,
    records: Vec<RecordPlan>,
    /// Rejected envelopes mixed into the arrivals, each about some earlier claim.
    violations: Vec<(Violation, Index)>,
    /// Agent-asserted claims that the harness signs a second time (a relay): a second
    /// envelope of the same claim.
    twice: Vec<Index>,
    /// Seeds of the arrival orders.
    orders: [u64; 3],
}

fn assertion_plan() -> impl Strategy<Value = AssertionPlan> {
    (
        prop::collection::vec(any::<Index>(), 0..4),
        prop::bool::weighted(0.15),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(premises, dangling, harness)| AssertionPlan {
            premises,
            dangling,
            harness,
        })
}

fn record_plan() -> impl Strategy<Value = RecordPlan> {
    let kind = record_kind();
    (
        kind,
        prop::collection::vec(any::<Index>(), 1..3),
        prop::collection::vec(any::<Index>(), 0..2),
        any::<bool>(),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.4),
        prop::bool::weighted(0.2),
    )
        .prop_map(
            |(kind, targets, premises, harness, relayed, premises_from_all, repeat_target)| {
                RecordPlan {
                    kind,
                    targets,
                    premises,
                    harness,
                    relayed,
                    premises_from_all,
                    repeat_target,
                }
            },
        )
}

fn plan() -> impl Strategy<Value = Plan> {
    (
        prop::collection::vec(assertion_plan(), 3..12),
        prop::collection::vec(record_plan(), 0..18),
        prop::collection::vec((violation(), any::<Index>()), 0..3),
        prop::collection::vec(any::<Index>(), 0..3),
        any::<[u64; 3]>(),
    )
        .prop_map(|(assertions, records, violations, twice, orders)| Plan {
            assertions,
            records,
            violations,
            twice,
            orders,
        })
}

fn violation() -> impl Strategy<Value = Violation> {
    prop_oneof![
        Just(Violation::AgentVerifies),
        Just(Violation::AgentSpeaksForHuman),
        Just(Violation::HarnessAccepts),
    ]
}

/// What a plan makes: the accepted claims in creation order (each names only earlier ids),
/// the envelopes ingest must reject, and second envelopes of accepted claims.
struct Built {
    claims: Vec<Signed>,
    rejected: Vec<Signed>,
    second: Vec<Signed>,
}

impl Built {
    /// Every envelope, in creation order of the claims, rejected ones and second
    /// signatures after the claims they concern.
    fn envelopes(&self) -> Vec<Signed> {
        let mut all = self.claims.clone();
        all.extend(self.rejected.iter().cloned());
        all.extend(self.second.iter().cloned());
        all
    }
}

fn build(plan: &Plan, keys: &Keys) -> Built {
    let mut assertions: Vec<Signed> = Vec::new();
    for (i, a) in plan.assertions.iter().enumerate() {
        let mut premises = if assertions.is_empty() {
            Vec::new()
        } else {
            pick(&a.premises, &assertions)
        };
        if a.dangling {
            premises.push(dangling_id(i as u64));
        }
        let mut spec =
            ClaimBuilder::assertion(&format!("assertion {i}")).depends_on(&refs(&premises));
        if a.harness {
            spec = spec.origin("harness-observed");
        }
        assertions.push(spec.sign(keys));
    }
    let mut all = assertions.clone();
    for (i, r) in plan.records.iter().enumerate() {
        let mut target = pick(&r.targets, &all);
        if r.repeat_target {
            target.push(target[0].clone());
        }
        let premises = if r.premises_from_all {
            pick(&r.premises, &all)
        } else {
            pick(&r.premises, &assertions)
        };
        let text = format!("record {i}");
        let (kind, origin, signer) = match r.kind {
            Kind::Verification => ("verification", "harness-observed", Signer::Harness),
            Kind::ResidueAcceptance => ("residue-acceptance", "human-asserted", Signer::Human),
            Kind::Falsification | Kind::Supersession | Kind::Assertion => {
                let kind = r.kind.as_str();
                if r.harness {
                    (kind, "harness-observed", Signer::Harness)
                } else if r.relayed {
                    (kind, "agent-asserted", Signer::Harness)
                } else {
                    (kind, "agent-asserted", Signer::Agent)
                }
            }
        };
        let spec = ClaimBuilder::record(kind, &refs(&target))
            .origin(origin)
            .text(&text)
            .depends_on(&refs(&premises));
        all.push(keys.sign(&spec.build(), signer));
    }
    let mut rejected = Vec::new();
    for (i, (v, about)) in plan.violations.iter().enumerate() {
        let about = vec![all[about.index(all.len())].id.clone()];
        let text = format!("violation {i}");
        let (spec, signer) = match v {
            Violation::AgentVerifies => (
                ClaimBuilder::record("verification", &refs(&about)).text(&text),
                Signer::Agent,
            ),
            Violation::AgentSpeaksForHuman => {
                let spec = ClaimBuilder::assertion(&text)
                    .depends_on(&refs(&about))
                    .origin("human-asserted");
                (spec, Signer::Agent)
            }
            Violation::HarnessAccepts => (
                ClaimBuilder::record("residue-acceptance", &refs(&about)).text(&text),
                Signer::Harness,
            ),
        };
        rejected.push(keys.sign(&spec.build(), signer));
    }
    // A harness may relay what an agent asserted: the same claim, another envelope.
    let relayable: Vec<&Signed> = all.iter().filter(|c| c.signer == Signer::Agent).collect();
    let mut second = Vec::new();
    if !relayable.is_empty() {
        let mut seen = BTreeSet::new();
        for i in &plan.twice {
            let c = relayable[i.index(relayable.len())];
            if seen.insert(c.id.clone()) {
                second.push(keys.sign(&c.claim, Signer::Harness));
            }
        }
    }
    Built {
        claims: all,
        rejected,
        second,
    }
}

fn permuted(claims: &[Signed], seed: u64) -> Vec<Signed> {
    let mut v = claims.to_vec();
    Rng::new(seed).shuffle(&mut v);
    v
}

// ---------------------------------------------------------------------------------------------
// An independent model of docs/status.md, straight from the text

struct Model<'a> {
    by_id: BTreeMap<&'a str, &'a Signed>,
    records_of: BTreeMap<&'a str, Vec<&'a str>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct ModelOwn {
    status: Status,
    decided_by: Vec<String>,
    accepted_by: Vec<String>,
}

impl<'a> Model<'a> {
    fn new(claims: &'a [Signed]) -> Model<'a> {
        let by_id: BTreeMap<&str, &Signed> = claims.iter().map(|c| (c.id.as_str(), c)).collect();
        let mut records_of: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for c in claims {
            // A record naming a target twice is one record of it.
            let targets: BTreeSet<&str> = c.target.iter().map(String::as_str).collect();
            for t in targets {
                records_of.entry(t).or_default().push(c.id.as_str());
            }
        }
        Model { by_id, records_of }
    }

    fn own(&self, id: &str) -> ModelOwn {
        let mut live: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for r in self.records_of.get(id).into_iter().flatten() {
            let rs = self.own(r).status;
            if matches!(rs, Status::Unevaluated | Status::Verified) {
                live.entry(self.by_id[r].kind)
                    .or_default()
                    .push(r.to_string());
            }
        }
        let mut take = |k: &str| {
            let mut v = live.remove(k).unwrap_or_default();
            v.sort();
            v
        };
        let (f, s, v, a) = (
            take("falsification"),
            take("supersession"),
            take("verification"),
            take("residue-acceptance"),
        );
        let (status, decided_by) = if !f.is_empty() {
            (Status::Falsified, f)
        } else if !s.is_empty() {
            (Status::Superseded, s)
        } else if !v.is_empty() {
            (Status::Verified, v)
        } else {
            (Status::Unevaluated, Vec::new())
        };
        ModelOwn {
            status,
            decided_by,
            accepted_by: a,
        }
    }

    /// Effective status and the falsified roots that revoke it.
    fn effective(&self, id: &str) -> (Status, BTreeSet<String>) {
        let own = self.own(id).status;
        if matches!(own, Status::Falsified | Status::Superseded) {
            return (own, BTreeSet::new());
        }
        let mut roots = BTreeSet::new();
        for p in &self.by_id[id].depends_on {
            if !self.by_id.contains_key(p.as_str()) {
                continue; // a missing premise does not revoke
            }
            match self.effective(p) {
                (Status::Falsified, _) => {
                    roots.insert(p.clone());
                }
                (Status::Revoked, r) => roots.extend(r),
                _ => {}
            }
        }
        if roots.is_empty() {
            (own, roots)
        } else {
            (Status::Revoked, roots)
        }
    }

    /// Blast radius by breadth-first search over premise → dependent edges: each member at
    /// its shortest depth, and whether members lie beyond `max_depth`.
    fn blast(&self, root: &str, max_depth: Option<usize>) -> (BTreeMap<String, usize>, bool) {
        let mut depth: BTreeMap<String, usize> = BTreeMap::from([(root.to_owned(), 0)]);
        let mut frontier = vec![root.to_owned()];
        let mut d = 0;
        while !frontier.is_empty() {
            let mut next = Vec::new();
            for id in &frontier {
                for c in self.by_id.values() {
                    if c.depends_on.contains(id) && !depth.contains_key(&c.id) {
                        depth.insert(c.id.clone(), d + 1);
                        next.push(c.id.clone());
                    }
                }
            }
            frontier = next;
            d += 1;
        }
        match max_depth {
            Some(m) => {
                let beyond = depth.values().any(|&x| x > m);
                depth.retain(|_, x| *x <= m);
                (depth, beyond)
            }
            None => (depth, false),
        }
    }

    /// Claims outside `members` whose own status a member record decides, with those
    /// records (each once).
    fn affected(&self, members: &BTreeSet<String>) -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (t, _) in self.by_id.iter() {
            if members.contains(*t) {
                continue;
            }
            let deciders: Vec<String> = self
                .own(t)
                .decided_by
                .into_iter()
                .filter(|r| members.contains(r))
                .collect();
            if !deciders.is_empty() {
                out.insert(t.to_string(), deciders);
            }
        }
        out
    }
}

// ---------------------------------------------------------------------------------------------
// Comparing stores

/// Everything a status report says that must not depend on arrival order: all of it except
/// arrival numbers (`seq`), and the history as a set instead of a sequence.
fn order_free(r: &ClaimStatus) -> Value {
    let mut v = serde_json::to_value(r).unwrap();
    let obj = v.as_object_mut().unwrap();
    obj.remove("seq");
    let mut history: Vec<Value> = obj["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let mut h = h.clone();
            h.as_object_mut().unwrap().remove("seq");
            h
        })
        .collect();
    history.sort_by_key(|h| h["id"].as_str().unwrap().to_owned());
    obj.insert("history".into(), Value::Array(history));
    v
}

fn reports(store: &Store, ids: &[String]) -> BTreeMap<String, ClaimStatus> {
    let mut fold = Fold::new(store);
    ids.iter()
        .map(|id| {
            (
                id.clone(),
                fold.report(id).expect("status of a stored claim"),
            )
        })
        .collect()
}

fn order_free_all(r: &BTreeMap<String, ClaimStatus>) -> BTreeMap<String, Value> {
    r.iter().map(|(k, v)| (k.clone(), order_free(v))).collect()
}

/// Checks every claim's report against the model.
fn check_model(
    claims: &[Signed],
    got: &BTreeMap<String, ClaimStatus>,
) -> Result<(), TestCaseError> {
    let model = Model::new(claims);
    for c in claims {
        let r = &got[&c.id];
        let own = model.own(&c.id);
        let (status, roots) = model.effective(&c.id);
        let got_roots: BTreeSet<String> = r.revoked_by.iter().map(|x| x.root.clone()).collect();
        prop_assert_eq!(
            r.own_status,
            own.status,
            "own status of {} ({})",
            &c.id,
            c.kind
        );
        prop_assert_eq!(r.status, status, "status of {} ({})", &c.id, c.kind);
        prop_assert_eq!(&r.decided_by, &own.decided_by, "decided_by of {}", &c.id);
        prop_assert_eq!(&r.accepted_by, &own.accepted_by, "accepted_by of {}", &c.id);
        prop_assert_eq!(&got_roots, &roots, "revocation roots of {}", &c.id);
        for cause in &r.revoked_by {
            // A path runs from the root to the claim along dependsOn edges, from a falsified
            // root through revoked claims only.
            prop_assert_eq!(cause.path.first(), Some(&cause.root));
            prop_assert_eq!(cause.path.last(), Some(&c.id));
            prop_assert_eq!(model.effective(&cause.root).0, Status::Falsified);
            for step in &cause.path[1..] {
                prop_assert_eq!(
                    model.effective(step).0,
                    Status::Revoked,
                    "path step {}",
                    step
                );
            }
            for w in cause.path.windows(2) {
                let dependent = model.by_id[w[1].as_str()];
                prop_assert!(
                    dependent.depends_on.contains(&w[0]),
                    "path step {} -> {} is not a premise edge",
                    &w[0],
                    &w[1]
                );
            }
        }
        let missing: Vec<String> = {
            let mut m: Vec<String> = c
                .depends_on
                .iter()
                .filter(|p| !model.by_id.contains_key(p.as_str()))
                .cloned()
                .collect();
            m.sort();
            m.dedup();
            m
        };
        prop_assert_eq!(
            &r.missing_premises,
            &missing,
            "missing premises of {}",
            &c.id
        );
        prop_assert_eq!(
            r.accepted,
            status == Status::Unevaluated && !own.accepted_by.is_empty()
        );
    }
    Ok(())
}

/// The store's claims read at once (what `gate` folds over) answer what the store answers:
/// the same reports from the same fold, the same summaries and edges, the same ids.
fn check_all_claims(
    store: &Store,
    ids: &[String],
    expected: &BTreeMap<String, ClaimStatus>,
) -> Result<(), TestCaseError> {
    let snapshot = store.snapshot().unwrap();
    let all = snapshot.all_claims().unwrap();
    prop_assert_eq!(all.ids(), store.claim_ids().unwrap());
    let mut fold = Fold::new(&all);
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let each = all.get_light_each(&refs).unwrap();
    for (id, got) in ids.iter().zip(each) {
        prop_assert_eq!(
            got.map(|c| (c.seq, c.body.as_value().clone())),
            store
                .get_light(id)
                .unwrap()
                .map(|c| (c.seq, c.body.as_value().clone()))
        );
    }
    for id in ids {
        prop_assert_eq!(&fold.report(id).unwrap(), &expected[id], "report of {}", id);
        let light = all
            .get_light(id)
            .unwrap()
            .map(|c| c.body.as_value().clone());
        let reference = store
            .get_light(id)
            .unwrap()
            .map(|c| c.body.as_value().clone());
        prop_assert_eq!(light, reference, "summary of {}", id);
        prop_assert_eq!(
            all.records_targeting(id),
            store.records_targeting(id).unwrap()
        );
        prop_assert_eq!(all.dependents(id), store.dependents(id).unwrap());
        let claim = store.get_fold(id).unwrap().unwrap();
        for named in claim.claim.target.iter().chain(&claim.claim.depends_on) {
            prop_assert_eq!(
                all.get_fold_named(named).unwrap().map(|c| c.seq),
                store.get_fold_named(named).unwrap().map(|c| c.seq)
            );
        }
    }
    Ok(())
}

/// Checks the blast radius of every claim, whole and cut at depth 1, against the model.
fn check_blast(claims: &[Signed], store: &Store) -> Result<(), TestCaseError> {
    let model = Model::new(claims);
    let mut fold = Fold::new(store);
    for c in claims {
        for max_depth in [None, Some(1)] {
            let b = elench::graph::blast(&mut fold, &c.id, max_depth).expect("blast of a claim");
            let (depths, beyond) = model.blast(&c.id, max_depth);
            let got: BTreeMap<String, usize> = b
                .layers
                .iter()
                .flat_map(|l| l.claims.iter().map(move |m| (m.id.clone(), l.depth)))
                .collect();
            prop_assert_eq!(
                &got,
                &depths,
                "blast members of {} ({:?})",
                &c.id,
                max_depth
            );
            prop_assert_eq!(b.count, depths.len() - 1);
            prop_assert_eq!(
                b.truncated,
                beyond,
                "truncated for {} at {:?}",
                &c.id,
                max_depth
            );
            let members: BTreeSet<String> = depths.keys().cloned().collect();
            let want = model.affected(&members);
            let got: BTreeMap<String, Vec<String>> = b
                .affected
                .iter()
                .map(|a| (a.id.clone(), a.decided_by.clone()))
                .collect();
            prop_assert_eq!(&got, &want, "affected of {} ({:?})", &c.id, max_depth);
        }
    }
    Ok(())
}

/// Adds envelopes with the library: those in `rejected` must be refused with
/// ROLE_VIOLATION, every other one accepted.
fn add_judged(store: &Store, envelopes: &[Signed], rejected: &BTreeSet<String>) {
    let trust = store.trust_set().unwrap();
    for s in envelopes {
        match elench::ingest::verify_envelope(s.envelope.as_bytes(), &trust) {
            Ok(accepted) => {
                assert!(!rejected.contains(&s.id), "{} must be rejected", s.id);
                store.add(&accepted, s.envelope.as_bytes()).unwrap();
            }
            Err(e) => {
                assert!(rejected.contains(&s.id), "{} rejected: {e:?}", s.id);
                assert_eq!(e.code, elench::error::Code::RoleViolation, "{e:?}");
            }
        }
    }
}

/// The fields of `elench status` JSON that must agree between two stores.
fn cli_statuses(store: &Path, ids: &[String]) -> BTreeMap<String, Value> {
    let mut args = vec!["status"];
    args.extend(ids.iter().map(String::as_str));
    let out = run(store, &args);
    assert_eq!(out.code, 0, "status: {}", out.json);
    out.json["data"]["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let keep = [
                "status",
                "own_status",
                "kind",
                "decided_by",
                "revoked_by",
                "missing_premises",
                "stale_premises",
                "accepted_by",
            ];
            let picked: serde_json::Map<String, Value> = keep
                .iter()
                .map(|k| (k.to_string(), c[*k].clone()))
                .collect();
            (c["id"].as_str().unwrap().to_owned(), Value::Object(picked))
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The property

fn order_independence_case(plan: &Plan) -> Result<(), TestCaseError> {
    let keys = Keys::new();
    let built = build(plan, &keys);
    let claims = &built.claims;
    let envelopes = built.envelopes();
    let rejected_ids: BTreeSet<String> = built.rejected.iter().map(|c| c.id.clone()).collect();
    let twice: BTreeSet<String> = built.second.iter().map(|c| c.id.clone()).collect();
    let ids: Vec<String> = claims.iter().map(|c| c.id.clone()).collect();
    // Which envelope of a claim signed twice a store keeps (or whether it keeps both) may
    // decide its signers; everything else must agree exactly.
    let comparable = |r: &BTreeMap<String, ClaimStatus>| {
        let mut all = order_free_all(r);
        for id in &twice {
            if let Some(Value::Object(o)) = all.get_mut(id) {
                o.remove("signers");
            }
        }
        all
    };
    let tmp = tempfile::tempdir().unwrap();
    let (a_dir, b_dir, c_dir) = (
        tmp.path().join("a"),
        tmp.path().join("b"),
        tmp.path().join("c"),
    );

    // Two stores, two random arrival orders.
    let a_reports = {
        let a = lib_store(&a_dir, &keys);
        add_judged(&a, &permuted(&envelopes, plan.orders[0]), &rejected_ids);
        prop_assert_eq!(a.count().unwrap(), claims.len() as u64);
        check_blast(claims, &a)?;
        let got = reports(&a, &ids);
        check_all_claims(&a, &ids, &got)?;
        got
    };
    let b_reports = {
        let b = lib_store(&b_dir, &keys);
        add_judged(&b, &permuted(&envelopes, plan.orders[1]), &rejected_ids);
        reports(&b, &ids)
    };
    check_model(claims, &a_reports)?;
    prop_assert_eq!(comparable(&a_reports), comparable(&b_reports));

    // A third store gets a subset in a third order, then a's export through the binary.
    let mut rng = Rng::new(plan.orders[2]);
    let subset: Vec<Signed> = permuted(claims, plan.orders[2])
        .into_iter()
        .filter(|_| rng.chance(50))
        .collect();
    {
        let c = lib_store(&c_dir, &keys);
        lib_add_all(&c, &subset);
    }
    let bundle = tmp.path().join("a.intoto.jsonl");
    let exported = export(&a_dir, &bundle);
    let lines = exported
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .count();
    // Every claim at least once; a claim signed twice may keep both envelopes.
    prop_assert!(
        (claims.len()..=claims.len() + built.second.len()).contains(&lines),
        "export lists every claim: {} lines for {} claims",
        lines,
        claims.len()
    );

    let out = run(&c_dir, &["add", bundle.to_str().unwrap()]);
    prop_assert_eq!(out.code, 0, "add of the export: {}", &out.json);
    let data = &out.json["data"];
    prop_assert_eq!(
        data["created"].as_u64(),
        Some((claims.len() - subset.len()) as u64)
    );
    prop_assert_eq!(data["claims"].as_array().map(Vec::len), Some(lines));
    prop_assert_eq!(data["rejected"].as_u64(), Some(0));

    let again = run(&c_dir, &["add", bundle.to_str().unwrap()]);
    prop_assert_eq!(again.code, 0, "re-add of the export: {}", &again.json);
    prop_assert_eq!(again.json["data"]["created"].as_u64(), Some(0));
    prop_assert_eq!(again.json["data"]["noop"].as_u64(), Some(lines as u64));
    prop_assert_eq!(again.json["data"]["rejected"].as_u64(), Some(0));

    let c_reports = {
        let c = Store::open(
            &c_dir,
            &elench::store::Options::new(Duration::from_secs(30)),
        )
        .unwrap();
        prop_assert_eq!(c.count().unwrap(), claims.len() as u64);
        reports(&c, &ids)
    };
    prop_assert_eq!(comparable(&a_reports), comparable(&c_reports));
    // And the binary says the same of both.
    prop_assert_eq!(cli_statuses(&a_dir, &ids), cli_statuses(&c_dir, &ids));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 28,
        failure_persistence: None,
        max_shrink_iters: 64,
        ..ProptestConfig::default()
    })]

    #[test]
    fn status_is_independent_of_arrival_order_and_exports_converge(plan in plan()) {
        order_independence_case(&plan)?;
    }
}

// ---------------------------------------------------------------------------------------------
// Deterministic cases on the library fold

fn store_with(dir: &Path, keys: &Keys, claims: &[&Signed]) -> Store {
    let store = lib_store(dir, keys);
    lib_add_all(&store, claims.iter().copied());
    store
}

fn report(store: &Store, id: &str) -> ClaimStatus {
    Fold::new(store).report(id).unwrap()
}

#[test]
fn diamond_is_revoked_once_through_its_shortest_smallest_path() {
    let keys = Keys::new();
    let a = assertion(&keys, "a", &[]);
    let b = assertion(&keys, "b", &[&a.id]);
    let c = assertion(&keys, "c", &[&a.id]);
    let d = assertion(&keys, "d", &[&b.id, &c.id]);
    let f = record(&keys, "falsification", "a is wrong", &[&a.id], &[]);
    let tmp = tempfile::tempdir().unwrap();
    let store = store_with(tmp.path(), &keys, &[&d, &c, &f, &b, &a]);

    assert_eq!(report(&store, &a.id).status, Status::Falsified);
    assert_eq!(report(&store, &a.id).decided_by, vec![f.id.clone()]);
    for x in [&b, &c] {
        let r = report(&store, &x.id);
        assert_eq!(r.status, Status::Revoked);
        assert_eq!(r.own_status, Status::Unevaluated);
        assert_eq!(r.revoked_by.len(), 1);
        assert_eq!(r.revoked_by[0].root, a.id);
        assert_eq!(r.revoked_by[0].path, vec![a.id.clone(), x.id.clone()]);
    }
    let r = report(&store, &d.id);
    assert_eq!(r.status, Status::Revoked);
    assert_eq!(
        r.revoked_by.len(),
        1,
        "one root, reported once: {:?}",
        r.revoked_by
    );
    assert_eq!(r.revoked_by[0].root, a.id);
    // Both paths have length 3; the smaller sequence of ids wins.
    let via = std::cmp::min(&b.id, &c.id);
    assert_eq!(
        r.revoked_by[0].path,
        vec![a.id.clone(), via.clone(), d.id.clone()]
    );
    assert_eq!(report(&store, &f.id).status, Status::Unevaluated);
}

#[test]
fn falsifying_the_falsification_reverts_the_target_and_its_dependents() {
    let keys = Keys::new();
    let a = assertion(&keys, "a", &[]);
    let b = assertion(&keys, "b", &[&a.id]);
    let c = assertion(&keys, "c", &[&b.id]);
    let v = record(&keys, "verification", "a passed", &[&a.id], &[]);
    let f = record(&keys, "falsification", "a is wrong", &[&a.id], &[]);
    let g = record(&keys, "falsification", "f is wrong", &[&f.id], &[]);
    let tmp = tempfile::tempdir().unwrap();
    let store = store_with(tmp.path(), &keys, &[&c, &v, &f, &b, &a]);

    // Falsified even though verified; the chain is revoked with a as the root.
    let ra = report(&store, &a.id);
    assert_eq!(
        (ra.status, ra.own_status),
        (Status::Falsified, Status::Falsified)
    );
    assert_eq!(ra.decided_by, vec![f.id.clone()]);
    let rc = report(&store, &c.id);
    assert_eq!(rc.status, Status::Revoked);
    assert_eq!(
        rc.revoked_by[0].path,
        vec![a.id.clone(), b.id.clone(), c.id.clone()]
    );

    lib_add_all(&store, [&g]);
    let ra = report(&store, &a.id);
    assert_eq!(ra.status, Status::Verified);
    assert_eq!(ra.decided_by, vec![v.id.clone()]);
    assert_eq!(report(&store, &f.id).status, Status::Falsified);
    for x in [&b, &c] {
        let r = report(&store, &x.id);
        assert_eq!(r.status, Status::Unevaluated, "{} reverts", x.id);
        assert!(r.revoked_by.is_empty());
    }
    // The history keeps the dead falsification visible, in arrival order.
    let kinds: Vec<(&str, bool)> = ra.history.iter().map(|h| (h.kind, h.live)).collect();
    assert_eq!(
        kinds,
        vec![("verification", true), ("falsification", false)]
    );
}

#[test]
fn a_falsification_whose_premise_is_its_own_target_still_falsifies() {
    // docs/status.md: revocation does not disarm records, otherwise this case has no answer.
    let keys = Keys::new();
    let a = assertion(&keys, "a", &[]);
    let f = record(
        &keys,
        "falsification",
        "a is wrong, because a",
        &[&a.id],
        &[&a.id],
    );
    let tmp = tempfile::tempdir().unwrap();
    let store = store_with(tmp.path(), &keys, &[&f, &a]);
    let ra = report(&store, &a.id);
    assert_eq!(ra.status, Status::Falsified);
    assert_eq!(ra.decided_by, vec![f.id.clone()]);
    let rf = report(&store, &f.id);
    assert_eq!(
        (rf.status, rf.own_status),
        (Status::Revoked, Status::Unevaluated)
    );
    assert_eq!(rf.revoked_by[0].root, a.id);
    // a is decided by a record that is itself revoked.
    assert_eq!(ra.decided_by_revoked.len(), 1);
    assert_eq!(ra.decided_by_revoked[0].record, f.id);
}

#[test]
fn dangling_premise_is_missing_not_revoking_and_resolves_when_added() {
    let keys = Keys::new();
    let a = assertion(&keys, "a", &[]);
    let f = record(&keys, "falsification", "a is wrong", &[&a.id], &[]);
    let b = assertion(&keys, "b", &[&a.id]);
    let tmp = tempfile::tempdir().unwrap();
    // b and the falsification arrive before a.
    let store = store_with(tmp.path(), &keys, &[&b, &f]);
    let rb = report(&store, &b.id);
    assert_eq!(rb.status, Status::Unevaluated);
    assert_eq!(rb.missing_premises, vec![a.id.clone()]);
    lib_add_all(&store, [&a]);
    let rb = report(&store, &b.id);
    assert_eq!(rb.status, Status::Revoked);
    assert!(rb.missing_premises.is_empty());
    assert_eq!(report(&store, &a.id).status, Status::Falsified);
}

#[test]
fn superseded_premise_is_stale_and_does_not_revoke() {
    let keys = Keys::new();
    let a = assertion(&keys, "a", &[]);
    let b = assertion(&keys, "b", &[&a.id]);
    let s = record(&keys, "supersession", "a is replaced", &[&a.id], &[]);
    let v = record(&keys, "verification", "b passed", &[&b.id], &[]);
    let h = record(
        &keys,
        "residue-acceptance",
        "a is fine as is",
        &[&a.id],
        &[],
    );
    let tmp = tempfile::tempdir().unwrap();
    let store = store_with(tmp.path(), &keys, &[&v, &s, &b, &a, &h]);
    let ra = report(&store, &a.id);
    assert_eq!(ra.status, Status::Superseded);
    // Acceptance marks only unevaluated claims.
    assert!(!ra.accepted);
    assert_eq!(ra.accepted_by, vec![h.id.clone()]);
    let rb = report(&store, &b.id);
    assert_eq!(rb.status, Status::Verified);
    assert_eq!(rb.stale_premises, vec![a.id.clone()]);
}
