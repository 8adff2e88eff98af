//! What the memcg did during each placement, and the machine it ran on.
//!
//! Both tests need page cache on a disk file system (see `disk_backed_parent`), which a
//! machine may lack at run time: libtest-mimic's harness (`harness = false`) reports them
//! ignored there and says why, where libtest would count a test that returned early as passed.

#[macro_use]
mod common;

use std::path::Path;

use common::*;

fn main() {
    // Page cache reclaims only where it is backed by a disk: on tmpfs, without swap, the limit
    // ends in an OOM kill instead (faultscale says so; it is not what these tests are about),
    // and user-mode-linux's hostfs is too slow to finish one 32M iteration in a slice.
    let no_disk = |guest_disk: bool, why: &str| disk_backed_parent(guest_disk).is_none().then(|| why.to_string());
    run_trials(vec![
        root_trial(
            "reclaim_under_a_limit_is_counted_and_said",
            no_disk(
                false,
                "no disk-backed temporary directory fast enough to write back 32M per iteration here (tmpfs needs swap to reclaim; hostfs and the guest's disk are too slow)",
            ),
            reclaim_under_a_limit_is_counted_and_said,
        ),
        root_trial(
            "file_backed_usemem_four_times_the_limit_reclaims_instead_of_oom",
            no_disk(true, "no disk-backed temporary directory here (tmpfs needs swap to reclaim; hostfs is too slow)"),
            file_backed_usemem_four_times_the_limit_reclaims_instead_of_oom,
        ),
        trial(
            "env_prints_the_machine_facts_that_change_fault_rates",
            env_prints_the_machine_facts_that_change_fault_rates,
        ),
    ])
}

fn reclaim_under_a_limit_is_counted_and_said() {
    let (_serial, base) = needs_root();
    let parent = disk_backed_parent(false).expect("main runs this test only where there is one");
    let dir = tempfile::tempdir_in(parent).unwrap();
    let (json, csv) = (dir.path().join("J.json"), dir.path().join("C.csv"));
    let (_, output) = run_clean(
        &base,
        &[
            "--base",
            BASE,
            "--cgroup",
            "limited",
            "--workload",
            "file-shared",
            "--chunk",
            "32M",
            "--duration",
            "2",
            "--tmpdir",
            dir.path().to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
        ],
    );
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stderr}");
    let rows = read_csv(&csv);
    let count =
        |row: &std::collections::HashMap<String, String>, column: &str| -> f64 { row[column].parse().unwrap_or(0.0) };
    for row in rows.iter().filter(|r| r["placement"] == "limited") {
        // 16M limit, 32M mapped per iteration per worker: reclaim (v2) or the limit hit (v1).
        let reclaim = count(row, "pgscan") + count(row, "pgsteal") + count(row, "events_max");
        assert!(reclaim > 0.0, "no reclaim counted under the limit: {row:?}");
    }
    assert!(stdout.contains("limited    memcg: "), "the table says what the memcg did: {stdout}");
    // The baseline has no limit: it reclaimed nothing, or a warning says it did.
    for row in rows.iter().filter(|r| r["placement"] == "base") {
        let reclaim = count(row, "pgsteal") + count(row, "events_max");
        assert!(reclaim == 0.0 || stderr.contains("the baseline itself was under memory pressure"), "{row:?}");
    }
    let document: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for m in document["measurements"].as_array().unwrap() {
        let memcg = m["result"]["memcg"].as_object().unwrap_or_else(|| panic!("no memcg deltas: {m}"));
        assert!(memcg.contains_key("pgfault") && memcg.contains_key("events_max"), "{memcg:?}");
    }
    let machine = &document["environment"]["machine"];
    for fact in ["topology", "numa_balancing", "mitigations", "swap", "lru_gen", "overcommit_memory"] {
        assert!(machine[fact].is_string(), "{fact} missing: {machine}");
    }
    // The kernel is known here: the file and every row name it, never null (#44, 8).
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(document["environment"]["kernel"], release.trim(), "{}", document["environment"]);
    assert!(rows.iter().all(|r| r["kernel"] == release.trim()), "{rows:?}");
}

/// A directory on a disk file system for page cache that must reclaim without swap, or None
/// (tmpfs is swap-backed; user-mode-linux's hostfs is too slow for a slice). The guest runner
/// names the ext4 disk it attaches in FAULTSCALE_DISK_TMPDIR: fast enough for clean pages,
/// not for writing back 32M of dirty ones per iteration (`guest_disk` says which is wanted).
fn disk_backed_parent(guest_disk: bool) -> Option<std::path::PathBuf> {
    if let Some(dir) = std::env::var_os("FAULTSCALE_DISK_TMPDIR") {
        return guest_disk.then(|| dir.into());
    }
    let unsuitable = |dir: &Path| {
        nix::sys::statfs::statfs(dir)
            .map(|s| [0x0102_1994, 0x00C0_FFEE].contains(&s.filesystem_type().0))
            .unwrap_or(true)
    };
    [std::env::temp_dir(), "/var/tmp".into()].into_iter().find(|d| d.is_dir() && !unsuitable(d))
}

fn file_backed_usemem_four_times_the_limit_reclaims_instead_of_oom() {
    let (_serial, base) = needs_root();
    let parent = disk_backed_parent(true).expect("main runs this test only where there is one");
    let dir = tempfile::tempdir_in(parent).unwrap();
    let (csv, json) = (dir.path().join("C.csv"), dir.path().join("J.json"));
    // limited is 16M: 64M per worker is 4x the limit, as seed 003 ran usemem -m 400 on 256 MB.
    let (_, output) = run_clean(
        &base,
        &[
            "--base",
            BASE,
            "--cgroup",
            "limited",
            "--no-baseline",
            "--workload",
            "usemem-file",
            "--size",
            "64M",
            "--duration",
            "2",
            "--tmpdir",
            dir.path().to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("OOM") && !stderr.contains("FAILED"), "{stderr}");
    // Pages left the memcg while the workers only read: reclaimed (v2 pgsteal; v1 has no
    // pgsteal, and pgpgout counts pages uncharged, which for page cache kept mapped and read
    // is reclaim), and nothing was OOM-killed.
    // Over the run's slices together: the workers live through the run, so one slice may
    // read what an earlier one left cached (a slow guest's slice reads less than 64M).
    let document: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let mut reclaimed = 0;
    for m in document["measurements"].as_array().unwrap() {
        let memcg = &m["result"]["memcg"];
        reclaimed += memcg["pgsteal"].as_u64().or(memcg["pgpgout"].as_u64()).unwrap_or(0);
        assert_eq!(memcg["events_oom_kill"].as_u64().unwrap_or(0), 0, "{memcg}");
    }
    assert!(reclaimed > 4096, "under 16M of pages reclaimed from 64M read: {reclaimed} pages");
    let rows = read_csv(&csv);
    assert_eq!(rows.len(), 2, "one row per slice, none failed: {rows:?}");
    for row in &rows {
        assert_eq!(row["unit"], "pages");
        // More pages read than the limit holds: every slice went past 16M (4096 pages).
        assert!(number(row, "faults") > 4096.0, "{row:?}");
        let count = |column: &str| -> f64 { row[column].parse().unwrap_or(0.0) };
        let reclaim = count("pgscan") + count("pgsteal") + count("events_max");
        assert!(reclaim > 0.0, "no reclaim counted under the limit: {row:?}");
        assert!(count("kernel_faults") > 0.0, "{row:?}");
    }
    let left: Vec<_> = files_in(dir.path()).into_iter().filter(|name| name != "C.csv" && name != "J.json").collect();
    assert!(left.is_empty(), "the workers' files are gone: {left:?}");
    // On tmpfs the same workload would need swap: the run says so.
    let shm = tempfile::tempdir_in("/dev/shm").unwrap();
    let (_, output) = run_clean(
        &base,
        &[
            "--base",
            BASE,
            "--cgroup",
            "child",
            "--no-baseline",
            "--workload",
            "usemem-file",
            "--size",
            "4M",
            "--duration",
            "0.3",
            "--tmpdir",
            shm.path().to_str().unwrap(),
        ],
    );
    let stderr = text(&output.stderr);
    assert!(output.status.success() && stderr.contains("is tmpfs, whose pages are swap-backed"), "{stderr}");
}

fn env_prints_the_machine_facts_that_change_fault_rates() {
    let output = std::process::Command::new(binary()).args(["env", "--base", BASE]).output().unwrap();
    let stdout = text(&output.stdout);
    for label in ["topology:", "numa balancing:", "mitigations:", "swap:", "lru gen:", "overcommit memory:"] {
        assert!(stdout.contains(label), "{label} in {stdout}");
    }
}
