//! A run: build the cgroups, measure every placement in every round (interleaved), and
//! collect the report the exporters print. Cleanup is owned by `Tree` and the run's worker
//! guard, so it happens on every exit path out of here.

use std::collections::HashMap;

use anyhow::Result;

use crate::cgroup::tree::LeafSpec;
use crate::cgroup::{self, BaseSpec, Leaf, Tree};
use crate::measure::memcg;
use crate::measure::procfs::others_named;
use crate::plan::{Plan, cpus_for_tasks, order, sibling_of};
use crate::report::{Environment, Failure, Measurement, Report, Warning};
use crate::run::files::RunFiles;
use crate::run::{self, Interrupted, Progress, RunSpec, WorkerDied};
use crate::workload;

/// Runs the plan. `checkpoint` sees the report after every slice, so what is measured can be
/// on disk long before the end (a run killed in hour 3 keeps hours 1 and 2).
pub fn run(
    plan: &Plan,
    allowed_cpus: &[usize],
    progress: &mut dyn Progress,
    checkpoint: &mut dyn FnMut(&Report),
) -> Result<Report> {
    let detected = cgroup::detect()?;
    let hierarchy = detected.memory_hierarchy(plan.version)?;
    let base = cgroup::resolve_base(&hierarchy, &plan.base)?;
    let mut env = Environment::capture(&detected, &hierarchy, &base, &plan.cpus, allowed_cpus);
    // `root` only for the hierarchy's true root; anywhere else the baseline is `base`.
    let mut plan = plan.clone();
    let at_true_root = hierarchy.is_root(&base) && plan.base != BaseSpec::New;
    for placement in plan.placements.iter_mut().filter(|p| p.is_root()) {
        placement.name = if at_true_root { "root" } else { "base" }.into();
    }
    let plan = &plan;
    let mut tree = Tree::new(hierarchy.clone(), base, env.cgroup_run_name.clone());
    if plan.base == BaseSpec::New {
        tree.make_own_base()?;
    }
    let specs: Vec<LeafSpec> = plan
        .placements
        .iter()
        .map(|p| LeafSpec {
            label: &p.name,
            origin: p.profile.as_deref().unwrap_or(&p.name),
            levels: &p.levels,
            siblings: p.siblings,
        })
        .collect();
    let leaves = tree.build_all(&specs)?;
    env.base_cgroup = hierarchy.cgroup_path(tree.base());
    env.base_depth = tree.baseline_depth();
    let mut warnings: Vec<Warning> =
        tree.changed_outside().map(|control| Warning::MemoryEnabled { control }).into_iter().collect();
    run::set_process_name(run::HARNESS_NAME);
    warnings.extend(others_named(run::HARNESS_NAME).into_iter().map(|pid| Warning::OtherRun { pid }));
    // A baseline in the base itself shares its memcg with every process there.
    if let Some(index) = plan.placements.iter().position(|p| p.is_root()) {
        let leaf = &leaves[index];
        let others = cgroup::base::foreign_processes(&leaf.fs_path).unwrap_or(0);
        if others > 0 {
            warnings.push(Warning::SharedMemcg {
                placement: plan.placements[index].name.clone(),
                cgroup_path: leaf.cgroup_path.clone(),
                others,
            });
        }
    }
    let knobs = tree.take_applied();
    for placement in &plan.placements {
        for (index, level) in placement.levels.iter().enumerate() {
            for knob in crate::cgroup::knobs::skipped_on(level, hierarchy.version) {
                warnings.push(Warning::KnobUnset {
                    placement: placement.name.clone(),
                    level: index + 1,
                    knob: knob.name.clone(),
                    value: knob.describe(),
                    version: hierarchy.version.to_string(),
                });
            }
        }
    }

    let files = plan
        .workload
        .needs_files()
        .then(|| RunFiles::create(&plan.tmpdir, &env.cgroup_run_name, plan.workload, plan.page_size))
        .transpose()?;
    let files_fs = files.as_ref().map(|f| f.filesystem());
    // Page cache on tmpfs is swap-backed: usemem-file's point, reclaim without swap, is lost.
    if plan.workload == workload::WorkloadKind::UsememFile && files_fs.as_deref() == Some("tmpfs") {
        warnings.push(Warning::SwapBackedFiles { tmpdir: plan.tmpdir.clone() });
    }
    let files_note = files.as_ref().map(|f| format!("{} ({})", f.path().display(), f.filesystem()));
    let mut spec = RunSpec {
        mode: plan.mode,
        cpus: plan.cpus.clone(),
        settings: plan.workload_settings(files.as_ref().map(|f| f.path().to_path_buf())),
        duration: plan.slice_duration(),
        warmup: plan.warmup,
        interval: plan.interval,
        kernel_count: plan.kernel_count,
        profile: plan.profile,
    };
    let shape = workload::shape(&spec.settings);
    let mut report = Report {
        plan: plan.clone(),
        env,
        knobs,
        files: files_note,
        files_fs,
        unit: shape.unit,
        measurements: Vec::new(),
        failures: Vec::new(),
        warnings,
        removal_error: None,
        interrupted: None,
        finished: false,
    };
    let mut interrupted = None;
    let mut sequence = 0;
    let mut oom = OomCounts::new(&leaves);
    if let Some(&most) = plan.task_counts.iter().max()
        && most > plan.cpus.len()
    {
        report.warnings.push(Warning::RoundRobin { tasks: most, cpus: plan.cpus.len() });
    }
    for placement in plan.placements.iter().filter(|p| p.siblings > 0) {
        for &tasks in plan.task_counts.iter().filter(|&&t| t <= plan.cpus.len()) {
            report.warnings.push(Warning::SiblingsApart {
                placement: placement.name.clone(),
                tasks,
                cpus: plan.cpus.len(),
            });
        }
    }
    let total_measurements = plan.rounds() as usize * plan.task_counts.len() * plan.placements.len();
    // Round by round, each a slice of every placement, the order reversed every other round
    // (ABBA), so drift over the run weighs on every placement alike.
    'rounds: for round in 1..=plan.rounds() {
        for &tasks in &plan.task_counts {
            spec.cpus = cpus_for_tasks(&plan.cpus, tasks);
            for index in order(plan.placements.len(), round) {
                let placement = &plan.placements[index];
                let warnings = &mut report.warnings;
                let mut warn = |notice| {
                    let warning = Warning::Measurement(notice);
                    if !warnings.contains(&warning) {
                        warnings.push(warning);
                    }
                };
                let measurements_left = total_measurements - sequence - 1;
                progress.start(
                    format!("{} slice {round}/{}, {tasks} tasks", placement.name, plan.rounds()),
                    measurements_left as f64 * (plan.warmup + plan.slice_duration()).as_secs_f64(),
                );
                let leaf = &leaves[index];
                let worker_leaves: Vec<&Leaf> = (0..tasks)
                    .map(|worker| match leaf.siblings.len() {
                        0 => leaf,
                        n => &leaf.siblings[sibling_of(worker, tasks, plan.cpus.len().min(tasks), n)],
                    })
                    .collect();
                match run::measure(&spec, leaf, &worker_leaves, &hierarchy, &mut warn, progress) {
                    Ok(placement_run) => {
                        report.measurements.push(Measurement {
                            placement: placement.clone(),
                            leaf: leaves[index].clone(),
                            tasks,
                            round,
                            sequence,
                            run: placement_run,
                        });
                        checkpoint(&report);
                    }
                    Err(e) => {
                        if let Some(Interrupted(signal)) = e.downcast_ref::<Interrupted>() {
                            interrupted = Some((*signal, round));
                            break 'rounds;
                        }
                        // Whatever ends one placement's measurement, the others (and those
                        // already measured) still report.
                        let reason = match e.downcast::<WorkerDied>() {
                            Ok(died) => oom.explain(index, died),
                            Err(e) => format!("{e:#}"),
                        };
                        report.failures.push(Failure { placement: placement.clone(), tasks, round, reason });
                    }
                }
                sequence += 1;
            }
        }
    }
    progress.clear();
    // A stop signal ends the run with its completed repetitions only.
    if let Some((_, round)) = interrupted {
        keep_completed(&mut report.measurements, round);
    }
    report.interrupted = interrupted.map(|(signal, _)| signal);
    // A tree that cannot be removed does not void what was measured in it.
    report.removal_error = tree.remove().err().map(|e| format!("{e:#}"));
    let failures = &mut report.failures;
    // A baseline that counted nothing has no rate to divide by: that slice failed.
    report.measurements.retain(|m| {
        let empty_baseline = m.placement.is_root() && m.run.loop_faults() == 0;
        if empty_baseline {
            failures.push(Failure {
                placement: m.placement.clone(),
                tasks: m.tasks,
                round: m.round,
                reason: format!(
                    "the baseline counted no work in {:.3} s, so no ratio can be formed; measure longer (--duration)",
                    m.run.elapsed_s()
                ),
            });
        }
        !empty_baseline
    });
    if shape.exact {
        let disagreements: Vec<Warning> =
            report.measurements.iter().filter_map(|m| counts_disagree(m, shape.per_iteration)).collect();
        report.warnings.extend(disagreements);
    }
    drop(files);
    report.finished = true;
    let reliability = reliability_warnings(&report);
    report.warnings.extend(reliability);
    Ok(report)
}

/// Each leaf's memcg oom_kill counter as last seen, so a worker's death can be blamed on the
/// OOM killer from the memcg's own count, not a guess.
struct OomCounts<'a> {
    leaves: &'a [Leaf],
    seen: HashMap<usize, u64>,
}

impl<'a> OomCounts<'a> {
    fn new(leaves: &'a [Leaf]) -> Self {
        let seen =
            leaves.iter().enumerate().map(|(i, leaf)| (i, memcg::oom_kills(&leaf.fs_path).unwrap_or(0))).collect();
        OomCounts { leaves, seen }
    }

    fn explain(&mut self, index: usize, died: WorkerDied) -> String {
        let leaf = &self.leaves[index];
        let kills = memcg::oom_kills(&leaf.fs_path).unwrap_or(0);
        let seen = self.seen.entry(index).or_insert(0);
        let reason = if kills > *seen {
            format!("{}; the OOM killer ran in {} (oom_kill {kills})", died.0, leaf.cgroup_path)
        } else {
            died.0
        };
        *seen = kills;
        reason
    }
}

/// SIGSTOP freezes each worker mid-iteration: the kernel has counted up to one iteration's
/// faults per worker that the loop counter has not. That much difference is the protocol,
/// not a disagreement; anything beyond it and 1% is.
fn counts_disagree(m: &Measurement, per_iteration: u64) -> Option<Warning> {
    let loop_faults = m.run.loop_faults();
    let kernel_faults = m.run.kernel_faults();
    let in_flight = (m.run.workers.len() as u64 * per_iteration) as f64;
    (kernel_faults > 0 && loop_faults.abs_diff(kernel_faults) as f64 > 0.01 * kernel_faults as f64 + in_flight).then(
        || Warning::CountsDisagree { placement: m.placement.name.clone(), round: m.round, loop_faults, kernel_faults },
    )
}

/// Warnings about figures that should not be trusted: variation, skew, stolen CPU.
fn reliability_warnings(report: &Report) -> Vec<Warning> {
    let mut warnings = Vec::new();
    for summary in report.summaries().iter().filter(|s| s.placement.is_root()) {
        // Stall time counts only where it is the cgroup's own, not the whole system's.
        let own_stalls =
            report.measurements.iter().all(|m| m.run.psi_scope != Some(crate::measure::memcg::PsiScope::System));
        let pressure = ["pgsteal", "events_max", "events_high"]
            .iter()
            .chain(own_stalls.then_some(&"psi_some_us"))
            .any(|counter| report.memcg_total(summary.placement, summary.tasks, counter).is_some_and(|v| v > 0));
        if pressure && let Some(what) = report.memcg_note(summary.placement, summary.tasks) {
            warnings.push(Warning::BaselineUnderPressure { placement: summary.placement.name.clone(), what });
        }
    }
    for summary in report.summaries() {
        if summary.faults_per_sec.n > 1 && summary.faults_per_sec.cv_pct > 5.0 {
            warnings.push(Warning::Noisy {
                placement: summary.placement.name.clone(),
                unit: report.unit.name(),
                cv_pct: summary.faults_per_sec.cv_pct,
                slices: summary.faults_per_sec.n,
            });
        }
    }
    let interval_ns = report.plan.interval.as_nanos() as f64;
    for m in &report.measurements {
        if m.run.overran {
            warnings.push(Warning::Overran {
                placement: m.placement.name.clone(),
                round: m.round,
                measured_s: m.run.elapsed_s(),
                asked_s: report.plan.slice_duration().as_secs_f64(),
            });
            // Its CPU shares are low because it stood still, not because of other load.
            continue;
        }
        if m.run.start_skew_ns as f64 > 0.1 * interval_ns {
            warnings.push(Warning::StartSkew {
                placement: m.placement.name.clone(),
                round: m.round,
                skew_us: m.run.start_skew_ns as f64 / 1e3,
            });
        }
        // Round-robin placement puts k workers on a CPU on purpose: each is owed 1/k of it.
        for worker in &m.run.workers {
            let sharing = m.run.workers.iter().filter(|w| w.cpu == worker.cpu).count() as f64;
            // Fixed work: workers sharing a CPU finish apart (each is owed a varying share),
            // and under a second rusage's tick granularity is too coarse to judge.
            if report.plan.iterations.is_some() && (sharing > 1.0 || m.run.elapsed_s() < 1.0) {
                continue;
            }
            if worker.cpu_share * sharing < 0.95 {
                let warning = Warning::CpuTaken {
                    placement: m.placement.name.clone(),
                    round: m.round,
                    cpu: worker.cpu,
                    share: worker.cpu_share,
                    sharing,
                };
                if !warnings.contains(&warning) {
                    warnings.push(warning);
                }
            }
        }
    }
    warnings
}

/// Drops the measurements of the round a stop signal cut short; earlier ones are whole.
fn keep_completed(measurements: &mut Vec<Measurement>, interrupted_in: u32) {
    measurements.retain(|m| m.round < interrupted_in);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture::synthetic_report;

    #[test]
    fn a_repetition_is_complete_only_with_every_placement() {
        // Repetition 2 was interrupted after its first placement.
        let mut measurements = synthetic_report(&[(1.0, 1.0), (1.0, 1.0)]).measurements;
        measurements.pop();
        keep_completed(&mut measurements, 2);
        assert!(measurements.iter().all(|m| m.round == 1));
        assert_eq!(measurements.len(), 2);
    }
}
