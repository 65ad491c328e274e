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

/// Stores `bytes` and returns their SHA-256 (lowercase hex).
pub fn put(root: &Path, bytes: &[u8]) -> Result<String, BlobError> {
    let digest = hex::encode(Sha256::digest(bytes));
    let file = path(root, &digest)?;
    if file.is_file() {
        return Ok(digest);
    }
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| BlobError::Io { path: p, source }
    };
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
    }
    crate::atomic_file::write(&file, bytes).map_err(io(&file))?;
    Ok(digest)
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
}
