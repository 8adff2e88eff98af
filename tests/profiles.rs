//! Every shipped profile built for real on this machine's memory controller.

mod common;

use common::*;

#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn shipped_profiles_build_apply_their_knobs_and_vanish() {
    let (_serial, base) = needs_root();
    let v1 = std::fs::read_to_string("/proc/self/cgroup").unwrap().lines().any(|l| l.contains(":memory:"));
    let profiles: &[&str] = if v1 {
        &["child", "nested-2", "nested-4", "nested-8", "limited", "protected"]
    } else {
        &["child", "nested-2", "nested-4", "nested-8", "limited", "high", "protected"]
    };
    for profile in profiles {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("run.json");
        // Started with a pipe we can read while it runs, to look at the knob files live.
        let (_, output) = run_clean(
            &base,
            &["--base", BASE, "--cgroup", profile, "--duration", "1", "--json", json.to_str().unwrap()],
        );
        assert!(output.status.success(), "{profile}: {}", text(&output.stderr));
        let document: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let expected = faultscale_profile_depth(profile);
        let m = &document["measurements"].as_array().unwrap()[1];
        assert_eq!(m["depth"], expected, "{profile}");
        for knob in document["knobs"].as_array().unwrap() {
            assert_eq!(knob["written"], knob["read_back"], "{profile}: {knob}");
        }
        assert!(m["faults_per_sec"].as_f64().unwrap() > 0.0);
    }
    // v2-only knobs are a clear error on v1, and nothing is created.
    if v1 {
        let (_, output) = run_clean(&base, &["--base", BASE, "--cgroup", "high", "--duration", "0.2"]);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "a usage error: {stderr}");
        assert!(stderr.contains("memory.high has no cgroup v1 equivalent"), "{stderr}");
        // Not --cgroup-version v2, which fails where cgroup2 has no memory (a hybrid host).
        assert!(stderr.contains("`faultscale env` says where it is here"), "{stderr}");
    }
}

#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn knob_files_hold_the_written_values_during_the_run() {
    let (_serial, base) = needs_root();
    let child = spawn(&["--base", BASE, "--cgroup", "protected", "--duration", "2", "--no-baseline"]);
    let pid = child.id();
    let mut top = None;
    for _ in 0..200 {
        if let Some(t) = trees_of(&base, pid).into_iter().next() {
            top = Some(t);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let tree = top.expect("the protected tree appears");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let levels = placement_levels(&tree, "-protected");
    assert_eq!(levels.len(), 2, "{levels:?}");
    let v1 = levels[0].join("memory.limit_in_bytes").exists();
    let (limit_file, low_file) =
        if v1 { ("memory.limit_in_bytes", "memory.soft_limit_in_bytes") } else { ("memory.max", "memory.low") };
    let read = |p: std::path::PathBuf| std::fs::read_to_string(p).unwrap().trim().to_string();
    assert_eq!(read(levels[0].join(limit_file)), (64u64 << 20).to_string());
    assert_eq!(read(levels[1].join(low_file)), (8u64 << 20).to_string());
    let output = child.wait_with_output().unwrap();
    assert_nothing_left(&base, pid);
    assert!(output.status.success(), "{}", text(&output.stderr));
}

#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn bad_profiles_fail_before_anything_is_created() {
    let (_serial, base) = needs_root();
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("unknown.toml", "name = \"u\"\n[[level]]\n\"memory.maxx\" = \"1M\"\n", "unknown.toml:3: unknown knob"),
        ("badsize.toml", "name = \"b\"\n[[level]]\n\"memory.max\" = \"lots\"\n", "badsize.toml:3:"),
        ("empty.toml", "", "missing field `name`"),
        ("newline.toml", "name = \"n\"\n[[level]]\n\"memory.max\" = \"1M\\nmemory.high\"\n", "newline.toml:3:"),
    ];
    for (file, body, expected) in cases {
        let path = dir.path().join(file);
        std::fs::write(&path, body).unwrap();
        let (_, output) = run_clean(&base, &["--base", BASE, "--cgroup", path.to_str().unwrap(), "--duration", "0.2"]);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "a usage error: {file}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{file}: {stderr}");
        assert!(stderr.contains(expected), "{file}: {stderr}");
    }
}

fn faultscale_profile_depth(profile: &str) -> u64 {
    match profile {
        "child" | "limited" | "high" => 1,
        "nested-2" | "protected" => 2,
        "nested-4" => 4,
        "nested-8" => 8,
        other => panic!("{other}"),
    }
}

/// MemTotal in bytes, the basis of the shipped profiles' percentages.
fn ram_bytes() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kib = meminfo.lines().find_map(|l| l.strip_prefix("MemTotal:")).unwrap().trim().trim_end_matches("kB");
    kib.trim().parse::<u64>().unwrap() << 10
}

#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn published_setups_build_with_shares_of_ram_and_say_what_v1_cannot_set() {
    let (_serial, _) = needs_root();
    let listing = std::process::Command::new(binary()).arg("profiles").output().unwrap();
    for name in ["protected-3", "lkp-cgroup2"] {
        assert!(text(&listing.stdout).lines().any(|l| l.starts_with(name)), "{name} is listed");
    }
    let base = runs_dir();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let (_, output) = run_clean(
        &base,
        &["--base", BASE, "--cgroup", "protected-3,lkp-cgroup2", "--duration", "0.5", "--json", json.to_str().unwrap()],
    );
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let document: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let share = |percent: f64| ((ram_bytes() as f64 * percent / 100.0) as u64 & !4095).to_string();
    let half = |percent: f64| {
        ((((ram_bytes() as f64 * percent / 100.0) as u64 & !4095) as f64 * 0.5) as u64 & !4095).to_string()
    };
    let knobs: Vec<(String, String, String, String)> = document["knobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            assert_eq!(k["written"], k["read_back"], "{k}");
            let level = if k["cgroup_path"].as_str().unwrap().ends_with("level2") { "L2" } else { "L1" };
            let field = |name: &str| k[name].as_str().unwrap().to_string();
            (field("placement"), level.to_string(), field("knob"), field("written"))
        })
        .collect();
    let has = |placement: &str, level: &str, knob: &str, value: String| {
        knobs.contains(&(placement.into(), level.into(), knob.into(), value.clone()))
    };
    let measurements = document["measurements"].as_array().unwrap();
    let depth = |name: &str| measurements.iter().find(|m| m["placement"] == name).unwrap()["depth"].clone();
    assert_eq!((depth("protected-3"), depth("lkp-cgroup2")), (3.into(), 1.into()));
    // memory.low maps on both versions; memory.min and memory.high only on v2, and v1 says so.
    assert!(has("protected-3", "L1", "memory.low", share(5.0)), "{knobs:?}");
    assert!(has("protected-3", "L2", "memory.low", half(5.0)), "{knobs:?}");
    assert!(has("lkp-cgroup2", "L1", "memory.low", share(50.0)), "{knobs:?}");
    let v1 = document["environment"]["cgroup_version"].as_str().unwrap().eq_ignore_ascii_case("v1");
    if v1 {
        for (placement, knob) in [("protected-3", "memory.min"), ("lkp-cgroup2", "memory.high")] {
            let said = format!("{placement}: {knob} = ");
            assert!(stderr.contains(&said) && stderr.contains("left unset: cgroup v1 has no equivalent"), "{stderr}");
        }
        assert_eq!(knobs.len(), 3, "{knobs:?}");
    } else {
        assert!(has("protected-3", "L1", "memory.min", share(2.0)), "{knobs:?}");
        assert!(has("protected-3", "L2", "memory.min", half(2.0)), "{knobs:?}");
        assert!(has("lkp-cgroup2", "L1", "memory.high", share(90.0)), "{knobs:?}");
        assert!(!stderr.contains("left unset"), "{stderr}");
    }
}

/// `profiles nested:3` said `--cgroup "nested:3": not a placement` though no --cgroup was
/// given, and exited 1 where `--cgroup bogus` exits 2.
#[test]
fn profiles_of_no_profile_names_its_argument_and_exits_2() {
    let missing = tempfile::tempdir().unwrap().path().join("missing.toml");
    for (name, said) in [("nested:3", "profiles \"nested:3\": not a shipped profile"), ("bogus", "profiles \"bogus\"")]
    {
        let output = std::process::Command::new(binary()).args(["profiles", name]).output().unwrap();
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{name}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(said) && !stderr.contains("--cgroup"), "{name}: {stderr}");
    }
    let output = std::process::Command::new(binary()).args(["profiles", missing.to_str().unwrap()]).output().unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("missing.toml: cannot read profile"), "{stderr}");
}
