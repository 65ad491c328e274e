//! Push: one commit on top of the remote's head holding the local envelopes it lacks.
//!
//! Only local envelopes after the position recorded at the last exchange are candidates
//! (provided the remote still holds everything it held then), and each is looked up in the
//! remote's tree by its path and then by its bytes: a path holding anything else (anyone may
//! write to a remote) is reported and kept, and the envelope goes beside it, so no remote
//! content can keep an envelope from other stores. If someone else pushed first, the remote
//! refuses; the new head is fetched and the commit rebuilt on it, a bounded number of times.
//! A remote that refuses the update itself (a hook, a protected ref, credentials that may
//! not write) is not asked again: that is [`SyncError::PushRefused`], with git's words.

use super::git::{At, Blob, PackWrite, Pushed, Repo};
use super::remote::TrustListed;
use super::{layout, Conflict, Outcome, Session, SyncError, LISTED_MAX, PAGE, PROGRESS_FROM};
use std::collections::HashMap;
use std::time::Duration;

/// How many times a push that lost a race is rebuilt and tried again.
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
    /// Paths of the parent holding other bytes than the envelope that belongs there.
    conflicts: Vec<Conflict>,
    /// The digests of the store's policies, which the commit (or the parent, when there is
    /// no commit) holds at their paths.
    policies: Vec<String>,
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
                conflicted: built.conflicts.len(),
                conflicts: built.conflicts.into_iter().take(LISTED_MAX).collect(),
                ..Outcome::default()
            };
            if built.interrupted {
                out.interrupted = true;
                out.remote_head = head;
                return Ok(out);
            }
            let policies = built.policies;
            let Some((commit, n)) = built.commit else {
                self.state.pushed = head.clone();
                self.state.pushed_pos = if head.is_some() { built.end } else { 0 };
                if let Some(h) = &head {
                    // The remote holds every local envelope: all that was exchanged.
                    self.state.held = head.clone();
                    self.state.trust_pushed = Some(TrustListed {
                        commit: h.clone(),
                        digests: policies,
                    });
                }
                self.save()?;
                out.remote_head = head;
                return Ok(out);
            };
            out.attempts = attempt + 1;
            match repo.push(&self.remote.url, &commit, layout::LOG_REF)? {
                Pushed::Done => {
                    self.track(&repo, &commit);
                    self.connected = Some((repo.clone(), Some(commit.clone())));
                    // The commit adds only local envelopes to its parent: if everything in
                    // the parent was offered to this store already, so is everything in it.
                    if self.state.pulled == head {
                        if head.is_none() {
                            self.state.pending.clear();
                        }
                        self.state.pulled = Some(commit.clone());
                        self.state.pulled_local = self.store.envelope_count()?;
                    }
                    self.state.pushed = Some(commit.clone());
                    self.state.pushed_pos = built.end;
                    self.state.held = Some(commit.clone());
                    // The commit's trust folder is its parent's with the store's policies.
                    let listed = match self.state.trust_listed.take() {
                        Some(t) if Some(&t.commit) == head.as_ref() => Some(t.digests),
                        _ if head.is_none() => Some(Vec::new()),
                        _ => None,
                    };
                    self.state.trust_listed = listed.map(|mut digests| {
                        for d in &policies {
                            if !digests.contains(d) {
                                digests.push(d.clone());
                            }
                        }
                        TrustListed {
                            commit: commit.clone(),
                            digests,
                        }
                    });
                    self.state.trust_pushed = Some(TrustListed {
                        commit: commit.clone(),
                        digests: policies,
                    });
                    self.save()?;
                    out.pushed = n;
                    out.remote_head = Some(commit);
                    return Ok(out);
                }
                // Not a race: the same push gets the same answer, so it is not tried again.
                Pushed::Refused(why) => {
                    return Err(SyncError::PushRefused {
                        name: self.remote.name.clone(),
                        url: self.remote.url.clone(),
                        reason: why,
                    })
                }
                Pushed::Lost(why) => {
                    // The head this session knew is gone: ask again from now on.
                    self.connected = None;
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
        if self.state.pushed_pos > self.store.envelope_count()? || !repo.has_commit(pushed)? {
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
        let mut import: Option<PackWrite> = None;
        let mut conflicts = Vec::new();
        let mut pos = from;
        let total = self.store.envelope_count()?.saturating_sub(from) as usize;
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
                    conflicts,
                    policies: Vec::new(),
                });
            }
            let page = self.store.envelope_records(pos, PAGE)?;
            let Some(last) = page.last() else { break };
            pos = last.seq + 1;
            let paths: Vec<String> = page
                .iter()
                .map(|e| layout::envelope_path(&e.claim_id, &e.digest))
                .collect();
            let slots = match parent {
                Some(p) => {
                    let items: Vec<(String, &[u8])> = paths
                        .iter()
                        .zip(&page)
                        .map(|(path, e)| (path.clone(), e.bytes.as_slice()))
                        .collect();
                    slots(repo, p, &items)?
                }
                None => vec![Slot::Free; paths.len()],
            };
            for ((e, path), slot) in page.iter().zip(&paths).zip(slots) {
                let write_at = match slot {
                    Slot::Ours => continue,
                    Slot::Free => path.clone(),
                    Slot::Taken(at) => {
                        // Something else holds the path (or a file stands where a folder on
                        // the way to it should be): keep it, say so, and put the envelope
                        // beside it so that it still reaches every store.
                        let beside = match parent {
                            Some(p) => beside(repo, p, path, &at, &e.bytes)?,
                            None => None,
                        };
                        let (place, there) = beside.unwrap_or((path.clone(), false));
                        conflicts.push(Conflict {
                            path: at,
                            envelope_path: path.clone(),
                            placed_at: Some(place.clone()),
                            submodule: false,
                        });
                        if there {
                            continue;
                        }
                        place
                    }
                };
                let fi = match import.as_mut() {
                    Some(fi) => fi,
                    None => {
                        let mut fi = repo.pack_write()?;
                        fi.begin(parent)?;
                        import.insert(fi)
                    }
                };
                fi.add(&write_at, &e.bytes)?;
            }
            if progress {
                eprintln!("push: compared {}/{total}", (pos - from).min(total as u64));
            }
        }
        // The store's trust policies, at their own paths, where the remote lacks them; none
        // to look up when a push found or wrote every one of them in `parent` before.
        let policies = super::policies::items(self.store)?;
        let digests: Vec<String> = policies
            .iter()
            .filter_map(|(p, _)| super::policies::parse_path(p).map(|(_, d)| d.to_owned()))
            .collect();
        let known = self.state.trust_pushed.as_ref().is_some_and(|t| {
            Some(t.commit.as_str()) == parent && digests.iter().all(|d| t.digests.contains(d))
        });
        if !policies.is_empty() && !known {
            let items: Vec<(String, &[u8])> = policies
                .iter()
                .map(|(p, b)| (p.clone(), b.as_slice()))
                .collect();
            let found = match parent {
                Some(p) => slots(repo, p, &items)?,
                None => vec![Slot::Free; items.len()],
            };
            for ((path, bytes), slot) in items.iter().zip(found) {
                if slot == Slot::Ours {
                    continue;
                }
                let fi = match import.as_mut() {
                    Some(fi) => fi,
                    None => {
                        let mut fi = repo.pack_write()?;
                        fi.begin(parent)?;
                        import.insert(fi)
                    }
                };
                fi.add(path, bytes)?;
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
            conflicts,
            policies: digests,
        })
    }
}

/// Where an envelope stands in a tree at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Slot {
    /// Its very bytes are there.
    Ours,
    /// Nothing is there, nor a file where a folder on the way to it should be.
    Free,
    /// This path (the envelope's, or a folder's on the way to it) holds something else.
    Taken(String),
}

/// Where each envelope (path and bytes) stands in `commit`'s tree: a path counts as the
/// envelope's only if it holds the same bytes (a remote is trusted for nothing but transport,
/// so whatever its paths say, their content decides). The paths are walked one folder at a
/// time for all envelopes together, each name looked up once in the tree found for its
/// folder, so a folder shared by many envelopes is read once per page.
fn slots(repo: &Repo, commit: &str, items: &[(String, &[u8])]) -> Result<Vec<Slot>, SyncError> {
    let parts: Vec<Vec<&str>> = items.iter().map(|(p, _)| p.split('/').collect()).collect();
    // Per item: the tree-ish its next name is looked up in, until its slot is known.
    let mut walk: Vec<Result<String, Slot>> = vec![Ok(commit.to_owned()); items.len()];
    // (item, blob) pairs whose sizes agree: their content is compared.
    let mut compare: Vec<(usize, String)> = Vec::new();
    let depth = parts.iter().map(Vec::len).max().unwrap_or(0);
    for d in 0..depth {
        let mut index: HashMap<(&str, &str), usize> = HashMap::new();
        let mut asked: Vec<(&str, &str)> = Vec::new();
        for (i, w) in walk.iter().enumerate() {
            if let (Ok(treeish), Some(name)) = (w, parts[i].get(d)) {
                index.entry((treeish.as_str(), name)).or_insert_with(|| {
                    asked.push((treeish.as_str(), name));
                    asked.len() - 1
                });
            }
        }
        if asked.is_empty() {
            break;
        }
        let answers = repo.at_each(&asked)?;
        let mut next = walk.clone();
        for (i, w) in walk.iter().enumerate() {
            let Ok(treeish) = w else { continue };
            let last = d + 1 == parts[i].len();
            let taken = || Slot::Taken(parts[i][..=d].join("/"));
            next[i] = match &answers[index[&(treeish.as_str(), parts[i][d])]] {
                At::Nothing => Err(Slot::Free),
                At::Tree(oid) if !last => Ok(oid.clone()),
                At::Blob { oid, size } if last && *size == items[i].1.len() as u64 => {
                    compare.push((i, oid.clone()));
                    Err(taken())
                }
                _ => Err(taken()),
            };
        }
        walk = next;
    }
    let mut slots: Vec<Slot> = walk
        .into_iter()
        .map(|w| w.err().unwrap_or(Slot::Free))
        .collect();
    let oids: Vec<String> = compare.iter().map(|(_, oid)| oid.clone()).collect();
    let limit = items.iter().map(|(_, b)| b.len()).max().unwrap_or(0) as u64;
    repo.read_blobs(&oids, limit, |j, blob| {
        let i = compare[j].0;
        if matches!(blob, Blob::Content(b) if b == items[i].1) {
            slots[i] = Slot::Ours;
        }
        Ok(true)
    })?;
    Ok(slots)
}

/// A place for an envelope whose path `taken` blocks (`taken` is its path or a file on the
/// way to it): the blocked part of the path gets a suffix `~1`, `~2`, … and the first of
/// those that holds the envelope already (an earlier push put it there) or nothing at all
/// is the place; `(place, true)` when the envelope is there already. None when the layout's
/// own folder is blocked: nothing can go beside it.
fn beside(
    repo: &Repo,
    commit: &str,
    path: &str,
    taken: &str,
    bytes: &[u8],
) -> Result<Option<(String, bool)>, SyncError> {
    let depth = taken.matches('/').count();
    if depth == 0 {
        return Ok(None);
    }
    let parts: Vec<&str> = path.split('/').collect();
    let candidate = |k: usize| -> String {
        let mut p = parts.clone();
        let blocked = format!("{}~{k}", parts[depth]);
        p[depth] = &blocked;
        p.join("/")
    };
    // Asked in growing rounds: however much a remote piles up, it is a bounded number of
    // git calls per conflict, and the tree is finite, so a free place is always found.
    let (mut next, mut round) = (1usize, 8usize);
    loop {
        let items: Vec<(String, &[u8])> = (next..next + round)
            .map(|k| (candidate(k), bytes))
            .collect();
        for ((place, _), slot) in items.iter().zip(slots(repo, commit, &items)?) {
            match slot {
                Slot::Ours => return Ok(Some((place.clone(), true))),
                Slot::Free => return Ok(Some((place.clone(), false))),
                Slot::Taken(_) => {}
            }
        }
        next += round;
        round = round.saturating_mul(2);
    }
}

/// A pause before trying again that grows with each refusal and differs between processes,
/// so that pushers who collided do not collide again in step.
pub(super) fn backoff(attempt: usize) -> Duration {
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
