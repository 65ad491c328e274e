//! A damaged index never changes an answer silently. LMDB keeps no checksums of its page
//! structure: a damaged branch page sends a lookup or a walk past entries whose own checksums
//! are sound. Each test here takes entries away (or damages pages) behind elench's back, as
//! such a page does, and checks through the binary that the command fails with
//! `INDEX_DAMAGED`, never with another answer, and that the next command rebuilds the index
//! and answers as before.

use crate::common;
use crate::index_cache::store_with;

use common::{assertion, copy_dir, graph, record, run, run_with, warning_codes, Keys, Out, Signed};
use serde_json::Value;
use std::path::{Path, PathBuf};

type Db = heed::Database<heed::types::Bytes, heed::types::Bytes>;

/// Runs `f` on the store's LMDB index, opened directly, in one write transaction.
fn with_index<T>(store: &Path, f: impl FnOnce(&heed::Env, &mut heed::RwTxn) -> T) -> T {
    // SAFETY: the test is the only process using the index while this runs.
    let env = unsafe {
        heed::EnvOpenOptions::new()
            .max_dbs(16)
            .map_size(1 << 30)
            .open(store.join("index"))
            .unwrap()
    };
    let mut wtxn = env.write_txn().unwrap();
    let out = f(&env, &mut wtxn);
    wtxn.commit().unwrap();
    env.prepare_for_closing().wait();
    out
}

fn table(env: &heed::Env, txn: &heed::RwTxn, name: &str) -> Db {
    env.open_database(txn, Some(name)).unwrap().unwrap()
}

/// The node the index gives `id` (the first 8 bytes of its `nodes` value).
fn node_of(store: &Path, id: &str) -> Vec<u8> {
    let key = elench::store::index::id_key(id).unwrap();
    with_index(store, |env, txn| {
        let v = table(env, txn, "nodes").get(txn, &key).unwrap().unwrap();
        v[..8].to_vec()
    })
}

/// Removes the entry `key` of `name`, as a lookup sent past it would miss it.
fn remove(store: &Path, name: &str, key: &[u8]) {
    with_index(store, |env, txn| {
        assert!(table(env, txn, name).delete(txn, key).unwrap(), "{name}");
    });
}

/// The command fails with `INDEX_DAMAGED` and marks the index; the next command (the same
/// one) rebuilds it and answers `want`.
fn damaged_then_rebuilt(store: &Path, args: &[&str], want: &Value, what: &str) {
    let first = run(store, args);
    assert_eq!(
        first.json["error"]["code"], "INDEX_DAMAGED",
        "{what}: {args:?} answered {}",
        first.json
    );
    assert_eq!(first.code, 4, "{what}");
    assert!(store.join("index").join("DAMAGED").exists(), "{what}");
    let next = run(store, args);
    assert_eq!(next.code, 0, "{what}: {}", next.json);
    assert!(
        warning_codes(&next).contains(&"INDEX_REBUILT".to_owned()),
        "{what}: {}",
        next.json
    );
    assert_eq!(&next.json["data"], want, "{what}");
    assert_eq!(run(store, &["fsck"]).code, 0, "{what}");
}

/// A store of `a`, `b` resting on `a`, a falsification of `a`, and some others.
struct Small {
    _tmp: tempfile::TempDir,
    store: PathBuf,
    a: Signed,
    b: Signed,
    f: Signed,
}

fn small() -> Small {
    let tmp = tempfile::tempdir().unwrap();
    let keys = Keys::new();
    let a = assertion(&keys, "the parser rejects empty input", &[]);
    let b = assertion(&keys, "the linter relies on it", &[&a.id]);
    let f = record(&keys, "falsification", "it accepts it", &[&a.id], &[]);
    let mut claims = vec![a.clone(), b.clone(), f.clone()];
    claims.extend(graph(&keys, 30, 3, "small"));
    let store = store_with(tmp.path(), &claims);
    Small {
        _tmp: tmp,
        store,
        a,
        b,
        f,
    }
}

fn answer(out: Out) -> Value {
    assert_eq!(out.code, 0, "{}", out.json);
    out.json["data"].clone()
}

#[test]
fn a_lookup_that_misses_an_entry_is_index_damaged_and_the_next_command_rebuilds() {
    let s = small();
    let all = ["status", "--all", "--limit", "1000"];
    let want_all = answer(run(&s.store, &all));
    let want_b = answer(run(&s.store, &["status", &s.b.id]));
    let want_blast = answer(run(&s.store, &["blast", &s.a.id]));
    let want_keys = answer(run(&s.store, &["keys", "list"]));
    let want_log = answer(run(&s.store, &["log", "--limit", "1000"]));
    // A gate reads every claim in one walk of the claims table; its claims are about the
    // whole of another tree, so this policy lets it pass having judged none.
    let at = s.store.with_file_name("tree");
    std::fs::create_dir_all(&at).unwrap();
    std::fs::write(at.join("a.txt"), "a\n").unwrap();
    let policy = s.store.with_file_name("policy.toml");
    std::fs::write(&policy, "[rules]\nmin_in_scope = 0\n").unwrap();
    let (at, policy) = (at.to_str().unwrap(), policy.to_str().unwrap());
    let gate = ["gate", "--policy", policy, "--at", at];
    let want_gate = answer(run(&s.store, &gate));
    assert!(
        want_gate["counts"]["unanchored"].as_u64() > Some(1),
        "{want_gate}"
    );
    assert_eq!(want_b["claims"][0]["status"], "revoked", "{want_b}");
    // What is taken away, how, the command that reads it, and what it must answer.
    type Case<'a> = (&'a str, Box<dyn Fn(&Path) + 'a>, Vec<&'a str>, &'a Value);
    let cases: Vec<Case> = vec![
        (
            // The falsification of `a` no longer found: `a` would read unevaluated.
            "a target pair",
            Box::new(|store: &Path| {
                let key = [node_of(store, &s.a.id), node_of(store, &s.f.id)].concat();
                remove(store, "by_target", &key);
            }),
            all.to_vec(),
            &want_all,
        ),
        (
            // `b` would no longer be in `a`'s blast radius.
            "a premise pair",
            Box::new(|store: &Path| {
                let key = [node_of(store, &s.a.id), node_of(store, &s.b.id)].concat();
                remove(store, "by_premise", &key);
            }),
            vec!["blast", &s.a.id],
            &want_blast,
        ),
        (
            // `b`'s premise `a` would read as a claim the store never saw.
            "the nodes entry of a premise",
            Box::new(|store: &Path| {
                let key = elench::store::index::id_key(&s.a.id).unwrap();
                remove(store, "nodes", &key);
            }),
            vec!["status", &s.b.id],
            &want_b,
        ),
        (
            "the claims entry of a premise",
            Box::new(|store: &Path| {
                let node = node_of(store, &s.a.id);
                remove(store, "claims", &node);
            }),
            vec!["status", &s.b.id],
            &want_b,
        ),
        (
            // `b`'s walk up its premises would take `a` for a claim the store never saw.
            "the ancestry entry of a premise",
            Box::new(|store: &Path| {
                let node = node_of(store, &s.a.id);
                remove(store, "ancestry", &node);
            }),
            vec!["status", &s.b.id],
            &want_b,
        ),
        (
            // `b`'s own walk would find no claim to start from.
            "the ancestry entry of the claim asked about",
            Box::new(|store: &Path| {
                let node = node_of(store, &s.b.id);
                remove(store, "ancestry", &node);
            }),
            vec!["status", &s.b.id],
            &want_b,
        ),
        (
            // The log lists `a` and cannot show it.
            "the claims entry of a listed claim",
            Box::new(|store: &Path| {
                let node = node_of(store, &s.a.id);
                remove(store, "claims", &node);
            }),
            vec!["log", "--limit", "1000"],
            &want_log,
        ),
        (
            // The gate's walk would not meet `b`, and judge one claim fewer.
            "the claims entry of a claim a gate judges",
            Box::new(|store: &Path| {
                let node = node_of(store, &s.b.id);
                remove(store, "claims", &node);
            }),
            gate.to_vec(),
            &want_gate,
        ),
        (
            // A trusted key would be left out of the trust state.
            "a key",
            Box::new(|store: &Path| {
                let keyid = want_keys["keys"][0]["keyid"].as_str().unwrap().to_owned();
                remove(store, "keys", keyid.as_bytes());
            }),
            vec!["keys", "list"],
            &want_keys,
        ),
    ];
    for (i, (what, damage, args, want)) in cases.iter().enumerate() {
        let store = s.store.with_file_name(format!("case{i}"));
        copy_dir(&s.store, &store);
        damage(&store);
        damaged_then_rebuilt(&store, args, want, what);
    }
}

/// LMDB's page layout, as the tests below damage it: page header of 16 bytes (page number,
/// padding, flags at 10, lower bound of the free space at 12), then the offsets of the
/// nodes; a branch node is the child's page number (low 48 bits in three u16s), the key's
/// size (u16) and the key.
const PAGE: usize = 4096;
const P_BRANCH: u16 = 0x01;

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

/// The page numbers of the branch pages of `data.mdb`, with the offsets of their nodes.
fn branch_pages(bytes: &[u8]) -> Vec<(usize, Vec<usize>)> {
    (2..bytes.len() / PAGE)
        .filter_map(|p| {
            let page = &bytes[p * PAGE..(p + 1) * PAGE];
            if u16_at(page, 10) != P_BRANCH {
                return None;
            }
            let n = (u16_at(page, 12) as usize).saturating_sub(16) / 2;
            let nodes = (0..n).map(|i| u16_at(page, 16 + 2 * i) as usize).collect();
            Some((p, nodes))
        })
        .collect()
}

#[test]
fn a_branch_page_pointing_back_up_the_tree_is_index_damaged_not_a_lack_of_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let claims = graph(&Keys::new(), 300, 7, "loop");
    let store = store_with(tmp.path(), &claims);
    let all = ["status", "--all", "--limit", "1000"];
    let want = answer(run(&store, &all));
    // Every branch page's children made the page itself: a search descends forever, until
    // LMDB's cursor stack is full (MDB_CURSOR_FULL).
    let data = store.join("index").join("data.mdb");
    let mut bytes = std::fs::read(&data).unwrap();
    let branches = branch_pages(&bytes);
    assert!(!branches.is_empty());
    for (p, nodes) in branches {
        for at in nodes {
            let node = p * PAGE + at;
            let pgno = p as u64;
            bytes[node..node + 2].copy_from_slice(&(pgno as u16).to_le_bytes());
            bytes[node + 2..node + 4].copy_from_slice(&((pgno >> 16) as u16).to_le_bytes());
            bytes[node + 4..node + 6].copy_from_slice(&((pgno >> 32) as u16).to_le_bytes());
        }
    }
    std::fs::write(&data, &bytes).unwrap();
    damaged_then_rebuilt(&store, &all, &want, "a branch page pointing at itself");
}

#[test]
fn fsck_finds_a_branch_key_that_sends_lookups_past_entries_a_walk_finds() {
    let tmp = tempfile::tempdir().unwrap();
    let claims = graph(&Keys::new(), 300, 8, "ksize");
    let store = store_with(tmp.path(), &claims);
    assert_eq!(run(&store, &["fsck"]).code, 0);
    // The `nodes` table is the one keyed by 32-byte ids. In a branch page of it, the second
    // node's key size 32 becomes 0 (one flipped bit): every id of the first child now sorts
    // after that key, so a lookup goes to the second child and misses. A walk steps from leaf
    // to leaf and never reads the key.
    let data = store.join("index").join("data.mdb");
    let mut bytes = std::fs::read(&data).unwrap();
    let mut flipped = 0;
    for (p, nodes) in branch_pages(&bytes) {
        let ksize = |b: &[u8], at: usize| u16_at(b, p * PAGE + at + 6);
        if nodes.len() >= 2
            && nodes
                .iter()
                .all(|&at| at == nodes[0] || ksize(&bytes, at) == 32)
        {
            bytes[p * PAGE + nodes[1] + 6] ^= 0x20;
            flipped += 1;
        }
    }
    assert!(flipped > 0, "no branch page of nodes");
    std::fs::write(&data, &bytes).unwrap();
    let out = run(&store, &["fsck"]);
    assert_eq!(out.code, 4, "{}", out.json);
    let problems = out.json["data"]["problems"].to_string();
    assert!(problems.contains("INDEX_DISAGREES"), "{problems}");
    assert!(problems.contains("nodes"), "{problems}");
    // And a command that reads it says so, and the next one rebuilds.
    let all = ["status", "--all", "--limit", "1000"];
    let first = run(&store, &all);
    assert_eq!(
        first.json["error"]["code"], "INDEX_DAMAGED",
        "{}",
        first.json
    );
    let next = run(&store, &all);
    assert_eq!(next.code, 0, "{}", next.json);
    assert_eq!(run(&store, &["fsck"]).code, 0);
}

#[test]
fn damage_to_lmdb_meta_pages_is_index_damage_and_rebuilt_not_a_lack_of_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let claims = graph(&Keys::new(), 40, 9, "meta");
    let pristine = store_with(tmp.path(), &claims);
    let all = ["status", "--all", "--limit", "1000"];
    let want = answer(run(&pristine, &all));
    let bytes = std::fs::read(pristine.join("index").join("data.mdb")).unwrap();
    // MDB_meta after the page header: magic, version, address, map size, the free-space
    // tree's record (its first 4 bytes: the page size) and the main tree's, the last page in
    // use, the transaction id. The meta page in force is the one with the larger id.
    let (free_db, last_pg, txnid) = (16 + 24, 16 + 24 + 96, 16 + 24 + 96 + 8);
    let id_of = |page: usize| u64::from_le_bytes(bytes[page + txnid..][..8].try_into().unwrap());
    let current = if id_of(PAGE) > id_of(0) { PAGE } else { 0 };
    for (what, at, mask) in [
        // LMDB would map 2^62 bytes and fail for want of memory.
        ("the last page in use", current + last_pg + 7, 0x40u8),
        // LMDB would read every page at the wrong size.
        ("the page size", current + free_db + 1, 0x40),
        // LMDB would take the older meta page for the one in force.
        ("the transaction id", current + txnid, 0x04),
        (
            "the older page's transaction id",
            (PAGE - current) + txnid + 1,
            0x01,
        ),
    ] {
        let store = tmp.path().join(format!("flip{at}"));
        copy_dir(&pristine, &store);
        let mut damaged = bytes.clone();
        damaged[at] ^= mask;
        std::fs::write(store.join("index").join("data.mdb"), &damaged).unwrap();
        let out = run(&store, &all);
        assert_eq!(out.code, 0, "{what}: {}", out.json);
        assert!(
            warning_codes(&out).contains(&"INDEX_REBUILT".to_owned()),
            "{what}: {}",
            out.json
        );
        assert_eq!(out.json["data"], want, "{what}");
        assert_eq!(run(&store, &["fsck"]).code, 0, "{what}");
    }
}

/// `blast` reads what decides its members' statuses a generation at a time, in node order:
/// the records targeting members (their kinds from the target pairs, the records targeting
/// them through their counts), the premises outside the closure and their ancestry, and the
/// records targeting those. An entry taken from any of those reads is damage, never a radius
/// whose statuses are quietly different.
#[test]
fn blast_reads_ahead_of_its_members_and_an_entry_missing_there_is_index_damaged() {
    let tmp = tempfile::tempdir().unwrap();
    let keys = Keys::new();
    // `root` and `member` are the radius; `outside` is a premise of `member` outside it,
    // revoked through its own premise `ancestor`, which `h` falsifies; `v` verifies `root`,
    // and `g` verifies `outside`.
    let root = assertion(&keys, "the cache is keyed by the tree", &[]);
    let ancestor = assertion(&keys, "the tree id is stable", &[]);
    let outside = assertion(&keys, "ids do not collide", &[&ancestor.id]);
    let member = assertion(&keys, "a hit is never stale", &[&root.id, &outside.id]);
    let h = record(&keys, "falsification", "it changes", &[&ancestor.id], &[]);
    let g = record(&keys, "verification", "none seen", &[&outside.id], &[]);
    let v = record(&keys, "verification", "keyed so", &[&root.id], &[]);
    let claims = vec![
        root.clone(),
        ancestor.clone(),
        outside.clone(),
        member.clone(),
        h.clone(),
        g.clone(),
        v.clone(),
    ];
    let base = store_with(tmp.path(), &claims);
    let args = ["blast", root.id.as_str()];
    let want = answer(run(&base, &args));
    assert_eq!(
        want["layers"][1]["claims"][0]["status"], "revoked",
        "{want}"
    );
    assert_eq!(
        want["layers"][0]["claims"][0]["status"], "verified",
        "{want}"
    );
    type Case<'a> = (&'a str, Box<dyn Fn(&Path) + 'a>);
    let pair = |store: &Path, a: &str, b: &str| [node_of(store, a), node_of(store, b)].concat();
    let cases: Vec<Case> = vec![
        (
            // `root` would read unevaluated.
            "a target pair of a member",
            Box::new(|store: &Path| remove(store, "by_target", &pair(store, &root.id, &v.id))),
        ),
        (
            // The records targeting `v` would read as none.
            "the count of the pairs naming a record targeting a member",
            Box::new(|store: &Path| remove(store, "incoming", &node_of(store, &v.id))),
        ),
        (
            // `member` would no longer be revoked.
            "a target pair of an outside premise's ancestor",
            Box::new(|store: &Path| remove(store, "by_target", &pair(store, &ancestor.id, &h.id))),
        ),
        (
            "the count of the pairs naming an outside premise",
            Box::new(|store: &Path| remove(store, "incoming", &node_of(store, &outside.id))),
        ),
        (
            // The walk up the outside premise would stop short of `ancestor`'s falsification.
            "the ancestry entry of an outside premise's ancestor",
            Box::new(|store: &Path| remove(store, "ancestry", &node_of(store, &ancestor.id))),
        ),
        (
            "the count of the pairs naming a record targeting an outside premise",
            Box::new(|store: &Path| remove(store, "incoming", &node_of(store, &g.id))),
        ),
    ];
    for (i, (what, damage)) in cases.iter().enumerate() {
        let store = base.with_file_name(format!("ahead{i}"));
        copy_dir(&base, &store);
        damage(&store);
        damaged_then_rebuilt(&store, &args, &want, what);
    }
}

/// `fsck` of an index that names many ids numbers them from the index itself (forced here
/// with `ELENCH_FSCK_OWN_IDS=0`): it finds nothing in a sound store, and in a store whose
/// index was changed behind elench's back (entries removed, two ids' nodes swapped, a claimed
/// flag cleared, each with sound checksums) it reports exactly what `fsck` numbering the ids
/// itself reports.
#[test]
fn fsck_numbering_ids_from_the_index_reports_what_its_own_numbering_does() {
    let s = small();
    let from_index = [("ELENCH_FSCK_OWN_IDS", "0")];
    let sound = run_with(&s.store, &["fsck"], &from_index);
    assert_eq!(sound.code, 0, "{}", sound.json);
    let key = |id: &str| elench::store::index::id_key(id).unwrap().to_vec();
    let (a, b) = (key(&s.a.id), key(&s.b.id));
    let (node_a, node_b) = (node_of(&s.store, &s.a.id), node_of(&s.store, &s.b.id));
    let put = |store: &Path, name: &str, k: &[u8], value: &[u8]| {
        with_index(store, |env, txn| {
            let v = elench::store::index::stored_value(name, k, value).unwrap();
            table(env, txn, name).put(txn, k, &v).unwrap();
        });
    };
    let swapped = |store: &Path| {
        let value = |node: &[u8]| [node, &[1u8][..]].concat();
        put(store, "nodes", &a, &value(&node_b));
        put(store, "nodes", &b, &value(&node_a));
    };
    let unclaimed = |store: &Path| put(store, "nodes", &b, &[&node_b[..], &[0u8][..]].concat());
    let no_node = |store: &Path| remove(store, "nodes", &b);
    let no_pair = |store: &Path| remove(store, "by_premise", &[&node_a[..], &node_b[..]].concat());
    let no_count = |store: &Path| remove(store, "incoming", &node_a);
    type Damage<'a> = &'a dyn Fn(&Path);
    let damages: [(&str, Damage); 5] = [
        ("two ids' nodes swapped", &swapped),
        ("a claim's flag cleared", &unclaimed),
        ("an id's node removed", &no_node),
        ("a premise pair removed", &no_pair),
        ("a node's counts removed", &no_count),
    ];
    for (what, damage) in damages {
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("store");
        copy_dir(&s.store, &store);
        damage(&store);
        let own = run(&store, &["fsck"]);
        let bounded = run_with(&store, &["fsck"], &from_index);
        assert_eq!(own.code, 4, "{what}: {}", own.json);
        assert_eq!(bounded.code, own.code, "{what}: {}", bounded.json);
        let problems = &own.json["data"]["problems"];
        assert!(
            problems.to_string().contains("INDEX_DISAGREES"),
            "{what}: {problems}"
        );
        assert_eq!(&bounded.json["data"]["problems"], problems, "{what}");
    }
}
