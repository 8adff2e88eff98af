//! The park protocol: how a timed crew stops between its slices. The harness asks (the
//! crew's command word made odd); each worker, at its loop's next iteration boundary (after
//! its munmap, holding none of the iteration's memory), reads its own counters into its slot,
//! counts itself parked and sleeps on the command word; the harness waits for the last one's
//! wake of the parked count, reads the slots (memory, no system call a worker), and lets the
//! crew go with one FUTEX_WAKE. Each worker's window is its own: from its wake to its reading.
//! No stop signal: a SIGCONT from outside means nothing to a parked worker, and a worker
//! stopped from outside is found and named rather than waited for.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Result;

use super::WorkerDied;
use super::control::{check_interrupt, pause_if_asked};
use super::signals;
use super::slots::{OwnReading, Slot, Slots};
use super::snapshot::TaskCounts;
use super::workers::Workers;
use crate::measure::clock::monotonic_ns;
use crate::measure::procfs::{OwnTimes, SchedTimes, process_stat};

/// Sleeps while `word` holds `expected`, at most `timeout`; returns at once where it does not
/// (or a wake, a signal, the timeout). Not FUTEX_PRIVATE: the word is in a mapping shared
/// between processes.
pub(super) fn futex_wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
    let ts = timeout.map(|t| libc::timespec { tv_sec: t.as_secs() as libc::time_t, tv_nsec: t.subsec_nanos() as _ });
    let ts_ptr = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: a valid, aligned u32 in a live mapping; a null or valid relative timeout.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAIT, expected, ts_ptr, 0usize, 0u32) };
}

pub(super) fn futex_wake(word: &AtomicU32, count: i32) {
    // SAFETY: as futex_wait; waking has no other precondition.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, count, 0usize, 0usize, 0u32) };
}

/// A worker's side: its slot, its crew's control words and its own counters' files.
pub struct WorkerParker<'a> {
    slot: &'a Slot,
    command: &'a AtomicU32,
    parked: &'a AtomicU32,
    crew_size: u32,
    times: RefCell<OwnTimes>,
    /// When it was last made runnable to leave a park (or entered its loop): the start of its
    /// current window.
    resumed_ns: Cell<u64>,
    /// Its wait for its CPU (schedstat's run_delay) as last read: at its reading, just before
    /// it sleeps, as it leaves the park.
    waited_ns: Cell<Option<u64>>,
    /// What it waited for its CPU between a reading and its sleep, in no window: the last to
    /// park wakes the harness, which on a CPU of its own preempts it there (SCHED_FIFO) while it
    /// reads and figures the slice. Left out of the wait it publishes.
    parked_wait_ns: Cell<u64>,
    settle_until_ns: &'a AtomicU64,
    /// Its CPU's: the last settling window a worker on it claimed to settle the CPU.
    cpu_settler_for_ns: &'a AtomicU64,
    /// Woken for a settling window and not yet through its first boundary since.
    woken_to_settle: Cell<bool>,
    /// It settles its CPU in the current settling window: one iteration, and more until its end.
    settler: Cell<bool>,
    /// The settling window's end: it parks at no boundary before it.
    settles_until_ns: Cell<u64>,
    /// The crew's last wake by the harness (`Control::woken_ns`).
    crew_woken_ns: &'a AtomicU64,
    /// When it took its last reading.
    read_ns: Cell<u64>,
}

impl<'a> WorkerParker<'a> {
    /// On the worker's own thread (its schedstat is `thread-self`'s).
    pub fn new(slots: &'a Slots, slot: usize, whole_process: bool) -> Result<Self, String> {
        let times = OwnTimes::open(whole_process).map_err(|e| format!("reading its own counters: {e}"))?;
        let cpu_first_slot = slots.get(slot).settle_slot.load(Ordering::Relaxed) as usize;
        Ok(WorkerParker {
            slot: slots.get(slot),
            command: &slots.control().command,
            parked: &slots.control().parked,
            crew_size: slots.count() as u32,
            times: RefCell::new(times),
            resumed_ns: Cell::new(monotonic_ns()),
            waited_ns: Cell::new(None),
            parked_wait_ns: Cell::new(0),
            settle_until_ns: &slots.control().settle_until_ns,
            cpu_settler_for_ns: &slots.get(cpu_first_slot).settler_for_ns,
            woken_to_settle: Cell::new(false),
            settler: Cell::new(false),
            settles_until_ns: Cell::new(0),
            crew_woken_ns: &slots.control().woken_ns,
            read_ns: Cell::new(0),
        })
    }

    pub fn command(&self) -> &'a AtomicU32 {
        self.command
    }

    /// Its counters now, as the window from `resumed_ns` to now; published by the caller.
    pub fn take_reading(&self, resumed_ns: u64) {
        let mut times = self.times.borrow_mut();
        let sched = times.sched();
        // Stamped after its schedstat read: a preemption between the two would otherwise put
        // wait into the window that ended before it (1.1 ms over a 50 ms window in CI, a
        // SIGCONT storm beside other tests).
        let parked_ns = monotonic_ns();
        self.read_ns.set(parked_ns);
        self.waited_ns.set(sched.and_then(|s| s.wait_ns));
        let parked_wait_ns = self.parked_wait_ns.get();
        let sched = sched.map(|s| SchedTimes { wait_ns: s.wait_ns.map(|w| w.saturating_sub(parked_wait_ns)), ..s });
        let (own, children) = times.usage();
        let children_ns = children.map(|c| (c.user_us + c.sys_us) * 1000);
        let children = children.unwrap_or_default();
        self.slot.store_reading(&OwnReading {
            parked_ns,
            resumed_ns,
            sched,
            counts: TaskCounts {
                minflt: own.minflt + children.minflt,
                user_us: own.user_us + children.user_us,
                sys_us: own.sys_us + children.sys_us,
            },
            children_ns,
        });
    }

    /// Marks the loop's start (its first window's).
    pub fn started(&self, now_ns: u64) {
        self.resumed_ns.set(now_ns);
    }

    /// At an iteration boundary with the command odd: reads itself, counts itself parked and
    /// sleeps until the command is even. Woken into a new odd command without having run (its
    /// CPU went to others for the whole window), it reads itself again, an empty window; unless
    /// the wake asked for a settling window and it is the first of its CPU's workers to claim
    /// it: one iteration, and more until the window's end; the CPU's other workers park again
    /// at their turn. One iteration a CPU, not a worker: after it the CPU's caches and its memcg
    /// charge cache are its crew's, as at any turn of a worker sharing the CPU (128 a CPU
    /// settling one each took 36 ms of every 417 ms slice). A claim, not a check of a finished
    /// iteration: where iterations outlast the scheduler's turns (a user-mode-linux guest), every
    /// worker had begun its own before the first one ended.
    pub fn park(&self) {
        loop {
            let command = self.command.load(Ordering::Acquire);
            let window_ns = self.settles_until_ns.get();
            if self.woken_to_settle.replace(false)
                && self.cpu_settler_for_ns.fetch_max(window_ns, Ordering::Relaxed) < window_ns
            {
                self.settler.set(true);
                return;
            }
            if self.settler.get() && monotonic_ns() < window_ns {
                return;
            }
            self.settler.set(false);
            if command & 1 == 0 {
                return;
            }
            if self.slot.parked_for.load(Ordering::Relaxed) != command {
                self.take_reading(self.resumed_ns.get());
                self.slot.parked_for.store(command, Ordering::Relaxed);
                if self.parked.fetch_add(1, Ordering::AcqRel) + 1 == self.crew_size {
                    futex_wake(self.parked, 1);
                }
            }
            if self.command.load(Ordering::Acquire) == command {
                self.leave_out_parked_wait(u64::MAX);
                futex_wait(self.command, command, None);
                self.resumed_ns.set(self.woken_ns());
            } else {
                // Woken before it slept: it waited for its CPU from its reading on (the last
                // to park wakes the SCHED_FIFO harness, which preempts it there, reads and
                // wakes the crew; with 32 workers a CPU its turn came 0.67 s after that wake).
                // Its window starts at the wake, and only its wait before it is left out.
                let woken_ns = self.crew_woken_ns.load(Ordering::Acquire);
                self.leave_out_parked_wait(woken_ns.saturating_sub(self.read_ns.get()));
                self.resumed_ns.set(woken_ns);
            }
            let settle_until_ns = self.settle_until_ns.load(Ordering::Acquire);
            self.woken_to_settle.set(settle_until_ns > 0);
            self.settles_until_ns.set(settle_until_ns);
        }
    }

    /// When the wake made it runnable: now, less what it waited for its CPU since its reading.
    /// With more workers than CPUs a worker woken at once may first run a whole round of turns
    /// later; its window still starts at its wake (the time went to the workers sharing its
    /// CPU, and is in its wait), not at its turn (which made a slice's windows 0.59 s of
    /// 0.83 s with 128 workers a CPU). With a CPU each, it is the moment the kernel's wake
    /// loop reached it: the wake's tail before that is in no window.
    fn woken_ns(&self) -> u64 {
        let now = monotonic_ns();
        let waited = self.waited_since_read();
        now.saturating_sub(waited.unwrap_or(0))
    }

    /// Just before it sleeps: what it waited for its CPU since its reading, up to `at_most_ns`
    /// of it, is in no window.
    fn leave_out_parked_wait(&self, at_most_ns: u64) {
        if let Some(waited) = self.waited_since_read() {
            self.parked_wait_ns.set(self.parked_wait_ns.get() + waited.min(at_most_ns));
        }
    }

    /// Its wait for its CPU since `waited_ns` was read, which it becomes.
    fn waited_since_read(&self) -> Option<u64> {
        let now = self.times.borrow_mut().wait_ns();
        let since = now.zip(self.waited_ns.get()).map(|(now, then)| now.saturating_sub(then));
        self.waited_ns.set(now);
        since
    }
}

/// How long the harness sleeps on the parked count between its looks at deaths, stop
/// signals and Ctrl-Z (a signal cuts the sleep short; the last worker to park wakes it).
const PARK_POLL: Duration = Duration::from_millis(10);

/// How long the crew may make no progress (no worker parked, no loop counter of those still
/// running moved) before the harness looks at why: a worker stopped from outside is named.
const STALL_NS: u64 = 5_000_000_000;

/// How long a park may take in all before the slice fails, naming the workers not parked.
const PARK_TIMEOUT_NS: u64 = 120_000_000_000;

/// Asks the crew to park and waits until every worker has: returns when the last one did.
pub fn park(workers: &mut Workers, slots: &Slots) -> Result<u64> {
    let control = slots.control();
    let command = control.command.fetch_add(1, Ordering::AcqRel) + 1;
    debug_assert!(command & 1 == 1, "a park is asked of a running crew");
    let count = slots.count() as u32;
    let begun_ns = monotonic_ns();
    let mut progress = (0, progress_mark(slots, command), begun_ns);
    loop {
        let parked = control.parked.load(Ordering::Acquire);
        if parked == count {
            return Ok(monotonic_ns());
        }
        futex_wait(&control.parked, parked, Some(PARK_POLL));
        if signals::take_child_changed()
            && let Some(dead) = workers.find_dead()
        {
            return Err(workers.died(slots, dead).into());
        }
        check_interrupt()?;
        pause_if_asked(workers);
        let now = monotonic_ns();
        let mark = progress_mark(slots, command);
        if parked != progress.0 || mark != progress.1 {
            progress = (parked, mark, now);
        } else if now - progress.2 > STALL_NS {
            stalled(workers, slots, command, now - begun_ns > PARK_TIMEOUT_NS)?;
            progress.2 = now;
        }
    }
}

/// The loop counters of the workers not yet parked for `command`, summed: they move while
/// those workers make their way to a boundary.
fn progress_mark(slots: &Slots, command: u32) -> u64 {
    (0..slots.count())
        .map(|i| slots.get(i))
        .filter(|slot| slot.parked_for.load(Ordering::Relaxed) != command)
        .map(|slot| slot.iterations.load(Ordering::Relaxed))
        .sum()
}

/// The crew made no progress for STALL_NS: a worker stopped by a signal from outside fails
/// the slice by name, as does any worker still not parked after PARK_TIMEOUT_NS; one merely
/// slow (blocked in reclaim, starved of its CPU) is waited for.
fn stalled(workers: &Workers, slots: &Slots, command: u32, timed_out: bool) -> Result<()> {
    let missing: Vec<(usize, char)> = (0..slots.count())
        .filter(|&i| slots.get(i).parked_for.load(Ordering::Relaxed) != command)
        .map(|i| {
            let tid = slots.get(i).tid.load(Ordering::Relaxed);
            (i, process_stat(tid as u32).map_or('?', |s| s.state))
        })
        .collect();
    let stopped: Vec<&(usize, char)> = missing.iter().filter(|(_, state)| matches!(state, 'T' | 't')).collect();
    let named = |list: &[&(usize, char)]| {
        let shown: Vec<String> = list
            .iter()
            .take(4)
            .map(|&&(i, state)| format!("worker {} on CPU {} (state {state})", workers.process_of(i), workers.cpus[i]))
            .collect();
        let more = if list.len() > 4 { format!(" and {} more", list.len() - 4) } else { String::new() };
        format!("{}{more}", shown.join(", "))
    };
    if !stopped.is_empty() {
        return Err(WorkerDied::because(format!(
            "{} stopped by a signal from outside and did not park within {} s: the slice is given up and its crew ended (the next slice makes another)",
            named(&stopped),
            STALL_NS / 1_000_000_000
        ))
        .into());
    }
    if timed_out {
        let all: Vec<&(usize, char)> = missing.iter().collect();
        return Err(WorkerDied::because(format!(
            "{} did not reach the end of an iteration within {} s",
            named(&all),
            PARK_TIMEOUT_NS / 1_000_000_000
        ))
        .into());
    }
    Ok(())
}

/// Lets a parked crew run: the parked count reset, the command made even, every worker woken
/// with one FUTEX_WAKE. Returns when the wake was sent.
pub fn resume(slots: &Slots) -> u64 {
    wake(slots, 0);
    monotonic_ns()
}

/// The settling window: the crew woken for one whole iteration on each CPU (its first worker
/// there to claim it), and more until `settle_ns` after the wake, unmeasured, and parked again
/// (the park asked at once: the settler parks at the first boundary past both, however late its
/// wake; the CPU's other workers at their turn). Returns when the last one parked.
pub fn settle(workers: &mut Workers, slots: &Slots, settle_ns: u64) -> Result<u64> {
    wake(slots, monotonic_ns() + settle_ns);
    park(workers, slots)
}

/// `settle_until_ns`: 0 for a measured window.
fn wake(slots: &Slots, settle_until_ns: u64) {
    let control = slots.control();
    control.parked.store(0, Ordering::Release);
    control.settle_until_ns.store(settle_until_ns, Ordering::Release);
    control.woken_ns.store(monotonic_ns(), Ordering::Release);
    let command = control.command.fetch_add(1, Ordering::AcqRel) + 1;
    debug_assert!(command & 1 == 0, "a resume is asked of a parked crew");
    futex_wake(&control.command, i32::MAX);
}
