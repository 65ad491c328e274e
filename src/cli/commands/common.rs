//! Moved below the command modules (`cli::common`, `cli::progress`); kept only until the
//! commands that still name it here are moved.

pub use crate::cli::common::*;
pub use crate::cli::progress::with_records_bar;
