//! --profile: each worker sampled on CPU while a slice is measured (cycles where the machine
//! has hardware counters, else the cpu-clock software event), with kernel and user call
//! chains. Only the raw chains are collected here, at the harness's sample points and at the
//! stop; naming them is stacks.rs's job, after the slice.

use std::io;

use perf_event::events::{Hardware, Software};
use perf_event::{Builder, Sampler};

/// Samples per second per worker: about a thousand
/// samples per worker-second (about 10,000 per placement in a default 10 s run). Its cost is
/// measured by scripts/bench-profile: 0.95 of the plain rate on the 2-CPU development VM.
pub const FREQUENCY_HZ: u64 = 999;

/// Ring buffer per worker: drained every sampling interval, so a second of samples with deep
/// chains fits several times over.
const BUFFER_BYTES: usize = 4 << 20;

/// The event that was sampled, for the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampledEvent {
    Cycles,
    CpuClock,
}

impl SampledEvent {
    pub fn name(self) -> &'static str {
        match self {
            SampledEvent::Cycles => "cycles",
            SampledEvent::CpuClock => "cpu-clock",
        }
    }
}

pub struct WorkerSampler {
    sampler: Sampler,
    pub event: SampledEvent,
    /// Samples the kernel dropped because the buffer was full.
    pub lost: u64,
}

fn builder<E: perf_event::events::Event>(event: E, tid: libc::pid_t) -> Builder<'static> {
    let mut builder = Builder::new(event);
    builder
        .observe_pid(tid)
        .any_cpu()
        .include_kernel()
        .sample_frequency(FREQUENCY_HZ)
        .sample(perf_event::SampleFlag::TID | perf_event::SampleFlag::IP | perf_event::SampleFlag::CALLCHAIN);
    builder
}

impl WorkerSampler {
    /// Opens a sampler on thread `tid`, disabled until `enable`.
    pub fn open(tid: libc::pid_t) -> io::Result<Self> {
        match builder(Hardware::CPU_CYCLES, tid).build() {
            Ok(counter) => {
                Ok(WorkerSampler { sampler: counter.sampled(BUFFER_BYTES)?, event: SampledEvent::Cycles, lost: 0 })
            }
            Err(_) => {
                let counter = builder(Software::CPU_CLOCK, tid).build()?;
                Ok(WorkerSampler { sampler: counter.sampled(BUFFER_BYTES)?, event: SampledEvent::CpuClock, lost: 0 })
            }
        }
    }

    pub fn enable(&mut self) -> io::Result<()> {
        self.sampler.enable()
    }

    pub fn disable(&mut self) -> io::Result<()> {
        self.sampler.disable()
    }

    /// Moves every call chain in the buffer to `stacks`.
    pub fn drain(&mut self, stacks: &mut Vec<Vec<u64>>) {
        while let Some(record) = self.sampler.next_record() {
            match record.parse_record() {
                Ok(perf_event::data::Record::Sample(sample)) => {
                    if let Some(chain) = sample.callchain() {
                        stacks.push(chain.to_vec());
                    } else if let Some(ip) = sample.ip() {
                        stacks.push(vec![ip]);
                    }
                }
                Ok(perf_event::data::Record::Lost(lost)) => self.lost += lost.lost,
                _ => {}
            }
        }
    }
}

/// Whether this process may sample another task at all: checked before anything is created.
pub fn available() -> io::Result<()> {
    builder(Software::CPU_CLOCK, 0).build().map(|_| ())
}
