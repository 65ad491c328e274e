//! One trust policy: a DSSE envelope holding an in-toto Statement whose predicate lists the
//! team's root keys (who may sign the next version), its other keys with their roles, the
//! keys found compromised, and when the policy expires. Reading one checks everything that
//! depends on the envelope alone; whether it extends a chain is `chain`'s business.

use crate::envelope::{Candidate, Envelope, PAYLOAD_TYPE, STATEMENT_TYPE};
use crate::error::{Code, Rejection};
use crate::keys::{keyid, read_public_key_pem, Role};
use ed25519_dalek::VerifyingKey;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The predicate type of a trust policy.
pub const PREDICATE_TYPE: &str = "https://elench.dev/trust-policy/v0.1";

/// A policy's predicate, as signed. Unknown members are refused everywhere in it: a member
/// this version of elench does not know could be a rule it would then not enforce.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Predicate {
    pub version: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<String>,
    pub root: Root,
    #[serde(default)]
    pub keys: Vec<PolicyKey>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compromised: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Root {
    pub threshold: u64,
    pub keys: Vec<RootKey>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RootKey {
    pub keyid: String,
    pub name: String,
    #[serde(rename = "publicKey")]
    pub public_key: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyKey {
    pub keyid: String,
    pub name: String,
    pub role: Role,
    #[serde(rename = "publicKey")]
    pub public_key: String,
}

/// A policy read and checked on its own (its signatures not yet counted).
#[derive(Debug, Clone)]
pub struct Policy {
    pub envelope: Envelope,
    /// The envelope's canonical bytes (RFC 8785), what is stored and travels.
    pub canonical: Vec<u8>,
    /// SHA-256 of `canonical`, hex: the envelope's identity.
    pub digest: String,
    /// SHA-256 of the canonical payload, hex: what `previous` names; the id is `tp_` + this.
    pub hash: String,
    /// The team's name (the subject's name).
    pub team: String,
    /// The chain it claims to belong to (the subject's sha256 digest).
    pub chain: String,
    pub predicate: Predicate,
    /// The root keys, parsed, in the order listed.
    pub root_keys: Vec<(RootKey, VerifyingKey)>,
    /// The other keys, parsed.
    pub keys: Vec<(PolicyKey, VerifyingKey)>,
}

impl Policy {
    pub fn id(&self) -> String {
        format!("tp_{}", self.hash)
    }

    pub fn version(&self) -> u64 {
        self.predicate.version
    }

    /// The keys of `root` (another policy's root, or this one's) that signed this envelope,
    /// each once however many signatures it made: their names.
    pub fn signed_by(&self, root: &[(RootKey, VerifyingKey)]) -> Vec<String> {
        let candidates: Vec<Candidate<'_>> = root
            .iter()
            .map(|(k, vk)| Candidate {
                keyid: &k.keyid,
                key: vk,
            })
            .collect();
        match self.envelope.verify(&candidates, 1, &[PAYLOAD_TYPE]) {
            Ok(v) => {
                let mut names: Vec<String> = v
                    .verifying_keys
                    .iter()
                    .map(|&i| root[i].0.name.clone())
                    .collect();
                names.sort();
                names
            }
            Err(_) => Vec::new(),
        }
    }

    /// Expiry as seconds since the epoch (None: never).
    pub fn expires_at(&self) -> Option<i64> {
        self.predicate.expires.as_deref().and_then(parse_time)
    }

    /// Names of root keys, for messages.
    pub fn root_names(&self) -> String {
        names_of(&self.root_keys)
    }
}

/// "alice (ab12…), bob (cd34…)".
pub fn names_of(keys: &[(RootKey, VerifyingKey)]) -> String {
    keys.iter()
        .map(|(k, _)| format!("{} ({})", k.name, &k.keyid[..k.keyid.len().min(12)]))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The identity of a chain: SHA-256 of the RFC 8785 form of version 1's `root`.
pub fn chain_of(root: &Root) -> String {
    let value = serde_json::to_value(root).unwrap_or(Value::Null);
    let bytes = crate::jcs::canonical(&value).unwrap_or_default();
    hex::encode(Sha256::digest(bytes))
}

fn invalid(pointer: &str, message: impl Into<String>) -> Rejection {
    Rejection::at(Code::PolicyInvalid, pointer, message)
}

/// Whether these bytes are a trust policy envelope (its Statement's predicateType), read
/// without any key: how `add` and `pull` tell a policy from a claim.
pub fn is_policy(bytes: &[u8]) -> bool {
    let Ok(env) = Envelope::parse(bytes) else {
        return false;
    };
    let Ok(v) = serde_json::from_slice::<Value>(&env.payload) else {
        return false;
    };
    v.get("predicateType").and_then(Value::as_str) == Some(PREDICATE_TYPE)
}

/// Reads a policy envelope and checks everything that depends on it alone: the Statement,
/// the predicate's members (no unknown one), each key's id against its public key, no key
/// listed twice with different roles or in the root and among the keys, a threshold the
/// root can reach, and a version 1 naming its own chain.
pub fn read(bytes: &[u8]) -> Result<Policy, Rejection> {
    let json = Envelope::parse_json(bytes)?;
    let envelope = Envelope::from_json(&json)?;
    let canonical = crate::store::record::canonical_of(&json)
        .map_err(|e| Rejection::new(Code::BadEnvelope, e))?;
    let digest = hex::encode(Sha256::digest(&canonical));
    if envelope.payload_type != PAYLOAD_TYPE {
        return Err(Rejection::at(
            Code::UnsupportedPayloadType,
            "/payloadType",
            format!("a trust policy's payloadType is {PAYLOAD_TYPE}"),
        ));
    }
    let statement = crate::json::parse_unique_keys(&envelope.payload).map_err(|e| {
        Rejection::at(
            Code::BadStatement,
            "/payload",
            format!("the payload is not JSON: {e}"),
        )
    })?;
    let hash = hex::encode(Sha256::digest(
        crate::jcs::canonical(&statement).unwrap_or_default(),
    ));
    let Value::Object(st) = &statement else {
        return Err(Rejection::at(
            Code::BadStatement,
            "/payload",
            "the Statement is not an object",
        ));
    };
    if st.get("_type").and_then(Value::as_str) != Some(STATEMENT_TYPE) {
        return Err(Rejection::at(
            Code::BadStatement,
            "/payload/_type",
            format!("_type must be {STATEMENT_TYPE}"),
        ));
    }
    let ptype = st.get("predicateType").and_then(Value::as_str);
    if ptype != Some(PREDICATE_TYPE) {
        return Err(Rejection::at(
            Code::UnsupportedPredicateType,
            "/payload/predicateType",
            format!(
                "predicateType {:?} is not a trust policy's ({PREDICATE_TYPE})",
                ptype.unwrap_or("")
            ),
        ));
    }
    let subject =
        match st
            .get("subject")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
        {
            Some([one]) => one,
            _ => return Err(invalid(
                "/payload/subject",
                "a trust policy has exactly one subject: the team's name and its chain's sha256",
            )),
        };
    let team = subject.get("name").and_then(Value::as_str).unwrap_or("");
    let chain = subject
        .pointer("/digest/sha256")
        .and_then(Value::as_str)
        .unwrap_or("");
    if team.is_empty() || !is_hex64(chain) {
        return Err(invalid(
            "/payload/subject/0",
            "the subject needs a name (the team) and digest.sha256 (64 lowercase hex)",
        ));
    }
    let Some(pred) = st.get("predicate") else {
        return Err(invalid("/payload/predicate", "the predicate is missing"));
    };
    let predicate: Predicate = serde_json::from_value(pred.clone())
        .map_err(|e| invalid("/payload/predicate", format!("the policy's predicate: {e}")))?;
    let v = predicate.version;
    if v == 0 {
        return Err(invalid("/payload/predicate/version", "versions start at 1"));
    }
    match (&predicate.previous, v) {
        (Some(_), 1) => {
            return Err(invalid(
                "/payload/predicate/previous",
                "version 1 has no previous version",
            ))
        }
        (None, v) if v > 1 => {
            return Err(invalid(
                "/payload/predicate/previous",
                format!(
                    "version {v} must name version {}'s hash in `previous`",
                    v - 1
                ),
            ))
        }
        _ => {}
    }
    if let Some(e) = &predicate.expires {
        if parse_time(e).is_none() {
            return Err(invalid(
                "/payload/predicate/expires",
                format!("expires {e:?} is not a time of the form 2027-06-30T00:00:00Z"),
            ));
        }
    }
    let mut root_keys = Vec::new();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for (i, k) in predicate.root.keys.iter().enumerate() {
        let vk = parse_key(
            &k.keyid,
            &k.public_key,
            &format!("/payload/predicate/root/keys/{i}"),
        )?;
        if seen.insert(k.keyid.clone(), "root".into()).is_some() {
            return Err(invalid(
                &format!("/payload/predicate/root/keys/{i}"),
                format!("root key {} ({}) is listed twice", k.name, k.keyid),
            ));
        }
        root_keys.push((k.clone(), vk));
    }
    let t = predicate.root.threshold;
    if t == 0 || t > root_keys.len() as u64 {
        return Err(invalid(
            "/payload/predicate/root/threshold",
            format!(
                "threshold {t} cannot be reached by {} root key(s): give 1 to {}",
                root_keys.len(),
                root_keys.len()
            ),
        ));
    }
    let mut keys = Vec::new();
    for (i, k) in predicate.keys.iter().enumerate() {
        let at = format!("/payload/predicate/keys/{i}");
        let vk = parse_key(&k.keyid, &k.public_key, &at)?;
        match seen.get(&k.keyid) {
            Some(r) if r == "root" => {
                return Err(invalid(
                    &at,
                    format!(
                        "key {} ({}) is a root key and a {} key: root keys sign policies only",
                        k.name, k.keyid, k.role
                    ),
                ))
            }
            Some(r) if *r != k.role.as_str() => {
                return Err(invalid(
                    &at,
                    format!(
                        "key {} ({}) is listed twice, as {r} and as {}",
                        k.name, k.keyid, k.role
                    ),
                ))
            }
            Some(_) => continue,
            None => {}
        }
        seen.insert(k.keyid.clone(), k.role.as_str().to_owned());
        keys.push((k.clone(), vk));
    }
    for (i, c) in predicate.compromised.iter().enumerate() {
        if !is_hex64(c) {
            return Err(invalid(
                &format!("/payload/predicate/compromised/{i}"),
                format!("{c:?} is not a keyid (64 lowercase hex)"),
            ));
        }
    }
    if v == 1 && chain_of(&predicate.root) != chain {
        return Err(Rejection::at(
            Code::PolicyChainMismatch,
            "/payload/subject/0/digest/sha256",
            format!(
                "version 1 names chain {chain}, but its root's digest is {}: the subject must \
                 be the SHA-256 of the RFC 8785 form of version 1's root",
                chain_of(&predicate.root)
            ),
        ));
    }
    Ok(Policy {
        envelope,
        canonical,
        digest,
        hash,
        team: team.to_owned(),
        chain: chain.to_owned(),
        predicate,
        root_keys,
        keys,
    })
}

fn parse_key(id: &str, pem: &str, at: &str) -> Result<VerifyingKey, Rejection> {
    let vk = read_public_key_pem(pem).map_err(|r| {
        invalid(
            &format!("{at}/publicKey"),
            format!("not a public key: {}", r.message),
        )
    })?;
    if vk.is_weak() {
        return Err(Rejection::at(
            Code::WeakKey,
            format!("{at}/publicKey"),
            "a weak (small-order) public key",
        ));
    }
    if keyid(&vk) != id {
        return Err(invalid(
            &format!("{at}/keyid"),
            format!(
                "keyid {id} is not the SHA-256 of its public key ({})",
                keyid(&vk)
            ),
        ));
    }
    Ok(vk)
}

fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `YYYY-MM-DDTHH:MM:SSZ` (UTC, as the policy writes it) as seconds since the epoch.
pub fn parse_time(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' {
        return None;
    }
    if b[16] != b':' || b[19] != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hh * 3600 + mm * 60 + ss)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_utc_seconds() {
        assert_eq!(parse_time("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_time("2000-03-01T00:00:01Z"), Some(951_868_801));
        assert_eq!(parse_time("2027-06-30T00:00:00Z"), Some(1_814_313_600));
        assert_eq!(parse_time("2027-06-30 00:00:00Z"), None);
        assert_eq!(parse_time("2027-13-30T00:00:00Z"), None);
    }
}
