//! `elench sign CLAIM.json --key KEY.pem`: id, Statement, DSSE envelope (`ops::sign`); the
//! envelope written to a file or stdout.

use crate::cli::failure::Failure;
use crate::cli::files::{display_source, read_limited, write_atomically};
use crate::cli::globals::Globals;
use crate::cli::output::{Report, Warning};
use elench::envelope::MAX_ENVELOPE_BYTES;
use elench::keys::Role;
use elench::ops::sign::{KeySource, SignInput};
use serde_json::json;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct SignArgs {
    /// The claim (JSON; its `id` may be absent or stale: it is computed). `-` reads stdin
    /// (at most 64 KiB; a larger claim goes in a file)
    #[arg(required_unless_present = "input_file", value_name = "CLAIM.json")]
    pub claim: Option<String>,
    /// The claim's file, in place of the CLAIM.json argument (`-` reads stdin)
    #[arg(long, value_name = "PATH", conflicts_with = "claim")]
    pub input_file: Option<String>,
    /// Private key (PEM PKCS#8)
    #[arg(long, value_name = "KEY.pem")]
    pub key: PathBuf,
    /// Where to write the envelope (default: the claim's path with extension .dsse;
    /// `-` writes the envelope itself to stdout instead of the report)
    #[arg(short = 'o', long = "output", visible_alias = "out", value_name = "OUT.dsse",
          value_parser = crate::cli::files::output_path)]
    pub out: Option<String>,
    /// The signing key's role, when the key is not among the trusted keys
    #[arg(long)]
    pub role: Option<Role>,
    /// Trusted key ROLE:NAME:PUBKEY.pem (repeatable); tells the signing key's role
    #[arg(long, value_name = "ROLE:NAME:PUBKEY.pem")]
    pub trust: Vec<String>,
    /// Print only the claim id on stdout (for scripts: ID=$(elench sign … --id-only));
    /// errors go to stderr
    #[arg(long)]
    pub id_only: bool,
    /// Fill the claim's anchor (tree, path, range, contentDigest) from lines of a file, as
    /// `elench anchor` prints it; the claim's own strategy is kept (default multi)
    #[arg(long, value_name = "PATH[:START-END]")]
    pub anchor: Option<String>,
    /// The tree --anchor's PATH is in (default: the enclosing checkout)
    #[arg(long, value_name = "DIR", requires = "anchor")]
    pub at: Option<PathBuf>,
}

pub fn run(mut a: SignArgs, g: &Globals) -> Result<Report, Failure> {
    a.claim = Some(crate::cli::files::one_input(
        a.claim.take(),
        a.input_file.take(),
    )?);
    if a.id_only {
        if a.out.as_deref() == Some("-") {
            return Err(Failure::usage(
                None,
                "--id-only and -o - both want stdout; write the envelope to a file with -o FILE"
                    .into(),
            ));
        }
        let r = sign(a, g);
        return crate::cli::common::print_id_only(r, g);
    }
    sign(a, g)
}

fn sign(a: SignArgs, g: &Globals) -> Result<Report, Failure> {
    // `run` has put --input-file here, if that is how the claim was given.
    let input = a.claim.clone().unwrap_or_default();
    let claim = read_limited(&input, MAX_ENVELOPE_BYTES)?;
    let signed = elench::ops::sign::sign(
        &g.context(),
        &SignInput {
            claim,
            source: display_source(&input),
            anchor: a.anchor.clone(),
            at: a.at.clone(),
            key: KeySource::File(a.key.clone()),
            role: a.role,
            trust: a.trust.clone(),
        },
    )?;
    let warnings: Vec<Warning> = signed.warnings.iter().map(Warning::from).collect();
    let mut data = crate::cli::common::to_data(&signed)?;
    let envelope = format!("{}\n", signed.envelope);
    if a.out.as_deref() == Some("-") {
        g.stdout_for_product("envelope")?;
        // The envelope itself is the output; no report on stdout.
        crate::cli::files::product_to_stdout(envelope.as_bytes())?;
        return Ok(Report {
            data,
            warnings,
            stdout_taken: true,
            ..Report::default()
        });
    }
    let out = match &a.out {
        Some(p) => PathBuf::from(p),
        None if input == "-" => {
            return Err(Failure::usage(
                None,
                "a claim read from stdin needs -o OUT.dsse (or -o - for stdout)".into(),
            ))
        }
        None => Path::new(&input).with_extension("dsse"),
    };
    refuse_own_input_or_store(&out, &input, g)?;
    write_atomically(&out, envelope.as_bytes())?;
    let text = format!(
        "signed {} ({} {}, by {} key {})\nwrote {}\n",
        signed.id,
        signed.kind,
        signed.origin,
        signed.role,
        signed.signers.join(", "),
        out.display()
    );
    data["envelope_path"] = json!(out.display().to_string());
    data["effect"] = json!("created");
    Ok(Report {
        warnings,
        ..Report::new(data, text)
    })
}

/// `sign` never writes over the claim it read, and nothing but the store writes inside it.
/// The front end's concern: the operation writes no file, and only a command line names one.
fn refuse_own_input_or_store(out: &Path, claim: &str, g: &Globals) -> Result<(), Failure> {
    if claim != "-" {
        let same = match (std::fs::canonicalize(out), std::fs::canonicalize(claim)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if same {
            return Err(Failure::usage(
                None,
                format!(
                    "-o {} is the claim being signed; writing there would destroy it: choose \
                 another path (the default is the claim's path with .dsse)",
                    out.display()
                ),
            ));
        }
    }
    if let Ok(root) = elench::store::locate(g.store.as_deref()) {
        if root.join("FORMAT").is_file() {
            crate::cli::common::refuse_inside_store(out, &root)?;
        }
    }
    Ok(())
}
