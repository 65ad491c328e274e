//! Writing one commit with `git fast-import`: files streamed in, the commit id carried out
//! through a ref of its own; dropped unfinished, nothing is written but garbage objects.

use super::process::{spawn_error, stderr_summary};
use super::{unique_ref, GitError, Repo};
use std::io::{BufWriter, Write};
use std::process::{Child, ChildStdin, Stdio};

impl Repo {
    /// Starts writing one commit with `fast-import`.
    pub fn fast_import(&self) -> Result<FastImport, GitError> {
        let mut cmd = self.cmd();
        // fast-import allocates and frees a compressor's buffers for every object; with
        // glibc's default trim threshold each free hands the memory back to the kernel and
        // the next object faults it in again, zeroed: two brk calls and about 256 KiB of page
        // faults per envelope, a fifth of the import's time. Keeping freed memory avoids
        // that. (Other C libraries ignore the variable; a value of the user's own stands.)
        if std::env::var_os("GLIBC_TUNABLES").is_none() {
            cmd.env("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=268435456");
        }
        let mut child = cmd
            .args(["fast-import", "--quiet", "--force", "--done"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| spawn_error("fast-import", e))?;
        let Some(stdin) = child.stdin.take() else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(GitError::Unexpected {
                command: "fast-import".into(),
                detail: "no stdin pipe".into(),
            });
        };
        Ok(FastImport {
            repo: self.clone(),
            child: Some(child),
            stdin: Some(BufWriter::with_capacity(1 << 20, stdin)),
            refname: unique_ref("import"),
            started: false,
            files: 0,
        })
    }
}

/// One commit being written by `git fast-import`. Dropping it unfinished aborts the import
/// (the stream never says `done`), leaving nothing behind but garbage objects.
pub struct FastImport {
    repo: Repo,
    child: Option<Child>,
    stdin: Option<BufWriter<ChildStdin>>,
    refname: String,
    started: bool,
    files: usize,
}

impl FastImport {
    fn write(&mut self, bytes: &[u8]) -> Result<(), GitError> {
        let Some(w) = self.stdin.as_mut() else {
            return Err(GitError::Unexpected {
                command: "fast-import".into(),
                detail: "the stream is closed".into(),
            });
        };
        match w.write_all(bytes) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.failure(e.to_string())),
        }
    }

    /// Why fast-import stopped: its own message, if it has exited.
    fn failure(&mut self, fallback: String) -> GitError {
        self.stdin = None;
        let message = match self.child.take().map(Child::wait_with_output) {
            Some(Ok(out)) if !out.status.success() => stderr_summary(&out.stderr),
            _ => fallback,
        };
        GitError::Failed {
            command: "fast-import".into(),
            message,
        }
    }

    /// Opens the commit: fixed identity and message, on top of `parent` (or a root commit).
    pub fn begin(&mut self, parent: Option<&str>) -> Result<(), GitError> {
        let mut head = format!(
            "reset {r}\ncommit {r}\nauthor {id}\ncommitter {id}\ndata {n}\n{msg}",
            r = self.refname,
            id = crate::sync::layout::IDENTITY,
            n = crate::sync::layout::MESSAGE.len(),
            msg = crate::sync::layout::MESSAGE,
        );
        if let Some(p) = parent {
            head.push_str(&format!("from {p}\n"));
        }
        self.write(head.as_bytes())?;
        self.started = true;
        Ok(())
    }

    /// Adds one file to the commit's tree (on top of the parent's tree).
    pub fn add(&mut self, path: &str, bytes: &[u8]) -> Result<(), GitError> {
        let header = format!("M 100644 inline {path}\ndata {}\n", bytes.len());
        self.write(header.as_bytes())?;
        self.write(bytes)?;
        self.write(b"\n")?;
        self.files += 1;
        Ok(())
    }

    pub fn files(&self) -> usize {
        self.files
    }

    /// Ends the stream and returns the new commit's id.
    pub fn finish(mut self) -> Result<String, GitError> {
        if !self.started {
            return Err(GitError::Unexpected {
                command: "fast-import".into(),
                detail: "no commit was begun".into(),
            });
        }
        self.write(b"\ndone\n")?;
        if let Some(mut w) = self.stdin.take() {
            if let Err(e) = w.flush() {
                return Err(self.failure(e.to_string()));
            }
        }
        let Some(child) = self.child.take() else {
            return Err(GitError::Unexpected {
                command: "fast-import".into(),
                detail: "already finished".into(),
            });
        };
        let out = child
            .wait_with_output()
            .map_err(|e| spawn_error("fast-import", e))?;
        if !out.status.success() {
            return Err(GitError::Failed {
                command: "fast-import".into(),
                message: stderr_summary(&out.stderr),
            });
        }
        let oid = self.repo.rev_parse(&self.refname)?;
        // The ref only carried the commit out of fast-import; the caller's refs keep it.
        let _ = self.repo.delete_ref(&self.refname);
        Ok(oid)
    }
}

impl Drop for FastImport {
    fn drop(&mut self) {
        self.stdin = None;
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
