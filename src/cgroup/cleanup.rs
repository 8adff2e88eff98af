//! `faultscale cleanup`: remove the trees of runs that died without removing them (SIGKILL).
//!
//! Only directories named `faultscale-<pid>-<nonce>-...` are candidates, only when no run holds
//! the tree's lock (lock.rs: liveness is that lock, not the pid in the name), and only when no
//! process is attached anywhere in the tree.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow};

use super::fs::{self as cgfs, remove_cgroup_dir};
use super::lock::take;

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
