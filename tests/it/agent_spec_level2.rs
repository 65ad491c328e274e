//! The CLI Agent Spec's level 2 requirements that `agent_spec.rs`'s probe profile does not
//! reach, each through the real binary: time limits (REQ-F-011, REQ-F-012), cancellation of
//! any command by SIGTERM or SIGINT (REQ-F-013, REQ-F-069), the response size cap (REQ-F-052)
//! and page sizes (REQ-F-019), the representations of `--format` and the path flags
//! (REQ-O-001), what child processes inherit (REQ-F-008, REQ-F-010, REQ-F-046, REQ-F-055),
//! escapes in data (REQ-F-007), `effect` (REQ-C-003), confirmation flags (REQ-O-021,
//! REQ-C-005), `check-permissions` (REQ-O-047), pure help (REQ-F-068), locale (REQ-F-005),
//! a closed pipe (REQ-F-014), headless mode (REQ-F-057), the stdin cap (REQ-F-054), every
//! argument error of a command line reported at once (REQ-F-015, REQ-C-006) and a remote that
//! never answers, bounded by `--connect-timeout` (REQ-C-012).
//!
//! Nothing here measures speed: time limits are given as small `--timeout` values and a test
//! only waits for the process to end (a hang fails after a generous limit).

use crate::common;

use common::{claim_id, envelope_text, finish_within, with_store, ClaimBuilder, KeyedStore};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a process may take before the test calls it hung.
const HANG_LIMIT: Duration = Duration::from_secs(60);

struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn elench_cmd(dir: &Path) -> Command {
    let mut cmd = Command::new(common::elench_path());
    cmd.current_dir(dir)
        .env_remove("ELENCH_STORE")
        .env_remove("ELENCH_TIMEOUT")
        .env_remove("ELENCH_MAX_OUTPUT_BYTES")
        .env_remove("ELENCH_MAX_STDIN_BYTES")
        .env_remove("CI")
        .env_remove("NO_COLOR")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Waits for `child` (killing it after HANG_LIMIT) and collects its output.
fn finish(child: Child) -> Out {
    let done = finish_within(child, HANG_LIMIT, "elench");
    Out {
        code: done.code,
        stdout: done.stdout,
        stderr: done.stderr,
    }
}

fn one_envelope(o: &Out) -> Value {
    let text = o.stdout.trim_end();
    assert!(
        !text.is_empty() && !text.contains('\n'),
        "stdout is one JSON object: {:?} (stderr {:?})",
        o.stdout,
        o.stderr
    );
    let v: Value = serde_json::from_str(text).unwrap();
    assert_eq!(v["meta"]["exit_code"], json!(o.code.unwrap()), "{v}");
    assert_eq!(v["ok"], json!(o.code == Some(0)), "{v}");
    v
}

/// A store holding `n` claims, added as one bundle; their ids in arrival order.
fn store_with(n: usize) -> (KeyedStore, Vec<String>) {
    let s = KeyedStore::new();
    let mut bundle = String::new();
    let mut ids = Vec::new();
    for i in 0..n {
        let c = ClaimBuilder::assertion(&format!("claim number {i} {}", "pad ".repeat(20)))
            .build_with_id();
        ids.push(claim_id(&c));
        bundle.push_str(&envelope_text(&c, &s.keys.agent));
        bundle.push('\n');
    }
    let path = s.dir().join("all.intoto.jsonl");
    std::fs::write(&path, bundle).unwrap();
    let (code, out) = s.run(&["add", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    (s, ids)
}

/// `keys add` of a fresh key: a command that waits for the writer lock and does not stop at
/// safe points of its own.
fn blocked_keys_add(s: &KeyedStore, extra: &[&str]) -> Child {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let k = common::make_key(s.dir(), "agent", &format!("latecomer{n}"));
    let mut args = vec![
        "keys",
        "add",
        "--role",
        "agent",
        "--name",
        "latecomer",
        k.public.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    elench_cmd(s.dir())
        .args(with_store(&s.store, &args))
        .stdin(Stdio::null())
        .spawn()
        .unwrap()
}

fn key_count(s: &KeyedStore) -> usize {
    let (_, list) = s.run(&["keys", "list", "--limit", "10000"]);
    list["data"]["keys"].as_array().unwrap().len()
}

// ---- REQ-F-011, REQ-F-012: time limits ----

#[test]
fn a_blocked_add_stops_at_its_time_limit_and_keeps_what_it_acknowledged() {
    let s = KeyedStore::new();
    let c = ClaimBuilder::assertion("arrives before the limit").build_with_id();
    let mut child = elench_cmd(s.dir())
        .args(with_store(&s.store, &["add", "-", "--timeout", "2"]))
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    // One envelope, then a writer that keeps the pipe open and says nothing more.
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{}", envelope_text(&c, &s.keys.agent)).unwrap();
    stdin.flush().unwrap();
    let o = finish(child);
    drop(stdin);
    assert_eq!(o.code, Some(10), "{}", o.stdout);
    let v = one_envelope(&o);
    assert_eq!(v["error"]["code"], "TIMEOUT", "{v}");
    assert_eq!(v["error"]["retryable"], false, "{v}");
    assert_eq!(v["error"]["context"]["timeout_ms"], 2000, "{v}");
    assert_eq!(v["meta"]["timeout_ms"], 2000, "{v}");
    // The actual elapsed time: it cannot be less than the limit.
    assert!(v["meta"]["duration_ms"].as_u64().unwrap() >= 2000, "{v}");
    assert_eq!(v["data"]["partial"], true, "{v}");
    assert_eq!(
        v["data"]["created"], 1,
        "acknowledged before the limit: {v}"
    );
    // What was acknowledged is stored, and nothing is half-written.
    let (code, st) = s.run(&["status", &claim_id(&c)]);
    assert_eq!(code, 0, "{st}");
    let (code, fsck) = s.run(&["fsck"]);
    assert_eq!(code, 0, "{fsck}");
    assert_eq!(
        fsck["warnings"],
        json!([]),
        "no torn tail, no rebuild: {fsck}"
    );
}

#[test]
fn a_command_blocked_where_it_cannot_stop_itself_is_answered_for_at_its_limit() {
    let s = KeyedStore::new();
    let before = key_count(&s);
    let lock = common::hold_writer_lock(&s.store);
    // keys add waits for the writer lock (up to --wait 30 s); the limit is 1 s.
    let o = finish(blocked_keys_add(&s, &["--timeout", "1"]));
    drop(lock);
    assert_eq!(o.code, Some(10), "{}", o.stdout);
    let v = one_envelope(&o);
    assert_eq!(v["error"]["code"], "TIMEOUT", "{v}");
    assert_eq!(v["data"]["partial"], true, "{v}");
    assert!(v["error"]["suggestion"]
        .as_str()
        .unwrap()
        .contains("--timeout"));
    assert_eq!(key_count(&s), before, "nothing was written");
}

#[test]
fn every_response_records_the_time_limit_in_force() {
    let (s, ids) = store_with(1);
    let limit = |args: &[&str], env: Option<(&str, &str)>| {
        let mut cmd = elench_cmd(s.dir());
        cmd.args(with_store(&s.store, args)).stdin(Stdio::null());
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        let v = one_envelope(&finish(cmd.spawn().unwrap()));
        v["meta"]["timeout_ms"].clone()
    };
    assert_eq!(limit(&["status", &ids[0]], None), 300_000);
    assert_eq!(limit(&["fsck"], None), 3_600_000, "fsck grows with the log");
    assert_eq!(limit(&["status", &ids[0], "--timeout", "0"], None), 0);
    assert_eq!(limit(&["status", &ids[0], "--timeout", "1.5"], None), 1500);
    assert_eq!(
        limit(&["status", &ids[0]], Some(("ELENCH_TIMEOUT", "7"))),
        7000
    );
    // --command-timeout is the same limit under a name that means it on `check` too; a
    // flag wins over the environment.
    assert_eq!(
        limit(&["status", &ids[0], "--command-timeout", "2"], None),
        2000
    );
    assert_eq!(
        limit(
            &["status", &ids[0], "--timeout", "3"],
            Some(("ELENCH_TIMEOUT", "7"))
        ),
        3000
    );
    // Two different limits for the same thing, or a limit that is not a number, is refused.
    let (code, v) = s.run(&[
        "status",
        &ids[0],
        "--timeout",
        "1",
        "--command-timeout",
        "2",
    ]);
    assert_eq!(code, 2, "{v}");
    assert_eq!(v["error"]["code"], "BAD_ARGUMENTS", "{v}");
    let o = finish(
        elench_cmd(s.dir())
            .args(with_store(&s.store, &["status", &ids[0]]))
            .env("ELENCH_TIMEOUT", "soon")
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert_eq!(o.code, Some(2), "{}", o.stdout);
    let v = one_envelope(&o);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ELENCH_TIMEOUT"),
        "{v}"
    );
}

// ---- REQ-F-013, REQ-F-069: signals, for every command ----

fn signalled(s: &KeyedStore, signals: &[i32]) -> Out {
    let lock = common::hold_writer_lock(&s.store);
    let child = blocked_keys_add(s, &[]);
    let pid = child.id() as i32;
    std::thread::sleep(Duration::from_millis(500));
    for sig in signals {
        // SAFETY: plain kill(2) of our own child.
        unsafe { libc::kill(pid, *sig) };
        std::thread::sleep(Duration::from_millis(100));
    }
    let o = finish(child);
    drop(lock);
    o
}

#[test]
fn sigterm_and_sigint_end_any_command_with_a_cancellation_response() {
    let s = KeyedStore::new();
    let before = key_count(&s);
    for (sig, code, name) in [
        (libc::SIGTERM, 143, "SIGTERM"),
        (libc::SIGINT, 130, "SIGINT"),
    ] {
        let o = signalled(&s, &[sig]);
        assert_eq!(o.code, Some(code), "{name}: {}", o.stdout);
        let v = one_envelope(&o);
        // The spec's code, and no second name beside it.
        assert_eq!(v["error"]["code"], "CANCELLED", "{v}");
        assert!(v["error"].get("spec_code").is_none(), "{v}");
        assert_eq!(v["error"]["context"]["signal"], name, "{v}");
        assert_eq!(v["error"]["phase"], "execution", "{v}");
        assert_eq!(v["data"]["partial"], true, "{v}");
    }
    assert_eq!(key_count(&s), before, "nothing was written");
}

#[test]
fn a_second_signal_ends_the_process_at_once_without_a_second_report() {
    let s = KeyedStore::new();
    let o = signalled(&s, &[libc::SIGINT, libc::SIGINT]);
    assert_eq!(o.code, Some(130), "{}", o.stdout);
    assert!(
        o.stdout.trim().lines().count() <= 1,
        "at most one report: {:?}",
        o.stdout
    );
}

// ---- REQ-F-019, REQ-F-052: a page of any allowed size and the response size cap ----

fn capped(s: &KeyedStore, args: &[String], cap: &str) -> (Value, usize) {
    let o = finish(
        elench_cmd(s.dir())
            .args(with_store(&s.store, args))
            .env("ELENCH_MAX_OUTPUT_BYTES", cap)
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let len = o.stdout.trim_end().len();
    (one_envelope(&o), len)
}

#[test]
fn the_largest_page_is_cut_to_the_cap_with_a_way_to_the_rest() {
    let (s, ids) = store_with(30);
    let (code, all) = s.run(&["log", "--limit", "10000"]);
    assert_eq!(code, 0, "{all}");
    assert_eq!(all["data"]["entries"].as_array().unwrap().len(), 30);
    assert_eq!(all["meta"]["pagination"]["truncated"], false);
    assert!(
        all["meta"].get("truncated").is_none(),
        "under the cap: {all}"
    );

    for list in [vec!["log"], vec!["status", "--all"]] {
        let key = if list[0] == "log" {
            "entries"
        } else {
            "claims"
        };
        let total = 30;
        let cap = "3000";
        let mut args: Vec<String> = list.iter().map(|a| a.to_string()).collect();
        args.extend(["--limit".into(), "10000".into()]);
        let mut seen: Vec<String> = Vec::new();
        let mut pages = 0;
        let mut cut = 0;
        loop {
            pages += 1;
            assert!(pages < 50, "{list:?}: the pages never end");
            let (v, len) = capped(&s, &args, cap);
            assert_eq!(v["ok"], true, "{v}");
            assert!(
                len <= cap.parse().unwrap(),
                "{list:?}: {len} bytes over the cap"
            );
            let items = v["data"][key].as_array().unwrap();
            for item in items {
                seen.push(item["id"].as_str().unwrap().to_owned());
            }
            let p = &v["meta"]["pagination"];
            if v["meta"].get("truncated").is_none() {
                // A page the cap left whole: continue as pagination says, if there is more.
                let Some(next) = p["next_cursor"].as_str() else {
                    break;
                };
                let at = args.iter().position(|a| a == "--cursor").unwrap();
                args[at + 1] = next.to_owned();
                continue;
            }
            cut += 1;
            let m = &v["meta"];
            assert_eq!(m["truncated"], true);
            assert_eq!(m["total_count"], total, "{v}");
            assert_eq!(m["returned_count"], json!(items.len()), "{v}");
            assert_eq!(m["pagination"]["has_more"], true, "{v}");
            assert!(v["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w["code"] == "RESPONSE_TRUNCATED"));
            let hint = m["truncation_hint"].as_str().unwrap();
            let next = m["pagination"]["next_cursor"].as_str().unwrap();
            assert!(hint.ends_with(&format!("--cursor {next}")), "{hint}");
            // The hint is the command to run next (after `elench --store PATH`).
            let words: Vec<String> = hint.split(' ').map(str::to_owned).collect();
            assert_eq!(words[0], "elench");
            args = words[3..].to_vec();
        }
        assert!(cut > 0, "{list:?}: the cap cut nothing");
        let mut unique = seen.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(seen.len(), total, "{list:?}: every item once: {seen:?}");
        assert_eq!(unique.len(), total, "{list:?}: every item once: {seen:?}");
        assert_eq!(seen, ids, "{list:?}: in order, none twice, none missing");
    }

    // A higher cap (the spec's example) lets the whole answer through.
    let args: Vec<String> = ["log", "--limit", "10000"]
        .iter()
        .map(|a| a.to_string())
        .collect();
    let (v, _) = capped(&s, &args, "5242880");
    assert!(v["meta"].get("truncated").is_none(), "{v}");
    // An answer that is not a list is cut too, and the hint raises the cap.
    let long = ClaimBuilder::assertion(&"a long text ".repeat(160)).build_with_id();
    let path = s.dir().join("long.dsse");
    std::fs::write(&path, envelope_text(&long, &s.keys.agent)).unwrap();
    let (code, out) = s.run(&["add", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let show = ["show".to_owned(), claim_id(&long)];
    let (_, whole) = capped(&s, &show, "0");
    let cap = whole * 2 / 3;
    let (v, len) = capped(&s, &show, &cap.to_string());
    assert!(len <= cap, "{len} > {cap}");
    assert_eq!(v["meta"]["truncated"], true, "{v}");
    assert!(v["meta"]["truncation_hint"]
        .as_str()
        .unwrap()
        .starts_with("ELENCH_MAX_OUTPUT_BYTES="));
}

// ---- REQ-O-001: --format and path flags ----

#[test]
fn format_selects_json_jsonl_tsv_or_plain_and_output_paths_refuse_format_names() {
    let (s, ids) = store_with(3);
    let run = |args: &[&str]| {
        finish(
            elench_cmd(s.dir())
                .args(with_store(&s.store, args))
                .stdin(Stdio::null())
                .spawn()
                .unwrap(),
        )
    };
    let o = run(&["log", "--format", "jsonl"]);
    assert_eq!(o.code, Some(0));
    let lines = common::json_lines(&o.stdout);
    assert_eq!(lines.len(), 4, "three rows and the summary: {}", o.stdout);
    assert_eq!(lines[0]["id"], json!(ids[0]));
    assert!(lines[..3].iter().all(|l| l.get("_summary").is_none()));
    // REQ-O-004: a successful answer ends on one summary line, with the page's pagination.
    let summary = &lines[3];
    assert_eq!(summary["_summary"], json!(true), "{summary}");
    assert_eq!(summary["rows"], json!(3));
    assert_eq!(summary["total"], json!(3));
    assert_eq!(summary["has_more"], json!(false));
    assert_eq!(summary["exit_code"], json!(0));
    assert!(summary["duration_ms"].is_u64());
    let o = run(&["log", "--format", "jsonl", "--limit", "2"]);
    let last: Value = serde_json::from_str(o.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(
        (&last["rows"], &last["has_more"], &last["total"]),
        (&json!(2), &json!(true), &json!(3)),
        "{last}"
    );
    assert!(last["next_cursor"].is_string(), "{last}");
    // A result that is one empty list has no rows.
    let o = run(&["remote", "list", "--format", "jsonl"]);
    assert_eq!(o.code, Some(0));
    let only: Value = serde_json::from_str(o.stdout.trim()).unwrap();
    assert_eq!(
        (&only["_summary"], &only["rows"]),
        (&json!(true), &json!(0)),
        "{}",
        o.stdout
    );

    let o = run(&["log", "--format", "tsv"]);
    assert_eq!(o.code, Some(0));
    let rows: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(rows.len(), 4, "a header and three rows: {}", o.stdout);
    let header: Vec<&str> = rows[0].split('\t').collect();
    let at = header.iter().position(|h| *h == "id").unwrap();
    assert_eq!(rows[1].split('\t').nth(at), Some(ids[0].as_str()));

    let o = run(&["status", &ids[0], "--format", "plain"]);
    assert_eq!(o.code, Some(0));
    assert!(o.stdout.contains(&ids[0][..15]) && !o.stdout.starts_with('{'));
    assert!(!o.stdout.contains('\u{1b}'));

    // A failure in jsonl ends with the error envelope.
    let unknown = format!("cl_{}", "0".repeat(64));
    let o = run(&["status", &unknown, "--format", "jsonl"]);
    assert_eq!(o.code, Some(5));
    let last: Value = serde_json::from_str(o.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["error"]["code"], "NOT_FOUND");
    assert!(
        !o.stdout.contains("_summary"),
        "a failure has no summary: {}",
        o.stdout
    );

    // -o json is --format json mistyped: refused, no file named json.
    for args in [
        vec!["export", "-o", "json"],
        vec!["export", "--output", "tsv"],
        vec!["checkpoint", "-o", "jsonl"],
    ] {
        let o = run(&args);
        assert_eq!(o.code, Some(2), "{args:?}: {}", o.stdout);
        let v = one_envelope(&o);
        assert!(
            v["error"]["message"].as_str().unwrap().contains("--format"),
            "{v}"
        );
    }
    for name in ["json", "tsv", "jsonl"] {
        assert!(!s.dir().join(name).exists(), "{name} was written");
    }
    // --output is the path flag's name; the old --out still works.
    let (code, v) = s.run(&["export", "--output", "a.jsonl"]);
    assert_eq!((code, v["data"]["effect"].clone()), (0, json!("created")));
    let (code, _) = s.run(&["export", "--out", "b.jsonl"]);
    assert_eq!(code, 0);
}

// ---- REQ-F-008, REQ-F-010, REQ-F-046, REQ-F-055: what child processes inherit ----

#[test]
fn child_processes_get_no_pager_no_editor_and_no_colour() {
    let s = KeyedStore::new();
    let bin = s.dir().join("fakebin");
    std::fs::create_dir(&bin).unwrap();
    let git = bin.join("git");
    std::fs::write(&git, "#!/bin/sh\nenv > \"$ELENCH_TEST_ENV_DUMP\"\nexit 1\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&git, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let remote = s.dir().join("remote.git");
    std::fs::create_dir(&remote).unwrap();
    let (code, out) = s.run(&["remote", "add", "origin", remote.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for (var, value) in [("NO_COLOR", ""), ("TERM", "dumb")] {
        let dump = s.dir().join(format!("env-{var}"));
        let o = finish(
            elench_cmd(s.dir())
                .args(with_store(&s.store, &["pull"]))
                .env("PATH", &path)
                .env("ELENCH_TEST_ENV_DUMP", &dump)
                .env("PAGER", "less")
                .env("GIT_PAGER", "less")
                .env("EDITOR", "vim")
                .env(var, value)
                .stdin(Stdio::null())
                .spawn()
                .unwrap(),
        );
        assert_ne!(o.code, Some(0), "the fake git fails: {}", o.stdout);
        let env = std::fs::read_to_string(&dump).expect("git ran");
        for want in [
            "PAGER=cat",
            "GIT_PAGER=cat",
            "MANPAGER=cat",
            "LESS=-F -X -R",
            "EDITOR=true",
            "VISUAL=true",
            "GIT_EDITOR=true",
            "NO_COLOR=1",
            "GIT_TERMINAL_PROMPT=0",
        ] {
            assert!(
                env.lines().any(|l| l == want),
                "{var}={value:?}: git's environment lacks {want}:\n{env}"
            );
        }
    }
}

// ---- REQ-F-007: escapes in data ----

#[test]
fn terminal_escapes_in_a_claim_never_reach_the_json() {
    let s = KeyedStore::new();
    let c = ClaimBuilder::assertion("\u{1b}[31mred\u{1b}[0m text\r\n\u{1b}]0;title\u{7}end")
        .build_with_id();
    let path = s.dir().join("c.dsse");
    std::fs::write(&path, envelope_text(&c, &s.keys.agent)).unwrap();
    let (code, out) = s.run(&["add", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let o = finish(
        elench_cmd(s.dir())
            .args(with_store(&s.store, &["show", &claim_id(&c)]))
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert_eq!(o.code, Some(0), "{}", o.stdout);
    assert!(
        !o.stdout.contains("\\u001b") && !o.stdout.contains("\\r") && !o.stdout.contains("\\u0007"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains("red text\\nend"), "{}", o.stdout);
}

// ---- REQ-C-003: what a mutating command did ----

#[test]
fn every_mutating_command_says_what_it_did() {
    let s = KeyedStore::new();
    // The spec's four values and nothing else.
    let allowed = ["created", "updated", "deleted", "noop"];
    let effect = |args: &[&str]| {
        let (code, v) = s.run(args);
        assert_eq!(code, 0, "{args:?}: {v}");
        let e = v["data"]["effect"].as_str().unwrap_or_default().to_owned();
        assert!(allowed.contains(&e.as_str()), "{args:?}: effect {e:?}: {v}");
        e
    };
    let c = ClaimBuilder::assertion("one").build_with_id();
    let path = s.dir().join("one.dsse");
    std::fs::write(&path, envelope_text(&c, &s.keys.agent)).unwrap();
    let p = path.to_str().unwrap();
    assert_eq!(effect(&["init"]), "noop", "the store exists");
    assert_eq!(effect(&["add", p]), "created");
    assert_eq!(effect(&["add", p]), "noop");
    assert_eq!(effect(&["export", "-o", "x.jsonl"]), "created");
    assert_eq!(effect(&["export", "-o", "x.jsonl"]), "updated");
    assert_eq!(effect(&["checkpoint", "-o", "cp.json"]), "created");
    assert_eq!(effect(&["checkpoint"]), "noop");
    assert_eq!(effect(&["reindex"]), "updated");
    assert_eq!(effect(&["fsck"]), "noop");
    let remote = s.dir().join("r.git");
    std::fs::create_dir(&remote).unwrap();
    let r = remote.to_str().unwrap();
    assert_eq!(effect(&["remote", "add", "origin", r]), "created");
    assert_eq!(effect(&["remote", "add", "origin", r]), "noop");
    let k = &s.keys.human.keyid;
    // Retiring changes the key's state; `retired` says how.
    let (code, v) = s.run(&["keys", "retire", k, "--dry-run"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["data"]["effect"], "would_update", "{v}");
    assert_eq!(
        effect(&["keys", "retire", k, "--confirm-destructive"]),
        "updated"
    );
    let (_, v) = s.run(&["keys", "retire", k, "--yes"]);
    assert_eq!(v["data"]["effect"], "noop", "{v}");
    assert_eq!(v["data"]["retired"], true, "{v}");
    // A dry run says what it would do.
    let d = ClaimBuilder::assertion("two").build_with_id();
    let dp = s.dir().join("two.dsse");
    std::fs::write(&dp, envelope_text(&d, &s.keys.agent)).unwrap();
    let (code, v) = s.run(&["add", "--dry-run", dp.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["data"]["effect"], "would_create", "{v}");
    assert_eq!(v["meta"]["dry_run"], true, "{v}");
}

// ---- REQ-O-021, REQ-C-005: confirming a destructive command ----

#[test]
fn a_destructive_command_takes_confirm_destructive_and_never_asks_when_told_not_to() {
    let s = KeyedStore::new();
    let k = s.keys.human.keyid.clone();
    let (code, v) = s.run(&["keys", "retire", &k, "--non-interactive"]);
    assert_eq!(code, 4, "{v}");
    assert_eq!(v["error"]["code"], "INPUT_REQUIRED", "{v}");
    let (code, v) = s.run(&["keys", "retire", &k]);
    assert_eq!(code, 2, "{v}");
    assert_eq!(v["error"]["code"], "CONFIRMATION_REQUIRED");
    assert_eq!(
        v["error"]["context"]["would_affect"]["keys"][0]["keyid"],
        json!(k)
    );
    let (code, v) = s.run(&["keys", "retire", &k, "--confirm-destructive"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["meta"]["confirmed"], true, "{v}");
    assert_eq!(v["meta"]["dry_run"], false, "{v}");
    assert_eq!(v["data"]["retired"], true);
}

// ---- REQ-O-047, REQ-C-029: scopes ----

#[test]
fn check_permissions_reports_that_no_command_needs_a_scope() {
    let dir = tempfile::tempdir().unwrap();
    let (code, v) = common::elench(dir.path(), &["check-permissions"]);
    assert_eq!(code, 0, "{v}");
    let commands = v["data"]["commands"].as_object().unwrap();
    assert!(commands.len() > 20, "{v}");
    for (name, c) in commands {
        assert_eq!(c["required_scopes"], json!([]), "{name}");
        assert_eq!(c["over_privileged"], false, "{name}");
        assert_eq!(c["covered"], true, "{name}");
    }
    let (code, v) = common::elench(dir.path(), &["check-permissions", "--for", "keys retire"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["data"]["command"], "keys retire");
    assert_eq!(v["data"]["active_scopes"], json!([]));
    let (code, v) = common::elench(dir.path(), &["check-permissions", "--for", "frobnicate"]);
    assert_eq!(code, 5, "{v}");
    assert_eq!(v["error"]["code"], "COMMAND_NOT_FOUND");
}

// ---- REQ-F-068: help and version change nothing ----

#[test]
fn help_and_version_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    for args in [
        vec![],
        vec!["--help"],
        vec!["-h"],
        vec!["--version"],
        vec!["-V"],
        vec!["status", "--help"],
        vec!["keys", "retire", "--help"],
        vec!["add", "-h"],
    ] {
        let o = finish(
            elench_cmd(dir.path())
                .args(&args)
                .env("HOME", &home)
                .stdin(Stdio::null())
                .spawn()
                .unwrap(),
        );
        assert_eq!(o.code, Some(0), "{args:?}");
        let made: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(made, vec![std::ffi::OsString::from("home")], "{args:?}");
        assert_eq!(std::fs::read_dir(&home).unwrap().count(), 0, "{args:?}");
    }
}

// ---- REQ-F-005: locale ----

#[test]
fn output_is_the_same_in_every_locale() {
    let (s, ids) = store_with(3);
    let answer = |lang: &str, args: &[&str]| {
        let o = finish(
            elench_cmd(s.dir())
                .args(with_store(&s.store, args))
                .env("LC_ALL", lang)
                .env("LANG", lang)
                .env("LC_NUMERIC", lang)
                .stdin(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let mut v = one_envelope(&o);
        v["meta"]["duration_ms"] = json!(0);
        v
    };
    for args in [
        vec!["log"],
        vec!["status", "--all"],
        vec!["keys", "list"],
        vec!["show", &ids[1]],
    ] {
        assert_eq!(answer("de_DE.UTF-8", &args), answer("C", &args), "{args:?}");
    }
}

// ---- REQ-F-014: a reader that stops reading ----

#[test]
fn a_reader_that_stops_reading_is_no_failure() {
    let dir = tempfile::tempdir().unwrap();
    // The bash completion script is larger than a pipe's buffer.
    let mut child = elench_cmd(dir.path())
        .args(["completions", "bash"])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut first = [0u8; 16];
    out.read_exact(&mut first).unwrap();
    drop(out);
    // finish() reads what is left of stdout: give it an empty pipe of its own.
    let o = {
        let mut err = child.stderr.take().unwrap();
        let started = Instant::now();
        let code = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status.code();
            }
            assert!(started.elapsed() < HANG_LIMIT, "completions did not end");
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        let _ = err.read_to_string(&mut stderr);
        (code, stderr)
    };
    assert_eq!(o.0, Some(0), "stderr: {}", o.1);
    assert_eq!(o.1, "", "nothing to say about a closed pipe");
}

// ---- REQ-F-057: headless mode ----

#[test]
fn headless_mode_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let run = |display: Option<&str>| {
        let mut cmd = elench_cmd(dir.path());
        cmd.args(["manifest"])
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .stdin(Stdio::null());
        if let Some(d) = display {
            cmd.env("DISPLAY", d);
        }
        one_envelope(&finish(cmd.spawn().unwrap()))["meta"]["headless"].clone()
    };
    assert_eq!(run(None), true);
    if cfg!(target_os = "linux") {
        assert_eq!(run(Some(":0")), Value::Null, "a display is not headless");
    }
}

// ---- REQ-F-054: the stdin cap ----

#[test]
fn stdin_over_the_cap_is_refused_and_input_file_is_the_way() {
    let s = KeyedStore::new();
    let c = ClaimBuilder::assertion("through stdin").build_with_id();
    let env = envelope_text(&c, &s.keys.agent);
    let verify = |stdin: &[u8], cap: Option<&str>| {
        let mut cmd = elench_cmd(s.dir());
        cmd.args(with_store(&s.store, &["verify", "-"]))
            .stdin(Stdio::piped());
        if let Some(c) = cap {
            cmd.env("ELENCH_MAX_STDIN_BYTES", c);
        }
        let mut child = cmd.spawn().unwrap();
        let mut pipe = child.stdin.take().unwrap();
        let bytes = stdin.to_vec();
        let writer = std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
        let o = finish(child);
        writer.join().unwrap();
        one_envelope(&o)
    };
    let v = verify(env.as_bytes(), None);
    assert_eq!(v["ok"], true, "{v}");
    let big = format!("{env}{}", " ".repeat(70 * 1024));
    let v = verify(big.as_bytes(), None);
    assert_eq!(v["meta"]["exit_code"], 2, "{v}");
    assert_eq!(v["error"]["code"], "STDIN_TOO_LARGE", "{v}");
    assert_eq!(v["error"]["phase"], "validation", "{v}");
    let v = verify(env.as_bytes(), Some("100"));
    assert_eq!(v["error"]["code"], "STDIN_TOO_LARGE", "{v}");
    // The refusal says how to give the input instead.
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--input-file"),
        "{v}"
    );
    assert!(
        v["error"]["suggestion"]
            .as_str()
            .unwrap()
            .contains("--input-file"),
        "{v}"
    );
    // The same input from a file is fine, as the path argument or as --input-file.
    let path = s.dir().join("big.dsse");
    std::fs::write(&path, &big).unwrap();
    let p = path.to_str().unwrap();
    let (code, v) = s.run(&["verify", p]);
    assert_eq!(code, 0, "{v}");
    let (code, v) = s.run(&["verify", "--input-file", p]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["data"]["id"], claim_id(&c), "{v}");
    // Both at once is a usage error, and so is neither.
    for args in [vec!["verify", p, "--input-file", p], vec!["verify"]] {
        let (code, v) = s.run(&args);
        assert_eq!(code, 2, "{args:?}: {v}");
        assert_eq!(v["error"]["code"], "BAD_ARGUMENTS", "{args:?}: {v}");
    }
    // `--input-file -` is stdin, under the same cap.
    let o = finish({
        let mut child = elench_cmd(s.dir())
            .args(with_store(&s.store, &["verify", "--input-file", "-"]))
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(env.as_bytes()).unwrap();
        drop(pipe);
        child
    });
    assert_eq!(one_envelope(&o)["ok"], true, "{}", o.stdout);
    // sign and add take it too.
    let claim = ClaimBuilder::assertion("signed from --input-file").build();
    let claim_path = s.dir().join("from-flag.json");
    std::fs::write(&claim_path, claim.to_string()).unwrap();
    let envelope_path = s.dir().join("from-flag.dsse");
    let (code, v) = s.run(&[
        "sign",
        "--input-file",
        claim_path.to_str().unwrap(),
        "--key",
        s.keys.agent.private.to_str().unwrap(),
        "-o",
        envelope_path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{v}");
    let id = v["data"]["id"].as_str().unwrap().to_owned();
    let (code, v) = s.run(&["add", "--input-file", envelope_path.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["data"]["created"], 1, "{v}");
    assert_eq!(v["data"]["claims"][0]["id"], id, "{v}");
    // The manifest lists --input-file for each command that reads stdin.
    let (_, m) = s.run(&["manifest"]);
    for c in ["sign", "verify", "add"] {
        let t = &m["data"]["commands"][c]["flags"]["input-file"]["type"];
        assert!(t == "string" || t == "array", "{c}: {t}");
    }
}

// ---- REQ-F-015, REQ-C-006: every argument error at once, before anything runs ----

/// Every file under `dir` with its bytes: what "nothing changed" is checked against.
fn snapshot(dir: &Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap_or_default());
            }
        }
    }
    out
}

/// `(param, value)` of each entry of `error.errors`, in order.
fn argument_errors(v: &Value) -> Vec<(String, Option<String>)> {
    let errors = v["error"]["errors"]
        .as_array()
        .unwrap_or_else(|| panic!("error.errors is a list: {v}"));
    for e in errors {
        // A made-up identifier has its own code and names the pattern; every other error
        // is BAD_ARGUMENTS.
        let made_up = e["code"] == "INVALID_AGENT_INPUT";
        assert!(made_up || e["code"] == "BAD_ARGUMENTS", "{v}");
        assert_eq!(e["rejected_pattern"].is_string(), made_up, "{v}");
        assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
    }
    errors
        .iter()
        .map(|e| {
            (
                e["param"].as_str().unwrap().to_owned(),
                e["value"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

fn pair(param: &str, value: Option<&str>) -> (String, Option<String>) {
    (param.to_owned(), value.map(str::to_owned))
}

#[test]
fn every_argument_error_of_a_line_is_reported_at_once_and_nothing_runs() {
    let (s, _) = store_with(2);
    let before = snapshot(s.dir());
    let too_big = "99999999999999999999999";
    // An unknown flag, a --limit out of range and a malformed claim id: one response.
    let (code, v) = s.run(&["status", "cl_bogus", "--limit", too_big, "--frobnicate"]);
    assert_eq!(code, 2, "{v}");
    assert_eq!(v["error"]["code"], "BAD_ARGUMENTS", "{v}");
    assert_eq!(v["error"]["phase"], "validation", "{v}");
    let found = argument_errors(&v);
    assert_eq!(found.len(), 3, "{v}");
    for e in [
        pair("--frobnicate", None),
        pair("--limit", Some(too_big)),
        pair("<ID>", Some("cl_bogus")),
    ] {
        assert!(found.contains(&e), "{e:?} in {v}");
    }
    // The message is the first error's, as it was when only that one was reported.
    assert_eq!(v["error"]["message"], v["error"]["errors"][0]["message"]);
    assert_eq!(
        v["error"]["message"],
        "unexpected argument '--frobnicate' found"
    );

    // Beyond the parser: elench's own checks (the page, the ids) are all made at once.
    let (code, v) = s.run(&["status", "--all", "--limit", "0", "--cursor", "soon"]);
    assert_eq!(code, 2, "{v}");
    assert_eq!(
        argument_errors(&v),
        vec![pair("--limit", Some("0")), pair("--cursor", Some("soon"))]
    );
    let (code, v) = s.run(&["status", "cl_zz", "not-an-id", "cl_abcd"]);
    assert_eq!(code, 2, "{v}");
    assert_eq!(
        argument_errors(&v),
        vec![pair("<ID>", Some("cl_zz")), pair("<ID>", Some("not-an-id"))]
    );

    // Commands that change things change nothing: a check, a retirement, a remote.
    let key = s.keys.harness.private.to_str().unwrap().to_owned();
    let (code, v) = s.run(&[
        "check",
        "cl_bogus",
        "--key",
        &key,
        "--jobs",
        "0",
        "--frobnicate",
        "--repeat",
        "0",
    ]);
    assert_eq!(code, 2, "{v}");
    let found = argument_errors(&v);
    for e in [
        pair("--frobnicate", None),
        pair("<ID>", Some("cl_bogus")),
        pair("--jobs", Some("0")),
        pair("--repeat", Some("0")),
    ] {
        assert!(found.contains(&e), "{e:?} in {v}");
    }
    let (code, v) = s.run(&[
        "keys",
        "retire",
        "../../etc/passwd",
        "--confirm-destructive",
        "--frobnicate",
    ]);
    assert_eq!(code, 2, "{v}");
    assert_eq!(
        argument_errors(&v),
        vec![
            pair("--frobnicate", None),
            pair("<KEYID>", Some("../../etc/passwd"))
        ]
    );
    // The first error decides error.code; the made-up keyid keeps its own code in the list.
    assert_eq!(v["error"]["code"], "BAD_ARGUMENTS", "{v}");
    assert_eq!(
        v["error"]["errors"][1]["code"], "INVALID_AGENT_INPUT",
        "{v}"
    );
    assert_eq!(
        v["error"]["errors"][1]["rejected_pattern"], "path_traversal",
        "{v}"
    );
    // clap's own wording first, then elench's value rules, each in the order of the line.
    let (code, v) = s.run(&["remote", "add", "bad/name", "", "--timeout", "soon"]);
    assert_eq!(code, 2, "{v}");
    assert_eq!(
        argument_errors(&v),
        vec![
            pair("--timeout", Some("soon")),
            pair("<NAME>", Some("bad/name")),
            pair("<URL>", Some(""))
        ]
    );
    // `--limit -3`: the parser takes -3 for an option; that is one error, about --limit.
    let (code, v) = s.run(&["log", "--limit", "-3", "--frobnicate"]);
    assert_eq!(code, 2, "{v}");
    assert_eq!(
        argument_errors(&v),
        vec![pair("--limit", Some("-3")), pair("--frobnicate", None)]
    );
    // One error is a list of one, with the message it always had.
    let (code, v) = s.run(&["log", "--limit", "0"]);
    assert_eq!(code, 2, "{v}");
    assert_eq!(argument_errors(&v), vec![pair("--limit", Some("0"))]);
    assert_eq!(v["error"]["message"], "--limit must be between 1 and 10000");
    assert_eq!(
        snapshot(s.dir()),
        before,
        "a refused command line changes nothing"
    );

    // People see every error too, on stderr.
    let o = finish(
        elench_cmd(s.dir())
            .args(with_store(
                &s.store,
                &[
                    "--format",
                    "text",
                    "status",
                    "cl_bogus",
                    "--limit",
                    too_big,
                    "--frobnicate",
                ],
            ))
            .spawn()
            .unwrap(),
    );
    assert_eq!(o.code, Some(2));
    assert!(o.stdout.is_empty(), "{}", o.stdout);
    for needle in ["'--frobnicate'", too_big, "\"cl_bogus\" is not a claim id"] {
        assert!(o.stderr.contains(needle), "{needle} in {}", o.stderr);
    }
    let o = finish(
        elench_cmd(s.dir())
            .args(with_store(
                &s.store,
                &[
                    "--format", "plain", "status", "--all", "--limit", "0", "--cursor", "x",
                ],
            ))
            .spawn()
            .unwrap(),
    );
    assert_eq!(o.code, Some(2));
    assert_eq!(
        o.stderr.matches("error[BAD_ARGUMENTS]").count(),
        2,
        "{}",
        o.stderr
    );
    assert_eq!(snapshot(s.dir()), before);
}

/// Each value is judged by its own argument's rule wherever it stands, so a refused value is
/// reported beside a missing argument, or a requirement between options, on the same line
/// (the parser stops at its first error; the walk over the line does not).
#[test]
fn refused_values_are_reported_beside_missing_arguments() {
    let s = KeyedStore::new();
    let before = snapshot(s.dir());
    // `check` without its --key.
    let (code, v) = s.run(&["check", "--all", "--jobs", "0", "--runner", "x"]);
    assert_eq!(code, 2, "{v}");
    assert_eq!(
        argument_errors(&v),
        vec![
            pair("--jobs", Some("0")),
            pair("--runner", Some("x")),
            pair("--key", None)
        ]
    );
    // `remote add` without its URL.
    let (code, v) = s.run(&["remote", "add", "bad/name"]);
    assert_eq!(code, 2, "{v}");
    assert_eq!(
        argument_errors(&v),
        vec![pair("<NAME>", Some("bad/name")), pair("<URL>", None)]
    );
    // --no-ignore wants --at: a requirement the parser keeps to itself.
    let (code, v) = s.run(&["status", "--all", "--no-ignore", "--limit", "0"]);
    assert_eq!(code, 2, "{v}");
    assert_eq!(
        argument_errors(&v),
        vec![pair("--limit", Some("0")), pair("--at", None)]
    );
    // A refused value does not push the next one into its place.
    let (code, v) = s.run(&["why", "bad", "cl_abcd"]);
    assert_eq!(code, 2, "{v}");
    assert_eq!(argument_errors(&v), vec![pair("<ID>", Some("bad"))]);
    assert_eq!(snapshot(s.dir()), before, "a refused line changes nothing");
}

/// A value refused by elench's own rules never keeps anyone from help: `--help` after it is
/// answered as the parser answers it (exit 0, help on stderr off a terminal); an error in
/// the parser's own words before `--help` is still an error.
#[test]
fn help_after_a_refused_value_is_still_help() {
    let tmp = tempfile::tempdir().unwrap();
    let help = common::run_raw(tmp.path(), &["status", "--help"]);
    for args in [
        &["status", "cl_bogus", "--help"][..],
        &["status", "--all", "--limit", "0", "--help"],
    ] {
        let run = common::run_raw(tmp.path(), args);
        assert_eq!(run.code, 0, "{args:?}: {run:?}");
        assert_eq!(run.stdout, "", "{args:?}");
        assert_eq!(run.stderr, help.stderr, "{args:?}");
    }
    let run = common::run_raw(tmp.path(), &["log", "--frobnicate", "--help"]);
    assert_eq!(run.code, 2, "{run:?}");
    let run = common::run_raw(tmp.path(), &["show", "cl_bogus", "--version"]);
    assert_eq!((run.code, run.stdout.lines().count()), (0, 1), "{run:?}");
}

// ---- REQ-C-012: --connect-timeout for the commands that reach a remote ----

#[test]
fn a_remote_that_never_answers_fails_within_the_connect_timeout() {
    if Command::new("git").arg("--version").output().is_err() {
        eprintln!("skipped: git is not installed");
        return;
    }
    let s = KeyedStore::new();
    let port = common::silent_listener();
    // An ssh that writes down how it was called, then waits as one that gets no answer.
    let bin = s.dir().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let fake_ssh = bin.join("ssh");
    std::fs::write(
        &fake_ssh,
        "#!/bin/sh\necho \"$@\" >> \"$SSH_RECORD\"\nexec sleep 10\n",
    )
    .unwrap();
    let executable = <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755);
    std::fs::set_permissions(&fake_ssh, executable).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let remotes = [
        ("plain", format!("git://127.0.0.1:{port}/log.git")),
        ("web", format!("http://127.0.0.1:{port}/log.git")),
        ("secure", format!("ssh://127.0.0.1:{port}/log.git")),
    ];
    for (name, url) in &remotes {
        let (code, v) = s.run(&["remote", "add", name, url]);
        assert_eq!(code, 0, "{v}");
    }
    let exchange = |args: &[&str], env: &[(&str, &str)], record: &Path| {
        let mut cmd = elench_cmd(s.dir());
        cmd.args(with_store(&s.store, args))
            .env("PATH", &path)
            .env("SSH_RECORD", record)
            .env_remove("GIT_SSH_COMMAND")
            .env_remove("GIT_SSH")
            .env_remove("GIT_CONFIG_COUNT");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let started = Instant::now();
        let o = finish(cmd.spawn().unwrap());
        (o, started.elapsed())
    };
    let unreachable = |o: &Out, took: Duration, name: &str, url: &str| {
        let v = one_envelope(o);
        assert_eq!(o.code, Some(12), "{v}");
        assert_eq!(v["error"]["code"], "REMOTE_UNREACHABLE", "{v}");
        assert_eq!(v["error"]["retryable"], true, "{v}");
        let message = v["error"]["message"].as_str().unwrap();
        for needle in [name, url, "--connect-timeout"] {
            assert!(message.contains(needle), "{needle} in {message}");
        }
        assert!(v["error"]["suggestion"].is_string(), "{v}");
        assert!(
            took >= Duration::from_secs(1),
            "{took:?}: not before the limit"
        );
        // The limit, and the time to start elench and git on a busy machine.
        assert!(took < Duration::from_secs(8), "{took:?}: {v}");
    };
    let record = s.dir().join("ssh-calls.txt");
    // Every transport on pull; push too on one (sync starts with a pull).
    for (name, url) in &remotes {
        for verb in ["pull", "push"] {
            if *name != "plain" && verb != "pull" {
                continue;
            }
            let (o, took) = exchange(&[verb, name, "--connect-timeout", "1"], &[], &record);
            unreachable(&o, took, name, url);
        }
    }
    // ssh itself was told to give up as soon.
    let calls = std::fs::read_to_string(&record).unwrap_or_default();
    assert!(calls.contains("-o ConnectTimeout=1"), "{calls:?}");
    // An ssh command of the user's own is left as it is, and the limit still holds.
    for env in [
        vec![("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")],
        vec![
            ("GIT_CONFIG_COUNT", "1"),
            ("GIT_CONFIG_KEY_0", "core.sshCommand"),
            ("GIT_CONFIG_VALUE_0", "ssh -o BatchMode=yes"),
        ],
    ] {
        let theirs = s.dir().join(format!("ssh-theirs-{}.txt", env.len()));
        let (o, took) = exchange(&["pull", "secure", "--connect-timeout", "1"], &env, &theirs);
        unreachable(&o, took, "secure", &remotes[2].1);
        let calls = std::fs::read_to_string(&theirs).unwrap_or_default();
        assert!(calls.contains("-o BatchMode=yes"), "{env:?}: {calls:?}");
        assert!(!calls.contains("ConnectTimeout"), "{env:?}: {calls:?}");
    }
    // The manifest lists the flag on each command that reaches a remote.
    let (_, m) = s.run(&["manifest"]);
    for c in ["push", "pull", "sync"] {
        let f = &m["data"]["commands"][c]["flags"]["connect-timeout"];
        assert_eq!(f["required"], false, "{c}: {f}");
        assert!(
            f["description"].as_str().unwrap().contains("first contact"),
            "{c}: {f}"
        );
    }
}

// ---- REQ-F-045: identifiers an agent made up ----

#[test]
fn made_up_identifiers_are_invalid_agent_input_with_the_pattern_named() {
    let (s, ids) = store_with(1);
    let before = snapshot(s.dir());
    let cases: [(&[&str], &str, &str); 10] = [
        (
            &["show", "../../etc/passwd"],
            "../../etc/passwd",
            "path_traversal",
        ),
        (
            &["status", "cl_abcd/../x"],
            "cl_abcd/../x",
            "path_traversal",
        ),
        (
            &["status", "cl_%2e%2e%2fetc%2fpasswd"],
            "cl_%2e%2e%2fetc%2fpasswd",
            "path_traversal",
        ),
        (&["blast", "cl_abcd%2e"], "cl_abcd%2e", "percent_encoded"),
        (&["show", "cl_abcd?x=1"], "cl_abcd?x=1", "query"),
        (&["status", "cl_abcd&x"], "cl_abcd&x", "query"),
        (&["show", "cl_abcd#frag"], "cl_abcd#frag", "fragment"),
        (
            &["keys", "retire", "..%2fkeys", "--yes"],
            "..%2fkeys",
            "path_traversal",
        ),
        (&["pull", "origin?ref=main"], "origin?ref=main", "query"),
        (&["push", "origin#main"], "origin#main", "fragment"),
    ];
    for (args, value, pattern) in cases {
        let (code, v) = s.run(args);
        assert_eq!(code, 2, "{args:?}: {v}");
        let e = &v["error"];
        assert_eq!(e["code"], "INVALID_AGENT_INPUT", "{args:?}: {v}");
        assert_eq!(e["input_value"], value, "{args:?}: {v}");
        assert_eq!(e["rejected_pattern"], pattern, "{args:?}: {v}");
        assert_eq!(e["phase"], "validation", "{args:?}: {v}");
        assert_eq!(e["retryable"], false, "{args:?}: {v}");
        assert!(e["suggestion"].is_string(), "{args:?}: {v}");
        assert_eq!(e["errors"][0]["code"], "INVALID_AGENT_INPUT", "{v}");
        assert_eq!(e["errors"][0]["value"], value, "{v}");
        assert_eq!(e["errors"][0]["rejected_pattern"], pattern, "{v}");
        assert!(v["data"].is_null(), "nothing ran: {v}");
    }
    assert_eq!(
        snapshot(s.dir()),
        before,
        "nothing was looked up or changed"
    );

    // Several errors: each keeps its code; the first decides error.code and the top-level
    // value and pattern.
    let (code, v) = s.run(&["status", "../x", "cl_bogus"]);
    assert_eq!(code, 2, "{v}");
    assert_eq!(v["error"]["code"], "INVALID_AGENT_INPUT", "{v}");
    assert_eq!(v["error"]["input_value"], "../x", "{v}");
    assert_eq!(
        argument_errors(&v),
        vec![pair("<ID>", Some("../x")), pair("<ID>", Some("cl_bogus"))]
    );
    assert_eq!(v["error"]["errors"][1]["code"], "BAD_ARGUMENTS", "{v}");
    let (code, v) = s.run(&["status", "cl_bogus", "cl_abcd?x=1"]);
    assert_eq!(code, 2, "{v}");
    assert_eq!(v["error"]["code"], "BAD_ARGUMENTS", "{v}");
    assert!(v["error"].get("input_value").is_none(), "{v}");
    assert_eq!(v["error"]["errors"][1]["rejected_pattern"], "query", "{v}");
    // A malformed identifier with none of the patterns stays BAD_ARGUMENTS.
    for args in [&["status", "cl_bogus"][..], &["pull", "bad/name"]] {
        let (code, v) = s.run(args);
        assert_eq!(code, 2, "{v}");
        assert_eq!(v["error"]["code"], "BAD_ARGUMENTS", "{args:?}: {v}");
        assert!(v["error"].get("rejected_pattern").is_none(), "{v}");
    }
    // People see the code on stderr.
    let o = finish(
        elench_cmd(s.dir())
            .args(with_store(
                &s.store,
                &["--format", "text", "show", "cl_abcd#frag"],
            ))
            .spawn()
            .unwrap(),
    );
    assert_eq!(o.code, Some(2));
    assert!(
        o.stderr.contains("error[INVALID_AGENT_INPUT]"),
        "{}",
        o.stderr
    );

    // A file path is not an identifier: `../` to a real file is read as given.
    let c = ClaimBuilder::assertion("reached through ../").build_with_id();
    std::fs::write(s.dir().join("up.dsse"), envelope_text(&c, &s.keys.agent)).unwrap();
    let sub = s.dir().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let (code, v) = common::elench(&sub, &with_store(&s.store, &["add", "../up.dsse"]));
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["data"]["effect"], "created", "{v}");
    let (code, v) = s.run(&["show", &claim_id(&c)]);
    assert_eq!(code, 0, "{v}");
    // And a well-formed id still resolves.
    let (code, v) = s.run(&["show", &ids[0]]);
    assert_eq!(code, 0, "{v}");
}
