//! One evaluation's workspace: the tree its reads see (always the tree being checked, never
//! anything a process wrote), and, on first need, a job slot whose pristine copy of the tree
//! every process starts over, each through a writable layer of its own.

use super::evaluator::{Processes, RunResult, TestResult};
use super::paths::Tree;
use super::runners::{tail, Runner, TestVerdict, JUNIT_FILE};
use super::sandbox::{
    copy_tree, give_away, make_dir, sandbox_uid, Ending, Job, Output, Sandbox, OUTPUT_CAP,
};
use super::shared::{Results, SharedTests};
use super::transcript::{ProcessRecord, TestRun};
use super::Setup;
use crate::scratch::ScratchDir;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// JUnit reports larger than this are refused; a test run's stdout is kept up to this too.
pub const MAX_REPORT: u64 = 16 << 20;

/// How much of a runner's output a reason quotes, at most.
const REASON_TAIL: usize = 600;

/// A job slot: a pristine copy of the tree made once per `check` for each claim evaluated at
/// the same time, with the uid its processes run as (the copy's owner) and its report
/// directory. A claim takes a free slot and gives it back when it is done, so the copy is
/// made once per slot, never per claim or per process.
pub struct Slot {
    // Removed when the slot is dropped.
    _dir: ScratchDir,
    tree: PathBuf,
    out: PathBuf,
    work: PathBuf,
    uid: u32,
}

/// The free slots of one `check`.
#[derive(Default)]
pub struct Slots(Mutex<Vec<Slot>>);

impl Slots {
    fn take(&self) -> Option<Slot> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).pop()
    }
    fn give_back(&self, s: Slot) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(s);
    }
}

fn new_slot(source: &Tree, sandbox: &Sandbox) -> Result<Slot, String> {
    let dir = ScratchDir::create("elench-check", &sandbox.reaper).map_err(|e| e.to_string())?;
    let tree = dir.path().join("tree");
    let out = dir.path().join("out");
    let work = dir.path().join("work");
    let uid = sandbox_uid(&sandbox.reaper);
    copy_tree(source, &tree, uid).map_err(|e| format!("cannot copy the tree: {e}"))?;
    // The report directory stays elench's (a root-run sandbox cannot add to it or swap its
    // report for a link); only the report file itself is handed to the sandbox's user, who
    // must still reach it: the modes are explicit, whatever the umask (`umask 077` made
    // the folder 0700 and every test inconclusive, "wrote no JUnit report").
    make_dir(&out, 0o755)?;
    make_dir(&work, 0o700)?;
    Ok(Slot {
        _dir: dir,
        tree,
        out,
        work,
        uid,
    })
}

pub struct Workspace<'a> {
    source: &'a Tree,
    sandbox: &'a Sandbox,
    runner: Option<&'a Runner>,
    deadline: Instant,
    /// Wall time of a test run (each gets its own).
    timeout: Duration,
    /// Why processes may not start here (no sandbox and no `--no-sandbox`), if so.
    denied: Option<&'a str>,
    cancel: &'a AtomicBool,
    slots: &'a Slots,
    slot: Option<Slot>,
    /// The test runs of the `check`, and which round (of `--repeat`) this evaluation reads.
    shared: &'a SharedTests,
    round: usize,
    /// The test runs this evaluation read, in the order it first read each.
    read: Vec<Arc<Results>>,
}

impl Drop for Workspace<'_> {
    fn drop(&mut self) {
        if let Some(s) = self.slot.take() {
            self.slots.give_back(s);
        }
    }
}

impl<'a> Workspace<'a> {
    /// The workspace of round `round` of one claim's evaluation, which must end by
    /// `deadline`.
    pub fn new(
        setup: &'a Setup,
        shared: &'a SharedTests,
        round: usize,
        deadline: Instant,
    ) -> Workspace<'a> {
        Workspace {
            source: &setup.tree,
            sandbox: &setup.sandbox,
            runner: setup.runner.as_ref(),
            deadline,
            timeout: setup.timeout,
            denied: setup.denied.as_deref(),
            cancel: &setup.cancel,
            slots: &setup.slots,
            slot: None,
            shared,
            round,
            read: Vec::new(),
        }
    }

    /// The test runs this evaluation read its results from.
    pub fn test_runs(&self) -> impl Iterator<Item = &TestRun> {
        self.read.iter().map(|r| &r.run)
    }

    fn ensure_slot(&mut self) -> Result<&Slot, String> {
        if self.slot.is_none() {
            let s = match self.slots.take() {
                Some(s) => s,
                None => new_slot(self.source, self.sandbox)?,
            };
            self.slot = Some(s);
        }
        self.slot.as_ref().ok_or_else(|| "no job slot".to_owned())
    }

    fn start(
        &mut self,
        argv: Vec<String>,
        env: Vec<(String, String)>,
        deadline: Instant,
        stdout_cap: usize,
    ) -> Result<Output, String> {
        if let Some(why) = self.denied {
            return Err(why.to_owned());
        }
        if self.cancel.load(Ordering::SeqCst) {
            return Err("check was interrupted".into());
        }
        let (cancel, sandbox) = (self.cancel, self.sandbox);
        let slot = self.ensure_slot()?;
        Ok(sandbox.run(Job {
            argv,
            env,
            tree: &slot.tree,
            out: &slot.out,
            work: &slot.work,
            deadline,
            cancel: Some(cancel),
            uid: slot.uid,
            stdout_cap,
        }))
    }

    /// One run of `runner` for `names`, with a time limit of its own, in this workspace's
    /// slot: the results for every name. pytest refuses a whole run when one node id names
    /// no test; it is then run again without the ids it named (a few times at most).
    fn run_tests(&mut self, runner: &Runner, names: &[String]) -> Results {
        let deadline = Instant::now() + self.timeout;
        let mut run = TestRun {
            names: names.to_vec(),
            processes: Vec::new(),
        };
        let mut by_name = HashMap::new();
        let mut left: Vec<String> = names.to_vec();
        for attempt in 0..3 {
            let (out, uid) = match self.ensure_slot() {
                Ok(slot) => (slot.out.clone(), slot.uid),
                Err(why) => return Results::none(run, &why),
            };
            if let Err(why) = fresh_report(&out, uid) {
                return Results::none(run, &format!("no report file: {why}"));
            }
            let (argv, env) = runner.command(&left, &self.sandbox.out_inside(&out));
            // libtest's verdicts are read from stdout: keep as much of it as of a report.
            let o = match self.start(argv.clone(), env, deadline, MAX_REPORT as usize) {
                Ok(x) => x,
                Err(why) => return Results::none(run, &why),
            };
            let (junit, refused) = match read_report(&out) {
                Ok(j) => (j, None),
                Err(why) => (None, Some(why)),
            };
            run.processes.push(record(argv, &o, junit.as_deref()));
            let undecided = |why: String, run: TestRun, mut by_name: HashMap<_, _>| {
                for n in &left {
                    by_name.insert(n.clone(), Err(why.clone()));
                }
                Results::new(run, by_name)
            };
            if let Some(why) = refused {
                let why = format!("the report at $ELENCH_JUNIT is refused: {why}");
                return undecided(why, run, by_name);
            }
            if let Some(why) = unfinished(&o, self.sandbox.limits.scratch) {
                let why = format!("the test run: {why}");
                let why = explained(runner, why, &o);
                return undecided(why, run, by_name);
            }
            let Ending::Exited(exit) = o.ending else {
                return undecided("the test run did not end".into(), run, by_name);
            };
            let refused_ids = runner.not_found(&left, exit, &o.stdout, &o.stderr);
            if !refused_ids.is_empty() && attempt < 2 {
                for n in &refused_ids {
                    by_name.insert(
                        n.clone(),
                        Err("pytest found no test with this node id".to_owned()),
                    );
                }
                left.retain(|n| !refused_ids.contains(n));
                if left.is_empty() {
                    break;
                }
                continue;
            }
            match runner.read(&left, exit, &o.stdout, o.stdout_cut, junit.as_deref()) {
                Ok(verdicts) => {
                    for (n, v) in left.iter().zip(verdicts) {
                        let r = match v {
                            TestVerdict::Passed => Ok(true),
                            TestVerdict::Failed => Ok(false),
                            TestVerdict::NotRun(why) => Err(why),
                        };
                        by_name.insert(n.clone(), r);
                    }
                }
                Err(why) => {
                    let why = explained(runner, why, &o);
                    return undecided(why, run, by_name);
                }
            }
            break;
        }
        Results::new(run, by_name)
    }
}

/// `why` a run decides nothing, with what the process said: how it ended, the end of its
/// stderr (else of its stdout), and the likely cause when it is a known one.
fn explained(runner: &Runner, why: String, o: &Output) -> String {
    let mut s = why;
    match &o.ending {
        Ending::Exited(c) => s.push_str(&format!("; the runner exited {c}")),
        Ending::Signaled(sig) => s.push_str(&format!("; the runner was ended by signal {sig}")),
        _ => {}
    }
    let said = if o.stderr.iter().any(|b| !b.is_ascii_whitespace()) {
        Some(("stderr", &o.stderr))
    } else if o.stdout.iter().any(|b| !b.is_ascii_whitespace()) {
        Some(("stdout", &o.stdout))
    } else {
        None
    };
    if let Some((which, bytes)) = said {
        s.push_str(&format!(
            "; its {which} ends: «{}»",
            tail(bytes, REASON_TAIL)
        ));
    }
    let exit = match o.ending {
        Ending::Exited(c) => Some(c),
        _ => None,
    };
    if let Some(cause) = runner.likely_cause(exit, &o.stdout, &o.stderr) {
        s.push_str(&format!("; likely cause: {cause}"));
    }
    s
}

/// Makes an empty report file for the next test, owned by the sandbox's user, in place of
/// whatever the last one left.
fn fresh_report(out: &Path, uid: u32) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let p = out.join(JUNIT_FILE);
    match std::fs::symlink_metadata(&p) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(&p),
        Ok(_) => std::fs::remove_file(&p),
        Err(_) => Ok(()),
    }
    .map_err(|e| format!("{}: {e}", p.display()))?;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&p)
        .map_err(|e| format!("{}: {e}", p.display()))?;
    // 0644 whatever the umask.
    f.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .map_err(|e| format!("{}: {e}", p.display()))?;
    give_away(&p, uid)
}

/// The report a test process left: read only as a regular file of one link, never through
/// a symbolic link, never blocking on a FIFO, and never more than [`MAX_REPORT`] bytes, all
/// through one descriptor. `Ok(None)` when it wrote nothing; Err says why it is refused.
pub fn read_report(out: &Path) -> Result<Option<Vec<u8>>, String> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let p = out.join(JUNIT_FILE);
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(&p)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err("it is a symbolic link".into())
        }
        Err(e) => return Err(format!("it cannot be opened: {e}")),
    };
    let m = f
        .metadata()
        .map_err(|e| format!("it cannot be read: {e}"))?;
    if !m.is_file() {
        return Err("it is not a regular file".into());
    }
    if m.nlink() != 1 {
        return Err(format!("it has {} links, not one", m.nlink()));
    }
    if m.len() > MAX_REPORT {
        return Err(format!(
            "it is {} bytes, more than the {MAX_REPORT} a report may have",
            m.len()
        ));
    }
    let mut bytes = Vec::new();
    f.take(MAX_REPORT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("it cannot be read: {e}"))?;
    if bytes.len() as u64 > MAX_REPORT {
        return Err(format!("it is more than {MAX_REPORT} bytes"));
    }
    Ok(if bytes.is_empty() { None } else { Some(bytes) })
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

/// Why a process that did not end on its own, or ran out of room, decides nothing.
fn unfinished(o: &Output, scratch: u64) -> Option<String> {
    if o.scratch_full && matches!(o.ending, Ending::Exited(_)) {
        return Some(format!(
            "its writes filled the {} MiB of scratch space a process has (--scratch)",
            scratch >> 20
        ));
    }
    match &o.ending {
        Ending::TimedOut => Some("the time limit ended it".into()),
        Ending::Cancelled => Some("check was interrupted".into()),
        Ending::Signaled(s) => Some(format!("it was ended by signal {s}")),
        Ending::NotStarted(why) => Some(format!("it could not start: {why}")),
        Ending::Exited(_) => None,
    }
}

impl Processes for Workspace<'_> {
    fn view(&self) -> &Tree {
        // Always the tree being checked: no process can change what a read sees.
        self.source
    }

    fn deadline(&self) -> Option<Instant> {
        Some(self.deadline)
    }

    fn run(&mut self, cmd: &str) -> (RunResult, Option<ProcessRecord>) {
        let argv = vec!["sh".to_owned(), "-c".to_owned(), cmd.to_owned()];
        let deadline = self.deadline;
        let o = match self.start(argv.clone(), Vec::new(), deadline, OUTPUT_CAP) {
            Ok(x) => x,
            Err(why) => return (RunResult::Inconclusive(why), None),
        };
        let rec = record(argv, &o, None);
        let result = match (&o.ending, unfinished(&o, self.sandbox.limits.scratch)) {
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
        if let Some(why) = self.denied {
            return (TestResult::Inconclusive(why.to_owned()), None);
        }
        if self.cancel.load(Ordering::SeqCst) {
            return (
                TestResult::Inconclusive("check was interrupted".into()),
                None,
            );
        }
        let shared = self.shared;
        let Some(results) = shared.results(self.round, name, |names| self.run_tests(runner, names))
        else {
            return (
                TestResult::Inconclusive(format!(
                    "test({name:?}): not among the tests planned for this check"
                )),
                None,
            );
        };
        let result = match results.get(name) {
            Ok(passed) => TestResult::Ran { passed },
            Err(why) => TestResult::Inconclusive(format!("test({name:?}) did not run: {why}")),
        };
        if !self.read.iter().any(|r| Arc::ptr_eq(r, &results)) {
            self.read.push(results);
        }
        // The process is the shared run's, which the evaluation's transcript carries once.
        (result, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out_dir() -> ScratchDir {
        let s = ScratchDir::new("elench-report");
        std::fs::create_dir_all(s.path()).unwrap();
        s
    }

    #[test]
    fn a_regular_report_is_read_and_an_empty_one_is_none() {
        let s = out_dir();
        assert_eq!(read_report(s.path()), Ok(None));
        fresh_report(s.path(), sandbox_uid(&crate::reaper::Reaper::new())).unwrap();
        assert_eq!(read_report(s.path()), Ok(None));
        std::fs::write(s.path().join(JUNIT_FILE), "<testsuite/>").unwrap();
        assert_eq!(read_report(s.path()), Ok(Some(b"<testsuite/>".to_vec())));
        // The next test starts from an empty file again.
        fresh_report(s.path(), sandbox_uid(&crate::reaper::Reaper::new())).unwrap();
        assert_eq!(read_report(s.path()), Ok(None));
    }

    #[test]
    fn links_fifos_directories_hard_links_and_large_reports_are_refused() {
        let secret_dir = out_dir();
        let secret = secret_dir.path().join("key.pem");
        std::fs::write(&secret, "BEGIN PRIVATE KEY").unwrap();
        let report = |s: &ScratchDir| s.path().join(JUNIT_FILE);

        let s = out_dir();
        std::os::unix::fs::symlink(&secret, report(&s)).unwrap();
        assert!(read_report(s.path()).unwrap_err().contains("symbolic link"));
        std::fs::remove_file(report(&s)).unwrap();
        std::os::unix::fs::symlink("/proc/self/environ", report(&s)).unwrap();
        assert!(read_report(s.path()).is_err());

        let s = out_dir();
        let p = std::ffi::CString::new(report(&s).to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a valid path.
        assert_eq!(unsafe { libc::mkfifo(p.as_ptr(), 0o644) }, 0);
        // Refused at once, without waiting for a writer.
        assert!(read_report(s.path())
            .unwrap_err()
            .contains("not a regular file"));
        fresh_report(s.path(), sandbox_uid(&crate::reaper::Reaper::new())).unwrap();
        assert_eq!(read_report(s.path()), Ok(None));

        let s = out_dir();
        std::fs::create_dir(report(&s)).unwrap();
        assert!(read_report(s.path()).is_err());
        fresh_report(s.path(), sandbox_uid(&crate::reaper::Reaper::new())).unwrap();

        let s = out_dir();
        let linked = s.path().join("key.pem");
        std::fs::write(&linked, "BEGIN PRIVATE KEY").unwrap();
        std::fs::hard_link(&linked, report(&s)).unwrap();
        assert!(read_report(s.path()).unwrap_err().contains("links"));

        let s = out_dir();
        let f = std::fs::File::create(report(&s)).unwrap();
        f.set_len(MAX_REPORT + 1).unwrap();
        assert!(read_report(s.path()).unwrap_err().contains("more than"));
    }
}
