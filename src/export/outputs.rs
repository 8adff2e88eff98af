//! The files a run writes, over their life: resolved and opened before anything is measured
//! (each through a `Sink`, clashes refused), rewritten after slices as checkpoints, written
//! whole at the end with the `--profile-dir` flame graphs. Each file is one of the
//! `EXPORTERS`, told the report and the `Settings`, never the options.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::{Exporter, Settings, flamegraph};
use crate::error;
use crate::plan::Plan;
use crate::report::Report;
use crate::sink::{self, OutputPath, Sink};

/// One file a run writes, in its format.
struct Output {
    format: &'static dyn Exporter,
    sink: Sink,
    /// The slices a checkpoint put in it: the final write must replace them even when a stop
    /// signal left no round complete, and where that write fails, the file still holds them.
    checkpointed: Option<usize>,
    /// Whether a write of this run has replaced a file that existed before it.
    replaced: bool,
}

/// The files a run writes: opened before it starts, rewritten after every slice, written whole
/// at the end.
pub struct Outputs {
    files: Vec<Output>,
    settings: Settings,
    profile_dir: Option<PathBuf>,
    /// The lock that marks --profile-dir as this run's (`claim_directory`), held to the end.
    _profile_claim: Option<std::fs::File>,
    checkpoint_failed: bool,
    /// When the last checkpoint was written and how long it took: checkpoints are spaced so
    /// that writing them costs at most 1/CHECKPOINT_SHARE of the run (a file rewritten after
    /// each of a thousand 0.1 s slices took longer than the slices: 83 s for 30 s measured).
    last_checkpoint: Option<(std::time::Instant, std::time::Duration)>,
}

/// Checkpoints come at most every 2 s, and at most one part in this of the run's time goes
/// to writing them.
const CHECKPOINT_SHARE: u32 = 100;

impl Outputs {
    /// Each of `outputs` resolved and opened, every clash refused as the user's input (an
    /// output that is a `--cgroup` profile, a `--profile-dir` flame graph or another output),
    /// and `--profile-dir` claimed: before anything is created, so a bad path costs nothing.
    pub fn open(outputs: &[(&'static dyn Exporter, OutputPath)], plan: &Plan, settings: Settings) -> Result<Self> {
        let mut files = Vec::new();
        for (format, path) in outputs {
            let sink = Sink::open(&format!("--{}", format.option()), path).map_err(error::usage)?;
            for profile in plan.placements.iter().filter_map(|p| p.profile.as_deref()) {
                sink.refuse_input(&format!("the --cgroup profile {profile}"), Path::new(profile))
                    .map_err(error::usage)?;
            }
            refuse_profile_files(plan, &sink).map_err(error::usage)?;
            files.push(Output { format: *format, sink, checkpointed: None, replaced: false });
        }
        Sink::check_distinct(&mut files.iter_mut().map(|f| &mut f.sink).collect::<Vec<_>>()).map_err(error::usage)?;
        Ok(Outputs {
            files,
            settings,
            profile_dir: plan.profile_dir.clone(),
            _profile_claim: match &plan.profile_dir {
                Some(dir) => sink::claim_directory(dir)
                    .map_err(|e| error::usage(anyhow::anyhow!("--profile-dir {}: {e}", dir.display())))?,
                None => None,
            },
            checkpoint_failed: false,
            last_checkpoint: None,
        })
    }

    /// Whether any output file was asked for.
    pub fn any(&self) -> bool {
        !self.files.is_empty()
    }

    /// Whether an output writes to standard output (`-`, /dev/stdout, the same terminal).
    pub fn share_stdout(&self) -> bool {
        self.files.iter().any(|f| f.sink.shares_stdout())
    }

    /// Every file rewritten with the report so far; a file that cannot be is written at the end.
    pub fn checkpoint(&mut self, report: &Report) {
        let now = std::time::Instant::now();
        if let Some((at, took)) = self.last_checkpoint
            && now.duration_since(at) < (took * CHECKPOINT_SHARE).max(std::time::Duration::from_secs(2))
        {
            return;
        }
        let settings = self.settings;
        let mut errors = Vec::new();
        for file in &mut self.files {
            match file.sink.checkpoint(|out| file.format.write(out, report, &settings)) {
                // A stream takes no checkpoint: it keeps nothing but what the end writes.
                Ok(()) if file.sink.is_stream() => {}
                Ok(()) => {
                    file.checkpointed = Some(report.measurements.len());
                    file.replaced = file.sink.existing_file().is_some();
                }
                Err(e) => errors.push(e),
            }
        }
        self.last_checkpoint = Some((std::time::Instant::now(), now.elapsed()));
        for error in errors {
            if !self.checkpoint_failed {
                say!("faultscale: warning: {error:#}; faultscale tries it again at the end");
            }
            self.checkpoint_failed = true;
        }
    }

    /// The final files and flame graphs; false when one could not be written (each said).
    /// A file is written when there are measurements, when a checkpoint put slices in it that
    /// a stop signal voided (then it holds what the report holds, none of them), or when every
    /// placement failed: then the JSON, whose `failures` and state `failed` are the run's
    /// result (a CSV's rows carry no failure, and there is no row).
    pub fn write(self, report: &Report) -> bool {
        let mut all_written = true;
        let mut replaced = Vec::new();
        for file in self.files {
            let stream = file.sink.is_stream();
            let existing = file.sink.existing_file().map(str::to_string);
            let destination = file.sink.destination().map(Path::to_path_buf);
            let failures_only = report.measurements.is_empty() && !report.failures.is_empty();
            let written = (!report.measurements.is_empty()
                || file.checkpointed.is_some()
                || (failures_only && file.format.records_failures()))
            .then(|| file.sink.write_with(|out| file.format.write(out, report, &self.settings)));
            if let Some(existing) = existing
                && (file.replaced || matches!(written, Some(Ok(()))))
            {
                replaced.push(existing);
            }
            if let Some(Err(e)) = written {
                let kept = kept_note(stream, file.checkpointed, report.measurements.len(), destination.as_deref());
                say!("faultscale: error: {e:#}{kept}");
                all_written = false;
            }
        }
        // A file the user had is gone: one line names each, so none is lost unsaid.
        if !replaced.is_empty() {
            say!("faultscale: replaced the existing {}", replaced.join(", "));
        }
        if let Some(dir) = &self.profile_dir
            && !report.measurements.is_empty()
        {
            match flamegraph::write(dir, report) {
                Ok(written) => say!("faultscale: wrote {} profile files in {}", written.len(), dir.display()),
                Err(e) => {
                    say!("faultscale: error: {e:#}");
                    all_written = false;
                }
            }
        }
        all_written
    }
}

/// What a file whose final write failed still holds: the last checkpoint, which not every
/// format marks as partial (the samples have no state column), where that file is still there;
/// a directory removed during the run took it along, and the slices are kept nowhere there.
fn kept_note(stream: bool, checkpointed: Option<usize>, measured: usize, destination: Option<&Path>) -> String {
    match checkpointed {
        _ if stream => "; what reached the stream is incomplete".to_string(),
        Some(_) if destination.is_some_and(|d| !d.is_file()) => {
            format!(
                "; its checkpoint is gone too (no file there now): none of the {measured} slices measured is kept in it"
            )
        }
        Some(slices) => format!("; the file keeps the checkpoint of {slices} of the {measured} slices measured"),
        None => String::new(),
    }
}

/// Refuses an output that is one of the flame-graph files --profile-dir will get: the graph
/// written at the end would replace it.
fn refuse_profile_files(plan: &Plan, sink: &Sink) -> Result<()> {
    let Some(dir) = &plan.profile_dir else { return Ok(()) };
    for name in flamegraph::file_names(plan) {
        sink.refuse_place(&format!("--profile-dir {} (its {name})", dir.display()), &dir.join(&name))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Failure, fixture};
    use crate::sink::OutputPath;

    #[test]
    fn a_checkpoint_whose_directory_went_is_not_said_to_be_kept() {
        // Before: "writing --csv gone/g.csv: linking the finished file: No such file or
        // directory; the file keeps the checkpoint of 1 of the 6 slices measured", with no
        // file and no directory left.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("gone").join("g.csv");
        std::fs::create_dir(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "a checkpoint\n").unwrap();
        assert_eq!(
            kept_note(false, Some(1), 6, Some(&file)),
            "; the file keeps the checkpoint of 1 of the 6 slices measured"
        );
        std::fs::remove_dir_all(file.parent().unwrap()).unwrap();
        let said = kept_note(false, Some(1), 6, Some(&file));
        assert_eq!(
            said,
            "; its checkpoint is gone too (no file there now): none of the 6 slices measured is kept in it"
        );
        assert_eq!(kept_note(true, None, 6, None), "; what reached the stream is incomplete");
        assert_eq!(kept_note(false, None, 6, Some(&file)), "");
    }

    #[test]
    fn a_run_whose_every_placement_failed_still_writes_its_record() {
        let mut report = fixture::synthetic_report(&[]);
        report.finished = true;
        report.failures.push(Failure {
            placement: report.plan.placements[1].clone(),
            tasks: 2,
            round: 1,
            reason: "worker 7 on CPU 0 was killed by the OOM killer".into(),
        });
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("oom.json");
        let csv = dir.path().join("oom.csv");
        let outputs = [
            (super::super::EXPORTERS[1], OutputPath::File(json.clone())),
            (super::super::EXPORTERS[0], OutputPath::File(csv.clone())),
        ];
        let opened = Outputs::open(&outputs, &report.plan, Settings { per_cpu: false }).unwrap();
        assert!(opened.write(&report));
        let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(doc["state"], "failed", "{doc}");
        assert!(doc["failures"].to_string().contains("OOM killer"), "{doc}");
        assert!(!csv.exists(), "no CSV: a bare header would read as a run with nothing in it");
    }
}
