//! How the MCP server names what the library's messages mention by what it is
//! (`ops::error::Param`): a tool call's field where the call has one (`limit`), the server's
//! own start option where the server fixed it (its tree, key and wait), and advice to run a
//! command line as that command line spells it.

use elench::ops::error::{word, word_json, Named, Param};
use serde_json::Value;

/// An option of elench's command line, as it spells it.
fn option(p: Param) -> String {
    format!("--{}", p.name().replace('_', "-"))
}

pub fn say(n: Named) -> String {
    match n {
        Named::Advice(p) => option(p),
        Named::Input(p) => match p {
            Param::Limit
            | Param::Cursor
            | Param::All
            | Param::Timeout
            | Param::Repeat
            | Param::Force
            | Param::Anchor
            | Param::Id => p.name().to_owned(),
            Param::Batch => "claims".to_owned(),
            Param::Path => "paths".to_owned(),
            // Fixed when the server started, never by a call.
            Param::At => "the server's tree".to_owned(),
            Param::Key | Param::Wait | Param::Store | Param::Trust => {
                format!("the server's {}", option(p))
            }
            // Inputs no tool takes: the command line's options.
            other => option(other),
        },
    }
}

/// `text` as the server says it.
pub fn text(text: &str) -> String {
    word(text, &say)
}

/// Every string of `v` as the server says it.
pub fn json(mut v: Value) -> Value {
    word_json(&mut v, &say);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_fields_and_advice_is_a_command_line() {
        assert_eq!(
            text("‹limit› must be between 1 and 1000; `elench status ‹-all›`"),
            "limit must be between 1 and 1000; `elench status --all`"
        );
    }
}
