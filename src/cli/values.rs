//! Argument values that parse themselves (clap value parsers): what a value must look like
//! is said once, where the argument is defined (`value_parser = …`), and nowhere else. clap
//! refuses a line whose value one of them refuses; [`crate::cli::args`] then reports every
//! error of the line, each value judged by its own argument's parser.
//!
//! A parser that refuses a value says so with a [`Refused`]: elench's own message for the
//! value (a claim id, a keyid, a limit out of range), or, where clap's wording has always
//! been used (a number that is no number), the problem for clap to wrap in its
//! "invalid value 'V' for 'ARG': …".

use elench::ops::ids::claim_id_problem;
use elench::ops::page::{cursor_problem, limit_problem, MAX_LIMIT};
use std::fmt;
use std::time::Duration;

/// A value refused by one of these parsers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// What is wrong; `{arg}` stands for the argument as the line names it (`--jobs`).
    pub message: String,
    /// How the refusal is worded and coded.
    pub kind: RefusedKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusedKind {
    /// elench's own message, as it stands.
    Own,
    /// An identifier (claim id, keyid, remote name): elench's message, and
    /// INVALID_AGENT_INPUT when it holds a made-up pattern (`ArgError::identifier`).
    Identifier,
    /// A claim id given as a positional argument, which the error list names `<ID>`
    /// whatever the argument's own name (`<FROM>`, `[IDS]...`).
    ClaimId,
    /// clap's wording: "invalid value 'V' for 'ARG': MESSAGE".
    Clap,
}

impl Refused {
    fn own(message: impl Into<String>) -> Refused {
        Refused {
            message: message.into(),
            kind: RefusedKind::Own,
        }
    }

    fn clap(message: impl fmt::Display) -> Refused {
        Refused {
            message: message.to_string(),
            kind: RefusedKind::Clap,
        }
    }

    /// The message with the argument named.
    pub fn message_for(&self, param: &str) -> String {
        self.message.replace("{arg}", param)
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Refused {}

/// A value one of the parsers below accepted, as its own type, so that what holds one holds
/// a value already checked: a [`ClaimRef`], a [`KeyId`], a [`RemoteName`].
macro_rules! checked_text {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $name(String);

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<$name> for String {
            fn from(v: $name) -> String {
                v.0
            }
        }
    };
}

checked_text!(
    /// A claim id or a unique prefix of one ([`claim_id`]); which claim it names is the
    /// operation's question.
    ClaimRef
);
checked_text!(
    /// A keyid: 64 lowercase hex digits ([`keyid`]).
    KeyId
);
checked_text!(
    /// A remote's name ([`remote_name`]).
    RemoteName
);

/// Claim ids as the operations take them.
pub fn claim_strings(ids: &[ClaimRef]) -> Vec<String> {
    ids.iter().map(|i| i.0.clone()).collect()
}

/// `--timeout`: non-negative seconds, fractions allowed.
pub fn parse_seconds(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
        return Err(format!(
            "{s:?} is not between 0 (no limit) and 1000000000 seconds"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// `check --timeout`: seconds as [`parse_seconds`], but more than 0 (a claim's evaluation
/// always has a limit).
pub fn positive_seconds(s: &str) -> Result<Duration, Refused> {
    let d = parse_seconds(s).map_err(Refused::clap)?;
    if d.is_zero() {
        return Err(Refused::own("{arg} must be more than 0"));
    }
    Ok(d)
}

/// A count that must be more than 0 (`--jobs`, `--repeat`, `--memory`…).
fn positive<T: std::str::FromStr + PartialEq + Default>(s: &str) -> Result<T, Refused>
where
    T::Err: fmt::Display,
{
    let n: T = s.parse().map_err(Refused::clap)?;
    if n == T::default() {
        return Err(Refused::own("{arg} must be more than 0"));
    }
    Ok(n)
}

/// A positive `u32` ([`positive`]).
pub fn positive_u32(s: &str) -> Result<u32, Refused> {
    positive(s)
}

/// A positive `u64` ([`positive`]).
pub fn positive_u64(s: &str) -> Result<u64, Refused> {
    positive(s)
}

/// A positive `usize` ([`positive`]).
pub fn positive_usize(s: &str) -> Result<usize, Refused> {
    positive(s)
}

/// A claim id or a unique prefix of one: `cl_` and 4 to 64 lowercase hex digits. Whether
/// it names a stored claim is the operation's question.
pub fn claim_id(s: &str) -> Result<ClaimRef, Refused> {
    match claim_id_problem(s) {
        None => Ok(ClaimRef(s.to_owned())),
        Some(message) => Err(Refused {
            message,
            kind: RefusedKind::ClaimId,
        }),
    }
}

/// A keyid: the 64 lowercase hex digits of the SHA-256 of a raw public key; anything else
/// (a path, an encoded one) is a wrong argument, not a key that is merely unknown.
pub fn keyid(s: &str) -> Result<KeyId, Refused> {
    let ok = s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if ok {
        return Ok(KeyId(s.to_owned()));
    }
    Err(Refused {
        message: format!(
            "{s:?} is not a keyid: give the 64 lowercase hex digits `elench keys list` shows"
        ),
        kind: RefusedKind::Identifier,
    })
}

/// A key holder's name: anything but nothing.
pub fn key_name(s: &str) -> Result<String, Refused> {
    if s.is_empty() {
        return Err(Refused::own("{arg} must not be empty"));
    }
    Ok(s.to_owned())
}

/// A remote's name (`elench::sync::remote::check_name`).
pub fn remote_name(s: &str) -> Result<RemoteName, Refused> {
    elench::sync::remote::check_name(s)
        .map(|()| RemoteName(s.to_owned()))
        .map_err(|e| Refused {
            message: e.to_string(),
            kind: RefusedKind::Identifier,
        })
}

/// What can be a remote's URL or path at all (`elench::sync::remote::check_url`); whether
/// git reaches it is the exchange's question.
pub fn remote_url(s: &str) -> Result<String, Refused> {
    elench::sync::remote::check_url(s)
        .map(|()| s.to_owned())
        .map_err(|e| Refused::own(e.to_string()))
}

/// A `--path` glob (`*` stays inside one path segment).
pub fn glob(s: &str) -> Result<String, Refused> {
    elench::ops::status::glob(s)
        .map(|_| s.to_owned())
        .map_err(|e| {
            Refused::own(super::words::text(&elench::ops::status::glob_problem(
                s, &e,
            )))
        })
}

/// `--limit`: 1 to [`MAX_LIMIT`] items.
pub fn limit(s: &str) -> Result<usize, Refused> {
    let n: usize = s.parse().map_err(Refused::clap)?;
    if !(1..=MAX_LIMIT).contains(&n) {
        return Err(Refused::own(super::words::text(&limit_problem())));
    }
    Ok(n)
}

/// `--cursor`: the `next_cursor` of an earlier page (a number).
pub fn cursor(s: &str) -> Result<String, Refused> {
    match s.parse::<u64>() {
        Ok(_) => Ok(s.to_owned()),
        Err(_) => Err(Refused::own(super::words::text(&cursor_problem(s)))),
    }
}

/// `check --runner`: cargo, pytest or junit:CMD.
pub fn runner(s: &str) -> Result<String, Refused> {
    elench::eval::runners::Runner::parse(s, None)
        .map(|_| s.to_owned())
        .map_err(|e| Refused::own(format!("{{arg}}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_value_is_judged_alone() {
        assert!(claim_id("cl_abcd").is_ok());
        assert_eq!(claim_id("cl_abc").unwrap_err().kind, RefusedKind::ClaimId);
        assert!(keyid(&"a".repeat(64)).is_ok());
        assert_eq!(keyid("../x").unwrap_err().kind, RefusedKind::Identifier);
        assert_eq!(
            limit("0").unwrap_err().message,
            super::super::words::text(&limit_problem())
        );
        assert_eq!(limit("x").unwrap_err().kind, RefusedKind::Clap);
        assert_eq!(limit("10000"), Ok(10_000));
        assert!(cursor("12").is_ok() && cursor("soon").is_err());
        assert_eq!(
            positive_usize("0").unwrap_err().message_for("--jobs"),
            "--jobs must be more than 0"
        );
        assert_eq!(positive_u32("-1").unwrap_err().kind, RefusedKind::Clap);
        assert!(positive_seconds("0").is_err() && positive_seconds("0.5").is_ok());
        assert!(glob("[").is_err() && glob("src/**/*.rs").is_ok());
        assert!(remote_name("bad/name").is_err() && remote_name("origin").is_ok());
        assert!(remote_url("").is_err() && remote_url("../r.git").is_ok());
        assert_eq!(
            runner("x").unwrap_err().message_for("--runner"),
            "--runner: unknown runner \"x\": expected cargo, pytest or junit:CMD"
        );
        assert!(key_name("").is_err());
    }
}

/// `--kind` takes `claim::Kind` itself (its `clap::ValueEnum`, under the `cli` feature).
#[cfg(test)]
mod kind_tests {
    use clap::ValueEnum;
    use elench::claim::Kind;

    #[test]
    fn every_kind_is_offered_as_it_is_spelled() {
        let offered: Vec<String> = Kind::value_variants()
            .iter()
            .map(|k| k.to_possible_value().unwrap().get_name().to_owned())
            .collect();
        let kinds: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(offered, kinds);
        assert_eq!(
            Kind::from_str("residue-acceptance", false).unwrap(),
            Kind::ResidueAcceptance
        );
    }
}
