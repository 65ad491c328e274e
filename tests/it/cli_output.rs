//! What reaches a terminal or a CI log, through the real binary: a failure always leaves one
//! line on stderr, whatever stdout carries; no text from a claim (or a file name, or another
//! program) reaches a human-facing format as terminal control.

use crate::common;

use common::{run_raw, with_store, KeyedStore, Run};
use serde_json::Value;
use std::path::PathBuf;

/// The `error[CODE]: …` lines of stderr.
fn error_lines<'a>(stderr: &'a str, code: &str) -> Vec<&'a str> {
    let head = format!("error[{code}]: ");
    stderr.lines().filter(|l| l.starts_with(&head)).collect()
}

/// Control characters a terminal acts on: C0 but line feed and tab, DEL, C1.
fn controls(s: &str) -> Vec<char> {
    s.chars()
        .filter(|c| c.is_control() && *c != '\n' && *c != '\t')
        .collect()
}

#[test]
fn a_failure_leaves_one_line_on_stderr_in_every_format() {
    let s = KeyedStore::new();
    let unknown = format!("cl_{}", "ab".repeat(32));
    for format in ["json", "jsonl", "tsv", "text", "plain", "dot", "mermaid"] {
        let r = run_raw(
            s.dir(),
            &with_store(&s.store, &["--format", format, "status", &unknown]),
        );
        assert_eq!(r.code, 5, "{format}: {r:?}");
        let lines = error_lines(&r.stderr, "NOT_FOUND");
        assert_eq!(lines.len(), 1, "{format}: the error once on stderr: {r:?}");
        assert!(lines[0].contains(&unknown), "{format}: {}", lines[0]);
        match format {
            // stdout is still exactly one JSON object (one line), and the same error.
            "json" | "jsonl" => {
                let out = r.stdout.trim_end();
                assert!(!out.contains('\n'), "{format}: one line: {:?}", r.stdout);
                let v: Value = serde_json::from_str(out).unwrap();
                assert_eq!(v["error"]["code"], "NOT_FOUND", "{v}");
                let message = v["error"]["message"].as_str().unwrap();
                assert_eq!(lines[0], format!("error[NOT_FOUND]: {message}"));
            }
            _ => assert!(
                !r.stdout.contains("NOT_FOUND"),
                "{format}: not on stdout too: {r:?}"
            ),
        }
    }
    // A success says nothing on stderr.
    let r = run_raw(s.dir(), &with_store(&s.store, &["status", "--all"]));
    assert_eq!(r.code, 0, "{r:?}");
    assert!(!r.stderr.contains("error"), "{r:?}");

    // A message that would span lines, or drive the terminal (a file name holding a line
    // break, an OSC and a bell), is one clean line.
    let name = "no\nsuch \u{1b}]0;owned\u{7}\u{1b}[2Jfile.dsse";
    for format in ["json", "jsonl"] {
        let r = run_raw(
            s.dir(),
            &with_store(&s.store, &["--format", format, "verify", name]),
        );
        assert_eq!(r.code, 2, "{r:?}");
        let lines: Vec<&str> = r.stderr.lines().filter(|l| !l.is_empty()).collect();
        assert_eq!(lines.len(), 1, "{format}: one line: {:?}", r.stderr);
        assert!(lines[0].starts_with("error["), "{}", lines[0]);
        assert!(lines[0].contains("no such"), "{}", lines[0]);
        assert_eq!(controls(&r.stderr), Vec::<char>::new(), "{:?}", r.stderr);
    }
    // A partial success (exit 3) is a failure too: its line is there.
    let good = s.dir().join("good.dsse");
    let claim = common::ClaimBuilder::assertion("fine").build_with_id();
    std::fs::write(&good, common::envelope_text(&claim, &s.keys.agent)).unwrap();
    let bad = s.dir().join("bad.dsse");
    std::fs::write(&bad, "{\"payload\":").unwrap();
    let r = run_raw(
        s.dir(),
        &with_store(
            &s.store,
            &["add", good.to_str().unwrap(), bad.to_str().unwrap()],
        ),
    );
    assert_eq!(r.code, 3, "{r:?}");
    assert_eq!(error_lines(&r.stderr, "PARTIAL_FAILURE").len(), 1, "{r:?}");
}

/// A tree with one file and a claim about it whose text holds a window-title OSC, a
/// clear-screen CSI, a bell, a C1 CSI and DEL. Returns the tree's directory and the id.
fn hostile_claim(s: &KeyedStore) -> (PathBuf, String) {
    let dir = s.dir().join("proj");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("lib.rs"), "fn parse() {}\n").unwrap();
    let text = "parse \u{1b}]0;title\u{7}is \u{1b}[2Jtotal\u{7} \u{9b}31mred\u{7f} end";
    let r = run_raw(
        s.dir(),
        &with_store(
            &s.store,
            &[
                "claim",
                text,
                "--anchor",
                "lib.rs",
                "--at",
                dir.to_str().unwrap(),
                "--key",
                s.keys.agent.private.to_str().unwrap(),
                "--id-only",
            ],
        ),
    );
    assert_eq!(r.code, 0, "{r:?}");
    (dir, r.stdout.trim().to_owned())
}

fn assert_clean(what: &str, r: &Run) {
    assert_eq!(
        controls(&r.stdout),
        Vec::<char>::new(),
        "{what}: {:?}",
        r.stdout
    );
    assert_eq!(
        controls(&r.stderr),
        Vec::<char>::new(),
        "{what}: {:?}",
        r.stderr
    );
}

#[test]
fn claim_text_never_drives_the_terminal_in_a_human_format() {
    let s = KeyedStore::new();
    let (dir, id) = hostile_claim(&s);
    let at = dir.to_str().unwrap();
    let policy = s.dir().join("policy.toml");
    std::fs::write(&policy, "[rules]\nmax_unevaluated = 0\n").unwrap();
    let policy = policy.to_str().unwrap();
    // Each human-facing format, and whether it shows the claim's text.
    let cases: Vec<(Vec<&str>, bool)> = vec![
        (vec!["--format", "text", "show", &id], true),
        (vec!["--format", "plain", "status", "--all"], true),
        (vec!["--format", "text", "status", &id, "--at", at], true),
        (vec!["--format", "plain", "log"], true),
        (vec!["--format", "text", "blast", &id], true),
        (vec!["--format", "text", "blast", &id, "--invert"], true),
        (vec!["--format", "tsv", "log"], false),
        (vec!["--format", "tsv", "status", "--all"], true),
        (vec!["--format", "tsv", "show", &id], false),
        (vec!["--format", "dot", "status", &id], true),
        (vec!["--format", "mermaid", "blast", &id], true),
        (
            vec!["--format", "text", "gate", "--policy", policy, "--at", at],
            true,
        ),
        (
            vec!["--format", "github", "gate", "--policy", policy, "--at", at],
            true,
        ),
    ];
    for (args, shows_text) in &cases {
        let r = run_raw(s.dir(), &with_store(&s.store, args));
        assert!(r.code == 0 || r.code == 79, "{args:?}: {r:?}");
        assert_clean(&args.join(" "), &r);
        // The text is there, without its control.
        if *shows_text {
            assert!(
                r.stdout.contains("total") || r.stderr.contains("total"),
                "{args:?}: the claim's own words stay: {r:?}"
            );
        }
    }
    // The github annotation still carries the claim's words on the claim's line.
    let r = run_raw(
        s.dir(),
        &with_store(
            &s.store,
            &["--format", "github", "gate", "--policy", policy, "--at", at],
        ),
    );
    let line = r
        .stdout
        .lines()
        .find(|l| l.contains(&id))
        .unwrap_or_else(|| panic!("an annotation for the claim: {r:?}"));
    assert!(line.starts_with("::error file=lib.rs,"), "{line}");
    assert!(line.contains("parse is total red end"), "{line}");
    // JSON keeps its own rule: no escape sequence, the words kept.
    let r = run_raw(s.dir(), &with_store(&s.store, &["show", &id]));
    assert!(!r.stdout.contains("\\u001b"), "{}", r.stdout);
}

/// Whether the process catches SIGTERM yet (its handler is installed): the SigCgt mask of
/// /proc/PID/status. A process that has ended counts as catching it (nothing can kill it
/// unanswered any more).
fn catches_sigterm(pid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return true;
    };
    if status.contains("State:\tZ") {
        return true;
    }
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|m| m & (1 << (libc::SIGTERM - 1)) != 0)
}

/// SIGTERM in a command's first milliseconds (0 to 6 ms after it was started, a hundred
/// times). From elench's first instruction on (an ELF constructor, before `main`), the signal
/// is answered: `CANCELLED`, exit 143, one JSON object; or, when it came once the answer was
/// being written, that answer, whole. Before that instruction (the kernel and the dynamic
/// loader at work) the process ends as any program does, killed by the signal: the window
/// docs/output.md names, and the only place a run may die unanswered.
#[test]
fn sigterm_in_the_first_milliseconds_is_answered_from_elench_s_first_instruction() {
    let s = KeyedStore::new();
    let (mut cancelled, mut before_elench) = (0, 0);
    for i in 0..100u64 {
        // Spread over 0–6 ms, sub-millisecond steps included.
        let delay = std::time::Duration::from_micros((i * 60_611) % 6_000);
        let started = std::time::Instant::now();
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
        while started.elapsed() < delay {
            std::hint::spin_loop();
        }
        let caught = catches_sigterm(child.id());
        let sent_ms = started.elapsed().as_secs_f64() * 1000.0;
        // SAFETY: kill(2) on the child we spawned and have not waited for (its pid is ours).
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
        }
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let Some(code) = out.status.code() else {
            assert!(
                !caught,
                "run {i}: killed unanswered although elench caught SIGTERM when it was sent \
                 ({sent_ms:.2} ms); stderr {}",
                String::from_utf8_lossy(&out.stderr)
            );
            before_elench += 1;
            continue;
        };
        let json: Value = serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("run {i}: stdout is not one JSON answer ({e}): {stdout:?}"));
        assert_eq!(json["meta"]["exit_code"], code, "run {i}: {json}");
        match code {
            143 => {
                assert_eq!(json["error"]["code"], "CANCELLED", "run {i}: {json}");
                assert_eq!(json["data"]["partial"], true, "run {i}: {json}");
                cancelled += 1;
            }
            0 => {
                // The answer began `duration_ms` after elench started, which is after this
                // test started it: a signal sent before that was there before the answer.
                let answered_ms = json["meta"]["duration_ms"].as_f64().unwrap();
                assert!(
                    sent_ms >= answered_ms,
                    "run {i}: answered ok although SIGTERM came {sent_ms:.2} ms after the \
                     start, before the answer began ({answered_ms} ms): {json}"
                );
            }
            other => panic!("run {i}: exit {other}: {json}"),
        }
    }
    eprintln!("{cancelled} cancelled, {before_elench} ended before elench's first instruction");
    assert!(cancelled > 0, "no run was answered CANCELLED");
}
