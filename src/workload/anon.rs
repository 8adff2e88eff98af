//! `anon`: the loop of the 2009 memcg measurement. mmap a private anonymous chunk, write one
//! byte per page (each write is a minor fault that allocates and charges a page), munmap.

use std::sync::atomic::{AtomicU64, Ordering};

use super::{Shape, ThpMode, Unit, Workload, WorkloadSettings, apply_thp, map, touch_pages};

pub struct Anon {
    bytes: usize,
    page_size: usize,
    thp: ThpMode,
}

impl Anon {
    pub fn new(settings: &WorkloadSettings, bytes: u64) -> Self {
        Anon { bytes: bytes as usize, page_size: settings.page_size as usize, thp: settings.thp }
    }
}

impl Workload for Anon {
    fn shape(&self) -> Shape {
        // With THP allowed a chunk may fault in huge pages: fewer faults than pages.
        Shape {
            unit: Unit::Faults,
            per_iteration: (self.bytes / self.page_size) as u64,
            exact: self.thp == ThpMode::Never,
        }
    }

    fn prepare(&mut self) -> Result<(), String> {
        apply_thp(self.thp)
    }

    fn run(&mut self, iterations: &AtomicU64) -> String {
        let mut completed: u64 = 0;
        loop {
            let chunk = match map(
                self.bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
            ) {
                Ok(chunk) => chunk,
                Err(e) => return e,
            };
            // SAFETY: the mapping just made, written within its bounds, unmapped after.
            unsafe {
                if self.thp == ThpMode::Always {
                    libc::madvise(chunk as *mut libc::c_void, self.bytes, libc::MADV_HUGEPAGE);
                }
                touch_pages(chunk, self.bytes, self.page_size);
                libc::munmap(chunk as *mut libc::c_void, self.bytes);
            }
            completed += 1;
            // One writer per counter: a plain store, no locked instruction in the loop.
            iterations.store(completed, Ordering::Relaxed);
        }
    }
}
