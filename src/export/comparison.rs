//! `compare` on the terminal: the change per row grouped by the new file, then the same rows in
//! LKP's terms (base, %change, new, metric) to quote beside the robot's reports.

use std::io::Write;

use anyhow::Result;

use super::{mark, overhead_change, pct};
use crate::compare::Change;
use crate::results::key;
use crate::text::{signed, thousands};

/// `compare` as a terminal table, grouped by the new file.
pub fn write(out: &mut dyn Write, changes: &[Change]) -> Result<()> {
    let width =
        changes.iter().map(|c| key(&c.workload, &c.mode, c.tasks, &c.placement).label().len()).max().unwrap_or(4);
    writeln!(
        out,
        "{:<width$} {:>12} {:>12} {:>10} {:>7} {:>7} {:>9} {:>9}  overhead change (95% CI), Holm p",
        "row", "base/s", "new/s", "change", "CV base", "CV new", "ovh base", "ovh new"
    )?;
    let mut file = "";
    for c in changes {
        if c.new_file != file {
            file = &c.new_file;
            match (c.base_runs, c.new_runs) {
                (1, 1) => writeln!(out, "[{file}]")?,
                (base, new) => writeln!(out, "[{file}: {new} new run(s) against {base} base run(s)]")?,
            }
        }
        writeln!(
            out,
            "{:<width$} {:>12} {:>12} {:>10} {:>7} {:>7} {:>9} {:>9}  {}",
            key(&c.workload, &c.mode, c.tasks, &c.placement).label(),
            thousands(c.base_mean),
            thousands(c.new_mean),
            format!("{}%{}", crate::text::signed(c.change_pct, 2), mark(c)),
            pct(c.base_cv_pct),
            pct(c.new_cv_pct),
            pct(c.base_overhead_pct),
            pct(c.new_overhead_pct),
            overhead_change(c)
        )?;
        if let (Some(base), Some(new)) = (c.base_memcg_ns, c.new_memcg_ns) {
            let change = match (c.memcg_ns_change, c.memcg_ns_change_low, c.memcg_ns_change_high, c.memcg_p_holm) {
                (Some(v), Some(low), Some(high), Some(p)) => {
                    format!("{} ns ({} to {}) p={p:.3}", signed(v, 1), signed(low, 1), signed(high, 1))
                }
                _ => "-".into(),
            };
            writeln!(out, "{:<width$}   memcg ns/fault {base:.1} -> {new:.1}: {change}", "")?;
        }
        lock_lines(out, c, width)?;
    }
    writeln!(out, "{}", super::COMPARISON_KEY)?;
    if super::any_locks(changes) {
        writeln!(out, "{}", super::LOCKS_KEY)?;
    }
    lkp_terms(out, changes)
}

/// --locks: under a row with lock figures on both sides, its lock wait and contentions per
/// operation on each side with their change, then each caller's lock wait.
fn lock_lines(out: &mut dyn Write, c: &Change, width: usize) -> Result<()> {
    let (Some(base), Some(new)) = (c.base_lock_wait_ns_per_op, c.new_lock_wait_ns_per_op) else { return Ok(()) };
    let unit = &c.unit;
    writeln!(
        out,
        "{:<width$}   lock wait ns/{unit} {base:.1} -> {new:.1}: {}; lock contentions/1k {unit}s {:.2} -> {:.2}: {}",
        "",
        super::lock_change(c, false),
        c.base_lock_contentions_per_kop.unwrap_or_default(),
        c.new_lock_contentions_per_kop.unwrap_or_default(),
        super::lock_change(c, true),
    )?;
    for caller in &c.lock_callers {
        writeln!(
            out,
            "{:<width$}     {}: {:.1} -> {:.1} ns/{unit}, {}",
            "",
            caller.caller,
            caller.base_wait_ns_per_op,
            caller.new_wait_ns_per_op,
            super::caller_change(caller)
        )?;
    }
    Ok(())
}

/// The same rows as an LKP report shows them (base, %change, new, metric), so the figures can
/// be quoted beside the robot's.
fn lkp_terms(out: &mut dyn Write, changes: &[Change]) -> Result<()> {
    writeln!(out, "\nin LKP's terms:")?;
    writeln!(out, "{:>14} {:>9} {:>14}  {:<30} row", "base", "%change", "new", "metric")?;
    for c in changes {
        let label = key(&c.workload, &c.mode, c.tasks, &c.placement).label();
        let line = |base: f64, new: f64, metric: String, digits: usize| -> String {
            format!(
                "{:>14} {:>8}% {:>14}  {metric:<30} {label}",
                if digits == 0 { thousands(base) } else { format!("{base:.digits$}") },
                signed(100.0 * (new - base) / base, 1),
                if digits == 0 { thousands(new) } else { format!("{new:.digits$}") },
            )
        };
        writeln!(
            out,
            "{}",
            line(c.base_per_task_ops, c.new_per_task_ops, format!("will-it-scale.{}", c.lkp_metric), 0)
        )?;
        if let (Some(base), Some(new)) = (c.base_scalability, c.new_scalability) {
            writeln!(out, "{}", line(base, new, "will-it-scale.scalability".into(), 4))?;
        }
    }
    Ok(())
}
