//! One module per command. Each turns its arguments into a `Report` or a `Failure`.
pub mod keys;
pub mod sign;
pub mod tree;
pub mod trust;
pub mod verify;
