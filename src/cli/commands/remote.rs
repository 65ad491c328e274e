//! `elench remote add NAME URL` / `remote list`: the git remotes a store exchanges its log
//! with. They are kept in the store, not in any git checkout around it.

use super::sync::sync_failure;
use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::output::Report;
use crate::ops::error::ArgError;
use crate::store::{locate, Store};
use crate::sync::remote::{self, SyncLock};
use serde_json::json;
use std::time::Duration;

#[derive(Debug, clap::Subcommand)]
pub enum RemoteCommand {
    /// Add a remote: a path to a (bare) git repository, or any URL git accepts (ssh, https)
    Add(AddArgs),
    /// List the store's remotes
    List,
}

impl RemoteCommand {
    pub fn name(&self) -> &'static str {
        match self {
            RemoteCommand::Add(_) => "remote add",
            RemoteCommand::List => "remote list",
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// The remote's name (letters, digits, '.', '_', '-'), e.g. origin
    pub name: String,
    /// Where it is; a relative path is made absolute
    pub url: String,
}

/// A remote's name that cannot be one (`param` is how the command line names it).
pub fn name_error(param: &str, name: &str) -> Option<ArgError> {
    remote::check_name(name)
        .err()
        .map(|e| ArgError::identifier(param, name, e.to_string()))
}

/// What `remote add` refuses whatever the store holds, both at once, for the check of the
/// whole command line ([`crate::cli::args`]).
pub fn argument_errors(a: &AddArgs) -> Vec<ArgError> {
    let mut errors = Vec::new();
    if let Err(e) = remote::check_url(&a.url) {
        errors.push(ArgError::new("<URL>", Some(&a.url), e.to_string()));
    }
    errors.extend(name_error("<NAME>", &a.name));
    errors
}

pub fn run(c: RemoteCommand, g: &Globals) -> Result<Report, Failure> {
    let root = locate(g.store.as_deref())?;
    Store::check(&root)?;
    match c {
        RemoteCommand::Add(a) => {
            let cwd = std::env::current_dir().map_err(|e| Failure::io(".", e))?;
            let url = remote::normalize_url(&a.url, &cwd).map_err(sync_failure)?;
            let _lock =
                SyncLock::acquire(&root, Duration::from_secs(g.wait)).map_err(sync_failure)?;
            let added = remote::add(&root, &a.name, &url).map_err(sync_failure)?;
            let text = if added {
                format!("added remote {} at {url}\n", a.name)
            } else {
                format!("remote {} is already at {url} (nothing changed)\n", a.name)
            };
            Ok(Report::new(
                json!({"name": a.name, "url": url, "added": added,
                       "effect": if added { "created" } else { "noop" }}),
                text,
            ))
        }
        RemoteCommand::List => {
            let remotes = remote::list(&root).map_err(sync_failure)?;
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
