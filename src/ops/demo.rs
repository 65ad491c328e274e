//! `elench demo`: elench's main job, end to end, on envelopes shipped inside the binary
//! (`fixtures/demo/`, made by `cargo run --example make_demo_fixtures`).
//!
//! An agent makes three claims, each built on the previous one; a harness verifies the first;
//! a harness falsifies it, which revokes the other two; a second falsification shows the first
//! was wrong, and everything reverts. Then an agent claims something about a real tree and
//! `elench check` itself falsifies it. Every step goes through the same ingest, store, fold
//! and evaluation as `elench add`, `elench status` and `elench check`. The demo builds its
//! own store (in a scratch directory of the context's reaper, removed when it ends, or in a
//! folder the caller keeps) and tells its story as it goes.

use super::{Context, Failure};
use crate::eval::paths::Tree;
use crate::eval::sandbox::{Confinement, Limits, Sandbox};
use crate::eval::Setup;
use crate::fold::Fold;
use crate::graph::blast;
use crate::ingest::verify_envelope;
use crate::keys::{read_public_key_pem, Role, TrustedKey};
use crate::scratch::ScratchDir;
use crate::store::{Options, Store, STORE_DIR};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What the demo did.
#[derive(Debug)]
pub struct DemoOutput {
    /// Where the demo's store is kept (None: it was temporary, and is gone).
    pub store: Option<PathBuf>,
    /// The claims it added, by their short names: (name, id).
    pub claims: Vec<(String, String)>,
    /// Each step: its title and the statuses, refusal, check or blast radius it showed.
    pub steps: Vec<Value>,
    /// The story, as the demo tells it to a person.
    pub text: String,
}

/// Runs the demo: in a scratch directory of its own, removed when it ends, or, with `keep`,
/// in `keep/.elench` (which must not exist yet: a caller says so before it calls).
pub fn demo(ctx: &Context, keep: Option<&Path>) -> Result<DemoOutput, Failure> {
    // A temporary store lives as long as `scratch`, which removes it when dropped.
    let scratch = match keep {
        None => Some(
            ScratchDir::create("elench-demo", ctx.reaper())
                .map_err(|e| Failure::io(std::env::temp_dir().display(), e))?,
        ),
        Some(_) => None,
    };
    let root = match (keep, &scratch) {
        (Some(d), _) => d.join(STORE_DIR),
        (None, Some(s)) => s.path().join(STORE_DIR),
        (None, None) => return Err(Failure::Internal("no demo directory".into())),
    };
    let result = story(&root, ctx);
    drop(scratch);
    let (text, steps, claims) = result?;
    Ok(DemoOutput {
        store: keep.map(|_| root),
        claims,
        steps,
        text,
    })
}

const AGENT_PUB: &str = include_str!("../../fixtures/demo/agent.pub");
const HARNESS_PUB: &str = include_str!("../../fixtures/demo/harness.pub");

/// The real tree `elench check` examines in the demo (its one file).
const TREE_PARSE_RS: &str = include_str!("../../fixtures/demo/tree/src/parse.rs");

/// (short name, file name, envelope text)
const ENVELOPES: [(&str, &str, &str); 8] = [
    (
        "parse",
        "1-parse-rejects-empty.dsse",
        include_str!("../../fixtures/demo/1-parse-rejects-empty.dsse"),
    ),
    (
        "loader",
        "2-config-loader-total.dsse",
        include_str!("../../fixtures/demo/2-config-loader-total.dsse"),
    ),
    (
        "refactor",
        "3-refactor-keeps-behaviour.dsse",
        include_str!("../../fixtures/demo/3-refactor-keeps-behaviour.dsse"),
    ),
    (
        "verification",
        "4-verify-parse.dsse",
        include_str!("../../fixtures/demo/4-verify-parse.dsse"),
    ),
    (
        "falsification",
        "5-falsify-parse.dsse",
        include_str!("../../fixtures/demo/5-falsify-parse.dsse"),
    ),
    (
        "counter-falsification",
        "6-falsify-the-falsification.dsse",
        include_str!("../../fixtures/demo/6-falsify-the-falsification.dsse"),
    ),
    (
        "no-unwrap",
        "7-parse-never-unwraps.dsse",
        include_str!("../../fixtures/demo/7-parse-never-unwraps.dsse"),
    ),
    (
        "cli",
        "8-cli-never-panics.dsse",
        include_str!("../../fixtures/demo/8-cli-never-panics.dsse"),
    ),
];

struct Demo {
    store: Store,
    ids: Vec<(String, String)>, // (short name, id)
    text: String,
    steps: Vec<Value>,
}

type StoryOutput = (String, Vec<Value>, Vec<(String, String)>);

fn story(root: &Path, ctx: &Context) -> Result<StoryOutput, Failure> {
    let (store, _) = Store::init(root, &Options::new(ctx.wait).envs(ctx.environments()))?;
    let mut d = Demo {
        store,
        ids: Vec::new(),
        text: String::new(),
        steps: Vec::new(),
    };
    d.say("elench demo: claims about code, and which of them still stand\n");
    d.say(&format!("store: {}\n", root.display()));

    for (role, name, pem) in [
        (Role::Agent, "demo-agent", AGENT_PUB),
        (Role::Harness, "demo-harness", HARNESS_PUB),
    ] {
        let vk = read_public_key_pem(pem).map_err(|r| Failure::rejected(r, None))?;
        let key = TrustedKey::new(role, name, vk).map_err(|r| Failure::rejected(r, None))?;
        d.store.add_key(&key)?;
        d.say(&format!(
            "trusted {role} key {name} ({})\n",
            &key.keyid[..16]
        ));
    }

    d.step(
        "1. An agent makes three claims, each built on the one before (dependsOn).",
        &[0, 1, 2],
    )?;
    d.tampered()?;
    d.step(
        "2. The harness runs the test behind `parse`: a verification.",
        &[3],
    )?;
    d.step(
        "3. Fuzzing finds a panic: the harness falsifies `parse`. Everything built on it is revoked.",
        &[4],
    )?;
    d.blast("parse")?;
    d.step(
        "4. The fuzz run was against a stale build: the harness falsifies the falsification. \
         `parse` is verified again and its dependents revert; nothing was edited, the log only grew.",
        &[5],
    )?;
    d.check_step(root, ctx)?;
    d.say(&format!(
        "\n{} envelopes in the log; every status above was folded from it.\n",
        d.store.count()?
    ));
    Ok((d.text, d.steps, d.ids))
}

impl Demo {
    fn say(&mut self, s: &str) {
        self.text.push_str(s);
    }

    fn name_of(&self, id: &str) -> String {
        self.ids
            .iter()
            .find(|(_, i)| i == id)
            .map(|(n, _)| n.clone())
            .unwrap_or_else(|| id.to_owned())
    }

    fn id_of(&self, name: &str) -> Result<String, Failure> {
        self.ids
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, i)| i.clone())
            .ok_or_else(|| Failure::Internal(format!("demo claim {name} was not added")))
    }

    fn add(&mut self, index: usize) -> Result<String, Failure> {
        let (name, file, text) = ENVELOPES
            .get(index)
            .ok_or_else(|| Failure::Internal(format!("no demo envelope {index}")))?;
        let bytes = text.trim().as_bytes();
        let trust = self.store.trust_set()?;
        let accepted = verify_envelope(bytes, &trust)
            .map_err(|r| Failure::rejected(r, Some(format!("fixtures/demo/{file}"))))?;
        self.store.add(&accepted, bytes)?;
        let id = accepted.claim.id.clone();
        self.ids.push((name.to_string(), id.clone()));
        let premises: Vec<String> = accepted
            .claim
            .depends_on
            .iter()
            .chain(&accepted.claim.target)
            .map(|p| self.name_of(p))
            .collect();
        let rel = if accepted.claim.target.is_empty() {
            "depends on"
        } else {
            "targets"
        };
        let tail = if premises.is_empty() {
            String::new()
        } else {
            format!(", {rel} {}", premises.join(", "))
        };
        self.say(&format!(
            "  + {name:<22} {} {}{tail}\n",
            accepted.claim.kind,
            &id[..15]
        ));
        Ok(id)
    }

    fn step(&mut self, title: &str, adds: &[usize]) -> Result<(), Failure> {
        self.say(&format!("\n{title}\n"));
        for &i in adds {
            self.add(i)?;
        }
        let mut fold = Fold::new(&self.store);
        let mut statuses = serde_json::Map::new();
        let mut out = String::from("  status now:\n");
        for name in ["parse", "loader", "refactor"] {
            let id = self.id_of(name)?;
            let r = fold.report(&id)?;
            let names = |ids: &[String]| ids.iter().map(|p| self.name_of(p)).collect::<Vec<_>>();
            let why = match r.revoked_by.first() {
                Some(c) => format!("  (premise path {})", names(&c.path).join(" → ")),
                None if !r.decided_by.is_empty() => {
                    format!("  (decided by {})", names(&r.decided_by).join(", "))
                }
                None => String::new(),
            };
            out.push_str(&format!("    {name:<10} {}{why}\n", r.status));
            statuses.insert(name.to_owned(), json!(r.status));
        }
        drop(fold);
        self.say(&out);
        self.steps.push(json!({"title": title, "status": statuses}));
        Ok(())
    }

    /// A claim altered in transit is refused, and the log does not change.
    fn tampered(&mut self) -> Result<(), Failure> {
        let (_, _, text) = ENVELOPES[0];
        let mut env: Value = serde_json::from_str(text)
            .map_err(|e| Failure::Internal(format!("demo envelope: {e}")))?;
        let payload = env["payload"].as_str().unwrap_or_default().to_owned();
        // Swap one base64 character of the payload: the signature no longer covers it.
        let flipped: String = payload
            .char_indices()
            .map(|(i, c)| {
                if i == 40 {
                    if c == 'A' {
                        'B'
                    } else {
                        'A'
                    }
                } else {
                    c
                }
            })
            .collect();
        env["payload"] = json!(flipped);
        let bytes = env.to_string();
        let before = self.store.count()?;
        let trust = self.store.trust_set()?;
        let verdict = match verify_envelope(bytes.as_bytes(), &trust) {
            Ok(_) => return Err(Failure::Internal("a tampered envelope was accepted".into())),
            Err(r) => r,
        };
        self.say(&format!(
            "  x a copy of `parse` altered in transit is refused: {} (log still {} entries)\n",
            verdict.code, before
        ));
        self.steps
            .push(json!({"title": "tampered copy refused", "rejection": verdict.code.as_str()}));
        Ok(())
    }

    /// An agent's predicate claim about a real tree, answered by `elench check` itself: the
    /// grep finds an unwrap, the harness records a falsification with the transcript as
    /// evidence, and the claim built on it is revoked.
    fn check_step(&mut self, root: &Path, ctx: &Context) -> Result<(), Failure> {
        let title = "5. An agent claims parse.rs never unwraps, and another claim builds on it. \
                     `elench check` greps the real tree and falsifies it: no hand-signed record.";
        self.say(&format!("\n{title}\n"));
        self.add(6)?;
        self.add(7)?;
        let dir = root
            .parent()
            .ok_or_else(|| Failure::Internal("the demo store has no parent".into()))?
            .join("tree");
        let file = dir.join("src/parse.rs");
        std::fs::create_dir_all(dir.join("src")).map_err(|e| Failure::io(dir.display(), e))?;
        std::fs::write(&file, TREE_PARSE_RS).map_err(|e| Failure::io(file.display(), e))?;
        let tree_ids = crate::tree::list(&dir, crate::tree::Selection::Committed)
            .and_then(|l| l.ids())
            .map_err(|e| Failure::Internal(e.to_string()))?;
        let tree_oid = tree_ids.oid().to_owned();

        // A harness key for this run only, trusted like any other.
        let key = crate::keys::generate_signing_key();
        let trusted = TrustedKey::new(Role::Harness, "demo-check", key.verifying_key())
            .map_err(|r| Failure::rejected(r, None))?;
        self.store.add_key(&trusted)?;
        let id = self.id_of("no-unwrap")?;
        let stored = self
            .store
            .get(&id)?
            .ok_or_else(|| Failure::Internal("the demo claim was not stored".into()))?;
        let (source, expr) = super::check::predicate_of(&stored.body).map_err(Failure::Internal)?;
        let setup = Setup {
            tree: Tree::new(&dir),
            tree_oid,
            sandbox: Sandbox {
                confinement: Confinement::None,
                expose: Vec::new(),
                limits: Limits::default(),
                layer: crate::eval::sandbox::Layer::Copy,
                reaper: ctx.reaper().clone(),
            },
            denied: Some("the demo starts no processes".into()),
            runner: None,
            timeout: Duration::from_secs(30),
            repeat: 1,
            cancel: std::sync::atomic::AtomicBool::new(false),
            slots: Default::default(),
        };
        let signer = super::check::Signer {
            key,
            producer: "elench demo check".into(),
            force: false,
        };
        let inputs =
            crate::anchor::inputs::digest(&crate::anchor::inputs::reads_of(&expr), &tree_ids);
        let target = super::check::Target {
            claim: stored.claim.clone(),
            body: stored.body.clone(),
            source: source.clone(),
            expr,
            own: crate::fold::Status::Unevaluated,
            carried: None,
            inputs: Some(inputs),
        };
        let (checked, failure) = super::check::check_claims(
            &super::check::StoreAccess::Held(&self.store),
            &setup,
            &signer,
            vec![target],
            1,
            &crate::ops::Never,
            &crate::ops::Silent,
        );
        if let Some(f) = failure {
            return Err(f);
        }
        let c = checked
            .first()
            .ok_or_else(|| Failure::Internal("check returned nothing".into()))?;
        let record = c.record.clone().unwrap_or_default();
        if !record.is_empty() {
            self.ids.push(("check-record".into(), record.clone()));
        }
        self.say(&format!(
            "  $ elench check {} --at tree/\n    {source}  →  {}; record {} (evidence sha256:{})\n",
            &id[..15],
            c.outcome,
            record.get(..15).unwrap_or("none"),
            c.evidence
                .as_deref()
                .and_then(|e| e.get(..16))
                .unwrap_or("none"),
        ));
        let mut fold = Fold::new(&self.store);
        let mut claims = serde_json::Map::new();
        let mut out = String::from("  status now:\n");
        for name in ["no-unwrap", "cli"] {
            let r = fold.report(&self.id_of(name)?)?;
            out.push_str(&format!("    {name:<10} {}\n", r.status));
            claims.insert(name.to_owned(), json!(r.status));
        }
        drop(fold);
        self.say(&out);
        self.steps.push(json!({
            "title": title,
            "check": {"id": id, "outcome": c.outcome, "record": c.record, "evidence": c.evidence},
            "claims": claims,
        }));
        self.blast("no-unwrap")
    }

    fn blast(&mut self, name: &str) -> Result<(), Failure> {
        let id = self.id_of(name)?;
        let mut fold = Fold::new(&self.store);
        let b = blast(&mut fold, &id, None)?;
        drop(fold);
        let mut out = format!(
            "  blast radius of {name}: {} claim(s) revoked by its falsification\n",
            b.count
        );
        for layer in b.layers.iter().skip(1) {
            for m in &layer.claims {
                let via = m
                    .via
                    .as_deref()
                    .map(|v| self.name_of(v))
                    .unwrap_or_default();
                out.push_str(&format!(
                    "    depth {} {:<10} {} (via {via})\n",
                    layer.depth,
                    self.name_of(&m.id),
                    m.status
                ));
            }
        }
        self.say(&out);
        let data = serde_json::to_value(&b).map_err(|e| Failure::Internal(e.to_string()))?;
        self.steps
            .push(json!({"title": format!("blast radius of {name}"), "blast": data}));
        Ok(())
    }
}
