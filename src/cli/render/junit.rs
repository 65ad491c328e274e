//! JUnit XML (`--format junit` on `check`): one testcase per claim evaluated, so CI systems
//! show claims where they show tests. Falsified is a failure carrying the evidence, an
//! inconclusive or flaky evaluation is skipped with its reason, verified and unchanged pass.
//! Claims not applicable at the tree were not evaluated and are not listed.
//!
//! The shape is Apache Ant's JUnit report (the schema most consumers read): `testsuites`
//! holding one `testsuite` with `properties`, the testcases, `system-out` and `system-err`.

/// One claim's evaluation.
#[derive(Debug, Clone)]
pub struct Case {
    pub id: String,
    pub text: String,
    /// The file the claim is about at the tree, when it names one.
    pub path: Option<String>,
    pub range: Option<[u64; 2]>,
    /// `verified`, `falsified`, `unchanged`, `inconclusive`, `flaky` (others are left out).
    pub outcome: String,
    pub reason: Option<String>,
    pub record: Option<String>,
    pub evidence: Option<String>,
    /// What the evaluation recorded (its transcript), shortened, for a failure.
    pub transcript: Option<String>,
    /// How long its evaluation took, in seconds (None: not evaluated).
    pub seconds: Option<f64>,
}

/// What the suite says about the run.
#[derive(Debug, Clone)]
pub struct Suite {
    pub tree: String,
    pub hermeticity: String,
    /// `YYYY-MM-DDTHH:MM:SS`, UTC.
    pub timestamp: String,
    pub hostname: String,
}

/// Text as XML 1.0 can carry it: `&`, `<`, `>`, quotes escaped; characters XML forbids
/// (most controls, unpaired surrogates cannot occur in a `str`, U+FFFE, U+FFFF) and the
/// controls it allows but a terminal acts on (DEL, C1) replaced; in an attribute, line breaks and tabs written as character references so they survive
/// attribute normalisation.
fn xml(s: &str, attribute: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if attribute => out.push_str("&quot;"),
            '\n' if attribute => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' if attribute => out.push_str("&#9;"),
            '\n' | '\t' => out.push(c),
            // C0 controls XML forbids; DEL and C1, which it allows, would drive a terminal
            // that shows the report.
            c if c.is_control() || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

fn counted(cases: &[Case]) -> impl Iterator<Item = &Case> {
    cases.iter().filter(|c| {
        matches!(
            c.outcome.as_str(),
            "verified" | "falsified" | "unchanged" | "inconclusive" | "flaky"
        )
    })
}

/// Seconds as JUnit writes them: to the millisecond.
fn seconds(s: Option<f64>) -> String {
    format!("{:.3}", s.unwrap_or(0.0).max(0.0))
}

/// The JUnit document. The suite is named for the tree checked, and its time is the sum of
/// its cases' (each the wall time of one claim's evaluation).
pub fn render(cases: &[Case], suite: &Suite) -> String {
    let listed: Vec<&Case> = counted(cases).collect();
    let total: f64 = listed.iter().filter_map(|c| c.seconds).sum();
    let failures = listed.iter().filter(|c| c.outcome == "falsified").count();
    let skipped = listed
        .iter()
        .filter(|c| matches!(c.outcome.as_str(), "inconclusive" | "flaky"))
        .count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
    out.push_str(&format!(
        "  <testsuite name=\"elench check at tree {}\" package=\"elench\" id=\"0\" \
         timestamp=\"{}\" hostname=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" \
         skipped=\"{skipped}\" time=\"{}\">\n",
        xml(&suite.tree, true),
        xml(&suite.timestamp, true),
        xml(&suite.hostname, true),
        listed.len(),
        seconds(Some(total))
    ));
    out.push_str("    <properties>\n");
    for (name, value) in [
        ("tree", suite.tree.as_str()),
        ("hermeticity", suite.hermeticity.as_str()),
    ] {
        out.push_str(&format!(
            "      <property name=\"{name}\" value=\"{}\"/>\n",
            xml(value, true)
        ));
    }
    out.push_str("    </properties>\n");
    for c in listed {
        let name = format!(
            "{} {}",
            crate::cli::output::short_id(&c.id),
            super::graph::one_line(&c.text)
        );
        let classname = match &c.path {
            Some(p) => format!("elench.{p}"),
            None => "elench".to_owned(),
        };
        out.push_str(&format!(
            "    <testcase name=\"{}\" classname=\"{}\" time=\"{}\"",
            xml(name.trim(), true),
            xml(&classname, true),
            seconds(c.seconds)
        ));
        match c.outcome.as_str() {
            "falsified" => {
                let mut body = format!("claim {}\n", c.id);
                if let Some(p) = &c.path {
                    body.push_str(&format!("about {p}"));
                    if let Some([s, e]) = c.range {
                        body.push_str(&format!(":{s}-{e}"));
                    }
                    body.push('\n');
                }
                if let Some(r) = &c.record {
                    body.push_str(&format!("falsification record {r} (elench show {r})\n"));
                }
                if let Some(e) = &c.evidence {
                    body.push_str(&format!("evidence sha256:{e}\n"));
                }
                if let Some(t) = &c.transcript {
                    body.push_str("transcript:\n");
                    body.push_str(t);
                    if !t.ends_with('\n') {
                        body.push('\n');
                    }
                }
                out.push_str(&format!(
                    ">\n      <failure type=\"falsified\" message=\"{}\">{}</failure>\n    </testcase>\n",
                    xml(
                        &format!("the predicate evaluated to false at tree {}", suite.tree),
                        true
                    ),
                    xml(&body, false)
                ));
            }
            "inconclusive" | "flaky" => {
                let reason = c.reason.as_deref().unwrap_or("no reason given");
                out.push_str(&format!(
                    ">\n      <skipped message=\"{}\">{}</skipped>\n    </testcase>\n",
                    xml(&format!("{}: {reason}", c.outcome), true),
                    xml(reason, false)
                ));
            }
            _ => out.push_str("/>\n"),
        }
    }
    out.push_str("    <system-out/>\n    <system-err/>\n  </testsuite>\n</testsuites>\n");
    out
}

/// `YYYY-MM-DDTHH:MM:SS` (UTC) of seconds since the Unix epoch.
pub fn utc_timestamp(secs: i64) -> String {
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = elench::conformance::corpus::civil_from_days(secs.div_euclid(86_400));
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_and_escapes() {
        assert_eq!(utc_timestamp(0), "1970-01-01T00:00:00");
        assert_eq!(utc_timestamp(1_700_000_000), "2023-11-14T22:13:20");
        assert_eq!(utc_timestamp(951_782_400), "2000-02-29T00:00:00");
        assert_eq!(
            xml("a<&>\"\n\u{1}", true),
            "a&lt;&amp;&gt;&quot;&#10;\u{FFFD}"
        );
        assert_eq!(xml("a\nb\tc\"", false), "a\nb\tc\"");
        assert_eq!(seconds(Some(1.23456)), "1.235");
        assert_eq!(seconds(None), "0.000");
    }
}
