//! The harness's side of the worker processes: forking them (one per worker, or one holding
//! every worker as a thread), noticing deaths, explaining them, stopping and reaping. Dropping
//! `Workers` kills and reaps every process still there, so no exit path (error, interrupt,
//! panic) leaves a worker behind or a cgroup busy.

use std::path::PathBuf;

use anyhow::{Result, anyhow};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::{ForkResult, Pid, fork, getpid, setpgid};

use super::slots::Slots;
use super::worker::{self, WorkerPlan};
use super::{Mode, WorkerDied};
use crate::text::signal_name;
use crate::workload::WorkloadSettings;

pub struct Workers {
    /// The forked processes.
    pub processes: Vec<Pid>,
    reaped: Vec<bool>,
    /// The workers' process group, led by the first process.
    pub group: Option<Pid>,
    /// Per worker (slot): its CPU and the index of the process it runs in.
    pub cpus: Vec<usize>,
    slot_process: Vec<usize>,
}

impl Workers {
    /// Forks the workers. The harness has no other thread, so each child may run any code.
    pub fn spawn(
        mode: Mode,
        cpus: &[usize],
        cgroup_procs: &[Option<PathBuf>],
        settings: &WorkloadSettings,
        slots: &Slots,
        first_file_index: usize,
    ) -> Result<Self> {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        let harness_pid = getpid();
        let mut workers = Workers {
            processes: Vec::new(),
            reaped: Vec::new(),
            group: None,
            cpus: cpus.to_vec(),
            slot_process: Vec::new(),
        };
        let process_count = match mode {
            Mode::Process => cpus.len(),
            Mode::Thread => 1,
        };
        for process in 0..process_count {
            let plan = WorkerPlan {
                harness_pid,
                process_group: workers.group,
                cgroup_procs: cgroup_procs[process].as_deref(),
                settings,
                slots,
                // Process mode: this process is worker `process`; thread mode: all of them.
                workers: match mode {
                    Mode::Process => vec![(process, cpus[process])],
                    Mode::Thread => cpus.iter().copied().enumerate().collect(),
                },
                first_file_index,
            };
            // SAFETY: the harness is single-threaded (see the module comment of run/).
            match unsafe { fork() }.map_err(|e| fork_error(e, process, cpus.len()))? {
                ForkResult::Child => worker::main(&plan),
                ForkResult::Parent { child } => {
                    let group = *workers.group.get_or_insert(child);
                    // Both sides set the group, so it is in place whichever runs first.
                    let _ = setpgid(child, group);
                    workers.processes.push(child);
                    workers.reaped.push(false);
                }
            }
        }
        workers.slot_process = match mode {
            Mode::Process => (0..cpus.len()).collect(),
            Mode::Thread => vec![0; cpus.len()],
        };
        Ok(workers)
    }

    pub fn process_of(&self, slot: usize) -> Pid {
        self.processes[self.slot_process[slot]]
    }

    pub fn signal_all(&self, signal: Signal) -> Result<()> {
        let group = self.group.expect("at least one worker");
        killpg(group, signal).map_err(|e| anyhow!("sending {signal} to the workers: {e}"))
    }

    pub fn kill_all(&mut self) {
        if let Some(group) = self.group {
            let _ = killpg(group, Signal::SIGKILL);
        }
    }

    /// wait4 on one process; returns (status, rusage).
    pub fn reap(&mut self, process: usize, options: libc::c_int) -> Option<(libc::c_int, libc::rusage)> {
        let mut status = 0;
        // SAFETY: zeroed rusage is a valid out-buffer.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let pid = self.processes[process].as_raw();
        loop {
            // SAFETY: wait4 on our own child with valid out-pointers.
            let rc = unsafe { libc::wait4(pid, &mut status, options, &mut usage) };
            if rc == pid {
                if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
                    self.reaped[process] = true;
                }
                return Some((status, usage));
            }
            if rc == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            if rc == -1 {
                // ECHILD: already gone.
                self.reaped[process] = true;
            }
            return None;
        }
    }

    /// A process that exited, if any, without reaping it.
    pub fn find_dead(&self) -> Option<usize> {
        (0..self.processes.len()).find(|&i| {
            if self.reaped[i] {
                return true;
            }
            // SAFETY: waitid with WNOWAIT only peeks at our own child.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            let rc = unsafe {
                libc::waitid(
                    libc::P_PID,
                    self.processes[i].as_raw() as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
                )
            };
            // SAFETY: si_pid is the field waitid fills for a child's state change; the zeroed
            // struct reads 0 there when nothing changed.
            rc == 0 && unsafe { info.si_pid() } != 0
        })
    }

    /// Explains the death of `process`, collecting its status if it is still there.
    pub fn died(&mut self, slots: &Slots, process: usize) -> WorkerDied {
        let status = self.reap(process, libc::WNOHANG).map(|(status, _)| status);
        self.died_with(slots, process, status)
    }

    /// The worker to blame: the one of this process that recorded a failure, else its first.
    pub fn died_with(&self, slots: &Slots, process: usize, status: Option<libc::c_int>) -> WorkerDied {
        let own: Vec<usize> = (0..self.cpus.len()).filter(|&s| self.slot_process[s] == process).collect();
        let slot = own.iter().copied().find(|&s| slots.get(s).failure().is_some()).unwrap_or(own[0]);
        let failure = slots.get(slot).failure();
        let why = match status {
            Some(status) => describe_exit(status, failure),
            None => failure.unwrap_or_else(|| "exited".into()),
        };
        let tid = slots.get(slot).tid.load(std::sync::atomic::Ordering::Relaxed);
        let id = if tid > 0 { tid } else { self.processes[process].as_raw() };
        let signal = status.filter(|&s| libc::WIFSIGNALED(s)).map(|s| libc::WTERMSIG(s));
        WorkerDied { why: format!("worker {id} on CPU {} stopped: {why}", self.cpus[slot]), signal }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.kill_all();
        for process in 0..self.processes.len() {
            if !self.reaped[process] {
                // Direct kill too: a worker that died before joining the group still gets it.
                let _ = nix::sys::signal::kill(self.processes[process], Signal::SIGKILL);
                self.reap(process, 0);
            }
        }
    }
}

/// Why a worker ended, for the user.
fn describe_exit(status: libc::c_int, slot_message: Option<String>) -> String {
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        let hint = if signal == libc::SIGKILL {
            " (an OOM kill looks like this; see the cgroup's oom_kill count or dmesg)"
        } else {
            ""
        };
        format!("killed by {}{hint}", signal_name(signal))
    } else if let Some(message) = slot_message {
        message
    } else {
        format!("exited with status {}", libc::WEXITSTATUS(status))
    }
}

/// fork's EAGAIN names no limit: say which ones stop a fork, with the one this process can
/// read, and how many processes the crew needed.
fn fork_error(error: nix::errno::Errno, forked: usize, crew: usize) -> anyhow::Error {
    if error != nix::errno::Errno::EAGAIN {
        return anyhow!("forking worker {} of {crew}: {error}", forked + 1);
    }
    let nproc = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NPROC)
        .map(|(soft, _)| if soft == libc::RLIM_INFINITY { "unlimited".to_string() } else { soft.to_string() })
        .unwrap_or_else(|_| "unknown".into());
    anyhow!(
        "forking worker {} of {crew}: {error}: a process limit was reached: the pids.max of faultscale's pids cgroup or an ancestor's, ulimit -u ({nproc} here; root is exempt), or kernel.pid_max/threads-max; allow more processes, or give fewer --tasks or placements",
        forked + 1
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_fork_refused_for_a_process_limit_names_the_limits_and_the_worker() {
        let said = super::fork_error(nix::errno::Errno::EAGAIN, 19, 64).to_string();
        assert!(said.starts_with("forking worker 20 of 64: EAGAIN"), "{said}");
        assert!(said.contains("pids.max") && said.contains("ulimit -u") && said.contains("fewer --tasks"), "{said}");
        let other = super::fork_error(nix::errno::Errno::ENOMEM, 0, 2).to_string();
        assert!(!other.contains("pids.max"), "{other}");
    }
}
