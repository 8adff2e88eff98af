//! One function per subcommand: each ties the layers below together and answers an exit code.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cgroup::{self, BaseSpec, Version, VersionChoice};
use crate::compare;
use crate::export;
use crate::options::RunOptions;
use crate::output;
use crate::output::progress::TerminalProgress;
use crate::report::Report;
use crate::results::{self, RunFile};
use crate::run::{self, Interrupted};
use crate::session;
use crate::sink::{self, OutputPath, Sink};
use crate::usage;
use crate::workload;

/// The main job: measure every placement, print the table, write the files asked for.
///
/// Once anything is measured, nothing that goes wrong afterwards (a closed stdout or stderr, a
/// cgroup that cannot be removed, one file that cannot be written) loses the other results.
pub fn main_job(options: &RunOptions, allowed_cpus: &[usize]) -> Result<ExitCode> {
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
    let mut outputs = Outputs::open(options)?;
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
            Interrupted(signal)
        );
        return Ok(ExitCode::from(128 + signal as u8));
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
    Ok(exit_status(&report, write_failed, kept))
}

/// The most CPUs faultscale can pin on: a cpu_set_t names CPU_SETSIZE of them, as `--cpus`
/// checks.
const MOST_CPUS: usize = libc::CPU_SETSIZE as usize;

/// `--check-args CPUS`: the run's arguments checked as `main_job` checks them, for a machine
/// whose CPUs are 0..CPUS (a guest not yet booted), and nothing else done: exit 0 or 2.
pub fn check_args(args: &crate::cli::RunArgs, cpus: usize) -> Result<ExitCode> {
    if cpus == 0 {
        return Err(usage::usage(anyhow::anyhow!("--check-args 0: give the CPU count of the machine that will run")));
    }
    // The checks build per-CPU lists: a count past what a run could pin on is refused before
    // they allocate for it (2^64 - 1 aborted, 10^8 took 2.5 GB).
    if cpus > MOST_CPUS {
        return Err(usage::usage(anyhow::anyhow!(
            "--check-args {cpus}: faultscale pins on at most {MOST_CPUS} CPUs (CPU_SETSIZE); give the CPU count of the machine that will run"
        )));
    }
    RunOptions::from_args(args, &(0..cpus).collect::<Vec<_>>()).map_err(usage::usage)?;
    Ok(ExitCode::SUCCESS)
}

/// Where a run's measurements are, said beside an error removing its cgroups.
enum Kept {
    Written,
    Partly,
    Nothing,
}

/// One file a run writes, in its format.
struct Output {
    format: &'static dyn export::Exporter,
    sink: Sink,
    /// A checkpoint put slices in it, so the final write must replace them even when a stop
    /// signal left no round complete.
    checkpointed: bool,
}

/// The files a run writes: opened before it starts, rewritten after every slice, written whole
/// at the end.
struct Outputs {
    files: Vec<Output>,
    settings: export::Settings,
    profile_dir: Option<std::path::PathBuf>,
    /// The lock that marks --profile-dir as this run's (`claim_directory`), held to the end.
    _profile_claim: Option<std::fs::File>,
    checkpoint_failed: bool,
    /// When the last checkpoint was written and how long it took: checkpoints are spaced so
    /// that writing them costs at most 1/CHECKPOINT_SHARE of the run (a file rewritten after
    /// each of a thousand 0.1 s slices took longer than the slices: 83 s for 30 s measured).
    last_checkpoint: Option<(std::time::Instant, std::time::Duration)>,
}

/// Checkpoints come at most every 2 s, and at most one part in this of the run's time goes
/// to writing them.
const CHECKPOINT_SHARE: u32 = 100;

impl Outputs {
    fn open(options: &RunOptions) -> Result<Self> {
        let mut files = Vec::new();
        for (format, path) in &options.outputs {
            let sink = Sink::open(&format!("--{}", format.option()), path).map_err(usage::usage)?;
            for profile in options.plan.placements.iter().filter_map(|p| p.profile.as_deref()) {
                sink.refuse_input(&format!("the --cgroup profile {profile}"), Path::new(profile))
                    .map_err(usage::usage)?;
            }
            refuse_profile_files(options, &sink).map_err(usage::usage)?;
            files.push(Output { format: *format, sink, checkpointed: false });
        }
        Sink::check_distinct(&mut files.iter_mut().map(|f| &mut f.sink).collect::<Vec<_>>()).map_err(usage::usage)?;
        Ok(Outputs {
            files,
            settings: export::Settings { per_cpu: options.per_cpu },
            profile_dir: options.plan.profile_dir.clone(),
            _profile_claim: match &options.plan.profile_dir {
                Some(dir) => sink::claim_directory(dir)
                    .map_err(|e| usage::usage(anyhow::anyhow!("--profile-dir {}: {e}", dir.display())))?,
                None => None,
            },
            checkpoint_failed: false,
            last_checkpoint: None,
        })
    }

    /// Whether any output file was asked for.
    fn any(&self) -> bool {
        !self.files.is_empty()
    }

    /// Whether an output writes to standard output (`-`, /dev/stdout, the same terminal).
    fn share_stdout(&self) -> bool {
        self.files.iter().any(|f| f.sink.shares_stdout())
    }

    /// Every file rewritten with the report so far; a file that cannot be is written at the end.
    fn checkpoint(&mut self, report: &Report) {
        let now = std::time::Instant::now();
        if let Some((at, took)) = self.last_checkpoint
            && now.duration_since(at) < (took * CHECKPOINT_SHARE).max(std::time::Duration::from_secs(2))
        {
            return;
        }
        let settings = self.settings;
        let mut errors = Vec::new();
        for file in &mut self.files {
            match file.sink.checkpoint(|out| file.format.write(out, report, &settings)) {
                Ok(()) => file.checkpointed = true,
                Err(e) => errors.push(e),
            }
        }
        self.last_checkpoint = Some((std::time::Instant::now(), now.elapsed()));
        for error in errors {
            if !self.checkpoint_failed {
                say!("faultscale: warning: {error:#}; the files are written at the end instead");
            }
            self.checkpoint_failed = true;
        }
    }

    /// The final files and flame graphs; false when one could not be written (each said).
    /// A file is written when there are measurements, or when a checkpoint put slices in it
    /// that a stop signal voided: then it holds what the report holds, none of them.
    fn write(self, report: &Report) -> bool {
        let mut all_written = true;
        for file in self.files {
            if (!report.measurements.is_empty() || file.checkpointed)
                && let Err(e) = file.sink.write_with(|out| file.format.write(out, report, &self.settings))
            {
                say!("faultscale: error: {e:#}");
                all_written = false;
            }
        }
        if let Some(dir) = &self.profile_dir
            && !report.measurements.is_empty()
        {
            match export::flamegraph::write(dir, report) {
                Ok(written) => say!("faultscale: wrote {} profile files in {}", written.len(), dir.display()),
                Err(e) => {
                    say!("faultscale: error: {e:#}");
                    all_written = false;
                }
            }
        }
        all_written
    }
}

/// Refuses an output that is one of the flame-graph files --profile-dir will get: the graph
/// written at the end would replace it.
fn refuse_profile_files(options: &RunOptions, sink: &Sink) -> Result<()> {
    let Some(dir) = &options.plan.profile_dir else { return Ok(()) };
    for name in export::flamegraph::file_names(&options.plan) {
        sink.refuse_place(&format!("--profile-dir {} (its {name})", dir.display()), &dir.join(&name))?;
    }
    Ok(())
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

/// 128+signal after a stop signal, 1 after a failed slice, removal or write, else 0.
fn exit_status(report: &Report, write_failed: bool, kept: Kept) -> ExitCode {
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
            0 => say!("faultscale: {}; no slice completed, nothing was measured", Interrupted(signal)),
            done if write_failed => say!(
                "faultscale: {}; the {} measured, marked run_complete=false (those of the round it cut short also round_complete=false, in no figure), are in each output not named in an error above",
                Interrupted(signal),
                crate::text::plural(done, "slice")
            ),
            done => say!(
                "faultscale: {}; wrote the {} measured, marked run_complete=false (those of the round it cut short also round_complete=false, in no figure)",
                Interrupted(signal),
                crate::text::plural(done, "slice")
            ),
        }
        return ExitCode::from(128 + signal as u8);
    }
    for failure in &report.failures {
        say!(
            "faultscale: error: {} {}: {}",
            failure.placement.name,
            report.plan.slice_name(failure.round),
            failure.reason
        );
    }
    let clean = report.failures.is_empty() && report.removal_error.is_none() && !write_failed;
    if clean { ExitCode::SUCCESS } else { ExitCode::FAILURE }
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

pub fn env(version: VersionChoice, base: &str) -> Result<ExitCode> {
    Ok(if output::env::print(version, base)? { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

pub fn profiles(name: Option<&str>, version: VersionChoice) -> Result<ExitCode> {
    match name {
        None => output::profiles::list()?,
        Some(name) => output::profiles::show(name, version)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `tmpdir`: where to look for dead runs' file directories; without it, every workload's
/// default (page_fault2/3 and fallocate1 put theirs in /dev/shm, the others in /tmp).
pub fn cleanup(dry_run: bool, version: VersionChoice, base: &str, tmpdir: Option<&str>) -> Result<ExitCode> {
    let cgroups_clean = output::cleanup::run(dry_run, version, base)?;
    let dirs = match tmpdir {
        Some(dir) => vec![dir],
        None => workload::default_tmpdirs(),
    };
    let mut files_clean = true;
    for dir in dirs {
        files_clean &= output::cleanup::run_directories(dry_run, Path::new(dir));
    }
    Ok(if cgroups_clean && files_clean { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// A result file read back; one that mixes runs of other settings is the user's input (exit 2).
fn load(path: &str) -> Result<RunFile> {
    let mut file =
        RunFile::load(Path::new(path)).map_err(|e| if results::is_mixed(&e) { usage::usage(e) } else { e })?;
    // A checkpoint is a live run's, or one left by a run that never finished it.
    if file.state == Some(results::FileState::Running) {
        file.writer_alive = sink::written_by_live_run(Path::new(path));
    }
    Ok(file)
}

/// Two runs' settings that differ, refused (the user's pairing, exit 2) unless --force; with
/// it, what differs, to be said.
fn settings_agree(a: &RunFile, b: &RunFile, force: bool) -> Result<Vec<String>> {
    let settings = compare::setting_differences(a, b);
    if !settings.is_empty() && !force {
        return Err(usage::usage(anyhow::anyhow!(
            "{} vs {}: rows measured with different settings cannot be compared ({}); rerun alike, or --force",
            a.name,
            b.name,
            settings.join("; ")
        )));
    }
    Ok(settings)
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
        return Err(usage::usage(anyhow::anyhow!(
            "compare {text:?}: an empty file name between commas; give FILE or FILE,FILE,... with no empty part"
        )));
    }
    let side: Vec<RunFile> = paths.iter().map(|path| load(path)).collect::<Result<_>>()?;
    let Some(first) = side.first() else {
        return Err(usage::usage(anyhow::anyhow!("compare {text:?}: no file named; give FILE or FILE,FILE,...")));
    };
    for (index, other) in side.iter().enumerate().skip(1) {
        settings_agree(first, other, force)?;
        if let Some(twice) =
            side[..index].iter().find(|earlier| earlier.run_id.is_some() && earlier.run_id == other.run_id)
        {
            return Err(usage::usage(anyhow::anyhow!(
                "{} and {} hold the same run: a side's runs are counted as other runs; give each once",
                twice.name,
                other.name
            )));
        }
    }
    Ok(side)
}

pub fn compare(base: &str, new: &[String], format: export::Format, force: bool) -> Result<ExitCode> {
    let base = load_side(base, force)?;
    let mut changes = Vec::new();
    let mut levels = Vec::new();
    for text in new {
        let side = load_side(text, force)?;
        let file = &side[0];
        // A run on both sides (unless each side is that one run, which is warned of) counts
        // for both: every change is pulled toward zero.
        if base.len() > 1 || side.len() > 1 {
            for new_run in &side {
                if let Some(twice) = base.iter().find(|b| b.run_id.is_some() && b.run_id == new_run.run_id) {
                    return Err(usage::usage(anyhow::anyhow!(
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
            say!("faultscale: warning: {warning}");
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
        return Err(usage::usage(anyhow::anyhow!(
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
    Ok(ExitCode::SUCCESS)
}

pub fn plot(file: &str, output: &str, chart: export::plot::Chart) -> Result<ExitCode> {
    let run = load(file)?;
    if run.duplicates > 0 {
        say!("faultscale: warning: {}", results::duplicates_note(&run));
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
    let format = export::plot::format_of(Path::new(output)).map_err(usage::usage)?;
    let sink = Sink::open("-o", &OutputPath::File(output.into())).map_err(usage::usage)?;
    sink.refuse_input("the file being drawn", Path::new(file)).map_err(usage::usage)?;
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
    Ok(ExitCode::SUCCESS)
}
