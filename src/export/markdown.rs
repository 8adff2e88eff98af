//! Markdown: `compare` output ready for a mailing-list post or a pull request.

use std::io::Write;

use anyhow::Result;

use super::{mark, overhead_change, pct};
use crate::compare::Change;

pub fn comparison(out: &mut dyn Write, changes: &[Change]) -> Result<()> {
    writeln!(
        out,
        "| workload | mode | tasks | placement | base /s | new /s | change | CV base | CV new | overhead base | overhead new | overhead change (95% CI), Holm p |"
    )?;
    writeln!(out, "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")?;
    for c in changes {
        let cells = [
            c.workload.clone(),
            c.mode.clone(),
            c.tasks.to_string(),
            c.placement.clone(),
            format!("{:.0}", c.base_mean),
            format!("{:.0}", c.new_mean),
            format!("{}%{}", crate::text::signed(c.change_pct, 2), mark(c)),
            pct(c.base_cv_pct),
            pct(c.new_cv_pct),
            pct(c.base_overhead_pct),
            pct(c.new_overhead_pct),
            overhead_change(c),
        ];
        writeln!(out, "| {} |", cells.join(" | "))?;
    }
    writeln!(out, "\n{}", super::COMPARISON_KEY)?;
    lock_tables(out, changes)?;
    writeln!(out, "\nIn LKP's terms:\n\n| base | %change | new | metric | row |\n|---:|---:|---:|---|---|")?;
    for c in changes {
        let row =
            format!("{} {} {} {}", c.workload, c.mode, crate::text::plural(c.tasks as usize, "task"), c.placement);
        let change = |base: f64, new: f64| format!("{}%", crate::text::signed(100.0 * (new - base) / base, 1));
        writeln!(
            out,
            "| {:.0} | {} | {:.0} | will-it-scale.{} | {row} |",
            c.base_per_task_ops,
            change(c.base_per_task_ops, c.new_per_task_ops),
            c.new_per_task_ops,
            c.lkp_metric
        )?;
        if let (Some(base), Some(new)) = (c.base_scalability, c.new_scalability) {
            writeln!(out, "| {base:.4} | {} | {new:.4} | will-it-scale.scalability | {row} |", change(base, new))?;
        }
    }
    Ok(())
}

/// --locks: where a row has lock figures on both sides, its lock wait and contentions per
/// operation, then each caller's lock wait; nothing where none has.
fn lock_tables(out: &mut dyn Write, changes: &[Change]) -> Result<()> {
    if !super::any_locks(changes) {
        return Ok(());
    }
    writeln!(
        out,
        "\n| workload | mode | tasks | placement | lock wait ns/op base | new | change (95% CI), Holm p | contentions/1k ops base | new | change (95% CI), Holm p |"
    )?;
    writeln!(out, "|---|---|---:|---|---:|---:|---:|---:|---:|---:|")?;
    let with_locks = || changes.iter().filter(|c| c.base_lock_wait_ns_per_op.is_some());
    for c in with_locks() {
        let figure = |value: Option<f64>, digits: usize| value.map_or("-".into(), |v| format!("{v:.digits$}"));
        let cells = [
            c.workload.clone(),
            c.mode.clone(),
            c.tasks.to_string(),
            c.placement.clone(),
            figure(c.base_lock_wait_ns_per_op, 1),
            figure(c.new_lock_wait_ns_per_op, 1),
            super::lock_change(c, false),
            figure(c.base_lock_contentions_per_kop, 2),
            figure(c.new_lock_contentions_per_kop, 2),
            super::lock_change(c, true),
        ];
        writeln!(out, "| {} |", cells.join(" | "))?;
    }
    writeln!(out, "\n| row | caller | base ns/op | new ns/op | change (95% CI) |\n|---|---|---:|---:|---:|")?;
    for c in with_locks() {
        let row =
            format!("{} {} {} {}", c.workload, c.mode, crate::text::plural(c.tasks as usize, "task"), c.placement);
        for caller in &c.lock_callers {
            writeln!(
                out,
                "| {row} | `{}` | {:.1} | {:.1} | {} |",
                caller.caller,
                caller.base_wait_ns_per_op,
                caller.new_wait_ns_per_op,
                super::caller_change(caller)
            )?;
        }
    }
    writeln!(out, "\n{}", super::LOCKS_KEY)?;
    Ok(())
}
