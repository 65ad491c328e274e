//! Recursive descent over the grammar, one function per rule, type-checking as it goes.
//! Only `(` recurses (`!` and the `&&`/`||` chains are loops), and the depth counter stops
//! it at [`MAX_DEPTH`], so native stack use is bounded whatever the input.

use super::lexer::{Lexer, Tok};
use super::{
    Arg, CmpOp, Expr, Field, Func, Method, ParseError, MAX_DEPTH, MAX_REGEXES, MAX_REGEX_BYTES,
};

/// Parse and type-check a predicate written in [`LANGUAGE`](super::LANGUAGE).
///
/// # Errors
///
/// Returns a [`ParseError`] locating the first lexical, syntactic or type error in source
/// order (a non-Bool predicate is reported at its start).
pub fn parse(src: &str) -> Result<Expr, ParseError> {
    let mut lexer = Lexer { src, pos: 0 };
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

/// Every field: the type that has it, its name, its own type. (Every [`Method`] is on Str.)
const FIELDS: [(Ty, Field, Ty); 3] = [
    (Ty::TestResult, Field::Passed, Ty::Bool),
    (Ty::RunResult, Field::Exit, Ty::Int),
    (Ty::RunResult, Field::Stdout, Ty::Str),
];

impl Ty {
    /// The members of the type, as the error about an unknown one lists them.
    fn members(self) -> &'static str {
        match self {
            Ty::TestResult => "fields: passed",
            Ty::RunResult => "fields: exit, stdout",
            Ty::Str => "methods: contains, matches",
            Ty::Int | Ty::Bool => "it has no fields or methods",
        }
    }
}

/// Where a `/regex/` literal may stand, as both errors about one elsewhere say.
const REGEX_PLACE: &str = "a /regex/ literal is only allowed as the first argument of grep";

/// The operands of a `||` or `&&` chain being built.
type Chain = Vec<Typed>;

/// An expression together with its static type and start offset.
struct Typed {
    expr: Expr,
    ty: Ty,
    start: usize,
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

    /// Fails at the current token: `{expected}, found {the token}`.
    fn expected<T>(&self, expected: &str) -> Parsed<T> {
        let msg = format!("{expected}, found {}", self.tok.describe());
        self.fail(self.at, msg)
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
        if operand.ty == Ty::Bool {
            return Ok(());
        }
        let msg = format!("operand of '{op}' must be Bool, found {:?}", operand.ty);
        self.fail(operand.start, msg)
    }

    /// `or := and ("||" and)*` over `and := not ("&&" not)*`, both chains flattened.
    ///
    /// Each nested `(` costs one call of `expr`, `not`, `cmp`, `term` and `paren`; they keep
    /// little in their frames (unoptimised builds give every temporary its own slot), and
    /// the rest of the work happens in helpers such as `join`, off the recursion path.
    fn expr(&mut self) -> Parsed<Typed> {
        let (mut ors, mut ands) = (Chain::new(), Chain::new());
        loop {
            let item = self.not()?;
            if let Some(and) = self.join(&mut ands, item, "&&")? {
                if let Some(or) = self.join(&mut ors, and, "||")? {
                    return Ok(or);
                }
            }
        }
    }

    /// Adds `item` to the chain of `op` if one is open or `op` follows. Returns `None` once
    /// it has consumed `op` (another operand follows), else the item or the whole chain.
    fn join(&mut self, chain: &mut Chain, item: Typed, op: &'static str) -> Parsed<Option<Typed>> {
        if chain.is_empty() && self.tok != Tok::Punct(op) {
            return Ok(Some(item));
        }
        self.expect_bool(&item, op)?;
        chain.push(item);
        if self.tok == Tok::Punct(op) {
            return self.advance().map(|()| None);
        }
        let start = chain.first().map_or(0, |first| first.start);
        let items = chain.drain(..).map(|item| item.expr).collect();
        let expr = match op {
            "||" => Expr::Or(items),
            _ => Expr::And(items),
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
        self.operand(op, &lhs, None).and_then(|()| self.advance())?;
        self.term().and_then(|rhs| self.compared(lhs, op, rhs))
    }

    /// Type rules of the operands of `op`, two scalars of one type (Int for `<`, `>`, `<=`,
    /// `>=`); `lhs`, the left operand's type, is given when `operand` is the right one.
    fn operand(&self, op: CmpOp, operand: &Typed, lhs: Option<Ty>) -> Parsed<()> {
        let (ordering, t) = (!matches!(op, CmpOp::Eq | CmpOp::Ne), operand.ty);
        let problem = match lhs {
            _ if ordering && t != Ty::Int => format!("requires Int operands, found {t:?}"),
            None if matches!(t, Ty::Int | Ty::Bool | Ty::Str) => return Ok(()),
            None => format!("cannot compare {t:?} values"),
            Some(l) if l == t => return Ok(()),
            Some(l) => format!("requires operands of the same type, found {l:?} and {t:?}"),
        };
        let msg = format!("operator '{}' {problem}", op.as_str());
        self.fail(operand.start, msg)
    }

    /// `lhs op rhs`, which must not go on into another comparison.
    fn compared(&mut self, lhs: Typed, op: CmpOp, rhs: Typed) -> Parsed<Typed> {
        self.operand(op, &rhs, Some(lhs.ty))?;
        if let Tok::Cmp(_) = self.tok {
            let msg = "comparison operators cannot be chained (use parentheses and '&&')";
            return self.fail(self.at, msg);
        }
        let (start, lhs, rhs) = (lhs.start, Box::new(lhs.expr), Box::new(rhs.expr));
        Ok(typed(Expr::Cmp { op, lhs, rhs }, Ty::Bool, start))
    }

    /// `term := atom ("." IDENT | "." IDENT "(" STRING ")")*`.
    fn term(&mut self) -> Parsed<Typed> {
        let atom = match self.tok {
            Tok::Punct("(") => self.paren(),
            _ => self.atom(),
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
            _ => return self.expected("expected ')'"),
        }
        self.advance()?;
        Ok(typed(inner.expr, inner.ty, open))
    }

    /// The `.field` and `.method("arg")` suffix of a term.
    fn members(&mut self, mut value: Typed) -> Parsed<Typed> {
        while self.tok == Tok::Punct(".") {
            self.advance()?;
            let Tok::Ident(name) = &self.tok else {
                return self.expected("expected field or method name after '.'");
            };
            let (name, ty) = (name.clone(), value.ty);
            let field = FIELDS.iter().find(|f| f.0 == ty && f.1.as_str() == name);
            let method = Method::from_name(&name).filter(|_| ty == Ty::Str);
            let Some(member) = field.map(|f| Ok((f.1, f.2))).or(method.map(Err)) else {
                let members = ty.members();
                let msg = format!("unknown field '{name}' on a value of type {ty:?} ({members})");
                return self.fail(self.at, msg);
            };
            self.advance()?;
            let (start, at, base) = (value.start, self.at, Box::new(value.expr));
            value = match member {
                Ok(_) if self.tok == Tok::Punct("(") => {
                    return self.fail(at, format!("'{name}' is a field, not a method"));
                }
                Ok((name, ty)) => typed(Expr::Field { base, name }, ty, start),
                Err(name) => {
                    // `call` checked arity 1 and refused regexes: always one string.
                    let Some(Arg::Str(arg)) = self.call("method ", name.as_str(), 1)?.pop() else {
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
                self.advance()?;
                let args = self.call("", func.as_str(), func.arity())?;
                let ty = match func {
                    Func::Grep => Ty::Int,
                    Func::Test => Ty::TestResult,
                    Func::Run => Ty::RunResult,
                    Func::Exists => Ty::Bool,
                };
                return Ok(typed(Expr::Call { func, args }, ty, start));
            }
            Tok::Regex(_) => return self.fail(start, REGEX_PLACE),
            Tok::Punct("!") => {
                let why = "the operand of a comparison must be parenthesized to use '!'";
                return self.fail(start, format!("expected a term, found '!' ({why})"));
            }
            _ => return self.expected("expected expression"),
        };
        self.advance()?;
        Ok(typed(expr, ty, start))
    }

    /// `"(" args ")"` after function `name` (`kind` is "method " for a method): `arity` string
    /// literals, the first a `/regex/` for `grep`; the argument of `matches` is a regex too.
    fn call(&mut self, kind: &str, name: &str, arity: usize) -> Parsed<Vec<Arg>> {
        if self.tok != Tok::Punct("(") {
            return self.expected(&format!("expected '(' after {kind}'{name}'"));
        }
        let open = self.at;
        self.advance()?;
        // The wording of its errors, written only when one is reported.
        let plural = if arity == 1 { "" } else { "s" };
        let takes = || format!("'{name}' takes {arity} argument{plural}");
        let unclosed = || format!("unclosed '(' of '{name}'");
        let mut args = Vec::new();
        while self.tok != Tok::Punct(")") || !args.is_empty() {
            let (at, n) = (self.at, args.len() + 1);
            let arg = match &self.tok {
                Tok::Eof => return self.fail(open, unclosed()),
                Tok::Punct(")") => return self.fail(at, "expected argument after ','"),
                _ if args.len() >= arity => {
                    return self.fail(at, format!("too many arguments: {}", takes()))
                }
                Tok::Str(s) => Arg::Str(s.clone()),
                Tok::Regex(r) if name == "grep" && args.is_empty() => Arg::Regex(r.clone()),
                other => {
                    let msg = format!("argument {n} of '{name}' must be a string literal");
                    let found = match other {
                        Tok::Regex(_) => format!(" ({REGEX_PLACE})"),
                        other => format!(", found {}", other.describe()),
                    };
                    return self.fail(at, msg + &found);
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
                Tok::Eof => return self.fail(open, unclosed()),
                _ => return self.expected("expected ',' or ')' after argument"),
            }
        }
        if args.len() < arity {
            return self.fail(self.at, format!("{}, found {}", takes(), args.len()));
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
        if plainly_valid(pattern) {
            return Ok(());
        }
        // `utf8(false)`: the evaluator matches bytes, where `(?-u:\xFF)` is allowed.
        let mut syntax = regex_syntax::ParserBuilder::new().utf8(false).build();
        let Err(e) = syntax.parse(pattern) else {
            return Ok(());
        };
        let detail = e.to_string();
        let last = detail.lines().rev().map(str::trim).find(|l| !l.is_empty());
        let last = last.unwrap_or("invalid").trim_start_matches("error: ");
        let msg = format!("invalid regular expression {pattern:?}: {last}");
        self.fail(at, msg)
    }
}

/// Groups deeper than this are left to `regex_syntax`, whose nesting limit (250, counting
/// groups, repetitions and alternations) stays far away.
const PLAIN_DEPTH: usize = 32;

/// Whether `pattern` is built only of pieces every regular expression of this syntax accepts:
/// literal characters, escaped metacharacters, the Perl classes `\d \s \w` (and their
/// negations), `.`, `^`, `$`, plain groups `( … )` with `|` between alternatives, and a `*`,
/// `+` or `?` (itself optionally followed by `?`) right after a character, a class, `.` or a
/// group. Such a pattern needs no syntax tree to be known valid, and building one (an
/// allocation per character, twice) was most of the time a predicate's check took. It only
/// ever answers `true` for patterns `regex_syntax` accepts (a property test holds it to
/// that); anything else, valid or not, is left to `regex_syntax`, which also words the error.
fn plainly_valid(pattern: &str) -> bool {
    let mut depth = 0usize;
    // Whether the last piece may take a quantifier, and whether it was one.
    let (mut atom, mut quantified) = (false, false);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '*' | '+' | '?' => {
                if atom {
                    (atom, quantified) = (false, true);
                } else if c == '?' && quantified {
                    // The lazy form `*?`, `+?`, `??`: nothing may follow it unquantified.
                    quantified = false;
                } else {
                    return false;
                }
                continue;
            }
            '\\' => match chars.next() {
                Some(
                    '\\' | '.' | '+' | '*' | '?' | '(' | ')' | '|' | '[' | ']' | '{' | '}' | '^'
                    | '$' | '#' | '&' | '-' | '~' | 'd' | 's' | 'w' | 'D' | 'S' | 'W',
                ) => atom = true,
                _ => return false,
            },
            '(' => {
                // `(?` opens flags or a named group: left to `regex_syntax`.
                if depth == PLAIN_DEPTH || chars.clone().next() == Some('?') {
                    return false;
                }
                depth += 1;
                atom = false;
            }
            ')' => {
                if depth == 0 {
                    return false;
                }
                depth -= 1;
                atom = true;
            }
            '|' | '^' | '$' => atom = false,
            '[' | ']' | '{' | '}' => return false,
            _ => atom = true,
        }
        quantified = false;
    }
    depth == 0
}

#[cfg(test)]
mod tests {
    use super::plainly_valid;
    use proptest::prelude::*;

    fn accepted(pattern: &str) -> bool {
        regex_syntax::ParserBuilder::new()
            .utf8(false)
            .build()
            .parse(pattern)
            .is_ok()
    }

    #[test]
    fn the_usual_patterns_are_known_valid_without_a_syntax_tree() {
        for p in [
            r"unsafe\s*\{",
            r"fn parse_config\(",
            r"^(fix|feat|docs)\(parse\): ",
            r"TODO|FIXME",
            r"a.b+?c??$",
            r"(a(b)*)+",
            "é ü",
            "",
        ] {
            assert!(plainly_valid(p), "{p}");
            assert!(accepted(p), "{p}");
        }
        for p in [
            r"a{2}", r"[a-z]", r"(?i)x", r"\pL", r"*a", r"a**", r"(a", r"a)", r"\",
        ] {
            assert!(!plainly_valid(p), "{p}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20000))]
        /// The shortcut never calls a pattern valid that `regex_syntax` refuses.
        #[test]
        fn what_is_plainly_valid_regex_syntax_accepts(
            pieces in proptest::collection::vec(proptest::sample::select(vec![
                "a", "b", "é", " ", "\\", ".", "+", "*", "?", "(", ")", "|", "[", "]", "{", "}",
                "^", "$", "s", "d", "w", "S", "D", "W", "p", "x", "#", "&", "-", "~", "1", ",",
                ":", "n", "\n", "\\s", "\\(", "\\)", "\\{", "\\&", "\\-", "\\~", "\\#",
                "\\d", "\\W", "\\.", "\\\\", "\\|", "\\^", "\\$", "\\[", "\\]", "*?", "(a)",
                "()", "(|)", "\\n", "\\pL", "\\b", "(?", "?:", "{2}",
            ]), 0..16)
        ) {
            let pattern: String = pieces.concat();
            if plainly_valid(&pattern) {
                prop_assert!(accepted(&pattern), "{:?}", pattern);
            }
        }

        /// Deep groups: the shortcut stops well before `regex_syntax`'s nesting limit.
        #[test]
        fn nesting_is_left_to_regex_syntax_when_deep(depth in 0usize..300, star in any::<bool>()) {
            let q = if star { "*" } else { "" };
            let pattern = format!("{}a{}", "(".repeat(depth), format!("){q}").repeat(depth));
            if plainly_valid(&pattern) {
                prop_assert!(accepted(&pattern), "{}", depth);
            }
        }
    }
}
