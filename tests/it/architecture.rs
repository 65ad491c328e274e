//! The shape of the crate's source: its module graph has no cycle, no module names one on a
//! floor above its own (the floors are `FLOORS`, bottom first), and no command module
//! (`src/cli/commands/X.rs`) names another one. What several commands share lives below
//! them (`cli::common`, `cli::values`, `ops`), so a command can change alone.
//!
//! The graph is read from the source: every path a file writes (`use` trees, and paths in
//! code and attributes such as `value_parser = crate::cli::values::seconds`) is resolved to
//! the module that defines what it names, following the names `use` binds (`use
//! crate::ops; ops::tree::x`, `use super::render as r`), and what a module re-exports
//! (`crate::ops::Observer` is `ops::observer`'s), globs included. Comments, string
//! literals and `#[cfg(test)]` items are left out: the graph is the production code's.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path, `["cli", "commands", "sign"]`; the crate's root (`lib.rs`) is `[]`.
type Module = Vec<String>;

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rs_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module a file under `src/` is: `src/cli/mod.rs` is `cli`, `src/cli/output.rs`
/// `cli::output`, `src/lib.rs` the root, `src/main.rs` (the binary, a crate of its own)
/// `main`.
fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && !(parts.is_empty() && stem == "lib") {
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

/// One name a `use` binds.
#[derive(Debug, Clone)]
struct Use {
    /// The inline module it is written in, relative to the file's module.
    scope: Vec<String>,
    /// The name it binds (`as` included); `None` for a glob (`use x::*`).
    name: Option<String>,
    /// The path as written (a glob's is its prefix, `a::{self}`'s is `a`).
    path: Vec<String>,
}

/// What one file says: the paths it writes, each with the inline module it is written in
/// (relative to the file's module; a `use` tree's leaves among them), the names its `use`s
/// bind, the names of the items it defines, and the `#[cfg(test)] mod NAME;` files it
/// declares.
#[derive(Debug, Default)]
struct Source {
    paths: Vec<(Vec<String>, Vec<String>)>,
    uses: Vec<Use>,
    items: BTreeSet<String>,
    test_modules: Vec<String>,
}

/// The end of the item that starts at `toks[i]`: the `;` that ends it or the `}` that closes
/// its first block, whichever comes first at its own depth.
fn item_end(toks: &[Token], i: usize) -> usize {
    let mut depth = 0usize;
    for (j, t) in toks.iter().enumerate().skip(i) {
        match t {
            Token::Semi if depth == 0 => return j,
            Token::Open => depth += 1,
            Token::Close => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return j;
                }
            }
            _ => {}
        }
    }
    toks.len()
}

/// Reads a file's tokens (see [`Source`]).
fn read_source(toks: &[Token]) -> Source {
    const ITEMS: &[&str] = &[
        "fn",
        "struct",
        "enum",
        "type",
        "const",
        "static",
        "trait",
        "union",
        "mod",
        "macro_rules",
    ];
    let mut out = Source::default();
    // The inline modules open at each brace depth.
    let mut inline: Vec<(usize, String)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        let here: Vec<String> = inline.iter().map(|(_, m)| m.clone()).collect();
        match &toks[i] {
            // `#[cfg(test)]`: the item it is on is test code, left out.
            Token::Ident(k)
                if k == "cfg"
                    && toks.get(i + 1) == Some(&Token::Other)
                    && toks.get(i + 2) == Some(&Token::Ident("test".into()))
                    && toks.get(i + 3) == Some(&Token::Other) =>
            {
                let end = item_end(toks, i + 4);
                let item = &toks[i + 4..end.min(toks.len())];
                if let Some(p) = item.iter().position(|t| *t == Token::Ident("mod".into())) {
                    if let Some(Token::Ident(name)) = item.get(p + 1) {
                        if end < toks.len() && toks[end] == Token::Semi {
                            out.test_modules.push(name.clone());
                        }
                    }
                }
                i = end + 1;
            }
            Token::Ident(k) if ITEMS.contains(&k.as_str()) => {
                let mut j = i + 1;
                if k == "macro_rules" {
                    j += 1;
                }
                if let Some(Token::Ident(name)) = toks.get(j) {
                    if here.is_empty() {
                        out.items.insert(name.clone());
                    }
                    if k == "mod" && toks.get(j + 1) == Some(&Token::Open) {
                        depth += 1;
                        inline.push((depth, name.clone()));
                        i = j + 2;
                        continue;
                    }
                }
                i += 1;
            }
            Token::Ident(k) if k == "use" => {
                i += 1;
                let mut leaves = Vec::new();
                use_tree(toks, &mut i, Vec::new(), None, &mut leaves);
                for (path, name) in leaves {
                    out.paths.push((here.clone(), path.clone()));
                    out.uses.push(Use {
                        scope: here.clone(),
                        name,
                        path,
                    });
                }
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
                    out.paths.push((here, path));
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

/// Every path written in `toks` (a `use` tree expanded into its leaves), each with the
/// inline module it is written in.
fn paths(toks: &[Token]) -> Vec<(Vec<String>, Vec<String>)> {
    read_source(toks).paths
}

/// Reads one `use` tree from `toks[*i]` on, adding each leaf: its path (a `*` leaf's is its
/// prefix, a `self` leaf's its prefix) and the name it binds (`None` for a glob).
fn use_tree(
    toks: &[Token],
    i: &mut usize,
    prefix: Vec<String>,
    mut alias: Option<String>,
    leaves: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let mut path = prefix;
    let mut glob = false;
    let leaf = |path: Vec<String>, alias: Option<String>, glob: bool| {
        let name = if glob {
            None
        } else {
            alias.or_else(|| path.last().cloned())
        };
        (path, name)
    };
    loop {
        match toks.get(*i) {
            Some(Token::Ident(s)) if s == "as" => {
                if let Some(Token::Ident(a)) = toks.get(*i + 1) {
                    alias = Some(a.clone());
                }
                *i += 2;
            }
            Some(Token::Ident(s)) if s == "self" && !path.is_empty() => *i += 1,
            Some(Token::Ident(s)) => {
                path.push(s.clone());
                *i += 1;
            }
            Some(Token::Path) => *i += 1,
            Some(Token::Star) => {
                glob = true;
                *i += 1;
            }
            Some(Token::Open) => {
                *i += 1;
                loop {
                    use_tree(toks, i, path.clone(), None, leaves);
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
                if toks.get(*i) == Some(&Token::Semi) {
                    *i += 1;
                }
                return;
            }
            Some(Token::Semi) => {
                *i += 1;
                leaves.push(leaf(path, alias, glob));
                return;
            }
            _ => {
                leaves.push(leaf(path, alias, glob));
                return;
            }
        }
    }
}

/// The crate's source, read: each file's module and what it says.
struct Crate {
    sources: BTreeMap<Module, Source>,
}

/// How many names a resolution follows before it gives up (a `use` that leads back to
/// itself is a compile error, but the reader must still end).
const MAX_HOPS: usize = 32;

impl Crate {
    /// Every file of the library crate under `src/` (`main.rs`, the binary, is a crate of its
    /// own), and the files `#[path]` attributes add (the migrations); test-only files left out.
    fn load() -> Crate {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let src = root.join("src");
        let mut files = Vec::new();
        rs_files(&src, &mut files);
        let mut sources = BTreeMap::new();
        let mut extra = Vec::new();
        for file in &files {
            let module = module_of(&src, file);
            if module == ["main"] {
                continue;
            }
            let text = std::fs::read_to_string(file).unwrap();
            // `#[path = "…"] mod NAME;`: a module whose file lies elsewhere.
            let lines: Vec<&str> = text.lines().collect();
            for (k, line) in lines.iter().enumerate() {
                let Some(rest) = line.trim().strip_prefix("#[path = \"") else {
                    continue;
                };
                let (Some(rel), Some(next)) = (rest.strip_suffix("\"]"), lines.get(k + 1)) else {
                    continue;
                };
                let name = next.trim().trim_start_matches("mod ").trim_end_matches(';');
                let mut m = module.clone();
                m.push(name.to_owned());
                extra.push((m, file.parent().unwrap().join(rel)));
            }
            sources.insert(module, read_source(&tokens(&text)));
        }
        for (module, file) in extra {
            let text = std::fs::read_to_string(&file).unwrap();
            sources.insert(module, read_source(&tokens(&text)));
        }
        // Files only tests compile.
        let tests: Vec<Module> = sources
            .iter()
            .flat_map(|(m, s)| {
                s.test_modules.iter().map(move |t| {
                    let mut m = m.clone();
                    m.push(t.clone());
                    m
                })
            })
            .collect();
        sources.retain(|m, _| !tests.iter().any(|t| m.starts_with(t)));
        Crate { sources }
    }

    fn is_module(&self, m: &[String]) -> bool {
        self.sources.contains_key(m)
    }

    fn defines(&self, m: &[String], name: &str) -> bool {
        self.sources.get(m).is_some_and(|s| s.items.contains(name))
    }

    /// The `use` of `file`'s inline module `scope` that binds `name`.
    fn binding(&self, file: &[String], scope: &[String], name: &str) -> Option<&Use> {
        self.sources
            .get(file)?
            .uses
            .iter()
            .find(|u| u.scope == scope && u.name.as_deref() == Some(name))
    }

    fn globs<'a>(&'a self, file: &[String], scope: &'a [String]) -> Vec<&'a Use> {
        self.sources
            .get(file)
            .map(|s| {
                s.uses
                    .iter()
                    .filter(|u| u.scope == scope && u.name.is_none())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether module `m` has something called `name`: a child module, an item, or a name a
    /// `use` of it binds.
    fn has(&self, m: &[String], name: &str) -> bool {
        let mut child = m.to_vec();
        child.push(name.to_owned());
        self.is_module(&child) || self.defines(m, name) || self.binding(m, &[], name).is_some()
    }

    /// The path from the crate's root that `path`, written in `file`'s inline module `scope`,
    /// stands for; `None` for a path outside the crate (the standard library, a dependency)
    /// or one that starts at a name of this file's own (an item, a variable, `Self`).
    fn absolute(
        &self,
        file: &[String],
        scope: &[String],
        path: &[String],
        hops: usize,
    ) -> Option<Vec<String>> {
        if hops > MAX_HOPS {
            return None;
        }
        let mut from = file.to_vec();
        from.extend(scope.iter().cloned());
        let first = path.first()?.as_str();
        match first {
            // `elench::…` is the library as a crate beside it (the binary's modules) names it.
            "crate" | "elench" => Some(path[1..].to_vec()),
            "super" => {
                let mut rest = path;
                while rest.first().map(String::as_str) == Some("super") {
                    from.pop()?;
                    rest = &rest[1..];
                }
                from.extend(rest.iter().cloned());
                Some(from)
            }
            "self" => {
                from.extend(path[1..].iter().cloned());
                Some(from)
            }
            _ => {
                if let Some(u) = self.binding(file, scope, first) {
                    let mut abs = self.absolute(file, &u.scope, &u.path, hops + 1)?;
                    abs.extend(path[1..].iter().cloned());
                    return Some(abs);
                }
                let mut child = from.clone();
                child.push(first.to_owned());
                if self.is_module(&child) {
                    child.extend(path[1..].iter().cloned());
                    return Some(child);
                }
                if scope.is_empty() && self.defines(file, first) {
                    return None;
                }
                for g in self.globs(file, scope) {
                    // A glob whose own path starts with the name sought could only be
                    // followed through the globs again (binding and module failed above):
                    // circular, and with two such globs in a file the walk would branch
                    // at every hop.
                    if g.path.first().map(String::as_str) == Some(first) {
                        continue;
                    }
                    let Some(mut prefix) = self.absolute(file, &g.scope, &g.path, hops + 1) else {
                        continue;
                    };
                    if self.is_module(&prefix) && self.has(&prefix, first) {
                        prefix.extend(path.iter().cloned());
                        return Some(prefix);
                    }
                }
                None
            }
        }
    }

    /// The module that defines what the crate path `abs` names: its longest prefix that is
    /// a module, or, where the next name is one that module brings in with a `use` (a
    /// re-export), where that `use` leads.
    fn defining(&self, abs: &[String], hops: usize) -> Module {
        self.defining_item(abs, hops).0
    }

    /// [`Crate::defining`], and the name in that module the path goes on to (the item it
    /// names there), if any.
    fn defining_item(&self, abs: &[String], hops: usize) -> (Module, Option<String>) {
        let mut here: Module = Vec::new();
        let mut k = 0;
        while k < abs.len() {
            let mut next = here.clone();
            next.push(abs[k].clone());
            if !self.is_module(&next) {
                break;
            }
            here = next;
            k += 1;
        }
        let item = abs.get(k).cloned();
        if k == abs.len() || hops > MAX_HOPS || self.defines(&here, &abs[k]) {
            return (here, item);
        }
        let name = abs[k].as_str();
        let onward = |mut target: Vec<String>| {
            target.extend(abs[k + 1..].iter().cloned());
            self.defining_item(&target, hops + 1)
        };
        if let Some(u) = self.binding(&here, &[], name) {
            if let Some(target) = self.absolute(&here, &u.scope, &u.path, hops + 1) {
                return onward(target);
            }
            return (here, item);
        }
        for g in self.globs(&here, &[]) {
            let Some(mut prefix) = self.absolute(&here, &g.scope, &g.path, hops + 1) else {
                continue;
            };
            if self.is_module(&prefix) && self.has(&prefix, name) {
                prefix.push(name.to_owned());
                return onward(prefix);
            }
        }
        (here, item)
    }

    /// The module `path`, written in `file`'s inline module `scope`, names, if in the crate.
    fn resolve(&self, file: &[String], scope: &[String], path: &[String]) -> Option<Module> {
        let abs = self.absolute(file, scope, path, 0)?;
        Some(self.defining(&abs, 0))
    }

    /// The module graph: each module and the other modules it names (the root, which only
    /// declares modules, left out).
    fn graph(&self) -> BTreeMap<Module, BTreeSet<Module>> {
        let mut graph = BTreeMap::new();
        for (module, source) in &self.sources {
            let mut edges = BTreeSet::new();
            for (scope, path) in &source.paths {
                if let Some(t) = self.resolve(module, scope, path) {
                    if t != *module && !t.is_empty() && !t.starts_with(module) {
                        edges.insert(t);
                    }
                }
            }
            graph.insert(module.clone(), edges);
        }
        graph
    }
}

fn name(m: &Module) -> String {
    if m.is_empty() {
        "crate".to_owned()
    } else {
        m.join("::")
    }
}

fn is_command(m: &Module) -> bool {
    m.len() == 3 && m[0] == "cli" && m[1] == "commands"
}

/// The crate's top-level modules, bottom floor first: a module names only modules on its
/// own floor or below. Modules on one floor (`[a, b]`) do not name each other at all.
const FLOORS: &[&[&str]] = &[
    &["error"],
    &[
        "atomic_file",
        "child_env",
        "json",
        "observer",
        "reaper",
        "witness",
    ],
    &["bytecap", "jcs"],
    &["scratch"],
    &["envelope"],
    &["claim"],
    &["keys"],
    &["ingest"],
    &["store"],
    &["trust"],
    &["fold"],
    &["graph"],
    &["tree"],
    &["anchor"],
    &["eval"],
    &["sync"],
    &["gate"],
    &["conformance"],
    &["ops"],
    &["mcp"],
    &["cli"],
];

#[test]
fn no_command_module_names_another() {
    let graph = Crate::load().graph();
    let mut wrong = Vec::new();
    for (from, to) in &graph {
        if !is_command(from) {
            continue;
        }
        for t in to
            .iter()
            .filter(|t| is_command(t) || (t.len() >= 3 && t[0] == "cli" && t[1] == "commands"))
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

/// Every cycle of `graph` a depth-first search meets, each as the path around it.
fn cycles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<String> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let mut mark: BTreeMap<&Module, Mark> = graph.keys().map(|k| (k, Mark::New)).collect();
    let mut found = Vec::new();
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
                        found.push(ring.join(" -> "));
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
    found
}

#[test]
fn the_crate_module_graph_has_no_cycle() {
    let found = cycles(&Crate::load().graph());
    assert!(
        found.is_empty(),
        "import cycles under src:\n{}",
        found.join("\n")
    );
}

/// Dependencies go one way: down the floors of `FLOORS`, which lists every top-level module.
#[test]
fn no_module_names_one_above_it() {
    let krate = Crate::load();
    let floor = |m: &Module| {
        FLOORS
            .iter()
            .position(|f| m.first().is_some_and(|top| f.contains(&top.as_str())))
    };
    let mut wrong = Vec::new();
    for m in krate.sources.keys().filter(|m| m.len() == 1) {
        if floor(m).is_none() {
            wrong.push(format!("{} is on no floor: add it to FLOORS", name(m)));
        }
    }
    for (from, to) in krate.graph() {
        let (Some(a), Some(top)) = (floor(&from), from.first()) else {
            continue;
        };
        for t in to {
            let (Some(b), Some(other)) = (floor(&t), t.first()) else {
                continue;
            };
            if b > a || (b == a && top != other) {
                wrong.push(format!("{} -> {}", name(&from), name(&t)));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "modules naming one on a floor above theirs (or beside it):\n{}",
        wrong.join("\n")
    );
}

/// The reader above sees what it must: paths written every way the source writes them, and
/// the names `use` binds followed to where they lead.
#[test]
fn the_reader_finds_paths_written_every_way() {
    let toks = tokens(
        "use super::{common::{open_store, Page}, trust};\n\
         // use super::commented::out;\n\
         let s = \"super::in_a_string::x\";\n\
         #[arg(value_parser = crate::cli::values::seconds)]\n\
         fn f<'a>(c: char) { let _ = '\\''; super::verify::print(c) }\n\
         #[cfg(test)]\n\
         mod tests { use super::only_in_tests; }",
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
    assert!(!found
        .iter()
        .any(|f| f.contains(&"only_in_tests".to_owned())));

    // A small crate: `ops` re-exports its observer; `cli::commands::sign` reaches modules
    // through names it bound.
    let file = |text: &str| read_source(&tokens(text));
    let p = |s: &str| -> Vec<String> { s.split("::").map(str::to_owned).collect() };
    let mut sources = BTreeMap::new();
    sources.insert(
        p("ops"),
        file("pub mod observer; pub use observer::Observer;"),
    );
    sources.insert(p("ops::observer"), file("pub trait Observer {}"));
    sources.insert(p("ops::tree"), file("pub fn tree_dir() {}"));
    sources.insert(p("cli"), file("pub mod commands; use render::Picture;"));
    sources.insert(
        p("cli::render"),
        file("pub struct Picture; pub fn draw() {}"),
    );
    sources.insert(p("cli::values"), file("pub fn seconds() {}"));
    sources.insert(p("cli::failure"), file("pub use crate::ops::tree::*;"));
    sources.insert(p("cli::commands"), file("pub mod sign; pub mod verify;"));
    sources.insert(p("cli::commands::verify"), file("pub fn print() {}"));
    sources.insert(
        p("cli::commands::sign"),
        file(
            "use crate::ops;\n\
             use crate::cli::render as r;\n\
             use super::*;\n\
             use crate::cli::{self as front};\n\
             struct Local;\n\
             fn f() { ops::tree::tree_dir(); r::draw(); verify::print(); Local::new(); \
             front::values::seconds(); serde_json::json(); }",
        ),
    );
    let krate = Crate { sources };
    let sign = p("cli::commands::sign");
    let resolve = |s: &str| krate.resolve(&sign, &[], &p(s));
    assert_eq!(resolve("ops::tree::tree_dir"), Some(p("ops::tree")));
    assert_eq!(resolve("r::draw"), Some(p("cli::render")));
    assert_eq!(resolve("verify::print"), Some(p("cli::commands::verify")));
    assert_eq!(resolve("front::values::seconds"), Some(p("cli::values")));
    assert_eq!(resolve("crate::ops::Observer"), Some(p("ops::observer")));
    assert_eq!(resolve("crate::cli::Picture"), Some(p("cli::render")));
    assert_eq!(
        resolve("crate::cli::failure::tree_dir"),
        Some(p("ops::tree"))
    );
    assert_eq!(
        resolve("super::verify::print"),
        Some(p("cli::commands::verify"))
    );
    assert_eq!(resolve("Local::new"), None);
    assert_eq!(resolve("serde_json::json"), None);
    let graph = krate.graph();
    assert!(graph[&sign].contains(&p("ops::tree")), "{graph:?}");
    assert!(graph[&sign].contains(&p("cli::render")), "{graph:?}");
    // A cycle through aliases is found.
    let mut ring = BTreeMap::new();
    ring.insert(p("a"), BTreeSet::from([p("b")]));
    ring.insert(p("b"), BTreeSet::from([p("a")]));
    assert_eq!(cycles(&ring).len(), 1);
}

/// The documents (`src/cli/render`) are pure functions of what the operations return: they
/// open no store and fold nothing, so a document shows the operation's one snapshot and
/// every front end can have the same data. Of the store, the fold and the graph they may
/// name only the plain values the operations hand out (a status, a blast radius), and
/// nothing of the CLI that reaches a store (`common`, `globals`).
#[test]
fn the_renderers_read_no_store() {
    const VALUES: &[&str] = &["Status", "Blast"];
    let krate = Crate::load();
    let mut wrong = Vec::new();
    for (module, source) in &krate.sources {
        if !module.starts_with(&["cli".to_owned(), "render".to_owned()]) {
            continue;
        }
        for (scope, path) in &source.paths {
            let Some(abs) = krate.absolute(module, scope, path, 0) else {
                continue;
            };
            let (target, item) = krate.defining_item(&abs, 0);
            let top = target.first().map(String::as_str);
            let bad = match top {
                Some("store") => true,
                Some("fold" | "graph") => !item.as_deref().is_some_and(|i| VALUES.contains(&i)),
                Some("cli") => matches!(
                    target.get(1).map(String::as_str),
                    Some("common" | "globals")
                ),
                _ => false,
            };
            if bad {
                wrong.push(format!("{}: {}", name(module), path.join("::")));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "renderers reaching the store (have the operation return what the document needs):\n{}",
        wrong.join("\n")
    );
}

/// The library below the front ends never reaches up into one: `ops` (and everything else
/// outside `src/cli`) names no `cli` module, so the MCP server and any later front end get
/// the same operations without the CLI's process-wide state.
#[test]
fn nothing_outside_the_cli_names_it() {
    let krate = Crate::load();
    let mut wrong = Vec::new();
    for (module, to) in krate.graph() {
        if module.first().map(String::as_str) == Some("cli") {
            continue;
        }
        for t in to
            .iter()
            .filter(|t| t.first().map(String::as_str) == Some("cli"))
        {
            wrong.push(format!("{} -> {}", name(&module), name(t)));
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
    rs_files(&src, &mut files);
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
    rs_files(&src.join("cli"), &mut files);
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
    // The run's parse, clap's one look at a refused line without its refused tokens, one
    // look with the arguments refused for conflicts in place of their counterparts (is what
    // clap calls missing only a conflict's stand-in?), the fallback, and one value judged by
    // its own parser.
    assert!(
        calls <= 5,
        "{calls} places parse a command line under src/cli"
    );
}
