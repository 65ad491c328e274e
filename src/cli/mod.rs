//! The command line: argument parsing, dispatch, and the output frame every command shares.
//!
//! Commands return a [`Report`] or a [`Failure`]; only this module and `output` write to
//! stdout, and only `failure` decides exit codes.

pub mod args;
pub mod commands;
pub mod failure;
pub mod files;
pub mod interrupt;
pub mod output;
pub mod render;

use args::ArgError;
use clap::{CommandFactory, Parser, Subcommand};
use failure::Failure;
use output::{emit, Format, Mode, Report};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Debug, Parser)]
#[command(
    name = "elench",
    version,
    about = "An append-only, content-addressed log of signed claims about code",
    long_about = "elench verifies DSSE-signed claims about code, gives each a content address, \
                  and (with a store) appends them to a log whose fold says which claims still \
                  stand.\n\nOutput: readable text on a terminal; one JSON object on stdout \
                  otherwise (a pipe, CI or NO_COLOR set, or --format json); rows with \
                  --format jsonl or tsv.\n\nEvery command runs under a time limit: 5 minutes, \
                  or an hour for add, check, fsck, reindex, export, push, pull, sync and \
                  conformance run; --timeout SECONDS (or --command-timeout, or \
                  ELENCH_TIMEOUT) sets another, 0 none. On check, --timeout is check's own \
                  limit for one claim; its whole-command limit is --command-timeout or \
                  ELENCH_TIMEOUT. push, pull and sync also take --connect-timeout SECONDS, \
                  how long a remote may take to answer (default 30 when no person is at a \
                  terminal).\n\n\
                  A command line with errors is refused before anything runs, with every \
                  error on it (error.errors in JSON).\n\n\
                  Exit codes: 0 ok, 1 internal error, 2 invalid input (nothing changed), \
                  3 partial, 4 precondition, 5 not found, 10 stopped at the time limit \
                  (TIMEOUT), 12 busy or a remote unreachable (retry), 130/143 cancelled by \
                  SIGINT/SIGTERM (CANCELLED); gate's own: 79 the gate refused the tree \
                  (GATE_FAILED).",
    propagate_version = true
)]
pub struct Cli {
    /// Store directory (default: ./.elench, found by walking up from the working directory)
    #[arg(long, global = true, env = "ELENCH_STORE", value_name = "PATH")]
    pub store: Option<PathBuf>,
    /// Output format: json (one response envelope), jsonl or tsv (the result's rows), text
    /// or plain (for people; plain is never coloured). Default: text on a terminal, json
    /// otherwise
    #[arg(long, global = true, value_parser = Format::NAMES, value_name = "FORMAT")]
    pub format: Option<String>,
    /// Seconds to wait for a store another elench process holds before STORE_BUSY
    #[arg(long, global = true, default_value_t = 30, value_name = "SECONDS")]
    pub wait: u64,
    /// Time limit for the whole command, in seconds (fractions allowed; 0: none). Default:
    /// 300, or 3600 for add, check, fsck, reindex, export, push, pull, sync and conformance
    /// run; also ELENCH_TIMEOUT. At the limit the command stops cleanly and exits 10
    /// (TIMEOUT). On `check`, --timeout is check's own per-claim limit instead
    #[arg(long, global = true, value_name = "SECONDS", value_parser = parse_seconds)]
    pub timeout: Option<Duration>,
    /// Time limit for the whole command, in seconds, on every command (`check` included,
    /// whose --timeout is its per-claim limit); as --timeout and ELENCH_TIMEOUT otherwise
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
    /// Build, sign and append a claim in one call: anchor from the tree, id prefixes
    /// expanded, origin from the key's role (or a chain of claims with --batch)
    Claim(commands::claim::ClaimArgs),
    /// Fold the log: each claim's standing, and why
    #[command(override_usage = "elench status [OPTIONS] <ID>...\n       \
                                elench status [OPTIONS] --all [--limit N] [--cursor C]")]
    Status(commands::status::StatusArgs),
    /// What a falsification of a claim revokes, layer by layer
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
    /// Print the log's state (n, chain), optionally signed, for a later `fsck --checkpoint`
    Checkpoint(commands::checkpoint::CheckpointArgs),
    /// Decide from the log whether the tree may ship under a policy (exit 79 when not)
    Gate(commands::gate::GateArgs),
    /// Serve elench to coding agents over the Model Context Protocol (stdio)
    Mcp(commands::mcp::McpArgs),
    /// Manage the git remotes the log is shared through
    #[command(subcommand)]
    Remote(commands::remote::RemoteCommand),
    /// Add to a remote the envelopes it lacks (default remote: origin)
    Push(commands::sync::RemoteArg),
    /// Take from a remote the envelopes this store lacks, verified against the local trust
    /// store; rejected ones are listed and stay in the remote (default remote: origin)
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
    fn name(&self) -> &'static str {
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

/// The time limit of a command run without `--timeout`: an hour for the commands whose run
/// time grows with their input (a bulk add, a check of many claims, fsck or reindex of a
/// large log, an export, an exchange with a remote, the conformance corpus), five minutes
/// for the rest, which answer in well under a second on a log of 100,000 claims.
pub fn default_timeout(command: &str) -> Duration {
    match command {
        "add" | "check" | "fsck" | "reindex" | "export" | "push" | "pull" | "sync"
        | "conformance run" => Duration::from_secs(3600),
        _ => Duration::from_secs(300),
    }
}

/// The whole command's time limit (`None`: none): `--command-timeout`, else `--timeout`
/// (except on `check`, where `--timeout` is the limit of one claim's evaluation), else
/// `ELENCH_TIMEOUT`, else the command's default.
fn command_limit(
    name: &str,
    timeout: Option<Duration>,
    command_timeout: Option<Duration>,
) -> Result<Option<Duration>, ArgError> {
    let timeout = if name == "check" { None } else { timeout };
    let chosen = match (command_timeout, timeout) {
        (Some(c), Some(t)) if c != t => {
            let given = c.as_secs_f64().to_string();
            return Err(ArgError::new(
                "--command-timeout",
                Some(&given),
                format!(
                    "--command-timeout ({} s) and --timeout ({} s) both set the time limit of \
                     `{name}`; give one",
                    c.as_secs_f64(),
                    t.as_secs_f64()
                ),
            ));
        }
        (Some(c), _) => Some(c),
        (None, Some(t)) => Some(t),
        // ELENCH_TIMEOUT bounds one-shot commands; a server lives as long as its client
        // keeps it, so only a limit on its own command line ends it.
        (None, None) if name == "mcp" => None,
        (None, None) => match std::env::var("ELENCH_TIMEOUT") {
            Err(std::env::VarError::NotPresent) => None,
            Ok(v) if v.trim().is_empty() => None,
            Ok(v) => Some(parse_seconds(&v).map_err(|e| {
                ArgError::new(
                    "ELENCH_TIMEOUT",
                    Some(&v),
                    format!("ELENCH_TIMEOUT: {e}; unset it or give seconds"),
                )
            })?),
            Err(std::env::VarError::NotUnicode(_)) => {
                return Err(ArgError::new(
                    "ELENCH_TIMEOUT",
                    None,
                    "ELENCH_TIMEOUT is not text: unset it or give seconds",
                ))
            }
        },
    };
    Ok(match chosen {
        Some(d) if d.is_zero() => None,
        Some(d) => Some(d),
        // A server lives as long as its client keeps it: no limit unless one is given.
        None if name == "mcp" => None,
        None => Some(default_timeout(name)),
    })
}

/// `--timeout`: non-negative seconds, fractions allowed.
pub fn parse_seconds(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
        return Err(format!(
            "{s:?} is not between 0 (no limit) and 1000000000 seconds"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Global settings every command receives.
#[derive(Debug, Clone)]
pub struct Globals {
    pub store: Option<PathBuf>,
    pub wait: u64,
    pub mode: Mode,
    /// `--format` as given (None when the mode was detected).
    pub format: Option<String>,
}

impl Globals {
    /// The settings of the operations this command line runs: its store, its wait, and the
    /// CLI's observer ([`output::observer`]), which puts warnings into the report and shows
    /// progress on a terminal.
    pub fn context(&self) -> crate::ops::Context {
        crate::ops::Context::new(
            self.store.clone(),
            Duration::from_secs(self.wait),
            output::observer(),
        )
    }

    /// For `-o -`: the product itself goes to stdout instead of the JSON report, which an
    /// explicit `--format json` forbids.
    pub fn stdout_for_product(&self, what: &str) -> Result<(), Failure> {
        if let Some(f @ ("json" | "jsonl" | "tsv")) = self.format.as_deref() {
            return Err(Failure::Usage(format!(
                "-o - writes the {what} itself to stdout, where --format {f} needs the report; \
                 give -o FILE instead"
            )));
        }
        output::take_stdout_for_product();
        Ok(())
    }
}

/// Runs elench with the process's arguments and returns the exit code.
pub fn run() -> i32 {
    let started = Instant::now();
    // Before anything else: a SIGINT or SIGTERM from here on gets a JSON answer.
    interrupt::catch_signals();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // Bare `elench` is a request for help, not a mistake.
    if args.len() <= 1 {
        let help = Cli::command().render_help().to_string();
        if std::io::stdout().is_terminal() {
            print!("{help}");
        } else {
            eprint!("{help}");
        }
        return 0;
    }
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => return parse_failure(e, &args, started),
    };
    let format = Format::detect(cli.format.as_deref());
    let mode = format.mode();
    output::set_plain(format == Format::Plain);
    // No child process of elench's (git, check's runners) may wait for a person who is not
    // there, or colour what nobody reads. Before any thread starts.
    crate::child_env::harden(
        std::io::stdin().is_terminal() && std::io::stdout().is_terminal(),
        output::colour_forbidden(),
    );
    let name = cli.command.name();
    let limit = command_limit(name, cli.timeout, cli.command_timeout);
    interrupt::start(interrupt::Watch {
        format,
        command: name,
        started,
        limit: match &limit {
            Ok(l) => *l,
            Err(_) => Some(default_timeout(name)),
        },
        store: cli.store.clone(),
    });
    // Every argument error at once, before anything runs: the time limit, a global option
    // given twice, then the command's own checks.
    let mut errors: Vec<ArgError> = limit.err().into_iter().collect();
    let mut answer_in = format;
    if let Err(e) = check_global_repeats(&args) {
        if errors.is_empty() {
            // Which --format was meant is the question, so neither wins: detect the mode.
            answer_in = Format::detect(None);
        }
        errors.push(e);
    }
    errors.extend(args::command_errors(&cli.command));
    errors.extend(render::format_error(&cli.command, format));
    if let Some(f) = Failure::arguments(errors) {
        let report = Report {
            failure: Some(f),
            ..Report::default()
        };
        return emit(answer_in, name, started, report);
    }
    // A damaged index can make LMDB fault: the process then ends with this answer.
    let (stdout, stderr) = output::prepared_failure(
        format,
        name,
        Failure::Precondition {
            code: crate::error::Code::IndexDamaged.as_str(),
            message: crate::store::index::fault::MESSAGE.to_owned(),
        },
    );
    crate::store::index::fault::prepare(stdout, stderr);
    let globals = Globals {
        store: cli.store.clone(),
        wait: cli.wait,
        mode,
        format: cli.format.clone(),
    };
    // A bug must still answer in the output contract: the panic's message goes to stderr
    // (the default hook prints it), the envelope says INTERNAL.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        dispatch(cli.command, &globals)
    }));
    let report = match outcome {
        Ok(Ok(r)) => r,
        Ok(Err(f)) => Report {
            failure: Some(f),
            ..Report::default()
        },
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".into());
            Report {
                failure: Some(Failure::Internal(format!(
                    "elench failed unexpectedly ({what}); please report it with the command line"
                ))),
                ..Report::default()
            }
        }
    };
    emit(format, name, started, report)
}

fn dispatch(command: Command, g: &Globals) -> Result<Report, Failure> {
    match command {
        Command::Keys(k) => commands::keys::run(k, g),
        Command::Tree(a) => commands::tree::run(a, g),
        Command::Anchor(a) => commands::anchor::run(a, g),
        Command::Gate(a) => commands::gate::run(a, g),
        Command::Mcp(a) => commands::mcp::run(a, g),
        Command::Sign(a) => commands::sign::run(a, g),
        Command::Verify(a) => commands::verify::run(a, g),
        Command::Init(a) => commands::init::run(a, g),
        Command::Add(a) => commands::add::run(a, g).map(add_effect),
        Command::Claim(a) => commands::claim::run(a, g),
        Command::Status(a) => commands::status::run(a, g),
        Command::Blast(a) => commands::blast::run(a, g),
        Command::Why(a) => commands::why::run(a, g),
        Command::Show(a) => commands::show::run(a, g),
        Command::Log(a) => commands::log::run(a, g),
        Command::Export(a) => commands::export::run(a, g),
        Command::Fsck(a) => commands::fsck::run(a, g).map(fsck_effect),
        Command::Reindex(a) => commands::reindex::run(a, g),
        Command::Checkpoint(a) => commands::checkpoint::run(a, g),
        Command::Remote(r) => commands::remote::run(r, g),
        Command::Push(a) => commands::sync::run(commands::sync::Direction::Push, a, g),
        Command::Pull(a) => commands::sync::run(commands::sync::Direction::Pull, a, g),
        Command::Sync(a) => commands::sync::run(commands::sync::Direction::Sync, a, g),
        Command::Check(a) => commands::check::run(a, g),
        Command::Demo(a) => commands::demo::run(a, g),
        Command::Man(a) => commands::man::run(a, g),
        Command::Completions(a) => commands::completions::run(a, g),
        Command::Manifest(a) => commands::manifest::run(a, g),
        Command::CheckPermissions(a) => commands::check_permissions::run(a, g),
        Command::Conformance(c) => commands::conformance::run(c, g),
    }
}

/// `add`'s `effect` (the CLI Agent Spec's, for the batch as a whole) from its counts: a new
/// claim is `created`, a new signature on a stored claim `updated`, nothing new `noop`; a
/// dry run says what would be.
fn add_effect(mut r: Report) -> Report {
    let n = |k: &str| r.data[k].as_u64().unwrap_or(0);
    let effect = if n("created") > 0 {
        "created"
    } else if n("merged") > 0 {
        "updated"
    } else {
        "noop"
    };
    if let Some(obj) = r.data.as_object_mut() {
        let dry = obj.get("dry_run") == Some(&serde_json::Value::Bool(true));
        let effect = match (dry, effect) {
            (true, "created") => "would_create",
            (true, "updated") => "would_update",
            (_, e) => e,
        };
        obj.insert("effect".into(), serde_json::Value::String(effect.into()));
        r.meta
            .insert("dry_run".into(), serde_json::Value::Bool(dry));
    }
    r
}

/// `fsck`'s `effect`: `updated` when `--repair` moved damage aside, else `noop` (it only
/// reads).
fn fsck_effect(mut r: Report) -> Report {
    let repaired = &r.data["repaired"];
    let changed = !repaired["damage"].is_null()
        || repaired["moved"].as_array().is_some_and(|m| !m.is_empty());
    if let Some(obj) = r.data.as_object_mut() {
        let effect = if changed { "updated" } else { "noop" };
        obj.insert("effect".into(), serde_json::Value::String(effect.into()));
    }
    r
}

/// Help and version are successes; help goes to stderr when stdout is not a terminal so that
/// a program reading stdout never sees prose. Usage errors follow the output contract.
fn parse_failure(e: clap::Error, args: &[std::ffi::OsString], started: Instant) -> i32 {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp => {
            let text = e.render().to_string();
            if std::io::stdout().is_terminal() {
                print!("{text}");
            } else {
                eprint!("{text}");
            }
            0
        }
        ErrorKind::DisplayVersion => {
            println!("elench {}", env!("CARGO_PKG_VERSION"));
            0
        }
        _ => {
            let format = Format::detect(format_from_raw_args(args).as_deref());
            let mode = match format {
                Format::Json | Format::Jsonl => Mode::Json,
                _ => Mode::Text,
            };
            let rendered = e.render().to_string();
            // The first error, as clap reported it, is the message; then every other error
            // on the line, and the checks of the command's own that the rest of it allows.
            let message = args::clap_message(&e);
            let collected = args::collect(e, args);
            let mut errors = collected.errors;
            let command = match &collected.repaired {
                Some(cli) => cli.command.name().to_owned(),
                None => command_named(args),
            };
            if command != "elench" {
                let limit = collected
                    .repaired
                    .as_ref()
                    .and_then(|cli| command_limit(&command, cli.timeout, cli.command_timeout).ok())
                    .unwrap_or(Some(default_timeout(&command)));
                interrupt::record_limit(limit);
            }
            if let Some(cli) = &collected.repaired {
                let limit = command_limit(cli.command.name(), cli.timeout, cli.command_timeout);
                errors.extend(limit.err());
                errors.extend(check_global_repeats(args).err());
                errors.extend(args::command_errors(&cli.command));
            }
            let text = with_more_errors(&rendered, &errors);
            if mode == Mode::Json {
                // Prose for people still goes to stderr; stdout gets the one JSON object.
                eprint!("{text}");
            }
            let report = Report {
                failure: Some(Failure::Arguments { message, errors }),
                ..Report::default()
            };
            if mode == Mode::Text {
                eprint!("{text}");
                return 2;
            }
            emit(format, &command, started, report)
        }
    }
}

/// The command a line names (`status`, `keys generate`), read from the raw arguments when
/// they do not parse, so that an argument error's `meta.command` says which command it was;
/// `elench` only when the line names none.
fn command_named(args: &[std::ffi::OsString]) -> String {
    // The global options that take a value (`--store PATH`); their values are not commands.
    const VALUED: [&str; 5] = [
        "--store",
        "--format",
        "--wait",
        "--timeout",
        "--command-timeout",
    ];
    let root = Cli::command();
    let mut cmd = &root;
    let mut names: Vec<String> = Vec::new();
    let mut rest = args.iter().skip(1).map(|a| a.to_string_lossy());
    while let Some(arg) = rest.next() {
        if arg == "--" {
            break;
        }
        if arg.starts_with('-') {
            if VALUED.contains(&arg.as_ref()) {
                rest.next();
            }
            continue;
        }
        match cmd.find_subcommand(arg.as_ref()) {
            Some(sub) => {
                names.push(sub.get_name().to_owned());
                cmd = sub;
                if !cmd.has_subcommands() {
                    break;
                }
            }
            None => break,
        }
    }
    if names.is_empty() {
        "elench".to_owned()
    } else {
        names.join(" ")
    }
}

/// clap's text about the first error with every other error of the line after its first
/// paragraph, one `error:` line each, before clap's tips and usage.
fn with_more_errors(rendered: &str, errors: &[ArgError]) -> String {
    if errors.len() < 2 {
        return rendered.to_owned();
    }
    let (head, tail) = match rendered.find("\n\n") {
        Some(i) => rendered.split_at(i),
        None => (rendered.trim_end_matches('\n'), "\n"),
    };
    let mut out = head.to_owned();
    for e in &errors[1..] {
        out.push_str(&format!("\nerror: {}", e.message));
    }
    out.push_str(tail);
    out
}

/// The options every command takes, which may stand anywhere on the line.
const GLOBAL_OPTIONS: [&str; 5] = [
    "--store",
    "--format",
    "--wait",
    "--timeout",
    "--command-timeout",
];

/// A global option given twice with different values is refused: the parser would silently
/// keep the last, so `--format json blast ID --format text` would print text. The same value
/// twice is harmless.
fn check_global_repeats(args: &[std::ffi::OsString]) -> Result<(), ArgError> {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    for name in GLOBAL_OPTIONS {
        let mut values: Vec<&str> = Vec::new();
        let mut i = 1;
        while i < args.len() {
            let a = args[i].as_str();
            if a == "--" {
                break;
            }
            if a == name {
                if let Some(v) = args.get(i + 1) {
                    values.push(v);
                }
                i += 2;
                continue;
            }
            if let Some(v) = a.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
                values.push(v);
            }
            i += 1;
        }
        if let Some(other) = values.iter().find(|v| **v != values[0]) {
            return Err(ArgError::new(
                name,
                Some(other),
                format!(
                    "{name} is given twice with different values ({:?} and {other:?}); give \
                     it once",
                    values[0]
                ),
            ));
        }
    }
    Ok(())
}

/// `--format` as written, for when clap could not parse the line.
fn format_from_raw_args(args: &[std::ffi::OsString]) -> Option<String> {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    args.iter().enumerate().find_map(|(i, a)| {
        if let Some(v) = a.strip_prefix("--format=") {
            Some(v.to_owned())
        } else if a == "--format" {
            args.get(i + 1).cloned()
        } else {
            None
        }
    })
}
