//! Usage errors: what the user asked for cannot be done as asked (a bad value, an output that
//! cannot be one, a base that does not exist, placements whose directories clash). They exit 2;
//! everything that goes wrong while running exits 1. One marker for the whole program, at the
//! bottom of the layers: the front end (options, commands) and the engine (the cgroup layer)
//! mark their errors with it; only main.rs reads it and picks the exit code.

use std::fmt;

/// An error that was the user's input, with its one-line message.
#[derive(Debug)]
pub struct Usage(String);

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// Marks `error` as a usage error, keeping its message as it is.
pub fn usage(error: anyhow::Error) -> anyhow::Error {
    if is_usage(&error) {
        return error;
    }
    anyhow::Error::new(Usage(format!("{error:#}")))
}

/// Whether `error` was marked as a usage error.
pub fn is_usage(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| cause.is::<Usage>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marked_errors_keep_their_message_and_are_recognised() {
        let marked = usage(anyhow::anyhow!("--duration 0: must be > 0 seconds"));
        assert!(is_usage(&marked));
        assert_eq!(format!("{marked:#}"), "--duration 0: must be > 0 seconds");
        assert!(is_usage(&marked.context("measuring")));
        assert!(!is_usage(&anyhow::anyhow!("fork: EAGAIN")));
    }
}
