//! The run's terminal table: one line per placement, the seed's overhead line per placement
//! beside the baseline. `compare`'s table is comparison.rs.

use std::io::Write;

use anyhow::Result;

use crate::measure::locks::lock_name;
use crate::measure::perf::PerfReading;
use crate::plan::Placement;
use crate::report::locks::Difference;
use crate::report::{Measurement, PlacementSummary, Report};
use crate::run::Mode;
use crate::stats::summarize;
use crate::text::{seconds, signed, thousands};

pub fn write(out: &mut dyn Write, report: &Report) -> Result<()> {
    let columns = Columns::new(report);
    title(out, report, columns.sweep)?;
    settings_lines(out, report, &columns)?;
    column_header(out, report, &columns)?;
    let summaries = report.summaries();
    failure_lines(out, report, &columns)?;
    placement_rows(out, report, &summaries, &columns)?;
    per_cgroup_lines(out, report, &summaries, &columns)?;
    memcg_notes(out, report, &summaries, &columns)?;
    time_notes(out, report, &summaries, &columns)?;
    overran_lines(out, report, &columns)?;
    super::resolution::counted_lines(out, report, &summaries)?;
    overhead_lines(out, report, &summaries, columns.sweep)?;
    super::resolution::control_lines(out, report, &summaries)?;
    super::resolution::level_lines(out, report)?;
    siblings_lines(out, &summaries, columns.sweep)?;
    memcg_lines(out, report, &summaries)?;
    lock_lines(out, report, &summaries, columns.sweep)?;
    if columns.sweep {
        scaling(out, &summaries)?;
    }
    fixed_work(out, &summaries)?;
    for summary in &summaries {
        perf_stat_block(out, report, summary.placement, summary.tasks)?;
    }
    Ok(())
}

/// What the lines of one table share: the column widths, whether a task column leads, and how
/// a cgroup path is shown.
struct Columns<'a> {
    /// The base cgroup. Paths below a base other than the true root are shown relative to it,
    /// the base named once above the table.
    base: &'a str,
    /// A sweep over several task counts: each row starts with its task count.
    sweep: bool,
    name_width: usize,
    path_width: usize,
    /// Every slice has its workers' on-CPU times: the cost column is CPU ns per fault.
    cpu_cost: bool,
}

impl<'a> Columns<'a> {
    fn new(report: &'a Report) -> Self {
        let mut columns = Columns {
            base: report.env.base_cgroup.as_str(),
            sweep: report.plan.task_counts.len() > 1,
            name_width: report.plan.placements.iter().map(|p| p.name.len()).max().unwrap_or(10).max(10),
            path_width: 0,
            cpu_cost: !report.measurements.is_empty()
                && report.measurements.iter().all(|m| m.cpu_ns_per_fault().is_some()),
        };
        columns.path_width =
            report.measurements.iter().map(|m| columns.shown(&m.leaf.cgroup_path).len()).max().unwrap_or(6).max(6);
        columns
    }

    /// `path` as the table shows it: relative to the base as `<base>/...`, whole elsewhere.
    fn shown(&self, path: &str) -> String {
        if self.base == "/" {
            return path.to_string();
        }
        match path.strip_prefix(self.base) {
            Some("") => "<base>".into(),
            Some(rest) => format!("<base>{rest}"),
            None => path.to_string(),
        }
    }

    fn ns_width(&self) -> usize {
        if self.cpu_cost { 14 } else { 9 }
    }

    /// The leading task-count cell of a sweep's rows; nothing without a sweep.
    fn tasks(&self, tasks: &dyn std::fmt::Display) -> String {
        if self.sweep { format!("{tasks:>5} ") } else { String::new() }
    }
}

/// The first line: workload, workers, CPUs, cgroup layout and how the time was cut.
fn title(out: &mut dyn Write, report: &Report, sweep: bool) -> Result<()> {
    let plan = &report.plan;
    let repeat = plan.repeat;
    let env = &report.env;
    let workers = if sweep {
        format!("{} tasks", plan.task_counts.iter().map(|t| t.to_string()).collect::<Vec<_>>().join("/"))
    } else {
        crate::text::plural(plan.task_counts[0], "worker")
    };
    writeln!(
        out,
        "faultscale: {}, {workers}{} on CPUs {}, cgroup {} (memory, {} layout), {} in {} interleaved slice{}{}",
        plan.workload.kind.name,
        if plan.mode == Mode::Thread { " (threads of one process)" } else { "" },
        env.cpus,
        env.cgroup_version,
        match env.layout {
            crate::cgroup::Layout::V2 => "v2",
            crate::cgroup::Layout::V1 => "v1",
            crate::cgroup::Layout::Hybrid => "hybrid",
        },
        match plan.workload.fixed_iterations {
            Some(iterations) => format!("{} iterations per task", thousands(iterations as f64)),
            None => format!("{} per placement", seconds(plan.duration)),
        },
        plan.slices,
        if plan.slices == 1 { "" } else { "s" },
        if repeat > 1 { format!(", {repeat} times") } else { String::new() }
    )?;
    Ok(())
}

/// The lines between the title and the columns: the base cgroup (when not the true root),
/// where the files went, and each knob written with what the kernel read back.
fn settings_lines(out: &mut dyn Write, report: &Report, columns: &Columns) -> Result<()> {
    if columns.base != "/" {
        writeln!(out, "base cgroup: {}", columns.base)?;
    }
    if let Some(files) = &report.files {
        writeln!(out, "files in {files}")?;
    }
    let instances = match report.plan.generations {
        1 => String::new(),
        n => format!(" (and in each of the {n} generations' cgroups)"),
    };
    // Every generation's cgroups get the same knobs: each is said once, at its first instance.
    let mut said = std::collections::BTreeSet::new();
    let levels = |path: &str| path.matches('/').count();
    for knob in &report.knobs {
        if !said.insert((&knob.placement, levels(&knob.cgroup_path), &knob.file, &knob.written, &knob.read_back)) {
            continue;
        }
        let rounded = if knob.read_back != knob.written {
            format!(" (kernel reads back {})", knob.read_back)
        } else {
            String::new()
        };
        writeln!(
            out,
            "knob: {} {}/{} = {}{rounded}{instances}",
            knob.placement,
            columns.shown(&knob.cgroup_path),
            knob.file,
            knob.written
        )?;
    }
    Ok(())
}

fn column_header(out: &mut dyn Write, report: &Report, columns: &Columns) -> Result<()> {
    let plan = &report.plan;
    let (name_width, path_width, ns_width) = (columns.name_width, columns.path_width, columns.ns_width());
    writeln!(
        out,
        "{}{:<name_width$} {:<path_width$} {:>12} {:>10} {:>ns_width$} {:>6}  overhead (95% CI)",
        columns.tasks(&"tasks"),
        "placement",
        "cgroup",
        format!("{}/s", report.unit.name()),
        if columns.sweep || plan.task_counts[0] > plan.cpus.len() { "per task" } else { "per CPU" },
        match columns.cpu_cost {
            true => format!("CPU ns/{}", report.unit.singular()),
            false => format!("ns/{}", report.unit.singular()),
        },
        "+-",
    )?;
    Ok(())
}

/// A line per placement that failed, in place of its row.
fn failure_lines(out: &mut dyn Write, report: &Report, columns: &Columns) -> Result<()> {
    let name_width = columns.name_width;
    for failure in &report.failures {
        writeln!(
            out,
            "{}{:<name_width$} FAILED in {}: {}",
            columns.tasks(&failure.tasks),
            failure.placement.name,
            report.plan.slice_name(failure.round),
            failure.reason
        )?;
    }
    Ok(())
}

/// The table's rows: a placement's rate, per CPU (or task), cost per fault with its relative
/// standard error over the slices, and overhead.
fn placement_rows(
    out: &mut dyn Write,
    report: &Report,
    summaries: &[PlacementSummary],
    columns: &Columns,
) -> Result<()> {
    let (name_width, path_width, ns_width) = (columns.name_width, columns.path_width, columns.ns_width());
    for summary in summaries {
        let rate = summary.faults_per_sec;
        // On CPU where measured (the cost the overhead compares), else from the wall-clock rate.
        let ns_per_fault = if columns.cpu_cost { summary.cpu_ns_per_fault } else { summary.ns_per_fault };
        // The error of the figure beside it: the CPU cost's where that is shown (the rate's
        // spread is wider than the cost's wherever other load took time off the CPU).
        let spread = match columns.cpu_cost {
            true => summary.cpu_ns_per_fault_stats,
            false => Some(rate),
        };
        let error = spread.and_then(|s| s.measured(s.rse_pct)).map_or_else(|| "-".into(), |rse| format!("{rse:.1}%"));
        // The one overhead estimator (`stats::overhead_interval`) over the rounds' placement/
        // baseline CPU ns per fault, the same number as the overhead line below. Without
        // on-CPU times it is unknown, and the overhead line says why.
        let overhead = match (summary.placement.is_baseline(), summary.overhead_vs_baseline) {
            (true, _) => "100%".to_string(),
            (false, Some(interval)) => overhead_text(&interval),
            (false, None) if report.overhead_unknown(summary.placement, summary.tasks).0 > 0 => "unknown".into(),
            (false, None) => "-".into(),
        };
        writeln!(
            out,
            "{}{:<name_width$} {:<path_width$} {:>12} {:>10} {:>ns_width$} {:>6}  {overhead}",
            columns.tasks(&summary.tasks),
            summary.placement.name,
            columns.shown(summary.cgroup_path),
            thousands(rate.mean),
            thousands(rate.mean / summary.tasks as f64),
            ns_per_fault.map_or_else(|| "-".into(), thousands),
            error,
        )?;
    }
    Ok(())
}

/// siblings:N: each sibling cgroup's own rate and task count, a line per placement.
fn per_cgroup_lines(
    out: &mut dyn Write,
    report: &Report,
    summaries: &[PlacementSummary],
    columns: &Columns,
) -> Result<()> {
    let name_width = columns.name_width;
    for summary in summaries.iter().filter(|s| !s.per_cgroup.is_empty()) {
        let parts: Vec<String> = summary
            .per_cgroup
            .iter()
            .map(|c| {
                let name = c.cgroup_path.rsplit('/').next().unwrap_or(&c.cgroup_path);
                format!(
                    "{name} {} ({} task{})",
                    thousands(c.faults_per_sec),
                    c.tasks,
                    if c.tasks == 1 { "" } else { "s" }
                )
            })
            .collect();
        writeln!(
            out,
            "{}{:<name_width$} per cgroup, {}/s: {}",
            columns.tasks(&summary.tasks),
            summary.placement.name,
            report.unit.name(),
            parts.join(", ")
        )?;
    }
    Ok(())
}

/// The memcg counters' note per placement, where the report has one.
fn memcg_notes(out: &mut dyn Write, report: &Report, summaries: &[PlacementSummary], columns: &Columns) -> Result<()> {
    let name_width = columns.name_width;
    for summary in summaries {
        if let Some(note) = report.memcg_note(summary.placement, summary.tasks) {
            writeln!(out, "{}{:<name_width$} memcg: {note}", columns.tasks(&""), summary.placement.name)?;
        }
    }
    Ok(())
}

/// Where a placement's workers were off their CPUs, not runnable, more than 5% of the time
/// (blocked in reclaim, I/O or on a lock, or stopped), the cost on CPU leaves out a real cost:
/// said under the rows, with the throughput ratio beside the overhead. Fixed work is left out:
/// a worker done early is parked, which is no cost.
fn time_notes(out: &mut dyn Write, report: &Report, summaries: &[PlacementSummary], columns: &Columns) -> Result<()> {
    if report.plan.workload.fixed_iterations.is_some() {
        return Ok(());
    }
    let name_width = columns.name_width;
    for summary in summaries {
        let Some(time) = summary.time.filter(|t| t.share(t.blocked_s) > 0.05) else { continue };
        let throughput = match (summary.placement.is_baseline(), summary.throughput_vs_baseline) {
            (false, Some(ratio)) => format!("; throughput ratio {}", overhead_text(&ratio)),
            _ => String::new(),
        };
        writeln!(
            out,
            "{}{:<name_width$} time: on CPU {:.0}%, waiting for a CPU {:.0}%, blocked or stopped {:.0}%, which the CPU cost leaves out{throughput}",
            columns.tasks(&summary.tasks),
            summary.placement.name,
            100.0 * time.share(time.on_cpu_s),
            100.0 * time.share(time.wait_s),
            100.0 * time.share(time.blocked_s),
        )?;
    }
    Ok(())
}

/// Slices that ran past their time (stopped or starved): counted per placement and named up
/// to three, since the statistics leave them out.
fn overran_lines(out: &mut dyn Write, report: &Report, columns: &Columns) -> Result<()> {
    let name_width = columns.name_width;
    for placement in &report.plan.placements {
        let overran: Vec<&Measurement> =
            report.measurements.iter().filter(|m| m.result.overran && &m.placement == placement).collect();
        if overran.is_empty() {
            continue;
        }
        let mut named: Vec<String> =
            overran.iter().take(3).map(|m| report.plan.slice_name_at(m.round, m.tasks)).collect();
        if overran.len() > 3 {
            named.push(format!("{} more", overran.len() - 3));
        }
        let what = match report.plan.workload.fixed_iterations {
            Some(_) => "stopped (Ctrl-Z) during its fixed work".to_string(),
            None => {
                let longest = overran.iter().map(|m| m.result.elapsed_s()).fold(0.0, f64::max);
                format!(
                    "measured up to {longest:.2} s for {} asked (stopped or starved)",
                    seconds(report.plan.slice_duration())
                )
            }
        };
        writeln!(out, "{:<name_width$} {}: OVERRAN, {what}; not comparable", placement.name, named.join(", "))?;
    }
    Ok(())
}

/// The seed's line per placement: the overhead (placement/baseline CPU ns per fault) with its
/// interval and whether it is significant; where on-CPU times are missing, the overhead
/// unknown, and the throughput ratio beside it.
fn overhead_lines(out: &mut dyn Write, report: &Report, summaries: &[PlacementSummary], sweep: bool) -> Result<()> {
    for summary in summaries.iter().filter(|s| !s.placement.is_baseline()) {
        let at = match (sweep, summary.tasks) {
            (false, _) => String::new(),
            (true, 1) => " at 1 task".into(),
            (true, tasks) => format!(" at {tasks} tasks"),
        };
        overhead_line(out, report, summary, &at)?;
        if let Some(line) = waiting_line(summary, &at, report.baseline_name(), report.unit.singular()) {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// --locks: where a placement's lock wait per operation over the baseline's is resolved
/// above 0 (`LockSummary::added_wait`), the overhead comes from lock wait too, said beside the
/// on-CPU figure: how much of the added wait spun (spinlocks and rwlocks: CPU time, inside
/// the on-CPU figure, not added to it) and how much slept (off the CPU), then the caller that
/// holds most of the placement's lock wait (a lock is named by its caller, never by a guessed
/// name): `child: +2.1% on CPU, +72.9 ns/loop waiting on locks (95% CI ...): +2.0 spinning
/// (spinlock, rwlock: on CPU, part of the +2.1%), +70.9 in sleeping locks (rwsem, mutex,
/// pcpu-sem: off CPU once asleep); 88% of child's lock wait in rwsem:W __mmap_region<-do_mmap`.
fn waiting_line(summary: &PlacementSummary, at: &str, baseline: &str, unit: &str) -> Option<String> {
    let locks = summary.locks.as_ref()?;
    let added = locks.added_wait()?;
    let name = &summary.placement.name;
    let on_cpu_change = summary.overhead_vs_baseline.map(|o| format!("{}%", signed(100.0 * (o.mean - 1.0), 1)));
    let on_cpu = match &on_cpu_change {
        Some(change) => format!("{change} on CPU"),
        None => "on CPU unknown (no on-CPU times)".into(),
    };
    let spinning = format!(
        "spinning (spinlock, rwlock: on CPU, {})",
        on_cpu_change.map_or("part of its on-CPU time".into(), |change| format!("part of the {change}"))
    );
    let sleeping = "in sleeping locks (rwsem, mutex, pcpu-sem: off CPU once asleep)";
    let split = match (added.spinning_ns_per_op, added.sleeping_ns_per_op()) {
        (Some(_), Some(0.0)) => format!("all {spinning}"),
        (Some(0.0), Some(_)) => format!("all {sleeping}"),
        (Some(spun), Some(slept)) => format!("{} {spinning}, {} {sleeping}", signed(spun, 1), signed(slept, 1)),
        _ => "how much of it spun on CPU unknown".into(),
    };
    let most = locks.callers.first().filter(|c| c.wait_ns > 0).map_or(String::new(), |c| {
        format!(
            "; {:.0}% of {name}'s lock wait in {}",
            100.0 * c.share,
            lock_name(&c.kind, &c.caller, c.parent.as_deref())
        )
    });
    Some(format!(
        "{name}{at}: {on_cpu}, {} ns/{unit} waiting on locks ({}): {split}{most}",
        signed(added.difference.mean, 1),
        interval_text(added.difference, 1, baseline)
    ))
}

/// A placement's overhead over the baseline with its interval, or, where unknown, why.
fn overhead_line(out: &mut dyn Write, report: &Report, summary: &PlacementSummary, at: &str) -> Result<()> {
    let (lacking, slices) = report.overhead_unknown(summary.placement, summary.tasks);
    let Some(interval) = summary.overhead_vs_baseline else {
        if lacking > 0 {
            let throughput = match summary.throughput_vs_baseline {
                Some(ratio) => format!(": {}", ratio_text(&ratio)),
                None => String::new(),
            };
            writeln!(
                out,
                "{}/{} overhead{at}: unknown, no on-CPU times; the throughput ratio stands beside it{throughput}",
                report.baseline_name(),
                summary.placement.name
            )?;
        }
        return Ok(());
    };
    let ci = interval_note(&interval);
    let throughput = match summary.throughput_vs_baseline {
        Some(throughput) => format!(", throughput ratio {:.1}%", 100.0 * throughput.mean),
        None => String::new(),
    };
    // Slices without on-CPU times have no overhead: it is over the others.
    let over = match lacking {
        0 => String::new(),
        _ => format!("; over the {} of {slices} slices with on-CPU times", slices - lacking),
    };
    // The table carries what a warning on stderr says of this line's counts.
    let names = [summary.placement.name.as_str(), report.baseline_name()];
    let coarse = match report.warnings.iter().find(|w| names.iter().any(|name| w.coarsens(name, summary.tasks))) {
        Some(crate::report::Warning::ShortFixedWork { .. }) => {
            "; not resolved: fixed work under 0.1 s a slice (see the warning)"
        }
        Some(_) => "; not resolved: under ten whole iterations a slice (see the warning)",
        None => "",
    };
    let basis = format!("; from CPU ns per {}{throughput}{over}{coarse}", report.unit.singular());
    writeln!(
        out,
        "{}/{} overhead{at}: {:.1}%{ci}{basis}",
        report.baseline_name(),
        summary.placement.name,
        100.0 * interval.mean
    )?;
    Ok(())
}

/// An overhead line's interval, what its spread came from and whether it excludes no change:
/// `  (95% CI 101.2-103.0% over 3 cgroup instances, significant)`; nothing for one slice.
fn interval_note(interval: &crate::stats::RatioInterval) -> String {
    match (interval.low, interval.high) {
        (Some(low), Some(high)) => format!(
            "  (95% CI {:.1}-{:.1}% {}, {})",
            100.0 * low,
            100.0 * high,
            over_units(interval.units),
            if interval.excludes(1.0) { "significant" } else { "not significant" }
        ),
        _ => String::new(),
    }
}

/// What an interval's spread came from: several cgroup instances hold from run to run; one
/// instance's slices do not (they share its cost).
fn over_units(units: usize) -> String {
    match units {
        0 | 1 => "within one cgroup instance: the next run's may differ by more".into(),
        n => format!("over {n} cgroup instances"),
    }
}

/// siblings:N: its CPU ns per fault over one child cgroup's, the same tasks at the same depth.
fn siblings_lines(out: &mut dyn Write, summaries: &[PlacementSummary], sweep: bool) -> Result<()> {
    for summary in summaries {
        let Some(interval) = summary.siblings_vs_child else { continue };
        let ci = interval_note(&interval);
        writeln!(
            out,
            "child/{} overhead (one cgroup vs {} sibling cgroups, same tasks and depth){}: {:.1}%{ci}",
            summary.placement.name,
            summary.placement.siblings,
            if sweep { format!(" at {}", crate::text::plural(summary.tasks, "task")) } else { String::new() },
            100.0 * interval.mean
        )?;
    }
    Ok(())
}

/// --profile: per placement, the memcg family's share of CPU time and its ns per fault with the
/// interval over slices, the change against the baseline, and the functions that moved most.
fn memcg_lines(out: &mut dyn Write, report: &Report, summaries: &[PlacementSummary]) -> Result<()> {
    let baseline = summaries.iter().find(|s| s.placement.is_baseline());
    for summary in summaries {
        let Some(memcg) = &summary.memcg else { continue };
        let interval = match (memcg.low, memcg.high) {
            (Some(low), Some(high)) => format!(" (95% CI {low:.0}-{high:.0} over slices)"),
            _ => String::new(),
        };
        let versus = match baseline.and_then(|b| b.memcg.as_ref()).filter(|_| !summary.placement.is_baseline()) {
            Some(base) => format!(", {:+.0} ns vs {}", memcg.ns_per_fault - base.ns_per_fault, report.baseline_name()),
            None => String::new(),
        };
        writeln!(
            out,
            "{}: memcg {:.1}% of CPU time, {:.0} ns/{}{interval}{versus}; {} samples",
            summary.placement.name,
            100.0 * memcg.share,
            memcg.ns_per_fault,
            report.unit.singular(),
            thousands(memcg.samples as f64)
        )?;
        if !summary.placement.is_baseline() {
            let moved: Vec<String> = report
                .function_differences(summary.placement, summary.tasks)
                .into_iter()
                .take(3)
                .map(|(function, ns)| format!("{function} {ns:+.0} ns"))
                .collect();
            if !moved.is_empty() {
                writeln!(out, "  most changed per {}: {}", report.unit.singular(), moved.join(", "))?;
            }
        }
    }
    Ok(())
}

/// --locks: per placement, one line: contentions per 1,000 operations and wait ns per
/// operation, each with its difference from the baseline and that difference's interval,
/// and the callers with the most wait and their share of it.
fn lock_lines(out: &mut dyn Write, report: &Report, summaries: &[PlacementSummary], sweep: bool) -> Result<()> {
    let unit = report.unit.singular();
    for summary in summaries {
        let Some(locks) = &summary.locks else { continue };
        let versus = |difference: Option<Difference>, digits: usize| match difference {
            None => String::new(),
            Some(d) => format!(" ({}, {})", signed(d.mean, digits), interval_text(d, digits, report.baseline_name())),
        };
        let callers: Vec<String> = locks
            .callers
            .iter()
            .filter(|c| c.wait_ns > 0)
            .take(3)
            .map(|c| format!("{} {}", caller_share(c.share), lock_name(&c.kind, &c.caller, c.parent.as_deref())))
            .collect();
        writeln!(
            out,
            "locks: {}{}: {:.2} contentions/1k {unit}s{}, {:.1} ns/{unit} waiting on locks{}{}{}",
            summary.placement.name,
            if sweep { format!(" at {}", crate::text::plural(summary.tasks, "task")) } else { String::new() },
            locks.contentions_per_kop,
            versus(locks.contentions_per_kop_vs_baseline, 2),
            locks.wait_ns_per_op,
            versus(locks.wait_ns_per_op_vs_baseline, 1),
            if callers.is_empty() { String::new() } else { format!("; {}", callers.join(", ")) },
            if locks.lost > 0 {
                format!(" ({} records lost: short by them)", thousands(locks.lost as f64))
            } else {
                String::new()
            },
        )?;
    }
    Ok(())
}

/// A caller's share of a placement's lock wait: one that waited at all is never said 0%.
fn caller_share(share: f64) -> String {
    match 100.0 * share {
        percent if percent < 0.5 => "<1%".to_string(),
        percent => format!("{percent:.0}%"),
    }
}

/// A lock figure's difference from the baseline as its interval says it: `95% CI +0.3 to
/// +1.2 vs base, over 4 cgroup instances`, or that one slice gave none.
fn interval_text(d: Difference, digits: usize, baseline: &str) -> String {
    match d.half_width {
        Some(h) => format!(
            "95% CI {} to {} vs {baseline}{}",
            signed(d.mean - h, digits),
            signed(d.mean + h, digits),
            match d.units {
                0 | 1 => ", one cgroup instance".to_string(),
                n => format!(", over {n} cgroup instances"),
            }
        ),
        None => format!("vs {baseline}, one slice: no interval"),
    }
}

/// A throughput ratio with its interval, for the overhead line that has no overhead.
fn ratio_text(ratio: &crate::stats::RatioInterval) -> String {
    match (ratio.low, ratio.high) {
        (Some(low), Some(high)) => {
            format!("{:.1}% (95% CI {:.1}-{:.1}%)", 100.0 * ratio.mean, 100.0 * low, 100.0 * high)
        }
        _ => format!("{:.1}% (one slice: no interval)", 100.0 * ratio.mean),
    }
}

/// An overhead with its interval, as the table column shows it: `109.8% (109.1-110.4)`.
fn overhead_text(interval: &crate::stats::RatioInterval) -> String {
    match (interval.low, interval.high) {
        (Some(low), Some(high)) => format!("{:.1}% ({:.1}-{:.1})", 100.0 * interval.mean, 100.0 * low, 100.0 * high),
        _ => format!("{:.1}% (one slice: no interval)", 100.0 * interval.mean),
    }
}

/// The sweep as the 2011 i_mmap thread reported it: rate, per task, against linear scaling,
/// and the CPU time split that shows contention (sys time climbing).
fn scaling(out: &mut dyn Write, summaries: &[PlacementSummary]) -> Result<()> {
    writeln!(
        out,
        "\nscaling (vs linear = rate / (smallest count's rate x tasks / that count); on-CPU s: all tasks' seconds on their CPUs in one slice (their CPU clocks, exact), the mean over slices; sys: its system share, from /proc's clock-tick user and system times summed over all the placement's slices, as a slice is too short to split):"
    )?;
    writeln!(
        out,
        "{:>5} {:<10} {:>12} {:>10} {:>10} {:>10} {:>10}",
        "tasks", "placement", "rate/s", "per task", "vs linear", "on-CPU s", "sys"
    )?;
    for s in summaries {
        writeln!(
            out,
            "{:>5} {:<10} {:>12} {:>10} {:>10} {:>10} {:>10}",
            s.tasks,
            s.placement.name,
            thousands(s.faults_per_sec.mean),
            thousands(s.faults_per_sec.mean / s.tasks as f64),
            s.vs_linear.map(|r| format!("{:.1}%", 100.0 * r)).unwrap_or("-".into()),
            s.on_cpu_s.map(|v| format!("{v:.3}")).unwrap_or("-".into()),
            s.sys_share.map(|v| format!("{:.0}%", 100.0 * v)).unwrap_or("-".into())
        )?;
    }
    Ok(())
}

/// --iterations, in the shape of the 2011 i_mmap table: per placement a `real` and a `sys`
/// line, one column per task count, each the mean over the slices (each one whole piece of
/// fixed work) with its 95% interval.
fn fixed_work(out: &mut dyn Write, summaries: &[PlacementSummary]) -> Result<()> {
    let Some(first) = summaries.iter().find_map(|s| s.fixed_work) else { return Ok(()) };
    let mut counts: Vec<usize> = Vec::new();
    for s in summaries {
        if !counts.contains(&s.tasks) {
            counts.push(s.tasks);
        }
    }
    writeln!(
        out,
        "\nfixed work, {} iterations per task: real = seconds from the first start to the last finish, sys = the tasks' system seconds, counted in clock ticks (/proc, 10 ms each at USER_HZ 100); mean of {} slice{} (+- 95% CI):",
        thousands(first.iterations_per_task as f64),
        first.elapsed_s.n,
        if first.elapsed_s.n == 1 { "" } else { "s" }
    )?;
    let name_width = summaries.iter().map(|s| s.placement.name.len()).max().unwrap_or(10).max(10);
    let cell = |value: Option<crate::report::MeanInterval>| match value {
        Some(v) => match v.half_width {
            Some(half) => format!("{:.3} +- {:.3}", v.mean, half),
            None => format!("{:.3}", v.mean),
        },
        None => "-".into(),
    };
    write!(out, "{:<name_width$}      ", "tasks")?;
    for tasks in &counts {
        write!(out, " {tasks:>18}")?;
    }
    writeln!(out)?;
    let mut placements: Vec<&Placement> = Vec::new();
    for s in summaries {
        if !placements.contains(&s.placement) {
            placements.push(s.placement);
        }
    }
    for placement in placements {
        for (label, get) in [
            ("real", (|f: &crate::report::FixedWork| f.elapsed_s) as fn(&crate::report::FixedWork) -> _),
            ("sys", |f: &crate::report::FixedWork| f.sys_s),
        ] {
            let name = if label == "real" { placement.name.as_str() } else { "" };
            write!(out, "{name:<name_width$} {label:<5}")?;
            for tasks in &counts {
                let value = summaries
                    .iter()
                    .find(|s| s.placement == placement && s.tasks == *tasks)
                    .and_then(|s| s.fixed_work)
                    .map(|f| get(&f));
                write!(out, " {:>18}", cell(value))?;
            }
            writeln!(out)?;
        }
    }
    Ok(())
}

/// perf stat's block for one placement: counters summed over its workers, averaged over its
/// slices, with perf's `( +- x% )` where there are several.
fn perf_stat_block(out: &mut dyn Write, report: &Report, placement: &Placement, tasks: usize) -> Result<()> {
    let slices: Vec<_> =
        report.of(placement, tasks).filter(|m| m.result.workers.iter().all(|w| w.perf.is_some())).collect();
    let Some(first) = slices.first() else { return Ok(()) };
    // One perf stat line: its name and how to read it from a worker's counters.
    type Line = (&'static str, fn(&PerfReading) -> Option<u64>);
    let sum = |m: &Measurement, get: fn(&PerfReading) -> Option<u64>| -> Option<f64> {
        m.result.workers.iter().map(|w| get(w.perf.as_ref().expect("filtered")).map(|v| v as f64)).sum()
    };
    writeln!(
        out,
        "\n perf counters, {} ({} workers, mean of {} slice{}):",
        placement.name,
        first.result.workers.len(),
        slices.len(),
        if slices.len() == 1 { "" } else { "s" }
    )?;
    let rows: [Line; 6] = [
        ("task-clock", |p| Some(p.task_clock_ns)),
        ("context-switches", |p| Some(p.context_switches)),
        ("cpu-migrations", |p| Some(p.cpu_migrations)),
        ("page-faults", |p| Some(p.page_faults)),
        ("cycles", |p| p.cycles),
        ("instructions", |p| p.instructions),
    ];
    for (name, get) in rows {
        let values: Option<Vec<f64>> = slices.iter().map(|m| sum(m, get)).collect();
        let Some(stats) = values.as_deref().and_then(summarize) else {
            writeln!(out, " {:>18}      {name}", "<not supported>")?;
            continue;
        };
        let error = if stats.n > 1 { format!("  ( +- {:.2}% )", stats.rse_pct) } else { String::new() };
        if name == "task-clock" {
            let cpus = stats.mean / first.result.elapsed_ns as f64;
            writeln!(out, " {:>18} msec {name}  # {cpus:.3} CPUs utilized{error}", format!("{:.2}", stats.mean / 1e6))?;
        } else {
            writeln!(out, " {:>18}      {name}{error}", thousands(stats.mean))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::report::Warning;
    use crate::report::fixture::synthetic_report;

    #[test]
    fn an_overhead_of_coarse_counts_says_so_on_its_own_line() {
        let table = |report: &crate::report::Report| {
            let mut out = Vec::new();
            super::write(&mut out, report).unwrap();
            String::from_utf8(out).unwrap()
        };
        let mut report = synthetic_report(&[(100_000.0, 90_000.0), (100_000.0, 90_000.0)]);
        for worker in report.measurements.iter_mut().flat_map(|m| m.result.workers.iter_mut()) {
            worker.on_cpu_ns = Some(2_000_000_000);
        }
        let line = |text: &str| text.lines().find(|l| l.starts_with("base/child overhead")).map(str::to_string);
        assert!(!line(&table(&report)).unwrap().contains("not resolved"));
        let few = Warning::FewIterations {
            placement: "child".into(),
            tasks: None,
            iterations: 3.0,
            slice_ms: 25.0,
            asked_ms: 25.0,
        };
        report.warnings.push(few);
        let said = line(&table(&report)).unwrap();
        assert!(said.ends_with("; not resolved: under ten whole iterations a slice (see the warning)"), "{said}");
    }

    #[test]
    fn a_caller_that_waited_is_never_said_to_hold_0_percent() {
        // Before: "locks: base: ...; 61% spinlock ..., 0% spinlock try_to_wake_up<-call_timer_fn".
        let report = crate::report::fixture::with_locks(
            synthetic_report(&[(100_000.0, 90_000.0); 6]),
            |_, _| 10.0,
            |_, _| vec![("spinlock", "big", None, 0.999), ("spinlock", "tiny", None, 0.001)],
        );
        let mut out = Vec::new();
        super::write(&mut out, &report).unwrap();
        let table = String::from_utf8(out).unwrap();
        let line = table.lines().find(|l| l.starts_with("locks: child")).unwrap();
        assert!(line.contains("100% spinlock big, <1% spinlock tiny"), "{line}");
    }

    #[test]
    fn a_placement_that_waits_on_locks_says_so_beside_its_on_cpu_figure() {
        use crate::report::fixture::with_locks;
        type Callers = Vec<(&'static str, &'static str, Option<&'static str>, f64)>;
        let mmap = || vec![("rwsem:W", "__mmap_region", Some("do_mmap"), 0.75), ("spinlock", "rcu_core", None, 0.25)];
        let table = |child_wait: fn(u32) -> f64, child_callers: fn() -> Callers| {
            let rates: Vec<(f64, f64)> = (0..6).map(|round| (100_000.0 + 500.0 * round as f64, 90_000.0)).collect();
            let mut report = with_locks(
                synthetic_report(&rates),
                |placement, round| if placement == "child" { child_wait(round) } else { 10.0 },
                |placement, _| match placement {
                    "child" => child_callers(),
                    _ => vec![("spinlock", "rcu_core", None, 1.0)],
                },
            );
            for worker in report.measurements.iter_mut().flat_map(|m| m.result.workers.iter_mut()) {
                worker.on_cpu_ns = Some(2_000_000_000);
            }
            let mut out = Vec::new();
            super::write(&mut out, &report).unwrap();
            String::from_utf8(out).unwrap()
        };
        let line = |text: &str| text.lines().find(|l| l.starts_with("child: ")).map(str::to_string);
        // About 41 ns per fault more than the baseline, give or take 1: resolved, said after the
        // overhead's own line, the lock named by its caller.
        let waits = table(|round| 50.0 + (round % 3) as f64, mmap);
        let said = line(&waits).unwrap();
        // Of the 41 ns, the spinlock's part (a quarter of the child's 51 ns against the
        // baseline's 10) spun on the CPU, inside the +12.5%: 2.75 ns; the rwsem's slept.
        assert!(
            said.starts_with("child: +12.5% on CPU, +41.0 ns/fault waiting on locks (95% CI +40.1 to +41.9")
                && said.ends_with(
                    " vs base, over 6 cgroup instances): +2.8 spinning (spinlock, rwlock: on CPU, part of the +12.5%), +38.2 in sleeping locks (rwsem, mutex, pcpu-sem: off CPU once asleep); 75% of child's lock wait in rwsem:W __mmap_region<-do_mmap"
                ),
            "{said}"
        );
        let after = waits.lines().skip_while(|l| !l.starts_with("base/child overhead")).nth(1);
        assert_eq!(after, Some(said.as_str()), "{waits}");
        // The same wait as the baseline's, give or take: not resolved, not said.
        assert_eq!(line(&table(|round| 10.0 + (round % 3) as f64 - 1.0, mmap)), None);
        // Less lock wait than the baseline's, resolved: no overhead from lock wait either.
        assert_eq!(line(&table(|round| 2.0 + (round % 3) as f64, mmap)), None);
        // Spinlocks alone on both sides: every added ns spun, inside the on-CPU figure.
        let spinning = line(&table(|round| 50.0 + (round % 3) as f64, || vec![("spinlock", "rcu_core", None, 1.0)]));
        assert!(
            spinning.as_deref().unwrap().contains(
                "instances): all spinning (spinlock, rwlock: on CPU, part of the +12.5%); 100% of child's lock wait in spinlock rcu_core"
            ),
            "{spinning:?}"
        );
    }
}
