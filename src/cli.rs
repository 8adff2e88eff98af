//! Command-line definitions only; validation lives in options.rs.

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::export::{EXPORTERS, Exporter};
use crate::workload::WorkloadKind;

#[derive(Debug, Parser)]
#[command(
    name = "faultscale",
    version,
    about = "Measure page-fault scalability under memory cgroups: root vs child, pinned per CPU",
    long_about = "Measure page-fault scalability under memory cgroups.\n\n\
        faultscale builds a cgroup hierarchy under a base, runs one pinned fault loop per CPU \
        in the base (the baseline) and in each placement asked for, releases them together with \
        one signal, stops them together, and reports page faults per second from the loop's own \
        counter, the kernel's perf page-fault count and the memcg pgfault counter, with each \
        placement's overhead over the baseline (CPU ns per fault) and its 95% interval.",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the cgroup layout, memory controller, CPUs, THP and kernel faultscale sees
    Env {
        #[arg(long, value_enum, default_value_t = CgroupVersion::Auto)]
        cgroup_version: CgroupVersion,
        #[arg(long, default_value = "root")]
        base: String,
    },
    /// List the shipped cgroup profiles, or show the tree one would build on this machine
    Profiles {
        /// A shipped profile name or a .toml path
        name: Option<String>,
        #[arg(long, value_enum, default_value_t = CgroupVersion::Auto)]
        cgroup_version: CgroupVersion,
    },
    /// Compare runs: BASE against NEW (and more), matched by workload, mode, tasks, placement
    Compare {
        /// The baseline run's --csv or --json file, or several runs of one kernel joined by
        /// commas (a1.json,a2.json,a3.json): the run is then the unit of the test
        base: String,
        /// Runs to compare with it, each one file or several joined by commas
        #[arg(required = true)]
        new: Vec<String>,
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// Compare rows even where their settings differ (chunk, size, THP mode, tmpdir
        /// filesystem, kernel count source, knobs); each difference is still said
        #[arg(long)]
        force: bool,
    },
    /// Draw a run's --csv or --json file as an SVG or PNG chart
    Plot {
        file: String,
        /// The picture to write: a .svg or .png file
        #[arg(short, long)]
        output: String,
        #[arg(long, value_enum, default_value_t = Chart::Auto)]
        chart: Chart,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    Completions { shell: clap_complete::Shell },
    /// Print the man page (roff), generated from these definitions
    Man,
    /// Remove faultscale-* cgroups left by runs whose process is gone (e.g. after SIGKILL)
    Cleanup {
        /// List what would be removed, remove nothing
        #[arg(long)]
        dry_run: bool,
        #[arg(long, value_enum, default_value_t = CgroupVersion::Auto)]
        cgroup_version: CgroupVersion,
        /// Where to look: root, self, new (where `--base new` runs make their cgroups) or a cgroup path (searched recursively)
        #[arg(long, default_value = "root")]
        base: String,
        /// Where the file workloads' run directories went (the run's --tmpdir) [default: every
        /// workload's default, /tmp and /dev/shm]
        #[arg(long, value_name = "DIR")]
        tmpdir: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Placements to measure against the baseline (root in the true root, base elsewhere), comma-separated: child, nested:N,
    /// nested:A..B (a depth sweep), siblings:N (the workers spread over N sibling cgroups that take turns on each CPU;
    /// needs --tasks above the CPU count), a shipped profile (limited, protected-3, lkp-cgroup2, ...) or a profile .toml
    /// path
    #[arg(long, default_value = "child", value_name = "LIST")]
    pub cgroup: String,

    /// Skip the baseline in the base cgroup itself
    #[arg(long)]
    pub no_baseline: bool,

    /// Seconds each placement is measured (fractions allowed), in total: split into --slices
    /// interleaved slices (baseline, child, ..., then backward), so drift hits every placement
    /// alike and the overhead gets a 95% confidence interval from the slices
    #[arg(long, default_value = "10", value_name = "SECS", allow_hyphen_values = true)]
    pub duration: String,

    /// Fixed work instead of fixed time: every worker does N iterations of its loop (pages for
    /// the per-page workloads), and each slice is timed from the first start to the last
    /// finish, with the workers' system time beside it, as the 2011 i_mmap thread timed
    /// `mmap-file 48 50000`. --slices counts whole passes of that work [default: 3]
    #[arg(long, value_name = "N", allow_hyphen_values = true, conflicts_with_all = ["duration", "warmup"])]
    pub iterations: Option<String>,

    /// Slices the --duration is split into [default: from 5 s, one per 25 ms (at most
    /// 4000); below, one per second]
    #[arg(long, default_value = "auto", value_name = "N|auto", allow_hyphen_values = true)]
    pub slices: String,

    /// Run the whole measurement N times (N x --duration per placement); every slice of every
    /// repetition counts, and the generations are cut over all of them. The perf counters
    /// block's +- is perf stat's: 100 x stddev / sqrt(n) / mean over the slices
    #[arg(long, default_value = "1", value_name = "N", allow_hyphen_values = true)]
    pub repeat: String,

    /// Crew generations per task count: the rounds are cut into N stretches, each measured by
    /// workers and cgroups made for it, and the intervals are taken over the N (what one
    /// cgroup instance and one set of workers cost differs from the next, which no interval
    /// over one instance's slices can see) [default: one per 33 rounds, 4 to 16, from 40
    /// rounds; else 1]
    #[arg(long, default_value = "auto", value_name = "N|auto", allow_hyphen_values = true)]
    pub generations: String,

    /// Seconds the first crew at each task count runs before its first slice, discarded: it
    /// warms the CPUs; every other crew starts with its first iteration and the settling
    /// window before each slice
    #[arg(long, default_value = "0.1", value_name = "SECS", allow_hyphen_values = true)]
    pub warmup: String,

    /// Seconds between counter samples, on the monotonic clock
    #[arg(long, default_value = "1", value_name = "SECS", allow_hyphen_values = true)]
    pub interval: String,

    /// CPUs to run one worker each on, e.g. 0-3,6 [default: every CPU in the allowed set]
    #[arg(long, value_name = "LIST", allow_hyphen_values = true)]
    pub cpus: Option<String>,

    /// The order workers take the CPUs: one per physical core first, then SMT siblings
    /// (as will-it-scale), or numeric
    #[arg(long, value_enum, default_value_t = CpuOrder::CoresFirst)]
    pub cpu_order: CpuOrder,

    /// Task counts to sweep, e.g. 1,2,4,8 or 3,6,12,24,48 or 1..8 [default: one per CPU]; tasks
    /// beyond the CPUs given are placed round-robin
    #[arg(long, value_name = "LIST", allow_hyphen_values = true)]
    pub tasks: Option<String>,

    /// Workers as processes (one mm each) or as threads of one process (one mm: mmap_lock and
    /// anon_vma shared); fork cannot run as threads
    #[arg(long, value_enum, default_value_t = Mode::Process)]
    pub mode: Mode,

    /// The loop each worker runs
    #[arg(long, value_enum, default_value_t = Workload(WorkloadKind::default()))]
    pub workload: Workload,

    /// Bytes usemem allocates per iteration, usemem-file maps and reads, and fork's children
    /// write (K, M, G suffixes)
    #[arg(long, default_value = "64M", value_name = "SIZE", allow_hyphen_values = true)]
    pub size: String,

    /// THP for the workers' anonymous memory; never keeps every fault a base-page fault
    #[arg(long, value_enum, default_value_t = Thp::Never)]
    pub thp: Thp,

    /// Directory for the file workloads' files (a run directory is made in it and removed);
    /// /dev/shm for tmpfs, /tmp or a disk path for a disk filesystem [default: /dev/shm for
    /// page_fault2/3 and fallocate1, as LKP runs them; /tmp otherwise]
    #[arg(long, value_name = "DIR")]
    pub tmpdir: Option<String>,

    /// Bytes each anon iteration maps, touches page by page and unmaps (K, M, G suffixes)
    #[arg(long, default_value = "1M", value_name = "SIZE", allow_hyphen_values = true)]
    pub chunk: String,

    /// Where the kernel's fault count comes from: minflt costs nothing on the fault path; perf
    /// adds perf stat's software counters at a cost on every fault
    #[arg(long, value_enum, default_value_t = KernelCount::Minflt)]
    pub kernel_count: KernelCount,

    /// Cgroup to build under: root (the hierarchy's root), self (the cgroup faultscale runs in;
    /// containers, CI, delegated setups), new (a cgroup of faultscale's own, holding only
    /// itself: a delegated systemd scope where systemd runs) or a cgroup path
    #[arg(long, default_value = "root", value_name = "root|self|new|PATH")]
    pub base: String,

    /// Which hierarchy holds the memory controller to use
    #[arg(long, value_enum, default_value_t = CgroupVersion::Auto)]
    pub cgroup_version: CgroupVersion,

    /// --csv, --json, --samples-csv: one option per format in export::EXPORTERS.
    #[command(flatten)]
    pub outputs: OutputArgs,

    /// Sample every worker on CPU (cycles, else cpu-clock; 999 Hz; kernel and user call
    /// chains) while slices are measured, and attribute the time: the memcg family's share
    /// and its ns per fault, with a 95% interval over the slices, and the functions that differ
    /// most from the baseline
    #[arg(long)]
    pub profile: bool,

    /// Implies --profile: write each placement's folded stacks, an SVG flame graph each, and a
    /// differential flame graph baseline -> placement into DIR (created if missing)
    #[arg(long, value_name = "DIR")]
    pub profile_dir: Option<String>,

    /// Count every worker's lock contentions while slices are measured (the kernel's
    /// lock:contention_begin/end tracepoints, Linux 5.19 and later): contentions per 1,000
    /// operations and wait ns per operation against the baseline, and the callers that
    /// contended. Where the events cannot be opened the run goes on without lock figures. Each
    /// contention's records cost microseconds, partly while the lock is held (3% a fault where
    /// two anon workers share a memcg's lruvec lock): take the rates to compare from a run
    /// without it
    #[arg(long)]
    pub locks: bool,

    /// Add one CSV row per worker, with its CPU, and each worker's counters to the JSON
    #[arg(long)]
    pub per_cpu: bool,

    /// Print no table, only warnings and errors (needs --csv, --json, --samples-csv or --profile-dir)
    #[arg(long, short)]
    pub quiet: bool,

    /// Also name every slice a per-slice warning fired in (by default each kind is said once
    /// per placement: the worst case, with how many slices had it)
    #[arg(long, short)]
    pub verbose: bool,

    /// Check the run's arguments as for a machine of CPUS CPUs and exit, creating nothing (how
    /// scripts/kernel-ab checks what a guest will run before it boots one)
    #[arg(long, value_name = "CPUS")]
    pub check_args: Option<usize>,
}

/// The run's output files as given: (the format, FILE), in `EXPORTERS` order. Its options
/// come from that list, so a new format needs no edit here.
#[derive(Debug, Clone, Default)]
pub struct OutputArgs(pub Vec<(&'static dyn Exporter, String)>);

impl clap::FromArgMatches for OutputArgs {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let given = |e: &&'static dyn Exporter| matches.get_one::<String>(e.option()).map(|path| (*e, path.clone()));
        Ok(OutputArgs(EXPORTERS.iter().filter_map(given).collect()))
    }
    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Args for OutputArgs {
    fn augment_args(command: clap::Command) -> clap::Command {
        EXPORTERS.iter().fold(command, |command, e| {
            // Every format goes to stdout as well (sink::OutputPath), so that is said once, here.
            let help = format!("{} (- for stdout)", e.help());
            command.arg(clap::Arg::new(e.option()).long(e.option()).value_name("FILE").help(help))
        })
    }
    fn augment_args_for_update(command: clap::Command) -> clap::Command {
        Self::augment_args(command)
    }
}

// The values of the enum flags. Each maps to an engine type of the same meaning (options.rs), so
// the engine does not depend on clap; the variants' doc comments are the help's value lists.

/// `--cgroup-version`: which hierarchy holds the memory controller to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CgroupVersion {
    Auto,
    V1,
    V2,
}

/// `compare --format`: how `compare` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Csv,
    Markdown,
}

/// `plot --chart`: the picture to draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Chart {
    /// tasks when several task counts were run, depth when several depths, else bars
    Auto,
    Depth,
    Tasks,
    Bars,
}

/// `--cpu-order`: the order workers take the CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CpuOrder {
    /// One CPU per physical core first, then their SMT siblings
    CoresFirst,
    /// The CPUs in numeric order
    Numeric,
}

/// `--mode`: workers as processes or as threads of one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    Process,
    Thread,
}

/// `--workload`: the loop each worker runs. Its names and help lines are the workloads'
/// descriptors' (`workload::WORKLOADS`), so a workload is described in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workload(pub WorkloadKind);

static WORKLOAD_VALUES: std::sync::LazyLock<Vec<Workload>> =
    std::sync::LazyLock::new(|| WorkloadKind::all().map(Workload).collect());

impl ValueEnum for Workload {
    fn value_variants<'a>() -> &'a [Self] {
        &WORKLOAD_VALUES
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.0.name).help(self.0.description))
    }
}

/// `--thp`: THP for the workers' anonymous memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Thp {
    /// Leave the system setting alone
    Keep,
    /// Disable THP for the worker (PR_SET_THP_DISABLE, once): every fault is a base-page fault
    Never,
    /// madvise(MADV_HUGEPAGE) each anonymous mapping
    Always,
}

/// `--kernel-count`: where the kernel's per-worker fault count comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KernelCount {
    /// The task's minor-fault counter (wait4 rusage ru_minflt, minus its value at ready),
    /// which the kernel keeps anyway: nothing is added to the fault path.
    Minflt,
    /// perf software counters (page-faults with kernel faults included, task-clock, context
    /// switches, CPU migrations), as `perf stat` counts them. Each fault also pays for the
    /// perf event: 7.5% of the anon fault rate on the development machine, which pulls
    /// baseline/child ratios toward 100%.
    Perf,
}
