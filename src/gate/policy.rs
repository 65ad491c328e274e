//! The gate policy: a TOML file saying which claims are in scope and what they must satisfy.
//!
//! ```toml
//! [scope]                       # every key optional; absent = no narrowing
//! paths = ["src/**"]            # globs over the path a claim is about
//! origins = ["agent-asserted"]  # kinds of origin: harness-observed, agent-asserted, human-asserted
//! producers = ["my-agent/*"]    # globs over origin.producer.id
//! forms = ["predicate"]         # assertion forms: predicate, annotation
//! [rules]                       # every rule optional; an absent rule takes its strictest value
//! forbid = ["falsified", "revoked"]
//! max_unevaluated = 0           # residue a human accepted is counted apart, not here
//! min_harness_keys = 1          # distinct harness keys behind each verified claim
//! stale = "fail"                # or "ignore"
//! min_in_scope = 1              # fewer claims judged fails the gate (EMPTY_SCOPE)
//! ```
//!
//! Unknown keys and wrong types are refused with their line and column, so a typo cannot
//! silently loosen a rule. Absent rules fail closed.

use crate::claim::OriginKind;
use crate::fold::Status;
use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use toml::Spanned;

/// Why a policy was refused: a message and where in the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct PolicyError {
    pub message: String,
    /// 1-based; 0 when the parser gave no position.
    pub line: usize,
    pub column: usize,
}

/// What to do with claims whose span changed since they were made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StaleRule {
    /// A stale claim in scope breaks the gate.
    Fail,
    /// Stale claims are left out of every rule.
    Ignore,
}

/// `assertion.form`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Form {
    Predicate,
    Annotation,
}

impl Form {
    pub fn parse(s: &str) -> Option<Form> {
        match s {
            "predicate" => Some(Form::Predicate),
            "annotation" => Some(Form::Annotation),
            _ => None,
        }
    }
}

/// A status as a policy names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum StatusName {
    Unevaluated,
    Verified,
    Falsified,
    Superseded,
    Revoked,
}

impl From<StatusName> for Status {
    fn from(s: StatusName) -> Status {
        match s {
            StatusName::Unevaluated => Status::Unevaluated,
            StatusName::Verified => Status::Verified,
            StatusName::Falsified => Status::Falsified,
            StatusName::Superseded => Status::Superseded,
            StatusName::Revoked => Status::Revoked,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRepr {
    scope: Option<ScopeRepr>,
    rules: Option<RulesRepr>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScopeRepr {
    paths: Option<Vec<Spanned<String>>>,
    origins: Option<Vec<OriginKind>>,
    producers: Option<Vec<Spanned<String>>>,
    forms: Option<Vec<Form>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesRepr {
    forbid: Option<Vec<StatusName>>,
    max_unevaluated: Option<u64>,
    min_harness_keys: Option<u64>,
    stale: Option<StaleRule>,
    min_in_scope: Option<u64>,
    witness_fresh: Option<bool>,
    witness_remote: Option<String>,
    witness_timeout: Option<Spanned<u64>>,
}

/// A set of globs and the patterns it was made from.
#[derive(Debug, Clone)]
pub struct Globs {
    pub patterns: Vec<String>,
    set: GlobSet,
}

impl Globs {
    pub fn is_match(&self, s: &str) -> bool {
        self.set.is_match(s)
    }
}

/// Which claims the rules look at. `None` leaves that dimension open.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    pub paths: Option<Globs>,
    pub origins: Option<Vec<OriginKind>>,
    pub producers: Option<Globs>,
    pub forms: Option<Vec<Form>>,
}

/// The rules, with absent ones at their strictest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    pub forbid: Vec<Status>,
    pub max_unevaluated: u64,
    pub min_harness_keys: u64,
    pub stale: StaleRule,
    /// Fewer claims in scope than this fails the gate: a gate that judged nothing says
    /// nothing about the tree.
    pub min_in_scope: u64,
    /// Ask the witnesses of the remote's log whether it was rewound (docs/witness.md).
    pub witness_fresh: bool,
    /// The remote whose witnesses `witness_fresh` asks (default `origin`).
    pub witness_remote: String,
    /// Seconds each whole witness request of `witness_fresh` may take, and the remote its
    /// first answer (default 30).
    pub witness_timeout: u64,
}

/// The longest `witness_timeout` a policy may set, in seconds: an hour.
pub const MAX_WITNESS_TIMEOUT: u64 = 3600;

impl Default for Rules {
    fn default() -> Rules {
        Rules {
            forbid: vec![Status::Falsified, Status::Revoked],
            max_unevaluated: 0,
            min_harness_keys: 1,
            stale: StaleRule::Fail,
            min_in_scope: 1,
            witness_fresh: false,
            witness_remote: "origin".to_owned(),
            witness_timeout: 30,
        }
    }
}

/// A parsed policy.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    pub scope: Scope,
    pub rules: Rules,
}

impl Policy {
    /// Parses the TOML text of a policy.
    pub fn parse(text: &str) -> Result<Policy, PolicyError> {
        let repr: FileRepr = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map_or((0, 0), |s| line_col(text, s.start));
            PolicyError {
                message: e.message().trim_end().to_owned(),
                line,
                column,
            }
        })?;
        let scope = repr.scope.unwrap_or_default();
        let rules = repr.rules.unwrap_or_default();
        let defaults = Rules::default();
        let mut forbid: Vec<Status> = match rules.forbid {
            Some(f) => f.into_iter().map(Status::from).collect(),
            None => defaults.forbid,
        };
        forbid.sort();
        forbid.dedup();
        let witness_timeout = match rules.witness_timeout {
            None => defaults.witness_timeout,
            Some(t) if (1..=MAX_WITNESS_TIMEOUT).contains(t.get_ref()) => t.into_inner(),
            Some(t) => {
                let (line, column) = line_col(text, t.span().start);
                return Err(PolicyError {
                    message: format!(
                        "rules.witness_timeout: {} is no time limit for a witness request: give \
                         whole seconds from 1 to {MAX_WITNESS_TIMEOUT}",
                        t.get_ref()
                    ),
                    line,
                    column,
                });
            }
        };
        Ok(Policy {
            scope: Scope {
                paths: scope
                    .paths
                    .map(|p| globs(text, p, "scope.paths", true))
                    .transpose()?,
                origins: scope.origins,
                producers: scope
                    .producers
                    .map(|p| globs(text, p, "scope.producers", false))
                    .transpose()?,
                forms: scope.forms,
            },
            rules: Rules {
                forbid,
                max_unevaluated: rules.max_unevaluated.unwrap_or(defaults.max_unevaluated),
                min_harness_keys: rules.min_harness_keys.unwrap_or(defaults.min_harness_keys),
                stale: rules.stale.unwrap_or(defaults.stale),
                min_in_scope: rules.min_in_scope.unwrap_or(defaults.min_in_scope),
                witness_fresh: rules.witness_fresh.unwrap_or(defaults.witness_fresh),
                witness_remote: rules.witness_remote.unwrap_or(defaults.witness_remote),
                witness_timeout,
            },
        })
    }

    /// The policy in force, defaults filled in, as reports show it.
    pub fn to_json(&self) -> Value {
        let pats = |g: &Option<Globs>| g.as_ref().map(|g| g.patterns.clone());
        json!({
            "scope": {
                "paths": pats(&self.scope.paths),
                "origins": self.scope.origins.as_ref().map(|o| o.iter().map(|k| k.as_str()).collect::<Vec<_>>()),
                "producers": pats(&self.scope.producers),
                "forms": self.scope.forms,
            },
            "rules": {
                "forbid": self.rules.forbid,
                "max_unevaluated": self.rules.max_unevaluated,
                "min_harness_keys": self.rules.min_harness_keys,
                "stale": self.rules.stale,
                "min_in_scope": self.rules.min_in_scope,
                "witness_fresh": self.rules.witness_fresh,
                "witness_remote": self.rules.witness_remote,
                "witness_timeout": self.rules.witness_timeout,
            },
        })
    }
}

/// Compiles globs; path globs keep `*` inside one path component (`**` crosses them).
fn globs(
    text: &str,
    patterns: Vec<Spanned<String>>,
    key: &str,
    paths: bool,
) -> Result<Globs, PolicyError> {
    let mut set = GlobSetBuilder::new();
    let mut kept = Vec::with_capacity(patterns.len());
    for p in patterns {
        let glob: Result<Glob, _> = GlobBuilder::new(p.get_ref())
            .literal_separator(paths)
            .build();
        match glob {
            Ok(g) => {
                set.add(g);
            }
            Err(e) => {
                let (line, column) = line_col(text, p.span().start);
                return Err(PolicyError {
                    message: format!("{key}: {:?} is not a glob: {}", p.get_ref(), e.kind()),
                    line,
                    column,
                });
            }
        }
        kept.push(p.into_inner());
    }
    let set = set.build().map_err(|e| PolicyError {
        message: format!("{key}: {e}"),
        line: 0,
        column: 0,
    })?;
    Ok(Globs {
        patterns: kept,
        set,
    })
}

/// 1-based line and column (in characters) of byte offset `at`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = text.get(..at.min(text.len())).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn witness_timeout_is_whole_seconds_from_one_to_an_hour() {
        assert_eq!(Policy::parse("").unwrap().rules.witness_timeout, 30);
        let p = Policy::parse("[rules]\nwitness_timeout = 5\n").unwrap();
        assert_eq!(p.rules.witness_timeout, 5);
        assert_eq!(p.to_json()["rules"]["witness_timeout"], 5);
        for bad in ["0", "3601"] {
            let e = Policy::parse(&format!("[rules]\nwitness_timeout = {bad}\n")).unwrap_err();
            assert_eq!((e.line, e.column), (2, 19), "{bad}: {}", e.message);
            assert!(
                e.message.contains("witness_timeout"),
                "{bad}: {}",
                e.message
            );
        }
        for bad in ["-1", "1.5", "\"30\""] {
            let e = Policy::parse(&format!("[rules]\nwitness_timeout = {bad}\n")).unwrap_err();
            assert_eq!(e.line, 2, "{bad}: {}", e.message);
        }
    }

    #[test]
    fn policy_absent_rules_fail_closed() {
        for text in ["", "[rules]\n", "[scope]\n[rules]\n"] {
            let p = Policy::parse(text).unwrap();
            assert_eq!(p.rules, Rules::default());
            assert_eq!(p.rules.forbid, [Status::Falsified, Status::Revoked]);
            assert_eq!(p.rules.max_unevaluated, 0);
            assert_eq!(p.rules.min_harness_keys, 1);
            assert_eq!(p.rules.stale, StaleRule::Fail);
            assert_eq!(p.rules.min_in_scope, 1);
            assert!(p.scope.paths.is_none());
        }
    }

    #[test]
    fn policy_reads_every_key() {
        let p = Policy::parse(
            "[scope]\npaths = [\"src/**\", \"*.rs\"]\norigins = [\"agent-asserted\"]\n\
             producers = [\"bot/*\"]\nforms = [\"predicate\"]\n\
             [rules]\nforbid = [\"revoked\", \"unevaluated\", \"revoked\"]\nmax_unevaluated = 3\n\
             min_harness_keys = 2\nstale = \"ignore\"\nmin_in_scope = 0\n",
        )
        .unwrap();
        let paths = p.scope.paths.as_ref().unwrap();
        assert!(paths.is_match("src/a/b.rs"));
        assert!(paths.is_match("top.rs"));
        assert!(
            !paths.is_match("lib/top.rs"),
            "* stays within one component"
        );
        assert!(p.scope.producers.as_ref().unwrap().is_match("bot/1"));
        assert_eq!(p.scope.origins, Some(vec![OriginKind::AgentAsserted]));
        assert_eq!(p.scope.forms, Some(vec![Form::Predicate]));
        assert_eq!(p.rules.forbid, [Status::Unevaluated, Status::Revoked]);
        assert_eq!(
            (
                p.rules.max_unevaluated,
                p.rules.min_harness_keys,
                p.rules.stale
            ),
            (3, 2, StaleRule::Ignore)
        );
        assert_eq!(p.rules.min_in_scope, 0);
    }

    #[test]
    fn policy_refuses_unknown_keys_and_bad_values_with_location() {
        let e = Policy::parse("[rules]\nforbid = []\nmax_unevaluatd = 1\n").unwrap_err();
        assert_eq!((e.line, e.column), (3, 1), "{e}");
        assert!(e.message.contains("max_unevaluatd"), "{e}");
        let e = Policy::parse("[scope]\nkinds = [\"x\"]\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        let e = Policy::parse("[rules]\nstale = \"maybe\"\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        let e = Policy::parse("[rules]\nforbid = [\"broken\"]\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        let e = Policy::parse("[rules]\nmax_unevaluated = -1\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        let e = Policy::parse("[scope]\npaths = [\"ok/**\",\n  \"src/[\"]\n").unwrap_err();
        assert_eq!((e.line, e.column), (3, 3), "{e}");
        assert!(e.message.contains("scope.paths"), "{e}");
        let e = Policy::parse("[extra]\n").unwrap_err();
        assert_eq!(e.line, 1, "{e}");
        let e = Policy::parse("[rules\n").unwrap_err();
        assert!(e.line >= 1, "{e}");
    }
}
