//! compare, plot, completions, man and the progress line, through the binary.

mod common;

use std::process::Command;

use common::*;

fn faultscale(args: &[&str]) -> std::process::Output {
    Command::new(binary()).args(args).output().unwrap()
}

/// A faultscale-shaped CSV: three repetitions of the baseline (`root`) and child per kernel,
/// each measured by a crew generation (cgroup instance) of its own, the workers on their CPUs
/// the whole slice: the overhead (CPU ns per fault over the baseline's) is the inverse of the
/// rate ratio.
fn write_run(path: &std::path::Path, kernel: &str, root: [f64; 3], child: [f64; 3]) {
    let mut text = String::from(
        "run_id,started_at,host,kernel,cgroup_version,workload,mode,tasks,placement,depth,cgroup_path,repetition,sequence,cpu,duration_s,faults,faults_per_sec,overhead_vs_baseline,cpu_ns_per_fault,generation\n",
    );
    // Each file its own run.
    let run_id = path.file_stem().unwrap().to_string_lossy();
    for repetition in 0..3 {
        for (placement, depth, rate) in [("root", 0, root[repetition]), ("child", 1, child[repetition])] {
            let overhead = if depth == 0 { String::new() } else { (root[repetition] / rate).to_string() };
            text += &format!(
                "{run_id},t,h,{kernel},v1,anon,process,2,{placement},{depth},/x,{},0,,1.0,{rate},{rate},{overhead},{},{}\n",
                repetition + 1,
                2e9 / rate,
                repetition + 1
            );
        }
    }
    std::fs::write(path, text).unwrap();
}

#[test]
fn compare_marks_real_changes_and_not_noise() {
    let dir = tempfile::tempdir().unwrap();
    let (base, slower, same) =
        (dir.path().join("base.csv"), dir.path().join("slower.csv"), dir.path().join("same.csv"));
    write_run(&base, "6.1.0", [1000.0, 1010.0, 990.0], [900.0, 905.0, 895.0]);
    // The child lost 10%; the root did not move beyond noise.
    write_run(&slower, "6.2.0", [1004.0, 996.0, 1001.0], [810.0, 815.0, 805.0]);
    write_run(&same, "6.1.0", [1002.0, 994.0, 1005.0], [899.0, 907.0, 893.0]);

    let out = faultscale(&[
        "compare",
        base.to_str().unwrap(),
        slower.to_str().unwrap(),
        same.to_str().unwrap(),
        "--format",
        "csv",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("kernel differs (6.1.0 vs 6.2.0)"), "{}", text(&out.stderr));
    let mut reader = csv::Reader::from_reader(out.stdout.as_slice());
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let headers = reader.headers().unwrap().clone();
    let get = |row: &csv::StringRecord, name: &str| row[headers.iter().position(|h| h == name).unwrap()].to_string();
    let find = |file: &str, placement: &str| {
        rows.iter().find(|r| get(r, "new_file").ends_with(file) && get(r, "placement") == placement).unwrap().clone()
    };
    let child_slower = find("slower.csv", "child");
    // One run a side: the rate is not tested (the machine's drift between runs is beyond what
    // one run shows); the overhead, a ratio within each run, is.
    assert_eq!(get(&child_slower, "significant"), "?");
    assert!((get(&child_slower, "change_pct").parse::<f64>().unwrap() + 10.0).abs() < 0.1);
    // The overhead grew about 11% (1/0.9 -> 1/0.81), its interval clear of zero.
    let overhead_change: f64 = get(&child_slower, "overhead_change_pct").parse().unwrap();
    assert!((overhead_change - 11.1).abs() < 1.0, "{overhead_change}");
    assert!(get(&child_slower, "overhead_change_low_pct").parse::<f64>().unwrap() > 0.0);
    assert!(get(&child_slower, "overhead_p_holm").parse::<f64>().unwrap() < 0.05);
    assert_eq!(get(&find("same.csv", "child"), "significant"), "?");
    assert!(get(&find("same.csv", "child"), "overhead_p_holm").parse::<f64>().unwrap() > 0.05);

    // Two runs a side: the rates are tested over the runs.
    let slower_again = dir.path().join("slower2.csv");
    write_run(&slower_again, "6.2.0", [1000.0, 1003.0, 997.0], [811.0, 808.0, 806.0]);
    let (bases, slowers) =
        (format!("{},{}", base.display(), same.display()), format!("{},{}", slower.display(), slower_again.display()));
    let table = faultscale(&["compare", &bases, &slowers]);
    let stdout = text(&table.stdout);
    assert!(table.status.success(), "{}", text(&table.stderr));
    assert!(stdout.contains("[") && stdout.contains("2 new run(s) against 2 base run(s)]"), "{stdout}");
    assert!(stdout.lines().any(|l| l.contains("child") && l.contains("-10.") && l.contains('*')), "{stdout}");
    assert!(stdout.lines().any(|l| l.contains(" root ") && !l.contains('*') && !l.contains('?')), "{stdout}");
    // LKP's terms beside ours: the child's per-task rate (2 tasks) and its change.
    let lkp = stdout.lines().find(|l| l.contains("will-it-scale.per_process_ops") && l.ends_with("child"));
    let fields: Vec<&str> = lkp.unwrap_or_else(|| panic!("{stdout}")).split_whitespace().collect();
    // (the new side's mean over its two runs: 405 and 404.2 a task)
    assert_eq!([fields[0], fields[2], fields[3]], ["450", "405", "will-it-scale.per_process_ops"], "{stdout}");
    assert!(fields[1].starts_with("-10."), "{stdout}");
    let markdown = faultscale(&["compare", base.to_str().unwrap(), slower.to_str().unwrap(), "--format", "markdown"]);
    assert!(text(&markdown.stdout).starts_with("| workload |"));

    let foreign = dir.path().join("foreign.csv");
    std::fs::write(&foreign, "a,b\n1,2\n").unwrap();
    let refused = faultscale(&["compare", base.to_str().unwrap(), foreign.to_str().unwrap()]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(text(&refused.stderr).contains("no workload column"), "{}", text(&refused.stderr));
}

/// A slice that overran is in the file, flagged, and in no figure of compare or plot.
#[test]
fn compare_and_plot_leave_overran_slices_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("overran.csv");
    let mut rows =
        String::from("workload,mode,tasks,placement,depth,cpu,faults_per_sec,overhead_vs_baseline,overran\n");
    for (root, child, overran) in [(100.0, 90.0, false), (102.0, 27.0, true), (101.0, 91.0, false)] {
        rows += &format!("anon,process,2,root,0,,{root},,false\n");
        rows += &format!("anon,process,2,child,1,,{child},{},{overran}\n", root / child);
    }
    std::fs::write(&path, rows).unwrap();
    let out = faultscale(&["compare", path.to_str().unwrap(), path.to_str().unwrap(), "--format", "csv"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("1 slice(s) overran their time"), "{}", text(&out.stderr));
    let mut reader = csv::Reader::from_reader(out.stdout.as_slice());
    let headers = reader.headers().unwrap().clone();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let get = |row: &csv::StringRecord, name: &str| row[headers.iter().position(|h| h == name).unwrap()].to_string();
    let child = rows.iter().find(|r| get(r, "placement") == "child").unwrap();
    assert_eq!(get(child, "base_mean"), "90.5", "the overran 27/s is in no mean");
    assert!(get(child, "base_cv_pct").parse::<f64>().unwrap() < 1.0);
    let svg = dir.path().join("overran.svg");
    let plotted = faultscale(&["plot", path.to_str().unwrap(), "-o", svg.to_str().unwrap()]);
    assert!(plotted.status.success(), "{}", text(&plotted.stderr));
    assert!(text(&plotted.stderr).contains("1 slice(s) overran their time"), "{}", text(&plotted.stderr));
}

/// `plot -o` follows the output rules: a read-only file is kept, a FIFO without a
/// reader and a directory are refused at once, a symlink's target is written.
#[test]
fn plot_output_follows_the_rules_of_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.csv");
    write_run(&run, "6.1.0", [1000.0, 1010.0, 990.0], [900.0, 905.0, 895.0]);
    let plot = |output: &std::path::Path| faultscale(&["plot", run.to_str().unwrap(), "-o", output.to_str().unwrap()]);
    let read_only = dir.path().join("kept.svg");
    std::fs::write(&read_only, "OLD").unwrap();
    std::fs::set_permissions(&read_only, std::os::unix::fs::PermissionsExt::from_mode(0o444)).unwrap();
    let out = plot(&read_only);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&read_only).unwrap(), "OLD");
    let fifo = dir.path().join("fifo.svg");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o644) }, 0);
    let started = std::time::Instant::now();
    let out = plot(&fifo);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "blocked on the FIFO");
    let sub = dir.path().join("sub.svg");
    std::fs::create_dir(&sub).unwrap();
    assert_eq!(plot(&sub).status.code(), Some(2));
    let target = dir.path().join("target.svg");
    std::os::unix::fs::symlink("target.svg", dir.path().join("link.svg")).unwrap();
    let out = plot(&dir.path().join("link.svg"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(std::fs::read_to_string(&target).unwrap().starts_with("<svg"));
    assert!(std::fs::symlink_metadata(dir.path().join("link.svg")).unwrap().file_type().is_symlink());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(leftovers.len(), 6, "no temporary files: {leftovers:?}");
}

/// A JSON file saved with a byte-order mark is still JSON, not "a --csv file?".
#[test]
fn a_json_file_with_a_byte_order_mark_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bom.json");
    let workers = r#""result":{"workers":[{},{}]}"#;
    let json = format!(
        "{{\"settings\":{{\"workload\":\"anon\",\"mode\":\"process\"}},\"measurements\":[{{\"placement\":\"base\",\"faults_per_sec\":1000,{workers}}},{{\"placement\":\"child\",\"faults_per_sec\":900,\"overhead_vs_baseline\":1.1,{workers}}}]}}"
    );
    std::fs::write(&path, format!("\u{feff}{json}")).unwrap();
    let out = faultscale(&["compare", path.to_str().unwrap(), path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("child"), "{}", text(&out.stdout));
    // A flag written as a string is not taken for false: the slice would count as measured.
    let quoted =
        json.replace(r#""result":{"workers":[{},{}]}}]"#, r#""result":{"workers":[{},{}],"overran":"true"}}]"#);
    assert_ne!(quoted, json);
    std::fs::write(&path, quoted).unwrap();
    let out = faultscale(&["compare", path.to_str().unwrap(), path.to_str().unwrap()]);
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("measurements[1].result.overran: invalid type: string \"true\", expected a boolean"),
        "{said}"
    );
}

/// A finite but impossible rate is refused in one line by compare and plot, at once.
#[test]
fn figures_no_machine_produces_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    for rate in ["1e200", "1e308"] {
        let path = dir.path().join(format!("{rate}.csv"));
        std::fs::write(&path, format!("workload,mode,tasks,placement,cpu,faults_per_sec,overhead_vs_baseline\nanon,process,2,root,,{rate},\nanon,process,2,child,,1000,1.1\n")).unwrap();
        let started = std::time::Instant::now();
        for args in [
            vec!["compare", path.to_str().unwrap(), path.to_str().unwrap()],
            vec!["plot", path.to_str().unwrap(), "-o", dir.path().join("x.svg").to_str().unwrap()],
        ] {
            let out = faultscale(&args);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out.stderr));
            let said = text(&out.stderr);
            assert_eq!(said.lines().count(), 1, "{said}");
            assert!(
                said.contains(&format!("faults_per_sec \"{rate}\" is beyond anything a machine measures")),
                "{said}"
            );
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "took {:?}", started.elapsed());
        assert!(!dir.path().join("x.svg").exists());
    }
    // A column compare does not use is checked like those it does.
    let path = dir.path().join("inf.csv");
    std::fs::write(&path, "workload,mode,tasks,placement,cpu,faults_per_sec,overhead_vs_baseline,steal_s\nanon,process,2,root,,1000,,0\nanon,process,2,child,,900,1.1,inf\n").unwrap();
    let out = faultscale(&["compare", path.to_str().unwrap(), path.to_str().unwrap()]);
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("row 3: steal_s \"inf\" is not a finite, non-negative number") && said.lines().count() == 1,
        "{said}"
    );
}

#[test]
fn plot_writes_sane_svg_and_png() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.csv");
    write_run(&run, "6.1.0", [1000.0, 1010.0, 990.0], [900.0, 905.0, 895.0]);
    for (name, chart) in [("bars.svg", "bars"), ("bars.png", "bars"), ("depth.png", "depth"), ("auto.svg", "auto")] {
        let path = dir.path().join(name);
        let out = faultscale(&["plot", run.to_str().unwrap(), "-o", path.to_str().unwrap(), "--chart", chart]);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        let bytes = std::fs::read(&path).unwrap();
        assert!(bytes.len() > 2_000 && bytes.len() < 5_000_000, "{name}: {} bytes", bytes.len());
        if name.ends_with(".png") {
            assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{name}");
            let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
            let height = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
            assert_eq!((width, height), (960, 600), "{name}");
        } else {
            let svg = String::from_utf8(bytes).unwrap();
            assert!(svg.starts_with("<svg") && svg.contains("width=\"960\"") && svg.trim_end().ends_with("</svg>"));
            // plotters writes each label on its own line inside <text>.
            let labels: Vec<&str> = svg.lines().map(str::trim).collect();
            assert!(labels.contains(&"root") && labels.contains(&"child"), "{name}: placement labels are drawn");
        }
    }
    let wrong = faultscale(&["plot", run.to_str().unwrap(), "-o", dir.path().join("x.gif").to_str().unwrap()]);
    assert_eq!(wrong.status.code(), Some(2), "a usage error, as a missing directory is");
    assert!(text(&wrong.stderr).contains(".svg or .png"));
}

#[test]
fn completions_and_man_page_come_from_the_cli_definitions() {
    for shell in ["bash", "zsh", "fish"] {
        let out = faultscale(&["completions", shell]);
        assert!(out.status.success(), "{shell}");
        let script = text(&out.stdout);
        assert!(
            script.contains("faultscale") && script.contains("kernel-count") && script.contains("samples-csv"),
            "{shell}"
        );
    }
    let man = text(&faultscale(&["man"]).stdout);
    assert!(man.contains(".TH faultscale 1"), "{man}");
    assert!(man.contains("no\\-baseline") || man.contains("no-baseline"));
}

#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn the_progress_line_shows_on_a_terminal_only() {
    let (_serial, base) = needs_root();
    // `script` gives the run a pseudo-terminal.
    let command = format!("{} --base {BASE} --duration 1 --interval 0.25", binary().display());
    // The typescript goes to a file of the test's own, never to the machine's /dev.
    let typescript = tempfile::NamedTempFile::new().unwrap();
    let tty = Command::new("script")
        .args(["-qec", &command, typescript.path().to_str().unwrap()])
        .output()
        .expect("script(1), from util-linux");
    let screen = text(&tty.stdout);
    assert!(tty.status.success(), "{screen}");
    assert!(screen.contains("\r\x1b[Kfaultscale: base slice 1/1, ") && screen.contains("s left"), "{screen:?}");
    let (_, piped) = run_clean(&base, &["--base", BASE, "--duration", "0.5", "--interval", "0.25"]);
    assert!(!text(&piped.stderr).contains("s left"), "{}", text(&piped.stderr));
}

/// Fixed work against a timed run is a settings difference: refused without --force, said
/// with it; each warning is said once however many new files share the base, and a fixed-work
/// run's one cgroup instance is never "a run under 5 s".
#[test]
fn compare_refuses_fixed_work_against_a_timed_run() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, work: &str| {
        let path = dir.path().join(name);
        let slice = |placement: &str, rate: u32, slice: u32| {
            format!(
                r#"{{"placement":"{placement}","faults_per_sec":{rate},"repetition":1,"slice":{slice},"result":{{"workers":[{{}}]}}}}"#
            )
        };
        let slices = [slice("base", 5, 1), slice("child", 4, 1), slice("base", 6, 2), slice("child", 5, 2)];
        let document = format!(r#"{{"settings":{{"workload":"anon",{work}}},"measurements":[{}]}}"#, slices.join(","));
        std::fs::write(&path, document).unwrap();
        path.to_str().unwrap().to_string()
    };
    let timed = file("timed.json", r#""duration_s":2.0"#);
    let fixed = file("fixed.json", r#""duration_s":null,"iterations_per_task":100"#);
    let fixed_too = file("fixed2.json", r#""iterations_per_task":100"#);
    let refused = faultscale(&["compare", &timed, &fixed]);
    let stderr = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("rows measured with different settings cannot be compared (a timed run (--duration) vs fixed work (--iterations 100)); rerun alike, or --force"),
        "{stderr}"
    );
    let forced = faultscale(&["compare", &timed, &fixed, &fixed_too, "--force"]);
    let stderr = text(&forced.stderr);
    assert!(forced.status.success(), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    let unique: std::collections::BTreeSet<&str> = lines.iter().copied().collect();
    assert_eq!(lines.len(), unique.len(), "each warning once: {stderr}");
    for name in ["fixed.json", "fixed2.json"] {
        let said = format!(
            "/{name}: rows measured with different settings (a timed run (--duration) vs fixed work (--iterations 100)), compared as --force asks"
        );
        assert!(stderr.contains(&said), "{stderr}");
    }
    assert_eq!(
        lines.iter().filter(|l| l.contains("timed.json: one run of one cgroup instance")).count(),
        1,
        "{stderr}"
    );
    for name in ["fixed.json", "fixed2.json"] {
        let note = format!(
            "{name}: one run of one cgroup instance (fixed work (--iterations) measures every pass in the one)"
        );
        assert!(stderr.contains(&note), "{stderr}");
    }
    assert!(lines.iter().filter(|l| l.contains("5 s")).all(|l| l.contains("timed.json: ")), "{stderr}");
}

#[test]
fn compare_refuses_rows_measured_with_other_settings() {
    let dir = tempfile::tempdir().unwrap();
    let header = "run_id,workload,mode,tasks,placement,depth,cpu,faults_per_sec,overhead_vs_baseline,cpu_ns_per_fault,chunk_bytes,thp_mode,tmpdir_fs,kernel_count_source,knobs,run_complete,generation\n";
    let file = |name: &str, chunk: u64, complete: bool| {
        let path = dir.path().join(name);
        let mut text = String::from(header);
        for slice in 0..3 {
            let wobble = slice as f64;
            text += &format!(
                "r,anon,process,2,base,0,,{},,1000,{chunk},never,,minflt,,{complete},{}\n",
                1000.0 + wobble,
                slice + 1
            );
            text += &format!(
                "r,anon,process,2,child,1,,{},{},1110,{chunk},never,,minflt,,{complete},{}\n",
                900.0 + wobble,
                1.11 + wobble / 100.0,
                slice + 1
            );
        }
        std::fs::write(&path, text).unwrap();
        path
    };
    let (one_meg, two_meg, cut_short) =
        (file("a.csv", 1 << 20, true), file("b.csv", 2 << 20, true), file("c.csv", 1 << 20, false));
    let refused = faultscale(&["compare", one_meg.to_str().unwrap(), two_meg.to_str().unwrap()]);
    let stderr = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("chunk_bytes \"1048576\" vs \"2097152\"") && stderr.contains("--force"), "{stderr}");
    let forced = faultscale(&["compare", one_meg.to_str().unwrap(), two_meg.to_str().unwrap(), "--force"]);
    assert!(forced.status.success(), "{}", text(&forced.stderr));
    assert!(text(&forced.stderr).contains("chunk_bytes"), "the difference is still said");
    // Comparable runs: the overhead change with its interval; a cut-short run is named.
    let comparable = faultscale(&["compare", one_meg.to_str().unwrap(), cut_short.to_str().unwrap()]);
    assert!(comparable.status.success(), "{}", text(&comparable.stderr));
    assert!(text(&comparable.stdout).contains("+0.0% ("), "{}", text(&comparable.stdout));
    assert!(text(&comparable.stderr).contains("run_complete=false"), "{}", text(&comparable.stderr));
}

/// The file compare reads is the file it checked. A symlink flipped between a result
/// file and a FIFO while compare runs must never block (a FIFO opened for reading waits for a
/// writer) nor be read as a result: each run compares, or refuses a non-regular file.
#[test]
fn compare_checks_the_file_it_opened_not_the_path() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.csv");
    write_run(&run, "6.1.0", [1000.0, 1010.0, 990.0], [900.0, 905.0, 895.0]);
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let link = dir.path().join("flipping.csv");
    std::os::unix::fs::symlink(&run, &link).unwrap();
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let flipper = {
        let (stop, dir, run, fifo, link) =
            (stop.clone(), dir.path().to_path_buf(), run.clone(), fifo.clone(), link.clone());
        std::thread::spawn(move || {
            let staged = dir.join("staged");
            for target in [&run, &fifo].into_iter().cycle() {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let _ = std::fs::remove_file(&staged);
                std::os::unix::fs::symlink(target, &staged).unwrap();
                std::fs::rename(&staged, &link).unwrap();
            }
        })
    };
    let (mut compared, mut refused) = (0, 0);
    for _ in 0..300 {
        let mut child = Command::new(binary())
            .args(["compare", run.to_str().unwrap(), link.to_str().unwrap()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > std::time::Duration::from_secs(10) {
                let _ = child.kill();
                stop.store(true, Ordering::Relaxed);
                panic!("compare blocked on the flipped path");
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let output = child.wait_with_output().unwrap();
        let said = text(&output.stderr);
        match output.status.code() {
            Some(0) => compared += 1,
            _ if said.contains("not a regular file") => refused += 1,
            code => {
                stop.store(true, Ordering::Relaxed);
                panic!("exit {code:?}: {said}");
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    flipper.join().unwrap();
    eprintln!("300 compares of a flipping path: {compared} compared, {refused} refused");
}

/// The same figures written with a digit more or less get the same interval. Welch's
/// df for two equally spread sides is 4, and a last-digit change puts it at 3.9999999; the t
/// quantile was taken at floor(df), 2.776 against 3.182, so the intervals differed by 15%.
#[test]
fn one_digit_more_or_less_does_not_move_an_interval() {
    let dir = tempfile::tempdir().unwrap();
    let (base, new, new_rounded) = (dir.path().join("base.csv"), dir.path().join("a.csv"), dir.path().join("b.csv"));
    write_run(&base, "6.1.0", [1000.0, 1000.0, 1000.0], [909.0, 900.0, 891.0]);
    write_run(&new, "6.1.0", [1000.0, 1000.0, 1000.0], [707.0, 700.0, 693.0]);
    write_run(&new_rounded, "6.1.0", [1000.0, 1000.0, 1000.0], [707.0, 700.0, 693.0000001]);
    // The count stays whole; only the rate has the extra digit.
    let written = std::fs::read_to_string(&new_rounded).unwrap();
    std::fs::write(&new_rounded, written.replace("1.0,693.0000001,693.0000001", "1.0,693,693.0000001")).unwrap();
    let interval = |new: &std::path::Path| {
        let out = faultscale(&["compare", base.to_str().unwrap(), new.to_str().unwrap(), "--format", "csv"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let mut reader = csv::Reader::from_reader(out.stdout.as_slice());
        let headers = reader.headers().unwrap().clone();
        let child = reader
            .records()
            .map(Result::unwrap)
            .find(|r| &r[headers.iter().position(|h| h == "placement").unwrap()] == "child")
            .unwrap();
        let get = |name: &str| child[headers.iter().position(|h| h == name).unwrap()].parse::<f64>().unwrap();
        (get("overhead_change_low_pct"), get("overhead_change_high_pct"))
    };
    let ((low, high), (low_rounded, high_rounded)) = (interval(&new), interval(&new_rounded));
    let width = high - low;
    assert!(
        ((high_rounded - low_rounded) - width).abs() < 0.001 * width.abs(),
        "{low}..{high} vs {low_rounded}..{high_rounded}"
    );
}

/// A side of several runs: a run on both sides is refused wherever it stands, and so is an
/// empty part of a comma-joined side (a typo or an unset variable would drop a run unseen).
#[test]
fn a_run_on_both_sides_or_an_empty_part_of_a_side_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    for (name, child) in [("r1.csv", 900.0), ("r2.csv", 905.0), ("r3.csv", 895.0), ("r4.csv", 901.0)] {
        write_run(&dir.path().join(name), "6.1.0", [1000.0, 1010.0, 990.0], [child, child + 5.0, child - 5.0]);
    }
    let (r1, r2, r3, r4) = (path("r1.csv"), path("r2.csv"), path("r3.csv"), path("r4.csv"));
    for (base, new, said) in [
        (format!("{r1},{r2}"), format!("{r2},{r4}"), "hold the same run, one on each side"),
        (format!("{r1},{r2}"), r1.clone(), "hold the same run, one on each side"),
        (format!("{r1},,{r2}"), format!("{r3},{r4}"), "an empty file name between commas"),
        (format!("{r1},{r2},"), format!("{r3},{r4}"), "an empty file name between commas"),
    ] {
        let out = faultscale(&["compare", &base, &new]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{base} {new}: {stderr}");
        assert!(stderr.contains(said) && stderr.lines().count() == 1, "{base} {new}: {stderr}");
    }
    let fine = faultscale(&["compare", &format!("{r1},{r2}"), &format!("{r3},{r4}")]);
    assert!(fine.status.success(), "{}", text(&fine.stderr));
    assert!(text(&fine.stdout).contains("r3.csv,"), "a side is named by all its files: {}", text(&fine.stdout));
}

/// A side's runs must hold the same rows: its rows are matched on its first run, so a run
/// with other task counts dropped rows unseen, was counted in "2 run(s) against 1" though it
/// gave nothing, and read otherwise in the other order.
#[test]
fn a_side_whose_runs_hold_other_rows_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    // Runs of --tasks 1,2: the rows at 2 tasks again at 1.
    for name in ["t12.csv", "u12.csv", "v12.csv"] {
        write_run(&dir.path().join(name), "6.1.0", [1000.0, 1010.0, 990.0], [900.0, 905.0, 895.0]);
        let written = std::fs::read_to_string(path(name)).unwrap();
        let at_one: String =
            written.lines().skip(1).map(|line| line.replace(",anon,process,2,", ",anon,process,1,") + "\n").collect();
        std::fs::write(path(name), written + &at_one).unwrap();
    }
    write_run(&dir.path().join("n2.csv"), "6.1.0", [1000.0, 1010.0, 990.0], [890.0, 895.0, 885.0]);
    let (t12, u12, v12, n2) = (path("t12.csv"), path("u12.csv"), path("v12.csv"), path("n2.csv"));
    for side in [format!("{u12},{n2}"), format!("{n2},{u12}")] {
        let out = faultscale(&["compare", &t12, &side]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{side}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{side}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "{u12} has anon process 1t root where {n2} has not: the runs of one side must hold the same rows"
            )),
            "{side}: {stderr}"
        );
        // On the base's side too.
        let out = faultscale(&["compare", &side, &t12]);
        assert_eq!(out.status.code(), Some(2), "{side}: {}", text(&out.stderr));
    }
    let fine = faultscale(&["compare", &t12, &format!("{u12},{v12}")]);
    assert!(fine.status.success(), "{}", text(&fine.stderr));
}
