//! Keys: making key pairs, reading key files, and the store's trust events (`keys add`,
//! `keys retire`); the trust set a command verifies with.

use super::Failure;
use crate::keys::{
    generate_signing_key, keyid, public_key_pem, read_public_key_pem, signing_key_pem, Role,
    TrustSet, TrustedKey,
};
use crate::ops::error::Param;
use crate::store::{Store, StoredKey};
use serde::Serialize;
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The text of a key file: unreadable is IO_ERROR, not text is BAD_KEY naming the file.
pub fn read_key_file(path: &Path) -> Result<String, Failure> {
    let bytes = std::fs::read(path).map_err(|e| Failure::io(path.display(), e))?;
    crate::keys::pem::pem_text(&bytes)
        .map(str::to_owned)
        .map_err(|r| Failure::rejected(r, Some(path.display().to_string())))
}

/// The signing key the key file at `path` holds (`--key`); a refusal names the file.
pub fn read_signing_key_file(path: &Path) -> Result<ed25519_dalek::SigningKey, Failure> {
    let pem = read_key_file(path)?;
    crate::keys::read_signing_key_pem(&pem)
        .map_err(|r| Failure::rejected(r, Some(path.display().to_string())))
}

/// A key pair to make.
#[derive(Debug, Clone)]
pub struct GenerateInput {
    pub role: Role,
    pub name: String,
    /// Where the private key goes (never over an existing file).
    pub out: PathBuf,
    /// Where the public key goes too, if anywhere.
    pub pub_out: Option<PathBuf>,
}

/// The key pair made.
#[derive(Debug, Clone, Serialize)]
pub struct Generated {
    pub keyid: String,
    pub role: Role,
    pub name: String,
    pub private_key_path: String,
    pub public_key_path: Option<String>,
    pub public_key_pem: String,
    /// Trusted in the store as well.
    pub trusted: bool,
    pub effect: &'static str,
}

/// Makes an Ed25519 key pair and writes it; with `trust`, trusts it in that store too. On
/// any failure, no file is left behind.
pub fn generate(input: &GenerateInput, trust: Option<&Store>) -> Result<Generated, Failure> {
    let sk = generate_signing_key();
    let vk = sk.verifying_key();
    let private_pem = signing_key_pem(&sk).map_err(|r| Failure::rejected(r, None))?;
    let public_pem = public_key_pem(&vk).map_err(|r| Failure::rejected(r, None))?;
    write_new_file(&input.out, private_pem.as_bytes(), 0o600)?;
    if let Some(p) = &input.pub_out {
        if let Err(e) = write_new_file(p, public_pem.as_bytes(), 0o644) {
            // Leave nothing half-made behind.
            let _ = std::fs::remove_file(&input.out);
            return Err(e);
        }
    }
    if let Some(store) = trust {
        let trusted = TrustedKey::new(input.role, &input.name, vk)
            .map_err(|r| Failure::rejected(r, None))
            .and_then(|k| store.add_key(&k).map_err(Failure::from));
        if let Err(e) = trusted {
            // Leave nothing half-made behind: a key file the store does not trust.
            let _ = std::fs::remove_file(&input.out);
            if let Some(p) = &input.pub_out {
                let _ = std::fs::remove_file(p);
            }
            return Err(e);
        }
    }
    Ok(Generated {
        keyid: keyid(&vk),
        role: input.role,
        name: input.name.clone(),
        private_key_path: input.out.display().to_string(),
        public_key_path: input.pub_out.as_ref().map(|p| p.display().to_string()),
        public_key_pem: public_pem,
        trusted: trust.is_some(),
        effect: "created",
    })
}

/// [`generate`] for `keys generate`: with `trust`, the context's store is opened before any
/// file is written, so that a missing store leaves nothing behind.
pub fn generate_at(
    ctx: &super::Context,
    input: &GenerateInput,
    trust: bool,
) -> Result<Generated, Failure> {
    let store = if trust { Some(ctx.open_store()?) } else { None };
    generate(input, store.as_ref())
}

/// Creates `path` with `mode`, refusing to replace an existing file.
pub fn write_new_file(path: &Path, bytes: &[u8], mode: u32) -> Result<(), Failure> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut f = opts.open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            Failure::Io {
                path: path.display().to_string(),
                message: "file exists; refusing to overwrite a key (choose another path)".into(),
            }
        } else {
            Failure::io(path.display(), e)
        }
    })?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .map_err(|e| Failure::io(path.display(), e))
}

/// The public key in the PEM file `path`, to be trusted with `role` and `name`.
pub fn trusted_key_file(path: &Path, role: Role, name: &str) -> Result<TrustedKey, Failure> {
    let shown = path.display().to_string();
    let pem = read_key_file(path)?;
    let vk = read_public_key_pem(&pem).map_err(|r| Failure::rejected(r, Some(shown.clone())))?;
    TrustedKey::new(role, name, vk).map_err(|r| Failure::rejected(r, Some(shown)))
}

/// Refuses a root key of the team's trust policy (pinned, or a root of the policy in force)
/// where a role key is wanted (`doing`: what it was asked to do): root keys sign trust
/// policies only, never a claim, so trusting or signing with one is ROLE_VIOLATION.
pub fn refuse_root_key(store: &Store, keyid: &str, doing: &str) -> Result<(), Failure> {
    let state = crate::trust::state_of(store).map_err(super::trust::trust_failure)?;
    if !state.root_keyids().contains(keyid) {
        return Ok(());
    }
    Err(Failure::Invalid {
        code: crate::error::Code::RoleViolation,
        message: format!(
            "the key {keyid} is a root key of the team's trust policy (pinned, or a root of \
             the policy in force), and root keys sign trust policies only, never claims: \
             {doing} with a harness, agent or human key instead"
        ),
    })
}

/// A key as `keys add` and `keys list` give it.
#[derive(Debug, Clone, Serialize)]
pub struct KeyAdded {
    pub keyid: String,
    pub role: Role,
    pub name: String,
    /// `created`, or `noop` when it was trusted already.
    pub effect: &'static str,
}

/// Trusts `key` in the store. A key has one role and name: trusting it again under others
/// is refused.
pub fn add(store: &Store, key: &TrustedKey) -> Result<KeyAdded, Failure> {
    refuse_root_key(store, &key.keyid, "trust")?;
    if let Some(existing) = store.get_key(&key.keyid)? {
        if existing.role != key.role || existing.name != key.name {
            return Err(Failure::usage(
                None,
                format!(
                    "key {} is already trusted as {} {:?}; a key has one role and name",
                    key.keyid, existing.role, existing.name
                ),
            ));
        }
    }
    let added = store.add_key(key)?;
    Ok(KeyAdded {
        keyid: key.keyid.clone(),
        role: key.role,
        name: key.name.clone(),
        effect: if added { "created" } else { "noop" },
    })
}

/// `keys add`: the public key in the PEM file `path` (read first: a bad file is reported
/// before a missing store), trusted in the context's store with `role` and `name`.
pub fn add_file(
    ctx: &super::Context,
    path: &Path,
    role: Role,
    name: &str,
) -> Result<KeyAdded, Failure> {
    let key = trusted_key_file(path, role, name)?;
    add(&ctx.open_store()?, &key)
}

/// One trusted key, as `keys list` gives it.
#[derive(Debug, Clone, Serialize)]
pub struct KeyEntry {
    pub keyid: String,
    pub role: Role,
    pub name: String,
    pub retired: bool,
}

impl From<&StoredKey> for KeyEntry {
    fn from(k: &StoredKey) -> KeyEntry {
        KeyEntry {
            keyid: k.keyid.clone(),
            role: k.role,
            name: k.name.clone(),
            retired: k.retired,
        }
    }
}

/// Every key the store has trusted, retired ones included.
pub fn list(store: &Store) -> Result<Vec<KeyEntry>, Failure> {
    Ok(store.list_keys()?.iter().map(KeyEntry::from).collect())
}

/// What retiring a key would change: the key, how people name it, and the `would_affect`
/// of a preview or a refusal.
pub struct RetirePlan {
    pub key: StoredKey,
    /// "ROLE key "NAME" (KEYID)".
    pub what: String,
    pub would_affect: Value,
}

/// Looks up the key to retire (KEY_NOT_FOUND if the store never trusted it).
pub fn plan_retire(store: &Store, keyid: &str) -> Result<RetirePlan, Failure> {
    let Some(key) = store.get_key(keyid)? else {
        return Err(key_not_found(keyid));
    };
    let what = format!("{} key {:?} ({})", key.role, key.name, key.keyid);
    let would_affect = json!({
        "keys": [{"keyid": key.keyid, "role": key.role, "name": key.name}],
        "reversible": false,
        "description": "new envelopes signed only by this key are rejected; claims it already \
                        signed stay",
    });
    Ok(RetirePlan {
        key,
        what,
        would_affect,
    })
}

/// A key retired.
#[derive(Debug, Clone, Serialize)]
pub struct Retired {
    pub keyid: String,
    pub retired: bool,
    /// `updated`, or `noop` when it was retired already.
    pub effect: &'static str,
}

/// Retires a key: new envelopes signed only by it are rejected; accepted claims stay.
pub fn retire(store: &Store, keyid: &str) -> Result<Retired, Failure> {
    match store.retire_key(keyid)? {
        None => Err(key_not_found(keyid)),
        Some(changed) => Ok(Retired {
            keyid: keyid.to_owned(),
            retired: true,
            // Retiring changes the key's state: `updated`, one of the spec's four effects
            // (REQ-C-003); `retired: true` says what the update was.
            effect: if changed { "updated" } else { "noop" },
        }),
    }
}

fn key_not_found(keyid: &str) -> Failure {
    Failure::NotFound {
        code: crate::error::Code::KeyNotFound,
        message: format!("no trusted key {keyid} (see `elench keys list`)"),
    }
}

/// Parses one `ROLE:NAME:PATH` argument (`--trust`) and reads the key it names.
pub fn parse_trust_arg(arg: &str) -> Result<TrustedKey, Failure> {
    let mut parts = arg.splitn(3, ':');
    let (Some(role), Some(name), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(Failure::usage(
            Some(Param::Trust),
            format!(
                "‹trust› {arg:?}: expected ROLE:NAME:PUBKEY.pem (for example harness:ci:ci.pub)"
            ),
        ));
    };
    let role: Role = role
        .parse()
        .map_err(|e| Failure::usage(Some(Param::Trust), format!("‹trust› {arg:?}: {e}")))?;
    let pem = read_key_file(Path::new(path))?;
    let key = read_public_key_pem(&pem).map_err(|r| Failure::rejected(r, Some(path.to_owned())))?;
    TrustedKey::new(role, name, key).map_err(|r| Failure::rejected(r, Some(path.to_owned())))
}

/// The keys of `store` (if any) and those given as `ROLE:NAME:PATH` arguments.
pub fn trust_with_store(store: Option<&Store>, args: &[String]) -> Result<TrustSet, Failure> {
    let mut keys = match store {
        Some(store) => store.trust_set()?.keys().to_vec(),
        None => Vec::new(),
    };
    for k in trust_from_args(args)?.keys() {
        if !keys.iter().any(|have| have.keyid == k.keyid) {
            keys.push(k.clone());
        }
    }
    Ok(TrustSet::new(keys))
}

/// The trust set given as `ROLE:NAME:PATH` arguments.
pub fn trust_from_args(args: &[String]) -> Result<TrustSet, Failure> {
    let keys = args
        .iter()
        .map(|a| parse_trust_arg(a))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(TrustSet::new(keys))
}
