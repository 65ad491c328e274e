//! Equivalence of the recursive-descent predicate parser with the explicit-stack parser it
//! replaced (kept as a reference under `tests/predicate_props/`): on generated sources,
//! well-typed, ill-typed and mutated, both must return the same syntax tree or the same
//! error (message, offset, line, column).
//!
//! Each property runs `PREDICATE_EQUIV_CASES` cases (default 5,000, so `cargo test` stays
//! quick); the full run is `PREDICATE_EQUIV_CASES=30000 cargo test --test it predicate_props::`.

#[path = "predicate_props/reference.rs"]
mod reference;

use elench::claim::predicate::{parse, MAX_DEPTH, MAX_REGEXES, MAX_REGEX_BYTES};
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("PREDICATE_EQUIV_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5000)
}

fn same(src: &str) -> Result<(), TestCaseError> {
    let new = parse(src);
    let old = reference::parse(src);
    prop_assert_eq!(&new, &old, "source: {:?}", src);
    Ok(())
}

/// Deterministic source generator (xorshift64*), seeded by proptest: sources follow the
/// grammar and mostly the types, with a small chance of a wrong type, a bad literal or a
/// limit reached at every choice.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    fn ws(&mut self, out: &mut String) {
        out.push_str(self.pick(&["", "", "", " ", " ", "\n", "\t", "\r\n", "  "]));
    }

    fn int(&mut self, out: &mut String) {
        let v = match self.below(6) {
            0 => "9223372036854775807".to_string(),
            1 if self.one_in(3) => "9223372036854775808".to_string(),
            1 => "99999999999999999999".to_string(),
            2 => "007".to_string(),
            _ => (self.next() >> (1 + self.below(63))).to_string(),
        };
        out.push_str(&v);
    }

    fn string(&mut self, out: &mut String) {
        out.push('"');
        for _ in 0..self.below(6) {
            let piece = if self.one_in(25) {
                self.pick(&["\\q", "\\u0041", "\t", "\n", "\u{7f}", "\\"])
            } else {
                self.pick(&[
                    "a", "Z", " ", "é", "✓", "/", "\\\"", "\\\\", "\\n", "\\t", "ok",
                ])
            };
            out.push_str(piece);
        }
        if !self.one_in(40) {
            out.push('"');
        }
    }

    /// The text of a regular expression, usually valid.
    fn pattern(&mut self) -> String {
        if self.one_in(30) {
            return "a".repeat(MAX_REGEX_BYTES + self.below(2));
        }
        let mut p = String::new();
        for _ in 0..1 + self.below(4) {
            p.push_str(if self.one_in(20) {
                self.pick(&["(", "[", "\\p{Nope}", "a{2,1}", "*", "\\"])
            } else {
                self.pick(&[
                    "a",
                    "\\d+",
                    "\\s*",
                    "[a-z]",
                    "(x|y)",
                    "é",
                    ".",
                    "^",
                    "$",
                    "(?-u:\\xFF)",
                ])
            });
        }
        p
    }

    fn regex_literal(&mut self, out: &mut String) {
        if self.one_in(40) {
            out.push_str(self.pick(&["//", "/a", "/a\\/b/", "/\t/", "/a\\\n/"]));
            return;
        }
        out.push('/');
        out.push_str(&self.pattern().replace('/', "\\/"));
        out.push('/');
    }

    fn regex_string(&mut self, out: &mut String) {
        let p = self.pattern();
        out.push('"');
        out.push_str(&p.replace('\\', "\\\\").replace('"', "\\\""));
        out.push('"');
    }

    fn call(&mut self, func: &str, out: &mut String) {
        out.push_str(func);
        self.ws(out);
        out.push('(');
        let arity = if func == "grep" { 2 } else { 1 };
        let n = if self.one_in(20) {
            self.below(4)
        } else {
            arity
        };
        for i in 0..n {
            if i > 0 {
                out.push(',');
            }
            self.ws(out);
            match self.below(30) {
                0 => self.int(out),
                1 => out.push_str("true"),
                _ if func == "grep" && i == 0 && !self.one_in(3) => self.regex_literal(out),
                2 => self.regex_literal(out),
                _ => self.string(out),
            }
            self.ws(out);
        }
        out.push(')');
    }

    /// A term of the given type: "b" Bool, "i" Int, "s" Str, or a result ("t", "r").
    fn term(&mut self, ty: &str, depth: u32, out: &mut String) {
        let ty = if self.one_in(25) {
            self.pick(&["b", "i", "s", "t", "r"])
        } else {
            ty
        };
        if depth > 0 && self.one_in(6) {
            out.push('(');
            self.ws(out);
            self.typed(ty, depth - 1, out);
            self.ws(out);
            if !self.one_in(50) {
                out.push(')');
            }
            return;
        }
        match ty {
            "b" => match self.below(6) {
                0 => out.push_str(self.pick(&["true", "false"])),
                1 => self.call("exists", out),
                2 => {
                    self.call("test", out);
                    self.member("passed", out);
                }
                3 => {
                    self.term("s", depth, out);
                    self.member("contains", out);
                    self.ws(out);
                    self.string(out);
                    out.push(')');
                }
                _ => {
                    self.term("s", depth, out);
                    self.member("matches", out);
                    self.regex_string(out);
                    out.push(')');
                }
            },
            "i" => match self.below(3) {
                0 => self.int(out),
                1 => self.call("grep", out),
                _ => {
                    self.call("run", out);
                    self.member("exit", out);
                }
            },
            "s" => {
                if self.one_in(2) {
                    self.string(out);
                } else {
                    self.call("run", out);
                    self.member("stdout", out);
                }
            }
            "t" => self.call("test", out),
            _ => self.call("run", out),
        }
    }

    /// `.name`, or `.name(` for a method (the caller writes the argument and `)`); now and
    /// then a wrong or unknown name.
    fn member(&mut self, name: &str, out: &mut String) {
        self.ws(out);
        out.push('.');
        if self.one_in(30) {
            out.push_str(self.pick(&["passed", "exit", "stdout", "contains", "matches", "len"]));
        } else {
            out.push_str(name);
        }
        if name == "contains" || name == "matches" {
            out.push('(');
        } else if self.one_in(40) {
            out.push_str("()");
        }
    }

    /// An expression of type `ty` built from the grammar's rules.
    fn typed(&mut self, ty: &str, depth: u32, out: &mut String) {
        if ty != "b" || depth == 0 {
            return self.term(ty, depth, out);
        }
        match self.below(7) {
            0 | 1 => {
                let op = if self.one_in(2) { "&&" } else { "||" };
                for i in 0..2 + self.below(3) {
                    if i > 0 {
                        self.ws(out);
                        out.push_str(op);
                        self.ws(out);
                    }
                    self.typed("b", depth - 1, out);
                }
            }
            2 => {
                for _ in 0..1 + self.below(3) {
                    out.push('!');
                    self.ws(out);
                }
                self.typed("b", depth - 1, out);
            }
            3 | 4 => {
                let (ops, ty): (&[&str], _) = match self.below(3) {
                    0 => (&["==", "!=", ">=", "<=", ">", "<"], "i"),
                    1 => (&["==", "!="], "s"),
                    _ => (&["==", "!="], "b"),
                };
                self.term(ty, depth - 1, out);
                self.ws(out);
                out.push_str(self.pick(ops));
                self.ws(out);
                self.term(ty, depth - 1, out);
                if self.one_in(30) {
                    out.push_str(" < 3");
                }
            }
            _ => self.term("b", depth, out),
        }
    }

    /// A whole source, occasionally at or past a limit.
    fn source(&mut self) -> String {
        let mut out = String::new();
        self.ws(&mut out);
        match self.below(40) {
            0 => {
                let n = MAX_DEPTH - 2 + self.below(4);
                let prefix = self.pick(&["(", "!", "!("]);
                out.push_str(&prefix.repeat(n));
                out.push_str("true");
                out.push_str(&")".repeat(if prefix == "!" { 0 } else { n }));
            }
            1 => {
                let n = MAX_REGEXES - 1 + self.below(3);
                for i in 0..n {
                    if i > 0 {
                        out.push_str(" && ");
                    }
                    if self.one_in(2) {
                        out.push_str("run(\"x\").stdout.matches(");
                        self.regex_string(&mut out);
                        out.push(')');
                    } else {
                        out.push_str("grep(");
                        self.regex_literal(&mut out);
                        out.push_str(", \"x\") > 0");
                    }
                }
            }
            _ => {
                let ty = if self.one_in(15) {
                    self.pick(&["i", "s", "t", "r"])
                } else {
                    "b"
                };
                let depth = 1 + self.below(4) as u32;
                self.typed(ty, depth, &mut out);
            }
        }
        self.ws(&mut out);
        out
    }

    /// Applies one to three random edits: delete, insert or replace characters or a
    /// token, duplicate a slice, or truncate.
    fn mutate(&mut self, src: &str) -> String {
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
            "42",
            "9223372036854775808",
            "\"a\"",
            "\"",
            "/",
            "/a/",
            "//",
            "\r",
            "_a1",
            "1a",
            "\\",
            " ",
            "\n",
            "é",
            "\u{a0}",
            "\u{0}",
        ];
        let mut chars: Vec<char> = src.chars().collect();
        for _ in 0..1 + self.below(3) {
            let at = self.below(chars.len() + 1);
            match self.below(6) {
                0 if at < chars.len() => {
                    chars.remove(at);
                }
                1 => {
                    let end = (at + 1 + self.below(6)).min(chars.len());
                    chars.drain(at.min(end)..end);
                }
                2 => {
                    let tok = self.pick(TOKENS);
                    chars.splice(at..at, tok.chars());
                }
                3 if at < chars.len() => {
                    chars[at] = self.pick(&['(', ')', '!', '"', '/', '.', '&', '|', 'x', '1', ' ']);
                }
                4 => {
                    let end = (at + 1 + self.below(8)).min(chars.len());
                    let slice: Vec<char> = chars[at.min(end)..end].to_vec();
                    chars.splice(at..at, slice);
                }
                _ => chars.truncate(at),
            }
        }
        chars.into_iter().collect()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn generated_sources_parse_alike(seed in any::<u64>()) {
        let src = Gen(seed | 1).source();
        same(&src)?;
    }

    #[test]
    fn mutated_sources_parse_alike(seed in any::<u64>()) {
        let mut gen = Gen(seed | 1);
        let src = gen.source();
        let mutant = gen.mutate(&src);
        same(&mutant)?;
    }

    #[test]
    fn twice_mutated_sources_parse_alike(seed in any::<u64>()) {
        let mut gen = Gen(seed | 1);
        let src = gen.source();
        let once = gen.mutate(&src);
        same(&gen.mutate(&once))?;
    }

    #[test]
    fn arbitrary_strings_parse_alike(src in "[ -~\\t\\né✓]{0,40}") {
        same(&src)?;
    }
}

/// Pathological nesting: neither parser overflows its stack, and both stop at the same
/// place with the same error.
#[test]
fn deep_nesting_parses_alike() {
    for prefix in ["(", "!", "!(", "(!"] {
        for n in [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 100_000] {
            let src = format!("{}true{}", prefix.repeat(n), ")".repeat(n));
            assert_eq!(parse(&src), reference::parse(&src), "{prefix} x {n}");
            let open = prefix.repeat(n);
            assert_eq!(
                parse(&open),
                reference::parse(&open),
                "{prefix} x {n}, unclosed"
            );
        }
    }
}
