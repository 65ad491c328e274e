//! One evaluation's workspace: the tree it reads, and (made on first need) its private
//! scratch copy in which `test` and `run` start confined processes.

use super::evaluator::{Processes, RunResult, TestResult};
use super::paths::Tree;
use super::runners::{Runner, TestVerdict, JUNIT_FILE};
use super::sandbox::{copy_tree, give_away, sandbox_uid, Ending, Job, Output, Sandbox};
use super::transcript::ProcessRecord;
use crate::scratch::ScratchDir;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// JUnit reports larger than this are not read.
const MAX_REPORT: u64 = 16 << 20;

pub struct Workspace<'a> {
    source: &'a Tree,
    sandbox: &'a Sandbox,
    runner: Option<&'a Runner>,
    deadline: Instant,
    /// Why processes may not start here (no sandbox and no `--no-sandbox`), if so.
    denied: Option<String>,
    cancel: &'a AtomicBool,
    copy: Option<Copy>,
}

struct Copy {
    // Removed when the workspace is dropped.
    _dir: ScratchDir,
    tree: Tree,
    out: PathBuf,
    /// Who the sandbox runs as (and owns the copy).
    uid: u32,
}

impl<'a> Workspace<'a> {
    pub fn new(
        source: &'a Tree,
        sandbox: &'a Sandbox,
        runner: Option<&'a Runner>,
        deadline: Instant,
        denied: Option<String>,
        cancel: &'a AtomicBool,
    ) -> Workspace<'a> {
        Workspace {
            source,
            sandbox,
            runner,
            deadline,
            denied,
            cancel,
            copy: None,
        }
    }

    fn ensure_copy(&mut self) -> Result<(PathBuf, PathBuf, u32), String> {
        if self.copy.is_none() {
            let dir = ScratchDir::new("elench-check");
            std::fs::create_dir_all(dir.path())
                .map_err(|e| format!("cannot make a scratch directory: {e}"))?;
            let tree_dir = dir.path().join("tree");
            let out = dir.path().join("out");
            let uid = sandbox_uid();
            copy_tree(self.source, &tree_dir, uid)
                .map_err(|e| format!("cannot copy the tree: {e}"))?;
            std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
            give_away(&out, uid)?;
            self.copy = Some(Copy {
                tree: self.source.with_root(&tree_dir),
                _dir: dir,
                out,
                uid,
            });
        }
        match &self.copy {
            Some(c) => Ok((c.tree.root().to_path_buf(), c.out.clone(), c.uid)),
            None => Err("no scratch copy".into()),
        }
    }

    fn start(
        &mut self,
        argv: Vec<String>,
        env: Vec<(String, String)>,
    ) -> Result<(Output, PathBuf), String> {
        if let Some(why) = &self.denied {
            return Err(why.clone());
        }
        if self.cancel.load(Ordering::SeqCst) {
            return Err("check was interrupted".into());
        }
        let (tree, out, uid) = self.ensure_copy()?;
        let o = self.sandbox.run(Job {
            argv,
            env,
            tree: &tree,
            out: &out,
            deadline: self.deadline,
            cancel: Some(self.cancel),
            uid,
        });
        Ok((o, out))
    }
}

fn record(argv: Vec<String>, o: &Output, junit: Option<&[u8]>) -> ProcessRecord {
    let (ending, exit, signal) = match &o.ending {
        Ending::Exited(c) => ("exited", Some(*c), None),
        Ending::Signaled(s) => ("signaled", None, Some(*s)),
        Ending::TimedOut => ("timed-out", None, None),
        Ending::Cancelled => ("cancelled", None, None),
        Ending::NotStarted(_) => ("not-started", None, None),
    };
    let mut stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    if let Ending::NotStarted(why) = &o.ending {
        stderr.push_str(why);
    }
    ProcessRecord {
        argv,
        ending: ending.to_owned(),
        exit,
        signal,
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr,
        truncated: o.truncated,
        junit: junit.map(|j| String::from_utf8_lossy(j).into_owned()),
    }
}

/// Why a process that did not end on its own decides nothing.
fn unfinished(e: &Ending) -> Option<String> {
    match e {
        Ending::TimedOut => Some("the time limit ended it".into()),
        Ending::Cancelled => Some("check was interrupted".into()),
        Ending::Signaled(s) => Some(format!("it was ended by signal {s}")),
        Ending::NotStarted(why) => Some(format!("it could not start: {why}")),
        Ending::Exited(_) => None,
    }
}

impl Processes for Workspace<'_> {
    fn view(&self) -> &Tree {
        match &self.copy {
            Some(c) => &c.tree,
            None => self.source,
        }
    }

    fn run(&mut self, cmd: &str) -> (RunResult, Option<ProcessRecord>) {
        let argv = vec!["sh".to_owned(), "-c".to_owned(), cmd.to_owned()];
        let (o, _) = match self.start(argv.clone(), Vec::new()) {
            Ok(x) => x,
            Err(why) => return (RunResult::Inconclusive(why), None),
        };
        let rec = record(argv, &o, None);
        let result = match (&o.ending, unfinished(&o.ending)) {
            (_, Some(why)) => RunResult::Inconclusive(format!("run({cmd:?}): {why}")),
            // The shell's own codes for a command it could not find or execute.
            (Ending::Exited(c @ (126 | 127)), _) => RunResult::Inconclusive(format!(
                "run({cmd:?}): the command could not start (shell exit {c})"
            )),
            (Ending::Exited(c), _) => RunResult::Done {
                exit: i64::from(*c),
                stdout: rec.stdout.clone(),
            },
            _ => RunResult::Inconclusive("unknown ending".into()),
        };
        (result, Some(rec))
    }

    fn test(&mut self, name: &str) -> (TestResult, Option<ProcessRecord>) {
        let Some(runner) = self.runner else {
            return (
                TestResult::Inconclusive(format!(
                    "test({name:?}): no test runner was chosen (--runner cargo|pytest|junit:CMD)"
                )),
                None,
            );
        };
        if let Err(why) = runner.check_name(name) {
            return (TestResult::Inconclusive(why), None);
        }
        if let Some(why) = &self.denied {
            return (TestResult::Inconclusive(why.clone()), None);
        }
        let (tree, out, _) = match self.ensure_copy() {
            Ok(x) => x,
            Err(why) => return (TestResult::Inconclusive(why), None),
        };
        let (_, out_inside) = self.sandbox.inside(&tree, &out);
        let report = out.join(JUNIT_FILE);
        let _ = std::fs::remove_file(&report);
        let (argv, env) = runner.command(name, &out_inside);
        let (o, _) = match self.start(argv.clone(), env) {
            Ok(x) => x,
            Err(why) => return (TestResult::Inconclusive(why), None),
        };
        let junit = std::fs::metadata(&report)
            .ok()
            .filter(|m| m.is_file() && m.len() <= MAX_REPORT)
            .and_then(|_| std::fs::read(&report).ok());
        let rec = record(argv, &o, junit.as_deref());
        if let Some(why) = unfinished(&o.ending) {
            return (
                TestResult::Inconclusive(format!("test({name:?}): {why}")),
                Some(rec),
            );
        }
        let result = match runner.verdict(name, &o.stdout, junit.as_deref()) {
            TestVerdict::Passed => TestResult::Ran { passed: true },
            TestVerdict::Failed => TestResult::Ran { passed: false },
            TestVerdict::NotRun(why) => {
                TestResult::Inconclusive(format!("test({name:?}) did not run: {why}"))
            }
        };
        (result, Some(rec))
    }
}
