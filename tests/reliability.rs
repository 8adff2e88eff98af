//! Issue 29, the reporting half: what faultscale prints and reads must say what is so. Each
//! test names its item. Files are made in the test's own temporary directories.

mod common;

use std::os::unix::process::CommandExt;
use std::process::{Command, Output};

use common::*;

fn faultscale(args: &[&str]) -> Output {
    Command::new(binary()).args(args).output().unwrap()
}

/// faultscale started with standard output closed, as `>&-` does.
fn with_stdout_closed(args: &[&str]) -> Output {
    let mut command = Command::new(binary());
    command.args(args);
    // SAFETY: close(2) between fork and exec touches only the child's descriptor table.
    unsafe {
        command.pre_exec(|| {
            libc::close(1);
            Ok(())
        });
    }
    command.output().unwrap()
}

/// A faultscale-shaped CSV of three repetitions of root and child (anon, 2 tasks).
fn write_run(path: &std::path::Path, kernel: &str) {
    let mut text = String::from(
        "run_id,kernel,workload,mode,tasks,placement,depth,repetition,slice,cpu,duration_s,faults,faults_per_sec,overhead_vs_baseline,chunk_bytes\n",
    );
    for repetition in 1..=3 {
        for (placement, depth, rate) in [("root", 0, 1000.0 + repetition as f64), ("child", 1, 900.0)] {
            text += &format!(
                "r,\"{kernel}\",anon,process,2,{placement},{depth},{repetition},1,,1.0,{rate},{rate},{},1048576\n",
                if depth == 0 { String::new() } else { format!("{}", (1000.0 + repetition as f64) / rate) }
            );
        }
    }
    std::fs::write(path, text).unwrap();
}

/// #29.14: with standard output closed, the commands that print there say so and exit 2
/// before doing anything, rather than exit 0 with their output gone; `plot`, which prints
/// nothing there, still works.
#[test]
fn a_closed_stdout_is_refused_up_front() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.csv");
    write_run(&run, "6.1.0");
    let table = ["--base", BASE, "--duration", "0.2", "--cgroup", "child", "--no-baseline"];
    for (args, what) in [
        (&["compare", run.to_str().unwrap(), run.to_str().unwrap()][..], "the comparison"),
        (&["man"], "the man page"),
        (&["profiles"], "the profile listing"),
        (&table, "the run's table"),
    ] {
        let output = with_stdout_closed(args);
        let said = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {said}");
        assert_eq!(said.lines().count(), 1, "{args:?}: {said}");
        assert!(said.contains("standard output is closed") && said.contains(what), "{args:?}: {said}");
    }
    let svg = dir.path().join("run.svg");
    let plotted = with_stdout_closed(&["plot", run.to_str().unwrap(), "-o", svg.to_str().unwrap()]);
    assert!(plotted.status.success(), "{}", text(&plotted.stderr));
    assert!(svg.is_file());
}

/// Whether `bytes` hold a control character a terminal acts on (ESC, CR, BEL, C1's CSI).
fn holds_control(bytes: &[u8]) -> bool {
    String::from_utf8_lossy(bytes).chars().any(|c| c.is_control() && c != '\n')
}

/// #29.10: a placement, workload or kernel cell holding ESC, CR or an OSC sequence, and a
/// profile's description holding them, reach the terminal escaped (as boot-id files are), in
/// every format of `compare` and in its warnings.
#[test]
fn control_characters_in_files_reach_the_terminal_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let (base, new) = (dir.path().join("base.csv"), dir.path().join("new.csv"));
    write_run(&base, "6.1\x1b]0;owned\x07");
    write_run(&new, "6.2\r\x1b[2J");
    for path in [&base, &new] {
        let text = std::fs::read_to_string(path).unwrap().replace(",child,", ",\"ch\x1b[31mild\r\",");
        std::fs::write(path, text).unwrap();
    }
    for format in ["table", "csv", "markdown"] {
        let out = faultscale(&["compare", base.to_str().unwrap(), new.to_str().unwrap(), "--format", format]);
        assert!(out.status.success(), "{format}: {}", text(&out.stderr));
        assert!(!holds_control(&out.stdout), "{format}: {:?}", text(&out.stdout));
        assert!(!holds_control(&out.stderr), "{format}: {:?}", text(&out.stderr));
        assert!(text(&out.stdout).contains("ch\\u{1b}[31mild\\r"), "{format}: {}", text(&out.stdout));
        let said = text(&out.stderr);
        assert!(said.contains("kernel differs (6.1\\u{1b}]0;owned\\u{7} vs 6.2\\r\\u{1b}[2J)"), "{said}");
    }
    let profile = dir.path().join("odd.toml");
    std::fs::write(
        &profile,
        "name = \"odd\"\ndescription = \"plain \\u001b]0;owned\\u0007 \\r\\u001b[2J\"\n[[level]]\n\"memory.max\" = \"max\"\n",
    )
    .unwrap();
    let out = faultscale(&["profiles", profile.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!holds_control(&out.stdout), "{:?}", text(&out.stdout));
    assert!(
        text(&out.stdout).starts_with("odd: plain \\u{1b}]0;owned\\u{7} \\r\\u{1b}[2J (cgroup"),
        "{}",
        text(&out.stdout)
    );
}
