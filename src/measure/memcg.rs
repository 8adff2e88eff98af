//! memcg counters: memory.stat, memory.events (v1: failcnt, oom_control) and pressure stalls.
//!
//! v1's `pgfault` counts the cgroup alone and v2's counts the cgroup with its descendants; for
//! the leaf a placement's workers run in, both are the faults charged there.

use std::path::Path;

use super::reread::Reread;
use crate::cgroup::fs::stat_value;

/// How many tasks the OOM killer has killed in this cgroup (v2 memory.events, v1
/// memory.oom_control; both name the counter oom_kill).
pub fn oom_kills(cgroup_dir: &Path) -> Option<u64> {
    ["memory.events", "memory.oom_control"]
        .iter()
        .find_map(|file| stat_value(&std::fs::read_to_string(cgroup_dir.join(file)).ok()?, "oom_kill"))
}

/// How often a charge found this cgroup's own memory limit reached: v2's memory.events `oom`
/// (counted in the cgroup whose limit it was and its ancestors, never its descendants), v1's
/// memory.failcnt (the level that refused the charge alone). None where neither is readable.
pub fn limit_hits(cgroup_dir: &Path) -> Option<u64> {
    match std::fs::read_to_string(cgroup_dir.join("memory.events")) {
        Ok(text) => stat_value(&text, "oom"),
        Err(_) => std::fs::read_to_string(cgroup_dir.join("memory.failcnt")).ok()?.trim().parse().ok(),
    }
}

/// A struct of Option<u64> counters whose field names are their keys in a flat-keyed cgroup
/// file, with what every user of it needs derived from the one list: a new counter is one
/// line in the invocation below (its reader, its arithmetic and its JSON name in
/// `result.memcg` follow; a CSV column besides is its `results::row::Row` field and its name
/// in `Row::memcg_cells`, which a unit test holds to `Counters::columns`).
macro_rules! counter_set {
    ($(#[$doc:meta])* $name:ident, columns $prefix:literal { $($field:ident),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct $name {
            $(pub $field: Option<u64>,)+
        }

        impl $name {
            /// Each counter by its CSV and JSON column name (its key, prefixed), in
            /// declaration order.
            pub fn columns(&self) -> impl Iterator<Item = (&'static str, Option<u64>)> {
                [$((concat!($prefix, stringify!($field)), self.$field)),+].into_iter()
            }

            /// The counters found in a flat-keyed file's text; a key the file lacks stays None.
            fn parse(text: &str) -> $name {
                $name { $($field: stat_value(text, stringify!($field)),)+ }
            }

            /// Counter by counter `op(self, other)`.
            fn zip_with(self, other: $name, op: impl Fn(Option<u64>, Option<u64>) -> Option<u64>) -> $name {
                $name { $($field: op(self.$field, other.$field),)+ }
            }
        }
    };
}

counter_set! {
    /// memory.stat's counters faultscale reads (v2 names; v1 has pgfault, pgmajfault, the
    /// refaults and pgpgout, and no pgscan, pgsteal or thp_fault_alloc). None: not in this
    /// kernel's file.
    MemoryStat, columns "" {
        pgfault,
        pgmajfault,
        pgscan,
        pgsteal,
        workingset_refault_anon,
        workingset_refault_file,
        thp_fault_alloc,
        pgpgout,
    }
}

counter_set! {
    /// memory.events (v2); on v1, `max` is memory.failcnt and `oom_kill` memory.oom_control's.
    // Its columns are prefixed: `max` beside memory.stat's counters would say nothing.
    MemoryEvents, columns "events_" { low, high, max, oom, oom_kill }
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

impl Counters {
    /// Every counter by its JSON name in `result.memcg` (and CSV column name, where the CSV
    /// has it): memory.stat's, memory.events' and the pressure stalls', in that order; None
    /// where not read.
    pub fn columns(&self) -> impl Iterator<Item = (&'static str, Option<u64>)> {
        let pressure =
            [("psi_some_us", self.pressure.map(|p| p.some_us)), ("psi_full_us", self.pressure.map(|p| p.full_us))];
        self.stat.columns().chain(self.events.columns()).chain(pressure)
    }

    /// self - earlier, counter by counter (a counter missing on either side is left out).
    pub fn since(&self, earlier: &Counters) -> Counters {
        let minus = |a: Option<u64>, b: Option<u64>| Some(a?.saturating_sub(b?));
        Counters {
            stat: self.stat.zip_with(earlier.stat, minus),
            events: self.events.zip_with(earlier.events, minus),
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
            stat: self.stat.zip_with(other.stat, add),
            events: self.events.zip_with(other.events, add),
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

/// One cgroup's counter files, kept open: memory.stat, and v2's memory.events or in its
/// place v1's memory.failcnt and memory.oom_control.
#[derive(Debug)]
struct CgroupFiles {
    stat: Reread,
    events: Reread,
    failcnt: Reread,
    oom_control: Reread,
}

impl CgroupFiles {
    fn open(dir: &Path) -> std::io::Result<CgroupFiles> {
        Ok(CgroupFiles {
            stat: Reread::open(dir.join("memory.stat"))?,
            events: Reread::open(dir.join("memory.events"))?,
            failcnt: Reread::open(dir.join("memory.failcnt"))?,
            oom_control: Reread::open(dir.join("memory.oom_control"))?,
        })
    }

    fn read(&mut self) -> Counters {
        let stat = self.stat.read().map(MemoryStat::parse).unwrap_or_default();
        let events = match self.events.exists() {
            true => self.events.read().map(MemoryEvents::parse).unwrap_or_default(),
            false => MemoryEvents {
                max: self.failcnt.read().ok().and_then(|t| t.trim().parse().ok()),
                oom_kill: self.oom_control.read().ok().and_then(|t| stat_value(t, "oom_kill")),
                ..MemoryEvents::default()
            },
        };
        Counters { stat, events, pressure: None }
    }
}

/// The memcg counter files of the cgroups a crew's workers run in, opened once for the
/// crew's life and read at each snapshot: the cgroups' counters summed (v1 keeps memory.stat
/// and failcnt per cgroup, so a subtree's figures are the sum of its cgroups'), with the
/// pressure stall time of their parent (v2 aggregates its subtree's; v1 has only the
/// system's).
#[derive(Debug)]
pub struct CounterFiles {
    cgroups: Vec<CgroupFiles>,
    /// The parent's memory.pressure (the cgroup's own stall time), then /proc/pressure/memory
    /// (the system's): the first that reads.
    pressure: [(Reread, PsiScope); 2],
}

impl CounterFiles {
    pub fn open(parent: &Path, dirs: &[&Path]) -> std::io::Result<CounterFiles> {
        Ok(CounterFiles {
            cgroups: dirs.iter().map(|dir| CgroupFiles::open(dir)).collect::<std::io::Result<_>>()?,
            pressure: [
                (Reread::open(parent.join("memory.pressure"))?, PsiScope::Cgroup),
                (Reread::open("/proc/pressure/memory")?, PsiScope::System),
            ],
        })
    }

    /// The descriptors `open` holds for `cgroups` cgroups: four files each, two of pressure.
    pub const fn descriptors(cgroups: usize) -> usize {
        4 * cgroups + 2
    }

    /// The counters now, and whose stall time they hold.
    pub fn read(&mut self) -> (Counters, Option<PsiScope>) {
        let (pressure, scope) = self
            .pressure
            .iter_mut()
            .find_map(|(file, scope)| Some((pressure_totals(file.read().ok()?)?, *scope)))
            .unzip();
        let mut cgroups = self.cgroups.iter_mut().map(CgroupFiles::read);
        let first = cgroups.next().unwrap_or_default();
        let total = cgroups.fold(first, |total, counters| total.plus(&counters));
        (Counters { pressure, ..total }, scope)
    }
}

/// The counters of `cgroup_dir` now.
#[cfg(test)]
fn counters(cgroup_dir: &Path) -> (Counters, Option<PsiScope>) {
    CounterFiles::open(cgroup_dir, &[cgroup_dir]).unwrap().read()
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

    #[test]
    fn siblings_counters_are_summed_and_read_fresh_from_the_files_kept_open() {
        let parent = tempfile::tempdir().unwrap();
        let (a, b) = (parent.path().join("a"), parent.path().join("b"));
        for (dir, faults) in [(&a, 5), (&b, 7)] {
            std::fs::create_dir(dir).unwrap();
            std::fs::write(dir.join("memory.stat"), format!("pgfault {faults}\n")).unwrap();
            std::fs::write(dir.join("memory.failcnt"), "1\n").unwrap();
        }
        let mut files = CounterFiles::open(parent.path(), &[&a, &b]).unwrap();
        let (first, _) = files.read();
        assert_eq!((first.stat.pgfault, first.events.max, first.stat.pgscan), (Some(12), Some(2), None));
        std::fs::write(a.join("memory.stat"), "pgfault 105\n").unwrap();
        assert_eq!(files.read().0.stat.pgfault, Some(112), "each read gives the files' contents now");
    }
}
