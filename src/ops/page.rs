//! Pages of long lists (`log`, `keys list`, `status --all`): a limit and a cursor in, the
//! items and the CLI Agent Spec's pagination fields out.

use super::Failure;
use crate::ops::error::Param;
use crate::store::Store;
use serde::{Deserialize, Serialize};

/// The largest page a request may ask for.
pub const MAX_LIMIT: usize = 10_000;
/// The page size when none is asked for.
pub const DEFAULT_LIMIT: usize = 20;

/// Which page: at most `limit` items from `cursor` (the `next_cursor` of the previous page;
/// none: the first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageRequest {
    pub limit: usize,
    pub cursor: Option<String>,
}

impl Default for PageRequest {
    fn default() -> Self {
        PageRequest {
            limit: DEFAULT_LIMIT,
            cursor: None,
        }
    }
}

/// What a page holds of the whole list (`meta.pagination`), with every field the CLI Agent
/// Spec requires: `total` (items over all pages, null when not known), `returned` (in this
/// page), `truncated` (the limit cut the list short), `has_more` and `next_cursor` (null on
/// the last page).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "cli", derive(schemars::JsonSchema))]
pub struct Pagination {
    pub total: Option<u64>,
    pub returned: usize,
    pub truncated: bool,
    pub has_more: bool,
    pub next_cursor: Option<String>,
}

impl Pagination {
    pub fn new(returned: usize, total: Option<u64>, next: Option<u64>) -> Pagination {
        Pagination {
            total,
            returned,
            truncated: next.is_some(),
            has_more: next.is_some(),
            next_cursor: next.map(|n| n.to_string()),
        }
    }
}

/// Why a limit is refused.
pub fn limit_problem() -> String {
    format!("‹limit› must be between 1 and {MAX_LIMIT}")
}

/// Why a cursor is refused.
pub fn cursor_problem(c: &str) -> String {
    format!("‹cursor› {c:?} is not a cursor elench gave")
}

impl PageRequest {
    /// The cursor as a position (the number of items to skip, or an arrival number).
    pub fn start(&self) -> Result<u64, Failure> {
        match &self.cursor {
            None => Ok(0),
            Some(c) => c
                .parse()
                .map_err(|_| Failure::usage(Some(Param::Cursor), cursor_problem(c))),
        }
    }

    /// The limit, refused outside 1 to [`MAX_LIMIT`].
    pub fn limit(&self) -> Result<usize, Failure> {
        if !(1..=MAX_LIMIT).contains(&self.limit) {
            return Err(Failure::usage(Some(Param::Limit), limit_problem()));
        }
        Ok(self.limit)
    }

    /// One page of the log in arrival order (arrival number, claim id), and its pagination.
    pub fn of_arrivals(&self, store: &Store) -> Result<(Vec<(u64, String)>, Pagination), Failure> {
        let start = self.start()?;
        let limit = self.limit()?;
        let mut page = store.arrivals(start, limit.saturating_add(1))?;
        let more = page.len() > limit;
        page.truncate(limit);
        let next = more.then(|| start + page.len() as u64);
        let meta = Pagination::new(page.len(), Some(store.count()?), next);
        Ok((page, meta))
    }

    /// One page of an in-memory list, its pagination, and the cursor that starts at each of
    /// its items.
    pub fn of_slice<'a, T>(
        &self,
        items: &'a [T],
    ) -> Result<(&'a [T], Pagination, Vec<String>), Failure> {
        let start = usize::try_from(self.start()?)
            .unwrap_or(usize::MAX)
            .min(items.len());
        let end = start.saturating_add(self.limit()?).min(items.len());
        let next = (end < items.len()).then_some(end as u64);
        Ok((
            &items[start..end],
            Pagination::new(end - start, Some(items.len() as u64), next),
            (start..end).map(|i| i.to_string()).collect(),
        ))
    }
}
