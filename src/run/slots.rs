//! Per-worker slots in one shared anonymous mapping: the loop counter the harness samples and
//! the handshake fields of the start protocol. Each slot is 256 bytes, 128-aligned, so two
//! workers' counters never share a cache line (nor an adjacent-line prefetch pair).

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

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
    message_len: AtomicU32,
    message: UnsafeCell<[u8; MESSAGE_BYTES]>,
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

/// The shared mapping. Created before fork; workers inherit it.
pub struct Slots {
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
        let bytes = count.max(1) * std::mem::size_of::<Slot>();
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
        Ok(Slots { base: base as *mut Slot, count })
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
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.count.max(1) * std::mem::size_of::<Slot>()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_cache_line_isolated() {
        assert_eq!(std::mem::size_of::<Slot>() % 128, 0);
        assert_eq!(std::mem::align_of::<Slot>(), 128);
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
}
