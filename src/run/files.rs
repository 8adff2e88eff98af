//! The run's temporary directory for file workloads: `<tmpdir>/faultscale-<pid>-<nonce>`,
//! created before the workers and removed with everything in it on every exit path.

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::workload::WorkloadKind;

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
            std::fs::rename(&staged, &dir)
                .with_context(|| format!("renaming {} to {}", staged.display(), dir.display()))?;
            Ok(liveness)
        });
        let liveness = prepared.inspect_err(|_| {
            let _ = std::fs::remove_dir_all(&staged);
        })?;
        let files = RunFiles { dir, owner: std::process::id(), _liveness: liveness };
        if let Some((name, pages)) = kind.harness_file {
            let shared = files.dir.join(name);
            let file = std::fs::File::create(&shared).with_context(|| format!("creating {}", shared.display()))?;
            file.set_len(pages * page_size).with_context(|| format!("sizing {}", shared.display()))?;
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
            std::fs::write(&marker, id).map_err(|e| {
                anyhow::anyhow!("writing {}: {}", marker.display(), crate::measure::machine::creation_error(staged, &e))
            })?;
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
    let made = |e: std::io::Error, what: &str| {
        format!("cannot create {what} there ({})", crate::measure::machine::creation_error(parent, &e))
    };
    std::fs::create_dir(&probe).map_err(|e| made(e, "a directory"))?;
    // A file with content too: a directory fits where a file's inode or block no longer does.
    let written = std::fs::write(probe.join(BOOT_ID_FILE), "0".repeat(64)).map_err(|e| made(e, "a file"));
    let _ = std::fs::remove_file(probe.join(BOOT_ID_FILE));
    let _ = std::fs::remove_dir(&probe);
    written
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
    /// nothing here, so it is kept; `why` says so, with the boot id or what stands in its place.
    Kept { dir: PathBuf, why: String },
    /// Its run is alive: it holds the directory's lock.
    Live(PathBuf),
}

/// Run directories in `parent` that no live run of this kernel holds: named like a run's
/// (`faultscale-<pid>-<8 hex digits>`, or its staging name `.faultscale-...new` once it holds
/// a boot id, which a run writes only after taking the lock) and locked by nobody; and the
/// empty `.faultscale-check-<pid>` probes older than a minute. Those of another kernel, or
/// whose boot id cannot be read as one, are reported, never offered for removal.
pub fn leftovers(parent: &Path) -> Vec<Found> {
    let Ok(entries) = std::fs::read_dir(parent) else { return Vec::new() };
    let this_boot = boot_id();
    let mut found: Vec<Found> = entries
        .flatten()
        .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
        .filter(|e| is_leftover_name(&e.path()))
        .map(|e| e.path())
        .filter_map(|dir| {
            let free = std::fs::File::open(&dir).ok()?;
            // SAFETY: flock on a descriptor we own; released when `free` closes.
            Some((unsafe { libc::flock(free.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }, dir))
        })
        .map(|(free, dir)| match recorded_boot_id(&dir) {
            _ if !free => Found::Live(dir),
            Ok(None) => Found::Leftover(dir),
            Ok(Some(id)) if Some(&id) == this_boot.as_ref() => Found::Leftover(dir),
            Ok(Some(id)) => Found::Kept {
                dir,
                why: format!(
                    "made by another kernel (boot id {id}; a guest sharing this directory, or an earlier boot)"
                ),
            },
            Err(what) => Found::Kept { dir, why: format!("its {BOOT_ID_FILE} is not this kernel's ({what})") },
        })
        .collect();
    found.sort_by(|a, b| a.dir().cmp(b.dir()));
    found
}

/// Whether `dir` is named like something a run leaves: its directory, its staging name with
/// the boot id written, or an old probe.
fn is_leftover_name(dir: &Path) -> bool {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if is_run_name(&name) {
        return true;
    }
    if let Some(staged) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".new")) {
        return is_run_name(staged) && std::fs::symlink_metadata(dir.join(BOOT_ID_FILE)).is_ok();
    }
    let Some(pid) = name.strip_prefix(".faultscale-check-") else { return false };
    let old = std::fs::metadata(dir)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > std::time::Duration::from_secs(60)));
    !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) && old
}

/// The boot id a run directory records: None where it has none (made by a faultscale from
/// before the boot id), or why what is there is no boot id (shown escaped). Read without
/// following links or blocking, 64 bytes at most: a FIFO or /dev/zero put there by anyone
/// with access to /tmp must not hang or exhaust `cleanup`.
fn recorded_boot_id(dir: &Path) -> Result<Option<String>, String> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let path = dir.join(BOOT_ID_FILE);
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(&path)
    {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("unreadable: {e}")),
        Ok(file) => file,
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Err("not a regular file".into());
    }
    let mut bytes = Vec::new();
    file.take(64).read_to_end(&mut bytes).map_err(|e| format!("unreadable: {e}"))?;
    let text = String::from_utf8_lossy(&bytes);
    let id = text.trim();
    let well_formed = id.len() == 36
        && id
            .bytes()
            .enumerate()
            .all(|(i, b)| if [8, 13, 18, 23].contains(&i) { b == b'-' } else { b.is_ascii_hexdigit() });
    if well_formed { Ok(Some(id.to_string())) } else { Err(format!("not a boot id: {:?}", id)) }
}

impl Found {
    pub fn dir(&self) -> &Path {
        match self {
            Found::Leftover(dir) | Found::Kept { dir, .. } | Found::Live(dir) => dir,
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
        let live =
            RunFiles::create(parent.path(), "faultscale-1-0000abcd", WorkloadKind::named("file-shared").unwrap(), 4096)
                .unwrap();
        for name in ["faultscale-2-0000abcd", "faultscale-3-xyz", "faultscale-notes", "other"] {
            std::fs::create_dir(parent.path().join(name)).unwrap();
        }
        // The live run's directory is found as such, to be kept and named.
        let found = leftovers(parent.path());
        assert_eq!(
            found,
            [Found::Live(live.path().to_path_buf()), Found::Leftover(parent.path().join("faultscale-2-0000abcd"))]
        );
        drop(live);
    }

    #[test]
    fn another_kernels_run_directories_are_kept() {
        let parent = tempfile::tempdir().unwrap();
        // Unlocked here, as a run of another kernel sharing the directory looks through hostfs.
        let theirs = parent.path().join("faultscale-7-0000beef");
        std::fs::create_dir(&theirs).unwrap();
        std::fs::write(theirs.join(BOOT_ID_FILE), "0d7b3a44-0000-4000-8000-000000000000\n").unwrap();
        let ours =
            RunFiles::create(parent.path(), "faultscale-8-0000cafe", WorkloadKind::named("file-shared").unwrap(), 4096)
                .unwrap();
        assert_eq!(std::fs::read_to_string(ours.path().join(BOOT_ID_FILE)).ok(), boot_id());
        // Ours is held by its live run: found as live, never to be removed.
        let found = leftovers(parent.path());
        assert!(
            matches!(&found[..], [Found::Kept { dir, why }, Found::Live(live)] if *dir == theirs && why.contains("boot id 0d7b3a44-0000-4000-8000-000000000000") && live == ours.path()),
            "{found:?}"
        );
        assert!(ours.path().exists() && !parent.path().join(".faultscale-8-0000cafe.new").exists());
        // What is no boot id is kept and said escaped; nothing blocks or reads without end.
        let fifo = parent.path().join("faultscale-9-0000f1f0");
        std::fs::create_dir(&fifo).unwrap();
        nix::unistd::mkfifo(&fifo.join(BOOT_ID_FILE), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let odd = parent.path().join("faultscale-9-0000e5c0");
        std::fs::create_dir(&odd).unwrap();
        std::fs::write(odd.join(BOOT_ID_FILE), "\x1b[2J\n").unwrap();
        let empty = parent.path().join("faultscale-9-0000e3e3");
        std::fs::create_dir(&empty).unwrap();
        std::fs::write(empty.join(BOOT_ID_FILE), "").unwrap();
        let why = |dir: &Path| match leftovers(parent.path()).into_iter().find(|f| f.dir() == dir) {
            Some(Found::Kept { why, .. }) => why,
            other => panic!("{}: {other:?}", dir.display()),
        };
        assert!(why(&fifo).contains("not a regular file"));
        assert!(why(&odd).contains(r#"not a boot id: "\u{1b}[2J""#), "{}", why(&odd));
        assert!(why(&empty).contains(r#"not a boot id: """#));
    }

    #[test]
    fn a_run_killed_while_staging_leaves_what_cleanup_finds() {
        let parent = tempfile::tempdir().unwrap();
        let staged = parent.path().join(".faultscale-5-0000abcd.new");
        std::fs::create_dir(&staged).unwrap();
        // Without the boot id the run may be between mkdir and its lock: not touched.
        assert_eq!(leftovers(parent.path()), []);
        std::fs::write(staged.join(BOOT_ID_FILE), boot_id().unwrap()).unwrap();
        assert_eq!(leftovers(parent.path()), [Found::Leftover(staged)]);
        // A probe is found once it is a minute old, never while a run may be using it.
        std::fs::create_dir(parent.path().join(".faultscale-check-77")).unwrap();
        assert_eq!(leftovers(parent.path()).len(), 1);
    }

    #[test]
    fn the_directory_and_shared_file_go_away() {
        let parent = tempfile::tempdir().unwrap();
        let dir;
        {
            let files =
                RunFiles::create(parent.path(), "faultscale-1-test", WorkloadKind::named("mmap-file").unwrap(), 4096)
                    .unwrap();
            dir = files.path().to_path_buf();
            assert_eq!(std::fs::metadata(dir.join("shared")).unwrap().len(), 4096);
            std::fs::write(dir.join("private-0"), b"x").unwrap();
        }
        assert!(!dir.exists());
    }
}
