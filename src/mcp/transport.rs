//! The stdio transport: one JSON-RPC message per line on stdin, one per line on stdout.
//!
//! Every line gets an answer or is a notification. A line longer than [`MAX_LINE_BYTES`] is
//! never held: it is answered at once with a JSON-RPC error (-32600, id null) and the rest of
//! it is skipped up to its newline, so a client that sends a huge line learns why and can go
//! on. A line that is not JSON (or nests deeper than serde_json's limit of 128) is answered
//! -32700 with id null; JSON that is not a request MCP knows is answered -32600 (-32602 when
//! only its params are wrong), with the request's id when it has a readable one. A
//! notification that cannot be read gets no answer, since JSON-RPC never answers a
//! notification.
//!
//! The transport reads at most [`MAX_UNANSWERED`] requests ahead of its answers: a request
//! counts from the moment it is read until its answer is sent or the client cancels it, so
//! a client that pipelines thousands of calls is read as fast as they are answered and the
//! server holds a bounded number of them (the server runs a few of those at once).
//!
//! The service loop polls [`Transport::receive`] inside a `select!` and may drop it at any
//! await, so a partly read line stays in `line` for the next call, and an answer to a bad
//! line is written by a task of its own, never from inside `receive`: dropping `receive`
//! never loses an answer nor leaves half of one on stdout.

use rmcp::model::{
    ClientNotification, JsonRpcError, JsonRpcMessage, JsonRpcNotification, RequestId,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleServer;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::future::Future;
use std::io;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, Notify};
use tokio::task::JoinSet;

/// The longest line (one JSON-RPC message, its newline not counted) the server reads: 4 MiB.
pub const MAX_LINE_BYTES: usize = 4 << 20;

/// How many requests the server reads ahead of its answers. Each request read is held (its
/// arguments, its task) until it is answered; a client that sends more without waiting waits
/// for an answer before the next is read (its writes block on the full pipe).
pub const MAX_UNANSWERED: usize = 256;

/// JSON-RPC's codes for what cannot be read.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

/// The longest reason quoted in an answer (a serde message may quote the input).
const MAX_REASON_CHARS: usize = 300;

/// A line buffer kept after a long line is given back above this size.
const KEEP_CAPACITY: usize = 64 << 10;

/// What one read of a line found.
enum Line {
    /// A whole line is in `line` (its newline included, if it had one).
    Whole,
    /// A line over the bound, dropped; its rest is being skipped.
    TooLong,
}

/// The requests read and neither answered nor cancelled yet.
#[derive(Default)]
struct Unanswered {
    ids: std::sync::Mutex<HashSet<RequestId>>,
    /// Told when one is answered or cancelled.
    freed: Notify,
}

impl Unanswered {
    fn ids(&self) -> std::sync::MutexGuard<'_, HashSet<RequestId>> {
        // The set stays whole whatever panicked while holding it.
        self.ids.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn read(&self, id: RequestId) {
        self.ids().insert(id);
    }

    fn done(&self, id: &RequestId) {
        if self.ids().remove(id) {
            self.freed.notify_waiters();
        }
    }
}

/// The transport over a reader and a writer (stdin and stdout when serving).
pub struct Lines<R, W> {
    read: BufReader<R>,
    /// The line read so far.
    line: Vec<u8>,
    /// Skipping the rest of a line that went over the bound.
    skipping: bool,
    out: Arc<Mutex<W>>,
    /// The answers to bad lines still being written.
    answering: JoinSet<()>,
    unanswered: Arc<Unanswered>,
}

impl<R, W> Lines<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub fn new(read: R, write: W) -> Lines<R, W> {
        Lines {
            read: BufReader::with_capacity(64 << 10, read),
            line: Vec::new(),
            skipping: false,
            out: Arc::new(Mutex::new(write)),
            answering: JoinSet::new(),
            unanswered: Arc::default(),
        }
    }

    /// Reads up to the end of the next line, never holding more than [`MAX_LINE_BYTES`] of
    /// it; None at the end of input (or when it cannot be read).
    async fn next_line(&mut self) -> Option<Line> {
        loop {
            let buf = match self.read.fill_buf().await {
                Ok(buf) => buf,
                Err(e) => {
                    eprintln!("elench mcp: cannot read stdin: {e}; the session ends");
                    return None;
                }
            };
            if buf.is_empty() {
                // The last line may lack its newline; a skipped one is over.
                if self.skipping || self.line.is_empty() {
                    return None;
                }
                return Some(Line::Whole);
            }
            let newline = buf.iter().position(|&b| b == b'\n');
            let take = newline.map_or(buf.len(), |at| at + 1);
            let ends = newline.is_some();
            let mut found = None;
            if self.skipping {
                self.skipping = !ends;
            } else if self.line.len() + take - usize::from(ends) > MAX_LINE_BYTES {
                self.line.clear();
                self.skipping = !ends;
                found = Some(Line::TooLong);
            } else {
                self.line.extend_from_slice(&buf[..take]);
                if ends {
                    found = Some(Line::Whole);
                }
            }
            // No await between the copy and the consume: a dropped call loses nothing.
            self.read.consume(take);
            if found.is_some() {
                return found;
            }
        }
    }

    /// Writes `answer` on a task of its own (see the module's note).
    fn answer(&mut self, answer: Value) {
        let out = self.out.clone();
        let mut bytes = answer.to_string().into_bytes();
        bytes.push(b'\n');
        while self.answering.try_join_next().is_some() {}
        self.answering.spawn(async move {
            // A client that has gone cannot be told.
            let _ = write_line(&out, &bytes).await;
        });
    }
}

async fn write_line<W: AsyncWrite + Unpin>(out: &Mutex<W>, bytes: &[u8]) -> io::Result<()> {
    let mut out = out.lock().await;
    out.write_all(bytes).await?;
    out.flush().await
}

/// A JSON-RPC error answer.
fn error_answer(id: Value, code: i64, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn shortened(reason: String) -> String {
    if reason.chars().count() <= MAX_REASON_CHARS {
        return reason;
    }
    let mut s: String = reason.chars().take(MAX_REASON_CHARS).collect();
    s.push('…');
    s
}

/// The answer to a line over the bound.
fn too_long() -> Value {
    error_answer(
        Value::Null,
        INVALID_REQUEST,
        format!(
            "Invalid request: a line longer than {MAX_LINE_BYTES} bytes (4 MiB), the most the \
             server reads as one message; it was skipped"
        ),
    )
}

/// One line read as a message: Ok(Some) a message for the service, Ok(None) nothing to do
/// (a blank line, or a notification that cannot be read), Err the answer to send back.
fn read_message(line: &[u8]) -> Result<Option<RxJsonRpcMessage<RoleServer>>, Value> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // A byte order mark may start a JSON text (RFC 8259 lets readers ignore it).
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let typed = match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
        Ok(message) => return Ok(Some(message)),
        Err(e) => e,
    };
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            return Err(error_answer(
                Value::Null,
                PARSE_ERROR,
                shortened(format!("Parse error: the line is not JSON: {e}")),
            ))
        }
    };
    Err(match not_understood(&value, &typed) {
        Understood::Notification => return Ok(None),
        Understood::Invalid(id, reason) => error_answer(
            id,
            INVALID_REQUEST,
            shortened(format!("Invalid request: {reason}")),
        ),
        Understood::BadParams(id, method) => error_answer(
            id,
            INVALID_PARAMS,
            shortened(format!("Invalid params of {method}: {typed}")),
        ),
    })
}

enum Understood {
    /// A notification (a method and no id): never answered.
    Notification,
    /// Not a request: the id to answer with (null when none can be read) and why.
    Invalid(Value, String),
    /// A request whose params do not fit its method: its id and method.
    BadParams(Value, String),
}

/// Why JSON that is not a message the server reads is not one.
fn not_understood(value: &Value, typed: &serde_json::Error) -> Understood {
    let Value::Object(m) = value else {
        let reason = if value.is_array() {
            "a batch (a JSON array) is not served; send one request per line".to_owned()
        } else {
            "a request is a JSON object".to_owned()
        };
        return Understood::Invalid(Value::Null, reason);
    };
    // Only a string or a number is an id one can answer to.
    let id = match m.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(id.clone()),
        _ => None,
    };
    let method = m.get("method").and_then(Value::as_str);
    if m.get("id").is_none() && method.is_some() {
        return Understood::Notification;
    }
    let answer_to = id.clone().unwrap_or(Value::Null);
    let invalid = |why: &str| Understood::Invalid(answer_to.clone(), why.to_owned());
    if m.get("jsonrpc") != Some(&json!("2.0")) {
        return invalid("\"jsonrpc\" must be \"2.0\"");
    }
    let Some(method) = method else {
        return match m.get("method") {
            Some(_) => invalid("\"method\" must be a string"),
            None => Understood::Invalid(answer_to.clone(), format!("not a request: {typed}")),
        };
    };
    if id.is_none() {
        return invalid("\"id\" must be a string or a number");
    }
    Understood::BadParams(answer_to, method.to_owned())
}

impl<R, W> Transport<RoleServer> for Lines<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        // A request counts until its answer is written: a client that reads no answers
        // holds the server to MAX_UNANSWERED, its answers included.
        let answers = match &item {
            JsonRpcMessage::Response(r) => Some(r.id.clone()),
            JsonRpcMessage::Error(JsonRpcError { id, .. }) => id.clone(),
            _ => None,
        };
        let unanswered = self.unanswered.clone();
        let out = self.out.clone();
        let bytes = serde_json::to_vec(&item).map(|mut b| {
            b.push(b'\n');
            b
        });
        async move {
            let written = write_line(&out, &bytes.map_err(io::Error::other)?).await;
            if let Some(id) = answers {
                unanswered.done(&id);
            }
            written
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            // Read no further ahead of the answers than MAX_UNANSWERED requests.
            loop {
                let freed = self.unanswered.freed.notified();
                if self.unanswered.ids().len() < MAX_UNANSWERED {
                    break;
                }
                freed.await;
            }
            let Some(line) = self.next_line().await else {
                // The input ended: the answers to its last lines go out before the session
                // ends (waiting here is safe to drop: the next call waits again).
                while self.answering.join_next().await.is_some() {}
                return None;
            };
            match line {
                Line::TooLong => {
                    self.answer(too_long());
                    continue;
                }
                Line::Whole => {}
            }
            let read = read_message(&self.line);
            self.line.clear();
            if self.line.capacity() > KEEP_CAPACITY {
                self.line = Vec::new();
            }
            match read {
                Ok(Some(message)) => {
                    match &message {
                        JsonRpcMessage::Request(r) => self.unanswered.read(r.id.clone()),
                        JsonRpcMessage::Notification(JsonRpcNotification {
                            notification: ClientNotification::CancelledNotification(c),
                            ..
                        }) => {
                            // A cancelled request is never answered.
                            if let Some(id) = &c.params.request_id {
                                self.unanswered.done(id);
                            }
                        }
                        _ => {}
                    }
                    return Some(message);
                }
                Ok(None) => {}
                Err(answer) => self.answer(answer),
            }
        }
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        self.out.lock().await.flush().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer_of(line: &[u8]) -> Value {
        match read_message(line) {
            Err(v) => v,
            Ok(m) => panic!("{line:?} read as {m:?}"),
        }
    }

    #[test]
    fn what_cannot_be_read_is_answered_as_json_rpc_says() {
        let a = answer_of(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\":\n");
        assert_eq!(a["id"], Value::Null, "{a}");
        assert_eq!(a["error"]["code"], json!(PARSE_ERROR), "{a}");
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let a = answer_of(deep.as_bytes());
        assert_eq!(a["error"]["code"], json!(PARSE_ERROR), "{a}");
        for (line, id) in [
            (&br#"{"foo": 1}"#[..], Value::Null),
            (
                br#"[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]"#,
                Value::Null,
            ),
            (br#""hello""#, Value::Null),
            (br#"{"id": 3, "method": "ping"}"#, json!(3)),
            (
                br#"{"jsonrpc": "2.0", "id": {}, "method": "ping"}"#,
                Value::Null,
            ),
            (br#"{"jsonrpc": "2.0", "id": "x", "method": 7}"#, json!("x")),
            (br#"{"jsonrpc": "2.0", "method": 5}"#, Value::Null),
            (
                br#"{"jsonrpc": "2.0", "id": null, "method": "ping"}"#,
                Value::Null,
            ),
        ] {
            let a = answer_of(line);
            assert_eq!(a["id"], id, "{a}");
            assert_eq!(a["error"]["code"], json!(INVALID_REQUEST), "{a}");
        }
        let a = answer_of(br#"{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": 5}"#);
        assert_eq!(a["id"], json!(9), "{a}");
        assert_eq!(a["error"]["code"], json!(INVALID_PARAMS), "{a}");
        // A long value quoted by serde is shortened.
        let long = format!(
            r#"{{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": "{}"}}"#,
            "x".repeat(10_000)
        );
        let a = answer_of(long.as_bytes());
        assert!(a.to_string().len() < 1000, "{a}");
    }

    #[test]
    fn notifications_and_blank_lines_get_no_answer() {
        for line in [&b"\n"[..], b"  \r\n"] {
            assert!(matches!(read_message(line), Ok(None)), "{line:?}");
        }
        // A notification goes to the service (which ignores one it does not know) or
        // nowhere; the transport never answers it.
        for line in [
            &br#"{"jsonrpc": "2.0", "method": "notifications/unheard-of"}"#[..],
            br#"{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": 5}"#,
        ] {
            let read = read_message(line);
            assert!(read.is_ok(), "{}: {read:?}", String::from_utf8_lossy(line));
        }
        let ping = read_message(
            b"\xEF\xBB\xBF{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"}\r\n",
        );
        assert!(matches!(ping, Ok(Some(_))), "{ping:?}");
    }
}
