//! `gate` and `status --at` as SARIF 2.1.0 (validated against the published schema in
//! fixtures/schemas) and as GitHub workflow commands, for a gate that breaks every rule.

use crate::common;

use common::*;
use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};

/// A store and a tree `work` in which every rule of the gate is broken:
///
/// | file | claim | state |
/// |---|---|---|
/// | falsified.rs | "parse panics on empty input" | falsified |
/// | revoked.rs | "the parser's callers are safe" | rests on the falsified claim: revoked |
/// | stale.rs | "made at the old tree" | its lines changed since |
/// | `odd, name: 100%.rs` | "load never blocks" | unevaluated |
/// | accepted.rs | "docs are current" | unevaluated, accepted as residue: left out |
/// | (whole tree) | "the build is reproducible" | unevaluated, no path: a notification |
///
/// and the policy asks for more claims in scope than there are (empty-scope).
struct Fixture {
    ks: KeyedStore,
    work: PathBuf,
    ids: std::collections::BTreeMap<&'static str, String>,
    policy: PathBuf,
}

const ODD: &str = "odd, name: 100%.rs";

impl Fixture {
    fn new() -> Fixture {
        let ks = KeyedStore::new();
        let old = ks.dir().join("old");
        let work = ks.dir().join("work");
        for (dir, files) in [
            (&old, vec![("stale.rs", "fn old() {}\n")]),
            (
                &work,
                vec![
                    ("falsified.rs", "fn parse() {}\n"),
                    ("revoked.rs", "// callers\nfn call() { parse() }\n"),
                    ("stale.rs", "fn new() {}\n"),
                    (ODD, "fn load() {}\n"),
                    ("accepted.rs", "//! docs\n"),
                ],
            ),
        ] {
            fs::create_dir_all(dir).unwrap();
            for (name, text) in files {
                fs::write(dir.join(name), text).unwrap();
            }
        }
        let policy = ks.dir().join("policy.toml");
        fs::write(
            &policy,
            "[rules]\nforbid = [\"falsified\", \"revoked\"]\nmax_unevaluated = 0\n\
             stale = \"fail\"\nmin_in_scope = 100\n",
        )
        .unwrap();
        let mut f = Fixture {
            ks,
            work,
            ids: Default::default(),
            policy,
        };
        let w = f.work.clone();
        let falsified = f.anchored("parse panics on empty input", "falsified.rs:1-1", &w, &[]);
        f.ids.insert("falsified", falsified.clone());
        let revoked = f.anchored(
            "the parser's callers are safe",
            "revoked.rs:2-2",
            &w,
            &[&falsified],
        );
        f.ids.insert("revoked", revoked);
        let stale = f.anchored("made at the old tree", "stale.rs:1-1", &old, &[]);
        f.ids.insert("stale", stale);
        let odd = f.anchored("load never blocks", &format!("{ODD}:1-1"), &w, &[]);
        f.ids.insert("odd", odd);
        let accepted = f.anchored("docs are current", "accepted.rs", &w, &[]);
        f.ids.insert("accepted", accepted.clone());
        // A claim about the whole of this tree: no path.
        let (code, out) = elench(f.ks.dir(), &["tree", w.to_str().unwrap()]);
        assert_eq!(code, 0, "{out}");
        let tree = out["data"]["tree"].as_str().unwrap().to_owned();
        let whole = ClaimBuilder::assertion("the build is reproducible")
            .tree(&tree)
            .build();
        let (env, id) = sign_cli(f.ks.dir(), &whole, &f.ks.keys.agent);
        f.add(&env);
        f.ids.insert("whole", id);

        let agent = f.ks.keys.agent.clone();
        let human = f.ks.keys.human.clone();
        for (kind, target, key) in [
            ("falsification", falsified, &agent),
            ("residue-acceptance", accepted, &human),
        ] {
            // Observed at the tree the claims are about (`w`).
            let claim = ClaimBuilder::record(kind, &[&target]).tree(&tree).build();
            let (env, _) = sign_cli(f.ks.dir(), &claim, key);
            f.add(&env);
        }
        f
    }

    fn anchored(&mut self, text: &str, spec: &str, dir: &Path, premises: &[&str]) -> String {
        let mut b = ClaimBuilder::assertion(text);
        if !premises.is_empty() {
            b = b.depends_on(premises);
        }
        let (env, id) =
            sign_anchored_cli(self.ks.dir(), &b.build(), &self.ks.keys.agent, spec, dir);
        self.add(&env);
        id
    }

    fn add(&mut self, env: &Path) {
        let (code, out) = self.ks.run(&["add", env.to_str().unwrap()]);
        assert_eq!(code, 0, "{out}");
    }

    fn raw(&self, args: &[&str]) -> Run {
        run_raw(self.ks.dir(), &with_store(&self.ks.store, args))
    }

    fn gate(&self, format: &str) -> Run {
        self.raw(&[
            "--format",
            format,
            "gate",
            "--policy",
            self.policy.to_str().unwrap(),
            "--at",
            self.work.to_str().unwrap(),
        ])
    }
}

/// Validates a document against the vendored SARIF 2.1.0 schema; panics with every error.
fn assert_valid_sarif(doc: &Value) {
    let schema_path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/schemas/sarif-schema-2.1.0.json");
    let schema: Value = serde_json::from_slice(&fs::read(schema_path).unwrap()).unwrap();
    let validator = jsonschema::draft4::new(&schema).expect("the SARIF schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "not valid SARIF 2.1.0: {errors:#?}\n{doc:#}"
    );
    // The schema holds: a document missing what it requires is refused (the check bites).
    let mut broken = doc.clone();
    broken["runs"][0]["tool"]["driver"]
        .as_object_mut()
        .unwrap()
        .remove("name");
    assert!(!validator.is_valid(&broken));
}

fn result_for<'a>(doc: &'a Value, id: &str) -> Option<&'a Value> {
    doc["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["partialFingerprints"]["elenchClaimId/v1"] == json!(id))
}

#[test]
fn sarif_of_a_gate_breaking_every_rule_is_valid_and_locates_each_claim() {
    let f = Fixture::new();
    let r = f.gate("sarif");
    assert_eq!(r.code, 79, "a failing gate still exits 79: {}", r.stderr);
    assert!(r.stderr.contains("GATE_FAILED"), "{}", r.stderr);
    let doc: Value = serde_json::from_str(&r.stdout).expect("stdout is one SARIF document");
    assert_valid_sarif(&doc);
    assert_eq!(doc["version"], json!("2.1.0"));
    let run = &doc["runs"][0];
    let rules: Vec<&str> = run["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    for want in [
        "elench/falsified",
        "elench/revoked",
        "elench/stale",
        "elench/unevaluated",
        "elench/empty-scope",
    ] {
        assert!(rules.contains(&want), "{want} in {rules:?}");
    }
    // One result per claim with a path, at its lines, under its rule, and the scope's.
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 5, "{results:#?}");
    for (name, rule, uri, line) in [
        ("falsified", "elench/falsified", "falsified.rs", 1),
        ("revoked", "elench/revoked", "revoked.rs", 2),
        ("stale", "elench/stale", "stale.rs", 1),
        (
            "odd",
            "elench/unevaluated",
            "odd%2C%20name%3A%20100%25.rs",
            1,
        ),
    ] {
        let id = &f.ids[name];
        let res = result_for(&doc, id).unwrap_or_else(|| panic!("a result for {name}"));
        assert_eq!(res["ruleId"], json!(rule), "{res:#}");
        assert_eq!(rules[res["ruleIndex"].as_u64().unwrap() as usize], rule);
        let loc = &res["locations"][0]["physicalLocation"];
        assert_eq!(loc["artifactLocation"]["uri"], json!(uri), "{res:#}");
        assert_eq!(loc["region"]["startLine"], json!(line));
        assert_eq!(loc["region"]["endLine"], json!(line));
        let message = res["message"]["text"].as_str().unwrap();
        assert!(message.contains(id.as_str()), "{message}");
    }
    let falsified = result_for(&doc, &f.ids["falsified"]).unwrap();
    let message = falsified["message"]["text"].as_str().unwrap();
    assert!(
        message.contains("falsified") && message.contains("parse panics on empty input"),
        "the claim's status and text are in the message: {message}"
    );
    // The revoked claim points at its falsified root.
    let revoked = result_for(&doc, &f.ids["revoked"]).unwrap();
    let related = &revoked["relatedLocations"][0];
    assert!(related["message"]["text"]
        .as_str()
        .unwrap()
        .contains(f.ids["falsified"].as_str()));
    assert_eq!(
        related["physicalLocation"]["artifactLocation"]["uri"],
        json!("falsified.rs")
    );
    // The scope with too few claims is a result at the policy file's min_in_scope line (the
    // policy lies outside the tree here: its name).
    let scope = results
        .iter()
        .find(|r| r["ruleId"] == json!("elench/empty-scope"))
        .expect("an empty-scope result");
    assert_eq!(
        rules[scope["ruleIndex"].as_u64().unwrap() as usize],
        "elench/empty-scope"
    );
    let loc = &scope["locations"][0]["physicalLocation"];
    assert_eq!(
        loc["artifactLocation"]["uri"],
        json!("policy.toml"),
        "{scope:#}"
    );
    assert_eq!(loc["region"]["startLine"], json!(5), "{scope:#}");
    assert!(scope["message"]["text"]
        .as_str()
        .unwrap()
        .contains("EMPTY_SCOPE"));
    // Accepted residue is left out everywhere; the whole-tree claim is a notification tied
    // to its rule.
    assert!(!r.stdout.contains(f.ids["accepted"].as_str()));
    let notes = run["invocations"][0]["toolExecutionNotifications"]
        .as_array()
        .unwrap();
    let note_rules: Vec<&str> = notes
        .iter()
        .map(|n| n["associatedRule"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(note_rules, ["elench/unevaluated"], "{notes:#?}");
    assert!(notes[0]["message"]["text"]
        .as_str()
        .unwrap()
        .contains(f.ids["whole"].as_str()));
    // The same log gives the same bytes.
    assert_eq!(f.gate("sarif").stdout, r.stdout);
}

/// A gate that fails only because too few claims are in scope is a failing gate code scanning
/// must show: its SARIF holds an `elench/empty-scope` result, at the policy file inside the
/// tree on its `min_in_scope` line (every result needs a location there), and its workflow
/// command annotates the same line.
#[test]
fn a_gate_failing_on_an_empty_scope_has_a_result_at_the_policy() {
    let ks = KeyedStore::new();
    let work = ks.dir().join("work");
    fs::create_dir_all(work.join("ci")).unwrap();
    fs::write(work.join("lib.rs"), "fn f() {}\n").unwrap();
    let policy = work.join("ci/elench-policy.toml");
    fs::write(&policy, "[rules]\n# at least two\n  min_in_scope = 2\n").unwrap();
    let gate = |format: &str| {
        run_raw(
            ks.dir(),
            &with_store(
                &ks.store,
                &[
                    "--format",
                    format,
                    "gate",
                    "--policy",
                    policy.to_str().unwrap(),
                    "--at",
                    work.to_str().unwrap(),
                ],
            ),
        )
    };
    let r = gate("sarif");
    assert_eq!(r.code, 79, "{}", r.stderr);
    assert!(r.stderr.contains("EMPTY_SCOPE"), "{}", r.stderr);
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_valid_sarif(&doc);
    let results = doc["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{doc:#}");
    let res = &results[0];
    assert_eq!(res["ruleId"], json!("elench/empty-scope"), "{res:#}");
    assert_eq!(res["level"], json!("error"));
    let loc = &res["locations"][0]["physicalLocation"];
    assert_eq!(
        loc["artifactLocation"]["uri"],
        json!("ci/elench-policy.toml")
    );
    assert_eq!(loc["region"]["startLine"], json!(3), "{res:#}");
    let github = gate("github");
    assert_eq!(github.code, 79);
    assert!(
        github.stdout.starts_with(
            "::error file=ci/elench-policy.toml,line=3,endLine=3,title=elench/empty-scope::"
        ),
        "{}",
        github.stdout
    );
}

#[test]
fn sarif_of_status_at_a_tree_is_valid_and_leaves_accepted_residue_out() {
    let f = Fixture::new();
    let r = f.raw(&[
        "--format",
        "sarif",
        "status",
        "--all",
        "--at",
        f.work.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_valid_sarif(&doc);
    for (name, rule) in [
        ("falsified", "elench/falsified"),
        ("revoked", "elench/revoked"),
        ("stale", "elench/stale"),
        ("odd", "elench/unevaluated"),
    ] {
        let res = result_for(&doc, &f.ids[name]).unwrap_or_else(|| panic!("{name}"));
        assert_eq!(res["ruleId"], json!(rule));
    }
    assert_eq!(doc["runs"][0]["results"].as_array().unwrap().len(), 4);
    assert!(!r.stdout.contains(f.ids["accepted"].as_str()));
}

#[test]
fn github_annotations_of_a_gate_escape_every_value() {
    let f = Fixture::new();
    let r = f.gate("github");
    assert_eq!(r.code, 79, "{}", r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    // Four claims with a path, the whole-tree claim, the scope.
    assert_eq!(lines.len(), 6, "{}", r.stdout);
    for l in &lines {
        assert!(l.starts_with("::error "), "{l}");
    }
    let odd = lines
        .iter()
        .find(|l| l.contains(&f.ids["odd"]))
        .expect("the odd file's claim");
    assert!(
        odd.starts_with("::error file=odd%2C name%3A 100%25.rs,line=1,endLine=1,title="),
        "{odd}"
    );
    let falsified = lines
        .iter()
        .find(|l| l.contains(&format!("claim {}", f.ids["falsified"])))
        .unwrap();
    // The message's line breaks are escaped: one annotation, one line.
    assert!(falsified.contains("%0A"), "{falsified}");
    assert!(falsified.starts_with("::error file=falsified.rs,line=1,endLine=1,"));
}

#[test]
fn sarif_refused_where_it_has_no_meaning() {
    let f = Fixture::new();
    let r = f.raw(&["--format", "sarif", "status", &f.ids["odd"]]);
    assert_eq!(r.code, 2);
    assert!(r.stdout.is_empty());
    assert!(r.stderr.contains("--at"), "{}", r.stderr);
}

/// A claim's anchor path is whatever its author wrote. One that would point outside the
/// checkout gets no location (a notification; no `file=`), never a wrong one.
#[test]
fn a_path_outside_the_tree_is_never_a_location() {
    let f = Fixture::new();
    let claim = ClaimBuilder::assertion("about a file outside")
        .set(
            "anchor",
            json!({"tree": "0".repeat(64), "strategy": "multi", "path": "../../etc/passwd",
                   "range": [1, 1], "contentDigest": "1".repeat(64)}),
        )
        .build();
    let (env, id) = sign_cli(f.ks.dir(), &claim, &f.ks.keys.agent);
    let (code, out) = f.ks.run(&["add", env.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let r = f.gate("sarif");
    assert_eq!(r.code, 79, "{}", r.stderr);
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_valid_sarif(&doc);
    assert!(
        result_for(&doc, &id).is_none(),
        "no result located outside the tree"
    );
    assert!(!r.stdout.contains("etc/passwd\""), "{}", r.stdout);
    let notes = doc["runs"][0]["invocations"][0]["toolExecutionNotifications"]
        .as_array()
        .unwrap();
    let note = notes
        .iter()
        .find(|n| n["properties"]["claim"] == json!(id))
        .expect("a notification for it");
    assert_eq!(note["associatedRule"]["id"], json!("elench/stale"));
    let github = f.gate("github").stdout;
    let line = github.lines().find(|l| l.contains(&id)).unwrap();
    assert!(line.starts_with("::error title="), "{line}");
}

/// A document of one page of `status --all` says on stderr that more follow.
#[test]
fn a_document_of_a_cut_page_says_so() {
    let f = Fixture::new();
    let work = f.work.to_str().unwrap();
    let r = f.raw(&[
        "--format", "sarif", "status", "--all", "--at", work, "--limit", "2",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("warning[PAGE_CUT]"), "{}", r.stderr);
    assert_valid_sarif(&serde_json::from_str(&r.stdout).unwrap());
    let r = f.raw(&["--format", "mermaid", "status", "--all", "--limit", "2"]);
    assert!(r.stderr.contains("warning[PAGE_CUT]"), "{}", r.stderr);
    let r = f.raw(&["--format", "sarif", "status", "--all", "--at", work]);
    assert!(!r.stderr.contains("PAGE_CUT"), "{}", r.stderr);
}
