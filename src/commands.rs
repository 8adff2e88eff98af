//! One function per subcommand: each ties the layers below together and answers an exit code.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Result, bail};

use crate::bench;
use crate::cgroup::VersionChoice;
use crate::compare;
use crate::export::{self, OutputPath, Sink};
use crate::options::RunOptions;
use crate::output;
use crate::output::progress::TerminalProgress;
use crate::results::RunFile;
use crate::run::{self, Interrupted};
use crate::workload;

/// The main job: measure every placement, print the table, write the files asked for.
pub fn measure(options: &RunOptions, allowed_cpus: &[usize]) -> Result<ExitCode> {
    let plan = &options.plan;
    run::require_root("measuring")?;
    // Output files are opened before anything is created, so a bad path costs nothing.
    let csv_sink = options.csv.as_ref().map(|path| Sink::open("--csv", path)).transpose()?;
    let json_sink = options.json.as_ref().map(|path| Sink::open("--json", path)).transpose()?;
    let samples_sink = options.samples_csv.as_ref().map(|path| Sink::open("--samples-csv", path)).transpose()?;

    let unit = workload::shape(&plan.workload_settings(None)).unit.name();
    let mut progress = TerminalProgress::new(options.quiet, unit);
    let report = bench::run(plan, allowed_cpus, &mut progress)?;
    for warning in &report.warnings {
        eprintln!("faultscale: warning: {warning}");
    }
    if !options.quiet {
        // With an output on stdout (-) the table goes to stderr, so stdout stays parseable.
        let stdout_taken =
            [&options.csv, &options.json, &options.samples_csv].iter().any(|o| matches!(o, Some(OutputPath::Stdout)));
        if stdout_taken {
            export::table::write(&mut std::io::stderr(), &report)?;
        } else {
            export::table::write(&mut std::io::stdout().lock(), &report)?;
        }
    }
    if let Some(sink) = csv_sink {
        let rows = export::csv::rows(&report, options.per_cpu);
        if !rows.is_empty() {
            sink.write_with(|out| export::csv::write(out, &rows))?;
        }
    }
    if let Some(sink) = json_sink
        && !report.measurements.is_empty()
    {
        sink.write_with(|out| export::json::write(out, &report))?;
    }
    if let Some(sink) = samples_sink {
        let rows = export::csv::sample_rows(&report);
        if !rows.is_empty() {
            sink.write_with(|out| export::csv::write(out, &rows))?;
        }
    }
    if let Some(signal) = report.interrupted {
        eprintln!(
            "faultscale: {}; wrote the {} completed measurements, marked run_complete=false",
            Interrupted(signal),
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

pub fn cleanup(dry_run: bool, version: VersionChoice, base: &str) -> Result<ExitCode> {
    Ok(if output::cleanup::run(dry_run, version, base)? { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

pub fn compare(base: &str, new: &[String], format: export::Format) -> Result<ExitCode> {
    let base = RunFile::load(Path::new(base))?;
    let mut changes = Vec::new();
    for path in new {
        let file = RunFile::load(Path::new(path))?;
        for warning in compare::differences(&base, &file) {
            eprintln!("faultscale: warning: {warning}");
        }
        changes.extend(compare::compare(&base, &file));
    }
    if changes.is_empty() {
        bail!("no rows match between the files (workload, mode, tasks and placement must agree)");
    }
    export::comparison(&mut std::io::stdout().lock(), &changes, format)?;
    Ok(ExitCode::SUCCESS)
}

pub fn plot(file: &str, output: &str, chart: export::plot::Chart) -> Result<ExitCode> {
    let run = RunFile::load(Path::new(file))?;
    let drawn = export::plot::plot(&run, chart, Path::new(output))?;
    eprintln!("faultscale: wrote {output} ({drawn:?} chart)");
    Ok(ExitCode::SUCCESS)
}
