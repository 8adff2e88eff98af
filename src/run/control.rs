//! Waiting on the workers: until all are ready, until a deadline (returning early on a stop
//! signal or a death). Ctrl-Z is honoured here. Parking them is park.rs's.

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
/// How often the wait for ready looks for a worker that failed or died before it got there
/// (a ready one wakes it at once).
const READY_POLL: Duration = Duration::from_millis(1);

pub fn check_interrupt() -> Result<()> {
    match signals::received() {
        Some(signal) => Err(crate::error::Error::Interrupted(signal).into()),
        None => Ok(()),
    }
}

/// Ctrl-Z: the workers run in their own process group, out of the terminal's reach, so the
/// harness stops them, stops itself, and lets them go on when it is continued. The slice then
/// overran its time and is flagged, not silently kept; fixed work, which has no time to
/// overrun, is flagged by `PAUSED`.
pub(super) fn pause_if_asked(workers: &Workers) {
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
    let reported = &slots.control().ready;
    loop {
        check_interrupt()?;
        pause_if_asked(workers);
        let seen = reported.load(Ordering::Acquire);
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
        super::park::futex_wait(reported, seen, Some(READY_POLL));
    }
}
