//! Tidy CSV: one observation per row, stable column names, plain numbers (units live in the
//! column names). The columns are documented in the README.

use std::io::Write;

use anyhow::Result;

use crate::report::{Measurement, Report};

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
    /// Levels between the hierarchy's root and the baseline's cgroup (0: the true root).
    pub base_depth: usize,
    /// The profile the placement came from (name or path); empty for plain placements.
    pub profile: &'a str,
    pub cgroup_path: &'a str,
    /// 1-based; every repetition measures every placement in `--slices` slices.
    pub repetition: u32,
    pub slice: u32,
    pub sequence: usize,
    /// Empty on summary rows; the worker's CPU on --per-cpu rows.
    pub cpu: Option<usize>,
    pub duration_s: f64,
    /// What `faults` counts: faults, or loops for mmap-file (which takes none).
    pub unit: &'a str,
    pub faults: u64,
    pub faults_per_sec: f64,
    pub faults_per_sec_per_task: f64,
    /// Wall-clock nanoseconds one worker spends per fault (per loop for mmap-file).
    pub ns_per_fault: Option<f64>,
    pub kernel_faults: u64,
    /// The workers' CPU time in user and kernel mode (rusage), summed over the row's workers.
    pub user_s: f64,
    pub sys_s: f64,
    pub kernel_count_source: &'a str,
    pub memcg_pgfault: Option<u64>,
    pub start_skew_us: Option<f64>,
    /// The baseline's rate over this row's in the same slice: this placement's cost per fault
    /// over the baseline's (the 2009 post's 109%). Empty on the baseline's own rows.
    pub overhead_vs_baseline: Option<f64>,
    /// false when a stop signal ended the run before every slice was measured.
    pub run_complete: bool,
    pub thp_enabled: &'a str,
    pub governor: &'a str,
    /// true when the measured time exceeded the time asked for by more than 10% (stopped or
    /// starved): the rate is not comparable with the others.
    pub overran: bool,
    /// What the memcg did in the slice (deltas; empty where the kernel has no such counter here,
    /// e.g. pgscan and pgsteal on v1): pages scanned and reclaimed, times memory.high and
    /// memory.max (v1: the limit, failcnt) were hit, and microseconds stalled on memory.
    pub pgscan: Option<u64>,
    pub pgsteal: Option<u64>,
    pub events_high: Option<u64>,
    pub events_max: Option<u64>,
    pub psi_some_us: Option<u64>,
    pub psi_full_us: Option<u64>,
    /// `cgroup`, or `system` where only /proc/pressure/memory exists (v1).
    pub psi_scope: Option<crate::measure::memcg::PsiScope>,
    /// --profile: the memcg family's share of this slice's samples, and its CPU ns per fault.
    pub memcg_share: Option<f64>,
    pub memcg_ns_per_fault: Option<f64>,
    /// What must agree for two runs to be compared (`compare` checks them).
    pub chunk_bytes: u64,
    pub size_bytes: u64,
    /// --thp as asked (`thp_enabled` is the system setting).
    pub thp_mode: &'static str,
    /// The file workloads' filesystem (tmpfs, ext4, ...); empty for the others.
    pub tmpdir_fs: &'a str,
    /// The knobs written for this placement, `levelN:file=value`, space-separated.
    pub knobs: String,
    /// --iterations: the fixed work each task did; the row's duration_s is then the run's
    /// elapsed time (first start to last finish). Empty for timed runs.
    pub iterations_per_task: Option<u64>,
}

/// Rounds to 6 significant decimals so cells stay readable without losing measured precision.
fn round6(value: f64) -> f64 {
    (value * 1e6).round() / 1e6
}

pub fn rows(report: &Report, per_cpu: bool) -> Vec<Row<'_>> {
    let (workload, mode) = (report.plan.workload.name(), report.plan.mode.name());
    let mut rows = Vec::new();
    for m in &report.measurements {
        rows.push(summary_row(report, m, workload, mode));
        if per_cpu {
            for worker in &m.run.workers {
                let faults_per_sec = worker.loop_faults as f64 / m.run.elapsed_s();
                rows.push(Row {
                    cpu: Some(worker.cpu),
                    // siblings:N: the worker's own sibling; the summary row names their parent.
                    cgroup_path: worker.cgroup_path.as_deref().unwrap_or(&m.leaf.cgroup_path),
                    faults: worker.loop_faults,
                    faults_per_sec: round6(faults_per_sec),
                    faults_per_sec_per_task: round6(faults_per_sec),
                    ns_per_fault: ns_per(faults_per_sec),
                    kernel_faults: worker.kernel_faults,
                    user_s: round6(worker.user_us as f64 / 1e6),
                    sys_s: round6(worker.sys_us as f64 / 1e6),
                    memcg_pgfault: None,
                    start_skew_us: None,
                    overhead_vs_baseline: None,
                    memcg_share: None,
                    memcg_ns_per_fault: None,
                    pgscan: None,
                    pgsteal: None,
                    events_high: None,
                    events_max: None,
                    psi_some_us: None,
                    psi_full_us: None,
                    psi_scope: None,
                    ..summary_row(report, m, workload, mode)
                });
            }
        }
    }
    rows
}

fn summary_row<'a>(report: &'a Report, m: &'a Measurement, workload: &'static str, mode: &'static str) -> Row<'a> {
    let env = &report.env;
    let tasks = m.run.workers.len();
    Row {
        run_id: &env.run_id,
        started_at: &env.started_at,
        host: &env.host,
        kernel: &env.kernel,
        cgroup_version: env.cgroup_version.to_string(),
        workload,
        mode,
        tasks,
        placement: &m.placement.name,
        depth: m.placement.depth,
        base_depth: env.base_depth,
        profile: m.placement.profile.as_deref().unwrap_or(""),
        cgroup_path: &m.leaf.cgroup_path,
        repetition: report.plan.repetition_of(m.round),
        slice: report.plan.slice_of(m.round),
        sequence: m.sequence,
        cpu: None,
        duration_s: round6(m.run.elapsed_s()),
        unit: report.unit.name(),
        faults: m.run.loop_faults(),
        faults_per_sec: round6(m.faults_per_sec()),
        faults_per_sec_per_task: round6(m.faults_per_sec() / tasks as f64),
        ns_per_fault: ns_per(m.faults_per_sec() / tasks as f64),
        kernel_faults: m.run.kernel_faults(),
        user_s: round6(m.run.workers.iter().map(|w| w.user_us).sum::<u64>() as f64 / 1e6),
        sys_s: round6(m.run.workers.iter().map(|w| w.sys_us).sum::<u64>() as f64 / 1e6),
        kernel_count_source: m.run.kernel_source.name(),
        memcg_pgfault: m.run.memcg_pgfault,
        start_skew_us: Some(round6(m.run.start_skew_ns as f64 / 1e3)),
        overhead_vs_baseline: report.overhead_vs_baseline(m).map(round6),
        run_complete: report.complete(),
        thp_enabled: &env.thp_enabled,
        governor: &env.governor,
        overran: m.run.overran,
        pgscan: m.run.memcg.get("pgscan").copied(),
        pgsteal: m.run.memcg.get("pgsteal").copied(),
        events_high: m.run.memcg.get("events_high").copied(),
        events_max: m.run.memcg.get("events_max").copied(),
        psi_some_us: m.run.memcg.get("psi_some_us").copied(),
        psi_full_us: m.run.memcg.get("psi_full_us").copied(),
        psi_scope: m.run.psi_scope,
        memcg_share: m.run.profile.as_ref().and_then(|p| p.memcg_share()).map(round6),
        memcg_ns_per_fault: Report::memcg_ns_per_fault(m).map(round6),
        chunk_bytes: report.plan.chunk_bytes,
        size_bytes: report.plan.size_bytes,
        thp_mode: report.plan.thp.name(),
        tmpdir_fs: report.files_fs.as_deref().unwrap_or(""),
        knobs: knobs_of(report, m),
        iterations_per_task: report.plan.iterations,
    }
}

/// Nanoseconds per unit at `per_sec` units a second; none for a rate of zero.
fn ns_per(per_sec: f64) -> Option<f64> {
    (per_sec > 0.0).then(|| round6(1e9 / per_sec))
}

/// The knob files written for the measurement's placement, with the level each is on.
fn knobs_of(report: &Report, m: &Measurement) -> String {
    let leaf_levels = m.leaf.cgroup_path.matches('/').count();
    report
        .knobs
        .iter()
        .filter(|k| k.placement == m.placement.name)
        .map(|k| {
            let level = m.placement.depth as usize - (leaf_levels - k.cgroup_path.matches('/').count());
            format!("level{level}:{}={}", k.file, k.written)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One row per worker per sample: the loop counter since the measurement started and the
/// rate over the interval that ended at the sample.
#[derive(Debug, serde::Serialize)]
pub struct SampleRow<'a> {
    pub run_id: &'a str,
    pub placement: &'a str,
    pub repetition: u32,
    pub slice: u32,
    pub cpu: usize,
    pub elapsed_s: f64,
    pub faults: u64,
    pub interval_faults_per_sec: f64,
}

pub fn sample_rows(report: &Report) -> Vec<SampleRow<'_>> {
    let faults_per_iteration = crate::workload::shape(&report.plan.workload_settings(None)).per_iteration;
    let mut rows = Vec::new();
    for m in &report.measurements {
        for (worker_index, worker) in m.run.workers.iter().enumerate() {
            let mut previous = (0u64, 0u64);
            for sample in &m.run.samples {
                let faults = sample.iterations[worker_index] * faults_per_iteration;
                let seconds = (sample.elapsed_ns - previous.0) as f64 / 1e9;
                rows.push(SampleRow {
                    run_id: &report.env.run_id,
                    placement: &m.placement.name,
                    repetition: report.plan.repetition_of(m.round),
                    slice: report.plan.slice_of(m.round),
                    cpu: worker.cpu,
                    elapsed_s: round6(sample.elapsed_ns as f64 / 1e9),
                    faults,
                    interval_faults_per_sec: round6((faults - previous.1) as f64 / seconds),
                });
                previous = (sample.elapsed_ns, faults);
            }
        }
    }
    rows
}

pub fn write<T: serde::Serialize>(out: &mut dyn Write, rows: &[T]) -> Result<()> {
    let mut writer = ::csv::Writer::from_writer(out);
    for row in rows {
        writer.serialize(row)?;
    }
    writer.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture::synthetic_report;

    /// The report written as CSV and read back: headers and records.
    fn written(report: &Report, per_cpu: bool) -> (Vec<String>, Vec<Vec<String>>) {
        let mut out = Vec::new();
        write(&mut out, &rows(report, per_cpu)).unwrap();
        let mut reader = ::csv::Reader::from_reader(out.as_slice());
        let headers = reader.headers().unwrap().iter().map(str::to_string).collect();
        let records = reader.records().map(|r| r.unwrap().iter().map(str::to_string).collect()).collect();
        (headers, records)
    }

    #[test]
    fn summary_rows_have_the_documented_columns_and_plain_numbers() {
        let report = synthetic_report(&[(100_000.0, 90_000.0)]);
        let (headers, records) = written(&report, false);
        let design = [
            "run_id",
            "started_at",
            "host",
            "kernel",
            "cgroup_version",
            "workload",
            "mode",
            "tasks",
            "placement",
            "depth",
            "cgroup_path",
            "repetition",
            "slice",
            "duration_s",
            "faults",
            "faults_per_sec",
            "faults_per_sec_per_task",
            "kernel_faults",
            "memcg_pgfault",
            "start_skew_us",
            "overhead_vs_baseline",
            "ns_per_fault",
            "chunk_bytes",
            "thp_mode",
            "tmpdir_fs",
        ];
        for column in design {
            assert!(headers.iter().any(|h| h == column), "missing {column}");
        }
        assert_eq!(records.len(), 2);
        let cell = |row: usize, name: &str| records[row][headers.iter().position(|h| h == name).unwrap()].clone();
        assert_eq!(cell(0, "placement"), "root");
        assert_eq!(cell(1, "placement"), "child");
        assert_eq!(cell(1, "faults"), "180000");
        assert_eq!(cell(1, "faults_per_sec"), "90000.0");
        assert_eq!(cell(1, "faults_per_sec_per_task"), "45000.0");
        assert_eq!(cell(1, "overhead_vs_baseline"), "1.111111");
        assert_eq!(cell(0, "overhead_vs_baseline"), "", "the baseline has no overhead over itself");
        assert_eq!(cell(1, "ns_per_fault"), "22222.222222", "2 workers at 90,000 faults/s together");
        assert_eq!(cell(1, "chunk_bytes"), "1048576");
        assert_eq!(cell(1, "thp_mode"), "never");
        assert_eq!(cell(0, "cpu"), "");
        assert_eq!(cell(1, "start_skew_us"), "1.0");
        assert_eq!(cell(0, "cgroup_version"), "v1");
        assert_eq!(cell(0, "kernel_count_source"), "minflt");
        // Every numeric cell parses as a number: no separators, no units.
        for name in ["faults", "faults_per_sec", "kernel_faults", "memcg_pgfault", "duration_s", "ns_per_fault"] {
            for row in 0..records.len() {
                assert!(cell(row, name).parse::<f64>().is_ok(), "{name} = {}", cell(row, name));
            }
        }
    }

    #[test]
    fn per_cpu_rows_follow_their_summary() {
        let report = synthetic_report(&[(100_000.0, 90_000.0)]);
        let (headers, records) = written(&report, true);
        let cpu = headers.iter().position(|h| h == "cpu").unwrap();
        let cpus: Vec<&str> = records.iter().map(|r| r[cpu].as_str()).collect();
        assert_eq!(cpus, ["", "0", "1", "", "0", "1"]);
    }

    #[test]
    fn cells_with_commas_are_quoted() {
        let mut report = synthetic_report(&[(1.0, 1.0)]);
        report.env.host = "a,b".into();
        let (headers, records) = written(&report, false);
        assert_eq!(records[0][headers.iter().position(|h| h == "host").unwrap()], "a,b");
    }
}
