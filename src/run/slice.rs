//! One slice in named phases: spawn the pinned workers, wait until all are ready, read a
//! snapshot, release them with one signal, sample on the monotonic clock, stop them with one
//! signal and read a snapshot while they are frozen, then kill and reap them. Each worker's
//! result is the difference of the two snapshots (`after.since(before)`).

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use anyhow::{Result, anyhow, bail};
use nix::sys::signal::Signal;
use nix::unistd::getpid;

use super::control::{check_interrupt, freeze, take_paused, wait_ready, wait_until};
use super::slots::{STATE_DONE, Slots};
use super::workers::Workers;
use super::{KernelCountSource, Mode, Notice, PlacementRun, Progress, RunSpec, Sample, Tick, WorkerResult, signals};
use crate::cgroup::layout::cgroup_of;
use crate::cgroup::{Hierarchy, Leaf};
use crate::measure::clock::monotonic_ns;
use crate::measure::memcg::{self, Counters, PsiScope};
use crate::measure::perf::{PerfReading, WorkerPerf};
use crate::measure::procfs::{ProcStat, SchedTimes, children_cpu_ns, sched_times, steal_ns, task_stat};
use crate::measure::sampling::WorkerSampler;
use crate::measure::stacks::ProfileCounts;
use crate::workload;

/// --iterations: how often the harness looks whether every worker has done its work. The
/// elapsed time comes from the workers' own finish stamps, so this sets only how long the
/// last worker sits parked before the counters are read; each look is a wakeup on a CPU the
/// workers may be using, so not too often.
const DONE_POLL_NS: u64 = 5_000_000;

/// What one slice measures: its workers' CPUs and the cgroup each worker runs in (`leaf`
/// itself, or for `siblings:N` the sibling each worker is dealt).
pub struct SliceSpec<'a> {
    pub cpus: Vec<usize>,
    pub leaf: &'a Leaf,
    pub worker_leaves: Vec<&'a Leaf>,
}

/// Every counter of a slice's workers at one instant, read the same way at both ends.
struct Snapshot {
    iterations: Vec<u64>,
    /// Per worker: its minor faults (the fallback kernel count).
    minflt: Vec<u64>,
    perf: Vec<PerfReading>,
    memcg_pgfault: Option<u64>,
    memcg: Counters,
    psi_scope: Option<PsiScope>,
    /// Per worker thread, /proc's view (thread mode's CPU times come from here).
    tasks: Vec<Option<ProcStat>>,
    /// Per worker thread, its time on a CPU and waiting for one.
    sched: Vec<Option<SchedTimes>>,
    /// Per CPU number, the hypervisor's steal so far.
    steal_ns: Vec<Option<u64>>,
    /// Per worker in process mode, its waited-for children's CPU time (fork's children do the
    /// faulting); empty in thread mode.
    children_ns: Vec<Option<u64>>,
}

/// The clock stamps of a slice: release, start of the measured span (after warmup), stop.
struct Timing {
    released_ns: u64,
    started_ns: u64,
    stopped_ns: u64,
}

/// One worker's loop count and the span its CPU share is taken over.
struct Span {
    iterations: u64,
    span_ns: u64,
    /// When the worker entered its loop, from the release signal.
    start_offset_ns: u64,
}

/// A slice's live workers and the counters opened on them.
struct Slice<'a> {
    spec: &'a RunSpec,
    request: &'a SliceSpec<'a>,
    slots: Slots,
    workers: Workers,
    process_leaves: Vec<&'a Leaf>,
    tids: Vec<i32>,
    memcg_dirs: Vec<PathBuf>,
    perf: Vec<WorkerPerf>,
    source: KernelCountSource,
    samplers: Vec<WorkerSampler>,
    stacks: Vec<Vec<Vec<u64>>>,
    per_iteration: u64,
}

/// Measures one slice.
pub fn measure(
    spec: &RunSpec,
    request: &SliceSpec,
    hierarchy: &Hierarchy,
    warn: &mut dyn FnMut(Notice),
    progress: &mut dyn Progress,
) -> Result<PlacementRun> {
    check_interrupt()?;
    take_paused();
    let mut slice = Slice::spawn(spec, request, hierarchy)?;
    slice.ready(hierarchy)?;
    slice.open_counters(warn)?;
    // Without warmup the first snapshot is read before the release, while the workers are still
    // parked, so the harness does nothing on a measured CPU right after it.
    let mut before = slice.snapshot_before(false);
    check_interrupt()?;
    let mut timing = slice.release(&mut before)?;
    let samples = slice.sample(&timing, &before, progress)?;
    // Stop: SIGSTOP freezes every worker at once; counters are read while they are frozen so
    // loop, perf, per-task and memcg counts describe the same instant.
    timing.stopped_ns = monotonic_ns();
    freeze(&mut slice.workers, &slice.slots)?;
    let after = slice.snapshot_frozen()?;
    let profile = slice.name_profile();
    let usages = slice.reap()?;
    let run = slice.result(&before, &after, &usages, &timing, samples)?;
    Ok(PlacementRun { profile, ..run })
}

impl<'a> Slice<'a> {
    /// Phase 1, spawn: the workers forked, pinned and moved into their cgroups.
    fn spawn(spec: &'a RunSpec, request: &'a SliceSpec<'a>, hierarchy: &Hierarchy) -> Result<Self> {
        let count = request.cpus.len();
        let slots = Slots::new(count).map_err(|e| anyhow!("mapping worker counters: {e}"))?;
        // Workers already in the leaf (the baseline in the harness's own cgroup) are not moved:
        // faultscale writes to no cgroup.procs it does not need to.
        let own_cgroup = cgroup_of(getpid().as_raw(), hierarchy)?;
        // One cgroup per worker process; in thread mode the one process holds every worker.
        let process_leaves: Vec<&Leaf> = match spec.mode {
            Mode::Process => request.worker_leaves.clone(),
            Mode::Thread => vec![request.worker_leaves[0]],
        };
        let cgroup_procs: Vec<Option<PathBuf>> = process_leaves
            .iter()
            .map(|target| (own_cgroup != target.cgroup_path).then(|| target.fs_path.join("cgroup.procs")))
            .collect();
        let workers = Workers::spawn(spec.mode, &request.cpus, &cgroup_procs, &spec.settings, &slots)?;
        // The memcg counters of the workers' cgroups: the siblings' summed (v1 keeps them per
        // cgroup, not for the subtree), else the leaf's own.
        let leaf = request.leaf;
        let memcg_dirs = match leaf.siblings.is_empty() {
            true => vec![leaf.fs_path.clone()],
            false => leaf.siblings.iter().map(|s| s.fs_path.clone()).collect(),
        };
        Ok(Slice {
            spec,
            request,
            slots,
            workers,
            process_leaves,
            tids: Vec::new(),
            memcg_dirs,
            perf: Vec::new(),
            source: spec.kernel_count,
            samplers: Vec::new(),
            stacks: Vec::new(),
            per_iteration: workload::shape(&spec.settings).per_iteration,
        })
    }

    /// Phase 2, ready: every worker reported ready, in the cgroup it was meant for.
    fn ready(&mut self, hierarchy: &Hierarchy) -> Result<()> {
        wait_ready(&mut self.workers, &self.slots)?;
        for (&pid, target) in self.workers.processes.iter().zip(&self.process_leaves) {
            let actual = cgroup_of(pid.as_raw(), hierarchy)?;
            if actual != target.cgroup_path {
                bail!("worker {pid} is in cgroup {actual}, not {}", target.cgroup_path);
            }
        }
        self.tids = (0..self.count()).map(|i| self.slots.get(i).tid.load(Ordering::Relaxed)).collect();
        Ok(())
    }

    /// perf counters (or minflt where the machine refuses them) and --profile's samplers.
    fn open_counters(&mut self, warn: &mut dyn FnMut(Notice)) -> Result<()> {
        if self.spec.kernel_count == KernelCountSource::Perf {
            (self.perf, self.source) = open_perf(&self.tids, warn);
        }
        if self.spec.profile {
            self.samplers = self
                .tids
                .iter()
                .map(|&tid| WorkerSampler::open(tid))
                .collect::<std::io::Result<_>>()
                .map_err(|e| anyhow!("--profile: sampling the workers: {e}"))?;
        }
        self.stacks = vec![Vec::new(); self.samplers.len()];
        Ok(())
    }

    fn count(&self) -> usize {
        self.request.cpus.len()
    }

    fn iterations(&self) -> Vec<u64> {
        (0..self.count()).map(|i| self.slots.get(i).iterations.load(Ordering::Relaxed)).collect()
    }

    fn task_stats(&self) -> Vec<Option<ProcStat>> {
        (0..self.count()).map(|i| task_stat(self.workers.process_of(i).as_raw(), self.tids[i])).collect()
    }

    fn memcg_dirs(&self) -> Vec<&std::path::Path> {
        self.memcg_dirs.iter().map(PathBuf::as_path).collect()
    }

    /// The snapshot read at both ends; `perf` is read by the caller, which decides what a
    /// failed read means at its end. Parked workers' minor faults are those each recorded at
    /// ready; frozen workers' are read from /proc (threads have no rusage of their own).
    fn snapshot(&self, perf: Vec<PerfReading>, frozen: bool) -> Snapshot {
        let tasks = if frozen { self.task_stats() } else { Vec::new() };
        let minflt = match frozen {
            true => tasks.iter().map(|t| t.as_ref().map(|t| t.minflt).unwrap_or(0)).collect(),
            false => (0..self.count()).map(|i| self.slots.get(i).ready_minflt.load(Ordering::Relaxed)).collect(),
        };
        let dirs = self.memcg_dirs();
        let (memcg, psi_scope) = memcg::counters_over(&self.request.leaf.fs_path, &dirs);
        Snapshot {
            sched: (0..self.count()).map(|i| sched_times(self.workers.process_of(i).as_raw(), self.tids[i])).collect(),
            steal_ns: steal_ns(),
            children_ns: match self.spec.mode {
                Mode::Process => {
                    (0..self.count()).map(|i| children_cpu_ns(self.workers.process_of(i).as_raw())).collect()
                }
                Mode::Thread => Vec::new(),
            },
            iterations: self.iterations(),
            minflt,
            perf,
            memcg_pgfault: memcg::pgfault_over(&dirs),
            memcg,
            psi_scope,
            tasks,
        }
    }

    /// The first snapshot, of parked workers (or, after warmup, frozen ones); a perf counter
    /// that cannot be read yet counts from zero.
    fn snapshot_before(&mut self, frozen: bool) -> Snapshot {
        let perf = self.perf.iter_mut().map(|p| p.read().unwrap_or_default()).collect();
        self.snapshot(perf, frozen)
    }

    /// A snapshot of frozen workers; at the end a perf counter that cannot be read fails the slice.
    fn snapshot_frozen(&mut self) -> Result<Snapshot> {
        let perf = self
            .perf
            .iter_mut()
            .map(|p| p.read())
            .collect::<std::io::Result<_>>()
            .map_err(|e| anyhow!("reading perf counters: {e}"))?;
        Ok(self.snapshot(perf, true))
    }

    /// Sampling covers the measured span only: from the release, or from the end of warmup.
    fn enable_sampling(&mut self) -> Result<()> {
        self.samplers.iter_mut().try_for_each(|s| s.enable()).map_err(|e| anyhow!("--profile: {e}"))
    }

    /// Phase 4, release: one signal to the workers' group; after warmup they are frozen and
    /// `before` is read again, so loop, kernel and memcg counts all start at the same instant.
    fn release(&mut self, before: &mut Snapshot) -> Result<Timing> {
        let warmup_ns = self.spec.warmup.as_nanos() as u64;
        if warmup_ns == 0 {
            self.enable_sampling()?;
        }
        let released_ns = monotonic_ns();
        self.workers.signal_all(signals::START_SIGNAL)?;
        let mut started_ns = released_ns;
        if warmup_ns > 0 {
            wait_until(released_ns + warmup_ns, &mut self.workers, &self.slots)?;
            freeze(&mut self.workers, &self.slots)?;
            *before = self.snapshot_before(true);
            self.enable_sampling()?;
            started_ns = monotonic_ns();
            self.workers.signal_all(Signal::SIGCONT)?;
        }
        Ok(Timing { released_ns, started_ns, stopped_ns: 0 })
    }

    /// Phase 5, sample: the loop counters every --interval until the slice's time is up (or,
    /// with --iterations, until every worker is done), the progress told at each sample.
    fn sample(&mut self, timing: &Timing, before: &Snapshot, progress: &mut dyn Progress) -> Result<Vec<Sample>> {
        let fixed = self.spec.settings.fixed_iterations;
        let interval_ns = self.spec.interval.as_nanos() as u64;
        let stop_ns = match fixed {
            Some(_) => u64::MAX,
            None => timing.started_ns + self.spec.duration.as_nanos() as u64,
        };
        let mut samples = Vec::new();
        let mut next_ns = (timing.started_ns + interval_ns).min(stop_ns);
        loop {
            if fixed.is_some() {
                if self.all_done() {
                    break;
                }
                wait_until((monotonic_ns() + DONE_POLL_NS).min(next_ns), &mut self.workers, &self.slots)?;
                if monotonic_ns() < next_ns {
                    continue;
                }
            } else {
                if next_ns >= stop_ns {
                    break;
                }
                wait_until(next_ns, &mut self.workers, &self.slots)?;
            }
            let now = monotonic_ns();
            let iterations: Vec<u64> = self.iterations().iter().zip(&before.iterations).map(|(a, b)| a - b).collect();
            progress.tick(&self.tick(timing.started_ns, now, &samples, &iterations));
            samples.push(Sample { elapsed_ns: now - timing.started_ns, iterations });
            for (sampler, stacks) in self.samplers.iter_mut().zip(&mut self.stacks) {
                sampler.drain(stacks);
            }
            next_ns = (next_ns + interval_ns).min(stop_ns);
        }
        if fixed.is_none() {
            wait_until(stop_ns, &mut self.workers, &self.slots)?;
        }
        Ok(samples)
    }

    fn all_done(&self) -> bool {
        (0..self.count()).all(|i| self.slots.get(i).state.load(Ordering::Acquire) == STATE_DONE)
    }

    /// Where the slice stands at a sample, for the progress display.
    fn tick(&self, started_ns: u64, now: u64, samples: &[Sample], iterations: &[u64]) -> Tick {
        let (previous_ns, previous): (u64, u64) =
            samples.last().map(|s| (s.elapsed_ns, s.iterations.iter().sum())).unwrap_or((0, 0));
        let done: u64 = iterations.iter().sum();
        let elapsed_s = (now - started_ns) as f64 / 1e9;
        Tick {
            elapsed_s,
            duration_s: match self.spec.settings.fixed_iterations {
                // Estimated from the work done so far.
                Some(limit) if done > 0 => elapsed_s * (limit * self.count() as u64) as f64 / done as f64,
                Some(_) => elapsed_s,
                None => self.spec.duration.as_nanos() as f64 / 1e9,
            },
            rate: (done - previous) as f64 * self.per_iteration as f64
                / ((now - started_ns - previous_ns) as f64 / 1e9),
        }
    }

    /// --profile: the samples named while the workers are stopped, so their mappings still say
    /// what the user frames are. The perf counters and samplers are closed here.
    fn name_profile(&mut self) -> Option<ProfileCounts> {
        self.perf.clear();
        let profile = (!self.samplers.is_empty()).then(|| {
            let mut total = ProfileCounts::default();
            for (index, (sampler, stacks)) in self.samplers.iter_mut().zip(&mut self.stacks).enumerate() {
                let _ = sampler.disable();
                sampler.drain(stacks);
                let pid = self.workers.process_of(index).as_raw() as u32;
                let mut counts = crate::measure::stacks::count(stacks, pid, sampler.lost);
                counts.event = sampler.event.name();
                total.add(&counts);
            }
            total
        });
        self.samplers.clear();
        profile
    }

    /// Phase 7, reap: every worker killed and waited for. Process mode: wait4's rusage, which
    /// includes what each worker's children did (fork).
    fn reap(&mut self) -> Result<Vec<libc::rusage>> {
        self.workers.kill_all();
        (0..self.workers.processes.len())
            .map(|process| {
                self.workers
                    .reap(process, 0)
                    .map(|(_, usage)| usage)
                    .ok_or_else(|| anyhow!("worker {} vanished before it was reaped", self.workers.processes[process]))
            })
            .collect()
    }

    /// The slice's result: each worker's `after.since(before)`, and the placement's totals.
    fn result(
        &self,
        before: &Snapshot,
        after: &Snapshot,
        usages: &[libc::rusage],
        timing: &Timing,
        samples: Vec<Sample>,
    ) -> Result<PlacementRun> {
        let count = self.count();
        let stamps =
            |get: fn(&super::slots::Slot) -> u64| -> Vec<u64> { (0..count).map(|i| get(self.slots.get(i))).collect() };
        let start_times = stamps(|s| s.start_ns.load(Ordering::Relaxed));
        let finish_times = stamps(|s| s.finish_ns.load(Ordering::Relaxed));
        let fixed = self.spec.settings.fixed_iterations.is_some();
        // Fixed work is timed as `time` timed the 2011 runs: first start to last finish, from the
        // workers' own clock stamps.
        let elapsed_ns = match fixed {
            true => (finish_times.iter().max().copied().unwrap_or(0))
                .saturating_sub(start_times.iter().min().copied().unwrap_or(0)),
            false => timing.stopped_ns - timing.started_ns,
        };
        let iterations: Vec<u64> = after.iterations.iter().zip(&before.iterations).map(|(a, b)| a - b).collect();
        let mut samples = samples;
        samples.push(Sample { elapsed_ns, iterations: iterations.clone() });
        let workers = (0..count)
            .map(|index| {
                let span_ns = match fixed {
                    // A worker with fixed work is measured over its own span: parked, it needs no CPU.
                    true => finish_times[index].saturating_sub(start_times[index]),
                    false => timing.stopped_ns - timing.released_ns,
                };
                let span = Span {
                    iterations: iterations[index],
                    span_ns,
                    start_offset_ns: start_times[index].saturating_sub(timing.released_ns),
                };
                self.worker_result(index, before, after, usages, span)
            })
            .collect::<Result<Vec<_>>>()?;
        let workers = share_steal(workers);
        let first = start_times.iter().copied().min().unwrap_or(0);
        let last = start_times.iter().copied().max().unwrap_or(0);
        let duration_ns = self.spec.duration.as_nanos() as u64;
        Ok(PlacementRun {
            elapsed_ns,
            start_skew_ns: last - first,
            workers,
            memcg_pgfault: match (before.memcg_pgfault, after.memcg_pgfault) {
                (Some(before), Some(after)) => Some(after.saturating_sub(before)),
                _ => None,
            },
            kernel_source: self.source,
            samples,
            // Fixed work has no time to overrun: a pause (Ctrl-Z) is what makes it not comparable.
            overran: match fixed {
                true => take_paused(),
                false => (timing.stopped_ns - timing.started_ns) as f64 > 1.1 * duration_ns as f64,
            },
            memcg: after.memcg.since(&before.memcg),
            psi_scope: after.psi_scope,
            profile: None,
        })
    }

    /// One worker's counters over the slice.
    fn worker_result(
        &self,
        index: usize,
        before: &Snapshot,
        after: &Snapshot,
        usages: &[libc::rusage],
        span: Span,
    ) -> Result<WorkerResult> {
        let Span { iterations, span_ns, start_offset_ns } = span;
        let (minflt, user, sys) = match (self.spec.mode, &after.tasks[index]) {
            (Mode::Process, _) => {
                let usage = &usages[index];
                (usage.ru_minflt as u64, micros(&usage.ru_utime), micros(&usage.ru_stime))
            }
            (Mode::Thread, Some(stat)) => (stat.minflt, stat.user_us, stat.sys_us),
            (Mode::Thread, None) => bail!("could not read /proc for worker thread {}", self.tids[index]),
        };
        let perf = (self.source == KernelCountSource::Perf).then(|| after.perf[index].since(&before.perf[index]));
        let (sched_before, sched_after) = (before.sched[index], after.sched[index]);
        // A worker's own time on its CPU, plus what the children it waited for spent on theirs.
        let children = |snapshot: &Snapshot| snapshot.children_ns.get(index).copied().flatten().unwrap_or(0);
        let on_cpu_ns = sched_after
            .zip(sched_before)
            .map(|(a, b)| a.on_cpu_ns.saturating_sub(b.on_cpu_ns) + children(after).saturating_sub(children(before)));
        let wait_ns = sched_after.zip(sched_before).and_then(|(a, b)| Some(a.wait_ns?.saturating_sub(b.wait_ns?)));
        let cpu = self.request.cpus[index];
        let steal_ns = after.steal_ns.get(cpu).copied().flatten().zip(before.steal_ns.get(cpu).copied().flatten());
        Ok(WorkerResult {
            on_cpu_ns,
            wait_ns,
            // The CPU's whole steal for now; `share_steal` divides it among its workers.
            steal_ns: steal_ns.map(|(a, b)| a.saturating_sub(b)),
            cpu: self.request.cpus[index],
            pid: self.tids[index],
            iterations,
            loop_faults: iterations * self.per_iteration,
            kernel_faults: match perf {
                Some(p) => p.page_faults,
                None => minflt.saturating_sub(before.minflt[index]),
            },
            perf,
            cpu_share: (user + sys) as f64 * 1e3 / span_ns.max(1) as f64,
            user_us: user,
            sys_us: sys,
            start_offset_ns,
            cgroup_path: (!self.request.leaf.siblings.is_empty())
                .then(|| self.request.worker_leaves[index].cgroup_path.clone()),
        })
    }
}

/// A CPU's steal divided among the workers placed on it, by their time on it (steal takes time
/// from whichever task was running), so the workers' steal adds up to the CPUs'.
fn share_steal(mut workers: Vec<WorkerResult>) -> Vec<WorkerResult> {
    let on_cpu_of = |workers: &[WorkerResult], cpu: usize| -> (u64, usize) {
        let sharing: Vec<&WorkerResult> = workers.iter().filter(|w| w.cpu == cpu).collect();
        (sharing.iter().map(|w| w.on_cpu_ns.unwrap_or(0)).sum(), sharing.len())
    };
    let totals: Vec<(u64, usize)> = workers.iter().map(|w| on_cpu_of(&workers, w.cpu)).collect();
    for (worker, (cpu_total, sharing)) in workers.iter_mut().zip(totals) {
        worker.steal_ns = worker.steal_ns.map(|steal| match cpu_total {
            0 => steal / sharing as u64,
            total => (steal as u128 * worker.on_cpu_ns.unwrap_or(0) as u128 / total as u128) as u64,
        });
    }
    workers
}

fn micros(time: &libc::timeval) -> u64 {
    time.tv_sec as u64 * 1_000_000 + time.tv_usec as u64
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
