//! C2SP tlog-policy files: which logs, which witnesses (each with its cosignature vkey and,
//! for submitting, its URL), groups of them with thresholds, and the quorum a checkpoint's
//! cosignatures must meet.
//!
//! The file is read as octets: only tab, newline and 0x20..=0x7E or bytes with the high bit
//! set may appear; names are compared as octets; a `#` line is a comment. A group may only
//! name witnesses and groups defined above it, each at most once; `none` names the quorum
//! that asks for no cosignature and can be no group's member.

use super::note::{KeyType, Vkey};
use std::collections::HashSet;

/// The most logs, witnesses or groups a policy may define.
pub const MAX_ENTRIES: usize = 256;
/// The most bytes a policy file may have.
pub const MAX_POLICY_BYTES: usize = 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyLog {
    pub vkey: Vkey,
    pub url: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyWitness {
    /// The witness's name in the policy (octets; not its key's name).
    pub name: Vec<u8>,
    pub vkey: Vkey,
    pub url: Option<String>,
}

impl PolicyWitness {
    /// The policy name, for messages.
    pub fn display_name(&self) -> String {
        String::from_utf8_lossy(&self.name).into_owned()
    }
}

/// A witness or an earlier group, as a group's member or the quorum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Member {
    Witness(usize),
    Group(usize),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub name: Vec<u8>,
    /// How many members must have witnessed (1..=members.len()).
    pub threshold: usize,
    pub members: Vec<Member>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub logs: Vec<PolicyLog>,
    pub witnesses: Vec<PolicyWitness>,
    pub groups: Vec<Group>,
    /// `None`: `quorum none`, no cosignature asked.
    pub quorum: Option<Member>,
}

/// Why a policy file was refused: the line (1-based) and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct PolicyError {
    pub line: usize,
    pub message: String,
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn utf8<'a>(b: &'a [u8], what: &str) -> Result<&'a str, String> {
    std::str::from_utf8(b).map_err(|_| format!("{what} {:?} is not UTF-8", text(b)))
}

impl Policy {
    pub fn parse(bytes: &[u8]) -> Result<Policy, PolicyError> {
        if bytes.len() > MAX_POLICY_BYTES {
            return Err(PolicyError {
                line: 0,
                message: format!("{} bytes, more than {MAX_POLICY_BYTES}", bytes.len()),
            });
        }
        let mut p = Policy {
            logs: Vec::new(),
            witnesses: Vec::new(),
            groups: Vec::new(),
            quorum: None,
        };
        let mut quorum_seen = false;
        let mut names: HashSet<Vec<u8>> = HashSet::new();
        let mut lines = bytes.split(|&b| b == b'\n').enumerate().peekable();
        while let Some((i, line)) = lines.next() {
            let at = |message: String| PolicyError {
                line: i + 1,
                message,
            };
            // A file ending in a newline leaves an empty piece after it.
            if line.is_empty() && lines.peek().is_none() {
                break;
            }
            if let Some(b) = line
                .iter()
                .find(|&&b| (b < 0x20 && b != b'\t') || b == 0x7f)
            {
                return Err(at(format!("control character 0x{b:02x}")));
            }
            let words: Vec<&[u8]> = line
                .split(|&b| b == b' ' || b == b'\t')
                .filter(|w| !w.is_empty())
                .collect();
            let Some(first) = words.first() else { continue };
            if first.starts_with(b"#") {
                continue;
            }
            match *first {
                b"log" => {
                    if !(2..=3).contains(&words.len()) {
                        return Err(at("expected `log <vkey> [<url>]`".into()));
                    }
                    let vkey = read_vkey(words[1], KeyType::Ed25519).map_err(at)?;
                    if p.logs.iter().any(|l| l.vkey.key == vkey.key) {
                        return Err(at(format!("log {} is listed twice", vkey.name)));
                    }
                    let url = words
                        .get(2)
                        .map(|u| utf8(u, "URL"))
                        .transpose()
                        .map_err(at)?;
                    p.logs.push(PolicyLog {
                        vkey,
                        url: url.map(str::to_owned),
                    });
                    if p.logs.len() > MAX_ENTRIES {
                        return Err(at(format!("more than {MAX_ENTRIES} logs")));
                    }
                }
                b"witness" => {
                    if !(3..=4).contains(&words.len()) {
                        return Err(at("expected `witness <name> <vkey> [<url>]`".into()));
                    }
                    let name = words[1].to_vec();
                    define(&mut names, &name).map_err(at)?;
                    let vkey = read_vkey(words[2], KeyType::Cosignature).map_err(at)?;
                    if p.witnesses.iter().any(|w| w.vkey.key == vkey.key) {
                        return Err(at(format!(
                            "witness {}: its key is already another witness's",
                            text(&name)
                        )));
                    }
                    let url = words
                        .get(3)
                        .map(|u| utf8(u, "URL"))
                        .transpose()
                        .map_err(at)?;
                    p.witnesses.push(PolicyWitness {
                        name,
                        vkey,
                        url: url.map(str::to_owned),
                    });
                    if p.witnesses.len() > MAX_ENTRIES {
                        return Err(at(format!("more than {MAX_ENTRIES} witnesses")));
                    }
                }
                b"group" => {
                    if words.len() < 4 {
                        return Err(at(
                            "expected `group <name> all|any|<k> <name>...` with one member at least"
                                .into(),
                        ));
                    }
                    let name = words[1].to_vec();
                    let mut members = Vec::new();
                    for w in &words[3..] {
                        let m = p.lookup(w).map_err(at)?;
                        if members.contains(&m) {
                            return Err(at(format!("{} is a member twice", text(w))));
                        }
                        members.push(m);
                    }
                    let n = members.len();
                    let threshold = match words[2] {
                        b"all" => n,
                        b"any" => 1,
                        k => {
                            let k = std::str::from_utf8(k)
                                .ok()
                                .filter(|k| k.bytes().all(|b| b.is_ascii_digit()))
                                .and_then(|k| k.parse::<usize>().ok())
                                .ok_or_else(|| {
                                    at(format!(
                                        "threshold {:?} is not all, any or a number",
                                        text(k)
                                    ))
                                })?;
                            if k < 1 || k > n {
                                return Err(at(format!(
                                    "threshold {k} is not between 1 and the {n} members"
                                )));
                            }
                            k
                        }
                    };
                    define(&mut names, &name).map_err(at)?;
                    p.groups.push(Group {
                        name,
                        threshold,
                        members,
                    });
                    if p.groups.len() > MAX_ENTRIES {
                        return Err(at(format!("more than {MAX_ENTRIES} groups")));
                    }
                }
                b"quorum" => {
                    if words.len() != 2 {
                        return Err(at("expected `quorum <name>`".into()));
                    }
                    if quorum_seen {
                        return Err(at("a second quorum line".into()));
                    }
                    quorum_seen = true;
                    p.quorum = if words[1] == b"none" {
                        None
                    } else {
                        Some(p.lookup(words[1]).map_err(at)?)
                    };
                }
                other => {
                    return Err(at(format!(
                        "unknown line {:?}; expected log, witness, group or quorum",
                        text(other)
                    )))
                }
            }
        }
        if !quorum_seen {
            return Err(PolicyError {
                line: 0,
                message: "no quorum line".into(),
            });
        }
        Ok(p)
    }

    /// A name defined on a line above, as a member.
    fn lookup(&self, name: &[u8]) -> Result<Member, String> {
        if name == b"none" {
            return Err("`none` cannot be a group member".into());
        }
        if let Some(i) = self.witnesses.iter().position(|w| w.name == name) {
            return Ok(Member::Witness(i));
        }
        if let Some(i) = self.groups.iter().position(|g| g.name == name) {
            return Ok(Member::Group(i));
        }
        Err(format!("{} is not defined above", text(name)))
    }

    /// Whether the witnesses for which `cosigned(i)` holds (index into `witnesses`) meet
    /// the quorum.
    pub fn satisfied(&self, cosigned: impl Fn(usize) -> bool) -> bool {
        let witnessed: Vec<bool> = (0..self.witnesses.len()).map(&cosigned).collect();
        let mut groups: Vec<bool> = Vec::with_capacity(self.groups.len());
        let holds = |m: &Member, groups: &[bool]| match *m {
            Member::Witness(i) => witnessed[i],
            Member::Group(i) => groups[i],
        };
        for g in &self.groups {
            let n = g.members.iter().filter(|m| holds(m, &groups)).count();
            groups.push(n >= g.threshold);
        }
        match &self.quorum {
            None => true,
            Some(m) => holds(m, &groups),
        }
    }

    /// Whether the policy asks for any cosignature at all.
    pub fn wants_witnesses(&self) -> bool {
        self.quorum.is_some()
    }

    /// The log line whose key name is `origin`.
    pub fn log_for(&self, origin: &str) -> Option<&PolicyLog> {
        self.logs.iter().find(|l| l.vkey.name == origin)
    }
}

fn define(names: &mut HashSet<Vec<u8>>, name: &[u8]) -> Result<(), String> {
    if name == b"none" {
        return Err("`none` is predefined and cannot be defined".into());
    }
    if !names.insert(name.to_vec()) {
        return Err(format!("{} is defined twice", text(name)));
    }
    Ok(())
}

fn read_vkey(word: &[u8], want: KeyType) -> Result<Vkey, String> {
    let s = utf8(word, "vkey")?;
    let v = Vkey::parse(s).map_err(|e| e.to_string())?;
    if v.kind != want {
        return Err(match want {
            KeyType::Ed25519 => format!(
                "log {}: a log's vkey is an Ed25519 note key (type 0x01)",
                v.name
            ),
            KeyType::Cosignature => format!(
                "witness key {}: a witness's vkey is an Ed25519 cosignature key (type 0x04)",
                v.name
            ),
        });
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::witness::note::tests::key;

    fn wkey(seed: u8, name: &str) -> String {
        Vkey::new(name, KeyType::Cosignature, key(seed).verifying_key())
            .unwrap()
            .to_string()
    }

    /// tlog-policy.md, "Example policy", with real keys in place of `<vkey>`.
    fn example() -> String {
        let log = Vkey::new("example.com/log", KeyType::Ed25519, key(1).verifying_key()).unwrap();
        format!(
            "log {log}\n\n\
             witness X1 {}\nwitness X2 {}\nwitness X3 {}\n\
             group X-witnesses 2 X1 X2 X3\n\n\
             witness Y1 {}\nwitness Y2 {}\nwitness Y3 {}\n\
             group Y-witnesses any Y1 Y2 Y3\n\n\
             group X-and-Y all X-witnesses Y-witnesses\n\
             quorum X-and-Y\n",
            wkey(11, "x1.example"),
            wkey(12, "x2.example"),
            wkey(13, "x3.example"),
            wkey(21, "y1.example"),
            wkey(22, "y2.example"),
            wkey(23, "y3.example"),
        )
    }

    #[test]
    fn the_example_policy_asks_two_x_witnesses_and_one_y_witness() {
        let p = Policy::parse(example().as_bytes()).unwrap();
        assert_eq!(p.logs.len(), 1);
        assert_eq!(p.witnesses.len(), 6);
        assert_eq!(p.groups.len(), 3);
        assert_eq!(p.groups[0].threshold, 2);
        assert_eq!(p.groups[1].threshold, 1);
        assert_eq!(p.groups[2].threshold, 2);
        assert!(p.log_for("example.com/log").is_some());
        let with =
            |set: &[&str]| p.satisfied(|i| set.contains(&p.witnesses[i].display_name().as_str()));
        assert!(with(&["X1", "X2", "Y3"]));
        assert!(with(&["X1", "X2", "X3", "Y1", "Y2"]));
        assert!(!with(&["X1", "Y1", "Y2", "Y3"]));
        assert!(!with(&["X1", "X2", "X3"]));
        assert!(!with(&[]));
    }

    #[test]
    fn quorum_none_asks_nothing_and_one_witness_asks_it() {
        let p = Policy::parse(b"# no witnesses\nquorum none\n").unwrap();
        assert!(!p.wants_witnesses());
        assert!(p.satisfied(|_| false));
        let one = format!("witness W {}\n\t quorum\tW  \n", wkey(5, "w.example"));
        let p = Policy::parse(one.as_bytes()).unwrap();
        assert!(p.satisfied(|_| true));
        assert!(!p.satisfied(|_| false));
    }

    #[test]
    fn malformed_policies_are_refused_with_their_line() {
        let w =
            |n: &str, seed: u8| format!("witness {n} {}\n", wkey(seed, &format!("{n}.example")));
        let log = Vkey::new("l.example", KeyType::Ed25519, key(1).verifying_key()).unwrap();
        let cases: Vec<(String, usize)> = vec![
            (String::new(), 0),
            (format!("{}{}quorum A\nquorum A\n", w("A", 1), w("B", 2)), 4),
            (format!("quorum A\n{}", w("A", 1)), 1),
            (format!("{}group G 1 A A\nquorum G\n", w("A", 1)), 2),
            (format!("{}group G 2 A\nquorum G\n", w("A", 1)), 2),
            (format!("{}group G 0 A\nquorum G\n", w("A", 1)), 2),
            (format!("{}group G\nquorum G\n", w("A", 1)), 2),
            (format!("{}group G any A none\nquorum G\n", w("A", 1)), 2),
            (format!("{}{}quorum A\n", w("A", 1), w("A", 2)), 2),
            (format!("{}{}quorum A\n", w("A", 1), w("B", 1)), 2),
            (format!("{}group A any A\nquorum A\n", w("A", 1)), 2),
            (format!("{}quorum A\n", w("none", 1)), 1),
            (format!("witness A {log}\nquorum A\n"), 1),
            (format!("log {}\nquorum none\n", wkey(1, "l.example")), 1),
            (format!("log {log}\nlog {log}\nquorum none\n"), 2),
            (format!("{}quorum A\r\n", w("A", 1)), 2),
            ("frobnicate\nquorum none\n".into(), 1),
            ("witness A\nquorum none\n".into(), 1),
            ("witness A x+00000000+AA==\nquorum none\n".into(), 1),
        ];
        for (text, line) in cases {
            let e = Policy::parse(text.as_bytes()).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
        }
    }

    #[test]
    fn names_are_octets_and_high_bytes_pass() {
        // "K" and the Kelvin sign are two names.
        let text = format!(
            "# caf\u{e9}\nwitness K {}\nwitness \u{212a} {}\ngroup G all K \u{212a}\nquorum G\n",
            wkey(1, "a.example"),
            wkey(2, "b.example")
        );
        let p = Policy::parse(text.as_bytes()).unwrap();
        assert!(!p.satisfied(|i| i == 0));
        assert!(p.satisfied(|_| true));
        let mut raw = b"# \xff\xfe\n".to_vec();
        raw.extend_from_slice(b"quorum none\n");
        assert!(Policy::parse(&raw).is_ok());
    }
}
