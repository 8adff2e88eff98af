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
use crate::text::signed;

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
        (Some(value), Some(low), Some(high), Some(p)) => {
            format!("{}% ({} to {}) p={p:.3}", signed(value, 1), signed(low, 1), signed(high, 1))
        }
        _ => "-".into(),
    }
}

/// What compare's lock lines mean, under its table and its markdown where a row has them.
const LOCKS_KEY: &str = "lock wait = ns per operation in lock contentions (--locks: the kernel's lock:contention_begin to contention_end), each run's mean over its cgroup instances, the mean over a side's runs; its change and the contentions' are new - base with the 95% interval, tested as the memcg cost is and Holm-adjusted with the rest; each caller (a lock named by the code that contended, never by a guessed name) breaks the change down: its interval, no test";

/// Whether any row has lock figures on both sides.
fn any_locks(changes: &[Change]) -> bool {
    changes.iter().any(|c| c.base_lock_wait_ns_per_op.is_some())
}

/// A difference's change with its interval and Holm-adjusted p, `digits` after the point:
/// `+7.3 (+2.1 to +12.5) p=0.012`; where a side cannot say what its next run gives, `?`.
fn difference_change(
    (value, low, high, p): (Option<f64>, Option<f64>, Option<f64>, Option<f64>),
    digits: usize,
) -> String {
    match (value, low, high, p) {
        (Some(v), Some(low), Some(high), Some(p)) => {
            format!("{} ({} to {}) p={p:.3}", signed(v, digits), signed(low, digits), signed(high, digits))
        }
        _ => "? (not tested)".into(),
    }
}

/// The row's lock wait change, or with `contentions` its lock contentions' change, as
/// `difference_change` writes it.
fn lock_change(c: &Change, contentions: bool) -> String {
    match contentions {
        false => difference_change(
            (
                c.lock_wait_ns_per_op_change,
                c.lock_wait_ns_per_op_change_low,
                c.lock_wait_ns_per_op_change_high,
                c.lock_wait_p_holm,
            ),
            1,
        ),
        true => difference_change(
            (
                c.lock_contentions_per_kop_change,
                c.lock_contentions_per_kop_change_low,
                c.lock_contentions_per_kop_change_high,
                c.lock_contentions_p_holm,
            ),
            2,
        ),
    }
}

/// A caller's change with its interval, no p (`CallerChange`): `+2.2 (-1.0 to +5.4)`.
fn caller_change(caller: &crate::compare::CallerChange) -> String {
    match caller.change {
        Some(c) => format!("{} ({} to {})", signed(c.change, 1), signed(c.low, 1), signed(c.high, 1)),
        None => format!("{} ? (not tested)", signed(caller.new_wait_ns_per_op - caller.base_wait_ns_per_op, 1)),
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
            base_lock_wait_ns_per_op: None,
            new_lock_wait_ns_per_op: None,
            lock_wait_ns_per_op_change: None,
            lock_wait_ns_per_op_change_low: None,
            lock_wait_ns_per_op_change_high: None,
            lock_wait_p_holm: None,
            base_lock_contentions_per_kop: None,
            new_lock_contentions_per_kop: None,
            lock_contentions_per_kop_change: None,
            lock_contentions_per_kop_change_low: None,
            lock_contentions_per_kop_change_high: None,
            lock_contentions_p_holm: None,
            lock_callers: Vec::new(),
            unit: "fault".into(),
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
            // No lock figures, no lock lines (the CSV has its columns, empty).
            assert!(format == Format::Csv || !text.contains("lock"), "{text}");
        }
        // With lock figures: the row's lock wait and contentions, then each caller.
        let with_locks = Change {
            unit: "loop".into(),
            base_lock_wait_ns_per_op: Some(14.5),
            new_lock_wait_ns_per_op: Some(52.0),
            lock_wait_ns_per_op_change: Some(37.5),
            lock_wait_ns_per_op_change_low: Some(20.31),
            lock_wait_ns_per_op_change_high: Some(54.69),
            lock_wait_p_holm: Some(0.004),
            base_lock_contentions_per_kop: Some(0.59),
            new_lock_contentions_per_kop: Some(0.61),
            lock_contentions_per_kop_change: None,
            lock_callers: vec![crate::compare::CallerChange {
                caller: "rwsem:W __mmap_region<-do_mmap".into(),
                base_wait_ns_per_op: 9.5,
                new_wait_ns_per_op: 45.0,
                change: Some(crate::stats::RatioChange { change: 35.5, low: 19.0, high: 52.0, p: 0.01 }),
            }],
            ..change
        };
        for (format, expected) in [
            (
                Format::Table,
                "lock wait ns/loop 14.5 -> 52.0: +37.5 (+20.3 to +54.7) p=0.004; lock contentions/1k loops 0.59 -> 0.61: ? (not tested)",
            ),
            (Format::Table, "  rwsem:W __mmap_region<-do_mmap: 9.5 -> 45.0 ns/loop, +35.5 (+19.0 to +52.0)\n"),
            (Format::Table, "\nlock wait = ns per operation"),
            (Format::Csv, "0.81,14.5,52.0,37.5,20.31,54.69,0.004,0.59,0.61,,,,\n"),
            (
                Format::Markdown,
                "| anon | process | 2 | child | 14.5 | 52.0 | +37.5 (+20.3 to +54.7) p=0.004 | 0.59 | 0.61 | ? (not tested) |",
            ),
            (
                Format::Markdown,
                "| anon process 2 tasks child | `rwsem:W __mmap_region<-do_mmap` | 9.5 | 45.0 | +35.5 (+19.0 to +52.0) |",
            ),
        ] {
            let mut out = Vec::new();
            comparison(&mut out, std::slice::from_ref(&with_locks), format).unwrap();
            let text = String::from_utf8(out).unwrap();
            assert!(text.contains(expected), "{format:?}: {text}");
        }
        // Changes that round to zero from below print +0.0, never -0.0 (a run against itself).
        let near_zero = Change {
            change_pct: -0.001,
            overhead_change_pct: Some(-0.01),
            overhead_change_low_pct: Some(-0.04),
            base_memcg_ns: Some(10.0),
            new_memcg_ns: Some(10.0),
            memcg_ns_change: Some(-0.01),
            memcg_ns_change_low: Some(-0.04),
            memcg_ns_change_high: Some(0.02),
            memcg_p_holm: Some(1.0),
            new_per_task_ops: 49_999.99,
            lock_wait_ns_per_op_change: Some(-0.01),
            lock_wait_ns_per_op_change_low: Some(-0.04),
            lock_wait_ns_per_op_change_high: Some(0.02),
            lock_contentions_per_kop_change: Some(-0.001),
            lock_contentions_per_kop_change_low: Some(-0.004),
            lock_contentions_per_kop_change_high: Some(0.002),
            lock_contentions_p_holm: Some(1.0),
            lock_callers: vec![crate::compare::CallerChange {
                caller: "spinlock rcu_core".into(),
                base_wait_ns_per_op: 1.0,
                new_wait_ns_per_op: 0.99,
                change: Some(crate::stats::RatioChange { change: -0.01, low: -0.04, high: 0.02, p: 1.0 }),
            }],
            ..with_locks
        };
        for format in [Format::Table, Format::Markdown] {
            let mut out = Vec::new();
            comparison(&mut out, std::slice::from_ref(&near_zero), format).unwrap();
            let text = String::from_utf8(out).unwrap();
            assert!(!text.contains("-0.0"), "{format:?}: {text}");
            assert!(text.contains("+0.0 (+0.0 to +0.0)") && text.contains("+0.00 (+0.00 to +0.00)"), "{text}");
        }
    }
}
