//! The harness's own signal handling: SIGINT, SIGTERM and SIGHUP only set a flag, so every
//! exit path goes through the same cleanup (workers killed and reaped, cgroups removed).
//! A second Ctrl-C while cleaning up changes nothing: the flag is already set.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, SigmaskHow, Signal, sigaction, sigprocmask};

static RECEIVED: AtomicI32 = AtomicI32::new(0);
static CHILD_CHANGED: AtomicBool = AtomicBool::new(false);

extern "C" fn note_signal(signal: libc::c_int) {
    // Keep the first signal: it decides the exit code.
    let _ = RECEIVED.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
}

extern "C" fn note_child(_: libc::c_int) {
    CHILD_CHANGED.store(true, Ordering::SeqCst);
}

pub const STOP_SIGNALS: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

/// The signal that releases workers; blocked everywhere so workers can sigwait for it.
pub const START_SIGNAL: Signal = Signal::SIGUSR1;

pub fn install() {
    // No SA_RESTART: a sleeping sample wait must return EINTR so the run stops promptly.
    let action = SigAction::new(SigHandler::Handler(note_signal), SaFlags::empty(), SigSet::empty());
    for signal in STOP_SIGNALS {
        // SAFETY: the handler only touches an atomic.
        unsafe { sigaction(signal, &action) }.expect("installing a signal handler");
    }
    // SIGCHLD cuts a sample wait short too, so a worker that dies is noticed at once, not at
    // the next sample.
    let child = SigAction::new(SigHandler::Handler(note_child), SaFlags::SA_NOCLDSTOP, SigSet::empty());
    // SAFETY: the handler only touches an atomic.
    unsafe { sigaction(Signal::SIGCHLD, &child) }.expect("installing the SIGCHLD handler");
    let mut start = SigSet::empty();
    start.add(START_SIGNAL);
    sigprocmask(SigmaskHow::SIG_BLOCK, Some(&start), None).expect("blocking the start signal");
}

/// Whether a child exited since the last call.
pub fn take_child_changed() -> bool {
    CHILD_CHANGED.swap(false, Ordering::SeqCst)
}

/// In a freshly forked worker: stop signals act by default again (they kill the worker).
pub fn reset_in_worker() {
    for signal in STOP_SIGNALS.into_iter().chain([Signal::SIGCHLD]) {
        // SAFETY: restoring the default disposition.
        let _ = unsafe { sigaction(signal, &SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty())) };
    }
}

/// The first stop signal received, if any.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal),
    }
}
