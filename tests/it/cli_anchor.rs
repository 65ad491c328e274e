//! `elench anchor`, `sign --anchor` and `status --at` through the real binary: digests agree
//! with an independent computation, and claims carry over to later trees only where their
//! lines are unchanged.

use crate::common;

use common::*;
use serde_json::{json, Value};
use std::fs;
use std::path::Path;
use std::process::Command;

/// The normalised digest computed by awk and sha256sum, not by elench: lines START..END (or
/// all), trailing spaces/tabs/CR removed, each printed with a final LF. None when the tools
/// are missing.
fn independent_digest(file: &Path, range: Option<(u64, u64)>) -> Option<String> {
    let cond = match range {
        Some((s, e)) => format!("NR >= {s} && NR <= {e}"),
        None => "1".to_owned(),
    };
    let script = format!("awk '{cond} {{ sub(/[ \\t\\r]+$/, \"\"); print }}' \"$1\" | sha256sum",);
    let out = Command::new("sh")
        .args(["-c", &script, "sh"])
        .arg(file)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let hex = text.split_whitespace().next()?.to_owned();
    (out.status.success() && hex.len() == 64).then_some(hex)
}

fn anchor(dir: &Path, spec: &str) -> (i32, Value) {
    elench(dir, &["anchor", spec, "--at", "."])
}

#[test]
fn anchor_digests_equal_an_independent_computation() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    fs::write(d.join("crlf.rs"), "fn a() {\r\n    x();  \r\n}\r\n").unwrap();
    fs::write(d.join("ws.rs"), "a \t\nb\t\t\n  c  \n\nd").unwrap();
    fs::write(d.join("nofinal.rs"), "one\ntwo\nthree").unwrap();
    let cases: &[(&str, Option<(u64, u64)>)] = &[
        ("crlf.rs", None),
        ("crlf.rs", Some((2, 3))),
        ("ws.rs", None),
        ("ws.rs", Some((1, 4))),
        ("nofinal.rs", Some((2, 3))),
        ("nofinal.rs", Some((3, 3))),
        ("nofinal.rs", None),
    ];
    let mut compared = 0;
    for (file, range) in cases {
        let spec = match range {
            Some((s, e)) => format!("{file}:{s}-{e}"),
            None => file.to_string(),
        };
        let (code, out) = anchor(d, &spec);
        assert_eq!(code, 0, "{spec}: {out}");
        let a = &out["data"]["anchor"];
        assert_eq!(a["path"], json!(file), "{out}");
        assert_eq!(a["strategy"], json!("multi"), "{out}");
        match range {
            Some((s, e)) => assert_eq!(a["range"], json!([s, e]), "{out}"),
            None => assert!(
                a.get("range").is_none(),
                "a whole-file anchor has no range: {out}"
            ),
        }
        if let Some(want) = independent_digest(&d.join(file), *range) {
            assert_eq!(a["contentDigest"], json!(want), "{spec}");
            compared += 1;
        }
    }
    if compared == 0 {
        eprintln!("skipped: awk or sha256sum not found; digests not compared");
    }
    // The anchor's tree is the directory's tree.
    let (_, tree) = elench(d, &["tree", "."]);
    let (_, out) = anchor(d, "ws.rs");
    assert_eq!(out["data"]["anchor"]["tree"], tree["data"]["tree"]);
    // Trailing whitespace and CR are not content; leading whitespace is.
    fs::write(d.join("plain.rs"), "fn a() {\n    x();\n}\n").unwrap();
    let (_, crlf) = anchor(d, "crlf.rs");
    let (_, plain) = anchor(d, "plain.rs");
    assert_eq!(
        crlf["data"]["anchor"]["contentDigest"],
        plain["data"]["anchor"]["contentDigest"]
    );
}

#[test]
fn anchor_refuses_what_it_cannot_anchor() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    fs::write(d.join("a.rs"), "1\n2\n3\n").unwrap();
    fs::write(d.join("blob.bin"), b"PK\x03\x04\0\0data").unwrap();

    let err = assert_rejected(&anchor(d, "a.rs:2-4"), "RANGE_OUT_OF_BOUNDS");
    let msg = err["message"].as_str().unwrap();
    assert!(msg.contains("a.rs") && msg.contains("3 line"), "{msg}");
    assert_rejected(&anchor(d, "a.rs:4-4"), "RANGE_OUT_OF_BOUNDS");
    assert_rejected(&anchor(d, "a.rs:3-2"), "BAD_ARGUMENTS");
    assert_rejected(&anchor(d, "a.rs:0-1"), "BAD_ARGUMENTS");
    let err = assert_rejected(&anchor(d, "blob.bin"), "BINARY_FILE");
    assert!(
        err["message"].as_str().unwrap().contains("blob.bin"),
        "{err}"
    );
    assert_rejected(&anchor(d, "missing.rs"), "IO_ERROR");
    assert_rejected(&anchor(d, "../a.rs"), "BAD_ARGUMENTS");
    assert_rejected(&anchor(d, "/etc/hostname"), "BAD_ARGUMENTS");
    let (code, out) = elench(d, &["anchor", "a.rs", "--at", "a.rs"]);
    assert_eq!(code, 2, "{out}");
}

/// Signs `claim` with its anchor filled from `spec` in `tree_dir`, adds it to the store, and
/// returns its id and anchor.
fn add_anchored(ks: &KeyedStore, claim: &Value, spec: &str, tree_dir: &Path) -> (String, Value) {
    let claim_path = ks.dir().join(fresh_name("claim", "json"));
    fs::write(&claim_path, serde_json::to_vec(claim).unwrap()).unwrap();
    let env = ks.dir().join(fresh_name("env", "dsse"));
    let (code, out) = elench(
        ks.dir(),
        &[
            "sign",
            claim_path.to_str().unwrap(),
            "--key",
            ks.keys.agent.private.to_str().unwrap(),
            "--role",
            "agent",
            "--anchor",
            spec,
            "--at",
            tree_dir.to_str().unwrap(),
            "-o",
            env.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "sign --anchor: {out}");
    let (code, added) = ks.run(&["add", env.to_str().unwrap()]);
    assert_eq!(code, 0, "add: {added}");
    (
        out["data"]["id"].as_str().unwrap().to_owned(),
        out["data"]["anchor"].clone(),
    )
}

const BODY: &str = "fn parse(s: &str) -> Result<u32, E> {\n    if s.is_empty() {\n        return Err(E::Empty);\n    }\n    s.parse().map_err(E::Num)\n}\n";

fn write_tree(dir: &Path, files: &[(&str, &str)]) {
    let _ = fs::remove_dir_all(dir);
    for (path, text) in files {
        let p = dir.join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
}

fn applies_at(ks: &KeyedStore, id: &str, dir: &Path) -> Value {
    let (code, out) = ks.run(&["status", id, "--at", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "status --at: {out}");
    out["data"]["claims"][0].clone()
}

#[test]
fn anchor_carry_over_through_the_binary() {
    let ks = KeyedStore::new();
    let v1 = ks.dir().join("v1");
    let header = "use std::num::ParseIntError;\n\n";
    write_tree(
        &v1,
        &[
            ("src/parse.rs", &format!("{header}{BODY}")),
            ("README", "x\n"),
        ],
    );

    // Lines 4-5 of v1: the empty-input check.
    let base = ClaimBuilder::assertion("parse rejects empty input").build();
    let (multi, a) = add_anchored(&ks, &base, "src/parse.rs:4-5", &v1);
    assert_eq!(a["range"], json!([4, 5]));
    assert_eq!(a["path"], json!("src/parse.rs"));
    let cd_claim = ClaimBuilder::assertion("parse rejects empty input (moves with its lines)")
        .set(
            "anchor",
            json!({"tree": TREE, "strategy": "content-digest"}),
        )
        .build();
    let (cd, a) = add_anchored(&ks, &cd_claim, "src/parse.rs:4-5", &v1);
    assert_eq!(
        a["strategy"],
        json!("content-digest"),
        "sign keeps the claim's strategy"
    );
    let (whole, _) = add_anchored(
        &ks,
        &ClaimBuilder::assertion("the whole file").build(),
        "src/parse.rs",
        &v1,
    );
    // A claim with no digest, about v1's tree.
    let (_, tree) = elench(ks.dir(), &["tree", v1.to_str().unwrap()]);
    let tree1 = tree["data"]["tree"].as_str().unwrap().to_owned();
    let bare = ClaimBuilder::assertion("no digest").tree(&tree1).build();
    let (env, bare) = sign_cli(ks.dir(), &bare, &ks.keys.agent);
    assert_eq!(ks.run(&["add", env.to_str().unwrap()]).0, 0);
    // A claim that names a path but no digest, as one writes by hand.
    let path_only = ClaimBuilder::assertion("a path, no digest")
        .set(
            "anchor",
            json!({"tree": tree1, "strategy": "multi", "path": "src/parse.rs"}),
        )
        .build();
    let (env, path_only) = sign_cli(ks.dir(), &path_only, &ks.keys.agent);
    let (code, out) = ks.run(&["add", env.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out["warnings"][0]["code"],
        json!("NO_CONTENT_DIGEST"),
        "{out}"
    );

    // Its own tree: anchored, everything, digest or not.
    for id in [&multi, &cd, &whole, &bare, &path_only] {
        let c = applies_at(&ks, id, &v1);
        assert_eq!(c["applies"], json!("anchored"), "{c}");
    }
    let c = applies_at(&ks, &multi, &v1);
    assert_eq!(
        c["resolved"],
        json!({"path": "src/parse.rs", "range": [4, 5]})
    );
    // status keeps its own fields next to the new ones.
    assert_eq!(c["status"], json!("unevaluated"));
    assert_eq!(c["kind"], json!("assertion"));

    // Lines added above the span (and CRLF endings): carried, with the new range.
    let v2 = ks.dir().join("v2");
    let moved = format!("{header}// a comment\n// and another\n{BODY}").replace('\n', "\r\n");
    write_tree(&v2, &[("src/parse.rs", &moved), ("README", "changed\n")]);
    let c = applies_at(&ks, &multi, &v2);
    assert_eq!(c["applies"], json!("carried"), "{c}");
    assert_eq!(
        c["resolved"],
        json!({"path": "src/parse.rs", "range": [6, 7]})
    );
    // The whole file changed, so the whole-file claim does not carry.
    assert_eq!(applies_at(&ks, &whole, &v2)["applies"], json!("stale"));
    // No digest and another tree.
    let c = applies_at(&ks, &bare, &v2);
    assert_eq!(c["applies"], json!("unanchored"), "{c}");
    assert_eq!(c["resolved"], Value::Null);
    // A path without a digest: nothing shows its lines unchanged, so stale, not left aside.
    let c = applies_at(&ks, &path_only, &v2);
    assert_eq!(c["applies"], json!("stale"), "{c}");

    // An edit inside the span: stale.
    let v3 = ks.dir().join("v3");
    let edited = format!("{header}{}", BODY.replace("E::Empty", "E::Blank"));
    write_tree(&v3, &[("src/parse.rs", &edited)]);
    for id in [&multi, &cd] {
        let c = applies_at(&ks, id, &v3);
        assert_eq!(c["applies"], json!("stale"), "{c}");
        assert_eq!(c["resolved"], Value::Null);
    }

    // A renamed file: multi is stale, content-digest carried to the new path.
    let v4 = ks.dir().join("v4");
    write_tree(&v4, &[("src/parser/mod.rs", &format!("// moved\n{BODY}"))]);
    assert_eq!(applies_at(&ks, &multi, &v4)["applies"], json!("stale"));
    let c = applies_at(&ks, &cd, &v4);
    assert_eq!(c["applies"], json!("carried"), "{c}");
    assert_eq!(
        c["resolved"],
        json!({"path": "src/parser/mod.rs", "range": [3, 4]})
    );

    // status --all --at filters by applies (and the other filters combine with it).
    let v2s = v2.to_str().unwrap();
    let (code, out) = ks.run(&["status", "--all", "--at", v2s, "--applies", "carried"]);
    assert_eq!(code, 0, "{out}");
    let ids: Vec<&str> = out["data"]["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    let mut want = vec![multi.as_str(), cd.as_str()];
    want.sort();
    let mut got = ids.clone();
    got.sort();
    assert_eq!(got, want, "{out}");
    let (_, out) = ks.run(&[
        "status",
        "--all",
        "--at",
        v2s,
        "--applies",
        "stale",
        "--applies",
        "unanchored",
    ]);
    assert_eq!(out["data"]["claims"].as_array().unwrap().len(), 3, "{out}");
    let (_, out) = ks.run(&[
        "status", "--all", "--at", v2s, "--path", "src/**", "--limit", "1",
    ]);
    assert_eq!(out["data"]["claims"].as_array().unwrap().len(), 1, "{out}");
    assert_eq!(out["meta"]["pagination"]["has_more"], json!(true), "{out}");
    let cursor = out["meta"]["pagination"]["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut seen = vec![out["data"]["claims"][0]["id"].clone()];
    let mut cursor = Some(cursor);
    while let Some(c) = cursor {
        let (code, out) = ks.run(&[
            "status", "--all", "--at", v2s, "--path", "src/**", "--limit", "1", "--cursor", &c,
        ]);
        assert_eq!(code, 0, "{out}");
        seen.extend(
            out["data"]["claims"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["id"].clone()),
        );
        cursor = out["meta"]["pagination"]["next_cursor"]
            .as_str()
            .map(str::to_owned);
    }
    // Four claims name src/parse.rs; the bare one names no path.
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert!(!seen.contains(&json!(bare)));
    let (_, out) = ks.run(&["status", "--all", "--kind", "verification"]);
    assert_eq!(out["data"]["claims"], json!([]));
    let (_, out) = ks.run(&["status", "--all", "--status", "verified"]);
    assert_eq!(out["data"]["claims"], json!([]));
    let (_, out) = ks.run(&[
        "status",
        "--all",
        "--status",
        "unevaluated",
        "--origin",
        "agent-asserted",
    ]);
    assert_eq!(out["data"]["claims"].as_array().unwrap().len(), 5, "{out}");
    let (_, out) = ks.run(&["status", "--all", "--origin", "human-asserted"]);
    assert_eq!(out["data"]["claims"], json!([]));
    // --applies needs --at.
    let (code, _) = ks.run(&["status", "--all", "--applies", "carried"]);
    assert_eq!(code, 2);
}

#[test]
fn anchor_sign_fills_a_whole_file_anchor_and_refuses_a_bad_span() {
    let ks = KeyedStore::new();
    let t = ks.dir().join("t");
    write_tree(&t, &[("a.rs", "x\n")]);
    let claim = ClaimBuilder::assertion("a")
        .set(
            "anchor",
            json!({"tree": TREE, "strategy": "multi", "range": [7, 9], "symbol": "a"}),
        )
        .build();
    let path = ks.dir().join("c.json");
    fs::write(&path, serde_json::to_vec(&claim).unwrap()).unwrap();
    let key = ks.keys.agent.private.to_str().unwrap();
    let (code, out) = elench(
        ks.dir(),
        &[
            "sign",
            path.to_str().unwrap(),
            "--key",
            key,
            "--role",
            "agent",
            "--anchor",
            "a.rs",
            "--at",
            t.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{out}");
    let a = &out["data"]["anchor"];
    assert!(a.get("range").is_none(), "the old range is dropped: {a}");
    assert_eq!(a["symbol"], json!("a"), "other anchor members stay: {a}");
    assert_eq!(a["path"], json!("a.rs"));
    let (code, out) = elench(
        ks.dir(),
        &[
            "sign",
            path.to_str().unwrap(),
            "--key",
            key,
            "--role",
            "agent",
            "--anchor",
            "a.rs:1-2",
            "--at",
            t.to_str().unwrap(),
            "-o",
            "never.dsse",
        ],
    );
    assert_eq!(
        (code, &out["error"]["code"]),
        (2, &json!("RANGE_OUT_OF_BOUNDS")),
        "{out}"
    );
    assert!(
        !ks.dir().join("never.dsse").exists(),
        "nothing is written after a failure"
    );
}
