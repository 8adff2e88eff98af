//! Workloads: each is one small loop that publishes its own counter once per iteration (per page
//! or per operation where an iteration is large) through `Counter::record`, which also ends
//! fixed work (--iterations).
//!
//! The harness (src/run/) owns spawning, pinning, start, sampling and stop; a workload only
//! prepares itself and loops. Adding a workload is one file here, which states everything about
//! it in a `Descriptor` (name, help line, unit, count per iteration, exactness, the memory a
//! running and a parked worker hold, its file space, pages per iteration, whether its crews
//! share a file, whether it runs as threads, its tmpdir, its loop), plus one line in the
//! `workloads!` list below; the command line, the checks and the outputs read the descriptor.
//! A file holds a loop and its variants (file-private and file-shared differ only in a mapping
//! flag). The shape comes from the descriptor, without building a workload; construction has
//! no side effects, and `prepare` runs in the worker, in its cgroup, on its CPU.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64};

/// The list of workload files and the descriptors each holds, in `--help`'s order: a module
/// line per file, `file: [DESCRIPTOR, ...]`. The first is the default.
macro_rules! workloads {
    ($($file:ident: [$($descriptor:ident),+ $(,)?]),+ $(,)?) => {
        $(mod $file;)+

        /// Every workload, in `--help`'s order; the first is `--workload`'s default.
        pub static WORKLOADS: &[&Descriptor] = &[$($(&$file::$descriptor),+),+];
    };
}

workloads! {
    anon: [ANON],
    file_chunk: [FILE_PRIVATE, FILE_SHARED],
    mmap_file: [MMAP_FILE],
    usemem: [USEMEM],
    usemem_file: [USEMEM_FILE],
    fork: [FORK],
    page_fault: [PAGE_FAULT1, PAGE_FAULT2, PAGE_FAULT3],
    fallocate: [FALLOCATE1, FALLOCATE2],
    tlb_flush: [TLB_FLUSH2],
}

/// One workload: its descriptor, as `--workload` names it and the run carries it. Equal when
/// they are the same descriptor.
#[derive(Clone, Copy)]
pub struct WorkloadKind(&'static Descriptor);

impl PartialEq for WorkloadKind {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for WorkloadKind {}

impl std::fmt::Debug for WorkloadKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.name)
    }
}

impl serde::Serialize for WorkloadKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0.name)
    }
}

impl std::ops::Deref for WorkloadKind {
    type Target = Descriptor;

    fn deref(&self) -> &Descriptor {
        self.0
    }
}

impl Default for WorkloadKind {
    /// The first of `WORKLOADS`: anon, the 2009 memcg loop.
    fn default() -> Self {
        WorkloadKind(WORKLOADS[0])
    }
}

impl WorkloadKind {
    /// Every workload, in `WORKLOADS`' order.
    pub fn all() -> impl Iterator<Item = WorkloadKind> {
        WORKLOADS.iter().map(|descriptor| WorkloadKind(descriptor))
    }

    /// The workload `--workload` calls `name`, if there is one (the tests name theirs).
    #[cfg(test)]
    pub fn named(name: &str) -> Option<WorkloadKind> {
        Self::all().find(|kind| kind.name == name)
    }

    /// Whether the workload needs the run's temporary directory.
    pub fn needs_files(self) -> bool {
        self.tmpdir.is_some()
    }

    /// Where its files go unless --tmpdir says otherwise: tmpfs for will-it-scale's, as the
    /// LKP reports ran them.
    pub fn default_tmpdir(self) -> &'static str {
        match self.tmpdir {
            Some(dir) if std::path::Path::new(dir).is_dir() => dir,
            _ => "/tmp",
        }
    }

    /// Why it cannot use `dir` for its files, if it cannot (checked before anything is made).
    pub fn files_dir_problem(self, dir: &std::path::Path) -> Option<String> {
        self.check_dir.and_then(|check| check(dir).err())
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

/// A size the settings decide, in bytes: of one worker's memory, file or iteration.
pub type Bytes = fn(&WorkloadSettings) -> u64;

/// Everything the harness, the checks and the front end know of a workload: each workload's
/// file holds its own, and `WORKLOADS` lists them.
pub struct Descriptor {
    /// The name `--workload` takes and the outputs print.
    pub name: &'static str,
    /// Its one line in `--help`.
    pub description: &'static str,
    pub unit: Unit,
    pub per_iteration: PerIteration,
    pub exact: Exactness,
    /// The most memory one running worker holds at once, charged to its memcg or kept by its
    /// file: what it has touched of its mapping before its iteration's munmap, plus its file's
    /// pages (shmem on tmpfs, swap-backed; page cache elsewhere, charged until reclaimed).
    pub resident_bytes: Bytes,
    /// What one parked worker holds: it parks at an iteration boundary, after its munmap, so
    /// only what outlives an iteration: its file's pages, a forking worker's own memory.
    pub parked_bytes: Bytes,
    /// The most bytes one worker's file takes from its filesystem, given whether that is tmpfs:
    /// on tmpfs every page it touches (the page cache is the file's space there), elsewhere
    /// only the pages it writes through a shared mapping or allocates (reading a sparse file's
    /// hole, or a private mapping's copy of it, takes no block). 0 where a worker has no file
    /// of its own.
    pub file_bytes: fn(&WorkloadSettings, bool) -> u64,
    /// The pages the loop touches from one iteration boundary (`Counter::boundary`, where a
    /// worker parks) to the next: a slice must span many such iterations, since the crew's
    /// park waits for its slowest worker to finish the one it is in.
    pub pages_per_iteration: Bytes,
    /// Whether the workers on one CPU slot share one file across the crews (placements), as
    /// will-it-scale's one task has one; else each crew's worker has its own.
    pub shares_file_across_crews: bool,
    /// Where its files go without --tmpdir (`/dev/shm` falls back to `/tmp` where absent);
    /// None for a workload without files.
    pub tmpdir: Option<&'static str>,
    /// Whether its files must be reclaimable without swap, which tmpfs's are not: a run with
    /// them on tmpfs is warned.
    pub wants_reclaimable_files: bool,
    /// The file the harness makes in the run's directory for every worker to share, and its
    /// size in pages (mmap-file's one page), if it has one.
    pub harness_file: Option<(&'static str, u64)>,
    /// Why it cannot run with `--mode thread`, if it cannot.
    pub thread_mode_problem: Option<&'static str>,
    /// What `--locks` cannot count of its contentions, if anything: said in the run's warnings.
    pub locks_problem: Option<&'static str>,
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
    let mut dirs: Vec<&'static str> = WorkloadKind::all().map(WorkloadKind::default_tmpdir).collect();
    dirs.sort_unstable();
    dirs.dedup();
    dirs
}

/// The pages of `bytes`, rounded up.
pub(crate) fn pages(bytes: u64, settings: &WorkloadSettings) -> u64 {
    bytes.div_ceil(settings.page_size.max(1))
}

/// A descriptor with the defaults most workloads share: counted per iteration, not exact, no
/// files, nothing held while parked, one page per iteration; the memory a running worker
/// holds is always its own.
pub(crate) const fn descriptor(
    name: &'static str,
    unit: Unit,
    description: &'static str,
    resident_bytes: Bytes,
    create: fn(&WorkloadSettings, usize) -> Box<dyn Workload>,
) -> Descriptor {
    Descriptor {
        name,
        description,
        unit,
        per_iteration: PerIteration::One,
        exact: Exactness::Inexact,
        resident_bytes,
        parked_bytes: |_| 0,
        file_bytes: |_, _| 0,
        pages_per_iteration: |_| 1,
        shares_file_across_crews: false,
        tmpdir: None,
        wants_reclaimable_files: false,
        harness_file: None,
        thread_mode_problem: None,
        locks_problem: None,
        check_dir: None,
        create,
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

#[cfg(test)]
impl WorkloadSettings {
    /// The named workload at the defaults (--chunk 1M, --size 64M, --thp never), 4 KiB pages.
    pub fn example(name: &str) -> WorkloadSettings {
        WorkloadSettings {
            kind: WorkloadKind::named(name).unwrap(),
            chunk_bytes: 1 << 20,
            size_bytes: 64 << 20,
            page_size: 4096,
            thp: ThpMode::Never,
            files_dir: None,
            fixed_iterations: None,
        }
    }
}

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
    (settings.kind.create)(settings, worker_index)
}

/// How far the loop counter moves from one iteration boundary (where a worker parks) to the
/// next: 1 where it counts whole iterations, the iteration's pages where it counts each page
/// (page_fault1's 32,768).
pub fn counts_per_boundary(settings: &WorkloadSettings) -> u64 {
    match settings.kind.per_iteration {
        PerIteration::One => (settings.kind.pages_per_iteration)(settings).max(1),
        PerIteration::ChunkPages | PerIteration::SizePages => 1,
    }
}

/// The workload's counting, from its descriptor and the settings (nothing is built).
pub fn shape(settings: &WorkloadSettings) -> Shape {
    let kind = settings.kind;
    Shape { unit: kind.unit, per_iteration: kind.per_iteration.count(settings), exact: kind.exact.holds(settings.thp) }
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
    /// The place itself is still held by the reservation's PROT_NONE mapping, given back at
    /// the first `map`: with `--mode thread` the threads spawned after this one map their
    /// stacks and signal stacks into the process's free gaps, and at 64 threads one landed in
    /// an earlier thread's place (its first mmap failed: File exists). Every thread is spawned
    /// before any loop starts, so once the loops run no other mapping is made.
    reserved: std::cell::Cell<bool>,
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
        unmap(address + covered + span, probe + probe_len)?;
        Ok(FixedPlace { address, len, reserved: std::cell::Cell::new(true) })
    }

    /// The chunk mapped at its place (MAP_FIXED_NOREPLACE: never over another mapping).
    pub(crate) fn map(&self, prot: libc::c_int, flags: libc::c_int, fd: libc::c_int) -> Result<*mut u8, String> {
        let wanted = self.address as *mut libc::c_void;
        // SAFETY: the reservation's own part at the place, made by `reserve`.
        if self.reserved.replace(false) && unsafe { libc::munmap(wanted, self.len) } != 0 {
            return Err(format!("munmap of the place at {wanted:p}: {}", std::io::Error::last_os_error()));
        }
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

    /// The workload with an 8 MiB --size.
    fn settings(kind: WorkloadKind, thp: ThpMode) -> WorkloadSettings {
        WorkloadSettings { size_bytes: 8 << 20, thp, ..WorkloadSettings::example(kind.name) }
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
    fn a_fixed_place_is_held_until_its_first_map() {
        let len = 1 << 20;
        let place = FixedPlace::reserve(len, 4096).unwrap();
        // A thread spawned after the reservation (its stack, its signal stack) cannot map there.
        let wanted = place.address as *mut libc::c_void;
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE;
        // SAFETY: a mapping the kernel refuses where the place is held; unmapped below if not.
        let stranger = unsafe { libc::mmap(wanted, 4096, libc::PROT_READ, flags, -1, 0) };
        if stranger != libc::MAP_FAILED {
            // SAFETY: the mapping just made.
            unsafe { libc::munmap(stranger, 4096) };
        }
        assert_eq!(stranger, libc::MAP_FAILED, "the place was free before the loop's first map");
        let chunk = place.map(libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1).unwrap();
        assert_eq!(chunk as usize, place.address);
        // SAFETY: the mapping made above.
        unsafe { libc::munmap(chunk as *mut libc::c_void, len) };
    }

    #[test]
    fn the_shape_from_the_descriptor_is_the_built_workloads_count() {
        let shape = |kind, thp| {
            let s = shape(&settings(kind, thp));
            (s.unit, s.per_iteration, s.exact)
        };
        assert_eq!(shape(WorkloadKind::named("anon").unwrap(), ThpMode::Never), (Unit::Faults, 256, true));
        assert_eq!(shape(WorkloadKind::named("anon").unwrap(), ThpMode::Keep), (Unit::Faults, 256, false));
        assert_eq!(shape(WorkloadKind::named("usemem").unwrap(), ThpMode::Never), (Unit::Faults, 2048, true));
        assert_eq!(shape(WorkloadKind::named("fork").unwrap(), ThpMode::Never), (Unit::Faults, 2048, false));
        assert_eq!(shape(WorkloadKind::named("file-shared").unwrap(), ThpMode::Keep), (Unit::Pages, 256, true));
        assert_eq!(shape(WorkloadKind::named("page_fault3").unwrap(), ThpMode::Keep), (Unit::Pages, 1, true));
        assert_eq!(shape(WorkloadKind::named("mmap-file").unwrap(), ThpMode::Never), (Unit::Loops, 1, false));
        assert_eq!(shape(WorkloadKind::named("usemem-file").unwrap(), ThpMode::Never), (Unit::Pages, 1, false));
        assert_eq!(shape(WorkloadKind::named("page_fault1").unwrap(), ThpMode::Always), (Unit::Faults, 1, false));
        assert_eq!(shape(WorkloadKind::named("page_fault2").unwrap(), ThpMode::Always), (Unit::Faults, 1, true));
        assert_eq!(shape(WorkloadKind::named("fallocate2").unwrap(), ThpMode::Never), (Unit::Operations, 1, false));
        assert_eq!(shape(WorkloadKind::named("tlb_flush2").unwrap(), ThpMode::Never), (Unit::Operations, 1, false));
    }

    #[test]
    fn cleanup_searches_every_default_directory() {
        let dirs = default_tmpdirs();
        assert!(dirs.contains(&"/tmp"));
        // Page_fault2/3 and fallocate1 put their files in /dev/shm where it exists.
        assert_eq!(dirs.contains(&"/dev/shm"), std::path::Path::new("/dev/shm").is_dir(), "{dirs:?}");
        assert!(WorkloadKind::all().all(|kind| dirs.contains(&kind.default_tmpdir())));
    }

    #[test]
    fn every_descriptor_is_listed_once_by_its_own_name() {
        let names: Vec<&str> = WorkloadKind::all().map(|kind| kind.name).collect();
        assert_eq!(names[0], "anon", "the default");
        for kind in WorkloadKind::all() {
            assert_eq!(names.iter().filter(|&&name| name == kind.name).count(), 1, "{}", kind.name);
            assert_eq!(WorkloadKind::named(kind.name), Some(kind));
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.name), "the serialized name");
        }
        let kind = |name| WorkloadKind::named(name).unwrap();
        assert!(!kind("anon").needs_files() && kind("mmap-file").needs_files());
        assert_eq!(kind("fallocate2").default_tmpdir(), "/tmp");
        assert!(kind("fork").thread_mode_problem.is_some() && kind("anon").thread_mode_problem.is_none());
        assert!(kind("page_fault2").shares_file_across_crews && !kind("page_fault3").shares_file_across_crews);
        assert_eq!(kind("mmap-file").harness_file, Some(("shared", 1)));
        assert!(kind("usemem-file").wants_reclaimable_files && !kind("file-shared").wants_reclaimable_files);
    }

    /// What each descriptor says a worker holds, its file takes and an iteration touches, at a
    /// 1 MiB --chunk and an 8 MiB --size: the figures of the table the descriptors replaced.
    #[test]
    fn each_workloads_memory_file_space_and_pages_per_iteration() {
        const M: u64 = 1 << 20;
        // name, running, parked, file on tmpfs, file on disk, pages per iteration
        let expected: [(&str, u64, u64, u64, u64, u64); 13] = [
            ("anon", M, 0, 0, 0, 256),
            ("file-private", 2 * M, M, M, 0, 256),
            ("file-shared", M, M, M, M, 256),
            ("mmap-file", 4096, 0, 0, 0, 1),
            ("usemem", 8 * M, 0, 0, 0, 2048),
            ("usemem-file", 8 * M, 8 * M, 8 * M, 0, 2048),
            ("fork", 16 * M, 8 * M, 0, 0, 2048),
            ("page_fault1", 128 * M, 0, 0, 0, 32_768),
            ("page_fault2", 256 * M, 0, 128 * M, 0, 32_768),
            ("page_fault3", 128 * M, 128 * M, 128 * M, 128 * M, 32_768),
            ("fallocate1", M, M, M, M, 1),
            ("fallocate2", M, M, M, M, 1),
            ("tlb_flush2", M, 0, 0, 0, 256),
        ];
        for (name, running, parked, on_tmpfs, on_disk, pages) in expected {
            let s = settings(WorkloadKind::named(name).unwrap(), ThpMode::Never);
            let kind = s.kind;
            let figures = (
                (kind.resident_bytes)(&s),
                (kind.parked_bytes)(&s),
                (kind.file_bytes)(&s, true),
                (kind.file_bytes)(&s, false),
                (kind.pages_per_iteration)(&s),
            );
            assert_eq!(figures, (running, parked, on_tmpfs, on_disk, pages), "{name}");
        }
    }
}
