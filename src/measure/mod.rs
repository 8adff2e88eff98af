//! What is counted during a run: the monotonic clock, perf software counters per worker,
//! memcg counters per cgroup, and the kernel's per-task counters in /proc.

pub mod clock;
pub mod locks;
pub mod machine;
pub mod memcg;
pub mod perf;
pub mod procfs;
pub mod reread;
pub mod sampling;
pub mod stacks;
