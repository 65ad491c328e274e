//! Evaluation of predicate claims (`elench check`): the three-valued evaluator, path
//! confinement, the tree reads (`grep`, `exists`), test runners, the sandbox every process
//! runs in, and the transcript kept as evidence.

pub mod evaluator;
pub mod grep;
pub mod paths;
pub mod runners;
pub mod sandbox;
pub mod shared;
pub mod transcript;
pub mod workspace;

use crate::claim::predicate::{Expr, Func};
use evaluator::{evaluate, Budget, Truth, TRANSCRIPT_CAP};
use paths::Tree;
use runners::Runner;
use sandbox::Sandbox;
use shared::SharedTests;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use transcript::{Run, Transcript};

/// How claims are evaluated: the same for every claim of one `check`.
pub struct Setup {
    pub tree: Tree,
    pub tree_oid: String,
    pub sandbox: Sandbox,
    /// Why processes may not start (no sandbox could be made), if so.
    pub denied: Option<String>,
    pub runner: Option<Runner>,
    /// Wall time for one evaluation of one claim.
    pub timeout: Duration,
    /// Evaluations per claim; a result is kept only when all agree.
    pub repeat: u32,
    /// Set to end running processes and start no more (an interrupted `check`).
    pub cancel: AtomicBool,
    /// The job slots (each a pristine copy of the tree) made so far, free for the next claim.
    pub slots: workspace::Slots,
}

/// What evaluating a claim came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    True,
    False,
    Inconclusive(String),
    /// Repeated evaluations disagreed.
    Flaky(String),
}

pub struct Evaluation {
    pub outcome: Outcome,
    pub transcript: Transcript,
    /// Wall time of the evaluation, all its repeats (and any test run it waited for)
    /// included.
    pub duration: Duration,
}

/// Whether evaluating `expr` may start processes (`test` or `run` anywhere in it).
pub fn uses_processes(expr: &Expr) -> bool {
    let mut stack = vec![expr];
    while let Some(e) = stack.pop() {
        match e {
            Expr::Call { func, .. } => {
                if matches!(func, Func::Test | Func::Run) {
                    return true;
                }
            }
            Expr::Or(items) | Expr::And(items) => stack.extend(items),
            Expr::Not(x) => stack.push(x),
            Expr::Cmp { lhs, rhs, .. } => {
                stack.push(lhs);
                stack.push(rhs);
            }
            Expr::Field { base, .. } | Expr::Method { base, .. } => stack.push(base),
            Expr::Int(_) | Expr::Str(_) | Expr::Bool(_) => {}
        }
    }
    false
}

/// Evaluates one claim's predicate `setup.repeat` times, each in a fresh workspace; its
/// `test(…)` calls read the runs of `shared` (round by round, one per repeat).
pub fn evaluate_claim(
    setup: &Setup,
    shared: &SharedTests,
    claim_id: &str,
    source: &str,
    expr: &Expr,
) -> Evaluation {
    let started = Instant::now();
    let mut runs = Vec::new();
    let mut truths = Vec::new();
    let mut budget = Budget::default();
    for round in 0..setup.repeat.max(1) as usize {
        let deadline = Instant::now() + setup.timeout;
        let mut ws = workspace::Workspace::new(setup, shared, round, deadline);
        let (truth, calls) = evaluate(expr, &mut ws, &mut budget);
        // The shared test runs this evaluation read, kept within the same allowance.
        let tests: Vec<_> = ws
            .test_runs()
            .map(|t| {
                let mut t = t.clone();
                for p in &mut t.processes {
                    budget.keep(p);
                }
                t
            })
            .collect();
        drop(ws);
        runs.push(Run {
            tests,
            calls,
            value: truth.as_json(),
            reason: match &truth {
                Truth::Inconclusive(why) => Some(why.clone()),
                _ => None,
            },
        });
        let stop = matches!(truth, Truth::Inconclusive(_));
        truths.push(truth);
        // One inconclusive evaluation already decides that nothing is recorded.
        if stop {
            break;
        }
    }
    let outcome = combine(&truths);
    Evaluation {
        outcome,
        transcript: Transcript {
            tree: setup.tree_oid.clone(),
            claim: claim_id.to_owned(),
            expression: source.to_owned(),
            hermeticity: setup.sandbox.hermeticity().to_owned(),
            runner: setup.runner.as_ref().map(Runner::describe),
            truncated: budget.cut.then(|| {
                format!(
                    "this transcript keeps at most {TRANSCRIPT_CAP} bytes of output, reports \
                     and results; what came after was cut (the values the predicate compared were not)"
                )
            }),
            runs,
        },
        duration: started.elapsed(),
    }
}

/// All evaluations must agree for a verdict; an inconclusive one makes the claim
/// inconclusive; true and false together make it flaky.
pub fn combine(truths: &[Truth]) -> Outcome {
    if let Some(Truth::Inconclusive(why)) =
        truths.iter().find(|t| matches!(t, Truth::Inconclusive(_)))
    {
        return Outcome::Inconclusive(why.clone());
    }
    let trues = truths.iter().filter(|t| **t == Truth::True).count();
    let falses = truths.len() - trues;
    match (trues, falses) {
        (0, 0) => Outcome::Inconclusive("not evaluated".into()),
        (_, 0) => Outcome::True,
        (0, _) => Outcome::False,
        (t, f) => Outcome::Flaky(format!(
            "{t} of {} evaluations were true and {f} false",
            t + f
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::predicate::parse;

    #[test]
    fn repeated_results_must_agree() {
        assert_eq!(combine(&[Truth::True, Truth::True]), Outcome::True);
        assert_eq!(combine(&[Truth::False]), Outcome::False);
        assert!(matches!(
            combine(&[Truth::True, Truth::False]),
            Outcome::Flaky(_)
        ));
        assert!(matches!(
            combine(&[Truth::True, Truth::Inconclusive("x".into())]),
            Outcome::Inconclusive(_)
        ));
        assert!(matches!(combine(&[]), Outcome::Inconclusive(_)));
    }

    #[test]
    fn which_predicates_start_processes() {
        assert!(!uses_processes(
            &parse(r#"exists("a") && grep("x", "b") == 0"#).unwrap()
        ));
        assert!(uses_processes(
            &parse(r#"exists("a") || !test("t").passed"#).unwrap()
        ));
        assert!(uses_processes(
            &parse(r#"run("x").stdout.contains("y")"#).unwrap()
        ));
    }
}
