//! The terminal: the progress line during a run, and what `env`, `profiles` and `cleanup` print.

pub mod cleanup;
pub mod env;
pub mod profiles;
pub mod progress;
