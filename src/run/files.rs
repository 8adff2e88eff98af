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

/// The file in a run directory that names the kernel (its boot id) the run lives on: a
/// directory shared with another kernel (a user-mode-linux guest sees the host's /tmp through
/// hostfs, where neither sees the other's flock) is never removed by the other's cleanup.
const BOOT_ID_FILE: &str = "faultscale-boot-id";

/// This kernel's boot id: one per boot, different in every guest.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok().map(|id| id.trim().to_string())
}

impl RunFiles {
    /// Made under a dot-name, locked and marked with the boot id, then renamed to the run's
    /// name: `cleanup` never sees a run directory that is not yet locked (the rename keeps the
    /// directory, and so the lock on it).
    pub fn create(parent: &Path, run_name: &str, kind: WorkloadKind, page_size: u64) -> Result<Self> {
        let dir = parent.join(run_name);
        let staged = parent.join(format!(".{run_name}.new"));
        std::fs::create_dir(&staged)
            .with_context(|| format!("--tmpdir {}: creating {}", parent.display(), staged.display()))?;
        let prepared = Self::prepare(&staged).and_then(|liveness| {
            std::fs::rename(&staged, &dir).with_context(|| format!("renaming {} to {}", staged.display(), dir.display()))?;
            Ok(liveness)
        });
        let liveness = prepared.inspect_err(|_| {
            let _ = std::fs::remove_dir_all(&staged);
        })?;
        let files = RunFiles { dir, owner: std::process::id(), _liveness: liveness };
        if kind == WorkloadKind::MmapFile {
            let shared = files.dir.join(SHARED_FILE);
            let file = std::fs::File::create(&shared).with_context(|| format!("creating {}", shared.display()))?;
            file.set_len(page_size).with_context(|| format!("sizing {}", shared.display()))?;
        }
        Ok(files)
    }

    /// The shared lock held for the run's life, and the boot id written.
    fn prepare(staged: &Path) -> Result<std::fs::File> {
        let liveness = std::fs::File::open(staged).with_context(|| format!("opening {}", staged.display()))?;
        // SAFETY: flock on a descriptor we own.
        unsafe { libc::flock(liveness.as_raw_fd(), libc::LOCK_SH) };
        if let Some(id) = boot_id() {
            let marker = staged.join(BOOT_ID_FILE);
            std::fs::write(&marker, id).with_context(|| format!("writing {}", marker.display()))?;
        }
        Ok(liveness)
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

/// Whether a run could make its directory in `parent`: one made and removed, so every reason
/// (read-only, full, no inodes, no permission) is found before measuring, said the same way.
pub fn check_can_create(parent: &Path) -> Result<(), String> {
    let probe = parent.join(format!(".faultscale-check-{}", std::process::id()));
    std::fs::create_dir(&probe).map_err(|e| format!("cannot create a directory there ({})", creation_error(parent, &e)))?;
    let _ = std::fs::remove_dir(&probe);
    Ok(())
}

/// Why a file could not be made in `dir`, saying which space ran out: ENOSPC means no blocks
/// or no inodes, and `df` shows only the blocks.
pub fn creation_error(dir: &Path, error: &std::io::Error) -> String {
    if error.raw_os_error() == Some(libc::ENOSPC)
        && let Ok(stat) = nix::sys::statvfs::statvfs(dir)
        && stat.files() > 0
        && stat.files_available() == 0
    {
        return format!("{error}: the filesystem has no free inodes (df -i {})", dir.display());
    }
    error.to_string()
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

/// A run directory found in a tmpdir, and whether `cleanup` may remove it.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// Its run died without removing it: nobody holds its lock, and it was made by this kernel
    /// (or by a faultscale from before the boot id was written).
    Leftover(PathBuf),
    /// Made by another kernel (another boot, or a guest sharing the directory): its lock means
    /// nothing here, so it is kept.
    OtherKernel { dir: PathBuf, boot_id: String },
}

/// Run directories in `parent` that no live run of this kernel holds: named like a run's
/// (`faultscale-<pid>-<8 hex digits>`) and locked by nobody. Those of another kernel are
/// reported, never offered for removal.
pub fn leftovers(parent: &Path) -> Vec<Found> {
    let Ok(entries) = std::fs::read_dir(parent) else { return Vec::new() };
    let this_boot = boot_id();
    let mut found: Vec<Found> = entries
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
        .map(|dir| match std::fs::read_to_string(dir.join(BOOT_ID_FILE)) {
            Ok(id) if Some(id.trim()) != this_boot.as_deref() => Found::OtherKernel { dir, boot_id: id.trim().into() },
            _ => Found::Leftover(dir),
        })
        .collect();
    found.sort_by(|a, b| a.dir().cmp(b.dir()));
    found
}

impl Found {
    pub fn dir(&self) -> &Path {
        match self {
            Found::Leftover(dir) | Found::OtherKernel { dir, .. } => dir,
        }
    }
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
        assert_eq!(leftovers(parent.path()), [Found::Leftover(parent.path().join("faultscale-2-0000abcd"))]);
        drop(live);
    }

    #[test]
    fn another_kernels_run_directories_are_kept() {
        let parent = tempfile::tempdir().unwrap();
        // Unlocked here, as a run of another kernel sharing the directory looks through hostfs.
        let theirs = parent.path().join("faultscale-7-0000beef");
        std::fs::create_dir(&theirs).unwrap();
        std::fs::write(theirs.join(BOOT_ID_FILE), "another-kernel\n").unwrap();
        let ours = RunFiles::create(parent.path(), "faultscale-8-0000cafe", WorkloadKind::FileShared, 4096).unwrap();
        assert_eq!(std::fs::read_to_string(ours.path().join(BOOT_ID_FILE)).ok(), boot_id());
        // Ours is held by its live run: not found at all.
        assert_eq!(
            leftovers(parent.path()),
            [Found::OtherKernel { dir: theirs.clone(), boot_id: "another-kernel".into() }]
        );
        assert!(ours.path().exists() && !parent.path().join(".faultscale-8-0000cafe.new").exists());
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
