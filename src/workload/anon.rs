//! `anon`: the loop of the 2009 memcg measurement. mmap a private anonymous chunk, write one
//! byte per page (each write is a minor fault that allocates and charges a page), munmap; at
//! one fixed place (`FixedPlace`), so every run pays the same page tables.

use super::{
    Counter, Descriptor, Exactness, FixedPlace, PerIteration, ThpMode, Unit, Workload, WorkloadSettings, apply_thp,
    descriptor, pages, touch_pages,
};

pub static ANON: Descriptor = Descriptor {
    per_iteration: PerIteration::ChunkPages,
    // With THP allowed a chunk may fault in huge pages: fewer faults than pages.
    exact: Exactness::WithoutThp,
    pages_per_iteration: |s| pages(s.chunk_bytes, s),
    ..descriptor(
        "anon",
        Unit::Faults,
        "mmap a private anonymous --chunk, write one byte per page, munmap (the 2009 memcg loop)",
        |s| s.chunk_bytes,
        |s, _| Box::new(Anon::new(s, s.chunk_bytes)),
    )
};

pub struct Anon {
    bytes: usize,
    page_size: usize,
    thp: ThpMode,
    place: Option<FixedPlace>,
}

impl Anon {
    pub fn new(settings: &WorkloadSettings, bytes: u64) -> Self {
        Anon { bytes: bytes as usize, page_size: settings.page_size as usize, thp: settings.thp, place: None }
    }
}

impl Workload for Anon {
    fn prepare(&mut self) -> Result<(), String> {
        self.place = Some(FixedPlace::reserve(self.bytes, self.page_size)?);
        apply_thp(self.thp)
    }

    fn run(&mut self, counter: &Counter) -> Result<(), String> {
        let place = self.place.as_ref().ok_or("anon: not prepared")?;
        let mut completed: u64 = 0;
        loop {
            let chunk = place.map(libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1)?;
            // SAFETY: the mapping just made, written within its bounds, unmapped after.
            unsafe {
                if self.thp == ThpMode::Always {
                    libc::madvise(chunk as *mut libc::c_void, self.bytes, libc::MADV_HUGEPAGE);
                }
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
