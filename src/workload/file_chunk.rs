//! The two file-backed fault loops, which differ only in the mapping's sharing:
//! - `file-private` (will-it-scale page_fault2): a private mapping of a per-worker file,
//!   written page by page: each write is a COW fault that reads the page cache page and
//!   charges a new anonymous copy to the memcg;
//! - `file-shared` (will-it-scale page_fault3): a shared mapping, written page by page: each
//!   write faults the page cache page in and dirties it (page_mkwrite); the page cache stays
//!   charged to the memcg of the worker that created the file.

use std::os::fd::AsRawFd;

use super::{
    Counter, Descriptor, Exactness, FixedPlace, PerIteration, Unit, Workload, WorkloadSettings, descriptor, fresh_file,
    pages, touch_pages,
};

pub static FILE_PRIVATE: Descriptor = Descriptor {
    per_iteration: PerIteration::ChunkPages,
    exact: Exactness::Exact,
    tmpdir: Some("/tmp"),
    // Parked, its file's pages; a hole read, or a private copy of it, takes no block off tmpfs.
    parked_bytes: |s| s.chunk_bytes,
    file_bytes: |s, on_tmpfs| if on_tmpfs { s.chunk_bytes } else { 0 },
    pages_per_iteration: |s| pages(s.chunk_bytes, s),
    ..descriptor(
        "file-private",
        Unit::Faults,
        "mmap a per-worker file privately, write one byte per page (COW faults), munmap",
        // The file's pages (page cache, or shmem on tmpfs) and the private copies of them.
        |s| 2 * s.chunk_bytes,
        |s, i| Box::new(FileChunk::private(s, i)),
    )
};

pub static FILE_SHARED: Descriptor = Descriptor {
    // Counted per page: on a disk filesystem one fault maps several pages (fault-around,
    // large page-cache folios), where tmpfs takes one a page; the kernel's count says how
    // many (a warning gives pages per fault).
    per_iteration: PerIteration::ChunkPages,
    exact: Exactness::Exact,
    tmpdir: Some("/tmp"),
    parked_bytes: |s| s.chunk_bytes,
    file_bytes: |s, _| s.chunk_bytes,
    pages_per_iteration: |s| pages(s.chunk_bytes, s),
    ..descriptor(
        "file-shared",
        Unit::Pages,
        "mmap a per-worker file shared, write one byte per page (page cache faults, dirtying), munmap",
        |s| s.chunk_bytes,
        |s, i| Box::new(FileChunk::shared(s, i)),
    )
};

pub struct FileChunk {
    path: std::path::PathBuf,
    /// MAP_PRIVATE or MAP_SHARED.
    sharing: libc::c_int,
    bytes: usize,
    page_size: usize,
    file: Option<std::fs::File>,
    place: Option<FixedPlace>,
}

impl FileChunk {
    pub fn private(settings: &WorkloadSettings, worker_index: usize) -> Self {
        Self::new(settings, worker_index, libc::MAP_PRIVATE, "private")
    }

    pub fn shared(settings: &WorkloadSettings, worker_index: usize) -> Self {
        Self::new(settings, worker_index, libc::MAP_SHARED, "shared")
    }

    fn new(settings: &WorkloadSettings, worker_index: usize, sharing: libc::c_int, prefix: &str) -> Self {
        let dir = settings.files_dir.clone().unwrap_or_default();
        FileChunk {
            path: dir.join(format!("{prefix}-{worker_index}")),
            sharing,
            bytes: settings.chunk_bytes as usize,
            page_size: settings.page_size as usize,
            file: None,
            place: None,
        }
    }
}

impl Workload for FileChunk {
    fn prepare(&mut self) -> Result<(), String> {
        self.file = Some(fresh_file(&self.path, self.bytes as u64)?);
        self.place = Some(FixedPlace::reserve(self.bytes, self.page_size)?);
        Ok(())
    }

    fn run(&mut self, counter: &Counter) -> Result<(), String> {
        let fd = self.file.as_ref().expect("prepared").as_raw_fd();
        let place = self.place.as_ref().expect("prepared");
        let mut completed: u64 = 0;
        loop {
            let chunk = place.map(libc::PROT_READ | libc::PROT_WRITE, self.sharing, fd)?;
            // SAFETY: the mapping just made, written within its bounds, unmapped after.
            unsafe {
                touch_pages(chunk, self.bytes, self.page_size);
                libc::munmap(chunk as *mut libc::c_void, self.bytes);
            }
            completed += 1;
            if !counter.end_iteration(completed) {
                return Ok(());
            }
        }
    }
}
