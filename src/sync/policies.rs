//! Trust policies travel beside the envelopes, at `trust/<version>/<sha256 of the envelope>`
//! in the remote's tree. A pull takes the ones this store lacks first, in version order,
//! through `crate::trust::admit` (the same checks as `add`), so that claims their keys signed
//! are taken in the same pull; push writes the ones the remote lacks.

use super::git::{Blob, Repo};
use super::{Outcome, Rejected, SyncError, LISTED_MAX};
use crate::envelope::MAX_ENVELOPE_BYTES;
use crate::store::Store;

/// The folder of the remote's tree policies live in.
pub const DIR: &str = "trust";

/// `trust/<version>/<digest>`.
pub fn path(version: u64, digest: &str) -> String {
    format!("{DIR}/{version}/{digest}")
}

/// The version and digest a path names, if it has the shape of [`path`].
pub fn parse_path(p: &str) -> Option<(u64, &str)> {
    let mut parts = p.split('/');
    let (top, v, d) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || top != DIR || d.len() != 64 {
        return None;
    }
    if !d.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    Some((v.parse().ok()?, d))
}

fn io(e: crate::trust::TrustError) -> SyncError {
    match e {
        crate::trust::TrustError::Store(s) => SyncError::Store(s),
        other => SyncError::Io(other.to_string()),
    }
}

/// Digests of the policies the store holds.
pub fn held(store: &Store) -> Result<Vec<String>, SyncError> {
    Ok(crate::trust::carried(store)
        .map_err(io)?
        .into_iter()
        .map(|(_, d, _)| d)
        .collect())
}

/// Policies named in a trust folder remembered between pulls, at most (past that the folder
/// is listed on every pull).
const LISTED_KEPT: usize = 1000;

/// Takes from `head` the policies the store lacks, lowest version first; refusals are
/// counted in `out` like an envelope's. `listed`: the digests `head`'s trust folder names, as
/// an earlier pull listed them; when the store holds every one, there is nothing to take and
/// the folder is not listed again. Returns the digests the folder names, to remember (None:
/// too many).
pub fn pull(
    store: &Store,
    repo: &Repo,
    head: &str,
    listed: Option<&[String]>,
    out: &mut Outcome,
) -> Result<Option<Vec<String>>, SyncError> {
    let have = held(store)?;
    if let Some(listed) = listed {
        if listed.iter().all(|d| have.contains(d)) {
            return Ok(Some(listed.to_vec()));
        }
    }
    let mut named = Vec::new();
    let mut wanted: Vec<(u64, super::git::Entry)> = Vec::new();
    for e in repo.list(head, DIR)? {
        let Some((v, d)) = parse_path(&e.path) else {
            continue;
        };
        named.push(d.to_owned());
        if !have.iter().any(|h| h == d) {
            wanted.push((v, e));
        }
    }
    let named = (named.len() <= LISTED_KEPT).then_some(named);
    wanted.sort_by(|a, b| (a.0, &a.1.path).cmp(&(b.0, &b.1.path)));
    if wanted.is_empty() {
        return Ok(named);
    }
    let oids: Vec<String> = wanted.iter().map(|(_, e)| e.blob.clone()).collect();
    let mut blobs = Vec::with_capacity(oids.len());
    repo.read_blobs(&oids, MAX_ENVELOPE_BYTES as u64, |_, b| {
        blobs.push(b);
        Ok(true)
    })?;
    for ((_, entry), blob) in wanted.iter().zip(blobs) {
        out.examined += 1;
        out.fetched += 1;
        let refused = match blob {
            Blob::Content(bytes) => match crate::trust::admit(store, &bytes) {
                Ok(a) => {
                    match a.effect {
                        "created" => out.created += 1,
                        "waiting" => out.merged += 1,
                        _ => out.noop += 1,
                    }
                    None
                }
                Err(crate::trust::TrustError::Rejected(r)) => Some((r.code, r.message)),
                Err(e) => return Err(io(e)),
            },
            Blob::TooLarge(n) => Some((
                crate::error::Code::TooLarge,
                format!("{n} bytes, over the limit of {MAX_ENVELOPE_BYTES} bytes"),
            )),
            Blob::Missing => Some((
                crate::error::Code::Unreadable,
                format!(
                    "the remote's tree names blob {}, which git cannot read",
                    entry.blob
                ),
            )),
        };
        if let Some((code, message)) = refused {
            out.rejected += 1;
            if out.rejections.len() < LISTED_MAX {
                out.rejections.push(Rejected {
                    path: entry.path.clone(),
                    blob: entry.blob.clone(),
                    code: code.as_str().to_owned(),
                    message,
                });
            }
        }
    }
    Ok(named)
}

/// The policies of the store, as `(path, bytes)` to place in the remote's tree.
pub fn items(store: &Store) -> Result<Vec<(String, Vec<u8>)>, SyncError> {
    Ok(crate::trust::carried(store)
        .map_err(io)?
        .into_iter()
        .map(|(v, d, b)| (path(v, &d), b))
        .collect())
}
