//! The release gate: may this tree ship, given the log and a policy?
//!
//! - [`policy`]: the TOML policy (scope and rules), strict about unknown keys, strictest
//!   where a rule is absent;
//! - [`evaluate`]: the decision over the claims in scope, from the log alone (no build).

pub mod evaluate;
pub mod policy;

pub use evaluate::{evaluate, Counts, GateError, Rule, Violation};
pub use policy::{Policy, PolicyError, StaleRule};
