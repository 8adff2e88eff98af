//! One JSON document per run: environment, settings, every measurement with its crew's sums
//! and samples (each worker's counters with --per-cpu), the per-placement statistics, failures
//! and warnings; its fields are `results::schema`'s, which the reader reads back. Written as
//! it is made, a measurement at a time: its size grows with the slices, not the workers.

use std::io::Write;

use anyhow::Result;

use serde::{Serialize, Serializer};

use super::record;
use crate::report::{Report, RunState};
use crate::results::schema::{Document, FORMAT_VERSION, Failure, Settings};

/// --json: the whole report as one document.
pub struct Json;

impl super::Exporter for Json {
    fn option(&self) -> &'static str {
        "json"
    }
    fn help(&self) -> &'static str {
        "Write one JSON document (environment, settings, every sample, every summary) to FILE"
    }
    fn write(&self, out: &mut dyn Write, report: &Report, settings: &super::Settings) -> Result<()> {
        write(out, report, settings.per_cpu)
    }
    fn records_failures(&self) -> bool {
        true
    }
}

/// What the run was asked to do.
fn settings(report: &Report) -> Settings {
    let plan = &report.plan;
    let timed = plan.workload.fixed_iterations.is_none();
    Settings {
        placements: plan.placements.iter().map(|p| p.name.clone()).collect(),
        duration_s: timed.then_some(plan.duration.as_secs_f64()),
        iterations_per_task: plan.workload.fixed_iterations,
        slices: plan.slices,
        slice_s: timed.then_some(plan.slice_duration().as_secs_f64()),
        warmup_s: plan.warmup.as_secs_f64(),
        generations: plan.generations,
        interval_s: plan.interval.as_secs_f64(),
        repeat: plan.repeat,
        cpus: plan.cpus.clone(),
        workload: Some(plan.workload.kind.name.to_string()),
        mode: Some(plan.mode.name().to_string()),
        tasks: plan.task_counts.clone(),
        chunk_bytes: Some(plan.workload.chunk_bytes),
        size_bytes: Some(plan.workload.size_bytes),
        thp: plan.workload.thp.name().to_string(),
        thp_mode: Some(plan.workload.thp.name().to_string()),
        tmpdir_fs: report.files_fs.clone(),
        page_size: plan.workload.page_size,
        kernel_count: plan.kernel_count.name().to_string(),
    }
}

/// The document, streamed: its keys in their names' order (`Document`'s declaration), each
/// measurement made, sorted (through its own small value) and written in turn, so neither the
/// document nor its measurements are ever held whole.
pub fn write(out: &mut dyn Write, report: &Report, per_cpu: bool) -> Result<()> {
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
        complete: Some(report.complete()),
        environment: serde_json::to_value(&report.env)?,
        failures: failures.collect(),
        files: report.files.clone(),
        format_version: Some(FORMAT_VERSION),
        knobs: serde_json::to_value(&report.knobs)?,
        measurements: Some(Measurements { report, per_cpu }),
        per_level: serde_json::to_value(report.level_costs())?,
        reason: (!reason.is_empty()).then_some(reason),
        settings: settings(report),
        signal: match state {
            RunState::Stopped { signal } => Some(signal),
            _ => None,
        },
        state: Some(state.name().to_string()),
        summaries: serde_json::to_value(report.summaries())?,
        unit: Some(report.unit.name().to_string()),
        warnings: serde_json::to_value(&report.warnings)?,
    };
    let mut out = std::io::BufWriter::new(out);
    serde_json::to_writer_pretty(&mut out, &document)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// The run's measurements as the document's sequence, each made as it is written.
struct Measurements<'a> {
    report: &'a Report,
    per_cpu: bool,
}

impl Serialize for Measurements<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let each = self.report.measurements.iter().map(|m| Sorted(record::measurement(self.report, m, self.per_cpu)));
        serializer.collect_seq(each)
    }
}

/// A value written with its objects' keys sorted: through a `serde_json::Value`, whose maps
/// sort them (one measurement at a time, a few KB without --per-cpu).
struct Sorted<T>(T);

impl<T: Serialize> Serialize for Sorted<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serde_json::to_value(&self.0).map_err(serde::ser::Error::custom)?.serialize(serializer)
    }
}
