//! The harness's own signal handling during a run. Every terminating signal it can catch
//! (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR2, SIGALRM, the real-time signals, ...) only sets a
//! flag, so every exit path goes through the same cleanup (workers killed and reaped, cgroups
//! removed, unfinished files dropped). A second signal while cleaning up changes nothing: the
//! first one is kept. Ctrl-Z (SIGTSTP and friends) stops the workers with the harness.
//!
//! Only a run installs these; `compare`, `plot` and the listings keep the default behaviour.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, SigmaskHow, Signal, sigaction, sigprocmask};

static RECEIVED: AtomicI32 = AtomicI32::new(0);
/// The latest terminating signal: what stopped a write after the measuring, where the first
/// (RECEIVED) may have stopped the measuring itself.
static LATEST: AtomicI32 = AtomicI32::new(0);
/// Every terminating signal counts, the first and those after it: a write that blocks after
/// the run was stopped is still ended by the next one.
static DELIVERED: AtomicU32 = AtomicU32::new(0);
static CHILD_CHANGED: AtomicBool = AtomicBool::new(false);
static STOP_REQUESTED: AtomicBool = AtomicBool::new(false);

extern "C" fn note_signal(signal: libc::c_int) {
    // Keep the first signal: it decides the exit code.
    let _ = RECEIVED.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
    LATEST.store(signal, Ordering::SeqCst);
    DELIVERED.fetch_add(1, Ordering::SeqCst);
}

extern "C" fn note_child(_: libc::c_int) {
    CHILD_CHANGED.store(true, Ordering::SeqCst);
}

extern "C" fn note_stop(_: libc::c_int) {
    STOP_REQUESTED.store(true, Ordering::SeqCst);
}

/// Signals whose default action ends the process and that arrive from outside (kill, the
/// terminal, timers). Faults (SIGSEGV, SIGBUS, ...) are not: they mean a bug, not a request.
/// SIGABRT is caught too: `kill -ABRT` is a request like any, and a real abort() dies anyway
/// (abort restores the default action and raises again when a handler returns). SIGPIPE stays
/// ignored (Rust's default): a closed pipe is an error to handle where it occurs. Signals 32
/// and 33 are glibc's own (thread cancellation, setxid) and cannot be caught through it.
const TERMINATING: [Signal; 14] = [
    Signal::SIGABRT,
    Signal::SIGSTKFLT,
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR2,
    Signal::SIGALRM,
    Signal::SIGVTALRM,
    Signal::SIGPROF,
    Signal::SIGXCPU,
    Signal::SIGXFSZ,
    Signal::SIGIO,
    Signal::SIGPWR,
];

/// Terminal stop requests: the harness stops the workers, then itself.
const STOPPING: [Signal; 3] = [Signal::SIGTSTP, Signal::SIGTTIN, Signal::SIGTTOU];

/// The signal that releases workers; blocked everywhere so workers can sigwait for it.
pub const START_SIGNAL: Signal = Signal::SIGUSR1;

/// Real-time signals terminate by default too; nix's Signal does not name them.
fn realtime_signals() -> std::ops::RangeInclusive<libc::c_int> {
    libc::SIGRTMIN()..=libc::SIGRTMAX()
}

fn set_raw(signal: libc::c_int, handler: libc::sighandler_t) {
    // SAFETY: a zeroed sigaction with an empty mask and no flags is valid; the handlers only
    // touch atomics.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(signal, &action, std::ptr::null_mut());
    }
}

/// The signals that were ignored when faultscale started (`nohup` ignores SIGHUP), bit N-1 for
/// signal N: they stay ignored, in the harness and in its workers.
static IGNORED_AT_START: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Whether `signal` is ignored now (SIG_IGN), before faultscale changes anything.
fn ignored_now(signal: libc::c_int) -> bool {
    // SAFETY: sigaction with no new action only reads the current one into a valid buffer.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut current) == 0 && current.sa_sigaction == libc::SIG_IGN
    }
}

fn was_ignored(signal: libc::c_int) -> bool {
    (1..=64).contains(&signal) && IGNORED_AT_START.load(Ordering::SeqCst) & (1 << (signal - 1)) != 0
}

pub fn install_for_run() {
    // No SA_RESTART: a sleeping sample wait must return EINTR so the run stops promptly.
    let action = SigAction::new(SigHandler::Handler(note_signal), SaFlags::empty(), SigSet::empty());
    let catching = TERMINATING.iter().map(|&s| s as libc::c_int).chain(realtime_signals());
    for signal in catching.filter(|&s| (1..=64).contains(&s) && ignored_now(s)) {
        IGNORED_AT_START.fetch_or(1 << (signal - 1), Ordering::SeqCst);
    }
    for signal in TERMINATING.into_iter().filter(|&s| !was_ignored(s as libc::c_int)) {
        // SAFETY: the handler only touches an atomic.
        unsafe { sigaction(signal, &action) }.expect("installing a signal handler");
    }
    for signal in realtime_signals().filter(|&s| !was_ignored(s)) {
        set_raw(signal, note_signal as *const () as libc::sighandler_t);
    }
    let stop = SigAction::new(SigHandler::Handler(note_stop), SaFlags::empty(), SigSet::empty());
    for signal in STOPPING {
        // SAFETY: the handler only touches an atomic.
        unsafe { sigaction(signal, &stop) }.expect("installing a signal handler");
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

/// Whether Ctrl-Z (or SIGTTIN/SIGTTOU) asked the run to stop for a while, since the last call.
pub fn take_stop_request() -> bool {
    STOP_REQUESTED.swap(false, Ordering::SeqCst)
}

/// In a freshly forked worker: every signal the harness catches acts as it did when faultscale
/// started: by default, or ignored where it was ignored then (`nohup`).
pub fn reset_in_worker() {
    for signal in TERMINATING.into_iter().chain(STOPPING).chain([Signal::SIGCHLD]) {
        let handler = if was_ignored(signal as libc::c_int) { SigHandler::SigIgn } else { SigHandler::SigDfl };
        // SAFETY: restoring the disposition faultscale started with.
        let _ = unsafe { sigaction(signal, &SigAction::new(handler, SaFlags::empty(), SigSet::empty())) };
    }
    for signal in realtime_signals() {
        set_raw(signal, if was_ignored(signal) { libc::SIG_IGN } else { libc::SIG_DFL });
    }
}

/// How many terminating signals arrived so far.
pub fn delivered() -> u32 {
    DELIVERED.load(Ordering::SeqCst)
}

/// `delivered()` when the measuring ended (u32::MAX until then).
static DELIVERED_WHEN_MEASURED: AtomicU32 = AtomicU32::new(u32::MAX);

/// Marks the end of the measuring: a signal from now on is a request to stop writing too.
///
/// Ctrl-Z acts the default way from now on: no worker is left to stop with the harness, and
/// a flag that only the measuring read left a stalled write deaf to it (the terminal's Ctrl-Z
/// did nothing until the reader read). One that came as the measuring ended stops it now.
pub fn measuring_ended() {
    DELIVERED_WHEN_MEASURED.store(delivered(), Ordering::SeqCst);
    for signal in STOPPING {
        // SAFETY: the default action needs no handler.
        let _ = unsafe { sigaction(signal, &SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty())) };
    }
    if take_stop_request() {
        let _ = nix::sys::signal::raise(Signal::SIGSTOP);
    }
}

/// The count a write compares `delivered()` with: signals past it stop the write. The one that
/// stopped the measuring does not (the completed slices are still written), one that arrives
/// after it does, also before the write began.
pub fn stop_baseline() -> u32 {
    match DELIVERED_WHEN_MEASURED.load(Ordering::SeqCst) {
        u32::MAX => delivered(),
        count => count,
    }
}

/// The latest terminating signal received, if any.
pub fn latest() -> Option<i32> {
    match LATEST.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal),
    }
}

/// The first terminating signal received, if any.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal),
    }
}
