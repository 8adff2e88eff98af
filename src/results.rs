//! faultscale's own result files (--csv or --json) read back, for `compare` and `plot`:
//! per workload, mode, task count and placement, the rate of every round.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};

mod json;
pub mod row;
pub mod schema;
use json::{field, object};
use row::Row;
use schema::Measurement;

use crate::measure::locks::LockCounts;
use crate::stats::Placed;

/// Rows match on these.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    pub workload: String,
    pub mode: String,
    pub tasks: u64,
    pub placement: PlacementKey,
}

/// A row's placement: the baseline sorts first, then the others by name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum PlacementKey {
    Baseline(String),
    Placement(String),
}

impl PlacementKey {
    pub fn name(&self) -> &str {
        match self {
            PlacementKey::Baseline(name) | PlacementKey::Placement(name) => name,
        }
    }

    pub fn is_baseline(&self) -> bool {
        matches!(self, PlacementKey::Baseline(_))
    }
}

impl Key {
    pub fn label(&self) -> String {
        format!("{} {} {}t {}", self.workload, self.mode, self.tasks, self.placement.name())
    }
}

/// One file's slices per key, and what it was run on.
#[derive(Debug, Default)]
pub struct RunFile {
    pub name: String,
    /// Per slice, in the order measured, each with its generation (`Placed::unit`; 1 in files
    /// from before the column) and its place in that order (`Placed::round`).
    pub rates: BTreeMap<Key, Vec<Placed>>,
    /// The placement's overhead_vs_baseline, per slice: its cost per fault on CPU over the
    /// baseline's. A file without on-CPU times (`without_cpu_cost`) has none, or, from before
    /// them, the throughput ratio in that column: read, but never compared as the overhead.
    pub overheads: BTreeMap<Key, Vec<Placed>>,
    /// Baseline rate / placement rate, per slice (what `overheads` held before on-CPU times).
    pub throughputs: BTreeMap<Key, Vec<Placed>>,
    /// Placements whose overhead is unknown: no row of theirs had on-CPU times, or the file is
    /// from before them (its overhead column held the throughput ratio).
    pub without_cpu_cost: std::collections::BTreeSet<Key>,
    /// Placements with on-CPU times in at least one row.
    pub with_cpu_cost: std::collections::BTreeSet<Key>,
    /// --profile: the memcg family's CPU ns per fault, per slice.
    pub memcg_ns: BTreeMap<Key, Vec<Placed>>,
    /// --locks: the crew's lock wait ns per operation (the loop's units) and its lock
    /// contentions per 1,000 operations, per slice that has them, placed as its rate is.
    pub lock_waits: BTreeMap<Key, Vec<Placed>>,
    pub lock_contentions: BTreeMap<Key, Vec<Placed>>,
    /// --locks, JSON files only (the CSV has no callers): each contending caller's lock wait.
    pub lock_callers: BTreeMap<Key, BTreeMap<LockCaller, CallerWaits>>,
    /// --locks was asked and gave no lock figures: why, as the run's warning said (JSON files
    /// only). Its figures are unknown, never zero.
    pub locks_absent: Option<String>,
    /// Whether the run sampled its workers (--profile: a slice's `result.profile`), where the
    /// file says (JSON files; `profiled` reads a CSV's memcg figures too).
    pub profile_asked: Option<bool>,
    /// A CSV file: it cannot say whether --locks was asked, nor why its run had no figures.
    pub csv: bool,
    /// Per row key, the settings that must agree for two files' rows to be compared.
    pub settings: BTreeMap<Key, BTreeMap<&'static str, String>>,
    /// Some rows come from a run a signal ended early.
    pub incomplete: bool,
    /// Summary rows flagged overran, left out of every figure.
    pub overran: usize,
    /// Summary rows the run did not count (disturbed, or of a round cut short), left out too.
    pub left_out: usize,
    pub facts: BTreeMap<&'static str, String>,
    /// Levels below the base, per placement name.
    pub depths: BTreeMap<String, u64>,
    /// What the rates count per workload (the `unit` column: faults, loops, pages, ops); a
    /// file from before the column has none, and counts faults.
    pub units: BTreeMap<String, String>,
    /// Levels between the hierarchy's root and the baseline's cgroup (0: the true root), where
    /// the file says: a placement at another base depth is another number of memcg levels.
    pub base_depth: Option<usize>,
    /// The CPUs the run's workers ran on (`settings.cpus`), where the file says (JSON files;
    /// the CSV has no such column).
    pub cpus: Option<Vec<usize>>,
    /// The run the rows came from (the `run_id` column), where the file says: one per file.
    pub run_id: Option<String>,
    /// Rows left out as repeats of an earlier row (the same run, workload, mode, placement,
    /// tasks, repetition and slice: a file's rows appended to it again).
    pub duplicates: usize,
    /// The run's cost of one memcg level per (workload, mode, tasks): ns per fault with its
    /// 95% interval, where the run fitted one.
    pub per_level: BTreeMap<(String, String, u64), LevelFigure>,
    /// The rows read so far, by what tells slices apart (files with a repetition column).
    seen: std::collections::BTreeSet<(String, String, String, String, u64, u32, u32)>,
    /// Which placements each round of the file has a slice of, read before its rows count.
    rounds: Rounds,
    /// What the file says it is (`run_state`, JSON `state`); None in files from before.
    pub state: Option<FileState>,
    /// Whether a live run holds the file as its output, where the caller looked (`sink::
    /// written_by_live_run`): a `running` file no live run holds is one its run never finished.
    pub writer_alive: Option<bool>,
    /// Each round's generation as its first row said, and whether the file's rows have one:
    /// a round's slices are of one generation, and a file is of generations or not.
    generations: BTreeMap<RoundId, u32>,
    with_generation: Option<bool>,
}

/// --locks: a contending caller as a file names it (escaped: anyone's text), one kind of
/// lock; ordered by kind, then caller.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct LockCaller {
    pub kind: String,
    pub caller: String,
    pub parent: Option<String>,
}

impl LockCaller {
    /// As the run's table names it (`measure::locks::lock_name`).
    pub fn name(&self) -> String {
        crate::measure::locks::lock_name(&self.kind, &self.caller, self.parent.as_deref())
    }
}

/// --locks: one caller's lock wait in a file's row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallerWaits {
    /// Its wait over the row's slices, as the run's summary ranks callers by.
    pub wait_ns: u64,
    /// Its lock wait ns per operation, per slice it contended in (placed as the slice's
    /// `lock_waits`): its share of the slice's wait times the slice's wait per operation.
    pub per_slice: Vec<Placed>,
}

/// What a result file is, as its run wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileState {
    /// A checkpoint, written between slices.
    Running,
    /// A signal (named) ended the run early.
    Stopped(String),
    /// Slices failed; the reason names the first.
    Failed(String),
    Complete,
}

impl FileState {
    fn parse(word: &str, reason: &str) -> Option<Self> {
        let reason = fact_text(reason);
        Some(match word {
            "running" => FileState::Running,
            "stopped" => FileState::Stopped(reason),
            "failed" => FileState::Failed(reason),
            "complete" => FileState::Complete,
            _ => return None,
        })
    }
}

/// A round in a file: workload, mode, task count, repetition and slice number.
type RoundId = (String, String, u64, u32, u32);

/// The placements each round of a file has a slice of: a round without one of them (a
/// checkpoint written between its slices, then a SIGKILL) counts in no figure, whatever its
/// rows say.
#[derive(Debug, Default)]
struct Rounds {
    placements: BTreeMap<(String, String, u64), std::collections::BTreeSet<String>>,
    of_round: BTreeMap<RoundId, std::collections::BTreeSet<String>>,
}

impl Rounds {
    fn add(&mut self, round: RoundId, placement: &str) {
        let (workload, mode, tasks, _, _) = &round;
        self.placements.entry((workload.clone(), mode.clone(), *tasks)).or_default().insert(placement.to_string());
        self.of_round.entry(round).or_default().insert(placement.to_string());
    }

    /// Whether `round` has a slice of every placement the file has at its task count.
    fn complete(&self, round: &RoundId) -> bool {
        let (workload, mode, tasks, _, _) = round;
        let all = self.placements.get(&(workload.clone(), mode.clone(), *tasks));
        all.is_none_or(|all| self.of_round.get(round).is_some_and(|present| present == all))
    }
}

/// The rounds of a CSV file's summary rows (those that read), before any counts.
fn csv_rounds(reader: &mut csv::Reader<impl std::io::Read>, columns: &Columns) -> Rounds {
    let mut rounds = Rounds::default();
    for record in reader.records().flatten() {
        if record.len() != columns.headers.len() || !record[columns.cpu].is_empty() {
            continue;
        }
        if let Ok(row) = record.deserialize::<Row>(Some(&columns.headers)) {
            let k = key(&row.workload, &row.mode, row.tasks as u64, &row.placement);
            rounds.add((k.workload, k.mode, k.tasks, row.repetition, row.slice), k.placement.name());
        }
    }
    rounds
}

/// A CSV row's task count and every figure it holds, refused where not a number a run writes.
fn check_row_figures(name: &str, columns: &Columns, place: &str, record: &csv::StringRecord, row: &Row) -> Result<()> {
    if !(1..=1_000_000).contains(&row.tasks) {
        bail!("{name}: {place}: tasks {:?} is not a task count", &record[columns.tasks]);
    }
    if let Some((column, _)) =
        row.figures().into_iter().find(|(_, value)| value.is_some_and(|v| !v.is_finite() || v < 0.0))
    {
        let text = columns.headers.iter().position(|h| h == column).map_or("", |i| &record[i]);
        bail!("{name}: {place}: {column} {text:?} is not a finite, non-negative number; is this a faultscale file?");
    }
    Ok(())
}

/// A JSON measurement's round, where it says (files from before the slice field do not).
fn json_round(workload: &str, mode: &str, m: &Measurement) -> Option<RoundId> {
    let (repetition, slice) = (m.repetition?, m.slice?);
    Some((workload.to_string(), mode.to_string(), m.result.tasks() as u64, repetition, slice))
}

/// A figure of a JSON file as `figure` quotes it: as JSON writes it.
fn json_text(value: f64) -> String {
    serde_json::Value::from(value).to_string()
}

/// Every figure is checked, those compare does not use too: a file is refused whole, not in
/// part. (Finite and not negative, as the CSV's: a wait of 50 ns is 5e-8 s.)
fn check_json_figures(name: &str, index: usize, placement: &str, m: &Measurement) -> Result<()> {
    for (field, value) in m.figures() {
        if let Some(value) = value.filter(|v| !v.is_finite() || *v < 0.0) {
            bail!(
                "{name}: {placement}: {field} {} is not a finite, non-negative number; is this a faultscale file?",
                json_text(value)
            );
        }
    }
    match &m.result.locks {
        Some(locks) => check_lock_callers(name, index, placement, locks),
        None => Ok(()),
    }
}

/// --locks: a slice's callers are its contentions split by caller (`measure::locks::name`),
/// so theirs sum to the slice's own; a caller's share of the slice's wait is what `compare`
/// prints per caller, so one over the whole (a hand-edited 10^15 ns, or a caller listed
/// twice) would print a caller waiting 738,421,550 ns per fault in a row of 27.6.
fn check_lock_callers(name: &str, index: usize, placement: &str, locks: &LockCounts) -> Result<()> {
    let sum = |of: fn(&crate::measure::locks::CallerLocks) -> u64| {
        locks.callers.iter().fold(0u128, |total, c| total + u128::from(of(c)))
    };
    for (what, callers, slice) in
        [("lock wait", sum(|c| c.wait_ns), locks.wait_ns), ("contentions", sum(|c| c.contentions), locks.contentions)]
    {
        if callers > u128::from(slice) {
            bail!(
                "{name}: measurements[{index}] ({placement}): result.locks.callers' {what} sum to {callers}, more than the slice's {slice}, which is their sum; is this a faultscale --json file?"
            );
        }
    }
    Ok(())
}

/// A run's per-level cost as its file holds it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelFigure {
    pub ns_per_fault: f64,
    pub low: Option<f64>,
    pub high: Option<f64>,
}

/// What `compare` and `plot` say of a file's repeated rows.
pub fn duplicates_note(file: &RunFile) -> String {
    format!(
        "{}: {} row(s) repeat an earlier row (the same run, placement, tasks, repetition and slice) and are left out, the first of each kept",
        file.name, file.duplicates
    )
}

/// Per row, where trimming left out a cost on one side (`stats::trimmed_tail`): what the run
/// itself warned of, said again wherever its figures are read back (compare, plot).
pub fn trimmed_tail_notes(file: &RunFile) -> Vec<String> {
    file.overheads
        .iter()
        .filter(|(key, _)| !file.without_cpu_cost.contains(key))
        .filter_map(|(key, ratios)| {
            let tail = crate::stats::trimmed_tail(ratios)?;
            Some(format!("{}: {}: {}", file.name, key.label(), tail.described()))
        })
        .collect()
}

/// A file whose rows disagree on a setting or a machine fact: two runs in one file, which no
/// figure of `compare` or `plot` may mix. The user's input (exit 2), not a failure.
fn mixed(message: String) -> anyhow::Error {
    anyhow::Error::new(crate::error::Error::Usage(message))
}

/// A result file is streamed (`RunFile::from_json_reader`, `from_csv_reader`): what it holds
/// in memory grows with its slices, not its workers or its bytes. Still, far beyond any run's: a
/// JSON file of format 1 (every worker of every slice) at 448 workers, 4 placements and 4,000
/// slices is about 3.5 GB, a CSV file with --per-cpu rows about 6 GB.
const MAX_RESULT_BYTES: u64 = 64 << 30;

/// A rate, ratio or task count read back must be a finite, non-negative number.
fn figure(name: &str, row: &str, what: &str, value: Option<f64>, text: &str) -> Result<f64> {
    match value {
        // A slice that counted nothing is a failed slice, never a row: a zero rate would only
        // give an infinite change in `compare`.
        Some(v)
            if v == 0.0
                && ["faults_per_sec", "overhead_vs_baseline", "throughput_vs_baseline", "ratio_vs_root"]
                    .contains(&what) =>
        {
            bail!(
                "{name}: {row}: {what} {text:?}: no run writes a zero rate or ratio (a slice that counted nothing fails); is this a faultscale file?"
            )
        }
        Some(v) if v > 0.0 && v < MIN_FIGURE && !DIFFERENCED.contains(&what) => bail!(
            "{name}: {row}: {what} {text:?} is below anything a machine measures (at least {MIN_FIGURE:e} where not 0); is this a faultscale file?"
        ),
        Some(v) if v.is_finite() && (0.0..=MAX_FIGURE).contains(&v) => Ok(v),
        Some(v) if v.is_finite() && v >= 0.0 => bail!(
            "{name}: {row}: {what} {text:?} is beyond anything a machine measures (at most {MAX_FIGURE:e}); is this a faultscale file?"
        ),
        _ => bail!("{name}: {row}: {what} {text:?} is not a finite, non-negative number"),
    }
}

/// No rate (a trillion faults a second), ratio or nanoseconds per fault a run writes comes
/// near this; past it a figure would only overflow the statistics and the charts.
const MAX_FIGURE: f64 = 1e12;

/// --locks' figures are differenced, never divided by, so no small one overflows anything: a
/// wait of 50 ns over 10^9 operations (5e-8 ns per operation) is a figure, below `MIN_FIGURE`.
const DIFFERENCED: [&str; 2] = ["lock_contentions_per_kop", "lock_wait_ns_per_op"];

/// Nor does any come near this from below, but 0 (a placement without memcg time): a rate of
/// one fault in 11 days, a ratio of a millionth. Past it, ratios of ratios overflow to +inf%.
const MIN_FIGURE: f64 = 1e-6;

/// A machine fact as `compare` may quote it in a warning: a line, not a 40 MB cell.
fn fact_text(value: &str) -> String {
    const MOST: usize = 200;
    match value.char_indices().nth(MOST) {
        Some((end, _)) => format!("{}...", crate::text::escaped(&value[..end])),
        None => crate::text::escaped(value).into_owned(),
    }
}

const FACTS: [&str; 5] = ["kernel", "host", "cgroup_version", "thp_enabled", "governor"];

/// A CSV row's machine facts, named as FACTS names them.
fn csv_facts(row: &Row) -> [(&'static str, &str); 5] {
    let [kernel, host, cgroup_version, thp_enabled, governor] = FACTS;
    [
        (kernel, &row.kernel),
        (host, &row.host),
        (cgroup_version, &row.cgroup_version),
        (thp_enabled, &row.thp_enabled),
        (governor, &row.governor),
    ]
}

/// Machine facts `compare` warns about when two JSON files differ in them.
const MACHINE_FACTS: [&str; 9] = [
    "smt_active",
    "numa_balancing",
    "mitigations",
    "swap",
    "zswap",
    "lru_gen",
    "overcommit_memory",
    "nmi_watchdog",
    "virtualization",
];

/// Settings that change what a row measures: rows that differ in one are not comparable.
/// (Workload, mode, tasks and placement are in the row's key already.)
pub const SETTINGS: [&str; 7] =
    ["chunk_bytes", "size_bytes", "thp_mode", "tmpdir_fs", "kernel_count_source", "knobs", "iterations_per_task"];

/// A row's key, its names escaped (`text::escaped`): every table, warning and chart shows
/// them, and a cell holding ESC or CR must not reach the terminal as it is.
pub fn key(workload: &str, mode: &str, tasks: u64, placement: &str) -> Key {
    let shown = |text: &str| crate::text::escaped(text).into_owned();
    Key {
        workload: shown(workload),
        mode: shown(mode),
        tasks,
        placement: match is_baseline(placement) {
            true => PlacementKey::Baseline(shown(placement)),
            false => PlacementKey::Placement(shown(placement)),
        },
    }
}

/// The baseline's names: `root` in the hierarchy's true root, `base` anywhere else.
pub fn is_baseline(placement: &str) -> bool {
    placement == "root" || placement == "base"
}

/// Columns every version wrote: a file without one is not a faultscale --csv file.
const ESSENTIAL: [&str; 6] = ["workload", "mode", "tasks", "placement", "cpu", "faults_per_sec"];

/// A CSV file's header: the essential columns found, and which of the others it has (a file
/// from an earlier version lacks the newer ones; they read as the row type's defaults).
struct Columns {
    headers: csv::StringRecord,
    tasks: usize,
    cpu: usize,
    /// overhead_vs_baseline is written; files from before it read their rate ratio instead.
    overhead: bool,
    ratio_vs_root: Option<usize>,
    depth: bool,
}

impl Columns {
    fn of(name: &str, headers: csv::StringRecord) -> Result<Self> {
        let position = |wanted: &str| headers.iter().position(|h| h == wanted);
        if let Some(missing) = ESSENTIAL.iter().find(|c| position(c).is_none()) {
            bail!("{name}: no {missing} column; is this a faultscale --csv file?");
        }
        let (overhead, ratio_vs_root) = (position("overhead_vs_baseline").is_some(), position("ratio_vs_root"));
        if !overhead && ratio_vs_root.is_none() {
            bail!("{name}: no overhead_vs_baseline column; is this a faultscale --csv file?");
        }
        Ok(Columns {
            tasks: position("tasks").expect("essential"),
            cpu: position("cpu").expect("essential"),
            overhead,
            ratio_vs_root,
            depth: position("depth").is_some(),
            headers,
        })
    }

    fn has(&self, column: &str) -> bool {
        self.headers.iter().any(|h| h == column)
    }
}

/// The error for a cell the row type cannot take, in the words of the checks after it.
fn unreadable(
    name: &str,
    place: &str,
    columns: &Columns,
    record: &csv::StringRecord,
    error: csv::Error,
) -> anyhow::Error {
    let csv::ErrorKind::Deserialize { err, .. } = error.kind() else { return anyhow!("{name}: {place}: {error}") };
    // serde names no field for an unknown enum value (psi_scope): find the cell it quotes.
    let quoted = err.kind().to_string().split('`').nth(1).map(str::to_string);
    let field =
        err.field().map(|i| i as usize).or_else(|| record.iter().position(|cell| Some(cell) == quoted.as_deref()));
    let cell = field.and_then(|i| Some((columns.headers.get(i)?, record.get(i)?)));
    match cell {
        Some(("tasks", text)) => anyhow!("{name}: {place}: tasks {text:?} is not a task count"),
        Some((column @ ("faults_per_sec" | "overhead_vs_baseline" | "memcg_ns_per_fault"), text)) => {
            anyhow!("{name}: {place}: {column} {text:?} is not a finite, non-negative number")
        }
        Some((column, text)) => anyhow!("{name}: {place}: {column} {text:?}: {}", err.kind()),
        None => anyhow!("{name}: {place}: {error}"),
    }
}

/// A result file opened, checked on the file opened, not on the path: a path switched between
/// the check and the read (a symlink flipped to a FIFO or /dev/zero) would block forever or read
/// without end. Opened without blocking (a FIFO's open waits for a writer), refused unless a
/// regular file.
fn open_regular(path: &Path, name: &str) -> Result<(std::fs::File, u64)> {
    use std::os::unix::fs::OpenOptionsExt as _;
    // Checked on the path first too, so a device is never even opened in the common case.
    if std::fs::metadata(path).with_context(|| format!("reading {name}"))?.is_file() {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
            .with_context(|| format!("reading {name}"))?;
        let metadata = file.metadata().with_context(|| format!("reading {name}"))?;
        if metadata.is_file() {
            return Ok((file, metadata.len()));
        }
    }
    bail!("{name}: not a regular file; give a faultscale --csv or --json file")
}

/// The first byte of a file that is not blank (past a byte-order mark, an editor's save, which
/// is no part of either format, and left behind), looked at in the reader's first buffer and
/// left unread; None where that buffer holds none (a file of 64 KiB blank is no result file).
fn first_byte(reader: &mut impl std::io::BufRead) -> std::io::Result<Option<u8>> {
    const BOM: &[u8] = b"\xef\xbb\xbf";
    if reader.fill_buf()?.starts_with(BOM) {
        reader.consume(BOM.len());
    }
    Ok(reader.fill_buf()?.iter().find(|b| !b.is_ascii_whitespace()).copied())
}

impl RunFile {
    pub fn load(path: &Path) -> Result<Self> {
        use std::io::Read as _;
        let name = crate::text::escaped(&path.display().to_string()).into_owned();
        let (file, size) = open_regular(path, &name)?;
        if size > MAX_RESULT_BYTES {
            bail!("{name}: over the {} GiB a result file can hold; is it a result file?", MAX_RESULT_BYTES >> 30);
        }
        let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
        let first = first_byte(&mut reader).with_context(|| format!("reading {name}"))?;
        let Some(first) = first else { bail!("{name}: empty; give a faultscale --csv or --json file") };
        let json = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"));
        if json || first == b'{' || first == b'[' {
            return Self::from_json_reader(name, Some(first), reader.take(MAX_RESULT_BYTES));
        }
        Self::from_csv_reader(name, reader)
    }

    /// One summary row: its rate and, for a placement, its overhead, its throughput ratio (the
    /// overhead itself in files from before it had its own column), and whether the overhead
    /// came from the cost on CPU.
    fn add(
        &mut self,
        key: Key,
        generation: u32,
        rate: f64,
        overhead: Option<f64>,
        throughput: Option<f64>,
        cpu_cost: bool,
    ) {
        let rates = self.rates.entry(key.clone()).or_default();
        let placed = |value: f64| Placed { unit: generation, round: rates.len() as u32 + 1, value };
        let (rate, overhead, throughput) = (placed(rate), overhead.map(placed), throughput.map(placed));
        rates.push(rate);
        if !key.placement.is_baseline() {
            if let Some(overhead) = overhead {
                self.overheads.entry(key.clone()).or_default().push(overhead);
            }
            if let Some(throughput) = throughput.or(overhead.filter(|_| !cpu_cost)) {
                self.throughputs.entry(key.clone()).or_default().push(throughput);
            }
            // An overhead without on-CPU times is an older file's throughput ratio; a slice
            // that lacks both only leaves the row's overhead to the slices that have them.
            if !cpu_cost && overhead.is_some() {
                self.without_cpu_cost.insert(key.clone());
            }
            if cpu_cost {
                self.with_cpu_cost.insert(key);
            }
        }
    }

    /// --locks: a slice's (contentions per 1,000 operations, wait ns per operation), both or
    /// neither, placed beside its rate (before `add`), and each caller's wait where the file
    /// names them (`counts`, JSON). The figures were checked finite, not negative and within
    /// what a machine measures (`figure`); zero is a figure here (no contention), absence is
    /// not.
    fn add_locks(
        &mut self,
        key: &Key,
        generation: u32,
        figures: (Option<f64>, Option<f64>),
        counts: Option<&LockCounts>,
    ) {
        let (Some(contentions), Some(wait)) = figures else { return };
        let at = self.next_place(key, generation, 0.0);
        self.lock_contentions.entry(key.clone()).or_default().push(Placed { value: contentions, ..at });
        self.lock_waits.entry(key.clone()).or_default().push(Placed { value: wait, ..at });
        let Some(counts) = counts else { return };
        let callers = self.lock_callers.entry(key.clone()).or_default();
        for c in &counts.callers {
            let shown = |text: &str| crate::text::escaped(text).into_owned();
            let name =
                LockCaller { kind: shown(&c.kind), caller: shown(&c.caller), parent: c.parent.as_deref().map(shown) };
            let share = if counts.wait_ns > 0 { c.wait_ns as f64 / counts.wait_ns as f64 } else { 0.0 };
            let waits = callers.entry(name).or_default();
            waits.wait_ns = waits.wait_ns.saturating_add(c.wait_ns);
            // A caller named twice in one slice (only a hand-made file does) is one caller.
            match waits.per_slice.last_mut() {
                Some(last) if last.round == at.round => last.value += share * wait,
                _ => waits.per_slice.push(Placed { value: share * wait, ..at }),
            }
        }
    }

    /// Whether the run was profiled (--profile), where the file says: a JSON file's slices carry
    /// their profile or none; a CSV file's memcg figures come only from --profile, but a CSV
    /// without them cannot say (None).
    pub fn profiled(&self) -> Option<bool> {
        if !self.memcg_ns.is_empty() {
            return Some(true);
        }
        self.profile_asked
    }

    /// Whether every slice of `key` the file counts has lock figures: a row whose figures
    /// stop part way is compared without them, not over the slices that have them.
    pub fn has_locks(&self, key: &Key) -> bool {
        let slices = self.rates.get(key).map_or(0, Vec::len);
        slices > 0 && self.lock_waits.get(key).map_or(0, Vec::len) == slices
    }

    /// --locks: one caller's lock wait ns per operation in every slice of `key` with lock
    /// figures, 0 where it did not contend (a caller contends in some slices only).
    pub fn caller_waits(&self, key: &Key, caller: &LockCaller) -> Vec<Placed> {
        let named = self.lock_callers.get(key).and_then(|callers| callers.get(caller));
        // Both in the order the slices were read: one walk pairs them.
        let mut contended = named.map_or(&[][..], |n| n.per_slice.as_slice()).iter().peekable();
        let waits = self.lock_waits.get(key).map_or(&[][..], Vec::as_slice);
        waits
            .iter()
            .map(|slice| {
                let value = contended.next_if(|p| p.round == slice.round).map_or(0.0, |p| p.value);
                Placed { value, ..*slice }
            })
            .collect()
    }

    /// The place the next slice of `key` takes (`add`'s), for a figure read beside its rate.
    fn next_place(&self, key: &Key, generation: u32, value: f64) -> Placed {
        Placed { unit: generation, round: self.rates.get(key).map_or(0, Vec::len) as u32 + 1, value }
    }

    /// A CSV file's text read as `load` streams a file.
    #[cfg(test)]
    pub fn from_csv(name: String, text: &str) -> Result<Self> {
        Self::from_csv_reader(name, std::io::Cursor::new(text.as_bytes()))
    }

    /// A CSV file streamed twice from where `input` stands: the rounds its summary rows have
    /// first (`csv_rounds`), then its rows; a per-CPU row is passed over unread both times.
    fn from_csv_reader(name: String, mut input: impl std::io::Read + std::io::Seek) -> Result<Self> {
        let start = input.stream_position().with_context(|| format!("reading {name}"))?;
        // Flexible: a second header of another version's columns (`cat new.csv old.csv`) is
        // named as such below, not as the csv crate's "found record with 62 fields".
        let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(&mut input);
        let headers = reader.headers().with_context(|| format!("{name}: not a faultscale CSV"))?.clone();
        let columns = Columns::of(&name, headers)?;
        let rounds = csv_rounds(&mut reader, &columns);
        drop(reader);
        input.seek(std::io::SeekFrom::Start(start)).with_context(|| format!("reading {name}"))?;
        let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(input);
        reader.headers().with_context(|| format!("{name}: not a faultscale CSV"))?;
        let mut file = RunFile { name: name.clone(), rounds, csv: true, ..Default::default() };
        for (line, record) in reader.records().enumerate() {
            let record = record.with_context(|| format!("{name}: row {}", line + 2))?;
            // Its "cpu" cell is not empty, so it would pass for a --per-cpu row.
            if ["workload", "faults_per_sec"].iter().all(|column| record.iter().any(|cell| cell == *column)) {
                return Err(mixed(format!(
                    "{name}: row {} repeats the header: two files joined into one; give each run its own file",
                    line + 2
                )));
            }
            if record.len() != columns.headers.len() {
                bail!(
                    "{name}: row {} has {} cells where the header has {}; is the file whole?",
                    line + 2,
                    record.len(),
                    columns.headers.len()
                );
            }
            if !record[columns.cpu].is_empty() {
                continue; // --per-cpu rows
            }
            let place = format!("row {}", line + 2);
            let row: Row = record
                .deserialize(Some(&columns.headers))
                .map_err(|e| unreadable(&name, &place, &columns, &record, e))?;
            file.add_row(&columns, &place, &record, row)?;
        }
        file.mark_unknown_overheads();
        file.no_rows_left()?;
        Ok(file)
    }

    /// A placement none of whose rows had on-CPU times: its overhead is unknown for that.
    /// (One without a baseline to pair with has them and no overhead: not this.)
    fn mark_unknown_overheads(&mut self) {
        let unknown: Vec<Key> = self
            .rates
            .keys()
            .filter(|k| !k.placement.is_baseline() && !self.with_cpu_cost.contains(*k))
            .cloned()
            .collect();
        self.without_cpu_cost.extend(unknown);
    }

    /// A file whose every summary row the run itself left out has nothing to compare: say why
    /// (a run stopped in its first round writes such a file), not that it has no rows.
    fn no_rows_left(&self) -> Result<()> {
        if !self.rates.is_empty() {
            return Ok(());
        }
        let name = &self.name;
        if let Some(FileState::Failed(reason)) = &self.state {
            bail!("{name}: the run failed before any slice was measured ({reason}): nothing to compare or plot");
        }
        match (self.overran, self.left_out) {
            (0, 0) => bail!("{name}: no summary rows"),
            (overran, left_out) => bail!(
                "{name}: none of its {} slice(s) counted ({left_out} left out: disturbed, of a round a stop cut short, or of one missing a placement's slice; {overran} overran their time): nothing to compare or plot; measure again",
                overran + left_out
            ),
        }
    }

    /// One summary row of a CSV file, its figures checked.
    fn add_row(&mut self, columns: &Columns, place: &str, record: &csv::StringRecord, row: Row) -> Result<()> {
        let name = self.name.clone();
        // A figure read back must be a finite, non-negative number; the cell is quoted as written.
        let number = |column: &str, value: f64| {
            let text = columns.headers.iter().position(|h| h == column).map_or("", |i| &record[i]);
            figure(&name, place, column, Some(value), text)
        };
        check_row_figures(&name, columns, place, record, &row)?;
        let k = key(&row.workload, &row.mode, row.tasks as u64, &row.placement);
        if let Some(ns) = row.ns_per_level.filter(|v| v.is_finite()) {
            let figure = LevelFigure { ns_per_fault: ns, low: row.ns_per_level_low, high: row.ns_per_level_high };
            self.per_level.insert((k.workload.clone(), k.mode.clone(), k.tasks), figure);
        }
        self.check_agrees(columns, place, &k, &row)?;
        self.check_one_run(columns, place, &row)?;
        if columns.has("run_state") {
            self.note_state(place, &row.run_state, &row.run_state_reason)?;
        }
        if !row.unit.is_empty() {
            self.units.entry(k.workload.clone()).or_insert_with(|| crate::text::escaped(&row.unit).into_owned());
        }
        let id = (
            row.run_id.clone(),
            k.workload.clone(),
            k.mode.clone(),
            k.placement.name().to_string(),
            k.tasks,
            row.repetition,
            row.slice,
        );
        if columns.has("repetition") && !self.seen.insert(id) {
            self.duplicates += 1;
            return Ok(());
        }
        // A slice that overran its time (stopped, starved) is in the file, flagged, but in no
        // mean or ratio: as in the run's own table.
        if row.overran {
            self.overran += 1;
            return Ok(());
        }
        // Likewise a slice the run itself left out (disturbed, or of a round cut short), and
        // one of a round the file lacks a placement's slice of.
        let round = (k.workload.clone(), k.mode.clone(), k.tasks, row.repetition, row.slice);
        if !row.counted || (columns.has("slice") && !self.rounds.complete(&round)) {
            self.left_out += 1;
            return Ok(());
        }
        let overhead = match (columns.overhead, columns.ratio_vs_root) {
            (true, _) => row.overhead_vs_baseline.map(|v| number("overhead_vs_baseline", v)).transpose()?,
            (false, Some(i)) if !record[i].is_empty() => {
                figure(&name, place, "ratio_vs_root", record[i].parse().ok(), &record[i])
                    .map(crate::stats::inverse_rate_ratio)?
            }
            _ => None,
        };
        let memcg_ns = row.memcg_ns_per_fault.map(|v| number("memcg_ns_per_fault", v)).transpose()?;
        let rate = number("faults_per_sec", row.faults_per_sec)?;
        if columns.depth {
            self.depths.insert(k.placement.name().to_string(), row.depth.into());
        }
        if !row.run_complete {
            self.incomplete = true;
        }
        let round =
            columns.has("slice").then(|| (k.workload.clone(), k.mode.clone(), k.tasks, row.repetition, row.slice));
        let generation = self.check_generation(place, round, row.generation.filter(|_| columns.has("generation")))?;
        if let Some(value) = memcg_ns {
            let placed = self.next_place(&k, generation, value);
            self.memcg_ns.entry(k.clone()).or_default().push(placed);
        }
        let lock_figures = (
            row.lock_contentions_per_kop.map(|v| number("lock_contentions_per_kop", v)).transpose()?,
            row.lock_wait_ns_per_op.map(|v| number("lock_wait_ns_per_op", v)).transpose()?,
        );
        self.add_locks(&k, generation, lock_figures, None);
        let throughput = row.throughput_vs_baseline.map(|v| number("throughput_vs_baseline", v)).transpose()?;
        self.add(k, generation, rate, overhead, throughput, row.cpu_ns_per_fault.is_some());
        Ok(())
    }

    /// A row's generation, checked: 1 or more; given on every row or on none (a file from
    /// before the column); one for all of a round's slices, whose ratios pair them. Hand-made
    /// generations would otherwise make instances of their own and move every interval.
    fn check_generation(&mut self, place: &str, round: Option<RoundId>, generation: Option<u32>) -> Result<u32> {
        let name = &self.name;
        match (self.with_generation, generation) {
            (Some(true), None) => {
                bail!("{name}: {place}: no generation where the earlier rows have one; is the file whole?")
            }
            (Some(false), Some(_)) => {
                bail!("{name}: {place}: a generation where the earlier rows have none; is the file whole?")
            }
            _ => self.with_generation = Some(generation.is_some()),
        }
        let generation = match generation {
            Some(0) => bail!("{name}: {place}: generation 0 is not a generation number (1 or more)"),
            Some(g) => g,
            None => return Ok(1),
        };
        let Some(round) = round else { return Ok(generation) };
        match self.generations.get(&round) {
            Some(&first) if first != generation => bail!(
                "{name}: {place}: generation {generation} where the round's other slices have {first}: a round is measured by one generation; is this a faultscale file?"
            ),
            Some(_) => {}
            None => drop(self.generations.insert(round, generation)),
        }
        Ok(generation)
    }

    /// Whether the file's run did fixed work (`--iterations`: its `iterations_per_task` set),
    /// not a timed run.
    pub fn fixed_work(&self) -> bool {
        self.settings.values().any(|s| s.get("iterations_per_task").is_some_and(|n| !n.is_empty()))
    }

    /// The cgroup instances (crew generations) the file's slices came from: the fewest of any
    /// row, 1 for a file from before generations were written.
    pub fn units(&self) -> usize {
        let count =
            |placed: &Vec<Placed>| placed.iter().map(|p| p.unit).collect::<std::collections::BTreeSet<_>>().len();
        self.rates.values().map(count).min().unwrap_or(0)
    }

    /// What the file's rates count, for an axis: `faults/s`, `ops/s`, or `faults/s or ops/s`
    /// for a file of two workloads that count differently.
    pub fn rate_unit(&self) -> String {
        let units: std::collections::BTreeSet<&str> =
            self.rates.keys().map(|k| self.units.get(&k.workload).map_or("faults", String::as_str)).collect();
        let rates: Vec<String> = units.iter().map(|unit| format!("{unit}/s")).collect();
        if rates.is_empty() { "faults/s".into() } else { rates.join(" or ") }
    }

    /// Records the row's settings and machine facts, or refuses the file where they differ
    /// from an earlier row's: only the first row's would be compared and shown.
    fn check_agrees(&mut self, columns: &Columns, place: &str, k: &Key, row: &Row) -> Result<()> {
        let name = &self.name;
        let settings = self.settings.entry(k.clone()).or_default();
        for (setting, value) in row.settings().into_iter().filter(|(setting, _)| columns.has(setting)) {
            match settings.get(setting) {
                Some(first) if *first != value => {
                    return Err(mixed(format!(
                        "{name}: {place}: {setting} {value:?} where the earlier rows of {} have {first:?}: the file mixes runs of other settings; give each run its own file",
                        k.label()
                    )));
                }
                Some(_) => {}
                None => drop(settings.insert(setting, value)),
            }
        }
        for (fact, value) in csv_facts(row).into_iter().filter(|(fact, _)| columns.has(fact)) {
            let value = fact_text(value);
            match self.facts.get(fact) {
                Some(first) if *first != value => {
                    return Err(mixed(format!(
                        "{name}: {place}: {fact} {value:?} where the earlier rows have {first:?}: the file mixes runs of other machines or setups; give each run its own file"
                    )));
                }
                Some(_) => {}
                None => drop(self.facts.insert(fact, value)),
            }
        }
        Ok(())
    }

    /// Refuses a second run in the file (two runs' slices would be pooled as one run's, and its
    /// per-level cost taken from whichever came last): a row whose run_id or base depth is not
    /// the first row's, an emptied run_id too.
    fn check_one_run(&mut self, columns: &Columns, place: &str, row: &Row) -> Result<()> {
        let name = &self.name;
        let two_runs = |column: &str, value: String, first: &str| {
            Err(mixed(format!(
                "{name}: {place}: {column} {value:?} where the earlier rows have {first:?}: the file holds two runs; give each run its own file"
            )))
        };
        if columns.has("run_id") {
            let run_id = fact_text(&row.run_id);
            match &self.run_id {
                Some(first) if *first != run_id => return two_runs("run_id", run_id, first),
                Some(_) => {}
                None => self.run_id = Some(run_id),
            }
        }
        if columns.has("base_depth") {
            match self.base_depth {
                Some(first) if first != row.base_depth => {
                    return two_runs("base_depth", row.base_depth.to_string(), &first.to_string());
                }
                Some(_) => {}
                None => self.base_depth = Some(row.base_depth),
            }
        }
        Ok(())
    }

    /// The file's state from one row (or the JSON document): a known word, the same on every row.
    fn note_state(&mut self, place: &str, word: &str, reason: &str) -> Result<()> {
        let name = &self.name;
        let Some(state) = FileState::parse(word, reason) else {
            bail!(
                "{name}: {place}: run_state {word:?} is not running, stopped, failed or complete; is this a faultscale file?"
            );
        };
        match &self.state {
            Some(first) if *first != state => Err(mixed(format!(
                "{name}: {place}: run_state {word:?} where the earlier rows have {:?}: the file holds two runs; give each run its own file",
                first
            ))),
            Some(_) => Ok(()),
            None => {
                self.state = Some(state);
                Ok(())
            }
        }
    }

    /// A JSON file's text read as `load` streams a file.
    #[cfg(test)]
    pub fn from_json(name: String, text: &str) -> Result<Self> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let first = text.bytes().find(|b| !b.is_ascii_whitespace());
        Self::from_json_reader(name, first, text.as_bytes())
    }

    /// A JSON file read as a stream into its document (`json::document`), `first` its first
    /// byte that is not blank: a worker's figures (files of format 1) are passed over unread.
    fn from_json_reader(name: String, first: Option<u8>, reader: impl std::io::Read) -> Result<Self> {
        let document = json::document(&name, first, reader).map_err(|e| match e {
            json::Refused::Mixed(message) => mixed(message),
            json::Refused::Other(error) => error,
        })?;
        let environment = &document.environment;
        if !environment.is_null() && !environment.is_object() {
            bail!("{name}: environment {environment} is not an object; is this a faultscale --json file?");
        }
        if let Some(version) = document.format_version.filter(|v| *v > schema::FORMAT_VERSION) {
            bail!(
                "{name}: format_version {version}: a newer faultscale wrote it (this one reads up to {}); read it with that one",
                schema::FORMAT_VERSION
            );
        }
        let settings = &document.settings;
        let workload = settings
            .workload
            .clone()
            .ok_or_else(|| anyhow!("{name}: no settings.workload; is this a faultscale --json file?"))?;
        let mode = settings.mode.clone().unwrap_or_else(|| "process".into());
        let mut file = RunFile { name: name.clone(), ..Default::default() };
        if let Some(unit) = &document.unit {
            file.units.insert(crate::text::escaped(&workload).into_owned(), crate::text::escaped(unit).into_owned());
        }
        let measurements = document.measurements.as_ref().ok_or_else(|| anyhow!("{name}: no measurements"))?;
        for m in measurements {
            if let Some(round) = json_round(&workload, &mode, m) {
                file.rounds.add(round, &crate::text::escaped(&m.placement));
            }
        }
        for (index, m) in measurements.iter().enumerate() {
            file.add_measurement(settings, &workload, &mode, m, index)?;
        }
        file.profile_asked = Some(measurements.iter().any(|m| m.result.profile.is_some()));
        file.add_json_facts(&name, environment)?;
        file.base_depth = field(&name, environment, "environment", "base_depth", "a depth")?;
        file.run_id = field::<String>(&name, environment, "environment", "run_id", "text")?.map(|id| fact_text(&id));
        // Files from before the setting read it as none: they do not say. As a set: --cpus 1,0
        // runs on the CPUs --cpus 0,1 does.
        let cpus: std::collections::BTreeSet<usize> = settings.cpus.iter().copied().collect();
        file.cpus = Some(cpus.into_iter().collect()).filter(|cpus: &Vec<usize>| !cpus.is_empty());
        // A run a signal ended early writes `"complete": false` (the CSV's run_complete); files
        // from before the field are complete.
        file.incomplete = document.complete == Some(false);
        file.json_state(&document)?;
        file.locks_absent = document
            .warnings
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(serde_json::Value::as_str)
            .find_map(crate::report::warnings::locks_absent_reason)
            .map(fact_text);
        file.add_json_levels(&document.per_level, &workload, &mode)?;
        file.mark_unknown_overheads();
        file.no_rows_left()?;
        Ok(file)
    }

    /// The per-level costs of a JSON file; an entry without its figures (a run that fitted
    /// none) is passed over, one of another type refused.
    fn add_json_levels(&mut self, per_level: &serde_json::Value, workload: &str, mode: &str) -> Result<()> {
        let name = &self.name;
        for (index, level) in per_level.as_array().into_iter().flatten().enumerate() {
            let at = format!("per_level[{index}]");
            let cpu = object(name, level, &at, "cpu")?;
            let cpu_at = json::join(&at, "cpu");
            let number = |key: &str| field::<f64>(name, cpu, &cpu_at, key, "a number");
            let (Some(tasks), Some(ns)) =
                (field::<u64>(name, level, &at, "tasks", "a whole number")?, number("ns_per_fault")?)
            else {
                continue;
            };
            let figure = LevelFigure { ns_per_fault: ns, low: number("low")?, high: number("high")? };
            self.per_level.insert((workload.to_string(), mode.to_string(), tasks), figure);
        }
        Ok(())
    }

    /// A JSON file's `state`, with its `signal` or `reason`; absent in files from before it.
    fn json_state(&mut self, document: &schema::Document) -> Result<()> {
        let Some(word) = &document.state else { return Ok(()) };
        let reason = match (document.signal, &document.reason) {
            (Some(signal), _) => crate::text::signal_name(signal),
            (None, reason) => reason.clone().unwrap_or_default(),
        };
        if word.is_empty() {
            bail!(
                "{}: state \"\" is not running, stopped, failed or complete; is this a faultscale --json file?",
                self.name
            );
        }
        self.note_state("state", word, &reason)
    }

    /// One measurement of a JSON file (the `index`th), its fields and figures checked.
    fn add_measurement(
        &mut self,
        settings: &schema::Settings,
        workload: &str,
        mode: &str,
        m: &Measurement,
        index: usize,
    ) -> Result<()> {
        let name = &self.name.clone();
        let tasks = m.result.tasks() as u64;
        let placement = crate::text::escaped(&m.placement).into_owned();
        let placement = placement.as_str();
        if m.generation == Some(0) {
            bail!(
                "{name}: measurements[{index}].generation 0 is not a generation number (1 or more); is this a faultscale --json file?"
            );
        }
        let number = |what: &str, value: f64| figure(name, placement, what, Some(value), &json_text(value));
        let rate = number("faults_per_sec", m.faults_per_sec)?;
        check_json_figures(name, index, placement, m)?;
        if let (Some(repetition), Some(slice)) = (m.repetition, m.slice) {
            let id = (String::new(), workload.into(), mode.into(), placement.into(), tasks, repetition, slice);
            if !self.seen.insert(id) {
                self.duplicates += 1;
                return Ok(());
            }
        }
        if m.result.overran {
            self.overran += 1;
            return Ok(());
        }
        let cut = json_round(workload, mode, m).is_some_and(|round| !self.rounds.complete(&round));
        if !m.counted || cut {
            self.left_out += 1;
            return Ok(());
        }
        if tasks == 0 {
            bail!(
                "{name}: measurements[{index}] ({placement}): no task count (neither result.crew.tasks nor result.workers); is this a faultscale --json file?"
            );
        }
        // No run has more workers than --tasks takes (a hand-edited count read as 2^64 - 1).
        if tasks > crate::plan::MAX_TASKS as u64 {
            bail!(
                "{name}: measurements[{index}] ({placement}): {tasks} tasks, more than a run takes (at most {})",
                crate::plan::MAX_TASKS
            );
        }
        if let Some(depth) = m.depth {
            self.depths.insert(placement.to_string(), depth.into());
        }
        let overhead = match (m.overhead_vs_baseline, m.ratio_vs_root) {
            (None, None) => None,
            (None, Some(ratio)) => number("ratio_vs_root", ratio).map(crate::stats::inverse_rate_ratio)?,
            (Some(value), _) => Some(number("overhead_vs_baseline", value)?),
        };
        let k = key(workload, mode, tasks, placement);
        let round = json_round(workload, mode, m);
        let generation = self.check_generation(placement, round, m.generation)?;
        // Checked as the CSV's is: finite, not negative, within what a machine measures.
        if let Some(value) = m.memcg_ns_per_fault {
            let placed = self.next_place(&k, generation, number("memcg_ns_per_fault", value)?);
            self.memcg_ns.entry(k.clone()).or_default().push(placed);
        }
        let row_settings = self.settings.entry(k.clone()).or_default();
        let kernel_count_source = ("kernel_count_source", m.result.kernel_source.clone());
        for (setting, value) in settings.compared().into_iter().chain([kernel_count_source]) {
            if let Some(value) = value {
                row_settings.entry(setting).or_insert(value);
            }
        }
        let lock_figures = (
            m.lock_contentions_per_kop.map(|v| number("lock_contentions_per_kop", v)).transpose()?,
            m.lock_wait_ns_per_op.map(|v| number("lock_wait_ns_per_op", v)).transpose()?,
        );
        self.add_locks(&k, generation, lock_figures, m.result.locks.as_ref());
        let throughput = m.throughput_vs_baseline.map(|value| number("throughput_vs_baseline", value)).transpose()?;
        self.add(k, generation, rate, overhead, throughput, m.cpu_ns_per_fault.is_some());
        Ok(())
    }

    /// The machine facts of a JSON file's environment, each text or absent: a fact of another
    /// type is refused with its path, since one read as absent would silence compare's warning
    /// that the machines differ.
    fn add_json_facts(&mut self, name: &str, env: &serde_json::Value) -> Result<()> {
        let machine = object(name, env, "environment", "machine")?;
        let found = FACTS.iter().chain(["allowed_cpus"].iter()).map(|fact| (*fact, env, "environment"));
        let machine_facts = MACHINE_FACTS.iter().map(|fact| (*fact, machine, "environment.machine"));
        for (fact, parent, path) in found.chain(machine_facts) {
            if let Some(value) = field::<String>(name, parent, path, fact, "text")? {
                self.facts.insert(fact, fact_text(&value));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `error` is a file mixing runs, marked as the user's input.
    fn is_mixed(error: &anyhow::Error) -> bool {
        matches!(crate::error::of(error), Some(crate::error::Error::Usage(_)))
    }

    #[test]
    fn non_finite_negative_and_impossible_figures_are_refused() {
        let header = "workload,mode,tasks,placement,cpu,faults_per_sec,overhead_vs_baseline\n";
        for (row, why) in [
            ("anon,process,2,root,,inf,", "faults_per_sec \"inf\""),
            ("anon,process,2,root,,NaN,", "faults_per_sec \"NaN\""),
            ("anon,process,2,root,,-5,", "faults_per_sec \"-5\""),
            ("anon,process,-3,root,,5,", "tasks \"-3\""),
            ("anon,process,0,root,,5,", "tasks \"0\""),
            ("anon,process,2,child,,5,inf", "overhead_vs_baseline \"inf\""),
            ("anon,process,2,root,,1e200,", "faults_per_sec \"1e200\" is beyond anything a machine measures"),
            ("anon,process,2,root,,0,", "faults_per_sec \"0\": no run writes a zero rate"),
            ("anon,process,2,root,,1e-300,", "faults_per_sec \"1e-300\" is below anything a machine measures"),
            ("anon,process,2,child,,5,1e-300", "overhead_vs_baseline \"1e-300\" is below anything"),
        ] {
            let err = RunFile::from_csv("x.csv".into(), &format!("{header}{row}\n")).unwrap_err().to_string();
            assert!(err.starts_with("x.csv: row 2: ") && err.contains(why), "{row}: {err}");
        }
        // Of a version that named a slice's data `run`.
        let json = r#"{"settings":{"workload":"anon"},"measurements":[{"placement":"root","faults_per_sec":-1,"run":{"workers":[{}]}}]}"#;
        assert!(RunFile::from_json("x.json".into(), json).unwrap_err().to_string().contains("faults_per_sec"));
        let json = r#"{"settings":{"workload":"anon"},"measurements":[{"placement":"root","faults_per_sec":1,"memcg_ns_per_fault":-1e308,"result":{"workers":[{}]}}]}"#;
        assert!(RunFile::from_json("x.json".into(), json).unwrap_err().to_string().contains("memcg_ns_per_fault"));
    }

    #[test]
    fn lock_figures_beyond_a_machine_are_refused_as_the_others_are() {
        // A wait of 1e308 ns per fault read as a figure would print "29.7 -> inf" in compare.
        let header = "workload,mode,tasks,placement,cpu,faults_per_sec,overhead_vs_baseline,lock_contentions_per_kop,lock_wait_ns_per_op\n";
        for (row, why) in [
            ("anon,process,2,root,,5,,1,1e308", "lock_wait_ns_per_op \"1e308\" is beyond anything a machine measures"),
            ("anon,process,2,root,,5,,1e20,1", "lock_contentions_per_kop \"1e20\" is beyond anything"),
            ("anon,process,2,root,,5,,1,inf", "lock_wait_ns_per_op \"inf\" is not a finite, non-negative number"),
            ("anon,process,2,root,,5,,1,-50", "lock_wait_ns_per_op \"-50\" is not a finite, non-negative number"),
        ] {
            let err = RunFile::from_csv("x.csv".into(), &format!("{header}{row}\n")).unwrap_err();
            assert!(!is_mixed(&err), "a figure no machine measures is no usage error (exit 1): {err}");
            let err = err.to_string();
            assert!(err.starts_with("x.csv: row 2: ") && err.contains(why), "{row}: {err}");
        }
        let json = |wait: &str| {
            format!(
                r#"{{"settings":{{"workload":"anon"}},"measurements":[{{"placement":"root","faults_per_sec":1,"lock_contentions_per_kop":1,"lock_wait_ns_per_op":{wait},"result":{{"workers":[{{}}]}}}}]}}"#
            )
        };
        let err = RunFile::from_json("x.json".into(), &json("1e308")).unwrap_err().to_string();
        assert_eq!(
            err,
            "x.json: root: lock_wait_ns_per_op \"1e+308\" is beyond anything a machine measures (at most 1e12); is this a faultscale file?"
        );
        // A wait of 50 ns over 10^9 faults is a figure: lock figures are differenced, never
        // divided by, so no floor applies to them.
        let file = RunFile::from_json("x.json".into(), &json("5e-8")).unwrap();
        assert_eq!(crate::stats::values(&file.lock_waits[&key("anon", "process", 1, "root")]), [5e-8]);
    }

    #[test]
    fn lock_callers_beyond_their_slice_are_refused() {
        // A caller's wait over the slice's (hand-edited, or a caller listed twice) was read as
        // its share of the row's wait: compare printed it waiting 738,421,550 ns per fault.
        let json = |callers: &str| {
            format!(
                r#"{{"settings":{{"workload":"anon"}},"measurements":[{{"placement":"root","faults_per_sec":1,"lock_contentions_per_kop":1,"lock_wait_ns_per_op":27.6,"result":{{"workers":[{{}}],"locks":{{"contentions":9,"wait_ns":100,"lost":0,"unpaired":0,"callers":[{callers}]}}}}}}]}}"#
            )
        };
        let caller = |contentions: u64, wait: u64| {
            format!(r#"{{"caller":"f","kind":"spinlock","contentions":{contentions},"wait_ns":{wait}}}"#)
        };
        let err =
            RunFile::from_json("x.json".into(), &json(&caller(5, 1_000_000_000_000_000))).unwrap_err().to_string();
        assert_eq!(
            err,
            "x.json: measurements[0] (root): result.locks.callers' lock wait sum to 1000000000000000, more than the slice's 100, which is their sum; is this a faultscale --json file?"
        );
        let twice = format!("{},{}", caller(5, 60), caller(5, 60));
        let err = RunFile::from_json("x.json".into(), &json(&twice)).unwrap_err().to_string();
        assert!(err.contains("lock wait sum to 120, more than the slice's 100"), "{err}");
        let max = format!("{},{}", caller(u64::MAX, 1), caller(u64::MAX, 1));
        let err = RunFile::from_json("x.json".into(), &json(&max)).unwrap_err().to_string();
        assert!(err.contains("contentions sum to 36893488147419103230, more than the slice's 9"), "{err}");
        // The run's own: callers summing to the slice's figures.
        assert!(RunFile::from_json("x.json".into(), &json(&format!("{},{}", caller(4, 60), caller(5, 40)))).is_ok());
    }

    #[test]
    fn files_of_earlier_versions_load_and_unreadable_cells_are_named() {
        // The first CSV's columns, with the rate ratio the overhead replaced.
        let old = "run_id,workload,mode,tasks,placement,depth,cpu,faults_per_sec,ratio_vs_root\n\
                   r,anon,process,2,root,0,,1000,1\nr,anon,process,2,child,1,,900,0.9\n";
        let file = RunFile::from_csv("old.csv".into(), old).unwrap();
        let child = key("anon", "process", 2, "child");
        assert_eq!(crate::stats::values(&file.rates[&child]), [900.0]);
        assert!((file.overheads[&child][0].value - 1.0 / 0.9).abs() < 1e-12);
        assert_eq!(file.depths["child"], 1);
        assert!(!file.incomplete, "no run_complete column: a complete run");
        assert!(file.settings[&child].is_empty() && file.facts.is_empty(), "no columns, no settings or facts");
        let bad = "workload,mode,tasks,placement,cpu,faults_per_sec,overhead_vs_baseline,faults\n\
                   anon,process,2,root,,5,,many\n";
        let err = RunFile::from_csv("x.csv".into(), bad).unwrap_err().to_string();
        assert!(err.starts_with("x.csv: row 2: faults \"many\": "), "{err}");
    }

    #[test]
    fn an_overhead_is_unknown_only_where_no_row_had_on_cpu_times() {
        let header = "workload,mode,tasks,placement,cpu,faults_per_sec,overhead_vs_baseline,cpu_ns_per_fault\n";
        let unknown =
            |rows: &str| RunFile::from_csv("x.csv".into(), &format!("{header}{rows}")).unwrap().without_cpu_cost;
        let child = key("anon", "process", 2, "child");
        // --no-baseline: on-CPU times and no overhead to form.
        assert!(unknown("anon,process,2,child,,900,,1000\nanon,process,2,child,,910,,990\n").is_empty());
        // One slice of the child without them: the others' overhead stands.
        let one = "anon,process,2,base,,1000,,900\nanon,process,2,child,,900,1.1,1000\n\
                   anon,process,2,base,,1000,,900\nanon,process,2,child,,900,,\n";
        assert!(unknown(one).is_empty());
        // None of them: unknown.
        assert!(unknown("anon,process,2,base,,1000,,\nanon,process,2,child,,900,,\n").contains(&child));
    }

    #[test]
    fn devices_and_fifos_are_refused_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        for path in [fifo.as_path(), Path::new("/dev/zero"), dir.path()] {
            let err = RunFile::load(path).unwrap_err().to_string();
            assert!(err.contains("not a regular file"), "{}: {err}", path.display());
        }
    }

    #[test]
    fn foreign_files_are_refused_with_the_reason() {
        let err = RunFile::from_csv("x.csv".into(), "a,b\n1,2\n").unwrap_err().to_string();
        assert!(err.contains("no workload column"), "{err}");
        let err = RunFile::from_json("x.json".into(), "{}").unwrap_err().to_string();
        assert!(err.contains("settings.workload"), "{err}");
    }

    #[test]
    fn an_empty_or_deeply_nested_json_file_is_named_for_what_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let load = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            RunFile::load(&path).unwrap_err().to_string()
        };
        let err = load("empty.json", "");
        assert!(err.ends_with("empty.json: empty; give a faultscale --csv or --json file"), "{err}");
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let err = load("deep.json", &deep);
        assert!(err.contains("nested deeper than any faultscale document"), "{err}");
        let err = load("deep.txt", &deep);
        assert!(err.contains("nested deeper than any faultscale document"), "{err}");
        let err = load("list.json", "[1, 2]\n");
        assert!(err.contains("not an object; is this a faultscale --json file?"), "{err}");
        assert!(!load("x.json", "a,b\n1,2\n").contains("workload column"), "a .json file is read as JSON");
    }

    #[test]
    fn a_json_file_of_a_newer_format_is_refused_and_one_of_format_2_counts_its_crew() {
        let document = |version: u32| {
            serde_json::json!({"format_version": version, "settings": {"workload": "anon"},
                "measurements": [{"placement": "base", "faults_per_sec": 5.0, "result": {"crew": {"tasks": 3}}}]})
            .to_string()
        };
        let file = RunFile::from_json("x.json".into(), &document(2)).unwrap();
        assert_eq!(file.rates.keys().map(|k| k.tasks).collect::<Vec<_>>(), [3]);
        let err = RunFile::from_json("x.json".into(), &document(3)).unwrap_err().to_string();
        assert!(
            err.contains("x.json: format_version 3: a newer faultscale wrote it (this one reads up to 2)"),
            "{err}"
        );
    }

    #[test]
    fn one_file_holds_one_run() {
        let header = "run_id,workload,mode,tasks,placement,cpu,faults_per_sec,overhead_vs_baseline,base_depth\n";
        let first = "1-a,anon,process,2,base,,5,,3\n";
        let file = RunFile::from_csv("x.csv".into(), &format!("{header}{first}")).unwrap();
        assert_eq!((file.run_id.as_deref(), file.base_depth), (Some("1-a"), Some(3)));
        // Two runs' rows would be pooled as one run's.
        let err = RunFile::from_csv("x.csv".into(), &format!("{header}{first}2-b,anon,process,2,base,,6,,3\n"));
        let err = err.unwrap_err();
        assert!(is_mixed(&err), "{err}");
        assert!(err.to_string().contains("row 3: run_id \"2-b\" where the earlier rows have \"1-a\""), "{err}");
        // `cat a.csv b.csv`: the second header's cpu cell is not empty, as a per-CPU row's; and
        // one of another version's columns.
        let err = RunFile::from_csv("x.csv".into(), &format!("{header}{first}{header}{first}")).unwrap_err();
        assert!(is_mixed(&err) && err.to_string().contains("row 3 repeats the header"), "{err}");
        let older = "workload,mode,tasks,placement,cpu,faults_per_sec\nanon,process,2,base,,5\n";
        let err = RunFile::from_csv("x.csv".into(), &format!("{header}{first}{older}")).unwrap_err();
        assert!(is_mixed(&err) && err.to_string().contains("row 3 repeats the header"), "{err}");
        let err = RunFile::from_csv("x.csv".into(), &format!("{header}{first}anon,process\n")).unwrap_err();
        assert!(err.to_string().contains("row 3 has 2 cells where the header has 9"), "{err}");
        // A run_id emptied, or another base depth: another run all the same.
        for second in [",anon,process,2,base,,6,,3", "1-a,anon,process,2,base,,6,,0"] {
            let err = RunFile::from_csv("x.csv".into(), &format!("{header}{first}{second}\n")).unwrap_err();
            assert!(is_mixed(&err) && err.to_string().contains("the file holds two runs"), "{second}: {err}");
        }
    }

    #[test]
    fn a_file_whose_every_slice_was_left_out_says_so() {
        let header = "run_id,workload,mode,tasks,placement,cpu,faults_per_sec,overhead_vs_baseline,counted,overran\n";
        let rows = "1-a,anon,process,2,base,,5,,false,false\n1-a,anon,process,2,child,,5,1.0,true,true\n";
        let err = RunFile::from_csv("x.csv".into(), &format!("{header}{rows}")).unwrap_err().to_string();
        assert!(err.contains("none of its 2 slice(s) counted (1 left out: disturbed"), "{err}");
        assert!(err.contains("1 overran their time"), "{err}");
    }

    #[test]
    fn generations_must_be_given_on_every_row_be_one_or_more_and_one_a_round() {
        let header = "run_id,workload,mode,tasks,placement,cpu,repetition,slice,faults_per_sec,overhead_vs_baseline,generation\n";
        let file = |rows: &str| RunFile::from_csv("g.csv".into(), &format!("{header}{rows}"));
        let good = "1-a,anon,process,2,base,,1,1,5,,1\n1-a,anon,process,2,child,,1,1,4,1.2,1\n\
                    1-a,anon,process,2,base,,1,2,5,,2\n1-a,anon,process,2,child,,1,2,4,1.2,2\n";
        assert_eq!(file(good).unwrap().units(), 2);
        for (rows, said) in [
            (good.replace("4,1.2,2", "4,1.2,"), "no generation where the earlier rows have one"),
            (good.replacen(",5,,1", ",5,,", 1), "a generation where the earlier rows have none"),
            (good.replace(",1\n", ",0\n"), "generation 0 is not a generation number"),
            (good.replace("4,1.2,2", "4,1.2,3"), "a round is measured by one generation"),
        ] {
            let err = format!("{:#}", file(&rows).unwrap_err());
            assert!(err.contains(said), "{rows}: {err}");
        }
    }

    #[test]
    fn a_round_without_every_placements_slice_counts_nowhere() {
        // A checkpoint cut by a SIGKILL between round 2's slices: child's is there, base's not.
        let header = "run_id,workload,mode,tasks,placement,cpu,repetition,slice,faults_per_sec,overhead_vs_baseline,round_complete,counted\n";
        let rows = "1-a,anon,process,2,base,,1,1,5,,true,true\n1-a,anon,process,2,child,,1,1,4,1.2,true,true\n\
                    1-a,anon,process,2,child,,1,2,4,1.2,true,true\n";
        let file = RunFile::from_csv("x.csv".into(), &format!("{header}{rows}")).unwrap();
        assert!(file.rates.values().all(|rates| rates.len() == 1), "{:?}", file.rates);
        assert_eq!(file.left_out, 1);
        let measurement = |placement: &str, slice: u32| {
            serde_json::json!({"placement": placement, "repetition": 1, "slice": slice, "faults_per_sec": 5.0,
                "overhead_vs_baseline": if placement == "base" { serde_json::Value::Null } else { 1.2.into() },
                "counted": true, "round_complete": true, "result": {"workers": [{}, {}]}})
        };
        let document = serde_json::json!({"settings": {"workload": "anon", "mode": "process"},
            "measurements": [measurement("base", 1), measurement("child", 1), measurement("child", 2)]});
        let file = RunFile::from_json("x.json".into(), &document.to_string()).unwrap();
        assert!(file.rates.values().all(|rates| rates.len() == 1), "{:?}", file.rates);
        assert_eq!(file.left_out, 1);
    }

    #[test]
    fn a_json_file_of_a_stopped_run_is_incomplete() {
        let document = |complete: bool| {
            serde_json::json!({
                "complete": complete,
                "settings": {"workload": "anon"},
                "environment": {"run_id": "1-a", "base_depth": 0},
                "measurements": [{"placement": "root", "faults_per_sec": 5.0, "result": {"workers": [{}, {}]}}],
            })
            .to_string()
        };
        let file = RunFile::from_json("x.json".into(), &document(false)).unwrap();
        assert!(file.incomplete);
        assert_eq!((file.run_id.as_deref(), file.base_depth), (Some("1-a"), Some(0)));
        assert!(!RunFile::from_json("x.json".into(), &document(true)).unwrap().incomplete);
        let err = RunFile::from_json("x.json".into(), &document(true).repeat(2)).unwrap_err();
        assert!(is_mixed(&err) && err.to_string().contains("a second JSON document follows"), "{err}");
        let text = document(false).replace("\"complete\":false", "\"complete\":\"false\"");
        let err = RunFile::from_json("x.json".into(), &text).unwrap_err().to_string();
        assert!(err.contains("x.json: complete: invalid type: string \"false\", expected a boolean"), "{err}");
        let text = document(false).replace("\"base_depth\":0", "\"base_depth\":\"0\"");
        let err = RunFile::from_json("x.json".into(), &text).unwrap_err().to_string();
        assert!(err.contains("environment.base_depth \"0\" is not a depth"), "{err}");
        // A machine fact compare warns on, of another type, would read as absent.
        for (from, to, path) in [
            ("\"base_depth\":0", "\"base_depth\":0,\"kernel\":619", "environment.kernel 619 is not text"),
            (
                "\"base_depth\":0",
                "\"base_depth\":0,\"machine\":{\"swap\":[1]}",
                "environment.machine.swap [1] is not text",
            ),
            ("\"base_depth\":0", "\"base_depth\":0,\"machine\":3", "environment.machine 3 is not an object"),
        ] {
            let err = RunFile::from_json("x.json".into(), &document(false).replace(from, to)).unwrap_err().to_string();
            assert!(err.contains(path), "{err}");
        }
        let text = document(false).replace("\"base_depth\":0", "\"base_depth\":0,\"kernel\":\"6.1\"");
        assert_eq!(RunFile::from_json("x.json".into(), &text).unwrap().facts["kernel"], "6.1");
    }

    #[test]
    fn a_hand_edited_json_field_of_another_type_is_refused_with_its_path() {
        let document = |slice: &str, counted: &str| {
            format!(
                r#"{{"settings":{{"workload":"anon"}},"measurements":[{{"placement":"base","faults_per_sec":5,"repetition":1,"slice":1,"result":{{"workers":[{{}}]}}}},{{"placement":"child","faults_per_sec":4,"repetition":1,"slice":{slice},"counted":{counted},"result":{{"workers":[{{}}]}}}}]}}"#
            )
        };
        assert!(RunFile::from_json("x.json".into(), &document("1", "true")).is_ok());
        // A duplicated slice written 1.0 was no slice number to the duplicate check: it counted.
        let err = RunFile::from_json("x.json".into(), &document("1.0", "true")).unwrap_err().to_string();
        assert!(
            err.contains("x.json: measurements[1].slice: invalid type: floating point `1.0`, expected u32"),
            "{err}"
        );
        // A string is no flag: "false" counted the slice.
        let err = RunFile::from_json("x.json".into(), &document("1", "\"false\"")).unwrap_err().to_string();
        assert!(err.contains("x.json: measurements[1].counted: invalid type: string \"false\""), "{err}");
        let err = RunFile::from_json("x.json".into(), &document("1", "true").replace("\"anon\"", "7")).unwrap_err();
        assert!(err.to_string().contains("settings.workload: invalid type: integer `7`, expected a string"), "{err}");
    }
}
