//! Facts about the machine and the run, captured once and carried into every output.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::cgroup::{Detected, Hierarchy, Layout, Version};
use crate::options::{RunOptions, format_cpu_list};

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
    pub command_line: String,
    pub faultscale_version: String,
    /// Prefix of every cgroup this run creates: `faultscale-<pid>-<nonce>`.
    pub cgroup_run_name: String,
}

fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_else(|_| "unknown".into())
}

/// The bracketed choice of a sysfs selector such as `always [madvise] never`.
pub fn selected_option(text: &str) -> String {
    text.split_whitespace()
        .find_map(|word| word.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .unwrap_or(text.trim())
        .to_string()
}

/// 32 random bits from the kernel, so concurrent runs of the same pid namespace never clash.
fn nonce() -> u32 {
    let mut bytes = [0u8; 4];
    // SAFETY: valid buffer of the given length.
    let filled = unsafe { libc::getrandom(bytes.as_mut_ptr() as *mut libc::c_void, bytes.len(), 0) };
    if filled == 4 { u32::from_ne_bytes(bytes) } else { crate::measure::clock::monotonic_ns() as u32 }
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

pub fn iso8601_utc(time: SystemTime) -> String {
    let seconds = time.duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
    let (year, month, day) = civil_from_days(seconds.div_euclid(86_400));
    let of_day = seconds.rem_euclid(86_400);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", of_day / 3600, of_day % 3600 / 60, of_day % 60)
}

impl Environment {
    pub fn capture(
        detected: &Detected,
        hierarchy: &Hierarchy,
        base: &Path,
        options: &RunOptions,
        allowed_cpus: &[usize],
    ) -> Self {
        let pid = std::process::id();
        let nonce = nonce();
        let memory_options = match hierarchy.version {
            Version::V1 => format!(
                "use_hierarchy={}",
                std::fs::read_to_string(base.join("memory.use_hierarchy"))
                    .map(|s| s.trim().to_string())
                    .unwrap_or("unknown".into())
            ),
            Version::V2 => hierarchy.mount_options.clone(),
        };
        let first_cpu = options.cpus.first().copied().unwrap_or(0);
        let governor =
            std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu{first_cpu}/cpufreq/scaling_governor"))
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "none".into());
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
            host: read_trimmed("/proc/sys/kernel/hostname"),
            kernel: read_trimmed("/proc/sys/kernel/osrelease"),
            layout: detected.layout,
            cgroup_version: hierarchy.version,
            cgroup_mount: hierarchy.mount_point.display().to_string(),
            base_cgroup: hierarchy.cgroup_path(base),
            cpus: format_cpu_list(&options.cpus),
            thp_enabled: selected_option(&read_trimmed("/sys/kernel/mm/transparent_hugepage/enabled")),
            thp_defrag: selected_option(&read_trimmed("/sys/kernel/mm/transparent_hugepage/defrag")),
            memory_options,
            kernel_cmdline: read_trimmed("/proc/cmdline"),
            cpu_model,
            online_cpus: read_trimmed("/sys/devices/system/cpu/online"),
            allowed_cpus: format_cpu_list(allowed_cpus),
            governor,
            aslr: read_trimmed("/proc/sys/kernel/randomize_va_space"),
            command_line: std::env::args().collect::<Vec<_>>().join(" "),
            faultscale_version: env!("CARGO_PKG_VERSION").into(),
            cgroup_run_name: format!("faultscale-{pid}-{nonce:08x}"),
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
            command_line: text("faultscale"),
            faultscale_version: text("0.1.0"),
            cgroup_run_name: text("faultscale-4242-0000abcd"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn dates_convert_like_date_1() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(iso8601_utc(UNIX_EPOCH + Duration::from_secs(1_796_030_672)), "2026-11-30T09:24:32Z");
        assert_eq!(iso8601_utc(UNIX_EPOCH + Duration::from_secs(951_782_399)), "2000-02-28T23:59:59Z");
    }

    #[test]
    fn bracketed_selection() {
        assert_eq!(selected_option("always [madvise] never"), "madvise");
        assert_eq!(selected_option("plain"), "plain");
    }
}
