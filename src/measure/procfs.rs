//! /proc/PID/stat, parsed once for everyone: the per-thread fault and CPU counters the harness
//! reads from frozen worker threads, and the process scan that finds other faultscale runs.

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
}

/// Fields 2 (comm), 3 (state), 4 (ppid), 10 (minflt), 14 (utime) and 15 (stime) of a stat line. The
/// command name may hold spaces and parentheses; the fields resume after the last ')', at 3.
pub fn parse_stat(text: &str, ticks_per_sec: u64) -> Option<ProcStat> {
    let comm = text[text.find('(')? + 1..text.rfind(')')?].to_string();
    let fields: Vec<&str> = text[text.rfind(')')? + 1..].split_whitespace().collect();
    let field = |n: usize| -> Option<u64> { fields.get(n - 3)?.parse().ok() };
    let to_us = |ticks: u64| ticks * 1_000_000 / ticks_per_sec;
    Some(ProcStat {
        comm,
        state: fields.first()?.chars().next()?,
        parent: field(4)? as u32,
        minflt: field(10)?,
        user_us: to_us(field(14)?),
        sys_us: to_us(field(15)?),
    })
}

fn clock_ticks_per_sec() -> u64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok().flatten().unwrap_or(100) as u64
}

/// One thread's counters, from /proc/PID/task/TID/stat.
pub fn task_stat(pid: i32, tid: i32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
    parse_stat(&text, clock_ticks_per_sec())
}

pub fn process_stat(pid: u32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text, clock_ticks_per_sec())
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
    fn stat_lines_survive_odd_command_names() {
        let line = "1234 (fault (scale) x) R 1 1234 1234 0 -1 4194560 987654 55 0 0 250 75 0 0 20 0 2 0 100 0 0";
        assert_eq!(
            parse_stat(line, 100),
            Some(ProcStat {
                comm: "fault (scale) x".into(),
                state: 'R',
                parent: 1,
                minflt: 987654,
                user_us: 2_500_000,
                sys_us: 750_000
            })
        );
        assert_eq!(parse_stat("garbage", 100), None);
    }
}
