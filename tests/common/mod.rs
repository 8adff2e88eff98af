//! Helpers for integration tests that drive the built binary on the real kernel.
//!
//! Every test picks its base by the rules users get: `--base new`, a cgroup of faultscale's
//! own (a child of the test's cgroup on v1 and hybrid hosts; beside it, in the nearest
//! ancestor that gives memory to its children and holds no process, on pure v2 without
//! systemd; `needs_root` refuses pure v2 under systemd), never the machine's root. Each checks afterwards that its run left no cgroup and no worker behind.
#![allow(dead_code)]

/// eprintln! past libtest's capture, which takes only the print macros' output: the guests'
/// timings and skips show in a passing CI run's log, not only in a failing one's.
#[allow(unused_macros)]
macro_rules! shown {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub mod lkp;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};

/// Runs measuring tests one at a time: two runs on a 2-CPU machine would share CPUs and
/// disturb each other's figures (and the leftover checks look for any faultscale process).
static SERIAL: Mutex<()> = Mutex::new(());

pub fn binary() -> PathBuf {
    assert_cmd::cargo::cargo_bin("faultscale")
}

/// One heavy test at a time (guests, measuring runs).
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Every root test's preamble, once: root and a writable v1/v2 memory cgroup are required
/// (without them the test fails with a message saying so), the test runs alone (the serial
/// guard, to hold for the test's length), and `--base new` builds in the directory returned
/// (`runs_dir`). FAULTSCALE_SKIP_ROOT_TESTS=1 at build time marks these tests ignored instead
/// (build.rs, and `#[cfg_attr(skip_root_tests, ignore = ...)]` on each).
pub fn needs_root() -> (MutexGuard<'static, ()>, PathBuf) {
    assert!(
        nix_is_root(),
        "this test needs root and a memory cgroup it may create children in; run as root, or set FAULTSCALE_SKIP_ROOT_TESTS=1 to mark such tests ignored"
    );
    let own = own_memory_cgroup();
    assert!(
        own.join("cgroup.procs").is_file(),
        "this test needs the memory cgroup it runs in ({}) to be visible; see `faultscale env`",
        own.display()
    );
    // There `--base new` asks systemd-run for a transient scope (`commands::in_delegated_scope`)
    // whose name no test can know beforehand, so no test could find its run's cgroups or check
    // that they were removed: fail, saying where the tests do run.
    let v2 = own.join("cgroup.controllers").is_file();
    assert!(
        !(v2 && Path::new("/run/systemd/system").is_dir()),
        "the root tests cannot run on a pure-v2 host under systemd (--base new runs in a scope systemd-run names); run them in the guests (cargo test --release --test guest) or set FAULTSCALE_SKIP_ROOT_TESTS=1"
    );
    let serial = serial();
    (serial, runs_dir())
}

/// Why libtest marks a root test ignored where FAULTSCALE_SKIP_ROOT_TESTS=1 was set at build
/// time: the same words as each `#[cfg_attr(skip_root_tests, ignore = ...)]`.
pub const SKIP_ROOT_TESTS: &str = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup";

/// A root test that needs what a machine may lack at run time (perf events, the perf tool, a
/// disk file system), for the files whose harness is libtest-mimic (`harness = false` in
/// Cargo.toml): libtest has no run-time skip, and a test returning early would count as
/// passed. Where `missing` names what this machine lacks, the test is reported ignored and
/// the reason said (`skipped: ...`, which the guest runner shows); where the build set
/// FAULTSCALE_SKIP_ROOT_TESTS=1, ignored as the libtest files' root tests are.
pub fn root_trial(name: &'static str, missing: Option<String>, test: fn()) -> libtest_mimic::Trial {
    let missing = if cfg!(skip_root_tests) { Some(SKIP_ROOT_TESTS.to_string()) } else { missing };
    if let Some(why) = &missing {
        shown!("{name}: skipped: {why}");
    }
    trial(name, test).with_ignored_flag(missing.is_some())
}

/// What this machine lacks for a test, found by the test before it does anything (no QEMU
/// or guest root file system, no lkp-tests bundle, no ruby with the libraries it needs).
pub struct Missing(pub String);

/// A test, in a libtest-mimic file, that needs what only running it can find out (whether a
/// guest boots here: scripts/qemu-guest says so as it starts) or what it would be wasted work to
/// probe where the test is filtered out or listed: it returns `Err(Missing)` before doing
/// anything, and is reported ignored with the reason (`ignored (...)`, and `skipped: ...` on
/// stderr), never passed as an early return under libtest was. Where the environment variable
/// `required_by` is set (`.ci/run` sets FAULTSCALE_REQUIRE_GUESTS and FAULTSCALE_REQUIRE_LKP),
/// the same lack fails the test, naming the variable and the lack.
pub fn trial_needing(
    name: &'static str,
    required_by: &'static str,
    test: fn() -> Result<(), Missing>,
) -> libtest_mimic::Trial {
    libtest_mimic::Trial::ignorable_test(name, move || match test() {
        Ok(()) => Ok(libtest_mimic::Completion::Completed),
        Err(Missing(why)) if std::env::var_os(required_by).is_some() => {
            Err(format!("{required_by} is set, but {why}").into())
        }
        Err(Missing(why)) => {
            shown!("{name}: skipped: {why}");
            Ok(libtest_mimic::Completion::ignored_with(why))
        }
    })
}

/// `trial_needing` for a root test: ignored without running where the build set
/// FAULTSCALE_SKIP_ROOT_TESTS=1, as `root_trial` and the libtest files' root tests are.
pub fn root_trial_needing(
    name: &'static str,
    required_by: &'static str,
    test: fn() -> Result<(), Missing>,
) -> libtest_mimic::Trial {
    if cfg!(skip_root_tests) {
        shown!("{name}: skipped: {SKIP_ROOT_TESTS}");
    }
    trial_needing(name, required_by, test).with_ignored_flag(cfg!(skip_root_tests))
}

/// A test in a libtest-mimic file, which fails where it panics, as under libtest.
pub fn trial(name: &'static str, test: fn()) -> libtest_mimic::Trial {
    libtest_mimic::Trial::test(name, move || {
        test();
        Ok(())
    })
}

/// Runs a libtest-mimic file's trials with libtest's command line (`--exact`, `--skip`,
/// `--test-threads`, `--nocapture` as the guest runner passes them) and its exit code.
pub fn run_trials(trials: Vec<libtest_mimic::Trial>) -> ! {
    libtest_mimic::run(&libtest_mimic::Arguments::from_args(), trials).exit()
}

fn nix_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(2) == Some("0")))
        .unwrap_or(false)
}

/// The directory of this process's memory cgroup, found the way faultscale finds it: the
/// memory line of /proc/self/cgroup (or the v2 line) under the matching mount.
pub fn own_memory_cgroup() -> PathBuf {
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let v1 = cgroup.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers.split(',').any(|c| c == "memory").then(|| path.to_string())
    });
    let mount = |want_v2: bool| {
        mountinfo.lines().find_map(|l| {
            let fields: Vec<&str> = l.split(' ').collect();
            let dash = fields.iter().position(|f| *f == "-")?;
            let fstype = fields[dash + 1];
            let ok = if want_v2 {
                fstype == "cgroup2"
            } else {
                fstype == "cgroup" && fields[dash + 3].split(',').any(|o| o == "memory")
            };
            ok.then(|| (fields[3].to_string(), PathBuf::from(fields[4])))
        })
    };
    let (path, (root, mount_point)) = match v1 {
        Some(path) => (path, mount(false).expect("memory mount")),
        None => {
            let path = cgroup.lines().find_map(|l| l.strip_prefix("0::")).expect("v2 line").to_string();
            (path, mount(true).expect("cgroup2 mount"))
        }
    };
    let relative = path.strip_prefix(root.trim_end_matches('/')).unwrap_or(&path).trim_start_matches('/');
    mount_point.join(relative)
}

/// The `--base` every measuring test uses.
pub const BASE: &str = "new";

fn lists(path: &Path, word: &str) -> bool {
    std::fs::read_to_string(path).map(|s| s.split_whitespace().any(|w| w == word)).unwrap_or(false)
}

fn holds_processes(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("cgroup.procs")).map(|s| !s.trim().is_empty()).unwrap_or(true)
}

/// Where `--base new` makes a run's cgroups (and so where a run's trees appear): the test's
/// own cgroup on v1, the nearest ancestor that gives memory to its children and holds no
/// process on v2 (the same rule faultscale applies where systemd does not manage the tree).
pub fn runs_dir() -> PathBuf {
    let own = own_memory_cgroup();
    if own.join("memory.stat").is_file() && !own.join("cgroup.controllers").is_file() {
        return own;
    }
    let mut dir = own.parent().map(Path::to_path_buf);
    while let Some(candidate) = dir {
        let at_mount_root = !candidate.parent().is_some_and(|p| p.join("cgroup.controllers").is_file());
        if at_mount_root || (lists(&candidate.join("cgroup.subtree_control"), "memory") && !holds_processes(&candidate))
        {
            return candidate;
        }
        dir = candidate.parent().map(Path::to_path_buf);
    }
    own
}

/// `faultscale cleanup` over where runs put their trees.
pub fn cleanup(extra: &[&str]) -> Output {
    let base = runs_dir();
    Command::new(binary())
        .args(["cleanup", "--base", base.to_str().unwrap()])
        .args(extra)
        .output()
        .expect("running faultscale cleanup")
}

/// What this machine lacks for perf events, if anything (a kernel without them, as the
/// user-mode-linux guests' is).
pub fn perf_events_missing() -> Option<String> {
    let available = Path::new("/proc/sys/kernel/perf_event_paranoid").exists();
    (!available).then(|| "this kernel has no perf events (/proc/sys/kernel/perf_event_paranoid is missing)".to_string())
}

/// Directories under `base` made by the faultscale process `pid`.
pub fn trees_of(base: &Path, pid: u32) -> Vec<PathBuf> {
    let prefix = format!("faultscale-{pid}-");
    std::fs::read_dir(base)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// Processes running the faultscale binary (workers are forks of it, so they show it too).
pub fn faultscale_processes() -> Vec<u32> {
    let binary = std::fs::canonicalize(binary()).unwrap();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).map(|exe| exe == binary).unwrap_or(false))
        .collect()
}

/// After a run: nothing of it may remain. Waits briefly, since workers die asynchronously.
pub fn assert_nothing_left(base: &Path, pid: u32) {
    for _ in 0..100 {
        if trees_of(base, pid).is_empty() && faultscale_processes().is_empty() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let trees = trees_of(base, pid);
    let processes = faultscale_processes();
    // Clean up for the next test before failing this one.
    for tree in &trees {
        let _ = cleanup(&[]);
        let _ = std::fs::remove_dir(tree);
    }
    panic!("run {pid} left cgroups {trees:?} and processes {processes:?}");
}

pub fn spawn(args: &[&str]) -> Child {
    Command::new(binary())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting faultscale")
}

/// Runs faultscale to completion; returns its pid (for leftover checks) and output.
pub fn run(args: &[&str]) -> (u32, Output) {
    let child = spawn(args);
    let pid = child.id();
    let output = child.wait_with_output().expect("waiting for faultscale");
    (pid, output)
}

/// Runs faultscale to completion under `base` and asserts it left no cgroup and no process.
pub fn run_clean(base: &Path, args: &[&str]) -> (u32, Output) {
    let (pid, output) = run(args);
    assert_nothing_left(base, pid);
    (pid, output)
}

/// Iterations of the default workload one worker does in about `seconds` on this kernel,
/// measured with a short fixed-work run: a user-mode-linux guest faults some 25 times slower
/// than its host, so one fixed count is too short for a test on one or an age on the other.
#[allow(dead_code)] // Not every test file fixes its work in time.
pub fn iterations_lasting(seconds: f64) -> u64 {
    const PROBE: f64 = 100.0;
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("probe.csv");
    let args =
        ["--base", BASE, "--no-baseline", "--iterations", "100", "--slices", "1", "--csv", csv.to_str().unwrap()];
    let (_, output) = run(&args);
    assert!(output.status.success(), "the probe run: {}", text(&output.stderr));
    let probe_s = number(&read_csv(&csv)[0], "duration_s");
    ((seconds / probe_s * PROBE) as u64).max(PROBE as u64)
}

/// Names of the files in a directory (an output directory must hold no temporary leftovers).
pub fn files_in(dir: &Path) -> Vec<std::ffi::OsString> {
    std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name()).collect()
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// CSV records as maps from column name to cell.
pub fn read_csv(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let mut reader = csv::Reader::from_path(path).expect("CSV file");
    let headers = reader.headers().unwrap().clone();
    reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            headers.iter().map(str::to_string).zip(r.iter().map(str::to_string)).collect()
        })
        .collect()
}

/// A numeric cell of a CSV record, or a panic naming the column and what it held.
pub fn number(row: &std::collections::HashMap<String, String>, column: &str) -> f64 {
    row[column].parse().unwrap_or_else(|_| panic!("{column} = {:?} is not a number", row[column]))
}

pub fn signal(pid: u32, signal: i32) {
    assert_eq!(unsafe { libc::kill(pid as i32, signal) }, 0, "kill({pid}, {signal})");
}

/// Waits until run `pid` (as its tree names it) has built its tree and started its workers.
pub fn wait_running(base: &Path, pid: u32) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while trees_of(base, pid).is_empty() || faultscale_processes().len() < 2 {
        assert!(std::time::Instant::now() < deadline, "run {pid} did not start");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// The deepest directory under `top` whose path has `label` in it: a placement's leaf.
pub fn leaf_named(top: &Path, label: &str) -> std::path::PathBuf {
    let mut dir = top.to_path_buf();
    loop {
        let next = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_type().unwrap().is_dir())
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().contains(label));
        match next {
            Some(next) => dir = next,
            None if dir.to_string_lossy().contains(label) => return dir,
            None => panic!("no {label} under {}", top.display()),
        }
    }
}

/// A placement's level directories from the top down, under a run's tree: its top directory
/// is level 1, except on v2 below the true root, where a knob-less sibling of the baseline's
/// leaf tops it and the levels are level1, level2, ... below.
pub fn placement_levels(tree: &Path, label: &str) -> Vec<PathBuf> {
    let mut queue = std::collections::VecDeque::from([tree.to_path_buf()]);
    let mut found = None;
    while let Some(dir) = queue.pop_front() {
        if dir.file_name().unwrap().to_string_lossy().ends_with(label) {
            found = Some(dir);
            break;
        }
        queue.extend(std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).filter(|p| p.is_dir()));
    }
    let top = found.unwrap_or_else(|| panic!("no ...{label} under {}", tree.display()));
    let mut levels = Vec::new();
    let mut dir = if top.join("level1").is_dir() { top.join("level1") } else { top };
    loop {
        levels.push(dir.clone());
        let next = dir.join(format!("level{}", levels.len() + 1));
        if !next.is_dir() {
            return levels;
        }
        dir = next;
    }
}
