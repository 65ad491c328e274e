//! The log: append-only segment files of framed, checksummed, hash-chained records. It is the
//! store's source of truth; everything else (the index) is rebuilt from it.
//!
//! A segment is a file `log/<first record number, 20 digits>.seg` holding frames back to
//! back. A frame is a 44-byte header and a body:
//!
//! ```text
//! 0..4    body length, u32 little-endian
//! 4..36   chain value after this record: SHA-256(previous chain ‖ SHA-256(body))
//! 36..40  CRC32C of bytes 0..36 (the header cannot lie about the length unnoticed)
//! 40..44  CRC32C of the body
//! 44..    body: one kind byte, then the payload
//! ```
//!
//! The chain before the first record is 32 zero bytes, so `(n, chain_n)` names the whole log.
//!
//! Invariants:
//! - Nothing here rewrites or deletes a byte that was acknowledged. The store truncates the
//!   log only through quarantine ([`Log::quarantine_from`]: a torn final frame, and what
//!   `fsck --repair` cannot use), which moves the bytes elsewhere instead of deleting them;
//!   [`Log::cut_torn_tail`] is for tests and tools that want the bytes gone.
//! - A frame is acknowledged only after the fsync of the segment it was written to
//!   ([`Appender::commit`]).
//! - Damage before the tail is never skipped: it is [`Damage`] naming segment and offset.
//! - A segment is a regular file, nothing else: an entry of `log/` named like one that is a
//!   FIFO, a directory, a device or a symbolic link is [`Damage`] naming it, found before it
//!   is opened (a FIFO is never opened, so no command waits on one), and `fsck --repair`
//!   moves it aside like other damage ([`Log::quarantine_from`]).

use sha2::{Digest, Sha256};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

pub const HEADER_LEN: usize = 44;
/// No record is larger: envelopes are at most 1 MiB, trust events far smaller.
pub const MAX_BODY_LEN: usize = 4 * 1024 * 1024;
/// A segment is closed once it holds this many bytes; the next append starts a new one.
pub const SEGMENT_TARGET_BYTES: u64 = 256 * 1024 * 1024;

pub type Chain = [u8; 32];
pub const GENESIS: Chain = [0u8; 32];

/// What a record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// A DSSE envelope in canonical (RFC 8785) form.
    Envelope = 1,
    /// A key became trusted: JSON `{keyid, role, name, public_key}`.
    KeyAdd = 2,
    /// A key was retired: JSON `{keyid}`.
    KeyRetire = 3,
    /// A root key was pinned: JSON `{keyid, name, publicKey}`.
    Pin = 4,
    /// A trust policy envelope, in canonical (RFC 8785) form.
    Policy = 5,
}

impl Kind {
    /// Whether it is one of the team's trust records (a pin, a policy), which the store keeps
    /// and finds again but whose meaning is the trust layer's.
    pub fn is_trust_record(self) -> bool {
        matches!(self, Kind::Pin | Kind::Policy)
    }

    fn from_byte(b: u8) -> Option<Kind> {
        match b {
            1 => Some(Kind::Envelope),
            2 => Some(Kind::KeyAdd),
            3 => Some(Kind::KeyRetire),
            4 => Some(Kind::Pin),
            5 => Some(Kind::Policy),
            _ => None,
        }
    }
}

/// Where a record sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Position {
    /// Record number: 0 for the first record of the log.
    pub n: u64,
    /// The segment's first record number (its file name).
    pub segment: u64,
    /// Byte offset of the frame in the segment.
    pub offset: u64,
}

/// The state after some prefix of the log: how many records, their chain, and where the next
/// frame goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Head {
    pub records: u64,
    pub chain: Chain,
    /// Segment the next frame is appended to (its first record number) and the offset there.
    pub segment: u64,
    pub end: u64,
}

impl Head {
    pub const EMPTY: Head = Head {
        records: 0,
        chain: GENESIS,
        segment: 0,
        end: 0,
    };
}

/// One record as read back.
#[derive(Debug, Clone)]
pub struct Record {
    pub pos: Position,
    pub kind: Kind,
    /// The payload (the body without its kind byte).
    pub payload: Vec<u8>,
    /// The chain value stored with (and verified for) this record.
    pub chain: Chain,
    /// Length of the whole frame in bytes.
    pub frame_len: u64,
}

/// Damage found in the log: where, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    pub segment: u64,
    pub offset: u64,
    pub reason: String,
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "log segment {} at byte {}: {}",
            segment_name(self.segment),
            self.offset,
            self.reason
        )
    }
}

/// How a scan ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tail {
    /// The log ends exactly after the last whole record.
    Clean,
    /// A final frame was never completed (a crash mid-append): `bytes` after the last whole
    /// record, at `offset` of `segment`.
    Torn {
        segment: u64,
        offset: u64,
        bytes: u64,
    },
    /// A frame is damaged (checksum, chain, kind or framing), before the tail or in it.
    Damaged(Damage),
}

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the log is damaged: {0}")]
    Damaged(Damage),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> LogError + '_ {
    move |source| LogError::Io {
        path: path.to_path_buf(),
        source,
    }
}

pub fn segment_name(first: u64) -> String {
    format!("{first:020}.seg")
}

/// What an entry of `log/` that is not a regular file is, for the message that names it.
fn kind_of(kind: std::fs::FileType) -> &'static str {
    if kind.is_dir() {
        "a directory"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "an entry of another kind"
    }
}

/// The damage an entry named like a segment is when it is not a regular file.
fn not_regular(segment: u64, what: &str) -> LogError {
    LogError::Damaged(Damage {
        segment,
        offset: 0,
        reason: format!("{what} is there, not a regular file"),
    })
}

/// A read-only open of a segment.
fn reading() -> OpenOptions {
    let mut o = OpenOptions::new();
    o.read(true);
    o
}

/// A write-only open of a segment that exists (to cut it).
fn cutting() -> OpenOptions {
    let mut o = OpenOptions::new();
    o.write(true);
    o
}

/// A frame body's checksum and digest: the body is the kind byte and then the payload, taken
/// in two parts so that neither writer nor reader has to join them in one buffer.
fn body_sums(kind_byte: u8, payload: &[u8]) -> (u32, [u8; 32]) {
    let crc = crc32c::crc32c_append(crc32c::crc32c(&[kind_byte]), payload);
    let mut digest = Sha256::new();
    digest.update([kind_byte]);
    digest.update(payload);
    (crc, digest.finalize().into())
}

fn chain_after(prev: &Chain, body_digest: [u8; 32]) -> Chain {
    let mut h = Sha256::new();
    h.update(prev);
    h.update(body_digest);
    h.finalize().into()
}

/// Encodes one frame whose chain value follows `prev`. The body is the kind byte and the
/// payload; it is hashed and checksummed in place, never copied twice.
pub fn encode_frame(prev: &Chain, kind: Kind, payload: &[u8], out: &mut Vec<u8>) -> Chain {
    let kind_byte = kind as u8;
    let body_len = payload.len() + 1;
    let (body_crc, body_digest) = body_sums(kind_byte, payload);
    let chain = chain_after(prev, body_digest);
    let start = out.len();
    out.reserve(HEADER_LEN + body_len);
    out.extend_from_slice(&(body_len as u32).to_le_bytes());
    out.extend_from_slice(&chain);
    let header_crc = crc32c::crc32c(&out[start..start + 36]);
    out.extend_from_slice(&header_crc.to_le_bytes());
    out.extend_from_slice(&body_crc.to_le_bytes());
    out.push(kind_byte);
    out.extend_from_slice(payload);
    chain
}

/// The log directory of a store.
#[derive(Debug, Clone)]
pub struct Log {
    dir: PathBuf,
}

/// What a decoded header says.
struct Header {
    body_len: usize,
    chain: Chain,
    body_crc: u32,
}

fn decode_header(h: &[u8; HEADER_LEN]) -> Result<Header, String> {
    let stored_crc = u32::from_le_bytes([h[36], h[37], h[38], h[39]]);
    if crc32c::crc32c(&h[..36]) != stored_crc {
        return Err("frame header checksum mismatch".into());
    }
    let body_len = u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize;
    if body_len == 0 || body_len > MAX_BODY_LEN + 1 {
        return Err(format!("frame length {body_len} is out of bounds"));
    }
    let mut chain = [0u8; 32];
    chain.copy_from_slice(&h[4..36]);
    Ok(Header {
        body_len,
        chain,
        body_crc: u32::from_le_bytes([h[40], h[41], h[42], h[43]]),
    })
}

impl Log {
    pub fn new(dir: PathBuf) -> Log {
        Log { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn segment_path(&self, first: u64) -> PathBuf {
        self.dir.join(segment_name(first))
    }

    /// Opens the segment `segment` with `options`, never waiting on it and never through a
    /// link: an entry that is not a regular file is damage naming it, found from its own
    /// metadata before it is opened (a FIFO would block an open for reading until a writer
    /// came, and one for writing until a reader did) and again on the descriptor. None when
    /// there is no such entry (and `options` does not create it). `O_NONBLOCK` changes
    /// nothing for a regular file's reads and writes.
    fn open_segment(&self, segment: u64, options: &OpenOptions) -> Result<Option<File>, LogError> {
        let path = self.segment_path(segment);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_file() => {}
            Ok(m) => return Err(not_regular(segment, kind_of(m.file_type()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(&path)(e)),
        }
        let mut options = options.clone();
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY);
        let file = match options.open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            // Put there since the look: a link (`O_NOFOLLOW`), or a FIFO without a reader.
            Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENXIO)) => {
                return Err(not_regular(segment, "another kind of file"))
            }
            Err(e) => return Err(io(&path)(e)),
        };
        let meta = file.metadata().map_err(io(&path))?;
        if !meta.is_file() {
            return Err(not_regular(segment, kind_of(meta.file_type())));
        }
        Ok(Some(file))
    }

    /// The segments present, by first record number, in order.
    pub fn segments(&self) -> Result<Vec<u64>, LogError> {
        let mut out = Vec::new();
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(io(&self.dir)(e)),
        };
        for entry in entries {
            let entry = entry.map_err(io(&self.dir))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if let Some(num) = name.strip_suffix(".seg") {
                if num.len() == 20 {
                    if let Ok(n) = num.parse::<u64>() {
                        out.push(n);
                    }
                }
            }
        }
        out.sort_unstable();
        Ok(out)
    }

    /// Size in bytes of a segment (0 when absent).
    pub fn segment_len(&self, first: u64) -> Result<u64, LogError> {
        let path = self.segment_path(first);
        match std::fs::metadata(&path) {
            Ok(m) => Ok(m.len()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(io(&path)(e)),
        }
    }

    /// Total bytes of every segment.
    pub fn total_bytes(&self) -> Result<u64, LogError> {
        let mut total = 0;
        for s in self.segments()? {
            total += self.segment_len(s)?;
        }
        Ok(total)
    }

    /// Reads and checks (checksums; the chain only against the stored value) the record at
    /// `pos`. Used for random access through the index.
    pub fn read_at(&self, pos: Position) -> Result<Record, LogError> {
        let path = self.segment_path(pos.segment);
        let damaged = |reason: String| {
            LogError::Damaged(Damage {
                segment: pos.segment,
                offset: pos.offset,
                reason,
            })
        };
        let Some(mut f) = self.open_segment(pos.segment, &reading())? else {
            return Err(damaged(
                "the segment holding the record the index points at is missing".into(),
            ));
        };
        f.seek(SeekFrom::Start(pos.offset)).map_err(io(&path))?;
        let mut h = [0u8; HEADER_LEN];
        read_full(&mut f, &mut h)
            .map_err(io(&path))?
            .then_some(())
            .ok_or_else(|| damaged("the record the index points at is missing".into()))?;
        let header = decode_header(&h).map_err(damaged)?;
        let mut body = vec![0u8; header.body_len];
        read_full(&mut f, &mut body)
            .map_err(io(&path))?
            .then_some(())
            .ok_or_else(|| damaged("the record the index points at is cut short".into()))?;
        if crc32c::crc32c(&body) != header.body_crc {
            return Err(damaged("record body checksum mismatch".into()));
        }
        let kind = Kind::from_byte(body[0])
            .ok_or_else(|| damaged(format!("unknown record kind {}", body[0])))?;
        body.remove(0);
        Ok(Record {
            pos,
            kind,
            payload: body,
            chain: header.chain,
            frame_len: (HEADER_LEN + header.body_len) as u64,
        })
    }

    /// Reads every record after `from` (a head the caller trusts: GENESIS for the whole log),
    /// checking checksums and the chain, and calls `each` for each. Returns the head after
    /// the last good record and how the log ends. `each` may stop the scan by returning false.
    pub fn scan(
        &self,
        from: Head,
        each: impl FnMut(Record) -> Result<bool, LogError>,
    ) -> Result<(Head, Tail), LogError> {
        self.scan_reusing(from, Vec::new, each)
    }

    /// As [`Log::scan`], reading each payload into a buffer `spare` gives (emptied first): a
    /// caller that hands the payloads it is done with back through `spare` reads the whole
    /// log with a bounded set of buffers instead of allocating one per record.
    pub fn scan_reusing(
        &self,
        from: Head,
        mut spare: impl FnMut() -> Vec<u8>,
        mut each: impl FnMut(Record) -> Result<bool, LogError>,
    ) -> Result<(Head, Tail), LogError> {
        let segments = self.segments()?;
        let mut head = from;
        // Segments at or after the head's segment, in order; the head's segment must exist
        // unless the log is empty.
        let todo: Vec<u64> = segments
            .iter()
            .copied()
            .filter(|&s| s >= from.segment)
            .collect();
        if todo.first() != Some(&from.segment) {
            if from.records == 0 && from.end == 0 {
                // An empty log may have no segment yet.
                if let Some(&first) = todo.first() {
                    if first != 0 {
                        return Ok((
                            head,
                            Tail::Damaged(Damage {
                                segment: first,
                                offset: 0,
                                reason: "the log does not start at record 0".into(),
                            }),
                        ));
                    }
                }
            } else {
                return Ok((
                    head,
                    Tail::Damaged(Damage {
                        segment: from.segment,
                        offset: from.end,
                        reason: "segment is missing".into(),
                    }),
                ));
            }
        }
        let mut offset = from.end;
        let mut i = 0;
        while i < todo.len() {
            let seg = todo[i];
            if seg != head.segment {
                // Moving to the next segment: it must start exactly at the next record.
                if seg != head.records {
                    return Ok((
                        head,
                        Tail::Damaged(Damage {
                            segment: seg,
                            offset: 0,
                            reason: format!(
                                "segment starts at record {seg}, but {} records precede it",
                                head.records
                            ),
                        }),
                    ));
                }
                head.segment = seg;
                offset = 0;
                head.end = 0;
            }
            let path = self.segment_path(seg);
            let mut f = match self.open_segment(seg, &reading()) {
                Ok(Some(f)) => f,
                Ok(None) => return Err(io(&path)(std::io::ErrorKind::NotFound.into())),
                Err(LogError::Damaged(d)) => return Ok((head, Tail::Damaged(d))),
                Err(e) => return Err(e),
            };
            let len = f.metadata().map_err(io(&path))?.len();
            if offset > len {
                return Ok((
                    head,
                    Tail::Damaged(Damage {
                        segment: seg,
                        offset: len,
                        reason: format!(
                            "segment is shorter ({len} bytes) than what was indexed ({offset})"
                        ),
                    }),
                ));
            }
            f.seek(SeekFrom::Start(offset)).map_err(io(&path))?;
            let mut reader = std::io::BufReader::with_capacity(1 << 20, f);
            let last_segment = i + 1 == todo.len();
            loop {
                let remaining = len - offset;
                if remaining == 0 {
                    break;
                }
                let torn = Tail::Torn {
                    segment: seg,
                    offset,
                    bytes: remaining,
                };
                let damaged = |reason: String| {
                    Tail::Damaged(Damage {
                        segment: seg,
                        offset,
                        reason,
                    })
                };
                if remaining < HEADER_LEN as u64 {
                    return Ok((
                        head,
                        if last_segment {
                            torn
                        } else {
                            damaged("segment ends inside a frame header".into())
                        },
                    ));
                }
                let mut h = [0u8; HEADER_LEN];
                reader.read_exact(&mut h).map_err(io(&path))?;
                let header = match decode_header(&h) {
                    Ok(hd) => hd,
                    Err(reason) => {
                        // Zeros from a crash that extended the file but never wrote it are a
                        // torn tail; anything else is damage.
                        if last_segment && self.all_zero_from(seg, offset)? {
                            return Ok((head, torn));
                        }
                        return Ok((head, damaged(reason)));
                    }
                };
                let frame_len = (HEADER_LEN + header.body_len) as u64;
                if remaining < frame_len {
                    return Ok((
                        head,
                        if last_segment {
                            torn
                        } else {
                            damaged("segment ends inside a frame".into())
                        },
                    ));
                }
                // The kind byte apart from the payload: the payload is read straight into a
                // buffer of at least its size, never zeroed first nor shifted after.
                let mut kind_byte = [0u8; 1];
                reader.read_exact(&mut kind_byte).map_err(io(&path))?;
                let payload_len = header.body_len - 1;
                // A spare buffer is used when it fits this payload without being more than
                // twice its size: buffers kept from large records would otherwise stay large.
                let mut payload = spare();
                if payload.capacity() < payload_len || payload.capacity() / 2 > payload_len {
                    payload = Vec::with_capacity(payload_len);
                }
                payload.clear();
                let read = (&mut reader)
                    .take(payload_len as u64)
                    .read_to_end(&mut payload)
                    .map_err(io(&path))?;
                if read != payload_len {
                    return Err(io(&path)(std::io::ErrorKind::UnexpectedEof.into()));
                }
                let (body_crc, body_digest) = body_sums(kind_byte[0], &payload);
                if body_crc != header.body_crc {
                    return Ok((head, damaged("record body checksum mismatch".into())));
                }
                if chain_after(&head.chain, body_digest) != header.chain {
                    return Ok((
                        head,
                        damaged("chain value mismatch: a record before this one was changed, removed or reordered, or this one was".into()),
                    ));
                }
                let Some(kind) = Kind::from_byte(kind_byte[0]) else {
                    return Ok((
                        head,
                        damaged(format!("unknown record kind {}", kind_byte[0])),
                    ));
                };
                let record = Record {
                    pos: Position {
                        n: head.records,
                        segment: seg,
                        offset,
                    },
                    kind,
                    payload,
                    chain: header.chain,
                    frame_len,
                };
                offset += frame_len;
                head.records += 1;
                head.chain = header.chain;
                head.end = offset;
                if !each(record)? {
                    return Ok((head, Tail::Clean));
                }
            }
            i += 1;
        }
        Ok((head, Tail::Clean))
    }

    /// Cuts a torn final frame off (it was never acknowledged).
    pub fn cut_torn_tail(&self, segment: u64, offset: u64) -> Result<(), LogError> {
        let path = self.segment_path(segment);
        let f = self
            .open_segment(segment, &cutting())?
            .ok_or_else(|| io(&path)(std::io::ErrorKind::NotFound.into()))?;
        f.set_len(offset).map_err(io(&path))?;
        f.sync_all().map_err(io(&path))
    }

    /// Moves everything from `segment` at `offset` on into `dest` (nothing is deleted): the
    /// bytes of that segment from `offset`, and every later segment whole. The log then ends
    /// at `offset`.
    pub fn quarantine_from(
        &self,
        segment: u64,
        offset: u64,
        dest: &Path,
    ) -> Result<Vec<String>, LogError> {
        std::fs::create_dir_all(dest).map_err(io(dest))?;
        let mut moved = Vec::new();
        let path = self.segment_path(segment);
        // Whatever the entry is (a FIFO, a directory or a link is moved as it is, never
        // opened or followed).
        let present = std::fs::symlink_metadata(&path).is_ok();
        if offset == 0 && present {
            // The whole segment goes: moved, so that no empty (or misnumbered) file of it
            // stays behind to break the log again.
            let to = dest.join(segment_name(segment));
            if std::fs::symlink_metadata(&to).is_ok() {
                return Err(io(&to)(std::io::ErrorKind::AlreadyExists.into()));
            }
            std::fs::rename(&path, &to).map_err(io(&path))?;
            moved.push(segment_name(segment));
        } else if present {
            let mut f = self
                .open_segment(segment, &reading())?
                .ok_or_else(|| io(&path)(std::io::ErrorKind::NotFound.into()))?;
            f.seek(SeekFrom::Start(offset)).map_err(io(&path))?;
            let mut rest = Vec::new();
            f.read_to_end(&mut rest).map_err(io(&path))?;
            let name = format!("{}.from-{offset}", segment_name(segment));
            let out = dest.join(&name);
            if std::fs::symlink_metadata(&out).is_ok() {
                // Never written over: what is there was moved aside before.
                return Err(io(&out)(std::io::ErrorKind::AlreadyExists.into()));
            }
            crate::atomic_file::write(&out, &rest).map_err(io(&out))?;
            moved.push(name);
            let w = self
                .open_segment(segment, &cutting())?
                .ok_or_else(|| io(&path)(std::io::ErrorKind::NotFound.into()))?;
            w.set_len(offset).map_err(io(&path))?;
            w.sync_all().map_err(io(&path))?;
        }
        for s in self.segments()?.into_iter().filter(|&s| s > segment) {
            let from = self.segment_path(s);
            let to = dest.join(segment_name(s));
            if std::fs::symlink_metadata(&to).is_ok() {
                return Err(io(&to)(std::io::ErrorKind::AlreadyExists.into()));
            }
            std::fs::rename(&from, &to).map_err(io(&from))?;
            moved.push(segment_name(s));
        }
        sync_dir(&self.dir)?;
        Ok(moved)
    }
}

impl Log {
    /// Whether segment `segment` holds only zero bytes from `offset` to its end.
    fn all_zero_from(&self, segment: u64, offset: u64) -> Result<bool, LogError> {
        let path = self.segment_path(segment);
        let mut f = self
            .open_segment(segment, &reading())?
            .ok_or_else(|| io(&path)(std::io::ErrorKind::NotFound.into()))?;
        f.seek(SeekFrom::Start(offset)).map_err(io(&path))?;
        let mut buf = [0u8; 8192];
        loop {
            let n = f.read(&mut buf).map_err(io(&path))?;
            if n == 0 {
                return Ok(true);
            }
            if buf[..n].iter().any(|&b| b != 0) {
                return Ok(false);
            }
        }
    }
}

/// Reads exactly `buf.len()` bytes; false if the file ended first.
fn read_full(f: &mut File, buf: &mut [u8]) -> std::io::Result<bool> {
    let mut read = 0;
    while read < buf.len() {
        match f.read(&mut buf[read..]) {
            Ok(0) => return Ok(false),
            Ok(n) => read += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

fn sync_dir(dir: &Path) -> Result<(), LogError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))
}

/// Where a staged record will sit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placed {
    pub pos: Position,
    pub chain: Chain,
    pub frame_len: u64,
}

/// Appends groups of records after a head; a group is durable when [`Appender::commit`]
/// returns. Only the holder of the store's writer lock makes one.
pub struct Appender {
    log: Log,
    head: Head,
    pending: Vec<u8>,
    pending_positions: Vec<Position>,
    pending_head: Head,
}

impl Appender {
    pub fn new(log: Log, head: Head) -> Appender {
        Appender::with_buffer(log, head, Vec::new())
    }

    /// An appender that writes its frames into `buffer` (emptied first), reusing its memory.
    pub fn with_buffer(log: Log, head: Head, mut buffer: Vec<u8>) -> Appender {
        buffer.clear();
        Appender {
            log,
            head,
            pending: buffer,
            pending_positions: Vec::new(),
            pending_head: head,
        }
    }

    /// The frame buffer back, emptied, for another appender.
    pub fn into_buffer(self) -> Vec<u8> {
        let mut buffer = self.pending;
        buffer.clear();
        buffer
    }

    /// The head after the last commit.
    #[cfg(test)]
    fn head(&self) -> Head {
        self.head
    }

    /// Makes room for records of `payload_bytes` in all, so that staging a large group
    /// writes into one buffer instead of growing (and copying) it.
    pub fn reserve(&mut self, records: usize, payload_bytes: usize) {
        self.pending
            .reserve(payload_bytes + records * (HEADER_LEN + 1));
        self.pending_positions.reserve(records);
    }

    /// Stages one record; returns where it will sit, its chain value and its frame length.
    pub fn stage(&mut self, kind: Kind, payload: &[u8]) -> Placed {
        // A new segment starts when the current one is full; a group never spans two.
        if self.pending.is_empty()
            && self.pending_head.end >= SEGMENT_TARGET_BYTES
            && self.pending_head.records > self.pending_head.segment
        {
            self.pending_head.segment = self.pending_head.records;
            self.pending_head.end = 0;
        }
        let pos = Position {
            n: self.pending_head.records,
            segment: self.pending_head.segment,
            offset: self.pending_head.end,
        };
        let before = self.pending.len();
        let chain = encode_frame(&self.pending_head.chain, kind, payload, &mut self.pending);
        self.pending_head.records += 1;
        self.pending_head.chain = chain;
        let frame_len = (self.pending.len() - before) as u64;
        self.pending_head.end += frame_len;
        self.pending_positions.push(pos);
        Placed {
            pos,
            chain,
            frame_len,
        }
    }

    /// Writes the staged group and fsyncs it. Only after this returns are its records
    /// acknowledged. On error nothing of the group counts (a partial write is a torn tail,
    /// cut by the next writer).
    pub fn commit(&mut self) -> Result<Vec<Position>, LogError> {
        if self.pending.is_empty() {
            return Ok(Vec::new());
        }
        std::fs::create_dir_all(&self.log.dir).map_err(io(&self.log.dir))?;
        let seg = self.pending_head.segment;
        let path = self.log.segment_path(seg);
        let new_file = std::fs::symlink_metadata(&path).is_err();
        let mut appending = OpenOptions::new();
        appending.create(true).append(true);
        let mut f = self
            .log
            .open_segment(seg, &appending)?
            .ok_or_else(|| io(&path)(std::io::ErrorKind::NotFound.into()))?;
        // The group starts where the head says; a file longer than that holds a torn tail
        // the caller should have cut.
        let len = f.metadata().map_err(io(&path))?.len();
        let start = self.pending_positions[0].offset;
        if len != start {
            return Err(LogError::Damaged(Damage {
                segment: seg,
                offset: len,
                reason: format!("segment is {len} bytes where {start} were expected"),
            }));
        }
        f.write_all(&self.pending).map_err(io(&path))?;
        f.sync_data().map_err(io(&path))?;
        if new_file {
            sync_dir(&self.log.dir)?;
        }
        self.pending.clear();
        self.head = self.pending_head;
        Ok(std::mem::take(&mut self.pending_positions))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_records(dir: &Path, n: usize) -> Head {
        let mut a = Appender::new(Log::new(dir.to_path_buf()), Head::EMPTY);
        for i in 0..n {
            a.stage(Kind::Envelope, format!("record {i}").as_bytes());
        }
        a.commit().unwrap();
        a.head()
    }

    /// A spare buffer that fits a payload is read into; one too small, or more than twice the
    /// payload's size, is dropped for one of the payload's size; the records read are the same.
    #[test]
    fn a_scan_reuses_the_spare_buffers_that_fit() {
        let d = tempfile::tempdir().unwrap();
        write_records(d.path(), 3);
        let log = Log::new(d.path().to_path_buf());
        // "record i" is 8 bytes: 8 fits, 4 is too small, 1,000 is too large.
        let mut spares = vec![
            Vec::with_capacity(8),
            Vec::with_capacity(1000),
            vec![0u8; 4],
        ];
        let fits = spares[0].as_ptr();
        let mut read = Vec::new();
        log.scan_reusing(
            Head::EMPTY,
            || spares.pop().unwrap_or_default(),
            |r| {
                read.push((r.payload.capacity(), r.payload.as_ptr(), r.payload));
                Ok(true)
            },
        )
        .unwrap();
        let payloads: Vec<&[u8]> = read.iter().map(|(_, _, p)| p.as_slice()).collect();
        assert_eq!(payloads, [&b"record 0"[..], b"record 1", b"record 2"]);
        assert!(read
            .iter()
            .all(|(cap, _, p)| *cap >= p.len() && *cap <= 2 * p.len()));
        assert_eq!(read[2].1, fits);
    }

    #[test]
    fn round_trip_and_chain() {
        let d = tempfile::tempdir().unwrap();
        let head = write_records(d.path(), 5);
        assert_eq!(head.records, 5);
        let log = Log::new(d.path().to_path_buf());
        let mut seen = Vec::new();
        let (end, tail) = log
            .scan(Head::EMPTY, |r| {
                seen.push(String::from_utf8(r.payload).unwrap());
                Ok(true)
            })
            .unwrap();
        assert_eq!(tail, Tail::Clean);
        assert_eq!(end, head);
        assert_eq!(seen[4], "record 4");
        // Scanning from a head in the middle reads only the rest, with the same chain.
        let mut count = 0;
        let (mid, _) = log
            .scan(Head::EMPTY, |_| {
                count += 1;
                Ok(count < 2)
            })
            .unwrap();
        assert_eq!(mid.records, 2);
        let mut rest = 0;
        let (end2, _) = log
            .scan(mid, |_| {
                rest += 1;
                Ok(true)
            })
            .unwrap();
        assert_eq!(rest, 3);
        assert_eq!(end2, head);
    }

    #[test]
    fn torn_tail_is_reported_not_damage() {
        let d = tempfile::tempdir().unwrap();
        let head = write_records(d.path(), 3);
        let log = Log::new(d.path().to_path_buf());
        let path = log.segment_path(0);
        let len = std::fs::metadata(&path).unwrap().len();
        // Cut the last record in half.
        let f = OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(len - 5).unwrap();
        let (end, tail) = log.scan(Head::EMPTY, |_| Ok(true)).unwrap();
        assert_eq!(end.records, 2);
        assert!(matches!(tail, Tail::Torn { .. }), "{tail:?}");
        let Tail::Torn {
            segment, offset, ..
        } = tail
        else {
            unreachable!()
        };
        log.cut_torn_tail(segment, offset).unwrap();
        let (_, tail) = log.scan(Head::EMPTY, |_| Ok(true)).unwrap();
        assert_eq!(tail, Tail::Clean);
        assert!(head.records == 3);
    }

    #[test]
    fn every_flipped_byte_is_damage_or_torn_never_silent() {
        let d = tempfile::tempdir().unwrap();
        write_records(d.path(), 4);
        let log = Log::new(d.path().to_path_buf());
        let path = log.segment_path(0);
        let original = std::fs::read(&path).unwrap();
        for i in 0..original.len() {
            let mut bytes = original.clone();
            bytes[i] ^= 0x10;
            std::fs::write(&path, &bytes).unwrap();
            let mut n = 0;
            let (_, tail) = log
                .scan(Head::EMPTY, |_| {
                    n += 1;
                    Ok(true)
                })
                .unwrap();
            assert!(
                matches!(tail, Tail::Damaged(_)),
                "flip at byte {i} gave {tail:?} after {n} records"
            );
        }
    }

    #[test]
    fn removed_or_reordered_records_break_the_chain() {
        let d = tempfile::tempdir().unwrap();
        write_records(d.path(), 3);
        let log = Log::new(d.path().to_path_buf());
        let path = log.segment_path(0);
        let bytes = std::fs::read(&path).unwrap();
        let mut frames = Vec::new();
        log.scan(Head::EMPTY, |r| {
            frames.push((r.pos.offset as usize, r.frame_len as usize));
            Ok(true)
        })
        .unwrap();
        let frame = |i: usize| &bytes[frames[i].0..frames[i].0 + frames[i].1];
        // Drop the middle record.
        std::fs::write(&path, [frame(0), frame(2)].concat()).unwrap();
        let (_, tail) = log.scan(Head::EMPTY, |_| Ok(true)).unwrap();
        assert!(matches!(tail, Tail::Damaged(_)));
        // Swap the last two.
        std::fs::write(&path, [frame(0), frame(2), frame(1)].concat()).unwrap();
        let (_, tail) = log.scan(Head::EMPTY, |_| Ok(true)).unwrap();
        assert!(matches!(tail, Tail::Damaged(_)));
    }
}
