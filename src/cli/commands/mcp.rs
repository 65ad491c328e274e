//! `elench mcp`: serve elench to coding agents over the Model Context Protocol on stdio.
//!
//! Everything the server is fixed to (store, keys, tree) is read and checked here, before the
//! first message, so a server that cannot work says why on stderr and exits instead of
//! failing each call. stdout then belongs to the protocol: no report is written there.

use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::output::{self, Report};
use crate::mcp::{Config, Signer};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Register it with an MCP client as the command `elench mcp --key \
                        AGENT.pem` (see docs/agents.md). It runs until the client closes \
                        stdin; stdout carries only the protocol, problems go to stderr."
)]
pub struct McpArgs {
    /// The agent's private key (PEM PKCS#8): the `claim` tool signs with it; its role in
    /// the store's trusted keys sets the claims' origin. Not needed with --read-only
    #[arg(long, value_name = "AGENT.pem", required_unless_present = "read_only")]
    pub key: Option<PathBuf>,
    /// A harness key: with it the server offers `check`, whose records it signs
    #[arg(long, value_name = "HARNESS.pem")]
    pub harness_key: Option<PathBuf>,
    /// The tree anchors are read from and claims_for, check and gate look at (default: the
    /// enclosing checkout, i.e. the nearest directory upwards holding .git, else the
    /// working directory)
    #[arg(long, value_name = "DIR")]
    pub at: Option<PathBuf>,
    /// Who makes the claims the `claim` tool records (origin.producer.id; default
    /// ELENCH_PRODUCER, else the key's name in the store)
    #[arg(long, value_name = "ID")]
    pub producer: Option<String>,
    /// Serve only the tools that change nothing (claims_for, status, blast, why, show, log,
    /// gate)
    #[arg(long)]
    pub read_only: bool,
}

fn signer(path: &Path) -> Result<Signer, Failure> {
    Ok(Signer {
        path: path.to_path_buf(),
        key: crate::cli::files::read_signing_key_file(path)?,
    })
}

/// The tree: `--at DIR`, else the nearest directory upwards holding `.git`, else the working
/// directory; made absolute once, so that nothing later depends on the working directory.
fn tree_dir(at: Option<&Path>) -> Result<PathBuf, Failure> {
    let dir = elench::ops::tree::tree_dir(at)?;
    std::fs::canonicalize(&dir).map_err(|e| Failure::io(dir.display(), e))
}

/// `ELENCH_PRODUCER`, when set to something (as `elench claim` reads it).
fn producer_from_env() -> Result<Option<String>, Failure> {
    match std::env::var("ELENCH_PRODUCER") {
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => Ok(Some(v)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(Failure::usage(
            None,
            "ELENCH_PRODUCER is not text: unset it or give --producer ID".into(),
        )),
    }
}

pub fn run(a: McpArgs, g: &Globals) -> Result<Report, Failure> {
    // A server that cannot start says why on stderr only, with the failure's exit code:
    // a client reading stdout for the protocol must not get a report there.
    serve(a, g).or_else(|f| {
        Ok(Report {
            failure: Some(f),
            stdout_taken: true,
            ..Report::default()
        })
    })
}

fn serve(a: McpArgs, g: &Globals) -> Result<Report, Failure> {
    // stdout is the protocol's from here on: the final report and the watchdog's answer to a
    // signal go to stderr only, and so does the answer to a fault in the index.
    output::take_stdout_for_product();
    crate::cli::fault::prepare(
        Vec::new(),
        format!("error[INDEX_DAMAGED]: {}\n", crate::cli::fault::MESSAGE).into_bytes(),
    );
    let store = elench::store::locate(g.store.as_deref())?;
    // Opened once here so that a missing or damaged store is said at once; each call opens
    // it again, since another process may append between calls, through the environments
    // of the server's life (`Config::envs`).
    drop(elench::store::Store::open(
        &store,
        &elench::store::Options::new(Duration::from_secs(g.wait)).envs(&g.envs),
    )?);
    let key = match (&a.key, a.read_only) {
        (_, true) => None,
        (Some(path), false) => Some(signer(path)?),
        (None, false) => {
            return Err(Failure::usage(
                None,
                "mcp needs --key AGENT.pem to sign claims, or --read-only".into(),
            ))
        }
    };
    let harness_key = match &a.harness_key {
        Some(path) if !a.read_only => Some(signer(path)?),
        _ => None,
    };
    // The command line's response cap bounds each tool result too, fixed for the session.
    let (max_output_bytes, bad_cap) = output::output_cap();
    if let Some(w) = bad_cap {
        // Said once, where whoever started the server looks: stdout is the protocol's.
        output::warnings_to_stderr(std::slice::from_ref(&w));
    }
    let config = Config {
        store,
        wait: Duration::from_secs(g.wait),
        key,
        harness_key,
        producer: match a.producer {
            Some(p) => Some(p),
            None => producer_from_env()?,
        },
        at: tree_dir(a.at.as_deref())?,
        read_only: a.read_only,
        reaper: g.reaper.clone(),

        max_output_bytes,

        envs: g.envs.clone(),
    };
    crate::mcp::serve(config)?;
    Ok(Report {
        stdout_taken: true,
        ..Report::default()
    })
}
