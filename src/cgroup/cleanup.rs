//! `faultscale cleanup`: remove the trees of runs that died without removing them (SIGKILL).
//!
//! Only directories named `faultscale-<pid>-<nonce>-...` are candidates, only when no run holds
//! the tree's lock, and only when no process is attached anywhere in the tree.
//!
//! Liveness is a flock on the tree's top directory, not the pid in its name: a pid means
//! nothing across PID namespaces (a container's pid 11 is another process on the host, and a
//! dead run's pid may be reused), while a lock on the cgroup directory is the same object in
//! every namespace and is released by the kernel when its holder dies, SIGKILL included.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow};

use super::fs as cgfs;
use super::tree::remove_cgroup_dir;

/// The owning pid encoded in a run's directory name.
pub fn owner_pid(name: &str) -> Option<i32> {
    let rest = name.strip_prefix("faultscale-")?;
    let (pid, nonce_and_label) = rest.split_once('-')?;
    if nonce_and_label.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok().filter(|pid| *pid > 0)
}

#[derive(Debug)]
pub enum Verdict {
    Removable,
    /// Its run holds the lock: alive, in this namespace or another.
    RunAlive,
    HasProcesses(PathBuf),
}

#[derive(Debug)]
pub struct Leftover {
    pub top: PathBuf,
    /// The pid in the name, as the run saw itself (in its own PID namespace).
    pub owner_pid: i32,
    pub verdict: Verdict,
    /// Held from the finding to the removal, so a run cannot come back in between.
    lock: Option<File>,
}

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
fn take(top: &Path) -> Option<File> {
    let dir = File::open(top).ok()?;
    flock(&dir, libc::LOCK_EX).ok().map(|()| dir)
}

/// Every directory of the tree, children before parents.
fn post_order(dir: &Path, out: &mut Vec<PathBuf>) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                post_order(&entry.path(), out);
            }
        }
    }
    out.push(dir.to_path_buf());
}

/// Finds faultscale trees under `root` (recursively, not descending into the trees themselves).
pub fn find(root: &Path) -> Vec<Leftover> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            if !entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                continue;
            }
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = owner_pid(&name) else {
                stack.push(path);
                continue;
            };
            let lock = take(&path);
            let verdict = if lock.is_none() {
                Verdict::RunAlive
            } else {
                let mut dirs = Vec::new();
                post_order(&path, &mut dirs);
                match dirs.into_iter().find(|d| cgfs::has_processes(d).unwrap_or(true)) {
                    Some(busy) => Verdict::HasProcesses(busy),
                    None => Verdict::Removable,
                }
            };
            found.push(Leftover { top: path, owner_pid: pid, verdict, lock });
        }
    }
    found.sort_by(|a, b| a.top.cmp(&b.top));
    found
}

/// Removes one removable tree, deepest first, under its lock.
pub fn remove(leftover: &Leftover) -> Result<()> {
    if leftover.lock.is_none() {
        return Err(anyhow!("{}: its run holds it", leftover.top.display()));
    }
    let mut dirs = Vec::new();
    post_order(&leftover.top, &mut dirs);
    for dir in dirs {
        remove_cgroup_dir(&dir).map_err(|e| anyhow::anyhow!("removing {}: {e}", dir.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_pids_come_only_from_faultscale_names() {
        assert_eq!(owner_pid("faultscale-4242-9f3a-child"), Some(4242));
        assert_eq!(owner_pid("faultscale-1-a"), Some(1));
        assert_eq!(owner_pid("faultscale-4242"), None);
        assert_eq!(owner_pid("faultscale-x1-a"), None);
        assert_eq!(owner_pid("faultscale--1-a"), None);
        assert_eq!(owner_pid("faultscale-0-a"), None);
        assert_eq!(owner_pid("system.slice"), None);
        assert_eq!(owner_pid("faultscale-99999999999999-a"), None);
    }
}
