//! The read operations called as a front end other than the CLI calls them (`elench mcp`):
//! through `elench::ops`, with an observer of the caller's own.

use crate::common;

use common::elench;
use elench::ops::claims_for::{claims_for, ClaimsForInput};
use elench::ops::status::{status, StatusInput};
use elench::ops::{Collected, Context};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The demo's store and tree (9 claims; 6 about src/parse.rs, 3 records about no path).
fn demo() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let (code, out) = elench(tmp.path(), &["demo", "--keep", "d"]);
    assert_eq!(code, 0, "{out}");
    let d = tmp.path().join("d");
    (tmp, d.join(".elench"), d.join("tree"))
}

fn context(store: &Path) -> (Context, Arc<Collected>) {
    let seen = Arc::new(Collected::default());
    let ctx = Context::new(
        Some(store.to_owned()),
        Duration::from_secs(10),
        seen.clone(),
    );
    (ctx, seen)
}

fn ids(out: &Value) -> Vec<String> {
    out["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect()
}

/// `claims_for` is `status --all --at DIR` narrowed to the claims whose path lies in the
/// files or folders given: a folder holds what is under it, a prefix of a name is not a
/// folder, and a path is never read as a glob.
#[test]
fn claims_for_is_status_at_the_tree_narrowed_to_paths() {
    let (_tmp, store, tree) = demo();
    let (ctx, _) = context(&store);
    let (code, all) = elench(
        &tree,
        &[
            "--store",
            store.to_str().unwrap(),
            "status",
            "--all",
            "--at",
            ".",
            "--limit",
            "100",
        ],
    );
    assert_eq!(code, 0, "{all}");
    let about_parse: Vec<String> = all["data"]["claims"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["anchor_path"] == json!("src/parse.rs"))
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(about_parse.len(), 6, "{all}");
    let ask = |paths: &[&str]| {
        let out = claims_for(
            &ctx,
            &ClaimsForInput {
                paths: paths.iter().map(|p| p.to_string()).collect(),
                at: Some(tree.clone()),
                page: elench::ops::page::PageRequest {
                    limit: 100,
                    cursor: None,
                },
                ..ClaimsForInput::default()
            },
        )
        .unwrap();
        serde_json::to_value(&out).unwrap()
    };
    // No path: every claim, exactly as status --all --at gives it.
    assert_eq!(ask(&[]), all["data"]);
    for paths in [
        &["src"][..],
        &["src/"],
        &["src/parse.rs"],
        &["./src", "nowhere"],
    ] {
        let out = ask(paths);
        assert_eq!(ids(&out), about_parse, "{paths:?}");
        for c in out["claims"].as_array().unwrap() {
            assert!(c["applies"].is_string(), "{c}");
            assert!(c["status"].is_string(), "{c}");
        }
        assert_eq!(out["tree"], all["data"]["tree"]);
    }
    for paths in [&["sr"][..], &["src/*"], &["src/parse"], &["other"]] {
        assert_eq!(ids(&ask(paths)), Vec::<String>::new(), "{paths:?}");
    }
}

/// Warnings go to the observer the caller passed, and to no other: two contexts with
/// observers of their own each hear only their own store's.
#[test]
fn warnings_go_to_the_callers_observer_only() {
    let (_t1, store1, _) = demo();
    let (_t2, store2, _) = demo();
    // The index of the first store is lost: opening it rebuilds it and says so.
    std::fs::remove_dir_all(store1.join("index")).unwrap();
    let (ctx1, seen1) = context(&store1);
    let (ctx2, seen2) = context(&store2);
    let input = StatusInput {
        all: true,
        ..StatusInput::default()
    };
    let out1 = status(&ctx1, &input).unwrap();
    let out2 = status(&ctx2, &input).unwrap();
    assert_eq!(out1.claims.len(), 9);
    assert_eq!(out2.claims.len(), 9);
    let codes =
        |seen: &Collected| -> Vec<String> { seen.take().into_iter().map(|(c, _)| c).collect() };
    assert_eq!(codes(&seen1), vec!["INDEX_REBUILT".to_owned()]);
    assert_eq!(codes(&seen2), Vec::<String>::new());
}
