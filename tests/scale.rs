//! Scale: what a run needs at many workers (open files, memory) is counted before anything is
//! made; a short soft limit is raised, a short hard limit or too little memory is refused with
//! exit 2 and nothing left behind, never a slice failed with a false cause.

mod common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

/// faultscale with the open-file limit set to `soft` and `hard` in the child before it runs.
fn run_limited(soft: u64, hard: u64, args: &[&str]) -> (u32, Output) {
    let mut command = Command::new(binary());
    command.args(args);
    // SAFETY: setrlimit only, between fork and exec.
    unsafe {
        command.pre_exec(move || {
            let limit = libc::rlimit { rlim_cur: soft, rlim_max: hard };
            match libc::setrlimit(libc::RLIMIT_NOFILE, &limit) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    let child = command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    (pid, child.wait_with_output().unwrap())
}

const MANY_CREWS: &[&str] =
    &["--base", BASE, "--tasks", "48", "--cgroup", "child,nested:4,control", "--duration", "2", "-q", "--json", "-"];

#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn a_soft_open_file_limit_too_low_for_the_crews_is_raised_and_every_slice_measures() {
    let (_guard, _) = needs_root();
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("r.csv");
    let mut args = MANY_CREWS.to_vec();
    args.extend(["--csv", csv.to_str().unwrap()]);
    // 4 crews of 48 workers hold about 470 files; 200 was the limit that failed every slice.
    let (pid, output) = run_limited(200, 4096, &args);
    assert_nothing_left(&runs_dir(), pid);
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("did not stop"), "{stderr}");
    let rows = read_csv(&csv);
    let placements: std::collections::BTreeSet<&str> = rows.iter().map(|r| r["placement"].as_str()).collect();
    assert_eq!(placements.len(), 4, "every placement measured: {placements:?}");
}

#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn a_hard_open_file_limit_too_low_is_refused_before_anything_is_made_saying_how_many_files() {
    let (_guard, base) = needs_root();
    let (pid, output) = run_limited(200, 200, MANY_CREWS);
    assert_nothing_left(&base, pid);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains("open files") && stderr.contains("allows 200") && stderr.contains("ulimit"), "{stderr}");
    let needed: u64 = stderr.split("needs ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!(needed > 4 * 48, "counts a file a worker of every crew (its own schedstat): {needed}");
}

/// MemAvailable now, in bytes.
fn mem_available() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn crews_that_cannot_fit_in_memory_available_are_refused_before_any_crew_starts() {
    let (_guard, _) = needs_root();
    // A running crew of page_fault1 (128 MiB a worker; a parked crew holds none) that asks
    // for a third more than the machine has available.
    let tasks = (mem_available() / (128 << 20)) * 4 / 3 + 1;
    let cpus = std::thread::available_parallelism().unwrap().get() as u64;
    // Long enough a slice that every task gets a turn: the turn check is not what refuses.
    let duration = (tasks.div_ceil(cpus) * 4 / 1000 + 1).to_string();
    let tasks = tasks.to_string();
    let args =
        ["--base", BASE, "--workload", "page_fault1", "--tasks", &tasks, "--slices", "1", "--duration", &duration];
    let (pid, output) = run(&args);
    assert_nothing_left(&runs_dir(), pid);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("MemAvailable") && stderr.contains("128 MiB a running worker"), "{stderr}");
}

/// A memory cgroup made for the test under its own, with a limit, removed on drop.
struct LimitedCgroup(PathBuf);

impl LimitedCgroup {
    fn new(limit: &str) -> LimitedCgroup {
        let dir = runs_dir().join(format!("faultscale-test-limit-{}", std::process::id()));
        std::fs::create_dir(&dir).unwrap();
        let cgroup = LimitedCgroup(dir);
        let file = match cgroup.0.join("memory.max").exists() {
            true => "memory.max",
            false => "memory.limit_in_bytes",
        };
        std::fs::write(cgroup.0.join(file), limit).unwrap();
        cgroup
    }
}

impl Drop for LimitedCgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn crews_that_cannot_fit_under_the_base_cgroups_limit_are_refused_naming_it() {
    let (_guard, _) = needs_root();
    let limited = LimitedCgroup::new("134217728");
    let base = limited.0.to_str().unwrap();
    // Two running anon workers of 96 MiB chunks hold 192 MiB (the other crew parked holds
    // none), which a guest's few hundred MiB available still hold; the base allows 128.
    let args = ["--base", base, "--chunk", "96M", "--tasks", "2", "--duration", "1"];
    let (pid, output) = run(&args);
    assert_nothing_left(Path::new(base), pid);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(base) && stderr.contains("its limit 128 MiB") && stderr.contains("--base"), "{stderr}");
    assert!(
        std::fs::read_dir(&limited.0)
            .unwrap()
            .flatten()
            .all(|e| !e.file_name().to_string_lossy().starts_with("faultscale-"))
    );
}

/// At 256 workers a slice gives each a few ms, which /proc's clock-tick user and system times
/// read as 0 or one tick: the scaling table printed sys 0.17 s where the workers spent 1.06 s
/// on their CPUs. It now prints the exact on-CPU seconds (schedstat) and the system share
/// over the whole run.
#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn the_scaling_table_says_the_exact_time_on_cpu_at_many_tasks() {
    let (_guard, _) = needs_root();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let args = ["--base", BASE, "--cgroup", "child", "--tasks", "2,256", "--duration", "1", "--json"];
    let (pid, output) = run(&[&args[..], &[json.to_str().unwrap()]].concat());
    assert_nothing_left(&runs_dir(), pid);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let slices: Vec<f64> = doc["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["placement"] == "child" && m["result"]["crew"]["tasks"] == 256)
        .map(|m| m["result"]["crew"]["on_cpu_ns"].as_f64().unwrap() / 1e9)
        .collect();
    assert!(!slices.is_empty(), "{stdout}");
    let exact = slices.iter().sum::<f64>() / slices.len() as f64;
    let row = stdout
        .lines()
        .skip_while(|l| !l.starts_with("scaling ("))
        .find(|l| l.split_whitespace().take(2).collect::<Vec<_>>() == ["256", "child"])
        .unwrap_or_else(|| panic!("no scaling row: {stdout}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    let printed: f64 = cells[cells.len() - 2].parse().unwrap_or_else(|_| panic!("{row}"));
    assert!((printed - exact).abs() <= 0.02 * exact, "printed {printed} s, the workers' on-CPU time {exact} s: {row}");
    let share: f64 = cells[cells.len() - 1].trim_end_matches('%').parse().unwrap_or_else(|_| panic!("{row}"));
    assert!((0.0..=100.0).contains(&share), "{row}");
}

/// Descriptors the run was started with count against its limit too: with 73 of them open and
/// a hard limit the crews alone would fit, every slice failed with EMFILE; now it is refused
/// (exit 2) before anything is made, counting them.
#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn descriptors_the_run_inherits_count_against_its_limit() {
    let (_guard, _) = needs_root();
    let mut command = Command::new(binary());
    command.args(["--base", BASE, "--duration", "1", "-q", "--csv", "-"]);
    // SAFETY: dup2 and setrlimit only, between fork and exec.
    unsafe {
        command.pre_exec(|| {
            for fd in 3..76 {
                libc::dup2(0, fd);
            }
            let limit = libc::rlimit { rlim_cur: 86, rlim_max: 86 };
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            Ok(())
        });
    }
    let child = command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    let output = child.wait_with_output().unwrap();
    assert_nothing_left(&runs_dir(), pid);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("it was started with") && !stderr.contains("Too many open files"), "{stderr}");
}

/// The settling window before each slice runs one iteration on each CPU, not one of each
/// worker (128 workers a CPU settling one each took 36 ms of every 417 ms slice); where ABBA
/// measures a crew again at a round's turn after a slice that did not overrun, nothing ran on its
/// CPUs since, and it has none.
#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn settling_takes_an_iteration_a_cpu_before_every_slice_after_another_crew() {
    let (_guard, base) = needs_root();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let args =
        ["--base", BASE, "--cpus", "0", "--tasks", "4", "--cgroup", "child", "--duration", "2", "--slices", "10", "-q"];
    let mut args = args.to_vec();
    args.extend(["--json", json.to_str().unwrap()]);
    let (pid, output) = run_clean(&base, &args);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let mut slices: Vec<&serde_json::Value> = doc["measurements"].as_array().unwrap().iter().collect();
    slices.sort_by_key(|m| m["sequence"].as_u64());
    assert_eq!(slices.len(), 20, "{slices:?}");
    // A slice that overran (slow guests, a stop) let other work run on its CPUs: the crew's
    // next slice settles as after another crew's.
    let same_crew = |a: &serde_json::Value, b: &serde_json::Value| {
        a["placement"] == b["placement"] && a["generation"] == b["generation"] && a["result"]["overran"] != true
    };
    let settle_faults = |m: &serde_json::Value| m["result"]["harness"]["settle_faults"].as_u64().unwrap();
    let (mut repeated, mut settled) = (Vec::new(), Vec::new());
    for (index, slice) in slices.iter().enumerate() {
        match index > 0 && same_crew(slices[index - 1], slice) {
            true => repeated.push(settle_faults(slice)),
            false => settled.push(settle_faults(slice)),
        }
    }
    assert!(!repeated.is_empty() && repeated.iter().all(|&f| f == 0), "a repeated crew settled again: {repeated:?}");
    let pages = 256; // the default 1 MiB chunk, 4 KiB pages
    assert!(settled.iter().all(|&faults| faults >= pages), "a slice settled with less than an iteration: {settled:?}");
    settled.sort_unstable();
    let median = settled[settled.len() / 2];
    assert!(median < 4 * pages, "the 4 workers on CPU 0 each settled an iteration: {settled:?}");
    assert_nothing_left(&base, pid);
}
