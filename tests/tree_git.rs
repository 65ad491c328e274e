//! Cross-checks `elench::tree::tree_oid` against real git:
//! `git init --object-format=sha256 && git add -A && git write-tree`.
//!
//! When git is missing or lacks SHA-256 support, the git half is skipped
//! with a "skipped: ..." note on stderr.
#![cfg(unix)]

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::process::Command;

use elench::tree::tree_oid;

/// Runs git in `dir` isolated from the user's and system's configuration.
fn git(dir: &Path, home: &Path, args: &[&str]) -> Result<String, String> {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CEILING_DIRECTORIES", dir.parent().unwrap_or(dir));
    for var in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_DEFAULT_HASH",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
    ] {
        cmd.env_remove(var);
    }
    cmd.args([
        "-c",
        "core.fileMode=true",
        "-c",
        "core.symlinks=true",
        "-c",
        "core.autocrlf=false",
        "-c",
        "core.precomposeUnicode=false",
    ]);
    cmd.args(args);
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run git {args:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {args:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// What git says the tree id of `dir` is, or `None` (with a note on stderr)
/// when git cannot be used here. `git init` happens inside `dir`; the
/// resulting `.git` is skipped by `tree_oid`.
fn git_write_tree(dir: &Path, add_args: &[&str]) -> Option<String> {
    let home = tempfile::tempdir().expect("tempdir for HOME");
    if let Err(e) = git(home.path(), home.path(), &["--version"]) {
        eprintln!("skipped: git not available on PATH ({e})");
        return None;
    }
    if let Err(e) = git(dir, home.path(), &["init", "-q", "--object-format=sha256"]) {
        eprintln!("skipped: git does not support --object-format=sha256 ({e})");
        return None;
    }
    let mut add = vec!["add"];
    add.extend_from_slice(add_args);
    git(dir, home.path(), &add).expect("git add");
    let oid = git(dir, home.path(), &["write-tree"]).expect("git write-tree");
    assert_eq!(oid.len(), 64, "unexpected git write-tree output {oid:?}");
    Some(oid)
}

fn write(root: &Path, rel: &str, content: impl AsRef<[u8]>) {
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).expect("create parent");
    }
    fs::write(&path, content).expect("write file");
}

fn chmod(root: &Path, rel: &str, mode: u32) {
    fs::set_permissions(root.join(rel), fs::Permissions::from_mode(mode)).expect("chmod");
}

fn assert_hex64(oid: &str) {
    assert_eq!(oid.len(), 64, "{oid}");
    assert!(
        oid.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "{oid}"
    );
}

/// Compares with git, then checks that git's own `.git` and a top-level
/// `.elench` do not change the id.
fn check_against_git(root: &Path, add_args: &[&str]) -> String {
    let ours = tree_oid(root).expect("tree_oid");
    assert_hex64(&ours);
    // The command prints the same id.
    let out = assert_cmd::Command::cargo_bin("elench")
        .expect("the elench binary is built")
        .args(["tree", "--format", "json"])
        .arg(root)
        .output()
        .expect("elench runs");
    assert_eq!(out.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(
        json["data"]["tree"],
        ours.as_str(),
        "elench tree prints tree_oid"
    );
    if let Some(theirs) = git_write_tree(root, add_args) {
        assert_eq!(ours, theirs, "tree_oid differs from git write-tree");
        assert_eq!(
            tree_oid(root).expect("tree_oid after git init"),
            ours,
            ".git must be skipped"
        );
    }
    write(root, ".elench/state", "elench's own data");
    assert_eq!(
        tree_oid(root).expect("tree_oid with .elench"),
        ours,
        "top-level .elench must be skipped"
    );
    ours
}

#[test]
fn tree_matches_git_on_mixed_layout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();

    write(root, "README", "hello\n");
    write(root, "empty", "");
    write(root, "run.sh", "#!/bin/sh\necho hi\n");
    chmod(root, "run.sh", 0o755);
    // Group/other exec bits alone do not make git record 100755.
    write(root, "group-exec", "g\n");
    chmod(root, "group-exec", 0o655);
    write(root, "owner-exec-only", "o\n");
    chmod(root, "owner-exec-only", 0o744);
    write(root, "café.txt", "crème brûlée\n");
    write(root, "日本.md", "# 日本\n");
    write(root, "with space.txt", "spaces\n");
    // Git's ordering: file `a.b`, directory `a/`, file `a0`.
    write(root, "a.b", "dot\n");
    write(root, "a/inner.txt", "inside a\n");
    write(root, "a0", "zero\n");
    write(root, "src/lib/mod.rs", "pub fn f() {}\n");
    write(root, "src/main.rs", "fn main() {}\n");
    write(root, "src/bin/tool", b"\0binary\x01\x02\xff");
    chmod(root, "src/bin/tool", 0o700);
    // A nested `.elench` is ordinary content (only the top level is skipped).
    write(root, "src/.elench", "not special here\n");
    // Symlinks: to a file, to a directory, dangling; never followed.
    symlink("README", root.join("link-to-readme")).expect("symlink");
    symlink("src", root.join("link-to-src")).expect("symlink");
    symlink("../nowhere/at/all", root.join("a/dangling")).expect("symlink");
    // Directories without files are not recorded by git.
    fs::create_dir_all(root.join("empty-dir")).expect("mkdir");
    fs::create_dir_all(root.join("only-empty/nested/deeper")).expect("mkdir");
    fs::create_dir_all(root.join("src/also-empty")).expect("mkdir");

    let before = tree_oid(root).expect("tree_oid");
    fs::remove_dir_all(root.join("empty-dir")).expect("rmdir");
    fs::remove_dir_all(root.join("only-empty")).expect("rmdir");
    assert_eq!(
        tree_oid(root).expect("tree_oid"),
        before,
        "empty directories must not matter"
    );
    fs::create_dir_all(root.join("empty-dir")).expect("mkdir");
    fs::create_dir_all(root.join("only-empty/nested/deeper")).expect("mkdir");

    check_against_git(root, &["-A"]);
}

#[test]
fn tree_matches_git_on_deep_tree_with_many_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();

    // A deterministic pseudo-random generator for contents.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };

    let mut path = String::new();
    for depth in 0..8 {
        if depth > 0 {
            path.push_str(&format!("level{depth}/"));
        }
        for i in 0..5 {
            let len = (next() % 3000) as usize;
            let content: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let rel = format!("{path}file{i}.bin");
            write(root, &rel, &content);
            if next() % 3 == 0 {
                chmod(root, &rel, 0o755);
            }
        }
        // Names that sort around the next level's directory name.
        write(root, &format!("{path}level{}.txt", depth + 1), "dot\n");
        write(root, &format!("{path}level{}0", depth + 1), "zero\n");
        write(root, &format!("{path}level{}-", depth + 1), "dash\n");
        write(root, &format!("{path}sibling{depth}/x/y/z.txt"), "leaf\n");
        fs::create_dir_all(root.join(format!("{path}hollow{depth}/a/b"))).expect("mkdir");
    }
    // Larger than the read buffer, to exercise streaming.
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    write(root, "level1/level2/big.dat", &big);

    check_against_git(root, &["-A"]);
}

#[test]
fn tree_ignores_gitignore_like_git_add_force() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, ".gitignore", "*.log\nbuild/\n");
    write(root, "kept.txt", "kept\n");
    write(root, "debug.log", "ignored by git, counted by elench\n");
    write(root, "build/out.o", "object\n");
    write(root, "sub/.gitignore", "*\n");
    write(root, "sub/file.txt", "also ignored by git\n");

    // `git add -A --force` adds ignored files too: that is what we match.
    let ours = check_against_git(root, &["-A", "--force"]);

    // Plain `git add -A` would honour .gitignore and give another id.
    let fresh = tempfile::tempdir().expect("tempdir");
    for rel in [
        ".gitignore",
        "kept.txt",
        "debug.log",
        "build/out.o",
        "sub/.gitignore",
        "sub/file.txt",
    ] {
        write(fresh.path(), rel, fs::read(root.join(rel)).expect("read"));
    }
    assert_eq!(tree_oid(fresh.path()).expect("tree_oid"), ours);
    if let Some(honouring) = git_write_tree(fresh.path(), &["-A"]) {
        assert_ne!(honouring, ours, ".gitignore should change git's plain add");
    }
}

#[test]
fn tree_non_utf8_name_matches_git() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let name = OsStr::from_bytes(b"latin1-caf\xe9.txt");
    if fs::write(root.join(name), "bytes\n").is_err() {
        eprintln!("skipped: file system rejects non-UTF-8 names");
        return;
    }
    write(root, "plain.txt", "plain\n");
    check_against_git(root, &["-A"]);
}
