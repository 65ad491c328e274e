//! Cross-checks `elench tree` (and `elench::tree::tree_oid`) against real git:
//! `git init --object-format=sha256 && git add -A && git write-tree`, ignore rules included
//! (`.gitignore` at every level, `.git/info/exclude`, the global excludes); and that
//! `anchor`, `status --at` and `check` see the same files.
//!
//! When git is missing or lacks SHA-256 support, the git half is skipped
//! with a "skipped: ..." note on stderr.
#![cfg(unix)]

use crate::check_support;
use crate::common;

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::process::Command;

use elench::tree::tree_oid;
use serde_json::{json, Value};

/// Points git's and elench's user configuration at `home` (its `.gitconfig` and
/// `.config/git/ignore`), and away from the system's.
fn isolate(cmd: &mut Command, home: &Path) {
    cmd.env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_SYSTEM", "/dev/null")
        .env_remove("GIT_CONFIG_GLOBAL");
}

/// Runs git in `dir` isolated from the user's and system's configuration.
fn git(dir: &Path, home: &Path, args: &[&str]) -> Result<String, String> {
    let mut cmd = Command::new("git");
    isolate(&mut cmd, home);
    cmd.current_dir(dir)
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

/// What git says the tree id of `dir` is (`git add ARGS && git write-tree`, with the user
/// configuration in `home`), or `None` (with a note on stderr) when git cannot be used here.
/// Reuses a repository already made in `dir` (so that its `info/exclude` counts); the
/// `.git` it makes is skipped by `tree_oid`.
fn git_write_tree_in(dir: &Path, home: &Path, add_args: &[&str]) -> Option<String> {
    git_init(dir, home)?;
    let mut add = vec!["add"];
    add.extend_from_slice(add_args);
    git(dir, home, &add).expect("git add");
    let oid = git(dir, home, &["write-tree"]).expect("git write-tree");
    assert_eq!(oid.len(), 64, "unexpected git write-tree output {oid:?}");
    Some(oid)
}

/// Makes `dir` a SHA-256 repository (if it is not one yet); None (with a note) when git
/// cannot be used here.
fn git_init(dir: &Path, home: &Path) -> Option<()> {
    if let Err(e) = git(home, home, &["--version"]) {
        eprintln!("skipped: git not available on PATH ({e})");
        return None;
    }
    if dir.join(".git").exists() {
        return Some(());
    }
    if let Err(e) = git(dir, home, &["init", "-q", "--object-format=sha256"]) {
        eprintln!("skipped: git does not support --object-format=sha256 ({e})");
        return None;
    }
    Some(())
}

/// `elench tree ARGS DIR` through the binary, with the user configuration in `home`.
fn elench_tree(dir: &Path, home: &Path, args: &[&str]) -> String {
    let json = elench_tree_json(dir, home, args);
    let oid = json["data"]["tree"].as_str().expect("a tree").to_owned();
    assert_hex64(&oid);
    oid
}

/// `elench tree ARGS DIR`'s whole JSON answer.
fn elench_tree_json(dir: &Path, home: &Path, args: &[&str]) -> Value {
    let (code, json) = elench_tree_any(dir, home, args);
    assert_eq!(code, 0, "{json}");
    json
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
    let home = tempfile::tempdir().expect("tempdir for HOME");
    assert_eq!(
        elench_tree(root, home.path(), &[]),
        ours,
        "elench tree prints tree_oid"
    );
    if let Some(theirs) = git_write_tree_in(root, home.path(), add_args) {
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
fn no_ignore_keeps_ignored_files_like_git_add_force() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let home = tempfile::tempdir().expect("tempdir for HOME");
    write(root, ".gitignore", "*.log\nbuild/\n");
    write(root, "kept.txt", "kept\n");
    write(
        root,
        "debug.log",
        "ignored by git, counted with --no-ignore\n",
    );
    write(root, "build/out.o", "object\n");
    write(root, "sub/.gitignore", "*\n");
    write(root, "sub/file.txt", "also ignored by git\n");

    let honouring = elench_tree(root, home.path(), &[]);
    let all = elench_tree(root, home.path(), &["--no-ignore"]);
    assert_ne!(
        honouring, all,
        "the ignored files must change the --no-ignore tree"
    );
    assert_eq!(
        elench::tree::tree_oid_with(root, elench::tree::Selection::All).expect("tree_oid_with"),
        all
    );
    if let Some(theirs) = git_write_tree_in(root, home.path(), &["-A"]) {
        assert_eq!(honouring, theirs, "elench tree differs from git add -A");
    }
    if let Some(theirs) = git_write_tree_in(root, home.path(), &["-A", "--force"]) {
        assert_eq!(
            all, theirs,
            "elench tree --no-ignore differs from git add -A --force"
        );
    }
}

/// Nested `.gitignore` files with negations, anchored and `**` patterns, directory-only
/// patterns, an ignored directory holding files a negation names (git cannot re-include
/// them), a `.gitignore` that ignores itself, symbolic links matched as files,
/// `.git/info/exclude` and the XDG global excludes file.
#[test]
fn tree_equals_git_add_with_nested_ignores_negations_and_excludes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let home = tempfile::tempdir().expect("tempdir for HOME");
    write(home.path(), ".config/git/ignore", "*.swp\n");
    write(
        root,
        ".gitignore",
        "*.log\n!important.log\nbuild/\n/top-only.txt\n**/gen/*.rs\n!**/gen/keep.rs\n\
         keep/*\n!keep/yes.txt\ndir-only/\n# a comment\n\\#hash\n",
    );
    write(root, "a.log", "x\n");
    write(root, "important.log", "kept by a negation\n");
    // An ignored directory: its own .gitignore cannot re-include anything in it.
    write(root, "build/out.o", "object\n");
    write(root, "build/.gitignore", "!keep.txt\n");
    write(root, "build/sub/keep.txt", "looks tracked, is not\n");
    write(root, "top-only.txt", "anchored: ignored here\n");
    write(
        root,
        "a/top-only.txt",
        "not the anchored one, but a/.gitignore drops *.txt\n",
    );
    write(root, "src/gen/x.rs", "generated\n");
    write(root, "src/gen/keep.rs", "kept\n");
    write(root, "keep/no.txt", "x\n");
    write(root, "keep/yes.txt", "x\n");
    write(root, "#hash", "escaped pattern\n");
    // A nested .gitignore: its patterns are relative to its directory, and it wins.
    write(root, "a/.gitignore", "*.txt\n!c.txt\n/b/deep.md\n");
    write(root, "a/b/c.txt", "x\n");
    write(root, "a/b/d.txt", "y\n");
    write(root, "a/b/deep.md", "anchored to a/\n");
    write(root, "a/b/e/deep.md", "not anchored here\n");
    write(root, "a/b/x.log", "the parent's rule\n");
    write(root, "self/.gitignore", ".gitignore\nhidden\n");
    write(root, "self/hidden", "x\n");
    write(root, "self/shown", "x\n");
    // The global excludes file.
    write(root, "notes.swp", "x\n");
    // info/exclude (written once .git exists).
    write(root, "logs/today", "x\n");
    symlink("a", root.join("dir-only")).expect("symlink");
    symlink("nowhere", root.join("dangling.log")).expect("symlink");
    symlink("build", root.join("link-to-ignored-dir")).expect("symlink");

    let Some(()) = git_init(root, home.path()) else {
        return;
    };
    write(root, ".git/info/exclude", "logs/\n");
    let ours = elench_tree(root, home.path(), &[]);
    let theirs = git_write_tree_in(root, home.path(), &["-A"]).expect("git");
    assert_eq!(ours, theirs, "elench tree differs from git add -A");
    let listed = git(root, home.path(), &["ls-files"]).expect("git ls-files");
    for gone in [
        "a.log",
        "build/sub/keep.txt",
        "logs/today",
        "notes.swp",
        "a/b/deep.md",
        "a/top-only.txt",
        "top-only.txt",
        "#hash",
        "self/.gitignore",
        "self/hidden",
    ] {
        assert!(
            !listed.lines().any(|l| l == gone),
            "git keeps {gone}?\n{listed}"
        );
    }
    for kept in [
        "important.log",
        "a/b/e/deep.md",
        "dir-only",
        "link-to-ignored-dir",
        "self/shown",
    ] {
        assert!(
            listed.lines().any(|l| l == kept),
            "git drops {kept}?\n{listed}"
        );
    }
    // Each rule source matters: without it the tree changes.
    fs::write(root.join(".git/info/exclude"), "").expect("write");
    assert_ne!(
        elench_tree(root, home.path(), &[]),
        ours,
        "info/exclude ignored"
    );
    fs::write(root.join(".git/info/exclude"), "logs/\n").expect("write");
    let bare_home = tempfile::tempdir().expect("tempdir for HOME");
    assert_ne!(
        elench_tree(root, bare_home.path(), &[]),
        ours,
        "global excludes ignored"
    );
    assert_eq!(elench_tree(root, home.path(), &[]), ours);
}

/// The corners of git's pattern language: escapes, trailing spaces, `**` in each position,
/// inner `/` anchoring, classes and `?`, a directory named like a file pattern, and a
/// negation that re-includes files whose directory was never excluded.
#[test]
fn tree_equals_git_add_on_pattern_corners() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let home = tempfile::tempdir().expect("tempdir for HOME");
    write(
        root,
        ".gitignore",
        "\\!bang\ntrail  \nesc\\ \na/**/b\n**/foo\nbar/**\ndoc/frotz\n[xy]z.c\nq?.h\n\
         *.txt\n!keep/**\nlogs/**/*.log\n!/root.txt\n",
    );
    for rel in [
        "!bang",
        "trail",
        "trail  ",
        "esc ",
        "esc",
        "a/b/f",
        "a/x/y/b/f",
        "c/foo/f",
        "foo",
        "bar/baz/f",
        "bar/g",
        "doc/frotz",
        "sub/doc/frotz",
        "xz.c",
        "zz.c",
        "q1.h",
        "q12.h",
        "t.txt",
        "x.txt/inner",
        "keep/d/e.txt",
        "logs/1/2/a.log",
        "logs/a.log",
        "root.txt",
    ] {
        write(root, rel, "x\n");
    }
    // A .gitignore that is a symbolic link is not read (git refuses it), and a line's
    // carriage return is not part of its pattern.
    write(root, "rules", "*.o\n");
    write(root, "sub/a.o", "x\n");
    symlink("../rules", root.join("sub/.gitignore")).expect("symlink");
    write(root, "crlf/.gitignore", "only\r\n");
    write(root, "crlf/only", "x\n");
    let ours = elench_tree(root, home.path(), &[]);
    if let Some(theirs) = git_write_tree_in(root, home.path(), &["-A"]) {
        assert_eq!(ours, theirs, "elench tree differs from git add -A");
    }
}

/// `core.excludesFile` in the user's ~/.gitconfig, with a `~` path, replaces the XDG file.
#[test]
fn tree_honours_core_excludes_file_like_git() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let home = tempfile::tempdir().expect("tempdir for HOME");
    write(
        home.path(),
        ".gitconfig",
        "[core]\n\texcludesFile = ~/my-ignores\n",
    );
    write(home.path(), "my-ignores", "*.env\n");
    write(home.path(), ".config/git/ignore", "*.md\n");
    write(root, "secret.env", "TOKEN=1\n");
    write(root, "README.md", "kept: the XDG file is not read\n");
    write(root, "src/main.rs", "fn main() {}\n");
    let ours = elench_tree(root, home.path(), &[]);
    if let Some(theirs) = git_write_tree_in(root, home.path(), &["-A"]) {
        assert_eq!(ours, theirs);
    }
    fs::remove_file(root.join("secret.env")).expect("rm");
    assert_eq!(
        elench_tree(root, home.path(), &[]),
        ours,
        "secret.env counted"
    );
}

/// Issue: every build changed the tree. Build outputs under an ignored `target/` never do.
#[test]
fn build_outputs_never_change_the_tree() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let home = tempfile::tempdir().expect("tempdir for HOME");
    write(root, ".gitignore", "/target\n");
    write(root, "Cargo.toml", "[package]\nname = \"x\"\n");
    write(root, "src/lib.rs", "pub fn f() {}\n");
    let before = elench_tree(root, home.path(), &[]);
    write(root, "target/debug/build/x.rlib", vec![7u8; 1 << 20]);
    write(root, "target/.rustc_info.json", "{}\n");
    assert_eq!(
        elench_tree(root, home.path(), &[]),
        before,
        "a build changed the tree"
    );
    if let Some(theirs) = git_write_tree_in(root, home.path(), &["-A"]) {
        assert_eq!(before, theirs);
    }
}

/// In a linked work tree (`.git` is a file), the common git directory's info/exclude counts.
#[test]
fn linked_worktree_uses_the_common_info_exclude() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = tempfile::tempdir().expect("tempdir for HOME");
    let main = dir.path().join("main");
    let linked = dir.path().join("linked");
    write(&main, "a.txt", "a\n");
    let Some(()) = git_init(&main, home.path()) else {
        return;
    };
    let g = |d: &Path, args: &[&str]| git(d, home.path(), args).expect("git");
    g(&main, &["add", "-A"]);
    g(
        &main,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e",
            "commit",
            "-qm",
            "one",
        ],
    );
    g(&main, &["worktree", "add", "-q", linked.to_str().unwrap()]);
    write(&main, ".git/info/exclude", "*.tmp\n");
    write(&linked, "scratch.tmp", "x\n");
    write(&linked, "b.txt", "b\n");
    let ours = elench_tree(&linked, home.path(), &[]);
    g(&linked, &["add", "-A"]);
    assert_eq!(ours, g(&linked, &["write-tree"]));
    assert_ne!(ours, elench_tree(&linked, home.path(), &["--no-ignore"]));
}

/// `anchor` refuses an ignored file (its tree does not hold it) unless --no-ignore; claims
/// anchored at a tree that held ignored files (as before ignores were honoured) carry or go
/// stale by digest; `status --at --no-ignore` reads the tree as such claims saw it.
#[test]
fn anchor_and_status_see_the_same_files_and_old_claims_still_resolve() {
    use common::{sign_cli, ClaimBuilder, KeyedStore};
    let ks = KeyedStore::new();
    let tree = ks.dir().join("tree");
    write(&tree, ".gitignore", "build/\n");
    write(&tree, "src/lib.rs", "fn a() {}\nfn b() {}\n");
    write(&tree, "build/gen.rs", "fn generated() {}\n");
    let at = tree.to_str().unwrap();

    let (code, out) = common::elench(ks.dir(), &["anchor", "build/gen.rs", "--at", at]);
    assert_eq!(code, 2, "an ignored file was anchored: {out}");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ignored"),
        "{out}"
    );
    // What the old elench anchored: the tree with its ignored files.
    let old = |spec: &str| {
        let (code, out) = common::elench(ks.dir(), &["anchor", spec, "--at", at, "--no-ignore"]);
        assert_eq!(code, 0, "{out}");
        out["data"]["anchor"].clone()
    };
    let lib = old("src/lib.rs:2-2");
    let gen = old("build/gen.rs");
    let (code, now) = common::elench(ks.dir(), &["anchor", "src/lib.rs:2-2", "--at", at]);
    assert_eq!(code, 0, "{now}");
    assert_ne!(
        now["data"]["anchor"]["tree"], lib["tree"],
        "ignored files counted"
    );
    assert_eq!(
        now["data"]["anchor"]["tree"],
        json!(check_support::tree_oid(ks.dir(), &tree))
    );

    let add = |anchor: &Value, n: i64| {
        let claim = ClaimBuilder::assertion("about an old tree")
            .set("anchor", anchor.clone())
            .timestamp(1_700_000_000 + n)
            .build();
        let (env, id) = sign_cli(ks.dir(), &claim, &ks.keys.agent);
        let (code, out) = ks.run(&["add", env.to_str().unwrap()]);
        assert_eq!(code, 0, "{out}");
        id
    };
    let on_lib = add(&lib, 1);
    let on_gen = add(&gen, 2);
    let applies = |extra: &[&str]| -> Vec<String> {
        let mut args = vec!["status", on_lib.as_str(), on_gen.as_str(), "--at", at];
        args.extend_from_slice(extra);
        let (code, out) = ks.run(&args);
        assert_eq!(code, 0, "{out}");
        let claims = out["data"]["claims"].as_array().unwrap().clone();
        [&on_lib, &on_gen]
            .iter()
            .map(|id| {
                let c = claims.iter().find(|c| c["id"] == json!(id)).unwrap();
                c["applies"].as_str().unwrap().to_owned()
            })
            .collect()
    };
    // The ignored file is not in the tree: a claim about it is stale, whatever is on disk.
    assert_eq!(applies(&[]), ["carried", "stale"]);
    assert_eq!(applies(&["--no-ignore"]), ["anchored", "anchored"]);
    let policy = ks.dir().join("policy.toml");
    fs::write(
        &policy,
        "[rules]\nmax_unevaluated = 9\nstale = \"ignore\"\n",
    )
    .unwrap();
    for extra in [&[][..], &["--no-ignore"][..]] {
        let mut args = vec!["gate", "--policy", policy.to_str().unwrap(), "--at", at];
        args.extend_from_slice(extra);
        let (code, out) = ks.run(&args);
        assert_eq!(code, 0, "gate {extra:?}: {out}");
    }
}

/// `check` never sees an ignored file: not its tree OID, not `exists`/`grep`, not `run()`
/// in the sandbox's copy. With --no-ignore it sees them all.
#[test]
fn check_never_sees_an_ignored_file() {
    use check_support::{bwrap_works, outcome, Bench};
    let b = Bench::new(&[
        (".gitignore", "*.bin\nsecrets/\n"),
        ("src/lib.rs", "pub fn f() {}\n"),
        ("ignored.bin", "SECRET build output\n"),
        ("secrets/key", "SECRET key\n"),
    ]);
    let sandbox: &[&str] = if bwrap_works() {
        &[]
    } else {
        eprintln!("note: bwrap unavailable; process claims run with --no-sandbox");
        &["--no-sandbox"]
    };
    let home = tempfile::tempdir().expect("tempdir for HOME");
    if let Some(theirs) = git_write_tree_in(&b.tree, home.path(), &["-A"]) {
        assert_eq!(b.tree_oid(), theirs);
    }
    let blind = b.claim(
        r#"!exists("ignored.bin") && !exists("secrets/key") && !exists("secrets") && grep("SECRET", "") == 0 && exists("src/lib.rs")"#,
    );
    let ran = b.claim(
        r#"run("test -e ignored.bin || test -e secrets/key || grep -r SECRET .").exit == 1 && run("test -e src/lib.rs").exit == 0"#,
    );
    // The sandbox's copy holds exactly the tree's files.
    let copy = b.claim(
        r#"run("find . -type f -o -type l | LC_ALL=C sort").stdout == "./.gitignore\n./src/lib.rs\n""#,
    );
    let mut args = sandbox.to_vec();
    args.extend([blind.as_str(), ran.as_str(), copy.as_str()]);
    let (code, out) = b.check(&args);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["data"]["tree"], json!(b.tree_oid()));
    assert_eq!(outcome(&out, &blind), "verified", "{out}");
    assert_eq!(outcome(&out, &ran), "verified", "{out}");
    assert_eq!(outcome(&out, &copy), "verified", "{out}");

    // With --no-ignore the tree is another one, holding the files.
    let all_tree = elench::tree::tree_oid_with(&b.tree, elench::tree::Selection::All).unwrap();
    let sees = b.claim_full(
        r#"exists("ignored.bin") && run("test -e secrets/key").exit == 0"#,
        &all_tree,
        &[],
    );
    let mut args = sandbox.to_vec();
    args.extend(["--no-ignore", sees.as_str()]);
    let (code, out) = b.check(&args);
    assert_eq!(code, 0, "{out}");
    assert_eq!(outcome(&out, &sees), "verified", "{out}");
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

/// Git commits a tracked file whatever the ignore rules say; the tree leaves it out, and
/// `tree` says so (`TRACKED_IGNORED`), for SHA-1 and SHA-256 repositories and index
/// versions 2, 3 (an intent-to-add entry) and 4 (compressed paths).
#[test]
fn tracked_files_that_the_rules_leave_out_are_named() {
    let home = tempfile::tempdir().expect("tempdir for HOME");
    if git(home.path(), home.path(), &["--version"]).is_err() {
        eprintln!("skipped: git not available on PATH");
        return;
    }
    let warned = |json: &Value| -> Vec<String> {
        json["warnings"]
            .as_array()
            .expect("warnings")
            .iter()
            .filter(|w| w["code"] == "TRACKED_IGNORED")
            .map(|w| w["message"].as_str().unwrap().to_owned())
            .collect()
    };
    for format in ["sha1", "sha256"] {
        for version in ["2", "3", "4"] {
            let dir = tempfile::tempdir().expect("tempdir");
            let root = dir.path();
            let g = |args: &[&str]| git(root, home.path(), args).expect("git");
            let init = format!("--object-format={format}");
            if git(root, home.path(), &["init", "-q", &init]).is_err() {
                eprintln!("skipped: git cannot make a {format} repository");
                continue;
            }
            write(root, "src/deep/er/a.rs", "a\n");
            write(root, "src/deep/er/b.rs", "b\n");
            write(root, "gen/out.rs", "generated, committed by mistake\n");
            g(&["add", "-A"]);
            if version == "3" {
                // An intent-to-add entry carries the extended flags of version 3.
                write(root, "src/new.rs", "n\n");
                g(&["add", "-N", "src/new.rs"]);
            }
            g(&["update-index", "--index-version", version]);
            let label = format!("{format} index v{version}");
            assert!(
                warned(&elench_tree_json(root, home.path(), &[])).is_empty(),
                "{label}"
            );
            write(root, ".gitignore", "gen/\nb.rs\nnew.rs\n");
            let msgs = warned(&elench_tree_json(root, home.path(), &[]));
            let count = if version == "3" { 3 } else { 2 };
            assert_eq!(msgs.len(), 1, "{label}: {msgs:?}");
            assert!(
                msgs[0].starts_with(&format!("{count} file(s) that git tracks")),
                "{label}: {msgs:?}"
            );
            assert!(msgs[0].contains("(first: gen/out.rs)"), "{label}: {msgs:?}");
            assert!(
                warned(&elench_tree_json(root, home.path(), &["--no-ignore"])).is_empty(),
                "{label}"
            );
            // An index that is a link to an endless device is not read (the tree came with
            // its .git and may hold anything).
            fs::remove_file(root.join(".git/index")).expect("rm index");
            symlink("/dev/zero", root.join(".git/index")).expect("symlink");
            assert!(
                warned(&elench_tree_json(root, home.path(), &[])).is_empty(),
                "{label}"
            );
        }
    }
}

// ---- issue 32, item 6: the tree of a directory inside a work tree is git's subtree ----

/// git's id of the empty tree (SHA-256).
const EMPTY_TREE: &str = "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321";

/// `elench tree ARGS DIR` through the binary: exit code and the JSON answer.
fn elench_tree_any(dir: &Path, home: &Path, args: &[&str]) -> (i32, Value) {
    let mut cmd = Command::new(common::elench_path());
    isolate(&mut cmd, home);
    let out = cmd
        .arg("tree")
        .args(args)
        .args(["--format", "json"])
        .arg(dir)
        .output()
        .expect("elench runs");
    let json: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    (out.status.code().expect("an exit code"), json)
}

/// Every subtree of git's tree `tree` in the repository at `root`, by path (`""` the top).
fn git_subtrees(
    root: &Path,
    home: &Path,
    tree: &str,
) -> std::collections::BTreeMap<String, String> {
    let listed = git(root, home, &["ls-tree", "-r", "-d", tree]).expect("git ls-tree");
    let mut out: std::collections::BTreeMap<String, String> = listed
        .lines()
        .filter_map(|l| {
            let (meta, path) = l.split_once('\t')?;
            Some((path.to_owned(), meta.split_whitespace().nth(2)?.to_owned()))
        })
        .collect();
    out.insert(String::new(), tree.to_owned());
    out
}

/// What `git add -A && git write-tree` gives in the SHA-256 repository at `root`.
fn git_add_all_write_tree(root: &Path, home: &Path) -> String {
    git(root, home, &["add", "-A"]).expect("git add");
    git(root, home, &["write-tree"]).expect("git write-tree")
}

/// Issue 32: with `__pycache__/` in the checkout's root `.gitignore`, `elench tree src` is
/// git's subtree `src` of `git add -A && git write-tree`, and Python writing bytecode under
/// src/ never changes it; a whole-tree claim made `--at src` stays anchored there.
#[test]
fn the_tree_of_a_subdirectory_is_the_subtree_git_commits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let home = tempfile::tempdir().expect("tempdir for HOME");
    write(root, ".gitignore", "__pycache__/\n*.egg-info/\n/dist\n");
    write(root, "pyproject.toml", "[project]\nname = \"app\"\n");
    write(root, "src/app/__init__.py", "");
    write(root, "src/app/main.py", "def main():\n    return 1\n");
    write(root, "src/dist/kept.py", "# not the anchored /dist\n");
    let Some(()) = git_init(root, home.path()) else {
        return;
    };
    let src = root.join("src");
    let before = elench_tree(&src, home.path(), &[]);
    write(
        root,
        "src/app/__pycache__/main.cpython-312.pyc",
        b"\x6f\x0d\x0d\x0abytecode",
    );
    write(root, "src/__pycache__/x.cpython-312.pyc", b"bytecode");
    write(root, "src/app.egg-info/PKG-INFO", "Name: app\n");
    assert_eq!(
        elench_tree(&src, home.path(), &[]),
        before,
        "bytecode changed the tree of src"
    );
    let tree = git_add_all_write_tree(root, home.path());
    let theirs = git(root, home.path(), &["rev-parse", &format!("{tree}:src")]).expect("rev-parse");
    assert_eq!(
        before, theirs,
        "elench tree src differs from git's subtree src"
    );
    // Through a relative path and through a symbolic link, the same.
    let (code, json) = {
        let mut cmd = Command::new(common::elench_path());
        isolate(&mut cmd, home.path());
        let out = cmd
            .current_dir(root)
            .args(["tree", "--format", "json", "src"])
            .output()
            .expect("elench runs");
        let json: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        (out.status.code(), json)
    };
    assert_eq!(code, Some(0), "{json}");
    assert_eq!(json["data"]["tree"], json!(before));
    let elsewhere = tempfile::tempdir().expect("tempdir");
    symlink(&src, elsewhere.path().join("link")).expect("symlink");
    assert_eq!(
        elench_tree(&elsewhere.path().join("link"), home.path(), &[]),
        before
    );
    // --no-ignore still reads no rule at all: the bytecode counts.
    assert_ne!(elench_tree(&src, home.path(), &["--no-ignore"]), before);
}

/// A whole-tree claim made `--at SUB` stays anchored at SUB after files the checkout's rules
/// ignore appear under it (it turned `unanchored` without a warning).
#[test]
fn a_claim_made_at_a_subdirectory_stays_anchored_when_ignored_files_appear() {
    use common::KeyedStore;
    let ks = KeyedStore::new();
    let home = tempfile::tempdir().expect("tempdir for HOME");
    let proj = ks.dir().join("proj");
    write(&proj, ".gitignore", "__pycache__/\n");
    write(&proj, "src/app/main.py", "def main():\n    return 1\n");
    if git(&proj, home.path(), &["init", "-q"]).is_err() {
        eprintln!("skipped: git cannot make a repository here");
        return;
    }
    let src = proj.join("src");
    let at = src.to_str().unwrap();
    let key = ks.keys.agent.private.to_str().unwrap().to_owned();
    let (code, out) = ks.run(&[
        "claim",
        "the app has one entry point",
        "--at",
        at,
        "--key",
        &key,
    ]);
    assert_eq!(code, 0, "{out}");
    let id = out["data"]["id"].as_str().expect("an id").to_owned();
    write(
        &proj,
        "src/app/__pycache__/main.cpython-312.pyc",
        b"bytecode",
    );
    let (code, out) = ks.run(&["status", &id, "--at", at]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out["data"]["claims"][0]["applies"],
        json!("anchored"),
        "{out}"
    );
}

/// A directory that the rules above it leave out (or that lies under one) has no tree: git
/// commits nothing of it. `tree`, `anchor`, `status --at` and `claim --at` say so
/// (`BAD_TREE`, naming the rule and its file); `--no-ignore` reads every file as before. And
/// git's index of the work tree is read for `TRACKED_IGNORED` from a subdirectory too.
#[test]
fn a_directory_the_rules_above_leave_out_has_no_tree() {
    use common::KeyedStore;
    let ks = KeyedStore::new();
    let home = tempfile::tempdir().expect("tempdir for HOME");
    let proj = ks.dir().join("proj");
    write(&proj, ".gitignore", "/build/\n");
    write(&proj, "build/out/gen.rs", "fn generated() {}\n");
    write(&proj, "src/gen/x.rs", "committed before the rule\n");
    write(&proj, "src/lib.rs", "fn a() {}\n");
    let Some(()) = git_init(&proj, home.path()) else {
        return;
    };
    for sub in ["build", "build/out"] {
        let (code, json) = elench_tree_any(&proj.join(sub), home.path(), &[]);
        assert_eq!(code, 2, "{sub}: {json}");
        assert_eq!(json["error"]["code"], json!("BAD_TREE"), "{sub}: {json}");
        let message = json["error"]["message"].as_str().unwrap();
        assert!(message.contains("`/build/`"), "{message}");
        assert!(message.contains(".gitignore"), "{message}");
        let (code, json) = elench_tree_any(&proj.join(sub), home.path(), &["--no-ignore"]);
        assert_eq!(code, 0, "{sub} --no-ignore: {json}");
    }
    let out = proj.join("build/out");
    let at = out.to_str().unwrap();
    for args in [
        vec!["anchor", "gen.rs", "--at", at],
        vec!["status", "--all", "--at", at],
    ] {
        let (code, json) = ks.run(&args);
        assert_eq!(code, 2, "{args:?}: {json}");
        assert_eq!(json["error"]["code"], json!("BAD_TREE"), "{args:?}: {json}");
    }
    let tree = git_add_all_write_tree(&proj, home.path());
    assert!(git(&proj, home.path(), &["rev-parse", &format!("{tree}:build")]).is_err());

    // A tracked file that a rule of the top now leaves out is named relative to src/.
    write(&proj, ".gitignore", "/build/\ngen/\n");
    let json = elench_tree_json(&proj.join("src"), home.path(), &[]);
    let warned: Vec<&str> = json["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["code"] == "TRACKED_IGNORED")
        .map(|w| w["message"].as_str().unwrap())
        .collect();
    assert_eq!(warned.len(), 1, "{json}");
    assert!(warned[0].contains("(first: gen/x.rs)"), "{json}");
}

/// Property: for random ignore files at several levels (negations, anchored patterns,
/// directory patterns, `**`, `*` with `!*/`), `info/exclude` and the global excludes,
/// `elench tree` of every subdirectory equals git's subtree of `git add -A && git
/// write-tree` in a SHA-256 repository: the empty tree where git has none, or `BAD_TREE`
/// when the rules leave the directory out (git's tree then has no such subtree).
#[test]
fn the_tree_of_every_subdirectory_equals_git_s_subtree_under_random_rules() {
    const DIRS: [&str; 6] = ["a", "b", "gen", "build", "src", "x.d"];
    const FILES: [&str; 7] = ["f.txt", "g.log", "keep.log", "h.rs", "x.pyc", "gen.rs", "c"];
    const PATTERNS: [&str; 38] = [
        "*.log",
        "!keep.log",
        "*.txt",
        "!f.txt",
        "gen/",
        "/gen",
        "gen",
        "build/",
        "/build",
        "a/b/",
        "a/gen/",
        "/a/*.txt",
        "**/x.pyc",
        "*.pyc",
        "!x.pyc",
        "b",
        "!b",
        "!b/",
        "src/gen/",
        "/src/",
        "x.d/",
        "**/gen/*.rs",
        "a/**/h.rs",
        "!gen/",
        "*",
        "!*/",
        "!h.rs",
        "c",
        "/c",
        "b/*",
        "a/",
        "/a/b",
        "**/b/**",
        "!/gen",
        "*.rs",
        "!src/",
        "/*/",
        "src/**",
    ];
    let mut rng = common::Rng::new(0x007e_e533);
    let (mut compared, mut left_out, mut empty) = (0, 0, 0);
    for case in 0..8 {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        let home = tempfile::tempdir().expect("tempdir for HOME");
        let pick = |rng: &mut common::Rng, n: usize| -> Vec<&'static str> {
            (0..rng.range(1, n as u64 + 1))
                .map(|_| PATTERNS[rng.below(PATTERNS.len())])
                .collect()
        };
        // Directories three levels deep, each with files and perhaps a .gitignore.
        let mut todo = vec![(String::new(), 0)];
        let mut dirs = Vec::new();
        while let Some((rel, depth)) = todo.pop() {
            let mut names: Vec<&str> = DIRS.to_vec();
            rng.shuffle(&mut names);
            let subdirs: Vec<&str> = if depth < 3 {
                names[..rng.range(0, 3) as usize].to_vec()
            } else {
                Vec::new()
            };
            let mut files: Vec<&str> = FILES
                .iter()
                .copied()
                .filter(|f| !subdirs.contains(f))
                .collect();
            rng.shuffle(&mut files);
            let at = |name: &str| {
                if rel.is_empty() {
                    name.to_owned()
                } else {
                    format!("{rel}/{name}")
                }
            };
            for f in &files[..rng.range(1, 4) as usize] {
                write(root, &at(f), format!("{case} {rel} {f}\n"));
            }
            if rng.chance(60) {
                write(root, &at(".gitignore"), pick(&mut rng, 4).join("\n") + "\n");
            }
            for d in subdirs {
                todo.push((at(d), depth + 1));
            }
            dirs.push(rel);
        }
        let global = pick(&mut rng, 2).join("\n") + "\n";
        if rng.chance(50) {
            write(home.path(), ".config/git/ignore", &global);
        }
        let Some(()) = git_init(root, home.path()) else {
            return;
        };
        if rng.chance(50) {
            write(
                root,
                ".git/info/exclude",
                pick(&mut rng, 2).join("\n") + "\n",
            );
        }
        let tree = git_add_all_write_tree(root, home.path());
        let subtrees = git_subtrees(root, home.path(), &tree);
        for rel in &dirs {
            let (code, json) = elench_tree_any(&root.join(rel), home.path(), &[]);
            let context = || {
                let rules = git(
                    root,
                    home.path(),
                    &["ls-files", "-o", "-i", "--exclude-standard"],
                );
                format!("case {case}, dir {rel:?}: {json}\nignored by git: {rules:?}")
            };
            match (code, subtrees.get(rel)) {
                (0, Some(theirs)) => {
                    assert_eq!(json["data"]["tree"], json!(theirs), "{}", context());
                    compared += 1;
                }
                (0, None) => {
                    assert_eq!(json["data"]["tree"], json!(EMPTY_TREE), "{}", context());
                    empty += 1;
                }
                (2, None) if json["error"]["code"] == "BAD_TREE" => left_out += 1,
                _ => panic!("{}", context()),
            }
        }
    }
    eprintln!("{compared} subtrees compared, {empty} empty, {left_out} left out");
    assert!(
        compared >= 20 && left_out >= 3 && empty >= 1,
        "{compared} {left_out} {empty}"
    );
}
