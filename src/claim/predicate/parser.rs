//! Recursive descent over the grammar, one function per rule, type-checking as it goes.
//! Only `(` recurses (`!` and the `&&`/`||` chains are loops), and the depth counter stops
//! it at [`MAX_DEPTH`], so native stack use is bounded whatever the input.

use super::lexer::{Lexer, Tok};
use super::{
    Arg, CmpOp, Expr, Field, Func, Method, ParseError, MAX_DEPTH, MAX_REGEXES, MAX_REGEX_BYTES,
};

pub(super) fn parse(source: &str) -> Parsed<Expr> {
    let mut lexer = Lexer::new(source);
    let (tok, at) = lexer.next_token()?;
    let mut p = Parser {
        lexer,
        tok,
        at,
        depth: 0,
        regexes: 0,
    };
    if p.tok == Tok::Eof {
        return p.fail(p.at, "empty predicate");
    }
    let expr = p.expr()?;
    if p.tok != Tok::Eof {
        let msg = format!("unexpected {} after end of expression", p.tok.describe());
        return p.fail(p.at, msg);
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
        Method::from_name(name).filter(|_| self == Ty::Str)
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

/// A `||` or `&&` chain being built, and where it starts.
#[derive(Default)]
struct Chain {
    items: Vec<Expr>,
    start: Option<usize>,
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
    /// The current token and its offset.
    tok: Tok,
    at: usize,
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
        (self.tok, self.at) = self.lexer.next_token()?;
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

    /// The operand of `op` (`!`, `&&`, `||`) must be Bool.
    fn expect_bool(&self, operand: &Typed, op: &str) -> Parsed<()> {
        match operand.ty {
            Ty::Bool => Ok(()),
            ty => {
                let msg = format!("operand of '{op}' must be Bool, found {ty:?}");
                self.fail(operand.start, msg)
            }
        }
    }

    /// `or := and ("||" and)*` over `and := not ("&&" not)*`, both chains flattened.
    ///
    /// Each nested `(` costs one call of `expr`, `not`, `cmp`, `term` and `paren`; they keep
    /// little in their frames (unoptimised builds give every temporary its own slot), and
    /// the rest of the work happens in helpers such as `join`, off the recursion path.
    fn expr(&mut self) -> Parsed<Typed> {
        let (mut ors, mut ands) = (Chain::default(), Chain::default());
        loop {
            let item = self.not()?;
            let Some(and) = self.join(&mut ands, item, "&&")? else {
                continue;
            };
            if let Some(or) = self.join(&mut ors, and, "||")? {
                return Ok(or);
            }
        }
    }

    /// Adds `item` to the chain of `op` if one is open or `op` follows. Returns `None` once
    /// it has consumed `op` (another operand follows), else the item or the whole chain.
    fn join(&mut self, chain: &mut Chain, item: Typed, op: &'static str) -> Parsed<Option<Typed>> {
        if chain.items.is_empty() && self.tok != Tok::Punct(op) {
            return Ok(Some(item));
        }
        let start = *chain.start.get_or_insert(item.start);
        self.expect_bool(&item, op)?;
        chain.items.push(item.expr);
        if self.tok == Tok::Punct(op) {
            return self.advance().map(|()| None);
        }
        let (items, _) = (std::mem::take(&mut chain.items), chain.start.take());
        let expr = if op == "||" {
            Expr::Or(items)
        } else {
            Expr::And(items)
        };
        Ok(Some(typed(expr, Ty::Bool, start)))
    }

    /// `not := "!" not | cmp`, the `!`s as a loop.
    fn not(&mut self) -> Parsed<Typed> {
        let mut bangs = Vec::new();
        while self.tok == Tok::Punct("!") {
            self.enter(self.at)?;
            bangs.push(self.at);
            self.advance()?;
        }
        self.cmp().and_then(|value| self.negate(value, bangs))
    }

    /// Applies the `!`s at `bangs` (outermost first) to `value`.
    fn negate(&mut self, mut value: Typed, bangs: Vec<usize>) -> Parsed<Typed> {
        for start in bangs.into_iter().rev() {
            self.depth -= 1;
            self.expect_bool(&value, "!")?;
            value = typed(Expr::Not(Box::new(value.expr)), Ty::Bool, start);
        }
        Ok(value)
    }

    /// `cmp := term (CMP term)?`
    fn cmp(&mut self) -> Parsed<Typed> {
        let lhs = self.term()?;
        let Tok::Cmp(op) = self.tok else {
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
            let msg = format!("operator '{sym}' cannot compare {l:?} values");
            return self.fail(lhs.start, msg);
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
        if let Tok::Cmp(_) = self.tok {
            let msg = "comparison operators cannot be chained (use parentheses and '&&')";
            return self.fail(self.at, msg);
        }
        let (start, lhs, rhs) = (lhs.start, Box::new(lhs.expr), Box::new(rhs.expr));
        Ok(typed(Expr::Cmp { op, lhs, rhs }, Ty::Bool, start))
    }

    /// `term := atom ("." IDENT | "." IDENT "(" STRING ")")*`.
    fn term(&mut self) -> Parsed<Typed> {
        let atom = if self.tok == Tok::Punct("(") {
            self.paren()
        } else {
            self.atom()
        };
        atom.and_then(|atom| self.members(atom))
    }

    /// The atom `"(" expr ")"`: the one place the parser recurses, under the depth guard.
    fn paren(&mut self) -> Parsed<Typed> {
        let open = self.at;
        self.enter(open).and_then(|()| self.advance())?;
        self.expr().and_then(|inner| self.close(open, inner))
    }

    /// Consumes the `)` matching the `(` at `open` around `inner`.
    fn close(&mut self, open: usize, inner: Typed) -> Parsed<Typed> {
        match &self.tok {
            Tok::Punct(")") => self.depth -= 1,
            Tok::Eof => return self.fail(open, "unclosed '('"),
            other => {
                let msg = format!("expected ')', found {}", other.describe());
                return self.fail(self.at, msg);
            }
        }
        self.advance()?;
        Ok(typed(inner.expr, inner.ty, open))
    }

    /// The `.field` and `.method("arg")` suffix of a term.
    fn members(&mut self, mut value: Typed) -> Parsed<Typed> {
        while self.tok == Tok::Punct(".") {
            self.advance()?;
            let Tok::Ident(name) = &self.tok else {
                let found = self.tok.describe();
                let msg = format!("expected field or method name after '.', found {found}");
                return self.fail(self.at, msg);
            };
            let (name, ty) = (name.clone(), value.ty);
            let member = match (ty.field(&name), ty.method(&name)) {
                (Some(field), _) => Ok(field),
                (None, Some(method)) => Err(method),
                (None, None) => {
                    let members = ty.members();
                    let msg =
                        format!("unknown field '{name}' on a value of type {ty:?} ({members})");
                    return self.fail(self.at, msg);
                }
            };
            self.advance()?;
            let (start, at, base) = (value.start, self.at, Box::new(value.expr));
            value = match member {
                Ok(_) if self.tok == Tok::Punct("(") => {
                    return self.fail(at, format!("'{name}' is a field, not a method"));
                }
                Ok((name, ty)) => typed(Expr::Field { base, name }, ty, start),
                Err(name) => {
                    let label = format!("method '{}'", name.as_str());
                    // `call` checked arity 1 and refused regexes: always one string.
                    let mut args = self.call(&label, name.as_str(), 1, false)?;
                    let Some(Arg::Str(arg)) = args.pop() else {
                        return self.fail(at, "invalid method argument");
                    };
                    typed(Expr::Method { base, name, arg }, Ty::Bool, start)
                }
            };
        }
        Ok(value)
    }

    /// `atom` other than `"(" expr ")"`: a literal or `call := FUNC "(" args ")"`.
    fn atom(&mut self) -> Parsed<Typed> {
        let start = self.at;
        let (expr, ty) = match &self.tok {
            Tok::Int(v) => (Expr::Int(*v), Ty::Int),
            Tok::Str(s) => (Expr::Str(s.clone()), Ty::Str),
            Tok::Ident(name) if name == "true" => (Expr::Bool(true), Ty::Bool),
            Tok::Ident(name) if name == "false" => (Expr::Bool(false), Ty::Bool),
            Tok::Ident(name) => {
                let Some(func) = Func::from_name(name) else {
                    let expected = "expected grep, test, run, exists, true or false";
                    return self.fail(start, format!("unknown identifier '{name}' ({expected})"));
                };
                let (label, name) = (format!("'{name}'"), func.as_str());
                self.advance()?;
                let args = self.call(&label, name, func.arity(), func == Func::Grep)?;
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

    /// `"(" args ")"` after the function or method `label`: `arity` string literals, the
    /// first a `/regex/` if `regex`. The argument of `matches` is a regex too.
    fn call(&mut self, label: &str, name: &str, arity: usize, regex: bool) -> Parsed<Vec<Arg>> {
        if self.tok != Tok::Punct("(") {
            let msg = format!("expected '(' after {label}, found {}", self.tok.describe());
            return self.fail(self.at, msg);
        }
        let open = self.at;
        self.advance()?;
        let plural = if arity == 1 { "" } else { "s" };
        let unclosed = format!("unclosed '(' of '{name}'");
        let mut args = Vec::new();
        while self.tok != Tok::Punct(")") || !args.is_empty() {
            let (at, n) = (self.at, args.len() + 1);
            let arg = match &self.tok {
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
            match &self.tok {
                Tok::Punct(",") => self.advance()?,
                Tok::Punct(")") => break,
                Tok::Eof => return self.fail(open, unclosed),
                other => {
                    let found = other.describe();
                    let msg = format!("expected ',' or ')' after argument, found {found}");
                    return self.fail(self.at, msg);
                }
            }
        }
        if args.len() < arity {
            let found = args.len();
            let msg = format!("'{name}' takes {arity} argument{plural}, found {found}");
            return self.fail(self.at, msg);
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
