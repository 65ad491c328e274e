//! The test runs one `check` shares between its claims. Building a project is most of what
//! running its tests costs, so the runner is not started once per `test(NAME)` call: every
//! name the claims' predicates call is handed to one process of the runner (one per
//! `--repeat`), and each `test(NAME)` reads its result from that run's output. The run is
//! started the first time a claim asks for one of its results (so a `check` whose claims
//! never reach a `test(…)` call starts none), in that claim's job slot, and the claims
//! evaluated beside it wait for it.
//!
//! Names go to one process together up to [`NAMES_PER_RUN`] bytes (the kernel refuses a
//! longer environment variable, and `$ELENCH_TESTS` holds them all); more are split into
//! several runs.

use super::runners::Runner;
use super::transcript::TestRun;
use crate::claim::predicate::{Arg, Expr, Func};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The most bytes of test names (one byte more each, for the line break) one run is given.
pub const NAMES_PER_RUN: usize = 64 << 10;

/// What one run of the runner said about each of its names.
#[derive(Debug)]
pub struct Results {
    /// The run as observed, as every transcript that reads it keeps it.
    pub run: TestRun,
    /// By name: whether the test passed, or why the run does not say.
    by_name: HashMap<String, Result<bool, String>>,
}

impl Results {
    pub fn new(run: TestRun, by_name: HashMap<String, Result<bool, String>>) -> Results {
        Results { run, by_name }
    }

    /// A run that decides none of its names, for one reason.
    pub fn none(run: TestRun, why: &str) -> Results {
        let by_name = run
            .names
            .iter()
            .map(|n| (n.clone(), Err(why.to_owned())))
            .collect();
        Results { run, by_name }
    }

    /// Whether `name` passed, or why this run does not say.
    pub fn get(&self, name: &str) -> Result<bool, String> {
        self.by_name
            .get(name)
            .cloned()
            .unwrap_or_else(|| Err(format!("{name} was not among the tests of this run")))
    }
}

/// The test runs of one `check`: the names in groups, each group run once per repeat.
#[derive(Default)]
pub struct SharedTests {
    groups: Vec<Vec<String>>,
    group_of: HashMap<String, usize>,
    /// `[round * groups + group]`: the run, once made.
    cells: Vec<Mutex<Option<Arc<Results>>>>,
}

impl SharedTests {
    /// The runs for every test name `exprs` call that `runner` takes, each run `repeat`
    /// times. Without a runner there is nothing to run.
    pub fn plan<'e>(
        runner: Option<&Runner>,
        exprs: impl IntoIterator<Item = &'e Expr>,
        repeat: u32,
    ) -> SharedTests {
        let Some(runner) = runner else {
            return SharedTests::default();
        };
        let mut groups: Vec<Vec<String>> = Vec::new();
        let mut group_of = HashMap::new();
        let mut size = 0usize;
        for expr in exprs {
            for name in test_names(expr) {
                if group_of.contains_key(name) || runner.check_name(name).is_err() {
                    continue;
                }
                let cost = name.len() + 1;
                match groups.last_mut() {
                    Some(g) if size + cost <= NAMES_PER_RUN => g.push(name.to_owned()),
                    _ => {
                        groups.push(vec![name.to_owned()]);
                        size = 0;
                    }
                }
                size += cost;
                group_of.insert(name.to_owned(), groups.len() - 1);
            }
        }
        let cells = (0..groups.len() * repeat.max(1) as usize)
            .map(|_| Mutex::new(None))
            .collect();
        SharedTests {
            groups,
            group_of,
            cells,
        }
    }

    /// Every name planned, in the order the claims call them.
    #[cfg(test)]
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.groups.iter().flatten().map(String::as_str)
    }

    /// The results of round `round` (0 to `repeat` - 1) of the run holding `name`: made with
    /// `run` (given the run's names) by the first caller, which the others wait for. None
    /// when no run holds `name`.
    pub fn results(
        &self,
        round: usize,
        name: &str,
        run: impl FnOnce(&[String]) -> Results,
    ) -> Option<Arc<Results>> {
        let g = *self.group_of.get(name)?;
        let cell = self.cells.get(round * self.groups.len() + g)?;
        let mut made = cell.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = made.as_ref() {
            return Some(r.clone());
        }
        let r = Arc::new(run(&self.groups[g]));
        *made = Some(r.clone());
        Some(r)
    }
}

/// The names `test(…)` is called with anywhere in `expr`, in order.
pub fn test_names(expr: &Expr) -> Vec<&str> {
    let mut names = Vec::new();
    let mut stack = vec![expr];
    while let Some(e) = stack.pop() {
        match e {
            Expr::Call { func, args } => {
                if *func == Func::Test {
                    if let Some(Arg::Str(name)) = args.first() {
                        names.push(name.as_str());
                    }
                }
            }
            Expr::Or(items) | Expr::And(items) => stack.extend(items.iter().rev()),
            Expr::Not(x) => stack.push(x),
            Expr::Cmp { lhs, rhs, .. } => {
                stack.push(rhs);
                stack.push(lhs);
            }
            Expr::Field { base, .. } | Expr::Method { base, .. } => stack.push(base),
            Expr::Int(_) | Expr::Str(_) | Expr::Bool(_) => {}
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::predicate::parse;

    #[test]
    fn names_are_collected_in_order_once_each() {
        let a = parse(r#"test("a").passed && (test("b").passed || !test("a").passed)"#).unwrap();
        let b = parse(r#"run("x").exit == 0 && test("c").passed && test("-x").passed"#).unwrap();
        assert_eq!(test_names(&a), ["a", "b", "a"]);
        let plan = SharedTests::plan(Some(&Runner::Cargo), [&a, &b], 2);
        assert_eq!(plan.names().collect::<Vec<_>>(), ["a", "b", "c"]);
        // Two rounds of one group.
        assert_eq!(plan.cells.len(), 2);
        assert!(SharedTests::plan(None, [&a], 1).names().next().is_none());
    }

    #[test]
    fn each_round_runs_once_whoever_asks() {
        let a = parse(r#"test("a").passed && test("b").passed"#).unwrap();
        let plan = SharedTests::plan(Some(&Runner::Cargo), [&a], 2);
        let runs = std::sync::atomic::AtomicUsize::new(0);
        let make = |names: &[String]| {
            runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let run = TestRun {
                names: names.to_vec(),
                processes: Vec::new(),
            };
            let by_name = names.iter().map(|n| (n.clone(), Ok(n == "a"))).collect();
            Results::new(run, by_name)
        };
        for round in [0, 0, 1, 1] {
            for name in ["a", "b"] {
                let r = plan.results(round, name, make).unwrap();
                assert_eq!(r.get(name), Ok(name == "a"));
            }
        }
        assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 2);
        assert!(plan.results(0, "zz", make).is_none());
        assert!(plan.results(2, "a", make).is_none());
    }

    #[test]
    fn long_lists_are_split_into_runs_of_bounded_size() {
        let name = "n".repeat(1000);
        let src: Vec<String> = (0..200)
            .map(|i| format!(r#"test("{name}{i}").passed"#))
            .collect();
        let exprs: Vec<Expr> = src.iter().map(|s| parse(s).unwrap()).collect();
        let plan = SharedTests::plan(Some(&Runner::Cargo), &exprs, 1);
        assert!(plan.groups.len() >= 3, "{}", plan.groups.len());
        for g in &plan.groups {
            assert!(g.iter().map(|n| n.len() + 1).sum::<usize>() <= NAMES_PER_RUN);
        }
        assert_eq!(plan.names().count(), 200);
    }
}
