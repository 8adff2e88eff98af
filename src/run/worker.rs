//! The worker side of the start protocol, run in the forked child. It never returns into the
//! harness's code: it ends in _exit, so no destructor of the parent's state (the cgroup tree)
//! runs in a worker.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::atomic::Ordering;

use nix::sched::{CpuSet, sched_getcpu, sched_setaffinity};
use nix::sys::signal::SigSet;
use nix::unistd::{Pid, getppid, setpgid};

use super::signals;
use super::slots::{STATE_READY, STATE_RUNNING, Slot};
use crate::measure::clock::monotonic_ns;
use crate::workload::{self, WorkloadSettings};

pub struct WorkerPlan<'a> {
    pub cpu: usize,
    pub harness_pid: Pid,
    /// The workers' process group; None for the first worker, which leads it.
    pub process_group: Option<Pid>,
    /// cgroup.procs of the worker's cgroup, or None when it already runs there.
    pub cgroup_procs: Option<&'a Path>,
    pub worker_index: usize,
    pub settings: &'a WorkloadSettings,
    pub slot: &'a Slot,
}

pub fn main(plan: &WorkerPlan) -> ! {
    let reason = catch_unwind(AssertUnwindSafe(|| body(plan))).unwrap_or_else(|_| "worker panicked".into());
    plan.slot.fail(&reason);
    // SAFETY: ends this forked process without running the parent's destructors.
    unsafe { libc::_exit(2) }
}

fn body(plan: &WorkerPlan) -> String {
    // SAFETY: plain prctl; SIGKILL on the harness thread's death, so no worker outlives it.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
    if getppid() != plan.harness_pid {
        return "the harness exited while this worker started".into();
    }
    signals::reset_in_worker();
    if let Err(e) = setpgid(Pid::from_raw(0), plan.process_group.unwrap_or(Pid::from_raw(0))) {
        return format!("setpgid: {e}");
    }
    if let Some(procs) = plan.cgroup_procs {
        // Our own pid, not "0": the harness verifies membership by pid afterwards.
        let pid = std::process::id().to_string();
        if let Err(e) = std::fs::write(procs, &pid) {
            return format!("moving into {}: {e}", procs.display());
        }
    }
    let mut cpus = CpuSet::new();
    if let Err(e) = cpus.set(plan.cpu) {
        return format!("CPU {}: {e}", plan.cpu);
    }
    if let Err(e) = sched_setaffinity(Pid::from_raw(0), &cpus) {
        return format!("pinning to CPU {}: {e}", plan.cpu);
    }
    match sched_getcpu() {
        Ok(cpu) if cpu == plan.cpu => {}
        Ok(cpu) => return format!("pinned to CPU {} but running on CPU {cpu}", plan.cpu),
        Err(e) => return format!("sched_getcpu: {e}"),
    }
    let mut workload = workload::create(plan.settings, plan.worker_index);
    if let Err(e) = workload.prepare() {
        return e;
    }
    // SAFETY: getrusage with a valid out-pointer.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    plan.slot.ready_minflt.store(usage.ru_minflt as u64, Ordering::Relaxed);
    plan.slot.cpu_seen.store(plan.cpu as i32, Ordering::Relaxed);
    plan.slot.state.store(STATE_READY, Ordering::Release);

    let mut start = SigSet::empty();
    start.add(signals::START_SIGNAL);
    if let Err(e) = start.wait() {
        return format!("waiting for the start signal: {e}");
    }
    plan.slot.start_ns.store(monotonic_ns(), Ordering::Relaxed);
    plan.slot.state.store(STATE_RUNNING, Ordering::Relaxed);
    workload.run(&plan.slot.iterations)
}
