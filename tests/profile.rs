//! --profile on the real kernel: the memcg family's share and cost per placement, the folded
//! stacks and flame graphs, and agreement with `perf record` of a plain run.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use common::*;

fn summaries(json: &Path) -> Vec<serde_json::Value> {
    let document: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    document["summaries"].as_array().unwrap().clone()
}

#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn profile_attributes_memcg_cost_to_every_placement() {
    let _serial = needs_root();
    if !perf_events_available() {
        return;
    }
    let base = runs_dir();
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

#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn the_memcg_share_agrees_with_perf_record() {
    let _serial = needs_root();
    if !perf_events_available() {
        return;
    }
    if Command::new("perf").arg("--version").output().map(|o| !o.status.success()).unwrap_or(true) {
        eprintln!("skipped: the perf tool is not installed (Debian: linux-perf; .ci/run installs it)");
        return;
    }
    let base = runs_dir();
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
