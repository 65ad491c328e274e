//! The bulk blast (`graph::blast_store`, what `elench blast` runs) against the reference
//! (`graph::blast` through the general fold), on random graphs stored in a real store: both
//! over the store and over an in-memory source built from the same claims, for every claim as
//! the root, whole and cut by `--depth`.
//!
//! The graphs have what the bulk path handles apart from the general fold: records that depend
//! on records (so records sit inside closures and decide targets outside them), a record
//! naming the same target twice, a claim naming the same premise twice, falsifications of
//! falsifications, supersessions, verifications, residue acceptances, premises the store never
//! sees, and members that depend on deeper members (breadth-first order is not a topological
//! order).

use crate::common;

use common::{
    assertion, dangling_id, lib_add_all, lib_store, pick, record, record_kind, refs, run,
    ClaimBuilder, Keys, Signed,
};
use elench::claim::Kind;
use elench::fold::{ClaimSource, Fold, FoldError, Status};
use elench::graph::{blast, blast_bulk, blast_store, Blast};
use elench::store::{Store, StoreError, StoredClaim};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{json, Value};
use std::collections::BTreeMap;

// ---------------------------------------------------------------------------------------------
// An in-memory source of the same claims

struct Mem {
    claims: BTreeMap<String, StoredClaim>,
}

impl Mem {
    fn of(store: &Store, ids: &[String]) -> Mem {
        let claims = ids
            .iter()
            .map(|id| (id.clone(), store.get_fold(id).unwrap().expect("stored")))
            .collect();
        Mem { claims }
    }
}

impl ClaimSource for Mem {
    fn claim(&self, id: &str) -> Result<Option<StoredClaim>, StoreError> {
        Ok(self.claims.get(id).cloned())
    }
    fn records_targeting(&self, id: &str) -> Result<Vec<String>, StoreError> {
        Ok(self
            .claims
            .values()
            .filter(|c| c.claim.target.iter().any(|t| t == id))
            .map(|c| c.claim.id.clone())
            .collect())
    }
    fn dependents(&self, id: &str) -> Result<Vec<String>, StoreError> {
        Ok(self
            .claims
            .values()
            .filter(|c| c.claim.depends_on.iter().any(|p| p == id))
            .map(|c| c.claim.id.clone())
            .collect())
    }
}

// ---------------------------------------------------------------------------------------------
// Random graphs

#[derive(Debug, Clone)]
enum Step {
    /// An assertion with premises among every claim made before (records included), and
    /// now and then a premise the store never sees.
    Assertion {
        premises: Vec<Index>,
        dangling: bool,
        repeat_premise: bool,
    },
    /// A record on claims made before, with premises among them.
    Record {
        kind: Kind,
        targets: Vec<Index>,
        premises: Vec<Index>,
        repeat_target: bool,
        repeat_premise: bool,
    },
}

fn step() -> impl Strategy<Value = Step> {
    let assertion = (
        prop::collection::vec(any::<Index>(), 0..4),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.1),
    )
        .prop_map(|(premises, dangling, repeat_premise)| Step::Assertion {
            premises,
            dangling,
            repeat_premise,
        });
    let kind = record_kind();
    let record = (
        kind,
        prop::collection::vec(any::<Index>(), 1..3),
        prop::collection::vec(any::<Index>(), 0..3),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.1),
    )
        .prop_map(
            |(kind, targets, premises, repeat_target, repeat_premise)| Step::Record {
                kind,
                targets,
                premises,
                repeat_target,
                repeat_premise,
            },
        );
    prop_oneof![3 => assertion, 2 => record]
}

/// The claims of a plan, in creation order (each names only earlier ids). The first claim is
/// always an assertion.
fn build(steps: &[Step], keys: &Keys) -> Vec<Signed> {
    let mut all: Vec<Signed> = vec![assertion(keys, "the first assertion", &[])];
    for (i, s) in steps.iter().enumerate() {
        let made = match s {
            Step::Assertion {
                premises,
                dangling,
                repeat_premise,
            } => {
                let mut deps = pick(premises, &all);
                if *dangling {
                    deps.push(dangling_id(i as u64));
                }
                if *repeat_premise {
                    if let Some(first) = deps.first().cloned() {
                        deps.push(first);
                    }
                }
                ClaimBuilder::assertion(&format!("assertion {i}"))
                    .depends_on(&refs(&deps))
                    .sign(keys)
            }
            Step::Record {
                kind,
                targets,
                premises,
                repeat_target,
                repeat_premise,
            } => {
                let mut target = pick(targets, &all);
                if *repeat_target {
                    target.push(target[0].clone());
                }
                let mut deps = pick(premises, &all);
                if *repeat_premise {
                    if let Some(first) = deps.first().cloned() {
                        deps.push(first);
                    }
                }
                let kind = kind.as_str();
                let t: Vec<&str> = target.iter().map(String::as_str).collect();
                let d: Vec<&str> = deps.iter().map(String::as_str).collect();
                record(keys, kind, &format!("record {i}"), &t, &d)
            }
        };
        all.push(made);
    }
    all
}

// ---------------------------------------------------------------------------------------------
// The comparison

const DEPTHS: [Option<usize>; 5] = [None, Some(0), Some(1), Some(2), Some(4)];

/// The bulk blast of every claim, at every depth, equals the reference over the store and
/// over memory; an unknown root is NotFound from both.
fn check_all(store: &Store, ids: &[String]) -> Result<(), TestCaseError> {
    let mem = Mem::of(store, ids);
    for id in ids {
        for depth in DEPTHS {
            let arrays = blast_bulk(store, id, depth).expect("bulk blast");
            let bulk = arrays.to_blast();
            let reference = blast(&mut Fold::new(store), id, depth).expect("reference blast");
            prop_assert_eq!(&bulk, &reference, "blast {} (--depth {:?})", id, depth);
            // What the CLI writes from the arrays is the reference's JSON, byte for byte.
            let mut written = Vec::new();
            arrays.write_json(&mut written).unwrap();
            prop_assert_eq!(
                String::from_utf8(written).unwrap(),
                serde_json::to_value(&reference).unwrap().to_string()
            );
            prop_assert_eq!(&blast_store(store, id, depth).expect("bulk blast"), &bulk);
            let in_memory = blast(&mut Fold::new(&mem), id, depth).expect("in-memory blast");
            prop_assert_eq!(&bulk, &in_memory, "blast {} in memory ({:?})", id, depth);
        }
    }
    let unknown = dangling_id(u64::MAX >> 16);
    prop_assert!(matches!(
        blast_store(store, &unknown, None),
        Err(FoldError::NotFound(x)) if x == unknown
    ));
    prop_assert!(matches!(
        blast_store(store, "not an id", None),
        Err(FoldError::NotFound(_))
    ));
    // What the bulk path decodes of an entry agrees with the whole entry.
    let r = store.index().read().unwrap();
    for id in ids {
        let key = elench::store::index::id_key(id).unwrap();
        let whole = r.claim(&key).unwrap().unwrap();
        let edges = r.claim_edges(&key).unwrap().unwrap();
        prop_assert_eq!(edges.kind, whole.kind);
        prop_assert_eq!(&edges.target, &whole.target);
        prop_assert_eq!(&edges.depends_on, &whole.depends_on);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        failure_persistence: None,
        max_shrink_iters: 128,
        ..ProptestConfig::default()
    })]

    /// In creation order, reversed, or rotated: a claim that arrives after one that names it
    /// was numbered by the index when it was named, so its entries are not the index's last.
    #[test]
    fn bulk_blast_equals_the_reference(
        steps in prop::collection::vec(step(), 0..40),
        order in 0usize..8,
    ) {
        let keys = Keys::new();
        let mut claims = build(&steps, &keys);
        match order {
            0..=3 => {}
            4 => claims.reverse(),
            k => {
                let by = k % claims.len();
                claims.rotate_left(by);
            }
        }
        let tmp = tempfile::tempdir().unwrap();
        let store = lib_store(tmp.path(), &keys);
        lib_add_all(&store, &claims);
        let ids: Vec<String> = claims.iter().map(|c| c.id.clone()).collect();
        let checked = check_all(&store, &ids);
        // The store's environment closes with it (its registry is its own), so shrinking a
        // failure never runs out of address space.
        drop(store);
        checked?;
    }
}

// ---------------------------------------------------------------------------------------------
// Deterministic cases

/// R ← A ← B ← C, and X depends on R and on C: X is at depth 1 but its premise C at depth 3.
/// Falsifying B revokes C, so X, although breadth-first order reaches X first.
#[test]
fn a_member_depending_on_a_deeper_member_is_folded_after_it() {
    let keys = Keys::new();
    let r = assertion(&keys, "r", &[]);
    let a = assertion(&keys, "a", &[&r.id]);
    let b = assertion(&keys, "b", &[&a.id]);
    let c = assertion(&keys, "c", &[&b.id]);
    let x = assertion(&keys, "x", &[&r.id, &c.id]);
    let f = record(&keys, "falsification", "b is wrong", &[&b.id], &[]);
    let tmp = tempfile::tempdir().unwrap();
    let store = lib_store(tmp.path(), &keys);
    lib_add_all(&store, [&x, &f, &c, &b, &a, &r]);

    let got = blast_store(&store, &r.id, None).unwrap();
    assert_eq!(got, blast(&mut Fold::new(&store), &r.id, None).unwrap());
    let status: BTreeMap<&str, Status> = got
        .layers
        .iter()
        .flat_map(|l| l.claims.iter().map(|m| (m.id.as_str(), m.status)))
        .collect();
    assert_eq!(status[r.id.as_str()], Status::Unevaluated);
    assert_eq!(status[b.id.as_str()], Status::Falsified);
    assert_eq!(status[c.id.as_str()], Status::Revoked);
    assert_eq!(status[x.id.as_str()], Status::Revoked);
    let depth_of_x = got
        .layers
        .iter()
        .find(|l| l.claims.iter().any(|m| m.id == x.id))
        .unwrap()
        .depth;
    assert_eq!(depth_of_x, 1);
    assert_eq!(got.count, 4);
}

/// Premises named twice, and premises outside the closure (one falsified, one never stored):
/// a member names more premises than the closure holds, and the falsified one revokes it.
#[test]
fn repeated_and_outside_premises() {
    let keys = Keys::new();
    let r = assertion(&keys, "r", &[]);
    let x = assertion(&keys, "x, outside", &[]);
    let f = record(&keys, "falsification", "x is wrong", &[&x.id], &[]);
    let missing = dangling_id(7);
    let a = assertion(&keys, "a names r twice", &[&r.id, &r.id]);
    let b = assertion(&keys, "b rests on r and x", &[&r.id, &x.id]);
    let c = assertion(&keys, "c names x twice", &[&x.id, &r.id, &x.id]);
    let d = assertion(
        &keys,
        "d rests on a and a missing claim",
        &[&a.id, &missing, &a.id],
    );
    let tmp = tempfile::tempdir().unwrap();
    let store = lib_store(tmp.path(), &keys);
    lib_add_all(&store, [&r, &x, &f, &a, &b, &c, &d]);
    assert_eq!(
        store.get_fold(&a.id).unwrap().unwrap().claim.depends_on,
        vec![r.id.clone(), r.id.clone()]
    );

    for depth in DEPTHS {
        let got = blast_store(&store, &r.id, depth).unwrap();
        assert_eq!(got, blast(&mut Fold::new(&store), &r.id, depth).unwrap());
    }
    let got = blast_store(&store, &r.id, None).unwrap();
    let status: BTreeMap<&str, Status> = got
        .layers
        .iter()
        .flat_map(|l| l.claims.iter().map(|m| (m.id.as_str(), m.status)))
        .collect();
    assert_eq!(status.len(), 5);
    assert_eq!(status[a.id.as_str()], Status::Unevaluated);
    assert_eq!(status[b.id.as_str()], Status::Revoked);
    assert_eq!(status[c.id.as_str()], Status::Revoked);
    assert_eq!(status[d.id.as_str()], Status::Unevaluated);
}

/// A record inside the closure decides a target outside it; the record's own status comes
/// from records targeting it (a falsification of a falsification), all read in bulk.
#[test]
fn records_inside_the_closure_decide_targets_outside_it() {
    let keys = Keys::new();
    let r = assertion(&keys, "r", &[]);
    let t = assertion(&keys, "t", &[]);
    // f falsifies t and rests on r: it is in r's closure.
    let f = record(
        &keys,
        "falsification",
        "t is wrong",
        &[&t.id, &t.id],
        &[&r.id],
    );
    let v = record(&keys, "verification", "t passed", &[&t.id], &[&r.id]);
    let tmp = tempfile::tempdir().unwrap();
    let store = lib_store(tmp.path(), &keys);
    lib_add_all(&store, [&r, &t, &f, &v]);

    let got = blast_store(&store, &r.id, None).unwrap();
    assert_eq!(got, blast(&mut Fold::new(&store), &r.id, None).unwrap());
    assert_eq!(got.affected.len(), 1);
    assert_eq!(got.affected[0].id, t.id);
    assert_eq!(got.affected[0].status, Status::Falsified);
    assert_eq!(got.affected[0].decided_by, vec![f.id.clone()]);

    // Falsify the falsification: t falls back to its verification, decided by v.
    let g = record(&keys, "falsification", "f is wrong", &[&f.id], &[]);
    lib_add_all(&store, [&g]);
    let got = blast_store(&store, &r.id, None).unwrap();
    assert_eq!(got, blast(&mut Fold::new(&store), &r.id, None).unwrap());
    assert_eq!(got.affected.len(), 1);
    assert_eq!(got.affected[0].status, Status::Verified);
    assert_eq!(got.affected[0].decided_by, vec![v.id.clone()]);
    let f_member = got
        .layers
        .iter()
        .flat_map(|l| &l.claims)
        .find(|m| m.id == f.id)
        .unwrap();
    assert_eq!(
        (f_member.kind, f_member.status),
        ("falsification", Status::Falsified)
    );
    assert_eq!(Kind::Falsification.as_str(), f_member.kind);
}

/// Through the binary: the JSON `data` is the reference blast exactly, inside the usual
/// envelope (same fields, same order as every other command); text mode lists the same.
#[test]
fn the_binary_prints_the_reference_blast() {
    let keys = Keys::new();
    let r = assertion(&keys, "r", &[]);
    let a = assertion(&keys, "a depends on r", &[&r.id]);
    let b = assertion(&keys, "b depends on a and r", &[&a.id, &r.id]);
    let t = assertion(&keys, "t", &[]);
    let f = record(&keys, "falsification", "t is wrong", &[&t.id], &[&a.id]);
    let s = record(&keys, "supersession", "a is replaced", &[&a.id], &[]);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let all = [&r, &a, &b, &t, &f, &s];
    {
        let store = lib_store(&dir, &keys);
        lib_add_all(&store, all);
    }

    for depth in [None, Some("1")] {
        let mut args = vec!["blast", r.id.as_str()];
        if let Some(d) = depth {
            args.extend(["--depth", d]);
        }
        let out = run(&dir, &args);
        assert_eq!(out.code, 0, "{}", out.json);
        let reference: Blast = {
            let store = Store::open(
                &dir,
                &elench::store::Options::new(std::time::Duration::from_secs(30)),
            )
            .unwrap();
            blast(
                &mut Fold::new(&store),
                &r.id,
                depth.map(|d| d.parse().unwrap()),
            )
            .unwrap()
        };
        assert_eq!(out.json["data"], serde_json::to_value(&reference).unwrap());
        let fields: Vec<&str> = out
            .json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(fields, ["ok", "data", "error", "warnings", "meta"]);
        assert_eq!(out.json["ok"], json!(true));
        assert_eq!(out.json["error"], Value::Null);
        assert_eq!(out.json["meta"]["command"], json!("blast"));
    }
    // Byte for byte what `emit` prints for a `Value` envelope: its compact form and a newline.
    let raw = common::command(tmp.path())
        .arg("--store")
        .arg(&dir)
        .args(["--format", "json", "blast", &r.id])
        .output()
        .unwrap();
    let printed = String::from_utf8(raw.stdout).unwrap();
    let parsed: Value = serde_json::from_str(&printed).unwrap();
    assert_eq!(printed, format!("{parsed}\n"));
    let status = run(&dir, &["status", &r.id]);
    let fields: Vec<&String> = status.json.as_object().unwrap().keys().collect();
    assert_eq!(fields, ["ok", "data", "error", "warnings", "meta"]);

    let text = common::command(tmp.path())
        .arg("--store")
        .arg(&dir)
        .args(["--format", "text", "blast", &r.id])
        .output()
        .unwrap();
    assert!(text.status.success());
    let text = String::from_utf8(text.stdout).unwrap();
    let short = |id: &str| id[..15].to_owned();
    // The tree comes first (its root line starts with the root's short id), then the size
    // of each layer: every member is shown once, in the tree, not listed again.
    assert!(text.starts_with(&short(&r.id)), "{text}");
    let mut lines = text
        .lines()
        .skip_while(|l| !l.starts_with("blast radius of"));
    assert_eq!(
        lines.next(),
        Some(format!("blast radius of {}: 3 dependent claim(s)", r.id).as_str())
    );
    assert_eq!(lines.next(), Some("depth 1: 2, depth 2: 1"), "{text}");
    assert_eq!(
        text.lines().next().map(str::trim_end),
        Some(format!("{} unevaluated assertion  r", short(&r.id)).as_str())
    );
    assert!(text.contains(&format!(
        "{} superseded assertion  a depends on r",
        short(&a.id)
    )));
    assert!(
        !text.contains("depth 0") && !text.contains(" via "),
        "{text}"
    );
    let tree_lines = text.lines().take_while(|l| !l.is_empty()).count();
    assert_eq!(
        text.matches("cl_").count(),
        // Each line of the tree names one claim; the summary names the root; `affected`
        // names t and its record.
        tree_lines + 1 + 2,
        "{text}"
    );
    assert!(text.contains("affected (outside the closure, decided by a record inside it):"));
    assert!(text.contains(&format!(
        "  {} falsified by {}  t",
        short(&t.id),
        short(&f.id)
    )));
}

/// The response size cap applies to the streamed blast as to any response: over the cap the
/// answer is cut (and says so), with no cap it is whole, and the row formats read it too.
#[test]
fn the_binary_cuts_a_blast_over_the_cap_and_streams_one_under_it() {
    let keys = Keys::new();
    let r = assertion(&keys, "r", &[]);
    let mut all = vec![r.clone()];
    for i in 0..40 {
        let premise = all[i / 2].id.clone();
        all.push(assertion(&keys, &format!("claim {i}"), &[&premise]));
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    {
        let store = lib_store(&dir, &keys);
        lib_add_all(&store, &all);
    }
    let reference: Blast = {
        let store = Store::open(
            &dir,
            &elench::store::Options::new(std::time::Duration::from_secs(30)),
        )
        .unwrap();
        blast(&mut Fold::new(&store), &r.id, None).unwrap()
    };
    let blast_with = |cap: &str, format: &str| {
        let out = common::command(tmp.path())
            .env("ELENCH_MAX_OUTPUT_BYTES", cap)
            .arg("--store")
            .arg(&dir)
            .args(["--format", format, "blast", &r.id])
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };

    let whole = blast_with("0", "json");
    let v: Value = serde_json::from_str(&whole).unwrap();
    assert_eq!(v["data"], serde_json::to_value(&reference).unwrap());
    assert!(v["meta"].get("truncated").is_none());
    assert_eq!(whole, format!("{v}\n"));
    assert!(whole.len() > 4096);

    let cut = blast_with("4096", "json");
    let v: Value = serde_json::from_str(&cut).unwrap();
    assert!(cut.len() <= 4096 + 1, "{} bytes", cut.len());
    assert_eq!(v["meta"]["truncated"], json!(true));
    assert_eq!(v["data"]["count"], json!(40));
    assert!(v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w["code"] == "RESPONSE_TRUNCATED"));
    assert_eq!(cut, format!("{v}\n"));

    let rows = blast_with("4096", "jsonl");
    assert!(rows.lines().count() >= 1);
    for line in rows.lines() {
        serde_json::from_str::<Value>(line).unwrap();
    }
}
