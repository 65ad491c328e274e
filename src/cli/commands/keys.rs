//! `elench keys …`: make signing keys (and, with a store, manage the trusted ones), through
//! [`elench::ops::keys`].

use crate::cli::common::to_data;
use crate::cli::common::Page;
use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::output::Report;
use elench::keys::Role;
use elench::ops::keys::{self, GenerateInput};
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, clap::Subcommand)]
pub enum KeysCommand {
    /// Make a new Ed25519 key pair: the private key (PEM PKCS#8, mode 0600) goes to --output,
    /// the public key (PEM SubjectPublicKeyInfo) is printed and optionally written to --pub-out
    Generate(GenerateArgs),
    /// Trust a public key (PEM SubjectPublicKeyInfo) in the store, with a role and a name
    Add(AddArgs),
    /// List the store's trusted keys, retired ones included
    List(ListArgs),
    /// Retire a key: new envelopes signed only by it are rejected; accepted claims stay
    Retire(RetireArgs),
}

impl KeysCommand {
    pub fn name(&self) -> &'static str {
        match self {
            KeysCommand::Generate(_) => "keys generate",
            KeysCommand::Add(_) => "keys add",
            KeysCommand::List(_) => "keys list",
            KeysCommand::Retire(_) => "keys retire",
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct GenerateArgs {
    /// harness, agent or human
    #[arg(long)]
    pub role: Role,
    /// A name for the key's holder
    #[arg(long, value_parser = crate::cli::values::key_name)]
    pub name: String,
    /// Where to write the private key (refuses to overwrite)
    #[arg(long = "output", visible_alias = "out", value_name = "FILE",
          value_parser = crate::cli::files::output_path_buf)]
    pub out: PathBuf,
    /// Also write the public key PEM here
    #[arg(long, value_name = "FILE")]
    pub pub_out: Option<PathBuf>,
    /// Also trust the new key in the store, with this role and name (as `keys add` would)
    #[arg(long)]
    pub trust: bool,
}

#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// harness, agent or human
    #[arg(long)]
    pub role: Role,
    /// A name for the key's holder
    #[arg(long)]
    pub name: String,
    /// The public key file (PEM)
    pub pubkey: PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub page: Page,
}

#[derive(Debug, clap::Args)]
pub struct RetireArgs {
    /// The keyid (hex SHA-256 of the raw public key)
    #[arg(value_parser = crate::cli::values::keyid)]
    pub keyid: crate::cli::values::KeyId,
    /// Retire without asking (required when stdin is not a terminal)
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Retire: the confirmation a destructive command needs when nobody is asked (the same
    /// as --yes)
    #[arg(long)]
    pub confirm_destructive: bool,
    /// Never ask: without --yes or --confirm-destructive, exit 4 (INPUT_REQUIRED) instead
    #[arg(long)]
    pub non_interactive: bool,
    /// Say what would be retired, change nothing
    #[arg(long, conflicts_with_all = ["yes", "confirm_destructive"])]
    pub dry_run: bool,
}

pub fn run(cmd: KeysCommand, g: &Globals) -> Result<Report, Failure> {
    match cmd {
        KeysCommand::Generate(a) => generate(a, g),
        KeysCommand::Add(a) => add(a, g),
        KeysCommand::List(a) => list(a, g),
        KeysCommand::Retire(a) => retire(a, g),
    }
}

fn generate(a: GenerateArgs, g: &Globals) -> Result<Report, Failure> {
    let input = GenerateInput {
        role: a.role,
        name: a.name,
        out: a.out,
        pub_out: a.pub_out,
    };
    let made = keys::generate_at(&g.context(), &input, a.trust)?;
    let mut text = format!(
        "wrote private key {} (mode 0600)\nkeyid {}\nrole {} name {}\n",
        made.private_key_path, made.keyid, made.role, made.name
    );
    if made.trusted {
        text.push_str("trusted in the store\n");
    }
    text.push_str(&made.public_key_pem);
    Ok(Report::new(to_data(&made)?, text))
}

fn add(a: AddArgs, g: &Globals) -> Result<Report, Failure> {
    let added = keys::add_file(&g.context(), &a.pubkey, a.role, &a.name)?;
    let text = if added.effect == "created" {
        format!(
            "trusted {} key {:?}: {}\n",
            added.role, added.name, added.keyid
        )
    } else {
        format!(
            "key {} was already trusted (nothing changed)\n",
            added.keyid
        )
    };
    Ok(Report::new(to_data(&added)?, text))
}

fn list(a: ListArgs, g: &Globals) -> Result<Report, Failure> {
    let store = g.context().open_store()?;
    let keys = keys::list(&store)?;
    let (page, pagination_meta, cursors) = a.page.of_slice(&keys)?;
    let mut text = String::new();
    for k in page {
        text.push_str(&format!(
            "{}  {:<7} {}{}\n",
            k.keyid,
            k.role.as_str(),
            k.name,
            if k.retired { "  (retired)" } else { "" }
        ));
    }
    if page.is_empty() {
        text.push_str("no trusted keys (add one with `elench keys add`)\n");
    }
    Ok(Report {
        data: json!({ "keys": page }),
        text,
        pagination: Some(pagination_meta),
        cursors,
        ..Report::default()
    })
}

fn retire(a: RetireArgs, g: &Globals) -> Result<Report, Failure> {
    let store = g.context().open_store()?;
    let plan = keys::plan_retire(&store, &a.keyid)?;
    let what = &plan.what;
    let confirmed = a.yes || a.confirm_destructive;
    if !plan.key.retired {
        if a.dry_run {
            let mut report = Report::new(
                json!({"keyid": plan.key.keyid, "retired": false, "effect": "would_update",
                       "would_affect": plan.would_affect, "dry_run": true}),
                format!(
                    "would retire {what}: envelopes signed only by it would be rejected from \
                     then on; claims it already signed stay (dry run, nothing changed)\n"
                ),
            );
            report.meta.insert("dry_run".into(), json!(true));
            return Ok(report);
        }
        if !confirmed {
            confirm_retire(what, a.non_interactive, plan.would_affect.clone())?;
        }
    }
    let retired = keys::retire(&store, &a.keyid)?;
    let text = if retired.effect == "updated" {
        format!("retired key {}\n", a.keyid)
    } else {
        format!("key {} was already retired (nothing changed)\n", a.keyid)
    };
    let mut report = Report::new(to_data(&retired)?, text);
    report.meta.insert("dry_run".into(), json!(false));
    report.meta.insert("confirmed".into(), json!(true));
    Ok(report)
}

/// Retiring a key cannot be undone: ask on a terminal, refuse elsewhere unless confirmed
/// (`--yes`, `--confirm-destructive`); with `--non-interactive`, never ask.
fn confirm_retire(
    what: &str,
    non_interactive: bool,
    would_affect: serde_json::Value,
) -> Result<(), Failure> {
    use std::io::{BufRead, IsTerminal};
    if non_interactive {
        return Err(Failure::Precondition {
            code: elench::error::Code::InputRequired,
            message: format!(
                "not retiring {what}: it needs a confirmation and --non-interactive forbids \
                 asking; pass --yes (or --confirm-destructive) to retire, or --dry-run to see \
                 what it would do"
            ),
        });
    }
    let refuse = |why: &str| Failure::ConfirmationRequired {
        message: format!(
            "not retiring {what}: {why}. Retiring cannot be undone; pass --confirm-destructive \
             (or --yes) to retire, or --dry-run to see what it would do"
        ),
        would_affect: would_affect.clone(),
    };
    if !std::io::stdin().is_terminal() {
        return Err(refuse("stdin is not a terminal, so there is no one to ask"));
    }
    eprint!("retire {what}? New envelopes signed only by it will be rejected. [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| Failure::io("<stdin>", e))?;
    if matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
        Ok(())
    } else {
        Err(refuse("not confirmed"))
    }
}
