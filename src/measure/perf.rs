//! Per-worker perf counters: the software ones read as one group, so every value covers the
//! same span, and cycles/instructions opened on their own, so a machine without hardware
//! counters (ENOENT in VMs) still gets the software ones and says "not supported".
//!
//! `include_kernel` matters: perf-event2 defaults to exclude_kernel, which would miss faults
//! the kernel takes on the task's behalf.

use std::io;

use perf_event::events::{Hardware, Software};
use perf_event::{Builder, Counter, Group};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerfReading {
    pub page_faults: u64,
    pub task_clock_ns: u64,
    pub context_switches: u64,
    pub cpu_migrations: u64,
    /// None where the machine has no such hardware counter.
    pub cycles: Option<u64>,
    pub instructions: Option<u64>,
}

impl PerfReading {
    /// `self - earlier`, counter by counter.
    pub fn since(&self, earlier: &PerfReading) -> PerfReading {
        let hardware = |now: Option<u64>, then: Option<u64>| Some(now?.saturating_sub(then.unwrap_or(0)));
        PerfReading {
            page_faults: self.page_faults.saturating_sub(earlier.page_faults),
            task_clock_ns: self.task_clock_ns.saturating_sub(earlier.task_clock_ns),
            context_switches: self.context_switches.saturating_sub(earlier.context_switches),
            cpu_migrations: self.cpu_migrations.saturating_sub(earlier.cpu_migrations),
            cycles: hardware(self.cycles, earlier.cycles),
            instructions: hardware(self.instructions, earlier.instructions),
        }
    }
}

pub struct WorkerPerf {
    group: Group,
    page_faults: Counter,
    task_clock: Counter,
    context_switches: Counter,
    cpu_migrations: Counter,
    cycles: Option<Counter>,
    instructions: Option<Counter>,
}

fn observing<E: perf_event::events::Event>(event: E, pid: libc::pid_t) -> Builder<'static> {
    let mut builder = Builder::new(event);
    builder.observe_pid(pid).any_cpu().include_kernel();
    builder
}

impl WorkerPerf {
    /// Opens the counters on `pid`, disabled until `enable`.
    pub fn open(pid: libc::pid_t) -> io::Result<Self> {
        let mut group = Group::builder().observe_pid(pid).any_cpu().include_kernel().build_group()?;
        let page_faults = group.add(&observing(Software::PAGE_FAULTS, pid))?;
        let task_clock = group.add(&observing(Software::TASK_CLOCK, pid))?;
        let context_switches = group.add(&observing(Software::CONTEXT_SWITCHES, pid))?;
        let cpu_migrations = group.add(&observing(Software::CPU_MIGRATIONS, pid))?;
        let cycles = observing(Hardware::CPU_CYCLES, pid).build().ok();
        let instructions = observing(Hardware::INSTRUCTIONS, pid).build().ok();
        Ok(WorkerPerf { group, page_faults, task_clock, context_switches, cpu_migrations, cycles, instructions })
    }

    pub fn has_hardware_counters(&self) -> bool {
        self.cycles.is_some() && self.instructions.is_some()
    }

    pub fn enable(&mut self) -> io::Result<()> {
        self.group.enable()?;
        for counter in [&mut self.cycles, &mut self.instructions].into_iter().flatten() {
            counter.enable()?;
        }
        Ok(())
    }

    pub fn read(&mut self) -> io::Result<PerfReading> {
        let data = self.group.read()?;
        let value = |counter: &Counter| data.get(counter).map(|entry| entry.value()).unwrap_or(0);
        Ok(PerfReading {
            page_faults: value(&self.page_faults),
            task_clock_ns: value(&self.task_clock),
            context_switches: value(&self.context_switches),
            cpu_migrations: value(&self.cpu_migrations),
            cycles: self.cycles.as_mut().map(Counter::read).transpose()?,
            instructions: self.instructions.as_mut().map(Counter::read).transpose()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_keep_missing_hardware_counters_missing() {
        let before = PerfReading { page_faults: 10, task_clock_ns: 5, cycles: Some(100), ..Default::default() };
        let after = PerfReading { page_faults: 25, task_clock_ns: 9, cycles: Some(160), ..Default::default() };
        let delta = after.since(&before);
        assert_eq!((delta.page_faults, delta.task_clock_ns, delta.cycles, delta.instructions), (15, 4, Some(60), None));
    }
}
