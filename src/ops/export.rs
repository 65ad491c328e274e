//! The log as an in-toto bundle (`elench export`): one envelope a line, in log order, each
//! exactly as the log keeps it (its canonical RFC 8785 form, which is one line), so two stores
//! holding the same envelopes export the same lines. Trust policies lead the bundle.

use super::Failure;
use crate::store::Store;
use std::io::Write;

/// A bundle of the whole log.
#[derive(Debug, Clone, Default)]
pub struct Bundle {
    /// The bundle's bytes: one envelope and a newline per line.
    pub bytes: Vec<u8>,
    /// How many envelopes it holds.
    pub envelopes: u64,
}

/// Writes the bundle to `out` page by page; returns the number of envelopes.
///
/// The store's trust policies come first (the chain in version order, then any that wait or
/// equivocate), so that `add` of the bundle in a store that pins the team's root takes the
/// policies before the claims their keys signed. They are not counted.
pub fn write_bundle(store: &Store, out: &mut dyn Write) -> Result<u64, Failure> {
    for (_, _, bytes) in crate::trust::carried(store).map_err(super::trust::trust_failure)? {
        out.write_all(&bytes)
            .and_then(|_| out.write_all(b"\n"))
            .map_err(|e| Failure::io("bundle", e))?;
    }
    let mut n = 0;
    loop {
        let page = store.envelope_records(n, 4096)?;
        if page.is_empty() {
            break;
        }
        for e in &page {
            out.write_all(&e.bytes)
                .and_then(|_| out.write_all(b"\n"))
                .map_err(|e| Failure::io("bundle", e))?;
        }
        n += page.len() as u64;
    }
    Ok(n)
}

/// The whole log as a bundle, in memory: the caller writes it where it goes.
pub fn bundle(store: &Store) -> Result<Bundle, Failure> {
    let mut bytes = Vec::new();
    let envelopes = write_bundle(store, &mut bytes)?;
    Ok(Bundle { bytes, envelopes })
}
