//! Three-valued evaluation of an `elench-predicate-v1` AST.
//!
//! Every value can be inconclusive (a refused path, a test that did not run, a process that
//! timed out). `&&` and `||` go left to right and stop as soon as an operand decides them
//! (false for `&&`, true for `||`); an inconclusive operand that nothing decides makes the
//! whole inconclusive. Anything else applied to an inconclusive value is inconclusive.

use super::grep::{self, Pattern};
use super::paths::Tree;
use super::transcript::{Call, ProcessRecord};
use crate::claim::predicate::{Arg, CmpOp, Expr, Field, Func, Method};
use serde_json::json;
use std::time::Instant;

/// The most text (process output, reports, results; counted as stored, JSON escapes
/// included) one claim's transcript keeps, over all its calls and repeats.
pub const TRANSCRIPT_CAP: usize = 8 << 20;

/// What is left of a claim's transcript allowance, and whether anything was cut.
#[derive(Debug, Clone)]
pub struct Budget {
    pub left: usize,
    pub cut: bool,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            left: TRANSCRIPT_CAP,
            cut: false,
        }
    }
}

impl Budget {
    /// Keeps as much of `s` as the allowance has room for (cut at a character boundary).
    fn clip(&mut self, s: &mut String) {
        let mut cost = 0usize;
        let mut end = s.len();
        for (i, c) in s.char_indices() {
            let n = match c {
                '"' | '\\' => 2,
                c if (c as u32) < 0x20 => 6,
                c => c.len_utf8(),
            };
            if cost + n > self.left {
                end = i;
                break;
            }
            cost += n;
        }
        if end < s.len() {
            s.truncate(end);
            self.cut = true;
        }
        self.left -= cost;
    }

    /// Keeps as much of a process's output and report as the allowance has room for, and
    /// marks the record when something was cut.
    pub fn keep(&mut self, p: &mut ProcessRecord) {
        let before = self.cut;
        self.clip(&mut p.stdout);
        self.clip(&mut p.stderr);
        if let Some(j) = p.junit.as_mut() {
            self.clip(j);
        }
        p.truncated |= self.cut && !before;
    }
}

/// What a process-starting primitive observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunResult {
    Done { exit: i64, stdout: String },
    Inconclusive(String),
}

/// The outcome of `test(name)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestResult {
    Ran { passed: bool },
    Inconclusive(String),
}

/// Where primitives read and run: the tree and (for `test`/`run`) confined processes.
pub trait Processes {
    /// The tree reads see: the tree being checked, which no process can change.
    fn view(&self) -> &Tree;
    /// When reads must stop (the claim's deadline), if ever.
    fn deadline(&self) -> Option<Instant> {
        None
    }
    fn test(&mut self, name: &str) -> (TestResult, Option<ProcessRecord>);
    fn run(&mut self, cmd: &str) -> (RunResult, Option<ProcessRecord>);
}

/// The value of the whole predicate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Truth {
    True,
    False,
    Inconclusive(String),
}

impl Truth {
    pub fn as_json(&self) -> serde_json::Value {
        match self {
            Truth::True => json!(true),
            Truth::False => json!(false),
            Truth::Inconclusive(_) => json!("inconclusive"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Val {
    Int(i64),
    Bool(bool),
    Str(String),
    Test(bool),
    Run { exit: i64, stdout: String },
    Unknown(String),
}

/// Evaluates `expr` and returns its truth and the calls made, in order; the text the calls
/// keep is bounded by `budget`.
pub fn evaluate<P: Processes>(expr: &Expr, p: &mut P, budget: &mut Budget) -> (Truth, Vec<Call>) {
    let mut ev = Evaluator {
        p,
        calls: Vec::new(),
        budget,
    };
    let truth = match ev.eval(expr) {
        Val::Bool(true) => Truth::True,
        Val::Bool(false) => Truth::False,
        Val::Unknown(why) => Truth::Inconclusive(why),
        // The parser only accepts Bool predicates.
        other => Truth::Inconclusive(format!("the predicate is not Bool: {other:?}")),
    };
    (truth, ev.calls)
}

struct Evaluator<'a, P: Processes> {
    p: &'a mut P,
    calls: Vec<Call>,
    budget: &'a mut Budget,
}

fn type_error(what: &str) -> Val {
    Val::Unknown(format!(
        "type error: {what} (the parser should have refused this)"
    ))
}

impl<P: Processes> Evaluator<'_, P> {
    fn eval(&mut self, e: &Expr) -> Val {
        match e {
            Expr::Or(items) => self.junction(items, true),
            Expr::And(items) => self.junction(items, false),
            Expr::Not(inner) => match self.eval(inner) {
                Val::Bool(b) => Val::Bool(!b),
                u @ Val::Unknown(_) => u,
                _ => type_error("! needs a Bool"),
            },
            Expr::Cmp { op, lhs, rhs } => {
                let l = self.eval(lhs);
                let r = self.eval(rhs);
                compare(*op, l, r)
            }
            Expr::Int(i) => Val::Int(*i),
            Expr::Str(s) => Val::Str(s.clone()),
            Expr::Bool(b) => Val::Bool(*b),
            Expr::Call { func, args } => self.call(*func, args),
            Expr::Field { base, name } => match (self.eval(base), name) {
                (u @ Val::Unknown(_), _) => u,
                (Val::Test(passed), Field::Passed) => Val::Bool(passed),
                (Val::Run { exit, .. }, Field::Exit) => Val::Int(exit),
                (Val::Run { stdout, .. }, Field::Stdout) => Val::Str(stdout),
                _ => type_error("no such field"),
            },
            Expr::Method { base, name, arg } => match self.eval(base) {
                u @ Val::Unknown(_) => u,
                Val::Str(s) => match name {
                    Method::Contains => Val::Bool(s.contains(arg.as_str())),
                    Method::Matches => match regex::Regex::new(arg) {
                        Ok(re) => Val::Bool(re.is_match(&s)),
                        Err(e) => Val::Unknown(format!("invalid regular expression: {e}")),
                    },
                },
                _ => type_error("methods apply to strings"),
            },
        }
    }

    /// `||` (`decider` true) or `&&` (`decider` false), left to right.
    fn junction(&mut self, items: &[Expr], decider: bool) -> Val {
        let mut unknown: Option<String> = None;
        for item in items {
            match self.eval(item) {
                Val::Bool(b) if b == decider => return Val::Bool(decider),
                Val::Bool(_) => {}
                Val::Unknown(why) => {
                    unknown.get_or_insert(why);
                }
                _ => return type_error("&& and || need Bool operands"),
            }
        }
        match unknown {
            Some(why) => Val::Unknown(why),
            None => Val::Bool(!decider),
        }
    }

    fn call(&mut self, func: Func, args: &[Arg]) -> Val {
        let text = |a: &Arg| match a {
            Arg::Str(s) => s.clone(),
            Arg::Regex(r) => format!("/{r}/"),
        };
        let shown: Vec<String> = args.iter().map(text).collect();
        let str_arg = |i: usize| match args.get(i) {
            Some(Arg::Str(s)) => Some(s.as_str()),
            _ => None,
        };
        let (val, process) = match func {
            Func::Exists => match str_arg(0) {
                Some(path) => match grep::exists(self.p.view(), path) {
                    Ok(b) => (Val::Bool(b), None),
                    Err(e) => (Val::Unknown(e.to_string()), None),
                },
                None => (type_error("exists takes a path"), None),
            },
            Func::Grep => {
                let pattern = match args.first() {
                    Some(Arg::Str(s)) => Pattern::literal(s),
                    Some(Arg::Regex(r)) => Pattern::regex(r),
                    None => return type_error("grep takes a pattern"),
                };
                match (pattern, str_arg(1)) {
                    (Ok(pat), Some(path)) => {
                        match grep::grep(self.p.view(), &pat, path, self.p.deadline()) {
                            Ok(n) => (Val::Int(n), None),
                            Err(e) => (Val::Unknown(e.to_string()), None),
                        }
                    }
                    (Err(e), _) => (Val::Unknown(e.to_string()), None),
                    (_, None) => (type_error("grep takes a path"), None),
                }
            }
            Func::Test => match str_arg(0) {
                Some(name) => {
                    let (r, proc_) = self.p.test(name);
                    let v = match r {
                        TestResult::Ran { passed } => Val::Test(passed),
                        TestResult::Inconclusive(why) => Val::Unknown(why),
                    };
                    (v, proc_)
                }
                None => (type_error("test takes a name"), None),
            },
            Func::Run => match str_arg(0) {
                Some(cmd) => {
                    let (r, proc_) = self.p.run(cmd);
                    let v = match r {
                        RunResult::Done { exit, stdout } => Val::Run { exit, stdout },
                        RunResult::Inconclusive(why) => Val::Unknown(why),
                    };
                    (v, proc_)
                }
                None => (type_error("run takes a command"), None),
            },
        };
        // What the transcript keeps is bounded; the value the predicate sees is not cut.
        let mut process = process;
        if let Some(p) = process.as_mut() {
            self.budget.keep(p);
        }
        let (result, reason) = match &val {
            Val::Int(i) => (json!(i), None),
            Val::Bool(b) => (json!(b), None),
            Val::Test(passed) => (json!({ "passed": passed }), None),
            Val::Run { exit, stdout } => {
                let mut kept = stdout.clone();
                self.budget.clip(&mut kept);
                (json!({ "exit": exit, "stdout": kept }), None)
            }
            Val::Str(s) => (json!(s), None),
            Val::Unknown(why) => (json!(null), Some(why.clone())),
        };
        self.calls.push(Call {
            call: func.as_str(),
            args: shown,
            result,
            reason,
            process,
        });
        val
    }
}

fn compare(op: CmpOp, l: Val, r: Val) -> Val {
    use std::cmp::Ordering;
    let ord: Option<Ordering> = match (&l, &r) {
        (Val::Unknown(why), _) | (_, Val::Unknown(why)) => return Val::Unknown(why.clone()),
        (Val::Int(a), Val::Int(b)) => Some(a.cmp(b)),
        (Val::Bool(a), Val::Bool(b)) => Some(a.cmp(b)),
        (Val::Str(a), Val::Str(b)) => Some(a.cmp(b)),
        _ => None,
    };
    let Some(ord) = ord else {
        return type_error("comparison of different types");
    };
    let is_int = matches!(l, Val::Int(_));
    let b = match op {
        CmpOp::Eq => ord == Ordering::Equal,
        CmpOp::Ne => ord != Ordering::Equal,
        _ if !is_int => return type_error("ordering needs Int operands"),
        CmpOp::Lt => ord == Ordering::Less,
        CmpOp::Le => ord != Ordering::Greater,
        CmpOp::Gt => ord == Ordering::Greater,
        CmpOp::Ge => ord != Ordering::Less,
    };
    Val::Bool(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::predicate::parse;
    use std::collections::HashMap;

    /// Primitives over a real tree; `test` and `run` answer from tables and count calls.
    struct Fake {
        tree: Tree,
        tests: HashMap<String, TestResult>,
        runs: HashMap<String, RunResult>,
        started: Vec<String>,
    }

    impl Processes for Fake {
        fn view(&self) -> &Tree {
            &self.tree
        }
        fn test(&mut self, name: &str) -> (TestResult, Option<ProcessRecord>) {
            self.started.push(format!("test {name}"));
            let r = self
                .tests
                .get(name)
                .cloned()
                .unwrap_or(TestResult::Inconclusive(format!(
                    "no test named {name} ran"
                )));
            (r, None)
        }
        fn run(&mut self, cmd: &str) -> (RunResult, Option<ProcessRecord>) {
            self.started.push(format!("run {cmd}"));
            let r = self
                .runs
                .get(cmd)
                .cloned()
                .unwrap_or(RunResult::Inconclusive(
                    "the command could not start".into(),
                ));
            (r, None)
        }
    }

    fn fake() -> (crate::scratch::ScratchDir, Fake) {
        let s = crate::scratch::ScratchDir::new("elench-eval");
        let r = s.path().join("t");
        std::fs::create_dir_all(r.join("src")).unwrap();
        std::fs::create_dir_all(r.join("empty")).unwrap();
        std::fs::write(
            r.join("src/lib.rs"),
            "fn parse() {}\n// unsafe\nunsafe {}\n",
        )
        .unwrap();
        std::fs::write(s.path().join("secret"), "unsafe\n").unwrap();
        std::os::unix::fs::symlink("../secret", r.join("out")).unwrap();
        let mut tests = HashMap::new();
        tests.insert("ok".to_owned(), TestResult::Ran { passed: true });
        tests.insert("bad".to_owned(), TestResult::Ran { passed: false });
        let mut runs = HashMap::new();
        runs.insert(
            "echo hi".to_owned(),
            RunResult::Done {
                exit: 0,
                stdout: "hi there\n".into(),
            },
        );
        runs.insert(
            "false".to_owned(),
            RunResult::Done {
                exit: 1,
                stdout: String::new(),
            },
        );
        let f = Fake {
            tree: Tree::new(&r),
            tests,
            runs,
            started: Vec::new(),
        };
        (s, f)
    }

    fn eval(src: &str) -> (Truth, Vec<String>) {
        let (_s, mut f) = fake();
        let expr = parse(src).unwrap_or_else(|e| panic!("{src}: {e}"));
        let (t, _) = evaluate(&expr, &mut f, &mut Budget::default());
        (t, f.started)
    }

    fn truth(src: &str) -> Truth {
        eval(src).0
    }

    fn unknown(src: &str) -> bool {
        matches!(truth(src), Truth::Inconclusive(_))
    }

    #[test]
    fn primitives() {
        assert_eq!(truth(r#"exists("src/lib.rs")"#), Truth::True);
        assert_eq!(truth(r#"exists("src/nope.rs")"#), Truth::False);
        assert_eq!(truth(r#"grep("unsafe", "src/lib.rs") == 2"#), Truth::True);
        assert_eq!(truth(r#"grep(/^unsafe/, "src") == 1"#), Truth::True);
        assert_eq!(truth(r#"grep("nothing", "src") == 0"#), Truth::True);
        assert_eq!(truth(r#"grep("x", "empty") == 0"#), Truth::True);
        assert_eq!(truth(r#"test("ok").passed"#), Truth::True);
        assert_eq!(truth(r#"test("bad").passed"#), Truth::False);
        assert_eq!(truth(r#"run("echo hi").exit == 0"#), Truth::True);
        assert_eq!(truth(r#"run("false").exit == 0"#), Truth::False);
        assert_eq!(
            truth(r#"run("echo hi").stdout.contains("there")"#),
            Truth::True
        );
        assert_eq!(
            truth(r#"run("echo hi").stdout.matches("^hi\\s")"#),
            Truth::True
        );
        assert_eq!(
            truth(r#"run("echo hi").stdout.matches("^there")"#),
            Truth::False
        );
        assert_eq!(truth(r#"run("false").stdout == """#), Truth::True);
    }

    #[test]
    fn comparisons_and_negation() {
        for (src, want) in [
            ("1 < 2", true),
            ("2 <= 2", true),
            ("3 > 4", false),
            ("4 >= 5", false),
            ("1 == 1", true),
            ("1 != 1", false),
            (r#""a" == "a""#, true),
            (r#""a" != "b""#, true),
            ("true == false", false),
            ("!true", false),
            ("!!true", true),
        ] {
            let want = if want { Truth::True } else { Truth::False };
            assert_eq!(truth(src), want, "{src}");
        }
    }

    #[test]
    fn paths_that_leave_the_tree_are_inconclusive_never_read() {
        assert!(unknown(r#"exists("../secret")"#));
        assert!(unknown(r#"exists("/etc/passwd")"#));
        assert!(unknown(r#"grep("unsafe", "out") == 1"#));
        assert!(unknown(r#"grep("unsafe", "../secret") > 0"#));
        assert!(unknown(r#"!exists("out")"#));
        // A mistyped path is not "no matches".
        assert!(unknown(r#"grep("unsafe", "scr") == 0"#));
    }

    #[test]
    fn three_valued_junctions_short_circuit_left_to_right() {
        // false decides &&, true decides ||, even after an inconclusive operand.
        assert_eq!(truth(r#"test("missing").passed && false"#), Truth::False);
        assert_eq!(truth(r#"test("missing").passed || true"#), Truth::True);
        assert!(unknown(r#"test("missing").passed && true"#));
        assert!(unknown(r#"test("missing").passed || false"#));
        assert!(unknown(r#"!test("missing").passed"#));
        assert!(unknown(r#"run("nope").exit == 0"#));
        // The right side is skipped only when the left decides.
        let (t, started) = eval(r#"false && run("echo hi").exit == 0"#);
        assert_eq!(t, Truth::False);
        assert!(started.is_empty());
        let (t, started) = eval(r#"true || test("ok").passed"#);
        assert_eq!(t, Truth::True);
        assert!(started.is_empty());
        let (t, started) = eval(r#"test("missing").passed && test("ok").passed"#);
        assert!(matches!(t, Truth::Inconclusive(_)));
        assert_eq!(started, vec!["test missing", "test ok"]);
    }

    #[test]
    fn every_call_is_in_the_transcript() {
        let (_s, mut f) = fake();
        let expr =
            parse(r#"exists("src") && grep("x", "nope") == 0 || run("false").exit == 1"#).unwrap();
        let (t, calls) = evaluate(&expr, &mut f, &mut Budget::default());
        assert_eq!(t, Truth::True);
        let names: Vec<&str> = calls.iter().map(|c| c.call).collect();
        assert_eq!(names, vec!["exists", "grep", "run"]);
        assert!(calls[1].reason.is_some());
        assert_eq!(calls[2].result["exit"], 1);
    }

    #[test]
    fn the_budget_keeps_what_fits_counted_as_stored() {
        let mut b = Budget {
            left: 10,
            cut: false,
        };
        let mut s = "abcd".to_owned();
        b.clip(&mut s);
        assert_eq!((s.as_str(), b.left, b.cut), ("abcd", 6, false));
        // A control character costs six (\u0000), a quote two.
        let mut s = "\0\"x".to_owned();
        b.clip(&mut s);
        assert_eq!((s.as_str(), b.left, b.cut), ("\0", 0, true));
        let mut s = "more".to_owned();
        b.clip(&mut s);
        assert_eq!(s, "");
        // Never inside a character.
        let mut b = Budget {
            left: 3,
            cut: false,
        };
        let mut s = "aé€".to_owned();
        b.clip(&mut s);
        assert_eq!(s, "aé");
    }
}
