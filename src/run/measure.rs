//! The start/stop protocol for one placement: fork the pinned workers, wait until all are
//! ready, release them with one signal, sample on the monotonic clock, stop them with one
//! signal, read every counter while they are frozen, then kill and reap them.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use nix::sys::signal::Signal;
use nix::unistd::getpid;

use super::slots::{STATE_DONE, STATE_FAILED, STATE_READY, Slots};
use super::workers::Workers;
use super::{
    Interrupted, KernelCountSource, Mode, Notice, PlacementRun, Progress, RunSpec, Sample, Tick, WorkerDied,
    WorkerResult, signals,
};
use crate::cgroup::layout::cgroup_of;
use crate::cgroup::{Hierarchy, Leaf};
use crate::measure::clock::{monotonic_ns, sleep_until};
use crate::measure::memcg;
use crate::measure::perf::{PerfReading, WorkerPerf};
use crate::measure::procfs::{ProcStat, process_stat, task_stat};
use crate::measure::sampling::WorkerSampler;
use crate::measure::stacks::ProfileCounts;
use crate::workload;

/// How long workers may take from fork to ready before the run gives up.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// --iterations: how often the harness looks whether every worker has done its work. The
/// elapsed time comes from the workers' own finish stamps, so this sets only how long the
/// last worker sits parked before the counters are read; each look is a wakeup on a CPU the
/// workers may be using, so not too often.
const DONE_POLL_NS: u64 = 5_000_000;

fn check_interrupt() -> Result<()> {
    match signals::received() {
        Some(signal) => Err(Interrupted(signal).into()),
        None => Ok(()),
    }
}

/// Measures one placement: its workers in `worker_leaves` (one per worker: `leaf` itself, or
/// for `siblings:N` the sibling each worker is dealt).
pub fn measure(
    spec: &RunSpec,
    leaf: &Leaf,
    worker_leaves: &[&Leaf],
    hierarchy: &Hierarchy,
    warn: &mut dyn FnMut(Notice),
    progress: &mut dyn Progress,
) -> Result<PlacementRun> {
    check_interrupt()?;
    let count = spec.cpus.len();
    let slots = Slots::new(count).map_err(|e| anyhow!("mapping worker counters: {e}"))?;
    // Workers already in the leaf (the baseline in the harness's own cgroup) are not moved:
    // faultscale writes to no cgroup.procs it does not need to.
    let own_cgroup = cgroup_of(getpid().as_raw(), hierarchy)?;
    // One cgroup per worker process; in thread mode the one process holds every worker.
    let process_leaves: Vec<&Leaf> = match spec.mode {
        Mode::Process => worker_leaves.to_vec(),
        Mode::Thread => vec![worker_leaves[0]],
    };
    let cgroup_procs: Vec<Option<PathBuf>> = process_leaves
        .iter()
        .map(|target| (own_cgroup != target.cgroup_path).then(|| target.fs_path.join("cgroup.procs")))
        .collect();
    let mut workers = Workers::spawn(spec.mode, &spec.cpus, &cgroup_procs, &spec.settings, &slots)?;

    wait_ready(&mut workers, &slots)?;
    for (&pid, target) in workers.processes.iter().zip(&process_leaves) {
        let actual = cgroup_of(pid.as_raw(), hierarchy)?;
        if actual != target.cgroup_path {
            bail!("worker {pid} is in cgroup {actual}, not {}", target.cgroup_path);
        }
    }
    // The memcg counters of the workers' cgroups: the siblings' summed (v1 keeps them per
    // cgroup, not for the subtree), else the leaf's own.
    let memcg_dirs: Vec<&std::path::Path> = match leaf.siblings.is_empty() {
        true => vec![leaf.fs_path.as_path()],
        false => leaf.siblings.iter().map(|s| s.fs_path.as_path()).collect(),
    };
    let tids: Vec<i32> = (0..count).map(|i| slots.get(i).tid.load(Ordering::Relaxed)).collect();

    let (mut perf, source) = match spec.kernel_count {
        KernelCountSource::Perf => open_perf(&tids, warn),
        KernelCountSource::Minflt => (Vec::new(), KernelCountSource::Minflt),
    };
    let mut samplers: Vec<WorkerSampler> = if spec.profile {
        tids.iter()
            .map(|&tid| WorkerSampler::open(tid))
            .collect::<std::io::Result<_>>()
            .map_err(|e| anyhow!("--profile: sampling the workers: {e}"))?
    } else {
        Vec::new()
    };
    let mut stacks: Vec<Vec<Vec<u64>>> = vec![Vec::new(); samplers.len()];
    let read_iterations =
        || -> Vec<u64> { (0..count).map(|i| slots.get(i).iterations.load(Ordering::Relaxed)).collect() };
    let task_stats = |workers: &Workers| -> Vec<Option<ProcStat>> {
        (0..count).map(|i| task_stat(workers.process_of(i).as_raw(), tids[i])).collect()
    };

    // Without warmup every baseline is read before the release, while the workers are still
    // parked, so the harness does nothing on a measured CPU right after it.
    let warmup_ns = spec.warmup.as_nanos() as u64;
    let mut perf_before: Vec<PerfReading> = perf.iter_mut().map(|p| p.read().unwrap_or_default()).collect();
    let mut memcg_before = memcg::pgfault_over(&memcg_dirs);
    let mut counters_before = memcg::counters_over(&leaf.fs_path, &memcg_dirs).0;
    let mut iterations_before = vec![0; count];
    let mut minflt_before: Vec<u64> = (0..count).map(|i| slots.get(i).ready_minflt.load(Ordering::Relaxed)).collect();

    check_interrupt()?;
    // Sampling covers the measured span only: from the release, or from the end of warmup.
    let enable_sampling = |samplers: &mut Vec<WorkerSampler>| -> Result<()> {
        samplers.iter_mut().try_for_each(|s| s.enable()).map_err(|e| anyhow!("--profile: {e}"))
    };
    if warmup_ns == 0 {
        enable_sampling(&mut samplers)?;
    }
    let released_ns = monotonic_ns();
    workers.signal_all(signals::START_SIGNAL)?;
    let mut started_ns = released_ns;
    if warmup_ns > 0 {
        wait_until(released_ns + warmup_ns, &mut workers, &slots)?;
        // After warmup the baselines are read as the final counts are: with every worker
        // frozen, so loop, kernel and memcg counts all start at the same instant.
        freeze(&mut workers, &slots)?;
        iterations_before = read_iterations();
        minflt_before = task_stats(&workers).iter().map(|t| t.as_ref().map(|t| t.minflt).unwrap_or(0)).collect();
        perf_before = perf.iter_mut().map(|p| p.read().unwrap_or_default()).collect();
        memcg_before = memcg::pgfault_over(&memcg_dirs);
        counters_before = memcg::counters_over(&leaf.fs_path, &memcg_dirs).0;
        enable_sampling(&mut samplers)?;
        started_ns = monotonic_ns();
        workers.signal_all(Signal::SIGCONT)?;
    }

    let per_iteration = workload::shape(&spec.settings).per_iteration;
    // Fixed work (--iterations): the run ends when every worker is done, not at a time.
    let fixed = spec.settings.fixed_iterations;
    let all_done = || (0..count).all(|i| slots.get(i).state.load(Ordering::Acquire) == STATE_DONE);
    let duration_ns = spec.duration.as_nanos() as u64;
    let interval_ns = spec.interval.as_nanos() as u64;
    let mut samples = Vec::new();
    let stop_ns = if fixed.is_some() { u64::MAX } else { started_ns + duration_ns };
    let mut next_ns = (started_ns + interval_ns).min(stop_ns);
    loop {
        if fixed.is_some() {
            if all_done() {
                break;
            }
            wait_until((monotonic_ns() + DONE_POLL_NS).min(next_ns), &mut workers, &slots)?;
            if monotonic_ns() < next_ns {
                continue;
            }
        } else {
            if next_ns >= stop_ns {
                break;
            }
            wait_until(next_ns, &mut workers, &slots)?;
        }
        let now = monotonic_ns();
        let iterations: Vec<u64> = read_iterations().iter().zip(&iterations_before).map(|(a, b)| a - b).collect();
        let (previous_ns, previous): (u64, u64) =
            samples.last().map(|s: &Sample| (s.elapsed_ns, s.iterations.iter().sum())).unwrap_or((0, 0));
        let done: u64 = iterations.iter().sum();
        let elapsed_s = (now - started_ns) as f64 / 1e9;
        progress.tick(&Tick {
            elapsed_s,
            duration_s: match fixed {
                // Estimated from the work done so far.
                Some(limit) if done > 0 => elapsed_s * (limit * count as u64) as f64 / done as f64,
                Some(_) => elapsed_s,
                None => duration_ns as f64 / 1e9,
            },
            rate: (done - previous) as f64 * per_iteration as f64 / ((now - started_ns - previous_ns) as f64 / 1e9),
        });
        samples.push(Sample { elapsed_ns: now - started_ns, iterations });
        for (sampler, stacks) in samplers.iter_mut().zip(&mut stacks) {
            sampler.drain(stacks);
        }
        next_ns = (next_ns + interval_ns).min(stop_ns);
    }
    if fixed.is_none() {
        wait_until(stop_ns, &mut workers, &slots)?;
    }

    // Stop: SIGSTOP freezes every worker at once; counters are read while they are frozen so
    // loop, perf, per-task and memcg counts describe the same instant.
    let stopped_ns = monotonic_ns();
    freeze(&mut workers, &slots)?;
    let iterations: Vec<u64> =
        read_iterations().iter().zip(&iterations_before).map(|(after, before)| after - before).collect();
    let start_times: Vec<u64> = (0..count).map(|i| slots.get(i).start_ns.load(Ordering::Relaxed)).collect();
    let finish_times: Vec<u64> = (0..count).map(|i| slots.get(i).finish_ns.load(Ordering::Relaxed)).collect();
    // Fixed work is timed as `time` timed the 2011 runs: first start to last finish, from the
    // workers' own clock stamps.
    let elapsed_ns = match fixed {
        Some(_) => finish_times
            .iter()
            .max()
            .copied()
            .unwrap_or(0)
            .saturating_sub(start_times.iter().min().copied().unwrap_or(0)),
        None => stopped_ns - started_ns,
    };
    samples.push(Sample { elapsed_ns, iterations: iterations.clone() });
    let perf_after: Vec<PerfReading> = perf
        .iter_mut()
        .map(|p| p.read())
        .collect::<std::io::Result<_>>()
        .map_err(|e| anyhow!("reading perf counters: {e}"))?;
    let memcg_after = memcg::pgfault_over(&memcg_dirs);
    let (counters_after, psi_scope) = memcg::counters_over(&leaf.fs_path, &memcg_dirs);
    // Threads have no rusage of their own at reaping; read each while it is frozen.
    let stats_after = task_stats(&workers);
    drop(perf);
    // Named while the workers are stopped: their mappings still say what the user frames are.
    let profile = (!samplers.is_empty()).then(|| {
        let mut total = ProfileCounts::default();
        for (index, (sampler, stacks)) in samplers.iter_mut().zip(&mut stacks).enumerate() {
            let _ = sampler.disable();
            sampler.drain(stacks);
            let mut counts =
                crate::measure::stacks::count(stacks, workers.process_of(index).as_raw() as u32, sampler.lost);
            counts.event = sampler.event.name();
            total.add(&counts);
        }
        total
    });
    drop(samplers);

    workers.kill_all();
    // Process mode: wait4's rusage, which includes what each worker's children did (fork).
    let mut usages: Vec<Option<libc::rusage>> = Vec::new();
    for process in 0..workers.processes.len() {
        let (_, usage) = workers
            .reap(process, 0)
            .ok_or_else(|| anyhow!("worker {} vanished before it was reaped", workers.processes[process]))?;
        usages.push(Some(usage));
    }
    let mut results = Vec::with_capacity(count);
    for index in 0..count {
        let (minflt, user, sys) = match (spec.mode, usages[0], &stats_after[index]) {
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
            // A worker with fixed work is measured over its own span: parked, it needs no CPU.
            cpu_share: match fixed {
                Some(_) => {
                    (user + sys) as f64 * 1e3 / finish_times[index].saturating_sub(start_times[index]).max(1) as f64
                }
                None => (user + sys) as f64 * 1e3 / (stopped_ns - released_ns) as f64,
            },
            user_us: user,
            sys_us: sys,
            start_offset_ns: start_times[index].saturating_sub(released_ns),
            cgroup_path: (!leaf.siblings.is_empty()).then(|| worker_leaves[index].cgroup_path.clone()),
        });
    }
    let first = start_times.iter().copied().min().unwrap_or(0);
    let last = start_times.iter().copied().max().unwrap_or(0);
    Ok(PlacementRun {
        elapsed_ns,
        start_skew_ns: last - first,
        workers: results,
        memcg_pgfault: match (memcg_before, memcg_after) {
            (Some(before), Some(after)) => Some(after.saturating_sub(before)),
            _ => None,
        },
        kernel_source: source,
        samples,
        overran: fixed.is_none() && (stopped_ns - started_ns) as f64 > 1.1 * duration_ns as f64,
        memcg: memcg::delta(&counters_before, &counters_after),
        psi_scope,
        profile,
    })
}

/// perf counters on every worker thread, or none (and minflt as the source) when the machine
/// refuses them.
fn open_perf(tids: &[i32], warn: &mut dyn FnMut(Notice)) -> (Vec<WorkerPerf>, KernelCountSource) {
    let mut perf = Vec::with_capacity(tids.len());
    for &tid in tids {
        match WorkerPerf::open(tid).and_then(|mut p| p.enable().map(|_| p)) {
            Ok(counters) => {
                if !counters.has_hardware_counters() {
                    warn(Notice::NoHardwareCounters);
                }
                perf.push(counters)
            }
            Err(e) => {
                warn(Notice::PerfUnavailable(e.to_string()));
                return (Vec::new(), KernelCountSource::Minflt);
            }
        }
    }
    (perf, KernelCountSource::Perf)
}

fn user_us(usage: &libc::rusage) -> u64 {
    usage.ru_utime.tv_sec as u64 * 1_000_000 + usage.ru_utime.tv_usec as u64
}

fn sys_us(usage: &libc::rusage) -> u64 {
    usage.ru_stime.tv_sec as u64 * 1_000_000 + usage.ru_stime.tv_usec as u64
}

/// Stops every worker with one SIGSTOP to their group and waits until each is stopped, so
/// every counter read next describes one instant.
fn freeze(workers: &mut Workers, slots: &Slots) -> Result<()> {
    workers.signal_all(Signal::SIGSTOP)?;
    for process in 0..workers.processes.len() {
        match workers.reap(process, libc::WUNTRACED) {
            Some((status, _)) if libc::WIFSTOPPED(status) => {}
            Some((status, _)) => return Err(workers.died_with(slots, process, Some(status)).into()),
            None => return Err(workers.died(slots, process).into()),
        }
    }
    Ok(())
}

/// Ctrl-Z: the workers run in their own process group, out of the terminal's reach, so the
/// harness stops them, stops itself, and lets them go on when it is continued. The slice then
/// overran its time and is flagged, not silently kept.
fn pause_if_asked(workers: &Workers) {
    if signals::take_stop_request() {
        let _ = workers.signal_all(Signal::SIGSTOP);
        let _ = nix::sys::signal::raise(Signal::SIGSTOP);
        let _ = workers.signal_all(Signal::SIGCONT);
    }
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
        pause_if_asked(workers);
        if sleep_until(deadline_ns) {
            return check_interrupt();
        }
    }
}

/// Waits until every worker reports ready. A worker that fails, dies or hangs before that ends
/// this placement only (a `WorkerDied` naming it, its CPU and why); the run goes on.
fn wait_ready(workers: &mut Workers, slots: &Slots) -> Result<()> {
    let deadline = monotonic_ns() + READY_TIMEOUT.as_nanos() as u64;
    let count = workers.cpus.len();
    loop {
        check_interrupt()?;
        pause_if_asked(workers);
        let mut ready = 0;
        for index in 0..count {
            let slot = slots.get(index);
            match slot.state.load(Ordering::Acquire) {
                STATE_READY => ready += 1,
                STATE_FAILED => {
                    return Err(WorkerDied(format!(
                        "worker {} on CPU {} could not start: {}",
                        workers.process_of(index),
                        workers.cpus[index],
                        slot.failure().unwrap_or_default()
                    ))
                    .into());
                }
                _ => {}
            }
        }
        if ready == count {
            return Ok(());
        }
        if let Some(dead) = workers.find_dead() {
            return Err(workers.died(slots, dead).into());
        }
        if monotonic_ns() > deadline {
            let waiting: Vec<String> = (0..count)
                .filter(|&i| slots.get(i).state.load(Ordering::Acquire) != STATE_READY)
                .map(|i| {
                    let pid = workers.process_of(i);
                    let state = match process_stat(pid.as_raw() as u32).map(|s| s.state) {
                        Some('T' | 't') => "stopped by a signal",
                        Some('D') => "blocked in the kernel",
                        Some(_) => "still preparing",
                        None => "gone",
                    };
                    format!("worker {pid} on CPU {} ({state})", workers.cpus[i])
                })
                .collect();
            let shown = waiting.iter().take(4).cloned().collect::<Vec<_>>().join(", ");
            let more = if waiting.len() > 4 { format!(" and {} more", waiting.len() - 4) } else { String::new() };
            return Err(
                WorkerDied(format!("{shown}{more} did not report ready within {} s", READY_TIMEOUT.as_secs())).into()
            );
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
