//! Output formats, one a file, and the output file that is either complete or absent.

pub mod csv;
pub mod json;
pub mod markdown;
pub mod plot;
pub mod table;

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::compare::Change;

/// Where an output goes, as the command line named it.
#[derive(Debug, Clone)]
pub enum OutputPath {
    Stdout,
    File(PathBuf),
}

impl OutputPath {
    /// `-` is stdout.
    pub fn parse(text: &str) -> Self {
        if text == "-" { OutputPath::Stdout } else { OutputPath::File(PathBuf::from(text)) }
    }
}

/// How `compare` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Csv,
    Markdown,
}

pub fn comparison(out: &mut dyn Write, changes: &[Change], format: Format) -> Result<()> {
    match format {
        Format::Table => table::comparison(out, changes),
        Format::Csv => csv::write(out, changes),
        Format::Markdown => markdown::comparison(out, changes),
    }
}

/// `*` where the change is significant, `?` where a side has one repetition.
fn mark(change: &Change) -> &'static str {
    match change.significant {
        "yes" => "*",
        "?" => "?",
        _ => "",
    }
}

fn pct(value: Option<f64>) -> String {
    value.map(|v| format!("{v:.1}%")).unwrap_or_else(|| "-".into())
}

/// A file written under a temporary name beside its destination and renamed into place only
/// when complete; dropped uncommitted, it is removed. Created before any worker starts, so an
/// unwritable path fails the run early.
pub struct PendingFile {
    destination: PathBuf,
    temporary: PathBuf,
    file: Option<File>,
}

impl PendingFile {
    pub fn create(option: &str, destination: &Path) -> Result<Self> {
        if destination.is_dir() {
            bail!("{option} {}: is a directory; give a file name", destination.display());
        }
        let Some(name) = destination.file_name() else {
            bail!("{option} {}: not a file name", destination.display());
        };
        let parent = destination.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let temporary = parent.join(format!(".{}.faultscale-{}.tmp", name.to_string_lossy(), std::process::id()));
        let file = File::create(&temporary).with_context(|| {
            format!("{option} {}: cannot create a file in {}", destination.display(), parent.display())
        })?;
        Ok(PendingFile { destination: destination.to_path_buf(), temporary, file: Some(file) })
    }

    pub fn writer(&mut self) -> &mut File {
        self.file.as_mut().expect("writer used after commit")
    }

    pub fn commit(mut self) -> Result<()> {
        let mut file = self.file.take().expect("committed once");
        file.flush()?;
        drop(file);
        std::fs::rename(&self.temporary, &self.destination)
            .with_context(|| format!("renaming {} to {}", self.temporary.display(), self.destination.display()))
    }
}

impl Drop for PendingFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.temporary);
        }
    }
}

/// Where one output goes: stdout, or a pending file.
pub enum Sink {
    Stdout,
    File(PendingFile),
}

impl Sink {
    pub fn open(option: &str, path: &OutputPath) -> Result<Self> {
        Ok(match path {
            OutputPath::Stdout => Sink::Stdout,
            OutputPath::File(path) => Sink::File(PendingFile::create(option, path)?),
        })
    }

    pub fn write_with(self, write: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
        match self {
            Sink::Stdout => {
                let stdout = std::io::stdout();
                let mut lock = stdout.lock();
                write(&mut lock)?;
                lock.flush()?;
                Ok(())
            }
            Sink::File(mut pending) => {
                write(pending.writer())?;
                pending.commit()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparison_formats_render() {
        let change = Change {
            workload: "anon".into(),
            mode: "process".into(),
            tasks: 2,
            placement: "child".into(),
            new_file: "b.csv".into(),
            base_mean: 100_000.0,
            new_mean: 90_000.0,
            change_pct: -10.0,
            significant: "yes",
            base_cv_pct: 1.0,
            new_cv_pct: 2.0,
            base_overhead_pct: Some(105.0),
            new_overhead_pct: Some(110.0),
            overhead_change_points: Some(5.0),
        };
        for (format, expected) in [
            (Format::Table, "-10.00%*"),
            (Format::Csv, "anon,process,2,child,b.csv,100000.0,90000.0,-10.0,yes"),
            (Format::Markdown, "| -10.00%* |"),
        ] {
            let mut out = Vec::new();
            comparison(&mut out, std::slice::from_ref(&change), format).unwrap();
            let text = String::from_utf8(out).unwrap();
            assert!(text.contains(expected), "{format:?}: {text}");
        }
    }
}
