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
    /// Of the lock wait over the baseline's, the share in locks that spin (`spins`): the plain
    /// mean of the rounds' differences in spinning wait over that of the whole wait (plain
    /// means add up, as the trimmed ones of `wait_ns_per_op_vs_baseline` do not). None for the
    /// baseline, and where the whole wait's difference is 0.
    #[serde(skip)]
    pub spinning_share_vs_baseline: Option<f64>,
}

/// A lock wait over the baseline's resolved above 0 (`LockSummary::added_wait`), and how much
/// of it spun.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AddedWait {
    pub difference: Difference,
    /// Its part in locks that spin (spinlock, rwlock): time on the CPU, inside the on-CPU
    /// overhead; the rest (`sleeping_ns_per_op`) in locks that sleep, off the CPU. None where
    /// unknown (`LockSummary::spinning_share_vs_baseline`).
    pub spinning_ns_per_op: Option<f64>,
}

impl AddedWait {
    /// The part in locks that sleep once their first spin fails (rwsem, mutex, pcpu-sem,
    /// rt-mutex): off the CPU while asleep.
    pub fn sleeping_ns_per_op(&self) -> Option<f64> {
        Some(self.difference.mean - self.spinning_ns_per_op?)
    }
}

/// Whether a lock of `kind` (perf lock's name) spins the whole wait, its waiter on its CPU:
/// spinlocks and rwlocks. The others sleep (a mutex or an rwsem spins first while its owner
/// runs; the rt kinds sleep).
pub fn spins(kind: &str) -> bool {
    kind == "spinlock" || kind.starts_with("rwlock:")
}

/// --locks: a slice's wait in locks that spin (`spins`), ns per operation.
fn spinning_wait_ns_per_op(m: &Measurement) -> Option<f64> {
    let operations = m.result.loop_faults();
    let locks = m.result.locks.as_ref()?;
    let spinning: u64 = locks.callers.iter().filter(|c| spins(&c.kind)).map(|c| c.wait_ns).sum();
    (operations > 0).then(|| spinning as f64 / operations as f64)
}

impl LockSummary {
    /// The placement's lock wait ns per operation over the baseline's, where its 95% interval
    /// lies above 0: the placement waits more on locks, so its overhead comes (in part) from lock wait.
    /// None where the difference is not resolved (its interval holds 0, or one slice gave no
    /// interval), where it is a saving, and for the baseline. Its spinning part is CPU time,
    /// which the on-CPU overhead holds already.
    pub fn added_wait(&self) -> Option<AddedWait> {
        let difference = self.wait_ns_per_op_vs_baseline?;
        (difference.mean - difference.half_width? > 0.0).then_some(AddedWait {
            difference,
            spinning_ns_per_op: self.spinning_share_vs_baseline.map(|share| share * difference.mean),
        })
    }
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
        let plain_difference = |of: fn(&Measurement) -> Option<f64>| -> Option<f64> {
            let differences: Vec<f64> =
                slices.iter().filter_map(|m| Some(of(m)? - of(self.baseline_of(m)?)?)).collect();
            Some(stats::summarize(&differences)?.mean).filter(|_| !placement.is_baseline())
        };
        let spinning_share =
            match (plain_difference(spinning_wait_ns_per_op), plain_difference(Measurement::lock_wait_ns_per_op)) {
                (Some(spinning), Some(whole)) if whole != 0.0 => Some(spinning / whole),
                _ => None,
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
            spinning_share_vs_baseline: spinning_share,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(difference: Option<Difference>) -> LockSummary {
        LockSummary {
            contentions_per_kop: 1.0,
            wait_ns_per_op: 20.0,
            contentions_per_kop_vs_baseline: None,
            wait_ns_per_op_vs_baseline: difference,
            callers: Vec::new(),
            lost: 0,
            unpaired: 0,
            spinning_share_vs_baseline: Some(0.25),
        }
    }

    #[test]
    fn only_a_resolved_added_wait_is_an_overhead_from_waiting() {
        let at = |mean: f64, half_width: Option<f64>| summary(Some(Difference { mean, half_width, units: 4 }));
        let resolved = at(8.0, Some(3.0));
        let added = resolved.added_wait().unwrap();
        assert_eq!(Some(added.difference), resolved.wait_ns_per_op_vs_baseline);
        // A quarter of it spun (on CPU), the rest slept.
        assert_eq!((added.spinning_ns_per_op, added.sleeping_ns_per_op()), (Some(2.0), Some(6.0)));
        // An interval that holds 0, one slice's (no interval), a saving, the baseline's (none).
        assert_eq!(at(8.0, Some(8.5)).added_wait(), None);
        let unknown = LockSummary { spinning_share_vs_baseline: None, ..resolved };
        assert_eq!(unknown.added_wait().unwrap().sleeping_ns_per_op(), None);
        assert_eq!(at(8.0, None).added_wait(), None);
        assert_eq!(at(-8.0, Some(3.0)).added_wait(), None);
        assert_eq!(summary(None).added_wait(), None);
    }
}
