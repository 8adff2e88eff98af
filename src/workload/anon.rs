//! `anon`: the loop of the 2009 memcg measurement. mmap a private anonymous chunk, write one
//! byte per page (each write is a minor fault that allocates and charges a page), munmap.

use std::sync::atomic::{AtomicU64, Ordering};

use super::{Workload, WorkloadSettings};

pub struct Anon {
    chunk_bytes: usize,
    page_size: usize,
}

impl Anon {
    pub fn new(settings: WorkloadSettings) -> Self {
        Anon { chunk_bytes: settings.chunk_bytes as usize, page_size: settings.page_size as usize }
    }
}

impl Workload for Anon {
    fn faults_per_iteration(&self) -> u64 {
        (self.chunk_bytes / self.page_size) as u64
    }

    fn prepare(&mut self) -> Result<(), String> {
        // Chunks of 2 MiB and more could be backed by one huge page, turning 512 faults into
        // one; disabling THP for this process once here keeps every fault a 4 KiB fault
        // without an madvise call in the loop.
        let rc = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
        if rc != 0 {
            return Err(format!("prctl(PR_SET_THP_DISABLE): {}", std::io::Error::last_os_error()));
        }
        Ok(())
    }

    fn run(&mut self, iterations: &AtomicU64) -> String {
        let mut completed: u64 = 0;
        loop {
            // SAFETY: a fresh private anonymous mapping, written only inside its bounds and
            // unmapped before the next one.
            unsafe {
                let chunk = libc::mmap(
                    std::ptr::null_mut(),
                    self.chunk_bytes,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                );
                if chunk == libc::MAP_FAILED {
                    return format!("mmap of {} bytes failed: {}", self.chunk_bytes, std::io::Error::last_os_error());
                }
                let bytes = chunk as *mut u8;
                let mut offset = 0;
                while offset < self.chunk_bytes {
                    std::ptr::write_volatile(bytes.add(offset), 0);
                    offset += self.page_size;
                }
                libc::munmap(chunk, self.chunk_bytes);
            }
            completed += 1;
            // One writer per counter: a plain store, no locked instruction in the loop.
            iterations.store(completed, Ordering::Relaxed);
        }
    }
}
