//! The log and its index through the real binary: damage, tampering, recovery, checkpoints,
//! signer union, carrying a layout 1 (sled) store over, and where output may go.

use crate::common;

use common::{
    cli_store, copy_dir, export, graph, run, run_with, write_bundle, ClaimBuilder, Keys, Signed,
    Signer,
};
use elench::store::index::{ClaimEntry, KeyEntry};
use elench::store::log::{encode_frame, Head, Log, Record, GENESIS};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn segment(store: &Path) -> PathBuf {
    store.join("log").join("00000000000000000000.seg")
}

fn records(store: &Path) -> Vec<Record> {
    let mut out = Vec::new();
    Log::new(store.join("log"))
        .scan(Head::EMPTY, |r| {
            out.push(r);
            Ok(true)
        })
        .expect("scan");
    out
}

/// A store made through the CLI holding `claims` (and the three trust events).
fn store_with(claims: &[Signed]) -> (tempfile::TempDir, PathBuf) {
    let keys = Keys::new();
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    cli_store(&store, &keys, &tmp.path().join("keys"));
    let bundle = tmp.path().join("in.intoto.jsonl");
    write_bundle(&bundle, claims);
    let out = run(&store, &["add", bundle.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.json);
    (tmp, store)
}

/// `status --all` data without `as_of`, and the warnings.
fn statuses(store: &Path) -> (i32, Value, Vec<String>) {
    let out = run(store, &["status", "--all", "--limit", "10000"]);
    (
        out.code,
        out.json["data"]["claims"].clone(),
        common::warning_codes(&out),
    )
}

/// `status --all` succeeds and shows `n` claims: those claims.
#[cfg(feature = "layout1")]
fn claims_shown(store: &Path, n: usize) -> Value {
    let (code, got, _) = statuses(store);
    assert_eq!(code, 0);
    assert_eq!(got.as_array().unwrap().len(), n);
    got
}

/// `fsck --repair` succeeds and reports that it moved damage aside.
fn repair_reports_damage(store: &Path) {
    let out = run(store, &["fsck", "--repair"]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert!(
        out.json["data"]["repaired"]["damage"].is_string(),
        "{}",
        out.json
    );
}

fn corrupt(out: &common::Out) {
    assert_eq!(out.code, 4, "{}", out.json);
    assert_eq!(
        out.json["error"]["code"],
        json!("STORE_CORRUPT"),
        "{}",
        out.json
    );
}

fn claims(n: usize, seed: u64) -> Vec<Signed> {
    graph(&Keys::new(), n, seed, "log")
}

/// `add` of one new assertion `text` signed by the agent, through a bundle written in `dir`.
fn add_fresh(store: &Path, dir: &Path, keys: &Keys, text: &str) -> common::Out {
    let fresh = ClaimBuilder::assertion(text).sign(keys);
    let bundle = dir.join("fresh.intoto.jsonl");
    write_bundle(&bundle, [&fresh]);
    run(store, &["add", bundle.to_str().unwrap()])
}

#[test]
fn a_flipped_byte_is_store_corrupt_from_fsck_and_from_commands_that_read_it() {
    let cs = claims(30, 1);
    let (_tmp, store) = store_with(&cs);
    let original = std::fs::read(segment(&store)).unwrap();
    let recs = records(&store);
    // Record 3 is the first envelope (0..3 are trust events); take one in the middle.
    let r = &recs[15];
    let id = elench::store::record::envelope_digest(&r.payload);
    let claim_id = cs
        .iter()
        .find(|c| {
            elench::store::record::envelope_digest(
                &elench::store::record::canonical_envelope(c.envelope.as_bytes()).unwrap(),
            ) == id
        })
        .map(|c| c.id.clone())
        .unwrap();
    for at in [
        r.pos.offset + 2,
        r.pos.offset + 20,
        r.pos.offset + 60,
        r.pos.offset + r.frame_len - 3,
    ] {
        let mut bytes = original.clone();
        bytes[at as usize] ^= 0x04;
        std::fs::write(segment(&store), &bytes).unwrap();
        let out = run(&store, &["fsck"]);
        corrupt(&out);
        let problems = out.json["data"]["problems"].to_string();
        assert!(problems.contains("00000000000000000000.seg"), "{problems}");
        assert!(
            problems.contains(&format!("at byte {}", r.pos.offset)),
            "{problems}"
        );
        // Commands that read that record refuse; they never answer with another status.
        corrupt(&run(&store, &["status", &claim_id]));
        corrupt(&run(&store, &["show", &claim_id]));
        let f = store.parent().unwrap().join("x.jsonl");
        corrupt(&run(&store, &["export", "-o", f.to_str().unwrap()]));
    }
    // A flip in the last record: every command reads it on open.
    let last = recs.last().unwrap();
    let mut bytes = original.clone();
    bytes[(last.pos.offset + 50) as usize] ^= 0x01;
    std::fs::write(segment(&store), &bytes).unwrap();
    corrupt(&run(&store, &["status", "--all"]));
    std::fs::write(segment(&store), &original).unwrap();
    assert_eq!(run(&store, &["fsck"]).code, 0);
}

#[test]
fn an_unfinished_append_the_index_never_saw_is_dropped_with_a_warning() {
    let cs = claims(12, 2);
    let (_tmp, store) = store_with(&cs);
    let (_, before, _) = statuses(&store);
    // An append interrupted mid-write (a crash): bytes after the last record the index saw.
    let mut bytes = std::fs::read(segment(&store)).unwrap();
    let whole = bytes.len() as u64;
    bytes.extend_from_slice(&[7, 0, 0, 0, 1, 2, 3]);
    std::fs::write(segment(&store), &bytes).unwrap();
    let (code, after, warnings) = statuses(&store);
    assert_eq!(code, 0);
    assert!(warnings.contains(&"TORN_TAIL".to_owned()), "{warnings:?}");
    assert_eq!(after, before);
    assert_eq!(std::fs::metadata(segment(&store)).unwrap().len(), whole);
    // Cut off, and kept.
    let kept = files_under(&store.join("quarantine"));
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0].1, vec![7, 0, 0, 0, 1, 2, 3]);
    assert_eq!(run(&store, &["fsck"]).code, 0);
    // Half of a frame, as a crash between two writes of one group leaves it.
    let extra = records(&store)[5].clone();
    let mut frame = Vec::new();
    encode_frame(
        &records(&store).last().unwrap().chain,
        extra.kind,
        &extra.payload,
        &mut frame,
    );
    let mut bytes = std::fs::read(segment(&store)).unwrap();
    bytes.extend_from_slice(&frame[..frame.len() / 2]);
    std::fs::write(segment(&store), &bytes).unwrap();
    let (code, again, warnings) = statuses(&store);
    assert_eq!(code, 0);
    assert!(warnings.contains(&"TORN_TAIL".to_owned()), "{warnings:?}");
    assert_eq!(again, before);
    assert_eq!(run(&store, &["fsck"]).code, 0);
}

#[test]
fn a_record_the_index_saw_cut_in_half_is_store_corrupt_until_repaired() {
    let cs = claims(12, 2);
    let (_tmp, store) = store_with(&cs);
    let (_, before, _) = statuses(&store);
    let recs = records(&store);
    let last = recs.last().unwrap();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(segment(&store))
        .unwrap();
    f.set_len(last.pos.offset + last.frame_len / 2).unwrap();
    drop(f);
    let out = run(&store, &["status", "--all"]);
    corrupt(&out);
    assert!(error_message(&out).contains("acknowledged"), "{}", out.json);
    // Repaired: the cut record is moved aside, and reported as damage.
    repair_reports_damage(&store);
    let (code, after, _) = statuses(&store);
    assert_eq!(code, 0);
    let before = before.as_array().unwrap();
    let after = after.as_array().unwrap();
    assert_eq!(after.len() + 1, before.len());
    let ids_before: BTreeSet<&str> = before.iter().map(|c| c["id"].as_str().unwrap()).collect();
    for c in after {
        assert!(ids_before.contains(c["id"].as_str().unwrap()));
    }
    assert_eq!(run(&store, &["fsck"]).code, 0);
}

/// The next command rebuilds the index from the log (`INDEX_REBUILT`), to the same statuses.
fn assert_rebuilt(store: &Path, want: &Value, context: &str) {
    let (code, got, warnings) = statuses(store);
    assert_eq!(code, 0, "{context}");
    assert!(
        warnings.contains(&"INDEX_REBUILT".to_owned()),
        "{context}: {warnings:?}"
    );
    assert_eq!(&got, want, "{context}");
}

#[test]
fn a_deleted_or_damaged_index_is_rebuilt_with_identical_status() {
    let cs = claims(40, 3);
    let (_tmp, store) = store_with(&cs);
    let (_, want, _) = statuses(&store);
    let rebuilt = || assert_rebuilt(&store, &want, "");
    std::fs::remove_dir_all(store.join("index")).unwrap();
    rebuilt();
    let out = run(&store, &["fsck"]);
    assert_eq!(out.code, 0, "{}", out.json);
    // Garbage over the LMDB data file.
    std::fs::write(store.join("index").join("data.mdb"), vec![0x5a; 64 * 1024]).unwrap();
    rebuilt();
    // A file where the index's folder belongs.
    std::fs::remove_dir_all(store.join("index")).unwrap();
    std::fs::write(store.join("index"), b"not a folder").unwrap();
    rebuilt();
    assert!(store.join("index").is_dir());
    // On demand.
    let out = run(&store, &["reindex"]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(out.json["data"]["claims"], json!(40));
    assert_eq!(statuses(&store).1, want);
    assert_eq!(run(&store, &["fsck"]).code, 0);
}

/// The kernel's name for this boot, where it gives one.
fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(id.trim().to_owned()).filter(|id| !id.is_empty())
}

/// Removes one of the index's databases, as lost pages can.
fn drop_database(store: &Path, name: &str) {
    use heed::types::Bytes;
    let env = unsafe {
        heed::EnvOpenOptions::new()
            .map_size(1 << 30)
            .max_dbs(16)
            .open(store.join("index"))
            .unwrap()
    };
    let mut w = env.write_txn().unwrap();
    let db = env
        .open_database::<Bytes, Bytes>(&w, Some(name))
        .unwrap()
        .unwrap();
    unsafe { db.remove(&mut w).unwrap() };
    w.commit().unwrap();
    env.prepare_for_closing().wait();
}

#[test]
fn an_index_written_in_an_earlier_boot_and_never_synced_is_rebuilt() {
    let Some(boot) = boot_id() else {
        return; // without boot ids LMDB syncs the index itself and no file is kept
    };
    let cs = claims(30, 5);
    let (_tmp, store) = store_with(&cs);
    let unsynced = store.join("index").join("UNSYNCED");
    // A short batch leaves the index's writes to the kernel, and says so in this boot's name.
    assert_eq!(std::fs::read_to_string(&unsynced).unwrap(), boot);
    let (_, want, warnings) = statuses(&store);
    assert!(warnings.is_empty(), "{warnings:?}");
    // The file as a machine that stopped before the disk held those writes leaves it: the
    // next command rebuilds the index, and the rebuild ends with it on disk (no file left).
    let rebuilt_with = |marker: &str| {
        std::fs::write(&unsynced, marker).unwrap();
        let (code, got, warnings) = statuses(&store);
        assert_eq!(code, 0);
        assert_eq!(warnings, vec!["INDEX_REBUILT".to_owned()], "{marker:?}");
        assert_eq!(got, want);
        assert!(!unsynced.exists());
    };
    rebuilt_with("5f0c6f0e-0000-4000-8000-000000000000\n");
    let (_, again, warnings) = statuses(&store);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(again, want);
    assert_eq!(run(&store, &["fsck"]).code, 0);
    // Pages lost with that boot can make a database look missing, so that opening the index
    // creates it again: that write must not erase the record of the other boot.
    drop_database(&store, "claims");
    rebuilt_with("5f0c6f0e-0000-4000-8000-000000000001");
    // A record left unfinished (no boot in it) asks for a rebuild too.
    rebuilt_with("");
    assert_eq!(run(&store, &["fsck"]).code, 0);
    // The next write marks it again; `reindex` syncs and clears it.
    let more = claims(5, 6);
    let bundle = store.join("..").join("more.intoto.jsonl");
    write_bundle(&bundle, &more);
    assert_eq!(run(&store, &["add", bundle.to_str().unwrap()]).code, 0);
    assert_eq!(std::fs::read_to_string(&unsynced).unwrap(), boot);
    assert_eq!(run(&store, &["reindex"]).code, 0);
    assert!(!unsynced.exists());
}

#[test]
fn a_long_batch_ends_with_the_index_synced() {
    if boot_id().is_none() {
        return;
    }
    // More than one full group (1,024 envelopes).
    let (_tmp, store) = store_with(&claims(1100, 7));
    assert!(!store.join("index").join("UNSYNCED").exists());
    assert_eq!(run(&store, &["fsck"]).code, 0);
}

/// Rewrites the index's recorded format (None: remove it, as in an index from before formats
/// were recorded) and adds a database only an earlier format had. Formats before 3 had no
/// `nodes` table (claims were keyed by id): it is emptied, as an index of format 2 lacks it.
fn age_index(store: &Path, format: Option<u32>) {
    use heed::types::Bytes;
    let dir = store.join("index");
    let env = unsafe {
        heed::EnvOpenOptions::new()
            .map_size(1 << 30)
            .max_dbs(16)
            .open(&dir)
            .unwrap()
    };
    let mut w = env.write_txn().unwrap();
    let meta = env
        .open_database::<Bytes, Bytes>(&w, Some("meta"))
        .unwrap()
        .unwrap();
    match format {
        Some(f) => meta
            .put(&mut w, b"format", &postcard::to_allocvec(&f).unwrap())
            .unwrap(),
        None => {
            meta.delete(&mut w, b"format").unwrap();
        }
    }
    if format.is_none_or(|f| f < 3) {
        let nodes = env
            .open_database::<Bytes, Bytes>(&w, Some("nodes"))
            .unwrap()
            .unwrap();
        nodes.clear(&mut w).unwrap();
    }
    let old = env
        .create_database::<Bytes, Bytes>(&mut w, Some("claim_envelopes"))
        .unwrap();
    old.put(&mut w, &[1u8; 40], &[2u8; 32]).unwrap();
    w.commit().unwrap();
    env.prepare_for_closing().wait();
}

#[test]
fn an_index_in_an_older_format_is_rebuilt_with_identical_status() {
    let cs = claims(30, 3);
    let (_tmp, store) = store_with(&cs);
    let (_, want, _) = statuses(&store);
    for format in [None, Some(1), Some(2)] {
        age_index(&store, format);
        assert_rebuilt(&store, &want, &format!("{format:?}"));
        // Rebuilt once: the next command finds it current.
        let (_, again, warnings) = statuses(&store);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(again, want);
        let out = run(&store, &["fsck"]);
        assert_eq!(out.code, 0, "{}", out.json);
    }
}

#[test]
fn fsck_repair_quarantines_the_damage_and_the_store_works_again() {
    let cs = claims(20, 4);
    let (tmp, store) = store_with(&cs);
    let full = export(&store, &tmp.path().join("before.intoto.jsonl"));
    let recs = records(&store);
    let mut bytes = std::fs::read(segment(&store)).unwrap();
    bytes[(recs[10].pos.offset + 70) as usize] ^= 0x40;
    std::fs::write(segment(&store), &bytes).unwrap();
    corrupt(&run(&store, &["fsck"]));
    let out = run(&store, &["fsck", "--repair"]);
    assert_eq!(out.code, 0, "{}", out.json);
    let moved = out.json["data"]["repaired"]["moved"].as_array().unwrap();
    assert!(!moved.is_empty());
    let quarantine = PathBuf::from(out.json["data"]["repaired"]["quarantine"].as_str().unwrap());
    assert!(quarantine.starts_with(store.join("quarantine")));
    // Nothing deleted: the quarantined bytes are the tail of the old segment.
    let kept: usize = std::fs::read_dir(&quarantine)
        .unwrap()
        .map(|e| std::fs::metadata(e.unwrap().path()).unwrap().len() as usize)
        .sum();
    assert_eq!(kept, bytes.len() - recs[10].pos.offset as usize);
    // Records 0..10 stay: 3 trust events and 7 envelopes.
    let out = run(&store, &["status", "--all"]);
    assert_eq!(out.code, 0);
    assert_eq!(out.json["data"]["as_of"], json!(7));
    assert_eq!(run(&store, &["fsck"]).code, 0);
    // What was lost comes back from an export.
    let again = tmp.path().join("again.intoto.jsonl");
    std::fs::write(&again, &full).unwrap();
    let out = run(&store, &["add", again.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(out.json["data"]["created"], json!(13));
    assert_eq!(run(&store, &["fsck"]).code, 0);
}

/// Rewrites the log from `recs` with the chain recomputed (a forger who knows the format).
/// `fsck` answers STORE_CORRUPT naming an envelope that appears twice.
fn fsck_finds_a_repeated_envelope(store: &Path) {
    let out = run(store, &["fsck"]);
    corrupt(&out);
    assert!(
        out.json["data"]["problems"]
            .to_string()
            .contains("appears twice"),
        "{}",
        out.json
    );
}

fn rewrite_chained(store: &Path, recs: &[Record]) {
    let mut out = Vec::new();
    let mut chain = GENESIS;
    for r in recs {
        chain = encode_frame(&chain, r.kind, &r.payload, &mut out);
    }
    std::fs::write(segment(store), out).unwrap();
}

#[test]
fn tampering_with_records_is_found_by_fsck() {
    let cs = claims(12, 5);
    let (_tmp, store) = store_with(&cs);
    let original = std::fs::read(segment(&store)).unwrap();
    let recs = records(&store);
    let frame = |i: usize| {
        let r = &recs[i];
        original[r.pos.offset as usize..(r.pos.offset + r.frame_len) as usize].to_vec()
    };
    // Edited, with its checksum made right again: the chain gives it away.
    let mut edited = original.clone();
    let r = &recs[6];
    let body_start = (r.pos.offset + 44) as usize;
    let at = body_start + 40;
    edited[at] = if edited[at] == b'A' { b'B' } else { b'A' };
    let crc = crc32c::crc32c(&edited[body_start..(r.pos.offset + r.frame_len) as usize]);
    edited[(r.pos.offset + 40) as usize..body_start].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(segment(&store), &edited).unwrap();
    let out = run(&store, &["fsck"]);
    corrupt(&out);
    assert!(out.json["data"]["problems"].to_string().contains("chain"));
    let restore = || {
        std::fs::write(segment(&store), &original).unwrap();
        assert_eq!(run(&store, &["reindex"]).code, 0);
    };
    restore();
    // Removed from the middle.
    let without: Vec<u8> = (0..recs.len())
        .filter(|&i| i != 5)
        .flat_map(frame)
        .collect();
    std::fs::write(segment(&store), &without).unwrap();
    corrupt(&run(&store, &["fsck"]));
    restore();
    // Two swapped.
    let swapped: Vec<u8> = (0..recs.len())
        .map(|i| match i {
            7 => 8,
            8 => 7,
            i => i,
        })
        .flat_map(frame)
        .collect();
    std::fs::write(segment(&store), &swapped).unwrap();
    corrupt(&run(&store, &["fsck"]));
    restore();
    // The last record removed whole: the index has seen more than the log holds.
    let shorter: Vec<u8> = (0..recs.len() - 1).flat_map(frame).collect();
    std::fs::write(segment(&store), &shorter).unwrap();
    corrupt(&run(&store, &["status", "--all"]));
    std::fs::write(segment(&store), &original).unwrap();
    assert_eq!(run(&store, &["fsck"]).code, 0);
}

#[test]
fn an_envelope_repeated_in_a_rechained_log_is_damage() {
    let cs = claims(6, 3);
    let (_tmp, store) = store_with(&cs);
    let mut recs = records(&store);
    let last_envelope = recs
        .iter()
        .rposition(|r| r.kind == elench::store::log::Kind::Envelope)
        .unwrap();
    recs.push(recs[last_envelope].clone());
    // The chain and checksums are right: only the repetition is wrong.
    rewrite_chained(&store, &recs);
    fsck_finds_a_repeated_envelope(&store);
    let out = run(&store, &["reindex"]);
    assert_eq!(out.code, 4, "{}", out.json);
    assert_eq!(out.json["error"]["code"], json!("STORE_CORRUPT"));
}

/// Opens the store's LMDB index directly, as someone editing it behind elench's back would.
fn edit_index(store: &Path, db: &str, key: &[u8], edit: impl FnOnce(Vec<u8>) -> Vec<u8>) {
    let env = unsafe {
        heed::EnvOpenOptions::new()
            .max_dbs(16)
            .map_size(1 << 40)
            .open(store.join("index"))
            .unwrap()
    };
    let mut wtxn = env.write_txn().unwrap();
    let d: heed::Database<heed::types::Bytes, heed::types::Bytes> =
        env.open_database(&wtxn, Some(db)).unwrap().unwrap();
    // Each value ends in a checksum of its table, key and value: the editor here knows that
    // and writes a value that checks, so only comparing with the log finds it.
    let stored = d.get(&wtxn, key).unwrap().unwrap().to_vec();
    let old = stored[..stored.len() - 4].to_vec();
    let new = elench::store::index::stored_value(db, key, &edit(old)).unwrap();
    d.put(&mut wtxn, key, &new).unwrap();
    wtxn.commit().unwrap();
    env.prepare_for_closing().wait();
}

#[test]
fn un_retiring_a_key_or_rewriting_signers_in_the_index_is_found_by_fsck() {
    let keys = Keys::new();
    let cs = claims(6, 6);
    let (_tmp, store) = store_with(&cs);
    let harness = elench::keys::keyid(&keys.harness.verifying_key());
    let out = run(&store, &["keys", "retire", "--yes", &harness]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(run(&store, &["fsck"]).code, 0);
    edit_index(&store, "keys", harness.as_bytes(), |v| {
        let mut k: KeyEntry = postcard::from_bytes(&v).unwrap();
        assert!(k.retired_at.is_some());
        k.retired_at = None;
        postcard::to_allocvec(&k).unwrap()
    });
    let out = run(&store, &["fsck"]);
    assert_eq!(out.code, 4, "{}", out.json);
    assert!(out.json["data"]["problems"]
        .to_string()
        .contains("INDEX_DISAGREES"));
    assert!(out.json["data"]["problems"].to_string().contains("keys"));
    assert_eq!(run(&store, &["reindex"]).code, 0);
    assert_eq!(run(&store, &["fsck"]).code, 0);
    // Claims are keyed by their node, which the `nodes` table gives (before a flag).
    let id = elench::store::index::id_key(&cs[0].id).unwrap();
    let mut node = Vec::new();
    edit_index(&store, "nodes", &id, |v| {
        node = v[..8].to_vec();
        v
    });
    edit_index(&store, "claims", &node, |v| {
        let mut c: ClaimEntry = postcard::from_bytes(&v).unwrap();
        c.signers.clear();
        postcard::to_allocvec(&c).unwrap()
    });
    let out = run(&store, &["fsck"]);
    assert_eq!(out.code, 4, "{}", out.json);
    assert!(out.json["data"]["problems"].to_string().contains(&cs[0].id));
}

#[test]
fn fsck_checkpoint_fails_once_anything_before_it_changed() {
    let keys = Keys::new();
    let cs = claims(10, 7);
    let (tmp, store) = store_with(&cs[..6]);
    let pem = tmp.path().join("harness.pem");
    std::fs::write(
        &pem,
        elench::keys::signing_key_pem(&keys.harness.signing).unwrap(),
    )
    .unwrap();
    let cp = tmp.path().join("cp.json");
    let out = run(
        &store,
        &[
            "checkpoint",
            "-o",
            cp.to_str().unwrap(),
            "--form",
            "json",
            "--key",
            pem.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(out.json["data"]["n"], json!(9));
    assert!(out.json["data"]["signature"]["sig"].is_string());
    // The checkpoint's signature is checked against the key named here, never the store's.
    let public = tmp.path().join("harness.pub");
    std::fs::write(
        &public,
        elench::keys::public_key_pem(&keys.harness.verifying_key()).unwrap(),
    )
    .unwrap();
    let check = |store: &Path| {
        run(
            store,
            &[
                "fsck",
                "--checkpoint",
                cp.to_str().unwrap(),
                "--key",
                public.to_str().unwrap(),
            ],
        )
    };
    assert_eq!(check(&store).code, 0);
    // The log grows: it still extends the checkpoint.
    let more = tmp.path().join("more.intoto.jsonl");
    write_bundle(&more, &cs[6..]);
    assert_eq!(run(&store, &["add", more.to_str().unwrap()]).code, 0);
    assert_eq!(check(&store).code, 0);
    // History rewritten by someone who recomputed every chain value: only the checkpoint
    // can tell.
    let mut recs = records(&store);
    recs.remove(5);
    rewrite_chained(&store, &recs);
    std::fs::remove_dir_all(store.join("index")).unwrap();
    assert_eq!(
        run(&store, &["fsck"]).code,
        0,
        "the rewritten log is self-consistent"
    );
    let out = check(&store);
    corrupt(&out);
    assert!(out.json["data"]["problems"]
        .to_string()
        .contains("CHECKPOINT_MISMATCH"));
    // A tampered signature is reported too.
    let mut c: Value = serde_json::from_slice(&std::fs::read(&cp).unwrap()).unwrap();
    c["n"] = json!(1);
    std::fs::write(&cp, c.to_string()).unwrap();
    let out = check(&store);
    assert!(out.json["data"]["problems"]
        .to_string()
        .contains("CHECKPOINT_SIGNATURE"));
}

/// The RFC 6962 root over these entries, computed here from the RFC's definition alone.
fn rfc6962_root(entries: &[&[u8]]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    match entries.len() {
        0 => Sha256::digest([]).into(),
        1 => Sha256::new()
            .chain_update([0u8])
            .chain_update(entries[0])
            .finalize()
            .into(),
        n => {
            let mut k = 1;
            while k * 2 < n {
                k *= 2;
            }
            Sha256::new()
                .chain_update([1u8])
                .chain_update(rfc6962_root(&entries[..k]))
                .chain_update(rfc6962_root(&entries[k..]))
                .finalize()
                .into()
        }
    }
}

#[test]
fn fsck_holds_the_log_to_a_c2sp_checkpoint_note() {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let keys = Keys::new();
    let cs = claims(10, 11);
    let (tmp, store) = store_with(&cs[..6]);
    let pem = tmp.path().join("harness.pem");
    std::fs::write(
        &pem,
        elench::keys::signing_key_pem(&keys.harness.signing).unwrap(),
    )
    .unwrap();
    let public = tmp.path().join("harness.pub");
    std::fs::write(
        &public,
        elench::keys::public_key_pem(&keys.harness.verifying_key()).unwrap(),
    )
    .unwrap();
    let wrong = tmp.path().join("other.pub");
    std::fs::write(
        &wrong,
        elench::keys::public_key_pem(&keys.stranger.verifying_key()).unwrap(),
    )
    .unwrap();
    let cp = tmp.path().join("cp.note");
    let cps = cp.to_str().unwrap();
    let out = run(
        &store,
        &[
            "checkpoint",
            "-o",
            cps,
            "--form",
            "note",
            "--key",
            pem.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 0, "{}", out.json);
    // Today's form is still printed beside the note.
    assert_eq!(out.json["data"]["n"], json!(9));
    assert!(out.json["data"]["chain"].is_string());
    let note = &out.json["data"]["note"];
    assert_eq!(note["size"], json!(9));
    // The root's leaves are the records' payloads, in log order.
    let recs = records(&store);
    let payloads: Vec<&[u8]> = recs.iter().map(|r| r.payload.as_slice()).collect();
    assert_eq!(
        note["root"].as_str().unwrap(),
        b64.encode(rfc6962_root(&payloads))
    );
    // The default origin names the log by its first record's chain value.
    let origin = format!("elench-log/{}", &hex::encode(recs[0].chain)[..16]);
    assert_eq!(note["origin"], json!(origin));
    // The file is the signed note: the checkpoint's three lines, a blank line, and one
    // signature line by the origin, base64(key ID ‖ Ed25519 signature).
    let text = std::fs::read_to_string(&cp).unwrap();
    assert_eq!(text, note["text"].as_str().unwrap());
    let (body, sigs) = text.split_once("\n\n").unwrap();
    assert_eq!(
        body,
        format!("{origin}\n9\n{}", note["root"].as_str().unwrap())
    );
    let sig_line = sigs.strip_suffix('\n').unwrap();
    let b = sig_line
        .strip_prefix(&format!("\u{2014} {origin} "))
        .unwrap();
    let raw = b64.decode(b).unwrap();
    assert_eq!(raw.len(), 4 + 64);
    {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(origin.as_bytes());
        h.update([b'\n', 1u8]);
        h.update(keys.harness.verifying_key().as_bytes());
        assert_eq!(&raw[..4], &h.finalize()[..4], "key ID");
    }
    let fsck = |store: &Path, key: &Path| {
        run(
            store,
            &["fsck", "--checkpoint", cps, "--key", key.to_str().unwrap()],
        )
    };
    assert_eq!(
        fsck(&store, &public).code,
        0,
        "{}",
        fsck(&store, &public).json
    );
    // A signature under another key is refused.
    let out = fsck(&store, &wrong);
    assert_eq!(out.code, 4, "{}", out.json);
    assert!(out.json["data"]["problems"]
        .to_string()
        .contains("CHECKPOINT_SIGNATURE"));
    // So is a note whose text changed after signing (size 9 → 8, root kept).
    let forged = text.replacen("\n9\n", "\n8\n", 1);
    std::fs::write(&cp, &forged).unwrap();
    let out = fsck(&store, &public);
    assert!(out.json["data"]["problems"]
        .to_string()
        .contains("CHECKPOINT_SIGNATURE"));
    std::fs::write(&cp, &text).unwrap();
    // The log grows: it still extends the checkpoint.
    let more = tmp.path().join("more.intoto.jsonl");
    write_bundle(&more, &cs[6..]);
    assert_eq!(run(&store, &["add", more.to_str().unwrap()]).code, 0);
    assert_eq!(fsck(&store, &public).code, 0);
    // An origin of one's own, and an unsigned checkpoint (its three lines alone).
    let bare = tmp.path().join("bare.note");
    let out = run(
        &store,
        &[
            "checkpoint",
            "-o",
            bare.to_str().unwrap(),
            "--form",
            "note",
            "--origin",
            "example.com/widgets",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.json);
    let bare_text = std::fs::read_to_string(&bare).unwrap();
    assert!(
        bare_text.starts_with("example.com/widgets\n13\n"),
        "{bare_text}"
    );
    assert_eq!(bare_text.lines().count(), 3);
    let out = run(&store, &["fsck", "--checkpoint", bare.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.json);
    let out = run(
        &store,
        &[
            "fsck",
            "--checkpoint",
            bare.to_str().unwrap(),
            "--key",
            public.to_str().unwrap(),
        ],
    );
    assert!(out.json["data"]["problems"]
        .to_string()
        .contains("CHECKPOINT_SIGNATURE"));
    // A record removed and every chain value recomputed: only the root can tell.
    let mut recs = records(&store);
    recs.remove(5);
    rewrite_chained(&store, &recs);
    std::fs::remove_dir_all(store.join("index")).unwrap();
    assert_eq!(run(&store, &["fsck"]).code, 0, "self-consistent");
    let out = fsck(&store, &public);
    corrupt(&out);
    assert!(out.json["data"]["problems"]
        .to_string()
        .contains("CHECKPOINT_MISMATCH"));
    // A record changed in place (two swapped) is the same.
    let (_tmp2, store2) = store_with(&cs[..6]);
    let out = run(
        &store2,
        &[
            "checkpoint",
            "-o",
            cps,
            "--form",
            "note",
            "--key",
            pem.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(fsck(&store2, &public).code, 0);
    let mut recs = records(&store2);
    let changed = recs[8].payload.clone();
    recs[8].payload = recs[7].payload.clone();
    recs[7].payload = changed;
    rewrite_chained(&store2, &recs);
    std::fs::remove_dir_all(store2.join("index")).unwrap();
    let out = fsck(&store2, &public);
    assert!(
        out.json["data"]["problems"]
            .to_string()
            .contains("CHECKPOINT_MISMATCH"),
        "{}",
        out.json
    );
    // A file that is neither form is BAD_CHECKPOINT.
    std::fs::write(&cp, "not a checkpoint\n").unwrap();
    let out = run(&store2, &["fsck", "--checkpoint", cps]);
    assert_eq!(out.code, 2, "{}", out.json);
    assert_eq!(out.json["error"]["code"], json!("BAD_CHECKPOINT"));
}

/// Status fields that must agree between stores (everything but `as_of`, and history's
/// arrival numbers, which depend on order).
fn comparable(claims: &Value) -> Value {
    let mut v = claims.clone();
    for c in v.as_array_mut().unwrap() {
        c.as_object_mut().unwrap().remove("history");
        c.as_object_mut().unwrap().remove("seq");
    }
    let mut list = v.as_array().unwrap().clone();
    list.sort_by_key(|c| c["id"].as_str().unwrap().to_owned());
    Value::Array(list)
}

#[test]
fn stores_fed_differently_signed_envelopes_in_opposite_orders_agree() {
    let keys = Keys::new();
    let mut envelopes = claims(15, 8);
    // The same claims relayed by the harness: other envelopes, other signers.
    for i in 0..5 {
        let claim = ClaimBuilder::assertion(&format!("log assertion {i}")).build();
        envelopes.push(keys.sign(&claim, Signer::Harness));
    }
    let mut reversed = envelopes.clone();
    reversed.reverse();
    let (tmp_a, a) = store_with(&envelopes);
    let (tmp_b, b) = store_with(&reversed);
    let (_, sa, _) = statuses(&a);
    let (_, sb, _) = statuses(&b);
    assert!(comparable(&sa) == comparable(&sb), "statuses differ");
    let ea: BTreeSet<String> = String::from_utf8(export(&a, &tmp_a.path().join("e")))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let eb: BTreeSet<String> = String::from_utf8(export(&b, &tmp_b.path().join("e")))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(ea, eb);
    // A relayed claim has both signers, sorted by keyid.
    let relayed = sa
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["signers"].as_array().unwrap().len() == 2);
    assert!(relayed.is_some(), "a claim with two signers: {sa}");
    let signers: Vec<String> = relayed.unwrap()["signers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            s.as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| s["keyid"].as_str().unwrap().to_owned())
        })
        .collect();
    let mut sorted = signers.clone();
    sorted.sort();
    assert_eq!(signers, sorted);
}

/// A store holding five claims (of `seed`), whose agent key `keys retire` then retired.
fn five_claims_then_agent_retired(seed: u64) -> (Keys, Vec<Signed>, tempfile::TempDir, PathBuf) {
    let keys = Keys::new();
    let cs = claims(5, seed);
    let (tmp, store) = store_with(&cs);
    let agent = elench::keys::keyid(&keys.agent.verifying_key());
    assert_eq!(run(&store, &["keys", "retire", "--yes", &agent]).code, 0);
    (keys, cs, tmp, store)
}

#[test]
fn re_adding_after_keys_retire_is_a_noop() {
    let (keys, cs, tmp, store) = five_claims_then_agent_retired(9);
    let bundle = tmp.path().join("again.intoto.jsonl");
    write_bundle(&bundle, &cs);
    let out = run(&store, &["add", bundle.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(out.json["data"]["noop"], json!(5));
    assert_eq!(out.json["data"]["rejected"], json!(0));
    // A new envelope signed only by the retired key is refused.
    let out = add_fresh(&store, tmp.path(), &keys, "after retirement");
    assert_eq!(out.code, 2, "{}", out.json);
    assert_eq!(run(&store, &["fsck"]).code, 0);
}

#[cfg(feature = "layout1")]
#[test]
fn a_layout_1_sled_store_carries_over_without_losing_a_claim() {
    let keys = Keys::new();
    let cs = claims(25, 10);
    // Layout 1 as elench 0.1 wrote it, with its meta tree; the human key retired.
    let (_tmp, store) = layout1_in_tmp(&keys, &cs, Some(elench::keys::Role::Human), true);
    let got = claims_shown(&store, cs.len());
    assert_eq!(
        std::fs::read_to_string(store.join("FORMAT"))
            .unwrap()
            .trim(),
        format!("elench-store {}", elench::store::current_version())
    );
    assert!(
        store.join("db.layout1").is_dir(),
        "the old database is kept"
    );
    // The same statuses as a fresh store fed the same envelopes.
    let (_t2, fresh) = store_with(&cs);
    assert!(comparable(&got) == comparable(&statuses(&fresh).1));
    let out = run(&store, &["keys", "list"]);
    let human = out.json["data"]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["role"] == "human")
        .cloned()
        .unwrap();
    assert_eq!(human["retired"], json!(true), "{human}");
    assert_eq!(run(&store, &["fsck"]).code, 0);
}

#[test]
fn output_paths_inside_the_store_are_refused() {
    let cs = claims(3, 11);
    let (_tmp, store) = store_with(&cs);
    let inside = store.join("log").join("x.jsonl");
    for args in [
        vec!["export", "-o", inside.to_str().unwrap()],
        vec!["checkpoint", "-o", inside.to_str().unwrap()],
    ] {
        let out = run(&store, &args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.json);
        assert!(!inside.exists());
    }
    assert_eq!(run(&store, &["fsck"]).code, 0);
    // `sign` refuses the store too, and never overwrites its own input.
    let claim_path = store.parent().unwrap().join("c.json");
    let claim = ClaimBuilder::assertion("sign me").build();
    std::fs::write(&claim_path, claim.to_string()).unwrap();
    let keys = Keys::new();
    let pem = store.parent().unwrap().join("agent.pem");
    std::fs::write(
        &pem,
        elench::keys::signing_key_pem(&keys.agent.signing).unwrap(),
    )
    .unwrap();
    for out_path in [inside.to_str().unwrap(), claim_path.to_str().unwrap()] {
        let out = run(
            &store,
            &[
                "sign",
                claim_path.to_str().unwrap(),
                "--key",
                pem.to_str().unwrap(),
                "-o",
                out_path,
            ],
        );
        assert_eq!(out.code, 2, "{out_path}: {}", out.json);
    }
    assert_eq!(
        std::fs::read_to_string(&claim_path).unwrap(),
        claim.to_string()
    );
    assert!(!inside.exists());
}

#[test]
fn a_read_only_store_can_be_read_and_refuses_writes() {
    // A read-only view of the store through bubblewrap's read-only bind mount (as root,
    // file permissions alone would not stop writes).
    let probe = std::process::Command::new("bwrap")
        .args(["--dev-bind", "/", "/", "true"])
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        eprintln!("skipped: bwrap is not available to make a read-only mount");
        return;
    }
    let cs = claims(8, 12);
    let (tmp, store) = store_with(&cs[..6]);
    let (_, want, _) = statuses(&store);
    let bundle = tmp.path().join("more.intoto.jsonl");
    write_bundle(&bundle, &cs[6..]);
    let s = store.to_str().unwrap();
    let ro = |args: &[&str]| -> (i32, Value) {
        let out = std::process::Command::new("bwrap")
            .args(["--dev-bind", "/", "/", "--ro-bind", s, s])
            .arg(common::elench_path())
            .args(["--store", s])
            .args(args)
            .env_remove("ELENCH_STORE")
            .output()
            .unwrap();
        let json: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (out.status.code().unwrap_or(-1), json)
    };
    let (code, out) = ro(&["status", "--all", "--limit", "10000"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["data"]["claims"], want);
    for args in [vec!["log"], vec!["show", &cs[0].id], vec!["fsck"]] {
        let (code, out) = ro(&args);
        assert_eq!(code, 0, "{args:?}: {out}");
    }
    let (code, out) = ro(&["add", bundle.to_str().unwrap()]);
    assert_eq!(code, 4, "{out}");
    assert_eq!(out["error"]["code"], json!("STORE_READ_ONLY"));
    // Nothing changed; the writable store takes the same envelopes.
    assert_eq!(statuses(&store).1, want);
    // An index written in an earlier boot and never synced cannot be rebuilt here: the
    // command says so instead of reading pages that may be lost.
    let unsynced = store.join("index").join("UNSYNCED");
    if unsynced.exists() {
        std::fs::write(&unsynced, "5f0c6f0e-0000-4000-8000-000000000000").unwrap();
        let (code, out) = ro(&["status", "--all"]);
        assert_eq!(code, 4, "{out}");
        assert_eq!(out["error"]["code"], json!("STORE_READ_ONLY"));
        let message = out["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("copy the store somewhere writable"),
            "{out}"
        );
        assert!(message.contains("the machine has restarted"), "{out}");
        // Where it can be written, the first command rebuilds the index.
        let (code, got, warnings) = statuses(&store);
        assert_eq!(code, 0);
        assert_eq!(warnings, vec!["INDEX_REBUILT".to_owned()]);
        assert_eq!(got, want);
    }
    assert_eq!(run(&store, &["add", bundle.to_str().unwrap()]).code, 0);
}

/// The progress `fsck` and `reindex` show on a terminal hears every record once the walk
/// has read and applied it: counts that only grow, ending at the log's length.
#[test]
fn fsck_and_reindex_report_progress_up_to_the_last_record() {
    let keys = Keys::new();
    let cs = claims(40, 9);
    let (_tmp, store) = store_with(&cs);
    let harness = elench::keys::keyid(&keys.harness.verifying_key());
    assert_eq!(run(&store, &["keys", "retire", "--yes", &harness]).code, 0);
    let s = elench::store::Store::open(
        &store,
        &elench::store::Options::new(std::time::Duration::from_secs(5)),
    )
    .unwrap();
    let records = s.meta().unwrap().head.records;
    assert!(records > 40, "{records}");
    let heard = std::sync::Mutex::new(Vec::new());
    let note = |n: u64| heard.lock().unwrap().push(n);
    let check = |heard: &std::sync::Mutex<Vec<u64>>| {
        let heard = std::mem::take(&mut *heard.lock().unwrap());
        assert!(!heard.is_empty());
        assert!(heard.windows(2).all(|w| w[0] < w[1]), "{heard:?}");
        assert_eq!(heard.last(), Some(&records), "{heard:?}");
    };
    {
        let live = s.index().read().unwrap();
        let audited = elench::store::rebuild::audit_log(s.log(), &live, 20, Some(&note)).unwrap();
        assert!(audited.differences.is_empty());
    }
    check(&heard);
    s.reindex(Some(&note)).unwrap();
    check(&heard);
}

/// What a progress listener heard: what was being done, and how many records were applied.
type Heard = std::sync::Arc<std::sync::Mutex<Vec<(String, u64)>>>;

/// Hears a store's progress into `heard` and keeps its warnings.
#[derive(Default)]
struct Listener {
    heard: Heard,
    warned: elench::ops::Collected,
}

impl elench::ops::Observer for Listener {
    fn warn(&self, code: &str, message: String) {
        elench::ops::Observer::warn(&self.warned, code, message);
    }

    fn progress(&self, what: &str, _total: Option<u64>) -> Option<elench::ops::Progress> {
        let sink = self.heard.clone();
        let what = what.to_owned();
        Some(Box::new(move |n| {
            sink.lock().unwrap().push((what.clone(), n))
        }))
    }
}

/// Opening a store whose index is gone, or in an older format, rebuilds it and says how far
/// it got as it goes (the CLI turns this into a spinner on a terminal), up to the log's last
/// record: the first through the catch-up from an empty index, the second through a rebuild.
#[test]
fn a_rebuild_on_open_reports_progress_up_to_the_last_record() {
    /// What is done to a store's index, named.
    type Damage = (&'static str, fn(&Path));
    let damages: [Damage; 2] = [
        ("index deleted", |store| {
            std::fs::remove_dir_all(store.join("index")).unwrap()
        }),
        ("index in an older format", |store| {
            age_index(store, Some(1))
        }),
    ];
    for (seed, (damage, make)) in damages.into_iter().enumerate() {
        let cs = claims(30, 11 + seed as u64);
        let (_tmp, store) = store_with(&cs);
        // Counted by another process: this one would keep the index it reads open.
        let records = run(&store, &["fsck"]).json["data"]["records"]
            .as_u64()
            .unwrap();
        assert!(records >= 30, "{records}");
        make(&store);
        let listener = std::sync::Arc::new(Listener::default());
        let options = elench::store::Options::new(std::time::Duration::from_secs(5))
            .observer(listener.clone());
        let s = elench::store::Store::open(&store, &options).unwrap();
        let heard = listener.heard.clone();
        assert_eq!(s.meta().unwrap().head.records, records, "{damage}");
        let heard = std::mem::take(&mut *heard.lock().unwrap());
        let counts: Vec<u64> = heard.iter().map(|(_, n)| *n).collect();
        assert!(!counts.is_empty(), "{damage}");
        assert!(
            counts.windows(2).all(|w| w[0] < w[1]),
            "{damage}: {heard:?}"
        );
        assert_eq!(counts.last(), Some(&records), "{damage}: {heard:?}");
        // A rebuild, not a catch-up of a few records.
        assert!(
            heard.iter().all(|(what, _)| what == "rebuilding the index"),
            "{damage}: {heard:?}"
        );
        let warned = listener.warned.take();
        assert!(
            warned.iter().any(|(code, _)| code == "INDEX_REBUILT"),
            "{damage}: {warned:?}"
        );
    }
}

/// A store just made has an empty log and an index that was never written: they agree.
#[test]
fn fsck_of_a_new_store_finds_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join(".elench");
    assert_eq!(run(&store, &["init"]).code, 0);
    let out = run(&store, &["fsck"]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(out.json["data"]["problems"], json!([]));
    assert_eq!(out.json["data"]["records"], json!(0));
}

#[test]
fn damage_found_while_the_log_is_read_ahead_stops_fsck_and_reindex() {
    // More records than three verify batches (64 here, set through ELENCH_VERIFY_BATCH): the
    // repeated envelope is found as its batch is applied, while the next batch is verified;
    // the reader thread is then a batch ahead and waiting on a full channel. It must stop
    // with the command, which answers STORE_CORRUPT instead of hanging.
    let cs = claims(260, 17);
    let (_tmp, store) = store_with(&cs);
    let mut recs = records(&store);
    assert!(recs.len() > 3 * 64);
    let first_envelope = recs
        .iter()
        .position(|r| r.kind == elench::store::log::Kind::Envelope)
        .unwrap();
    recs.insert(100, recs[first_envelope].clone());
    rewrite_chained(&store, &recs);
    let small_batches = [("ELENCH_VERIFY_BATCH", "64")];
    let out = run_with(&store, &["fsck"], &small_batches);
    corrupt(&out);
    assert!(
        out.json["data"]["problems"]
            .to_string()
            .contains("appears twice"),
        "{}",
        out.json
    );
    corrupt(&run_with(&store, &["reindex"], &small_batches));
}

// ---- issue 23, items 8 to 11: what the index vouches for, FORMAT, repair ----

fn segment_n(store: &Path, first: u64) -> PathBuf {
    store.join("log").join(format!("{first:020}.seg"))
}

/// Every file under `dir` with its bytes, sorted by path (what "nothing was deleted" compares).
fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap();
                out.push((p, bytes));
            }
        }
    }
    out.sort();
    out
}

fn error_message(out: &common::Out) -> String {
    out.json["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_format_naming_layout_1_over_a_current_store_is_store_corrupt_and_keeps_the_log() {
    let cs = claims(10, 21);
    let (tmp, store) = store_with(&cs);
    let (_, before, _) = statuses(&store);
    let log_before = files_under(&store.join("log"));
    std::fs::write(store.join("FORMAT"), "elench-store 1\n").unwrap();
    let bundle = tmp.path().join("more.intoto.jsonl");
    write_bundle(&bundle, &claims(2, 22));
    for args in [
        vec!["status", "--all"],
        vec!["status", "--all"],
        vec!["add", bundle.to_str().unwrap()],
        vec!["fsck"],
    ] {
        let out = run(&store, &args);
        corrupt(&out);
        let message = error_message(&out);
        assert!(message.contains("FORMAT"), "{args:?}: {message}");
        assert!(message.contains("layout 1"), "{args:?}: {message}");
        // Nothing was deleted, moved or appended.
        assert_eq!(files_under(&store.join("log")), log_before, "{args:?}");
        assert!(store.join("index").is_dir(), "{args:?}");
    }
    // `fsck --repair` makes FORMAT agree with the log on disk, and deletes nothing.
    let out = run(&store, &["fsck", "--repair"]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(
        std::fs::read_to_string(store.join("FORMAT"))
            .unwrap()
            .trim(),
        format!("elench-store {}", elench::store::current_version())
    );
    assert_eq!(files_under(&store.join("log")), log_before);
    let (code, after, _) = statuses(&store);
    assert_eq!(code, 0);
    assert_eq!(after, before);
    assert_eq!(run(&store, &["fsck"]).code, 0);
}

#[cfg(feature = "layout1")]
/// A temporary folder and in it `store`, made by [`layout1_store_as`].
fn layout1_in_tmp(
    keys: &Keys,
    cs: &[Signed],
    retired: Option<elench::keys::Role>,
    meta: bool,
) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    layout1_store_as(&store, keys, cs, retired, meta);
    (tmp, store)
}

#[cfg(feature = "layout1")]
/// A layout 1 (sled) store holding `cs`, as elench 0.1 left it.
fn layout1_store(store: &Path, keys: &Keys, cs: &[Signed]) {
    layout1_store_as(store, keys, cs, None, false);
}

#[cfg(feature = "layout1")]
/// A layout 1 (sled) store holding `cs`: the keys of `retired` (if any) retired, and with
/// the `meta` tree (format version and count) where `meta`.
fn layout1_store_as(
    store: &Path,
    keys: &Keys,
    cs: &[Signed],
    retired: Option<elench::keys::Role>,
    meta: bool,
) {
    let db = sled::open(store.join("db")).unwrap();
    let keys_tree = db.open_tree("keys").unwrap();
    for k in keys.trusted() {
        let retired = retired == Some(k.role);
        keys_tree
            .insert(
                k.keyid.as_bytes(),
                serde_json::to_vec(&json!({
                    "keyid": k.keyid, "role": k.role.as_str(), "name": k.name,
                    "public_key": hex::encode(k.key.as_bytes()), "retired": retired,
                }))
                .unwrap(),
            )
            .unwrap();
    }
    let envelopes = db.open_tree("envelopes").unwrap();
    let arrivals = db.open_tree("arrivals").unwrap();
    for (i, c) in cs.iter().enumerate() {
        envelopes
            .insert(c.id.as_bytes(), c.envelope.as_bytes())
            .unwrap();
        arrivals
            .insert((i as u64).to_be_bytes(), c.id.as_bytes())
            .unwrap();
    }
    if meta {
        let meta = db.open_tree("meta").unwrap();
        meta.insert("format_version", &1u32.to_be_bytes()).unwrap();
        meta.insert("count", &(cs.len() as u64).to_be_bytes())
            .unwrap();
    }
    db.flush().unwrap();
    std::fs::write(store.join("FORMAT"), "elench-store 1\n").unwrap();
}

#[cfg(feature = "layout1")]
#[test]
fn a_migrated_store_whose_format_says_layout_1_again_keeps_every_claim() {
    let keys = Keys::new();
    let cs = claims(8, 23);
    let (tmp, store) = layout1_in_tmp(&keys, &cs, None, false);
    assert_eq!(statuses(&store).0, 0);
    assert!(store.join("db.layout1").is_dir());
    // The log grows past what layout 1 held; then FORMAT is set back.
    let bundle = tmp.path().join("more.intoto.jsonl");
    let more: Vec<Signed> = (0..3)
        .map(|i| ClaimBuilder::assertion(&format!("after the migration {i}")).sign(&keys))
        .collect();
    write_bundle(&bundle, &more);
    let added = run(&store, &["add", bundle.to_str().unwrap()]);
    assert_eq!(added.json["data"]["created"], json!(3), "{}", added.json);
    let log_before = files_under(&store.join("log"));
    std::fs::write(store.join("FORMAT"), "elench-store 1\n").unwrap();
    let out = run(&store, &["status", "--all"]);
    corrupt(&out);
    assert!(error_message(&out).contains("FORMAT"), "{}", out.json);
    assert_eq!(files_under(&store.join("log")), log_before);
    // `fsck --repair` makes FORMAT name the layout on disk; the log stays as it was.
    let out = run(&store, &["fsck", "--repair"]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(out.json["data"]["repaired"]["format"], json!(true));
    assert_eq!(files_under(&store.join("log")), log_before);
    claims_shown(&store, 11);
}

#[test]
fn an_empty_store_whose_format_names_layout_1_is_store_corrupt_until_repaired() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    assert_eq!(run(&store, &["init"]).code, 0);
    for format in ["elench-store 1\n", "elench-store 0\n"] {
        std::fs::write(store.join("FORMAT"), format).unwrap();
        corrupt(&run(&store, &["status", "--all"]));
        let out = run(&store, &["fsck", "--repair"]);
        assert_eq!(out.code, 0, "{format}: {}", out.json);
        assert_eq!(run(&store, &["status", "--all"]).code, 0, "{format}");
    }
}

#[cfg(feature = "layout1")]
#[test]
fn a_migration_interrupted_after_part_of_the_log_was_written_finishes_it() {
    let keys = Keys::new();
    let cs = claims(8, 25);
    let tmp = tempfile::tempdir().unwrap();
    // What the migration writes, from a copy.
    let copy = tmp.path().join("copy");
    layout1_store(&copy, &keys, &cs);
    assert_eq!(statuses(&copy).0, 0);
    let full = std::fs::read(segment(&copy)).unwrap();
    let recs = records(&copy);
    // The same layout 1 store, with the first six records of that log already written.
    let store = tmp.path().join("store");
    layout1_store(&store, &keys, &cs);
    std::fs::create_dir_all(store.join("log")).unwrap();
    std::fs::write(segment(&store), &full[..recs[6].pos.offset as usize]).unwrap();
    claims_shown(&store, cs.len());
    assert_eq!(std::fs::read(segment(&store)).unwrap(), full);
    assert_eq!(run(&store, &["fsck"]).code, 0);
}

#[test]
fn a_cut_inside_the_last_acknowledged_record_is_store_corrupt_never_a_torn_tail() {
    let cs = claims(12, 26);
    let (_tmp, store) = store_with(&cs);
    let original = std::fs::read(segment(&store)).unwrap();
    let last = records(&store).pop().unwrap();
    for cut in [
        last.pos.offset + 1,
        last.pos.offset + 43,
        last.pos.offset + 44,
        last.pos.offset + last.frame_len / 2,
        last.pos.offset + last.frame_len - 1,
    ] {
        std::fs::write(segment(&store), &original[..cut as usize]).unwrap();
        for args in [vec!["status", "--all"], vec!["fsck"]] {
            let out = run(&store, &args);
            corrupt(&out);
            assert!(
                !common::warning_codes(&out).contains(&"TORN_TAIL".to_owned()),
                "cut at {cut}: {}",
                out.json
            );
        }
        // Nothing was cut: the log is as the cut left it.
        assert_eq!(std::fs::metadata(segment(&store)).unwrap().len(), cut);
        std::fs::write(segment(&store), &original).unwrap();
        assert_eq!(run(&store, &["fsck"]).code, 0, "cut at {cut}");
    }
}

#[test]
fn a_cut_keys_retire_never_lets_the_retired_key_sign_again() {
    let (keys, _, tmp, store) = five_claims_then_agent_retired(27);
    let last = records(&store).pop().unwrap();
    assert_eq!(last.kind, elench::store::log::Kind::KeyRetire);
    let bytes = std::fs::read(segment(&store)).unwrap();
    std::fs::write(
        segment(&store),
        &bytes[..(last.pos.offset + last.frame_len / 2) as usize],
    )
    .unwrap();
    let out = add_fresh(&store, tmp.path(), &keys, "signed after retirement");
    corrupt(&out);
    let out = run(&store, &["keys", "list"]);
    corrupt(&out);
    // Repaired, the retirement is gone for good (quarantined): that is said, not hidden.
    repair_reports_damage(&store);
}

#[test]
fn damage_inside_a_trust_event_stops_add_as_it_stops_fsck() {
    let keys = Keys::new();
    let cs = claims(6, 28);
    let (tmp, store) = store_with(&cs);
    let recs = records(&store);
    assert_eq!(recs[1].kind, elench::store::log::Kind::KeyAdd);
    let mut bytes = std::fs::read(segment(&store)).unwrap();
    bytes[(recs[1].pos.offset + 50) as usize] ^= 0x08;
    std::fs::write(segment(&store), &bytes).unwrap();
    let len = bytes.len() as u64;
    corrupt(&run(&store, &["fsck"]));
    let out = add_fresh(&store, tmp.path(), &keys, "after the damage");
    corrupt(&out);
    assert!(
        error_message(&out).contains(&format!("at byte {}", recs[1].pos.offset)),
        "{}",
        out.json
    );
    let harness = keys.harness.write_files(&tmp.path().join("pems2"));
    let (role, pem) = (&harness.role, &harness.public);
    corrupt(&run(
        &store,
        &[
            "keys",
            "add",
            "--role",
            role,
            "--name",
            "again",
            pem.to_str().unwrap(),
        ],
    ));
    assert_eq!(std::fs::metadata(segment(&store)).unwrap().len(), len);
}

/// Splits the one segment into segments starting at the given record numbers (as a log that
/// grew past the segment size would be), and rebuilds the index over them.
fn split_segments(store: &Path, at: &[u64]) {
    let recs = records(store);
    let bytes = std::fs::read(segment(store)).unwrap();
    let mut starts = vec![0u64];
    starts.extend_from_slice(at);
    for (i, &first) in starts.iter().enumerate() {
        let from = recs[first as usize].pos.offset as usize;
        let to = match starts.get(i + 1) {
            Some(&next) => recs[next as usize].pos.offset as usize,
            None => bytes.len(),
        };
        std::fs::write(segment_n(store, first), &bytes[from..to]).unwrap();
    }
    let out = run(store, &["reindex"]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(run(store, &["fsck"]).code, 0);
}

/// `fsck --repair` exits 0, moves (never deletes) what it cannot use, and leaves a store that
/// opens and passes `fsck`.
fn repair_leaves_a_working_store(store: &Path, context: &str) -> Value {
    let kept = || -> usize {
        files_under(&store.join("log"))
            .iter()
            .chain(files_under(&store.join("quarantine")).iter())
            .map(|(_, b)| b.len())
            .sum()
    };
    let before = kept();
    let out = run(store, &["fsck", "--repair"]);
    assert_eq!(out.code, 0, "{context}: {}", out.json);
    let after = kept();
    assert!(
        after >= before,
        "{context}: {before} bytes before, {after} after"
    );
    let (code, got, _) = statuses(store);
    assert_eq!(code, 0, "{context}");
    let out = run(store, &["fsck"]);
    assert_eq!(out.code, 0, "{context}: {}", out.json);
    got
}

#[test]
fn fsck_repair_repairs_a_record_that_is_whole_but_no_longer_verifies() {
    let cs = claims(10, 29);
    let (_tmp, store) = store_with(&cs);
    let mut recs = records(&store);
    // A base64 letter of the payload changed: the frame and chain are right, the signature
    // is not.
    let r = &mut recs[7];
    let text = String::from_utf8(r.payload.clone()).unwrap();
    let at = text.find("\"payload\":\"").unwrap() + 20;
    let mut payload = r.payload.clone();
    payload[at] = if payload[at] == b'A' { b'B' } else { b'A' };
    r.payload = payload;
    rewrite_chained(&store, &recs);
    corrupt(&run(&store, &["fsck"]));
    let got = repair_leaves_a_working_store(&store, "whole but unverifiable");
    // Records 0..7: three trust events and four envelopes.
    assert_eq!(got.as_array().unwrap().len(), 4);
    // A repeated envelope, chained right, is repaired the same way.
    let mut recs = records(&store);
    recs.push(recs[4].clone());
    rewrite_chained(&store, &recs);
    fsck_finds_a_repeated_envelope(&store);
    let got = repair_leaves_a_working_store(&store, "repeated envelope");
    assert_eq!(got.as_array().unwrap().len(), 4);
}

#[test]
fn fsck_repair_repairs_deleted_misnumbered_and_empty_segments() {
    type Break = fn(&Path);
    let cases: [(&str, Break, usize); 5] = [
        (
            "first segment deleted",
            |s| std::fs::remove_file(segment_n(s, 0)).unwrap(),
            0,
        ),
        (
            "middle segment deleted",
            |s| std::fs::remove_file(segment_n(s, 8)).unwrap(),
            5,
        ),
        (
            "segment misnumbered",
            |s| std::fs::rename(segment_n(s, 8), segment_n(s, 9)).unwrap(),
            5,
        ),
        (
            "middle segment emptied",
            |s| std::fs::write(segment_n(s, 8), b"").unwrap(),
            5,
        ),
        (
            "empty segment after the last",
            |s| std::fs::write(segment_n(s, 40), b"").unwrap(),
            10,
        ),
    ];
    for (what, break_it, left) in cases {
        let cs = claims(10, 30);
        let (_tmp, store) = store_with(&cs);
        split_segments(&store, &[8, 11]);
        break_it(&store);
        let got = repair_leaves_a_working_store(&store, what);
        assert_eq!(got.as_array().unwrap().len(), left, "{what}");
    }
}

#[test]
fn an_index_of_another_log_is_rebuilt_never_read_as_damage() {
    // Both logs start with the same three trust events (the same keys, added alike).
    for (index_claims, log_claims) in [(12, 5), (5, 12), (8, 8)] {
        let (_t1, a) = store_with(&claims(index_claims, 31));
        let (_t2, b) = store_with(&claims(log_claims, 32));
        let (_, want, _) = statuses(&b);
        std::fs::remove_dir_all(b.join("index")).unwrap();
        copy_dir(&a.join("index"), &b.join("index"));
        let out = run(&b, &["status", "--all", "--limit", "10000"]);
        let context = format!("index of {index_claims} claims, log of {log_claims}");
        assert_eq!(out.code, 0, "{context}: {}", out.json);
        assert!(
            common::warning_codes(&out).contains(&"INDEX_REBUILT".to_owned()),
            "{context}: {}",
            out.json
        );
        assert_eq!(out.json["data"]["claims"], want, "{context}");
        assert_eq!(run(&b, &["fsck"]).code, 0, "{context}");
    }
}

#[test]
fn an_index_of_a_log_rewritten_before_its_head_is_rebuilt() {
    let cs = claims(12, 33);
    let (_tmp, store) = store_with(&cs);
    let mut recs = records(&store);
    // Record 6 taken out and the chain made right again: the log diverges at record 6.
    recs.remove(6);
    rewrite_chained(&store, &recs);
    let out = run(&store, &["status", "--all", "--limit", "10000"]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert!(common::warning_codes(&out).contains(&"INDEX_REBUILT".to_owned()));
    assert_eq!(out.json["data"]["claims"].as_array().unwrap().len(), 11);
    assert_eq!(run(&store, &["fsck"]).code, 0);
    // A strict prefix of what the index saw is acknowledged loss, not another log.
    let recs = records(&store);
    rewrite_chained(&store, &recs[..recs.len() - 2]);
    corrupt(&run(&store, &["status", "--all"]));
}

#[test]
fn a_wrong_record_of_trust_events_in_the_index_is_rebuilt_never_blamed_on_the_log() {
    let cs = claims(6, 34);
    let (_tmp, store) = store_with(&cs);
    let (_, want, _) = statuses(&store);
    let recs = records(&store);
    // The index says an envelope record is a trust event.
    let wrong = vec![(recs[5].pos, recs[5].chain)];
    edit_index(&store, "meta", b"trust_events", |_| {
        postcard::to_allocvec(&wrong).unwrap()
    });
    let out = run(&store, &["status", "--all", "--limit", "10000"]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert!(common::warning_codes(&out).contains(&"INDEX_REBUILT".to_owned()));
    assert_eq!(out.json["data"]["claims"], want);
    // Unreadable, the same.
    edit_index(&store, "meta", b"trust_events", |_| vec![0xff; 3]);
    let out = run(&store, &["status", "--all", "--limit", "10000"]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert!(common::warning_codes(&out).contains(&"INDEX_REBUILT".to_owned()));
    assert_eq!(run(&store, &["fsck"]).code, 0);
}

/// A build without the `layout1` feature has no sled: a store of elench 0.1 is refused with
/// what to do, and not one of its files changes.
#[cfg(not(feature = "layout1"))]
#[test]
fn a_layout_1_store_without_the_migration_feature_says_how_to_migrate_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    // What elench 0.1 left: a sled database folder and FORMAT naming layout 1.
    std::fs::create_dir_all(store.join("db")).unwrap();
    std::fs::write(store.join("db").join("conf"), b"segment_size: 524288\n").unwrap();
    std::fs::write(store.join("db").join("db"), b"\x00sled bytes\x01").unwrap();
    std::fs::write(store.join("FORMAT"), "elench-store 1\n").unwrap();
    // The writer's empty LOCK file is not data; everything else must stay as it was.
    let data = |store: &Path| -> Vec<(PathBuf, Vec<u8>)> {
        let mut files = files_under(store);
        files.retain(|(p, _)| !p.ends_with("LOCK"));
        files
    };
    let before = data(&store);
    for args in [&["status", "--all"][..], &["fsck"][..], &["log"][..]] {
        let out = run(&store, args);
        assert_eq!(out.code, 4, "{args:?}: {}", out.json);
        assert_eq!(
            out.json["error"]["code"],
            json!("STORE_MIGRATION_UNAVAILABLE"),
            "{args:?}: {}",
            out.json
        );
        let message = out.json["error"]["message"].as_str().unwrap();
        assert!(message.contains("--features layout1"), "{message}");
        assert_eq!(data(&store), before, "{args:?} changed the store");
    }
}

// ---- issue 32, item 11: a log entry that is not a regular file ----

/// `elench --store STORE --timeout 10 ARGS…`: a command that waits on a FIFO runs into that
/// limit (`TIMEOUT`); one that does not answers long before. Hard bound: one minute.
fn run_bounded(store: &Path, args: &[&str]) -> common::Out {
    use std::process::{Command, Stdio};
    let mut line = vec!["--timeout", "10"];
    line.extend_from_slice(args);
    let child = Command::new(common::elench_path())
        .args(common::with_store(store, &line))
        .env_remove("ELENCH_STORE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("elench starts");
    let started = std::time::Instant::now();
    let done = common::finish_within(child, std::time::Duration::from_secs(60), "elench");
    let json: Value = serde_json::from_str(done.stdout.trim())
        .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {}", done.stdout));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(9),
        "{args:?} took {:?}: {json}",
        started.elapsed()
    );
    common::Out {
        code: done.code.expect("an exit code"),
        json,
        stderr: done.stderr,
    }
}

fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}

/// A FIFO or a directory in `log/` named like a segment blocked every command (a FIFO is
/// never opened for reading now) or could not be repaired: it is `STORE_CORRUPT` naming it,
/// from readers, writers and `fsck`, each answering at once; `fsck --repair` moves it aside
/// into `quarantine/<time>/` (nothing deleted), after which the store works.
#[test]
fn a_log_entry_that_is_not_a_regular_file_is_store_corrupt_until_repair_moves_it_aside() {
    use std::os::unix::fs::FileTypeExt;
    type Break = fn(&Path, &Path) -> (u64, usize);
    let cases: [(&str, Break); 4] = [
        ("a FIFO after the last segment", |s, _| {
            mkfifo(&segment_n(s, 13));
            (13, 10)
        }),
        ("a FIFO in place of the last segment", |s, keep| {
            std::fs::rename(segment_n(s, 11), keep.join("kept.seg")).unwrap();
            mkfifo(&segment_n(s, 11));
            (11, 8)
        }),
        ("a directory after the last segment", |s, _| {
            std::fs::create_dir(segment_n(s, 13)).unwrap();
            std::fs::write(segment_n(s, 13).join("inside"), b"kept").unwrap();
            (13, 10)
        }),
        ("a directory in place of the first segment", |s, _| {
            let first = segment_n(s, 0);
            let bytes = std::fs::read(&first).unwrap();
            std::fs::remove_file(&first).unwrap();
            std::fs::create_dir(&first).unwrap();
            std::fs::write(first.join("was-the-segment"), bytes).unwrap();
            (0, 0)
        }),
    ];
    for (what, break_it) in cases {
        let cs = claims(10, 32);
        let (tmp, store) = store_with(&cs);
        split_segments(&store, &[8, 11]);
        let (at, left) = break_it(&store, tmp.path());
        let name = elench::store::log::segment_name(at);
        for args in [&["status", "--all"][..], &["fsck"], &["log"]] {
            let out = run_bounded(&store, args);
            corrupt(&out);
            // The error's message, or `fsck`'s problems, name the entry and what is wrong.
            let said = out.json.to_string();
            assert!(said.contains(&name), "{what}, {args:?}: {said}");
            assert!(
                said.contains("not a regular file"),
                "{what}, {args:?}: {said}"
            );
        }
        let out = add_fresh_bounded(&store, tmp.path());
        corrupt(&out);
        let out = run_bounded(&store, &["fsck", "--repair"]);
        assert_eq!(out.code, 0, "{what}: {}", out.json);
        let moved: Vec<&str> = out.json["data"]["repaired"]["moved"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap())
            .collect();
        assert!(moved.contains(&name.as_str()), "{what}: {moved:?}");
        let quarantine =
            PathBuf::from(out.json["data"]["repaired"]["quarantine"].as_str().unwrap());
        assert!(quarantine.starts_with(store.join("quarantine")), "{what}");
        let aside = std::fs::symlink_metadata(quarantine.join(&name)).unwrap();
        let kind = aside.file_type();
        assert!(kind.is_fifo() || kind.is_dir(), "{what}: {kind:?}");
        if kind.is_dir() {
            assert!(
                std::fs::read_dir(quarantine.join(&name)).unwrap().count() == 1,
                "{what}: the directory's content was kept"
            );
        }
        let out = run_bounded(&store, &["status", "--all", "--limit", "100"]);
        assert_eq!(out.code, 0, "{what}: {}", out.json);
        assert_eq!(
            out.json["data"]["claims"].as_array().unwrap().len(),
            left,
            "{what}"
        );
        assert_eq!(run_bounded(&store, &["fsck"]).code, 0, "{what}");
    }
}

/// `add` of one fresh assertion through `run_bounded`.
fn add_fresh_bounded(store: &Path, dir: &Path) -> common::Out {
    let keys = Keys::new();
    let fresh = ClaimBuilder::assertion("one more").sign(&keys);
    let bundle = dir.join("one-more.intoto.jsonl");
    write_bundle(&bundle, [&fresh]);
    run_bounded(store, &["add", bundle.to_str().unwrap()])
}
