//! The shape of `src/cli`: the module graph has no cycle, and no command module
//! (`src/cli/commands/X.rs`) names another one. What several commands share lives below
//! them (`cli::common`, `cli::values`, `ops`), so a command can change alone.
//!
//! The graph is read from the source: every path a file writes (`use` trees, and paths in
//! code and attributes such as `value_parser = crate::cli::values::seconds`) is resolved
//! against the modules that exist under `src/cli`; comments and string literals are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path, `["cli", "commands", "sign"]`.
type Module = Vec<String>;

fn cli_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            cli_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module a file under `src/` is: `src/cli/mod.rs` is `cli`, `src/cli/output.rs`
/// `cli::output`.
fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" {
        parts.push(stem.to_owned());
    }
    parts
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Path, // `::`
    Open,
    Close,
    Comma,
    Semi,
    Star,
    Other,
}

/// Rust source as tokens, without comments, string or character literals.
fn tokens(src: &str) -> Vec<Token> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == b'r' && matches!(b.get(i + 1), Some(b'#') | Some(b'"')) && {
            let mut j = i + 1;
            while b.get(j) == Some(&b'#') {
                j += 1;
            }
            b.get(j) == Some(&b'"')
        } {
            // A raw string: r#"…"#.
            let mut hashes = 0;
            i += 1;
            while b[i] == b'#' {
                hashes += 1;
                i += 1;
            }
            i += 1;
            loop {
                if i >= b.len() {
                    break;
                }
                if b[i] == b'"' && (0..hashes).all(|k| b.get(i + 1 + k) == Some(&b'#')) {
                    i += 1 + hashes;
                    break;
                }
                i += 1;
            }
            out.push(Token::Other);
        } else if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push(Token::Other);
        } else if c == b'\'' {
            // A character literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if b.get(i + 1) == Some(&b'\\') {
                // Past the backslash and the character it escapes (which may be a quote).
                i += 3;
                while i < b.len() && b[i] != b'\'' {
                    i += 1;
                }
                i += 1;
            } else if b.get(i + 2) == Some(&b'\'') {
                i += 3;
            } else {
                i += 1;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
            }
            out.push(Token::Other);
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Token::Ident(src[start..i].to_owned()));
        } else if c.is_ascii_digit() {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
                i += 1;
            }
            out.push(Token::Other);
        } else {
            i += 1;
            out.push(match c {
                b':' if b.get(i) == Some(&b':') => {
                    i += 1;
                    Token::Path
                }
                b'{' => Token::Open,
                b'}' => Token::Close,
                b',' => Token::Comma,
                b';' => Token::Semi,
                b'*' => Token::Star,
                c if c.is_ascii_whitespace() => continue,
                _ => Token::Other,
            });
        }
    }
    out
}

/// Every path written in `toks` (a `use` tree expanded into its leaves), each with the
/// inline module (`mod tests { … }`) it is written in, relative to the file's module.
fn paths(toks: &[Token]) -> Vec<(Vec<String>, Vec<String>)> {
    let mut out = Vec::new();
    // The inline modules open at each brace depth.
    let mut inline: Vec<(usize, String)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        let here: Vec<String> = inline.iter().map(|(_, m)| m.clone()).collect();
        match &toks[i] {
            Token::Ident(k) if k == "mod" => {
                if let (Some(Token::Ident(name)), Some(Token::Open)) =
                    (toks.get(i + 1), toks.get(i + 2))
                {
                    depth += 1;
                    inline.push((depth, name.clone()));
                    i += 3;
                    continue;
                }
                i += 1;
            }
            Token::Ident(k) if k == "use" => {
                i += 1;
                let mut leaves = Vec::new();
                use_tree(toks, &mut i, Vec::new(), &mut leaves);
                out.extend(leaves.into_iter().map(|p| (here.clone(), p)));
            }
            Token::Ident(first) => {
                let mut path = vec![first.clone()];
                i += 1;
                while let (Some(Token::Path), Some(Token::Ident(next))) =
                    (toks.get(i), toks.get(i + 1))
                {
                    path.push(next.clone());
                    i += 2;
                }
                if path.len() > 1 {
                    out.push((here, path));
                }
            }
            Token::Open => {
                depth += 1;
                i += 1;
            }
            Token::Close => {
                if inline.last().is_some_and(|(d, _)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
                i += 1;
            }
            _ => i += 1,
        }
    }
    out
}

/// Reads one `use` tree from `toks[*i]` on, adding each leaf path (a `*` leaf is its prefix).
fn use_tree(toks: &[Token], i: &mut usize, prefix: Vec<String>, leaves: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    loop {
        match toks.get(*i) {
            Some(Token::Ident(s)) if s == "as" => {
                *i += 2;
            }
            Some(Token::Ident(s)) => {
                path.push(s.clone());
                *i += 1;
            }
            Some(Token::Path) => *i += 1,
            Some(Token::Star) => *i += 1,
            Some(Token::Open) => {
                *i += 1;
                loop {
                    use_tree(toks, i, path.clone(), leaves);
                    match toks.get(*i) {
                        Some(Token::Comma) => *i += 1,
                        Some(Token::Close) => {
                            *i += 1;
                            break;
                        }
                        _ => return,
                    }
                    if toks.get(*i) == Some(&Token::Close) {
                        *i += 1;
                        break;
                    }
                }
                return;
            }
            Some(Token::Semi) => {
                *i += 1;
                leaves.push(path);
                return;
            }
            _ => {
                leaves.push(path);
                return;
            }
        }
    }
}

/// The module under `cli` a path written in `from` names: the longest prefix of the
/// resolved path that is a module, if it is under `cli`.
fn resolve(from: &Module, path: &[String], modules: &BTreeSet<Module>) -> Option<Module> {
    let mut base: Module;
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => {
            base = Vec::new();
            rest = &path[1..];
        }
        Some("super") => {
            base = from.clone();
            while rest.first().map(String::as_str) == Some("super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        Some("self") => {
            base = from.clone();
            rest = &path[1..];
        }
        Some(first) => {
            let mut child = from.clone();
            child.push(first.to_owned());
            if !modules.contains(&child) {
                return None;
            }
            base = from.clone();
        }
        None => return None,
    }
    let mut found = None;
    let mut here = base;
    if modules.contains(&here) {
        found = Some(here.clone());
    }
    for seg in rest {
        here.push(seg.clone());
        if modules.contains(&here) {
            found = Some(here.clone());
        } else {
            break;
        }
    }
    found.filter(|m| m.first().map(String::as_str) == Some("cli"))
}

/// The module graph of `src/cli`: each module and the other modules under `cli` it names.
fn cli_graph() -> BTreeMap<Module, BTreeSet<Module>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    cli_files(&src.join("cli"), &mut files);
    let modules: BTreeSet<Module> = files.iter().map(|f| module_of(&src, f)).collect();
    let mut graph = BTreeMap::new();
    for file in &files {
        let module = module_of(&src, file);
        let text = std::fs::read_to_string(file).unwrap();
        let mut edges = BTreeSet::new();
        for (inline, path) in paths(&tokens(&text)) {
            let mut from = module.clone();
            from.extend(inline);
            // Inside an inline module, paths resolve from it; the known modules are files,
            // so an inline module's own children are none of them.
            let target = if from == module {
                resolve(&module, &path, &modules)
            } else {
                let mut known = modules.clone();
                let mut m = from.clone();
                while m.len() > module.len() {
                    known.insert(m.clone());
                    m.pop();
                }
                resolve(&from, &path, &known).filter(|t| modules.contains(t))
            };
            if let Some(t) = target.filter(|t| *t != module) {
                edges.insert(t);
            }
        }
        graph.insert(module, edges);
    }
    graph
}

fn name(m: &Module) -> String {
    m.join("::")
}

fn is_command(m: &Module) -> bool {
    m.len() == 3 && m[0] == "cli" && m[1] == "commands"
}

#[test]
fn no_command_module_names_another() {
    let graph = cli_graph();
    let mut wrong = Vec::new();
    for (from, to) in &graph {
        if !is_command(from) {
            continue;
        }
        for t in to
            .iter()
            .filter(|t| is_command(t) || (t.len() >= 3 && t[1] == "commands"))
        {
            wrong.push(format!("{} -> {}", name(from), name(t)));
        }
    }
    assert!(
        wrong.is_empty(),
        "command modules naming other command modules (move what they share below them):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_cli_module_graph_has_no_cycle() {
    let graph = cli_graph();
    // Depth-first search; a back edge is a cycle, reported as the path around it.
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let mut mark: BTreeMap<&Module, Mark> = graph.keys().map(|k| (k, Mark::New)).collect();
    let mut cycles = Vec::new();
    for start in graph.keys() {
        if mark[start] != Mark::New {
            continue;
        }
        let mut stack: Vec<(&Module, Vec<&Module>)> = vec![(start, graph[start].iter().collect())];
        mark.insert(start, Mark::Open);
        while let Some((node, pending)) = stack.last_mut() {
            let node = *node;
            match pending.pop() {
                Some(next) => match mark.get(next).copied() {
                    Some(Mark::New) => {
                        mark.insert(next, Mark::Open);
                        stack.push((next, graph[next].iter().collect()));
                    }
                    Some(Mark::Open) => {
                        let at = stack.iter().position(|(m, _)| *m == next).unwrap();
                        let mut ring: Vec<String> =
                            stack[at..].iter().map(|(m, _)| name(m)).collect();
                        ring.push(name(next));
                        cycles.push(ring.join(" -> "));
                    }
                    _ => {}
                },
                None => {
                    mark.insert(node, Mark::Done);
                    stack.pop();
                }
            }
        }
    }
    assert!(
        cycles.is_empty(),
        "import cycles under src/cli:\n{}",
        cycles.join("\n")
    );
}

/// The reader above sees what it must: a known cycle and a known command-to-command edge
/// written the ways the source writes them.
#[test]
fn the_reader_finds_paths_written_every_way() {
    let toks = tokens(
        "use super::{common::{open_store, Page}, trust};\n\
         // use super::commented::out;\n\
         let s = \"super::in_a_string::x\";\n\
         #[arg(value_parser = crate::cli::values::seconds)]\n\
         fn f<'a>(c: char) { let _ = '\\''; super::verify::print(c) }\n\
         mod tests { use super::*; }",
    );
    let found: Vec<Vec<String>> = paths(&toks).into_iter().map(|(_, p)| p).collect();
    let has = |p: &str| found.iter().any(|f| f.join("::") == p);
    assert!(has("super::common::open_store"), "{found:?}");
    assert!(has("super::common::Page"), "{found:?}");
    assert!(has("super::trust"), "{found:?}");
    assert!(has("crate::cli::values::seconds"), "{found:?}");
    assert!(has("super::verify::print"), "{found:?}");
    assert!(!found.iter().any(|f| f.contains(&"commented".to_owned())));
    assert!(!found.iter().any(|f| f.contains(&"in_a_string".to_owned())));
    let modules: BTreeSet<Module> = [
        vec!["cli"],
        vec!["cli", "commands"],
        vec!["cli", "commands", "sign"],
        vec!["cli", "commands", "verify"],
        vec!["cli", "values"],
    ]
    .into_iter()
    .map(|m| m.into_iter().map(str::to_owned).collect())
    .collect();
    let sign: Module = vec!["cli".into(), "commands".into(), "sign".into()];
    let p = |s: &str| s.split("::").map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(
        resolve(&sign, &p("super::verify::print"), &modules),
        Some(p("cli::commands::verify"))
    );
    assert_eq!(
        resolve(&sign, &p("crate::cli::values::seconds"), &modules),
        Some(p("cli::values"))
    );
    assert_eq!(
        resolve(&sign, &p("crate::cli::Globals"), &modules),
        Some(p("cli"))
    );
    assert_eq!(resolve(&sign, &p("crate::ops::Failure"), &modules), None);
    assert_eq!(resolve(&sign, &p("serde_json::json"), &modules), None);
}

/// The library below the front ends never reaches up into one: `ops` (and everything else
/// outside `src/cli`) names no `cli` module, so the MCP server and any later front end get
/// the same operations without the CLI's process-wide state.
#[test]
fn nothing_outside_the_cli_names_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    cli_files(&src, &mut files);
    let mut wrong = Vec::new();
    for file in files {
        let module = module_of(&src, &file);
        // The CLI itself, and the binary that only calls it, may.
        if module.first().map(String::as_str) == Some("cli") || module == ["main"] {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (_, path) in paths(&tokens(&text)) {
            let names_cli = matches!(
                path.iter().map(String::as_str).take(2).collect::<Vec<_>>()[..],
                ["crate", "cli"] | ["elench", "cli"]
            ) || (path.first().map(String::as_str) == Some("super")
                && module.len() == 1
                && path.get(1).map(String::as_str) == Some("cli"));
            if names_cli {
                wrong.push(format!("{}: {}", name(&module), path.join("::")));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "library modules naming the CLI (carry what they need in their own types):\n{}",
        wrong.join("\n")
    );
}

/// The `static` items of a Rust source that can change after they are made: `static mut`,
/// anything declared in `thread_local!`, and statics of a type (or made by an initializer)
/// with interior mutability (locks, cells, atomics, and the write-once `OnceLock`/`LazyLock`
/// family). Each as `NAME`; plain constants (`static X: &str = "…"`) are not listed.
fn mutable_statics(src: &str) -> Vec<String> {
    const INTERIOR: &[&str] = &[
        "Mutex",
        "RwLock",
        "Condvar",
        "Cell",
        "RefCell",
        "UnsafeCell",
        "OnceCell",
        "OnceLock",
        "LazyCell",
        "LazyLock",
        "Once",
    ];
    let toks = tokens(src);
    let mut found = Vec::new();
    let mut thread_local_depth: Option<usize> = None;
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            // `thread_local! { … }`: every static inside is per thread and mutable.
            Token::Ident(k)
                if k == "thread_local"
                    && toks.get(i + 1) == Some(&Token::Other)
                    && toks.get(i + 2) == Some(&Token::Open) =>
            {
                thread_local_depth = Some(depth + 1);
            }
            Token::Ident(k) if k == "static" => {
                let mut j = i + 1;
                let is_mut = toks.get(j) == Some(&Token::Ident("mut".into()));
                if is_mut {
                    j += 1;
                }
                let Some(Token::Ident(name)) = toks.get(j) else {
                    i += 1;
                    continue;
                };
                // The type and the initializer, to the `;` (or the `}` closing a macro body).
                let mut inner = 0usize;
                let mut interior = false;
                for t in &toks[j + 1..] {
                    match t {
                        Token::Semi if inner == 0 => break,
                        Token::Open => inner += 1,
                        Token::Close if inner == 0 => break,
                        Token::Close => inner -= 1,
                        Token::Ident(id) => {
                            interior |= INTERIOR.contains(&id.as_str()) || id.starts_with("Atomic")
                        }
                        _ => {}
                    }
                }
                if is_mut || interior || thread_local_depth.is_some() {
                    found.push(name.clone());
                }
            }
            Token::Open => depth += 1,
            Token::Close => {
                if thread_local_depth == Some(depth) {
                    thread_local_depth = None;
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// Library code (everything under `src/` but the front ends, `src/cli`, `src/mcp`, and
/// `src/main.rs`) keeps no process-wide mutable state: what an operation needs it is given
/// (`ops::Context`: the observer, the reaper of its children and scratch directories, the
/// LMDB environments of its stores), so
/// two front ends, or two operations of one, never share state by accident.
#[test]
fn library_code_has_no_process_wide_mutable_static() {
    // (file under src/, static; None: every static of the file), and why it may stay.
    let allowed: &[(&str, Option<&str>, &str)] = &[
        // Per thread, not per process: LMDB binds a read transaction to the thread that
        // began it, so a command's pinned snapshot, and the index whose transaction this
        // thread began last (which `?` on an index error marks damaged), are this thread's.
        (
            "store/index/reader.rs",
            Some("PINNED"),
            "this thread's pinned read transaction",
        ),
        (
            "store/index/fault.rs",
            Some("ENTERED"),
            "the index this thread's last transaction read",
        ),
        // Written once, on first use, with a value computed from what is compiled in (the
        // claim schema, the report schemas) or fixed for the life of the machine (the boot
        // id): a constant computed lazily, the same for every caller, that carries nothing
        // from one operation to another.
        (
            "claim/schema.rs",
            Some("VALIDATOR"),
            "compiled claim schema",
        ),
        (
            "conformance/report.rs",
            Some("V"),
            "compiled report schemas",
        ),
        ("store/index/unsynced.rs", Some("BOOT"), "this boot's id"),
    ];
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    cli_files(&src, &mut files);
    let mut wrong = Vec::new();
    let mut used = BTreeSet::new();
    for file in files {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if rel.starts_with("cli/") || rel.starts_with("mcp/") || rel == "main.rs" {
            continue;
        }
        for name in mutable_statics(&std::fs::read_to_string(&file).unwrap()) {
            match allowed
                .iter()
                .position(|(f, n, _)| *f == rel && n.is_none_or(|n| n == name))
            {
                Some(k) => {
                    used.insert(k);
                }
                None => wrong.push(format!("src/{rel}: static {name}")),
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "process-wide mutable state in library code (give it to the operations through \
         ops::Context, owned by the front end):\n{}",
        wrong.join("\n")
    );
    // An entry that matches nothing is stale: it would let a new static in unseen.
    let stale: Vec<_> = (0..allowed.len())
        .filter(|k| !used.contains(k))
        .map(|k| format!("src/{} {:?}", allowed[k].0, allowed[k].1))
        .collect();
    assert!(stale.is_empty(), "allowed but gone, remove: {stale:?}");
}

/// The reader above finds each kind of mutable static, and only those.
#[test]
fn the_static_reader_finds_each_kind_and_only_those() {
    let found = mutable_statics(
        "static NAMES: [&str; 2] = [\"a\", \"b\"];\n\
         fn f(s: &'static str) -> &'static str { s }\n\
         // static COMMENTED: Mutex<u8> = Mutex::new(0);\n\
         const TEXT: &str = \"static IN_A_STRING: AtomicU8\";\n\
         static mut RAW: u8 = 0;\n\
         static LIVE: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());\n\
         fn g() { static N: AtomicU64 = AtomicU64::new(0); }\n\
         static CACHE: OnceLock<String> = OnceLock::new();\n\
         thread_local! { static PER_THREAD: Vec<u8> = Vec::new() }\n\
         static AFTER: &str = \"x\";",
    );
    assert_eq!(found, ["RAW", "LIVE", "N", "CACHE", "PER_THREAD"]);
}

/// Argument checks live in the arguments' clap value parsers (`cli::values`), and a
/// refused line is walked once (`cli::args`): no command has a function of argument checks
/// of its own beside its definition, and nothing under `src/cli` parses the line again in a
/// loop to find more errors (the repair loop this replaced).
#[test]
fn arguments_are_checked_by_their_parsers_and_a_line_is_parsed_without_a_loop() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    cli_files(&src.join("cli"), &mut files);
    // The names the per-command checks had, and the repair loop's.
    let banned = [
        "argument_errors",
        "command_errors",
        "claim_id_errors",
        "require_claim_ids",
        "keyid_error",
        "name_error",
        "MAX_ROUNDS",
    ];
    let parses = [
        "try_parse_from",
        "try_get_matches_from",
        "try_parse",
        "parse_from",
    ];
    let loops = ["loop", "while", "for", "for_each"];
    let mut wrong = Vec::new();
    let mut calls = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        // Unit tests may parse lines as they like.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let toks = tokens(code);
        let module = name(&module_of(&src, &file));
        for t in &toks {
            if let Token::Ident(id) = t {
                if banned.contains(&id.as_str()) {
                    wrong.push(format!("{module}: `{id}`"));
                }
            }
        }
        // Each function that parses a line: no loop in it.
        let mut i = 0;
        while i < toks.len() {
            if toks[i] != Token::Ident("fn".into()) {
                i += 1;
                continue;
            }
            let fname = match toks.get(i + 1) {
                Some(Token::Ident(n)) => n.clone(),
                _ => String::new(),
            };
            let Some(open) = (i..toks.len()).find(|&j| toks[j] == Token::Open) else {
                break;
            };
            let mut depth = 0;
            let mut end = open;
            for (j, t) in toks.iter().enumerate().skip(open) {
                match t {
                    Token::Open => depth += 1,
                    Token::Close => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    end = j;
                    break;
                }
            }
            let body = &toks[open..=end];
            let idents: Vec<&str> = body
                .iter()
                .filter_map(|t| match t {
                    Token::Ident(s) => Some(s.as_str()),
                    _ => None,
                })
                .collect();
            let n = idents.iter().filter(|s| parses.contains(s)).count();
            calls += n;
            if n > 0 {
                if let Some(l) = idents.iter().find(|s| loops.contains(s)) {
                    wrong.push(format!(
                        "{module}::{fname}: parses the line with `{l}` in it"
                    ));
                }
            }
            i = end + 1;
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // The run's parse, clap's one look at a refused line without its refused tokens, the
    // fallback, and one value judged by its own parser.
    assert!(
        calls <= 4,
        "{calls} places parse a command line under src/cli"
    );
}
