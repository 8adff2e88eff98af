//! faultscale as an LKP program (integrations/lkp), driven by lkp-tests' own code from the
//! tree `LKP_SRC` names: its bin/run-test runs `run` as the job runner runs a program (the
//! job's parameters as variables, the output captured into the result root), `parse` reads
//! that output under ruby with lkp-tests' lib/statistics, its split-job expands the job files
//! and its bin/program-options reads the parameters `run` declares. lkp-tests is never
//! written: the tests run it from an overlay of symlinks with the program and jobs added, as
//! they would be copied in. Without `LKP_SRC` (or ruby) they print `skipped: ...`;
//! `.ci/run` sets FAULTSCALE_REQUIRE_LKP=1, so in CI a skip fails.

#[macro_use]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::lkp::{PARSE_NEEDS, assert_stats_match, embedded_json, ruby_has, stats};
use common::*;
use serde_json::Value;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn integration() -> PathBuf {
    repo().join("integrations/lkp")
}

/// None after saying why; a failure where FAULTSCALE_REQUIRE_LKP is set.
fn skip<T>(reason: &str) -> Option<T> {
    assert!(std::env::var_os("FAULTSCALE_REQUIRE_LKP").is_none(), "FAULTSCALE_REQUIRE_LKP is set, but {reason}");
    shown!("skipped: {reason}");
    None
}

/// lkp-tests with faultscale's program and jobs added: symlinks to every entry of `LKP_SRC`,
/// programs/, jobs/ and hosts/ as directories of symlinks plus faultscale's own, and a hosts
/// file for this machine (what `lkp install` writes), which split-job reads.
struct Lkp {
    dir: tempfile::TempDir,
}

impl Lkp {
    fn src(&self) -> &Path {
        self.dir.path()
    }
}

fn lkp() -> Option<Lkp> {
    let Some(src) = std::env::var_os("LKP_SRC") else {
        return skip("set LKP_SRC to an lkp-tests tree");
    };
    let src = repo().join(src);
    if !src.join("lib/statistics.rb").is_file() || !src.join("bin/run-test").is_file() {
        return skip(&format!("LKP_SRC={} is not an lkp-tests tree (no lib/statistics.rb)", src.display()));
    }
    if !ruby_has(&PARSE_NEEDS) {
        return skip("ruby with active_support is missing (Debian: ruby ruby-activesupport; .ci/run installs them)");
    }
    let dir = tempfile::tempdir().unwrap();
    let link = |from: &Path, to: &Path| std::os::unix::fs::symlink(from, to).unwrap();
    for entry in std::fs::read_dir(&src).unwrap().flatten() {
        let name = entry.file_name();
        if ["programs", "jobs", "hosts"].iter().any(|n| name == *n) {
            std::fs::create_dir(dir.path().join(&name)).unwrap();
            for inner in std::fs::read_dir(entry.path()).unwrap().flatten() {
                link(&inner.path(), &dir.path().join(&name).join(inner.file_name()));
            }
        } else {
            link(&entry.path(), &dir.path().join(&name));
        }
    }
    link(&integration().join("programs/faultscale"), &dir.path().join("programs/faultscale"));
    link(&integration().join("jobs/faultscale"), &dir.path().join("jobs/faultscale"));
    let host = text(&Command::new("hostname").output().unwrap().stdout).trim().to_string();
    let cpus = std::thread::available_parallelism().unwrap().get();
    std::fs::write(dir.path().join("hosts").join(host), format!("nr_cpu: {cpus}\nnr_node: 1\nmemory: 1G\n")).unwrap();
    Some(Lkp { dir })
}

/// `parse` as LKP's run-stats runs it, from the overlay.
fn parse(lkp: &Lkp, raw: &Path) -> String {
    common::lkp::parse(lkp.src(), &lkp.src().join("programs/faultscale"), raw)
}

#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn run_under_lkps_run_test_then_parse_gives_the_jsons_figures() {
    let _serial = needs_root();
    let Some(lkp) = lkp() else { return };
    let (result, tmp, benchmarks) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let path = format!("{}:{}", binary().parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let cpus = std::thread::available_parallelism().unwrap().get();
    // As job.sh's run_test hands a program its parameters: env NAME=VALUE ... bin/run-test
    // faultscale, from a shell of its own (run-test sets its parent's oom_score_adj).
    let output = Command::new("sh")
        .args(["-c", "\"$@\"; exit $?", "sh", "env"])
        .args(["cgroup=child", "duration=2", "slices=2", "workload=anon", "mode=process", "nr_task=100%"])
        .args(["thp=never", &format!("base={BASE}")])
        .arg(lkp.src().join("bin/run-test"))
        .arg("faultscale")
        .env("LKP_SRC", lkp.src())
        .env("TMP", tmp.path())
        .env("RESULT_ROOT", result.path())
        .env("TMP_RESULT_ROOT", result.path())
        .env("BENCHMARK_ROOT", benchmarks.path())
        .env("PATH", path)
        .env("testcase", "faultscale")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let raw_path = result.path().join("faultscale");
    let raw = std::fs::read_to_string(&raw_path).expect("run-test captured the program's output");
    assert!(output.status.success(), "run failed: {}\n{raw}\n{}", output.status, text(&output.stderr));
    assert_eq!(raw, text(&output.stdout), "run-test's tee shows what it keeps");
    assert!(raw.lines().next().unwrap().ends_with(&format!(" --tasks {cpus}")), "the command, logged:\n{raw}");
    assert!(raw.contains("placement  cgroup"), "the table:\n{raw}");
    let reproduce = std::fs::read_to_string(result.path().join("reproduce.sh")).unwrap();
    assert!(reproduce.contains(&format!("--base {BASE} --cgroup child --duration 2 --slices 2")), "{reproduce}");

    let doc = embedded_json(&raw);
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(result.path().join("faultscale-run.json")).unwrap()).unwrap();
    assert_eq!(doc, file, "run prints the JSON it wrote to the result root");
    let settings = &doc["settings"];
    assert_eq!(settings["placements"], serde_json::json!(["base", "child"]));
    assert_eq!(settings["tasks"], serde_json::json!([cpus]), "nr_task=100% is one task per CPU");
    assert_eq!((settings["duration_s"].as_f64(), settings["slices"].as_u64()), (Some(2.0), Some(2)));
    assert_eq!(
        (&settings["workload"], &settings["mode"], &settings["thp"]),
        (&"anon".into(), &"process".into(), &"never".into())
    );

    let parsed = parse(&lkp, &raw_path);
    assert_stats_match(&parsed, &doc);
    let got = stats(&parsed);
    for key in ["child.overhead_pct", "child.overhead_low_pct", "child.cpu_ns_per_fault", "per_process_ops"] {
        assert!(got.contains_key(key), "{key} missing from\n{parsed}");
    }
    let pid: u32 = doc["environment"]["run_id"].as_str().unwrap().split('-').next().unwrap().parse().unwrap();
    assert_nothing_left(&runs_dir(), pid);
}

#[test]
fn parse_on_the_shipped_fixture_gives_its_yaml_and_the_jsons_figures() {
    let Some(lkp) = lkp() else { return };
    let fixture = integration().join("spec/fixtures/stats/faultscale/1");
    let parsed = parse(&lkp, &fixture);
    let expected = std::fs::read_to_string(fixture.with_extension("yaml")).unwrap();
    // lkp-tests' stats_spec compares the parser's output with the chomped YAML.
    assert_eq!(parsed.trim_end(), expected.trim_end());
    let doc = embedded_json(&std::fs::read_to_string(&fixture).unwrap());
    assert_stats_match(&parsed, &doc);
    assert!(doc["environment"]["command_line"].to_string().contains("--base"), "a real run's JSON");

    // The per-level cost, in files that carry one (null or absent: no stat).
    let dir = tempfile::tempdir().unwrap();
    for (per_level, named) in [
        // A sweep: the largest task count's fit is the one named, its memcg fit too.
        (
            serde_json::json!([
                {"tasks": 1, "depths": [0, 1, 4], "cpu": {"ns_per_fault": 9.0, "low": 1.0, "high": 17.0, "rounds": 8}},
                {"tasks": 2, "depths": [0, 1, 4], "cpu": {"ns_per_fault": 41.5, "low": 12.25, "high": 70.0, "rounds": 8},
                 "memcg": {"ns_per_fault": 30.5, "low": 20.0, "high": 41.0, "rounds": 8}}
            ]),
            4,
        ),
        (
            serde_json::json!([{"tasks": 2, "depths": [0, 1, 4], "cpu": {"ns_per_fault": 41.5, "low": null, "high": null, "rounds": 1}}]),
            1,
        ),
        (serde_json::json!([]), 0),
        (Value::Null, 0),
    ] {
        let mut with = doc.clone();
        with["per_level"] = per_level;
        let raw = dir.path().join("raw");
        std::fs::write(&raw, format!("faultscale-json-begin\n{with:#}\nfaultscale-json-end\n")).unwrap();
        let parsed = parse(&lkp, &raw);
        assert_stats_match(&parsed, &with);
        assert_eq!(stats(&parsed).keys().filter(|k| k.starts_with("per_level")).count(), named, "{parsed}");
    }
}

/// A YAML file as JSON, read by ruby's own YAML (LKP's job files are ruby's YAML).
fn yaml(path: &Path) -> Value {
    let output = Command::new("ruby")
        .args(["-ryaml", "-rjson", "-e", "puts JSON.dump(YAML.unsafe_load_file(ARGV[0]))"])
        .arg(path)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}: {}", path.display(), text(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn job_files_split_with_lkps_split_job_into_jobs_of_declared_parameters() {
    let Some(lkp) = lkp() else { return };
    if !ruby_has(&["tty-command", "git"]) {
        skip::<()>(
            "split-job needs ruby's tty-command and git (Debian: ruby-tty-command ruby-git; .ci/run installs them)",
        );
        return;
    }
    let meta = yaml(&integration().join("programs/faultscale/meta.yaml"));
    let declared = meta["parameters"].as_object().unwrap();
    // LKP learns a program's parameters from the comment header of its run.
    let options = Command::new("awk")
        .arg("-f")
        .arg(lkp.src().join("bin/program-options"))
        .arg(lkp.src().join("programs/faultscale/run"))
        .output()
        .unwrap();
    // It prints `- NAME` per parameter.
    let mut header: Vec<String> =
        text(&options.stdout).lines().map(|l| l.trim().trim_start_matches("- ").to_string()).collect();
    header.sort();
    assert_eq!(header, declared.keys().cloned().collect::<Vec<_>>(), "run's header and meta.yaml");

    let out = tempfile::tempdir().unwrap();
    let jobs = ["faultscale.yaml", "faultscale-cgroup2.yaml"].map(|j| lkp.src().join("jobs/faultscale").join(j));
    let split = Command::new("ruby")
        .arg(lkp.src().join("sbin/split-job"))
        .arg("-o")
        .arg(out.path())
        .args(&jobs)
        .env("LKP_SRC", lkp.src())
        .output()
        .unwrap();
    assert!(split.status.success(), "split-job: {}", text(&split.stderr));
    let atoms: Vec<Value> = files_in(out.path()).iter().map(|name| yaml(&out.path().join(name))).collect();
    assert_eq!(atoms.len(), 16, "2 jobs x nr_task x mode x workload:\n{}", text(&split.stdout));
    let mut seen = std::collections::BTreeSet::new();
    for atom in &atoms {
        let params = atom["faultscale"].as_object().expect("a faultscale: section");
        let mut named: Vec<(&String, &Value)> = params.iter().collect();
        let nr_task = "nr_task".to_string();
        named.push((&nr_task, &atom["nr_task"]));
        for (name, value) in named {
            let allowed = declared.get(name).unwrap_or_else(|| panic!("{name} is not a parameter meta.yaml declares"));
            if let Some(list) = allowed.as_array() {
                assert!(list.contains(value), "{name}: {value} is not one of {list:?}");
            }
        }
        let cgroup2 = atom.get("cgroup2").is_some_and(|c| c.is_object());
        assert_eq!(params["base"], if cgroup2 { "self" } else { "root" });
        if cgroup2 {
            assert_eq!(atom["cg_bind"], 0, "LKP's cgroup2 cgroup must hold no process for faultscale to build in it");
        }
        assert_eq!(params["cgroup"], "child,nested:4");
        seen.insert((cgroup2, atom["nr_task"].to_string(), params["mode"].to_string(), params["workload"].to_string()));
    }
    assert_eq!(seen.len(), 16, "every combination once");
}
