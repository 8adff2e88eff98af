//! `mmap-file`: every worker maps and unmaps one page of ONE shared file without touching it,
//! the i_mmap lock loop of the 2011 linux-mm thread (i_mmap_lock to mutex): each mmap and
//! munmap takes the file's i_mmap lock, so workers contend on it. No faults; it counts loops.

use super::{Counter, Descriptor, Unit, Workload, WorkloadSettings, descriptor, map};
use std::os::fd::AsRawFd;

/// The shared file every mmap-file worker maps, one page, made by the harness.
const SHARED_FILE: &str = "shared";

pub static MMAP_FILE: Descriptor = Descriptor {
    // No faults: it counts loops. Its one shared page is the harness's: no file a worker.
    tmpdir: Some("/tmp"),
    harness_file: Some((SHARED_FILE, 1)),
    ..descriptor(
        "mmap-file",
        Unit::Loops,
        "every worker maps and unmaps one page of ONE shared file, untouched (i_mmap lock); counts loops",
        |s| s.page_size,
        |s, _| Box::new(MmapFile::new(s)),
    )
};

pub struct MmapFile {
    path: std::path::PathBuf,
    page_size: usize,
    file: Option<std::fs::File>,
}

impl MmapFile {
    pub fn new(settings: &WorkloadSettings) -> Self {
        let dir = settings.files_dir.clone().unwrap_or_default();
        MmapFile { path: dir.join(SHARED_FILE), page_size: settings.page_size as usize, file: None }
    }
}

impl Workload for MmapFile {
    fn prepare(&mut self) -> Result<(), String> {
        let file = std::fs::File::open(&self.path).map_err(|e| format!("opening {}: {e}", self.path.display()))?;
        self.file = Some(file);
        Ok(())
    }

    fn run(&mut self, counter: &Counter) -> Result<(), String> {
        let fd = self.file.as_ref().expect("prepared").as_raw_fd();
        let mut completed: u64 = 0;
        loop {
            let page = map(self.page_size, libc::PROT_READ, libc::MAP_SHARED, fd)?;
            // SAFETY: the mapping just made.
            unsafe { libc::munmap(page as *mut libc::c_void, self.page_size) };
            completed += 1;
            if !counter.end_iteration(completed) {
                return Ok(());
            }
        }
    }
}
