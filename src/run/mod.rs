//! The measurement: each placement's workers at each task count (a crew) made for a
//! generation of rounds, parked between its slices (park.rs), and woken for each slice it
//! measures; the snapshot read with the crew parked at both ends, the slice's figures their difference
//! (slice.rs, snapshot.rs). The session drives slices through `Slicer`, which `RealSlicer`
//! implements.
//!
//! The harness is single-threaded: workers are forked from a process with no other thread.

pub mod budget;
mod control;
pub mod cpus;
pub mod files;
mod park;
mod result;
pub mod signals;
mod slice;
pub mod slots;
pub mod snapshot;
mod spec;
pub mod topology;
mod worker;
mod workers;

use crate::cgroup::{Hierarchy, Leaf};

pub use result::{HarnessTimes, Sample, SliceResult, WorkerResult, blocked_ns_on_cpus};
pub use slice::SliceSpec;
pub use spec::{KernelCountSource, Mode, RunSpec};

/// The seam between the session and the real measurement: the session asks for slices through
/// it, and its unit tests answer with a fake that forks nothing (hyperfine's Executor and
/// MockExecutor).
pub trait Slicer {
    /// Makes the workers of one placement at one task count ready before a generation's first
    /// slice, so its slices measure without forking. An error here is said again by `measure`.
    fn set_up(&mut self, slice: &SliceSpec, warn: &mut dyn FnMut(Notice)) -> anyhow::Result<()>;
    /// Measures one slice; `warn` collects what had to be done differently from what was asked.
    fn measure(
        &mut self,
        slice: &SliceSpec,
        warn: &mut dyn FnMut(Notice),
        progress: &mut dyn Progress,
    ) -> anyhow::Result<SliceResult>;
    /// Ends every worker set up so far (a generation's slices are done, or the run is), so the
    /// next generation is measured by crews of its own.
    fn retire(&mut self);
    /// The memcg oom_kill count of `leaf` now, so a worker's death can be blamed on the OOM
    /// killer from the memcg's own count, not a guess.
    fn oom_kills(&self, leaf: &Leaf) -> u64;
}

/// Slices measured for real: forked, pinned workers in real cgroups, one crew per placement
/// and task count at a time (the session retires them at each generation's end), parked
/// between its slices.
pub struct RealSlicer {
    spec: RunSpec,
    hierarchy: Hierarchy,
    crews: std::collections::HashMap<(usize, usize), slice::Crew>,
    /// The next run-wide worker number, which names a worker's files.
    next_worker: usize,
    /// Each crew key's first worker number: a crew set up again after a failure reuses it,
    /// so its files replace the failed crew's (a fresh number per retry filled a tmpfs).
    numbers: std::collections::HashMap<(usize, usize), usize>,
    /// The crew whose slice was the last thing run on the workers' CPUs: where ABBA measures it
    /// again at once, its CPUs are still its own and its slice needs no settling window.
    ran_last: Option<(usize, usize)>,
}

impl RealSlicer {
    pub fn new(spec: RunSpec, hierarchy: Hierarchy) -> Self {
        RealSlicer {
            spec,
            hierarchy,
            crews: Default::default(),
            next_worker: 0,
            numbers: Default::default(),
            ran_last: None,
        }
    }

    fn new_crew(&mut self, slice: &SliceSpec, warn: &mut dyn FnMut(Notice)) -> anyhow::Result<slice::Crew> {
        let key = (slice.placement, slice.cpus.len());
        let next = &mut self.next_worker;
        let first = *self.numbers.entry(key).or_insert_with(|| {
            *next += key.1;
            *next - key.1
        });
        slice::Crew::set_up(&self.spec, slice, &self.hierarchy, first, warn)
    }
}

impl Slicer for RealSlicer {
    fn set_up(&mut self, slice: &SliceSpec, warn: &mut dyn FnMut(Notice)) -> anyhow::Result<()> {
        let key = (slice.placement, slice.cpus.len());
        // Fixed work runs a fresh crew per slice: each slice is one whole pass of the work.
        if self.spec.settings.fixed_iterations.is_none() && !self.crews.contains_key(&key) {
            // Its workers' start and warmup ran on the CPUs.
            self.ran_last = None;
            let crew = self.new_crew(slice, warn)?;
            self.crews.insert(key, crew);
        }
        Ok(())
    }

    fn measure(
        &mut self,
        slice: &SliceSpec,
        warn: &mut dyn FnMut(Notice),
        progress: &mut dyn Progress,
    ) -> anyhow::Result<SliceResult> {
        if self.spec.settings.fixed_iterations.is_some() {
            return self.new_crew(slice, warn)?.measure(&self.spec, false, progress);
        }
        self.set_up(slice, warn)?;
        let key = (slice.placement, slice.cpus.len());
        let settled = self.ran_last.replace(key) == Some(key);
        let measured = self.crews.get_mut(&key).expect("set up above").measure(&self.spec, settled, progress);
        // A slice that failed, or overran (Ctrl-Z, a worker stopped from outside, overload: a
        // stop request is honoured inside a slice's wait, never between slices), let other work
        // run on its CPUs: the next one settles, as after another crew's.
        if !matches!(&measured, Ok(result) if !result.overran) {
            self.ran_last = None;
        }
        if measured.is_err() {
            // A crew whose slice failed (a worker died, a counter failed) is not trusted again:
            // the next slice of this placement sets up a new one.
            self.crews.remove(&key);
        }
        measured
    }

    fn retire(&mut self) {
        // Each crew's Workers kills and reaps its processes as it drops.
        self.crews.clear();
        self.ran_last = None;
    }

    fn oom_kills(&self, leaf: &Leaf) -> u64 {
        crate::measure::memcg::oom_kills(&leaf.fs_path).unwrap_or(0)
    }
}

/// Where the run stands at a sample.
pub struct Tick {
    pub elapsed_s: f64,
    pub duration_s: f64,
    /// The rate over the interval that just ended.
    pub rate: f64,
}

/// Told where the run stands; output/ draws it on the terminal. Called at the harness's own
/// sample points only, so it costs the measured CPUs nothing they do not already pay.
pub trait Progress {
    /// A measurement starts; `after_s` is what the run still has to do once it ends.
    fn start(&mut self, context: String, after_s: f64);
    fn tick(&mut self, tick: &Tick);
    /// The run is over: leave the terminal as it was.
    fn clear(&mut self);
}

/// What a measurement had to do differently from what was asked, for the report's warnings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// --kernel-count perf: cycles and instructions cannot be opened on this machine.
    NoHardwareCounters,
    /// --kernel-count perf: the software counters could not be opened; minflt is used.
    PerfUnavailable(String),
    /// --locks: the contention tracepoints could not be opened (why); no lock figures.
    LocksUnavailable(String),
    /// --locks: what the workload's lock figures leave out (`Descriptor::locks_problem`).
    LocksPartial(&'static str),
}

/// A worker died during the measured part; the run goes on with the other placements.
#[derive(Debug)]
pub struct WorkerDied {
    /// Which worker, on which CPU, and why: one line for the failures list.
    pub why: String,
    /// The signal that killed it, where one did (SIGBUS: the file workloads' filesystem full).
    pub signal: Option<i32>,
}

impl WorkerDied {
    /// A worker that stopped or failed without a signal.
    pub fn because(why: String) -> Self {
        WorkerDied { why, signal: None }
    }
}

impl std::fmt::Display for WorkerDied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.why)
    }
}

impl std::error::Error for WorkerDied {}

/// What a measuring harness calls itself (comm), so other runs can tell it from its workers,
/// their forked children, and `compare` or `plot` processes, which keep "faultscale".
pub const HARNESS_NAME: &str = "faultscale-run";
/// What workers (and what they fork) call themselves.
pub const WORKER_NAME: &str = "faultscale-wkr";

/// Sets this thread's (in a single-threaded process, the process's) comm.
pub fn set_process_name(name: &str) {
    if let Ok(name) = std::ffi::CString::new(name) {
        // SAFETY: PR_SET_NAME with a NUL-terminated string of at most 16 bytes.
        unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr(), 0, 0, 0) };
    }
}

/// The harness wakes only to park, read and wake the workers, on CPUs they keep busy: as
/// an ordinary task it waited 1.4 ms for a CPU per slice (schedstat, 25 ms slices on the
/// 2-CPU VM), time the parked crews and the run's wall clock pay. SCHED_FIFO gets it on at
/// once; SCHED_RESET_ON_FORK gives every worker forked after this the ordinary policy and
/// nice 0. Best effort: where the kernel refuses (no CAP_SYS_NICE, an RT-less cpu cgroup)
/// the harness stays ordinary.
pub fn raise_harness_priority() -> bool {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: sched_setscheduler on this process with a valid parameter block.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &param) == 0 }
}

/// Building cgroups and moving workers into them needs root; say so before anything starts.
pub fn require_root(what: &str, why: &str) -> anyhow::Result<()> {
    if !nix::unistd::geteuid().is_root() {
        anyhow::bail!("{what} needs root {why}");
    }
    Ok(())
}
