//! In which order workers take the CPUs: one per physical core first, then the cores' SMT
//! siblings (will-it-scale's order), so 4 tasks on a 4-core SMT machine get 4 cores, not 2
//! cores' 4 threads. Read from sysfs (a root given, so tests can write their own topologies).

use std::path::Path;

/// The CPU order a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CpuOrder {
    /// One CPU per physical core first, then their SMT siblings
    CoresFirst,
    /// The CPUs in numeric order
    Numeric,
}

/// `cpus` (the allowed or asked set, any order) in the order workers should take them, with
/// the topology under `sysfs_cpu` (normally /sys/devices/system/cpu). A CPU whose topology
/// cannot be read counts as a core of its own.
pub fn order(cpus: &[usize], order: CpuOrder, sysfs_cpu: &Path) -> Vec<usize> {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    if order == CpuOrder::Numeric {
        return sorted;
    }
    let core_of = |cpu: usize| -> Option<(String, String)> {
        let read = |file: &str| crate::measure::machine::cpu_topology(sysfs_cpu, cpu, file);
        Some((read("physical_package_id")?, read("core_id")?))
    };
    // Round r takes the r-th thread of every core, cores in the order of their first CPU.
    let mut seen: Vec<(Option<(String, String)>, usize)> = Vec::new();
    let mut ranked: Vec<(usize, usize, usize)> = Vec::new(); // (round, core rank, cpu)
    for &cpu in &sorted {
        let core = core_of(cpu);
        let (rank, round) = match core.as_ref().and_then(|c| seen.iter().position(|(s, _)| s.as_ref() == Some(c))) {
            Some(rank) => {
                seen[rank].1 += 1;
                (rank, seen[rank].1)
            }
            None => {
                seen.push((core, 0));
                (seen.len() - 1, 0)
            }
        };
        ranked.push((round, rank, cpu));
    }
    ranked.sort_unstable();
    ranked.into_iter().map(|(_, _, cpu)| cpu).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sysfs cpu directory with `cpus` given as (cpu, package, core).
    fn topology(cpus: &[(usize, u32, u32)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for &(cpu, package, core) in cpus {
            let topology = dir.path().join(format!("cpu{cpu}/topology"));
            std::fs::create_dir_all(&topology).unwrap();
            std::fs::write(topology.join("physical_package_id"), format!("{package}\n")).unwrap();
            std::fs::write(topology.join("core_id"), format!("{core}\n")).unwrap();
        }
        dir
    }

    #[test]
    fn two_sockets_with_smt_fill_every_core_first() {
        // 2 sockets x 2 cores x 2 threads, siblings numbered as Intel does (cpu n and n+4).
        let sysfs = topology(&[(0, 0, 0), (1, 0, 1), (2, 1, 0), (3, 1, 1), (4, 0, 0), (5, 0, 1), (6, 1, 0), (7, 1, 1)]);
        let all: Vec<usize> = (0..8).collect();
        assert_eq!(order(&all, CpuOrder::CoresFirst, sysfs.path()), [0, 1, 2, 3, 4, 5, 6, 7]);
        // Siblings adjacent (cpu 2n and 2n+1), as AMD numbers them: cores first all the same.
        let adjacent =
            topology(&[(0, 0, 0), (1, 0, 0), (2, 0, 1), (3, 0, 1), (4, 1, 0), (5, 1, 0), (6, 1, 1), (7, 1, 1)]);
        assert_eq!(order(&all, CpuOrder::CoresFirst, adjacent.path()), [0, 2, 4, 6, 1, 3, 5, 7]);
        assert_eq!(order(&all, CpuOrder::Numeric, adjacent.path()), all);
    }

    #[test]
    fn without_smt_offline_cpus_or_a_cpuset_the_order_stays_sane() {
        let no_smt = topology(&[(0, 0, 0), (1, 0, 1), (2, 0, 2), (3, 0, 3)]);
        assert_eq!(order(&[3, 1, 0, 2], CpuOrder::CoresFirst, no_smt.path()), [0, 1, 2, 3]);
        // CPU 2 offline: no topology directory; it counts as a core of its own.
        let offline = topology(&[(0, 0, 0), (1, 0, 0), (3, 0, 1)]);
        assert_eq!(order(&[0, 1, 2, 3], CpuOrder::CoresFirst, offline.path()), [0, 2, 3, 1]);
        // A cpuset that allows only siblings 1 and 5 of cores 1: both are used, core order kept.
        let smt = topology(&[(1, 0, 1), (5, 0, 1), (6, 0, 2)]);
        assert_eq!(order(&[5, 1, 6], CpuOrder::CoresFirst, smt.path()), [1, 6, 5]);
    }
}
