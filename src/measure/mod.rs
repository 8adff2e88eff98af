//! What is counted during a run: the monotonic clock, perf software counters per worker,
//! memcg counters per cgroup, and rusage at reaping.

pub mod clock;
pub mod memcg;
pub mod perf;
