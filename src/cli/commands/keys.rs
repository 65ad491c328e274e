//! `elench keys …`: make signing keys (and, with a store, manage the trusted ones).

use crate::cli::common::{open_store, Page};
use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::output::Report;
use crate::keys::{
    generate_signing_key, keyid, public_key_pem, read_public_key_pem, signing_key_pem, Role,
    TrustedKey,
};
use crate::ops::error::ArgError;
use crate::store::StoredKey;
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
    #[arg(long)]
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
    pub keyid: String,
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

/// `keys generate --name ""`, which names nobody.
pub fn name_error(name: &str) -> Option<ArgError> {
    name.is_empty()
        .then(|| ArgError::new("--name", Some(name), "--name must not be empty"))
}

/// A keyid is 64 lowercase hex digits; anything else (a path, an encoded one) is a wrong
/// argument, refused before the store is touched, not a key that is merely unknown.
pub fn keyid_error(keyid: &str) -> Option<ArgError> {
    let ok = keyid.len() == 64
        && keyid
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    (!ok).then(|| {
        ArgError::identifier(
            "<KEYID>",
            keyid,
            format!(
                "{keyid:?} is not a keyid: give the 64 lowercase hex digits `elench keys list` \
                 shows"
            ),
        )
    })
}

fn generate(a: GenerateArgs, g: &Globals) -> Result<Report, Failure> {
    if let Some(e) = name_error(&a.name) {
        return Err(Failure::Usage(e.message));
    }
    // With --trust, the store must be there before any file is written.
    let store = if a.trust { Some(open_store(g)?) } else { None };
    let sk = generate_signing_key();
    let vk = sk.verifying_key();
    let private_pem = signing_key_pem(&sk).map_err(|r| Failure::rejected(r, None))?;
    let public_pem = public_key_pem(&vk).map_err(|r| Failure::rejected(r, None))?;
    write_new_file(&a.out, private_pem.as_bytes(), 0o600)?;
    if let Some(p) = &a.pub_out {
        if let Err(e) = write_new_file(p, public_pem.as_bytes(), 0o644) {
            // Leave nothing half-made behind.
            let _ = std::fs::remove_file(&a.out);
            return Err(e);
        }
    }
    let id = keyid(&vk);
    if let Some(store) = &store {
        let trusted = TrustedKey::new(a.role, &a.name, vk)
            .map_err(|r| Failure::rejected(r, None))
            .and_then(|k| store.add_key(&k).map_err(Failure::from));
        if let Err(e) = trusted {
            // Leave nothing half-made behind: a key file the store does not trust.
            let _ = std::fs::remove_file(&a.out);
            if let Some(p) = &a.pub_out {
                let _ = std::fs::remove_file(p);
            }
            return Err(e);
        }
    }
    let mut text = format!(
        "wrote private key {} (mode 0600)\nkeyid {id}\nrole {} name {}\n",
        a.out.display(),
        a.role,
        a.name
    );
    if store.is_some() {
        text.push_str("trusted in the store\n");
    }
    text.push_str(&public_pem);
    Ok(Report::new(
        json!({
            "keyid": id,
            "role": a.role,
            "name": a.name,
            "private_key_path": a.out.display().to_string(),
            "public_key_path": a.pub_out.as_ref().map(|p| p.display().to_string()),
            "public_key_pem": public_pem,
            "trusted": store.is_some(),
            "effect": "created",
        }),
        text,
    ))
}

/// Creates `path` with `mode`, refusing to replace an existing file.
pub fn write_new_file(path: &PathBuf, bytes: &[u8], mode: u32) -> Result<(), Failure> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut f = opts.open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            Failure::Io {
                path: path.display().to_string(),
                message: "file exists; refusing to overwrite a key (choose another path)".into(),
            }
        } else {
            Failure::io(path.display(), e)
        }
    })?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .map_err(|e| Failure::io(path.display(), e))
}

fn key_json(k: &StoredKey) -> serde_json::Value {
    json!({"keyid": k.keyid, "role": k.role, "name": k.name, "retired": k.retired})
}

fn add(a: AddArgs, g: &Globals) -> Result<Report, Failure> {
    let path = a.pubkey.display().to_string();
    let pem = crate::cli::files::read_key_file(&a.pubkey)?;
    let vk = read_public_key_pem(&pem).map_err(|r| Failure::rejected(r, Some(path.clone())))?;
    let key = TrustedKey::new(a.role, &a.name, vk).map_err(|r| Failure::rejected(r, Some(path)))?;
    let store = open_store(g)?;
    if let Some(existing) = store.get_key(&key.keyid)? {
        if existing.role != key.role || existing.name != key.name {
            return Err(Failure::Usage(format!(
                "key {} is already trusted as {} {:?}; a key has one role and name",
                key.keyid, existing.role, existing.name
            )));
        }
    }
    let added = store.add_key(&key)?;
    let text = if added {
        format!("trusted {} key {:?}: {}\n", key.role, key.name, key.keyid)
    } else {
        format!("key {} was already trusted (nothing changed)\n", key.keyid)
    };
    Ok(Report::new(
        json!({"keyid": key.keyid, "role": key.role, "name": key.name, "effect": if added {"created"} else {"noop"}}),
        text,
    ))
}

fn list(a: ListArgs, g: &Globals) -> Result<Report, Failure> {
    let store = open_store(g)?;
    let keys = store.list_keys()?;
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
        data: json!({"keys": page.iter().map(key_json).collect::<Vec<_>>()}),
        text,
        pagination: Some(pagination_meta),
        cursors,
        ..Report::default()
    })
}

fn retire(a: RetireArgs, g: &Globals) -> Result<Report, Failure> {
    if let Some(f) = Failure::arguments(keyid_error(&a.keyid).into_iter().collect()) {
        return Err(f);
    }
    let store = open_store(g)?;
    let Some(key) = store.get_key(&a.keyid)? else {
        return Err(key_not_found(&a.keyid));
    };
    let what = format!("{} key {:?} ({})", key.role, key.name, key.keyid);
    // What retiring changes, for a preview and for a refusal alike.
    let would_affect = json!({
        "keys": [{"keyid": key.keyid, "role": key.role, "name": key.name}],
        "reversible": false,
        "description": "new envelopes signed only by this key are rejected; claims it already \
                        signed stay",
    });
    let confirmed = a.yes || a.confirm_destructive;
    if !key.retired {
        if a.dry_run {
            let mut report = Report::new(
                json!({"keyid": key.keyid, "retired": false, "effect": "would_update",
                       "would_affect": would_affect, "dry_run": true}),
                format!(
                    "would retire {what}: envelopes signed only by it would be rejected from \
                     then on; claims it already signed stay (dry run, nothing changed)\n"
                ),
            );
            report.meta.insert("dry_run".into(), json!(true));
            return Ok(report);
        }
        if !confirmed {
            confirm_retire(&what, a.non_interactive, would_affect)?;
        }
    }
    match store.retire_key(&a.keyid)? {
        None => Err(key_not_found(&a.keyid)),
        Some(changed) => {
            let text = if changed {
                format!("retired key {}\n", a.keyid)
            } else {
                format!("key {} was already retired (nothing changed)\n", a.keyid)
            };
            // Retiring changes the key's state: `updated`, one of the spec's four effects
            // (REQ-C-003); `retired: true` says what the update was.
            let mut report = Report::new(
                json!({"keyid": a.keyid, "retired": true,
                       "effect": if changed { "updated" } else { "noop" }}),
                text,
            );
            report.meta.insert("dry_run".into(), json!(false));
            report.meta.insert("confirmed".into(), json!(true));
            Ok(report)
        }
    }
}

fn key_not_found(keyid: &str) -> Failure {
    Failure::NotFound {
        code: crate::error::Code::KeyNotFound,
        message: format!("no trusted key {keyid} (see `elench keys list`)"),
    }
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
            code: crate::error::Code::InputRequired,
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
