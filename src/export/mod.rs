//! Output formats, one a file, and the life of the files a run writes (`outputs.rs`: opened,
//! checkpointed, written whole, each through a `src/sink.rs` sink). The files a run writes are
//! the `EXPORTERS` list: the command line, its checks, the checkpoints and the final write
//! iterate it, so a new format is one file and one entry.

pub mod comparison;
pub mod csv;
pub mod flamegraph;
#[cfg(test)]
mod golden;
pub mod json;
pub mod markdown;
pub mod outputs;
pub mod plot;
pub mod record;
mod resolution;
pub mod table;

use std::io::Write;

use anyhow::Result;

use crate::compare::{Change, Significance};
use crate::report::Report;

/// A file format a run can write, named by its own option (`--csv FILE`).
pub trait Exporter: Sync {
    /// The option's long name: `csv` for `--csv`.
    fn option(&self) -> &'static str;
    /// The option's line in `--help`, before " (- for stdout)", which cli.rs adds to each.
    fn help(&self) -> &'static str;
    fn write(&self, out: &mut dyn Write, report: &Report, settings: &Settings) -> Result<()>;
    /// Whether the format records a run's failures beside its slices, so a run whose every
    /// placement failed is still worth a file in it (the JSON's `failures`; a CSV's rows are
    /// slices, and there would be none).
    fn records_failures(&self) -> bool {
        false
    }
}

impl std::fmt::Debug for dyn Exporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "--{}", self.option())
    }
}

/// What the formats' writers are told beside the report.
#[derive(Debug, Clone, Copy, Default)]
pub struct Settings {
    /// --per-cpu: the CSV adds one row per worker, the JSON each worker's counters.
    pub per_cpu: bool,
}

/// Every file a run can write, in the order `--help` lists their options.
pub static EXPORTERS: &[&dyn Exporter] = &[&csv::SummaryCsv, &json::Json, &csv::SamplesCsv];

/// How `compare` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Csv,
    Markdown,
}

pub fn comparison(out: &mut dyn Write, changes: &[Change], format: Format) -> Result<()> {
    match format {
        Format::Table => comparison::write(out, changes),
        Format::Csv => csv::write(out, changes),
        Format::Markdown => markdown::comparison(out, changes),
    }
}

/// What compare's marks and figures mean, under its table and its markdown.
const COMPARISON_KEY: &str = "* rate change significant at 95%, ? not tested: a rate is tested over two or more runs a side (one run cannot see how the machine's speed drifts between runs); the overhead, a ratio within each run, over each run's cgroup instances (crew generations), or its runs where a side has several, and not for one run of one instance; every p (rates, overheads) Holm-adjusted together; CV = the rate's over the slices; ovh = placement/baseline CPU ns per fault, each run's own overhead (the geometric mean over its cgroup instances), the mean over a side's runs; its change is new/base";

/// `*` where the change is significant, `?` where a side cannot say what its next run gives.
fn mark(change: &Change) -> &'static str {
    match change.significant {
        Significance::Yes => "*",
        Significance::Untested => "?",
        Significance::No => "",
    }
}

/// The overhead's change with its interval and Holm-adjusted p: `+3.1% (+1.0 to +5.2) p=0.012`.
fn overhead_change(change: &Change) -> String {
    match (
        change.overhead_change_pct,
        change.overhead_change_low_pct,
        change.overhead_change_high_pct,
        change.overhead_p_holm,
    ) {
        (Some(value), Some(low), Some(high), Some(p)) => format!("{value:+.1}% ({low:+.1} to {high:+.1}) p={p:.3}"),
        _ => "-".into(),
    }
}

fn pct(value: Option<f64>) -> String {
    value.map(|v| format!("{v:.1}%")).unwrap_or_else(|| "-".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each state a run's file can be in is written in the CSV and the JSON, read back, and
    /// said by compare for what it is: a checkpoint is no run "a signal ended early".
    #[test]
    fn a_files_state_is_written_read_back_and_said() {
        use crate::report::{Failure, fixture::synthetic_report};
        type Case = (&'static str, fn(&mut Report));
        let cases: [Case; 4] = [
            ("a checkpoint of a run still going", |r| {
                r.finished = false;
            }),
            ("SIGTERM ended that run early", |r| r.interrupted = Some(libc::SIGTERM)),
            (
                "that run failed (1 slice failed, the first child repetition 3 slice 1 at 2 tasks: mkdir: No space)",
                |r| {
                    let placement = r.plan.placements[1].clone();
                    r.failures.push(Failure { placement, tasks: 2, round: 3, reason: "mkdir: No space".into() });
                },
            ),
            ("", |_| {}),
        ];
        for (said, make) in cases {
            let mut report = synthetic_report(&[(100_000.0, 90_000.0), (110_000.0, 100_000.0)]);
            make(&mut report);
            for (format, file) in [(&csv::SummaryCsv as &dyn Exporter, "x.csv"), (&json::Json, "x.json")] {
                let mut bytes = Vec::new();
                format.write(&mut bytes, &report, &Settings { per_cpu: false }).unwrap();
                let text = String::from_utf8(bytes).unwrap();
                if file == "x.json" && said.starts_with("SIGTERM") {
                    // The JSON's reason names the signal, as the CSV's run_state_reason does.
                    let document: serde_json::Value = serde_json::from_str(&text).unwrap();
                    assert_eq!(
                        (&document["signal"], &document["reason"]),
                        (&serde_json::json!(15), &serde_json::json!("SIGTERM"))
                    );
                }
                let mut read = match file {
                    "x.csv" => crate::results::RunFile::from_csv(file.into(), &text),
                    _ => crate::results::RunFile::from_json(file.into(), &text),
                }
                .unwrap();
                read.writer_alive = Some(true);
                let note = crate::compare::state_note(&read).unwrap_or_default();
                assert!(note.contains(said), "{file}: {note:?} says {said:?}");
                assert_eq!(note.is_empty(), said.is_empty(), "{file}: {note:?}");
            }
        }
    }

    #[test]
    fn comparison_formats_render() {
        let change = Change {
            workload: "anon".into(),
            mode: "process".into(),
            tasks: 2,
            placement: "child".into(),
            new_file: "b.csv".into(),
            base_runs: 1,
            new_runs: 1,
            rate_p_holm: Some(0.001),
            base_mean: 100_000.0,
            new_mean: 90_000.0,
            change_pct: -10.0,
            significant: Significance::Yes,
            base_cv_pct: Some(1.0),
            new_cv_pct: Some(2.0),
            base_overhead_pct: Some(105.0),
            new_overhead_pct: Some(110.0),
            overhead_change_pct: Some(4.8),
            overhead_change_low_pct: Some(1.2),
            overhead_change_high_pct: Some(8.5),
            overhead_p_holm: Some(0.012),
            base_memcg_ns: None,
            new_memcg_ns: None,
            memcg_ns_change: None,
            memcg_ns_change_low: None,
            memcg_ns_change_high: None,
            memcg_p_holm: None,
            lkp_metric: "per_process_ops",
            base_per_task_ops: 50_000.0,
            new_per_task_ops: 45_000.0,
            base_scalability: Some(0.9),
            new_scalability: Some(0.81),
        };
        for (format, expected) in [
            (Format::Table, "-10.00%*"),
            (Format::Table, "        50,000    -10.0%         45,000  will-it-scale.per_process_ops"),
            (Format::Table, "0.9000    -10.0%         0.8100  will-it-scale.scalability"),
            (Format::Csv, "anon,process,2,child,b.csv,1,1,100000.0,90000.0,-10.0,yes,0.001"),
            (Format::Csv, "per_process_ops,50000.0,45000.0,0.9,0.81"),
            (Format::Markdown, "| -10.00%* |"),
            (Format::Markdown, "| 50000 | -10.0% | 45000 | will-it-scale.per_process_ops |"),
        ] {
            let mut out = Vec::new();
            comparison(&mut out, std::slice::from_ref(&change), format).unwrap();
            let text = String::from_utf8(out).unwrap();
            assert!(text.contains(expected), "{format:?}: {text}");
        }
    }
}
