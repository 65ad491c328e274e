//! The syntax tree of a parsed, type-checked predicate.

/// A parsed, type-checked predicate.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// `a || b || …` — always at least two operands, all Bool.
    Or(Vec<Expr>),
    /// `a && b && …` — always at least two operands, all Bool.
    And(Vec<Expr>),
    /// `!a` — operand is Bool.
    Not(Box<Expr>),
    /// A single (non-chained) comparison.
    Cmp {
        op: CmpOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// Non-negative integer literal.
    Int(i64),
    /// String literal, escapes already decoded.
    Str(String),
    /// `true` / `false`.
    Bool(bool),
    /// A primitive call; `args.len()` equals `func.arity()`.
    Call { func: Func, args: Vec<Arg> },
    /// Field access on a `test(..)` or `run(..)` result.
    Field { base: Box<Expr>, name: Field },
    /// Method call on a string-valued expression.
    Method {
        base: Box<Expr>,
        name: Method,
        arg: String,
    },
}

/// Argument of a primitive call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    /// A string literal, escapes decoded.
    Str(String),
    /// A `/regex/` literal (only as the first argument of `grep`); `\/` has
    /// been replaced by `/`, all other backslashes are kept.
    Regex(String),
}

/// Declares keyword enums, each with `as_str` (its spelling in source) and `from_name`.
macro_rules! keywords {
    ($($(#[$doc:meta])* $name:ident { $($variant:ident = $text:literal,)* })*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($variant,)* }

        impl $name {
            /// The keyword or operator as written in source.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text,)* }
            }

            #[allow(dead_code)] // not every keyword is looked up by name
            pub(super) fn from_name(name: &str) -> Option<$name> {
                match name { $($text => Some($name::$variant),)* _ => None }
            }
        }
    )*};
}

keywords! {
    /// Comparison operator.
    CmpOp { Eq = "==", Ne = "!=", Ge = ">=", Le = "<=", Gt = ">", Lt = "<", }

    /// Primitive function: `grep(pattern, path) -> Int`, `test(name) -> TestResult`,
    /// `run(cmd) -> RunResult`, `exists(path) -> Bool`.
    Func { Grep = "grep", Test = "test", Run = "run", Exists = "exists", }

    /// Field of a structured result: `test(..).passed: Bool`, `run(..).exit: Int`,
    /// `run(..).stdout: Str`.
    Field { Passed = "passed", Exit = "exit", Stdout = "stdout", }

    /// Method on a string value: `s.contains("needle")` and `s.matches("regex")`, both Bool.
    Method { Contains = "contains", Matches = "matches", }
}

impl Func {
    /// Number of arguments the function takes.
    pub fn arity(self) -> usize {
        match self {
            Func::Grep => 2,
            Func::Test | Func::Run | Func::Exists => 1,
        }
    }
}
