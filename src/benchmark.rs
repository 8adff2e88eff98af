//! A run: build the cgroups, measure every placement in every repetition (interleaved), and
//! collect what the exporters print. Cleanup is owned by `Tree` and the run's worker guard, so
//! it happens on every exit path out of here.

use anyhow::Result;

use crate::cgroup::{self, Leaf, Tree};
use crate::environment::Environment;
use crate::options::{Placement, RunOptions};
use crate::run::{self, Interrupted, PlacementRun, RunSpec, WorkerDied};
use crate::workload::WorkloadSettings;

/// One placement measured once.
#[derive(Debug, Clone)]
pub struct Measurement {
    pub placement: Placement,
    pub leaf: Leaf,
    pub repetition: u32,
    /// Position of this measurement in the run (0-based), so the interleaving can be checked.
    pub sequence: usize,
    pub run: PlacementRun,
}

impl Measurement {
    pub fn faults_per_sec(&self) -> f64 {
        self.run.loop_faults() as f64 / self.run.elapsed_s()
    }
}

#[derive(Debug, Clone)]
pub struct Failure {
    pub placement: Placement,
    pub repetition: u32,
    pub reason: String,
}

pub struct Report {
    pub env: Environment,
    pub measurements: Vec<Measurement>,
    pub failures: Vec<Failure>,
    pub warnings: Vec<String>,
    /// The stop signal that ended the run early, if one did.
    pub interrupted: Option<i32>,
}

impl Report {
    /// This placement's rate divided by the baseline's rate in the same repetition.
    pub fn ratio_vs_root(&self, measurement: &Measurement) -> Option<f64> {
        let root = self
            .measurements
            .iter()
            .find(|m| m.placement.is_root() && m.repetition == measurement.repetition)?;
        Some(measurement.faults_per_sec() / root.faults_per_sec())
    }

    pub fn of(&self, placement: &Placement) -> impl Iterator<Item = &Measurement> {
        self.measurements.iter().filter(move |m| &m.placement == placement)
    }
}

/// The order placements run in during repetition `repetition` (1-based): forward, then
/// backward (ABBA), so drift over the run weighs on every placement alike.
pub fn order(placements: usize, repetition: u32) -> Vec<usize> {
    let forward: Vec<usize> = (0..placements).collect();
    if repetition % 2 == 1 { forward } else { forward.into_iter().rev().collect() }
}

pub fn run(options: &RunOptions) -> Result<Report> {
    let detected = cgroup::detect()?;
    let hierarchy = detected.memory_hierarchy(options.version)?;
    let base = cgroup::resolve_base(&hierarchy, &options.base)?;
    let env = Environment::capture(&detected, &hierarchy, &base, options);
    let mut tree = Tree::new(hierarchy.clone(), base, env.cgroup_run_name.clone());
    let leaves = tree.build_all(&options.placements)?;
    let mut warnings = tree.take_notes();

    let spec = RunSpec {
        cpus: options.cpus.clone(),
        workload: options.workload,
        settings: WorkloadSettings { chunk_bytes: options.chunk_bytes, page_size: options.page_size },
        duration: options.duration,
        interval: options.interval,
        kernel_count: options.kernel_count,
    };
    let mut measurements = Vec::new();
    let mut failures = Vec::new();
    let mut interrupted = None;
    let mut sequence = 0;
    'repetitions: for repetition in 1..=options.repeat {
        for index in order(options.placements.len(), repetition) {
            let placement = &options.placements[index];
            let mut warn = |w: String| {
                if !warnings.contains(&w) {
                    warnings.push(w);
                }
            };
            match run::measure(&spec, &leaves[index], &hierarchy, &mut warn) {
                Ok(placement_run) => measurements.push(Measurement {
                    placement: placement.clone(),
                    leaf: leaves[index].clone(),
                    repetition,
                    sequence,
                    run: placement_run,
                }),
                Err(e) => {
                    if let Some(Interrupted(signal)) = e.downcast_ref::<Interrupted>() {
                        interrupted = Some(*signal);
                        break 'repetitions;
                    }
                    match e.downcast::<WorkerDied>() {
                        Ok(died) => failures.push(Failure {
                            placement: placement.clone(),
                            repetition,
                            reason: died.0,
                        }),
                        Err(e) => return Err(e.context(format!("measuring {}", placement.name))),
                    }
                }
            }
            sequence += 1;
        }
    }
    // A stop signal ends the run with its completed repetitions only.
    if interrupted.is_some() {
        let done = measurements_keys(&measurements);
        measurements.retain(|m| measurements_complete(m.repetition, &options.placements, &done));
    }
    tree.remove()?;
    for m in &measurements {
        let loop_faults = m.run.loop_faults();
        let kernel_faults = m.run.kernel_faults();
        if kernel_faults > 0 && loop_faults.abs_diff(kernel_faults) as f64 > 0.01 * kernel_faults as f64 {
            warnings.push(format!(
                "{} repetition {}: loop counted {loop_faults} faults, the kernel {kernel_faults} ({:+.2}%): the loop is not the only source of faults, or faults are missed",
                m.placement.name,
                m.repetition,
                100.0 * (loop_faults as f64 - kernel_faults as f64) / kernel_faults as f64
            ));
        }
    }
    Ok(Report { env, measurements, failures, warnings, interrupted })
}

fn measurements_keys(measurements: &[Measurement]) -> Vec<(u32, String)> {
    measurements.iter().map(|m| (m.repetition, m.placement.name.clone())).collect()
}

/// Whether every placement was measured in `repetition`.
fn measurements_complete(repetition: u32, placements: &[Placement], done: &[(u32, String)]) -> bool {
    placements.iter().all(|p| done.iter().any(|(r, name)| *r == repetition && *name == p.name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repetitions_alternate_direction() {
        assert_eq!(order(3, 1), vec![0, 1, 2]);
        assert_eq!(order(3, 2), vec![2, 1, 0]);
        assert_eq!(order(3, 3), vec![0, 1, 2]);
        assert_eq!(order(1, 2), vec![0]);
    }

    #[test]
    fn a_repetition_is_complete_only_with_every_placement() {
        let placements = vec![Placement::root(), Placement { name: "child".into(), depth: 1 }];
        let done = vec![(1, "root".to_string()), (1, "child".to_string()), (2, "child".to_string())];
        assert!(measurements_complete(1, &placements, &done));
        assert!(!measurements_complete(2, &placements, &done));
    }
}
