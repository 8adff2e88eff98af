//! One JSON document per run: environment, settings, every measurement with its samples and
//! per-worker counters, the per-placement statistics, failures and warnings.

use std::io::Write;

use anyhow::Result;
use serde_json::json;

use crate::report::{Report, RunState};

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

/// One slice as the JSON's `measurements` hold it.
fn measurement(report: &Report, m: &crate::report::Measurement) -> serde_json::Value {
    let plan = &report.plan;
    let time = m.time_split();
    json!({
        "placement": m.placement.name,
        "depth": m.placement.depth,
        "cgroup_path": m.leaf.cgroup_path,
        "round": m.round,
        "generation": m.generation,
        "repetition": plan.repetition_of(m.round),
        "slice": plan.slice_of(m.round),
        "sequence": m.sequence,
        "faults_per_sec": m.faults_per_sec(),
        "overhead_vs_baseline": report.overhead_vs_baseline(m),
        "throughput_vs_baseline": report.throughput_vs_baseline(m),
        "cpu_ns_per_fault": m.cpu_ns_per_fault(),
        "on_cpu_s": time.map(|t| t.on_cpu_s),
        "wait_s": time.map(|t| t.wait_s),
        "blocked_s": time.map(|t| t.blocked_s),
        "steal_s": time.and_then(|t| t.steal_s),
        "memcg_ns_per_fault": crate::report::Report::memcg_ns_per_fault(m),
        "ns_per_fault": m.ns_per_fault(),
        "disturbance": m.disturbance(),
        "round_complete": m.round_complete,
        "counted": report.counted(m),
        "run": run_with_memcg(m),
    })
}

pub fn write(out: &mut dyn Write, report: &Report) -> Result<()> {
    let plan = &report.plan;
    let measurements: Vec<_> = report.measurements.iter().map(|m| measurement(report, m)).collect();
    let failures: Vec<_> = report
        .failures
        .iter()
        .map(|f| json!({ "placement": f.placement.name, "round": f.round, "reason": f.reason }))
        .collect();
    let mut document = json!({
        "environment": report.env,
        "settings": {
            "placements": plan.placements.iter().map(|p| &p.name).collect::<Vec<_>>(),
            // Fixed work (--iterations) has no duration: each slice is one whole run.
            "duration_s": plan.iterations.is_none().then_some(plan.duration.as_secs_f64()),
            "iterations_per_task": plan.iterations,
            "slices": plan.slices,
            "slice_s": plan.iterations.is_none().then_some(plan.slice_duration().as_secs_f64()),
            "warmup_s": plan.warmup.as_secs_f64(),
            "generations": plan.generations,
            "interval_s": plan.interval.as_secs_f64(),
            "repeat": plan.repeat,
            "cpus": plan.cpus,
            "workload": plan.workload.name(),
            "mode": plan.mode.name(),
            "tasks": plan.task_counts,
            "chunk_bytes": plan.chunk_bytes,
            "size_bytes": plan.size_bytes,
            "thp": plan.thp,
            "thp_mode": plan.thp.name(),
            "tmpdir_fs": report.files_fs,
            "page_size": plan.page_size,
            "kernel_count": plan.kernel_count.name(),
        },
        "knobs": report.knobs,
        "files": report.files,
        "unit": report.unit,
        "measurements": measurements,
        "summaries": report.summaries(),
        // What one memcg level costs, per task count, where two or more plain depths ran.
        "per_level": report.level_costs(),
        "failures": failures,
        "warnings": report.warnings,
        "complete": report.complete(),
    });
    if let Some(fields) = document.as_object_mut() {
        fields.extend(state_fields(&report.state()));
    }
    serde_json::to_writer_pretty(&mut *out, &document)?;
    writeln!(out)?;
    Ok(())
}

/// What the file is: a checkpoint ("running"), "stopped" (with the signal's number), "failed"
/// (with the reason) or "complete".
fn state_fields(state: &RunState) -> serde_json::Map<String, serde_json::Value> {
    let mut fields = serde_json::Map::new();
    fields.insert("state".into(), state.name().into());
    let signal = match state {
        RunState::Stopped { signal } => json!(signal),
        _ => serde_json::Value::Null,
    };
    fields.insert("signal".into(), signal);
    // The CSV's run_state_reason, one reader for both: the signal's name or the failure.
    let reason = state.reason();
    fields.insert("reason".into(), if reason.is_empty() { serde_json::Value::Null } else { json!(reason) });
    fields
}

/// A slice's run as JSON, its memcg counters under their column names (absent where the kernel
/// has no such counter), as the CSV names the ones it carries.
fn run_with_memcg(m: &crate::report::Measurement) -> serde_json::Value {
    let mut run = serde_json::to_value(&m.result).unwrap_or(serde_json::Value::Null);
    if let serde_json::Value::Object(fields) = &mut run {
        fields.insert("memcg".into(), serde_json::to_value(memcg_columns(&m.result.memcg)).unwrap_or_default());
    }
    run
}

/// The memcg counters by their CSV and JSON names.
pub fn memcg_columns(c: &crate::measure::memcg::Counters) -> std::collections::BTreeMap<&'static str, u64> {
    let pressure = [("psi_some_us", c.pressure.map(|p| p.some_us)), ("psi_full_us", c.pressure.map(|p| p.full_us))];
    c.stat
        .columns()
        .chain(c.events.columns())
        .chain(pressure)
        .filter_map(|(name, value)| Some((name, value?)))
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
        assert_eq!(columns.into_iter().collect::<Vec<_>>(), expected);
    }
}
