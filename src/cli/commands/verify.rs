//! `elench verify FILE.dsse`: the whole ingest validation, nothing stored.

use crate::cli::failure::Failure;
use crate::cli::files::{display_source, read_limited};
use crate::cli::globals::Globals;
use crate::cli::output::{Report, Warning};
use crate::envelope::MAX_ENVELOPE_BYTES;
use crate::ingest::{verify_envelope, Accepted};
use serde_json::json;

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
    let source = display_source(&envelope);
    let trusted = crate::cli::common::trusted_keys(g, &a.trust)?;
    if trusted.keys().is_empty() {
        return Err(Failure::Usage(
            "no trusted keys: pass --trust ROLE:NAME:PUBKEY.pem, or add keys to a store with `elench keys add`".into(),
        ));
    }
    let bytes = read_limited(&envelope, MAX_ENVELOPE_BYTES)?;
    let accepted = verify_envelope(&bytes, &trusted).map_err(|mut r| {
        if r.code == crate::error::Code::BadEnvelope {
            if let Some(role) = crate::ops::add::unsigned_claim_role(bytes.trim_ascii()) {
                r.message = format!(
                    "this is a claim, not a signed envelope; {}",
                    crate::ops::add::sign_hint(&source, role)
                );
            }
        }
        Failure::rejected(r, Some(source.clone()))
    })?;
    let warnings = ingest_warnings(&accepted);
    Ok(Report {
        data: accepted_json(&accepted, &warnings),
        text: accepted_text(&accepted),
        warnings,
        ..Report::default()
    })
}

/// Warnings about an envelope that was accepted.
pub fn ingest_warnings(a: &Accepted) -> Vec<Warning> {
    let mut w = Vec::new();
    if a.unverified_signatures > 0 {
        w.push(Warning::new(
            "UNVERIFIED_SIGNATURE",
            format!(
                "{} signature(s) in the envelope were not verified by any trusted key",
                a.unverified_signatures
            ),
        ));
    }
    w
}

/// The stable `verify`/`sign` data fields.
pub fn accepted_json(a: &Accepted, warnings: &[Warning]) -> serde_json::Value {
    let c = &a.claim;
    json!({
        "id": c.id,
        "kind": c.kind,
        "origin": c.origin,
        "producer": c.producer,
        "signers": a.signers.iter().map(|s| s.keyid.clone()).collect::<Vec<_>>(),
        "signer_details": a.signers,
        "target": c.target,
        "depends_on": c.depends_on,
        "anchor_tree": c.anchor_tree,
        "warnings": warnings,
    })
}

pub fn accepted_text(a: &Accepted) -> String {
    let c = &a.claim;
    let signers: Vec<String> = a
        .signers
        .iter()
        .map(|s| format!("{} ({} {})", s.keyid, s.role, s.name))
        .collect();
    format!(
        "valid {}\n  kind      {}\n  origin    {}\n  producer  {}\n  signed by {}\n",
        c.id,
        c.kind,
        c.origin,
        c.producer,
        signers.join(", ")
    )
}
