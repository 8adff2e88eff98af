//! Judging a run's figures once its loop is over: empty baselines become failures, counts
//! that disagree and figures that should not be trusted become warnings, each saying what
//! was measured. Per-slice warnings are said once per placement and kind, the worst with a
//! count: a run of a thousand 0.1 s slices must not print a thousand lines.

use crate::measure::memcg::PsiScope;
use crate::run;
use crate::workload;

use super::{Failure, Measurement, MemcgCounter, Report, Warning};

/// What follows from the measurements once the loop is over: empty baselines become failures,
/// counts that disagree and figures that should not be trusted become warnings.
pub fn conclude(report: &mut Report) {
    starved_baselines(report);
    let shape = workload::shape(&report.plan.workload_settings(None));
    if shape.exact {
        let disagreements: Vec<Warning> = report
            .measurements
            .iter()
            .filter_map(|m| counts_disagree(&report.plan, m, shape.per_iteration, shape.unit))
            .collect();
        report.slice_warnings.extend(disagreements.iter().cloned());
        report.warnings.extend(worst_of_each(disagreements));
    } else if report.plan.workload.thp != crate::workload::ThpMode::Never {
        let huge = huge_page_warnings(report);
        report.warnings.extend(huge);
    }
    report.finished = true;
    let (reliability, per_slice) = reliability_warnings(report);
    report.warnings.extend(reliability);
    report.slice_warnings.extend(per_slice);
}

/// A baseline slice that counted nothing has no rate to divide by. Where the baseline counted
/// work in other slices at that task count, the empty one was starved (a 25 ms slice under
/// load can pass without one whole iteration): it is kept, flagged overran, in no figure, and
/// said. Where it never counted any, the run measured nothing to divide by: that fails.
fn starved_baselines(report: &mut Report) {
    let empty = |m: &Measurement| m.placement.is_baseline() && m.result.loop_faults() == 0;
    let worked: Vec<usize> =
        report.measurements.iter().filter(|m| m.placement.is_baseline() && !empty(m)).map(|m| m.tasks).collect();
    let plan = &report.plan;
    let mut starved = Vec::new();
    let failures = &mut report.failures;
    report.measurements.retain_mut(|m| {
        if !empty(m) {
            return true;
        }
        if worked.contains(&m.tasks) {
            m.result.overran = true;
            starved.push(Warning::Starved { placement: m.placement.name.clone(), slice: plan.slice_name_at(m.round, m.tasks) });
            return true;
        }
        failures.push(Failure {
            placement: m.placement.clone(),
            tasks: m.tasks,
            round: m.round,
            reason: format!(
                "the baseline counted no whole iteration in {:.3} s, so no ratio can be formed; longer slices (fewer --slices; at one slice, a longer --duration) or a smaller --chunk",
                m.result.elapsed_s()
            ),
        });
        false
    });
    report.slice_warnings.extend(starved.iter().cloned());
    report.warnings.extend(worst_of_each(starved));
}

/// A worker parks at an iteration boundary, but a per-page loop publishes its counter per page
/// and fixed work ends mid-iteration, and the kernel's count may run a fault ahead: up to one
/// iteration's faults per worker of difference is the protocol, not a disagreement; anything
/// beyond it and 1% is.
fn counts_disagree(
    plan: &crate::plan::Plan,
    m: &Measurement,
    per_iteration: u64,
    unit: workload::Unit,
) -> Option<Warning> {
    let loop_faults = m.result.loop_faults();
    let kernel_faults = m.result.kernel_faults();
    let in_flight = (m.result.workers.len() as u64 * per_iteration) as f64;
    (kernel_faults > 0 && loop_faults.abs_diff(kernel_faults) as f64 > 0.01 * kernel_faults as f64 + in_flight).then(
        || Warning::CountsDisagree {
            placement: m.placement.name.clone(),
            slice: plan.slice_name_at(m.round, m.tasks),
            loop_faults,
            kernel_faults,
            unit: unit.name(),
        },
    )
}

/// Under THP a fault may map a huge page: where the loop counted two or more pages per fault
/// the kernel counted, over a placement's slices, the figures are per page, and said so.
fn huge_page_warnings(report: &Report) -> Vec<Warning> {
    let mut warnings = Vec::new();
    for placement in &report.plan.placements {
        let of = || report.measurements.iter().filter(|m| &m.placement == placement);
        let (loop_faults, kernel_faults): (u64, u64) =
            (of().map(|m| m.result.loop_faults()).sum(), of().map(|m| m.result.kernel_faults()).sum());
        if kernel_faults > 0 && loop_faults >= 2 * kernel_faults {
            warnings.push(Warning::HugePages {
                placement: placement.name.clone(),
                pages_per_fault: loop_faults as f64 / kernel_faults as f64,
                thp: report.plan.workload.thp.name(),
            });
        }
    }
    warnings
}

/// Warnings about figures that should not be trusted: a baseline under pressure, variation,
/// overran slices, skew, CPU taken by other load.
fn reliability_warnings(report: &Report) -> (Vec<Warning>, Vec<Warning>) {
    let mut warnings = baseline_pressure_warnings(report);
    let coarse = coarse_count_warnings(report);
    for summary in report.summaries() {
        // Where the count itself is coarse, that, not interference, is what the CV shows.
        if coarse.iter().any(|w| w.coarsens(&summary.placement.name, summary.tasks)) {
            continue;
        }
        // The overhead comes from the cost on CPU where it was read: its variation is what
        // limits the resolution, not the wall-clock rate's.
        let costs: Option<Vec<f64>> =
            report.of(summary.placement, summary.tasks).map(Measurement::cpu_ns_per_fault).collect();
        if let Some(cost) = costs.as_deref().and_then(crate::stats::summarize) {
            if cost.n > 1 && cost.cv_pct > 5.0 {
                warnings.push(Warning::NoisyCost {
                    placement: summary.placement.name.clone(),
                    unit: report.unit.singular(),
                    cv_pct: cost.cv_pct,
                    slices: cost.n,
                });
            }
        } else if summary.faults_per_sec.n > 1 && summary.faults_per_sec.cv_pct > 5.0 {
            warnings.push(Warning::Noisy {
                placement: summary.placement.name.clone(),
                unit: report.unit.name(),
                cv_pct: summary.faults_per_sec.cv_pct,
                slices: summary.faults_per_sec.n,
            });
        }
    }
    let mut per_slice = Vec::new();
    // Found by its words, not by a search of those kept: slices x workers of them at 224 CPUs.
    let mut said = std::collections::HashSet::new();
    for m in &report.measurements {
        for warning in slice_warnings(report, m) {
            // A warning about one worker's CPU is said once, even where workers share the CPU.
            if said.insert(warning.to_string()) {
                per_slice.push(warning);
            }
        }
    }
    warnings.extend(coarse);
    let disturbed = disturbed_warnings(report);
    // A placement whose disturbed slices are counted in one line needs no second line for the
    // worst of them (--verbose names each).
    let counted_once = |w: &Warning| matches!(w, Warning::WaitedForCpu { placement, .. } if disturbed.iter().any(|d| matches!(d, Warning::Disturbed { placement: p, .. } if p == placement)));
    warnings.extend(worst_of_each(per_slice.iter().filter(|w| !counted_once(w)).cloned().collect()));
    warnings.extend(disturbed);
    warnings.extend(overhead_unknown_warnings(report));
    warnings.extend(tails_trimmed_warnings(report));
    (warnings, per_slice)
}

/// Where the overhead's plain mean, interval and all, excludes the trimmed figure given: the
/// trimming left out slices that differ from the rest by more than noise, and the run says
/// both figures.
fn tails_trimmed_warnings(report: &Report) -> Vec<Warning> {
    let sweep = report.plan.task_counts.len() > 1;
    let mut warnings = Vec::new();
    for placement in report.plan.placements.iter().filter(|p| !p.is_baseline()) {
        for tasks in report.task_counts() {
            if let Some(tail) = crate::stats::trimmed_tail(&report.overhead_ratios(placement, tasks)) {
                warnings.push(Warning::TailsTrimmed {
                    placement: placement.name.clone(),
                    tasks: sweep.then_some(tasks),
                    tail,
                });
            }
        }
    }
    warnings
}

/// Counts too coarse to resolve anything: a timed placement whose workers complete under ten
/// whole iterations per slice at a task count (a --chunk as long as the slice), or fixed work
/// done in under 0.1 s a slice. Each says the median it measured.
fn coarse_count_warnings(report: &Report) -> Vec<Warning> {
    let median = |values: Vec<f64>| crate::stats::summarize(&values).map(|s| s.median);
    if report.plan.workload.fixed_iterations.is_some() {
        let elapsed = median(report.measurements.iter().map(|m| m.result.elapsed_s() * 1e3).collect());
        return elapsed
            .filter(|ms| *ms < 100.0)
            .map(|elapsed_ms| Warning::ShortFixedWork { elapsed_ms })
            .into_iter()
            .collect();
    }
    let sweep = report.plan.task_counts.len() > 1;
    let mut warnings = Vec::new();
    // Every slice, counted or not: a starved one is what a coarse count looks like.
    for (placement, tasks) in
        report.plan.placements.iter().flat_map(|p| report.task_counts().into_iter().map(move |t| (p, t)))
    {
        let slices: Vec<&Measurement> = report
            .measurements
            .iter()
            .filter(|m| m.placement == *placement && m.tasks == tasks && !m.result.workers.is_empty())
            .collect();
        // Whole iterations, boundary to boundary: a per-page loop counts each page.
        let per_boundary = crate::workload::counts_per_boundary(&report.plan.workload) as f64;
        let per_worker = |m: &&Measurement| {
            m.result.workers.iter().map(|w| w.iterations as f64).sum::<f64>()
                / m.result.workers.len() as f64
                / per_boundary
        };
        let (Some(iterations), Some(slice_ms)) = (
            median(slices.iter().map(per_worker).collect()),
            median(slices.iter().map(|m| m.result.elapsed_s() * 1e3).collect()),
        ) else {
            continue;
        };
        if iterations < 10.0 {
            warnings.push(Warning::FewIterations {
                placement: placement.name.clone(),
                tasks: sweep.then_some(tasks),
                iterations,
                slice_ms,
                asked_ms: report.plan.slice_duration().as_secs_f64() * 1e3,
            });
        }
    }
    warnings
}

/// A placement whose overhead is unknown in some counted slices (no on-CPU times), said once
/// over every task count: the table's rows show it as unknown or over the other slices.
fn overhead_unknown_warnings(report: &Report) -> Vec<Warning> {
    let mut warnings = Vec::new();
    for placement in report.plan.placements.iter().filter(|p| !p.is_baseline()) {
        let (lacking, slices) = report
            .task_counts()
            .into_iter()
            .map(|tasks| report.overhead_unknown(placement, tasks))
            .fold((0, 0), |(l, s), (lacking, slices)| (l + lacking, s + slices));
        if lacking > 0 {
            warnings.push(Warning::OverheadUnknown { placement: placement.name.clone(), lacking, slices });
        }
    }
    warnings
}

/// Per-slice warnings said once per placement and kind: the worst case, with how many slices
/// had one, so stderr (which LKP keeps) does not grow with slices x workers. Every one is kept
/// in `Report::slice_warnings` for --verbose; the files hold each slice's flags. A slice is
/// counted by its name at its task count (`Plan::slice_name_at`): slice 5 at 2 tasks and at 4
/// are two slices of a --tasks sweep.
fn worst_of_each(warnings: Vec<Warning>) -> Vec<Warning> {
    use std::collections::{HashMap, HashSet};
    let mut kept: Vec<Warning> = Vec::new();
    let mut seen: HashMap<(String, &'static str), (usize, HashSet<String>)> = HashMap::new();
    for warning in warnings {
        let Some((placement, kind)) = warning.per_slice() else {
            kept.push(warning);
            continue;
        };
        let slice = warning.slice().unwrap_or_default().to_string();
        match seen.get_mut(&(placement.to_string(), kind)) {
            Some((at, slices)) => {
                slices.insert(slice);
                if warning.severity() > kept[*at].severity() {
                    kept[*at] = warning;
                }
            }
            None => {
                seen.insert((placement.to_string(), kind), (kept.len(), HashSet::from([slice])));
                kept.push(warning);
            }
        }
    }
    for (at, slices) in seen.into_values().filter(|(_, slices)| slices.len() > 1) {
        let worst = Box::new(kept[at].clone());
        kept[at] = Warning::Worst { worst, slices: slices.len() };
    }
    kept
}

/// Per placement, how many slices other load disturbed, and the control's verdict.
fn disturbed_warnings(report: &Report) -> Vec<Warning> {
    let mut warnings = Vec::new();
    for tasks in report.task_counts() {
        let left_out = report.leaves_out_disturbed(tasks);
        for placement in &report.plan.placements {
            let slices: Vec<&Measurement> =
                report.measurements.iter().filter(|m| &m.placement == placement && m.tasks == tasks).collect();
            let disturbed = slices.iter().filter(|m| m.disturbed()).count();
            if disturbed > 0 {
                let placement = placement.name.clone();
                warnings.push(Warning::Disturbed { placement, disturbed, slices: slices.len(), left_out });
            }
        }
    }
    for summary in report.summaries().iter().filter(|s| s.placement.control) {
        if let Some(interval) = summary.overhead_vs_baseline.filter(|i| i.excludes(1.0))
            && let (Some(low), Some(high)) = (interval.low, interval.high)
        {
            warnings.push(Warning::ControlSignificant { tasks: summary.tasks, low, high });
        }
    }
    warnings
}

/// A baseline whose memcg reclaimed, hit a limit or stalled measures more than the fault path.
fn baseline_pressure_warnings(report: &Report) -> Vec<Warning> {
    let mut warnings = Vec::new();
    for summary in report.summaries().iter().filter(|s| s.placement.is_baseline()) {
        // Stall time counts only where it is the cgroup's own, not the whole system's.
        let own_stalls = report.measurements.iter().all(|m| m.result.psi_scope != Some(PsiScope::System));
        let counters: [MemcgCounter; 3] = [|c| c.stat.pgsteal, |c| c.events.max, |c| c.events.high];
        let stalls: MemcgCounter = |c| c.pressure.map(|p| p.some_us);
        let pressure = counters
            .into_iter()
            .chain(own_stalls.then_some(stalls))
            .any(|counter| report.memcg_total(summary.placement, summary.tasks, counter).is_some_and(|v| v > 0));
        if pressure && let Some(what) = report.memcg_note(summary.placement, summary.tasks) {
            warnings.push(Warning::BaselineUnderPressure { placement: summary.placement.name.clone(), what });
        }
    }
    warnings
}

/// One slice's warnings: overran, started apart, or its workers' CPUs taken by other load.
fn slice_warnings(report: &Report, m: &Measurement) -> Vec<Warning> {
    let name = || m.placement.name.clone();
    if m.result.overran {
        // Its CPU shares are low because it stood still, not because of other load.
        return vec![match report.plan.workload.fixed_iterations {
            Some(_) => Warning::PausedFixedWork {
                placement: name(),
                slice: report.plan.slice_name_at(m.round, m.tasks),
                measured_s: m.result.elapsed_s(),
            },
            None => Warning::Overran {
                placement: name(),
                slice: report.plan.slice_name_at(m.round, m.tasks),
                measured_s: m.result.elapsed_s(),
                asked_s: report.plan.slice_duration().as_secs_f64(),
            },
        }];
    }
    let mut warnings = Vec::new();
    if m.result.start_skew_ns as f64 > 0.1 * report.plan.interval.as_nanos() as f64 {
        warnings.push(Warning::StartSkew {
            placement: name(),
            slice: report.plan.slice_name_at(m.round, m.tasks),
            skew_us: m.result.start_skew_ns as f64 / 1e3,
        });
    }
    // Round-robin placement puts k workers on a CPU on purpose: each is owed 1/k of it. One
    // judgement per CPU, of the workers on it together.
    let mut by_cpu: std::collections::BTreeMap<usize, Vec<&run::WorkerResult>> = Default::default();
    for worker in &m.result.workers {
        by_cpu.entry(worker.cpu).or_default().push(worker);
    }
    for (cpu, on_it) in by_cpu {
        // Fixed work: workers sharing a CPU finish apart (each is owed a varying share), a
        // worker done early is parked (not runnable, no cost), and under a second rusage's
        // tick granularity is too coarse to judge.
        if report.plan.workload.fixed_iterations.is_some() && (on_it.len() > 1 || m.result.elapsed_s() < 1.0) {
            continue;
        }
        warnings.extend(cpu_time_warnings(report, m, cpu, &on_it));
    }
    warnings
}

/// What took the time of the workers on `cpu` off it, as measured: waiting for the CPU
/// (run_delay), blocked or stopped (the rest), the hypervisor's steal; the CPU share alone
/// where schedstat is absent.
fn cpu_time_warnings(report: &Report, m: &Measurement, cpu: usize, workers: &[&run::WorkerResult]) -> Vec<Warning> {
    let (placement, round, sharing) =
        (m.placement.name.clone(), report.plan.slice_name_at(m.round, m.tasks), workers.len() as f64);
    let elapsed_ns = m.result.elapsed_ns.max(1);
    // The workers' time on this CPU together: each worker's own window, wake to park. Not the
    // slice's time once per worker: that is the mean over every CPU, and a CPU whose workers'
    // parks spread later than another's read 136% waiting against it (97% of their windows).
    let windows: Vec<u64> = workers.iter().map(|w| w.window_ns(elapsed_ns)).collect();
    let span_ns = windows.iter().sum::<u64>().max(1) as f64;
    let cpu_span_ns = windows.iter().copied().max().unwrap_or(elapsed_ns).max(1);
    let sum = |get: &dyn Fn(&run::WorkerResult) -> Option<u64>| workers.iter().map(|w| get(w)).sum::<Option<u64>>();
    let mut warnings = Vec::new();
    let (Some(_), Some(wait_ns)) = (sum(&|w| w.on_cpu_ns), sum(&|w| w.wait_ns)) else {
        let share = workers.iter().map(|w| w.cpu_share).fold(f64::INFINITY, f64::min);
        if share * sharing < 0.95 {
            warnings.push(Warning::CpuTaken { placement, slice: round.clone(), cpu, share, sharing });
        }
        return warnings;
    };
    let wait_share = wait_ns as f64 / span_ns;
    if wait_share > (sharing - 1.0) / sharing + 0.05 {
        warnings.push(Warning::WaitedForCpu {
            placement: placement.clone(),
            slice: round.clone(),
            cpu,
            share: wait_share,
            sharing,
        });
    }
    let blocked_share = run::blocked_ns_on_cpus(workers.iter().copied(), elapsed_ns).unwrap_or(0) as f64 / span_ns;
    if report.plan.workload.fixed_iterations.is_none() && blocked_share > 0.05 {
        warnings.push(Warning::Blocked {
            placement: placement.clone(),
            slice: round.clone(),
            cpu,
            share: blocked_share,
            sharing,
        });
    }
    // /proc/stat counts steal in ticks: under two of them is rounding, not a measurement.
    let steal_ns = sum(&|w| w.steal_ns).unwrap_or(0);
    if steal_ns as f64 > 0.01 * cpu_span_ns as f64 && steal_ns >= 2 * crate::measure::procfs::steal_tick_ns() {
        warnings.push(Warning::Stolen {
            placement,
            slice: round.clone(),
            cpu,
            share: steal_ns as f64 / cpu_span_ns as f64,
        });
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture::synthetic_report;

    /// 200 rounds at 1,000,000 faults/s with 0.5% noise; the child's cost 1.5x in the rounds
    /// `costly` picks and 1/1.5 in those `cheap` picks. Every worker on its CPU the whole slice.
    fn child_with_tails(costly: fn(usize) -> bool, cheap: fn(usize) -> bool) -> Report {
        let rates: Vec<(f64, f64)> = (0..200)
            .map(|i| {
                let noise = 1.0 + 0.005 * ((i * 7919) % 13) as f64 / 13.0;
                let factor = if costly(i) {
                    1.0 / 1.5
                } else if cheap(i) {
                    1.5
                } else {
                    1.0
                };
                (1e6, 1e6 * noise * factor)
            })
            .collect();
        let mut report = synthetic_report(&rates);
        for worker in report.measurements.iter_mut().flat_map(|m| m.result.workers.iter_mut()) {
            worker.on_cpu_ns = Some(2_000_000_000);
        }
        report
    }

    #[test]
    fn a_minority_of_costly_slices_that_trimming_leaves_out_is_said_with_the_plain_mean() {
        // One round in ten costs 1.5x: the trimmed figure is about 100%, the plain mean about 104%.
        let report = child_with_tails(|i| i % 10 == 3, |_| false);
        let warnings = tails_trimmed_warnings(&report);
        let [Warning::TailsTrimmed { placement, tail, .. }] = warnings.as_slice() else {
            panic!("{warnings:?}");
        };
        assert_eq!(placement, "child");
        assert!(tail.trimmed < 1.01 && tail.plain > 1.03 && tail.low > tail.trimmed, "{warnings:?}");
        eprintln!("{}", warnings[0]);
        assert!(warnings[0].to_string().contains("cost far more than the rest"), "{}", warnings[0]);
        // Tails on both sides, as a shared machine's noise gives them: the two agree, nothing said.
        let both = child_with_tails(|i| i % 10 == 3, |i| i % 10 == 8);
        assert_eq!(tails_trimmed_warnings(&both), Vec::<Warning>::new());
    }

    #[test]
    fn workers_sharing_a_cpu_are_judged_over_their_own_windows_not_the_mean_over_cpus() {
        // CPU 0: two workers whose windows (0.586 s) outlast the slice's time, the mean over
        // both CPUs (0.419 s); each waited 0.284 s, the other's turns: 48% of their windows,
        // which two sharing a CPU give each other, not 68% of the slice's time.
        let mut report = synthetic_report(&[(1e6, 1e6)]);
        let m = &mut report.measurements[0];
        m.result.elapsed_ns = 419_000_000;
        let template = m.result.workers[0].clone();
        m.result.workers = (0..2)
            .map(|_| run::WorkerResult {
                cpu: 0,
                span_ns: 586_000_000,
                on_cpu_ns: Some(293_000_000),
                wait_ns: Some(284_000_000),
                steal_ns: Some(0),
                ..template.clone()
            })
            .collect();
        let workers: Vec<&run::WorkerResult> = report.measurements[0].result.workers.iter().collect();
        let warnings = cpu_time_warnings(&report, &report.measurements[0], 0, &workers);
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn a_sweep_counts_one_slice_number_at_each_task_count_and_names_the_task_count() {
        // Slice 1 of the child overran at 2 tasks and at 4: two slices, each named with its count.
        let mut report = synthetic_report(&[(1e6, 1e6), (1e6, 1e6)]);
        report.plan.task_counts = vec![2, 4];
        let at_four: Vec<Measurement> =
            report.measurements.iter().cloned().map(|m| Measurement { tasks: 4, ..m }).collect();
        report.measurements.extend(at_four);
        for m in report.measurements.iter_mut().filter(|m| m.round == 1 && !m.placement.is_baseline()) {
            m.result.overran = true;
        }
        let (warnings, per_slice) = reliability_warnings(&report);
        let said: Vec<String> = warnings.iter().map(|w| w.to_string()).collect();
        let overran: Vec<&String> = said.iter().filter(|w| w.contains("flagged overran")).collect();
        assert_eq!(overran.len(), 1, "{said:?}");
        assert!(overran[0].starts_with("child slice 1 at 2 tasks: "), "{said:?}");
        assert!(overran[0].contains("the worst of 2 slices"), "{said:?}");
        let named: Vec<&str> = per_slice.iter().filter_map(Warning::slice).collect();
        assert_eq!(named, ["slice 1 at 2 tasks", "slice 1 at 4 tasks"]);
    }
}
