//! The CI job of docs/ci.md, run end to end: the plain-shell script is read out of the page
//! (so the page and the test cannot drift apart) and run in a checkout against a local bare
//! git remote that another store filled, with the harness key handed over as a secret would
//! be. Then a third store pulls the remote and sees what the job recorded.

use crate::common;

use common::*;
use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};

/// The marked `sh` block of docs/ci.md.
fn script_from_docs() -> String {
    let page = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ci.md"))
        .expect("docs/ci.md");
    let marker = "<!-- the CI script: tests/it/ci_recipe.rs runs this block end to end -->";
    let after = &page[page.find(marker).expect("the page marks its CI script") + marker.len()..];
    let start = after.find("```sh\n").expect("an sh block after the marker") + "```sh\n".len();
    let end = after[start..].find("\n```").expect("the block ends") + start;
    after[start..end].to_owned()
}

fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An agent's predicate claim anchored to `spec` in `checkout`, signed and added to `store`.
fn claim(
    dir: &Path,
    store: &Path,
    keys: &Keys,
    text: &str,
    source: &str,
    spec: &str,
    checkout: &Path,
) -> String {
    let c = ClaimBuilder::assertion(text)
        .predicate("elench-predicate-v1", source)
        .build();
    let (env, id) = sign_anchored_cli(dir, &c, &keys.agent, spec, checkout);
    let (code, added) = elench(dir, &with_store(store, &["add", env.to_str().unwrap()]));
    assert_eq!(code, 0, "{added}");
    id
}

#[test]
fn the_ci_job_of_the_docs_runs_end_to_end_against_a_bare_remote() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keys = make_keys(dir);

    // The repository under test: code, the team's trusted keys, the policy.
    let checkout = dir.join("checkout");
    let files: Vec<(PathBuf, Vec<u8>)> = vec![
        (
            "src/lib.rs".into(),
            b"pub fn parse(s: &str) -> usize {\n    unsafe { s.len() }\n}\n".to_vec(),
        ),
        (
            ".elench-trust/harness/ci.pub".into(),
            fs::read(&keys.harness.public).unwrap(),
        ),
        (
            ".elench-trust/agent/bot.pub".into(),
            fs::read(&keys.agent.public).unwrap(),
        ),
        (
            ".elench-trust/human/alice.pub".into(),
            fs::read(&keys.human.public).unwrap(),
        ),
        (
            "elench-policy.toml".into(),
            b"[rules]\nforbid = [\"falsified\", \"revoked\"]\nmax_unevaluated = 0\n".to_vec(),
        ),
    ];
    for (path, bytes) in &files {
        let p = checkout.join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, bytes).unwrap();
    }

    // The protected branch holds them: committed, and known as origin/main.
    git(&checkout, &["init", "--quiet", "-b", "main"]);
    git(&checkout, &["add", "-A"]);
    git(
        &checkout,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "commit",
            "--quiet",
            "-m",
            "base",
        ],
    );
    git(
        &checkout,
        &["update-ref", "refs/remotes/origin/main", "HEAD"],
    );

    // A developer's store, whose claims reach the team's remote.
    let remote = dir.join("log.git");
    fs::create_dir_all(&remote).unwrap();
    git(&remote, &["init", "--quiet", "--bare"]);
    let dev = dir.join("dev-store");
    init_store_trusting(dir, &dev, &[&keys.harness, &keys.agent, &keys.human]);
    let exists = claim(
        dir,
        &dev,
        &keys,
        "the parser exists",
        r#"exists("src/lib.rs")"#,
        "src/lib.rs:1-3",
        &checkout,
    );
    let safe = claim(
        dir,
        &dev,
        &keys,
        "the parser has no unsafe code",
        r#"grep("unsafe", "src") == 0"#,
        "src/lib.rs:2-2",
        &checkout,
    );
    let url = remote.to_str().unwrap();
    for args in [vec!["remote", "add", "origin", url], vec!["push"]] {
        let (code, out) = elench(dir, &with_store(&dev, &args));
        assert_eq!(code, 0, "{args:?}: {out}");
    }

    // The commit under test tries to trust a key of its own and to loosen the policy; the
    // job reads both from the protected branch, so neither counts.
    let evil = make_key(dir, "human", "evil");
    fs::write(
        checkout.join(".elench-trust/human/evil.pub"),
        fs::read(&evil.public).unwrap(),
    )
    .unwrap();
    fs::write(
        checkout.join("elench-policy.toml"),
        "[rules]\nforbid = []\nmax_unevaluated = 1000\n",
    )
    .unwrap();

    // The job, as the page gives it, with elench on PATH (so it installs nothing).
    let script = dir.join("elench-ci.sh");
    fs::write(&script, script_from_docs()).unwrap();
    let bin = common::elench_path();
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out_dir = dir.join("elench-out");
    let run = std::process::Command::new("bash")
        .arg(&script)
        .current_dir(&checkout)
        .env("PATH", path)
        .env_remove("ELENCH_STORE")
        .env_remove("ELENCH_SOURCE")
        .env("ELENCH_REMOTE", url)
        .env(
            "ELENCH_HARNESS_KEY",
            fs::read_to_string(&keys.harness.private).unwrap(),
        )
        .env("ELENCH_OUT", &out_dir)
        .env("GITHUB_ACTIONS", "true")
        // check's own flags pass through, split into words.
        .env("ELENCH_CHECK_ARGS", "--jobs 2 --repeat 1")
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    // The unsafe claim is falsified: the gate refuses the commit, after the push.
    assert_eq!(
        run.status.code(),
        Some(79),
        "stdout: {stdout}\nstderr: {stderr}"
    );

    let read = |name: &str| {
        fs::read_to_string(out_dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let trusted = read("keys.json");
    assert!(trusted.contains(&keys.human.keyid) && trusted.contains(&keys.harness.keyid));
    assert!(
        !trusted.contains(&evil.keyid),
        "a key the commit under test added is not trusted"
    );
    let pull: Value = serde_json::from_str(&read("pull.json")).unwrap();
    assert_eq!(pull["data"]["created"], json!(2), "{pull}");
    let junit = read("check.xml");
    assert!(junit.contains("tests=\"2\" failures=\"1\""), "{junit}");
    let sarif: Value = serde_json::from_str(&read("elench.sarif")).unwrap();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{sarif:#}");
    assert_eq!(results[0]["ruleId"], json!("elench/falsified"));
    assert_eq!(
        results[0]["partialFingerprints"]["elenchClaimId/v1"],
        json!(safe)
    );
    assert_eq!(
        results[0]["locations"][0]["physicalLocation"]["region"]["startLine"],
        json!(2)
    );
    // On GitHub Actions the verdict is also an annotation.
    assert!(
        stdout.contains("::error file=src/lib.rs,line=2,endLine=2,"),
        "{stdout}"
    );
    let push: Value = serde_json::from_str(&read("push.json")).unwrap();
    assert_eq!(push["ok"], json!(true), "{push}");
    // The key never lands in the checkout or the results.
    let secret = fs::read_to_string(&keys.harness.private).unwrap();
    for entry in fs::read_dir(&out_dir).unwrap() {
        let text = fs::read_to_string(entry.unwrap().path()).unwrap_or_default();
        assert!(!text.contains(secret.trim()));
    }

    // Another machine pulls the remote: the job's verification and falsification are there.
    let later = dir.join("later-store");
    init_store_trusting(dir, &later, &[&keys.harness, &keys.agent, &keys.human]);
    for args in [vec!["remote", "add", "origin", url], vec!["pull"]] {
        let (code, out) = elench(dir, &with_store(&later, &args));
        assert_eq!(code, 0, "{args:?}: {out}");
    }
    let (code, status) = elench(dir, &with_store(&later, &["status", &exists, &safe]));
    assert_eq!(code, 0, "{status}");
    assert_eq!(status["data"]["claims"][0]["status"], json!("verified"));
    assert_eq!(status["data"]["claims"][1]["status"], json!("falsified"));
}
