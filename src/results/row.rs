//! The CSV's row, one type for both directions: export/csv.rs fills and writes it, results.rs
//! reads result files back into it, so a column cannot differ between writer and reader. It
//! lives below both (export imports results, never the reverse). The columns are documented in
//! docs/output.md; the JSON's measurement holds the same per-slice fields (`schema.rs`).
//!
//! Files from earlier versions lack the newer columns: every column may be absent and reads as
//! its default (empty, 0, false; `run_complete` true). The reader checks the columns no
//! version lacked (`results::ESSENTIAL`) by name first, to say what the file is not.

#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Row {
    pub run_id: String,
    pub started_at: String,
    pub host: String,
    pub kernel: String,
    pub cgroup_version: String,
    pub workload: String,
    pub mode: String,
    pub tasks: usize,
    pub placement: String,
    pub depth: u32,
    /// Levels between the hierarchy's root and the baseline's cgroup (0: the true root).
    pub base_depth: usize,
    /// The profile the placement came from (name or path); empty for plain placements.
    pub profile: String,
    pub cgroup_path: String,
    /// 1-based; every repetition measures every placement in `--slices` slices.
    pub repetition: u32,
    pub slice: u32,
    pub sequence: usize,
    /// Empty on summary rows; the worker's CPU on --per-cpu rows.
    pub cpu: Option<usize>,
    pub duration_s: f64,
    /// What `faults` counts: faults, or loops for mmap-file (which takes none).
    pub unit: String,
    pub faults: u64,
    pub faults_per_sec: f64,
    pub faults_per_sec_per_task: f64,
    /// Wall-clock nanoseconds one worker spends per fault (per loop for mmap-file).
    pub ns_per_fault: Option<f64>,
    pub kernel_faults: u64,
    /// The workers' CPU time in user and kernel mode (rusage), summed over the row's workers.
    pub user_s: f64,
    pub sys_s: f64,
    pub kernel_count_source: String,
    pub memcg_pgfault: Option<u64>,
    pub start_skew_us: Option<f64>,
    /// This row's CPU ns per fault over the baseline's in the same round: on a dedicated CPU
    /// the 2009 post's 109%. Empty (unknown) on the baseline's own rows, where the slice or its
    /// baseline's was not counted, and where either lacks on-CPU times: the throughput ratio
    /// stands beside it in its own column, never in this one.
    pub overhead_vs_baseline: Option<f64>,
    /// false when a stop signal ended the run before every slice was measured (a file from
    /// before the column was a complete run).
    #[serde(default = "complete")]
    pub run_complete: bool,
    pub thp_enabled: String,
    pub governor: String,
    /// true when the measured time exceeded the time asked for by more than 10% plus 50 ms
    /// (`run::slice::overran`: stopped or
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
    pub thp_mode: String,
    /// The file workloads' filesystem (tmpfs, ext4, ...); empty for the others.
    pub tmpdir_fs: String,
    /// The knobs written for this placement, `levelN:file=value`, space-separated.
    pub knobs: String,
    /// --iterations: the fixed work each task did; the row's duration_s is then the run's
    /// elapsed time (first start to last finish). Empty for timed runs.
    pub iterations_per_task: Option<u64>,
    /// The cost of a fault: the workers' on-CPU ns over their faults (each one's CPU clock,
    /// read by itself at its park at both ends). The overhead is this over the baseline's.
    pub cpu_ns_per_fault: Option<f64>,
    /// Worker-seconds on a CPU, waiting for one (other load), and the rest of the slice
    /// (blocked: reclaim, I/O, locks; or stopped); the steal of the CPUs used.
    pub on_cpu_s: Option<f64>,
    pub wait_s: Option<f64>,
    pub blocked_s: Option<f64>,
    pub steal_s: Option<f64>,
    /// The baseline's throughput over this placement's in the same slice (wall-clock rates).
    pub throughput_vs_baseline: Option<f64>,
    /// Times the row's workers were put on their CPUs in the slice (schedstat): one each per
    /// wake when nothing else ran there.
    pub timeslices: Option<u64>,
    /// The largest share of the slice a worker spent runnable but waiting for its CPU
    /// (schedstat run_delay): over 0.02 the slice was disturbed.
    pub disturbance: Option<f64>,
    /// false for a slice of the round a stop signal cut short (a file from before the column
    /// had none).
    #[serde(default = "complete")]
    pub round_complete: bool,
    /// Whether the slice entered the figures: not overran, not of a round cut short, not
    /// disturbed (while disturbed slices were a minority). Rows that did not are in no figure
    /// `compare` or `plot` makes either.
    #[serde(default = "complete")]
    pub counted: bool,
    /// CPU ns per fault each memcg level adds, fitted over the run's plain depths, with its 95%
    /// interval: the same on every row of the run at its task count.
    pub ns_per_level: Option<f64>,
    pub ns_per_level_low: Option<f64>,
    pub ns_per_level_high: Option<f64>,
    /// Empty on summary rows; on --per-cpu rows the worker's index in its slice (0-based), which
    /// tells apart two workers sharing a CPU. New columns go after it, so columns read by
    /// position keep theirs.
    pub worker: Option<usize>,
    /// The crew generation (1-based) that measured the slice: its own workers and its own
    /// cgroups, the unit the run's intervals are taken over (a file from before the column:
    /// empty, one unit).
    pub generation: Option<u32>,
    /// What the file is, the same on every row: `running` (a checkpoint written between
    /// slices), `stopped` (by a signal), `failed` (slices failed) or `complete`; empty in files
    /// from before the column. With the signal's name or the failure for the last two.
    pub run_state: String,
    pub run_state_reason: String,
    /// --locks: the crew's lock contentions per 1,000 operations (the loop's units: faults,
    /// or loops) and its wait in them, ns per operation; empty where not asked or where the
    /// tracepoints could not be opened (never 0 for unknown).
    pub lock_contentions_per_kop: Option<f64>,
    pub lock_wait_ns_per_op: Option<f64>,
}

/// The row's memcg counter cells by their column names, which are `memcg::Counters`' names
/// for them (a unit test holds them so): a counter the CSV shows is its field and its name
/// here; the JSON's `result.memcg` holds every counter without either.
macro_rules! memcg_cells {
    ($row:expr, $($field:ident),+) => {
        [$((stringify!($field), &mut $row.$field)),+]
    };
}

impl Row {
    /// Its memcg counters' cells, by name, in the CSV's order, for the writer to fill.
    pub fn memcg_cells(&mut self) -> [(&'static str, &mut Option<u64>); 6] {
        memcg_cells!(self, pgscan, pgsteal, events_high, events_max, psi_some_us, psi_full_us)
    }
}

impl Row {
    /// Every figure of the row by its column name, read or absent: each must be finite,
    /// including those `compare` and `plot` do not use (a file is refused whole, not in part).
    pub fn figures(&self) -> [(&'static str, Option<f64>); 18] {
        [
            ("duration_s", Some(self.duration_s)),
            ("faults_per_sec", Some(self.faults_per_sec)),
            ("faults_per_sec_per_task", Some(self.faults_per_sec_per_task)),
            ("ns_per_fault", self.ns_per_fault),
            ("user_s", Some(self.user_s)),
            ("sys_s", Some(self.sys_s)),
            ("start_skew_us", self.start_skew_us),
            ("overhead_vs_baseline", self.overhead_vs_baseline),
            ("memcg_share", self.memcg_share),
            ("memcg_ns_per_fault", self.memcg_ns_per_fault),
            ("cpu_ns_per_fault", self.cpu_ns_per_fault),
            ("on_cpu_s", self.on_cpu_s),
            ("wait_s", self.wait_s),
            ("blocked_s", self.blocked_s),
            ("steal_s", self.steal_s),
            ("throughput_vs_baseline", self.throughput_vs_baseline),
            ("lock_contentions_per_kop", self.lock_contentions_per_kop),
            ("lock_wait_ns_per_op", self.lock_wait_ns_per_op),
        ]
    }

    /// The settings that must agree for two files' rows to be compared, named as their columns
    /// (`results::SETTINGS`), with their cells as written.
    pub fn settings(&self) -> [(&'static str, String); 7] {
        let [chunk, size, thp, tmpdir_fs, kernel_count_source, knobs, iterations] = super::SETTINGS;
        [
            (chunk, self.chunk_bytes.to_string()),
            (size, self.size_bytes.to_string()),
            (thp, self.thp_mode.clone()),
            (tmpdir_fs, self.tmpdir_fs.clone()),
            (kernel_count_source, self.kernel_count_source.clone()),
            (knobs, self.knobs.clone()),
            (iterations, self.iterations_per_task.map(|n| n.to_string()).unwrap_or_default()),
        ]
    }
}

fn complete() -> bool {
    true
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// The columns the row type writes, in their order.
    pub fn columns() -> Vec<String> {
        let mut writer = csv::Writer::from_writer(Vec::new());
        writer.serialize(Row::default()).unwrap();
        let text = String::from_utf8(writer.into_inner().unwrap()).unwrap();
        text.lines().next().unwrap().split(',').map(str::to_string).collect()
    }

    /// Each of the row's memcg cells is a counter the measure layer reads, by its name there,
    /// and a column of the row: a cell named otherwise would be written empty forever.
    #[test]
    fn the_rows_memcg_cells_are_counters_by_their_names() {
        let counters: Vec<&str> = crate::measure::memcg::Counters::default().columns().map(|(name, _)| name).collect();
        let mut row = Row::default();
        for (cell, _) in row.memcg_cells() {
            assert!(counters.contains(&cell), "{cell} is no memcg counter: {counters:?}");
            assert!(columns().iter().any(|column| column == cell), "{cell} is no column");
        }
    }

    /// docs/output.md's column table names every column the row type writes, in its order, and no
    /// other: a new column is one field here and one line there, and CI fails on either alone.
    #[test]
    fn the_documented_column_table_is_the_row_type() {
        let columns = columns();
        let written: Vec<&str> = columns.iter().map(String::as_str).collect();
        let documented_page = include_str!("../../docs/output.md");
        let table = documented_page.split("## CSV columns").nth(1).expect("docs/output.md's CSV columns section");
        let documented: Vec<&str> = table
            .lines()
            .skip_while(|line| !line.starts_with("| column |"))
            .skip(2)
            .take_while(|line| line.starts_with('|'))
            .flat_map(|line| line.split('|').nth(1).unwrap().split(',').map(|name| name.trim().trim_matches('`')))
            .collect();
        let mut sorted_written = written.clone();
        sorted_written.sort_unstable();
        let mut sorted_documented = documented.clone();
        sorted_documented.sort_unstable();
        assert_eq!(sorted_documented, sorted_written, "docs/output.md's CSV columns vs results/row.rs");
        assert_eq!(written.last(), documented.last(), "the last column, where new ones go");
    }
}
