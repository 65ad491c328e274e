//! `elench verify FILE.dsse`: the whole ingest validation, nothing stored (`ops::verify`).

use crate::cli::failure::Failure;
use crate::cli::files::{display_source, read_limited};
use crate::cli::globals::Globals;
use crate::cli::output::{Report, Warning};
use elench::envelope::MAX_ENVELOPE_BYTES;
use elench::ops::verify::{VerifyInput, VerifyOutput};

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The envelope (`-` reads stdin, at most 64 KiB; a larger envelope goes in a file)
    #[arg(required_unless_present = "input_file", value_name = "ENVELOPE")]
    pub envelope: Option<String>,
    /// The envelope's file, in place of the ENVELOPE argument (`-` reads stdin)
    #[arg(long, value_name = "PATH", conflicts_with = "envelope")]
    pub input_file: Option<String>,
    /// Trusted key ROLE:NAME:PUBKEY.pem (repeatable)
    #[arg(long, value_name = "ROLE:NAME:PUBKEY.pem")]
    pub trust: Vec<String>,
    /// Print only the claim id on stdout (for scripts: ID=$(elench verify … --id-only));
    /// errors go to stderr
    #[arg(long)]
    pub id_only: bool,
}

pub fn run(mut a: VerifyArgs, g: &Globals) -> Result<Report, Failure> {
    a.envelope = Some(crate::cli::files::one_input(
        a.envelope.take(),
        a.input_file.take(),
    )?);
    if a.id_only {
        let r = verify(a, g);
        return crate::cli::common::print_id_only(r, g);
    }
    verify(a, g)
}

fn verify(a: VerifyArgs, g: &Globals) -> Result<Report, Failure> {
    // `run` has put --input-file here, if that is how the envelope was given.
    let envelope = a.envelope.clone().unwrap_or_default();
    let accepted = elench::ops::verify::verify(
        &g.context(),
        VerifyInput {
            envelope: Box::new(|| read_limited(&envelope, MAX_ENVELOPE_BYTES)),
            source: display_source(&envelope),
            trust: a.trust.clone(),
        },
    )?;
    let warnings = accepted.warnings.iter().map(Warning::from).collect();
    Ok(Report {
        data: crate::cli::common::to_data(&accepted)?,
        text: accepted_text(&accepted),
        warnings,
        ..Report::default()
    })
}

fn accepted_text(a: &VerifyOutput) -> String {
    let signers: Vec<String> = a
        .signer_details
        .iter()
        .map(|s| format!("{} ({} {})", s.keyid, s.role, s.name))
        .collect();
    format!(
        "valid {}\n  kind      {}\n  origin    {}\n  producer  {}\n  signed by {}\n",
        a.id,
        a.kind,
        a.origin,
        a.producer,
        signers.join(", ")
    )
}
