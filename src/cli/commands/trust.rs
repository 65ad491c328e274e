//! `elench trust sign | show | pin`: the team's trust policies (`ops::trust`).

use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::output::Report;
use std::path::PathBuf;

#[derive(Debug, clap::Subcommand)]
pub enum TrustCommand {
    /// Build and sign the next trust policy from a trust.toml, or add a signature to a
    /// policy envelope (thresholds of several root keys)
    #[command(disable_version_flag = true)]
    Sign(SignArgs),
    /// The chain of trust policies: pins, versions, the policy in force and its keys, what
    /// waits, equivocations, expiry
    Show,
    /// Pin a root public key: the only keys a version 1 is taken from (never trust on first
    /// use)
    Pin(PinArgs),
}

impl TrustCommand {
    pub fn name(&self) -> &'static str {
        match self {
            TrustCommand::Sign(_) => "trust sign",
            TrustCommand::Show => "trust show",
            TrustCommand::Pin(_) => "trust pin",
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct SignArgs {
    /// trust.toml (builds the next version on the store's chain) or a policy envelope (adds
    /// a signature)
    pub input: PathBuf,
    /// A root private key (PEM PKCS#8)
    #[arg(long, value_name = "ROOT.pem")]
    pub key: PathBuf,
    /// Where to write the policy envelope (default: the input's path with extension .dsse;
    /// for an envelope, the envelope itself is rewritten)
    #[arg(short = 'o', long = "output", value_name = "POLICY.dsse",
          value_parser = crate::cli::files::output_path_buf)]
    pub out: Option<PathBuf>,
    /// Also take the policy into this store (as `elench add POLICY.dsse` would)
    #[arg(long)]
    pub append: bool,
    /// The version to build (default: the one after the policy in force, or 1)
    #[arg(long = "version", id = "policy_version", value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub policy_version: Option<u64>,
}

#[derive(Debug, clap::Args)]
pub struct PinArgs {
    /// The root public key (PEM SubjectPublicKeyInfo), from the team itself
    pub key: PathBuf,
    /// A name for it (default: the file's name without its extension)
    #[arg(long)]
    pub name: Option<String>,
}

pub fn run(c: TrustCommand, g: &Globals) -> Result<Report, Failure> {
    let ctx = g.context();
    let report = match c {
        TrustCommand::Pin(a) => {
            let pem = crate::cli::files::read_key_file(&a.key)?;
            let stem = a.key.file_stem().map(|s| s.to_string_lossy().into_owned());
            let p = elench::ops::trust::pin(&ctx, &pem, a.name.as_deref().or(stem.as_deref()))?;
            let text = match p.effect {
                "created" => format!("pinned root key {} ({})\n", p.name, p.keyid),
                _ => format!("root key {} is pinned already (nothing changed)\n", p.keyid),
            };
            Report::new(crate::cli::common::to_data(&p)?, text)
        }
        TrustCommand::Show => {
            let data = elench::ops::trust::show(&ctx)?;
            Report::new(data.clone(), show_text(&data))
        }
        TrustCommand::Sign(a) => {
            let key = crate::cli::files::read_signing_key_file(&a.key)?;
            let signed =
                elench::ops::trust::sign(&ctx, &a.input, &key, a.policy_version, a.append)?;
            let is_envelope = std::fs::read(&a.input)
                .map(|b| elench::trust::is_policy(&b))
                .unwrap_or(false);
            let out = a.out.clone().unwrap_or_else(|| {
                if is_envelope {
                    a.input.clone()
                } else {
                    a.input.with_extension("dsse")
                }
            });
            if let Some(s) = ctx.open_store_if_any()? {
                crate::cli::common::refuse_inside_store(&out, s.root())?;
            }
            let mut bytes = signed.envelope.clone();
            bytes.push(b'\n');
            crate::cli::files::write_atomically(&out, &bytes)?;
            let mut data = crate::cli::common::to_data(&signed)?;
            data["envelope_path"] = serde_json::json!(out.display().to_string());
            data["effect"] = serde_json::json!(match &signed.appended {
                Some(a) => a.effect,
                None => "created",
            });
            let text = format!(
                "signed trust policy version {} ({}) of {}; signatures of {}\nwrote {}\n{}",
                signed.version,
                signed.id,
                signed.team,
                signed.signed_by.join(", "),
                out.display(),
                match &signed.appended {
                    Some(a) => format!("appended: {}\n", a.effect),
                    None => String::new(),
                }
            );
            Report::new(data, text)
        }
    };
    Ok(report)
}

fn show_text(d: &serde_json::Value) -> String {
    let mut t = String::new();
    let pins = d["pins"].as_array().map(Vec::len).unwrap_or(0);
    t.push_str(&format!("pins: {pins}\n"));
    for p in d["pins"].as_array().into_iter().flatten() {
        t.push_str(&format!(
            "  {} {}\n",
            p["name"].as_str().unwrap_or(""),
            p["keyid"].as_str().unwrap_or("")
        ));
    }
    match d["in_force"].as_object() {
        None => t.push_str("no trust policy in force\n"),
        Some(p) => {
            t.push_str(&format!(
                "policy in force: version {} ({}) of {}{}\n",
                p["version"],
                p["id"].as_str().unwrap_or(""),
                p["team"].as_str().unwrap_or(""),
                match p["expires"].as_str() {
                    Some(e) if p["expired"] == serde_json::json!(true) =>
                        format!(", EXPIRED at {e}"),
                    Some(e) => format!(", expires {e}"),
                    None => String::new(),
                }
            ));
            for k in p["keys"].as_array().into_iter().flatten() {
                t.push_str(&format!(
                    "  {} {} {}\n",
                    k["role"].as_str().unwrap_or(""),
                    k["name"].as_str().unwrap_or(""),
                    k["keyid"].as_str().unwrap_or("")
                ));
            }
        }
    }
    if let Some(v) = d["missing_version"].as_u64() {
        t.push_str(&format!(
            "waiting for version {v}: later versions are held until it arrives\n"
        ));
    }
    for e in d["equivocations"].as_array().into_iter().flatten() {
        t.push_str(&format!(
            "EQUIVOCATION at version {}: {}\n",
            e["version"],
            e["id"].as_str().unwrap_or("")
        ));
    }
    let local = d["local_keys"].as_array().map(Vec::len).unwrap_or(0);
    if local > 0 {
        t.push_str(&format!(
            "{local} key(s) trusted locally (keys add), beside the policy\n"
        ));
    }
    t
}
