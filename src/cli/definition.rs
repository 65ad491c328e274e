//! The command line's clap definition: the global options and every command with its
//! arguments (each command's own `Args` type lives in its module).

use crate::cli::commands;
use crate::cli::failure::ArgError;
use crate::cli::output::Format;
use crate::cli::values::parse_seconds;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Parser)]
#[command(
    name = "elench",
    version,
    about = "An append-only, content-addressed log of signed claims about code",
    // The commands come first; what every command shares (output, time limits, exit codes)
    // is said in a few lines after them, in full in the manual (`elench man`, docs/).
    after_help = "Output: text on a terminal, else one JSON object (an error also on stderr).\n\
                  Exit codes: 0 ok, 1 bug, 2 invalid input (nothing changed), 3 partial, \
                  4 precondition,\n  5 not found, 10 time limit, 12 busy or unreachable \
                  (retry), 79 gate refused, 130/143 cancelled.\n\
                  'elench COMMAND --help' for a command; 'elench man' for the manual pages.",
    propagate_version = true
)]
pub struct Cli {
    /// Store directory (default: .elench, found by walking up from the working directory)
    #[arg(long, global = true, env = "ELENCH_STORE", value_name = "PATH")]
    pub store: Option<PathBuf>,
    /// Output format (default: text on a terminal, json otherwise)
    #[arg(long, global = true, value_parser = Format::NAMES, value_name = "FORMAT")]
    pub format: Option<String>,
    /// Seconds to wait for a store another elench process holds before STORE_BUSY
    #[arg(long, global = true, default_value_t = 30, value_name = "SECONDS")]
    pub wait: u64,
    /// Time limit in seconds, 0 for none (default 300, 3600 for long work; ELENCH_TIMEOUT);
    /// on `check`, one claim's
    #[arg(long, global = true, value_name = "SECONDS", value_parser = parse_seconds)]
    pub timeout: Option<Duration>,
    /// Time limit of the whole command in seconds, on every command, `check` included
    #[arg(long, global = true, value_name = "SECONDS", value_parser = parse_seconds)]
    pub command_timeout: Option<Duration>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a store (.elench in DIR, or --store PATH)
    Init(commands::init::InitArgs),
    /// Manage signing keys
    #[command(subcommand)]
    Keys(commands::keys::KeysCommand),
    /// Print the elench tree OID of a directory (git's SHA-256 tree id of its files)
    Tree(commands::tree::TreeArgs),
    /// Print an anchor (tree, path, lines, normalised content digest) for a claim
    Anchor(commands::anchor::AnchorArgs),
    /// Give a claim its id, wrap it in an in-toto Statement and sign it as a DSSE envelope
    Sign(commands::sign::SignArgs),
    /// Run the whole ingest validation of an envelope without storing it
    Verify(commands::verify::VerifyArgs),
    /// Verify envelopes and append the accepted ones to the log
    Add(commands::add::AddArgs),
    /// Build, sign and append a claim in one call (a chain of claims with --batch)
    ///
    /// The anchor is computed from the tree, id prefixes are expanded and the origin follows
    /// from the key's role.
    Claim(commands::claim::ClaimArgs),
    /// Fold the log: each claim's standing, and why
    #[command(override_usage = "elench status [OPTIONS] <ID>...\n       \
                                elench status [OPTIONS] --all [--limit N] [--cursor C]")]
    Status(commands::status::StatusArgs),
    /// What a falsification of a claim revokes, layer by layer (or a key's compromise)
    #[command(override_usage = "elench blast [OPTIONS] <ID>\n       \
                                elench blast [OPTIONS] --signer <KEY>")]
    Blast(commands::blast::BlastArgs),
    /// A shortest dependsOn path from one claim to a premise it rests on
    Why(commands::why::WhyArgs),
    /// A claim as signed, its signers and the records targeting it
    Show(commands::show::ShowArgs),
    /// The log in arrival order
    Log(commands::log::LogArgs),
    /// Write the log as an in-toto bundle (.intoto.jsonl)
    Export(commands::export::ExportArgs),
    /// Check every record, signature and index entry; --repair quarantines damage
    Fsck(commands::fsck::FsckArgs),
    /// Rebuild the index from the log
    Reindex(commands::reindex::ReindexArgs),
    /// Print the log's state (n, chain; and a C2SP checkpoint note), optionally signed, for a
    /// later `fsck --checkpoint`
    Checkpoint(commands::checkpoint::CheckpointArgs),
    /// Decide from the log whether the tree may ship under a policy (exit 79 when not)
    Gate(commands::gate::GateArgs),
    /// Serve elench to coding agents over the Model Context Protocol (stdio)
    Mcp(commands::mcp::McpArgs),
    /// The team's trust policies: sign the next version, show the chain, pin a root key
    #[command(subcommand)]
    Trust(commands::trust::TrustCommand),
    /// Manage the git remotes the log is shared through
    #[command(subcommand)]
    Remote(commands::remote::RemoteCommand),
    /// Add to a remote the envelopes it lacks (default remote: origin)
    Push(commands::sync::RemoteArg),
    /// Take from a remote the envelopes this store lacks (default remote: origin)
    ///
    /// Each is verified against this store's trusted keys; rejected ones are listed and stay
    /// in the remote.
    Pull(commands::sync::RemoteArg),
    /// Pull, then push (default remote: origin)
    Sync(commands::sync::RemoteArg),
    /// Evaluate predicate claims in a sandbox and record what the harness observed
    Check(commands::check::CheckArgs),
    /// Conformance reports as evidence: check them, attest with them, run elench's corpus
    #[command(subcommand)]
    Conformance(commands::conformance::ConformanceCommand),
    /// Show elench's main job end to end on built-in envelopes, in a temporary store
    Demo(commands::demo::DemoArgs),
    /// Manual pages (roff), generated from these definitions
    Man(commands::man::ManArgs),
    /// A shell completion script (bash, zsh, fish), generated from these definitions
    Completions(commands::completions::CompletionsArgs),
    /// Every command with its flags, danger level and exit codes, as one JSON object
    Manifest(commands::manifest::ManifestArgs),
    /// The credential scopes commands need against those held (elench needs none)
    CheckPermissions(commands::check_permissions::CheckPermissionsArgs),
}

impl Command {
    pub fn name(&self) -> &'static str {
        match self {
            Command::Keys(k) => k.name(),
            Command::Tree(_) => "tree",
            Command::Anchor(_) => "anchor",
            Command::Gate(_) => "gate",
            Command::Mcp(_) => "mcp",
            Command::Sign(_) => "sign",
            Command::Verify(_) => "verify",
            Command::Init(_) => "init",
            Command::Add(_) => "add",
            Command::Claim(_) => "claim",
            Command::Status(_) => "status",
            Command::Blast(_) => "blast",
            Command::Why(_) => "why",
            Command::Show(_) => "show",
            Command::Log(_) => "log",
            Command::Export(_) => "export",
            Command::Fsck(_) => "fsck",
            Command::Reindex(_) => "reindex",
            Command::Checkpoint(_) => "checkpoint",
            Command::Remote(r) => r.name(),
            Command::Trust(t) => t.name(),
            Command::Push(_) => "push",
            Command::Pull(_) => "pull",
            Command::Sync(_) => "sync",
            Command::Check(_) => "check",
            Command::Demo(_) => "demo",
            Command::Man(_) => "man",
            Command::Completions(_) => "completions",
            Command::Manifest(_) => "manifest",
            Command::CheckPermissions(_) => "check-permissions",
            Command::Conformance(c) => c.name(),
        }
    }
}

/// A document format the command cannot write, as an argument error (refused before
/// anything runs, like every other).
pub fn format_error(command: &Command, format: Format) -> Option<ArgError> {
    if !format.is_product() {
        return None;
    }
    let name = format.name();
    let ok = match (format, command) {
        (Format::Sarif, Command::Gate(_)) => true,
        (Format::Sarif, Command::Status(a)) => {
            if a.at.is_none() {
                return Some(ArgError::new(
                    "--format",
                    Some(name),
                    "status --format sarif needs --at DIR: SARIF locates each claim in the \
                     tree it is checked against",
                ));
            }
            true
        }
        (Format::Dot | Format::Mermaid, Command::Blast(_) | Command::Status(_)) => true,
        (Format::Dot | Format::Mermaid, Command::Why(_)) => true,
        (Format::Junit, Command::Check(_)) => true,
        (Format::Github, Command::Gate(_) | Command::Check(_)) => true,
        _ => false,
    };
    (!ok).then(|| {
        ArgError::new(
            "--format",
            Some(name),
            format!(
                "--format {name} is not a format of `{}`: sarif is written by gate and status \
                 --at, dot and mermaid by blast, status and why, junit by check, github by gate \
                 and check",
                command.name()
            ),
        )
    })
}
