//! Parser for the predicate language `elench-predicate-v1` (grammar and rules:
//! `docs/predicates.md`): [`lexer`] makes tokens on demand, [`parser`] is a recursive
//! descent that type-checks as it goes, [`ast`] is the tree it returns. A predicate is
//! parsed when a claim is ingested and evaluated later elsewhere, so nothing here runs
//! anything: regular expressions are only syntax-checked (with `regex-syntax`), because
//! compiling one can take far longer than parsing it and ingest holds the store's writer.
//! Errors carry the byte offset and the 1-based line and column (in chars) where the
//! offending token or operand starts; the first error in source order is reported.

mod ast;
mod lexer;
mod parser;

pub use ast::{Arg, CmpOp, Expr, Field, Func, Method};
pub use parser::parse;

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
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        ParseError {
            message: message.into(),
            offset: before.len(),
            line: before.matches('\n').count() + 1,
            column: before.get(line_start..).map_or(0, |s| s.chars().count()) + 1,
        }
    }
}
