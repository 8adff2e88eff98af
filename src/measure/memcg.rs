//! memcg event counters from memory.stat.
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

/// How many tasks the OOM killer has killed in this cgroup (v2 memory.events, v1
/// memory.oom_control; both name the counter oom_kill).
pub fn oom_kills(cgroup_dir: &Path) -> Option<u64> {
    ["memory.events", "memory.oom_control"]
        .iter()
        .find_map(|file| stat_value(&std::fs::read_to_string(cgroup_dir.join(file)).ok()?, "oom_kill"))
}
