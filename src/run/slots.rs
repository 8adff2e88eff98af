//! The crew's shared mapping: one `Control` (the park protocol's two futex words) and a slot
//! per worker, with the loop counter the harness samples, the handshake fields of the start
//! protocol and the worker's own reading of its counters at its last park. Slots are
//! 128-aligned, so two workers' counters never share a cache line (nor an adjacent-line
//! prefetch pair), nor a worker's counter the control words every worker reads.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

use super::snapshot::TaskCounts;
use crate::measure::procfs::SchedTimes;

/// The park protocol (run/park.rs): `command` counts the harness's requests, odd while it asks
/// the crew to park, even while the crew runs; `parked` counts the workers that took their
/// reading for the current odd command and wait on `command`; `settle_until_ns` is set while a
/// wake asks each CPU for one whole iteration (of the worker there that claims it), and more
/// until that CLOCK_MONOTONIC time, before the crew parks again (the settling window), 0
/// otherwise; `woken_ns` stamps the harness's last wake.
#[repr(C, align(128))]
#[derive(Default)]
pub struct Control {
    pub command: AtomicU32,
    pub parked: AtomicU32,
    pub settle_until_ns: AtomicU64,
    /// CLOCK_MONOTONIC ns of the harness's last wake of the crew, written before the command
    /// is made even: where a worker was still on its way to its sleep then, its window starts
    /// there.
    pub woken_ns: AtomicU64,
    /// Workers that reported ready, each with a wake of this word: the harness sleeps on it
    /// (a 1 ms poll was half of a 2-worker crew's set-up); a failure is seen at its timeout.
    pub ready: AtomicU32,
}

/// A field of `Reading` no source gave (no schedstat, no children): never a real count.
pub const UNKNOWN: u64 = u64::MAX;

/// What a worker reads of itself at a park (or before it reports ready, and when its fixed work
/// is done): written by the worker only, before it publishes the park (or state) with Release;
/// read by the harness only after seeing that with Acquire.
#[repr(C)]
#[derive(Default)]
pub struct Reading {
    /// CLOCK_MONOTONIC ns when it took this reading: its window's end.
    pub parked_ns: AtomicU64,
    /// CLOCK_MONOTONIC ns when it left its previous park: its window's start.
    pub resumed_ns: AtomicU64,
    /// schedstat: on its CPU, waiting for it (run_delay), timeslices; UNKNOWN for the last
    /// two where the kernel keeps no schedstat and its CPU clock stood in.
    pub on_cpu_ns: AtomicU64,
    pub wait_ns: AtomicU64,
    pub timeslices: AtomicU64,
    /// getrusage: its minor faults and user and system time, the waited-for children's added
    /// in process mode (a forking workload's children do its faulting).
    pub minflt: AtomicU64,
    pub user_us: AtomicU64,
    pub sys_us: AtomicU64,
    /// Process mode: the waited-for children's CPU time; UNKNOWN in thread mode.
    pub children_ns: AtomicU64,
}

// A worker's state, 0 (zeroed memory) until it reports: ready, then failed or (fixed work)
// done. A running worker stays `ready`: its start shows in `start_ns`.
pub const STATE_READY: u32 = 1;
pub const STATE_FAILED: u32 = 3;
/// --iterations: the worker did its fixed work and is parked.
pub const STATE_DONE: u32 = 4;

const MESSAGE_BYTES: usize = 160;

#[repr(C, align(128))]
pub struct Slot {
    pub iterations: AtomicU64,
    pub state: AtomicU32,
    /// The worker's thread id (its pid in process mode), for perf and /proc.
    pub tid: AtomicI32,
    /// CLOCK_MONOTONIC ns at which the worker left its wait and entered the loop.
    pub start_ns: AtomicU64,
    /// --iterations: CLOCK_MONOTONIC ns at which the worker finished its fixed work.
    pub finish_ns: AtomicU64,
    /// The odd command this worker last parked for (Control::command).
    pub parked_for: AtomicU32,
    pub reading: Reading,
    message_len: AtomicU32,
    message: UnsafeCell<[u8; MESSAGE_BYTES]>,
    /// The first slot on this worker's CPU (`Slots::share_settling`): its `settler_for_ns`
    /// is the CPU's, for every worker there.
    pub settle_slot: AtomicU32,
    /// On a CPU's first slot: the last settling window (its `Control::settle_until_ns`) a
    /// worker on this CPU claimed to settle the CPU in. Written by the CPU's own workers only,
    /// and after the hot fields' cache lines.
    pub settler_for_ns: AtomicU64,
}

// SAFETY: `message` is written only by the slot's worker before it publishes STATE_FAILED
// with Release, and read by the harness only after observing that state with Acquire.
unsafe impl Sync for Slot {}

impl Slot {
    /// Records why this worker stops; called once, in the worker.
    pub fn fail(&self, reason: &str) {
        let bytes = reason.as_bytes();
        let len = bytes.len().min(MESSAGE_BYTES);
        // SAFETY: see the Sync impl; only this worker writes here, and only once.
        unsafe { (&mut *self.message.get())[..len].copy_from_slice(&bytes[..len]) };
        self.message_len.store(len as u32, Ordering::Relaxed);
        self.state.store(STATE_FAILED, Ordering::Release);
    }

    pub fn failure(&self) -> Option<String> {
        if self.state.load(Ordering::Acquire) != STATE_FAILED {
            return None;
        }
        let len = self.message_len.load(Ordering::Relaxed) as usize;
        // SAFETY: published by the Release store in `fail`.
        let bytes = unsafe { &(&*self.message.get())[..len.min(MESSAGE_BYTES)] };
        Some(String::from_utf8_lossy(bytes).into_owned())
    }
}

/// A worker's reading of itself, as plain values (see `Reading`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OwnReading {
    pub parked_ns: u64,
    pub resumed_ns: u64,
    pub sched: Option<SchedTimes>,
    pub counts: TaskCounts,
    pub children_ns: Option<u64>,
}

impl Slot {
    /// Called by the slot's worker only, before it publishes the reading.
    pub fn store_reading(&self, own: &OwnReading) {
        let r = &self.reading;
        let known = |v: Option<u64>| v.unwrap_or(UNKNOWN);
        r.parked_ns.store(own.parked_ns, Ordering::Relaxed);
        r.resumed_ns.store(own.resumed_ns, Ordering::Relaxed);
        r.on_cpu_ns.store(own.sched.map_or(UNKNOWN, |s| s.on_cpu_ns), Ordering::Relaxed);
        r.wait_ns.store(known(own.sched.and_then(|s| s.wait_ns)), Ordering::Relaxed);
        r.timeslices.store(known(own.sched.and_then(|s| s.timeslices)), Ordering::Relaxed);
        r.minflt.store(own.counts.minflt, Ordering::Relaxed);
        r.user_us.store(own.counts.user_us, Ordering::Relaxed);
        r.sys_us.store(own.counts.sys_us, Ordering::Relaxed);
        r.children_ns.store(known(own.children_ns), Ordering::Relaxed);
    }

    /// The reading last published (see `Reading` on when it may be read).
    pub fn reading(&self) -> OwnReading {
        let r = &self.reading;
        let load = |a: &AtomicU64| Some(a.load(Ordering::Relaxed)).filter(|&v| v != UNKNOWN);
        OwnReading {
            parked_ns: r.parked_ns.load(Ordering::Relaxed),
            resumed_ns: r.resumed_ns.load(Ordering::Relaxed),
            sched: load(&r.on_cpu_ns).map(|on_cpu_ns| SchedTimes {
                on_cpu_ns,
                wait_ns: load(&r.wait_ns),
                timeslices: load(&r.timeslices),
            }),
            counts: TaskCounts {
                minflt: r.minflt.load(Ordering::Relaxed),
                user_us: r.user_us.load(Ordering::Relaxed),
                sys_us: r.sys_us.load(Ordering::Relaxed),
            },
            children_ns: load(&r.children_ns),
        }
    }
}

/// The shared mapping. Created before fork; workers inherit it.
pub struct Slots {
    control: *mut Control,
    base: *mut Slot,
    count: usize,
}

// SAFETY: the mapping is only reached through `get`, which hands out `&Slot`, and `Slot` is
// Sync; the pointer itself is never written after `new`.
unsafe impl Send for Slots {}
// SAFETY: as for Send: shared access goes through `&Slot` only, whose fields are atomics or
// guarded by the state's Release/Acquire (see Slot's Sync impl).
unsafe impl Sync for Slots {}

impl Slots {
    pub fn new(count: usize) -> std::io::Result<Self> {
        let bytes = Self::bytes(count);
        // SAFETY: a fresh shared anonymous mapping; all-zero bytes are valid for every field.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let control = base as *mut Control;
        // SAFETY: the slots follow the control block; size_of::<Control>() keeps their alignment.
        let slots = unsafe { control.add(1) as *mut Slot };
        Ok(Slots { control, base: slots, count })
    }

    fn bytes(count: usize) -> usize {
        std::mem::size_of::<Control>() + count.max(1) * std::mem::size_of::<Slot>()
    }

    pub fn control(&self) -> &Control {
        // SAFETY: the start of the live mapping; all-zero bytes are a valid Control.
        unsafe { &*self.control }
    }

    pub fn count(&self) -> usize {
        self.count
    }

    /// Points each worker at the first slot on its CPU (`cpus[i]` is slot i's), whose
    /// `settler_for_ns` the CPU's workers share: a settling window wants one iteration of a
    /// CPU's workers, not of each (park.rs). Before fork.
    pub fn share_settling(&self, cpus: &[usize]) {
        let mut first_on: std::collections::HashMap<usize, usize> = Default::default();
        for (index, &cpu) in cpus.iter().enumerate().take(self.count) {
            let first = *first_on.entry(cpu).or_insert(index);
            self.get(index).settle_slot.store(first as u32, Ordering::Relaxed);
        }
    }

    pub fn get(&self, index: usize) -> &Slot {
        assert!(index < self.count);
        // SAFETY: in bounds of the live mapping.
        unsafe { &*self.base.add(index) }
    }
}

impl Drop for Slots {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, with its size.
        unsafe { libc::munmap(self.control as *mut libc::c_void, Self::bytes(self.count)) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_cache_line_isolated() {
        assert_eq!(std::mem::size_of::<Slot>() % 128, 0);
        assert_eq!(std::mem::align_of::<Slot>(), 128);
        assert_eq!(std::mem::size_of::<Control>(), 128, "the slots after it keep their alignment");
        let slots = Slots::new(3).unwrap();
        let control = slots.control() as *const Control as usize;
        assert_eq!(slots.get(0) as *const Slot as usize - control, 128);
        assert_eq!(slots.get(2) as *const Slot as usize % 128, 0);
    }

    #[test]
    fn workers_on_one_cpu_share_its_first_slot_for_settling() {
        let slots = Slots::new(5).unwrap();
        slots.share_settling(&[0, 1, 0, 1, 2]);
        let shared: Vec<u32> = (0..5).map(|i| slots.get(i).settle_slot.load(Ordering::Relaxed)).collect();
        assert_eq!(shared, [0, 1, 0, 1, 4]);
    }

    #[test]
    fn failure_messages_round_trip_and_truncate() {
        let slots = Slots::new(2).unwrap();
        assert_eq!(slots.get(0).failure(), None);
        slots.get(0).fail("mmap failed");
        assert_eq!(slots.get(0).failure().unwrap(), "mmap failed");
        slots.get(1).fail(&"x".repeat(1000));
        assert_eq!(slots.get(1).failure().unwrap().len(), MESSAGE_BYTES);
    }

    #[test]
    fn a_reading_round_trips_and_unknown_stays_unknown() {
        let slots = Slots::new(1).unwrap();
        let own = OwnReading {
            parked_ns: 9,
            resumed_ns: 4,
            sched: Some(SchedTimes { on_cpu_ns: 5, wait_ns: Some(0), timeslices: None }),
            counts: TaskCounts { minflt: 7, user_us: 1, sys_us: 2 },
            children_ns: None,
        };
        slots.get(0).store_reading(&own);
        assert_eq!(slots.get(0).reading(), own);
        slots.get(0).store_reading(&OwnReading { sched: None, ..own });
        assert_eq!(slots.get(0).reading().sched, None, "no schedstat and no CPU clock: unknown, not 0");
    }
}
