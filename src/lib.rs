//! elench: an append-only, content-addressed log of signed claims about code.
//! See ARCHITECTURE.md for the code map; modules are listed in the order data flows.
pub mod atomic_file;
pub mod bytecap;
pub mod child_env;
pub mod error;
pub mod jcs;
pub mod json;
pub mod observer;
pub mod reaper;
pub mod scratch;

pub mod anchor;
pub mod claim;
pub mod conformance;
pub mod envelope;
pub mod eval;
pub mod fold;
pub mod gate;
pub mod graph;
pub mod ingest;
pub mod keys;
pub mod ops;
pub mod store;
pub mod sync;
pub mod tree;
pub mod trust;
pub mod witness;
