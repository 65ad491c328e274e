//! The output contract (docs/output.md, after the CLI Agent Spec): one JSON object per
//! invocation on stdout when a program reads it, readable text when a person does, and rows
//! (`--format jsonl` or `tsv`) for pipelines.

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

// ---- escapes ----

/// The value with every string stripped of terminal escape sequences and carriage returns
/// (a message from git, a claim's text): JSON carries no terminal control, ever.
pub fn sanitized(mut v: Value) -> Value {
    sanitize(&mut v);
    v
}

fn sanitize(v: &mut Value) {
    match v {
        Value::String(s) if s.contains(['\u{1b}', '\r', '\u{9b}']) => {
            *s = strip_escapes(s);
        }
        Value::Array(a) => a.iter_mut().for_each(sanitize),
        Value::Object(m) => {
            // Keys are elench's own or come from signed claims; the same rule applies.
            if m.keys().any(|k| k.contains(['\u{1b}', '\r', '\u{9b}'])) {
                let taken = std::mem::take(m);
                for (k, mut val) in taken {
                    sanitize(&mut val);
                    m.insert(strip_escapes(&k), val);
                }
            } else {
                m.values_mut().for_each(sanitize);
            }
        }
        _ => {}
    }
}

/// Removes CSI (`ESC [ … final`, and the one-character CSI), OSC (`ESC ] … BEL or ESC \`),
/// other two-character escapes, and carriage returns.
pub fn strip_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {}
            '\u{9b}' => skip_csi(&mut chars),
            '\u{1b}' => match chars.next() {
                Some('[') => skip_csi(&mut chars),
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                            chars.next();
                            break;
                        }
                    }
                }
                _ => {}
            },
            c => out.push(c),
        }
    }
    out
}

/// Text as it may reach a terminal or a CI log: every terminal escape sequence removed whole
/// (CSI, OSC and the other string sequences, two-character escapes, their one-character C1
/// forms), then every other control character (C0 but line feed and tab, DEL, C1). With
/// `keep_colour`, the colour sequences elench paints with (`ESC [ digits;… m`) stay and
/// nothing else does. Claim texts, file names and messages from other programs are shown to
/// people through this, so no text can set a window title, clear the screen, move the
/// cursor or ring the bell.
pub fn terminal_safe(s: &str, keep_colour: bool) -> String {
    if !s.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' => out.push(c),
            '\u{1b}' => match chars.peek().copied() {
                Some('[') => {
                    chars.next();
                    let seq = take_csi(&mut chars);
                    if keep_colour && is_colour(&seq) {
                        out.push_str("\u{1b}[");
                        out.push_str(&seq);
                    }
                }
                // OSC, DCS, SOS, PM, APC: a string ended by BEL or ST.
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    chars.next();
                    skip_string(&mut chars);
                }
                // A two-character escape (or a lone ESC at the end).
                Some(_) => {
                    chars.next();
                }
                None => {}
            },
            '\u{9b}' => {
                take_csi(&mut chars);
            }
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// The rest of a CSI sequence after its introducer: parameter and intermediate bytes, then
/// the final byte when there is one (a malformed sequence ends where it stops being one).
fn take_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> String {
    let mut seq = String::new();
    while let Some(&c) = chars.peek() {
        if ('\u{20}'..='\u{3f}').contains(&c) {
            seq.push(c);
            chars.next();
        } else {
            if ('@'..='~').contains(&c) {
                seq.push(c);
                chars.next();
            }
            break;
        }
    }
    seq
}

/// Whether a CSI sequence (after `ESC [`) only sets colours: digits and `;`, then `m`.
fn is_colour(seq: &str) -> bool {
    seq.strip_suffix('m')
        .is_some_and(|p| p.chars().all(|c| c.is_ascii_digit() || c == ';'))
}

/// Skips a string sequence up to and including its end: BEL, `ESC \\` or the C1 ST.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => return,
            '\u{1b}' => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                return;
            }
            _ => {}
        }
    }
}

fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    // Parameter and intermediate bytes, then one final byte in @..~.
    for c in chars.by_ref() {
        if ('@'..='~').contains(&c) {
            break;
        }
    }
}

// ---- the response size cap ----

/// The cap in force (`None`: no cap), and a warning when `ELENCH_MAX_OUTPUT_BYTES` is not
/// a number of bytes (the default applies then). `elench mcp` reads it once, at start.
pub(crate) fn output_cap() -> (Option<usize>, Option<Warning>) {
    let (cap, bad) = elench::bytecap::from_env();
    (cap, bad.map(|m| Warning::new("BAD_ENVIRONMENT", m)))
}

fn push_warning(envelope: &mut Value, w: Warning) {
    if let Some(ws) = envelope["warnings"].as_array_mut() {
        ws.push(json!(w));
    }
}

fn json_len(v: &Value) -> usize {
    elench::bytecap::json_size(v).unwrap_or(0)
}

/// The JSON pointer of the array under `at` whose items take the most bytes, and those bytes.
fn largest_array(v: &Value, at: &str, best: &mut Option<(String, usize)>) {
    *best = elench::bytecap::heaviest(v, at, &|v| match v {
        Value::Array(items) if !items.is_empty() => Some(json_len(v)),
        _ => None,
    });
}

/// The pointer of the longest string under `at`, and its length.
fn longest_string(v: &Value, at: &str, best: &mut Option<(String, usize)>) {
    *best = elench::bytecap::heaviest(v, at, &|v| v.as_str().map(str::len));
}

/// Cuts the response to at most `cap` bytes (REQ-F-052): the largest list in `data` loses
/// items from its end (then the next largest, then the longest strings), and `meta` says
/// so: `truncated`, `total_count`, `returned_count` and `truncation_hint`, the command line
/// that gets the rest. When the list cut is a page (`cursors` has a cursor for each of its
/// items), `meta.pagination` is brought in line: its `next_cursor` continues right after the
/// last item returned.
fn enforce_cap(envelope: &mut Value, cap: usize, cursors: &[String]) {
    let full = json_len(envelope);
    if full <= cap {
        return;
    }
    let original = envelope.clone();
    // Cut to a budget that leaves room for what is added below; if the result is still too
    // large, cut again from the original with less.
    let mut budget = cap.saturating_sub(320);
    for _ in 0..8 {
        *envelope = original.clone();
        let first_cut = cut_to(envelope, budget);
        annotate_cut(envelope, cap, full, first_cut, cursors);
        let len = json_len(envelope);
        if len <= cap {
            return;
        }
        budget = budget.saturating_sub(len - cap + 16);
    }
}

/// Cuts `data` (then `warnings`) until the envelope is at most `budget` bytes. Returns the
/// first list cut: its pointer, its length, and how many items it kept.
fn cut_to(envelope: &mut Value, budget: usize) -> Option<(String, usize, usize)> {
    let mut first_cut: Option<(String, usize, usize)> = None;
    for _ in 0..64 {
        let size = json_len(envelope);
        if size <= budget {
            break;
        }
        let mut best = None;
        largest_array(&envelope["data"], "/data", &mut best);
        if best.is_none() {
            largest_array(&envelope["warnings"], "/warnings", &mut best);
        }
        if let Some((ptr, array_size)) = best {
            let Some(Value::Array(items)) = envelope.pointer_mut(&ptr) else {
                break;
            };
            let before = items.len();
            let room = budget.saturating_sub(size - array_size);
            let mut used = 2; // the brackets
            let mut keep = 0;
            for item in items.iter() {
                let n = json_len(item) + usize::from(keep > 0);
                if used + n > room {
                    break;
                }
                used += n;
                keep += 1;
            }
            // Always progress.
            let keep = keep.min(before - 1);
            items.truncate(keep);
            match &mut first_cut {
                None => first_cut = Some((ptr, before, keep)),
                Some((first, _, kept)) if *first == ptr => *kept = keep,
                Some(_) => {}
            }
            continue;
        }
        let mut best = None;
        longest_string(&envelope["data"], "/data", &mut best);
        match best {
            Some((ptr, len)) if len > 0 => {
                let over = size - budget;
                if let Some(Value::String(s)) = envelope.pointer_mut(&ptr) {
                    let keep = s.len().saturating_sub(over + 3);
                    elench::bytecap::shorten(s, keep);
                }
            }
            _ => {
                envelope["data"] = Value::Null;
                break;
            }
        }
    }
    first_cut
}

/// The `meta` members and the warning that say a response was cut.
fn annotate_cut(
    envelope: &mut Value,
    cap: usize,
    full: usize,
    first_cut: Option<(String, usize, usize)>,
    cursors: &[String],
) {
    let cut_list = first_cut
        .as_ref()
        .is_some_and(|(ptr, _, _)| ptr.starts_with("/data"));
    let (before, kept) = first_cut.map_or((0, 0), |(_, b, k)| (b, k));
    let meta = &mut envelope["meta"];
    meta["truncated"] = json!(true);
    let mut hint = None;
    if cut_list {
        let total = meta["pagination"]["total"]
            .as_u64()
            .unwrap_or(before as u64);
        meta["total_count"] = json!(total);
        meta["returned_count"] = json!(kept);
        let page = meta.get_mut("pagination").filter(|p| p.is_object());
        let next = cursors.get(kept).filter(|_| cursors.len() == before);
        if let (Some(p), Some(next)) = (page, next) {
            p["returned"] = json!(kept);
            p["truncated"] = json!(true);
            p["has_more"] = json!(true);
            p["next_cursor"] = json!(next);
            hint = Some(page_hint(kept.max(1), next));
        }
    }
    let hint = hint.unwrap_or_else(|| {
        // No page to turn: the same command with a cap that fits the whole answer.
        let needed = full.div_ceil(1024) * 1024 + 4096;
        format!("ELENCH_MAX_OUTPUT_BYTES={needed} {}", command_line(&[]))
    });
    meta["truncation_hint"] = json!(hint);
    push_warning(
        envelope,
        Warning::new(
            "RESPONSE_TRUNCATED",
            format!(
                "the response was cut to the {cap}-byte cap (ELENCH_MAX_OUTPUT_BYTES); \
                 meta.truncation_hint gets the rest"
            ),
        ),
    );
}

/// This invocation's command line with `--limit` and `--cursor` set for the next page.
fn page_hint(limit: usize, cursor: &str) -> String {
    let mut args: Vec<String> = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        if a == "--limit" || a == "--cursor" {
            it.next();
            continue;
        }
        if a.starts_with("--limit=") || a.starts_with("--cursor=") {
            continue;
        }
        args.push(a);
    }
    args.extend([
        "--limit".into(),
        limit.to_string(),
        "--cursor".into(),
        cursor.to_owned(),
    ]);
    command_line(&args)
}

/// `elench` and the arguments (this invocation's when `args` is empty), quoted for a shell.
fn command_line(args: &[String]) -> String {
    let own: Vec<String>;
    let args = if args.is_empty() {
        own = std::env::args().skip(1).collect();
        &own
    } else {
        args
    };
    let mut line = String::from("elench");
    for a in args {
        line.push(' ');
        line.push_str(&shell_quote(a));
    }
    line
}

fn shell_quote(a: &str) -> String {
    let plain = !a.is_empty()
        && a.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@%+".contains(&b));
    if plain {
        a.to_owned()
    } else {
        format!("'{}'", a.replace('\'', r"'\''"))
    }
}

// ---- rows: jsonl and tsv ----

/// The last line of a successful `jsonl` answer, the CLI Agent Spec's stream summary
/// (REQ-O-004): `_summary: true`, how many rows came before it, a list page's pagination
/// (`total`, `returned`, `truncated`, `has_more`, `next_cursor`), the exit code and the
/// duration. A reader of rows learns that the answer is whole and where the next page
/// starts; a failure ends on the error envelope instead.
fn summary_line(envelope: &Value, rows: usize) -> Value {
    let mut summary = json!({"_summary": true, "rows": rows});
    if let Some(page) = envelope["meta"]["pagination"].as_object() {
        for (k, v) in page {
            summary[k] = v.clone();
        }
    }
    summary["exit_code"] = envelope["meta"]["exit_code"].clone();
    summary["duration_ms"] = envelope["meta"]["duration_ms"].clone();
    summary
}

/// The rows of a result: the items of its list (the longest array of objects at the top of
/// `data`), or `data` itself as one row. A page of a list command (`list`) has rows even
/// when they are none.
pub fn rows(data: &Value, list: bool) -> Vec<Value> {
    match data {
        Value::Null => Vec::new(),
        Value::Array(items) => items.clone(),
        // A result that is one list (`{"remotes": [...]}`) has its items as rows, none when
        // it is empty.
        Value::Object(m)
            if m.len() == 1
                && m.values()
                    .all(|v| v.as_array().is_some_and(|a| a.iter().all(Value::is_object))) =>
        {
            m.values()
                .next()
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        }
        Value::Object(m) => {
            let longest = m
                .values()
                .filter_map(Value::as_array)
                .filter(|a| a.iter().all(Value::is_object))
                .filter(|a| list || !a.is_empty())
                .fold(None::<&Vec<Value>>, |best, a| match best {
                    Some(b) if b.len() >= a.len() => Some(b),
                    _ => Some(a),
                });
            match longest {
                Some(items) => items.clone(),
                None => vec![data.clone()],
            }
        }
        other => vec![other.clone()],
    }
}

/// Rows as tab-separated values: a header of every member name (in order of first
/// appearance), then one line a row. Strings are written as they are (tabs and newlines as
/// `\t` and `\n`), other values as JSON; a missing member is empty.
pub fn tsv(rows: &[Value]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut header: Vec<String> = Vec::new();
    for r in rows {
        match r {
            Value::Object(m) => {
                for k in m.keys() {
                    if !header.contains(k) {
                        header.push(k.clone());
                    }
                }
            }
            _ if !header.iter().any(|h| h == "value") => header.push("value".into()),
            _ => {}
        }
    }
    // Tab and line feed written as escapes; no other control character survives.
    let cell = |v: Option<&Value>| match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => terminal_safe(
            &s.replace('\\', "\\\\")
                .replace('\t', "\\t")
                .replace('\n', "\\n"),
            false,
        ),
        Some(other) => other.to_string(),
    };
    let mut out = header
        .iter()
        .map(|h| cell(Some(&Value::String(h.clone()))))
        .collect::<Vec<_>>()
        .join("\t");
    out.push('\n');
    for r in rows {
        let line: Vec<String> = header
            .iter()
            .map(|h| match r {
                Value::Object(m) => cell(m.get(h)),
                other if h == "value" => cell(Some(other)),
                _ => String::new(),
            })
            .collect();
        out.push_str(&line.join("\t"));
        out.push('\n');
    }
    out
}

/// Length of a short claim id in text output: `cl_` and 12 hex digits (any unique prefix of
/// at least 4 hex digits is accepted back as input).
pub const SHORT_ID_LEN: usize = 15;
/// Longest claim text shown beside an id in text output, in characters.
const TEXT_WIDTH: usize = 60;

/// The short form of a claim id, for people.
pub fn short_id(id: &str) -> &str {
    id.get(..SHORT_ID_LEN).unwrap_or(id)
}

/// A claim's `assertion.text` on one line, shortened to [`TEXT_WIDTH`] characters.
pub fn claim_text(body: &Value) -> String {
    one_line(
        body.pointer("/assertion/text")
            .and_then(Value::as_str)
            .unwrap_or(""),
    )
}

/// A claim's text on one line, shortened to [`TEXT_WIDTH`] characters.
pub fn one_line(text: &str) -> String {
    let safe = terminal_safe(text, false);
    let one_line = safe.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= TEXT_WIDTH {
        one_line
    } else {
        let cut: String = one_line.chars().take(TEXT_WIDTH - 1).collect();
        format!("{}…", cut.trim_end())
    }
}

/// Whether the environment forbids colour (the CLI Agent Spec's list): `NO_COLOR` present
/// with any value, empty included; `CI`, `GITHUB_ACTIONS` or `JENKINS_URL` set; `TERM=dumb`.
pub fn colour_forbidden() -> bool {
    let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    std::env::var_os("NO_COLOR").is_some()
        || set("CI")
        || set("GITHUB_ACTIONS")
        || set("JENKINS_URL")
        || std::env::var_os("TERM").is_some_and(|t| t == "dumb")
}

/// Colour for text output: only when a person reads a terminal, never when the environment
/// forbids it ([`colour_forbidden`]), never with `--format plain`, and never in JSON.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    color: bool,
}

impl Style {
    pub fn new(mode: Mode) -> Style {
        Style {
            color: mode == Mode::Text
                && !PLAIN.load(Ordering::SeqCst)
                && std::io::stdout().is_terminal()
                && !colour_forbidden(),
        }
    }

    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\u{1b}[{code}m{s}\u{1b}[0m")
        } else {
            s.to_owned()
        }
    }

    /// A status word, coloured by what it means.
    pub fn status(&self, status: &str) -> String {
        let code = match status.trim_end() {
            "verified" => "32",
            "falsified" => "31;1",
            "revoked" => "31",
            "superseded" => "33",
            _ => "0",
        };
        self.paint(code, status)
    }

    /// A claim id, shortened.
    pub fn id(&self, id: &str) -> String {
        self.paint("36", short_id(id))
    }

    /// Secondary text (a claim's prose), with no control of its own.
    pub fn dim(&self, s: &str) -> String {
        if s.is_empty() {
            String::new()
        } else {
            self.paint("2", &terminal_safe(s, false))
        }
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

    #[test]
    fn claim_text_is_one_shortened_line() {
        let body = json!({"assertion": {"text": "parse  rejects\nempty input"}});
        assert_eq!(claim_text(&body), "parse rejects empty input");
        let long = json!({"assertion": {"text": "é".repeat(100)}});
        let shown = claim_text(&long);
        assert_eq!(shown.chars().count(), TEXT_WIDTH);
        assert!(shown.ends_with('…'));
        assert_eq!(claim_text(&json!({})), "");
        assert_eq!(short_id("cl_0123456789abcdef"), "cl_0123456789ab");
        assert_eq!(short_id("cl_01"), "cl_01");
    }

    #[test]
    fn escapes_and_carriage_returns_are_stripped() {
        assert_eq!(
            strip_escapes("\u{1b}[31;1mred\u{1b}[0m and\r\n\u{1b}]0;title\u{7}done\u{9b}2Kx"),
            "red and\ndonex"
        );
        assert_eq!(strip_escapes("\u{1b}]8;;http://x\u{1b}\\link"), "link");
        let v = sanitized(json!({"a": ["\u{1b}[1mb"], "\u{1b}[2mk": 1}));
        assert_eq!(v, json!({"a": ["b"], "k": 1}));
    }

    #[test]
    fn rows_and_tsv() {
        let data = json!({"count": 2, "claims": [{"id": "a", "n": 1}, {"id": "b\tc", "x": [1]}]});
        let r = rows(&data, false);
        assert_eq!(r.len(), 2);
        assert_eq!(tsv(&r), "id\tn\tx\na\t1\t\nb\\tc\t\t[1]\n");
        let one = json!({"tree": "t", "warnings": []});
        assert_eq!(rows(&one, false), vec![one.clone()]);
        assert!(rows(&json!({"entries": [], "n": 1}), true).is_empty());
        assert!(rows(&Value::Null, false).is_empty());
    }

    #[test]
    fn the_cap_cuts_the_largest_list_and_says_so() {
        let items: Vec<Value> = (0..1000)
            .map(|i| json!({"id": i, "pad": "x".repeat(100)}))
            .collect();
        let mut env = json!({
            "ok": true, "data": {"entries": items}, "error": null, "warnings": [],
            "meta": {"exit_code": 0, "pagination": {"total": 5000, "returned": 1000,
                     "truncated": true, "has_more": true, "next_cursor": "1500"}}
        });
        let cursors: Vec<String> = (500..1500).map(|i: u32| i.to_string()).collect();
        enforce_cap(&mut env, 20_000, &cursors);
        assert!(json_len(&env) <= 20_000, "{}", json_len(&env));
        let kept = env["data"]["entries"].as_array().unwrap().len();
        assert!(kept > 50 && kept < 1000, "{kept}");
        assert_eq!(env["meta"]["truncated"], true);
        assert_eq!(env["meta"]["total_count"], 5000);
        assert_eq!(env["meta"]["returned_count"], kept);
        let p = &env["meta"]["pagination"];
        assert_eq!(p["returned"], kept);
        assert_eq!(p["next_cursor"], json!((500 + kept).to_string()));
        let hint = env["meta"]["truncation_hint"].as_str().unwrap();
        assert!(
            hint.ends_with(&format!("--limit {kept} --cursor {}", 500 + kept)),
            "{hint}"
        );
        assert_eq!(env["warnings"][0]["code"], "RESPONSE_TRUNCATED");
    }

    #[test]
    fn the_cap_shortens_a_lone_long_string() {
        let mut env = json!({"ok": true, "data": {"text": "y".repeat(50_000)}, "error": null,
                             "warnings": [], "meta": {"exit_code": 0}});
        enforce_cap(&mut env, 10_000, &[]);
        assert!(json_len(&env) <= 10_000);
        assert!(env["data"]["text"].as_str().unwrap().ends_with('…'));
        assert!(env["meta"]["truncation_hint"]
            .as_str()
            .unwrap()
            .starts_with("ELENCH_MAX_OUTPUT_BYTES="));
    }
}
