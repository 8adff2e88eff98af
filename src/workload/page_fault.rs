//! will-it-scale's page_fault1/2/3, written afresh with the originals' semantics: 128 MiB
//! mapped per iteration (MEMSIZE), one byte written per page, and the counter bumped once per
//! page (not per mapping), so samples and totals are not quantised by 32,768-page iterations:
//! - `page_fault1`: a private anonymous mapping (allocate, zero and charge per page);
//! - `page_fault2`: a private mapping of a 128 MiB file (a COW copy per page);
//! - `page_fault3`: a shared mapping of that file (page cache faults, dirtying).
//!
//! will-it-scale unlinks its file after creating it; here it lives in the run directory
//! (tmpfs /dev/shm by default, as the LKP reports ran them) and goes with it.

use super::{
    Counter, Descriptor, Exactness, ThpMode, Unit, Workload, WorkloadSettings, apply_thp, descriptor, fresh_file, map,
    pages, shared_file,
};
use std::os::fd::AsRawFd;

/// will-it-scale's MEMSIZE.
pub const MEMSIZE: usize = 128 << 20;

pub static PAGE_FAULT1: Descriptor = Descriptor {
    // One count per page; with THP allowed a page may come in a huge fault.
    exact: Exactness::WithoutThp,
    pages_per_iteration: |s| pages(MEMSIZE as u64, s),
    ..descriptor(
        "page_fault1",
        Unit::Faults,
        "will-it-scale page_fault1: 128 MiB private anonymous per iteration, counted per page",
        |_| MEMSIZE as u64,
        |s, i| Box::new(PageFault::new(s, i, Variant::Anonymous)),
    )
};

pub static PAGE_FAULT2: Descriptor = Descriptor {
    exact: Exactness::Exact,
    tmpdir: Some("/dev/shm"),
    // The workers on one CPU slot share one file across the crews, as will-it-scale's one task
    // has one: page_fault2 only reads its file's pages and copies them, each copy charged to
    // the faulting worker's memcg, so a file a crew only multiplied the memory (P files a CPU;
    // 4,783 MiB against will-it-scale's 1,568 at 8 tasks, P=4). Not page_fault3, whose writes
    // dirty the shared page and account it to the memcg that owns the page.
    shares_file_across_crews: true,
    // Its file is its CPU slot's, held once (in the running worker's count): parked, nothing.
    file_bytes: |_, on_tmpfs| if on_tmpfs { MEMSIZE as u64 } else { 0 },
    pages_per_iteration: |s| pages(MEMSIZE as u64, s),
    ..descriptor(
        "page_fault2",
        Unit::Faults,
        "will-it-scale page_fault2: 128 MiB private file mapping (COW), counted per page",
        // The file and the private copies of its pages.
        |_| 2 * MEMSIZE as u64,
        |s, i| Box::new(PageFault::new(s, i, Variant::FilePrivate)),
    )
};

pub static PAGE_FAULT3: Descriptor = Descriptor {
    exact: Exactness::Exact,
    tmpdir: Some("/dev/shm"),
    parked_bytes: |_| MEMSIZE as u64,
    file_bytes: |_, _| MEMSIZE as u64,
    pages_per_iteration: |s| pages(MEMSIZE as u64, s),
    // Pages, as will-it-scale counts them: off tmpfs a fault maps several (file-shared's).
    ..descriptor(
        "page_fault3",
        Unit::Pages,
        "will-it-scale page_fault3: 128 MiB shared file mapping, counted per page",
        |_| MEMSIZE as u64,
        |s, i| Box::new(PageFault::new(s, i, Variant::FileShared)),
    )
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    Anonymous,
    FilePrivate,
    FileShared,
}

pub struct PageFault {
    variant: Variant,
    page_size: usize,
    thp: ThpMode,
    path: std::path::PathBuf,
    file: Option<std::fs::File>,
}

impl PageFault {
    pub fn new(settings: &WorkloadSettings, worker_index: usize, variant: Variant) -> Self {
        let dir = settings.files_dir.clone().unwrap_or_default();
        PageFault {
            variant,
            page_size: settings.page_size as usize,
            thp: settings.thp,
            path: dir.join(format!("page-fault-{worker_index}")),
            file: None,
        }
    }
}

impl Workload for PageFault {
    fn prepare(&mut self) -> Result<(), String> {
        apply_thp(self.thp)?;
        self.file = match self.variant {
            Variant::Anonymous => None,
            // One file a CPU slot for every crew (`PAGE_FAULT2.shares_file_across_crews`).
            Variant::FilePrivate => Some(shared_file(&self.path, MEMSIZE as u64)?),
            Variant::FileShared => Some(fresh_file(&self.path, MEMSIZE as u64)?),
        };
        Ok(())
    }

    fn run(&mut self, counter: &Counter) -> Result<(), String> {
        let (flags, fd) = match (self.variant, &self.file) {
            (Variant::Anonymous, _) => (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1),
            (Variant::FilePrivate, Some(file)) => (libc::MAP_PRIVATE, file.as_raw_fd()),
            (Variant::FileShared, Some(file)) => (libc::MAP_SHARED, file.as_raw_fd()),
            _ => return Err("page_fault: not prepared".into()),
        };
        let mut counted: u64 = 0;
        loop {
            let chunk = map(MEMSIZE, libc::PROT_READ | libc::PROT_WRITE, flags, fd)?;
            let mut offset = 0;
            let mut done = false;
            while offset < MEMSIZE {
                // SAFETY: within the mapping just made.
                unsafe { std::ptr::write_volatile(chunk.add(offset), 0) };
                counted += 1;
                offset += self.page_size;
                if !counter.record(counted) {
                    done = true;
                    break;
                }
            }
            // SAFETY: the mapping made above, with its length.
            unsafe { libc::munmap(chunk as *mut libc::c_void, MEMSIZE) };
            if done {
                return Ok(());
            }
            counter.boundary();
        }
    }
}
