//! One placement's measurement: fork the pinned workers (a process each, or threads of one
//! process), wait for all to be ready, release them with one signal, sample on the monotonic
//! clock, stop them with one signal, read every counter while they are stopped, then kill and
//! reap them.
//!
//! The harness is single-threaded: workers are forked from a process with no other thread.

pub mod files;
pub mod signals;
pub mod slots;
mod worker;
mod workers;

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use nix::sys::signal::Signal;
use nix::unistd::getpid;

use crate::cgroup::layout::cgroup_of;
use crate::cgroup::{Hierarchy, Leaf};
use crate::measure::clock::{monotonic_ns, sleep_until};
use crate::measure::memcg;
use crate::measure::perf::{PerfReading, WorkerPerf};
use crate::output::progress::{Progress, Tick};
use crate::workload::{self, WorkloadSettings};
use slots::{STATE_FAILED, STATE_READY, Slots};
use workers::Workers;

/// How long workers may take from fork to ready before the run gives up.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// How workers are made: processes (one mm each) or threads of one process (one mm shared:
/// mmap_lock and anon_vma contention between them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
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

/// What the run measures, the same for every placement.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub mode: Mode,
    pub cpus: Vec<usize>,
    pub settings: WorkloadSettings,
    pub duration: Duration,
    pub warmup: Duration,
    pub interval: Duration,
    pub kernel_count: KernelCountSource,
}

/// Where the kernel's per-worker fault count comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
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

#[derive(Debug, Clone, serde::Serialize)]
pub struct WorkerResult {
    pub cpu: usize,
    pub pid: i32,
    pub iterations: u64,
    pub loop_faults: u64,
    pub kernel_faults: u64,
    pub perf: Option<PerfReading>,
    pub user_us: u64,
    pub sys_us: u64,
    /// CPU time (user + sys) over wall time from release to stop: below 1 when something
    /// else ran on this worker's CPU.
    pub cpu_share: f64,
    /// When this worker entered its loop, from the release signal.
    pub start_offset_ns: u64,
}

/// Loop counters of every worker at one instant.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Sample {
    pub elapsed_ns: u64,
    pub iterations: Vec<u64>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct PlacementRun {
    /// From the release signal to the stop signal, measured.
    pub elapsed_ns: u64,
    pub start_skew_ns: u64,
    pub workers: Vec<WorkerResult>,
    pub memcg_pgfault: Option<u64>,
    pub kernel_source: KernelCountSource,
    pub samples: Vec<Sample>,
}

impl PlacementRun {
    pub fn loop_faults(&self) -> u64 {
        self.workers.iter().map(|w| w.loop_faults).sum()
    }

    pub fn kernel_faults(&self) -> u64 {
        self.workers.iter().map(|w| w.kernel_faults).sum()
    }

    pub fn elapsed_s(&self) -> f64 {
        self.elapsed_ns as f64 / 1e9
    }
}

/// A stop signal reached the harness; the caller cleans up and exits 128+signal.
#[derive(Debug)]
pub struct Interrupted(pub i32);

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "interrupted by {}", signal_name(self.0))
    }
}

impl std::error::Error for Interrupted {}

/// A worker died during the measured part; the run goes on with the other placements.
#[derive(Debug)]
pub struct WorkerDied(pub String);

impl std::fmt::Display for WorkerDied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WorkerDied {}

pub fn signal_name(signal: i32) -> String {
    Signal::try_from(signal).map(|s| s.as_str().to_string()).unwrap_or_else(|_| format!("signal {signal}"))
}

fn check_interrupt() -> Result<()> {
    match signals::received() {
        Some(signal) => Err(Interrupted(signal).into()),
        None => Ok(()),
    }
}

/// Measures one placement.
pub fn measure(
    spec: &RunSpec,
    leaf: &Leaf,
    hierarchy: &Hierarchy,
    warn: &mut dyn FnMut(String),
    progress: &mut Progress,
) -> Result<PlacementRun> {
    check_interrupt()?;
    let count = spec.cpus.len();
    let slots = Slots::new(count).map_err(|e| anyhow!("mapping worker counters: {e}"))?;
    // Workers already in the leaf (the baseline in the harness's own cgroup) are not moved:
    // faultscale writes to no cgroup.procs it does not need to.
    let own_cgroup = cgroup_of(getpid().as_raw(), hierarchy)?;
    let cgroup_procs: Option<PathBuf> = (own_cgroup != leaf.cgroup_path).then(|| leaf.fs_path.join("cgroup.procs"));
    let mut workers = Workers::spawn(spec.mode, &spec.cpus, cgroup_procs.as_deref(), &spec.settings, &slots)?;

    wait_ready(&mut workers, &slots)?;
    for &pid in &workers.processes {
        let actual = cgroup_of(pid.as_raw(), hierarchy)?;
        if actual != leaf.cgroup_path {
            bail!("worker {pid} is in cgroup {actual}, not {}", leaf.cgroup_path);
        }
    }
    let tids: Vec<i32> = (0..count).map(|i| slots.get(i).tid.load(Ordering::Relaxed)).collect();

    let mut perf: Vec<WorkerPerf> = Vec::new();
    let mut source = spec.kernel_count;
    for &tid in tids.iter().take(if source == KernelCountSource::Perf { count } else { 0 }) {
        match WorkerPerf::open(tid).and_then(|mut p| p.enable().map(|_| p)) {
            Ok(counters) => {
                if !counters.has_hardware_counters() {
                    warn("cycles, instructions: not supported on this machine (perf hardware counters); software counters only".into());
                }
                perf.push(counters)
            }
            Err(e) => {
                warn(format!(
                    "perf software counters unavailable ({e}); kernel fault counts come from the tasks' minflt (rusage) instead"
                ));
                source = KernelCountSource::Minflt;
                perf.clear();
                break;
            }
        }
    }
    let read_iterations =
        || -> Vec<u64> { (0..count).map(|i| slots.get(i).iterations.load(Ordering::Relaxed)).collect() };
    let task_stats = |workers: &Workers| -> Vec<Option<TaskStat>> {
        (0..count).map(|i| task_stat(workers.process_of(i).as_raw(), tids[i])).collect()
    };

    // Without warmup every baseline is read before the release, while the workers are still
    // parked, so the harness does nothing on a measured CPU right after it.
    let warmup_ns = spec.warmup.as_nanos() as u64;
    let mut perf_before: Vec<PerfReading> = perf.iter_mut().map(|p| p.read().unwrap_or_default()).collect();
    let mut memcg_before = memcg::pgfault(&leaf.fs_path);
    let mut iterations_before = vec![0; count];
    let mut minflt_before: Vec<u64> = (0..count).map(|i| slots.get(i).ready_minflt.load(Ordering::Relaxed)).collect();

    check_interrupt()?;
    let released_ns = monotonic_ns();
    workers.signal_all(signals::START_SIGNAL)?;
    let mut started_ns = released_ns;
    if warmup_ns > 0 {
        wait_until(released_ns + warmup_ns, &mut workers, &slots)?;
        started_ns = monotonic_ns();
        iterations_before = read_iterations();
        minflt_before = task_stats(&workers).iter().map(|t| t.map(|t| t.minflt).unwrap_or(0)).collect();
        perf_before = perf.iter_mut().map(|p| p.read().unwrap_or_default()).collect();
        memcg_before = memcg::pgfault(&leaf.fs_path);
    }

    let per_iteration = workload::shape(&spec.settings).per_iteration;
    let duration_ns = spec.duration.as_nanos() as u64;
    let interval_ns = spec.interval.as_nanos() as u64;
    let mut samples = Vec::new();
    let stop_ns = started_ns + duration_ns;
    let mut next_ns = (started_ns + interval_ns).min(stop_ns);
    while next_ns < stop_ns {
        wait_until(next_ns, &mut workers, &slots)?;
        let now = monotonic_ns();
        let iterations: Vec<u64> = read_iterations().iter().zip(&iterations_before).map(|(a, b)| a - b).collect();
        let (previous_ns, previous): (u64, u64) =
            samples.last().map(|s: &Sample| (s.elapsed_ns, s.iterations.iter().sum())).unwrap_or((0, 0));
        let done: u64 = iterations.iter().sum();
        progress.tick(&Tick {
            elapsed_s: (now - started_ns) as f64 / 1e9,
            duration_s: duration_ns as f64 / 1e9,
            rate: (done - previous) as f64 * per_iteration as f64 / ((now - started_ns - previous_ns) as f64 / 1e9),
        });
        samples.push(Sample { elapsed_ns: now - started_ns, iterations });
        next_ns = (next_ns + interval_ns).min(stop_ns);
    }
    wait_until(stop_ns, &mut workers, &slots)?;

    // Stop: SIGSTOP freezes every worker at once; counters are read while they are frozen so
    // loop, perf, per-task and memcg counts describe the same instant.
    let stopped_ns = monotonic_ns();
    workers.signal_all(Signal::SIGSTOP)?;
    for process in 0..workers.processes.len() {
        match workers.reap(process, libc::WUNTRACED) {
            Some((status, _)) if libc::WIFSTOPPED(status) => {}
            Some((status, _)) => return Err(workers.died_with(&slots, process, Some(status)).into()),
            None => return Err(workers.died(&slots, process).into()),
        }
    }
    let iterations: Vec<u64> =
        read_iterations().iter().zip(&iterations_before).map(|(after, before)| after - before).collect();
    samples.push(Sample { elapsed_ns: stopped_ns - started_ns, iterations: iterations.clone() });
    let perf_after: Vec<PerfReading> = perf
        .iter_mut()
        .map(|p| p.read())
        .collect::<std::io::Result<_>>()
        .map_err(|e| anyhow!("reading perf counters: {e}"))?;
    let memcg_after = memcg::pgfault(&leaf.fs_path);
    // Threads have no rusage of their own at reaping; read each while it is frozen.
    let stats_after = task_stats(&workers);
    drop(perf);

    workers.kill_all();
    // Process mode: wait4's rusage, which includes what each worker's children did (fork).
    let mut usages: Vec<Option<libc::rusage>> = Vec::new();
    for process in 0..workers.processes.len() {
        let (_, usage) = workers
            .reap(process, 0)
            .ok_or_else(|| anyhow!("worker {} vanished before it was reaped", workers.processes[process]))?;
        usages.push(Some(usage));
    }
    let start_times: Vec<u64> = (0..count).map(|i| slots.get(i).start_ns.load(Ordering::Relaxed)).collect();
    let mut results = Vec::with_capacity(count);
    for index in 0..count {
        let (minflt, user, sys) = match (spec.mode, usages[0], stats_after[index]) {
            (Mode::Process, _, _) => {
                let usage = usages[index].expect("one process per worker");
                (usage.ru_minflt as u64, user_us(&usage), sys_us(&usage))
            }
            (Mode::Thread, _, Some(stat)) => (stat.minflt, stat.user_us, stat.sys_us),
            (Mode::Thread, _, None) => bail!("could not read /proc for worker thread {}", tids[index]),
        };
        let perf_delta = (source == KernelCountSource::Perf).then(|| perf_after[index].since(&perf_before[index]));
        let kernel_faults = match perf_delta {
            Some(p) => p.page_faults,
            None => minflt.saturating_sub(minflt_before[index]),
        };
        results.push(WorkerResult {
            cpu: spec.cpus[index],
            pid: tids[index],
            iterations: iterations[index],
            loop_faults: iterations[index] * per_iteration,
            kernel_faults,
            perf: perf_delta,
            cpu_share: (user + sys) as f64 * 1e3 / (stopped_ns - released_ns) as f64,
            user_us: user,
            sys_us: sys,
            start_offset_ns: start_times[index].saturating_sub(released_ns),
        });
    }
    let first = start_times.iter().copied().min().unwrap_or(0);
    let last = start_times.iter().copied().max().unwrap_or(0);
    Ok(PlacementRun {
        elapsed_ns: stopped_ns - started_ns,
        start_skew_ns: last - first,
        workers: results,
        memcg_pgfault: match (memcg_before, memcg_after) {
            (Some(before), Some(after)) => Some(after.saturating_sub(before)),
            _ => None,
        },
        kernel_source: source,
        samples,
    })
}

fn user_us(usage: &libc::rusage) -> u64 {
    usage.ru_utime.tv_sec as u64 * 1_000_000 + usage.ru_utime.tv_usec as u64
}

fn sys_us(usage: &libc::rusage) -> u64 {
    usage.ru_stime.tv_sec as u64 * 1_000_000 + usage.ru_stime.tv_usec as u64
}

/// One task's counters from /proc/PID/task/TID/stat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TaskStat {
    minflt: u64,
    user_us: u64,
    sys_us: u64,
}

fn task_stat(pid: i32, tid: i32) -> Option<TaskStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
    parse_task_stat(&text, clock_ticks_per_sec())
}

fn clock_ticks_per_sec() -> u64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok().flatten().unwrap_or(100) as u64
}

/// Fields 10 (minflt), 14 (utime) and 15 (stime) of a stat line. The command name may hold
/// spaces and parentheses; the fields resume after the last ')', at field 3.
fn parse_task_stat(text: &str, ticks_per_sec: u64) -> Option<TaskStat> {
    let fields: Vec<&str> = text[text.rfind(')')? + 1..].split_whitespace().collect();
    let field = |n: usize| -> Option<u64> { fields.get(n - 3)?.parse().ok() };
    let to_us = |ticks: u64| ticks * 1_000_000 / ticks_per_sec;
    Some(TaskStat { minflt: field(10)?, user_us: to_us(field(14)?), sys_us: to_us(field(15)?) })
}

/// Sleeps until `deadline_ns` on the monotonic clock; returns early with an error when a stop
/// signal arrives or a worker dies.
fn wait_until(deadline_ns: u64, workers: &mut Workers, slots: &Slots) -> Result<()> {
    loop {
        // Checked before sleeping as well as after, since SIGCHLD may land just before; a
        // death in the last instant before the sleep is still caught at the next wait.
        if signals::take_child_changed()
            && let Some(dead) = workers.find_dead()
        {
            return Err(workers.died(slots, dead).into());
        }
        check_interrupt()?;
        if sleep_until(deadline_ns) {
            return check_interrupt();
        }
    }
}

fn wait_ready(workers: &mut Workers, slots: &Slots) -> Result<()> {
    let deadline = monotonic_ns() + READY_TIMEOUT.as_nanos() as u64;
    let count = workers.cpus.len();
    loop {
        check_interrupt()?;
        let mut ready = 0;
        for index in 0..count {
            let slot = slots.get(index);
            match slot.state.load(Ordering::Acquire) {
                STATE_READY => ready += 1,
                STATE_FAILED => bail!(
                    "worker on CPU {} could not start: {}",
                    workers.cpus[index],
                    slot.failure().unwrap_or_default()
                ),
                _ => {}
            }
        }
        if ready == count {
            return Ok(());
        }
        if let Some(dead) = workers.find_dead() {
            bail!("{}", workers.died(slots, dead));
        }
        if monotonic_ns() > deadline {
            bail!("workers did not report ready within {} s", READY_TIMEOUT.as_secs());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_stat_survives_odd_command_names() {
        let line = "1234 (fault (scale) x) R 1 1234 1234 0 -1 4194560 987654 55 0 0 250 75 0 0 20 0 2 0 100 0 0";
        assert_eq!(parse_task_stat(line, 100), Some(TaskStat { minflt: 987654, user_us: 2_500_000, sys_us: 750_000 }));
        assert_eq!(parse_task_stat("garbage", 100), None);
    }
}
