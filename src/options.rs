//! Validated settings: every value the run uses, checked once, before anything is created.
//!
//! The parsers here are pure so they can be unit-tested without root; checks that need the
//! machine (the allowed CPU set, the cgroup base) take it as an argument.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};

use crate::cgroup::{BaseSpec, VersionChoice};
use crate::cli::RunArgs;
use crate::profile::Knob;
use crate::workload::WorkloadKind;

/// Deepest nesting faultscale builds. Kernels allow more, but memcg charge paths past 64 levels
/// are not a setup anyone measures, and the limit keeps a typo from building thousands of dirs.
pub const MAX_DEPTH: u32 = 64;

/// Where one set of workers runs, relative to the base.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// What the user wrote, normalised: `root`, `child`, `nested:3`, or a profile's name.
    pub name: String,
    /// Levels below the base: 0 for root, 1 for child.
    pub depth: u32,
    /// Knobs per level, from the top level down (empty lists for plain levels).
    pub levels: Vec<Vec<Knob>>,
    /// The profile it came from (`child`, `limited`, `./my.toml`), if any.
    pub profile: Option<String>,
}

impl Placement {
    pub fn root() -> Self {
        Placement { name: "root".into(), depth: 0, levels: Vec::new(), profile: None }
    }

    pub fn plain(name: String, depth: u32) -> Self {
        Placement { name, depth, levels: vec![Vec::new(); depth as usize], profile: None }
    }

    pub fn is_root(&self) -> bool {
        self.depth == 0
    }
}

fn parse_depth(item: &str, text: &str) -> Result<u32> {
    let depth: u32 = text
        .parse()
        .map_err(|_| anyhow!("--cgroup {item:?}: nesting depth must be a whole number from 1 to {MAX_DEPTH}"))?;
    if !(1..=MAX_DEPTH).contains(&depth) {
        bail!("--cgroup {item:?}: nesting depth must be from 1 to {MAX_DEPTH}");
    }
    Ok(depth)
}

/// Parses one `--cgroup` list: `child,nested:3,nested:1..8,limited,./my.toml`.
pub fn parse_placements(list: &str) -> Result<Vec<Placement>> {
    let mut placements: Vec<Placement> = Vec::new();
    for item in list.split(',') {
        let item = item.trim();
        let expanded: Vec<Placement> = match item {
            "" => bail!("--cgroup {list:?}: empty placement; use e.g. --cgroup child,nested:3"),
            "root" => vec![Placement::root()],
            "child" => vec![Placement::plain("child".into(), 1)],
            _ => match item.strip_prefix("nested:") {
                Some(range) if range.contains("..") => {
                    let (first, last) = range.split_once("..").expect("checked");
                    let (first, last) = (parse_depth(item, first)?, parse_depth(item, last)?);
                    if first > last {
                        bail!("--cgroup {item:?}: the range runs backwards; write nested:LOW..HIGH");
                    }
                    (first..=last).map(|depth| Placement::plain(format!("nested:{depth}"), depth)).collect()
                }
                Some(depth) => {
                    let depth = parse_depth(item, depth)?;
                    vec![Placement::plain(format!("nested:{depth}"), depth)]
                }
                None => {
                    let profile = crate::profile::load(item)?;
                    vec![Placement {
                        name: profile.name.clone(),
                        depth: profile.levels.len() as u32,
                        levels: profile.levels,
                        profile: Some(item.to_string()),
                    }]
                }
            },
        };
        for placement in expanded {
            if placements.iter().any(|p| p.name == placement.name) {
                bail!("--cgroup {list:?}: {} is listed twice; list each placement once", placement.name);
            }
            placements.push(placement);
        }
    }
    Ok(placements)
}

/// Parses a kernel-style CPU list (`0-3,6`, as in /sys/devices/system/cpu/online) into sorted,
/// distinct CPU numbers.
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        if part.is_empty() {
            bail!("CPU list {text:?} has an empty entry; write it as e.g. 0-3,6");
        }
        let (first, last) = match part.split_once('-') {
            Some((a, b)) => (parse_cpu_number(a, text)?, parse_cpu_number(b, text)?),
            None => {
                let cpu = parse_cpu_number(part, text)?;
                (cpu, cpu)
            }
        };
        if first > last {
            bail!("CPU list {text:?}: range {part} runs backwards; write it low-high");
        }
        cpus.extend(first..=last);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

fn parse_cpu_number(text: &str, whole: &str) -> Result<usize> {
    let cpu: usize = text
        .trim()
        .parse()
        .map_err(|_| anyhow!("CPU list {whole:?}: {text:?} is not a CPU number; write it as e.g. 0-3,6"))?;
    // CPU_SETSIZE is the most sched_setaffinity can name.
    if cpu >= libc::CPU_SETSIZE as usize {
        bail!("CPU list {whole:?}: CPU {cpu} is beyond the largest possible CPU number");
    }
    Ok(cpu)
}

/// Most tasks one measurement forks: far beyond any CPU count, short of exhausting pids.
pub const MAX_TASKS: usize = 4096;

/// Parses `--tasks`: `1,2,4,8`, `3,6,12,24,48` or a range `1..8`.
pub fn parse_task_counts(text: &str) -> Result<Vec<usize>> {
    let bad = || anyhow!("--tasks {text:?}: give task counts from 1 to {MAX_TASKS}, e.g. 1,2,4,8 or 1..8");
    let number = |s: &str| -> Result<usize> {
        let n: usize = s.trim().parse().map_err(|_| bad())?;
        if (1..=MAX_TASKS).contains(&n) { Ok(n) } else { Err(bad()) }
    };
    let counts: Vec<usize> = match text.split_once("..") {
        Some((low, high)) => {
            let (low, high) = (number(low)?, number(high)?);
            if low > high {
                bail!("--tasks {text:?}: the range runs backwards; write LOW..HIGH");
            }
            (low..=high).collect()
        }
        None => text.split(',').map(number).collect::<Result<_>>()?,
    };
    let mut seen = counts.clone();
    seen.sort_unstable();
    seen.dedup();
    if seen.len() != counts.len() {
        bail!("--tasks {text:?}: a task count is listed twice");
    }
    Ok(counts)
}

/// The CPU each of `tasks` workers runs on: the CPUs in order, round-robin past their count.
pub fn cpus_for_tasks(cpus: &[usize], tasks: usize) -> Vec<usize> {
    (0..tasks).map(|i| cpus[i % cpus.len()]).collect()
}

/// Formats CPUs back into the compact kernel form, for headers and logs.
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        out.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
        i += 1;
    }
    out.join(",")
}

/// Parses seconds, fractions allowed (`0.5`, `60`), into a positive duration.
pub fn parse_seconds(option: &str, text: &str, allow_zero: bool) -> Result<Duration> {
    let seconds: f64 = text
        .trim()
        .parse()
        .map_err(|_| anyhow!("{option} {text:?}: not a number of seconds; use e.g. {option} 5 or 0.5"))?;
    // A week bounds every sane run and keeps Duration::from_secs_f64 from overflowing.
    if !seconds.is_finite() || seconds > 7.0 * 86400.0 {
        bail!("{option} {text:?}: must be a finite number of seconds up to a week");
    }
    if seconds < 0.0 || (!allow_zero && seconds == 0.0) {
        let bound = if allow_zero { ">= 0" } else { "> 0" };
        bail!("{option} {text:?}: must be {bound} seconds");
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Parses a byte size: `4096`, `64K`, `1M`, `2G` (binary units, as the kernel's memcg files use).
pub fn parse_size(option: &str, text: &str) -> Result<u64> {
    let trimmed = text.trim();
    let (digits, multiplier) = match trimmed.chars().last() {
        Some('k' | 'K') => (&trimmed[..trimmed.len() - 1], 1u64 << 10),
        Some('m' | 'M') => (&trimmed[..trimmed.len() - 1], 1 << 20),
        Some('g' | 'G') => (&trimmed[..trimmed.len() - 1], 1 << 30),
        Some('t' | 'T') => (&trimmed[..trimmed.len() - 1], 1 << 40),
        _ => (trimmed, 1),
    };
    let value: u64 =
        digits.parse().map_err(|_| anyhow!("{option} {text:?}: not a size; use bytes or K/M/G, e.g. {option} 1M"))?;
    value.checked_mul(multiplier).ok_or_else(|| anyhow!("{option} {text:?}: too large"))
}

#[derive(Debug, Clone)]
pub enum OutputPath {
    Stdout,
    File(PathBuf),
}

impl OutputPath {
    fn parse(text: &str) -> Self {
        if text == "-" { OutputPath::Stdout } else { OutputPath::File(PathBuf::from(text)) }
    }
}

/// Everything a run needs, validated.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub placements: Vec<Placement>,
    pub duration: Duration,
    pub repeat: u32,
    pub warmup: Duration,
    pub interval: Duration,
    pub cpus: Vec<usize>,
    /// Task counts, in sweep order; one per CPU when not asked for.
    pub task_counts: Vec<usize>,
    pub workload: WorkloadKind,
    pub mode: crate::run::Mode,
    pub kernel_count: crate::run::KernelCountSource,
    pub chunk_bytes: u64,
    pub size_bytes: u64,
    pub thp: crate::workload::ThpMode,
    pub tmpdir: PathBuf,
    pub base: BaseSpec,
    pub version: VersionChoice,
    pub csv: Option<OutputPath>,
    pub json: Option<OutputPath>,
    pub samples_csv: Option<OutputPath>,
    pub per_cpu: bool,
    pub quiet: bool,
    pub page_size: u64,
}

impl RunOptions {
    /// The workload's settings; `files_dir` is the run's temporary directory, if it has one.
    pub fn workload_settings(&self, files_dir: Option<PathBuf>) -> crate::workload::WorkloadSettings {
        crate::workload::WorkloadSettings {
            kind: self.workload,
            chunk_bytes: self.chunk_bytes,
            size_bytes: self.size_bytes,
            page_size: self.page_size,
            thp: self.thp,
            files_dir,
        }
    }

    /// Validates the arguments against this machine's allowed CPU set.
    pub fn from_args(args: &RunArgs, allowed_cpus: &[usize]) -> Result<Self> {
        let mut placements = parse_placements(&args.cgroup)?;
        let baseline = !args.no_baseline;
        // The baseline is always measured first; listing `root` too just says so.
        placements.retain(|p| !p.is_root());
        if baseline {
            placements.insert(0, Placement::root());
        }
        if placements.is_empty() {
            bail!("--no-baseline with --cgroup root leaves nothing to measure; name a placement such as child");
        }

        let duration = parse_seconds("--duration", &args.duration, false)?;
        let repeat: u32 = args.repeat.trim().parse().map_err(|_| {
            anyhow!("--repeat {:?}: must be a whole number of repetitions from 1 to 10000", args.repeat)
        })?;
        if !(1..=10_000).contains(&repeat) {
            bail!("--repeat {}: must be from 1 to 10000", args.repeat);
        }
        let interval = parse_seconds("--interval", &args.interval, false)?;
        if interval < Duration::from_millis(10) {
            bail!("--interval {}: must be at least 0.01 s; sampling faster disturbs the measured CPUs", args.interval);
        }

        let cpus = match &args.cpus {
            None => allowed_cpus.to_vec(),
            Some(text) => {
                let cpus = parse_cpu_list(text).with_context(|| "--cpus".to_string())?;
                if let Some(cpu) = cpus.iter().find(|cpu| !allowed_cpus.contains(cpu)) {
                    bail!(
                        "--cpus {text}: CPU {cpu} is not in this process's allowed set {}; pick CPUs from that set",
                        format_cpu_list(allowed_cpus)
                    );
                }
                cpus
            }
        };
        if cpus.is_empty() {
            bail!("no CPU to run on: the allowed set is empty");
        }

        let task_counts = match &args.tasks {
            None => vec![cpus.len()],
            Some(text) => parse_task_counts(text)?,
        };

        let page_size = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE).ok().flatten().unwrap_or(4096) as u64;
        let chunk_bytes = parse_size("--chunk", &args.chunk)?;
        if chunk_bytes < page_size || chunk_bytes % page_size != 0 {
            bail!("--chunk {}: must be a positive multiple of the page size ({page_size} bytes), e.g. 1M", args.chunk);
        }
        // Each worker maps the chunk once per iteration; more than 1 TiB per worker is a typo.
        if chunk_bytes > 1 << 40 {
            bail!("--chunk {}: at most 1T per worker", args.chunk);
        }

        if args.mode == crate::run::Mode::Thread
            && let Some(problem) = args.workload.thread_mode_problem()
        {
            bail!(
                "--mode thread: --workload {} cannot run as threads ({problem}); use --mode process",
                args.workload.name()
            );
        }
        let size_bytes = parse_size("--size", &args.size)?;
        if size_bytes < page_size || size_bytes % page_size != 0 || size_bytes > 1 << 40 {
            bail!("--size {}: must be a multiple of the page size ({page_size} bytes) up to 1T, e.g. 64M", args.size);
        }
        let tmpdir = PathBuf::from(&args.tmpdir);
        if args.workload.needs_files() && !tmpdir.is_dir() {
            bail!("--tmpdir {}: not a directory; give an existing directory (e.g. /dev/shm or /tmp)", args.tmpdir);
        }

        let to_stdout = [&args.csv, &args.json, &args.samples_csv].iter().filter(|o| o.as_deref() == Some("-")).count();
        if to_stdout > 1 {
            bail!(
                "--csv, --json and --samples-csv: only one of them can write to stdout (-); give the others file names"
            );
        }

        Ok(RunOptions {
            placements,
            duration,
            repeat,
            warmup: parse_seconds("--warmup", &args.warmup, true)?,
            interval,
            cpus,
            task_counts,
            workload: args.workload,
            mode: args.mode,
            kernel_count: args.kernel_count,
            chunk_bytes,
            size_bytes,
            thp: args.thp,
            tmpdir,
            base: BaseSpec::parse(&args.base)?,
            version: args.cgroup_version,
            csv: args.csv.as_deref().map(OutputPath::parse),
            json: args.json.as_deref().map(OutputPath::parse),
            samples_csv: args.samples_csv.as_deref().map(OutputPath::parse),
            per_cpu: args.per_cpu,
            quiet: args.quiet,
            page_size,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_like_the_kernel_writes_them() {
        assert_eq!(parse_cpu_list("0-3,6").unwrap(), vec![0, 1, 2, 3, 6]);
        assert_eq!(parse_cpu_list("5").unwrap(), vec![5]);
        assert_eq!(parse_cpu_list("3,1,1-2").unwrap(), vec![1, 2, 3]);
        assert_eq!(parse_cpu_list(" 0 - 1 ").unwrap(), vec![0, 1]);
    }

    #[test]
    fn bad_cpu_lists_are_rejected_with_the_input_named() {
        for bad in ["", "a", "1,,2", "3-1", "-1", "0-", "99999", "18446744073709551616"] {
            let err = parse_cpu_list(bad).unwrap_err().to_string();
            assert!(err.contains(&format!("{bad:?}")), "{bad}: {err}");
        }
    }

    #[test]
    fn cpu_lists_format_compactly() {
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 6]), "0-3,6");
        assert_eq!(format_cpu_list(&[1]), "1");
        assert_eq!(format_cpu_list(&[0, 2, 4, 5]), "0,2,4-5");
        assert_eq!(format_cpu_list(&[]), "");
    }

    #[test]
    fn task_counts_and_round_robin() {
        assert_eq!(parse_task_counts("1,2,4,8").unwrap(), [1, 2, 4, 8]);
        assert_eq!(parse_task_counts("3,6,12,24,48").unwrap(), [3, 6, 12, 24, 48]);
        assert_eq!(parse_task_counts("1..4").unwrap(), [1, 2, 3, 4]);
        for bad in ["", "0", "-1", "1,,2", "4..1", "1,1", "a", "5000", "1..99999"] {
            assert!(parse_task_counts(bad).unwrap_err().to_string().starts_with("--tasks"), "{bad}");
        }
        assert_eq!(cpus_for_tasks(&[0, 1], 5), [0, 1, 0, 1, 0]);
        assert_eq!(cpus_for_tasks(&[2, 5, 7], 2), [2, 5]);
    }

    #[test]
    fn placements_parse_and_reject() {
        let p = parse_placements("child,nested:3").unwrap();
        assert_eq!(p[0], Placement::plain("child".into(), 1));
        assert_eq!((p[1].name.as_str(), p[1].depth, p[1].levels.len()), ("nested:3", 3, 3));
        let sweep = parse_placements("nested:1..4").unwrap();
        assert_eq!(sweep.iter().map(|p| p.depth).collect::<Vec<_>>(), [1, 2, 3, 4]);
        let limited = parse_placements("limited").unwrap();
        assert_eq!(limited[0].profile.as_deref(), Some("limited"));
        assert_eq!(limited[0].levels[0][0].name, "memory.max");
        assert!(parse_placements("nested:4..2").is_err());
        assert!(parse_placements("nested:2,nested:1..3").is_err());
        assert_eq!(parse_placements("root").unwrap(), vec![Placement::root()]);
        assert_eq!(parse_placements("nested:64").unwrap()[0].depth, 64);
        for bad in [
            "nested:0",
            "nested:65",
            "nested:x",
            "nested:-1",
            "grandchild",
            "",
            "child,,root",
            "child,child",
            "nested:1..65",
        ] {
            assert!(parse_placements(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn seconds_accept_fractions_and_reject_nonsense() {
        assert_eq!(parse_seconds("--duration", "0.5", false).unwrap(), Duration::from_millis(500));
        assert_eq!(parse_seconds("--duration", "60", false).unwrap(), Duration::from_secs(60));
        assert_eq!(parse_seconds("--warmup", "0", true).unwrap(), Duration::ZERO);
        for bad in ["0", "-1", "abc", "", "inf", "NaN", "1e300"] {
            let err = parse_seconds("--duration", bad, false).unwrap_err().to_string();
            assert!(err.starts_with("--duration"), "{err}");
        }
    }

    #[test]
    fn sizes_use_binary_units() {
        assert_eq!(parse_size("--chunk", "4096").unwrap(), 4096);
        assert_eq!(parse_size("--chunk", "64K").unwrap(), 65536);
        assert_eq!(parse_size("--chunk", "1M").unwrap(), 1 << 20);
        assert_eq!(parse_size("--chunk", "2g").unwrap(), 2 << 30);
        for bad in ["", "M", "1.5M", "-1", "99999999999T"] {
            assert!(parse_size("--chunk", bad).is_err(), "{bad} accepted");
        }
    }
}
