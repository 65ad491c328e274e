//! Durability and locking of the store through the real binary (docs/store.md, issue 3
//! acceptance "Durability", "Concurrency", "Bad input never changes the store"):
//!
//! - `add` killed with SIGKILL at random moments, many times: the store always opens, `fsck`
//!   is clean, and every envelope whose add was acknowledged is present with its index
//!   entries and exported byte for byte.
//! - 8 processes adding 200 envelopes each at once all succeed under the default wait.
//! - A held store makes another process fail with STORE_BUSY (exit 12) after `--wait`.
//! - Rejected input never changes the store: `export` is byte-equal before and after.

use crate::common;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use common::{
    assertion, cli_store, elench_path, envelope_text, export, graph, record, refs, run,
    write_bundle, ClaimBuilder, Keys, Rng, Signed, Signer,
};
use elench::store::Store;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The 8 concurrent adds wait for each other against the default 30 s; the kill rounds of the
/// SIGKILL test take turns with them so the two do not compete for the CPU meanwhile.
static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn heavy() -> std::sync::MutexGuard<'static, ()> {
    HEAVY.lock().unwrap_or_else(|e| e.into_inner())
}

/// An envelope as the log keeps and exports it: its canonical (RFC 8785) form.
fn canon(envelope: &str) -> String {
    String::from_utf8(elench::store::record::canonical_envelope(envelope.as_bytes()).unwrap())
        .unwrap()
}

fn export_lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8(bytes.to_vec())
        .expect("export is UTF-8")
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

fn assert_fsck_clean(store: &Path, expect_claims: Option<usize>) {
    let out = run(store, &["fsck"]);
    assert_eq!(out.code, 0, "fsck must be clean: {}", out.json);
    assert_eq!(
        out.json["data"]["problems"].as_array().map(Vec::len),
        Some(0),
        "fsck problems: {}",
        out.json
    );
    if let Some(n) = expect_claims {
        assert_eq!(out.json["data"]["claims_checked"].as_u64(), Some(n as u64));
    }
}

/// Every id is present: `status ID…` exits 0 (an unknown id would exit 5).
fn assert_present(store: &Path, ids: &BTreeSet<String>) {
    if ids.is_empty() {
        return;
    }
    let mut args = vec!["status"];
    args.extend(ids.iter().map(String::as_str));
    let out = run(store, &args);
    assert_eq!(out.code, 0, "status of acknowledged ids: {}", out.json);
    assert_eq!(
        out.json["data"]["claims"].as_array().map(Vec::len),
        Some(ids.len())
    );
}

/// Through the library: each claim's target and premise index entries exist.
fn assert_indexed(store: &Path, claims: &[&Signed]) {
    let s = Store::open(store, &elench::store::Options::new(Duration::from_secs(30)))
        .expect("store opens");
    for c in claims {
        assert!(s.contains(&c.id).unwrap(), "{} stored", c.id);
        for t in &c.target {
            assert!(
                s.records_targeting(t).unwrap().contains(&c.id),
                "target index {t} -> {}",
                c.id
            );
        }
        for p in &c.depends_on {
            assert!(
                s.dependents(p).unwrap().contains(&c.id),
                "premise index {p} -> {}",
                c.id
            );
        }
    }
}

/// One `elench add BUNDLE` killed with SIGKILL after `delay`. Returns the ids it acknowledged
/// on stderr (complete `created`/`noop` lines only) and whether it was still running when
/// killed.
/// Runs `add` on the bundle and SIGKILLs it once it has acknowledged `after_acks` envelopes
/// (plus `delay`, which lands the kill at a random point of the next envelope's work), or
/// earlier if it finishes. Returns the ids it acknowledged as created and as noop, and whether
/// it was still running when killed.
fn add_and_kill(
    store: &Path,
    bundle: &Path,
    after_acks: usize,
    delay: Duration,
) -> (Vec<String>, Vec<String>, bool) {
    let mut child = std::process::Command::new(elench_path())
        .arg("--store")
        .arg(store)
        .arg("add")
        .arg(bundle)
        .env_remove("ELENCH_STORE")
        .env_remove("CI")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("elench starts");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        let mut r = BufReader::new(stderr);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match r.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                // A line cut short by the kill acknowledges nothing.
                Ok(_) if buf.ends_with(b"\n") => {
                    let _ = tx.send(String::from_utf8_lossy(&buf).trim_end().to_owned());
                }
                Ok(_) => {}
            }
        }
    });
    let mut lines = Vec::new();
    while lines.len() < after_acks {
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(l) => lines.push(l),
            Err(_) => break, // finished (channel closed) or stuck
        }
    }
    std::thread::sleep(delay);
    let running = child.try_wait().unwrap().is_none();
    let _ = child.kill(); // SIGKILL on Unix
    let status = child.wait().unwrap();
    reader.join().unwrap();
    lines.extend(rx.try_iter());
    if !running {
        assert!(
            status.success(),
            "add finished on its own but failed: {status:?}\n{lines:?}"
        );
    }
    let mut created = Vec::new();
    let mut noop = Vec::new();
    for l in &lines {
        let mut words = l.split(' ');
        let (word, id) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
        let is_id = id.len() == 67 && id.starts_with("cl_");
        match word {
            "created" if is_id => created.push(id.to_owned()),
            "noop" if is_id => noop.push(id.to_owned()),
            "rejected" => panic!("a valid envelope was rejected: {l}"),
            _ => {}
        }
    }
    (created, noop, running)
}

#[test]
fn sigkill_during_add_never_loses_an_acknowledged_envelope() {
    let started = Instant::now();
    let keys = Keys::new();
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    cli_store(&store, &keys, &tmp.path().join("keys"));
    let total = 900;
    let claims = graph(&keys, total, 0x5eed_0001, "durable");
    let by_id: BTreeMap<&str, &Signed> = claims.iter().map(|c| (c.id.as_str(), c)).collect();
    let bundle = tmp.path().join("batch.intoto.jsonl");
    write_bundle(&bundle, &claims);

    let mut rng = Rng::new(0x0dd_ba11);
    let mut acknowledged: BTreeSet<String> = BTreeSet::new();
    let mut killed_mid_batch = 0;
    let rounds = 15;
    let mut rounds_run = 0;
    for round in 0..rounds {
        // Take turns with the concurrency test between rounds, never during one.
        let _g = heavy();
        // Each round continues the batch: everything not acknowledged yet, in order (some of
        // it may be stored already, unacknowledged, and then comes back as a noop).
        let remaining: Vec<&Signed> = claims
            .iter()
            .filter(|c| !acknowledged.contains(&c.id))
            .collect();
        write_bundle(&bundle, remaining.iter().copied());
        if remaining.is_empty() {
            break;
        }
        rounds_run += 1;
        let after_acks = rng.range(1, 40) as usize;
        let delay = Duration::from_micros(rng.range(0, 3000));
        let (created, noop, killed) = add_and_kill(&store, &bundle, after_acks, delay);
        if killed {
            killed_mid_batch += 1;
        }
        for id in created.iter().chain(&noop) {
            assert!(
                by_id.contains_key(id.as_str()),
                "unknown id acknowledged: {id}"
            );
            assert!(
                !acknowledged.contains(id),
                "{id} was acknowledged before and is not in this round's bundle"
            );
        }
        let mut unique: BTreeSet<&String> = BTreeSet::new();
        for id in created.iter().chain(&noop) {
            assert!(
                unique.insert(id),
                "{id} acknowledged twice in round {round}"
            );
        }
        acknowledged.extend(created.iter().chain(&noop).cloned());
        eprintln!(
            "round {round}: {} to add, killed {delay:?} after {after_acks} acks (mid-batch: {killed}); \
             {} created, {} noop (stored before, unacknowledged); {} acknowledged in all",
            remaining.len(),
            created.len(),
            noop.len(),
            acknowledged.len()
        );

        // The store opens and is consistent.
        assert_fsck_clean(&store, None);
        // Every acknowledged envelope is there, with its index entries, exported as received.
        assert_present(&store, &acknowledged);
        let ack: Vec<&Signed> = acknowledged.iter().map(|id| by_id[id.as_str()]).collect();
        assert_indexed(&store, &ack);
        let exported: BTreeSet<String> =
            export_lines(&export(&store, &tmp.path().join("export.intoto.jsonl")))
                .into_iter()
                .collect();
        for c in &ack {
            assert!(
                exported.contains(&canon(&c.envelope)),
                "export lacks acknowledged {}",
                c.id
            );
        }
        // Nothing unknown got in: every exported line is one of ours.
        let ours: BTreeSet<String> = claims.iter().map(|c| canon(&c.envelope)).collect();
        for line in &exported {
            assert!(
                ours.contains(line.as_str()),
                "export has a foreign line: {line}"
            );
        }
        drop(_g);
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        killed_mid_batch * 2 >= rounds_run,
        "only {killed_mid_batch} of {rounds_run} adds were killed mid-batch: the batch is too short"
    );

    // Finish the batch; everything is there.
    write_bundle(&bundle, &claims);
    let out = run(&store, &["add", bundle.to_str().unwrap()]);
    assert_eq!(out.code, 0, "final add: {}", out.json);
    assert_eq!(out.json["data"]["rejected"].as_u64(), Some(0));
    assert_eq!(
        out.json["data"]["created"].as_u64().unwrap() + out.json["data"]["noop"].as_u64().unwrap(),
        total as u64
    );
    assert!(out.json["data"]["noop"].as_u64().unwrap() >= acknowledged.len() as u64);
    assert_fsck_clean(&store, Some(total));
    let all: BTreeSet<String> = claims.iter().map(|c| c.id.clone()).collect();
    assert_present(&store, &all);
    assert_indexed(&store, &claims.iter().collect::<Vec<_>>());
    let exported = export_lines(&export(&store, &tmp.path().join("final.intoto.jsonl")));
    assert_eq!(exported.len(), total);
    let want: BTreeSet<String> = claims.iter().map(|c| canon(&c.envelope)).collect();
    let got: BTreeSet<String> = exported.into_iter().collect();
    assert_eq!(got, want);
    eprintln!(
        "sigkill test: {killed_mid_batch}/{rounds} killed mid-batch, {:?}",
        started.elapsed()
    );
}

#[test]
fn eight_concurrent_adds_all_succeed_and_lose_nothing() {
    let started = Instant::now();
    let keys = Keys::new();
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    cli_store(&store, &keys, &tmp.path().join("keys"));

    // 8 × 200 different envelopes; some name a premise in another process's share, which
    // may or may not have arrived yet.
    let (procs, per) = (8usize, 200usize);
    let mut shares: Vec<Vec<Signed>> = vec![Vec::new(); procs];
    for i in 0..per {
        for k in 0..procs {
            let deps: Vec<String> = if i > 0 && i % 3 == 0 {
                vec![shares[(k + 1) % procs][i - 1].id.clone()]
            } else {
                Vec::new()
            };
            let s = ClaimBuilder::assertion(&format!("process {k} claim {i}"))
                .depends_on(&refs(&deps))
                .sign(&keys);
            shares[k].push(s);
        }
    }
    for (k, share) in shares.iter().enumerate() {
        let dir = tmp.path().join(format!("in{k}"));
        std::fs::create_dir_all(&dir).unwrap();
        for (i, s) in share.iter().enumerate() {
            std::fs::write(dir.join(format!("{i:03}.dsse")), &s.envelope).unwrap();
        }
    }
    eprintln!(
        "generated {} envelopes in {:?}",
        procs * per,
        started.elapsed()
    );

    let turn = heavy();
    let launched = Instant::now();
    let children: Vec<_> = (0..procs)
        .map(|k| {
            std::process::Command::new(elench_path())
                .arg("--store")
                .arg(&store)
                .arg("add")
                .arg(tmp.path().join(format!("in{k}")))
                .env_remove("ELENCH_STORE")
                .env_remove("CI")
                .env_remove("NO_COLOR")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("elench starts")
        })
        .collect();
    for (k, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let json: Value = serde_json::from_str(text.trim())
            .unwrap_or_else(|e| panic!("process {k}: stdout is not JSON ({e}): {text}"));
        assert_eq!(
            out.status.code(),
            Some(0),
            "process {k} failed: {}",
            json["error"]
        );
        assert_eq!(
            json["data"]["created"].as_u64(),
            Some(per as u64),
            "process {k}"
        );
        assert_eq!(json["data"]["rejected"].as_u64(), Some(0), "process {k}");
    }
    eprintln!("8 concurrent adds finished in {:?}", launched.elapsed());
    drop(turn);

    let total = procs * per;
    let all: BTreeSet<String> = shares.iter().flatten().map(|c| c.id.clone()).collect();
    assert_eq!(all.len(), total);
    // status --all, paginated to one page.
    let out = run(&store, &["status", "--all", "--limit", "5000"]);
    assert_eq!(out.code, 0, "{}", out.json);
    let listed: BTreeSet<String> = out.json["data"]["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(listed, all);
    assert_eq!(out.json["meta"]["pagination"]["has_more"], json!(false));
    assert_eq!(out.json["data"]["as_of"].as_u64(), Some(total as u64));
    // log in arrival order lists each once.
    let out = run(&store, &["log", "--limit", "5000"]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(
        out.json["data"]["entries"].as_array().map(Vec::len),
        Some(total)
    );
    let exported = export_lines(&export(&store, &tmp.path().join("all.intoto.jsonl")));
    assert_eq!(exported.len(), total);
    let want: BTreeSet<String> = shares
        .iter()
        .flatten()
        .map(|c| canon(&c.envelope))
        .collect();
    let got: BTreeSet<String> = exported.into_iter().collect();
    assert_eq!(got, want);
    assert_fsck_clean(&store, Some(total));
    let everything: Vec<&Signed> = shares.iter().flatten().collect();
    assert_indexed(&store, &everything);
    eprintln!("concurrency test: {:?}", started.elapsed());
}

#[test]
fn a_writer_holding_the_store_holds_up_writers_never_readers() {
    let keys = Keys::new();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let store = common::lib_store(&dir, &keys);
    let claims = graph(&keys, 5, 0x11, "held");
    common::lib_add_all(&store, &claims[..4]);
    let bundle = tmp.path().join("last.intoto.jsonl");
    write_bundle(&bundle, &claims[4..]);
    let held = store.lock().expect("the writer lock");

    // Readers answer at once, with what was committed, however long --wait is.
    let out_file = tmp.path().join("out.intoto.jsonl");
    let probes: [&[&str]; 4] = [
        &["--wait", "60", "status", "--all"],
        &["--wait", "60", "log"],
        &["--wait", "60", "show", &claims[0].id],
        &["--wait", "60", "export", "-o", out_file.to_str().unwrap()],
    ];
    for args in probes {
        let t = Instant::now();
        let out = run(&dir, args);
        assert_eq!(
            out.code, 0,
            "{args:?} while a writer holds the store: {}",
            out.json
        );
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "{args:?} waited {:?}",
            t.elapsed()
        );
    }
    let out = run(&dir, &["status", "--all"]);
    assert_eq!(out.json["data"]["as_of"], json!(4));

    // A second writer waits --wait, then fails with STORE_BUSY (retryable, exit 12).
    let t = Instant::now();
    let out = run(&dir, &["--wait", "1", "add", bundle.to_str().unwrap()]);
    let waited = t.elapsed();
    assert_eq!(out.code, 12, "{}", out.json);
    assert_eq!(out.json["error"]["code"], json!("STORE_BUSY"));
    assert_eq!(out.json["error"]["retryable"], json!(true), "{}", out.json);
    assert!(waited >= Duration::from_secs(1), "gave up after {waited:?}");

    // A writer allowed to wait gets through once the lock is released.
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(700));
        drop(held);
    });
    let out = run(&dir, &["--wait", "20", "add", bundle.to_str().unwrap()]);
    releaser.join().unwrap();
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(out.json["data"]["created"], json!(1));
}

/// A valid envelope with its payload changed after signing.
fn tampered(s: &Signed) -> String {
    let mut env: Value = serde_json::from_str(&s.envelope).unwrap();
    let payload = STANDARD.decode(env["payload"].as_str().unwrap()).unwrap();
    let text = String::from_utf8(payload).unwrap().replace("good", "evil");
    env["payload"] = json!(STANDARD.encode(text.as_bytes()));
    env.to_string()
}

#[test]
fn rejected_input_never_changes_the_store() {
    let keys = Keys::new();
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    cli_store(&store, &keys, &tmp.path().join("keys"));
    let a = assertion(&keys, "good a", &[]);
    let b = assertion(&keys, "good b", &[&a.id]);
    let v = record(&keys, "verification", "good run", &[&a.id], &[]);
    let good_dir = tmp.path().join("good");
    std::fs::create_dir_all(&good_dir).unwrap();
    for (i, s) in [&a, &b, &v].iter().enumerate() {
        std::fs::write(good_dir.join(format!("{i}.dsse")), &s.envelope).unwrap();
    }
    let out = run(&store, &["add", good_dir.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.json);
    let before = export(&store, &tmp.path().join("before.intoto.jsonl"));
    assert_eq!(export_lines(&before).len(), 3);

    // The bad inputs, each with the code it must be rejected with.
    let fresh = assertion(&keys, "good c", &[&b.id]);
    let by_stranger = keys.sign(&ClaimBuilder::assertion("good d").build(), Signer::Stranger);
    let mut extra_field = {
        let (_, map) = elench::claim::with_id(&ClaimBuilder::assertion("good e").build()).unwrap();
        map
    };
    extra_field.insert("bogus".into(), json!(true));
    let schema_violation = envelope_text(&Value::Object(extra_field), &keys.agent);
    let mut wrong_id = {
        let (_, map) = elench::claim::with_id(&ClaimBuilder::assertion("good f").build()).unwrap();
        map
    };
    wrong_id.insert("id".into(), json!(a.id));
    let id_mismatch = envelope_text(&Value::Object(wrong_id), &keys.agent);
    let agent_verifies = keys.sign(
        &ClaimBuilder::record("verification", &[&b.id])
            .text("good g")
            .build(),
        Signer::Agent,
    );
    let bad: Vec<(&str, String, &str)> = vec![
        ("tampered", tampered(&fresh), "BAD_SIGNATURE"),
        (
            "untrusted",
            by_stranger.envelope.clone(),
            "UNTRUSTED_SIGNER",
        ),
        ("schema", schema_violation, "SCHEMA_VIOLATION"),
        ("id", id_mismatch, "ID_MISMATCH"),
        ("role", agent_verifies.envelope.clone(), "ROLE_VIOLATION"),
        ("nonjson", "this is not JSON {".to_owned(), "BAD_JSON"),
        (
            "truncated",
            fresh.envelope[..fresh.envelope.len() / 2].to_owned(),
            "BAD_JSON",
        ),
    ];
    let mut all_bad = String::new();
    for (name, envelope, code) in &bad {
        let file = tmp.path().join(format!("{name}.dsse"));
        std::fs::write(&file, envelope).unwrap();
        let out = run(&store, &["add", file.to_str().unwrap()]);
        assert_eq!(out.code, 2, "{name}: {}", out.json);
        assert_eq!(
            out.json["error"]["code"],
            json!(code),
            "{name}: {}",
            out.json
        );
        assert_eq!(
            out.json["data"]["created"].as_u64().unwrap_or(0),
            0,
            "{name}"
        );
        let now = export(
            &store,
            &tmp.path().join(format!("after-{name}.intoto.jsonl")),
        );
        assert!(now == before, "{name}: export changed after a rejection");
        all_bad.push_str(envelope);
        all_bad.push('\n');
    }
    // All of them at once, as a bundle on stdin.
    let out = common::command(tmp.path())
        .arg("--store")
        .arg(&store)
        .args(["add", "-"])
        .write_stdin(all_bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["error"]["code"], json!("ALL_REJECTED"), "{json}");
    assert_eq!(json["data"]["rejected"].as_u64(), Some(bad.len() as u64));
    let lines: Vec<u64> = json["data"]["rejections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, (1..=bad.len() as u64).collect::<Vec<_>>());
    let after = export(&store, &tmp.path().join("after.intoto.jsonl"));
    assert!(after == before, "export changed after the rejected bundle");
    assert_fsck_clean(&store, Some(3));

    // The untampered envelope is fine, and changes the store.
    let file = tmp.path().join("fresh.dsse");
    std::fs::write(&file, &fresh.envelope).unwrap();
    let out = run(&store, &["add", file.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.json);
    let grown = export(&store, &tmp.path().join("grown.intoto.jsonl"));
    assert_eq!(export_lines(&grown).len(), 4);
}

/// SIGINT or SIGTERM during a batch of several groups: `add` finishes the envelope in hand,
/// reports what it did as one JSON object, and exits 130 or 143; what it reported is stored,
/// nothing else is half-done.
#[test]
fn an_interrupted_add_reports_what_it_stored_and_exits_128_plus_the_signal() {
    let keys = Keys::new();
    let tmp = tempfile::tempdir().unwrap();
    for (signal, name, code) in [(2, "INT", 130), (15, "TERM", 143)] {
        let _g = heavy();
        let store = tmp.path().join(format!("store-{name}"));
        cli_store(&store, &keys, &tmp.path().join(format!("keys-{name}")));
        let claims = graph(&keys, 2000, 0x1a7e_0000 + signal, name);
        let bundle = tmp.path().join(format!("{name}.intoto.jsonl"));
        write_bundle(&bundle, &claims);
        let mut child = std::process::Command::new(elench_path())
            .arg("--store")
            .arg(&store)
            .arg("add")
            .arg(&bundle)
            .env_remove("CI")
            .env_remove("NO_COLOR")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("elench starts");
        // Wait for the first acknowledgement, then signal.
        let stderr = child.stderr.take().unwrap();
        let mut reader = BufReader::new(stderr);
        let mut first = String::new();
        reader.read_line(&mut first).unwrap();
        assert!(first.starts_with("created "), "{first}");
        // The shell's own `kill`, so no separate kill binary is needed.
        let kill = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("kill -{name} {}", child.id()))
            .status()
            .expect("sh runs");
        assert!(kill.success());
        // Stdout is read beside stderr, so neither pipe can fill and stall the child.
        let mut stdout = child.stdout.take().unwrap();
        let out_reader = std::thread::spawn(move || {
            let mut v = Vec::new();
            std::io::Read::read_to_end(&mut stdout, &mut v).unwrap();
            v
        });
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut reader, &mut rest).unwrap();
        let status = child.wait().unwrap();
        let out = std::process::Output {
            status,
            stdout: out_reader.join().unwrap(),
            stderr: Vec::new(),
        };
        assert_eq!(out.status.code(), Some(code), "stderr: {rest}");
        let json: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
        assert_eq!(json["ok"], false);
        assert_eq!(json["error"]["code"], "CANCELLED");
        assert_eq!(json["meta"]["exit_code"], code);
        let created = json["data"]["created"].as_u64().unwrap() as usize;
        assert!(created < claims.len(), "the batch was cut short");
        let acknowledged = 1 + rest.lines().filter(|l| l.starts_with("created ")).count();
        assert_eq!(
            created, acknowledged,
            "every stored envelope was acknowledged"
        );
        assert_fsck_clean(&store, Some(created));
    }
}
