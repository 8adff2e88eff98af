//! The terminal table: one line per placement, the seed's overhead line per non-root placement.

use std::io::Write;

use anyhow::Result;

use crate::benchmark::Report;
use crate::options::RunOptions;

/// 1234567.8 -> "1,234,568"
pub fn thousands(value: f64) -> String {
    let digits = format!("{:.0}", value.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if value < 0.0 && digits != "0" { format!("-{out}") } else { out }
}

fn seconds(duration: std::time::Duration) -> String {
    let s = duration.as_secs_f64();
    if s.fract() == 0.0 { format!("{s:.0} s") } else { format!("{s} s") }
}

pub fn write(out: &mut dyn Write, report: &Report, options: &RunOptions) -> Result<()> {
    let repeat = options.repeat;
    let env = &report.env;
    writeln!(
        out,
        "faultscale: {}, {} workers on CPUs {}, cgroup {} (memory, {} layout), {} x {}{}",
        options.workload.name(),
        options.cpus.len(),
        env.cpus,
        env.cgroup_version,
        match env.layout {
            crate::cgroup::Layout::V2 => "v2",
            crate::cgroup::Layout::V1 => "v1",
            crate::cgroup::Layout::Hybrid => "hybrid",
        },
        seconds(options.duration),
        repeat,
        if repeat > 1 { ", interleaved" } else { "" }
    )?;
    // Paths below a base other than the root are shown relative to it, the base named once.
    let base = env.base_cgroup.as_str();
    if base != "/" {
        writeln!(out, "base cgroup: {base}")?;
    }
    let shown = |path: &str| -> String {
        if base == "/" {
            return path.to_string();
        }
        match path.strip_prefix(base) {
            Some("") => "<base>".into(),
            Some(rest) => format!("<base>{rest}"),
            None => path.to_string(),
        }
    };
    let path_width =
        report.measurements.iter().map(|m| shown(&m.leaf.cgroup_path).len()).max().unwrap_or(6).max(6);
    for knob in &report.knobs {
        let rounded = if knob.read_back != knob.written { format!(" (kernel reads back {})", knob.read_back) } else { String::new() };
        writeln!(out, "knob: {} {}/{} = {}{rounded}", knob.placement, shown(&knob.cgroup_path), knob.file, knob.written)?;
    }
    writeln!(
        out,
        "{:<10} {:<path_width$} {:>12} {:>10} {:>6} {:>8}",
        "placement", "cgroup", "faults/s", "per CPU", "+-", "vs root"
    )?;
    let summaries = report.summaries(&options.placements);
    let root_rate = summaries.iter().find(|s| s.placement.is_root()).map(|s| s.faults_per_sec.mean);
    for placement in &options.placements {
        if let Some(failure) = report.failures.iter().find(|f| &f.placement == placement) {
            writeln!(out, "{:<10} FAILED in repetition {}: {}", placement.name, failure.repetition, failure.reason)?;
        }
        let Some(summary) = summaries.iter().find(|s| s.placement == placement) else { continue };
        let rate = summary.faults_per_sec;
        let error = if rate.n > 1 { format!("{:.1}%", rate.rse_pct) } else { "-".into() };
        let vs_root = match root_rate {
            Some(root) => format!("{:.1}%", 100.0 * rate.mean / root),
            None => "-".into(),
        };
        writeln!(
            out,
            "{:<10} {:<path_width$} {:>12} {:>10} {:>6} {:>8}",
            placement.name,
            shown(summary.cgroup_path),
            thousands(rate.mean),
            thousands(rate.mean / options.cpus.len() as f64),
            error,
            vs_root
        )?;
    }
    for summary in &summaries {
        let Some(interval) = summary.overhead_vs_root else { continue };
        let ci = match (interval.low, interval.high) {
            (Some(low), Some(high)) => format!(
                "  (95% CI {:.1}-{:.1}%{})",
                100.0 * low,
                100.0 * high,
                if interval.excludes(1.0) { ", significant" } else { ", not significant" }
            ),
            _ => String::new(),
        };
        writeln!(out, "root/{} overhead: {:.1}%{ci}", summary.placement.name, 100.0 * interval.mean)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(606_968.4), "606,968");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(1000.0), "1,000");
        assert_eq!(thousands(0.0), "0");
        assert_eq!(thousands(-1234.0), "-1,234");
        assert_eq!(thousands(36_418_112.0), "36,418,112");
    }
}
