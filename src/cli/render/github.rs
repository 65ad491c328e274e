//! GitHub Actions workflow commands (`--format github` on `gate` and `check`): one
//! `::error` line per claim in violation, so GitHub annotates the pull request at the
//! claim's lines.
//!
//! Escaping follows the runner's workflow-command format: in the message (the data after
//! `::`) `%`, CR and LF are written `%25`, `%0D`, `%0A`; in a property value also `:` and
//! `,` (`%3A`, `%2C`), which would otherwise end the value. The log that shows these lines
//! reads terminal escapes, so no other control character is written (a claim's text could
//! otherwise colour or rewrite the log).

use super::sarif::{Finding, Report};

/// `s` without terminal escapes and control characters, but its line breaks (CR and LF,
/// which the runner's escapes carry) and tabs.
fn without_controls(s: &str) -> String {
    s.split('\r')
        .map(|part| crate::cli::output::terminal_safe(part, false))
        .collect::<Vec<_>>()
        .join("\r")
}

/// The message part of a workflow command.
pub fn escape_data(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in without_controls(s).chars() {
        match c {
            '%' => out.push_str("%25"),
            '\r' => out.push_str("%0D"),
            '\n' => out.push_str("%0A"),
            c => out.push(c),
        }
    }
    out
}

/// A property value (`file=`, `title=`) of a workflow command.
pub fn escape_property(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in without_controls(s).chars() {
        match c {
            '%' => out.push_str("%25"),
            '\r' => out.push_str("%0D"),
            '\n' => out.push_str("%0A"),
            ':' => out.push_str("%3A"),
            ',' => out.push_str("%2C"),
            c => out.push(c),
        }
    }
    out
}

/// One annotation: `::error file=…,line=…,endLine=…,title=…::message`.
pub fn annotation(
    file: Option<&str>,
    range: Option<[u64; 2]>,
    title: &str,
    message: &str,
) -> String {
    annotate("error", file, range, title, message)
}

/// An annotation at `level` (`error`, `warning`, `notice`).
pub fn annotate(
    level: &str,
    file: Option<&str>,
    range: Option<[u64; 2]>,
    title: &str,
    message: &str,
) -> String {
    let mut props = Vec::new();
    if let Some(f) = file {
        props.push(format!("file={}", escape_property(f)));
        if let Some([s, e]) = range {
            props.push(format!("line={s}"));
            props.push(format!("endLine={e}"));
        }
    }
    props.push(format!("title={}", escape_property(title)));
    format!("::{level} {}::{}\n", props.join(","), escape_data(message))
}

fn finding_line(f: &Finding) -> String {
    let title = format!(
        "{} {} ({})",
        crate::cli::output::short_id(&f.id),
        f.status.map_or("in violation", |s| s.as_str()),
        f.rules[0]
    );
    let mut message = String::new();
    if let Some(t) = &f.text {
        message.push_str(&format!("\"{t}\"\n"));
    }
    message.push_str(&format!("claim {}", f.id));
    for r in &f.reasons {
        message.push('\n');
        message.push_str(r);
    }
    for root in &f.roots {
        message.push_str(&format!("\nrests on falsified {}", root.id));
        if let Some(t) = &root.text {
            message.push_str(&format!(": \"{t}\""));
        }
    }
    annotation(
        f.place.as_ref().map(|p| p.path.as_str()),
        f.place.as_ref().and_then(|p| p.range),
        &title,
        &message,
    )
}

/// The gate's violations as annotations: one per claim, then the scope's.
pub fn render(r: &Report) -> String {
    let mut out = String::new();
    for f in &r.findings {
        out.push_str(&finding_line(f));
    }
    for (rule, message) in &r.scope {
        let place = r.policy.as_ref();
        out.push_str(&annotation(
            place.map(|p| p.path.as_str()),
            place.and_then(|p| p.range),
            rule,
            message,
        ));
    }
    out
}

/// `check`'s outcomes: a falsified claim is an error at its lines, an inconclusive or flaky
/// one a warning; what was verified or unchanged says nothing.
pub fn render_check(cases: &[super::junit::Case]) -> String {
    let mut out = String::new();
    for c in cases {
        let level = match c.outcome.as_str() {
            "falsified" => "error",
            "inconclusive" | "flaky" => "warning",
            _ => continue,
        };
        let title = format!("{} {}", crate::cli::output::short_id(&c.id), c.outcome);
        let mut message = format!("\"{}\"\nclaim {}", c.text, c.id);
        if let Some(r) = &c.reason {
            message.push_str(&format!("\n{r}"));
        }
        if let Some(r) = &c.record {
            message.push_str(&format!("\nrecord {r} (elench show {r})"));
        }
        out.push_str(&annotate(
            level,
            c.path.as_deref(),
            c.range,
            &title,
            &message,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_escaped_as_the_runner_reads_them() {
        assert_eq!(
            annotation(Some("a,b:c%.rs"), Some([3, 4]), "t: x, y", "50%\r\nnext: a, b"),
            "::error file=a%2Cb%3Ac%25.rs,line=3,endLine=4,title=t%3A x%2C y::50%25%0D%0Anext: a, b\n"
        );
        assert_eq!(
            annotation(
                None,
                None,
                "t\u{7}\u{1b}[2Jx",
                "a\u{1b}]0;title\u{7}b\u{9b}31mc\u{7f}"
            ),
            "::error title=tx::abc\n"
        );
    }
}
