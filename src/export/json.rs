//! One JSON document per run: environment, settings, every measurement with its samples and
//! per-worker counters, the per-placement statistics, failures and warnings.

use std::io::Write;

use anyhow::Result;
use serde_json::json;

use crate::report::Report;

pub fn write(out: &mut dyn Write, report: &Report) -> Result<()> {
    let plan = &report.plan;
    let measurements: Vec<_> = report
        .measurements
        .iter()
        .map(|m| {
            json!({
                "placement": m.placement.name,
                "depth": m.placement.depth,
                "cgroup_path": m.leaf.cgroup_path,
                "round": m.round,
                "repetition": plan.repetition_of(m.round),
                "slice": plan.slice_of(m.round),
                "sequence": m.sequence,
                "faults_per_sec": m.faults_per_sec(),
                "overhead_vs_baseline": report.overhead_vs_baseline(m),
                "throughput_vs_baseline": report.throughput_vs_baseline(m),
                "cpu_ns_per_fault": m.cpu_ns_per_fault(),
                "on_cpu_s": m.time_split().map(|t| t.on_cpu_s),
                "wait_s": m.time_split().map(|t| t.wait_s),
                "blocked_s": m.time_split().map(|t| t.blocked_s),
                "steal_s": m.time_split().and_then(|t| t.steal_s),
                "memcg_ns_per_fault": crate::report::Report::memcg_ns_per_fault(m),
                "ns_per_fault": m.ns_per_fault(),
                "run": m.run,
            })
        })
        .collect();
    let failures: Vec<_> = report
        .failures
        .iter()
        .map(|f| json!({ "placement": f.placement.name, "round": f.round, "reason": f.reason }))
        .collect();
    let document = json!({
        "environment": report.env,
        "settings": {
            "placements": plan.placements.iter().map(|p| &p.name).collect::<Vec<_>>(),
            // Fixed work (--iterations) has no duration: each slice is one whole run.
            "duration_s": plan.iterations.is_none().then_some(plan.duration.as_secs_f64()),
            "iterations_per_task": plan.iterations,
            "slices": plan.slices,
            "slice_s": plan.iterations.is_none().then_some(plan.slice_duration().as_secs_f64()),
            "warmup_s": plan.warmup.as_secs_f64(),
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
        "failures": failures,
        "warnings": report.warnings,
        "complete": report.complete(),
    });
    serde_json::to_writer_pretty(&mut *out, &document)?;
    writeln!(out)?;
    Ok(())
}
