//! The harness's own signal handling during a run. Every terminating signal it can catch
//! (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR2, SIGALRM, the real-time signals, ...) only sets a
//! flag, so every exit path goes through the same cleanup (workers killed and reaped, cgroups
//! removed, unfinished files dropped). A second signal while cleaning up changes nothing: the
//! first one is kept. Ctrl-Z (SIGTSTP and friends) stops the workers with the harness. The
//! fault signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGSYS, SIGTRAP) sent by another process are
//! requests like SIGTERM; raised by the kernel for a fault of the harness's own they still
//! kill it. SIGUSR1, the workers' start signal, is blocked in the workers only.
//!
//! Only a run installs these; `compare`, `plot` and the listings keep the default behaviour.

use std::sync::OnceLock;
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

/// The actions the fault signals had before the run's: Rust's stack-overflow handler (SIGSEGV,
/// SIGBUS) or the default. A real fault goes back to it, and so does every worker.
static BEFORE_RUN: OnceLock<Vec<(libc::c_int, libc::sigaction)>> = OnceLock::new();

/// A fault signal: si_code <= 0 is one sent by a process (kill, sigqueue, tgkill: SI_USER,
/// SI_QUEUE, SI_TKILL), a request to stop; above 0 the kernel raised it for a fault here. Then
/// the action from before the run is put back and the handler returns: the instruction faults
/// again and that action kills the process (Rust's says first whether the stack overflowed).
/// A trap and a seccomp SIGSYS do not repeat on return, so they are raised again.
extern "C" fn note_fault(signal: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    if info.is_null() || unsafe { (*info).si_code } <= 0 {
        note_signal(signal);
        return;
    }
    restore_before_run(signal);
    if signal == libc::SIGTRAP || signal == libc::SIGSYS {
        // SAFETY: raise is async-signal-safe; the signal is blocked until this handler returns.
        unsafe { libc::raise(signal) };
    }
}

/// Puts back `signal`'s action from before the run (the default where none was recorded).
/// Async-signal-safe: an atomic read of a list filled before any handler was installed.
fn restore_before_run(signal: libc::c_int) {
    let recorded = BEFORE_RUN.get().and_then(|all| all.iter().find(|(s, _)| *s == signal).map(|(_, a)| *a));
    match recorded {
        // SAFETY: an action read back from the kernel for this very signal.
        Some(action) => unsafe {
            libc::sigaction(signal, &action, std::ptr::null_mut());
        },
        None => set_raw(signal, libc::SIG_DFL),
    }
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

/// Signals the kernel raises for a fault of the process's own, which `kill` can send too.
const FAULTS: [Signal; 6] =
    [Signal::SIGSEGV, Signal::SIGBUS, Signal::SIGFPE, Signal::SIGILL, Signal::SIGSYS, Signal::SIGTRAP];

/// Terminal stop requests: the harness stops the workers, then itself.
const STOPPING: [Signal; 3] = [Signal::SIGTSTP, Signal::SIGTTIN, Signal::SIGTTOU];

/// The signal that releases workers; blocked in every worker (from its first step on) so it
/// can sigwait for it. The harness catches it as a request to stop: it sends it to the
/// workers' process group, never its own.
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

/// The current action of each fault signal, kept before the run's handlers replace them.
fn record_before_run() {
    let actions = FAULTS
        .iter()
        .map(|&signal| {
            // SAFETY: reading the current action into a zeroed buffer of the right type.
            let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
            unsafe { libc::sigaction(signal as libc::c_int, std::ptr::null(), &mut action) };
            (signal as libc::c_int, action)
        })
        .collect();
    let _ = BEFORE_RUN.set(actions);
}

pub fn install_for_run() {
    // No SA_RESTART: a sleeping sample wait must return EINTR so the run stops promptly.
    let action = SigAction::new(SigHandler::Handler(note_signal), SaFlags::empty(), SigSet::empty());
    let caught = TERMINATING.iter().chain(&FAULTS).chain([&START_SIGNAL]).map(|&s| s as libc::c_int);
    for signal in caught.chain(realtime_signals()).filter(|&s| (1..=64).contains(&s) && ignored_now(s)) {
        IGNORED_AT_START.fetch_or(1 << (signal - 1), Ordering::SeqCst);
    }
    record_before_run();
    // SA_ONSTACK: a real stack overflow's SIGSEGV must reach Rust's handler on its own stack.
    let fault =
        SigAction::new(SigHandler::SigAction(note_fault), SaFlags::SA_SIGINFO | SaFlags::SA_ONSTACK, SigSet::empty());
    for signal in FAULTS.into_iter().filter(|&s| !was_ignored(s as libc::c_int)) {
        // SAFETY: the handler touches atomics and async-signal-safe calls only.
        unsafe { sigaction(signal, &fault) }.expect("installing a signal handler");
    }
    for signal in TERMINATING.into_iter().chain([START_SIGNAL]).filter(|&s| !was_ignored(s as libc::c_int)) {
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
/// started: by default, or ignored where it was ignored then (`nohup`). A fault kills the
/// worker the way it did before the run. The start signal is blocked first: it waits pending
/// for the worker's sigwait.
pub fn reset_in_worker() {
    let mut start = SigSet::empty();
    start.add(START_SIGNAL);
    sigprocmask(SigmaskHow::SIG_BLOCK, Some(&start), None).expect("blocking the start signal");
    for signal in FAULTS {
        match was_ignored(signal as libc::c_int) {
            true => set_raw(signal as libc::c_int, libc::SIG_IGN),
            false => restore_before_run(signal as libc::c_int),
        }
    }
    for signal in TERMINATING.into_iter().chain(STOPPING).chain([Signal::SIGCHLD, START_SIGNAL]) {
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
