//! (Tests of the binary: they read its clap definition.) The library does not speak the command line: no message, reason or warning in `src/ops`
//! names one of elench's options (`--limit`). It names the input by what it is (`‹limit›`,
//! or `‹-limit›` in advice to run a command line), and each front end words it: the CLI as
//! `--limit`, the MCP server as the call's field `limit` (`cli::words`, `mcp::words`).

use clap::CommandFactory;
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every option of every command of elench, subcommands included: long (`--limit`) and
/// short (`-o`).
fn options() -> Vec<String> {
    fn walk(cmd: &clap::Command, out: &mut Vec<String>) {
        out.extend(
            cmd.get_arguments()
                .filter_map(|a| a.get_long().map(|l| format!("--{l}"))),
        );
        out.extend(
            cmd.get_arguments()
                .filter_map(|a| a.get_short().map(|c| format!("-{c}"))),
        );
        for sub in cmd.get_subcommands() {
            walk(sub, out);
        }
    }
    let mut out = Vec::new();
    walk(&crate::cli::definition::Cli::command(), &mut out);
    out.sort();
    out.dedup();
    out
}

/// The options `line` names: `--NAME` not followed by another letter, digit or `-`.
fn named<'a>(line: &str, options: &'a [String]) -> Vec<&'a str> {
    options
        .iter()
        .filter(|o| {
            line.match_indices(o.as_str()).any(|(i, _)| {
                let before = line[..i].chars().last();
                let after = line[i + o.len()..].chars().next();
                !before.is_some_and(|c| c.is_alphanumeric() || c == '-')
                    && !after.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_')
            })
        })
        .map(String::as_str)
        .collect()
}

/// The lines of `src/ops` outside comments that name an option of elench's command line.
fn flags_in_ops() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src/ops"), &mut files);
    files.sort();
    let options = options();
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            let hits = named(line, &options);
            if !hits.is_empty() {
                found.push(format!(
                    "{}:{}: {}",
                    file.strip_prefix(root).unwrap().display(),
                    n + 1,
                    hits.join(", ")
                ));
            }
        }
    }
    found
}

#[test]
fn no_option_of_the_command_line_is_named_in_the_operations() {
    let found = flags_in_ops();
    assert!(
        found.is_empty(),
        "messages in src/ops name the CLI's options; name the input (‹limit›) and let the \
         front end word it:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_reader_finds_options_and_only_those() {
    let options = options();
    assert!(options.contains(&"--limit".to_owned()), "{options:?}");
    assert_eq!(named("\"--limit must be\"", &options), ["--limit"]);
    assert_eq!(named("format!(\"--at {}\")", &options), ["--at"]);
    assert!(named("git rm --cached", &options).is_empty());
    assert!(named("\"--attest\"", &options).is_empty() || options.contains(&"--attest".into()));
    assert!(named("\"‹limit› must be\"", &options).is_empty());
    // Short options too, but not inside a word or a number.
    assert!(options.contains(&"-o".to_owned()), "{options:?}");
    assert_eq!(named("\"write it with -o FILE\"", &options), ["-o"]);
    assert!(named("\"re-open\", x -1", &options).is_empty());
}

/// Each input the library names is an option some command has, spelled as the CLI words it
/// (the claim ids: the positional `<ID>` of the commands that take them).
#[test]
fn every_param_is_an_option_of_the_command_line() {
    use elench::ops::error::Param;
    let options = options();
    for p in Param::ALL {
        let flag = crate::cli::words::flag(p);
        if p == Param::Id {
            let show = crate::cli::definition::Cli::command();
            let show = show.find_subcommand("show").unwrap();
            assert!(show.get_positionals().any(|a| a.get_id() == "id"));
            assert_eq!(flag, "<ID>");
            continue;
        }
        assert!(options.contains(&flag), "{flag} is no option");
    }
}

/// The library ends no process: the command line's own argument errors (`ArgError`) and the
/// numbers a process exits with live in `cli::failure`; an operation says only which kind of
/// ending a failure is (`ExitClass`).
#[test]
fn the_operations_keep_no_exit_numbers_and_no_command_line_errors() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src/ops"), &mut files);
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            // Lower case, so that the names are no error codes to the docs' test.
            let lower = line.to_ascii_lowercase();
            for word in [
                "argerror",
                "arguments {",
                "exit_code",
                "gate_failed_exit",
                "timeout_exit",
            ] {
                if lower.contains(word) {
                    found.push(format!(
                        "{}:{}: {word}",
                        file.strip_prefix(root).unwrap().display(),
                        n + 1
                    ));
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// A claim id the library refuses is named by each front end in its own words: the command
/// line's positional `<ID>`, the MCP call's field `id`.
#[test]
fn a_refused_id_is_named_by_each_front_end() {
    use elench::ops::error::{Failure, InputError, Param};
    let id = "cl_../x";
    let problem = elench::ops::ids::claim_id_problem(id).unwrap();
    let f = Failure::inputs(vec![InputError::identifier(Param::Id, id, problem)]).unwrap();
    let cli = crate::cli::words::json(f.to_json());
    assert_eq!(cli["errors"][0]["param"], "<ID>", "{cli}");
    assert_eq!(cli["code"], "INVALID_AGENT_INPUT", "{cli}");
    let mcp = crate::mcp::words::json(f.to_json());
    assert_eq!(mcp["errors"][0]["param"], "id", "{mcp}");
}

/// Every mark in the library's source names an input the front ends word.
#[test]
fn every_mark_names_an_input() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut unknown = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, _) in text.match_indices('‹') {
            let rest = &text[i + '‹'.len_utf8()..];
            let Some(end) = rest.find('›') else {
                continue;
            };
            let name = rest[..end].trim_start_matches('-');
            if name.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                && elench::ops::error::Param::from_name(name).is_none()
            {
                unknown.push(format!("{}: ‹{}›", file.display(), &rest[..end]));
            }
        }
    }
    assert!(unknown.is_empty(), "marks that name no Param: {unknown:?}");
}
