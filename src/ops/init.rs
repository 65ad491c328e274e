//! Creating a store (`elench init`), or finding the one already there.

use super::{Context, Failure};
use crate::store::Store;
use serde::Serialize;
use std::path::Path;

/// The store at the place asked for.
#[derive(Debug, Clone, Serialize)]
pub struct Initialised {
    /// Where it is, absolute when it can be said.
    pub path: String,
    /// Whether this call made it.
    pub created: bool,
    /// `created` or `noop`.
    pub effect: &'static str,
    pub format_version: u32,
    /// How many claims it holds.
    pub claims: u64,
}

/// Creates a store at `root` (or opens the one already there, changing nothing), its warnings
/// to the context's observer and its index opened through the context's environments.
pub fn init(ctx: &Context, root: &Path) -> Result<Initialised, Failure> {
    let (store, created) = Store::init(root, &ctx.store_options())?;
    let path = std::fs::canonicalize(store.root()).unwrap_or_else(|_| root.to_path_buf());
    Ok(Initialised {
        path: path.display().to_string(),
        created,
        effect: if created { "created" } else { "noop" },
        format_version: crate::store::current_version(),
        claims: store.count()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Silent;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn a_second_init_changes_nothing_and_an_empty_log_exports_no_lines() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join(".elench");
        let ctx = Context::new(Some(root.clone()), Duration::ZERO, Arc::new(Silent));
        let first = init(&ctx, &root).unwrap();
        assert!(first.created);
        assert_eq!(first.effect, "created");
        assert_eq!(first.claims, 0);
        let again = init(&ctx, &root).unwrap();
        assert!(!again.created);
        assert_eq!(again.effect, "noop");
        assert_eq!(again.path, first.path);
        let b = crate::ops::export::bundle(&ctx.open_store().unwrap()).unwrap();
        assert_eq!((b.envelopes, b.bytes.len()), (0, 0));
    }
}
