//! What one memcg level costs: CPU ns per fault fitted against depth over the plain
//! placements (the baseline at depth 0, `child`, `nested:N`), round by round, with the
//! interval of the rounds' slopes over the run's cgroup instances (`stats::unit_mean`). With --profile the memcg family's ns
//! per fault is fitted the same way: it resolves a level where the total's noise hides it.

use super::{Measurement, Report};

/// One fit: ns per fault each level adds, with its 95% interval.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LevelFit {
    pub ns_per_fault: f64,
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// Rounds whose slope went in.
    pub rounds: usize,
    /// The cgroup instances (crew generations) whose spread the interval is from; 1: one
    /// instance's rounds, which say nothing of the next run's.
    pub units: usize,
}

/// The per-level cost at one task count.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LevelCost {
    pub tasks: usize,
    /// The depths fitted over (0 for the baseline).
    pub depths: Vec<u32>,
    /// From the workers' CPU ns per fault.
    pub cpu: LevelFit,
    /// --profile: from the memcg family's ns per fault.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memcg: Option<LevelFit>,
}

/// The least-squares slope of y over x; None without two distinct x.
pub fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    let (mean_x, mean_y) = (points.iter().map(|p| p.0).sum::<f64>() / n, points.iter().map(|p| p.1).sum::<f64>() / n);
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

impl Report {
    /// The plain placements' depths (the baseline's 0 among them), where a fit over them
    /// means something: two or more below the baseline.
    fn fitted_depths(&self) -> Vec<u32> {
        let mut depths: Vec<u32> =
            self.plan.placements.iter().filter(|p| p.is_plain_depth()).map(|p| p.depth).collect();
        depths.sort_unstable();
        depths.dedup();
        depths
    }

    /// Per round, the slope of `cost` over depth among the plain placements counted in it.
    fn level_fit(&self, tasks: usize, cost: fn(&Measurement) -> Option<f64>) -> Option<LevelFit> {
        let mut slopes: Vec<crate::stats::Placed> = Vec::new();
        let rounds = self.measurements.iter().filter(|m| m.tasks == tasks).map(|m| m.round).max().unwrap_or(0);
        for round in 1..=rounds {
            let points: Vec<(f64, f64)> = self
                .plan
                .placements
                .iter()
                .filter(|p| p.is_plain_depth())
                .filter_map(|p| {
                    let m = self.of(p, tasks).find(|m| m.round == round)?;
                    Some((p.depth as f64, cost(m)?))
                })
                .collect();
            if let Some(slope) = slope(&points) {
                slopes.push(crate::stats::Placed { unit: self.plan.generation_of(round) + 1, round, value: slope });
            }
        }
        let fit = crate::stats::unit_mean(&slopes)?;
        Some(LevelFit {
            ns_per_fault: fit.mean,
            low: fit.half_width().map(|h| fit.mean - h),
            high: fit.half_width().map(|h| fit.mean + h),
            rounds: fit.n,
            units: fit.units,
        })
    }

    /// The per-level cost at every task count, where two or more plain depths were measured.
    pub fn level_costs(&self) -> Vec<LevelCost> {
        let depths = self.fitted_depths();
        if depths.iter().filter(|&&d| d > 0).count() < 2 {
            return Vec::new();
        }
        self.task_counts()
            .into_iter()
            .filter_map(|tasks| {
                Some(LevelCost {
                    tasks,
                    depths: depths.clone(),
                    cpu: self.level_fit(tasks, Measurement::cpu_ns_per_fault)?,
                    memcg: self.level_fit(tasks, Report::memcg_ns_per_fault),
                })
            })
            .collect()
    }

    /// The task counts where two or more plain depths were measured but the per-level cost is
    /// unknown: the fit is over CPU ns per fault, and their slices have no on-CPU times.
    pub fn level_costs_unknown(&self) -> Vec<usize> {
        if self.fitted_depths().iter().filter(|&&d| d > 0).count() < 2 {
            return Vec::new();
        }
        let plain = || self.plan.placements.iter().filter(|p| p.is_plain_depth());
        self.task_counts()
            .into_iter()
            .filter(|&tasks| {
                self.level_fit(tasks, Measurement::cpu_ns_per_fault).is_none()
                    && plain().flat_map(|p| self.of(p, tasks)).any(|m| m.cpu_ns_per_fault().is_none())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Placement;
    use crate::report::fixture::synthetic_report;

    #[test]
    fn the_slope_of_a_line_is_its_gradient() {
        assert_eq!(slope(&[(0.0, 100.0), (1.0, 110.0), (4.0, 140.0)]), Some(10.0));
        assert_eq!(slope(&[(2.0, 1.0), (2.0, 5.0)]), None, "one depth");
    }

    #[test]
    fn each_level_adds_what_the_rounds_slopes_say() {
        // Baseline and child from the fixture; a nested:4 added with 4 x 25 ns more per
        // fault than the baseline in each round, child 25 ns more.
        let mut report = synthetic_report(&[(100_000.0, 90_000.0), (100_000.0, 90_000.0), (100_000.0, 90_000.0)]);
        let nested = Placement::plain("nested:4".into(), 4);
        report.plan.placements.push(nested.clone());
        let mut added = Vec::new();
        for m in report.measurements.iter_mut() {
            let base_cost = 1_000.0 + m.round as f64;
            let level = match m.placement.depth {
                0 => 0.0,
                _ => 1.0,
            };
            set_cost(m, base_cost + 25.0 * level);
            if m.placement.is_baseline() {
                let mut deep = m.clone();
                deep.placement = nested.clone();
                set_cost(&mut deep, base_cost + 100.0);
                added.push(deep);
            }
        }
        report.measurements.extend(added);
        let costs = report.level_costs();
        assert_eq!(costs.len(), 1);
        assert_eq!(costs[0].depths, [0, 1, 4]);
        assert!((costs[0].cpu.ns_per_fault - 25.0).abs() < 1e-6, "{costs:?}");
        assert_eq!(costs[0].cpu.rounds, 3);
        assert!(costs[0].memcg.is_none(), "no profile, no memcg fit");
        assert!(report.level_costs_unknown().is_empty());
        // Without on-CPU times the fit has nothing to fit: unknown, and said, not dropped.
        for worker in report.measurements.iter_mut().flat_map(|m| m.result.workers.iter_mut()) {
            worker.on_cpu_ns = None;
        }
        assert!(report.level_costs().is_empty());
        assert_eq!(report.level_costs_unknown(), [2]);
    }

    #[test]
    fn one_depth_fits_nothing() {
        let report = synthetic_report(&[(100_000.0, 90_000.0), (100_000.0, 90_000.0)]);
        let mut only_baseline = report;
        only_baseline.plan.placements.retain(|p| p.is_baseline());
        assert!(only_baseline.level_costs().is_empty());
    }

    /// Sets a slice's CPU ns per fault by its workers' on-CPU time.
    fn set_cost(m: &mut Measurement, ns_per_fault: f64) {
        let faults = m.result.loop_faults() as f64;
        let count = m.result.workers.len() as f64;
        for worker in &mut m.result.workers {
            worker.on_cpu_ns = Some((ns_per_fault * faults / count) as u64);
        }
    }
}
