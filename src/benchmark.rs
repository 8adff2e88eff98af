//! A run: build the cgroups, measure every placement in every repetition (interleaved), and
//! collect what the exporters print. Cleanup is owned by `Tree` and the run's worker guard, so
//! it happens on every exit path out of here.

use anyhow::Result;

use crate::cgroup::{self, Leaf, Tree};
use crate::environment::Environment;
use crate::measure::memcg;
use crate::options::{Placement, RunOptions};
use crate::run::files::RunFiles;
use crate::run::{self, Interrupted, PlacementRun, RunSpec, WorkerDied};
use crate::stats;

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
    pub env: Environment,
    /// Every knob file written, with the value the kernel reads back.
    pub knobs: Vec<crate::cgroup::tree::AppliedKnob>,
    /// Where the file workloads' files were, and on which filesystem.
    pub files: Option<String>,
    /// What the rates count: faults, or loops for mmap-file.
    pub unit: crate::workload::Unit,
    pub measurements: Vec<Measurement>,
    pub failures: Vec<Failure>,
    pub warnings: Vec<String>,
    /// The stop signal that ended the run early, if one did.
    pub interrupted: Option<i32>,
}

impl Report {
    /// This placement's rate divided by the baseline's rate in the same repetition and task count.
    pub fn ratio_vs_root(&self, measurement: &Measurement) -> Option<f64> {
        let root = self.measurements.iter().find(|m| {
            m.placement.is_root() && m.repetition == measurement.repetition && m.tasks == measurement.tasks
        })?;
        Some(measurement.faults_per_sec() / root.faults_per_sec())
    }

    pub fn of(&self, placement: &Placement, tasks: usize) -> impl Iterator<Item = &Measurement> {
        self.measurements.iter().filter(move |m| &m.placement == placement && m.tasks == tasks)
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

    /// Statistics per task count and placement over the repetitions, in the order given.
    pub fn summaries<'a>(&'a self, placements: &'a [Placement]) -> Vec<PlacementSummary<'a>> {
        let mut summaries = Vec::new();
        for tasks in self.task_counts() {
            for placement in placements {
                let rates: Vec<f64> = self.of(placement, tasks).map(Measurement::faults_per_sec).collect();
                let Some(rate) = stats::summarize(&rates) else { continue };
                let overheads: Vec<f64> =
                    self.of(placement, tasks).filter_map(|m| self.ratio_vs_root(m).map(|ratio| 1.0 / ratio)).collect();
                let mean_seconds = |get: fn(&crate::run::WorkerResult) -> u64| {
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
                    overhead_vs_root: if placement.is_root() { None } else { stats::ratio_interval(&overheads) },
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
                (same.len() > 1).then(|| {
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
    pub overhead_vs_root: Option<stats::RatioInterval>,
    /// Workers' user and system CPU seconds, summed over workers, mean over repetitions.
    pub user_s: f64,
    pub sys_s: f64,
    /// Rate over (the smallest task count's rate x tasks / that count); None without a sweep.
    pub vs_linear: Option<f64>,
}

fn placement_name<S: serde::Serializer>(placement: &&Placement, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&placement.name)
}

/// Warnings about figures that should not be trusted, per issue: variation, skew, stolen CPU.
fn reliability_warnings(report: &Report, options: &RunOptions) -> Vec<String> {
    let mut warnings = Vec::new();
    for summary in report.summaries(&options.placements) {
        if summary.faults_per_sec.n > 1 && summary.faults_per_sec.cv_pct > 5.0 {
            warnings.push(format!(
                "{}: {}/s varies {:.1}% (CV) over {} repetitions, above 5%: the machine is noisy; ratios below that size are not resolved",
                summary.placement.name, report.unit.name(), summary.faults_per_sec.cv_pct, summary.faults_per_sec.n
            ));
        }
    }
    let interval_ns = options.interval.as_nanos() as f64;
    for m in &report.measurements {
        if m.run.start_skew_ns as f64 > 0.1 * interval_ns {
            warnings.push(format!(
                "{} repetition {}: workers started {:.0} us apart, over 10% of the sampling interval",
                m.placement.name,
                m.repetition,
                m.run.start_skew_ns as f64 / 1e3
            ));
        }
        // Round-robin placement puts k workers on a CPU on purpose: each is owed 1/k of it.
        for worker in &m.run.workers {
            let sharing = m.run.workers.iter().filter(|w| w.cpu == worker.cpu).count() as f64;
            if worker.cpu_share * sharing < 0.95 {
                let warning = format!(
                    "{} repetition {}: the worker on CPU {} ran only {:.0}% of the time{}: other load shares that CPU",
                    m.placement.name,
                    m.repetition,
                    worker.cpu,
                    100.0 * worker.cpu_share,
                    if sharing > 1.0 { format!(" (of its 1/{sharing} share)") } else { String::new() }
                );
                if !warnings.contains(&warning) {
                    warnings.push(warning);
                }
            }
        }
    }
    warnings
}

/// The order placements run in during repetition `repetition` (1-based): forward, then
/// backward (ABBA), so drift over the run weighs on every placement alike.
pub fn order(placements: usize, repetition: u32) -> Vec<usize> {
    let forward: Vec<usize> = (0..placements).collect();
    if repetition % 2 == 1 { forward } else { forward.into_iter().rev().collect() }
}

pub fn run(options: &RunOptions, allowed_cpus: &[usize]) -> Result<Report> {
    let detected = cgroup::detect()?;
    let hierarchy = detected.memory_hierarchy(options.version)?;
    let base = cgroup::resolve_base(&hierarchy, &options.base)?;
    let env = Environment::capture(&detected, &hierarchy, &base, options, allowed_cpus);
    let mut tree = Tree::new(hierarchy.clone(), base, env.cgroup_run_name.clone());
    let leaves = tree.build_all(&options.placements)?;
    let mut warnings = tree.take_notes();
    warnings.extend(other_runs().into_iter().map(|pid| {
        format!("another faultscale run (pid {pid}) is running on this machine: CPUs are shared and both measurements are disturbed")
    }));
    let knobs = tree.take_applied();

    let files = options
        .workload
        .needs_files()
        .then(|| RunFiles::create(&options.tmpdir, &env.cgroup_run_name, options.workload, options.page_size))
        .transpose()?;
    let files_note = files.as_ref().map(|f| format!("{} ({})", f.path().display(), f.filesystem()));
    let mut spec = RunSpec {
        mode: options.mode,
        cpus: options.cpus.clone(),
        settings: options.workload_settings(files.as_ref().map(|f| f.path().to_path_buf())),
        duration: options.duration,
        warmup: options.warmup,
        interval: options.interval,
        kernel_count: options.kernel_count,
    };
    let mut measurements = Vec::new();
    let mut failures = Vec::new();
    let mut interrupted = None;
    let mut sequence = 0;
    let mut oom_kills_seen: std::collections::HashMap<usize, u64> =
        leaves.iter().enumerate().map(|(i, leaf)| (i, memcg::oom_kills(&leaf.fs_path).unwrap_or(0))).collect();
    if let Some(&most) = options.task_counts.iter().max()
        && most > options.cpus.len()
    {
        warnings.push(format!(
            "{most} tasks on {} CPUs: tasks beyond the CPUs are placed round-robin and share CPUs",
            options.cpus.len()
        ));
    }
    let total_measurements = options.repeat as usize * options.task_counts.len() * options.placements.len();
    let mut progress = crate::output::progress::Progress::new(options.quiet, shape_unit(&spec));
    'repetitions: for repetition in 1..=options.repeat {
        for &tasks in &options.task_counts {
            spec.cpus = crate::options::cpus_for_tasks(&options.cpus, tasks);
            for index in order(options.placements.len(), repetition) {
                let placement = &options.placements[index];
                let mut warn = |w: String| {
                    if !warnings.contains(&w) {
                        warnings.push(w);
                    }
                };
                let measurements_left = total_measurements - sequence - 1;
                progress.start(
                    format!("{} rep {repetition}/{}, {tasks} tasks", placement.name, options.repeat),
                    measurements_left as f64 * (options.warmup + options.duration).as_secs_f64(),
                );
                match run::measure(&spec, &leaves[index], &hierarchy, &mut warn, &mut progress) {
                    Ok(placement_run) => measurements.push(Measurement {
                        placement: placement.clone(),
                        leaf: leaves[index].clone(),
                        tasks,
                        repetition,
                        sequence,
                        run: placement_run,
                    }),
                    Err(e) => {
                        if let Some(Interrupted(signal)) = e.downcast_ref::<Interrupted>() {
                            interrupted = Some((*signal, repetition));
                            break 'repetitions;
                        }
                        match e.downcast::<WorkerDied>() {
                            Ok(died) => {
                                // Name an OOM kill from the memcg's own counter, not a guess.
                                let leaf = &leaves[index];
                                let kills = memcg::oom_kills(&leaf.fs_path).unwrap_or(0);
                                let seen = oom_kills_seen.entry(index).or_insert(0);
                                let reason = if kills > *seen {
                                    format!("{}; the OOM killer ran in {} (oom_kill {kills})", died.0, leaf.cgroup_path)
                                } else {
                                    died.0
                                };
                                *seen = kills;
                                failures.push(Failure { placement: placement.clone(), tasks, repetition, reason })
                            }
                            Err(e) => return Err(e.context(format!("measuring {}", placement.name))),
                        }
                    }
                }
                sequence += 1;
            }
        }
    }
    progress.clear();
    // A stop signal ends the run with its completed repetitions only.
    if let Some((_, repetition)) = interrupted {
        keep_completed(&mut measurements, repetition);
    }
    let interrupted = interrupted.map(|(signal, _)| signal);
    tree.remove()?;
    // SIGSTOP freezes each worker mid-iteration: the kernel has counted up to one iteration's
    // faults per worker that the loop counter has not. That much difference is the protocol,
    // not a disagreement; anything beyond it and 1% is.
    let shape = crate::workload::shape(&spec.settings);
    for m in measurements.iter().filter(|_| shape.exact) {
        let loop_faults = m.run.loop_faults();
        let kernel_faults = m.run.kernel_faults();
        let in_flight = (m.run.workers.len() as u64 * shape.per_iteration) as f64;
        if kernel_faults > 0 && loop_faults.abs_diff(kernel_faults) as f64 > 0.01 * kernel_faults as f64 + in_flight {
            warnings.push(format!(
                "{} repetition {}: loop counted {loop_faults} faults, the kernel {kernel_faults} ({:+.2}%): the loop is not the only source of faults, or faults are missed",
                m.placement.name,
                m.repetition,
                100.0 * (loop_faults as f64 - kernel_faults as f64) / kernel_faults as f64
            ));
        }
    }
    drop(files);
    let mut report =
        Report { env, knobs, files: files_note, unit: shape.unit, measurements, failures, warnings, interrupted };
    let reliability = reliability_warnings(&report, options);
    report.warnings.extend(reliability);
    Ok(report)
}

/// Harness processes of other faultscale runs: processes named faultscale whose parent is not
/// a faultscale process (that excludes every run's workers) and that are not this process.
fn other_runs() -> Vec<u32> {
    let own = std::process::id();
    let comm_and_parent = |pid: u32| -> Option<(String, u32)> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let comm = stat[stat.find('(')? + 1..stat.rfind(')')?].to_string();
        let parent = stat[stat.rfind(')')? + 1..].split_whitespace().nth(1)?.parse().ok()?;
        Some((comm, parent))
    };
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut pids: Vec<u32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != own)
        .filter(|&pid| match comm_and_parent(pid) {
            Some((comm, parent)) if comm == "faultscale" => {
                comm_and_parent(parent).map(|(parent_comm, _)| parent_comm != "faultscale").unwrap_or(true)
            }
            _ => false,
        })
        .collect();
    pids.sort_unstable();
    pids
}

fn shape_unit(spec: &RunSpec) -> &'static str {
    crate::workload::shape(&spec.settings).unit.name()
}

/// Drops the measurements of the repetition a stop signal cut short; earlier ones are whole.
fn keep_completed(measurements: &mut Vec<Measurement>, interrupted_in: u32) {
    measurements.retain(|m| m.repetition < interrupted_in);
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use crate::run::{KernelCountSource, Sample, WorkerResult};

    /// A report as a two-CPU run of root and child over `rates.len()` repetitions would give,
    /// with the given per-repetition (root, child) rates over 2-second measurements.
    pub fn synthetic_report(rates: &[(f64, f64)]) -> Report {
        let env = crate::environment::Environment::for_tests();
        let mut measurements = Vec::new();
        for (index, &(root, child)) in rates.iter().enumerate() {
            for (placement, rate, path) in
                [(Placement::root(), root, "/base"), (Placement::plain("child".into(), 1), child, "/base/fs-child")]
            {
                let faults = (rate * 2.0) as u64;
                let worker = |cpu: usize, faults: u64| WorkerResult {
                    cpu,
                    pid: 100 + cpu as i32,
                    iterations: faults / 256,
                    loop_faults: faults,
                    kernel_faults: faults + 10,
                    perf: None,
                    user_us: 1,
                    sys_us: 1_999_000,
                    cpu_share: 1.0,
                    start_offset_ns: 1000 * cpu as u64,
                };
                let run = PlacementRun {
                    elapsed_ns: 2_000_000_000,
                    start_skew_ns: 1000,
                    workers: vec![worker(0, faults / 2), worker(1, faults - faults / 2)],
                    memcg_pgfault: Some(faults + 20),
                    kernel_source: KernelCountSource::Minflt,
                    samples: vec![Sample {
                        elapsed_ns: 2_000_000_000,
                        iterations: vec![faults / 512, (faults - faults / 2) / 256],
                    }],
                };
                let sequence = measurements.len();
                measurements.push(Measurement {
                    placement,
                    tasks: 2,
                    leaf: Leaf { fs_path: path.into(), cgroup_path: path.into() },
                    repetition: index as u32 + 1,
                    sequence,
                    run,
                });
            }
        }
        Report {
            env,
            knobs: Vec::new(),
            files: None,
            unit: crate::workload::Unit::Faults,
            measurements,
            failures: Vec::new(),
            warnings: Vec::new(),
            interrupted: None,
        }
    }

    #[test]
    fn summaries_and_ratios_come_from_paired_repetitions() {
        let report = synthetic_report(&[(100_000.0, 90_000.0), (110_000.0, 100_000.0), (105_000.0, 95_000.0)]);
        let placements = [Placement::root(), Placement::plain("child".into(), 1)];
        let summaries = report.summaries(&placements);
        assert_eq!(summaries[0].faults_per_sec.mean, 105_000.0);
        assert!(summaries[0].overhead_vs_root.is_none());
        let overhead = summaries[1].overhead_vs_root.unwrap();
        let expected = (100.0 / 90.0 + 110.0 / 100.0 + 105.0 / 95.0) / 3.0;
        assert!((overhead.mean - expected).abs() < 1e-9, "{} vs {expected}", overhead.mean);
        assert!(overhead.excludes(1.0));
        let child_first = report.of(&placements[1], 2).next().unwrap();
        assert!((report.ratio_vs_root(child_first).unwrap() - 0.9).abs() < 1e-12);
    }

    #[test]
    fn repetitions_alternate_direction() {
        assert_eq!(order(3, 1), vec![0, 1, 2]);
        assert_eq!(order(3, 2), vec![2, 1, 0]);
        assert_eq!(order(3, 3), vec![0, 1, 2]);
        assert_eq!(order(1, 2), vec![0]);
    }

    #[test]
    fn a_repetition_is_complete_only_with_every_placement() {
        // Repetition 2 was interrupted after its first placement.
        let mut measurements = synthetic_report(&[(1.0, 1.0), (1.0, 1.0)]).measurements;
        measurements.pop();
        keep_completed(&mut measurements, 2);
        assert!(measurements.iter().all(|m| m.repetition == 1));
        assert_eq!(measurements.len(), 2);
    }
}
