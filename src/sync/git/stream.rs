//! Reading many blobs through one `cat-file --batch` process that stays open for a whole
//! exchange: requests are written by a thread of their own and answers parsed by another,
//! so git reads and inflates the next blobs while the caller works on the last ones. One
//! process for the exchange, not one per page: git's cache of delta bases stays warm, and
//! a blob whose chain of deltas was resolved for one page is not resolved again for the
//! next.

use super::process::{spawn_error, stderr_summary, Drain};
use super::{bad_header, unexpected_eof, Blob, GitError, Repo};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::process::Child;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender};

/// Blobs handed over from the reading thread at a time, at most (by count, and by bytes
/// once a chunk holds at least one blob): what is read ahead of the caller stays bounded
/// ([`AHEAD`] chunks).
const CHUNK: usize = 256;
const CHUNK_BYTES: usize = 1 << 20;
/// Chunks read ahead of the caller, at most.
const AHEAD: usize = 8;

/// Blobs asked for in order and read back in that order, by one `cat-file --batch` process.
/// Dropped before every answer is taken, git is ended and nothing more is read.
pub struct BlobStream {
    child: Option<Child>,
    requests: Option<Sender<Vec<String>>>,
    answers: Receiver<std::io::Result<Vec<Blob>>>,
    ready: std::vec::IntoIter<Blob>,
    stderr: Option<Drain>,
    /// Asked for and not yet taken.
    owed: usize,
}

impl Repo {
    /// Starts a stream of blobs; blobs larger than `limit` are not read (a remote is trusted
    /// for transport only, so its sizes are not either).
    pub fn blob_stream(&self, limit: u64) -> Result<BlobStream, GitError> {
        let (mut child, stdin, stdout) = self.cat_file("--batch")?;
        let stderr = Drain::start(child.stderr.take());
        let (requests, asked) = channel::<Vec<String>>();
        std::thread::spawn(move || {
            let mut w = BufWriter::new(stdin);
            while let Ok(oids) = asked.recv() {
                for o in &oids {
                    if w.write_all(o.as_bytes())
                        .and_then(|_| w.write_all(b"\n"))
                        .is_err()
                    {
                        return;
                    }
                }
                if w.flush().is_err() {
                    return;
                }
            }
            // Dropping stdin ends git's input: it answers what is asked and exits.
        });
        let (answer, answers) = sync_channel(AHEAD);
        std::thread::spawn(move || {
            let mut reader = BufReader::with_capacity(1 << 16, stdout);
            loop {
                let mut chunk = Vec::new();
                let mut bytes = 0;
                let mut ended = false;
                while chunk.len() < CHUNK && bytes < CHUNK_BYTES {
                    // Only wait for the next answer while none is in hand: what is read is
                    // handed over as soon as git pauses.
                    if !chunk.is_empty() && reader.buffer().is_empty() {
                        break;
                    }
                    match read_one(&mut reader, limit) {
                        Ok(Some(blob)) => {
                            if let Blob::Content(b) = &blob {
                                bytes += b.len();
                            }
                            chunk.push(blob);
                        }
                        Ok(None) => {
                            ended = true;
                            break;
                        }
                        Err(e) => {
                            let _ = answer.send(Err(e));
                            return;
                        }
                    }
                }
                if !chunk.is_empty() && answer.send(Ok(chunk)).is_err() {
                    return; // the stream was dropped
                }
                if ended {
                    return;
                }
            }
        });
        Ok(BlobStream {
            child: Some(child),
            requests: Some(requests),
            answers,
            ready: Vec::new().into_iter(),
            stderr: Some(stderr),
            owed: 0,
        })
    }
}

/// One answer of `cat-file --batch`, or None at the end of its output.
pub(super) fn read_one(reader: &mut impl BufRead, limit: u64) -> std::io::Result<Option<Blob>> {
    let mut header = String::new();
    if reader.read_line(&mut header)? == 0 {
        return Ok(None);
    }
    let parts: Vec<&str> = header.trim_end().split(' ').collect();
    let skip = |reader: &mut dyn BufRead, size: u64| -> std::io::Result<()> {
        std::io::copy(&mut reader.take(size + 1), &mut std::io::sink()).map(drop)
    };
    Ok(Some(match parts.as_slice() {
        [_, "blob", size] => {
            let size: u64 = size.parse().map_err(|_| bad_header(&header))?;
            if size > limit {
                skip(reader, size)?;
                Blob::TooLarge(size)
            } else {
                let mut buf = vec![0; size as usize + 1];
                reader.read_exact(&mut buf)?;
                buf.pop();
                Blob::Content(buf)
            }
        }
        [_, "missing"] => Blob::Missing,
        [_, _kind, size] => {
            let size: u64 = size.parse().map_err(|_| bad_header(&header))?;
            skip(reader, size)?;
            Blob::Missing
        }
        _ => return Err(bad_header(&header)),
    }))
}

impl BlobStream {
    /// Asks for `oids`; their blobs come after those asked for before.
    pub fn request(&mut self, oids: Vec<String>) -> Result<(), GitError> {
        if oids.is_empty() {
            return Ok(());
        }
        let n = oids.len();
        let sent = self.requests.as_ref().is_some_and(|r| r.send(oids).is_ok());
        if !sent {
            return Err(self.failure("git stopped reading requests".into()));
        }
        self.owed += n;
        Ok(())
    }

    /// Blobs asked for and not yet taken.
    pub fn owed(&self) -> usize {
        self.owed
    }

    /// The next blob asked for.
    pub fn next_blob(&mut self) -> Result<Blob, GitError> {
        if self.owed == 0 {
            return Err(GitError::Unexpected {
                command: "cat-file --batch".into(),
                detail: "a blob was taken that was not asked for".into(),
            });
        }
        loop {
            if let Some(blob) = self.ready.next() {
                self.owed -= 1;
                return Ok(blob);
            }
            match self.answers.recv() {
                Ok(Ok(chunk)) => self.ready = chunk.into_iter(),
                Ok(Err(e)) => return Err(self.failure(e.to_string())),
                Err(_) => return Err(self.failure(unexpected_eof().to_string())),
            }
        }
    }

    /// Ends the stream once every blob asked for was taken: git exits and must have exited
    /// well.
    pub fn finish(mut self) -> Result<(), GitError> {
        self.requests = None;
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        let status = child.wait().map_err(|e| spawn_error("cat-file", e))?;
        if !status.success() {
            let said = self.stderr.take().map(Drain::take).unwrap_or_default();
            return Err(GitError::Failed {
                command: "cat-file --batch".into(),
                message: stderr_summary(&said),
            });
        }
        Ok(())
    }

    /// What went wrong, with what git said: git is ended first.
    fn failure(&mut self, what: String) -> GitError {
        self.requests = None;
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let said = self.stderr.take().map(Drain::take).unwrap_or_default();
        GitError::Failed {
            command: "cat-file --batch".into(),
            message: format!("{what}; {}", stderr_summary(&said)),
        }
    }
}

impl Drop for BlobStream {
    fn drop(&mut self) {
        self.requests = None;
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
