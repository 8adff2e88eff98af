//! `faultscale compare BASE NEW [MORE...]`: before/after tables from faultscale's own CSV or
//! JSON files, as kernel developers read them in mmtests and lkp reports: per workload, mode,
//! task count and placement, the base and new mean rate, the change with a significance mark
//! (Welch's t at 95%), each side's CV, and the change in the root/child overhead itself.
//! This file matches and tests; export/ formats the result.

use crate::report::lkp;
use crate::results::{FileState, Key, RunFile};
use crate::stats::{self, summarize};

/// Whether a change is significant; written `yes`, `no` and `?` in compare's CSV.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Significance {
    #[serde(rename = "yes")]
    Yes,
    #[serde(rename = "no")]
    No,
    /// A side has a single slice: no spread to test against.
    #[serde(rename = "?")]
    Untested,
}

/// One line of a comparison.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Change {
    pub workload: String,
    pub mode: String,
    pub tasks: u64,
    pub placement: String,
    pub new_file: String,
    pub base_mean: f64,
    pub new_mean: f64,
    pub change_pct: f64,
    /// Whether the rate changed, by Welch's t at 95%.
    pub significant: Significance,
    /// Each side's CV over its slices; None where a side has one slice (no spread to measure).
    pub base_cv_pct: Option<f64>,
    pub new_cv_pct: Option<f64>,
    pub base_overhead_pct: Option<f64>,
    pub new_overhead_pct: Option<f64>,
    /// The overhead's change, new over base (geometric means of the per-slice overheads), in
    /// percent, with its 95% interval (Welch's t on the log overheads).
    pub overhead_change_pct: Option<f64>,
    pub overhead_change_low_pct: Option<f64>,
    pub overhead_change_high_pct: Option<f64>,
    /// Its p-value, Holm-adjusted across the rows compared with the same new file.
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
        .filter_map(|(k, rates)| Some((k.tasks as usize, summarize(rates)?.mean)))
        .collect();
    let largest = sweep.iter().map(|(tasks, _)| *tasks).max()?;
    if largest as u64 != key.tasks {
        return None;
    }
    stats::vs_linear(&sweep, largest)
}

/// Rows of the two files whose settings differ, one line each: comparing them would mix a
/// setting's effect into the kernel's.
pub fn setting_differences(base: &RunFile, new: &RunFile) -> Vec<String> {
    let mut differences = std::collections::BTreeSet::new();
    for (key, base_settings) in &base.settings {
        let Some(new_settings) = new.settings.get(key) else { continue };
        for (setting, base_value) in base_settings {
            if let Some(new_value) = new_settings.get(setting)
                && new_value != base_value
            {
                differences.insert(format!("{setting} {base_value:?} vs {new_value:?}"));
            }
        }
    }
    differences.into_iter().collect()
}

pub fn compare(base: &RunFile, new: &RunFile) -> Vec<Change> {
    let mut changes = Vec::new();
    for (key, base_rates) in &base.rates {
        let Some(new_rates) = new.rates.get(key) else { continue };
        let (Some(b), Some(n)) = (summarize(base_rates), summarize(new_rates)) else { continue };
        // The overhead from the cost on CPU where both files have it; else both from throughput,
        // so a file from before on-CPU times is compared like with like.
        let from_cpu = !base.without_cpu_cost.contains(key) && !new.without_cpu_cost.contains(key);
        let overheads = |file: &RunFile| {
            let ratios = if from_cpu { &file.overheads } else { &file.throughputs };
            ratios.get(key).cloned().unwrap_or_default()
        };
        let (base_overheads, new_overheads) = (overheads(base), overheads(new));
        let overhead = |values: &[f64]| stats::geometric_interval(values).map(|i| 100.0 * i.mean);
        let (base_overhead, new_overhead) = (overhead(&base_overheads), overhead(&new_overheads));
        let change = stats::ratio_change(&base_overheads, &new_overheads);
        let percent = |ratio: f64| 100.0 * (ratio - 1.0);
        let memcg_values = |file: &RunFile| file.memcg_ns.get(key).cloned().unwrap_or_default();
        let memcg_mean = |file: &RunFile| summarize(&memcg_values(file)).map(|s| s.mean);
        let memcg = stats::difference(&memcg_values(base), &memcg_values(new));
        changes.push(Change {
            workload: key.workload.clone(),
            mode: key.mode.clone(),
            tasks: key.tasks,
            placement: key.placement.name().to_string(),
            new_file: new.name.clone(),
            base_mean: b.mean,
            new_mean: n.mean,
            change_pct: 100.0 * (n.mean - b.mean) / b.mean,
            significant: match stats::welch(base_rates, new_rates) {
                Some(w) if w.significant => Significance::Yes,
                Some(_) => Significance::No,
                None => Significance::Untested,
            },
            base_cv_pct: b.measured(b.cv_pct),
            new_cv_pct: n.measured(n.cv_pct),
            base_overhead_pct: base_overhead,
            new_overhead_pct: new_overhead,
            overhead_change_pct: change.map(|c| percent(c.change)),
            overhead_change_low_pct: change.map(|c| percent(c.low)),
            overhead_change_high_pct: change.map(|c| percent(c.high)),
            overhead_p_holm: change.map(|c| c.p),
            base_memcg_ns: memcg_mean(base),
            new_memcg_ns: memcg_mean(new),
            memcg_ns_change: memcg.map(|c| c.change),
            memcg_ns_change_low: memcg.map(|c| c.low),
            memcg_ns_change_high: memcg.map(|c| c.high),
            memcg_p_holm: memcg.map(|c| c.p),
            lkp_metric: lkp::per_task_metric(&key.mode),
            base_per_task_ops: lkp::per_task_ops(b.mean, key.tasks as usize),
            new_per_task_ops: lkp::per_task_ops(n.mean, key.tasks as usize),
            base_scalability: scalability(base, key),
            new_scalability: scalability(new, key),
        });
    }
    // Many rows tested at once: Holm keeps the chance of any false "significant" at 5%.
    adjust(&mut changes, |c| &mut c.overhead_p_holm);
    adjust(&mut changes, |c| &mut c.memcg_p_holm);
    changes
}

/// Replaces one family of p-values by their Holm adjustment across the rows that have one.
fn adjust(changes: &mut [Change], p_of: fn(&mut Change) -> &mut Option<f64>) {
    let raw: Vec<(usize, f64)> = changes.iter_mut().enumerate().filter_map(|(i, c)| p_of(c).map(|p| (i, p))).collect();
    let adjusted = stats::holm(&raw.iter().map(|(_, p)| *p).collect::<Vec<_>>());
    for ((i, _), p) in raw.into_iter().zip(adjusted) {
        *p_of(&mut changes[i]) = Some(p);
    }
}

/// Two files whose figures mean other things, or the same run twice: what no change between
/// them can show.
fn other_measures(base: &RunFile, new: &RunFile) -> Vec<String> {
    let mut warnings = Vec::new();
    if let (Some(base_depth), Some(new_depth)) = (base.base_depth, new.base_depth)
        && base_depth != new_depth
    {
        let root =
            if base_depth.min(new_depth) == 0 { " (a baseline at the true root is charged nothing)" } else { "" };
        warnings.push(format!(
            "{} vs {}: the base sits {base_depth} vs {new_depth} level(s) below the root: a placement of the same name is another number of memcg levels deep{root}, so its overheads measure other things",
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
    for (file, other) in [(base, new), (new, base)] {
        let lacking = |f: &RunFile| matched.iter().any(|k| f.without_cpu_cost.contains(k));
        if lacking(file) && !lacking(other) {
            warnings.push(format!(
                "{} has no on-CPU times (written before faultscale read them, or without schedstat): its overheads are compared with {}'s from throughput",
                file.name, other.name
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

/// The cost of one memcg level in both files, and its change with a 95% interval (the two
/// runs independent: the half-widths add in quadrature), per workload, mode and task count.
pub fn level_changes(base: &RunFile, new: &RunFile) -> Vec<String> {
    let mut lines = Vec::new();
    for (key, b) in &base.per_level {
        let Some(n) = new.per_level.get(key) else { continue };
        let half = |f: &crate::results::LevelFigure| Some((f.high? - f.low?) / 2.0);
        let interval = match (half(b), half(n)) {
            (Some(hb), Some(hn)) => {
                let h = (hb * hb + hn * hn).sqrt();
                let change = n.ns_per_fault - b.ns_per_fault;
                let verdict = if change.abs() > h { "significant" } else { "not significant" };
                format!(" (95% CI {:+.1} to {:+.1}, {verdict})", change - h, change + h)
            }
            _ => String::new(),
        };
        lines.push(format!(
            "each memcg level ({} {} {}): {:.1} -> {:.1} ns/fault, change {:+.1} ns{interval}",
            key.0,
            key.1,
            crate::text::plural(key.2 as usize, "task"),
            b.ns_per_fault,
            n.ns_per_fault,
            n.ns_per_fault - b.ns_per_fault
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

    const HEADER: &str =
        "run_id,kernel,host,cgroup_version,workload,mode,tasks,placement,repetition,cpu,faults_per_sec,ratio_vs_root\n";

    fn csv_file(name: &str, kernel: &str, rows: &[(&str, u32, f64, f64)]) -> RunFile {
        let mut text = HEADER.to_string();
        for (placement, round, rate, ratio) in rows {
            // Each file its own run: the run_id is the file's name.
            text += &format!("{name},{kernel},h,v1,anon,process,2,{placement},{round},,{rate},{ratio}\n");
            // A per-CPU row that must be ignored.
            text += &format!("{name},{kernel},h,v1,anon,process,2,{placement},{round},0,1,\n");
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
        let lines = level_changes(&base, &new);
        // Half-widths 3 and 4 add to 5: a change of 10 is outside +-5.
        assert_eq!(
            lines,
            [
                "each memcg level (anon process 2 tasks): 20.0 -> 30.0 ns/fault, change +10.0 ns (95% CI +5.0 to +15.0, significant)"
            ]
        );
        new.per_level.insert(key, figure(24.0, 4.0));
        assert!(level_changes(&base, &new)[0].ends_with("not significant)"));
        assert!(level_changes(&base, &RunFile::default()).is_empty());
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
        // Child 10% slower than before, root unchanged within noise.
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
        let changes = compare(&base, &new);
        assert_eq!(changes.len(), 2);
        let root = &changes[0];
        assert_eq!(root.placement, "root");
        assert!(root.change_pct.abs() < 1.0);
        assert_eq!(root.significant, Significance::No);
        let child = &changes[1];
        assert!((child.change_pct - 100.0 * (800.0 - 900.0) / 900.0).abs() < 1e-9);
        assert_eq!(child.significant, Significance::Yes);
        assert!((child.base_overhead_pct.unwrap() - 100.0 / 0.9).abs() < 1e-9);
        assert!((child.new_overhead_pct.unwrap() - 125.0).abs() < 1e-9);
        // Files from before the overhead column carry the rate ratio; it reads back inverted.
        assert!((child.overhead_change_pct.unwrap() - 100.0 * (1.25 * 0.9 - 1.0)).abs() < 1e-9);
        assert!(child.overhead_change_low_pct.unwrap() > 0.0 && child.overhead_p_holm.unwrap() < 0.05);
        let warnings = differences(&base, &new);
        assert_eq!(warnings, vec!["a.csv vs b.csv: kernel differs (6.1 vs 6.2)".to_string()]);
    }

    #[test]
    fn a_faster_kernel_is_significant_too_and_single_runs_are_marked() {
        let base =
            csv_file("a.csv", "6.1", &[("root", 1, 100.0, 1.0), ("root", 2, 101.0, 1.0), ("root", 3, 99.0, 1.0)]);
        let new =
            csv_file("b.csv", "6.1", &[("root", 1, 120.0, 1.0), ("root", 2, 121.0, 1.0), ("root", 3, 119.0, 1.0)]);
        let c = &compare(&base, &new)[0];
        assert!(c.change_pct > 19.0 && c.significant == Significance::Yes);
        assert!(c.base_cv_pct.unwrap() > 0.0 && c.new_cv_pct.unwrap() > 0.0);
        let single = csv_file("c.csv", "6.1", &[("root", 1, 120.0, 1.0)]);
        let c = &compare(&base, &single)[0];
        assert_eq!(c.significant, Significance::Untested);
        // One slice has no spread: its CV is absent, not 0%.
        assert_eq!(c.new_cv_pct, None);
        assert!(c.base_cv_pct.is_some());
        assert!(differences(&base, &new).is_empty());
    }

    #[test]
    fn files_of_other_base_depths_or_of_one_run_are_warned_of() {
        let rows = [("root", 1, 100.0, 1.0), ("child", 1, 90.0, 0.9)];
        let (mut base, mut new) = (csv_file("a.csv", "6.1", &rows), csv_file("b.csv", "6.1", &rows));
        (base.base_depth, new.base_depth) = (Some(0), Some(3));
        let warnings = differences(&base, &new);
        assert!(
            warnings.iter().any(|w| w.contains("the base sits 0 vs 3 level(s) below the root")
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
                "workload,mode,tasks,placement,cpu,faults_per_sec,overhead_vs_baseline,memcg_ns_per_fault\n",
            );
            for (slice, ns) in memcg.iter().enumerate() {
                text += &format!("anon,process,2,base,,{},,{ns}\n", 1000 + slice);
            }
            RunFile::from_csv(name.into(), &text).unwrap()
        };
        let (base, worse) = (file("a.csv", [100.0, 102.0, 98.0]), file("b.csv", [130.0, 131.0, 129.0]));
        let change = &compare(&base, &worse)[0];
        assert_eq!((change.base_memcg_ns, change.new_memcg_ns), (Some(100.0), Some(130.0)));
        assert!((change.memcg_ns_change.unwrap() - 30.0).abs() < 1e-9);
        assert!(change.memcg_ns_change_low.unwrap() > 0.0 && change.memcg_p_holm.unwrap() < 0.05);
        let same = &compare(&base, &file("c.csv", [101.0, 99.0, 100.0]))[0];
        assert!(same.memcg_ns_change_low.unwrap() < 0.0 && same.memcg_ns_change_high.unwrap() > 0.0);
    }

    #[test]
    fn lkp_names_per_task_ops_and_scalability_at_the_largest_count() {
        let sweep = |name: &str, mode: &str, at_one: f64, at_four: f64| {
            let mut text = String::from("workload,mode,tasks,placement,cpu,faults_per_sec,overhead_vs_baseline\n");
            for slice in 0..3 {
                text += &format!("anon,{mode},1,base,,{},\n", at_one + slice as f64);
                text += &format!("anon,{mode},4,base,,{},\n", at_four + slice as f64);
            }
            RunFile::from_csv(name.into(), &text).unwrap()
        };
        let (base, new) = (sweep("a.csv", "process", 100.0, 300.0), sweep("b.csv", "process", 100.0, 200.0));
        let changes = compare(&base, &new);
        let at = |tasks: u64| changes.iter().find(|c| c.tasks == tasks).unwrap();
        assert_eq!(at(4).lkp_metric, "per_process_ops");
        assert!((at(4).base_per_task_ops - 301.0 / 4.0).abs() < 1e-9);
        // Scalability: the rate at 4 tasks over 4x the rate at 1 task, only at the largest count.
        assert!((at(4).base_scalability.unwrap() - 301.0 / 404.0).abs() < 1e-9);
        assert!((at(4).new_scalability.unwrap() - 201.0 / 404.0).abs() < 1e-9);
        assert_eq!((at(1).base_scalability, at(1).new_scalability), (None, None));
        let threads = compare(&sweep("c.csv", "thread", 1.0, 2.0), &sweep("d.csv", "thread", 1.0, 2.0));
        assert!(threads.iter().all(|c| c.lkp_metric == "per_thread_ops"));
    }
}
