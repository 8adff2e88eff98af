//! Never leave a trace: stop signals at every phase, SIGKILL and `cleanup`, OOM-killed and
//! failing workers, concurrent runs.

mod common;

use std::time::{Duration, Instant};

use common::*;

#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn each_stop_signal_in_each_phase_cleans_up_with_its_exit_code() {
    let (_serial, base) = needs_root();
    // (signal, exit code, args, delay after the run is up)
    let cases: &[(i32, i32, &[&str], u64)] = &[
        (libc::SIGINT, 130, &["--cgroup", "nested:3", "--duration", "30"], 200),
        (libc::SIGTERM, 143, &["--cgroup", "child", "--warmup", "30", "--duration", "1"], 200),
        (libc::SIGHUP, 129, &["--cgroup", "child,nested:2", "--duration", "30"], 0),
    ];
    for &(sig, code, args, delay) in cases {
        let mut all = vec!["--base", BASE];
        all.extend(args);
        let child = spawn(&all);
        let pid = child.id();
        wait_running(&base, pid);
        std::thread::sleep(Duration::from_millis(delay));
        signal(pid, sig);
        let output = child.wait_with_output().unwrap();
        assert_nothing_left(&base, pid);
        assert_eq!(output.status.code(), Some(code), "signal {sig}: {}", text(&output.stderr));
        assert!(text(&output.stderr).contains("interrupted by SIG"), "{}", text(&output.stderr));
    }
}

#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn a_signal_during_setup_leaves_nothing() {
    let (_serial, base) = needs_root();
    // Sent as soon as the process exists: it lands during option checks, cgroup creation or
    // forking, whichever the process has reached.
    for delay_us in [0u64, 500, 2000, 5000] {
        let child = spawn(&["--base", BASE, "--cgroup", "nested:8", "--duration", "5"]);
        let pid = child.id();
        std::thread::sleep(Duration::from_micros(delay_us));
        signal(pid, libc::SIGTERM);
        let output = child.wait_with_output().unwrap();
        assert_nothing_left(&base, pid);
        // Either killed before the handler was installed, or handled: 143 either way.
        let status = output.status;
        use std::os::unix::process::ExitStatusExt;
        assert!(status.code() == Some(143) || status.signal() == Some(libc::SIGTERM), "{status:?}");
    }
}

#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn a_second_ctrl_c_does_not_abandon_cleanup_and_completed_repetitions_are_kept() {
    let (_serial, base) = needs_root();
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("out.csv");
    let json = dir.path().join("out.json");
    let child = spawn(&[
        "--base",
        BASE,
        "--cgroup",
        "child",
        "--duration",
        "0.4",
        "--repeat",
        "20",
        "--csv",
        csv.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    let pid = child.id();
    wait_running(&base, pid);
    // Repetition 1 (two placements of 0.4 s) is complete after about a second.
    std::thread::sleep(Duration::from_millis(1500));
    signal(pid, libc::SIGINT);
    signal(pid, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(1));
    signal(pid, libc::SIGINT);
    let output = child.wait_with_output().unwrap();
    assert_nothing_left(&base, pid);
    assert_eq!(output.status.code(), Some(130), "{}", text(&output.stderr));
    let rows = read_csv(&csv);
    assert!(!rows.is_empty());
    // Every completed slice is written; only those of the round the stop cut short are flagged
    // (and in no figure), so the counted ones pair up.
    let counted = rows.iter().filter(|r| r["counted"] == "true").count();
    assert_eq!(counted % 2, 0, "counted slices come in whole rounds: {rows:?}");
    assert!(rows.iter().filter(|r| r["round_complete"] == "false").count() <= 1, "{rows:?}");
    assert!(rows.iter().all(|r| r["run_complete"] == "false"));
    let repetitions: Vec<u32> = rows.iter().map(|r| r["repetition"].parse().unwrap()).collect();
    assert!(*repetitions.iter().max().unwrap() < 20);
    let document: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(document["complete"], false);
    assert_eq!(files_in(dir.path()).len(), 2, "no temporary files beside the outputs");
}

#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn sigkill_leaves_empty_cgroups_that_cleanup_removes() {
    let (_serial, base) = needs_root();
    let child = spawn(&["--base", BASE, "--cgroup", "child,nested:4", "--duration", "30"]);
    let pid = child.id();
    wait_running(&base, pid);
    std::thread::sleep(Duration::from_millis(200));
    signal(pid, libc::SIGKILL);
    let output = child.wait_with_output().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(output.status.signal(), Some(libc::SIGKILL));
    // Workers die with the harness (PDEATHSIG); the trees stay, empty.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !faultscale_processes().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(faultscale_processes().is_empty(), "workers outlived the harness");
    // One tree of the run's own (--base new), holding both placements' cgroups.
    let trees = trees_of(&base, pid);
    assert_eq!(trees.len(), 1, "{trees:?}");
    let inside: Vec<String> = files_in(&trees[0]).iter().map(|n| n.to_string_lossy().into_owned()).collect();
    for placement in ["-child", "-nested4"] {
        assert!(
            inside.iter().any(|n| n.ends_with(placement) || n.contains(&format!("{placement}-g"))),
            "{placement} in {inside:?}"
        );
    }

    let dry = cleanup(&["--dry-run"]);
    assert!(dry.status.success());
    for tree in &trees {
        assert!(text(&dry.stdout).contains(&format!("would remove {}", tree.display())), "{}", text(&dry.stdout));
        assert!(tree.exists(), "--dry-run removed {}", tree.display());
    }
    let real = cleanup(&[]);
    assert!(real.status.success(), "{}", text(&real.stderr));
    assert_nothing_left(&base, pid);
}

#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn cleanup_keeps_trees_of_live_runs_and_trees_with_processes() {
    let (_serial, base) = needs_root();
    // A live run's tree is kept.
    let child = spawn(&["--base", BASE, "--cgroup", "child", "--duration", "3"]);
    let pid = child.id();
    wait_running(&base, pid);
    let sweep = cleanup(&[]);
    // In our PID namespace, named by its pid alone (it said "in its own PID namespace"), and
    // exit 1 as the exit-code table says of a cleanup that kept something.
    let said = format!("its run (pid {pid}) is still alive");
    assert!(text(&sweep.stdout).contains(&said), "{said} in {}", text(&sweep.stdout));
    assert_eq!(sweep.status.code(), Some(1), "{}", text(&sweep.stderr));
    assert!(!trees_of(&base, pid).is_empty(), "cleanup removed a live run's tree");
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_nothing_left(&base, pid);

    // A tree named as a dead run's but holding a process is kept too. The test builds it under
    // its own cgroup with a sleeping process in it, and removes it afterwards.
    let dead_pid = 4_000_000; // above pid_max: never alive
    let tree = base.join(format!("faultscale-{dead_pid}-feedface-child"));
    std::fs::create_dir(&tree).unwrap();
    let mut sleeper = std::process::Command::new("sleep").arg("30").spawn().unwrap();
    std::fs::write(tree.join("cgroup.procs"), sleeper.id().to_string()).unwrap();
    let sweep = cleanup(&[]);
    let kept = tree.exists();
    // Put the sleeper back in the test's own cgroup before judging, so the tree can go.
    std::fs::write(own_memory_cgroup().join("cgroup.procs"), sleeper.id().to_string()).unwrap();
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
    let removed_after = cleanup(&[]);
    assert!(kept, "cleanup removed a tree with a process in it");
    assert!(text(&sweep.stdout).contains("still has processes"), "{}", text(&sweep.stdout));
    assert!(text(&removed_after.stdout).contains("removed"), "{}", text(&removed_after.stdout));
    assert!(!tree.exists());
}

#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn an_oom_killed_worker_is_reported_for_its_placement_and_the_others_still_report() {
    let (_serial, base) = needs_root();
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("tiny.toml");
    // 2 MiB of memory and 8 MiB touched per iteration, without swap: the OOM killer must act.
    std::fs::write(&profile, "name = \"tiny\"\ndescription = \"OOM on purpose\"\n[[level]]\n\"memory.max\" = \"2M\"\n")
        .unwrap();
    let csv = dir.path().join("out.csv");
    let (_, output) = run_clean(
        &base,
        &[
            "--base",
            BASE,
            "--cgroup",
            profile.to_str().unwrap(),
            "--chunk",
            "8M",
            // 2 s: a 1-CPU guest's baseline takes a good part of a second per 8M iteration.
            "--duration",
            "2",
            "--slices",
            "1",
            "--csv",
            csv.to_str().unwrap(),
        ],
    );
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("tiny slice 1: worker") && stderr.contains("the OOM killer ran in"), "{stderr}");
    let rows = read_csv(&csv);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["placement"], "base");
}

/// A worker OOM-killed under an ancestor's limit is blamed on that ancestor, with its limit:
/// the workers' cgroup (`level2`) has none, its parent 2 MiB. Before, the message named only
/// the worker's cgroup, whose limit was not what killed it.
#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn an_oom_kill_names_the_ancestor_whose_limit_was_reached() {
    let _serial = needs_root();
    let base = runs_dir();
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("above.toml");
    let levels = "[[level]]\n\"memory.max\" = \"2M\"\n[[level]]\n";
    std::fs::write(&profile, format!("name = \"above\"\ndescription = \"OOM from above\"\n{levels}")).unwrap();
    let args =
        ["--base", BASE, "--cgroup", profile.to_str().unwrap(), "--chunk", "8M", "--duration", "2", "--slices", "1"];
    let (_, output) = run_clean(&base, &args);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let killed = stderr.lines().find(|l| l.contains("the OOM killer ran in")).unwrap_or_else(|| panic!("{stderr}"));
    let (worker_cgroup, blamed) = killed.split_once("the OOM killer ran in ").unwrap().1.split_once(" (").unwrap();
    // The profile's second level, whatever the layout names its first (`-above` where the
    // placement's cgroup is its first level, `-above/level1` on pure v2).
    assert!(worker_cgroup.contains("-above") && worker_cgroup.ends_with("/level2"), "{killed}");
    let limiting = worker_cgroup.strip_suffix("/level2").unwrap();
    assert!(blamed.ends_with(&format!("): {limiting} reached its memory limit of 2 MiB")), "{killed}");
}

#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn two_runs_at_once_do_not_clash_and_the_second_warns() {
    let (_serial, base) = needs_root();
    let first = spawn(&["--base", BASE, "--cgroup", "child", "--duration", "2"]);
    let first_pid = first.id();
    wait_running(&base, first_pid);
    // 1 s, not less: in a 1-CPU guest the two runs' workers share the CPU, and 0.3 s once passed
    // without one whole baseline iteration.
    let (second_pid, second) = run(&["--base", BASE, "--cgroup", "child", "--duration", "1"]);
    let first = first.wait_with_output().unwrap();
    assert_nothing_left(&base, first_pid);
    assert_nothing_left(&base, second_pid);
    assert!(first.status.success(), "{}", text(&first.stderr));
    assert!(second.status.success(), "{}", text(&second.stderr));
    let warning = format!("another faultscale run (pid {first_pid}) is running");
    assert!(text(&second.stderr).contains(&warning), "{}", text(&second.stderr));
}
