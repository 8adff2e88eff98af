//! A synthetic report for the exporters' tests: a two-CPU run of the baseline and child.

use super::*;
use std::time::Duration;

use crate::cgroup::{BaseSpec, VersionChoice};
use crate::run::{KernelCountSource, Mode, Sample, WorkerResult};
use crate::workload::WorkloadSettings;

/// The plan of a 2 s baseline-vs-child anon run on CPUs 0-1.
pub fn test_plan() -> Plan {
    Plan {
        placements: vec![Placement::baseline(), Placement::plain("child".into(), 1)],
        duration: Duration::from_secs(2),
        slices: 1,
        repeat: 1,
        warmup: Duration::ZERO,
        generations: 1,
        interval: Duration::from_secs(1),
        cpus: vec![0, 1],
        task_counts: vec![2],
        workload: WorkloadSettings::example("anon"),
        mode: Mode::Process,
        kernel_count: KernelCountSource::Minflt,
        tmpdir: "/tmp".into(),
        base: BaseSpec::OwnCgroup,
        version: VersionChoice::Auto,
        profile: false,
        profile_dir: None,
        locks: false,
    }
}

/// A report as a two-CPU run of the baseline and child over `rates.len()` rounds would give,
/// with the given per-round (baseline, child) rates over 2-second measurements.
pub fn synthetic_report(rates: &[(f64, f64)]) -> Report {
    let env = Environment::for_tests();
    let mut measurements = Vec::new();
    for (index, &(baseline, child)) in rates.iter().enumerate() {
        for (placement, rate, path) in
            [(Placement::baseline(), baseline, "/base"), (Placement::plain("child".into(), 1), child, "/base/fs-child")]
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
                on_cpu_ns: None,
                wait_ns: None,
                timeslices: None,
                steal_ns: None,
                cgroup_path: None,
                span_ns: 0,
            };
            let run = SliceResult {
                elapsed_ns: 2_000_000_000,
                start_skew_ns: 1000,
                workers: vec![worker(0, faults / 2), worker(1, faults - faults / 2)],
                memcg_pgfault: Some(faults + 20),
                kernel_source: KernelCountSource::Minflt,
                samples: vec![Sample {
                    elapsed_ns: 2_000_000_000,
                    iterations: vec![faults / 512, (faults - faults / 2) / 256],
                }],
                overran: false,
                memcg: Default::default(),
                psi_scope: None,
                profile: None,
                locks: None,
                harness: None,
            };
            let sequence = measurements.len();
            measurements.push(Measurement {
                placement,
                tasks: 2,
                leaf: Leaf { fs_path: path.into(), cgroup_path: path.into(), siblings: Vec::new() },
                round: index as u32 + 1,
                generation: 1,
                sequence,
                result: run,
                round_complete: true,
            });
        }
    }
    Report {
        plan: test_plan(),
        env,
        knobs: Vec::new(),
        files: None,
        files_fs: None,
        unit: crate::workload::Unit::Faults,
        measurements,
        failures: Vec::new(),
        warnings: Vec::new(),
        removal_error: None,
        interrupted: None,
        finished: true,
        leave_out_memo: Default::default(),
        slice_warnings: Vec::new(),
    }
}

/// `report` as a run of `generations` cgroup instances would give it, one round each (every
/// round its own generation), with --locks' figures on every slice: `wait_ns_per_op(placement,
/// round)` spread over `callers` (kind, caller, parent, share of the wait), one contention per
/// 10,000 ns of wait.
pub fn with_locks(
    mut report: Report,
    wait_ns_per_op: impl Fn(&str, u32) -> f64,
    callers: impl Fn(&str, u32) -> Vec<(&'static str, &'static str, Option<&'static str>, f64)>,
) -> Report {
    use crate::measure::locks::{CallerLocks, LockCounts};
    report.plan.locks = true;
    report.plan.generations = report.measurements.iter().map(|m| m.round).max().unwrap_or(1);
    for m in &mut report.measurements {
        m.generation = m.round;
        let operations = m.result.loop_faults() as f64;
        let wait_ns = (wait_ns_per_op(&m.placement.name, m.round) * operations) as u64;
        let callers = callers(&m.placement.name, m.round)
            .into_iter()
            .map(|(kind, caller, parent, share)| CallerLocks {
                caller: caller.into(),
                parent: parent.map(str::to_string),
                kind: kind.into(),
                contentions: (share * wait_ns as f64 / 10_000.0) as u64,
                wait_ns: (share * wait_ns as f64) as u64,
            })
            .collect::<Vec<_>>();
        let contentions = callers.iter().map(|c| c.contentions).sum();
        m.result.locks = Some(LockCounts { contentions, wait_ns, callers, lost: 0, unpaired: 0 });
    }
    report
}
