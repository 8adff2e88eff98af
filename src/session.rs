//! The engine's life for one run: set up once (the base, the cgroup tree, the files, the
//! environment with its final base), the interleaved loop of slices, and the finish (the tree
//! removed, the report concluded). Slices are measured through `run::Slicer`, so the loop and
//! the conclusions are unit-tested with a fake that forks nothing. Cleanup is owned by `Tree`,
//! `RunFiles` and each slice's worker guard, so it happens on every exit path out of here.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::Result;

use crate::cgroup::tree::LeafSpec;
use crate::cgroup::{self, BaseSpec, Detected, Hierarchy, Leaf, Tree};
use crate::error;
use crate::measure::procfs::others_named;
use crate::plan::{Plan, cpus_for_tasks, order, sibling_of};
use crate::report::{Environment, Failure, Measurement, Report, RunId, Warning};
use crate::run::files::RunFiles;
use crate::run::{self, Progress, RealSlicer, RunSpec, SliceSpec, Slicer, WorkerDied};
use crate::workload;

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
    // On one CPU the harness shares it with every worker whatever its priority: nothing to
    // gain there.
    if allowed_cpus.len() > 1 {
        run::raise_harness_priority();
    }
    let mut slicer = RealSlicer::new(session.run_spec(), session.hierarchy.clone());
    measure_all(&mut session.report, &session.leaves, &mut slicer, progress, checkpoint);
    // Every worker gone before the tree they ran in is removed.
    drop(slicer);
    Ok(session.finish())
}

/// What a run holds between set-up and finish.
struct Session {
    hierarchy: Hierarchy,
    tree: Tree,
    /// Per crew generation, one leaf per placement: each generation measures in cgroups of
    /// its own.
    leaves: Vec<Vec<Leaf>>,
    files: Option<RunFiles>,
    report: Report,
}

impl Session {
    /// Everything made once, before the first slice: the base resolved, the tree built, the
    /// files created, the environment captured with the base the run really uses.
    fn set_up(plan: &Plan, detected: &Detected, allowed_cpus: &[usize]) -> Result<Session> {
        let hierarchy = detected.memory_hierarchy(plan.version)?;
        let base = cgroup::resolve_base(&hierarchy, &plan.base)?;
        check_budgets(plan, &hierarchy, &base)?;
        let plan = with_baseline_named(plan, &hierarchy, &base);
        let run_id = RunId::new();
        let mut tree = Tree::new(hierarchy.clone(), base, run_id.cgroup_run_name());
        if plan.base == BaseSpec::New {
            tree.make_own_base()?;
        }
        // The control runs in the baseline's own cgroup: it gets no cgroup of its own.
        let built: Vec<&crate::plan::Placement> = plan.placements.iter().filter(|p| !p.control).collect();
        let specs: Vec<LeafSpec> = built
            .iter()
            .map(|p| LeafSpec {
                label: &p.name,
                origin: p.profile.as_deref().unwrap_or(&p.name),
                levels: &p.levels,
                siblings: p.siblings,
            })
            .collect();
        let instances = tree.build_instances(&specs, plan.generations)?;
        let leaves: Vec<Vec<Leaf>> = instances
            .into_iter()
            .map(|built_leaves| {
                let baseline_leaf = built.iter().position(|p| p.is_baseline()).map(|i| built_leaves[i].clone());
                let mut built_leaves = built_leaves.into_iter();
                plan.placements
                    .iter()
                    .map(|p| match p.control {
                        true => baseline_leaf.clone().expect("options refuse a control without a baseline"),
                        false => built_leaves.next().expect("one leaf per built placement"),
                    })
                    .collect()
            })
            .collect();
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
        let mut warnings = setup_warnings(&plan, &tree, &leaves[0], &hierarchy);
        let files = plan
            .workload
            .kind
            .needs_files()
            .then(|| RunFiles::create(&plan.tmpdir, &env.cgroup_run_name, plan.workload.kind, plan.workload.page_size))
            .transpose()?;
        let files_fs = files.as_ref().map(|f| f.filesystem());
        // Page cache on tmpfs is swap-backed: reclaim without swap, usemem-file's point, is lost.
        if plan.workload.kind.wants_reclaimable_files && files_fs.as_deref() == Some("tmpfs") {
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
            leave_out_memo: Default::default(),
            slice_warnings: Vec::new(),
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
            interval: plan.interval,
            kernel_count: plan.kernel_count,
            profile: plan.profile,
            locks: plan.locks,
        }
    }

    /// The tree and files removed, and the report concluded.
    fn finish(mut self) -> Report {
        // A tree that cannot be removed does not void what was measured in it.
        self.report.removal_error = self.tree.remove().err().map(|e| format!("{e:#}"));
        drop(self.files);
        crate::report::judging::conclude(&mut self.report);
        self.report
    }
}

/// `root` only for the hierarchy's true root; anywhere else the baseline is `base`.
fn with_baseline_named(plan: &Plan, hierarchy: &Hierarchy, base: &std::path::Path) -> Plan {
    let mut plan = plan.clone();
    let at_true_root = hierarchy.is_root(base) && plan.base != BaseSpec::New;
    for placement in plan.placements.iter_mut().filter(|p| p.is_baseline()) {
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
    if let Some(index) = plan.placements.iter().position(|p| p.is_baseline()) {
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

/// The run's slices in the order they are measured: task count by task count (only one task
/// count's workers are alive at a time, so a sweep holds no more memory than its largest
/// step), round by round, each a slice of every placement, the placements' order reversed
/// every other round (ABBA), so drift over the run weighs on every placement alike.
fn schedule(plan: &Plan) -> Vec<Scheduled> {
    let mut slices = Vec::new();
    for &tasks in &plan.task_counts {
        for round in 1..=plan.rounds() {
            for placement in order(plan.placements.len(), round) {
                slices.push(Scheduled { round, tasks, placement });
            }
        }
    }
    slices
}

/// Every placement's crew at the largest task count is alive at once, one running and the
/// others parked: the descriptors the harness and the workers hold (the soft open-file limit
/// raised where it is short) and the memory they hold, checked against MemAvailable and the room the base's ancestors leave, before
/// anything is made. Each falls short as the user's input (exit 2), naming what is needed.
fn check_budgets(plan: &Plan, hierarchy: &Hierarchy, base: &std::path::Path) -> Result<()> {
    use run::budget::{Crews, MemoryRoom};
    let crews = Crews {
        cgroups: plan.placements.iter().map(|p| (p.siblings as usize).max(1)).collect(),
        workers: plan.task_counts.iter().copied().max().unwrap_or(1),
        perf: plan.kernel_count == run::KernelCountSource::Perf,
        profile: plan.profile,
        locks: plan.locks,
    };
    run::budget::ensure_open_files(&crews)?;
    // One crew runs at a time; the others are parked, holding what outlives an iteration.
    let running = (plan.workload.kind.resident_bytes)(&plan.workload);
    let parked = (plan.workload.kind.parked_bytes)(&plan.workload);
    let others = crews.cgroups.len().saturating_sub(1) as u64;
    // And what each worker costs the kernel besides: its page tables (8 bytes a 4 KiB page)
    // and a MiB for its task, stacks and mappings (two crews of 64 MiB workers fitted a limit
    // of 128 MiB exactly, and the running one was OOM-killed).
    let kernel = running / 512 + (1 << 20);
    let needed = (running + kernel)
        .saturating_add(parked.saturating_mul(others))
        .saturating_mul(crews.workers as u64)
        .saturating_add(crews.buffer_bytes());
    let room = MemoryRoom {
        available_bytes: run::budget::mem_available(),
        cgroup: cgroup::room::memory_room(hierarchy.version, &hierarchy.mount_point, base),
    };
    match run::budget::memory_problem(needed, (running, parked), &crews, &room) {
        Some(problem) => Err(error::Error::Usage(problem).into()),
        None => Ok(()),
    }
}

/// The interleaved loop over the schedule. Each generation's crews (at each task count) are
/// set up before its first slice and retired after its last. A slice that fails is recorded
/// and the run goes on; a stop signal ends it, keeping every slice completed before it (those
/// of the round it cut short flagged, in no figure).
fn measure_all(
    report: &mut Report,
    leaves: &[Vec<Leaf>],
    slicer: &mut dyn Slicer,
    progress: &mut dyn Progress,
    checkpoint: &mut dyn FnMut(&Report),
) {
    let slices = schedule(&report.plan);
    let mut oom = OomCounts::new(leaves, slicer);
    let per_slice_s = report.plan.slice_duration().as_secs_f64();
    for (sequence, &slice) in slices.iter().enumerate() {
        // Crews are made for each task count and, within it, for each generation of rounds.
        let plan = &report.plan;
        let set_up = sequence == 0
            || slices[sequence - 1].tasks != slice.tasks
            || plan.generation_of(slices[sequence - 1].round) != plan.generation_of(slice.round);
        if set_up {
            slicer.retire();
            // The first crew at each task count warms the machine's CPUs that count uses.
            let first_at_tasks = sequence == 0 || slices[sequence - 1].tasks != slice.tasks;
            let warmup = if first_at_tasks { report.plan.warmup } else { Duration::ZERO };
            if let Err(signal) = set_up_all(report, leaves, slicer, slice, warmup) {
                report.interrupted = Some(signal);
                break;
            }
        }
        let placement = report.plan.placements[slice.placement].clone();
        announce(progress, &report.plan, slice, (slices.len() - sequence - 1) as f64 * per_slice_s);
        let generation = report.plan.generation_of(slice.round);
        let leaf = &leaves[generation as usize][slice.placement];
        let spec = slice_spec(&report.plan, leaves, slice, Duration::ZERO);
        let mut notices = Vec::new();
        let measured = slicer.measure(&spec, &mut |notice| notices.push(notice), progress);
        note_notices(report, notices);
        let (round, tasks) = (slice.round, slice.tasks);
        match measured {
            Ok(result) => {
                // Complete once every placement's slice of the round is in (mark_round_complete).
                let (leaf, generation) = (leaf.clone(), generation + 1);
                let m =
                    Measurement { placement, leaf, tasks, round, generation, sequence, result, round_complete: false };
                report.measurements.push(m);
                mark_round_complete(report, round, tasks);
                checkpoint(report);
            }
            Err(e) => {
                if let Some(signal) = error::interrupted(&e) {
                    // The round cut short keeps its slices, flagged: no pair of it is whole.
                    for m in report.measurements.iter_mut().filter(|m| m.round == round && m.tasks == tasks) {
                        m.round_complete = false;
                    }
                    report.interrupted = Some(signal);
                    break;
                }
                // Whatever ends one placement's slice, the others (and those already
                // measured) still report.
                let reason = failure_reason(e, &mut oom, leaf, slicer, &report.plan);
                report.failures.push(Failure { placement, tasks, round, reason });
                mark_round_complete(report, round, tasks);
            }
        }
    }
    slicer.retire();
    progress.clear();
}

/// Tells the progress display which slice starts and how long the run has left after it.
fn announce(progress: &mut dyn Progress, plan: &Plan, slice: Scheduled, after_s: f64) {
    let name = &plan.placements[slice.placement].name;
    let context = format!("{name} {}/{}, {} tasks", plan.slice_name(slice.round), plan.slices, slice.tasks);
    progress.start(context, after_s);
}

/// Why a slice failed, in words: a worker's death with what killed it (the OOM killer by the
/// memcg's count; a SIGBUS of a file workload, the tmpdir's free space), or the error.
fn failure_reason(e: anyhow::Error, oom: &mut OomCounts, leaf: &Leaf, slicer: &dyn Slicer, plan: &Plan) -> String {
    match e.downcast::<WorkerDied>() {
        Ok(died) => {
            let sigbus = died.signal == Some(libc::SIGBUS);
            let reason = oom.explain(leaf, died, slicer);
            if sigbus { file_space(reason, plan) } else { reason }
        }
        Err(e) => format!("{e:#}"),
    }
}

/// Flags the slices of a round complete once every placement's slice of it was measured or
/// failed: before that a checkpoint on disk (a SIGKILL then) holds a round without a pair, in
/// no figure.
fn mark_round_complete(report: &mut Report, round: u32, tasks: usize) {
    let of_round = |m_round: u32, m_tasks: usize| m_round == round && m_tasks == tasks;
    // A round's slices and failures are the last ones recorded: searched from the end, so the
    // run's bookkeeping a slice stays flat, not linear in the slices so far.
    let measured = report.measurements.iter().rev().take_while(|m| of_round(m.round, m.tasks)).count();
    let failed = report.failures.iter().rev().take_while(|f| of_round(f.round, f.tasks)).count();
    if measured + failed >= report.plan.placements.len() {
        for m in report.measurements.iter_mut().rev().take_while(|m| of_round(m.round, m.tasks)) {
            m.round_complete = true;
        }
    }
}

/// What a scheduled slice measures; `warmup` for a crew made for it.
fn slice_spec<'a>(plan: &Plan, leaves: &'a [Vec<Leaf>], slice: Scheduled, warmup: Duration) -> SliceSpec<'a> {
    let leaf = &leaves[plan.generation_of(slice.round) as usize][slice.placement];
    SliceSpec {
        placement: slice.placement,
        cpus: cpus_for_tasks(&plan.cpus, slice.tasks),
        leaf,
        worker_leaves: worker_leaves(leaf, slice.tasks, plan.cpus.len()),
        warmup,
    }
}

/// Every placement's workers at `first`'s task count made ready before the first slice of a
/// generation (`first`), so no slice forks; the first made runs `warmup` (`Plan::warmup`). A
/// set-up that fails is said again by that placement's slices; a stop signal ends the run.
fn set_up_all(
    report: &mut Report,
    leaves: &[Vec<Leaf>],
    slicer: &mut dyn Slicer,
    first: Scheduled,
    warmup: Duration,
) -> Result<(), i32> {
    for placement in 0..report.plan.placements.len() {
        let warmup = if placement == 0 { warmup } else { Duration::ZERO };
        let spec = slice_spec(&report.plan, leaves, Scheduled { placement, ..first }, warmup);
        let mut notices = Vec::new();
        let made = slicer.set_up(&spec, &mut |notice| notices.push(notice));
        note_notices(report, notices);
        if let Err(e) = made
            && let Some(signal) = error::interrupted(&e)
        {
            return Err(signal);
        }
    }
    Ok(())
}

fn note_notices(report: &mut Report, notices: Vec<run::Notice>) {
    for warning in notices.into_iter().map(Warning::Measurement) {
        if !report.warnings.contains(&warning) {
            report.warnings.push(warning);
        }
    }
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
    if !plan.workload.kind.needs_files() {
        return reason;
    }
    match nix::sys::statvfs::statvfs(&plan.tmpdir) {
        Ok(fs) => format!(
            "{reason}; --tmpdir {} has {} KiB free now (a file page its file system cannot allocate raises SIGBUS)",
            plan.tmpdir.display(),
            crate::text::thousands((fs.blocks_available() * fs.fragment_size() / 1024) as f64)
        ),
        Err(_) => reason,
    }
}

/// Each leaf's memcg oom_kill counter as last seen, so a worker's death can be blamed on the
/// OOM killer from the memcg's own count, not a guess; and how often each cgroup from a leaf up
/// found its own limit reached (`memcg::limit_hits`), so the kill is blamed on the cgroup whose
/// limit it was: an ancestor's limit kills a worker in a leaf that has none.
struct OomCounts {
    seen: HashMap<std::path::PathBuf, u64>,
    limit_hits: HashMap<std::path::PathBuf, u64>,
}

impl OomCounts {
    fn new(leaves: &[Vec<Leaf>], slicer: &dyn Slicer) -> Self {
        let seen = leaves.iter().flatten().map(|leaf| (leaf.fs_path.clone(), slicer.oom_kills(leaf))).collect();
        let mut counts = OomCounts { seen, limit_hits: HashMap::new() };
        for leaf in leaves.iter().flatten() {
            counts.limiting_cgroup(leaf);
        }
        counts
    }

    fn explain(&mut self, leaf: &Leaf, died: WorkerDied, slicer: &dyn Slicer) -> String {
        let kills = slicer.oom_kills(leaf);
        let seen = *self.seen.entry(leaf.fs_path.clone()).or_insert(0);
        let limiting = self.limiting_cgroup(leaf);
        let reason = if kills > seen {
            let limit = match limiting {
                Some((path, Some(limit))) => {
                    format!(": {path} reached its memory limit of {}", crate::text::bytes(limit))
                }
                Some((path, None)) => format!(": {path} reached its memory limit"),
                None => String::new(),
            };
            format!(
                "{}; the OOM killer ran in {} (its oom_kill count rose by {} during this run's slice, to {kills}){limit}",
                died.why,
                leaf.cgroup_path,
                kills - seen
            )
        } else if died.why.contains("SIGKILL") {
            // The count was read: say what it showed rather than what an OOM kill looks like.
            format!(
                "{} (not the OOM killer in {}: its oom_kill count did not rise, {kills}; something else sent SIGKILL)",
                died.why.replace(" (an OOM kill looks like this; see the cgroup's oom_kill count or dmesg)", ""),
                leaf.cgroup_path
            )
        } else {
            died.why
        };
        self.seen.insert(leaf.fs_path.clone(), kills);
        reason
    }

    /// The deepest cgroup from `leaf` up whose limit was reached since last looked at, named
    /// as the hierarchy does, with its limit; every count on the way taken as seen.
    fn limiting_cgroup(&mut self, leaf: &Leaf) -> Option<(String, Option<u64>)> {
        let mut found = None;
        let levels = leaf.fs_path.ancestors().zip(std::path::Path::new(&leaf.cgroup_path).ancestors());
        for (dir, path) in levels {
            let Some(hits) = crate::measure::memcg::limit_hits(dir) else { break };
            let before = self.limit_hits.insert(dir.to_path_buf(), hits);
            if found.is_none() && before.is_some_and(|before| hits > before) {
                found = Some((path.display().to_string(), crate::cgroup::room::memory_limit(dir)));
            }
        }
        found
    }
}

#[cfg(test)]
mod tests;
