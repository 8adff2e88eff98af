//! will-it-scale's tlb_flush2, written afresh with the original's semantics: map 1 MiB private
//! anonymous; for each page write it (a fault that allocates and charges a page), zap it with
//! madvise(MADV_DONTNEED) (uncharge and a TLB flush, across CPUs in thread mode) and read it
//! back as zero (a read fault mapping the zero page); unmap. An LKP report of 2023-2024 measured
//! -32.3% per_thread_ops on it. One count per page, as will-it-scale counts.

use super::{Counter, Descriptor, Unit, Workload, WorkloadSettings, descriptor, map, pages};

/// will-it-scale's MEMORYSIZE.
pub const MEMORY_BYTES: usize = 1 << 20;

/// Two faults per page (the write, then the read of the zapped page): counted as one
/// operation each, as will-it-scale counts.
pub static TLB_FLUSH2: Descriptor = Descriptor {
    pages_per_iteration: |s| pages(MEMORY_BYTES as u64, s),
    ..descriptor(
        "tlb_flush2",
        Unit::Operations,
        "will-it-scale tlb_flush2: write a page, MADV_DONTNEED it, read it back, per page of 1 MiB; counted per page",
        |_| MEMORY_BYTES as u64,
        |s, _| Box::new(TlbFlush::new(s)),
    )
};

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
