//! What elench writes carries no terminal control: escapes and carriage returns are
//! stripped from JSON strings, and text for a terminal keeps colour only where asked.

use serde_json::Value;

/// The value with every string stripped of terminal escape sequences and carriage returns
/// (a message from git, a claim's text): JSON carries no terminal control, ever.
pub fn sanitized(mut v: Value) -> Value {
    sanitize(&mut v);
    v
}

fn sanitize(v: &mut Value) {
    match v {
        Value::String(s) if s.contains(['\u{1b}', '\r', '\u{9b}']) => {
            *s = strip_escapes(s);
        }
        Value::Array(a) => a.iter_mut().for_each(sanitize),
        Value::Object(m) => {
            // Keys are elench's own or come from signed claims; the same rule applies.
            if m.keys().any(|k| k.contains(['\u{1b}', '\r', '\u{9b}'])) {
                let taken = std::mem::take(m);
                for (k, mut val) in taken {
                    sanitize(&mut val);
                    m.insert(strip_escapes(&k), val);
                }
            } else {
                m.values_mut().for_each(sanitize);
            }
        }
        _ => {}
    }
}

/// Removes CSI (`ESC [ … final`, and the one-character CSI), OSC (`ESC ] … BEL or ESC \`),
/// other two-character escapes, and carriage returns.
pub fn strip_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {}
            '\u{9b}' => skip_csi(&mut chars),
            '\u{1b}' => match chars.next() {
                Some('[') => skip_csi(&mut chars),
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                            chars.next();
                            break;
                        }
                    }
                }
                _ => {}
            },
            c => out.push(c),
        }
    }
    out
}

/// Text as it may reach a terminal or a CI log: every terminal escape sequence removed whole
/// (CSI, OSC and the other string sequences, two-character escapes, their one-character C1
/// forms), then every other control character (C0 but line feed and tab, DEL, C1). With
/// `keep_colour`, the colour sequences elench paints with (`ESC [ digits;… m`) stay and
/// nothing else does. Claim texts, file names and messages from other programs are shown to
/// people through this, so no text can set a window title, clear the screen, move the
/// cursor or ring the bell.
pub fn terminal_safe(s: &str, keep_colour: bool) -> String {
    if !s.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' => out.push(c),
            '\u{1b}' => match chars.peek().copied() {
                Some('[') => {
                    chars.next();
                    let seq = take_csi(&mut chars);
                    if keep_colour && is_colour(&seq) {
                        out.push_str("\u{1b}[");
                        out.push_str(&seq);
                    }
                }
                // OSC, DCS, SOS, PM, APC: a string ended by BEL or ST.
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    chars.next();
                    skip_string(&mut chars);
                }
                // A two-character escape (or a lone ESC at the end).
                Some(_) => {
                    chars.next();
                }
                None => {}
            },
            '\u{9b}' => {
                take_csi(&mut chars);
            }
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// The rest of a CSI sequence after its introducer: parameter and intermediate bytes, then
/// the final byte when there is one (a malformed sequence ends where it stops being one).
fn take_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> String {
    let mut seq = String::new();
    while let Some(&c) = chars.peek() {
        if ('\u{20}'..='\u{3f}').contains(&c) {
            seq.push(c);
            chars.next();
        } else {
            if ('@'..='~').contains(&c) {
                seq.push(c);
                chars.next();
            }
            break;
        }
    }
    seq
}

/// Whether a CSI sequence (after `ESC [`) only sets colours: digits and `;`, then `m`.
fn is_colour(seq: &str) -> bool {
    seq.strip_suffix('m')
        .is_some_and(|p| p.chars().all(|c| c.is_ascii_digit() || c == ';'))
}

/// Skips a string sequence up to and including its end: BEL, `ESC \\` or the C1 ST.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => return,
            '\u{1b}' => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                return;
            }
            _ => {}
        }
    }
}

fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    // Parameter and intermediate bytes, then one final byte in @..~.
    for c in chars.by_ref() {
        if ('@'..='~').contains(&c) {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escapes_and_carriage_returns_are_stripped() {
        assert_eq!(
            strip_escapes("\u{1b}[31;1mred\u{1b}[0m and\r\n\u{1b}]0;title\u{7}done\u{9b}2Kx"),
            "red and\ndonex"
        );
        assert_eq!(strip_escapes("\u{1b}]8;;http://x\u{1b}\\link"), "link");
        let v = sanitized(json!({"a": ["\u{1b}[1mb"], "\u{1b}[2mk": 1}));
        assert_eq!(v, json!({"a": ["b"], "k": 1}));
    }
}
