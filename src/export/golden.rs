//! Golden outputs: every format rendered from fixed reports and compared byte for byte with
//! tests/golden/, so a refactor that changes one character of the table, CSV, JSON, markdown,
//! compare or plot fails here. `FAULTSCALE_BLESS=1 cargo test golden` rewrites the files
//! (only on purpose, with the diff read).

use std::path::PathBuf;

use crate::compare;
use crate::export::{self, Format};
use crate::report::fixture::synthetic_report;
use crate::report::{Failure, Report, Warning};
use crate::results::RunFile;
use crate::run::WorkerResult;

fn golden(name: &str, actual: &[u8]) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
    if std::env::var_os("FAULTSCALE_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}; bless it first", path.display()));
    if expected != actual {
        panic!(
            "{} differs from what was rendered:\n--- expected\n{}\n--- actual\n{}",
            path.display(),
            String::from_utf8_lossy(&expected),
            String::from_utf8_lossy(actual)
        );
    }
}

/// Three rounds of the baseline vs child, one with an overran child slice, a failure and warnings.
fn eventful() -> Report {
    let mut report = synthetic_report(&[(100_000.0, 90_000.0), (110_000.0, 100_000.0), (105_000.0, 95_000.0)]);
    report.measurements[3].result.overran = true;
    report.measurements[3].result.elapsed_ns = 2_500_000_000;
    report.failures.push(Failure {
        placement: report.measurements[1].placement.clone(),
        tasks: 2,
        round: 3,
        reason: "worker 12 on CPU 1 died: killed by SIGKILL".into(),
    });
    report.warnings.push(Warning::Overran {
        placement: "child".into(),
        slice: "slice 2".into(),
        measured_s: 2.5,
        asked_s: 2.0,
    });
    report.warnings.push(Warning::RoundRobin { tasks: 4, cpus: 2 });
    report
}

/// Two rounds with the workers' on-CPU times: the overhead from CPU cost, the child's workers
/// blocked 10% of the time (a time note under the rows).
fn on_cpu() -> Report {
    let mut report = synthetic_report(&[(100_000.0, 90_000.0), (101_000.0, 91_000.0)]);
    for m in &mut report.measurements {
        let on_cpu_ns = if m.placement.is_baseline() { 1_990_000_000 } else { 1_790_000_000 };
        // The second round's workers ran 1% longer on their CPUs for the baseline's 1% more
        // faults: its cost per fault is the first round's, so the table's `+-` (the CPU cost's)
        // differs from the rate's spread.
        let on_cpu_ns = if m.round == 2 && m.placement.is_baseline() { on_cpu_ns / 100 * 101 } else { on_cpu_ns };
        for worker in &mut m.result.workers {
            worker.on_cpu_ns = Some(on_cpu_ns + worker.cpu as u64 * 1_000_000);
            worker.wait_ns = Some(5_000_000);
            worker.steal_ns = Some(0);
        }
    }
    report
}

fn reports() -> Vec<(&'static str, Report)> {
    let mut interrupted = synthetic_report(&[(100_000.0, 95_000.0)]);
    interrupted.interrupted = Some(2);
    vec![
        ("plain", synthetic_report(&[(100_000.0, 90_000.0), (101_000.0, 91_000.0)])),
        ("eventful", eventful()),
        ("interrupted", interrupted),
        ("on-cpu", on_cpu()),
    ]
}

fn render(write: impl FnOnce(&mut Vec<u8>) -> anyhow::Result<()>) -> Vec<u8> {
    let mut out = Vec::new();
    write(&mut out).unwrap();
    out
}

#[test]
fn golden_run_outputs() {
    for (name, report) in reports() {
        golden(&format!("{name}.table"), &render(|out| export::table::write(out, &report)));
        golden(&format!("{name}.csv"), &render(|out| export::csv::write_rows(out, &export::csv::rows(&report, false))));
        golden(
            &format!("{name}.per-cpu.csv"),
            &render(|out| export::csv::write_rows(out, &export::csv::rows(&report, true))),
        );
        golden(
            &format!("{name}.samples.csv"),
            &render(|out| export::csv::write_rows(out, &export::csv::sample_rows(&report))),
        );
        golden(&format!("{name}.json"), &render(|out| export::json::write(out, &report, false)));
        golden(&format!("{name}.per-cpu.json"), &render(|out| export::json::write(out, &report, true)));
    }
}

#[test]
fn golden_compare_and_plot() {
    let mut base = synthetic_report(&[(100_000.0, 90_000.0), (101_000.0, 91_000.0), (99_000.0, 90_500.0)]);
    let mut new = synthetic_report(&[(100_000.0, 85_000.0), (100_500.0, 86_000.0), (99_500.0, 85_500.0)]);
    // Each round measured by a generation of its own: three cgroup instances a run, which
    // compare tests over. Each worker on its CPU the whole slice, as a run with on-CPU times
    // reads it: the overhead (CPU ns per fault over the baseline's) is then the inverse of
    // the rate ratio.
    for report in [&mut base, &mut new] {
        report.plan.generations = 3;
        report.measurements.iter_mut().for_each(|m| m.generation = m.round);
        for worker in report.measurements.iter_mut().flat_map(|m| m.result.workers.iter_mut()) {
            worker.on_cpu_ns = Some(2_000_000_000);
        }
    }
    // Another run: two files of one run are warned of.
    new.env.run_id = "4243-0000abcd".into();
    let csv_of = |report: &Report| {
        String::from_utf8(render(|out| export::csv::write_rows(out, &export::csv::rows(report, false)))).unwrap()
    };
    let json_of = |report: &Report| String::from_utf8(render(|out| export::json::write(out, report, false))).unwrap();
    let base_csv = RunFile::from_csv("base.csv".into(), &csv_of(&base)).unwrap();
    let new_csv = RunFile::from_csv("new.csv".into(), &csv_of(&new)).unwrap();
    let new_json = RunFile::from_json("new.json".into(), &json_of(&new)).unwrap();
    for (name, new_file) in [("csv", &new_csv), ("json", &new_json)] {
        let changes = compare::compare(std::slice::from_ref(&base_csv), std::slice::from_ref(new_file));
        for (format, extension) in [(Format::Table, "table"), (Format::Csv, "csv"), (Format::Markdown, "md")] {
            golden(&format!("compare-{name}.{extension}"), &render(|out| export::comparison(out, &changes, format)));
        }
        let differences = compare::differences(&base_csv, new_file).join("\n");
        golden(&format!("compare-{name}.differences"), differences.as_bytes());
    }
    let dir = tempfile_dir();
    for chart in [export::plot::Chart::Bars, export::plot::Chart::Tasks, export::plot::Chart::Depth] {
        let output = dir.join(format!("{chart:?}.svg"));
        export::plot::plot(&base_csv, chart, &output).unwrap();
        golden(&format!("plot-{chart:?}.svg"), &std::fs::read(&output).unwrap());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("faultscale-golden-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn compare_knows_the_overhead_only_where_both_files_have_on_cpu_times() {
    let csv_of = |report: &Report| {
        String::from_utf8(render(|out| export::csv::write_rows(out, &export::csv::rows(report, false)))).unwrap()
    };
    let with_cpu = RunFile::from_csv("cpu.csv".into(), &csv_of(&on_cpu())).unwrap();
    let without = RunFile::from_csv(
        "old.csv".into(),
        &csv_of(&synthetic_report(&[(100_000.0, 90_000.0), (101_000.0, 91_000.0)])),
    )
    .unwrap();
    // Both with on-CPU times: the child's CPU cost is about the baseline's (99.4%), not the
    // 111.1% its throughput says.
    let both = compare::compare(std::slice::from_ref(&with_cpu), std::slice::from_ref(&with_cpu));
    let child = both.iter().find(|c| c.placement == "child").unwrap();
    assert!((child.base_overhead_pct.unwrap() - 99.4).abs() < 0.1, "{:?}", child.base_overhead_pct);
    assert!(compare::differences(&with_cpu, &with_cpu).iter().all(|d| !d.contains("on-CPU")));
    // One file without: the overhead unknown on both sides (a throughput ratio is none), and
    // said so.
    let mixed = compare::compare(std::slice::from_ref(&without), std::slice::from_ref(&with_cpu));
    let child = mixed.iter().find(|c| c.placement == "child").unwrap();
    assert_eq!((child.base_overhead_pct, child.new_overhead_pct, child.overhead_change_pct), (None, None, None));
    let said = compare::differences(&without, &with_cpu);
    assert!(said.iter().any(|d| d.starts_with("old.csv has no on-CPU times")), "{said:?}");
    let table = render(|out| export::comparison(out, &mixed, Format::Table));
    let child_row = String::from_utf8(table).unwrap().lines().find(|l| l.contains("2t child")).unwrap().to_string();
    assert!(child_row.ends_with("-         -  -"), "{child_row}");
}

/// The files of format 1 (every worker of every slice in `result.workers`, no `crew`), as the
/// golden JSON files were before format 2, read back as the same run as those written now: the
/// reader takes the task count from the workers where the crew's sums are absent.
#[test]
fn files_of_format_1_read_back_as_format_2s() {
    for (name, report) in reports() {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/golden/format-1/{name}.json"));
        let old = RunFile::load(&path).unwrap();
        let written = render(|out| export::json::write(out, &report, false));
        let new = RunFile::from_json(old.name.clone(), std::str::from_utf8(&written).unwrap()).unwrap();
        assert_eq!(format!("{old:?}"), format!("{new:?}"), "{name}");
        assert!(!old.rates.is_empty(), "{name}");
        let with_workers = render(|out| export::json::write(out, &report, true));
        let per_cpu = RunFile::from_json(old.name.clone(), std::str::from_utf8(&with_workers).unwrap()).unwrap();
        assert_eq!(format!("{old:?}"), format!("{per_cpu:?}"), "{name} --per-cpu");
    }
}

/// The document is written as it is made, with every object's keys in their order (as it
/// says), each object of it checked as the text has it.
#[test]
fn the_streamed_document_has_its_keys_sorted() {
    for (name, report) in reports() {
        for per_cpu in [false, true] {
            let written = render(|out| export::json::write(out, &report, per_cpu));
            let checked: Result<KeysSorted, _> = serde_json::from_slice(&written);
            assert!(checked.is_ok(), "{name}, per_cpu {per_cpu}: {}", checked.err().unwrap());
        }
    }
}

/// A JSON value whose every object has its keys in their order, or the error naming the first
/// out of it.
struct KeysSorted;

impl<'de> serde::Deserialize<'de> for KeysSorted {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(KeysSorted)
    }
}

impl<'de> serde::de::Visitor<'de> for KeysSorted {
    type Value = KeysSorted;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_unit<E>(self) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<KeysSorted>()?.is_some() {}
        Ok(self)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self, A::Error> {
        let mut last = String::new();
        while let Some((key, KeysSorted)) = map.next_entry::<String, KeysSorted>()? {
            if key < last {
                return Err(serde::de::Error::custom(format!("{key:?} after {last:?}")));
            }
            last = key;
        }
        Ok(self)
    }
}

/// A measurement's size is its crew's sums, whatever the workers: 448 workers write what 2 do
/// (a few digits more), and only --per-cpu writes each of them.
#[test]
fn a_measurement_is_of_one_size_whatever_the_workers() {
    let bytes = |workers: usize, per_cpu: bool| {
        let mut report = synthetic_report(&[(100_000.0, 90_000.0)]);
        for m in &mut report.measurements {
            let first = m.result.workers[0].clone();
            m.result.workers = (0..workers).map(|cpu| WorkerResult { cpu, ..first.clone() }).collect();
            m.result.samples.iter_mut().for_each(|s| s.iterations = vec![390; workers]);
        }
        let written = render(|out| export::json::write(out, &report, per_cpu));
        let document: serde_json::Value = serde_json::from_slice(&written).unwrap();
        let measurements = document["measurements"].as_array().unwrap();
        measurements.iter().map(|m| serde_json::to_string_pretty(m).unwrap().len()).max().unwrap()
    };
    let (two, many) = (bytes(2, false), bytes(448, false));
    assert!(many < two + 100 && many < 4096, "2 workers: {two} bytes; 448: {many}");
    assert!(bytes(448, true) > 448 * 200, "--per-cpu writes every worker");
}

/// The same run read back from its files, each streamed from the file (a byte-order mark, a
/// CSV's per-CPU rows): as from its text.
#[test]
fn a_file_streamed_reads_as_its_text() {
    let report = on_cpu();
    let dir = tempfile_dir();
    let csv = render(|out| export::csv::write_rows(out, &export::csv::rows(&report, true)));
    let json = render(|out| export::json::write(out, &report, true));
    for (name, text) in [("x.csv", csv), ("x.json", json)] {
        let path = dir.join(name);
        std::fs::write(&path, [b"\xef\xbb\xbf".as_slice(), &text].concat()).unwrap();
        let streamed = RunFile::load(&path).unwrap();
        let text = String::from_utf8(text).unwrap();
        let read = match name {
            "x.csv" => RunFile::from_csv(streamed.name.clone(), &text),
            _ => RunFile::from_json(streamed.name.clone(), &text),
        };
        assert_eq!(format!("{streamed:?}"), format!("{:?}", read.unwrap()), "{name}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
