//! The protocol side: initialize, tools/list and tools/call over `rmcp`.
//!
//! A call's failure is a tool result with `isError: true` and one text content, the JSON
//! `{"error": {code, message, suggestion, …}, "warnings": […]}` (the same `error` object as
//! the CLI's JSON envelope), so that the model reads what went wrong and what to do. It has
//! no `structuredContent`: clients check that against the tool's output schema, which
//! describes a success. Only a request that names no served tool is a JSON-RPC error
//! (invalid params).

use super::bound;
use super::tools::{self, ToolDef};
use super::Config;
use elench::claim::schema::collect_violations;
use elench::ops::{Collected, Failure};
use jsonschema::Validator;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, ServerInitializeError};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::Semaphore;

struct Served {
    def: &'static ToolDef,
    tool: Tool,
    input: Validator,
}

pub struct Server {
    config: Arc<Config>,
    tools: Arc<HashMap<&'static str, Served>>,
    order: Vec<&'static str>,
    /// A permit per call that may run at once ([`CALLS_AT_ONCE`]).
    running: Arc<Semaphore>,
}

/// How many tool calls run at once. A client may send thousands without waiting for an
/// answer; each running call holds a thread, the store and its result, so the rest wait, in
/// the order they came (the semaphore is fair), holding only their arguments.
pub const CALLS_AT_ONCE: usize = 4;

fn object(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(m) => Arc::new(m),
        // Every schema in `schemas` is an object; a test holds them to it.
        _ => Arc::new(JsonObject::new()),
    }
}

impl Server {
    fn new(config: Config) -> Result<Server, Failure> {
        let mut tools = HashMap::new();
        let mut order = Vec::new();
        for def in tools::served(&config) {
            let input_schema = (def.input)();
            let input = jsonschema::draft202012::new(&input_schema).map_err(|e| {
                Failure::Internal(format!(
                    "mcp: the input schema of {} is wrong: {e}",
                    def.name
                ))
            })?;
            let mut annotations = ToolAnnotations::with_title(def.title)
                .read_only(def.read_only)
                .destructive(false)
                .idempotent(def.idempotent)
                .open_world(false);
            annotations.title = Some(def.title.to_owned());
            let tool = Tool::new(def.name, def.description, object(input_schema))
                .with_title(def.title)
                .with_raw_output_schema(object((def.output)()))
                .with_annotations(annotations);
            order.push(def.name);
            tools.insert(def.name, Served { def, tool, input });
        }
        Ok(Server {
            config: Arc::new(config),
            tools: Arc::new(tools),
            order,
            running: Arc::new(Semaphore::new(CALLS_AT_ONCE)),
        })
    }
}

pub async fn run(config: Config) -> Result<(), Failure> {
    let server = Server::new(config)?;
    let stdio = super::transport::Lines::new(tokio::io::stdin(), tokio::io::stdout());
    let running = match server.serve(stdio).await {
        Ok(r) => r,
        // The client went away before it began: nothing was asked, nothing failed.
        Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(e) => {
            return Err(Failure::usage(
                None,
                format!("mcp: the client did not open an MCP session (initialize first): {e}"),
            ))
        }
    };
    running
        .waiting()
        .await
        .map_err(|e| Failure::Internal(format!("mcp: the session ended abnormally: {e}")))?;
    Ok(())
}

fn warnings_json(w: Vec<(String, String)>) -> Value {
    Value::Array(
        w.into_iter()
            .map(|(code, message)| {
                json!(super::schemas::Warning {
                    code,
                    message: super::words::text(&message),
                })
            })
            .collect(),
    )
}

/// The tool result of a failure: elench's `error` object and the warnings, as JSON text,
/// within `cap` (a message naming a thousand unknown ids is shortened, never cut
/// mid-JSON).
fn failure_result(
    f: &Failure,
    warnings: Vec<(String, String)>,
    cap: Option<usize>,
) -> CallToolResult {
    failure_result_with(f, warnings, None, cap)
}

/// [`failure_result`] with advice of its own in place of the code's.
fn failure_result_with(
    f: &Failure,
    warnings: Vec<(String, String)>,
    suggestion: Option<&str>,
    cap: Option<usize>,
) -> CallToolResult {
    failure_result_full(f, None, warnings, suggestion, cap)
}

/// [`failure_result_with`], and the data that goes with the error when there is some (a
/// `claim` call the store took only in part: `{"error", "data", "warnings"}`, as the
/// command line's envelope has them).
fn failure_result_full(
    f: &Failure,
    data: Option<Value>,
    warnings: Vec<(String, String)>,
    suggestion: Option<&str>,
    cap: Option<usize>,
) -> CallToolResult {
    let mut error = super::words::json(f.to_json());
    // The input at fault, as this server's caller names it.
    if let Failure::Usage { param: Some(p), .. } = f {
        error["param"] = json!(super::words::say(elench::ops::error::Named::Input(*p)));
    }
    if let Some(s) = suggestion {
        error["suggestion"] = json!(s);
    } else if f.code() == elench::ops::error::CODE {
        // The manual's advice for bad arguments speaks of the command line's --help.
        error["suggestion"] = json!(
            "Fix the arguments as the message says; tools/list gives each tool's input schema"
        );
    }
    let mut whole = json!({"error": error});
    if let Some(data) = data {
        whole["data"] = data;
    }
    whole["warnings"] = warnings_json(warnings);
    let content = bound::fit(
        whole.clone(),
        cap,
        None,
        "",
        "the error's code says what failed",
    )
    .unwrap_or_else(|| {
        // Only the code and the start of the message: always small.
        let mut small = json!({"error": whole["error"].clone(), "warnings": []});
        let message: String = super::words::text(&f.to_string())
            .chars()
            .take(200)
            .collect();
        small["error"] = json!({
            "code": f.code(),
            "message": format!("{message}…"),
            "retryable": whole["error"]["retryable"].clone(),
        });
        small
    });
    // No structuredContent: a client checks structured content against the tool's output
    // schema, which describes a success; the error goes in the text, as JSON.
    CallToolResult::error(vec![ContentBlock::text(content.to_string())])
}

/// A result that does not fit the cap even cut down (an item whose many small members
/// outweigh it): said, never cut mid-JSON.
fn too_large(tool: &str, cap: Option<usize>) -> Failure {
    Failure::Invalid {
        code: elench::error::Code::TooLarge,
        message: format!(
            "{tool}: the result does not fit the server's cap of {} bytes even cut down; \
             start the server with a larger ELENCH_MAX_OUTPUT_BYTES",
            cap.unwrap_or(0)
        ),
    }
}

/// Arguments against the tool's input schema: every violation, with its pointer.
fn check_input(served: &Served, args: &Value) -> Result<(), Failure> {
    if served.input.is_valid(args) {
        return Ok(());
    }
    let violations = collect_violations(&served.input, args);
    let listed: Vec<String> = violations
        .iter()
        .map(|v| {
            let at = if v.pointer.is_empty() {
                "/"
            } else {
                &v.pointer
            };
            format!("at {at}: {}", v.message)
        })
        .collect();
    Err(Failure::usage(
        None,
        format!(
            "{}: the arguments do not match its input schema: {}",
            served.def.name,
            listed.join("; ")
        ),
    ))
}

impl ServerHandler for Server {
    fn get_info(&self) -> InitializeResult {
        let mut info = Implementation::new("elench", env!("CARGO_PKG_VERSION"));
        info.title = Some("elench".into());
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(info)
            .with_instructions(
                "elench keeps an append-only log of signed claims about this code. Before \
                 changing code, call claims_for with the paths you will touch; record what \
                 you concluded with claim (depends_on the claims it rests on); status and \
                 blast say where a claim stands and what falls with it.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.order
                .iter()
                .filter_map(|n| self.tools.get(n).map(|s| s.tool.clone()))
                .collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let request_name = name.clone();
        if !self.tools.contains_key(name.as_str()) {
            return Err(ErrorData::invalid_params(
                tools::not_served(&self.config, &name),
                Some(json!({"tool": name})),
            ));
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        let config = self.config.clone();
        let served_tools = self.tools.clone();
        let cancelled = context.ct.clone();
        // A call waits its turn; one cancelled while waiting never runs (its answer, as
        // every cancelled call's, is not sent).
        let permit = tokio::select! {
            permit = self.running.clone().acquire_owned() => permit,
            () = context.ct.cancelled() => return Err(ErrorData::internal_error(
                "the call was cancelled before it ran", None)),
        };
        let permit = permit.map_err(|_| ErrorData::internal_error("the server is ending", None))?;
        // The library blocks (the store, the sandbox): off the protocol's thread, holding
        // the permit until it is done.
        let outcome = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let observer = Arc::new(Collected::default());
            let served = &served_tools[name.as_str()];
            // The client's notifications/cancelled for this call: a check stops between
            // claims, keeping what it recorded, as on SIGINT.
            let stop = move || cancelled.is_cancelled().then_some(libc::SIGINT);
            let result = check_input(served, &args).and_then(|()| {
                tools::call(&config, served.def.name, args, observer.clone(), &stop)
            });
            (result, observer.take())
        })
        .await;
        let cap = self.config.max_output_bytes;
        let result = match outcome {
            // Refused in part or whole: the error, with the data that goes with it.
            Ok((
                Ok(tools::Answer {
                    value,
                    failure: Some(f),
                    ..
                }),
                warnings,
            )) => failure_result_full(&f, Some(value), warnings, None, cap),
            Ok((Ok(answer), warnings)) => {
                let mut data = answer.value;
                if let Value::Object(m) = &mut data {
                    m.insert("warnings".into(), warnings_json(warnings));
                }
                let def = self.tools[request_name.as_str()].def;
                match bound::fit(data, cap, answer.page.as_ref(), def.name, def.whole) {
                    Some(data) => CallToolResult::structured(data),
                    // TOO_LARGE's own advice speaks of claims; here the result is large.
                    None => failure_result_with(
                        &too_large(def.name, cap),
                        Vec::new(),
                        Some(
                            "Ask for less (a smaller limit, fewer ids), or start the server \
                             with a larger ELENCH_MAX_OUTPUT_BYTES",
                        ),
                        cap,
                    ),
                }
            }
            Ok((Err(f), warnings)) => failure_result(&f, warnings, cap),
            Err(e) => failure_result(
                &Failure::Internal(format!(
                    "elench failed unexpectedly ({e}); please report it with the tool call"
                )),
                Vec::new(),
                cap,
            ),
        };
        Ok(result.into())
    }
}
