//! faultscale: page-fault scalability under memory cgroups.

mod benchmark;
mod cgroup;
mod cli;
mod compare;
mod environment;
mod export;
mod measure;
mod options;
mod output;
mod profile;
mod results;
mod run;
mod stats;
mod workload;

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Parser;

use cli::{Cli, Command};
use options::RunOptions;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(), // --help, --version
        Err(e) => {
            eprintln!("faultscale: error: {}", one_line(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    run::signals::install();
    let result = match cli.command {
        None => run_benchmark(&cli.run),
        Some(Command::Env { cgroup_version, base }) => print_env(cgroup_version, &base),
        Some(Command::Profiles { name, cgroup_version }) => show_profiles(name.as_deref(), cgroup_version),
        Some(Command::Compare { base, new, format }) => run_compare(&base, &new, format),
        Some(Command::Plot { file, output, chart }) => run_plot(&file, &output, chart),
        Some(Command::Completions { shell }) => {
            clap_complete::generate(
                shell,
                &mut <Cli as clap::CommandFactory>::command(),
                "faultscale",
                &mut std::io::stdout(),
            );
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Man) => clap_mangen::Man::new(<Cli as clap::CommandFactory>::command())
            .render(&mut std::io::stdout())
            .map(|_| ExitCode::SUCCESS)
            .map_err(Into::into),
        Some(Command::Cleanup { dry_run, cgroup_version, base }) => cleanup(dry_run, cgroup_version, &base),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            if let Some(run::Interrupted(signal)) = e.downcast_ref::<run::Interrupted>() {
                eprintln!("faultscale: {}; workers stopped, cgroups removed", run::Interrupted(*signal));
                return ExitCode::from(128 + *signal as u8);
            }
            // `faultscale man | head`: a closed pipe is the reader's choice, not an error.
            if e.chain().any(|cause| {
                cause.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            // One line: the context chain joined, as ripgrep does.
            eprintln!("faultscale: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// clap's usage errors span several lines; the message, the valid values and a hint fit on one.
fn one_line(message: &str) -> String {
    let parts: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("Usage:") && !line.starts_with("For more information"))
        .map(|line| line.strip_prefix("error: ").unwrap_or(line))
        .collect();
    format!("{} (see --help)", parts.join(" "))
}

fn allowed_cpus() -> Result<Vec<usize>> {
    let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0))?;
    Ok((0..nix::sched::CpuSet::count()).filter(|&cpu| set.is_set(cpu).unwrap_or(false)).collect())
}

fn require_root(what: &str) -> Result<()> {
    if !nix::unistd::geteuid().is_root() {
        bail!("{what} needs root to create cgroups and move processes; run it with sudo");
    }
    Ok(())
}

fn run_benchmark(args: &cli::RunArgs) -> Result<ExitCode> {
    let allowed = allowed_cpus()?;
    let options = RunOptions::from_args(args, &allowed)?;
    require_root("measuring")?;
    // Output files are opened before anything is created, so a bad path costs nothing.
    let csv_sink = options.csv.as_ref().map(|path| export::Sink::open("--csv", path)).transpose()?;
    let json_sink = options.json.as_ref().map(|path| export::Sink::open("--json", path)).transpose()?;
    let samples_sink =
        options.samples_csv.as_ref().map(|path| export::Sink::open("--samples-csv", path)).transpose()?;

    let report = benchmark::run(&options, &allowed)?;
    for warning in &report.warnings {
        eprintln!("faultscale: warning: {warning}");
    }
    if !options.quiet {
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        // With an output on stdout (-) the table goes to stderr, so stdout stays parseable.
        let stdout_taken = [&options.csv, &options.json, &options.samples_csv]
            .iter()
            .any(|o| matches!(o, Some(options::OutputPath::Stdout)));
        if stdout_taken {
            export::table::write(&mut std::io::stderr(), &report, &options)?;
        } else {
            export::table::write(&mut out, &report, &options)?;
        }
    }
    if let Some(sink) = csv_sink {
        let rows = export::csv::rows(&report, options.workload.name(), options.mode.name(), options.per_cpu);
        if !rows.is_empty() {
            sink.write_with(|out| export::csv::write(out, &rows))?;
        }
    }
    if let Some(sink) = json_sink
        && !report.measurements.is_empty()
    {
        sink.write_with(|out| export::json::write(out, &report, &options))?;
    }
    if let Some(sink) = samples_sink {
        let per_iteration = workload::shape(&options.workload_settings(None)).per_iteration;
        let rows = export::csv::sample_rows(&report, per_iteration);
        if !rows.is_empty() {
            sink.write_with(|out| export::csv::write(out, &rows))?;
        }
    }
    if let Some(signal) = report.interrupted {
        eprintln!(
            "faultscale: {}; wrote the {} completed measurements, marked run_complete=false",
            run::Interrupted(signal),
            report.measurements.len()
        );
        return Ok(ExitCode::from(128 + signal as u8));
    }
    if !report.failures.is_empty() {
        for failure in &report.failures {
            eprintln!(
                "faultscale: error: {} repetition {}: {}",
                failure.placement.name, failure.repetition, failure.reason
            );
        }
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_env(version: cgroup::VersionChoice, base: &str) -> Result<ExitCode> {
    Ok(if output::env::print(version, base)? { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn run_compare(base: &str, new: &[String], format: compare::Format) -> Result<ExitCode> {
    let base = results::RunFile::load(std::path::Path::new(base))?;
    let mut changes = Vec::new();
    for path in new {
        let file = results::RunFile::load(std::path::Path::new(path))?;
        for warning in compare::differences(&base, &file) {
            eprintln!("faultscale: warning: {warning}");
        }
        changes.extend(compare::compare(&base, &file));
    }
    if changes.is_empty() {
        bail!("no rows match between the files (workload, mode, tasks and placement must agree)");
    }
    compare::write(&mut std::io::stdout().lock(), &changes, format)?;
    Ok(ExitCode::SUCCESS)
}

fn run_plot(file: &str, output: &str, chart: export::plot::Chart) -> Result<ExitCode> {
    let run = results::RunFile::load(std::path::Path::new(file))?;
    let drawn = export::plot::plot(&run, chart, std::path::Path::new(output))?;
    eprintln!("faultscale: wrote {output} ({drawn:?} chart)");
    Ok(ExitCode::SUCCESS)
}

fn show_profiles(name: Option<&str>, version: cgroup::VersionChoice) -> Result<ExitCode> {
    let Some(name) = name else {
        println!("{:<10} {:>5}  {:<28} description", "name", "depth", "knobs");
        for (shipped, _) in profile::SHIPPED {
            let p = profile::load(shipped)?;
            let knobs: Vec<String> = p
                .levels
                .iter()
                .enumerate()
                .flat_map(|(i, level)| level.iter().map(move |k| format!("L{}:{}={}", i + 1, k.name, k.value_text())))
                .collect();
            let knobs = if knobs.is_empty() { "-".to_string() } else { knobs.join(" ") };
            println!("{:<10} {:>5}  {:<28} {}", p.name, p.levels.len(), knobs, p.description);
        }
        return Ok(ExitCode::SUCCESS);
    };
    let p = profile::load(name)?;
    let hierarchy = cgroup::detect()?.memory_hierarchy(version)?;
    println!("{}: {} (cgroup {} names; nothing is created)", p.name, p.description, hierarchy.version);
    println!("<base>");
    for (index, level) in p.levels.iter().enumerate() {
        let indent = "  ".repeat(index + 1);
        let dir =
            if index == 0 { format!("faultscale-<pid>-<nonce>-{}", p.name) } else { format!("level{}", index + 1) };
        println!("{indent}{dir}/");
        let writes = profile::writes_for(level, hierarchy.version)
            .map_err(|e| anyhow::anyhow!("{name}: level {}: {e}", index + 1))?;
        for write in writes {
            println!("{indent}  {} = {}", write.file, write.value);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn cleanup(dry_run: bool, version: cgroup::VersionChoice, base: &str) -> Result<ExitCode> {
    let detected = cgroup::detect()?;
    let hierarchy = detected.memory_hierarchy(version)?;
    let root = cgroup::resolve_base(&hierarchy, &cgroup::BaseSpec::parse(base)?)?;
    if !dry_run {
        require_root("cleanup")?;
    }
    let mut failed = false;
    let leftovers = cgroup::cleanup::find(&root);
    if leftovers.is_empty() {
        println!("no faultscale cgroups under {}", root.display());
    }
    for leftover in leftovers {
        let path = leftover.top.display();
        match leftover.verdict {
            cgroup::cleanup::Verdict::OwnerAlive(pid) => println!("kept {path}: its run (pid {pid}) is still alive"),
            cgroup::cleanup::Verdict::HasProcesses(dir) => {
                println!("kept {path}: {} still has processes", dir.display())
            }
            cgroup::cleanup::Verdict::Removable if dry_run => println!("would remove {path}"),
            cgroup::cleanup::Verdict::Removable => match cgroup::cleanup::remove(&leftover.top) {
                Ok(()) => println!("removed {path}"),
                Err(e) => {
                    failed = true;
                    eprintln!("faultscale: error: {e:#}");
                }
            },
        }
    }
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}
