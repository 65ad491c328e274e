//! Writes `fixtures/conformance/`: the portable conformance corpus of the elench claim format
//! (docs/conformance-corpus.md): `manifest.json`, `specs/*.json`, one folder per case.
//!
//! Keys come from fixed seeds, timestamps are fixed and Ed25519 signatures are deterministic,
//! so running this again reproduces the corpus byte for byte.
//!
//! Every expectation is written here as a literal derived from the rules of the manual in docs/
//! (envelope, claims, status, blast: the verdict and error code, the status of each claim, the blast layers). Before
//! anything is written, each case is run against elench itself (ingest, store, fold, blast)
//! and the generator panics on any disagreement, so a shipped expectation is both what the
//! design says and what elench does.
//!
//!     cargo run --example make_conformance_corpus -- fixtures/conformance

use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use base64::Engine;
use ed25519_dalek::{Signer, SigningKey};
use elench::envelope::{pae, MAX_ENVELOPE_BYTES, PAYLOAD_TYPE, PREDICATE_TYPE, STATEMENT_TYPE};
use elench::fold::Fold;
use elench::ingest::verify_envelope;
use elench::keys::{keyid, public_key_pem, Role, TrustSet, TrustedKey};
use elench::store::Store;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The tree every claim is about (the tree OID of an imaginary checkout).
const TREE: &str = "3c5e8a1f0b7d2946e1a3c5f7092b4d6e8f0a1c3e5b7d9f1a2c4e6a8b0d2f4a6c";
/// Another tree, for subject mismatches.
const TREE2: &str = "9a8b7c6d5e4f30211f2e3d4c5b6a79880a1b2c3d4e5f60718293a4b5c6d7e8f9";
/// 2026-01-01T00:00:00Z; every case counts up from here, a minute per claim.
const T0: i64 = 1_767_225_600;

const OK: Option<&str> = None;

// ---------------------------------------------------------------------------------------------
// keys

#[derive(Clone)]
struct Key {
    name: &'static str,
    role: Role,
    sk: SigningKey,
}

impl Key {
    fn new(name: &'static str, role: Role) -> Key {
        let seed: [u8; 32] = Sha256::digest(format!("elench conformance key: {name}")).into();
        Key {
            name,
            role,
            sk: SigningKey::from_bytes(&seed),
        }
    }
    fn keyid(&self) -> String {
        keyid(&self.sk.verifying_key())
    }
}

struct Keys {
    bot: Key,
    ci: Key,
    alice: Key,
    old_ci: Key,
    mallory: Key,
}

// ---------------------------------------------------------------------------------------------
// claim ids, statements, envelopes (built by hand, independently of elench's signing helpers)

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// RFC 8785 canonical text.
fn jcs(v: &Value) -> Vec<u8> {
    elench::jcs::canonical(v).expect("canonicalize")
}

/// docs/envelope.md: "cl_" + hex SHA-256 of the JCS form of the claim without its `id` member.
fn claim_id(claim: &Value) -> String {
    let mut obj = claim.as_object().expect("claim object").clone();
    obj.remove("id");
    format!("cl_{}", sha256_hex(&jcs(&Value::Object(obj))))
}

/// The claim with `id` (first member) set to `id`.
fn with_id_member(claim: &Value, id: &str) -> Value {
    let mut out = Map::new();
    out.insert("id".into(), json!(id));
    for (k, v) in claim.as_object().expect("claim object") {
        if k != "id" {
            out.insert(k.clone(), v.clone());
        }
    }
    Value::Object(out)
}

/// The claim with its correct id.
fn identified(claim: &Value) -> (String, Value) {
    let id = claim_id(claim);
    let v = with_id_member(claim, &id);
    (id, v)
}

fn statement(predicate: &Value, subject_tree: &str) -> Value {
    json!({
        "_type": STATEMENT_TYPE,
        "subject": [{"name": "tree", "digest": {"gitTree": subject_tree}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": predicate,
    })
}

fn sig_b64(key: &Key, payload_type: &str, payload: &[u8]) -> String {
    STANDARD.encode(key.sk.sign(&pae(payload_type, payload)).to_bytes())
}

/// A DSSE envelope over `payload`, one signature per key, keyid hint = the key's keyid.
fn envelope(payload_type: &str, payload: &[u8], signers: &[&Key]) -> Value {
    let sigs: Vec<Value> = signers
        .iter()
        .map(|k| json!({"keyid": k.keyid(), "sig": sig_b64(k, payload_type, payload)}))
        .collect();
    json!({"payloadType": payload_type, "payload": STANDARD.encode(payload), "signatures": sigs})
}

fn text(v: &Value) -> Vec<u8> {
    format!("{v}\n").into_bytes()
}

fn origin_of(role: Role) -> &'static str {
    match role {
        Role::Harness => "harness-observed",
        Role::Agent => "agent-asserted",
        Role::Human => "human-asserted",
        Role::Log => unreachable!("the corpus signs no claim with a log key"),
    }
}

fn producer_of(role: Role) -> Value {
    match role {
        Role::Harness => json!({"id": "ci-runner/2.0", "hermeticity": "container"}),
        Role::Agent => json!({"id": "bot/1.0", "sessionId": "session-7"}),
        Role::Human => json!({"id": "alice"}),
        Role::Log => unreachable!("the corpus signs no claim with a log key"),
    }
}

/// A claim (without id): annotation text, origin from `role`, premises and targets.
fn claim_value(
    kind: &str,
    role: Role,
    text: &str,
    targets: &[&str],
    deps: &[&str],
    t: i64,
) -> Value {
    let mut m = Map::new();
    m.insert("kind".into(), json!(kind));
    if kind != "assertion" || !targets.is_empty() {
        m.insert("target".into(), json!(targets));
    }
    m.insert(
        "assertion".into(),
        json!({"form": "annotation", "text": text}),
    );
    m.insert(
        "origin".into(),
        json!({"kind": origin_of(role), "producer": producer_of(role)}),
    );
    m.insert(
        "anchor".into(),
        json!({"tree": TREE, "strategy": "multi", "path": "src/parse.rs"}),
    );
    m.insert("timestamp".into(), json!(t));
    if role == Role::Harness && kind != "assertion" {
        m.insert(
            "evidence".into(),
            json!([{"kind": "test-report", "digest": sha256_hex(text.as_bytes()), "uri": "reports/run.xml"}]),
        );
    }
    if !deps.is_empty() {
        m.insert("dependsOn".into(), json!(deps));
    }
    Value::Object(m)
}

// ---------------------------------------------------------------------------------------------
// cases

enum Expect {
    None,
    /// One entry per input: None = accepted, Some(code) = rejected with that code.
    Verdicts(Vec<Option<&'static str>>),
    Status {
        claims: Vec<(String, &'static str)>,
        accepted: Option<Vec<String>>,
    },
    Blast {
        root: String,
        depth: Option<usize>,
        layers: Vec<Vec<String>>,
        affected: Vec<String>,
    },
}

struct Case {
    id: String,
    scope: &'static str,
    description: String,
    keys: Vec<(Key, bool)>,
    inputs: Vec<(String, Vec<u8>)>,
    expect: Expect,
    clock: i64,
}

impl Case {
    fn new(id: &str, description: &str) -> Case {
        let area = id.split("__").next().unwrap();
        let scope = match area {
            "envelope" => "specs/envelope.json",
            "schema" => "specs/claim.schema.json",
            "id" => "specs/claim-id.json",
            "roles" => "specs/roles.json",
            "fold" => "specs/fold.json",
            "blast" => "specs/blast.json",
            other => panic!("unknown area {other}"),
        };
        Case {
            id: id.into(),
            scope,
            description: description.into(),
            keys: Vec::new(),
            inputs: Vec::new(),
            expect: Expect::None,
            clock: T0,
        }
    }

    fn trust(mut self, k: &Key) -> Case {
        self.keys.push((k.clone(), false));
        self
    }

    fn trust_retired(mut self, k: &Key) -> Case {
        self.keys.push((k.clone(), true));
        self
    }

    fn t(&mut self) -> i64 {
        self.clock += 60;
        self.clock
    }

    /// Adds an input file; returns its name.
    fn input(&mut self, label: &str, bytes: Vec<u8>) -> String {
        let name = format!("{:02}-{label}.dsse", self.inputs.len() + 1);
        self.inputs.push((name.clone(), bytes));
        name
    }

    /// Signs a well-formed claim (the id is filled in) and adds it; returns its id.
    fn sign(&mut self, label: &str, claim: Value, by: &Key) -> String {
        let (id, pred) = identified(&claim);
        // Cross-check: elench's own signing helper computes the same id and finds it valid.
        let (c, _) =
            elench::claim::with_id(&claim).unwrap_or_else(|e| panic!("{}: {label}: {e}", self.id));
        assert_eq!(c.id, id, "{}: {label}: id", self.id);
        let payload = statement(&pred, TREE).to_string().into_bytes();
        self.input(label, text(&envelope(PAYLOAD_TYPE, &payload, &[by])));
        id
    }

    /// Signs a predicate exactly as given (no id is filled in, nothing is validated).
    fn sign_raw(&mut self, label: &str, pred: &Value, subject: &str, by: &Key) {
        let payload = statement(pred, subject).to_string().into_bytes();
        self.input(label, text(&envelope(PAYLOAD_TYPE, &payload, &[by])));
    }

    /// Signs payload bytes exactly as given.
    fn sign_payload(&mut self, label: &str, payload: &[u8], by: &Key) {
        self.input(label, text(&envelope(PAYLOAD_TYPE, payload, &[by])));
    }

    /// A claim by `by`, of `kind`, with origin from its role.
    fn claim(
        &mut self,
        label: &str,
        kind: &str,
        targets: &[&str],
        deps: &[&str],
        by: &Key,
    ) -> String {
        let t = self.t();
        let v = claim_value(kind, by.role, label, targets, deps, t);
        self.sign(label, v, by)
    }

    fn assertion(&mut self, label: &str, deps: &[&str], by: &Key) -> String {
        self.claim(label, "assertion", &[], deps, by)
    }

    fn verdicts(mut self, v: Vec<Option<&'static str>>) -> Case {
        assert_eq!(
            v.len(),
            self.inputs.len(),
            "{}: one verdict per input",
            self.id
        );
        self.expect = Expect::Verdicts(v);
        self
    }

    fn status(mut self, claims: Vec<(&String, &'static str)>) -> Case {
        self.expect = Expect::Status {
            claims: claims.into_iter().map(|(i, s)| (i.clone(), s)).collect(),
            accepted: None,
        };
        self
    }

    fn status_accepted(
        mut self,
        claims: Vec<(&String, &'static str)>,
        accepted: Vec<&String>,
    ) -> Case {
        self.expect = Expect::Status {
            claims: claims.into_iter().map(|(i, s)| (i.clone(), s)).collect(),
            accepted: Some(accepted.into_iter().cloned().collect()),
        };
        self
    }

    fn blast(
        mut self,
        root: &str,
        depth: Option<usize>,
        layers: Vec<Vec<&String>>,
        affected: Vec<&String>,
    ) -> Case {
        let mut layers: Vec<Vec<String>> = layers
            .into_iter()
            .map(|l| l.into_iter().cloned().collect())
            .collect();
        for l in &mut layers {
            l.sort();
        }
        let mut affected: Vec<String> = affected.into_iter().cloned().collect();
        affected.sort();
        self.expect = Expect::Blast {
            root: root.into(),
            depth,
            layers,
            affected,
        };
        self
    }
}

// ---------------------------------------------------------------------------------------------
// the cross-check against elench

fn trusted(k: &Key, retired: bool) -> TrustedKey {
    let mut t = TrustedKey::new(k.role, k.name, k.sk.verifying_key()).expect("trusted key");
    t.retired = retired;
    t
}

fn check(case: &Case) {
    let id = &case.id;
    match &case.expect {
        Expect::None => panic!("{id}: no expectation"),
        Expect::Verdicts(verdicts) => {
            let trust = TrustSet::new(case.keys.iter().map(|(k, r)| trusted(k, *r)).collect());
            for ((name, bytes), want) in case.inputs.iter().zip(verdicts) {
                let got = verify_envelope(bytes, &trust);
                match (want, &got) {
                    (None, Ok(_)) => {}
                    (Some(code), Err(e)) if e.code.as_str() == *code => {}
                    _ => panic!(
                        "{id}/{name}: expected {}, elench says {}",
                        want.unwrap_or("accept"),
                        match &got {
                            Ok(_) => "accept".to_string(),
                            Err(e) => e.to_string(),
                        }
                    ),
                }
            }
        }
        Expect::Status { .. } | Expect::Blast { .. } => {
            let dir = tempfile::tempdir().expect("temp dir");
            let (store, _) = Store::init(
                &dir.path().join("store"),
                &elench::store::Options::new(Duration::from_secs(5)),
            )
            .expect("init");
            for (k, retired) in &case.keys {
                store.add_key(&trusted(k, false)).expect("add key");
                if *retired {
                    store.retire_key(&k.keyid()).expect("retire key");
                }
            }
            let trust = store.trust_set().expect("trust set");
            for (name, bytes) in &case.inputs {
                let accepted = verify_envelope(bytes, &trust)
                    .unwrap_or_else(|e| panic!("{id}/{name}: expected accept, elench says {e}"));
                store.add(&accepted, bytes).expect("store add");
            }
            let mut fold = Fold::new(&store);
            match &case.expect {
                Expect::Status { claims, accepted } => {
                    for (cid, want) in claims {
                        let r = fold
                            .report(cid)
                            .unwrap_or_else(|e| panic!("{id}: status {cid}: {e}"));
                        assert_eq!(
                            r.status.as_str(),
                            *want,
                            "{id}: status of {cid} (own {})",
                            r.own_status
                        );
                        if let Some(acc) = accepted {
                            assert_eq!(r.accepted, acc.contains(cid), "{id}: accepted {cid}");
                        }
                    }
                    for cid in accepted.iter().flatten() {
                        assert!(fold.report(cid).unwrap().accepted, "{id}: accepted {cid}");
                    }
                }
                Expect::Blast {
                    root,
                    depth,
                    layers,
                    affected,
                } => {
                    let b = elench::graph::blast(&mut fold, root, *depth)
                        .unwrap_or_else(|e| panic!("{id}: blast: {e}"));
                    let got: Vec<Vec<String>> = b
                        .layers
                        .iter()
                        .map(|l| l.claims.iter().map(|m| m.id.clone()).collect())
                        .collect();
                    for (i, l) in b.layers.iter().enumerate() {
                        assert_eq!(l.depth, i, "{id}: layer depths");
                    }
                    assert_eq!(&got, layers, "{id}: layers");
                    let got: Vec<String> = b.affected.iter().map(|a| a.id.clone()).collect();
                    assert_eq!(&got, affected, "{id}: affected");
                }
                _ => unreachable!(),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// writing

fn write(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

fn pretty(v: &Value) -> Vec<u8> {
    let mut s = serde_json::to_string_pretty(v).expect("json");
    s.push('\n');
    s.into_bytes()
}

fn is_case_dir(name: &str) -> bool {
    let Some((area, rest)) = name.split_once("__") else {
        return false;
    };
    let ok = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    ok(area) && ok(rest) && !area.starts_with('-')
}

fn write_case(dir: &Path, case: &Case) {
    let d = dir.join(&case.id);
    std::fs::create_dir_all(&d).expect("case dir");
    let mut keys = Vec::new();
    for (k, retired) in &case.keys {
        let file = format!("{}.pub", k.name);
        let pem = public_key_pem(&k.sk.verifying_key()).expect("pem");
        write(&d.join(&file), pem.as_bytes());
        let mut e = json!({"role": k.role.as_str(), "name": k.name, "public_key": file});
        if *retired {
            e["retired"] = json!(true);
        }
        keys.push(e);
    }
    write(&d.join("keys.json"), &pretty(&Value::Array(keys)));
    for (name, bytes) in &case.inputs {
        write(&d.join(name), bytes);
    }
    let inputs: Vec<&String> = case.inputs.iter().map(|(n, _)| n).collect();
    let expect = match &case.expect {
        Expect::None => unreachable!(),
        Expect::Verdicts(v) => {
            let list: Vec<Value> = case
                .inputs
                .iter()
                .zip(v)
                .map(|((n, _), want)| match want {
                    None => json!({"input": n, "accept": true}),
                    Some(code) => json!({"input": n, "accept": false, "code": code}),
                })
                .collect();
            json!({"kind": "verdicts", "verdicts": list})
        }
        Expect::Status { claims, accepted } => {
            let mut m = Map::new();
            for (id, s) in claims {
                m.insert(id.clone(), json!(s));
            }
            let mut e = json!({"kind": "status", "claims": m});
            if let Some(a) = accepted {
                e["accepted"] = json!(a);
            }
            e
        }
        Expect::Blast {
            root,
            depth,
            layers,
            affected,
        } => json!({"kind": "blast", "root": root, "depth": depth, "layers": layers,
                     "affected": affected}),
    };
    write(
        &d.join("expected.json"),
        &pretty(&json!({"inputs": inputs, "expect": expect})),
    );
}

// ---------------------------------------------------------------------------------------------
// specification files

fn specs() -> Vec<(&'static str, Vec<u8>)> {
    let envelope = json!({
        "spec": "elench envelope: DSSE v1.0.2 carrying an in-toto Statement v1",
        "source": "docs/envelope.md",
        "payloadType": PAYLOAD_TYPE,
        "statementType": STATEMENT_TYPE,
        "predicateType": PREDICATE_TYPE,
        "maxEnvelopeBytes": MAX_ENVELOPE_BYTES,
        "signedBytes": "PAE(type, body) = \"DSSEv1\" SP LEN(type) SP type SP LEN(body) SP body; LEN is the decimal byte length",
        "signature": "Ed25519 verify_strict over PAE(payloadType, payload bytes), never the bare payload",
        "base64": "payload and sig accept the standard and the URL-safe alphabet, padded",
        "keyid": "an unauthenticated hint: it may narrow which trusted keys are tried, never decides trust",
        "unknownFields": "ignored",
        "checks": [
            {"check": "the envelope is at most maxEnvelopeBytes bytes", "code": "TOO_LARGE"},
            {"check": "the envelope text is JSON at all (the error gives its line and column)", "code": "BAD_JSON"},
            {"check": "the envelope is a JSON object with string payloadType, base64 payload and a non-empty signatures array of objects with a base64 sig", "code": "BAD_ENVELOPE"},
            {"check": "no JSON object (envelope, Statement or claim) has duplicate keys", "code": "DUPLICATE_KEY"},
            {"check": "at least one signature verifies under a trusted key that is not retired; a signature only from keys that are not trusted", "code": "UNTRUSTED_SIGNER"},
            {"check": "a signature that names a trusted key (or an altered envelope) but verifies under no trusted key", "code": "BAD_SIGNATURE"},
            {"check": "a signature that verifies only under a retired key", "code": "UNTRUSTED_SIGNER"},
            {"check": "payloadType equals payloadType above", "code": "UNSUPPORTED_PAYLOAD_TYPE"},
            {"check": "the verified payload bytes are a JSON object with _type = statementType, a non-empty subject array of {name, digest} and an object predicate", "code": "BAD_STATEMENT"},
            {"check": "predicateType equals predicateType above", "code": "UNSUPPORTED_PREDICATE_TYPE"},
            {"check": "some subject digest value equals the predicate's anchor.tree", "code": "SUBJECT_MISMATCH"}
        ],
        "order": "the signature is verified first; only the verified payload bytes are parsed afterwards"
    });
    let claim_id = json!({
        "spec": "elench claim id",
        "source": "docs/envelope.md (the claim id)",
        "formula": "id = \"cl_\" + lowercase_hex(SHA-256(JCS(predicate without its \"id\" member)))",
        "canonicalization": "RFC 8785 (JSON Canonicalization Scheme): member order, whitespace, string escapes and number spelling do not change the id",
        "pattern": "^cl_[0-9a-f]{64}$",
        "checks": [
            {"check": "the predicate has an id member matching pattern", "code": "SCHEMA_VIOLATION"},
            {"check": "the id member equals the recomputed id", "code": "ID_MISMATCH"}
        ],
        "consequence": "a claim can only name ids that existed before it, so dependsOn and target never form a cycle; a forged cycle cannot be ingested"
    });
    let roles = json!({
        "spec": "who may sign what, decided by the role of the key that verifies the signature",
        "source": "docs/claims.md (who may sign what)",
        "roles": ["harness", "agent", "human"],
        "authority": [
            {"field": "origin.kind", "value": "harness-observed", "requires": {"role": ["harness"]}},
            {"field": "origin.kind", "value": "human-asserted", "requires": {"role": ["human"]}},
            {"field": "origin.kind", "value": "agent-asserted", "requires": {"role": ["agent", "harness"]},
             "note": "a harness may relay an agent"},
            {"field": "kind", "value": "verification", "requires": {"role": ["harness"], "origin.kind": "harness-observed"}},
            {"field": "kind", "value": "residue-acceptance", "requires": {"role": ["human"], "origin.kind": "human-asserted"}}
        ],
        "unrestricted": "assertion, falsification and supersession need only the origin rule",
        "violation": "ROLE_VIOLATION",
        "keyid": "the keyid hint never grants a role; the verifying key does"
    });
    let fold = json!({
        "spec": "status: the fold of the set of accepted claims",
        "source": "docs/status.md",
        "purity": "status is a function of the set of accepted claims; arrival order, timestamps and wall-clock time never change it",
        "records": "records(c) = accepted claims whose target contains c",
        "liveness": "a record is live when its own status is unevaluated or verified",
        "own": {
            "rule": "first match wins",
            "order": [
                {"live record kind": "falsification", "own": "falsified"},
                {"live record kind": "supersession", "own": "superseded"},
                {"live record kind": "verification", "own": "verified"},
                {"otherwise": true, "own": "unevaluated"}
            ]
        },
        "effective": [
            {"when": "own is falsified or superseded", "effective": "own"},
            {"when": "a premise in dependsOn has effective status falsified or revoked", "effective": "revoked"},
            {"otherwise": true, "effective": "own"}
        ],
        "revocation": "a premise acts through dependsOn; a falsified or revoked premise revokes its dependents, transitively",
        "revokedRecords": "a record revoked through its premises still acts on its target (flagged DECIDED_BY_REVOKED_RECORD); to disarm it, falsify it",
        "notes": [
            "a falsified verification stops verifying; a falsified falsification stops falsifying and its target reverts, recursively",
            "a superseded premise does not revoke its dependents (it is reported as a stale premise)",
            "a premise the store has never seen does not revoke (it is reported missing)",
            "residue-acceptance changes no status: an unevaluated claim targeted by a live acceptance is reported accepted and stays unevaluated"
        ],
        "statuses": ["unevaluated", "verified", "falsified", "superseded", "revoked"]
    });
    let blast = json!({
        "spec": "blast radius: what a falsification of a claim revokes",
        "source": "docs/blast.md",
        "edges": "premise -> dependent: B.dependsOn contains A gives A -> B; target edges are not blast edges",
        "members": "every claim reachable from the root along those edges",
        "layering": "breadth-first: depth 0 is the root, depth n holds the claims whose shortest path from the root has n edges; each member once, at its shortest depth; ids sorted within a layer",
        "depth": "when a depth N is given, only layers 0..=N are reported",
        "affected": "claims outside the closure whose own status is decided by a record inside the closure (sorted ids)"
    });
    vec![
        ("envelope.json", pretty(&envelope)),
        (
            "claim.schema.json",
            elench::claim::schema::CLAIM_SCHEMA.as_bytes().to_vec(),
        ),
        ("claim-id.json", pretty(&claim_id)),
        ("roles.json", pretty(&roles)),
        ("fold.json", pretty(&fold)),
        ("blast.json", pretty(&blast)),
    ]
}

// ---------------------------------------------------------------------------------------------
// the cases, area by area

fn envelope_cases(k: &Keys, out: &mut Vec<Case>) {
    let (bot, ci, old_ci, mallory) = (&k.bot, &k.ci, &k.old_ci, &k.mallory);

    let mut c = Case::new(
        "envelope__minimal-valid",
        "a well-formed agent-asserted assertion signed by a trusted agent key is accepted",
    )
    .trust(bot);
    c.assertion("parse-rejects-empty", &[], bot);
    out.push(c.verdicts(vec![OK]));

    // URL-safe alphabet: pick a claim whose standard base64 payload and sig both contain
    // characters that differ between the alphabets.
    let mut c = Case::new(
        "envelope__url-safe-base64",
        "an envelope whose payload and sig use the URL-safe base64 alphabet is accepted",
    )
    .trust(bot);
    let mut n = 0;
    let env = loop {
        let t = T0 + 60;
        let (_, pred) = identified(&claim_value(
            "assertion",
            Role::Agent,
            &format!("url-safe base64 probe {n}: does parse() reject <empty>???"),
            &[],
            &[],
            t,
        ));
        let payload = statement(&pred, TREE).to_string().into_bytes();
        let p = STANDARD.encode(&payload);
        let s = sig_b64(bot, PAYLOAD_TYPE, &payload);
        let differs = |x: &str| x.contains('+') || x.contains('/');
        let (pu, su) = (
            URL_SAFE.encode(&payload),
            URL_SAFE.encode(STANDARD.decode(&s).unwrap()),
        );
        if differs(&p) && differs(&s) && (pu.contains('-') || pu.contains('_')) {
            break json!({"payloadType": PAYLOAD_TYPE, "payload": pu,
                "signatures": [{"keyid": bot.keyid(), "sig": su}]});
        }
        n += 1;
    };
    c.input("url-safe", text(&env));
    out.push(c.verdicts(vec![OK]));

    let mut c = Case::new(
        "envelope__tampered-payload",
        "changing the payload after signing makes the signature fail: BAD_SIGNATURE",
    )
    .trust(bot);
    let t = c.t();
    let (_, pred) = identified(&claim_value(
        "assertion",
        Role::Agent,
        "parse rejects empty input",
        &[],
        &[],
        t,
    ));
    let payload = statement(&pred, TREE).to_string().into_bytes();
    let mut env = envelope(PAYLOAD_TYPE, &payload, &[bot]);
    c.input("original", text(&env));
    let tampered = String::from_utf8(payload)
        .unwrap()
        .replace("rejects", "accepts");
    env["payload"] = json!(STANDARD.encode(tampered.as_bytes()));
    c.input("tampered", text(&env));
    out.push(c.verdicts(vec![OK, Some("BAD_SIGNATURE")]));

    let mut c = Case::new(
        "envelope__signature-over-bare-payload",
        "a signature over the bare payload instead of PAE(payloadType, payload) does not verify: BAD_SIGNATURE",
    )
    .trust(bot);
    let t = c.t();
    let (_, pred) = identified(&claim_value(
        "assertion",
        Role::Agent,
        "signed without PAE",
        &[],
        &[],
        t,
    ));
    let payload = statement(&pred, TREE).to_string().into_bytes();
    let sig = STANDARD.encode(bot.sk.sign(&payload).to_bytes());
    c.input(
        "bare-payload-sig",
        text(
            &json!({"payloadType": PAYLOAD_TYPE, "payload": STANDARD.encode(&payload),
            "signatures": [{"keyid": bot.keyid(), "sig": sig}]}),
        ),
    );
    out.push(c.verdicts(vec![Some("BAD_SIGNATURE")]));

    let mut c = Case::new(
        "envelope__payload-type-changed-after-signing",
        "PAE binds the payloadType: changing it after signing makes the signature fail: BAD_SIGNATURE",
    )
    .trust(bot);
    let t = c.t();
    let (_, pred) = identified(&claim_value(
        "assertion",
        Role::Agent,
        "type is signed too",
        &[],
        &[],
        t,
    ));
    let payload = statement(&pred, TREE).to_string().into_bytes();
    let mut env = envelope(PAYLOAD_TYPE, &payload, &[bot]);
    env["payloadType"] = json!("application/vnd.in-toto.statement+json");
    c.input("type-changed", text(&env));
    out.push(c.verdicts(vec![Some("BAD_SIGNATURE")]));

    let mut c = Case::new(
        "envelope__unknown-fields-ignored",
        "unknown members of the envelope and of a signature are ignored and the envelope is accepted",
    )
    .trust(bot);
    let t = c.t();
    let (_, pred) = identified(&claim_value(
        "assertion",
        Role::Agent,
        "extra envelope fields",
        &[],
        &[],
        t,
    ));
    let payload = statement(&pred, TREE).to_string().into_bytes();
    let env = json!({"payloadType": PAYLOAD_TYPE, "payload": STANDARD.encode(&payload),
        "signatures": [{"keyid": bot.keyid(), "sig": sig_b64(bot, PAYLOAD_TYPE, &payload),
                        "cert": null, "x-comment": "ignored"}],
        "x-transport": {"received": "2026-01-01"}});
    c.input("extra-fields", text(&env));
    out.push(c.verdicts(vec![OK]));

    let mut c = Case::new(
        "envelope__keyid-hint-wrong-still-verifies",
        "a keyid hint naming a different trusted key does not decide trust: the signature verifies under the agent key and is accepted",
    )
    .trust(bot)
    .trust(ci);
    let t = c.t();
    let (_, pred) = identified(&claim_value(
        "assertion",
        Role::Agent,
        "wrong hint",
        &[],
        &[],
        t,
    ));
    let payload = statement(&pred, TREE).to_string().into_bytes();
    let env = json!({"payloadType": PAYLOAD_TYPE, "payload": STANDARD.encode(&payload),
        "signatures": [{"keyid": ci.keyid(), "sig": sig_b64(bot, PAYLOAD_TYPE, &payload)}]});
    c.input("hint-names-ci", text(&env));
    out.push(c.verdicts(vec![OK]));

    let mut c = Case::new(
        "envelope__keyid-absent",
        "a signature without a keyid hint is verified against the trusted keys and accepted",
    )
    .trust(bot);
    let t = c.t();
    let (_, pred) = identified(&claim_value(
        "assertion",
        Role::Agent,
        "no hint",
        &[],
        &[],
        t,
    ));
    let payload = statement(&pred, TREE).to_string().into_bytes();
    let env = json!({"payloadType": PAYLOAD_TYPE, "payload": STANDARD.encode(&payload),
        "signatures": [{"sig": sig_b64(bot, PAYLOAD_TYPE, &payload)}]});
    c.input("no-keyid", text(&env));
    out.push(c.verdicts(vec![OK]));

    let mut c = Case::new(
        "envelope__untrusted-signer",
        "an envelope signed only by a key that is not trusted is rejected: UNTRUSTED_SIGNER",
    )
    .trust(bot);
    c.assertion("signed-by-mallory", &[], mallory);
    out.push(c.verdicts(vec![Some("UNTRUSTED_SIGNER")]));

    let mut c = Case::new(
        "envelope__retired-key",
        "a retired key signs nothing new (UNTRUSTED_SIGNER), while the same claim signed by an active key is accepted",
    )
    .trust_retired(old_ci)
    .trust(ci);
    let t = c.t();
    let claim = claim_value(
        "assertion",
        Role::Harness,
        "suite passed at tree",
        &[],
        &[],
        t,
    );
    c.sign("signed-by-retired", claim.clone(), old_ci);
    c.sign("signed-by-active", claim, ci);
    out.push(c.verdicts(vec![Some("UNTRUSTED_SIGNER"), OK]));

    let mut c = Case::new(
        "envelope__second-signature-verifies",
        "an envelope with one signature from an untrusted key and one from a trusted key is accepted",
    )
    .trust(bot);
    let t = c.t();
    let (_, pred) = identified(&claim_value(
        "assertion",
        Role::Agent,
        "two signatures",
        &[],
        &[],
        t,
    ));
    let payload = statement(&pred, TREE).to_string().into_bytes();
    c.input(
        "mallory-then-bot",
        text(&envelope(PAYLOAD_TYPE, &payload, &[mallory, bot])),
    );
    out.push(c.verdicts(vec![OK]));

    let mut c = Case::new(
        "envelope__truncated-signature",
        "a signature that is not 64 bytes long cannot verify under the trusted key it names: BAD_SIGNATURE",
    )
    .trust(bot);
    let t = c.t();
    let (_, pred) = identified(&claim_value(
        "assertion",
        Role::Agent,
        "short sig",
        &[],
        &[],
        t,
    ));
    let payload = statement(&pred, TREE).to_string().into_bytes();
    let sig = bot.sk.sign(&pae(PAYLOAD_TYPE, &payload)).to_bytes();
    c.input(
        "short-sig",
        text(
            &json!({"payloadType": PAYLOAD_TYPE, "payload": STANDARD.encode(&payload),
            "signatures": [{"keyid": bot.keyid(), "sig": STANDARD.encode(&sig[..63])}]}),
        ),
    );
    out.push(c.verdicts(vec![Some("BAD_SIGNATURE")]));

    let mut c = Case::new(
        "envelope__wrong-payload-type",
        "a correctly signed envelope whose payloadType is not application/vnd.in-toto+json is rejected: UNSUPPORTED_PAYLOAD_TYPE",
    )
    .trust(bot);
    let t = c.t();
    let (_, pred) = identified(&claim_value(
        "assertion",
        Role::Agent,
        "plain json",
        &[],
        &[],
        t,
    ));
    let payload = statement(&pred, TREE).to_string().into_bytes();
    c.input(
        "application-json",
        text(&envelope("application/json", &payload, &[bot])),
    );
    out.push(c.verdicts(vec![Some("UNSUPPORTED_PAYLOAD_TYPE")]));

    let mut c = Case::new(
        "envelope__payload-not-json",
        "a correctly signed payload that is not JSON is rejected: BAD_STATEMENT",
    )
    .trust(bot);
    c.sign_payload("not-json", b"parse rejects empty input", bot);
    out.push(c.verdicts(vec![Some("BAD_STATEMENT")]));

    let mut c = Case::new(
        "envelope__not-json",
        "an envelope that is not JSON is rejected: BAD_JSON",
    )
    .trust(bot);
    c.input(
        "garbage",
        b"DSSEv1 28 application/vnd.in-toto+json 2 {}\n".to_vec(),
    );
    out.push(c.verdicts(vec![Some("BAD_JSON")]));

    let mut c = Case::new(
        "envelope__empty-signatures",
        "an envelope with an empty signatures array is rejected: BAD_ENVELOPE",
    )
    .trust(bot);
    let t = c.t();
    let (_, pred) = identified(&claim_value(
        "assertion",
        Role::Agent,
        "unsigned",
        &[],
        &[],
        t,
    ));
    let payload = statement(&pred, TREE).to_string().into_bytes();
    c.input(
        "unsigned",
        text(&json!({"payloadType": PAYLOAD_TYPE, "payload": STANDARD.encode(&payload), "signatures": []})),
    );
    out.push(c.verdicts(vec![Some("BAD_ENVELOPE")]));

    let mut c = Case::new(
        "envelope__payload-not-base64",
        "a payload that is not base64 in either alphabet is rejected: BAD_ENVELOPE",
    )
    .trust(bot);
    c.input(
        "bad-base64",
        text(
            &json!({"payloadType": PAYLOAD_TYPE, "payload": "not base64 at all!",
            "signatures": [{"keyid": bot.keyid(), "sig": STANDARD.encode([0u8; 64])}]}),
        ),
    );
    out.push(c.verdicts(vec![Some("BAD_ENVELOPE")]));

    let mut c = Case::new(
        "envelope__duplicate-key-in-envelope",
        "an envelope with a duplicated member (two payload members) is rejected: DUPLICATE_KEY",
    )
    .trust(bot);
    let t = c.t();
    let (_, pred) = identified(&claim_value(
        "assertion",
        Role::Agent,
        "which payload",
        &[],
        &[],
        t,
    ));
    let payload = statement(&pred, TREE).to_string().into_bytes();
    let p = STANDARD.encode(&payload);
    let raw = format!(
        "{{\"payloadType\":\"{PAYLOAD_TYPE}\",\"payload\":\"{p}\",\"payload\":\"{}\",\"signatures\":[{{\"keyid\":\"{}\",\"sig\":\"{}\"}}]}}\n",
        STANDARD.encode(b"{}"),
        bot.keyid(),
        sig_b64(bot, PAYLOAD_TYPE, &payload)
    );
    c.input("two-payloads", raw.into_bytes());
    out.push(c.verdicts(vec![Some("DUPLICATE_KEY")]));

    let mut c = Case::new(
        "envelope__duplicate-key-in-statement",
        "a signed Statement with a duplicated member (two predicateType members) is rejected: DUPLICATE_KEY",
    )
    .trust(bot);
    let t = c.t();
    let (_, pred) = identified(&claim_value(
        "assertion",
        Role::Agent,
        "which predicate type",
        &[],
        &[],
        t,
    ));
    let body = statement(&pred, TREE).to_string();
    let dup = body.replacen(
        "\"predicateType\":",
        "\"predicateType\":\"https://slsa.dev/provenance/v1\",\"predicateType\":",
        1,
    );
    assert_ne!(body, dup);
    c.sign_payload("two-predicate-types", dup.as_bytes(), bot);
    out.push(c.verdicts(vec![Some("DUPLICATE_KEY")]));

    let mut c = Case::new(
        "envelope__unknown-predicate-type",
        "a signed Statement whose predicateType is not https://elench.dev/claim/v0.1 is rejected: UNSUPPORTED_PREDICATE_TYPE",
    )
    .trust(bot);
    let t = c.t();
    let (_, pred) = identified(&claim_value("assertion", Role::Agent, "slsa", &[], &[], t));
    let mut st = statement(&pred, TREE);
    st["predicateType"] = json!("https://slsa.dev/provenance/v1");
    c.sign_payload("slsa-predicate", st.to_string().as_bytes(), bot);
    out.push(c.verdicts(vec![Some("UNSUPPORTED_PREDICATE_TYPE")]));

    let mut c = Case::new(
        "envelope__wrong-statement-type",
        "a signed payload whose _type is not https://in-toto.io/Statement/v1 is rejected: BAD_STATEMENT",
    )
    .trust(bot);
    let t = c.t();
    let (_, pred) = identified(&claim_value(
        "assertion",
        Role::Agent,
        "old statement",
        &[],
        &[],
        t,
    ));
    let mut st = statement(&pred, TREE);
    st["_type"] = json!("https://in-toto.io/Statement/v0.1");
    c.sign_payload("statement-v0-1", st.to_string().as_bytes(), bot);
    out.push(c.verdicts(vec![Some("BAD_STATEMENT")]));

    let mut c = Case::new(
        "envelope__subject-mismatch",
        "a Statement whose subject digests do not include the claim's anchor.tree is rejected: SUBJECT_MISMATCH",
    )
    .trust(bot);
    let t = c.t();
    let (_, pred) = identified(&claim_value(
        "assertion",
        Role::Agent,
        "about another tree",
        &[],
        &[],
        t,
    ));
    c.sign_raw("other-subject", &pred, TREE2, bot);
    out.push(c.verdicts(vec![Some("SUBJECT_MISMATCH")]));

    let mut c = Case::new(
        "envelope__subject-among-several",
        "a Statement with several subjects is accepted when one of their digests equals anchor.tree",
    )
    .trust(bot);
    let t = c.t();
    let (_, pred) = identified(&claim_value(
        "assertion",
        Role::Agent,
        "two subjects",
        &[],
        &[],
        t,
    ));
    let mut st = statement(&pred, TREE);
    st["subject"] = json!([
        {"name": "previous", "digest": {"gitTree": TREE2}},
        {"name": "tree", "digest": {"gitTree": TREE}}
    ]);
    c.sign_payload("two-subjects", st.to_string().as_bytes(), bot);
    out.push(c.verdicts(vec![OK]));

    let mut c = Case::new(
        "envelope__pae-counts-bytes",
        "a payload with multi-byte UTF-8 text, signed over PAE with byte lengths, is accepted",
    )
    .trust(bot);
    let t = c.t();
    c.sign(
        "utf8",
        claim_value(
            "assertion",
            Role::Agent,
            "Übersetzung: parse() lehnt leere Eingabe ab — ✓ 日本語",
            &[],
            &[],
            t,
        ),
        bot,
    );
    out.push(c.verdicts(vec![OK]));

    // One oversized envelope: a valid envelope padded with an unknown member past 1 MiB.
    let mut c = Case::new(
        "envelope__too-large",
        "an envelope larger than 1 MiB (1048576 bytes) is rejected before it is parsed: TOO_LARGE",
    )
    .trust(bot);
    let t = c.t();
    let (_, pred) = identified(&claim_value(
        "assertion",
        Role::Agent,
        "padded",
        &[],
        &[],
        t,
    ));
    let payload = statement(&pred, TREE).to_string().into_bytes();
    let mut env = envelope(PAYLOAD_TYPE, &payload, &[bot]);
    env["padding"] = json!("");
    let base = text(&env).len();
    env["padding"] = json!("x".repeat(MAX_ENVELOPE_BYTES + 64 - base));
    let bytes = text(&env);
    assert_eq!(bytes.len(), MAX_ENVELOPE_BYTES + 64);
    c.input("oversized", bytes);
    out.push(c.verdicts(vec![Some("TOO_LARGE")]));
}

fn schema_cases(k: &Keys, out: &mut Vec<Case>) {
    let (bot, ci, alice) = (&k.bot, &k.ci, &k.alice);

    /// A claim edited by `f`, given its correct id (so only the schema rule can fail).
    fn edited(c: &mut Case, label: &str, by: &Key, f: impl FnOnce(&mut Value)) {
        let t = c.t();
        let mut v = claim_value("assertion", by.role, label, &[], &[], t);
        f(&mut v);
        let subject = v["anchor"]["tree"].as_str().unwrap_or(TREE).to_owned();
        let (_, pred) = identified(&v);
        c.sign_raw(label, &pred, &subject, by);
    }
    fn predicate_form(expr: Value) -> impl FnOnce(&mut Value) {
        move |v: &mut Value| {
            let mut a = json!({"form": "predicate", "text": "checked"});
            if !expr.is_null() {
                a["expression"] = expr;
            }
            v["assertion"] = a;
        }
    }

    let mut c = Case::new(
        "schema__missing-anchor",
        "a claim without the required anchor member is rejected: SCHEMA_VIOLATION",
    )
    .trust(bot);
    edited(&mut c, "no-anchor", bot, |v| {
        v.as_object_mut().unwrap().remove("anchor");
    });
    out.push(c.verdicts(vec![Some("SCHEMA_VIOLATION")]));

    let mut c = Case::new(
        "schema__target-on-assertion",
        "an assertion with a non-empty target is rejected (the allOf conditional allows none): SCHEMA_VIOLATION",
    )
    .trust(bot);
    let other = format!("cl_{}", sha256_hex(b"some earlier claim"));
    edited(&mut c, "assertion-with-target", bot, |v| {
        v["target"] = json!([other]);
    });
    out.push(c.verdicts(vec![Some("SCHEMA_VIOLATION")]));

    let mut c = Case::new(
        "schema__falsification-without-target",
        "a falsification without a target member is rejected (required unless kind is assertion): SCHEMA_VIOLATION",
    )
    .trust(ci);
    edited(&mut c, "falsification-no-target", ci, |v| {
        v["kind"] = json!("falsification");
    });
    out.push(c.verdicts(vec![Some("SCHEMA_VIOLATION")]));

    let mut c = Case::new(
        "schema__residue-acceptance-empty-target",
        "a residue-acceptance with an empty target is rejected (it needs at least one): SCHEMA_VIOLATION",
    )
    .trust(alice);
    edited(&mut c, "acceptance-of-nothing", alice, |v| {
        v["kind"] = json!("residue-acceptance");
        v["target"] = json!([]);
    });
    out.push(c.verdicts(vec![Some("SCHEMA_VIOLATION")]));

    let mut c = Case::new(
        "schema__unknown-member",
        "a claim with a member the schema does not define (a stored status) is rejected: SCHEMA_VIOLATION",
    )
    .trust(bot);
    edited(&mut c, "status-member", bot, |v| {
        v["status"] = json!("verified");
    });
    out.push(c.verdicts(vec![Some("SCHEMA_VIOLATION")]));

    let mut c = Case::new(
        "schema__unknown-origin-kind",
        "a claim whose origin.kind is not one of the three defined kinds is rejected: SCHEMA_VIOLATION",
    )
    .trust(bot);
    edited(&mut c, "robot-asserted", bot, |v| {
        v["origin"]["kind"] = json!("robot-asserted");
    });
    out.push(c.verdicts(vec![Some("SCHEMA_VIOLATION")]));

    let mut c = Case::new(
        "schema__timestamp-not-integer",
        "a claim whose timestamp is a string is rejected: SCHEMA_VIOLATION",
    )
    .trust(bot);
    edited(&mut c, "timestamp-string", bot, |v| {
        v["timestamp"] = json!("2026-01-01T00:00:00Z");
    });
    out.push(c.verdicts(vec![Some("SCHEMA_VIOLATION")]));

    let mut c = Case::new(
        "schema__text-too-long",
        "assertion.text is limited to 2000 characters: 2000 is accepted, 2001 is rejected with SCHEMA_VIOLATION",
    )
    .trust(bot);
    edited(&mut c, "text-2000", bot, |v| {
        v["assertion"]["text"] = json!("é".repeat(2000));
    });
    edited(&mut c, "text-2001", bot, |v| {
        v["assertion"]["text"] = json!("é".repeat(2001));
    });
    out.push(c.verdicts(vec![OK, Some("SCHEMA_VIOLATION")]));

    let mut c = Case::new(
        "schema__anchor-tree-not-oid",
        "an anchor.tree that is not 64 lowercase hex (here uppercase) is rejected: SCHEMA_VIOLATION",
    )
    .trust(bot);
    edited(&mut c, "uppercase-tree", bot, |v| {
        v["anchor"]["tree"] = json!(TREE.to_uppercase());
    });
    edited(&mut c, "short-tree", bot, |v| {
        v["anchor"]["tree"] = json!(&TREE[..40]);
    });
    out.push(c.verdicts(vec![Some("SCHEMA_VIOLATION"), Some("SCHEMA_VIOLATION")]));

    let mut c = Case::new(
        "schema__anchor-range-reversed",
        "an anchor.range [start, end] with start > end is rejected: SCHEMA_VIOLATION",
    )
    .trust(bot);
    edited(&mut c, "range-5-4", bot, |v| {
        v["anchor"]["range"] = json!([5, 4]);
    });
    out.push(c.verdicts(vec![Some("SCHEMA_VIOLATION")]));

    let mut c = Case::new(
        "schema__anchor-range-zero-start",
        "an anchor.range starting at line 0 is rejected (lines start at 1): SCHEMA_VIOLATION",
    )
    .trust(bot);
    edited(&mut c, "range-0-3", bot, |v| {
        v["anchor"]["range"] = json!([0, 3]);
    });
    out.push(c.verdicts(vec![Some("SCHEMA_VIOLATION")]));

    let mut c = Case::new(
        "schema__anchor-range-single-line",
        "an anchor.range [7, 7] (start = end) is accepted, and a range of three numbers is rejected: SCHEMA_VIOLATION",
    )
    .trust(bot);
    edited(&mut c, "range-7-7", bot, |v| {
        v["anchor"]["range"] = json!([7, 7]);
    });
    edited(&mut c, "range-three-numbers", bot, |v| {
        v["anchor"]["range"] = json!([7, 8, 9]);
    });
    out.push(c.verdicts(vec![OK, Some("SCHEMA_VIOLATION")]));

    let mut c = Case::new(
        "schema__predicate-with-expression",
        "a predicate-form assertion whose elench-predicate-v1 expression parses (with a correct digest) is accepted",
    )
    .trust(bot);
    edited(
        &mut c,
        "predicate-ok",
        bot,
        predicate_form(json!({"language": "elench-predicate-v1",
            "source": "test(\"parse_rejects_empty\").passed && grep(/unwrap\\(\\)/, \"src/parse.rs\") == 0"})),
    );
    let src = "run(\"cargo test\").exit == 0 || !exists(\"Cargo.lock\")";
    edited(
        &mut c,
        "predicate-with-digest",
        bot,
        predicate_form(json!({"language": "elench-predicate-v1", "source": src,
            "digest": sha256_hex(src.as_bytes())})),
    );
    out.push(c.verdicts(vec![OK, OK]));

    let mut c = Case::new(
        "schema__predicate-without-expression",
        "assertion.form predicate without an expression is an annotation wearing a costume: PREDICATE_WITHOUT_EXPRESSION",
    )
    .trust(bot);
    edited(&mut c, "no-expression", bot, predicate_form(Value::Null));
    out.push(c.verdicts(vec![Some("PREDICATE_WITHOUT_EXPRESSION")]));

    let mut c = Case::new(
        "schema__predicate-empty-source",
        "a predicate whose expression source is blank is rejected: PREDICATE_WITHOUT_EXPRESSION",
    )
    .trust(bot);
    edited(
        &mut c,
        "blank-source",
        bot,
        predicate_form(json!({"language": "elench-predicate-v1", "source": "  "})),
    );
    out.push(c.verdicts(vec![Some("PREDICATE_WITHOUT_EXPRESSION")]));

    let mut c = Case::new(
        "schema__unknown-predicate-language",
        "a predicate in a language other than elench-predicate-v1 is rejected: UNKNOWN_PREDICATE_LANGUAGE",
    )
    .trust(bot);
    edited(
        &mut c,
        "cel",
        bot,
        predicate_form(json!({"language": "cel", "source": "size(x) > 0"})),
    );
    out.push(c.verdicts(vec![Some("UNKNOWN_PREDICATE_LANGUAGE")]));

    let mut c = Case::new(
        "schema__unparsable-predicate",
        "a predicate whose source does not parse (unclosed call, trailing token, unknown field) is rejected: PREDICATE_PARSE_ERROR",
    )
    .trust(bot);
    for (label, src) in [
        ("unclosed-call", "exists(\"src/parse.rs\""),
        ("trailing-token", "exists(\"a\") exists(\"b\")"),
        ("unknown-field", "test(\"parse\").exit == 0"),
    ] {
        edited(
            &mut c,
            label,
            bot,
            predicate_form(json!({"language": "elench-predicate-v1", "source": src})),
        );
    }
    out.push(c.verdicts(vec![
        Some("PREDICATE_PARSE_ERROR"),
        Some("PREDICATE_PARSE_ERROR"),
        Some("PREDICATE_PARSE_ERROR"),
    ]));

    let mut c = Case::new(
        "schema__predicate-digest-mismatch",
        "an expression.digest that is not the lowercase hex SHA-256 of source is rejected: PREDICATE_DIGEST_MISMATCH",
    )
    .trust(bot);
    let src = "exists(\"src/parse.rs\")";
    edited(
        &mut c,
        "uppercase-digest",
        bot,
        predicate_form(json!({"language": "elench-predicate-v1", "source": src,
            "digest": sha256_hex(src.as_bytes()).to_uppercase()})),
    );
    out.push(c.verdicts(vec![Some("PREDICATE_DIGEST_MISMATCH")]));

    let mut c = Case::new(
        "schema__duplicate-key-in-claim",
        "a claim (the predicate) with a duplicated member is rejected, as RFC 8785 requires I-JSON: DUPLICATE_KEY",
    )
    .trust(bot);
    let t = c.t();
    let (_, pred) = identified(&claim_value(
        "assertion",
        Role::Agent,
        "two timestamps",
        &[],
        &[],
        t,
    ));
    let body = statement(&pred, TREE).to_string();
    let dup = body.replacen(
        "\"timestamp\":",
        &format!("\"timestamp\":{T0},\"timestamp\":"),
        1,
    );
    assert_ne!(body, dup);
    c.sign_payload("two-timestamps", dup.as_bytes(), bot);
    out.push(c.verdicts(vec![Some("DUPLICATE_KEY")]));
}

fn roles_cases(k: &Keys, out: &mut Vec<Case>) {
    let (bot, ci, alice) = (&k.bot, &k.ci, &k.alice);
    let target = format!("cl_{}", sha256_hex(b"the claim under test"));
    let tg: &[&str] = &[&target];

    /// A claim of `kind` with origin `origin`, signed by `by` (the roles table is the only
    /// rule these exercise).
    fn signed(c: &mut Case, label: &str, kind: &str, origin: Role, targets: &[&str], by: &Key) {
        let t = c.t();
        let v = claim_value(kind, origin, label, targets, &[], t);
        let (_, pred) = identified(&v);
        c.sign_raw(label, &pred, TREE, by);
    }

    let mut c = Case::new(
        "roles__agent-cannot-verify",
        "a harness-observed verification signed by an agent key is rejected: ROLE_VIOLATION",
    )
    .trust(bot);
    signed(
        &mut c,
        "verify-by-agent",
        "verification",
        Role::Harness,
        tg,
        bot,
    );
    out.push(c.verdicts(vec![Some("ROLE_VIOLATION")]));

    let mut c = Case::new(
        "roles__agent-asserted-verification",
        "a verification must be harness-observed: an agent-asserted verification is rejected even from an agent key: ROLE_VIOLATION",
    )
    .trust(bot);
    signed(
        &mut c,
        "agent-verification",
        "verification",
        Role::Agent,
        tg,
        bot,
    );
    out.push(c.verdicts(vec![Some("ROLE_VIOLATION")]));

    let mut c = Case::new(
        "roles__harness-relayed-verification",
        "a harness relaying an agent may not verify: an agent-asserted verification signed by a harness key is rejected: ROLE_VIOLATION",
    )
    .trust(ci);
    signed(
        &mut c,
        "relayed-verification",
        "verification",
        Role::Agent,
        tg,
        ci,
    );
    out.push(c.verdicts(vec![Some("ROLE_VIOLATION")]));

    let mut c = Case::new(
        "roles__harness-verification",
        "a harness-observed verification signed by a harness key is accepted",
    )
    .trust(ci);
    signed(
        &mut c,
        "verification",
        "verification",
        Role::Harness,
        tg,
        ci,
    );
    out.push(c.verdicts(vec![OK]));

    let mut c = Case::new(
        "roles__harness-may-relay-agent",
        "an agent-asserted assertion signed by a harness key is accepted (a harness may relay an agent)",
    )
    .trust(ci);
    signed(&mut c, "relayed", "assertion", Role::Agent, &[], ci);
    out.push(c.verdicts(vec![OK]));

    let mut c = Case::new(
        "roles__agent-cannot-claim-harness-observed",
        "a harness-observed assertion signed by an agent key is rejected: ROLE_VIOLATION",
    )
    .trust(bot);
    signed(
        &mut c,
        "observed-by-agent",
        "assertion",
        Role::Harness,
        &[],
        bot,
    );
    out.push(c.verdicts(vec![Some("ROLE_VIOLATION")]));

    let mut c = Case::new(
        "roles__harness-cannot-assert-for-human",
        "a human-asserted claim signed by a harness key is rejected: ROLE_VIOLATION",
    )
    .trust(ci);
    signed(
        &mut c,
        "human-by-harness",
        "assertion",
        Role::Human,
        &[],
        ci,
    );
    out.push(c.verdicts(vec![Some("ROLE_VIOLATION")]));

    let mut c = Case::new(
        "roles__human-cannot-agent-assert",
        "an agent-asserted claim needs an agent or harness key: signed by a human key it is rejected: ROLE_VIOLATION",
    )
    .trust(alice);
    signed(
        &mut c,
        "agent-by-human",
        "assertion",
        Role::Agent,
        &[],
        alice,
    );
    out.push(c.verdicts(vec![Some("ROLE_VIOLATION")]));

    let mut c = Case::new(
        "roles__human-may-assert",
        "a human-asserted assertion and a human-asserted falsification signed by a human key are accepted",
    )
    .trust(alice);
    signed(
        &mut c,
        "human-assertion",
        "assertion",
        Role::Human,
        &[],
        alice,
    );
    signed(
        &mut c,
        "human-falsification",
        "falsification",
        Role::Human,
        tg,
        alice,
    );
    out.push(c.verdicts(vec![OK, OK]));

    let mut c = Case::new(
        "roles__human-cannot-verify",
        "a verification signed by a human key is rejected whatever its origin: ROLE_VIOLATION",
    )
    .trust(alice);
    signed(
        &mut c,
        "human-verification",
        "verification",
        Role::Human,
        tg,
        alice,
    );
    signed(
        &mut c,
        "observed-verification-by-human",
        "verification",
        Role::Harness,
        tg,
        alice,
    );
    out.push(c.verdicts(vec![Some("ROLE_VIOLATION"), Some("ROLE_VIOLATION")]));

    let mut c = Case::new(
        "roles__residue-acceptance-by-human",
        "a human-asserted residue-acceptance signed by a human key is accepted",
    )
    .trust(alice);
    signed(
        &mut c,
        "acceptance",
        "residue-acceptance",
        Role::Human,
        tg,
        alice,
    );
    out.push(c.verdicts(vec![OK]));

    let mut c = Case::new(
        "roles__residue-acceptance-not-by-machines",
        "a residue-acceptance from a harness (harness-observed or relayed) or an agent is rejected: ROLE_VIOLATION",
    )
    .trust(ci)
    .trust(bot);
    signed(
        &mut c,
        "harness-acceptance",
        "residue-acceptance",
        Role::Harness,
        tg,
        ci,
    );
    signed(
        &mut c,
        "relayed-acceptance",
        "residue-acceptance",
        Role::Agent,
        tg,
        ci,
    );
    signed(
        &mut c,
        "agent-acceptance",
        "residue-acceptance",
        Role::Agent,
        tg,
        bot,
    );
    out.push(c.verdicts(vec![
        Some("ROLE_VIOLATION"),
        Some("ROLE_VIOLATION"),
        Some("ROLE_VIOLATION"),
    ]));

    let mut c = Case::new(
        "roles__agent-may-falsify-and-supersede",
        "falsification and supersession carry no role rule beyond origin: agent-asserted ones signed by an agent key are accepted",
    )
    .trust(bot);
    signed(
        &mut c,
        "agent-falsification",
        "falsification",
        Role::Agent,
        tg,
        bot,
    );
    signed(
        &mut c,
        "agent-supersession",
        "supersession",
        Role::Agent,
        tg,
        bot,
    );
    out.push(c.verdicts(vec![OK, OK]));

    let mut c = Case::new(
        "roles__hint-does-not-grant-role",
        "an agent-signed harness-observed verification whose keyid hint names the trusted harness key is still rejected: ROLE_VIOLATION",
    )
    .trust(bot)
    .trust(ci);
    let t = c.t();
    let (_, pred) = identified(&claim_value(
        "verification",
        Role::Harness,
        "hint names ci",
        tg,
        &[],
        t,
    ));
    let payload = statement(&pred, TREE).to_string().into_bytes();
    c.input(
        "agent-sig-ci-hint",
        text(
            &json!({"payloadType": PAYLOAD_TYPE, "payload": STANDARD.encode(&payload),
            "signatures": [{"keyid": ci.keyid(), "sig": sig_b64(bot, PAYLOAD_TYPE, &payload)}]}),
        ),
    );
    out.push(c.verdicts(vec![Some("ROLE_VIOLATION")]));

    let mut c = Case::new(
        "roles__authorized-cosigner-suffices",
        "a harness-observed verification signed by both an agent key and a harness key is accepted: the harness key has the authority",
    )
    .trust(bot)
    .trust(ci);
    let t = c.t();
    let (_, pred) = identified(&claim_value(
        "verification",
        Role::Harness,
        "cosigned",
        tg,
        &[],
        t,
    ));
    let payload = statement(&pred, TREE).to_string().into_bytes();
    c.input(
        "agent-and-harness",
        text(&envelope(PAYLOAD_TYPE, &payload, &[bot, ci])),
    );
    out.push(c.verdicts(vec![OK]));
}

fn id_cases(k: &Keys, out: &mut Vec<Case>) {
    let (bot, ci) = (&k.bot, &k.ci);

    fn reorder(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut out = Map::new();
                for (k, x) in m.iter().rev() {
                    out.insert(k.clone(), reorder(x));
                }
                Value::Object(out)
            }
            Value::Array(a) => Value::Array(a.iter().map(reorder).collect()),
            other => other.clone(),
        }
    }

    let mut c = Case::new(
        "id__member-order-irrelevant",
        "a claim whose members (nested ones too) are serialized in reverse order has the same id and is accepted",
    )
    .trust(bot);
    let t = c.t();
    let (_, pred) = identified(&claim_value(
        "assertion",
        Role::Agent,
        "reordered members",
        &[],
        &[],
        t,
    ));
    let reordered = reorder(&pred);
    assert_ne!(pred.to_string(), reordered.to_string());
    c.sign_raw("reordered", &reordered, TREE, bot);
    out.push(c.verdicts(vec![OK]));

    let mut c = Case::new(
        "id__whitespace-irrelevant",
        "a pretty-printed payload (insignificant whitespace) gives the same id and is accepted",
    )
    .trust(bot);
    let t = c.t();
    let (_, pred) = identified(&claim_value(
        "assertion",
        Role::Agent,
        "pretty printed",
        &[],
        &[],
        t,
    ));
    let body = serde_json::to_string_pretty(&statement(&pred, TREE)).unwrap();
    c.sign_payload("pretty", body.as_bytes(), bot);
    out.push(c.verdicts(vec![OK]));

    let mut c = Case::new(
        "id__string-escapes-irrelevant",
        "strings written with \\u escapes and an escaped solidus canonicalize to the same characters, so the id computed over the canonical form matches",
    )
    .trust(bot);
    let t = c.t();
    let (_, pred) = identified(&claim_value(
        "assertion",
        Role::Agent,
        "café — naïve résumé",
        &[],
        &[],
        t,
    ));
    let body = statement(&pred, TREE).to_string();
    let mut escaped = String::new();
    for ch in body.chars() {
        if ch as u32 > 0x7f {
            escaped.push_str(&format!("\\u{:04x}", ch as u32));
        } else {
            escaped.push(ch);
        }
    }
    let escaped = escaped.replace("src/parse.rs", "src\\/parse.rs");
    assert!(escaped.contains("\\u00e9") && escaped.contains("\\/"));
    c.sign_payload("escaped", escaped.as_bytes(), bot);
    out.push(c.verdicts(vec![OK]));

    let mut c = Case::new(
        "id__number-spelling-irrelevant",
        "anchor.range written as [1.0e1, 2E1] is the integers [10, 20] (RFC 8785 writes 10 and 20), so the id computed over [10, 20] matches",
    )
    .trust(bot);
    let t = c.t();
    let mut v = claim_value("assertion", Role::Agent, "number spelling", &[], &[], t);
    v["anchor"]["range"] = json!([10, 20]);
    let (_, pred) = identified(&v);
    let body = statement(&pred, TREE).to_string();
    let spelled = body.replacen("\"range\":[10,20]", "\"range\":[1.0e1,2E1]", 1);
    assert_ne!(body, spelled);
    c.sign_payload("exponent-numbers", spelled.as_bytes(), bot);
    out.push(c.verdicts(vec![OK]));

    let mut c = Case::new(
        "id__mismatch",
        "a claim carrying the id of a different claim is rejected: ID_MISMATCH",
    )
    .trust(bot);
    let t = c.t();
    let first = claim_value("assertion", Role::Agent, "the first claim", &[], &[], t);
    let first_id = claim_id(&first);
    let t = c.t();
    let second = claim_value("assertion", Role::Agent, "the second claim", &[], &[], t);
    c.sign_raw(
        "borrowed-id",
        &with_id_member(&second, &first_id),
        TREE,
        bot,
    );
    out.push(c.verdicts(vec![Some("ID_MISMATCH")]));

    let mut c = Case::new(
        "id__content-changed-after-id",
        "a claim edited after its id was computed (timestamp changed) is rejected: ID_MISMATCH",
    )
    .trust(bot);
    let t = c.t();
    let (_, mut pred) = identified(&claim_value(
        "assertion",
        Role::Agent,
        "edited later",
        &[],
        &[],
        t,
    ));
    pred["timestamp"] = json!(t + 1);
    c.sign_raw("edited", &pred, TREE, bot);
    out.push(c.verdicts(vec![Some("ID_MISMATCH")]));

    let mut c = Case::new(
        "id__hash-includes-id-member",
        "an id computed over the claim including an (empty) id member is not the claim id: ID_MISMATCH",
    )
    .trust(bot);
    let t = c.t();
    let v = claim_value("assertion", Role::Agent, "hashed with id", &[], &[], t);
    let with_empty = with_id_member(&v, "");
    let wrong = format!("cl_{}", sha256_hex(&jcs(&with_empty)));
    assert_ne!(wrong, claim_id(&v));
    c.sign_raw("id-over-id", &with_id_member(&v, &wrong), TREE, bot);
    out.push(c.verdicts(vec![Some("ID_MISMATCH")]));

    let mut c = Case::new(
        "id__hash-of-non-canonical-form",
        "an id computed over the claim's non-canonical serialization (members unsorted) instead of RFC 8785 is rejected: ID_MISMATCH",
    )
    .trust(bot);
    let t = c.t();
    let v = claim_value("assertion", Role::Agent, "not canonical", &[], &[], t);
    let wrong = format!("cl_{}", sha256_hex(v.to_string().as_bytes()));
    assert_ne!(wrong, claim_id(&v));
    c.sign_raw("id-over-raw", &with_id_member(&v, &wrong), TREE, bot);
    out.push(c.verdicts(vec![Some("ID_MISMATCH")]));

    let mut c = Case::new(
        "id__missing",
        "a claim without an id member is rejected (id is required): SCHEMA_VIOLATION",
    )
    .trust(bot);
    let t = c.t();
    let v = claim_value("assertion", Role::Agent, "no id", &[], &[], t);
    c.sign_raw("no-id", &v, TREE, bot);
    out.push(c.verdicts(vec![Some("SCHEMA_VIOLATION")]));

    let mut c = Case::new(
        "id__not-lowercase",
        "an id in uppercase hex (or without the cl_ prefix) does not match ^cl_[0-9a-f]{64}$: SCHEMA_VIOLATION",
    )
    .trust(bot);
    let t = c.t();
    let v = claim_value("assertion", Role::Agent, "uppercase id", &[], &[], t);
    let id = claim_id(&v);
    c.sign_raw(
        "uppercase",
        &with_id_member(&v, &format!("cl_{}", id[3..].to_uppercase())),
        TREE,
        bot,
    );
    c.sign_raw("no-prefix", &with_id_member(&v, &id[3..]), TREE, bot);
    out.push(c.verdicts(vec![Some("SCHEMA_VIOLATION"), Some("SCHEMA_VIOLATION")]));

    let mut c = Case::new(
        "id__self-dependency-forged",
        "a claim naming its own id in dependsOn cannot carry a correct id: the forgery is rejected with ID_MISMATCH",
    )
    .trust(bot);
    let t = c.t();
    let v = claim_value("assertion", Role::Agent, "depends on itself", &[], &[], t);
    let own = claim_id(&v);
    let mut forged = with_id_member(&v, &own);
    forged["dependsOn"] = json!([own]);
    c.sign_raw("self-premise", &forged, TREE, bot);
    out.push(c.verdicts(vec![Some("ID_MISMATCH")]));

    let mut c = Case::new(
        "id__forged-cycle",
        "A depends on B; a B that also claims to depend on A while keeping its old id is rejected (ID_MISMATCH), so no cycle can be ingested",
    )
    .trust(bot);
    let t = c.t();
    let b = claim_value("assertion", Role::Agent, "claim B", &[], &[], t);
    let b_id = claim_id(&b);
    let a = c.assertion("a-depends-on-b", &[&b_id], bot);
    let mut b_forged = with_id_member(&b, &b_id);
    b_forged["dependsOn"] = json!([a]);
    c.sign_raw("b-forged-depends-on-a", &b_forged, TREE, bot);
    out.push(c.verdicts(vec![OK, Some("ID_MISMATCH")]));

    let mut c = Case::new(
        "id__same-claim-two-envelopes",
        "the same claim signed by an agent key and relayed by a harness key is one claim: both envelopes are accepted, and a verification of that id verifies it",
    )
    .trust(bot)
    .trust(ci);
    let t = c.t();
    let v = claim_value("assertion", Role::Agent, "signed twice", &[], &[], t);
    let a = c.sign("by-agent", v.clone(), bot);
    let a2 = c.sign("relayed-by-harness", v, ci);
    assert_eq!(a, a2);
    let ver = c.claim("verify", "verification", &[&a], &[], ci);
    out.push(c.status(vec![(&a, "verified"), (&ver, "unevaluated")]));
}

fn fold_cases(k: &Keys, out: &mut Vec<Case>) {
    let (bot, ci, alice) = (&k.bot, &k.ci, &k.alice);
    let base = |id: &str, d: &str| Case::new(id, d).trust(bot).trust(ci);

    let mut c = base(
        "fold__unevaluated-by-default",
        "a claim with no records targeting it is unevaluated",
    );
    let a = c.assertion("a", &[], bot);
    out.push(c.status(vec![(&a, "unevaluated")]));

    let mut c = base(
        "fold__verified",
        "a live verification makes its target verified; the verification itself is unevaluated",
    );
    let a = c.assertion("a", &[], bot);
    let v = c.claim("verify-a", "verification", &[&a], &[], ci);
    out.push(c.status(vec![(&a, "verified"), (&v, "unevaluated")]));

    let mut c = base(
        "fold__falsified",
        "a live falsification makes its target falsified",
    );
    let a = c.assertion("a", &[], bot);
    let f = c.claim("falsify-a", "falsification", &[&a], &[], ci);
    out.push(c.status(vec![(&a, "falsified"), (&f, "unevaluated")]));

    let mut c = base(
        "fold__falsification-beats-verification",
        "falsification outranks verification: a claim with both live records is falsified",
    );
    let a = c.assertion("a", &[], bot);
    c.claim("verify-a", "verification", &[&a], &[], ci);
    c.claim("falsify-a", "falsification", &[&a], &[], ci);
    out.push(c.status(vec![(&a, "falsified")]));

    let mut c = base(
        "fold__supersession-beats-verification",
        "supersession outranks verification: a verified claim that is superseded is superseded",
    );
    let a = c.assertion("a", &[], bot);
    c.claim("verify-a", "verification", &[&a], &[], ci);
    c.claim("supersede-a", "supersession", &[&a], &[], bot);
    out.push(c.status(vec![(&a, "superseded")]));

    let mut c = base(
        "fold__falsification-beats-supersession",
        "falsification outranks supersession: a claim with both live records is falsified",
    );
    let a = c.assertion("a", &[], bot);
    c.claim("supersede-a", "supersession", &[&a], &[], bot);
    c.claim("falsify-a", "falsification", &[&a], &[], ci);
    out.push(c.status(vec![(&a, "falsified")]));

    let mut c = base(
        "fold__revocation-propagates",
        "falsifying a premise revokes its dependents transitively along dependsOn",
    );
    let a = c.assertion("a", &[], bot);
    let b = c.assertion("b-from-a", &[&a], bot);
    let cc = c.assertion("c-from-b", &[&b], bot);
    let d = c.assertion("d-unrelated", &[], bot);
    c.claim("falsify-a", "falsification", &[&a], &[], ci);
    out.push(c.status(vec![
        (&a, "falsified"),
        (&b, "revoked"),
        (&cc, "revoked"),
        (&d, "unevaluated"),
    ]));

    let mut c = base(
        "fold__falsified-falsification-reverts",
        "a falsified falsification stops falsifying: its target reverts to unevaluated and the target's dependents are no longer revoked",
    );
    let a = c.assertion("a", &[], bot);
    let b = c.assertion("b-from-a", &[&a], bot);
    let f1 = c.claim("falsify-a", "falsification", &[&a], &[], ci);
    let f2 = c.claim(
        "falsify-the-falsification",
        "falsification",
        &[&f1],
        &[],
        ci,
    );
    out.push(c.status(vec![
        (&a, "unevaluated"),
        (&b, "unevaluated"),
        (&f1, "falsified"),
        (&f2, "unevaluated"),
    ]));

    let mut c = base(
        "fold__falsified-falsification-reverts-to-verified",
        "when the falsification of a verified claim is itself falsified, the live verification decides again: verified",
    );
    let a = c.assertion("a", &[], bot);
    c.claim("verify-a", "verification", &[&a], &[], ci);
    let f1 = c.claim("falsify-a", "falsification", &[&a], &[], ci);
    c.claim("falsify-f1", "falsification", &[&f1], &[], ci);
    out.push(c.status(vec![(&a, "verified"), (&f1, "falsified")]));

    let mut c = base(
        "fold__falsification-chain-alternates",
        "F3 falsifies F2 falsifies F1 falsifies A: F2 is dead, so F1 is live and A is falsified",
    );
    let a = c.assertion("a", &[], bot);
    let f1 = c.claim("f1-falsifies-a", "falsification", &[&a], &[], ci);
    let f2 = c.claim("f2-falsifies-f1", "falsification", &[&f1], &[], ci);
    let f3 = c.claim("f3-falsifies-f2", "falsification", &[&f2], &[], ci);
    out.push(c.status(vec![
        (&a, "falsified"),
        (&f1, "unevaluated"),
        (&f2, "falsified"),
        (&f3, "unevaluated"),
    ]));

    let mut c = base(
        "fold__falsified-verification-stops-verifying",
        "a falsified verification is not live: its target goes back to unevaluated",
    );
    let a = c.assertion("a", &[], bot);
    let v = c.claim("verify-a", "verification", &[&a], &[], ci);
    c.claim("falsify-v", "falsification", &[&v], &[], ci);
    out.push(c.status(vec![(&a, "unevaluated"), (&v, "falsified")]));

    let mut c = base(
        "fold__verified-record-is-live",
        "a falsification that is itself verified is live (own status verified) and falsifies its target",
    );
    let a = c.assertion("a", &[], bot);
    let f = c.claim("falsify-a", "falsification", &[&a], &[], ci);
    c.claim("verify-f", "verification", &[&f], &[], ci);
    out.push(c.status(vec![(&a, "falsified"), (&f, "verified")]));

    let mut c = base(
        "fold__superseded-supersession-reverts",
        "a superseded supersession is not live: its target reverts to verified",
    );
    let a = c.assertion("a", &[], bot);
    c.claim("verify-a", "verification", &[&a], &[], ci);
    let s1 = c.claim("supersede-a", "supersession", &[&a], &[], bot);
    c.claim("supersede-s1", "supersession", &[&s1], &[], bot);
    out.push(c.status(vec![(&a, "verified"), (&s1, "superseded")]));

    let mut c = base(
        "fold__diamond-revoked-once",
        "A falsified, B and C depend on A, D on B and C: B, C and D are revoked",
    );
    let a = c.assertion("a", &[], bot);
    let b = c.assertion("b", &[&a], bot);
    let cc = c.assertion("c", &[&a], bot);
    let d = c.assertion("d-from-b-and-c", &[&b, &cc], bot);
    c.claim("falsify-a", "falsification", &[&a], &[], ci);
    out.push(c.status(vec![
        (&a, "falsified"),
        (&b, "revoked"),
        (&cc, "revoked"),
        (&d, "revoked"),
    ]));

    let mut c = base(
        "fold__superseded-premise-is-stale-not-revoked",
        "a superseded premise does not revoke its dependent: the dependent keeps its own status",
    );
    let a = c.assertion("a", &[], bot);
    let b = c.assertion("b-from-a", &[&a], bot);
    let cc = c.assertion("c-from-b", &[&b], bot);
    c.claim("supersede-a", "supersession", &[&a], &[], bot);
    c.claim("verify-b", "verification", &[&b], &[], ci);
    out.push(c.status(vec![
        (&a, "superseded"),
        (&b, "verified"),
        (&cc, "unevaluated"),
    ]));

    let mut c = base(
        "fold__verified-but-revoked",
        "a verified claim whose premise is falsified is revoked: revocation outranks an own status of verified",
    );
    let a = c.assertion("a", &[], bot);
    let b = c.assertion("b-from-a", &[&a], bot);
    c.claim("verify-b", "verification", &[&b], &[], ci);
    c.claim("falsify-a", "falsification", &[&a], &[], ci);
    out.push(c.status(vec![(&a, "falsified"), (&b, "revoked")]));

    let mut c = base(
        "fold__own-superseded-beats-revoked",
        "a superseded claim whose premise is falsified stays superseded (own falsified or superseded is reported as is)",
    );
    let a = c.assertion("a", &[], bot);
    let b = c.assertion("b-from-a", &[&a], bot);
    let cc = c.assertion("c-from-a", &[&a], bot);
    c.claim("supersede-b", "supersession", &[&b], &[], bot);
    c.claim("falsify-c", "falsification", &[&cc], &[], ci);
    c.claim("falsify-a", "falsification", &[&a], &[], ci);
    out.push(c.status(vec![
        (&a, "falsified"),
        (&b, "superseded"),
        (&cc, "falsified"),
    ]));

    let mut c = base(
        "fold__verification-with-falsified-premise-still-verifies",
        "a verification revoked through its falsified premise still acts on its target: the target stays verified",
    );
    let a = c.assertion("a", &[], bot);
    let p = c.assertion("premise-of-the-verification", &[], bot);
    let v = c.claim("verify-a-from-p", "verification", &[&a], &[&p], ci);
    c.claim("falsify-p", "falsification", &[&p], &[], ci);
    out.push(c.status(vec![(&a, "verified"), (&p, "falsified"), (&v, "revoked")]));

    let mut c = base(
        "fold__falsification-of-its-own-premise",
        "a falsification whose premise is its own target is revoked yet still falsifies that target",
    );
    let a = c.assertion("a", &[], bot);
    let f = c.claim("falsify-a-from-a", "falsification", &[&a], &[&a], ci);
    out.push(c.status(vec![(&a, "falsified"), (&f, "revoked")]));

    let mut c = base(
        "fold__revoked-falsification-of-falsification-acts",
        "a revoked record that falsifies a falsification still acts: the first falsification is dead and its target reverts",
    );
    let a = c.assertion("a", &[], bot);
    let f1 = c.claim("f1-falsifies-a", "falsification", &[&a], &[], ci);
    let p = c.assertion("p", &[], bot);
    let f2 = c.claim("f2-falsifies-f1-from-p", "falsification", &[&f1], &[&p], ci);
    c.claim("f3-falsifies-p", "falsification", &[&p], &[], ci);
    out.push(c.status(vec![
        (&a, "unevaluated"),
        (&f1, "falsified"),
        (&f2, "revoked"),
        (&p, "falsified"),
    ]));

    let mut c = base(
        "fold__multi-target-falsification",
        "one falsification targeting two claims falsifies both, and revokes the dependents of each",
    );
    let a = c.assertion("a", &[], bot);
    let b = c.assertion("b", &[], bot);
    let d = c.assertion("d-from-b", &[&b], bot);
    c.claim("falsify-a-and-b", "falsification", &[&a, &b], &[], ci);
    out.push(c.status(vec![(&a, "falsified"), (&b, "falsified"), (&d, "revoked")]));

    let mut c = base(
        "fold__missing-premise-does-not-revoke",
        "a premise the store has never seen does not revoke: the claim is accepted and unevaluated",
    );
    let ghost = format!("cl_{}", sha256_hex(b"a claim this store never received"));
    let b = c.assertion("b-from-unknown", &[&ghost], bot);
    out.push(c.status(vec![(&b, "unevaluated")]));

    let mut c = base(
        "fold__record-before-target",
        "a falsification added before its target (ingest is local) falsifies the target once it arrives",
    );
    let t = c.t();
    let a_value = claim_value("assertion", Role::Agent, "a", &[], &[], t);
    let a_id = claim_id(&a_value);
    let b_value = claim_value("assertion", Role::Agent, "b-from-a", &[], &[&a_id], c.t());
    let b_id = claim_id(&b_value);
    let f = c.claim("falsify-a", "falsification", &[&a_id], &[], ci);
    c.sign("b-from-a", b_value, bot);
    c.sign("a", a_value, bot);
    out.push(c.status(vec![
        (&a_id, "falsified"),
        (&b_id, "revoked"),
        (&f, "unevaluated"),
    ]));

    let mut c = base(
        "fold__residue-acceptance",
        "a live residue-acceptance leaves its unevaluated target unevaluated and reports it accepted",
    )
    .trust(alice);
    let a = c.assertion("a", &[], bot);
    let b = c.assertion("b", &[], bot);
    let r = c.claim("accept-a", "residue-acceptance", &[&a], &[], alice);
    out.push(c.status_accepted(
        vec![
            (&a, "unevaluated"),
            (&b, "unevaluated"),
            (&r, "unevaluated"),
        ],
        vec![&a],
    ));

    let mut c = base(
        "fold__acceptance-of-verified-is-not-residue",
        "an acceptance changes no status: a verified target stays verified and is not reported as residue-accepted",
    )
    .trust(alice);
    let a = c.assertion("a", &[], bot);
    c.claim("verify-a", "verification", &[&a], &[], ci);
    c.claim("accept-a", "residue-acceptance", &[&a], &[], alice);
    out.push(c.status_accepted(vec![(&a, "verified")], vec![]));

    let mut c = base(
        "fold__acceptance-of-revoked-is-not-residue",
        "an accepted claim whose premise is then falsified is revoked and no longer reported accepted",
    )
    .trust(alice);
    let a = c.assertion("a", &[], bot);
    let b = c.assertion("b-from-a", &[&a], bot);
    c.claim("accept-b", "residue-acceptance", &[&b], &[], alice);
    c.claim("falsify-a", "falsification", &[&a], &[], ci);
    out.push(c.status_accepted(vec![(&a, "falsified"), (&b, "revoked")], vec![]));

    let mut c = base(
        "fold__falsified-acceptance-accepts-nothing",
        "a falsified residue-acceptance is not live: its target is unevaluated and not accepted",
    )
    .trust(alice);
    let a = c.assertion("a", &[], bot);
    let r = c.claim("accept-a", "residue-acceptance", &[&a], &[], alice);
    c.claim("withdraw-acceptance", "falsification", &[&r], &[], alice);
    out.push(c.status_accepted(vec![(&a, "unevaluated"), (&r, "falsified")], vec![]));

    // The same set of claims in two orders (docs/status.md: status is a function of the set).
    let mut c = base("fold__order-a", "");
    let a = c.assertion("a", &[], bot);
    let b = c.assertion("b-from-a", &[&a], bot);
    let cc = c.assertion("c-from-b", &[&b], bot);
    let d = c.assertion("d", &[], bot);
    let e = c.assertion("e-from-d", &[&d], bot);
    let v = c.claim("verify-a", "verification", &[&a], &[], ci);
    let f1 = c.claim("falsify-a", "falsification", &[&a], &[], ci);
    let f2 = c.claim("falsify-f1", "falsification", &[&f1], &[], ci);
    let f3 = c.claim("falsify-b", "falsification", &[&b], &[], ci);
    let s = c.claim("supersede-d", "supersession", &[&d], &[], bot);
    let statuses: Vec<(&String, &'static str)> = vec![
        (&a, "verified"),
        (&b, "falsified"),
        (&cc, "revoked"),
        (&d, "superseded"),
        (&e, "unevaluated"),
        (&v, "unevaluated"),
        (&f1, "falsified"),
        (&f2, "unevaluated"),
        (&f3, "unevaluated"),
        (&s, "unevaluated"),
    ];
    let inputs = c.inputs.clone();
    c.description = "ten claims added premises first, records last: statuses follow the set (see fold__order-b for the reverse order)".into();
    out.push(c.status(statuses.clone()));
    let mut c = base(
        "fold__order-b",
        "the claims of fold__order-a added in reverse order (records before their targets): the same statuses",
    );
    for (name, bytes) in inputs.iter().rev() {
        let label = name.split_once('-').unwrap().1.trim_end_matches(".dsse");
        c.input(label, bytes.clone());
    }
    out.push(c.status(statuses));
}

fn blast_cases(k: &Keys, out: &mut Vec<Case>) {
    let (bot, ci) = (&k.bot, &k.ci);
    let base = |id: &str, d: &str| Case::new(id, d).trust(bot).trust(ci);

    let mut c = base(
        "blast__single",
        "a claim nothing depends on has a blast radius of itself alone",
    );
    let a = c.assertion("a", &[], bot);
    c.assertion("unrelated", &[], bot);
    out.push(c.blast(&a, None, vec![vec![&a]], vec![]));

    let mut c = base(
        "blast__chain",
        "A <- B <- C: one claim per layer, depth 0 to 2",
    );
    let a = c.assertion("a", &[], bot);
    let b = c.assertion("b", &[&a], bot);
    let cc = c.assertion("c", &[&b], bot);
    out.push(c.blast(&a, None, vec![vec![&a], vec![&b], vec![&cc]], vec![]));

    let mut c = base(
        "blast__from-the-middle",
        "the blast radius of the middle of a chain holds only what lies downstream of it",
    );
    let a = c.assertion("a", &[], bot);
    let b = c.assertion("b", &[&a], bot);
    let cc = c.assertion("c", &[&b], bot);
    out.push(c.blast(&b, None, vec![vec![&b], vec![&cc]], vec![]));

    let mut c = base(
        "blast__diamond",
        "B and C depend on A, D on both: D appears once, at depth 2",
    );
    let a = c.assertion("a", &[], bot);
    let b = c.assertion("b", &[&a], bot);
    let cc = c.assertion("c", &[&a], bot);
    let d = c.assertion("d", &[&b, &cc], bot);
    out.push(c.blast(
        &a.clone(),
        None,
        vec![vec![&a], vec![&b, &cc], vec![&d]],
        vec![],
    ));

    let mut c = base(
        "blast__shortest-depth",
        "D depends on A directly and on C (two steps from A): D is listed at its shortest depth, 1",
    );
    let a = c.assertion("a", &[], bot);
    let b = c.assertion("b", &[&a], bot);
    let cc = c.assertion("c", &[&b], bot);
    let d = c.assertion("d", &[&a, &cc], bot);
    out.push(c.blast(
        &a.clone(),
        None,
        vec![vec![&a], vec![&b, &d], vec![&cc]],
        vec![],
    ));

    let mut c = base(
        "blast__fan-out-sorted",
        "five direct dependents form one layer, sorted by id",
    );
    let a = c.assertion("a", &[], bot);
    let mut deps = Vec::new();
    for i in 1..=5 {
        deps.push(c.assertion(&format!("dependent-{i}"), &[&a], bot));
    }
    out.push(c.blast(&a, None, vec![vec![&a], deps.iter().collect()], vec![]));

    let mut c = base(
        "blast__depth-cut",
        "with depth 2 a chain A <- B <- C <- D is reported down to depth 2: A, B, C",
    );
    let a = c.assertion("a", &[], bot);
    let b = c.assertion("b", &[&a], bot);
    let cc = c.assertion("c", &[&b], bot);
    c.assertion("d", &[&cc], bot);
    out.push(c.blast(&a, Some(2), vec![vec![&a], vec![&b], vec![&cc]], vec![]));

    let mut c = base(
        "blast__depth-zero",
        "with depth 0 only the root is reported",
    );
    let a = c.assertion("a", &[], bot);
    c.assertion("b", &[&a], bot);
    out.push(c.blast(&a, Some(0), vec![vec![&a]], vec![]));

    let mut c = base(
        "blast__records-are-not-premises",
        "a falsification and a verification that target A (without depending on it) are not in A's blast radius",
    );
    let a = c.assertion("a", &[], bot);
    let b = c.assertion("b", &[&a], bot);
    c.claim("verify-a", "verification", &[&a], &[], ci);
    c.claim("falsify-b", "falsification", &[&b], &[], ci);
    out.push(c.blast(&a, None, vec![vec![&a], vec![&b]], vec![]));

    let mut c = base(
        "blast__falsified-root-keeps-its-radius",
        "the blast radius of an already falsified claim lists what that falsification revoked",
    );
    let a = c.assertion("a", &[], bot);
    let b = c.assertion("b", &[&a], bot);
    let cc = c.assertion("c", &[&b], bot);
    c.claim("falsify-a", "falsification", &[&a], &[], ci);
    out.push(c.blast(&a, None, vec![vec![&a], vec![&b], vec![&cc]], vec![]));

    let mut c = base(
        "blast__affected-target-of-verification",
        "a verification that depends on A is in A's blast radius, and the claim it verifies (outside the closure) is affected",
    );
    let a = c.assertion("a", &[], bot);
    let x = c.assertion("x", &[], bot);
    let v = c.claim("verify-x-from-a", "verification", &[&x], &[&a], ci);
    out.push(c.blast(&a, None, vec![vec![&a], vec![&v]], vec![&x]));

    let mut c = base(
        "blast__affected-target-of-falsification",
        "a falsification that depends on A is in A's blast radius, and the claim it falsifies is affected",
    );
    let a = c.assertion("a", &[], bot);
    let x = c.assertion("x", &[], bot);
    let f = c.claim("falsify-x-from-a", "falsification", &[&x], &[&a], ci);
    out.push(c.blast(&a, None, vec![vec![&a], vec![&f]], vec![&x]));

    let mut c = base(
        "blast__affected-only-when-deciding",
        "a verification in the closure whose target is decided by a falsification outside it does not make that target affected",
    );
    let a = c.assertion("a", &[], bot);
    let x = c.assertion("x", &[], bot);
    let v = c.claim("verify-x-from-a", "verification", &[&x], &[&a], ci);
    c.claim("falsify-x", "falsification", &[&x], &[], ci);
    out.push(c.blast(&a, None, vec![vec![&a], vec![&v]], vec![]));

    let mut c = base(
        "blast__target-inside-closure-not-affected",
        "a verification in the closure whose target is also in the closure lists no affected claim",
    );
    let a = c.assertion("a", &[], bot);
    let b = c.assertion("b", &[&a], bot);
    let v = c.claim("verify-b-from-a", "verification", &[&b], &[&a], ci);
    out.push(c.blast(&a, None, vec![vec![&a], vec![&b, &v]], vec![]));

    let mut c = base(
        "blast__acceptance-decides-nothing",
        "a residue-acceptance in the closure changes no status, so the claim it accepts is not affected",
    )
    .trust(&k.alice);
    let a = c.assertion("a", &[], bot);
    let x = c.assertion("x", &[], bot);
    let r = c.claim(
        "accept-x-from-a",
        "residue-acceptance",
        &[&x],
        &[&a],
        &k.alice,
    );
    out.push(c.blast(&a, None, vec![vec![&a], vec![&r]], vec![]));

    let mut c = base(
        "blast__depth-cut-keeps-shortest-depth",
        "with depth 1, a claim reachable both directly and through a longer path is kept at depth 1 and the rest is cut",
    );
    let a = c.assertion("a", &[], bot);
    let b = c.assertion("b", &[&a], bot);
    let cc = c.assertion("c", &[&b], bot);
    let d = c.assertion("d", &[&a, &cc], bot);
    out.push(c.blast(&a, Some(1), vec![vec![&a], vec![&b, &d]], vec![]));
}

// ---------------------------------------------------------------------------------------------

fn main() {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "fixtures/conformance".into()),
    );
    let keys = Keys {
        bot: Key::new("bot", Role::Agent),
        ci: Key::new("ci", Role::Harness),
        alice: Key::new("alice", Role::Human),
        old_ci: Key::new("old-ci", Role::Harness),
        mallory: Key::new("mallory", Role::Agent),
    };

    let mut cases = Vec::new();
    envelope_cases(&keys, &mut cases);
    schema_cases(&keys, &mut cases);
    roles_cases(&keys, &mut cases);
    id_cases(&keys, &mut cases);
    fold_cases(&keys, &mut cases);
    blast_cases(&keys, &mut cases);

    // Check everything before touching the output directory.
    let mut seen = std::collections::BTreeSet::new();
    for case in &cases {
        assert!(is_case_dir(&case.id), "bad case id {}", case.id);
        assert!(
            seen.insert(case.id.clone()),
            "duplicate case id {}",
            case.id
        );
        assert!(!case.description.is_empty(), "{}: description", case.id);
        assert!(!case.inputs.is_empty(), "{}: inputs", case.id);
        check(case);
    }

    // Remove what this generator owns (manifest, specs, case folders), then write afresh.
    if dir.is_dir() {
        for entry in std::fs::read_dir(&dir).expect("read output dir") {
            let entry = entry.expect("dir entry");
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if name == "manifest.json" {
                std::fs::remove_file(&path).expect("remove manifest");
            } else if (name == "specs" || is_case_dir(&name)) && path.is_dir() {
                std::fs::remove_dir_all(&path).expect("remove old folder");
            }
        }
    }
    std::fs::create_dir_all(dir.join("specs")).expect("create output dir");
    for (name, bytes) in specs() {
        write(&dir.join("specs").join(name), &bytes);
    }
    for case in &cases {
        write_case(&dir, case);
    }
    let manifest = json!({
        "corpus": "elench-conformance",
        "version": "0.1.0",
        "cases": cases.iter().map(|c| json!({"id": c.id, "scope": c.scope,
            "description": c.description})).collect::<Vec<_>>(),
    });
    write(&dir.join("manifest.json"), &pretty(&manifest));

    let mut per_area = std::collections::BTreeMap::new();
    for c in &cases {
        *per_area
            .entry(c.id.split("__").next().unwrap().to_owned())
            .or_insert(0) += 1;
    }
    println!(
        "wrote {} cases to {} ({per_area:?})",
        cases.len(),
        dir.display()
    );
}
