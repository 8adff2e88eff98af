//! Facts about the machine that change fault rates, read from sysfs and procfs: the CPUs'
//! topology, NUMA balancing (hinting faults), mitigations, swap and zswap, MGLRU, overcommit,
//! the NMI watchdog, governors and boost, and the kernel's memcg build options.

use std::collections::BTreeMap;

use crate::text::read_line_or;

/// One fact a line: name -> value, as `faultscale env` prints them and the JSON carries them.
pub type Facts = BTreeMap<&'static str, String>;

/// Where the CPUs' sysfs directories are.
pub const SYSFS_CPU: &str = "/sys/devices/system/cpu";

/// One of a CPU's topology files (`physical_package_id`, `core_id`, ...) under `sysfs_cpu`
/// (SYSFS_CPU, or a test's copy), trimmed; None where it cannot be read.
pub fn cpu_topology(sysfs_cpu: &std::path::Path, cpu: usize, file: &str) -> Option<String> {
    std::fs::read_to_string(sysfs_cpu.join(format!("cpu{cpu}/topology/{file}"))).ok().map(|s| s.trim().to_string())
}

/// A CPU's frequency governor, or `none` where it has none.
pub fn governor(cpu: usize) -> String {
    read_line_or(format!("{SYSFS_CPU}/cpu{cpu}/cpufreq/scaling_governor"), "none")
}

/// Where each used CPU sits: `cpuN: package P core C siblings S`.
fn topology(cpus: &[usize]) -> String {
    let read = |cpu: usize, file: &str| cpu_topology(std::path::Path::new(SYSFS_CPU), cpu, file).unwrap_or("?".into());
    cpus.iter()
        .map(|&cpu| {
            format!(
                "cpu{cpu}: package {} core {} siblings {}",
                read(cpu, "physical_package_id"),
                read(cpu, "core_id"),
                read(cpu, "thread_siblings_list")
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The mitigations the kernel reports as active, `name: status`, one clause each.
fn mitigations() -> String {
    let Ok(entries) = std::fs::read_dir("/sys/devices/system/cpu/vulnerabilities") else { return "unknown".into() };
    let mut lines: Vec<String> = entries
        .flatten()
        .map(|e| format!("{}: {}", e.file_name().to_string_lossy(), read_line_or(e.path(), "?")))
        .collect();
    lines.sort();
    lines.join("; ")
}

/// Swap devices (from /proc/swaps) and their total size.
/// A /proc/meminfo line's figure in bytes (`MemTotal`, `MemAvailable`): the one reader of that
/// file.
pub fn meminfo_bytes(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let rest = text.lines().find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))?;
    let kib: u64 = rest.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kib << 10)
}

fn swap() -> String {
    let text = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    let devices: Vec<(String, u64)> = text
        .lines()
        .skip(1)
        .filter_map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            Some((fields.first()?.to_string(), fields.get(2)?.parse().ok()?))
        })
        .collect();
    if devices.is_empty() {
        return "none".into();
    }
    let total_kib: u64 = devices.iter().map(|(_, kib)| kib).sum();
    format!("{} ({} MiB)", devices.iter().map(|(d, _)| d.as_str()).collect::<Vec<_>>().join(", "), total_kib / 1024)
}

/// The running kernel's release (`/proc/sys/kernel/osrelease`, the one reader of it).
/// The CPUs online, as the kernel lists them (`0-3,6`), or `unknown`.
pub fn online_cpus() -> String {
    read_line_or("/sys/devices/system/cpu/online", "unknown")
}

pub fn kernel_release() -> Option<String> {
    let release = read_line_or("/proc/sys/kernel/osrelease", "");
    (!release.is_empty()).then_some(release)
}

/// A THP setting (`enabled`, `defrag`): the option selected in
/// /sys/kernel/mm/transparent_hugepage/NAME (the one reader of those files).
pub fn thp_setting(name: &str) -> Option<String> {
    let text = read_line_or(format!("/sys/kernel/mm/transparent_hugepage/{name}"), "");
    (!text.is_empty()).then(|| crate::text::selected_option(&text))
}

/// CONFIG_MEMCG* from the running kernel's config, where a copy is readable.
fn memcg_config() -> String {
    let release = kernel_release().unwrap_or_default();
    match std::fs::read_to_string(format!("/boot/config-{release}")) {
        Ok(config) => {
            let options: Vec<&str> = config.lines().filter(|l| l.starts_with("CONFIG_MEMCG")).collect();
            if options.is_empty() { "none set".into() } else { options.join(" ") }
        }
        Err(_) => format!("unreadable (no /boot/config-{release})"),
    }
}

/// The hypervisor this kernel runs under, as the CPU says it: `none` where CPUID's hypervisor
/// bit is clear; else the vendor signature of leaf 0x40000000 named (`kvm`, `tcg` for QEMU's
/// emulator, `microsoft` for Hyper-V and Azure, `vmware`, `xen`, `bhyve`, `acrn`, `qnx`) or
/// `unknown (SIGNATURE)`. A Xen PV guest (no bit) is found by /sys/hypervisor/type. Where DMI
/// names the product (a cloud VM, or QEMU's `Standard PC`) it follows in parentheses. A
/// container sees its host's CPU, so this names the machine's virtualization, not the container.
pub fn virtualization() -> String {
    let kind = match hypervisor_signature() {
        None => match read_line_or("/sys/hypervisor/type", "") {
            kind if kind.is_empty() => return "none".into(),
            kind => kind,
        },
        Some(signature) => match signature.trim_end_matches('\0') {
            "KVMKVMKVM" | "Linux KVM Hv" => "kvm".into(),
            "TCGTCGTCGTCG" => "tcg".into(),
            "Microsoft Hv" => "microsoft".into(),
            "VMwareVMware" => "vmware".into(),
            "XenVMMXenVMM" => "xen".into(),
            "bhyve bhyve" => "bhyve".into(),
            "ACRNACRNACRN" => "acrn".into(),
            "QNXQVMBSQG" => "qnx".into(),
            other => format!("unknown ({})", other.escape_debug()),
        },
    };
    match read_line_or("/sys/class/dmi/id/product_name", "") {
        product if product.is_empty() => kind,
        product => format!("{kind} ({product})"),
    }
}

/// CPUID leaf 0x40000000's vendor signature where leaf 1 sets the hypervisor bit (ECX bit 31).
#[cfg(target_arch = "x86_64")]
fn hypervisor_signature() -> Option<String> {
    // CPUID exists on every x86_64 CPU and has no side effects.
    let features = std::arch::x86_64::__cpuid(1);
    if features.ecx & (1 << 31) == 0 {
        return None;
    }
    // Leaf 0x40000000 is reserved for hypervisors once the bit is set.
    let leaf = std::arch::x86_64::__cpuid(0x4000_0000);
    let bytes: Vec<u8> = [leaf.ebx, leaf.ecx, leaf.edx].iter().flat_map(|r| r.to_le_bytes()).collect();
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(not(target_arch = "x86_64"))]
fn hypervisor_signature() -> Option<String> {
    None
}

/// Every fact, for the CPUs a run uses.
pub fn facts(cpus: &[usize]) -> Facts {
    let governors: Vec<String> = cpus.iter().map(|cpu| format!("cpu{cpu}={}", governor(*cpu))).collect();
    Facts::from([
        ("topology", topology(cpus)),
        ("smt_active", read_line_or("/sys/devices/system/cpu/smt/active", "unknown")),
        ("numa_nodes", read_line_or("/sys/devices/system/node/online", "unknown")),
        ("numa_balancing", read_line_or("/proc/sys/kernel/numa_balancing", "unavailable")),
        ("mitigations", mitigations()),
        ("swap", swap()),
        ("zswap", read_line_or("/sys/module/zswap/parameters/enabled", "unavailable")),
        ("lru_gen", read_line_or("/sys/kernel/mm/lru_gen/enabled", "unavailable")),
        ("overcommit_memory", read_line_or("/proc/sys/vm/overcommit_memory", "unknown")),
        ("nmi_watchdog", read_line_or("/proc/sys/kernel/nmi_watchdog", "unavailable")),
        ("governors", governors.join(" ")),
        ("boost", read_line_or("/sys/devices/system/cpu/cpufreq/boost", "unavailable")),
        ("memcg_config", memcg_config()),
        ("virtualization", virtualization()),
    ])
}

/// Why a file could not be made in `dir`, saying which space ran out: ENOSPC means no blocks
/// or no inodes, and `df` shows only the blocks.
pub fn creation_error(dir: &std::path::Path, error: &std::io::Error) -> String {
    if error.raw_os_error() == Some(libc::ENOSPC)
        && let Ok(stat) = nix::sys::statvfs::statvfs(dir)
        && stat.files() > 0
        && stat.files_available() == 0
    {
        return format!("{error}: the filesystem has no free inodes (df -i {})", dir.display());
    }
    error.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fact_is_there_and_says_something() {
        let facts = facts(&[0]);
        for name in ["topology", "numa_balancing", "mitigations", "swap", "lru_gen", "overcommit_memory"] {
            assert!(!facts[name].is_empty(), "{name}");
        }
        assert!(facts["topology"].starts_with("cpu0: package "), "{}", facts["topology"]);
        assert!(facts["governors"].starts_with("cpu0="));
    }
}
