//! The session's loop and conclusions driven through a fake `Slicer`: no fork, no cgroup, no
//! root, milliseconds per test.

use std::collections::HashMap;

use super::*;
use crate::plan::Placement;
use crate::report::fixture::test_plan;
use crate::run::{KernelCountSource, Notice, Sample, SliceResult, Tick, WorkerResult};

/// What the fake answers for one call (by its 0-based position in the run).
enum Answer {
    /// A slice measured at the placement's rate but stopped 50% late, at 10x the rate.
    Overran,
    /// A slice that could not be measured (e.g. a cgroup that could not be joined).
    Fails(&'static str),
    /// A worker died; `oom_kills` of its leaf goes up by this much first.
    Dies(&'static str, u64),
    /// A worker was killed by SIGBUS (a file page its filesystem could not allocate).
    Bus(&'static str),
    /// A stop signal reached the harness.
    Interrupted(i32),
    /// A baseline that counted nothing.
    Empty,
    /// The kernel counted twice what the loop did.
    KernelDisagrees,
    /// Each worker on its CPU and waiting for it these shares of the slice (schedstat).
    Times { on_cpu: f64, wait: f64 },
}

/// Measures nothing: answers each slice with faults at a rate of its placement (the baseline
/// 100,000/s per worker, others 90,000/s), or with what `answers` says for that call.
#[derive(Default)]
struct FakeSlicer {
    answers: HashMap<usize, Answer>,
    /// (leaf's cgroup path, CPUs, each worker's cgroup path) per call.
    calls: Vec<(String, Vec<usize>, Vec<String>)>,
    oom_kills: HashMap<String, u64>,
    /// Notices every slice reports (e.g. no hardware counters).
    notices: Vec<Notice>,
    /// (placement, tasks) per set-up, and how often every crew was retired.
    set_ups: Vec<(usize, usize)>,
    /// The warmup each set-up was given.
    warmups: Vec<std::time::Duration>,
    retired: usize,
    /// Every rate times this (1 where None): a loop whose iteration outlasts most of a slice.
    rate_scale: Option<f64>,
}

const SLICE_NS: u64 = 1_000_000_000;

fn run_of(cpus: &[usize], per_worker_rate: f64, elapsed_ns: u64) -> SliceResult {
    let faults = (per_worker_rate * elapsed_ns as f64 / 1e9) as u64;
    let workers = cpus
        .iter()
        .map(|&cpu| WorkerResult {
            cpu,
            pid: 1000 + cpu as i32,
            iterations: faults / 256,
            loop_faults: faults / 256 * 256,
            kernel_faults: faults / 256 * 256 + 3,
            perf: None,
            user_us: 1,
            sys_us: elapsed_ns / 1000 - 1,
            cpu_share: 1.0,
            start_offset_ns: 1000,
            on_cpu_ns: None,
            wait_ns: None,
            timeslices: None,
            steal_ns: None,
            cgroup_path: None,
            span_ns: elapsed_ns,
        })
        .collect();
    SliceResult {
        elapsed_ns,
        start_skew_ns: 1000,
        workers,
        memcg_pgfault: Some(faults * cpus.len() as u64),
        kernel_source: KernelCountSource::Minflt,
        samples: vec![Sample { elapsed_ns, iterations: vec![faults / 256; cpus.len()] }],
        overran: false,
        memcg: Default::default(),
        psi_scope: None,
        profile: None,
        locks: None,
        harness: None,
    }
}

impl Slicer for FakeSlicer {
    fn measure(
        &mut self,
        slice: &SliceSpec,
        warn: &mut dyn FnMut(Notice),
        _progress: &mut dyn Progress,
    ) -> Result<SliceResult> {
        let call = self.calls.len();
        let path = slice.leaf.cgroup_path.clone();
        let worker_paths = slice.worker_leaves.iter().map(|l| l.cgroup_path.clone()).collect();
        self.calls.push((path.clone(), slice.cpus.clone(), worker_paths));
        for notice in &self.notices {
            warn(notice.clone());
        }
        let rate = if path.ends_with("base") { 100_000.0 } else { 90_000.0 } * self.rate_scale.unwrap_or(1.0);
        match self.answers.remove(&call) {
            None => Ok(run_of(&slice.cpus, rate, SLICE_NS)),
            Some(Answer::Overran) => {
                Ok(SliceResult { overran: true, ..run_of(&slice.cpus, rate * 10.0, SLICE_NS * 3 / 2) })
            }
            Some(Answer::Fails(why)) => Err(anyhow::anyhow!("{why}")),
            Some(Answer::Dies(why, kills)) => {
                *self.oom_kills.entry(path).or_insert(0) += kills;
                Err(WorkerDied::because(why.into()).into())
            }
            Some(Answer::Bus(why)) => Err(WorkerDied { why: why.into(), signal: Some(libc::SIGBUS) }.into()),
            Some(Answer::Interrupted(signal)) => Err(error::Error::Interrupted(signal).into()),
            Some(Answer::Empty) => Ok(run_of(&slice.cpus, 0.0, SLICE_NS)),
            Some(Answer::Times { on_cpu, wait }) => {
                let mut run = run_of(&slice.cpus, rate, SLICE_NS);
                for worker in &mut run.workers {
                    worker.on_cpu_ns = Some((on_cpu * SLICE_NS as f64) as u64);
                    worker.wait_ns = Some((wait * SLICE_NS as f64) as u64);
                    worker.steal_ns = Some(0);
                    worker.cpu_share = on_cpu;
                }
                Ok(run)
            }
            Some(Answer::KernelDisagrees) => {
                let mut run = run_of(&slice.cpus, rate, SLICE_NS);
                run.workers.iter_mut().for_each(|w| w.kernel_faults = 2 * w.loop_faults);
                Ok(run)
            }
        }
    }

    fn set_up(&mut self, slice: &SliceSpec, _warn: &mut dyn FnMut(Notice)) -> Result<()> {
        self.set_ups.push((slice.placement, slice.cpus.len()));
        self.warmups.push(slice.warmup);
        Ok(())
    }

    fn retire(&mut self) {
        self.retired += 1;
    }

    fn oom_kills(&self, leaf: &Leaf) -> u64 {
        self.oom_kills.get(&leaf.cgroup_path).copied().unwrap_or(0)
    }
}

/// Records what the progress display was told.
#[derive(Default)]
struct Recorded {
    started: Vec<(String, f64)>,
    cleared: bool,
}

impl Progress for Recorded {
    fn start(&mut self, context: String, after_s: f64) {
        self.started.push((context, after_s));
    }
    fn tick(&mut self, _tick: &Tick) {}
    fn clear(&mut self) {
        self.cleared = true;
    }
}

fn leaf(path: &str) -> Leaf {
    Leaf { fs_path: format!("/sys/fs/cgroup/memory{path}").into(), cgroup_path: path.into(), siblings: Vec::new() }
}

/// A plan of `placements` (the baseline first) over `slices` slices and `repeat` repetitions,
/// a report ready for the loop, and each placement's leaf.
fn session_of(placements: Vec<Placement>, slices: u32, repeat: u32, task_counts: Vec<usize>) -> (Report, Vec<Leaf>) {
    let mut plan = test_plan();
    plan.placements = placements;
    plan.slices = slices;
    plan.repeat = repeat;
    plan.task_counts = task_counts;
    plan.duration = std::time::Duration::from_secs(slices as u64);
    plan.placements[0].name = "base".into();
    let leaves = plan
        .placements
        .iter()
        .map(|p| if p.is_baseline() { leaf("/fs/base") } else { leaf(&format!("/fs/{}", p.name)) })
        .collect();
    let mut report = crate::report::fixture::synthetic_report(&[]);
    report.plan = plan;
    report.finished = false;
    (report, leaves)
}

fn baseline_and_child(slices: u32) -> (Report, Vec<Leaf>) {
    session_of(vec![Placement::baseline(), Placement::plain("child".into(), 1)], slices, 1, vec![2])
}

/// The loop and the conclusions, as `run` does them between set-up and the tree's removal.
fn drive(report: &mut Report, leaves: &[Leaf], slicer: &mut FakeSlicer) -> Vec<usize> {
    let leaves = vec![leaves.to_vec(); report.plan.generations as usize];
    let mut checkpoints = Vec::new();
    let mut progress = Recorded::default();
    measure_all(report, &leaves, slicer, &mut progress, &mut |r: &Report| checkpoints.push(r.measurements.len()));
    assert!(progress.cleared, "the progress display is cleared at the end");
    crate::report::judging::conclude(report);
    checkpoints
}

fn placements_measured(slicer: &FakeSlicer) -> Vec<&str> {
    slicer.calls.iter().map(|(path, _, _)| path.rsplit('/').next().unwrap()).collect()
}

#[test]
fn placements_alternate_abba_over_rounds_and_repetitions_with_each_task_count_in_a_round() {
    let nested = Placement::plain("nested:2".into(), 2);
    let (mut report, leaves) =
        session_of(vec![Placement::baseline(), Placement::plain("child".into(), 1), nested], 2, 2, vec![1, 2]);
    report.plan.warmup = std::time::Duration::from_millis(100);
    let mut slicer = FakeSlicer::default();
    drive(&mut report, &leaves, &mut slicer);
    let forward = ["base", "child", "nested:2"];
    let backward = ["nested:2", "child", "base"];
    // Task count by task count (one count's workers alive at a time), ABBA within each.
    let expected: Vec<&str> = [forward, backward, forward, backward, forward, backward, forward, backward].concat();
    assert_eq!(placements_measured(&slicer), expected);
    let cpus: Vec<&Vec<usize>> = slicer.calls.iter().map(|(_, cpus, _)| cpus).collect();
    assert!(cpus[..12].iter().all(|c| c == &&vec![0]) && cpus[12..].iter().all(|c| c == &&vec![0, 1]));
    // Every placement set up before a task count's first slice, every crew retired after it.
    assert_eq!(slicer.set_ups, [(0, 1), (1, 1), (2, 1), (0, 2), (1, 2), (2, 2)]);
    // The first crew at each task count warms up: 2 tasks use a CPU that 1 did not.
    let ms = std::time::Duration::from_millis;
    assert_eq!(slicer.warmups, [ms(100), ms(0), ms(0), ms(100), ms(0), ms(0)]);
    assert_eq!(slicer.retired, 3, "before each task count, and at the end");
    let order: Vec<(u32, usize, usize)> = report.measurements.iter().map(|m| (m.round, m.tasks, m.sequence)).collect();
    assert_eq!(order.len(), 24);
    assert_eq!(order[..4], [(1, 1, 0), (1, 1, 1), (1, 1, 2), (2, 1, 3)]);
    assert_eq!(order[23], (4, 2, 23));
    assert_eq!(report.plan.repetition_of(3), 2);
}

#[test]
fn each_generation_of_rounds_gets_crews_of_its_own_and_only_the_first_crew_warms_up() {
    let (mut report, leaves) = baseline_and_child(8);
    report.plan.generations = 4;
    report.plan.warmup = std::time::Duration::from_millis(100);
    let mut slicer = FakeSlicer::default();
    drive(&mut report, &leaves, &mut slicer);
    // Rounds 1-2, 3-4, 5-6, 7-8: every crew retired and both placements set up anew.
    assert_eq!(slicer.set_ups, [(0, 2), (1, 2)].repeat(4));
    assert_eq!(slicer.retired, 5, "before each generation, and at the end");
    let generations: Vec<u32> = report.measurements.iter().map(|m| report.plan.generation_of(m.round)).collect();
    assert_eq!(generations, [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]);
    let ms = |n| std::time::Duration::from_millis(n);
    // The first crew (of the one task count) warms the CPUs; every other crew warms up in
    // its first park's iteration and each slice's settling window alone.
    assert_eq!(slicer.warmups, [ms(100), ms(0), ms(0), ms(0), ms(0), ms(0), ms(0), ms(0)]);
    assert_eq!(report.measurements.len(), 16, "every round measured once per placement");
}

#[test]
fn an_overran_slice_is_left_out_of_the_statistics_and_said_once() {
    let (mut report, leaves) = baseline_and_child(3);
    // Call 3 is round 2's first slice: ABBA puts the child first there.
    let mut slicer = FakeSlicer { answers: HashMap::from([(2, Answer::Overran)]), ..Default::default() };
    drive(&mut report, &leaves, &mut slicer);
    assert_eq!(placements_measured(&slicer)[2], "child");
    let child = report.summaries().into_iter().find(|s| s.placement.name == "child").unwrap();
    assert_eq!(child.faults_per_sec.n, 2, "the overran slice does not count");
    assert!((child.faults_per_sec.mean - 180_000.0).abs() < 1_000.0, "{}", child.faults_per_sec.mean);
    let overran: Vec<&Warning> = report.warnings.iter().filter(|w| matches!(w, Warning::Overran { .. })).collect();
    assert_eq!(overran.len(), 1);
    assert!(
        matches!(overran[0], Warning::Overran { slice, measured_s, .. } if slice == "slice 2" && (*measured_s - 1.5).abs() < 1e-9)
    );
    assert!(!report.warnings.iter().any(|w| matches!(w, Warning::Noisy { .. })));
}

#[test]
fn a_failed_placement_is_recorded_while_the_others_report() {
    let (mut report, leaves) = baseline_and_child(3);
    let mut slicer = FakeSlicer {
        answers: HashMap::from([(1, Answer::Fails("--cgroup child: mkdir: No space"))]),
        ..Default::default()
    };
    let checkpoints = drive(&mut report, &leaves, &mut slicer);
    assert_eq!(report.failures.len(), 1);
    let failure = &report.failures[0];
    assert_eq!((failure.placement.name.as_str(), failure.round, failure.tasks), ("child", 1, 2));
    assert_eq!(failure.reason, "--cgroup child: mkdir: No space");
    assert_eq!(report.measurements.len(), 5, "every other slice still measured");
    assert_eq!(report.of(&report.plan.placements[1], 2).count(), 2);
    // A checkpoint after every measured slice, none for the failed one.
    assert_eq!(checkpoints, [1, 2, 3, 4, 5]);
    assert!(report.finished);
}

#[test]
fn checkpoints_follow_every_slice_with_the_report_so_far() {
    let (mut report, leaves) = baseline_and_child(4);
    let mut slicer = FakeSlicer::default();
    let checkpoints = drive(&mut report, &leaves, &mut slicer);
    assert_eq!(checkpoints, (1..=8).collect::<Vec<_>>());
}

#[test]
fn a_checkpoint_between_a_rounds_slices_holds_it_incomplete() {
    let (mut report, leaves) = baseline_and_child(2);
    let mut complete = Vec::new();
    let mut progress = Recorded::default();
    measure_all(
        &mut report,
        std::slice::from_ref(&leaves),
        &mut FakeSlicer::default(),
        &mut progress,
        &mut |r: &Report| complete.push(r.measurements.iter().filter(|m| m.round_complete).count()),
    );
    // A SIGKILL after round 2's first slice leaves a file in which round 2 counts nowhere.
    assert_eq!(complete, [0, 2, 2, 4]);
}

#[test]
fn a_signal_ends_the_run_keeping_every_completed_slice_and_flagging_its_round() {
    let (mut report, leaves) = baseline_and_child(3);
    // Round 2: its first slice measured, the second interrupted.
    let mut slicer = FakeSlicer { answers: HashMap::from([(3, Answer::Interrupted(2))]), ..Default::default() };
    let checkpoints = drive(&mut report, &leaves, &mut slicer);
    assert_eq!(slicer.calls.len(), 4, "no slice is started after the signal");
    assert_eq!(report.interrupted, Some(2));
    assert_eq!(checkpoints, [1, 2, 3], "round 2's first slice was on disk until the signal");
    // Round 2's measured slice is kept, flagged, and in no figure.
    assert_eq!(report.measurements.len(), 3);
    let cut: Vec<&Measurement> = report.measurements.iter().filter(|m| !m.round_complete).collect();
    assert_eq!((cut.len(), cut[0].round), (1, 2));
    assert!(!report.counted(cut[0]));
    assert!(report.summaries().iter().all(|s| s.faults_per_sec.n == 1), "only round 1 in the figures");
    assert!(report.failures.is_empty(), "an interrupt is not a failure");
}

/// The space a file workload's files need is checked before measuring; a filesystem filled
/// during the run (by another process) still names the free space beside the SIGBUS.
#[test]
fn a_sigbus_of_a_file_workload_names_the_tmpdirs_free_space() {
    let (mut report, leaves) = baseline_and_child(1);
    report.plan.workload.kind = crate::workload::WorkloadKind::named("file-shared").unwrap();
    report.plan.tmpdir = "/tmp".into();
    let died = "worker 1234 on CPU 1 died: killed by SIGBUS";
    let mut slicer = FakeSlicer { answers: HashMap::from([(1, Answer::Bus(died))]), ..Default::default() };
    drive(&mut report, &leaves, &mut slicer);
    let reason = &report.failures[0].reason;
    assert!(reason.starts_with(&format!("{died}; --tmpdir /tmp has ")) && reason.contains(" KiB free now"), "{reason}");
}

#[test]
fn a_worker_killed_by_the_oom_killer_is_named_from_the_memcg_count() {
    let (mut report, leaves) = baseline_and_child(2);
    let died = "worker 1234 on CPU 1 stopped: killed by SIGKILL";
    let mut slicer = FakeSlicer { answers: HashMap::from([(1, Answer::Dies(died, 1))]), ..Default::default() };
    // The count before the run is not this run's: only what grew during the slice is blamed.
    slicer.oom_kills.insert("/fs/child".into(), 4);
    drive(&mut report, &leaves, &mut slicer);
    assert_eq!(report.failures.len(), 1);
    assert_eq!(
        report.failures[0].reason,
        format!("{died}; the OOM killer ran in /fs/child (its oom_kill count rose by 1 during this run's slice, to 5)")
    );
}

#[test]
fn a_death_without_an_oom_kill_is_not_blamed_on_it() {
    let (mut report, leaves) = baseline_and_child(2);
    let died = "worker 1234 on CPU 0 stopped: killed by SIGSEGV";
    let mut slicer = FakeSlicer { answers: HashMap::from([(0, Answer::Dies(died, 0))]), ..Default::default() };
    slicer.oom_kills.insert("/fs/base".into(), 7);
    drive(&mut report, &leaves, &mut slicer);
    assert_eq!(report.failures[0].reason, died);
    assert_eq!(report.failures[0].placement.name, "base");
}

#[test]
fn a_baseline_that_never_counted_becomes_a_failure_and_one_starved_slice_is_left_out() {
    // Every baseline slice empty: nothing to divide by, a failure each.
    let (mut report, leaves) = baseline_and_child(2);
    let answers = HashMap::from([(0, Answer::Empty), (3, Answer::Empty)]);
    let mut slicer = FakeSlicer { answers, ..Default::default() };
    drive(&mut report, &leaves, &mut slicer);
    assert_eq!(report.measurements.len(), 2);
    assert_eq!(report.failures.len(), 2);
    assert!(
        report.failures[0].reason.starts_with("the baseline counted no whole iteration in 1.000 s"),
        "{}",
        report.failures[0].reason
    );
    // One empty baseline slice among slices that counted: starved, kept flagged, no failure.
    let (mut report, leaves) = baseline_and_child(2);
    let mut slicer = FakeSlicer { answers: HashMap::from([(0, Answer::Empty)]), ..Default::default() };
    drive(&mut report, &leaves, &mut slicer);
    assert_eq!((report.measurements.len(), report.failures.len()), (4, 0));
    assert!(report.measurements[0].result.overran && !report.counted(&report.measurements[0]));
    let said: Vec<String> = report.warnings.iter().map(|w| w.to_string()).collect();
    assert!(said.iter().any(|w| w.starts_with("base slice 1: the baseline counted no whole iteration")), "{said:?}");
    let child = report.summaries().into_iter().find(|s| s.placement.name == "child").unwrap();
    assert_eq!(child.throughput_vs_baseline.unwrap().n, 1, "round 1's pair is left out");
    assert!(child.overhead_vs_baseline.is_none(), "the fake's slices have no on-CPU times");
}

#[test]
fn a_loop_of_few_iterations_a_slice_is_said_to_stop_its_workers_apart() {
    // 1,000 faults/s a worker: 3 whole 256-page iterations in each 1 s slice.
    let (mut report, leaves) = baseline_and_child(2);
    let mut slicer = FakeSlicer { rate_scale: Some(0.01), ..Default::default() };
    drive(&mut report, &leaves, &mut slicer);
    let few: Vec<String> =
        report.warnings.iter().filter(|w| matches!(w, Warning::FewIterations { .. })).map(|w| w.to_string()).collect();
    assert_eq!(few.len(), 2, "{few:?}");
    assert!(
        few[0].starts_with(
            "base: a worker completed 3.0 whole iterations of its loop per 1000 ms window (median) of a 1000 ms slice"
        ),
        "{few:?}"
    );
    assert!(
        few[0].contains("(an iteration is some 333 ms), so the windows ran 0% past the slice")
            && few[0].ends_with("(fewer --slices; at one slice, a longer --duration)"),
        "{few:?}"
    );
    // 390 iterations a slice at the fake's own rates: nothing said.
    let (mut report, leaves) = baseline_and_child(2);
    drive(&mut report, &leaves, &mut FakeSlicer::default());
    assert!(!report.warnings.iter().any(|w| matches!(w, Warning::FewIterations { .. })));
}

#[test]
fn loop_and_kernel_counts_that_disagree_are_warned_per_slice() {
    let (mut report, leaves) = baseline_and_child(2);
    let mut slicer = FakeSlicer { answers: HashMap::from([(3, Answer::KernelDisagrees)]), ..Default::default() };
    drive(&mut report, &leaves, &mut slicer);
    let disagree: Vec<&Warning> =
        report.warnings.iter().filter(|w| matches!(w, Warning::CountsDisagree { .. })).collect();
    assert_eq!(disagree.len(), 1);
    assert!(matches!(disagree[0], Warning::CountsDisagree { slice, .. } if slice == "slice 2"));
}

#[test]
fn a_notice_from_every_slice_is_one_warning() {
    let (mut report, leaves) = baseline_and_child(3);
    let mut slicer = FakeSlicer { notices: vec![Notice::NoHardwareCounters], ..Default::default() };
    drive(&mut report, &leaves, &mut slicer);
    let count = report.warnings.iter().filter(|w| **w == Warning::Measurement(Notice::NoHardwareCounters)).count();
    assert_eq!(count, 1);
}

#[test]
fn siblings_are_dealt_so_workers_sharing_a_cpu_are_in_different_memcgs() {
    let mut siblings = Placement::plain("siblings:2".into(), 1);
    siblings.siblings = 2;
    let (mut report, mut leaves) = session_of(vec![Placement::baseline(), siblings], 1, 1, vec![4]);
    leaves[1].siblings = vec![leaf("/fs/siblings:2/s1"), leaf("/fs/siblings:2/s2")];
    let mut slicer = FakeSlicer::default();
    drive(&mut report, &leaves, &mut slicer);
    let (_, cpus, worker_paths) = &slicer.calls[1];
    assert_eq!(cpus, &vec![0, 1, 0, 1]);
    // Workers 0 and 2 share CPU 0, 1 and 3 share CPU 1: each pair split over both siblings.
    assert_ne!(worker_paths[0], worker_paths[2]);
    assert_ne!(worker_paths[1], worker_paths[3]);
    assert_eq!(worker_paths.iter().filter(|p| p.ends_with("s1")).count(), 2);
    assert!(slicer.calls[0].2.iter().all(|p| p == "/fs/base"), "the baseline's workers are all in its leaf");
}

#[test]
fn progress_names_each_slice_and_the_time_left_after_it() {
    let (mut report, leaves) = baseline_and_child(2);
    let mut progress = Recorded::default();
    measure_all(
        &mut report,
        std::slice::from_ref(&leaves),
        &mut FakeSlicer::default(),
        &mut progress,
        &mut |_: &Report| {},
    );
    let labels: Vec<&str> = progress.started.iter().map(|(label, _)| label.as_str()).collect();
    assert_eq!(
        labels,
        ["base slice 1/2, 2 tasks", "child slice 1/2, 2 tasks", "child slice 2/2, 2 tasks", "base slice 2/2, 2 tasks"]
    );
    let left: Vec<f64> = progress.started.iter().map(|(_, left)| *left).collect();
    assert_eq!(left, [3.0, 2.0, 1.0, 0.0]);
}

#[test]
fn the_schedule_is_every_placement_once_per_round_and_task_count() {
    let (report, _) = session_of(vec![Placement::baseline(), Placement::plain("child".into(), 1)], 3, 2, vec![1, 2, 4]);
    let slices = schedule(&report.plan);
    assert_eq!(slices.len(), 6 * 3 * 2);
    for round in 1..=6 {
        for tasks in [1, 2, 4] {
            let placements: Vec<usize> =
                slices.iter().filter(|s| s.round == round && s.tasks == tasks).map(|s| s.placement).collect();
            let expected = if round % 2 == 1 { vec![0, 1] } else { vec![1, 0] };
            assert_eq!(placements, expected, "round {round}, {tasks} tasks");
        }
    }
}

#[test]
fn time_off_the_cpu_is_named_as_measured_never_blamed_on_other_load_without_waiting() {
    let (mut report, leaves) = baseline_and_child(2);
    // The child's slice 1 blocked 60% (reclaim, say) without waiting; the baseline's slice 2
    // waited 40% for its CPU.
    let answers =
        HashMap::from([(1, Answer::Times { on_cpu: 0.4, wait: 0.0 }), (3, Answer::Times { on_cpu: 0.6, wait: 0.4 })]);
    let mut slicer = FakeSlicer { answers, ..Default::default() };
    drive(&mut report, &leaves, &mut slicer);
    // Each CPU's case, as --verbose names them.
    let each: Vec<String> = report.slice_warnings.iter().map(|w| w.to_string()).collect();
    let blocked: Vec<&String> = each.iter().filter(|w| w.contains("blocked or stopped")).collect();
    assert_eq!(blocked.len(), 2, "{each:?}");
    assert!(blocked.iter().all(|w| w.starts_with("child slice 1:") && w.contains("60%")), "{each:?}");
    let waited: Vec<&String> = each.iter().filter(|w| w.contains("waited for it")).collect();
    assert_eq!(waited.len(), 2, "{each:?}");
    assert!(waited.iter().all(|w| w.starts_with("base slice 2:") && w.contains("40%")), "{each:?}");
    // What stderr says: one line a kind and placement; the waiting counted in the disturbed line.
    let said: Vec<String> = report.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(said.iter().filter(|w| w.contains("blocked or stopped")).count(), 1, "{said:?}");
    assert!(!said.iter().any(|w| w.starts_with("base slice 2:")), "{said:?}");
    assert!(said.iter().any(|w| w.starts_with("base: in 1 of 2 slices a worker waited for its CPU")), "{said:?}");
    assert!(!said.iter().any(|w| w.contains("other load") && w.starts_with("child")), "{said:?}");
    // The fake's other slices have no schedstat: there the CPU share alone is judged, and it is full.
    assert!(!said.iter().any(|w| w.contains("no schedstat")), "{said:?}");
}

#[test]
fn workers_sharing_a_cpu_are_judged_together_once_per_cpu() {
    let (mut report, leaves) =
        session_of(vec![Placement::baseline(), Placement::plain("child".into(), 1)], 1, 1, vec![4]);
    let answers = HashMap::from([(1, Answer::Times { on_cpu: 0.4, wait: 0.0 })]);
    let mut slicer = FakeSlicer { answers, ..Default::default() };
    drive(&mut report, &leaves, &mut slicer);
    assert_eq!(slicer.calls[1].1, vec![0, 1, 0, 1]);
    let each: Vec<String> = report.slice_warnings.iter().map(|w| w.to_string()).collect();
    let blocked: Vec<&String> = each.iter().filter(|w| w.contains("blocked or stopped")).collect();
    assert_eq!(blocked.len(), 2, "one per CPU: {each:?}");
    assert!(blocked[0].contains("the 2 workers on CPU 0 were blocked or stopped 60% of their time"), "{each:?}");
    let said: Vec<String> = report.warnings.iter().map(|w| w.to_string()).collect();
    // Waiting for a CPU shared on purpose is no warning.
    assert!(!said.iter().any(|w| w.contains("waited")), "{said:?}");
}

#[test]
fn a_per_slice_warning_is_said_once_per_placement_the_worst_with_its_count() {
    let (mut report, leaves) =
        session_of(vec![Placement::baseline(), Placement::plain("child".into(), 1)], 4, 1, vec![2]);
    // The child's slices in rounds 1, 2 and 3 (calls 1, 2 and 5, ABBA) blocked 60%, 80%, 30%.
    let answers = HashMap::from([
        (1, Answer::Times { on_cpu: 0.4, wait: 0.0 }),
        (2, Answer::Times { on_cpu: 0.2, wait: 0.0 }),
        (5, Answer::Times { on_cpu: 0.7, wait: 0.0 }),
    ]);
    let mut slicer = FakeSlicer { answers, ..Default::default() };
    drive(&mut report, &leaves, &mut slicer);
    let said: Vec<String> = report.warnings.iter().map(|w| w.to_string()).collect();
    let blocked: Vec<&String> = said.iter().filter(|w| w.contains("blocked or stopped")).collect();
    assert_eq!(blocked.len(), 1, "{said:?}");
    assert!(blocked[0].starts_with("child slice 2:") && blocked[0].contains("80%"), "{said:?}");
    assert!(blocked[0].contains("the worst of 3 slices with this warning"), "{said:?}");
    // --verbose names every CPU of every slice.
    assert_eq!(report.slice_warnings.iter().filter(|w| w.to_string().contains("blocked")).count(), 6);
}
