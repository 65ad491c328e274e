//! Status at a tree is the fold over the records that apply there (docs/status.md,
//! "Verdicts per tree"), as a law: for random claim graphs whose verdicts observed random
//! trees, the fold through `AtTree` at each tree equals the ordinary fold (the reference,
//! `elench::fold::Fold`) over a source that holds only the records a small independent model
//! says apply there. The model knows nothing of digests: an observation applies at tree T
//! when T is the tree it observed, or when every file its target's predicate reads has the
//! same content (or is absent in both) at both trees, or, for a `run` predicate, when the
//! trees are the same; a supersession applies everywhere; an observation that recorded no
//! inputs applies at its own tree only.

use elench::anchor::inputs::{self, evidence_entry};
use elench::anchor::AtTree;
use elench::claim::{Claim, Kind, OriginKind, Summary};
use elench::fold::{ClaimSource, Fold};
use elench::store::{StoreError, StoredClaim};
use elench::tree::{Selection, TreeIds};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::collections::HashMap;

/// Claims in memory, with the records targeting each and the dependents of each.
#[derive(Default)]
struct Mem {
    claims: HashMap<String, StoredClaim<Summary>>,
    order: Vec<String>,
}

impl Mem {
    fn put(&mut self, claim: Claim, summary: Value) {
        let seq = self.order.len() as u64;
        self.order.push(claim.id.clone());
        self.claims.insert(
            claim.id.clone(),
            StoredClaim {
                claim,
                body: Summary::new(summary),
                signers: Vec::new(),
                seq,
            },
        );
    }

    /// The same claims without the records `keep` refuses.
    fn only<'a>(
        &'a self,
        keep: impl Fn(&StoredClaim<Summary>, &str) -> bool + 'a,
    ) -> FilteredMem<'a> {
        FilteredMem {
            mem: self,
            keep: Box::new(keep),
        }
    }
}

impl ClaimSource for Mem {
    fn claim(&self, id: &str) -> Result<Option<StoredClaim>, StoreError> {
        Ok(self.claims.get(id).map(|c| StoredClaim {
            claim: c.claim.clone(),
            body: (),
            signers: Vec::new(),
            seq: c.seq,
        }))
    }
    fn claim_summary(&self, id: &str) -> Result<Option<StoredClaim<Summary>>, StoreError> {
        Ok(self.claims.get(id).cloned())
    }
    fn records_targeting(&self, id: &str) -> Result<Vec<String>, StoreError> {
        Ok(self
            .order
            .iter()
            .filter(|r| self.claims[*r].claim.target.iter().any(|t| t == id))
            .cloned()
            .collect())
    }
    fn dependents(&self, id: &str) -> Result<Vec<String>, StoreError> {
        Ok(self
            .order
            .iter()
            .filter(|d| self.claims[*d].claim.depends_on.iter().any(|p| p == id))
            .cloned()
            .collect())
    }
}

/// A [`Mem`] whose records targeting a claim are only those `keep` lets through.
struct FilteredMem<'m> {
    mem: &'m Mem,
    #[allow(clippy::type_complexity)]
    keep: Box<dyn Fn(&StoredClaim<Summary>, &str) -> bool + 'm>,
}

impl ClaimSource for FilteredMem<'_> {
    fn claim(&self, id: &str) -> Result<Option<StoredClaim>, StoreError> {
        self.mem.claim(id)
    }
    fn records_targeting(&self, id: &str) -> Result<Vec<String>, StoreError> {
        Ok(self
            .mem
            .records_targeting(id)?
            .into_iter()
            .filter(|r| (self.keep)(&self.mem.claims[r], id))
            .collect())
    }
    fn dependents(&self, id: &str) -> Result<Vec<String>, StoreError> {
        self.mem.dependents(id)
    }
}

const FILES: [&str; 3] = ["f0", "f1", "d/f2"];

/// A tree: the content of each file, or absent.
type Contents = [Option<u8>; 3];

fn ids_of(contents: &Contents) -> TreeIds {
    let bytes: Vec<(String, Vec<u8>)> = FILES
        .iter()
        .zip(contents)
        .filter_map(|(p, c)| c.map(|c| (p.to_string(), vec![c])))
        .collect();
    let refs: Vec<(&str, &[u8])> = bytes
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice()))
        .collect();
    TreeIds::of_files(&refs)
}

#[derive(Debug, Clone)]
enum Reads {
    File(usize),
    /// `grep` over the directory `d`: reads `d/f2`.
    Dir,
    Run,
}

impl Reads {
    fn source(&self) -> String {
        match self {
            Reads::File(i) => format!("exists({:?})", FILES[*i]),
            Reads::Dir => r#"grep("x", "d") >= 0"#.to_owned(),
            Reads::Run => r#"run("true").exit == 0"#.to_owned(),
        }
    }

    /// Whether two trees are the same for these reads (the model).
    fn same(&self, a: &Contents, b: &Contents) -> bool {
        match self {
            Reads::File(i) => a[*i] == b[*i],
            Reads::Dir => a[2] == b[2],
            Reads::Run => a == b,
        }
    }
}

#[derive(Debug, Clone)]
struct AssertionPlan {
    reads: Reads,
    premises: Vec<prop::sample::Index>,
}

#[derive(Debug, Clone)]
struct RecordPlan {
    kind: Kind,
    /// Targets among everything made before.
    target: prop::sample::Index,
    /// The tree it observed.
    tree: prop::sample::Index,
    /// Whether it recorded its target's inputs (an older record did not).
    recorded: bool,
    premise: Option<prop::sample::Index>,
}

fn reads() -> impl Strategy<Value = Reads> {
    prop_oneof![
        (0usize..3).prop_map(Reads::File),
        Just(Reads::Dir),
        Just(Reads::Run)
    ]
}

fn plan() -> impl Strategy<Value = (Vec<Contents>, Vec<AssertionPlan>, Vec<RecordPlan>)> {
    let contents = prop::collection::vec(prop::array::uniform3(prop::option::of(0u8..2)), 2..5);
    let assertions = prop::collection::vec(
        (
            reads(),
            prop::collection::vec(any::<prop::sample::Index>(), 0..3),
        )
            .prop_map(|(reads, premises)| AssertionPlan { reads, premises }),
        1..7,
    );
    let kind = prop_oneof![
        Just(Kind::Verification),
        Just(Kind::Falsification),
        Just(Kind::Supersession),
        Just(Kind::ResidueAcceptance),
    ];
    let records = prop::collection::vec(
        (
            kind,
            any::<prop::sample::Index>(),
            any::<prop::sample::Index>(),
            prop::bool::weighted(0.8),
            prop::option::of(any::<prop::sample::Index>()),
        )
            .prop_map(|(kind, target, tree, recorded, premise)| RecordPlan {
                kind,
                target,
                tree,
                recorded,
                premise,
            }),
        0..12,
    );
    (contents, assertions, records)
}

fn id(n: usize) -> String {
    format!("cl_{n:064x}")
}

fn header(n: usize, kind: Kind, target: Vec<String>, depends_on: Vec<String>, tree: &str) -> Claim {
    Claim {
        id: id(n),
        kind,
        target,
        depends_on,
        origin: match kind {
            Kind::Assertion | Kind::Supersession => OriginKind::AgentAsserted,
            Kind::ResidueAcceptance => OriginKind::HumanAsserted,
            _ => OriginKind::HarnessObserved,
        },
        producer: "p".into(),
        anchor_tree: tree.to_owned(),
        timestamp: n as i64,
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 96,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn status_at_a_tree_is_the_fold_over_the_records_that_apply_there(
        (trees, assertions, records) in plan()
    ) {
        let ids: Vec<TreeIds> = trees.iter().map(ids_of).collect();
        let mut mem = Mem::default();
        // What each claim reads (None: a record, which reads its whole tree), and where
        // each record observed, for the model.
        let mut reads_of: Vec<Option<Reads>> = Vec::new();
        let mut observed: HashMap<String, (usize, bool)> = HashMap::new();
        for (n, a) in assertions.iter().enumerate() {
            let premises: Vec<String> = if n == 0 {
                Vec::new()
            } else {
                a.premises.iter().map(|p| id(p.index(n))).collect()
            };
            let summary = json!({
                "anchor": {"strategy": "multi"},
                "assertion": {"form": "predicate", "expression": {"source": a.reads.source()}},
            });
            mem.put(header(n, Kind::Assertion, Vec::new(), premises, ids[0].oid()), summary);
            reads_of.push(Some(a.reads.clone()));
        }
        for (k, r) in records.iter().enumerate() {
            let n = assertions.len() + k;
            let target = r.target.index(n);
            let t = r.tree.index(trees.len());
            let premises: Vec<String> = r.premise.iter().map(|p| id(p.index(n))).collect();
            let mut summary = json!({
                "anchor": {"strategy": "multi"},
                "assertion": {"form": "annotation", "text": "seen"},
            });
            if r.recorded {
                let digest = match &reads_of[target] {
                    Some(reads) => {
                        let expr = elench::claim::predicate::parse(&reads.source()).unwrap();
                        inputs::digest(&inputs::reads_of(&expr), &ids[t])
                    }
                    // A record about the whole tree it was made at.
                    None => ids[t].oid().to_owned(),
                };
                summary["evidence"] = json!([evidence_entry(&id(target), &digest)]);
            }
            // Records are whole-tree annotations, anchored at the tree they observed.
            let kind = r.kind;
            mem.put(header(n, kind, vec![id(target)], premises, ids[t].oid()), summary);
            reads_of.push(None);
            observed.insert(id(n), (t, r.recorded));
        }
        let dir = tempfile::tempdir().unwrap();
        for (at, at_ids) in ids.iter().enumerate() {
            let at_ids: &TreeIds = at_ids;
            // The model: which records act at tree `at`.
            let model = |rec: &StoredClaim<Summary>, target: &str| -> bool {
                let kind = rec.claim.kind;
                if matches!(kind, Kind::Supersession | Kind::Assertion) {
                    return true;
                }
                let (t, recorded) = observed[&rec.claim.id];
                if ids[t].oid() == at_ids.oid() {
                    return true;
                }
                if !recorded {
                    return false;
                }
                let n = usize::from_str_radix(&target[3..], 16).unwrap();
                match &reads_of[n] {
                    Some(reads) => reads.same(&trees[t], &trees[at]),
                    None => false,
                }
            };
            let reference = mem.only(model);
            let view = AtTree::new(&mem, at_ids.clone(), dir.path(), Selection::Committed);
            let mut want = Fold::new(&reference);
            let mut got = Fold::new(&view);
            for c in &mem.order {
                let w = want.report(c).unwrap();
                let g = got.report(c).unwrap();
                prop_assert_eq!(&g, &w, "claim {} at tree {}", c, at);
            }
        }
    }
}

#[test]
fn the_model_is_not_trivial() {
    // Two trees that differ only in f1: an exists("f0") verdict carries, exists("f1") not.
    let a: Contents = [Some(0), Some(0), None];
    let b: Contents = [Some(0), Some(1), None];
    assert!(Reads::File(0).same(&a, &b));
    assert!(!Reads::File(1).same(&a, &b));
    let e0 = elench::claim::predicate::parse(&Reads::File(0).source()).unwrap();
    let e1 = elench::claim::predicate::parse(&Reads::File(1).source()).unwrap();
    let (ia, ib) = (ids_of(&a), ids_of(&b));
    assert_eq!(
        inputs::digest(&inputs::reads_of(&e0), &ia),
        inputs::digest(&inputs::reads_of(&e0), &ib)
    );
    assert_ne!(
        inputs::digest(&inputs::reads_of(&e1), &ia),
        inputs::digest(&inputs::reads_of(&e1), &ib)
    );
}

/// Paths of a small tree: files at the top and in two directories.
const PATHS: [&str; 6] = ["a", "b", "src/c", "src/d", "src/deep/e", "t/f"];

/// What a predicate may name: any file, a directory, or a path with nothing there.
const NAMES: [&str; 10] = [
    "a",
    "b",
    "src/c",
    "src/d",
    "src/deep/e",
    "t/f",
    "src",
    "src/deep",
    "t",
    "nope",
];

fn tree_of(contents: &[u8]) -> TreeIds {
    let files: Vec<(&str, Vec<u8>)> = PATHS
        .iter()
        .zip(contents)
        .filter(|(_, c)| **c != 0)
        .map(|(p, c)| (*p, vec![*c]))
        .collect();
    let refs: Vec<(&str, &[u8])> = files.iter().map(|(p, b)| (*p, b.as_slice())).collect();
    TreeIds::of_files(&refs)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Changing a file a path-reading predicate reads (the file itself, or one under a
    /// directory it names; making a named file appear or vanish) changes its inputs digest;
    /// changing any other file does not.
    #[test]
    fn the_inputs_digest_changes_exactly_with_the_files_read(
        contents in prop::collection::vec(0u8..3, 6),
        named in prop::collection::btree_set(0usize..NAMES.len(), 1..4),
        grep in any::<bool>(),
        changed in 0usize..PATHS.len(),
        to in 0u8..3,
    ) {
        prop_assume!(contents[changed] != to);
        let calls: Vec<String> = named
            .iter()
            .map(|&i| if grep {
                format!("grep(\"x\", {:?}) >= 0", NAMES[i])
            } else {
                format!("exists({:?})", NAMES[i])
            })
            .collect();
        let expr = elench::claim::predicate::parse(&calls.join(" && ")).unwrap();
        let reads = inputs::reads_of(&expr);
        let mut after = contents.clone();
        after[changed] = to;
        let (before_ids, after_ids) = (tree_of(&contents), tree_of(&after));
        let path = PATHS[changed];
        let is_read = named.iter().any(|&i| {
            let n = NAMES[i];
            path == n || path.starts_with(&format!("{n}/"))
        });
        // A directory that holds no file is not in the tree (git keeps no empty directory):
        // whether it is there can change only with the files under it, which is a change
        // of something read.
        let changed_digest = inputs::digest(&reads, &before_ids) != inputs::digest(&reads, &after_ids);
        prop_assert_eq!(changed_digest, is_read, "{} changed {:?} -> {}; reads {:?}", path, contents[changed], to, reads);
    }
}
