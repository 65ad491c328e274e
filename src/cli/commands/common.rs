//! What several commands share: opening the store, pagination.

use crate::cli::failure::Failure;
use crate::cli::Globals;
use crate::store::{locate, Store};
use serde_json::{json, Value};
use std::time::Duration;

/// Opens the store the globals name (or the nearest `.elench`).
pub fn open_store(g: &Globals) -> Result<Store, Failure> {
    let root = locate(g.store.as_deref())?;
    Ok(Store::open(&root, Duration::from_secs(g.wait))?)
}

/// Opens the store if there is one; no store is not an error here.
pub fn open_store_if_any(g: &Globals) -> Result<Option<Store>, Failure> {
    match locate(g.store.as_deref()) {
        Ok(root) => match Store::open(&root, Duration::from_secs(g.wait)) {
            Ok(s) => Ok(Some(s)),
            Err(crate::store::StoreError::NotFound(_)) if g.store.is_none() => Ok(None),
            Err(e) => Err(e.into()),
        },
        Err(crate::store::StoreError::NotFound(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// `--limit` and `--cursor` for lists.
#[derive(Debug, Clone, clap::Args)]
pub struct Page {
    /// How many items to return
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// Where to continue: the `next_cursor` of the previous page
    #[arg(long)]
    pub cursor: Option<String>,
}

impl Page {
    /// The cursor as a position (the number of items to skip, or an arrival number).
    pub fn start(&self) -> Result<u64, Failure> {
        match &self.cursor {
            None => Ok(0),
            Some(c) => c
                .parse()
                .map_err(|_| Failure::Usage(format!("--cursor {c:?} is not a cursor elench gave"))),
        }
    }

    pub fn limit(&self) -> Result<usize, Failure> {
        if self.limit == 0 {
            return Err(Failure::Usage("--limit must be at least 1".into()));
        }
        Ok(self.limit)
    }
}

/// The `meta.pagination` object.
pub fn pagination(returned: usize, next: Option<u64>) -> Value {
    json!({
        "returned": returned,
        "has_more": next.is_some(),
        "next_cursor": next.map(|n| n.to_string()),
    })
}
