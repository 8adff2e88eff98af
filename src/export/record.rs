//! One slice's record, the one both the CSV's summary row and the JSON's measurement are
//! written from: the per-slice figures and the slice's data (`results::schema::Measurement`),
//! with the crew's sums and spread (`schema::Crew`). Only --per-cpu adds each worker's own.

use serde::Serialize;

use crate::measure::perf::PerfReading;
use crate::measure::stacks::ProfileCounts;
use crate::report::Report;
use crate::results::schema::{Crew, Measurement, SliceData};
use crate::run::{HarnessTimes, SliceResult, WorkerResult};

/// A slice's data as the writer holds it: its workers (with --per-cpu), samples, profile and
/// harness times are the run's own types, which the reader passes over.
pub type Slice<'a> = SliceData<&'a WorkerResult, CrewSample<'a>, &'a ProfileCounts, HarnessTimes>;

/// One `--interval` reading: the crew's loop count, and with --per-cpu each worker's.
#[derive(Debug, Serialize)]
pub struct CrewSample<'a> {
    pub elapsed_ns: u64,
    /// The workers' iterations since the slice started, summed.
    pub iterations: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker_iterations: Option<&'a [u64]>,
}

/// One slice as the JSON's `measurements` hold it, and the CSV's summary row is made from.
pub fn measurement<'a>(report: &Report, m: &'a crate::report::Measurement, per_cpu: bool) -> Measurement<Slice<'a>> {
    let plan = &report.plan;
    let time = m.time_split();
    let result = &m.result;
    Measurement {
        placement: m.placement.name.clone(),
        depth: Some(m.placement.depth),
        cgroup_path: m.leaf.cgroup_path.clone(),
        round: m.round,
        generation: Some(m.generation),
        repetition: Some(plan.repetition_of(m.round)),
        slice: Some(plan.slice_of(m.round)),
        sequence: m.sequence,
        faults_per_sec: m.faults_per_sec(),
        overhead_vs_baseline: report.overhead_vs_baseline(m),
        throughput_vs_baseline: report.throughput_vs_baseline(m),
        cpu_ns_per_fault: m.cpu_ns_per_fault(),
        on_cpu_s: time.map(|t| t.on_cpu_s),
        wait_s: time.map(|t| t.wait_s),
        blocked_s: time.map(|t| t.blocked_s),
        steal_s: time.and_then(|t| t.steal_s),
        memcg_ns_per_fault: Report::memcg_ns_per_fault(m),
        ns_per_fault: m.ns_per_fault(),
        disturbance: m.disturbance(),
        lock_contentions_per_kop: m.lock_contentions_per_kop(),
        lock_wait_ns_per_op: m.lock_wait_ns_per_op(),
        round_complete: m.round_complete,
        counted: report.counted(m),
        result: SliceData {
            elapsed_ns: result.elapsed_ns,
            start_skew_ns: result.start_skew_ns,
            crew: Some(crew(m)),
            workers: if per_cpu { result.workers.iter().collect() } else { Vec::new() },
            memcg_pgfault: result.memcg_pgfault,
            kernel_source: Some(result.kernel_source.name().to_string()),
            samples: samples(result, per_cpu),
            overran: result.overran,
            memcg: memcg_columns(&result.memcg),
            psi_scope: result.psi_scope,
            profile: result.profile.as_ref(),
            harness: result.harness,
            locks: result.locks.clone(),
        },
        ratio_vs_root: None,
        ratio_vs_baseline: None,
    }
}

/// The crew's sums and spread over the slice.
pub fn crew(m: &crate::report::Measurement) -> Crew {
    let workers = &m.result.workers;
    let sum = |of: fn(&WorkerResult) -> u64| workers.iter().map(of).sum::<u64>();
    let all = |of: fn(&WorkerResult) -> Option<u64>| workers.iter().map(of).sum::<Option<u64>>();
    let elapsed_s = m.result.elapsed_s();
    let rates = || workers.iter().map(|w| w.loop_faults as f64 / elapsed_s).filter(|r| r.is_finite());
    let shares = || workers.iter().map(|w| w.cpu_share);
    Crew {
        tasks: workers.len(),
        iterations: sum(|w| w.iterations),
        loop_faults: m.result.loop_faults(),
        kernel_faults: m.result.kernel_faults(),
        user_us: sum(|w| w.user_us),
        sys_us: sum(|w| w.sys_us),
        on_cpu_ns: m.on_cpu_ns(),
        wait_ns: all(|w| w.wait_ns),
        steal_ns: all(|w| w.steal_ns),
        timeslices: all(|w| w.timeslices),
        perf: perf_sum(workers),
        faults_per_sec_min: least(rates()),
        faults_per_sec_max: most(rates()),
        cpu_share_min: least(shares()),
        cpu_share_max: most(shares()),
        disturbed_workers: m.disturbed_workers(),
    }
}

/// The smallest of `values`; 0 for none.
fn least(values: impl Iterator<Item = f64>) -> f64 {
    values.reduce(f64::min).unwrap_or(0.0)
}

/// The largest of `values`; 0 for none.
fn most(values: impl Iterator<Item = f64>) -> f64 {
    values.reduce(f64::max).unwrap_or(0.0)
}

/// The workers' perf counters summed, where every worker has them; a hardware counter where
/// every worker has it.
fn perf_sum(workers: &[WorkerResult]) -> Option<PerfReading> {
    let readings: Vec<&PerfReading> = workers.iter().map(|w| w.perf.as_ref()).collect::<Option<_>>()?;
    let hardware = |of: fn(&PerfReading) -> Option<u64>| readings.iter().map(|r| of(r)).sum::<Option<u64>>();
    (!readings.is_empty()).then(|| PerfReading {
        page_faults: readings.iter().map(|r| r.page_faults).sum(),
        task_clock_ns: readings.iter().map(|r| r.task_clock_ns).sum(),
        context_switches: readings.iter().map(|r| r.context_switches).sum(),
        cpu_migrations: readings.iter().map(|r| r.cpu_migrations).sum(),
        cycles: hardware(|r| r.cycles),
        instructions: hardware(|r| r.instructions),
    })
}

/// The slice's `--interval` readings: the crew's sum, and each worker's with --per-cpu.
fn samples(result: &SliceResult, per_cpu: bool) -> Vec<CrewSample<'_>> {
    let sample = |s: &crate::run::Sample| s.iterations.iter().sum();
    (result.samples.iter())
        .map(|s| CrewSample {
            elapsed_ns: s.elapsed_ns,
            iterations: sample(s),
            worker_iterations: per_cpu.then_some(s.iterations.as_slice()),
        })
        .collect()
}

/// The memcg counters by their CSV and JSON names.
fn memcg_columns(c: &crate::measure::memcg::Counters) -> std::collections::BTreeMap<String, u64> {
    c.columns().filter_map(|(name, value)| Some((name.to_string(), value?))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::memcg::{Counters, Pressure};
    use crate::report::fixture::synthetic_report;

    #[test]
    fn memcg_counters_keep_their_column_names_and_absent_ones_stay_absent() {
        let mut counters = Counters::default();
        (counters.stat.pgsteal, counters.events.max, counters.events.oom_kill) = (Some(7), Some(3), Some(0));
        counters.pressure = Some(Pressure { some_us: 100, full_us: 40 });
        let columns = memcg_columns(&counters);
        let expected =
            [("events_max", 3), ("events_oom_kill", 0), ("pgsteal", 7), ("psi_full_us", 40), ("psi_some_us", 100)];
        let columns: Vec<(&str, u64)> = columns.iter().map(|(name, value)| (name.as_str(), *value)).collect();
        assert_eq!(columns, expected);
    }

    #[test]
    fn the_crew_sums_its_workers_and_gives_their_spread() {
        let mut report = synthetic_report(&[(100_000.0, 90_000.0)]);
        let m = &mut report.measurements[1];
        m.result.workers[0].loop_faults = 100_000;
        m.result.workers[1].loop_faults = 80_000;
        m.result.workers[0].cpu_share = 0.9;
        for (worker, wait_ns) in m.result.workers.iter_mut().zip([1_000_000, 100_000_000]) {
            worker.wait_ns = Some(wait_ns);
        }
        let crew = crew(m);
        assert_eq!((crew.tasks, crew.loop_faults, crew.wait_ns), (2, 180_000, Some(101_000_000)));
        assert_eq!((crew.faults_per_sec_min, crew.faults_per_sec_max), (40_000.0, 50_000.0));
        assert_eq!((crew.cpu_share_min, crew.cpu_share_max), (0.9, 1.0));
        assert_eq!(crew.disturbed_workers, Some(1), "100 ms of a 2 s slice is 5%: over 2%");
        assert_eq!((crew.on_cpu_ns, crew.perf), (None, None), "absent where one worker's is");
        // The record without --per-cpu names no worker; with it, each.
        let lean = measurement(&report, &report.measurements[1], false);
        assert!(lean.result.workers.is_empty() && lean.result.samples.iter().all(|s| s.worker_iterations.is_none()));
        let full = measurement(&report, &report.measurements[1], true);
        assert_eq!(full.result.workers.len(), 2);
    }
}
