//! `elench mcp`: elench served to coding agents over the Model Context Protocol, on stdio,
//! with the official Rust SDK (`rmcp`).
//!
//! `server` speaks the protocol, running a few calls at once; `transport` reads its lines
//! with a bound and answers what it cannot read; `tools` lists the tools (names,
//! annotations, `schemas` derived from the `inputs` and the operations' outputs) and runs each as one call into the library, on a blocking
//! thread; `bound` cuts a result to the byte cap. What the server signs with, which store it
//! appends to and which tree it reads are fixed when it starts ([`Config`]), never taken
//! from a tool's input.

pub mod bound;
pub mod inputs;
pub mod schemas;
mod server;
pub mod tools;
mod transport;
pub mod words;

use ed25519_dalek::SigningKey;
use elench::ops::Failure;
use std::path::PathBuf;
use std::time::Duration;

/// A private key the server signs with, read once at start.
pub struct Signer {
    /// Where it was read from (for messages).
    pub path: PathBuf,
    pub key: SigningKey,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key itself.
        f.debug_struct("Signer").field("path", &self.path).finish()
    }
}

/// What the server is fixed to for its whole life.
#[derive(Debug)]
pub struct Config {
    /// The store's root, found at start.
    pub store: PathBuf,
    /// How long a call waits for a store another process holds.
    pub wait: Duration,
    /// Signs what `claim` records (None only under `read_only`).
    pub key: Option<Signer>,
    /// Signs what `check` records; without it `check` is not served.
    pub harness_key: Option<Signer>,
    /// `origin.producer.id` of what `claim` records (None: the key's name in the store).
    pub producer: Option<String>,
    /// The tree anchors, `claims_for`, `check` and `gate` read.
    pub at: PathBuf,
    /// Serve only the tools that change nothing.
    pub read_only: bool,
    /// The one reaper of every call's children and scratch directories (and the numbers
    /// two `check` calls at once must not share).
    pub reaper: std::sync::Arc<elench::reaper::Reaper>,

    /// The most bytes a tool result's JSON may take (None: no cap): the command line's
    /// `ELENCH_MAX_OUTPUT_BYTES`, read when the server starts ([`bound`]).
    pub max_output_bytes: Option<usize>,

    /// The index environments every call's store shares, for the server's life (LMDB opens
    /// one folder's once per process; calls run at once on blocking threads).
    pub envs: elench::store::Environments,
}

/// Serves MCP on stdin/stdout until the client closes stdin. Returns an error only when the
/// session could not run at all; a failing tool is a tool result, never an end.
pub fn serve(config: Config) -> Result<(), Failure> {
    // Calls run on blocking threads, at most `CALLS_AT_ONCE` at a time; a thread that has
    // just finished a call is not yet idle when the next call starts, so without a bound the
    // pool grows under load. The extra threads are for stdin and stdout, which tokio reads
    // and writes on the same pool.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(server::CALLS_AT_ONCE + 4)
        .build()
        .map_err(|e| Failure::Internal(format!("mcp: cannot start the runtime: {e}")))?;
    runtime.block_on(server::run(config))
}
