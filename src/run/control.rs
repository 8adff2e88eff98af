//! Waiting on the workers: until all are ready, until a deadline (returning early on a stop
//! signal or a death), and freezing them all with one signal. Ctrl-Z is honoured here.

use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Result;
use nix::sys::signal::Signal;

use super::slots::{STATE_FAILED, STATE_READY, Slots};
use super::workers::Workers;
use super::{WorkerDied, signals};
use crate::measure::clock::{monotonic_ns, sleep_until};
use crate::measure::procfs::process_stat;

/// How long workers may take from fork to ready before the run gives up.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

pub fn check_interrupt() -> Result<()> {
    match signals::received() {
        Some(signal) => Err(crate::error::Error::Interrupted(signal).into()),
        None => Ok(()),
    }
}

/// Stops every worker with one SIGSTOP to their group and waits until each is stopped, so
/// every counter read next describes one instant. A SIGCONT from outside can cancel the stop
/// before it is seen (the wait then blocked for good, deaf to Ctrl-C): the wait polls, sends
/// SIGSTOP again to a worker not yet stopped, heeds stop signals, and gives up after
/// FREEZE_TIMEOUT naming the worker.
/// Returns whether a worker kept running through the freeze (something outside continued it):
/// the freeze then ended late, and the slice with it.
pub fn freeze(workers: &mut Workers, slots: &Slots) -> Result<bool> {
    let every: Vec<usize> = (0..workers.processes.len()).collect();
    freeze_these(workers, slots, &every)
}

/// Freezes the crew again (one SIGSTOP to its group) and waits for the stop reports of the
/// processes in `running` alone: those an outside SIGCONT set running. The others stayed
/// stopped, and a stopped process sends no new report for another SIGSTOP.
pub fn freeze_these(workers: &mut Workers, slots: &Slots, running: &[usize]) -> Result<bool> {
    workers.signal_all(Signal::SIGSTOP)?;
    let mut kept_running = false;
    let deadline = monotonic_ns() + FREEZE_TIMEOUT.as_nanos() as u64;
    for &process in running {
        let mut polls = 0u32;
        let mut last_seen: Option<u64> = None;
        loop {
            match workers.poll_stop(process) {
                Ok(Some(status)) if libc::WIFSTOPPED(status) => break,
                Ok(Some(status)) if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) => {
                    return Err(workers.died_with(slots, process, Some(status)).into());
                }
                Ok(_) => {}
                Err(()) => return Err(workers.died_with(slots, process, None).into()),
            }
            check_interrupt()?;
            if monotonic_ns() > deadline {
                return Err(WorkerDied::because(format!(
                    "worker {} did not stop within {} s of SIGSTOP (something outside kept continuing it)",
                    workers.processes[process],
                    FREEZE_TIMEOUT.as_secs()
                ))
                .into());
            }
            polls += 1;
            // Its loop as a look some 50 us after the SIGSTOP found it: a worker on its CPU takes
            // the stop within microseconds (the signal's IPI), at its next return to user space.
            if polls == 3 {
                last_seen = Some(iterations_of(workers, slots, process));
            }
            if polls.is_multiple_of(RESTOP_POLLS) {
                // Its loop moved since then: it ran with the stop pending, which a task does not;
                // a SIGCONT from outside cancelled the stop. One that only waited for its CPU
                // has not moved.
                let now = iterations_of(workers, slots, process);
                kept_running |= last_seen.is_some_and(|seen| seen != now);
                last_seen = Some(now);
                let _ = nix::sys::signal::kill(workers.processes[process], Signal::SIGSTOP);
            }
            // Short: a worker on another CPU stops within microseconds of the signal, and
            // one on the harness's own CPU as soon as the harness sleeps (it runs SCHED_FIFO).
            // 100 us sleeps made a freeze take 190 us, twice a slice.
            std::thread::sleep(FREEZE_POLL);
        }
    }
    Ok(kept_running)
}

/// The loop counters of the workers `process` runs, summed: its own worker's (process mode,
/// where process and slot are one number), or every worker's (thread mode: one process).
fn iterations_of(workers: &Workers, slots: &Slots, process: usize) -> u64 {
    let load = |slot: usize| slots.get(slot).iterations.load(Ordering::Relaxed);
    match workers.processes.len() == workers.cpus.len() {
        true => load(process),
        false => (0..workers.cpus.len()).map(load).sum(),
    }
}

/// How long the freeze sleeps between looks at a worker not yet stopped, and after how many
/// looks (5 ms) it sends SIGSTOP again.
const FREEZE_POLL: Duration = Duration::from_micros(20);
const RESTOP_POLLS: u32 = 250;

/// How long a freeze may take before the slice gives up on the worker that will not stop.
const FREEZE_TIMEOUT: Duration = Duration::from_secs(5);

/// Ctrl-Z: the workers run in their own process group, out of the terminal's reach, so the
/// harness stops them, stops itself, and lets them go on when it is continued. The slice then
/// overran its time and is flagged, not silently kept; fixed work, which has no time to
/// overrun, is flagged by `PAUSED`.
fn pause_if_asked(workers: &Workers) {
    if signals::take_stop_request() {
        PAUSED.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = workers.signal_all(Signal::SIGSTOP);
        let _ = nix::sys::signal::raise(Signal::SIGSTOP);
        let _ = workers.signal_all(Signal::SIGCONT);
    }
}

/// Whether the run was paused (Ctrl-Z) since the last `take_paused`.
static PAUSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub fn take_paused() -> bool {
    PAUSED.swap(false, std::sync::atomic::Ordering::SeqCst)
}

/// Sleeps until `deadline_ns` on the monotonic clock; returns early with an error when a stop
/// signal arrives or a worker dies.
pub fn wait_until(deadline_ns: u64, workers: &mut Workers, slots: &Slots) -> Result<()> {
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
pub fn wait_ready(workers: &mut Workers, slots: &Slots) -> Result<()> {
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
                    return Err(WorkerDied::because(format!(
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
            return Err(WorkerDied::because(format!(
                "{shown}{more} did not report ready within {} s",
                READY_TIMEOUT.as_secs()
            ))
            .into());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
