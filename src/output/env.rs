//! `faultscale env`: what faultscale sees, the first thing to run when something fails.

use anyhow::Result;

use crate::cgroup::{self, Version, VersionChoice};
use crate::error;
use crate::run::cpus;
use crate::text::{format_cpu_list, read_line_or};

fn line(label: &str, value: impl std::fmt::Display) {
    out!("{:<22}{value}", format!("{label}:"));
}

/// A mount's own read-only flag, before its superblock's options (`rw,memory` on a bind mount
/// made read-only is the superblock's word, not the mount's).
fn mounted(hierarchy: &cgroup::Hierarchy) -> &'static str {
    if cgroup::base::read_only(&hierarchy.mount_point) { "mounted read-only; superblock " } else { "" }
}

/// The base as a run uses it: `--base new` is a cgroup the run makes in the one found.
fn base_line(hierarchy: &cgroup::Hierarchy, path: &std::path::Path, base: &str) -> String {
    let found = format!("{} ({})", hierarchy.cgroup_path(path), path.display());
    if base == "new" { format!("faultscale-<pid>-<nonce>-new, a cgroup the run makes in {found}") } else { found }
}

/// The node list (`0`, `0-1`) as a count with the list: `0` alone read as no node at all.
fn node_count(list: &str) -> String {
    match crate::text::parse_cpu_list(list) {
        Ok(nodes) if nodes.len() == 1 => format!("1 (node {list})"),
        Ok(nodes) => format!("{} (nodes {list})", nodes.len()),
        Err(_) => list.to_string(),
    }
}

/// Prints everything; returns whether the base is usable.
pub fn print(version: VersionChoice, base: &str) -> Result<bool> {
    let detected = cgroup::detect()?;
    let resolved = detected.memory_hierarchy(version).and_then(|h| {
        let spec = cgroup::BaseSpec::parse(base).map_err(error::usage)?;
        let path = cgroup::base::resolve_base_in_env(&h, &spec)?;
        Ok((h, path))
    });
    // A --base that names no usable cgroup is the user's input: refused in one line (exit 2),
    // as a run refuses it. A machine without a memory controller is listed as it is.
    let resolved = match resolved {
        Err(e) if matches!(error::of(&e), Some(error::Error::Usage(_))) => return Err(e),
        other => other,
    };
    line("layout", detected.layout);
    match &detected.v1_memory {
        Some(h) => line(
            "v1 memory mount",
            format!("{} ({}{}; this process in {})", h.mount_point.display(), mounted(h), h.mount_options, h.own_path),
        ),
        None => line("v1 memory mount", "none"),
    }
    match &detected.v2 {
        Some(h) => line(
            "cgroup2 mount",
            format!(
                "{} ({}{}; this process in {}), controllers: {}",
                h.mount_point.display(),
                mounted(h),
                h.mount_options,
                h.own_path,
                if detected.v2_controllers.is_empty() { "none".into() } else { detected.v2_controllers.join(" ") }
            ),
        ),
        None => line("cgroup2 mount", "none"),
    }
    let usable = match &resolved {
        Ok((h, path)) => {
            line("memory used from", format!("cgroup {} at {}", h.version, h.mount_point.display()));
            line(&format!("base ({base})"), base_line(h, path, base));
            let controllers = match h.version {
                Version::V2 => cgroup::fs::controllers(path).unwrap_or_default().join(" "),
                Version::V1 => "memory (v1 hierarchy)".into(),
            };
            line("controllers at base", if controllers.is_empty() { "none".into() } else { controllers });
            let problems = cgroup::base::problems(h, path, nix::unistd::geteuid().is_root());
            if problems.is_empty() {
                line("base usable", "yes");
            }
            for problem in &problems {
                line("base note", problem);
            }
            line("placements here", cgroup::base::what_works(h, path, &problems));
            !problems.iter().any(|p| p.blocks_every_run())
        }
        Err(e) => {
            line("memory used from", format!("unusable: {e:#}"));
            false
        }
    };
    line("allowed CPUs", format_cpu_list(&cpus::allowed()?));
    line("online CPUs", crate::measure::machine::online_cpus());
    line("THP enabled", crate::measure::machine::thp_setting("enabled").unwrap_or_else(|| "unavailable".into()));
    line("THP defrag", crate::measure::machine::thp_setting("defrag").unwrap_or_else(|| "unavailable".into()));
    line("kernel", crate::measure::machine::kernel_release().unwrap_or_else(|| "unknown".into()));
    for (name, value) in crate::measure::machine::facts(&cpus::allowed()?) {
        let value = if name == "numa_nodes" { node_count(&value) } else { value };
        line(&name.replace('_', " "), value);
    }
    line("perf_event_paranoid", read_line_or("/proc/sys/kernel/perf_event_paranoid", "no perf events"));
    Ok(usable)
}
