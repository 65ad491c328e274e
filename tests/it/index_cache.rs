//! The index is a cache: damage to its bytes, a small address space and a writer beside the
//! readers must never crash a command, never be called damage to the log, and never tear an
//! answer. Through the real binary.

use crate::common;

use common::{cli_store, copy_dir, elench_path, graph, run, write_bundle, Keys, Signed};
use serde_json::Value;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A store made through the CLI holding `claims` (and the three trust events).
pub(crate) fn store_with(dir: &Path, claims: &[Signed]) -> PathBuf {
    let keys = Keys::new();
    let store = dir.join("store");
    cli_store(&store, &keys, &dir.join("keys"));
    let bundle = dir.join("in.intoto.jsonl");
    write_bundle(&bundle, claims);
    let out = run(&store, &["add", bundle.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.json);
    store
}

/// One invocation, whatever became of it: exit code or signal, and stdout as JSON if it is.
struct Raw {
    code: Option<i32>,
    signal: Option<i32>,
    json: Option<Value>,
    stdout: String,
    stderr: String,
}

fn raw(store: &Path, args: &[&str]) -> Raw {
    let out = Command::new(elench_path())
        .arg("--store")
        .arg(store)
        .args(args)
        .env_remove("ELENCH_STORE")
        .env_remove("CI")
        .output()
        .expect("elench runs");
    Raw::of(out)
}

impl Raw {
    fn of(out: std::process::Output) -> Raw {
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        Raw {
            code: out.status.code(),
            signal: out.status.signal(),
            json: serde_json::from_str(stdout.trim()).ok(),
            stdout,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    fn describe(&self) -> String {
        format!(
            "code {:?} signal {:?}\nstdout: {}\nstderr: {}",
            self.code, self.signal, self.stdout, self.stderr
        )
    }

    /// Ended by itself with one JSON object whose exit code is the real one.
    fn answered(&self) -> &Value {
        let json = self
            .json
            .as_ref()
            .unwrap_or_else(|| panic!("no JSON answer: {}", self.describe()));
        assert_eq!(
            json["meta"]["exit_code"].as_i64(),
            self.code.map(i64::from),
            "{}",
            self.describe()
        );
        json
    }

    fn warned(&self, code: &str) -> bool {
        self.json.as_ref().is_some_and(|j| {
            j["warnings"]
                .as_array()
                .is_some_and(|w| w.iter().any(|w| w["code"] == code))
        })
    }

    /// A clear error about the index that names the way out.
    fn is_index_error(&self) -> bool {
        self.json.as_ref().is_some_and(|j| {
            j["ok"] == false
                && j["meta"]["exit_code"] == 4
                && j["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("elench reindex"))
        })
    }
}

fn statuses_of(json: &Value) -> Value {
    json["data"]["claims"].clone()
}

/// Positions to flip in a file of `len` bytes: spread over the file, half of them in page
/// headers and the first entries of a page (page numbers, flags, offsets), where a flip sends
/// LMDB somewhere else, half anywhere in a page.
fn positions(len: usize, count: usize) -> Vec<usize> {
    let pages = (len / 4096).max(1);
    let mut rng = common::Rng::new(12);
    (0..count)
        .map(|i| {
            let page = rng.below(pages);
            let within = if i % 2 == 0 {
                rng.below(48)
            } else {
                rng.below(4096)
            };
            (page * 4096 + within).min(len - 1)
        })
        .collect()
}

#[test]
fn a_flipped_byte_in_the_index_never_crashes_a_command_and_repair_leaves_a_clean_store() {
    let tmp = tempfile::tempdir().unwrap();
    let claims = graph(&Keys::new(), 60, 4, "damage");
    let pristine = store_with(tmp.path(), &claims);
    let all = ["status", "--all", "--limit", "10000"];
    let want = statuses_of(raw(&pristine, &all).answered());
    let root = claims[0].id.clone();
    let want_blast = raw(&pristine, &["blast", &root]).answered()["data"].clone();
    let data = std::fs::read(pristine.join("index").join("data.mdb")).unwrap();
    let mut outcomes = std::collections::BTreeMap::<&str, usize>::new();
    // Answers that differ without a word: LMDB keeps no checksum of its own page structure,
    // and a flipped byte in a page's table of entry offsets can send a search past entries
    // whose own checksums are sound; each answer is checked against counts that such a
    // search cannot meet (`Incoming`, the counts in `meta`). Never allowed.
    let mut silent = Vec::new();
    for (i, at) in positions(data.len(), 50).into_iter().enumerate() {
        let store = tmp.path().join(format!("s{i}"));
        copy_dir(&pristine, &store);
        let mut damaged = data.clone();
        damaged[at] ^= 0x5a;
        std::fs::write(store.join("index").join("data.mdb"), &damaged).unwrap();
        let context = format!("flip at byte {at}");
        // Each command, run twice: the first may find the damage, the second must not be
        // stuck on it.
        for _ in 0..2 {
            let s = raw(&store, &all);
            let json = s.answered();
            if s.is_index_error() {
                *outcomes.entry("status: index error").or_default() += 1;
                continue;
            }
            assert_eq!(json["meta"]["exit_code"], 0, "{context}: {}", s.describe());
            if statuses_of(json) != want {
                silent.push(format!("{context}: status"));
                continue;
            }
            let kind = if s.warned("INDEX_REBUILT") {
                "status: rebuilt"
            } else {
                "status: same"
            };
            *outcomes.entry(kind).or_default() += 1;
        }
        let b = raw(&store, &["blast", &root]);
        let json = b.answered();
        if !b.is_index_error() {
            assert_eq!(json["meta"]["exit_code"], 0, "{context}: {}", b.describe());
            if json["data"] != want_blast {
                silent.push(format!("{context}: blast"));
            }
        }
        let f = raw(&store, &["fsck"]);
        f.answered();
        let r = raw(&store, &["fsck", "--repair"]);
        assert_eq!(
            r.answered()["meta"]["exit_code"],
            0,
            "{context}: {}",
            r.describe()
        );
        let f = raw(&store, &["fsck"]);
        assert_eq!(
            f.answered()["meta"]["exit_code"],
            0,
            "{context}: {}",
            f.describe()
        );
        let s = raw(&store, &all);
        assert_eq!(
            statuses_of(s.answered()),
            want,
            "{context}: {}",
            s.describe()
        );
        std::fs::remove_dir_all(&store).unwrap();
    }
    eprintln!("outcomes: {outcomes:?}; answered wrong without a word: {silent:?}");
    assert!(silent.is_empty(), "{silent:?}");
    assert!(
        outcomes.get("status: index error").copied().unwrap_or(0) >= 5,
        "damage is found: {outcomes:?}"
    );
}

/// Points the index's main tree at a page past the end of `data.mdb` (both meta pages), as
/// a flipped bit in a page number can: LMDB then reads memory the file does not back.
pub(crate) fn point_past_the_file(data_mdb: &Path) {
    let mut bytes = std::fs::read(data_mdb).unwrap();
    let pages = (bytes.len() / 4096) as u64;
    for meta in [0usize, 4096] {
        // MDB_meta after the 16-byte page header: magic, version, address, mapsize, the free
        // tree (48 bytes) and the main tree (root page number last), then the last page.
        let root = meta + 16 + 4 + 4 + 8 + 8 + 48 + 40;
        let last = meta + 16 + 4 + 4 + 8 + 8 + 96;
        bytes[last..last + 8].copy_from_slice(&(pages + 4000).to_le_bytes());
        bytes[root..root + 8].copy_from_slice(&(pages + 3000).to_le_bytes());
    }
    std::fs::write(data_mdb, bytes).unwrap();
}

#[test]
fn a_fault_reading_the_index_ends_with_index_damaged_and_the_next_command_rebuilds() {
    let tmp = tempfile::tempdir().unwrap();
    let claims = graph(&Keys::new(), 20, 9, "fault");
    let store = store_with(tmp.path(), &claims);
    let all = ["status", "--all", "--limit", "100"];
    let want = statuses_of(raw(&store, &all).answered());
    let data = store.join("index").join("data.mdb");
    for command in [&all[..], &["fsck"][..], &["blast", &claims[0].id][..]] {
        point_past_the_file(&data);
        let first = raw(&store, command);
        let json = first.answered();
        assert_eq!(
            json["error"]["code"],
            "INDEX_DAMAGED",
            "{}",
            first.describe()
        );
        assert!(first.is_index_error(), "{}", first.describe());
        assert!(store.join("index").join("DAMAGED").exists());
        let again = raw(&store, &all);
        assert!(again.warned("INDEX_REBUILT"), "{}", again.describe());
        assert_eq!(statuses_of(again.answered()), want, "{}", again.describe());
        assert!(!store.join("index").join("DAMAGED").exists());
        assert_eq!(raw(&store, &["fsck"]).answered()["meta"]["exit_code"], 0);
    }
    // Text on a terminal-less run with --format text: the error goes to stderr, and the
    // exit code is still 4.
    point_past_the_file(&data);
    let text = raw(&store, &["--format", "text", "status", "--all"]);
    assert_eq!(text.code, Some(4), "{}", text.describe());
    assert!(text.stderr.contains("INDEX_DAMAGED"), "{}", text.describe());
    // `reindex` rebuilds without reading the damaged index.
    point_past_the_file(&data);
    let r = raw(&store, &["reindex"]);
    assert_eq!(r.answered()["meta"]["exit_code"], 0, "{}", r.describe());
    assert_eq!(statuses_of(raw(&store, &all).answered()), want);
    // And so does `fsck --repair`.
    point_past_the_file(&data);
    let r = raw(&store, &["fsck", "--repair"]);
    assert_eq!(r.answered()["meta"]["exit_code"], 0, "{}", r.describe());
    assert_eq!(raw(&store, &["fsck"]).answered()["meta"]["exit_code"], 0);
    assert_eq!(statuses_of(raw(&store, &all).answered()), want);
}

/// Runs elench under `ulimit -v` (KiB of address space), through the shell.
fn limited(kib: u64, store: &Path, args: &[&str]) -> Raw {
    let mut line = format!("ulimit -v {kib} && exec \"$0\" --store \"$1\"");
    for i in 0..args.len() {
        line.push_str(&format!(" \"${}\"", i + 2));
    }
    let out = Command::new("sh")
        .arg("-c")
        .arg(line)
        .arg(elench_path())
        .arg(store)
        .args(args)
        .env_remove("ELENCH_STORE")
        .env_remove("CI")
        .output()
        .expect("sh runs");
    Raw::of(out)
}

#[test]
fn every_command_works_within_a_gigabyte_of_address_space() {
    const KIB: u64 = 1 << 20;
    let tmp = tempfile::tempdir().unwrap();
    let claims = graph(&Keys::new(), 300, 5, "limit");
    let store = store_with(tmp.path(), &claims[..100]);
    let ok = |r: &Raw| {
        let json = r.answered();
        assert_eq!(json["meta"]["exit_code"], 0, "{}", r.describe());
        assert!(!r.warned("INDEX_REBUILT"), "{}", r.describe());
        json.clone()
    };
    let bundle = tmp.path().join("more.intoto.jsonl");
    write_bundle(&bundle, &claims[100..]);
    ok(&limited(KIB, &store, &["add", bundle.to_str().unwrap()]));
    let all = ["status", "--all", "--limit", "1000"];
    let answer = ok(&limited(KIB, &store, &all));
    assert_eq!(answer["data"]["as_of"], 300);
    assert_eq!(
        statuses_of(&answer),
        statuses_of(raw(&store, &all).answered())
    );
    ok(&limited(KIB, &store, &["blast", &claims[0].id]));
    ok(&limited(KIB, &store, &["log", "--limit", "5"]));
    ok(&limited(KIB, &store, &["fsck"]));
    let r = ok(&limited(KIB, &store, &["reindex"]));
    assert_eq!(r["data"]["claims"], 300);
    // An index that cannot be mapped is never called damage, nor replaced: with far too
    // little address space the command fails, and the index is still there, unchanged.
    let data = store.join("index").join("data.mdb");
    let before = std::fs::read(&data).unwrap();
    // (200 MB: room for the binary, not for the map.)
    let starved = limited(200_000, &store, &["status", "--all"]);
    if let Some(json) = &starved.json {
        assert_eq!(
            json["error"]["code"],
            "INDEX_UNAVAILABLE",
            "{}",
            starved.describe()
        );
        assert_eq!(starved.code, Some(4), "{}", starved.describe());
    }
    assert!(!store.join("index").join("DAMAGED").exists());
    assert_eq!(std::fs::read(&data).unwrap(), before);
    let after = ok(&limited(KIB, &store, &all));
    assert_eq!(statuses_of(&after), statuses_of(&answer));
}

/// Every claim id a status answer names (the claims themselves, what decided them, their
/// history, acceptances, revocations).
fn named_ids(claim: &Value, out: &mut Vec<String>) {
    for key in ["decided_by", "accepted_by"] {
        for id in claim[key].as_array().into_iter().flatten() {
            out.push(id.as_str().unwrap_or_default().to_owned());
        }
    }
    for h in claim["history"].as_array().into_iter().flatten() {
        out.push(h["id"].as_str().unwrap_or_default().to_owned());
    }
    for r in claim["revoked_by"].as_array().into_iter().flatten() {
        out.push(r["root"].as_str().unwrap_or_default().to_owned());
    }
}

#[test]
fn status_answers_under_a_writer_are_snapshots_as_of_their_as_of() {
    let tmp = tempfile::tempdir().unwrap();
    let claims = graph(&Keys::new(), 700, 6, "snapshot");
    let store = store_with(tmp.path(), &claims[..100]);
    let chunks: Vec<PathBuf> = claims[100..]
        .chunks(8)
        .enumerate()
        .map(|(i, chunk)| {
            let path = tmp.path().join(format!("chunk{i}.intoto.jsonl"));
            write_bundle(&path, chunk);
            path
        })
        .collect();
    let writer = {
        let store = store.clone();
        std::thread::spawn(move || {
            for chunk in chunks {
                let out = run(&store, &["add", chunk.to_str().unwrap()]);
                assert_eq!(out.code, 0, "{}", out.json);
            }
        })
    };
    let order: std::collections::HashMap<&str, usize> = claims
        .iter()
        .enumerate()
        .map(|(i, c)| (c.id.as_str(), i))
        .collect();
    let mut answers = 0;
    let mut moved = std::collections::BTreeSet::new();
    while !writer.is_finished() || answers < 5 {
        let s = raw(&store, &["status", "--all", "--limit", "10000"]);
        let json = s.answered();
        assert_eq!(json["ok"], true, "{}", s.describe());
        let as_of = json["data"]["as_of"].as_u64().unwrap() as usize;
        let listed = json["data"]["claims"].as_array().unwrap();
        // The claims are the first `as_of` of the log, no more and no fewer…
        assert_eq!(listed.len(), as_of, "answer {answers}");
        assert_eq!(
            json["meta"]["pagination"]["total"], as_of,
            "answer {answers}"
        );
        let ids: std::collections::HashSet<&str> =
            listed.iter().map(|c| c["id"].as_str().unwrap()).collect();
        for c in listed {
            assert!(
                order[c["id"].as_str().unwrap()] < as_of,
                "answer {answers}: {c}"
            );
        }
        // …and every record a status names is one of them.
        let mut named = Vec::new();
        for c in listed {
            named_ids(c, &mut named);
        }
        for id in &named {
            let dangling = id.starts_with("cl_0000000000000000000000000000");
            assert!(
                ids.contains(id.as_str()) || dangling,
                "answer {answers} (as of {as_of}) names {id}, which is not among its claims"
            );
        }
        moved.insert(as_of);
        answers += 1;
        if answers > 400 {
            break;
        }
    }
    writer.join().unwrap();
    // The answers saw the log grow (else the test proved nothing).
    assert!(moved.len() >= 3, "{moved:?}");
}
