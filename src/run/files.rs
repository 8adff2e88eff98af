//! The run's temporary directory for file workloads: `<tmpdir>/faultscale-<pid>-<nonce>`,
//! created before the workers and removed with everything in it on every exit path.

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::workload::{SHARED_FILE, WorkloadKind};

pub struct RunFiles {
    dir: PathBuf,
    owner: u32,
    /// A shared lock on the directory for the run's life: `faultscale cleanup --tmpdir` removes
    /// only directories whose lock nobody holds (the run died without removing them).
    _liveness: std::fs::File,
}

impl RunFiles {
    pub fn create(parent: &Path, run_name: &str, kind: WorkloadKind, page_size: u64) -> Result<Self> {
        let dir = parent.join(run_name);
        std::fs::create_dir(&dir)
            .with_context(|| format!("--tmpdir {}: creating {}", parent.display(), dir.display()))?;
        let liveness = std::fs::File::open(&dir).with_context(|| format!("opening {}", dir.display()))?;
        // SAFETY: flock on a descriptor we own.
        unsafe { libc::flock(liveness.as_raw_fd(), libc::LOCK_SH) };
        let files = RunFiles { dir, owner: std::process::id(), _liveness: liveness };
        if kind == WorkloadKind::MmapFile {
            let shared = files.dir.join(SHARED_FILE);
            let file = std::fs::File::create(&shared).with_context(|| format!("creating {}", shared.display()))?;
            file.set_len(page_size).with_context(|| format!("sizing {}", shared.display()))?;
        }
        Ok(files)
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The filesystem the files live on, as users name it.
    pub fn filesystem(&self) -> String {
        let Ok(stat) = nix::sys::statfs::statfs(&self.dir) else { return "unknown".into() };
        filesystem_name(stat.filesystem_type().0)
    }
}

pub fn filesystem_name(magic: i64) -> String {
    match magic {
        0x0102_1994 => "tmpfs".into(),
        0xEF53 => "ext4".into(),
        0x5846_5342 => "xfs".into(),
        0x9123_683E => "btrfs".into(),
        0x794C_7630 => "overlayfs".into(),
        0x0000_6969 => "nfs".into(),
        0x00C0_FFEE => "hostfs".into(),
        other => match pseudo_filesystem(other) {
            Some(name) => name.into(),
            None => format!("filesystem magic {other:#x}"),
        },
    }
}

/// The kernel's pseudo filesystems, which hold no workload's files (proc, sysfs, cgroupfs, ...).
pub fn pseudo_filesystem(magic: i64) -> Option<&'static str> {
    Some(match magic {
        0x9fa0 => "proc",
        0x6265_6572 => "sysfs",
        0x0027_e0eb => "cgroup",
        0x6367_7270 => "cgroup2",
        0x6462_6720 => "debugfs",
        0x7472_6163 => "tracefs",
        0x7363_6673 => "securityfs",
        0xcafe_4a11 => "bpf",
        0x1cd1 => "devpts",
        0x4249_4e4d => "binfmt_misc",
        0x6e73_6673 => "nsfs",
        0xde5e_81e4 => "efivarfs",
        _ => return None,
    })
}

/// Run directories in `parent` left by runs that died without removing them: named like a
/// run's (`faultscale-<pid>-<8 hex digits>`) and locked by nobody.
pub fn leftovers(parent: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(parent) else { return Vec::new() };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
        .filter(|e| is_run_name(&e.file_name().to_string_lossy()))
        .map(|e| e.path())
        .filter(|dir| {
            std::fs::File::open(dir).is_ok_and(|f| {
                // SAFETY: flock on a descriptor we own; released when `f` closes.
                unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
            })
        })
        .collect();
    found.sort();
    found
}

fn is_run_name(name: &str) -> bool {
    let Some((pid, nonce)) = name.strip_prefix("faultscale-").and_then(|rest| rest.split_once('-')) else {
        return false;
    };
    !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit())
        && nonce.len() == 8
        && nonce.bytes().all(|b| b.is_ascii_hexdigit())
}

impl Drop for RunFiles {
    fn drop(&mut self) {
        if std::process::id() == self.owner
            && let Err(e) = std::fs::remove_dir_all(&self.dir)
        {
            say!("faultscale: warning: removing {}: {e}", self.dir.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_common_filesystems() {
        assert_eq!(filesystem_name(0x01021994), "tmpfs");
        assert_eq!(filesystem_name(0xEF53), "ext4");
        assert_eq!(filesystem_name(0x1234), "filesystem magic 0x1234");
    }

    #[test]
    fn only_unlocked_run_directories_are_leftovers() {
        let parent = tempfile::tempdir().unwrap();
        let live = RunFiles::create(parent.path(), "faultscale-1-0000abcd", WorkloadKind::FileShared, 4096).unwrap();
        for name in ["faultscale-2-0000abcd", "faultscale-3-xyz", "faultscale-notes", "other"] {
            std::fs::create_dir(parent.path().join(name)).unwrap();
        }
        assert_eq!(leftovers(parent.path()), [parent.path().join("faultscale-2-0000abcd")]);
        drop(live);
    }

    #[test]
    fn the_directory_and_shared_file_go_away() {
        let parent = tempfile::tempdir().unwrap();
        let dir;
        {
            let files = RunFiles::create(parent.path(), "faultscale-1-test", WorkloadKind::MmapFile, 4096).unwrap();
            dir = files.path().to_path_buf();
            assert_eq!(std::fs::metadata(dir.join(SHARED_FILE)).unwrap().len(), 4096);
            std::fs::write(dir.join("private-0"), b"x").unwrap();
        }
        assert!(!dir.exists());
    }
}
