//! The index's LMDB environments belong to whoever runs operations (`store::Environments`,
//! carried by `ops::Context`), not to the process: operations on one context share one
//! environment, a second open through other environments is a clear error that leaves the
//! index alone, and the front ends still answer a fault in a damaged index (`cli::fault`).

use crate::common::{elench_path, graph, Keys};
use crate::index_cache::{point_past_the_file, store_with};
use elench::ops::log::{log, LogInput};
use elench::ops::{Collected, Context};
use elench::store::{Environments, Store, StoreError};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn context(store: &Path) -> Context {
    Context::new(
        Some(store.to_owned()),
        Duration::from_secs(10),
        Arc::new(Collected::default()),
    )
}

fn entries(ctx: &Context) -> usize {
    log(
        ctx,
        &LogInput {
            page: Default::default(),
            with_status: true,
        },
    )
    .unwrap()
    .entries
    .len()
}

/// Which file the index's data is: a rebuild puts a new one in its place.
fn data_file(store: &Path) -> (u64, u64) {
    let m = std::fs::metadata(store.join("index").join("data.mdb")).unwrap();
    (m.dev(), m.ino())
}

/// A store the caller holds open and operations run on the same context meanwhile (as the
/// MCP server's calls, or `check` reopening the store between records) share its index's
/// environment, which LMDB would refuse to open a second time in the process.
#[test]
fn operations_on_one_context_share_the_index_environment() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_with(tmp.path(), &graph(&Keys::new(), 12, 3, "envs"));
    let ctx = context(&store);
    let held = ctx.open_store().unwrap();
    assert!(ctx.environments().is_open(&held.index_dir()));
    assert_eq!(entries(&ctx), 12);
    // A clone of the context (one per call) shares them too.
    let per_call = ctx.clone();
    assert_eq!(entries(&per_call), 12);
    let again = per_call.open_store().unwrap();
    assert_eq!(again.count().unwrap(), held.count().unwrap());
    drop((held, again));
    // Nothing else holds it: the next operation opens it anew.
    ctx.environments().forget(&store.join("index"));
    assert_eq!(entries(&ctx), 12);
}

/// A store opened while another handle of the process holds its index through other
/// environments is an error that says so, never a panic, and never a reason to rebuild the
/// index under the handle reading it.
#[test]
fn a_second_open_through_other_environments_is_refused_and_the_index_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_with(tmp.path(), &graph(&Keys::new(), 8, 3, "twice"));
    let before = data_file(&store);
    let first = Store::open(&store, &elench::store::Options::new(Duration::from_secs(5))).unwrap();
    match Store::open(&store, &elench::store::Options::new(Duration::from_secs(5))) {
        Err(StoreError::IndexInUse(why)) => {
            assert!(why.contains("open already in this process"), "{why}")
        }
        Err(e) => panic!("another error: {e}"),
        Ok(_) => panic!("opened twice"),
    }
    let other = context(&store);
    let f = log(
        &other,
        &LogInput {
            page: Default::default(),
            with_status: false,
        },
    )
    .unwrap_err();
    assert_eq!(f.code().as_str(), "INTERNAL", "{f}");
    assert_eq!(data_file(&store), before, "the index was not replaced");
    assert_eq!(first.count().unwrap(), 8);
    assert!(!store.join("index").join("DAMAGED").exists());
    // Once the first lets go, LMDB closes the environment and anyone may open it.
    drop(first);
    let env = Environments::new();
    let options = elench::store::Options::new(Duration::from_secs(5))
        .observer(Arc::new(Collected::default()))
        .envs(&env);
    let s = Store::open(&store, &options).unwrap();
    assert_eq!(s.count().unwrap(), 8);
}

/// The MCP server (started by the CLI, so under its fault handler) keeps its store's
/// environment between calls; a call that faults in an index damaged meanwhile ends the
/// server with `INDEX_DAMAGED` on stderr (stdout is the protocol's), exit code 4, and the
/// index marked so that the next command rebuilds it.
#[test]
fn a_fault_in_an_mcp_call_answers_index_damaged_and_marks_the_index() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_with(tmp.path(), &graph(&Keys::new(), 10, 3, "mcpfault"));
    let mut child = Command::new(elench_path())
        .args(["--store", store.to_str().unwrap(), "mcp", "--read-only"])
        .current_dir(tmp.path())
        .env_remove("ELENCH_STORE")
        .env_remove("CI")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |v: Value| {
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "elench-tests", "version": "0"}}}),
    );
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("\"id\":1"), "{line}");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    // The server opened the store at start and keeps its environment: a call reads the
    // index through it.
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "log", "arguments": {}}}));
    line.clear();
    stdout.read_line(&mut line).unwrap();
    assert!(
        line.contains("\"id\":2") && line.contains("\"isError\":false"),
        "{line}"
    );
    point_past_the_file(&store.join("index").join("data.mdb"));
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "log", "arguments": {}}}));
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the server did not end");
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(stdin);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(4), "{status:?}; stderr: {stderr}");
    assert!(stderr.contains("error[INDEX_DAMAGED]"), "{stderr}");
    assert!(
        !rest.contains("INDEX_DAMAGED"),
        "stdout is the protocol's: {rest}"
    );
    assert!(store.join("index").join("DAMAGED").exists());
    // The next command rebuilds it.
    let out = crate::common::run(&store, &["log"]);
    assert_eq!(out.code, 0, "{}", out.json);
    assert!(!store.join("index").join("DAMAGED").exists());
}
