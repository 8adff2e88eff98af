//! --locks per placement: contentions per 1,000 operations and wait ns per operation, each
//! slice's less its baseline's in the same round summed up over cgroup instances as the
//! overhead is (`stats::unit_mean`), a difference and not a ratio (the baseline's wait may be
//! none), and the callers that contended with their share of the wait.

use super::{Measurement, Report};
use crate::measure::locks::LockCounts;
use crate::plan::Placement;
use crate::stats;

/// How many callers a summary names, the longest wait first.
pub const TOP_CALLERS: usize = 5;

/// A difference from the baseline with its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Difference {
    pub mean: f64,
    /// None where there is no spread to take it from (one slice).
    pub half_width: Option<f64>,
    /// Cgroup instances (generations) it was taken over; 1: within one instance only.
    pub units: usize,
}

impl Difference {
    fn of(values: &[stats::Placed]) -> Option<Difference> {
        let mean = stats::unit_mean(values)?;
        Some(Difference { mean: mean.mean, half_width: mean.half_width(), units: mean.units })
    }
}

/// One caller's share of a placement's lock wait.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CallerShare {
    pub caller: String,
    /// The frame that called it (perf lock contention's `caller`).
    pub parent: Option<String>,
    pub kind: String,
    pub contentions: u64,
    pub wait_ns: u64,
    /// Its wait over the placement's whole lock wait.
    pub share: f64,
}

/// --locks: one placement's contentions over its counted slices.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LockSummary {
    /// Over the slices: the mean of each cgroup instance's trimmed mean (`stats::unit_mean`).
    pub contentions_per_kop: f64,
    pub wait_ns_per_op: f64,
    /// The placement's figure less the baseline's in the same round; None for the baseline.
    pub contentions_per_kop_vs_baseline: Option<Difference>,
    pub wait_ns_per_op_vs_baseline: Option<Difference>,
    /// The callers with the longest wait (TOP_CALLERS), over every slice.
    pub callers: Vec<CallerShare>,
    /// Records the kernel dropped (full buffers) and contentions left unpaired, over every slice.
    pub lost: u64,
    pub unpaired: u64,
}

impl Report {
    /// --locks: a placement's lock figures; None where a counted slice has none (not asked,
    /// or the tracepoints could not be opened): absent, never zero.
    pub fn lock_summary(&self, placement: &Placement, tasks: usize) -> Option<LockSummary> {
        let slices: Vec<&Measurement> = self.of(placement, tasks).collect();
        let mut total = LockCounts::default();
        for m in &slices {
            total.add(m.result.locks.as_ref()?);
        }
        // Summed up as the differences are (each instance's trimmed mean, then their mean),
        // so a placement's figure less the baseline's reads near its difference.
        let mean = |of: fn(&Measurement) -> Option<f64>| -> Option<f64> {
            let values: Vec<stats::Placed> = slices.iter().map(|m| Some(m.placed(of(m)?))).collect::<Option<_>>()?;
            Some(stats::unit_mean(&values)?.mean)
        };
        let against = |of: fn(&Measurement) -> Option<f64>| -> Option<Difference> {
            if placement.is_baseline() {
                return None;
            }
            let differences: Vec<stats::Placed> =
                slices.iter().filter_map(|m| Some(m.placed(of(m)? - of(self.baseline_of(m)?)?))).collect();
            Difference::of(&differences)
        };
        let callers = total
            .callers
            .iter()
            .take(TOP_CALLERS)
            .map(|c| CallerShare {
                caller: c.caller.clone(),
                parent: c.parent.clone(),
                kind: c.kind.clone(),
                contentions: c.contentions,
                wait_ns: c.wait_ns,
                share: if total.wait_ns > 0 { c.wait_ns as f64 / total.wait_ns as f64 } else { 0.0 },
            })
            .collect();
        Some(LockSummary {
            contentions_per_kop: mean(Measurement::lock_contentions_per_kop)?,
            wait_ns_per_op: mean(Measurement::lock_wait_ns_per_op)?,
            contentions_per_kop_vs_baseline: against(Measurement::lock_contentions_per_kop),
            wait_ns_per_op_vs_baseline: against(Measurement::lock_wait_ns_per_op),
            callers,
            lost: total.lost,
            unpaired: total.unpaired,
        })
    }
}
