//! The explicit-stack parser that `elench-predicate-v1` used before the recursive-descent
//! one, kept verbatim (apart from sharing the public syntax tree) as the reference the
//! equivalence property test compares the new parser against.

use elench::claim::predicate::{
    Arg, CmpOp, Expr, Field, Func, Method, ParseError, MAX_DEPTH, MAX_REGEXES, MAX_REGEX_BYTES,
};
use std::fmt;

// Private helpers of the old module, which lived on the (shared) public types.
fn new_error(source: &str, offset: usize, message: impl Into<String>) -> ParseError {
    let before = source.get(..offset).unwrap_or(source);
    let offset = before.len();
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
    ParseError {
        message: message.into(),
        offset,
        line,
        column,
    }
}

fn is_ordering(op: CmpOp) -> bool {
    !matches!(op, CmpOp::Eq | CmpOp::Ne)
}

fn func_from_name(name: &str) -> Option<Func> {
    match name {
        "grep" => Some(Func::Grep),
        "test" => Some(Func::Test),
        "run" => Some(Func::Run),
        "exists" => Some(Func::Exists),
        _ => None,
    }
}

fn result_type(func: Func) -> Ty {
    match func {
        Func::Grep => Ty::Int,
        Func::Test => Ty::TestResult,
        Func::Run => Ty::RunResult,
        Func::Exists => Ty::Bool,
    }
}

/// Parse and type-check a predicate written in [`LANGUAGE`].
///
/// # Errors
///
/// Returns a [`ParseError`] locating the first lexical, syntactic or type
/// error in source order (a non-Bool predicate is reported at its start).
pub fn parse(source: &str) -> Result<Expr, ParseError> {
    let mut parser = Parser::new(source)?;
    if parser.tok.kind == Tok::Eof {
        return Err(parser.error(parser.tok.start, "empty predicate"));
    }
    let expr = parser.expr()?;
    if parser.tok.kind != Tok::Eof {
        let msg = format!(
            "unexpected {} after end of expression",
            parser.tok.kind.describe()
        );
        return Err(parser.error(parser.tok.start, msg));
    }
    if expr.ty != Ty::Bool {
        let msg = format!("predicate must be Bool, found {}", expr.ty);
        return Err(parser.error(expr.start, msg));
    }
    Ok(expr.expr)
}

// ---------------------------------------------------------------------------
// Static types

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    Int,
    Bool,
    Str,
    TestResult,
    RunResult,
}

impl Ty {
    fn is_scalar(self) -> bool {
        matches!(self, Ty::Int | Ty::Bool | Ty::Str)
    }

    fn field(self, name: &str) -> Option<(Field, Ty)> {
        match (self, name) {
            (Ty::TestResult, "passed") => Some((Field::Passed, Ty::Bool)),
            (Ty::RunResult, "exit") => Some((Field::Exit, Ty::Int)),
            (Ty::RunResult, "stdout") => Some((Field::Stdout, Ty::Str)),
            _ => None,
        }
    }

    fn method(self, name: &str) -> Option<Method> {
        match (self, name) {
            (Ty::Str, "contains") => Some(Method::Contains),
            (Ty::Str, "matches") => Some(Method::Matches),
            _ => None,
        }
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

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Ty::Int => "Int",
            Ty::Bool => "Bool",
            Ty::Str => "Str",
            Ty::TestResult => "TestResult",
            Ty::RunResult => "RunResult",
        })
    }
}

// ---------------------------------------------------------------------------
// Lexer

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Int(i64),
    Str(String),
    Regex(String),
    LParen,
    RParen,
    Dot,
    Comma,
    OrOr,
    AndAnd,
    Bang,
    Cmp(CmpOp),
    Eof,
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Ident(name) => format!("identifier '{name}'"),
            Tok::Int(v) => format!("integer {v}"),
            Tok::Str(_) => "string literal".to_string(),
            Tok::Regex(_) => "regex literal".to_string(),
            Tok::LParen => "'('".to_string(),
            Tok::RParen => "')'".to_string(),
            Tok::Dot => "'.'".to_string(),
            Tok::Comma => "','".to_string(),
            Tok::OrOr => "'||'".to_string(),
            Tok::AndAnd => "'&&'".to_string(),
            Tok::Bang => "'!'".to_string(),
            Tok::Cmp(op) => format!("'{}'", op.as_str()),
            Tok::Eof => "end of input".to_string(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Token {
    kind: Tok,
    start: usize,
}

struct Lexer<'a> {
    src: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn peek(&self) -> Option<char> {
        self.src.get(self.pos..)?.chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn eat(&mut self, expected: char) -> bool {
        if self.peek() == Some(expected) {
            self.pos += expected.len_utf8();
            true
        } else {
            false
        }
    }

    fn error(&self, offset: usize, message: impl Into<String>) -> ParseError {
        new_error(self.src, offset, message)
    }

    fn next_token(&mut self) -> Result<Token, ParseError> {
        while matches!(self.peek(), Some(' ' | '\t' | '\n' | '\r')) {
            self.bump();
        }
        let start = self.pos;
        let Some(c) = self.bump() else {
            return Ok(Token {
                kind: Tok::Eof,
                start,
            });
        };
        let kind = match c {
            '(' => Tok::LParen,
            ')' => Tok::RParen,
            '.' => Tok::Dot,
            ',' => Tok::Comma,
            '|' if self.eat('|') => Tok::OrOr,
            '&' if self.eat('&') => Tok::AndAnd,
            '=' if self.eat('=') => Tok::Cmp(CmpOp::Eq),
            '|' | '&' | '=' => {
                return Err(self.error(start, format!("unexpected '{c}' (did you mean '{c}{c}'?)")))
            }
            '!' if self.eat('=') => Tok::Cmp(CmpOp::Ne),
            '!' => Tok::Bang,
            '>' if self.eat('=') => Tok::Cmp(CmpOp::Ge),
            '>' => Tok::Cmp(CmpOp::Gt),
            '<' if self.eat('=') => Tok::Cmp(CmpOp::Le),
            '<' => Tok::Cmp(CmpOp::Lt),
            '"' => Tok::Str(self.string(start)?),
            '/' => Tok::Regex(self.regex(start)?),
            '0'..='9' => Tok::Int(self.int(start, c)?),
            c if c.is_ascii_alphabetic() || c == '_' => {
                let mut name = String::from(c);
                while let Some(c) = self.peek() {
                    if !(c.is_ascii_alphanumeric() || c == '_') {
                        break;
                    }
                    name.push(c);
                    self.bump();
                }
                Tok::Ident(name)
            }
            other => {
                return Err(self.error(start, format!("unexpected character {other:?}")));
            }
        };
        Ok(Token { kind, start })
    }

    fn int(&mut self, start: usize, first: char) -> Result<i64, ParseError> {
        let mut value = Some(i64::from(digit(first)));
        while let Some(c) = self.peek() {
            if !c.is_ascii_digit() {
                break;
            }
            self.bump();
            value = value
                .and_then(|v| v.checked_mul(10))
                .and_then(|v| v.checked_add(i64::from(digit(c))));
        }
        value.ok_or_else(|| {
            self.error(
                start,
                format!("integer literal out of range (maximum is {})", i64::MAX),
            )
        })
    }

    fn string(&mut self, start: usize) -> Result<String, ParseError> {
        let mut out = String::new();
        loop {
            let at = self.pos;
            match self.bump() {
                None => return Err(self.error(start, "unterminated string literal")),
                Some('"') => return Ok(out),
                Some('\\') => match self.bump() {
                    Some('"') => out.push('"'),
                    Some('\\') => out.push('\\'),
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some(other) => {
                        return Err(self.error(
                            at,
                            format!(
                                "invalid escape '\\{}' in string literal \
                                 (allowed: \\\" \\\\ \\n \\t)",
                                other.escape_debug()
                            ),
                        ))
                    }
                    None => return Err(self.error(start, "unterminated string literal")),
                },
                Some(c) if c.is_control() => {
                    return Err(self.error(
                        at,
                        format!("raw control character {c:?} in string literal (use an escape)"),
                    ))
                }
                Some(c) => out.push(c),
            }
        }
    }

    fn regex(&mut self, start: usize) -> Result<String, ParseError> {
        let mut out = String::new();
        loop {
            let at = self.pos;
            match self.bump() {
                None => return Err(self.error(start, "unterminated regex literal")),
                Some('/') if out.is_empty() => return Err(self.error(start, "empty regex literal")),
                Some('/') => return Ok(out),
                Some(c) if c.is_control() => {
                    return Err(
                        self.error(at, format!("raw control character {c:?} in regex literal"))
                    )
                }
                Some('\\') => {
                    let at = self.pos;
                    match self.bump() {
                        Some('/') => out.push('/'),
                        Some(c) if c.is_control() => {
                            return Err(self.error(
                                at,
                                format!("raw control character {c:?} in regex literal"),
                            ))
                        }
                        Some(c) => {
                            out.push('\\');
                            out.push(c);
                        }
                        None => return Err(self.error(start, "unterminated regex literal")),
                    }
                }
                Some(c) => out.push(c),
            }
        }
    }
}

fn digit(c: char) -> u8 {
    // Only called with ASCII digits; `to_digit` cannot fail there, but stay
    // total anyway.
    c.to_digit(10)
        .and_then(|d| u8::try_from(d).ok())
        .unwrap_or(0)
}

// ---------------------------------------------------------------------------
// Parser

/// Binding level of a sub-expression being parsed, named after the grammar
/// non-terminal it corresponds to; ordered from loosest to tightest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    /// `expr` / `or`
    Or,
    /// `and`
    And,
    /// `not` (which includes one optional comparison)
    Not,
    /// `term` (the right operand of a comparison)
    Term,
}

/// Which infix operators may still extend the current value, in the order
/// the grammar applies them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    Cmp,
    And,
    Or,
    Done,
}

/// A construct waiting for an operand on the parser's explicit stack.
/// `level` is the level of the sub-expression the construct belongs to;
/// parsing of that sub-expression resumes once the construct is complete.
enum Frame {
    /// `!` waiting for its operand.
    Not { level: Level, start: usize },
    /// `(` waiting for the inner expression and the closing `)`.
    Paren { level: Level, open: usize },
    /// `lhs op` waiting for the right operand.
    Cmp { level: Level, lhs: Typed, op: CmpOp },
    /// `a && …` (or `a || …` when `or`) waiting for the next operand.
    Chain {
        level: Level,
        or: bool,
        items: Vec<Expr>,
        start: usize,
    },
}

/// An expression together with its static type and start offset.
struct Typed {
    expr: Expr,
    ty: Ty,
    start: usize,
}

struct Parser<'a> {
    lexer: Lexer<'a>,
    tok: Token,
    depth: usize,
    /// Regular expressions seen so far (bounded by [`MAX_REGEXES`]); a `Cell` because it
    /// is counted while the current token is borrowed.
    regexes: std::cell::Cell<usize>,
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Result<Parser<'a>, ParseError> {
        let mut lexer = Lexer { src, pos: 0 };
        let tok = lexer.next_token()?;
        Ok(Parser {
            lexer,
            tok,
            depth: 0,
            regexes: std::cell::Cell::new(0),
        })
    }

    fn error(&self, offset: usize, message: impl Into<String>) -> ParseError {
        self.lexer.error(offset, message)
    }

    fn advance(&mut self) -> Result<(), ParseError> {
        self.tok = self.lexer.next_token()?;
        Ok(())
    }

    fn enter(&mut self, at: usize) -> Result<(), ParseError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.error(
                at,
                format!("nesting too deep (limit is {MAX_DEPTH} levels of '(' and '!')"),
            ));
        }
        self.depth += 1;
        Ok(())
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    fn expect_bool(&self, operand: &Typed, what: &str) -> Result<(), ParseError> {
        if operand.ty == Ty::Bool {
            Ok(())
        } else {
            Err(self.error(
                operand.start,
                format!("{what} must be Bool, found {}", operand.ty),
            ))
        }
    }

    /// Parses `expr`.
    ///
    /// The parser does not recurse: constructs waiting for an operand live
    /// on an explicit heap stack, so even pathological input cannot exhaust
    /// the native stack. Nesting is still capped at [`MAX_DEPTH`] so that
    /// the (recursive) AST stays shallow enough to drop, clone and compare.
    fn expr(&mut self) -> Result<Typed, ParseError> {
        let mut stack: Vec<Frame> = Vec::new();
        let mut level = Level::Or;
        'operand: loop {
            // Descend through prefix `!` and `(` to an atom and its members.
            let mut value = loop {
                let start = self.tok.start;
                match self.tok.kind {
                    Tok::Bang if level <= Level::Not => {
                        self.enter(start)?;
                        self.advance()?;
                        stack.push(Frame::Not { level, start });
                        level = Level::Not;
                    }
                    Tok::LParen => {
                        self.enter(start)?;
                        self.advance()?;
                        stack.push(Frame::Paren { level, open: start });
                        level = Level::Or;
                    }
                    _ => {
                        let atom = self.primary()?;
                        break self.members(atom)?;
                    }
                }
            };
            // Ascend: extend `value` with infix operators allowed at `level`,
            // completing pending frames, until another operand is needed.
            let mut stage = Stage::Cmp;
            loop {
                if stage <= Stage::Cmp && level <= Level::Not {
                    if let Tok::Cmp(op) = self.tok.kind {
                        self.check_cmp_lhs(&value, op)?;
                        self.advance()?;
                        stack.push(Frame::Cmp {
                            level,
                            lhs: value,
                            op,
                        });
                        level = Level::Term;
                        continue 'operand;
                    }
                }
                if stage <= Stage::And && level <= Level::And && self.tok.kind == Tok::AndAnd {
                    self.expect_bool(&value, "operand of '&&'")?;
                    self.advance()?;
                    stack.push(Frame::Chain {
                        level,
                        or: false,
                        start: value.start,
                        items: vec![value.expr],
                    });
                    level = Level::Not;
                    continue 'operand;
                }
                if stage <= Stage::Or && level <= Level::Or && self.tok.kind == Tok::OrOr {
                    self.expect_bool(&value, "operand of '||'")?;
                    self.advance()?;
                    stack.push(Frame::Chain {
                        level,
                        or: true,
                        start: value.start,
                        items: vec![value.expr],
                    });
                    level = Level::And;
                    continue 'operand;
                }
                // `value` completes the sub-expression at `level`.
                let Some(frame) = stack.pop() else {
                    return Ok(value);
                };
                match frame {
                    Frame::Not {
                        level: outer,
                        start,
                    } => {
                        self.leave();
                        self.expect_bool(&value, "operand of '!'")?;
                        value = Typed {
                            expr: Expr::Not(Box::new(value.expr)),
                            ty: Ty::Bool,
                            start,
                        };
                        level = outer;
                        // The operand already absorbed any comparison.
                        stage = Stage::And;
                    }
                    Frame::Paren { level: outer, open } => {
                        self.close_paren(open)?;
                        self.leave();
                        value = self.members(Typed {
                            start: open,
                            ..value
                        })?;
                        level = outer;
                        stage = Stage::Cmp;
                    }
                    Frame::Cmp {
                        level: outer,
                        lhs,
                        op,
                    } => {
                        value = self.finish_cmp(lhs, op, value)?;
                        level = outer;
                        stage = Stage::And;
                    }
                    Frame::Chain {
                        level: outer,
                        or,
                        mut items,
                        start,
                    } => {
                        let (op_tok, what, operand_level) = if or {
                            (Tok::OrOr, "operand of '||'", Level::And)
                        } else {
                            (Tok::AndAnd, "operand of '&&'", Level::Not)
                        };
                        self.expect_bool(&value, what)?;
                        items.push(value.expr);
                        if self.tok.kind == op_tok {
                            self.advance()?;
                            stack.push(Frame::Chain {
                                level: outer,
                                or,
                                items,
                                start,
                            });
                            level = operand_level;
                            continue 'operand;
                        }
                        let expr = if or {
                            Expr::Or(items)
                        } else {
                            Expr::And(items)
                        };
                        value = Typed {
                            expr,
                            ty: Ty::Bool,
                            start,
                        };
                        level = outer;
                        stage = if or { Stage::Done } else { Stage::Or };
                    }
                }
            }
        }
    }

    /// Type-checks the left operand of a comparison when `op` is seen.
    fn check_cmp_lhs(&self, lhs: &Typed, op: CmpOp) -> Result<(), ParseError> {
        let sym = op.as_str();
        if is_ordering(op) && lhs.ty != Ty::Int {
            return Err(self.error(
                lhs.start,
                format!("operator '{sym}' requires Int operands, found {}", lhs.ty),
            ));
        }
        if !lhs.ty.is_scalar() {
            return Err(self.error(
                lhs.start,
                format!("operator '{sym}' cannot compare {} values", lhs.ty),
            ));
        }
        Ok(())
    }

    /// Type-checks the right operand and builds the comparison.
    fn finish_cmp(&self, lhs: Typed, op: CmpOp, rhs: Typed) -> Result<Typed, ParseError> {
        let sym = op.as_str();
        if rhs.ty != lhs.ty {
            let msg = if is_ordering(op) {
                format!("operator '{sym}' requires Int operands, found {}", rhs.ty)
            } else {
                format!(
                    "operator '{sym}' requires operands of the same type, found {} and {}",
                    lhs.ty, rhs.ty
                )
            };
            return Err(self.error(rhs.start, msg));
        }
        if let Tok::Cmp(_) = self.tok.kind {
            return Err(self.error(
                self.tok.start,
                "comparison operators cannot be chained (use parentheses and '&&')",
            ));
        }
        Ok(Typed {
            expr: Expr::Cmp {
                op,
                lhs: Box::new(lhs.expr),
                rhs: Box::new(rhs.expr),
            },
            ty: Ty::Bool,
            start: lhs.start,
        })
    }

    /// Consumes the `)` matching the `(` at offset `open`.
    fn close_paren(&mut self, open: usize) -> Result<(), ParseError> {
        match &self.tok.kind {
            Tok::RParen => self.advance(),
            Tok::Eof => Err(self.error(open, "unclosed '('")),
            other => {
                let msg = format!("expected ')', found {}", other.describe());
                Err(self.error(self.tok.start, msg))
            }
        }
    }

    /// Parses the `("." IDENT | "." IDENT "(" STRING ")")*` suffix of a term.
    fn members(&mut self, mut base: Typed) -> Result<Typed, ParseError> {
        while self.tok.kind == Tok::Dot {
            self.advance()?;
            let name_at = self.tok.start;
            let Tok::Ident(name) = &self.tok.kind else {
                let msg = format!(
                    "expected field or method name after '.', found {}",
                    self.tok.kind.describe()
                );
                return Err(self.error(name_at, msg));
            };
            let name = name.clone();
            let field = base.ty.field(&name);
            let method = base.ty.method(&name);
            if field.is_none() && method.is_none() {
                let msg = format!(
                    "unknown field '{name}' on a value of type {} ({})",
                    base.ty,
                    base.ty.members()
                );
                return Err(self.error(name_at, msg));
            }
            self.advance()?;
            let is_call = self.tok.kind == Tok::LParen;
            base = match (field, method) {
                (Some((field, ty)), _) => {
                    if is_call {
                        let msg = format!("'{name}' is a field, not a method");
                        return Err(self.error(self.tok.start, msg));
                    }
                    Typed {
                        expr: Expr::Field {
                            base: Box::new(base.expr),
                            name: field,
                        },
                        ty,
                        start: base.start,
                    }
                }
                (None, Some(method)) => {
                    if !is_call {
                        let msg = format!(
                            "expected '(' after method '{name}', found {}",
                            self.tok.kind.describe()
                        );
                        return Err(self.error(self.tok.start, msg));
                    }
                    let open = self.tok.start;
                    self.advance()?;
                    let mut args = self.args(method.as_str(), 1, false, open)?;
                    // `.matches` takes a regular expression written as a string.
                    let arg = match args.pop() {
                        Some(Arg::Str(s)) => s,
                        // Unreachable: `args` checked arity 1 and refused regexes.
                        _ => return Err(self.error(open, "invalid method argument")),
                    };
                    Typed {
                        expr: Expr::Method {
                            base: Box::new(base.expr),
                            name: method,
                            arg,
                        },
                        ty: Ty::Bool,
                        start: base.start,
                    }
                }
                // Excluded by the check above.
                (None, None) => return Err(self.error(name_at, "unknown member")),
            };
        }
        Ok(base)
    }

    /// Parses an atom other than `"(" expr ")"`: a literal or a call.
    fn primary(&mut self) -> Result<Typed, ParseError> {
        let start = self.tok.start;
        let (expr, ty) = match &self.tok.kind {
            Tok::Int(v) => (Expr::Int(*v), Ty::Int),
            Tok::Str(s) => (Expr::Str(s.clone()), Ty::Str),
            Tok::Ident(name) if name == "true" => (Expr::Bool(true), Ty::Bool),
            Tok::Ident(name) if name == "false" => (Expr::Bool(false), Ty::Bool),
            Tok::Ident(name) => {
                let Some(func) = func_from_name(name) else {
                    let msg = format!(
                        "unknown identifier '{name}' \
                         (expected grep, test, run, exists, true or false)"
                    );
                    return Err(self.error(start, msg));
                };
                return self.call(func, start);
            }
            Tok::Regex(_) => {
                return Err(self.error(
                    start,
                    "a /regex/ literal is only allowed as the first argument of grep",
                ))
            }
            Tok::Bang => {
                return Err(self.error(
                    start,
                    "expected a term, found '!' (the operand of a comparison \
                     must be parenthesized to use '!')",
                ))
            }
            other => {
                let msg = format!("expected expression, found {}", other.describe());
                return Err(self.error(start, msg));
            }
        };
        self.advance()?;
        Ok(Typed { expr, ty, start })
    }

    fn call(&mut self, func: Func, start: usize) -> Result<Typed, ParseError> {
        let name = func.as_str();
        self.advance()?;
        if self.tok.kind != Tok::LParen {
            let msg = format!(
                "expected '(' after '{name}', found {}",
                self.tok.kind.describe()
            );
            return Err(self.error(self.tok.start, msg));
        }
        let open = self.tok.start;
        self.advance()?;
        let args = self.args(name, func.arity(), func == Func::Grep, open)?;
        Ok(Typed {
            expr: Expr::Call { func, args },
            ty: result_type(func),
            start,
        })
    }

    /// Counts one more regular expression, refusing more than [`MAX_REGEXES`].
    fn count_regex(&self, at: usize) -> Result<(), ParseError> {
        self.regexes.set(self.regexes.get() + 1);
        if self.regexes.get() > MAX_REGEXES {
            return Err(self.error(
                at,
                format!(
                    "too many regular expressions: a predicate may hold at most {MAX_REGEXES} \
                     (grep /…/ and .matches together); split it into several claims"
                ),
            ));
        }
        Ok(())
    }

    /// Parses `args ")"` (the `(` has been consumed; `open` is its offset). Regular
    /// expressions (grep's `/…/`, the argument of `.matches`) must be valid syntax.
    fn args(
        &mut self,
        name: &str,
        arity: usize,
        regex_first: bool,
        open: usize,
    ) -> Result<Vec<Arg>, ParseError> {
        let plural = if arity == 1 { "" } else { "s" };
        let mut args = Vec::new();
        if self.tok.kind != Tok::RParen {
            loop {
                let at = self.tok.start;
                let n = args.len() + 1;
                let arg = match &self.tok.kind {
                    Tok::Eof => return Err(self.error(open, format!("unclosed '(' of '{name}'"))),
                    Tok::RParen => return Err(self.error(at, "expected argument after ','")),
                    _ if args.len() >= arity => {
                        let msg =
                            format!("too many arguments: '{name}' takes {arity} argument{plural}");
                        return Err(self.error(at, msg));
                    }
                    Tok::Str(s) if name == "matches" => {
                        self.count_regex(at)?;
                        check_regex(s).map_err(|m| self.error(at, m))?;
                        Arg::Str(s.clone())
                    }
                    Tok::Str(s) => Arg::Str(s.clone()),
                    Tok::Regex(r) if regex_first && args.is_empty() => {
                        self.count_regex(at)?;
                        check_regex(r).map_err(|m| self.error(at, m))?;
                        Arg::Regex(r.clone())
                    }
                    Tok::Regex(_) => {
                        let msg = format!(
                            "argument {n} of '{name}' must be a string literal \
                             (a /regex/ literal is only allowed as the first argument of grep)"
                        );
                        return Err(self.error(at, msg));
                    }
                    other => {
                        let msg = format!(
                            "argument {n} of '{name}' must be a string literal, found {}",
                            other.describe()
                        );
                        return Err(self.error(at, msg));
                    }
                };
                args.push(arg);
                self.advance()?;
                match &self.tok.kind {
                    Tok::Comma => self.advance()?,
                    Tok::RParen => break,
                    Tok::Eof => return Err(self.error(open, format!("unclosed '(' of '{name}'"))),
                    other => {
                        let msg = format!(
                            "expected ',' or ')' after argument, found {}",
                            other.describe()
                        );
                        return Err(self.error(self.tok.start, msg));
                    }
                }
            }
        }
        // Current token is the closing ')'.
        if args.len() < arity {
            let msg = format!(
                "'{name}' takes {arity} argument{plural}, found {}",
                args.len()
            );
            return Err(self.error(self.tok.start, msg));
        }
        self.advance()?;
        Ok(args)
    }
}

/// A regular expression must be valid Rust `regex` syntax (as `regex::bytes` takes it) and
/// at most [`MAX_REGEX_BYTES`] long for the predicate to parse: a predicate whose regex can
/// never run is refused at ingest, not discovered at evaluation. Only the syntax is checked
/// (parsing and translating to the high-level form, both linear in the pattern); nothing
/// is compiled, because compiling can take orders of magnitude longer (see the module docs).
fn check_regex(pattern: &str) -> Result<(), String> {
    if pattern.len() > MAX_REGEX_BYTES {
        return Err(format!(
            "regular expression is {} bytes; the limit is {MAX_REGEX_BYTES} bytes",
            pattern.len()
        ));
    }
    // `utf8(false)`: the evaluator matches bytes, where `(?-u:\xFF)` is allowed.
    regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(pattern)
        .map(|_| ())
        .map_err(|e| {
            let detail = e.to_string();
            let last = detail
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid")
                .trim()
                .trim_start_matches("error: ")
                .to_owned();
            format!("invalid regular expression {pattern:?}: {last}")
        })
}
