//! The command line: argument parsing, dispatch, and the output frame every command shares.
//!
//! Commands return a [`Report`] or a [`Failure`]; only this module and `output` write to
//! stdout, and only `failure` decides exit codes.

pub mod args;
pub mod commands;
pub mod common;
pub mod definition;
pub mod describe;
pub mod failure;
pub mod fault;
pub mod files;
pub mod globals;
pub mod interrupt;
pub mod limits;
pub mod output;
pub mod progress;
pub mod render;
pub mod values;
pub mod watchdog;
pub mod words;

#[cfg(test)]
mod agreement_tests;
#[cfg(test)]
mod library_words_tests;

use args::ArgError;
use clap::{CommandFactory, Parser};
use definition::{Cli, Command};
use failure::{ExitNumber, Failure};
use globals::Globals;
use limits::{command_limit, default_timeout};
use output::{emit, Format, Mode, Report};
use std::io::IsTerminal;
use std::time::Instant;

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
    elench::child_env::harden(
        std::io::stdin().is_terminal() && std::io::stdout().is_terminal(),
        output::colour_forbidden(),
    );
    let name = cli.command.name();
    let limit = command_limit(name, cli.timeout, cli.command_timeout);
    // What the command's operations start and make, for the watchdog to end and remove
    // should it end the process first.
    let reaper = elench::reaper::Reaper::new();
    watchdog::start(watchdog::Watch {
        format,
        command: name,
        started,
        limit: match &limit {
            Ok(l) => *l,
            Err(_) => Some(default_timeout(name)),
        },
        store: cli.store.clone(),
        reaper: reaper.clone(),
    });
    // The errors clap cannot see, before anything runs: the time limit, a global option
    // given twice with different values, a --format the command does not have.
    let mut errors: Vec<ArgError> = limit.err().into_iter().collect();
    let mut answer_in = format;
    if let Err(e) = check_global_repeats(&args) {
        if errors.is_empty() {
            // Which --format was meant is the question, so neither wins: detect the mode.
            answer_in = Format::detect(None);
        }
        errors.push(e);
    }
    errors.extend(definition::format_error(&cli.command, format));
    if let Some(f) = failure::arguments(errors) {
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
            code: elench::error::Code::IndexDamaged,
            message: fault::MESSAGE.to_owned(),
        },
    );
    fault::prepare(stdout, stderr);
    let globals = Globals {
        store: cli.store.clone(),
        wait: cli.wait,
        mode,
        format: cli.format.clone(),
        reaper,

        // One registry for the command line: every store it opens shares its index's
        // environment, and a fault reading the index is answered (`fault`).
        envs: elench::store::Environments::watched(std::sync::Arc::new(fault::Watch)),
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
        Command::Add(a) => commands::add::run(a, g),
        Command::Claim(a) => commands::claim::run(a, g),
        Command::Status(a) => commands::status::run(a, g),
        Command::Blast(a) => commands::blast::run(a, g),
        Command::Why(a) => commands::why::run(a, g),
        Command::Show(a) => commands::show::run(a, g),
        Command::Log(a) => commands::log::run(a, g),
        Command::Export(a) => commands::export::run(a, g),
        Command::Fsck(a) => commands::fsck::run(a, g),
        Command::Reindex(a) => commands::reindex::run(a, g),
        Command::Checkpoint(a) => commands::checkpoint::run(a, g),
        Command::Remote(r) => commands::remote::run(r, g),
        Command::Trust(t) => commands::trust::run(t, g),
        Command::Push(a) => commands::sync::run(commands::sync::Direction::Push, a, g),
        Command::Pull(a) => commands::sync::run(commands::sync::Direction::Pull, a, g),
        Command::Sync(a) => commands::sync::run(commands::sync::Direction::Sync, a, g),
        Command::Check(a) => commands::check::run(a, g),
        Command::Demo(a) => commands::demo::run(a, g),
        Command::Man(a) => commands::man::run(a, g, Cli::command()),
        Command::Completions(a) => commands::completions::run(a, g, Cli::command()),
        Command::Manifest(a) => commands::manifest::run(a, g, Cli::command()),
        Command::CheckPermissions(a) => commands::check_permissions::run(a, g, Cli::command()),
        Command::Conformance(c) => commands::conformance::run(c, g),
    }
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
            // Every error of the line, found in one walk over it (`args`).
            let mut refusal = args::refusal(args);
            if let Some(asked) = refusal.asked {
                return answer_asked(asked, &mut refusal.definition);
            }
            let command = refusal.command.clone();
            let mut errors = std::mem::take(&mut refusal.errors);
            if command != "elench" {
                let limit = command_limit(&command, None, None);
                interrupt::record_limit(
                    limit
                        .as_ref()
                        .ok()
                        .copied()
                        .unwrap_or(Some(default_timeout(&command))),
                );
                errors.extend(limit.err());
            }
            errors.extend(check_global_repeats(args).err());
            let failure = failure::arguments(errors)
                .unwrap_or_else(|| Failure::usage(None, args::clap_message(&e)));
            // People get every error, then how the command is used, on stderr; in JSON
            // mode stdout gets the one JSON object.
            let tips: String = refusal
                .tips
                .iter()
                .map(|t| format!("\n\n  tip: {t}"))
                .collect();
            eprintln!(
                "{}",
                output::terminal_safe(
                    &format!(
                        "{}{tips}\n\n{}",
                        words::text(&failure.to_text()),
                        usage_of(&mut refusal.definition)
                    ),
                    false
                )
            );
            if mode == Mode::Text {
                return failure.exit_code();
            }
            let report = Report {
                failure: Some(failure),
                failure_told: true,
                ..Report::default()
            };
            emit(format, &command, started, report)
        }
    }
}

/// The help or version a refused line asked for before its first error in clap's words
/// (see `args::Refusal::asked`), as clap would have given it.
fn answer_asked(asked: args::Asked, cmd: &mut clap::Command) -> i32 {
    let text = match asked {
        // clap's rule: `--help` is the long help where the command has any long text.
        args::Asked::LongHelp
            if cmd.get_long_about().is_some()
                || cmd.get_arguments().any(|a| a.get_long_help().is_some()) =>
        {
            cmd.render_long_help().to_string()
        }
        args::Asked::LongHelp => cmd.render_help().to_string(),
        args::Asked::ShortHelp => cmd.render_help().to_string(),
        args::Asked::Version => {
            println!("elench {}", env!("CARGO_PKG_VERSION"));
            return 0;
        }
    };
    if std::io::stdout().is_terminal() {
        print!("{text}");
    } else {
        eprint!("{text}");
    }
    0
}

/// How a command (its built definition) is used, as its `--help` starts, and where to read
/// more.
fn usage_of(cmd: &mut clap::Command) -> String {
    format!(
        "{}\n\nFor more information, try '--help'.",
        cmd.render_usage().to_string().trim_end()
    )
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
