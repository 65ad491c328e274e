//! The write operations (`ops::add`, `ops::check`) through the real binary: what the store
//! notices when they open it reaches the report, as it does for every other command.

use crate::common::{self, cli_store, run, write_bundle, ClaimBuilder, Keys, Signer};
use std::path::Path;

/// Bytes after the last record, as an append cut short by a crash leaves them.
fn tear(store: &Path) {
    let segment = store.join("log").join("00000000000000000000.seg");
    let mut bytes = std::fs::read(&segment).unwrap();
    bytes.extend_from_slice(&[7, 0, 0, 0, 1, 2, 3]);
    std::fs::write(&segment, &bytes).unwrap();
}

#[test]
fn add_and_check_report_a_torn_tail_they_find_on_opening_the_store() {
    let keys = Keys::new();
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    cli_store(&store, &keys, &tmp.path().join("keys"));

    tear(&store);
    let bundle = tmp.path().join("a.intoto.jsonl");
    write_bundle(&bundle, [&ClaimBuilder::assertion("first").sign(&keys)]);
    let out = run(&store, &["add", bundle.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert_eq!(out.json["data"]["created"], 1, "{}", out.json);
    assert!(
        common::warning_codes(&out).contains(&"TORN_TAIL".to_owned()),
        "{}",
        out.json
    );

    tear(&store);
    let harness = tmp.path().join("harness.pem");
    let pem = elench::keys::signing_key_pem(&keys.key(Signer::Harness).signing).unwrap();
    std::fs::write(&harness, pem).unwrap();
    let tree = tmp.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("a.txt"), "a\n").unwrap();
    let out = run(
        &store,
        &[
            "check",
            "--all",
            "--key",
            harness.to_str().unwrap(),
            "--at",
            tree.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 0, "{}", out.json);
    assert!(
        common::warning_codes(&out).contains(&"TORN_TAIL".to_owned()),
        "{}",
        out.json
    );
}
