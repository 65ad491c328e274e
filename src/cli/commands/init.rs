//! `elench init [DIR]`: create a store (`ops::init`) where DIR or `--store` says.

use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::output::Report;
use elench::store::STORE_DIR;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// Directory in which to create .elench (default: the working directory; --store names
    /// the store directory itself)
    pub dir: Option<PathBuf>,
    /// Pin a root public key of the team (repeatable): trust policies signed by the team's
    /// roots are then taken from `add` and `pull` (see `elench trust`)
    #[arg(long = "root-key", value_name = "ROOT.pub")]
    pub root_key: Vec<PathBuf>,
}

pub fn run(a: InitArgs, g: &Globals) -> Result<Report, Failure> {
    let root = match (&g.store, a.dir) {
        (Some(_), Some(_)) => {
            return Err(Failure::usage(
                None,
                "give either DIR or --store, not both".into(),
            ))
        }
        (Some(s), None) => s.clone(),
        (None, Some(d)) => d.join(STORE_DIR),
        (None, None) => PathBuf::from(STORE_DIR),
    };
    // Every key is read before anything is made: a bad one leaves no store behind.
    let mut pems = Vec::new();
    for k in &a.root_key {
        pems.push(crate::cli::files::read_key_file(k)?);
        let pem = pems.last().map(String::as_str).unwrap_or_default();
        elench::keys::read_public_key_pem(pem)
            .map_err(|r| Failure::rejected(r, Some(k.display().to_string())))?;
    }
    let made = elench::ops::init::init(&g.context(), &root)?;
    let ctx = g.context();
    let store = ctx.open_store_at(&root)?;
    let mut pins = Vec::new();
    for (pem, file) in pems.iter().zip(&a.root_key) {
        let name = file.file_stem().map(|s| s.to_string_lossy().into_owned());
        pins.push(
            elench::trust::pin(&store, pem, name.as_deref())
                .map_err(elench::ops::trust::trust_failure)?,
        );
    }
    let mut text = if made.created {
        format!("created an empty elench store at {}\n", made.path)
    } else {
        format!(
            "an elench store already exists at {} (nothing changed)\n",
            made.path
        )
    };
    for p in &pins {
        text.push_str(&format!("pinned root key {} ({})\n", p.name, p.keyid));
    }
    let mut data = crate::cli::common::to_data(&made)?;
    if !pins.is_empty() {
        data["pins"] = crate::cli::common::to_data(&pins)?;
    }
    Ok(Report::new(data, text))
}
