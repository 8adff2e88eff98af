//! memcg counters: memory.stat, memory.events (v1: failcnt, oom_control) and pressure stalls.
//!
//! v1's `pgfault` counts the cgroup alone and v2's counts the cgroup with its descendants; for
//! the leaf a placement's workers run in, both are the faults charged there.

use std::path::Path;

use crate::cgroup::fs::stat_value;

/// How many tasks the OOM killer has killed in this cgroup (v2 memory.events, v1
/// memory.oom_control; both name the counter oom_kill).
pub fn oom_kills(cgroup_dir: &Path) -> Option<u64> {
    ["memory.events", "memory.oom_control"]
        .iter()
        .find_map(|file| stat_value(&std::fs::read_to_string(cgroup_dir.join(file)).ok()?, "oom_kill"))
}

/// memory.stat's counters faultscale reads (v2 names; v1 has pgfault, pgmajfault, the
/// refaults and pgpgout, and no pgscan, pgsteal or thp_fault_alloc). None: not in this kernel's
/// file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryStat {
    pub pgfault: Option<u64>,
    pub pgmajfault: Option<u64>,
    pub pgscan: Option<u64>,
    pub pgsteal: Option<u64>,
    pub workingset_refault_anon: Option<u64>,
    pub workingset_refault_file: Option<u64>,
    pub thp_fault_alloc: Option<u64>,
    pub pgpgout: Option<u64>,
}

/// memory.events (v2); on v1, `max` is memory.failcnt and `oom_kill` memory.oom_control's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryEvents {
    pub low: Option<u64>,
    pub high: Option<u64>,
    pub max: Option<u64>,
    pub oom: Option<u64>,
    pub oom_kill: Option<u64>,
}

/// Pressure-stall totals in microseconds: some task stalled on memory, all tasks stalled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pressure {
    pub some_us: u64,
    pub full_us: u64,
}

/// What the memcg did during a slice, as its own counters say: reclaim, limit hits, stalls.
/// Names for the CSV and JSON are given in export/, not here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    pub stat: MemoryStat,
    pub events: MemoryEvents,
    pub pressure: Option<Pressure>,
}

/// Field-wise arithmetic over the counters' Option<u64> fields.
macro_rules! each_field {
    ($a:expr, $b:expr, $op:expr, $ty:ident { $($field:ident),* }) => {
        $ty { $($field: $op($a.$field, $b.$field)),* }
    };
}

fn stat_map(a: MemoryStat, b: MemoryStat, op: fn(Option<u64>, Option<u64>) -> Option<u64>) -> MemoryStat {
    each_field!(
        a,
        b,
        op,
        MemoryStat {
            pgfault,
            pgmajfault,
            pgscan,
            pgsteal,
            workingset_refault_anon,
            workingset_refault_file,
            thp_fault_alloc,
            pgpgout
        }
    )
}

fn events_map(a: MemoryEvents, b: MemoryEvents, op: fn(Option<u64>, Option<u64>) -> Option<u64>) -> MemoryEvents {
    each_field!(a, b, op, MemoryEvents { low, high, max, oom, oom_kill })
}

impl Counters {
    /// self - earlier, counter by counter (a counter missing on either side is left out).
    pub fn since(&self, earlier: &Counters) -> Counters {
        let minus = |a: Option<u64>, b: Option<u64>| Some(a?.saturating_sub(b?));
        Counters {
            stat: stat_map(self.stat, earlier.stat, minus),
            events: events_map(self.events, earlier.events, minus),
            pressure: self.pressure.zip(earlier.pressure).map(|(a, b)| Pressure {
                some_us: a.some_us.saturating_sub(b.some_us),
                full_us: a.full_us.saturating_sub(b.full_us),
            }),
        }
    }

    /// Two cgroups' memory.stat and events added (a counter either has), for siblings on v1.
    fn plus(&self, other: &Counters) -> Counters {
        let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        Counters {
            stat: stat_map(self.stat, other.stat, add),
            events: events_map(self.events, other.events, add),
            pressure: self.pressure,
        }
    }
}

/// Whether pressure-stall time was the cgroup's own (v2 memory.pressure) or, where only that
/// exists, the whole system's (/proc/pressure/memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PsiScope {
    Cgroup,
    System,
}

/// `total=` of the `some` and `full` lines of a pressure file, in microseconds.
fn pressure_totals(text: &str) -> Option<Pressure> {
    let total = |kind: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(kind))?;
        line.split_whitespace().find_map(|field| field.strip_prefix("total="))?.parse().ok()
    };
    Some(Pressure { some_us: total("some")?, full_us: total("full")? })
}

fn read_stat(cgroup_dir: &Path) -> MemoryStat {
    let Ok(text) = std::fs::read_to_string(cgroup_dir.join("memory.stat")) else { return MemoryStat::default() };
    let value = |key| stat_value(&text, key);
    MemoryStat {
        pgfault: value("pgfault"),
        pgmajfault: value("pgmajfault"),
        pgscan: value("pgscan"),
        pgsteal: value("pgsteal"),
        workingset_refault_anon: value("workingset_refault_anon"),
        workingset_refault_file: value("workingset_refault_file"),
        thp_fault_alloc: value("thp_fault_alloc"),
        pgpgout: value("pgpgout"),
    }
}

/// v2's memory.events, or on v1 (no such file) the times the limit was hit and the OOM kills.
fn read_events(cgroup_dir: &Path) -> MemoryEvents {
    match std::fs::read_to_string(cgroup_dir.join("memory.events")) {
        Ok(text) => {
            let value = |key| stat_value(&text, key);
            MemoryEvents {
                low: value("low"),
                high: value("high"),
                max: value("max"),
                oom: value("oom"),
                oom_kill: value("oom_kill"),
            }
        }
        Err(_) => MemoryEvents {
            max: std::fs::read_to_string(cgroup_dir.join("memory.failcnt")).ok().and_then(|t| t.trim().parse().ok()),
            oom_kill: oom_kills(cgroup_dir),
            ..MemoryEvents::default()
        },
    }
}

/// The cgroup's own stall time (v2), else the system's.
fn read_pressure(cgroup_dir: &Path) -> (Option<Pressure>, Option<PsiScope>) {
    let (text, scope) = match std::fs::read_to_string(cgroup_dir.join("memory.pressure")) {
        Ok(text) => (Some(text), PsiScope::Cgroup),
        Err(_) => (std::fs::read_to_string("/proc/pressure/memory").ok(), PsiScope::System),
    };
    match text.as_deref().and_then(pressure_totals) {
        Some(pressure) => (Some(pressure), Some(scope)),
        None => (None, None),
    }
}

/// The counters of `cgroup_dir` now.
pub fn counters(cgroup_dir: &Path) -> (Counters, Option<PsiScope>) {
    let (pressure, scope) = read_pressure(cgroup_dir);
    (Counters { stat: read_stat(cgroup_dir), events: read_events(cgroup_dir), pressure }, scope)
}

/// The counters of the cgroups in `dirs` summed, with the pressure stall time of `parent`
/// (v2 aggregates its subtree's; v1 has only the system's). v1 keeps memory.stat and failcnt
/// per cgroup, so a subtree's figures are the sum of its cgroups'.
pub fn counters_over(parent: &Path, dirs: &[&Path]) -> (Counters, Option<PsiScope>) {
    if dirs == [parent] {
        return counters(parent);
    }
    let (pressure, scope) = read_pressure(parent);
    let mut total = Counters { pressure, ..Counters::default() };
    for dir in dirs {
        total = total.plus(&counters(dir).0);
    }
    (total, scope)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pressure_files_and_deltas() {
        let text =
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=43029\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=14199\n";
        assert_eq!(pressure_totals(text), Some(Pressure { some_us: 43029, full_us: 14199 }));
        assert_eq!(pressure_totals("garbage"), None);
        let mut before = Counters::default();
        (before.stat.pgscan, before.events.max) = (Some(10), Some(2));
        let mut after = before;
        (after.stat.pgscan, after.stat.pgsteal) = (Some(25), Some(7));
        let delta = after.since(&before);
        assert_eq!((delta.stat.pgscan, delta.events.max, delta.stat.pgsteal), (Some(15), Some(0), None));
    }

    #[test]
    fn a_cgroup_directory_stand_in_reads_v2_and_v1_shapes() {
        let v2 = tempfile::tempdir().unwrap();
        std::fs::write(v2.path().join("memory.stat"), "pgfault 5\npgscan 9\npgsteal 8\n").unwrap();
        std::fs::write(v2.path().join("memory.events"), "low 0\nhigh 3\nmax 4\noom 0\noom_kill 0\n").unwrap();
        std::fs::write(v2.path().join("memory.pressure"), "some avg10=0 total=100\nfull avg10=0 total=50\n").unwrap();
        let (counters, scope) = counters(v2.path());
        assert_eq!(
            (counters.stat.pgscan, counters.events.high, counters.pressure.map(|p| p.some_us)),
            (Some(9), Some(3), Some(100))
        );
        assert_eq!(scope, Some(PsiScope::Cgroup));
        let v1 = tempfile::tempdir().unwrap();
        std::fs::write(v1.path().join("memory.stat"), "pgfault 5\npgmajfault 1\n").unwrap();
        std::fs::write(v1.path().join("memory.failcnt"), "42\n").unwrap();
        let (counters, _) = super::counters(v1.path());
        assert_eq!(counters.events.max, Some(42));
        assert_eq!(counters.stat.pgscan, None, "v1 has no pgscan: absent, not 0");
    }
}
