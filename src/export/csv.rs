//! Tidy CSV: one observation per row, stable column names, plain numbers (units live in the
//! column names). The columns are documented in docs/output.md.

use std::io::Write;

use anyhow::Result;

use crate::report::levels::LevelCost;
use crate::report::{Measurement, Report};
pub use crate::results::row::Row;
use crate::run::WorkerResult;

/// Rounds to 6 significant decimals so cells stay readable without losing measured precision.
fn round6(value: f64) -> f64 {
    (value * 1e6).round() / 1e6
}

/// --csv: one row per slice of each placement (plus one per worker with --per-cpu).
pub struct SummaryCsv;

impl super::Exporter for SummaryCsv {
    fn option(&self) -> &'static str {
        "csv"
    }
    fn help(&self) -> &'static str {
        "Write summary rows as CSV to FILE"
    }
    fn write(&self, out: &mut dyn Write, report: &Report, settings: &super::Settings) -> Result<()> {
        write_rows(out, &rows(report, settings.per_cpu))
    }
}

/// --samples-csv: every per-interval sample of every worker.
pub struct SamplesCsv;

impl super::Exporter for SamplesCsv {
    fn option(&self) -> &'static str {
        "samples-csv"
    }
    fn help(&self) -> &'static str {
        "Write every per-interval sample of every worker as CSV to FILE"
    }
    fn write(&self, out: &mut dyn Write, report: &Report, _: &super::Settings) -> Result<()> {
        write_rows(out, &sample_rows(report))
    }
}

pub fn rows(report: &Report, per_cpu: bool) -> Vec<Row> {
    let costs = report.level_costs();
    let mut rows = Vec::new();
    for m in &report.measurements {
        rows.push(summary_row(report, &costs, m));
        if per_cpu {
            rows.extend(m.result.workers.iter().enumerate().map(|(index, w)| worker_row(report, &costs, m, index, w)));
        }
    }
    rows
}

/// The columns that say which run, placement and slice a row is of, the same on the slice's
/// summary row and on its workers' rows; every figure is left empty for the row's kind to fill,
/// so a new figure column never reaches a worker's row by being copied.
fn slice_row(report: &Report, costs: &[LevelCost], m: &Measurement) -> Row {
    let env = &report.env;
    let level = costs.iter().find(|c| c.tasks == m.tasks).map(|c| &c.cpu);
    Row {
        run_id: env.run_id.clone(),
        started_at: env.started_at.clone(),
        host: env.host.clone(),
        kernel: env.kernel.clone(),
        cgroup_version: env.cgroup_version.to_string(),
        workload: report.plan.workload.kind.name.to_string(),
        mode: report.plan.mode.name().to_string(),
        tasks: m.result.workers.len(),
        placement: m.placement.name.clone(),
        depth: m.placement.depth,
        base_depth: env.base_depth,
        profile: m.placement.profile.clone().unwrap_or_default(),
        cgroup_path: m.leaf.cgroup_path.clone(),
        repetition: report.plan.repetition_of(m.round),
        slice: report.plan.slice_of(m.round),
        sequence: m.sequence,
        duration_s: round6(m.result.elapsed_s()),
        unit: report.unit.name().to_string(),
        kernel_count_source: m.result.kernel_source.name().to_string(),
        run_complete: report.complete(),
        run_state: report.state().name().to_string(),
        run_state_reason: report.state().reason(),
        thp_enabled: env.thp_enabled.clone(),
        governor: env.governor.clone(),
        overran: m.result.overran,
        chunk_bytes: report.plan.workload.chunk_bytes,
        size_bytes: report.plan.workload.size_bytes,
        thp_mode: report.plan.workload.thp.name().to_string(),
        tmpdir_fs: report.files_fs.clone().unwrap_or_default(),
        knobs: knobs_of(report, m),
        iterations_per_task: report.plan.workload.fixed_iterations,
        disturbance: m.disturbance().map(round6),
        round_complete: m.round_complete,
        generation: Some(m.generation),
        counted: report.counted(m),
        ns_per_level: level.map(|l| round6(l.ns_per_fault)),
        ns_per_level_low: level.and_then(|l| l.low).map(round6),
        ns_per_level_high: level.and_then(|l| l.high).map(round6),
        ..Row::default()
    }
}

/// A slice's row: the figures of all its workers together, from the slice's one record
/// (`record::measurement`), which the JSON's measurement is too.
fn summary_row(report: &Report, costs: &[LevelCost], m: &Measurement) -> Row {
    let record = super::record::measurement(report, m, false);
    let (result, crew) = (&record.result, record.result.crew.clone().unwrap_or_default());
    let mut row = Row {
        tasks: crew.tasks,
        faults: crew.loop_faults,
        faults_per_sec: round6(record.faults_per_sec),
        faults_per_sec_per_task: round6(record.faults_per_sec / crew.tasks as f64),
        ns_per_fault: record.ns_per_fault.map(round6),
        kernel_faults: crew.kernel_faults,
        user_s: round6(crew.user_us as f64 / 1e6),
        sys_s: round6(crew.sys_us as f64 / 1e6),
        memcg_pgfault: result.memcg_pgfault,
        start_skew_us: Some(round6(result.start_skew_ns as f64 / 1e3)),
        overhead_vs_baseline: record.overhead_vs_baseline.map(round6),
        psi_scope: result.psi_scope,
        memcg_share: result.profile.and_then(|p| p.memcg_share()).map(round6),
        memcg_ns_per_fault: record.memcg_ns_per_fault.map(round6),
        cpu_ns_per_fault: record.cpu_ns_per_fault.map(round6),
        on_cpu_s: record.on_cpu_s.map(round6),
        wait_s: record.wait_s.map(round6),
        blocked_s: record.blocked_s.map(round6),
        steal_s: record.steal_s.map(round6),
        throughput_vs_baseline: record.throughput_vs_baseline.map(round6),
        timeslices: crew.timeslices,
        overran: result.overran,
        disturbance: record.disturbance.map(round6),
        lock_contentions_per_kop: record.lock_contentions_per_kop.map(round6),
        lock_wait_ns_per_op: record.lock_wait_ns_per_op.map(round6),
        round_complete: record.round_complete,
        counted: record.counted,
        ..slice_row(report, costs, m)
    };
    // The memcg counters the row has columns for, by name (`memcg::Counters::csv_columns`).
    for (name, cell) in row.memcg_cells() {
        *cell = result.memcg.get(name).copied();
    }
    row
}

/// --per-cpu: one worker's row, from that worker's own counters over its own window.
fn worker_row(report: &Report, costs: &[LevelCost], m: &Measurement, index: usize, worker: &WorkerResult) -> Row {
    let window_ns = worker.window_ns(m.result.elapsed_ns);
    let faults_per_sec = worker.loop_faults as f64 / (window_ns.max(1) as f64 / 1e9);
    let seconds = |ns: u64| round6(ns as f64 / 1e9);
    let slice = slice_row(report, costs, m);
    Row {
        cpu: Some(worker.cpu),
        worker: Some(index),
        // siblings:N: the worker's own sibling; the summary row names their parent.
        cgroup_path: worker.cgroup_path.clone().unwrap_or(slice.cgroup_path.clone()),
        faults: worker.loop_faults,
        faults_per_sec: round6(faults_per_sec),
        faults_per_sec_per_task: round6(faults_per_sec),
        ns_per_fault: crate::stats::ns_per_unit(faults_per_sec, 1).map(round6),
        kernel_faults: worker.kernel_faults,
        user_s: round6(worker.user_us as f64 / 1e6),
        sys_s: round6(worker.sys_us as f64 / 1e6),
        cpu_ns_per_fault: worker
            .on_cpu_ns
            .filter(|_| worker.loop_faults > 0)
            .map(|ns| round6(ns as f64 / worker.loop_faults as f64)),
        on_cpu_s: worker.on_cpu_ns.map(seconds),
        wait_s: worker.wait_ns.map(seconds),
        blocked_s: worker.blocked_ns(m.result.elapsed_ns).map(seconds),
        steal_s: worker.steal_ns.map(seconds),
        timeslices: worker.timeslices,
        duration_s: seconds(window_ns),
        ..slice
    }
}

/// The knob files written for the measurement's placement, with the level each is on.
fn knobs_of(report: &Report, m: &Measurement) -> String {
    let leaf_levels = m.leaf.cgroup_path.matches('/').count();
    report
        .knobs
        .iter()
        .filter(|k| k.placement == m.placement.name)
        // Each generation's own cgroups: the leaf's levels, not another instance's.
        .filter(|k| {
            m.leaf.cgroup_path == k.cgroup_path || m.leaf.cgroup_path.starts_with(&format!("{}/", k.cgroup_path))
        })
        .map(|k| {
            let level = m.placement.depth as usize - (leaf_levels - k.cgroup_path.matches('/').count());
            format!("level{level}:{}={}", k.file, k.written)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One row per worker per sample: the loop counter since the measurement started and the
/// rate over the interval that ended at the sample. A row is told apart by (run_id, placement,
/// tasks, repetition, slice, worker, elapsed_s): with `--tasks 1,3`, or two workers on one
/// CPU, the others repeat. `tasks` and `worker` come last, so columns read by position keep
/// theirs.
#[derive(Debug, Default, serde::Serialize)]
pub struct SampleRow<'a> {
    pub run_id: &'a str,
    pub placement: &'a str,
    pub repetition: u32,
    pub slice: u32,
    pub cpu: usize,
    pub elapsed_s: f64,
    pub faults: u64,
    pub interval_faults_per_sec: f64,
    pub tasks: usize,
    /// The worker's index in its slice, 0-based (as the per-CPU rows' `worker`).
    pub worker: usize,
}

pub fn sample_rows(report: &Report) -> Vec<SampleRow<'_>> {
    let faults_per_iteration = crate::workload::shape(&report.plan.workload_settings(None)).per_iteration;
    let mut rows = Vec::new();
    for m in &report.measurements {
        for (worker_index, worker) in m.result.workers.iter().enumerate() {
            let mut previous = (0u64, 0u64);
            for sample in &m.result.samples {
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
                    tasks: m.result.workers.len(),
                    worker: worker_index,
                });
                previous = (sample.elapsed_ns, faults);
            }
        }
    }
    rows
}

/// A run's rows, with the header even where no slice was measured (a file a stop left empty
/// still says what it is).
pub fn write_rows<T: serde::Serialize + Default>(out: &mut dyn Write, rows: &[T]) -> Result<()> {
    if !rows.is_empty() {
        return write(out, rows);
    }
    let mut one_row = Vec::new();
    write(&mut one_row, &[T::default()])?;
    let header = one_row.split(|&b| b == b'\n').next().unwrap_or_default();
    out.write_all(header)?;
    out.write_all(b"\n")?;
    Ok(())
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

    #[test]
    fn a_run_with_no_slice_still_writes_the_header() {
        let mut out = Vec::new();
        write_rows::<Row>(&mut out, &[]).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 1);
        assert!(text.starts_with("run_id,started_at,") && text.contains(",round_complete,counted,"), "{text}");
        let mut samples = Vec::new();
        write_rows::<SampleRow>(&mut samples, &[]).unwrap();
        assert!(String::from_utf8(samples).unwrap().starts_with("run_id,"));
    }

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
        assert_eq!(cell(0, "placement"), "base");
        assert_eq!(cell(1, "placement"), "child");
        assert_eq!(cell(1, "faults"), "180000");
        assert_eq!(cell(1, "faults_per_sec"), "90000.0");
        assert_eq!(cell(1, "faults_per_sec_per_task"), "45000.0");
        assert_eq!(cell(1, "overhead_vs_baseline"), "", "no on-CPU times: the overhead is unknown");
        assert_eq!(cell(1, "throughput_vs_baseline"), "1.111111", "beside it");
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
    fn rows_read_back_into_the_row_type_write_the_same_bytes() {
        let report = synthetic_report(&[(100_000.0, 90_000.0)]);
        let mut first = Vec::new();
        write(&mut first, &rows(&report, true)).unwrap();
        let back: Vec<Row> =
            ::csv::Reader::from_reader(first.as_slice()).deserialize().collect::<Result<_, _>>().unwrap();
        let mut second = Vec::new();
        write(&mut second, &back).unwrap();
        assert_eq!(String::from_utf8(first).unwrap(), String::from_utf8(second).unwrap());
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
