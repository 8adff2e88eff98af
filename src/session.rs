//! The engine's life for one run: set up once (the base, the cgroup tree, the files, the
//! environment with its final base), the interleaved loop of slices, and the finish (the tree
//! removed, the report concluded). Slices are measured through `run::Slicer`, so the loop and
//! the conclusions are unit-tested with a fake that forks nothing. Cleanup is owned by `Tree`,
//! `RunFiles` and each slice's worker guard, so it happens on every exit path out of here.

use std::collections::HashMap;

use anyhow::Result;

use crate::cgroup::tree::LeafSpec;
use crate::cgroup::{self, BaseSpec, Detected, Hierarchy, Leaf, Tree};
use crate::measure::memcg::PsiScope;
use crate::measure::procfs::others_named;
use crate::plan::{Plan, cpus_for_tasks, order, sibling_of};
use crate::report::{Environment, Failure, Measurement, MemcgCounter, Report, RunId, Warning};
use crate::run::files::RunFiles;
use crate::run::{self, Interrupted, Progress, RealSlicer, RunSpec, SliceSpec, Slicer, WorkerDied};
use crate::workload::{self, WorkloadKind};

/// Runs the plan in the memory hierarchy of `detected`. `checkpoint` sees the report after
/// every slice, so what is measured can be on disk long before the end (a run killed in hour 3
/// keeps hours 1 and 2).
pub fn run(
    plan: &Plan,
    detected: &Detected,
    allowed_cpus: &[usize],
    progress: &mut dyn Progress,
    checkpoint: &mut dyn FnMut(&Report),
) -> Result<Report> {
    let mut session = Session::set_up(plan, detected, allowed_cpus)?;
    let mut slicer = RealSlicer { spec: session.run_spec(), hierarchy: session.hierarchy.clone() };
    measure_all(&mut session.report, &session.leaves, &mut slicer, progress, checkpoint);
    Ok(session.finish())
}

/// What a run holds between set-up and finish.
struct Session {
    hierarchy: Hierarchy,
    tree: Tree,
    leaves: Vec<Leaf>,
    files: Option<RunFiles>,
    report: Report,
}

impl Session {
    /// Everything made once, before the first slice: the base resolved, the tree built, the
    /// files created, the environment captured with the base the run really uses.
    fn set_up(plan: &Plan, detected: &Detected, allowed_cpus: &[usize]) -> Result<Session> {
        let hierarchy = detected.memory_hierarchy(plan.version)?;
        let base = cgroup::resolve_base(&hierarchy, &plan.base)?;
        let plan = with_baseline_named(plan, &hierarchy, &base);
        let run_id = RunId::new();
        let mut tree = Tree::new(hierarchy.clone(), base, run_id.cgroup_run_name());
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
        let env = Environment::capture(
            detected,
            &hierarchy,
            tree.base(),
            tree.baseline_depth(),
            &run_id,
            &plan.cpus,
            allowed_cpus,
        );
        // Named before looking for other runs' harnesses, so another run can see this one.
        run::set_process_name(run::HARNESS_NAME);
        let mut warnings = setup_warnings(&plan, &tree, &leaves, &hierarchy);
        let files = plan
            .workload
            .needs_files()
            .then(|| RunFiles::create(&plan.tmpdir, &env.cgroup_run_name, plan.workload, plan.page_size))
            .transpose()?;
        let files_fs = files.as_ref().map(|f| f.filesystem());
        // Page cache on tmpfs is swap-backed: usemem-file's point, reclaim without swap, is lost.
        if plan.workload == WorkloadKind::UsememFile && files_fs.as_deref() == Some("tmpfs") {
            warnings.push(Warning::SwapBackedFiles { tmpdir: plan.tmpdir.clone() });
        }
        warnings.extend(plan_warnings(&plan));
        let report = Report {
            env,
            knobs: tree.take_applied(),
            files: files.as_ref().map(|f| format!("{} ({})", f.path().display(), f.filesystem())),
            files_fs,
            unit: workload::shape(&plan.workload_settings(None)).unit,
            measurements: Vec::new(),
            failures: Vec::new(),
            warnings,
            removal_error: None,
            interrupted: None,
            finished: false,
            plan,
        };
        Ok(Session { hierarchy, tree, leaves, files, report })
    }

    /// What every slice of this run measures.
    fn run_spec(&self) -> RunSpec {
        let plan = &self.report.plan;
        RunSpec {
            mode: plan.mode,
            settings: plan.workload_settings(self.files.as_ref().map(|f| f.path().to_path_buf())),
            duration: plan.slice_duration(),
            warmup: plan.warmup,
            interval: plan.interval,
            kernel_count: plan.kernel_count,
            profile: plan.profile,
        }
    }

    /// The tree and files removed, and the report concluded.
    fn finish(mut self) -> Report {
        // A tree that cannot be removed does not void what was measured in it.
        self.report.removal_error = self.tree.remove().err().map(|e| format!("{e:#}"));
        drop(self.files);
        conclude(&mut self.report);
        self.report
    }
}

/// `root` only for the hierarchy's true root; anywhere else the baseline is `base`.
fn with_baseline_named(plan: &Plan, hierarchy: &Hierarchy, base: &std::path::Path) -> Plan {
    let mut plan = plan.clone();
    let at_true_root = hierarchy.is_root(base) && plan.base != BaseSpec::New;
    for placement in plan.placements.iter_mut().filter(|p| p.is_root()) {
        placement.name = if at_true_root { "root" } else { "base" }.into();
    }
    plan
}

/// What the set-up found worth saying: a controller enabled outside the run's tree, other runs,
/// a baseline sharing its memcg, knobs this cgroup version cannot set.
fn setup_warnings(plan: &Plan, tree: &Tree, leaves: &[Leaf], hierarchy: &Hierarchy) -> Vec<Warning> {
    let mut warnings: Vec<Warning> =
        tree.changed_outside().map(|control| Warning::MemoryEnabled { control }).into_iter().collect();
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
    for placement in &plan.placements {
        for (index, level) in placement.levels.iter().enumerate() {
            for knob in cgroup::knobs::skipped_on(level, hierarchy.version) {
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
    warnings
}

/// What the plan's shape alone says: more tasks than CPUs, siblings no CPU switches between.
fn plan_warnings(plan: &Plan) -> Vec<Warning> {
    let mut warnings = Vec::new();
    if let Some(&most) = plan.task_counts.iter().max()
        && most > plan.cpus.len()
    {
        warnings.push(Warning::RoundRobin { tasks: most, cpus: plan.cpus.len() });
    }
    for placement in plan.placements.iter().filter(|p| p.siblings > 0) {
        for &tasks in plan.task_counts.iter().filter(|&&t| t <= plan.cpus.len()) {
            warnings.push(Warning::SiblingsApart { placement: placement.name.clone(), tasks, cpus: plan.cpus.len() });
        }
    }
    warnings
}

/// One slice of the run's schedule: which placement, with how many tasks, in which round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Scheduled {
    round: u32,
    tasks: usize,
    placement: usize,
}

/// The run's slices in the order they are measured: round by round, each a slice of every
/// placement at every task count, the placements' order reversed every other round (ABBA), so
/// drift over the run weighs on every placement alike.
fn schedule(plan: &Plan) -> Vec<Scheduled> {
    let mut slices = Vec::new();
    for round in 1..=plan.rounds() {
        for &tasks in &plan.task_counts {
            for placement in order(plan.placements.len(), round) {
                slices.push(Scheduled { round, tasks, placement });
            }
        }
    }
    slices
}

/// The interleaved loop over the schedule. A slice that fails is recorded and the run goes on;
/// a stop signal ends it, keeping the rounds completed before it.
fn measure_all(
    report: &mut Report,
    leaves: &[Leaf],
    slicer: &mut dyn Slicer,
    progress: &mut dyn Progress,
    checkpoint: &mut dyn FnMut(&Report),
) {
    let slices = schedule(&report.plan);
    let mut oom = OomCounts::new(leaves, slicer);
    let per_slice_s = (report.plan.warmup + report.plan.slice_duration()).as_secs_f64();
    for (sequence, &slice) in slices.iter().enumerate() {
        let placement = report.plan.placements[slice.placement].clone();
        progress.start(
            format!("{} slice {}/{}, {} tasks", placement.name, slice.round, report.plan.rounds(), slice.tasks),
            (slices.len() - sequence - 1) as f64 * per_slice_s,
        );
        let leaf = &leaves[slice.placement];
        let cpus = &report.plan.cpus;
        let spec = SliceSpec {
            cpus: cpus_for_tasks(cpus, slice.tasks),
            leaf,
            worker_leaves: worker_leaves(leaf, slice.tasks, cpus.len()),
        };
        let mut notices = Vec::new();
        let measured = slicer.measure(&spec, &mut |notice| notices.push(notice), progress);
        for warning in notices.into_iter().map(Warning::Measurement) {
            if !report.warnings.contains(&warning) {
                report.warnings.push(warning);
            }
        }
        let (round, tasks) = (slice.round, slice.tasks);
        match measured {
            Ok(run) => {
                report.measurements.push(Measurement { placement, leaf: leaf.clone(), tasks, round, sequence, run });
                checkpoint(report);
            }
            Err(e) => {
                if let Some(&Interrupted(signal)) = e.downcast_ref::<Interrupted>() {
                    // A stop signal ends the run with its completed rounds only.
                    report.measurements.retain(|m| m.round < round);
                    report.interrupted = Some(signal);
                    break;
                }
                // Whatever ends one placement's slice, the others (and those already
                // measured) still report.
                let reason = match e.downcast::<WorkerDied>() {
                    Ok(died) => {
                        let sigbus = died.1 == Some(libc::SIGBUS);
                        let reason = oom.explain(slice.placement, died, slicer);
                        if sigbus { file_space(reason, &report.plan) } else { reason }
                    }
                    Err(e) => format!("{e:#}"),
                };
                report.failures.push(Failure { placement, tasks, round, reason });
            }
        }
    }
    progress.clear();
}

/// The cgroup each of `tasks` workers runs in: the leaf itself, or for `siblings:N` the sibling
/// each worker is dealt.
fn worker_leaves(leaf: &Leaf, tasks: usize, cpus: usize) -> Vec<&Leaf> {
    (0..tasks)
        .map(|worker| match leaf.siblings.len() {
            0 => leaf,
            n => &leaf.siblings[sibling_of(worker, tasks, cpus.min(tasks), n)],
        })
        .collect()
}

/// For a worker of a file workload killed by SIGBUS: the kernel raises it for a file page its file
/// system cannot allocate (full, or a tmpfs at its size=), and says nothing else. The free
/// space of --tmpdir, measured now (the run's files still there), goes beside it.
fn file_space(reason: String, plan: &Plan) -> String {
    if !plan.workload.needs_files() {
        return reason;
    }
    match nix::sys::statvfs::statvfs(&plan.tmpdir) {
        Ok(fs) => format!(
            "{reason}; --tmpdir {} has {} KiB free now (a file page its file system cannot allocate raises SIGBUS)",
            plan.tmpdir.display(),
            crate::text::thousands((fs.blocks_available() as u64 * fs.fragment_size() as u64 / 1024) as f64)
        ),
        Err(_) => reason,
    }
}

/// Each leaf's memcg oom_kill counter as last seen, so a worker's death can be blamed on the
/// OOM killer from the memcg's own count, not a guess.
struct OomCounts<'a> {
    leaves: &'a [Leaf],
    seen: HashMap<usize, u64>,
}

impl<'a> OomCounts<'a> {
    fn new(leaves: &'a [Leaf], slicer: &dyn Slicer) -> Self {
        let seen = leaves.iter().enumerate().map(|(i, leaf)| (i, slicer.oom_kills(leaf))).collect();
        OomCounts { leaves, seen }
    }

    fn explain(&mut self, index: usize, died: WorkerDied, slicer: &dyn Slicer) -> String {
        let leaf = &self.leaves[index];
        let kills = slicer.oom_kills(leaf);
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

/// What follows from the measurements once the loop is over: empty baselines become failures,
/// counts that disagree and figures that should not be trusted become warnings.
fn conclude(report: &mut Report) {
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
    let shape = workload::shape(&report.plan.workload_settings(None));
    if shape.exact {
        let disagreements: Vec<Warning> =
            report.measurements.iter().filter_map(|m| counts_disagree(m, shape.per_iteration, shape.unit)).collect();
        report.warnings.extend(disagreements);
    }
    report.finished = true;
    let reliability = reliability_warnings(report);
    report.warnings.extend(reliability);
}

/// SIGSTOP freezes each worker mid-iteration: the kernel has counted up to one iteration's
/// faults per worker that the loop counter has not. That much difference is the protocol,
/// not a disagreement; anything beyond it and 1% is.
fn counts_disagree(m: &Measurement, per_iteration: u64, unit: workload::Unit) -> Option<Warning> {
    let loop_faults = m.run.loop_faults();
    let kernel_faults = m.run.kernel_faults();
    let in_flight = (m.run.workers.len() as u64 * per_iteration) as f64;
    (kernel_faults > 0 && loop_faults.abs_diff(kernel_faults) as f64 > 0.01 * kernel_faults as f64 + in_flight).then(
        || Warning::CountsDisagree {
            placement: m.placement.name.clone(),
            round: m.round,
            loop_faults,
            kernel_faults,
            unit: unit.name(),
        },
    )
}

/// Warnings about figures that should not be trusted: a baseline under pressure, variation,
/// overran slices, skew, CPU taken by other load.
fn reliability_warnings(report: &Report) -> Vec<Warning> {
    let mut warnings = baseline_pressure_warnings(report);
    for summary in report.summaries() {
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
    for m in &report.measurements {
        for warning in slice_warnings(report, m) {
            // A warning about one worker's CPU is said once, even where workers share the CPU.
            if !warnings.contains(&warning) {
                warnings.push(warning);
            }
        }
    }
    warnings
}

/// A baseline whose memcg reclaimed, hit a limit or stalled measures more than the fault path.
fn baseline_pressure_warnings(report: &Report) -> Vec<Warning> {
    let mut warnings = Vec::new();
    for summary in report.summaries().iter().filter(|s| s.placement.is_root()) {
        // Stall time counts only where it is the cgroup's own, not the whole system's.
        let own_stalls = report.measurements.iter().all(|m| m.run.psi_scope != Some(PsiScope::System));
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
    if m.run.overran {
        // Its CPU shares are low because it stood still, not because of other load.
        return vec![match report.plan.iterations {
            Some(_) => Warning::PausedFixedWork { placement: name(), round: m.round, measured_s: m.run.elapsed_s() },
            None => Warning::Overran {
                placement: name(),
                round: m.round,
                measured_s: m.run.elapsed_s(),
                asked_s: report.plan.slice_duration().as_secs_f64(),
            },
        }];
    }
    let mut warnings = Vec::new();
    if m.run.start_skew_ns as f64 > 0.1 * report.plan.interval.as_nanos() as f64 {
        warnings.push(Warning::StartSkew {
            placement: name(),
            round: m.round,
            skew_us: m.run.start_skew_ns as f64 / 1e3,
        });
    }
    // Round-robin placement puts k workers on a CPU on purpose: each is owed 1/k of it. One
    // judgement per CPU, of the workers on it together.
    let mut cpus: Vec<usize> = m.run.workers.iter().map(|w| w.cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    for cpu in cpus {
        let on_it: Vec<&run::WorkerResult> = m.run.workers.iter().filter(|w| w.cpu == cpu).collect();
        // Fixed work: workers sharing a CPU finish apart (each is owed a varying share), a
        // worker done early is parked (not runnable, no cost), and under a second rusage's
        // tick granularity is too coarse to judge.
        if report.plan.iterations.is_some() && (on_it.len() > 1 || m.run.elapsed_s() < 1.0) {
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
    let (placement, round, sharing) = (m.placement.name.clone(), m.round, workers.len() as f64);
    let elapsed_ns = m.run.elapsed_ns.max(1);
    // The workers' time on this CPU together: the slice once per worker.
    let span_ns = elapsed_ns as f64 * sharing;
    let sum = |get: &dyn Fn(&run::WorkerResult) -> Option<u64>| workers.iter().map(|w| get(w)).sum::<Option<u64>>();
    let mut warnings = Vec::new();
    let (Some(_), Some(wait_ns)) = (sum(&|w| w.on_cpu_ns), sum(&|w| w.wait_ns)) else {
        let share = workers.iter().map(|w| w.cpu_share).fold(f64::INFINITY, f64::min);
        if share * sharing < 0.95 {
            warnings.push(Warning::CpuTaken { placement, round, cpu, share, sharing });
        }
        return warnings;
    };
    let wait_share = wait_ns as f64 / span_ns;
    if wait_share > (sharing - 1.0) / sharing + 0.05 {
        warnings.push(Warning::WaitedForCpu { placement: placement.clone(), round, cpu, share: wait_share, sharing });
    }
    let blocked_share = sum(&|w| w.blocked_ns(elapsed_ns)).unwrap_or(0) as f64 / span_ns;
    if report.plan.iterations.is_none() && blocked_share > 0.05 {
        warnings.push(Warning::Blocked { placement: placement.clone(), round, cpu, share: blocked_share, sharing });
    }
    // /proc/stat counts steal in ticks: under two of them is rounding, not a measurement.
    let steal_ns = sum(&|w| w.steal_ns).unwrap_or(0);
    if steal_ns as f64 > 0.01 * elapsed_ns as f64 && steal_ns >= 2 * crate::measure::procfs::steal_tick_ns() {
        warnings.push(Warning::Stolen { placement, round, cpu, share: steal_ns as f64 / elapsed_ns as f64 });
    }
    warnings
}

#[cfg(test)]
mod tests;
