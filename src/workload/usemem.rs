//! `usemem`: allocate and touch --size bytes each iteration, then free them, like
//! `usemem -m SIZE` in the 2004 rmap trylock measurements. Under a limited profile whose limit
//! is below --size this drives memcg reclaim (and, without swap, the OOM killer).

use super::{Counter, Workload, WorkloadSettings, anon::Anon};

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
