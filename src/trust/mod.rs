//! Team trust that travels: a chain of signed trust policies, anchored by root keys each
//! store pins once (the model of TUF's root rotation and of gittuf's policy; never trust on
//! first use).
//!
//! The log is the source of truth, and a store's trust is the fold of the log's trust
//! records: a pin record for each pinned root key, a policy record for each policy envelope
//! taken (canonical bytes), in log order. Folding them with the rules of [`admit`] gives the
//! chain (each version reached), the versions that wait for one below them, and the second
//! valid envelopes of a version already reached (kept as evidence of an equivocation). What
//! a policy grants is applied as `key-add` and `key-retire` records: the keys of the policy
//! in force are trusted with its roles, and a key an earlier version listed and the one in
//! force does not is retired, so `fsck`, checkpoints and export see every change of trust.
//! Applying is idempotent ([`reconcile`]), so a run stopped between appending a policy and
//! applying it is finished by the next one.
//!
//! Files: `policy` (one policy read and checked alone), `source` (`trust.toml` to the next
//! version's predicate).

pub mod policy;
pub mod source;

use crate::error::{Code, Rejection};
use crate::keys::{keyid, read_public_key_pem, TrustedKey};
use crate::store::log::Kind;
use crate::store::Store;
use ed25519_dalek::VerifyingKey;
pub use policy::{is_policy, Policy, PREDICATE_TYPE};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

/// The lock file held while a process reads the trust state to change it (in the store
/// directory).
const LOCK: &str = "trust.lock";

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

/// The trust state the trust records give, folded in log order with the rules of [`admit`].
/// `strict`: a policy record that no longer reads, or that the state before it refuses (the
/// log was not written by [`admit`]), is an error; else it is passed over.
fn fold(records: Vec<(Kind, Vec<u8>)>, strict: bool) -> Result<State, TrustError> {
    let mut st = State::default();
    for (n, (kind, payload)) in records.into_iter().enumerate() {
        let bad = |message: String| TrustError::Io {
            path: format!("the log's trust record {}", n + 1),
            message,
        };
        match kind {
            Kind::Pin => {
                let pin: crate::store::record::Pin =
                    crate::store::record::decode_event(&payload).map_err(bad)?;
                if !st.pins.iter().any(|p| p.keyid == pin.keyid) {
                    st.pins.push(Pin {
                        keyid: pin.keyid,
                        name: pin.name,
                        public_key: pin.public_key,
                    });
                }
            }
            Kind::Policy => {
                let p = match policy::read(&payload) {
                    Ok(p) => p,
                    Err(r) if strict => {
                        return Err(bad(format!(
                            "a trust policy of the log no longer reads: {}",
                            r.message
                        )))
                    }
                    Err(_) => continue,
                };
                match step(&mut st, p) {
                    Ok(_) => {}
                    Err(r) if strict => {
                        return Err(bad(format!(
                            "a trust policy of the log does not hold where it sits: {}",
                            r.message
                        )))
                    }
                    Err(_) => {}
                }
            }
            _ => {}
        }
    }
    st.pins.sort_by(|a, b| a.keyid.cmp(&b.keyid));
    Ok(st)
}

/// Folds every trust record of `store` again, checking each policy record where it sits (what
/// `fsck` asks): the first that does not hold, if any.
pub fn verify_records(store: &Store) -> Result<(), TrustError> {
    fold(store.trust_records()?, true).map(drop)
}

/// What `store` knows of its trust, read once per opening of the store: later calls on the
/// same [`Store`] get the state the first one read, and [`admit`] and [`pin`] replace it when
/// they change it.
pub fn state_of(store: &Store) -> Result<Arc<State>, TrustError> {
    if let Some(st) = store.derived::<State>() {
        return Ok(st);
    }
    let st = Arc::new(fold(store.trust_records()?, false)?);
    store.keep_derived(st.clone());
    Ok(st)
}

/// The trust state read afresh from the log (under the trust lock, to change it).
fn fresh_state(store: &Store) -> Result<State, TrustError> {
    store.forget_derived();
    Ok((*state_of(store)?).clone())
}

/// Held while a process reads the trust state to change it.
struct Lock {
    _file: std::fs::File,
}

fn lock(root: &Path) -> Result<Lock, TrustError> {
    let path = root.join(LOCK);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io(&path))?;
    file.lock().map_err(io(&path))?;
    Ok(Lock { _file: file })
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
    let _l = lock(store.root())?;
    let mut st = fresh_state(store)?;
    let name = name.map_or_else(|| format!("root-{}", &id[..8]), str::to_owned);
    if st.pins.iter().any(|p| p.keyid == id) {
        return Ok(Pinned {
            keyid: id,
            name,
            effect: "noop",
        });
    }
    let pin = Pin {
        keyid: id.clone(),
        name: name.clone(),
        public_key: crate::keys::public_key_pem(&vk)?,
    };
    let record = crate::store::record::Pin {
        keyid: pin.keyid.clone(),
        name: pin.name.clone(),
        public_key: pin.public_key.clone(),
    };
    store.append_trust_record(Kind::Pin, &crate::store::record::encode_event(&record))?;
    st.pins.push(pin);
    st.pins.sort_by(|a, b| a.keyid.cmp(&b.keyid));
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

/// What one policy does to a trust state ([`step`]).
enum Stepped {
    /// The chain holds it already.
    Held,
    /// It waits for a version below it (`true`: newly).
    Waiting(bool),
    /// A second valid envelope of a version reached: refused, and kept as evidence
    /// (`true`: newly).
    Equivocation(bool, Rejection),
    /// It extended the chain, with the waiting versions it unblocked: the versions applied.
    Applied(Vec<u64>),
}

/// Takes `p` into `st` with the chain's rules: checked against the pins and the chain; a
/// version that extends the chain is reached (with any waiting version it unblocks), one
/// above the next waits, a second valid one of a version reached is evidence. Any other
/// refusal is an error and leaves `st` as it was.
fn step(st: &mut State, p: Policy) -> Result<Stepped, Rejection> {
    if st.pins.is_empty() {
        return Err(unpinned(&p));
    }
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
            ));
        }
    }
    let top = st.chain.len() as u64;
    let v = p.version();
    if v <= top {
        let held = &st.chain[v as usize - 1];
        if held.hash == p.hash {
            return Ok(Stepped::Held);
        }
        // Would it have been valid? Then the roots signed two versions `v`.
        match v {
            1 => check_first(st, &p)?,
            _ => check_next(&st.chain[v as usize - 2], &p)?,
        }
        let refusal = Rejection::new(
            Code::PolicyEquivocation,
            format!(
                "trust policy version {v} has two different valid envelopes: {} (in the chain) \
                 and {} (this one, refused and kept as evidence); root keys {} signed both",
                held.id(),
                p.id(),
                p.root_names()
            ),
        );
        let new = !st.equivocations.iter().any(|e| e.digest == p.digest);
        if new {
            st.equivocations.push(p);
            st.equivocations
                .sort_by(|a, b| (a.version(), &a.digest).cmp(&(b.version(), &b.digest)));
        }
        return Ok(Stepped::Equivocation(new, refusal));
    }
    if v > top + 1 {
        let new = !st.waiting.iter().any(|w| w.digest == p.digest);
        if new {
            st.waiting.push(p);
            st.waiting
                .sort_by(|a, b| (a.version(), &a.digest).cmp(&(b.version(), &b.digest)));
        }
        return Ok(Stepped::Waiting(new));
    }
    match st.chain.last() {
        None => check_first(st, &p)?,
        Some(prev) => check_next(prev, &p)?,
    }
    let mut applied = vec![v];
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
        applied.push(next);
        st.chain.push(w);
    }
    Ok(Stepped::Applied(applied))
}

/// Takes a policy envelope into the store: checks it alone, then against the pins and the
/// chain ([`step`]); a version that extends the chain, one that waits, and a second valid one
/// of a version reached (refused with `POLICY_EQUIVOCATION`, and kept as evidence) are
/// appended to the log as a policy record; what the chain then grants is applied. Any other
/// refusal appends nothing.
pub fn admit(store: &Store, bytes: &[u8]) -> Result<Admitted, TrustError> {
    let p = policy::read(bytes)?;
    let _l = lock(store.root())?;
    // Read afresh under the lock: another process may have changed it.
    let mut st = fresh_state(store)?;
    let mut admitted = Admitted {
        id: p.id(),
        version: p.version(),
        effect: "noop",
        applied: Vec::new(),
        missing: None,
    };
    let canonical = p.canonical.clone();
    let top = st.chain.len() as u64;
    let stepped = step(&mut st, p)?;
    let append = |st: State| -> Result<(), TrustError> {
        store.append_trust_record(Kind::Policy, &canonical)?;
        store.keep_derived(Arc::new(st));
        Ok(())
    };
    match stepped {
        // Applying again finishes what a run stopped after appending the policy left.
        Stepped::Held => reconcile_state(store, &st)?,
        Stepped::Waiting(new) => {
            if new {
                append(st)?;
            }
            admitted.effect = "waiting";
            admitted.missing = Some(top + 1);
        }
        Stepped::Equivocation(new, refusal) => {
            if new {
                append(st)?;
            }
            return Err(refusal.into());
        }
        Stepped::Applied(versions) => {
            // The policy first, then what it grants: a run stopped between them is finished
            // by the next one (applying is idempotent).
            store.append_trust_record(Kind::Policy, &canonical)?;
            reconcile_state(store, &st)?;
            store.keep_derived(Arc::new(st));
            admitted.effect = "created";
            admitted.applied = versions;
        }
    }
    Ok(admitted)
}

/// What [`admit`] would do with a policy envelope, judged against `st` (the store's state,
/// read once by the caller) and writing nothing: the same answer (`created`, `waiting`,
/// `noop`) or the same refusal, an equivocation included. `st` is updated in memory as
/// `admit` would update the store, so a dry run of several policies judges each after the
/// ones before it.
pub fn predict(st: &mut State, bytes: &[u8]) -> Result<Admitted, TrustError> {
    let p = policy::read(bytes)?;
    let mut admitted = Admitted {
        id: p.id(),
        version: p.version(),
        effect: "noop",
        applied: Vec::new(),
        missing: None,
    };
    let top = st.chain.len() as u64;
    // The same rules as `admit` ([`step`]), on the caller's copy of the state.
    match step(st, p)? {
        Stepped::Held => {}
        Stepped::Waiting(_) => {
            admitted.effect = "waiting";
            admitted.missing = Some(top + 1);
        }
        Stepped::Equivocation(_, refusal) => return Err(refusal.into()),
        Stepped::Applied(versions) => {
            admitted.effect = "created";
            admitted.applied = versions;
        }
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

    fn root_pem(byte: u8) -> String {
        let sk = ed25519_dalek::SigningKey::from_bytes(&[byte; 32]);
        crate::keys::public_key_pem(&sk.verifying_key()).unwrap()
    }

    #[test]
    fn one_opening_reads_its_trust_once_and_sees_its_own_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let (store, _) =
            Store::init(tmp.path(), &Options::new(crate::store::TEST_LOCK_WAIT)).unwrap();
        pin(&store, &root_pem(7), Some("root")).unwrap();
        let first = state_of(&store).unwrap();
        assert_eq!(first.pins.len(), 1);
        // Read once: a record appended behind its back is not read again by this opening.
        let other = crate::store::record::Pin {
            keyid: "00".repeat(32),
            name: "behind".into(),
            public_key: root_pem(9),
        };
        store
            .append_trust_record(Kind::Pin, &crate::store::record::encode_event(&other))
            .unwrap();
        assert!(Arc::ptr_eq(&first, &state_of(&store).unwrap()));
        // A change made through this opening reads afresh and replaces what it kept.
        pin(&store, &root_pem(8), Some("root2")).unwrap();
        assert_eq!(state_of(&store).unwrap().pins.len(), 3);
        // A new opening folds the log's records.
        drop(store);
        let store = Store::open(tmp.path(), &Options::new(crate::store::TEST_LOCK_WAIT)).unwrap();
        let st = state_of(&store).unwrap();
        assert_eq!(st.pins.len(), 3);
        assert!(st.pins.iter().any(|p| p.name == "root2"));
        verify_records(&store).unwrap();
    }
}
