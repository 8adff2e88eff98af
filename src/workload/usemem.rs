//! `usemem`: allocate and touch --size bytes each iteration, then free them, like
//! `usemem -m SIZE` in the 2004 rmap trylock measurements. Under a limited profile whose limit
//! is below --size this drives memcg reclaim (and, without swap, the OOM killer).

use super::{
    Counter, Descriptor, Exactness, PerIteration, Unit, Workload, WorkloadSettings, anon::Anon, descriptor, pages,
};

pub static USEMEM: Descriptor = Descriptor {
    per_iteration: PerIteration::SizePages,
    exact: Exactness::WithoutThp,
    pages_per_iteration: |s| pages(s.size_bytes, s),
    ..descriptor(
        "usemem",
        Unit::Faults,
        "allocate and touch --size bytes per iteration, like usemem -m; drives reclaim under a limit",
        |s| s.size_bytes,
        |s, _| Box::new(Usemem::new(s)),
    )
};

pub struct Usemem(Anon);

impl Usemem {
    pub fn new(settings: &WorkloadSettings) -> Self {
        Usemem(Anon::new(settings, settings.size_bytes))
    }
}

impl Workload for Usemem {
    fn prepare(&mut self) -> Result<(), String> {
        self.0.prepare()
    }

    fn run(&mut self, counter: &Counter) -> Result<(), String> {
        self.0.run(counter)
    }
}
