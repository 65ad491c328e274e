//! One module per command. Each turns its arguments into a `Report` or a `Failure`.
pub mod add;
pub mod blast;
pub mod check;
pub mod common;
pub mod conformance;
pub mod demo;
pub mod export;
pub mod fsck;
pub mod init;
pub mod keys;
pub mod log;
pub mod show;
pub mod sign;
pub mod status;
pub mod tree;
pub mod trust;
pub mod verify;
