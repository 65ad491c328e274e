//! Parser for the predicate language `elench-predicate-v1`.
//!
//! A predicate is parsed (and statically type-checked) when a claim is
//! ingested; it is evaluated later by a separate capability, so this module
//! only produces an AST ([`Expr`]) and never runs anything.
//!
//! Grammar (normative):
//!
//! ```text
//! expr       := or
//! or         := and ("||" and)*
//! and        := not ("&&" not)*
//! not        := "!" not | cmp
//! cmp        := term (("=="|"!="|">="|"<="|">"|"<") term)?
//! term       := atom ("." IDENT | "." IDENT "(" STRING ")")*
//! atom       := call | INT | STRING | "true" | "false" | "(" expr ")"
//! call       := ("grep" | "test" | "run" | "exists") "(" args ")"
//! ```
//!
//! Decisions layered on top of the grammar:
//!
//! * Calls have a fixed arity (`grep` 2, `test`/`run`/`exists` 1) and every
//!   argument is a string literal, except that the first argument of `grep`
//!   may be a `/regex/` literal. Inside `/…/` the escape `\/` stands for `/`;
//!   every other backslash is kept verbatim because it is regex syntax. An
//!   empty `//` literal is rejected.
//! * Regular expressions (grep's `/…/` and the argument of `.matches`) are
//!   checked for syntax only, with `regex-syntax` (Rust `regex` syntax, as
//!   `regex::bytes` accepts it). They are never compiled here: compiling a
//!   pattern such as `(\w{50}){4}` takes far longer than parsing it, and
//!   ingest runs while a writer holds the store. The evaluator compiles them.
//!   A pattern may be at most [`MAX_REGEX_BYTES`] bytes and a predicate may
//!   hold at most [`MAX_REGEXES`] of them, so the work ingest does for a
//!   predicate's regexes stays small whatever the envelope holds.
//! * Types: `grep -> Int`, `exists -> Bool`, `test -> TestResult`
//!   (field `passed: Bool`), `run -> RunResult` (fields `exit: Int`,
//!   `stdout: Str`). `Str` has the methods `contains(STRING) -> Bool` and
//!   `matches(STRING) -> Bool`. `==`/`!=` need two operands of the same scalar
//!   type (Int, Bool, Str); `<`, `>`, `<=`, `>=` need Int operands; `!`, `&&`,
//!   `||` need Bool operands; the whole predicate must be Bool. Comparisons do
//!   not chain (`1 < 2 < 3` is an error).
//! * INT is a run of ASCII digits (no sign) that must fit in an `i64`.
//! * STRING escapes are exactly `\"`, `\\`, `\n`, `\t`; raw control
//!   characters (including newline and tab) inside a string are errors.
//! * Whitespace between tokens is space, tab, newline and carriage return.
//! * The parser keeps pending constructs on an explicit heap stack instead of
//!   recursing, so its native stack use is constant. Nesting of `(` and `!`
//!   is still limited to [`MAX_DEPTH`] levels so that the (recursive) AST
//!   stays shallow enough to drop, clone, compare and evaluate safely.
//! * Errors carry the byte offset plus the 1-based line and column (column
//!   counted in chars) where the offending token/operand starts. The first
//!   error in source order is reported.

use std::fmt;

/// Name and version of the language accepted by [`parse`].
pub const LANGUAGE: &str = "elench-predicate-v1";

/// Maximum nesting depth of parentheses and `!` operators.
pub const MAX_DEPTH: usize = 256;

/// Longest regular expression accepted, in bytes. Real patterns over source code are short;
/// the bound keeps syntax checking (here) and compilation (at evaluation) cheap.
pub const MAX_REGEX_BYTES: usize = 1024;

/// Most regular expressions one predicate may hold (grep's `/…/` and `.matches` arguments
/// together). A predicate is one question about a tree; dozens of patterns make it several.
pub const MAX_REGEXES: usize = 32;

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

/// Comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Eq,
    Ne,
    Ge,
    Le,
    Gt,
    Lt,
}

impl CmpOp {
    /// The operator as written in source.
    pub fn as_str(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Ge => ">=",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Lt => "<",
        }
    }

    fn is_ordering(self) -> bool {
        !matches!(self, CmpOp::Eq | CmpOp::Ne)
    }
}

/// Primitive function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Func {
    /// `grep(pattern, path) -> Int`
    Grep,
    /// `test(name) -> TestResult`
    Test,
    /// `run(cmd) -> RunResult`
    Run,
    /// `exists(path) -> Bool`
    Exists,
}

impl Func {
    /// The function name as written in source.
    pub fn as_str(self) -> &'static str {
        match self {
            Func::Grep => "grep",
            Func::Test => "test",
            Func::Run => "run",
            Func::Exists => "exists",
        }
    }

    /// Number of arguments the function takes.
    pub fn arity(self) -> usize {
        match self {
            Func::Grep => 2,
            Func::Test | Func::Run | Func::Exists => 1,
        }
    }

    fn from_name(name: &str) -> Option<Func> {
        match name {
            "grep" => Some(Func::Grep),
            "test" => Some(Func::Test),
            "run" => Some(Func::Run),
            "exists" => Some(Func::Exists),
            _ => None,
        }
    }

    fn result_type(self) -> Ty {
        match self {
            Func::Grep => Ty::Int,
            Func::Test => Ty::TestResult,
            Func::Run => Ty::RunResult,
            Func::Exists => Ty::Bool,
        }
    }
}

/// Field of a structured result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// `test(..).passed: Bool`
    Passed,
    /// `run(..).exit: Int`
    Exit,
    /// `run(..).stdout: Str`
    Stdout,
}

impl Field {
    /// The field name as written in source.
    pub fn as_str(self) -> &'static str {
        match self {
            Field::Passed => "passed",
            Field::Exit => "exit",
            Field::Stdout => "stdout",
        }
    }
}

/// Method on a string value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// `s.contains("needle") -> Bool`
    Contains,
    /// `s.matches("regex") -> Bool`
    Matches,
}

impl Method {
    /// The method name as written in source.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Contains => "contains",
            Method::Matches => "matches",
        }
    }
}

/// A parse (syntax or type) error with its position in the source.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} at line {line}, column {column}")]
pub struct ParseError {
    pub message: String,
    /// Byte offset into the source (always a char boundary, `<= len`).
    pub offset: usize,
    /// 1-based line number.
    pub line: usize,
    /// 1-based column, counted in chars.
    pub column: usize,
}

impl ParseError {
    fn new(source: &str, offset: usize, message: impl Into<String>) -> ParseError {
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
        ParseError::new(self.src, offset, message)
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
        if op.is_ordering() && lhs.ty != Ty::Int {
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
            let msg = if op.is_ordering() {
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
                let Some(func) = Func::from_name(name) else {
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
            ty: func.result_type(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ok(src: &str) -> Expr {
        match parse(src) {
            Ok(e) => e,
            Err(e) => panic!("expected {src:?} to parse, got: {e}"),
        }
    }

    /// Asserts that `src` fails at (offset, line, column) with a message
    /// containing `needle`.
    fn err(src: &str, needle: &str, offset: usize, line: usize, column: usize) {
        match parse(src) {
            Ok(e) => panic!("expected {src:?} to fail, got {e:?}"),
            Err(e) => {
                assert!(
                    e.message.contains(needle),
                    "{src:?}: message {:?} lacks {needle:?}",
                    e.message
                );
                assert_eq!(
                    (e.offset, e.line, e.column),
                    (offset, line, column),
                    "{src:?}: wrong position for {e}"
                );
            }
        }
    }

    fn s(v: &str) -> Arg {
        Arg::Str(v.to_string())
    }

    fn call(func: Func, args: Vec<Arg>) -> Expr {
        Expr::Call { func, args }
    }

    #[test]
    fn language_name() {
        assert_eq!(LANGUAGE, "elench-predicate-v1");
    }

    #[test]
    fn valid_exists() {
        assert_eq!(
            ok(r#"exists("src/lib.rs")"#),
            call(Func::Exists, vec![s("src/lib.rs")])
        );
    }

    #[test]
    fn valid_grep_regex() {
        assert_eq!(
            ok(r#"grep(/fn\s+parse/, "src") >= 1"#),
            Expr::Cmp {
                op: CmpOp::Ge,
                lhs: Box::new(call(
                    Func::Grep,
                    vec![Arg::Regex(r"fn\s+parse".into()), s("src")]
                )),
                rhs: Box::new(Expr::Int(1)),
            }
        );
        // `\/` stands for '/', other backslashes are kept verbatim.
        assert_eq!(
            ok(r#"grep(/a\/b\\/, "x") == 0"#),
            Expr::Cmp {
                op: CmpOp::Eq,
                lhs: Box::new(call(Func::Grep, vec![Arg::Regex(r"a/b\\".into()), s("x")])),
                rhs: Box::new(Expr::Int(0)),
            }
        );
        // A plain string pattern is fine too.
        ok(r#"grep("TODO", "src") == 0"#);
    }

    #[test]
    fn valid_test_passed() {
        assert_eq!(
            ok(r#"test("parse_rejects_empty").passed"#),
            Expr::Field {
                base: Box::new(call(Func::Test, vec![s("parse_rejects_empty")])),
                name: Field::Passed,
            }
        );
    }

    #[test]
    fn valid_run_fields_and_methods() {
        assert_eq!(
            ok(r#"run("cargo test").exit == 0 && run("x").stdout.contains("ok")"#),
            Expr::And(vec![
                Expr::Cmp {
                    op: CmpOp::Eq,
                    lhs: Box::new(Expr::Field {
                        base: Box::new(call(Func::Run, vec![s("cargo test")])),
                        name: Field::Exit,
                    }),
                    rhs: Box::new(Expr::Int(0)),
                },
                Expr::Method {
                    base: Box::new(Expr::Field {
                        base: Box::new(call(Func::Run, vec![s("x")])),
                        name: Field::Stdout,
                    }),
                    name: Method::Contains,
                    arg: "ok".into(),
                },
            ])
        );
        ok(r#"run("x").stdout.matches("^ok\n$")"#);
        ok(r#"run("x").stdout == "ok\n""#);
        ok(r#""abc".contains("b")"#);
    }

    #[test]
    fn valid_not_and_precedence() {
        assert_eq!(
            ok("!(1 < 2) || true"),
            Expr::Or(vec![
                Expr::Not(Box::new(Expr::Cmp {
                    op: CmpOp::Lt,
                    lhs: Box::new(Expr::Int(1)),
                    rhs: Box::new(Expr::Int(2)),
                })),
                Expr::Bool(true),
            ])
        );
        // && binds tighter than ||; chains are flattened.
        assert_eq!(
            ok("true || false && true && false || true"),
            Expr::Or(vec![
                Expr::Bool(true),
                Expr::And(vec![Expr::Bool(false), Expr::Bool(true), Expr::Bool(false)]),
                Expr::Bool(true),
            ])
        );
        // `!` applies to the whole comparison.
        assert_eq!(
            ok("!1 == 2"),
            Expr::Not(Box::new(Expr::Cmp {
                op: CmpOp::Eq,
                lhs: Box::new(Expr::Int(1)),
                rhs: Box::new(Expr::Int(2)),
            }))
        );
        ok("!!true");
        ok("(1 < 2) == true");
        ok("1 != 2 && 3 <= 4 && 5 > 4 && 4 < 5 && 6 >= 6");
        ok(r#"exists("a") == false"#);
        ok(&format!("{} == 1", i64::MAX));
    }

    #[test]
    fn valid_string_escapes() {
        assert_eq!(
            ok(r#""a\"b\\c\nd\te" == "é✓""#),
            Expr::Cmp {
                op: CmpOp::Eq,
                lhs: Box::new(Expr::Str("a\"b\\c\nd\te".into())),
                rhs: Box::new(Expr::Str("é✓".into())),
            }
        );
    }

    #[test]
    fn valid_whitespace_and_newlines() {
        assert_eq!(
            ok("\r\n\t exists(\n  \"a\"\n)\t&&\r\n  test ( \"t\" ) . passed \n"),
            Expr::And(vec![
                call(Func::Exists, vec![s("a")]),
                Expr::Field {
                    base: Box::new(call(Func::Test, vec![s("t")])),
                    name: Field::Passed,
                },
            ])
        );
    }

    #[test]
    fn max_depth_is_accepted() {
        let src = format!("{}true{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        assert_eq!(ok(&src), Expr::Bool(true));
        let src = format!("{}true", "!".repeat(MAX_DEPTH));
        ok(&src);
    }

    #[test]
    fn invalid_empty() {
        err("", "empty predicate", 0, 1, 1);
        err("  \n ", "empty predicate", 4, 2, 2);
    }

    #[test]
    fn invalid_trailing_tokens() {
        err(
            r#"exists("a") exists("b")"#,
            "unexpected identifier 'exists'",
            12,
            1,
            13,
        );
        err("true )", "unexpected ')'", 5, 1, 6);
        err("1 < 2 < 3", "cannot be chained", 6, 1, 7);
    }

    #[test]
    fn invalid_unknown_identifier() {
        err(r#"foo("a")"#, "unknown identifier 'foo'", 0, 1, 1);
        err("true &&\n  True", "unknown identifier 'True'", 10, 2, 3);
        err("grep", "expected '(' after 'grep'", 4, 1, 5);
    }

    #[test]
    fn invalid_unknown_field() {
        err(r#"exists("a").passed"#, "unknown field 'passed'", 12, 1, 13);
        err(r#"test("t").exit == 0"#, "unknown field 'exit'", 10, 1, 11);
        err(r#"grep("a", "b").x"#, "unknown field 'x'", 15, 1, 16);
        err(
            r#"run("x").stdout.length"#,
            "unknown field 'length'",
            16,
            1,
            17,
        );
        err(
            r#"run("x").contains("a")"#,
            "unknown field 'contains'",
            9,
            1,
            10,
        );
        err(
            r#"run("x").exit() == 0"#,
            "is a field, not a method",
            13,
            1,
            14,
        );
        err(
            r#"run("x").stdout.contains"#,
            "expected '(' after method",
            24,
            1,
            25,
        );
        err(r#"run("x")."#, "expected field or method name", 9, 1, 10);
        err(
            r#"run("x").stdout.matches(/x/)"#,
            "must be a string literal",
            24,
            1,
            25,
        );
    }

    #[test]
    fn invalid_string_literals() {
        err(r#"exists("a\qb")"#, "invalid escape", 9, 1, 10);
        err(r#"exists("\u0041")"#, "invalid escape", 8, 1, 9);
        err(r#"exists("abc"#, "unterminated string", 7, 1, 8);
        err(r#"exists("abc\"#, "unterminated string", 7, 1, 8);
        err("exists(\"ab\ncd\")", "raw control character", 10, 1, 11);
        err("exists(\"ab\tcd\")", "raw control character", 10, 1, 11);
        // Column counts chars, offset counts bytes.
        err("\"é\\x\" == \"\"", "invalid escape", 3, 1, 3);
    }

    #[test]
    fn invalid_regex_literals() {
        err(r#"grep(/abc, "x") > 0"#, "unterminated regex", 5, 1, 6);
        err(r#"grep(//, "x") > 0"#, "empty regex", 5, 1, 6);
        err(r#"grep("a", /b/) > 0"#, "argument 2 of 'grep'", 10, 1, 11);
        err(r#"exists(/a/)"#, "argument 1 of 'exists'", 7, 1, 8);
        err(
            r#"/a/ == "a""#,
            "only allowed as the first argument",
            0,
            1,
            1,
        );
    }

    #[test]
    fn invalid_arity_and_argument_kind() {
        err(r#"exists()"#, "'exists' takes 1 argument, found 0", 7, 1, 8);
        err(
            r#"grep("a") > 0"#,
            "'grep' takes 2 arguments, found 1",
            8,
            1,
            9,
        );
        err(r#"exists("a", "b")"#, "too many arguments", 12, 1, 13);
        err(
            r#"grep("a", "b", "c") > 0"#,
            "too many arguments",
            15,
            1,
            16,
        );
        err(r#"exists("a",)"#, "expected argument after ','", 11, 1, 12);
        err(
            r#"exists(1)"#,
            "argument 1 of 'exists' must be a string",
            7,
            1,
            8,
        );
        err(
            r#"test(true).passed"#,
            "argument 1 of 'test' must be a string",
            5,
            1,
            6,
        );
        err(r#"exists("a" "b")"#, "expected ',' or ')'", 11, 1, 12);
        err(
            r#"run("x").stdout.contains("a", "b")"#,
            "too many arguments",
            30,
            1,
            31,
        );
    }

    #[test]
    fn invalid_types() {
        err(
            "1 && true",
            "operand of '&&' must be Bool, found Int",
            0,
            1,
            1,
        );
        err(
            "true && 1",
            "operand of '&&' must be Bool, found Int",
            8,
            1,
            9,
        );
        err(
            r#"true || "x""#,
            "operand of '||' must be Bool, found Str",
            8,
            1,
            9,
        );
        err("!5", "operand of '!' must be Bool, found Int", 1, 1, 2);
        err(r#"1 == "1""#, "same type, found Int and Str", 5, 1, 6);
        err(r#""a" < "b""#, "requires Int operands, found Str", 0, 1, 1);
        err("1 < true", "requires Int operands, found Bool", 4, 1, 5);
        err(
            r#"test("t") == test("t")"#,
            "cannot compare TestResult",
            0,
            1,
            1,
        );
        err(r#"(grep("a", "b")) && true"#, "found Int", 0, 1, 1);
    }

    #[test]
    fn invalid_non_bool_top_level() {
        err(
            r#"grep("a","b")"#,
            "predicate must be Bool, found Int",
            0,
            1,
            1,
        );
        err(r#"run("x")"#, "found RunResult", 0, 1, 1);
        err(r#" run("x").stdout"#, "found Str", 1, 1, 2);
        err("42", "found Int", 0, 1, 1);
    }

    #[test]
    fn invalid_parens() {
        err("(true", "unclosed '('", 0, 1, 1);
        err("((true)", "unclosed '('", 0, 1, 1);
        err("(true false)", "expected ')'", 6, 1, 7);
        err(r#"exists("a""#, "unclosed '(' of 'exists'", 6, 1, 7);
        err("()", "expected expression, found ')'", 1, 1, 2);
        err(
            "true &&",
            "expected expression, found end of input",
            7,
            1,
            8,
        );
    }

    #[test]
    fn invalid_lexemes() {
        err("true & false", "did you mean '&&'", 5, 1, 6);
        err("true | false", "did you mean '||'", 5, 1, 6);
        err("1 = 1", "did you mean '=='", 2, 1, 3);
        err("1 == -1", "unexpected character '-'", 5, 1, 6);
        err("true &&\n\u{a0}false", "unexpected character", 8, 2, 1);
        err("99999999999999999999 > 1", "out of range", 0, 1, 1);
        err(
            &format!("1 < {}", i128::from(i64::MAX) + 1),
            "out of range",
            4,
            1,
            5,
        );
    }

    #[test]
    fn invalid_deep_nesting() {
        let src = "(".repeat(100_000);
        err(&src, "nesting too deep", MAX_DEPTH, 1, MAX_DEPTH + 1);
        let src = format!("{}true", "!".repeat(100_000));
        err(&src, "nesting too deep", MAX_DEPTH, 1, MAX_DEPTH + 1);
        let src = "!(".repeat(100_000);
        err(&src, "nesting too deep", MAX_DEPTH, 1, MAX_DEPTH + 1);
        let src = format!(
            "{}true{}",
            "(".repeat(MAX_DEPTH + 1),
            ")".repeat(MAX_DEPTH + 1)
        );
        err(&src, "nesting too deep", MAX_DEPTH, 1, MAX_DEPTH + 1);
    }

    #[test]
    fn long_flat_chains_are_fine() {
        // Not nested, so not subject to the depth limit, and flat in the AST.
        let src = vec!["true"; 100_000].join(" || ");
        match ok(&src) {
            Expr::Or(items) => assert_eq!(items.len(), 100_000),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn max_depth_fits_in_small_stack() {
        // The parser itself does not recurse; only the (bounded) AST does.
        let handle = std::thread::Builder::new()
            .stack_size(128 << 10)
            .spawn(|| {
                let src =
                    format!("{}true", "!(".repeat(MAX_DEPTH / 2)) + &")".repeat(MAX_DEPTH / 2);
                parse(&src).is_ok()
                    && parse(&format!(
                        "{}true{}",
                        "(".repeat(MAX_DEPTH),
                        ")".repeat(MAX_DEPTH)
                    ))
                    .is_ok()
            })
            .map_err(|e| e.to_string());
        let joined = handle.map(|h| h.join().unwrap_or(false));
        assert_eq!(joined, Ok(true));
    }

    #[test]
    fn regular_expressions_must_be_valid_syntax() {
        assert!(parse(r#"grep(/fn\s+\w+/, "src") > 0"#).is_ok());
        assert!(parse(r#"run("x").stdout.matches("^ok [0-9]+$")"#).is_ok());
        let e = parse(r#"grep(/[/, "x") > 0"#).unwrap_err();
        assert_eq!(e.offset, 5, "{e}");
        assert!(e.message.contains("invalid regular expression"), "{e}");
        let e = parse(r#"run("x").stdout.matches("(")"#).unwrap_err();
        assert_eq!(e.offset, 24, "{e}");
        // A plain string is a literal for contains, never compiled.
        assert!(parse(r#"run("x").stdout.contains("(")"#).is_ok());
    }

    #[test]
    fn regex_syntax_follows_bytes_regexes() {
        // Matching raw bytes outside UTF-8 is what `regex::bytes` allows.
        assert!(parse(r#"grep(/(?-u:\xFF)/, "bin") > 0"#).is_ok());
        let e = parse(r#"grep(/\p{NoSuchClass}/, "x") > 0"#).unwrap_err();
        assert!(e.message.contains("invalid regular expression"), "{e}");
        // Heavy to compile, cheap to parse: accepted here.
        let heavy = r#"run("x").stdout.matches("(\\w{50}){4}")"#;
        assert!(parse(heavy).is_ok(), "{:?}", parse(heavy));
    }

    #[test]
    fn regex_count_is_bounded() {
        let one = r#"run("x").stdout.matches("a")"#;
        let at_limit = vec![one; MAX_REGEXES].join(" && ");
        assert!(parse(&at_limit).is_ok());
        let over = vec![one; MAX_REGEXES + 1].join(" && ");
        let e = parse(&over).unwrap_err();
        assert!(e.message.contains("too many regular expressions"), "{e}");
        assert!(e.message.contains(&MAX_REGEXES.to_string()), "{e}");
        // The offending (first excess) pattern is where the error points.
        assert_eq!(
            e.offset,
            (one.len() + 4) * MAX_REGEXES + one.len() - 4,
            "{e}"
        );
        // grep literals count too; plain grep strings do not.
        let mixed = vec![r#"grep(/a/, "x") > 0"#; MAX_REGEXES + 1].join(" || ");
        assert!(parse(&mixed).is_err());
        let plain = vec![r#"grep("a", "x") > 0"#; MAX_REGEXES + 1].join(" || ");
        assert!(parse(&plain).is_ok());
    }

    #[test]
    fn regex_length_is_bounded() {
        let ok = format!(
            r#"run("x").stdout.matches("{}")"#,
            "a".repeat(MAX_REGEX_BYTES)
        );
        assert!(parse(&ok).is_ok());
        let long = format!(r#"grep(/{}/, "x") > 0"#, "a".repeat(MAX_REGEX_BYTES + 1));
        let e = parse(&long).unwrap_err();
        assert!(e.message.contains("limit is 1024 bytes"), "{e}");
        assert_eq!(e.offset, 5);
    }

    #[test]
    fn error_display() {
        let e = parse("\n  foo").unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown identifier 'foo' (expected grep, test, run, exists, true or false) \
             at line 2, column 3"
        );
    }

    fn check_error_position(src: &str) {
        if let Err(e) = parse(src) {
            assert!(e.offset <= src.len());
            assert!(src.is_char_boundary(e.offset));
            let before = &src[..e.offset];
            assert_eq!(e.line, before.matches('\n').count() + 1);
            let line_start = before.rfind('\n').map_or(0, |i| i + 1);
            assert_eq!(e.column, before[line_start..].chars().count() + 1);
            assert!(!e.message.is_empty());
        }
    }

    const TOKENS: &[&str] = &[
        "grep",
        "test",
        "run",
        "exists",
        "true",
        "false",
        "foo",
        "passed",
        "exit",
        "stdout",
        "contains",
        "matches",
        "x",
        "(",
        ")",
        ".",
        ",",
        "||",
        "&&",
        "!",
        "==",
        "!=",
        ">=",
        "<=",
        ">",
        "<",
        "|",
        "&",
        "=",
        "-",
        "0",
        "1",
        "42",
        "9223372036854775807",
        "9223372036854775808",
        "\"a\"",
        "\"\"",
        "\"a\\\"b\"",
        "\"\\n\\t\\\\\"",
        "\"\\q\"",
        "\"unterminated",
        "\"\n\"",
        "\"é\"",
        "/a/",
        "/a\\/b/",
        "/\\d+/",
        "//",
        "/open",
        " ",
        "\n",
        "\t",
        "\r\n",
        "é",
        "\u{a0}",
        "\\",
    ];

    fn token_soup() -> impl Strategy<Value = String> {
        let tok = prop::sample::select(TOKENS);
        let sep = prop::sample::select(&["", "", " ", "\n"][..]);
        prop::collection::vec((tok, sep), 0..48).prop_map(|parts| {
            parts
                .into_iter()
                .flat_map(|(t, s)| [t, s])
                .collect::<String>()
        })
    }

    /// Small deterministic generator of well-typed ASTs (xorshift64*), plus
    /// a printer that emits minimal parentheses, random redundant ones and
    /// random whitespace, for round-trip testing.
    struct Gen(u64);

    impl Gen {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        fn pick<T: Copy>(&mut self, items: &[T]) -> T {
            let i = usize::try_from(self.below(items.len() as u64)).unwrap_or(0);
            items[i]
        }

        fn text(&mut self, min: u64) -> String {
            let pieces = ["a", "Z", " ", "\"", "\\", "\n", "\t", "é", "/", "ok", "✓"];
            let n = min + self.below(4);
            (0..n).map(|_| self.pick(&pieces)).collect()
        }

        fn regex(&mut self) -> String {
            // Atoms, each perhaps repeated: always a regex that compiles.
            let atoms = ["a", "/", "\\s", "\\d", ".", "é", "\\\\", "\""];
            let n = 1 + self.below(4);
            (0..n)
                .map(|_| {
                    let atom = self.pick(&atoms);
                    if self.below(3) == 0 {
                        format!("{atom}+")
                    } else {
                        atom.to_owned()
                    }
                })
                .collect()
        }

        fn bool_expr(&mut self, depth: u32) -> Expr {
            let choice = if depth == 0 {
                self.below(4)
            } else {
                self.below(8)
            };
            let sub = depth.saturating_sub(1);
            match choice {
                0 => Expr::Bool(self.below(2) == 0),
                1 => call(Func::Exists, vec![Arg::Str(self.text(0))]),
                2 => Expr::Field {
                    base: Box::new(call(Func::Test, vec![Arg::Str(self.text(0))])),
                    name: Field::Passed,
                },
                3 => {
                    let base = Box::new(self.str_expr());
                    let name = self.pick(&[Method::Contains, Method::Matches]);
                    // A `.matches` argument must be a regex that compiles.
                    let arg = match name {
                        Method::Matches => regex::escape(&self.text(0)),
                        Method::Contains => self.text(0),
                    };
                    Expr::Method { base, name, arg }
                }
                4 => Expr::Not(Box::new(self.bool_expr(sub))),
                5 | 6 => {
                    let n = 2 + self.below(3);
                    let items = (0..n).map(|_| self.bool_expr(sub)).collect();
                    if choice == 5 {
                        Expr::And(items)
                    } else {
                        Expr::Or(items)
                    }
                }
                _ => {
                    let (op, lhs, rhs) = match self.below(3) {
                        0 => (
                            self.pick(&[
                                CmpOp::Eq,
                                CmpOp::Ne,
                                CmpOp::Ge,
                                CmpOp::Le,
                                CmpOp::Gt,
                                CmpOp::Lt,
                            ]),
                            self.int_expr(),
                            self.int_expr(),
                        ),
                        1 => (
                            self.pick(&[CmpOp::Eq, CmpOp::Ne]),
                            self.str_expr(),
                            self.str_expr(),
                        ),
                        _ => (
                            self.pick(&[CmpOp::Eq, CmpOp::Ne]),
                            self.bool_expr(sub),
                            self.bool_expr(sub),
                        ),
                    };
                    Expr::Cmp {
                        op,
                        lhs: Box::new(lhs),
                        rhs: Box::new(rhs),
                    }
                }
            }
        }

        fn int_expr(&mut self) -> Expr {
            match self.below(3) {
                0 => Expr::Int(i64::try_from(self.next() >> (1 + self.below(63))).unwrap_or(0)),
                1 => {
                    let pattern = if self.below(2) == 0 {
                        Arg::Regex(self.regex())
                    } else {
                        Arg::Str(self.text(0))
                    };
                    call(Func::Grep, vec![pattern, Arg::Str(self.text(0))])
                }
                _ => Expr::Field {
                    base: Box::new(call(Func::Run, vec![Arg::Str(self.text(0))])),
                    name: Field::Exit,
                },
            }
        }

        fn str_expr(&mut self) -> Expr {
            if self.below(2) == 0 {
                Expr::Str(self.text(0))
            } else {
                Expr::Field {
                    base: Box::new(call(Func::Run, vec![Arg::Str(self.text(1))])),
                    name: Field::Stdout,
                }
            }
        }

        fn space(&mut self) -> &'static str {
            self.pick(&["", "", " ", " ", "\n", "\t", "\r\n"])
        }

        fn print(&mut self, e: &Expr) -> String {
            let mut out = String::new();
            self.print_into(e, &mut out);
            out
        }

        /// Prints `e`, parenthesized if its level is at most `max_level`
        /// (0 = or, 1 = and, 2 = not/cmp, 3 = term) or at random.
        fn child(&mut self, e: &Expr, max_level: u8, out: &mut String) {
            let level = match e {
                Expr::Or(_) => 0,
                Expr::And(_) => 1,
                Expr::Not(_) | Expr::Cmp { .. } => 2,
                _ => 3,
            };
            if level <= max_level || self.below(5) == 0 {
                out.push('(');
                out.push_str(self.space());
                self.print_into(e, out);
                out.push_str(self.space());
                out.push(')');
            } else {
                self.print_into(e, out);
            }
        }

        fn print_into(&mut self, e: &Expr, out: &mut String) {
            match e {
                Expr::Or(items) | Expr::And(items) => {
                    let (sep, max_level) = if matches!(e, Expr::Or(_)) {
                        ("||", 0)
                    } else {
                        ("&&", 1)
                    };
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            out.push_str(self.space());
                            out.push_str(sep);
                            out.push_str(self.space());
                        }
                        self.child(item, max_level, out);
                    }
                }
                Expr::Not(inner) => {
                    out.push('!');
                    out.push_str(self.space());
                    self.child(inner, 1, out);
                }
                Expr::Cmp { op, lhs, rhs } => {
                    self.child(lhs, 2, out);
                    out.push_str(self.space());
                    out.push_str(op.as_str());
                    out.push_str(self.space());
                    self.child(rhs, 2, out);
                }
                Expr::Int(v) => out.push_str(&v.to_string()),
                Expr::Str(s) => quote(s, out),
                Expr::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
                Expr::Call { func, args } => {
                    out.push_str(func.as_str());
                    out.push_str(self.space());
                    out.push('(');
                    for (i, arg) in args.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        out.push_str(self.space());
                        match arg {
                            Arg::Str(s) => quote(s, out),
                            Arg::Regex(r) => {
                                out.push('/');
                                out.push_str(&r.replace('/', "\\/"));
                                out.push('/');
                            }
                        }
                        out.push_str(self.space());
                    }
                    out.push(')');
                }
                Expr::Field { base, name } => {
                    self.child(base, 2, out);
                    out.push_str(self.space());
                    out.push('.');
                    out.push_str(self.space());
                    out.push_str(name.as_str());
                }
                Expr::Method { base, name, arg } => {
                    self.child(base, 2, out);
                    out.push_str(self.space());
                    out.push('.');
                    out.push_str(name.as_str());
                    out.push('(');
                    quote(arg, out);
                    out.push(')');
                }
            }
        }
    }

    fn quote(s: &str, out: &mut String) {
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                c => out.push(c),
            }
        }
        out.push('"');
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn never_panics_on_arbitrary_strings(src in ".*") {
            check_error_position(&src);
        }

        #[test]
        fn never_panics_on_token_soup(src in token_soup()) {
            check_error_position(&src);
        }

        #[test]
        fn printed_asts_round_trip(seed in any::<u64>()) {
            let mut gen = Gen(seed | 1);
            let expr = gen.bool_expr(4);
            let src = gen.print(&expr);
            prop_assert_eq!(parse(&src), Ok(expr), "source: {}", src);
        }
    }
}
