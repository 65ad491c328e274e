//! How the command line names what the library's messages mention by what it is
//! (`ops::error::Param`, written `‹limit›` or `‹-limit›` there): as its options, `--limit`.
//! Every failure, warning and reason the CLI shows passes through here on its way out.

use elench::ops::error::{word, word_json, Named, Param};
use serde_json::Value;

/// The option of the command line that gives `p` (the claim ids: the positional `<ID>`).
pub fn flag(p: Param) -> String {
    match p {
        Param::Id => "<ID>".to_owned(),
        p => format!("--{}", p.name().replace('_', "-")),
    }
}

/// An input of the request and an option in advice are both options here.
pub fn say(n: Named) -> String {
    match n {
        Named::Input(p) | Named::Advice(p) => flag(p),
    }
}

/// `text` as the command line says it.
pub fn text(text: &str) -> String {
    word(text, &say)
}

/// Every string of `v` as the command line says it.
pub fn json(mut v: Value) -> Value {
    word_json(&mut v, &say);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_worded_with_options() {
        assert_eq!(
            text("‹limit› must be 1 or more; see `elench status ‹-all›` and ‹Nope›"),
            "--limit must be 1 or more; see `elench status --all` and ‹Nope›"
        );
        assert_eq!(text("‹command_timeout› ‹"), "--command-timeout ‹");
    }
}
