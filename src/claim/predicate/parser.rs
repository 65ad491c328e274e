//! Recursive descent over the grammar, one function per rule, type-checking as it goes.
//! Only `(` recurses (`!` and the `&&`/`||` chains are loops), and the depth counter stops
//! it at [`MAX_DEPTH`], so native stack use is bounded whatever the input.

use super::lexer::{Lexer, Tok, Token};
use super::{
    Arg, CmpOp, Expr, Field, Func, Method, ParseError, MAX_DEPTH, MAX_REGEXES, MAX_REGEX_BYTES,
};

pub(super) fn parse(source: &str) -> Parsed<Expr> {
    let mut lexer = Lexer::new(source);
    let tok = lexer.next_token()?;
    let (depth, regexes) = (0, 0);
    let mut p = Parser {
        lexer,
        tok,
        depth,
        regexes,
    };
    if p.tok.kind == Tok::Eof {
        return p.fail(p.tok.start, "empty predicate");
    }
    let expr = p.expr()?;
    if p.tok.kind != Tok::Eof {
        let found = p.tok.kind.describe();
        return p.fail(
            p.tok.start,
            format!("unexpected {found} after end of expression"),
        );
    }
    if expr.ty != Ty::Bool {
        let msg = format!("predicate must be Bool, found {:?}", expr.ty);
        return p.fail(expr.start, msg);
    }
    Ok(expr.expr)
}

/// Static types; `Debug` spells them as error messages do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    Int,
    Bool,
    Str,
    TestResult,
    RunResult,
}

impl Ty {
    fn field(self, name: &str) -> Option<(Field, Ty)> {
        match (self, name) {
            (Ty::TestResult, "passed") => Some((Field::Passed, Ty::Bool)),
            (Ty::RunResult, "exit") => Some((Field::Exit, Ty::Int)),
            (Ty::RunResult, "stdout") => Some((Field::Stdout, Ty::Str)),
            _ => None,
        }
    }

    fn method(self, name: &str) -> Option<Method> {
        let methods = [Method::Contains, Method::Matches];
        methods
            .into_iter()
            .find(|m| self == Ty::Str && m.as_str() == name)
    }

    fn members(self) -> &'static str {
        match self {
            Ty::TestResult => "fields: passed",
            Ty::RunResult => "fields: exit, stdout",
            Ty::Str => "methods: contains, matches",
            Ty::Int | Ty::Bool => "it has no fields or methods",
        }
    }
}

/// The `||` and `&&` chains `expr` is building, and where each starts.
#[derive(Default)]
struct Chains {
    ors: Vec<Expr>,
    ands: Vec<Expr>,
    or_start: usize,
    and_start: usize,
}

/// An expression together with its static type and start offset.
struct Typed {
    expr: Expr,
    ty: Ty,
    start: usize,
}

fn is_ordering(op: CmpOp) -> bool {
    !matches!(op, CmpOp::Eq | CmpOp::Ne)
}

fn typed(expr: Expr, ty: Ty, start: usize) -> Typed {
    Typed { expr, ty, start }
}

type Parsed<T> = Result<T, ParseError>;

struct Parser<'a> {
    lexer: Lexer<'a>,
    tok: Token,
    /// Open `(` and `!` around the current token, at most [`MAX_DEPTH`].
    depth: usize,
    /// Regular expressions seen so far, at most [`MAX_REGEXES`].
    regexes: usize,
}

impl Parser<'_> {
    fn fail<T>(&self, offset: usize, message: impl Into<String>) -> Parsed<T> {
        Err(ParseError::new(self.lexer.src, offset, message))
    }

    fn advance(&mut self) -> Parsed<()> {
        self.tok = self.lexer.next_token()?;
        Ok(())
    }

    /// Counts the `(` or `!` at `at`, refusing to nest deeper than [`MAX_DEPTH`].
    fn enter(&mut self, at: usize) -> Parsed<()> {
        if self.depth >= MAX_DEPTH {
            let msg = format!("nesting too deep (limit is {MAX_DEPTH} levels of '(' and '!')");
            return self.fail(at, msg);
        }
        self.depth += 1;
        Ok(())
    }

    fn expect_bool(&self, operand: &Typed, what: &str) -> Parsed<()> {
        match operand.ty {
            Ty::Bool => Ok(()),
            ty => self.fail(operand.start, format!("{what} must be Bool, found {ty:?}")),
        }
    }

    /// `or := and ("||" and)*` over `and := not ("&&" not)*`, both chains flattened.
    ///
    /// Each nested `(` costs one call of `expr`, `not`, `cmp`, `term` and `paren`; they keep
    /// little in their frames (unoptimised builds give every temporary its own slot), and
    /// the rest of the work happens in helpers such as this `link`, off the recursion path.
    fn expr(&mut self) -> Parsed<Typed> {
        let mut chains = Chains::default();
        loop {
            let item = self.not()?;
            if let Some(done) = self.link(&mut chains, item)? {
                return Ok(done);
            }
        }
    }

    /// Adds an operand to the pending `&&` and `||` chains; returns the finished
    /// expression, or `None` after consuming the operator that asks for another operand.
    fn link(&mut self, chains: &mut Chains, item: Typed) -> Parsed<Option<Typed>> {
        let Chains {
            ors,
            ands,
            or_start,
            and_start,
        } = chains;
        let item = if ands.is_empty() && self.tok.kind != Tok::Punct("&&") {
            item
        } else {
            *and_start = if ands.is_empty() {
                item.start
            } else {
                *and_start
            };
            self.expect_bool(&item, "operand of '&&'")?;
            ands.push(item.expr);
            if self.tok.kind == Tok::Punct("&&") {
                return self.advance().map(|()| None);
            }
            typed(Expr::And(std::mem::take(ands)), Ty::Bool, *and_start)
        };
        if ors.is_empty() && self.tok.kind != Tok::Punct("||") {
            return Ok(Some(item));
        }
        *or_start = if ors.is_empty() {
            item.start
        } else {
            *or_start
        };
        self.expect_bool(&item, "operand of '||'")?;
        ors.push(item.expr);
        if self.tok.kind != Tok::Punct("||") {
            let ors = std::mem::take(ors);
            return Ok(Some(typed(Expr::Or(ors), Ty::Bool, *or_start)));
        }
        self.advance().map(|()| None)
    }

    /// `not := "!" not | cmp`, the `!`s as a loop.
    fn not(&mut self) -> Parsed<Typed> {
        let mut bangs = Vec::new();
        while self.tok.kind == Tok::Punct("!") {
            self.enter(self.tok.start)?;
            bangs.push(self.tok.start);
            self.advance()?;
        }
        self.cmp().and_then(|value| self.negate(value, bangs))
    }

    /// Applies the `!`s at `bangs` (outermost first) to `value`.
    fn negate(&mut self, mut value: Typed, bangs: Vec<usize>) -> Parsed<Typed> {
        for start in bangs.into_iter().rev() {
            self.depth -= 1;
            self.expect_bool(&value, "operand of '!'")?;
            value = typed(Expr::Not(Box::new(value.expr)), Ty::Bool, start);
        }
        Ok(value)
    }

    /// `cmp := term (CMP term)?`
    fn cmp(&mut self) -> Parsed<Typed> {
        let lhs = self.term()?;
        let Tok::Cmp(op) = self.tok.kind else {
            return Ok(lhs);
        };
        self.operator(&lhs, op)?;
        self.term().and_then(|rhs| self.compared(lhs, op, rhs))
    }

    /// Type rules of `lhs op …` (two scalars of one type, Int for `<`, `>`, `<=`, `>=`),
    /// then consumes `op`.
    fn operator(&mut self, lhs: &Typed, op: CmpOp) -> Parsed<()> {
        let (sym, l) = (op.as_str(), lhs.ty);
        if is_ordering(op) && l != Ty::Int {
            let msg = format!("operator '{sym}' requires Int operands, found {l:?}");
            return self.fail(lhs.start, msg);
        } else if !matches!(l, Ty::Int | Ty::Bool | Ty::Str) {
            return self.fail(
                lhs.start,
                format!("operator '{sym}' cannot compare {l:?} values"),
            );
        }
        self.advance()
    }

    /// Type rules of `lhs op rhs`, which must not go on into another comparison.
    fn compared(&mut self, lhs: Typed, op: CmpOp, rhs: Typed) -> Parsed<Typed> {
        let (sym, l, r) = (op.as_str(), lhs.ty, rhs.ty);
        if r != l {
            let msg = match is_ordering(op) {
                true => format!("requires Int operands, found {r:?}"),
                false => format!("requires operands of the same type, found {l:?} and {r:?}"),
            };
            return self.fail(rhs.start, format!("operator '{sym}' {msg}"));
        }
        if let Tok::Cmp(_) = self.tok.kind {
            let msg = "comparison operators cannot be chained (use parentheses and '&&')";
            return self.fail(self.tok.start, msg);
        }
        let (start, lhs, rhs) = (lhs.start, Box::new(lhs.expr), Box::new(rhs.expr));
        Ok(typed(Expr::Cmp { op, lhs, rhs }, Ty::Bool, start))
    }

    /// `term := atom ("." IDENT | "." IDENT "(" STRING ")")*`.
    fn term(&mut self) -> Parsed<Typed> {
        let atom = if self.tok.kind == Tok::Punct("(") {
            self.paren()
        } else {
            self.atom()
        };
        atom.and_then(|atom| self.members(atom))
    }

    /// The atom `"(" expr ")"`: the one place the parser recurses, under the depth guard.
    fn paren(&mut self) -> Parsed<Typed> {
        let open = self.tok.start;
        self.enter(open).and_then(|()| self.advance())?;
        self.expr().and_then(|inner| self.close(open, inner))
    }

    /// Consumes the `)` matching the `(` at `open` around `inner`.
    fn close(&mut self, open: usize, inner: Typed) -> Parsed<Typed> {
        match &self.tok.kind {
            Tok::Punct(")") => self.depth -= 1,
            Tok::Eof => return self.fail(open, "unclosed '('"),
            other => {
                let msg = format!("expected ')', found {}", other.describe());
                return self.fail(self.tok.start, msg);
            }
        }
        self.advance()?;
        Ok(typed(inner.expr, inner.ty, open))
    }

    /// The `.field` and `.method("arg")` suffix of a term.
    fn members(&mut self, mut base: Typed) -> Parsed<Typed> {
        while self.tok.kind == Tok::Punct(".") {
            self.advance()?;
            let Tok::Ident(name) = &self.tok.kind else {
                let found = self.tok.kind.describe();
                let msg = format!("expected field or method name after '.', found {found}");
                return self.fail(self.tok.start, msg);
            };
            let (name, ty) = (name.clone(), base.ty);
            let (field, method) = (ty.field(&name), ty.method(&name));
            if field.is_none() && method.is_none() {
                let members = ty.members();
                let msg = format!("unknown field '{name}' on a value of type {ty:?} ({members})");
                return self.fail(self.tok.start, msg);
            }
            self.advance()?;
            let (is_call, start, at) =
                (self.tok.kind == Tok::Punct("("), base.start, self.tok.start);
            let base_expr = Box::new(base.expr);
            base = match (field, method) {
                (Some((name, ty)), _) if !is_call => {
                    let base = base_expr;
                    typed(Expr::Field { base, name }, ty, start)
                }
                (Some(_), _) => return self.fail(at, format!("'{name}' is a field, not a method")),
                (None, Some(name)) if is_call => {
                    self.advance()?;
                    // `args` checked arity 1 and refused regexes: always one string.
                    let Some(Arg::Str(arg)) = self.args(name.as_str(), 1, false, at)?.pop() else {
                        return self.fail(at, "invalid method argument");
                    };
                    let base = base_expr;
                    typed(Expr::Method { base, name, arg }, Ty::Bool, start)
                }
                _ => {
                    let found = self.tok.kind.describe();
                    let msg = format!("expected '(' after method '{name}', found {found}");
                    return self.fail(at, msg);
                }
            };
        }
        Ok(base)
    }

    /// `atom` other than `"(" expr ")"`: a literal or `call := FUNC "(" args ")"`.
    fn atom(&mut self) -> Parsed<Typed> {
        let start = self.tok.start;
        let (expr, ty) = match &self.tok.kind {
            Tok::Int(v) => (Expr::Int(*v), Ty::Int),
            Tok::Str(s) => (Expr::Str(s.clone()), Ty::Str),
            Tok::Ident(name) if name == "true" => (Expr::Bool(true), Ty::Bool),
            Tok::Ident(name) if name == "false" => (Expr::Bool(false), Ty::Bool),
            Tok::Ident(name) => {
                let Some(func) = Func::from_name(name) else {
                    let expected = "expected grep, test, run, exists, true or false";
                    return self.fail(start, format!("unknown identifier '{name}' ({expected})"));
                };
                self.advance()?;
                if self.tok.kind != Tok::Punct("(") {
                    let (name, found) = (func.as_str(), self.tok.kind.describe());
                    let msg = format!("expected '(' after '{name}', found {found}");
                    return self.fail(self.tok.start, msg);
                }
                let open = self.tok.start;
                self.advance()?;
                let args = self.args(func.as_str(), func.arity(), func == Func::Grep, open)?;
                let ty = match func {
                    Func::Grep => Ty::Int,
                    Func::Test => Ty::TestResult,
                    Func::Run => Ty::RunResult,
                    Func::Exists => Ty::Bool,
                };
                return Ok(typed(Expr::Call { func, args }, ty, start));
            }
            Tok::Regex(_) => {
                let msg = "a /regex/ literal is only allowed as the first argument of grep";
                return self.fail(start, msg);
            }
            Tok::Punct("!") => {
                let why = "the operand of a comparison must be parenthesized to use '!'";
                return self.fail(start, format!("expected a term, found '!' ({why})"));
            }
            other => {
                let msg = format!("expected expression, found {}", other.describe());
                return self.fail(start, msg);
            }
        };
        self.advance()?;
        Ok(typed(expr, ty, start))
    }

    /// `args ")"` of `name`, its `(` at `open` already consumed: `arity` string literals,
    /// the first a `/regex/` if `regex`. The argument of `matches` is a regex too.
    fn args(&mut self, name: &str, arity: usize, regex: bool, open: usize) -> Parsed<Vec<Arg>> {
        let plural = if arity == 1 { "" } else { "s" };
        let unclosed = format!("unclosed '(' of '{name}'");
        let mut args = Vec::new();
        while self.tok.kind != Tok::Punct(")") || !args.is_empty() {
            let (at, n) = (self.tok.start, args.len() + 1);
            let arg = match &self.tok.kind {
                Tok::Eof => return self.fail(open, unclosed),
                Tok::Punct(")") => return self.fail(at, "expected argument after ','"),
                _ if args.len() >= arity => {
                    let msg =
                        format!("too many arguments: '{name}' takes {arity} argument{plural}");
                    return self.fail(at, msg);
                }
                Tok::Str(s) => Arg::Str(s.clone()),
                Tok::Regex(r) if regex && args.is_empty() => Arg::Regex(r.clone()),
                other => {
                    let found = match other {
                        Tok::Regex(_) => " (a /regex/ literal is only allowed as the first \
                                           argument of grep)"
                            .to_string(),
                        other => format!(", found {}", other.describe()),
                    };
                    let msg = format!("argument {n} of '{name}' must be a string literal{found}");
                    return self.fail(at, msg);
                }
            };
            if let (Arg::Str(pattern), "matches") | (Arg::Regex(pattern), _) = (&arg, name) {
                self.regex(at, pattern)?;
            }
            args.push(arg);
            self.advance()?;
            match &self.tok.kind {
                Tok::Punct(",") => self.advance()?,
                Tok::Punct(")") => break,
                Tok::Eof => return self.fail(open, unclosed),
                other => {
                    let found = other.describe();
                    let msg = format!("expected ',' or ')' after argument, found {found}");
                    return self.fail(self.tok.start, msg);
                }
            }
        }
        if args.len() < arity {
            let found = args.len();
            let msg = format!("'{name}' takes {arity} argument{plural}, found {found}");
            return self.fail(self.tok.start, msg);
        }
        self.advance()?;
        Ok(args)
    }

    /// Counts one more regular expression, at `at`, and checks it: at most [`MAX_REGEXES`]
    /// per predicate, at most [`MAX_REGEX_BYTES`] long, valid Rust `regex` syntax as
    /// `regex::bytes` takes it. A regex that can never run is refused at ingest; only its
    /// syntax is checked (linear in the pattern), because compiling can take far longer.
    fn regex(&mut self, at: usize, pattern: &str) -> Parsed<()> {
        self.regexes += 1;
        if self.regexes > MAX_REGEXES {
            let msg = format!(
                "too many regular expressions: a predicate may hold at most {MAX_REGEXES} \
                 (grep /…/ and .matches together); split it into several claims"
            );
            return self.fail(at, msg);
        }
        if pattern.len() > MAX_REGEX_BYTES {
            let (len, max) = (pattern.len(), MAX_REGEX_BYTES);
            let msg = format!("regular expression is {len} bytes; the limit is {max} bytes");
            return self.fail(at, msg);
        }
        // `utf8(false)`: the evaluator matches bytes, where `(?-u:\xFF)` is allowed.
        let mut syntax = regex_syntax::ParserBuilder::new().utf8(false).build();
        let Err(e) = syntax.parse(pattern) else {
            return Ok(());
        };
        let detail = e.to_string();
        let mut lines = detail.lines().rev().map(str::trim);
        let last = lines.find(|l| !l.is_empty()).unwrap_or("invalid");
        let last = last.trim_start_matches("error: ");
        let msg = format!("invalid regular expression {pattern:?}: {last}");
        self.fail(at, msg)
    }
}
