//! `elench keys …`: make signing keys (and, with a store, manage the trusted ones).

use crate::cli::failure::Failure;
use crate::cli::output::Report;
use crate::cli::Globals;
use crate::keys::{generate_signing_key, keyid, public_key_pem, signing_key_pem, Role};
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, clap::Subcommand)]
pub enum KeysCommand {
    /// Make a new Ed25519 key pair: the private key (PEM PKCS#8, mode 0600) goes to --out,
    /// the public key (PEM SubjectPublicKeyInfo) is printed and optionally written to --pub-out
    Generate(GenerateArgs),
}

impl KeysCommand {
    pub fn name(&self) -> &'static str {
        match self {
            KeysCommand::Generate(_) => "keys generate",
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
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Also write the public key PEM here
    #[arg(long, value_name = "FILE")]
    pub pub_out: Option<PathBuf>,
}

pub fn run(cmd: KeysCommand, g: &Globals) -> Result<Report, Failure> {
    match cmd {
        KeysCommand::Generate(a) => generate(a, g),
    }
}

fn generate(a: GenerateArgs, _g: &Globals) -> Result<Report, Failure> {
    if a.name.is_empty() {
        return Err(Failure::Usage("--name must not be empty".into()));
    }
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
    let text = format!(
        "wrote private key {} (mode 0600)\nkeyid {id}\nrole {} name {}\n{public_pem}",
        a.out.display(),
        a.role,
        a.name
    );
    Ok(Report::new(
        json!({
            "keyid": id,
            "role": a.role,
            "name": a.name,
            "private_key_path": a.out.display().to_string(),
            "public_key_path": a.pub_out.as_ref().map(|p| p.display().to_string()),
            "public_key_pem": public_pem,
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
