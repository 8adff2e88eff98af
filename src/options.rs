//! The command line turned into a plan, once, before anything is created: every value the
//! run uses is checked here. Parsers of plain values live in text.rs, placements in plan/.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};

use crate::cgroup::{BaseSpec, VersionChoice};
use crate::cli::{self, RunArgs};
use crate::export::plot::Chart;
use crate::export::{Exporter, Format};
use crate::plan::{Placement, Plan, parse_placements};
use crate::run::topology::CpuOrder;
use crate::run::{KernelCountSource, Mode};
use crate::sink::OutputPath;
use crate::text::{cpu_list_entries, format_cpu_list, parse_cpu_list, parse_seconds, parse_size};
use crate::workload::{ThpMode, WorkloadKind, WorkloadSettings};

/// The shortest slice worth measuring: well above the start/stop cost (tens of microseconds).
const MIN_DURATION: Duration = Duration::from_millis(100);
/// `--slices auto`: the slice length from this --duration on.
const AUTO_SLICING_FROM: Duration = Duration::from_secs(5);
const AUTO_SLICE_S: f64 = 0.025;
/// `--slices auto`: a slice spans at least this many of the loop's iterations. A crew parks at
/// its workers' iteration boundaries, so its park waits for the slowest worker to finish the
/// iteration it is in (half of one on average; twice a slice with a settling window): at 20
/// that tail stays near 2.5% of the slice where the iteration dominates (page_fault1's 128
/// MiB: 0.66 s slices).
const AUTO_ITERATIONS_PER_SLICE: f64 = 20.0;
/// What auto assumes one page of an iteration takes on a native CPU, fault and unmap (page_fault1
/// measured 0.3-1 us a page on the development VM); a worker sharing its CPU takes longer by the
/// sharing.
const AUTO_PAGE_S: f64 = 1e-6;
/// The most slices `auto` makes (100 s at 0.025 s) and `--slices` takes.
const MAX_SLICES: u32 = 4000;
/// The shortest slice: below it the park and wake are a visible part of the slice.
const MIN_SLICE: Duration = Duration::from_millis(20);

/// The longest placement name: within NAME_MAX (255) with the run's `faultscale-<pid>-<nonce>-`
/// before it and a flame graph's `-<N>tasks-vs-root.svg` after it.
const MAX_NAME: usize = 200;

/// Most tasks one measurement forks: far beyond any CPU count, short of exhausting pids.
pub use crate::plan::MAX_TASKS;

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

/// A run's plan plus where its results go.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub plan: Plan,
    /// The files to write, each with its format, in `export::EXPORTERS` order.
    pub outputs: Vec<(&'static dyn Exporter, OutputPath)>,
    pub per_cpu: bool,
    pub quiet: bool,
    pub verbose: bool,
}

impl RunOptions {
    /// Validates the arguments against this machine's allowed CPU set. The checks run in the
    /// order the flags are listed here, so of several mistakes the same one is named first.
    pub fn from_args(args: &RunArgs, allowed_cpus: &[usize]) -> Result<Self> {
        let placements = placements(args)?;
        let mut timing = Timing::from_args(args)?;
        let cpus = cpus(args, allowed_cpus)?;
        let task_counts = match &args.tasks {
            None => vec![cpus.len()],
            Some(text) => parse_task_counts(text)?,
        };
        let most_tasks = task_counts.iter().copied().max().unwrap_or(1);
        let page_size = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE).ok().flatten().unwrap_or(4096) as u64;
        let work = WorkloadOptions::from_args(args, page_size, timing.iterations)?;
        let workload = &work.settings;
        if args.slices.trim() == "auto" && timing.iterations.is_none() && timing.duration >= AUTO_SLICING_FROM {
            let pages = (workload.kind.pages_per_iteration)(workload);
            timing.slices = auto_slices(timing.duration, pages, most_tasks.div_ceil(cpus.len().max(1)));
        }
        check_siblings(&placements, &task_counts, args.mode.into())?;
        check_turns(&timing, &task_counts, cpus.len())?;
        // Every crew's worker has a file of its own, or every CPU slot one the crews share.
        let files = most_tasks * if workload.kind.shares_file_across_crews { 1 } else { placements.len() };
        check_inodes(workload.kind, &work.tmpdir, files)?;
        check_space(&work, files)?;
        let profile_dir = profile_dir(args)?;
        check_one_stdout(args)?;
        check_results_kept(args)?;

        let plan = Plan {
            placements,
            duration: timing.duration,
            slices: timing.slices,
            repeat: timing.repeat,
            // Fixed work is timed whole, as `time` times a run: nothing is discarded.
            warmup: if timing.iterations.is_some() {
                Duration::ZERO
            } else {
                parse_seconds("--warmup", &args.warmup, true)?
            },
            generations: generations(args, &timing)?,
            interval: timing.interval,
            cpus,
            task_counts,
            workload: work.settings,
            mode: args.mode.into(),
            kernel_count: args.kernel_count.into(),
            tmpdir: work.tmpdir,
            base: BaseSpec::parse(&args.base)?,
            version: args.cgroup_version.into(),
            profile: args.profile || args.profile_dir.is_some(),
            profile_dir,
            locks: args.locks,
        };
        Ok(RunOptions {
            plan,
            outputs: args.outputs.0.iter().map(|(format, path)| (*format, OutputPath::parse(path))).collect(),
            per_cpu: args.per_cpu,
            quiet: args.quiet,
            verbose: args.verbose,
        })
    }
}

/// `--cgroup` and `--no-baseline`: the placements in the order they are measured, the
/// baseline first.
fn placements(args: &RunArgs) -> Result<Vec<Placement>> {
    let mut placements = parse_placements(&args.cgroup)?;
    // Listing the baseline asks for it: --no-baseline dropped it silently, and the other
    // placements then had no overhead.
    if let Some(baseline) = args.cgroup.split(',').map(str::trim).find(|item| ["root", "base"].contains(item))
        && args.no_baseline
    {
        bail!(
            "--cgroup {baseline} with --no-baseline: {baseline} is the baseline, which --no-baseline leaves out; drop one of them"
        );
    }
    // The baseline is always measured first; listing `root` too just says so.
    placements.retain(|p| !p.is_baseline());
    if !args.no_baseline {
        placements.insert(0, Placement::baseline());
    }
    if args.no_baseline && placements.iter().any(|p| p.control) {
        bail!("--cgroup control with --no-baseline: the control is checked against the baseline; drop one of them");
    }
    // A name is part of a directory name (`faultscale-<pid>-<nonce>-<name>`, and the flame
    // graphs' file names): past NAME_MAX the mkdir would fail after the run began.
    if let Some(long) = placements.iter().find(|p| p.name.len() > MAX_NAME) {
        bail!(
            "--cgroup {:?}: the name is {} characters long; a placement's directory takes at most {MAX_NAME}: shorten the profile's name",
            long.profile.as_deref().unwrap_or("").chars().take(60).collect::<String>(),
            long.name.len()
        );
    }
    // The baseline's names are taken: a profile called root would make two "root" rows.
    if let Some(clash) =
        placements.iter().find(|p| p.profile.is_some() && ["root", "base", "control"].contains(&p.name.as_str()))
    {
        bail!(
            "--cgroup {:?}: the profile is named {}, which names the baseline or the control; rename the profile",
            clash.profile.as_deref().unwrap_or(&clash.name),
            clash.name
        );
    }
    Ok(placements)
}

/// How long and how often each placement is measured: fixed time or fixed work, cut into
/// slices, repeated, sampled every interval.
struct Timing {
    iterations: Option<u64>,
    duration: Duration,
    slices: u32,
    repeat: u32,
    interval: Duration,
}

impl Timing {
    fn from_args(args: &RunArgs) -> Result<Self> {
        let iterations = args
            .iterations
            .as_deref()
            .map(|text| {
                text.trim().parse::<u64>().ok().filter(|n| (1..=1_000_000_000_000).contains(n)).ok_or_else(|| {
                    anyhow!("--iterations {text:?}: give a whole number of iterations per worker from 1 to 10^12")
                })
            })
            .transpose()?;
        let duration = parse_seconds("--duration", &args.duration, false)?;
        if iterations.is_none() && duration < MIN_DURATION {
            bail!(
                "--duration {}: at least {} s; a shorter slice measures the start and stop signals, not the loop",
                args.duration.trim(),
                MIN_DURATION.as_secs_f64()
            );
        }
        let slices = slices(args, iterations.is_some(), duration)?;
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
        Ok(Timing { iterations, duration, slices, repeat, interval })
    }
}

/// --generations auto: from this many rounds on, one generation per AUTO_ROUNDS_PER_GENERATION
/// rounds, at least AUTO_GENERATIONS_LEAST and at most AUTO_GENERATIONS_MOST (each generation
/// at least 10 rounds, as the disturbed-slice rule wants); below, 1. Each generation is one
/// cgroup instance and one set of workers, the unit the intervals are taken over: 12 in a 10 s
/// run give an interval at 11 degrees of freedom (t 2.20; 8 gave 2.36) for about 0.2 s more
/// wall time than 8 (21.5 s against 21.3 s for `--cgroup child --duration 10`).
const AUTO_GENERATIONS_FROM: u32 = 40;
const AUTO_ROUNDS_PER_GENERATION: u32 = 33;
const AUTO_GENERATIONS_LEAST: u32 = 4;
const AUTO_GENERATIONS_MOST: u32 = 16;

fn auto_generations(rounds: u32) -> u32 {
    match rounds >= AUTO_GENERATIONS_FROM {
        true => (rounds / AUTO_ROUNDS_PER_GENERATION).clamp(AUTO_GENERATIONS_LEAST, AUTO_GENERATIONS_MOST),
        false => 1,
    }
}

/// `--generations`: how many times each placement's crew is made anew over the rounds. Fixed
/// work makes a crew per slice already.
fn generations(args: &RunArgs, timing: &Timing) -> Result<u32> {
    let rounds = timing.slices * timing.repeat;
    match args.generations.trim() {
        "auto" if timing.iterations.is_some() => Ok(1),
        "auto" => Ok(auto_generations(rounds)),
        _ if timing.iterations.is_some() => {
            bail!(
                "--generations {}: --iterations makes new workers for every slice already; drop --generations",
                args.generations.trim()
            )
        }
        text => match text.parse::<u32>() {
            Ok(n) if (1..=rounds).contains(&n) => Ok(n),
            _ => bail!(
                "--generations {text:?}: give a whole number from 1 to the run's {rounds} rounds (--slices x --repeat), or auto"
            ),
        },
    }
}

/// The length of one turn on a CPU that a worker sharing it gets: CFS's minimum granularity
/// (EEVDF's base slice since 6.6) is 0.75 ms times 1 + log2(CPUs), at most 3 ms from 8 CPUs on.
const SCHEDULER_TURN: Duration = Duration::from_millis(3);

/// Workers pinned to one CPU take turns there. When a slice is shorter than one turn for each
/// of them, some workers do not run at all in it: their counts measure the scheduler's order,
/// not the fault path, and the harness spends the slice starting and stopping thousands of
/// processes (4096 tasks on 2 CPUs: 142 s for a 10 s run, every slice overran). Refused
/// before anything is created. Fixed work (--iterations) runs every worker to its end.
fn check_turns(timing: &Timing, task_counts: &[usize], cpus: usize) -> Result<()> {
    if timing.iterations.is_some() {
        return Ok(());
    }
    let slice = timing.duration / timing.slices;
    let most = task_counts.iter().copied().max().unwrap_or(1);
    let per_cpu = most.div_ceil(cpus.max(1));
    let fits = (slice.as_nanos() / SCHEDULER_TURN.as_nanos()) as usize;
    if per_cpu > fits {
        bail!(
            "--tasks {most}: {per_cpu} workers per CPU on {cpus} CPU(s), and a {} slice gives each of them less than one {} ms turn on its CPU, so some would not run at all; give at most {} tasks, or longer slices (--duration, --slices)",
            crate::text::seconds(slice),
            SCHEDULER_TURN.as_millis(),
            fits.max(1) * cpus
        );
    }
    Ok(())
}

/// `--slices auto` from AUTO_SLICING_FROM: 25 ms slices, longer where an iteration of the loop
/// (`pages` from boundary to boundary, `per_cpu` workers sharing each CPU) would make the park's
/// tail pass about 2.5% of a slice.
fn auto_slices(duration: Duration, pages: u64, per_cpu: usize) -> u32 {
    // And a scheduler turn for each worker sharing a CPU, with a tenth to spare: what
    // `check_turns` asks of a slice, so auto never makes slices it refuses.
    let turns_s = per_cpu as f64 * SCHEDULER_TURN.as_secs_f64() * 1.1;
    let iterations_s = AUTO_ITERATIONS_PER_SLICE * pages as f64 * AUTO_PAGE_S * per_cpu as f64;
    let slice_s = AUTO_SLICE_S.max(iterations_s).max(turns_s);
    ((duration.as_secs_f64() / slice_s).round().max(1.0) as u32).min(MAX_SLICES)
}

/// `--slices`: the number given, or by default one per 25 ms of `duration` from 5 s, one per
/// second below (3 whole passes of the work for fixed work); each fixed-time slice at least MIN_SLICE long.
fn slices(args: &RunArgs, fixed_work: bool, duration: Duration) -> Result<u32> {
    let slices = match args.slices.trim() {
        // Fixed work: three whole passes of the work, the fewest that give an interval.
        "auto" if fixed_work => 3,
        // From 5 s, 25 ms slices (at most MAX_SLICES): workers live through the run, parked
        // between slices, so a slice costs no fork and no warmup, and short slices pair
        // neighbouring moments of a noisy machine: on the 2-CPU VM, 10 s, the overhead's 95%
        // half-width was 1.7-1.8 points with 0.1 s slices, 0.9-1.35 with 50 ms, 0.6-0.9 with
        // 25 ms (README, Benchmarks). Shorter runs (smoke tests) keep one slice per second.
        "auto" if duration >= AUTO_SLICING_FROM => auto_slices(duration, 1, 1),
        "auto" => (duration.as_secs_f64().floor() as u32).clamp(1, 10),
        text => text.parse::<u32>().ok().filter(|n| (1..=MAX_SLICES).contains(n)).ok_or_else(|| {
            anyhow!("--slices {text:?}: give a whole number of slices from 1 to {MAX_SLICES}, or auto")
        })?,
    };
    if !fixed_work && duration / slices < MIN_SLICE {
        bail!(
            "--slices {slices}: slices of {:.2} ms are shorter than {} ms; at most {} slices in this --duration, or a longer one",
            (duration / slices).as_secs_f64() * 1e3,
            MIN_SLICE.as_millis(),
            (duration.as_nanos() / MIN_SLICE.as_nanos()).max(1)
        );
    }
    Ok(slices)
}

/// `--cpus` (default: the allowed set), checked against the allowed set and put in the
/// `--cpu-order` the workers take them in.
fn cpus(args: &RunArgs, allowed_cpus: &[usize]) -> Result<Vec<usize>> {
    let cpus = match &args.cpus {
        None => allowed_cpus.to_vec(),
        Some(given) => {
            // Echoed in a range form (`0-1023`), not as typed: a list of a thousand CPUs made a
            // 4 KB one-line error.
            let text = &match parse_cpu_list(given) {
                Ok(cpus) if given.len() > 80 => format_cpu_list(&cpus),
                _ => given.clone(),
            };
            let listed = cpu_list_entries(given).with_context(|| "--cpus".to_string())?;
            let cpus = parse_cpu_list(given).with_context(|| "--cpus".to_string())?;
            if let Some(cpu) = cpus.iter().find(|cpu| listed.iter().filter(|c| c == cpu).count() > 1) {
                bail!("--cpus {text}: CPU {cpu} is listed twice; list each CPU once");
            }
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
    Ok(crate::run::topology::order(&cpus, args.cpu_order.into(), Path::new(crate::measure::machine::SYSFS_CPU)))
}

/// siblings:N spreads the workers' processes over N cgroups: it needs processes, and at least
/// one task per sibling at every task count.
fn check_siblings(placements: &[Placement], task_counts: &[usize], mode: Mode) -> Result<()> {
    let Some(siblings) = placements.iter().find(|p| p.siblings > 0) else { return Ok(()) };
    if mode == Mode::Thread {
        bail!(
            "--cgroup {}: threads of one process share one memcg, so they cannot run in sibling cgroups; use --mode process",
            siblings.name
        );
    }
    if let Some(tasks) = task_counts.iter().find(|&&t| t < siblings.siblings as usize) {
        bail!(
            "--cgroup {}: {tasks} tasks leave a sibling cgroup empty; give at least {} tasks (--tasks), more than the CPUs so that CPUs switch between cgroups",
            siblings.name,
            siblings.siblings
        );
    }
    Ok(())
}

/// What reaches the workers, read off the command line in this one place: `--workload`,
/// `--chunk`, `--size`, `--thp`, `--iterations` (a new option for the workers is a field of
/// `WorkloadSettings`, its flag in cli.rs and its line here), and the `--tmpdir` its files go
/// in, checked against the page size, the workload and `--mode`.
struct WorkloadOptions {
    settings: WorkloadSettings,
    tmpdir: PathBuf,
}

impl WorkloadOptions {
    fn from_args(args: &RunArgs, page_size: u64, fixed_iterations: Option<u64>) -> Result<Self> {
        let chunk_bytes = parse_size("--chunk", &args.chunk)?;
        if chunk_bytes < page_size || chunk_bytes % page_size != 0 {
            bail!("--chunk {}: must be a positive multiple of the page size ({page_size} bytes), e.g. 1M", args.chunk);
        }
        // Each worker maps the chunk once per iteration; more than 1 TiB per worker is a typo.
        if chunk_bytes > 1 << 40 {
            bail!("--chunk {}: at most 1T per worker", args.chunk);
        }
        let workload = WorkloadKind::from(args.workload);
        if Mode::from(args.mode) == Mode::Thread
            && let Some(problem) = workload.thread_mode_problem
        {
            bail!("--mode thread: --workload {} cannot run as threads ({problem}); use --mode process", workload.name);
        }
        let size_bytes = parse_size("--size", &args.size)?;
        if size_bytes < page_size || size_bytes % page_size != 0 || size_bytes > 1 << 40 {
            bail!("--size {}: must be a multiple of the page size ({page_size} bytes) up to 1T, e.g. 64M", args.size);
        }
        let tmpdir = PathBuf::from(args.tmpdir.as_deref().unwrap_or(workload.default_tmpdir()));
        if workload.needs_files() && !tmpdir.is_dir() {
            bail!("--tmpdir {}: not a directory; give an existing directory (e.g. /dev/shm or /tmp)", tmpdir.display());
        }
        if workload.needs_files()
            && let Ok(stat) = nix::sys::statfs::statfs(&tmpdir)
            && let Some(fs) = crate::run::files::pseudo_filesystem(stat.filesystem_type().0)
        {
            bail!(
                "--tmpdir {}: a {fs} pseudo filesystem, which holds no workload's files; give a directory on tmpfs, ext4 or xfs",
                tmpdir.display()
            );
        }
        if workload.needs_files() {
            // One rule for every file workload: the run makes its directory there, so a place
            // that cannot take one (read-only, full, no inodes left) is refused now, exit 2.
            crate::run::files::check_can_create(&tmpdir)
                .map_err(|why| anyhow!("--tmpdir {}: {why}; give a writable directory", tmpdir.display()))?;
        }
        if let Some(problem) = workload.files_dir_problem(&tmpdir) {
            bail!("--tmpdir {} (for --workload {}): {problem}", tmpdir.display(), workload.name);
        }
        let settings = WorkloadSettings {
            kind: workload,
            chunk_bytes,
            size_bytes,
            page_size,
            thp: args.thp.into(),
            files_dir: None,
            fixed_iterations,
        };
        Ok(WorkloadOptions { settings, tmpdir })
    }
}

/// A file workload's inodes: its directory, its boot-id file and one file per worker alive at
/// once (each placement's crew at the largest task count: `workers`). A
/// filesystem that has fewer free (a tmpfs with nr_inodes=4) passes the directory probe and
/// then fails every slice; one that counts no inodes (f_files 0, btrfs) is not judged.
fn check_inodes(workload: WorkloadKind, tmpdir: &Path, workers: usize) -> Result<()> {
    if !workload.needs_files() {
        return Ok(());
    }
    let Ok(stat) = nix::sys::statvfs::statvfs(tmpdir) else { return Ok(()) };
    let needed = 2 + workers as u64;
    if stat.files() > 0 && stat.files_available() < needed {
        bail!(
            "--tmpdir {}: {} free inodes, and the run needs {needed} (its directory, a boot-id file and a file per worker of every placement, all alive at once); give a directory with more free inodes",
            tmpdir.display(),
            stat.files_available()
        );
    }
    Ok(())
}

/// A file workload's space: each worker alive at once (every placement's crew at the largest
/// task count: `workers`) has its file, whose pages a tmpfs of 4 KiB free passes the directory
/// probe with and then fails as SIGBUS in the first slice.
fn check_space(work: &WorkloadOptions, workers: usize) -> Result<()> {
    let workload = work.settings.kind;
    if !workload.needs_files() {
        return Ok(());
    }
    let (Ok(vfs), Ok(fs)) = (nix::sys::statvfs::statvfs(&work.tmpdir), nix::sys::statfs::statfs(&work.tmpdir)) else {
        return Ok(());
    };
    let on_tmpfs = crate::run::files::filesystem_name(fs.filesystem_type().0) == "tmpfs";
    let per_worker = (workload.file_bytes)(&work.settings, on_tmpfs);
    let free = vfs.blocks_available().saturating_mul(vfs.fragment_size());
    match space_problem(workload.name, per_worker, workers, free) {
        Some(problem) => bail!("--tmpdir {}: {problem}", work.tmpdir.display()),
        None => Ok(()),
    }
}

/// Why `free` bytes cannot hold `workers` files of `per_worker` bytes, if they cannot.
fn space_problem(workload: &str, per_worker: u64, workers: usize, free: u64) -> Option<String> {
    let needed = per_worker.saturating_mul(workers as u64);
    let kib = |bytes: u64| crate::text::thousands((bytes / 1024) as f64);
    (needed > free).then(|| {
        format!(
            "{} KiB free, and --workload {workload} needs {} KiB ({} KiB per worker, {} alive at once); give a directory with more free space, or fewer --tasks or placements, or a smaller --chunk or --size",
            kib(free),
            kib(needed),
            kib(per_worker),
            crate::text::plural(workers, "worker")
        )
    })
}

/// `--profile-dir`: a directory, or a path where one can be made, checked writable before
/// anything runs (a directory found read-only after the measurement costs the whole run).
fn profile_dir(args: &RunArgs) -> Result<Option<PathBuf>> {
    let Some(text) = args.profile_dir.as_deref() else { return Ok(None) };
    if text.is_empty() {
        bail!("--profile-dir \"\": give a directory for the flame graphs");
    }
    let dir = PathBuf::from(text);
    // A link to nothing is neither there (exists() follows it) nor creatable (mkdir finds the
    // link): found after the measuring, it cost every profile.
    if !dir.exists()
        && let Ok(target) = std::fs::read_link(&dir)
    {
        let what = match std::fs::metadata(&dir) {
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => "which leads round a loop of links",
            _ => "which does not exist",
        };
        bail!(
            "--profile-dir {}: a symbolic link to {}, {what}; make that directory, or give another",
            dir.display(),
            target.display()
        );
    }
    // The nearest part of the path that is there must be a directory for the rest to be made
    // in it (`afile/sub` failed after the whole run with "Not a directory").
    if let Some(there) = dir.ancestors().skip(1).find(|a| !a.as_os_str().is_empty() && a.exists())
        && !there.is_dir()
    {
        bail!("--profile-dir {}: {} is not a directory; give a directory", dir.display(), there.display());
    }
    if dir.exists() && !dir.is_dir() {
        bail!("--profile-dir {}: exists and is not a directory; give a directory", dir.display());
    }
    // The directory, or the nearest existing one it would be made in, must take new files.
    let existing = dir.ancestors().find(|a| a.as_os_str().is_empty() || a.is_dir()).unwrap_or(&dir);
    let existing = if existing.as_os_str().is_empty() { std::path::Path::new(".") } else { existing };
    if let Err(e) = nix::unistd::access(existing, nix::unistd::AccessFlags::W_OK | nix::unistd::AccessFlags::X_OK) {
        bail!(
            "--profile-dir {}: {} cannot take new files ({}); give a writable directory",
            dir.display(),
            existing.display(),
            std::io::Error::from(e)
        );
    }
    // Root passes every access check, on /proc and /sys too: a directory is made there (and
    // removed) to know, as the flame graphs' directory will be made after the measuring.
    if let Ok(stat) = nix::sys::statfs::statfs(existing)
        && let Some(fs) = crate::run::files::pseudo_filesystem(stat.filesystem_type().0)
    {
        bail!(
            "--profile-dir {}: {} is on a {fs} pseudo filesystem, which takes no flame graphs; give a directory on a real filesystem",
            dir.display(),
            existing.display()
        );
    }
    crate::run::files::check_can_create(existing).map_err(|why| {
        anyhow!(
            "--profile-dir {}: {} cannot take new files: {why}; give a writable directory",
            dir.display(),
            existing.display()
        )
    })?;
    Ok(Some(dir))
}

/// Two outputs on stdout would interleave into neither format.
fn check_one_stdout(args: &RunArgs) -> Result<()> {
    let mut options: Vec<String> =
        args.outputs.0.iter().filter(|(_, path)| path == "-").map(|(e, _)| format!("--{} -", e.option())).collect();
    if options.len() > 1 {
        let last = options.pop().unwrap_or_default();
        bail!("{} and {last}: only one output can write to stdout (-); give the others file names", options.join(", "));
    }
    Ok(())
}

/// `-q` prints no table: without an output file the run would measure for nothing and exit 0.
fn check_results_kept(args: &RunArgs) -> Result<()> {
    if !args.quiet || !args.outputs.0.is_empty() || args.profile_dir.is_some() {
        return Ok(());
    }
    let options: Vec<String> = crate::export::EXPORTERS.iter().map(|e| format!("--{} FILE", e.option())).collect();
    bail!(
        "-q prints no table, and no output is given, so the results would be kept nowhere: give {}, or --profile-dir DIR, or drop -q",
        options.join(", ")
    );
}

/// The command line's value enums as the engine's types: `From` impls that name every variant
/// on both sides, so a value added to one side and not the other does not compile.
macro_rules! same_values {
    ($($cli:ty => $engine:ident { $($variant:ident),+ $(,)? })+) => {$(
        impl From<$cli> for $engine {
            fn from(value: $cli) -> Self {
                type Cli = $cli;
                match value {
                    $(Cli::$variant => $engine::$variant,)+
                }
            }
        }
    )+};
}

impl From<cli::Workload> for WorkloadKind {
    fn from(value: cli::Workload) -> Self {
        value.0
    }
}

same_values! {
    cli::CgroupVersion => VersionChoice { Auto, V1, V2 }
    cli::Format => Format { Table, Csv, Markdown }
    cli::Chart => Chart { Auto, Depth, Tasks, Bars }
    cli::CpuOrder => CpuOrder { CoresFirst, Numeric }
    cli::Mode => Mode { Process, Thread }
    cli::Thp => ThpMode { Keep, Never, Always }
    cli::KernelCount => KernelCountSource { Minflt, Perf }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value the command line accepts is the name the engine prints (table, CSV, JSON).
    #[test]
    fn auto_slices_are_25_ms_until_an_iteration_or_the_cpus_sharing_want_more() {
        let ten = Duration::from_secs(10);
        // The default 1 MiB chunk: 256 pages, 5.1 ms for 20 iterations: 25 ms slices.
        assert_eq!(auto_slices(ten, 256, 1), 400);
        assert_eq!(auto_slices(Duration::from_secs(1000), 256, 1), MAX_SLICES);
        // page_fault1's 128 MiB: 32,768 pages, 0.655 s for 20 iterations.
        assert_eq!(auto_slices(ten, 32_768, 1), 15);
        assert_eq!(auto_slices(Duration::from_secs(300), 32_768, 1), 458);
        // Two workers a CPU take twice as long over an iteration.
        assert_eq!(auto_slices(ten, 32_768, 2), 8);
        // 48 workers on 2 CPUs: 24 a CPU want 79.2 ms for their turns, more than 20 of their
        // 1 MiB iterations (24 x 5.1 ms = 123 ms) here: 123 ms.
        assert_eq!(auto_slices(ten, 256, 24), 81);
        // mmap-file's one page: the turns alone.
        assert_eq!(auto_slices(ten, 1, 24), 126);
    }

    #[test]
    fn command_line_values_are_the_engine_names() {
        use clap::ValueEnum;
        let name = |value: &dyn Fn() -> Option<clap::builder::PossibleValue>| value().unwrap().get_name().to_string();
        for &w in cli::Workload::value_variants() {
            assert_eq!(name(&|| w.to_possible_value()), WorkloadKind::from(w).name);
        }
        for &m in cli::Mode::value_variants() {
            assert_eq!(name(&|| m.to_possible_value()), Mode::from(m).name());
        }
        for &t in cli::Thp::value_variants() {
            assert_eq!(name(&|| t.to_possible_value()), ThpMode::from(t).name());
        }
        for &k in cli::KernelCount::value_variants() {
            assert_eq!(name(&|| k.to_possible_value()), KernelCountSource::from(k).name());
        }
    }

    #[test]
    fn auto_slices_are_25_ms_from_five_seconds_and_seconds_below() {
        use clap::Parser;
        let auto = |duration: f64| {
            let cli = cli::Cli::parse_from(["faultscale", "--duration", &duration.to_string()]);
            slices(&cli.run, false, Duration::from_secs_f64(duration)).unwrap()
        };
        assert_eq!([auto(0.1), auto(1.0), auto(2.5), auto(4.9)], [1, 1, 2, 4]);
        assert_eq!([auto(5.0), auto(10.0), auto(60.0), auto(100.0), auto(3600.0)], [200, 400, 2400, 4000, 4000]);
        let cli = cli::Cli::parse_from(["faultscale", "--iterations", "100"]);
        assert_eq!(slices(&cli.run, true, Duration::ZERO).unwrap(), 3, "fixed work: three whole passes");
    }

    #[test]
    fn generations_are_one_per_33_rounds_from_40_within_4_to_16_and_none_for_fixed_work() {
        use clap::Parser;
        let of = |args: &[&str]| {
            let cli = cli::Cli::parse_from([&["faultscale"][..], args].concat());
            generations(&cli.run, &Timing::from_args(&cli.run).unwrap())
        };
        assert_eq!(of(&["--duration", "10"]).unwrap(), 12, "400 rounds");
        assert_eq!(of(&["--duration", "5"]).unwrap(), 6, "200 rounds");
        assert_eq!(of(&["--duration", "60"]).unwrap(), 16, "2400 rounds");
        assert_eq!(of(&["--duration", "1"]).unwrap(), 1, "one round: one crew");
        assert_eq!(of(&["--duration", "2", "--slices", "20", "--repeat", "2"]).unwrap(), 4);
        assert_eq!(of(&["--duration", "2", "--slices", "39"]).unwrap(), 1);
        assert_eq!(of(&["--duration", "10", "--generations", "8"]).unwrap(), 8);
        assert_eq!(of(&["--iterations", "10"]).unwrap(), 1);
        for bad in [&["--duration", "1", "--generations", "2"][..], &["--generations", "0"], &["--generations", "x"]] {
            let err = of(bad).unwrap_err().to_string();
            assert!(err.starts_with("--generations"), "{bad:?}: {err}");
        }
        let err = of(&["--iterations", "10", "--generations", "2"]).unwrap_err().to_string();
        assert!(err.contains("--iterations makes new workers for every slice"), "{err}");
    }

    #[test]
    fn a_tmpdir_without_room_for_every_workers_file_is_refused() {
        let problem = space_problem("file-shared", 1 << 20, 4, 4096).unwrap();
        assert!(
            problem.starts_with(
                "4 KiB free, and --workload file-shared needs 4,096 KiB (1,024 KiB per worker, 4 workers alive at once)"
            ),
            "{problem}"
        );
        assert_eq!(space_problem("file-shared", 1 << 20, 4, 4 << 20), None);
        assert_eq!(space_problem("mmap-file", 0, 4, 0), None);
        let file_bytes = |name: &str, on_tmpfs: bool| {
            let settings = WorkloadSettings::example(name);
            (settings.kind.file_bytes)(&settings, on_tmpfs)
        };
        assert_eq!(file_bytes("file-private", false), 0, "a hole read takes no block");
        assert_eq!(file_bytes("usemem-file", true), 64 << 20);
        assert_eq!(file_bytes("page_fault3", false), 128 << 20);
    }

    #[test]
    fn a_quiet_run_needs_an_output_to_keep_its_results() {
        use clap::Parser;
        let check = |args: &[&str]| check_results_kept(&cli::Cli::parse_from([&["faultscale"][..], args].concat()).run);
        let err = check(&["-q"]).unwrap_err().to_string();
        assert!(err.starts_with("-q prints no table") && err.contains("--json FILE"), "{err}");
        assert!(check(&["--quiet", "--duration", "1"]).is_err());
        for kept in [&["-q", "--csv", "r.csv"][..], &["-q", "--json", "-"], &["-q", "--profile-dir", "d"], &[]] {
            assert!(check(kept).is_ok(), "{kept:?}");
        }
    }

    #[test]
    fn the_baseline_named_with_no_baseline_is_refused_like_the_control() {
        use clap::Parser;
        let of = |args: &[&str]| placements(&cli::Cli::parse_from([&["faultscale"][..], args].concat()).run);
        for (list, named) in [("root,child", "root"), ("child, base", "base"), ("root", "root")] {
            let err = of(&["--cgroup", list, "--no-baseline"]).unwrap_err().to_string();
            assert!(err.starts_with(&format!("--cgroup {named} with --no-baseline")), "{list}: {err}");
        }
        let err = of(&["--cgroup", "child,control", "--no-baseline"]).unwrap_err().to_string();
        assert!(err.starts_with("--cgroup control with --no-baseline"), "{err}");
        let names = |args: &[&str]| of(args).unwrap().into_iter().map(|p| p.name).collect::<Vec<_>>();
        assert_eq!(names(&["--cgroup", "root,child"]), ["base", "child"]);
        assert_eq!(names(&["--cgroup", "child", "--no-baseline"]), ["child"]);
    }

    #[test]
    fn task_counts() {
        assert_eq!(parse_task_counts("1,2,4,8").unwrap(), [1, 2, 4, 8]);
        assert_eq!(parse_task_counts("3,6,12,24,48").unwrap(), [3, 6, 12, 24, 48]);
        assert_eq!(parse_task_counts("1..4").unwrap(), [1, 2, 3, 4]);
        for bad in ["", "0", "-1", "1,,2", "4..1", "1,1", "a", "5000", "1..99999"] {
            assert!(parse_task_counts(bad).unwrap_err().to_string().starts_with("--tasks"), "{bad}");
        }
    }
}
