//! Conformance reports as evidence (issue 4): checking the two report formats elench reads,
//! turning a sound one into a harness-observed record, and running elench's own corpus.
pub mod corpus;
pub mod report;
