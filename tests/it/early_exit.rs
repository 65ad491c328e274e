//! A command the watchdog ends at its time limit, while its operation is blocked where it
//! cannot stop itself, leaves nothing behind: the git process it waits on is ended and its
//! scratch directories are removed (the front end's reaper, which the operations list them
//! with).

use crate::check_support::{bwrap_works, Bench};
use crate::common::{self, finish_within, with_store, KeyedStore};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long elench may take before the test calls it hung.
const HANG_LIMIT: Duration = Duration::from_secs(60);

fn elench_cmd(dir: &Path, tmpdir: &Path) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("elench"));
    cmd.current_dir(dir)
        .env_remove("ELENCH_STORE")
        .env_remove("ELENCH_TIMEOUT")
        .env_remove("CI")
        .env("TMPDIR", tmpdir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Runs `cmd` to its end; its exit code, its one JSON envelope, and whether `seen` held at
/// some point while it ran (what the test expects it to leave behind was there).
fn run(mut cmd: Command, seen: impl Fn() -> bool) -> (Option<i32>, Value, bool) {
    let mut child = cmd.spawn().unwrap();
    let started = Instant::now();
    let mut was_seen = false;
    while !was_seen && started.elapsed() < HANG_LIMIT {
        was_seen = seen();
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let done = finish_within(child, HANG_LIMIT, "elench");
    let v: Value = serde_json::from_str(done.stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: stdout {:?}, stderr {:?}", done.stdout, done.stderr));
    (done.code, v, was_seen)
}

/// The processes (pid and command line) whose command line contains `needle`; a process
/// that has ended but not been waited for has none.
fn processes_naming(needle: &str) -> Vec<(i32, String)> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(raw) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let line = String::from_utf8_lossy(&raw).replace('\0', " ");
        if line.contains(needle) {
            found.push((pid, line));
        }
    }
    found
}

/// The entries of `dir` elench made (scratch directories are named `elench-…`), and those
/// in this user's scratch folder there (`elench-<uid>`, which stays, for later runs to find
/// what a killed one left).
fn elench_entries(dir: &Path) -> Vec<String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = format!("elench-{}", unsafe { libc::geteuid() });
    let names = |d: &Path| -> Vec<String> {
        std::fs::read_dir(d)
            .map(|r| {
                r.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with("elench-"))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut found: Vec<String> = names(dir).into_iter().filter(|n| *n != root).collect();
    found.extend(names(&dir.join(&root)));
    found
}

#[test]
fn a_pull_ended_at_its_time_limit_ends_the_git_it_waits_on() {
    if Command::new("git").arg("--version").output().is_err() {
        eprintln!("skipped: git is not installed");
        return;
    }
    let s = KeyedStore::new();
    let tmp = tempfile::tempdir().unwrap();
    let port = common::silent_listener();
    let url = format!("git://127.0.0.1:{port}/log.git");
    let (code, v) = s.run(&["remote", "add", "silent", &url]);
    assert_eq!(code, 0, "{v}");
    // No connect timeout of its own: only the command's limit ends the wait.
    let mut cmd = elench_cmd(s.dir(), tmp.path());
    cmd.args(with_store(
        &s.store,
        &["pull", "silent", "--connect-timeout", "0", "--timeout", "1"],
    ));
    let (code, v, seen) = run(cmd, || !processes_naming(&url).is_empty());
    assert!(seen, "no git process waited on the remote: {v}");
    assert_eq!(code, Some(10), "{v}");
    assert_eq!(v["error"]["code"], "TIMEOUT", "{v}");
    // SIGKILL is sent before elench exits; the kernel may take a moment to end the process.
    let started = Instant::now();
    let mut left = processes_naming(&url);
    while !left.is_empty() && started.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
        left = processes_naming(&url);
    }
    for (pid, _) in &left {
        // SAFETY: kill(2) only sends a signal, to the stray process this test found.
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    assert!(left.is_empty(), "outlived elench: {left:?}");
}

#[test]
fn a_check_ended_at_its_time_limit_leaves_no_scratch_directory() {
    let b = Bench::new(&[("src/lib.rs", "fn f() {}\n")]);
    let claim = b.claim(r#"run("true").exit == 0"#);
    let tmp = tempfile::tempdir().unwrap();
    // The check evaluates (its tree copied to a scratch directory), then waits for the
    // writer lock to record, where it cannot stop itself: the watchdog answers for it.
    let lock = common::hold_writer_lock(&b.ks.store);
    let mut cmd = elench_cmd(b.dir(), tmp.path());
    let mut args = vec!["--wait", "50", "--command-timeout", "1", &claim];
    if !bwrap_works() {
        args.push("--no-sandbox");
    }
    let check = b.check_command(&args);
    cmd.args(check.get_args());
    let (code, v, seen) = run(cmd, || {
        elench_entries(tmp.path())
            .iter()
            .any(|n| n.starts_with("elench-check-"))
    });
    drop(lock);
    assert!(seen, "check made no scratch directory: {v}");
    assert_eq!(code, Some(10), "{v}");
    assert_eq!(v["error"]["code"], "TIMEOUT", "{v}");
    assert_eq!(elench_entries(tmp.path()), Vec::<String>::new());
}
