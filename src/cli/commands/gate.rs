//! `elench gate --policy FILE [--at DIR]`: may the tree at DIR ship, given the log?
//!
//! A failing gate is a decision, not an error: it exits with its own code (GATE_FAILED, 79,
//! from the CLI Agent Spec's range for a command's own codes), so CI can tell "may not ship"
//! from "could not decide" (bad policy 2, no store 4, …).

use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::output::Report;
use elench::gate::StaleRule;
use elench::ops::gate::{gate, GateInput, GateOutput};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit codes: 0 the tree may ship; 79 it may not (GATE_FAILED, every \
                        violation listed); 2 the policy does not parse (BAD_POLICY, with line \
                        and column) or bad arguments; 4 no store."
)]
pub struct GateArgs {
    /// The policy (TOML: [scope] paths, origins, producers, forms; [rules] forbid,
    /// max_unevaluated, min_harness_keys, stale, min_in_scope). Absent rules take their
    /// strictest value
    #[arg(long, value_name = "FILE")]
    pub policy: PathBuf,
    /// The tree to decide on (default: the enclosing checkout, i.e. the nearest directory
    /// upwards holding .git, else the working directory)
    #[arg(long, value_name = "DIR")]
    pub at: Option<PathBuf>,
    /// Keep the files that .gitignore, .git/info/exclude and the global excludes leave out
    /// of the tree (as `anchor --no-ignore` did)
    #[arg(long)]
    pub no_ignore: bool,
}

pub fn run(a: GateArgs, g: &Globals) -> Result<Report, Failure> {
    let format = crate::cli::output::Format::detect(g.format.as_deref());
    let document = matches!(
        format,
        crate::cli::output::Format::Sarif | crate::cli::output::Format::Github
    );
    let policy_name = a.policy.display().to_string();
    let policy = std::fs::read(&a.policy).map_err(|e| Failure::io(&policy_name, e))?;
    let out = gate(
        &g.context(),
        &GateInput {
            policy,
            policy_name,
            at: a.at,
            no_ignore: a.no_ignore,
            places: document,
        },
    )?;
    let text = render(&out);
    let data = serde_json::to_value(&out).map_err(|e| Failure::Internal(format!("gate: {e}")))?;
    let product = document.then(|| crate::cli::render::gate_document(&out, format));
    Ok(Report {
        data,
        text,
        failure: out.failure(),
        product,
        ..Report::default()
    })
}

/// The report for people: verdict, counts per status and per rule, then each violation with
/// the claim's text.
fn render(o: &GateOutput) -> String {
    let (tree, policy_path) = (&o.tree, &o.policy_path);
    let c = &o.counts;
    let r = &o.parsed.rules;
    let verdict = if o.pass { "PASS" } else { "FAIL" };
    let mut t = format!(
        "gate {verdict} at tree {} (policy {policy_path})\n",
        short(tree, 12)
    );
    t.push_str(&format!(
        "  in scope  {} claim(s): {} anchored, {} carried, {} stale  \
         (left aside: {} unanchored, {} filtered out)\n",
        c.in_scope,
        c.applies.anchored,
        c.applies.carried,
        c.applies.stale,
        c.unanchored,
        c.filtered_out
    ));
    let s = &c.status;
    t.push_str(&format!(
        "  status    {} verified, {} unevaluated ({} accepted as residue), {} falsified, \
         {} revoked, {} superseded\n",
        s.verified, s.unevaluated, c.accepted, s.falsified, s.revoked, s.superseded
    ));
    let forbid: Vec<&str> = r.forbid.iter().map(|s| s.as_str()).collect();
    let v = &c.violations;
    t.push_str(&format!(
        "  rules     forbid [{}]: {}  ·  max_unevaluated {} (have {}): {}  ·  \
         min_harness_keys {}: {}  ·  stale {}: {}  ·  min_in_scope {} (have {}): {}\n",
        forbid.join(", "),
        v.forbid,
        r.max_unevaluated,
        c.unevaluated_unaccepted,
        v.max_unevaluated,
        r.min_harness_keys,
        v.min_harness_keys,
        match r.stale {
            StaleRule::Fail => "fail",
            StaleRule::Ignore => "ignore",
        },
        v.stale,
        r.min_in_scope,
        c.in_scope,
        v.min_in_scope
    ));
    if r.witness_fresh {
        t.push_str(&format!(
            "  witnesses of remote {} (witness_fresh): {}\n",
            r.witness_remote, v.remote_rewound
        ));
    }
    if !o.violations.is_empty() {
        t.push_str("violations:\n");
        for x in &o.violations {
            t.push_str(&format!(
                "  {}  {:<16} {:<11} {:<8} {}\n",
                short(x.id.as_deref().unwrap_or("(the scope)"), 15),
                x.rule.as_str(),
                x.status.map_or("-", |s| s.as_str()),
                x.applies.map_or("-", |a| a.as_str()),
                match (&x.path, x.range) {
                    (Some(p), Some([s, e])) => format!("{p}:{s}-{e}"),
                    (Some(p), None) => p.clone(),
                    (None, _) => "-".into(),
                },
            ));
            if let Some(text) = &x.text {
                t.push_str(&format!("      \"{}\"\n", short(text, 72)));
            }
            t.push_str(&format!("      {}\n", x.message));
        }
    }
    t
}

/// At most `n` characters of `s`, with an ellipsis when cut; one line.
fn short(s: &str, n: usize) -> String {
    let one_line = s.replace(['\n', '\r', '\t'], " ");
    if one_line.chars().count() <= n {
        one_line
    } else {
        let cut: String = one_line.chars().take(n.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}
