//! Pictures and paths through the real binary: `blast` and `status` as Graphviz DOT (rendered
//! by the real `dot`) and Mermaid (held to a golden file), `--max-nodes`, and `why`.

use crate::common;

use common::{claim_id, envelope_text, run_raw, with_store, ClaimBuilder, KeyedStore};
use serde_json::{json, Value};
use std::path::Path;

/// Claims added as one bundle; returns their ids in the order given.
fn add_all(s: &KeyedStore, claims: &[(Value, &common::KeyPair)]) -> Vec<String> {
    let mut bundle = String::new();
    let mut ids = Vec::new();
    for (c, key) in claims {
        bundle.push_str(&envelope_text(c, key));
        bundle.push('\n');
        ids.push(claim_id(c));
    }
    let path = s.dir().join(common::fresh_name("claims", "intoto.jsonl"));
    std::fs::write(&path, bundle).unwrap();
    let (code, json) = s.run(&["add", path.to_str().unwrap()]);
    assert_eq!(code, 0, "add failed: {json}");
    ids
}

/// stdout of `elench --store S ARGS…`, asserting `code`.
fn stdout_of(s: &KeyedStore, args: &[&str], code: i32) -> String {
    let r = run_raw(s.dir(), &with_store(&s.store, args));
    assert_eq!(r.code, code, "{args:?}: {}", r.stderr);
    r.stdout
}

fn has_dot() -> bool {
    std::process::Command::new("dot")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Renders DOT with Graphviz; asserts it succeeds without a word on stderr.
fn render_dot(dir: &Path, dot: &str) -> String {
    let file = dir.join(common::fresh_name("graph", "dot"));
    std::fs::write(&file, dot).unwrap();
    let out = std::process::Command::new("dot")
        .args(["-Tsvg", file.to_str().unwrap()])
        .output()
        .expect("dot runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "dot failed: {stderr}");
    assert!(stderr.trim().is_empty(), "dot warned: {stderr}");
    String::from_utf8(out.stdout).unwrap()
}

/// A small graph with every status and both kinds of edge: root R; A and B rest on R; C on
/// A and B; a falsification F of A (so A is falsified and C revoked); a verification V of B
/// made by the harness; S supersedes D. Texts hold characters both formats must escape.
fn small_graph(s: &KeyedStore) -> Vec<String> {
    let r =
        ClaimBuilder::assertion("root: \"quotes\", #hash, <b>tags</b> & `ticks`").build_with_id();
    let rid = claim_id(&r);
    let a = ClaimBuilder::assertion("A rests on R\nover two lines")
        .depends_on(&[&rid])
        .build_with_id();
    let aid = claim_id(&a);
    let b = ClaimBuilder::assertion("B rests on R \\ backslash")
        .depends_on(&[&rid])
        .build_with_id();
    let bid = claim_id(&b);
    let c = ClaimBuilder::assertion("C rests on A and B")
        .depends_on(&[&aid, &bid])
        .build_with_id();
    let f = ClaimBuilder::record("falsification", &[&aid]).build_with_id();
    let v = ClaimBuilder::record("verification", &[&bid]).build_with_id();
    let d = ClaimBuilder::assertion("D, replaced")
        .depends_on(&[&rid])
        .build_with_id();
    let did = claim_id(&d);
    let sup = ClaimBuilder::record("supersession", &[&did]).build_with_id();
    let k = &s.keys;
    add_all(
        s,
        &[
            (r, &k.agent),
            (a, &k.agent),
            (b, &k.agent),
            (c, &k.agent),
            (f, &k.agent),
            (v, &k.harness),
            (d, &k.agent),
            (sup, &k.agent),
        ],
    )
}

#[test]
fn mermaid_of_a_blast_is_byte_stable_and_uses_documented_syntax() {
    let s = KeyedStore::new();
    let ids = small_graph(&s);
    let first = stdout_of(&s, &["--format", "mermaid", "blast", &ids[0]], 0);
    let again = stdout_of(&s, &["--format", "mermaid", "blast", &ids[0]], 0);
    assert_eq!(first, again, "the same log gives the same bytes");
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/golden/blast.mmd");
    if std::env::var_os("ELENCH_BLESS").is_some() {
        std::fs::write(&golden, &first).unwrap();
    }
    let want = std::fs::read_to_string(&golden).expect("tests/it/golden/blast.mmd");
    assert_eq!(
        first, want,
        "mermaid output changed (ELENCH_BLESS=1 rewrites the golden file)"
    );
    // Only the flowchart statements Mermaid documents: the header, comments, nodes with
    // quoted labels, `-->` and `-.->|label|` links, classDef and class.
    let mut lines = first.lines();
    assert_eq!(lines.next(), Some("flowchart TD"));
    for line in lines {
        let l = line.trim_start();
        let ok = l.starts_with("%% ")
            || l.starts_with("classDef ")
            || l.starts_with("class ")
            || (l.contains("[\"")
                && l.ends_with("\"]")
                && l[l.find("[\"").unwrap() + 2..l.len() - 2]
                    .chars()
                    .all(|c| c != '"'))
            || regex_like_link(l);
        assert!(ok, "not documented flowchart syntax: {line}");
        // Nothing in a label Mermaid would read as syntax or HTML.
        assert!(!l.contains('<') && !l.contains('`'), "{line}");
    }
    // Every status coloured, both edge kinds drawn.
    for st in [
        "unevaluated",
        "verified",
        "falsified",
        "superseded",
        "revoked",
    ] {
        assert!(first.contains(&format!("classDef {st} ")), "{st}");
    }
    assert!(first.contains(" --> ") && first.contains(" -.->|targets| "));
    assert!(first.contains("#34;quotes#34;") && first.contains("#35;hash"));
}

/// `X --> Y` or `X -.->|targets| Y` between two claim ids.
fn regex_like_link(l: &str) -> bool {
    let parts: Vec<&str> = l.split(' ').collect();
    parts.len() == 3
        && parts[0].starts_with("cl_")
        && parts[2].starts_with("cl_")
        && (parts[1] == "-->" || parts[1] == "-.->|targets|")
}

#[test]
fn dot_of_small_blast_and_status_render_with_graphviz() {
    let s = KeyedStore::new();
    let ids = small_graph(&s);
    let dot = stdout_of(&s, &["--format", "dot", "blast", &ids[0]], 0);
    assert!(dot.starts_with("digraph elench {"), "{dot}");
    assert!(
        dot.contains("style=dashed"),
        "record edges styled apart: {dot}"
    );
    assert!(dot.contains("\\\"quotes\\\""), "{dot}");
    let status = stdout_of(&s, &["--format", "dot", "status", &ids[3]], 0);
    // C, its premises A and B (A the falsified root of its revocation), and the
    // falsification that decides A.
    for id in &ids[1..5] {
        assert!(
            status.contains(&format!("\"{id}\" [")),
            "{id} drawn: {status}"
        );
    }
    if !has_dot() {
        eprintln!("skipped: Graphviz (dot) is not installed");
        return;
    }
    let svg = render_dot(s.dir(), &dot);
    assert!(svg.contains("<svg"));
    render_dot(s.dir(), &status);
}

/// 1,000 claims in layers (1, 9, 90, 300, 600), each resting on 1–3 claims of the layer
/// above: drawn whole with --max-nodes, and capped at the default 200 with a note.
#[test]
fn dot_of_a_thousand_claim_blast_renders_whole_and_capped() {
    let s = KeyedStore::new();
    let mut seed: u64 = 0x00dd_5eed;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((seed >> 33) as usize) % n
    };
    let mut claims = Vec::new();
    let mut above: Vec<String> = Vec::new();
    for (l, size) in [1usize, 9, 90, 300, 600].into_iter().enumerate() {
        let mut layer = Vec::new();
        for i in 0..size {
            let mut b = ClaimBuilder::assertion(&format!("layer {l} claim {i}"));
            if !above.is_empty() {
                let mut ps: Vec<&str> = Vec::new();
                for _ in 0..1 + next(3) {
                    let p = above[next(above.len())].as_str();
                    if !ps.contains(&p) {
                        ps.push(p);
                    }
                }
                b = b.depends_on(&ps);
            }
            let c = b.build_with_id();
            layer.push(claim_id(&c));
            claims.push((c, &s.keys.agent));
        }
        above = layer;
    }
    let ids = add_all(&s, &claims);
    let whole = stdout_of(
        &s,
        &["--format", "dot", "blast", &ids[0], "--max-nodes", "5000"],
        0,
    );
    assert_eq!(
        whole.matches("\" [label=").count(),
        1000,
        "every claim drawn"
    );
    assert!(!whole.contains("left out"));
    let capped = stdout_of(&s, &["--format", "dot", "blast", &ids[0]], 0);
    assert_eq!(
        capped.matches("\" [label=").count(),
        200,
        "--max-nodes 200 by default"
    );
    assert!(
        capped.contains(
            "800 more claim(s) not drawn: --max-nodes 200 (give --max-nodes 1000 to draw all)"
        ),
        "the note says what was left out"
    );
    let mermaid = stdout_of(
        &s,
        &["--format", "mermaid", "blast", &ids[0], "--max-nodes", "10"],
        0,
    );
    assert!(
        mermaid.contains("left_out[\"990 more claim(s) not drawn"),
        "{mermaid}"
    );
    // Mermaid (and GitHub with it) refuses a diagram over 50,000 characters, as JavaScript
    // counts them: the default picture and a whole one are cut to that, and say so.
    for args in [vec![], vec!["--max-nodes", "5000"]] {
        let mut line = vec!["--format", "mermaid", "blast", &ids[0]];
        line.extend(args);
        let mermaid = stdout_of(&s, &line, 0);
        let size = mermaid.encode_utf16().count();
        assert!(size <= 50_000, "{line:?}: {size} characters");
        assert!(size > 40_000, "{line:?}: as much as fits ({size})");
        let drawn = mermaid.lines().filter(|l| l.contains("[\"cl_")).count();
        let note = mermaid
            .lines()
            .find(|l| l.starts_with("  left_out[\""))
            .unwrap_or_else(|| panic!("{line:?}: a note of what was left out"));
        assert!(
            note.contains(&format!("{} more claim(s) not drawn", 1000 - drawn))
                && note.contains("Mermaid diagram holds at most 50000 characters"),
            "{line:?}: {note}"
        );
    }
    if !has_dot() {
        eprintln!("skipped: Graphviz (dot) is not installed");
        return;
    }
    render_dot(s.dir(), &whole);
    render_dot(s.dir(), &capped);
}

#[test]
fn a_document_format_a_command_does_not_write_is_refused_before_it_runs() {
    let s = KeyedStore::new();
    let r = run_raw(
        s.dir(),
        &with_store(&s.store, &["--format", "sarif", "blast", "cl_0000"]),
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stdout.is_empty());
    assert!(
        r.stderr
            .contains("--format sarif is not a format of `blast`"),
        "{}",
        r.stderr
    );
    let r = run_raw(
        s.dir(),
        &with_store(&s.store, &["--format", "sarif", "status", "--all"]),
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("needs --at"), "{}", r.stderr);
}

/// A diamond with a longer way round: D rests on X and Y, both on R, and on Z, which rests
/// on W, which rests on R. The shortest path from D to R goes through X or Y: the one with
/// the smaller id, every time.
#[test]
fn why_finds_the_shortest_path_chooses_among_equals_and_says_when_there_is_none() {
    let s = KeyedStore::new();
    let r = ClaimBuilder::assertion("R").build_with_id();
    let rid = claim_id(&r);
    let x = ClaimBuilder::assertion("X")
        .depends_on(&[&rid])
        .build_with_id();
    let y = ClaimBuilder::assertion("Y")
        .depends_on(&[&rid])
        .build_with_id();
    let w = ClaimBuilder::assertion("W")
        .depends_on(&[&rid])
        .build_with_id();
    let (xid, yid, wid) = (claim_id(&x), claim_id(&y), claim_id(&w));
    let z = ClaimBuilder::assertion("Z")
        .depends_on(&[&wid])
        .build_with_id();
    let zid = claim_id(&z);
    // Premises listed largest first: the choice must not follow the order written.
    let mut ps = [xid.as_str(), yid.as_str(), zid.as_str()];
    ps.sort();
    ps.reverse();
    let d = ClaimBuilder::assertion("D").depends_on(&ps).build_with_id();
    let did = claim_id(&d);
    let lone = ClaimBuilder::assertion("unrelated").build_with_id();
    let lid = claim_id(&lone);
    let a = &s.keys.agent;
    add_all(
        &s,
        &[(r, a), (x, a), (y, a), (w, a), (z, a), (d, a), (lone, a)],
    );

    let middle = xid.clone().min(yid.clone());
    let (code, json) = s.run(&["why", &did, &rid]);
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["data"]["path"], json!([did, middle, rid]), "{json}");
    assert_eq!(json["data"]["length"], json!(2));
    // Prefixes are ids too.
    let (code, again) = s.run(&["why", &did[..10], &rid[..10]]);
    assert_eq!(code, 0);
    assert_eq!(again["data"]["path"], json["data"]["path"]);
    // A longer chain is still found when it is the only one.
    let (_, json) = s.run(&["why", &zid, &rid]);
    assert_eq!(json["data"]["path"], json!([zid, wid, rid]));

    // No path: not an error; the other way round is named.
    let (code, json) = s.run(&["why", &rid, &did]);
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["data"]["path"], Value::Null);
    assert_eq!(json["data"]["reverse_path"], json!(true));
    let (code, json) = s.run(&["why", &did, &lid]);
    assert_eq!(code, 0);
    assert_eq!(json["data"]["path"], Value::Null);
    assert_eq!(json["data"]["reverse_path"], json!(false));
    let text = stdout_of(&s, &["--format", "text", "why", &rid, &did], 0);
    assert!(text.contains("no dependsOn path"), "{text}");

    // Pictures of the path: three nodes, two edges, premise first.
    let mermaid = stdout_of(&s, &["--format", "mermaid", "why", &did, &rid], 0);
    assert_eq!(mermaid.matches("[\"").count(), 3, "{mermaid}");
    assert!(
        mermaid.contains(&format!("{rid} --> {middle}")),
        "{mermaid}"
    );
    assert!(
        mermaid.contains(&format!("{middle} --> {did}")),
        "{mermaid}"
    );
    let dot = stdout_of(&s, &["--format", "dot", "why", &did, &rid], 0);
    assert_eq!(dot.matches(" -> ").count(), 2, "{dot}");
    if has_dot() {
        render_dot(s.dir(), &dot);
    }
    // An unknown claim is NOT_FOUND.
    let (code, json) = s.run(&["why", &did, &common::some_id(9)]);
    assert_eq!(code, 5, "{json}");
}

/// The tree part of `blast`'s text: the lines before the layer summary, each cut to its
/// drawing and short id.
fn tree_lines(text: &str) -> Vec<String> {
    text.lines()
        .take_while(|l| !l.is_empty())
        .map(|l| {
            let at = l.find("cl_").expect("a claim on each tree line");
            let repeat = if l.ends_with(" (*)") { " (*)" } else { "" };
            format!("{}{}{repeat}", &l[..at], &l[at..at + 15])
        })
        .collect()
}

#[test]
fn blast_text_is_a_tree_with_repeats_marked_depth_and_invert() {
    let s = KeyedStore::new();
    let ids = small_graph(&s);
    let short = |i: usize| ids[i][..15].to_owned();
    let (r, a, b, c, d) = (0, 1, 2, 3, 6);
    let text = stdout_of(&s, &["--format", "plain", "blast", &ids[r]], 0);
    // R's dependents sorted by id; C under both A and B, expanded once.
    let mut kids = [a, b, d];
    kids.sort_by_key(|&i| ids[i].clone());
    let mut want = vec![short(r)];
    let mut seen_c = false;
    for (n, &k) in kids.iter().enumerate() {
        let last = n + 1 == kids.len();
        want.push(format!(
            "{}{}",
            if last { "└── " } else { "├── " },
            short(k)
        ));
        if k == a || k == b {
            let pad = if last { "    " } else { "│   " };
            let mark = if seen_c { " (*)" } else { "" };
            want.push(format!("{pad}└── {}{mark}", short(c)));
            seen_c = true;
        }
    }
    assert_eq!(tree_lines(&text), want, "{text}");
    assert!(text.contains(&format!("blast radius of {}: 4 dependent claim(s)", ids[r])));
    assert!(
        text.contains("depth 1: 3, depth 2: 1"),
        "the size of each layer follows: {text}"
    );
    // Each claim is shown where the tree has it, and nowhere else.
    let tree = tree_lines(&text);
    for &i in &[r, a, b, c, d] {
        let in_tree = tree.iter().filter(|l| l.contains(&short(i))).count();
        // The root is named again, whole, in the summary line.
        let summary = usize::from(i == r);
        assert_eq!(
            text.matches(&short(i)).count(),
            in_tree + summary,
            "{}: {text}",
            short(i)
        );
    }

    // --depth 1: only R's direct dependents in the tree.
    let text = stdout_of(
        &s,
        &["--format", "plain", "blast", &ids[r], "--depth", "1"],
        0,
    );
    assert_eq!(tree_lines(&text).len(), 4, "{text}");
    assert!(!tree_lines(&text).iter().any(|l| l.contains(&short(c))));

    // --invert: what C rests on.
    let text = stdout_of(&s, &["--format", "plain", "blast", &ids[c], "--invert"], 0);
    let (first, second) = if ids[a] < ids[b] { (a, b) } else { (b, a) };
    assert_eq!(
        tree_lines(&text),
        vec![
            short(c),
            format!("├── {}", short(first)),
            format!("│   └── {}", short(r)),
            format!("└── {}", short(second)),
            format!("    └── {} (*)", short(r)),
        ],
        "{text}"
    );
    assert!(
        text.contains(&format!("{} rests on 3 claim(s)", ids[c])),
        "{text}"
    );
    let (code, json) = s.run(&["blast", &ids[c], "--invert"]);
    assert_eq!(code, 0, "{json}");
    let data = &json["data"];
    assert_eq!(data["count"], json!(3));
    assert_eq!(data["layers"][1]["depth"], json!(1));
    let mut ab = vec![ids[a].clone(), ids[b].clone()];
    ab.sort();
    let layer1: Vec<&str> = data["layers"][1]["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(layer1, ab);
    assert_eq!(data["layers"][2]["claims"][0]["id"], json!(ids[r]));
    assert_eq!(data["layers"][2]["claims"][0]["via"], json!(ab[0]));
    let dot = stdout_of(&s, &["--format", "dot", "blast", &ids[c], "--invert"], 0);
    assert!(
        dot.contains(&format!("{} rests on 3 claim(s)", short(c))),
        "{dot}"
    );
    assert_eq!(
        dot.matches("\" [label=").count(),
        4 + 2,
        "C, A, B, R and the records deciding A and B"
    );
    // --invert --depth 1 stops at the direct premises, and says more lies beyond.
    let (_, json) = s.run(&["blast", &ids[c], "--invert", "--depth", "1"]);
    assert_eq!(json["data"]["count"], json!(2));
    assert_eq!(json["data"]["truncated"], json!(true));
}

/// `why`'s ids are checked with the rest of the line: both bad ones named at once, beside
/// the line's other errors, before anything runs.
#[test]
fn why_refuses_ids_that_cannot_be_ids_with_the_lines_other_errors() {
    let s = KeyedStore::new();
    let (code, json) = s.run(&["why", "not-an-id", "../etc/passwd", "--wait", "soon"]);
    assert_eq!(code, 2, "{json}");
    let errors = json["error"]["errors"]
        .as_array()
        .expect("every error listed");
    let params: Vec<&str> = errors
        .iter()
        .map(|e| e["param"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(errors.len(), 3, "{json}");
    assert_eq!(params.iter().filter(|p| **p == "<ID>").count(), 2, "{json}");
}
