//! `elench remote add NAME URL` / `remote list` / `remote witnesses` / `remote forget`: the
//! git remotes a store exchanges its log with. They are kept in the store, not in any git
//! checkout around it.

use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::output::Report;
use elench::ops::sync::{add_remote, list_remotes};
use serde_json::json;

#[derive(Debug, clap::Subcommand)]
pub enum RemoteCommand {
    /// Add a remote: a path to a (bare) git repository, or any URL git accepts (ssh, https)
    Add(AddArgs),
    /// List the store's remotes
    List,
    /// Keep a witness policy (a C2SP tlog-policy file) with a remote: push asks its
    /// witnesses, pull checks the remote's checkpoint against it (docs/witness.md)
    Witnesses(WitnessesArgs),
    /// Forget what this store remembers of a remote's past (the commit it last left there,
    /// the remote's sequence and last checkpoint, its witnesses' sizes), so the next pull
    /// takes the history the remote shows now: for a store that cannot push back what a
    /// rewound remote lost (docs/sharing.md)
    Forget(ForgetArgs),
}

#[derive(Debug, clap::Args)]
pub struct ForgetArgs {
    /// The remote's name
    #[arg(value_parser = crate::cli::values::remote_name)]
    pub name: crate::cli::values::RemoteName,
}

#[derive(Debug, clap::Args)]
pub struct WitnessesArgs {
    /// The remote's name
    #[arg(value_parser = crate::cli::values::remote_name)]
    pub name: crate::cli::values::RemoteName,
    /// The tlog-policy file
    pub file: String,
}

impl RemoteCommand {
    pub fn name(&self) -> &'static str {
        match self {
            RemoteCommand::Add(_) => "remote add",
            RemoteCommand::List => "remote list",
            RemoteCommand::Witnesses(_) => "remote witnesses",
            RemoteCommand::Forget(_) => "remote forget",
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// The remote's name (letters, digits, '.', '_', '-'), e.g. origin
    #[arg(value_parser = crate::cli::values::remote_name)]
    pub name: crate::cli::values::RemoteName,
    /// Where it is; a relative path is made absolute
    #[arg(value_parser = crate::cli::values::remote_url)]
    pub url: String,
}

pub fn run(c: RemoteCommand, g: &Globals) -> Result<Report, Failure> {
    let ctx = g.context();
    match c {
        RemoteCommand::Add(a) => {
            let r = add_remote(&ctx, &a.name, &a.url)?;
            let text = if r.added {
                format!("added remote {} at {}\n", r.name, r.url)
            } else {
                format!(
                    "remote {} is already at {} (nothing changed)\n",
                    r.name, r.url
                )
            };
            let data = crate::cli::common::to_data(&r)?;
            Ok(Report::new(data, text))
        }
        RemoteCommand::Witnesses(a) => {
            let r = elench::ops::sync::set_witnesses(&ctx, &a.name, &a.file)?;
            let text = format!(
                "remote {}: witness policy with {} witness(es), {}\n",
                r.name,
                r.witnesses,
                if r.quorum {
                    "a quorum to meet"
                } else {
                    "no quorum (`quorum none`)"
                }
            );
            let data = crate::cli::common::to_data(&r)?;
            Ok(Report::new(data, text))
        }
        RemoteCommand::Forget(a) => {
            let r = elench::ops::sync::forget_remote(&ctx, &a.name)?;
            let text = if r.effect == "noop" {
                format!(
                    "remote {}: nothing was remembered (nothing changed)\n",
                    r.name
                )
            } else {
                format!(
                    "remote {}: forgotten; the next pull takes its history as it is\n",
                    r.name
                )
            };
            let data = crate::cli::common::to_data(&r)?;
            Ok(Report::new(data, text))
        }
        RemoteCommand::List => {
            let remotes = list_remotes(&ctx)?;
            let mut text = String::new();
            for r in &remotes {
                text.push_str(&format!("{}\t{}\n", r.name, r.url));
            }
            if remotes.is_empty() {
                text.push_str("no remotes; add one with `elench remote add origin URL`\n");
            }
            Ok(Report::new(json!({"remotes": remotes}), text))
        }
    }
}
