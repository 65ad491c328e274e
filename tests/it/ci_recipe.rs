//! The CI job of docs/ci.md, run end to end: the plain-shell script is read out of the page
//! (so the page and the test cannot drift apart) and run in a checkout against a local bare
//! git remote that another store filled, with only the team's root public key given (as a
//! repository variable would give it) and the harness key handed over as a secret would be:
//! the job learns every other key from the trust policy on the remote. Then a third store,
//! pinned to the root alone, pulls the remote and sees what the job recorded. The same job also
//! runs against a remote that refuses its push, and as a run from a fork (no secret): each
//! does what the page says.

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

/// The runner of the project's tests: a JUnit report saying `t1` passed.
const RUN_TESTS: &str =
    "#!/bin/sh\nprintf '<testsuite><testcase name=\"t1\"/></testsuite>' > \"$ELENCH_JUNIT\"\n";

/// A repository under test, a bare remote a developer's store filled with three claims about
/// it (one that the code falsifies, one a test decides), and the job's script.
struct Job {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    keys: Keys,
    checkout: PathBuf,
    remote: PathBuf,
    exists: String,
    safe: String,
    tested: String,
    evil: KeyPair,
    root: KeyPair,
}

impl Job {
    fn new() -> Job {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let keys = make_keys(&dir);

        // The repository under test: code, its test runner, the team's trusted keys, the
        // policy.
        let checkout = dir.join("checkout");
        let files: Vec<(PathBuf, Vec<u8>)> = vec![
            (
                "src/lib.rs".into(),
                b"pub fn parse(s: &str) -> usize {\n    unsafe { s.len() }\n}\n".to_vec(),
            ),
            ("run-tests.sh".into(), RUN_TESTS.as_bytes().to_vec()),
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
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(
            checkout.join("run-tests.sh"),
            fs::Permissions::from_mode(0o755),
        )
        .unwrap();

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
        // The team's root key signs the trust policy: the harness, agent and human keys.
        let root = make_key(&dir, "human", "root");
        let dev = dir.join("dev-store");
        let (code, out) = elench(
            &dir,
            &with_store(&dev, &["init", "--root-key", root.public.to_str().unwrap()]),
        );
        assert_eq!(code, 0, "{out}");
        let mut toml = format!(
            "name = \"example.org/ci\"\n[root]\nthreshold = 1\nkeys = [{:?}]\n",
            root.public.to_str().unwrap()
        );
        for k in [&keys.harness, &keys.agent, &keys.human] {
            toml.push_str(&format!(
                "[[key]]\nrole = {:?}\nname = {:?}\nfile = {:?}\n",
                k.role,
                k.name,
                k.public.to_str().unwrap()
            ));
        }
        fs::write(dir.join("trust.toml"), toml).unwrap();
        let trust_toml = dir.join("trust.toml");
        let policy = dir.join("policy-1.dsse");
        let (code, out) = elench(
            &dir,
            &with_store(
                &dev,
                &[
                    "trust",
                    "sign",
                    trust_toml.to_str().unwrap(),
                    "--key",
                    root.private.to_str().unwrap(),
                    "-o",
                    policy.to_str().unwrap(),
                    "--append",
                ],
            ),
        );
        assert_eq!(code, 0, "{out}");
        let exists = claim(
            &dir,
            &dev,
            &keys,
            "the parser exists",
            r#"exists("src/lib.rs")"#,
            "src/lib.rs:1-3",
            &checkout,
        );
        let safe = claim(
            &dir,
            &dev,
            &keys,
            "the parser has no unsafe code",
            r#"grep("unsafe", "src") == 0"#,
            "src/lib.rs:2-2",
            &checkout,
        );
        let tested = claim(
            &dir,
            &dev,
            &keys,
            "the tests pass",
            r#"test("t1").passed"#,
            "run-tests.sh",
            &checkout,
        );
        let url = remote.to_str().unwrap();
        for args in [vec!["remote", "add", "origin", url], vec!["push"]] {
            let (code, out) = elench(&dir, &with_store(&dev, &args));
            assert_eq!(code, 0, "{args:?}: {out}");
        }

        // The commit under test tries to pin a root of its own and to loosen the policy;
        // the job takes the root from the variable and the policy from the protected
        // branch, so neither counts.
        let evil = make_key(&dir, "human", "evil");
        fs::write(
            checkout.join("elench-root.pub"),
            fs::read(&evil.public).unwrap(),
        )
        .unwrap();
        fs::write(
            checkout.join("elench-policy.toml"),
            "[rules]\nforbid = []\nmax_unevaluated = 1000\n",
        )
        .unwrap();
        Job {
            _tmp: tmp,
            dir,
            keys,
            checkout,
            remote,
            exists,
            safe,
            tested,
            evil,
            root,
        }
    }

    fn out_dir(&self) -> PathBuf {
        self.dir.join("elench-out")
    }

    /// Makes the remote refuse every push, as a read-only token does: its pre-receive hook
    /// counts its runs in `REMOTE/hook-runs` and exits 1.
    fn refuse_pushes(&self) {
        use std::os::unix::fs::PermissionsExt;
        let hook = self.remote.join("hooks/pre-receive");
        fs::write(
            &hook,
            "#!/bin/sh\necho run >> \"$GIT_DIR/hook-runs\"\necho 'this token may only read' >&2\nexit 1\n",
        )
        .unwrap();
        fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// The job, as the page gives it, with elench on PATH (so it installs nothing), run by
    /// bash; `secret`: the harness key is in the environment.
    fn run(&self, secret: bool) -> std::process::Output {
        let script = self.dir.join("elench-ci.sh");
        fs::write(&script, script_from_docs()).unwrap();
        let bin = common::elench_path();
        let path = format!(
            "{}:{}",
            bin.parent().unwrap().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        // Under umask 077, as some CI images have it: check must not depend on it.
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", "umask 077; exec bash \"$0\""])
            .arg(&script)
            .current_dir(&self.checkout)
            .env("PATH", path)
            .env_remove("ELENCH_STORE")
            .env_remove("ELENCH_SOURCE")
            .env_remove("ELENCH_HARNESS_KEY")
            .env("ELENCH_REMOTE", self.remote.to_str().unwrap())
            // The team's root public key alone, as a repository variable gives it.
            .env(
                "ELENCH_ROOT_KEY",
                fs::read_to_string(&self.root.public).unwrap(),
            )
            .env("ELENCH_OUT", self.out_dir())
            .env("GITHUB_ACTIONS", "true")
            // check's own flags pass through, split into words: the test runner among them.
            .env(
                "ELENCH_CHECK_ARGS",
                "--jobs 2 --repeat 1 --runner junit:./run-tests.sh",
            );
        if secret {
            cmd.env(
                "ELENCH_HARNESS_KEY",
                fs::read_to_string(&self.keys.harness.private).unwrap(),
            );
        }
        if !bwrap_works() {
            eprintln!("note: bwrap unavailable; the job's processes run with --no-sandbox");
            cmd.env(
                "ELENCH_CHECK_ARGS",
                "--jobs 2 --repeat 1 --runner junit:./run-tests.sh --no-sandbox",
            );
        }
        cmd.output().expect("bash runs")
    }

    fn read(&self, name: &str) -> String {
        fs::read_to_string(self.out_dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// The statuses of the three claims in a store that pulls the remote now.
    fn statuses_on_the_remote(&self) -> Vec<String> {
        let later = self.dir.join(format!("later-store-{}", rand_suffix()));
        let k = &self.keys;
        let _ = k;
        let (code, out) = elench(
            &self.dir,
            &with_store(
                &later,
                &["init", "--root-key", self.root.public.to_str().unwrap()],
            ),
        );
        assert_eq!(code, 0, "{out}");
        let url = self.remote.to_str().unwrap();
        for args in [vec!["remote", "add", "origin", url], vec!["pull"]] {
            let (code, out) = elench(&self.dir, &with_store(&later, &args));
            assert_eq!(code, 0, "{args:?}: {out}");
        }
        let (code, status) = elench(
            &self.dir,
            &with_store(&later, &["status", &self.exists, &self.safe, &self.tested]),
        );
        assert_eq!(code, 0, "{status}");
        (0..3)
            .map(|i| {
                status["data"]["claims"][i]["status"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    }
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::SeqCst)
}

/// Whether bubblewrap can make a sandbox here.
fn bwrap_works() -> bool {
    crate::check_support::bwrap_works()
}

#[test]
fn the_ci_job_of_the_docs_runs_end_to_end_against_a_bare_remote() {
    let job = Job::new();
    let run = job.run(true);
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    // The unsafe claim is falsified: the gate refuses the commit, after the push.
    assert_eq!(
        run.status.code(),
        Some(79),
        "stdout: {stdout}\nstderr: {stderr}"
    );

    let keys = &job.keys;
    let trusted = job.read("trust.json");
    assert!(trusted.contains(&keys.human.keyid) && trusted.contains(&keys.harness.keyid));
    assert!(
        !trusted.contains(&job.evil.keyid),
        "a root the commit under test put there is not pinned"
    );
    let pull: Value = serde_json::from_str(&job.read("pull.json")).unwrap();
    // The policy, then the three claims its keys signed.
    assert_eq!(pull["data"]["created"], json!(4), "{pull}");
    // The test claim is decided (as root too: the sandbox's user can write its report).
    let junit = job.read("check.xml");
    assert!(junit.contains("tests=\"3\" failures=\"1\""), "{junit}");
    assert!(!junit.contains("<skipped"), "{junit}");
    let sarif: Value = serde_json::from_str(&job.read("elench.sarif")).unwrap();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{sarif:#}");
    assert_eq!(results[0]["ruleId"], json!("elench/falsified"));
    assert_eq!(
        results[0]["partialFingerprints"]["elenchClaimId/v1"],
        json!(job.safe)
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
    let push: Value = serde_json::from_str(&job.read("push.json")).unwrap();
    assert_eq!(push["ok"], json!(true), "{push}");
    // The key never lands in the checkout or the results.
    let secret = fs::read_to_string(&keys.harness.private).unwrap();
    for entry in fs::read_dir(job.out_dir()).unwrap() {
        let text = fs::read_to_string(entry.unwrap().path()).unwrap_or_default();
        assert!(!text.contains(secret.trim()));
    }

    // Another machine pulls the remote: the job's records are there.
    assert_eq!(
        job.statuses_on_the_remote(),
        ["verified", "falsified", "verified"]
    );
}

#[test]
fn a_push_the_remote_refuses_is_reported_once_and_the_gate_still_answers() {
    let job = Job::new();
    job.refuse_pushes();
    let run = job.run(true);
    let stderr = String::from_utf8_lossy(&run.stderr);
    // The gate's "may not ship" still wins the exit code.
    assert_eq!(run.status.code(), Some(79), "stderr: {stderr}");
    // The refusal is in the log, with git's words, and was not retried.
    assert!(stderr.contains("PUSH_REFUSED"), "{stderr}");
    assert!(stderr.contains("pre-receive hook declined"), "{stderr}");
    assert!(stderr.contains("this token may only read"), "{stderr}");
    let push: Value = serde_json::from_str(&job.read("push.json")).unwrap();
    assert_eq!(push["error"]["code"], json!("PUSH_REFUSED"), "{push}");
    let runs = fs::read_to_string(job.remote.join("hook-runs")).unwrap();
    assert_eq!(runs.lines().count(), 1, "the push was tried {runs:?}");
    // Checked, gated, but nothing reached the remote.
    assert!(job.read("check.xml").contains("tests=\"3\""));
    assert!(job.read("elench.sarif").contains("elench/falsified"));
    assert_eq!(
        job.statuses_on_the_remote(),
        ["unevaluated", "unevaluated", "unevaluated"]
    );
}

#[test]
fn a_run_from_a_fork_without_the_key_pulls_and_gates_and_neither_checks_nor_pushes() {
    let job = Job::new();
    // A fork's token may only read, too.
    job.refuse_pushes();
    let run = job.run(false);
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    // Nothing was checked here, so the claims are unevaluated and the policy (none may be)
    // fails the gate, as it would on any tree nobody checked.
    assert_eq!(
        run.status.code(),
        Some(79),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stderr.contains("no ELENCH_HARNESS_KEY"), "{stderr}");
    let pull: Value = serde_json::from_str(&job.read("pull.json")).unwrap();
    assert_eq!(pull["data"]["created"], json!(4), "{pull}");
    let sarif: Value = serde_json::from_str(&job.read("elench.sarif")).unwrap();
    assert!(sarif["runs"][0]["results"].is_array(), "{sarif:#}");
    assert!(stdout.contains("::error"), "{stdout}");
    for skipped in ["check.xml", "push.json"] {
        assert!(
            !job.out_dir().join(skipped).exists(),
            "{skipped} was written"
        );
    }
    assert!(
        !job.remote.join("hook-runs").exists(),
        "the job tried to push"
    );
    assert_eq!(
        job.statuses_on_the_remote(),
        ["unevaluated", "unevaluated", "unevaluated"]
    );
}
