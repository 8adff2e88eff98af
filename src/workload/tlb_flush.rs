//! will-it-scale's tlb_flush2, written afresh with the original's semantics: map 1 MiB private
//! anonymous; for each page write it (a fault that allocates and charges a page), zap it with
//! madvise(MADV_DONTNEED) (uncharge and a TLB flush, across CPUs in thread mode) and read it
//! back as zero (a read fault mapping the zero page); unmap. An LKP report of 2023-2024 measured
//! -32.3% per_thread_ops on it. One count per page, as will-it-scale counts.

use super::{Counter, Workload, WorkloadSettings, map};

/// will-it-scale's MEMORYSIZE.
pub const MEMORY_BYTES: usize = 1 << 20;

pub struct TlbFlush {
    page_size: usize,
}

impl TlbFlush {
    pub fn new(settings: &WorkloadSettings) -> Self {
        TlbFlush { page_size: settings.page_size as usize }
    }
}

impl Workload for TlbFlush {
    fn prepare(&mut self) -> Result<(), String> {
        Ok(())
    }

    fn run(&mut self, counter: &Counter) -> Result<(), String> {
        let mut counted: u64 = 0;
        loop {
            let chunk =
                map(MEMORY_BYTES, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1)?;
            let mut offset = 0;
            let mut done = false;
            while offset < MEMORY_BYTES {
                // SAFETY: within the mapping just made; the page is zapped, then read back.
                unsafe {
                    let page = chunk.add(offset);
                    std::ptr::write_volatile(page, 1);
                    libc::madvise(page as *mut libc::c_void, self.page_size, libc::MADV_DONTNEED);
                    if std::ptr::read_volatile(page) != 0 {
                        libc::munmap(chunk as *mut libc::c_void, MEMORY_BYTES);
                        return Err("tlb_flush2: a page read back non-zero after MADV_DONTNEED".into());
                    }
                }
                counted += 1;
                offset += self.page_size;
                if !counter.record(counted) {
                    done = true;
                    break;
                }
            }
            // SAFETY: the mapping made above, with its length.
            unsafe { libc::munmap(chunk as *mut libc::c_void, MEMORY_BYTES) };
            if done {
                return Ok(());
            }
            counter.boundary();
        }
    }
}
