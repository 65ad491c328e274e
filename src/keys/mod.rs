//! Keys and who may say what (docs/claims.md).
//!
//! A trusted key is an Ed25519 public key with a role (`harness`, `agent`, `human`) and a
//! name. Trust comes only from which trusted key verifies a signature; the role of that key
//! decides which claims it may sign. Weak (small-order) public keys are refused on entry.

pub mod authority;
pub mod pem;

pub use authority::check_authority;
pub use pem::{
    generate_signing_key, keyid, public_key_pem, read_public_key_pem, read_signing_key_pem,
    signing_key_pem,
};

use crate::error::{Code, Rejection};
use ed25519_dalek::VerifyingKey;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// What kind of party holds a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Harness,
    Agent,
    Human,
    /// Signs the checkpoints of a remote's log (docs/witness.md); no claim.
    Log,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Harness => "harness",
            Role::Agent => "agent",
            Role::Human => "human",
            Role::Log => "log",
        }
    }

    /// "a harness key", "an agent key", "a human key": the role in a sentence.
    pub fn a_key(self) -> &'static str {
        match self {
            Role::Harness => "a harness key",
            Role::Agent => "an agent key",
            Role::Human => "a human key",
            Role::Log => "a log key",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Role, String> {
        match s {
            "harness" => Ok(Role::Harness),
            "agent" => Ok(Role::Agent),
            "human" => Ok(Role::Human),
            "log" => Ok(Role::Log),
            other => Err(format!(
                "unknown role {other:?}; expected harness, agent, human or log"
            )),
        }
    }
}

/// A public key the verifier trusts, with its role and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedKey {
    pub keyid: String,
    pub role: Role,
    pub name: String,
    pub key: VerifyingKey,
    pub retired: bool,
}

impl TrustedKey {
    /// Makes a trusted key, refusing weak (small-order) public keys.
    pub fn new(role: Role, name: &str, key: VerifyingKey) -> Result<TrustedKey, Rejection> {
        if key.is_weak() {
            return Err(Rejection::new(
                Code::WeakKey,
                "public key is weak (a small-order point): anyone could forge signatures for it",
            ));
        }
        if name.is_empty() {
            return Err(Rejection::new(Code::BadKey, "a key needs a non-empty name"));
        }
        Ok(TrustedKey {
            keyid: keyid(&key),
            role,
            name: name.to_owned(),
            key,
            retired: false,
        })
    }
}

/// The keys an ingest may trust.
#[derive(Debug, Clone, Default)]
pub struct TrustSet {
    keys: Vec<TrustedKey>,
}

impl TrustSet {
    pub fn new(keys: Vec<TrustedKey>) -> TrustSet {
        TrustSet { keys }
    }

    pub fn keys(&self) -> &[TrustedKey] {
        &self.keys
    }

    /// Keys that may verify new envelopes (retired keys may not).
    pub fn active(&self) -> impl Iterator<Item = &TrustedKey> {
        self.keys.iter().filter(|k| !k.retired)
    }

    pub fn get(&self, keyid: &str) -> Option<&TrustedKey> {
        self.keys.iter().find(|k| k.keyid == keyid)
    }
}
