//! `fork`: the worker holds --size of written anonymous memory; each iteration forks a child
//! that writes one byte per page of it (a COW fault per page, and anon_vma clone/unlink at fork
//! and exit, the cost in the 2011/2013 exim and aim7 threads) and exits; the worker waits.
//!
//! The kernel's count includes the worker's own COW faults after each fork (its stack), so
//! loop-derived faults are not exact here.

use super::{
    Counter, Descriptor, PerIteration, ThpMode, Unit, Workload, WorkloadSettings, apply_thp, descriptor, map, pages,
    touch_pages,
};

pub static FORK: Descriptor = Descriptor {
    // The kernel's count includes the worker's own COW faults after each fork.
    per_iteration: PerIteration::SizePages,
    // fork() from a multi-threaded process copies only the calling thread; each fork
    // would also stop every thread of the mm for the copy, so the threads would measure
    // each other's forks, not their own.
    thread_mode_problem: Some("forking from threads of one process measures the other threads' forks"),
    // The tracepoints are opened on each worker's thread; inherited ones would reach the
    // children, but the kernel maps no ring buffer for an inherited per-task event (EINVAL).
    locks_problem: Some(
        "its faults are taken by the children it forks, whose waits (their faults, their exit) the per-worker events do not see: the lock figures are the workers' own (fork, wait)",
    ),
    // Parked, its own written memory.
    parked_bytes: |s| s.size_bytes,
    pages_per_iteration: |s| pages(s.size_bytes, s),
    ..descriptor(
        "fork",
        Unit::Faults,
        "fork a child that writes every page of --size inherited memory and exits (anon_vma, COW)",
        // The worker's written memory and its child's copy of it.
        |s| 2 * s.size_bytes,
        |s, _| Box::new(Fork::new(s)),
    )
};

pub struct Fork {
    bytes: usize,
    page_size: usize,
    thp: ThpMode,
    memory: *mut u8,
}

impl Fork {
    pub fn new(settings: &WorkloadSettings) -> Self {
        Fork {
            bytes: settings.size_bytes as usize,
            page_size: settings.page_size as usize,
            thp: settings.thp,
            memory: std::ptr::null_mut(),
        }
    }
}

impl Workload for Fork {
    fn prepare(&mut self) -> Result<(), String> {
        apply_thp(self.thp)?;
        self.memory = map(self.bytes, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1)?;
        // SAFETY: the mapping just made; populated before measuring.
        unsafe { touch_pages(self.memory, self.bytes, self.page_size) };
        Ok(())
    }

    fn run(&mut self, counter: &Counter) -> Result<(), String> {
        let mut completed: u64 = 0;
        loop {
            // SAFETY: the child only writes memory and calls _exit.
            match unsafe { libc::fork() } {
                -1 => return Err(format!("fork: {}", std::io::Error::last_os_error())),
                // SAFETY: in the child, which touches only its inherited mapping and exits
                // without unwinding or running any destructor.
                0 => unsafe {
                    touch_pages(self.memory, self.bytes, self.page_size);
                    libc::_exit(0)
                },
                child => {
                    let mut status = 0;
                    // SAFETY: waiting for our own child.
                    if unsafe { libc::waitpid(child, &mut status, 0) } != child {
                        return Err(format!("waitpid: {}", std::io::Error::last_os_error()));
                    }
                    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
                        return Err(format!("forked child ended with status {status:#x}"));
                    }
                }
            }
            completed += 1;
            if !counter.end_iteration(completed) {
                return Ok(());
            }
        }
    }
}
