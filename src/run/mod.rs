//! One placement's measurement: fork a pinned worker per CPU, wait for all to be ready,
//! release them with one signal, sample on the monotonic clock, stop them with one signal,
//! read every counter while they are stopped, then kill and reap them.
//!
//! The harness is single-threaded: workers are forked from a process with no other thread.

pub mod files;
pub mod signals;
pub mod slots;
mod worker;

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::{ForkResult, Pid, fork, getpid, setpgid};

use crate::cgroup::layout::cgroup_of;
use crate::cgroup::{Hierarchy, Leaf};
use crate::measure::clock::{monotonic_ns, sleep_until};
use crate::measure::memcg;
use crate::measure::perf::{PerfReading, WorkerPerf};
use crate::workload::{self, WorkloadSettings};
use slots::{STATE_FAILED, STATE_READY, Slots};
use worker::WorkerPlan;

/// How long workers may take from fork to ready before the run gives up.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// What the run measures, the same for every placement.
#[derive(Debug, Clone)]
pub struct RunSpec {
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

/// The forked workers. Dropping it kills and reaps every one still there, so no exit path
/// (error, interrupt, panic) leaves a worker behind or a cgroup busy.
struct Workers {
    pids: Vec<Pid>,
    cpus: Vec<usize>,
    reaped: Vec<bool>,
    group: Option<Pid>,
}

impl Workers {
    fn kill_all(&mut self) {
        if let Some(group) = self.group {
            let _ = killpg(group, Signal::SIGKILL);
        }
    }

    /// wait4 on one worker; returns (status, rusage).
    fn reap(&mut self, index: usize, options: libc::c_int) -> Option<(libc::c_int, libc::rusage)> {
        let mut status = 0;
        // SAFETY: zeroed rusage is a valid out-buffer.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        loop {
            // SAFETY: wait4 on our own child with valid out-pointers.
            let rc = unsafe { libc::wait4(self.pids[index].as_raw(), &mut status, options, &mut usage) };
            if rc == self.pids[index].as_raw() {
                if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
                    self.reaped[index] = true;
                }
                return Some((status, usage));
            }
            if rc == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            if rc == -1 {
                // ECHILD: already gone.
                self.reaped[index] = true;
            }
            return None;
        }
    }

    /// A worker that exited, if any, without reaping it.
    fn find_dead(&self) -> Option<usize> {
        (0..self.pids.len()).find(|&i| {
            if self.reaped[i] {
                return true;
            }
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: waitid with WNOWAIT only peeks at our own child.
            let rc = unsafe {
                libc::waitid(
                    libc::P_PID,
                    self.pids[i].as_raw() as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
                )
            };
            rc == 0 && unsafe { info.si_pid() } != 0
        })
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.kill_all();
        for index in 0..self.pids.len() {
            if !self.reaped[index] {
                // Direct kill too: a worker that died before joining the group still gets it.
                let _ = nix::sys::signal::kill(self.pids[index], Signal::SIGKILL);
                self.reap(index, 0);
            }
        }
    }
}

/// Why a worker ended, for the user.
fn describe_exit(status: libc::c_int, slot_message: Option<String>) -> String {
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        let hint = if signal == libc::SIGKILL { " (an OOM kill looks like this; see memory.events or dmesg)" } else { "" };
        format!("killed by {}{hint}", signal_name(signal))
    } else if let Some(message) = slot_message {
        message
    } else {
        format!("exited with status {}", libc::WEXITSTATUS(status))
    }
}

/// Measures one placement.
pub fn measure(spec: &RunSpec, leaf: &Leaf, hierarchy: &Hierarchy, warn: &mut dyn FnMut(String)) -> Result<PlacementRun> {
    check_interrupt()?;
    let count = spec.cpus.len();
    let slots = Slots::new(count).map_err(|e| anyhow!("mapping worker counters: {e}"))?;
    let harness_pid = getpid();
    // Workers already in the leaf (the baseline in the harness's own cgroup) are not moved:
    // faultscale writes to no cgroup.procs it does not need to.
    let own_cgroup = cgroup_of(harness_pid.as_raw(), hierarchy)?;
    let cgroup_procs: Option<PathBuf> =
        (own_cgroup != leaf.cgroup_path).then(|| leaf.fs_path.join("cgroup.procs"));

    let mut workers = Workers { pids: Vec::new(), cpus: spec.cpus.clone(), reaped: Vec::new(), group: None };
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    for (index, &cpu) in spec.cpus.iter().enumerate() {
        let plan = WorkerPlan {
            cpu,
            harness_pid,
            process_group: workers.group,
            cgroup_procs: cgroup_procs.as_deref(),
            worker_index: index,
            settings: &spec.settings,
            slot: slots.get(index),
        };
        // SAFETY: the harness has no other thread, so the child may run arbitrary code.
        match unsafe { fork() }.map_err(|e| anyhow!("fork: {e}"))? {
            ForkResult::Child => worker::main(&plan),
            ForkResult::Parent { child } => {
                let group = *workers.group.get_or_insert(child);
                // Both sides set the group, so it is in place whichever runs first.
                let _ = setpgid(child, group);
                workers.pids.push(child);
                workers.reaped.push(false);
            }
        }
    }

    wait_ready(&mut workers, &slots)?;
    for &pid in &workers.pids {
        let actual = cgroup_of(pid.as_raw(), hierarchy)?;
        if actual != leaf.cgroup_path {
            bail!("worker {pid} is in cgroup {actual}, not {}", leaf.cgroup_path);
        }
    }

    let mut perf: Vec<WorkerPerf> = Vec::new();
    let mut source = spec.kernel_count;
    for &pid in workers.pids.iter().take(if source == KernelCountSource::Perf { count } else { 0 }) {
        match WorkerPerf::open(pid.as_raw()).and_then(|mut p| p.enable().map(|_| p)) {
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
    let group = workers.group.expect("at least one worker");
    let read_iterations = || -> Vec<u64> { (0..count).map(|i| slots.get(i).iterations.load(Ordering::Relaxed)).collect() };

    // Without warmup every baseline is read before the release, while the workers are still
    // parked in sigwait, so the harness does nothing on a measured CPU right after it.
    let warmup_ns = spec.warmup.as_nanos() as u64;
    let mut perf_before: Vec<PerfReading> = perf.iter_mut().map(|p| p.read().unwrap_or_default()).collect();
    let mut memcg_before = memcg::pgfault(&leaf.fs_path);
    let mut iterations_before = vec![0; count];
    let mut minflt_before: Vec<u64> = (0..count).map(|i| slots.get(i).ready_minflt.load(Ordering::Relaxed)).collect();

    check_interrupt()?;
    let released_ns = monotonic_ns();
    killpg(group, signals::START_SIGNAL).map_err(|e| anyhow!("releasing workers: {e}"))?;
    let mut started_ns = released_ns;
    if warmup_ns > 0 {
        wait_until(released_ns + warmup_ns, &mut workers, &slots)?;
        started_ns = monotonic_ns();
        iterations_before = read_iterations();
        minflt_before = workers.pids.iter().map(|pid| task_minflt(pid.as_raw()).unwrap_or(0)).collect();
        perf_before = perf.iter_mut().map(|p| p.read().unwrap_or_default()).collect();
        memcg_before = memcg::pgfault(&leaf.fs_path);
    }

    let duration_ns = spec.duration.as_nanos() as u64;
    let interval_ns = spec.interval.as_nanos() as u64;
    let mut samples = Vec::new();
    let stop_ns = started_ns + duration_ns;
    let mut next_ns = (started_ns + interval_ns).min(stop_ns);
    while next_ns < stop_ns {
        wait_until(next_ns, &mut workers, &slots)?;
        let now = monotonic_ns();
        let iterations = read_iterations();
        samples.push(Sample {
            elapsed_ns: now - started_ns,
            iterations: iterations.iter().zip(&iterations_before).map(|(a, b)| a - b).collect(),
        });
        next_ns = (next_ns + interval_ns).min(stop_ns);
    }
    wait_until(stop_ns, &mut workers, &slots)?;

    // Stop: SIGSTOP freezes every worker at once; counters are read while they are frozen so
    // loop, perf and memcg counts describe the same instant.
    let stopped_ns = monotonic_ns();
    killpg(group, Signal::SIGSTOP).map_err(|e| anyhow!("stopping workers: {e}"))?;
    for index in 0..count {
        match workers.reap(index, libc::WUNTRACED) {
            Some((status, _)) if libc::WIFSTOPPED(status) => {}
            Some((status, _)) => return Err(died_with(&workers, &slots, index, status).into()),
            None => return Err(worker_died(&mut workers, &slots, index).into()),
        }
    }
    let iterations: Vec<u64> =
        read_iterations().iter().zip(&iterations_before).map(|(after, before)| after - before).collect();
    samples.push(Sample { elapsed_ns: stopped_ns - started_ns, iterations: iterations.clone() });
    let perf_after: Vec<PerfReading> =
        perf.iter_mut().map(|p| p.read()).collect::<std::io::Result<_>>().map_err(|e| anyhow!("reading perf counters: {e}"))?;
    let memcg_after = memcg::pgfault(&leaf.fs_path);
    drop(perf);

    workers.kill_all();
    let faults_per_iteration = workload::shape(&spec.settings).per_iteration;
    let mut results = Vec::with_capacity(count);
    let start_times: Vec<u64> = (0..count).map(|i| slots.get(i).start_ns.load(Ordering::Relaxed)).collect();
    for index in 0..count {
        let (_, usage) = workers
            .reap(index, 0)
            .ok_or_else(|| anyhow!("worker {} vanished before it was reaped", workers.pids[index]))?;
        let loop_faults = iterations[index] * faults_per_iteration;
        let perf_delta = (source == KernelCountSource::Perf).then(|| perf_after[index].since(&perf_before[index]));
        let kernel_faults = match perf_delta {
            Some(p) => p.page_faults,
            None => (usage.ru_minflt as u64).saturating_sub(minflt_before[index]),
        };
        results.push(WorkerResult {
            cpu: spec.cpus[index],
            pid: workers.pids[index].as_raw(),
            iterations: iterations[index],
            loop_faults,
            kernel_faults,
            perf: perf_delta,
            cpu_share: (user_us(&usage) + sys_us(&usage)) as f64 * 1e3 / (stopped_ns - released_ns) as f64,
            user_us: user_us(&usage),
            sys_us: sys_us(&usage),
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

/// A running task's minor faults, field 10 of /proc/PID/stat.
fn task_minflt(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses; fields resume after the last ')'.
    stat[stat.rfind(')')? + 1..].split_whitespace().nth(7)?.parse().ok()
}

/// Sleeps until `deadline_ns` on the monotonic clock; returns early with an error when a stop
/// signal arrives or a worker dies.
fn wait_until(deadline_ns: u64, workers: &mut Workers, slots: &Slots) -> Result<()> {
    loop {
        // Checked before sleeping as well as after, since SIGCHLD may land just before; a
        // death in the last instant before the sleep is still caught at the next wait.
        if signals::take_child_changed() {
            if let Some(dead) = workers.find_dead() {
                return Err(worker_died(workers, slots, dead).into());
            }
        }
        check_interrupt()?;
        if sleep_until(deadline_ns) {
            return check_interrupt();
        }
    }
}

fn wait_ready(workers: &mut Workers, slots: &Slots) -> Result<()> {
    let deadline = monotonic_ns() + READY_TIMEOUT.as_nanos() as u64;
    loop {
        check_interrupt()?;
        let mut ready = 0;
        for index in 0..workers.pids.len() {
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
        if ready == workers.pids.len() {
            return Ok(());
        }
        if let Some(dead) = workers.find_dead() {
            bail!("{}", worker_died(workers, slots, dead));
        }
        if monotonic_ns() > deadline {
            bail!("workers did not report ready within {} s", READY_TIMEOUT.as_secs());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn worker_died(workers: &mut Workers, slots: &Slots, index: usize) -> WorkerDied {
    // The exit status, if it is still there to collect.
    match workers.reap(index, libc::WNOHANG) {
        Some((status, _)) => died_with(workers, slots, index, status),
        None => WorkerDied(format!(
            "worker {} on CPU {} stopped: {}",
            workers.pids[index],
            workers.cpus[index],
            slots.get(index).failure().unwrap_or_else(|| "exited".into())
        )),
    }
}

fn died_with(workers: &Workers, slots: &Slots, index: usize, status: libc::c_int) -> WorkerDied {
    WorkerDied(format!(
        "worker {} on CPU {} stopped: {}",
        workers.pids[index],
        workers.cpus[index],
        describe_exit(status, slots.get(index).failure())
    ))
}
