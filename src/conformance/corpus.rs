//! Running a conformance corpus (docs/conformance-corpus.md) against this implementation and
//! declaring the result in the shape of `conformance-declaration.schema.json`.
//!
//! The declared set of specification files is [`DECLARED_SCOPES`]: the runner runs a case
//! exactly when its scope is in that constant, and the declaration's `declared_tables` is
//! read from the same constant (`declaration_source: derived-from-runner`), so narrowing what
//! is declared is a code change, never an edit to a list beside the runner.

use crate::fold::Fold;
use crate::graph::blast;
use crate::ingest::verify_envelope;
use crate::keys::{read_public_key_pem, Role, TrustedKey};
use crate::reaper::Reaper;
use crate::scratch::ScratchDir;
use crate::store::Store;
use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The specification files this implementation runs cases for.
pub const DECLARED_SCOPES: &[&str] = &[
    "specs/blast.json",
    "specs/claim-id.json",
    "specs/claim.schema.json",
    "specs/envelope.json",
    "specs/fold.json",
    "specs/roles.json",
];

/// A case's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", content = "detail", rename_all = "kebab-case")]
pub enum Verdict {
    Pass,
    Fail(String),
    NotApplicable,
    Error(String),
}

#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    pub id: String,
    pub scope: String,
    #[serde(flatten)]
    pub verdict: Verdict,
}

#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    #[error("{path}: {message}")]
    Manifest { path: PathBuf, message: String },
}

/// A corpus manifest: its JSON, its (case id, scope) pairs in order, and its exact bytes.
pub struct Manifest {
    pub json: Value,
    pub cases: Vec<(String, String)>,
    pub bytes: Vec<u8>,
}

/// Reads `manifest.json` of the corpus in `dir`.
pub fn read_manifest(dir: &Path) -> Result<Manifest, CorpusError> {
    let path = dir.join("manifest.json");
    let err = |message: String| CorpusError::Manifest {
        path: path.clone(),
        message,
    };
    let bytes = std::fs::read(&path).map_err(|e| err(e.to_string()))?;
    let manifest = crate::json::parse_strict(&bytes).map_err(|e| err(e.to_string()))?;
    let cases = manifest
        .get("cases")
        .and_then(Value::as_array)
        .ok_or_else(|| err("no `cases` array".into()))?;
    let mut out = Vec::with_capacity(cases.len());
    for (i, c) in cases.iter().enumerate() {
        let id = c.get("id").and_then(Value::as_str);
        let scope = c.get("scope").and_then(Value::as_str);
        match (id, scope) {
            (Some(id), Some(scope)) => out.push((id.to_owned(), scope.to_owned())),
            _ => return Err(err(format!("/cases/{i} needs a string `id` and `scope`"))),
        }
    }
    Ok(Manifest {
        json: manifest,
        cases: out,
        bytes,
    })
}

/// Runs every case of the corpus in `dir`; `progress` hears each verdict as it is reached.
/// Each case's scratch store is listed with `reaper` while it lives.
pub fn run(
    dir: &Path,
    reaper: &Arc<Reaper>,
    mut progress: impl FnMut(&CaseResult),
) -> Result<(Value, Vec<CaseResult>), CorpusError> {
    let manifest = read_manifest(dir)?;
    let mut results = Vec::with_capacity(manifest.cases.len());
    for (id, scope) in manifest.cases.iter().cloned() {
        let verdict = if !DECLARED_SCOPES.contains(&scope.as_str()) {
            Verdict::NotApplicable
        } else {
            run_case(&dir.join(&id), reaper)
        };
        let r = CaseResult { id, scope, verdict };
        progress(&r);
        results.push(r);
    }
    let declaration = declare(&manifest.json, &manifest.bytes, &results);
    Ok((declaration, results))
}

/// The conformance declaration for a run.
pub fn declare(manifest: &Value, manifest_bytes: &[u8], results: &[CaseResult]) -> Value {
    let ids = |pred: fn(&Verdict) -> bool| -> Vec<String> {
        results
            .iter()
            .filter(|r| pred(&r.verdict))
            .map(|r| r.id.clone())
            .collect()
    };
    let passed = ids(|v| matches!(v, Verdict::Pass));
    let failed = ids(|v| matches!(v, Verdict::Fail(_)));
    let not_applicable = ids(|v| matches!(v, Verdict::NotApplicable));
    let error = ids(|v| matches!(v, Verdict::Error(_)));
    let mut tables: Vec<&str> = DECLARED_SCOPES.to_vec();
    tables.sort();
    let mut d = json!({
        "runtime": "elench",
        "commons_commit": hex::encode(Sha256::digest(manifest_bytes)),
        "declared_tables": tables,
        "declaration_source": "derived-from-runner",
        "measured_date": today(),
        "result": {
            "total": results.len(),
            "passed": passed.len(),
            "failed": failed.len(),
            "not_applicable": not_applicable.len(),
            "error": error.len(),
            "match": "exact-within-scope",
        },
        "failed_cases": failed,
        "error_cases": error,
        "not_applicable_cases": not_applicable,
        "notes": format!(
            "elench {} against the corpus whose manifest.json has the SHA-256 given as commons_commit",
            env!("CARGO_PKG_VERSION")
        ),
    });
    if let Some(v) = manifest.get("version").and_then(Value::as_str) {
        d["commons_version"] = json!(v);
    }
    d
}

/// Today's date (UTC) as YYYY-MM-DD.
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    format!("{y:04}-{m:02}-{d:02}")
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Runs one case: Pass, Fail with what differed, or Error when it could not be run.
pub fn run_case(case: &Path, reaper: &Arc<Reaper>) -> Verdict {
    match try_case(case, reaper) {
        Ok(None) => Verdict::Pass,
        Ok(Some(diff)) => Verdict::Fail(diff),
        Err(e) => Verdict::Error(e),
    }
}

fn read_json(path: &Path) -> Result<Value, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    crate::json::parse_strict(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// Ok(None) = pass, Ok(Some(why)) = fail, Err = could not run.
fn try_case(case: &Path, reaper: &Arc<Reaper>) -> Result<Option<String>, String> {
    let expected = read_json(&case.join("expected.json"))?;
    let keys = read_json(&case.join("keys.json"))?;
    let inputs: Vec<String> = expected
        .get("inputs")
        .and_then(Value::as_array)
        .ok_or("expected.json: no `inputs` array")?
        .iter()
        .map(|v| {
            v.as_str()
                .map(str::to_owned)
                .ok_or("expected.json: an input is not a string")
        })
        .collect::<Result<_, _>>()?;
    let expect = expected.get("expect").ok_or("expected.json: no `expect`")?;
    let kind = expect
        .get("kind")
        .and_then(Value::as_str)
        .ok_or("expected.json: no `expect.kind`")?;

    let scratch = ScratchDir::create("elench-conformance", reaper).map_err(|e| e.to_string())?;
    let (store, _) = Store::init(
        scratch.path(),
        &crate::store::Options::new(Duration::from_secs(10)),
    )
    .map_err(|e| e.to_string())?;
    for (i, k) in keys
        .as_array()
        .ok_or("keys.json: not an array")?
        .iter()
        .enumerate()
    {
        let role: Role = k
            .get("role")
            .and_then(Value::as_str)
            .ok_or(format!("keys.json /{i}: no role"))?
            .parse()?;
        let name = k.get("name").and_then(Value::as_str).unwrap_or("key");
        let file = k
            .get("public_key")
            .and_then(Value::as_str)
            .ok_or(format!("keys.json /{i}: no public_key"))?;
        let pem = std::fs::read_to_string(case.join(file)).map_err(|e| format!("{file}: {e}"))?;
        let vk = read_public_key_pem(&pem).map_err(|e| format!("{file}: {e}"))?;
        let key = TrustedKey::new(role, name, vk).map_err(|e| format!("{file}: {e}"))?;
        store.add_key(&key).map_err(|e| e.to_string())?;
        if k.get("retired").and_then(Value::as_bool) == Some(true) {
            store.retire_key(&key.keyid).map_err(|e| e.to_string())?;
        }
    }

    // Add every input in order, noting each verdict.
    let mut verdicts: Vec<(String, Result<String, String>)> = Vec::new();
    for input in &inputs {
        let bytes = std::fs::read(case.join(input)).map_err(|e| format!("{input}: {e}"))?;
        let bytes = bytes.trim_ascii();
        let trust = store.trust_set().map_err(|e| e.to_string())?;
        match verify_envelope(bytes, &trust) {
            Ok(accepted) => {
                store.add(&accepted, bytes).map_err(|e| e.to_string())?;
                verdicts.push((input.clone(), Ok(accepted.claim.id)));
            }
            Err(r) => verdicts.push((input.clone(), Err(r.code.as_str().to_owned()))),
        }
    }

    let mut diffs = Vec::new();
    if kind != "verdicts" {
        for (input, v) in &verdicts {
            if let Err(code) = v {
                diffs.push(format!(
                    "{input} was rejected ({code}) but must be accepted"
                ));
            }
        }
    }
    match kind {
        "verdicts" => {
            let want = expect
                .get("verdicts")
                .and_then(Value::as_array)
                .ok_or("expected.json: no `verdicts`")?;
            for w in want {
                let input = w
                    .get("input")
                    .and_then(Value::as_str)
                    .ok_or("a verdict has no input")?;
                let accept = w
                    .get("accept")
                    .and_then(Value::as_bool)
                    .ok_or("a verdict has no accept")?;
                let got = verdicts
                    .iter()
                    .find(|(i, _)| i == input)
                    .map(|(_, v)| v)
                    .ok_or(format!("verdict for {input}, which is not an input"))?;
                match (accept, got) {
                    (true, Ok(_)) => {}
                    (true, Err(code)) => {
                        diffs.push(format!("{input}: rejected with {code}, expected accepted"))
                    }
                    (false, Ok(_)) => {
                        diffs.push(format!("{input}: accepted, expected a rejection"))
                    }
                    (false, Err(code)) => {
                        let want_code = w.get("code").and_then(Value::as_str).unwrap_or_default();
                        if code != want_code {
                            diffs.push(format!(
                                "{input}: rejected with {code}, expected {want_code}"
                            ));
                        }
                    }
                }
            }
        }
        "status" => {
            let claims = expect
                .get("claims")
                .and_then(Value::as_object)
                .ok_or("expected.json: no `claims`")?;
            let mut fold = Fold::new(&store);
            for (id, want) in claims {
                let want = want.as_str().ok_or("a status is not a string")?;
                match fold.report(id) {
                    Ok(r) if r.status.as_str() == want => {}
                    Ok(r) => diffs.push(format!("{id}: status {}, expected {want}", r.status)),
                    Err(e) => diffs.push(format!("{id}: {e}")),
                }
            }
            for id in expect
                .get("accepted")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let id = id.as_str().ok_or("an accepted id is not a string")?;
                match fold.report(id) {
                    Ok(r) if r.accepted => {}
                    Ok(_) => diffs.push(format!("{id}: not reported accepted")),
                    Err(e) => diffs.push(format!("{id}: {e}")),
                }
            }
        }
        "blast" => {
            let root = expect
                .get("root")
                .and_then(Value::as_str)
                .ok_or("no blast root")?;
            let depth = expect
                .get("depth")
                .and_then(Value::as_u64)
                .map(|d| d as usize);
            let mut fold = Fold::new(&store);
            match blast(&mut fold, root, depth) {
                Err(e) => diffs.push(format!("blast {root}: {e}")),
                Ok(b) => {
                    let layers: Vec<Vec<String>> = b
                        .layers
                        .iter()
                        .map(|l| l.claims.iter().map(|m| m.id.clone()).collect())
                        .collect();
                    let want_layers: Vec<Vec<String>> = serde_json::from_value(
                        expect.get("layers").cloned().unwrap_or(Value::Null),
                    )
                    .map_err(|e| format!("expected.json layers: {e}"))?;
                    if layers != want_layers {
                        diffs.push(format!("layers {layers:?}, expected {want_layers:?}"));
                    }
                    let affected: Vec<String> = b.affected.iter().map(|a| a.id.clone()).collect();
                    let want_affected: Vec<String> = serde_json::from_value(
                        expect.get("affected").cloned().unwrap_or(json!([])),
                    )
                    .map_err(|e| format!("expected.json affected: {e}"))?;
                    if affected != want_affected {
                        diffs.push(format!("affected {affected:?}, expected {want_affected:?}"));
                    }
                }
            }
        }
        other => return Err(format!("expected.json: unknown expect.kind {other:?}")),
    }
    Ok((!diffs.is_empty()).then(|| diffs.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_424), (2025, 12, 2));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
