//! A run's results as every exporter reads them: the measurements, the per-placement
//! statistics over repetitions, the ratio to the baseline, and the typed warnings.

pub mod environment;
#[cfg(test)]
pub mod fixture;
pub mod warnings;

use crate::cgroup::Leaf;
use crate::cgroup::tree::AppliedKnob;
use crate::plan::{Placement, Plan};
use crate::run::{PlacementRun, WorkerResult};
use crate::stats;
use crate::workload::Unit;
pub use environment::Environment;
pub use warnings::Warning;

/// One placement measured once.
#[derive(Debug, Clone)]
pub struct Measurement {
    pub placement: Placement,
    pub leaf: Leaf,
    /// Workers in this measurement (the --tasks sweep's count).
    pub tasks: usize,
    pub repetition: u32,
    /// Position of this measurement in the run (0-based), so the interleaving can be checked.
    pub sequence: usize,
    pub run: PlacementRun,
}

impl Measurement {
    pub fn faults_per_sec(&self) -> f64 {
        self.run.loop_faults() as f64 / self.run.elapsed_s()
    }
}

#[derive(Debug, Clone)]
pub struct Failure {
    pub placement: Placement,
    pub tasks: usize,
    pub repetition: u32,
    pub reason: String,
}

pub struct Report {
    /// What was asked for: the exporters print its settings.
    pub plan: Plan,
    pub env: Environment,
    /// Every knob file written, with the value the kernel reads back.
    pub knobs: Vec<AppliedKnob>,
    /// Where the file workloads' files were, and on which filesystem.
    pub files: Option<String>,
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
}

impl Report {
    /// The baseline's name: `root` in the hierarchy's true root, `base` anywhere else.
    pub fn baseline_name(&self) -> &str {
        self.plan.placements.iter().find(|p| p.is_root()).map(|p| p.name.as_str()).unwrap_or("baseline")
    }

    /// This placement's rate divided by the baseline's rate in the same repetition and task count.
    pub fn ratio_vs_baseline(&self, measurement: &Measurement) -> Option<f64> {
        if measurement.run.overran {
            return None;
        }
        let root = self.measurements.iter().find(|m| {
            m.placement.is_root() && m.repetition == measurement.repetition && m.tasks == measurement.tasks
        })?;
        if root.run.overran {
            return None;
        }
        let root_rate = root.faults_per_sec();
        (root_rate > 0.0).then(|| measurement.faults_per_sec() / root_rate)
    }

    /// The placement's measurements at a task count that the statistics may use: a slice that
    /// overran its time (stopped, starved) is in the CSV, flagged, but in no mean or ratio.
    pub fn of(&self, placement: &Placement, tasks: usize) -> impl Iterator<Item = &Measurement> {
        self.measurements.iter().filter(move |m| &m.placement == placement && m.tasks == tasks && !m.run.overran)
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

    /// Statistics per task count and placement over the repetitions, in the plan's order.
    pub fn summaries(&self) -> Vec<PlacementSummary<'_>> {
        let mut summaries = Vec::new();
        for tasks in self.task_counts() {
            for placement in &self.plan.placements {
                let rates: Vec<f64> = self.of(placement, tasks).map(Measurement::faults_per_sec).collect();
                let Some(rate) = stats::summarize(&rates) else { continue };
                let overheads: Vec<f64> = self
                    .of(placement, tasks)
                    .filter_map(|m| self.ratio_vs_baseline(m).and_then(stats::overhead))
                    .collect();
                let mean_seconds = |get: fn(&WorkerResult) -> u64| {
                    let runs: Vec<f64> = self
                        .of(placement, tasks)
                        .map(|m| m.run.workers.iter().map(get).sum::<u64>() as f64 / 1e6)
                        .collect();
                    runs.iter().sum::<f64>() / runs.len() as f64
                };
                summaries.push(PlacementSummary {
                    placement,
                    tasks,
                    cgroup_path: &self.of(placement, tasks).next().expect("summarized").leaf.cgroup_path,
                    faults_per_sec: rate,
                    overhead_vs_baseline: if placement.is_root() { None } else { stats::ratio_interval(&overheads) },
                    user_s: mean_seconds(|w| w.user_us),
                    sys_s: mean_seconds(|w| w.sys_us),
                    vs_linear: None,
                });
            }
        }
        // Scalability as will-it-scale's `linear`: the rate at N tasks over the smallest task
        // count's rate scaled to N, where a placement was measured at several counts.
        let vs_linear: Vec<Option<f64>> = summaries
            .iter()
            .map(|summary| {
                let same: Vec<&PlacementSummary> =
                    summaries.iter().filter(|s| s.placement == summary.placement).collect();
                let base = same.iter().min_by_key(|s| s.tasks)?;
                (same.len() > 1 && base.faults_per_sec.mean > 0.0).then(|| {
                    summary.faults_per_sec.mean / (base.faults_per_sec.mean * summary.tasks as f64 / base.tasks as f64)
                })
            })
            .collect();
        for (summary, ratio) in summaries.iter_mut().zip(vs_linear) {
            summary.vs_linear = ratio;
        }
        summaries
    }
}

/// One placement over all its repetitions.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PlacementSummary<'a> {
    #[serde(serialize_with = "placement_name")]
    pub placement: &'a Placement,
    pub tasks: usize,
    pub cgroup_path: &'a str,
    pub faults_per_sec: stats::Summary,
    /// Root rate / this rate, per repetition, with its 95% interval.
    pub overhead_vs_baseline: Option<stats::RatioInterval>,
    /// Workers' user and system CPU seconds, summed over workers, mean over repetitions.
    pub user_s: f64,
    pub sys_s: f64,
    /// Rate over (the smallest task count's rate x tasks / that count); None without a sweep.
    pub vs_linear: Option<f64>,
}

fn placement_name<S: serde::Serializer>(placement: &&Placement, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&placement.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixture::synthetic_report;

    #[test]
    fn summaries_and_ratios_come_from_paired_repetitions() {
        let report = synthetic_report(&[(100_000.0, 90_000.0), (110_000.0, 100_000.0), (105_000.0, 95_000.0)]);
        let placements = [Placement::root(), Placement::plain("child".into(), 1)];
        let summaries = report.summaries();
        assert_eq!(summaries[0].faults_per_sec.mean, 105_000.0);
        assert!(summaries[0].overhead_vs_baseline.is_none());
        let overhead = summaries[1].overhead_vs_baseline.unwrap();
        let expected = (100.0 / 90.0 + 110.0 / 100.0 + 105.0 / 95.0) / 3.0;
        assert!((overhead.mean - expected).abs() < 1e-9, "{} vs {expected}", overhead.mean);
        assert!(overhead.excludes(1.0));
        let child_first = report.of(&placements[1], 2).next().unwrap();
        assert!((report.ratio_vs_baseline(child_first).unwrap() - 0.9).abs() < 1e-12);
    }
}
