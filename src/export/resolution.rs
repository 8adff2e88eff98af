//! The table's lines on what the run resolves: the time that counted, the control's interval
//! (what this machine resolves now), and the cost of one memcg level.

use std::io::Write;

use anyhow::Result;

use crate::report::{PlacementSummary, Report};

/// Per task count, the share of each placement's measured time in slices that counted, where
/// any slice did not (overran, disturbed by other load, or of a round a stop cut short).
pub fn counted_lines(out: &mut dyn Write, report: &Report, summaries: &[PlacementSummary]) -> Result<()> {
    for tasks in report.task_counts() {
        let here: Vec<&PlacementSummary> = summaries.iter().filter(|s| s.tasks == tasks).collect();
        let shares: Vec<String> = report
            .plan
            .placements
            .iter()
            .filter_map(|p| Some(format!("{} {:.0}%", p.name, 100.0 * report.counted_share(p, tasks)? + 0.0)))
            .collect();
        let all_counted = report.measurements.iter().filter(|m| m.tasks == tasks).all(|m| report.counted(m));
        if all_counted || here.is_empty() {
            continue;
        }
        let disturbed = report.measurements.iter().any(|m| m.tasks == tasks && m.disturbed());
        let why = match (report.leaves_out_disturbed(tasks), disturbed) {
            (true, _) => "left out: slices that overran, were cut short by a stop, or were disturbed by other load",
            (false, true) => {
                "left out: slices that overran or were cut short by a stop; disturbed ones count (too few rounds to leave them out, or they were most of the slices)"
            }
            (false, false) => "left out: slices that overran or were cut short by a stop",
        };
        let at = if report.plan.task_counts.len() > 1 {
            format!(" at {}", crate::text::plural(tasks, "task"))
        } else {
            String::new()
        };
        writeln!(out, "time counted{at}: {} of the measured time ({why})", shares.join(", "))?;
    }
    Ok(())
}

/// The control's interval, as points either side of 100%: what this machine resolves now.
pub fn control_lines(out: &mut dyn Write, report: &Report, summaries: &[PlacementSummary]) -> Result<()> {
    for summary in summaries.iter().filter(|s| s.placement.control) {
        let Some(interval) = summary.overhead_vs_baseline else { continue };
        let (Some(low), Some(high)) = (interval.low, interval.high) else { continue };
        let at = if report.plan.task_counts.len() > 1 {
            format!(" at {}", crate::text::plural(summary.tasks, "task"))
        } else {
            String::new()
        };
        let verdict = match interval.excludes(1.0) {
            true => "SIGNIFICANT: an A/A difference, so this run's other verdicts are not to be trusted",
            false => "not significant, as it must be",
        };
        writeln!(
            out,
            "control{at}: this machine resolves +-{:.1} points now (the control's 95% CI {:.1}-{:.1}% around 100% by construction; {verdict})",
            100.0 * (high - low) / 2.0,
            100.0 * low,
            100.0 * high
        )?;
    }
    Ok(())
}

/// What one memcg level adds per fault, fitted over the plain depths measured.
pub fn level_lines(out: &mut dyn Write, report: &Report) -> Result<()> {
    for cost in report.level_costs() {
        let at = if report.plan.task_counts.len() > 1 {
            format!(" at {}", crate::text::plural(cost.tasks, "task"))
        } else {
            String::new()
        };
        let depths: Vec<String> = cost.depths.iter().map(u32::to_string).collect();
        let unit = report.unit.singular();
        let fit = |fit: &crate::report::levels::LevelFit| match (fit.low, fit.high) {
            (Some(low), Some(high)) => format!("{:.1} ns/{unit} (95% CI {low:.1} to {high:.1})", fit.ns_per_fault),
            _ => format!("{:.1} ns/{unit} (one round: no interval)", fit.ns_per_fault),
        };
        writeln!(
            out,
            "each memcg level adds {}{at}, CPU ns per {unit} fitted over depths {} in {}{}",
            fit(&cost.cpu),
            depths.join(", "),
            crate::text::plural(cost.cpu.rounds, "round"),
            match cost.cpu.units {
                0 | 1 => ", within one cgroup instance: the next run's may differ by more".to_string(),
                n => format!(", the interval over {n} cgroup instances"),
            }
        )?;
        if let Some(memcg) = &cost.memcg {
            writeln!(out, "  in the memcg family's functions (--profile): {}", fit(memcg))?;
        }
    }
    for tasks in report.level_costs_unknown() {
        let at = match report.plan.task_counts.len() {
            1 => String::new(),
            _ => format!(" at {}", crate::text::plural(tasks, "task")),
        };
        writeln!(
            out,
            "each memcg level's cost{at}: unknown, no on-CPU times (it is fitted over CPU ns per {})",
            report.unit.singular()
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::plan::Placement;
    use crate::report::fixture::synthetic_report;

    #[test]
    fn a_per_level_cost_without_on_cpu_times_is_said_unknown() {
        // The fixture's baseline and child, and a nested:4 measured like the child: three plain
        // depths, none with on-CPU times.
        let mut report = synthetic_report(&[(100_000.0, 90_000.0), (100_000.0, 90_000.0)]);
        let nested = Placement::plain("nested:4".into(), 4);
        report.plan.placements.push(nested.clone());
        let deep: Vec<_> = report
            .measurements
            .iter()
            .filter(|m| m.placement.depth == 1)
            .map(|m| crate::report::Measurement { placement: nested.clone(), ..m.clone() })
            .collect();
        report.measurements.extend(deep);
        let mut out = Vec::new();
        super::level_lines(&mut out, &report).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "each memcg level's cost: unknown, no on-CPU times (it is fitted over CPU ns per fault)\n"
        );
    }
}
