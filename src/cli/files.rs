//! Files the CLI reads and writes: inputs (standard input only when the argument is `-`),
//! and outputs written atomically.

use super::failure::Failure;
use crate::error::{Code, Rejection};
use std::io::Read;
use std::path::Path;

/// Reads at most `limit` bytes (one more is read to detect an oversized input, which is then
/// refused with TOO_LARGE rather than loaded whole).
pub fn read_limited(path: &str, limit: usize) -> Result<Vec<u8>, Failure> {
    let mut buf = Vec::new();
    let cap = limit as u64 + 1;
    let result = if path == "-" {
        std::io::stdin().lock().take(cap).read_to_end(&mut buf)
    } else {
        std::fs::File::open(path).and_then(|f| f.take(cap).read_to_end(&mut buf))
    };
    result.map_err(|e| Failure::io(display_source(path), e))?;
    if buf.len() > limit {
        return Err(Failure::rejected(
            Rejection::new(
                Code::TooLarge,
                format!(
                    "{} is larger than the limit of {limit} bytes",
                    display_source(path)
                ),
            ),
            Some(display_source(path)),
        ));
    }
    Ok(buf)
}

pub fn read_text(path: &Path) -> Result<String, Failure> {
    std::fs::read_to_string(path).map_err(|e| Failure::io(path.display(), e))
}

/// How an input is named in output.
pub fn display_source(path: &str) -> String {
    if path == "-" {
        "<stdin>".to_owned()
    } else {
        path.to_owned()
    }
}

/// Writes `bytes` to `path` atomically (see `atomic_file`), naming the path on failure.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    crate::atomic_file::write(path, bytes).map_err(|e| Failure::io(path.display(), e))
}
