//! How an envelope becomes a record to append, the one way every writer does it (`add`,
//! `claim`, `check`, `pull`, and a rebuild reading the log back): its bytes read (canonical
//! text the fast way, any other as JSON once), verified against a trust state, and put in
//! the canonical form the log keeps, with its digest; and what appending a group would do,
//! for a dry run.

use super::{record, Effect, Store, StoreError};
use crate::envelope::Envelope;
use crate::error::{Code, Rejection};
use crate::ingest::{verify_for_store, verify_json, Accepted};
use crate::keys::TrustSet;
use std::borrow::Cow;
use std::collections::HashSet;

/// An envelope verified (outside the lock) and ready to append.
#[derive(Debug, Clone)]
pub struct Staged {
    pub canonical: Vec<u8>,
    pub digest: [u8; 32],
    pub accepted: Accepted,
    /// The trust generation (number of trust events) it was verified under.
    pub trust_generation: u64,
}

/// An envelope's bytes, read as JSON: the verdict of the checks, and its canonical form
/// (None when it has none).
pub struct Reading<'a> {
    pub verdict: Result<Accepted, Rejection>,
    pub canonical: Option<Cow<'a, [u8]>>,
}

/// Reads an envelope's bytes for the log. Text already in canonical form (as `elench sign`
/// and the log keep it) is read without building its JSON value and is its own canonical
/// form; any other is read as JSON once, for the checks and for the canonical form. An error
/// when the bytes are not a JSON envelope at all (what [`Envelope::parse_json`] says).
pub fn read<'a>(bytes: &'a [u8], trust: &TrustSet) -> Result<Reading<'a>, Rejection> {
    if let Some((envelope, text)) = Envelope::from_canonical(bytes) {
        return Ok(Reading {
            verdict: verify_for_store(envelope, trust),
            canonical: Some(Cow::Borrowed(text)),
        });
    }
    let json = Envelope::parse_json(bytes)?;
    Ok(Reading {
        verdict: verify_json(&json, trust),
        canonical: record::canonical_of(&json).ok().map(Cow::Owned),
    })
}

impl Staged {
    /// An envelope's bytes verified against `trust` (of trust generation `generation`) and
    /// staged to append, or why not.
    pub fn new(bytes: &[u8], trust: &TrustSet, generation: u64) -> Result<Staged, Rejection> {
        Staged::of(read(bytes, trust)?, generation)
    }

    /// A [`Reading`] staged to append, or why not.
    pub fn of(reading: Reading<'_>, generation: u64) -> Result<Staged, Rejection> {
        let accepted = reading.verdict?;
        let canonical = reading.canonical.ok_or_else(|| {
            Rejection::new(
                Code::BadEnvelope,
                "the envelope verified but has no canonical JSON form",
            )
        })?;
        Ok(Staged {
            digest: record::envelope_digest(&canonical),
            canonical: canonical.into_owned(),
            accepted,
            trust_generation: generation,
        })
    }
}

/// What a dry run has judged so far: the claims and envelopes it would have added (a run may
/// judge many groups).
#[derive(Debug, Default)]
pub struct DryRun {
    claims: HashSet<String>,
    envelopes: HashSet<[u8; 32]>,
}

impl Store {
    /// What [`Store::commit_group`] would do with `group`, from what the store holds and what
    /// `so_far` has judged, writing nothing: an envelope stored or judged already is a no-op,
    /// one of a claim stored or judged already merges, any other creates its claim.
    pub fn predict_group(
        &self,
        group: &[Staged],
        so_far: &mut DryRun,
    ) -> Result<Vec<Result<Effect, Rejection>>, StoreError> {
        let mut effects = Vec::with_capacity(group.len());
        for s in group {
            let id = &s.accepted.claim.id;
            let effect =
                if self.holds_envelope(id, &s.digest)? || !so_far.envelopes.insert(s.digest) {
                    Effect::Noop
                } else if self.contains(id)? || !so_far.claims.insert(id.clone()) {
                    Effect::Merged
                } else {
                    Effect::Created
                };
            effects.push(Ok(effect));
        }
        Ok(effects)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{read_public_key_pem, Role, TrustedKey};

    const AGENT_PUB: &str = include_str!("../../fixtures/demo/agent.pub");
    const PARSE: &str = include_str!("../../fixtures/demo/1-parse-rejects-empty.dsse");
    const LOADER: &str = include_str!("../../fixtures/demo/2-config-loader-total.dsse");

    fn agent() -> TrustedKey {
        let vk = read_public_key_pem(AGENT_PUB).unwrap();
        TrustedKey::new(Role::Agent, "demo-agent", vk).unwrap()
    }

    #[test]
    fn any_spelling_of_an_envelope_is_staged_in_its_one_canonical_form() {
        let trust = TrustSet::new(vec![agent()]);
        let compact = Staged::new(PARSE.trim().as_bytes(), &trust, 3).unwrap();
        let value: serde_json::Value = serde_json::from_str(PARSE).unwrap();
        let pretty = serde_json::to_string_pretty(&value).unwrap();
        let spelled = Staged::new(pretty.as_bytes(), &trust, 3).unwrap();
        assert_eq!(compact.canonical, spelled.canonical);
        assert_eq!(compact.digest, spelled.digest);
        assert_eq!(
            compact.digest,
            record::envelope_digest(PARSE.trim().as_bytes())
        );
        assert_eq!(compact.accepted.claim.id, spelled.accepted.claim.id);
        assert_eq!(compact.trust_generation, 3);
        // Not canonical as written, so a rebuild would refuse it as stored.
        let reading = read(pretty.as_bytes(), &trust).unwrap();
        assert_ne!(reading.canonical.as_deref(), Some(pretty.as_bytes()));
        // Without the signer's key nothing is staged; bytes that are not JSON are no reading.
        let refused = Staged::new(PARSE.as_bytes(), &TrustSet::new(Vec::new()), 0);
        assert!(refused.is_err());
        assert_eq!(
            read(b"not json", &trust).err().map(|r| r.code),
            Some(Code::BadJson)
        );
    }

    #[test]
    fn a_prediction_counts_what_the_store_holds_and_what_the_run_judged() {
        let dir = crate::scratch::ScratchDir::new("elench-stage");
        let options = super::super::Options::new(std::time::Duration::from_secs(5));
        let (store, _) = Store::init(&dir.path().join("store"), &options).unwrap();
        store.add_key(&agent()).unwrap();
        let (trust, generation) = store.trust_snapshot().unwrap();
        let parse = Staged::new(PARSE.as_bytes(), &trust, generation).unwrap();
        let loader = Staged::new(LOADER.as_bytes(), &trust, generation).unwrap();
        let group = vec![parse.clone(), parse.clone(), loader.clone()];
        let effects = |r: Vec<Result<Effect, Rejection>>| -> Vec<Effect> {
            r.into_iter().map(Result::unwrap).collect()
        };
        let mut run = DryRun::default();
        let predicted = effects(store.predict_group(&group, &mut run).unwrap());
        assert_eq!(predicted, [Effect::Created, Effect::Noop, Effect::Created]);
        // Nothing was written, and a later group of the same run knows what it judged.
        assert_eq!(store.count().unwrap(), 0);
        let again = effects(
            store
                .predict_group(std::slice::from_ref(&loader), &mut run)
                .unwrap(),
        );
        assert_eq!(again, [Effect::Noop]);
        // The prediction is what the append then does.
        let done = effects(store.commit_group(group.clone()).unwrap());
        assert_eq!(done, predicted);
        let after = effects(store.predict_group(&group, &mut DryRun::default()).unwrap());
        assert_eq!(after, [Effect::Noop, Effect::Noop, Effect::Noop]);
    }
}
