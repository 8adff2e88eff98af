//! What needs perf events on the real kernel: --profile's memcg family share and cost per
//! placement, the folded stacks and flame graphs, agreement with `perf record` of a plain run,
//! a --profile-dir another live run writes, and `--kernel-count perf` against the loop.
//!
//! A kernel without perf events (the user-mode-linux guests') or a machine without the perf
//! tool cannot run them: libtest-mimic's harness (`harness = false`) reports them ignored
//! there and says why, where libtest would count a test that returned early as passed.

#[macro_use]
mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use common::*;

fn main() {
    let perf_tool = Command::new("perf").arg("--version").output().is_ok_and(|o| o.status.success());
    let perf_tool_missing =
        (!perf_tool).then(|| "the perf tool is not installed (Debian: linux-perf; .ci/run installs it)".to_string());
    run_trials(vec![
        root_trial(
            "profile_attributes_memcg_cost_to_every_placement",
            perf_events_missing(),
            profile_attributes_memcg_cost_to_every_placement,
        ),
        root_trial(
            "the_memcg_share_agrees_with_perf_record",
            perf_events_missing().or(perf_tool_missing),
            the_memcg_share_agrees_with_perf_record,
        ),
        root_trial(
            "a_profile_dir_another_live_run_writes_is_refused",
            perf_events_missing(),
            a_profile_dir_another_live_run_writes_is_refused,
        ),
        root_trial("perf_counters_agree_with_the_loop", perf_events_missing(), perf_counters_agree_with_the_loop),
    ])
}

fn summaries(json: &Path) -> Vec<serde_json::Value> {
    let document: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    document["summaries"].as_array().unwrap().clone()
}

fn profile_attributes_memcg_cost_to_every_placement() {
    let (_serial, base) = needs_root();
    let dir = tempfile::tempdir().unwrap();
    let (profiles, json) = (dir.path().join("D"), dir.path().join("J.json"));
    let (_, output) = run_clean(
        &base,
        &[
            "--base",
            BASE,
            "--cgroup",
            "child",
            "--duration",
            "3",
            "--profile",
            "--profile-dir",
            profiles.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stderr}");
    for summary in summaries(&json) {
        let memcg = &summary["memcg"];
        let share = memcg["share"].as_f64().unwrap_or_else(|| panic!("no memcg figure: {summary}"));
        // Every placement here is a memcg (the base is one already): charging shows.
        assert!(share > 0.01 && share < 0.40, "{}: memcg share {share}", summary["placement"]);
        let ns = memcg["ns_per_fault"].as_f64().unwrap();
        assert!(ns > 0.0, "{summary}");
        assert!(memcg["low"].is_number() && memcg["high"].is_number(), "an interval over the 3 slices: {memcg}");
        assert!(memcg["samples"].as_u64().unwrap() > 1000, "{memcg}");
    }
    assert!(stdout.contains("base: memcg ") && stdout.contains("child: memcg "), "{stdout}");
    assert!(stdout.contains("most changed per fault: "), "{stdout}");

    let files: Vec<String> = files_in(&profiles).iter().map(|f| f.to_string_lossy().into_owned()).collect();
    for expected in ["base-2tasks.folded", "child-2tasks.folded", "base-2tasks.svg", "child-2tasks.svg"] {
        let expected = expected.replace("2tasks", &format!("{}tasks", summaries(&json)[0]["tasks"]));
        assert!(files.contains(&expected), "{expected} in {files:?}");
    }
    assert!(files.iter().any(|f| f.ends_with("-vs-base.svg")), "a differential flame graph: {files:?}");
    let folded =
        std::fs::read_to_string(profiles.join(files.iter().find(|f| f.starts_with("child")).unwrap())).unwrap();
    let charges = ["charge_memcg", "__mem_cgroup_charge", "memcg1_commit_charge", "try_charge_memcg", "commit_charge"];
    assert!(
        folded.lines().any(|l| charges.iter().any(|c| l.contains(c))),
        "no memcg charge frame in the folded stacks"
    );
    let svg = std::fs::read_to_string(profiles.join(files.iter().find(|f| f.ends_with(".svg")).unwrap())).unwrap();
    assert!(svg.starts_with("<?xml") && svg.contains("<svg"), "an SVG");
}

/// `perf report`'s self share per symbol of a recording.
fn perf_self_shares(data: &Path) -> HashMap<String, f64> {
    let report = Command::new("perf")
        .args([
            "report",
            "-i",
            data.to_str().unwrap(),
            "--stdio",
            "--no-children",
            "--sort",
            "sym",
            "--percent-limit",
            "0",
        ])
        .output()
        .expect("perf report");
    let mut shares = HashMap::new();
    for line in text(&report.stdout).lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // "  12.34%  [k] function_name"
        if let [percent, _kind, name, ..] = fields[..]
            && let Some(value) = percent.strip_suffix('%').and_then(|p| p.parse::<f64>().ok())
        {
            *shares.entry(name.to_string()).or_default() += value / 100.0;
        }
    }
    shares
}

fn the_memcg_share_agrees_with_perf_record() {
    let (_serial, base) = needs_root();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("J.json");
    let plain = ["--base", BASE, "--cgroup", "child", "--no-baseline", "--duration", "3", "--warmup", "0"];
    let mut profiled = plain.to_vec();
    profiled.extend(["--profile", "--json", json.to_str().unwrap()]);
    let (_, output) = run_clean(&base, &profiled);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let memcg = summaries(&json)[0]["memcg"].clone();
    let ours = memcg["share"].as_f64().unwrap();
    let family: Vec<String> =
        memcg["functions"].as_array().unwrap().iter().map(|f| f.as_str().unwrap().to_string()).collect();

    // The same workload and placement, recorded by perf itself (cpu-clock, all threads).
    let data = dir.path().join("perf.data");
    let recorded = Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock", "-F", "1999", "-g", "-o", data.to_str().unwrap(), "--"])
        .arg(binary())
        .args(plain)
        .output()
        .unwrap();
    assert!(recorded.status.success(), "{}", text(&recorded.stderr));
    let shares = perf_self_shares(&data);
    let theirs: f64 = family.iter().filter_map(|f| shares.get(f)).sum();
    eprintln!("memcg share: faultscale {:.2}%, perf record {:.2}%", 100.0 * ours, 100.0 * theirs);
    // Under QEMU's emulator (an AMX host's guest rerun) both profilers sample an emulated
    // clock, and 14.1% against 10.7% was seen once: there the shares must agree to 5 points.
    let env = Command::new(binary()).args(["env", "--base", "self"]).output().unwrap();
    let emulated = text(&env.stdout).lines().any(|l| l.starts_with("virtualization") && l.contains("tcg"));
    let within = if emulated { 0.05 } else { 0.02 };
    assert!(
        (ours - theirs).abs() <= within,
        "faultscale {ours:.4} vs perf {theirs:.4} (within {within}) over {family:?}"
    );
    assert!(cleanup(&[]).status.success());
}

/// Two runs with one --profile-dir: the second is refused before it starts (exit 2), as an
/// output file another run writes is, however the directory is spelled and whether it exists
/// yet. Before, both said "wrote 5 profile files" and the last to finish replaced the other's.
fn a_profile_dir_another_live_run_writes_is_refused() {
    let (_serial, base) = needs_root();
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

fn perf_counters_agree_with_the_loop() {
    let (_serial, base) = needs_root();
    let (_, output) = run_clean(&base, &["--base", BASE, "--duration", "0.5", "--kernel-count", "perf", "--csv", "-"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let mut reader = csv::Reader::from_reader(output.stdout.as_slice());
    let headers = reader.headers().unwrap().clone();
    let column = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let mut rows = 0;
    for record in reader.records() {
        let record = record.unwrap();
        let faults: f64 = record[column("faults")].parse().unwrap();
        let kernel: f64 = record[column("kernel_faults")].parse().unwrap();
        assert_eq!(&record[column("kernel_count_source")], "perf");
        // Besides 1%, one iteration's pages (256 at most): the faults of an iteration the
        // freeze cut short are the kernel's, not yet the loop's. Where a slice faults some
        // ten thousand times (an emulated QEMU guest: 13,824 by the loop, 13,987 by perf), 1%
        // alone is less than that.
        assert!(faults > 0.0 && (faults - kernel).abs() <= 0.01 * kernel + 256.0, "loop {faults} vs perf {kernel}");
        rows += 1;
    }
    assert_eq!(rows, 2);
    // perf stat's block on the terminal (stderr here, since the CSV owns stdout); hardware
    // counters either count or say so.
    let stderr = text(&output.stderr);
    for line in ["msec task-clock", "context-switches", "cpu-migrations", "page-faults"] {
        assert!(stderr.contains(line), "{line}: {stderr}");
    }
    for hardware in ["cycles", "instructions"] {
        let line =
            stderr.lines().find(|l| l.trim_end().ends_with(hardware)).unwrap_or_else(|| panic!("{hardware}: {stderr}"));
        let value = line.split_whitespace().next().unwrap();
        assert!(value == "<not" || value.replace(',', "").parse::<u64>().is_ok(), "{line}");
    }
}
