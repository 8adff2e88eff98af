//! Figures not to trust and things the run did that the user should know, as typed values:
//! printed on stderr, kept in the JSON, compared by value (never by message text).

use std::fmt;
use std::path::PathBuf;

use crate::run::Notice;

#[derive(Debug, Clone, PartialEq)]
pub enum Warning {
    /// v2: memory was added to the base's cgroup.subtree_control for the run.
    MemoryEnabled { control: PathBuf },
    /// A profile knob with no equivalent on this cgroup version, left unset as the profile allows.
    KnobUnset { placement: String, level: usize, knob: String, value: String, version: String },
    /// usemem-file's files are on tmpfs, whose pages only swap can reclaim.
    SwapBackedFiles { tmpdir: PathBuf },
    /// Another faultscale harness runs on the machine: CPUs are shared.
    OtherRun { pid: u32 },
    /// The baseline's memcg_pgfault counts every process in the base, not only the workers.
    SharedMemcg { placement: String, cgroup_path: String, others: usize },
    /// The baseline itself reclaimed, hit a limit or stalled: its rate, and every ratio to it,
    /// carries that cost too.
    BaselineUnderPressure { placement: String, what: String },
    /// `siblings:N` with no more tasks than CPUs: no CPU switches between the cgroups, so the
    /// per-CPU charge cache is never contended and the placement measures N plain children.
    SiblingsApart { placement: String, tasks: usize, cpus: usize },
    /// More tasks than CPUs: some share a CPU on purpose.
    RoundRobin { tasks: usize, cpus: usize },
    /// A measurement could not count as asked (perf).
    Measurement(Notice),
    /// The loop's count and the kernel's fault count disagree by more than 1% (plus one
    /// iteration in flight per worker). `unit`: what the loop counts (`faults`, `pages`).
    CountsDisagree { placement: String, slice: String, loop_faults: u64, kernel_faults: u64, unit: &'static str },
    /// Under THP the loop counted several pages per kernel fault (huge pages served them):
    /// its rate and CPU cost are per page written, not per fault.
    HugePages { placement: String, pages_per_fault: f64, thp: &'static str },
    /// The rate varies over the slices by more than 5% (CV).
    Noisy { placement: String, unit: &'static str, cv_pct: f64, slices: usize },
    /// The cost per fault on CPU varies over the slices by more than 5% (CV): interference
    /// while the workers ran, which no accounting of time off the CPU removes.
    NoisyCost { placement: String, unit: &'static str, cv_pct: f64, slices: usize },
    /// Workers started further apart than 10% of the sampling interval.
    StartSkew { placement: String, slice: String, skew_us: f64 },
    /// Fixed work during which the run was stopped (Ctrl-Z): its time includes the stop.
    PausedFixedWork { placement: String, slice: String, measured_s: f64 },
    /// A slice ran longer than asked by more than 10% plus 50 ms (`run::slice::overran`):
    /// stopped (Ctrl-Z) or starved.
    Overran { placement: String, slice: String, measured_s: f64, asked_s: f64 },
    /// A worker was on its CPU less than 95% of the time (or of its share of one), and the
    /// kernel keeps no schedstat to say whether it waited or was blocked.
    CpuTaken { placement: String, slice: String, cpu: usize, share: f64, sharing: f64 },
    /// A worker was runnable but waited for its CPU over 5% of the slice beyond the share it
    /// gives up on purpose to workers placed on the same CPU (schedstat's run_delay).
    WaitedForCpu { placement: String, slice: String, cpu: usize, share: f64, sharing: f64 },
    /// The workers on a CPU were neither on it, nor runnable, nor losing it to steal over 5% of
    /// their time: blocked or stopped.
    Blocked { placement: String, slice: String, cpu: usize, share: f64, sharing: f64 },
    /// The hypervisor stole over 1% of a worker's CPU during the slice (/proc/stat steal).
    Stolen { placement: String, slice: String, cpu: usize, share: f64 },
    /// A baseline slice that counted no whole iteration while its other slices did: starved
    /// by other load, flagged overran and left out.
    Starved { placement: String, slice: String },
    /// A per-slice warning that `slices` slices of its placement had: the worst of them, said
    /// once (every one is in `Report::slice_warnings`, which --verbose prints).
    Worst { worst: Box<Warning>, slices: usize },
    /// Slices in which a worker waited for its CPU over 2% of the slice, and whether they were
    /// left out of the figures (they are while a minority).
    Disturbed { placement: String, disturbed: usize, slices: usize, left_out: bool },
    /// Counted slices of a placement, or of the baseline they pair with, without on-CPU times
    /// (no worker's schedstat or CPU clock could be read): their overhead is unknown, the
    /// throughput ratio beside it. `lacking` of `slices`, over every task count.
    OverheadUnknown { placement: String, lacking: usize, slices: usize },
    /// A placement's workers completed few whole iterations per slice (the median over its
    /// slices of their mean): the loop counts at each iteration's end, so a slice's count is off
    /// by up to one iteration, and its figures are that coarse.
    /// `tasks` in a sweep, where each task count is judged on its own.
    FewIterations { placement: String, tasks: Option<usize>, iterations: f64, slice_ms: f64, asked_ms: f64 },
    /// The overhead's plain mean (nothing trimmed) has an interval that excludes the trimmed
    /// figure the run gives: a minority of the placement's rounds at one end differ from the
    /// rest by more than noise. Percent figures; `tasks` in a sweep.
    TailsTrimmed { placement: String, tasks: Option<usize>, tail: crate::stats::TrimmedTail },
    /// Fixed work whose slices took under 0.1 s (the median): the start and stop signals weigh
    /// in, and sys, counted in 10 ms clock ticks, is coarse.
    ShortFixedWork { elapsed_ms: f64 },
    /// The control (an A/A check) came out significant: the interval does not hold on this
    /// machine now, so no verdict of this run is to be trusted.
    ControlSignificant { tasks: usize, low: f64, high: f64 },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::MemoryEnabled { control } => {
                write!(f, "enabled memory in {} for this run; it is disabled again at exit", control.display())
            }
            Warning::KnobUnset { placement, level, knob, value, version } => write!(
                f,
                "{placement}: {knob} = {value} on level {level} left unset: cgroup {version} has no equivalent (the profile allows it); this is not the published setup"
            ),
            Warning::SwapBackedFiles { tmpdir } => write!(
                f,
                "usemem-file: {} is tmpfs, whose pages are swap-backed: above a limit they are swapped or OOM-killed, not reclaimed as page cache; give --tmpdir on a disk file system (e.g. /var/tmp)",
                tmpdir.display()
            ),
            Warning::OtherRun { pid } => write!(
                f,
                "another faultscale run (pid {pid}) is running on this machine: CPUs are shared and both measurements are disturbed"
            ),
            Warning::SharedMemcg { placement, cgroup_path, others } => write!(
                f,
                "{placement}: memcg_pgfault counts every process in {cgroup_path}, where {others} other process(es) run besides faultscale; the loop and kernel counts are the workers' own"
            ),
            Warning::BaselineUnderPressure { placement, what } => write!(
                f,
                "{placement}: the baseline itself was under memory pressure ({what}): the overheads mix that into the cost per fault"
            ),
            Warning::SiblingsApart { placement, tasks, cpus } => write!(
                f,
                "{placement} at {} on {}: every worker has a CPU of its own, so no CPU switches between the sibling cgroups and the per-CPU charge cache is never shared; use --tasks above {cpus}",
                crate::text::plural(*tasks, "task"),
                crate::text::plural(*cpus, "CPU")
            ),
            Warning::RoundRobin { tasks, cpus } => {
                write!(
                    f,
                    "{tasks} tasks on {}: tasks beyond the CPUs are placed round-robin and share CPUs",
                    crate::text::plural(*cpus, "CPU")
                )
            }
            Warning::Measurement(notice) => fmt_notice(f, notice),
            Warning::CountsDisagree { placement, slice, loop_faults, kernel_faults, unit } => {
                counts_disagree(f, placement, slice, *loop_faults, *kernel_faults, unit)
            }
            Warning::HugePages { placement, pages_per_fault, thp } => write!(
                f,
                "{placement}: the loop counted {pages_per_fault:.0} pages per fault the kernel counted (--thp {thp}: huge pages served them), so its rate and CPU ns are per page written, not per fault"
            ),
            Warning::StartSkew { placement, slice, skew_us } => write!(
                f,
                "{placement} {slice}: workers started {skew_us:.0} us apart, over 10% of the sampling interval"
            ),
            Warning::PausedFixedWork { placement, slice, measured_s } => write!(
                f,
                "{placement} {slice}: the run was stopped (Ctrl-Z) during its fixed work, so its {measured_s:.2} s include the stop; its figures are flagged overran"
            ),
            Warning::Overran { placement, slice, measured_s, asked_s } => write!(
                f,
                "{placement} {slice}: measured {measured_s:.2} s for {asked_s} s asked (stopped, starved by overload or more tasks than the CPUs serve, or kept running past its end by a signal from outside); its figures are flagged overran"
            ),
            Warning::Noisy { .. }
            | Warning::NoisyCost { .. }
            | Warning::Disturbed { .. }
            | Warning::ControlSignificant { .. }
            | Warning::OverheadUnknown { .. }
            | Warning::FewIterations { .. }
            | Warning::TailsTrimmed { .. }
            | Warning::ShortFixedWork { .. }
            | Warning::Starved { .. } => self.fmt_resolution(f),
            Warning::CpuTaken { .. }
            | Warning::WaitedForCpu { .. }
            | Warning::Blocked { .. }
            | Warning::Stolen { .. } => self.fmt_time_off_cpu(f),
            Warning::Worst { worst, slices } => {
                write!(f, "{worst}; the worst of {slices} slices with this warning (--verbose names each)")
            }
        }
    }
}

/// What a measurement had to do differently, in words.
fn fmt_notice(f: &mut fmt::Formatter<'_>, notice: &Notice) -> fmt::Result {
    match notice {
        Notice::NoHardwareCounters => f.write_str(
            "cycles, instructions: not supported on this machine (perf hardware counters); software counters only",
        ),
        Notice::PerfUnavailable(error) => write!(
            f,
            "perf software counters unavailable ({error}); kernel fault counts come from the tasks' minflt (rusage) instead"
        ),
        Notice::LocksUnavailable(why) => {
            let [before, after] = LOCKS_ABSENT;
            write!(f, "{before}{why}{after}")
        }
        Notice::LocksPartial(problem) => write!(f, "--locks: {problem}"),
    }
}

/// The words around why --locks got no lock figures, in the run's warning: `compare` reads
/// the reason back from a JSON file's `warnings` (`locks_absent_reason`), so one text serves
/// both.
const LOCKS_ABSENT: [&str; 2] = ["--locks: no lock figures: ", "; the run went on without them"];

/// Why a run asked --locks and got no lock figures, where `warning` is the run's line saying
/// so; None for any other warning.
pub fn locks_absent_reason(warning: &str) -> Option<&str> {
    let [before, after] = LOCKS_ABSENT;
    warning.strip_prefix(before)?.strip_suffix(after)
}

impl Warning {
    /// For a warning about one slice: the slice's name.
    pub fn slice(&self) -> Option<&str> {
        match self {
            Warning::CountsDisagree { slice, .. }
            | Warning::StartSkew { slice, .. }
            | Warning::PausedFixedWork { slice, .. }
            | Warning::Overran { slice, .. }
            | Warning::Starved { slice, .. }
            | Warning::CpuTaken { slice, .. }
            | Warning::WaitedForCpu { slice, .. }
            | Warning::Blocked { slice, .. }
            | Warning::Stolen { slice, .. } => Some(slice),
            _ => None,
        }
    }

    /// How bad a per-slice warning's case is, to say the worst of a kind: the share of time
    /// lost, the skew, the overrun, the disagreement; 0 for the others.
    pub fn severity(&self) -> f64 {
        match self {
            Warning::CountsDisagree { loop_faults, kernel_faults, .. } => {
                loop_faults.abs_diff(*kernel_faults) as f64 / (*kernel_faults).max(1) as f64
            }
            Warning::StartSkew { skew_us, .. } => *skew_us,
            Warning::PausedFixedWork { measured_s, .. } => *measured_s,
            Warning::Overran { measured_s, asked_s, .. } => measured_s / asked_s,
            // The time it was on its CPU: the less, the worse.
            Warning::CpuTaken { share, .. } => 1.0 - share,
            Warning::WaitedForCpu { share, .. } | Warning::Blocked { share, .. } | Warning::Stolen { share, .. } => {
                *share
            }
            _ => 0.0,
        }
    }

    /// For a warning about one slice: its placement and what kind it is; None for the others.
    pub fn per_slice(&self) -> Option<(&str, &'static str)> {
        Some(match self {
            Warning::CountsDisagree { placement, .. } => (placement, "where loop and kernel counts disagreed"),
            Warning::StartSkew { placement, .. } => (placement, "where workers started apart"),
            Warning::PausedFixedWork { placement, .. } => (placement, "stopped during fixed work"),
            Warning::Overran { placement, .. } => (placement, "overran"),
            Warning::Starved { placement, .. } => (placement, "where the baseline was starved"),
            Warning::CpuTaken { placement, .. } => (placement, "where a worker was off its CPU"),
            Warning::WaitedForCpu { placement, .. } => (placement, "where a worker waited for its CPU"),
            Warning::Blocked { placement, .. } => (placement, "where workers were blocked or stopped"),
            Warning::Stolen { placement, .. } => (placement, "where the hypervisor stole a CPU"),
            _ => return None,
        })
    }

    /// Whether this says the counts of `placement` at `tasks` are too coarse to resolve its
    /// figures: few iterations a slice there, or fixed work too short anywhere.
    pub fn coarsens(&self, placement: &str, tasks: usize) -> bool {
        match self {
            Warning::FewIterations { placement: said, tasks: at, .. } => {
                said == placement && at.is_none_or(|at| at == tasks)
            }
            Warning::ShortFixedWork { .. } => true,
            _ => false,
        }
    }

    /// The warnings about what the run resolves: noise, slices counted, disturbed, counts too
    /// coarse, the control, an overhead unknown.
    fn fmt_resolution(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::Noisy { placement, unit, cv_pct, slices } => write!(
                f,
                "{placement}: {unit}/s varies {cv_pct:.1}% (CV) over {slices} slices, above 5%: the machine is noisy; ratios below that size are not resolved"
            ),
            Warning::NoisyCost { placement, unit, cv_pct, slices } => write!(
                f,
                "{placement}: CPU ns per {unit} varies {cv_pct:.1}% (CV) over {slices} slices, above 5%: interference while the workers ran (caches, SMT siblings, frequency); overheads below that size are not resolved, more slices narrow the interval"
            ),
            Warning::Starved { placement, slice } => write!(
                f,
                "{placement} {slice}: the baseline counted no whole iteration (other load starved it, or an iteration outlasts a slice): flagged overran, left out with the placements' slices of its round"
            ),
            Warning::TailsTrimmed { placement, tasks, tail } => write!(
                f,
                "{placement}{}: {}",
                tasks.map(|t| format!(" at {}", crate::text::plural(t, "task"))).unwrap_or_default(),
                tail.described()
            ),
            Warning::FewIterations { placement, tasks, iterations, slice_ms, asked_ms } => write!(
                f,
                "{placement}{}: a worker completed {iterations:.1} whole iterations of its loop per {slice_ms:.0} ms window (median) of a {asked_ms:.0} ms slice: {}; a smaller --chunk, or longer slices (fewer --slices; at one slice, a longer --duration)",
                tasks.map(|t| format!(" at {}", crate::text::plural(t, "task"))).unwrap_or_default(),
                match *iterations < 1.0 {
                    true => "most slices counted none, so its figures are not measured".to_string(),
                    false => format!(
                        "each worker's window ends at its first iteration boundary after the slice's end (an iteration is some {:.0} ms), so the windows ran {:.0}% past the slice and the crew's workers stopped up to an iteration apart",
                        slice_ms / iterations,
                        (100.0 * (slice_ms / asked_ms.max(1e-9) - 1.0)).max(0.0)
                    ),
                }
            ),
            Warning::ShortFixedWork { elapsed_ms } => write!(
                f,
                "fixed work took {elapsed_ms:.1} ms per slice (median): under 100 ms the start and stop signals weigh in, and sys is counted in 10 ms clock ticks; ask for more --iterations"
            ),

            Warning::Disturbed { placement, disturbed, slices, left_out } => write!(
                f,
                "{placement}: in {disturbed} of {slices} slices a worker waited for its CPU over 2% of the slice (other load ran there, and took its caches too); {}",
                if *left_out {
                    "they are left out of the figures"
                } else {
                    "they count (the run has too few rounds to leave any out, or they are most of its slices): the figures carry that load"
                }
            ),
            Warning::OverheadUnknown { placement, lacking, slices } if lacking == slices => write!(
                f,
                "{placement}: no on-CPU times (a worker's schedstat and CPU clock could not be read): the overhead is unknown; the throughput ratio stands beside it"
            ),
            Warning::OverheadUnknown { placement, lacking, slices } => write!(
                f,
                "{placement}: {lacking} of {slices} slices have no on-CPU times (a worker's schedstat and CPU clock could not be read): the overhead is over the other {} alone; the throughput ratio, over all, stands beside it",
                slices - lacking
            ),
            Warning::ControlSignificant { tasks, low, high } => write!(
                f,
                "the control at {} came out significant ({:.1}-{:.1}%, where it is 100% by construction): the interval does not hold on this machine now, so no verdict of this run is to be trusted; measure when the machine is quieter, or longer",
                crate::text::plural(*tasks, "task"),
                100.0 * low,
                100.0 * high
            ),
            _ => Ok(()),
        }
    }

    /// The warnings about a worker's time off its CPU, each saying what was measured.
    fn fmt_time_off_cpu(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::CpuTaken { placement, slice, cpu, share, sharing } => write!(
                f,
                "{placement} {slice}: the worker on CPU {cpu} was on it only {:.0}% of the time{}: other load, or it was blocked or stopped (this kernel keeps no schedstat to tell which)",
                100.0 * share,
                if *sharing > 1.0 { format!(" (of its 1/{sharing} share)") } else { String::new() }
            ),
            Warning::WaitedForCpu { placement, slice, cpu, share, sharing } if *sharing > 1.0 => write!(
                f,
                "{placement} {slice}: the {sharing} workers on CPU {cpu} waited for it {:.0}% of their time, beyond the {:.0}% they give each other: other load ran there (schedstat run_delay)",
                100.0 * share,
                100.0 * (sharing - 1.0) / sharing
            ),
            Warning::WaitedForCpu { placement, slice, cpu, share, .. } => write!(
                f,
                "{placement} {slice}: the worker on CPU {cpu} waited for it {:.0}% of the slice: other load ran there (schedstat run_delay)",
                100.0 * share
            ),
            Warning::Blocked { placement, slice, cpu, share, sharing } => write!(
                f,
                "{placement} {slice}: {} on CPU {cpu} {} blocked or stopped {:.0}% of {} (not runnable: reclaim, I/O, a lock, or a stop signal); the cost per fault on CPU leaves that time out",
                if *sharing > 1.0 { format!("the {sharing} workers") } else { "the worker".into() },
                if *sharing > 1.0 { "were" } else { "was" },
                100.0 * share,
                if *sharing > 1.0 { "their time" } else { "the slice" }
            ),
            Warning::Stolen { placement, slice, cpu, share } => write!(
                f,
                "{placement} {slice}: the hypervisor stole {:.1}% of CPU {cpu} during the slice (/proc/stat steal, counted in clock ticks)",
                100.0 * share
            ),
            _ => Ok(()),
        }
    }
}

impl serde::Serialize for Warning {
    /// The JSON keeps the sentence the terminal shows.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// The loop's count beside the kernel's. Pages written to a file on disk (ext4, xfs): the page
/// cache's large folios and fault-around map several pages per fault, so fewer faults than
/// pages is the kernel doing its job, and how many is the figure worth knowing.
fn counts_disagree(
    f: &mut fmt::Formatter<'_>,
    placement: &str,
    slice: &str,
    loop_faults: u64,
    kernel_faults: u64,
    unit: &str,
) -> fmt::Result {
    if unit == "pages" && loop_faults > kernel_faults {
        return write!(
            f,
            "{placement} {slice}: the loop counted {loop_faults} pages, the kernel took {kernel_faults} faults: {per_fault:.1} pages per fault, mapped several at a time by fault-around (large page-cache folios on this filesystem); rates and CPU ns are per page, as will-it-scale counts them (a fault's CPU ns: {per_fault:.1}x those)",
            per_fault = loop_faults as f64 / kernel_faults as f64
        );
    }
    write!(
        f,
        "{placement} {slice}: loop counted {loop_faults} {unit}, the kernel {kernel_faults} faults ({:+.2}%): the loop is not the only source of faults, or faults are missed",
        100.0 * (loop_faults as f64 - kernel_faults as f64) / kernel_faults as f64
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn why_locks_gave_no_figures_reads_back_from_the_warning() {
        let why = "perf_event_open of lock:contention_begin refused: Permission denied (os error 13)";
        let said = Warning::Measurement(Notice::LocksUnavailable(why.into())).to_string();
        assert_eq!(locks_absent_reason(&said), Some(why));
        let other = Warning::Measurement(Notice::PerfUnavailable("EACCES".into())).to_string();
        assert_eq!(locks_absent_reason(&other), None);
    }

    #[test]
    fn one_task_is_one_task() {
        let apart = Warning::SiblingsApart { placement: "siblings:2".into(), tasks: 1, cpus: 2 };
        assert!(apart.to_string().starts_with("siblings:2 at 1 task on 2 CPUs"), "{apart}");
        let control = Warning::ControlSignificant { tasks: 1, low: 1.01, high: 1.02 };
        assert!(control.to_string().starts_with("the control at 1 task came out"), "{control}");
        let control = Warning::ControlSignificant { tasks: 4, low: 1.01, high: 1.02 };
        assert!(control.to_string().starts_with("the control at 4 tasks came out"), "{control}");
        let unknown = Warning::OverheadUnknown { placement: "child".into(), lacking: 3, slices: 3 };
        assert!(unknown.to_string().starts_with("child: no on-CPU times"), "{unknown}");
        assert!(unknown.to_string().contains("the overhead is unknown; the throughput ratio stands beside it"));
        let some = Warning::OverheadUnknown { placement: "child".into(), lacking: 1, slices: 3 };
        assert!(some.to_string().contains("1 of 3 slices have no on-CPU times"), "{some}");
        assert!(some.to_string().contains("the overhead is over the other 2 alone"), "{some}");
    }

    #[test]
    fn warnings_read_as_sentences_with_their_figures() {
        let noisy = Warning::Noisy { placement: "child".into(), unit: "faults", cv_pct: 7.34, slices: 3 };
        assert!(noisy.to_string().starts_with("child: faults/s varies 7.3% (CV) over 3 slices"));
        let shared =
            Warning::CpuTaken { placement: "root".into(), slice: "slice 2".into(), cpu: 1, share: 0.4, sharing: 2.0 };
        assert_eq!(
            shared.to_string(),
            "root slice 2: the worker on CPU 1 was on it only 40% of the time (of its 1/2 share): other load, or it was blocked or stopped (this kernel keeps no schedstat to tell which)"
        );
        let waited = Warning::WaitedForCpu {
            placement: "child".into(),
            slice: "slice 1".into(),
            cpu: 0,
            share: 0.62,
            sharing: 2.0,
        };
        assert_eq!(
            waited.to_string(),
            "child slice 1: the 2 workers on CPU 0 waited for it 62% of their time, beyond the 50% they give each other: other load ran there (schedstat run_delay)"
        );
        let counts = Warning::CountsDisagree {
            placement: "child".into(),
            slice: "slice 1".into(),
            loop_faults: 990,
            kernel_faults: 1000,
            unit: "faults",
        };
        assert!(counts.to_string().contains("(-1.00%)"), "{counts}");
        // Pages written to an ext4 file, 11.8 a fault: fault-around named, with the figure.
        let around = Warning::CountsDisagree {
            placement: "base".into(),
            slice: "slice 1".into(),
            loop_faults: 3_346_596,
            kernel_faults: 284_430,
            unit: "pages",
        };
        let said = around.to_string();
        assert!(said.contains("counted 3346596 pages, the kernel took 284430 faults: 11.8 pages per fault"), "{said}");
        assert!(said.contains("fault-around") && !said.contains("other sources"), "{said}");
    }
}
