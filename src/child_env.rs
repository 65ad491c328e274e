//! What the environment of every process elench starts (git, `check`'s runners and the
//! commands a predicate runs) says about people: there is no pager to page through, no
//! editor to type into, no colour to read, so no child can wait for a person who is not
//! there (the CLI Agent Spec's pager, editor and colour rules).

/// Pagers: `cat`, or told to quit at once. Set always: elench never pages its own output
/// either.
pub const NO_PAGER: [(&str, &str); 5] = [
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("MANPAGER", "cat"),
    ("LESS", "-F -X -R"),
    ("MORE", ""),
];

/// Editors: `true`, which exits at once with success; and git never asks for credentials.
/// Set when no person is at a terminal.
pub const NO_PROMPT: [(&str, &str); 4] = [
    ("EDITOR", "true"),
    ("VISUAL", "true"),
    ("GIT_EDITOR", "true"),
    ("GIT_TERMINAL_PROMPT", "0"),
];

/// Sets these in this process's environment, which every child inherits: the pagers always,
/// the editors and git's prompt unless a person is at a terminal (`interactive`), and
/// `NO_COLOR=1` when the environment forbids colour. Call before any other thread starts.
pub fn harden(interactive: bool, colour_off: bool) {
    for (k, v) in NO_PAGER {
        std::env::set_var(k, v);
    }
    if !interactive {
        for (k, v) in NO_PROMPT {
            std::env::set_var(k, v);
        }
    }
    if colour_off {
        std::env::set_var("NO_COLOR", "1");
    }
}

/// The same settings for a process that runs without a terminal and with a cleared
/// environment (`check`'s sandbox): all of them.
pub fn for_sandbox() -> Vec<(String, String)> {
    NO_PAGER
        .iter()
        .chain(NO_PROMPT.iter())
        .chain([("NO_COLOR", "1")].iter())
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}
