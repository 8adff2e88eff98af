//! `usemem-file`: usemem's file-backed mode (vm-scalability's `usemem -f FILE --readonly`):
//! map a per-worker file of --size bytes shared, read one word per page, unmap, repeat. The
//! file is sparse, so every page read is page cache the fault allocates and charges to the
//! worker's memcg without disk I/O; with --size above a placement's limit the memcg reclaims
//! those clean pages, unmapping them through rmap (try_to_unmap) while the mapping still holds
//! them: the shape of the 2004 rmap thread's `usemem -m 400` on a 256 MB machine, with no
//! swap needed. On tmpfs the pages are swap-backed and cannot be reclaimed without swap: use a
//! disk file system for --tmpdir.
//!
//! Counted per page read (the unit `pages`): fault-around may map several cached pages in one
//! fault, so the kernel's fault count, beside it, is lower where pages survive an iteration.

use super::{Counter, Descriptor, Unit, Workload, WorkloadSettings, descriptor, fresh_file, map, pages};
use std::os::fd::AsRawFd;

pub static USEMEM_FILE: Descriptor = Descriptor {
    // Fault-around may map several counted pages in one fault.
    tmpdir: Some("/tmp"),
    // Page cache on tmpfs is swap-backed: its point, reclaim without swap, is lost there.
    wants_reclaimable_files: true,
    parked_bytes: |s| s.size_bytes,
    // A sparse file's hole read takes no block but on tmpfs.
    file_bytes: |s, on_tmpfs| if on_tmpfs { s.size_bytes } else { 0 },
    pages_per_iteration: |s| pages(s.size_bytes, s),
    ..descriptor(
        "usemem-file",
        Unit::Pages,
        "usemem -f: map a sparse per-worker file of --size shared, read a word per page; counted per page. Above a limit the clean page cache is reclaimed through rmap, no swap needed",
        |s| s.size_bytes,
        |s, i| Box::new(UsememFile::new(s, i)),
    )
};

pub struct UsememFile {
    path: std::path::PathBuf,
    bytes: usize,
    page_size: usize,
    file: Option<std::fs::File>,
}

impl UsememFile {
    pub fn new(settings: &WorkloadSettings, worker_index: usize) -> Self {
        let dir = settings.files_dir.clone().unwrap_or_default();
        UsememFile {
            path: dir.join(format!("usemem-{worker_index}")),
            bytes: settings.size_bytes as usize,
            page_size: settings.page_size as usize,
            file: None,
        }
    }
}

impl Workload for UsememFile {
    fn prepare(&mut self) -> Result<(), String> {
        self.file = Some(fresh_file(&self.path, self.bytes as u64)?);
        Ok(())
    }

    fn run(&mut self, counter: &Counter) -> Result<(), String> {
        let fd = match &self.file {
            Some(file) => file.as_raw_fd(),
            None => return Err("usemem-file: not prepared".into()),
        };
        let mut counted: u64 = 0;
        loop {
            let start = map(self.bytes, libc::PROT_READ, libc::MAP_SHARED, fd)?;
            let mut offset = 0;
            let mut done = false;
            while offset < self.bytes {
                // SAFETY: within the mapping just made; a read, as usemem --readonly reads.
                unsafe { std::ptr::read_volatile(start.add(offset) as *const u64) };
                counted += 1;
                offset += self.page_size;
                if !counter.record(counted) {
                    done = true;
                    break;
                }
            }
            // SAFETY: the mapping made above, with its length.
            unsafe { libc::munmap(start as *mut libc::c_void, self.bytes) };
            if done {
                return Ok(());
            }
            counter.boundary();
        }
    }
}
