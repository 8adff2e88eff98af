//! One JSON document per run: environment, settings, every measurement with its samples and
//! per-worker counters, the per-placement statistics, failures and warnings.

use std::io::Write;

use anyhow::Result;
use serde_json::json;

use crate::benchmark::Report;
use crate::options::RunOptions;

pub fn write(out: &mut dyn Write, report: &Report, options: &RunOptions) -> Result<()> {
    let measurements: Vec<_> = report
        .measurements
        .iter()
        .map(|m| {
            json!({
                "placement": m.placement.name,
                "depth": m.placement.depth,
                "cgroup_path": m.leaf.cgroup_path,
                "repetition": m.repetition,
                "sequence": m.sequence,
                "faults_per_sec": m.faults_per_sec(),
                "ratio_vs_root": report.ratio_vs_root(m),
                "run": m.run,
            })
        })
        .collect();
    let failures: Vec<_> = report
        .failures
        .iter()
        .map(|f| json!({ "placement": f.placement.name, "repetition": f.repetition, "reason": f.reason }))
        .collect();
    let document = json!({
        "environment": report.env,
        "settings": {
            "placements": options.placements.iter().map(|p| &p.name).collect::<Vec<_>>(),
            "duration_s": options.duration.as_secs_f64(),
            "warmup_s": options.warmup.as_secs_f64(),
            "interval_s": options.interval.as_secs_f64(),
            "repeat": options.repeat,
            "cpus": options.cpus,
            "workload": options.workload.name(),
            "mode": options.mode.name(),
            "tasks": options.task_counts,
            "chunk_bytes": options.chunk_bytes,
            "size_bytes": options.size_bytes,
            "thp": options.thp,
            "page_size": options.page_size,
            "kernel_count": options.kernel_count.name(),
        },
        "knobs": report.knobs,
        "files": report.files,
        "unit": report.unit,
        "measurements": measurements,
        "summaries": report.summaries(&options.placements),
        "failures": failures,
        "warnings": report.warnings,
        "complete": report.interrupted.is_none(),
    });
    serde_json::to_writer_pretty(&mut *out, &document)?;
    writeln!(out)?;
    Ok(())
}
