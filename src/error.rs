//! The engine's one error type: the kinds of error `main.rs` tells apart, each its own exit
//! code there and nowhere else. At the bottom of the layers, so the front end (options,
//! commands), the results reader and the engine (the cgroup layer, the crews) mark their
//! errors alike. anyhow stays the carrier: an `Error` sits somewhere in an anyhow chain, under
//! whatever context was added on the way up, and an error that carries none is a failure of
//! the run (exit 1).

use std::fmt;

/// What main.rs tells apart in an error.
#[derive(Debug)]
pub enum Error {
    /// What the user asked for cannot be done as asked (a bad value, an output that cannot be
    /// one, a base that does not exist, placements whose directories clash, a result file that
    /// holds two runs): exit 2. Its one-line message.
    Usage(String),
    /// A stop signal reached the harness: the caller cleans up, and the run exits 128+signal.
    Interrupted(i32),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(message) => f.write_str(message),
            Error::Interrupted(signal) => write!(f, "interrupted by {}", crate::text::signal_name(*signal)),
        }
    }
}

impl std::error::Error for Error {}

/// Marks `error` as the user's input, keeping its message as it is.
pub fn usage(error: anyhow::Error) -> anyhow::Error {
    if matches!(of(&error), Some(Error::Usage(_))) {
        return error;
    }
    anyhow::Error::new(Error::Usage(format!("{error:#}")))
}

/// The kind `error` carries anywhere in its chain; none for any other failure.
pub fn of(error: &anyhow::Error) -> Option<&Error> {
    error.chain().find_map(|cause| cause.downcast_ref::<Error>())
}

/// The stop signal `error` carries, if it is one.
pub fn interrupted(error: &anyhow::Error) -> Option<i32> {
    match of(error) {
        Some(&Error::Interrupted(signal)) => Some(signal),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marked_errors_keep_their_message_and_are_recognised() {
        let is_usage = |e: &anyhow::Error| matches!(of(e), Some(Error::Usage(_)));
        let marked = usage(anyhow::anyhow!("--duration 0: must be > 0 seconds"));
        assert!(is_usage(&marked));
        assert_eq!(format!("{marked:#}"), "--duration 0: must be > 0 seconds");
        assert!(is_usage(&marked.context("measuring")));
        assert!(of(&anyhow::anyhow!("fork: EAGAIN")).is_none());
    }

    #[test]
    fn a_stop_signal_is_found_under_context_and_said_as_before() {
        let stopped = anyhow::Error::new(Error::Interrupted(libc::SIGINT)).context("measuring child");
        assert_eq!(interrupted(&stopped), Some(libc::SIGINT));
        assert_eq!(Error::Interrupted(libc::SIGTERM).to_string(), "interrupted by SIGTERM");
        assert_eq!(interrupted(&usage(anyhow::anyhow!("--tasks 0"))), None);
    }
}
