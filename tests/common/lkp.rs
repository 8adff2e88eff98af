//! What faultscale's LKP program (integrations/lkp) must say: the stats `parse` prints,
//! checked against the JSON of the run they came from (tests/lkp.rs on this host, tests/qemu.rs
//! at a guest's true root).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Whether ruby runs here with every one of `libraries` (its `-r` names).
pub fn ruby_has(libraries: &[&str]) -> bool {
    let requires: Vec<String> = libraries.iter().map(|l| format!("-r{l}")).collect();
    Command::new("ruby").args(&requires).args(["-e", ""]).output().is_ok_and(|o| o.status.success())
}

/// The ruby libraries `parse` requires.
pub const PARSE_NEEDS: [&str; 2] = ["active_support/core_ext/enumerable", "json"];

/// `parse` as LKP's run-stats runs it, under ruby with `lkp_src`'s lib/statistics: the
/// program's output on stdin.
pub fn parse(lkp_src: &Path, program: &Path, raw: &Path) -> String {
    let output = Command::new("ruby")
        .arg(program.join("parse"))
        .env("LKP_SRC", lkp_src)
        .stdin(std::fs::File::open(raw).unwrap())
        .output()
        .unwrap();
    assert!(output.status.success(), "parse failed: {}", String::from_utf8_lossy(&output.stderr));
    assert!(output.stderr.is_empty(), "parse said: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stats(parsed: &str) -> BTreeMap<String, f64> {
    parsed
        .lines()
        .map(|line| {
            let (key, value) = line.split_once(": ").unwrap_or_else(|| panic!("not `key: value`: {line:?}"));
            assert!(!key.contains(char::is_whitespace), "LKP's dump-stat refuses whitespace in {key:?}");
            (key.to_string(), value.parse().unwrap_or_else(|_| panic!("not a number: {line:?}")))
        })
        .collect()
}

/// The summary of the JSON that run printed between its markers.
pub fn embedded_json(raw: &str) -> Value {
    let marker = "faultscale-summary-begin\n";
    let begin = raw.find(marker).expect("the summary's begin marker") + marker.len();
    let end = raw.find("\nfaultscale-summary-end").expect("the summary's end marker");
    serde_json::from_str(&raw[begin..end]).unwrap()
}

/// Every stat the document holds, each with how far printing may round it.
pub fn expected_stats(doc: &Value) -> BTreeMap<String, (f64, f64)> {
    let mut out = BTreeMap::new();
    let summaries = doc["summaries"].as_array().unwrap();
    let mut put = |key: String, value: &Value, scale: f64, tolerance: f64| {
        if let Some(v) = value.as_f64() {
            out.insert(key, (v * scale, tolerance));
        }
    };
    // A clean run is marked as passing, as stress-ng's parse marks a stressor's.
    put("pass".into(), &Value::from(1), 1.0, 0.0);
    let overhead = |put: &mut dyn FnMut(String, &Value, f64, f64), prefix: &str, o: &Value| {
        put(format!("{prefix}cost_ratio%"), &o["mean"], 100.0, 0.005);
        put(format!("{prefix}cost_ratio_low%"), &o["low"], 100.0, 0.005);
        put(format!("{prefix}cost_ratio_high%"), &o["high"], 100.0, 0.005);
    };
    let is_baseline = |s: &&Value| s["placement"] == "root" || s["placement"] == "base";
    // The headline (the first placement asked for at the largest task count) and the
    // control there: their cost ratios are given once, unprefixed.
    let largest = summaries.iter().filter_map(|s| s["tasks"].as_u64()).max();
    let at_largest: Vec<&Value> = summaries.iter().filter(|s| s["tasks"].as_u64() == largest).collect();
    let headline = at_largest.iter().copied().find(|s| !is_baseline(s) && s["placement"] != "control");
    let control = at_largest.iter().copied().find(|s| s["placement"] == "control");
    let given_unprefixed = |s: &Value| [headline, control].into_iter().flatten().any(|h| std::ptr::eq(h, s));
    // The baseline is keyed `base` wherever run put it below the root, so that compare lines
    // up two machines' runs; `root` where the job asked for the root (run's base_option).
    let baseline_key = if doc["base_option"] == "root" { "root" } else { "base" };
    for s in summaries {
        let name: String = if is_baseline(&s) {
            baseline_key.into()
        } else {
            s["placement"]
                .as_str()
                .unwrap()
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() || "_:+=-".contains(c) { c } else { '_' })
                .collect()
        };
        // A task count's figures, keyed as will-it-scale keys them (`2.processes`).
        let prefix = format!("{}.{name}", s["tasks"]);
        put(format!("{prefix}.cpu_ns_per_fault"), &s["cpu_ns_per_fault"], 1.0, 0.05);
        put(format!("{prefix}.faults_per_sec"), &s["faults_per_sec"]["mean"], 1.0, 0.5);
        if !given_unprefixed(s) {
            overhead(&mut put, &format!("{prefix}."), &s["overhead_vs_baseline"]);
        }
        put(format!("{prefix}.memcg_ns_per_fault"), &s["memcg"]["ns_per_fault"], 1.0, 0.05);
    }
    if let Some(head) = headline {
        overhead(&mut put, "", &head["overhead_vs_baseline"]);
    }
    if let Some(control) = control {
        overhead(&mut put, "control_", &control["overhead_vs_baseline"]);
    }
    let baseline: Vec<&Value> = summaries.iter().filter(is_baseline).collect();
    for ops in ["per_process_ops", "per_thread_ops"] {
        let values: Vec<f64> = baseline.iter().filter_map(|s| s[ops].as_f64()).collect();
        if !values.is_empty() {
            put(ops.into(), &Value::from(values.iter().sum::<f64>() / values.len() as f64), 1.0, 1.0);
        }
    }
    if let Some(last) = baseline.iter().rev().find(|s| s["scalability"].is_number()) {
        put("scalability".into(), &last["scalability"], 1.0, 5e-7);
    }
    let largest = doc["per_level"].as_array().and_then(|l| l.iter().max_by_key(|c| c["tasks"].as_u64()));
    if let Some(level) = largest {
        put("per_level_ns".into(), &level["cpu"]["ns_per_fault"], 1.0, 0.05);
        put("per_level_low_ns".into(), &level["cpu"]["low"], 1.0, 0.05);
        put("per_level_high_ns".into(), &level["cpu"]["high"], 1.0, 0.05);
        put("per_level_memcg_ns".into(), &level["memcg"]["ns_per_fault"], 1.0, 0.05);
    }
    // Every fault the loops counted, for LKP's path length: run sums the crews' into the
    // summary.
    let workload = doc["workload"].as_f64().unwrap_or(0.0);
    if workload > 0.0 {
        put("workload".into(), &Value::from(workload), 1.0, 0.5);
    }
    out
}

pub fn assert_stats_match(parsed: &str, doc: &Value) {
    let got = stats(parsed);
    let want = expected_stats(doc);
    assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>(), "stats named\n{parsed}");
    for (key, (value, tolerance)) in &want {
        assert!((got[key] - value).abs() <= tolerance + 1e-9, "{key}: parse says {}, the JSON {value}", got[key]);
    }
}
