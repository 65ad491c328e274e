//! `elench gate` through the real binary: each rule passing and failing, scope narrowing,
//! exit codes, bad policies, text output, and the same answer from two stores that hold the
//! same envelopes.

use crate::common;

use common::*;
use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};

/// A store whose claims each exercise one rule, about files of the tree `work`:
///
/// | file | claim | state |
/// |---|---|---|
/// | forbid.rs | "parse panics on empty input" | falsified |
/// | unev.rs | "load never blocks" | unevaluated |
/// | accepted.rs | "docs are current" | unevaluated, residue accepted by a human |
/// | one.rs | "one key verified this" | verified by harness key ci |
/// | two.rs | "two keys verified this" | verified by harness keys ci and ci2 |
/// | stale.rs | "made at the old tree" | made at `old`; its lines changed since |
/// | carried.rs | "kept across trees" | made at `old`; lines moved down one; verified by ci, ci2 |
struct Fixture {
    ks: KeyedStore,
    work: PathBuf,
    ci2: KeyPair,
    envelopes: Vec<PathBuf>,
    ids: std::collections::BTreeMap<&'static str, String>,
}

impl Fixture {
    fn new() -> Fixture {
        let ks = KeyedStore::new();
        let ci2 = make_key(ks.dir(), "harness", "ci2");
        let (code, out) = ks.run(&[
            "keys",
            "add",
            "--role",
            "harness",
            "--name",
            "ci2",
            ci2.public.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{out}");
        let old = ks.dir().join("old");
        let work = ks.dir().join("work");
        for (dir, files) in [
            (
                &old,
                vec![
                    ("stale.rs", "fn old() {}\n"),
                    ("carried.rs", "fn kept() {}\n"),
                ],
            ),
            (
                &work,
                vec![
                    ("forbid.rs", "fn parse() {}\n"),
                    ("unev.rs", "fn load() {}\n"),
                    ("accepted.rs", "//! docs\n"),
                    ("one.rs", "fn one() {}\n"),
                    ("two.rs", "fn two() {}\n"),
                    ("stale.rs", "fn new() {}\n"),
                    ("carried.rs", "// moved down\nfn kept() {}\n"),
                ],
            ),
        ] {
            fs::create_dir_all(dir).unwrap();
            for (name, text) in files {
                fs::write(dir.join(name), text).unwrap();
            }
        }
        let mut f = Fixture {
            ks,
            work,
            ci2,
            envelopes: Vec::new(),
            ids: Default::default(),
        };
        let w = f.work.clone();
        for (name, text) in [
            ("forbid.rs", "parse panics on empty input"),
            ("unev.rs", "load never blocks"),
            ("accepted.rs", "docs are current"),
            ("one.rs", "one key verified this"),
            ("two.rs", "two keys verified this"),
        ] {
            let id = f.anchored(text, name, &w);
            f.ids.insert(name, id);
        }
        let id = f.anchored("made at the old tree", "stale.rs", &old);
        f.ids.insert("stale.rs", id);
        let id = f.anchored("kept across trees", "carried.rs:1-1", &old);
        f.ids.insert("carried.rs", id);

        let agent = f.ks.keys.agent.clone();
        let harness = f.ks.keys.harness.clone();
        let human = f.ks.keys.human.clone();
        let ci2 = f.ci2.clone();
        f.record("falsification", "forbid.rs", "ci/1", &agent);
        f.record("residue-acceptance", "accepted.rs", "alice", &human);
        f.record("verification", "one.rs", "ci/1", &harness);
        f.record("verification", "two.rs", "ci/1", &harness);
        f.record("verification", "two.rs", "ci/2", &ci2);
        f.record("verification", "carried.rs", "ci/1", &harness);
        f.record("verification", "carried.rs", "ci/2", &ci2);
        f
    }

    /// An agent's assertion anchored with `sign --anchor SPEC --at DIR`, added to the store.
    fn anchored(&mut self, text: &str, spec: &str, dir: &Path) -> String {
        let claim = ClaimBuilder::assertion(text).producer("bot/1").build();
        let (env, id) = sign_anchored_cli(self.ks.dir(), &claim, &self.ks.keys.agent, spec, dir);
        self.add(env);
        id
    }

    /// A record of `target`, anchored at the target's own tree: an observation made there
    /// (of a claim without a predicate) applies wherever the claim carries.
    fn record(&mut self, kind: &str, target: &str, producer: &str, key: &KeyPair) {
        let t = self.ids[target].clone();
        let (code, shown) = self.ks.run(&["show", &t]);
        assert_eq!(code, 0, "{shown}");
        let tree = shown["data"]["claim"]["anchor"]["tree"]
            .as_str()
            .unwrap()
            .to_owned();
        let claim = ClaimBuilder::record(kind, &[&t])
            .producer(producer)
            .tree(&tree)
            .build();
        let (env, _) = sign_cli(self.ks.dir(), &claim, key);
        self.add(env);
    }

    fn add(&mut self, env: PathBuf) {
        let (code, out) = self.ks.run(&["add", env.to_str().unwrap()]);
        assert_eq!(code, 0, "{out}");
        self.envelopes.push(env);
    }

    /// `gate --policy P --at work` on `store`, with the policy text written to a file.
    fn gate_on(&self, store: &Path, policy: &str) -> (i32, Value) {
        let p = self.ks.dir().join(fresh_name("policy", "toml"));
        fs::write(&p, policy).unwrap();
        elench(
            self.ks.dir(),
            &with_store(
                store,
                &[
                    "gate",
                    "--policy",
                    p.to_str().unwrap(),
                    "--at",
                    self.work.to_str().unwrap(),
                ],
            ),
        )
    }

    fn gate(&self, policy: &str) -> (i32, Value) {
        self.gate_on(&self.ks.store, policy)
    }

    /// Asserts the gate passed.
    fn passes(&self, policy: &str) -> Value {
        let (code, out) = self.gate(policy);
        assert_eq!(code, 0, "expected a pass under {policy:?}: {out}");
        assert_eq!(out["data"]["pass"], json!(true), "{out}");
        assert_eq!(out["data"]["violations"], json!([]), "{out}");
        out
    }

    /// Asserts the gate failed with exactly these (file, rule, status, applies) violations.
    fn fails(&self, policy: &str, want: &[(&str, &str, &str, &str)]) -> Value {
        let (code, out) = self.gate(policy);
        assert_eq!(code, 79, "a failing gate exits 79: {out}");
        assert_eq!(out["error"]["code"], json!("GATE_FAILED"), "{out}");
        assert_eq!(out["data"]["pass"], json!(false), "{out}");
        let got: Vec<Value> = out["data"]["violations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| json!([v["id"], v["rule"], v["status"], v["applies"]]))
            .collect();
        let mut want: Vec<Value> = want
            .iter()
            .map(|(file, rule, status, applies)| json!([self.ids[file], rule, status, applies]))
            .collect();
        want.sort_by_key(|v| v[0].as_str().unwrap().to_owned());
        assert_eq!(got, want, "under {policy:?}: {out}");
        out
    }
}

fn scope(files: &[&str]) -> String {
    format!("[scope]\npaths = {}\n", json!(files))
}

/// One fixture serves every scenario (building it is most of the cost); each scenario only
/// reads the store, except the last, which adds a claim.
#[test]
fn gate_on_one_store() {
    let f = Fixture::new();
    each_rule_passes_and_fails(&f);
    same_envelopes_give_byte_identical_data_and_readable_text(&f);
    scope_defaults_fail_closed_and_narrowing_excludes(&f);
}

fn each_rule_passes_and_fails(f: &Fixture) {
    // forbid
    f.fails(
        &scope(&["forbid.rs"]),
        &[("forbid.rs", "forbid", "falsified", "anchored")],
    );
    f.passes(&format!(
        "{}[rules]\nforbid = [\"revoked\"]\n",
        scope(&["forbid.rs"])
    ));

    // max_unevaluated, and accepted residue counted apart
    let out = f.fails(
        &scope(&["unev.rs", "accepted.rs"]),
        &[("unev.rs", "max_unevaluated", "unevaluated", "anchored")],
    );
    let c = &out["data"]["counts"];
    assert_eq!(
        (&c["accepted"], &c["unevaluated_unaccepted"]),
        (&json!(1), &json!(1)),
        "{c}"
    );
    assert_eq!(c["status"]["unevaluated"], json!(2), "{c}");
    f.passes(&format!(
        "{}[rules]\nmax_unevaluated = 1\n",
        scope(&["unev.rs", "accepted.rs"])
    ));
    let out = f.passes(&scope(&["accepted.rs"]));
    assert_eq!(out["data"]["counts"]["accepted"], json!(1));

    // min_harness_keys
    f.passes(&scope(&["one.rs"]));
    f.fails(
        &format!(
            "{}[rules]\nmin_harness_keys = 2\n",
            scope(&["one.rs", "two.rs"])
        ),
        &[("one.rs", "min_harness_keys", "verified", "anchored")],
    );
    f.passes(&format!(
        "{}[rules]\nmin_harness_keys = 2\n",
        scope(&["two.rs"])
    ));

    // stale
    f.fails(
        &scope(&["stale.rs"]),
        &[("stale.rs", "stale", "unevaluated", "stale")],
    );
    // Ignored, a stale claim is judged by no rule: alone in scope, the gate judged nothing.
    let (code, out) = f.gate(&format!(
        "{}[rules]\nstale = \"ignore\"\n",
        scope(&["stale.rs"])
    ));
    assert_eq!(code, 79, "{out}");
    assert_eq!(out["data"]["violations"][0]["rule"], json!("min_in_scope"));
    let out = f.passes(&format!(
        "{}[rules]\nstale = \"ignore\"\nmin_in_scope = 0\n",
        scope(&["stale.rs"])
    ));
    assert_eq!(out["data"]["counts"]["applies"]["stale"], json!(1));
    f.passes(&format!(
        "{}[rules]\nstale = \"ignore\"\n",
        scope(&["stale.rs", "one.rs"])
    ));

    // A claim made at another tree whose lines moved: carried, and it counts like any other.
    let out = f.passes(&format!(
        "{}[rules]\nmin_harness_keys = 2\n",
        scope(&["carried.rs"])
    ));
    let c = &out["data"]["counts"];
    assert_eq!(
        (&c["applies"]["carried"], &c["status"]["verified"]),
        (&json!(1), &json!(1))
    );
}

fn scope_defaults_fail_closed_and_narrowing_excludes(f: &Fixture) {
    // An empty policy: every rule at its strictest, every claim in scope.
    let out = f.fails(
        "",
        &[
            ("forbid.rs", "forbid", "falsified", "anchored"),
            ("unev.rs", "max_unevaluated", "unevaluated", "anchored"),
            ("stale.rs", "stale", "unevaluated", "stale"),
        ],
    );
    let d = &out["data"];
    assert_eq!(
        d["policy"]["rules"],
        json!({"forbid": ["falsified", "revoked"], "max_unevaluated": 0,
               "min_harness_keys": 1, "stale": "fail", "min_in_scope": 1,
               "witness_fresh": false, "witness_remote": "origin", "witness_timeout": 30})
    );
    assert_eq!(d["counts"]["in_scope"], json!(7), "{d}");
    assert_eq!(
        d["counts"]["violations"],
        json!({"forbid": 1, "max_unevaluated": 1, "min_harness_keys": 0, "stale": 1,
               "min_in_scope": 0})
    );
    assert_eq!(d["tree"].as_str().map(str::len), Some(64));
    let v = &d["violations"].as_array().unwrap()[0];
    assert!(v["text"].is_string() && v["message"].is_string(), "{v}");
    // A glob that leaves the bad claims out passes.
    f.passes(&scope(&["one.rs", "two.rs", "accepted.rs", "car*.rs"]));
    // Producers and origins narrow too. A gate that judged nothing fails (EMPTY_SCOPE), unless
    // the policy allows it, and then it says so.
    let nobody = "[scope]\nproducers = [\"someone-else/*\"]\n";
    let (code, out) = f.gate(nobody);
    assert_eq!(code, 79, "{out}");
    assert_eq!(
        out["data"]["violations"],
        json!([{"id": null, "rule": "min_in_scope", "status": null, "applies": null,
                "path": null, "range": null, "text": null,
                "message": out["data"]["violations"][0]["message"]}]),
        "{out}"
    );
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("EMPTY_SCOPE"),
        "{out}"
    );
    assert_eq!(out["data"]["counts"]["filtered_out"], json!(7));
    assert_eq!(
        out["data"]["counts"]["violations"]["min_in_scope"],
        json!(1)
    );
    let out = f.passes(&format!("{nobody}[rules]\nmin_in_scope = 0\n"));
    assert_eq!(out["warnings"][0]["code"], json!("EMPTY_SCOPE"), "{out}");
    // More than one claim asked for.
    let (code, out) = f.gate(&format!(
        "{}[rules]\nmin_in_scope = 2\n",
        scope(&["one.rs"])
    ));
    assert_eq!(code, 79, "{out}");
    assert_eq!(out["data"]["violations"][0]["rule"], json!("min_in_scope"));
    f.fails(
        "[scope]\nproducers = [\"bot/*\"]\norigins = [\"agent-asserted\"]\n",
        &[
            ("forbid.rs", "forbid", "falsified", "anchored"),
            ("unev.rs", "max_unevaluated", "unevaluated", "anchored"),
            ("stale.rs", "stale", "unevaluated", "stale"),
        ],
    );
    // No human-asserted claim: nothing to judge.
    let (code, out) = f.gate("[scope]\norigins = [\"human-asserted\"]\n");
    assert_eq!(code, 79, "{out}");
    assert_eq!(out["data"]["violations"][0]["rule"], json!("min_in_scope"));

    // Claims about the whole of another tree are out of scope, not failures.
    let other = ClaimBuilder::assertion("about some other tree").build();
    let (env, _) = sign_cli(f.ks.dir(), &other, &f.ks.keys.agent);
    assert_eq!(f.ks.run(&["add", env.to_str().unwrap()]).0, 0);
    let out = f.passes(&scope(&["one.rs"]));
    assert_eq!(out["data"]["counts"]["unanchored"], json!(1), "{out}");
}

fn same_envelopes_give_byte_identical_data_and_readable_text(f: &Fixture) {
    // A second store trusting the same keys, fed the same envelopes in reverse order.
    let store2 = f.ks.dir().join("store2");
    let k = &f.ks.keys;
    init_store_trusting(
        f.ks.dir(),
        &store2,
        &[&f.ci2, &k.human, &k.agent, &k.harness],
    );
    for env in f.envelopes.iter().rev() {
        let (code, out) = elench(
            f.ks.dir(),
            &with_store(&store2, &["add", env.to_str().unwrap()]),
        );
        assert_eq!(code, 0, "{out}");
    }
    for policy in [
        "",
        "[rules]\nstale = \"ignore\"\nmin_harness_keys = 2\n",
        &scope(&["one.rs"]),
    ] {
        let (c1, a) = f.gate_on(&f.ks.store, policy);
        let (c2, b) = f.gate_on(&store2, policy);
        assert_eq!(c1, c2);
        assert_eq!(a["data"].to_string(), b["data"].to_string(), "{policy:?}");
    }

    // Text: verdict, counts per status and per rule, then each violation with its claim text.
    let p = f.ks.dir().join("p.toml");
    fs::write(&p, "").unwrap();
    let run = run_raw(
        f.ks.dir(),
        &with_store(
            &f.ks.store,
            &[
                "gate",
                "--format",
                "text",
                "--policy",
                p.to_str().unwrap(),
                "--at",
                f.work.to_str().unwrap(),
            ],
        ),
    );
    assert_eq!(run.code, 79, "{}", run.stderr);
    let t = &run.stdout;
    assert!(t.starts_with("gate FAIL"), "{t}");
    for want in [
        "7 claim(s): 5 anchored, 1 carried, 1 stale",
        "3 verified, 2 unevaluated (1 accepted as residue), 1 falsified",
        "forbid [falsified, revoked]: 1",
        "stale fail: 1",
        "\"parse panics on empty input\"",
        "\"load never blocks\"",
        "the policy forbids falsified claims",
    ] {
        assert!(t.contains(want), "{want:?} missing from:\n{t}");
    }
    assert!(run.stderr.contains("error[GATE_FAILED]"), "{}", run.stderr);
}

#[test]
fn gate_bad_policy_is_exit_2_with_its_location_and_no_store_is_exit_4() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    fs::write(
        d.join("typo.toml"),
        "[rules]\nforbid = []\nmax_unevaluatd = 3\n",
    )
    .unwrap();
    fs::write(d.join("ok.toml"), "[rules]\nforbid = []\n").unwrap();
    fs::write(d.join("glob.toml"), "[scope]\npaths = [\"src/[\"]\n").unwrap();
    let (code, out) = elench(d, &["gate", "--policy", "typo.toml", "--at", "."]);
    assert_eq!(code, 2, "{out}");
    let e = &out["error"];
    assert_eq!(e["code"], json!("BAD_POLICY"));
    assert_eq!((&e["line"], &e["column"]), (&json!(3), &json!(1)), "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("max_unevaluatd"),
        "{e}"
    );
    assert_eq!(e["path"], json!("typo.toml"));
    let (code, out) = elench(d, &["gate", "--policy", "glob.toml", "--at", "."]);
    assert_eq!(
        (code, &out["error"]["code"]),
        (2, &json!("BAD_POLICY")),
        "{out}"
    );
    let (code, out) = elench(d, &["gate", "--policy", "missing.toml", "--at", "."]);
    assert_eq!(code, 2, "{out}");
    let (code, out) = elench(
        d,
        &[
            "--store",
            d.join("nostore").to_str().unwrap(),
            "gate",
            "--policy",
            "ok.toml",
            "--at",
            ".",
        ],
    );
    assert_eq!(
        (code, &out["error"]["code"]),
        (4, &json!("STORE_NOT_FOUND")),
        "{out}"
    );
}

/// The README's own claim form, `"path": "lib.rs"` with no `contentDigest`, at a copy of its
/// tree with one unrelated file added. Such a claim cannot be shown unchanged, so it is
/// stale, not left aside: the gate fails and names it, falsified and revoked claims included.
#[test]
fn gate_a_path_claim_without_digest_is_stale_not_left_aside() {
    let ks = KeyedStore::new();
    let v1 = ks.dir().join("v1");
    fs::create_dir_all(&v1).unwrap();
    fs::write(v1.join("lib.rs"), "pub fn parse() {}\n").unwrap();
    let (_, t) = elench(ks.dir(), &["tree", v1.to_str().unwrap()]);
    let tree1 = t["data"]["tree"].as_str().unwrap().to_owned();
    let path_only = |text: &str| {
        ClaimBuilder::assertion(text).set(
            "anchor",
            json!({"tree": tree1, "strategy": "multi", "path": "lib.rs"}),
        )
    };
    let add = |env: &Path| {
        let (code, out) = ks.run(&["add", env.to_str().unwrap()]);
        assert_eq!(code, 0, "{out}");
        out
    };
    // Signing and adding such a claim warn.
    let claim = path_only("parse is total").build();
    let path = ks.dir().join("falsified.json");
    fs::write(&path, claim.to_string()).unwrap();
    let env = ks.dir().join("falsified.dsse");
    let (code, out) = elench(
        ks.dir(),
        &with_store(
            &ks.store,
            &[
                "sign",
                path.to_str().unwrap(),
                "--key",
                ks.keys.agent.private.to_str().unwrap(),
                "-o",
                env.to_str().unwrap(),
            ],
        ),
    );
    assert_eq!(code, 0, "{out}");
    let falsified = out["data"]["id"].as_str().unwrap().to_owned();
    for w in [&out["warnings"], &out["data"]["warnings"]] {
        assert!(w.to_string().contains("NO_CONTENT_DIGEST"), "{out}");
    }
    let out = add(&env);
    assert!(
        out["warnings"].to_string().contains("NO_CONTENT_DIGEST"),
        "{out}"
    );
    assert!(out["warnings"].to_string().contains(&falsified), "{out}");
    let (env, revoked) = sign_cli(
        ks.dir(),
        &path_only("parse feeds load")
            .depends_on(&[&falsified])
            .build(),
        &ks.keys.agent,
    );
    add(&env);
    let (env, _) = sign_cli(
        ks.dir(),
        &path_only("parse is fast").build(),
        &ks.keys.agent,
    );
    add(&env);
    let (env, _) = sign_cli(
        ks.dir(),
        &ClaimBuilder::record("falsification", &[&falsified])
            .producer("ci/1")
            .tree(&tree1)
            .build(),
        &ks.keys.agent,
    );
    add(&env);
    // A whole-tree claim about v1: unanchored elsewhere, and out of scope.
    let (env, _) = sign_cli(
        ks.dir(),
        &ClaimBuilder::assertion("the release builds")
            .tree(&tree1)
            .build(),
        &ks.keys.agent,
    );
    let out = add(&env);
    assert!(
        !out["warnings"].to_string().contains("NO_CONTENT_DIGEST"),
        "{out}"
    );

    // The copy: the same lib.rs, one unrelated file more.
    let copy = ks.dir().join("copy");
    fs::create_dir_all(&copy).unwrap();
    fs::copy(v1.join("lib.rs"), copy.join("lib.rs")).unwrap();
    fs::write(copy.join("NOTES"), "unrelated\n").unwrap();
    let policy = ks.dir().join("policy.toml");
    let gate = |policy_text: &str, at: &Path| {
        fs::write(&policy, policy_text).unwrap();
        ks.run(&[
            "gate",
            "--policy",
            policy.to_str().unwrap(),
            "--at",
            at.to_str().unwrap(),
        ])
    };
    let (code, out) = gate("", &copy);
    assert_eq!(code, 79, "{out}");
    let d = &out["data"];
    assert_eq!(d["counts"]["in_scope"], json!(3), "{d}");
    assert_eq!(d["counts"]["applies"]["stale"], json!(3), "{d}");
    assert_eq!(d["counts"]["unanchored"], json!(1), "{d}");
    let violations = d["violations"].as_array().unwrap();
    assert_eq!(violations.len(), 3, "{d}");
    for v in violations {
        assert_eq!(
            (&v["rule"], &v["applies"]),
            (&json!("stale"), &json!("stale")),
            "{v}"
        );
        assert!(
            v["message"].as_str().unwrap().contains("contentDigest"),
            "{v}"
        );
    }
    let named: Vec<&str> = violations
        .iter()
        .map(|v| v["id"].as_str().unwrap())
        .collect();
    assert!(
        named.contains(&falsified.as_str()) && named.contains(&revoked.as_str()),
        "{d}"
    );
    // status --at agrees.
    let (_, out) = ks.run(&["status", &falsified, "--at", copy.to_str().unwrap()]);
    assert_eq!(out["data"]["claims"][0]["applies"], json!("stale"), "{out}");

    // At its own tree the claims apply, and the falsified and revoked ones break `forbid`.
    let (code, out) = gate("", &v1);
    assert_eq!(code, 79, "{out}");
    let rules: Vec<(&str, &str)> = out["data"]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["rule"] == json!("forbid"))
        .map(|v| (v["id"].as_str().unwrap(), v["status"].as_str().unwrap()))
        .collect();
    assert_eq!(rules.len(), 2, "{out}");
    assert!(rules.contains(&(falsified.as_str(), "falsified")), "{out}");
    assert!(rules.contains(&(revoked.as_str(), "revoked")), "{out}");

    // Stale claims the policy ignores are judged by no rule: nothing was judged, so it fails.
    let (code, out) = gate("[rules]\nstale = \"ignore\"\n", &copy);
    assert_eq!(code, 79, "{out}");
    assert_eq!(out["data"]["counts"]["in_scope"], json!(3), "{out}");
    assert_eq!(
        out["data"]["violations"][0]["rule"],
        json!("min_in_scope"),
        "{out}"
    );
    let (code, out) = gate("[rules]\nstale = \"ignore\"\nmin_in_scope = 0\n", &copy);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["warnings"][0]["code"], json!("EMPTY_SCOPE"), "{out}");

    // Only the whole-tree claim left: nothing in scope, and that fails too.
    let (code, out) = gate("[scope]\norigins = [\"human-asserted\"]\n", &copy);
    assert_eq!(code, 79, "{out}");
    assert_eq!(
        out["data"]["violations"][0]["rule"],
        json!("min_in_scope"),
        "{out}"
    );
    let (code, out) = gate(
        "[scope]\norigins = [\"human-asserted\"]\n[rules]\nmin_in_scope = 0\n",
        &copy,
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["warnings"][0]["code"], json!("EMPTY_SCOPE"), "{out}");
}
