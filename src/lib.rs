//! elench: an append-only, content-addressed log of signed claims about code.
//! See ARCHITECTURE.md for the code map.
pub mod claim;
pub mod envelope;
pub mod tree;
