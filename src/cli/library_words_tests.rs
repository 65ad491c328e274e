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

/// Every long option of every command of elench, subcommands included (`--limit`).
fn options() -> Vec<String> {
    fn walk(cmd: &clap::Command, out: &mut Vec<String>) {
        out.extend(
            cmd.get_arguments()
                .filter_map(|a| a.get_long().map(|l| format!("--{l}"))),
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
}

/// Each input the library names is an option some command has, spelled as the CLI words it.
#[test]
fn every_param_is_an_option_of_the_command_line() {
    let options = options();
    for p in elench::ops::error::Param::ALL {
        let flag = crate::cli::words::flag(p);
        assert!(options.contains(&flag), "{flag} is no option");
    }
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
