//! Running the real `elench` binary.
//!
//! Two shapes of call: [`elench`] (a working directory and arguments; returns the exit code
//! and the parsed JSON, checking the output envelope's invariants) and [`run`] (a store and
//! arguments, from the test's own working directory; returns an [`Out`]).

use assert_cmd::Command;
use serde_json::{json, Value};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// The `elench` binary, with stdout and stderr captured (so stdout is not a terminal) and
/// without environment that would change its behaviour, run in `dir`.
pub fn command(dir: &Path) -> Command {
    let mut cmd = bare_command();
    cmd.current_dir(dir);
    cmd
}

/// As [`command`], in the test process's working directory.
fn bare_command() -> Command {
    let mut cmd = Command::cargo_bin("elench").expect("the elench binary is built");
    cmd.env_remove("ELENCH_STORE")
        .env_remove("CI")
        .env_remove("NO_COLOR");
    cmd
}

/// The path of the built `elench` binary, for `std::process::Command`.
pub fn elench_path() -> PathBuf {
    assert_cmd::cargo::cargo_bin("elench")
}

/// What one invocation produced.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    fn from_output(out: std::process::Output) -> Run {
        Run {
            code: out.status.code().expect("elench exited with a code"),
            stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// Runs elench with `args` in `dir` and returns its exit code, stdout and stderr.
pub fn run_raw<S: AsRef<OsStr>>(dir: &Path, args: &[S]) -> Run {
    Run::from_output(command(dir).args(args).output().expect("elench runs"))
}

/// Runs elench with `args` in `dir`; stdout must be exactly one JSON object (the output
/// envelope). Returns the exit code and that object. Also checks the envelope's invariants:
/// `ok` is true exactly when the exit code is 0 and `meta.exit_code` is the real exit code.
pub fn elench<S: AsRef<OsStr>>(dir: &Path, args: &[S]) -> (i32, Value) {
    envelope_of(&run_raw(dir, args))
}

/// As [`elench`], with `stdin` piped to the process.
pub fn elench_with_stdin<S: AsRef<OsStr>>(dir: &Path, args: &[S], stdin: &[u8]) -> (i32, Value) {
    let out = command(dir)
        .args(args)
        .write_stdin(stdin.to_vec())
        .output()
        .expect("elench runs");
    envelope_of(&Run::from_output(out))
}

fn envelope_of(run: &Run) -> (i32, Value) {
    let json = parse_one_object(run);
    assert_eq!(
        json["ok"],
        json!(run.code == 0),
        "ok must be true exactly when the exit code is 0: {json}"
    );
    assert_eq!(
        json["meta"]["exit_code"],
        json!(run.code),
        "meta.exit_code must equal the real exit code: {json}"
    );
    (run.code, json)
}

fn parse_one_object(run: &Run) -> Value {
    let text = run.stdout.trim_end_matches('\n');
    assert!(
        !text.is_empty() && !text.contains('\n'),
        "stdout must be exactly one JSON line; got {:?} (stderr {:?})",
        run.stdout,
        run.stderr
    );
    assert!(
        !text.contains('\u{1b}'),
        "no ANSI escapes in JSON mode: {text:?}"
    );
    let value: Value = serde_json::from_str(text).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {:?} (stderr {:?})",
            run.stdout, run.stderr
        )
    });
    assert!(value.is_object(), "stdout must be a JSON object: {value}");
    value
}

/// The lines of `--format jsonl` output, each read as one JSON value.
pub fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Asserts that a command failed as a rejection with `code`: exit 2, `ok:false`,
/// `meta.exit_code == 2`, `error.code == code`. Returns the `error` object.
pub fn assert_rejected(result: &(i32, Value), code: &str) -> Value {
    let (exit, json) = result;
    assert_eq!(*exit, 2, "expected exit 2 for {code}: {json}");
    assert_eq!(json["ok"], json!(false), "{json}");
    assert_eq!(json["meta"]["exit_code"], json!(2), "{json}");
    assert_eq!(json["error"]["code"], json!(code), "{json}");
    assert!(
        json["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "an error has a message: {json}"
    );
    json["error"].clone()
}

/// `["--store", STORE, ARGS…]`.
pub fn with_store<S: AsRef<OsStr>>(store: &Path, args: &[S]) -> Vec<OsString> {
    let mut out = vec!["--store".into(), store.as_os_str().to_owned()];
    out.extend(args.iter().map(|a| a.as_ref().to_owned()));
    out
}

/// What [`run`] produced: exit code, the stdout JSON object and stderr.
#[derive(Debug)]
pub struct Out {
    pub code: i32,
    pub json: Value,
    pub stderr: String,
}

/// The codes of a report's warnings, in order.
pub fn warning_codes(out: &Out) -> Vec<String> {
    out.json["warnings"]
        .as_array()
        .map(|w| {
            w.iter()
                .map(|w| w["code"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Runs `elench --store STORE ARGS…` and parses its stdout as one JSON object.
pub fn run(store: &Path, args: &[&str]) -> Out {
    run_with(store, args, &[])
}

/// [`run`] with these environment variables set (e.g. `ELENCH_VERIFY_BATCH`).
pub fn run_with(store: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let out = bare_command()
        .args(with_store(store, args))
        .envs(env.iter().copied())
        .output()
        .expect("elench runs");
    let run = Run::from_output(out);
    let json: Value = serde_json::from_str(run.stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "stdout of elench {args:?} is not one JSON object ({e}):\n{}\nstderr:\n{}",
            run.stdout, run.stderr
        )
    });
    assert_eq!(
        json["meta"]["exit_code"].as_i64(),
        Some(run.code as i64),
        "meta.exit_code must equal the exit code: {json}"
    );
    Out {
        code: run.code,
        json,
        stderr: run.stderr,
    }
}

/// What a child process ended with: its exit code (None if a signal ended it) and both of
/// its output streams.
pub struct Finished {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Waits for `child`, whose stdout and stderr are piped, reading both beside it so neither
/// pipe can fill and stall it; kills it and panics (naming `what`) if it runs past `limit`.
pub fn finish_within(
    mut child: std::process::Child,
    limit: std::time::Duration,
    what: &str,
) -> Finished {
    use std::io::Read;
    let reader = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = reader(Box::new(child.stdout.take().expect("stdout is piped")));
    let err = reader(Box::new(child.stderr.take().expect("stderr is piped")));
    let started = std::time::Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not end within {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Finished {
        code,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// A TCP listener on 127.0.0.1 that accepts every connection and never says a word: a
/// remote that is there but does not answer. Returns its port.
pub fn silent_listener() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in listener.incoming() {
            held.push(c);
        }
    });
    port
}
