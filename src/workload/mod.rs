//! Workloads: each is one small loop that publishes its own counter once per iteration (per page
//! or per operation where an iteration is large) through `Counter::record`, which also ends
//! fixed work (--iterations).
//!
//! The harness (src/run/) owns spawning, pinning, start, sampling and stop; a workload only
//! prepares itself and loops. Adding a workload is one file here plus a variant of
//! `WorkloadKind` and its row of `WORKLOADS`: name, unit, count per iteration, files, exactness,
//! description, constructor (file-private and file-shared share one file, as they differ only
//! in a mapping flag). The shape comes from the row, without building a workload;
//! construction has no side effects, and `prepare` runs in the worker, in its cgroup, on its CPU.

mod anon;
mod fallocate;
mod file_chunk;
mod fork;
mod mmap_file;
mod page_fault;
mod tlb_flush;
mod usemem;
mod usemem_file;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64};

/// The workloads, in the order of their rows in `WORKLOADS`, where each is described.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    Anon,
    FilePrivate,
    FileShared,
    MmapFile,
    Usemem,
    UsememFile,
    Fork,
    #[serde(rename = "page_fault1")]
    PageFault1,
    #[serde(rename = "page_fault2")]
    PageFault2,
    #[serde(rename = "page_fault3")]
    PageFault3,
    #[serde(rename = "fallocate1")]
    Fallocate1,
    #[serde(rename = "fallocate2")]
    Fallocate2,
    #[serde(rename = "tlb_flush2")]
    TlbFlush2,
}

impl WorkloadKind {
    /// The workload's row of `WORKLOADS`.
    pub fn facts(self) -> &'static Facts {
        &WORKLOADS[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.facts().name
    }

    /// Whether the workload needs the run's temporary directory.
    pub fn needs_files(self) -> bool {
        self.facts().tmpdir.is_some()
    }

    /// The most bytes one worker's file takes from its filesystem: on tmpfs every page it
    /// touches (the page cache is the file's space there), elsewhere only the pages it writes
    /// through a shared mapping or allocates (reading a sparse file's hole, or a private
    /// mapping's copy of it, takes no block). 0 where a worker has no file of its own
    /// (mmap-file's one shared page is the harness's).
    pub fn file_bytes_per_worker(self, chunk_bytes: u64, size_bytes: u64, on_tmpfs: bool) -> u64 {
        use WorkloadKind as W;
        match self {
            W::FileShared => chunk_bytes,
            W::FilePrivate if on_tmpfs => chunk_bytes,
            W::UsememFile if on_tmpfs => size_bytes,
            W::PageFault3 => page_fault::MEMSIZE as u64,
            W::PageFault2 if on_tmpfs => page_fault::MEMSIZE as u64,
            W::Fallocate1 | W::Fallocate2 => fallocate::FILE_BYTES as u64,
            _ => 0,
        }
    }

    /// The most memory one running worker holds at once, charged to its memcg or kept by its
    /// file: what it has touched of its mapping before its iteration's munmap, plus its file's
    /// pages (shmem on tmpfs, swap-backed; page cache elsewhere, charged until reclaimed).
    pub fn resident_bytes_per_worker(self, chunk_bytes: u64, size_bytes: u64, page_size: u64) -> u64 {
        use WorkloadKind as W;
        let memsize = page_fault::MEMSIZE as u64;
        match self {
            W::Anon | W::FileShared => chunk_bytes,
            // The file's pages (page cache, or shmem on tmpfs) and the private copies of them.
            W::FilePrivate => 2 * chunk_bytes,
            W::MmapFile => page_size,
            W::Usemem | W::UsememFile => size_bytes,
            // The worker's written memory and its child's copy of it.
            W::Fork => 2 * size_bytes,
            W::PageFault1 | W::PageFault3 => memsize,
            // The file and the private copies of its pages.
            W::PageFault2 => 2 * memsize,
            W::Fallocate1 | W::Fallocate2 => fallocate::FILE_BYTES as u64,
            W::TlbFlush2 => tlb_flush::MEMORY_BYTES as u64,
        }
    }

    /// Whether the workers on one CPU slot share one file across the crews (placements), as
    /// will-it-scale's one task has one: page_fault2 only reads its file's pages and copies
    /// them, each copy charged to the faulting worker's memcg, so a file a crew only multiplied
    /// the memory (P files a CPU; 4,783 MiB against will-it-scale's 1,568 at 8 tasks, P=4).
    /// Not page_fault3, whose writes dirty the shared page and account it to the memcg that
    /// owns the page, nor the chunk workloads, whose files are the user's --chunk.
    pub fn shares_file_across_crews(self) -> bool {
        self == WorkloadKind::PageFault2
    }

    /// What one parked worker holds: it parks at an iteration boundary, after its munmap, so
    /// only what outlives an iteration: its file's pages, a forking worker's own memory.
    pub fn parked_bytes_per_worker(self, chunk_bytes: u64, size_bytes: u64) -> u64 {
        use WorkloadKind as W;
        match self {
            W::FilePrivate | W::FileShared => chunk_bytes,
            W::UsememFile | W::Fork => size_bytes,
            // page_fault2's file is its CPU slot's, held once (in the running worker's count).
            W::PageFault3 => page_fault::MEMSIZE as u64,
            W::Fallocate1 | W::Fallocate2 => fallocate::FILE_BYTES as u64,
            W::Anon | W::MmapFile | W::Usemem | W::PageFault1 | W::PageFault2 | W::TlbFlush2 => 0,
        }
    }

    /// The pages the loop touches from one iteration boundary (`Counter::boundary`, where a
    /// worker parks) to the next: a slice must span many such iterations, since the crew's park
    /// waits for its slowest worker to finish the one it is in.
    pub fn pages_per_iteration(self, chunk_bytes: u64, size_bytes: u64, page_size: u64) -> u64 {
        use WorkloadKind as W;
        let pages = |bytes: u64| bytes.div_ceil(page_size.max(1));
        match self {
            W::Anon | W::FilePrivate | W::FileShared => pages(chunk_bytes),
            W::Usemem | W::UsememFile | W::Fork => pages(size_bytes),
            W::PageFault1 | W::PageFault2 | W::PageFault3 => pages(page_fault::MEMSIZE as u64),
            W::TlbFlush2 => pages(tlb_flush::MEMORY_BYTES as u64),
            // A map and unmap of one page; a fallocate step.
            W::MmapFile | W::Fallocate1 | W::Fallocate2 => 1,
        }
    }

    /// Where its files go unless --tmpdir says otherwise: tmpfs for will-it-scale's, as the
    /// LKP reports ran them.
    pub fn default_tmpdir(self) -> &'static str {
        match self.facts().tmpdir {
            Some(dir) if std::path::Path::new(dir).is_dir() => dir,
            _ => "/tmp",
        }
    }

    /// Why it cannot use `dir` for its files, if it cannot (checked before anything is made).
    pub fn files_dir_problem(self, dir: &std::path::Path) -> Option<String> {
        self.facts().check_dir.and_then(|check| check(dir).err())
    }

    /// Why it cannot run with `--mode thread`, if it cannot.
    pub fn thread_mode_problem(self) -> Option<&'static str> {
        self.facts().thread_mode_problem
    }
}

/// How many units one iteration counts, given the settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerIteration {
    /// One: the loop counts every page, call or loop as it goes.
    One,
    /// The pages of --chunk.
    ChunkPages,
    /// The pages of --size.
    SizePages,
}

impl PerIteration {
    pub fn count(self, settings: &WorkloadSettings) -> u64 {
        match self {
            PerIteration::One => 1,
            PerIteration::ChunkPages => settings.chunk_bytes / settings.page_size,
            PerIteration::SizePages => settings.size_bytes / settings.page_size,
        }
    }
}

/// Whether the loop's count should equal the kernel's fault count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exactness {
    Exact,
    /// The kernel counts faults the loop cannot see, or the loop counts what is no fault.
    Inexact,
    /// Exact with --thp never; with THP allowed a huge fault maps many counted pages.
    WithoutThp,
}

impl Exactness {
    pub fn holds(self, thp: ThpMode) -> bool {
        match self {
            Exactness::Exact => true,
            Exactness::Inexact => false,
            Exactness::WithoutThp => thp == ThpMode::Never,
        }
    }
}

/// Everything the harness and the front end know of a workload, one row per workload.
pub struct Facts {
    pub kind: WorkloadKind,
    /// The name `--workload` takes and the outputs print.
    pub name: &'static str,
    pub unit: Unit,
    pub per_iteration: PerIteration,
    pub exact: Exactness,
    /// Where its files go without --tmpdir (`/dev/shm` falls back to `/tmp` where absent);
    /// None for a workload without files.
    pub tmpdir: Option<&'static str>,
    /// Its one line in `--help`.
    pub description: &'static str,
    /// Why it cannot run with `--mode thread`, if it cannot.
    pub thread_mode_problem: Option<&'static str>,
    /// Asks, before anything is made, whether a directory can hold its files.
    pub check_dir: Option<DirCheck>,
    /// Builds worker `worker_index`'s loop; no side effects (`prepare` has them).
    pub create: fn(&WorkloadSettings, usize) -> Box<dyn Workload>,
}

/// Asks whether a directory can hold a workload's files: why not, in words, where it cannot.
pub type DirCheck = fn(&std::path::Path) -> Result<(), String>;

/// Every directory a workload puts its files in by default, once each (what `cleanup` searches
/// when not told where a run's files went).
pub fn default_tmpdirs() -> Vec<&'static str> {
    let mut dirs: Vec<&'static str> = WORKLOADS.iter().map(|facts| facts.kind.default_tmpdir()).collect();
    dirs.sort_unstable();
    dirs.dedup();
    dirs
}

/// A row with the defaults most workloads share: counted per iteration, not exact, no files.
const fn row(
    kind: WorkloadKind,
    name: &'static str,
    unit: Unit,
    description: &'static str,
    create: fn(&WorkloadSettings, usize) -> Box<dyn Workload>,
) -> Facts {
    Facts {
        kind,
        name,
        unit,
        per_iteration: PerIteration::One,
        exact: Exactness::Inexact,
        tmpdir: None,
        description,
        thread_mode_problem: None,
        check_dir: None,
        create,
    }
}

/// The workloads, in `WorkloadKind`'s order (checked when compiling).
const ROWS: [Facts; 13] = [
    Facts {
        per_iteration: PerIteration::ChunkPages,
        // With THP allowed a chunk may fault in huge pages: fewer faults than pages.
        exact: Exactness::WithoutThp,
        ..row(
            WorkloadKind::Anon,
            "anon",
            Unit::Faults,
            "mmap a private anonymous --chunk, write one byte per page, munmap (the 2009 memcg loop)",
            |s, _| Box::new(anon::Anon::new(s, s.chunk_bytes)),
        )
    },
    Facts {
        per_iteration: PerIteration::ChunkPages,
        exact: Exactness::Exact,
        tmpdir: Some("/tmp"),
        ..row(
            WorkloadKind::FilePrivate,
            "file-private",
            Unit::Faults,
            "mmap a per-worker file privately, write one byte per page (COW faults), munmap",
            |s, i| Box::new(file_chunk::FileChunk::private(s, i)),
        )
    },
    Facts {
        // Counted per page: on a disk filesystem one fault maps several pages (fault-around,
        // large page-cache folios), where tmpfs takes one a page; the kernel's count says how
        // many (a warning gives pages per fault).
        per_iteration: PerIteration::ChunkPages,
        exact: Exactness::Exact,
        tmpdir: Some("/tmp"),
        ..row(
            WorkloadKind::FileShared,
            "file-shared",
            Unit::Pages,
            "mmap a per-worker file shared, write one byte per page (page cache faults, dirtying), munmap",
            |s, i| Box::new(file_chunk::FileChunk::shared(s, i)),
        )
    },
    Facts {
        // No faults: it counts loops.
        tmpdir: Some("/tmp"),
        ..row(
            WorkloadKind::MmapFile,
            "mmap-file",
            Unit::Loops,
            "every worker maps and unmaps one page of ONE shared file, untouched (i_mmap lock); counts loops",
            |s, _| Box::new(mmap_file::MmapFile::new(s)),
        )
    },
    Facts {
        per_iteration: PerIteration::SizePages,
        exact: Exactness::WithoutThp,
        ..row(
            WorkloadKind::Usemem,
            "usemem",
            Unit::Faults,
            "allocate and touch --size bytes per iteration, like usemem -m; drives reclaim under a limit",
            |s, _| Box::new(usemem::Usemem::new(s)),
        )
    },
    Facts {
        // Fault-around may map several counted pages in one fault.
        tmpdir: Some("/tmp"),
        ..row(
            WorkloadKind::UsememFile,
            "usemem-file",
            Unit::Pages,
            "usemem -f: map a sparse per-worker file of --size shared, read a word per page; counted per page. Above a limit the clean page cache is reclaimed through rmap, no swap needed",
            |s, i| Box::new(usemem_file::UsememFile::new(s, i)),
        )
    },
    Facts {
        // The kernel's count includes the worker's own COW faults after each fork.
        per_iteration: PerIteration::SizePages,
        // fork() from a multi-threaded process copies only the calling thread; each fork
        // would also stop every thread of the mm for the copy, so the threads would measure
        // each other's forks, not their own.
        thread_mode_problem: Some("forking from threads of one process measures the other threads' forks"),
        ..row(
            WorkloadKind::Fork,
            "fork",
            Unit::Faults,
            "fork a child that writes every page of --size inherited memory and exits (anon_vma, COW)",
            |s, _| Box::new(fork::Fork::new(s)),
        )
    },
    Facts {
        // One count per page; with THP allowed a page may come in a huge fault.
        exact: Exactness::WithoutThp,
        ..row(
            WorkloadKind::PageFault1,
            "page_fault1",
            Unit::Faults,
            "will-it-scale page_fault1: 128 MiB private anonymous per iteration, counted per page",
            |s, i| Box::new(page_fault::PageFault::new(s, i, page_fault::Variant::Anonymous)),
        )
    },
    Facts {
        exact: Exactness::Exact,
        tmpdir: Some("/dev/shm"),
        ..row(
            WorkloadKind::PageFault2,
            "page_fault2",
            Unit::Faults,
            "will-it-scale page_fault2: 128 MiB private file mapping (COW), counted per page",
            |s, i| Box::new(page_fault::PageFault::new(s, i, page_fault::Variant::FilePrivate)),
        )
    },
    Facts {
        exact: Exactness::Exact,
        tmpdir: Some("/dev/shm"),
        // Pages, as will-it-scale counts them: off tmpfs a fault maps several (file-shared's).
        ..row(
            WorkloadKind::PageFault3,
            "page_fault3",
            Unit::Pages,
            "will-it-scale page_fault3: 128 MiB shared file mapping, counted per page",
            |s, i| Box::new(page_fault::PageFault::new(s, i, page_fault::Variant::FileShared)),
        )
    },
    Facts {
        // No faults: the kernel's fault count has nothing to agree with.
        tmpdir: Some("/dev/shm"),
        check_dir: Some(fallocate::check_dir),
        ..row(
            WorkloadKind::Fallocate1,
            "fallocate1",
            Unit::Operations,
            "will-it-scale fallocate1: fallocate 8 KiB steps of a 1 MiB tmpfs file, truncate, repeat; counted per call",
            |s, i| Box::new(fallocate::Fallocate::new(s, i)),
        )
    },
    Facts {
        tmpdir: Some("/tmp"),
        check_dir: Some(fallocate::check_dir),
        ..row(
            WorkloadKind::Fallocate2,
            "fallocate2",
            Unit::Operations,
            "will-it-scale fallocate2: the same with the file in /tmp",
            |s, i| Box::new(fallocate::Fallocate::new(s, i)),
        )
    },
    // Two faults per page (the write, then the read of the zapped page): counted as one
    // operation each, as will-it-scale counts.
    row(
        WorkloadKind::TlbFlush2,
        "tlb_flush2",
        Unit::Operations,
        "will-it-scale tlb_flush2: write a page, MADV_DONTNEED it, read it back, per page of 1 MiB; counted per page",
        |s, _| Box::new(tlb_flush::TlbFlush::new(s)),
    ),
];

// Row i is WorkloadKind's variant i, so `facts` indexes instead of searching; the last
// variant has the last row.
const _: () = {
    let mut i = 0;
    while i < ROWS.len() {
        assert!(ROWS[i].kind as usize == i, "WORKLOADS is not in WorkloadKind's order");
        i += 1;
    }
    assert!(WorkloadKind::TlbFlush2 as usize == ROWS.len() - 1, "a WorkloadKind has no row in WORKLOADS");
};

/// One row per workload, in `WorkloadKind`'s order.
pub static WORKLOADS: [Facts; 13] = ROWS;

/// How THP may back the workload's anonymous memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ThpMode {
    /// Leave the system setting alone
    Keep,
    /// Disable THP for the worker (PR_SET_THP_DISABLE, once): every fault is a base-page fault
    Never,
    /// madvise(MADV_HUGEPAGE) each anonymous mapping
    Always,
}

impl ThpMode {
    pub fn name(self) -> &'static str {
        match self {
            ThpMode::Keep => "keep",
            ThpMode::Never => "never",
            ThpMode::Always => "always",
        }
    }
}

/// What a workload may be configured with.
#[derive(Debug, Clone)]
pub struct WorkloadSettings {
    pub kind: WorkloadKind,
    pub chunk_bytes: u64,
    /// --size: usemem's allocation and fork's inherited memory.
    pub size_bytes: u64,
    pub page_size: u64,
    pub thp: ThpMode,
    /// The run's temporary directory, for workloads that need files.
    pub files_dir: Option<PathBuf>,
    /// --iterations: each worker stops after this many counted iterations (fixed work).
    pub fixed_iterations: Option<u64>,
}

/// The shared file every mmap-file worker maps, created by the harness.
pub const SHARED_FILE: &str = "shared";

/// What one iteration counts as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Faults,
    Loops,
    /// Pages touched, where one fault may map several (fault-around).
    Pages,
    /// One system call or page operation that is not a fault (fallocate, tlb_flush2's pages).
    #[serde(rename = "ops")]
    Operations,
}

impl Unit {
    /// One of them: `fault`, `loop`.
    pub fn singular(self) -> &'static str {
        match self {
            Unit::Faults => "fault",
            Unit::Loops => "loop",
            Unit::Pages => "page",
            Unit::Operations => "op",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Unit::Faults => "faults",
            Unit::Loops => "loops",
            Unit::Pages => "pages",
            Unit::Operations => "ops",
        }
    }
}

/// The workload's counting, as the harness needs it.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub unit: Unit,
    /// Units one iteration counts.
    pub per_iteration: u64,
    /// Whether loop-derived faults should equal the kernel's count (minus an in-flight
    /// iteration); false where the kernel's count includes faults the loop cannot see.
    pub exact: bool,
}

pub trait Workload {
    /// Per-worker setup in the worker, before it reports ready. System calls are fine here;
    /// none belong in `run` beyond the workload's own.
    fn prepare(&mut self) -> Result<(), String>;

    /// The measured loop. Records the number of completed iterations in `counter` after each
    /// one and returns Ok when the counter says the fixed work (--iterations) is done, or Err
    /// with the reason an iteration failed.
    fn run(&mut self, counter: &Counter) -> Result<(), String>;
}

/// A worker's iteration counter, which the harness samples, and its fixed-work limit.
pub struct Counter<'a> {
    completed: &'a AtomicU64,
    /// u64::MAX for a timed run: never reached.
    limit: u64,
    /// The crew's command word: odd while the harness asks its workers to park.
    command: &'a AtomicU32,
    /// Parks the worker: reads its counters, waits until the harness lets it go on.
    park: &'a dyn Fn(),
}

impl<'a> Counter<'a> {
    pub fn new(completed: &'a AtomicU64, limit: Option<u64>, command: &'a AtomicU32, park: &'a dyn Fn()) -> Self {
        Counter { completed, limit: limit.unwrap_or(u64::MAX), command, park }
    }

    /// Publishes `completed` iterations; false once the fixed work is done. One writer per
    /// counter: a plain store (as will-it-scale's `(*iterations)++`), no locked instruction,
    /// and one compare the branch predictor always gets right.
    #[inline(always)]
    pub fn record(&self, completed: u64) -> bool {
        self.completed.store(completed, std::sync::atomic::Ordering::Relaxed);
        completed < self.limit
    }

    /// The loop is at an iteration boundary, holding none of the iteration's memory (after its
    /// munmap): where the worker parks when the harness asks, so a window holds whole
    /// iterations and a parked crew holds no workload memory. One load of a read-shared word.
    #[inline(always)]
    pub fn boundary(&self) {
        if self.command.load(std::sync::atomic::Ordering::Relaxed) & 1 == 1 {
            (self.park)();
        }
    }

    /// `record` and `boundary` together, for a loop that counts whole iterations; false once
    /// the fixed work is done.
    #[inline(always)]
    pub fn end_iteration(&self, completed: u64) -> bool {
        let more = self.record(completed);
        self.boundary();
        more
    }
}

pub fn create(settings: &WorkloadSettings, worker_index: usize) -> Box<dyn Workload> {
    (settings.kind.facts().create)(settings, worker_index)
}

/// The workload's counting, from its row of `WORKLOADS` and the settings (nothing is built).
pub fn shape(settings: &WorkloadSettings) -> Shape {
    let facts = settings.kind.facts();
    Shape {
        unit: facts.unit,
        per_iteration: facts.per_iteration.count(settings),
        exact: facts.exact.holds(settings.thp),
    }
}

// ---- helpers the loops share ----

/// Applies the THP mode once per worker (process-wide for PR_SET_THP_DISABLE).
pub(crate) fn apply_thp(thp: ThpMode) -> Result<(), String> {
    if thp == ThpMode::Never {
        // SAFETY: plain prctl.
        if unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) } != 0 {
            return Err(format!("prctl(PR_SET_THP_DISABLE): {}", std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

/// mmap, or the reason it failed.
pub(crate) fn map(len: usize, prot: libc::c_int, flags: libc::c_int, fd: libc::c_int) -> Result<*mut u8, String> {
    // SAFETY: a fresh mapping chosen by the kernel.
    let address = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, fd, 0) };
    if address == libc::MAP_FAILED {
        return Err(format!("mmap of {len} bytes failed: {}", std::io::Error::last_os_error()));
    }
    Ok(address as *mut u8)
}

/// The one address a loop maps its chunk at, every iteration: at the start of a page-table
/// page's span (2 MiB with 4 KiB pages), with a guard mapping (PROT_NONE) below it and another
/// from the chunk's end on. Left to the kernel, where a chunk lands depends on the address
/// layout: a 1 MiB chunk straddles a 2 MiB boundary in one run and not in the next, and the
/// page-table page of a span it has to itself is freed at every munmap and allocated again
/// (and charged to the memcg) at the next fault, while the one of a span it shares with
/// another mapping stays; so one run's overhead differed from the next's by that alone (the
/// reason will-it-scale's LKP wrapper turns address randomization off). Here the span the
/// chunk ends in is shared with the guard: its page table stays for the worker's life, and
/// only spans the chunk covers whole (a --chunk of 2 MiB or more) are freed and made again,
/// the same ones every iteration, worker and run. On the development VM the three choices
/// (the kernel's, every span freed, the last kept) cost the same per fault within the
/// slices' noise (1,790-1,915 CPU ns, per-slice SD 4.9-6.7 points, two 5 s runs each).
pub(crate) struct FixedPlace {
    address: usize,
    len: usize,
}

impl FixedPlace {
    pub(crate) fn reserve(len: usize, page_size: usize) -> Result<Self, String> {
        // The span one page-table page maps: a page of 8-byte entries, each mapping a page.
        let span = page_size * (page_size / 8);
        let covered = len.div_ceil(span) * span;
        let probe_len = covered + 3 * span;
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE;
        let probe = map(probe_len, libc::PROT_NONE, flags, -1)? as usize;
        let address = probe.next_multiple_of(span) + span;
        // A guard below, from a span boundary, and one from the chunk's end to a span past the
        // last span it touches; the rest given back, the chunk's place included.
        let unmap = |start: usize, end: usize| {
            // SAFETY: parts of the probe mapping made above, nothing else.
            if end > start && unsafe { libc::munmap(start as *mut libc::c_void, end - start) } != 0 {
                return Err(format!("munmap: {}", std::io::Error::last_os_error()));
            }
            Ok(())
        };
        unmap(probe, address - span)?;
        unmap(address, address + len)?;
        unmap(address + covered + span, probe + probe_len)?;
        Ok(FixedPlace { address, len })
    }

    /// The chunk mapped at its place (MAP_FIXED_NOREPLACE: never over another mapping).
    pub(crate) fn map(&self, prot: libc::c_int, flags: libc::c_int, fd: libc::c_int) -> Result<*mut u8, String> {
        let wanted = self.address as *mut libc::c_void;
        // SAFETY: a fresh mapping at an address this worker keeps free for it.
        let address = unsafe { libc::mmap(wanted, self.len, prot, flags | libc::MAP_FIXED_NOREPLACE, fd, 0) };
        if address == libc::MAP_FAILED {
            return Err(format!(
                "mmap of {} bytes at {wanted:p} failed: {}",
                self.len,
                std::io::Error::last_os_error()
            ));
        }
        if address != wanted {
            // A kernel before 4.17 takes the flag for a hint.
            // SAFETY: the mapping just made, with its length.
            unsafe { libc::munmap(address, self.len) };
            return Err(format!("mmap of {} bytes landed at {address:p}, not at {wanted:p}", self.len));
        }
        Ok(address as *mut u8)
    }
}

/// Writes one byte in every page of [start, start + len): one write fault per page.
///
/// # Safety
/// The range must be mapped writable.
pub(crate) unsafe fn touch_pages(start: *mut u8, len: usize, page_size: usize) {
    let mut offset = 0;
    while offset < len {
        // SAFETY: in bounds per the caller.
        unsafe { std::ptr::write_volatile(start.add(offset), 0) };
        offset += page_size;
    }
}

/// Creates (afresh, so its page cache is charged to this worker's cgroup) a file of `len`
/// bytes and opens it read-write.
/// The file of `len` bytes at `path`, made where it is not there yet (a crew set up before
/// this one's worker on the same CPU slot made it; crews are set up one at a time).
pub(crate) fn shared_file(path: &std::path::Path, len: u64) -> Result<std::fs::File, String> {
    match std::fs::OpenOptions::new().read(true).write(true).open(path) {
        Ok(file) if file.metadata().is_ok_and(|m| m.len() == len) => Ok(file),
        _ => fresh_file(path, len),
    }
}

pub(crate) fn fresh_file(path: &std::path::Path, len: u64) -> Result<std::fs::File, String> {
    let _ = std::fs::remove_file(path);
    let file = std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(path).map_err(|e| {
        let dir = path.parent().unwrap_or(std::path::Path::new("/"));
        format!("creating {}: {}", path.display(), crate::measure::machine::creation_error(dir, &e))
    })?;
    file.set_len(len).map_err(|e| format!("sizing {}: {e}", path.display()))?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(kind: WorkloadKind, thp: ThpMode) -> WorkloadSettings {
        WorkloadSettings {
            kind,
            chunk_bytes: 1 << 20,
            size_bytes: 8 << 20,
            page_size: 4096,
            thp,
            files_dir: None,
            fixed_iterations: None,
        }
    }

    #[test]
    fn a_fixed_place_is_span_aligned_guarded_and_the_same_every_iteration() {
        let span = 2 << 20;
        for len in [4096, 1 << 20, span, span + 4096] {
            let place = FixedPlace::reserve(len, 4096).unwrap();
            assert_eq!(place.address % span, 0, "{len}");
            let first = place.map(libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1);
            let first = first.unwrap();
            // SAFETY: the mapping just made, with its length.
            unsafe { libc::munmap(first as *mut libc::c_void, len) };
            let again = place.map(libc::PROT_READ, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1).unwrap();
            assert_eq!(first, again, "{len}");
            // A guard ends where the chunk starts, at a span boundary; another starts where it
            // ends and reaches a span past the last span it touches.
            let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
            let covered = len.div_ceil(span) * span;
            let guard = |start: usize, end: usize| {
                maps.lines().any(|line| line.starts_with(&format!("{start:x}-{end:x} ---p")))
            };
            assert!(guard(place.address - span, place.address), "{len}: no guard below\n{maps}");
            assert!(guard(place.address + len, place.address + covered + span), "{len}: no guard above\n{maps}");
            // Nothing may be mapped over it.
            assert!(place.map(libc::PROT_READ, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1).is_err());
            // SAFETY: the mapping made above.
            unsafe { libc::munmap(again as *mut libc::c_void, len) };
        }
    }

    #[test]
    fn the_shape_from_the_table_is_the_built_workloads_count() {
        let shape = |kind, thp| {
            let s = shape(&settings(kind, thp));
            (s.unit, s.per_iteration, s.exact)
        };
        assert_eq!(shape(WorkloadKind::Anon, ThpMode::Never), (Unit::Faults, 256, true));
        assert_eq!(shape(WorkloadKind::Anon, ThpMode::Keep), (Unit::Faults, 256, false));
        assert_eq!(shape(WorkloadKind::Usemem, ThpMode::Never), (Unit::Faults, 2048, true));
        assert_eq!(shape(WorkloadKind::Fork, ThpMode::Never), (Unit::Faults, 2048, false));
        assert_eq!(shape(WorkloadKind::FileShared, ThpMode::Keep), (Unit::Pages, 256, true));
        assert_eq!(shape(WorkloadKind::PageFault3, ThpMode::Keep), (Unit::Pages, 1, true));
        assert_eq!(shape(WorkloadKind::MmapFile, ThpMode::Never), (Unit::Loops, 1, false));
        assert_eq!(shape(WorkloadKind::UsememFile, ThpMode::Never), (Unit::Pages, 1, false));
        assert_eq!(shape(WorkloadKind::PageFault1, ThpMode::Always), (Unit::Faults, 1, false));
        assert_eq!(shape(WorkloadKind::PageFault2, ThpMode::Always), (Unit::Faults, 1, true));
        assert_eq!(shape(WorkloadKind::Fallocate2, ThpMode::Never), (Unit::Operations, 1, false));
        assert_eq!(shape(WorkloadKind::TlbFlush2, ThpMode::Never), (Unit::Operations, 1, false));
    }

    #[test]
    fn cleanup_searches_every_default_directory() {
        let dirs = default_tmpdirs();
        assert!(dirs.contains(&"/tmp"));
        // Page_fault2/3 and fallocate1 put their files in /dev/shm where it exists.
        assert_eq!(dirs.contains(&"/dev/shm"), std::path::Path::new("/dev/shm").is_dir(), "{dirs:?}");
        assert!(WORKLOADS.iter().all(|f| dirs.contains(&f.kind.default_tmpdir())));
    }

    #[test]
    fn every_row_names_its_kind() {
        for (i, facts) in WORKLOADS.iter().enumerate() {
            assert_eq!(facts.kind as usize, i);
            assert_eq!(facts.kind.name(), facts.name);
            let json = serde_json::to_string(&facts.kind).unwrap();
            assert_eq!(json, format!("\"{}\"", facts.name), "the serialized name");
        }
        assert!(!WorkloadKind::Anon.needs_files() && WorkloadKind::MmapFile.needs_files());
        assert_eq!(WorkloadKind::Fallocate2.default_tmpdir(), "/tmp");
        assert!(
            WorkloadKind::Fork.thread_mode_problem().is_some() && WorkloadKind::Anon.thread_mode_problem().is_none()
        );
    }
}
