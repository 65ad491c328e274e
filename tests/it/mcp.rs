//! `elench mcp` through a real MCP client: JSON-RPC messages, one per line, over the child's
//! stdin and stdout, as a coding agent's client speaks to it.

use crate::common::{
    command, elench, export_bundle, init_store_trusting, make_keys, some_id, with_store, Keys,
};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

/// How long one answer may take (a debug build running `check` in a sandbox included).
const ANSWER_WITHIN: Duration = Duration::from_secs(120);

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// An MCP client over a child `elench mcp`.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
    /// Each served tool's output schema, from tools/list.
    output_schemas: Vec<(String, Value)>,
    /// The byte cap the server was started with, which every result must keep to.
    cap: Option<usize>,
}

impl Client {
    /// Starts `elench ARGS…` in `dir` and opens the session (initialize, initialized).
    fn start(dir: &Path, args: &[&str]) -> (Client, Value) {
        Client::start_with(Command::new(env!("CARGO_BIN_EXE_elench")), dir, args)
    }

    /// [`Client::start`] with a command already given some environment.
    fn start_with(mut command: Command, dir: &Path, args: &[&str]) -> (Client, Value) {
        let mut child = command
            .args(args)
            .current_dir(dir)
            .env_remove("ELENCH_STORE")
            .env_remove("ELENCH_PRODUCER")
            .env_remove("CI")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("elench mcp starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut client = Client {
            child,
            stdin,
            lines,
            next_id: 0,
            output_schemas: Vec::new(),
            cap: None,
        };
        let init = client.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "elench-tests", "version": "0"}
            }),
        );
        client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        (client, init)
    }

    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("the session is open");
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request and returns its response (result or error), skipping notifications.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line = self
                .lines
                .recv_timeout(ANSWER_WITHIN)
                .unwrap_or_else(|e| panic!("no answer to {method} ({e})"));
            let msg: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carries only JSON-RPC ({e}): {line:?}"));
            assert_eq!(msg["jsonrpc"], "2.0", "{msg}");
            if msg["id"] == json!(id) {
                return msg;
            }
            assert!(
                msg.get("id").is_none(),
                "an answer to another request: {msg}"
            );
        }
    }

    fn tools(&mut self) -> Vec<Value> {
        let r = self.request("tools/list", json!({}));
        let tools = r["result"]["tools"].as_array().expect("tools/list").clone();
        self.output_schemas = tools
            .iter()
            .map(|t| {
                (
                    t["name"].as_str().unwrap().to_owned(),
                    t["outputSchema"].clone(),
                )
            })
            .collect();
        tools
    }

    /// `tools/call`; returns the result (a tool result, failed or not).
    fn call(&mut self, name: &str, arguments: Value) -> Value {
        let r = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        assert!(r.get("error").is_none(), "{name}: a protocol error: {r}");
        r["result"].clone()
    }

    /// A call that must succeed: its structured content, checked against the tool's output
    /// schema and equal to the JSON of its text content.
    fn ok(&mut self, name: &str, arguments: Value) -> Value {
        let r = self.call(name, arguments.clone());
        assert_eq!(r["isError"], json!(false), "{name} {arguments} failed: {r}");
        let data = r["structuredContent"].clone();
        let text: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text, data, "the text content is the structured content");
        if self.output_schemas.is_empty() {
            self.tools();
        }
        let schema = &self
            .output_schemas
            .iter()
            .find(|(n, _)| n == name)
            .expect("a served tool")
            .1;
        let validator = jsonschema::draft202012::new(schema).expect("the output schema compiles");
        let errors: Vec<String> = validator
            .iter_errors(&data)
            .map(|e| e.to_string())
            .collect();
        assert!(
            errors.is_empty(),
            "{name}: {data} breaks its output schema: {errors:?}"
        );
        if let Some(cap) = self.cap {
            let bytes = serde_json::to_vec(&data).unwrap().len();
            assert!(
                bytes <= cap,
                "{name}: {bytes} bytes over the cap {cap}: {data}"
            );
            let text = r["content"][0]["text"].as_str().unwrap();
            assert!(
                text.len() <= cap,
                "{name}: its text is over the cap: {text}"
            );
        }
        data
    }

    /// A call that must fail as a tool result: its `error` object. The result is `isError`
    /// with one text content, the JSON of `{error, warnings}`, and no structured content
    /// (a client checks that against the tool's output schema, which describes a success).
    fn err(&mut self, name: &str, arguments: Value) -> Value {
        let r = self.call(name, arguments.clone());
        assert_eq!(
            r["isError"],
            json!(true),
            "{name} {arguments} should fail: {r}"
        );
        assert!(
            r.get("structuredContent").is_none(),
            "{name}: a failure carries no structured content: {r}"
        );
        let content = r["content"].as_array().expect("content");
        assert_eq!(content.len(), 1, "{r}");
        assert_eq!(content[0]["type"], "text", "{r}");
        let text = content[0]["text"].as_str().unwrap();
        let body: Value = serde_json::from_str(text)
            .unwrap_or_else(|e| panic!("{name}: a failure's text is JSON ({e}): {text}"));
        let error = body["error"].clone();
        assert!(
            error["code"].is_string() && error["message"].is_string(),
            "{r}"
        );
        // A failure's text is the documented failure shape (docs/agents.md): the CLI's
        // `error` object, and `warnings` and `truncation` as every tool's output has them.
        if self.output_schemas.is_empty() {
            self.tools();
        }
        let shared = &self.output_schemas[0].1["properties"];
        let failure = json!({
            "type": "object",
            "properties": {
                "error": {
                    "type": "object",
                    "properties": {
                        "code": {"type": "string", "pattern": "^[A-Z][A-Z0-9_]*$"},
                        "message": {"type": "string"},
                        "suggestion": {"type": "string"},
                        "retryable": {"type": "boolean"}
                    },
                    "required": ["code", "message", "retryable"]
                },
                "warnings": shared["warnings"],
                "truncation": shared["truncation"]
            },
            "required": ["error", "warnings"],
            "additionalProperties": false
        });
        let validator = jsonschema::draft202012::new(&failure).expect("the failure schema");
        let errors: Vec<String> = validator
            .iter_errors(&body)
            .map(|e| e.to_string())
            .collect();
        assert!(
            errors.is_empty(),
            "{name}: {r} breaks the failure shape: {errors:?}"
        );
        if let Some(cap) = self.cap {
            assert!(
                text.len() <= cap,
                "{name}: a failure of {} bytes, over the cap {cap}: {text}",
                text.len()
            );
        }
        error
    }

    /// Closes stdin: the server ends, cleanly.
    fn finish(mut self) {
        drop(self.stdin.take());
        let started = std::time::Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(
                    status.success(),
                    "the server exits 0 when stdin closes: {status}"
                );
                break;
            }
            assert!(started.elapsed() < ANSWER_WITHIN, "the server did not end");
            std::thread::sleep(Duration::from_millis(20));
        }
        // Nothing after the session on stdout: no CLI report.
        assert!(
            self.lines.try_iter().next().is_none(),
            "stdout after the session"
        );
    }
}

impl Client {
    /// Sends `bytes` as one line, as they are.
    fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("the session is open");
        stdin.write_all(bytes).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next message the server sends.
    fn next_message(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(ANSWER_WITHIN)
            .unwrap_or_else(|e| panic!("no answer ({e})"));
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carries only JSON-RPC ({e}): {line:?}"))
    }

    /// A number of the server's /proc/PID/status (`VmHWM` in KiB, `Threads`).
    fn proc_status(&self, field: &str) -> u64 {
        proc_status(self.child.id(), field)
    }
}

fn proc_status(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

impl Client {
    /// Waits for the server to end by itself, stdin still open.
    fn wait_for_end(&mut self) -> std::process::ExitStatus {
        let started = std::time::Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(started.elapsed() < ANSWER_WITHIN, "the server did not end");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A store trusting one key of each role, and a tree with a file to anchor to.
struct World {
    tmp: tempfile::TempDir,
    keys: Keys,
    store: PathBuf,
    tree: PathBuf,
}

impl World {
    fn new() -> World {
        let tmp = tempfile::tempdir().unwrap();
        let keys = make_keys(tmp.path());
        let store = tmp.path().join("store");
        init_store_trusting(
            tmp.path(),
            &store,
            &[&keys.harness, &keys.agent, &keys.human],
        );
        let tree = tmp.path().join("tree");
        std::fs::create_dir_all(tree.join("src")).unwrap();
        std::fs::write(
            tree.join("src/lib.rs"),
            "pub fn parse(s: &str) -> Option<u8> {\n    s.bytes().next()\n}\n",
        )
        .unwrap();
        std::fs::write(tree.join("README"), "a tree\n").unwrap();
        World {
            tmp,
            keys,
            store,
            tree,
        }
    }

    fn dir(&self) -> &Path {
        self.tmp.path()
    }

    /// `elench --store STORE mcp --at TREE EXTRA…`.
    fn serve(&self, extra: &[&str]) -> (Client, Value) {
        let mut args = vec!["--store", p(&self.store), "mcp", "--at", p(&self.tree)];
        args.extend_from_slice(extra);
        Client::start(self.dir(), &args)
    }

    /// A server signing with the agent key and, for `check`, the harness key.
    fn serve_all(&self) -> Client {
        self.serve(&[
            "--key",
            p(&self.keys.agent.private),
            "--harness-key",
            p(&self.keys.harness.private),
        ])
        .0
    }
}

const READ_TOOLS: [&str; 8] = [
    "claims_for",
    "status",
    "blast",
    "why",
    "show",
    "log",
    "trust_show",
    "gate",
];

#[test]
fn initialize_and_the_tool_list_with_schemas_and_annotations() {
    let w = World::new();
    let (mut c, init) = w.serve(&[
        "--key",
        p(&w.keys.agent.private),
        "--harness-key",
        p(&w.keys.harness.private),
    ]);
    let result = &init["result"];
    assert_eq!(result["serverInfo"]["name"], "elench", "{init}");
    assert!(result["capabilities"]["tools"].is_object(), "{init}");
    assert!(result["protocolVersion"].is_string(), "{init}");
    let tools = c.tools();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "claims_for",
            "status",
            "blast",
            "why",
            "show",
            "log",
            "trust_show",
            "claim",
            "check",
            "gate"
        ]
    );
    for t in &tools {
        let name = t["name"].as_str().unwrap();
        assert!(
            t["description"].as_str().is_some_and(|d| d.len() > 20),
            "{t}"
        );
        for key in ["inputSchema", "outputSchema"] {
            assert_eq!(t[key]["type"], "object", "{name} {key}: {t}");
            jsonschema::draft202012::new(&t[key])
                .unwrap_or_else(|e| panic!("{name} {key} does not compile: {e}"));
        }
        assert_eq!(t["inputSchema"]["additionalProperties"], false, "{t}");
        let a = &t["annotations"];
        let reads = READ_TOOLS.contains(&name);
        assert_eq!(a["readOnlyHint"], json!(reads), "{name}: {a}");
        assert_eq!(a["destructiveHint"], json!(false), "{name}: {a}");
        assert_eq!(a["idempotentHint"], json!(reads), "{name}: {a}");
        assert_eq!(a["openWorldHint"], json!(false), "{name}: {a}");
    }
    c.finish();

    // Without a harness key there is no check to offer.
    let (mut c, _) = w.serve(&["--key", p(&w.keys.agent.private)]);
    let names: Vec<String> = c
        .tools()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(!names.iter().any(|n| n == "check"), "{names:?}");
    let r = c.request(
        "tools/call",
        json!({"name": "check", "arguments": {"all": true}}),
    );
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--harness-key"),
        "{r}"
    );
    c.finish();
}

#[test]
fn a_chain_of_three_claims_then_status_blast_and_claims_for() {
    let w = World::new();
    let mut c = w.serve_all();
    let a = c.ok(
        "claim",
        json!({"text": "parse reads the first byte", "anchor": ["src/lib.rs:1-3"],
               "predicate": "exists(\"src/lib.rs\")", "timestamp": 1_700_000_000}),
    );
    assert_eq!(a["effect"], "created", "{a}");
    assert_eq!(a["status"], "unevaluated", "{a}");
    assert_eq!(a["origin"], "agent-asserted", "{a}");
    assert_eq!(a["signer"], json!(w.keys.agent.keyid), "{a}");
    assert_eq!(a["producer"], "bot", "the key's name in the store: {a}");
    let a_id = a["id"].as_str().unwrap().to_owned();
    // A premise named by a unique prefix.
    let b = c.ok(
        "claim",
        json!({"text": "parse never panics", "depends_on": [&a_id[..10]]}),
    );
    let b_id = b["id"].as_str().unwrap().to_owned();
    let cc = c.ok(
        "claim",
        json!({"text": "the reader is safe", "depends_on": [&b_id]}),
    );
    let c_id = cc["id"].as_str().unwrap().to_owned();
    // Claiming the same thing again changes nothing.
    let again = c.ok(
        "claim",
        json!({"text": "parse reads the first byte", "anchor": ["src/lib.rs:1-3"],
               "predicate": "exists(\"src/lib.rs\")", "timestamp": 1_700_000_000}),
    );
    assert_eq!(again["id"], json!(a_id), "{again}");
    assert_eq!(again["effect"], "noop", "{again}");

    let st = c.ok("status", json!({"ids": [&a_id, &b_id[..8], &c_id]}));
    let got: Vec<(&str, &str)> = st["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (x["id"].as_str().unwrap(), x["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        got,
        [
            (a_id.as_str(), "unevaluated"),
            (b_id.as_str(), "unevaluated"),
            (c_id.as_str(), "unevaluated")
        ]
    );
    assert_eq!(st["as_of"], json!(3), "{st}");

    let blast = c.ok("blast", json!({"id": &a_id}));
    assert_eq!(blast["root"], json!(a_id), "{blast}");
    assert_eq!(blast["count"], json!(2), "{blast}");
    assert_eq!(
        blast["layers"][1]["claims"][0]["id"],
        json!(b_id),
        "{blast}"
    );
    assert_eq!(
        blast["layers"][1]["claims"][0]["via"],
        json!(a_id),
        "{blast}"
    );
    assert_eq!(
        blast["layers"][2]["claims"][0]["id"],
        json!(c_id),
        "{blast}"
    );
    assert_eq!(
        blast["layers"][2]["claims"][0]["via"],
        json!(b_id),
        "{blast}"
    );

    // Why the reader rests on parse's first byte: through the claim between them; prefixes
    // are enough. The other way round there is no path, and that is an answer.
    let why = c.ok("why", json!({"from": &c_id[..10], "to": &a_id[..10]}));
    assert_eq!(why["path"], json!([c_id, b_id, a_id]), "{why}");
    assert_eq!(why["length"], json!(2), "{why}");
    assert_eq!(why["from"], json!(c_id), "{why}");
    assert_eq!(
        why["steps"][2]["text"], "parse reads the first byte",
        "{why}"
    );
    assert_eq!(why["steps"][0]["status"], "unevaluated", "{why}");
    let back = c.ok("why", json!({"from": &a_id, "to": &c_id}));
    assert_eq!(back["path"], Value::Null, "{back}");
    assert_eq!(back["length"], Value::Null, "{back}");
    assert_eq!(back["reverse_path"], json!(true), "{back}");
    let e = c.err("why", json!({"from": &a_id, "to": some_id(3)}));
    assert_eq!(e["code"], "NOT_FOUND", "{e}");
    let e = c.err("why", json!({"from": &a_id}));
    assert_eq!(e["code"], "BAD_ARGUMENTS", "{e}");

    // About src/lib.rs: only the claim anchored there, as made at this tree.
    let about = c.ok("claims_for", json!({"paths": ["src/lib.rs"]}));
    assert_eq!(about["claims"].as_array().unwrap().len(), 1, "{about}");
    let x = &about["claims"][0];
    assert_eq!(x["id"], json!(a_id), "{about}");
    assert_eq!(x["applies"], "anchored", "{about}");
    assert_eq!(x["status"], "unevaluated", "{about}");
    assert_eq!(x["resolved"]["path"], "src/lib.rs", "{about}");
    assert_eq!(x["resolved"]["range"], json!([1, 3]), "{about}");
    assert_eq!(x["text"], "parse reads the first byte", "{about}");
    // Its folder names it too; another path does not.
    for paths in [json!(["src"]), json!(["src/"]), json!(["./src/lib.rs"])] {
        let r = c.ok("claims_for", json!({ "paths": paths }));
        assert_eq!(r["claims"].as_array().unwrap().len(), 1, "{paths}: {r}");
        assert_eq!(r["claims"][0]["id"], json!(a_id), "{paths}: {r}");
    }
    let none = c.ok("claims_for", json!({"paths": ["README"]}));
    assert_eq!(none["claims"], json!([]), "{none}");
    // Every claim: all three, a page at a time.
    let all = c.ok("claims_for", json!({}));
    assert_eq!(all["claims"].as_array().unwrap().len(), 3, "{all}");
    let first = c.ok("claims_for", json!({"limit": 2}));
    assert_eq!(first["pagination"]["has_more"], json!(true), "{first}");
    let rest = c.ok(
        "claims_for",
        json!({"limit": 2, "cursor": first["pagination"]["next_cursor"].clone()}),
    );
    assert_eq!(rest["claims"].as_array().unwrap().len(), 1, "{rest}");

    let shown = c.ok("show", json!({"id": &c_id[..12]}));
    assert_eq!(shown["id"], json!(c_id), "{shown}");
    assert_eq!(shown["claim"]["dependsOn"], json!([b_id]), "{shown}");
    let log = c.ok("log", json!({"limit": 2}));
    assert_eq!(log["entries"][0]["id"], json!(a_id), "{log}");
    assert_eq!(log["pagination"]["has_more"], json!(true), "{log}");
    let rest = c.ok(
        "log",
        json!({"cursor": log["pagination"]["next_cursor"].clone()}),
    );
    assert_eq!(rest["entries"][0]["id"], json!(c_id), "{rest}");

    // What the store warns of comes back with the result.
    let missing = some_id(7);
    let d = c.ok(
        "claim",
        json!({"text": "rests on nothing known", "depends_on": [&missing]}),
    );
    let codes: Vec<&str> = d["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["code"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"MISSING_PREMISE"), "{d}");
    c.finish();

    // The CLI sees the same log.
    let (code, json) = elench(w.dir(), &with_store(&w.store, &["blast", &a_id]));
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["data"]["count"], json!(2), "{json}");
}

#[test]
fn check_evaluates_a_predicate_claim_with_the_harness_key() {
    let w = World::new();
    let mut c = w.serve_all();
    let yes = c.ok(
        "claim",
        json!({"text": "the library exists", "anchor": ["src/lib.rs"],
               "predicate": "exists(\"src/lib.rs\")"}),
    );
    let no = c.ok(
        "claim",
        json!({"text": "there is a main", "predicate": "exists(\"src/main.rs\")"}),
    );
    let (yes, no) = (yes["id"].as_str().unwrap(), no["id"].as_str().unwrap());
    let out = c.ok("check", json!({"ids": [yes, no]}));
    let outcome = |id: &str| {
        out["checked"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["id"] == id)
            .unwrap_or_else(|| panic!("{id} is in {out}"))
            .clone()
    };
    assert_eq!(outcome(yes)["outcome"], "verified", "{out}");
    assert_eq!(outcome(no)["outcome"], "falsified", "{out}");
    let record = outcome(yes)["record"].as_str().unwrap().to_owned();
    let st = c.ok("status", json!({"ids": [yes, no]}));
    assert_eq!(st["claims"][0]["status"], "verified", "{st}");
    assert_eq!(st["claims"][0]["decided_by"], json!([record]), "{st}");
    assert_eq!(st["claims"][1]["status"], "falsified", "{st}");
    // The record is the harness's.
    let shown = c.ok("show", json!({"id": record}));
    assert_eq!(
        shown["claim"]["origin"]["kind"], "harness-observed",
        "{shown}"
    );
    c.finish();
}

#[test]
fn failures_are_tool_results_with_elench_codes() {
    let w = World::new();
    let mut c = w.serve_all();
    let unknown = some_id(9);
    let e = c.err("status", json!({ "ids": [&unknown] }));
    assert_eq!(e["code"], "NOT_FOUND", "{e}");
    assert!(e["message"].as_str().unwrap().contains(&unknown), "{e}");
    assert!(
        e["suggestion"].as_str().is_some_and(|s| !s.is_empty()),
        "{e}"
    );
    assert_eq!(e["retryable"], json!(false), "{e}");
    let e = c.err("blast", json!({"id": "cl_0123abcd"}));
    assert_eq!(e["code"], "NOT_FOUND", "{e}");
    let e = c.err("show", json!({"id": &unknown}));
    assert_eq!(e["code"], "NOT_FOUND", "{e}");
    // Arguments that break the input schema: every fault, with its pointer.
    let e = c.err("status", json!({"ids": ["nope"], "all": true}));
    assert_eq!(e["code"], "BAD_ARGUMENTS", "{e}");
    let m = e["message"].as_str().unwrap();
    assert!(m.contains("/ids/0") && m.contains("/all"), "{e}");
    assert!(
        e["suggestion"].as_str().unwrap().contains("input schema"),
        "{e}"
    );
    // The signer, origin and producer are the server's: no call can choose them.
    for field in [
        json!({"producer": "someone-else"}),
        json!({"signer": "ci"}),
        json!({"origin": {"kind": "harness-observed"}}),
        json!({"key": "/tmp/other.pem"}),
    ] {
        let mut args = json!({"text": "x"});
        args.as_object_mut()
            .unwrap()
            .extend(field.as_object().unwrap().clone());
        let e = c.err("claim", args);
        assert_eq!(e["code"], "BAD_ARGUMENTS", "{field}: {e}");
    }
    // An agent key cannot verify (a verification is the harness's to make).
    let a = c.ok("claim", json!({"text": "a"}));
    let e = c.err(
        "claim",
        json!({"kind": "verification", "target": [a["id"].clone()]}),
    );
    assert_eq!(e["code"], "ROLE_VIOLATION", "{e}");
    // A policy that does not parse, with its place.
    let e = c.err("gate", json!({"policy_toml": "[rules\n"}));
    assert_eq!(e["code"], "BAD_POLICY", "{e}");
    // A policy file is one of the tree's: nothing outside it is read, whatever the path.
    std::os::unix::fs::symlink("/etc/passwd", w.tree.join("policy.toml")).unwrap();
    std::fs::write(w.dir().join("outside.toml"), "[rules]\n").unwrap();
    for policy in ["/etc/passwd", "../outside.toml", "policy.toml", "src"] {
        let e = c.err("gate", json!({ "policy": policy }));
        assert_eq!(e["code"], "BAD_ARGUMENTS", "{policy}: {e}");
        assert!(!e["message"].as_str().unwrap().contains("root:"), "{e}");
    }
    std::fs::write(
        w.tree.join("release.toml"),
        "[rules]\nmax_unevaluated = 0\n",
    )
    .unwrap();
    let g = c.ok("gate", json!({"policy": "./release.toml"}));
    assert_eq!(g["pass"], json!(false), "{g}");
    // A gate that refuses the tree is an answer, not an error.
    let g = c.ok(
        "gate",
        json!({"policy_toml": "[rules]\nmax_unevaluated = 0\n"}),
    );
    assert_eq!(g["pass"], json!(false), "{g}");
    // A tool that does not exist is a protocol error.
    let r = c.request("tools/call", json!({"name": "nope", "arguments": {}}));
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    // Only "a" was appended.
    let log = c.ok("log", json!({}));
    assert_eq!(log["entries"].as_array().unwrap().len(), 1, "{log}");
    c.finish();
}

#[test]
fn read_only_serves_only_the_tools_that_change_nothing() {
    let w = World::new();
    let (mut c, _) = w.serve(&["--read-only"]);
    let tools = c.tools();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, READ_TOOLS);
    assert!(
        tools
            .iter()
            .all(|t| t["annotations"]["readOnlyHint"] == true),
        "{tools:?}"
    );
    let r = c.request(
        "tools/call",
        json!({"name": "claim", "arguments": {"text": "x"}}),
    );
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--read-only"),
        "{r}"
    );
    let log = c.ok("log", json!({}));
    assert_eq!(log["entries"], json!([]), "{log}");
    // why is served: it answers (here, that there is no such claim) as a tool.
    let e = c.err("why", json!({"from": some_id(1), "to": some_id(2)}));
    assert_eq!(e["code"], "NOT_FOUND", "{e}");
    c.finish();

    // A harness key does not bring check back under --read-only.
    let (mut c, _) = w.serve(&["--read-only", "--harness-key", p(&w.keys.harness.private)]);
    let tools = c.tools();
    assert_eq!(tools.len(), READ_TOOLS.len(), "{tools:?}");
    c.finish();
}

#[test]
fn a_claim_through_mcp_is_the_claim_elench_claim_makes() {
    let w = World::new();
    let other = w.dir().join("store2");
    init_store_trusting(
        w.dir(),
        &other,
        &[&w.keys.harness, &w.keys.agent, &w.keys.human],
    );
    let mut c = w.serve_all();
    let first = c.ok(
        "claim",
        json!({"text": "parse reads the first byte", "anchor": ["src/lib.rs:1-3"],
               "predicate": "exists(\"src/lib.rs\")", "timestamp": 1_700_000_000,
               "session": "s-1", "evidence": ["process-exit:0"]}),
    );
    let first_id = first["id"].as_str().unwrap().to_owned();
    let second = c.ok(
        "claim",
        json!({"text": "built on it", "depends_on": [&first_id[..9]],
               "timestamp": 1_700_000_001}),
    );
    c.finish();
    let cli = |args: &[&str]| {
        let mut line = vec!["claim"];
        line.extend_from_slice(args);
        line.extend_from_slice(&["--at", p(&w.tree), "--key", p(&w.keys.agent.private)]);
        let (code, json) = elench(w.dir(), &with_store(&other, &line));
        assert_eq!(code, 0, "{json}");
        json["data"]["claims"][0]["id"].as_str().unwrap().to_owned()
    };
    let one = cli(&[
        "parse reads the first byte",
        "--anchor",
        "src/lib.rs:1-3",
        "--predicate",
        "exists(\"src/lib.rs\")",
        "--timestamp",
        "1700000000",
        "--session",
        "s-1",
        "--evidence",
        "process-exit:0",
    ]);
    let two = cli(&[
        "built on it",
        "--depends-on",
        &one,
        "--timestamp",
        "1700000001",
    ]);
    assert_eq!(one, first_id);
    assert_eq!(two, second["id"].as_str().unwrap());
    // The same envelopes, byte for byte.
    assert_eq!(
        export_bundle(w.dir(), &w.store),
        export_bundle(w.dir(), &other)
    );
}

#[test]
fn a_server_that_cannot_work_says_so_on_stderr_and_nothing_on_stdout() {
    let w = World::new();
    for (args, code) in [
        (
            vec![
                "--store",
                "nowhere",
                "mcp",
                "--key",
                p(&w.keys.agent.private),
            ],
            4,
        ),
        (
            vec!["--store", p(&w.store), "mcp", "--key", "no-such.pem"],
            2,
        ),
    ] {
        let out = command(w.dir()).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}: {:?}", out.stdout);
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
}

#[test]
fn a_cancelled_check_stops_between_claims_and_keeps_what_it_recorded() {
    let w = World::new();
    let mut c = w.serve_all();
    let ids: Vec<String> = (0..3)
        .map(|n| {
            let made = c.ok(
                "claim",
                json!({"text": format!("slow {n}"), "predicate": "run(\"sleep 3\").exit == 0"}),
            );
            made["id"].as_str().unwrap().to_owned()
        })
        .collect();
    // The check is sent, and cancelled while its first claim is evaluated.
    c.next_id += 1;
    let check_id = c.next_id;
    c.send(
        json!({"jsonrpc": "2.0", "id": check_id, "method": "tools/call",
                  "params": {"name": "check", "arguments": {"ids": ids}}}),
    );
    std::thread::sleep(Duration::from_millis(1500));
    c.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": check_id, "reason": "the agent moved on"}}),
    );
    // The server still answers, and ends when the client does, the check stopped.
    let log = c.ok("log", json!({}));
    assert!(log["entries"].as_array().unwrap().len() >= 3, "{log}");
    c.finish();
    let (code, json) = elench(w.dir(), &with_store(&w.store, &["log", "--limit", "100"]));
    assert_eq!(code, 0, "{json}");
    let records = json["data"]["entries"].as_array().unwrap().len() - 3;
    assert!(
        records < 3,
        "a cancelled check records no claim after the one in hand: {json}"
    );
}

#[test]
fn the_server_outlives_elench_timeout_and_the_manifest_says_it_has_no_limit() {
    let w = World::new();
    let mut args = vec![
        "--store",
        p(&w.store),
        "mcp",
        "--read-only",
        "--at",
        p(&w.tree),
    ];
    let mut child = Command::new(env!("CARGO_BIN_EXE_elench"));
    child.env("ELENCH_TIMEOUT", "1");
    // ELENCH_TIMEOUT bounds one-shot commands, not a session an agent keeps open.
    let (mut c, _) = Client::start_with(child, w.dir(), &args);
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(c.tools().len(), READ_TOOLS.len());
    c.finish();
    // A limit on the server's own line still holds.
    args.extend_from_slice(&["--timeout", "1"]);
    let (mut c, _) = Client::start(w.dir(), &args);
    let status = c.wait_for_end();
    assert_eq!(status.code(), Some(10), "TIMEOUT");

    let (code, json) = elench(w.dir(), &["manifest"]);
    assert_eq!(code, 0, "{json}");
    let timeout = &json["data"]["commands"]["mcp"]["exit_codes"]["10"]["description"];
    assert!(
        timeout.as_str().unwrap().contains("none by default"),
        "{timeout}"
    );
}

#[test]
fn a_chain_of_claims_in_one_call() {
    let w = World::new();
    let mut c = w.serve_all();
    let out = c.ok(
        "claim",
        json!({"claims": [
            {"text": "parse reads the first byte", "anchor": ["src/lib.rs:1-3"]},
            {"text": "parse never panics", "depends_on": ["@1"]},
            {"text": "the reader is safe", "depends_on": ["@2"]}
        ]}),
    );
    assert_eq!(out["created"], json!(3), "{out}");
    assert!(out.get("id").is_none(), "a list has no one id: {out}");
    let rows = out["claims"].as_array().unwrap();
    let lines: Vec<&Value> = rows.iter().map(|r| &r["line"]).collect();
    assert_eq!(lines, [&json!(1), &json!(2), &json!(3)], "{out}");
    let ids: Vec<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    let blast = c.ok("blast", json!({"id": ids[0]}));
    assert_eq!(blast["count"], json!(2), "{blast}");
    assert_eq!(
        blast["layers"][2]["claims"][0]["id"],
        json!(ids[2]),
        "{blast}"
    );
    assert_eq!(
        blast["layers"][2]["claims"][0]["via"],
        json!(ids[1]),
        "{blast}"
    );

    // A list with a claim that cannot be made appends none of it.
    let e = c.err(
        "claim",
        json!({"claims": [{"text": "fine"}, {"text": "bad", "predicate": "exists("}]}),
    );
    assert_eq!(e["code"], "PREDICATE_PARSE_ERROR", "{e}");
    // The single claim's fields beside a list, or @N outside one, are refused.
    let e = c.err("claim", json!({"text": "x", "claims": [{"text": "y"}]}));
    assert_eq!(e["code"], "BAD_ARGUMENTS", "{e}");
    let e = c.err("claim", json!({"text": "x", "depends_on": ["@1"]}));
    assert_eq!(e["code"], "BAD_ARGUMENTS", "{e}");
    let e = c.err("claim", json!({"claims": [{"text": "y", "producer": "z"}]}));
    assert_eq!(e["code"], "BAD_ARGUMENTS", "{e}");
    let log = c.ok("log", json!({}));
    assert_eq!(log["entries"].as_array().unwrap().len(), 3, "{log}");
    c.finish();
}

/// `blast` with `invert`: what a claim rests on, the same answer `elench blast --invert`
/// gives (one operation behind both).
#[test]
fn blast_inverted_is_what_the_claim_rests_on_as_the_cli_says() {
    let w = World::new();
    let mut c = w.serve_all();
    let out = c.ok(
        "claim",
        json!({"claims": [
            {"text": "parse reads the first byte", "anchor": ["src/lib.rs:1-3"]},
            {"text": "parse never panics", "depends_on": ["@1"]},
            {"text": "the reader is safe", "depends_on": ["@2"]}
        ]}),
    );
    let ids: Vec<String> = out["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    let mut rests = c.ok("blast", json!({"id": &ids[2], "invert": true}));
    assert_eq!(rests["root"], json!(ids[2]), "{rests}");
    assert_eq!(rests["count"], json!(2), "{rests}");
    assert_eq!(
        rests["layers"][1]["claims"][0]["id"],
        json!(ids[1]),
        "{rests}"
    );
    assert_eq!(
        rests["layers"][2]["claims"][0]["id"],
        json!(ids[0]),
        "{rests}"
    );
    assert_eq!(
        rests["layers"][2]["claims"][0]["via"],
        json!(ids[1]),
        "{rests}"
    );
    assert_eq!(rests["affected"], json!([]), "{rests}");
    // Paged as a blast radius is.
    let page = c.ok("blast", json!({"id": &ids[2], "invert": true, "limit": 1}));
    assert_eq!(page["pagination"]["total"], json!(3), "{page}");
    c.finish();

    let (code, json) = elench(
        w.dir(),
        &with_store(&w.store, &["blast", &ids[2], "--invert"]),
    );
    assert_eq!(code, 0, "{json}");
    let fields = rests.as_object_mut().unwrap();
    fields.remove("pagination");
    fields.remove("warnings");
    // What the tool adds beside the command line's data: the texts and premises its
    // documents show (held to the command line in the next test).
    without_document_fields(fields);
    assert_eq!(Value::Object(fields.clone()), json["data"], "{json}");
}

/// A `blast` result without each claim's `text` and each member's `premises`.
fn without_document_fields(blast: &mut serde_json::Map<String, Value>) {
    let claims = blast["layers"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .flat_map(|l| l["claims"].as_array_mut().unwrap().iter_mut());
    for m in claims {
        let m = m.as_object_mut().unwrap();
        assert!(
            m.remove("text").is_some() && m.remove("premises").is_some(),
            "{m:?}"
        );
    }
    for a in blast["affected"].as_array_mut().unwrap() {
        assert!(a.as_object_mut().unwrap().remove("text").is_some(), "{a}");
    }
}

/// What the command line's documents show beside its JSON comes to an MCP client as fields
/// of the results: `blast` gives each member's text and premises, `status` a revoked
/// claim's falsified roots placed at the tree; each is what the command line says.
#[test]
fn blast_and_status_give_what_the_documents_show_as_the_cli_says() {
    let w = World::new();
    let mut c = w.serve_all();
    let out = c.ok(
        "claim",
        json!({"claims": [
            {"text": "parse reads the first byte", "anchor": ["src/lib.rs:1-3"]},
            {"text": "parse never panics", "depends_on": ["@1"]},
            {"text": "the reader is safe", "depends_on": ["@2"]}
        ]}),
    );
    let ids: Vec<String> = out["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    let radius = c.ok("blast", json!({"id": &ids[0]}));
    let member = &radius["layers"][1]["claims"][0];
    assert_eq!(member["id"], json!(ids[1]), "{radius}");
    let (code, shown) = elench(w.dir(), &with_store(&w.store, &["show", &ids[1]]));
    assert_eq!(code, 0, "{shown}");
    assert_eq!(
        member["premises"], shown["data"]["claim"]["dependsOn"],
        "{radius}"
    );
    let (code, status) = elench(w.dir(), &with_store(&w.store, &["status", &ids[1]]));
    assert_eq!(code, 0, "{status}");
    assert_eq!(
        member["text"], status["data"]["claims"][0]["text"],
        "{radius}"
    );
    assert_eq!(member["text"], json!("parse never panics"), "{radius}");

    // The first falls: the last is revoked, and its falsified root is placed at the tree.
    c.ok(
        "claim",
        json!({"kind": "falsification", "target": [&ids[0]], "text": "it reads two"}),
    );
    let st = c.ok("status", json!({"ids": [&ids[2]]}));
    let row = &st["claims"][0];
    assert_eq!(row["status"], "revoked", "{st}");
    let (code, cli) = elench(w.dir(), &with_store(&w.store, &["status", &ids[2]]));
    assert_eq!(code, 0, "{cli}");
    assert_eq!(
        row["roots"][0]["id"], cli["data"]["claims"][0]["revoked_by"][0]["root"],
        "{st}"
    );
    assert_eq!(row["roots"][0]["path"], json!("src/lib.rs"), "{st}");
    assert_eq!(
        row["roots"][0]["text"],
        json!("parse reads the first byte"),
        "{st}"
    );
    c.finish();
}

/// What the command line's gate documents place beside the violations comes to an MCP
/// client as fields of the `gate` result: a revoked claim's falsified roots placed at the
/// tree, and where the policy is; each is what `elench gate --format sarif` says.
#[test]
fn gate_gives_what_its_documents_place_as_the_cli_says() {
    let w = World::new();
    let mut c = w.serve_all();
    let out = c.ok(
        "claim",
        json!({"claims": [
            {"text": "parse reads the first byte", "anchor": ["src/lib.rs:1-3"]},
            {"text": "parse never panics", "anchor": ["src/lib.rs:2-3"], "depends_on": ["@1"]}
        ]}),
    );
    let ids: Vec<String> = out["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    c.ok(
        "claim",
        json!({"kind": "falsification", "target": [&ids[0]], "text": "it reads two"}),
    );
    // A policy kept below the tree's top, with a min_in_scope line the scope breaks.
    std::fs::create_dir_all(w.tree.join("policy")).unwrap();
    std::fs::write(
        w.tree.join("policy/release.toml"),
        "[rules]\nforbid = [\"revoked\"]\nmin_in_scope = 99\n",
    )
    .unwrap();
    let g = c.ok("gate", json!({"policy": "policy/release.toml"}));
    assert_eq!(g["pass"], json!(false), "{g}");
    let revoked = g["violations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["id"] == json!(ids[1]))
        .unwrap_or_else(|| panic!("{g}"));
    assert_eq!(revoked["status"], "revoked", "{g}");

    // The same store, tree and policy on the command line, as SARIF.
    let run = crate::common::run_raw(
        &w.tree,
        &with_store(
            &w.store,
            &[
                "gate",
                "--policy",
                "policy/release.toml",
                "--format",
                "sarif",
            ],
        ),
    );
    assert_eq!(run.code, 79, "{}", run.stderr);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    let results = doc["runs"][0]["results"].as_array().unwrap();
    let result = results
        .iter()
        .find(|r| r["partialFingerprints"]["elenchClaimId/v1"] == json!(ids[1]))
        .unwrap_or_else(|| panic!("{doc}"));
    let related = result["relatedLocations"].as_array().unwrap();
    let roots = revoked["roots"].as_array().unwrap_or_else(|| panic!("{g}"));
    assert_eq!(roots.len(), related.len(), "{g}\n{result}");
    for (root, rel) in roots.iter().zip(related) {
        let said = rel["message"]["text"].as_str().unwrap();
        assert_eq!(
            said,
            format!(
                "falsified root {}: \"{}\"",
                root["id"].as_str().unwrap(),
                root["text"].as_str().unwrap()
            ),
            "{root}"
        );
        let loc = &rel["physicalLocation"];
        assert_eq!(root["path"], loc["artifactLocation"]["uri"], "{root}");
        assert_eq!(
            root["range"],
            json!([loc["region"]["startLine"], loc["region"]["endLine"]]),
            "{root}"
        );
    }
    assert_eq!(roots[0]["id"], json!(ids[0]), "{g}");
    assert_eq!(roots[0]["path"], json!("src/lib.rs"), "{g}");
    // The scope's violation is placed at the policy, on its min_in_scope line.
    let scope = results
        .iter()
        .find(|r| r["partialFingerprints"]["elenchRule/v1"].is_string())
        .unwrap_or_else(|| panic!("{doc}"));
    let loc = &scope["locations"][0]["physicalLocation"];
    assert_eq!(
        g["policy_place"],
        json!({"path": loc["artifactLocation"]["uri"], "line": loc["region"]["startLine"]}),
        "{g}"
    );
    assert_eq!(
        g["policy_place"],
        json!({"path": "policy/release.toml", "line": 3}),
        "{g}"
    );
    // A policy given inline is in no file; the command line's JSON stays as it was.
    let inline = c.ok(
        "gate",
        json!({"policy_toml": "[rules]\nforbid = [\"revoked\"]\n"}),
    );
    assert_eq!(inline["policy_place"], Value::Null, "{inline}");
    assert!(inline["violations"][0]["roots"].is_array(), "{inline}");
    let (code, cli) = elench(
        &w.tree,
        &with_store(&w.store, &["gate", "--policy", "policy/release.toml"]),
    );
    assert_eq!(code, 79, "{cli}");
    assert!(cli["data"].get("policy_place").is_none(), "{cli}");
    assert!(cli["data"]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .all(|v| v.get("roots").is_none()));
    c.finish();
}

#[test]
fn sigterm_ends_the_server_with_nothing_more_on_stdout() {
    let w = World::new();
    let (mut c, _) = w.serve(&["--read-only"]);
    assert_eq!(c.tools().len(), READ_TOOLS.len());
    // SAFETY: a signal to the child this test started and still holds.
    let sent = unsafe { libc::kill(c.child.id() as i32, libc::SIGTERM) };
    assert_eq!(sent, 0);
    let status = c.wait_for_end();
    assert_eq!(status.code(), Some(143), "CANCELLED by SIGTERM");
    // The answer to the signal goes to stderr: stdout carried only the protocol.
    std::thread::sleep(Duration::from_millis(100));
    let after: Vec<String> = c.lines.try_iter().collect();
    assert!(after.is_empty(), "stdout after SIGTERM: {after:?}");
}

impl Client {
    /// Every item of a list tool, page after page from `args`, following `next_cursor`
    /// until none: each page is within the cap (checked by [`Client::ok`]); returns the
    /// items' ids (by `ids_of`) and how many pages the cap cut.
    fn follow(
        &mut self,
        tool: &str,
        args: Value,
        ids_of: &dyn Fn(&Value) -> Vec<String>,
    ) -> (Vec<String>, usize) {
        let mut ids = Vec::new();
        let mut cut = 0;
        let mut call = args.clone();
        for _ in 0..1000 {
            let page = self.ok(tool, call.clone());
            let got = ids_of(&page);
            assert!(!got.is_empty(), "{tool}: a page moves on: {page}");
            let pg = &page["pagination"];
            assert_eq!(pg["returned"], json!(got.len()), "{page}");
            if page.get("truncation").is_some() {
                cut += 1;
                let next = pg["next_cursor"].as_str().expect("a cut page goes on");
                assert_eq!(pg["truncated"], json!(true), "{page}");
                assert_eq!(pg["has_more"], json!(true), "{page}");
                let hint = page["truncation"]["hint"].as_str().unwrap();
                assert!(hint.contains(&format!("cursor {next:?}")), "{hint}");
                let codes: Vec<&Value> = page["warnings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|w| &w["code"])
                    .collect();
                assert!(codes.contains(&&json!("RESPONSE_TRUNCATED")), "{page}");
            }
            ids.extend(got);
            match pg["next_cursor"].as_str() {
                Some(next) => call["cursor"] = json!(next),
                None => {
                    assert_eq!(pg["has_more"], json!(false), "{page}");
                    return (ids, cut);
                }
            }
        }
        panic!("{tool}: the pages never end");
    }
}

fn ids_at(list: &'static str) -> impl Fn(&Value) -> Vec<String> {
    move |v: &Value| {
        v[list]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["id"].as_str().unwrap().to_owned())
            .collect()
    }
}

/// ELENCH_MAX_OUTPUT_BYTES, read when the server starts, bounds every tool result as it
/// bounds the command line's JSON: a result that would be larger comes back as whole JSON
/// with fewer items, `truncation` and `RESPONSE_TRUNCATED`, and its `next_cursor` goes on
/// exactly where it stopped, so the pages together are the whole list.
#[test]
fn results_keep_to_the_byte_cap_and_the_cursor_goes_on() {
    const CAP: usize = 4096;
    let w = World::new();
    let mut env = Command::new(env!("CARGO_BIN_EXE_elench"));
    env.env("ELENCH_MAX_OUTPUT_BYTES", CAP.to_string());
    let (mut c, _) = Client::start_with(
        env,
        w.dir(),
        &[
            "--store",
            p(&w.store),
            "mcp",
            "--at",
            p(&w.tree),
            "--key",
            p(&w.keys.agent.private),
        ],
    );
    c.cap = Some(CAP);
    // A root and 59 claims resting on it, each with a long text: far more than the cap.
    let long = "a claim with words enough to weigh something in a context window, ".repeat(3);
    let mut list = vec![json!({"text": format!("root: {long}")})];
    for n in 2..=60 {
        list.push(json!({"text": format!("{n}: {long}"), "depends_on": ["@1"]}));
    }
    // The claim tool's own answer (sixty rows) is cut too, its counts whole.
    let made = c.ok("claim", json!({ "claims": list }));
    assert_eq!(made["created"], json!(60), "{made}");
    let rows = made["claims"].as_array().unwrap().len();
    assert!((1..60).contains(&rows), "{made}");
    assert!(made["truncation"]["hint"].is_string(), "{made}");

    // The log, every entry once, in order, over pages the cap cut.
    let (logged, cut) = c.follow("log", json!({"limit": 100}), &ids_at("entries"));
    assert_eq!(logged.len(), 60, "{logged:?}");
    assert!(cut > 0, "the cap cut some page of the log");
    let root = logged[0].clone();
    let mut uniq = logged.clone();
    uniq.sort();
    uniq.dedup();
    assert_eq!(uniq.len(), 60, "no entry twice");

    // status of the sixty ids: rows over pages, in the order asked, none lost.
    let (rows, cut) = c.follow("status", json!({ "ids": &logged }), &ids_at("claims"));
    assert_eq!(rows, logged);
    assert!(cut > 0, "the cap cut some page of status");
    // A limit pages status without the cap's help.
    let two = c.ok("status", json!({"ids": &logged, "limit": 2}));
    assert_eq!(two["pagination"]["next_cursor"], "2", "{two}");
    assert_eq!(two["pagination"]["total"], json!(60), "{two}");
    assert!(two.get("truncation").is_none(), "{two}");

    // blast of the root: the root and its 59 dependents.
    let members = |v: &Value| -> Vec<String> {
        v["layers"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|l| l["claims"].as_array().unwrap().clone())
            .map(|x| x["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let (blasted, cut) = c.follow("blast", json!({ "id": &root }), &members);
    assert!(cut > 0, "the cap cut some page of blast");
    assert_eq!(blasted[0], root);
    let mut got = blasted.clone();
    got.sort();
    assert_eq!(got, uniq, "every member once");

    // claims_for pages by 20; each page is cut further to the cap.
    let (all, cut) = c.follow("claims_for", json!({}), &ids_at("claims"));
    assert_eq!(all, logged);
    assert!(cut > 0, "the cap cut some page of claims_for");

    // A failure is kept to the cap too: a hundred unknown ids, each named in the message.
    let unknown: Vec<String> = (0..100u8).map(some_id).collect();
    let e = c.err("status", json!({ "ids": &unknown }));
    assert_eq!(e["code"], "NOT_FOUND", "{e}");
    assert!(e["message"].as_str().unwrap().ends_with('…'), "{e}");

    // A cursor no page gave is refused, naming it.
    let e = c.err("status", json!({"ids": &logged, "cursor": "60"}));
    assert_eq!(e["code"], "BAD_ARGUMENTS", "{e}");
    assert!(e["message"].as_str().unwrap().contains("\"60\""), "{e}");
    // Named as the call's field, not as the command line's option.
    assert!(
        e["message"].as_str().unwrap().starts_with("cursor \"60\""),
        "{e}"
    );
    // And the field at fault is named apart from the message.
    assert_eq!(e["param"], "cursor", "{e}");
    for tool in ["log", "claims_for"] {
        let e = c.err(tool, json!({"cursor": "x".repeat(100_000)}));
        assert_eq!(e["code"], "BAD_ARGUMENTS", "{tool}: {e}");
    }
    c.finish();
}

/// The official MCP TypeScript SDK, as TypeScript agents and the MCP Inspector use it, drives
/// the server (tests/mcp-ts/client.mjs): it lists the tools, makes calls that succeed and
/// calls that fail, and accepts every result, a failure's included (it checks structured
/// content against the tool's output schema and throws -32602 when it does not match).
/// Skipped when node or the SDK (`npm ci` in tests/mcp-ts, which `.ci/run` does) is absent.
#[test]
fn the_typescript_sdk_accepts_every_result_and_every_failure() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-ts");
    let node = Command::new("node").arg("--version").output();
    if !node.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: node is not installed");
        return;
    }
    if !dir
        .join("node_modules/@modelcontextprotocol/sdk/package.json")
        .exists()
    {
        eprintln!("skipped: the MCP TypeScript SDK is not installed (npm ci in tests/mcp-ts)");
        return;
    }
    let w = World::new();
    let mut child = Command::new("node")
        .arg("client.mjs")
        .current_dir(&dir)
        .env("ELENCH_BIN", env!("CARGO_BIN_EXE_elench"))
        .env("ELENCH_TEST_STORE", &w.store)
        .env("ELENCH_TEST_TREE", &w.tree)
        .env("ELENCH_TEST_AGENT_KEY", &w.keys.agent.private)
        .env_remove("ELENCH_STORE")
        .env_remove("ELENCH_PRODUCER")
        .env_remove("CI")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node starts");
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > ANSWER_WITHIN {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains(" passed, 0 failed"),
        "the TypeScript client ({}):\n{stdout}\n{stderr}",
        out.status
    );
}

/// What the server cannot read is answered with a JSON-RPC error, never with silence (a
/// client would wait for ever): a line that is not JSON, or nests too deep to read, -32700
/// with id null; JSON that is not a request, -32600; a request whose params do not fit its
/// method, -32602 with its id. A line over 4 MiB is answered -32600 and skipped without
/// being held. After each, the session goes on.
#[test]
fn requests_the_server_cannot_read_are_answered_and_the_session_goes_on() {
    let w = World::new();
    let (mut c, _) = w.serve(&["--read-only"]);
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let cases: Vec<(&[u8], i64, Value)> = vec![
        (
            br#"{"jsonrpc": "2.0", "id": 1, "method":"#,
            -32700,
            Value::Null,
        ),
        (deep.as_bytes(), -32700, Value::Null),
        (b"\xff\xfe not even text", -32700, Value::Null),
        (br#"{"foo": 1}"#, -32600, Value::Null),
        (
            br#"[{"jsonrpc": "2.0", "id": 5, "method": "ping"}]"#,
            -32600,
            Value::Null,
        ),
        (br#"{"id": 6, "method": "ping"}"#, -32600, json!(6)),
        (
            br#"{"jsonrpc": "2.0", "id": "seven", "method": "tools/call", "params": 5}"#,
            -32602,
            json!("seven"),
        ),
    ];
    for (line, code, id) in cases {
        let shown = String::from_utf8_lossy(&line[..line.len().min(60)]).into_owned();
        c.send_raw(line);
        let a = c.next_message();
        assert_eq!(a["jsonrpc"], "2.0", "{shown}: {a}");
        assert_eq!(a["error"]["code"], json!(code), "{shown}: {a}");
        assert_eq!(
            a.get("id"),
            Some(&id),
            "{shown}: the id, null when unread: {a}"
        );
        assert!(a["error"]["message"].is_string(), "{a}");
        let r = c.request("ping", json!({}));
        assert!(
            r["result"].is_object(),
            "the session goes on after {shown}: {r}"
        );
    }
    // A notification is never answered, even one the server cannot read: the next message
    // is the ping's answer.
    c.send_raw(br#"{"jsonrpc": "2.0", "method": "notifications/unheard-of"}"#);
    let r = c.request("ping", json!({}));
    assert!(r["result"].is_object(), "{r}");

    // 64 MiB on one line: answered as soon as it passes the bound, skipped, never held.
    let before = c.proc_status("VmHWM");
    let mut huge = br#"{"jsonrpc": "2.0", "id": 8, "method": "ping", "params": {"pad": ""#.to_vec();
    huge.resize(huge.len() + (64 << 20), b'x');
    huge.extend_from_slice(br#""}}"#);
    c.send_raw(&huge);
    drop(huge);
    let a = c.next_message();
    assert_eq!(a["error"]["code"], json!(-32600), "{a}");
    assert_eq!(a.get("id"), Some(&Value::Null), "{a}");
    assert!(
        a["error"]["message"].as_str().unwrap().contains("4 MiB"),
        "{a}"
    );
    let r = c.request("ping", json!({}));
    assert!(r["result"].is_object(), "the session goes on: {r}");
    let grown = c.proc_status("VmHWM").saturating_sub(before);
    // Reading up to the 4 MiB bound may take a buffer of twice that, and the allocator its
    // own margin; holding the 64 MiB line would take far more than this.
    assert!(
        grown < 32 * 1024,
        "the server's peak memory grew by {grown} KiB for a line it skips"
    );
    // A long line within the bound is read: here a 3 MiB cursor, refused as a tool result.
    let e = c.err("log", json!({"cursor": "x".repeat(3 << 20)}));
    assert_eq!(e["code"], "BAD_ARGUMENTS", "{e}");
    c.finish();

    // A bad line just before the input ends is answered before the server ends.
    let mut child = Command::new(env!("CARGO_BIN_EXE_elench"))
        .current_dir(w.dir())
        .env_remove("ELENCH_STORE")
        .args([
            "--store",
            p(&w.store),
            "mcp",
            "--read-only",
            "--at",
            p(&w.tree),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"not json\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let a: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {:?}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(a["error"]["code"], json!(-32700), "{a}");
    assert_eq!(out.status.code(), Some(0), "{a}");
}

/// Calls sent all at once, without waiting for answers, are all answered, while only a few
/// run at a time (each running call holds a thread: the server's thread count stays near
/// `CALLS_AT_ONCE`, 4, where it once grew with every call waiting).
#[test]
fn pipelined_calls_are_all_answered_with_few_running_at_once() {
    const CALLS: usize = 300;
    let w = World::new();
    let mut c = w.serve_all();
    for n in 0..3 {
        c.ok(
            "claim",
            json!({"text": format!("claim {n}"), "anchor": ["src/lib.rs"]}),
        );
    }
    let pid = c.child.id();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut most = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                most = most.max(proc_status(pid, "Threads"));
                std::thread::sleep(Duration::from_millis(1));
            }
            most
        })
    };
    let calls = [
        json!({"name": "log", "arguments": {"limit": 20}}),
        json!({"name": "claims_for", "arguments": {}}),
        json!({"name": "status", "arguments": {"ids": ["cl_0000"]}}),
    ];
    let mut all = Vec::new();
    for n in 0..CALLS {
        let m = json!({"jsonrpc": "2.0", "id": format!("p{n}"), "method": "tools/call",
                       "params": calls[n % calls.len()]});
        writeln!(all, "{m}").unwrap();
    }
    c.send_raw(all.trim_ascii_end());
    let mut answered = std::collections::BTreeSet::new();
    while answered.len() < CALLS {
        let a = c.next_message();
        let id = a["id"].as_str().unwrap_or_else(|| panic!("{a}")).to_owned();
        assert!(a["result"].is_object(), "{a}");
        let ok = a["result"]["isError"] == json!(false);
        // status of an id not in the store fails as a tool result; the others succeed.
        let n: usize = id[1..].parse().unwrap();
        assert_eq!(ok, n % calls.len() != 2, "{a}");
        assert!(answered.insert(id), "answered twice: {a}");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let most = sampler.join().unwrap();
    assert!(
        most <= 32,
        "{most} threads at once for {CALLS} pipelined calls: more calls ran at once than the \
         server allows"
    );
    c.finish();
}

/// A client that sends thousands of calls and reads no answer meanwhile is not read without
/// end: the server reads at most 256 requests ahead of the answers it has written, so the
/// client's writes stop until it reads; then every call is answered.
#[test]
fn a_client_that_reads_no_answers_is_read_only_so_far_ahead() {
    const CALLS: usize = 3000;
    let w = World::new();
    let mut child = Command::new(env!("CARGO_BIN_EXE_elench"))
        .current_dir(w.dir())
        .env_remove("ELENCH_STORE")
        .args([
            "--store",
            p(&w.store),
            "mcp",
            "--read-only",
            "--at",
            p(&w.tree),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let init = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "elench-tests", "version": "0"}}});
    writeln!(stdin, "{init}").unwrap();
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("\"init\""), "{line}");
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();
    let written = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let writer = {
        let written = written.clone();
        std::thread::spawn(move || {
            for n in 0..CALLS {
                let m = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                               "params": {"name": "status", "arguments": {"ids": ["cl_0000"]}}});
                if writeln!(stdin, "{m}").is_err() {
                    break;
                }
                written.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            drop(stdin);
        })
    };
    // Until the writes stop (or all went through, as when nothing bounds the reading).
    let count = || written.load(std::sync::atomic::Ordering::Relaxed);
    let started = std::time::Instant::now();
    let (mut last, mut still_since) = (count(), std::time::Instant::now());
    while count() < CALLS && still_since.elapsed() < Duration::from_secs(2) {
        assert!(started.elapsed() < ANSWER_WITHIN, "the writes never settle");
        std::thread::sleep(Duration::from_millis(100));
        if count() != last {
            (last, still_since) = (count(), std::time::Instant::now());
        }
    }
    let before_reading = count();
    assert!(
        before_reading < CALLS,
        "the server read all {CALLS} calls while no answer was read"
    );
    let mut answered = std::collections::BTreeSet::new();
    for _ in 0..CALLS {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "the server ended");
        let a: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(a["result"]["isError"], json!(true), "NOT_FOUND: {a}");
        assert!(answered.insert(a["id"].as_u64().unwrap()), "{a}");
    }
    writer.join().unwrap();
    assert_eq!(answered.len(), CALLS);
    assert!(child.wait().unwrap().success());
    eprintln!("{before_reading} of {CALLS} calls written before any answer was read");
}

#[test]
fn trust_show_reports_the_pins_and_the_claim_tool_refuses_a_root_key() {
    let w = World::new();
    // The agent's key pinned as a root of the team: it may sign policies, never claims.
    let (code, out) = elench(
        w.tmp.path(),
        &with_store(&w.store, &["trust", "pin", p(&w.keys.agent.public)]),
    );
    assert_eq!(code, 0, "{out}");
    let (mut c, _) = w.serve(&["--key", p(&w.keys.agent.private)]);
    let t = c.ok("trust_show", json!({}));
    assert_eq!(t["pins"][0]["keyid"], json!(w.keys.agent.keyid), "{t}");
    assert_eq!(t["in_force"], json!(null), "{t}");
    let e = c.err("claim", json!({"text": "the root says so"}));
    assert_eq!(e["code"], "ROLE_VIOLATION", "{e}");
    assert!(e["message"].as_str().unwrap().contains("root key"), "{e}");
    let log = c.ok("log", json!({}));
    assert_eq!(log["entries"], json!([]), "nothing was recorded: {log}");
    c.finish();
}
