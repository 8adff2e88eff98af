//! faultscale: page-fault scalability under memory cgroups.

/// One line on stderr. A line that cannot be written (stderr closed, a broken pipe) is dropped,
/// never a panic: a measurement's results are written whatever happens to the terminal.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// One line on stdout for the listing subcommands (env, profiles, cleanup). A closed reader
/// (`faultscale env | head -1`) is its choice and ends nothing; any other failure (a full
/// disk) is kept for `main` to report and exit 1 on, never a panic.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if let Err(e) = writeln!(std::io::stdout(), $($arg)*) {
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                let _ = crate::output::STDOUT_FAILED.set(e.to_string());
            }
        }
    }};
}

mod cgroup;
mod cli;
mod commands;
mod compare;
mod error;
mod export;
mod measure;
mod options;
mod output;
mod plan;
mod report;
mod results;
mod run;
mod session;
mod sink;
mod stats;
mod text;
mod workload;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};
use commands::Outcome;
use error::Error;
use options::RunOptions;

fn main() -> ExitCode {
    // A panic is a bug, yet it must not leave cgroups or workers behind, nor exit with Rust's
    // 101 outside the table: the hook says it in one line, the unwinding runs every destructor
    // (the Tree removes what the run made, Workers kill theirs), and it exits 1, a failure.
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into());
        let place = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        say!("faultscale: error: internal error (a bug; please report it): {}{place}", one_line(&message));
    }));
    std::panic::catch_unwind(dispatch).unwrap_or(ExitCode::FAILURE)
}

/// The command line parsed and its subcommand run, with the exit code it earned.
fn dispatch() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(), // --help, --version
        Err(e) => {
            say!("faultscale: error: {}", one_line(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    if let Some(what) = stdout_reader(&cli)
        && sink::stdout_closed_at_start()
    {
        say!(
            "faultscale: error: standard output is closed (`>&-`): {what} would be lost; send it to a file, or to /dev/null to discard it"
        );
        return ExitCode::from(2);
    }
    let result = match cli.command {
        None => match cli.run.check_args {
            Some(cpus) => commands::check_args(&cli.run, cpus),
            None => run::cpus::allowed().and_then(|allowed| {
                let options = RunOptions::from_args(&cli.run, &allowed).map_err(error::usage)?;
                commands::main_job(&options, &allowed)
            }),
        },
        Some(Command::Env { cgroup_version, base }) => commands::env(cgroup_version.into(), &base),
        Some(Command::Profiles { name, cgroup_version }) => commands::profiles(name.as_deref(), cgroup_version.into()),
        Some(Command::Compare { base, new, format, force }) => commands::compare(&base, &new, format.into(), force),
        Some(Command::Plot { file, output, chart }) => commands::plot(&file, &output, chart.into()),
        Some(Command::Completions { shell }) => {
            // Generated whole first: clap_complete panics on a failed write.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut <Cli as clap::CommandFactory>::command(), "faultscale", &mut script);
            write_stdout(&script, "the completions").map(|_| Outcome::Clean)
        }
        Some(Command::Man) => {
            let mut page = Vec::new();
            clap_mangen::Man::new(<Cli as clap::CommandFactory>::command())
                .render(&mut page)
                .map_err(anyhow::Error::from)
                .and_then(|_| write_stdout(&page, "the man page"))
                .map(|_| Outcome::Clean)
        }
        Some(Command::Cleanup { dry_run, cgroup_version, base, tmpdir }) => {
            commands::cleanup(dry_run, cgroup_version.into(), &base, tmpdir.as_deref())
        }
    };
    let result = match (result, output::STDOUT_FAILED.get()) {
        (Ok(_), Some(e)) => Err(anyhow::anyhow!("writing to standard output: {e}")),
        (result, _) => result,
    };
    match result {
        Ok(outcome) => exit_code_of(outcome),
        Err(e) => said_with_exit_code(&e),
    }
}

/// The one place exit codes are chosen, for a subcommand that ran to its end: 0 when all was
/// done, 1 when a part failed (each said), 128+N after stop signal N.
fn exit_code_of(outcome: Outcome) -> ExitCode {
    match outcome {
        Outcome::Clean => ExitCode::SUCCESS,
        Outcome::Incomplete => ExitCode::FAILURE,
        Outcome::Stopped { signal } => stopped_by(signal),
    }
}

/// `error` said on stderr, and its exit code: 2 for the user's input, 128+N for stop signal
/// N, 1 for anything else.
fn said_with_exit_code(error: &anyhow::Error) -> ExitCode {
    let kind = error::of(error);
    if let Some(&Error::Interrupted(signal)) = kind {
        say!("faultscale: {}; workers stopped, cgroups removed", Error::Interrupted(signal));
        return stopped_by(signal);
    }
    // `faultscale man | head`: a closed pipe is the reader's choice, not an error: 0.
    if error.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    }) {
        return ExitCode::SUCCESS;
    }
    // One line: the context chain joined, as ripgrep does.
    say!("faultscale: error: {error:#}");
    match kind {
        Some(Error::Usage(_)) => ExitCode::from(2),
        _ => ExitCode::FAILURE,
    }
}

/// What a shell expects of a process a signal ended: 128 + the signal.
fn stopped_by(signal: i32) -> ExitCode {
    ExitCode::from(128 + signal as u8)
}

/// What `cli` prints on standard output, if anything: a closed one would lose it unseen (Rust
/// reopens it on /dev/null before `main`, so every write succeeds). `plot` and a run with `-q`
/// print nothing there (an output named `-` is refused by its own check).
fn stdout_reader(cli: &Cli) -> Option<&'static str> {
    match &cli.command {
        None if cli.run.quiet => None,
        None => Some("the run's table"),
        Some(Command::Plot { .. }) => None,
        Some(Command::Env { .. }) => Some("the environment listing"),
        Some(Command::Profiles { .. }) => Some("the profile listing"),
        Some(Command::Compare { .. }) => Some("the comparison"),
        Some(Command::Completions { .. }) => Some("the completions"),
        Some(Command::Man) => Some("the man page"),
        Some(Command::Cleanup { .. }) => Some("the cleanup report"),
    }
}

/// `bytes` on stdout, or an error naming `what` could not be written.
fn write_stdout(bytes: &[u8], what: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(bytes)
        .and_then(|_| stdout.flush())
        .map_err(|e| anyhow::Error::from(e).context(format!("writing {what} to standard output")))
}

/// clap's usage errors span several lines; the message, the valid values and a hint fit on one.
fn one_line(message: &str) -> String {
    // A usage block runs from its "Usage:" line to the next blank line: with subcommands clap
    // puts a second synopsis (`faultscale <COMMAND>`) on its own indented line.
    let mut in_usage = false;
    let parts: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|line| {
            in_usage = line.starts_with("Usage:") || (in_usage && !line.is_empty());
            !in_usage
        })
        .filter(|line| !line.is_empty() && !line.starts_with("For more information"))
        .map(|line| line.strip_prefix("error: ").unwrap_or(line))
        .collect();
    format!("{} (see --help)", parts.join(" "))
}
