//! Facts about the machine and the run, captured once and carried into every output.

use std::path::Path;
use std::time::SystemTime;

use crate::cgroup::{Detected, Hierarchy, Layout, Version};
use crate::text::{format_cpu_list, iso8601_utc, read_line_or};

#[derive(Debug, Clone, serde::Serialize)]
pub struct Environment {
    pub run_id: String,
    /// UTC, ISO 8601.
    pub started_at: String,
    pub host: String,
    pub kernel: String,
    pub layout: Layout,
    pub cgroup_version: Version,
    pub cgroup_mount: String,
    /// The base, hierarchy-relative.
    pub base_cgroup: String,
    /// Levels between the hierarchy's root and the baseline's cgroup (0: the true root); a
    /// row's memcg depth is this plus its own depth.
    pub base_depth: usize,
    pub cpus: String,
    pub thp_enabled: String,
    pub thp_defrag: String,
    /// v1: the base's memory.use_hierarchy; v2: the cgroup2 mount options.
    pub memory_options: String,
    pub kernel_cmdline: String,
    pub cpu_model: String,
    pub online_cpus: String,
    pub allowed_cpus: String,
    /// cpufreq governor of the first measured CPU ("none" without cpufreq).
    pub governor: String,
    /// /proc/sys/kernel/randomize_va_space.
    pub aslr: String,
    /// Topology, NUMA balancing, mitigations, swap, MGLRU, overcommit, watchdog, governors,
    /// boost and memcg build options (measure/machine.rs).
    pub machine: crate::measure::machine::Facts,
    pub command_line: String,
    pub faultscale_version: String,
    /// Prefix of every cgroup this run creates: `faultscale-<pid>-<nonce>`.
    pub cgroup_run_name: String,
}

/// 32 random bits from the kernel, so concurrent runs of the same pid namespace never clash.
fn nonce() -> u32 {
    let mut bytes = [0u8; 4];
    // SAFETY: valid buffer of the given length.
    let filled = unsafe { libc::getrandom(bytes.as_mut_ptr() as *mut libc::c_void, bytes.len(), 0) };
    if filled == 4 { u32::from_ne_bytes(bytes) } else { crate::measure::clock::monotonic_ns() as u32 }
}

/// A run's identity: the harness's pid and 32 random bits, chosen before anything is made.
#[derive(Clone, Copy)]
pub struct RunId {
    pid: u32,
    nonce: u32,
}

impl RunId {
    pub fn new() -> Self {
        RunId { pid: std::process::id(), nonce: nonce() }
    }

    /// Prefix of every cgroup (and file directory) the run creates.
    pub fn cgroup_run_name(&self) -> String {
        format!("faultscale-{}-{:08x}", self.pid, self.nonce)
    }
}

impl Environment {
    /// The facts of a run whose baseline is `base_depth` levels below the hierarchy's root, in
    /// `base`: the cgroup the run really builds in (for `--base new`, the one made for it).
    pub fn capture(
        detected: &Detected,
        hierarchy: &Hierarchy,
        base: &Path,
        base_depth: usize,
        run_id: &RunId,
        cpus: &[usize],
        allowed_cpus: &[usize],
    ) -> Self {
        let RunId { pid, nonce } = *run_id;
        let memory_options = match hierarchy.version {
            Version::V1 => match crate::cgroup::fs::read_use_hierarchy(base) {
                Some(on) => format!("use_hierarchy={}", u8::from(on)),
                None => "use_hierarchy=unknown".into(),
            },
            Version::V2 => hierarchy.mount_options.clone(),
        };
        let first_cpu = cpus.first().copied().unwrap_or(0);
        let governor = crate::measure::machine::governor(first_cpu);
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        Environment {
            run_id: format!("{pid}-{nonce:08x}"),
            started_at: iso8601_utc(SystemTime::now()),
            host: read_line_or("/proc/sys/kernel/hostname", "unknown"),
            kernel: crate::measure::machine::kernel_release().unwrap_or_else(|| "unknown".into()),
            layout: detected.layout,
            cgroup_version: hierarchy.version,
            cgroup_mount: hierarchy.mount_point.display().to_string(),
            base_cgroup: hierarchy.cgroup_path(base),
            base_depth,
            cpus: format_cpu_list(cpus),
            thp_enabled: crate::measure::machine::thp_setting("enabled").unwrap_or_else(|| "unknown".into()),
            thp_defrag: crate::measure::machine::thp_setting("defrag").unwrap_or_else(|| "unknown".into()),
            memory_options,
            kernel_cmdline: read_line_or("/proc/cmdline", "unknown"),
            cpu_model,
            online_cpus: crate::measure::machine::online_cpus(),
            allowed_cpus: format_cpu_list(allowed_cpus),
            governor,
            aslr: read_line_or("/proc/sys/kernel/randomize_va_space", "unknown"),
            machine: crate::measure::machine::facts(cpus),
            command_line: std::env::args().collect::<Vec<_>>().join(" "),
            faultscale_version: env!("CARGO_PKG_VERSION").into(),
            cgroup_run_name: run_id.cgroup_run_name(),
        }
    }
}

impl Environment {
    /// Fixed values for exporter tests.
    #[cfg(test)]
    pub fn for_tests() -> Self {
        let text = |s: &str| s.to_string();
        Environment {
            run_id: text("4242-0000abcd"),
            started_at: text("2026-11-30T09:00:00Z"),
            host: text("testhost"),
            kernel: text("6.1.0"),
            layout: Layout::Hybrid,
            cgroup_version: Version::V1,
            cgroup_mount: text("/sys/fs/cgroup/memory"),
            base_cgroup: text("/base"),
            base_depth: 1,
            cpus: text("0-1"),
            thp_enabled: text("madvise"),
            thp_defrag: text("madvise"),
            memory_options: text("use_hierarchy=1"),
            kernel_cmdline: text("quiet"),
            cpu_model: text("Test CPU, 2 cores"),
            online_cpus: text("0-1"),
            allowed_cpus: text("0-1"),
            governor: text("none"),
            aslr: text("2"),
            machine: Default::default(),
            command_line: text("faultscale"),
            faultscale_version: text("0.1.0"),
            cgroup_run_name: text("faultscale-4242-0000abcd"),
        }
    }
}
