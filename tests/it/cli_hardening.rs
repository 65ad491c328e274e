//! Trust and start-up edges found in review: who may vouch for a checkpoint, key files that are
//! not text, and a stop that arrives while elench is still starting.

use crate::check_support;
use crate::common;

use common::{elench, make_key, with_store, KeyedStore};
use serde_json::{json, Value};
use std::path::Path;

fn checkpoint(s: &KeyedStore, key: &Path, out: &Path) -> Value {
    let (code, json) = s.run(&[
        "checkpoint",
        "-o",
        out.to_str().unwrap(),
        "--form",
        "json",
        "--key",
        key.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{json}");
    json
}

fn fsck(s: &KeyedStore, checkpoint: &Path, key: Option<&Path>) -> (i32, Value) {
    let mut args = vec![
        "fsck".to_owned(),
        "--checkpoint".to_owned(),
        checkpoint.display().to_string(),
    ];
    if let Some(k) = key {
        args.extend(["--key".to_owned(), k.display().to_string()]);
    }
    s.run(&args)
}

fn problems(json: &Value) -> String {
    json["data"]["problems"].to_string()
}

/// Whoever can write the store can add a key to its trust set and sign a checkpoint with it;
/// only a key the person running fsck names can vouch for a checkpoint.
#[test]
fn a_checkpoint_is_checked_against_the_key_given_never_the_stores() {
    let s = KeyedStore::new();
    // The operator's key is kept away from the store, which never trusts it.
    let ops = make_key(s.dir(), "human", "ops");
    let good = s.dir().join("good.json");
    checkpoint(&s, &ops.private, &good);
    let (code, json) = fsck(&s, &good, Some(&ops.public));
    assert_eq!(
        code, 0,
        "a key the store does not trust vouches for its checkpoint: {json}"
    );

    // The forger adds a key of their own to the store and signs a checkpoint with it.
    let mallory = make_key(s.dir(), "human", "mallory");
    let (code, json) = s.run(&[
        "keys",
        "add",
        "--role",
        "human",
        "--name",
        "mallory",
        mallory.public.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{json}");
    let forged = s.dir().join("forged.json");
    checkpoint(&s, &mallory.private, &forged);
    let (code, json) = fsck(&s, &forged, Some(&ops.public));
    assert_eq!(
        code, 4,
        "a checkpoint signed by a key the store trusts is not the operator's: {json}"
    );
    assert_eq!(json["error"]["code"], "FSCK_PROBLEMS", "{json}");
    assert!(problems(&json).contains("CHECKPOINT_SIGNATURE"), "{json}");
    assert!(
        problems(&json).contains(&mallory.keyid),
        "names the file's signer: {json}"
    );

    // Without --key nothing vouches for the signature, and the answer says so.
    let (code, json) = fsck(&s, &forged, None);
    assert_eq!(code, 0, "{json}");
    let warnings = json["warnings"].to_string();
    assert!(warnings.contains("CHECKPOINT_UNVERIFIED"), "{json}");

    // A key named for an unsigned checkpoint finds no signature.
    let mut c: Value = serde_json::from_slice(&std::fs::read(&good).unwrap()).unwrap();
    c.as_object_mut().unwrap().remove("signature");
    let unsigned = s.dir().join("unsigned.json");
    std::fs::write(&unsigned, c.to_string()).unwrap();
    let (code, json) = fsck(&s, &unsigned, Some(&ops.public));
    assert_eq!(code, 4, "{json}");
    assert!(problems(&json).contains("not signed"), "{json}");

    // --key alone is an argument error.
    let (code, json) = s.run(&["fsck", "--key", ops.public.to_str().unwrap()]);
    assert_eq!(code, 2, "{json}");
}

/// The chain is one exact text: another spelling of the value is not the checkpoint.
#[test]
fn a_checkpoint_chain_must_be_canonical_lowercase_hex() {
    let s = KeyedStore::new();
    let ops = make_key(s.dir(), "human", "ops");
    let good = s.dir().join("good.json");
    let made = checkpoint(&s, &ops.private, &good);
    let chain = made["data"]["chain"].as_str().unwrap().to_owned();
    for bad in [
        chain.to_uppercase(),
        format!("{}{}", &chain[..63].to_owned(), "G"),
        format!(" {}", &chain[1..]),
        format!("+{}", &chain[1..]),
    ] {
        let mut c: Value = serde_json::from_slice(&std::fs::read(&good).unwrap()).unwrap();
        c["chain"] = json!(bad);
        let path = s.dir().join("bad.json");
        std::fs::write(&path, c.to_string()).unwrap();
        let (code, json) = fsck(&s, &path, Some(&ops.public));
        assert_eq!(code, 2, "{bad:?}: {json}");
        assert_eq!(json["error"]["code"], "BAD_CHECKPOINT", "{bad:?}: {json}");
        assert!(
            json["error"]["message"]
                .as_str()
                .unwrap()
                .contains("lowercase"),
            "{json}"
        );
    }
}

/// A key file that is not text is not a key: BAD_KEY naming the file, from every command that
/// reads one.
#[test]
fn a_key_file_that_is_not_utf8_is_bad_key() {
    let s = KeyedStore::new();
    let junk = s.dir().join("junk.pem");
    std::fs::write(&junk, b"-----BEGIN PRIVATE KEY-----\n\xff\xfe\x00\x80\n").unwrap();
    let junk_s = junk.to_str().unwrap();
    let claim = common::ClaimBuilder::assertion("a claim").build();
    let claim_path = s.dir().join("claim.json");
    std::fs::write(&claim_path, claim.to_string()).unwrap();
    let cp = s.dir().join("cp.json");
    let (code, json) = s.run(&["checkpoint", "-o", cp.to_str().unwrap()]);
    assert_eq!(code, 0, "{json}");
    let runs: Vec<Vec<String>> = vec![
        vec![
            "sign".into(),
            claim_path.display().to_string(),
            "--key".into(),
            junk_s.into(),
        ],
        vec!["checkpoint".into(), "--key".into(), junk_s.into()],
        vec![
            "keys".into(),
            "add".into(),
            "--role".into(),
            "human".into(),
            "--name".into(),
            "x".into(),
            junk_s.into(),
        ],
        vec![
            "fsck".into(),
            "--checkpoint".into(),
            cp.display().to_string(),
            "--key".into(),
            junk_s.into(),
        ],
        vec![
            "check".into(),
            "--all".into(),
            "--key".into(),
            junk_s.into(),
        ],
    ];
    for args in runs {
        let (code, json) = s.run(&args);
        assert_eq!(code, 2, "{args:?}: {json}");
        assert_eq!(json["error"]["code"], "BAD_KEY", "{args:?}: {json}");
        assert!(
            json.to_string().contains("junk.pem"),
            "names the file: {json}"
        );
    }
    // As a --trust key of a command without a store.
    let (code, json) = elench(
        s.dir(),
        &[
            "verify",
            claim_path.to_str().unwrap(),
            "--trust",
            &format!("human:x:{junk_s}"),
        ],
    );
    assert_eq!(code, 2, "{json}");
    assert_eq!(json["error"]["code"], "BAD_KEY", "{json}");
}

/// Whether the process has started Rust's runtime, which ignores SIGPIPE before `main`: its
/// SigIgn mask in /proc has SIGPIPE. False once it has ended.
fn runtime_started(pid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return true;
    };
    let ignored = status
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .unwrap_or(0);
    // A zombie has no masks worth reading; it has run.
    status.contains("State:\tZ") || ignored & (1 << (libc::SIGPIPE - 1)) != 0
}

/// SIGTERM sent the moment elench's own code runs (as soon as Rust's runtime has started,
/// before `main`; earlier still the dynamic loader is at work and the default action ends
/// any program): every run answers in JSON with exit 143, or finished its work first and
/// exits 0. None dies of the signal unanswered.
#[test]
fn sigterm_right_after_spawn_always_gets_an_answer() {
    let s = KeyedStore::new();
    let mut cancelled = 0;
    for i in 0..50 {
        let child = std::process::Command::new(common::elench_path())
            .current_dir(s.dir())
            .env_remove("ELENCH_STORE")
            .env_remove("CI")
            .args(with_store(&s.store, &["status", "--all"]))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let asked = std::time::Instant::now();
        while !runtime_started(child.id()) {
            assert!(
                asked.elapsed().as_secs() < 30,
                "run {i}: elench never started"
            );
            std::hint::spin_loop();
        }
        // SAFETY: kill(2) on the child we spawned and have not waited for (its pid is ours).
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
        }
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let code = out.status.code();
        assert!(
            code.is_some(),
            "run {i}: killed by the signal without an answer ({:?}); stderr {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let json: Value = serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("run {i}: stdout is not one JSON answer ({e}): {stdout:?}"));
        match code {
            Some(143) => {
                assert_eq!(json["error"]["code"], "CANCELLED", "run {i}: {json}");
                assert_eq!(json["meta"]["exit_code"], 143, "run {i}: {json}");
                cancelled += 1;
            }
            Some(0) => assert_eq!(json["ok"], true, "run {i}: {json}"),
            other => panic!("run {i}: exit {other:?}: {json}"),
        }
    }
    assert!(cancelled > 0, "no run saw the signal at all");
}

/// `keys generate` writes the private key in the form OpenSSL writes (PKCS#8 v1, RFC 8410),
/// which OpenSSL 3.0 reads and signs with; the signature verifies under elench's public key.
#[test]
fn a_generated_private_key_is_read_and_used_by_openssl() {
    let tmp = tempfile::tempdir().unwrap();
    let key = make_key(tmp.path(), "agent", "coder");
    let openssl = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .current_dir(tmp.path())
            .output()
            .expect("openssl runs");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    let private = key.private.to_str().unwrap();
    let public = key.public.to_str().unwrap();
    let text = openssl(&["pkey", "-in", private, "-noout", "-text"]);
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("ED25519"),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );
    // The public key openssl derives is the one elench wrote.
    let derived = openssl(&["pkey", "-in", private, "-pubout"]);
    assert_eq!(
        String::from_utf8_lossy(&derived.stdout),
        std::fs::read_to_string(&key.public).unwrap()
    );
    std::fs::write(tmp.path().join("msg"), b"signed by openssl").unwrap();
    openssl(&[
        "pkeyutl", "-sign", "-rawin", "-inkey", private, "-in", "msg", "-out", "sig",
    ]);
    openssl(&[
        "pkeyutl", "-verify", "-rawin", "-pubin", "-inkey", public, "-in", "msg", "-sigfile", "sig",
    ]);
    // And elench still signs with it.
    let claim = common::ClaimBuilder::assertion("a claim").build();
    let (env, _) = common::sign_cli(tmp.path(), &claim, &key);
    assert!(env.exists());
}

/// DSSE's keyid is a hint: another tool's keyid for a trusted key still verifies (every
/// trusted key is tried), and when nothing verifies, the error says so without claiming the
/// signer is unknown, since an altered envelope looks the same.
#[test]
fn a_foreign_keyid_is_only_a_hint() {
    use elench::envelope::{sign_envelope, statement::statement_bytes, PAYLOAD_TYPE};
    let s = KeyedStore::new();
    let agent = &s.keys.agent;
    let claim = common::ClaimBuilder::assertion("signed by another tool").build_with_id();
    let payload = statement_bytes(claim.as_object().unwrap(), common::TREE);
    // securesystemslib names keys by its own digest of the key's metadata.
    let foreign = "9d4f0e0c2c1b5f3f6b6a8f0c1e2d3b4a5968778695a4b3c2d1e0f9e8d7c6b5a4";
    let text = sign_envelope(PAYLOAD_TYPE, &payload, &agent.signing_key(), foreign);
    let good = s.dir().join("foreign.dsse");
    std::fs::write(&good, &text).unwrap();
    let (code, json) = s.run(&["verify", good.to_str().unwrap()]);
    assert_eq!(
        code, 0,
        "a trusted key's signature verifies whatever its keyid: {json}"
    );

    // Altered after signing: the payload of another claim under the same signature.
    let other = common::ClaimBuilder::assertion("something else").build_with_id();
    let other_payload = statement_bytes(other.as_object().unwrap(), common::TREE);
    let mut env: Value = serde_json::from_str(&text).unwrap();
    use base64::Engine;
    env["payload"] = json!(base64::engine::general_purpose::STANDARD.encode(other_payload));
    let bad = s.dir().join("altered.dsse");
    std::fs::write(&bad, env.to_string()).unwrap();
    let (code, json) = s.run(&["verify", bad.to_str().unwrap()]);
    assert_eq!(code, 2, "{json}");
    let message = json["error"]["message"].as_str().unwrap();
    assert!(message.contains("no trusted key verifies"), "{json}");
    assert!(
        message.contains("altered"),
        "says it may have been altered: {json}"
    );
    assert!(!message.contains("that are not trusted"), "{json}");
}

/// `sign` beside a store warns about a premise the store lacks, as `add` does.
#[test]
fn sign_warns_about_a_premise_the_store_lacks() {
    let s = KeyedStore::new();
    let known = common::ClaimBuilder::assertion("known").build();
    let (env, known_id) = common::sign_cli(s.dir(), &known, &s.keys.agent);
    assert_eq!(s.run(&["add", env.to_str().unwrap()]).0, 0);
    let missing = common::some_id(9);
    let claim = common::ClaimBuilder::assertion("built on two")
        .depends_on(&[&known_id, &missing])
        .build();
    let path = s.dir().join("built.json");
    std::fs::write(&path, claim.to_string()).unwrap();
    let (code, json) = s.run(&[
        "sign",
        path.to_str().unwrap(),
        "--key",
        s.keys.agent.private.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{json}");
    for warnings in [&json["warnings"], &json["data"]["warnings"]] {
        let list = warnings.as_array().unwrap();
        assert_eq!(list.len(), 1, "only the missing premise: {json}");
        assert_eq!(list[0]["code"], "DANGLING_REFERENCE", "{json}");
        let message = list[0]["message"].as_str().unwrap();
        assert!(
            message.contains(&missing) && message.contains("dependsOn"),
            "{json}"
        );
    }
}

/// An ambiguous short id names its candidates in the error's data, and an argument error
/// names the command it was given to.
#[test]
fn ambiguous_ids_list_candidates_as_data_and_argument_errors_name_their_command() {
    let s = KeyedStore::new();
    // Two claims whose ids share their first 4 hex digits.
    let mut seen: std::collections::HashMap<String, Value> = Default::default();
    let (a, b) = (0..)
        .find_map(|i| {
            let c = common::ClaimBuilder::assertion(&format!("claim number {i}")).build_with_id();
            let prefix = common::claim_id(&c)[..7].to_owned();
            match seen.remove(&prefix) {
                Some(other) => Some((other, c)),
                None => {
                    seen.insert(prefix, c);
                    None
                }
            }
        })
        .unwrap();
    let mut ids = Vec::new();
    for c in [a, b] {
        let (env, id) = common::sign_cli(s.dir(), &c, &s.keys.agent);
        assert_eq!(s.run(&["add", env.to_str().unwrap()]).0, 0);
        ids.push(id);
    }
    ids.sort();
    let (code, json) = s.run(&["show", &ids[0][..7]]);
    assert_eq!(code, 2, "{json}");
    let e = &json["error"];
    assert_eq!(e["code"], "AMBIGUOUS_ID", "{json}");
    assert_eq!(e["candidates"], json!(ids), "{json}");
    assert_eq!(e["candidates_truncated"], json!(false), "{json}");
    assert_eq!(e["input_value"], json!(&ids[0][..7]), "{json}");

    for (args, command) in [
        (vec!["status", "--no-such-flag"], "status"),
        (
            vec!["--wait", "3", "keys", "generate", "--rolee", "x"],
            "keys generate",
        ),
        (vec!["log", "--limit", "many"], "log"),
        (vec!["no-such-command"], "elench"),
    ] {
        let (code, json) = s.run(&args);
        assert_eq!(code, 2, "{args:?}: {json}");
        assert_eq!(json["meta"]["command"], command, "{args:?}: {json}");
    }
}

/// `check`'s exit 3 says what it means there: claims inconclusive, how many were decided, and
/// what to do, never `data.rejections` (which `check` does not have).
#[test]
fn check_partial_says_what_was_and_was_not_decided() {
    let b = check_support::Bench::new(&[("src/lib.rs", "pub fn parse() {}\n")]);
    // test() without a runner decides nothing; grep needs no process.
    let undecided = b.claim(r#"test("t").passed"#);
    let (code, json) = b.check(&[&undecided]);
    assert_eq!(code, 3, "{json}");
    let e = &json["error"];
    assert_eq!(e["code"], "PARTIAL_FAILURE", "{json}");
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("no claim was decided"), "{json}");
    assert!(!message.contains("others are decided"), "{json}");
    let suggestion = e["suggestion"].as_str().unwrap();
    assert!(!suggestion.contains("rejections"), "{json}");
    assert!(suggestion.contains("INCONCLUSIVE"), "{json}");

    let decided = b.claim(r#"grep("parse", "src/lib.rs") == 1"#);
    let (code, json) = b.check(&[&undecided, &decided]);
    assert_eq!(code, 3, "{json}");
    assert!(
        json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("1 other claim(s) were decided"),
        "{json}"
    );
}
