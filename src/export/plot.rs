//! `faultscale plot FILE -o chart.svg|png`: the three pictures the seeds' threads argue with.
//! - depth: faults/s per task against nesting depth (memcg charge paths walk every ancestor);
//! - tasks: faults/s against task count, with the linear line (will-it-scale's view);
//! - bars: the baseline vs each placement, mean with a +-1 stddev error bar.
//!
//! Text is drawn with the DejaVu Sans font embedded in the binary (assets/), so no system font
//! library is needed on the machine that plots.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Result, anyhow, bail};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::results::{Key, RunFile, is_baseline};
use crate::stats::{overhead_interval, summarize};
use crate::text::thousands;

static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chart {
    /// tasks when several task counts were run, depth when several depths, else bars
    Auto,
    Depth,
    Tasks,
    Bars,
}

/// Mean and stddev of one series point.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Point {
    x: f64,
    mean: f64,
    stddev: f64,
}

fn register_font() -> Result<()> {
    plotters::style::register_font("sans-serif", FontStyle::Normal, FONT)
        .map_err(|_| anyhow!("the embedded font could not be loaded"))
}

/// Which chart `auto` means for this file.
fn pick(file: &RunFile, chart: Chart) -> Chart {
    if chart != Chart::Auto {
        return chart;
    }
    let tasks: std::collections::BTreeSet<u64> = file.rates.keys().map(|k| k.tasks).collect();
    let depths: std::collections::BTreeSet<u64> = file.depths.values().copied().collect();
    if tasks.len() > 1 {
        Chart::Tasks
    } else if depths.len() > 2 {
        Chart::Depth
    } else {
        Chart::Bars
    }
}

/// Series name -> points, for the chart.
/// Profiles with knobs and siblings are not plain depth steps: the depth line takes the
/// baseline, child and nested:N only.
fn on_the_depth_line(placement: &str) -> bool {
    is_baseline(placement) || placement == "child" || placement.starts_with("nested:")
}

/// The placements a `chart` leaves out of a file, each once, for the warning that says so.
pub fn left_out(file: &RunFile, chart: Chart) -> Vec<String> {
    let mut names: Vec<String> = match chart {
        Chart::Depth => {
            file.rates.keys().map(|k| k.placement.name().to_string()).filter(|n| !on_the_depth_line(n)).collect()
        }
        _ => Vec::new(),
    };
    names.sort();
    names.dedup();
    names
}

fn series(file: &RunFile, chart: Chart, per_task: bool) -> BTreeMap<String, Vec<Point>> {
    // Repetitions gathered per (series, x): on the depth chart `child` and `nested:1` are the
    // same one-level setup and share a point.
    let mut gathered: BTreeMap<String, BTreeMap<u64, Vec<f64>>> = BTreeMap::new();
    for (key, rates) in &file.rates {
        let scale = if per_task { key.tasks.max(1) as f64 } else { 1.0 };
        let (name, x) = match chart {
            Chart::Tasks => (format!("{}{}", scope(file, key), key.placement.name()), key.tasks),
            Chart::Depth => {
                let Some(&depth) = file.depths.get(key.placement.name()) else { continue };
                if !on_the_depth_line(key.placement.name()) {
                    continue;
                }
                (format!("{}{}", scope(file, key), crate::text::plural(key.tasks as usize, "task")), depth)
            }
            Chart::Bars | Chart::Auto => {
                (format!("{}{}", scope(file, key), crate::text::plural(key.tasks as usize, "task")), 0)
            }
        };
        gathered.entry(name).or_default().entry(x).or_default().extend(rates.iter().map(|r| r.value / scale));
    }
    gathered
        .into_iter()
        .map(|(name, by_x)| {
            let points = by_x
                .into_iter()
                .filter_map(|(x, values)| {
                    let s = summarize(&values)?;
                    Some(Point { x: x as f64, mean: s.mean, stddev: s.stddev })
                })
                .collect();
            (name, points)
        })
        .collect()
}

/// The chart format `output` names: `svg` or `png`, else an error naming it.
pub fn format_of(output: &Path) -> Result<String> {
    let extension = output.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    match extension.as_str() {
        "svg" | "png" => Ok(extension),
        _ => bail!("-o {}: give a file ending in .svg or .png", output.display()),
    }
}

pub fn plot(file: &RunFile, chart: Chart, output: &Path) -> Result<Chart> {
    register_font()?;
    let chart = pick(file, chart);
    let extension = format_of(output)?;
    let size = (960, 600);
    match extension.as_str() {
        "svg" => draw(SVGBackend::new(output, size).into_drawing_area(), file, chart)?,
        "png" => draw(BitMapBackend::new(output, size).into_drawing_area(), file, chart)?,
        _ => bail!("-o {}: give a file ending in .svg or .png", output.display()),
    }
    Ok(chart)
}

fn draw<B: DrawingBackend>(area: DrawingArea<B, Shift>, file: &RunFile, chart: Chart) -> Result<()>
where
    B::ErrorType: 'static,
{
    let failed = |e: DrawingAreaErrorKind<B::ErrorType>| anyhow!("drawing the chart: {e}");
    area.fill(&WHITE).map_err(failed)?;
    // The rate in what the workload counts (ops for fallocate, loops for mmap-file, ...).
    let unit = file.rate_unit();
    let title_of = |what: &str| format!("{unit}{what} ({})", file.name);
    match chart {
        Chart::Bars | Chart::Auto => draw_bars(&area, file, &title_of(" per task by placement"), &unit),
        Chart::Depth => draw_lines(
            &area,
            file,
            chart,
            [&title_of(" per task vs nesting depth"), "levels below the base", &format!("{unit} per task")],
            true,
        ),
        Chart::Tasks => draw_lines(&area, file, chart, [&title_of(" vs tasks"), "tasks", &unit], false),
    }
    .map_err(|e| anyhow!("drawing the chart: {e}"))?;
    area.present().map_err(failed)?;
    Ok(())
}

type DrawResult = std::result::Result<(), Box<dyn std::error::Error>>;

fn draw_lines<B: DrawingBackend>(
    area: &DrawingArea<B, Shift>,
    file: &RunFile,
    chart: Chart,
    [title, x_label, y_label]: [&str; 3],
    per_task: bool,
) -> DrawResult
where
    B::ErrorType: 'static,
{
    let data = series(file, chart, per_task);
    if data.values().all(|p| p.is_empty()) {
        return Err("no rows to plot on this chart".into());
    }
    let xs = data.values().flatten().map(|p| p.x);
    let (x_min, x_max) = xs.fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)));
    // The linear line: the smallest task count's rate scaled, per placement (tasks chart).
    let linear: BTreeMap<String, Vec<(f64, f64)>> = if chart == Chart::Tasks {
        data.iter()
            .filter_map(|(name, points)| {
                let first = points.first()?;
                let line = points.iter().map(|p| (p.x, first.mean * p.x / first.x)).collect();
                Some((name.clone(), line))
            })
            .collect()
    } else {
        BTreeMap::new()
    };
    let y_max = data
        .values()
        .flatten()
        .map(|p| p.mean + p.stddev)
        .chain(linear.values().flatten().map(|(_, y)| *y))
        .fold(0.0, f64::max)
        * 1.1;
    let x_pad = ((x_max - x_min) * 0.05).max(0.5);
    let mut ctx = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 22))
        .margin(20)
        .x_label_area_size(45)
        .y_label_area_size(90)
        .build_cartesian_2d((x_min - x_pad)..(x_max + x_pad), 0.0..y_max.max(1.0))?;
    ctx.configure_mesh()
        .x_desc(x_label)
        // Depths and task counts are whole numbers: label those, leave the in-between ticks bare.
        // A tick is a sum of float steps (0 comes out as -5.6e-17, 1 as 0.99999...): rounded.
        .x_label_formatter(&|x| whole(*x).map(|n| n.to_string()).unwrap_or_default())
        .y_desc(y_label)
        .y_label_formatter(&|y| thousands(*y))
        .label_style(("sans-serif", 14))
        .draw()?;
    for (index, (name, points)) in data.iter().enumerate() {
        let color = Palette99::pick(index).to_rgba();
        ctx.draw_series(LineSeries::new(points.iter().map(|p| (p.x, p.mean)), color.stroke_width(2)))?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        ctx.draw_series(points.iter().map(|p| Circle::new((p.x, p.mean), 4, color.filled())))?;
        ctx.draw_series(
            points.iter().map(|p| ErrorBar::new_vertical(p.x, p.mean - p.stddev, p.mean, p.mean + p.stddev, color, 8)),
        )?;
        if let Some(line) = linear.get(name) {
            let dashed = color.mix(0.5);
            ctx.draw_series(DashedLineSeries::new(line.iter().copied(), 6, 4, dashed.stroke_width(1)))?
                .label(format!("{name} linear"))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], dashed));
        }
    }
    ctx.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()?;
    Ok(())
}

/// The whole number `x` is, give or take the float error of a tick position; None between.
fn whole(x: f64) -> Option<u64> {
    let rounded = x.round();
    ((x - rounded).abs() < 1e-6 && rounded >= 0.0).then_some(rounded as u64)
}

/// Where a file holds more than one workload (or mode), the words that tell its series and
/// bars apart: `anon `, `anon thread `; else nothing.
fn scope(file: &RunFile, key: &Key) -> String {
    let workloads: BTreeSet<&str> = file.rates.keys().map(|k| k.workload.as_str()).collect();
    let modes: BTreeSet<&str> = file.rates.keys().map(|k| k.mode.as_str()).collect();
    match (workloads.len() > 1, modes.len() > 1) {
        (false, false) => String::new(),
        (true, false) => format!("{} ", key.workload),
        (false, true) => format!("{} ", key.mode),
        (true, true) => format!("{} {} ", key.workload, key.mode),
    }
}

fn draw_bars<B: DrawingBackend>(area: &DrawingArea<B, Shift>, file: &RunFile, title: &str, unit: &str) -> DrawResult
where
    B::ErrorType: 'static,
{
    // One task count: the smallest, so a sweep file still gives a readable bar chart.
    let tasks = file.rates.keys().map(|k| k.tasks).min().ok_or("no rows to plot")?;
    // Each bar is labelled with the one overhead figure (`overhead_interval`: over the cgroup
    // instances, each its rounds' trimmed mean), as the table gives it; none where the file
    // has no on-CPU times (an older file's overhead column held the throughput ratio).
    let bars: Vec<(String, f64, f64, Option<f64>)> = file
        .rates
        .iter()
        .filter(|(k, _)| k.tasks == tasks)
        .filter_map(|(k, rates)| {
            let s = summarize(&crate::stats::values(rates))?;
            let overhead = file
                .overheads
                .get(k)
                .filter(|_| !file.without_cpu_cost.contains(k))
                .and_then(|o| overhead_interval(o))
                .map(|i| i.mean);
            Some((
                format!("{}{}", scope(file, k), k.placement.name()),
                s.mean / tasks as f64,
                s.stddev / tasks as f64,
                overhead,
            ))
        })
        .collect();
    let y_max = bars.iter().map(|(_, m, s, _)| m + s).fold(0.0, f64::max) * 1.15;
    let names: Vec<String> = bars.iter().map(|(n, _, _, _)| n.clone()).collect();
    let mut ctx = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 22))
        .margin(20)
        .x_label_area_size(45)
        .y_label_area_size(90)
        .build_cartesian_2d(-0.5f64..(bars.len() as f64 - 0.5), 0.0..y_max.max(1.0))?;
    ctx.configure_mesh()
        .disable_x_mesh()
        .x_labels(bars.len())
        .x_label_formatter(&|x| {
            let index = x.round();
            if (x - index).abs() < 1e-6 && index >= 0.0 {
                names.get(index as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .x_desc(format!("placement ({tasks} tasks)"))
        .y_desc(format!("{unit} per task"))
        .y_label_formatter(&|y| thousands(*y))
        .label_style(("sans-serif", 14))
        .draw()?;
    for (index, (name, mean, stddev, overhead)) in bars.iter().enumerate() {
        let x = index as f64;
        let color = if is_baseline(name) { Palette99::pick(1) } else { Palette99::pick(0) };
        ctx.draw_series(std::iter::once(Rectangle::new([(x - 0.3, 0.0), (x + 0.3, *mean)], color.filled())))?;
        ctx.draw_series(std::iter::once(ErrorBar::new_vertical(x, mean - stddev, *mean, mean + stddev, BLACK, 12)))?;
        if let Some(overhead) = overhead {
            let label = format!("overhead {:.1}%", 100.0 * overhead);
            ctx.draw_series(std::iter::once(Text::new(
                label,
                (x - 0.15, mean + stddev + y_max * 0.02),
                ("sans-serif", 14),
            )))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(rows: &[(&str, u64, u64, f64)]) -> RunFile {
        let mut text = String::from("workload,mode,tasks,placement,depth,cpu,faults_per_sec,overhead_vs_baseline\n");
        for (placement, depth, tasks, rate) in rows {
            for wobble in [0.99, 1.0, 1.01] {
                text += &format!("anon,process,{tasks},{placement},{depth},,{},\n", rate * wobble);
            }
        }
        RunFile::from_csv("t.csv".into(), &text).unwrap()
    }

    #[test]
    fn auto_picks_the_chart_the_data_supports() {
        assert_eq!(pick(&file(&[("root", 0, 1, 10.0), ("root", 0, 2, 20.0)]), Chart::Auto), Chart::Tasks);
        assert_eq!(
            pick(&file(&[("root", 0, 2, 10.0), ("child", 1, 2, 9.0), ("nested:4", 4, 2, 8.0)]), Chart::Auto),
            Chart::Depth
        );
        assert_eq!(pick(&file(&[("root", 0, 2, 10.0), ("child", 1, 2, 9.0)]), Chart::Auto), Chart::Bars);
    }

    #[test]
    fn depth_series_are_per_task_and_skip_profiles() {
        let f = file(&[
            ("root", 0, 2, 10.0),
            ("child", 1, 2, 9.0),
            ("nested:1", 1, 2, 9.0),
            ("nested:4", 4, 2, 8.0),
            ("limited", 1, 2, 1.0),
        ]);
        let s = series(&f, Chart::Depth, true);
        let points = &s["2 tasks"];
        assert_eq!(left_out(&f, Chart::Depth), ["limited"]);
        assert!(left_out(&f, Chart::Bars).is_empty());
        // child and nested:1 share depth 1; the limited profile is not on the line.
        assert_eq!(points.iter().map(|p| p.x).collect::<Vec<_>>(), [0.0, 1.0, 4.0]);
        assert!((points[0].mean - 5.0).abs() < 1e-9);
        assert!((points[1].mean - 4.5).abs() < 1e-9);
        assert!(points[0].stddev > 0.0);
    }

    #[test]
    fn svg_and_png_files_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let f = file(&[("root", 0, 1, 10.0), ("root", 0, 2, 19.0), ("child", 1, 1, 9.0), ("child", 1, 2, 17.0)]);
        for (name, chart) in [("a.svg", Chart::Auto), ("b.png", Chart::Bars), ("c.svg", Chart::Depth)] {
            let path = dir.path().join(name);
            plot(&f, chart, &path).unwrap();
            let bytes = std::fs::read(&path).unwrap();
            if name.ends_with(".png") {
                assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
            } else {
                let text = String::from_utf8(bytes).unwrap();
                assert!(text.starts_with("<svg") && text.trim_end().ends_with("</svg>"));
                assert!(text.contains("<text"), "labels are drawn");
            }
        }
        assert!(plot(&f, Chart::Auto, &dir.path().join("x.pdf")).is_err());
    }
}
