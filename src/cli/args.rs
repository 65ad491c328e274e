//! The command line checked as a whole before anything runs (the CLI Agent Spec's
//! validate-before-execute, REQ-F-015 and REQ-C-006): every argument error on a line is
//! reported in one response, not one per run.
//!
//! What a value must look like lives in its argument's clap value parser
//! ([`crate::cli::values`]), so clap alone decides whether a line is accepted. clap stops at
//! the first error; when it refuses a line, [`refusal`] walks the tokens once, left to right,
//! against the definition's model (`Cli::command()`: the subcommand path, each command's
//! options with the global ones, which of them take values, its positional arguments in
//! order), and judges each value with that argument's own parser. It reports unknown
//! arguments and subcommands, missing and refused values, options given twice, conflicts
//! and required arguments never given (not those whose value was refused). No token is
//! looked at twice and nothing is parsed again in a loop; only the relations clap keeps to
//! itself (`requires`, `required_unless_present`, a missing subcommand) are asked of clap,
//! once, on the line without its refused tokens.
//!
//! The errors come in this order: the line's structure (unknown arguments, missing
//! values, repeats, conflicts), then the values clap words itself ("invalid value …"),
//! then the values elench's own parsers refused, then what is missing; each group in the
//! order of the line. The response's message is the first one's.

use super::definition::Cli;
use super::values::{Refused, RefusedKind};
use clap::builder::ValueParser;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Arg, ArgAction, CommandFactory, Parser};
use std::ffi::{OsStr, OsString};

pub use super::failure::ArgError;

/// What [`refusal`] found on a refused line.
#[derive(Debug)]
pub struct Refusal {
    /// The command the line names (`status`, `keys retire`); `elench` when it names none.
    pub command: String,
    /// Its clap definition, built, as the walk found it: for the usage and help of the
    /// answer.
    pub definition: clap::Command,
    /// Every error, in the order the module's description gives; never empty.
    pub errors: Vec<ArgError>,
    /// `--help` (or `-h`, `--version`) came before any error clap itself reports: clap would
    /// have answered it, and only values refused by elench's own rules stood on the line,
    /// which never kept anyone from help. The answer is the help (or version) instead.
    pub asked: Option<Asked>,
    /// For a mistyped option or command, the name it was probably meant to be, as a line for
    /// people (`a similar argument exists: '--all'`).
    pub tips: Vec<String>,
}

/// What a refused line asked for before its first error in clap's own words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// `-h`: the short help.
    ShortHelp,
    /// `--help`: the long help.
    LongHelp,
    Version,
}

/// The message elench gives for a clap error: clap's first paragraph, which says what is
/// wrong and names the argument.
pub fn clap_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let usage = text
            .lines()
            .find_map(|l| l.strip_prefix("Usage: "))
            .unwrap_or("elench <COMMAND>");
        return format!("a subcommand is required: {usage} (see --help)");
    }
    let first: Vec<&str> = text
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    if first.is_empty() {
        "invalid arguments".to_owned()
    } else {
        first.join(" ").trim_start_matches("error: ").to_owned()
    }
}

/// Which group of the response an error belongs to (the module's description).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Group {
    Structure,
    ClapValue,
    OwnValue,
    Missing,
}

/// One token of the line, kept for clap's one look at the line without its refused tokens;
/// `owner` is the argument it belongs to (its id), if any.
#[derive(Clone)]
struct Kept {
    token: OsString,
    owner: Option<String>,
}

/// The walk's state.
struct Walk<'a> {
    cmd: &'a clap::Command,
    path: Vec<String>,
    errors: Vec<(Group, ArgError)>,
    kept: Vec<Kept>,
    /// Arguments met on the line at the current command (ids, first meeting first), refused
    /// ones included: none of them is missing.
    met: Vec<String>,
    /// Arguments that already hold a value at each level (by the level's depth and id): a
    /// second one is a repeat.
    set: Vec<(usize, String)>,
    /// The next positional argument to fill.
    position: usize,
    /// A positional value was refused: the later ones leave the kept line too, which would
    /// otherwise give them the wrong places.
    positional_refused: bool,
    /// Help or the version asked for before any error in clap's words.
    asked: Option<Asked>,
    /// The previous token was an unknown option written without `=`: the next token, if it
    /// has no place of its own, is that option's value and part of its error.
    after_unknown: bool,
    tips: Vec<String>,
    /// Each conflict the walk refused: the argument dropped from the kept line and the one
    /// it was refused against, with the line as it was before the drop.
    conflicts: Vec<(String, String)>,
    before_conflicts: Vec<Kept>,
}

/// Every error of `args` (the program's name first), a line clap refused. See the module's
/// description.
pub fn refusal(args: &[OsString]) -> Refusal {
    let mut root = Cli::command();
    root.build();
    let program = args.first().cloned().unwrap_or_else(|| "elench".into());
    let mut walk = Walk {
        cmd: &root,
        path: Vec::new(),
        errors: Vec::new(),
        kept: vec![Kept {
            token: program,
            owner: None,
        }],
        met: Vec::new(),
        set: Vec::new(),
        position: 0,
        positional_refused: false,
        asked: None,
        after_unknown: false,
        tips: Vec::new(),
        conflicts: Vec::new(),
        before_conflicts: Vec::new(),
    };
    let complete = walk.tokens(args.get(1..).unwrap_or_default());
    if complete {
        walk.conflicts();
        walk.missing();
    }
    let mut errors = std::mem::take(&mut walk.errors);
    if complete {
        errors.extend(clap_relations(&walk, &errors));
    }
    // A stable sort: each group keeps the order of the line.
    errors.sort_by_key(|(g, _)| *g);
    let mut errors: Vec<ArgError> = errors.into_iter().map(|(_, e)| e).collect();
    if errors.is_empty() {
        // Only when the walk and clap disagree (a rule of clap's the walk does not know):
        // clap's own error, so that a refused line never goes without one.
        let message = match Cli::try_parse_from(args) {
            Err(e) => clap_message(&e),
            Ok(_) => "invalid arguments".to_owned(),
        };
        errors.push(ArgError::new("", None, message));
    }
    Refusal {
        asked: walk.asked,
        command: if walk.path.is_empty() {
            "elench".to_owned()
        } else {
            walk.path.join(" ")
        },
        errors,
        tips: walk.tips,
        definition: walk.cmd.clone(),
    }
}

/// The name among `known` that `written` was most likely meant to be: the nearest by edit
/// distance, if it is near enough to be a slip (a third of its length, at least one edit).
fn similar<'k>(written: &str, known: impl Iterator<Item = &'k str>) -> Option<&'k str> {
    let limit = (written.chars().count() / 3).max(1);
    known
        .map(|k| (edit_distance(written, k), k))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, k)| k)
}

/// Levenshtein distance, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

impl<'a> Walk<'a> {
    /// Walks the tokens once. `false` when the walk stopped at an unknown subcommand, after
    /// which nothing on the line means anything.
    fn tokens(&mut self, tokens: &[OsString]) -> bool {
        let mut i = 0;
        let mut only_positionals = false;
        while i < tokens.len() {
            let token = &tokens[i];
            let text = token.to_string_lossy().into_owned();
            let after_unknown = std::mem::take(&mut self.after_unknown);
            i += 1;
            if !only_positionals && text == "--" {
                only_positionals = true;
                self.keep(token, None);
                continue;
            }
            if !only_positionals && text.starts_with("--") {
                i += self.long(&text, tokens.get(i));
                continue;
            }
            if !only_positionals && text.starts_with('-') && text.len() > 1 {
                i += self.short(&text, tokens.get(i));
                continue;
            }
            if !only_positionals && self.cmd.has_subcommands() {
                match self.cmd.find_subcommand(&text) {
                    Some(sub) => {
                        self.path.push(sub.get_name().to_owned());
                        self.cmd = sub;
                        self.met.clear();
                        self.position = 0;
                        self.positional_refused = false;
                        self.keep(token, None);
                        continue;
                    }
                    None => {
                        self.error(
                            Group::Structure,
                            ArgError::new(&text, None, format!("unrecognized subcommand '{text}'")),
                        );
                        let names = self.cmd.get_subcommands().map(|c| c.get_name());
                        if let Some(near) = similar(&text, names) {
                            self.tips
                                .push(format!("a similar subcommand exists: '{near}'"));
                        }
                        return false;
                    }
                }
            }
            self.positional(token, &text, after_unknown);
        }
        true
    }

    /// `--name`, `--name=VALUE` or `--name VALUE`; how many tokens after it it took.
    fn long(&mut self, text: &str, next: Option<&OsString>) -> usize {
        let (name, inline) = match text.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (text, None),
        };
        let long = &name[2..];
        let Some(arg) = self.long_arg(long) else {
            self.error(
                Group::Structure,
                ArgError::new(name, None, format!("unexpected argument '{name}' found")),
            );
            let longs = self.cmd.get_arguments().filter_map(|a| a.get_long());
            if let Some(near) = similar(long, longs) {
                self.tips
                    .push(format!("a similar argument exists: '--{near}'"));
            }
            self.after_unknown = inline.is_none();
            return 0;
        };
        let inline = inline.map(OsString::from);
        self.option(arg, name, inline, next)
    }

    /// `-x`, `-xVALUE`, `-x VALUE` or flags together (`-yv`); how many tokens after it it
    /// took.
    fn short(&mut self, text: &str, next: Option<&OsString>) -> usize {
        let chars: Vec<char> = text[1..].chars().collect();
        for (at, c) in chars.iter().enumerate() {
            let Some(arg) = self.short_arg(*c) else {
                let shown = format!("-{c}");
                self.error(
                    Group::Structure,
                    ArgError::new(&shown, None, format!("unexpected argument '{shown}' found")),
                );
                return 0;
            };
            if takes_value(arg) {
                let rest: String = chars[at + 1..].iter().collect();
                let rest = rest.strip_prefix('=').unwrap_or(&rest).to_owned();
                let inline = (!rest.is_empty()).then(|| OsString::from(rest));
                return self.option(arg, &format!("-{c}"), inline, next);
            }
            self.flag(arg, &format!("-{c}"), None);
        }
        0
    }

    /// An option of the command, as written (`written`), with its value inline or in `next`;
    /// how many tokens after it it took.
    fn option(
        &mut self,
        arg: &Arg,
        written: &str,
        inline: Option<OsString>,
        next: Option<&OsString>,
    ) -> usize {
        if !takes_value(arg) {
            self.flag(arg, written, inline);
            return 0;
        }
        let param = param_of(arg);
        let (value, took) = match (inline, next) {
            (Some(v), _) => (v, 0),
            (None, Some(n)) if !looks_like_option(n) || arg.is_allow_hyphen_values_set() => {
                (n.clone(), 1)
            }
            (None, Some(n)) if n != "--" && !self.knows(n) => {
                // `--limit -3`: the value was taken for an option clap does not know. One
                // mistake, about the option, with the value it was given.
                let shown = n.to_string_lossy();
                self.met(arg);
                self.error(
                    Group::Structure,
                    ArgError::new(
                        &param,
                        Some(&shown),
                        format!("unexpected argument '{shown}' found"),
                    ),
                );
                return 1;
            }
            _ => {
                self.met(arg);
                self.error(
                    Group::Structure,
                    ArgError::new(
                        &param,
                        None,
                        format!("a value is required for '{arg}' but none was supplied"),
                    ),
                );
                return 0;
            }
        };
        self.met(arg);
        if self.repeated(arg) {
            return took;
        }
        match judge(arg, &value) {
            Ok(()) => {
                let owner = Some(arg.get_id().to_string());
                if took == 0 {
                    let joined = format!("--{}=", arg.get_long().unwrap_or_default());
                    let mut token = OsString::from(joined);
                    token.push(&value);
                    self.keep(&token, owner);
                } else {
                    self.keep(OsStr::new(written), owner.clone());
                    self.keep(&value, owner);
                }
            }
            Err((group, e)) => self.error(group, e),
        }
        took
    }

    /// A flag: no value (a value after `=` is refused).
    fn flag(&mut self, arg: &Arg, written: &str, inline: Option<OsString>) {
        self.met(arg);
        let clap_would_answer = self.asked.is_none()
            && inline.is_none()
            && self.errors.iter().all(|(g, _)| *g == Group::OwnValue);
        if clap_would_answer {
            self.asked = match arg.get_action() {
                ArgAction::Help | ArgAction::HelpLong if written.starts_with("--") => {
                    Some(Asked::LongHelp)
                }
                ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong => {
                    Some(Asked::ShortHelp)
                }
                ArgAction::Version => Some(Asked::Version),
                _ => None,
            };
        }
        if let Some(v) = inline {
            let v = v.to_string_lossy();
            self.error(
                Group::Structure,
                ArgError::new(
                    param_of(arg),
                    Some(&v),
                    format!("unexpected value '{v}' for '{written}' found; no more were expected"),
                ),
            );
            return;
        }
        if matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse)
            && self.repeated(arg)
        {
            return;
        }
        let long = arg
            .get_long()
            .map_or_else(|| written.to_owned(), |l| format!("--{l}"));
        self.keep(OsStr::new(&long), Some(arg.get_id().to_string()));
    }

    /// A positional value: the next positional argument's, the value of an unknown option
    /// just before it, or one too many.
    fn positional(&mut self, token: &OsString, text: &str, after_unknown: bool) {
        let mut positionals: Vec<&Arg> = self.cmd.get_positionals().collect();
        positionals.sort_by_key(|a| a.get_index().unwrap_or(usize::MAX));
        let Some(arg) = positionals.get(self.position).copied() else {
            if !after_unknown {
                self.error(
                    Group::Structure,
                    ArgError::new(text, None, format!("unexpected argument '{text}' found")),
                );
            }
            return;
        };
        if !takes_many(arg) {
            self.position += 1;
        }
        self.met(arg);
        match judge(arg, token) {
            Ok(()) if !self.positional_refused => self.keep(token, Some(arg.get_id().to_string())),
            Ok(()) => {}
            Err((group, e)) => {
                self.positional_refused = true;
                self.error(group, e);
            }
        }
    }

    /// Whether a token is an option this command knows (then the option before it got no
    /// value; else that token was meant as its value).
    fn knows(&self, token: &OsStr) -> bool {
        let text = token.to_string_lossy();
        if let Some(long) = text.strip_prefix("--") {
            let long = long.split('=').next().unwrap_or_default();
            return self.long_arg(long).is_some();
        }
        text.chars()
            .nth(1)
            .and_then(|c| self.short_arg(c))
            .is_some()
    }

    /// The command's option named `--long` (or by one of its aliases).
    fn long_arg(&self, long: &str) -> Option<&'a Arg> {
        self.cmd.get_arguments().find(|a| {
            a.get_long() == Some(long) || a.get_all_aliases().is_some_and(|al| al.contains(&long))
        })
    }

    /// The command's option named `-c` (or by one of its short aliases).
    fn short_arg(&self, c: char) -> Option<&'a Arg> {
        self.cmd.get_arguments().find(|a| {
            a.get_short() == Some(c) || a.get_all_short_aliases().is_some_and(|al| al.contains(&c))
        })
    }

    /// Records that the line holds `arg` (once).
    fn met(&mut self, arg: &Arg) {
        let id = arg.get_id().to_string();
        if !self.met.contains(&id) {
            self.met.push(id);
        }
    }

    /// Whether `arg`, which holds one value, was given before at this command: then this is
    /// clap's "cannot be used multiple times".
    fn repeated(&mut self, arg: &Arg) -> bool {
        if matches!(arg.get_action(), ArgAction::Append | ArgAction::Count) {
            return false;
        }
        let key = (self.path.len(), arg.get_id().to_string());
        if !self.set.contains(&key) {
            self.set.push(key);
            return false;
        }
        self.error(
            Group::Structure,
            ArgError::new(
                param_of(arg),
                None,
                format!("the argument '{arg}' cannot be used multiple times"),
            ),
        );
        true
    }

    fn keep(&mut self, token: &OsStr, owner: Option<String>) {
        self.kept.push(Kept {
            token: token.to_owned(),
            owner,
        });
    }

    fn error(&mut self, group: Group, e: ArgError) {
        self.errors.push((group, e));
    }

    /// Two arguments of the line that may not stand together: named at the first of them,
    /// once per pair. The first one's tokens leave the kept line, so that clap's look at it
    /// is not stopped by the same conflict.
    fn conflicts(&mut self) {
        let args: Vec<&Arg> = self
            .met
            .iter()
            .filter_map(|id| self.cmd.get_arguments().find(|a| a.get_id() == id.as_str()))
            .collect();
        let mut dropped = Vec::new();
        for (n, a) in args.iter().enumerate() {
            if a.is_global_set() {
                continue;
            }
            let against = self.cmd.get_arg_conflicts_with(a);
            // Either of the two may be the one that declares the conflict.
            let Some(b) = args[n + 1..].iter().find(|b| {
                against.iter().any(|c| c.get_id() == b.get_id())
                    || (!b.is_global_set()
                        && self
                            .cmd
                            .get_arg_conflicts_with(b)
                            .iter()
                            .any(|c| c.get_id() == a.get_id()))
            }) else {
                continue;
            };
            if dropped.contains(&b.get_id().to_string()) {
                continue;
            }
            self.errors.push((
                Group::Structure,
                ArgError::new(
                    param_of(a),
                    None,
                    format!("the argument '{a}' cannot be used with '{b}'"),
                ),
            ));
            dropped.push(a.get_id().to_string());
            self.conflicts
                .push((a.get_id().to_string(), b.get_id().to_string()));
        }
        self.before_conflicts = self.kept.clone();
        self.kept
            .retain(|k| k.owner.as_ref().is_none_or(|o| !dropped.contains(o)));
    }

    /// The command's required arguments that the line does not hold at all.
    fn missing(&mut self) {
        if self.cmd.has_subcommands() {
            // No subcommand: clap's look at the kept line says so.
            return;
        }
        let missing: Vec<&Arg> = self
            .cmd
            .get_arguments()
            .filter(|a| a.is_required_set() && !self.met.iter().any(|m| a.get_id() == m.as_str()))
            .collect();
        let single = missing.len() == 1;
        for a in missing {
            let message = if single {
                format!("the following required arguments were not provided: {a}")
            } else {
                format!("the required argument {a} was not provided")
            };
            self.errors
                .push((Group::Missing, ArgError::new(param_of(a), None, message)));
        }
    }
}

/// clap's one look at the line without its refused tokens, for the relations between
/// arguments it keeps to itself (`requires`, `required_unless_present`) and a missing
/// subcommand. What the walk already reported, or what only a refused token caused (an
/// argument reported missing whose value was refused), is not reported again.
/// Whether the arguments the walk dropped for conflicts would have given clap what it says is
/// missing: `blast --signer K --invert` drops `--signer`, and the kept line then lacks the ID
/// that `--signer` stands in for; the user left nothing out but the conflict. One look at the
/// line with each dropped argument in place of the one it conflicted with.
fn satisfied_by_a_refused_conflict(walk: &Walk<'_>) -> bool {
    if walk.conflicts.is_empty() {
        return false;
    }
    let line: Vec<&OsString> = walk
        .before_conflicts
        .iter()
        .filter(|k| {
            k.owner
                .as_deref()
                .is_none_or(|o| !walk.conflicts.iter().any(|(_, against)| against == o))
        })
        .map(|k| &k.token)
        .collect();
    !matches!(
        Cli::try_parse_from(line).map_err(|e| e.kind()),
        Err(ErrorKind::MissingRequiredArgument)
    )
}

fn clap_relations(walk: &Walk<'_>, found: &[(Group, ArgError)]) -> Option<(Group, ArgError)> {
    let line: Vec<&OsString> = walk.kept.iter().map(|k| &k.token).collect();
    let e = Cli::try_parse_from(line).err()?;
    let message = clap_message(&e);
    let kind = e.kind();
    if matches!(kind, ErrorKind::DisplayHelp | ErrorKind::DisplayVersion)
        || found.iter().any(|(_, f)| f.message == message)
    {
        return None;
    }
    match kind {
        ErrorKind::MissingRequiredArgument if satisfied_by_a_refused_conflict(walk) => None,
        ErrorKind::MissingRequiredArgument => {
            let named = contexts(&e, ContextKind::InvalidArg);
            let new: Vec<&String> = named
                .iter()
                .filter(|shown| {
                    // Met on the line, or always required (the walk said so).
                    !walk.cmd.get_arguments().any(|a| {
                        param_of(a) == positional_name(shown)
                            && (a.is_required_set()
                                || walk.met.iter().any(|m| a.get_id() == m.as_str()))
                    })
                })
                .collect();
            let first = new.first()?;
            // A positional argument required only without some option (`status` needs ids
            // or --all): the usage says which.
            let message = if first.starts_with(['<', '[']) {
                let usage = walk
                    .cmd
                    .clone()
                    .render_usage()
                    .to_string()
                    .lines()
                    .map(|l| l.trim().trim_start_matches("Usage: ").to_owned())
                    .filter(|l| !l.is_empty())
                    .collect::<Vec<_>>()
                    .join(" or ");
                format!("{message} (usage: {usage})")
            } else {
                message
            };
            Some((
                Group::Missing,
                ArgError::new(positional_name(first), None, message),
            ))
        }
        // Each token was judged by the walk already; clap's word on one of the kept line is
        // none of the relations asked about here.
        ErrorKind::ArgumentConflict
        | ErrorKind::InvalidValue
        | ErrorKind::ValueValidation
        | ErrorKind::UnknownArgument
        | ErrorKind::InvalidSubcommand
        | ErrorKind::NoEquals
        | ErrorKind::TooManyValues
        | ErrorKind::TooFewValues
        | ErrorKind::WrongNumberOfValues
        | ErrorKind::InvalidUtf8 => None,
        ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            Some((Group::Missing, ArgError::new("<COMMAND>", None, message)))
        }
        _ => {
            let param = contexts(&e, ContextKind::InvalidArg)
                .first()
                .map(|s| positional_name(s))
                .unwrap_or_default();
            Some((Group::Structure, ArgError::new(param, None, message)))
        }
    }
}

/// `value` judged by `arg`'s own value parser, the one the definition gives it: clap's
/// parser, run on a one-argument command that holds a copy of `arg` (clap keeps running a
/// parser alone to itself), so that the rule stays in one place.
fn judge(arg: &Arg, value: &OsStr) -> Result<(), (Group, ArgError)> {
    let parser: ValueParser = arg.get_value_parser().clone();
    let mut one = Arg::new(arg.get_id().clone())
        .value_parser(parser)
        .action(ArgAction::Set)
        .num_args(1)
        .allow_hyphen_values(true);
    if let Some(names) = arg.get_value_names() {
        one = one.value_names(names.iter().cloned());
    }
    // Always a positional argument here (clap names options only by `'static` names); its
    // name in clap's message is put back as the definition shows it.
    one = one.index(1).required(true);
    let here = one.to_string();
    let line: Vec<OsString> = vec!["elench".into(), "--".into(), value.to_owned()];
    let e = match clap::Command::new("elench")
        .disable_help_flag(true)
        .disable_version_flag(true)
        .arg(one)
        .try_get_matches_from(line)
    {
        Ok(_) => return Ok(()),
        Err(e) => e,
    };
    let shown = value.to_string_lossy();
    let param = param_of(arg);
    let refused = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<Refused>());
    Err(match refused {
        Some(r) if r.kind != RefusedKind::Clap => {
            let message = r.message_for(&param);
            let e = match r.kind {
                RefusedKind::ClaimId if arg.is_positional() => {
                    ArgError::identifier("<ID>", &shown, message)
                }
                RefusedKind::ClaimId | RefusedKind::Identifier => {
                    ArgError::identifier(param, &shown, message)
                }
                _ => ArgError::new(param, Some(&shown), message),
            };
            (Group::OwnValue, e)
        }
        _ => {
            let message =
                clap_message(&e).replacen(&format!(" for '{here}'"), &format!(" for '{arg}'"), 1);
            (
                Group::ClapValue,
                ArgError::new(param, Some(&shown), message),
            )
        }
    })
}

/// How the error list names an argument: an option by its long name (`--limit`), a
/// positional one as `<NAME>`.
fn param_of(arg: &Arg) -> String {
    if let Some(long) = arg.get_long().filter(|_| !arg.is_positional()) {
        return format!("--{long}");
    }
    if let Some(short) = arg.get_short().filter(|_| !arg.is_positional()) {
        return format!("-{short}");
    }
    let name = arg
        .get_value_names()
        .and_then(|n| n.first())
        .map_or_else(|| arg.get_id().as_str().to_uppercase(), |n| n.to_string());
    format!("<{name}>")
}

/// An argument as clap shows it (`[IDS]...`, `--key <HARNESS.pem>`) without its decoration:
/// `<IDS>`, `--key`.
fn positional_name(shown: &str) -> String {
    if shown.starts_with('-') {
        return shown.split([' ', '=']).next().unwrap_or(shown).to_owned();
    }
    let bare = shown.trim_end_matches("...");
    let inner = bare
        .trim_start_matches(['<', '['])
        .trim_end_matches(['>', ']']);
    format!("<{inner}>")
}

fn takes_value(arg: &Arg) -> bool {
    arg.get_num_args().is_some_and(|n| n.takes_values())
        && matches!(arg.get_action(), ArgAction::Set | ArgAction::Append)
}

fn takes_many(arg: &Arg) -> bool {
    matches!(arg.get_action(), ArgAction::Append)
        || arg.get_num_args().is_some_and(|n| n.max_values() > 1)
}

/// Whether a token would be read as an option (`-x`, `--x`), not a value (`-` alone is
/// stdin).
fn looks_like_option(token: &OsStr) -> bool {
    let text = token.to_string_lossy();
    text.starts_with('-') && text.len() > 1
}

fn contexts(e: &clap::Error, kind: ContextKind) -> Vec<String> {
    match e.get(kind) {
        Some(ContextValue::String(s)) => vec![s.clone()],
        Some(ContextValue::Strings(v)) => v.clone(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use elench::ops::error::{rejected_pattern, AGENT_INPUT_CODE, CODE};

    fn line(args: &[&str]) -> Vec<OsString> {
        std::iter::once("elench")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect()
    }

    /// The errors of a line clap refuses.
    fn errors_of(args: &[&str]) -> Vec<ArgError> {
        let l = line(args);
        assert!(Cli::try_parse_from(&l).is_err(), "{args:?} is refused");
        refusal(&l).errors
    }

    fn params(errors: &[ArgError]) -> Vec<(&str, Option<&str>)> {
        errors
            .iter()
            .map(|e| (e.param.as_str(), e.value.as_deref()))
            .collect()
    }

    #[test]
    fn a_mistyped_option_or_command_gets_the_name_it_was_meant_to_be() {
        let tips = |args: &[&str]| refusal(&line(args)).tips;
        assert_eq!(
            tips(&["status", "--al"]),
            vec!["a similar argument exists: '--all'"]
        );
        assert_eq!(
            tips(&["stauts"]),
            vec!["a similar subcommand exists: 'status'"]
        );
        assert_eq!(
            tips(&["log", "--limt", "5"]),
            vec!["a similar argument exists: '--limit'"]
        );
        // Nothing near: no tip rather than a wild guess.
        assert!(tips(&["log", "--frobnicate"]).is_empty());
        assert!(tips(&["zzzzzz"]).is_empty());
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn every_error_of_a_line_is_found() {
        let errors = errors_of(&[
            "status",
            "cl_bogus",
            "--limit",
            "99999999999999999999999",
            "--frobnicate",
        ]);
        assert_eq!(
            params(&errors),
            vec![
                ("--frobnicate", None),
                ("--limit", Some("99999999999999999999999")),
                ("<ID>", Some("cl_bogus")),
            ]
        );
        assert_eq!(
            errors[0].message,
            "unexpected argument '--frobnicate' found"
        );
        let errors = errors_of(&["status", "--all", "--limit", "0", "--cursor", "soon"]);
        assert_eq!(
            params(&errors),
            vec![("--limit", Some("0")), ("--cursor", Some("soon"))]
        );
        assert_eq!(errors[0].message, "--limit must be between 1 and 10000");
        let errors = errors_of(&[
            "check", "cl_bogus", "--key", "k", "--jobs", "0", "--repeat", "0", "--runner", "x",
        ]);
        assert_eq!(
            params(&errors),
            vec![
                ("<ID>", Some("cl_bogus")),
                ("--jobs", Some("0")),
                ("--repeat", Some("0")),
                ("--runner", Some("x")),
            ]
        );
        assert_eq!(errors[1].message, "--jobs must be more than 0");
    }

    #[test]
    fn an_unknown_option_takes_its_value_along() {
        let errors = errors_of(&["log", "--frobnicate", "5", "--limit", "x"]);
        assert_eq!(
            params(&errors),
            vec![("--frobnicate", None), ("--limit", Some("x"))]
        );
        let errors = errors_of(&["log", "--frobnicate=5", "--cursor", "no"]);
        assert_eq!(
            params(&errors),
            vec![("--frobnicate", None), ("--cursor", Some("no"))]
        );
        // Where the next token has a place of its own, it keeps it.
        let errors = errors_of(&["show", "--frobnicate", "cl_zz"]);
        assert_eq!(
            params(&errors),
            vec![("--frobnicate", None), ("<ID>", Some("cl_zz"))]
        );
    }

    #[test]
    fn a_value_taken_for_an_option_is_one_error() {
        let errors = errors_of(&["log", "--limit", "-3"]);
        assert_eq!(params(&errors), vec![("--limit", Some("-3"))]);
        let errors = errors_of(&["log", "--limit", "-3", "--frobnicate"]);
        assert_eq!(
            params(&errors),
            vec![("--limit", Some("-3")), ("--frobnicate", None)]
        );
        // Before an option it knows, the option simply has no value.
        let errors = errors_of(&["log", "--limit", "--cursor", "3"]);
        assert_eq!(params(&errors), vec![("--limit", None)]);
    }

    #[test]
    fn a_refused_argument_is_not_reported_missing() {
        let errors = errors_of(&["completions", "zsh2", "--frobnicate"]);
        assert_eq!(
            params(&errors),
            vec![("--frobnicate", None), ("<SHELL>", Some("zsh2"))]
        );
        let errors = errors_of(&["why", "bad", "cl_abcd"]);
        assert_eq!(params(&errors), vec![("<ID>", Some("bad"))]);
        // A refused positional value does not move the next one into its place.
        let errors = errors_of(&["remote", "add", "../up", "/x.git"]);
        assert_eq!(params(&errors), vec![("<NAME>", Some("../up"))]);
        let errors = errors_of(&["remote", "add", "bad/name", ""]);
        assert_eq!(
            params(&errors),
            vec![("<NAME>", Some("bad/name")), ("<URL>", Some(""))]
        );
        // A missing argument that was never given is.
        let errors = errors_of(&["blast", "--frobnicate"]);
        assert_eq!(
            params(&errors),
            vec![("--frobnicate", None), ("<ID>", None)]
        );
        let errors = errors_of(&["status", "--frobnicate"]);
        assert_eq!(
            params(&errors),
            vec![("--frobnicate", None), ("<IDS>", None)]
        );
        assert!(
            errors[1].message.contains("--all") && errors[1].message.contains("<ID>"),
            "{}",
            errors[1].message
        );
    }

    #[test]
    fn conflicts_and_repeats_are_found_and_the_rest_checked() {
        let errors = errors_of(&["status", "--all", "cl_zz", "--frobnicate"]);
        assert_eq!(
            params(&errors),
            vec![
                ("--frobnicate", None),
                ("--all", None),
                ("<ID>", Some("cl_zz"))
            ]
        );
        assert_eq!(
            errors[1].message,
            "the argument '--all' cannot be used with '[IDS]...'"
        );
        let errors = errors_of(&["log", "--limit", "5", "--limit", "0"]);
        assert_eq!(params(&errors), vec![("--limit", None)]);
        assert_eq!(
            errors[0].message,
            "the argument '--limit <LIMIT>' cannot be used multiple times"
        );
        // A requirement only clap knows, asked of it once on the line without the refused
        // tokens.
        let errors = errors_of(&["status", "--all", "--no-ignore", "--limit", "0"]);
        assert_eq!(
            params(&errors),
            vec![("--limit", Some("0")), ("--at", None)]
        );
        assert_eq!(
            errors[1].message,
            "the following required arguments were not provided: --at <DIR>"
        );
    }

    #[test]
    fn a_refused_conflict_that_stands_in_for_a_required_argument_is_the_only_error() {
        // `--signer` stands in for the ID: refusing it for its conflict leaves nothing missing.
        for args in [
            &["blast", "--signer", "abcd", "--invert"][..],
            &["blast", "--invert", "--signer", "abcd"],
        ] {
            let errors = errors_of(args);
            assert_eq!(errors.len(), 1, "{args:?}: {errors:?}");
            assert!(
                errors[0].message.contains("cannot be used with"),
                "{errors:?}"
            );
        }
        // With neither, the ID is missing still.
        let errors = errors_of(&["blast", "--invert"]);
        assert_eq!(params(&errors), vec![("<ID>", None)]);
    }

    #[test]
    fn the_walk_agrees_with_clap_where_clap_reports_the_error() {
        for args in [
            &["log", "--frobnicate"][..],
            &["log", "--limit"],
            &["log", "--limit", "x"],
            &["log", "-abc"],
            &["frob"],
            &["keys", "frob"],
            &["keys"],
            &["show"],
            &["status", "--all", "--status", "x"],
            &["status", "--all", "--all"],
            &["status", "cl_abcd", "--all"],
            &["--format", "xml", "log"],
            &["log", "x"],
            &["why"],
        ] {
            let l = line(args);
            let clap = clap_message(&Cli::try_parse_from(&l).unwrap_err());
            let errors = refusal(&l).errors;
            let ours = &errors[0].message;
            if args == ["why"] {
                // Two missing: one error each, as before.
                assert_eq!(errors.len(), 2, "{errors:?}");
                assert!(ours.contains("<FROM>"), "{ours}");
                continue;
            }
            assert_eq!(errors.len(), 1, "{args:?}: {errors:?}");
            assert_eq!(ours, &clap, "{args:?}");
        }
    }

    #[test]
    fn help_asked_before_any_error_in_clap_words_is_still_help() {
        let asked = |args: &[&str]| refusal(&line(args)).asked;
        assert_eq!(
            asked(&["status", "cl_bogus", "--help"]),
            Some(Asked::LongHelp)
        );
        assert_eq!(
            asked(&["log", "--limit", "0", "-h"]),
            Some(Asked::ShortHelp)
        );
        assert_eq!(asked(&["show", "x", "--version"]), Some(Asked::Version));
        // clap stops at its own error first.
        assert_eq!(asked(&["log", "--frobnicate", "--help"]), None);
        assert_eq!(asked(&["log", "--limit", "x", "--help"]), None);
    }

    #[test]
    fn the_command_is_named_from_the_line() {
        assert_eq!(
            refusal(&line(&["keys", "retire", "x"])).command,
            "keys retire"
        );
        assert_eq!(refusal(&line(&["--wait", "x", "log"])).command, "log");
        assert_eq!(refusal(&line(&["frob"])).command, "elench");
    }

    #[test]
    fn made_up_identifiers_are_named_by_their_pattern() {
        for (value, want) in [
            ("../../etc/passwd", Some("path_traversal")),
            ("x/..", Some("path_traversal")),
            ("..", Some("path_traversal")),
            ("..\\x", Some("path_traversal")),
            ("..%2Fx", Some("path_traversal")),
            ("%2e%2e", Some("path_traversal")),
            ("cl_%2e%2e%2fetc", Some("path_traversal")),
            ("cl_abcd%2e", Some("percent_encoded")),
            ("me%40host", Some("percent_encoded")),
            ("cl_abcd?x=1", Some("query")),
            ("a&b", Some("query")),
            ("cl_abcd#frag", Some("fragment")),
            ("cl_bogus", None),
            ("a..b", None),
            ("bad/name", None),
            ("100%", None),
        ] {
            assert_eq!(rejected_pattern(value), want, "{value}");
        }
        let errors = errors_of(&["show", "cl_abcd#x"]);
        assert_eq!(errors[0].to_input().code(), AGENT_INPUT_CODE);
        assert_eq!(
            errors[0].to_input().to_json()["rejected_pattern"],
            "fragment"
        );
        let errors = errors_of(&["claim", "--depends-on", "../x"]);
        assert_eq!(errors[0].param, "--depends-on");
        assert_eq!(errors[0].to_input().code(), AGENT_INPUT_CODE);
        let errors = errors_of(&["show", "cl_bogus"]);
        assert_eq!(errors[0].to_input().code(), CODE);
        assert!(errors[0]
            .to_input()
            .to_json()
            .get("rejected_pattern")
            .is_none());
    }

    #[test]
    fn no_line_makes_it_panic_and_every_refused_line_has_an_error() {
        let odd = [
            vec!["--"],
            vec!["-"],
            vec!["-x", "-y", "-z"],
            vec!["log", "-"],
            vec!["log", "--limit"],
            vec!["log", "--limit="],
            vec!["log", "--limit=", "--limit="],
            vec!["log", "-abc"],
            vec!["status", "--all", "--all"],
            vec!["frobnicate", "--frobnicate"],
            vec!["keys"],
            vec!["keys", "retire"],
            vec!["log", "--format"],
            vec!["--format", "xml", "--wait", "x", "log", "--timeout", "soon"],
            vec!["log", "--all=1"],
            vec!["keys", "retire", "-y=3"],
            vec!["help", "frob"],
        ];
        for args in odd {
            let l = line(&args);
            if Cli::try_parse_from(&l).is_err() {
                assert!(!refusal(&l).errors.is_empty(), "{args:?}");
            }
        }
        // Lines made at random from pieces of real ones.
        let pieces = [
            "status",
            "log",
            "blast",
            "keys",
            "retire",
            "list",
            "completions",
            "check",
            "push",
            "remote",
            "add",
            "--all",
            "--limit",
            "0",
            "-3",
            "x",
            "cl_bogus",
            "cl_abcd",
            "--cursor",
            "--frobnicate",
            "--frobnicate=1",
            "--limit=",
            "--format",
            "xml",
            "json",
            "--wait",
            "--timeout",
            "soon",
            "--",
            "-",
            "-abc",
            "zsh",
            "--path",
            "[",
            "--at",
            "--depth",
            "--store",
            "--connect-timeout",
            "-o",
            "-y",
            "--output",
            "--command-timeout",
        ];
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for _ in 0..1000 {
            let len = 1 + next(8);
            let args: Vec<&str> = (0..len).map(|_| pieces[next(pieces.len())]).collect();
            let l = line(&args);
            match Cli::try_parse_from(&l) {
                Err(e)
                    if !matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) =>
                {
                    let r = refusal(&l);
                    assert!(!r.errors.is_empty(), "{args:?}");
                    // At most one error per token, and what is missing.
                    assert!(r.errors.len() <= args.len() + 4, "{args:?}: {:?}", r.errors);
                }
                _ => {}
            }
        }
        // Many errors: each found, in one walk.
        let many: Vec<String> = (0..200).map(|i| format!("--bogus{i}")).collect();
        let mut args = vec!["log"];
        args.extend(many.iter().map(String::as_str));
        assert_eq!(errors_of(&args).len(), 200);
    }
}
