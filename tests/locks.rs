//! --locks on the real kernel: the contention tracepoints paired and named by caller, a
//! run whose events cannot be opened going on without lock figures, saying why, never 0, and
//! `compare` of two runs' lock figures.
//!
//! A kernel without perf events cannot run the first: libtest-mimic's harness
//! (`harness = false`) reports it ignored there and says why.

#[macro_use]
mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::*;

fn main() {
    run_trials(vec![
        root_trial("locks_name_the_callers_that_contend", perf_events_missing(), locks_name_the_callers_that_contend),
        root_trial(
            "compare_shows_the_lock_wait_change_per_placement_and_caller",
            perf_events_missing(),
            compare_shows_the_lock_wait_change_per_placement_and_caller,
        ),
        root_trial(
            "fork_says_its_lock_figures_leave_its_children_out",
            perf_events_missing(),
            fork_says_its_lock_figures_leave_its_children_out,
        ),
        root_trial(
            "a_run_without_the_events_goes_on_and_says_why",
            None,
            a_run_without_the_events_goes_on_and_says_why,
        ),
        root_trial(
            "a_run_without_permission_goes_on_and_says_why",
            setpriv_missing().or_else(perf_events_missing),
            a_run_without_permission_goes_on_and_says_why,
        ),
    ])
}

fn setpriv_missing() -> Option<String> {
    let present = Command::new("setpriv").arg("--version").output().is_ok_and(|o| o.status.success());
    (!present).then(|| "setpriv (util-linux) is not installed".to_string())
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Threads of one process mapping and unmapping one file contend on their mm's mmap_lock
/// (a write each time) thousands of times a second: rwsem:W from the mmap and munmap paths.
/// fork's faults are its children's, whose waits the per-worker events do not see: the run
/// says so once, and still counts the workers' own.
fn fork_says_its_lock_figures_leave_its_children_out() {
    let (_serial, base) = needs_root();
    let args = ["--base", BASE, "--locks", "--workload", "fork", "--size", "1M", "--duration", "1"];
    let (_, output) = run_clean(&base, &args);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stderr}");
    let said = stderr.matches("--locks: its faults are taken by the children it forks").count();
    assert_eq!(said, 1, "said once, whatever the crews: {stderr}");
    assert!(stdout.contains("locks: base: "), "the workers' own waits still counted: {stdout}");
}

fn locks_name_the_callers_that_contend() {
    let (_serial, base) = needs_root();
    let dir = tempfile::tempdir().unwrap();
    let (json_path, csv_path) = (dir.path().join("J.json"), dir.path().join("C.csv"));
    let args = [
        "--base",
        BASE,
        "--locks",
        "--workload",
        "mmap-file",
        "--mode",
        "thread",
        "--tasks",
        "4",
        "--cgroup",
        "child",
        "--duration",
        "1",
        "--json",
        json_path.to_str().unwrap(),
        "--csv",
        csv_path.to_str().unwrap(),
    ];
    let (_, output) = run_clean(&base, &args);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("--locks"), "the events opened: {stderr}");
    let document = json(&json_path);
    for summary in document["summaries"].as_array().unwrap() {
        let locks = &summary["locks"];
        assert!(locks["contentions_per_kop"].as_f64().unwrap() > 0.0, "{summary}");
        assert!(locks["wait_ns_per_op"].as_f64().unwrap() > 0.0, "{summary}");
        let callers: Vec<(&str, &str)> = locks["callers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["caller"].as_str().unwrap(), c["kind"].as_str().unwrap()))
            .collect();
        assert!(
            callers.iter().any(|(caller, kind)| *kind == "rwsem:W" && !caller.starts_with("down_write")),
            "mmap_lock's writers, named by the code that took it: {callers:?}"
        );
        let is_baseline = summary["placement"] == "base";
        assert_eq!(locks["wait_ns_per_op_vs_baseline"].is_object(), !is_baseline, "{summary}");
    }
    let measurement = &document["measurements"][0];
    assert!(measurement["result"]["locks"]["contentions"].as_u64().unwrap() > 0, "{measurement}");
    assert!(measurement["lock_contentions_per_kop"].as_f64().unwrap() > 0.0, "{measurement}");
    for row in read_csv(&csv_path) {
        assert!(number(&row, "lock_contentions_per_kop") > 0.0 && number(&row, "lock_wait_ns_per_op") > 0.0);
    }
    assert!(stdout.contains("locks: base: ") && stdout.contains("locks: child: "), "{stdout}");
    assert!(stdout.contains(" rwsem:W "), "{stdout}");
}

/// Two runs of mmap-file with --locks, four cgroup instances each, compared through the
/// binary: per placement the lock wait's and contentions' change with their interval and p,
/// per caller (named by the code that contended) the lock wait's change, in the table, the
/// CSV and markdown; against a run whose events could not be opened, one warning saying why,
/// no lock line, and the rest compared.
fn compare_shows_the_lock_wait_change_per_placement_and_caller() {
    let (_serial, base) = needs_root();
    let dir = tempfile::tempdir().unwrap();
    let measure = |name: &str, extra: &[(&str, &Path)], duration: &str| {
        let path = dir.path().join(name);
        let mut command = Command::new(binary());
        command.envs(extra.iter().copied());
        let args = ["--base", BASE, "--locks", "--workload", "mmap-file", "--tasks", "2", "--cgroup", "child"];
        command.args(args).args(["--duration", duration, "--slices", "8", "--generations", "4", "--quiet"]);
        let child = command.arg("--json").arg(&path).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        let pid = child.id();
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{}", text(&output.stderr));
        assert_nothing_left(&base, pid);
        path.to_str().unwrap().to_string()
    };
    let (a, b) = (measure("a.json", &[], "1"), measure("b.json", &[], "1"));
    let empty = dir.path().join("tracefs");
    std::fs::create_dir(&empty).unwrap();
    let absent = measure("absent.json", &[("FAULTSCALE_TRACEFS", &empty)], "0.4");
    let compare = |args: &[&str]| {
        let output = Command::new(binary()).arg("compare").args(args).output().unwrap();
        assert!(output.status.success(), "{}", text(&output.stderr));
        (text(&output.stdout), text(&output.stderr))
    };
    let (table, said) = compare(&[&a, &b]);
    assert!(!said.contains("lock"), "both have lock figures: {said}");
    for placement in ["base", "child"] {
        let row = table.lines().position(|l| l.starts_with(&format!("mmap-file process 2t {placement} "))).unwrap();
        let wait = table.lines().nth(row + 1).unwrap().trim_start();
        // Four instances a run: tested, with an interval and a p.
        assert!(wait.starts_with("lock wait ns/loop ") && wait.contains(") p="), "{table}");
        assert!(wait.contains("; lock contentions/1k loops "), "{table}");
        let caller = table.lines().nth(row + 2).unwrap().trim_start();
        assert!(caller.contains("<-") && caller.contains(" ns/loop, ") && caller.contains(" to "), "{table}");
    }
    assert!(table.contains("\nlock wait = ns per operation"), "{table}");
    let (csv, _) = compare(&[&a, &b, "--format", "csv"]);
    let rows: Vec<csv::StringRecord> = csv::Reader::from_reader(csv.as_bytes()).records().map(Result::unwrap).collect();
    let header: Vec<String> =
        csv::Reader::from_reader(csv.as_bytes()).headers().unwrap().iter().map(str::to_string).collect();
    let at = |column: &str| header.iter().position(|h| h == column).unwrap();
    assert_eq!(rows.len(), 2, "{csv}");
    for row in &rows {
        for column in ["base_lock_wait_ns_per_op", "lock_wait_ns_per_op_change_low", "lock_contentions_p_holm"] {
            assert!(row[at(column)].parse::<f64>().is_ok(), "{column}: {csv}");
        }
    }
    let (markdown, _) = compare(&[&a, &b, "--format", "markdown"]);
    assert!(markdown.contains("| lock wait ns/op base |") && markdown.contains("| row | caller |"), "{markdown}");
    // A run whose events could not be opened: said, with why; no lock line; the rest compared.
    let (table, said) = compare(&[&a, &absent]);
    let notes: Vec<&str> = said.lines().filter(|l| l.contains("lock")).collect();
    assert_eq!(notes.len(), 1, "{said}");
    assert!(
        notes[0].contains("absent.json: --locks gave that run no lock figures (")
            && notes[0].contains("holds no tracefs events"),
        "{said}"
    );
    assert!(!table.contains("lock wait ns/") && table.contains("mmap-file process 2t child "), "{table}");
}

/// FAULTSCALE_TRACEFS at a directory without the events: one warning, the run complete, the
/// JSON without lock figures and the CSV's cells empty.
fn a_run_without_the_events_goes_on_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("tracefs");
    std::fs::create_dir(&empty).unwrap();
    let mut command = Command::new(binary());
    command.env("FAULTSCALE_TRACEFS", &empty);
    let said = run_without_lock_figures(command, dir.path());
    assert!(said.contains("holds no tracefs events"), "{said}");
}

/// Root without CAP_SYS_ADMIN and CAP_PERFMON (setpriv's bounding set): tracefs cannot be
/// mounted, or where it is mounted the tracepoints cannot be opened (perf_event_paranoid above
/// -1): the same one warning and no lock figures.
fn a_run_without_permission_goes_on_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new("setpriv");
    command.args(["--bounding-set=-sys_admin,-perfmon"]).arg(binary());
    let said = run_without_lock_figures(command, dir.path());
    assert!(said.contains("mounting it failed") || said.contains("refused"), "{said}");
}

/// Runs `command` (faultscale, or what starts it) with --locks where the events cannot be
/// opened, checks that the run went on without lock figures, and returns the one warning.
fn run_without_lock_figures(mut command: Command, dir: &Path) -> String {
    let (_serial, base) = needs_root();
    let (json_path, csv_path) = (dir.join("J.json"), dir.join("C.csv"));
    let args = [
        "--base",
        BASE,
        "--locks",
        "--cgroup",
        "child",
        "--duration",
        "0.4",
        "--json",
        json_path.to_str().unwrap(),
        "--csv",
        csv_path.to_str().unwrap(),
    ];
    let child = command.args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    let output = child.wait_with_output().unwrap();
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stderr}");
    // setpriv execs faultscale in its own process: the pid is the run's either way.
    assert_nothing_left(&base, pid);
    let said: Vec<&str> = stderr.lines().filter(|l| l.contains("--locks")).collect();
    assert_eq!(said.len(), 1, "one line for the whole run: {stderr}");
    assert!(said[0].contains("no lock figures"), "{stderr}");
    let document = json(&json_path);
    assert!(document["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("no lock figures")));
    for measurement in document["measurements"].as_array().unwrap() {
        assert!(measurement["result"]["locks"].is_null(), "absent, not zero: {measurement}");
        assert!(measurement["lock_wait_ns_per_op"].is_null(), "{measurement}");
    }
    for summary in document["summaries"].as_array().unwrap() {
        assert!(summary.get("locks").is_none(), "{summary}");
    }
    for row in read_csv(&csv_path) {
        assert_eq!((row["lock_contentions_per_kop"].as_str(), row["lock_wait_ns_per_op"].as_str()), ("", ""));
    }
    assert!(!stdout.contains("locks:"), "{stdout}");
    said[0].to_string()
}
