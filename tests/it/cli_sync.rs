//! Sharing a log through git remotes, through the real binary and real git:
//!
//! - Three stores with the same trusted keys and one bare remote (SHA-1 and SHA-256) add
//!   their own claims, some depending on or falsifying each other's, then push, pull and sync
//!   in random orders until a round of syncs changes nothing: every store then reports the
//!   same status for every claim, exports the same set of envelopes, and agrees with a store
//!   that was given the union directly.
//! - Stores pushing at the same moment all succeed, and the remote holds the union.
//! - A commit made by hand in the remote with a tampered envelope and one signed by an
//!   untrusted key: pull reports both with their codes and takes neither; after `keys add`
//!   the next pull takes the second, never the first.
//! - The same envelopes, added in different orders, give the same commit on two fresh
//!   remotes.
//! - Push and pull killed with SIGKILL at random moments, then run again: everything arrives,
//!   fsck is clean.
//!
//! Each test skips (with a message) where git is not installed.

use crate::common;

use common::{
    cli_store, elench_path, have_git, record, refs, run, store_with_remote, write_bundle,
    ClaimBuilder, Keys, Rng, Signed,
};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// A bare repository of the given object format.
fn bare(dir: &Path, name: &str, format: &str) -> PathBuf {
    let path = dir.join(name);
    let st = Command::new("git")
        .args(["init", "--quiet", "--bare"])
        .arg(format!("--object-format={format}"))
        .arg(&path)
        .status()
        .unwrap();
    assert!(st.success());
    path
}

/// Keys, a temporary folder, and in it an empty bare remote `remote.git` of `format`.
fn keys_tmp_remote(format: &str) -> (Keys, tempfile::TempDir, PathBuf) {
    let keys = Keys::new();
    let tmp = tempfile::tempdir().unwrap();
    let remote = bare(tmp.path(), "remote.git", format);
    (keys, tmp, remote)
}

/// Runs git on the bare repository `remote`, `input` on its stdin; asserts it succeeded and
/// returns its stdout.
fn git_on(remote: &Path, args: &[&str], input: Option<&str>) -> String {
    let mut child = Command::new("git")
        .arg("--git-dir")
        .arg(remote)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    if let Some(i) = input {
        stdin.write_all(i.as_bytes()).unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// `elench --store STORE VERB`, started; its stdout and stderr piped or thrown away.
fn spawn_elench(store: &Path, verb: &str, piped: bool) -> std::process::Child {
    let stdio = || if piped { Stdio::piped() } else { Stdio::null() };
    Command::new(elench_path())
        .arg("--store")
        .arg(store)
        .arg(verb)
        .env_remove("ELENCH_STORE")
        .stdout(stdio())
        .stderr(stdio())
        .spawn()
        .unwrap()
}

/// `push` from `store`: asserts it exited 0 having pushed `n` envelopes; its output.
fn push_expecting(store: &Path, n: u64) -> common::Out {
    let out = run(store, &["push"]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(out.json["data"]["pushed"], json!(n), "{}", out.json);
    out
}

fn add(store: &Path, envelopes: &[Signed], file: &Path) {
    if envelopes.is_empty() {
        return;
    }
    write_bundle(file, envelopes);
    let out = run(store, &["add", file.to_str().unwrap()]);
    assert_eq!(out.code, 0, "add: {}", out.json);
}

/// RFC 8785 form of one envelope line, so envelopes compare by content, not by spelling.
fn canonical(line: &str) -> String {
    let v: Value = serde_json::from_str(line).expect("an envelope is JSON");
    String::from_utf8(elench::jcs::canonical(&v).unwrap()).unwrap()
}

/// The store's envelopes, as a set of canonical lines.
fn exported(store: &Path, tmp: &Path) -> BTreeSet<String> {
    let file = tmp.join("export.intoto.jsonl");
    let out = run(store, &["export", "-o", file.to_str().unwrap()]);
    assert_eq!(out.code, 0, "export: {}", out.json);
    std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(canonical)
        .collect()
}

/// Every claim's status, by id, without what depends on local arrival order (`seq`, and the
/// order of `history`, which is arrival order): everything that is a function of the set.
fn statuses(store: &Path) -> BTreeMap<String, Value> {
    let out = run(store, &["status", "--all", "--limit", "10000"]);
    assert_eq!(out.code, 0, "status: {}", out.json);
    assert_eq!(out.json["meta"]["pagination"]["has_more"], json!(false));
    let mut map = BTreeMap::new();
    for c in out.json["data"]["claims"].as_array().unwrap() {
        let mut c = c.clone();
        let obj = c.as_object_mut().unwrap();
        obj.remove("seq");
        if let Some(Value::Array(h)) = obj.get_mut("history") {
            for e in h.iter_mut() {
                e.as_object_mut().unwrap().remove("seq");
            }
            h.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
        }
        map.insert(c["id"].as_str().unwrap().to_owned(), c);
    }
    map
}

fn assert_fsck_clean(store: &Path) {
    let out = run(store, &["fsck"]);
    assert_eq!(out.code, 0, "fsck: {}", out.json);
    assert_eq!(out.json["data"]["problems"], json!([]), "{}", out.json);
}

/// What an exchange reported; asserts it succeeded.
fn exchange(store: &Path, verb: &str) -> Value {
    let out = run(store, &[verb]);
    assert_eq!(out.code, 0, "{verb}: {}\n{}", out.json, out.stderr);
    for field in [
        "fetched",
        "created",
        "rejected",
        "rejections",
        "pushed",
        "remote_head",
    ] {
        assert!(
            out.json["data"].get(field).is_some(),
            "{verb} data lacks {field}: {}",
            out.json
        );
    }
    out.json["data"].clone()
}

fn changed(d: &Value) -> u64 {
    d["fetched"].as_u64().unwrap() + d["pushed"].as_u64().unwrap()
}

/// `n` claims made by three stores in turn: assertions that depend on earlier claims (often
/// another store's), and records (falsifications among them) on earlier claims.
fn shared_graph(keys: &Keys, n: usize, seed: u64, tag: &str) -> Vec<Signed> {
    let mut rng = Rng::new(seed);
    let mut out: Vec<Signed> = Vec::new();
    for i in 0..n {
        let s = if i < 3 || rng.chance(60) {
            let mut deps: Vec<String> = (0..rng.below(3))
                .filter(|_| !out.is_empty())
                .map(|_| out[rng.below(out.len())].id.clone())
                .collect();
            deps.sort();
            deps.dedup();
            ClaimBuilder::assertion(&format!("{tag} claim {i}"))
                .depends_on(&refs(&deps))
                .sign(keys)
        } else {
            let t = out[rng.below(out.len())].id.clone();
            let kind = [
                "falsification",
                "verification",
                "supersession",
                "falsification",
            ][rng.below(4)];
            record(keys, kind, &format!("{tag} record {i}"), &[&t], &[])
        };
        out.push(s);
    }
    out
}

fn converge_through(format: &str, seed: u64) {
    let (keys, tmp, remote) = keys_tmp_remote(format);
    let stores: Vec<PathBuf> = (0..3)
        .map(|i| store_with_remote(tmp.path(), &format!("s{i}"), &keys, &remote))
        .collect();
    let all = shared_graph(&keys, 36, seed, format);
    // Each store makes every third claim; the second half arrives after some exchanges.
    let share = |k: usize, wave: usize| -> Vec<Signed> {
        all.iter()
            .enumerate()
            .filter(|(i, _)| i % 3 == k && (i * 2 >= all.len()) == (wave == 1))
            .map(|(_, s)| s.clone())
            .collect()
    };
    let bundle = tmp.path().join("in.intoto.jsonl");
    for (k, s) in stores.iter().enumerate() {
        add(s, &share(k, 0), &bundle);
    }
    let mut rng = Rng::new(seed ^ 0xabc);
    let verbs = ["push", "pull", "sync"];
    for round in 0..6 {
        if round == 3 {
            for (k, s) in stores.iter().enumerate() {
                add(s, &share(k, 1), &bundle);
            }
        }
        let mut order: Vec<usize> = (0..3).collect();
        rng.shuffle(&mut order);
        for k in order {
            exchange(&stores[k], verbs[rng.below(3)]);
        }
    }
    let mut quiet = false;
    for _ in 0..6 {
        let mut order: Vec<usize> = (0..3).collect();
        rng.shuffle(&mut order);
        let moved: u64 = order
            .iter()
            .map(|&k| changed(&exchange(&stores[k], "sync")))
            .sum();
        if moved == 0 {
            quiet = true;
            break;
        }
    }
    assert!(quiet, "rounds of sync kept changing something");

    let union: BTreeSet<String> = all.iter().map(|s| canonical(&s.envelope)).collect();
    let reference = tmp.path().join("union");
    cli_store(&reference, &keys, &tmp.path().join("union-pems"));
    add(&reference, &all, &bundle);
    let want = statuses(&reference);
    assert_eq!(want.len(), all.len());
    for s in &stores {
        assert_eq!(
            exported(s, tmp.path()),
            union,
            "{} exports the union",
            s.display()
        );
        assert_eq!(
            statuses(s),
            want,
            "{} agrees with the fold of the union",
            s.display()
        );
        assert_fsck_clean(s);
    }
    // The story has falsifications and revocations in it, so agreement is not trivial.
    let kinds: BTreeSet<&str> = want
        .values()
        .map(|c| c["status"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains("falsified") && kinds.contains("revoked"),
        "{kinds:?}"
    );
    // The remote holds each envelope once.
    let files = git_on(
        &remote,
        &["ls-tree", "-r", "--name-only", "refs/elench/log"],
        None,
    );
    assert_eq!(files.lines().count(), all.len());
}

#[test]
fn three_stores_converge_through_a_sha1_remote() {
    if have_git() {
        converge_through("sha1", 0x5a1);
    }
}

#[test]
fn three_stores_converge_through_a_sha256_remote() {
    if have_git() {
        converge_through("sha256", 0x5a256);
    }
}

#[test]
fn stores_pushing_at_the_same_moment_all_succeed_and_the_remote_holds_the_union() {
    if !have_git() {
        return;
    }
    let (keys, tmp, remote) = keys_tmp_remote("sha1");
    let n = 4;
    let stores: Vec<PathBuf> = (0..n)
        .map(|i| store_with_remote(tmp.path(), &format!("p{i}"), &keys, &remote))
        .collect();
    let mut union = BTreeSet::new();
    let mut retried = 0;
    for round in 0..3 {
        for (k, s) in stores.iter().enumerate() {
            let mine: Vec<Signed> = (0..5)
                .map(|i| {
                    ClaimBuilder::assertion(&format!("round {round} store {k} claim {i}"))
                        .sign(&keys)
                })
                .collect();
            union.extend(mine.iter().map(|s| canonical(&s.envelope)));
            add(s, &mine, &tmp.path().join(format!("in{k}.jsonl")));
        }
        let children: Vec<_> = stores
            .iter()
            .map(|s| spawn_elench(s, "push", true))
            .collect();
        for c in children {
            let out = c.wait_with_output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert_eq!(
                out.status.code(),
                Some(0),
                "a concurrent push failed: {text}"
            );
            let json: Value = serde_json::from_str(text.trim()).unwrap();
            assert_eq!(json["data"]["pushed"].as_u64(), Some(5), "{json}");
            if json["data"]["attempts"].as_u64() > Some(1) {
                retried += 1;
            }
        }
    }
    eprintln!(
        "{retried} of {} pushes were refused at first and retried",
        3 * n
    );
    let reader = store_with_remote(tmp.path(), "reader", &keys, &remote);
    let d = exchange(&reader, "pull");
    assert_eq!(d["created"].as_u64(), Some(union.len() as u64));
    assert_eq!(exported(&reader, tmp.path()), union);
}

/// The layout path of an envelope line.
fn path_of(envelope: &str, id: &str) -> String {
    let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(canonical(envelope)));
    format!("v1/{}/{id}/{digest}", &id[3..5])
}

#[test]
fn pull_refuses_tampered_and_untrusted_envelopes_and_takes_the_second_once_its_key_is_trusted() {
    if !have_git() {
        return;
    }
    let (keys, tmp, remote) = keys_tmp_remote("sha256");
    let good = ClaimBuilder::assertion("honest claim").sign(&keys);
    let stranger = keys.sign(
        &ClaimBuilder::assertion("claim by a stranger").build(),
        common::Signer::Stranger,
    );
    // Tampered: another claim's envelope with a character of its payload changed, so the
    // signature no longer covers it.
    let honest = ClaimBuilder::assertion("claim to tamper with").sign(&keys);
    let mut v: Value = serde_json::from_str(&honest.envelope).unwrap();
    let payload = v["payload"].as_str().unwrap().to_owned();
    let flipped = if payload.as_bytes()[10] == b'A' {
        "B"
    } else {
        "A"
    };
    v["payload"] = json!(format!("{}{flipped}{}", &payload[..10], &payload[11..]));
    let tampered = v.to_string();
    commit_on_log(
        &remote,
        &[
            (path_of(&good.envelope, &good.id), good.envelope.clone()),
            (
                path_of(&stranger.envelope, &stranger.id),
                stranger.envelope.clone(),
            ),
            (path_of(&tampered, &honest.id), tampered.clone()),
        ],
    );
    let store = store_with_remote(tmp.path(), "s", &keys, &remote);

    let codes = |d: &Value| -> BTreeSet<String> {
        d["rejections"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                assert!(r["path"].as_str().unwrap().starts_with("v1/"), "{r}");
                assert!(!r["message"].as_str().unwrap().is_empty(), "{r}");
                r["code"].as_str().unwrap().to_owned()
            })
            .collect()
    };
    let first = exchange_allowing_rejections(&store, "pull");
    assert_eq!(first["created"].as_u64(), Some(1), "{first}");
    assert_eq!(first["rejected"].as_u64(), Some(2), "{first}");
    assert_eq!(
        codes(&first),
        BTreeSet::from(["BAD_SIGNATURE".to_owned(), "UNTRUSTED_SIGNER".to_owned()])
    );
    for id in [&stranger.id, &honest.id] {
        assert_eq!(
            run(&store, &["status", id]).code,
            5,
            "{id} must not be stored"
        );
    }
    // Still refused, still reported, on the next pull.
    let again = exchange_allowing_rejections(&store, "pull");
    assert_eq!(again["created"].as_u64(), Some(0));
    assert_eq!(again["rejected"].as_u64(), Some(2), "{again}");

    // Trust the stranger's key: the next pull takes its envelope, never the tampered one.
    let pem = tmp.path().join("stranger.pub.pem");
    std::fs::write(
        &pem,
        elench::keys::public_key_pem(&keys.stranger.verifying_key()).unwrap(),
    )
    .unwrap();
    let out = run(
        &store,
        &[
            "keys",
            "add",
            "--role",
            "agent",
            "--name",
            "stranger",
            pem.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 0, "{}", out.json);
    let third = exchange_allowing_rejections(&store, "pull");
    assert_eq!(third["created"].as_u64(), Some(1), "{third}");
    assert_eq!(codes(&third), BTreeSet::from(["BAD_SIGNATURE".to_owned()]));
    assert_eq!(run(&store, &["status", &stranger.id]).code, 0);
    assert_eq!(run(&store, &["status", &honest.id]).code, 5);
    let fourth = exchange_allowing_rejections(&store, "pull");
    assert_eq!(codes(&fourth), BTreeSet::from(["BAD_SIGNATURE".to_owned()]));
    assert_eq!(fourth["created"].as_u64(), Some(0));
    assert_fsck_clean(&store);
}

#[test]
fn the_same_envelopes_give_the_same_commit_on_two_fresh_remotes() {
    if !have_git() {
        return;
    }
    let keys = Keys::new();
    let tmp = tempfile::tempdir().unwrap();
    let claims = shared_graph(&keys, 12, 0xc0ffee, "same");
    for format in ["sha1", "sha256"] {
        let r1 = bare(tmp.path(), &format!("r1-{format}.git"), format);
        let r2 = bare(tmp.path(), &format!("r2-{format}.git"), format);
        let a = store_with_remote(tmp.path(), &format!("a-{format}"), &keys, &r1);
        let b = store_with_remote(tmp.path(), &format!("b-{format}"), &keys, &r2);
        add(&a, &claims, &tmp.path().join("a.jsonl"));
        let mut reversed = claims.clone();
        reversed.reverse();
        add(&b, &reversed, &tmp.path().join("b.jsonl"));
        let ha = exchange(&a, "push");
        let hb = exchange(&b, "push");
        assert_eq!(ha["pushed"].as_u64(), Some(claims.len() as u64));
        assert_eq!(ha["remote_head"], hb["remote_head"], "{format}");
        let len = if format == "sha1" { 40 } else { 64 };
        assert_eq!(ha["remote_head"].as_str().unwrap().len(), len);
        // Nothing new: pushing again writes nothing and leaves the head where it was.
        let again = exchange(&a, "push");
        assert_eq!(again["pushed"].as_u64(), Some(0));
        assert_eq!(again["remote_head"], ha["remote_head"]);
    }
}

/// Two stores, `a` and `b`, trusting the same keys, with one bare remote of `format`
/// (returned too) as `origin`.
fn two_stores_on_one_remote(format: &str) -> (Keys, tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let (keys, tmp, remote) = keys_tmp_remote(format);
    let a = store_with_remote(tmp.path(), "a", &keys, &remote);
    let b = store_with_remote(tmp.path(), "b", &keys, &remote);
    (keys, tmp, remote, a, b)
}

#[test]
fn a_long_pull_ends_with_the_index_synced_and_a_short_one_leaves_it_to_the_kernel() {
    let booted = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").is_ok();
    if !have_git() || !booted {
        return;
    }
    let (keys, tmp, _, a, b) = two_stores_on_one_remote("sha1");
    // More than one pull group (1,024 envelopes), then a few more.
    let claims = shared_graph(&keys, 1030, 0x5eed, "long");
    add(&a, &claims[..1025], &tmp.path().join("first.jsonl"));
    exchange(&a, "push");
    let unsynced = b.join("index").join("UNSYNCED");
    let pulled = exchange(&b, "pull");
    assert_eq!(pulled["created"].as_u64(), Some(1025), "{pulled}");
    assert!(!unsynced.exists());
    add(&a, &claims[1025..], &tmp.path().join("second.jsonl"));
    exchange(&a, "push");
    let pulled = exchange(&b, "pull");
    assert_eq!(pulled["created"].as_u64(), Some(5), "{pulled}");
    assert!(unsynced.exists());
    assert_eq!(exported(&a, tmp.path()), exported(&b, tmp.path()));
}

/// Runs `elench --store STORE VERB` and SIGKILLs it after `delay` (if still running).
/// Returns whether it was killed.
fn kill_after(store: &Path, verb: &str, delay: Duration) -> bool {
    let mut child = spawn_elench(store, verb, false);
    std::thread::sleep(delay);
    let running = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    let status = child.wait().unwrap();
    if !running {
        assert!(status.success(), "{verb} ended on its own but failed");
    }
    running
}

#[test]
fn push_and_pull_killed_at_random_moments_then_run_again_lose_nothing() {
    if !have_git() {
        return;
    }
    let (keys, tmp, _, a, b) = two_stores_on_one_remote("sha1");
    let claims = shared_graph(&keys, 60, 0xdead, "killed");
    // How long a whole push of a wave and a whole pull take here (a loaded machine is
    // slower): kills land at uniform moments within that time.
    let cal_remote = bare(tmp.path(), "calibrate.git", "sha1");
    let cal = store_with_remote(tmp.path(), "cal", &keys, &cal_remote);
    let cal2 = store_with_remote(tmp.path(), "cal2", &keys, &cal_remote);
    add(&cal, &claims[..20], &tmp.path().join("cal.jsonl"));
    let timed = |store: &Path, verb: &str| {
        let started = std::time::Instant::now();
        exchange(store, verb);
        started.elapsed().as_micros() as u64
    };
    let push_time = timed(&cal, "push");
    add(&cal, &claims[20..], &tmp.path().join("cal.jsonl"));
    exchange(&cal, "push");
    let pull_time = timed(&cal2, "pull");

    let mut rng = Rng::new(0x51c);
    let mut killed = 0;
    // Push in three waves, killing each push a few times before letting one finish.
    for wave in claims.chunks(20) {
        add(&a, wave, &tmp.path().join("a.jsonl"));
        for _ in 0..4 {
            if kill_after(&a, "push", Duration::from_micros(rng.range(0, push_time))) {
                killed += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(200)); // let orphaned git children finish
        exchange(&a, "push");
    }
    // Pull, killed the same way; fsck is clean after every kill, and some kills land
    // part-way through the ingest.
    let mut partial = 0;
    for _ in 0..8 {
        if kill_after(&b, "pull", Duration::from_micros(rng.range(0, pull_time))) {
            killed += 1;
        }
        assert_fsck_clean(&b);
        let held = run(&b, &["status", "--all", "--limit", "1"]).json["data"]["as_of"]
            .as_u64()
            .unwrap();
        if held > 0 && held < claims.len() as u64 {
            partial += 1;
        }
    }
    std::thread::sleep(Duration::from_millis(200));
    exchange(&b, "pull");
    eprintln!(
        "{killed} of 20 runs killed mid-way (push {push_time} µs, pull {pull_time} µs whole); \
         {partial} pull kills left the store part-way"
    );
    // How many kills land mid-way depends on the machine's speed; a few always do.
    assert!(killed >= 2, "only {killed} runs were killed mid-way");
    let union: BTreeSet<String> = claims.iter().map(|s| canonical(&s.envelope)).collect();
    assert_eq!(exported(&a, tmp.path()), union);
    assert_eq!(exported(&b, tmp.path()), union);
    assert_fsck_clean(&a);
    assert_fsck_clean(&b);
    // And a last sync from each changes nothing.
    assert_eq!(changed(&exchange(&a, "sync")), 0);
    assert_eq!(changed(&exchange(&b, "sync")), 0);
}

/// An exchange stopped part-way (here through the library's stop hook, deterministically
/// after a number of envelopes) records nothing as exchanged, and the next run completes it.
#[test]
fn an_interrupted_pull_or_push_is_completed_by_the_next_run() {
    if !have_git() {
        return;
    }
    use elench::sync::{Options, Session};
    let (keys, tmp, _, a, b) = two_stores_on_one_remote("sha256");
    let claims = shared_graph(&keys, 30, 0x1e7, "interrupted");
    add(&a, &claims, &tmp.path().join("a.jsonl"));

    let session = |store: &Path, stop_after: usize, pull: bool| {
        let s = elench::store::Store::open(
            store,
            &elench::store::Options::new(Duration::from_secs(30)),
        )
        .unwrap();
        let asked = std::cell::Cell::new(0usize);
        let stop = || {
            asked.set(asked.get() + 1);
            asked.get() > stop_after
        };
        let opts = Options {
            wait: Duration::from_secs(30),
            progress: false,
            stop: &stop,
            connect_timeout: None,
            reaper: &elench::reaper::Reaper::new(),
        };
        let mut session = Session::open(&s, "origin", opts).unwrap();
        if pull {
            session.pull().unwrap()
        } else {
            session.push().unwrap()
        }
    };
    // A push stopped before its commit is written pushes nothing.
    let stopped = session(&a, 0, false);
    assert!(stopped.interrupted);
    assert_eq!(stopped.pushed, 0);
    assert_eq!(stopped.remote_head, None);
    assert_eq!(exchange(&a, "push")["pushed"].as_u64(), Some(30));

    // A pull stopped after 10 envelopes keeps those 10; the next pull takes the other 20.
    let stopped = session(&b, 10, true);
    assert!(stopped.interrupted);
    assert_eq!(
        stopped.created, 11,
        "the envelope in hand is finished before stopping"
    );
    let rest = exchange(&b, "pull");
    assert_eq!(rest["created"].as_u64(), Some(19), "{rest}");
    assert_eq!(exchange(&b, "pull")["fetched"].as_u64(), Some(0));
    let union: BTreeSet<String> = claims.iter().map(|s| canonical(&s.envelope)).collect();
    assert_eq!(exported(&b, tmp.path()), union);
    assert_fsck_clean(&b);
}

#[test]
fn remotes_are_listed_and_bad_names_unknown_remotes_and_clashes_fail_with_their_codes() {
    if !have_git() {
        return;
    }
    let (keys, tmp, remote) = keys_tmp_remote("sha1");
    let s = store_with_remote(tmp.path(), "s", &keys, &remote);
    let out = run(&s, &["remote", "add", "backup", "relative/path.git"]);
    assert_eq!(out.code, 0, "{}", out.json);
    let listed = run(&s, &["remote", "list"]);
    let names: Vec<&str> = listed.json["data"]["remotes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["backup", "origin"]);
    // A relative path is stored absolute: git runs elsewhere.
    let backup = &listed.json["data"]["remotes"][0]["url"];
    assert!(
        Path::new(backup.as_str().unwrap()).is_absolute(),
        "{backup}"
    );
    // Adding the same again changes nothing; another URL under the name is refused.
    let same = run(&s, &["remote", "add", "origin", remote.to_str().unwrap()]);
    assert_eq!((same.code, &same.json["data"]["added"]), (0, &json!(false)));
    let clash = run(&s, &["remote", "add", "origin", "/elsewhere.git"]);
    assert_eq!(clash.code, 2);
    assert_eq!(clash.json["error"]["code"], json!("REMOTE_EXISTS"));
    let bad = run(&s, &["remote", "add", "../up", "/x.git"]);
    assert_eq!(bad.code, 2);
    assert_eq!(bad.json["error"]["code"], json!("INVALID_AGENT_INPUT"));
    assert_eq!(bad.json["error"]["input_value"], json!("../up"));
    let bad = run(&s, &["remote", "add", "a..b", "/x.git"]);
    assert_eq!(bad.code, 2);
    assert_eq!(bad.json["error"]["code"], json!("BAD_ARGUMENTS"));
    let unknown = run(&s, &["pull", "nowhere"]);
    assert_eq!(unknown.code, 5);
    assert_eq!(unknown.json["error"]["code"], json!("REMOTE_NOT_FOUND"));
    // A remote that is not there: git's failure, retryable, and the store is unchanged.
    let gone = run(&s, &["push", "backup"]);
    assert_eq!(gone.code, 12, "{}", gone.json);
    assert_eq!(gone.json["error"]["code"], json!("GIT_FAILED"));
    assert_eq!(gone.json["error"]["retryable"], json!(true));
}

/// The cost of an exchange follows what is new, not the size of the log: `examined` (remote
/// entries a pull looked at) and `compared` (local envelopes a push looked up) count only
/// what arrived since the last exchange.
#[test]
fn an_exchange_looks_only_at_what_is_new_since_the_last_one() {
    if !have_git() {
        return;
    }
    let (keys, tmp, _, a, b) = two_stores_on_one_remote("sha1");
    let claims = shared_graph(&keys, 63, 0x9e7, "cost");
    add(&a, &claims[..40], &tmp.path().join("a.jsonl"));
    add(&b, &claims[40..60], &tmp.path().join("b.jsonl"));
    let counts = |d: &Value| {
        (
            d["examined"].as_u64().unwrap(),
            d["compared"].as_u64().unwrap(),
            d["created"].as_u64().unwrap(),
            d["pushed"].as_u64().unwrap(),
        )
    };
    // First exchanges look at everything there is.
    assert_eq!(counts(&exchange(&a, "sync")), (0, 40, 0, 40));
    assert_eq!(counts(&exchange(&b, "sync")), (40, 60, 40, 20));
    // A takes B's 20; what it pulled it need not push back, so it compares nothing.
    assert_eq!(counts(&exchange(&a, "sync")), (20, 0, 20, 0));
    // Converged: nothing is looked at.
    assert_eq!(counts(&exchange(&a, "sync")), (0, 0, 0, 0));
    assert_eq!(counts(&exchange(&b, "sync")), (0, 0, 0, 0));
    // Three new claims: A compares and pushes only those; B examines and takes only those.
    add(&a, &claims[60..], &tmp.path().join("a.jsonl"));
    assert_eq!(counts(&exchange(&a, "sync")), (0, 3, 0, 3));
    assert_eq!(counts(&exchange(&b, "sync")), (3, 0, 3, 0));
    assert_eq!(counts(&exchange(&a, "sync")), (0, 0, 0, 0));
}

/// The git processes `elench --store STORE VERB` ran, as the argument lists of their starts
/// (git's own trace, which elench leaves to git).
fn git_processes(store: &Path, verb: &str, tmp: &Path) -> Vec<Vec<String>> {
    let (out, processes) = git_run(store, verb, tmp);
    assert_eq!(out.code, 0, "{verb}: {}", out.json);
    processes
}

/// What `elench --store STORE VERB` answered, and the git processes it ran.
pub(crate) fn git_run(store: &Path, verb: &str, tmp: &Path) -> (common::Out, Vec<Vec<String>>) {
    let trace = tmp.join(format!("trace-{verb}.json"));
    let _ = std::fs::remove_file(&trace);
    let out = common::run_with(
        store,
        &[verb],
        &[("GIT_TRACE2_EVENT", trace.to_str().unwrap())],
    );
    let processes = std::fs::read_to_string(&trace)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "start")
        .map(|e| {
            let argv = e["argv"].as_array().cloned().unwrap_or_default();
            argv.iter()
                .filter_map(|a| a.as_str().map(str::to_owned))
                .collect()
        })
        .collect();
    (out, processes)
}

/// Asserts that `processes` are one `ls-remote` and what it ran to reach the remote: the
/// remote's head was all that was asked.
pub(crate) fn only_ls_remote(processes: &[Vec<String>]) {
    assert_eq!(count_with(processes, &["ls-remote"]), 1, "{processes:?}");
    let others: Vec<&Vec<String>> = processes
        .iter()
        .filter(|p| !p.iter().any(|a| a == "ls-remote" || a == "git-upload-pack"))
        .collect();
    assert!(others.is_empty(), "{others:?}");
}

/// Every file of a store's `sync/` folder (but the lock) with its inode and contents: a file
/// written again, even with the same bytes, is another inode.
pub(crate) fn sync_files(store: &Path) -> BTreeMap<String, (u64, Vec<u8>)> {
    use std::os::unix::fs::MetadataExt;
    let mut files = BTreeMap::new();
    let mut dirs = vec![store.join("sync")];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                dirs.push(e.path());
            } else if e.file_name() != "lock" {
                let name = e.path().strip_prefix(store).unwrap().display().to_string();
                files.insert(name, (meta.ino(), std::fs::read(e.path()).unwrap()));
            }
        }
    }
    files
}

/// How many of `processes` have every one of `args` among their arguments.
fn count_with(processes: &[Vec<String>], args: &[&str]) -> usize {
    processes
        .iter()
        .filter(|p| args.iter().all(|a| p.iter().any(|x| x == a)))
        .count()
}

#[test]
fn a_pull_reads_blobs_through_one_git_process_and_a_sync_asks_the_remote_once() {
    if !have_git() {
        return;
    }
    let (keys, tmp, _, a, b) = two_stores_on_one_remote("sha1");
    let claims = shared_graph(&keys, 12, 0x0b1, "procs");
    add(&a, &claims, &tmp.path().join("a.jsonl"));
    exchange(&a, "push");
    // The pull reads every blob through one `cat-file --batch`, and the checkpoint's
    // sequence that follows it reads none again.
    let pull = git_processes(&b, "pull", tmp.path());
    assert_eq!(count_with(&pull, &["cat-file", "--batch"]), 1, "{pull:?}");
    assert_eq!(count_with(&pull, &["ls-remote"]), 1, "{pull:?}");
    assert_eq!(exported(&a, tmp.path()), exported(&b, tmp.path()));
    // A sync with nothing new: one contact with the remote for pull, push and the
    // checkpoint's checks, and nothing written.
    let idle = git_processes(&b, "sync", tmp.path());
    assert_eq!(count_with(&idle, &["ls-remote"]), 1, "{idle:?}");
    assert_eq!(count_with(&idle, &["fetch"]), 0, "{idle:?}");
    assert_eq!(count_with(&idle, &["update-ref"]), 0, "{idle:?}");
    assert_eq!(count_with(&idle, &["fast-import"]), 0, "{idle:?}");
    // A sync that pushes asks once too, and the push lands.
    add(
        &b,
        &shared_graph(&keys, 2, 0x0b2, "procs-b"),
        &tmp.path().join("b.jsonl"),
    );
    let pushing = git_processes(&b, "sync", tmp.path());
    assert_eq!(count_with(&pushing, &["ls-remote"]), 1, "{pushing:?}");
    assert_eq!(count_with(&pushing, &["push"]), 1, "{pushing:?}");
    exchange(&a, "pull");
    assert_eq!(exported(&a, tmp.path()), exported(&b, tmp.path()));
}

/// A push writes its commit as a pack of its own: no `git fast-import` runs, on an empty
/// remote or on top of another store's commit, and what lands is whole to git (`fsck`) and
/// reaches the other store, in both object formats.
#[test]
fn a_push_writes_its_own_pack_and_git_finds_it_whole() {
    if !have_git() {
        return;
    }
    for format in ["sha1", "sha256"] {
        let (keys, tmp, remote, a, b) = two_stores_on_one_remote(format);
        let claims = shared_graph(&keys, 10, 0x9ac, "pack");
        add(&a, &claims[..6], &tmp.path().join("a.jsonl"));
        let first = git_processes(&a, "push", tmp.path());
        assert_eq!(count_with(&first, &["fast-import"]), 0, "{first:?}");
        assert_eq!(count_with(&first, &["push"]), 1, "{first:?}");
        add(&b, &claims[6..], &tmp.path().join("b.jsonl"));
        let on_top = git_processes(&b, "sync", tmp.path());
        assert_eq!(count_with(&on_top, &["fast-import"]), 0, "{on_top:?}");
        git_on(&remote, &["fsck", "--strict", "--no-dangling"], None);
        exchange(&a, "pull");
        assert_eq!(
            exported(&a, tmp.path()),
            exported(&b, tmp.path()),
            "{format}"
        );
        assert_eq!(exported(&a, tmp.path()).len(), 10, "{format}");
    }
}

/// A sync with nothing new on either side asks the remote for its head (one `ls-remote`)
/// and nothing more, and writes nothing: what earlier exchanges found of that very head (a
/// commit held here, its trust folder, no checkpoint in it) is remembered. Anything new on the
/// remote moves its head, and the next sync looks again.
#[test]
fn a_sync_with_nothing_new_runs_one_git_process_and_writes_nothing() {
    if !have_git() {
        return;
    }
    let (keys, tmp, remote, a, b) = two_stores_on_one_remote("sha1");
    let claims = shared_graph(&keys, 9, 0x1d1e, "idle");
    add(&a, &claims[..6], &tmp.path().join("a.jsonl"));
    exchange(&a, "sync");
    exchange(&b, "sync");
    // Converged: each store's next syncs are idle.
    for store in [&a, &b, &a, &b] {
        let before = sync_files(store);
        let idle = git_processes(store, "sync", tmp.path());
        only_ls_remote(&idle);
        assert_eq!(sync_files(store), before, "{}", store.display());
    }
    // The remote moves (a push of B's): A's idle-looking sync sees it and takes what is new.
    add(&b, &claims[6..8], &tmp.path().join("b.jsonl"));
    assert_eq!(exchange(&b, "sync")["pushed"], json!(2));
    let moved = exchange(&a, "sync");
    assert_eq!(moved["created"], json!(2), "{moved}");
    // Someone moves the remote back to before B's push: A's next sync says so.
    let head = git_on(&remote, &["rev-parse", "refs/elench/log"], None);
    let back = git_on(&remote, &["rev-parse", "refs/elench/log~1"], None);
    git_on(
        &remote,
        &["update-ref", "refs/elench/log", back.trim(), head.trim()],
        None,
    );
    let rewound = run(&a, &["sync"]);
    assert_eq!(
        rewound.json["error"]["code"],
        json!("REMOTE_REWOUND"),
        "{}",
        rewound.json
    );
    // That sync wrote B's envelopes back; once more, nothing is new and nothing is asked.
    let idle = git_processes(&a, "sync", tmp.path());
    only_ls_remote(&idle);
    assert_eq!(exported(&a, tmp.path()), exported(&b, tmp.path()));
}

/// Commits `files` on top of the remote's log (or as its first commit) with git itself, as
/// anyone with write access to the remote could.
fn commit_on_log(remote: &Path, files: &[(String, String)]) {
    let files: Vec<(&str, String, String)> = files
        .iter()
        .map(|(p, c)| ("100644", p.clone(), c.clone()))
        .collect();
    commit_on_log_with_modes(remote, &files);
}

/// As [`commit_on_log`], each file with its git mode.
fn commit_on_log_with_modes(remote: &Path, files: &[(&str, String, String)]) {
    let parent = Command::new("git")
        .arg("--git-dir")
        .arg(remote)
        .args(["rev-parse", "--verify", "--quiet", "refs/elench/log"])
        .output()
        .unwrap();
    let parent = String::from_utf8(parent.stdout).unwrap().trim().to_owned();
    let mut stream = String::from(
        "commit refs/elench/log\ncommitter someone <someone@example.org> 1700000000 +0000\ndata 8\nby hand\n",
    );
    if !parent.is_empty() {
        stream.push_str(&format!("from {parent}\n"));
    }
    for (mode, path, content) in files {
        stream.push_str(&format!(
            "M {mode} inline {path}\ndata {}\n{content}\n",
            content.len()
        ));
    }
    git_on(remote, &["fast-import", "--quiet"], Some(&stream));
}

/// Every file of the remote's log and its content.
fn remote_files(remote: &Path) -> BTreeMap<String, String> {
    let git = |args: &[&str]| git_on(remote, args, None);
    git(&["ls-tree", "-r", "--name-only", "refs/elench/log"])
        .lines()
        .map(|p| {
            (
                p.to_owned(),
                git(&["show", &format!("refs/elench/log:{p}")]),
            )
        })
        .collect()
}

fn status_of(store: &Path, id: &str) -> String {
    let out = run(store, &["status", id]);
    assert_eq!(out.code, 0, "status {id}: {}", out.json);
    out.json["data"]["claims"][0]["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn warnings_with(out: &Value, code: &str) -> Vec<String> {
    out["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["code"] == code)
        .map(|w| w["message"].as_str().unwrap().to_owned())
        .collect()
}

/// Counts of a pull add up, every field there.
fn assert_counts_add_up(d: &Value) {
    let field = |f: &str| {
        d[f].as_u64()
            .unwrap_or_else(|| panic!("data lacks {f}: {d}"))
    };
    assert_eq!(
        field("fetched"),
        field("created") + field("merged") + field("noop") + field("rejected") + field("ignored"),
        "{d}"
    );
}

#[test]
fn whatever_holds_an_envelopes_path_on_the_remote_the_envelope_still_reaches_every_store() {
    if !have_git() {
        return;
    }
    let (keys, tmp, remote, a, b) = two_stores_on_one_remote("sha1");
    let x = ClaimBuilder::assertion("parse is total").sign(&keys);
    let v = record(&keys, "verification", "tests pass", &[&x.id], &[]);
    add(&a, &[x.clone(), v.clone()], &tmp.path().join("xv.jsonl"));
    exchange(&a, "push");
    exchange(&b, "sync");
    assert_eq!(status_of(&b, &x.id), "verified");

    // The falsification's path holds junk before `a` pushes it.
    let f = record(&keys, "falsification", "a counterexample", &[&x.id], &[]);
    add(&a, std::slice::from_ref(&f), &tmp.path().join("f.jsonl"));
    let f_path = path_of(&f.envelope, &f.id);
    commit_on_log(&remote, &[(f_path.clone(), "junk".into())]);
    let out = push_expecting(&a, 1);
    let conflicts = warnings_with(&out.json, "REMOTE_CONFLICT");
    assert_eq!(conflicts.len(), 1, "{}", out.json);
    assert!(conflicts[0].contains(&f_path), "{conflicts:?}");
    let beside = format!("{f_path}~1");
    assert_eq!(
        out.json["data"]["conflicts"],
        json!([{"path": f_path, "envelope_path": f_path, "placed_at": beside}])
    );
    let files = remote_files(&remote);
    assert_eq!(files[&f_path], "junk", "what held the path is kept");
    assert_eq!(canonical(&files[&beside]), canonical(&f.envelope));
    // Found there next time: nothing more to write.
    let again = run(&a, &["push"]);
    assert_eq!(again.json["data"]["pushed"], json!(0), "{}", again.json);

    // `b` takes the falsification from beside the junk; the junk is reported, and rejected.
    let pulled = run(&b, &["pull"]);
    assert_eq!(pulled.code, 3, "{}", pulled.json);
    assert_eq!(pulled.json["data"]["created"], json!(1), "{}", pulled.json);
    assert_counts_add_up(&pulled.json["data"]);
    assert!(warnings_with(&pulled.json, "REMOTE_CONFLICT")
        .iter()
        .any(|w| w.contains(&f_path)));
    assert_eq!(status_of(&b, &x.id), "falsified");

    // The envelope's very bytes at its path, as a symbolic link: push counts it as there,
    // so pull reads it too.
    let w = ClaimBuilder::assertion("w").sign(&keys);
    add(&a, std::slice::from_ref(&w), &tmp.path().join("w.jsonl"));
    commit_on_log_with_modes(
        &remote,
        &[(
            "120000",
            path_of(&w.envelope, &w.id),
            canonical(&w.envelope),
        )],
    );
    let out = run(&a, &["push"]);
    assert_eq!(out.json["data"]["pushed"], json!(0), "{}", out.json);
    let pulled = exchange_allowing_rejections(&b, "pull");
    assert_eq!(pulled["created"], json!(1), "{pulled}");
    assert_eq!(run(&b, &["status", &w.id]).code, 0);

    // Another valid envelope at a path, junk at the first place beside it, and a file where
    // the folder of a third claim should be: each envelope lands at the next free place.
    let y = ClaimBuilder::assertion("y").sign(&keys);
    let g = ClaimBuilder::assertion("g, at y's path").sign(&keys);
    let z = ClaimBuilder::assertion("z").sign(&keys);
    let u = ClaimBuilder::assertion("u, whose path is a folder").sign(&keys);
    add(
        &a,
        &[y.clone(), z.clone(), u.clone()],
        &tmp.path().join("yzu.jsonl"),
    );
    let u_path = path_of(&u.envelope, &u.id);
    let y_path = path_of(&y.envelope, &y.id);
    let z_path = path_of(&z.envelope, &z.id);
    let z_folder = z_path.rsplit_once('/').unwrap().0.to_owned();
    commit_on_log(
        &remote,
        &[
            (y_path.clone(), canonical(&g.envelope)),
            (format!("{y_path}~1"), "more junk".into()),
            (z_folder.clone(), "a file, not a folder".into()),
            (format!("{u_path}/inside"), "a file in a folder".into()),
        ],
    );
    let out = push_expecting(&a, 3);
    let mut placed: Vec<(String, String)> = out.json["data"]["conflicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap().to_owned(),
                c["placed_at"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    placed.sort();
    let z_beside = format!("{z_folder}~1/{}", z_path.rsplit_once('/').unwrap().1);
    let mut expected = vec![
        (y_path.clone(), format!("{y_path}~2")),
        (z_folder.clone(), z_beside.clone()),
        (u_path.clone(), format!("{u_path}~1")),
    ];
    expected.sort();
    assert_eq!(placed, expected, "{}", out.json);
    let files = remote_files(&remote);
    assert_eq!(files[&z_folder], "a file, not a folder");
    assert_eq!(canonical(&files[&z_beside]), canonical(&z.envelope));
    assert_eq!(canonical(&files[&y_path]), canonical(&g.envelope));
    assert_eq!(files[&format!("{u_path}/inside")], "a file in a folder");

    // `b` gets y, z, u and g (from y's path). g was pulled from a path not its own: b's next
    // push writes it at its own path, where every other store looks for it.
    let pulled = exchange_allowing_rejections(&b, "pull");
    assert_eq!(pulled["created"], json!(4), "{pulled}");
    push_expecting(&b, 1);
    let g_path = path_of(&g.envelope, &g.id);
    assert_eq!(
        canonical(&remote_files(&remote)[&g_path]),
        canonical(&g.envelope)
    );
    assert_eq!(
        exported(&a, tmp.path()).len() + 1,
        exported(&b, tmp.path()).len()
    );
    exchange_allowing_rejections(&a, "pull");
    assert_eq!(exported(&a, tmp.path()), exported(&b, tmp.path()));

    // What `a` pushed long ago, overwritten: here by a symbolic link of other bytes, a
    // change of type. `a` notices at its next push and puts the envelope back, beside it.
    let x_path = path_of(&x.envelope, &x.id);
    commit_on_log_with_modes(&remote, &[("120000", x_path.clone(), "junk".into())]);
    let out = push_expecting(&a, 1);
    assert!(warnings_with(&out.json, "REMOTE_CONFLICT")
        .iter()
        .any(|w| w.contains(&x_path)));
    assert_eq!(
        canonical(&remote_files(&remote)[&format!("{x_path}~1")]),
        canonical(&x.envelope)
    );
    assert_fsck_clean(&a);
    assert_fsck_clean(&b);
}

/// `add` of a bundle file `file` holding `text` as it is (lines of any kind).
fn add_text(store: &Path, file: &Path, text: &str) -> common::Out {
    std::fs::write(file, text).unwrap();
    run(store, &["add", file.to_str().unwrap()])
}

/// A pull or sync that may leave rejected envelopes on the remote (exit 0 or 3): its data.
fn exchange_allowing_rejections(store: &Path, verb: &str) -> Value {
    let out = run(store, &[verb]);
    assert!(
        out.code == 0 || (out.code == 3 && out.json["error"]["code"] == "PARTIAL_FAILURE"),
        "{verb}: {}\n{}",
        out.json,
        out.stderr
    );
    assert_counts_add_up(&out.json["data"]);
    out.json["data"].clone()
}

/// An in-toto statement of another predicate type (SLSA provenance), signed by a key no
/// store trusts; and a DSSE envelope of another payload type.
fn foreign_envelopes(keys: &Keys) -> (String, String) {
    let key = &keys.stranger.signing;
    let keyid = elench::keys::keyid(&key.verifying_key());
    let slsa = json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "elench", "digest": {"sha256": "ab".repeat(32)}}],
        "predicateType": "https://slsa.dev/provenance/v1",
        "predicate": {"buildDefinition": {"buildType": "https://example.org/build"}},
    });
    let slsa = elench::envelope::sign_envelope(
        elench::envelope::PAYLOAD_TYPE,
        slsa.to_string().as_bytes(),
        key,
        &keyid,
    );
    let sbom = elench::envelope::sign_envelope(
        "application/vnd.cyclonedx+json",
        br#"{"bomFormat":"CycloneDX"}"#,
        key,
        &keyid,
    );
    (slsa, sbom)
}

/// The envelope with a second signature, by a key no store trusts.
fn cosigned_by_stranger(keys: &Keys, envelope: &str) -> String {
    let mut v: Value = serde_json::from_str(envelope).unwrap();
    let payload = base64::Engine::decode(
        &base64::engine::general_purpose::STANDARD,
        v["payload"].as_str().unwrap(),
    )
    .unwrap();
    let other: Value = serde_json::from_str(&elench::envelope::sign_envelope(
        v["payloadType"].as_str().unwrap(),
        &payload,
        &keys.stranger.signing,
        &elench::keys::keyid(&keys.stranger.verifying_key()),
    ))
    .unwrap();
    v["signatures"]
        .as_array_mut()
        .unwrap()
        .push(other["signatures"][0].clone());
    v.to_string()
}

#[test]
fn a_pull_that_leaves_rejections_is_partial_and_its_counts_add_up_whatever_the_remote_holds() {
    if !have_git() {
        return;
    }
    let (keys, tmp, remote) = keys_tmp_remote("sha1");
    let good = ClaimBuilder::assertion("good").sign(&keys);
    let cosigned = cosigned_by_stranger(
        &keys,
        &ClaimBuilder::assertion("cosigned").sign(&keys).envelope,
    );
    let cosigned_id = serde_json::from_slice::<Value>(
        &base64::Engine::decode(
            &base64::engine::general_purpose::STANDARD,
            serde_json::from_str::<Value>(&cosigned).unwrap()["payload"]
                .as_str()
                .unwrap(),
        )
        .unwrap(),
    )
    .unwrap()["predicate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (slsa, sbom) = foreign_envelopes(&keys);
    commit_on_log(
        &remote,
        &[
            (path_of(&good.envelope, &good.id), canonical(&good.envelope)),
            // The same blob again, at a path of no layout shape.
            ("v1/elsewhere/copy".into(), canonical(&good.envelope)),
            ("v1/junk".into(), "not json".into()),
            ("v1/provenance/slsa".into(), slsa),
            ("v1/provenance/sbom".into(), sbom),
            (path_of(&cosigned, &cosigned_id), canonical(&cosigned)),
        ],
    );
    let store = store_with_remote(tmp.path(), "s", &keys, &remote);
    for verb in ["pull", "sync"] {
        let out = run(&store, &[verb]);
        assert_eq!(out.code, 3, "{verb}: {}", out.json);
        assert_eq!(out.json["ok"], json!(false));
        assert_eq!(out.json["error"]["code"], "PARTIAL_FAILURE", "{}", out.json);
        assert!(
            out.json["error"]["message"]
                .as_str()
                .unwrap()
                .contains("v1/junk"),
            "{}",
            out.json
        );
        let d = &out.json["data"];
        assert_counts_add_up(d);
        assert_eq!(d["rejected"], json!(1), "{d}");
        assert_eq!(d["rejections"][0]["path"], "v1/junk", "{d}");
        if verb == "pull" {
            assert_eq!(d["fetched"], json!(6), "{d}");
            assert_eq!(d["created"], json!(2), "{d}");
            assert_eq!(d["noop"], json!(1), "{d}");
            assert_eq!(d["ignored"], json!(2), "{d}");
            let foreign = warnings_with(&out.json, "FOREIGN_STATEMENT");
            assert_eq!(foreign.len(), 1, "{}", out.json);
            for p in ["v1/provenance/slsa", "v1/provenance/sbom"] {
                assert!(foreign[0].contains(p), "{foreign:?}");
            }
            let unverified = warnings_with(&out.json, "UNVERIFIED_SIGNATURE");
            assert_eq!(unverified.len(), 1, "{}", out.json);
            assert!(unverified[0].contains(&cosigned_id), "{unverified:?}");
        } else {
            // Only what was refused is looked at again; foreign entries are not.
            assert_eq!(d["fetched"], json!(1), "{d}");
            assert_eq!(d["ignored"], json!(0), "{d}");
        }
    }
    // A remote with nothing refused: exit 0.
    let clean = bare(tmp.path(), "clean.git", "sha1");
    let other = ClaimBuilder::assertion("other").sign(&keys);
    commit_on_log(
        &clean,
        &[(
            path_of(&other.envelope, &other.id),
            canonical(&other.envelope),
        )],
    );
    let out = run(&store, &["remote", "add", "clean", clean.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.json);
    let out = run(&store, &["pull", "clean"]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(out.json["error"], Value::Null);
    assert_counts_add_up(&out.json["data"]);
}

#[test]
fn a_remote_log_ref_that_names_no_commit_is_refused() {
    if !have_git() {
        return;
    }
    let (keys, tmp, remote, a, _) = two_stores_on_one_remote("sha1");
    let x = ClaimBuilder::assertion("x").sign(&keys);
    add(&a, std::slice::from_ref(&x), &tmp.path().join("x.jsonl"));
    exchange(&a, "push");
    let git = |args: &[&str], input: Option<&str>| git_on(&remote, args, input).trim().to_owned();
    let commit = git(&["rev-parse", "refs/elench/log"], None);
    let tree = git(&["rev-parse", "refs/elench/log^{tree}"], None);
    let tag = git(
        &["mktag"],
        Some(&format!(
            "object {commit}\ntype commit\ntag t\ntagger someone <s@example.org> 1700000000 +0000\n\na tag\n"
        )),
    );
    // A fresh store each time: nothing of the real log is known there beforehand.
    for (i, (kind, oid)) in [("tree", &tree), ("tag", &tag)].into_iter().enumerate() {
        git(&["update-ref", "refs/elench/log", oid], None);
        let fresh = store_with_remote(tmp.path(), &format!("fresh{i}"), &keys, &remote);
        add(
            &fresh,
            &[ClaimBuilder::assertion(&format!("mine {i}")).sign(&keys)],
            &tmp.path().join("mine.jsonl"),
        );
        for verb in ["pull", "push", "sync"] {
            let out = run(&fresh, &[verb]);
            assert_eq!(out.code, 2, "{kind} {verb}: {}", out.json);
            assert_eq!(
                out.json["error"]["code"], "REMOTE_NOT_A_LOG",
                "{}",
                out.json
            );
            let message = out.json["error"]["message"].as_str().unwrap();
            assert!(message.contains(&format!("a {kind}")), "{message}");
        }
        assert_eq!(run(&fresh, &["status", &x.id]).code, 5, "nothing taken");
        assert_eq!(
            git(&["rev-parse", "refs/elench/log"], None),
            *oid,
            "nothing written"
        );
    }
}

#[test]
fn a_bundle_with_other_attestations_adds_its_claims_and_ignores_the_rest() {
    let keys = Keys::new();
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("s");
    cli_store(&store, &keys, &tmp.path().join("pems"));
    let (slsa, sbom) = foreign_envelopes(&keys);
    let x = ClaimBuilder::assertion("x").sign(&keys);
    let y = ClaimBuilder::assertion("y").sign(&keys);
    let out = add_text(
        &store,
        &tmp.path().join("mixed.intoto.jsonl"),
        &format!("{slsa}\n{}\n{sbom}\n{}\n", x.envelope, y.envelope),
    );
    assert_eq!(out.code, 0, "{}", out.json);
    let d = &out.json["data"];
    assert_eq!(
        (
            d["created"].clone(),
            d["rejected"].clone(),
            d["ignored"].clone()
        ),
        (json!(2), json!(0), json!(2)),
        "{d}"
    );
    let lines: Vec<u64> = d["foreign"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, [1, 3]);
    let w = warnings_with(&out.json, "FOREIGN_STATEMENT");
    assert_eq!(w.len(), 1, "{}", out.json);
    assert!(w[0].contains("line(s) 1 (predicateType https://slsa.dev/provenance/v1), 3 (payloadType application/vnd.cyclonedx+json)"), "{w:?}");

    // Nothing but other attestations: nothing to do, nothing wrong.
    let out = add_text(
        &store,
        &tmp.path().join("only.intoto.jsonl"),
        &format!("{slsa}\n{sbom}\n"),
    );
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(out.json["data"]["ignored"], json!(2));

    // An elench line that fails still fails, beside the ignored ones.
    let stranger = keys.sign(
        &ClaimBuilder::assertion("by a stranger").build(),
        common::Signer::Stranger,
    );
    let z = ClaimBuilder::assertion("z").sign(&keys);
    let out = add_text(
        &store,
        &tmp.path().join("partial.intoto.jsonl"),
        &format!("{slsa}\n{}\n{}\n", stranger.envelope, z.envelope),
    );
    assert_eq!(out.code, 3, "{}", out.json);
    assert_eq!(out.json["data"]["ignored"], json!(1));
    assert_eq!(out.json["data"]["rejections"][0]["line"], json!(2));

    // A lone file of another type was handed to elench as a claim: still refused.
    let out = add_text(&store, &tmp.path().join("provenance.dsse"), &slsa);
    assert_eq!(out.code, 2, "{}", out.json);
    assert_ne!(out.json["error"]["code"], "FOREIGN_STATEMENT");
}

#[test]
fn a_file_where_the_layout_folder_should_be_gives_way_to_the_envelopes() {
    if !have_git() {
        return;
    }
    let (keys, tmp, remote) = keys_tmp_remote("sha256");
    commit_on_log(&remote, &[("v1".into(), "not a folder".into())]);
    let a = store_with_remote(tmp.path(), "a", &keys, &remote);
    let x = ClaimBuilder::assertion("x").sign(&keys);
    add(&a, std::slice::from_ref(&x), &tmp.path().join("x.jsonl"));
    let out = push_expecting(&a, 1);
    let x_path = path_of(&x.envelope, &x.id);
    assert_eq!(
        out.json["data"]["conflicts"],
        json!([{"path": "v1", "envelope_path": x_path, "placed_at": x_path}])
    );
    assert_eq!(warnings_with(&out.json, "REMOTE_CONFLICT").len(), 1);
    assert_eq!(
        remote_files(&remote).keys().cloned().collect::<Vec<_>>(),
        [x_path]
    );
    let b = store_with_remote(tmp.path(), "b", &keys, &remote);
    assert_eq!(exchange(&b, "pull")["created"], json!(1));
}

/// Makes the bare `remote` refuse every push, as a read-only token, a protected ref or a
/// policy hook does: its pre-receive hook says why on stderr, counts its runs in
/// `REMOTE/hook-runs`, and exits 1.
fn refuse_pushes(remote: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let hook = remote.join("hooks/pre-receive");
    std::fs::write(
        &hook,
        "#!/bin/sh\necho run >> \"$GIT_DIR/hook-runs\"\necho 'denied: this token may not write' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_push_the_remote_refuses_is_reported_as_refused_with_gits_words_and_not_retried() {
    if !have_git() {
        return;
    }
    let (keys, tmp, remote, a, _b) = two_stores_on_one_remote("sha1");
    let x = ClaimBuilder::assertion("x").sign(&keys);
    add(&a, std::slice::from_ref(&x), &tmp.path().join("x.jsonl"));
    refuse_pushes(&remote);
    let started = std::time::Instant::now();
    let out = run(&a, &["push"]);
    let took = started.elapsed();
    // Not contention: exit 4 (a precondition: write access), not 12 (retry).
    assert_eq!(out.code, 4, "{}", out.json);
    let error = &out.json["error"];
    assert_eq!(error["code"], "PUSH_REFUSED", "{}", out.json);
    assert_eq!(error["retryable"], json!(false), "{}", out.json);
    let message = error["message"].as_str().unwrap();
    // git's own words: its verdict and what the remote said.
    assert!(message.contains("pre-receive hook declined"), "{message}");
    assert!(
        message.contains("denied: this token may not write"),
        "{message}"
    );
    assert!(!message.contains("try again"), "{message}");
    // Asked once, not twelve times over seconds.
    let runs = std::fs::read_to_string(remote.join("hook-runs")).unwrap();
    assert_eq!(runs.lines().count(), 1, "the hook ran {runs:?}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    // `sync` reports the same after its pull.
    let out = run(&a, &["sync"]);
    assert_eq!(out.code, 4, "{}", out.json);
    assert_eq!(out.json["error"]["code"], "PUSH_REFUSED");
}

#[test]
fn a_submodule_entry_at_an_envelopes_path_is_reported_by_pull_as_by_push() {
    if !have_git() {
        return;
    }
    let (keys, tmp, remote, a, b) = two_stores_on_one_remote("sha1");
    let x = ClaimBuilder::assertion("parse is total").sign(&keys);
    add(&a, std::slice::from_ref(&x), &tmp.path().join("x.jsonl"));
    exchange(&a, "push");
    exchange(&b, "pull");
    // A submodule (a gitlink, naming some commit) at the falsification's path, before
    // either store pushes it; and one at a path of the layout's shape naming no envelope.
    let f = record(&keys, "falsification", "a counterexample", &[&x.id], &[]);
    add(&a, std::slice::from_ref(&f), &tmp.path().join("f.jsonl"));
    let f_path = path_of(&f.envelope, &f.id);
    let some_commit = git_on(&remote, &["rev-parse", "refs/elench/log"], None);
    let some_commit = some_commit.trim();
    let stream = format!(
        "commit refs/elench/log\ncommitter someone <someone@example.org> 1700000000 +0000\n\
         data 8\nby hand\nfrom {some_commit}\nM 160000 {some_commit} {f_path}\n\n"
    );
    git_on(&remote, &["fast-import", "--quiet"], Some(&stream));

    // Pull names the path (today it said nothing: a gitlink is no blob).
    let pulled = run(&b, &["pull"]);
    assert_eq!(pulled.code, 0, "{}", pulled.json);
    let warned = warnings_with(&pulled.json, "REMOTE_CONFLICT");
    assert_eq!(warned.len(), 1, "{}", pulled.json);
    assert!(warned[0].contains(&f_path), "{warned:?}");
    assert!(warned[0].contains("submodule"), "{warned:?}");
    assert_eq!(
        pulled.json["data"]["conflicts"],
        json!([{"path": f_path, "envelope_path": f_path, "placed_at": null}])
    );
    // Push reports it and writes the falsification beside it; pull then takes it.
    let out = push_expecting(&a, 1);
    assert_eq!(warnings_with(&out.json, "REMOTE_CONFLICT").len(), 1);
    let pulled = exchange(&b, "pull");
    assert_eq!(pulled["created"], json!(1), "{pulled}");
    assert_eq!(status_of(&b, &x.id), "falsified");
}
