//! `elench demo` tells the story it promises, and its shipped envelopes are reproducible.

use crate::common;

use common::elench;
use std::path::{Path, PathBuf};

#[test]
fn the_demo_runs_the_falsification_story() {
    let dir = tempfile::tempdir().unwrap();
    let (code, json) = elench(dir.path(), &["demo"]);
    assert_eq!(code, 0, "{json}");
    let steps = json["data"]["steps"].as_array().unwrap();
    let status_steps: Vec<&serde_json::Value> =
        steps.iter().filter(|s| s.get("status").is_some()).collect();
    let expect = [
        ("unevaluated", "unevaluated", "unevaluated"),
        ("verified", "unevaluated", "unevaluated"),
        ("falsified", "revoked", "revoked"),
        ("verified", "unevaluated", "unevaluated"),
    ];
    assert_eq!(status_steps.len(), expect.len());
    for (step, (parse, loader, refactor)) in status_steps.iter().zip(expect) {
        assert_eq!(step["status"]["parse"], parse, "{step}");
        assert_eq!(step["status"]["loader"], loader, "{step}");
        assert_eq!(step["status"]["refactor"], refactor, "{step}");
    }
    let tampered = steps.iter().find(|s| s.get("rejection").is_some()).unwrap();
    assert_eq!(tampered["rejection"], "BAD_SIGNATURE");
    let blast = &steps.iter().find(|s| s.get("blast").is_some()).unwrap()["blast"];
    assert_eq!(blast["count"], 2);
    assert_eq!(blast["layers"].as_array().unwrap().len(), 3);
    // `check` itself falsifies a predicate claim about a real tree, with evidence, and the
    // claim built on it is revoked.
    let check = steps.iter().find(|s| s.get("check").is_some()).unwrap();
    assert_eq!(check["check"]["outcome"], "falsified", "{check}");
    assert!(check["check"]["record"]
        .as_str()
        .unwrap()
        .starts_with("cl_"));
    assert_eq!(check["check"]["evidence"].as_str().unwrap().len(), 64);
    assert_eq!(check["claims"]["no-unwrap"], "falsified");
    assert_eq!(check["claims"]["cli"], "revoked");
    let blasts: Vec<_> = steps.iter().filter_map(|s| s.get("blast")).collect();
    assert_eq!(blasts.len(), 2);
    assert_eq!(blasts[1]["count"], 1);
    // The temporary store is gone afterwards.
    assert!(json["data"]["store"].is_null());
}

#[test]
fn the_demo_store_can_be_kept_and_inspected() {
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().join("kept");
    let (code, json) = elench(dir.path(), &["demo", "--keep", keep.to_str().unwrap()]);
    assert_eq!(code, 0, "{json}");
    let store = keep.join(".elench");
    let (code, log) = elench(dir.path(), &["--store", store.to_str().unwrap(), "fsck"]);
    assert_eq!(code, 0, "{log}");
    // Eight shipped envelopes and the record `check` made.
    assert_eq!(log["data"]["claims_checked"], 9);
    // The check's evidence blob is in the kept store, and `show` prints it.
    let steps = json["data"]["steps"].as_array().unwrap();
    let check = steps.iter().find(|s| s.get("check").is_some()).unwrap();
    let record = check["check"]["record"].as_str().unwrap();
    let (code, shown) = elench(
        dir.path(),
        &[
            "--store",
            store.to_str().unwrap(),
            "show",
            record,
            "--evidence",
        ],
    );
    assert_eq!(code, 0, "{shown}");
    assert_eq!(shown["data"]["evidence"][0]["found"], true, "{shown}");
    assert_eq!(
        shown["data"]["evidence"][0]["blob"]["runs"][0]["calls"][0]["result"],
        1
    );
    // A second run into the same place refuses rather than mixing stores.
    let (code, again) = elench(dir.path(), &["demo", "--keep", keep.to_str().unwrap()]);
    assert_eq!(code, 2, "{again}");
}

/// `cargo test` builds the examples; the generator beside this test binary must reproduce
/// fixtures/demo byte for byte (fixed seeds, deterministic Ed25519).
#[test]
fn the_demo_fixtures_are_reproducible() {
    let exe = std::env::current_exe().unwrap();
    let generator: PathBuf = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("examples/make_demo_fixtures"))
        .unwrap();
    if !generator.exists() {
        eprintln!("skipped: {} is not built", generator.display());
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let status = std::process::Command::new(&generator)
        .arg(out.path())
        .status()
        .unwrap();
    assert!(status.success());
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/demo");
    // Files only: `tree/` is the source tree the demo checks, not generated.
    let mut names: Vec<_> = std::fs::read_dir(&shipped)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| e.file_name())
        .collect();
    names.sort();
    assert_eq!(names.len(), 10);
    for name in names {
        let a = std::fs::read(shipped.join(&name)).unwrap();
        let b = std::fs::read(out.path().join(&name)).unwrap();
        assert_eq!(a, b, "{name:?} differs from what the generator makes");
    }
}
