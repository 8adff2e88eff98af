//! --profile-dir: each placement's folded stacks (`outer;...;inner count`, the format every
//! flame-graph tool reads), an SVG flame graph each, and a differential flame graph baseline ->
//! placement (red: more time than the baseline spent there, blue: less).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::report::Report;

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
        let label: String =
            summary.placement.name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
        let stem = format!("{label}-{}tasks", summary.tasks);
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
