//! The terminal: the progress line during a run, and what `env`, `profiles` and `cleanup` print.

pub mod cleanup;
pub mod env;
pub mod profiles;
pub mod progress;

/// Why writing a listing to stdout failed, if it did (set by `out!`; `main` reports it, exit 1).
pub static STDOUT_FAILED: std::sync::OnceLock<String> = std::sync::OnceLock::new();
