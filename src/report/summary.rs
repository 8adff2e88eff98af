//! Per placement and task count, the statistics over its rounds: the overhead's estimator
//! (`stats::overhead_interval` over each round's ratio), the rate, the time split, the memcg
//! cost and counters, siblings' rates: `Report::summaries`, what every exporter prints.

use std::collections::BTreeMap;

use super::{Measurement, MemcgCounter, Report, TimeSplit, lkp};
use crate::measure::stacks::{MEMCG_FAMILY_VERSION, ProfileCounts, is_memcg};
use crate::plan::Placement;
use crate::run::WorkerResult;
use crate::stats;

impl Report {
    /// `siblings:N` against one plain cgroup at the same depth and task count (`child`, when the
    /// run has it): the siblings' CPU ns per fault over child's, per round, summed up as every
    /// overhead is (`stats::overhead_interval`) with its 95% interval; unknown (None) without on-CPU times, as every overhead.
    /// This isolates the switching between memcgs from the depth.
    pub fn siblings_vs_child(&self, placement: &Placement, tasks: usize) -> Option<stats::RatioInterval> {
        if placement.siblings == 0 {
            return None;
        }
        let child = self.plan.placements.iter().find(|p| p.name == "child" && p.siblings == 0)?;
        let mut child_by_round: std::collections::HashMap<u32, &Measurement> = Default::default();
        for c in self.of(child, tasks) {
            child_by_round.entry(c.round).or_insert(c);
        }
        let ratios: Vec<stats::Placed> = self
            .of(placement, tasks)
            .filter_map(|m| {
                let child_cost = child_by_round.get(&m.round)?.cpu_ns_per_fault()?;
                let cost = m.cpu_ns_per_fault()?;
                (child_cost > 0.0).then(|| m.placed(cost / child_cost))
            })
            .collect();
        stats::overhead_interval(&ratios)
    }

    /// The share of a placement's measured time in slices that counted, and whether the
    /// disturbed ones were left out at this task count; None where nothing was measured.
    pub fn counted_share(&self, placement: &Placement, tasks: usize) -> Option<f64> {
        let all = || self.measurements.iter().filter(|m| &m.placement == placement && m.tasks == tasks);
        let measured: f64 = all().map(|m| m.result.elapsed_s()).sum();
        let counted: f64 = all().filter(|m| self.counted(m)).map(|m| m.result.elapsed_s()).sum();
        (measured > 0.0).then(|| counted / measured)
    }

    /// The placement's `--profile` perf samples over all its slices.
    pub fn profile_totals(&self, placement: &Placement, tasks: usize) -> Option<ProfileCounts> {
        let mut total: Option<ProfileCounts> = None;
        for m in self.of(placement, tasks) {
            total.get_or_insert_with(ProfileCounts::default).add(m.result.profile.as_ref()?);
        }
        total
    }

    fn memcg_cost(&self, placement: &Placement, tasks: usize) -> Option<MemcgCost> {
        let totals = self.profile_totals(placement, tasks)?;
        let per_slice: Vec<f64> = self.of(placement, tasks).filter_map(Self::memcg_ns_per_fault).collect();
        let ns = MeanInterval::of(&per_slice)?;
        Some(MemcgCost {
            share: totals.memcg_share()?,
            ns_per_fault: ns.mean,
            // A cost has no negative values: with few slices the t interval reaches below 0
            // (with 2 slices t is 12.7), so it is cut at 0 rather than printed below.
            low: ns.half_width.map(|h| (ns.mean - h).max(0.0)),
            high: ns.half_width.map(|h| ns.mean + h),
            samples: totals.samples,
            lost: totals.lost,
            family_version: MEMCG_FAMILY_VERSION,
            functions: totals.self_samples.keys().filter(|f| is_memcg(f)).cloned().collect(),
        })
    }

    /// Per function, the ns per fault a placement spends there beyond the baseline (negative:
    /// less), largest changes first: where its overhead goes.
    pub fn function_differences(&self, placement: &Placement, tasks: usize) -> Vec<(String, f64)> {
        let cost = |p: &Placement| -> Option<(ProfileCounts, f64)> {
            let totals = self.profile_totals(p, tasks)?;
            let ns: Vec<f64> = self.of(p, tasks).filter_map(Self::profile_cpu_ns_per_fault).collect();
            let mean = ns.iter().sum::<f64>() / ns.len().max(1) as f64;
            Some((totals, mean))
        };
        let Some(baseline) = self.plan.placements.iter().find(|p| p.is_baseline()) else { return Vec::new() };
        let (Some((base, base_ns)), Some((this, this_ns))) = (cost(baseline), cost(placement)) else {
            return Vec::new();
        };
        let ns_in = |counts: &ProfileCounts, ns: f64, function: &str| {
            counts.self_samples.get(function).copied().unwrap_or(0) as f64 / counts.samples.max(1) as f64 * ns
        };
        let mut functions: Vec<&String> = base.self_samples.keys().chain(this.self_samples.keys()).collect();
        functions.sort();
        functions.dedup();
        let mut differences: Vec<(String, f64)> =
            functions.into_iter().map(|f| (f.clone(), ns_in(&this, this_ns, f) - ns_in(&base, base_ns, f))).collect();
        differences.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
        differences
    }

    /// One of the memcg's counters summed over the placement's slices, if the kernel has it.
    pub fn memcg_total(&self, placement: &Placement, tasks: usize, counter: MemcgCounter) -> Option<u64> {
        self.of(placement, tasks).map(|m| counter(&m.result.memcg)).sum()
    }

    /// What the memcg did while a placement was measured, in words, where it did anything
    /// that changes a fault's cost: reclaim, limit hits, stalls.
    pub fn memcg_note(&self, placement: &Placement, tasks: usize) -> Option<String> {
        let total = |counter: MemcgCounter| self.memcg_total(placement, tasks, counter).filter(|v| *v > 0);
        let mut parts = Vec::new();
        if let Some(pages) = total(|c| c.stat.pgsteal) {
            parts.push(format!("{} pages reclaimed", crate::text::thousands(pages as f64)));
        } else if let Some(pages) = total(|c| c.stat.pgscan) {
            parts.push(format!("{} pages scanned for reclaim", crate::text::thousands(pages as f64)));
        }
        if let Some(hits) = total(|c| c.events.max) {
            parts.push(format!("its memory limit hit {} times", crate::text::thousands(hits as f64)));
        }
        if let Some(hits) = total(|c| c.events.high) {
            parts.push(format!("memory.high hit {} times", crate::text::thousands(hits as f64)));
        }
        if let Some(kills) = total(|c| c.events.oom_kill) {
            parts.push(format!("{} OOM kills", crate::text::thousands(kills as f64)));
        }
        let measured_us: f64 = self.of(placement, tasks).map(|m| m.result.elapsed_s() * 1e6).sum();
        if let Some(stalled) = total(|c| c.pressure.map(|p| p.some_us)) {
            let share = stalled as f64 / measured_us;
            let scope = self.of(placement, tasks).find_map(|m| m.result.psi_scope);
            if share >= 0.01 {
                let whose = if scope == Some(crate::measure::memcg::PsiScope::System) { " (system-wide)" } else { "" };
                parts.push(format!("{:.0}% of the time stalled on memory{whose}", 100.0 * share));
            }
        }
        (!parts.is_empty()).then(|| parts.join(", "))
    }

    /// `siblings:N`: each sibling cgroup's rate (its workers' units over the slice, mean over
    /// the slices), in sibling order. A sibling is one name (`sibling1`, ...) across the
    /// generations, each of which made its own; its path is the first generation's.
    pub fn per_cgroup(&self, placement: &Placement, tasks: usize) -> Vec<CgroupRate> {
        let mut rates: Vec<CgroupRate> = Vec::new();
        let measurements: Vec<&Measurement> = self.of(placement, tasks).collect();
        fn sibling(path: &str) -> &str {
            path.rsplit('/').next().unwrap_or(path)
        }
        for m in &measurements {
            for worker in &m.result.workers {
                let Some(path) = &worker.cgroup_path else { continue };
                let rate = worker.loop_faults as f64 / m.result.elapsed_s() / measurements.len() as f64;
                match rates.iter_mut().find(|r| sibling(&r.cgroup_path) == sibling(path)) {
                    Some(entry) => entry.faults_per_sec += rate,
                    None => rates.push(CgroupRate { cgroup_path: path.clone(), tasks: 0, faults_per_sec: rate }),
                }
            }
        }
        if let Some(first) = measurements.first() {
            for entry in &mut rates {
                let name = sibling(&entry.cgroup_path);
                entry.tasks = first
                    .result
                    .workers
                    .iter()
                    .filter(|w| w.cgroup_path.as_deref().is_some_and(|p| sibling(p) == name))
                    .count();
            }
        }
        rates.sort_by_key(|r| {
            let number = r.cgroup_path.rsplit("sibling").next().and_then(|n| n.parse::<u32>().ok());
            (number, r.cgroup_path.clone())
        });
        rates
    }

    /// The cost per fault on CPU over the counted slices (the table's figure and its `+-`);
    /// None where a slice has none.
    fn cpu_cost(&self, placement: &Placement, tasks: usize) -> Option<stats::Summary> {
        let costs: Vec<f64> = self.of(placement, tasks).map(Measurement::cpu_ns_per_fault).collect::<Option<_>>()?;
        stats::summarize(&costs)
    }

    /// The placement's CPU ns per fault over the baseline's in each counted round that has
    /// both, in its place: what `stats::overhead_interval` sums up.
    pub fn overhead_ratios(&self, placement: &Placement, tasks: usize) -> Vec<stats::Placed> {
        self.of(placement, tasks).filter_map(|m| Some(m.placed(self.overhead_vs_baseline(m)?))).collect()
    }

    fn throughput_interval(&self, placement: &Placement, tasks: usize) -> Option<stats::RatioInterval> {
        let ratios: Vec<stats::Placed> =
            self.of(placement, tasks).filter_map(|m| Some(m.placed(self.throughput_vs_baseline(m)?))).collect();
        stats::overhead_interval(&ratios)
    }

    /// The placement's time split over all its slices (None where a slice has none).
    fn time_split(&self, placement: &Placement, tasks: usize) -> Option<TimeSplit> {
        let mut total: Option<TimeSplit> = None;
        for split in self.of(placement, tasks).map(Measurement::time_split) {
            let split = split?;
            total = Some(match total {
                None => split,
                Some(t) => TimeSplit {
                    span_s: t.span_s + split.span_s,
                    on_cpu_s: t.on_cpu_s + split.on_cpu_s,
                    wait_s: t.wait_s + split.wait_s,
                    blocked_s: t.blocked_s + split.blocked_s,
                    steal_s: t.steal_s.zip(split.steal_s).map(|(a, b)| a + b),
                },
            });
        }
        total
    }

    /// Statistics per task count and placement over the rounds, in the plan's order.
    pub fn summaries(&self) -> Vec<PlacementSummary<'_>> {
        let mut summaries = Vec::new();
        for tasks in self.task_counts() {
            for placement in &self.plan.placements {
                let rates: Vec<f64> = self.of(placement, tasks).map(Measurement::faults_per_sec).collect();
                let Some(rate) = stats::summarize(&rates) else { continue };
                let overheads = self.overhead_ratios(placement, tasks);
                let total_us = |get: fn(&WorkerResult) -> u64| -> u64 {
                    self.of(placement, tasks).map(|m| m.result.workers.iter().map(get).sum::<u64>()).sum()
                };
                let (user_us, sys_us) = (total_us(|w| w.user_us), total_us(|w| w.sys_us));
                let on_cpu: Option<Vec<f64>> = self
                    .of(placement, tasks)
                    .map(|m| m.result.workers.iter().map(|w| w.on_cpu_ns.map(|ns| ns as f64 / 1e9)).sum())
                    .collect();
                let fixed_work = self.plan.workload.fixed_iterations.and_then(|iterations| {
                    let elapsed: Vec<f64> = self.of(placement, tasks).map(|m| m.result.elapsed_s()).collect();
                    let sys: Vec<f64> = self
                        .of(placement, tasks)
                        .map(|m| m.result.workers.iter().map(|w| w.sys_us).sum::<u64>() as f64 / 1e6)
                        .collect();
                    Some(FixedWork {
                        iterations_per_task: iterations,
                        elapsed_s: MeanInterval::of(&elapsed)?,
                        sys_s: MeanInterval::of(&sys)?,
                    })
                });
                let cpu_cost = self.cpu_cost(placement, tasks);
                summaries.push(PlacementSummary {
                    per_cgroup: self.per_cgroup(placement, tasks),
                    siblings_vs_child: self.siblings_vs_child(placement, tasks),
                    fixed_work,
                    lkp: BTreeMap::new(),
                    placement,
                    tasks,
                    cgroup_path: &self.of(placement, tasks).next().expect("summarized").leaf.cgroup_path,
                    faults_per_sec: rate,
                    overhead_vs_baseline: stats::overhead_interval(&overheads),
                    counted_share: self.counted_share(placement, tasks),
                    memcg: self.memcg_cost(placement, tasks),
                    locks: self.lock_summary(placement, tasks),
                    ns_per_fault: stats::ns_per_unit(rate.mean, tasks),
                    cpu_ns_per_fault: cpu_cost.map(|cost| cost.mean),
                    cpu_ns_per_fault_stats: cpu_cost,
                    throughput_vs_baseline: self.throughput_interval(placement, tasks),
                    time: self.time_split(placement, tasks),
                    on_cpu_s: on_cpu.filter(|s| !s.is_empty()).map(|s| s.iter().sum::<f64>() / s.len() as f64),
                    sys_share: (user_us + sys_us > 0).then(|| sys_us as f64 / (user_us + sys_us) as f64),
                    vs_linear: None,
                });
            }
        }
        // Scalability as will-it-scale's `linear`: the rate at N tasks over the smallest task
        // count's rate scaled to N, where a placement was measured at several counts.
        let vs_linear: Vec<Option<f64>> = summaries
            .iter()
            .map(|summary| {
                let sweep: Vec<(usize, f64)> = summaries
                    .iter()
                    .filter(|s| s.placement == summary.placement)
                    .map(|s| (s.tasks, s.faults_per_sec.mean))
                    .collect();
                stats::vs_linear(&sweep, summary.tasks)
            })
            .collect();
        let largest = summaries.iter().map(|s| s.tasks).max().unwrap_or(0);
        let per_task_name = lkp::per_task_metric(self.plan.mode.name());
        for (summary, ratio) in summaries.iter_mut().zip(vs_linear) {
            summary.vs_linear = ratio;
            // LKP's names: the mean rate per task, and at the largest task count the rate over
            // linear scaling.
            summary.lkp.insert(per_task_name, lkp::per_task_ops(summary.faults_per_sec.mean, summary.tasks));
            if let Some(ratio) = ratio.filter(|_| summary.tasks == largest) {
                summary.lkp.insert(lkp::SCALABILITY, ratio);
            }
        }
        summaries
    }
}

/// --profile: what the memcg family costs a placement (MEMCG_FAMILY_VERSION's list).
#[derive(Debug, Clone, serde::Serialize)]
pub struct MemcgCost {
    /// Its share of the workers' `--profile` perf samples, pooled over the slices.
    pub share: f64,
    /// CPU ns per fault spent there: mean over the slices, with a 95% Student-t interval over
    /// the slices (runs scatter more than sample counting alone would say), its low end cut
    /// at 0.
    pub ns_per_fault: f64,
    pub low: Option<f64>,
    pub high: Option<f64>,
    pub samples: u64,
    pub lost: u64,
    pub family_version: u32,
    /// The functions sampled that the family counted, so any other profiler's figure can be
    /// summed over exactly the same names.
    pub functions: Vec<String>,
}

/// One sibling cgroup of a `siblings:N` placement.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CgroupRate {
    pub cgroup_path: String,
    pub tasks: usize,
    pub faults_per_sec: f64,
}

/// A mean with its 95% Student-t interval (half-width; None from one value).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct MeanInterval {
    pub n: usize,
    pub mean: f64,
    pub half_width: Option<f64>,
}

impl MeanInterval {
    pub fn of(values: &[f64]) -> Option<Self> {
        let summary = stats::summarize(values)?;
        let half_width =
            (summary.n > 1).then(|| stats::t_quantile_95(summary.n - 1) * summary.stddev / (summary.n as f64).sqrt());
        Some(MeanInterval { n: summary.n, mean: summary.mean, half_width })
    }
}

/// --iterations: what the fixed work took, per slice (each one whole piece of fixed work, as
/// `time` reports a command).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct FixedWork {
    pub iterations_per_task: u64,
    /// First worker's start to last worker's finish.
    pub elapsed_s: MeanInterval,
    /// The workers' system time, summed over workers.
    pub sys_s: MeanInterval,
}

/// One placement over all its rounds.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PlacementSummary<'a> {
    /// --iterations: elapsed and system seconds per slice (one whole piece of fixed work).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed_work: Option<FixedWork>,
    /// `siblings:N`: each sibling cgroup's rate; the placement's own figures are the whole.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_cgroup: Vec<CgroupRate>,
    /// `siblings:N` with `child` in the run: the siblings' CPU ns per fault over child's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub siblings_vs_child: Option<stats::RatioInterval>,
    /// LKP's names for the same figures: per_process_ops or per_thread_ops (mean rate per
    /// task), and scalability (at the largest task count of a sweep: rate / linear).
    #[serde(flatten)]
    pub lkp: BTreeMap<&'static str, f64>,
    #[serde(serialize_with = "placement_name")]
    pub placement: &'a Placement,
    pub tasks: usize,
    pub cgroup_path: &'a str,
    pub faults_per_sec: stats::Summary,
    /// This placement's CPU ns per fault over the baseline's, per round, summed up with its 95%
    /// interval by `stats::overhead_interval` (over cgroup instances, each its rounds' trimmed mean), over the rounds where both have
    /// on-CPU times; None (unknown) where none has (`Report::overhead_unknown`).
    pub overhead_vs_baseline: Option<stats::RatioInterval>,
    /// The share of the measured time in slices that counted (`Report::counted`).
    pub counted_share: Option<f64>,
    /// Wall-clock nanoseconds one worker spends per fault, from the mean rate; None for a
    /// mean rate of zero.
    pub ns_per_fault: Option<f64>,
    /// The cost of a fault on CPU: on-CPU ns over faults, the mean over slices; None where an
    /// on-CPU time is missing.
    pub cpu_ns_per_fault: Option<f64>,
    /// Its statistics over the slices (the table's `+-` is their rse_pct).
    pub cpu_ns_per_fault_stats: Option<stats::Summary>,
    /// Baseline throughput / this throughput per slice (wall-clock rates), summed up as the
    /// overhead is, with its 95% interval: beside the overhead, which counts CPU time only.
    pub throughput_vs_baseline: Option<stats::RatioInterval>,
    /// Where the workers' time went, summed over the slices.
    pub time: Option<TimeSplit>,
    /// --profile: the memcg family's cost.
    pub memcg: Option<MemcgCost>,
    /// --locks: contentions and wait per operation against the baseline, and the callers;
    /// absent where not asked or not available.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locks: Option<super::locks::LockSummary>,
    /// All workers' seconds on their CPUs in one slice (the scheduler's exact sum, their CPU clocks),
    /// the mean over its slices; None where on-CPU times were not read.
    pub on_cpu_s: Option<f64>,
    /// The system share of that time, from /proc's user and system times summed over every
    /// slice of the placement: the kernel counts them in clock ticks, so one worker's few ms
    /// of a slice read 0 or a tick, and only a span of many ticks splits them truly.
    pub sys_share: Option<f64>,
    /// Rate over (the smallest task count's rate x tasks / that count); None without a sweep.
    pub vs_linear: Option<f64>,
}

fn placement_name<S: serde::Serializer>(placement: &&Placement, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&placement.name)
}
