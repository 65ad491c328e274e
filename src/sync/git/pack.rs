//! Writing one commit as a pack of our own: the blobs deflated on every core as they come,
//! the trees the commit changes built at the end from the files' paths, sorted, and the
//! parent's trees on the way to them (read through one `cat-file --batch`), and the pack's
//! index written beside it, so no git process has to read the objects again. The objects
//! are the ones `fast-import` would write for the same files on the same parent (same
//! blobs, same trees, same commit); only how they are packed differs. The pack and its index are written under temporary names and renamed into place,
//! the index last: dropped unfinished or failed, nothing is left but a temporary file.

use super::process::stderr_summary;
use super::{GitError, ObjectFormat, Repo};
use crate::sync::layout;
use rayon::prelude::*;
use sha1::Digest as _;
use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::thread::JoinHandle;

/// Files deflated together on every core.
const BATCH: usize = 1024;
/// Objects of a batch one core deflates with one compressor, at least.
const PIECE: usize = 64;
/// The mode of a folder in a tree, as git writes it.
const TREE_MODE: &[u8] = b"40000";
/// The mode of the files a push writes.
const FILE_MODE: &[u8] = b"100644";
/// zlib's level for the objects: its fastest. The objects travel to the remote as packed
/// here, so this only trades the pack's size for the time to write it.
const LEVEL: u32 = 1;

const OBJ_COMMIT: u8 = 1;
const OBJ_TREE: u8 = 2;
const OBJ_BLOB: u8 = 3;

impl Repo {
    /// Starts writing one commit as a pack.
    pub fn pack_write(&self) -> Result<PackWrite, GitError> {
        let dir = self.dir.join("objects").join("pack");
        let tmp = dir.join(format!(
            "tmp_elench_{}_{}.pack",
            std::process::id(),
            super::unique_ref("pack").rsplit('-').next().unwrap_or("0")
        ));
        // Read back at the end for the checksum.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| io_failure(&tmp, e))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        // The count is not known yet: it is written over at the end.
        out.write_all(b"PACK\0\0\0\x02\0\0\0\0")
            .map_err(|e| io_failure(&tmp, e))?;
        Ok(PackWrite {
            repo: self.clone(),
            tmp: Some(tmp),
            packer: Some(Packer::start(out)),
            seen: HashSet::new(),
            batch: Vec::new(),
            placed: Vec::new(),
            parent: None,
            reader: None,
            started: false,
        })
    }
}

/// An object id, SHA-1's padded with zeros (kept inline: a push may hold millions).
type Oid = [u8; 32];

/// An object written to the pack: its id, where its entry starts, the CRC-32 of the entry.
struct Packed {
    oid: Oid,
    offset: u64,
    crc: u32,
}

/// A file the commit adds: its whole path, its blob, and when it was added (of two
/// entries that cannot both stand, a file and a folder of one name, the later wins).
/// Kept this small because a first push of a large log holds one per envelope until the
/// end: about 200 bytes with the path, where a tree of maps built as the files came took
/// about a kilobyte.
struct Placed {
    path: Box<[u8]>,
    oid: Oid,
    seq: u32,
}

/// A tree's entries by name: mode and id.
type Entries = BTreeMap<Box<[u8]>, (Box<[u8]>, Oid)>;

/// Objects for the pack: id, type, content.
type Batch = Vec<(Oid, u8, Vec<u8>)>;

/// What the packing thread wrote: the file (the count and checksum still to come) and each
/// object's place in it.
struct Written {
    file: File,
    objects: Vec<Packed>,
}

/// A thread of its own that deflates each batch of objects on every core and appends them
/// to the pack, while the caller reads and hashes the next ones.
struct Packer {
    batches: Option<SyncSender<Batch>>,
    thread: Option<JoinHandle<std::io::Result<Written>>>,
}

impl Packer {
    fn start(mut out: BufWriter<File>) -> Packer {
        let (batches, received) = sync_channel::<Batch>(2);
        let thread = std::thread::spawn(move || {
            let mut offset = 12u64;
            let mut objects = Vec::new();
            for batch in received {
                // A compressor is a few hundred KiB of tables: one is made for each piece of
                // the batch a core takes and reset for each object, not made (and zeroed)
                // again for each of a push's many small objects.
                let entries: Vec<Vec<u8>> = batch
                    .par_iter()
                    .with_min_len(PIECE)
                    .map_init(
                        || flate2::Compress::new(flate2::Compression::new(LEVEL), true),
                        |z, (_, kind, body)| match *kind {
                            OBJ_BLOB => entry(z, *kind, body),
                            _ => Ok(stored(*kind, body)),
                        },
                    )
                    .collect::<std::io::Result<_>>()?;
                for ((oid, _, _), e) in batch.iter().zip(entries) {
                    out.write_all(&e)?;
                    objects.push(Packed {
                        oid: *oid,
                        offset,
                        crc: crc32fast::hash(&e),
                    });
                    offset += e.len() as u64;
                }
            }
            let file = out.into_inner().map_err(|e| e.into_error())?;
            Ok(Written { file, objects })
        });
        Packer {
            batches: Some(batches),
            thread: Some(thread),
        }
    }

    /// Hands a batch over; false when the thread stopped (`end` says why).
    fn send(&mut self, batch: Batch) -> bool {
        self.batches.as_ref().is_some_and(|b| b.send(batch).is_ok())
    }

    /// Waits for the thread to write everything handed over.
    fn end(&mut self) -> std::io::Result<Written> {
        self.batches = None;
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            _ => Err(std::io::Error::other("the packing thread stopped")),
        }
    }
}

/// One commit being written as a pack. Dropping it unfinished removes the pack begun.
pub struct PackWrite {
    repo: Repo,
    tmp: Option<PathBuf>,
    packer: Option<Packer>,
    /// Objects already in the pack (or on their way).
    seen: HashSet<Oid>,
    /// Objects not handed to the packer yet.
    batch: Batch,
    /// The files added, in the order they came.
    placed: Vec<Placed>,
    /// The parent commit and its root tree, once read.
    parent: Option<(String, Oid)>,
    /// `cat-file --batch`, started the first time a tree of the parent is read.
    reader: Option<(Child, ChildStdin, BufReader<ChildStdout>)>,
    started: bool,
}

impl PackWrite {
    /// Opens the commit on top of `parent` (or a root commit).
    pub fn begin(&mut self, parent: Option<&str>) -> Result<(), GitError> {
        if let Some(p) = parent {
            let body = self.read_object(p.as_bytes(), "commit")?;
            let tree = body
                .strip_prefix(b"tree ")
                .and_then(|r| r.split(|b| *b == b'\n').next())
                .and_then(|hex| hex::decode(hex).ok())
                .filter(|t| t.len() == self.repo.format.id_bytes())
                .ok_or_else(|| unexpected(format!("commit {p} names no tree")))?;
            let mut oid = [0; 32];
            oid[..tree.len()].copy_from_slice(&tree);
            self.parent = Some((p.to_owned(), oid));
        }
        self.started = true;
        Ok(())
    }

    /// Adds one file to the commit's tree (on top of the parent's tree): whatever stands at
    /// its path, or as a file where a folder on the way should be, is replaced.
    pub fn add(&mut self, path: &str, bytes: &[u8]) -> Result<(), GitError> {
        if path.split('/').any(str::is_empty) {
            return Err(unexpected(format!("{path:?} is not a file's path")));
        }
        let oid = object_id(self.repo.format, "blob", bytes);
        let seq = u32::try_from(self.placed.len())
            .map_err(|_| unexpected("more files than one commit holds".into()))?;
        self.placed.push(Placed {
            path: path.as_bytes().into(),
            oid,
            seq,
        });
        self.pack(oid, OBJ_BLOB, bytes.to_vec())
    }

    /// How many files were added.
    pub fn files(&self) -> usize {
        self.placed.len()
    }

    /// Ends the commit: writes the trees it changes and the commit, the pack's index, and
    /// moves both into place. Returns the new commit's id.
    pub fn finish(mut self) -> Result<String, GitError> {
        if !self.started {
            return Err(unexpected("no commit was begun".into()));
        }
        let mut placed = std::mem::take(&mut self.placed);
        // Name by name, so that a folder's files lie together ("a/b" before "a.b"); the sort
        // is stable, so the same path added twice keeps its order.
        placed.sort_by(|a, b| components(&a.path).cmp(components(&b.path)));
        let below: Vec<&Placed> = placed.iter().collect();
        let root = self.parent.as_ref().map(|(_, tree)| *tree);
        let tree = self.write_tree(root, &below, 0)?;
        // What a large push holds per file is let go before the index is built.
        drop(below);
        drop(placed);
        let format = self.repo.format;
        let width = format.id_bytes();
        let mut body = format!("tree {}\n", hex::encode(&tree[..width]));
        if let Some((p, _)) = &self.parent {
            body.push_str(&format!("parent {p}\n"));
        }
        body.push_str(&format!(
            "author {id}\ncommitter {id}\n\n{msg}",
            id = layout::IDENTITY,
            msg = layout::MESSAGE
        ));
        let commit = object_id(format, "commit", body.as_bytes());
        self.pack(commit, OBJ_COMMIT, body.into_bytes())?;
        if let Some((mut child, stdin, _)) = self.reader.take() {
            drop(stdin);
            let _ = child.wait();
        }
        self.send()?;
        let written = match self.packer.take().map(|mut p| p.end()) {
            Some(Ok(w)) => w,
            Some(Err(e)) => return Err(self.packing_failure(e)),
            None => return Err(unexpected("the pack is closed".into())),
        };
        self.seal(written)?;
        Ok(hex::encode(&commit[..width]))
    }

    /// Queues an object for the pack (once), handing a full batch to the packer.
    fn pack(&mut self, oid: Oid, kind: u8, body: Vec<u8>) -> Result<(), GitError> {
        if !self.seen.insert(oid) {
            return Ok(());
        }
        self.batch.push((oid, kind, body));
        if self.batch.len() >= BATCH {
            self.send()?;
        }
        Ok(())
    }

    fn send(&mut self) -> Result<(), GitError> {
        let batch = std::mem::take(&mut self.batch);
        if batch.is_empty() {
            return Ok(());
        }
        let sent = self.packer.as_mut().is_some_and(|p| p.send(batch));
        if sent {
            return Ok(());
        }
        let e = match self.packer.take().map(|mut p| p.end()) {
            Some(Err(e)) => e,
            _ => std::io::Error::other("the packing thread stopped"),
        };
        Err(self.packing_failure(e))
    }

    fn packing_failure(&self, e: std::io::Error) -> GitError {
        let path = self.tmp.clone().unwrap_or_default();
        io_failure(&path, e)
    }

    /// Writes the tree of a folder: its parent's version (`base`, none for a new folder)
    /// with the files `below` it put in (sorted name by name; the folder's own path is their
    /// first `skip` bytes), and the folders they change written first. Returns its id.
    fn write_tree(
        &mut self,
        base: Option<Oid>,
        below: &[&Placed],
        skip: usize,
    ) -> Result<Oid, GitError> {
        let mut entries: Entries = match base {
            Some(oid) => self.read_tree(&oid)?,
            None => BTreeMap::new(),
        };
        let mut start = 0;
        while start < below.len() {
            let name = first_name(&below[start].path[skip..]);
            let end = start
                + below[start..]
                    .iter()
                    .take_while(|f| first_name(&f.path[skip..]) == name)
                    .count();
            let group = &below[start..end];
            start = end;
            // The last file put at this very name, if any, replaced whatever stood there; only
            // what went below the name after it counts, in a folder begun anew.
            let at_name = |f: &&&Placed| f.path.len() == skip + name.len();
            let file = group.iter().filter(at_name).max_by_key(|f| f.seq);
            // Usually no file stands at a folder's name, and the group is the folder's files.
            let filtered: Vec<&Placed>;
            let inside = match file {
                None => group,
                Some(last) => {
                    filtered = group
                        .iter()
                        .filter(|f| !at_name(f) && f.seq > last.seq)
                        .copied()
                        .collect();
                    &filtered[..]
                }
            };
            let entry = if inside.is_empty() {
                match file {
                    Some(f) => (FILE_MODE.into(), f.oid),
                    None => continue,
                }
            } else {
                // A folder of the parent is read only when a file goes below it; a file where
                // the folder should be is replaced by a new folder.
                let base = match (file, entries.get(name)) {
                    (None, Some((mode, oid))) if &**mode == TREE_MODE => Some(*oid),
                    _ => None,
                };
                let skip = skip + name.len() + 1;
                (TREE_MODE.into(), self.write_tree(base, inside, skip)?)
            };
            entries.insert(name.into(), entry);
        }
        let width = self.repo.format.id_bytes();
        let mut rows: Vec<_> = entries.into_iter().collect();
        // git orders a tree's entries by name, a folder's name read with a '/' after it.
        rows.sort_by_cached_key(|(name, (mode, _))| {
            let mut k = name.to_vec();
            if &**mode == TREE_MODE {
                k.push(b'/');
            }
            k
        });
        let mut body = Vec::new();
        for (name, (mode, oid)) in &rows {
            body.extend_from_slice(mode);
            body.push(b' ');
            body.extend_from_slice(name);
            body.push(0);
            body.extend_from_slice(&oid[..width]);
        }
        let oid = object_id(self.repo.format, "tree", &body);
        self.pack(oid, OBJ_TREE, body)?;
        Ok(oid)
    }

    /// Writes the count and the checksum, then the index, and renames both into place.
    fn seal(&mut self, written: Written) -> Result<(), GitError> {
        let format = self.repo.format;
        let Some(tmp) = self.tmp.clone() else {
            return Err(unexpected("the pack is closed".into()));
        };
        let fail = |e: std::io::Error| io_failure(&tmp, e);
        let Written {
            mut file,
            mut objects,
        } = written;
        let count = u32::try_from(objects.len())
            .map_err(|_| unexpected("more objects than a pack holds".into()))?;
        file.seek(SeekFrom::Start(8)).map_err(fail)?;
        file.write_all(&count.to_be_bytes()).map_err(fail)?;
        file.seek(SeekFrom::Start(0)).map_err(fail)?;
        let mut hasher = Hasher::new(format);
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = file.read(&mut buf).map_err(fail)?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
        }
        let checksum = hasher.finish();
        file.write_all(&checksum).map_err(fail)?;
        file.sync_all().map_err(fail)?;
        drop(file);

        objects.sort_unstable_by_key(|o| o.oid);
        let mut idx = Vec::with_capacity(8 + 1024 + objects.len() * 40);
        idx.extend_from_slice(b"\xfftOc\0\0\0\x02");
        let mut fanout = [0u32; 256];
        for o in &objects {
            fanout[usize::from(o.oid[0])] += 1;
        }
        let mut total = 0u32;
        for f in fanout {
            total += f;
            idx.extend_from_slice(&total.to_be_bytes());
        }
        let width = format.id_bytes();
        for o in &objects {
            idx.extend_from_slice(&o.oid[..width]);
        }
        for o in &objects {
            idx.extend_from_slice(&o.crc.to_be_bytes());
        }
        let mut large = Vec::new();
        for o in &objects {
            let small = match u32::try_from(o.offset) {
                Ok(v) if v < 0x8000_0000 => v,
                _ => {
                    large.push(o.offset);
                    0x8000_0000 | (large.len() as u32 - 1)
                }
            };
            idx.extend_from_slice(&small.to_be_bytes());
        }
        for l in large {
            idx.extend_from_slice(&l.to_be_bytes());
        }
        idx.extend_from_slice(&checksum);
        let mut hasher = Hasher::new(format);
        hasher.update(&idx);
        idx.extend_from_slice(&hasher.finish());

        let dir = self.repo.dir.join("objects").join("pack");
        let name = format!("pack-{}", hex::encode(&checksum));
        let tmp_idx = tmp.with_extension("idx");
        let written = File::create(&tmp_idx)
            .and_then(|mut f| f.write_all(&idx).and_then(|_| f.sync_all()))
            .and_then(|_| std::fs::rename(&tmp, dir.join(format!("{name}.pack"))))
            .and_then(|_| std::fs::rename(&tmp_idx, dir.join(format!("{name}.idx"))));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp_idx);
            return Err(io_failure(&tmp_idx, e));
        }
        self.tmp = None;
        Ok(())
    }

    /// The tree `oid` of the parent, its entries (name, then mode and id) kept as they are.
    fn read_tree(&mut self, oid: &Oid) -> Result<Entries, GitError> {
        let width = self.repo.format.id_bytes();
        let hex = hex::encode(&oid[..width]);
        let body = self.read_object(hex.as_bytes(), "tree")?;
        let mut dir = BTreeMap::new();
        let mut rest = &body[..];
        while !rest.is_empty() {
            let bad = || unexpected(format!("tree {hex} is malformed"));
            let space = rest.iter().position(|b| *b == b' ').ok_or_else(bad)?;
            let nul = rest.iter().position(|b| *b == 0).ok_or_else(bad)?;
            if nul < space || rest.len() < nul + 1 + width {
                return Err(bad());
            }
            let mode = rest[..space].into();
            let name = rest[space + 1..nul].into();
            let mut oid = [0; 32];
            oid[..width].copy_from_slice(&rest[nul + 1..nul + 1 + width]);
            dir.insert(name, (mode, oid));
            rest = &rest[nul + 1 + width..];
        }
        Ok(dir)
    }

    /// One object of the repository, which must be of type `kind`.
    fn read_object(&mut self, name: &[u8], kind: &str) -> Result<Vec<u8>, GitError> {
        if self.reader.is_none() {
            let (child, stdin, stdout) = self.repo.cat_file("--batch")?;
            self.reader = Some((child, stdin, BufReader::new(stdout)));
        }
        let Some((child, stdin, reader)) = self.reader.as_mut() else {
            return Err(unexpected("cat-file is gone".into()));
        };
        let asked = String::from_utf8_lossy(name).into_owned();
        let answer = (|| -> std::io::Result<Option<Vec<u8>>> {
            stdin.write_all(name)?;
            stdin.write_all(b"\n")?;
            stdin.flush()?;
            let mut header = String::new();
            reader.read_line(&mut header)?;
            let parts: Vec<&str> = header.trim_end().split(' ').collect();
            match parts.as_slice() {
                [_, k, size] if *k == kind => {
                    let size: usize = size.parse().map_err(|_| {
                        std::io::Error::new(std::io::ErrorKind::InvalidData, header.clone())
                    })?;
                    let mut buf = vec![0; size + 1];
                    reader.read_exact(&mut buf)?;
                    buf.pop();
                    Ok(Some(buf))
                }
                [_, _, size] => {
                    let size: u64 = size.parse().unwrap_or(0);
                    std::io::copy(&mut (&mut *reader).take(size + 1), &mut std::io::sink())?;
                    Ok(None)
                }
                _ => Ok(None),
            }
        })();
        match answer {
            Ok(Some(body)) => Ok(body),
            Ok(None) => Err(unexpected(format!("{asked} is not a {kind} here"))),
            Err(e) => {
                let _ = child.kill();
                let out = self.reader.take().map(|(c, _, _)| c.wait_with_output());
                let message = match out {
                    Some(Ok(o)) => format!("{e}; {}", stderr_summary(&o.stderr)),
                    _ => e.to_string(),
                };
                Err(GitError::Failed {
                    command: "cat-file --batch".into(),
                    message,
                })
            }
        }
    }
}

impl Drop for PackWrite {
    fn drop(&mut self) {
        if let Some(mut p) = self.packer.take() {
            let _ = p.end();
        }
        if let Some(tmp) = self.tmp.take() {
            let _ = std::fs::remove_file(&tmp);
        }
        if let Some((mut child, stdin, _)) = self.reader.take() {
            drop(stdin);
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A path's names, compared one by one: a folder's files sort together.
fn components(path: &[u8]) -> std::slice::Split<'_, u8, impl FnMut(&u8) -> bool> {
    path.split(|b| *b == b'/')
}

/// The first name of a path below a folder.
fn first_name(path: &[u8]) -> &[u8] {
    path.split(|b| *b == b'/').next().unwrap_or(path)
}

enum Hasher {
    Sha1(sha1::Sha1),
    Sha256(sha2::Sha256),
}

impl Hasher {
    fn new(format: ObjectFormat) -> Hasher {
        match format {
            ObjectFormat::Sha1 => Hasher::Sha1(sha1::Sha1::new()),
            ObjectFormat::Sha256 => Hasher::Sha256(sha2::Sha256::new()),
        }
    }

    fn update(&mut self, bytes: &[u8]) {
        match self {
            Hasher::Sha1(h) => h.update(bytes),
            Hasher::Sha256(h) => h.update(bytes),
        }
    }

    fn finish(self) -> Vec<u8> {
        match self {
            Hasher::Sha1(h) => h.finalize().to_vec(),
            Hasher::Sha256(h) => h.finalize().to_vec(),
        }
    }
}

/// The id git gives an object of type `kind` with this content.
fn object_id(format: ObjectFormat, kind: &str, body: &[u8]) -> Oid {
    let mut h = Hasher::new(format);
    h.update(format!("{kind} {}\0", body.len()).as_bytes());
    h.update(body);
    let mut oid = [0; 32];
    let hash = h.finish();
    oid[..hash.len()].copy_from_slice(&hash);
    oid
}

/// A pack entry's type-and-size header.
fn header(kind: u8, len: usize, out: &mut Vec<u8>) {
    let mut size = len as u64;
    let mut byte = (kind << 4) | (size & 0x0f) as u8;
    size >>= 4;
    while size > 0 {
        out.push(byte | 0x80);
        byte = (size & 0x7f) as u8;
        size >>= 7;
    }
    out.push(byte);
}

/// A pack entry whose content is a zlib stream of stored blocks: for a tree or a commit
/// (a hundred bytes, mostly hexadecimal names and ids), deflating would save a few dozen
/// bytes for a compressor's reset, which costs more than the rest of the object's work.
fn stored(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 32);
    header(kind, body.len(), &mut out);
    out.extend_from_slice(&[0x78, 0x01]);
    let mut chunks = body.chunks(0xffff).peekable();
    if chunks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(chunk) = chunks.next() {
        out.push(u8::from(chunks.peek().is_none()));
        let len = chunk.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    out.extend_from_slice(&adler32(body).to_be_bytes());
    out
}

/// zlib's checksum of `bytes`.
fn adler32(bytes: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    // 5552 bytes is the most that can be summed before `b` could overflow.
    for chunk in bytes.chunks(5552) {
        for &x in chunk {
            a += u32::from(x);
            b += a;
        }
        a %= 65521;
        b %= 65521;
    }
    (b << 16) | a
}

/// A pack entry: the type-and-size header, then the content deflated with `z`.
fn entry(z: &mut flate2::Compress, kind: u8, body: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(body.len() + 64);
    header(kind, body.len(), &mut out);
    z.reset();
    loop {
        let read = usize::try_from(z.total_in()).unwrap_or(usize::MAX);
        let rest = body.get(read..).unwrap_or_default();
        out.reserve(rest.len() / 2 + 64);
        let status = z
            .compress_vec(rest, &mut out, flate2::FlushCompress::Finish)
            .map_err(std::io::Error::other)?;
        if status == flate2::Status::StreamEnd {
            return Ok(out);
        }
    }
}

fn unexpected(detail: String) -> GitError {
    super::unexpected("pack", &detail)
}

fn io_failure(path: &std::path::Path, e: std::io::Error) -> GitError {
    GitError::Failed {
        command: "pack".into(),
        message: format!("{}: {e}", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    fn repo(dir: &std::path::Path, format: ObjectFormat) -> Repo {
        Repo::open_or_init(&dir.join(format!("r-{}.git", format.as_str())), format).unwrap()
    }

    fn git(repo: &Repo, args: &[&str], input: &[u8]) -> Vec<u8> {
        let mut child = Command::new("git")
            .arg("--git-dir")
            .arg(&repo.dir)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    /// A parent holding what a remote may hold besides elench's files: other modes, a
    /// submodule, a file where a folder of the layout goes, names that sort around a folder.
    fn odd_parent(repo: &Repo) -> String {
        let zero = "5".repeat(repo.format.id_bytes() * 2);
        let stream = format!(
            "commit refs/heads/odd\ncommitter x <x@y> 1 +0000\ndata 4\nodd\n\
             M 100644 inline keep/a.txt\ndata 1\na\n\
             M 100755 inline keep/run.sh\ndata 2\nhi\n\
             M 120000 inline keep/link\ndata 5\na.txt\n\
             M 160000 {zero} keep/sub\n\
             M 100644 inline v1/ab\ndata 7\nblocked\n\
             M 100644 inline v1/cd/cl_x/d1\ndata 2\nd1\n\
             M 100644 inline a.b\ndata 1\n1\n\
             M 100644 inline a-c\ndata 1\n2\n\
             M 100644 inline a0\ndata 1\n3\n\
             M 100644 inline trust/p\ndata 1\np\n\ndone\n"
        );
        git(
            repo,
            &["fast-import", "--quiet", "--done"],
            stream.as_bytes(),
        );
        String::from_utf8(git(repo, &["rev-parse", "refs/heads/odd"], b""))
            .unwrap()
            .trim()
            .to_owned()
    }

    #[test]
    fn a_pack_holds_the_commit_fast_import_writes_for_the_same_files() {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<(String, Vec<u8>)> = vec![
            ("v1/ab/cl_1/e1".into(), b"one".to_vec()),
            ("v1/cd/cl_x/d2".into(), b"two".to_vec()),
            ("v1/cd/cl_y/d3".into(), vec![0u8; 70_000]),
            ("a/inner".into(), b"folder named a".to_vec()),
            ("trust/p".into(), b"replaced".to_vec()),
            ("keep/new".into(), b"beside the others".to_vec()),
            ("v1/cd/cl_x/d1~1".into(), b"beside".to_vec()),
            // A file and a folder of one name, and one path twice: the later stands.
            ("x/a".into(), b"under x".to_vec()),
            ("x".into(), b"x is a file now".to_vec()),
            ("x/b".into(), b"x is a folder again".to_vec()),
            ("y".into(), b"y first".to_vec()),
            ("y/c".into(), b"y a folder".to_vec()),
            ("z/d".into(), b"z a folder".to_vec()),
            ("z".into(), b"z a file at last".to_vec()),
            ("a/inner".into(), b"written again".to_vec()),
            (
                "keep/run.sh/x".into(),
                b"a folder where a file was".to_vec(),
            ),
        ];
        for format in [ObjectFormat::Sha1, ObjectFormat::Sha256] {
            let repo = repo(dir.path(), format);
            let parent = odd_parent(&repo);
            for parent in [None, Some(parent.as_str())] {
                let mut fi = repo.fast_import().unwrap();
                fi.begin(parent).unwrap();
                let mut pw = repo.pack_write().unwrap();
                pw.begin(parent).unwrap();
                for (p, b) in &files {
                    fi.add(p, b).unwrap();
                    pw.add(p, b).unwrap();
                }
                assert_eq!(pw.files(), files.len());
                let ours = pw.finish().unwrap();
                assert_eq!(ours, fi.finish().unwrap(), "{format:?} on {parent:?}");
                // Git reads the pack through its index: every object whole and named right.
                git(&repo, &["fsck", "--strict", "--no-dangling"], b"");
                let listed = git(&repo, &["ls-tree", "-r", &ours], b"");
                assert!(String::from_utf8_lossy(&listed).contains("v1/cd/cl_y/d3"));
            }
            let packs = std::fs::read_dir(repo.dir.join("objects/pack")).unwrap();
            for p in packs {
                let name = p.unwrap().file_name().to_string_lossy().into_owned();
                assert!(!name.starts_with("tmp_"), "{name} left behind");
            }
        }
    }

    #[test]
    fn a_stored_entry_inflates_to_its_content() {
        for len in [0usize, 1, 100, 0xffff, 0x10000, 200_000] {
            let body: Vec<u8> = (0..len).map(|i| (i * 7 + i / 300) as u8).collect();
            let e = stored(OBJ_TREE, &body);
            let start = e.iter().position(|b| b & 0x80 == 0).unwrap() + 1;
            let mut inflated = Vec::new();
            flate2::read::ZlibDecoder::new(&e[start..])
                .read_to_end(&mut inflated)
                .unwrap();
            assert_eq!(inflated, body, "{len}");
        }
    }

    #[test]
    fn a_pack_dropped_unfinished_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path(), ObjectFormat::Sha1);
        let mut pw = repo.pack_write().unwrap();
        pw.begin(None).unwrap();
        pw.add("v1/ab/cl_1/e1", b"one").unwrap();
        drop(pw);
        let left: Vec<_> = std::fs::read_dir(repo.dir.join("objects/pack"))
            .unwrap()
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
