//! Edges of the command line found in review: bounds on arguments, stdout ownership, store
//! paths that are not stores, oversized inputs, signals while waiting for input.

use crate::common;

use common::{elench, run_raw, sign_cli, ClaimBuilder, KeyedStore};
use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn list_limits_are_bounded() {
    let s = KeyedStore::new();
    for args in [
        vec!["log", "--limit", "18446744073709551615"],
        vec!["status", "--all", "--limit", "0"],
        vec!["keys", "list", "--limit", "10001"],
        vec!["log", "--cursor", "next-please"],
    ] {
        let (code, json) = s.run(&args);
        assert_eq!(code, 2, "{args:?}: {json}");
        assert_eq!(json["error"]["code"], "BAD_ARGUMENTS", "{args:?}");
    }
}

#[test]
fn malformed_ids_are_bad_arguments_not_unknown_claims() {
    let s = KeyedStore::new();
    for args in [
        vec!["status", "cl_bogus"],
        vec!["status", ""],
        vec!["show", "CL_00"],
    ] {
        let (code, json) = s.run(&args);
        assert_eq!(code, 2, "{args:?}: {json}");
        assert_eq!(json["error"]["code"], "BAD_ARGUMENTS", "{args:?}");
    }
    // One that holds a path is a made-up identifier (REQ-F-045), exit 2 all the same.
    let (code, json) = s.run(&["blast", "not an id/../x"]);
    assert_eq!(code, 2, "{json}");
    assert_eq!(json["error"]["code"], "INVALID_AGENT_INPUT", "{json}");
    assert_eq!(
        json["error"]["rejected_pattern"], "path_traversal",
        "{json}"
    );
}

#[test]
fn stdout_carries_the_report_unless_the_product_is_asked_for() {
    let s = KeyedStore::new();
    // export needs -o; `-o -` is the explicit request for the bundle itself.
    let (code, json) = s.run(&["export"]);
    assert_eq!(code, 2, "{json}");
    assert_eq!(json["error"]["code"], "BAD_ARGUMENTS");
    let (code, json) = s.run(&["--format", "json", "export", "-o", "-"]);
    assert_eq!(code, 2, "{json}");
    assert_eq!(json["error"]["code"], "BAD_ARGUMENTS");
    let claim = s.dir().join("c.json");
    std::fs::write(&claim, ClaimBuilder::assertion("x").build().to_string()).unwrap();
    let key = s.keys.agent.private.display().to_string();
    let (code, json) = s.run(&[
        "--format",
        "json",
        "sign",
        claim.to_str().unwrap(),
        "--key",
        &key,
        "-o",
        "-",
    ]);
    assert_eq!(code, 2, "{json}");
    assert_eq!(json["error"]["code"], "BAD_ARGUMENTS");
    // Without --format, `-o -` writes the envelope itself.
    let run = run_raw(
        s.dir(),
        &common::with_store(
            &s.store,
            &["sign", claim.to_str().unwrap(), "--key", &key, "-o", "-"],
        ),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let env: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(env["payloadType"], "application/vnd.in-toto+json");
}

#[test]
fn a_store_path_that_is_not_a_store_is_a_precondition() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("afile");
    std::fs::write(&file, "x").unwrap();
    let f = file.to_str().unwrap();
    for args in [vec!["--store", f, "log"], vec!["--store", f, "init"]] {
        let (code, json) = elench(dir.path(), &args);
        assert_eq!(code, 4, "{args:?}: {json}");
        assert_eq!(json["error"]["code"], "STORE_INVALID", "{args:?}");
    }
    // A store whose FORMAT file is not one of ours.
    let s = KeyedStore::new();
    std::fs::write(s.store.join("FORMAT"), "garbage\n").unwrap();
    let (code, json) = s.run(&["log"]);
    assert_eq!(code, 4, "{json}");
    assert_eq!(json["error"]["code"], "STORE_INVALID");
}

#[test]
fn a_newer_store_is_refused() {
    let s = KeyedStore::new();
    std::fs::write(s.store.join("FORMAT"), "elench-store 99\n").unwrap();
    let (code, json) = s.run(&["log"]);
    assert_eq!(code, 4, "{json}");
    assert_eq!(json["error"]["code"], "STORE_FORMAT_TOO_NEW");
}

#[test]
fn add_refuses_what_verify_refuses_for_size() {
    let s = KeyedStore::new();
    let (env, _) = sign_cli(
        s.dir(),
        &ClaimBuilder::assertion("padded").build(),
        &s.keys.agent,
    );
    let mut bytes = std::fs::read(&env).unwrap();
    bytes.extend(std::iter::repeat_n(b' ', 1024 * 1024));
    let padded = s.dir().join("padded.dsse");
    std::fs::write(&padded, &bytes).unwrap();
    let before = s.export();
    let (code, json) = s.run(&["add", padded.to_str().unwrap()]);
    assert_eq!(code, 2, "{json}");
    assert_eq!(json["error"]["code"], "TOO_LARGE");
    let (code, json) = s.run(&["verify", padded.to_str().unwrap()]);
    assert_eq!(code, 2, "{json}");
    assert_eq!(json["error"]["code"], "TOO_LARGE");
    assert_eq!(s.export(), before);
    // An unreadable input is named as such.
    let (code, json) = s.run(&["add", "/nonexistent/x.dsse"]);
    assert_eq!(code, 2, "{json}");
    assert_eq!(json["error"]["code"], "IO_ERROR");
}

/// `elench add -` on the store, its stdin, stdout and stderr piped.
fn add_from_stdin(s: &KeyedStore) -> std::process::Child {
    std::process::Command::new(common::elench_path())
        .current_dir(s.dir())
        .env_remove("CI")
        .env_remove("NO_COLOR")
        .args(common::with_store(&s.store, &["add", "-"]))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// One signed assertion saying `text`: the envelope's path and the claim's id.
fn signed_assertion(s: &KeyedStore, text: &str) -> (std::path::PathBuf, String) {
    sign_cli(
        s.dir(),
        &ClaimBuilder::assertion(text).build(),
        &s.keys.agent,
    )
}

#[test]
fn a_signal_is_answered_while_add_waits_for_stdin() {
    let s = KeyedStore::new();
    let mut child = add_from_stdin(&s);
    // Nothing arrives on stdin; the writer keeps it open.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let sent = Instant::now();
    // The shell's own `kill`, so no separate kill binary is needed.
    let kill = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("kill -TERM {}", child.id()))
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    assert!(
        sent.elapsed() < Duration::from_secs(5),
        "took {:?}",
        sent.elapsed()
    );
    assert_eq!(out.status.code(), Some(143));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["error"]["code"], "CANCELLED");
    assert_eq!(json["data"]["created"], 0);
}

#[test]
fn add_from_stdin_takes_the_store_only_when_an_envelope_arrives() {
    let s = KeyedStore::new();
    let (env, id) = signed_assertion(&s, "slow producer");
    let mut child = add_from_stdin(&s);
    std::thread::sleep(Duration::from_millis(300));
    // While the producer is silent, other commands are not kept waiting.
    let (code, json) = s.run(&["--wait", "1", "status", "--all"]);
    assert_eq!(code, 0, "{json}");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&std::fs::read(&env).unwrap()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["data"]["created"], 1, "{json}");
    assert_eq!(json["data"]["claims"][0]["id"], id.as_str());
}

#[test]
fn add_from_stdin_appends_an_envelope_before_the_next_one_arrives() {
    // An agent that writes one envelope and waits for it to be stored must not wait for
    // its own next envelope: the chunk ends after a short silence and is appended.
    let s = KeyedStore::new();
    let (env, id) = signed_assertion(&s, "acknowledged alone");
    let mut child = add_from_stdin(&s);
    let mut stdin = child.stdin.take().unwrap();
    let text = std::fs::read_to_string(&env).unwrap();
    stdin
        .write_all(format!("{}\n", text.trim_end()).as_bytes())
        .unwrap();
    stdin.flush().unwrap();
    // stdin stays open and silent; the claim must be stored all the same.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (code, json) = s.run(&["status", id.as_str()]);
        if code == 0 {
            assert_eq!(json["data"]["claims"][0]["id"], id.as_str(), "{json}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the envelope is still not stored while its producer waits: {json}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["data"]["created"], 1, "{json}");
}

#[test]
fn keys_generate_writes_a_private_key_only_its_owner_reads_and_never_overwrites() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "keys",
        "generate",
        "--role",
        "agent",
        "--name",
        "bot",
        "--out",
        "bot.pem",
        "--pub-out",
        "bot.pub",
    ];
    let (code, json) = elench(dir.path(), &args);
    assert_eq!(code, 0, "{json}");
    let mode = std::fs::metadata(dir.path().join("bot.pem"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let keyid = json["data"]["keyid"].as_str().unwrap().to_owned();
    assert!(json["data"]["public_key_pem"]
        .as_str()
        .unwrap()
        .starts_with("-----BEGIN PUBLIC KEY-----"));
    // The public key printed is the one written, and its keyid is SHA-256 of the raw key.
    let pem = std::fs::read_to_string(dir.path().join("bot.pub")).unwrap();
    assert_eq!(json["data"]["public_key_pem"], pem.as_str());
    let vk = elench::keys::read_public_key_pem(&pem).unwrap();
    assert_eq!(elench::keys::keyid(&vk), keyid);
    // A second run does not replace the key.
    let before = std::fs::read(dir.path().join("bot.pem")).unwrap();
    let (code, json) = elench(dir.path(), &args);
    assert_eq!(code, 2, "{json}");
    assert_eq!(std::fs::read(dir.path().join("bot.pem")).unwrap(), before);
}

// ---- output: pages that say there is more, rows that carry the text, streams that stop ----

/// Adds `n` agent assertions (one bundle, one `add`); their ids in arrival order.
fn add_many(s: &KeyedStore, n: usize) -> Vec<String> {
    let mut bundle = String::new();
    let mut ids = Vec::new();
    for i in 0..n {
        let claim = ClaimBuilder::assertion(&format!("claim number {i}"))
            .set(
                "anchor",
                serde_json::json!({"tree": common::TREE, "strategy": "multi", "path": format!("src/f{i}.rs")}),
            )
            .build_with_id();
        ids.push(common::claim_id(&claim));
        bundle.push_str(&common::envelope_text(&claim, &s.keys.agent));
        bundle.push('\n');
    }
    let path = s.dir().join(common::fresh_name("many", "intoto.jsonl"));
    std::fs::write(&path, bundle).unwrap();
    let (code, out) = s.run(&["add", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    ids
}

#[test]
fn status_all_says_how_to_get_the_rest_in_text_and_tsv() {
    let s = KeyedStore::new();
    add_many(&s, 23);
    let store = s.store.to_str().unwrap();
    let text = run_raw(
        s.dir(),
        &["--store", store, "--format", "plain", "status", "--all"],
    );
    assert_eq!(text.code, 0, "{text:?}");
    assert!(
        text.stdout.contains("(more: --cursor 20)"),
        "{}",
        text.stdout
    );
    let tsv = run_raw(
        s.dir(),
        &["--store", store, "--format", "tsv", "status", "--all"],
    );
    assert_eq!(tsv.code, 0, "{tsv:?}");
    assert_eq!(tsv.stdout.lines().count(), 21, "a header and 20 rows");
    assert!(tsv.stderr.contains("more: --cursor 20"), "{tsv:?}");
    let log = run_raw(s.dir(), &["--store", store, "--format", "tsv", "log"]);
    assert!(log.stderr.contains("more: --cursor 20"), "{log:?}");
    // The last page says nothing more.
    let last = run_raw(
        s.dir(),
        &[
            "--store", store, "--format", "plain", "status", "--all", "--cursor", "20",
        ],
    );
    assert!(!last.stdout.contains("more:"), "{}", last.stdout);
}

#[test]
fn status_rows_carry_the_claim_text_and_anchor_path() {
    let s = KeyedStore::new();
    let ids = add_many(&s, 2);
    let (code, out) = s.run(&["status", &ids[1]]);
    assert_eq!(code, 0, "{out}");
    let row = &out["data"]["claims"][0];
    assert_eq!(row["text"], "claim number 1", "{out}");
    assert_eq!(row["anchor_path"], "src/f1.rs", "{out}");
    let store = s.store.to_str().unwrap();
    let tsv = run_raw(
        s.dir(),
        &["--store", store, "--format", "tsv", "status", "--all"],
    );
    let header: Vec<&str> = tsv.stdout.lines().next().unwrap().split('\t').collect();
    let first: Vec<&str> = tsv.stdout.lines().nth(1).unwrap().split('\t').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).expect(name);
    assert_eq!(first[col("text")], "claim number 0");
    assert_eq!(first[col("anchor_path")], "src/f0.rs");
}

/// `log --format jsonl` of many claims, read 5 lines, then `signal`: the stream stops and
/// ends on the CANCELLED error line with 128 + the signal.
fn stream_stops_on(signal: i32) {
    let s = KeyedStore::new();
    add_many(&s, 1500);
    let mut child = std::process::Command::new(common::elench_path())
        .current_dir(s.dir())
        .env_remove("CI")
        .args(common::with_store(
            &s.store,
            &["log", "--limit", "10000", "--format", "jsonl"],
        ))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    use std::io::BufRead;
    for _ in 0..5 {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        lines.push(line);
    }
    // SAFETY: kill(2) on the child's own pid.
    unsafe { libc::kill(child.id() as i32, signal) };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let status = child.wait().unwrap();
    let all: Vec<&str> = lines
        .iter()
        .map(String::as_str)
        .chain(rest.lines())
        .collect();
    assert!(all.len() < 1500, "stopped early: {} lines", all.len());
    let last: serde_json::Value = serde_json::from_str(all.last().unwrap()).unwrap();
    assert_eq!(last["error"]["code"], "CANCELLED", "{last}");
    assert_eq!(last["ok"], false);
    assert_eq!(last["meta"]["exit_code"], 128 + signal);
    assert!(!rest.contains("_summary"), "no summary after a stop");
    assert_eq!(status.code(), Some(128 + signal));
}

#[test]
fn a_jsonl_stream_stops_on_sigint() {
    stream_stops_on(libc::SIGINT);
}

#[test]
fn a_jsonl_stream_stops_on_sigterm() {
    stream_stops_on(libc::SIGTERM);
}

// ---- text that is not JSON: BAD_JSON, at the same place from every command ----

#[test]
fn text_that_is_not_json_is_bad_json_at_the_same_place_everywhere() {
    let s = KeyedStore::new();
    let agent = s.keys.agent.private.to_str().unwrap().to_owned();
    // Leading blank lines and indentation: `add` used to count from the first non-blank byte.
    let path = s.dir().join("broken.json");
    std::fs::write(&path, "\n\n  {\"a\": 1,\n   x}\n").unwrap();
    let file = path.to_str().unwrap();
    let mut messages = Vec::new();
    for args in [
        vec!["verify", file],
        vec!["add", file],
        vec!["sign", file, "--key", &agent],
    ] {
        let (code, out) = s.run(&args);
        assert_eq!(code, 2, "{args:?}: {out}");
        assert_eq!(out["error"]["code"], "BAD_JSON", "{args:?}: {out}");
        let message = out["error"]["message"].as_str().unwrap().to_owned();
        assert!(
            message.contains("at line 4 column 4"),
            "{args:?}: {message}"
        );
        messages.push(message);
    }
    // A bundle's line: the position is the file's too.
    let claim = ClaimBuilder::assertion("fine").build_with_id();
    let bundle = s.dir().join("mixed.intoto.jsonl");
    std::fs::write(
        &bundle,
        format!(
            "{}\n\n   {{x}}\n",
            common::envelope_text(&claim, &s.keys.agent)
        ),
    )
    .unwrap();
    let (code, out) = s.run(&["add", bundle.to_str().unwrap()]);
    assert_eq!(code, 3, "{out}");
    let r = &out["data"]["rejections"][0];
    assert_eq!(r["code"], "BAD_JSON", "{out}");
    assert_eq!(r["line"], 3, "{out}");
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .contains("at line 3 column 5"),
        "{out}"
    );
}

/// A file cut short ends where serde_json reads its end in the whole file, whitespace after
/// the cut included: `add`, `verify` and `sign` name the same line and column, serde_json's
/// (1-based; column 0 just past a line break).
#[test]
fn a_truncated_file_is_bad_json_at_serde_json_s_position_from_every_command() {
    let s = KeyedStore::new();
    let agent = s.keys.agent.private.to_str().unwrap().to_owned();
    for (n, text) in [
        "{\"payload\": ",
        "{\"payload\":\n",
        "{\"payload\":\"eyJ\"\n\n",
        "  {\"payloadType\"  \t",
        "{\"a\":[1,\n  \n",
    ]
    .iter()
    .enumerate()
    {
        let path = s.dir().join(format!("cut{n}.dsse"));
        std::fs::write(&path, text).unwrap();
        let e = serde_json::from_str::<serde_json::Value>(text).unwrap_err();
        let want = format!("at line {} column {}", e.line(), e.column());
        let file = path.to_str().unwrap();
        for args in [
            vec!["add", file],
            vec!["verify", file],
            vec!["sign", file, "--key", &agent],
        ] {
            let (code, out) = s.run(&args);
            assert_eq!(code, 2, "{args:?} of {text:?}: {out}");
            assert_eq!(out["error"]["code"], "BAD_JSON", "{args:?}: {out}");
            let message = out["error"]["message"].as_str().unwrap();
            assert!(
                message.ends_with(&want),
                "{args:?} of {text:?}: {message} (serde_json: {want})"
            );
        }
    }
}

#[test]
fn a_lone_surrogate_is_called_one() {
    let s = KeyedStore::new();
    let path = s.dir().join("surrogate.dsse");
    std::fs::write(
        &path,
        r#"{"payloadType":"x\ud800","payload":"","signatures":[]}"#,
    )
    .unwrap();
    let (code, out) = s.run(&["verify", path.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(out["error"]["code"], "BAD_JSON", "{out}");
    let message = out["error"]["message"].as_str().unwrap();
    assert!(message.contains("lone surrogate \\ud800"), "{message}");
    assert!(!message.contains("end of hex escape"), "{message}");
}

#[test]
fn a_number_beyond_2_53_in_a_claim_is_a_schema_violation_from_every_command() {
    let s = KeyedStore::new();
    let claim = ClaimBuilder::assertion("big").timestamp(1).build_with_id();
    let text = claim
        .to_string()
        .replace(r#""timestamp":1"#, r#""timestamp":9007199254740993"#);
    assert!(text.contains("9007199254740993"));
    let claim_path = s.dir().join("big.json");
    std::fs::write(&claim_path, &text).unwrap();
    let agent = s.keys.agent.private.to_str().unwrap();
    let (code, out) = s.run(&["sign", claim_path.to_str().unwrap(), "--key", agent]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(out["error"]["code"], "SCHEMA_VIOLATION", "sign: {out}");
    // The same claim signed by hand: verify and add say the same.
    let statement = serde_json::json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "tree", "digest": {"gitTree": common::TREE}}],
        "predicateType": "https://elench.dev/claim/v0.1",
        "predicate": "PLACEHOLDER",
    })
    .to_string()
    .replace(r#""PLACEHOLDER""#, &text);
    let env = common::sign_payload_raw(
        s.dir(),
        elench::envelope::PAYLOAD_TYPE,
        statement.as_bytes(),
        &s.keys.agent,
    );
    for command in ["verify", "add"] {
        let (code, out) = s.run(&[command, env.to_str().unwrap()]);
        assert_eq!(code, 2, "{command}: {out}");
        assert_eq!(out["error"]["code"], "SCHEMA_VIOLATION", "{command}: {out}");
        assert_eq!(
            out["error"]["pointer"], "/predicate/timestamp",
            "{command}: {out}"
        );
    }
}

// ---- the manual's recipes and rules, against the binary ----

/// `elench anchor SPEC --at DIR`'s anchor object.
fn anchor_of(dir: &std::path::Path, spec: &str) -> serde_json::Value {
    let (code, out) = elench(dir, &["anchor", spec, "--at", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{spec}: {out}");
    out["data"]["anchor"].clone()
}

#[test]
fn the_documented_digest_recipe_gives_what_anchor_gives() {
    let manual = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/carry-over.md"),
    )
    .unwrap();
    let recipes: Vec<&str> = manual
        .lines()
        .filter(|l| l.starts_with("awk ") && l.contains("sha256sum"))
        .collect();
    assert_eq!(recipes.len(), 2, "a range recipe and a whole-file one");
    let dir = tempfile::tempdir().unwrap();
    let files: [(&str, &[u8]); 5] = [
        ("empty.txt", b""),
        ("one-blank.txt", b"\n"),
        ("no-final-lf.txt", b"a  \r\nb"),
        ("crlf.txt", b"x\t\r\ny \r\n"),
        ("eight.txt", b"1\n2 \n3\n4\n5\t\n6\r\n7\n8"),
    ];
    for (name, bytes) in files {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    let recipe = |recipe: &str, file: &str| {
        let line = recipe
            .split('#')
            .next()
            .unwrap()
            .replace("src/lib.rs", file);
        let out = std::process::Command::new("sh")
            .args(["-c", &line])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{line}");
        String::from_utf8(out.stdout).unwrap()[..64].to_owned()
    };
    for (name, _) in files {
        let whole = anchor_of(dir.path(), name);
        assert_eq!(whole["contentDigest"], recipe(recipes[1], name), "{name}");
    }
    let empty = anchor_of(dir.path(), "empty.txt");
    assert_eq!(
        empty["contentDigest"],
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    let six = anchor_of(dir.path(), "eight.txt:1-6");
    assert_eq!(six["contentDigest"], recipe(recipes[0], "eight.txt"));
}

#[test]
fn anchor_paths_are_written_in_one_form() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/lib.rs"), "fn f() {}\n").unwrap();
    let abs = dir.path().join("src/lib.rs");
    for spec in [
        "src/lib.rs",
        "./src/lib.rs",
        "src//lib.rs",
        "src/./lib.rs",
        abs.to_str().unwrap(),
    ] {
        assert_eq!(anchor_of(dir.path(), spec)["path"], "src/lib.rs", "{spec}");
    }
    for spec in ["src/../src/lib.rs", ".git/config"] {
        let (code, out) = elench(
            dir.path(),
            &["anchor", spec, "--at", dir.path().to_str().unwrap()],
        );
        assert_eq!(code, 2, "{spec}: {out}");
        assert_eq!(out["error"]["code"], "BAD_ARGUMENTS", "{spec}: {out}");
    }
}

#[test]
fn seventeen_signatures_are_a_bad_envelope_from_verify_and_add() {
    let s = KeyedStore::new();
    let claim = ClaimBuilder::assertion("many signers").build_with_id();
    let mut env: serde_json::Value =
        serde_json::from_str(&common::envelope_text(&claim, &s.keys.agent)).unwrap();
    let one = env["signatures"][0].clone();
    let sigs: Vec<serde_json::Value> = (0..17)
        .map(|i| {
            let mut sig = one.clone();
            if i > 0 {
                sig["keyid"] = serde_json::json!(format!("other-{i}"));
            }
            sig
        })
        .collect();
    env["signatures"] = serde_json::json!(sigs);
    let path = s.dir().join("seventeen.dsse");
    std::fs::write(&path, env.to_string()).unwrap();
    for command in ["verify", "add"] {
        let (code, out) = s.run(&[command, path.to_str().unwrap()]);
        assert_eq!(code, 2, "{command}: {out}");
        assert_eq!(out["error"]["code"], "BAD_ENVELOPE", "{command}: {out}");
        assert_eq!(out["error"]["pointer"], "/signatures", "{command}: {out}");
    }
    // The manual says so, in both places.
    let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    let envelope = std::fs::read_to_string(docs.join("envelope.md")).unwrap();
    assert!(envelope.contains("most 16 signatures (`BAD_ENVELOPE`"));
    let errors = std::fs::read_to_string(docs.join("errors.md")).unwrap();
    let row = errors
        .lines()
        .find(|l| l.starts_with("| `BAD_ENVELOPE`"))
        .unwrap();
    assert!(row.contains("more than 16"), "{row}");
}
