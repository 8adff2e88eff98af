//! --profile: call chains named and counted. Kernel frames are named from /proc/kallsyms and
//! user frames from the worker's own mappings (blazesym); each sample's own function (its
//! innermost frame) gets the sample, and the memcg family's functions are summed into one
//! figure. Folded stacks (`outer;...;inner count`) feed the flame graphs.

use std::collections::BTreeMap;

use blazesym::Pid;
use blazesym::symbolize::source::{Kernel, Process, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};

/// The kernel functions counted as memcg cost: charging, uncharging, statistics and the
/// per-cpu stock, as the linux-mm threads name them. Versioned: a change to the list changes
/// what the memcg figure means, so the version is reported beside it.
pub const MEMCG_FAMILY_VERSION: u32 = 1;
const MEMCG_PREFIXES: &[&str] = &[
    "mem_cgroup_",
    "__mem_cgroup_",
    "memcg",
    "__memcg",
    "try_charge",
    "charge_memcg",
    "page_counter_",
    "obj_cgroup_",
    "__obj_cgroup_",
    "cgroup_rstat_",
    "css_rstat_",
    "refill_stock",
    "consume_stock",
    "drain_stock",
    "uncharge",
    "__count_memcg_events",
    "__mod_memcg",
    "mod_memcg",
    "count_memcg",
    "lruvec_stat",
    "__mod_lruvec",
    "mod_lruvec",
];
const MEMCG_INFIXES: &[&str] = &["_memcg_", "_mem_cgroup_"];

/// Whether a kernel function belongs to the memcg family (MEMCG_FAMILY_VERSION).
pub fn is_memcg(function: &str) -> bool {
    MEMCG_PREFIXES.iter().any(|p| function.starts_with(p)) || MEMCG_INFIXES.iter().any(|i| function.contains(i))
}

/// perf's markers inside a call chain (PERF_CONTEXT_KERNEL, _USER, ...): not addresses.
const CONTEXT_MARKERS_FROM: u64 = (-4095i64) as u64;

/// Kernel addresses live in the top half of the address space on every 64-bit Linux.
fn is_kernel(address: u64) -> bool {
    address >= 0xffff_8000_0000_0000
}

/// One measurement's samples, named and counted.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ProfileCounts {
    /// What was sampled: `cycles`, or `cpu-clock` where the machine has no hardware counters.
    pub event: &'static str,
    pub samples: u64,
    /// Samples whose own function is in the memcg family.
    pub memcg_samples: u64,
    /// Samples per function the sample was in (its innermost frame).
    pub self_samples: BTreeMap<String, u64>,
    /// Folded stacks, outermost frame first, for flame graphs.
    #[serde(skip)]
    pub folded: BTreeMap<String, u64>,
    /// Samples the kernel dropped (a full buffer).
    pub lost: u64,
}

impl ProfileCounts {
    pub fn add(&mut self, other: &ProfileCounts) {
        if self.event.is_empty() {
            self.event = other.event;
        }
        self.samples += other.samples;
        self.memcg_samples += other.memcg_samples;
        self.lost += other.lost;
        for (name, count) in &other.self_samples {
            *self.self_samples.entry(name.clone()).or_default() += count;
        }
        for (stack, count) in &other.folded {
            *self.folded.entry(stack.clone()).or_default() += count;
        }
    }

    /// The share of samples in the memcg family.
    pub fn memcg_share(&self) -> Option<f64> {
        (self.samples > 0).then(|| self.memcg_samples as f64 / self.samples as f64)
    }
}

thread_local! {
    /// One symbolizer for the whole run: it parses /proc/kallsyms once and keeps it, where a
    /// new one per worker per slice read it again each time (24-41 s of a 2 x 2 s profile in
    /// an emulated guest, where reading kallsyms is slow).
    static SYMBOLIZER: Symbolizer = Symbolizer::new();
}

/// Kernel addresses' function names, None where unknown: --locks's callers, from the run's
/// one symbolizer.
pub fn kernel_names(addresses: &[u64]) -> Vec<Option<String>> {
    SYMBOLIZER.with(|symbolizer| {
        let named =
            symbolizer.symbolize(&Source::Kernel(Kernel::default()), Input::AbsAddr(addresses)).unwrap_or_default();
        (0..addresses.len())
            .map(|index| match named.get(index) {
                Some(Symbolized::Sym(sym)) => Some(sym.name.to_string()),
                _ => None,
            })
            .collect()
    })
}

/// Names the chains of one worker process (`pid`, still alive: stopped) and counts them.
pub fn count(stacks: &[Vec<u64>], pid: u32, lost: u64) -> ProfileCounts {
    SYMBOLIZER.with(|symbolizer| count_with(symbolizer, stacks, pid, lost))
}

fn count_with(symbolizer: &Symbolizer, stacks: &[Vec<u64>], pid: u32, lost: u64) -> ProfileCounts {
    let mut names: BTreeMap<u64, String> = BTreeMap::new();
    let mut kernel: Vec<u64> = Vec::new();
    let mut user: Vec<u64> = Vec::new();
    for &address in stacks.iter().flatten() {
        if address >= CONTEXT_MARKERS_FROM || names.contains_key(&address) {
            continue;
        }
        names.insert(address, String::new());
        if is_kernel(address) { kernel.push(address) } else { user.push(address) }
    }
    let sources = [
        (Source::Kernel(Kernel::default()), kernel, "[kernel]"),
        (Source::Process(Process::new(Pid::from(pid))), user, "[user]"),
    ];
    for (source, addresses, unknown) in sources {
        let named = symbolizer.symbolize(&source, Input::AbsAddr(&addresses)).unwrap_or_default();
        for (index, address) in addresses.iter().enumerate() {
            let name = match named.get(index) {
                Some(Symbolized::Sym(sym)) => sym.name.to_string(),
                _ => unknown.to_string(),
            };
            names.insert(*address, name);
        }
    }
    let mut counts = ProfileCounts { lost, ..ProfileCounts::default() };
    for stack in stacks {
        // Innermost first, as perf delivers them; markers dropped.
        let frames: Vec<&str> = stack
            .iter()
            .filter(|a| **a < CONTEXT_MARKERS_FROM)
            .filter_map(|a| names.get(a).map(String::as_str))
            .collect();
        let Some(&own) = frames.first() else { continue };
        counts.samples += 1;
        if is_memcg(own) {
            counts.memcg_samples += 1;
        }
        *counts.self_samples.entry(own.to_string()).or_default() += 1;
        let folded: Vec<&str> = frames.iter().rev().copied().collect();
        *counts.folded.entry(folded.join(";")).or_default() += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memcg_family_is_the_charge_and_statistics_path() {
        for memcg in [
            "try_charge_memcg",
            "__mem_cgroup_charge",
            "charge_memcg",
            "mem_cgroup_commit_charge",
            "__mod_memcg_lruvec_state",
            "__count_memcg_events",
            "cgroup_rstat_updated",
            "page_counter_try_charge",
            "obj_cgroup_charge",
            "refill_stock",
            "consume_stock",
            "__mem_cgroup_uncharge_folios",
            "uncharge_batch",
        ] {
            assert!(is_memcg(memcg), "{memcg}");
        }
        for other in ["clear_page_erms", "handle_mm_fault", "do_anonymous_page", "__alloc_pages", "cgroup_attach_task"]
        {
            assert!(!is_memcg(other), "{other}");
        }
    }

    #[test]
    fn counts_add_up_and_shares_follow() {
        let mut a = ProfileCounts { samples: 10, memcg_samples: 2, ..Default::default() };
        a.self_samples.insert("f".into(), 10);
        let b = ProfileCounts { samples: 30, memcg_samples: 8, ..Default::default() };
        a.add(&b);
        assert_eq!((a.samples, a.memcg_samples), (40, 10));
        assert_eq!(a.memcg_share(), Some(0.25));
        assert_eq!(ProfileCounts::default().memcg_share(), None);
    }

    #[test]
    fn chains_of_this_process_are_named() {
        // This very function's address, as a one-frame user chain of this process.
        let here = chains_of_this_process_are_named as *const () as u64;
        let counts = count(&[vec![here], vec![(-512i64) as u64, here]], std::process::id(), 0);
        assert_eq!(counts.samples, 2);
        let (name, samples) = counts.self_samples.iter().next().unwrap();
        assert!(name.contains("chains_of_this_process_are_named") || name == "[user]", "{name}");
        assert_eq!(*samples, 2);
    }
}
