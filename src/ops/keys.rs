//! Keys: reading key files, and the trust store's events (`keys add`, `keys retire`).

use super::Failure;
use std::path::Path;

/// The text of a key file: unreadable is IO_ERROR, not text is BAD_KEY naming the file.
pub fn read_key_file(path: &Path) -> Result<String, Failure> {
    let bytes = std::fs::read(path).map_err(|e| Failure::io(path.display(), e))?;
    crate::keys::pem::pem_text(&bytes)
        .map(str::to_owned)
        .map_err(|r| Failure::rejected(r, Some(path.display().to_string())))
}
