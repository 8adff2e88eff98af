//! Edges a hostile user found (issue 29): signals the README promised to handle, a shared
//! --profile-dir, `cleanup` and `env` saying what is not so, and up-front checks that missed.

mod common;

use std::time::Duration;

use common::*;

/// Faultscale's run directories (`faultscale-<pid>-...`) in `dir`.
fn run_dirs_in(dir: &std::path::Path) -> Vec<std::ffi::OsString> {
    files_in(dir).into_iter().filter(|n| n.to_string_lossy().contains("faultscale-")).collect()
}

/// The fault signals sent by `kill` (SI_USER) and SIGUSR1 (the workers' start signal) stop a
/// run like SIGTERM: cleanup, 128+signal, no cgroup, worker or file directory left. Before,
/// SIGFPE/SIGILL/SIGSYS/SIGTRAP killed the harness outright, SIGSEGV/SIGBUS were swallowed by
/// Rust's stack-overflow handler (the run went on, exit 0) and SIGUSR1 was blocked.
#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn fault_signals_and_sigusr1_sent_by_kill_stop_the_run_like_sigterm() {
    let _serial = needs_root();
    let base = runs_dir();
    let dir = tempfile::tempdir().unwrap();
    let tmpdir = dir.path().to_str().unwrap();
    for sig in [libc::SIGFPE, libc::SIGILL, libc::SIGSYS, libc::SIGTRAP, libc::SIGSEGV, libc::SIGBUS, libc::SIGUSR1] {
        let args =
            ["--base", BASE, "--cgroup", "child", "--duration", "30", "--workload", "page_fault3", "--tmpdir", tmpdir];
        let child = spawn(&args);
        let pid = child.id();
        wait_running(&base, pid);
        std::thread::sleep(Duration::from_millis(200));
        signal(pid, sig);
        let output = child.wait_with_output().unwrap();
        assert_nothing_left(&base, pid);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(128 + sig), "signal {sig}: {:?} {stderr}", output.status);
        assert!(stderr.contains("interrupted by SIG"), "signal {sig}: {stderr}");
        assert_eq!(run_dirs_in(dir.path()), Vec::<std::ffi::OsString>::new(), "signal {sig} left the run's directory");
    }
}

/// Two runs with one --profile-dir: the second is refused before it starts (exit 2), as an
/// output file another run writes is, however the directory is spelled and whether it exists
/// yet. Before, both said "wrote 5 profile files" and the last to finish replaced the other's.
#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn a_profile_dir_another_live_run_writes_is_refused() {
    let _serial = needs_root();
    if !perf_events_available() {
        return;
    }
    let base = runs_dir();
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("flames");
    let first = spawn(&["--base", BASE, "--duration", "30", "-q", "--profile-dir", profile.to_str().unwrap()]);
    let pid = first.id();
    wait_running(&base, pid);
    let respelled = dir.path().join(".").join("flames/");
    for spelling in [profile.clone(), respelled] {
        let (second, output) = run(&["--base", BASE, "--duration", "0.2", "--profile-dir", spelling.to_str().unwrap()]);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{}: {stderr}", spelling.display());
        assert!(stderr.contains("another faultscale run writes its profile into this directory"), "{stderr}");
        assert!(trees_of(&base, second).is_empty());
    }
    signal(pid, libc::SIGTERM);
    let output = first.wait_with_output().unwrap();
    assert_nothing_left(&base, pid);
    assert_eq!(output.status.code(), Some(143), "{}", text(&output.stderr));
    // Once the first run is gone, the directory is free again.
    let (_, output) =
        run(&["--base", BASE, "--duration", "0.2", "--slices", "1", "--profile-dir", profile.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains("profile files in"), "{}", text(&output.stderr));
}
