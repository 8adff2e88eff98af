//! --locks: every lock contention of a worker, from the kernel's `lock:contention_begin` and
//! `lock:contention_end` tracepoints (5.19 and later; they fire on the slow path only, so an
//! uncontended loop pays nothing), opened per worker thread with perf_event_open: the begin
//! with its raw data, time and kernel call chain, the end with its raw data and time, a ring
//! buffer each. A begin is paired with the next end of the same lock in the same task, as
//! `perf lock contention` pairs them: a mutex that spins and then sleeps begins twice before
//! its one end, and the first begin counts. Each contention gives its wait, its flags (which
//! kind of lock) and its caller, the first kernel frame of the begin's chain outside the
//! lock code (`is_lock_code`), named as --profile names kernel frames. A lock is named by its
//! caller, as perf lock names it: the tracepoints give an address, not a name.
//!
//! The tracepoints' ids and field offsets are read from tracefs (`events/lock/*/id` and
//! `format`), never assumed: /sys/kernel/tracing, /sys/kernel/debug/tracing, or, where
//! neither is mounted, a tracefs mounted for the reading on a private temporary directory and
//! unmounted at once (the machine's mounts are left as they were). `FAULTSCALE_TRACEFS` names
//! another directory to read instead (tests point it at one without the events).

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};

use perf_event::events::Tracepoint;
use perf_event::{Builder, Clock, SampleFlag, Sampler};

/// The contention_begin `flags` bits (include/trace/events/lock.h).
pub const LCB_F_SPIN: u32 = 1 << 0;
pub const LCB_F_READ: u32 = 1 << 1;
pub const LCB_F_WRITE: u32 = 1 << 2;
pub const LCB_F_RT: u32 = 1 << 3;
pub const LCB_F_PERCPU: u32 = 1 << 4;
pub const LCB_F_MUTEX: u32 = 1 << 5;

/// The ring buffer of each worker's begin event: drained every 100 ms of a slice (`slice::DRAIN_NS`). A
/// begin record with its chain (at most MAX_STACK frames) is under 200 bytes, so 1 MiB holds
/// over 5,000 contentions between two drains; what a full buffer drops is counted (`lost`).
const BEGIN_BUFFER_BYTES: usize = 1 << 20;
/// The end records carry no chain: about 50 bytes each.
const END_BUFFER_BYTES: usize = 256 << 10;
/// What a worker's two ring buffers hold in memory: their data and a metadata page each.
pub const BUFFER_BYTES_PER_WORKER: u64 = (BEGIN_BUFFER_BYTES + END_BUFFER_BYTES + 2 * 4096) as u64;
/// Frames of the begin's chain kept: the tracing's own frames, the lock's slow path and
/// its entry, and the caller (perf lock's default --max-stack is 8; the caller of a sleeping
/// rwsem sits 4-6 frames in).
const MAX_STACK: u16 = 24;
/// How far behind the drain a record may be written: a record is stamped before it is copied
/// into the buffer, so one stamped just before a drain may be in the buffer just after it.
/// Records younger than this are paired at the next drain.
const WRITE_LAG_NS: u64 = 20_000_000;

/// Where a field of a tracepoint's record lies (`format`'s offset and size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldAt {
    pub offset: usize,
    pub size: usize,
}

impl FieldAt {
    /// The field's value in `raw` (little-endian: the machine's own), None where the record is short.
    fn read(self, raw: &[u8]) -> Option<u64> {
        let bytes = raw.get(self.offset..self.offset + self.size)?;
        let mut value = [0u8; 8];
        value[..bytes.len().min(8)].copy_from_slice(&bytes[..bytes.len().min(8)]);
        Some(u64::from_ne_bytes(value))
    }
}

/// A field of a tracefs `format` file: the line `field:<type> <name>;\toffset:N;\tsize:M;...`.
pub fn field(format: &str, name: &str) -> Option<FieldAt> {
    format.lines().find_map(|line| {
        let declaration = line.trim().strip_prefix("field:")?.split(';').next()?;
        let declared = declaration.rsplit([' ', '*']).next()?;
        if declared != name {
            return None;
        }
        let number = |key: &str| -> Option<usize> {
            line.split(';').find_map(|part| part.trim().strip_prefix(key)?.strip_prefix(':')?.trim().parse().ok())
        };
        Some(FieldAt { offset: number("offset")?, size: number("size")? })
    })
}

/// The two tracepoints as this kernel defines them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockEvents {
    pub begin_id: u64,
    pub end_id: u64,
    pub begin_lock: FieldAt,
    pub begin_flags: FieldAt,
    pub end_lock: FieldAt,
}

impl LockEvents {
    /// The events' ids and fields from a tracefs at `root`, or why they are not there.
    pub fn read_from(root: &Path) -> Result<LockEvents, String> {
        let lock = root.join("events/lock");
        let read = |event: &str, file: &str| {
            std::fs::read_to_string(lock.join(event).join(file))
                .map_err(|e| format!("{}: {e}", lock.join(event).join(file).display()))
        };
        if !lock.join("contention_begin").exists() {
            return Err(match root.join("events").exists() {
                true => "the kernel has no lock:contention_begin tracepoint (Linux 5.19 and later have it)".into(),
                false => format!("{} holds no tracefs events", root.display()),
            });
        }
        let id = |event: &str| -> Result<u64, String> {
            read(event, "id")?.trim().parse().map_err(|e| format!("lock:{event}'s id: {e}"))
        };
        let (begin_format, end_format) = (read("contention_begin", "format")?, read("contention_end", "format")?);
        let at = |format: &str, event: &str, name: &str| {
            field(format, name).ok_or_else(|| format!("lock:{event}'s format has no field {name}"))
        };
        Ok(LockEvents {
            begin_id: id("contention_begin")?,
            end_id: id("contention_end")?,
            begin_lock: at(&begin_format, "contention_begin", "lock_addr")?,
            begin_flags: at(&begin_format, "contention_begin", "flags")?,
            end_lock: at(&end_format, "contention_end", "lock_addr")?,
        })
    }

    /// The events of this machine: from `FAULTSCALE_TRACEFS` where it is set, else a mounted
    /// tracefs, else one mounted for the reading on a private temporary directory. The error
    /// says why the lock figures will be absent.
    pub fn find() -> Result<LockEvents, String> {
        if let Some(root) = std::env::var_os("FAULTSCALE_TRACEFS") {
            return LockEvents::read_from(Path::new(&root));
        }
        for root in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
            if Path::new(root).join("events").exists() {
                return LockEvents::read_from(Path::new(root));
            }
        }
        let mounted =
            PrivateTracefs::mount().map_err(|e| format!("tracefs is not mounted and mounting it failed: {e}"))?;
        LockEvents::read_from(&mounted.dir)
    }
}

/// A tracefs mounted on a temporary directory for one reading: unmounted and removed on drop.
struct PrivateTracefs {
    dir: PathBuf,
}

impl PrivateTracefs {
    fn mount() -> io::Result<PrivateTracefs> {
        use std::os::unix::ffi::OsStrExt;
        let template = std::env::temp_dir().join("faultscale-tracefs-XXXXXX");
        let mut bytes = std::ffi::CString::new(template.as_os_str().as_bytes())?.into_bytes_with_nul();
        // SAFETY: a NUL-terminated template that mkdtemp fills in place.
        if unsafe { libc::mkdtemp(bytes.as_mut_ptr().cast()) }.is_null() {
            return Err(io::Error::last_os_error());
        }
        let path = std::ffi::CStr::from_bytes_with_nul(&bytes).map_err(io::Error::other)?;
        let dir = PathBuf::from(std::ffi::OsStr::from_bytes(path.to_bytes()));
        // SAFETY: NUL-terminated strings; tracefs takes no data argument.
        let status = unsafe { libc::mount(c"nodev".as_ptr(), path.as_ptr(), c"tracefs".as_ptr(), 0, std::ptr::null()) };
        if status != 0 {
            let error = io::Error::last_os_error();
            let _ = std::fs::remove_dir(&dir);
            return Err(error);
        }
        Ok(PrivateTracefs { dir })
    }
}

impl Drop for PrivateTracefs {
    fn drop(&mut self) {
        use std::os::unix::ffi::OsStrExt;
        if let Ok(path) = std::ffi::CString::new(self.dir.as_os_str().as_bytes()) {
            // SAFETY: a NUL-terminated path; MNT_DETACH so nothing holding it keeps it busy.
            unsafe { libc::umount2(path.as_ptr(), libc::MNT_DETACH) };
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// One tracepoint record of a worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Traced {
    /// A contention began on `lock`: its flags and the kernel chain, innermost first.
    Begin { time_ns: u64, lock: u64, flags: u32, chain: Vec<u64> },
    /// The contention on `lock` ended (acquired, or given up: a killed sleeper).
    End { time_ns: u64, lock: u64 },
}

impl Traced {
    fn time_ns(&self) -> u64 {
        match self {
            Traced::Begin { time_ns, .. } | Traced::End { time_ns, .. } => *time_ns,
        }
    }
}

/// Contentions and their wait.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub contentions: u64,
    pub wait_ns: u64,
}

/// Begins paired with ends, per lock, in time order; contentions summed per (chain, flags),
/// which are few (code paths), so the symbols are looked up once a slice.
#[derive(Debug, Default)]
pub struct Pairing {
    pending: HashMap<u64, (u64, u32, Vec<u64>)>,
    pub by_chain: HashMap<(Vec<u64>, u32), Tally>,
    /// Ends with no begin before them (the begin lost, or begun before the events were enabled).
    pub unmatched_ends: u64,
}

impl Pairing {
    /// One record, in time order. A second begin of a lock already begun (a mutex's spin,
    /// then its sleep) is passed over: the first begin counts, as perf lock counts it.
    pub fn feed(&mut self, record: Traced) {
        match record {
            Traced::Begin { time_ns, lock, flags, chain } => {
                self.pending.entry(lock).or_insert((time_ns, flags, chain));
            }
            Traced::End { time_ns, lock } => match self.pending.remove(&lock) {
                Some((began_ns, flags, chain)) => {
                    let tally = self.by_chain.entry((chain, flags)).or_default();
                    tally.contentions += 1;
                    tally.wait_ns += time_ns.saturating_sub(began_ns);
                }
                None => self.unmatched_ends += 1,
            },
        }
    }

    /// Begins not yet ended.
    pub fn unended(&self) -> usize {
        self.pending.len()
    }
}

/// perf lock's names of the lock kinds, from the begin's flags.
pub fn kind(flags: u32) -> &'static str {
    let rw = |read: &'static str, write: &'static str, other: &'static str| match () {
        _ if flags & LCB_F_READ != 0 => read,
        _ if flags & LCB_F_WRITE != 0 => write,
        _ => other,
    };
    match () {
        _ if flags & LCB_F_MUTEX != 0 => "mutex",
        _ if flags & LCB_F_PERCPU != 0 => rw("pcpu-sem:R", "pcpu-sem:W", "pcpu-sem"),
        _ if flags & LCB_F_RT != 0 => rw("rwlock-rt:R", "rwlock-rt:W", "rt-mutex"),
        _ if flags & LCB_F_SPIN != 0 => rw("rwlock:R", "rwlock:W", "spinlock"),
        _ => rw("rwsem:R", "rwsem:W", "unknown"),
    }
}

/// Where the kernel's lock code lies: perf lock's `machine__is_lock_function` sections.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LockText {
    /// `__sched_text_start..__sched_text_end` (mutex and rwsem functions are `__sched`) and
    /// `__lock_text_start..__lock_text_end` (the `_raw_spin_lock*` family).
    pub ranges: Vec<(u64, u64)>,
}

impl LockText {
    /// The sections from /proc/kallsyms (addresses shown to root, or with kptr_restrict 0);
    /// empty where they are hidden, the names alone then deciding.
    pub fn read() -> LockText {
        let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
        LockText::parse(&text)
    }

    fn parse(kallsyms: &str) -> LockText {
        let mut marks: HashMap<&str, u64> = HashMap::new();
        for line in kallsyms.lines() {
            let mut words = line.split_whitespace();
            let (Some(address), Some(_), Some(name)) = (words.next(), words.next(), words.next()) else { continue };
            let marks_a_section =
                matches!(name, "__sched_text_start" | "__sched_text_end" | "__lock_text_start" | "__lock_text_end");
            if let (true, Ok(address)) = (marks_a_section, u64::from_str_radix(address, 16)) {
                marks.insert(name, address);
            }
        }
        let range =
            |start: &str, end: &str| Some((*marks.get(start)?, *marks.get(end)?)).filter(|(s, e)| *s != 0 && s < e);
        LockText {
            ranges: [range("__sched_text_start", "__sched_text_end"), range("__lock_text_start", "__lock_text_end")]
                .into_iter()
                .flatten()
                .collect(),
        }
    }
}

/// The lock code's own functions outside those sections, by name: the tracepoint's frames
/// (perf lock skips them since 6.9 by the same names) and the functions of kernel/locking
/// that are not `__sched` or `__lockfunc`: qspinlock's and qrwlock's slow paths (the first
/// frame of a spinlock's chain, which perf lock passes over by skipping the chain's first
/// frames instead), the rwsem's and mutex's helpers, and their release paths, whose wait_lock
/// contends (`up_read` -> `rwsem_wake` -> `_raw_spin_lock_irqsave`, seen on 6.18): such a
/// contention is named by the code that released the rwsem, not by `up_read`.
const LOCK_CODE_PREFIXES: &[&str] = &[
    "__traceiter_contention_",
    "perf_trace_contention_",
    "trace_contention_",
    "queued_spin_",
    "native_queued_spin_",
    "__pv_queued_spin_",
    "pv_queued_spin_",
    "queued_read_",
    "queued_write_",
    "do_raw_spin_",
    "do_raw_read_",
    "do_raw_write_",
    "_raw_spin_",
    "_raw_read_",
    "_raw_write_",
    "rwsem_",
    "__rwsem_",
    "down_read",
    "down_write",
    "__down_",
    "mutex_",
    "__mutex_",
    "ww_mutex_",
    "__ww_mutex_",
    "rt_mutex_",
    "__rt_mutex_",
    "rt_spin_",
    "rtlock_",
    "percpu_down_",
    "percpu_up_",
    "up_read",
    "up_write",
    "downgrade_write",
    "__percpu_down_",
    "osq_lock",
    "schedule",
    "__schedule",
    "preempt_schedule",
];

/// Whether a frame is the lock code's (perf lock's rule: in the sched or lock text sections,
/// or the tracepoint's own frames; and here also the named slow paths outside them, which
/// perf lock skips by position rather than by name).
pub fn is_lock_code(address: u64, name: &str, text: &LockText) -> bool {
    text.ranges.iter().any(|&(start, end)| (start..end).contains(&address))
        || LOCK_CODE_PREFIXES.iter().any(|prefix| name.starts_with(prefix))
}

/// The contending caller: the first frame of a begin's chain (innermost first, named)
/// outside the lock code, and the frame that called it; None where every frame is the lock
/// code's. perf lock contention names the second of them: it skips the chain's first three
/// frames whatever they are (seen on 6.18: rwsem:W `do_mmap` where the chain is
/// `rwsem_down_write_slowpath`, `down_write`, `__mmap_region`, `do_mmap`), so both are kept.
///
/// A lock contended inside the scheduler (`__schedule`, sched text: the runqueue's lock, taken
/// where a worker is preempted or sleeps) is named `__schedule`, with the code that entered
/// it: named by that code alone it read as that code's lock (`irqentry_exit_to_user_mode`
/// after a page fault, where the worker was preempted on its way back to user mode).
pub fn caller<'a>(frames: &[(u64, &'a str)], text: &LockText) -> Option<(&'a str, Option<&'a str>)> {
    let at = frames.iter().position(|(address, name)| !is_lock_code(*address, name, text))?;
    if frames[..at].iter().any(|(_, name)| *name == "__schedule") {
        return Some(("__schedule", Some(frames[at].1)));
    }
    Some((frames[at].1, frames.get(at + 1).map(|(_, name)| *name)))
}

/// A lock as faultscale names it: its kind and the caller that contended, with that caller's
/// own caller where known (`rwsem:W __mmap_region<-do_mmap`). Never a lock's name: the
/// tracepoints give an address, and a table of guesses would be wrong where it guessed.
pub fn lock_name(kind: &str, caller: &str, parent: Option<&str>) -> String {
    match parent {
        Some(parent) => format!("{kind} {caller}<-{parent}"),
        None => format!("{kind} {caller}"),
    }
}

/// One caller's contentions of one kind of lock.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallerLocks {
    pub caller: String,
    /// The frame that called `caller` (perf lock contention's `caller`); None at the chain's end.
    #[serde(default)]
    pub parent: Option<String>,
    /// perf lock's name of the kind: spinlock, rwsem:W, mutex, ...
    pub kind: String,
    pub contentions: u64,
    pub wait_ns: u64,
}

/// One measurement's lock contentions, named and summed.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockCounts {
    pub contentions: u64,
    pub wait_ns: u64,
    /// Per caller and kind, the longest wait first.
    pub callers: Vec<CallerLocks>,
    /// Records the kernel dropped (a full buffer): the figures are short by them.
    pub lost: u64,
    /// Ends without a begin, and begins without an end when the crew parked.
    pub unpaired: u64,
}

impl LockCounts {
    pub fn add(&mut self, other: &LockCounts) {
        self.contentions += other.contentions;
        self.wait_ns += other.wait_ns;
        self.lost += other.lost;
        self.unpaired += other.unpaired;
        for theirs in &other.callers {
            let same =
                |c: &&mut CallerLocks| c.caller == theirs.caller && c.parent == theirs.parent && c.kind == theirs.kind;
            match self.callers.iter_mut().find(same) {
                Some(ours) => {
                    ours.contentions += theirs.contentions;
                    ours.wait_ns += theirs.wait_ns;
                }
                None => self.callers.push(theirs.clone()),
            }
        }
        self.callers.sort_by(|a, b| b.wait_ns.cmp(&a.wait_ns).then(a.caller.cmp(&b.caller)));
    }
}

/// Names the pairing's chains: each chain's caller, summed per caller and kind. `names` gives
/// each kernel address's function (None where unknown).
pub fn name(
    by_chain: &HashMap<(Vec<u64>, u32), Tally>,
    names: &dyn Fn(u64) -> Option<String>,
    text: &LockText,
) -> LockCounts {
    let mut per_caller: BTreeMap<(String, Option<String>, &'static str), Tally> = BTreeMap::new();
    let mut counts = LockCounts::default();
    for ((chain, flags), tally) in by_chain {
        let named: Vec<(u64, String)> =
            chain.iter().map(|&a| (a, names(a).unwrap_or_else(|| "[kernel]".into()))).collect();
        let frames: Vec<(u64, &str)> = named.iter().map(|(a, n)| (*a, n.as_str())).collect();
        let (who, parent) = caller(&frames, text).unwrap_or(("[lock code only]", None));
        let entry = per_caller.entry((who.to_string(), parent.map(str::to_string), kind(*flags))).or_default();
        entry.contentions += tally.contentions;
        entry.wait_ns += tally.wait_ns;
        counts.contentions += tally.contentions;
        counts.wait_ns += tally.wait_ns;
    }
    let callers = per_caller
        .into_iter()
        .map(|((caller, parent, kind), t)| CallerLocks {
            caller,
            parent,
            kind: kind.into(),
            contentions: t.contentions,
            wait_ns: t.wait_ns,
        })
        .collect();
    let mut sorted = LockCounts::default();
    sorted.add(&LockCounts { callers, ..LockCounts::default() });
    counts.callers = sorted.callers;
    counts
}

/// The lock events of this machine, looked up once a run (`LockEvents::find`).
pub fn events() -> Result<LockEvents, String> {
    static EVENTS: std::sync::OnceLock<Result<LockEvents, String>> = std::sync::OnceLock::new();
    EVENTS.get_or_init(LockEvents::find).clone()
}

/// The kernel's lock text sections, read once a run.
fn lock_text() -> &'static LockText {
    static TEXT: std::sync::OnceLock<LockText> = std::sync::OnceLock::new();
    TEXT.get_or_init(LockText::read)
}

/// A crew's slice: each worker's tracepoints disabled (the crew is parked: no contention is
/// under way), their buffers drained and paired, the chains named and summed. The workers'
/// pairings start afresh for the next slice.
pub fn count_slice(workers: &mut [WorkerLocks]) -> LockCounts {
    let mut by_chain: HashMap<(Vec<u64>, u32), Tally> = HashMap::new();
    let (mut lost, mut unpaired) = (0, 0);
    for worker in workers.iter_mut() {
        let _ = worker.disable();
        worker.drain(0, true);
        let (pairing, worker_lost, worker_unpaired) = worker.take();
        lost += worker_lost;
        unpaired += worker_unpaired;
        for (key, tally) in pairing.by_chain {
            let sum = by_chain.entry(key).or_default();
            sum.contentions += tally.contentions;
            sum.wait_ns += tally.wait_ns;
        }
    }
    let mut addresses: Vec<u64> = by_chain.keys().flat_map(|(chain, _)| chain.iter().copied()).collect();
    addresses.sort_unstable();
    addresses.dedup();
    let named: HashMap<u64, Option<String>> =
        addresses.iter().copied().zip(crate::measure::stacks::kernel_names(&addresses)).collect();
    let mut counts = name(&by_chain, &|a| named.get(&a).cloned().flatten(), lock_text());
    counts.lost = lost;
    counts.unpaired = unpaired;
    counts
}

/// perf's markers inside a call chain (PERF_CONTEXT_KERNEL, ...) and user addresses: not
/// kernel frames.
fn kernel_frames(chain: &[u64]) -> Vec<u64> {
    chain.iter().copied().filter(|&a| (0xffff_8000_0000_0000..(-4095i64) as u64).contains(&a)).collect()
}

/// One worker's two tracepoints and what they have recorded so far in a slice.
pub struct WorkerLocks {
    begin: Sampler,
    end: Sampler,
    events: LockEvents,
    /// Drained but younger than WRITE_LAG_NS at their drain: paired at the next.
    held: Vec<Traced>,
    pub pairing: Pairing,
    /// Records the kernel dropped because a buffer was full.
    pub lost: u64,
}

fn tracepoint(id: u64, tid: libc::pid_t, chain: bool) -> Builder<'static> {
    let mut builder = Builder::new(Tracepoint::with_id(id));
    let mut sampled = SampleFlag::TIME | SampleFlag::RAW;
    if chain {
        sampled |= SampleFlag::CALLCHAIN;
    }
    builder
        .observe_pid(tid)
        .any_cpu()
        .include_kernel()
        .sample_period(1)
        .clockid(Clock::MONOTONIC)
        .sample(sampled)
        .exclude_callchain_user(true);
    if chain {
        builder.sample_max_stack(MAX_STACK);
    }
    builder
}

impl WorkerLocks {
    /// Opens both tracepoints on thread `tid`, disabled until `enable`.
    pub fn open(tid: libc::pid_t, events: &LockEvents) -> io::Result<WorkerLocks> {
        let begin = tracepoint(events.begin_id, tid, true).build()?.sampled(BEGIN_BUFFER_BYTES)?;
        let end = tracepoint(events.end_id, tid, false).build()?.sampled(END_BUFFER_BYTES)?;
        Ok(WorkerLocks { begin, end, events: *events, held: Vec::new(), pairing: Pairing::default(), lost: 0 })
    }

    pub fn enable(&mut self) -> io::Result<()> {
        self.begin.enable()?;
        self.end.enable()
    }

    pub fn disable(&mut self) -> io::Result<()> {
        self.begin.disable()?;
        self.end.disable()
    }

    /// Moves the buffers' records into the pairing, in time order, all of them (`all`: the
    /// events disabled, nothing more to come) or those older than WRITE_LAG_NS before `now_ns`.
    pub fn drain(&mut self, now_ns: u64, all: bool) {
        // The ends first: an end drained has its begin already in the begin buffer.
        let events = self.events;
        drain_into(&mut self.end, &mut self.held, &mut self.lost, |time_ns, raw, _| {
            Some(Traced::End { time_ns, lock: events.end_lock.read(raw)? })
        });
        drain_into(&mut self.begin, &mut self.held, &mut self.lost, |time_ns, raw, chain| {
            Some(Traced::Begin {
                time_ns,
                lock: events.begin_lock.read(raw)?,
                flags: events.begin_flags.read(raw)? as u32,
                chain: kernel_frames(chain),
            })
        });
        self.held.sort_by_key(Traced::time_ns);
        let ready = match all {
            true => self.held.len(),
            false => self.held.partition_point(|t| t.time_ns() + WRITE_LAG_NS <= now_ns),
        };
        for record in self.held.drain(..ready) {
            self.pairing.feed(record);
        }
    }

    /// The slice's pairing, handed over and started afresh, with the records lost and the
    /// records left unpaired (which a parked crew should have none of).
    pub fn take(&mut self) -> (Pairing, u64, u64) {
        let pairing = std::mem::take(&mut self.pairing);
        let unpaired = pairing.unmatched_ends + pairing.unended() as u64;
        (pairing, std::mem::take(&mut self.lost), unpaired)
    }
}

fn drain_into(
    sampler: &mut Sampler,
    into: &mut Vec<Traced>,
    lost: &mut u64,
    make: impl Fn(u64, &[u8], &[u64]) -> Option<Traced>,
) {
    while let Some(record) = sampler.next_record() {
        match record.parse_record() {
            Ok(perf_event::data::Record::Sample(sample)) => {
                let (Some(time_ns), Some(raw)) = (sample.time(), sample.raw()) else { continue };
                if let Some(traced) = make(time_ns, raw, sample.callchain().unwrap_or(&[])) {
                    into.push(traced);
                }
            }
            Ok(perf_event::data::Record::Lost(dropped)) => *lost += dropped.lost,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEGIN_FORMAT: &str = "name: contention_begin\nID: 408\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:void * lock_addr;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:unsigned int flags;\toffset:16;\tsize:4;\tsigned:0;\n";

    #[test]
    fn fields_are_read_from_the_format_file() {
        assert_eq!(field(BEGIN_FORMAT, "lock_addr"), Some(FieldAt { offset: 8, size: 8 }));
        assert_eq!(field(BEGIN_FORMAT, "flags"), Some(FieldAt { offset: 16, size: 4 }));
        assert_eq!(field(BEGIN_FORMAT, "common_pid"), Some(FieldAt { offset: 4, size: 4 }));
        assert_eq!(field(BEGIN_FORMAT, "ret"), None);
        // A record: the lock at 8, flags at 16.
        let mut raw = vec![0u8; 20];
        raw[8..16].copy_from_slice(&0xffff_8880_1234_5678u64.to_ne_bytes());
        raw[16..20].copy_from_slice(&(LCB_F_WRITE).to_ne_bytes());
        assert_eq!(FieldAt { offset: 8, size: 8 }.read(&raw), Some(0xffff_8880_1234_5678));
        assert_eq!(FieldAt { offset: 16, size: 4 }.read(&raw), Some(LCB_F_WRITE as u64));
        assert_eq!(FieldAt { offset: 16, size: 8 }.read(&raw), None, "a short record is no value");
    }

    #[test]
    fn a_tracefs_without_the_events_says_why() {
        let empty = std::env::temp_dir().join(format!("faultscale-locks-test-{}", std::process::id()));
        std::fs::create_dir_all(empty.join("events/sched")).unwrap();
        let old = LockEvents::read_from(&empty).unwrap_err();
        assert!(old.contains("5.19"), "{old}");
        std::fs::remove_dir_all(&empty).unwrap();
        let none = LockEvents::read_from(&empty).unwrap_err();
        assert!(none.contains("no tracefs"), "{none}");
    }

    fn begin(time_ns: u64, lock: u64, flags: u32, chain: &[u64]) -> Traced {
        Traced::Begin { time_ns, lock, flags, chain: chain.to_vec() }
    }

    #[test]
    fn a_begin_pairs_with_the_next_end_of_its_lock_and_a_second_begin_is_passed_over() {
        let mut pairing = Pairing::default();
        // A mutex spins (begin at 100), sleeps (begin again at 150), acquires at 400; a
        // spinlock contended inside it (its wait_lock) from 120 to 130.
        pairing.feed(begin(100, 0xa, LCB_F_MUTEX | LCB_F_SPIN, &[1, 2]));
        pairing.feed(begin(120, 0xb, LCB_F_SPIN, &[3]));
        pairing.feed(Traced::End { time_ns: 130, lock: 0xb });
        pairing.feed(begin(150, 0xa, LCB_F_MUTEX, &[9]));
        pairing.feed(Traced::End { time_ns: 400, lock: 0xa });
        // An end whose begin was lost; a begin whose end is still to come.
        pairing.feed(Traced::End { time_ns: 500, lock: 0xc });
        pairing.feed(begin(600, 0xd, LCB_F_WRITE, &[4]));
        assert_eq!(pairing.by_chain[&(vec![1, 2], LCB_F_MUTEX | LCB_F_SPIN)], Tally { contentions: 1, wait_ns: 300 });
        assert_eq!(pairing.by_chain[&(vec![3], LCB_F_SPIN)], Tally { contentions: 1, wait_ns: 10 });
        assert!(!pairing.by_chain.contains_key(&(vec![9], LCB_F_MUTEX)), "the second begin is not a contention");
        assert_eq!((pairing.unmatched_ends, pairing.unended()), (1, 1));
        pairing.feed(Traced::End { time_ns: 650, lock: 0xd });
        assert_eq!(pairing.by_chain[&(vec![4], LCB_F_WRITE)], Tally { contentions: 1, wait_ns: 50 });
        assert_eq!(pairing.unended(), 0);
    }

    #[test]
    fn kinds_are_named_as_perf_lock_names_them() {
        assert_eq!(kind(LCB_F_SPIN), "spinlock");
        assert_eq!(kind(LCB_F_SPIN | LCB_F_READ), "rwlock:R");
        assert_eq!(kind(LCB_F_WRITE), "rwsem:W");
        assert_eq!(kind(LCB_F_READ), "rwsem:R");
        assert_eq!(kind(LCB_F_MUTEX | LCB_F_SPIN), "mutex");
        assert_eq!(kind(LCB_F_PERCPU | LCB_F_READ), "pcpu-sem:R");
        assert_eq!(kind(LCB_F_RT), "rt-mutex");
    }

    #[test]
    fn the_caller_is_the_first_frame_outside_the_lock_code() {
        let kallsyms = "ffffffff82258340 T __sched_text_start\nffffffff82261062 T __sched_text_end\nffffffff82261070 T __lock_text_start\nffffffff82262af1 T __lock_text_end\nffffffff81000000 T do_mmap\n";
        let text = LockText::parse(kallsyms);
        assert_eq!(
            text.ranges,
            vec![(0xffffffff82258340, 0xffffffff82261062), (0xffffffff82261070, 0xffffffff82262af1)]
        );
        // A sleeping writer of an rwsem, innermost first: the tracepoint's frame, the slow path
        // (sched text), down_write (sched text), then the caller.
        let rwsem = [
            (0xffffffff813e9890, "__traceiter_contention_begin"),
            (0xffffffff82259000, "rwsem_down_write_slowpath"),
            (0xffffffff8225a000, "down_write"),
            (0xffffffff81000100, "do_mmap"),
            (0xffffffff81000200, "vm_mmap_pgoff"),
        ];
        assert_eq!(caller(&rwsem, &text), Some(("do_mmap", Some("vm_mmap_pgoff"))));
        // A spinlock: the qspinlock slow path lies outside both sections, named; _raw_spin_lock
        // in the lock text.
        let spin = [
            (0xffffffff81500000, "native_queued_spin_lock_slowpath"),
            (0xffffffff82261100, "_raw_spin_lock_irqsave"),
            (0xffffffff81200000, "folio_lruvec_lock_irqsave"),
        ];
        assert_eq!(caller(&spin, &text), Some(("folio_lruvec_lock_irqsave", None)));
        // An rwsem's wait_lock contended on its release (as seen on 6.18): named by the code
        // that released the rwsem.
        let release = [
            (0xffffffff81500000, "__pv_queued_spin_lock_slowpath"),
            (0xffffffff82261100, "_raw_spin_lock_irqsave"),
            (0xffffffff81300000, "rwsem_wake.isra.0"),
            (0xffffffff81300100, "up_read"),
            (0xffffffff81300200, "vms_complete_munmap_vmas"),
        ];
        assert_eq!(caller(&release, &text), Some(("vms_complete_munmap_vmas", None)));
        // The runqueue's lock, contended in the scheduler at a preemption on the way back to
        // user mode after a fault: the scheduler's, entered from there.
        let preempted = [
            (0xffffffff81500000, "native_queued_spin_lock_slowpath"),
            (0xffffffff82261100, "_raw_spin_lock"),
            (0xffffffff82258400, "__schedule"),
            (0xffffffff82258500, "schedule"),
            (0xffffffff81400000, "irqentry_exit_to_user_mode"),
            (0xffffffff81400100, "asm_exc_page_fault"),
        ];
        assert_eq!(caller(&preempted, &text), Some(("__schedule", Some("irqentry_exit_to_user_mode"))));
        // Without the sections (kallsyms hidden) the names alone decide.
        assert_eq!(caller(&rwsem, &LockText::default()), Some(("do_mmap", Some("vm_mmap_pgoff"))));
        assert_eq!(caller(&rwsem[..3], &text), None, "a chain of lock code only has no caller");
    }

    #[test]
    fn chains_are_summed_per_caller_and_kind_longest_wait_first() {
        let text = LockText::default();
        let names: HashMap<u64, &str> = [
            (1, "rwsem_down_write_slowpath"),
            (2, "do_mmap"),
            (3, "free_pgtables"),
            (4, "down_write"),
            (5, "unlink_file_vma"),
        ]
        .into();
        let mut by_chain = HashMap::new();
        by_chain.insert((vec![1, 2], LCB_F_WRITE), Tally { contentions: 3, wait_ns: 300 });
        by_chain.insert((vec![1, 4, 2], LCB_F_WRITE), Tally { contentions: 1, wait_ns: 100 });
        by_chain.insert((vec![1, 3], LCB_F_WRITE), Tally { contentions: 5, wait_ns: 1_000 });
        by_chain.insert((vec![1, 6], LCB_F_WRITE), Tally { contentions: 1, wait_ns: 1 });
        let counts = name(&by_chain, &|a| names.get(&a).map(|n| n.to_string()), &text);
        assert_eq!((counts.contentions, counts.wait_ns), (10, 1_401));
        let summary: Vec<(&str, &str, u64, u64)> =
            counts.callers.iter().map(|c| (c.caller.as_str(), c.kind.as_str(), c.contentions, c.wait_ns)).collect();
        assert_eq!(
            summary,
            [("free_pgtables", "rwsem:W", 5, 1_000), ("do_mmap", "rwsem:W", 4, 400), ("[kernel]", "rwsem:W", 1, 1)]
        );
        // Through down_write or straight from do_mmap, one caller; no chain goes further.
        assert!(counts.callers.iter().all(|c| c.parent.is_none()));
    }

    #[test]
    fn kernel_frames_drop_markers_and_user_addresses() {
        let marker = (-128i64) as u64;
        assert_eq!(kernel_frames(&[marker, 0xffffffff81000000, 0x7f00_0000_1000]), [0xffffffff81000000]);
    }
}
