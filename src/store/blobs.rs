//! Content-addressed blobs beside the log: evidence that is too large or too raw to sign
//! (the transcript of an evaluation, the output of the processes it ran). A blob is named by
//! the SHA-256 of its bytes, which is what a record's evidence digest carries, so a record
//! can name its evidence without the log holding it and anyone can check the pairing.
//!
//! Layout: `<store root>/blobs/sha256/<first 2 hex>/<64 hex>`. Blobs are written atomically
//! and never rewritten: a blob that is already there has, by construction, the same bytes.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    #[error("{0:?} is not a blob name (64 lowercase hex digits of SHA-256)")]
    BadDigest(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("blob {digest} is damaged: its bytes hash to {actual}")]
    Damaged { digest: String, actual: String },
}

fn is_digest(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Where the blob with this digest lives (whether or not it exists).
pub fn path(root: &Path, digest: &str) -> Result<PathBuf, BlobError> {
    if !is_digest(digest) {
        return Err(BlobError::BadDigest(digest.to_owned()));
    }
    Ok(root
        .join("blobs")
        .join("sha256")
        .join(&digest[..2])
        .join(digest))
}

/// The name a blob of these bytes has: their SHA-256, lowercase hex.
pub fn digest(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// How many blobs are written and fsynced at once. An fsync waits for a journal commit;
/// concurrent ones share a commit, so a group costs about one commit, not one per blob.
const WRITERS: usize = 16;

/// Stores each of `blobs` and returns their SHA-256 digests, in order. When it returns Ok,
/// every blob and every directory entry leading to it is durable, so a record naming them
/// may be appended; on an error, none of them may be named (some may be stored: a stored
/// blob is complete, never half-written).
pub fn put_many(root: &Path, blobs: &[&[u8]]) -> Result<Vec<String>, BlobError> {
    let digests: Vec<String> = blobs.iter().map(|b| digest(b)).collect();
    let mut todo: Vec<(PathBuf, &[u8])> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (d, b) in digests.iter().zip(blobs) {
        let file = path(root, d)?;
        if seen.insert(d.as_str()) && !file.is_file() {
            todo.push((file, b));
        }
    }
    if todo.is_empty() {
        return Ok(digests);
    }
    // Directories first, each new one made durable in its parent; then the blobs, written
    // and fsynced by WRITERS threads; then each folder they were renamed into, once.
    let mut folders: Vec<PathBuf> = todo
        .iter()
        .filter_map(|(f, _)| f.parent().map(Path::to_path_buf))
        .collect();
    folders.sort();
    folders.dedup();
    for dir in &folders {
        make_dirs(dir)?;
    }
    let chunk = todo.len().div_ceil(WRITERS);
    std::thread::scope(|scope| {
        let workers: Vec<_> = todo
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    for (file, bytes) in part {
                        write_unsynced_dir(file, bytes).map_err(|source| BlobError::Io {
                            path: file.clone(),
                            source,
                        })?;
                    }
                    Ok::<(), BlobError>(())
                })
            })
            .collect();
        for w in workers {
            w.join().map_err(|_| BlobError::Io {
                path: root.join("blobs"),
                source: std::io::Error::other("a blob writer panicked"),
            })??;
        }
        Ok::<(), BlobError>(())
    })?;
    for dir in &folders {
        crate::atomic_file::sync_dir(dir).map_err(|source| BlobError::Io {
            path: dir.clone(),
            source,
        })?;
    }
    Ok(digests)
}

/// Creates `dir` and its missing parents, each new entry made durable in its parent.
fn make_dirs(dir: &Path) -> Result<(), BlobError> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        make_dirs(parent)?;
    }
    let io = |source| BlobError::Io {
        path: dir.to_path_buf(),
        source,
    };
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        // Another writer made it: its entry is as durable as that writer left it, so sync
        // the parent anyway.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io(e)),
    }
    match dir.parent() {
        Some(parent) => crate::atomic_file::sync_dir(parent).map_err(|source| BlobError::Io {
            path: parent.to_path_buf(),
            source,
        }),
        None => Ok(()),
    }
}

/// Writes a temporary file beside `file`, fsyncs it and renames it over `file`; the folder
/// is synced by the caller, once for all its blobs.
fn write_unsynced_dir(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = file.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let result = std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|_| f.sync_all()))
        .and_then(|_| std::fs::rename(&tmp, file));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The bytes of a blob, or None when the store does not hold it. Bytes that no longer hash
/// to their name are an error, never returned.
pub fn get(root: &Path, digest: &str) -> Result<Option<Vec<u8>>, BlobError> {
    let file = path(root, digest)?;
    match std::fs::read(&file) {
        Ok(bytes) => {
            let actual = hex::encode(Sha256::digest(&bytes));
            if actual != digest {
                return Err(BlobError::Damaged {
                    digest: digest.to_owned(),
                    actual,
                });
            }
            Ok(Some(bytes))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(BlobError::Io { path: file, source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One blob stored, as `put_many` stores each.
    fn put(root: &Path, bytes: &[u8]) -> Result<String, BlobError> {
        Ok(put_many(root, &[bytes])?.remove(0))
    }

    #[test]
    fn put_then_get_round_trips_and_names_by_sha256() {
        let dir = crate::scratch::ScratchDir::new("elench-blobs");
        let d = put(dir.path(), b"hello").unwrap();
        assert_eq!(
            d,
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        assert!(dir.path().join("blobs/sha256/2c").join(&d).is_file());
        assert_eq!(get(dir.path(), &d).unwrap().as_deref(), Some(&b"hello"[..]));
        // Again: same name, nothing new.
        assert_eq!(put(dir.path(), b"hello").unwrap(), d);
        let other = "0".repeat(64);
        assert_eq!(get(dir.path(), &other).unwrap(), None);
    }

    #[test]
    fn bad_names_and_damaged_blobs_are_errors() {
        let dir = crate::scratch::ScratchDir::new("elench-blobs");
        assert!(matches!(
            get(dir.path(), "../etc/passwd"),
            Err(BlobError::BadDigest(_))
        ));
        assert!(matches!(
            get(dir.path(), &"A".repeat(64)),
            Err(BlobError::BadDigest(_))
        ));
        let d = put(dir.path(), b"x").unwrap();
        std::fs::write(path(dir.path(), &d).unwrap(), b"y").unwrap();
        assert!(matches!(
            get(dir.path(), &d),
            Err(BlobError::Damaged { .. })
        ));
    }

    #[test]
    fn put_many_stores_each_once_in_order_and_leaves_no_temporary_file() {
        let dir = crate::scratch::ScratchDir::new("elench-blobs");
        let old = put(dir.path(), b"already").unwrap();
        let many: Vec<Vec<u8>> = (0..40).map(|i| format!("blob {i}").into_bytes()).collect();
        let mut input: Vec<&[u8]> = many.iter().map(Vec::as_slice).collect();
        input.push(b"already");
        input.push(&many[3]);
        let digests = put_many(dir.path(), &input).unwrap();
        assert_eq!(digests.len(), input.len());
        assert_eq!(digests[40], old);
        assert_eq!(digests[41], digests[3]);
        for (d, bytes) in digests.iter().zip(&input) {
            assert_eq!(*d, digest(bytes));
            assert_eq!(get(dir.path(), d).unwrap().as_deref(), Some(*bytes));
        }
        for folder in std::fs::read_dir(dir.path().join("blobs/sha256")).unwrap() {
            for f in std::fs::read_dir(folder.unwrap().path()).unwrap() {
                let name = f.unwrap().file_name().to_string_lossy().into_owned();
                assert!(!name.starts_with('.'), "left behind: {name}");
            }
        }
    }

    #[test]
    fn put_many_fails_when_a_folder_cannot_be_made() {
        let dir = crate::scratch::ScratchDir::new("elench-blobs");
        std::fs::create_dir_all(dir.path().join("blobs")).unwrap();
        // A file where the folder of every blob must go.
        std::fs::write(dir.path().join("blobs/sha256"), b"not a folder").unwrap();
        assert!(matches!(
            put_many(dir.path(), &[b"a", b"b"]),
            Err(BlobError::Io { .. })
        ));
    }
}
