//! What `check` makes on the host for its sandbox, through the binary: folders the sandbox's
//! user can use whatever the caller's umask, scratch that a `check` killed outright does not
//! leave behind for good, and a harness key that never reaches the sandbox under another
//! name.

use crate::check_support::{self, entry, outcome, proc_args, with, Bench};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const FILES: &[(&str, &str)] = &[("src/lib.rs", "pub fn f() {}\n")];

/// `cmd` as a shell runs it after `umask MASK` (the binary and its arguments unchanged).
fn under_umask(mask: &str, cmd: &Command) -> Command {
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg(format!("umask {mask}; exec \"$0\" \"$@\""))
        .arg(cmd.get_program())
        .args(cmd.get_args());
    if let Some(d) = cmd.get_current_dir() {
        sh.current_dir(d);
    }
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => sh.env(k, v),
            None => sh.env_remove(k),
        };
    }
    sh
}

fn json_of(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: stdout {} / stderr {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn under_umask_077_a_test_claim_is_still_decided() {
    let b = Bench::new(FILES);
    let id = b.claim(r#"test("t1").passed"#);
    let runner =
        r#"junit:printf "<testsuite><testcase name=\"t1\"/></testsuite>" > "$ELENCH_JUNIT""#;
    let args = with(proc_args(), &["--runner", runner, &id]);
    let out = under_umask("077", &b.check_command(&args))
        .output()
        .unwrap();
    let v = json_of(&out);
    // Under 077 the sandbox's report folder was 0700 and its user could not write the
    // report: "wrote no JUnit report", inconclusive.
    assert_eq!(outcome(&v, &id), "verified", "{v}");
    assert_eq!(out.status.code(), Some(0), "{v}");
}

/// This user's scratch folder under `tmpdir`, where `check` keeps its copies of the tree.
fn scratch_root(tmpdir: &Path) -> PathBuf {
    // SAFETY: geteuid has no preconditions and cannot fail.
    tmpdir.join(format!("elench-{}", unsafe { libc::geteuid() }))
}

/// Every path under `dir` (links not followed) whose name is `name`.
fn find_named(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if e.file_name() == name {
                found.push(p.clone());
            }
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            }
        }
    }
    found
}

#[test]
fn a_check_killed_outright_leaves_no_copy_of_the_tree_after_the_next_check() {
    // A secret next to the code, as a team's checkout has: the copy holds it too.
    let b = Bench::new(&[
        ("src/lib.rs", "pub fn f() {}\n"),
        (".env", "TOKEN=s3cret\n"),
    ]);
    let slow = b.claim(r#"run("sleep 30").exit == 0"#);
    let quick = b.claim(r#"exists("src/lib.rs")"#);
    let tmpdir = b.dir().join("tmp");
    std::fs::create_dir_all(&tmpdir).unwrap();

    let mut first = b.check_command(&with(proc_args(), &["--timeout", "60", &slow]));
    first
        .env("TMPDIR", &tmpdir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = first.spawn().unwrap();
    // Killed once the tree is copied and the claim's process runs.
    let started = Instant::now();
    while find_named(&tmpdir, ".env").is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "check made no copy of the tree under {}",
            tmpdir.display()
        );
        assert!(child.try_wait().unwrap().is_none(), "check ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    let left = find_named(&tmpdir, ".env");
    assert!(
        !left.is_empty(),
        "SIGKILL runs no cleanup: the copy is there"
    );
    assert!(
        left.iter().all(|p| p.starts_with(scratch_root(&tmpdir))),
        "scratch outside this user's scratch folder: {left:?}"
    );

    // The next check, whatever it checks, removes what the killed one left.
    let mut second = b.check_command(&[&quick]);
    second.env("TMPDIR", &tmpdir);
    let out = second.output().unwrap();
    let v = json_of(&out);
    assert_eq!(outcome(&v, &quick), "verified", "{v}");
    assert_eq!(find_named(&tmpdir, ".env"), Vec::<PathBuf>::new());
    let rest: Vec<_> = std::fs::read_dir(scratch_root(&tmpdir))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(rest.is_empty(), "left in the scratch folder: {rest:?}");
}

#[test]
fn the_harness_key_under_another_name_never_reaches_the_sandbox_nor_a_read() {
    let b = Bench::new(FILES);
    let key = &b.ks.keys.harness.private;
    let secret = std::fs::read_to_string(key).unwrap();
    // A hard link to the key (the same file) and a copy of it (the same bytes), in the tree.
    std::fs::hard_link(key, b.tree.join("linked.txt")).unwrap();
    std::fs::write(b.tree.join("copied.txt"), &secret).unwrap();
    check_support::write_files(&b.tree, &[("other.txt", "not a key\n")]);
    let shown = b.claim(r#"run("cat linked.txt; cat copied.txt; ls").exit == 0"#);
    let linked = b.claim(r#"exists("linked.txt")"#);
    let copied = b.claim(r#"grep("PRIVATE KEY", ".") > 0"#);
    let (code, v) = b.check(&with(proc_args(), &[&shown, &linked, &copied]));
    assert_eq!(code, 0, "{v}");
    // The process ran, and neither file was there: cat failed, ls listed the rest.
    assert_eq!(outcome(&v, &shown), "verified", "{v}");
    assert_eq!(outcome(&v, &linked), "falsified", "{v}");
    assert_eq!(outcome(&v, &copied), "falsified", "{v}");
    let (code, shown_blob) = b.ks.run(&[
        "show",
        entry(&v, &shown)["record"].as_str().unwrap(),
        "--evidence",
    ]);
    assert_eq!(code, 0, "{shown_blob}");
    let text = shown_blob.to_string();
    assert!(text.contains("other.txt"), "{text}");
    assert!(!text.contains("linked.txt\\n"), "{text}");
    let body = secret
        .lines()
        .find(|l| !l.starts_with("-----"))
        .expect("a PEM body line");
    assert!(!text.contains(body), "the key reached the evidence: {text}");
}
