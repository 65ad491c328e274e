//! Where things live in the shared git repository: the ref, the path of each envelope, and
//! the fixed identity of elench's commits.
//!
//! An envelope's path is derived from its content only (its claim id and the SHA-256 of its
//! canonical bytes), so the tree holding a set of envelopes is a function of that set, and two
//! stores that hold the same envelopes write the same tree.

/// The ref the log travels under, on every remote.
pub const LOG_REF: &str = "refs/elench/log";
/// The top folder of the layout; a later layout gets another name beside it.
pub const LAYOUT_DIR: &str = "v1";
/// Author and committer of every commit elench writes (name, email, raw date). Fixed, so that
/// the same tree on the same parent always gives the same commit id.
pub const IDENTITY: &str = "elench <elench@localhost> 0 +0000";
/// The message of every commit elench writes.
pub const MESSAGE: &str = "elench log\n";

/// `v1/<first two hex of the id>/<claim id>/<sha256 of the envelope's canonical bytes>`.
pub fn envelope_path(claim_id: &str, digest_hex: &str) -> String {
    let hex = claim_id.strip_prefix("cl_").unwrap_or(claim_id);
    let fan = hex.get(..2).unwrap_or("00");
    format!("{LAYOUT_DIR}/{fan}/{claim_id}/{digest_hex}")
}

/// The claim id and envelope digest a path names, if it has the layout's shape. A path of
/// another shape is still offered to ingest (its content decides); this only lets a pull skip
/// reading envelopes the store already holds.
pub fn parse_path(path: &str) -> Option<(&str, &str)> {
    let mut parts = path.split('/');
    let (top, fan, id, digest) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || top != LAYOUT_DIR {
        return None;
    }
    let hex = id.strip_prefix("cl_")?;
    let ok = crate::claim::is_claim_id(id)
        && hex.get(..2) == Some(fan)
        && digest.len() == 64
        && digest
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    ok.then_some((id, digest))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "cl_ab00000000000000000000000000000000000000000000000000000000000001";
    const DIGEST: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn a_path_names_its_fan_out_claim_and_digest_and_parses_back() {
        let p = envelope_path(ID, DIGEST);
        assert_eq!(p, format!("v1/ab/{ID}/{DIGEST}"));
        assert_eq!(parse_path(&p), Some((ID, DIGEST)));
    }

    #[test]
    fn paths_of_another_shape_do_not_parse() {
        assert_eq!(parse_path(&format!("v1/cd/{ID}/{DIGEST}")), None);
        assert_eq!(parse_path(&format!("v2/ab/{ID}/{DIGEST}")), None);
        assert_eq!(parse_path(&format!("v1/ab/{ID}/{DIGEST}/x")), None);
        assert_eq!(parse_path(&format!("v1/ab/{ID}/{}", &DIGEST[..63])), None);
        assert_eq!(
            parse_path(&format!("v1/ab/{ID}/{}", DIGEST.to_uppercase())),
            None
        );
        assert_eq!(parse_path("v1/ab/cl_ab/x"), None);
        assert_eq!(parse_path("README"), None);
    }
}
