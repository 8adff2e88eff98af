//! CPUs: the set this process may run on (cpusets respected), and pinning the calling worker.

use anyhow::Result;

/// The CPUs this process may run on.
pub fn allowed() -> Result<Vec<usize>> {
    let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0))?;
    Ok((0..nix::sched::CpuSet::count()).filter(|&cpu| set.is_set(cpu).unwrap_or(false)).collect())
}

/// Pins the calling thread to `cpu` and checks it really runs there.
pub fn pin_current(cpu: usize) -> Result<(), String> {
    // core_affinity pins the calling thread (sched_setaffinity(0, ...)) and answers a bare
    // bool; errno still holds the kernel's reason when it fails.
    if !core_affinity::set_for_current(core_affinity::CoreId { id: cpu }) {
        return Err(format!("pinning to CPU {cpu}: {}", std::io::Error::last_os_error()));
    }
    match nix::sched::sched_getcpu() {
        Ok(running) if running == cpu => Ok(()),
        Ok(running) => Err(format!("pinned to CPU {cpu} but running on CPU {running}")),
        Err(e) => Err(format!("sched_getcpu: {e}")),
    }
}
