//! The plan of a run: which placements (the baseline, child, nested:N, profiles), in which
//! order over the rounds, with how many tasks on which CPUs. Pure data and pure functions: nothing
//! here touches the machine except reading a profile file.

pub mod profile;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};

use crate::cgroup::knobs::Knob;
use crate::cgroup::{BaseSpec, VersionChoice};
use crate::run::{KernelCountSource, Mode};
use crate::workload::WorkloadSettings;

/// Deepest nesting faultscale builds. Kernels allow more, but memcg charge paths past 64 levels
/// are not a setup anyone measures, and the limit keeps a typo from building thousands of dirs.
pub const MAX_DEPTH: u32 = 64;

/// Where one set of workers runs, relative to the base.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// What the user wrote, normalised: `child`, `nested:3`, a profile's name; the baseline's
    /// `root` or `base` is set by where it runs (`Placement::baseline`).
    pub name: String,
    /// Levels below the base: 0 for the baseline, 1 for child.
    pub depth: u32,
    /// Knobs per level, from the top level down (empty lists for plain levels).
    pub levels: Vec<Vec<Knob>>,
    /// The profile it came from (`child`, `limited`, `./my.toml`), if any.
    pub profile: Option<String>,
    /// `siblings:N`: the workers spread over N sibling cgroups under one parent (0: one cgroup).
    pub siblings: u32,
    /// `control`: a second set of workers in the baseline's own cgroup (an A/A check: its
    /// overhead is 100% by construction, its interval what the machine resolves now).
    pub control: bool,
}

impl Placement {
    /// The baseline, named `base` until the session finds its base is the true root, where it
    /// is `root`.
    pub fn baseline() -> Self {
        Placement { name: "base".into(), depth: 0, levels: Vec::new(), profile: None, siblings: 0, control: false }
    }

    pub fn plain(name: String, depth: u32) -> Self {
        Placement { name, depth, levels: vec![Vec::new(); depth as usize], profile: None, siblings: 0, control: false }
    }

    pub fn control() -> Self {
        Placement { name: "control".into(), control: true, ..Placement::plain(String::new(), 0) }
    }

    /// The placement every other is divided by: depth 0, in the base's own cgroup.
    pub fn is_baseline(&self) -> bool {
        self.depth == 0 && !self.control
    }

    /// Whether the per-level fit over depth takes this placement: plain cgroups only (no
    /// knobs, no siblings), the baseline at depth 0 included, the control not.
    pub fn is_plain_depth(&self) -> bool {
        !self.control && self.siblings == 0 && self.levels.iter().all(Vec::is_empty)
    }
}

fn parse_depth(item: &str, text: &str) -> Result<u32> {
    let depth: u32 = text
        .parse()
        .map_err(|_| anyhow!("--cgroup {item:?}: nesting depth must be a whole number from 1 to {MAX_DEPTH}"))?;
    if !(1..=MAX_DEPTH).contains(&depth) {
        bail!("--cgroup {item:?}: nesting depth must be from 1 to {MAX_DEPTH}");
    }
    Ok(depth)
}

/// Parses one `--cgroup` list: `child,nested:3,nested:1..8,limited,./my.toml`.
pub fn parse_placements(list: &str) -> Result<Vec<Placement>> {
    let mut placements: Vec<Placement> = Vec::new();
    for item in list.split(',') {
        let item = item.trim();
        let expanded: Vec<Placement> = match item {
            "" => bail!("--cgroup {list:?}: empty placement; use e.g. --cgroup child,nested:3"),
            "root" | "base" => vec![Placement::baseline()],
            "control" => vec![Placement::control()],
            "child" => vec![Placement::plain("child".into(), 1)],
            _ if item.starts_with("siblings:") => {
                let count = item["siblings:".len()..]
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (2..=MAX_SIBLINGS).contains(n))
                    .ok_or_else(|| {
                        anyhow!("--cgroup {item:?}: the sibling count must be a whole number from 2 to {MAX_SIBLINGS}")
                    })?;
                vec![Placement { siblings: count, ..Placement::plain(format!("siblings:{count}"), 1) }]
            }
            _ => match item.strip_prefix("nested:") {
                Some(range) if range.contains("..") => {
                    let (first, last) = range.split_once("..").expect("checked");
                    let (first, last) = (parse_depth(item, first)?, parse_depth(item, last)?);
                    if first > last {
                        bail!("--cgroup {item:?}: the range runs backwards; write nested:LOW..HIGH");
                    }
                    (first..=last).map(|depth| Placement::plain(format!("nested:{depth}"), depth)).collect()
                }
                Some(depth) => {
                    let depth = parse_depth(item, depth)?;
                    vec![Placement::plain(format!("nested:{depth}"), depth)]
                }
                None => {
                    let profile = profile::load(item)?;
                    vec![Placement {
                        name: profile.name.clone(),
                        depth: profile.levels.len() as u32,
                        levels: profile.levels,
                        profile: Some(item.to_string()),
                        siblings: 0,
                        control: false,
                    }]
                }
            },
        };
        for placement in expanded {
            if placements.iter().any(|p| p.name == placement.name) {
                bail!("--cgroup {list:?}: {} is listed twice; list each placement once", placement.name);
            }
            placements.push(placement);
        }
    }
    Ok(placements)
}

/// Everything a run measures, validated (options.rs builds it from the command line).
#[derive(Debug, Clone)]
pub struct Plan {
    pub placements: Vec<Placement>,
    /// Measured time per placement and round, in `slices` interleaved slices.
    pub duration: Duration,
    pub slices: u32,
    pub repeat: u32,
    /// --warmup: how long the first crew at each task count runs before its first slice,
    /// discarded. It warms the CPUs that count uses (their clocks, the page allocator's and slab
    /// caches); every other crew, the other placements' and later generations', starts as later
    /// generations always did, with its first iteration and each slice's settling window (0.4 s
    /// of a 5 s, 4-placement run was the 4 crews' warmups, 2% of its wall).
    pub warmup: Duration,
    /// Crew generations per task count (`--generations`): the rounds cut into this many
    /// stretches, each measured by crews made for it.
    pub generations: u32,
    pub interval: Duration,
    pub cpus: Vec<usize>,
    /// Task counts, in sweep order; one per CPU when not asked for.
    pub task_counts: Vec<usize>,
    /// What reaches the workers: the workload and its options (--chunk, --size, --thp,
    /// --iterations, ...), defined once in `WorkloadSettings`, filled by the front end; its
    /// `files_dir` is the run's own, given by `workload_settings` once it exists.
    pub workload: WorkloadSettings,
    pub mode: Mode,
    pub kernel_count: KernelCountSource,
    pub tmpdir: PathBuf,
    pub base: BaseSpec,
    pub version: VersionChoice,
    /// --profile: sample the workers on CPU and attribute the kernel's time, memcg first.
    pub profile: bool,
    /// --profile-dir: where folded stacks and flame graphs go.
    pub profile_dir: Option<PathBuf>,
    /// --locks: count the workers' lock contentions through the kernel's tracepoints.
    pub locks: bool,
}

impl Plan {
    /// How long each slice is measured.
    pub fn slice_duration(&self) -> Duration {
        self.duration / self.slices
    }

    /// Slice rounds in the run: every placement measured once per round.
    pub fn rounds(&self) -> u32 {
        self.repeat * self.slices
    }

    /// The crew generation (0-based) a round is measured by: `generations` stretches of the
    /// rounds, as equal as whole rounds allow.
    pub fn generation_of(&self, round: u32) -> u32 {
        ((round - 1) as u64 * self.generations as u64 / self.rounds() as u64) as u32
    }

    /// The repetition (1-based) a round belongs to.
    pub fn repetition_of(&self, round: u32) -> u32 {
        (round - 1) / self.slices + 1
    }

    /// A round as the CSV names it: `slice 5`, or `repetition 2 slice 5` with --repeat.
    pub fn slice_name(&self, round: u32) -> String {
        match self.repeat > 1 || round > self.slices {
            false => format!("slice {}", self.slice_of(round)),
            true => format!("repetition {} slice {}", self.repetition_of(round), self.slice_of(round)),
        }
    }

    /// One slice at one task count, as a per-slice warning names it: the slice's name, and
    /// in a --tasks sweep its task count too, since every task count has a slice of that name.
    pub fn slice_name_at(&self, round: u32, tasks: usize) -> String {
        match self.task_counts.len() > 1 {
            false => self.slice_name(round),
            true => format!("{} at {}", self.slice_name(round), crate::text::plural(tasks, "task")),
        }
    }

    /// The slice within its repetition (1-based) a round is.
    pub fn slice_of(&self, round: u32) -> u32 {
        (round - 1) % self.slices + 1
    }

    /// The workload's settings; `files_dir` is the run's temporary directory, if it has one.
    pub fn workload_settings(&self, files_dir: Option<PathBuf>) -> WorkloadSettings {
        WorkloadSettings { files_dir, ..self.workload.clone() }
    }
}

/// The most sibling cgroups `siblings:N` makes (Shakeel Butt's 2025 runs went to 36).
pub const MAX_SIBLINGS: u32 = 256;

/// `siblings:N`: which sibling worker `worker` (of `tasks`, placed round-robin on `cpus` CPUs)
/// runs in. Workers are numbered CPU by CPU and the siblings dealt out in that order, so the
/// workers sharing a CPU belong to different cgroups (as long as no CPU hosts more than N)
/// and every sibling gets tasks / N of them: each CPU switches between memcgs, which is the
/// per-CPU charge cache's worst case.
pub fn sibling_of(worker: usize, tasks: usize, cpus: usize, siblings: usize) -> usize {
    let (cpu, round) = (worker % cpus, worker / cpus);
    let on_cpu = |c: usize| tasks / cpus + usize::from(c < tasks % cpus);
    ((0..cpu).map(on_cpu).sum::<usize>() + round) % siblings
}

/// The CPU each of `tasks` workers runs on: the CPUs in order, round-robin past their count.
pub fn cpus_for_tasks(cpus: &[usize], tasks: usize) -> Vec<usize> {
    (0..tasks).map(|i| cpus[i % cpus.len()]).collect()
}

/// The order placements run in during round `round` (1-based): forward, then
/// backward (ABBA), so drift over the run weighs on every placement alike.
pub fn order(placements: usize, round: u32) -> Vec<usize> {
    let forward: Vec<usize> = (0..placements).collect();
    if round % 2 == 1 { forward } else { forward.into_iter().rev().collect() }
}

/// The most tasks a run takes (`--tasks`), and so the most workers a result file can hold a slice of.
pub const MAX_TASKS: usize = 4096;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_parse_and_reject() {
        let p = parse_placements("child,nested:3").unwrap();
        assert_eq!(p[0], Placement::plain("child".into(), 1));
        assert_eq!((p[1].name.as_str(), p[1].depth, p[1].levels.len()), ("nested:3", 3, 3));
        let sweep = parse_placements("nested:1..4").unwrap();
        assert_eq!(sweep.iter().map(|p| p.depth).collect::<Vec<_>>(), [1, 2, 3, 4]);
        let limited = parse_placements("limited").unwrap();
        assert_eq!(limited[0].profile.as_deref(), Some("limited"));
        assert_eq!(limited[0].levels[0][0].name, "memory.max");
        assert!(parse_placements("nested:4..2").is_err());
        assert!(parse_placements("nested:2,nested:1..3").is_err());
        assert_eq!(parse_placements("root").unwrap(), vec![Placement::baseline()]);
        let control = &parse_placements("child,control").unwrap()[1];
        assert!(control.control && !control.is_baseline() && control.depth == 0 && !control.is_plain_depth());
        assert!(parse_placements("control,control").is_err());
        let control = &parse_placements("child,control").unwrap()[1];
        assert!(control.control && !control.is_baseline() && control.depth == 0 && !control.is_plain_depth());
        assert!(parse_placements("control,control").is_err());
        assert_eq!(parse_placements("nested:64").unwrap()[0].depth, 64);
        let siblings = &parse_placements("siblings:4").unwrap()[0];
        assert_eq!((siblings.name.as_str(), siblings.depth, siblings.siblings), ("siblings:4", 1, 4));
        for bad in ["siblings:1", "siblings:0", "siblings:x", "siblings:", "siblings:257"] {
            let err = parse_placements(bad).unwrap_err().to_string();
            assert!(err.contains("sibling count must be a whole number from 2 to 256"), "{bad}: {err}");
        }
        for bad in [
            "nested:0",
            "nested:65",
            "nested:x",
            "nested:-1",
            "grandchild",
            "",
            "child,,root",
            "child,child",
            "nested:1..65",
        ] {
            assert!(parse_placements(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn round_robin_past_the_cpus() {
        assert_eq!(cpus_for_tasks(&[0, 1], 5), [0, 1, 0, 1, 0]);
        assert_eq!(cpus_for_tasks(&[2, 5, 7], 2), [2, 5]);
    }

    #[test]
    fn repetitions_alternate_direction() {
        assert_eq!(order(3, 1), vec![0, 1, 2]);
        assert_eq!(order(3, 2), vec![2, 1, 0]);
        assert_eq!(order(3, 3), vec![0, 1, 2]);
        assert_eq!(order(1, 2), vec![0]);
    }

    #[test]
    fn siblings_alternate_on_every_cpu_and_share_the_tasks_evenly() {
        for (tasks, cpus, siblings) in [(4, 2, 4), (8, 4, 4), (6, 2, 3), (12, 4, 6), (36, 16, 36), (5, 2, 2)] {
            let of: Vec<usize> = (0..tasks).map(|w| sibling_of(w, tasks, cpus, siblings)).collect();
            let cpu_of = cpus_for_tasks(&(0..cpus).collect::<Vec<_>>(), tasks);
            for cpu in 0..cpus {
                let mut here: Vec<usize> = (0..tasks).filter(|&w| cpu_of[w] == cpu).map(|w| of[w]).collect();
                let count = here.len();
                here.sort();
                here.dedup();
                assert_eq!(here.len(), count.min(siblings), "{tasks} tasks, {cpus} CPUs, {siblings}: CPU {cpu} {of:?}");
            }
            for sibling in 0..siblings {
                let count = of.iter().filter(|&&s| s == sibling).count();
                assert!(count == tasks / siblings || count == tasks.div_ceil(siblings), "{of:?}");
            }
        }
        // 4 tasks on 2 CPUs over 4 siblings: CPU 0 runs siblings 0 and 1, CPU 1 runs 2 and 3.
        assert_eq!((0..4).map(|w| sibling_of(w, 4, 2, 4)).collect::<Vec<_>>(), [0, 2, 1, 3]);
    }
}
