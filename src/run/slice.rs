//! A crew: one placement's workers at one task count, living through one generation of
//! rounds. Set up once for it:
//! forked, pinned, moved into their cgroups, released with one signal, warmed (--warmup) and
//! parked (park.rs: each worker at an iteration boundary, its counters read by itself). A
//! slice lets the parked crew go (one FUTEX_WAKE), samples on the monotonic clock, parks it
//! again and reads a snapshot (the workers' slots, the memcg's files, /proc/stat); its figures
//! are `after.since(&before)` (snapshot.rs), each worker over its own window, wake to park.
//! No fork and no warmup per slice, so slices can be short and interleave finely. Fixed work
//! (--iterations) sets up a crew per slice: each slice is one whole pass of the work, release to last finish.

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use anyhow::{Result, anyhow, bail};
use nix::unistd::getpid;

use super::control::{check_interrupt, take_paused, wait_ready, wait_until};
use super::park;
use super::result::HarnessTimes;
use super::slots::{STATE_DONE, Slots};
use super::snapshot::{Deltas, Snapshot};
use super::workers::Workers;
use super::{KernelCountSource, Mode, Notice, Progress, RunSpec, Sample, SliceResult, Tick, WorkerResult, signals};
use crate::cgroup::layout::cgroup_of;
use crate::cgroup::{Hierarchy, Leaf};
use crate::measure::clock::monotonic_ns;
use crate::measure::locks::WorkerLocks;
use crate::measure::memcg;
use crate::measure::perf::WorkerPerf;
use crate::measure::procfs::StealFile;
use crate::measure::sampling::WorkerSampler;
use crate::measure::stacks::ProfileCounts;
use crate::workload;

/// --iterations: how often the harness looks whether every worker has done its work. The
/// elapsed time comes from the workers' own finish stamps, so this sets only how long the
/// last worker sits parked before the counters are read; each look is a wakeup on a CPU the
/// workers may be using, so not too often.
const DONE_POLL_NS: u64 = 5_000_000;

/// --locks and --profile: how often the harness drains the workers' ring buffers inside a
/// slice, whatever --interval is. A contended worker wrote some 5,000 lock records a second
/// here, and its end buffer holds 5,461: drained only at 1-2 s sample points it filled and
/// dropped records (and a buffer still full when the events are disabled never says so).
const DRAIN_NS: u64 = 100_000_000;

/// Each time-based slice is first preceded by one whole iteration on each CPU, unmeasured
/// (`park::settle`): the crew that ran on the CPUs before was another (its caches, the per-CPU
/// memcg charge cache) except where ABBA repeats a placement at a round's turn, so every
/// measured window starts after the same settling. Settling only where another crew ran would
/// give the turn's repeated slices (the first and last placements' only) a start of their own.
/// What the settling costs per fault, against the measured window, is the switch's cost (the
/// JSON's `result.harness.settle_*`): anon's 1 MiB on the 2-CPU VM, its first iteration after
/// another crew 1.21-1.25x a measured one's CPU ns per fault (83-104 us a worker; child's 10
/// and nested:4's 15 us over the baseline's), its second 0.96x: one iteration settles it.
/// (1.6-2.9x before each worker's on-CPU time was read from its CPU clock: schedstat's lagged
/// a tick behind, and the settling window took what the window before it left out.)
///
/// Where an iteration takes at least SETTLED_BY_FAULTS faults, as the kernel counts them (the
/// loop's count exact: not with THP, where 2 MiB is one fault), one iteration settles the CPU,
/// as measured at anon's 1 MiB; 0.5 ms more was 2 iterations of it on the 2-CPU VM (0.3 ms a
/// slice) and some 5-7 on a native CPU. Where it takes fewer (mmap-file's and fallocate's single
/// operation; a 256 KiB chunk, whose first iteration after a switch cost 1.5-1.9x a measured
/// one, its second not measured), the settling goes on to SETTLE_NS after the wake.
const SETTLE_NS: u64 = 500_000;
const SETTLED_BY_FAULTS: u64 = 256;

/// A slice overran (the harness was stopped, its rate not comparable) when it measured more
/// than 10% of its slice plus OVERRUN_SLACK_NS longer. The slack is the harness's own lateness,
/// which costs nothing per fault (the cost per fault counts only time on the CPU): a quiet
/// user-mode-linux guest stopped its 0.5 s slices up to 22 ms late, and one beside a second
/// guest on a 2-CPU machine over 50 ms (a 5 ms slack flagged its one slice and lost the
/// figure); a stop (Ctrl-Z) is seconds.
const OVERRUN_SLACK_NS: u64 = 50_000_000;

/// Whether a timed slice overran: the harness asked the crew to park late, or the workers'
/// windows ran past the slice by more than an iteration (each ends at its first iteration
/// boundary after the slice's end, one of its iterations late at most) plus the slack.
fn windows_overran(facts: &SliceFacts, elapsed_ns: u64, iterations: &[u64]) -> bool {
    // Whole iterations between boundaries: a per-page loop counts 32,768 a page_fault1 one.
    let completed = iterations.iter().sum::<u64>() / facts.counts_per_boundary.max(1);
    let iteration_ns = match completed {
        0 => elapsed_ns,
        n => elapsed_ns.saturating_mul(iterations.len() as u64) / n,
    };
    overran(facts.asked_park_after_ns, facts.duration_ns)
        || overran(elapsed_ns.saturating_sub(iteration_ns), facts.duration_ns)
}

/// Whether a slice of `slice_ns` that measured `elapsed_ns` overran (OVERRUN_SLACK_NS).
pub fn overran(elapsed_ns: u64, slice_ns: u64) -> bool {
    let late = elapsed_ns.saturating_sub(slice_ns);
    late as f64 > 0.1 * slice_ns as f64 + OVERRUN_SLACK_NS as f64
}

/// What one slice measures: which placement (the baseline and `control` share a cgroup but
/// not a crew), its workers' CPUs and the cgroup each worker runs in (`leaf` itself, or for
/// `siblings:N` the sibling each worker is dealt).
pub struct SliceSpec<'a> {
    pub placement: usize,
    pub cpus: Vec<usize>,
    pub leaf: &'a Leaf,
    pub worker_leaves: Vec<&'a Leaf>,
    /// How long a crew made for this slice warms up (the first at each task count only: `Plan::warmup`).
    pub warmup: std::time::Duration,
}

/// One placement's workers at one task count, and the counters opened on them.
pub struct Crew {
    slots: Slots,
    workers: Workers,
    cpus: Vec<usize>,
    mode: Mode,
    /// Every counter file a snapshot reads, opened once: its cgroups' memcg counters,
    /// /proc/stat. Each worker reads its own (park.rs).
    memcg_files: memcg::CounterFiles,
    steal_file: StealFile,
    /// `siblings:N`: each worker's cgroup, for its row.
    worker_cgroups: Option<Vec<String>>,
    tids: Vec<i32>,
    perf: Vec<WorkerPerf>,
    source: KernelCountSource,
    samplers: Vec<WorkerSampler>,
    stacks: Vec<Vec<Vec<u64>>>,
    /// --locks: each worker's contention tracepoints; empty where not asked or not available.
    locks: Vec<WorkerLocks>,
    per_iteration: u64,
    /// Loop counts from one iteration boundary to the next (`workload::counts_per_boundary`).
    counts_per_boundary: u64,
    /// How long after its wake a settling window lasts at least, beyond one iteration a CPU.
    settle_floor_ns: u64,
    /// When each worker entered its loop, from the crew's release.
    start_offsets_ns: Vec<u64>,
    start_skew_ns: u64,
    /// Fork to parked after warmup; reported with the crew's first slice only.
    set_up_ns: Option<u64>,
    /// The crew's last reading, which a parked crew keeps until it runs again: the settling
    /// window starts from it.
    parked_at: Option<Snapshot>,
}

impl Crew {
    /// Forks, pins and readies the workers and opens their counters; a time-based crew is
    /// then released, warmed and parked, a fixed-work one waits for its start signal.
    pub fn set_up(
        spec: &RunSpec,
        request: &SliceSpec,
        hierarchy: &Hierarchy,
        first_file_index: usize,
        warn: &mut dyn FnMut(Notice),
    ) -> Result<Crew> {
        check_interrupt()?;
        let begun_ns = monotonic_ns();
        let mut crew = Crew::spawn(spec, request, hierarchy, first_file_index)?;
        crew.open_counters(spec, warn)?;
        if spec.settings.fixed_iterations.is_none() {
            // Released, warmed and parked; a worker parks only from inside its loop, so once the
            // crew is parked every worker has started. With many workers a CPU the start alone
            // takes a round of their turns (1 s at 128 a CPU here): the warmup runs within it,
            // not after it.
            let released_ns = monotonic_ns();
            crew.workers.signal_all(signals::START_SIGNAL)?;
            wait_until(released_ns + request.warmup.as_nanos() as u64, &mut crew.workers, &crew.slots)?;
            park::park(&mut crew.workers, &crew.slots)?;
            crew.note_starts(released_ns);
            crew.parked_at = Some(crew.snapshot()?);
        }
        crew.set_up_ns = Some(monotonic_ns() - begun_ns);
        Ok(crew)
    }

    /// The workers forked, pinned, moved into their cgroups, and seen there and ready.
    fn spawn(spec: &RunSpec, request: &SliceSpec, hierarchy: &Hierarchy, first_file_index: usize) -> Result<Crew> {
        let count = request.cpus.len();
        let slots = Slots::new(count).map_err(|e| anyhow!("mapping worker counters: {e}"))?;
        slots.share_settling(&request.cpus);
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
        let mut workers =
            Workers::spawn(spec.mode, &request.cpus, &cgroup_procs, &spec.settings, &slots, first_file_index)?;
        wait_ready(&mut workers, &slots)?;
        for (&pid, target) in workers.processes.iter().zip(&process_leaves) {
            let actual = cgroup_of(pid.as_raw(), hierarchy)?;
            if actual != target.cgroup_path {
                bail!("worker {pid} is in cgroup {actual}, not {}", target.cgroup_path);
            }
        }
        let leaf = request.leaf;
        let shape = workload::shape(&spec.settings);
        let faults_an_iteration = shape.per_iteration * workload::counts_per_boundary(&spec.settings);
        // The memcg counters of the workers' cgroups: the siblings' summed (v1 keeps them per
        // cgroup, not for the subtree), else the leaf's own.
        let memcg_dirs = match leaf.siblings.is_empty() {
            true => vec![leaf.fs_path.clone()],
            false => leaf.siblings.iter().map(|s| s.fs_path.clone()).collect(),
        };
        let tids: Vec<i32> = (0..count).map(|i| slots.get(i).tid.load(Ordering::Relaxed)).collect();
        let dirs: Vec<&std::path::Path> = memcg_dirs.iter().map(PathBuf::as_path).collect();
        Ok(Crew {
            memcg_files: memcg::CounterFiles::open(&leaf.fs_path, &dirs)?,
            steal_file: StealFile::open()?,
            tids,
            slots,
            workers,
            cpus: request.cpus.clone(),
            mode: spec.mode,
            worker_cgroups: (!leaf.siblings.is_empty())
                .then(|| request.worker_leaves.iter().map(|l| l.cgroup_path.clone()).collect()),
            perf: Vec::new(),
            source: spec.kernel_count,
            samplers: Vec::new(),
            stacks: Vec::new(),
            locks: Vec::new(),
            per_iteration: shape.per_iteration,
            counts_per_boundary: workload::counts_per_boundary(&spec.settings),
            settle_floor_ns: match shape.exact && faults_an_iteration >= SETTLED_BY_FAULTS {
                true => 0,
                false => SETTLE_NS,
            },
            start_offsets_ns: vec![0; count],
            start_skew_ns: 0,
            set_up_ns: None,
            parked_at: None,
        })
    }

    /// perf counters (or minflt where the machine refuses them) and --profile's samplers.
    fn open_counters(&mut self, spec: &RunSpec, warn: &mut dyn FnMut(Notice)) -> Result<()> {
        if spec.kernel_count == KernelCountSource::Perf {
            (self.perf, self.source) = open_perf(&self.tids, warn)?;
        }
        if spec.profile {
            self.samplers = self
                .tids
                .iter()
                .map(|&tid| WorkerSampler::open(tid))
                .collect::<std::io::Result<_>>()
                .map_err(|e| anyhow!("--profile: sampling the workers: {e}"))?;
        }
        self.stacks = vec![Vec::new(); self.samplers.len()];
        if spec.locks {
            self.locks = open_locks(&self.tids, warn)?;
            if let (false, Some(problem)) = (self.locks.is_empty(), spec.settings.kind.locks_problem) {
                warn(Notice::LocksPartial(problem));
            }
        }
        Ok(())
    }

    fn note_starts(&mut self, released_ns: u64) {
        let starts: Vec<u64> = (0..self.count()).map(|i| self.slots.get(i).start_ns.load(Ordering::Relaxed)).collect();
        self.start_offsets_ns = starts.iter().map(|s| s.saturating_sub(released_ns)).collect();
        self.start_skew_ns = starts.iter().max().unwrap_or(&0) - starts.iter().min().unwrap_or(&0);
    }

    fn count(&self) -> usize {
        self.cpus.len()
    }

    /// One slice: a parked crew is let go for --duration / --slices, a fixed-work crew
    /// released for its whole pass; either is parked (or done) before its counters are read.
    /// `settled`: nothing ran on its CPUs since its last slice, which needs no settling window.
    pub fn measure(&mut self, spec: &RunSpec, settled: bool, progress: &mut dyn Progress) -> Result<SliceResult> {
        check_interrupt()?;
        take_paused();
        if let Some(dead) = self.workers.find_dead() {
            return Err(self.workers.died(&self.slots, dead).into());
        }
        let fixed = spec.settings.fixed_iterations.is_some();
        // A repeated crew is read again just before its wake, as a settled one is: the last
        // slice's closing snapshot would give this one the steal and the machine's pressure of
        // the harness's time between them (a checkpoint's write among it).
        let (settle_on_cpu_ns, settle_faults, before) = match fixed || settled {
            true => (0, 0, self.snapshot()?),
            false => self.settle()?,
        };
        self.enable_sampling()?;
        let asked_ns = monotonic_ns();
        let started_ns = match fixed {
            true => {
                self.workers.signal_all(signals::START_SIGNAL)?;
                monotonic_ns()
            }
            false => park::resume(&self.slots),
        };
        let samples = self.sample(spec, started_ns, &before, progress)?;
        let stopped_ns = monotonic_ns();
        let parked_ns = match fixed {
            true => stopped_ns,
            false => park::park(&mut self.workers, &self.slots)?,
        };
        let after = self.snapshot()?;
        let read_ns = monotonic_ns();
        if fixed {
            self.note_starts(started_ns);
        }
        let profile = self.name_profile();
        let locks = (!self.locks.is_empty()).then(|| crate::measure::locks::count_slice(&mut self.locks));
        let harness = HarnessTimes {
            set_up_ns: self.set_up_ns.take(),
            wake_ns: started_ns - asked_ns,
            park_ns: parked_ns - stopped_ns,
            snapshot_ns: read_ns - parked_ns,
            settle_on_cpu_ns,
            settle_faults,
        };
        let facts = SliceFacts { asked_park_after_ns: stopped_ns - started_ns, ..self.facts(spec, &after) };
        let figured = figures(&facts, after.since(&before, &self.cpus), samples)?;
        self.parked_at = Some(after);
        Ok(SliceResult { profile, harness: Some(harness), locks, ..figured })
    }

    /// The unmeasured settling window before a timed slice: one iteration on each CPU, and
    /// for an iteration of few faults more until `settle_floor_ns` after the wake;
    /// returns what its workers spent on their CPUs and the faults they took
    /// there, and the snapshot the measured window starts from.
    fn settle(&mut self) -> Result<(u64, u64, Snapshot)> {
        let parked = match self.parked_at.take() {
            Some(parked) => parked,
            None => self.snapshot()?,
        };
        park::settle(&mut self.workers, &self.slots, self.settle_floor_ns)?;
        let settled = self.snapshot()?;
        let deltas = settled.since(&parked, &self.cpus);
        let on_cpu_ns = deltas.workers.iter().map(|w| w.on_cpu_ns.unwrap_or(0)).sum();
        let faults = deltas.workers.iter().map(|w| w.iterations * self.per_iteration).sum();
        Ok((on_cpu_ns, faults, settled))
    }

    /// What the figures of a slice need besides the counters: each worker's window is its own,
    /// from the stamps of the reading that ends it (fixed work: loop entry to finish).
    fn facts(&self, spec: &RunSpec, after: &Snapshot) -> SliceFacts {
        let fixed = spec.settings.fixed_iterations.is_some();
        let stamps = |get: fn(&super::slots::Slot) -> u64| (0..self.count()).map(|i| get(self.slots.get(i))).collect();
        let (start_times, finish_times): (Vec<u64>, Vec<u64>) = match fixed {
            true => (stamps(|s| s.start_ns.load(Ordering::Relaxed)), stamps(|s| s.finish_ns.load(Ordering::Relaxed))),
            false => after.windows.iter().copied().unzip(),
        };
        let start_skew_ns = match fixed {
            true => self.start_skew_ns,
            false => start_times.iter().max().unwrap_or(&0) - start_times.iter().min().unwrap_or(&0),
        };
        SliceFacts {
            cpus: self.cpus.clone(),
            tids: self.tids.clone(),
            per_iteration: self.per_iteration,
            counts_per_boundary: self.counts_per_boundary,
            duration_ns: spec.duration.as_nanos() as u64,
            fixed,
            source: self.source,
            start_times,
            finish_times,
            start_offsets_ns: self.start_offsets_ns.clone(),
            start_skew_ns,
            paused: take_paused(),
            asked_park_after_ns: 0,
            worker_cgroups: self.worker_cgroups.clone(),
        }
    }

    /// Every counter of the crew now, parked or done (nothing moves): each worker's own
    /// reading from its slot, its perf counters, the memcg's files and /proc/stat.
    fn snapshot(&mut self) -> Result<Snapshot> {
        let perf = self
            .perf
            .iter_mut()
            .map(|p| p.read())
            .collect::<std::io::Result<_>>()
            .map_err(|e| anyhow!("reading perf counters: {e}"))?;
        let (memcg, psi_scope) = self.memcg_files.read();
        let readings: Vec<_> = (0..self.count()).map(|i| self.slots.get(i).reading()).collect();
        Ok(Snapshot {
            iterations: (0..self.count()).map(|i| self.slots.get(i).iterations.load(Ordering::Relaxed)).collect(),
            counts: readings.iter().map(|r| Some(r.counts)).collect(),
            perf,
            sched: readings.iter().map(|r| r.sched).collect(),
            children_ns: match self.mode {
                Mode::Process => readings.iter().map(|r| r.children_ns).collect(),
                Mode::Thread => Vec::new(),
            },
            windows: readings.iter().map(|r| (r.resumed_ns, r.parked_ns)).collect(),
            steal_ns: self.steal_file.read(),
            // memory.stat read once: `CounterFiles::read` parsed pgfault with the rest.
            memcg_pgfault: memcg.stat.pgfault,
            memcg,
            psi_scope,
        })
    }

    /// Sampling and the lock tracepoints cover the measured span only: enabled with the crew
    /// parked, just before its wake, and disabled once it has parked again.
    fn enable_sampling(&mut self) -> Result<()> {
        self.samplers.iter_mut().try_for_each(|s| s.enable()).map_err(|e| anyhow!("--profile: {e}"))?;
        self.locks.iter_mut().try_for_each(|l| l.enable()).map_err(|e| anyhow!("--locks: {e}"))
    }

    /// The loop counters every --interval until the slice's time is up (or, with
    /// --iterations, until every worker is done), the progress told at each sample.
    fn sample(
        &mut self,
        spec: &RunSpec,
        started_ns: u64,
        before: &Snapshot,
        progress: &mut dyn Progress,
    ) -> Result<Vec<Sample>> {
        let fixed = spec.settings.fixed_iterations;
        let interval_ns = spec.interval.as_nanos() as u64;
        let stop_ns = match fixed {
            Some(_) => u64::MAX,
            None => started_ns + spec.duration.as_nanos() as u64,
        };
        let mut samples = Vec::new();
        let mut next_ns = (started_ns + interval_ns).min(stop_ns);
        let mut drained_ns = started_ns;
        loop {
            if fixed.is_some() {
                if self.all_done() {
                    break;
                }
                wait_until((monotonic_ns() + DONE_POLL_NS).min(next_ns), &mut self.workers, &self.slots)?;
                let now = monotonic_ns();
                if now < next_ns {
                    if now >= drained_ns + DRAIN_NS {
                        self.drain_buffers(now);
                        drained_ns = now;
                    }
                    continue;
                }
            } else {
                if next_ns >= stop_ns {
                    break;
                }
                self.wait_draining(next_ns)?;
            }
            let now = monotonic_ns();
            let iterations: Vec<u64> = (0..self.count())
                .map(|i| self.slots.get(i).iterations.load(Ordering::Relaxed) - before.iterations[i])
                .collect();
            progress.tick(&self.tick(spec, started_ns, now, &samples, &iterations));
            samples.push(Sample { elapsed_ns: now - started_ns, iterations });
            self.drain_buffers(now);
            drained_ns = now;
            next_ns = (next_ns + interval_ns).min(stop_ns);
        }
        if fixed.is_none() {
            self.wait_draining(stop_ns)?;
        }
        Ok(samples)
    }

    /// Waits until `deadline_ns`, draining the ring buffers every DRAIN_NS on the way.
    fn wait_draining(&mut self, deadline_ns: u64) -> Result<()> {
        if self.samplers.is_empty() && self.locks.is_empty() {
            return wait_until(deadline_ns, &mut self.workers, &self.slots);
        }
        loop {
            let now = monotonic_ns();
            if now >= deadline_ns {
                return Ok(());
            }
            wait_until(deadline_ns.min(now + DRAIN_NS), &mut self.workers, &self.slots)?;
            self.drain_buffers(monotonic_ns());
        }
    }

    fn drain_buffers(&mut self, now_ns: u64) {
        for (sampler, stacks) in self.samplers.iter_mut().zip(&mut self.stacks) {
            sampler.drain(stacks);
        }
        for locks in &mut self.locks {
            locks.drain(now_ns, false);
        }
    }

    fn all_done(&self) -> bool {
        (0..self.count()).all(|i| self.slots.get(i).state.load(Ordering::Acquire) == STATE_DONE)
    }

    /// Where the slice stands at a sample, for the progress display.
    fn tick(&self, spec: &RunSpec, started_ns: u64, now: u64, samples: &[Sample], iterations: &[u64]) -> Tick {
        let (previous_ns, previous): (u64, u64) =
            samples.last().map(|s| (s.elapsed_ns, s.iterations.iter().sum())).unwrap_or((0, 0));
        let done: u64 = iterations.iter().sum();
        let elapsed_s = (now - started_ns) as f64 / 1e9;
        Tick {
            elapsed_s,
            duration_s: match spec.settings.fixed_iterations {
                // Estimated from the work done so far.
                Some(limit) if done > 0 => elapsed_s * (limit * self.count() as u64) as f64 / done as f64,
                Some(_) => elapsed_s,
                None => spec.duration.as_nanos() as f64 / 1e9,
            },
            rate: (done - previous) as f64 * self.per_iteration as f64
                / ((now - started_ns - previous_ns) as f64 / 1e9),
        }
    }

    /// --profile: the slice's samples named while the workers are parked, so their mappings
    /// still say what the user frames are; the samplers stay open for the crew's next slice.
    fn name_profile(&mut self) -> Option<ProfileCounts> {
        (!self.samplers.is_empty()).then(|| {
            let mut total = ProfileCounts::default();
            for (index, (sampler, stacks)) in self.samplers.iter_mut().zip(&mut self.stacks).enumerate() {
                let _ = sampler.disable();
                sampler.drain(stacks);
                let pid = self.workers.process_of(index).as_raw() as u32;
                let mut counts = crate::measure::stacks::count(stacks, pid, std::mem::take(&mut sampler.lost));
                stacks.clear();
                counts.event = sampler.event.name();
                total.add(&counts);
            }
            total
        })
    }
}

/// What a slice's figures are made of besides the counters' differences.
#[derive(Debug, Clone)]
pub struct SliceFacts {
    pub cpus: Vec<usize>,
    pub tids: Vec<i32>,
    pub per_iteration: u64,
    /// Loop counts from one iteration boundary to the next.
    pub counts_per_boundary: u64,
    pub duration_ns: u64,
    pub fixed: bool,
    pub source: KernelCountSource,
    /// Each worker's window (CLOCK_MONOTONIC ns): its wake to its park, or with --iterations
    /// its loop entry to its finish.
    pub start_times: Vec<u64>,
    pub finish_times: Vec<u64>,
    pub start_offsets_ns: Vec<u64>,
    pub start_skew_ns: u64,
    /// Ctrl-Z stopped the run during the slice.
    pub paused: bool,
    /// A timed slice: from the wake to the harness's asking the crew to park, in ns.
    pub asked_park_after_ns: u64,
    pub worker_cgroups: Option<Vec<String>>,
}

/// A slice's figures from the counters' differences: pure, so tested without root.
pub fn figures(facts: &SliceFacts, deltas: Deltas, mut samples: Vec<Sample>) -> Result<SliceResult> {
    let spans: Vec<u64> =
        facts.start_times.iter().zip(&facts.finish_times).map(|(start, end)| end.saturating_sub(*start)).collect();
    // Fixed work is timed as `time` timed the 2011 runs: first start to last finish, from the
    // workers' own clock stamps. A timed slice's workers each measured their own window, wake
    // to park, which differ by up to an iteration: the slice's time is the mean over the CPUs
    // of each CPU's windows, so the crew's rate is its faults over it, and neither the wake's
    // nor the park's tail is in it.
    let elapsed_ns = match facts.fixed {
        true => (facts.finish_times.iter().max().copied().unwrap_or(0))
            .saturating_sub(facts.start_times.iter().min().copied().unwrap_or(0)),
        false => mean_cpu_span(&facts.cpus, &facts.start_times, &facts.finish_times),
    };
    let iterations: Vec<u64> = deltas.workers.iter().map(|w| w.iterations).collect();
    // Fixed work has no time to overrun: a pause (Ctrl-Z) is what makes it not comparable.
    let overran = facts.paused || (!facts.fixed && windows_overran(facts, elapsed_ns, &iterations));
    samples.push(Sample { elapsed_ns, iterations });
    let workers = deltas
        .workers
        .iter()
        .enumerate()
        .map(|(index, delta)| {
            // Each worker over its own window: parked, it needs no CPU.
            let span_ns = spans[index];
            let counts =
                delta.counts.ok_or_else(|| anyhow!("could not read /proc for worker {}", facts.tids[index]))?;
            let perf = delta.perf.filter(|_| facts.source == KernelCountSource::Perf);
            Ok(WorkerResult {
                on_cpu_ns: delta.on_cpu_ns,
                wait_ns: delta.wait_ns,
                timeslices: delta.timeslices,
                // The CPU's whole steal for now; `share_steal` divides it among its workers.
                steal_ns: delta.cpu_steal_ns,
                cpu: facts.cpus[index],
                pid: facts.tids[index],
                iterations: delta.iterations,
                loop_faults: delta.iterations * facts.per_iteration,
                kernel_faults: perf.map(|p| p.page_faults).unwrap_or(counts.minflt),
                perf,
                // From the scheduler's exact time where it is kept: /proc's ticks are 10 ms,
                // a tenth of a short slice.
                cpu_share: match delta.on_cpu_ns {
                    Some(ns) => ns as f64 / span_ns.max(1) as f64,
                    None => (counts.user_us + counts.sys_us) as f64 * 1e3 / span_ns.max(1) as f64,
                },
                user_us: counts.user_us,
                sys_us: counts.sys_us,
                start_offset_ns: facts.start_offsets_ns.get(index).copied().unwrap_or(0),
                cgroup_path: facts.worker_cgroups.as_ref().map(|paths| paths[index].clone()),
                span_ns,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(SliceResult {
        elapsed_ns,
        start_skew_ns: facts.start_skew_ns,
        workers: share_steal(workers),
        memcg_pgfault: deltas.memcg_pgfault,
        kernel_source: facts.source,
        samples,
        overran,
        memcg: deltas.memcg,
        psi_scope: deltas.psi_scope,
        profile: None,
        harness: None,
        locks: None,
    })
}

/// The mean over the CPUs of the span of their workers' windows, first wake to last park. One
/// worker a CPU: the mean of the windows. Workers sharing a CPU take turns on it, their windows
/// overlapping: the CPU ran the crew from the first one's wake to the last one's park (at 128 a
/// CPU the parks spread over 30 ms, each finishing its iteration at its turn), and what they
/// did in all of it is counted; the mean of their windows would leave half that spread out of
/// the time and overstate the rate by it.
fn mean_cpu_span(cpus: &[usize], starts: &[u64], finishes: &[u64]) -> u64 {
    let mut per_cpu: std::collections::HashMap<usize, (u64, u64)> = Default::default();
    for ((&cpu, &start), &finish) in cpus.iter().zip(starts).zip(finishes) {
        let span = per_cpu.entry(cpu).or_insert((start, finish));
        *span = (span.0.min(start), span.1.max(finish));
    }
    let total: u64 = per_cpu.values().map(|(start, finish)| finish.saturating_sub(*start)).sum();
    total / per_cpu.len().max(1) as u64
}

/// A CPU's steal divided among the workers placed on it, by their time on it (steal takes time
/// from whichever task was running), so the workers' steal adds up to the CPUs'.
fn share_steal(mut workers: Vec<WorkerResult>) -> Vec<WorkerResult> {
    // Each CPU's workers' time on it and their number, in one pass (not a search per worker).
    let mut per_cpu: std::collections::HashMap<usize, (u64, usize)> = Default::default();
    for worker in &workers {
        let entry = per_cpu.entry(worker.cpu).or_default();
        entry.0 += worker.on_cpu_ns.unwrap_or(0);
        entry.1 += 1;
    }
    let totals: Vec<(u64, usize)> = workers.iter().map(|w| per_cpu[&w.cpu]).collect();
    for (worker, (cpu_total, sharing)) in workers.iter_mut().zip(totals) {
        worker.steal_ns = worker.steal_ns.map(|steal| match cpu_total {
            0 => steal / sharing as u64,
            total => (steal as u128 * worker.on_cpu_ns.unwrap_or(0) as u128 / total as u128) as u64,
        });
    }
    workers
}

/// --locks: the contention tracepoints on every worker thread, or none (one notice saying
/// why) where the kernel, tracefs or the permissions refuse them. Running out of descriptors
/// is an error, as for perf.
fn open_locks(tids: &[i32], warn: &mut dyn FnMut(Notice)) -> Result<Vec<WorkerLocks>> {
    let events = match crate::measure::locks::events() {
        Ok(events) => events,
        Err(why) => {
            warn(Notice::LocksUnavailable(why));
            return Ok(Vec::new());
        }
    };
    let mut locks = Vec::with_capacity(tids.len());
    for &tid in tids {
        match WorkerLocks::open(tid, &events) {
            Ok(worker) => locks.push(worker),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                bail!("--locks: opening the tracepoints of worker {tid}: {e}")
            }
            Err(e) => {
                warn(Notice::LocksUnavailable(format!("perf_event_open of lock:contention_begin refused: {e}")));
                return Ok(Vec::new());
            }
        }
    }
    Ok(locks)
}

/// perf counters on every worker thread, or none (and minflt as the source) when the machine
/// refuses them. Running out of descriptors is no refusal of the machine's: an error.
fn open_perf(tids: &[i32], warn: &mut dyn FnMut(Notice)) -> Result<(Vec<WorkerPerf>, KernelCountSource)> {
    let mut perf = Vec::with_capacity(tids.len());
    for &tid in tids {
        match WorkerPerf::open(tid).and_then(|mut p| p.enable().map(|_| p)) {
            Ok(counters) => {
                if !counters.has_hardware_counters() {
                    warn(Notice::NoHardwareCounters);
                }
                perf.push(counters)
            }
            Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                bail!("--kernel-count perf: opening the counters of worker {tid}: {e}")
            }
            Err(e) => {
                warn(Notice::PerfUnavailable(e.to_string()));
                return Ok((Vec::new(), KernelCountSource::Minflt));
            }
        }
    }
    Ok((perf, KernelCountSource::Perf))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::snapshot::{TaskCounts, WorkerDelta};

    #[test]
    fn a_slice_overran_past_ten_percent_and_50_ms() {
        let ms = 1_000_000;
        // 25 ms slices: 2.5 ms + 50 ms of slack.
        assert!(!overran(75 * ms, 25 * ms), "late by 50 ms: the harness's own lateness");
        assert!(overran(78 * ms, 25 * ms));
        // 0.5 s slices, as the guests measure: 100 ms.
        assert!(!overran(600 * ms, 500 * ms));
        assert!(overran(601 * ms, 500 * ms));
        // 10 s slices: 1.05 s.
        assert!(!overran(11_050 * ms, 10_000 * ms));
        assert!(overran(11_051 * ms, 10_000 * ms));
        assert!(!overran(20 * ms, 25 * ms), "a short slice did not overrun");
    }

    fn facts(fixed: bool) -> SliceFacts {
        let (start_times, finish_times) = match fixed {
            true => (vec![2_000, 2_500, 3_000], vec![50_002_000, 60_002_500, 40_003_000]),
            // Timed: each worker's window, wake to park, 100 ms.
            false => (vec![1_000_000_000; 3], vec![1_100_000_000; 3]),
        };
        SliceFacts {
            cpus: vec![0, 0, 1],
            tids: vec![11, 12, 13],
            per_iteration: 256,
            counts_per_boundary: 1,
            duration_ns: 100_000_000,
            fixed,
            source: KernelCountSource::Minflt,
            start_times,
            finish_times,
            start_offsets_ns: vec![10, 20, 30],
            start_skew_ns: 20,
            paused: false,
            asked_park_after_ns: 100_000_000,
            worker_cgroups: None,
        }
    }

    fn delta(iterations: u64, on_cpu_ns: u64, steal: u64) -> WorkerDelta {
        WorkerDelta {
            iterations,
            counts: Some(TaskCounts { minflt: iterations * 256 + 3, user_us: 1_000, sys_us: 9_000 }),
            on_cpu_ns: Some(on_cpu_ns),
            wait_ns: Some(0),
            // Put on its CPU twice: time off it in between can be a block.
            timeslices: Some(2),
            cpu_steal_ns: Some(steal),
            perf: None,
        }
    }

    fn deltas() -> Deltas {
        Deltas {
            workers: vec![delta(100, 30_000_000, 4_000), delta(200, 10_000_000, 4_000), delta(50, 100_000_000, 0)],
            ..Deltas::default()
        }
    }

    #[test]
    fn a_timed_slice_counts_loop_and_kernel_faults_over_the_workers_windows() {
        let run = figures(&facts(false), deltas(), Vec::new()).unwrap();
        assert_eq!(run.elapsed_ns, 100_000_000);
        assert_eq!(run.loop_faults(), 350 * 256);
        assert_eq!(run.kernel_faults(), 350 * 256 + 9);
        assert!(!run.overran);
        // The last sample is the slice's whole count.
        assert_eq!(run.samples.last().unwrap().iterations, [100, 200, 50]);
        assert!((run.workers[2].cpu_share - 1.0).abs() < 1e-12);
        assert_eq!(run.workers[0].start_offset_ns, 10);
    }

    #[test]
    fn a_timed_slice_is_the_mean_of_the_workers_own_windows() {
        // One worker a CPU, parked at their own iteration boundaries: 90, 100 and 110 ms from
        // their own wakes, the last woken 1 ms late (the wake's tail is no one's window).
        let mut own = facts(false);
        own.cpus = vec![0, 1, 2];
        own.start_times = vec![1_000_000_000, 1_000_000_000, 1_001_000_000];
        own.finish_times = vec![1_090_000_000, 1_100_000_000, 1_111_000_000];
        let run = figures(&own, deltas(), Vec::new()).unwrap();
        assert_eq!(run.elapsed_ns, 100_000_000);
        assert_eq!(run.workers[2].span_ns, 110_000_000);
        // Worker 2 ran 100 ms of its 110: its share is over its own window, and what it was
        // not on its CPU (10 ms) is blocked time; worker 0's 90 ms window is not short by 10.
        assert!((run.workers[2].cpu_share - 100.0 / 110.0).abs() < 1e-9);
        assert_eq!(run.workers[2].blocked_ns(run.elapsed_ns), Some(10_000_000));
        assert_eq!(run.workers[0].blocked_ns(run.elapsed_ns), Some(90_000_000 - 30_000_000 - 4_000));
    }

    #[test]
    fn workers_sharing_a_cpu_count_its_span_first_wake_to_last_park() {
        // CPU 0: two workers, parked 100 and 130 ms after their wake (the second waited its turn
        // to finish its iteration); CPU 1: one, 100 ms. The CPUs ran the crew 130 and 100 ms.
        let mut shared = facts(false);
        shared.finish_times = vec![1_100_000_000, 1_130_000_000, 1_100_000_000];
        let run = figures(&shared, deltas(), Vec::new()).unwrap();
        assert_eq!(run.elapsed_ns, 115_000_000, "not the windows' mean, 110 ms");
        assert_eq!(run.workers[1].span_ns, 130_000_000, "each worker's own window stays its own");
    }

    #[test]
    fn steal_is_shared_by_time_on_the_cpu() {
        // CPU 0's 4 us of steal goes 3:1 to the worker that ran 30 ms against 10 ms.
        let run = figures(&facts(false), deltas(), Vec::new()).unwrap();
        assert_eq!(run.workers[0].steal_ns, Some(3_000));
        assert_eq!(run.workers[1].steal_ns, Some(1_000));
        assert_eq!(run.workers[2].steal_ns, Some(0));
    }

    #[test]
    fn fixed_work_is_timed_from_first_start_to_last_finish() {
        let run = figures(&facts(true), deltas(), Vec::new()).unwrap();
        assert_eq!(run.elapsed_ns, 60_002_500 - 2_000);
        // Each worker's share is over its own span.
        assert!((run.workers[2].cpu_share - 100_000_000.0 / 40_000_000.0).abs() < 1e-9);
        assert!(!run.overran, "fixed work has no time to overrun");
    }

    #[test]
    fn a_late_stop_overruns_only_past_the_slack_and_a_pause_always() {
        let mut late = facts(false);
        late.finish_times = vec![1_150_000_000; 3];
        assert!(!figures(&late, deltas(), Vec::new()).unwrap().overran, "40 ms late is a wakeup's latency");
        late.finish_times = vec![1_170_000_000; 3];
        assert!(figures(&late, deltas(), Vec::new()).unwrap().overran);
        let mut paused = facts(true);
        paused.paused = true;
        assert!(figures(&paused, deltas(), Vec::new()).unwrap().overran);
    }

    #[test]
    fn a_window_an_iteration_past_the_slice_is_the_protocol_and_a_late_park_request_overran() {
        // A slow guest: 1 s slices, 0.7 s iterations, each window two iterations long.
        let mut slow = facts(false);
        slow.duration_ns = 1_000_000_000;
        slow.asked_park_after_ns = 1_000_000_000;
        slow.finish_times = vec![2_400_000_000; 3];
        let two_each = Deltas {
            workers: (0..3).map(|_| WorkerDelta { iterations: 2, ..delta(2, 1_000_000_000, 0) }).collect(),
            ..Deltas::default()
        };
        assert!(!figures(&slow, two_each.clone(), Vec::new()).unwrap().overran, "an iteration past is the park");
        // A per-page loop (page_fault1: 32,768 counts an iteration) is judged by its iterations,
        // not its pages: two of them, 0.7 s each, in each window.
        let per_page = SliceFacts { counts_per_boundary: 32_768, ..slow.clone() };
        let pages = Deltas {
            workers: (0..3).map(|_| WorkerDelta { iterations: 65_536, ..delta(2, 1_000_000_000, 0) }).collect(),
            ..Deltas::default()
        };
        assert!(!figures(&per_page, pages, Vec::new()).unwrap().overran, "counted in iterations, not pages");
        // The harness itself asked 0.3 s late (stopped, starved): not comparable.
        slow.asked_park_after_ns = 1_300_000_000;
        assert!(figures(&slow, two_each, Vec::new()).unwrap().overran);
    }

    #[test]
    fn a_worker_whose_proc_counts_are_missing_fails_the_slice_by_name() {
        let mut missing = deltas();
        missing.workers[1].counts = None;
        let err = figures(&facts(false), missing, Vec::new()).unwrap_err().to_string();
        assert!(err.contains("worker 12"), "{err}");
    }

    #[test]
    fn perf_counts_faults_where_it_is_the_source() {
        let mut with_perf = deltas();
        for (worker, faults) in with_perf.workers.iter_mut().zip([7, 8, 9]) {
            worker.perf = Some(crate::measure::perf::PerfReading { page_faults: faults, ..Default::default() });
        }
        let mut perf = facts(false);
        perf.source = KernelCountSource::Perf;
        assert_eq!(figures(&perf, with_perf.clone(), Vec::new()).unwrap().kernel_faults(), 24);
        // Where perf could not be opened the minflt count stands, whatever the deltas hold.
        let run = figures(&facts(false), with_perf, Vec::new()).unwrap();
        assert_eq!(run.kernel_faults(), 350 * 256 + 9);
        assert!(run.workers.iter().all(|w| w.perf.is_none()));
    }
}
