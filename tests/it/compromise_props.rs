//! A compromise declared by the trust policy is part of the fold, and the fold stays a
//! function of the set: random claim graphs, with a random set of the keys declared
//! compromised by a policy that arrives at a random point among the claims, give every claim
//! the status a small independent model of the rules gives it (a claim signed only by a
//! compromised key is falsified by the policy, so it stops acting as a record and revokes what
//! rests on it), in two stores that received everything in different orders.

use crate::common;

use common::{graph, KeyPair, Keys, Rng, Signed};
use elench::fold::{Fold, Status};
use elench::store::Store;
use proptest::prelude::*;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The independent model: own and effective status, given the compromised keyids.
struct Model<'a> {
    by_id: BTreeMap<&'a str, &'a Signed>,
    keys: &'a Keys,
    compromised: &'a BTreeSet<String>,
}

impl Model<'_> {
    fn signer_compromised(&self, s: &Signed) -> bool {
        self.compromised.contains(&self.keys.key(s.signer).keyid)
    }

    fn own(&self, id: &str) -> Status {
        let me = self.by_id[id];
        if self.signer_compromised(me) {
            return Status::Falsified;
        }
        let mut live: Vec<&str> = Vec::new();
        for r in self.by_id.values() {
            if r.target.iter().any(|t| t == id)
                && matches!(self.own(&r.id), Status::Unevaluated | Status::Verified)
            {
                live.push(r.kind);
            }
        }
        if live.contains(&"falsification") {
            Status::Falsified
        } else if live.contains(&"supersession") {
            Status::Superseded
        } else if live.contains(&"verification") {
            Status::Verified
        } else {
            Status::Unevaluated
        }
    }

    fn effective(&self, id: &str) -> Status {
        let own = self.own(id);
        if matches!(own, Status::Falsified | Status::Superseded) {
            return own;
        }
        let me = self.by_id[id];
        let revoked = me.depends_on.iter().any(|p| {
            self.by_id.contains_key(p.as_str())
                && matches!(self.effective(p), Status::Falsified | Status::Revoked)
        });
        if revoked {
            Status::Revoked
        } else {
            own
        }
    }
}

/// A store trusting the three keys and pinning `root`.
fn store(dir: &Path, keys: &Keys, root: &KeyPair) -> Store {
    let s = common::lib_store(dir, keys);
    let pem = elench::keys::public_key_pem(&root.verifying_key()).unwrap();
    elench::trust::pin(&s, &pem, Some("root")).unwrap();
    s
}

/// Version 1 of a policy granting the three keys their roles, declaring `compromised`.
fn policy(keys: &Keys, root: &KeyPair, compromised: &BTreeSet<String>) -> Vec<u8> {
    let pem = |k: &KeyPair| elench::keys::public_key_pem(&k.verifying_key()).unwrap();
    let root_member = json!({"threshold": 1, "keys": [
        {"keyid": root.keyid, "name": "root", "publicKey": pem(root)}]});
    let chain =
        elench::trust::policy::chain_of(&serde_json::from_value(root_member.clone()).unwrap());
    let members: Vec<_> = keys
        .trusted_pairs()
        .iter()
        .map(|k| json!({"keyid": k.keyid, "name": k.name, "role": k.role, "publicKey": pem(k)}))
        .collect();
    let statement = json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "example.org/props", "digest": {"sha256": chain}}],
        "predicateType": elench::trust::PREDICATE_TYPE,
        "predicate": {"version": 1, "root": root_member, "keys": members,
                      "compromised": compromised.iter().collect::<Vec<_>>()},
    });
    elench::trust::source::sign_new(&statement, &root.signing_key()).unwrap()
}

/// Adds the claims in `order`, with the policy admitted after `at` of them.
fn fill(store: &Store, claims: &[&Signed], policy: &[u8], at: usize) {
    for (i, s) in claims.iter().enumerate() {
        if i == at {
            elench::trust::admit(store, policy).unwrap();
        }
        common::lib_add_all(store, [*s]);
    }
    if at >= claims.len() {
        elench::trust::admit(store, policy).unwrap();
    }
}

fn statuses(store: &Store, ids: &[String]) -> BTreeMap<String, (Status, Status)> {
    let mut fold = Fold::new(store);
    ids.iter()
        .map(|id| {
            let own = fold.own(id).unwrap().status;
            let eff = fold.effective(id).unwrap().status;
            (id.clone(), (own, eff))
        })
        .collect()
}

/// The gate's statuses by slot (`fold::dense`) are the fold's, at a tree of its own: own
/// status, accepted or not, effective status.
fn by_slot_is_the_fold(store: &Store, ids: &[String], tmp: &Path) -> Result<(), TestCaseError> {
    use elench::anchor::AtTree;
    use elench::tree::Selection;
    let dir = tmp.join("tree");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.txt"), "a\n").unwrap();
    let selection = Selection::from_no_ignore(true);
    let tree = elench::tree::list(&dir, selection).unwrap().ids().unwrap();
    let view = AtTree::new(store, tree.clone(), &dir, selection);
    let mut fold = Fold::new(&view);
    let snapshot = store.snapshot().unwrap();
    let all = snapshot.all_claims().unwrap();
    let at = AtTree::new(&all, tree, &dir, selection);
    let quick = elench::gate::evaluate::statuses_by_slot(&all, &at, ids).unwrap();
    for (id, got) in ids.iter().zip(quick) {
        let own = fold.own(id).unwrap();
        let want = (
            own.status,
            !own.accepted_by.is_empty(),
            fold.effective(id).unwrap().status,
        );
        prop_assert_eq!(got, want, "claim {}", id);
    }
    Ok(())
}

fn case(seed: u64, n: usize, mask: u8) -> Result<(), TestCaseError> {
    let keys = Keys::new();
    let root = KeyPair::in_memory(
        "human",
        "root",
        ed25519_dalek::SigningKey::from_bytes(&[0x5a; 32]),
    );
    let claims = graph(&keys, n, seed, "cp");
    let compromised: BTreeSet<String> = keys
        .trusted_pairs()
        .iter()
        .enumerate()
        .filter(|(i, _)| mask & (1 << i) != 0)
        .map(|(_, k)| k.keyid.clone())
        .collect();
    let p = policy(&keys, &root, &compromised);
    let ids: Vec<String> = claims.iter().map(|s| s.id.clone()).collect();
    let model = Model {
        by_id: claims.iter().map(|s| (s.id.as_str(), s)).collect(),
        keys: &keys,
        compromised: &compromised,
    };
    let mut rng = Rng::new(seed ^ 0x9e37);
    let tmp = tempfile::tempdir().unwrap();
    let mut seen = Vec::new();
    for k in 0..2 {
        let mut order: Vec<&Signed> = claims.iter().collect();
        if k == 1 {
            rng.shuffle(&mut order);
        }
        let at = rng.below(order.len() + 1);
        let s = store(&tmp.path().join(format!("s{k}")), &keys, &root);
        fill(&s, &order, &p, at);
        let got = statuses(&s, &ids);
        by_slot_is_the_fold(&s, &ids, tmp.path())?;
        for id in &ids {
            let (own, eff) = got[id];
            prop_assert_eq!(own, model.own(id), "own status of {} (seed {})", id, seed);
            prop_assert_eq!(eff, model.effective(id), "status of {} (seed {})", id, seed);
            if model.signer_compromised(model.by_id[id.as_str()]) {
                let decided = Fold::new(&s).own(id).unwrap().decided_by.clone();
                prop_assert!(decided.len() == 1 && decided[0].starts_with("tp_"));
            }
        }
        seen.push(got);
    }
    prop_assert_eq!(&seen[0], &seen[1]);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn a_compromise_folds_the_same_in_every_order_and_as_the_model_says(
        seed in any::<u64>(), n in 3usize..40, mask in 0u8..8
    ) {
        case(seed, n, mask)?;
    }
}
