//! /proc through the procfs crate and by hand: a worker's reading of itself at a park (its
//! thread's schedstat and getrusage), a process's stat line, each CPU's steal, and the process
//! scan that finds other faultscale runs.

use super::reread::Reread;

/// The fields of a stat line faultscale uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcStat {
    pub comm: String,
    /// R running, S sleeping, D uninterruptible, T stopped, t traced, Z zombie, ...
    pub state: char,
    pub parent: u32,
    pub minflt: u64,
    pub user_us: u64,
    pub sys_us: u64,
    /// What the children it waited for did (cminflt, cutime, cstime): a forking workload's
    /// faults are its children's. Per process; a thread's line repeats its process's.
    pub children_minflt: u64,
    pub children_user_us: u64,
    pub children_sys_us: u64,
}

/// A stat line's fields faultscale uses, parsed by the procfs crate (a command name may hold
/// spaces and parentheses; the fields resume after the last ')').
pub fn parse_stat(text: &str, ticks_per_sec: u64) -> Option<ProcStat> {
    use procfs::FromRead;
    from_stat(procfs::process::Stat::from_read(text.as_bytes()).ok()?, ticks_per_sec)
}

fn from_stat(stat: procfs::process::Stat, ticks_per_sec: u64) -> Option<ProcStat> {
    let to_us = |ticks: u64| ticks * 1_000_000 / ticks_per_sec;
    Some(ProcStat {
        comm: stat.comm,
        state: stat.state,
        parent: u32::try_from(stat.ppid).ok()?,
        minflt: stat.minflt,
        user_us: to_us(stat.utime),
        sys_us: to_us(stat.stime),
        children_minflt: stat.cminflt,
        children_user_us: to_us(u64::try_from(stat.cutime).ok()?),
        children_sys_us: to_us(u64::try_from(stat.cstime).ok()?),
    })
}

pub fn process_stat(pid: u32) -> Option<ProcStat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?, procfs::ticks_per_second())
}

/// A thread's scheduler times so far, in ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SchedTimes {
    /// On its CPU (schedstat's first field, the scheduler's exact sum).
    pub on_cpu_ns: u64,
    /// Runnable, waiting for a CPU (schedstat's run_delay); None where the kernel keeps no
    /// schedstat and the thread's CPU clock stood in for the time on CPU.
    pub wait_ns: Option<u64>,
    /// Times it was put on a CPU (schedstat's third field): one per wake when nothing else
    /// wanted the CPU, more where it was preempted; None without schedstat.
    pub timeslices: Option<u64>,
}

/// schedstat's three fields: on CPU (ns), waiting for it (run_delay, ns), timeslices.
fn parse_schedstat(text: &str) -> Option<SchedTimes> {
    let mut fields = text.split_whitespace().map(|f| f.parse::<u64>().ok());
    let (on_cpu_ns, wait_ns, timeslices) = (fields.next()??, fields.next()??, fields.next()??);
    Some(SchedTimes { on_cpu_ns, wait_ns: Some(wait_ns), timeslices: Some(timeslices) })
}

/// A worker's reading of itself at a park: its own thread's schedstat, kept open (one `pread`
/// a park, in the worker, in parallel with the crew), and its getrusage.
#[derive(Debug)]
pub struct OwnTimes {
    schedstat: Reread,
    whole_process: bool,
}

/// getrusage's counts: minor faults and user and system time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub minflt: u64,
    pub user_us: u64,
    pub sys_us: u64,
}

impl OwnTimes {
    /// Called on the worker's own thread. `whole_process`: one worker a process, whose
    /// waited-for children (a forking workload's) count as its own.
    pub fn open(whole_process: bool) -> std::io::Result<OwnTimes> {
        Ok(OwnTimes { schedstat: Reread::open("/proc/thread-self/schedstat")?, whole_process })
    }

    /// The calling thread's scheduler times: its time on the CPU from its CPU clock, which the
    /// kernel brings up to date as it is read; its wait (run_delay, current while it runs) and
    /// timeslices from schedstat, where the kernel keeps it. schedstat's own on-CPU time of a
    /// running thread stands as of its last tick or switch: at HZ=250 up to 4 ms behind, 1.75
    /// ms on average after a long run. Read at a 25 ms window's end it left that much out of
    /// the window, which read as "blocked" and a cost per fault too low, and put it in the next
    /// one (the settling window): tests/run.rs, `workers_alone_on_their_cpus_...`.
    pub fn sched(&mut self) -> Option<SchedTimes> {
        let on_cpu_ns = own_cpu_ns();
        match (self.schedstat.read().ok().and_then(parse_schedstat), on_cpu_ns) {
            (Some(times), Some(on_cpu_ns)) => Some(SchedTimes { on_cpu_ns, ..times }),
            (Some(times), None) => Some(times),
            (None, on_cpu_ns) => on_cpu_ns.map(|on_cpu_ns| SchedTimes { on_cpu_ns, wait_ns: None, timeslices: None }),
        }
    }

    /// The calling thread's wait for its CPU so far (schedstat's run_delay), where the kernel
    /// keeps it: the wait alone, without the CPU clock's system call.
    pub fn wait_ns(&mut self) -> Option<u64> {
        self.schedstat.read().ok().and_then(parse_schedstat).and_then(|times| times.wait_ns)
    }

    /// Its own counts (the thread's in thread mode, the process's in process mode), and in
    /// process mode its waited-for children's separately.
    pub fn usage(&self) -> (Usage, Option<Usage>) {
        match self.whole_process {
            true => (rusage(libc::RUSAGE_SELF), Some(rusage(libc::RUSAGE_CHILDREN))),
            false => (rusage(libc::RUSAGE_THREAD), None),
        }
    }
}

fn rusage(who: libc::c_int) -> Usage {
    // SAFETY: zeroed rusage is a valid out-buffer; getrusage of ourselves cannot fail.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut usage) };
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Usage { minflt: usage.ru_minflt as u64, user_us: us(usage.ru_utime), sys_us: us(usage.ru_stime) }
}

fn own_cpu_ns() -> Option<u64> {
    let mut time = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid out-pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut time) };
    (rc == 0).then(|| time.tv_sec as u64 * 1_000_000_000 + time.tv_nsec as u64)
}

/// /proc/stat kept open, for each snapshot's steal.
#[derive(Debug)]
pub struct StealFile(Reread);

impl StealFile {
    pub fn open() -> std::io::Result<StealFile> {
        Ok(StealFile(Reread::open("/proc/stat")?))
    }

    /// Each CPU's steal so far, in ns (see `parse_steal`).
    pub fn read(&mut self) -> Vec<Option<u64>> {
        self.0.read().map(|text| parse_steal(text, steal_tick_ns())).unwrap_or_default()
    }
}

/// Each CPU's hypervisor steal so far, in ns, indexed by CPU number (None where /proc/stat has
/// no steal column or no line for it: an offline CPU). Read by hand: the procfs crate's
/// KernelStats keeps the lines in order but drops their CPU numbers, and with a CPU offline the
/// n-th line is not CPU n.
fn parse_steal(text: &str, ns_per_tick: u64) -> Vec<Option<u64>> {
    let mut steal: Vec<Option<u64>> = Vec::new();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let Some(cpu) = fields.next().and_then(|name| name.strip_prefix("cpu")?.parse::<usize>().ok()) else {
            continue;
        };
        // user nice system idle iowait irq softirq steal ...
        let ticks = fields.nth(7).and_then(|field| field.parse::<u64>().ok());
        if steal.len() <= cpu {
            steal.resize(cpu + 1, None);
        }
        steal[cpu] = ticks.map(|ticks| ticks * ns_per_tick);
    }
    steal
}

/// /proc/stat counts steal in clock ticks (USER_HZ): a figure below a tick or two is rounding.
pub fn steal_tick_ns() -> u64 {
    1_000_000_000 / procfs::ticks_per_second()
}

/// Other processes whose command name is `harness_name`: the harnesses of other runs (workers
/// and their children rename themselves, `compare` and `plot` never take the name).
pub fn others_named(harness_name: &str) -> Vec<u32> {
    let own = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut pids: Vec<u32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != own)
        .filter(|&pid| process_stat(pid).is_some_and(|stat| stat.comm == harness_name))
        .collect();
    pids.sort_unstable();
    pids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_lines_and_a_worker_s_own_files() {
        assert_eq!(
            parse_schedstat("123456 789 12\n"),
            Some(SchedTimes { on_cpu_ns: 123456, wait_ns: Some(789), timeslices: Some(12) })
        );
        assert_eq!(parse_schedstat("123456 789\n"), None, "a short line is not read as zeros");
        // This very thread, read through its own files, as a worker reads itself at a park.
        let mut own = OwnTimes::open(false).unwrap();
        let before = own.sched().unwrap();
        let (usage_before, children) = own.usage();
        assert_eq!(children, None, "a thread's own counts hold no children");
        // 20 ms on this thread's own CPU clock, however long a loaded machine takes to give it.
        let spun_from = own_cpu_ns().unwrap();
        while own_cpu_ns().unwrap() < spun_from + 20_000_000 {}
        assert!(own.sched().unwrap().on_cpu_ns >= before.on_cpu_ns + 20_000_000);
        // getrusage's thread times are the scheduler's, to a microsecond and a tick's scaling.
        let (usage_after, _) = own.usage();
        assert!(usage_after.user_us + usage_after.sys_us >= usage_before.user_us + usage_before.sys_us + 15_000);
        // A page faulted in by this thread counts as its own minor fault.
        let page = vec![1u8; 1 << 20];
        assert!(own.usage().0.minflt > usage_after.minflt, "{}", page[4096]);
        assert_eq!(OwnTimes::open(true).unwrap().usage().1.map(|c| c.minflt < u64::MAX), Some(true));
    }

    #[test]
    fn steal_is_read_by_cpu_number_with_a_cpu_offline() {
        let text = "cpu  10 0 5 100 0 0 0 9 0 0\ncpu0 5 0 2 50 0 0 0 4 0 0\ncpu2 5 0 3 50 0 0 0 5 0 0\nintr 1\n";
        assert_eq!(parse_steal(text, 10_000_000), [Some(40_000_000), None, Some(50_000_000)]);
        assert_eq!(parse_steal("cpu0 5 0 2 50\n", 10_000_000), [None], "no steal column: unknown, not 0");
    }

    #[test]
    fn stat_lines_survive_odd_command_names() {
        // A 6.1 kernel's line, all 52 fields.
        let line = "1234 (fault (scale) x) R 1 1234 1234 0 -1 4194560 987654 55 0 0 250 75 0 0 20 0 2 0 100 \
            3133440 379 18446744073709551615 94021223505920 94021223525801 140734487997216 0 0 0 0 0 0 0 0 0 17 1 \
            0 0 0 0 0 94021223541808 94021223543424 94021953216512 140734488005337 140734488005357 \
            140734488005357 140734488006635 0";
        assert_eq!(
            parse_stat(line, 100),
            Some(ProcStat {
                comm: "fault (scale) x".into(),
                state: 'R',
                parent: 1,
                minflt: 987654,
                user_us: 2_500_000,
                sys_us: 750_000,
                children_minflt: 55,
                children_user_us: 0,
                children_sys_us: 0,
            })
        );
        assert_eq!(parse_stat("garbage", 100), None);
    }
}
