//! Team trust that travels: a chain of signed trust policies, anchored by root keys each
//! store pins once (the model of TUF's root rotation and of gittuf's policy; never trust on
//! first use).
//!
//! A store keeps, beside its log, in `trust/`: its pins (`pins.json`), the policies of its
//! chain (`chain/<version>.json`, the canonical envelope of each version reached), the
//! policies that wait for a version below them (`waiting/`), and the second valid envelopes
//! of a version already reached (`equivocation/`): all of them content that travels, none of
//! it a copy of anything. What a policy grants is applied to the store's trust as log
//! records: the keys of the policy in force are added as `keys add` would, and a key an
//! earlier version listed and the one in force does not is retired, so the log, `fsck` and
//! checkpoints see every change of trust. Applying is idempotent ([`reconcile`]), so a run
//! stopped between writing a policy and applying it is finished by the next one.
//!
//! Files: `policy` (one policy read and checked alone), `source` (`trust.toml` to the next
//! version's predicate).

pub mod policy;
pub mod source;

use crate::error::{Code, Rejection};
use crate::keys::{keyid, read_public_key_pem, TrustedKey};
use crate::store::Store;
use ed25519_dalek::VerifyingKey;
pub use policy::{is_policy, Policy, PREDICATE_TYPE};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const DIR: &str = "trust";
const PINS: &str = "pins.json";
const CHAIN: &str = "chain";
const WAITING: &str = "waiting";
const EQUIVOCATION: &str = "equivocation";

/// A root key this store trusts to start a chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    pub keyid: String,
    pub name: String,
    /// PEM SubjectPublicKeyInfo.
    #[serde(rename = "publicKey")]
    pub public_key: String,
}

#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("{0}")]
    Rejected(Rejection),
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

impl From<Rejection> for TrustError {
    fn from(r: Rejection) -> Self {
        TrustError::Rejected(r)
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> TrustError + '_ {
    move |e| TrustError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

fn dir(root: &Path) -> PathBuf {
    root.join(DIR)
}

/// Everything a store knows of its team's trust.
#[derive(Debug, Clone, Default)]
pub struct State {
    pub pins: Vec<Pin>,
    /// Versions 1, 2, … as reached, without a gap.
    pub chain: Vec<Policy>,
    /// Valid-looking policies above the version after the one in force, by version.
    pub waiting: Vec<Policy>,
    /// Second valid envelopes of versions in the chain.
    pub equivocations: Vec<Policy>,
}

impl State {
    pub fn in_force(&self) -> Option<&Policy> {
        self.chain.last()
    }

    /// The root keys of the policy in force and every pinned key: keys that sign policies
    /// only.
    pub fn root_keyids(&self) -> BTreeSet<String> {
        let mut ids: BTreeSet<String> = self.pins.iter().map(|p| p.keyid.clone()).collect();
        if let Some(p) = self.in_force() {
            ids.extend(p.root_keys.iter().map(|(k, _)| k.keyid.clone()));
        }
        ids
    }

    /// The root keys of the policy in force and the pinned keys, parsed.
    pub fn root_keys(&self) -> Vec<(String, VerifyingKey)> {
        let mut out: Vec<(String, VerifyingKey)> = Vec::new();
        for p in &self.pins {
            if let Ok(vk) = read_public_key_pem(&p.public_key) {
                out.push((p.name.clone(), vk));
            }
        }
        if let Some(p) = self.in_force() {
            for (k, vk) in &p.root_keys {
                if !out.iter().any(|(_, o)| o == vk) {
                    out.push((k.name.clone(), *vk));
                }
            }
        }
        out
    }

    /// Keyids the policy in force declares compromised.
    pub fn compromised(&self) -> BTreeSet<String> {
        self.in_force()
            .map(|p| p.predicate.compromised.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The version a waiting policy waits for (the one after the policy in force), if any
    /// waits.
    pub fn missing_version(&self) -> Option<u64> {
        let next = self.in_force().map_or(1, |p| p.version() + 1);
        self.waiting
            .iter()
            .any(|w| w.version() > next || (self.chain.is_empty() && w.version() >= 1))
            .then_some(next)
    }

    /// Warnings every command gives: equivocation and expiry. `(code, message)`.
    pub fn warnings(&self, now: i64) -> Vec<(Code, String)> {
        let mut out = Vec::new();
        for e in &self.equivocations {
            let kept = self
                .chain
                .get(e.version() as usize - 1)
                .map(Policy::id)
                .unwrap_or_default();
            out.push((
                Code::PolicyEquivocation,
                format!(
                    "trust policy version {} has two different valid envelopes: {kept} (in the \
                     chain) and {} (refused); the root keys signed both, so the team's trust \
                     cannot be told: the gate fails until the roots publish the next version",
                    e.version(),
                    e.id()
                ),
            ));
        }
        if let Some(p) = self.in_force() {
            if let Some(t) = p.expires_at() {
                if t <= now {
                    out.push((
                        Code::PolicyExpired,
                        format!(
                            "trust policy version {} ({}) expired at {}: its root keys ({}) \
                             should sign the next version; the gate fails until then",
                            p.version(),
                            p.id(),
                            p.predicate.expires.as_deref().unwrap_or(""),
                            p.root_names()
                        ),
                    ));
                }
            }
        }
        out
    }
}

/// Seconds since the epoch, now.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn read_dir_policies(path: &Path) -> Result<Vec<Policy>, TrustError> {
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(path) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(io(path)(e)),
    };
    let mut names: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    names.sort();
    for p in names {
        let bytes = std::fs::read(&p).map_err(io(&p))?;
        let policy = policy::read(&bytes).map_err(|r| TrustError::Io {
            path: p.display().to_string(),
            message: format!("a stored trust policy no longer reads: {}", r.message),
        })?;
        out.push(policy);
    }
    Ok(out)
}

/// What the store at `root` knows of its trust (nothing, for a store without `trust/`).
pub fn state(root: &Path) -> Result<State, TrustError> {
    let d = dir(root);
    let pins_path = d.join(PINS);
    let pins: Vec<Pin> = match std::fs::read(&pins_path) {
        Ok(b) => serde_json::from_slice(&b).map_err(|e| TrustError::Io {
            path: pins_path.display().to_string(),
            message: e.to_string(),
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(io(&pins_path)(e)),
    };
    let mut chain = read_dir_policies(&d.join(CHAIN))?;
    chain.sort_by_key(Policy::version);
    // Only the run without a gap from 1 counts (files are written in order).
    let upto = chain
        .iter()
        .enumerate()
        .take_while(|(i, p)| p.version() == *i as u64 + 1)
        .count();
    chain.truncate(upto);
    let mut waiting = read_dir_policies(&d.join(WAITING))?;
    waiting.sort_by(|a, b| (a.version(), &a.digest).cmp(&(b.version(), &b.digest)));
    let mut equivocations = read_dir_policies(&d.join(EQUIVOCATION))?;
    equivocations.sort_by(|a, b| (a.version(), &a.digest).cmp(&(b.version(), &b.digest)));
    Ok(State {
        pins,
        chain,
        waiting,
        equivocations,
    })
}

/// What `store` knows of its trust, read once per opening of the store: later calls on the
/// same [`Store`] get the state the first one read, and [`admit`] and [`pin`] replace it when
/// they change it.
pub fn state_of(store: &Store) -> Result<Arc<State>, TrustError> {
    if let Some(st) = store.derived::<State>() {
        return Ok(st);
    }
    let st = Arc::new(state(store.root())?);
    store.keep_derived(st.clone());
    Ok(st)
}

/// Held while a process changes `trust/`.
struct Lock {
    _file: std::fs::File,
}

fn lock(root: &Path) -> Result<Lock, TrustError> {
    let d = dir(root);
    std::fs::create_dir_all(&d).map_err(io(&d))?;
    let path = d.join("lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io(&path))?;
    file.lock().map_err(io(&path))?;
    Ok(Lock { _file: file })
}

fn write(root: &Path, sub: &str, name: &str, bytes: &[u8]) -> Result<(), TrustError> {
    let d = dir(root).join(sub);
    std::fs::create_dir_all(&d).map_err(io(&d))?;
    let path = d.join(name);
    crate::atomic_file::write(&path, bytes).map_err(io(&path))
}

fn chain_name(version: u64) -> String {
    format!("{version:010}.json")
}

/// What adding a pin did.
#[derive(Debug, Clone, Serialize)]
pub struct Pinned {
    pub keyid: String,
    pub name: String,
    /// `created` or `noop`.
    pub effect: &'static str,
}

/// Pins a root public key (PEM text). Pinning the same key again changes nothing.
pub fn pin(store: &Store, pem: &str, name: Option<&str>) -> Result<Pinned, TrustError> {
    let vk = read_public_key_pem(pem)?;
    if vk.is_weak() {
        return Err(Rejection::new(Code::WeakKey, "a weak (small-order) public key").into());
    }
    let id = keyid(&vk);
    let root = store.root();
    let _l = lock(root)?;
    let mut st = state(root)?;
    let name = name.map_or_else(|| format!("root-{}", &id[..8]), str::to_owned);
    if st.pins.iter().any(|p| p.keyid == id) {
        return Ok(Pinned {
            keyid: id,
            name,
            effect: "noop",
        });
    }
    st.pins.push(Pin {
        keyid: id.clone(),
        name: name.clone(),
        public_key: crate::keys::public_key_pem(&vk)?,
    });
    st.pins.sort_by(|a, b| a.keyid.cmp(&b.keyid));
    let json = serde_json::to_vec_pretty(&st.pins).unwrap_or_default();
    let d = dir(root);
    crate::atomic_file::write(&d.join(PINS), &json).map_err(io(&d))?;
    store.keep_derived(Arc::new(st));
    Ok(Pinned {
        keyid: id,
        name,
        effect: "created",
    })
}

/// What admitting a policy did.
#[derive(Debug, Clone, Serialize)]
pub struct Admitted {
    /// `tp_…`.
    pub id: String,
    pub version: u64,
    /// `created` (it extends the chain), `waiting` (a version below it is missing), `noop`
    /// (the chain holds it).
    pub effect: &'static str,
    /// Versions that came into force in this call (it, and waiting ones it unblocked).
    pub applied: Vec<u64>,
    /// For `waiting`: the version it waits for.
    pub missing: Option<u64>,
}

fn threshold_failure(p: &Policy, of: &Policy, signed: &[String], whose: &str) -> Rejection {
    Rejection::at(
        Code::PolicyThreshold,
        "/signatures",
        format!(
            "trust policy version {} ({}) needs {} of {whose} root keys ({}) and has {}{}: add \
             signatures with `elench trust sign POLICY --key ROOT.pem`",
            p.version(),
            p.id(),
            of.predicate.root.threshold,
            of.root_names(),
            signed.len(),
            if signed.is_empty() {
                String::new()
            } else {
                format!(" ({})", signed.join(", "))
            }
        ),
    )
}

/// Version 1 against the pins: its root holds a pinned key, and a threshold of its root
/// keys signed it.
fn check_first(st: &State, p: &Policy) -> Result<(), Rejection> {
    if !p
        .root_keys
        .iter()
        .any(|(k, _)| st.pins.iter().any(|pin| pin.keyid == k.keyid))
    {
        let pins: Vec<String> = st
            .pins
            .iter()
            .map(|x| format!("{} ({})", x.name, &x.keyid[..12]))
            .collect();
        return Err(Rejection::at(
            Code::PolicyRootUnpinned,
            "/payload/predicate/root/keys",
            format!(
                "trust policy version 1 ({}) has root keys {} and none of them is pinned here \
                 (pins: {}): pin the team's root with `elench trust pin ROOT.pub` if this is \
                 your team's chain",
                p.id(),
                p.root_names(),
                pins.join(", ")
            ),
        ));
    }
    let signed = p.signed_by(&p.root_keys);
    if (signed.len() as u64) < p.predicate.root.threshold {
        return Err(threshold_failure(p, p, &signed, "its own"));
    }
    Ok(())
}

/// Version N+1 against version N: `previous`, a threshold of N's root and of its own.
fn check_next(prev: &Policy, p: &Policy) -> Result<(), Rejection> {
    if p.predicate.previous.as_deref() != Some(prev.hash.as_str()) {
        return Err(Rejection::at(
            Code::PolicyPreviousMismatch,
            "/payload/predicate/previous",
            format!(
                "trust policy version {} ({}) names previous {}, but version {} here is {} \
                 (hash {}): it was built on another version {}",
                p.version(),
                p.id(),
                p.predicate.previous.as_deref().unwrap_or("(none)"),
                prev.version(),
                prev.id(),
                prev.hash,
                prev.version()
            ),
        ));
    }
    let by_prev = p.signed_by(&prev.root_keys);
    if (by_prev.len() as u64) < prev.predicate.root.threshold {
        let whose = format!("version {}'s", prev.version());
        return Err(threshold_failure(p, prev, &by_prev, &whose));
    }
    let own = p.signed_by(&p.root_keys);
    if (own.len() as u64) < p.predicate.root.threshold {
        return Err(threshold_failure(p, p, &own, "its own"));
    }
    Ok(())
}

fn unpinned(p: &Policy) -> Rejection {
    Rejection::new(
        Code::PolicyUnpinned,
        format!(
            "this store pins no root key, so it takes no trust policy (version {}, {}, root \
             keys {}): elench never trusts on first use. Pin your team's root public key with \
             `elench trust pin ROOT.pub` (or `elench init --root-key ROOT.pub`)",
            p.version(),
            p.id(),
            p.root_names()
        ),
    )
}

/// Takes a policy envelope into the store: checks it alone, then against the pins and the
/// chain; a version that extends the chain is written and applied (with any waiting version
/// it unblocks), one above the next waits, a second valid one of a version reached is kept
/// as evidence and refused (`POLICY_EQUIVOCATION`). Every refusal leaves the store as it was.
pub fn admit(store: &Store, bytes: &[u8]) -> Result<Admitted, TrustError> {
    let p = policy::read(bytes)?;
    let root = store.root();
    let _l = lock(root)?;
    // Read afresh under the lock (another process may have changed it); what this opening
    // kept is replaced on the way out, whatever happens.
    let mut st = state(root)?;
    store.forget_derived();
    if st.pins.is_empty() {
        return Err(unpinned(&p).into());
    }
    let mut admitted = Admitted {
        id: p.id(),
        version: p.version(),
        effect: "noop",
        applied: Vec::new(),
        missing: None,
    };
    if let Some(first) = st.chain.first() {
        if p.chain != first.chain {
            return Err(Rejection::at(
                Code::PolicyChainMismatch,
                "/payload/subject/0/digest/sha256",
                format!(
                    "trust policy version {} ({}) belongs to chain {} ({}), not to this \
                     store's chain {} ({}): another team's policy, or another chain of yours",
                    p.version(),
                    p.id(),
                    p.chain,
                    p.team,
                    first.chain,
                    first.team
                ),
            )
            .into());
        }
    }
    let top = st.chain.len() as u64;
    let v = p.version();
    if v <= top {
        let held = &st.chain[v as usize - 1];
        if held.hash == p.hash {
            return Ok(admitted);
        }
        // Would it have been valid? Then the roots signed two versions `v`.
        match v {
            1 => check_first(&st, &p)?,
            _ => check_next(&st.chain[v as usize - 2], &p)?,
        }
        if !st.equivocations.iter().any(|e| e.digest == p.digest) {
            write(
                root,
                EQUIVOCATION,
                &format!("{}.json", p.digest),
                &p.canonical,
            )?;
        }
        return Err(Rejection::new(
            Code::PolicyEquivocation,
            format!(
                "trust policy version {v} has two different valid envelopes: {} (in the chain) \
                 and {} (this one, refused and kept as evidence); root keys {} signed both",
                held.id(),
                p.id(),
                p.root_names()
            ),
        )
        .into());
    }
    if v > top + 1 {
        if !st.waiting.iter().any(|w| w.digest == p.digest) {
            write(root, WAITING, &format!("{}.json", p.digest), &p.canonical)?;
        }
        admitted.effect = "waiting";
        admitted.missing = Some(top + 1);
        return Ok(admitted);
    }
    match st.chain.last() {
        None => check_first(&st, &p)?,
        Some(prev) => check_next(prev, &p)?,
    }
    write(root, CHAIN, &chain_name(v), &p.canonical)?;
    admitted.effect = "created";
    admitted.applied.push(v);
    st.chain.push(p);
    // Waiting versions it unblocks, in order.
    loop {
        let next = st.chain.len() as u64 + 1;
        let prev = st.chain.last().cloned();
        let found = st.waiting.iter().position(|w| {
            w.version() == next
                && prev
                    .as_ref()
                    .is_some_and(|prev| w.chain == prev.chain && check_next(prev, w).is_ok())
        });
        let Some(i) = found else { break };
        let w = st.waiting.remove(i);
        write(root, CHAIN, &chain_name(next), &w.canonical)?;
        let _ = std::fs::remove_file(dir(root).join(WAITING).join(format!("{}.json", w.digest)));
        admitted.applied.push(next);
        st.chain.push(w);
    }
    reconcile_state(store, &st)?;
    store.keep_derived(Arc::new(st));
    Ok(admitted)
}

/// What [`admit`] would do with a policy envelope, judged against `st` (the store's state,
/// read once by the caller) and writing nothing: the same answer (`created`, `waiting`,
/// `noop`) or the same refusal, an equivocation included. `st` is updated in memory as
/// `admit` would update the store, so a dry run of several policies judges each after the
/// ones before it.
pub fn predict(st: &mut State, bytes: &[u8]) -> Result<Admitted, TrustError> {
    let p = policy::read(bytes)?;
    if st.pins.is_empty() {
        return Err(unpinned(&p).into());
    }
    let mut admitted = Admitted {
        id: p.id(),
        version: p.version(),
        effect: "noop",
        applied: Vec::new(),
        missing: None,
    };
    if let Some(first) = st.chain.first() {
        if p.chain != first.chain {
            return Err(Rejection::at(
                Code::PolicyChainMismatch,
                "/payload/subject/0/digest/sha256",
                format!(
                    "trust policy version {} ({}) belongs to chain {} ({}), not to this \
                     store's chain {} ({}): another team's policy, or another chain of yours",
                    p.version(),
                    p.id(),
                    p.chain,
                    p.team,
                    first.chain,
                    first.team
                ),
            )
            .into());
        }
    }
    let top = st.chain.len() as u64;
    let v = p.version();
    if v <= top {
        let held = &st.chain[v as usize - 1];
        if held.hash == p.hash {
            return Ok(admitted);
        }
        match v {
            1 => check_first(st, &p)?,
            _ => check_next(&st.chain[v as usize - 2], &p)?,
        }
        return Err(Rejection::new(
            Code::PolicyEquivocation,
            format!(
                "trust policy version {v} has two different valid envelopes: {} (in the chain) \
                 and {} (this one, which would be refused and kept as evidence); root keys {} \
                 signed both",
                held.id(),
                p.id(),
                p.root_names()
            ),
        )
        .into());
    }
    if v > top + 1 {
        if !st.waiting.iter().any(|w| w.digest == p.digest) {
            st.waiting.push(p);
        }
        admitted.effect = "waiting";
        admitted.missing = Some(top + 1);
        return Ok(admitted);
    }
    match st.chain.last() {
        None => check_first(st, &p)?,
        Some(prev) => check_next(prev, &p)?,
    }
    admitted.effect = "created";
    admitted.applied.push(v);
    st.chain.push(p);
    loop {
        let next = st.chain.len() as u64 + 1;
        let prev = st.chain.last().cloned();
        let found = st.waiting.iter().position(|w| {
            w.version() == next
                && prev
                    .as_ref()
                    .is_some_and(|prev| w.chain == prev.chain && check_next(prev, w).is_ok())
        });
        let Some(i) = found else { break };
        st.chain.push(st.waiting.remove(i));
        admitted.applied.push(next);
    }
    Ok(admitted)
}

/// Makes the store's keys what the chain grants: every key of the policy in force trusted
/// with its role (a key the store holds under another role takes the policy's), and every key an earlier version listed that the one in force does not,
/// retired. Local keys no version ever listed are left alone.
pub fn reconcile(store: &Store) -> Result<(), TrustError> {
    let st = state_of(store)?;
    reconcile_state(store, &st)
}

fn reconcile_state(store: &Store, st: &State) -> Result<(), TrustError> {
    let Some(in_force) = st.in_force() else {
        return Ok(());
    };
    let now: BTreeSet<&str> = in_force
        .keys
        .iter()
        .map(|(k, _)| k.keyid.as_str())
        .collect();
    for (k, vk) in &in_force.keys {
        let key = TrustedKey::new(k.role, &k.name, *vk)?;
        store.grant_key(&key)?;
    }
    for p in &st.chain[..st.chain.len() - 1] {
        for (k, _) in &p.keys {
            if !now.contains(k.keyid.as_str()) {
                store.retire_key(&k.keyid)?;
            }
        }
    }
    Ok(())
}

/// Every policy the store holds, as `(version, canonical bytes)`: the chain in order, then
/// those waiting, then the equivocating ones (what `export` and `push` carry).
pub fn carried(store: &Store) -> Result<Vec<(u64, String, Vec<u8>)>, TrustError> {
    let st = state_of(store)?;
    Ok(st
        .chain
        .iter()
        .chain(&st.waiting)
        .chain(&st.equivocations)
        .map(|p| (p.version(), p.digest.clone(), p.canonical.clone()))
        .collect())
}

/// Whether a claim envelope verifies under a root key (pinned or of the policy in force):
/// the root key's name, if so. Root keys sign policies only.
pub fn root_signer(store: &Store, bytes: &[u8]) -> Option<String> {
    let st = state_of(store).ok()?;
    let keys = st.root_keys();
    if keys.is_empty() {
        return None;
    }
    let env = crate::envelope::Envelope::parse(bytes).ok()?;
    let ids: Vec<String> = keys.iter().map(|(_, vk)| keyid(vk)).collect();
    let candidates: Vec<crate::envelope::Candidate<'_>> = keys
        .iter()
        .zip(&ids)
        .map(|((_, vk), id)| crate::envelope::Candidate { keyid: id, key: vk })
        .collect();
    let v = env
        .verify(&candidates, 1, &[crate::envelope::PAYLOAD_TYPE])
        .ok()?;
    v.verifying_keys.first().map(|&i| keys[i].0.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Options;
    use std::time::Duration;

    fn root_pem(byte: u8) -> String {
        let sk = ed25519_dalek::SigningKey::from_bytes(&[byte; 32]);
        crate::keys::public_key_pem(&sk.verifying_key()).unwrap()
    }

    #[test]
    fn one_opening_reads_its_trust_once_and_sees_its_own_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let (store, _) = Store::init(tmp.path(), &Options::new(Duration::ZERO)).unwrap();
        pin(&store, &root_pem(7), Some("root")).unwrap();
        let first = state_of(&store).unwrap();
        assert_eq!(first.pins.len(), 1);
        // Read once: the files are not read again by this opening.
        std::fs::remove_file(dir(store.root()).join(PINS)).unwrap();
        assert!(Arc::ptr_eq(&first, &state_of(&store).unwrap()));
        // A change made through this opening replaces what it kept.
        pin(&store, &root_pem(8), Some("root2")).unwrap();
        assert_eq!(state_of(&store).unwrap().pins.len(), 1);
        // A new opening reads what is there.
        drop(store);
        let store = Store::open(tmp.path(), &Options::new(Duration::ZERO)).unwrap();
        assert_eq!(state_of(&store).unwrap().pins[0].name, "root2");
    }
}
