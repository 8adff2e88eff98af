//! faultscale's own result files (--csv or --json) read back, for `compare` and `plot`:
//! per workload, mode, task count and placement, the rate of every round.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};

/// Rows match on these.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    pub workload: String,
    pub mode: String,
    pub tasks: u64,
    /// The baseline first, then placements by name.
    pub placement: (bool, String),
}

impl Key {
    pub fn label(&self) -> String {
        format!("{} {} {}t {}", self.workload, self.mode, self.tasks, self.placement.1)
    }
}

/// One file's repetitions per key, and what it was run on.
#[derive(Debug, Default)]
pub struct RunFile {
    pub name: String,
    pub rates: BTreeMap<Key, Vec<f64>>,
    /// Baseline rate / placement rate, per slice.
    pub overheads: BTreeMap<Key, Vec<f64>>,
    /// --profile: the memcg family's CPU ns per fault, per slice.
    pub memcg_ns: BTreeMap<Key, Vec<f64>>,
    /// Per row key, the settings that must agree for two files' rows to be compared.
    pub settings: BTreeMap<Key, BTreeMap<&'static str, String>>,
    /// Some rows come from a run a signal ended early.
    pub incomplete: bool,
    pub facts: BTreeMap<&'static str, String>,
    /// Levels below the base, per placement name.
    pub depths: BTreeMap<String, u64>,
}

/// Far beyond any run's file (a 10,000-round sweep with --per-cpu is a few MiB).
const MAX_RESULT_BYTES: u64 = 256 << 20;

/// A rate, ratio or task count read back must be a finite, non-negative number.
fn figure(name: &str, row: &str, what: &str, value: Option<f64>, text: &str) -> Result<f64> {
    match value {
        Some(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => bail!("{name}: {row}: {what} {text:?} is not a finite, non-negative number"),
    }
}

const FACTS: [&str; 5] = ["kernel", "host", "cgroup_version", "thp_enabled", "governor"];

/// Machine facts `compare` warns about when two JSON files differ in them.
const MACHINE_FACTS: [&str; 8] =
    ["smt_active", "numa_balancing", "mitigations", "swap", "zswap", "lru_gen", "overcommit_memory", "nmi_watchdog"];

/// Settings that change what a row measures: rows that differ in one are not comparable.
/// (Workload, mode, tasks and placement are in the row's key already.)
pub const SETTINGS: [&str; 7] =
    ["chunk_bytes", "size_bytes", "thp_mode", "tmpdir_fs", "kernel_count_source", "knobs", "iterations_per_task"];

pub fn key(workload: &str, mode: &str, tasks: u64, placement: &str) -> Key {
    Key { workload: workload.into(), mode: mode.into(), tasks, placement: (!is_baseline(placement), placement.into()) }
}

/// The baseline's names: `root` in the hierarchy's true root, `base` anywhere else.
pub fn is_baseline(placement: &str) -> bool {
    placement == "root" || placement == "base"
}

impl RunFile {
    pub fn load(path: &Path) -> Result<Self> {
        let name = path.display().to_string();
        // Checked before reading: a FIFO would block forever and /dev/zero would never end.
        let metadata = std::fs::metadata(path).with_context(|| format!("reading {name}"))?;
        if !metadata.is_file() {
            bail!("{name}: not a regular file; give a faultscale --csv or --json file");
        }
        if metadata.len() > MAX_RESULT_BYTES {
            bail!(
                "{name}: {} bytes, over the {} MiB a result file can hold; is it a result file?",
                metadata.len(),
                MAX_RESULT_BYTES >> 20
            );
        }
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {name}"))?;
        if text.trim_start().starts_with('{') { Self::from_json(name, &text) } else { Self::from_csv(name, &text) }
    }

    fn add(&mut self, key: Key, rate: f64, overhead: Option<f64>) {
        if let Some(overhead) = overhead
            && key.placement.0
        {
            self.overheads.entry(key.clone()).or_default().push(overhead);
        }
        self.rates.entry(key).or_default().push(rate);
    }

    pub fn from_csv(name: String, text: &str) -> Result<Self> {
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let headers = reader.headers().with_context(|| format!("{name}: not a faultscale CSV"))?.clone();
        let column = |wanted: &str| {
            headers
                .iter()
                .position(|h| h == wanted)
                .ok_or_else(|| anyhow!("{name}: no {wanted} column; is this a faultscale --csv file?"))
        };
        let depth_column = headers.iter().position(|h| h == "depth");
        let [workload, mode, tasks, placement, cpu, rate] =
            ["workload", "mode", "tasks", "placement", "cpu", "faults_per_sec"].map(column);
        let (workload, mode, tasks, placement, cpu, rate) = (workload?, mode?, tasks?, placement?, cpu?, rate?);
        // The overhead itself; files from before it was written read their rate ratio instead.
        let overhead_column = headers.iter().position(|h| h == "overhead_vs_baseline");
        let ratio_column = headers.iter().position(|h| h == "ratio_vs_root");
        if overhead_column.is_none() && ratio_column.is_none() {
            bail!("{name}: no overhead_vs_baseline column; is this a faultscale --csv file?");
        }
        let complete_column = headers.iter().position(|h| h == "run_complete");
        let memcg_column = headers.iter().position(|h| h == "memcg_ns_per_fault");
        let setting_columns: Vec<(&'static str, usize)> =
            SETTINGS.iter().filter_map(|s| headers.iter().position(|h| h == *s).map(|i| (*s, i))).collect();
        let mut file = RunFile { name: name.clone(), ..Default::default() };
        for (line, record) in reader.records().enumerate() {
            let record = record.with_context(|| format!("{name}: row {}", line + 2))?;
            if !record[cpu].is_empty() {
                continue; // --per-cpu rows
            }
            let row = format!("row {}", line + 2);
            let number =
                |i: usize| -> Result<f64> { figure(&name, &row, &headers[i], record[i].parse().ok(), &record[i]) };
            let tasks_count = number(tasks)?;
            if tasks_count < 1.0 || tasks_count.fract() != 0.0 || tasks_count > 1e6 {
                bail!("{name}: {row}: tasks {:?} is not a task count", &record[tasks]);
            }
            let tasks_count = tasks_count as u64;
            let k = key(&record[workload], &record[mode], tasks_count, &record[placement]);
            let overhead = match (overhead_column, ratio_column) {
                (Some(i), _) if !record[i].is_empty() => Some(number(i)?),
                (None, Some(i)) if !record[i].is_empty() => number(i).map(crate::stats::overhead)?,
                _ => None,
            };
            if let Some(depth) = depth_column.and_then(|i| record[i].parse().ok()) {
                file.depths.insert(record[placement].to_string(), depth);
            }
            if complete_column.is_some_and(|i| &record[i] == "false") {
                file.incomplete = true;
            }
            if let Some(i) = memcg_column.filter(|&i| !record[i].is_empty()) {
                let value = number(i)?;
                file.memcg_ns.entry(k.clone()).or_default().push(value);
            }
            let settings = file.settings.entry(k.clone()).or_default();
            for &(setting, i) in &setting_columns {
                settings.entry(setting).or_insert_with(|| record[i].to_string());
            }
            file.add(k, number(rate)?, overhead);
            for fact in FACTS {
                if let Some(i) = headers.iter().position(|h| h == fact) {
                    file.facts.entry(fact).or_insert_with(|| record[i].to_string());
                }
            }
        }
        if file.rates.is_empty() {
            bail!("{name}: no summary rows");
        }
        Ok(file)
    }

    pub fn from_json(name: String, text: &str) -> Result<Self> {
        let document: serde_json::Value = serde_json::from_str(text).map_err(|e| anyhow!("{name}: not JSON: {e}"))?;
        let settings = &document["settings"];
        let workload = settings["workload"]
            .as_str()
            .ok_or_else(|| anyhow!("{name}: no settings.workload; is this a faultscale --json file?"))?;
        let mode = settings["mode"].as_str().unwrap_or("process");
        let mut file = RunFile { name: name.clone(), ..Default::default() };
        for m in document["measurements"].as_array().ok_or_else(|| anyhow!("{name}: no measurements"))? {
            let tasks = m["run"]["workers"].as_array().map(|w| w.len() as u64).unwrap_or(0);
            let placement = m["placement"].as_str().unwrap_or("?");
            let rate = figure(
                &name,
                placement,
                "faults_per_sec",
                m["faults_per_sec"].as_f64(),
                &m["faults_per_sec"].to_string(),
            )?;
            if tasks == 0 {
                bail!("{name}: {placement}: a measurement has no workers");
            }
            if let Some(depth) = m["depth"].as_u64() {
                file.depths.insert(placement.to_string(), depth);
            }
            let overhead = match (&m["overhead_vs_baseline"], &m["ratio_vs_root"]) {
                (serde_json::Value::Null, serde_json::Value::Null) => None,
                (serde_json::Value::Null, ratio) => {
                    figure(&name, placement, "ratio_vs_root", ratio.as_f64(), &ratio.to_string())
                        .map(crate::stats::overhead)?
                }
                (value, _) => {
                    Some(figure(&name, placement, "overhead_vs_baseline", value.as_f64(), &value.to_string())?)
                }
            };
            let k = key(workload, mode, tasks, placement);
            if let Some(value) = m["memcg_ns_per_fault"].as_f64() {
                file.memcg_ns.entry(k.clone()).or_default().push(value);
            }
            let row_settings = file.settings.entry(k.clone()).or_default();
            for setting in SETTINGS {
                let value = match setting {
                    "knobs" => continue,
                    "kernel_count_source" => m["run"]["kernel_source"].as_str().map(str::to_string),
                    _ => settings[setting]
                        .as_str()
                        .map(str::to_string)
                        .or_else(|| settings[setting].as_u64().map(|v| v.to_string())),
                };
                if let Some(value) = value {
                    row_settings.entry(setting).or_insert(value);
                }
            }
            file.add(k, rate, overhead);
        }
        let env = &document["environment"];
        for fact in FACTS {
            if let Some(value) = env[fact].as_str() {
                file.facts.insert(fact, value.to_string());
            }
        }
        for fact in MACHINE_FACTS {
            if let Some(value) = env["machine"][fact].as_str() {
                file.facts.insert(fact, value.to_string());
            }
        }
        if let Some(cpus) = env["allowed_cpus"].as_str() {
            file.facts.insert("allowed_cpus", cpus.to_string());
        }
        if file.rates.is_empty() {
            bail!("{name}: no measurements");
        }
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_negative_and_impossible_figures_are_refused() {
        let header = "workload,mode,tasks,placement,cpu,faults_per_sec,overhead_vs_baseline\n";
        for (row, why) in [
            ("anon,process,2,root,,inf,", "faults_per_sec \"inf\""),
            ("anon,process,2,root,,NaN,", "faults_per_sec \"NaN\""),
            ("anon,process,2,root,,-5,", "faults_per_sec \"-5\""),
            ("anon,process,-3,root,,5,", "tasks \"-3\""),
            ("anon,process,0,root,,5,", "tasks \"0\""),
            ("anon,process,2,child,,5,inf", "overhead_vs_baseline \"inf\""),
        ] {
            let err = RunFile::from_csv("x.csv".into(), &format!("{header}{row}\n")).unwrap_err().to_string();
            assert!(err.starts_with("x.csv: row 2: ") && err.contains(why), "{row}: {err}");
        }
        let json = r#"{"settings":{"workload":"anon"},"measurements":[{"placement":"root","faults_per_sec":-1,"run":{"workers":[{}]}}]}"#;
        assert!(RunFile::from_json("x.json".into(), json).unwrap_err().to_string().contains("faults_per_sec"));
    }

    #[test]
    fn devices_and_fifos_are_refused_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        for path in [fifo.as_path(), Path::new("/dev/zero"), dir.path()] {
            let err = RunFile::load(path).unwrap_err().to_string();
            assert!(err.contains("not a regular file"), "{}: {err}", path.display());
        }
    }

    #[test]
    fn foreign_files_are_refused_with_the_reason() {
        let err = RunFile::from_csv("x.csv".into(), "a,b\n1,2\n").unwrap_err().to_string();
        assert!(err.contains("no workload column"), "{err}");
        let err = RunFile::from_json("x.json".into(), "{}").unwrap_err().to_string();
        assert!(err.contains("settings.workload"), "{err}");
    }
}
