//! The output contract (docs/output.md, after the CLI Agent Spec): one JSON object per
//! invocation on stdout when a program reads it, readable text when a person does, and rows
//! (`--format jsonl` or `tsv`) for pipelines.
//!
//! This file holds the envelope and how it is written; `cap` cuts it to the byte cap,
//! `rows` makes rows of it, `escapes` keeps terminal control out, `text` words things for
//! people.

mod cap;
mod escapes;
mod rows;
mod text;

use cap::enforce_cap;
pub(crate) use cap::output_cap;
pub use escapes::{sanitized, terminal_safe};
use rows::summary_line;
pub use rows::{rows, tsv};
pub use text::{claim_text, colour_forbidden, one_line, short_id, Style};

use super::failure::{ExitNumber, Failure};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// How a command renders its result: for a program (JSON and the row formats) or for a
/// person (text). Commands only ever ask this; [`Format`] is the exact representation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Json,
    Text,
}

/// The representation `--format` selects: the closed set the manifest lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One response envelope (the default off a terminal).
    Json,
    /// The result's rows, one JSON object a line; a failure ends with the error envelope.
    Jsonl,
    /// The result's rows as tab-separated values under a header row.
    Tsv,
    /// Readable text (the default on a terminal), coloured on a terminal.
    Text,
    /// The same text, never coloured.
    Plain,
    /// A document for another tool, written whole to stdout by the commands that make one
    /// (`definition::format_error` says which): SARIF 2.1.0, Graphviz DOT, Mermaid, JUnit XML,
    /// GitHub Actions workflow commands. A failure goes to stderr as text.
    Sarif,
    Dot,
    Mermaid,
    Junit,
    Github,
}

impl Format {
    /// Every value `--format` accepts.
    pub const NAMES: [&'static str; 10] = [
        "json", "jsonl", "tsv", "text", "plain", "sarif", "dot", "mermaid", "junit", "github",
    ];

    /// The format's name as `--format` takes it.
    pub fn name(self) -> &'static str {
        // NAMES lists the formats in the order the enum declares them.
        Self::NAMES[self as usize]
    }

    pub fn detect(flag: Option<&str>) -> Format {
        match flag {
            Some("json") => Format::Json,
            Some("jsonl") => Format::Jsonl,
            Some("tsv") => Format::Tsv,
            Some("text") => Format::Text,
            Some("plain") => Format::Plain,
            Some("sarif") => Format::Sarif,
            Some("dot") => Format::Dot,
            Some("mermaid") => Format::Mermaid,
            Some("junit") => Format::Junit,
            Some("github") => Format::Github,
            _ => {
                let piped = !std::io::stdout().is_terminal();
                let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty());
                // NO_COLOR only removes colour (see `colour_forbidden`): a person at a
                // terminal still gets text.
                if piped || ci {
                    Format::Json
                } else {
                    Format::Text
                }
            }
        }
    }

    pub fn mode(self) -> Mode {
        match self {
            // A document for a program: no colour, no text for people.
            Format::Json | Format::Jsonl | Format::Tsv => Mode::Json,
            Format::Sarif | Format::Dot | Format::Mermaid | Format::Junit | Format::Github => {
                Mode::Json
            }
            Format::Text | Format::Plain => Mode::Text,
        }
    }

    /// Whether the format is a document another tool reads ([`Report::product`]).
    pub fn is_product(self) -> bool {
        matches!(
            self,
            Format::Sarif | Format::Dot | Format::Mermaid | Format::Junit | Format::Github
        )
    }
}

/// A warning: something the caller should know that did not stop the command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    pub code: String,
    pub message: String,
}

impl Warning {
    pub fn new(code: &str, message: impl Into<String>) -> Warning {
        Warning {
            code: code.to_owned(),
            message: message.into(),
        }
    }
}

/// A warning an operation returned in its data (`sign`, `verify`, `conformance attest`).
impl From<&elench::ops::Warning> for Warning {
    fn from(w: &elench::ops::Warning) -> Warning {
        Warning::new(w.code, w.message.clone())
    }
}

/// What a command produced. A report may carry data and a failure together (a batch in
/// which every input was rejected still lists the rejections).
#[derive(Debug, Default)]
pub struct Report {
    pub data: Value,
    pub text: String,
    pub warnings: Vec<Warning>,
    /// Some inputs accepted, some rejected: exit 3.
    pub partial: bool,
    pub failure: Option<Failure>,
    pub pagination: Option<Value>,
    /// For a page of a list: the `--cursor` that starts at each item, in order, so that a
    /// page cut short by the response size cap can say where to continue.
    pub cursors: Vec<String>,
    /// Further `meta` members the command reports (`dry_run`, `confirmed`).
    pub meta: Map<String, Value>,
    /// The command wrote its product to stdout itself (`sign -o -`, `export -o -`): no
    /// report goes there.
    pub stdout_taken: bool,
    /// Data written as JSON straight into stdout, in place of `data` (see
    /// [`Report::streaming`]).
    pub streamed: Option<Box<dyn JsonData>>,
    /// With a document format (`--format sarif|dot|mermaid|junit|github`): the document,
    /// written to stdout in place of the report; the exit code and any failure stand.
    pub product: Option<String>,
    /// The failure is already on stderr, in full (a refused command line and its usage):
    /// [`emit`] does not write its one line there again.
    pub failure_told: bool,
}

/// Data that writes itself as one JSON value: a large result goes to stdout straight from
/// the command's own types, never built as a [`Value`] tree.
pub trait JsonData {
    /// Writes exactly the compact JSON of [`JsonData::to_value`].
    fn write_json(&self, out: &mut dyn Write) -> std::io::Result<()>;
    /// The same data as a value, for the row formats and for a response cut to the cap.
    fn to_value(&self) -> Value;
}

impl std::fmt::Debug for dyn JsonData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JsonData")
    }
}

impl Report {
    /// A report whose JSON data is written from `data` while the report is emitted.
    pub fn streaming(data: impl JsonData + 'static, text: impl Into<String>) -> Report {
        Report {
            streamed: Some(Box::new(data)),
            text: text.into(),
            ..Report::default()
        }
    }

    pub fn new(data: Value, text: impl Into<String>) -> Report {
        Report {
            data,
            text: text.into(),
            ..Report::default()
        }
    }

    pub fn exit_code(&self) -> i32 {
        match &self.failure {
            Some(f) => f.exit_code(),
            None if self.partial => 3,
            None => 0,
        }
    }
}

/// The observer of every operation this process runs: warnings are kept for the report
/// ([`emit`] adds them to its `warnings`), and the progress of long work is drawn on stderr
/// when it is a terminal. One per process, as the report is: a command stopped by a signal
/// or its time limit is answered by the watchdog, whose report carries the warnings too.
pub struct CliObserver {
    collected: elench::ops::Collected,
}

impl elench::ops::Observer for CliObserver {
    fn warn(&self, code: &str, message: String) {
        // The library names inputs by what they are; here they are options.
        elench::ops::Observer::warn(&self.collected, code, super::words::text(&message));
    }

    fn progress(&self, what: &str, total: Option<u64>) -> Option<elench::ops::Progress> {
        match total {
            // Work of a known size (`fsck`'s walk over the log): a bar from the start.
            Some(total) => super::progress::records_bar(what, total),
            // A store whose index must be rebuilt on open shows it, as `reindex` does.
            None => super::progress::rebuild_spinner(what),
        }
    }
}

static CLI_OBSERVER: std::sync::LazyLock<std::sync::Arc<CliObserver>> =
    std::sync::LazyLock::new(|| {
        std::sync::Arc::new(CliObserver {
            collected: elench::ops::Collected::default(),
        })
    });

/// The CLI's observer ([`CliObserver`]), for the operations a command runs.
pub fn observer() -> std::sync::Arc<dyn elench::ops::Observer> {
    CLI_OBSERVER.clone()
}

/// Set once the report of this invocation is being written: only one is ever written, by
/// the command or, when it is stopped, by the watchdog (see `interrupt`).
static EMITTED: AtomicBool = AtomicBool::new(false);
/// Set when a command writes its product to stdout itself (`-o -`).
static PRODUCT: AtomicBool = AtomicBool::new(false);
/// `--format plain`: text without colour.
static PLAIN: AtomicBool = AtomicBool::new(false);

/// Whether this invocation's report is written or being written.
pub fn emitted() -> bool {
    EMITTED.load(Ordering::SeqCst)
}

/// Records that the command is about to write its product to stdout.
pub fn take_stdout_for_product() {
    PRODUCT.store(true, Ordering::SeqCst);
}

pub fn product_on_stdout() -> bool {
    PRODUCT.load(Ordering::SeqCst)
}

/// Records that text is to be plain (never coloured).
pub fn set_plain(plain: bool) {
    PLAIN.store(plain, Ordering::SeqCst);
}

/// Writes the report and returns the process exit code. Only the first call of a process
/// writes anything; a later one (the command finishing just as the watchdog answers for it)
/// waits for the process to end.
pub fn emit(format: Format, command: &str, started: Instant, mut report: Report) -> i32 {
    if EMITTED.swap(true, Ordering::SeqCst) {
        loop {
            std::thread::park();
        }
    }
    // The answer's time, taken before the stop is looked at: a signal after this instant
    // arrived while the answer was being written.
    let duration_ms = started.elapsed().as_millis() as u64;
    if let Some(stopped) = stop_before_answer(&report) {
        report = stopped;
    }
    super::progress::clear_progress();
    // What the store noticed on the way (a torn tail cut, an index rebuilt) is reported too.
    for (code, message) in CLI_OBSERVER.collected.take() {
        report.warnings.push(Warning::new(&code, message));
    }
    // Warnings an operation returned in its result name inputs as the library does.
    for w in &mut report.warnings {
        w.message = super::words::text(&w.message);
    }
    let exit_code = report.exit_code();
    // Streamed data is written as it is only into a whole JSON envelope of a success; the row
    // formats and a stopped command read it as a value.
    if format != Format::Json || report.failure.is_some() {
        if let Some(data) = report.streamed.take() {
            report.data = data.to_value();
        }
    }
    // The operation that stopped does not know the limit it stopped at; the CLI does.
    if let Some(Failure::Interrupted { limit_ms, .. }) = &mut report.failure {
        if limit_ms.is_none() {
            *limit_ms = super::interrupt::limit_ms();
        }
    }
    // A command stopped early says so in data, as the spec's cancellation response does.
    if let Some(Failure::Interrupted { .. }) = &report.failure {
        match &mut report.data {
            Value::Object(m) => {
                m.insert("partial".into(), json!(true));
            }
            Value::Null => report.data = json!({"partial": true}),
            _ => {}
        }
    }
    match format {
        _ if report.stdout_taken => failure_to_stderr(&report, exit_code),
        Format::Json if report.streamed.is_some() => {
            emit_streamed(&mut report, command, exit_code, duration_ms);
            error_line_to_stderr(&report, exit_code);
        }
        Format::Json | Format::Jsonl => {
            let list = report.pagination.is_some();
            let mut envelope = envelope(&mut report, command, exit_code, duration_ms);
            let mut out = std::io::stdout().lock();
            if format == Format::Jsonl {
                let rows = rows(&envelope["data"], list);
                let stop = StopWatch::new(&report);
                for row in &rows {
                    if let Some(signal) = stop.received() {
                        drop(out);
                        return stopped_stream(format, command, started, &report, signal);
                    }
                    let _ = writeln!(out, "{row}");
                }
                warnings_to_stderr(&report.warnings);
                if exit_code != 0 {
                    // A partial success keeps its data (the rejections are only there);
                    // any other failure has none worth repeating.
                    if !report.partial {
                        envelope["data"] = Value::Null;
                    }
                    let _ = writeln!(out, "{envelope}");
                } else {
                    let _ = writeln!(out, "{}", summary_line(&envelope, rows.len()));
                }
            } else {
                let (cap, note) = output_cap();
                if let Some(w) = note {
                    push_warning(&mut envelope, w);
                }
                if let Some(cap) = cap {
                    enforce_cap(&mut envelope, cap, &report.cursors);
                }
                // A closed stdout (e.g. `| head`) is not worth a panic.
                let _ = writeln!(out, "{envelope}");
            }
            let _ = out.flush();
            drop(out);
            error_line_to_stderr(&report, exit_code);
        }
        Format::Tsv => {
            let data = sanitized(std::mem::take(&mut report.data));
            let text = tsv(&rows(&data, report.pagination.is_some()));
            if let Some(signal) = write_lines(&text, &StopWatch::new(&report)) {
                return stopped_stream(format, command, started, &report, signal);
            }
            warnings_to_stderr(&report.warnings);
            // The rows alone cannot say that a page was cut: stderr says how to go on.
            if let Some(next) = report
                .pagination
                .as_ref()
                .and_then(|p| p["next_cursor"].as_str())
            {
                let mut err = std::io::stderr().lock();
                let _ = writeln!(err, "more: --cursor {next}");
            }
            failure_to_stderr(&report, exit_code);
        }
        Format::Sarif | Format::Dot | Format::Mermaid | Format::Junit | Format::Github => {
            // The document, when the command made one (a gate that fails still has its
            // SARIF); a failure before it was made leaves stdout empty.
            if let Some(doc) = report.product.take() {
                if let Some(signal) = write_lines(&doc, &StopWatch::new(&report)) {
                    return stopped_stream(format, command, started, &report, signal);
                }
            }
            warnings_to_stderr(&report.warnings);
            failure_to_stderr(&report, exit_code);
        }
        Format::Text | Format::Plain => {
            if !report.text.is_empty() {
                // elench's own colours stay (on a terminal); whatever the text carries from
                // claims, files and other programs does not reach the terminal as control.
                let colour = Style::new(Mode::Text).color;
                let mut text = terminal_safe(&std::mem::take(&mut report.text), colour);
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                if let Some(signal) = write_lines(&text, &StopWatch::new(&report)) {
                    return stopped_stream(format, command, started, &report, signal);
                }
            }
            warnings_to_stderr(&report.warnings);
            failure_to_stderr(&report, exit_code);
        }
    }
    exit_code
}

/// The stop (SIGINT, SIGTERM) as seen while a result is written line by line. Once the
/// report is being written the watchdog no longer answers for the command, so a long stream
/// looks for the stop itself between lines. A report that is already a failure is written
/// whole.
struct StopWatch(Option<super::interrupt::Interrupt>);

impl StopWatch {
    fn new(report: &Report) -> StopWatch {
        // The watchdog has seen `emitted()` and leaves the answer to this thread.
        StopWatch(
            report
                .failure
                .is_none()
                .then(super::interrupt::Interrupt::install),
        )
    }

    fn received(&self) -> Option<i32> {
        self.0
            .as_ref()
            .and_then(super::interrupt::Interrupt::received)
    }
}

/// Writes `text` to stdout a line at a time, stopping before the next line once a signal
/// has come; returns that signal.
fn write_lines(text: &str, stop: &StopWatch) -> Option<i32> {
    let mut out = std::io::stdout().lock();
    for line in text.split_inclusive('\n') {
        if let Some(signal) = stop.received() {
            let _ = out.flush();
            return Some(signal);
        }
        // A closed stdout (e.g. `| head`) is not worth a panic.
        let _ = out.write_all(line.as_bytes());
    }
    let _ = out.flush();
    None
}

/// Ends a stream cut short by a signal as any stopped command ends: the `CANCELLED` error
/// (the last line of a `jsonl` stream, on stderr otherwise), exit 130 or 143.
fn stopped_stream(
    format: Format,
    command: &str,
    started: Instant,
    report: &Report,
    signal: i32,
) -> i32 {
    let mut stopped = Report {
        data: json!({"partial": true}),
        failure: Some(Failure::Interrupted {
            signal,
            limit_ms: super::interrupt::limit_ms(),
        }),
        warnings: report.warnings.clone(),
        ..Report::default()
    };
    let code = stopped.exit_code();
    if format == Format::Jsonl {
        let duration_ms = started.elapsed().as_millis() as u64;
        let envelope = envelope(&mut stopped, command, code, duration_ms);
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{envelope}");
        let _ = out.flush();
        drop(out);
        error_line_to_stderr(&stopped, code);
    } else {
        warnings_to_stderr(&stopped.warnings);
        failure_to_stderr(&stopped, code);
    }
    code
}

/// The answer to a stop (SIGINT, SIGTERM, the time limit) recorded before the answer is
/// written, when the command did not answer it itself: the same `CANCELLED` or `TIMEOUT`
/// the watchdog writes, which would have answered had it looked a moment earlier. A command
/// that stops at safe points ([`super::interrupt::cooperative`]) reports what it did, and
/// a report that already says it was stopped stands.
fn stop_before_answer(report: &Report) -> Option<Report> {
    if super::interrupt::cooperative()
        || matches!(report.failure, Some(Failure::Interrupted { .. }))
    {
        return None;
    }
    let signal = super::interrupt::stopped()?;
    Some(Report {
        data: json!({"partial": true}),
        failure: Some(Failure::Interrupted {
            signal,
            limit_ms: super::interrupt::limit_ms(),
        }),
        warnings: report.warnings.clone(),
        stdout_taken: report.stdout_taken || product_on_stdout(),
        ..Report::default()
    })
}

/// Counts the bytes written to it.
struct Counter(usize);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The JSON envelope around streamed data: byte for byte what the `Value` envelope of
/// [`emit`] prints. The envelope is made as for any report, with `null` data, and the data's
/// own JSON written in its place, straight to stdout. A response over the size cap is cut as
/// any other, from the data as a value (so its size is counted first when there is a cap).
/// The data's strings (ids, kinds, statuses) hold no terminal escapes.
fn emit_streamed(report: &mut Report, command: &str, exit_code: i32, duration_ms: u64) {
    let Some(data) = report.streamed.take() else {
        return;
    };
    let mut envelope = envelope(report, command, exit_code, duration_ms);
    let (cap, note) = output_cap();
    if let Some(w) = note {
        push_warning(&mut envelope, w);
    }
    let head = envelope.to_string();
    let before_data = format!("{{\"ok\":{},\"data\":", exit_code == 0);
    let after_data = head
        .strip_prefix(before_data.as_str())
        .and_then(|rest| rest.strip_prefix("null"));
    let fits = |rest: &str| {
        cap.is_none_or(|cap| {
            let mut size = Counter(0);
            data.write_json(&mut size).is_ok() && before_data.len() + size.0 + rest.len() <= cap
        })
    };
    match after_data {
        Some(rest) if fits(rest) => {
            let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
            // A closed stdout (e.g. `| head`) is not worth a panic.
            let _ = out
                .write_all(before_data.as_bytes())
                .and_then(|()| data.write_json(&mut out))
                .and_then(|()| out.write_all(rest.as_bytes()))
                .and_then(|()| out.write_all(b"\n"))
                .and_then(|()| out.flush());
        }
        _ => {
            envelope["data"] = sanitized(data.to_value());
            if let Some(cap) = cap {
                enforce_cap(&mut envelope, cap, &report.cursors);
            }
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{envelope}");
            let _ = out.flush();
        }
    }
}

/// What a process ended by a fault in the index writes (`store::index::fault`), made before
/// the command runs: (stdout, stderr). JSON formats get the error envelope on stdout (one
/// line, `--format jsonl` too), the others the error's text on stderr.
pub fn prepared_failure(format: Format, command: &str, failure: Failure) -> (Vec<u8>, Vec<u8>) {
    let text = format!(
        "{}\n",
        terminal_safe(&super::words::text(&failure.to_text()), false)
    )
    .into_bytes();
    let line = format!("{}\n", error_line(&failure)).into_bytes();
    let mut report = Report {
        failure: Some(failure),
        ..Report::default()
    };
    let exit_code = report.exit_code();
    match format {
        Format::Json | Format::Jsonl => {
            let envelope = envelope(&mut report, command, exit_code, 0);
            (format!("{envelope}\n").into_bytes(), line)
        }
        _ => (Vec::new(), text),
    }
}

/// The response envelope, with every string free of terminal escapes.
fn envelope(report: &mut Report, command: &str, exit_code: i32, duration_ms: u64) -> Value {
    // Field names as the CLI Agent Spec's ResponseMeta has them.
    let mut meta = json!({
        "exit_code": exit_code,
        "duration_ms": duration_ms,
        "command": command,
        "tool_version": env!("CARGO_PKG_VERSION"),
    });
    if let Some(ms) = super::interrupt::limit_ms() {
        meta["timeout_ms"] = json!(ms);
    }
    if let Some(p) = report.pagination.take() {
        meta["pagination"] = p;
    }
    if headless() {
        meta["headless"] = json!(true);
    }
    for (k, v) in std::mem::take(&mut report.meta) {
        meta[k] = v;
    }
    // Every non-zero exit carries an error object, a partial success included.
    let error = match &report.failure {
        Some(f) => Some(super::words::json(f.to_json())),
        None if exit_code != 0 => Some(Failure::partial_default().to_json()),
        None => None,
    };
    sanitized(json!({
        "ok": exit_code == 0,
        "data": std::mem::take(&mut report.data),
        "error": error,
        "warnings": report.warnings,
        "meta": meta,
    }))
}

/// Warnings as people read them on stderr, `warning[CODE]: message`, one a line.
pub fn warnings_to_stderr(warnings: &[Warning]) {
    let mut err = std::io::stderr().lock();
    for w in warnings {
        let _ = writeln!(
            err,
            "{}",
            terminal_safe(
                &super::words::text(&format!("warning[{}]: {}", w.code, w.message)),
                false
            )
        );
    }
}

/// The failure as people read it on stderr, with what it names (input, line, fields).
fn failure_to_stderr(report: &Report, exit_code: i32) {
    if report.failure_told {
        return;
    }
    let mut err = std::io::stderr().lock();
    if let Some(f) = &report.failure {
        let _ = writeln!(
            err,
            "{}",
            terminal_safe(&super::words::text(&f.to_text()), false)
        );
    } else if exit_code != 0 {
        let _ = writeln!(err, "{}", Failure::partial_default().to_text());
    }
}

/// Beside a JSON answer, a failure also goes to stderr on one line, as git and cargo write
/// theirs: a log that keeps stderr and sends stdout to a file still says what failed.
fn error_line_to_stderr(report: &Report, exit_code: i32) {
    if exit_code == 0 || report.failure_told {
        return;
    }
    let line = match &report.failure {
        Some(f) => error_line(f),
        None => error_line(&Failure::partial_default()),
    };
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
}

/// A failure on one line: `error[CODE]: message`, line breaks and runs of white space one
/// space, no control character.
pub fn error_line(f: &Failure) -> String {
    let text = terminal_safe(
        &super::words::text(&format!("error[{}]: {f}", f.code())),
        false,
    );
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn push_warning(envelope: &mut Value, w: Warning) {
    if let Some(ws) = envelope["warnings"].as_array_mut() {
        ws.push(json!(w));
    }
}

/// Whether elench runs where no window can be opened (the CLI Agent Spec's headless mode):
/// in CI, or, on Linux and the BSDs, without a display. elench opens no window in any case;
/// `meta.headless` tells the caller what was detected.
fn headless() -> bool {
    let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    if set("CI") {
        return true;
    }
    if cfg!(any(target_os = "macos", target_os = "windows")) {
        set("SSH_TTY")
    } else {
        !set("DISPLAY") && !set("WAYLAND_DISPLAY")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_is_named_as_format_takes_it() {
        for name in Format::NAMES {
            assert_eq!(Format::detect(Some(name)).name(), name);
        }
    }
}
