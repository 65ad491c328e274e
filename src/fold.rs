//! Status: the fold of docs/status.md.
//!
//! Status is a pure function of the *set* of accepted claims: nothing here reads arrival
//! order (except to list history), timestamps or the clock. A query reads only the claim's
//! neighbourhood: the records targeting it (recursively, for liveness) and its premises'
//! ancestry, memoized per [`Fold`]. Both edge kinds are acyclic because a claim can only
//! name ids that existed before it (docs/envelope.md); a cycle in stored data is reported as
//! corruption, never folded.
//!
//! The walks use explicit stacks, so a chain of any length cannot overflow the call stack.

use crate::claim::{Kind, Summary};
use crate::store::{StoreError, StoredClaim};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

mod ancestry;
pub mod dense;
pub use ancestry::QuickMemo;

/// Where the fold reads claims and edges from: the store, or memory in tests.
pub trait ClaimSource {
    /// The claim's header, the fields the fold reads.
    fn claim(&self, id: &str) -> Result<Option<StoredClaim>, StoreError>;
    /// The claim with its `anchor` and `assertion.{form,text}`, for scopes and carry-over.
    /// A source that keeps no claim text answers with an empty summary.
    fn claim_summary(&self, id: &str) -> Result<Option<StoredClaim<Summary>>, StoreError> {
        Ok(self.claim(id)?.map(|c| StoredClaim {
            claim: c.claim,
            body: Summary::default(),
            signers: c.signers,
            seq: c.seq,
        }))
    }
    /// [`ClaimSource::claim_summary`] of each id, in order. A source holding its claims in
    /// memory may work them out at once, on every core.
    fn claim_summaries(
        &self,
        ids: &[&str],
    ) -> Result<Vec<Option<StoredClaim<Summary>>>, StoreError> {
        ids.iter().map(|id| self.claim_summary(id)).collect()
    }
    /// Records whose `target` contains `id`.
    fn records_targeting(&self, id: &str) -> Result<Vec<String>, StoreError>;
    /// Claims whose `dependsOn` contains `id`.
    fn dependents(&self, id: &str) -> Result<Vec<String>, StoreError>;
    /// A claim that the source itself names (a stored claim's target or premise, a record
    /// targeting a claim, a dependent): None when the id is named and not stored. A store
    /// knows every id it names, so a lookup that cannot find the id at all is damage there.
    fn named_claim(&self, id: &str) -> Result<Option<StoredClaim>, StoreError> {
        self.claim(id)
    }
    /// What the source answers when it contradicts itself (`why`: a record it names is not
    /// stored, a cycle, which content addressing makes impossible): a store's index is then
    /// damaged, and marked so that the next command rebuilds it.
    fn contradiction(&self, why: String) -> StoreError {
        StoreError::Corrupt(why)
    }
    /// The keys the team's trust policy in force declares compromised, and that policy's id:
    /// a claim signed only by such keys is falsified by the policy. None: no compromise.
    fn compromise(&self) -> Option<Arc<Compromise>> {
        None
    }
    /// effective(id) of a stored claim, and of the premises it names, by a road quicker than
    /// the fold's walk when the source has one (a store reads its index by node number).
    /// None: the fold walks. Asked only when no compromise is in force; the answer must be
    /// the walk's, exactly.
    /// `memo` is the fold's, kept between its calls.
    fn quick_effective(
        &self,
        _id: &str,
        _memo: &mut QuickMemo,
    ) -> Result<Option<Vec<(String, Effective)>>, StoreError> {
        Ok(None)
    }
}

/// Keys declared compromised by a trust policy (`decided_by` names the policy, `tp_…`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Compromise {
    /// The policy's id, `tp_…`.
    pub policy: String,
    pub keys: std::collections::BTreeSet<String>,
}

impl Compromise {
    /// Whether every key that signed a claim (its authorising signatures) is compromised.
    pub fn takes_down(&self, signers: &[crate::ingest::Signer]) -> bool {
        !signers.is_empty() && signers.iter().all(|s| self.keys.contains(&s.keyid))
    }
}

/// Whether `id` names a trust policy (`tp_…`) rather than a claim: what `decided_by` holds
/// for a claim a compromise took down.
pub fn is_policy_id(id: &str) -> bool {
    id.starts_with("tp_")
}

impl ClaimSource for crate::store::Store {
    // The fold needs no claim text: read the index entry only, never the log.
    fn claim(&self, id: &str) -> Result<Option<StoredClaim>, StoreError> {
        self.get_fold(id)
    }
    fn claim_summary(&self, id: &str) -> Result<Option<StoredClaim<Summary>>, StoreError> {
        self.get_light(id)
    }
    fn compromise(&self) -> Option<Arc<Compromise>> {
        let st = crate::trust::state_of(self).ok()?;
        let keys = st.compromised();
        let policy = st.in_force()?.id();
        (!keys.is_empty()).then(|| Arc::new(Compromise { policy, keys }))
    }
    fn records_targeting(&self, id: &str) -> Result<Vec<String>, StoreError> {
        crate::store::Store::records_targeting(self, id)
    }
    fn dependents(&self, id: &str) -> Result<Vec<String>, StoreError> {
        crate::store::Store::dependents(self, id)
    }
    fn named_claim(&self, id: &str) -> Result<Option<StoredClaim>, StoreError> {
        self.get_fold_named(id)
    }
    fn contradiction(&self, why: String) -> StoreError {
        self.index_damaged(&why)
    }
    fn quick_effective(
        &self,
        id: &str,
        memo: &mut QuickMemo,
    ) -> Result<Option<Vec<(String, Effective)>>, StoreError> {
        ancestry::effective(self, id, memo)
    }
}

/// The store's claims read at once ([`crate::store::AllClaims`]): the same answers as the
/// store's, from memory.
impl ClaimSource for crate::store::AllClaims<'_> {
    fn claim(&self, id: &str) -> Result<Option<StoredClaim>, StoreError> {
        Ok(self.get_fold(id))
    }
    fn claim_summary(&self, id: &str) -> Result<Option<StoredClaim<Summary>>, StoreError> {
        self.get_light(id)
    }
    fn claim_summaries(
        &self,
        ids: &[&str],
    ) -> Result<Vec<Option<StoredClaim<Summary>>>, StoreError> {
        self.get_light_each(ids)
    }
    fn compromise(&self) -> Option<Arc<Compromise>> {
        ClaimSource::compromise(self.store())
    }
    fn records_targeting(&self, id: &str) -> Result<Vec<String>, StoreError> {
        Ok(crate::store::AllClaims::records_targeting(self, id))
    }
    fn dependents(&self, id: &str) -> Result<Vec<String>, StoreError> {
        Ok(crate::store::AllClaims::dependents(self, id))
    }
    fn named_claim(&self, id: &str) -> Result<Option<StoredClaim>, StoreError> {
        self.get_fold_named(id)
    }
    fn contradiction(&self, why: String) -> StoreError {
        self.store().index_damaged(&why)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum FoldError {
    #[error("unknown claim {0}")]
    NotFound(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Effective status values, exactly as reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Unevaluated,
    Verified,
    Falsified,
    Superseded,
    Revoked,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Unevaluated => "unevaluated",
            Status::Verified => "verified",
            Status::Falsified => "falsified",
            Status::Superseded => "superseded",
            Status::Revoked => "revoked",
        }
    }

    /// A record acts on its targets when its own status is one of these.
    pub fn is_live(self) -> bool {
        matches!(self, Status::Unevaluated | Status::Verified)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// own(c): what the records targeting c decide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Own {
    pub status: Status,
    /// The live records of the deciding kind (empty when unevaluated), sorted by id.
    pub decided_by: Vec<String>,
    /// Live residue-acceptances targeting c, sorted by id.
    pub accepted_by: Vec<String>,
}

/// effective(c) and, when revoked, why: for each falsified root, one shortest path from the
/// root to c (ties broken by the smaller sequence of ids, so the answer is deterministic).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effective {
    pub status: Status,
    pub causes: BTreeMap<String, Vec<String>>,
}

/// A memoizing fold over one source. Create one per command; it caches what it reads.
pub struct Fold<'s, S: ClaimSource> {
    src: &'s S,
    claims: HashMap<String, Option<Arc<StoredClaim>>>,
    records: HashMap<String, Arc<Vec<String>>>,
    premises: HashMap<String, Arc<Vec<String>>>,
    own: HashMap<String, Arc<Own>>,
    effective: HashMap<String, Arc<Effective>>,
    compromise: Option<Arc<Compromise>>,
    /// The source's own memo for [`ClaimSource::quick_effective`].
    quick: QuickMemo,
}

/// A shared, sorted list of claim ids (memoized edges).
type Ids = Arc<Vec<String>>;

fn cycle<S: ClaimSource>(src: &S, id: &str) -> FoldError {
    FoldError::Store(src.contradiction(format!(
        "claim {id} takes part in a cycle, which content addressing makes impossible"
    )))
}

impl<'s, S: ClaimSource> Fold<'s, S> {
    pub fn new(src: &'s S) -> Self {
        Fold {
            src,
            claims: HashMap::default(),
            records: HashMap::default(),
            premises: HashMap::default(),
            own: HashMap::default(),
            effective: HashMap::default(),
            compromise: src.compromise(),
            quick: QuickMemo::default(),
        }
    }

    pub fn source(&self) -> &'s S {
        self.src
    }

    /// Whether the team's trust policy declares a compromise this fold applies (read once,
    /// when the fold was made).
    pub fn has_compromise(&self) -> bool {
        self.compromise.is_some()
    }

    /// The stored claim, or None if the store has never seen it.
    pub fn claim(&mut self, id: &str) -> Result<Option<Arc<StoredClaim>>, FoldError> {
        if let Some(c) = self.claims.get(id) {
            return Ok(c.clone());
        }
        let c = self.src.claim(id)?.map(Arc::new);
        self.claims.insert(id.to_owned(), c.clone());
        Ok(c)
    }

    /// A claim that the source names ([`ClaimSource::named_claim`]): None when it is named
    /// and not stored.
    pub fn named(&mut self, id: &str) -> Result<Option<Arc<StoredClaim>>, FoldError> {
        if let Some(c) = self.claims.get(id) {
            return Ok(c.clone());
        }
        let c = self.src.named_claim(id)?.map(Arc::new);
        self.claims.insert(id.to_owned(), c.clone());
        Ok(c)
    }

    /// A claim that the source names as stored (a record targeting a claim, a dependent):
    /// one it does not hold is a contradiction, never a status.
    pub fn require_named(&mut self, id: &str) -> Result<Arc<StoredClaim>, FoldError> {
        match self.named(id)? {
            Some(c) => Ok(c),
            None => Err(FoldError::Store(self.src.contradiction(format!(
                "it names {id} as a stored claim and holds no entry for it"
            )))),
        }
    }

    /// The stored claim with its anchor and assertion summary (see
    /// [`ClaimSource::claim_summary`]), or NotFound. Not memoized: callers read it once.
    pub fn require_summary(&mut self, id: &str) -> Result<Arc<StoredClaim<Summary>>, FoldError> {
        self.src
            .claim_summary(id)?
            .map(Arc::new)
            .ok_or_else(|| FoldError::NotFound(id.to_owned()))
    }

    /// [`Fold::require_summary`] of each id, in order, asked of the source at once.
    pub fn require_summaries(
        &mut self,
        ids: &[&str],
    ) -> Result<Vec<Arc<StoredClaim<Summary>>>, FoldError> {
        let found = self.src.claim_summaries(ids)?;
        ids.iter()
            .zip(found)
            .map(|(id, c)| {
                c.map(Arc::new)
                    .ok_or_else(|| FoldError::NotFound((*id).to_owned()))
            })
            .collect()
    }

    /// The stored claim, or NotFound.
    pub fn require(&mut self, id: &str) -> Result<Arc<StoredClaim>, FoldError> {
        self.claim(id)?
            .ok_or_else(|| FoldError::NotFound(id.to_owned()))
    }

    /// Records targeting `id`, sorted by id.
    pub fn records(&mut self, id: &str) -> Result<Arc<Vec<String>>, FoldError> {
        if let Some(r) = self.records.get(id) {
            return Ok(r.clone());
        }
        let mut r = self.src.records_targeting(id)?;
        r.sort();
        r.dedup();
        let r = Arc::new(r);
        self.records.insert(id.to_owned(), r.clone());
        Ok(r)
    }

    /// Visits `root` and everything below it along `children` edges, children first, calling
    /// `finish` on each node not yet `done`. Iterative, so no chain length can overflow the
    /// stack; meeting a node that is still in progress is a cycle, which stored data cannot
    /// contain, so it is reported as corruption.
    fn post_order(
        &mut self,
        root: &str,
        done: fn(&Self, &str) -> bool,
        children: fn(&mut Self, &str) -> Result<Ids, FoldError>,
        finish: fn(&mut Self, &str, &[String]) -> Result<(), FoldError>,
    ) -> Result<(), FoldError> {
        let mut stack: Vec<(String, bool)> = vec![(root.to_owned(), false)];
        let mut in_progress: HashSet<String> = HashSet::default();
        while let Some((x, expanded)) = stack.pop() {
            if done(self, &x) {
                continue;
            }
            let kids = children(self, &x)?;
            if expanded {
                finish(self, &x, &kids)?;
                in_progress.remove(&x);
                continue;
            }
            in_progress.insert(x.clone());
            stack.push((x, true));
            for k in kids.iter() {
                if in_progress.contains(k) {
                    return Err(cycle(self.src, k));
                }
                if !done(self, k) {
                    stack.push((k.clone(), false));
                }
            }
        }
        Ok(())
    }

    /// own(id) for a stored claim: needs the own status of every record targeting it.
    pub fn own(&mut self, id: &str) -> Result<Arc<Own>, FoldError> {
        if let Some(o) = self.own.get(id) {
            return Ok(o.clone());
        }
        self.require(id)?;
        self.post_order(
            id,
            |f, x| f.own.contains_key(x),
            |f, x| f.records(x),
            Self::finish_own,
        )?;
        self.own.get(id).cloned().ok_or_else(|| cycle(self.src, id))
    }

    /// Decides own(x) once every record targeting it has its own status.
    fn finish_own(&mut self, x: &str, recs: &[String]) -> Result<(), FoldError> {
        let mut by_kind: BTreeMap<Kind, Vec<String>> = BTreeMap::new();
        for r in recs {
            let live = self
                .own
                .get(r)
                .map(|o| o.status.is_live())
                .ok_or_else(|| cycle(self.src, r))?;
            if !live {
                continue;
            }
            // The target index names only stored records; one that is missing is damage,
            // never a status.
            let rc = self.require_named(r)?;
            by_kind.entry(rc.claim.kind).or_default().push(r.clone());
        }
        let take = |k: Kind| by_kind.get(&k).cloned().unwrap_or_default();
        // Signed only by compromised keys: falsified by the policy that says so, whatever
        // the records say (it holds at every tree).
        let compromised = match self.compromise.clone() {
            Some(c) => self
                .named(x)?
                .is_some_and(|me| c.takes_down(&me.signers))
                .then(|| c.policy.clone()),
            None => None,
        };
        let (status, decided_by) = if let Some(policy) = compromised {
            (Status::Falsified, vec![policy])
        } else if by_kind.contains_key(&Kind::Falsification) {
            (Status::Falsified, take(Kind::Falsification))
        } else if by_kind.contains_key(&Kind::Supersession) {
            (Status::Superseded, take(Kind::Supersession))
        } else if by_kind.contains_key(&Kind::Verification) {
            (Status::Verified, take(Kind::Verification))
        } else {
            (Status::Unevaluated, Vec::new())
        };
        let accepted_by = take(Kind::ResidueAcceptance);
        self.own.insert(
            x.to_owned(),
            Arc::new(Own {
                status,
                decided_by,
                accepted_by,
            }),
        );
        Ok(())
    }

    /// effective(id) for a stored claim: needs the effective status of its premises.
    pub fn effective(&mut self, id: &str) -> Result<Arc<Effective>, FoldError> {
        if let Some(e) = self.effective.get(id) {
            return Ok(e.clone());
        }
        // The quicker road answers only for a stored claim (None otherwise): then the
        // claim need not be read here.
        if self.compromise.is_none() {
            if let Some(found) = self.src.quick_effective(id, &mut self.quick)? {
                for (x, e) in found {
                    self.effective.entry(x).or_insert_with(|| Arc::new(e));
                }
                if let Some(e) = self.effective.get(id) {
                    return Ok(e.clone());
                }
            }
        }
        self.require(id)?;
        self.post_order(
            id,
            |f, x| f.effective.contains_key(x),
            |f, x| f.present_premises(x),
            Self::finish_effective,
        )?;
        self.effective
            .get(id)
            .cloned()
            .ok_or_else(|| cycle(self.src, id))
    }

    /// Decides effective(x) once every premise has its effective status.
    fn finish_effective(&mut self, x: &str, premises: &[String]) -> Result<(), FoldError> {
        let own = self.own(x)?;
        let mut causes: BTreeMap<String, Vec<String>> = BTreeMap::new();
        if !matches!(own.status, Status::Falsified | Status::Superseded) {
            for p in premises {
                let pe = self
                    .effective
                    .get(p)
                    .cloned()
                    .ok_or_else(|| cycle(self.src, p))?;
                match pe.status {
                    Status::Falsified => offer(&mut causes, p, vec![p.clone(), x.to_owned()]),
                    Status::Revoked => {
                        for (root, path) in &pe.causes {
                            let mut longer = path.clone();
                            longer.push(x.to_owned());
                            offer(&mut causes, root, longer);
                        }
                    }
                    _ => {}
                }
            }
        }
        let status = if causes.is_empty() {
            own.status
        } else {
            Status::Revoked
        };
        self.effective
            .insert(x.to_owned(), Arc::new(Effective { status, causes }));
        Ok(())
    }

    /// Premises of `id` that the store holds, sorted.
    fn present_premises(&mut self, id: &str) -> Result<Arc<Vec<String>>, FoldError> {
        if let Some(p) = self.premises.get(id) {
            return Ok(p.clone());
        }
        let c = self.require(id)?;
        let mut out = Vec::new();
        for p in &c.claim.depends_on {
            if self.named(p)?.is_some() {
                out.push(p.clone());
            }
        }
        out.sort();
        out.dedup();
        let out = Arc::new(out);
        self.premises.insert(id.to_owned(), out.clone());
        Ok(out)
    }

    /// The full report of docs/status.md for one claim.
    pub fn report(&mut self, id: &str) -> Result<ClaimStatus, FoldError> {
        let stored = self.require(id)?;
        let own = self.own(id)?;
        let eff = self.effective(id)?;
        let c = &stored.claim;

        let mut missing = Vec::new();
        let mut stale = Vec::new();
        let mut premises: Vec<&String> = c.depends_on.iter().collect();
        premises.sort();
        premises.dedup();
        for p in premises {
            if self.named(p)?.is_none() {
                missing.push(p.clone());
            } else if self.effective(p)?.status == Status::Superseded {
                stale.push(p.clone());
            }
        }

        let mut decided_by_revoked = Vec::new();
        for r in own.decided_by.iter().filter(|r| !is_policy_id(r)) {
            let re = self.effective(r)?;
            if re.status == Status::Revoked {
                decided_by_revoked.push(RevokedRecord {
                    record: r.clone(),
                    revoked_by: causes_list(&re),
                });
            }
        }

        let mut history = Vec::new();
        for r in self.records(id)?.iter() {
            let rc = self.require_named(r)?;
            let ro = self.own(r)?;
            let re = self.effective(r)?;
            history.push(HistoryEntry {
                id: r.clone(),
                kind: rc.claim.kind.as_str(),
                tree: rc.claim.anchor_tree.clone(),
                seq: rc.seq,
                own_status: ro.status,
                status: re.status,
                live: ro.status.is_live(),
            });
        }
        history.sort_by_key(|h| h.seq);

        Ok(ClaimStatus {
            id: id.to_owned(),
            status: eff.status,
            own_status: own.status,
            kind: c.kind.as_str(),
            origin: c.origin.as_str(),
            producer: c.producer.clone(),
            signers: stored.signers.iter().map(|s| s.keyid.clone()).collect(),
            decided_by: own.decided_by.clone(),
            decided_by_revoked,
            revoked_by: causes_list(&eff),
            missing_premises: missing,
            stale_premises: stale,
            accepted: eff.status == Status::Unevaluated && !own.accepted_by.is_empty(),
            accepted_by: own.accepted_by.clone(),
            history,
            seq: stored.seq,
        })
    }
}

/// own(c) from the kinds of the live records targeting c, first match wins: a falsification,
/// else a supersession, else a verification (the rule `finish_own` applies; the index's own
/// walks call this so that the order is written once).
pub(crate) fn own_by_kinds(live: impl IntoIterator<Item = Kind>) -> Status {
    let (mut falsified, mut superseded, mut verified) = (false, false, false);
    for kind in live {
        match kind {
            Kind::Falsification => falsified = true,
            Kind::Supersession => superseded = true,
            Kind::Verification => verified = true,
            Kind::Assertion | Kind::ResidueAcceptance => {}
        }
    }
    if falsified {
        Status::Falsified
    } else if superseded {
        Status::Superseded
    } else if verified {
        Status::Verified
    } else {
        Status::Unevaluated
    }
}

/// Keeps the shorter path to a root (then the smaller sequence of ids).
fn offer(causes: &mut BTreeMap<String, Vec<String>>, root: &str, path: Vec<String>) {
    match causes.get(root) {
        Some(existing) if (existing.len(), existing) <= (path.len(), &path) => {}
        _ => {
            causes.insert(root.to_owned(), path);
        }
    }
}

fn causes_list(e: &Effective) -> Vec<Cause> {
    e.causes
        .iter()
        .map(|(root, path)| Cause {
            root: root.clone(),
            path: path.clone(),
        })
        .collect()
}

/// One falsified root that revokes a claim, and a shortest path from it to the claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct Cause {
    pub root: String,
    pub path: Vec<String>,
}

/// A deciding record that is itself revoked through its premises (DECIDED_BY_REVOKED_RECORD).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct RevokedRecord {
    pub record: String,
    pub revoked_by: Vec<Cause>,
}

/// A record targeting the claim, in arrival order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct HistoryEntry {
    pub id: String,
    #[cfg_attr(feature = "cli", schemars(with = "crate::claim::Kind"))]
    pub kind: &'static str,
    /// The tree the record is anchored to: for an observation (a verification,
    /// falsification or residue-acceptance), the tree it observed.
    pub tree: String,
    pub seq: u64,
    pub own_status: Status,
    pub status: Status,
    /// Whether the record acts on its targets now.
    pub live: bool,
}

/// Everything `elench status` reports for one claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct ClaimStatus {
    pub id: String,
    pub status: Status,
    pub own_status: Status,
    #[cfg_attr(feature = "cli", schemars(with = "crate::claim::Kind"))]
    pub kind: &'static str,
    #[cfg_attr(feature = "cli", schemars(with = "crate::claim::OriginKind"))]
    pub origin: &'static str,
    pub producer: String,
    pub signers: Vec<String>,
    pub decided_by: Vec<String>,
    pub decided_by_revoked: Vec<RevokedRecord>,
    pub revoked_by: Vec<Cause>,
    pub missing_premises: Vec<String>,
    pub stale_premises: Vec<String>,
    pub accepted: bool,
    pub accepted_by: Vec<String>,
    pub history: Vec<HistoryEntry>,
    pub seq: u64,
}
