//! Workloads: each is one small loop that publishes its own counter once per iteration (per page
//! or per operation where an iteration is large) through `Counter::record`, which also ends
//! fixed work (--iterations).
//!
//! The harness (src/run/) owns spawning, pinning, start, sampling and stop; a workload only
//! prepares itself and loops. Adding a workload is one file here plus one line in `create`
//! (file-private and file-shared share one, as they differ only in a mapping flag).
//! Construction has no side effects (the harness builds one to ask its shape); `prepare` runs
//! in the worker, in its cgroup, on its CPU.

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
use std::sync::atomic::AtomicU64;

/// Names users pass to `--workload`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    /// mmap a private anonymous --chunk, write one byte per page, munmap (the 2009 memcg loop)
    Anon,
    /// mmap a per-worker file privately, write one byte per page (COW faults), munmap
    FilePrivate,
    /// mmap a per-worker file shared, write one byte per page (page cache faults, dirtying), munmap
    FileShared,
    /// every worker maps and unmaps one page of ONE shared file, untouched (i_mmap lock); counts loops
    MmapFile,
    /// allocate and touch --size bytes per iteration, like usemem -m; drives reclaim under a limit
    Usemem,
    /// usemem -f: map a sparse per-worker file of --size shared, read a word per page; counted per page. Above a limit the clean page cache is reclaimed through rmap, no swap needed
    UsememFile,
    /// fork a child that writes every page of --size inherited memory and exits (anon_vma, COW)
    Fork,
    /// will-it-scale page_fault1: 128 MiB private anonymous per iteration, counted per page
    #[serde(rename = "page_fault1")]
    PageFault1,
    /// will-it-scale page_fault2: 128 MiB private file mapping (COW), counted per page
    #[serde(rename = "page_fault2")]
    PageFault2,
    /// will-it-scale page_fault3: 128 MiB shared file mapping, counted per page
    #[serde(rename = "page_fault3")]
    PageFault3,
    /// will-it-scale fallocate1: fallocate 8 KiB steps of a 1 MiB tmpfs file, truncate, repeat; counted per call
    #[serde(rename = "fallocate1")]
    Fallocate1,
    /// will-it-scale fallocate2: the same with the file in /tmp
    #[serde(rename = "fallocate2")]
    Fallocate2,
    /// will-it-scale tlb_flush2: write a page, MADV_DONTNEED it, read it back, per page of 1 MiB; counted per page
    #[serde(rename = "tlb_flush2")]
    TlbFlush2,
}

impl WorkloadKind {
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Anon => "anon",
            WorkloadKind::FilePrivate => "file-private",
            WorkloadKind::FileShared => "file-shared",
            WorkloadKind::MmapFile => "mmap-file",
            WorkloadKind::Usemem => "usemem",
            WorkloadKind::UsememFile => "usemem-file",
            WorkloadKind::Fork => "fork",
            WorkloadKind::PageFault1 => "page_fault1",
            WorkloadKind::PageFault2 => "page_fault2",
            WorkloadKind::PageFault3 => "page_fault3",
            WorkloadKind::Fallocate1 => "fallocate1",
            WorkloadKind::Fallocate2 => "fallocate2",
            WorkloadKind::TlbFlush2 => "tlb_flush2",
        }
    }

    /// Whether the workload needs the run's temporary directory.
    pub fn needs_files(self) -> bool {
        matches!(
            self,
            WorkloadKind::FilePrivate
                | WorkloadKind::FileShared
                | WorkloadKind::MmapFile
                | WorkloadKind::UsememFile
                | WorkloadKind::PageFault2
                | WorkloadKind::PageFault3
                | WorkloadKind::Fallocate1
                | WorkloadKind::Fallocate2
        )
    }

    /// Where its files go unless --tmpdir says otherwise: tmpfs for will-it-scale's, as the
    /// LKP reports ran them.
    pub fn default_tmpdir(self) -> &'static str {
        match self {
            WorkloadKind::PageFault2 | WorkloadKind::PageFault3 | WorkloadKind::Fallocate1
                if std::path::Path::new("/dev/shm").is_dir() =>
            {
                "/dev/shm"
            }
            _ => "/tmp",
        }
    }

    /// Why it cannot use `dir` for its files, if it cannot (checked before anything is made).
    pub fn files_dir_problem(self, dir: &std::path::Path) -> Option<String> {
        match self {
            WorkloadKind::Fallocate1 | WorkloadKind::Fallocate2 => fallocate::check_dir(dir).err(),
            _ => None,
        }
    }

    /// Why it cannot run with `--mode thread`, if it cannot.
    pub fn thread_mode_problem(self) -> Option<&'static str> {
        match self {
            // fork() from a multi-threaded process copies only the calling thread; each fork
            // would also stop every thread of the mm for the copy, so the threads would measure
            // each other's forks, not their own.
            WorkloadKind::Fork => Some("forking from threads of one process measures the other threads' forks"),
            _ => None,
        }
    }
}

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
    fn shape(&self) -> Shape;

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
}

impl<'a> Counter<'a> {
    pub fn new(completed: &'a AtomicU64, limit: Option<u64>) -> Self {
        Counter { completed, limit: limit.unwrap_or(u64::MAX) }
    }

    /// Publishes `completed` iterations; false once the fixed work is done. One writer per
    /// counter: a plain store (as will-it-scale's `(*iterations)++`), no locked instruction,
    /// and one compare the branch predictor always gets right.
    #[inline(always)]
    pub fn record(&self, completed: u64) -> bool {
        self.completed.store(completed, std::sync::atomic::Ordering::Relaxed);
        completed < self.limit
    }
}

pub fn create(settings: &WorkloadSettings, worker_index: usize) -> Box<dyn Workload> {
    match settings.kind {
        WorkloadKind::Anon => Box::new(anon::Anon::new(settings, settings.chunk_bytes)),
        WorkloadKind::FilePrivate => Box::new(file_chunk::FileChunk::private(settings, worker_index)),
        WorkloadKind::FileShared => Box::new(file_chunk::FileChunk::shared(settings, worker_index)),
        WorkloadKind::MmapFile => Box::new(mmap_file::MmapFile::new(settings)),
        WorkloadKind::Usemem => Box::new(usemem::Usemem::new(settings)),
        WorkloadKind::UsememFile => Box::new(usemem_file::UsememFile::new(settings, worker_index)),
        WorkloadKind::Fork => Box::new(fork::Fork::new(settings)),
        WorkloadKind::PageFault1 => {
            Box::new(page_fault::PageFault::new(settings, worker_index, page_fault::Variant::Anonymous))
        }
        WorkloadKind::PageFault2 => {
            Box::new(page_fault::PageFault::new(settings, worker_index, page_fault::Variant::FilePrivate))
        }
        WorkloadKind::PageFault3 => {
            Box::new(page_fault::PageFault::new(settings, worker_index, page_fault::Variant::FileShared))
        }
        WorkloadKind::Fallocate1 | WorkloadKind::Fallocate2 => {
            Box::new(fallocate::Fallocate::new(settings, worker_index))
        }
        WorkloadKind::TlbFlush2 => Box::new(tlb_flush::TlbFlush::new(settings)),
    }
}

pub fn shape(settings: &WorkloadSettings) -> Shape {
    create(settings, 0).shape()
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
pub(crate) fn fresh_file(path: &std::path::Path, len: u64) -> Result<std::fs::File, String> {
    let _ = std::fs::remove_file(path);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| format!("creating {}: {e}", path.display()))?;
    file.set_len(len).map_err(|e| format!("sizing {}: {e}", path.display()))?;
    Ok(file)
}
