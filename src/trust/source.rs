//! `trust.toml`, the file a team writes, to the Statement of a policy's next version; and
//! signing a policy (a first signature, or one more on an envelope already signed).
//!
//! ```toml
//! name = "github.com/acme/widgets"
//! expires = "2027-06-30T00:00:00Z"     # optional
//! compromised = []                      # keyids
//! [root]
//! threshold = 1
//! keys = ["keys/root-alice.pub"]        # paths from this file's folder; name = file stem
//! [[key]]
//! role = "harness"
//! name = "ci"
//! file = "keys/ci.pub"
//! ```

use super::policy::{self, chain_of, Policy, PolicyKey, Predicate, Root, RootKey};
use super::State;
use crate::envelope::{pae, Envelope, PAYLOAD_TYPE, STATEMENT_TYPE};
use crate::error::{Code, Rejection};
use crate::keys::{keyid, public_key_pem, read_public_key_pem, Role};
use base64::Engine;
use ed25519_dalek::{Signer, SigningKey};
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::Path;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Source {
    name: String,
    #[serde(default)]
    expires: Option<String>,
    #[serde(default)]
    compromised: Vec<String>,
    root: SourceRoot,
    #[serde(default)]
    key: Vec<SourceKey>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SourceRoot {
    threshold: u64,
    keys: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SourceKey {
    role: Role,
    name: String,
    file: String,
}

fn bad(message: impl Into<String>) -> Rejection {
    Rejection::new(Code::PolicyInvalid, message)
}

fn read_pub(base: &Path, file: &str) -> Result<(String, String), Rejection> {
    let path = base.join(file);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Rejection::new(Code::Unreadable, format!("{}: {e}", path.display())))?;
    let vk = read_public_key_pem(&text)
        .map_err(|r| Rejection::new(r.code, format!("{}: {}", path.display(), r.message)))?;
    Ok((keyid(&vk), public_key_pem(&vk)?))
}

/// The Statement (as JSON) of the policy `toml` (the text of the file at `path`) describes,
/// at `version` (None: the one after the policy in force, or 1), on top of the store's
/// chain.
pub fn statement(
    path: &Path,
    toml_text: &str,
    st: &State,
    version: Option<u64>,
) -> Result<Value, Rejection> {
    let src: Source = toml::from_str(toml_text)
        .map_err(|e| bad(format!("{}: {}", path.display(), e.message())))?;
    let base = path.parent().unwrap_or(Path::new("."));
    let mut root_keys = Vec::new();
    for f in &src.root.keys {
        let (id, pem) = read_pub(base, f)?;
        let name = Path::new(f)
            .file_stem()
            .map_or_else(|| f.clone(), |s| s.to_string_lossy().into_owned());
        root_keys.push(RootKey {
            keyid: id,
            name,
            public_key: pem,
        });
    }
    let mut keys = Vec::new();
    for k in &src.key {
        let (id, pem) = read_pub(base, &k.file)?;
        keys.push(PolicyKey {
            keyid: id,
            name: k.name.clone(),
            role: k.role,
            public_key: pem,
        });
    }
    let root = Root {
        threshold: src.root.threshold,
        keys: root_keys,
    };
    let version = version.unwrap_or(st.chain.len() as u64 + 1);
    if version == 0 || version > st.chain.len() as u64 + 1 && version != 1 {
        return Err(bad(format!(
            "version {version} cannot be built here: this store's chain is at version {}; \
             build version {} (or give --version for one it holds the version below of)",
            st.chain.len(),
            st.chain.len() + 1
        )));
    }
    let (previous, chain) = if version == 1 {
        (None, chain_of(&root))
    } else {
        let prev: &Policy = &st.chain[version as usize - 2];
        (Some(prev.hash.clone()), prev.chain.clone())
    };
    let predicate = Predicate {
        version,
        previous,
        expires: src.expires,
        root,
        keys,
        compromised: src.compromised,
    };
    Ok(json!({
        "_type": STATEMENT_TYPE,
        "subject": [{"name": src.name, "digest": {"sha256": chain}}],
        "predicateType": policy::PREDICATE_TYPE,
        "predicate": serde_json::to_value(&predicate).unwrap_or(Value::Null),
    }))
}

fn signature(payload: &[u8], key: &SigningKey) -> Value {
    let id = keyid(&key.verifying_key());
    let sig = key.sign(&pae(PAYLOAD_TYPE, payload));
    json!({"keyid": id, "sig": base64::engine::general_purpose::STANDARD.encode(sig.to_bytes())})
}

/// A new envelope of `statement`, signed by `key`: canonical JSON text.
pub fn sign_new(statement: &Value, key: &SigningKey) -> Result<Vec<u8>, Rejection> {
    let payload = crate::jcs::canonical(statement)
        .map_err(|e| Rejection::new(Code::PolicyInvalid, e.to_string()))?;
    let env = json!({
        "payload": base64::engine::general_purpose::STANDARD.encode(&payload),
        "payloadType": PAYLOAD_TYPE,
        "signatures": [signature(&payload, key)],
    });
    let bytes = crate::jcs::canonical(&env).unwrap_or_default();
    policy::read(&bytes)?;
    Ok(bytes)
}

/// The policy envelope `bytes` with one more signature, by `key` (none added when `key`
/// signed it already): canonical JSON text.
pub fn sign_more(bytes: &[u8], key: &SigningKey) -> Result<Vec<u8>, Rejection> {
    let p = policy::read(bytes)?;
    let vk = key.verifying_key();
    let own = [(
        RootKey {
            keyid: keyid(&vk),
            name: "key".into(),
            public_key: String::new(),
        },
        vk,
    )];
    let mut env = Envelope::parse_json(bytes)?;
    if p.signed_by(&own).is_empty() {
        if let Some(Value::Array(sigs)) = env.get_mut("signatures") {
            sigs.push(signature(&p.envelope.payload, key));
        }
    }
    let out = crate::jcs::canonical(&env).unwrap_or_default();
    policy::read(&out)?;
    Ok(out)
}
