//! The manual in `docs/` stays true to the code:
//!
//! - every error and warning code the source can emit has a row in `docs/errors.md`, and the
//!   exit code that row gives is the one the binary really uses (probed through the binary);
//! - the example claims in `docs/claims.md` pass the real claim validation (ids included), and
//!   there is one of every kind;
//! - every relative link in README.md, ARCHITECTURE.md and `docs/` resolves, and no
//!   Markdown file points a reader at documents outside the repository;
//! - ARCHITECTURE.md names only files and modules that exist, in paragraphs and table cells
//!   short enough to read.
//!
//! Codes are found by reading the source rather than by listing them here, so a code that a
//! later change adds anywhere under `src/` fails this test until the table names it.

use crate::common;

use regex::Regex;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Files under `dir` whose names end with `ext`, recursively, sorted; build output, installed
/// npm packages (`node_modules`, the TypeScript client test's), VCS data and hidden
/// directories are skipped.
fn files_with_ext(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                if name != "target" && name != "node_modules" && !name.starts_with('.') {
                    stack.push(p);
                }
            } else if ft.is_file() && name.ends_with(ext) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn rel(p: &Path) -> String {
    p.strip_prefix(repo()).unwrap_or(p).display().to_string()
}

// ---------------------------------------------------------------------------------------------
// (a) every code in the source is in docs/errors.md

/// UPPER_SNAKE string literals that are not codes: environment variables and the like.
/// A literal is also skipped when it sits where an environment variable or a clap value name
/// goes (see `NOT_A_CODE_CONTEXT`), so this list stays short.
const NOT_CODES: &[&str] = &[
    "CARGO_PKG_VERSION",
    "CARGO_MANIFEST_DIR",
    "ELENCH_STORE",
    "ELENCH_TEST",
    "ELENCH_TESTS",
    "ELENCH_JUNIT",
    "ELENCH_TIMEOUT",
    "ELENCH_MAX_OUTPUT_BYTES",
    "ELENCH_MAX_STDIN_BYTES",
    // Signal names (`error.context.signal` of CANCELLED).
    "SIGINT",
    "SIGTERM",
    "SIGALRM",
    // Environment elench reads to decide on colour and headless mode.
    "GITHUB_ACTIONS",
    "JENKINS_URL",
    "WAYLAND_DISPLAY",
    "SSH_TTY",
    "NO_COLOR",
    "RUST_BACKTRACE",
    "RUST_LOG",
    // Environment elench sets or clears for the processes it starts (check runners, git).
    "CARGO_HOME",
    "CARGO_NET_OFFLINE",
    "CARGO_TERM_COLOR",
    "RUSTUP_HOME",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_DEFAULT_HASH",
    "GIT_DIR",
    "GIT_INDEX_FILE",
    "GIT_NAMESPACE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_QUARANTINE_PATH",
    "GIT_TRACE_PACKET",
    "GIT_WORK_TREE",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_TERMINAL_PROMPT",
];

/// Text right before a literal that marks it as an environment variable or argument name.
const NOT_A_CODE_CONTEXT: &str = r"(?:env!\(|option_env!\(|env\s*=\s*|\.env\(|env_remove\(|var\(|var_os\(|set_var\(|remove_var\(|value_name\s*=\s*)\s*$";

/// Every code the source can emit, with the files it appears in.
///
/// These shapes are recognised, which between them cover how elench names codes:
/// - a match arm returning a code (`Code::BadEnvelope => "BAD_ENVELOPE"`, `Failure::code`),
///   single words included (`"INTERNAL"`);
/// - a `code: "…"` or `code = "…"` field, the first argument of `Warning::new("…"`, and a
///   row of the code enum's table (`Internal = "INTERNAL", Exit::…`);
/// - any other string literal in UPPER_SNAKE with at least one underscore (conformance
///   violation codes, fsck problem codes, warnings built across lines), unless it names an
///   environment variable or a clap value.
fn source_codes() -> BTreeMap<String, BTreeSet<String>> {
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let files = files_with_ext(&repo().join("src"), ".rs");
    assert!(!files.is_empty(), "no Rust files under src/");
    for f in files {
        for code in codes_in(&read(&f)) {
            found.entry(code).or_default().insert(rel(&f));
        }
    }
    found
}

/// The codes in one Rust source text (see [`source_codes`] for the shapes recognised).
fn codes_in(text: &str) -> BTreeSet<String> {
    let word = r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*";
    let arm = Regex::new(&format!(r#"=>\s*"({word})""#)).unwrap();
    let field = Regex::new(&format!(r#"\bcode\s*[:=]\s*"({word})""#)).unwrap();
    let warning = Regex::new(&format!(r#"Warning::new\(\s*"({word})""#)).unwrap();
    // A row of the code enum's table (`Internal = "INTERNAL", Exit::Status(1), …`).
    let enum_row = Regex::new(&format!(
        r#"\b[A-Z][A-Za-z0-9]*\s*=\s*"({word})",\s*Exit::"#
    ))
    .unwrap();
    let snake = Regex::new(r#""([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)""#).unwrap();
    let not_code_context = Regex::new(NOT_A_CODE_CONTEXT).unwrap();

    let mut found = BTreeSet::new();
    for re in [&arm, &field, &warning, &enum_row] {
        for c in re.captures_iter(text) {
            found.insert(c[1].to_owned());
        }
    }
    for c in snake.captures_iter(text) {
        let m = c.get(0).unwrap();
        let line_start = text[..m.start()].rfind('\n').map_or(0, |i| i + 1);
        if !not_code_context.is_match(&text[line_start..m.start()]) {
            found.insert(c[1].to_owned());
        }
    }
    found.retain(|c| !NOT_CODES.contains(&c.as_str()));
    found
}

#[test]
fn code_extraction_recognises_each_shape_and_skips_names() {
    let src = r#"
        match self { Code::A => "ONE_CODE", Failure::Internal(_) => "INTERNAL" }
        Failure::NotFound { code: "NOT_HERE", message }
        warnings.push(Warning::new(
            "SPLIT_ACROSS_LINES",
            "message",
        ));
        Warning::new("SINGLE", "message");
        Whole = "WHOLE", Exit::Status(1),
        p.add("PROBLEM_CODE", id, msg);
        let v = env!("CARGO_SOMETHING_ELSE");
        #[arg(long, env = "ELENCH_HOME_DIR", value_name = "SOME_PATH")]
        cmd.env("ELENCH_RUNNER_X", "1");
        std::env::var_os("MY_ENV_VAR");
        let prose = "TODO";
    "#;
    let got: Vec<String> = codes_in(src).into_iter().collect();
    assert_eq!(
        got,
        [
            "INTERNAL",
            "NOT_HERE",
            "ONE_CODE",
            "PROBLEM_CODE",
            "SINGLE",
            "SPLIT_ACROSS_LINES",
            "WHOLE"
        ]
    );
}

/// One row of a table in docs/errors.md.
#[derive(Debug)]
struct Row {
    exit: String,
    meaning: String,
    todo: String,
}

/// The rows of every `code | exit | meaning | what to do` table in docs/errors.md, by code.
fn documented_codes() -> BTreeMap<String, Row> {
    let path = repo().join("docs/errors.md");
    let text = read(&path);
    let code_cell = Regex::new(r"^`?([A-Z][A-Z0-9_]*)`?$").unwrap();
    let mut rows = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if !line.starts_with('|') {
            continue;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let first = cells[0];
        if first == "code" || first.chars().all(|c| matches!(c, '-' | ':' | ' ')) {
            continue; // header or separator
        }
        let Some(code) = code_cell.captures(first) else {
            panic!(
                "docs/errors.md line {}: the first cell {first:?} is not a code",
                n + 1
            );
        };
        assert_eq!(
            cells.len(),
            4,
            "docs/errors.md line {}: a row has four cells (code | exit | meaning | what to do)",
            n + 1
        );
        let row = Row {
            exit: cells[1].to_owned(),
            meaning: cells[2].to_owned(),
            todo: cells[3].to_owned(),
        };
        assert!(
            !row.exit.is_empty() && !row.meaning.is_empty() && !row.todo.is_empty(),
            "docs/errors.md line {}: {} has an empty cell",
            n + 1,
            &code[1]
        );
        rows.insert(code[1].to_owned(), row);
    }
    rows
}

#[test]
fn every_code_in_the_source_is_documented_in_errors_md() {
    let found = source_codes();
    // The extraction itself must work: these are emitted in three different ways.
    for sure in [
        "BAD_SIGNATURE",
        "INTERNAL",
        "STORE_BUSY",
        "DANGLING_REFERENCE",
        "DENOMINATOR_INTACT",
    ] {
        assert!(
            found.contains_key(sure),
            "the extraction missed {sure}; it found {:?}",
            found.keys().collect::<Vec<_>>()
        );
    }
    let documented = documented_codes();
    let missing: Vec<String> = found
        .iter()
        .filter(|(code, _)| !documented.contains_key(*code))
        .map(|(code, files)| {
            format!(
                "{code} (in {})",
                files.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        })
        .collect();
    assert!(
        missing.is_empty(),
        "codes used in src/ but missing from the table in docs/errors.md (add a row \
         `code | exit | meaning | what to do` for each):\n  {}",
        missing.join("\n  ")
    );
}

/// The leading number of an exit cell ("4", "4 (…)"), if it has one.
fn exit_number(cell: &str) -> Option<i32> {
    let digits: String = cell
        .trim_matches('`')
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[test]
fn documented_exit_codes_are_the_ones_the_binary_uses() {
    let documented = documented_codes();
    let dir = tempfile::tempdir().unwrap();
    // An explicit store path, so that no store in a parent directory is found by accident.
    let store = dir.path().join("store");
    let store = store.to_str().unwrap();
    let unknown = format!("cl_{}", "0".repeat(64));
    let mut seen = Vec::new();
    let mut probe = |args: &[&str], want: &str| {
        let mut full = vec!["--store", store];
        full.extend_from_slice(args);
        let (code, json) = common::elench(dir.path(), &full);
        seen.push((args.join(" "), want.to_owned(), code, json));
    };
    probe(&["status", &unknown], "STORE_NOT_FOUND");
    probe(&["status", "not-a-claim-id"], "BAD_ARGUMENTS");
    probe(&["status", "../not-a-claim-id"], "INVALID_AGENT_INPUT");
    probe(&["init"], "");
    probe(&["status", &unknown], "NOT_FOUND");
    probe(&["add", "no-such-file.dsse"], "IO_ERROR");
    for (line, want, code, json) in seen {
        if want.is_empty() {
            assert_eq!(code, 0, "`elench {line}` failed: {json}");
            continue;
        }
        assert_eq!(
            json["error"]["code"], want,
            "`elench {line}` gave {json}; the probe expects {want}"
        );
        let row = documented
            .get(&want)
            .unwrap_or_else(|| panic!("{want} has no row in docs/errors.md"));
        assert_eq!(
            exit_number(&row.exit),
            Some(code),
            "docs/errors.md gives {want} exit {:?}, but `elench {line}` exited {code}",
            row.exit
        );
    }
}

// ---------------------------------------------------------------------------------------------
// the example claims of docs/claims.md

/// Fenced code blocks with the info string `json`, as (first line number, text).
fn json_blocks(markdown: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (n, line) in markdown.lines().enumerate() {
        let t = line.trim_start();
        match &mut current {
            None if t.starts_with("```json") => current = Some((n + 2, String::new())),
            Some(_) if t.starts_with("```") => out.push(current.take().unwrap()),
            Some((_, text)) => {
                text.push_str(line);
                text.push('\n');
            }
            None => {}
        }
    }
    out
}

#[test]
fn example_claims_in_the_manual_are_valid_and_cover_every_kind() {
    let text = read(&repo().join("docs/claims.md"));
    let mut kinds = BTreeSet::new();
    for (line, block) in json_blocks(&text) {
        let Ok(value) = serde_json::from_str::<Value>(&block) else {
            continue; // a fragment, not a whole claim
        };
        let is_claim = ["id", "kind", "origin", "anchor"]
            .iter()
            .all(|k| value.get(k).is_some());
        if !is_claim {
            continue;
        }
        let (claim, _) = elench::claim::validate(value.clone()).unwrap_or_else(|r| {
            panic!("docs/claims.md line {line}: the example claim is refused: {r}")
        });
        kinds.insert(claim.kind.as_str());
    }
    let all: BTreeSet<&str> = [
        "assertion",
        "falsification",
        "verification",
        "supersession",
        "residue-acceptance",
    ]
    .into_iter()
    .collect();
    assert_eq!(
        kinds, all,
        "docs/claims.md needs a complete, valid example of every kind"
    );
}

// ---------------------------------------------------------------------------------------------
// (b) links resolve; nothing points outside the repository

/// Markdown with fenced code blocks and inline code spans blanked out, so that code such as
/// `a[i](x)` is not read as a link.
fn prose_only(markdown: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            out.push('\n');
            continue;
        }
        if fenced {
            out.push('\n');
            continue;
        }
        let mut in_code = false;
        for ch in line.chars() {
            if ch == '`' {
                in_code = !in_code;
                out.push(' ');
            } else {
                out.push(if in_code { ' ' } else { ch });
            }
        }
        out.push('\n');
    }
    out
}

/// The anchor a heading gets (the rule GitHub and mdBook share for plain headings): lower
/// case, spaces to `-`, and only letters, digits, `-` and `_` kept.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors_of(markdown: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let mut out = BTreeSet::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced && line.starts_with('#') {
            out.insert(slug(line.trim_start_matches('#')));
        }
    }
    out
}

/// Every relative link target in a Markdown text: inline `[text](target)` and reference
/// definitions `[name]: target`.
fn links(markdown: &str) -> Vec<String> {
    let inline = Regex::new(r"\]\(\s*<?([^)\s>]+)>?(?:\s+[^)]*)?\)").unwrap();
    let reference = Regex::new(r"(?m)^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)").unwrap();
    let prose = prose_only(markdown);
    inline
        .captures_iter(&prose)
        .chain(reference.captures_iter(&prose))
        .map(|c| c[1].to_owned())
        .filter(|t| !(t.contains("://") || t.starts_with("mailto:") || t.starts_with("tel:")))
        .collect()
}

#[test]
fn relative_links_resolve() {
    let root = repo();
    let mut files = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    let in_docs = files_with_ext(&root.join("docs"), ".md");
    files.extend(in_docs);

    let mut broken = Vec::new();
    let mut checked = 0;
    for f in &files {
        let text = read(f);
        for target in links(&text) {
            checked += 1;
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let dest = if path.is_empty() {
                f.clone()
            } else {
                f.parent().unwrap().join(path)
            };
            if !dest.exists() {
                broken.push(format!("{}: {target} (no such file)", rel(f)));
                continue;
            }
            if let Some(anchor) = anchor.filter(|a| !a.is_empty()) {
                if dest.extension().is_some_and(|x| x == "md")
                    && !anchors_of(&read(&dest)).contains(anchor)
                {
                    broken.push(format!(
                        "{}: {target} (no heading with that anchor)",
                        rel(f)
                    ));
                }
            }
        }
    }
    assert!(
        checked > 0,
        "no links found at all; the link reader is broken"
    );
    assert!(
        broken.is_empty(),
        "broken links:\n  {}",
        broken.join("\n  ")
    );
}

#[test]
fn the_manual_covers_every_chapter_in_its_summary() {
    // Every chapter in docs/ is reachable from the table of contents.
    let docs = repo().join("docs");
    let summary = read(&docs.join("SUMMARY.md"));
    let linked: BTreeSet<String> = links(&summary)
        .into_iter()
        .map(|t| t.split('#').next().unwrap_or_default().to_owned())
        .collect();
    for f in files_with_ext(&docs, ".md") {
        let name = f.strip_prefix(&docs).unwrap().display().to_string();
        if name == "SUMMARY.md" {
            continue;
        }
        assert!(
            linked.contains(&name),
            "docs/{name} is not linked from docs/SUMMARY.md"
        );
    }
}

#[test]
fn no_markdown_file_or_source_comment_points_outside_the_repository() {
    // A user has only the repository: no page may send them to the design notes or the
    // folder they came from.
    let forbidden =
        Regex::new(r"DESIGN(?:\.md| \d|'s)|\.\./shared|(?:^|[\s(`'\x22/])shared/").unwrap();
    let mut offences = Vec::new();
    let files = files_with_ext(&repo(), ".md");
    assert!(files.len() >= 3, "found too few Markdown files: {files:?}");
    // The source's comments are read too: they must say the rule, not where it was written.
    let sources = files_with_ext(&repo().join("src"), ".rs");
    assert!(
        sources.len() >= 3,
        "found too few source files: {sources:?}"
    );
    for f in files.into_iter().chain(sources) {
        for (n, line) in read(&f).lines().enumerate() {
            if forbidden.is_match(line) {
                offences.push(format!("{}:{}: {}", rel(&f), n + 1, line.trim()));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "Markdown that points outside the repository (say it in the repository's own words):\n  {}",
        offences.join("\n  ")
    );
}

/// `[text](target)` becomes `text`: the manual's links, as the binary's suggestions read.
fn link_text(s: &str) -> String {
    let link = Regex::new(r"\[([^\]]*)\]\([^)]*\)").unwrap();
    link.replace_all(s, "$1").into_owned()
}

/// The first row of each code in docs/errors.md (the errors table comes first), leaving out
/// the table of exit code names, which name exit codes rather than codes.
fn first_rows() -> Vec<(String, Row)> {
    let text = read(&repo().join("docs/errors.md"));
    let code_cell = Regex::new(r"^`([A-Z][A-Z0-9_]*)`$").unwrap();
    let mut rows: Vec<(String, Row)> = Vec::new();
    let mut section = String::new();
    for line in text.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            section = title.to_owned();
            continue;
        }
        if section.starts_with("Exit code names") || !line.trim_start().starts_with('|') {
            continue;
        }
        let cells: Vec<&str> = line
            .trim()
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        let Some(code) = code_cell.captures(cells[0]) else {
            continue;
        };
        if rows.iter().any(|(c, _)| c == &code[1]) {
            continue;
        }
        rows.push((
            code[1].to_owned(),
            Row {
                exit: cells[1].to_owned(),
                meaning: cells[2].to_owned(),
                todo: cells[3].to_owned(),
            },
        ));
    }
    rows
}

/// docs/errors.md and the code enum hold the same codes, in the same order, each with the
/// same exit class and the same "what to do" (the binary's `error.suggestion`).
#[test]
fn errors_md_and_the_code_enum_agree() {
    use elench::error::Code;
    let rows = first_rows();
    assert!(rows.len() > 90, "{} rows", rows.len());
    let documented: Vec<&str> = rows.iter().map(|(c, _)| c.as_str()).collect();
    let compiled: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
    let missing: Vec<&&str> = documented
        .iter()
        .filter(|c| !compiled.contains(c))
        .collect();
    let undocumented: Vec<&&str> = compiled
        .iter()
        .filter(|c| !documented.contains(c))
        .collect();
    assert!(
        missing.is_empty() && undocumented.is_empty(),
        "documented but not in elench::error::Code: {missing:?}; in the enum but not \
         documented: {undocumented:?}"
    );
    assert_eq!(documented, compiled, "the same codes, in the same order");
    for (name, row) in &rows {
        let code = Code::from_name(name).unwrap();
        assert_eq!(
            code.exit().to_string(),
            row.exit.trim_matches('`'),
            "{name}: the exit class in docs/errors.md and in the enum"
        );
        assert_eq!(
            code.suggestion(),
            link_text(&row.todo),
            "{name}: what to do, in docs/errors.md and in the enum"
        );
        assert!(!row.meaning.is_empty(), "{name}");
    }
}

// ---------------------------------------------------------------------------------------------
// (e) the README's walk-through runs as written, and examples spell flags as the binary does

/// The README's walk-through and its loop (steps 1 to 8) run as written, in an empty
/// directory with `elench` on PATH: every id a step uses is one an earlier step captured into
/// a shell variable, none a placeholder for the reader to fill in.
#[test]
fn the_readme_walk_through_runs_as_written() {
    if std::process::Command::new("jq")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: jq is not installed (step 8 reads a record id with it)");
        return;
    }
    let readme = read(&repo().join("README.md"));
    let mut script = String::from("set -euo pipefail\n");
    for title in [
        "## A walk-through: keys, tree, claim, status, blast",
        "## The loop: an agent claims",
    ] {
        let at = readme.find(title).unwrap_or_else(|| panic!("{title}"));
        let start = at + readme[at..].find("```\n").expect("a shell block") + 4;
        let end = start + readme[start..].find("```").expect("its end");
        script.push_str(&readme[start..end]);
    }
    let tmp = tempfile::tempdir().unwrap();
    let bin = common::elench_path();
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(tmp.path())
        .env("PATH", path)
        .env_remove("ELENCH_STORE")
        .env_remove("CI")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "the walk-through failed ({:?}):\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("\"expression\""),
        "step 8 shows the evidence: {stdout}"
    );
}

/// A command shown in the manual spells its flags as `--help` does: `-o`/`--output`, never
/// `--out`, the old name the binary still takes but no longer shows.
#[test]
fn examples_spell_output_flags_as_the_binary_does() {
    let mut files = files_with_ext(&repo().join("docs"), ".md");
    files.push(repo().join("README.md"));
    for f in files {
        for (n, line) in read(&f).lines().enumerate() {
            let flagged = line
                .split_whitespace()
                .any(|t| t == "--out" || t.starts_with("--out="));
            assert!(!flagged, "{}:{}: {line}", rel(&f), n + 1);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// (e) ARCHITECTURE.md: every file and module it names exists, and it reads in short pieces

/// The longest a paragraph, a list item or a table cell of ARCHITECTURE.md may be, in
/// characters: past it, the detail belongs in the manual or beside the code.
const MAP_PIECE_MAX: usize = 700;

/// The top folders of the repository whose paths the code map names.
const MAP_FOLDERS: &str = "src|tests|docs|benches|examples";

/// Every repository path a Markdown text names (`src/store/log.rs`, `tests/it/`, a link's
/// `docs/status.md`), with its line number; a sentence's closing full stop is not part of
/// it. A `*` in a path is a wildcard within one name (`tests/it/*_props.rs`).
fn named_paths(markdown: &str) -> Vec<(usize, String)> {
    let re = Regex::new(&format!(
        r"(?:^|[^A-Za-z0-9_./-])((?:{MAP_FOLDERS})/[A-Za-z0-9_.*/-]*)"
    ))
    .unwrap();
    let mut out = Vec::new();
    for (n, line) in markdown.lines().enumerate() {
        for c in re.captures_iter(line) {
            let path = c[1].trim_end_matches('.').to_owned();
            out.push((n + 1, path));
        }
    }
    out
}

/// Whether `path` (relative to the repository, `*` a wildcard within a name) names at
/// least one file or folder.
fn path_exists(root: &Path, path: &str) -> bool {
    let mut here = vec![root.to_path_buf()];
    for part in path.split('/').filter(|p| !p.is_empty()) {
        let mut next = Vec::new();
        for dir in &here {
            if part.contains('*') {
                let pattern = format!("^{}$", regex::escape(part).replace(r"\*", "[^/]*"));
                let re = Regex::new(&pattern).unwrap();
                for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                    if re.is_match(&e.file_name().to_string_lossy()) {
                        next.push(e.path());
                    }
                }
            } else if dir.join(part).exists() {
                next.push(dir.join(part));
            }
        }
        here = next;
    }
    !here.is_empty()
}

/// The inline code spans of a Markdown text outside fenced blocks, with their line numbers.
fn code_spans(markdown: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (n, line) in markdown.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut parts = line.split('`');
        parts.next();
        while let (Some(code), Some(_)) = (parts.next(), parts.next()) {
            out.push((n + 1, code.to_owned()));
        }
    }
    out
}

/// The crate names a path may start with without being one of elench's modules: the
/// standard library's and every dependency's in Cargo.toml.
fn outside_crates(root: &Path) -> BTreeSet<String> {
    let manifest: toml::Table = read(&root.join("Cargo.toml")).parse().unwrap();
    let mut names: BTreeSet<String> = ["std", "core", "alloc"].map(str::to_owned).into();
    for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
        if let Some(t) = manifest.get(section).and_then(|v| v.as_table()) {
            names.extend(t.keys().map(|k| k.replace('-', "_")));
        }
    }
    names
}

/// The file of module `a::b` under `src/` (`src/a/b.rs` or `src/a/b/mod.rs`), if any.
fn module_file(root: &Path, module: &[&str]) -> Option<PathBuf> {
    let base = root.join("src").join(module.join("/"));
    [base.with_extension("rs"), base.join("mod.rs")]
        .into_iter()
        .find(|f| f.is_file())
}

/// What is wrong with a code span that is a path (`store::index`, `ops::claim::claim_at`,
/// `crate::ops::Observer`), or None when it is right or no path. Its leading lower-case
/// names must be modules of the crate, but the last, which may instead be an item its
/// module defines or brings in with `use`; a path that starts at the standard library or a
/// dependency is not elench's to check.
fn module_path_problem(root: &Path, outside: &BTreeSet<String>, span: &str) -> Option<String> {
    let path = Regex::new(r"^[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)+")
        .unwrap()
        .find(span)?
        .as_str();
    let mut names: Vec<&str> = path.split("::").collect();
    if matches!(names[0], "crate" | "elench") {
        names.remove(0);
    } else if module_file(root, &names[..1]).is_none() {
        return (!outside.contains(names[0]) && names[0].starts_with(char::is_lowercase))
            .then(|| format!("`{path}`: `{}` is no module of elench's", names[0]));
    }
    let lower = names
        .iter()
        .take_while(|n| n.starts_with(|c: char| c.is_lowercase() || c == '_'))
        .count();
    for k in 1..=lower {
        if module_file(root, &names[..k]).is_some() {
            continue;
        }
        let item = names[k - 1];
        let parent = module_file(root, &names[..k - 1]);
        let defined = k == lower
            && parent.is_some_and(|f| {
                let text = read(&f);
                let def = Regex::new(&format!(
                    r"(?m)\b(?:fn|mod|static|macro_rules!)\s+{item}\b|^\s*(?:pub(?:\([a-z]+\))?\s+)?use\s[^;]*\b{item}\b"
                ))
                .unwrap();
                def.is_match(&text)
            });
        if !defined {
            return Some(format!(
                "`{path}`: no module `{}` (src/{}.rs or src/{}/mod.rs){}",
                names[..k].join("::"),
                names[..k].join("/"),
                names[..k].join("/"),
                if k == lower {
                    ", nor an item of that name in its parent"
                } else {
                    ""
                }
            ));
        }
    }
    None
}

/// The pieces a reader takes in at once: each paragraph, list item and table cell outside
/// fenced blocks, with the line it starts on.
fn pieces(markdown: &str) -> Vec<(usize, String)> {
    let list_item = Regex::new(r"^\s*(?:[-*+]|\d+\.)\s").unwrap();
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut open = false;
    let mut fenced = false;
    for (n, line) in markdown.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            open = false;
            continue;
        }
        let trimmed = line.trim();
        if fenced || trimmed.is_empty() || trimmed.starts_with('#') {
            open = false;
            continue;
        }
        if trimmed.starts_with('|') {
            // Cells split at `|` outside code spans.
            let mut cell = String::new();
            let mut in_code = false;
            for ch in trimmed.trim_matches('|').chars() {
                match ch {
                    '`' => {
                        in_code = !in_code;
                        cell.push(ch);
                    }
                    '|' if !in_code => {
                        out.push((n + 1, std::mem::take(&mut cell).trim().to_owned()))
                    }
                    _ => cell.push(ch),
                }
            }
            out.push((n + 1, cell.trim().to_owned()));
            open = false;
            continue;
        }
        match out.last_mut() {
            Some((_, text)) if open && !list_item.is_match(line) => {
                text.push(' ');
                text.push_str(trimmed);
            }
            _ => out.push((n + 1, trimmed.to_owned())),
        }
        open = true;
    }
    out
}

/// What is wrong with a code map: the paths and module paths it names that do not exist,
/// and the pieces longer than [`MAP_PIECE_MAX`].
fn map_problems(root: &Path, markdown: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for (line, path) in named_paths(markdown) {
        if !path_exists(root, &path) {
            problems.push(format!("line {line}: {path} does not exist"));
        }
    }
    let outside = outside_crates(root);
    for (line, span) in code_spans(markdown) {
        if let Some(p) = module_path_problem(root, &outside, &span) {
            problems.push(format!("line {line}: {p}"));
        }
    }
    for (line, piece) in pieces(markdown) {
        let chars = piece.chars().count();
        if chars > MAP_PIECE_MAX {
            let start: String = piece.chars().take(60).collect();
            problems.push(format!(
                "line {line}: {chars} characters (at most {MAP_PIECE_MAX}): {start}…"
            ));
        }
    }
    problems
}

#[test]
fn the_code_map_names_only_what_exists_in_short_pieces() {
    let root = repo();
    let map = read(&root.join("ARCHITECTURE.md"));
    assert!(
        named_paths(&map).len() >= 10 && code_spans(&map).len() >= 10,
        "the map names too few files and modules; the reader is broken"
    );
    let problems = map_problems(&root, &map);
    assert!(
        problems.is_empty(),
        "ARCHITECTURE.md:\n  {}",
        problems.join("\n  ")
    );
}

/// The map's readers find what they must, and only that.
#[test]
fn the_code_map_reader_finds_stale_names_and_long_pieces() {
    let root = repo();
    let long = "word ".repeat(150);
    let map = format!(
        "# Map\n\
         See `store::index`, `store::log::scan`, `crate::ops::Observer`, `serde_json::Value`,\n\
         src/store/log.rs, `tests/it/*_props.rs` and [the manual](docs/SUMMARY.md).\n\
         \n\
         ```\n\
         src/ops/mod.rs src/in/no/diagram.rs `not::checked`\n\
         ```\n\
         \n\
         Gone: src/nowhere.rs, tests/it/none_*.rs, `store::nowhere`, `nomodule::x`,\n\
         `ops::claim::no_such_fn`, `store::log::scan::deeper`.\n\
         \n\
         | a | b |\n\
         |---|---|\n\
         | `x | y` short | {long} |\n\
         \n\
         - item one\n\
         - {long}\n"
    );
    let problems = map_problems(&root, &map);
    let wanted = [
        "line 6: src/in/no/diagram.rs does not exist",
        "src/nowhere.rs does not exist",
        "tests/it/none_*.rs does not exist",
        "no module `store::nowhere`",
        "`nomodule` is no module",
        "no module `ops::claim::no_such_fn`",
        "no module `store::log::scan`",
        "line 14: 749 characters",
        "line 17: 751 characters",
    ];
    for w in wanted {
        assert!(
            problems.iter().any(|p| p.contains(w)),
            "missing {w:?} in {problems:#?}"
        );
    }
    assert_eq!(problems.len(), wanted.len(), "{problems:#?}");
}
