//! The command line checked as a whole before anything runs (the CLI Agent Spec's
//! validate-before-execute, REQ-F-015 and REQ-C-006): every argument error on a line is
//! reported in one response, not one per run.
//!
//! clap stops at the first error. [`collect`] takes that error, removes from a copy of the
//! line the token(s) it names (an unknown option, an option with a refused value, an option
//! that conflicts with another), parses the copy again and repeats, keeping each error, until
//! the copy parses, an error names nothing that can be removed (a missing argument, an
//! unknown command), or [`MAX_ROUNDS`] rounds have passed. Every round removes at least one
//! token or stops, so it always ends. A repaired line is never run: it only lets elench's own
//! checks of the arguments ([`command_errors`]) look at the rest of it.
//!
//! Whether a line is accepted is decided exactly as before: the repair starts only after
//! clap refused the line, and [`command_errors`] holds only checks that the command itself
//! makes, unconditionally, before it reads or changes anything.

use super::commands::{check, common, keys, remote, status};
use super::{Cli, Command};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::Parser;

use std::ffi::OsString;

pub use crate::ops::error::{rejected_pattern, ArgError, AGENT_INPUT_CODE, CODE};

/// The most repairs one line gets; no real line has this many errors.
pub const MAX_ROUNDS: usize = 32;

/// What [`collect`] found.
pub struct Collected {
    /// Every error clap reported, in the order it reported them; never empty.
    pub errors: Vec<ArgError>,
    /// The line without the offending tokens, parsed; `None` when it still did not parse.
    /// Only for [`command_errors`]: it is never run.
    pub repaired: Option<Cli>,
}

/// What the last repair may have caused, so that its consequence is not reported as an error
/// of its own.
enum After {
    Nothing,
    /// An unknown long option was removed at this position: the token now there may be its
    /// value (`--frobnicate 5`).
    UnknownOption {
        at: usize,
    },
}

/// A token that clap took for an option, removed from right after another option, which may
/// so have lost its value (`--limit -3`): that option as written, the token, and the index of
/// the token's error.
struct Orphan {
    option: String,
    token: String,
    error: usize,
}

/// The message elench gives for a clap error: clap's first paragraph, which says what is
/// wrong and names the argument.
pub fn clap_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let usage = text
            .lines()
            .find_map(|l| l.strip_prefix("Usage: "))
            .unwrap_or("elench <COMMAND>");
        return format!("a subcommand is required: {usage} (see --help)");
    }
    let first: Vec<&str> = text
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    if first.is_empty() {
        "invalid arguments".to_owned()
    } else {
        first.join(" ").trim_start_matches("error: ").to_owned()
    }
}

/// Every error clap finds on `args`, starting from `first`, the one it reported (see the
/// module's description).
pub fn collect(first: clap::Error, args: &[OsString]) -> Collected {
    let mut line = args.to_vec();
    let mut errors = Vec::new();
    let mut removed: Vec<String> = Vec::new();
    let mut orphans: Vec<Orphan> = Vec::new();
    let mut after = After::Nothing;
    let mut err = first;
    for _ in 0..MAX_ROUNDS {
        let mut found = Found {
            errors: &mut errors,
            removed: &mut removed,
            orphans: &mut orphans,
        };
        match repair(&err, &mut line, &mut found, &after) {
            Some(next) => after = next,
            None => break,
        }
        match Cli::try_parse_from(&line) {
            Ok(cli) => {
                return Collected {
                    errors,
                    repaired: Some(cli),
                }
            }
            // Help or version asked for on the rest of the line: nothing more to find.
            Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
                break
            }
            Err(e) => err = e,
        }
    }
    if errors.is_empty() {
        // Not reachable (every kind of error is recorded before anything else), but the
        // response must never lose its error.
        errors.push(ArgError::new("", None, clap_message(&err)));
    }
    Collected {
        errors,
        repaired: None,
    }
}

/// What [`collect`] has learnt so far.
struct Found<'a> {
    errors: &'a mut Vec<ArgError>,
    /// The arguments whose tokens were removed: their absence is no new error.
    removed: &'a mut Vec<String>,
    orphans: &'a mut Vec<Orphan>,
}

/// Records `e` (unless it is the consequence of an earlier repair) and removes the tokens it
/// names from `line`. `None`: stop, nothing more can be learnt from this line.
fn repair(
    e: &clap::Error,
    line: &mut Vec<OsString>,
    found: &mut Found<'_>,
    after: &After,
) -> Option<After> {
    let Found {
        errors,
        removed,
        orphans,
    } = found;
    let message = clap_message(e);
    match e.kind() {
        ErrorKind::UnknownArgument => {
            let Some(token) = context(e, ContextKind::InvalidArg) else {
                errors.push(ArgError::new("", None, message));
                return None;
            };
            if let After::UnknownOption { at } = after {
                // The value of the unknown option just removed: part of that error.
                if !token.starts_with('-') && text(line.get(*at)) == Some(token.clone()) {
                    line.remove(*at);
                    return Some(After::Nothing);
                }
            }
            errors.push(ArgError::new(&token, None, message));
            let at = find(line, |a| {
                a == token || (token.starts_with("--") && a.starts_with(&format!("{token}=")))
            })?;
            let whole = text(line.get(at)).as_deref() == Some(token.as_str());
            if !token.starts_with("--") {
                if let Some(option) = text(line.get(at - 1)).filter(|o| o.starts_with("--")) {
                    orphans.push(Orphan {
                        option,
                        token: token.clone(),
                        error: errors.len() - 1,
                    });
                }
            }
            line.remove(at);
            Some(if whole && token.starts_with("--") {
                After::UnknownOption { at }
            } else {
                After::Nothing
            })
        }
        ErrorKind::InvalidValue
        | ErrorKind::ValueValidation
        | ErrorKind::NoEquals
        | ErrorKind::TooManyValues
        | ErrorKind::TooFewValues
        | ErrorKind::WrongNumberOfValues => {
            let shown = context(e, ContextKind::InvalidArg).unwrap_or_default();
            let param = param_of(&shown);
            let value = context(e, ContextKind::InvalidValue).unwrap_or_default();
            if value.is_empty() {
                // `--limit -3`: clap took `-3` for an option, and the option then had no
                // value. One mistake: the option, with the value it was given.
                if let Some(i) = orphans.iter().position(|o| o.option == param) {
                    let o = orphans.remove(i);
                    if let Some(at) = rfind(line, |a| a == param) {
                        if let Some(err) = errors.get_mut(o.error) {
                            err.param = param.clone();
                            err.value = Some(o.token);
                        }
                        line.remove(at);
                        removed.push(param);
                        return Some(After::Nothing);
                    }
                }
            }
            errors.push(ArgError::new(
                &param,
                (!value.is_empty()).then_some(value.as_str()),
                message,
            ));
            if !matches!(
                e.kind(),
                ErrorKind::InvalidValue | ErrorKind::ValueValidation
            ) {
                return None;
            }
            remove_value(line, &param, &value)?;
            removed.push(param);
            Some(After::Nothing)
        }
        ErrorKind::ArgumentConflict => {
            let shown = context(e, ContextKind::InvalidArg).unwrap_or_default();
            let prior = contexts(e, ContextKind::PriorArg);
            errors.push(ArgError::new(param_of(&shown), None, message));
            // The option given twice loses its last occurrence; of two options that
            // conflict, the one clap named first is removed.
            let twice = prior.contains(&shown);
            let target = if shown.starts_with('-') {
                shown.clone()
            } else {
                match prior.as_slice() {
                    [p] if p.starts_with('-') => p.clone(),
                    _ => return None,
                }
            };
            let flag = param_of(&target);
            let takes_value = target.contains('<');
            let mut any = false;
            while let Some(at) = rfind(line, |a| a == flag || a.starts_with(&format!("{flag}="))) {
                let separate = text(line.get(at)).as_deref() == Some(flag.as_str());
                if takes_value && separate && at + 1 < line.len() {
                    line.remove(at + 1);
                }
                line.remove(at);
                any = true;
                if twice {
                    break;
                }
            }
            if !any {
                return None;
            }
            removed.push(flag);
            Some(After::Nothing)
        }
        ErrorKind::MissingRequiredArgument => {
            let missing: Vec<String> = contexts(e, ContextKind::InvalidArg)
                .into_iter()
                .filter(|m| !removed.contains(&param_of(m)))
                .collect();
            let single = missing.len() == 1;
            for m in missing {
                let message = if single {
                    message.clone()
                } else {
                    format!("the required argument {m} was not provided")
                };
                errors.push(ArgError::new(param_of(&m), None, message));
            }
            None
        }
        ErrorKind::InvalidSubcommand => {
            let token = context(e, ContextKind::InvalidSubcommand).unwrap_or_default();
            errors.push(ArgError::new(token, None, message));
            None
        }
        ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            errors.push(ArgError::new("<COMMAND>", None, message));
            None
        }
        _ => {
            let param = context(e, ContextKind::InvalidArg)
                .map(|s| param_of(&s))
                .unwrap_or_default();
            errors.push(ArgError::new(param, None, message));
            None
        }
    }
}

/// Removes an option (`param`, as `--opt VALUE`, `--opt=VALUE`, a short or another name of
/// it followed by VALUE) or a positional argument holding `value`. `None` when it is not on
/// the line.
fn remove_value(line: &mut Vec<OsString>, param: &str, value: &str) -> Option<()> {
    if !param.starts_with('-') {
        if value.is_empty() {
            return None;
        }
        let at = find(line, |a| a == value)?;
        line.remove(at);
        return Some(());
    }
    let joined = format!("{param}={value}");
    if let Some(at) = find(line, |a| a == joined) {
        line.remove(at);
        return Some(());
    }
    let pair = |line: &[OsString], at: usize, exact: bool| {
        let flag = text(line.get(at)).unwrap_or_default();
        let follows = text(line.get(at + 1)).as_deref() == Some(value);
        follows
            && if exact {
                flag == param
            } else {
                flag.starts_with('-')
            }
    };
    if value.is_empty() {
        // An option at the end of the line, or before another option, without its value.
        let at = rfind(line, |a| a == param || a == format!("{param}="))?;
        line.remove(at);
        return Some(());
    }
    // The option by its own name, then by another (a short name, an alias).
    let at = (1..line.len())
        .find(|&i| pair(line, i, true))
        .or_else(|| (1..line.len()).find(|&i| pair(line, i, false)));
    if let Some(at) = at {
        line.remove(at + 1);
        line.remove(at);
        return Some(());
    }
    // `--alias=VALUE` or `-sVALUE`.
    let at = find(line, |a| {
        a.starts_with('-')
            && a.len() > value.len() + 1
            && (a.ends_with(&format!("={value}")) || (!a.starts_with("--") && a.ends_with(value)))
    })?;
    line.remove(at);
    Some(())
}

/// The argument an error names, without its value placeholder: `--limit <LIMIT>` is
/// `--limit`; a positional argument (`<ID>`, `[IDS]...`) stays as clap shows it.
fn param_of(shown: &str) -> String {
    if shown.starts_with('-') {
        shown
            .split(|c: char| c.is_whitespace() || c == '=')
            .next()
            .unwrap_or(shown)
            .to_owned()
    } else {
        shown.to_owned()
    }
}

fn context(e: &clap::Error, kind: ContextKind) -> Option<String> {
    contexts(e, kind).into_iter().next()
}

fn contexts(e: &clap::Error, kind: ContextKind) -> Vec<String> {
    match e.get(kind) {
        Some(ContextValue::String(s)) => vec![s.clone()],
        Some(ContextValue::Strings(v)) => v.clone(),
        _ => Vec::new(),
    }
}

fn text(a: Option<&OsString>) -> Option<String> {
    a.map(|a| a.to_string_lossy().into_owned())
}

/// The first token after the program's name that `pred` accepts.
fn find(line: &[OsString], pred: impl Fn(&str) -> bool) -> Option<usize> {
    (1..line.len()).find(|&i| pred(&line[i].to_string_lossy()))
}

/// The last such token.
fn rfind(line: &[OsString], pred: impl Fn(&str) -> bool) -> Option<usize> {
    (1..line.len())
        .rev()
        .find(|&i| pred(&line[i].to_string_lossy()))
}

/// elench's own checks of a parsed command's arguments: each one that its command makes,
/// always, before it reads or changes anything, here made all at once and in the order the
/// command makes them. Reads nothing but the arguments.
pub fn command_errors(command: &Command) -> Vec<ArgError> {
    use super::commands::conformance::ConformanceCommand;
    use super::commands::keys::KeysCommand;
    use super::commands::remote::RemoteCommand;
    match command {
        Command::Status(a) => status::argument_errors(a),
        Command::Show(a) => common::claim_id_errors("<ID>", [&a.id]),
        Command::Blast(a) => common::claim_id_errors("<ID>", [&a.id]),
        Command::Why(a) => common::claim_id_errors("<ID>", [&a.from, &a.to]),
        Command::Claim(a) => {
            let mut errors = common::claim_id_errors("--depends-on", &a.depends_on);
            errors.extend(common::claim_id_errors("--target", &a.target));
            errors
        }
        Command::Log(a) => a.page.argument_errors(),
        Command::Keys(KeysCommand::List(a)) => a.page.argument_errors(),
        Command::Keys(KeysCommand::Retire(a)) => keys::keyid_error(&a.keyid).into_iter().collect(),
        Command::Keys(KeysCommand::Generate(a)) => keys::name_error(&a.name).into_iter().collect(),
        Command::Check(a) => check::argument_errors(a),
        Command::Conformance(ConformanceCommand::Attest(a)) => {
            common::claim_id_errors("--claim", [&a.claim])
        }
        Command::Remote(RemoteCommand::Add(a)) => remote::argument_errors(a),
        Command::Push(a) | Command::Pull(a) | Command::Sync(a) => {
            remote::name_error("<NAME>", &a.name).into_iter().collect()
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(args: &[&str]) -> Vec<OsString> {
        std::iter::once("elench")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect()
    }

    fn errors_of(args: &[&str]) -> (Vec<ArgError>, bool) {
        let l = line(args);
        let e = Cli::try_parse_from(&l).expect_err("the line is refused");
        let c = collect(e, &l);
        let parsed = c.repaired.is_some();
        let mut errors = c.errors;
        if let Some(cli) = &c.repaired {
            errors.extend(command_errors(&cli.command));
        }
        (errors, parsed)
    }

    fn params(errors: &[ArgError]) -> Vec<(&str, Option<&str>)> {
        errors
            .iter()
            .map(|e| (e.param.as_str(), e.value.as_deref()))
            .collect()
    }

    #[test]
    fn every_error_of_a_line_is_found() {
        let (errors, parsed) = errors_of(&[
            "status",
            "cl_bogus",
            "--limit",
            "99999999999999999999999",
            "--frobnicate",
        ]);
        assert!(parsed);
        let mut got = params(&errors);
        got.sort();
        assert_eq!(
            got,
            vec![
                ("--frobnicate", None),
                ("--limit", Some("99999999999999999999999")),
                ("<ID>", Some("cl_bogus")),
            ]
        );
    }

    #[test]
    fn an_unknown_option_takes_its_value_along() {
        let (errors, _) = errors_of(&["log", "--frobnicate", "5", "--limit", "x"]);
        assert_eq!(
            params(&errors),
            vec![("--frobnicate", None), ("--limit", Some("x"))]
        );
        let (errors, _) = errors_of(&["log", "--frobnicate=5", "--cursor", "no"]);
        assert_eq!(
            params(&errors),
            vec![("--frobnicate", None), ("--cursor", Some("no"))]
        );
    }

    #[test]
    fn a_value_taken_for_an_option_is_one_error() {
        let (errors, _) = errors_of(&["log", "--limit", "-3"]);
        assert_eq!(params(&errors), vec![("--limit", Some("-3"))]);
        let (errors, _) = errors_of(&["log", "--limit", "-3", "--frobnicate"]);
        assert_eq!(
            params(&errors),
            vec![("--limit", Some("-3")), ("--frobnicate", None)]
        );
    }

    #[test]
    fn a_removed_argument_is_not_reported_missing() {
        let (errors, parsed) = errors_of(&["completions", "zsh2", "--frobnicate"]);
        assert!(!parsed);
        let mut got = params(&errors);
        got.sort();
        assert_eq!(got, vec![("--frobnicate", None), ("<SHELL>", Some("zsh2"))]);
        // A missing argument that was never given is.
        let (errors, _) = errors_of(&["blast", "--frobnicate"]);
        assert_eq!(
            params(&errors),
            vec![("--frobnicate", None), ("<ID>", None)]
        );
    }

    #[test]
    fn conflicts_and_repeats_are_removed_and_the_rest_checked() {
        let (errors, parsed) = errors_of(&["status", "--all", "cl_zz", "--frobnicate"]);
        assert!(parsed);
        let got = params(&errors);
        assert!(got.contains(&("--all", None)), "{got:?}");
        assert!(got.contains(&("--frobnicate", None)), "{got:?}");
        assert!(got.contains(&("<ID>", Some("cl_zz"))), "{got:?}");
        let (errors, _) = errors_of(&["log", "--limit", "5", "--limit", "0"]);
        assert_eq!(
            params(&errors),
            vec![("--limit", None)],
            "the second --limit is removed, the first checked"
        );
    }

    #[test]
    fn made_up_identifiers_are_named_by_their_pattern() {
        for (value, want) in [
            ("../../etc/passwd", Some("path_traversal")),
            ("x/..", Some("path_traversal")),
            ("..", Some("path_traversal")),
            ("..\\x", Some("path_traversal")),
            ("..%2Fx", Some("path_traversal")),
            ("%2e%2e", Some("path_traversal")),
            ("cl_%2e%2e%2fetc", Some("path_traversal")),
            ("cl_abcd%2e", Some("percent_encoded")),
            ("me%40host", Some("percent_encoded")),
            ("cl_abcd?x=1", Some("query")),
            ("a&b", Some("query")),
            ("cl_abcd#frag", Some("fragment")),
            ("cl_bogus", None),
            ("a..b", None),
            ("bad/name", None),
            ("100%", None),
        ] {
            assert_eq!(rejected_pattern(value), want, "{value}");
        }
        let e = ArgError::identifier("<ID>", "cl_abcd#x", "not a claim id");
        assert_eq!(e.code(), AGENT_INPUT_CODE);
        assert_eq!(e.to_json()["rejected_pattern"], "fragment");
        let e = ArgError::identifier("<ID>", "cl_bogus", "not a claim id");
        assert_eq!((e.code(), e.message.as_str()), (CODE, "not a claim id"));
        assert!(e.to_json().get("rejected_pattern").is_none());
    }

    #[test]
    fn the_first_error_is_the_one_clap_reports() {
        let l = line(&["log", "--limit", "x", "--frobnicate"]);
        let e = Cli::try_parse_from(&l).unwrap_err();
        let first = clap_message(&e);
        let c = collect(e, &l);
        assert_eq!(c.errors[0].message, first);
        assert_eq!(c.errors.len(), 2);
    }

    /// What [`collect`] finds on a line clap refuses (help and version are not refusals);
    /// it always finds at least one error.
    fn collect_refused(args: &[&str]) -> Option<Collected> {
        let l = line(args);
        let e = Cli::try_parse_from(&l).err()?;
        if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
            return None;
        }
        let c = collect(e, &l);
        assert!(!c.errors.is_empty(), "{args:?}");
        Some(c)
    }

    #[test]
    fn no_line_makes_it_loop_or_panic() {
        // Tokens that cannot be found again, repeated, empty, odd: it ends with at least one
        // error, never more rounds than the bound.
        let odd = [
            vec!["--"],
            vec!["-"],
            vec!["-x", "-y", "-z"],
            vec!["log", "-"],
            vec!["log", "--limit"],
            vec!["log", "--limit="],
            vec!["log", "--limit=", "--limit="],
            vec!["log", "-abc"],
            vec!["status", "--all", "--all"],
            vec!["frobnicate", "--frobnicate"],
            vec!["keys"],
            vec!["keys", "retire"],
            vec!["log", "--format"],
            vec!["--format", "xml", "--wait", "x", "log", "--timeout", "soon"],
        ];
        for args in odd {
            if let Some(c) = collect_refused(&args) {
                assert!(c.errors.len() <= MAX_ROUNDS + 8, "{args:?}");
            }
        }
        // Lines made at random from pieces of real ones.
        let pieces = [
            "status",
            "log",
            "blast",
            "keys",
            "retire",
            "list",
            "completions",
            "check",
            "push",
            "remote",
            "add",
            "--all",
            "--limit",
            "0",
            "-3",
            "x",
            "cl_bogus",
            "cl_abcd",
            "--cursor",
            "--frobnicate",
            "--frobnicate=1",
            "--limit=",
            "--format",
            "xml",
            "json",
            "--wait",
            "--timeout",
            "soon",
            "--",
            "-",
            "-abc",
            "zsh",
            "--path",
            "[",
            "--at",
            "--depth",
            "--store",
            "--connect-timeout",
            "-o",
            "--output",
            "--command-timeout",
        ];
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for _ in 0..1000 {
            let len = 1 + next(8);
            let args: Vec<&str> = (0..len).map(|_| pieces[next(pieces.len())]).collect();
            let Some(c) = collect_refused(&args) else {
                continue;
            };
            if let Some(cli) = &c.repaired {
                command_errors(&cli.command);
            }
        }
        let many: Vec<String> = (0..200).map(|i| format!("--bogus{i}")).collect();
        let mut args = vec!["log"];
        args.extend(many.iter().map(String::as_str));
        let l = line(&args);
        let c = collect(Cli::try_parse_from(&l).unwrap_err(), &l);
        assert_eq!(c.errors.len(), MAX_ROUNDS, "bounded");
    }
}
