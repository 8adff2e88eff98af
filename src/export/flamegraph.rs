//! --profile-dir: each placement's folded stacks (`outer;...;inner count`, the format every
//! flame-graph tool reads), an SVG flame graph each, and a differential flame graph baseline ->
//! placement (red: more time than the baseline spent there, blue: less).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::plan::{Placement, Plan};
use crate::report::Report;

/// The start of every file name of `placement`'s profile at `tasks`: its name with every
/// character but ASCII letters and digits made `-`.
fn stem(placement: &Placement, tasks: usize) -> String {
    let label: String = placement.name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    format!("{label}-{tasks}tasks")
}

/// Every file name a run of `plan` may write into --profile-dir, known before it measures:
/// each placement's folded stacks and flame graph at each task count, and each other
/// placement's differential against the baseline, under both names the baseline may get
/// (`root` at the true root, `base` elsewhere, decided once the base is found).
pub fn file_names(plan: &Plan) -> Vec<String> {
    let has_baseline = plan.placements.iter().any(|p| p.is_baseline());
    let mut names = Vec::new();
    for &tasks in &plan.task_counts {
        for placement in &plan.placements {
            let spellings = if placement.is_baseline() { vec!["root", "base"] } else { vec![placement.name.as_str()] };
            for spelling in spellings {
                let stem = stem(&Placement { name: spelling.into(), ..placement.clone() }, tasks);
                names.extend([format!("{stem}.folded"), format!("{stem}.svg")]);
                if has_baseline && !placement.is_baseline() {
                    names.extend(["root", "base"].map(|baseline| format!("{stem}-vs-{baseline}.svg")));
                }
            }
        }
    }
    names
}

fn folded_text(folded: &BTreeMap<String, u64>) -> String {
    folded.iter().map(|(stack, count)| format!("{stack} {count}\n")).collect()
}

/// Writes `path` whole or not at all: into a temporary name beside it, renamed over it only
/// once every byte is on disk (a full filesystem leaves the old file, never half a new one).
fn write_whole(path: &Path, write: impl FnOnce(&mut dyn std::io::Write) -> Result<()>) -> Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temporary = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| -> Result<()> {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&temporary)?);
        write(&mut file)?;
        file.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&temporary, path)?;
        Ok(())
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written.with_context(|| format!("writing {}", path.display()))
}

fn flame_graph(title: &str, folded: &str, path: &Path) -> Result<()> {
    let mut options = inferno::flamegraph::Options::default();
    options.title = title.to_string();
    options.count_name = "samples".into();
    write_whole(path, |out| {
        inferno::flamegraph::from_lines(&mut options, folded.lines(), out).context("drawing the flame graph")
    })
}

/// Writes every placement's files into `dir`; returns the paths written.
pub fn write(dir: &Path, report: &Report) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("--profile-dir {}", dir.display()))?;
    let mut written = Vec::new();
    for summary in report.summaries() {
        let Some(totals) = report.profile_totals(summary.placement, summary.tasks) else { continue };
        let stem = stem(summary.placement, summary.tasks);
        let folded = folded_text(&totals.folded);
        let folded_path = dir.join(format!("{stem}.folded"));
        write_whole(&folded_path, |out| Ok(out.write_all(folded.as_bytes())?))?;
        let svg = dir.join(format!("{stem}.svg"));
        flame_graph(&format!("{} ({} tasks)", summary.placement.name, summary.tasks), &folded, &svg)?;
        written.extend([folded_path, svg]);
        let baseline = report.plan.placements.iter().find(|p| p.is_baseline());
        if let Some(baseline) = baseline.filter(|_| !summary.placement.is_baseline())
            && let Some(base) = report.profile_totals(baseline, summary.tasks)
        {
            let mut difference = Vec::new();
            let base_folded = folded_text(&base.folded);
            inferno::differential::from_readers(
                inferno::differential::Options::default(),
                base_folded.as_bytes(),
                folded.as_bytes(),
                &mut difference,
            )
            .context("computing the differential flame graph")?;
            let path = dir.join(format!("{stem}-vs-{}.svg", baseline.name));
            let title = format!(
                "{} vs {} ({} tasks): red is more time than the baseline",
                summary.placement.name, baseline.name, summary.tasks
            );
            flame_graph(&title, &String::from_utf8_lossy(&difference), &path)?;
            written.push(path);
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_a_run_will_write_are_known_from_its_plan() {
        let plan = crate::report::fixture::test_plan();
        let names = file_names(&plan);
        for name in ["base-2tasks.svg", "root-2tasks.folded", "child-2tasks.svg", "child-2tasks-vs-base.svg"] {
            assert!(names.contains(&name.to_string()), "{name} in {names:?}");
        }
        assert!(!names.iter().any(|n| n.contains("1tasks")), "{names:?}");
    }
}
