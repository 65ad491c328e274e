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

/// `status --all --status S` pages through the claims the same way whether it folds each
/// claim it reads or, once it has read a tenth of the log (at least one batch of 512) without
/// filling the page, every claim's status at once: here the only matches lie beyond the
/// first 512 claims, and every page of one is what the claims' own statuses say.
#[test]
fn a_status_filter_that_matches_late_pages_as_the_statuses_say() {
    let tmp = tempfile::tempdir().unwrap();
    let keys = common::Keys::new();
    let store_dir = tmp.path().join("store");
    let mut claims: Vec<common::Signed> = (0..640)
        .map(|i| common::assertion(&keys, &format!("plain {i}"), &[]))
        .collect();
    let doomed = common::assertion(&keys, "doomed", &[]);
    let built_on = common::assertion(&keys, "built on it", &[&doomed.id]);
    let stale = common::assertion(&keys, "replaced", &[]);
    let falsification = common::record(&keys, "falsification", "wrong", &[&doomed.id], &[]);
    let supersession = common::record(&keys, "supersession", "newer", &[&stale.id], &[]);
    claims.extend([
        doomed.clone(),
        built_on.clone(),
        stale.clone(),
        falsification,
        supersession,
    ]);
    {
        let store = common::lib_store(&store_dir, &keys);
        common::lib_add_all(&store, &claims);
    }
    let (ctx, _) = context(&store_dir);
    let page = |statuses: &[&str], cursor: Option<String>| {
        let out = status(
            &ctx,
            &StatusInput {
                all: true,
                page: elench::ops::page::PageRequest { limit: 1, cursor },
                filters: elench::ops::status::StatusFilters {
                    status: statuses.iter().map(|s| s.to_string()).collect(),
                    ..Default::default()
                },
                ..StatusInput::default()
            },
        )
        .unwrap();
        let next = out.pagination.as_ref().and_then(|p| p.next_cursor.clone());
        (serde_json::to_value(&out).unwrap(), next)
    };
    let walk = |statuses: &[&str]| {
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let (out, next) = page(statuses, cursor);
            for c in out["claims"].as_array().unwrap() {
                seen.push((
                    c["id"].as_str().unwrap().to_owned(),
                    c["status"].as_str().unwrap().to_owned(),
                ));
            }
            match next {
                Some(n) => cursor = Some(n),
                None => return seen,
            }
        }
    };
    let s = |id: &str, st: &str| (id.to_owned(), st.to_owned());
    assert_eq!(
        walk(&["falsified", "revoked"]),
        [s(&doomed.id, "falsified"), s(&built_on.id, "revoked")]
    );
    assert_eq!(walk(&["superseded"]), [s(&stale.id, "superseded")]);
    assert_eq!(walk(&["verified"]), []);
}
