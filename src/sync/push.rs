//! Push: one commit on top of the remote's head holding the local envelopes it lacks.
//!
//! Only local envelopes after the position recorded at the last exchange are candidates
//! (provided the remote still holds everything it held then), and each is looked up in the
//! remote's tree by its path. If someone else pushed first, the remote refuses; the new head
//! is fetched and the commit rebuilt on it, a bounded number of times.

use super::git::{FastImport, Pushed, Repo};
use super::{layout, local, Outcome, Session, SyncError, PAGE, PROGRESS_FROM};
use std::time::Duration;

/// How many times a refused push is rebuilt and tried again.
const ATTEMPTS: usize = 12;

/// A commit built for the remote (None: the remote lacks nothing) and the local log
/// position up to which it covers everything.
struct Built {
    commit: Option<(String, usize)>,
    end: u64,
    /// Local envelopes looked at.
    compared: usize,
    /// Stopped by a signal before the commit was written.
    interrupted: bool,
}

impl Session<'_> {
    pub fn push(&mut self) -> Result<Outcome, SyncError> {
        let (repo, mut head) = self.connect()?;
        let mut last_refusal = String::new();
        for attempt in 0..ATTEMPTS {
            let from = self.push_start(&repo, head.as_deref())?;
            let built = self.build(&repo, head.as_deref(), from)?;
            let mut out = Outcome {
                object_format: Some(repo.format.as_str()),
                attempts: attempt,
                compared: built.compared,
                ..Outcome::default()
            };
            if built.interrupted {
                out.interrupted = true;
                out.remote_head = head;
                return Ok(out);
            }
            let Some((commit, n)) = built.commit else {
                self.state.pushed = head.clone();
                self.state.pushed_pos = if head.is_some() { built.end } else { 0 };
                self.save()?;
                out.remote_head = head;
                return Ok(out);
            };
            out.attempts = attempt + 1;
            match repo.push(&self.remote.url, &commit, layout::LOG_REF)? {
                Pushed::Done => {
                    self.track(&repo, &commit);
                    // The commit adds only local envelopes to its parent: if everything in
                    // the parent was offered to this store already, so is everything in it.
                    if self.state.pulled == head {
                        if head.is_none() {
                            self.state.pending.clear();
                        }
                        self.state.pulled = Some(commit.clone());
                        self.state.pulled_local = local::envelope_count(self.store)?;
                    }
                    self.state.pushed = Some(commit.clone());
                    self.state.pushed_pos = built.end;
                    self.save()?;
                    out.pushed = n;
                    out.remote_head = Some(commit);
                    return Ok(out);
                }
                Pushed::Rejected(why) => {
                    last_refusal = why;
                    if (self.stop)() {
                        out.interrupted = true;
                        out.remote_head = head;
                        return Ok(out);
                    }
                    std::thread::sleep(backoff(attempt));
                    let seen = self.ls_remote()?;
                    if seen.format != repo.format {
                        return Err(SyncError::PushRejected {
                            attempts: attempt + 1,
                            reason: "the remote changed its object format meanwhile".into(),
                        });
                    }
                    head = match seen.head {
                        None => None,
                        Some(h) => Some(self.bring(&repo, &h)?),
                    };
                }
            }
        }
        Err(SyncError::PushRejected {
            attempts: ATTEMPTS,
            reason: last_refusal,
        })
    }

    /// Where the candidates start: the recorded position, if the remote still holds
    /// everything of the commit recorded with it; else the start of the log.
    pub(super) fn push_start(&self, repo: &Repo, head: Option<&str>) -> Result<u64, SyncError> {
        let (Some(pushed), Some(head)) = (self.state.pushed.as_deref(), head) else {
            return Ok(0);
        };
        if self.state.pushed_pos > local::envelope_count(self.store)? || !repo.has_commit(pushed)? {
            return Ok(0);
        }
        if pushed != head && repo.lost_any(pushed, head, layout::LAYOUT_DIR)? {
            return Ok(0);
        }
        Ok(self.state.pushed_pos)
    }

    /// Writes a commit on `parent` adding every local envelope from `from` on that
    /// `parent`'s tree lacks.
    fn build(&self, repo: &Repo, parent: Option<&str>, from: u64) -> Result<Built, SyncError> {
        let mut import: Option<FastImport> = None;
        let mut pos = from;
        let total = local::envelope_count(self.store)?.saturating_sub(from) as usize;
        let progress = self.progress && total >= PROGRESS_FROM;
        if progress {
            eprintln!("push: {total} local envelopes to compare with the remote");
        }
        loop {
            if (self.stop)() {
                // Dropping the unfinished import aborts it.
                return Ok(Built {
                    commit: None,
                    end: pos,
                    compared: (pos - from) as usize,
                    interrupted: true,
                });
            }
            let page = local::local_envelopes_since(self.store, pos, PAGE)?;
            let Some(last) = page.last() else { break };
            pos = last.seq + 1;
            let paths: Vec<String> = page
                .iter()
                .map(|e| layout::envelope_path(&e.claim_id, &e.digest))
                .collect();
            let present = match parent {
                Some(p) => repo.present(p, &paths)?,
                None => vec![false; paths.len()],
            };
            for ((e, path), there) in page.iter().zip(&paths).zip(present) {
                if there {
                    continue;
                }
                let fi = match import.as_mut() {
                    Some(fi) => fi,
                    None => {
                        let mut fi = repo.fast_import()?;
                        fi.begin(parent)?;
                        import.insert(fi)
                    }
                };
                fi.add(path, &e.bytes)?;
            }
            if progress {
                eprintln!("push: compared {}/{total}", (pos - from).min(total as u64));
            }
        }
        let commit = match import {
            None => None,
            Some(fi) => {
                let n = fi.files();
                Some((fi.finish()?, n))
            }
        };
        Ok(Built {
            commit,
            end: pos,
            compared: (pos - from) as usize,
            interrupted: false,
        })
    }
}

/// A pause before trying again that grows with each refusal and differs between processes,
/// so that pushers who collided do not collide again in step.
fn backoff(attempt: usize) -> Duration {
    let mut b = [0u8; 2];
    let _ = getrandom_bytes(&mut b);
    let jitter = u64::from(u16::from_le_bytes(b)) % 100;
    let base = 20u64 << attempt.min(5);
    Duration::from_millis(base + jitter)
}

fn getrandom_bytes(buf: &mut [u8]) -> Result<(), rand_core::Error> {
    use rand_core::RngCore;
    rand_core::OsRng.try_fill_bytes(buf)
}
