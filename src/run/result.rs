//! What one measurement produced: per-worker counters, samples, and the placement's totals.

use super::KernelCountSource;
use crate::measure::locks::LockCounts;
use crate::measure::perf::PerfReading;
use crate::measure::stacks::ProfileCounts;

#[derive(Debug, Clone, serde::Serialize)]
pub struct WorkerResult {
    pub cpu: usize,
    pub pid: i32,
    pub iterations: u64,
    pub loop_faults: u64,
    pub kernel_faults: u64,
    pub perf: Option<PerfReading>,
    pub user_us: u64,
    pub sys_us: u64,
    /// Time on its CPU over its window: below 1 when something else ran on this worker's CPU.
    pub cpu_share: f64,
    /// When this worker entered its loop, from the release signal.
    pub start_offset_ns: u64,
    /// Time on its CPU over its window (schedstat, or the thread's CPU clock), read by the worker
    /// itself at its park at both ends: the cost of its faults, whatever else ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_cpu_ns: Option<u64>,
    /// Time runnable but waiting for a CPU (schedstat's run_delay): other load.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_ns: Option<u64>,
    /// Times it was put on its CPU over the slice (schedstat): 1 when nothing preempted it
    /// after its wake, more where something else ran there in between.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeslices: Option<u64>,
    /// The hypervisor's steal of this worker's CPU over the slice (/proc/stat).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steal_ns: Option<u64>,
    /// `siblings:N`: the sibling cgroup this worker ran in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cgroup_path: Option<String>,
    /// Its own window, wake to park (fixed work: loop entry to finish), in ns; 0 where unknown
    /// (read back from a file), the slice's time then standing in. Not written: a window is
    /// the slice's time to within an iteration.
    #[serde(skip)]
    pub span_ns: u64,
}

impl WorkerResult {
    /// Time over a span of `span_ns` the worker was neither on its CPU, nor waiting for it,
    /// nor losing it to the hypervisor: blocked (reclaim, I/O, a lock) or stopped. None without
    /// schedstat. (Where the kernel counts steal as time on the CPU, this is short by the steal.)
    pub fn blocked_ns(&self, slice_ns: u64) -> Option<u64> {
        let accounted = self.on_cpu_ns? + self.wait_ns? + self.steal_ns.unwrap_or(0);
        Some(self.window_ns(slice_ns).saturating_sub(accounted))
    }

    /// Its own window, or the slice's time (`slice_ns`) where its own is not known.
    pub fn window_ns(&self, slice_ns: u64) -> u64 {
        if self.span_ns > 0 { self.span_ns } else { slice_ns }
    }
}

/// Loop counters of every worker at one instant.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Sample {
    pub elapsed_ns: u64,
    pub iterations: Vec<u64>,
}

/// (The JSON writes it as `results::schema::SliceData`, the memcg counters under their
/// column names.)
#[derive(Debug, Clone)]
pub struct SliceResult {
    /// The measured time: the mean over the CPUs of the span of their workers' windows, each
    /// from its wake to its park (fixed work: the first start to the last finish).
    pub elapsed_ns: u64,
    pub start_skew_ns: u64,
    pub workers: Vec<WorkerResult>,
    pub memcg_pgfault: Option<u64>,
    pub kernel_source: KernelCountSource,
    pub samples: Vec<Sample>,
    /// The measured time exceeded the time asked for by more than 10% plus 50 ms
    /// (`slice::overran`): the harness or the
    /// workers were stopped (Ctrl-Z) or starved (overload, far more tasks than CPUs).
    pub overran: bool,
    /// What the memcg did during the slice: its counters' deltas (reclaim, limit hits, stall
    /// microseconds), read while the workers were parked.
    pub memcg: crate::measure::memcg::Counters,
    /// Whose stall time psi_* is: the cgroup's own, or the system's where only that exists.
    pub psi_scope: Option<crate::measure::memcg::PsiScope>,
    /// --profile: the slice's samples, named and counted.
    pub profile: Option<ProfileCounts>,
    /// What the harness spent around the slice, outside its measured window.
    pub harness: Option<HarnessTimes>,
    /// --locks: the slice's lock contentions; None where not asked or not available.
    pub locks: Option<LockCounts>,
}

/// The harness's own cost around one slice, in ns: the set-up of its crew (fork to parked
/// after warmup; on the crew's first slice only), the wake (one FUTEX_WAKE), the park (from
/// the slice's end until the last worker parked at its iteration boundary) and the reading of
/// the snapshot; and what the settling window before the slice measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct HarnessTimes {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub set_up_ns: Option<u64>,
    pub wake_ns: u64,
    pub park_ns: u64,
    pub snapshot_ns: u64,
    /// The unmeasured settling window before the slice: the workers' time on their CPUs and
    /// the faults they took in it (0 for fixed work, which has none).
    pub settle_on_cpu_ns: u64,
    pub settle_faults: u64,
}

impl SliceResult {
    pub fn loop_faults(&self) -> u64 {
        self.workers.iter().map(|w| w.loop_faults).sum()
    }

    pub fn kernel_faults(&self) -> u64 {
        self.workers.iter().map(|w| w.kernel_faults).sum()
    }

    pub fn elapsed_s(&self) -> f64 {
        self.elapsed_ns as f64 / 1e9
    }
}
