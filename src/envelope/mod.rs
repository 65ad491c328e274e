//! The wire format: DSSE envelopes and the in-toto Statement they carry (docs/envelope.md).
pub mod dsse;
pub mod statement;

pub use dsse::{pae, sign_envelope, Candidate, Envelope, Verified, MAX_ENVELOPE_BYTES};
pub use statement::{Statement, PAYLOAD_TYPE, PREDICATE_TYPE, STATEMENT_TYPE};
