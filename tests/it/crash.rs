//! SIGKILL at random points, through the real binary: 50 kills during bulk adds and 50 near
//! the end of short commands (`status`, `keys add`, `keys retire`, a single `add`). After
//! each, the store opens, `fsck` is clean and nothing acknowledged is missing; at the end the
//! statuses equal those of a store built from the export.

use crate::common;

use common::{
    cli_store, elench_path, export, graph, run, write_bundle, ClaimBuilder, Keys, Rng, Signed,
};
use serde_json::Value;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Instant;

fn spawn(store: &Path, args: &[&str], stderr: bool) -> Child {
    std::process::Command::new(elench_path())
        .arg("--store")
        .arg(store)
        .args(args)
        .env_remove("ELENCH_STORE")
        .env_remove("CI")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(if stderr {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .spawn()
        .expect("elench starts")
}

/// The store is usable and consistent.
fn assert_sound(store: &Path, why: &str) {
    let out = run(store, &["fsck"]);
    assert_eq!(out.code, 0, "{why}: fsck: {}", out.json);
}

fn status_all(store: &Path) -> Value {
    let out = run(store, &["status", "--all", "--limit", "10000"]);
    assert_eq!(out.code, 0, "{}", out.json);
    let mut claims = out.json["data"]["claims"].as_array().unwrap().clone();
    for c in &mut claims {
        let o = c.as_object_mut().unwrap();
        o.remove("seq");
        o.remove("history");
    }
    claims.sort_by_key(|c| c["id"].as_str().unwrap().to_owned());
    Value::Array(claims)
}

/// Statuses equal those of a fresh store fed the export.
fn assert_fold_of_export(store: &Path, keys: &Keys, tmp: &Path) {
    let bundle = tmp.join("export.intoto.jsonl");
    export(store, &bundle);
    let fresh = tmp.join(format!("fresh-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&fresh);
    cli_store(&fresh, keys, &tmp.join("pems"));
    let out = run(&fresh, &["add", bundle.to_str().unwrap()]);
    assert!(out.code == 0 || out.code == 2, "{}", out.json);
    assert!(
        status_all(store) == status_all(&fresh),
        "statuses differ from a fold of the export"
    );
    std::fs::remove_dir_all(&fresh).unwrap();
}

#[test]
fn fifty_kills_during_bulk_adds_lose_nothing_acknowledged() {
    let keys = Keys::new();
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    cli_store(&store, &keys, &tmp.path().join("pems"));
    let claims = graph(&keys, 1500, 0xc4a5_0001, "crash");
    let bundle = tmp.path().join("batch.intoto.jsonl");

    // How long a whole add of the batch takes here, on a scratch store: kills land anywhere
    // in that span.
    let scratch = tmp.path().join("scratch");
    cli_store(&scratch, &keys, &tmp.path().join("pems"));
    write_bundle(&bundle, &claims);
    let t = Instant::now();
    assert_eq!(run(&scratch, &["add", bundle.to_str().unwrap()]).code, 0);
    let full = t.elapsed();

    let mut rng = Rng::new(0xfee1_600d);
    let mut acknowledged: BTreeSet<String> = BTreeSet::new();
    let mut mid_batch = 0;
    for round in 0..50 {
        let remaining: Vec<&Signed> = claims
            .iter()
            .filter(|c| !acknowledged.contains(&c.id))
            .collect();
        let remaining = if remaining.len() < 200 {
            // Near the end: start over on more of the batch (mostly noops now) so kills still
            // land mid-batch.
            claims.iter().collect()
        } else {
            remaining
        };
        write_bundle(&bundle, remaining.iter().copied());
        let mut child = spawn(&store, &["add", bundle.to_str().unwrap()], true);
        let stderr = child.stderr.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut lines = Vec::new();
            let mut r = BufReader::new(stderr);
            let mut buf = Vec::new();
            while matches!(r.read_until(b'\n', &mut buf), Ok(n) if n > 0) {
                // A line cut short by the kill acknowledges nothing.
                if buf.ends_with(b"\n") {
                    lines.push(String::from_utf8_lossy(&buf).trim_end().to_owned());
                }
                buf.clear();
            }
            lines
        });
        let delay = full.mul_f64(rng.range(0, 1000) as f64 / 1000.0);
        std::thread::sleep(delay);
        let running = child.try_wait().unwrap().is_none();
        let _ = child.kill();
        let status = child.wait().unwrap();
        if running {
            mid_batch += 1;
        } else {
            assert!(status.success(), "round {round}: add failed on its own");
        }
        for line in reader.join().unwrap() {
            let mut words = line.split(' ');
            match (words.next(), words.next()) {
                (Some("created" | "noop" | "merged"), Some(id)) => {
                    acknowledged.insert(id.to_owned());
                }
                (Some("rejected"), _) => {
                    panic!("round {round}: a valid envelope was rejected: {line}")
                }
                _ => {}
            }
        }
        assert_sound(&store, &format!("round {round} (killed after {delay:?})"));
        // Every acknowledged envelope is there.
        let present: BTreeSet<String> = status_all(&store)
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_owned())
            .collect();
        let missing: Vec<&String> = acknowledged.difference(&present).collect();
        assert!(
            missing.is_empty(),
            "round {round}: acknowledged but missing: {missing:?}"
        );
    }
    assert!(
        mid_batch >= 20,
        "only {mid_batch} of 50 kills landed mid-batch"
    );
    assert_fold_of_export(&store, &keys, tmp.path());
}

#[test]
fn fifty_kills_near_the_end_of_short_commands_leave_a_sound_store() {
    let keys = Keys::new();
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    cli_store(&store, &keys, &tmp.path().join("pems"));
    let base = graph(&keys, 60, 0xc4a5_0002, "short");
    let bundle = tmp.path().join("base.intoto.jsonl");
    write_bundle(&bundle, &base);
    assert_eq!(run(&store, &["add", bundle.to_str().unwrap()]).code, 0);
    let probe = base[10].id.clone();
    let mut rng = Rng::new(0x5407_7001);
    let mut added: Vec<String> = Vec::new();
    let mut retired = 0;
    let mut completed = 0;
    for round in 0..50usize {
        // A fresh key to add or retire, or a fresh envelope to add, each round.
        let fresh_key =
            ed25519_dalek::SigningKey::from_bytes(&[(round as u8).wrapping_add(100); 32]);
        let pem = tmp.path().join(format!("k{round}.pub.pem"));
        std::fs::write(
            &pem,
            elench::keys::public_key_pem(&fresh_key.verifying_key()).unwrap(),
        )
        .unwrap();
        let env_path = tmp.path().join(format!("one-{round}.dsse"));
        let one = ClaimBuilder::assertion(&format!("short command claim {round}"))
            .depends_on(&[&probe])
            .sign(&keys);
        std::fs::write(&env_path, &one.envelope).unwrap();
        let keyid = elench::keys::keyid(&fresh_key.verifying_key());
        let name = format!("k{round}");
        let (label, args): (&str, Vec<String>) = match round % 4 {
            0 => ("status", vec!["status".into(), probe.clone()]),
            1 => (
                "keys add",
                vec![
                    "keys".into(),
                    "add".into(),
                    "--role".into(),
                    "agent".into(),
                    "--name".into(),
                    name,
                    pem.to_str().unwrap().into(),
                ],
            ),
            2 => {
                // Trust it first (not killed), then retire it under the kill.
                let out = run(
                    &store,
                    &[
                        "keys",
                        "add",
                        "--role",
                        "agent",
                        "--name",
                        &name,
                        pem.to_str().unwrap(),
                    ],
                );
                assert_eq!(out.code, 0, "{}", out.json);
                (
                    "keys retire",
                    vec![
                        "keys".into(),
                        "retire".into(),
                        keyid.clone(),
                        "--yes".into(),
                    ],
                )
            }
            _ => ("add", vec!["add".into(), env_path.to_str().unwrap().into()]),
        };
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        // How long this command takes here, then a kill near its end.
        let t = Instant::now();
        let mut probe_run = spawn(&store, &["status", &probe], false);
        probe_run.wait().unwrap();
        let typical = t.elapsed();
        let mut child = spawn(&store, &argv, false);
        let delay = typical.mul_f64(0.5 + rng.range(0, 800) as f64 / 1000.0);
        std::thread::sleep(delay);
        let finished = child.try_wait().unwrap().is_some();
        let _ = child.kill();
        let status = child.wait().unwrap();
        if finished && status.success() {
            completed += 1;
            match label {
                "add" => added.push(one.id.clone()),
                "keys retire" => retired += 1,
                _ => {}
            }
        }
        assert_sound(
            &store,
            &format!("round {round}: {label} killed after {delay:?}"),
        );
        let present: BTreeSet<String> = status_all(&store)
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_owned())
            .collect();
        for id in &added {
            assert!(
                present.contains(id),
                "round {round}: acknowledged {id} is missing"
            );
        }
    }
    // Some runs completed and some were cut: the kills landed near the end.
    assert!(
        completed > 0 && completed < 50,
        "{completed} of 50 completed"
    );
    let keys_out = run(&store, &["keys", "list", "--limit", "1000"]);
    let retired_now = keys_out.json["data"]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["retired"] == Value::Bool(true))
        .count();
    assert!(
        retired_now >= retired,
        "an acknowledged retirement was lost"
    );
    assert_fold_of_export(&store, &keys, tmp.path());
}
