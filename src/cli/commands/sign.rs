//! `elench sign CLAIM.json --key KEY.pem`: id, Statement, DSSE envelope.

use crate::anchor::Strategy;
use crate::claim;
use crate::cli::failure::Failure;
use crate::cli::files::{display_source, read_limited, write_atomically};
use crate::cli::globals::Globals;
use crate::cli::output::{Report, Warning};
use crate::envelope::MAX_ENVELOPE_BYTES;
use crate::error::{Code, Rejection};
use crate::ingest::seal;
use crate::json::{parse_strict, JsonError};
use crate::keys::{check_authority, keyid, read_signing_key_pem, Role};
use crate::ops::anchor::anchor_at;
use crate::ops::tree::tree_dir;
use serde_json::{json, Value};
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
            return Err(Failure::Usage(
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
    let source = display_source(&input);
    let reject = |r: Rejection| Failure::rejected(r, Some(source.clone()));
    let bytes = read_limited(&input, MAX_ENVELOPE_BYTES)?;
    let value = parse_strict(&bytes).map_err(|e| {
        let code = match e {
            JsonError::DuplicateKey { .. } => Code::DuplicateKey,
            JsonError::Syntax { .. } => Code::BadJson,
            _ => Code::SchemaViolation,
        };
        reject(Rejection {
            code,
            pointer: e.pointer().map(str::to_owned),
            message: format!("claim: {e}"),
            details: Vec::new(),
        })
    })?;
    let mut value = value;
    if let Some(spec) = &a.anchor {
        fill_anchor(&mut value, spec, a.at.as_deref()).map_err(|f| match f {
            Failure::Rejected { rejection, .. } => reject(rejection),
            other => other,
        })?;
    }
    let (claim, _) = claim::with_id(&value).map_err(reject)?;

    let key_path = a.key.display().to_string();
    let pem = crate::cli::files::read_key_file(&a.key)?;
    let sk =
        read_signing_key_pem(&pem).map_err(|r| Failure::rejected(r, Some(key_path.clone())))?;
    let kid = keyid(&sk.verifying_key());
    let store = crate::cli::common::open_store_if_any(g)?;
    let trusted = crate::ops::keys::trust_with_store(store.as_ref(), &a.trust)?;
    let role = match (trusted.get(&kid), a.role) {
        (Some(k), Some(r)) if k.role != r => {
            return Err(Failure::Usage(format!(
                "--role {r} contradicts the trusted key {kid}, whose role is {}",
                k.role
            )))
        }
        (Some(k), _) => k.role,
        (None, Some(r)) => r,
        (None, None) => {
            return Err(Failure::Usage(format!(
                "the role of key {kid} is unknown: pass --role ROLE or --trust ROLE:NAME:PUBKEY.pem"
            )))
        }
    };
    check_authority(role, &claim).map_err(reject)?;

    let (_, envelope) = seal(&value, &sk).map_err(reject)?;
    let warnings = sign_warnings(&claim, &value, store.as_ref())?;
    let mut data = json!({
        "id": claim.id,
        "kind": claim.kind,
        "origin": claim.origin,
        "producer": claim.producer,
        "signers": [kid],
        "warnings": warnings,
    });
    if a.anchor.is_some() {
        data["anchor"] = value.get("anchor").cloned().unwrap_or(Value::Null);
    }
    if a.out.as_deref() == Some("-") {
        g.stdout_for_product("envelope")?;
        // The envelope itself is the output; no report on stdout.
        crate::cli::files::product_to_stdout(format!("{envelope}\n").as_bytes())?;
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
            return Err(Failure::Usage(
                "a claim read from stdin needs -o OUT.dsse (or -o - for stdout)".into(),
            ))
        }
        None => Path::new(&input).with_extension("dsse"),
    };
    refuse_own_input_or_store(&out, &input, g)?;
    write_atomically(&out, format!("{envelope}\n").as_bytes())?;
    let text = format!(
        "signed {} ({} {}, by {} key {kid})\nwrote {}\n",
        claim.id,
        claim.kind,
        claim.origin,
        role,
        out.display()
    );
    data["envelope_path"] = json!(out.display().to_string());
    data["effect"] = json!("created");
    Ok(Report {
        warnings,
        ..Report::new(data, text)
    })
}

/// What `add` would warn about this claim, said at signing time, when it is still easy to
/// fix: an assertion whose anchor names a span without its `contentDigest` (it can never carry
/// to another tree), and, when there is a store, claims named in `target` or `dependsOn`
/// that it has not seen.
fn sign_warnings(
    claim: &claim::Claim,
    value: &Value,
    store: Option<&crate::store::Store>,
) -> Result<Vec<Warning>, Failure> {
    let mut out = Vec::new();
    if claim.kind == claim::Kind::Assertion
        && value
            .get("anchor")
            .is_some_and(crate::anchor::span_without_digest)
    {
        out.push(no_content_digest(&claim.id));
    }
    if let Some(store) = store {
        for (field, list) in [("target", &claim.target), ("dependsOn", &claim.depends_on)] {
            let ids: Vec<&str> = list.iter().map(String::as_str).collect();
            for (other, seen) in ids.iter().zip(store.contains_each(&ids)?) {
                if !seen {
                    out.push(Warning::new(
                        "DANGLING_REFERENCE",
                        format!(
                            "{} names {other} in {field}, which the store has not seen yet",
                            claim.id
                        ),
                    ));
                }
            }
        }
    }
    Ok(out)
}

/// The `NO_CONTENT_DIGEST` warning for claim `id`, worded as `add` words it.
pub fn no_content_digest(id: &str) -> Warning {
    Warning::new("NO_CONTENT_DIGEST", crate::ops::add::no_content_digest(id))
}

/// `sign` never writes over the claim it read, and nothing but the store writes inside it.
fn refuse_own_input_or_store(out: &Path, claim: &str, g: &Globals) -> Result<(), Failure> {
    if claim != "-" {
        let same = match (std::fs::canonicalize(out), std::fs::canonicalize(claim)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if same {
            return Err(Failure::Usage(format!(
                "-o {} is the claim being signed; writing there would destroy it: choose \
                 another path (the default is the claim's path with .dsse)",
                out.display()
            )));
        }
    }
    if let Ok(root) = crate::store::locate(g.store.as_deref()) {
        if root.join("FORMAT").is_file() {
            crate::cli::common::refuse_inside_store(out, &root)?;
        }
    }
    Ok(())
}

/// Replaces the claim's anchor span by the one `spec` names in the tree at `at`: tree, path,
/// range (none for a whole file) and contentDigest. Other anchor members stay, and so does
/// the strategy (multi when there is none).
fn fill_anchor(value: &mut Value, spec: &str, at: Option<&Path>) -> Result<(), Failure> {
    let not_object = || {
        Failure::rejected(
            Rejection::at(Code::SchemaViolation, "", "claim must be a JSON object"),
            None,
        )
    };
    let strategy = value
        .pointer("/anchor/strategy")
        .and_then(Value::as_str)
        .and_then(Strategy::parse)
        .unwrap_or(Strategy::Multi);
    let dir = tree_dir(at)?;
    let Value::Object(fresh) = anchor_at(&dir, spec, strategy)? else {
        return Err(Failure::Internal("an anchor is an object".into()));
    };
    let obj = value.as_object_mut().ok_or_else(not_object)?;
    let mut anchor = obj
        .get("anchor")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    anchor.remove("range");
    for (k, v) in fresh {
        anchor.insert(k, v);
    }
    obj.insert("anchor".into(), Value::Object(anchor));
    Ok(())
}
