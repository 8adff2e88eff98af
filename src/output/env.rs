//! `faultscale env`: what faultscale sees, the first thing to run when something fails.

use std::path::Path;

use anyhow::Result;

use crate::cgroup::{self, Hierarchy, Version, VersionChoice};
use crate::environment::selected_option;
use crate::options::format_cpu_list;

fn line(label: &str, value: impl std::fmt::Display) {
    println!("{:<22}{value}", format!("{label}:"));
}

fn read_or(path: &str, missing: &str) -> String {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_else(|_| missing.into())
}

/// Why a run under `base` would fail, or what it would do that the user should know.
pub fn base_problems(hierarchy: &Hierarchy, base: &Path, is_root: bool) -> Vec<String> {
    let mut problems = Vec::new();
    if !is_root {
        problems.push("not running as root: creating cgroups and moving processes needs root".into());
    }
    let c_path = std::ffi::CString::new(base.as_os_str().as_encoded_bytes()).unwrap_or_default();
    // SAFETY: a valid C string.
    if unsafe { libc::access(c_path.as_ptr(), libc::W_OK) } != 0 {
        problems.push(format!("{} is not writable here (read-only cgroupfs or no permission)", base.display()));
    }
    if hierarchy.version == Version::V2 {
        let words = |file: &str| cgroup::fs::words(&base.join(file)).unwrap_or_default();
        if !words("cgroup.controllers").iter().any(|c| c == "memory") {
            problems.push(
                "memory is not enabled for this cgroup: its parent's cgroup.subtree_control lacks +memory".into(),
            );
        }
        let is_hierarchy_root = base == hierarchy.mount_point && hierarchy.mount_root == "/";
        let busy = cgroup::fs::has_processes(base).unwrap_or(false);
        if !is_hierarchy_root && busy && !words("cgroup.subtree_control").iter().any(|c| c == "memory") {
            problems.push(
                "it holds processes, so its children cannot get memory (no-internal-processes rule): only --cgroup root works here; move the processes to a leaf for child placements"
                    .into(),
            );
        }
        if !is_hierarchy_root {
            problems.push("not the hierarchy root: the baseline can only run here without child placements (or use --no-baseline)".into());
        }
    } else if read_or(&base.join("memory.use_hierarchy").display().to_string(), "1") == "0" {
        problems.push("memory.use_hierarchy is 0: children are not charged to this cgroup (old v1 semantics)".into());
    }
    problems
}

/// Prints everything; returns whether the base is usable.
pub fn print(version: VersionChoice, base: &str) -> Result<bool> {
    let detected = cgroup::detect()?;
    line("layout", detected.layout);
    match &detected.v1_memory {
        Some(h) => line(
            "v1 memory mount",
            format!("{} ({}; this process in {})", h.mount_point.display(), h.mount_options, h.own_path),
        ),
        None => line("v1 memory mount", "none"),
    }
    match &detected.v2 {
        Some(h) => line(
            "cgroup2 mount",
            format!(
                "{} ({}; this process in {}), controllers: {}",
                h.mount_point.display(),
                h.mount_options,
                h.own_path,
                if detected.v2_controllers.is_empty() { "none".into() } else { detected.v2_controllers.join(" ") }
            ),
        ),
        None => line("cgroup2 mount", "none"),
    }
    let resolved = detected.memory_hierarchy(version).and_then(|h| {
        let path = cgroup::resolve_base(&h, &cgroup::BaseSpec::parse(base)?)?;
        Ok((h, path))
    });
    let usable = match &resolved {
        Ok((h, path)) => {
            line("memory used from", format!("cgroup {} at {}", h.version, h.mount_point.display()));
            line(&format!("base ({base})"), format!("{} ({})", h.cgroup_path(path), path.display()));
            let controllers = match h.version {
                Version::V2 => cgroup::fs::words(&path.join("cgroup.controllers")).unwrap_or_default().join(" "),
                Version::V1 => "memory (v1 hierarchy)".into(),
            };
            line("controllers at base", if controllers.is_empty() { "none".into() } else { controllers });
            let problems = base_problems(h, path, nix::unistd::geteuid().is_root());
            if problems.is_empty() {
                line("base usable", "yes");
            }
            for problem in &problems {
                line("base note", problem);
            }
            !problems.iter().any(|p| {
                p.starts_with("not running as root")
                    || p.contains("not writable")
                    || p.starts_with("memory is not enabled")
            })
        }
        Err(e) => {
            line("memory used from", format!("unusable: {e:#}"));
            false
        }
    };
    let allowed = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0))?;
    let cpus: Vec<usize> = (0..nix::sched::CpuSet::count()).filter(|&c| allowed.is_set(c).unwrap_or(false)).collect();
    line("allowed CPUs", format_cpu_list(&cpus));
    line("online CPUs", read_or("/sys/devices/system/cpu/online", "unknown"));
    line("THP enabled", selected_option(&read_or("/sys/kernel/mm/transparent_hugepage/enabled", "unavailable")));
    line("THP defrag", selected_option(&read_or("/sys/kernel/mm/transparent_hugepage/defrag", "unavailable")));
    line("kernel", read_or("/proc/sys/kernel/osrelease", "unknown"));
    line("perf_event_paranoid", read_or("/proc/sys/kernel/perf_event_paranoid", "no perf events"));
    Ok(usable)
}
