//! Verdicts belong to the tree they observed (docs/status.md, "Verdicts per tree"), through
//! the binary: a change outside a claim's anchor that breaks what its predicate reads is
//! caught at the next tree, a verdict seen at one tree does not decide another, `grep` and
//! `exists` verdicts carry exactly as far as the files they read, premises are judged at the
//! tree, and records written before inputs digests apply at their own tree (and, for a claim
//! without a predicate, wherever it carries).

use crate::common;

use common::*;
use serde_json::{json, Value};
use std::fs;
use std::path::PathBuf;

/// A store, its keys, and a work tree `w` the claims are about.
struct World {
    ks: KeyedStore,
    work: PathBuf,
    policy: PathBuf,
}

impl World {
    fn new(files: &[(&str, &str)]) -> World {
        let ks = KeyedStore::new();
        let work = ks.dir().join("w");
        for (path, text) in files {
            let p = work.join(path);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        }
        let policy = ks.dir().join("policy.toml");
        // Strict: nothing falsified or revoked, nothing unevaluated, every claim verified.
        fs::write(&policy, "[rules]\nforbid = [\"falsified\", \"revoked\"]\n").unwrap();
        World { ks, work, policy }
    }

    fn write(&self, path: &str, text: &str) {
        fs::write(self.work.join(path), text).unwrap();
    }

    fn run(&self, args: &[&str]) -> (i32, Value) {
        self.ks.run(args)
    }

    fn ok(&self, args: &[&str]) -> Value {
        let (code, out) = self.run(args);
        assert_eq!(code, 0, "{args:?}: {out}");
        out
    }

    fn at(&self) -> &str {
        self.work.to_str().unwrap()
    }

    /// An agent's claim, anchored to `anchor` in the work tree as it is now.
    fn claim(
        &self,
        text: &str,
        predicate: Option<&str>,
        anchor: &str,
        premises: &[&str],
    ) -> String {
        let key = self.ks.keys.agent.private.to_str().unwrap().to_owned();
        let mut args = vec![
            "claim",
            text,
            "--anchor",
            anchor,
            "--at",
            self.at(),
            "--key",
            &key,
        ];
        if let Some(p) = predicate {
            args.extend(["--predicate", p]);
        }
        for p in premises {
            args.extend(["--depends-on", p]);
        }
        let out = self.ok(&args);
        out["data"]["claims"][0]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("an id: {out}"))
            .to_owned()
    }

    /// `check` at the work tree as it is now; the outcome of each claim by id.
    fn check(&self, extra: &[&str]) -> Value {
        let key = self.ks.keys.harness.private.to_str().unwrap().to_owned();
        let mut args = vec!["check", "--at", self.at(), "--key", &key, "--no-sandbox"];
        args.extend_from_slice(extra);
        let (code, out) = self.run(&args);
        assert!(code == 0 || code == 3, "{out}");
        out
    }

    fn outcome(out: &Value, id: &str) -> Option<String> {
        out["data"]["checked"]
            .as_array()?
            .iter()
            .find(|c| c["id"] == json!(id))
            .map(|c| c["outcome"].as_str().unwrap_or_default().to_owned())
    }

    /// The claim's status at the work tree as it is now.
    fn status_here(&self, id: &str) -> Value {
        let out = self.ok(&["status", id, "--at", self.at()]);
        out["data"]["claims"][0].clone()
    }

    fn status_log_wide(&self, id: &str) -> Value {
        let out = self.ok(&["status", id]);
        out["data"]["claims"][0].clone()
    }

    /// The gate at the work tree as it is now: pass or not, and its answer.
    fn gate(&self) -> (bool, Value) {
        let (code, out) = self.run(&[
            "gate",
            "--policy",
            self.policy.to_str().unwrap(),
            "--at",
            self.at(),
        ]);
        assert!(code == 0 || code == 79, "{out}");
        (code == 0, out)
    }

    fn tree(&self) -> String {
        let out = self.ok(&["tree", self.at()]);
        out["data"]["tree"].as_str().unwrap().to_owned()
    }
}

/// A change outside the anchor that breaks what the predicate reads is caught at the next
/// tree; back at the first tree the first verdict stands again; the log-wide view shows both
/// verdicts with their trees.
fn regression_outside_the_anchor_is_caught(predicate: &str, runner: &[&str]) {
    let w = World::new(&[("a.rs", "fn a() {}\n"), ("b.txt", "ok\n")]);
    let t0 = w.tree();
    let c = w.claim("b.txt is ok", Some(predicate), "a.rs", &[]);
    let first = w.check(&[&["--all"], runner].concat());
    assert_eq!(
        World::outcome(&first, &c).as_deref(),
        Some("verified"),
        "{first}"
    );
    let verification = first["data"]["checked"][0]["record"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(w.gate().0, "the gate passes at the verified tree");

    // A change outside the anchored file.
    w.write("b.txt", "bad\n");
    let t1 = w.tree();
    let here = w.status_here(&c);
    assert_eq!(here["applies"], json!("carried"), "{here}");
    assert_eq!(
        here["status"],
        json!("unevaluated"),
        "the verdict about t0 is no answer at t1: {here}"
    );
    let second = w.check(&[&["--all"], runner].concat());
    assert_eq!(
        World::outcome(&second, &c).as_deref(),
        Some("falsified"),
        "{second}"
    );
    let falsification = second["data"]["checked"][0]["record"]
        .as_str()
        .unwrap()
        .to_owned();
    let (pass, gate) = w.gate();
    assert!(!pass, "the gate fails where the claim's test fails: {gate}");
    assert_eq!(gate["data"]["violations"][0]["id"], json!(c), "{gate}");

    // Back at the first tree: the first verdict stands, the gate passes again.
    w.write("b.txt", "ok\n");
    assert_eq!(w.tree(), t0);
    let back = w.status_here(&c);
    assert_eq!(back["status"], json!("verified"), "{back}");
    assert_eq!(back["decided_by"], json!([verification]), "{back}");
    assert!(w.gate().0, "a falsification seen at t1 does not decide t0");
    let again = w.check(&[&["--all"], runner].concat());
    assert_eq!(
        World::outcome(&again, &c).as_deref(),
        Some("unchanged"),
        "{again}"
    );

    // The log-wide view: both verdicts, each with the tree it observed.
    let all = w.status_log_wide(&c);
    let history: Vec<(String, String)> = all["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["id"].as_str().unwrap().into(),
                h["tree"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        history,
        vec![(verification, t0), (falsification, t1)],
        "{all}"
    );
}

#[test]
fn a_run_claim_broken_outside_its_anchor_fails_the_gate_there_and_only_there() {
    regression_outside_the_anchor_is_caught(r#"run("grep -q ok b.txt").exit == 0"#, &[]);
}

#[test]
fn a_test_claim_broken_outside_its_anchor_fails_the_gate_there_and_only_there() {
    let runner = "junit:if grep -q ok b.txt; then printf '<testsuite><testcase name=\"t1\"/></testsuite>' > \"$ELENCH_JUNIT\"; else printf '<testsuite><testcase name=\"t1\"><failure message=\"no\"/></testcase></testsuite>' > \"$ELENCH_JUNIT\"; fi";
    regression_outside_the_anchor_is_caught(r#"test("t1").passed"#, &["--runner", runner]);
}

#[test]
fn grep_and_exists_verdicts_carry_exactly_as_far_as_the_files_they_read() {
    let w = World::new(&[
        ("a.rs", "fn a() {}\n"),
        ("b.txt", "ok\n"),
        ("c.txt", "other\n"),
        ("d/x.txt", "ok\n"),
    ]);
    let file = w.claim(
        "b.txt says ok",
        Some(r#"grep("ok", "b.txt") == 1"#),
        "a.rs",
        &[],
    );
    let dir = w.claim(
        "d says ok",
        Some(r#"grep("ok", "d") >= 1 && exists("d/x.txt")"#),
        "a.rs",
        &[],
    );
    let missing = w.claim("no e.txt", Some(r#"!exists("e.txt")"#), "a.rs", &[]);
    let first = w.check(&["--all"]);
    for id in [&file, &dir, &missing] {
        assert_eq!(
            World::outcome(&first, id).as_deref(),
            Some("verified"),
            "{first}"
        );
    }

    // Only a file none of them reads changed: every verdict carries, nothing is evaluated.
    w.write("c.txt", "changed\n");
    let second = w.check(&["--all"]);
    for id in [&file, &dir, &missing] {
        assert_eq!(
            World::outcome(&second, id).as_deref(),
            Some("unchanged"),
            "{second}"
        );
        assert_eq!(w.status_here(id)["status"], json!("verified"));
    }
    assert!(w.gate().0);

    // The file one reads changed: that one lost its verdict, the others kept theirs.
    w.write("b.txt", "ok\nok\n");
    assert_eq!(w.status_here(&file)["status"], json!("unevaluated"));
    assert_eq!(w.status_here(&dir)["status"], json!("verified"));
    // A file under the directory another reads changed: it lost its verdict too.
    w.write("d/y.txt", "new\n");
    assert_eq!(w.status_here(&dir)["status"], json!("unevaluated"));
    // The missing file appears: the verdict that it is absent no longer applies.
    assert_eq!(w.status_here(&missing)["status"], json!("verified"));
    w.write("e.txt", "here\n");
    assert_eq!(w.status_here(&missing)["status"], json!("unevaluated"));
    let third = w.check(&["--all"]);
    assert_eq!(
        World::outcome(&third, &file).as_deref(),
        Some("falsified"),
        "{third}"
    );
    assert_eq!(
        World::outcome(&third, &dir).as_deref(),
        Some("verified"),
        "{third}"
    );
    assert_eq!(
        World::outcome(&third, &missing).as_deref(),
        Some("falsified"),
        "{third}"
    );
}

#[test]
fn a_premise_falsified_at_one_tree_revokes_its_dependents_there_only() {
    let w = World::new(&[("a.rs", "fn a() {}\n"), ("b.txt", "ok\n")]);
    let premise = w.claim(
        "b.txt says ok",
        Some(r#"grep("ok", "b.txt") == 1"#),
        "a.rs",
        &[],
    );
    let dependent = w.claim("a relies on b", None, "a.rs", &[&premise]);
    let t0_first = w.check(&["--all"]);
    assert_eq!(
        World::outcome(&t0_first, &premise).as_deref(),
        Some("verified")
    );

    w.write("b.txt", "no\n");
    let t1 = w.check(&["--all"]);
    assert_eq!(
        World::outcome(&t1, &premise).as_deref(),
        Some("falsified"),
        "{t1}"
    );
    let at_t1 = w.status_here(&dependent);
    assert_eq!(at_t1["status"], json!("revoked"), "{at_t1}");
    assert_eq!(at_t1["revoked_by"][0]["root"], json!(premise));
    let blast = w.ok(&["blast", &premise, "--at", w.at()]);
    assert_eq!(
        blast["data"]["layers"][1]["claims"][0]["status"],
        json!("revoked"),
        "{blast}"
    );
    let picture_at = |w: &World| {
        let args = with_store(
            &w.ks.store,
            &["blast", &premise, "--at", w.at(), "--format", "mermaid"],
        );
        let r = run_raw(w.ks.dir(), &args);
        assert_eq!(r.code, 0, "{}", r.stderr);
        r.stdout
    };
    assert!(
        picture_at(&w).contains(" revoked:"),
        "the picture at t1 draws the revoked dependent"
    );

    w.write("b.txt", "ok\n");
    let at_t0 = w.status_here(&dependent);
    assert_eq!(at_t0["status"], json!("unevaluated"), "{at_t0}");
    assert_eq!(at_t0["revoked_by"], json!([]));
    let blast = w.ok(&["blast", &premise, "--at", w.at()]);
    assert_eq!(
        blast["data"]["layers"][0]["claims"][0]["status"],
        json!("verified"),
        "{blast}"
    );
    assert_eq!(
        blast["data"]["layers"][1]["claims"][0]["status"],
        json!("unevaluated"),
        "{blast}"
    );
    assert!(
        !picture_at(&w).contains(" revoked:"),
        "the picture at t0 draws nothing revoked"
    );
    // Log-wide, the falsification stands (it was observed).
    assert_eq!(w.status_log_wide(&dependent)["status"], json!("revoked"));

    // `blast --signer` of the agent's key (it signed both) gives the statuses at the tree
    // too: where the premise's input changed, the dependent is revoked; where only another
    // file changed, the premise's verdict carries and nothing is revoked.
    let signer_status = |w: &World, id: &str| {
        let agent = &w.ks.keys.agent.keyid;
        let out = w.ok(&["blast", "--signer", agent, "--at", w.at()]);
        out["data"]["layers"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|l| l["claims"].as_array().unwrap().iter())
            .find(|c| c["id"] == json!(id))
            .map(|c| c["status"].clone())
            .unwrap_or_else(|| panic!("{id} in {out}"))
    };
    w.write("b.txt", "no\n");
    assert_eq!(signer_status(&w, &dependent), json!("revoked"));
    assert_eq!(signer_status(&w, &premise), json!("falsified"));
    w.write("b.txt", "ok\n");
    w.write("c.txt", "another file\n");
    assert_eq!(signer_status(&w, &premise), json!("verified"));
    assert_eq!(signer_status(&w, &dependent), json!("unevaluated"));
}

/// A record as elench wrote it before inputs digests: a harness verification of `target`
/// anchored to `tree`, with no `elench:inputs:` evidence.
fn old_style_verification(w: &World, target: &str, tree: &str, n: i64) -> String {
    let claim = ClaimBuilder::record("verification", &[target])
        .origin("harness-observed")
        .tree(tree)
        .timestamp(1_700_000_000 + n)
        .build();
    let (env, id) = sign_cli(w.ks.dir(), &claim, &w.ks.keys.harness);
    w.ok(&["add", env.to_str().unwrap()]);
    id
}

#[test]
fn records_without_inputs_apply_at_their_own_tree_or_where_an_annotation_carries() {
    let w = World::new(&[("a.rs", "fn a() {}\n"), ("b.txt", "ok\n")]);
    let t0 = w.tree();
    let predicate = w.claim(
        "b.txt says ok",
        Some(r#"grep("ok", "b.txt") == 1"#),
        "a.rs",
        &[],
    );
    let annotation = w.claim("a is small", None, "a.rs", &[]);
    let vp = old_style_verification(&w, &predicate, &t0, 1);
    let va = old_style_verification(&w, &annotation, &t0, 2);
    // Log-wide, as before.
    assert_eq!(w.status_log_wide(&predicate)["status"], json!("verified"));
    assert_eq!(w.status_log_wide(&annotation)["status"], json!("verified"));
    assert_eq!(w.status_here(&predicate)["decided_by"], json!([vp]));

    // Another tree where a.rs and b.txt are the same: the predicate's old verdict stays at
    // its tree; the annotation's carries with its span.
    w.write("c.txt", "new file\n");
    assert_eq!(w.status_here(&predicate)["status"], json!("unevaluated"));
    let a = w.status_here(&annotation);
    assert_eq!(a["status"], json!("verified"), "{a}");
    assert_eq!(a["applies"], json!("carried"), "{a}");
    assert_eq!(a["decided_by"], json!([va]));
    // The annotation's lines changed: stale, and its verdict no longer applies.
    w.write("a.rs", "fn a() { changed() }\n");
    assert_eq!(w.status_here(&annotation)["status"], json!("unevaluated"));
}

#[test]
fn an_observation_made_with_elench_claim_records_its_inputs_and_carries_with_them() {
    let w = World::new(&[("a.rs", "fn a() {}\n"), ("b.txt", "ok\n")]);
    let c = w.claim(
        "b.txt says ok",
        Some(r#"grep("ok", "b.txt") == 1"#),
        "a.rs",
        &[],
    );
    let key = w.ks.keys.harness.private.to_str().unwrap().to_owned();
    let out = w.ok(&[
        "claim",
        "seen ok",
        "--kind",
        "verification",
        "--target",
        &c,
        "--at",
        w.at(),
        "--key",
        &key,
    ]);
    let record = out["data"]["claims"][0]["id"].as_str().unwrap().to_owned();
    let shown = w.ok(&["show", &record]);
    let evidence = shown["data"]["claim"]["evidence"].clone();
    let uri = format!("elench:inputs:{c}");
    assert!(
        evidence
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["uri"] == json!(uri)),
        "{shown}"
    );
    w.write("c.txt", "unrelated\n");
    assert_eq!(w.status_here(&c)["status"], json!("verified"));
    w.write("b.txt", "changed\n");
    assert_eq!(w.status_here(&c)["status"], json!("unevaluated"));
}
