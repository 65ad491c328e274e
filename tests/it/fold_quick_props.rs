//! A store folds effective status by a quicker road than the fold's walk (its index read by
//! node number, stopping at falsified and superseded claims). Held here to the walk itself:
//! on random graphs with records of every kind (records of records, records with premises,
//! premises that are never added), every claim's whole report through the store's road
//! equals the report of a fold that walks, after every few arrivals of several random
//! arrival orders (so premises and records also arrive before what they name).

use crate::common;

use common::{dangling_id, lib_store, pick, record_kind, refs, ClaimBuilder, Keys, Rng, Signed};
use elench::claim::Kind;
use elench::fold::dense::DenseFold;
use elench::fold::{ClaimSource, Compromise, Fold};
use elench::store::{Store, StoreError, StoredClaim};
use proptest::prelude::*;
use proptest::sample::Index;
use std::sync::Arc;

/// The store as a source without its quicker road: the fold walks the ancestry.
struct Walked<'a>(&'a Store);

impl ClaimSource for Walked<'_> {
    fn claim(&self, id: &str) -> Result<Option<StoredClaim>, StoreError> {
        ClaimSource::claim(self.0, id)
    }
    fn claim_summary(
        &self,
        id: &str,
    ) -> Result<Option<StoredClaim<elench::claim::Summary>>, StoreError> {
        ClaimSource::claim_summary(self.0, id)
    }
    fn records_targeting(&self, id: &str) -> Result<Vec<String>, StoreError> {
        ClaimSource::records_targeting(self.0, id)
    }
    fn dependents(&self, id: &str) -> Result<Vec<String>, StoreError> {
        ClaimSource::dependents(self.0, id)
    }
    fn named_claim(&self, id: &str) -> Result<Option<StoredClaim>, StoreError> {
        ClaimSource::named_claim(self.0, id)
    }
    fn contradiction(&self, why: String) -> StoreError {
        ClaimSource::contradiction(self.0, why)
    }
    fn compromise(&self) -> Option<Arc<Compromise>> {
        ClaimSource::compromise(self.0)
    }
}

#[derive(Debug, Clone)]
struct Step {
    /// A record of this kind, or an assertion.
    record: Option<Kind>,
    /// Targets (records) among the claims made before.
    targets: Vec<Index>,
    /// Premises among the claims made before (records included).
    premises: Vec<Index>,
    /// Also names a premise that is never added.
    dangling: bool,
    /// Premises among the last few claims only, so that graphs are deep and full of
    /// diamonds (routes of one length to one root, whose ties the ids break).
    near: bool,
}

fn step() -> impl Strategy<Value = Step> {
    (
        prop::option::weighted(0.45, record_kind()),
        prop::collection::vec(any::<Index>(), 1..3),
        prop::collection::vec(any::<Index>(), 0..4),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.6),
    )
        .prop_map(|(record, targets, premises, dangling, near)| Step {
            record,
            targets,
            premises,
            dangling,
            near,
        })
}

/// The claims of a plan, in creation order (each names only claims made before it).
fn build(steps: &[Step], keys: &Keys) -> Vec<Signed> {
    let mut made: Vec<Signed> = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        let mut premises = if made.is_empty() {
            Vec::new()
        } else if s.near {
            pick(&s.premises, &made[made.len().saturating_sub(4)..])
        } else {
            pick(&s.premises, &made)
        };
        if s.dangling {
            premises.push(dangling_id(i as u64));
        }
        let spec = match s.record {
            Some(kind) if !made.is_empty() => {
                ClaimBuilder::record(kind.as_str(), &refs(&pick(&s.targets, &made)))
                    .text(&format!("record {i}"))
            }
            _ => ClaimBuilder::assertion(&format!("assertion {i}")),
        };
        made.push(spec.depends_on(&refs(&premises)).sign(keys));
    }
    made
}

/// Every stored claim's report, by the store's road and by the walk, must be equal; and so
/// must its own and effective status folded for all claims at once by slot, log-wide (what
/// `status --all --status S` reads once a filter has matched rarely).
fn agree(store: &Store, ids: &[String]) -> Result<(), TestCaseError> {
    let mut quick = Fold::new(store);
    let walked_source = Walked(store);
    let mut walked = Fold::new(&walked_source);
    let snapshot = store.snapshot().unwrap();
    let all = snapshot.all_claims().unwrap();
    let mut dense = DenseFold::new(&all, ClaimSource::compromise(&all));
    for id in ids {
        let q = quick.report(id).expect("the store's road answers");
        let w = walked.report(id).expect("the walk answers");
        let slot = all.slot_of(id).expect("a stored claim has a slot");
        let (own, _) = dense.own(slot).expect("the dense fold answers");
        let effective = dense.effective(slot).expect("the dense fold answers");
        prop_assert_eq!(own, w.own_status, "own status of claim {}", id);
        prop_assert_eq!(effective, w.status, "effective status of claim {}", id);
        prop_assert_eq!(q, w, "claim {}", id);
    }
    Ok(())
}

fn case(steps: &[Step], orders: &[u64]) -> Result<(), TestCaseError> {
    let keys = Keys::new();
    let claims = build(steps, &keys);
    for &seed in orders {
        let tmp = tempfile::tempdir().unwrap();
        let store = lib_store(tmp.path(), &keys);
        let trust = store.trust_set().unwrap();
        let mut order = claims.clone();
        let mut rng = Rng::new(seed);
        rng.shuffle(&mut order);
        let mut stored: Vec<String> = Vec::new();
        for (n, s) in order.iter().enumerate() {
            let accepted = elench::ingest::verify_envelope(s.envelope.as_bytes(), &trust)
                .unwrap_or_else(|e| panic!("envelope {} rejected: {e:?}", s.id));
            store.add(&accepted, s.envelope.as_bytes()).unwrap();
            stored.push(s.id.clone());
            if n % 4 == 3 || n + 1 == order.len() {
                agree(&store, &stored)?;
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 32,
        failure_persistence: None,
        max_shrink_iters: 128,
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_stores_road_to_effective_status_is_the_walk(
        steps in prop::collection::vec(step(), 2..28),
        orders in prop::collection::vec(any::<u64>(), 3),
    ) {
        case(&steps, &orders)?;
    }
}

/// A long chain of records of records and a deep premise chain: the road is iterative, and
/// a falsification at the chain's start revokes its end through the one path there is.
#[test]
fn deep_chains_fold_the_same_way() {
    let keys = Keys::new();
    let tmp = tempfile::tempdir().unwrap();
    let store = lib_store(tmp.path(), &keys);
    let mut chain: Vec<Signed> = vec![ClaimBuilder::assertion("base").sign(&keys)];
    for i in 0..400 {
        let prev = chain.last().unwrap().id.clone();
        chain.push(
            ClaimBuilder::assertion(&format!("step {i}"))
                .depends_on(&[prev.as_str()])
                .sign(&keys),
        );
    }
    let mut records =
        vec![ClaimBuilder::record("falsification", &[chain[0].id.as_str()]).sign(&keys)];
    for i in 0..300 {
        let prev = records.last().unwrap().id.clone();
        let kind = if i % 2 == 0 {
            "verification"
        } else {
            "falsification"
        };
        records.push(
            ClaimBuilder::record(kind, &[prev.as_str()])
                .text(&format!("record {i}"))
                .sign(&keys),
        );
    }
    common::lib_add_all(&store, chain.iter().chain(&records));
    let ids: Vec<String> = [&chain[chain.len() - 1], &chain[0], &records[0]]
        .iter()
        .map(|c| c.id.clone())
        .collect();
    agree(&store, &ids).unwrap();
}

/// Ties between shortest paths are broken by the whole sequence of ids from the root, not by
/// which premise comes first: a falsified root, six two-step routes from it to one claim, and
/// routes chosen (by their texts) so that the smallest first step leads to the premise of the
/// claim that is not the smallest.
#[test]
fn ties_are_broken_by_the_whole_path_not_the_premise_order() {
    let keys = Keys::new();
    let root = ClaimBuilder::assertion("root").sign(&keys);
    let falsified = ClaimBuilder::record("falsification", &[root.id.as_str()]).sign(&keys);
    // The first texts whose routes cross: the route through the smallest first step ends at
    // a premise that is not the smallest.
    let routes = (0..)
        .map(|round: u32| {
            (0..6)
                .map(|i| {
                    let first = ClaimBuilder::assertion(&format!("first {round}.{i}"))
                        .depends_on(&[root.id.as_str()])
                        .sign(&keys);
                    let second = ClaimBuilder::assertion(&format!("second {round}.{i}"))
                        .depends_on(&[first.id.as_str()])
                        .sign(&keys);
                    (first, second)
                })
                .collect::<Vec<_>>()
        })
        .find(|routes| {
            let by_first = routes.iter().min_by_key(|r| r.0.id.clone()).unwrap();
            let by_second = routes.iter().min_by_key(|r| r.1.id.clone()).unwrap();
            by_first.0.id != by_second.0.id
        })
        .unwrap();
    let seconds: Vec<String> = routes.iter().map(|r| r.1.id.clone()).collect();
    let end = ClaimBuilder::assertion("end")
        .depends_on(&refs(&seconds))
        .sign(&keys);
    let tmp = tempfile::tempdir().unwrap();
    let store = lib_store(tmp.path(), &keys);
    let mut all = vec![root.clone(), falsified];
    for (a, b) in &routes {
        all.push(a.clone());
        all.push(b.clone());
    }
    all.push(end.clone());
    common::lib_add_all(&store, &all);
    let smallest = routes.iter().min_by_key(|r| r.0.id.clone()).unwrap();
    let report = Fold::new(&store).report(&end.id).unwrap();
    assert_eq!(report.revoked_by.len(), 1);
    assert_eq!(
        report.revoked_by[0].path,
        vec![
            root.id.clone(),
            smallest.0.id.clone(),
            smallest.1.id.clone(),
            end.id.clone()
        ]
    );
    let ids: Vec<String> = all.iter().map(|c| c.id.clone()).collect();
    agree(&store, &ids).unwrap();
}
