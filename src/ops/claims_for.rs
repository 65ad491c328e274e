//! `claims_for` (for agents, through the MCP server): the claims anchored in given files or
//! folders, with their status and how each applies at a tree.

use super::page::PageRequest;
use super::status::{status_in, tree_for, Filters, StatusFilters, StatusInput, StatusOutput};
use super::{Context, Failure};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What `claims_for` is asked.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ClaimsForInput {
    /// Files or folders of the tree (relative to it); none: every claim.
    pub paths: Vec<String>,
    /// The tree (default: the enclosing checkout, else the working directory).
    pub at: Option<PathBuf>,
    /// Keep the files ignore rules leave out of the tree.
    pub no_ignore: bool,
    /// Which page.
    pub page: PageRequest,
}

/// The claims anchored in the given files or folders (where their lines are at the tree
/// when they apply there, else the path their anchor names), or every claim when none are
/// given, each with its status and how it applies at the tree: `status --all --at DIR`
/// narrowed to those paths.
pub fn claims_for(ctx: &Context, input: &ClaimsForInput) -> Result<StatusOutput, Failure> {
    let mut path = Vec::with_capacity(input.paths.len() * 2);
    for p in &input.paths {
        // As anchors write paths: relative to the tree, `/`-separated, no `.` segments.
        let p = p
            .split('/')
            .filter(|s| !s.is_empty() && *s != ".")
            .collect::<Vec<_>>()
            .join("/");
        if p.is_empty() {
            // The whole tree.
            path.clear();
            break;
        }
        // A path given is a file or a folder, never a pattern.
        let exact = globset::escape(&p);
        path.push(format!("{exact}/**"));
        path.push(exact);
    }
    let status_input = StatusInput {
        ids: Vec::new(),
        all: true,
        page: input.page.clone(),
        at: input.at.clone(),
        no_ignore: input.no_ignore,
        filters: StatusFilters {
            path,
            ..StatusFilters::default()
        },
        picture: None,
        places: false,
    };
    let filters = Filters::compile(&status_input.filters)?;
    let store = ctx.open_store()?;
    let tree = tree_for(ctx, input.at.as_deref(), input.no_ignore)?;
    status_in(ctx.observer(), &store, &status_input, filters, Some(tree))
}
