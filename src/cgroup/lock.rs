//! The lock that says a run's tree is alive: a run holds a shared flock on each top directory
//! it creates for its whole life; `faultscale cleanup` removes a tree only under the exclusive
//! lock. Both the tree (hold) and cleanup (take) use it, so it lives apart from either.
//!
//! Liveness is a flock on the tree's top directory, not the pid in its name: a pid means
//! nothing across PID namespaces (a container's pid 11 is another process on the host, and a
//! dead run's pid may be reused), while a lock on the cgroup directory is the same object in
//! every namespace and is released by the kernel when its holder dies, SIGKILL included.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

use anyhow::{Result, anyhow};

fn flock(dir: &File, operation: libc::c_int) -> std::io::Result<()> {
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(dir.as_raw_fd(), operation | libc::LOCK_NB) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// A run's shared lock on its new top directory, held for the run's life.
pub fn hold(top: &Path) -> Result<File> {
    let dir = File::open(top).map_err(|e| anyhow!("opening cgroup {}: {e}", top.display()))?;
    flock(&dir, libc::LOCK_SH)
        .map_err(|e| anyhow!("{}: a concurrent `faultscale cleanup` holds it ({e}); run again", top.display()))?;
    Ok(dir)
}

/// The exclusive lock on a tree's top directory, or None while a run holds it.
pub fn take(top: &Path) -> Option<File> {
    let dir = File::open(top).ok()?;
    flock(&dir, libc::LOCK_EX).ok().map(|()| dir)
}
