//! Pictures of the claim graph: Graphviz DOT and Mermaid flowcharts (`--format dot|mermaid`
//! on `blast`, `status` and `why`).
//!
//! A [`Picture`] is built from a command's result and drawn by [`Picture::dot`] or
//! [`Picture::mermaid`]. Arrows mean "is a premise of" (`dependsOn`, solid) or "acts on"
//! (a record's `target`, dashed). Nodes are sorted by id and edges by their ends, so the same
//! log always gives the same bytes; a picture holds at most `--max-nodes` claims and says
//! how many it left out. A Mermaid picture is also held to Mermaid's own limit on a
//! diagram's text ([`MERMAID_MAX_TEXT`]): past it Mermaid, and GitHub with it, draws an
//! error instead, so the claims last in line are left out until it fits, and the note says
//! so.

use crate::cli::output::short_id;
use elench::fold::Status;
use elench::graph::Blast;
use elench::ops::picture::{ClaimInfo, Shown};
use std::collections::{BTreeSet, HashSet};

/// The default of `--max-nodes`: larger pictures stop being readable, and GitHub's Mermaid
/// renderer refuses very large ones.
pub const DEFAULT_MAX_NODES: usize = 200;

/// Mermaid's default `maxTextSize`, in the characters JavaScript counts (UTF-16 code units):
/// a longer diagram is refused ("Maximum text size in diagram exceeded").
pub const MERMAID_MAX_TEXT: usize = 50_000;

/// What a picture of a blast radius cut at `--depth` says of the rest.
const DEPTH_NOTE: &str = "layers beyond --depth not drawn";

/// Characters of a claim's text shown in its node.
const LABEL_TEXT: usize = 40;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EdgeKind {
    /// `to.dependsOn` contains `from`.
    Premise,
    /// `from` is a record whose `target` contains `to`.
    Target,
}

#[derive(Debug, Clone)]
pub struct Node {
    pub id: String,
    pub info: ClaimInfo,
    /// Its place in the order claims are wanted (0 first): a picture cut to size keeps the
    /// first.
    pub rank: usize,
}

/// A graph ready to draw.
#[derive(Debug, Clone, Default)]
pub struct Picture {
    /// Sorted by id.
    pub nodes: Vec<Node>,
    /// `(from, to, kind)`, sorted, each once.
    pub edges: Vec<(String, String, EdgeKind)>,
    /// Claims that were part of the answer but not drawn (`--max-nodes`).
    pub left_out: usize,
    /// What to say about them.
    pub note: Option<String>,
    /// Layers of a blast radius beyond `--depth` were not drawn either.
    pub beyond_depth: bool,
}

impl Picture {
    /// The picture of the claims an operation chose to show (`ops::picture::shown`: in
    /// priority order, at most `--max-nodes`), with every `dependsOn` and `target` edge
    /// between two drawn claims.
    pub fn of(shown: &Shown) -> Picture {
        let mut nodes: Vec<Node> = shown
            .claims
            .iter()
            .enumerate()
            .map(|(rank, (id, info))| Node {
                id: id.clone(),
                info: info.clone(),
                rank,
            })
            .collect();
        let left_out = shown.left_out;
        let total = nodes.len() + left_out;
        let max_nodes = shown.max;
        nodes.sort_by(|a, b| a.id.cmp(&b.id));
        let drawn: HashSet<&str> = nodes.iter().map(|n| n.id.as_str()).collect();
        let mut edges = BTreeSet::new();
        for n in &nodes {
            for p in &n.info.depends_on {
                if drawn.contains(p.as_str()) {
                    edges.insert((p.clone(), n.id.clone(), EdgeKind::Premise));
                }
            }
            for t in &n.info.target {
                if drawn.contains(t.as_str()) {
                    edges.insert((n.id.clone(), t.clone(), EdgeKind::Target));
                }
            }
        }
        Picture {
            nodes,
            edges: edges.into_iter().collect(),
            left_out,
            beyond_depth: false,
            note: (left_out > 0).then(|| {
                format!(
                    "{left_out} more claim(s) not drawn: --max-nodes {max_nodes} (give --max-nodes \
                     {total} to draw all)"
                )
            }),
        }
    }

    /// A blast radius: the root, its layers in order (shallow layers first, so a cap cuts
    /// the deepest), then the claims outside it that its records decide (`shown`, as
    /// `ops::blast` chose them).
    pub fn of_blast(b: &Blast, shown: &Shown) -> Picture {
        let mut p = Picture::of(shown);
        if b.truncated {
            p.beyond_depth = true;
            let more = DEPTH_NOTE;
            p.note = Some(match p.note {
                Some(n) => format!("{n}; {more}"),
                None => more.to_owned(),
            });
        }
        p
    }

    /// Graphviz DOT.
    pub fn dot(&self, title: &str) -> String {
        let mut out = String::from("digraph elench {\n");
        out.push_str(&format!(
            "  graph [label=\"{}\", labelloc=t, rankdir=TB];\n",
            dot_escape(title)
        ));
        out.push_str(
            "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n",
        );
        out.push_str("  edge [color=\"#555555\"];\n");
        for n in &self.nodes {
            let (fill, stroke) = colours(n.info.status);
            out.push_str(&format!(
                "  \"{}\" [label=\"{} {}\\n{}\", fillcolor=\"{fill}\", color=\"{stroke}\", tooltip=\"{}\"];\n",
                n.id,
                short_id(&n.id),
                n.info.status.as_str(),
                dot_escape(&shorten(&n.info.text, LABEL_TEXT)),
                n.info.kind,
            ));
        }
        for (from, to, kind) in &self.edges {
            match kind {
                EdgeKind::Premise => out.push_str(&format!("  \"{from}\" -> \"{to}\";\n")),
                EdgeKind::Target => out.push_str(&format!(
                    "  \"{from}\" -> \"{to}\" [style=dashed, label=\"targets\", fontsize=8];\n"
                )),
            }
        }
        if let Some(note) = &self.note {
            out.push_str(&format!(
                "  \"left out\" [shape=note, style=filled, fillcolor=\"#ffffff\", label=\"{}\"];\n",
                dot_escape(note)
            ));
        }
        out.push_str("}\n");
        out
    }

    /// A Mermaid flowchart of at most [`MERMAID_MAX_TEXT`] characters: the whole picture when
    /// it fits, else the most claims (first in line) that fit, with a note of how many were
    /// left out and why.
    pub fn mermaid(&self, title: &str) -> String {
        let whole = self.mermaid_text(title);
        if fits_mermaid(&whole) {
            return whole;
        }
        // The most claims that fit: a picture of fewer claims is never longer.
        let (mut lo, mut hi) = (0, self.nodes.len().saturating_sub(1));
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if fits_mermaid(&self.first(mid).mermaid_text(title)) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        self.first(lo).mermaid_text(title)
    }

    /// The picture of its first `n` claims in the order they were wanted, the others left
    /// out and the note saying so.
    fn first(&self, n: usize) -> Picture {
        let nodes: Vec<Node> = self.nodes.iter().filter(|x| x.rank < n).cloned().collect();
        let kept: HashSet<&str> = nodes.iter().map(|x| x.id.as_str()).collect();
        let edges: Vec<(String, String, EdgeKind)> = self
            .edges
            .iter()
            .filter(|(a, b, _)| kept.contains(a.as_str()) && kept.contains(b.as_str()))
            .cloned()
            .collect();
        let left_out = self.left_out + self.nodes.len() - nodes.len();
        let mut note = format!(
            "{left_out} more claim(s) not drawn: a Mermaid diagram holds at most \
             {MERMAID_MAX_TEXT} characters (--format dot draws up to --max-nodes)"
        );
        if self.beyond_depth {
            note.push_str(&format!("; {DEPTH_NOTE}"));
        }
        Picture {
            nodes,
            edges,
            left_out,
            note: Some(note),
            beyond_depth: self.beyond_depth,
        }
    }

    /// The Mermaid flowchart of the whole picture, in the syntax Mermaid's flowchart
    /// documentation gives: nodes with quoted labels (characters that mean something to
    /// Mermaid written as entity codes), `-->` and `-.->` links, `classDef` and `class`, `%%`
    /// comments.
    fn mermaid_text(&self, title: &str) -> String {
        let mut out = String::from("flowchart TD\n");
        out.push_str(&format!("  %% {}\n", one_line(title)));
        for n in &self.nodes {
            out.push_str(&format!(
                "  {}[\"{} {}: {}\"]\n",
                n.id,
                short_id(&n.id),
                n.info.status.as_str(),
                mermaid_escape(&shorten(&n.info.text, LABEL_TEXT)),
            ));
        }
        for (from, to, kind) in &self.edges {
            match kind {
                EdgeKind::Premise => out.push_str(&format!("  {from} --> {to}\n")),
                EdgeKind::Target => out.push_str(&format!("  {from} -.->|targets| {to}\n")),
            }
        }
        if let Some(note) = &self.note {
            out.push_str(&format!("  left_out[\"{}\"]\n", mermaid_escape(note)));
        }
        for status in STATUSES {
            let (fill, stroke) = colours(status);
            out.push_str(&format!(
                "  classDef {} fill:{fill},stroke:{stroke}\n",
                status.as_str()
            ));
        }
        for status in STATUSES {
            let members: Vec<&str> = self
                .nodes
                .iter()
                .filter(|n| n.info.status == status)
                .map(|n| n.id.as_str())
                .collect();
            if !members.is_empty() {
                out.push_str(&format!(
                    "  class {} {}\n",
                    members.join(","),
                    status.as_str()
                ));
            }
        }
        if self.note.is_some() {
            out.push_str("  classDef note fill:#ffffff,stroke:#999999,stroke-dasharray: 5 5\n");
            out.push_str("  class left_out note\n");
        }
        out
    }
}

/// Whether Mermaid draws a diagram of this text (its length as JavaScript counts it).
fn fits_mermaid(text: &str) -> bool {
    text.encode_utf16().count() <= MERMAID_MAX_TEXT
}

const STATUSES: [Status; 5] = [
    Status::Unevaluated,
    Status::Verified,
    Status::Falsified,
    Status::Superseded,
    Status::Revoked,
];

/// Fill and border colour of a status.
fn colours(s: Status) -> (&'static str, &'static str) {
    match s {
        Status::Verified => ("#d4edda", "#2e7d32"),
        Status::Falsified => ("#f8d7da", "#c62828"),
        Status::Revoked => ("#fde2c8", "#e65100"),
        Status::Superseded => ("#e0e0e0", "#616161"),
        Status::Unevaluated => ("#fff8dc", "#9e9d24"),
    }
}

/// On one line, with no terminal escape sequence (removed whole): every run of whitespace
/// (newlines included) and control character is one space.
pub fn one_line(s: &str) -> String {
    crate::cli::output::terminal_safe(s, false)
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// At most `n` characters of `s` on one line, with an ellipsis when cut.
pub fn shorten(s: &str, n: usize) -> String {
    let s = one_line(s);
    if s.chars().count() <= n {
        s
    } else {
        let cut: String = s.chars().take(n.saturating_sub(1)).collect();
        format!("{}…", cut.trim_end())
    }
}

/// Inside a DOT double-quoted string: `\` and `"` escaped (a backslash would otherwise start
/// one of DOT's label escapes), on one line.
fn dot_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in one_line(s).chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out
}

/// Inside a Mermaid quoted label: the characters Mermaid reads (quote, entity start, HTML
/// brackets and ampersand, the backtick of its markdown strings, and `%`, which starts the
/// `%%{…}%%` directives Mermaid looks for anywhere in a diagram) as decimal entity codes.
fn mermaid_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in one_line(s).chars() {
        match c {
            '"' | '#' | '<' | '>' | '&' | '`' | '%' => out.push_str(&format!("#{};", c as u32)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_leave_nothing_the_formats_read() {
        assert_eq!(dot_escape("a \"b\" \\n\nc"), "a \\\"b\\\" \\\\n c");
        assert_eq!(mermaid_escape("x\"#<>&`y"), "x#34;#35;#60;#62;#38;#96;y");
        assert_eq!(
            mermaid_escape("%%{init: {}}%%"),
            "#37;#37;{init: {}}#37;#37;"
        );
        assert_eq!(shorten("abc\tdef", 5), "abc…");
    }
}
