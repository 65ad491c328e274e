//! Shared by the `check` tests: a keyed store beside a small tree the test writes, predicate
//! claims anchored to it, and `elench check` through the real binary.
#![allow(dead_code)]

use crate::common::{sign_cli, ClaimBuilder, KeyedStore};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};

static STAMP: AtomicI64 = AtomicI64::new(1_764_000_000);

pub struct Bench {
    pub ks: KeyedStore,
    pub tree: PathBuf,
}

impl Bench {
    /// A store, and a tree `DIR/tree` holding `files` (path, content).
    pub fn new(files: &[(&str, &str)]) -> Bench {
        let ks = KeyedStore::new();
        let tree = ks.dir().join("tree");
        write_files(&tree, files);
        Bench { ks, tree }
    }

    pub fn dir(&self) -> &Path {
        self.ks.dir()
    }

    pub fn tree_oid(&self) -> String {
        tree_oid(self.dir(), &self.tree)
    }

    /// An agent's predicate claim about the tree; returns its id (added to the store).
    pub fn claim(&self, source: &str) -> String {
        self.claim_full(source, &self.tree_oid(), &[])
    }

    pub fn claim_full(&self, source: &str, tree: &str, deps: &[&str]) -> String {
        let mut b = ClaimBuilder::assertion("a claim to check")
            .predicate("elench-predicate-v1", source)
            .tree(tree)
            .timestamp(STAMP.fetch_add(1, Ordering::SeqCst));
        if !deps.is_empty() {
            b = b.depends_on(deps);
        }
        let (env, id) = sign_cli(self.dir(), &b.build(), &self.ks.keys.agent);
        let (code, out) = self.ks.run(&["add", env.to_str().unwrap()]);
        assert_eq!(code, 0, "{out}");
        id
    }

    /// An annotation claim (depending on `deps`); returns its id.
    pub fn annotation(&self, deps: &[&str]) -> String {
        let b = ClaimBuilder::assertion("built on the checked claim")
            .tree(&self.tree_oid())
            .timestamp(STAMP.fetch_add(1, Ordering::SeqCst))
            .depends_on(deps);
        let (env, id) = sign_cli(self.dir(), &b.build(), &self.ks.keys.agent);
        let (code, out) = self.ks.run(&["add", env.to_str().unwrap()]);
        assert_eq!(code, 0, "{out}");
        id
    }

    /// `elench check --at TREE --key HARNESS ARGS…`.
    pub fn check(&self, args: &[&str]) -> (i32, Value) {
        self.ks.run(&self.check_args(args))
    }

    /// `elench --store STORE check …` as [`Bench::check`] runs it, not yet started: for the
    /// tests that watch it run (the caller says where its output goes).
    pub fn check_command(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = std::process::Command::new(crate::common::elench_path());
        cmd.current_dir(self.dir())
            .env_remove("ELENCH_STORE")
            .arg("--store")
            .arg(&self.ks.store)
            .args(self.check_args(args));
        cmd
    }

    /// `check --at TREE --key HARNESS ARGS…`.
    fn check_args(&self, args: &[&str]) -> Vec<String> {
        let mut all: Vec<String> = vec![
            "check".into(),
            "--at".into(),
            self.tree.display().to_string(),
            "--key".into(),
            self.ks.keys.harness.private.display().to_string(),
        ];
        all.extend(args.iter().map(|s| s.to_string()));
        all
    }

    /// Number of envelopes in the log.
    pub fn log_len(&self) -> usize {
        let bundle = self.ks.export();
        bundle
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .count()
    }

    pub fn status(&self, id: &str) -> String {
        let (code, out) = self.ks.run(&["status", id]);
        assert_eq!(code, 0, "{out}");
        out["data"]["claims"][0]["status"]
            .as_str()
            .unwrap()
            .to_owned()
    }
}

pub fn write_files(root: &Path, files: &[(&str, &str)]) {
    std::fs::create_dir_all(root).unwrap();
    for (p, content) in files {
        let f = root.join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, content).unwrap();
    }
}

pub fn tree_oid(dir: &Path, tree: &Path) -> String {
    let (code, out) = crate::common::elench(dir, &["tree", tree.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    out["data"]["tree"].as_str().unwrap().to_owned()
}

/// The `checked` entry for `id`.
pub fn entry<'a>(out: &'a Value, id: &str) -> &'a Value {
    out["data"]["checked"]
        .as_array()
        .unwrap_or_else(|| panic!("no checked list: {out}"))
        .iter()
        .find(|c| c["id"] == json!(id))
        .unwrap_or_else(|| panic!("{id} not in {out}"))
}

pub fn outcome(out: &Value, id: &str) -> String {
    entry(out, id)["outcome"].as_str().unwrap().to_owned()
}

/// `--no-sandbox` where bubblewrap cannot make a sandbox, so process-starting claims still
/// run (in the sandbox wherever one can be made).
pub fn proc_args() -> Vec<&'static str> {
    if bwrap_works() {
        vec![]
    } else {
        eprintln!("note: bwrap unavailable; process claims run with --no-sandbox");
        vec!["--no-sandbox"]
    }
}

/// `a` followed by `more`.
pub fn with<'a>(mut a: Vec<&'a str>, more: &[&'a str]) -> Vec<&'a str> {
    a.extend_from_slice(more);
    a
}

/// Whether bubblewrap can make a sandbox here.
pub fn bwrap_works() -> bool {
    std::process::Command::new("bwrap")
        .args(["--ro-bind", "/", "/", "--unshare-net", "true"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}
