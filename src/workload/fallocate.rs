//! will-it-scale's fallocate1/fallocate2, written afresh with the originals' semantics: each
//! worker owns an unlinked file and extends it by fallocate in 8 KiB steps (1 MiB / 128); at
//! 1 MiB it truncates the file to 0 and starts again. On tmpfs every step allocates and charges
//! shmem pages to the worker's memcg and every truncate uncharges them: the charge path without
//! a page fault (the 2023-2024 LKP reports: fallocate1 -25.8%, fallocate2 -33.8%).
//! - `fallocate1`: the file on tmpfs (/dev/shm by default);
//! - `fallocate2`: the file in /tmp (whatever file system that is on the host).
//!
//! One count per fallocate call, as will-it-scale counts.

use super::{Counter, Descriptor, Unit, Workload, WorkloadSettings, descriptor, fresh_file};
use std::os::fd::AsRawFd;

/// will-it-scale's FILESIZE and BUFLEN.
pub const FILE_BYTES: i64 = 1 << 20;
pub const STEP_BYTES: i64 = FILE_BYTES / 128;

pub static FALLOCATE1: Descriptor = Descriptor {
    // No faults: the kernel's fault count has nothing to agree with.
    tmpdir: Some("/dev/shm"),
    ..fallocate(
        "fallocate1",
        "will-it-scale fallocate1: fallocate 8 KiB steps of a 1 MiB tmpfs file, truncate, repeat; counted per call",
    )
};

pub static FALLOCATE2: Descriptor = Descriptor {
    tmpdir: Some("/tmp"),
    ..fallocate("fallocate2", "will-it-scale fallocate2: the same with the file in /tmp")
};

/// What the two share: a file a worker, held whole while parked, a step an iteration.
const fn fallocate(name: &'static str, description: &'static str) -> Descriptor {
    Descriptor {
        check_dir: Some(check_dir),
        parked_bytes: |_| FILE_BYTES as u64,
        file_bytes: |_, _| FILE_BYTES as u64,
        ..descriptor(name, Unit::Operations, description, |_| FILE_BYTES as u64, |s, i| Box::new(Fallocate::new(s, i)))
    }
}

/// Whether `dir`'s file system takes fallocate, asked once before a run so that a file system
/// without it (user-mode-linux's hostfs, some FUSE mounts) is one clear error, not a failed
/// slice per placement.
pub fn check_dir(dir: &std::path::Path) -> Result<(), String> {
    let path = dir.join(format!(".faultscale-fallocate-check-{}", std::process::id()));
    let file = fresh_file(&path, 0)?;
    let _ = std::fs::remove_file(&path);
    // SAFETY: plain fallocate on a descriptor we own.
    if unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, STEP_BYTES) } != 0 {
        return Err(format!(
            "its file system does not take fallocate ({}); give a --tmpdir on tmpfs, ext4 or xfs",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

pub struct Fallocate {
    path: std::path::PathBuf,
    file: Option<std::fs::File>,
}

impl Fallocate {
    pub fn new(settings: &WorkloadSettings, worker_index: usize) -> Self {
        let dir = settings.files_dir.clone().unwrap_or_default();
        Fallocate { path: dir.join(format!("fallocate-{worker_index}")), file: None }
    }
}

impl Workload for Fallocate {
    fn prepare(&mut self) -> Result<(), String> {
        let file = fresh_file(&self.path, 0)?;
        // Unlinked as will-it-scale does: the file lives as long as the worker.
        std::fs::remove_file(&self.path).map_err(|e| format!("unlinking {}: {e}", self.path.display()))?;
        // SAFETY: plain fallocate on our own descriptor; a file system without it is named now,
        // before the measurement, rather than as a failed slice.
        if unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, STEP_BYTES) } != 0 {
            return Err(format!(
                "fallocate in {}: {} (use a --tmpdir on tmpfs, ext4 or xfs)",
                self.path.parent().unwrap_or(&self.path).display(),
                std::io::Error::last_os_error()
            ));
        }
        file.set_len(0).map_err(|e| format!("truncating {}: {e}", self.path.display()))?;
        self.file = Some(file);
        Ok(())
    }

    fn run(&mut self, counter: &Counter) -> Result<(), String> {
        let fd = match &self.file {
            Some(file) => file.as_raw_fd(),
            None => return Err("fallocate: not prepared".into()),
        };
        let mut completed: u64 = 0;
        let mut place: i64 = 0;
        loop {
            // SAFETY: our own descriptor.
            if unsafe { libc::fallocate(fd, 0, place, STEP_BYTES) } != 0 {
                let error = std::io::Error::last_os_error();
                // will-it-scale tolerates EINTR (its stop signal); so does this loop.
                if error.raw_os_error() != Some(libc::EINTR) {
                    return Err(format!("fallocate at {place} bytes: {error}"));
                }
            }
            place += STEP_BYTES;
            if place >= FILE_BYTES {
                // SAFETY: our own descriptor.
                if unsafe { libc::ftruncate(fd, 0) } != 0 {
                    return Err(format!("ftruncate: {}", std::io::Error::last_os_error()));
                }
                place = 0;
            }
            completed += 1;
            if !counter.end_iteration(completed) {
                return Ok(());
            }
        }
    }
}
