//! Tidy CSV: one observation per row, stable column names, plain numbers (units live in the
//! column names). The columns are documented in the README.

use std::io::Write;

use anyhow::Result;

use crate::benchmark::{Measurement, Report};

#[derive(Debug, serde::Serialize)]
pub struct Row<'a> {
    pub run_id: &'a str,
    pub started_at: &'a str,
    pub host: &'a str,
    pub kernel: &'a str,
    pub cgroup_version: String,
    pub workload: &'a str,
    pub mode: &'a str,
    pub tasks: usize,
    pub placement: &'a str,
    pub depth: u32,
    pub cgroup_path: &'a str,
    pub repetition: u32,
    pub sequence: usize,
    /// Empty on summary rows; the worker's CPU on --per-cpu rows.
    pub cpu: Option<usize>,
    pub duration_s: f64,
    pub faults: u64,
    pub faults_per_sec: f64,
    pub faults_per_sec_per_task: f64,
    pub kernel_faults: u64,
    pub kernel_count_source: &'a str,
    pub memcg_pgfault: Option<u64>,
    pub start_skew_us: Option<f64>,
    pub ratio_vs_root: Option<f64>,
    /// false when a stop signal ended the run before every repetition was measured.
    pub run_complete: bool,
}

/// Rounds to 6 significant decimals so cells stay readable without losing measured precision.
fn round6(value: f64) -> f64 {
    (value * 1e6).round() / 1e6
}

pub fn rows<'a>(report: &'a Report, workload: &'a str, per_cpu: bool) -> Vec<Row<'a>> {
    let mut rows = Vec::new();
    for m in &report.measurements {
        rows.push(summary_row(report, m, workload));
        if per_cpu {
            for worker in &m.run.workers {
                let faults_per_sec = worker.loop_faults as f64 / m.run.elapsed_s();
                rows.push(Row {
                    cpu: Some(worker.cpu),
                    faults: worker.loop_faults,
                    faults_per_sec: round6(faults_per_sec),
                    faults_per_sec_per_task: round6(faults_per_sec),
                    kernel_faults: worker.kernel_faults,
                    memcg_pgfault: None,
                    start_skew_us: None,
                    ratio_vs_root: None,
                    ..summary_row(report, m, workload)
                });
            }
        }
    }
    rows
}

fn summary_row<'a>(report: &'a Report, m: &'a Measurement, workload: &'a str) -> Row<'a> {
    let env = &report.env;
    let tasks = m.run.workers.len();
    Row {
        run_id: &env.run_id,
        started_at: &env.started_at,
        host: &env.host,
        kernel: &env.kernel,
        cgroup_version: env.cgroup_version.to_string(),
        workload,
        mode: "process",
        tasks,
        placement: &m.placement.name,
        depth: m.placement.depth,
        cgroup_path: &m.leaf.cgroup_path,
        repetition: m.repetition,
        sequence: m.sequence,
        cpu: None,
        duration_s: round6(m.run.elapsed_s()),
        faults: m.run.loop_faults(),
        faults_per_sec: round6(m.faults_per_sec()),
        faults_per_sec_per_task: round6(m.faults_per_sec() / tasks as f64),
        kernel_faults: m.run.kernel_faults(),
        kernel_count_source: m.run.kernel_source.name(),
        memcg_pgfault: m.run.memcg_pgfault,
        start_skew_us: Some(round6(m.run.start_skew_ns as f64 / 1e3)),
        ratio_vs_root: report.ratio_vs_root(m).map(round6),
        run_complete: report.interrupted.is_none(),
    }
}

pub fn write(out: &mut dyn Write, rows: &[Row]) -> Result<()> {
    let mut writer = ::csv::Writer::from_writer(out);
    for row in rows {
        writer.serialize(row)?;
    }
    writer.flush()?;
    Ok(())
}
