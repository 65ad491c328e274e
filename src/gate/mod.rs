//! The release gate: may this tree ship, given the log and a policy?
//!
//! - [`policy`]: the TOML policy (scope and rules), strict about unknown keys, strictest
//!   where a rule is absent;
//! - [`evaluate`]: the decision over the claims in scope, from the log alone (no build); the
//!   reference reading through the fold, and the same decision from a store's claims read at
//!   once by slot ([`evaluate_all`], what `elench gate` runs).

pub mod evaluate;
pub mod policy;

pub use evaluate::{evaluate, evaluate_all, Counts, GateError, Rule, Violation};
pub use policy::{Policy, PolicyError, StaleRule};
