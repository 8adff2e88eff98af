//! One function per subcommand (but `man` and `completions`, which main.rs writes from clap's
//! command): each ties the layers below together and answers its `Outcome`, which main.rs
//! turns into the exit code.

use std::path::Path;

use anyhow::{Context, Result};

use crate::cgroup::{self, BaseSpec, Version, VersionChoice};
use crate::compare;
use crate::error::{self, Error};
use crate::export::{self, outputs::Outputs};
use crate::options::RunOptions;
use crate::output;
use crate::output::progress::TerminalProgress;
use crate::report::Report;
use crate::results::{self, RunFile};
use crate::run;
use crate::session;
use crate::sink::{self, OutputPath, Sink};
use crate::workload;

/// How a subcommand that ran to its end ended; what went wrong on the way is already said on
/// stderr. An error instead says why it could not run to its end.
pub enum Outcome {
    /// Everything asked was done.
    Clean,
    /// It ended, but not all was done: a slice, an output or the removal failed (a run),
    /// something was kept (`cleanup`), or a base is unusable (`env`).
    Incomplete,
    /// A stop signal ended a run, or came while it wrote the results, which it wrote as said.
    Stopped { signal: i32 },
}

impl Outcome {
    /// Clean when `done`, else incomplete.
    fn clean_if(done: bool) -> Outcome {
        if done { Outcome::Clean } else { Outcome::Incomplete }
    }
}

/// The main job: measure every placement, print the table, write the files asked for.
///
/// Once anything is measured, nothing that goes wrong afterwards (a closed stdout or stderr, a
/// cgroup that cannot be removed, one file that cannot be written) loses the other results.
pub fn main_job(options: &RunOptions, allowed_cpus: &[usize]) -> Result<Outcome> {
    let plan = &options.plan;
    run::require_root("measuring", "to create cgroups and move processes; run it with sudo")?;
    let detected = cgroup::detect()?;
    if let Ok(hierarchy) = detected.memory_hierarchy(plan.version) {
        cgroup::base::refuse_read_only(&hierarchy, &plan.base)?;
    }
    if plan.base == BaseSpec::New
        && cgroup::base::systemd_manages()
        && detected.memory_hierarchy(plan.version)?.version == Version::V2
    {
        return Err(in_delegated_scope());
    }
    // Outputs are resolved and opened before anything is created, so a bad path costs nothing.
    let settings = export::Settings { per_cpu: options.per_cpu };
    let mut outputs = Outputs::open(&options.outputs, plan, settings)?;
    if plan.profile {
        // Before anything is created: a machine without perf events (or without the right to
        // sample) says so in one line.
        crate::measure::sampling::available().map_err(|e| {
            anyhow::anyhow!(
                "--profile: this machine does not let faultscale sample CPUs ({e}); run as root with perf events (perf_event_paranoid, CAP_PERFMON), or drop --profile"
            )
        })?;
    }
    let unit = workload::shape(&plan.workload_settings(None)).unit.name();
    let mut progress = TerminalProgress::new(options.quiet, unit);
    run::signals::install_for_run();
    // After every slice the files on disk hold everything measured so far, run_complete=false.
    let report = session::run(plan, &detected, allowed_cpus, &mut progress, &mut |report| outputs.checkpoint(report))?;
    run::signals::measuring_ended();
    drop(progress);
    for warning in &report.warnings {
        say!("faultscale: warning: {warning}");
    }
    if options.verbose {
        for warning in &report.slice_warnings {
            say!("faultscale: slice: {warning}");
        }
    }
    if !options.quiet {
        print_table(options, &report, outputs.share_stdout());
    }
    let any_output = outputs.any();
    let write_failed = !outputs.write(&report);
    if report.interrupted.is_none()
        && let Some(signal) = run::signals::received()
    {
        // After the measuring: the outputs are as said above, each written whole or named.
        say!(
            "faultscale: {} while writing the results; each output not named in an error above is complete",
            Error::Interrupted(signal)
        );
        return Ok(Outcome::Stopped { signal });
    }
    // Where the measurements went: the table, or an output. With -q and none, or none written
    // whole, "the measurements are written" beside a removal error was untrue.
    let kept = if report.measurements.is_empty() {
        Kept::Nothing
    } else if write_failed {
        Kept::Partly
    } else if !options.quiet || any_output {
        Kept::Written
    } else {
        Kept::Nothing
    };
    Ok(outcome(&report, write_failed, kept))
}

/// The most CPUs faultscale can pin on: a cpu_set_t names CPU_SETSIZE of them, as `--cpus`
/// checks.
const MOST_CPUS: usize = libc::CPU_SETSIZE as usize;

/// `--check-args CPUS`: the run's arguments checked as `main_job` checks them, for a machine
/// whose CPUs are 0..CPUS (a guest not yet booted), and nothing else done: clean, or the
/// user's input refused.
pub fn check_args(args: &crate::cli::RunArgs, cpus: usize) -> Result<Outcome> {
    if cpus == 0 {
        return Err(error::usage(anyhow::anyhow!("--check-args 0: give the CPU count of the machine that will run")));
    }
    // The checks build per-CPU lists: a count past what a run could pin on is refused before
    // they allocate for it (2^64 - 1 aborted, 10^8 took 2.5 GB).
    if cpus > MOST_CPUS {
        return Err(error::usage(anyhow::anyhow!(
            "--check-args {cpus}: faultscale pins on at most {MOST_CPUS} CPUs (CPU_SETSIZE); give the CPU count of the machine that will run"
        )));
    }
    RunOptions::from_args(args, &(0..cpus).collect::<Vec<_>>()).map_err(error::usage)?;
    Ok(Outcome::Clean)
}

/// Where a run's measurements are, said beside an error removing its cgroups.
enum Kept {
    Written,
    Partly,
    Nothing,
}

/// The table, on stdout; with an output on stdout (-, /dev/stdout) on stderr, so stdout stays
/// parseable. A table nobody reads (`| true`) is no reason to lose the files.
fn print_table(options: &RunOptions, report: &Report, stdout_taken: bool) {
    let printed = if stdout_taken {
        export::table::write(&mut std::io::stderr(), report)
    } else {
        export::table::write(&mut std::io::stdout().lock(), report)
    };
    if let Err(e) = printed {
        let files_asked = !options.outputs.is_empty() || options.plan.profile_dir.is_some();
        match files_asked {
            true => say!("faultscale: warning: the table could not be printed ({e:#}); the files are written"),
            false => say!(
                "faultscale: warning: the table could not be printed ({e:#}) and no output file was asked for (--csv, --json): the results are lost"
            ),
        }
    }
}

/// Stopped after a stop signal, incomplete after a failed slice, removal or write, else clean;
/// each said.
fn outcome(report: &Report, write_failed: bool, kept: Kept) -> Outcome {
    if let Some(e) = &report.removal_error {
        match kept {
            Kept::Written => say!("faultscale: error: the measurements are written, but {e}"),
            Kept::Partly => {
                say!("faultscale: error: the measurements are in each output not named in an error above, but {e}")
            }
            Kept::Nothing => {
                say!("faultscale: error: no measurement was kept (-q and no output, or none measured); {e}")
            }
        }
    }
    if let Some(signal) = report.interrupted {
        match report.measurements.len() {
            0 => say!("faultscale: {}; no slice completed, nothing was measured", Error::Interrupted(signal)),
            done if write_failed => say!(
                "faultscale: {}; the {} measured, marked run_complete=false (those of the round it cut short also round_complete=false, in no figure), are in each output not named in an error above",
                Error::Interrupted(signal),
                crate::text::plural(done, "slice")
            ),
            done => say!(
                "faultscale: {}; wrote the {} measured, marked run_complete=false (those of the round it cut short also round_complete=false, in no figure)",
                Error::Interrupted(signal),
                crate::text::plural(done, "slice")
            ),
        }
        return Outcome::Stopped { signal };
    }
    for failure in &report.failures {
        say!(
            "faultscale: error: {} {}: {}",
            failure.placement.name,
            report.plan.slice_name(failure.round),
            failure.reason
        );
    }
    Outcome::clean_if(report.failures.is_empty() && report.removal_error.is_none() && !write_failed)
}

/// `--base new` where systemd manages the cgroup tree: its delegation rules forbid making
/// cgroups inside its slices behind its back, so faultscale asks it for a delegated transient
/// scope of its own (`systemd-run --scope -p Delegate=yes`) and runs again in it with
/// `--base self`. Returns only if that could not be started.
fn in_delegated_scope() -> anyhow::Error {
    use std::os::unix::process::CommandExt;
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    for index in 0..args.len() {
        if args[index] == "--base=new" {
            args[index] = "--base=self".into();
        } else if args[index] == "--base" && args.get(index + 1).is_some_and(|a| a == "new") {
            args[index + 1] = "self".into();
        }
    }
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return anyhow::anyhow!("--base new: finding faultscale's own path for systemd-run: {e}"),
    };
    let error = std::process::Command::new("systemd-run")
        .args(["--scope", "-p", "Delegate=yes", "--quiet", "--collect", "--"])
        .arg(exe)
        .args(args)
        .exec();
    anyhow::anyhow!(
        "--base new: starting systemd-run for a delegated scope: {error}; install systemd-run or use --base self in a delegated cgroup"
    )
}

pub fn env(version: VersionChoice, base: &str) -> Result<Outcome> {
    Ok(Outcome::clean_if(output::env::print(version, base)?))
}

pub fn profiles(name: Option<&str>, version: VersionChoice) -> Result<Outcome> {
    match name {
        None => output::profiles::list()?,
        Some(name) => output::profiles::show(name, version)?,
    }
    Ok(Outcome::Clean)
}

/// `tmpdir`: where to look for dead runs' file directories; without it, every workload's
/// default (page_fault2/3 and fallocate1 put theirs in /dev/shm, the others in /tmp).
pub fn cleanup(dry_run: bool, version: VersionChoice, base: &str, tmpdir: Option<&str>) -> Result<Outcome> {
    let cgroups_clean = output::cleanup::run(dry_run, version, base)?;
    let dirs = match tmpdir {
        Some(dir) => vec![dir],
        None => workload::default_tmpdirs(),
    };
    let mut files_clean = true;
    for dir in dirs {
        files_clean &= output::cleanup::run_directories(dry_run, Path::new(dir));
    }
    Ok(Outcome::clean_if(cgroups_clean && files_clean))
}

/// A result file read back (one that mixes runs is refused as the user's input, by `results`).
fn load(path: &str) -> Result<RunFile> {
    let mut file = RunFile::load(Path::new(path))?;
    // A checkpoint is a live run's, or one left by a run that never finished it.
    if file.state == Some(results::FileState::Running) {
        file.writer_alive = sink::written_by_live_run(Path::new(path));
    }
    Ok(file)
}

/// Two runs' settings that differ, refused (the user's pairing, exit 2) unless --force; with
/// it, one warning naming both files and what differs.
fn settings_agree(a: &RunFile, b: &RunFile, force: bool) -> Result<Vec<String>> {
    let settings = compare::setting_differences(a, b);
    if !settings.is_empty() && !force {
        return Err(error::usage(anyhow::anyhow!(
            "{} vs {}: rows measured with different settings cannot be compared ({}); rerun alike, or --force",
            a.name,
            b.name,
            settings.join("; ")
        )));
    }
    // With --force, one warning naming both files, as the refusal does.
    Ok(match settings.is_empty() {
        true => Vec::new(),
        false => vec![format!(
            "{} vs {}: rows measured with different settings ({}), compared as --force asks: the change mixes their effect into the kernel's",
            a.name,
            b.name,
            settings.join("; ")
        )],
    })
}

/// One side of `compare`: a file, or several runs' files joined by commas (a path that is a
/// file as it stands is one file, commas and all). The runs of a side must be of one setting
/// and be other runs.
fn load_side(text: &str, force: bool) -> Result<Vec<RunFile>> {
    let paths: Vec<&str> = match Path::new(text).exists() {
        true => vec![text],
        false => text.split(',').collect(),
    };
    // An empty part (`a.json,,b.json`, a trailing comma, an unset variable) is a run lost
    // without a word.
    if paths.len() > 1 && paths.iter().any(|p| p.is_empty()) {
        return Err(error::usage(anyhow::anyhow!(
            "compare {text:?}: an empty file name between commas; give FILE or FILE,FILE,... with no empty part"
        )));
    }
    let side: Vec<RunFile> = paths.iter().map(|path| load(path)).collect::<Result<_>>()?;
    let Some(first) = side.first() else {
        return Err(error::usage(anyhow::anyhow!("compare {text:?}: no file named; give FILE or FILE,FILE,...")));
    };
    for (index, other) in side.iter().enumerate().skip(1) {
        settings_agree(first, other, force)?;
        if let Some(differ) = compare::side_rows_differ(first, other) {
            return Err(error::usage(anyhow::anyhow!("{differ}")));
        }
        if let Some(twice) =
            side[..index].iter().find(|earlier| earlier.run_id.is_some() && earlier.run_id == other.run_id)
        {
            return Err(error::usage(anyhow::anyhow!(
                "{} and {} hold the same run: a side's runs are counted as other runs; give each once",
                twice.name,
                other.name
            )));
        }
    }
    Ok(side)
}

pub fn compare(base: &str, new: &[String], format: export::Format, force: bool) -> Result<Outcome> {
    let base = load_side(base, force)?;
    let mut changes = Vec::new();
    let mut levels = Vec::new();
    // Each warning once: the base's own are the same beside every new file.
    let mut warned = std::collections::BTreeSet::new();
    for text in new {
        let side = load_side(text, force)?;
        let file = &side[0];
        // A run on both sides (unless each side is that one run, which is warned of) counts
        // for both: every change is pulled toward zero.
        if base.len() > 1 || side.len() > 1 {
            for new_run in &side {
                if let Some(twice) = base.iter().find(|b| b.run_id.is_some() && b.run_id == new_run.run_id) {
                    return Err(error::usage(anyhow::anyhow!(
                        "{} and {} hold the same run, one on each side, where it would count for both and pull every change toward zero: give each run to one side (a file against itself alone is allowed, as a check of the file, and warned of)",
                        twice.name,
                        new_run.name
                    )));
                }
            }
        }
        // Every pair across the sides; what the first two differ in (with --force) is said.
        let settings = settings_agree(&base[0], file, force)?;
        for (b, n) in base.iter().flat_map(|b| side.iter().map(move |n| (b, n))).skip(1) {
            settings_agree(b, n, force)?;
        }
        for warning in compare::side_warnings(&base, &side).into_iter().chain(settings) {
            if warned.insert(warning.clone()) {
                say!("faultscale: warning: {warning}");
            }
        }
        changes.extend(compare::compare(&base, &side));
        // Said under every new file's rows: with several, each line names its file.
        let several = new.len() > 1;
        let named = |line: String| if several { format!("{}: {line}", file.name) } else { line };
        levels.extend(compare::level_changes(&base, &side).into_iter().map(named));
    }
    // Files of other workloads (or modes, task counts, placements) are the user's pairing,
    // as files of other settings are.
    if changes.is_empty() {
        return Err(error::usage(anyhow::anyhow!(
            "no rows match between the files (workload, mode, tasks and placement must agree)"
        )));
    }
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    export::comparison(&mut out, &changes, format)?;
    // The per-level cost is one figure per run, not a row: said under the table (a paragraph
    // of markdown); CSV on stdout stays CSV, so there it goes to stderr.
    match format {
        export::Format::Table => levels.iter().try_for_each(|line| writeln!(out, "{line}"))?,
        export::Format::Markdown if !levels.is_empty() => writeln!(out, "\n{}", levels.join("  \n"))?,
        export::Format::Markdown => {}
        export::Format::Csv => levels.iter().for_each(|line| say!("faultscale: {line}")),
    }
    Ok(Outcome::Clean)
}

pub fn plot(file: &str, output: &str, chart: export::plot::Chart) -> Result<Outcome> {
    let run = load(file)?;
    if run.duplicates > 0 {
        say!("faultscale: warning: {}", results::duplicates_note(&run));
    }
    for note in results::trimmed_tail_notes(&run) {
        say!("faultscale: warning: {note}");
    }
    if run.overran > 0 {
        say!(
            "faultscale: warning: {}: {} slice(s) overran their time (stopped or starved) and are left out, as in the run's own table",
            run.name,
            run.overran
        );
    }
    // -o follows the rules of every output: a read-only file, a directory or a FIFO without a
    // reader refused before drawing, the chart written whole or not at all.
    let format = export::plot::format_of(Path::new(output)).map_err(error::usage)?;
    let sink = Sink::open("-o", &OutputPath::File(output.into())).map_err(error::usage)?;
    sink.refuse_input("the file being drawn", Path::new(file)).map_err(error::usage)?;
    // Drawn first in a directory of its own (made afresh, mode 0700: no link planted in /tmp
    // can redirect it), then copied into the output.
    let private = std::env::temp_dir().join(format!(
        "faultscale-plot-{}-{}",
        std::process::id(),
        crate::measure::clock::monotonic_ns()
    ));
    std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700)
        .create(&private)
        .with_context(|| format!("making {}", private.display()))?;
    let scratch = private.join(format!("chart.{format}"));
    let drawn = export::plot::plot(&run, chart, &scratch);
    let bytes = drawn.as_ref().ok().map(|_| std::fs::read(&scratch));
    let _ = std::fs::remove_dir_all(&private);
    let (drawn, bytes) = (drawn?, bytes.expect("drawn").with_context(|| format!("reading {}", scratch.display()))?);
    sink.write_with(|out| Ok(out.write_all(&bytes)?))?;
    say!("faultscale: wrote {output} ({drawn:?} chart)");
    let left_out = export::plot::left_out(&run, drawn);
    if !left_out.is_empty() {
        say!(
            "faultscale: warning: the depth chart draws the baseline, child and nested:N only (plain depth steps): {} left out; --chart bars draws every placement",
            left_out.join(", ")
        );
    }
    Ok(Outcome::Clean)
}
