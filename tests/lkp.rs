//! faultscale as an LKP program, as the patch series in integrations/lkp/patches adds it to
//! lkp-tests: each test clones the lkp-tests repository (`LKP_BUNDLE`, a git bundle, or
//! ../shared/lkp-tests.bundle beside the repository: the tree with its symlinks, as a
//! maintainer's clone has it), applies the series with `git am`, and runs lkp-tests' own
//! code on the patched clone: its
//! bin/run-test runs `run` as the job runner does (the job's parameters as variables, the
//! output captured into the result root), bin/run-stats feeds it to `parse` and dump-stat,
//! bin/create-stats-matrix makes stats.json and matrix.json, split-job expands the job files
//! and bin/program-options reads the parameters `run` declares. The bundle is never written.
//! Without the bundle, git or ruby with the libraries a test needs, the test finds so before
//! it does anything and libtest-mimic's harness (`harness = false`) reports it ignored, saying
//! `skipped: <reason>`; `.ci/run` sets FAULTSCALE_REQUIRE_LKP=1, so in CI it fails instead.

#[macro_use]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::lkp::{PARSE_NEEDS, assert_stats_match, embedded_json, ruby_has, stats};
use common::*;
use serde_json::Value;

fn main() {
    let lkp = |name, test| trial_needing(name, REQUIRED_BY, test);
    let root = |name, test| root_trial_needing(name, REQUIRED_BY, test);
    run_trials(vec![
        lkp(
            "the_committed_patch_series_is_the_one_scripts_lkp_patches_makes",
            the_committed_patch_series_is_the_one_scripts_lkp_patches_makes,
        ),
        root(
            "a_job_through_lkps_run_test_run_stats_and_create_stats_matrix",
            a_job_through_lkps_run_test_run_stats_and_create_stats_matrix,
        ),
        lkp(
            "parse_on_the_shipped_fixture_gives_its_yaml_and_the_jsons_figures",
            parse_on_the_shipped_fixture_gives_its_yaml_and_the_jsons_figures,
        ),
        lkp(
            "parse_gives_only_failure_stats_for_a_failed_interrupted_truncated_or_empty_run",
            parse_gives_only_failure_stats_for_a_failed_interrupted_truncated_or_empty_run,
        ),
        lkp(
            "lkps_stats_code_reads_the_kpis_direction_from_the_patched_index",
            lkps_stats_code_reads_the_kpis_direction_from_the_patched_index,
        ),
        lkp(
            "job_files_split_with_lkps_split_job_into_jobs_of_declared_parameters",
            job_files_split_with_lkps_split_job_into_jobs_of_declared_parameters,
        ),
        lkp(
            "lkps_change_detection_reports_a_run_that_goes_from_pass_to_fail",
            lkps_change_detection_reports_a_run_that_goes_from_pass_to_fail,
        ),
        lkp("run_counts_the_placements_as_faultscale_parses_them", run_counts_the_placements_as_faultscale_parses_them),
        // Where this test has no v1 memory cgroup of its own (v2, or the v1 hierarchy's root),
        // it cannot run here whatever CI installs: ignored with the reason, not failed by
        // FAULTSCALE_REQUIRE_LKP.
        match own_v1_memory_cgroup() {
            Ok(_) => root(
                "the_cgroup2_jobs_cgroup_is_given_from_the_hierarchys_root",
                the_cgroup2_jobs_cgroup_is_given_from_the_hierarchys_root,
            ),
            Err(Missing(why)) => {
                root_trial("the_cgroup2_jobs_cgroup_is_given_from_the_hierarchys_root", Some(why), || {})
            }
        },
    ])
}

/// This process's v1 memory cgroup, where it has one of its own (not the hierarchy's root).
fn own_v1_memory_cgroup() -> Result<String, Missing> {
    let text_of = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let memory = text_of.lines().find(|l| l.split(':').nth(1).is_some_and(|c| c.split(',').any(|c| c == "memory")));
    memory.map(|l| l.rsplit(':').next().unwrap().to_string()).filter(|p| p != "/").ok_or_else(|| {
        Missing(
            "this test runs at the root of a cgroup v1 memory hierarchy, or on v2: no cgroup of its own to name".into(),
        )
    })
}

/// Set (by `.ci/run`), what a test finds missing fails it instead of skipping it.
const REQUIRED_BY: &str = "FAULTSCALE_REQUIRE_LKP";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn integration() -> PathBuf {
    repo().join("integrations/lkp")
}

/// A copy of lkp-tests with faultscale's patch series applied, and a hosts file for this
/// machine (what `lkp install` writes), which split-job reads.
struct Lkp {
    dir: tempfile::TempDir,
}

impl Lkp {
    fn src(&self) -> PathBuf {
        self.dir.path().join("lkp-tests")
    }

    /// Where this copy keeps result roots: lkp-tests' RESULT_ROOT_DIR, /lkp/result on a
    /// test machine, here inside the copy's temporary directory (see `compare`).
    fn result_root_dir(&self) -> PathBuf {
        self.dir.path().join("lkp/result")
    }
}

/// The two runs' "commits": sbin/compare's default dimension.
const COMMITS: [&str; 2] = ["1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"];

/// git in `dir` under a fixed identity, asserting it succeeds.
fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=faultscale tests", "-c", "user.email=tests@faultscale.invalid"])
        .args(["-c", "init.defaultBranch=master"])
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {}{}", text(&output.stdout), text(&output.stderr));
    text(&output.stdout)
}

/// The lkp-tests repository as a git bundle: `LKP_BUNDLE`, else ../shared/lkp-tests.bundle
/// beside the repository (where scripts/test finds ../shared/lkp-tests for `LKP_SRC`).
fn lkp_bundle() -> PathBuf {
    match std::env::var_os("LKP_BUNDLE") {
        Some(bundle) => repo().join(bundle),
        None => repo().join("../shared/lkp-tests.bundle"),
    }
}

/// ruby's libraries (its `-r` names) that one test needs beyond `parse`'s, and how to get them.
struct RubyNeeds(&'static [&'static str], &'static str);

const NOTHING_MORE: RubyNeeds = RubyNeeds(&[], "");
const COMPARE_NEEDS: RubyNeeds = RubyNeeds(
    &["gnuplot", "term/ansicolor"],
    "sbin/compare needs ruby's gnuplot and term-ansicolor (Debian: ruby-gnuplot ruby-term-ansicolor; .ci/run installs them)",
);
const SPLIT_JOB_NEEDS: RubyNeeds = RubyNeeds(
    &["tty-command", "git"],
    "split-job needs ruby's tty-command and git (Debian: ruby-tty-command ruby-git; .ci/run installs them)",
);

/// What this machine lacks for a test of lkp-tests' code, if anything: the bundle and git,
/// which clone it and apply the series (all the series' own check needs: `ruby` None); for a
/// test that runs lkp-tests' ruby, ruby with what `parse` needs and the test's own `ruby`.
fn lkp_missing(ruby: Option<&RubyNeeds>) -> Option<String> {
    let bundle = lkp_bundle();
    if !bundle.is_file() {
        return Some(format!(
            "no lkp-tests bundle at {} (set LKP_BUNDLE to a git bundle of lkp-tests)",
            bundle.display()
        ));
    }
    if Command::new("git").arg("--version").output().is_err() {
        return Some("git is missing (it applies the patch series; .ci/run installs it)".into());
    }
    let RubyNeeds(more, why) = ruby?;
    if !ruby_has(&PARSE_NEEDS) {
        return Some(
            "ruby with active_support is missing (Debian: ruby ruby-activesupport; .ci/run installs them)".into(),
        );
    }
    (!more.is_empty() && !ruby_has(more)).then(|| why.to_string())
}

fn patches() -> Vec<PathBuf> {
    let dir = integration().join("patches");
    let mut patches: Vec<PathBuf> = files_in(&dir).iter().map(|name| dir.join(name)).collect();
    patches.sort();
    assert!(!patches.is_empty(), "no patch series in {}", dir.display());
    patches
}

/// The patched copy, once `lkp_missing` finds nothing missing for a test that needs `ruby`.
fn lkp(ruby: &RubyNeeds) -> Result<Lkp, Missing> {
    if let Some(why) = lkp_missing(Some(ruby)) {
        return Err(Missing(why));
    }
    let bundle = lkp_bundle();
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("lkp-tests");
    git(dir.path(), &["clone", "-q", bundle.to_str().unwrap(), "lkp-tests"]);
    git(&tree, &["tag", "base"]);
    // lkp-tests keeps some of distro/adaptation-pkg as symlinks: the series must leave them so.
    let links = ["aliyun", "redhat", "rocky"].map(|d| tree.join("distro/adaptation-pkg").join(d));
    let is_link = |p: &PathBuf| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink());
    assert!(links.iter().all(is_link), "the bundle's clone has distro/adaptation-pkg's symlinks");
    let patches = patches();
    let mut am = vec!["am", "-q"];
    am.extend(patches.iter().map(|p| p.to_str().unwrap()));
    git(&tree, &am);
    let log = git(&tree, &["log", "--format=%s", "base..HEAD"]);
    assert_eq!(log.lines().count(), patches.len(), "one commit per patch:\n{log}");
    assert!(links.iter().all(is_link), "the series keeps distro/adaptation-pkg's symlinks");
    assert_eq!(git(&tree, &["status", "--porcelain"]), "", "git am left the tree clean");
    // The program's package comes with the program: lkp install maps it through the
    // distribution's adaptation-pkg file, and skips a package without a line there.
    let program_commit = git(&tree, &["rev-list", "--reverse", "base..HEAD"]).lines().next().unwrap().to_string();
    let program_files = git(&tree, &["show", "--name-only", "--format=", &program_commit]);
    assert!(
        program_files.lines().any(|f| f == "distro/adaptation-pkg/debian")
            && program_files.lines().any(|f| f == "programs/faultscale/run"),
        "the program and its adaptation-pkg line in one commit:\n{program_files}"
    );
    for distro in ["debian", "ubuntu", "centos", "aliyun", "rocky"] {
        let file = std::fs::read_to_string(tree.join("distro/adaptation-pkg").join(distro)).unwrap();
        assert!(file.lines().any(|l| l == "faultscale::"), "{distro} maps faultscale");
    }
    // PKGBUILD's arch is x86_64 alone: the riscv distribution gets no line.
    let riscv = std::fs::read_to_string(tree.join("distro/adaptation-pkg/exaleap-riscv-linux")).unwrap();
    assert!(!riscv.lines().any(|l| l.starts_with("faultscale:")), "exaleap-riscv-linux maps faultscale");
    let host = text(&Command::new("hostname").output().unwrap().stdout).trim().to_string();
    let cpus = std::thread::available_parallelism().unwrap().get();
    std::fs::write(tree.join("hosts").join(host), format!("nr_cpu: {cpus}\nnr_node: 1\nmemory: 1G\n")).unwrap();
    Ok(Lkp { dir })
}

/// `parse` as LKP's run-stats runs it, from the patched tree.
fn parse(lkp: &Lkp, raw: &Path) -> String {
    common::lkp::parse(&lkp.src(), &lkp.src().join("programs/faultscale"), raw)
}

fn the_committed_patch_series_is_the_one_scripts_lkp_patches_makes() -> Result<(), Missing> {
    if let Some(why) = lkp_missing(None) {
        return Err(Missing(why));
    }
    let bundle = lkp_bundle();
    let output =
        Command::new(repo().join("scripts/lkp-patches")).arg("--check").env("LKP_BUNDLE", &bundle).output().unwrap();
    assert!(output.status.success(), "{}{}", text(&output.stdout), text(&output.stderr));
    for patch in patches() {
        let body = std::fs::read_to_string(&patch).unwrap();
        // No identity is made up: the author and the sign-off are a placeholder named as one,
        // which the sender replaces with their own name.
        let sign_offs: Vec<&str> = body.lines().filter(|l| l.starts_with("Signed-off-by: ")).collect();
        assert_eq!(
            sign_offs,
            ["Signed-off-by: PLACEHOLDER sender <sender@placeholder.invalid>"],
            "{}",
            patch.display()
        );
        assert!(body.contains("\nFrom: PLACEHOLDER sender <sender@placeholder.invalid>"), "{}", patch.display());
        // Every paragraph of the message is wrapped whole: no line of a few words that the
        // next line continues.
        let message = &body[..body.find("\n---\n").unwrap()];
        let lines: Vec<&str> = message.lines().collect();
        for pair in lines.windows(2) {
            // A short line that does not end a sentence, continued by the next line.
            let broken = !pair[0].is_empty() && pair[0].len() < 40 && !pair[0].ends_with('.');
            let continues = pair[1].starts_with(|c: char| c.is_lowercase());
            assert!(!(broken && continues), "{}: {pair:?}", patch.display());
        }
    }
    Ok(())
}

/// One job run as LKP runs it, into `result` (a result root): bin/run-test with the job's
/// parameters as variables, bin/run-stats (parse, then dump-stat into faultscale.json), then
/// bin/create-stats-matrix. Returns the program's output and what LKP's steps logged.
fn run_job(lkp: &Lkp, result: &Path, params: &[String]) -> (String, String) {
    let (tmp, benchmarks) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // What `lkp install` unpacks: $BENCHMARK_ROOT/faultscale/bin/faultscale.
    std::fs::create_dir_all(benchmarks.path().join("faultscale/bin")).unwrap();
    std::os::unix::fs::symlink(binary(), benchmarks.path().join("faultscale/bin/faultscale")).unwrap();
    std::fs::create_dir_all(result).unwrap();
    std::fs::write(result.join("job.yaml"), "suite: faultscale\ntestcase: faultscale\ncategory: benchmark\n").unwrap();
    let lkp_env = |c: &mut Command| {
        c.env("LKP_SRC", lkp.src())
            .env("TMP", tmp.path())
            .env("RESULT_ROOT", result)
            .env("TMP_RESULT_ROOT", result)
            .env("BENCHMARK_ROOT", benchmarks.path())
            .env("suite", "faultscale")
            .env("testcase", "faultscale")
            .env("category", "benchmark")
            .stdin(Stdio::null());
    };
    // As job.sh's run_test hands a program its parameters: env NAME=VALUE ... bin/run-test
    // faultscale, from a shell of its own (run-test sets its parent's oom_score_adj).
    let mut run = Command::new("sh");
    run.args(["-c", "\"$@\"; exit $?", "sh", "env"]).args(params).arg(lkp.src().join("bin/run-test")).arg("faultscale");
    lkp_env(&mut run);
    let output = run.output().unwrap();
    let raw = std::fs::read_to_string(result.join("faultscale")).expect("run-test captured the program's output");
    assert!(output.status.success(), "run failed: {}\n{raw}\n{}", output.status, text(&output.stderr));
    assert_eq!(raw, text(&output.stdout), "run-test's tee shows what it keeps");
    let mut logged = text(&output.stderr);
    for step in [vec!["bin/run-stats", "faultscale"], vec!["bin/create-stats-matrix"]] {
        let mut c = Command::new(lkp.src().join(step[0]));
        c.args(&step[1..]);
        if step[0] == "bin/create-stats-matrix" {
            c.arg(result);
        }
        lkp_env(&mut c);
        let out = c.output().unwrap();
        logged += &text(&out.stdout);
        logged += &text(&out.stderr);
        assert!(out.status.success(), "{}: {}\n{logged}", step[0], out.status);
    }
    (raw, logged)
}

/// A result root's stats.json, and its matrix (matrix.json, gzipped where lkp-tests compresses it).
fn stats_and_matrix(result: &Path) -> (Value, Value) {
    let stats: Value = serde_json::from_str(&std::fs::read_to_string(result.join("stats.json")).unwrap()).unwrap();
    let matrix = if result.join("matrix.json").is_file() {
        std::fs::read_to_string(result.join("matrix.json")).unwrap()
    } else {
        let out = Command::new("gzip").arg("-dc").arg(result.join("matrix.json.gz")).output().unwrap();
        text(&out.stdout)
    };
    (stats, serde_json::from_str(&matrix).unwrap())
}

/// The cgroup this test runs in, as /proc/self/cgroup names it (the memory controller's on v1).
fn own_cgroup_is_below_the_root() -> bool {
    let text = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let memory = text.lines().find(|l| l.split(':').nth(1).is_some_and(|c| c.split(',').any(|c| c == "memory")));
    let line = memory.or_else(|| text.lines().find(|l| l.starts_with("0::"))).unwrap();
    line.rsplit(':').next().unwrap() != "/"
}

fn a_job_through_lkps_run_test_run_stats_and_create_stats_matrix() -> Result<(), Missing> {
    let (_serial, _) = needs_root();
    let lkp = lkp(&COMPARE_NEEDS)?;
    let cpus = std::thread::available_parallelism().unwrap().get();
    // The default base is what the job's cgroup gives: self on v1 below the root, else new;
    // never the root, which run takes only where the job asks for it.
    let below_the_root = own_cgroup_is_below_the_root();
    let mut runs = Vec::new();
    for (n, base) in [(0, Some(BASE)), (1, None)] {
        let mut params: Vec<String> =
            ["placement=child,control", "runtime=6s", "slices=2", "test=anon"].iter().map(|p| p.to_string()).collect();
        params.extend(["mode=process", "nr_task=100%"].map(String::from));
        if let Some(base) = base {
            params.push(format!("base={base}"));
        }
        // A result root where LKP keeps one: RESULT_ROOT_DIR/testcase/params/testbox/rootfs/
        // kconfig/compiler/commit/run, one fake commit per run (compare's dimension).
        let result = lkp
            .result_root_dir()
            .join("faultscale/child_control-2s-process-100%-anon/testbox/debian-x86_64.cgz/x86_64-rhel/gcc-12")
            .join(COMMITS[n])
            .join("0");
        let (raw, logged) = run_job(&lkp, &result, &params);
        assert!(!logged.contains("skip unite"), "create-stats-matrix took a stray JSON for a monitor:\n{logged}");
        let jsons: Vec<String> = files_in(&result)
            .into_iter()
            .map(|f| f.to_string_lossy().into_owned())
            .filter(|f| f.ends_with(".json"))
            .collect();
        assert_eq!(jsons, ["faultscale.json", "stats.json"], "only LKP's own JSON in the result root");
        // The program's output carries the JSON's summary, not its slices; the full file is
        // kept compressed beside it.
        assert!(raw.len() < 64 * 1024, "the program's output is {} bytes:\n{raw}", raw.len());
        assert!(!raw.contains("\"measurements\""), "no slice in the program's output");
        let full = Command::new("xz").arg("-dc").arg(result.join("faultscale-full-json.xz")).output().unwrap();
        let full: Value = serde_json::from_slice(&full.stdout).expect("the full JSON, xz-compressed");
        assert_eq!(
            full["measurements"].as_array().map(Vec::len),
            embedded_json(&raw)["slices"].as_u64().map(|n| n as usize)
        );
        // runtime is the whole test's time: 6 s over the baseline, child and control.
        assert!(raw.contains("faultscale-runtime: 6s for the test over 3 placements"), "{raw}");
        let command = raw.lines().find(|l| l.contains("bin/faultscale ")).expect("the command, logged");
        assert!(command.ends_with(&format!(" --tasks {cpus}")), "{raw}");
        let cgroup_line = raw.lines().find(|l| l.starts_with("faultscale-job-cgroup: ")).expect("the job's cgroup");
        let expected_base = match base {
            Some(base) => base.to_string(),
            None if cgroup_line.contains("cgroup v1") && below_the_root => "self".to_string(),
            None => "new".to_string(),
        };
        assert!(cgroup_line.ends_with(&format!("as this process sees it): --base {expected_base}")), "{cgroup_line}");
        assert!(raw.contains("placement  cgroup"), "the table:\n{raw}");
        let reproduce = std::fs::read_to_string(result.join("reproduce.sh")).unwrap();
        assert!(
            reproduce.contains(&format!("--base {expected_base} --cgroup child,control --duration 2 --slices 2")),
            "{reproduce}"
        );
        assert!(!reproduce.contains(result.to_str().unwrap()), "no path into the result root:\n{reproduce}");

        let doc = embedded_json(&raw);
        let settings = &doc["settings"];
        assert_eq!(settings["placements"], serde_json::json!(["base", "child", "control"]));
        assert_eq!(settings["tasks"], serde_json::json!([cpus]), "nr_task=100% is one task per CPU");
        assert_eq!((settings["duration_s"].as_f64(), settings["slices"].as_u64()), (Some(2.0), Some(2)));
        assert!(doc["environment"]["base_depth"].as_u64().unwrap() > 0, "below the root here");
        // The depth is said as text, not as a stat; the warnings are in the output once.
        let depth_line = format!("faultscale-base-depth: {} (", doc["environment"]["base_depth"]);
        assert!(raw.lines().any(|l| l.starts_with(&depth_line)), "{raw}");
        assert!(doc.get("warnings").is_none(), "the warnings are printed as text only");

        let parsed = parse(&lkp, &result.join("faultscale"));
        assert_stats_match(&parsed, &doc);
        let got = stats(&parsed);
        for key in ["pass", "cost_ratio%", "cost_ratio_low%", "control_cost_ratio_high%", "per_process_ops", "workload"]
        {
            assert!(got.contains_key(key), "{key} missing from\n{parsed}");
        }
        // The headline placement's cost ratio is given once, unprefixed.
        assert!(!got.contains_key(&format!("{cpus}.child.cost_ratio%")), "{parsed}");
        assert!(got.contains_key(&format!("{cpus}.child.cpu_ns_per_fault")), "{parsed}");
        assert!(!got.keys().any(|k| k.ends_with("_pct") || k.ends_with(".per_process_ops")), "{parsed}");
        let (stats_json, matrix) = stats_and_matrix(&result);
        for (key, value) in &got {
            let name = format!("faultscale.{key}");
            let stored = stats_json[&name].as_f64().unwrap_or_else(|| panic!("{name} not in stats.json"));
            assert!((stored - value).abs() < 1e-6, "{name}: {stored} in stats.json, parse said {value}");
            assert!(matrix[&name].is_array(), "{name} not in matrix.json");
        }
        let pid: u32 = doc["environment"]["run_id"].as_str().unwrap().split('-').next().unwrap().parse().unwrap();
        assert_nothing_left(&runs_dir(), pid);
        runs.push(result);
    }
    compare(&lkp, &runs);
    Ok(())
}

/// Two result roots through LKP's sbin/compare, one headline stat at a time (`-f STAT
/// RESULT_ROOT...`): each side's value and LKP's %change between them, blank under 3%.
/// lkp-tests fixes RESULT_ROOT_DIR (/lkp/result) and KTEST_PATHS_DIR (/lkp/paths) as
/// constants in lib/constant.rb, and compare parses a result root's path against the first;
/// this host has no /lkp and the test writes nowhere but its temporary directory, so the
/// copy's two constants point there (the one change to lkp-tests' code in these tests).
fn compare(lkp: &Lkp, runs: &[PathBuf]) {
    let constants = lkp.src().join("lib/constant.rb");
    let text_of = std::fs::read_to_string(&constants).unwrap();
    let root = lkp.dir.path().join("lkp");
    let changed = text_of
        .replace("'/lkp/result'", &format!("'{}/result'", root.display()))
        .replace("'/lkp/paths'", &format!("'{}/paths'", root.display()));
    assert_ne!(changed, text_of, "lib/constant.rb names /lkp/result and /lkp/paths");
    std::fs::write(&constants, changed).unwrap();
    let sides: Vec<Value> = runs.iter().map(|r| stats_and_matrix(r).0).collect();
    for stat in [
        "cost_ratio%",
        "cost_ratio_low%",
        "cost_ratio_high%",
        "control_cost_ratio_low%",
        "control_cost_ratio_high%",
        "per_process_ops",
    ] {
        let name = format!("faultscale.{stat}");
        let output = Command::new("ruby")
            .arg(lkp.src().join("sbin/compare"))
            .args(["-c", "never", "-f", &name])
            .args(runs)
            .env("LKP_SRC", lkp.src())
            .output()
            .unwrap();
        let shown = text(&output.stdout);
        assert!(output.status.success(), "compare -f {name}: {}\n{shown}", text(&output.stderr));
        let line = shown
            .lines()
            .find(|l| l.ends_with(&format!("GEO-MEAN {name}")))
            .unwrap_or_else(|| panic!("compare shows no {name}:\n{shown}"));
        let (v0, v1) = (sides[0][&name].as_f64().unwrap(), sides[1][&name].as_f64().unwrap());
        let shown_value = |v: f64| format!("{v:.2}");
        let change = 100.0 * (v1 - v0) / v0;
        let columns: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(columns[0], shown_value(v0), "{line}");
        if change.abs() < 3.0 {
            assert_eq!(columns[1], shown_value(v1), "a change under 3% is shown blank: {line}");
        } else {
            assert_eq!(columns[1..3], [format!("{change:.0}%"), shown_value(v1)], "{line}");
        }
        shown!("lkp compare: {line}");
    }
}

fn parse_on_the_shipped_fixture_gives_its_yaml_and_the_jsons_figures() -> Result<(), Missing> {
    let lkp = lkp(&NOTHING_MORE)?;
    let fixture = lkp.src().join("spec/fixtures/stats/faultscale/1");
    let parsed = parse(&lkp, &fixture);
    let expected = std::fs::read_to_string(fixture.with_extension("yaml")).unwrap();
    // lkp-tests' stats_spec compares the parser's output with the chomped YAML.
    assert_eq!(parsed.trim_end(), expected.trim_end());
    let doc = embedded_json(&std::fs::read_to_string(&fixture).unwrap());
    assert_stats_match(&parsed, &doc);
    // A real run of the shipped run script: the command it logged is the one faultscale
    // recorded, with what run passes today (--thp keep: LKP's transparent_hugepage setup
    // sets the mode), and the summary leaves out what LKP's job and boot logs hold.
    let raw = std::fs::read_to_string(&fixture).unwrap();
    let command = doc["environment"]["command_line"].as_str().expect("a real run's JSON");
    assert!(
        raw.lines().any(|l| l.ends_with(&format!(" {command}"))),
        "the logged command is the run's:
{raw}"
    );
    // The shipped job's parameters (faultscale.yaml): its placements, no --profile, THP never
    // as LKP's transparent_hugepage setup sets it for the job.
    assert!(command.contains(" --thp keep ") && command.contains(" --cgroup child,nested:4,control "), "{command}");
    assert!(!command.contains("--profile") && command.contains(" --slices auto "), "{command}");
    assert_eq!(doc["settings"]["thp"], "keep");
    assert_eq!(doc["environment"]["thp_enabled"], "never");
    // The fields that named the machine, neutralised (docs/lkp.md lists them).
    assert_eq!(
        (&doc["environment"]["host"], &doc["environment"]["kernel"]),
        (&Value::from("lkp-vm"), &Value::from("6.12.57+deb13-amd64"))
    );
    assert!(doc["environment"].get("kernel_cmdline").is_none() && doc["environment"].get("machine").is_none());
    assert!(std::fs::metadata(&fixture).unwrap().len() < 32 * 1024, "a small fixture");

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
        std::fs::write(
            &raw,
            format!("faultscale-summary-begin\n{with}\nfaultscale-summary-end\nfaultscale-exit-status: 0\n"),
        )
        .unwrap();
        let parsed = parse(&lkp, &raw);
        assert_stats_match(&parsed, &with);
        assert_eq!(stats(&parsed).keys().filter(|k| k.starts_with("per_level")).count(), named, "{parsed}");
    }
    Ok(())
}

/// lkp-tests' programs mark a bad run their own way; faultscale's parse does as stress-ng's
/// does: a clean run gives `pass: 1` with its figures, any other only `X.fail: 1` stats
/// saying what went wrong (etc/failure counts them), and no figure at all, as will-it-scale's
/// parse gives none for a bad sample.
fn parse_gives_only_failure_stats_for_a_failed_interrupted_truncated_or_empty_run() -> Result<(), Missing> {
    let lkp = lkp(&NOTHING_MORE)?;
    let raw = std::fs::read_to_string(lkp.src().join("spec/fixtures/stats/faultscale/1")).unwrap();
    let doc = embedded_json(&raw);
    let dir = tempfile::tempdir().unwrap();
    let wrapped =
        |doc: &Value, tail: &str| format!("the table\nfaultscale-summary-begin\n{doc}\nfaultscale-summary-end\n{tail}");
    let mut stopped = doc.clone();
    stopped["complete"] = Value::Bool(false);
    stopped["state"] = Value::from("stopped");
    stopped["signal"] = Value::from(15);
    let mut failed = doc.clone();
    failed["state"] = Value::from("failed");
    failed["failed_slices"] = Value::from(1);
    failed["failures"] = serde_json::json!([{"placement": "child", "round": 2, "reason": "worker 1 exited"}]);
    let with_state = |state: &str| {
        let mut with = doc.clone();
        with["state"] = Value::from(state);
        with
    };
    let mut without_complete = doc.clone();
    without_complete.as_object_mut().unwrap().remove("complete");
    let json = doc.to_string();
    let cases: Vec<(&str, Vec<u8>, Vec<&str>)> = vec![
        (
            "a failed run",
            wrapped(&failed, "faultscale-exit-status: 1\n").into(),
            vec!["exit_status.1.fail", "failed_slices.fail"],
        ),
        (
            "an interrupted run",
            wrapped(&stopped, "faultscale-exit-status: 143\n").into(),
            vec!["exit_status.143.fail", "interrupted.fail"],
        ),
        (
            "a run killed before it wrote its file whole",
            wrapped(
                &serde_json::json!({"state": "running", "complete": false, "summaries": []}),
                "faultscale-exit-status: 137\n",
            )
            .into(),
            vec!["exit_status.137.fail", "interrupted.fail"],
        ),
        (
            "an output cut inside the summary",
            format!("the table\nfaultscale-summary-begin\n{}", &json[..json.len() / 2]).into(),
            vec!["truncated.fail"],
        ),
        ("an output cut before run's last line", wrapped(&doc, "").into(), vec!["truncated.fail"]),
        (
            "a summary that is not JSON",
            format!(
                "faultscale-summary-begin\n{}\nfaultscale-summary-end\nfaultscale-exit-status: 0\n",
                &json[..json.len() / 2]
            )
            .into(),
            vec!["invalid_summary.fail"],
        ),
        (
            "faultscale refusing its arguments",
            b"faultscale: error: something\nfaultscale-exit-status: 2\n".to_vec(),
            vec!["exit_status.2.fail", "no_summary.fail"],
        ),
        (
            "a state this parse does not know (a later faultscale's)",
            wrapped(&with_state("partial"), "faultscale-exit-status: 0\n").into(),
            vec!["invalid_summary.fail"],
        ),
        (
            "a summary without its complete flag",
            wrapped(&without_complete, "faultscale-exit-status: 0\n").into(),
            vec!["invalid_summary.fail"],
        ),
        ("an empty output", Vec::new(), vec!["no_summary.fail"]),
    ];
    for (case, input, mut expected) in cases {
        let file = dir.path().join("raw");
        std::fs::write(&file, &input).unwrap();
        let parsed = parse(&lkp, &file);
        let got = stats(&parsed);
        // fail: 1 with the reasons: the one that pairs with pass in LKP's compare.
        expected.push("fail");
        expected.sort();
        assert_eq!(got.keys().map(String::as_str).collect::<Vec<_>>(), expected, "{case}:\n{parsed}");
        assert!(got.values().all(|v| *v == 1.0), "{case}:\n{parsed}");
    }
    // A byte that is not UTF-8 (a warning's text cut mid-character, a serial console's noise)
    // is read as lkp-tests' resolve_invalid_bytes reads it: the run's stats, as without it.
    let mut noisy = b"faultscale: warning: \xff\xfe cut\n".to_vec();
    noisy.extend(wrapped(&doc, "faultscale-exit-status: 0\n").into_bytes());
    let file = dir.path().join("noisy");
    std::fs::write(&file, &noisy).unwrap();
    assert_stats_match(&parse(&lkp, &file), &doc);
    // CRLF line ends (a log copied through Windows or a serial console) read as LF ones.
    let file = dir.path().join("crlf");
    std::fs::write(&file, wrapped(&doc, "faultscale-exit-status: 0\n").replace('\n', "\r\n")).unwrap();
    assert_stats_match(&parse(&lkp, &file), &doc);
    Ok(())
}

fn lkps_stats_code_reads_the_kpis_direction_from_the_patched_index() -> Result<(), Missing> {
    let lkp = lkp(&NOTHING_MORE)?;
    // lib/stats.rb's kpi_stat_direction, as compare and the bisect code call it, for a 5% rise.
    let script = r##"require ENV["LKP_SRC"] + "/lib/stats"
        ARGV.each { |s| puts "#{s} #{kpi_stat_direction(s, 5)} #{strict_kpi_stat?(s, nil)}" }"##;
    let cases = [
        // One KPI per quantity: the headline cost ratio, the baseline's rate per task.
        ("faultscale.cost_ratio%", "regression true"),
        ("faultscale.per_process_ops", "improvement true"),
        ("faultscale.per_thread_ops", "improvement true"),
        // The per-level cost is a signed slope (negative under noise: the fixture's is
        // -1.6), which compare's logarithms and LKP's %change cannot take: a stat only.
        ("faultscale.per_level_ns", "undefined false"),
        // The per-placement figures repeat those: the headline is the first placement's
        // overhead, the baseline's cost and rate are per_*_ops again.
        ("faultscale.4.nested:4.cost_ratio%", "undefined false"),
        ("faultscale.4.nested:4.cpu_ns_per_fault", "undefined false"),
        ("faultscale.4.base.cpu_ns_per_fault", "undefined false"),
        ("faultscale.4.base.faults_per_sec", "undefined false"),
        ("faultscale.4.child.faults_per_sec", "undefined false"),
        // The interval's ends and the control say how far to trust a change; they are no KPI.
        ("faultscale.cost_ratio_low%", "undefined false"),
        ("faultscale.4.child.cost_ratio_high%", "undefined false"),
        ("faultscale.control_cost_ratio%", "undefined false"),
        ("faultscale.4.control.cost_ratio%", "undefined false"),
        ("faultscale.4.control.cpu_ns_per_fault", "undefined false"),
        ("faultscale.4.control.faults_per_sec", "undefined false"),
        ("faultscale.per_level_low_ns", "undefined false"),
        ("faultscale.pass", "undefined false"),
    ];
    let output = Command::new("ruby")
        .args(["-e", script])
        .args(cases.iter().map(|c| c.0))
        .env("LKP_SRC", lkp.src())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let expected: Vec<String> = cases.iter().map(|(stat, says)| format!("{stat} {says}")).collect();
    assert_eq!(text(&output.stdout).lines().collect::<Vec<_>>(), expected);
    Ok(())
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

fn job_files_split_with_lkps_split_job_into_jobs_of_declared_parameters() -> Result<(), Missing> {
    let lkp = lkp(&SPLIT_JOB_NEEDS)?;
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
    let files = ["faultscale.yaml", "faultscale-largemem.yaml", "faultscale-cgroup2.yaml"];
    let jobs = files.map(|j| lkp.src().join("jobs/faultscale").join(j));
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
    // As few jobs a kernel as the question needs, 300 s each as will-it-scale's.
    assert_eq!(atoms.len(), 3, "one job a file:\n{}", text(&split.stdout));
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
        // programs/faultscale/include: the scheduler books no kernel without memcg.
        let kconfig = atom["need_kconfig"].to_string();
        assert!(kconfig.contains("\"MEMCG\":\"y\"") && kconfig.contains("\"CGROUPS\":\"y\""), "{kconfig}");
        assert!(!kconfig.contains("PERF_EVENTS"), "no memcg_profile, no perf events needed: {kconfig}");
        // THP as LKP's jobs set it: its transparent_hugepage setup program, not a faultscale
        // parameter (run passes --thp keep).
        assert_eq!(atom["transparent_hugepage"]["thp_enabled"], "never", "THP through LKP's setup program");
        assert!(params.get("thp").is_none() && params.get("profile").is_none(), "no thp or profile parameter");
        assert!(atom["need_memory"].is_string(), "every job says what memory it needs");
        let cgroup2 = atom.get("cgroup2").is_some_and(|c| c.is_object());
        // The plain job takes the job's own cgroup (run detects it); the cgroup2 job builds
        // in the cgroup LKP's setup made.
        assert_eq!(params.get("base"), cgroup2.then(|| Value::from("self")).as_ref());
        if cgroup2 {
            assert_eq!(
                atom["cgroup2"]["cg_bind"], 0,
                "LKP's cgroup2 cgroup must hold no process for faultscale to build in it"
            );
            assert_eq!(atom["cgroup2"]["memory.high"], "90%", "cgroup2.yaml's knobs kept beside cg_bind");
        }
        assert!(atom.get("cg_bind").is_none() && atom.get("cgroup").is_none(), "no top-level cg_bind or cgroup key");
        // doc/add-testcase.md: 300-600 s, written as netperf's jobs write it (params/runtime
        // turns it into seconds when the job is expanded; run takes either). The test's
        // whole time: run splits it among the placements.
        assert_eq!(params["runtime"], "300s");
    }
    let largemem = atoms.iter().find(|a| a["faultscale"]["test"] == "page_fault2").expect("a page_fault2 job");
    // page_fault2 at 100% needs 512 MiB a CPU: a need that grows with the machine's CPUs, as
    // LKP's filters/need_memory reads a percentage (GB per 100 CPUs), never a fixed figure a
    // larger machine outgrows.
    assert_eq!(largemem["need_memory"], "30%");
    assert_eq!(largemem["transparent_hugepage"]["shmem_enabled"], "never", "page_fault2's file is shmem");
    for (nr_cpu, need_mb) in [(256, 76 * 1024), (448, 134 * 1024)] {
        let filter = Command::new("bash")
            .arg(lkp.src().join("filters/need_memory"))
            .env("LKP_SRC", lkp.src())
            .env("need_memory", "30%")
            .env("nr_cpu", nr_cpu.to_string())
            .output()
            .unwrap();
        // This host has far less: the filter drops the job and says what it needed.
        let said = text(&filter.stdout);
        assert!(!filter.status.success() && said.contains(&format!("need: {need_mb} MB")), "{nr_cpu} CPUs: {said}");
    }
    Ok(())
}

/// A job that goes from pass to fail is reported by LKP's own change detection: lib/stats.rb's
/// get_changed_stats (what compare and the bisect code call) over two result roots' matrices,
/// one from the shipped fixture's output, one from an interrupted run's. skip_function_stat?
/// reports `X.fail` only where the other side has `X.pass`: `faultscale.fail` pairs with
/// `faultscale.pass`, the reasons (`faultscale.interrupted.fail`) with nothing.
fn lkps_change_detection_reports_a_run_that_goes_from_pass_to_fail() -> Result<(), Missing> {
    let lkp = lkp(&NOTHING_MORE)?;
    let fixture = std::fs::read_to_string(lkp.src().join("spec/fixtures/stats/faultscale/1")).unwrap();
    let mut stopped = embedded_json(&fixture);
    stopped["complete"] = Value::Bool(false);
    stopped["state"] = Value::from("stopped");
    let interrupted =
        format!("faultscale-summary-begin\n{stopped}\nfaultscale-summary-end\nfaultscale-exit-status: 143\n");
    let roots = tempfile::tempdir().unwrap();
    let mut matrices = Vec::new();
    for (name, output) in [("pass", fixture.as_str()), ("fail", interrupted.as_str())] {
        let result = roots.path().join(name);
        std::fs::create_dir_all(&result).unwrap();
        std::fs::write(result.join("job.yaml"), "suite: faultscale\ntestcase: faultscale\ncategory: benchmark\n")
            .unwrap();
        std::fs::write(result.join("faultscale"), output).unwrap();
        for step in ["bin/run-stats", "bin/create-stats-matrix"] {
            let mut c = Command::new(lkp.src().join(step));
            if step == "bin/run-stats" {
                c.arg("faultscale");
            } else {
                c.arg(&result);
            }
            let out = c
                .env("LKP_SRC", lkp.src())
                .env("RESULT_ROOT", &result)
                .env("TMP_RESULT_ROOT", &result)
                .stdin(Stdio::null())
                .output()
                .unwrap();
            assert!(out.status.success(), "{step}: {}{}", text(&out.stdout), text(&out.stderr));
        }
        let matrix = ["matrix.json", "matrix.json.gz"].map(|f| result.join(f)).into_iter().find(|f| f.is_file());
        matrices.push(matrix.expect("create-stats-matrix wrote a matrix"));
    }
    // get_changed_stats(new, base): the names of what changed, one a line.
    let script = r##"require ENV["LKP_SRC"] + "/lib/stats"
        changed = get_changed_stats(ARGV[0], ARGV[1], {}) || {}
        puts changed.keys.sort"##;
    let changed = |new: &Path, base: &Path| {
        let out =
            Command::new("ruby").args(["-e", script]).arg(new).arg(base).env("LKP_SRC", lkp.src()).output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout).lines().map(String::from).collect::<Vec<_>>()
    };
    let to_fail = changed(&matrices[1], &matrices[0]);
    assert!(to_fail.iter().any(|s| s == "faultscale.fail"), "pass to fail not reported: {to_fail:?}");
    let to_pass = changed(&matrices[0], &matrices[1]);
    assert!(to_pass.iter().any(|s| s == "faultscale.pass"), "fail to pass not reported: {to_pass:?}");
    Ok(())
}

/// `run` splits runtime among the placements faultscale measures, counted as faultscale's
/// --cgroup parser counts them (src/plan/mod.rs) for every syntax it takes. Each case runs the
/// run script as run-test does, with a workload faultscale refuses, so faultscale stops at its
/// arguments after run has said its count, and nothing is made.
fn run_counts_the_placements_as_faultscale_parses_them() -> Result<(), Missing> {
    let lkp = lkp(&NOTHING_MORE)?;
    let dir = tempfile::tempdir().unwrap();
    let benchmarks = dir.path().join("benchmarks");
    std::fs::create_dir_all(benchmarks.join("faultscale/bin")).unwrap();
    std::os::unix::fs::symlink(binary(), benchmarks.join("faultscale/bin/faultscale")).unwrap();
    // A profile file of two levels, and one named root with none (the baseline again).
    let two = dir.path().join("two.toml");
    std::fs::write(&two, "name = \"two\"\ndescription = \"two levels\"\n[[level]]\n[[level]]\n").unwrap();
    let flat = dir.path().join("root.toml");
    std::fs::write(&flat, "name = \"root\"\ndescription = \"the base\"\n").unwrap();
    let cases = [
        ("child", 2),
        ("child,nested:4,control", 4),
        ("nested:1..8", 9),
        ("nested:+01..+03", 4),
        ("nested:2..2,child", 3),
        ("siblings:4", 2),
        ("siblings:4,nested:2", 3),
        ("lkp-cgroup2", 2),
        ("nested-4,limited", 3),
        ("root,child", 2),
        ("base, child , control", 3),
        (two.to_str().unwrap(), 2),
        (&format!("{},child", flat.display()), 2),
    ];
    for (placement, expected) in cases {
        // What faultscale itself plans: --check-args refuses none of these.
        let check = Command::new(binary())
            .args(["--base", BASE, "--cgroup", placement, "--tasks", "8", "--check-args", "2"])
            .output()
            .unwrap();
        assert!(check.status.success(), "{placement}: {}", text(&check.stderr));
        let out = Command::new("bash")
            .arg(lkp.src().join("programs/faultscale/run"))
            .env("LKP_SRC", lkp.src())
            .env("TMP", dir.path())
            .env("BENCHMARK_ROOT", &benchmarks)
            .env("suite", "faultscale")
            .env("placement", placement)
            .env("runtime", "360")
            .env("base", BASE)
            .env("test", "no-such-workload")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let said = text(&out.stdout);
        // 360 s divides by every count here, so the duration prints whole.
        let duration = 360 / expected;
        assert!(
            said.contains(&format!("360s for the test over {expected} placements"))
                && said.contains(&format!("--duration {duration} --")),
            "{placement}: {said}{}",
            text(&out.stderr)
        );
    }
    Ok(())
}

/// The cgroup2 job's cgroup is given from the hierarchy's root (/faultscale.1), which
/// faultscale resolves whatever mount it reads, not as $CGROUP_MNT/faultscale.1, which is
/// wrong wherever faultscale reads another mount. Here CGROUP_MNT names no mount at all and
/// `cgroups` names this test's own cgroup (on v1, where faultscale may build in it, as --base
/// self does): the run builds there.
fn the_cgroup2_jobs_cgroup_is_given_from_the_hierarchys_root() -> Result<(), Missing> {
    let (_serial, _) = needs_root();
    let own = own_v1_memory_cgroup()?;
    let lkp = lkp(&NOTHING_MORE)?;
    let result = tempfile::tempdir().unwrap();
    let params: Vec<String> = [
        "placement=child",
        "runtime=2s",
        "slices=2",
        "test=anon",
        "mode=process",
        "nr_task=1",
        "base=self",
        "cgroup_ver=2",
        "CGROUP_MNT=/nonexistent-cgroup2-mount",
    ]
    .iter()
    .map(|p| p.to_string())
    .chain([format!("cgroups={}", own.trim_start_matches('/'))])
    .collect();
    let (raw, _) = run_job(&lkp, &result.path().join("0"), &params);
    let command = raw.lines().find(|l| l.contains("bin/faultscale ")).expect("the command, logged");
    assert!(command.contains(&format!(" --base {own} --cgroup child ")), "{raw}");
    let doc = embedded_json(&raw);
    assert_eq!(doc["state"], "complete", "{raw}");
    assert!(doc["environment"]["base_cgroup"].as_str().unwrap().ends_with(&own), "{raw}");
    Ok(())
}
