//! `elench manifest`: every command, its flags, danger level and exit codes in one JSON
//! object (the CLI Agent Spec's ManifestResponse), derived from the clap definitions so it
//! cannot drift from what the parser accepts.

use crate::cli::failure::Failure;
use crate::cli::output::Report;
use crate::cli::{Cli, Globals};
use clap::CommandFactory;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

#[derive(Debug, clap::Args)]
pub struct ManifestArgs {}

/// Options clap adds to every command; `--help` and `--version` need no listing.
const BUILT_IN: [&str; 2] = ["help", "version"];

/// What a command may change: read-only, writes (files, the store, a remote), or cannot be
/// undone. `fsck` writes only with `--repair`, `checkpoint`, `man` and `completions` only
/// with `-o`, and the answer is for the command with every flag.
pub fn danger_level(path: &str) -> &'static str {
    match path {
        "keys.retire" => "destructive",
        "init" | "keys.generate" | "keys.add" | "sign" | "add" | "export" | "fsck" | "reindex"
        | "checkpoint" | "remote.add" | "push" | "pull" | "sync" | "check"
        | "conformance.attest" | "conformance.run" | "man" | "completions" => "mutating",
        // Commands other helpers add later default to the careful answer.
        "status" | "blast" | "show" | "log" | "verify" | "tree" | "anchor" | "gate"
        | "keys.list" | "keys" | "remote" | "remote.list" | "conformance" | "conformance.check"
        | "demo" | "manifest" | "check-permissions" | "why" => "safe",
        _ => "mutating",
    }
}

/// What a command adds to the shared exit code table: its time limit, and the codes only it
/// uses.
fn own_exit_codes(path: &str) -> Value {
    let limit = crate::cli::default_timeout(&path.replace('.', " ")).as_secs();
    let safe = danger_level(path) == "safe";
    // `check --timeout` is the limit of one claim; the command's own is --command-timeout.
    let flag = if path == "check" {
        "--command-timeout"
    } else {
        "--timeout"
    };
    let mut codes = json!({
        "10": {
            "name": "TIMEOUT",
            "description": if path == "mcp" {
                // The server runs until its client closes stdin (no default limit).
                "Stopped at the time limit --timeout SECONDS gave (none by default)".to_owned()
            } else {
                format!("Stopped at its time limit (default {limit} s; {flag} SECONDS, 0 for none)")
            },
            "retryable": false,
            "side_effects": if safe { "none" } else { "partial" },
        }
    });
    // A code of gate's own, from the spec's command-specific range (79–125): declared here
    // and nowhere else.
    if path == "gate" {
        codes[crate::cli::failure::GATE_FAILED_EXIT.to_string()] = json!({"name": "GATE_FAILED",
            "description": "The gate decided the tree may not ship (a decision, not an error)",
            "retryable": false, "side_effects": "none"});
    }
    codes
}

/// The exit codes every command shares (the exit code table of docs/errors.md), as ExitCodeEntry values.
fn exit_codes() -> Value {
    let e = |name: &str, description: &str, retryable: bool, side_effects: &str| {
        json!({"name": name, "description": description, "retryable": retryable,
               "side_effects": side_effects})
    };
    json!({
        "0": e("SUCCESS", "Done (a re-add of a stored envelope is a no-op success)", false, "complete"),
        "1": e("GENERAL_ERROR", "An internal error: a bug, never an expected failure", false, "partial"),
        "2": e("ARG_ERROR", "Invalid input or arguments; nothing was changed", false, "none"),
        "3": e("PARTIAL_FAILURE", "Some inputs were accepted and stored, some rejected; data lists both", false, "partial"),
        "4": e("PRECONDITION", "No usable store (run elench init), or it is damaged or too new", false, "none"),
        "5": e("NOT_FOUND", "An unknown claim id, key or remote", false, "none"),
        "10": e("TIMEOUT", "Stopped at the time limit (--timeout, --command-timeout or ELENCH_TIMEOUT); what was reported as done is stored", false, "partial"),
        "12": e("UNAVAILABLE", "Another elench process holds the store, or git could not reach a remote; retry", true, "none"),
        "130": e("CANCELLED_SIGINT", "Stopped by SIGINT after the work in hand; what was reported is stored", false, "partial"),
        "143": e("CANCELLED_SIGTERM", "Stopped by SIGTERM after the work in hand; what was reported is stored", false, "partial"),
    })
}

/// One option as a FlagEntry.
fn flag_entry(arg: &clap::Arg) -> Value {
    let description = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
    let takes_value = arg.get_num_args().is_some_and(|n| n.takes_values());
    let possible: Vec<String> = arg
        .get_possible_values()
        .iter()
        .map(|p| p.get_name().to_owned())
        .collect();
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|d| d.to_string_lossy().into_owned())
        .collect();
    let kind = if !takes_value {
        "boolean"
    } else if matches!(arg.get_action(), clap::ArgAction::Append) {
        "array"
    } else if !possible.is_empty() {
        "enum"
    } else if defaults.first().is_some_and(|d| d.parse::<i64>().is_ok())
        || matches!(
            arg.get_value_names()
                .and_then(|v| v.first())
                .map(|s| s.as_str()),
            Some("N" | "SECONDS" | "DEPTH" | "LIMIT")
        )
    {
        "integer"
    } else {
        "string"
    };
    let mut entry =
        json!({"type": kind, "required": arg.is_required_set(), "description": description});
    if kind == "enum" {
        entry["enum_values"] = json!(possible);
    }
    match (kind, defaults.first()) {
        ("boolean", _) => entry["default"] = json!(false),
        ("integer", Some(d)) => entry["default"] = json!(d.parse::<i64>().unwrap_or_default()),
        (_, Some(d)) => entry["default"] = json!(d),
        _ => {}
    }
    if let Some(s) = arg.get_short() {
        entry["short"] = json!(s.to_string());
    }
    entry
}

/// One positional argument as a FlagEntry, named `<NAME>` (its value name, as `--help`
/// shows it) so that no one takes it for a `--` flag: it is given bare, in place.
fn positional_entry(arg: &clap::Arg) -> (String, Value) {
    let name = arg
        .get_value_names()
        .and_then(|v| v.first())
        .map_or_else(|| arg.get_id().as_str().to_uppercase(), |n| n.to_string());
    let mut entry = flag_entry(arg);
    let many = arg.get_num_args().is_some_and(|n| n.max_values() > 1)
        || matches!(arg.get_action(), clap::ArgAction::Append);
    if many {
        entry["type"] = json!("array");
        entry.as_object_mut().map(|e| e.remove("enum_values"));
    }
    let help = entry["description"].as_str().unwrap_or_default().to_owned();
    entry["description"] = json!(format!(
        "Positional argument, given bare in place (no flag name){}: {help}",
        if many { ", repeatable" } else { "" }
    ));
    (format!("<{name}>"), entry)
}

/// The ManifestResponse.
pub fn manifest() -> Value {
    let mut root = Cli::command();
    root.build();
    let mut commands = Map::new();
    let mut stack: Vec<(String, clap::Command)> = root
        .get_subcommands()
        .map(|c| (c.get_name().to_owned(), c.clone()))
        .collect();
    while let Some((path, cmd)) = stack.pop() {
        if cmd.get_name() == "help" {
            continue;
        }
        let mut flags = Map::new();
        // The manifest alone must drive the CLI: every command lists every argument it takes,
        // the global options (accepted on any command) and the positional arguments too.
        for arg in cmd.get_arguments() {
            if arg.is_positional() {
                let (name, entry) = positional_entry(arg);
                flags.insert(name, entry);
                continue;
            }
            let Some(long) = arg.get_long() else { continue };
            if BUILT_IN.contains(&long) {
                continue;
            }
            let mut entry = flag_entry(arg);
            if arg.is_global_set() {
                entry["description"] = json!(format!(
                    "{} (global: accepted by every command, anywhere on the line)",
                    entry["description"].as_str().unwrap_or_default()
                ));
            }
            // A flag's other names (`--out` beside `--output`) work as well; each is listed
            // under its own name too, so a name the manifest once gave never disappears. The
            // spec's flag entry has no field for "alias of", so the description says it.
            for alias in arg.get_visible_aliases().into_iter().flatten() {
                let mut alias_entry = entry.clone();
                // The short name (`-o`) belongs to the flag itself.
                if let Some(e) = alias_entry.as_object_mut() {
                    e.remove("short");
                }
                alias_entry["description"] = json!(format!(
                    "Another name for --{long}: {}",
                    entry["description"].as_str().unwrap_or_default()
                ));
                flags.insert(alias.to_owned(), alias_entry);
            }
            flags.insert(long.to_owned(), entry);
        }
        let subs: Vec<String> = cmd
            .get_subcommands()
            .filter(|s| s.get_name() != "help")
            .map(|s| format!("{path}.{}", s.get_name()))
            .collect();
        let mut entry = json!({
            "description": cmd.get_about().map(|a| a.to_string()).unwrap_or_default(),
            "danger_level": danger_level(&path),
            // elench authenticates nowhere itself; git's own credentials reach a remote.
            "required_scopes": [],
            "flags": flags,
            "exit_codes": own_exit_codes(&path),
        });
        if !subs.is_empty() {
            entry["subcommands"] = json!(subs);
        }
        match path.as_str() {
            "keys.retire" => entry["interactive"] = json!(true),
            // Talks to a remote through git: bounded by --timeout like every command, and its
            // first contact by --connect-timeout (listed with its flags).
            "push" | "pull" | "sync" => entry["has_network_io"] = json!(true),
            // remotes.json inside the store, never a file outside it.
            "remote.add" => entry["config_write_scope"] = json!("local"),
            _ => {}
        }
        for s in cmd.get_subcommands() {
            stack.push((format!("{path}.{}", s.get_name()), s.clone()));
        }
        commands.insert(path, entry);
    }
    let commands = Value::Object(
        commands
            .into_iter()
            .collect::<std::collections::BTreeMap<_, _>>()
            .into_iter()
            .collect(),
    );
    let etag = format!(
        "sha256:{}",
        hex::encode(Sha256::digest(commands.to_string().as_bytes()))
    );
    json!({
        "schema_version": "1.0",
        "framework_version": env!("CARGO_PKG_VERSION"),
        "etag": etag,
        "exit_codes": exit_codes(),
        "commands": commands,
    })
}

pub fn run(_a: ManifestArgs, _g: &Globals) -> Result<Report, Failure> {
    let m = manifest();
    let n = m["commands"].as_object().map_or(0, Map::len);
    let mut text = format!("{n} commands (elench manifest --format json for the whole table)\n");
    if let Some(cmds) = m["commands"].as_object() {
        for (path, c) in cmds {
            text.push_str(&format!(
                "  {:<22} {:<11} {}\n",
                path.replace('.', " "),
                c["danger_level"].as_str().unwrap_or_default(),
                c["description"].as_str().unwrap_or_default()
            ));
        }
    }
    Ok(Report::new(m, text))
}
