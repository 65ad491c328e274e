//! Layout 3: the team's trust (pinned root keys, trust policies) kept as records of the log.
//!
//! Layout 2 kept them beside the log, under `trust/`: `pins.json` (an array of
//! `{keyid, name, publicKey}`), `chain/<version>.json` (the canonical envelope of each
//! version reached), `waiting/<digest>.json` and `equivocation/<digest>.json`. The migration
//! appends a pin record for each pin, then a policy record for each envelope of the chain in
//! version order, then those waiting, then the equivocating ones: replayed in that order they
//! give the same trust state. The folder is kept, renamed `trust.layout2/`, until the user
//! removes it.

use std::path::Path;

pub const VERSION: u32 = 3;
pub const DESCRIPTION: &str =
    "layout 2, with pinned root keys and trust policies as records of the log";

/// The folder layout 2 kept its trust in, and the name it is kept under once migrated.
pub const OLD_DIR: &str = "trust";
pub const KEPT_DIR: &str = "trust.layout2";

/// What layout 2 held of the team's trust, read once.
pub struct Layout2Trust {
    /// Each pin's JSON object, as found.
    pub pins: Vec<serde_json::Value>,
    /// Envelope bytes: the chain in version order, then those waiting, then the
    /// equivocating ones.
    pub policies: Vec<Vec<u8>>,
}

fn read_folder(dir: &Path) -> Result<Vec<Vec<u8>>, String> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    };
    let mut names: Vec<std::path::PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    // Chain files are named by their zero-padded version, so this is version order.
    names.sort();
    names
        .iter()
        .map(|p| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display())))
        .collect()
}

/// Reads layout 2's `trust/` folder.
pub fn read_layout2_trust(dir: &Path) -> Result<Layout2Trust, String> {
    let pins_path = dir.join("pins.json");
    let pins = match std::fs::read(&pins_path) {
        Ok(b) => serde_json::from_slice::<Vec<serde_json::Value>>(&b)
            .map_err(|e| format!("{}: {e}", pins_path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(format!("{}: {e}", pins_path.display())),
    };
    let mut policies = read_folder(&dir.join("chain"))?;
    policies.extend(read_folder(&dir.join("waiting"))?);
    policies.extend(read_folder(&dir.join("equivocation"))?);
    Ok(Layout2Trust { pins, policies })
}
