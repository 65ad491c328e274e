//! `elench check` through the binary: outcomes, records and their evidence, what is never
//! recorded, applicability, and what a check-made falsification revokes.

use crate::check_support;
use crate::common;

use check_support::{entry, outcome, proc_args, with, Bench};
use serde_json::json;
use sha2::{Digest, Sha256};

const FILES: &[(&str, &str)] = &[
    (
        "src/lib.rs",
        "pub fn parse(s: &str) -> u32 {\n    s.len() as u32\n}\n",
    ),
    (
        "src/unsafe_bits.rs",
        "unsafe fn raw() {}\n// unsafe in a comment\n",
    ),
    ("README.md", "tiny\n"),
];

#[test]
fn true_claims_are_verified_and_false_ones_falsified_with_evidence_show_prints() {
    let b = Bench::new(FILES);
    let yes = b.claim(r#"exists("src/lib.rs") && grep(/unsafe\s+fn/, "src") == 1"#);
    let no = b.claim(r#"grep("unsafe", "src") == 0"#);
    let ran = b.claim(r#"run("ls src").stdout.contains("lib.rs")"#);
    let before = b.log_len();
    let (code, out) = b.check(&with(proc_args(), &[&yes, &no, &ran]));
    assert_eq!(code, 0, "{out}");
    assert_eq!(outcome(&out, &yes), "verified");
    assert_eq!(outcome(&out, &no), "falsified");
    assert_eq!(outcome(&out, &ran), "verified");
    assert_eq!(b.log_len(), before + 3);
    assert_eq!(b.status(&yes), "verified");
    assert_eq!(b.status(&no), "falsified");
    assert_eq!(out["data"]["tree"], json!(b.tree_oid()));

    for (id, kind, ev_kind) in [
        (&yes, "verification", "artifact-digest"),
        (&no, "falsification", "artifact-digest"),
        (&ran, "verification", "process-exit"),
    ] {
        let e = entry(&out, id);
        let record = e["record"].as_str().unwrap();
        let (code, shown) = b.ks.run(&["show", record, "--evidence"]);
        assert_eq!(code, 0, "{shown}");
        let claim = &shown["data"]["claim"];
        assert_eq!(claim["kind"], kind);
        assert_eq!(claim["target"], json!([id]));
        assert_eq!(claim["origin"]["kind"], "harness-observed");
        assert_eq!(claim["anchor"]["tree"], json!(b.tree_oid()));
        assert_eq!(claim["evidence"][0]["kind"], ev_kind);
        let digest = claim["evidence"][0]["digest"].as_str().unwrap();
        assert_eq!(e["evidence"], json!(digest));
        assert_eq!(
            shown["data"]["signers"][0]["keyid"],
            json!(b.ks.keys.harness.keyid)
        );
        let ev = &shown["data"]["evidence"][0];
        assert_eq!(ev["found"], true, "{shown}");
        assert_eq!(ev["blob"]["claim"], json!(id));
        assert!(ev["blob"]["expression"].as_str().is_some());
        // The digest is the SHA-256 of the blob's bytes in the store.
        let path =
            b.ks.store
                .join("blobs/sha256")
                .join(&digest[..2])
                .join(digest);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(hex::encode(Sha256::digest(&bytes)), digest);
    }
    // The process claim's transcript holds the process's output and exit code.
    let rec = entry(&out, &ran)["record"].as_str().unwrap().to_owned();
    let (_, shown) = b.ks.run(&["show", &rec, "--evidence"]);
    let call = &shown["data"]["evidence"][0]["blob"]["runs"][0]["calls"][0];
    assert_eq!(call["call"], "run");
    assert_eq!(call["process"]["exit"], 0);
    assert!(call["process"]["stdout"]
        .as_str()
        .unwrap()
        .contains("lib.rs"));
    assert_eq!(shown["data"]["claim"]["evidence"][0]["exitCode"], 0);
    // Text mode prints the blob itself.
    let text = common::run_raw(
        b.dir(),
        &common::with_store(
            &b.ks.store,
            &["show", &rec, "--evidence", "--format", "text"],
        ),
    );
    assert_eq!(text.code, 0);
    assert!(text.stdout.contains("\"calls\""), "{}", text.stdout);
}

#[test]
fn missing_test_timeout_and_unstartable_command_append_nothing() {
    let b = Bench::new(FILES);
    let no_test = b.claim(r#"test("tests::nowhere").passed"#);
    let slow = b.claim(r#"run("sleep 30").exit == 0"#);
    let unstartable = b.claim(r#"run("no-such-program-elench-xyz --flag").exit == 0"#);
    let not_run = b.claim(r#"test("t").passed"#);
    let before = b.ks.export();
    let args = with(
        proc_args(),
        &[
            "--timeout",
            "2",
            "--runner",
            "junit:echo '<testsuite/>' > \"$ELENCH_JUNIT\"",
            &no_test,
            &slow,
            &unstartable,
        ],
    );
    let (code, out) = b.check(&args);
    assert_eq!(code, 3, "{out}");
    assert_eq!(out["ok"], false);
    for id in [&no_test, &slow, &unstartable] {
        let e = entry(&out, id);
        assert_eq!(e["outcome"], "inconclusive", "{out}");
        assert!(e["record"].is_null());
        assert!(!e["reason"].as_str().unwrap().is_empty());
        assert_eq!(b.status(id), "unevaluated");
    }
    assert!(entry(&out, &slow)["reason"]
        .as_str()
        .unwrap()
        .contains("time limit"));
    assert!(entry(&out, &unstartable)["reason"]
        .as_str()
        .unwrap()
        .contains("could not start"));
    // Without a runner, test() decides nothing either.
    let (code, out) = b.check(&with(proc_args(), &[&not_run]));
    assert_eq!(code, 3, "{out}");
    assert!(entry(&out, &not_run)["reason"]
        .as_str()
        .unwrap()
        .contains("--runner"));
    assert_eq!(b.ks.export(), before, "nothing may be appended");
    let warnings = out["warnings"].as_array().unwrap();
    assert!(warnings.iter().any(|w| w["code"] == "INCONCLUSIVE"));
}

#[test]
fn check_all_twice_appends_nothing_the_second_time() {
    let b = Bench::new(FILES);
    let a = b.claim(r#"exists("README.md")"#);
    let c = b.claim(r#"grep("tiny", "README.md") == 2"#);
    let _annotation = b.annotation(&[&a]);
    let (code, out) = b.check(&["--all"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["data"]["checked"].as_array().unwrap().len(), 2, "{out}");
    assert_eq!(outcome(&out, &a), "verified");
    assert_eq!(outcome(&out, &c), "falsified");
    let after_first = b.ks.export();
    // The second run evaluates nothing: the verdicts at this tree are reported unchanged.
    let (code, out) = b.check(&["--all"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(outcome(&out, &a), "unchanged", "{out}");
    assert_eq!(outcome(&out, &c), "unchanged", "{out}");
    assert_eq!(out["data"]["counts"]["unchanged"], json!(2), "{out}");
    assert_eq!(b.ks.export(), after_first);
    // Named again, both are unchanged: only a change of status is recorded...
    let (code, out) = b.check(&[&a, &c]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(outcome(&out, &a), "unchanged");
    assert_eq!(outcome(&out, &c), "unchanged");
    assert_eq!(b.ks.export(), after_first);
    // ...unless --force (within the same second the record is the same one, a no-op re-add).
    let (code, out) = b.check(&["--force", &a]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(outcome(&out, &a), "verified");
    let rec = entry(&out, &a)["record"].as_str().unwrap().to_owned();
    let (code, shown) = b.ks.run(&["show", &rec]);
    assert_eq!(code, 0, "{shown}");
    assert_eq!(shown["data"]["claim"]["target"], json!([a]));
}

#[test]
fn a_claim_about_another_tree_is_not_applicable_and_never_evaluated() {
    let b = Bench::new(FILES);
    let other = common::TREE;
    // True at this tree, but it speaks about another one.
    let elsewhere = b.claim_full(r#"exists("README.md")"#, other, &[]);
    let annotation = b.annotation(&[]);
    let here = b.claim(r#"exists("README.md")"#);
    let before = b.ks.export();
    let (code, out) = b.check(&[&elsewhere, &annotation]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(outcome(&out, &elsewhere), "not-applicable");
    assert!(entry(&out, &elsewhere)["reason"]
        .as_str()
        .unwrap()
        .contains(other));
    assert_eq!(outcome(&out, &annotation), "not-applicable");
    assert_eq!(b.ks.export(), before);
    let (code, out) = b.check(&["--all"]);
    assert_eq!(code, 0, "{out}");
    let checked = out["data"]["checked"].as_array().unwrap();
    assert_eq!(checked.len(), 1, "{out}");
    assert_eq!(checked[0]["id"], json!(here));
}

#[test]
fn a_falsification_made_by_check_revokes_dependents() {
    let b = Bench::new(FILES);
    let root = b.claim(r#"grep("unsafe", "src") == 0"#);
    let mid = b.annotation(&[&root]);
    let leaf = b.annotation(&[&mid]);
    let (code, out) = b.check(&[&root]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(outcome(&out, &root), "falsified");
    assert_eq!(b.status(&root), "falsified");
    assert_eq!(b.status(&mid), "revoked");
    assert_eq!(b.status(&leaf), "revoked");
    let (code, blast) = b.ks.run(&["blast", &root]);
    assert_eq!(code, 0, "{blast}");
    assert_eq!(blast["data"]["count"], 2);
    let layers = blast["data"]["layers"].as_array().unwrap();
    assert_eq!(layers[1]["claims"][0]["id"], json!(mid));
    assert_eq!(layers[1]["claims"][0]["status"], "revoked");
    assert_eq!(layers[2]["claims"][0]["id"], json!(leaf));
}

#[test]
fn repeat_records_only_when_evaluations_agree() {
    let b = Bench::new(FILES);
    let counter = b.dir().join("counter");
    std::fs::write(&counter, "0").unwrap();
    // Unsandboxed, so the counter outlives each evaluation: odd runs fail, even runs pass.
    let src = format!(
        r#"run("n=$(cat {c}); echo $((n+1)) > {c}; test $((n % 2)) -eq 0").exit == 0"#,
        c = counter.display()
    );
    let flaky = b.claim(&src);
    let steady = b.claim(r#"run("true").exit == 0"#);
    let before = b.ks.export();
    let (code, out) = b.check(&["--no-sandbox", "--repeat", "2", &flaky]);
    assert_eq!(code, 3, "{out}");
    assert_eq!(outcome(&out, &flaky), "flaky");
    assert_eq!(b.ks.export(), before);
    let (code, out) = b.check(&["--no-sandbox", "--repeat", "3", &steady]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(outcome(&out, &steady), "verified");
    // Unconfined processes are stated as such.
    let rec = entry(&out, &steady)["record"].as_str().unwrap().to_owned();
    let (_, shown) = b.ks.run(&["show", &rec, "--evidence"]);
    assert_eq!(
        shown["data"]["claim"]["origin"]["producer"]["hermeticity"],
        "none"
    );
    assert_eq!(
        shown["data"]["evidence"][0]["blob"]["runs"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
}

#[test]
fn jobs_in_parallel_give_the_same_answers() {
    let b = Bench::new(FILES);
    let ids: Vec<String> = (0..6)
        .map(|i| b.claim(&format!(r#"grep("unsafe", "src") == {i}"#)))
        .collect();
    let (code, out) = b.check(&["--all", "--jobs", "3"]);
    assert_eq!(code, 0, "{out}");
    for (i, id) in ids.iter().enumerate() {
        let want = if i == 2 { "verified" } else { "falsified" };
        assert_eq!(outcome(&out, id), want, "{out}");
    }
    assert_eq!(out["data"]["counts"]["falsified"], 5);
}

#[test]
fn bad_arguments_and_keys_are_refused_before_anything_runs() {
    let b = Bench::new(FILES);
    let id = b.claim(r#"exists("README.md")"#);
    let before = b.ks.export();
    let (code, out) = b.ks.run(&["check", "--key", "x.pem"]);
    assert_eq!(code, 2, "{out}");
    let (code, out) = b.check(&["--runner", "mocha", &id]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(out["error"]["code"], "BAD_ARGUMENTS");
    let (code, out) = b.check(&["--repeat", "0", &id]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(out["error"]["errors"][0]["param"], "--repeat", "{out}");
    // `--timeout` written before the command is check's own per-claim limit too; 0 is
    // refused naming it, whichever parser read it.
    let tree = b.tree.display().to_string();
    let harness = b.ks.keys.harness.private.display().to_string();
    let (code, out) = b.ks.run(&[
        "--timeout",
        "0",
        "check",
        "--at",
        &tree,
        "--key",
        &harness,
        &id,
    ]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(out["error"]["code"], "BAD_ARGUMENTS", "{out}");
    assert_eq!(out["error"]["errors"][0]["param"], "--timeout", "{out}");
    assert_eq!(out["error"]["errors"][0]["value"], "0", "{out}");
    let (code, out) = b.check(&["not-an-id"]);
    assert_eq!(code, 2, "{out}");
    let (code, out) = b.check(&[&common::some_id(7)]);
    assert_eq!(code, 5, "{out}");
    assert_eq!(out["error"]["code"], "NOT_FOUND");
    // An agent key may not sign what a harness observed.
    let agent = b.ks.keys.agent.private.display().to_string();
    let (code, out) = b.ks.run(&["check", "--at", &tree, "--key", &agent, &id]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(out["error"]["code"], "ROLE_VIOLATION");
    // A key the store does not trust.
    let stranger = common::make_key(b.dir(), "harness", "stranger");
    let key = stranger.private.display().to_string();
    let (code, out) = b.ks.run(&["check", "--at", &tree, "--key", &key, &id]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(out["error"]["code"], "UNTRUSTED_SIGNER");
    assert_eq!(b.ks.export(), before);
}

#[test]
fn the_store_and_keys_inside_the_tree_are_invisible_to_predicates() {
    let b = Bench::new(FILES);
    // A key file that happens to live in the checked tree.
    let key_in_tree = b.tree.join("harness.pem");
    std::fs::copy(&b.ks.keys.harness.private, &key_in_tree).unwrap();
    std::fs::create_dir_all(b.tree.join(".elench")).unwrap();
    std::fs::write(b.tree.join(".elench/FORMAT"), "x").unwrap();
    let sees_key = b.claim(r#"exists("harness.pem") || grep("PRIVATE KEY", "") > 0"#);
    let sees_store = b.claim(r#"exists(".elench/FORMAT")"#);
    let tree = b.tree.display().to_string();
    let key = key_in_tree.display().to_string();
    let (code, out) = b.ks.run(&[
        "check",
        "--at",
        &tree,
        "--key",
        &key,
        &sees_key,
        &sees_store,
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(outcome(&out, &sees_key), "falsified");
    assert_eq!(outcome(&out, &sees_store), "falsified");
}

#[test]
fn a_long_check_does_not_hold_the_store() {
    let b = Bench::new(FILES);
    let slow = b.claim(r#"run("sleep 60").exit == 0"#);
    let mut child = b
        .check_command(&with(vec!["--timeout", "120", &slow], &proc_args()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // While the claim's process sleeps, other commands read and write the store.
    std::thread::sleep(std::time::Duration::from_secs(2));
    let (code, out) = b.ks.run(&["--wait", "5", "status", &slow]);
    let other = b.claim(r#"exists("README.md")"#);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(code, 0, "status waited for the store a check held: {out}");
    assert_eq!(b.status(&other), "unevaluated");
}

#[test]
fn an_interrupt_stops_between_claims_and_keeps_what_was_recorded() {
    let b = Bench::new(FILES);
    // A quick claim (recorded), one whose process is still running at the interrupt (ended,
    // inconclusive), and one never started.
    let ids = [
        b.claim(r#"exists("README.md")"#),
        b.claim(r#"run("sleep 60").exit == 0"#),
        b.claim(r#"exists("src/lib.rs")"#),
    ];
    let before = b.log_len();
    let mut args: Vec<&str> = proc_args();
    args.extend(ids.iter().map(String::as_str));
    let json = interrupted(b.check_command(&args), 1500);
    assert_eq!(json["error"]["code"], "CANCELLED", "{json}");
    let checked = json["data"]["checked"].as_array().unwrap();
    assert!(
        checked.len() < ids.len(),
        "the interrupt stopped nothing: {json}"
    );
    // Whatever was reported as recorded is in the log, and nothing else.
    let recorded = checked.iter().filter(|c| !c["record"].is_null()).count();
    assert_eq!(b.log_len(), before + recorded);
    for c in checked.iter().filter(|c| !c["record"].is_null()) {
        assert_eq!(b.status(c["id"].as_str().unwrap()), "verified");
    }
    // The process in flight was ended by the interrupt, not waited for.
    for c in checked.iter().filter(|c| c["outcome"] == "inconclusive") {
        assert!(
            c["reason"].as_str().unwrap().contains("interrupted"),
            "{json}"
        );
    }
    assert!(checked.iter().all(|c| c["id"] != json!(ids[2])), "{json}");
}

/// `check --timeout SECS` is check's own limit for one claim's evaluation, as it always was
/// (`--claim-timeout` is another name for it), wherever it stands on the line. The whole
/// command's limit is `--command-timeout` or `ELENCH_TIMEOUT`, which leave the per-claim one
/// alone.
#[test]
fn check_timeout_is_the_limit_of_one_claim_and_the_command_has_its_own() {
    let b = Bench::new(FILES);
    let slow = b.claim(r#"run("sleep 30").exit == 0"#);
    let tree = b.tree.display().to_string();
    let key = b.ks.keys.harness.private.display().to_string();
    let timed_out = |out: &serde_json::Value| {
        entry(out, &slow)["reason"]
            .as_str()
            .unwrap()
            .contains("time limit")
    };
    let run = |args: Vec<&str>, env: Option<(&str, &str)>| {
        let mut cmd = common::command(b.dir());
        cmd.env_remove("ELENCH_TIMEOUT")
            .args(common::with_store(&b.ks.store, &args));
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        let started = std::time::Instant::now();
        let out = cmd.output().unwrap();
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        // `sleep 30` would run to its end under any other limit.
        assert!(
            started.elapsed() < std::time::Duration::from_secs(25),
            "{args:?}: the claim's limit did not end it: {json}"
        );
        (out.status.code().unwrap(), json)
    };
    let check = |pre: &[&'static str], post: &[&'static str]| -> Vec<&str> {
        let mut a: Vec<&str> = pre.to_vec();
        a.extend(["check", "--at", &tree, "--key", &key]);
        a.extend(proc_args());
        a.extend_from_slice(post);
        a.push(&slow);
        a
    };
    for (pre, post) in [
        (&[][..], &["--timeout", "1"][..]),
        (&[][..], &["--claim-timeout", "1"][..]),
        (&["--timeout", "1"][..], &[][..]),
    ] {
        let (code, out) = run(check(pre, post), None);
        assert_eq!(code, 3, "{pre:?} {post:?}: {out}");
        assert!(timed_out(&out), "{out}");
        assert_eq!(
            out["meta"]["timeout_ms"], 3_600_000,
            "the command's own limit is its default: {out}"
        );
    }
    let (code, out) = run(
        check(&[], &["--timeout", "1", "--command-timeout", "120"]),
        None,
    );
    assert_eq!(code, 3, "{out}");
    assert!(timed_out(&out), "{out}");
    assert_eq!(out["meta"]["timeout_ms"], 120_000, "{out}");
    let (code, out) = run(
        check(&[], &["--timeout", "1"]),
        Some(("ELENCH_TIMEOUT", "90")),
    );
    assert_eq!(code, 3, "{out}");
    assert!(timed_out(&out), "{out}");
    assert_eq!(out["meta"]["timeout_ms"], 90_000, "{out}");
    // A claim needs some time to be evaluated in.
    let (code, out) = run(check(&[], &["--timeout", "0"]), None);
    assert_eq!(code, 2, "{out}");
    assert_eq!(out["error"]["code"], "BAD_ARGUMENTS", "{out}");
    // The help says which limit is which.
    let help = common::run_raw(b.dir(), &["check", "--help"]);
    assert!(help.stderr.contains("one claim"), "{}", help.stderr);
    assert!(help.stderr.contains("--command-timeout"), "{}", help.stderr);
}

/// Records are appended in groups after the evidence blobs they name are durable: after a
/// check interrupted part-way, every record it appended names a blob the store holds, whose
/// bytes hash to that name.
#[test]
fn records_appended_before_an_interrupt_name_blobs_the_store_holds() {
    let b = Bench::new(FILES);
    let mut ids: Vec<String> = (0..40)
        .map(|i| b.claim(&format!(r#"exists("README.md") && {i} >= 0"#)))
        .collect();
    ids.push(b.claim(r#"run("sleep 60").exit == 0"#));
    let before = b.log_len();
    let mut args = vec!["--jobs", "2"];
    args.extend(proc_args());
    args.extend(ids.iter().map(String::as_str));
    let json = interrupted(b.check_command(&args), 2000);
    let checked = json["data"]["checked"].as_array().unwrap();
    let recorded: Vec<&serde_json::Value> =
        checked.iter().filter(|c| !c["record"].is_null()).collect();
    assert_eq!(
        recorded.len(),
        40,
        "the quick claims were all recorded: {json}"
    );
    // The log holds exactly the records reported, and each names a blob that is there.
    assert_eq!(b.log_len(), before + recorded.len());
    for c in recorded {
        let digest = c["evidence"].as_str().unwrap();
        let path =
            b.ks.store
                .join("blobs/sha256")
                .join(&digest[..2])
                .join(digest);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(hex::encode(Sha256::digest(&bytes)), digest);
        let (code, shown) =
            b.ks.run(&["show", c["record"].as_str().unwrap(), "--evidence"]);
        assert_eq!(code, 0, "{shown}");
        assert_eq!(shown["data"]["evidence"][0]["found"], true, "{shown}");
    }
    // No temporary blob file is left behind.
    let mut dirs = vec![b.ks.store.join("blobs")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                dirs.push(e.path());
            } else {
                let name = e.file_name().to_string_lossy().into_owned();
                assert!(
                    !name.starts_with('.'),
                    "left behind: {}",
                    e.path().display()
                );
            }
        }
    }
}

/// When the evidence cannot be stored, no record of the group is appended (it would name a
/// blob the store lacks) and every claim of it is reported as not recorded.
#[test]
fn evidence_that_cannot_be_stored_appends_no_record() {
    let b = Bench::new(FILES);
    let ids: Vec<String> = (0..5)
        .map(|i| b.claim(&format!(r#"exists("README.md") && {i} >= 0"#)))
        .collect();
    let before = b.log_len();
    // A file where the blobs' folder must be.
    let blobs = b.ks.store.join("blobs");
    let _ = std::fs::remove_dir_all(&blobs);
    std::fs::write(&blobs, b"not a folder").unwrap();
    let mut args = vec!["--jobs", "2"];
    args.extend(ids.iter().map(String::as_str));
    let (code, out) = b.check(&args);
    assert_ne!(code, 0, "{out}");
    assert!(
        out["error"]["message"].as_str().unwrap().contains("blobs"),
        "{out}"
    );
    assert_eq!(b.log_len(), before, "{out}");
    for c in out["data"]["checked"].as_array().unwrap() {
        assert!(c["record"].is_null(), "{out}");
    }
    for id in &ids {
        assert_eq!(b.status(id), "unevaluated");
    }
}

/// Starts `cmd`, sends it SIGINT after `after_ms`, and returns its answer: it must end with
/// exit 130 and one JSON object on stdout.
fn interrupted(mut cmd: std::process::Command, after_ms: u64) -> serde_json::Value {
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(after_ms));
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn without_bubblewrap_check_says_it_is_missing_and_how_to_install_it() {
    let b = Bench::new(FILES);
    let ran = b.claim(r#"run("true").exit == 0"#);
    let looked = b.claim(r#"exists("README.md")"#);
    // A PATH with the shell and git, and no bwrap.
    let bin = b.dir().join("bin-without-bwrap");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in ["sh", "git"] {
        let found = std::env::split_paths(&std::env::var_os("PATH").unwrap())
            .map(|d| d.join(tool))
            .find(|p| p.is_file());
        if let Some(p) = found {
            std::os::unix::fs::symlink(p, bin.join(tool)).unwrap();
        }
    }
    let out = b.check_command(&[&ran]).env("PATH", &bin).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["error"]["code"], "SANDBOX_UNAVAILABLE", "{json}");
    let message = json["error"]["message"].as_str().unwrap();
    assert!(message.contains("bwrap"), "{message}");
    assert!(message.contains("not installed"), "{message}");
    assert!(
        message.contains("apt-get install bubblewrap"),
        "how to install it: {message}"
    );
    assert!(message.contains("--no-sandbox"), "{message}");
    assert!(!message.contains("cannot start sh"), "{message}");
    // A predicate that starts no process needs no sandbox.
    let out = b
        .check_command(&[&looked])
        .env("PATH", &bin)
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["data"]["checked"][0]["outcome"], "verified", "{json}");
}
