//! The output contract (docs/output.md, after the CLI Agent Spec): one JSON object per
//! invocation on stdout when a program reads it, readable text when a person does.

use super::failure::Failure;
use serde::Serialize;
use serde_json::{json, Value};
use std::io::{IsTerminal, Write};
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Json,
    Text,
}

impl Mode {
    /// `--format` wins; otherwise JSON unless stdout is a terminal and neither `CI` nor
    /// `NO_COLOR` is set.
    pub fn detect(format: Option<&str>) -> Mode {
        match format {
            Some("json") => Mode::Json,
            Some("text") => Mode::Text,
            _ => {
                let piped = !std::io::stdout().is_terminal();
                let env_set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
                if piped || env_set("CI") || env_set("NO_COLOR") {
                    Mode::Json
                } else {
                    Mode::Text
                }
            }
        }
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
    /// The command wrote its product to stdout itself (`sign -o -`, `export -o -`): no
    /// report goes there.
    pub stdout_taken: bool,
}

impl Report {
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

/// Writes the report and returns the process exit code.
pub fn emit(mode: Mode, command: &str, started: Instant, mut report: Report) -> i32 {
    // What the store noticed on the way (a torn tail cut, an index rebuilt) is reported too.
    for (code, message) in crate::store::take_warnings() {
        report.warnings.push(Warning::new(&code, message));
    }
    let exit_code = report.exit_code();
    let duration_ms = started.elapsed().as_millis() as u64;
    match mode {
        _ if report.stdout_taken => {
            if let Some(f) = &report.failure {
                eprintln!("{}", f.to_text());
            }
        }
        Mode::Json => {
            // Field names as the CLI Agent Spec's ResponseMeta has them.
            let mut meta = json!({
                "exit_code": exit_code,
                "duration_ms": duration_ms,
                "command": command,
                "tool_version": env!("CARGO_PKG_VERSION"),
            });
            if let Some(p) = report.pagination {
                meta["pagination"] = p;
            }
            // Every non-zero exit carries an error object, a partial success included.
            let error = match &report.failure {
                Some(f) => Some(f.to_json()),
                None if exit_code != 0 => Some(Failure::partial_default().to_json()),
                None => None,
            };
            let envelope = json!({
                "ok": exit_code == 0,
                "data": report.data,
                "error": error,
                "warnings": report.warnings,
                "meta": meta,
            });
            let mut out = std::io::stdout().lock();
            // A closed stdout (e.g. `| head`) is not worth a panic.
            let _ = writeln!(out, "{envelope}");
            let _ = out.flush();
        }
        Mode::Text => {
            if !report.text.is_empty() {
                let mut out = std::io::stdout().lock();
                let _ = write!(out, "{}", report.text);
                if !report.text.ends_with('\n') {
                    let _ = writeln!(out);
                }
            }
            let mut err = std::io::stderr().lock();
            for w in &report.warnings {
                let _ = writeln!(err, "warning[{}]: {}", w.code, w.message);
            }
            if let Some(f) = &report.failure {
                let _ = writeln!(err, "{}", f.to_text());
            } else if exit_code != 0 {
                let _ = writeln!(err, "{}", Failure::partial_default().to_text());
            }
        }
    }
    exit_code
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
    let text = body
        .pointer("/assertion/text")
        .and_then(Value::as_str)
        .unwrap_or("");
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= TEXT_WIDTH {
        one_line
    } else {
        let cut: String = one_line.chars().take(TEXT_WIDTH - 1).collect();
        format!("{}…", cut.trim_end())
    }
}

/// Colour for text output: only when a person reads a terminal, never with `NO_COLOR` (any
/// value, as no-color.org has it) or a dumb terminal, and never in JSON.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    color: bool,
}

impl Style {
    pub fn new(mode: Mode) -> Style {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
        Style {
            color: mode == Mode::Text && std::io::stdout().is_terminal() && !no_color && !dumb,
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

    /// Secondary text (a claim's prose).
    pub fn dim(&self, s: &str) -> String {
        if s.is_empty() {
            String::new()
        } else {
            self.paint("2", s)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
