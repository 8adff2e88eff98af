//! One JSON document per run: environment, settings, every measurement with its samples and
//! per-worker counters, the per-placement statistics, failures and warnings; its fields are
//! `results::schema`'s, which the reader reads back.

use std::io::Write;

use anyhow::Result;

use crate::measure::stacks::ProfileCounts;
use crate::report::{Report, RunState};
use crate::results::schema::{Document, Failure, Measurement, Settings, SliceData};
use crate::run::{HarnessTimes, Sample, WorkerResult};

/// --json: the whole report as one document.
pub struct Json;

impl super::Exporter for Json {
    fn option(&self) -> &'static str {
        "json"
    }
    fn help(&self) -> &'static str {
        "Write one JSON document (environment, settings, every sample, every summary) to FILE"
    }
    fn write(&self, out: &mut dyn Write, report: &Report, _: &super::Settings) -> Result<()> {
        write(out, report)
    }
}

/// A slice's data as the writer holds it: its workers, samples, profile and harness times are
/// the run's own types, which the reader passes over.
type Slice<'a> = SliceData<&'a WorkerResult, &'a Sample, &'a ProfileCounts, HarnessTimes>;

/// One slice as the JSON's `measurements` hold it.
fn measurement<'a>(report: &Report, m: &'a crate::report::Measurement) -> Measurement<Slice<'a>> {
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
        round_complete: m.round_complete,
        counted: report.counted(m),
        result: SliceData {
            elapsed_ns: result.elapsed_ns,
            start_skew_ns: result.start_skew_ns,
            workers: result.workers.iter().collect(),
            memcg_pgfault: result.memcg_pgfault,
            kernel_source: Some(result.kernel_source.name().to_string()),
            samples: result.samples.iter().collect(),
            overran: result.overran,
            memcg: memcg_columns(&result.memcg),
            psi_scope: result.psi_scope,
            profile: result.profile.as_ref(),
            harness: result.harness,
        },
        ratio_vs_root: None,
        ratio_vs_baseline: None,
    }
}

/// What the run was asked to do.
fn settings(report: &Report) -> Settings {
    let plan = &report.plan;
    let timed = plan.iterations.is_none();
    Settings {
        placements: plan.placements.iter().map(|p| p.name.clone()).collect(),
        duration_s: timed.then_some(plan.duration.as_secs_f64()),
        iterations_per_task: plan.iterations,
        slices: plan.slices,
        slice_s: timed.then_some(plan.slice_duration().as_secs_f64()),
        warmup_s: plan.warmup.as_secs_f64(),
        generations: plan.generations,
        interval_s: plan.interval.as_secs_f64(),
        repeat: plan.repeat,
        cpus: plan.cpus.clone(),
        workload: Some(plan.workload.name().to_string()),
        mode: Some(plan.mode.name().to_string()),
        tasks: plan.task_counts.clone(),
        chunk_bytes: Some(plan.chunk_bytes),
        size_bytes: Some(plan.size_bytes),
        thp: plan.thp.name().to_string(),
        thp_mode: Some(plan.thp.name().to_string()),
        tmpdir_fs: report.files_fs.clone(),
        page_size: plan.page_size,
        kernel_count: plan.kernel_count.name().to_string(),
    }
}

pub fn write(out: &mut dyn Write, report: &Report) -> Result<()> {
    let failures = report.failures.iter().map(|f| Failure {
        placement: f.placement.name.clone(),
        round: f.round,
        reason: f.reason.clone(),
        repetition: None,
    });
    let state = report.state();
    // The CSV's run_state_reason, one reader for both: the signal's name or the failure.
    let reason = state.reason();
    let document = Document {
        environment: serde_json::to_value(&report.env)?,
        settings: settings(report),
        knobs: serde_json::to_value(&report.knobs)?,
        files: report.files.clone(),
        unit: Some(report.unit.name().to_string()),
        measurements: Some(report.measurements.iter().map(|m| measurement(report, m)).collect()),
        summaries: serde_json::to_value(report.summaries())?,
        per_level: serde_json::to_value(report.level_costs())?,
        failures: failures.collect(),
        warnings: serde_json::to_value(&report.warnings)?,
        complete: Some(report.complete()),
        state: Some(state.name().to_string()),
        signal: match state {
            RunState::Stopped { signal } => Some(signal),
            _ => None,
        },
        reason: (!reason.is_empty()).then_some(reason),
    };
    // Through a value, whose objects sort their keys: the file's order is the keys' own, not
    // the declarations'.
    serde_json::to_writer_pretty(&mut *out, &serde_json::to_value(&document)?)?;
    writeln!(out)?;
    Ok(())
}

/// The memcg counters by their CSV and JSON names.
fn memcg_columns(c: &crate::measure::memcg::Counters) -> std::collections::BTreeMap<String, u64> {
    let pressure = [("psi_some_us", c.pressure.map(|p| p.some_us)), ("psi_full_us", c.pressure.map(|p| p.full_us))];
    c.stat
        .columns()
        .chain(c.events.columns())
        .chain(pressure)
        .filter_map(|(name, value)| Some((name.to_string(), value?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::memcg::{Counters, Pressure};

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
}
