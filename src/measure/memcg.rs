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
