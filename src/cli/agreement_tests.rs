//! One request, one outcome (a unit test of the binary, which holds both front ends): a `claim` batch the store takes only in part is reported alike
//! by the command line (`elench claim --batch`) and the MCP `claim` tool: the same code, exit
//! class, message, `effect` and counts, decided once by the operation's output.
//!
//! The store refuses a claim at the append only when trust changed after the claim was
//! sealed (a key retired meanwhile), which no single process does on its own: each front end
//! runs here in the test's process, with an observer that retires the signing key when the
//! batch's second claim names a premise the store lacks (`MISSING_PREMISE`, heard after the
//! request's trust was read and before the append). The first claim is stored already, so
//! the append takes it (`noop`) and refuses the second.

use crate::cli::failure::ExitNumber;
use crate::cli::globals::Globals;
use ed25519_dalek::SigningKey;
use elench::keys::{keyid, signing_key_pem, Role, TrustedKey};
use elench::ops::{Collected, Context, Observer};
use elench::store::{Environments, Options, Store};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Retires `keyid` in the store at `root` on the first `MISSING_PREMISE` it hears, through
/// the environments the operation's own store shares.
struct RetireOnMissingPremise {
    root: PathBuf,
    envs: Environments,
    keyid: String,
    done: AtomicBool,
    heard: Collected,
}

impl Observer for RetireOnMissingPremise {
    fn warn(&self, code: &str, message: String) {
        if code == "MISSING_PREMISE" && !self.done.swap(true, Ordering::SeqCst) {
            let store = Store::open(
                &self.root,
                &Options::new(Duration::from_secs(30)).envs(&self.envs),
            )
            .expect("the store opens beside the operation's");
            assert_eq!(store.retire_key(&self.keyid).unwrap(), Some(true));
        }
        self.heard.warn(code, message);
    }
}

/// The agent key both front ends sign with (fixed bytes), and its file.
struct Agent {
    signing: SigningKey,
    keyid: String,
}

impl Agent {
    fn new() -> Agent {
        let signing = SigningKey::from_bytes(&[7u8; 32]);
        Agent {
            keyid: keyid(&signing.verifying_key()),
            signing,
        }
    }

    fn write_file(&self, dir: &Path) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let path = dir.join("agent.key");
        std::fs::write(&path, signing_key_pem(&self.signing).unwrap()).unwrap();
        path
    }
}

/// A store trusting the agent key, and a tree to anchor in.
fn world(dir: &Path, keys: &Agent) -> (PathBuf, PathBuf) {
    let root = dir.join("store");
    let (store, _) = Store::init(&root, &Options::new(Duration::from_secs(30))).unwrap();
    let trusted = TrustedKey::new(Role::Agent, "agent", keys.signing.verifying_key()).unwrap();
    store.add_key(&trusted).unwrap();
    drop(store);
    let tree = dir.join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("a.txt"), "a\n").unwrap();
    (root, tree)
}

fn observer(root: &Path, envs: &Environments, keys: &Agent) -> Arc<RetireOnMissingPremise> {
    Arc::new(RetireOnMissingPremise {
        root: root.to_owned(),
        envs: envs.clone(),
        keyid: keys.keyid.clone(),
        done: AtomicBool::new(false),
        heard: Collected::default(),
    })
}

/// The first claim (stored beforehand) and the second, resting on a premise nobody has.
fn first() -> Value {
    json!({"text": "stored already", "timestamp": 1_700_000_000})
}

fn second() -> Value {
    json!({"text": "rests on a missing premise", "timestamp": 1_700_000_001,
           "depends_on": [format!("cl_{}", "ab".repeat(32))]})
}

/// What a front end reported: the error's code and message, the exit code, and the data.
#[derive(Debug)]
struct Reported {
    code: String,
    message: String,
    exit: i32,
    data: Value,
}

fn through_the_cli(dir: &Path, keys: &Agent) -> Reported {
    let (root, tree) = world(dir, keys);
    let key_file = keys.write_file(&dir.join("keys"));
    let envs = Environments::new();
    let globals = Globals {
        store: Some(root.clone()),
        wait: 30,
        mode: crate::cli::output::Mode::Json,
        format: Some("json".into()),
        reaper: elench::reaper::Reaper::new(),
        envs: envs.clone(),
    };
    let args = |batch: &Path| {
        let argv = [
            "claim".into(),
            "--batch".into(),
            batch.display().to_string(),
            "--key".into(),
            key_file.display().to_string(),
            "--at".into(),
            tree.display().to_string(),
            "--producer".into(),
            "p".into(),
        ];
        use clap::Parser;
        match crate::cli::definition::Cli::try_parse_from(
            std::iter::once("elench".to_owned()).chain(argv),
        )
        .unwrap()
        .command
        {
            crate::cli::definition::Command::Claim(a) => a,
            other => panic!("not claim: {other:?}"),
        }
    };
    let write = |name: &str, lines: &[Value]| {
        let path = dir.join(name);
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&path, text).unwrap();
        path
    };
    let quiet = globals.context_with(Arc::new(Collected::default()));
    let before =
        crate::cli::commands::claim::run_in(args(&write("1.jsonl", &[first()])), &globals, &quiet)
            .unwrap();
    assert!(before.failure.is_none(), "{:?}", before.failure);
    let watch = observer(&root, &envs, keys);
    let ctx: Context = globals.context_with(watch.clone());
    let report = crate::cli::commands::claim::run_in(
        args(&write("2.jsonl", &[first(), second()])),
        &globals,
        &ctx,
    )
    .unwrap();
    assert!(watch.done.load(Ordering::SeqCst), "the key was retired");
    let failure = report.failure.expect("the store refused a claim");
    Reported {
        code: failure.code().to_string(),
        message: failure.to_string(),
        exit: failure.exit_code(),
        data: report.data,
    }
}

fn through_mcp(dir: &Path, keys: &Agent) -> Reported {
    let (root, tree) = world(dir, keys);
    let envs = Environments::new();
    let config = crate::mcp::Config {
        store: root.clone(),
        wait: Duration::from_secs(30),
        key: Some(crate::mcp::Signer {
            path: dir.join("agent.key"),
            key: keys.signing.clone(),
        }),
        harness_key: None,
        producer: Some("p".into()),
        at: std::fs::canonicalize(&tree).unwrap(),
        read_only: false,
        reaper: elench::reaper::Reaper::new(),
        max_output_bytes: None,
        envs: envs.clone(),
    };
    let call = |args: Value, observer: Arc<dyn Observer>| {
        crate::mcp::tools::call(&config, "claim", args, observer, &elench::ops::Never)
            .expect("the call ran")
    };
    let before = call(json!({"claims": [first()]}), Arc::new(Collected::default()));
    assert!(before.failure.is_none(), "{:?}", before.failure);
    let watch = observer(&root, &envs, keys);
    let answer = call(json!({"claims": [first(), second()]}), watch.clone());
    assert!(watch.done.load(Ordering::SeqCst), "the key was retired");
    let failure = answer.failure.expect("the store refused a claim");
    Reported {
        code: failure.code().to_string(),
        message: failure.to_string(),
        exit: failure.exit_code(),
        data: answer.value,
    }
}

#[test]
fn a_batch_taken_in_part_is_one_outcome_in_the_cli_and_in_mcp() {
    let keys = Agent::new();
    let cli_dir = tempfile::tempdir().unwrap();
    let mcp_dir = tempfile::tempdir().unwrap();
    let cli = through_the_cli(cli_dir.path(), &keys);
    let mcp = through_mcp(mcp_dir.path(), &keys);

    assert_eq!(cli.code, "PARTIAL_FAILURE", "{cli:?}");
    assert_eq!(cli.exit, 3, "{cli:?}");
    assert_eq!(mcp.code, cli.code, "{mcp:?}");
    assert_eq!(mcp.exit, cli.exit, "{mcp:?}");
    assert_eq!(mcp.message, cli.message, "{mcp:?}");
    for field in ["effect", "created", "merged", "noop", "rejected", "dry_run"] {
        assert_eq!(mcp.data[field], cli.data[field], "{field}: {mcp:?} {cli:?}");
    }
    assert_eq!(cli.data["effect"], "noop", "{cli:?}");
    assert_eq!(cli.data["noop"], 1, "{cli:?}");
    assert_eq!(cli.data["rejected"], 1, "{cli:?}");
    // The same claim stored, the same one refused, for the same reason.
    assert_eq!(mcp.data["claims"][0]["id"], cli.data["claims"][0]["id"]);
    assert_eq!(
        mcp.data["rejections"][0]["code"],
        cli.data["rejections"][0]["code"]
    );
    assert_eq!(mcp.data["rejections"][0]["line"], 2, "{mcp:?}");
}
