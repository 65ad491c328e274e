//! The operations: one function per thing elench does, shared by every front end.
//!
//! Each operation takes typed input and returns a typed, `Serialize` result or a
//! [`Failure`] that carries its error code. Warnings and progress go to the [`Observer`] the
//! caller passes in (in the [`Context`]). The CLI (`cli`) and the MCP server (`mcp`) are thin
//! layers over this module: arguments in, one call here, output out.

pub mod add;
pub mod anchor;
pub mod blast;
pub mod check;
pub mod checkpoint;
pub mod claim;
pub mod claims_for;
pub mod conformance;
pub mod context;
pub mod demo;
pub mod error;
pub mod export;
pub mod fsck;
pub mod gate;
pub mod ids;
pub mod init;
pub mod keys;
pub mod log;
pub mod outcome;
pub mod page;
pub mod picture;
pub mod roots;
pub mod show;
pub mod sign;
pub mod status;
pub mod stop;
pub mod sync;
pub mod tree;
pub mod trust;
pub mod verify;
pub mod why;

pub use crate::observer::{Collected, Observer, Progress, Silent, Warning};
pub use context::Context;
pub use error::Failure;
pub use stop::{Never, Stop};
