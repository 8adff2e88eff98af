//! What one measurement runs: how workers are made, where the kernel count comes from, and the
//! settings every placement shares.

use std::time::Duration;

use crate::workload::WorkloadSettings;

/// How workers are made: processes (one mm each) or threads of one process (one mm shared:
/// mmap_lock and anon_vma contention between them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Process,
    Thread,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Process => "process",
            Mode::Thread => "thread",
        }
    }
}

/// What the run measures, the same for every placement and slice (each slice's CPUs are its own).
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub mode: Mode,
    pub settings: WorkloadSettings,
    pub duration: Duration,
    pub interval: Duration,
    pub kernel_count: KernelCountSource,
    /// --profile: sample every worker on CPU with call chains while the slice is measured.
    pub profile: bool,
    /// --locks: count every worker's lock contentions while the slice is measured.
    pub locks: bool,
}

/// Where the kernel's per-worker fault count comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelCountSource {
    /// The task's minor-fault counter (wait4 rusage ru_minflt, minus its value at ready),
    /// which the kernel keeps anyway: nothing is added to the fault path.
    Minflt,
    /// perf software counters (page-faults with kernel faults included, task-clock, context
    /// switches, CPU migrations), as `perf stat` counts them. Each fault also pays for the
    /// perf event: 7.5% of the anon fault rate on the development machine, which pulls
    /// root/child ratios toward 100%.
    Perf,
}

impl KernelCountSource {
    pub fn name(self) -> &'static str {
        match self {
            KernelCountSource::Minflt => "minflt",
            KernelCountSource::Perf => "perf",
        }
    }
}
