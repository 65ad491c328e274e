//! The CLI's name for the library's error type, kept so existing imports read unchanged.
pub use elench::ops::error::*;
