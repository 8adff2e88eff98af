//! What a run needs of the machine at once, known before anything is made: every placement's
//! crew of a generation is alive together, one running and the others parked, and each worker
//! holds its own schedstat open. Open files are raised to the hard limit where the soft one is short (LKP's units set
//! none: 1024) and refused only where the hard limit is; memory is refused where the crews'
//! peak does not fit what the machine and the base cgroup's ancestors leave.

use anyhow::{Result, bail};
use nix::sys::resource::{Resource, getrlimit, setrlimit};

use crate::measure::memcg::CounterFiles;

/// Each worker's own schedstat, which it reads at each park. In thread mode every worker of a
/// crew holds it in one process, which also holds what it inherited from the harness: counted
/// against the harness's limit, which that process shares.
const FILES_PER_WORKER: usize = 1;
/// `--kernel-count perf`: a group leader, page faults, task clock, context switches,
/// migrations, cycles, instructions.
const PERF_PER_WORKER: usize = 7;
/// `--profile`: one sampling counter a worker.
const SAMPLER_PER_WORKER: usize = 1;
/// `--locks`: the contention_begin and contention_end tracepoints, a buffer each.
const LOCKS_PER_WORKER: usize = 2;
/// A crew's /proc/stat, for steal.
const FILES_PER_CREW: usize = 1;
/// What else the harness may hold at a peak: stdio, the outputs and their temporaries, a
/// cgroup file being written, a /proc scan, the workload's own files while a worker is forked.
const SPARE: usize = 64;

/// What the crews alive at once are made of.
#[derive(Debug, Clone)]
pub struct Crews {
    /// The cgroups each crew's workers run in (1, or a `siblings:N` placement's N).
    pub cgroups: Vec<usize>,
    /// Workers a crew (the largest task count).
    pub workers: usize,
    pub perf: bool,
    pub profile: bool,
    pub locks: bool,
}

impl Crews {
    /// The descriptors the harness holds with every crew alive, and a thread-mode crew's
    /// process besides them.
    pub fn open_files(&self) -> usize {
        let per_worker = FILES_PER_WORKER
            + if self.perf { PERF_PER_WORKER } else { 0 }
            + if self.profile { SAMPLER_PER_WORKER } else { 0 }
            + if self.locks { LOCKS_PER_WORKER } else { 0 };
        let per_crews: usize = self.cgroups.iter().map(|&c| CounterFiles::descriptors(c) + FILES_PER_CREW).sum();
        self.cgroups.len() * self.workers * per_worker + per_crews + SPARE
    }

    /// `--locks`: the tracepoints' ring buffers of every worker of every crew, which stay
    /// mapped (and locked) while the crews are parked.
    pub fn buffer_bytes(&self) -> u64 {
        let workers = (self.cgroups.len() * self.workers) as u64;
        if self.locks { workers * crate::measure::locks::BUFFER_BYTES_PER_WORKER } else { 0 }
    }

    fn describe(&self) -> String {
        let options: Vec<&str> =
            [(self.perf, "--kernel-count perf"), (self.profile, "--profile"), (self.locks, "--locks")]
                .iter()
                .filter(|(asked, _)| *asked)
                .map(|(_, option)| *option)
                .collect();
        let with = match options.is_empty() {
            true => String::new(),
            false => format!(", with {}", options.join(" and ")),
        };
        format!("{} crews of {} workers alive at once{with}", self.cgroups.len(), self.workers)
    }
}

/// The soft open-file limit raised from `from` to `to`, where it had to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Raised {
    pub from: u64,
    pub to: u64,
}

/// Makes room for `crews`' descriptors: nothing where the soft limit holds them, the soft
/// limit raised to the hard one where that holds them, else the user's input refused (exit 2)
/// with what is needed and how to allow it.
pub fn ensure_open_files(crews: &Crews) -> Result<Option<Raised>> {
    // Descriptors the run inherited (a launcher's, a shell's) count against the same limit.
    let inherited = std::fs::read_dir("/proc/self/fd").map(|dir| dir.count()).unwrap_or(0) as u64;
    let needed = crews.open_files() as u64 + inherited;
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    match plan_open_files(needed, soft, hard) {
        Ok(None) => Ok(None),
        Ok(Some(to)) => {
            setrlimit(Resource::RLIMIT_NOFILE, to, hard)
                .map_err(|e| anyhow::anyhow!("raising the open-file limit from {soft} to {to}: {e}"))?;
            Ok(Some(Raised { from: soft, to }))
        }
        Err(()) => bail!(crate::error::Error::Usage(format!(
            "this run needs {needed} open files ({}, and {inherited} it was started with), and the hard limit allows {hard} (ulimit -Hn); raise it (as root: ulimit -n {needed}; in a systemd unit: LimitNOFILE={needed}), or give fewer --tasks or placements",
            crews.describe()
        ))),
    }
}

/// The soft limit to set for `needed` descriptors: None where `soft` holds them, the hard
/// limit where it does, Err where even that is short.
fn plan_open_files(needed: u64, soft: u64, hard: u64) -> Result<Option<u64>, ()> {
    match (needed <= soft, needed <= hard) {
        (true, _) => Ok(None),
        (false, true) => Ok(Some(hard)),
        (false, false) => Err(()),
    }
}

/// Where the crews' memory must fit, with what each place has free now.
#[derive(Debug, Clone)]
pub struct MemoryRoom {
    /// /proc/meminfo's MemAvailable.
    pub available_bytes: Option<u64>,
    /// The base cgroup's tightest ancestor: its path, limit and usage.
    pub cgroup: Option<crate::cgroup::room::Room>,
}

/// Why `needed` bytes (the crews' peak, `crews` said in words) do not fit `room`, if they do not.
/// `per_worker`: what a running and a parked worker hold.
pub fn memory_problem(needed: u64, per_worker: (u64, u64), crews: &Crews, room: &MemoryRoom) -> Option<String> {
    let size = |bytes: u64| crate::text::bytes(bytes);
    let held = format!(
        "this run holds up to {} at once ({} a running worker, {} a parked one, {})",
        size(needed),
        size(per_worker.0),
        size(per_worker.1),
        crews.describe()
    );
    let fix = "give fewer --tasks or placements, or a smaller --chunk or --size";
    if let Some(available) = room.available_bytes.filter(|&a| needed > a) {
        return Some(format!("{held}, and the machine has {} available (MemAvailable); {fix}", size(available)));
    }
    if let Some(cgroup) = room.cgroup.as_ref().filter(|c| needed > c.bytes()) {
        return Some(format!(
            "{held}, and cgroup {} allows {} more (its limit {}, {} in use); {fix}, or run under a cgroup with more room (--base)",
            cgroup.cgroup.display(),
            size(cgroup.bytes()),
            size(cgroup.limit_bytes),
            size(cgroup.usage_bytes)
        ));
    }
    None
}

/// MemAvailable from /proc/meminfo, in bytes.
pub fn mem_available() -> Option<u64> {
    crate::measure::machine::meminfo_bytes("MemAvailable")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crews(placements: usize, workers: usize) -> Crews {
        Crews { cgroups: vec![1; placements], workers, perf: false, profile: false, locks: false }
    }

    #[test]
    fn descriptors_grow_with_crews_and_workers_and_perf_adds_seven_a_worker() {
        // 4 crews x 48 workers x 1 file, 4 x (4 memcg files + 2 pressure + /proc/stat), spare.
        assert_eq!(crews(4, 48).open_files(), 4 * 48 + 4 * 7 + 64);
        let perf = Crews { perf: true, ..crews(4, 48) };
        assert_eq!(perf.open_files() - crews(4, 48).open_files(), 4 * 48 * 7);
        let locks = Crews { locks: true, ..crews(4, 48) };
        assert_eq!(locks.open_files() - crews(4, 48).open_files(), 4 * 48 * 2, "two tracepoints a worker");
        assert!(Crews { perf: true, ..locks.clone() }.describe().ends_with("with --kernel-count perf and --locks"));
        assert!(!crews(4, 48).describe().contains("with"));
        assert_eq!(crews(4, 48).buffer_bytes(), 0);
        assert_eq!(locks.buffer_bytes(), 4 * 48 * crate::measure::locks::BUFFER_BYTES_PER_WORKER);
        let siblings = Crews { cgroups: vec![1, 3], ..crews(2, 4) };
        assert_eq!(siblings.open_files(), 2 * 4 + (4 + 2 + 1) + (12 + 2 + 1) + 64);
    }

    #[test]
    fn the_soft_limit_is_raised_to_the_hard_one_only_when_needed_and_refused_past_it() {
        assert_eq!(plan_open_files(500, 1024, 4096), Ok(None));
        assert_eq!(plan_open_files(1500, 1024, 524_288), Ok(Some(524_288)));
        assert_eq!(plan_open_files(1500, 200, 1500), Ok(Some(1500)));
        assert_eq!(plan_open_files(1501, 200, 1500), Err(()));
    }

    #[test]
    fn memory_is_refused_by_the_tighter_of_the_machine_and_the_cgroup() {
        let room = |available: u64, limit: Option<u64>| MemoryRoom {
            available_bytes: Some(available),
            cgroup: limit.map(|limit_bytes| crate::cgroup::room::Room {
                cgroup: "/sys/fs/cgroup/user.slice".into(),
                limit_bytes,
                usage_bytes: 1 << 30,
            }),
        };
        let four = crews(4, 8);
        let need = 32 * (128 << 20);
        assert_eq!(memory_problem(need, (128 << 20, 0), &four, &room(8 << 30, None)), None);
        let short = memory_problem(need, (128 << 20, 0), &four, &room(2 << 30, None)).unwrap();
        assert!(short.contains("MemAvailable") && short.contains("4 crews of 8 workers"), "{short}");
        let limited = memory_problem(need, (128 << 20, 0), &four, &room(64 << 30, Some(4 << 30))).unwrap();
        assert!(limited.contains("user.slice") && limited.contains("--base"), "{limited}");
        assert_eq!(memory_problem(need, (128 << 20, 0), &four, &room(64 << 30, Some(6 << 30))), None);
    }
}
