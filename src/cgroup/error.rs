//! The cgroup layer's typed error: what the user asked for cannot be built here (a base that is
//! not a usable cgroup, placements whose directories clash, knobs this version cannot take).
//! The layer only says whose mistake it is; the front end decides what that means (main.rs
//! exits 2 for it, as for any usage error).

use std::fmt;

/// The user's input is wrong, with its one-line message (flag names included).
#[derive(Debug)]
pub struct InputError(String);

impl InputError {
    /// Marks `error` as the user's input being wrong, keeping its message as it is.
    pub fn mark(error: anyhow::Error) -> anyhow::Error {
        if is_input_error(&error) {
            return error;
        }
        anyhow::Error::new(InputError(format!("{error:#}")))
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InputError {}

/// Whether `error`, or an error it was built from, is an `InputError`.
pub fn is_input_error(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| cause.is::<InputError>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marked_errors_keep_their_message_through_context() {
        let marked = InputError::mark(anyhow::anyhow!("--base /x: does not exist"));
        assert!(is_input_error(&marked));
        assert_eq!(format!("{marked:#}"), "--base /x: does not exist");
        assert!(is_input_error(&marked.context("building")));
        assert!(!is_input_error(&anyhow::anyhow!("mkdir: EACCES")));
    }
}
