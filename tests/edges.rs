//! Edges a hostile user found: signals the README promised to handle (a shared --profile-dir,
//! which needs perf events, is in tests/profile.rs), `cleanup` and `env` saying what is not so, and up-front checks that missed.

mod common;

use std::process::Command;
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
    let (_serial, base) = needs_root();
    let dir = tempfile::tempdir().unwrap();
    let tmpdir = dir.path().to_str().unwrap();
    for sig in [libc::SIGFPE, libc::SIGILL, libc::SIGSYS, libc::SIGTRAP, libc::SIGSEGV, libc::SIGBUS, libc::SIGUSR1] {
        let args =
            ["--base", BASE, "--cgroup", "child", "--duration", "30", "--workload", "file-shared", "--tmpdir", tmpdir];
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

/// A --tmpdir with too few free inodes for the run's files (a tmpfs with nr_inodes=3 or 4, in
/// the test's own mount namespace) is refused before anything is created, exit 2; one inode
/// more runs. Before, the directory probe passed and every slice failed (exit 1).
#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn a_tmpdir_without_inodes_for_every_task_is_refused_up_front() {
    let (_serial, base) = needs_root();
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small");
    std::fs::create_dir(&small).unwrap();
    // Two tasks in each of two placements (the baseline and child, whose workers live at
    // once): the run's directory, its boot-id file and four files need 6 inodes, the
    // tmpfs's root takes one. Small files (file-shared, 64K each), so the space check passes
    // in a guest of 512 MiB, whose tmpfs holds half of it.
    for (inodes, code) in [(3, 2), (6, 2), (7, 0)] {
        let script = format!(
            "mount -t tmpfs -o nr_inodes={inodes} fsinodes {small} && exec {bin} --base {BASE} --workload file-shared --chunk 64K --tmpdir {small} --tasks 2 --duration 0.2 --slices 1 -q --csv -",
            small = small.display(),
            bin = binary().display()
        );
        let (pid, output) = run_unshared(&script);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(code), "nr_inodes={inodes}: {stderr}");
        if code == 2 {
            assert!(stderr.contains("free inodes, and the run needs 6") && stderr.lines().count() == 1, "{stderr}");
        }
        assert_nothing_left(&base, pid);
    }
}

/// Without root, `cleanup` says what it needs root for: removing what dead runs left. It
/// creates no cgroup, as the message shared with a run said it did.
#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn cleanup_without_root_says_what_it_needs_root_for() {
    use std::os::unix::process::CommandExt;
    let (_serial, base) = needs_root();
    let output = std::process::Command::new(binary())
        .args(["cleanup", "--base", base.to_str().unwrap()])
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let said = text(&output.stderr);
    assert_ne!(output.status.code(), Some(0), "{said}");
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(said.contains("cleanup needs root to remove the cgroups dead runs left"), "{said}");
    assert!(!said.contains("create cgroups"), "{said}");
}

/// `sh -c script` in a mount namespace of its own; the pid is the script's, which `exec`s
/// faultscale (so the run's trees carry it).
fn run_unshared(script: &str) -> (u32, std::process::Output) {
    let child = std::process::Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", script])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    (pid, child.wait_with_output().unwrap())
}

/// A profile whose name cannot be a directory name (5,000 characters) is refused with the
/// other usage errors, exit 2, before any cgroup is made; before, mkdir failed with "File
/// name too long" after the run began (exit 1).
#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn a_profile_name_too_long_for_a_directory_is_refused_up_front() {
    let (_serial, base) = needs_root();
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("long.toml");
    std::fs::write(&profile, format!("name = \"{}\"\n[[level]]\n", "a".repeat(5000))).unwrap();
    let (pid, output) = run_clean(&base, &["--base", BASE, "--cgroup", profile.to_str().unwrap(), "--duration", "0.2"]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("5000 characters long") && stderr.lines().count() == 1, "{stderr}");
    assert!(trees_of(&base, pid).is_empty());
}

/// A directory named like a run's in `parent`, and (when `hold`) the lock its live run holds.
fn fake_run_directory(parent: &std::path::Path, name: &str, hold: bool) -> (std::path::PathBuf, Option<std::fs::File>) {
    use std::os::fd::AsRawFd;
    let dir = parent.join(name);
    std::fs::create_dir(&dir).unwrap();
    let lock = hold.then(|| {
        let file = std::fs::File::open(&dir).unwrap();
        // The lock a live run holds on its directory (flock, as the run takes it).
        assert_eq!(unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) }, 0);
        file
    });
    (dir, lock)
}

/// `cleanup` names a live run's file directory it keeps, and exits 1 as for anything kept
/// (the dry run too); before, the directory was kept unlisted and the exit was 0.
#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn cleanup_names_a_live_runs_file_directory_and_exits_1() {
    let (_serial, _) = needs_root();
    let scratch = tempfile::tempdir().unwrap();
    let (live, _lock) = fake_run_directory(scratch.path(), "faultscale-4242-0000beef", true);
    let tmpdir = scratch.path().to_str().unwrap();
    for extra in [&["--tmpdir", tmpdir][..], &["--dry-run", "--tmpdir", tmpdir]] {
        let output = cleanup(extra);
        let stdout = text(&output.stdout);
        assert_eq!(output.status.code(), Some(1), "{extra:?}: {stdout}{}", text(&output.stderr));
        let kept = format!("kept {}: its run is still alive", live.display());
        assert!(stdout.contains(&kept), "{extra:?}: {kept} in {stdout}");
        assert!(live.is_dir());
    }
}

/// Without root, `cleanup --dry-run` says a leftover would be removed only by root and exits 1,
/// as the real cleanup would fail; before, it said "would remove" and exited 0.
#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn cleanup_dry_run_without_root_says_removal_needs_root() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let (_serial, _) = needs_root();
    let scratch = tempfile::tempdir().unwrap();
    std::fs::set_permissions(scratch.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (dead, _) = fake_run_directory(scratch.path(), "faultscale-4243-0000cafe", false);
    let base = runs_dir();
    let output = std::process::Command::new(binary())
        .args(["cleanup", "--dry-run", "--base", base.to_str().unwrap(), "--tmpdir", scratch.path().to_str().unwrap()])
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}{}", text(&output.stderr));
    assert!(stdout.contains(&format!("would remove {}, as root: removing it needs root", dead.display())), "{stdout}");
    assert!(dead.is_dir(), "a dry run removed it");
}

/// `sh -c script` in a mount namespace of its own where the cgroup `--base new` builds in is
/// bound onto itself read-only (the machine's cgroupfs is never remounted).
fn on_read_only_cgroup(script: &str) -> (u32, std::process::Output) {
    let dir = runs_dir();
    let dir = dir.display();
    run_unshared(&format!("mount --bind {dir} {dir} && mount -o remount,bind,ro {dir} && {script}"))
}

/// On a read-only cgroupfs `env` says so, advises no `--base new` (made there too) and exits
/// 1; a run is refused before anything is made, exit 2, as for any base that cannot hold it.
/// Before, env advised `--base new`, which failed the same way, and the run exited 1.
#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn env_and_runs_on_a_read_only_cgroupfs_say_so() {
    let (_serial, base) = needs_root();
    let bin = binary();
    let (_, output) = on_read_only_cgroup(&format!("exec {} env --base new", bin.display()));
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}{}", text(&output.stderr));
    assert!(stdout.contains("is on a read-only mount"), "{stdout}");
    assert!(!stdout.contains("faultscale --base new"), "advises a base that fails alike: {stdout}");
    for args in ["--base new", "--base self"] {
        let (pid, output) = on_read_only_cgroup(&format!("exec {} {args} --duration 0.2 --slices 1", bin.display()));
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args}: {stderr}");
        assert!(stderr.contains("read-only mount") && stderr.lines().count() == 1, "{args}: {stderr}");
        assert_nothing_left(&base, pid);
    }
}

/// `env --base /nonexistent` exited 1 after its listing and advised "see `faultscale env`"
/// from inside env; a run given that base exits 2. One line now, exit 2, with the bases there are.
#[test]
fn env_with_a_base_that_does_not_exist_is_a_usage_error() {
    let output =
        std::process::Command::new(binary()).args(["env", "--base", "/faultscale-no-such-base"]).output().unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--base /faultscale-no-such-base:") && stderr.contains("does not exist"), "{stderr}");
    assert!(stderr.contains("root, self, new or a cgroup path") && !stderr.contains("faultscale env"), "{stderr}");
    assert!(output.stdout.is_empty(), "{}", text(&output.stdout));
}

/// `env --base new` names the cgroup the run uses (`...-new`, made in the one found), and the
/// NUMA line gives a count: `numa nodes: 0` read as no node at all.
#[test]
fn env_names_the_new_base_and_counts_numa_nodes() {
    let output = std::process::Command::new(binary()).args(["env", "--base", "new"]).output().unwrap();
    let stdout = text(&output.stdout);
    let line =
        |label: &str| stdout.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("{label} in {stdout}"));
    assert!(line("base (new):").contains("faultscale-<pid>-<nonce>-new, a cgroup the run makes in "), "{stdout}");
    let nodes = line("numa nodes:").trim_start_matches("numa nodes:").trim();
    let online = std::fs::read_to_string("/sys/devices/system/node/online").unwrap_or_default();
    if !online.trim().is_empty() {
        let (count, list) = nodes.split_once(' ').unwrap_or_else(|| panic!("{nodes}"));
        assert!(count.parse::<usize>().unwrap() >= 1, "{nodes}");
        assert!(list == format!("(node {})", online.trim()) || list == format!("(nodes {})", online.trim()), "{nodes}");
    }
}

/// A --profile-dir that is a symbolic link to nothing: refused before anything is measured
/// (exit 2), naming the link's target. Before, the whole run measured, printed its table, then
/// failed with "File exists" and lost every profile.
#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn a_dangling_profile_dir_link_is_refused_before_measuring() {
    let (_serial, _) = needs_root();
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("pd");
    std::os::unix::fs::symlink("missing", &link).unwrap();
    let json = dir.path().join("pd.json");
    let started = std::time::Instant::now();
    let (pid, output) = run(&[
        "--base",
        BASE,
        "--duration",
        "2",
        "--profile-dir",
        link.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_nothing_left(&runs_dir(), pid);
    let said = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(said.contains("--profile-dir") && said.contains("symbolic link to missing"), "{said}");
    assert!(started.elapsed() < Duration::from_secs(2), "refused before measuring: {:?}", started.elapsed());
    assert!(!json.exists() && std::fs::read_link(&link).is_ok(), "nothing written, the link kept");
}

/// `--json -` into a file system that fills: the stream is said to be incomplete, never to
/// keep a checkpoint (a stream takes none). Before: "the file keeps the checkpoint of 1 of the
/// 4 slices measured", over 64 KiB cut inside a string.
#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn a_stream_that_cannot_take_the_results_is_said_incomplete() {
    let (_serial, _) = needs_root();
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small");
    std::fs::create_dir(&small).unwrap();
    let script = format!(
        "mount -t tmpfs -o size=64k none {small} && exec {bin} --base {BASE} --cgroup child --duration 5 -q --json - > {small}/out.json",
        small = small.display(),
        bin = binary().display()
    );
    let output =
        Command::new("unshare").args(["-m", "--propagation", "private", "sh", "-c", &script]).output().unwrap();
    let said = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(said.contains("writing --json -") && said.contains("what reached the stream is incomplete"), "{said}");
    assert!(!said.contains("checkpoint"), "{said}");
    assert!(faultscale_processes().is_empty());
}

/// `--cpus` listing a thousand CPUs one by one, some not allowed: the one-line error says the
/// list in ranges, not echoed as typed (4,109 bytes before).
#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn a_long_cpu_list_is_said_in_ranges() {
    let (_serial, base) = needs_root();
    let list = (0..1024).map(|c| c.to_string()).collect::<Vec<_>>().join(",");
    let (pid, output) = run(&["--base", BASE, "--cpus", &list, "--duration", "1"]);
    assert_nothing_left(&base, pid);
    let said = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(said.contains("--cpus 0-1023:") && said.len() < 300, "{said}");
}

/// A --profile-dir under a file (`afile/sub`) is refused before measuring, as a dangling link
/// is (before: "Not a directory" after the whole run, every profile lost); `--slices auto`
/// gives 24 workers a CPU slices its own turn check takes.
#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn a_profile_dir_under_a_file_is_refused_and_auto_slices_pass_their_own_check() {
    let (_serial, _) = needs_root();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("afile");
    std::fs::write(&file, "").unwrap();
    let under = file.join("sub");
    let (pid, output) = run(&["--base", BASE, "--duration", "2", "--profile-dir", under.to_str().unwrap()]);
    assert_nothing_left(&runs_dir(), pid);
    let said = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(said.contains("afile is not a directory"), "{said}");
    let checked = Command::new(binary())
        .args(["--base", BASE, "--tasks", "48", "--duration", "5", "--check-args", "2"])
        .output()
        .unwrap();
    assert!(checked.status.success(), "{}", text(&checked.stderr));
}

/// A run that replaces an output file that existed says so, in one line naming each file it
/// replaced and none it made new; before, a user's earlier results were replaced unsaid.
#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn a_run_names_the_existing_files_it_replaced() {
    let _serial = needs_root();
    let base = runs_dir();
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (dir.path().join("old.json"), dir.path().join("new.csv"));
    std::fs::write(&old, "an earlier run's results\n").unwrap();
    let args =
        ["--base", BASE, "--duration", "0.2", "-q", "--json", old.to_str().unwrap(), "--csv", new.to_str().unwrap()];
    let replaced_lines = |output: &std::process::Output| -> Vec<String> {
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        text(&output.stderr).lines().filter(|l| l.contains("replaced")).map(str::to_string).collect()
    };
    let (_, first) = run_clean(&base, &args);
    assert_eq!(replaced_lines(&first), [format!("faultscale: replaced the existing {}", old.display())]);
    // Both exist now: one line names both.
    let (_, second) = run_clean(&base, &args);
    let said = replaced_lines(&second);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].contains(old.to_str().unwrap()) && said[0].contains(new.to_str().unwrap()), "{said:?}");
}
