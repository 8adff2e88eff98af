//! `faultscale compare BASE NEW [MORE...]`: before/after tables from faultscale's own CSV or
//! JSON files, as kernel developers read them in mmtests and lkp reports: per workload, mode,
//! task count and placement, the base and new mean rate, the change with a significance mark,
//! each side's CV, and the change in the overhead itself. A side is one run or several (LKP
//! repeats a job on each commit). What is tested is what holds from run to run: with one run a
//! side, each run's own interval over its cgroup instances (crew generations, `stats::
//! unit_mean`); with several, the runs themselves. Never the slices as if independent: they
//! share one instance's cost. This file matches and tests; export/ formats the result.

use crate::report::lkp;
use crate::results::{FileState, Key, RunFile};
use crate::stats::{self, Estimate, Placed, summarize, values};
use crate::text::signed;

/// Whether a change is significant; written `yes`, `no` and `?` in compare's CSV.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub enum Significance {
    #[serde(rename = "yes")]
    Yes,
    #[serde(rename = "no")]
    No,
    /// A side cannot say what its next run would give: one run of one cgroup instance (a run
    /// too short for crew generations), or no spread to test against.
    #[serde(rename = "?")]
    #[default]
    Untested,
}

/// One line of a comparison.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Change {
    pub workload: String,
    pub mode: String,
    pub tasks: u64,
    pub placement: String,
    pub new_file: String,
    /// Runs on each side.
    pub base_runs: usize,
    pub new_runs: usize,
    pub base_mean: f64,
    pub new_mean: f64,
    pub change_pct: f64,
    /// Whether the rate changed: its Holm-adjusted p below 0.05.
    pub significant: Significance,
    /// The rate's change tested on the log rates over the runs, where each side has two or
    /// more (one run cannot see how the machine's speed drifts between runs), Holm-adjusted
    /// with every other p of the rows compared with the same new file.
    pub rate_p_holm: Option<f64>,
    /// Each side's CV over its slices; None where a side has one slice (no spread to measure).
    pub base_cv_pct: Option<f64>,
    pub new_cv_pct: Option<f64>,
    pub base_overhead_pct: Option<f64>,
    pub new_overhead_pct: Option<f64>,
    /// The overhead's change, new over base (each side's overhead, `stats::overhead_interval`), in
    /// percent, with its 95% interval (on the log overheads, each side's standard error over its
    /// units).
    pub overhead_change_pct: Option<f64>,
    pub overhead_change_low_pct: Option<f64>,
    pub overhead_change_high_pct: Option<f64>,
    /// Its p-value, Holm-adjusted with every other p of the rows compared with the same new file.
    pub overhead_p_holm: Option<f64>,
    /// --profile: the memcg family's CPU ns per fault, each side's mean, and its change
    /// (new - base) with a 95% interval and a Holm-adjusted p, tested like the overhead.
    pub base_memcg_ns: Option<f64>,
    pub new_memcg_ns: Option<f64>,
    pub memcg_ns_change: Option<f64>,
    pub memcg_ns_change_low: Option<f64>,
    pub memcg_ns_change_high: Option<f64>,
    pub memcg_p_holm: Option<f64>,
    /// LKP's name for the mean rate per task: per_process_ops, or per_thread_ops for threads.
    pub lkp_metric: &'static str,
    pub base_per_task_ops: f64,
    pub new_per_task_ops: f64,
    /// LKP's scalability at the largest task count a file swept (rate / linear from its
    /// smallest count); None elsewhere.
    pub base_scalability: Option<f64>,
    pub new_scalability: Option<f64>,
    /// --locks, where every file of both sides has lock figures for the row: each side's lock
    /// wait ns per operation (the loop's units; each run's mean over its cgroup instances, as
    /// its table has it, the mean over a side's runs), and its change (new - base) with a 95%
    /// interval and a Holm-adjusted p, tested like the memcg cost. None elsewhere: unknown,
    /// never zero (`lock_notes` says why).
    pub base_lock_wait_ns_per_op: Option<f64>,
    pub new_lock_wait_ns_per_op: Option<f64>,
    pub lock_wait_ns_per_op_change: Option<f64>,
    pub lock_wait_ns_per_op_change_low: Option<f64>,
    pub lock_wait_ns_per_op_change_high: Option<f64>,
    pub lock_wait_p_holm: Option<f64>,
    /// The same for the lock contentions per 1,000 operations.
    pub base_lock_contentions_per_kop: Option<f64>,
    pub new_lock_contentions_per_kop: Option<f64>,
    pub lock_contentions_per_kop_change: Option<f64>,
    pub lock_contentions_per_kop_change_low: Option<f64>,
    pub lock_contentions_per_kop_change_high: Option<f64>,
    pub lock_contentions_p_holm: Option<f64>,
    /// --locks, JSON files: per caller among each run's top callers (`report::locks::
    /// TOP_CALLERS`, both sides' together), the change of its lock wait ns per operation, the
    /// largest wait first. Not in the CSV (a row per placement has no room for a list).
    #[serde(skip)]
    pub lock_callers: Vec<CallerChange>,
    /// What an operation is for the row's workload (fault, loop, page, op), as the new file says.
    #[serde(skip)]
    pub unit: String,
}

/// --locks: one caller's lock wait ns per operation on each side, and its change: where the
/// placement's change went. Its interval is shown; it is not tested (no p): it breaks down the
/// placement's change, which is.
#[derive(Debug, Clone, PartialEq)]
pub struct CallerChange {
    /// As the run's table names it: `rwsem:W __mmap_region<-do_mmap`.
    pub caller: String,
    pub base_wait_ns_per_op: f64,
    pub new_wait_ns_per_op: f64,
    /// new - base with its 95% interval; None where a side cannot say what its next run
    /// would give (one run of one cgroup instance).
    pub change: Option<stats::RatioChange>,
}

/// The row's scalability in `file` if its task count is the largest of a sweep there: the
/// rate over (the smallest count's rate x tasks / that count).
fn scalability(file: &RunFile, key: &crate::results::Key) -> Option<f64> {
    let same =
        |k: &&crate::results::Key| k.workload == key.workload && k.mode == key.mode && k.placement == key.placement;
    let sweep: Vec<(usize, f64)> = file
        .rates
        .iter()
        .filter(|(k, _)| same(k))
        .filter_map(|(k, rates)| Some((k.tasks as usize, summarize(&values(rates))?.mean)))
        .collect();
    let largest = sweep.iter().map(|(tasks, _)| *tasks).max()?;
    if largest as u64 != key.tasks {
        return None;
    }
    stats::vs_linear(&sweep, largest)
}

/// Rows of the two files whose settings differ, one line each: comparing them would mix a
/// setting's effect into the kernel's. Fixed work against a timed run is one of them: a pass's
/// rate counts its workers' start and finish, a timed slice's does not.
pub fn setting_differences(base: &RunFile, new: &RunFile) -> Vec<String> {
    let mut differences = std::collections::BTreeSet::new();
    for (key, base_settings) in &base.settings {
        let Some(new_settings) = new.settings.get(key) else { continue };
        for (setting, base_value) in base_settings {
            if let Some(new_value) = new_settings.get(setting)
                && new_value != base_value
            {
                differences.insert(setting_difference(setting, base_value, new_value));
            }
        }
    }
    differences.into_iter().collect()
}

/// One setting's two values as `setting_differences` says them; a timed run (an empty
/// `iterations_per_task`) against fixed work in words.
fn setting_difference(setting: &str, base: &str, new: &str) -> String {
    let work = |iterations: &str| match iterations {
        "" => "a timed run (--duration)".to_string(),
        n => format!("fixed work (--iterations {n})"),
    };
    match setting {
        "iterations_per_task" if base.is_empty() || new.is_empty() => format!("{} vs {}", work(base), work(new)),
        _ => format!("{setting} {base:?} vs {new:?}"),
    }
}

/// Two runs of one side whose rows differ (workload, mode, tasks, placement), said in one
/// line naming both and a row one has and the other lacks: the rows are matched on each side's
/// first run, so a run with rows the first lacks (or lacking some it has) would drop rows
/// unseen, count runs that contribute nothing, and read otherwise in another order.
pub fn side_rows_differ(first: &RunFile, other: &RunFile) -> Option<String> {
    let missing = |a: &RunFile, b: &RunFile| a.rates.keys().find(|k| !b.rates.contains_key(k)).map(Key::label);
    let (has, lacks, row) = match missing(first, other) {
        Some(row) => (first, other, row),
        None => (other, first, missing(other, first)?),
    };
    Some(format!(
        "{} has {row} where {} has not: the runs of one side must hold the same rows (workload, mode, tasks, placement); give each side runs of one setup, or compare them apart",
        has.name, lacks.name
    ))
}

/// One side of a comparison: one run, or several runs of one kernel.
pub type Side = [RunFile];

/// The values a side's runs hold for one row's figure: one list a run that has the row.
fn runs_of<'a>(
    side: &'a Side,
    of: fn(&RunFile) -> &std::collections::BTreeMap<Key, Vec<Placed>>,
    key: &Key,
) -> Vec<&'a [Placed]> {
    side.iter().filter_map(|file| of(file).get(key)).map(Vec::as_slice).collect()
}

/// What a side says of one row's figure: the estimate another run of it would scatter
/// around, with the standard error that scatter has. From several runs, the runs' own means
/// (the run is the unit); from one run, its units (`stats::unit_mean`), where it has two or
/// more; else nothing (`Untested`). `log` for rates and ratios, which multiply.
fn side_estimate(
    side: &Side,
    of: fn(&RunFile) -> &std::collections::BTreeMap<Key, Vec<Placed>>,
    key: &Key,
    log: bool,
) -> Option<Estimate> {
    runs_estimate(&runs_of(side, of, key), log)
}

/// `side_estimate` from each run's values of the figure.
fn runs_estimate(runs: &[&[Placed]], log: bool) -> Option<Estimate> {
    let per_run: Vec<Vec<Placed>> = runs
        .iter()
        .map(|placed| {
            placed
                .iter()
                .map(|p| {
                    Some(Placed { value: if log { (p.value > 0.0).then(|| p.value.ln())? } else { p.value }, ..*p })
                })
                .collect::<Option<Vec<_>>>()
        })
        .collect::<Option<_>>()?;
    let means: Vec<stats::UnitMean> = per_run.iter().filter_map(|v| stats::unit_mean(v)).collect();
    match means.as_slice() {
        [] => None,
        [one] if one.units < 2 => None,
        [one] => Estimate::of(one),
        several => Estimate::of_values(&several.iter().map(|m| m.mean).collect::<Vec<_>>()),
    }
}

/// How a run's point figure is summed up from its slices, as the run's own table does.
#[derive(Clone, Copy)]
enum RunMean {
    /// The mean over slices: a rate, a memcg cost.
    Slices,
    /// The run's own overhead (`overhead_interval`: the geometric mean over its units'
    /// trimmed means, so unequal generations weigh as the run's table weighs them).
    Overhead,
    /// The mean of its units' trimmed means (`stats::unit_mean`): a lock figure.
    Units,
}

/// A side's point figure for the table: the mean over its runs of each run's mean, None where
/// no run has the row (overheads averaged as logs).
fn side_mean(
    side: &Side,
    of: fn(&RunFile) -> &std::collections::BTreeMap<Key, Vec<Placed>>,
    key: &Key,
    how: RunMean,
) -> Option<f64> {
    runs_mean(&runs_of(side, of, key), how)
}

/// `side_mean` from each run's values of the figure.
fn runs_mean(runs: &[&[Placed]], how: RunMean) -> Option<f64> {
    let means: Vec<f64> = runs
        .iter()
        .filter_map(|placed| match how {
            RunMean::Overhead => stats::overhead_interval(placed).map(|i| i.mean.ln()),
            RunMean::Slices => summarize(&values(placed)).map(|s| s.mean),
            RunMean::Units => stats::unit_mean(placed).map(|m| m.mean),
        })
        .collect();
    let mean = summarize(&means)?.mean;
    Some(if matches!(how, RunMean::Overhead) { mean.exp() } else { mean })
}

/// b - a from the two sides' estimates; for logs, the change as a ratio.
fn side_change(a: Option<Estimate>, b: Option<Estimate>, log: bool) -> Option<stats::RatioChange> {
    let change = stats::estimate_difference(a?, b?)?;
    Some(match log {
        true => stats::RatioChange {
            change: change.change.exp(),
            low: change.low.exp(),
            high: change.high.exp(),
            p: change.p,
        },
        false => change,
    })
}

fn rates(file: &RunFile) -> &std::collections::BTreeMap<Key, Vec<Placed>> {
    &file.rates
}
fn overheads(file: &RunFile) -> &std::collections::BTreeMap<Key, Vec<Placed>> {
    &file.overheads
}
fn memcg_ns(file: &RunFile) -> &std::collections::BTreeMap<Key, Vec<Placed>> {
    &file.memcg_ns
}
fn lock_waits(file: &RunFile) -> &std::collections::BTreeMap<Key, Vec<Placed>> {
    &file.lock_waits
}
fn lock_contentions(file: &RunFile) -> &std::collections::BTreeMap<Key, Vec<Placed>> {
    &file.lock_contentions
}

/// A figure's point value on each side (`side_mean`) and its change, new - base, with its
/// 95% interval and raw p, tested as a difference: (base, new, change, low, high, p).
type Differenced = (Option<f64>, Option<f64>, Option<f64>, Option<f64>, Option<f64>, Option<f64>);

fn differenced(
    base: &Side,
    new: &Side,
    of: fn(&RunFile) -> &std::collections::BTreeMap<Key, Vec<Placed>>,
    key: &Key,
    how: RunMean,
) -> Differenced {
    let change = side_change(side_estimate(base, of, key, false), side_estimate(new, of, key, false), false);
    (
        side_mean(base, of, key, how),
        side_mean(new, of, key, how),
        change.map(|c| c.change),
        change.map(|c| c.low),
        change.map(|c| c.high),
        change.map(|c| c.p),
    )
}

/// --profile: the memcg family's CPU ns per fault on both sides and its change (new - base),
/// tested as the overhead is, but as a difference.
fn fill_memcg(c: &mut Change, base: &Side, new: &Side, key: &Key) {
    (
        c.base_memcg_ns,
        c.new_memcg_ns,
        c.memcg_ns_change,
        c.memcg_ns_change_low,
        c.memcg_ns_change_high,
        c.memcg_p_holm,
    ) = differenced(base, new, memcg_ns, key, RunMean::Slices);
}

/// --locks: the row's lock figures on both sides, where every file of both has them for the
/// row: each side's point figure (its runs' means over their cgroup instances, as their tables
/// have them) and the change, estimated as the memcg cost is (a difference: a side's wait may
/// be none), and per caller.
fn fill_locks(c: &mut Change, base: &Side, new: &Side, key: &Key) {
    if !base.iter().chain(new).all(|file| file.has_locks(key)) {
        return;
    }
    (
        c.base_lock_wait_ns_per_op,
        c.new_lock_wait_ns_per_op,
        c.lock_wait_ns_per_op_change,
        c.lock_wait_ns_per_op_change_low,
        c.lock_wait_ns_per_op_change_high,
        c.lock_wait_p_holm,
    ) = differenced(base, new, lock_waits, key, RunMean::Units);
    (
        c.base_lock_contentions_per_kop,
        c.new_lock_contentions_per_kop,
        c.lock_contentions_per_kop_change,
        c.lock_contentions_per_kop_change_low,
        c.lock_contentions_per_kop_change_high,
        c.lock_contentions_p_holm,
    ) = differenced(base, new, lock_contentions, key, RunMean::Units);
    c.lock_callers = caller_changes(base, new, key);
}

/// The callers a run names first for a row: those with the longest lock wait over its
/// slices, as its summary ranks them (`report::locks::TOP_CALLERS`), any wait at all.
fn top_callers<'a>(file: &'a RunFile, key: &Key) -> impl Iterator<Item = &'a crate::results::LockCaller> {
    let mut callers: Vec<_> = file.lock_callers.get(key).into_iter().flatten().filter(|(_, w)| w.wait_ns > 0).collect();
    callers.sort_by(|(a, x), (b, y)| y.wait_ns.cmp(&x.wait_ns).then(a.cmp(b)));
    callers.into_iter().take(crate::report::locks::TOP_CALLERS).map(|(caller, _)| caller)
}

/// --locks: per caller among the top callers of every run of both sides, its lock wait ns per
/// operation on each side (0 in a slice it did not contend in) and the change, the largest
/// wait first; none where a file names no callers (a CSV file: its callers are unknown, and
/// would read as zero).
fn caller_changes(base: &Side, new: &Side, key: &Key) -> Vec<CallerChange> {
    if !base.iter().chain(new).all(|file| file.lock_callers.contains_key(key)) {
        return Vec::new();
    }
    let named: std::collections::BTreeSet<&crate::results::LockCaller> =
        base.iter().chain(new).flat_map(|file| top_callers(file, key)).collect();
    let mut changes: Vec<CallerChange> = named
        .into_iter()
        .filter_map(|caller| {
            let runs = |side: &Side| -> Vec<Vec<Placed>> { side.iter().map(|f| f.caller_waits(key, caller)).collect() };
            let (base_waits, new_waits) = (runs(base), runs(new));
            let base_runs: Vec<&[Placed]> = base_waits.iter().map(Vec::as_slice).collect();
            let new_runs: Vec<&[Placed]> = new_waits.iter().map(Vec::as_slice).collect();
            Some(CallerChange {
                caller: caller.name(),
                base_wait_ns_per_op: runs_mean(&base_runs, RunMean::Units)?,
                new_wait_ns_per_op: runs_mean(&new_runs, RunMean::Units)?,
                change: side_change(runs_estimate(&base_runs, false), runs_estimate(&new_runs, false), false),
            })
        })
        .collect();
    let most = |c: &CallerChange| c.base_wait_ns_per_op.max(c.new_wait_ns_per_op);
    changes.sort_by(|a, b| most(b).total_cmp(&most(a)).then_with(|| a.caller.cmp(&b.caller)));
    changes
}

/// The rows of `new` against `base`, matched by key. Every p of them (rates, overheads, memcg
/// costs, lock waits and contentions) is one family for Holm: the chance that any row of an A/A pair is called
/// significant stays at 5%.
pub fn compare(base: &Side, new: &Side) -> Vec<Change> {
    let mut changes = Vec::new();
    let (first_base, first_new) = (&base[0], &new[0]);
    for key in first_base.rates.keys() {
        if !first_new.rates.contains_key(key) {
            continue;
        }
        let (Some(b), Some(n)) =
            (side_mean(base, rates, key, RunMean::Slices), side_mean(new, rates, key, RunMean::Slices))
        else {
            continue;
        };
        // The CV over every slice of the side's runs, not its first run's alone.
        let slices = |side: &Side| -> Vec<f64> {
            side.iter().filter_map(|f| f.rates.get(key)).flat_map(|p| values(p)).collect()
        };
        let (Some(b_cv), Some(n_cv)) = (summarize(&slices(base)), summarize(&slices(new))) else {
            continue;
        };
        // The overhead is the cost on CPU, so it is known only where every file has on-CPU
        // times; else it is unknown (`differences` says which file lacks them), never a
        // throughput ratio put in its place.
        let from_cpu = base.iter().chain(new).all(|file| !file.without_cpu_cost.contains(key));
        let overhead_mean =
            |side: &Side| side_mean(side, overheads, key, RunMean::Overhead).filter(|_| from_cpu).map(|m| 100.0 * m);
        let estimate = |side: &Side| side_estimate(side, overheads, key, true).filter(|_| from_cpu);
        let change = side_change(estimate(base), estimate(new), true);
        // A rate carries the machine's speed, which drifts between runs beyond what one run's
        // instances show (the baseline's rate scattered 2.3x its stated error from run to run
        // on the development VM, quiet and bursty alike; a ratio within a run cancels it):
        // rates are tested over runs only.
        let rate = (base.len() > 1 && new.len() > 1)
            .then(|| side_change(side_estimate(base, rates, key, true), side_estimate(new, rates, key, true), true))
            .flatten();
        let percent = |ratio: f64| 100.0 * (ratio - 1.0);
        changes.push(Change {
            workload: key.workload.clone(),
            mode: key.mode.clone(),
            tasks: key.tasks,
            placement: key.placement.name().to_string(),
            // A side of several runs is named by all its files.
            new_file: new.iter().map(|f| f.name.as_str()).collect::<Vec<_>>().join(","),
            base_runs: base.len(),
            new_runs: new.len(),
            base_mean: b,
            new_mean: n,
            change_pct: 100.0 * (n - b) / b,
            rate_p_holm: rate.map(|c| c.p),
            base_cv_pct: b_cv.measured(b_cv.cv_pct),
            new_cv_pct: n_cv.measured(n_cv.cv_pct),
            base_overhead_pct: overhead_mean(base),
            new_overhead_pct: overhead_mean(new),
            overhead_change_pct: change.map(|c| percent(c.change)),
            overhead_change_low_pct: change.map(|c| percent(c.low)),
            overhead_change_high_pct: change.map(|c| percent(c.high)),
            overhead_p_holm: change.map(|c| c.p),
            lkp_metric: lkp::per_task_metric(&key.mode),
            base_per_task_ops: lkp::per_task_ops(b, key.tasks as usize),
            new_per_task_ops: lkp::per_task_ops(n, key.tasks as usize),
            base_scalability: scalability(first_base, key),
            new_scalability: scalability(first_new, key),
            unit: unit_of(first_new, key),
            // The memcg cost and the lock figures: `fill_memcg`, `fill_locks`.
            ..Change::default()
        });
        if let Some(change) = changes.last_mut() {
            fill_memcg(change, base, new, key);
            fill_locks(change, base, new, key);
        }
    }
    adjust(&mut changes);
    for change in &mut changes {
        change.significant = match change.rate_p_holm {
            Some(p) if p < 0.05 => Significance::Yes,
            Some(_) => Significance::No,
            None => Significance::Untested,
        };
    }
    changes
}

/// What an operation of the row's workload is, in the singular (`fault`, `loop`, `page`,
/// `op`): the file's `unit` less its plural; a file from before the column counts faults.
fn unit_of(file: &RunFile, key: &Key) -> String {
    let units = file.units.get(&key.workload).map_or("faults", String::as_str);
    units.strip_suffix('s').unwrap_or(units).to_string()
}

/// Replaces every p of the rows (rates, overheads, memcg costs, lock waits and contentions)
/// by its Holm adjustment over all of them together.
fn adjust(changes: &mut [Change]) {
    let families: [fn(&mut Change) -> &mut Option<f64>; 5] = [
        |c| &mut c.rate_p_holm,
        |c| &mut c.overhead_p_holm,
        |c| &mut c.memcg_p_holm,
        |c| &mut c.lock_wait_p_holm,
        |c| &mut c.lock_contentions_p_holm,
    ];
    let mut raw: Vec<(usize, usize, f64)> = Vec::new();
    for (row, change) in changes.iter_mut().enumerate() {
        for (family, p_of) in families.iter().enumerate() {
            if let Some(p) = *p_of(change) {
                raw.push((row, family, p));
            }
        }
    }
    let adjusted = stats::holm(&raw.iter().map(|(_, _, p)| *p).collect::<Vec<_>>());
    for ((row, family, _), p) in raw.into_iter().zip(adjusted) {
        *families[family](&mut changes[row]) = Some(p);
    }
}

/// Two files whose figures mean other things, or the same run twice: what no change between
/// them can show.
fn other_measures(base: &RunFile, new: &RunFile) -> Vec<String> {
    let mut warnings = Vec::new();
    if let (Some(base_depth), Some(new_depth)) = (base.base_depth, new.base_depth)
        && base_depth != new_depth
    {
        let at_true_root =
            if base_depth.min(new_depth) == 0 { " (a baseline at the true root is charged nothing)" } else { "" };
        warnings.push(format!(
            "{} vs {}: the base sits {base_depth} vs {new_depth} level(s) below the true root: a placement of the same name is another number of memcg levels deep{at_true_root}, so its overheads measure other things",
            base.name, new.name
        ));
    }
    if let (Some(base_run), Some(new_run)) = (&base.run_id, &new.run_id)
        && base_run == new_run
        && !base_run.is_empty()
    {
        warnings.push(format!(
            "{} and {} hold the same run ({base_run}): every change is zero by construction",
            base.name, new.name
        ));
    }
    warnings
}

/// What differs between the files' machines and setups, one warning each.
pub fn differences(base: &RunFile, new: &RunFile) -> Vec<String> {
    let mut warnings = Vec::new();
    for (fact, base_value) in &base.facts {
        if let Some(new_value) = new.facts.get(fact)
            && new_value != base_value
        {
            warnings.push(format!("{} vs {}: {fact} differs ({base_value} vs {new_value})", base.name, new.name));
        }
    }
    if let (Some(base_cpus), Some(new_cpus)) = (&base.cpus, &new.cpus)
        && base_cpus != new_cpus
    {
        let list = crate::text::format_cpu_list;
        warnings.push(format!(
            "{} vs {}: the workers ran on other CPUs ({} vs {}): a rate depends on how many CPUs the workers share and which; take runs to compare with the same --cpus",
            base.name,
            new.name,
            list(base_cpus),
            list(new_cpus)
        ));
    }
    warnings.extend(other_measures(base, new));
    for file in [base, new] {
        if file.facts.get("virtualization").is_some_and(|v| v.starts_with("tcg")) {
            warnings.push(format!(
                "{}: measured in an emulated machine (QEMU's TCG, about a twentieth of native speed): its figures show behaviour, not a kernel's speed",
                file.name
            ));
        }
    }
    let matched: Vec<&Key> =
        new.rates.keys().filter(|k| base.rates.contains_key(k) && !k.placement.is_baseline()).collect();
    for file in [base, new] {
        if matched.iter().any(|k| file.without_cpu_cost.contains(k)) {
            warnings.push(format!(
                "{} has no on-CPU times (written before faultscale read them, or a worker's could not be read): the overhead is unknown in the rows it lacks them, and so is its change; the rates are compared all the same",
                file.name
            ));
        }
    }
    for file in [base, new].into_iter().filter(|f| f.overran > 0) {
        warnings.push(format!(
            "{}: {} slice(s) overran their time (stopped or starved) and are left out, as in the run's own table",
            file.name, file.overran
        ));
    }
    for file in [base, new].into_iter().filter(|f| f.left_out > 0) {
        warnings.push(format!(
            "{}: {} slice(s) the run itself left out (disturbed by other load, of a round a stop cut short, or of one missing a placement's slice) are left out here too",
            file.name, file.left_out
        ));
    }
    for file in [base, new].into_iter().filter(|f| f.duplicates > 0) {
        warnings.push(crate::results::duplicates_note(file));
    }
    // Once for a file compared with itself.
    for file in [base, new].into_iter().take(if base.name == new.name { 1 } else { 2 }) {
        warnings.extend(crate::results::trimmed_tail_notes(file));
    }
    for (file, other) in [(base, new), (new, base)] {
        let unmatched: Vec<String> =
            file.rates.keys().filter(|k| !other.rates.contains_key(k)).map(Key::label).collect();
        if !unmatched.is_empty() {
            warnings.push(format!(
                "{}: {} row(s) have no match in {}: {}",
                file.name,
                unmatched.len(),
                other.name,
                named(&unmatched)
            ));
        }
    }
    warnings.extend([base, new].into_iter().filter_map(state_note));
    warnings
}

/// What a file that holds less than a complete run is, as it says (files from before the
/// state say only run_complete=false, which a stop signal wrote).
pub fn state_note(file: &RunFile) -> Option<String> {
    let name = &file.name;
    Some(match &file.state {
        Some(FileState::Complete) => return None,
        Some(FileState::Running) => match file.writer_alive {
            Some(true) => format!(
                "{name}: a checkpoint of a run still going (run_state=running); its rows hold only the slices measured so far"
            ),
            None => format!(
                "{name}: a checkpoint (run_state=running) of a run still going, or of one that never replaced it with the whole file (killed by SIGKILL, or its last write failed); its rows hold only the slices measured by then"
            ),
            Some(false) => format!(
                "{name}: a checkpoint its run never replaced with the whole file (run_state=running, and no run is writing it: killed by SIGKILL, or its last write failed, e.g. on a full disk); its rows hold only the slices measured by then"
            ),
        },
        Some(FileState::Stopped(signal)) => {
            format!("{name}: {signal} ended that run early; its rows hold only the slices it finished")
        }
        Some(FileState::Failed(reason)) => {
            format!("{name}: that run failed ({reason}); its rows hold the slices that did not")
        }
        None if file.incomplete => format!(
            "{name}: a signal ended that run early (run_complete=false); its rows hold only the slices it finished"
        ),
        None => return None,
    })
}

/// What `differences` says of the sides' first files, and what each side's units are: a run
/// of one cgroup instance tests nothing alone. Each warning once: a file compared with itself
/// is one file.
pub fn side_warnings(base: &Side, new: &Side) -> Vec<String> {
    let mut warnings = differences(&base[0], &new[0]);
    for side in [base, new] {
        if let [only] = side
            && only.units() < 2
        {
            warnings.push(one_instance_note(only));
        }
    }
    warnings.extend(lock_notes(base, new));
    warnings.extend(profile_notes(base, new));
    if base.len() > 1 || new.len() > 1 {
        warnings.push(format!(
            "{} new run(s) against {} base run(s): each run is one value, tested over the runs",
            new.len(),
            base.len()
        ));
    }
    let mut said = std::collections::BTreeSet::new();
    warnings.retain(|warning| said.insert(warning.clone()));
    warnings
}

/// A run of one cgroup instance, alone on its side, and why it has one: fixed work
/// (`--iterations`) measures every pass in one, a timed run under 5 s (or `--generations 1`)
/// makes one crew generation.
fn one_instance_note(file: &RunFile) -> String {
    let (why, instead) = match file.fixed_work() {
        true => ("fixed work (--iterations) measures every pass in the one", ""),
        false => ("one crew generation: a run under 5 s, or --generations 1", "measure 5 s or more, or "),
    };
    format!(
        "{}: one run of one cgroup instance ({why}): its interval is its slices', which share that instance's cost and say nothing of the next run's, so its rows are not tested (?); {instead}give several runs a side (FILE,FILE,...)",
        file.name
    )
}

/// The files of both sides, each once: a file compared with itself is one file.
fn distinct_files<'a>(base: &'a Side, new: &'a Side) -> Vec<&'a RunFile> {
    let mut files: Vec<&RunFile> = Vec::new();
    for file in base.iter().chain(new) {
        if !files.iter().any(|seen| seen.name == file.name) {
            files.push(file);
        }
    }
    files
}

/// --locks: one line per file without lock figures where another file has them (lock waits
/// are then compared nowhere, the rest as ever), or where its run asked for them and said why
/// it got none (a JSON file's warning: a CSV file cannot say): unknown, never zero. Files
/// where none has lock figures nor asked: nothing. And one per file with lock figures whose
/// rows lack them in some slice, which `has_locks` leaves uncompared.
pub fn lock_notes(base: &Side, new: &Side) -> Vec<String> {
    let files = distinct_files(base, new);
    let with: Vec<String> = files.iter().filter(|f| !f.lock_waits.is_empty()).map(|f| f.name.clone()).collect();
    let has = if with.len() == 1 { "has" } else { "have" };
    // The rest compares, but not alike: a run with lock figures paid for their records.
    let rest = format!(
        "the rest is, though the rates of {} carry what --locks' records cost where workers contend (3% a fault for two anon workers on one memcg): take rates to compare from runs alike",
        named(&with)
    );
    let mut notes = Vec::new();
    for file in files.iter().filter(|f| f.lock_waits.is_empty()) {
        let name = &file.name;
        notes.push(match (&file.locks_absent, with.is_empty()) {
            (Some(why), true) => format!("{name}: --locks gave that run no lock figures ({why}): unknown, not zero"),
            (Some(why), false) => format!(
                "{name}: --locks gave that run no lock figures ({why}): lock waits are not compared with {}'s; {rest}",
                named(&with)
            ),
            (None, false) if file.csv => format!(
                "{name} carries no lock figures where {} {has} (a CSV file cannot say whether its run asked for --locks, nor why it got none; the run's JSON says): lock waits are not compared; {rest}",
                named(&with)
            ),
            (None, false) => format!(
                "{name} has no lock figures (a run without --locks, or from before it) where {} {has}: lock waits are not compared; {rest}",
                named(&with)
            ),
            (None, true) => continue,
        });
    }
    for file in files.iter().filter(|f| !f.lock_waits.is_empty()) {
        let lacking: Vec<String> = file.rates.keys().filter(|k| !file.has_locks(k)).map(Key::label).collect();
        if !lacking.is_empty() {
            notes.push(format!(
                "{}: {} row(s) lack lock figures in some slice (a run writes lock_contentions_per_kop and lock_wait_ns_per_op for every slice, or for none): {}: their lock waits are not compared; the rest is",
                file.name,
                lacking.len(),
                named(&lacking)
            ));
        }
    }
    // Said only where lock waits are compared at all: where a file has none, nothing is.
    let compared = files.iter().all(|f| !f.lock_waits.is_empty());
    for file in files.iter().filter(|f| compared && !f.lock_waits.is_empty() && f.lock_callers.is_empty()) {
        notes.push(format!(
            "{}: a CSV file names no lock callers (the JSON does): lock waits are compared per placement only",
            file.name
        ));
    }
    notes
}

/// --profile: one line per file of a run without it where another file's run had it. Sampling
/// costs the profiled rate about a twentieth (docs/measuring.md), so their rates differ by more
/// than the kernel's change. Files that cannot say (a CSV without memcg figures): nothing.
pub fn profile_notes(base: &Side, new: &Side) -> Vec<String> {
    let files = distinct_files(base, new);
    let profiled: Vec<String> = files.iter().filter(|f| f.profiled() == Some(true)).map(|f| f.name.clone()).collect();
    if profiled.is_empty() {
        return Vec::new();
    }
    let has = if profiled.len() == 1 { "has" } else { "have" };
    files
        .iter()
        .filter(|f| f.profiled() == Some(false))
        .map(|file| {
            format!(
                "{} is a run without --profile where {} {has} it: memcg costs are not compared; the rest is, though the rates of {} carry what --profile's sampling costs (the profiled rate about 0.95 of the plain one): take rates to compare from runs alike",
                file.name,
                named(&profiled),
                named(&profiled)
            )
        })
        .collect()
}

/// The cost of one memcg level on both sides, and its change with a 95% interval per workload,
/// mode and task count: from one run a side, the runs' own intervals (the half-widths add in
/// quadrature); from several, the runs' figures (Welch's t over the runs).
pub fn level_changes(base: &Side, new: &Side) -> Vec<String> {
    if base.len() > 1 || new.len() > 1 {
        return level_changes_over_runs(base, new);
    }
    let (base, new) = (&base[0], &new[0]);
    let mut lines = Vec::new();
    for (key, b) in &base.per_level {
        let Some(n) = new.per_level.get(key) else { continue };
        let half = |f: &crate::results::LevelFigure| Some((f.high? - f.low?) / 2.0);
        let interval = match (half(b), half(n)) {
            (Some(hb), Some(hn)) => {
                let h = (hb * hb + hn * hn).sqrt();
                let change = n.ns_per_fault - b.ns_per_fault;
                let verdict = if change.abs() > h { "significant" } else { "not significant" };
                format!(" (95% CI {} to {}, {verdict})", signed(change - h, 1), signed(change + h, 1))
            }
            _ => String::new(),
        };
        lines.push(format!(
            "each memcg level ({} {} {}): {:.1} -> {:.1} ns/fault, change {} ns{interval}",
            key.0,
            key.1,
            crate::text::plural(key.2 as usize, "task"),
            b.ns_per_fault,
            n.ns_per_fault,
            signed(n.ns_per_fault - b.ns_per_fault, 1)
        ));
    }
    lines
}

/// `level_changes` with several runs on a side: each run's figure one value.
fn level_changes_over_runs(base: &Side, new: &Side) -> Vec<String> {
    let mut lines = Vec::new();
    for key in base[0].per_level.keys() {
        let figures = |side: &Side| -> Vec<f64> {
            side.iter().filter_map(|file| file.per_level.get(key)).map(|f| f.ns_per_fault).collect()
        };
        let (b, n) = (figures(base), figures(new));
        let (Some(mean_b), Some(mean_n)) = (summarize(&b), summarize(&n)) else { continue };
        let interval = match stats::difference(&b, &n) {
            Some(c) => {
                let verdict = if c.p < 0.05 { "significant" } else { "not significant" };
                let (low, high) = (signed(c.low, 1), signed(c.high, 1));
                format!(" (95% CI {low} to {high}, {verdict}, over {} and {} runs)", b.len(), n.len())
            }
            None => format!(" (not tested: {} and {} runs)", b.len(), n.len()),
        };
        lines.push(format!(
            "each memcg level ({} {} {}): {:.1} -> {:.1} ns/fault, change {} ns{interval}",
            key.0,
            key.1,
            crate::text::plural(key.2 as usize, "task"),
            mean_b.mean,
            mean_n.mean,
            signed(mean_n.mean - mean_b.mean, 1)
        ));
    }
    lines
}

/// Up to five row labels, then how many more: a sweep's hundred rows stay one line.
fn named(labels: &[String]) -> String {
    const MOST: usize = 5;
    match labels.len().checked_sub(MOST) {
        Some(more) if more > 0 => format!("{} and {more} more", labels[..MOST].join(", ")),
        _ => labels.join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::RunFile;

    const HEADER: &str = "run_id,kernel,host,cgroup_version,workload,mode,tasks,placement,repetition,cpu,faults_per_sec,overhead_vs_baseline,cpu_ns_per_fault,generation\n";
    /// A file from before on-CPU times and the overhead column: the rate ratio in its place.
    const OLD_HEADER: &str = "run_id,kernel,host,cgroup_version,workload,mode,tasks,placement,repetition,cpu,faults_per_sec,ratio_vs_root,generation\n";

    /// Each side one run, as a slice.
    fn one(file: &RunFile) -> &Side {
        std::slice::from_ref(file)
    }

    /// A file of `rows` (placement, round, rate, rate over the baseline's), its workers on
    /// their CPUs the whole slice: the overhead is the inverse of the rate ratio.
    fn csv_file(name: &str, kernel: &str, rows: &[(&str, u32, f64, f64)]) -> RunFile {
        let mut text = HEADER.to_string();
        for (placement, round, rate, ratio) in rows {
            let overhead = if *placement == "root" { String::new() } else { (1.0 / ratio).to_string() };
            // Each file its own run: the run_id is the file's name; each round its own
            // generation (cgroup instance).
            let cost = 2e9 / rate;
            text +=
                &format!("{name},{kernel},h,v1,anon,process,2,{placement},{round},,{rate},{overhead},{cost},{round}\n");
            // A per-CPU row that must be ignored.
            text += &format!("{name},{kernel},h,v1,anon,process,2,{placement},{round},0,1,,,{round}\n");
        }
        RunFile::from_csv(name.into(), &text).unwrap()
    }

    fn old_csv_file(name: &str, kernel: &str, rows: &[(&str, u32, f64, f64)]) -> RunFile {
        let mut text = OLD_HEADER.to_string();
        for (placement, round, rate, ratio) in rows {
            text += &format!("{name},{kernel},h,v1,anon,process,2,{placement},{round},,{rate},{ratio},{round}\n");
        }
        RunFile::from_csv(name.into(), &text).unwrap()
    }

    #[test]
    fn the_per_level_cost_changes_with_its_interval() {
        let figure = |ns: f64, half: f64| crate::results::LevelFigure {
            ns_per_fault: ns,
            low: Some(ns - half),
            high: Some(ns + half),
        };
        let key = ("anon".to_string(), "process".to_string(), 2);
        let (mut base, mut new) = (RunFile::default(), RunFile::default());
        (base.name, new.name) = ("a.csv".into(), "b.csv".into());
        base.per_level.insert(key.clone(), figure(20.0, 3.0));
        new.per_level.insert(key.clone(), figure(30.0, 4.0));
        let lines = level_changes(one(&base), one(&new));
        // Half-widths 3 and 4 add to 5: a change of 10 is outside +-5.
        assert_eq!(
            lines,
            [
                "each memcg level (anon process 2 tasks): 20.0 -> 30.0 ns/fault, change +10.0 ns (95% CI +5.0 to +15.0, significant)"
            ]
        );
        new.per_level.insert(key, figure(24.0, 4.0));
        assert!(level_changes(one(&base), one(&new))[0].ends_with("not significant)"));
        assert!(level_changes(one(&base), one(&RunFile::default())).is_empty());
    }

    #[test]
    fn a_known_slowdown_is_significant_and_noise_is_not() {
        let base = csv_file(
            "a.csv",
            "6.1",
            &[
                ("root", 1, 1000.0, 1.0),
                ("child", 1, 900.0, 0.9),
                ("root", 2, 1010.0, 1.0),
                ("child", 2, 909.0, 0.9),
                ("root", 3, 990.0, 1.0),
                ("child", 3, 891.0, 0.9),
            ],
        );
        // Child 10% slower than before, the baseline unchanged within noise.
        let new = csv_file(
            "b.csv",
            "6.2",
            &[
                ("root", 1, 1005.0, 1.0),
                ("child", 1, 804.0, 0.8),
                ("root", 2, 995.0, 1.0),
                ("child", 2, 796.0, 0.8),
                ("root", 3, 1000.0, 1.0),
                ("child", 3, 800.0, 0.8),
            ],
        );
        let changes = compare(one(&base), one(&new));
        assert_eq!(changes.len(), 2);
        let baseline = &changes[0];
        assert_eq!(baseline.placement, "root");
        assert!(baseline.change_pct.abs() < 1.0);
        // One run a side: the rates are not tested (the machine's drift between runs is
        // beyond what one run shows), the overhead is.
        assert_eq!(baseline.significant, Significance::Untested);
        let child = &changes[1];
        assert!((child.change_pct - 100.0 * (800.0 - 900.0) / 900.0).abs() < 1e-9);
        assert_eq!(child.significant, Significance::Untested);
        assert!((child.base_overhead_pct.unwrap() - 100.0 / 0.9).abs() < 1e-9);
        assert!((child.new_overhead_pct.unwrap() - 125.0).abs() < 1e-9);
        assert!((child.overhead_change_pct.unwrap() - 100.0 * (1.25 * 0.9 - 1.0)).abs() < 1e-9);
        assert!(child.overhead_change_low_pct.unwrap() > 0.0 && child.overhead_p_holm.unwrap() < 0.05);
        let warnings = differences(&base, &new);
        assert_eq!(warnings, vec!["a.csv vs b.csv: kernel differs (6.1 vs 6.2)".to_string()]);
        // The same base from before on-CPU times: its rate ratio is no overhead, so the
        // overhead and its change are unknown, and said so; the rates still compare.
        let rows: Vec<(&str, u32, f64, f64)> =
            (1..=3).flat_map(|round| [("root", round, 1000.0, 1.0), ("child", round, 900.0, 0.9)]).collect();
        let old = old_csv_file("old.csv", "6.1", &rows);
        let child = compare(one(&old), one(&new)).into_iter().find(|c| c.placement == "child").unwrap();
        assert_eq!((child.base_overhead_pct, child.new_overhead_pct, child.overhead_change_pct), (None, None, None));
        assert!((child.change_pct - 100.0 * (800.0 - 900.0) / 900.0).abs() < 1e-9);
        let said = differences(&old, &new);
        assert!(said.iter().any(|d| d.starts_with("old.csv has no on-CPU times")), "{said:?}");
        assert!(said.iter().any(|d| d.contains("the overhead is unknown")), "{said:?}");
        assert!(!said.iter().any(|d| d.starts_with("b.csv has no on-CPU times")), "{said:?}");
    }

    #[test]
    fn a_faster_kernel_is_significant_too_and_single_runs_are_marked() {
        let base =
            csv_file("a.csv", "6.1", &[("root", 1, 100.0, 1.0), ("root", 2, 101.0, 1.0), ("root", 3, 99.0, 1.0)]);
        let new =
            csv_file("b.csv", "6.1", &[("root", 1, 120.0, 1.0), ("root", 2, 121.0, 1.0), ("root", 3, 119.0, 1.0)]);
        // Two runs a side: the rate is tested over the runs.
        let again = |name: &str, rate: f64| {
            csv_file(name, "6.1", &[("root", 1, rate, 1.0), ("root", 2, rate + 1.0, 1.0), ("root", 3, rate - 1.0, 1.0)])
        };
        let (bases, news) = ([base, again("a2.csv", 100.5)], [new, again("b2.csv", 120.4)]);
        let c = &compare(&bases, &news)[0];
        assert!(c.change_pct > 19.0 && c.significant == Significance::Yes, "{c:?}");
        assert!(c.base_cv_pct.unwrap() > 0.0 && c.new_cv_pct.unwrap() > 0.0);
        let same = &compare(&bases, &[again("c.csv", 100.2), again("c2.csv", 100.3)])[0];
        assert_eq!(same.significant, Significance::No, "{same:?}");
        let (base, new) = (&bases[0], &news[0]);
        assert_eq!(compare(one(base), one(new))[0].significant, Significance::Untested, "one run a side");
        let single = csv_file("c.csv", "6.1", &[("root", 1, 120.0, 1.0)]);
        let c = &compare(one(base), one(&single))[0];
        assert_eq!(c.significant, Significance::Untested);
        // One slice has no spread: its CV is absent, not 0%.
        assert_eq!(c.new_cv_pct, None);
        assert!(c.base_cv_pct.is_some());
        assert!(differences(base, new).is_empty());
    }

    #[test]
    fn files_of_other_base_depths_or_of_one_run_are_warned_of() {
        let rows = [("root", 1, 100.0, 1.0), ("child", 1, 90.0, 0.9)];
        let (mut base, mut new) = (csv_file("a.csv", "6.1", &rows), csv_file("b.csv", "6.1", &rows));
        (base.base_depth, new.base_depth) = (Some(0), Some(3));
        let warnings = differences(&base, &new);
        assert!(
            warnings.iter().any(|w| w.contains("the base sits 0 vs 3 level(s) below the true root")
                && w.contains("a baseline at the true root is charged nothing")),
            "{warnings:?}"
        );
        new.base_depth = Some(0);
        assert!(differences(&base, &new).is_empty());
        new.run_id = base.run_id.clone();
        assert_eq!(
            differences(&base, &new),
            ["a.csv and b.csv hold the same run (a.csv): every change is zero by construction"]
        );
    }

    #[test]
    fn figures_from_an_emulated_machine_are_flagged_as_no_speeds() {
        let rows = [("root", 1, 100.0, 1.0), ("root", 2, 101.0, 1.0)];
        let (mut base, mut new) = (csv_file("a.json", "6.1", &rows), csv_file("b.json", "6.1", &rows));
        base.facts.insert("virtualization", "tcg (Standard PC (Q35 + ICH9, 2009))".into());
        new.facts.insert("virtualization", "tcg (Standard PC (Q35 + ICH9, 2009))".into());
        let warnings = differences(&base, &new);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].starts_with("a.json: measured in an emulated machine (QEMU's TCG"), "{warnings:?}");
        new.facts.insert("virtualization", "kvm".into());
        let warnings = differences(&base, &new);
        assert!(warnings.iter().any(|w| w.contains("virtualization differs")), "{warnings:?}");
        assert_eq!(warnings.iter().filter(|w| w.contains("emulated")).count(), 1, "{warnings:?}");
    }

    #[test]
    fn memcg_cost_changes_are_tested_like_the_overhead() {
        let file = |name: &str, memcg: [f64; 3]| {
            let mut text = String::from(
                "workload,mode,tasks,placement,cpu,faults_per_sec,overhead_vs_baseline,memcg_ns_per_fault,generation\n",
            );
            for (slice, ns) in memcg.iter().enumerate() {
                text += &format!("anon,process,2,base,,{},,{ns},{}\n", 1000 + slice, slice + 1);
            }
            RunFile::from_csv(name.into(), &text).unwrap()
        };
        let (base, worse) = (file("a.csv", [100.0, 102.0, 98.0]), file("b.csv", [130.0, 131.0, 129.0]));
        let change = &compare(one(&base), one(&worse))[0];
        assert_eq!((change.base_memcg_ns, change.new_memcg_ns), (Some(100.0), Some(130.0)));
        assert!((change.memcg_ns_change.unwrap() - 30.0).abs() < 1e-9);
        assert!(change.memcg_ns_change_low.unwrap() > 0.0 && change.memcg_p_holm.unwrap() < 0.05);
        let same = &compare(one(&base), one(&file("c.csv", [101.0, 99.0, 100.0])))[0];
        assert!(same.memcg_ns_change_low.unwrap() < 0.0 && same.memcg_ns_change_high.unwrap() > 0.0);
    }

    #[test]
    fn lkp_names_per_task_ops_and_scalability_at_the_largest_count() {
        let sweep = |name: &str, mode: &str, at_one: f64, at_four: f64| {
            let mut text =
                String::from("workload,mode,tasks,placement,cpu,faults_per_sec,overhead_vs_baseline,generation\n");
            for slice in 0..3 {
                text += &format!("anon,{mode},1,base,,{},,{}\n", at_one + slice as f64, slice + 1);
                text += &format!("anon,{mode},4,base,,{},,{}\n", at_four + slice as f64, slice + 1);
            }
            RunFile::from_csv(name.into(), &text).unwrap()
        };
        let (base, new) = (sweep("a.csv", "process", 100.0, 300.0), sweep("b.csv", "process", 100.0, 200.0));
        let changes = compare(one(&base), one(&new));
        let at = |tasks: u64| changes.iter().find(|c| c.tasks == tasks).unwrap();
        assert_eq!(at(4).lkp_metric, "per_process_ops");
        assert!((at(4).base_per_task_ops - 301.0 / 4.0).abs() < 1e-9);
        // Scalability: the rate at 4 tasks over 4x the rate at 1 task, only at the largest count.
        assert!((at(4).base_scalability.unwrap() - 301.0 / 404.0).abs() < 1e-9);
        assert!((at(4).new_scalability.unwrap() - 201.0 / 404.0).abs() < 1e-9);
        assert_eq!((at(1).base_scalability, at(1).new_scalability), (None, None));
        let threads = compare(one(&sweep("c.csv", "thread", 1.0, 2.0)), one(&sweep("d.csv", "thread", 1.0, 2.0)));
        assert!(threads.iter().all(|c| c.lkp_metric == "per_thread_ops"));
    }

    /// A synthetic run of a baseline and a child: `units` cgroup instances of 50 rounds, the
    /// child's overhead 1.1 off by each instance's own offset (SD 0.3%) and each round's noise
    /// (1%); the machine's speed off by the run's own (SD 1%) and each instance's (0.3%).
    fn synthetic_file(name: &str, seed: u64, units: u32) -> RunFile {
        // Seeds scrambled (splitmix64's finalizer): xorshift's first outputs from nearby seeds
        // are alike.
        let mut state = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        state = (state ^ (state >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        state = (state ^ (state >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        state = (state ^ (state >> 31)).max(1);
        let mut gauss = move || {
            let mut sum = 0.0;
            for _ in 0..12 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                sum += (state >> 11) as f64 / (1u64 << 53) as f64;
            }
            sum - 6.0
        };
        let mut file = RunFile::default();
        (file.name, file.run_id) = (name.into(), Some(name.into()));
        let (base, child) =
            (crate::results::key("anon", "process", 2, "base"), crate::results::key("anon", "process", 2, "child"));
        let speed = 0.01 * gauss();
        let mut round = 0;
        for unit in 1..=units {
            let (instance, instance_speed) = (0.003 * gauss(), 0.003 * gauss());
            for _ in 0..50 {
                round += 1;
                let rate = 1e6 * (speed + instance_speed + 0.01 * gauss()).exp();
                let overhead = 1.1 * (instance + 0.01 * gauss()).exp();
                file.rates.entry(base.clone()).or_default().push(Placed { unit, round, value: rate });
                file.rates.entry(child.clone()).or_default().push(Placed { unit, round, value: rate / overhead });
                file.overheads.entry(child.clone()).or_default().push(Placed { unit, round, value: overhead });
            }
        }
        file
    }

    fn any_significant(changes: &[Change]) -> bool {
        changes.iter().any(|c| {
            c.significant == Significance::Yes
                || [c.overhead_p_holm, c.memcg_p_holm].iter().any(|p| p.is_some_and(|p| p < 0.05))
        })
    }

    #[test]
    fn two_runs_of_one_kernel_are_rarely_called_different() {
        // A/A pairs of one run a side with 8 instances each (the run's own interval over its
        // instances, so the machine's speed between runs is beyond it: its rates need runs),
        // and of 4 runs a side: every row included, any row significant in about 5% of pairs.
        let (mut one_run, mut four_runs) = (0, 0);
        for pair in 0..200u64 {
            let (a, b) = (synthetic_file("a", pair * 2 + 1, 8), synthetic_file("b", pair * 2 + 2, 8));
            let overhead = &compare(one(&a), one(&b))[1];
            assert_eq!((overhead.base_runs, overhead.new_runs), (1, 1));
            one_run += usize::from(overhead.overhead_p_holm.unwrap() < 0.05);
            let side = |seed: u64| -> Vec<RunFile> {
                (0..4).map(|run| synthetic_file(&format!("r{seed}-{run}"), seed * 100 + run, 8)).collect()
            };
            let changes = compare(&side(pair * 2 + 1000), &side(pair * 2 + 1001));
            assert_eq!((changes[0].base_runs, changes[0].new_runs), (4, 4));
            four_runs += usize::from(any_significant(&changes));
        }
        eprintln!(
            "of 200 A/A pairs: one run a side, the overhead significant in {one_run}; four runs a side, any row in {four_runs}"
        );
        assert!(one_run <= 20, "one run a side: the overhead significant in {one_run} of 200 A/A pairs");
        assert!(four_runs <= 20, "four runs a side: a row significant in {four_runs} of 200 A/A pairs");
        // A 3% change of the overhead is found from one run a side.
        let (a, mut b) = (synthetic_file("a", 7, 8), synthetic_file("b", 8, 8));
        for placed in b.overheads.values_mut().flatten() {
            placed.value *= 1.03;
        }
        assert!(compare(one(&a), one(&b))[1].overhead_p_holm.unwrap() < 0.05);
    }

    #[test]
    fn one_run_of_one_instance_is_not_tested() {
        let (a, b) = (synthetic_file("a", 1, 1), synthetic_file("b", 2, 8));
        let changes = compare(one(&a), one(&b));
        assert!(changes.iter().all(|c| c.significant == Significance::Untested && c.overhead_p_holm.is_none()));
        assert!(side_warnings(one(&a), one(&b)).iter().any(|w| w.starts_with("a: one run of one cgroup instance")));
        // Two such runs a side are two units.
        let two = [synthetic_file("c", 3, 1), synthetic_file("d", 4, 1)];
        assert!(compare(&two, &two)[1].overhead_p_holm.is_some());
    }

    #[test]
    fn a_sides_overhead_is_its_runs_own_over_unequal_generations() {
        // Generation 1 of two rounds at 1.0, generation 2 of one round at 1.21: the run's own
        // overhead is the geometric mean of the generations' (1.1), not of the slices' (1.066).
        let mut file = synthetic_file("a", 1, 1);
        let child = crate::results::key("anon", "process", 2, "child");
        file.overheads.insert(
            child.clone(),
            vec![
                Placed { unit: 1, round: 1, value: 1.0 },
                Placed { unit: 1, round: 2, value: 1.0 },
                Placed { unit: 2, round: 3, value: 1.21 },
            ],
        );
        let own = 100.0 * stats::overhead_interval(&file.overheads[&child]).unwrap().mean;
        assert!((own - 110.0).abs() < 1e-9, "{own}");
        let changes = compare(one(&file), one(&file));
        let row = changes.iter().find(|c| c.placement == "child").unwrap();
        assert!((row.base_overhead_pct.unwrap() - own).abs() < 1e-9, "{row:?}");
    }

    /// A run of six cgroup instances (one round each) with --locks, written as the JSON and
    /// read back: the baseline waits 10 ns per fault, the child `child_wait` (each with a
    /// round's jitter of +-4%), spread over `child_callers`; each worker on its CPU the whole
    /// slice, so the overhead is known.
    fn lock_file(name: &str, child_wait: f64, child_callers: Callers) -> RunFile {
        use crate::report::fixture::{synthetic_report, with_locks};
        let rates: Vec<(f64, f64)> = (0..6).map(|round| (100_000.0 + 500.0 * round as f64, 90_000.0)).collect();
        let jitter = |round: u32| 1.0 + 0.02 * ((round * 7 % 5) as f64 - 2.0);
        let mut report = with_locks(
            synthetic_report(&rates),
            |placement, round| jitter(round) * if placement == "child" { child_wait } else { 10.0 },
            |placement, _| if placement == "child" { child_callers.to_vec() } else { SPIN.to_vec() },
        );
        report.env.run_id = name.into();
        for worker in report.measurements.iter_mut().flat_map(|m| m.result.workers.iter_mut()) {
            worker.on_cpu_ns = Some(2_000_000_000);
        }
        let mut json = Vec::new();
        crate::export::json::write(&mut json, &report, false).unwrap();
        RunFile::from_json(name.into(), std::str::from_utf8(&json).unwrap()).unwrap()
    }

    type Callers = &'static [(&'static str, &'static str, Option<&'static str>, f64)];
    const SPIN: Callers = &[("spinlock", "try_to_wake_up", Some("swake_up_one"), 1.0)];
    const MMAP: Callers = &[
        ("rwsem:W", "__mmap_region", Some("do_mmap"), 0.75),
        ("spinlock", "try_to_wake_up", Some("swake_up_one"), 0.25),
    ];

    #[test]
    fn lock_waits_change_per_placement_and_per_caller() {
        let (base, new) = (lock_file("a.json", 10.0, SPIN), lock_file("b.json", 50.0, MMAP));
        let changes = compare(one(&base), one(&new));
        let child = changes.iter().find(|c| c.placement == "child").unwrap();
        // 10 -> 50 ns per fault, the jitter alike on both sides: +40 exactly, resolved.
        assert!((child.base_lock_wait_ns_per_op.unwrap() - 10.0).abs() < 0.1, "{child:?}");
        assert!((child.new_lock_wait_ns_per_op.unwrap() - 50.0).abs() < 0.5, "{child:?}");
        assert!((child.lock_wait_ns_per_op_change.unwrap() - 40.0).abs() < 0.5, "{child:?}");
        assert!(child.lock_wait_ns_per_op_change_low.unwrap() > 0.0 && child.lock_wait_p_holm.unwrap() < 0.05);
        assert!(child.lock_contentions_per_kop_change.unwrap() > 0.0, "{child:?}");
        assert_eq!(child.unit, "fault");
        // The union of both files' callers: the rwsem only the new one names, at 75% of its
        // wait; the spinlock at all of the old one's and a quarter of the new one's.
        let callers: Vec<(&str, f64, f64)> = child
            .lock_callers
            .iter()
            .map(|c| (c.caller.as_str(), c.base_wait_ns_per_op, c.new_wait_ns_per_op))
            .collect();
        assert_eq!(callers.len(), 2, "{callers:?}");
        assert_eq!(callers[0].0, "rwsem:W __mmap_region<-do_mmap");
        assert!(callers[0].1 == 0.0 && (callers[0].2 - 37.5).abs() < 0.5, "{callers:?}");
        assert_eq!(callers[1].0, "spinlock try_to_wake_up<-swake_up_one");
        assert!((callers[1].1 - 10.0).abs() < 0.1 && (callers[1].2 - 12.5).abs() < 0.2, "{callers:?}");
        let rwsem = child.lock_callers[0].change.unwrap();
        assert!(rwsem.low > 0.0 && (rwsem.change - 37.5).abs() < 0.5, "{rwsem:?}");
        // The baseline's waits did not move: its change holds 0.
        let baseline = &changes[0];
        assert!(baseline.lock_wait_ns_per_op_change_low.unwrap() < 0.0, "{baseline:?}");
        assert!(baseline.lock_wait_ns_per_op_change_high.unwrap() > 0.0, "{baseline:?}");
        assert!(lock_notes(one(&base), one(&new)).is_empty());
        // From a CSV file the figures per placement compare; its callers are unknown, not 0.
        let mut csv = Vec::new();
        let report = crate::report::fixture::with_locks(
            crate::report::fixture::synthetic_report(&[(100_000.0, 90_000.0); 6]),
            |_, _| 10.0,
            |_, _| SPIN.to_vec(),
        );
        crate::export::csv::write_rows(&mut csv, &crate::export::csv::rows(&report, false)).unwrap();
        let csv = RunFile::from_csv("c.csv".into(), std::str::from_utf8(&csv).unwrap()).unwrap();
        let child = compare(one(&csv), one(&new)).into_iter().find(|c| c.placement == "child").unwrap();
        assert!((child.lock_wait_ns_per_op_change.unwrap() - 40.0).abs() < 1.0, "{child:?}");
        assert!(child.lock_callers.is_empty(), "{child:?}");
        assert_eq!(
            lock_notes(one(&csv), one(&new)),
            ["c.csv: a CSV file names no lock callers (the JSON does): lock waits are compared per placement only"]
        );
        // Against a file with no lock figures, lock waits compare nowhere: no note says they
        // compare per placement (before, that one followed the note saying they do not).
        let mut plain = crate::report::fixture::synthetic_report(&[(100_000.0, 90_000.0); 6]);
        plain.env.run_id = "plain".into();
        let mut json = Vec::new();
        crate::export::json::write(&mut json, &plain, false).unwrap();
        let plain = RunFile::from_json("plain.json".into(), std::str::from_utf8(&json).unwrap()).unwrap();
        let notes = lock_notes(one(&csv), one(&plain));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].starts_with("plain.json has no lock figures") && notes[0].contains("the rates of c.csv carry")
        );
    }

    #[test]
    fn a_file_without_lock_figures_is_said_and_the_rest_compares() {
        use crate::report::fixture::synthetic_report;
        let with = lock_file("a.json", 10.0, SPIN);
        let written = |report: &crate::report::Report, name: &str| {
            let mut json = Vec::new();
            crate::export::json::write(&mut json, report, false).unwrap();
            RunFile::from_json(name.into(), std::str::from_utf8(&json).unwrap()).unwrap()
        };
        let mut plain = synthetic_report(&[(100_000.0, 90_000.0); 6]);
        plain.env.run_id = "plain".into();
        let without = written(&plain, "plain.json");
        // Asked, and the events could not be opened: the run's warning says why.
        let mut refused = synthetic_report(&[(100_000.0, 90_000.0); 6]);
        refused.env.run_id = "refused".into();
        let why = "/sys/kernel/tracing holds no tracefs events";
        refused.warnings.push(crate::report::Warning::Measurement(crate::run::Notice::LocksUnavailable(why.into())));
        let refused = written(&refused, "refused.json");
        assert_eq!((without.locks_absent.as_deref(), refused.locks_absent.as_deref()), (None, Some(why)));
        for other in [&without, &refused] {
            let changes = compare(one(&with), one(other));
            assert_eq!(changes.len(), 2);
            assert!(changes.iter().all(|c| c.base_lock_wait_ns_per_op.is_none() && c.lock_callers.is_empty()));
            assert!(changes.iter().all(|c| c.lock_wait_p_holm.is_none() && c.base_overhead_pct.is_none()));
        }
        assert_eq!(
            lock_notes(one(&with), one(&without)),
            [
                "plain.json has no lock figures (a run without --locks, or from before it) where a.json has: lock waits are not compared; the rest is, though the rates of a.json carry what --locks' records cost where workers contend (3% a fault for two anon workers on one memcg): take rates to compare from runs alike"
            ]
        );
        assert_eq!(
            lock_notes(one(&refused), one(&with)),
            [format!(
                "refused.json: --locks gave that run no lock figures ({why}): lock waits are not compared with a.json's; the rest is, though the rates of a.json carry what --locks' records cost where workers contend (3% a fault for two anon workers on one memcg): take rates to compare from runs alike"
            )]
        );
        assert_eq!(
            lock_notes(one(&refused), one(&without)),
            [format!("refused.json: --locks gave that run no lock figures ({why}): unknown, not zero")]
        );
        assert!(lock_notes(one(&without), one(&without)).is_empty());
        assert!(side_warnings(one(&refused), one(&without)).iter().any(|w| w.contains("unknown, not zero")));
        // A CSV file cannot say whether its run asked for --locks, nor why it got none: the
        // refused run's CSV is said to carry none, not to come from a run without --locks.
        let mut csv = Vec::new();
        let refused_report = synthetic_report(&[(100_000.0, 90_000.0); 6]);
        crate::export::csv::write_rows(&mut csv, &crate::export::csv::rows(&refused_report, false)).unwrap();
        let csv = RunFile::from_csv("refused.csv".into(), std::str::from_utf8(&csv).unwrap()).unwrap();
        assert_eq!(
            lock_notes(one(&with), one(&csv)),
            [
                "refused.csv carries no lock figures where a.json has (a CSV file cannot say whether its run asked for --locks, nor why it got none; the run's JSON says): lock waits are not compared; the rest is, though the rates of a.json carry what --locks' records cost where workers contend (3% a fault for two anon workers on one memcg): take rates to compare from runs alike"
            ]
        );
        // Several files with them: "have".
        let others = [lock_file("b.json", 10.0, SPIN), lock_file("c.json", 10.0, SPIN)];
        assert_eq!(
            lock_notes(one(&without), &others),
            [
                "plain.json has no lock figures (a run without --locks, or from before it) where b.json, c.json have: lock waits are not compared; the rest is, though the rates of b.json, c.json carry what --locks' records cost where workers contend (3% a fault for two anon workers on one memcg): take rates to compare from runs alike"
            ]
        );
    }

    #[test]
    fn a_row_whose_lock_figures_stop_part_way_is_named() {
        // A --locks run's CSV with one slice's contentions wiped: that row's lock line would
        // go without a word.
        let report = crate::report::fixture::with_locks(
            crate::report::fixture::synthetic_report(&[(100_000.0, 90_000.0); 6]),
            |_, _| 10.0,
            |_, _| SPIN.to_vec(),
        );
        let mut rows = crate::export::csv::rows(&report, false);
        let wiped = rows.iter_mut().find(|r| r.placement == "child").unwrap();
        wiped.lock_contentions_per_kop = None;
        let mut csv = Vec::new();
        crate::export::csv::write_rows(&mut csv, &rows).unwrap();
        let csv = RunFile::from_csv("c.csv".into(), std::str::from_utf8(&csv).unwrap()).unwrap();
        let with = lock_file("a.json", 10.0, SPIN);
        let changes = compare(one(&with), one(&csv));
        assert!(changes[0].base_lock_wait_ns_per_op.is_some() && changes[1].base_lock_wait_ns_per_op.is_none());
        let notes = lock_notes(one(&with), one(&csv));
        assert!(
            notes.contains(&"c.csv: 1 row(s) lack lock figures in some slice (a run writes lock_contentions_per_kop and lock_wait_ns_per_op for every slice, or for none): anon process 2t child: their lock waits are not compared; the rest is".to_string()),
            "{notes:?}"
        );
    }

    /// A report's JSON file, read back as compare reads it.
    fn json_file(report: &crate::report::Report, name: &str) -> RunFile {
        let mut json = Vec::new();
        crate::export::json::write(&mut json, report, false).unwrap();
        RunFile::from_json(name.into(), std::str::from_utf8(&json).unwrap()).unwrap()
    }

    #[test]
    fn runs_on_other_cpus_are_warned_of() {
        use crate::report::fixture::synthetic_report;
        let run = |cpus: Vec<usize>, name: &str| {
            let mut report = synthetic_report(&[(100_000.0, 90_000.0); 6]);
            report.env.run_id = name.into();
            report.plan.cpus = cpus;
            report
        };
        let (one, two, two_too) = (run(vec![0], "one"), run(vec![0, 1], "two"), run(vec![1, 0], "two_too"));
        let (one_json, two_json) = (json_file(&one, "one.json"), json_file(&two, "two.json"));
        let said = "one.json vs two.json: the workers ran on other CPUs (0 vs 0-1): a rate depends on how many CPUs the workers share and which; take runs to compare with the same --cpus";
        assert!(
            differences(&one_json, &two_json).iter().any(|w| w == said),
            "{:#?}",
            differences(&one_json, &two_json)
        );
        let cpus_said = |a: &RunFile, b: &RunFile| differences(a, b).iter().any(|w| w.contains("other CPUs"));
        assert!(!cpus_said(&two_json, &json_file(&two_too, "two_too.json")));
        // A CSV file does not say its CPUs: nothing is said.
        let mut csv = Vec::new();
        crate::export::csv::write_rows(&mut csv, &crate::export::csv::rows(&one, false)).unwrap();
        let csv = RunFile::from_csv("one.csv".into(), std::str::from_utf8(&csv).unwrap()).unwrap();
        assert!(!cpus_said(&csv, &two_json) && !cpus_said(&two_json, &csv));
    }

    #[test]
    fn a_profiled_run_against_a_plain_one_is_warned_of() {
        use crate::report::fixture::synthetic_report;
        let run = |name: &str| {
            let mut report = synthetic_report(&[(100_000.0, 90_000.0); 6]);
            report.env.run_id = name.into();
            report
        };
        let mut profiled = run("profiled");
        for m in &mut profiled.measurements {
            m.result.profile = Some(Default::default());
        }
        let (plain, profiled_json) = (json_file(&run("plain"), "plain.json"), json_file(&profiled, "profiled.json"));
        assert_eq!((plain.profiled(), profiled_json.profiled()), (Some(false), Some(true)));
        let said = "plain.json is a run without --profile where profiled.json has it: memcg costs are not compared; the rest is, though the rates of profiled.json carry what --profile's sampling costs (the profiled rate about 0.95 of the plain one): take rates to compare from runs alike";
        for (base, new) in [(&plain, &profiled_json), (&profiled_json, &plain)] {
            let warnings = side_warnings(one(base), one(new));
            assert_eq!(
                warnings.iter().filter(|w| w.contains("--profile")).collect::<Vec<_>>(),
                [said],
                "{warnings:#?}"
            );
        }
        assert!(profile_notes(one(&plain), one(&plain)).is_empty());
        assert!(profile_notes(one(&profiled_json), one(&profiled_json)).is_empty());
        // A CSV file without memcg figures cannot say whether its run was profiled: nothing.
        let mut csv = Vec::new();
        crate::export::csv::write_rows(&mut csv, &crate::export::csv::rows(&run("c"), false)).unwrap();
        let csv = RunFile::from_csv("c.csv".into(), std::str::from_utf8(&csv).unwrap()).unwrap();
        assert_eq!(csv.profiled(), None);
        assert!(profile_notes(one(&csv), one(&profiled_json)).is_empty());
    }

    #[test]
    fn a_file_against_itself_is_warned_of_once() {
        let file = synthetic_file("a.csv", 1, 1);
        let warnings = side_warnings(one(&file), one(&file));
        let mut unique = warnings.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(warnings.len(), unique.len(), "{warnings:#?}");
        assert_eq!(warnings.iter().filter(|w| w.contains("one run of one cgroup instance")).count(), 1);
    }

    #[test]
    fn fixed_work_against_a_timed_run_is_a_settings_difference() {
        use crate::report::fixture::synthetic_report;
        let written = |iterations: Option<u64>, name: &str| {
            let mut report = synthetic_report(&[(100_000.0, 90_000.0); 6]);
            report.env.run_id = name.into();
            report.plan.workload.fixed_iterations = iterations;
            let mut json = Vec::new();
            crate::export::json::write(&mut json, &report, false).unwrap();
            let mut csv = Vec::new();
            crate::export::csv::write_rows(&mut csv, &crate::export::csv::rows(&report, false)).unwrap();
            (
                RunFile::from_json(format!("{name}.json"), std::str::from_utf8(&json).unwrap()).unwrap(),
                RunFile::from_csv(format!("{name}.csv"), std::str::from_utf8(&csv).unwrap()).unwrap(),
            )
        };
        let ((timed, timed_csv), (fixed, fixed_csv)) = (written(None, "timed"), written(Some(100), "fixed"));
        let said = ["a timed run (--duration) vs fixed work (--iterations 100)"];
        for (a, b) in [(&timed, &fixed), (&timed_csv, &fixed), (&timed, &fixed_csv), (&timed_csv, &fixed_csv)] {
            assert_eq!(setting_differences(a, b), said, "{} vs {}", a.name, b.name);
        }
        assert_eq!(setting_differences(&fixed, &timed), ["fixed work (--iterations 100) vs a timed run (--duration)"]);
        assert!(
            setting_differences(&timed, &timed_csv).is_empty() && setting_differences(&fixed, &fixed_csv).is_empty()
        );
        // A fixed-work run has one cgroup instance, and is no "run under 5 s".
        let warnings = side_warnings(one(&fixed), one(&fixed_csv));
        let notes: Vec<&String> = warnings.iter().filter(|w| w.contains("one run of one cgroup instance")).collect();
        assert_eq!(notes.len(), 2, "{warnings:#?}");
        assert!(notes.iter().all(|w| w.contains("(fixed work (--iterations) measures every pass in the one)")));
        assert!(warnings.iter().all(|w| !w.contains("5 s")), "{warnings:#?}");
        assert!(side_warnings(one(&timed), one(&timed)).iter().any(|w| w.contains("a run under 5 s")));
    }

    #[test]
    fn lock_figures_join_the_holm_family() {
        let (base, new) = (lock_file("a.json", 10.0, SPIN), lock_file("b.json", 10.4, SPIN));
        let changes = compare(one(&base), one(&new));
        // Every raw p of the comparison: the child's overhead, and both rows' lock wait and
        // contentions (one run a side: the rates are not tested).
        let raw = |of, key: &Key, log| {
            side_change(side_estimate(one(&base), of, key, log), side_estimate(one(&new), of, key, log), log).unwrap().p
        };
        let keys: Vec<Key> = base.rates.keys().cloned().collect();
        let mut ps = vec![raw(overheads, &keys[1], true)];
        for key in &keys {
            ps.extend([raw(lock_waits, key, false), raw(lock_contentions, key, false)]);
        }
        let adjusted = stats::holm(&ps);
        let child = &changes[1];
        assert_eq!(child.overhead_p_holm, Some(adjusted[0]));
        assert_eq!(
            (changes[0].lock_wait_p_holm, changes[0].lock_contentions_p_holm),
            (Some(adjusted[1]), Some(adjusted[2]))
        );
        assert_eq!((child.lock_wait_p_holm, child.lock_contentions_p_holm), (Some(adjusted[3]), Some(adjusted[4])));
    }
}
