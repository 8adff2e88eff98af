//! The worker side of the start protocol, run in a forked child: one worker per process, or
//! (--mode thread) every worker as a thread of one process. It never returns into the
//! harness's code: it ends in _exit, so no destructor of the parent's state (the cgroup tree)
//! runs in a worker.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Condvar, Mutex};

use nix::sys::signal::SigSet;
use nix::unistd::{Pid, getppid, setpgid};

use super::park::WorkerParker;
use super::signals;
use super::slots::{STATE_DONE, STATE_READY, Slot, Slots};
use crate::measure::clock::monotonic_ns;
use crate::workload::{self, WorkloadSettings};

pub struct WorkerPlan<'a> {
    pub harness_pid: Pid,
    /// The workers' process group; None for the first process, which leads it.
    pub process_group: Option<Pid>,
    /// cgroup.procs of the workers' cgroup, or None when they already run there.
    pub cgroup_procs: Option<&'a Path>,
    pub settings: &'a WorkloadSettings,
    pub slots: &'a Slots,
    /// (slot index, CPU) of each worker this process runs: one, or all as threads.
    pub workers: Vec<(usize, usize)>,
    /// The run-wide number of this set's first worker, which names its files.
    pub first_file_index: usize,
}

/// Ends this process at once, without the parent's destructors.
fn exit_now() -> ! {
    // SAFETY: _exit is always safe to call.
    unsafe { libc::_exit(2) }
}

pub fn main(plan: &WorkerPlan) -> ! {
    let first = plan.slots.get(plan.workers[0].0);
    match catch_unwind(AssertUnwindSafe(|| process_setup(plan))) {
        Ok(Ok(())) => {}
        Ok(Err(reason)) => first.fail(&reason),
        Err(_) => first.fail("worker panicked"),
    }
    if first.failure().is_some() {
        exit_now();
    }
    if let [(slot, cpu)] = plan.workers[..] {
        let reason = catch_unwind(AssertUnwindSafe(|| worker(plan, slot, cpu, &StartGate::Signal)))
            .unwrap_or_else(|_| "worker panicked".into());
        plan.slots.get(slot).fail(&reason);
        exit_now();
    }
    threads(plan)
}

/// What every worker process does first: die with the harness, join the workers' process
/// group, default stop signals, move into the cgroup.
fn process_setup(plan: &WorkerPlan) -> Result<(), String> {
    // SAFETY: plain prctl; SIGKILL on the harness thread's death, so no worker outlives it.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
    if getppid() != plan.harness_pid {
        return Err("the harness exited while this worker started".into());
    }
    signals::reset_in_worker();
    super::set_process_name(super::WORKER_NAME);
    setpgid(Pid::from_raw(0), plan.process_group.unwrap_or(Pid::from_raw(0))).map_err(|e| format!("setpgid: {e}"))?;
    if let Some(procs) = plan.cgroup_procs {
        // Our own pid, not "0": the harness verifies membership by pid afterwards.
        let pid = std::process::id().to_string();
        std::fs::write(procs, &pid).map_err(|e| format!("moving into {}: {e}", procs.display()))?;
    }
    Ok(())
}

/// How a worker learns that the run starts.
enum StartGate<'g> {
    /// The start signal itself (one worker per process: every process gets it).
    Signal,
    /// A flag the process's main thread raises when it takes the start signal, with one
    /// futex wake for all threads (a process-directed signal reaches only one thread).
    Shared(&'g (Mutex<bool>, Condvar)),
}

impl StartGate<'_> {
    fn wait(&self) -> Result<(), String> {
        match self {
            StartGate::Signal => wait_for_start_signal(),
            StartGate::Shared((started, wake)) => {
                let mut started = started.lock().map_err(|_| "start gate poisoned".to_string())?;
                while !*started {
                    started = wake.wait(started).map_err(|_| "start gate poisoned".to_string())?;
                }
                Ok(())
            }
        }
    }
}

fn wait_for_start_signal() -> Result<(), String> {
    let mut start = SigSet::empty();
    start.add(signals::START_SIGNAL);
    start.wait().map(|_| ()).map_err(|e| format!("waiting for the start signal: {e}"))
}

/// --mode thread: one thread per worker in this process; the main thread turns the start
/// signal into one wake of all of them, then sleeps. The scope never ends: the process ends
/// by the harness's signal or a worker's _exit.
fn threads(plan: &WorkerPlan) -> ! {
    let gate = (Mutex::new(false), Condvar::new());
    std::thread::scope(|scope| {
        for &(slot, cpu) in &plan.workers {
            let gate = &gate;
            let spawned = std::thread::Builder::new().name(format!("worker-{cpu}")).spawn_scoped(scope, move || {
                let reason = catch_unwind(AssertUnwindSafe(|| worker(plan, slot, cpu, &StartGate::Shared(gate))))
                    .unwrap_or_else(|_| "worker panicked".into());
                plan.slots.get(slot).fail(&reason);
                // One worker failing ends the process: the harness reports this thread's reason.
                exit_now()
            });
            if let Err(e) = spawned {
                plan.slots.get(slot).fail(&format!("spawning the worker thread: {e}"));
                exit_now();
            }
        }
        if let Err(reason) = wait_for_start_signal() {
            plan.slots.get(plan.workers[0].0).fail(&reason);
            exit_now();
        }
        let (started, wake) = &gate;
        *started.lock().unwrap_or_else(|p| p.into_inner()) = true;
        wake.notify_all();
        loop {
            // SAFETY: pause only sleeps.
            unsafe { libc::pause() };
        }
    })
}

/// One worker, on the calling thread: pin, prepare, read itself, report ready, wait for the
/// start, loop (parking when asked). Returns only with the reason it stopped.
fn worker(plan: &WorkerPlan, slot_index: usize, cpu: usize, gate: &StartGate) -> String {
    let slot: &Slot = plan.slots.get(slot_index);
    // SAFETY: gettid has no preconditions.
    slot.tid.store(unsafe { libc::gettid() }, Ordering::Relaxed);
    if let Err(reason) = super::cpus::pin_current(cpu) {
        return reason;
    }
    // Numbered across the run, so two placements' workers never share a file; except where the
    // workload's file is its CPU slot's, shared by the crews.
    let number = match plan.settings.kind.shares_file_across_crews {
        true => slot_index,
        false => plan.first_file_index + slot_index,
    };
    let mut workload = workload::create(plan.settings, number);
    if let Err(e) = workload.prepare() {
        return e;
    }
    let parker = match WorkerParker::new(plan.slots, slot_index, plan.workers.len() == 1) {
        Ok(parker) => parker,
        Err(e) => return e,
    };
    // Fixed work's starting point: its counters before the loop.
    parker.take_reading(monotonic_ns());
    slot.state.store(STATE_READY, Ordering::Release);
    let ready = &plan.slots.control().ready;
    ready.fetch_add(1, Ordering::Release);
    super::park::futex_wake(ready, 1);

    if let Err(e) = gate.wait() {
        return e;
    }
    let start_ns = monotonic_ns();
    slot.start_ns.store(start_ns, Ordering::Relaxed);
    parker.started(start_ns);
    let park = || parker.park();
    let counter = workload::Counter::new(&slot.iterations, plan.settings.fixed_iterations, parker.command(), &park);
    match workload.run(&counter) {
        Err(reason) => reason,
        Ok(()) => {
            let finish_ns = monotonic_ns();
            slot.finish_ns.store(finish_ns, Ordering::Relaxed);
            parker.take_reading(start_ns);
            slot.state.store(STATE_DONE, Ordering::Release);
            // Parked, not exited: its cgroup and memory stay as they were for the harness to
            // read when the last worker is done, and the other workers go on undisturbed.
            loop {
                // SAFETY: pause only sleeps.
                unsafe { libc::pause() };
            }
        }
    }
}
