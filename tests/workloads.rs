//! Every workload, in both modes where it can run, in a child cgroup under the test's own
//! cgroup; and the task-count sweep.

mod common;

use common::*;

#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn every_workload_runs_counts_and_cleans_up_in_both_modes() {
    let (_serial, base) = needs_root();
    let tmp = tempfile::tempdir().unwrap();
    let workloads = ["anon", "file-private", "file-shared", "mmap-file", "usemem", "fork"];
    for mode in ["process", "thread"] {
        for workload in workloads {
            if mode == "thread" && workload == "fork" {
                continue;
            }
            let csv = tmp.path().join(format!("{workload}-{mode}.csv"));
            let (_, output) = run_clean(
                &base,
                &[
                    "--base",
                    BASE,
                    "--cgroup",
                    "child",
                    "--no-baseline",
                    "--duration",
                    "1",
                    "--workload",
                    workload,
                    "--mode",
                    mode,
                    "--size",
                    "8M",
                    "--tmpdir",
                    tmp.path().to_str().unwrap(),
                    "--csv",
                    csv.to_str().unwrap(),
                ],
            );
            let context = format!("{workload} as {mode}: {}", text(&output.stderr));
            assert!(output.status.success(), "{context}");
            let rows = read_csv(&csv);
            assert_eq!(rows.len(), 1, "{context}");
            let row = &rows[0];
            assert_eq!(row["workload"], workload);
            assert_eq!(row["mode"], mode);
            assert!(number(row, "faults") > 0.0, "{context}: the loop did not advance");
            if workload == "mmap-file" {
                // It maps and unmaps without touching: loops, no faults to speak of.
                assert_eq!(row["unit"], "loops");
                assert!(number(row, "kernel_faults") < 0.001 * number(row, "faults"), "{context}");
            } else {
                // file-shared counts pages written: on a disk one fault may map several.
                assert_eq!(row["unit"], if workload == "file-shared" { "pages" } else { "faults" });
                assert!(number(row, "kernel_faults") > 0.0, "{context}");
                assert!(number(row, "memcg_pgfault") > 0.0, "{context}");
            }
            if workload != "fork" && workload != "mmap-file" {
                let (faults, kernel) = (number(row, "faults"), number(row, "kernel_faults"));
                // One iteration per worker may be in flight at the stop (8M = 2048 pages).
                let agree = (faults - kernel).abs() <= 0.01 * kernel + 2.0 * 2048.0;
                // Where the kernel counts otherwise (user-mode-linux takes two faults per write
                // to a shared file page), faultscale must say so, with both counts.
                let said = text(&output.stderr).contains(&format!("loop counted {faults} {}", row["unit"]))
                    && text(&output.stderr).contains(&format!("the kernel {kernel} faults"))
                    || text(&output.stderr).contains(&format!("the kernel took {kernel} faults"));
                assert!(agree || said, "{context}: {faults} vs {kernel}, and no warning");
            }
            if ["file-private", "file-shared", "mmap-file"].contains(&workload) {
                assert!(text(&output.stdout).contains("files in "), "{context}");
            }
        }
    }
    // Only the CSVs remain in --tmpdir: every run directory and worker file is gone.
    let left: Vec<String> = files_in(tmp.path()).iter().map(|n| n.to_string_lossy().into_owned()).collect();
    assert!(left.iter().all(|name| name.ends_with(".csv")), "{left:?}");
}

#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn a_task_sweep_yields_a_row_per_count_and_placement() {
    let (_serial, base) = needs_root();
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("sweep.csv");
    let (_, output) = run_clean(
        &base,
        &[
            "--base",
            BASE,
            "--cgroup",
            "child",
            "--duration",
            "0.4",
            // No warmup: the CPU-time bound below is the measured span's.
            "--warmup",
            "0",
            "--tasks",
            "1..3",
            "--workload",
            "mmap-file",
            "--tmpdir",
            tmp.path().to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
        ],
    );
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let rows = read_csv(&csv);
    let keys: Vec<(String, String)> = rows.iter().map(|r| (r["tasks"].clone(), r["placement"].clone())).collect();
    let expected: Vec<(String, String)> =
        ["1", "2", "3"].iter().flat_map(|t| ["base", "child"].map(|p| (t.to_string(), p.to_string()))).collect();
    assert_eq!(keys, expected);
    // More tasks than allowed CPUs are placed round-robin, and the run says so.
    let cpus = std::thread::available_parallelism().unwrap().get();
    let oversubscribed = format!("3 tasks on {cpus} CPU{}", if cpus == 1 { "" } else { "s" });
    assert_eq!(text(&output.stderr).contains(&oversubscribed), 3 > cpus, "{}", text(&output.stderr));
    assert!(stdout.contains("scaling (vs linear"), "{stdout}");
    assert!(stdout.contains("base/child overhead at 1 task:"), "{stdout}");
    for row in &rows {
        let per_task = number(row, "faults_per_sec_per_task") * number(row, "tasks");
        assert!((per_task - number(row, "faults_per_sec")).abs() < 1.0);
        // The workers' CPU time is reported and bounded by what they could get. How it splits
        // between user and system time is the kernel's accounting (user-mode-linux books the
        // guest kernel's own work as user time), so only the sum is checked.
        let cpu_s = number(row, "user_s") + number(row, "sys_s");
        let available_s = number(row, "duration_s") * number(row, "tasks");
        assert!(cpu_s > 0.0 && cpu_s <= 1.1 * available_s + 0.05, "CPU {cpu_s} s of {available_s} s");
    }
}

#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn will_it_scale_page_faults_count_every_page() {
    let (_serial, base) = needs_root();
    let tmp = tempfile::tempdir().unwrap();
    for workload in ["page_fault1", "page_fault2", "page_fault3"] {
        let csv = tmp.path().join(format!("{workload}.csv"));
        let (_, output) = run_clean(
            &base,
            &[
                "--base",
                BASE,
                "--cgroup",
                "child",
                // One placement's workers: 128 MiB of /dev/shm each, which a 512 MiB guest's
                // tmpfs holds for one worker and not for two.
                "--no-baseline",
                "--duration",
                "1",
                "--workload",
                workload,
                "--csv",
                csv.to_str().unwrap(),
            ],
        );
        assert!(output.status.success(), "{workload}: {}", text(&output.stderr));
        for row in read_csv(&csv) {
            let (faults, kernel) = (number(&row, "faults"), number(&row, "kernel_faults"));
            // Counted per page, as will-it-scale does: the loop and the kernel agree to within
            // the one page per worker in flight at the stop (and 1%), or, where the kernel
            // counts otherwise (user-mode-linux: two faults per shared-file write), faultscale
            // says so with both counts.
            // Counted at all: in the user-mode-linux guest every placement's crew holds its
            // 128 MiB file at once, and page_fault3 wrote some 570 pages a second there.
            assert!(faults > 100.0, "{workload}: {faults}");
            let agree = (faults - kernel).abs() <= 0.01 * kernel + number(&row, "tasks");
            let unit = if workload == "page_fault3" { "pages" } else { "faults" };
            assert_eq!(row["unit"], unit, "{workload}: page_fault3 counts pages written");
            let said = text(&output.stderr).contains(&format!("loop counted {faults} {unit}, the kernel {kernel}"));
            assert!(agree || said, "{workload}: {faults} vs {kernel}, and no warning");
        }
        if workload != "page_fault1" {
            assert!(
                text(&output.stdout).contains("(tmpfs)") || !std::path::Path::new("/dev/shm").is_dir(),
                "{workload}: tmpfs by default"
            );
        }
    }
}

#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn will_it_scale_fallocate_and_tlb_flush_count_operations() {
    let (_serial, base) = needs_root();
    let tmp = tempfile::tempdir().unwrap();
    for workload in ["fallocate1", "fallocate2", "tlb_flush2"] {
        let csv = tmp.path().join(format!("{workload}.csv"));
        let (_, output) = run_clean(
            &base,
            &[
                "--base",
                BASE,
                "--cgroup",
                "child",
                "--duration",
                "1",
                "--workload",
                workload,
                "--csv",
                csv.to_str().unwrap(),
            ],
        );
        let context = format!("{workload}: {}", text(&output.stderr));
        // fallocate2 uses /tmp as will-it-scale does; where that file system cannot fallocate
        // (user-mode-linux's hostfs) the run must say so before it starts, in one line.
        if !output.status.success() && workload == "fallocate2" {
            assert_eq!(output.status.code(), Some(2), "{context}");
            assert!(text(&output.stderr).contains("does not take fallocate"), "{context}");
            eprintln!("skipped: fallocate2 here: /tmp cannot fallocate ({})", text(&output.stderr).trim());
            continue;
        }
        assert!(output.status.success(), "{context}");
        assert!(text(&output.stdout).contains("ops/s"), "{context}");
        for row in read_csv(&csv) {
            assert_eq!(row["unit"], "ops", "{context}");
            let (ops, kernel) = (number(&row, "faults"), number(&row, "kernel_faults"));
            // Counted at all (a 1-CPU user-mode-linux guest does some 650 tlb_flush2 ops a second).
            assert!(ops > 100.0, "{context}: {ops} operations");
            if workload == "tlb_flush2" {
                // Each page is written (a fault), zapped and read back (a zero-page fault).
                let per_op = kernel / ops;
                assert!((1.9..=2.1).contains(&per_op), "{context}: {per_op} kernel faults per page");
            } else {
                // fallocate charges page cache without a fault.
                assert!(kernel < 0.01 * ops, "{context}: {kernel} faults in {ops} fallocates");
            }
        }
    }
}

#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn fixed_work_runs_exactly_n_iterations_and_reports_elapsed_and_sys_per_task_count() {
    let (_serial, base) = needs_root();
    let tmp = tempfile::tempdir().unwrap();
    let (csv, json) = (tmp.path().join("fixed.csv"), tmp.path().join("fixed.json"));
    let (_, output) = run_clean(
        &base,
        &[
            "--base",
            BASE,
            "--cgroup",
            "child",
            "--workload",
            "mmap-file",
            "--tasks",
            "1,2",
            "--iterations",
            "30000",
            "--tmpdir",
            tmp.path().to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stderr}");
    let rows = read_csv(&csv);
    // Three whole runs per placement and task count by default.
    assert_eq!(rows.len(), 2 * 2 * 3, "{rows:?}");
    for row in &rows {
        // Fixed work is exact: every task stops at its count, not about there.
        assert_eq!(number(row, "faults"), 30000.0 * number(row, "tasks"), "{row:?}");
        assert_eq!(row["iterations_per_task"], "30000");
        // /proc counts user and sys in 10 ms clock ticks, each cut down to whole ticks from
        // the scheduler's exact time split between them: a task on its CPU for two ticks or
        // more shows at least one, one for 5 ms (5,000 iterations here) may show none.
        let (cpu_s, ticked_s) = (number(row, "on_cpu_s"), number(row, "sys_s") + number(row, "user_s"));
        assert!(number(row, "duration_s") > 0.0 && cpu_s > 0.0, "{row:?}");
        let tasks = number(row, "tasks");
        assert!(ticked_s <= cpu_s + 0.01 * tasks, "{row:?}");
        if cpu_s >= 0.021 * tasks {
            assert!(ticked_s > 0.0, "{row:?}");
        }
        let rate = number(row, "faults") / number(row, "duration_s");
        // duration_s is rounded to the microsecond in the CSV.
        assert!((rate - number(row, "faults_per_sec")).abs() <= 1e-3 * rate, "{row:?}");
    }
    // Under 0.1 s a slice (the median), the run says the signals and ticks weigh in.
    let mut elapsed: Vec<f64> = rows.iter().map(|row| number(row, "duration_s")).collect();
    elapsed.sort_by(f64::total_cmp);
    let short = elapsed[elapsed.len() / 2] < 0.1;
    assert_eq!(stderr.contains("fixed work took ") && stderr.contains("ms per slice (median)"), short, "{stderr}");
    assert!(stdout.contains("30,000 iterations per task"), "{stdout}");
    let table: Vec<&str> =
        stdout.lines().skip_while(|l| !l.starts_with("fixed work, 30,000 iterations per task")).collect();
    assert!(table.len() >= 6, "{stdout}");
    let columns: Vec<&str> = table[1].split_whitespace().collect();
    assert_eq!(columns, ["tasks", "1", "2"], "{stdout}");
    assert!(table[2].starts_with("base") && table[2].contains(" real ") && table[3].contains(" sys "), "{stdout}");
    assert!(table[4].starts_with("child") && table[4].contains(" real "), "{stdout}");
    let document: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(document["settings"]["iterations_per_task"], 30000);
    for summary in document["summaries"].as_array().unwrap() {
        let fixed = &summary["fixed_work"];
        assert_eq!(fixed["elapsed_s"]["n"], 3, "{summary}");
        assert!(fixed["elapsed_s"]["mean"].as_f64().unwrap() > 0.0, "{summary}");
        assert!(fixed["sys_s"]["mean"].as_f64().is_some(), "{summary}");
        // LKP's name beside ours: the mean rate per task.
        let per_task = summary["faults_per_sec"]["mean"].as_f64().unwrap() / summary["tasks"].as_f64().unwrap();
        assert!((summary["per_process_ops"].as_f64().unwrap() - per_task).abs() < 1e-6 * per_task, "{summary}");
    }
}

#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn fixed_work_counted_per_page_stops_at_the_page() {
    let (_serial, base) = needs_root();
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("pages.csv");
    // 5,000 pages is not a whole number of page_fault1's 32,768-page mappings.
    let (_, output) = run_clean(
        &base,
        &[
            "--base",
            BASE,
            "--no-baseline",
            "--cgroup",
            "child",
            "--workload",
            "page_fault1",
            "--tasks",
            "1",
            "--iterations",
            "5000",
            "--slices",
            "2",
            "--csv",
            csv.to_str().unwrap(),
        ],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    for row in read_csv(&csv) {
        assert_eq!(number(&row, "faults"), 5000.0, "{row:?}");
        let kernel = number(&row, "kernel_faults");
        assert!((kernel - 5000.0).abs() <= 50.0, "the kernel saw {kernel} faults for 5000 pages");
    }
}

#[test]
fn fixed_work_rejects_a_duration_and_bad_counts_before_anything_runs() {
    for (args, expected) in [
        (&["--iterations", "100", "--duration", "2"][..], "cannot be used with"),
        (&["--iterations", "0"][..], "--iterations \"0\""),
        (&["--iterations", "many"][..], "--iterations \"many\""),
    ] {
        let output = std::process::Command::new(binary()).args(["--base", BASE]).args(args).output().unwrap();
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

/// Under --thp always a 2 MiB chunk at its aligned place is served by huge pages: the loop
/// counts 512 pages per kernel fault, and a warning says the figures are per page. Where the
/// kernel offers no THP (system-wide never, or none at all) nothing may be said of it.
#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn huge_pages_under_thp_are_said_to_make_the_figures_per_page() {
    let (_serial, base) = needs_root();
    let (_, output) = run_clean(
        &base,
        &[
            "--base",
            BASE,
            "--cgroup",
            "child",
            "--thp",
            "always",
            "--chunk",
            "2M",
            "--duration",
            "0.5",
            "-q",
            "--csv",
            "-",
        ],
    );
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    let offered = !thp.is_empty() && !thp.contains("[never]");
    let said = stderr.lines().any(|l| l.contains("pages per fault the kernel counted (--thp always"));
    if offered {
        assert!(said, "THP offered ({}), no word of huge pages: {stderr}", thp.trim());
    } else {
        assert!(!said, "no THP here, yet: {stderr}");
    }
}
