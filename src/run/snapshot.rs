//! Every counter of a crew's workers at one instant, read the same way at both ends of a slice
//! with the workers parked (each worker's own reading at its park), and the difference of two such instants (`Snapshot::since`): pure
//! arithmetic, so a slice's figures are tested on made-up snapshots without root.

use crate::measure::memcg::{Counters, PsiScope};
use crate::measure::perf::PerfReading;
use crate::measure::procfs::SchedTimes;

/// One worker's fault and CPU-time counts from /proc: the thread's own in thread mode; in
/// process mode the process's plus what the children it waited for did (a forking workload's
/// children do its faulting).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskCounts {
    pub minflt: u64,
    pub user_us: u64,
    pub sys_us: u64,
}

#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Per worker: its loop counter.
    pub iterations: Vec<u64>,
    /// Per worker, None where /proc could not be read.
    pub counts: Vec<Option<TaskCounts>>,
    /// Per worker, where perf counts (empty where it does not).
    pub perf: Vec<PerfReading>,
    /// Per worker thread, its time on a CPU, waiting for one, and its turns on one.
    pub sched: Vec<Option<SchedTimes>>,
    /// Per worker in process mode, its waited-for children's CPU time; empty in thread mode.
    pub children_ns: Vec<Option<u64>>,
    /// Per worker, the window its reading ends: (its wake, its park), CLOCK_MONOTONIC ns.
    pub windows: Vec<(u64, u64)>,
    /// Per CPU number, the hypervisor's steal so far.
    pub steal_ns: Vec<Option<u64>>,
    pub memcg_pgfault: Option<u64>,
    pub memcg: Counters,
    pub psi_scope: Option<PsiScope>,
}

/// One worker's counters over a slice.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerDelta {
    pub iterations: u64,
    pub counts: Option<TaskCounts>,
    /// Its own time on its CPU plus its waited-for children's.
    pub on_cpu_ns: Option<u64>,
    pub wait_ns: Option<u64>,
    pub timeslices: Option<u64>,
    /// Its CPU's whole steal: divided among the CPU's workers later.
    pub cpu_steal_ns: Option<u64>,
    pub perf: Option<PerfReading>,
}

/// What a slice's workers and their memcg did between two snapshots.
#[derive(Debug, Clone, Default)]
pub struct Deltas {
    pub workers: Vec<WorkerDelta>,
    pub memcg_pgfault: Option<u64>,
    pub memcg: Counters,
    /// Whose stall time the memcg's psi is, as the later snapshot read it.
    pub psi_scope: Option<PsiScope>,
}

/// `after - before`, where both are known.
fn minus(after: Option<u64>, before: Option<u64>) -> Option<u64> {
    Some(after?.saturating_sub(before?))
}

impl Snapshot {
    /// Each worker's counts from `before` to `self`; `cpus[i]` is worker i's CPU, whose steal
    /// it is charged.
    pub fn since(&self, before: &Snapshot, cpus: &[usize]) -> Deltas {
        let workers = (0..self.iterations.len())
            .map(|index| {
                let sched = |s: &Snapshot| s.sched.get(index).copied().flatten();
                let (now, then) = (sched(self), sched(before));
                let children = |s: &Snapshot| s.children_ns.get(index).copied().flatten().unwrap_or(0);
                let counts = self.counts[index].zip(before.counts[index]).map(|(a, b)| TaskCounts {
                    minflt: a.minflt.saturating_sub(b.minflt),
                    user_us: a.user_us.saturating_sub(b.user_us),
                    sys_us: a.sys_us.saturating_sub(b.sys_us),
                });
                let steal = |s: &Snapshot| s.steal_ns.get(cpus[index]).copied().flatten();
                WorkerDelta {
                    iterations: self.iterations[index].saturating_sub(before.iterations[index]),
                    counts,
                    on_cpu_ns: now.zip(then).map(|(a, b)| {
                        a.on_cpu_ns.saturating_sub(b.on_cpu_ns) + children(self).saturating_sub(children(before))
                    }),
                    wait_ns: now.zip(then).and_then(|(a, b)| minus(a.wait_ns, b.wait_ns)),
                    timeslices: now.zip(then).and_then(|(a, b)| minus(a.timeslices, b.timeslices)),
                    cpu_steal_ns: minus(steal(self), steal(before)),
                    perf: self.perf.get(index).zip(before.perf.get(index)).map(|(a, b)| a.since(b)),
                }
            })
            .collect();
        Deltas {
            workers,
            memcg_pgfault: minus(self.memcg_pgfault, before.memcg_pgfault),
            memcg: self.memcg.since(&before.memcg),
            psi_scope: self.psi_scope,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sched(on_cpu_ns: u64, wait_ns: u64, timeslices: u64) -> Option<SchedTimes> {
        Some(SchedTimes { on_cpu_ns, wait_ns: Some(wait_ns), timeslices: Some(timeslices) })
    }

    fn counts(minflt: u64, user_us: u64, sys_us: u64) -> Option<TaskCounts> {
        Some(TaskCounts { minflt, user_us, sys_us })
    }

    fn two_workers(iterations: [u64; 2], on_cpu: [u64; 2], minflt: [u64; 2], steal: [u64; 2]) -> Snapshot {
        Snapshot {
            iterations: iterations.to_vec(),
            counts: vec![counts(minflt[0], 10, 20), counts(minflt[1], 30, 40)],
            sched: vec![sched(on_cpu[0], 5, 3), sched(on_cpu[1], 7, 4)],
            children_ns: Vec::new(),
            steal_ns: vec![Some(steal[0]), None, Some(steal[1])],
            memcg_pgfault: Some(1000 + minflt[0] + minflt[1]),
            ..Snapshot::default()
        }
    }

    #[test]
    fn since_is_each_counter_minus_its_earlier_value() {
        let before = two_workers([100, 200], [1_000, 2_000], [50, 60], [0, 10]);
        let after = two_workers([356, 712], [101_000, 202_000], [306, 572], [4, 30]);
        let deltas = after.since(&before, &[0, 2]);
        assert_eq!(deltas.workers[0].iterations, 256);
        assert_eq!(deltas.workers[1].iterations, 512);
        assert_eq!(deltas.workers[0].on_cpu_ns, Some(100_000));
        assert_eq!(deltas.workers[1].on_cpu_ns, Some(200_000));
        assert_eq!(deltas.workers[0].counts.map(|c| c.minflt), Some(256));
        // CPU 0's steal went 0 -> 4, CPU 2's 10 -> 30.
        assert_eq!(deltas.workers[0].cpu_steal_ns, Some(4));
        assert_eq!(deltas.workers[1].cpu_steal_ns, Some(20));
        assert_eq!(deltas.memcg_pgfault, Some(256 + 512));
        assert_eq!(deltas.workers[0].wait_ns, Some(0));
        assert_eq!(deltas.workers[0].timeslices, Some(0));
    }

    #[test]
    fn a_counter_missing_at_either_end_is_unknown_not_zero() {
        let before = two_workers([0, 0], [0, 0], [0, 0], [0, 0]);
        let mut after = two_workers([10, 10], [500, 500], [10, 10], [0, 0]);
        after.sched[1] = None;
        after.counts[0] = None;
        after.steal_ns.clear();
        after.memcg_pgfault = None;
        let deltas = after.since(&before, &[0, 2]);
        assert_eq!(deltas.workers[1].on_cpu_ns, None);
        assert_eq!(deltas.workers[1].wait_ns, None);
        assert_eq!(deltas.workers[0].counts, None);
        assert_eq!(deltas.workers[0].cpu_steal_ns, None);
        assert_eq!(deltas.memcg_pgfault, None);
        assert_eq!(deltas.workers[0].on_cpu_ns, Some(500));
    }

    #[test]
    fn process_mode_adds_the_waited_for_childrens_cpu_time() {
        let mut before = two_workers([0, 0], [1_000, 1_000], [0, 0], [0, 0]);
        let mut after = two_workers([4, 4], [2_000, 2_000], [0, 0], [0, 0]);
        before.children_ns = vec![Some(10_000), None];
        after.children_ns = vec![Some(60_000), None];
        let deltas = after.since(&before, &[0, 2]);
        assert_eq!(deltas.workers[0].on_cpu_ns, Some(1_000 + 50_000));
        assert_eq!(deltas.workers[1].on_cpu_ns, Some(1_000));
    }

    #[test]
    fn a_counter_that_went_backwards_counts_nothing() {
        // A perf counter reset or a steal column that restarted must not wrap to 2^64.
        let mut before = two_workers([5, 5], [900, 900], [9, 9], [50, 50]);
        let mut after = two_workers([5, 5], [800, 1_000], [3, 9], [40, 60]);
        before.perf = vec![PerfReading { page_faults: 10, ..Default::default() }; 2];
        after.perf = vec![
            PerfReading { page_faults: 4, ..Default::default() },
            PerfReading { page_faults: 14, ..Default::default() },
        ];
        let deltas = after.since(&before, &[0, 2]);
        assert_eq!(deltas.workers[0].on_cpu_ns, Some(0));
        assert_eq!(deltas.workers[0].counts.map(|c| c.minflt), Some(0));
        assert_eq!(deltas.workers[0].cpu_steal_ns, Some(0));
        assert_eq!(deltas.workers[0].perf.map(|p| p.page_faults), Some(0));
        assert_eq!(deltas.workers[1].perf.map(|p| p.page_faults), Some(4));
    }
}
