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
    /// Time on its CPU over its window (the thread's CPU clock: `OwnTimes::sched`), read by the worker
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
    /// Time over its window the worker was neither on its CPU, nor waiting for it, nor losing
    /// it to the hypervisor: blocked (reclaim, I/O, a lock) or stopped. None without schedstat.
    /// Its own row's figure; workers sharing a CPU are judged together (`blocked_ns_on_cpus`).
    pub fn blocked_ns(&self, slice_ns: u64) -> Option<u64> {
        Some(self.unaccounted_ns(slice_ns)?.max(0) as u64)
    }

    /// Its window less its time on the CPU, waiting and stolen, signed. /proc/stat counts steal
    /// in 10 ms ticks, and a thread's CPU clock leaves steal out where the kernel accounts it:
    /// a worker put on its CPU once (at its wake) and never taken off cannot have blocked, and
    /// what it lacks is steal under a tick (one slice in 400 here read "blocked 11%" so).
    fn unaccounted_ns(&self, slice_ns: u64) -> Option<i64> {
        let accounted = self.on_cpu_ns? + self.wait_ns? + self.steal_ns.unwrap_or(0);
        let unaccounted = self.window_ns(slice_ns) as i64 - accounted as i64;
        Some(if self.timeslices == Some(1) { unaccounted.min(0) } else { unaccounted })
    }

    /// Its own window, or the slice's time (`slice_ns`) where its own is not known.
    pub fn window_ns(&self, slice_ns: u64) -> u64 {
        if self.span_ns > 0 { self.span_ns } else { slice_ns }
    }
}

/// The blocked or stopped time of `workers`, each CPU's workers together: a CPU's steal is
/// shared among its workers by their time on it, so one's share can fall inside another's
/// wait (over-counted there, under-counted in the other); counted per worker, the two never
/// cancelled, and every 4- and 8-task slice with a steal tick read 3-4% blocked.
pub fn blocked_ns_on_cpus<'a>(workers: impl IntoIterator<Item = &'a WorkerResult>, slice_ns: u64) -> Option<u64> {
    let mut by_cpu: std::collections::BTreeMap<usize, i64> = Default::default();
    for worker in workers {
        *by_cpu.entry(worker.cpu).or_default() += worker.unaccounted_ns(slice_ns)?;
    }
    Some(by_cpu.values().map(|&ns| ns.max(0) as u64).sum())
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
    /// the faults they took in it (0 for fixed work and for a crew ABBA measured again at once,
    /// which have none).
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker's window and where its time went, in us.
    fn worker(cpu: usize, [window, on_cpu, wait, steal]: [u64; 4], timeslices: u64) -> WorkerResult {
        let us = |n: u64| n * 1000;
        WorkerResult {
            cpu,
            pid: 1000 + cpu as i32,
            iterations: 10,
            loop_faults: 2560,
            kernel_faults: 2560,
            perf: None,
            user_us: 0,
            sys_us: 0,
            cpu_share: 1.0,
            start_offset_ns: 0,
            on_cpu_ns: Some(us(on_cpu)),
            wait_ns: Some(us(wait)),
            timeslices: Some(timeslices),
            steal_ns: Some(us(steal)),
            cgroup_path: None,
            span_ns: us(window),
        }
    }

    #[test]
    fn a_cpus_steal_shared_by_its_workers_cancels_on_that_cpu_before_any_is_called_blocked() {
        // The probe's slice: one 10 ms steal tick on CPU 0 split 5.3 / 4.7 ms by time on it,
        // while the steal in A's turn was already in B's wait.
        let a = worker(0, [32_000, 11_700, 10_300, 5_300], 3);
        let b = worker(0, [32_000, 10_200, 21_600, 4_700], 3);
        assert_eq!(a.blocked_ns(0), Some(4_700_000), "A's own row");
        assert_eq!(b.blocked_ns(0), Some(0));
        assert_eq!(blocked_ns_on_cpus([&a, &b], 0), Some(200_000), "together on CPU 0");
        // A CPU's over-count does not hide another CPU's block.
        let c = worker(1, [32_000, 20_000, 0, 0], 4);
        assert_eq!(blocked_ns_on_cpus([&a, &b, &c], 0), Some(12_200_000));
    }

    #[test]
    fn a_worker_never_taken_off_its_cpu_was_not_blocked() {
        // 2.86 ms of a 25.7 ms window unaccounted, steal under /proc/stat's tick: never off its
        // CPU after its wake, so not blocked; put on it again after a sleep, it was.
        let alone = worker(1, [25_690, 22_830, 0, 0], 1);
        assert_eq!(alone.blocked_ns(0), Some(0));
        assert_eq!(blocked_ns_on_cpus([&alone], 0), Some(0));
        let slept = worker(1, [25_690, 22_830, 0, 0], 2);
        assert_eq!(slept.blocked_ns(0), Some(2_860_000));
    }
}
