//! faultscale's own result files (--csv or --json) read back, for `compare` and `plot`:
//! per workload, mode, task count and placement, the rate of every repetition.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};

/// Rows match on these.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    pub workload: String,
    pub mode: String,
    pub tasks: u64,
    /// Root first, then placements by name.
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
    /// Root rate / placement rate, per repetition.
    pub overheads: BTreeMap<Key, Vec<f64>>,
    pub facts: BTreeMap<&'static str, String>,
    /// Levels below the base, per placement name.
    pub depths: BTreeMap<String, u64>,
}

const FACTS: [&str; 5] = ["kernel", "host", "cgroup_version", "thp_enabled", "governor"];

pub fn key(workload: &str, mode: &str, tasks: u64, placement: &str) -> Key {
    Key { workload: workload.into(), mode: mode.into(), tasks, placement: (placement != "root", placement.into()) }
}

impl RunFile {
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let name = path.display().to_string();
        if text.trim_start().starts_with('{') { Self::from_json(name, &text) } else { Self::from_csv(name, &text) }
    }

    fn add(&mut self, key: Key, rate: f64, ratio: Option<f64>) {
        if let Some(overhead) = ratio.and_then(crate::stats::overhead)
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
        let [workload, mode, tasks, placement, cpu, rate, ratio] =
            ["workload", "mode", "tasks", "placement", "cpu", "faults_per_sec", "ratio_vs_root"].map(column);
        let (workload, mode, tasks, placement, cpu, rate, ratio) =
            (workload?, mode?, tasks?, placement?, cpu?, rate?, ratio?);
        let mut file = RunFile { name: name.clone(), ..Default::default() };
        for (line, record) in reader.records().enumerate() {
            let record = record.with_context(|| format!("{name}: row {}", line + 2))?;
            if !record[cpu].is_empty() {
                continue; // --per-cpu rows
            }
            let number = |i: usize| -> Result<f64> {
                record[i].parse().map_err(|_| anyhow!("{name}: row {}: {:?} is not a number", line + 2, &record[i]))
            };
            let tasks_count = number(tasks)? as u64;
            let k = key(&record[workload], &record[mode], tasks_count, &record[placement]);
            let ratio_value = if record[ratio].is_empty() { None } else { Some(number(ratio)?) };
            if let Some(depth) = depth_column.and_then(|i| record[i].parse().ok()) {
                file.depths.insert(record[placement].to_string(), depth);
            }
            file.add(k, number(rate)?, ratio_value);
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
            let rate =
                m["faults_per_sec"].as_f64().ok_or_else(|| anyhow!("{name}: a measurement lacks faults_per_sec"))?;
            if let Some(depth) = m["depth"].as_u64() {
                file.depths.insert(placement.to_string(), depth);
            }
            file.add(key(workload, mode, tasks, placement), rate, m["ratio_vs_root"].as_f64());
        }
        let env = &document["environment"];
        for fact in FACTS {
            if let Some(value) = env[fact].as_str() {
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
    fn foreign_files_are_refused_with_the_reason() {
        let err = RunFile::from_csv("x.csv".into(), "a,b\n1,2\n").unwrap_err().to_string();
        assert!(err.contains("no workload column"), "{err}");
        let err = RunFile::from_json("x.json".into(), "{}").unwrap_err().to_string();
        assert!(err.contains("settings.workload"), "{err}");
    }
}
