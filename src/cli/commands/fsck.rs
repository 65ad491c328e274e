//! `elench fsck`: re-verify every stored envelope and every index entry.

use super::common::open_store;
use crate::cli::failure::Failure;
use crate::cli::output::Report;
use crate::cli::Globals;
use crate::ingest::verify_envelope;
use crate::keys::TrustSet;
use crate::store::{Index, Store};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};

#[derive(Debug, clap::Args)]
pub struct FsckArgs {}

struct Problems(Vec<Value>);

impl Problems {
    fn add(&mut self, code: &str, id: &str, message: String) {
        self.0
            .push(json!({"code": code, "id": id, "message": message}));
    }
}

pub fn run(_a: FsckArgs, g: &Globals) -> Result<Report, Failure> {
    let store = open_store(g)?;
    let (checked, entries, problems) = check(&store)?;
    let mut text = format!(
        "checked {checked} claims and {entries} index entries: {} problem(s)\n",
        problems.len()
    );
    for p in &problems {
        text.push_str(&format!(
            "  {} {}: {}\n",
            p["code"].as_str().unwrap_or_default(),
            p["id"].as_str().unwrap_or_default(),
            p["message"].as_str().unwrap_or_default()
        ));
    }
    let failure = (!problems.is_empty()).then(|| Failure::Invalid {
        code: "FSCK_PROBLEMS",
        message: format!(
            "the store has {} problem(s); see data.problems",
            problems.len()
        ),
    });
    Ok(Report {
        data: json!({"claims_checked": checked, "index_entries_checked": entries, "problems": problems}),
        text,
        failure,
        ..Report::default()
    })
}

/// Returns (claims checked, index entries checked, problems).
pub fn check(store: &Store) -> Result<(usize, usize, Vec<Value>), Failure> {
    let mut p = Problems(Vec::new());
    // Claims accepted before a key was retired stay valid: re-verify with every key.
    let trust = match store.trust_set() {
        Ok(t) => TrustSet::new(
            t.keys()
                .iter()
                .cloned()
                .map(|mut k| {
                    k.retired = false;
                    k
                })
                .collect(),
        ),
        Err(e) => {
            p.add("KEYS_UNREADABLE", "", e.to_string());
            TrustSet::default()
        }
    };
    let ids = store.claim_ids()?;
    let id_set: HashSet<&str> = ids.iter().map(String::as_str).collect();
    let targets: HashSet<(String, String)> =
        store.index_entries(Index::Target)?.into_iter().collect();
    let premises: HashSet<(String, String)> =
        store.index_entries(Index::Premise)?.into_iter().collect();
    let count = store.count()?;
    let mut seqs = HashSet::new();

    // What each readable claim names, kept for the index checks below.
    let mut named: HashMap<&str, (Vec<String>, Vec<String>)> = HashMap::new();
    for id in &ids {
        let stored = match store.get(id) {
            Ok(Some(stored)) => stored,
            Ok(None) => continue, // listed a moment ago; the store is ours alone, so not reached
            Err(e) => {
                p.add("CLAIM_UNREADABLE", id, e.to_string());
                continue;
            }
        };
        match store.envelope(id)? {
            None => p.add(
                "ENVELOPE_MISSING",
                id,
                "no envelope stored for this claim".into(),
            ),
            Some(env) => match verify_envelope(&env, &trust) {
                Err(r) => p.add(
                    r.code.as_str(),
                    id,
                    format!("stored envelope no longer verifies: {}", r.message),
                ),
                Ok(a) if a.claim.id != *id => p.add(
                    "ID_MISMATCH",
                    id,
                    format!("stored under {id} but its envelope carries {}", a.claim.id),
                ),
                Ok(a) if a.claim != stored.claim => p.add(
                    "CLAIM_DIFFERS",
                    id,
                    "the stored claim differs from the one its envelope carries".into(),
                ),
                Ok(_) => {}
            },
        }
        match store.arrivals(stored.seq, 1)?.first() {
            Some((s, other)) if *s == stored.seq && other == id => {}
            _ => p.add(
                "ARRIVAL_MISSING",
                id,
                format!("no arrival entry #{} for it", stored.seq),
            ),
        }
        if !seqs.insert(stored.seq) || stored.seq >= count {
            p.add(
                "ARRIVAL_INVALID",
                id,
                format!(
                    "arrival number {} is repeated or beyond the counter",
                    stored.seq
                ),
            );
        }
        for t in &stored.claim.target {
            if !targets.contains(&(t.clone(), id.clone())) {
                p.add(
                    "INDEX_MISSING",
                    id,
                    format!("no target index entry for target {t}"),
                );
            }
        }
        for d in &stored.claim.depends_on {
            if !premises.contains(&(d.clone(), id.clone())) {
                p.add(
                    "INDEX_MISSING",
                    id,
                    format!("no premise index entry for premise {d}"),
                );
            }
        }
        named.insert(id, (stored.claim.target, stored.claim.depends_on));
    }
    for (entries, field) in [(&targets, "target"), (&premises, "dependsOn")] {
        for (first, second) in entries {
            if !id_set.contains(second.as_str()) {
                p.add(
                    "INDEX_DANGLING",
                    second,
                    format!("{field} index entry for {first} names a claim that is not stored"),
                );
                continue;
            }
            let names = named
                .get(second.as_str())
                .is_some_and(|(target, premises)| {
                    let list = if field == "target" { target } else { premises };
                    list.contains(first)
                });
            if !names {
                p.add(
                    "INDEX_WRONG",
                    second,
                    format!("{field} index entry says it names {first}, but it does not"),
                );
            }
        }
    }
    let arrivals = store.arrivals(0, usize::MAX)?;
    for (seq, id) in &arrivals {
        if !id_set.contains(id.as_str()) {
            p.add(
                "ARRIVAL_DANGLING",
                id,
                format!("arrival #{seq} names a claim that is not stored"),
            );
        }
    }
    if arrivals.len() as u64 != count || ids.len() as u64 != count {
        p.add(
            "COUNT_MISMATCH",
            "",
            format!(
                "counter says {count}, {} arrivals, {} claims",
                arrivals.len(),
                ids.len()
            ),
        );
    }
    Ok((ids.len(), targets.len() + premises.len(), p.0))
}
