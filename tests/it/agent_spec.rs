//! The CLI Agent Spec's machine-checkable requirements (levels 1 and 2, and the argument
//! order check of level 3), run against the real binary the way the spec's conformance kit
//! runs a profile: a set of read, invalid-input and destructive probes, each run with stdin
//! closed and with an open pipe nobody writes to, and with `NO_COLOR`. Every run is checked
//! for what the kit checks: it ends; stdout is exactly one response envelope; the exit code
//! comes from the table and equals `meta.exit_code`; no ANSI escapes; invalid input exits 2;
//! destructive commands refuse without confirmation (exit 2, nothing changed) and preview
//! with `--dry-run` (exit 0). Plus what the spec says of lists (`meta.pagination`), partial
//! success (exit 3 with an error), help, and global options given twice.

use crate::common;

use common::{claim_id, envelope_text, finish_within, with_store, ClaimBuilder, KeyedStore};
use serde_json::{json, Value};
use std::process::{Command, Stdio};
use std::time::Duration;

/// A probe: a name, the arguments after `elench --store STORE`, and its kind.
struct Probe {
    name: &'static str,
    args: Vec<String>,
    kind: Kind,
}

#[derive(PartialEq)]
enum Kind {
    Read,
    Invalid,
    /// A destructive command and the flag that previews it.
    Destructive(&'static str),
}

#[derive(Clone, Copy)]
enum Stdin {
    Closed,
    OpenSilent,
}

struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// How long a probe may take before it counts as hung (generous: debug builds on a busy
/// machine); a hang is a failure, never a measurement.
const HANG_LIMIT: Duration = Duration::from_secs(60);

fn execute(s: &KeyedStore, args: &[String], stdin: Stdin, env: &[(&str, &str)]) -> Outcome {
    let mut cmd = Command::new(common::elench_path());
    cmd.current_dir(s.dir())
        .args(with_store(&s.store, args))
        .env_remove("ELENCH_STORE")
        .env_remove("CI")
        .env_remove("NO_COLOR")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(match stdin {
            Stdin::Closed => Stdio::null(),
            Stdin::OpenSilent => Stdio::piped(),
        });
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("elench starts");
    // Keep the write end open (and silent) until the process ends.
    let pipe = child.stdin.take();
    let done = finish_within(
        child,
        HANG_LIMIT,
        &format!("{args:?} (it waits for input or hangs)"),
    );
    drop(pipe);
    Outcome {
        code: done.code,
        stdout: done.stdout,
        stderr: done.stderr,
    }
}

fn has_ansi(text: &str) -> bool {
    text.contains('\u{1b}')
}

fn is_code(c: &Value) -> bool {
    c.as_str().is_some_and(|s| {
        s.len() >= 2
            && s.starts_with(|ch: char| ch.is_ascii_uppercase())
            && s.chars()
                .all(|ch| ch.is_ascii_uppercase() || ch.is_ascii_digit() || ch == '_')
    })
}

/// The exit codes the spec's table allows (0–13, command-specific 79–125, signals).
fn allowed_exit(code: i32) -> bool {
    (0..=13).contains(&code) || (79..=125).contains(&code) || code == 130 || code == 143
}

/// Checks one run's envelope as the kit does and returns it.
fn check_envelope(what: &str, o: &Outcome) -> Value {
    let code = o
        .code
        .unwrap_or_else(|| panic!("{what}: killed by a signal"));
    assert!(
        allowed_exit(code),
        "{what}: exit code {code} is outside the table"
    );
    assert!(!has_ansi(&o.stdout), "{what}: ANSI on stdout");
    let text = o.stdout.trim_end_matches('\n');
    assert!(
        !text.is_empty() && !text.contains('\n'),
        "{what}: stdout is not exactly one JSON document: {:?} (stderr {:?})",
        o.stdout,
        o.stderr
    );
    let env: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{what}: {e}"));
    let obj = env
        .as_object()
        .unwrap_or_else(|| panic!("{what}: not an object"));
    for key in ["ok", "data", "error", "warnings", "meta"] {
        assert!(obj.contains_key(key), "{what}: envelope lacks {key}: {env}");
    }
    assert_eq!(
        env["ok"],
        json!(code == 0),
        "{what}: ok vs exit code: {env}"
    );
    assert_eq!(
        env["meta"]["exit_code"],
        json!(code),
        "{what}: meta.exit_code: {env}"
    );
    assert!(
        env["meta"]["duration_ms"].is_u64(),
        "{what}: meta.duration_ms: {env}"
    );
    assert_eq!(
        env["meta"]["tool_version"],
        json!(env!("CARGO_PKG_VERSION")),
        "{what}: meta.tool_version: {env}"
    );
    // REQ-F-011: the limit in force is in every response of a command that ran.
    if env["meta"]["command"] != "elench" {
        assert!(
            env["meta"]["timeout_ms"].is_u64(),
            "{what}: meta.timeout_ms: {env}"
        );
    }
    if code == 0 {
        assert_eq!(env["error"], Value::Null, "{what}: error on success: {env}");
    } else {
        let e = &env["error"];
        assert!(
            is_code(&e["code"]),
            "{what}: every non-zero exit has an error code: {env}"
        );
        assert!(
            e["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{what}: error.message: {env}"
        );
        // REQ-C-013: what to do next, for every error.
        assert!(
            e["suggestion"].as_str().is_some_and(|m| !m.is_empty()),
            "{what}: error.suggestion: {env}"
        );
        assert_eq!(
            e["retryable"],
            json!(code == 12),
            "{what}: error.retryable: {env}"
        );
        if code == 2 {
            assert_eq!(
                e["phase"], "validation",
                "{what}: exit 2 changes nothing: {env}"
            );
        }
    }
    let warnings = env["warnings"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: warnings"));
    for w in warnings {
        assert!(
            is_code(&w["code"]) && w["message"].is_string(),
            "{what}: warning {w}"
        );
    }
    if let Some(p) = env["meta"].get("pagination") {
        check_pagination(what, p);
    }
    env
}

fn check_pagination(what: &str, p: &Value) {
    for key in ["total", "returned", "truncated", "has_more", "next_cursor"] {
        assert!(
            p.get(key).is_some(),
            "{what}: meta.pagination lacks {key}: {p}"
        );
    }
    assert!(p["returned"].is_u64() && (p["total"].is_u64() || p["total"].is_null()));
    assert!(p["truncated"].is_boolean() && p["has_more"].is_boolean());
    assert_eq!(
        p["has_more"],
        json!(!p["next_cursor"].is_null()),
        "{what}: {p}"
    );
}

/// A store with keys and three claims (a chain), and its ids.
fn populated() -> (KeyedStore, Vec<String>) {
    let s = KeyedStore::new();
    let mut ids = Vec::new();
    let mut prev: Option<String> = None;
    for i in 0..3 {
        let mut b = ClaimBuilder::assertion(&format!("claim {i}"));
        if let Some(p) = &prev {
            b = b.depends_on(&[p]);
        }
        let c = b.build_with_id();
        let id = claim_id(&c);
        let path = s.dir().join(format!("c{i}.dsse"));
        std::fs::write(&path, envelope_text(&c, &s.keys.agent)).unwrap();
        let (code, out) = s.run(&["add", path.to_str().unwrap()]);
        assert_eq!(code, 0, "{out}");
        prev = Some(id.clone());
        ids.push(id);
    }
    (s, ids)
}

fn profile(s: &KeyedStore, ids: &[String]) -> Vec<Probe> {
    let a = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let env0 = s.dir().join("c0.dsse").display().to_string();
    vec![
        Probe {
            name: "log",
            args: a(&["log"]),
            kind: Kind::Read,
        },
        Probe {
            name: "status --all",
            args: a(&["status", "--all"]),
            kind: Kind::Read,
        },
        Probe {
            name: "status id",
            args: a(&["status", &ids[0]]),
            kind: Kind::Read,
        },
        Probe {
            name: "status prefix",
            args: a(&["status", &ids[1][..9]]),
            kind: Kind::Read,
        },
        Probe {
            name: "blast",
            args: a(&["blast", &ids[0]]),
            kind: Kind::Read,
        },
        Probe {
            name: "show",
            args: a(&["show", &ids[2]]),
            kind: Kind::Read,
        },
        Probe {
            name: "keys list",
            args: a(&["keys", "list"]),
            kind: Kind::Read,
        },
        Probe {
            name: "verify",
            args: a(&["verify", &env0]),
            kind: Kind::Read,
        },
        Probe {
            name: "fsck",
            args: a(&["fsck"]),
            kind: Kind::Read,
        },
        Probe {
            name: "tree",
            args: a(&["tree", "."]),
            kind: Kind::Read,
        },
        Probe {
            name: "status bad id",
            args: a(&["status", "not-an-id"]),
            kind: Kind::Invalid,
        },
        Probe {
            name: "status no ids",
            args: a(&["status"]),
            kind: Kind::Invalid,
        },
        Probe {
            name: "blast bad depth",
            args: a(&["blast", &ids[0], "--depth", "x"]),
            kind: Kind::Invalid,
        },
        Probe {
            name: "log limit 0",
            args: a(&["log", "--limit", "0"]),
            kind: Kind::Invalid,
        },
        Probe {
            name: "log bad cursor",
            args: a(&["log", "--cursor", "not-a-cursor"]),
            kind: Kind::Invalid,
        },
        Probe {
            name: "bad timeout",
            args: a(&["log", "--timeout", "soon"]),
            kind: Kind::Invalid,
        },
        // REQ-F-045: identifiers an agent made up are refused before anything is looked up.
        Probe {
            name: "path as a keyid",
            args: a(&["keys", "retire", "../../etc/passwd"]),
            kind: Kind::Invalid,
        },
        Probe {
            name: "percent-encoded claim id",
            args: a(&["status", "cl_%2e%2e%2fetc%2fpasswd"]),
            kind: Kind::Invalid,
        },
        Probe {
            name: "remote name with a query",
            args: a(&["pull", "origin?ref=main"]),
            kind: Kind::Invalid,
        },
        Probe {
            name: "format name as output file",
            args: a(&["export", "-o", "json"]),
            kind: Kind::Invalid,
        },
        Probe {
            name: "unknown command",
            args: a(&["frobnicate"]),
            kind: Kind::Invalid,
        },
        Probe {
            name: "bad format",
            args: a(&["--format", "yaml", "log"]),
            kind: Kind::Invalid,
        },
        Probe {
            name: "keys generate bad role",
            args: a(&[
                "keys", "generate", "--role", "wizard", "--name", "x", "--out", "x.pem",
            ]),
            kind: Kind::Invalid,
        },
        Probe {
            name: "add missing file",
            args: a(&["add", "no-such.dsse"]),
            kind: Kind::Invalid,
        },
        Probe {
            name: "keys retire",
            args: a(&["keys", "retire", &s.keys.human.keyid]),
            kind: Kind::Destructive("--dry-run"),
        },
    ]
}

fn human_key_retired(s: &KeyedStore) -> bool {
    let (_, list) = s.run(&["keys", "list"]);
    list["data"]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["keyid"] == json!(s.keys.human.keyid))
        .map(|k| k["retired"] == json!(true))
        .unwrap()
}

#[test]
fn every_probe_meets_the_level_1_and_2_checks() {
    let (s, ids) = populated();
    for probe in profile(&s, &ids) {
        // A narrow terminal width must not wrap anything (REQ-F-056).
        let closed = execute(&s, &probe.args, Stdin::Closed, &[("COLUMNS", "20")]);
        let env = check_envelope(probe.name, &closed);
        let open = execute(&s, &probe.args, Stdin::OpenSilent, &[]);
        assert_eq!(
            open.code, closed.code,
            "{}: same answer with an open stdin",
            probe.name
        );
        let no_color = execute(&s, &probe.args, Stdin::Closed, &[("NO_COLOR", "1")]);
        assert!(
            !has_ansi(&no_color.stdout) && !has_ansi(&no_color.stderr),
            "{}: ANSI with NO_COLOR",
            probe.name
        );
        match probe.kind {
            Kind::Read => assert_eq!(closed.code, Some(0), "{}: {env}", probe.name),
            Kind::Invalid => assert_eq!(closed.code, Some(2), "{}: {env}", probe.name),
            Kind::Destructive(flag) => {
                assert_eq!(
                    closed.code,
                    Some(2),
                    "{}: refuses unconfirmed: {env}",
                    probe.name
                );
                assert_eq!(env["error"]["code"], "CONFIRMATION_REQUIRED", "{env}");
                // REQ-O-021: the refusal lists what would be affected.
                assert!(env["error"]["context"]["would_affect"].is_object(), "{env}");
                assert!(!human_key_retired(&s), "refused before any side effect");
                let mut args = probe.args.clone();
                args.push(flag.to_owned());
                let preview = execute(&s, &args, Stdin::Closed, &[]);
                let env = check_envelope("dry run", &preview);
                assert_eq!(preview.code, Some(0), "dry run previews: {env}");
                // REQ-C-004: a would_ effect and what would be affected.
                assert!(
                    env["data"]["effect"]
                        .as_str()
                        .is_some_and(|e| e.starts_with("would_")),
                    "{env}"
                );
                assert!(env["data"]["would_affect"].is_object(), "{env}");
                assert_eq!(env["meta"]["dry_run"], true, "{env}");
                assert!(!human_key_retired(&s), "a dry run changes nothing");
            }
        }
    }
}

#[test]
fn help_and_version_keep_stdout_clean() {
    let (s, _) = populated();
    for args in [
        vec!["--help"],
        vec!["status", "--help"],
        vec!["keys", "retire", "--help"],
    ] {
        let args: Vec<String> = args.iter().map(|x| x.to_string()).collect();
        let o = execute(&s, &args, Stdin::Closed, &[]);
        assert_eq!(o.code, Some(0), "{args:?}");
        assert!(
            o.stdout.trim().is_empty(),
            "{args:?}: help off stdout: {:?}",
            o.stdout
        );
        assert!(o.stderr.contains("Usage"), "{args:?}");
    }
    let o = execute(&s, &["--version".to_owned()], Stdin::Closed, &[]);
    assert_eq!(o.code, Some(0));
    assert_eq!(o.stdout.lines().count(), 1);
}

#[test]
fn lists_carry_every_pagination_field() {
    let (s, _) = populated();
    for (args, total) in [
        (vec!["log", "--limit", "2"], 3),
        (vec!["status", "--all", "--limit", "2"], 3),
        (vec!["keys", "list", "--limit", "2"], 3),
    ] {
        let (code, out) = s.run(&args);
        assert_eq!(code, 0, "{out}");
        let p = &out["meta"]["pagination"];
        check_pagination(&format!("{args:?}"), p);
        assert_eq!(p["total"], json!(total), "{args:?}: {p}");
        assert_eq!(p["returned"], json!(2), "{args:?}: {p}");
        assert_eq!(
            (&p["truncated"], &p["has_more"]),
            (&json!(true), &json!(true))
        );
        let mut next = args.clone();
        let cursor = p["next_cursor"].as_str().unwrap().to_owned();
        next.extend(["--cursor", &cursor]);
        let (_, out) = s.run(&next);
        let p = &out["meta"]["pagination"];
        assert_eq!(p["returned"], json!(1), "{p}");
        assert_eq!(
            (&p["truncated"], &p["has_more"]),
            (&json!(false), &json!(false))
        );
        assert_eq!(p["next_cursor"], Value::Null);
    }
}

#[test]
fn a_partial_success_exits_3_with_an_error_object() {
    let (s, _) = populated();
    let good = ClaimBuilder::assertion("new and good").build_with_id();
    let good_path = s.dir().join("good.dsse");
    std::fs::write(&good_path, envelope_text(&good, &s.keys.agent)).unwrap();
    let bad_path = s.dir().join("bad.dsse");
    std::fs::write(&bad_path, "{}").unwrap();
    let args: Vec<String> = [
        "add",
        good_path.to_str().unwrap(),
        bad_path.to_str().unwrap(),
    ]
    .iter()
    .map(|x| x.to_string())
    .collect();
    let o = execute(&s, &args, Stdin::Closed, &[]);
    let env = check_envelope("partial add", &o);
    assert_eq!(o.code, Some(3), "{env}");
    assert_eq!(env["error"]["code"], "PARTIAL_FAILURE", "{env}");
    assert_eq!(env["data"]["created"], 1, "{env}");
    // In jsonl the accepted rows come first and the last line is the error envelope, which
    // keeps data: the rejections are only there.
    let mut jsonl = args.clone();
    jsonl.extend(["--format".to_string(), "jsonl".to_string()]);
    std::fs::write(
        s.dir().join("good2.dsse"),
        envelope_text(
            &ClaimBuilder::assertion("newer and good").build_with_id(),
            &s.keys.agent,
        ),
    )
    .unwrap();
    jsonl[1] = s.dir().join("good2.dsse").to_str().unwrap().to_string();
    let o = execute(&s, &jsonl, Stdin::Closed, &[]);
    assert_eq!(o.code, Some(3), "{}", o.stdout);
    let lines = common::json_lines(&o.stdout);
    assert_eq!(lines.len(), 2, "{}", o.stdout);
    assert_eq!(lines[0]["effect"], "created", "{}", o.stdout);
    assert_eq!(lines[1]["error"]["code"], "PARTIAL_FAILURE");
    assert_eq!(
        lines[1]["data"]["rejections"][0]["code"], "BAD_ENVELOPE",
        "{}",
        o.stdout
    );
}

#[test]
fn a_global_option_means_the_same_anywhere_and_conflicting_repeats_exit_2() {
    let (s, ids) = populated();
    let id = ids[0].as_str();
    let placements: Vec<Vec<&str>> = vec![
        vec!["--format", "json", "blast", id, "--depth", "1"],
        vec!["blast", "--format", "json", id, "--depth", "1"],
        vec!["blast", id, "--depth", "1", "--format", "json"],
    ];
    let mut data = Vec::new();
    for args in &placements {
        let (code, out) = s.run(args);
        assert_eq!(code, 0, "{args:?}: {out}");
        data.push(out["data"].clone());
    }
    assert!(
        data.windows(2).all(|w| w[0] == w[1]),
        "same data wherever --format stands"
    );
    // The same option twice with different values: refused, not last-wins.
    let args: Vec<String> = ["--format", "json", "blast", id, "--format", "text"]
        .iter()
        .map(|x| x.to_string())
        .collect();
    let o = execute(&s, &args, Stdin::Closed, &[]);
    let env = check_envelope("conflicting --format", &o);
    assert_eq!(o.code, Some(2), "{env}");
    assert!(
        env["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--format"),
        "{env}"
    );
    // Twice with the same value is not a conflict.
    let (code, _) = s.run(&["--format", "json", "log", "--format", "json"]);
    assert_eq!(code, 0);
}

/// The fields the kit's ManifestResponse schema allows in a command entry.
const COMMAND_ENTRY_FIELDS: [&str; 34] = [
    "description",
    "aliases",
    "danger_level",
    "required_scopes",
    "flags",
    "exit_codes",
    "output_schema",
    "output_formats",
    "examples",
    "subcommands",
    "option_placement",
    "interactive",
    "has_network_io",
    "steps",
    "spawns_background_process",
    "cleanup_command",
    "max_lifetime_seconds",
    "filesystem_side_effects",
    "secret_env_vars",
    "platform",
    "required_tools",
    "subprocess",
    "headless_supported",
    "token_env_vars",
    "async",
    "job_descriptor_schema",
    "requires_editor",
    "non_interactive_alternatives",
    "gui_operations",
    "headless_behavior",
    "config_write_scope",
    "requires",
    "streaming_default",
    "safe_default",
];

#[test]
fn the_manifest_lists_every_command_with_flags_danger_and_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out) = common::elench(dir.path(), &["manifest"]);
    assert_eq!(code, 0, "{out}");
    let m = &out["data"];
    // Only the fields the kit's ManifestResponse schema knows: it allows no others, at the
    // root, in a command entry or in a flag entry.
    let known = |v: &Value, fields: &[&str], at: &str| {
        for k in v.as_object().unwrap().keys() {
            assert!(
                fields.contains(&k.as_str()),
                "{at}: {k} is not a manifest field"
            );
        }
    };
    known(
        m,
        &[
            "schema_version",
            "framework_version",
            "etag",
            "commands",
            "dependencies",
            "exit_codes",
        ],
        "manifest",
    );
    for (path, c) in m["commands"].as_object().unwrap() {
        known(c, &COMMAND_ENTRY_FIELDS, path);
        for (name, f) in c["flags"].as_object().unwrap() {
            known(
                f,
                &[
                    "type",
                    "required",
                    "description",
                    "default",
                    "enum_values",
                    "short",
                    "pattern",
                    "pattern_type",
                ],
                &format!("{path} --{name}"),
            );
        }
    }
    assert!(m["schema_version"].as_str().unwrap().split('.').count() == 2);
    assert_eq!(m["framework_version"], env!("CARGO_PKG_VERSION"));
    let (_, again) = common::elench(dir.path(), &["manifest"]);
    assert_eq!(again["data"]["etag"], m["etag"], "the etag is stable");

    let codes = m["exit_codes"].as_object().unwrap();
    for (k, e) in codes {
        assert!(k.parse::<u32>().is_ok(), "{k}");
        assert!(e["description"]
            .as_str()
            .is_some_and(|d| !d.is_empty() && d.len() <= 120));
        if e["retryable"] == json!(true) {
            assert_eq!(
                e["side_effects"], "none",
                "{k}: retryable means no side effects"
            );
        }
    }
    for k in ["0", "1", "2", "3", "4", "5", "10", "12", "130", "143"] {
        assert!(codes.contains_key(k), "exit code {k} is declared");
    }

    // Every command `--help` lists is in the manifest, nested ones under a dotted path.
    let help = common::run_raw(dir.path(), &["--help"]).stderr;
    let listed: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(listed.len() > 10, "{help}");
    let commands = m["commands"].as_object().unwrap();
    for c in &listed {
        assert!(commands.contains_key(*c), "{c} missing from the manifest");
    }
    for (path, c) in commands {
        assert!(
            c["description"].as_str().is_some_and(|d| !d.is_empty()),
            "{path}"
        );
        assert!(["safe", "mutating", "destructive"].contains(&c["danger_level"].as_str().unwrap()));
        assert!(
            c["required_scopes"].is_array() && c["exit_codes"].is_object(),
            "{path}"
        );
        // The manifest alone drives the CLI: every command lists the global options it
        // accepts, marked global.
        for global in ["store", "format", "wait", "command-timeout"] {
            let f = &c["flags"][global];
            assert!(
                f["description"]
                    .as_str()
                    .is_some_and(|d| d.contains("global")),
                "{path} --{global}: {f}"
            );
        }
        for (name, f) in c["flags"].as_object().unwrap() {
            assert!(!name.starts_with('-'), "{path} {name}");
            let t = f["type"].as_str().unwrap();
            assert!(["string", "integer", "number", "boolean", "array", "enum"].contains(&t));
            assert!(
                f["required"].is_boolean() && f["description"].is_string(),
                "{path} {name}"
            );
            assert_eq!(f.get("enum_values").is_some(), t == "enum", "{path} {name}");
        }
        for sub in c["subcommands"].as_array().into_iter().flatten() {
            assert!(
                commands.contains_key(sub.as_str().unwrap()),
                "{path} -> {sub}"
            );
        }
    }
    assert_eq!(commands["keys.retire"]["danger_level"], "destructive");
    // Positional arguments are listed as `<NAME>`, bare, as `--help` names them.
    for (path, name, kind, required) in [
        ("status", "<IDS>", "array", false),
        ("add", "<INPUT>", "array", false),
        ("sign", "<CLAIM.json>", "string", false),
        ("verify", "<ENVELOPE>", "string", false),
        ("keys.add", "<PUBKEY>", "string", true),
    ] {
        let f = &commands[path]["flags"][name];
        assert_eq!(f["type"], kind, "{path} {name}: {f}");
        assert_eq!(f["required"], required, "{path} {name}: {f}");
        assert!(
            f["description"]
                .as_str()
                .unwrap()
                .starts_with("Positional argument"),
            "{path} {name}: {f}"
        );
    }
    // check's --timeout is its own (the per-claim limit), not the global one.
    assert!(!commands["check"]["flags"]["timeout"]["description"]
        .as_str()
        .unwrap()
        .contains("global"));
    assert!(commands["status"]["flags"]["timeout"]["description"]
        .as_str()
        .unwrap()
        .contains("global"));
    // REQ-C-001 and REQ-F-011: each command declares its time limit as its TIMEOUT entry.
    for (path, c) in commands {
        let t = &c["exit_codes"]["10"];
        assert_eq!(t["name"], "TIMEOUT", "{path}");
        let safe = c["danger_level"] == "safe";
        assert_eq!(
            t["side_effects"],
            if safe { "none" } else { "partial" },
            "{path}"
        );
    }
    assert!(commands["add"]["exit_codes"]["10"]["description"]
        .as_str()
        .unwrap()
        .contains("3600 s"));
    assert!(commands["status"]["exit_codes"]["10"]["description"]
        .as_str()
        .unwrap()
        .contains("300 s"));
    // REQ-C-012, REQ-C-025, REQ-C-005.
    for c in ["push", "pull", "sync"] {
        assert_eq!(commands[c]["has_network_io"], true, "{c}");
    }
    assert_eq!(commands["remote.add"]["config_write_scope"], "local");
    assert_eq!(commands["keys.retire"]["interactive"], true);
    for f in ["yes", "non-interactive", "confirm-destructive", "dry-run"] {
        assert_eq!(
            commands["keys.retire"]["flags"][f]["type"], "boolean",
            "keys retire --{f}"
        );
    }
    // REQ-F-001, REQ-C-001: GATE_FAILED is gate's own code, from the spec's command-specific
    // range, declared on gate and nowhere else; 6 (the spec's CONFLICT) is not used.
    assert_eq!(commands["gate"]["exit_codes"]["79"]["name"], "GATE_FAILED");
    assert!(
        !codes.contains_key("6") && !codes.contains_key("79"),
        "{codes:?}"
    );
    for (path, c) in commands {
        let own = c["exit_codes"].as_object().unwrap();
        for k in own.keys() {
            let n: u32 = k.parse().unwrap();
            assert!(
                [10].contains(&n) || (79..=125).contains(&n),
                "{path} declares {n}, neither the spec's nor a command-specific code"
            );
        }
        assert_eq!(own.contains_key("79"), path == "gate", "{path}");
    }
    assert_eq!(codes["130"]["name"], "CANCELLED_SIGINT");
    assert_eq!(codes["143"]["name"], "CANCELLED_SIGTERM");
    // check --timeout is the per-claim limit, under the name it has always had; the old
    // names of renamed path flags are listed beside the new ones.
    assert_eq!(commands["check"]["flags"]["timeout"]["default"], 300);
    assert!(commands["check"]["flags"]["claim-timeout"]["description"]
        .as_str()
        .unwrap()
        .starts_with("Another name for --timeout"));
    for c in [
        "sign",
        "export",
        "checkpoint",
        "keys.generate",
        "completions",
        "man",
    ] {
        assert!(
            commands[c]["flags"]["out"]["description"]
                .as_str()
                .is_some_and(|d| d.starts_with("Another name for --output")),
            "{c} --out"
        );
        assert!(
            commands[c]["flags"]["out"].get("short").is_none(),
            "{c} --out: -o belongs to --output"
        );
    }
    assert_eq!(commands["status"]["danger_level"], "safe");
    assert_eq!(commands["log"]["flags"]["limit"]["default"], 20);
    assert_eq!(commands["add"]["flags"]["dry-run"]["type"], "boolean");
}
