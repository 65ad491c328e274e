//! Confinement: each test's predicate would be true only if the process escaped its sandbox.
//! The claim must not come out verified, and the side effect must not exist on the host.

mod check_support;
mod common;

use check_support::{bwrap_works, entry, outcome, Bench};
use std::io::Read;
use std::net::TcpListener;
use std::time::Duration;

const FILES: &[(&str, &str)] = &[("src/lib.rs", "original\n")];

/// None (and a message) when no sandbox can be made: then `check` must refuse to start
/// processes at all.
fn sandboxed_bench() -> Option<Bench> {
    let b = Bench::new(FILES);
    if bwrap_works() {
        return Some(b);
    }
    let id = b.claim(r#"run("true").exit == 0"#);
    let (code, out) = b.check(&[&id]);
    assert_eq!(code, 4, "{out}");
    assert_eq!(out["error"]["code"], "SANDBOX_UNAVAILABLE");
    eprintln!("skipped: bwrap cannot make a sandbox here; check refused as it must");
    None
}

fn not_verified(out: &serde_json::Value, id: &str) {
    let o = outcome(out, id);
    assert_ne!(o, "verified", "{out}");
    assert!(o == "falsified" || o == "inconclusive", "{out}");
}

#[test]
fn a_write_outside_the_tree_does_not_reach_the_host() {
    let Some(b) = sandboxed_bench() else { return };
    let target = b.dir().join("escaped.txt");
    let t = target.display();
    let id = b.claim(&format!(
        r#"run("echo out > {t} && test -f {t}").exit == 0"#
    ));
    let home_write =
        b.claim(r#"run("echo x > /root/elench-escaped && echo done").stdout.contains("done")"#);
    let (_, out) = b.check(&[&id, &home_write]);
    not_verified(&out, &id);
    not_verified(&out, &home_write);
    assert!(!target.exists());
    assert!(!std::path::Path::new("/root/elench-escaped").exists());
}

#[test]
fn a_file_in_home_cannot_be_read() {
    let Some(b) = sandboxed_bench() else { return };
    // The process's own home is handed to elench, as an operator's would be.
    let home = b.dir().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let secret = home.join("secret.txt");
    std::fs::write(&secret, "s3cret-value\n").unwrap();
    let id = b.claim(&format!(
        r#"run("cat {} \"$HOME/secret.txt\"").stdout.contains("s3cret-value")"#,
        secret.display()
    ));
    let real_home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let sees_home = b.claim(&format!(
        r#"run("ls -a {real_home}").stdout.contains("..")"#
    ));
    let args = [
        "--store".to_owned(),
        b.ks.store.display().to_string(),
        "check".into(),
        "--at".into(),
        b.tree.display().to_string(),
        "--key".into(),
        b.ks.keys.harness.private.display().to_string(),
        id.clone(),
        sees_home.clone(),
    ];
    let out = common::command(b.dir())
        .env("HOME", &home)
        .args(&args)
        .output()
        .unwrap();
    let out: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    not_verified(&out, &id);
    not_verified(&out, &sees_home);
}

#[test]
fn no_connection_to_a_listener_on_the_host_loopback() {
    let Some(b) = sandboxed_bench() else { return };
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let id = b.claim(&format!(
        r#"run("bash -c 'echo hello > /dev/tcp/127.0.0.1/{port}' && echo connected").stdout.contains("connected")"#
    ));
    let (_, out) = b.check(&[&id]);
    not_verified(&out, &id);
    // Nothing ever connected.
    match listener.accept() {
        Ok((mut s, _)) => {
            let mut got = String::new();
            let _ = s.read_to_string(&mut got);
            panic!("a sandboxed process connected and sent {got:?}");
        }
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock),
    }
}

#[test]
fn the_original_checkout_is_never_modified() {
    let Some(b) = sandboxed_bench() else { return };
    let original = b.tree.join("src/lib.rs");
    let o = original.display();
    // Through the host path: not visible in the sandbox.
    let absolute = b.claim(&format!(
        r#"run("echo changed > {o} && grep -q changed {o}").exit == 0"#
    ));
    // Through the tree path: the process changes its own copy, which is true inside it,
    // and the checkout stays as it was.
    let relative =
        b.claim(r#"run("echo changed > src/lib.rs && grep -q changed src/lib.rs").exit == 0"#);
    let (_, out) = b.check(&[&absolute, &relative]);
    not_verified(&out, &absolute);
    assert_eq!(outcome(&out, &relative), "verified", "{out}");
    assert_eq!(std::fs::read_to_string(&original).unwrap(), "original\n");
    assert!(!b.tree.join("target").exists());
}

/// Runs check in a thread with a generous watchdog: the test fails (rather than hangs) if
/// check does not finish on its own.
fn check_bounded(b: &Bench, args: &[&str]) -> serde_json::Value {
    let mut all: Vec<String> = vec![
        "--store".into(),
        b.ks.store.display().to_string(),
        "check".into(),
        "--at".into(),
        b.tree.display().to_string(),
        "--key".into(),
        b.ks.keys.harness.private.display().to_string(),
    ];
    all.extend(args.iter().map(|s| s.to_string()));
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("elench"))
        .current_dir(b.dir())
        .env_remove("ELENCH_STORE")
        .args(&all)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let watchdog = Duration::from_secs(120);
    let start = std::time::Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > watchdog {
            let _ = child.kill();
            panic!("check did not finish within {watchdog:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Host processes whose command line contains `marker`.
fn survivors(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(marker) && !cmd.contains("cargo") {
                found.push(format!("{}: {cmd}", e.file_name().to_string_lossy()));
            }
        }
    }
    found
}

#[test]
fn a_fork_bomb_and_an_endless_loop_end_at_the_limits_as_inconclusive() {
    let Some(b) = sandboxed_bench() else { return };
    let marker = format!("elench-bomb-{}", std::process::id());
    // In the background every process forks two more and waits for them, until the process
    // limit makes forks fail; the main shell (which forks once, first) waits out the wall
    // time.
    let bomb = b.claim(&format!(
        r#"run("M={marker}; (f() {{ f & f & wait; }}; f 2>/dev/null) & exec sleep 600").exit == 0"#
    ));
    let spin = b.claim(&format!(
        r#"run("M={marker}x; while :; do :; done").exit == 0"#
    ));
    let before = b.ks.export();
    let out = check_bounded(
        &b,
        &[
            "--timeout",
            "3",
            "--processes",
            "64",
            "--jobs",
            "2",
            &bomb,
            &spin,
        ],
    );
    for id in [&bomb, &spin] {
        assert_eq!(outcome(&out, id), "inconclusive", "{out}");
        assert!(entry(&out, id)["reason"]
            .as_str()
            .unwrap()
            .contains("time limit"));
    }
    assert_eq!(b.ks.export(), before);
    // Every process the claims started is gone once check has returned.
    assert_eq!(survivors(&marker), Vec::<String>::new());
}

#[test]
fn memory_beyond_the_limit_is_not_granted() {
    let Some(b) = sandboxed_bench() else { return };
    // A 200 MB shell string under a 100 MiB address-space limit.
    let id = b.claim(
        r#"run("x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo ${#x}").stdout.contains("200000000")"#,
    );
    let (_, out) = b.check(&["--memory", "100", &id]);
    not_verified(&out, &id);
}
