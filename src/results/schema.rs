//! The result JSON's document, one set of types for both directions: export/json.rs fills and
//! writes them, results.rs reads a file back through them, so a field cannot differ between
//! writer and reader (as `row::Row` for the CSV). Serialized through `serde_json::to_value`,
//! whose objects sort their keys: the declaration order here is not the file's.
//!
//! Reading, every field is of its type and an unknown one is refused, each with its JSON path
//! (`results::json::document`). Files from earlier versions lack the newer fields: those are
//! Option or default, and a field no version writes any more is still read.
//!
//! What the reader does not look into stays a value of the writer's own types: environment,
//! summaries, per_level, warnings and knobs as JSON values, and a slice's workers, samples,
//! profile and harness times as type parameters the reader passes over (`IgnoredAny`).

use std::collections::BTreeMap;

use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::measure::memcg::PsiScope;

/// The format of the documents this version writes (`Document::format_version`): 2 gives each
/// slice its crew's sums (`SliceData::crew`) and a worker's figures only with --per-cpu; files
/// without the field are of format 1, each slice's workers always written.
pub const FORMAT_VERSION: u32 = 2;

/// The whole file. Its state (`state`, `signal`, `reason`) says what the file is, as the CSV's
/// `run_state` and `run_state_reason`. Its fields are declared in their names' order, the
/// order the writer streams them in (`export::json`: keys sorted). `Ms` is the measurements:
/// the reader's list, or the writer's sequence made one measurement at a time.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Document<Ms = Vec<Measurement>> {
    /// false when a signal ended the run early (the CSV's run_complete).
    pub complete: Option<bool>,
    #[serde(default, deserialize_with = "super::json::unique_keys")]
    pub environment: Value,
    #[serde(default)]
    pub failures: Vec<Failure>,
    /// The run's temporary directory for the file workloads.
    pub files: Option<String>,
    /// `FORMAT_VERSION` as written; absent (format 1) in files from before it.
    pub format_version: Option<u32>,
    /// The knobs written, per placement.
    #[serde(default, deserialize_with = "super::json::unique_keys")]
    pub knobs: Value,
    /// None: not a faultscale document (every version wrote them).
    pub measurements: Option<Ms>,
    /// What one memcg level costs, per task count, where two or more plain depths ran.
    #[serde(default, deserialize_with = "super::json::unique_keys")]
    pub per_level: Value,
    /// The CSV's run_state_reason: the signal's name or the failure.
    pub reason: Option<String>,
    #[serde(default)]
    pub settings: Settings,
    /// The signal's number, for `stopped`.
    pub signal: Option<i32>,
    /// `running` (a checkpoint), `stopped`, `failed` or `complete`; absent in files from before.
    pub state: Option<String>,
    #[serde(default, deserialize_with = "super::json::unique_keys")]
    pub summaries: Value,
    /// What the rates count (faults, loops, pages, ops); a file from before it counts faults.
    pub unit: Option<String>,
    #[serde(default, deserialize_with = "super::json::unique_keys")]
    pub warnings: Value,
}

/// What the run was asked to do; declared in its fields' names' order, as written.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    pub chunk_bytes: Option<u64>,
    pub cpus: Vec<usize>,
    /// Fixed work (--iterations) has no duration: each slice is one whole pass of the work.
    pub duration_s: Option<f64>,
    pub generations: u32,
    pub interval_s: f64,
    pub iterations_per_task: Option<u64>,
    pub kernel_count: String,
    /// None in files from before --mode: `process`.
    pub mode: Option<String>,
    pub page_size: u64,
    pub placements: Vec<String>,
    pub repeat: u32,
    pub size_bytes: Option<u64>,
    pub slice_s: Option<f64>,
    pub slices: u32,
    pub tasks: Vec<usize>,
    pub thp: String,
    /// --thp as asked, as the CSV's column (`thp` holds the same word).
    pub thp_mode: Option<String>,
    /// The file workloads' filesystem; null for the others.
    pub tmpdir_fs: Option<String>,
    pub warmup_s: f64,
    /// None: not a faultscale document (every version wrote it).
    pub workload: Option<String>,
}

impl Settings {
    /// The settings `compare` pairs rows by (`results::SETTINGS`) that the JSON's settings
    /// hold, as the CSV writes their cells; the kernel count's source is each slice's
    /// (`SliceData::kernel_source`), and the knobs are not compared from a JSON file.
    pub fn compared(&self) -> [(&'static str, Option<String>); 5] {
        let [chunk, size, thp, tmpdir_fs, _kernel_count_source, _knobs, iterations] = super::SETTINGS;
        [
            (chunk, self.chunk_bytes.map(|n| n.to_string())),
            (size, self.size_bytes.map(|n| n.to_string())),
            (thp, self.thp_mode.clone()),
            (tmpdir_fs, self.tmpdir_fs.clone()),
            // A timed run's cell is empty, as the CSV writes it (a file from before --iterations
            // has a duration too): fixed work against timed is a settings difference.
            (iterations, self.iterations_per_task.map(|n| n.to_string()).or(self.duration_s.map(|_| String::new()))),
        ]
    }
}

/// One slice as `measurements` holds it: the CSV's summary row, less what the document says
/// once (`tests::ELSEWHERE`), plus the slice's data.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measurement<Slice = SliceData> {
    pub placement: String,
    /// Levels below the baseline.
    pub depth: Option<u32>,
    #[serde(default)]
    pub cgroup_path: String,
    /// 1-based over the whole run at a task count.
    #[serde(default)]
    pub round: u32,
    /// The crew generation (1-based) that measured it; absent in files from before.
    pub generation: Option<u32>,
    pub repetition: Option<u32>,
    pub slice: Option<u32>,
    #[serde(default)]
    pub sequence: usize,
    pub faults_per_sec: f64,
    pub overhead_vs_baseline: Option<f64>,
    pub throughput_vs_baseline: Option<f64>,
    pub cpu_ns_per_fault: Option<f64>,
    pub on_cpu_s: Option<f64>,
    pub wait_s: Option<f64>,
    pub blocked_s: Option<f64>,
    pub steal_s: Option<f64>,
    pub memcg_ns_per_fault: Option<f64>,
    pub ns_per_fault: Option<f64>,
    pub disturbance: Option<f64>,
    /// --locks: contentions per 1,000 operations and wait ns per operation; null where not
    /// counted (files from before the fields: absent).
    #[serde(default)]
    pub lock_contentions_per_kop: Option<f64>,
    #[serde(default)]
    pub lock_wait_ns_per_op: Option<f64>,
    #[serde(default = "yes")]
    pub round_complete: bool,
    /// Whether the slice entered the figures (a file from before the field: it did).
    #[serde(default = "yes")]
    pub counted: bool,
    /// One slice's data, which files before the field's name held as `run` (a run is one
    /// invocation; this is one slice).
    #[serde(alias = "run")]
    pub result: Slice,
    /// Files from before `overhead_vs_baseline`: the placement's rate over the baseline's, read
    /// as the overhead's inverse; never written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio_vs_root: Option<f64>,
    /// Written for a while beside `overhead_vs_baseline`, never read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio_vs_baseline: Option<f64>,
}

impl<Slice> Measurement<Slice> {
    /// Every figure by its field name, read or absent: each must be finite and not negative,
    /// including those `compare` and `plot` do not use (a file is refused whole, not in part).
    pub fn figures(&self) -> [(&'static str, Option<f64>); 15] {
        [
            ("faults_per_sec", Some(self.faults_per_sec)),
            ("overhead_vs_baseline", self.overhead_vs_baseline),
            ("throughput_vs_baseline", self.throughput_vs_baseline),
            ("cpu_ns_per_fault", self.cpu_ns_per_fault),
            ("on_cpu_s", self.on_cpu_s),
            ("wait_s", self.wait_s),
            ("blocked_s", self.blocked_s),
            ("steal_s", self.steal_s),
            ("memcg_ns_per_fault", self.memcg_ns_per_fault),
            ("ns_per_fault", self.ns_per_fault),
            ("disturbance", self.disturbance),
            ("lock_contentions_per_kop", self.lock_contentions_per_kop),
            ("lock_wait_ns_per_op", self.lock_wait_ns_per_op),
            ("ratio_vs_root", self.ratio_vs_root),
            ("ratio_vs_baseline", self.ratio_vs_baseline),
        ]
    }
}

fn yes() -> bool {
    true
}

/// One slice's data: the crew's counters, the memcg's, the samples and the harness's times.
/// The writer's types for a worker (`run::WorkerResult`, written with --per-cpu only), a
/// sample, the profile and the harness times; the reader reads the crew's sums and passes over
/// the rest (a file of format 1 has no `crew`: its workers are counted instead).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SliceData<Worker = IgnoredAny, Sample = IgnoredAny, Profile = IgnoredAny, Harness = IgnoredAny> {
    /// The measured window (fixed work: the first start to the last finish).
    pub elapsed_ns: u64,
    pub start_skew_ns: u64,
    /// The workers' sums and spread, whatever their number; absent in files of format 1.
    pub crew: Option<Crew>,
    /// One per worker: always in files of format 1, with --per-cpu only from format 2.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<Worker>,
    pub memcg_pgfault: Option<u64>,
    /// `minflt` or `perf`: where the kernel's fault count came from.
    pub kernel_source: Option<String>,
    pub samples: Vec<Sample>,
    /// The slice measured longer than asked (stopped, starved): its rate is not comparable.
    pub overran: bool,
    /// The memcg counters' deltas by their CSV names; a counter the kernel lacks is absent.
    #[serde(deserialize_with = "super::json::unique_map")]
    pub memcg: BTreeMap<String, u64>,
    pub psi_scope: Option<PsiScope>,
    pub profile: Option<Profile>,
    pub harness: Option<Harness>,
    /// --locks: the slice's contentions, their wait and their callers; absent where not asked
    /// or where the tracepoints could not be opened (null: unknown, never zero).
    pub locks: Option<crate::measure::locks::LockCounts>,
}

impl<W, S, P, H> SliceData<W, S, P, H> {
    /// The slice's workers: the crew's count, or in a file of format 1 its workers listed.
    pub fn tasks(&self) -> usize {
        self.crew.as_ref().map_or(self.workers.len(), |crew| crew.tasks)
    }
}

/// A crew's counters over one slice: its workers' sums, and how far apart they were, in a
/// few numbers whatever the crew's size. Each sum is absent where one worker's counter is (no
/// schedstat, no perf). The CSV's summary row holds the sums (`faults`, `kernel_faults`,
/// `user_s`, ...), its per-CPU rows and the JSON's `workers` (--per-cpu) each worker's own.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Crew {
    /// The workers (the CSV's `tasks`).
    pub tasks: usize,
    pub iterations: u64,
    /// The loop-counted faults (the CSV's `faults`).
    pub loop_faults: u64,
    pub kernel_faults: u64,
    pub user_us: u64,
    pub sys_us: u64,
    pub on_cpu_ns: Option<u64>,
    pub wait_ns: Option<u64>,
    pub steal_ns: Option<u64>,
    pub timeslices: Option<u64>,
    /// --kernel-count perf: the workers' perf counters summed.
    pub perf: Option<crate::measure::perf::PerfReading>,
    /// The slowest and the fastest worker's loop-counted faults a second.
    pub faults_per_sec_min: f64,
    pub faults_per_sec_max: f64,
    /// The least and the most of a worker's time from release to stop on its CPU.
    pub cpu_share_min: f64,
    pub cpu_share_max: f64,
    /// Workers that waited for their CPU over 2% of the slice (`report::DISTURBED_SHARE`):
    /// one makes the slice disturbed. Absent where the disturbance is (no schedstat, workers
    /// sharing a CPU by design).
    pub disturbed_workers: Option<usize>,
}

/// A slice that failed; declared in its fields' names' order, as written.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Failure {
    pub placement: String,
    pub reason: String,
    /// Files from before `round`; never written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetition: Option<u32>,
    #[serde(default)]
    pub round: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names of the fields `value` writes.
    fn keys<T: Serialize>(value: &T) -> Vec<String> {
        let value = serde_json::to_value(value).unwrap();
        value.as_object().unwrap().keys().cloned().collect()
    }

    fn sorted(mut names: Vec<String>) -> Vec<String> {
        names.sort_unstable();
        names
    }

    type Written = Measurement<SliceData<(), (), (), ()>>;

    /// A slice's data with every field it can write: its workers listed (--per-cpu).
    fn slice_keys() -> Vec<String> {
        keys(&SliceData::<(), (), (), ()> { workers: vec![()], ..Default::default() })
    }

    /// CSV columns the JSON measurement does not hold, each where the document says it (once
    /// for the run, or inside the slice's data); "" where the JSON has no such field.
    const ELSEWHERE: [(&str, &str); 40] = [
        ("run_id", "environment"),
        ("started_at", "environment"),
        ("host", "environment"),
        ("kernel", "environment"),
        ("cgroup_version", "environment"),
        ("base_depth", "environment"),
        ("thp_enabled", "environment"),
        ("governor", "environment"),
        ("workload", "settings.workload"),
        ("mode", "settings.mode"),
        ("chunk_bytes", "settings.chunk_bytes"),
        ("size_bytes", "settings.size_bytes"),
        ("thp_mode", "settings.thp_mode"),
        ("tmpdir_fs", "settings.tmpdir_fs"),
        ("iterations_per_task", "settings.iterations_per_task"),
        ("knobs", "knobs"),
        ("unit", "unit"),
        ("run_complete", "complete"),
        ("run_state", "state"),
        ("run_state_reason", "reason"),
        ("ns_per_level", "per_level"),
        ("ns_per_level_low", "per_level"),
        ("ns_per_level_high", "per_level"),
        // The workers' counters: the crew's sums on a summary row, each worker's own on a
        // per-CPU row (the JSON's `workers`, with --per-cpu).
        ("tasks", "result.crew.tasks"),
        ("cpu", "result.workers"),
        ("worker", "result.workers"),
        ("faults", "result.crew.loop_faults"),
        ("faults_per_sec_per_task", "result.crew.tasks"),
        ("kernel_faults", "result.crew.kernel_faults"),
        ("user_s", "result.crew.user_us"),
        ("sys_s", "result.crew.sys_us"),
        ("timeslices", "result.crew.timeslices"),
        ("duration_s", "result.elapsed_ns"),
        ("start_skew_us", "result.start_skew_ns"),
        ("kernel_count_source", "result.kernel_source"),
        ("memcg_pgfault", "result.memcg_pgfault"),
        ("overran", "result.overran"),
        ("psi_scope", "result.psi_scope"),
        ("memcg_share", "result.profile"),
        // The profile a placement came from: the JSON names the placement alone.
        ("profile", ""),
    ];

    /// `ELSEWHERE` and the memcg counters the CSV has columns for, each in `result.memcg`
    /// under its column name (`Row::memcg_cells`).
    fn elsewhere() -> impl Iterator<Item = (&'static str, &'static str)> {
        let mut row = super::super::row::Row::default();
        let memcg: Vec<&'static str> = row.memcg_cells().into_iter().map(|(name, _)| name).collect();
        ELSEWHERE.into_iter().chain(memcg.into_iter().map(|column| (column, "result.memcg")))
    }

    /// JSON measurement fields no CSV column holds: the round over the whole task count (the
    /// CSV names it by repetition and slice), and the slice's data.
    const JSON_ONLY: [&str; 2] = ["round", "result"];

    /// A per-slice field in one of the CSV row and the JSON measurement and not the other is
    /// a column forgotten, unless listed above with where the other holds it.
    #[test]
    fn the_csv_row_and_the_json_measurement_hold_the_same_fields() {
        let columns = super::super::row::tests::columns();
        let fields = keys(&Written::default());
        let listed: BTreeMap<&str, &str> = elsewhere().collect();
        let missing_in_json: Vec<&String> =
            columns.iter().filter(|c| !fields.contains(c) && !listed.contains_key(c.as_str())).collect();
        assert!(missing_in_json.is_empty(), "CSV columns the JSON measurement lacks: {missing_in_json:?}");
        let missing_in_csv: Vec<&String> =
            fields.iter().filter(|f| !columns.contains(f) && !JSON_ONLY.contains(&f.as_str())).collect();
        assert!(missing_in_csv.is_empty(), "JSON measurement fields the CSV row lacks: {missing_in_csv:?}");
        let document = keys(&Document::<Vec<Written>>::default());
        let (settings, slice, crew) = (keys(&Settings::default()), slice_keys(), keys(&Crew::default()));
        for (column, place) in elsewhere() {
            assert!(columns.iter().any(|c| c == column) && !fields.iter().any(|f| f == column), "{column}: listed");
            let found = match place.split_once('.') {
                _ if place.is_empty() => true,
                Some(("settings", key)) => settings.iter().any(|k| k == key),
                Some(("result", key)) => match key.strip_prefix("crew.") {
                    Some(key) => crew.iter().any(|k| k == key),
                    None => slice.iter().any(|k| k == key),
                },
                _ => document.iter().any(|k| k == place),
            };
            assert!(found, "{column}: the JSON has no {place}");
        }
    }

    /// docs/output.md's JSON tables name every field the measurement, its slice's data and the
    /// settings write, and no other: a new field is one line there, and CI fails on either alone.
    #[test]
    fn the_docs_json_tables_are_the_schema() {
        let docs = include_str!("../../docs/output.md");
        let section = docs.split("## JSON document").nth(1).expect("docs/output.md's JSON document section");
        let documented = |header: &str| -> Vec<String> {
            let mut names: Vec<String> = section
                .lines()
                .skip_while(|line| !line.starts_with(header))
                .skip(2)
                .take_while(|line| line.starts_with('|'))
                .flat_map(|line| {
                    line.split('|').nth(1).unwrap().split(',').map(|n| n.trim().trim_matches('`').to_string())
                })
                .collect();
            names.sort_unstable();
            names
        };
        let mut measurement = keys(&Written::default());
        measurement.extend(slice_keys().into_iter().map(|k| format!("result.{k}")));
        measurement.sort_unstable();
        assert_eq!(documented("| measurement field |"), measurement, "docs/output.md vs results/schema.rs");
        assert_eq!(documented("| crew field |"), sorted(keys(&Crew::default())), "docs/output.md vs results/schema.rs");
        assert_eq!(documented("| settings field |"), keys(&Settings::default()), "docs/output.md vs results/schema.rs");
    }

    #[test]
    fn a_file_from_before_the_result_field_reads_its_run() {
        let old: Measurement = serde_json::from_value(serde_json::json!({"placement": "child", "faults_per_sec": 5.0,
            "ratio_vs_root": 0.9, "run": {"workers": [{}, {}], "overran": true}}))
        .unwrap();
        assert_eq!((old.result.tasks(), old.result.overran, old.ratio_vs_root), (2, true, Some(0.9)));
        assert!(old.counted && old.round_complete, "files from before counted every slice");
    }
}
