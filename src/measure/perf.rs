//! Per-worker perf software counters, read as one group so every value covers the same span.
//!
//! `include_kernel` matters: perf-event2 defaults to exclude_kernel, which would miss faults
//! the kernel takes on the task's behalf.

use std::io;

use perf_event::events::Software;
use perf_event::{Builder, Counter, Group};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PerfReading {
    pub page_faults: u64,
    pub task_clock_ns: u64,
    pub context_switches: u64,
    pub cpu_migrations: u64,
}

pub struct WorkerPerf {
    group: Group,
    page_faults: Counter,
    task_clock: Counter,
    context_switches: Counter,
    cpu_migrations: Counter,
}

fn member(event: Software, pid: libc::pid_t) -> Builder<'static> {
    let mut builder = Builder::new(event);
    builder.observe_pid(pid).any_cpu().include_kernel();
    builder
}

impl WorkerPerf {
    /// Opens the counters on `pid`, disabled until `enable`.
    pub fn open(pid: libc::pid_t) -> io::Result<Self> {
        let mut group = Group::builder().observe_pid(pid).any_cpu().include_kernel().build_group()?;
        let page_faults = group.add(&member(Software::PAGE_FAULTS, pid))?;
        let task_clock = group.add(&member(Software::TASK_CLOCK, pid))?;
        let context_switches = group.add(&member(Software::CONTEXT_SWITCHES, pid))?;
        let cpu_migrations = group.add(&member(Software::CPU_MIGRATIONS, pid))?;
        Ok(WorkerPerf { group, page_faults, task_clock, context_switches, cpu_migrations })
    }

    pub fn enable(&mut self) -> io::Result<()> {
        self.group.enable()
    }

    pub fn read(&mut self) -> io::Result<PerfReading> {
        let data = self.group.read()?;
        let value = |counter: &Counter| data.get(counter).map(|entry| entry.value()).unwrap_or(0);
        Ok(PerfReading {
            page_faults: value(&self.page_faults),
            task_clock_ns: value(&self.task_clock),
            context_switches: value(&self.context_switches),
            cpu_migrations: value(&self.cpu_migrations),
        })
    }
}
