//! memcg counters: memory.stat, memory.events (v1: failcnt, oom_control) and pressure stalls.
//!
//! v1's `pgfault` counts the cgroup alone and v2's counts the cgroup with its descendants; for
//! the leaf a placement's workers run in, both are the faults charged there.

use std::path::Path;

use crate::cgroup::fs::stat_value;

/// The cgroup's pgfault counter, or None where the kernel has no memory.stat there (the v2
/// root has none on some kernels).
pub fn pgfault(cgroup_dir: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(cgroup_dir.join("memory.stat")).ok()?;
    stat_value(&text, "pgfault")
}

/// pgfault summed over `dirs` (None if any has no memory.stat).
pub fn pgfault_over(dirs: &[&Path]) -> Option<u64> {
    dirs.iter().map(|dir| pgfault(dir)).sum()
}

/// How many tasks the OOM killer has killed in this cgroup (v2 memory.events, v1
/// memory.oom_control; both name the counter oom_kill).
pub fn oom_kills(cgroup_dir: &Path) -> Option<u64> {
    ["memory.events", "memory.oom_control"]
        .iter()
        .find_map(|file| stat_value(&std::fs::read_to_string(cgroup_dir.join(file)).ok()?, "oom_kill"))
}

/// What the memcg did during a slice, as its own counters say: reclaim, limit hits, stalls.
/// Keys are the CSV's column names; a counter the kernel does not have here is absent.
pub type Counters = std::collections::BTreeMap<&'static str, u64>;

/// memory.stat counters, under their v2 names (v1 has pgfault, pgmajfault and the refaults;
/// pgscan, pgsteal and thp_fault_alloc are v2's).
const STAT_KEYS: [&str; 8] = [
    "pgfault",
    "pgmajfault",
    "pgscan",
    "pgsteal",
    "workingset_refault_anon",
    "workingset_refault_file",
    "thp_fault_alloc",
    "pgpgout",
];

/// Whether pressure-stall time was the cgroup's own (v2 memory.pressure) or, where only that
/// exists, the whole system's (/proc/pressure/memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PsiScope {
    Cgroup,
    System,
}

/// `total=` of the `some` and `full` lines of a pressure file, in microseconds.
fn pressure_totals(text: &str) -> Option<(u64, u64)> {
    let total = |kind: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(kind))?;
        line.split_whitespace().find_map(|field| field.strip_prefix("total="))?.parse().ok()
    };
    Some((total("some")?, total("full")?))
}

/// The counters of `cgroup_dir` now.
pub fn counters(cgroup_dir: &Path) -> (Counters, Option<PsiScope>) {
    let mut counters = Counters::new();
    if let Ok(stat) = std::fs::read_to_string(cgroup_dir.join("memory.stat")) {
        for key in STAT_KEYS {
            if let Some(value) = stat_value(&stat, key) {
                counters.insert(key, value);
            }
        }
    }
    match std::fs::read_to_string(cgroup_dir.join("memory.events")) {
        Ok(events) => {
            for (key, column) in [
                ("low", "events_low"),
                ("high", "events_high"),
                ("max", "events_max"),
                ("oom", "events_oom"),
                ("oom_kill", "events_oom_kill"),
            ] {
                if let Some(value) = stat_value(&events, key) {
                    counters.insert(column, value);
                }
            }
        }
        // v1: the times the limit was hit, and the OOM kills.
        Err(_) => {
            if let Some(failcnt) =
                std::fs::read_to_string(cgroup_dir.join("memory.failcnt")).ok().and_then(|t| t.trim().parse().ok())
            {
                counters.insert("events_max", failcnt);
            }
            if let Some(kills) = oom_kills(cgroup_dir) {
                counters.insert("events_oom_kill", kills);
            }
        }
    }
    let (pressure, scope) = match std::fs::read_to_string(cgroup_dir.join("memory.pressure")) {
        Ok(text) => (Some(text), Some(PsiScope::Cgroup)),
        Err(_) => (std::fs::read_to_string("/proc/pressure/memory").ok(), Some(PsiScope::System)),
    };
    match pressure.as_deref().and_then(pressure_totals) {
        Some((some, full)) => {
            counters.insert("psi_some_us", some);
            counters.insert("psi_full_us", full);
            (counters, scope)
        }
        None => (counters, None),
    }
}

/// The counters of the cgroups in `dirs` summed, with the pressure stall time of `parent`
/// (v2 aggregates its subtree's; v1 has only the system's). v1 keeps memory.stat and failcnt
/// per cgroup, so a subtree's figures are the sum of its cgroups'.
pub fn counters_over(parent: &Path, dirs: &[&Path]) -> (Counters, Option<PsiScope>) {
    if dirs == [parent] {
        return counters(parent);
    }
    let (mut total, scope) = counters(parent);
    total.retain(|key, _| key.starts_with("psi_"));
    for dir in dirs {
        for (key, value) in counters(dir).0.into_iter().filter(|(key, _)| !key.starts_with("psi_")) {
            *total.entry(key).or_insert(0) += value;
        }
    }
    (total, scope)
}

/// after - before, counter by counter (a counter missing on either side is left out).
pub fn delta(before: &Counters, after: &Counters) -> Counters {
    after.iter().filter_map(|(key, value)| Some((*key, value.saturating_sub(*before.get(key)?)))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pressure_files_and_deltas() {
        let text =
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=43029\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=14199\n";
        assert_eq!(pressure_totals(text), Some((43029, 14199)));
        assert_eq!(pressure_totals("garbage"), None);
        let before = Counters::from([("pgscan", 10), ("events_max", 2)]);
        let after = Counters::from([("pgscan", 25), ("events_max", 2), ("pgsteal", 7)]);
        assert_eq!(delta(&before, &after), Counters::from([("pgscan", 15), ("events_max", 0)]));
    }

    #[test]
    fn a_cgroup_directory_stand_in_reads_v2_and_v1_shapes() {
        let v2 = tempfile::tempdir().unwrap();
        std::fs::write(v2.path().join("memory.stat"), "pgfault 5\npgscan 9\npgsteal 8\n").unwrap();
        std::fs::write(v2.path().join("memory.events"), "low 0\nhigh 3\nmax 4\noom 0\noom_kill 0\n").unwrap();
        std::fs::write(v2.path().join("memory.pressure"), "some avg10=0 total=100\nfull avg10=0 total=50\n").unwrap();
        let (counters, scope) = counters(v2.path());
        assert_eq!((counters["pgscan"], counters["events_high"], counters["psi_some_us"]), (9, 3, 100));
        assert_eq!(scope, Some(PsiScope::Cgroup));
        let v1 = tempfile::tempdir().unwrap();
        std::fs::write(v1.path().join("memory.stat"), "pgfault 5\npgmajfault 1\n").unwrap();
        std::fs::write(v1.path().join("memory.failcnt"), "42\n").unwrap();
        let (counters, _) = super::counters(v1.path());
        assert_eq!(counters.get("events_max"), Some(&42));
        assert_eq!(counters.get("pgscan"), None, "v1 has no pgscan: absent, not 0");
    }
}
