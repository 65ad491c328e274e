//! The predicate parser through its public API: accepted forms, every error with its
//! position, limits, and round trips of generated syntax trees.

use elench::claim::predicate::*;
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
    // Only `(` recurses, at most MAX_DEPTH times, and each level costs about 3 KiB of stack
    // in an unoptimised build (256 levels needed 768 KiB when measured): 1 MiB, half what a
    // spawned thread gets by default, holds every shape of maximal or excessive nesting.
    let handle = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(|| {
            let half = MAX_DEPTH / 2;
            let fits = [
                format!("{}true{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH)),
                format!("{}true{}", "!(".repeat(half), ")".repeat(half)),
                format!(
                    "{}true{}",
                    "true == (".repeat(MAX_DEPTH),
                    ")".repeat(MAX_DEPTH)
                ),
            ];
            let too_deep = [
                "(".repeat(100_000),
                "!".repeat(100_000),
                "!(".repeat(100_000),
            ];
            fits.iter().all(|src| parse(src).is_ok())
                && too_deep.iter().all(|src| parse(src).is_err())
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
