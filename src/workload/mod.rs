//! Workloads: each is one small loop that bumps its own counter once per iteration.
//!
//! The harness (src/run/) owns spawning, pinning, start, sampling and stop; a workload only
//! prepares itself and loops. Adding a workload is one file here plus one line in `create`.

mod anon;

use std::sync::atomic::AtomicU64;

/// Names users pass to `--workload`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    /// mmap a private anonymous chunk, write one byte per page, munmap (the 2009 memcg loop)
    Anon,
}

impl WorkloadKind {
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Anon => "anon",
        }
    }
}

/// What a workload may be configured with.
#[derive(Debug, Clone, Copy)]
pub struct WorkloadSettings {
    pub chunk_bytes: u64,
    pub page_size: u64,
}

pub trait Workload {
    /// Page faults one iteration is built to take; loop-derived fault counts are
    /// iterations x this.
    fn faults_per_iteration(&self) -> u64;

    /// Per-worker setup in the worker process, before it reports ready. System calls are
    /// fine here; none belong in `run` beyond the workload's own.
    fn prepare(&mut self) -> Result<(), String>;

    /// The measured loop. Stores the number of completed iterations into `iterations` after
    /// each one. Returns only when an iteration fails, with the reason.
    fn run(&mut self, iterations: &AtomicU64) -> String;
}

pub fn create(kind: WorkloadKind, settings: WorkloadSettings) -> Box<dyn Workload> {
    match kind {
        WorkloadKind::Anon => Box::new(anon::Anon::new(settings)),
    }
}
