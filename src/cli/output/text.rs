//! Text for people: short ids, one-line claim texts, and colour only when allowed.

use super::escapes::terminal_safe;
use super::{Mode, PLAIN};
use serde_json::Value;
use std::io::IsTerminal;
use std::sync::atomic::Ordering;

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
    pub(super) color: bool,
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
    use serde_json::json;

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
