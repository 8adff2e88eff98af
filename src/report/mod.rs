//! A run's results as every exporter reads them: the measurements, which of them count, each
//! slice's ratios to the baseline in its round, and the typed warnings. The per-placement
//! statistics over the rounds (the estimator's summaries) are summary.rs.

pub mod environment;
#[cfg(test)]
pub mod fixture;
pub mod judging;
pub mod levels;
pub mod locks;
mod summary;
pub mod warnings;

use crate::cgroup::Leaf;
use crate::cgroup::tree::AppliedKnob;
use crate::plan::{Placement, Plan};
use crate::run::SliceResult;
use crate::stats;
use crate::workload::Unit;
pub use environment::{Environment, RunId};
pub use summary::{FixedWork, MeanInterval, PlacementSummary};
pub use warnings::Warning;

/// One placement measured once.
#[derive(Debug, Clone)]
pub struct Measurement {
    pub placement: Placement,
    pub leaf: Leaf,
    /// Workers in this measurement (the --tasks sweep's count).
    pub tasks: usize,
    pub round: u32,
    /// The crew generation (1-based) that measured it: its own workers and its own cgroups,
    /// the unit the run's intervals are taken over (`stats::unit_mean`).
    pub generation: u32,
    /// Position of this measurement in the run (0-based), so the interleaving can be checked.
    pub sequence: usize,
    /// What the slice measured: its workers' counters, the memcg's, samples, harness times.
    pub result: SliceResult,
    /// false for a slice of the round a stop signal cut short: kept and written, flagged, in
    /// no figure (its round's other placements were never measured against it).
    pub round_complete: bool,
}

/// A slice in which a worker spent more than this share of the slice runnable but waiting for
/// its CPU was disturbed: what ran in its place also took its caches, so its cost per fault is
/// inflated (scripts/bench-noise). The hypervisor's steal is not counted here: /proc/stat
/// counts it in 10 ms ticks, a tenth of a slice.
pub const DISTURBED_SHARE: f64 = 0.02;

/// The disturbed slices are left out only while they are at most this share of a task
/// count's slices; past it (a steady neighbour on every CPU) every slice counts, disturbed
/// alike, and the table says so.
pub const DISTURBED_LEFT_OUT_UP_TO: f64 = 0.5;

/// Disturbed slices are left out only where at least this many rounds were measured whole.
pub const MIN_ROUNDS_TO_LEAVE_OUT: u32 = 10;

impl Measurement {
    /// A figure of this slice in its place in the run: its generation and round.
    pub fn placed(&self, value: f64) -> crate::stats::Placed {
        crate::stats::Placed { unit: self.generation, round: self.round, value }
    }

    /// The largest share of the slice any worker spent runnable but waiting for its CPU
    /// (schedstat's run_delay). None without schedstat, or where workers share a CPU by design
    /// (more tasks than CPUs: each waits its turn).
    pub fn disturbance(&self) -> Option<f64> {
        Some(self.wait_shares()?.fold(0.0, f64::max))
    }

    /// How many workers waited for their CPU over `DISTURBED_SHARE` of the slice (one makes it
    /// disturbed); None where `disturbance` is.
    pub fn disturbed_workers(&self) -> Option<usize> {
        Some(self.wait_shares()?.filter(|share| *share > DISTURBED_SHARE).count())
    }

    /// Each worker's share of the slice spent runnable but waiting for its CPU; None without
    /// schedstat, or where workers share a CPU by design.
    fn wait_shares(&self) -> Option<impl Iterator<Item = f64> + '_> {
        let workers = &self.result.workers;
        let mut cpus: Vec<usize> = workers.iter().map(|w| w.cpu).collect();
        cpus.sort_unstable();
        cpus.dedup();
        if cpus.len() < workers.len() || workers.iter().any(|w| w.wait_ns.is_none()) {
            return None;
        }
        let span = self.result.elapsed_ns.max(1) as f64;
        Some(workers.iter().map(move |w| w.wait_ns.unwrap_or(0) as f64 / span))
    }

    pub fn disturbed(&self) -> bool {
        self.disturbance().is_some_and(|share| share > DISTURBED_SHARE)
    }

    pub fn faults_per_sec(&self) -> f64 {
        self.result.loop_faults() as f64 / self.result.elapsed_s()
    }

    /// --locks: the crew's lock contentions per 1,000 operations (the loop's units); None
    /// where not counted or no operation was done.
    pub fn lock_contentions_per_kop(&self) -> Option<f64> {
        let operations = self.result.loop_faults();
        (operations > 0).then(|| self.result.locks.as_ref().map(|l| l.contentions as f64 * 1e3 / operations as f64))?
    }

    /// --locks: the crew's wait in lock contentions, ns per operation.
    pub fn lock_wait_ns_per_op(&self) -> Option<f64> {
        let operations = self.result.loop_faults();
        (operations > 0).then(|| self.result.locks.as_ref().map(|l| l.wait_ns as f64 / operations as f64))?
    }

    /// Wall-clock nanoseconds one worker spends per fault (per unit) in this slice; None for a
    /// rate of zero.
    pub fn ns_per_fault(&self) -> Option<f64> {
        stats::ns_per_unit(self.faults_per_sec(), self.result.workers.len())
    }

    /// The workers' time on their CPUs over the measured span, summed; None where one worker's
    /// could not be read.
    pub fn on_cpu_ns(&self) -> Option<u64> {
        self.result.workers.iter().map(|w| w.on_cpu_ns).sum()
    }

    /// The cost of a fault: the workers' on-CPU nanoseconds over the faults they took. Time
    /// taken by other load, stops and steal does not enter it. None without on-CPU times or faults.
    pub fn cpu_ns_per_fault(&self) -> Option<f64> {
        let faults = self.result.loop_faults();
        (faults > 0).then_some(())?;
        Some(self.on_cpu_ns()? as f64 / faults as f64)
    }

    /// Where the workers' time went over the slice, summed over the workers.
    pub fn time_split(&self) -> Option<TimeSplit> {
        let workers = &self.result.workers;
        let span_ns = self.result.elapsed_ns;
        let blocked_ns = crate::run::blocked_ns_on_cpus(workers, span_ns)?;
        Some(TimeSplit {
            span_s: (span_ns * workers.len() as u64) as f64 / 1e9,
            on_cpu_s: self.on_cpu_ns()? as f64 / 1e9,
            wait_s: workers.iter().map(|w| w.wait_ns).sum::<Option<u64>>()? as f64 / 1e9,
            blocked_s: blocked_ns as f64 / 1e9,
            steal_s: workers.iter().map(|w| w.steal_ns).sum::<Option<u64>>().map(|ns| ns as f64 / 1e9),
        })
    }
}

/// A slice's worker-seconds: on a CPU, runnable but waiting for one (other load), and the rest,
/// blocked (sleeping in reclaim, I/O, on locks) or stopped; and the hypervisor's steal of the
/// CPUs used.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct TimeSplit {
    /// The measured span times the workers.
    pub span_s: f64,
    pub on_cpu_s: f64,
    pub wait_s: f64,
    pub blocked_s: f64,
    pub steal_s: Option<f64>,
}

impl TimeSplit {
    pub fn share(&self, seconds: f64) -> f64 {
        if self.span_s > 0.0 { seconds / self.span_s } else { 0.0 }
    }
}

/// LKP's will-it-scale names for the same figures, so a reply on the list can quote them.
pub mod lkp {
    /// The name of the mean rate per task: per_process_ops, or per_thread_ops for `--mode
    /// thread` (`mode` as the outputs name it).
    pub fn per_task_metric(mode: &str) -> &'static str {
        if mode == "thread" { "per_thread_ops" } else { "per_process_ops" }
    }

    /// The mean rate per task.
    pub fn per_task_ops(rate: f64, tasks: usize) -> f64 {
        rate / tasks as f64
    }

    /// The rate over linear scaling (`stats::vs_linear`) at the largest task count of a sweep.
    pub const SCALABILITY: &str = "scalability";
}

#[derive(Debug, Clone)]
pub struct Failure {
    pub placement: Placement,
    pub tasks: usize,
    pub round: u32,
    pub reason: String,
}

fn counts(m: &Measurement, leave_out_disturbed: bool) -> bool {
    !m.result.overran && m.round_complete && !(leave_out_disturbed && m.disturbed())
}

/// One memcg counter, read from a slice's counters.
pub type MemcgCounter = fn(&crate::measure::memcg::Counters) -> Option<u64>;

pub struct Report {
    /// What was asked for: the exporters print its settings.
    pub plan: Plan,
    pub env: Environment,
    /// Every knob file written, with the value the kernel reads back.
    pub knobs: Vec<AppliedKnob>,
    /// Where the file workloads' files were, and on which filesystem.
    pub files: Option<String>,
    /// That filesystem alone (tmpfs, ext4, ...), for the CSV.
    pub files_fs: Option<String>,
    /// What the rates count: faults, or loops for mmap-file.
    pub unit: Unit,
    pub measurements: Vec<Measurement>,
    pub failures: Vec<Failure>,
    pub warnings: Vec<Warning>,
    /// Cgroups the run made but could not remove (a process was moved into one), with the
    /// reason; the measurements are good and are written all the same.
    pub removal_error: Option<String>,
    /// The stop signal that ended the run early, if one did.
    pub interrupted: Option<i32>,
    /// False while the run is still going (a checkpoint written between slices).
    pub finished: bool,
    /// `leaves_out_disturbed` per task count, for the measurements as they were when it was
    /// worked out: every figure asks it of every slice.
    pub leave_out_memo: std::cell::RefCell<LeaveOutMemo>,
    /// Every per-slice warning (`warnings` says the worst of each kind once): --verbose prints
    /// them.
    pub slice_warnings: Vec<Warning>,
}

/// What `leaves_out_disturbed` found, and for which state of the measurements.
#[derive(Debug, Default)]
pub struct LeaveOutMemo {
    /// (measurements, interrupted): the state it holds for.
    state: (usize, bool),
    by_tasks: Vec<(usize, bool)>,
    /// The baseline's measurement of each (task count, round), by index: one lookup a slice,
    /// not a search of every slice (quadratic in slices at an LKP job's 4,000 rounds).
    baselines: Option<std::collections::HashMap<(usize, u32), usize>>,
}

/// What a result file is, recorded in it (`run_state` in the CSV, `state` in the JSON): a
/// checkpoint of a run still going, a run a signal stopped, one in which slices failed, or a
/// complete one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunState {
    Running,
    Stopped { signal: i32 },
    Failed { reason: String },
    Complete,
}

impl RunState {
    /// The word the files hold.
    pub fn name(&self) -> &'static str {
        match self {
            RunState::Running => "running",
            RunState::Stopped { .. } => "stopped",
            RunState::Failed { .. } => "failed",
            RunState::Complete => "complete",
        }
    }

    /// Why a run stopped or failed (`SIGTERM`, the first failure), for the CSV; else empty.
    pub fn reason(&self) -> String {
        match self {
            RunState::Stopped { signal } => crate::text::signal_name(*signal),
            RunState::Failed { reason } => reason.clone(),
            RunState::Running | RunState::Complete => String::new(),
        }
    }
}

impl Report {
    /// Whether every slice asked for was measured: finished, and not stopped by a signal.
    pub fn complete(&self) -> bool {
        self.finished && self.interrupted.is_none()
    }

    /// What a file written from this report is: a checkpoint while the run goes on, then how
    /// it ended (slices that failed make it failed, the first of them named, with the count).
    pub fn state(&self) -> RunState {
        if let Some(signal) = self.interrupted {
            return RunState::Stopped { signal };
        }
        if !self.finished {
            return RunState::Running;
        }
        match self.failures.first() {
            Some(first) => RunState::Failed {
                reason: format!(
                    "{} failed, the first {} {} at {}: {}",
                    crate::text::plural(self.failures.len(), "slice"),
                    first.placement.name,
                    self.plan.slice_name(first.round),
                    crate::text::plural(first.tasks, "task"),
                    first.reason
                ),
            },
            None => RunState::Complete,
        }
    }

    /// The baseline's name: `root` in the hierarchy's true root, `base` anywhere else.
    pub fn baseline_name(&self) -> &str {
        self.plan.placements.iter().find(|p| p.is_baseline()).map(|p| p.name.as_str()).unwrap_or("baseline")
    }

    /// This slice's overhead: its CPU ns per fault over the baseline's in the same round and
    /// task count. None (unknown) for the baseline itself, a slice not counted (or whose
    /// baseline is not), one without faults, and where either side lacks on-CPU times: the
    /// throughput ratio, which stands beside it, counts time off the CPU too and is not put in
    /// its place (`overhead_unknown` says where).
    pub fn overhead_vs_baseline(&self, measurement: &Measurement) -> Option<f64> {
        if measurement.placement.is_baseline() {
            return None;
        }
        self.cpu_cost_ratio(measurement)
    }

    /// The slices of `placement` at `tasks` that count but whose overhead is unknown for want
    /// of on-CPU times (theirs or their baseline's): (those, all counted).
    pub fn overhead_unknown(&self, placement: &Placement, tasks: usize) -> (usize, usize) {
        let counted: Vec<&Measurement> = self.of(placement, tasks).filter(|m| self.baseline_of(m).is_some()).collect();
        let lacking = counted
            .iter()
            .filter(|m| m.on_cpu_ns().is_none() || self.baseline_of(m).is_some_and(|b| b.on_cpu_ns().is_none()))
            .count();
        (lacking, counted.len())
    }

    /// The throughput ratio: the baseline's rate over this placement's in the same round
    /// (what a wall clock says, time off the CPU included), beside the overhead, never in its
    /// place.
    pub fn throughput_vs_baseline(&self, measurement: &Measurement) -> Option<f64> {
        if measurement.placement.is_baseline() {
            return None;
        }
        self.rate_ratio(measurement).and_then(stats::inverse_rate_ratio)
    }

    /// This slice's cost per fault on CPU over the baseline's in the same round.
    fn cpu_cost_ratio(&self, measurement: &Measurement) -> Option<f64> {
        let baseline = self.baseline_of(measurement)?;
        let cost = measurement.cpu_ns_per_fault()?;
        let baseline_cost = baseline.cpu_ns_per_fault()?;
        (baseline_cost > 0.0 && cost > 0.0).then(|| cost / baseline_cost)
    }

    /// The baseline's slice in the same round and at the same task count, where both count
    /// (`counted`: not overran, not of a round cut short, not disturbed while those are few).
    fn baseline_of(&self, measurement: &Measurement) -> Option<&Measurement> {
        if !self.counted(measurement) {
            return None;
        }
        let index = {
            let state = (self.measurements.len(), self.interrupted.is_some());
            let mut memo = self.leave_out_memo.borrow_mut();
            if memo.state != state {
                *memo = LeaveOutMemo { state, ..LeaveOutMemo::default() };
            }
            let baselines = memo.baselines.get_or_insert_with(|| {
                let mut baselines = std::collections::HashMap::new();
                for (index, m) in self.measurements.iter().enumerate().filter(|(_, m)| m.placement.is_baseline()) {
                    // The first, as the search this replaces found.
                    baselines.entry((m.tasks, m.round)).or_insert(index);
                }
                baselines
            });
            baselines.get(&(measurement.tasks, measurement.round)).copied()
        };
        index.map(|i| &self.measurements[i]).filter(|m| self.counted(m))
    }

    /// This placement's rate divided by the baseline's rate in the same round and task count.
    fn rate_ratio(&self, measurement: &Measurement) -> Option<f64> {
        let baseline_rate = self.baseline_of(measurement)?.faults_per_sec();
        (baseline_rate > 0.0).then(|| measurement.faults_per_sec() / baseline_rate)
    }

    /// The placement's measurements at a task count that the statistics may use (`counted`).
    pub fn of(&self, placement: &Placement, tasks: usize) -> impl Iterator<Item = &Measurement> {
        let leave_out = self.leaves_out_disturbed(tasks);
        self.measurements.iter().filter(move |m| &m.placement == placement && m.tasks == tasks && counts(m, leave_out))
    }

    /// Whether a slice enters the means and ratios. A slice that overran its time (stopped,
    /// starved), one of a round a stop signal cut short, and a disturbed one (while disturbed
    /// slices are a minority at its task count) is in the CSV, flagged, but in no figure.
    pub fn counted(&self, m: &Measurement) -> bool {
        counts(m, self.leaves_out_disturbed(m.tasks))
    }

    /// Whether disturbed slices are left out at `tasks`: in runs of MIN_ROUNDS_TO_LEAVE_OUT
    /// rounds or more, while they are at most DISTURBED_LEFT_OUT_UP_TO of its slices.
    pub fn leaves_out_disturbed(&self, tasks: usize) -> bool {
        // A run of a few slices (a smoke test) keeps them all: leaving one out could leave a
        // placement with no figure at all.
        // Slices are only added, and a round is only flagged cut short as the stop is noted.
        let state = (self.measurements.len(), self.interrupted.is_some());
        let mut memo = self.leave_out_memo.borrow_mut();
        if memo.state != state {
            *memo = LeaveOutMemo { state, ..LeaveOutMemo::default() };
        }
        if let Some(&(_, leave_out)) = memo.by_tasks.iter().find(|(t, _)| *t == tasks) {
            return leave_out;
        }
        let leave_out = self.disturbed_are_few(tasks);
        memo.by_tasks.push((tasks, leave_out));
        leave_out
    }

    fn disturbed_are_few(&self, tasks: usize) -> bool {
        // Rounds measured whole at this task count: a run stopped early has fewer than planned.
        let mut rounds: Vec<u32> =
            self.measurements.iter().filter(|m| m.tasks == tasks && m.round_complete).map(|m| m.round).collect();
        rounds.sort_unstable();
        rounds.dedup();
        if rounds.len() < MIN_ROUNDS_TO_LEAVE_OUT as usize {
            return false;
        }
        let slices = || self.measurements.iter().filter(|m| m.tasks == tasks && !m.result.overran && m.round_complete);
        let disturbed = slices().filter(|m| m.disturbed()).count();
        disturbed as f64 <= DISTURBED_LEFT_OUT_UP_TO * slices().count() as f64
    }

    /// CPU nanoseconds one worker spends per fault in a slice: the measured on-CPU time, or
    /// where that is missing wall time per fault times the worker's CPU share (rusage).
    fn profile_cpu_ns_per_fault(m: &Measurement) -> Option<f64> {
        if let Some(cost) = m.cpu_ns_per_fault() {
            return Some(cost);
        }
        let per_task = m.faults_per_sec() / m.result.workers.len() as f64;
        let on_cpu = m.result.workers.iter().map(|w| w.cpu_share.min(1.0)).sum::<f64>() / m.result.workers.len() as f64;
        (per_task > 0.0).then(|| 1e9 / per_task * on_cpu)
    }

    /// A slice's memcg cost in ns per fault: the memcg family's share of the perf samples times the
    /// CPU time per fault.
    pub fn memcg_ns_per_fault(m: &Measurement) -> Option<f64> {
        Some(m.result.profile.as_ref()?.memcg_share()? * Self::profile_cpu_ns_per_fault(m)?)
    }

    /// The task counts measured, in sweep order.
    pub fn task_counts(&self) -> Vec<usize> {
        let mut counts: Vec<usize> = Vec::new();
        for m in &self.measurements {
            if !counts.contains(&m.tasks) {
                counts.push(m.tasks);
            }
        }
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::stacks::ProfileCounts;
    use fixture::synthetic_report;

    #[test]
    fn a_sibling_is_one_entry_across_the_generations_that_made_it_anew() {
        // Two rounds, each of its own generation: sibling1 and sibling2 under g1, then under g2.
        let mut report = synthetic_report(&[(100_000.0, 90_000.0), (100_000.0, 80_000.0)]);
        for m in report.measurements.iter_mut().filter(|m| !m.placement.is_baseline()) {
            m.generation = m.round;
            for (index, worker) in m.result.workers.iter_mut().enumerate() {
                worker.cgroup_path = Some(format!("/base/fs-siblings2-g{}/sibling{}", m.round, index + 1));
            }
        }
        let child = report.plan.placements[1].clone();
        let rates = report.per_cgroup(&child, 2);
        let names: Vec<(&str, usize)> = rates.iter().map(|r| (r.cgroup_path.as_str(), r.tasks)).collect();
        assert_eq!(names, [("/base/fs-siblings2-g1/sibling1", 1), ("/base/fs-siblings2-g1/sibling2", 1)]);
        // Each the mean over both slices of its half: together the placement's mean rate.
        let sum: f64 = rates.iter().map(|r| r.faults_per_sec).sum();
        assert!((sum - 85_000.0).abs() < 1.0, "{sum}");
    }

    #[test]
    fn the_memcg_cost_interval_stops_at_zero() {
        // Two slices, memcg 1% and 40% of the samples: the t interval (t = 12.7 at 1 degree of
        // freedom) reaches far below 0 ns, which no cost can be.
        let mut report = synthetic_report(&[(100_000.0, 90_000.0), (100_000.0, 90_000.0)]);
        for (index, m) in report.measurements.iter_mut().enumerate() {
            let memcg_samples = if index < 2 { 10 } else { 400 };
            m.result.profile = Some(ProfileCounts { samples: 1000, memcg_samples, ..Default::default() });
        }
        let summaries = report.summaries();
        let memcg = summaries[1].memcg.as_ref().unwrap();
        assert!(memcg.ns_per_fault > 0.0);
        assert_eq!(memcg.low, Some(0.0));
        assert!(memcg.high.unwrap() > 2.0 * memcg.ns_per_fault);
    }

    /// A report of `rounds` rounds whose slices listed in `disturbed` (measurement indexes)
    /// waited 10% of the slice for their CPU; the others 0.1%.
    fn with_waits(rounds: usize, disturbed: &[usize]) -> Report {
        let mut report = synthetic_report(&vec![(100_000.0, 90_000.0); rounds]);
        report.plan.slices = rounds as u32;
        for (index, m) in report.measurements.iter_mut().enumerate() {
            let wait = if disturbed.contains(&index) { 200_000_000 } else { 2_000_000 };
            for worker in &mut m.result.workers {
                (worker.on_cpu_ns, worker.wait_ns) = (Some(1_800_000_000), Some(wait));
            }
        }
        report
    }

    #[test]
    fn disturbed_slices_are_left_out_while_a_minority_of_a_long_enough_run() {
        let report = with_waits(12, &[1, 3, 5]);
        assert!(report.leaves_out_disturbed(2));
        assert!(!report.counted(&report.measurements[1]) && report.counted(&report.measurements[0]));
        let child = &report.summaries()[1];
        assert_eq!(child.faults_per_sec.n, 9);
        assert!((child.counted_share.unwrap() - 0.75).abs() < 1e-9);
        // Their baselines' ratios go with them: 9 rounds pair.
        assert_eq!(child.overhead_vs_baseline.unwrap().n, 9);
        // Most slices disturbed: all count, disturbed alike.
        let busy = with_waits(12, &(0..14).collect::<Vec<_>>());
        assert!(!busy.leaves_out_disturbed(2));
        assert!(busy.measurements.iter().all(|m| busy.counted(m)));
        // A short run keeps every slice.
        let short = with_waits(4, &[1]);
        assert!(!short.leaves_out_disturbed(2) && short.counted(&short.measurements[1]));
    }

    #[test]
    fn summaries_and_ratios_come_from_paired_rounds() {
        let report = synthetic_report(&[(100_000.0, 90_000.0), (110_000.0, 100_000.0), (105_000.0, 95_000.0)]);
        let placements = [Placement::baseline(), Placement::plain("child".into(), 1)];
        let summaries = report.summaries();
        assert_eq!(summaries[0].faults_per_sec.mean, 105_000.0);
        assert!(summaries[0].overhead_vs_baseline.is_none());
        let expected = ((100.0f64 / 90.0).ln() + (110.0f64 / 100.0).ln() + (105.0f64 / 95.0).ln()) / 3.0;
        let expected = expected.exp();
        // No on-CPU times in the fixture: the overhead is unknown, the throughput ratio stands.
        assert!(summaries[1].overhead_vs_baseline.is_none());
        assert_eq!(report.overhead_unknown(&placements[1], 2), (3, 3));
        let throughput = summaries[1].throughput_vs_baseline.unwrap();
        assert!((throughput.mean - expected).abs() < 1e-9, "{} vs {expected}", throughput.mean);
        // Each worker on its CPU the whole slice: the CPU cost per fault goes as 1/rate, so the
        // overhead is the throughput ratio here.
        let mut report = report;
        for worker in report.measurements.iter_mut().flat_map(|m| m.result.workers.iter_mut()) {
            worker.on_cpu_ns = Some(2_000_000_000);
        }
        let overhead = report.summaries()[1].overhead_vs_baseline.unwrap();
        assert!((overhead.mean - expected).abs() < 1e-9, "{} vs {expected}", overhead.mean);
        assert!(overhead.excludes(1.0));
        assert_eq!(report.overhead_unknown(&placements[1], 2), (0, 3));
        let child_first = report.of(&placements[1], 2).next().unwrap();
        assert!((report.overhead_vs_baseline(child_first).unwrap() - 1.0 / 0.9).abs() < 1e-12);
        assert_eq!(report.overhead_vs_baseline(report.of(&placements[0], 2).next().unwrap()), None);
        // One baseline slice without: its round's overhead is unknown, the others' stand.
        report.measurements[0].result.workers[0].on_cpu_ns = None;
        assert_eq!(report.overhead_unknown(&placements[1], 2), (1, 3));
        assert_eq!(report.summaries()[1].overhead_vs_baseline.unwrap().n, 2);
    }
}
