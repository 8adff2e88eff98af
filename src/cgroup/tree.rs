//! The cgroups one run creates, and their removal on every exit path.
//!
//! Each placement below the base gets its own top directory, `faultscale-<pid>-<nonce>-<label>`,
//! directly in the base, so `child` really is one level below the base (as in the 2009
//! measurement) and `nested:N` is N levels: no wrapper directory adds a level of memcg
//! hierarchy that the depth column would not show.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};

use super::base::{memory_available, memory_delegated};
use super::fs as cgfs;
use super::knobs::{Knob, writes_for};
use super::{Hierarchy, Version};

/// What one placement needs built: a label for its directory name and notes, where it came
/// from (for errors), and its knobs per level below the base (`levels.len()` is its depth; no
/// levels is the base itself).
#[derive(Debug, Clone, Copy)]
pub struct LeafSpec<'a> {
    pub label: &'a str,
    pub origin: &'a str,
    pub levels: &'a [Vec<Knob>],
}

/// The cgroup one placement's workers run in.
#[derive(Debug, Clone)]
pub struct Leaf {
    pub fs_path: PathBuf,
    /// Hierarchy-relative, as /proc/PID/cgroup shows it.
    pub cgroup_path: String,
}

/// A knob file written for a placement, with what the kernel reads back (it rounds some).
#[derive(Debug, Clone, serde::Serialize)]
pub struct AppliedKnob {
    pub placement: String,
    pub cgroup_path: String,
    pub knob: String,
    pub file: String,
    pub written: String,
    pub read_back: String,
}

pub struct Tree {
    hierarchy: Hierarchy,
    base: PathBuf,
    run_name: String,
    /// In creation order, parents before children; removed in reverse.
    created: Vec<PathBuf>,
    /// Shared locks on this run's top directories: they say "alive" to `faultscale cleanup` in
    /// any PID namespace or container, and vanish with the process however it dies.
    liveness: Vec<std::fs::File>,
    /// Set when this run added `memory` to the base's cgroup.subtree_control (v2), so it can
    /// take it away again.
    enabled_memory_in_base: bool,
    applied: Vec<AppliedKnob>,
    /// The process that built the tree: only it removes it, never a forked copy.
    owner: u32,
}

impl Tree {
    pub fn new(hierarchy: Hierarchy, base: PathBuf, run_name: String) -> Self {
        Tree {
            hierarchy,
            base,
            run_name,
            created: Vec::new(),
            liveness: Vec::new(),
            enabled_memory_in_base: false,
            applied: Vec::new(),
            owner: std::process::id(),
        }
    }

    /// The one thing the tree changed outside its own directories, for the user to read: the
    /// base's cgroup.subtree_control, when this run added memory to it (v2).
    pub fn changed_outside(&self) -> Option<PathBuf> {
        self.enabled_memory_in_base.then(|| self.base.join("cgroup.subtree_control"))
    }

    pub fn take_applied(&mut self) -> Vec<AppliedKnob> {
        std::mem::take(&mut self.applied)
    }

    /// Creates every placement's cgroups up front, so any cgroup error ends the run before a
    /// worker exists. Every knob is mapped to this version first, so a profile that cannot be
    /// built here fails before anything is created.
    pub fn build_all(&mut self, placements: &[LeafSpec]) -> Result<Vec<Leaf>> {
        for (i, a) in placements.iter().enumerate() {
            if let Some(b) = placements[i + 1..].iter().find(|b| dir_label(b.label) == dir_label(a.label)) {
                bail!(
                    "--cgroup: {} and {} would share the directory name ...-{}; list one of them, or rename the profile",
                    a.origin,
                    b.origin,
                    dir_label(a.label)
                );
            }
        }
        for placement in placements {
            for (index, level) in placement.levels.iter().enumerate() {
                writes_for(level, self.hierarchy.version)
                    .map_err(|e| anyhow!("--cgroup {}: level {}: {e}", placement.origin, index + 1))?;
            }
        }
        if self.hierarchy.version == Version::V2 {
            self.check_v2_base(placements)?;
        }
        placements.iter().map(|p| self.build(p)).collect()
    }

    fn check_v2_base(&mut self, placements: &[LeafSpec]) -> Result<()> {
        if !memory_available(&self.base)? {
            bail!(
                "--base {}: the memory controller is not enabled here (its parent's cgroup.subtree_control lacks memory); enable it there or pick another base",
                self.base.display()
            );
        }
        if placements.iter().all(|p| p.levels.is_empty()) {
            return Ok(());
        }
        if placements.iter().any(|p| p.levels.is_empty()) && !self.hierarchy.is_root(&self.base) {
            bail!(
                "--base {}: on cgroup v2 a non-root cgroup cannot hold the baseline's workers while its children use memory (no-internal-processes rule); use --base root, or --no-baseline to compare placements only",
                self.base.display()
            );
        }
        let subtree_control = self.base.join("cgroup.subtree_control");
        if memory_delegated(&self.base)? {
            return Ok(());
        }
        if let Err(e) = cgfs::write(&subtree_control, "+memory") {
            let busy = e.root_cause().downcast_ref::<std::io::Error>().map(|io| io.raw_os_error() == Some(libc::EBUSY));
            if busy == Some(true) || cgfs::has_processes(&self.base).unwrap_or(false) {
                bail!(
                    "--base {}: cannot enable memory for child cgroups while this cgroup holds processes (cgroup v2 no-internal-processes rule); move them to a leaf first (mkdir {0}/shell; echo $$ > {0}/shell/cgroup.procs) and run again",
                    self.base.display()
                );
            }
            return Err(e);
        }
        self.enabled_memory_in_base = true;
        if !memory_delegated(&self.base)? {
            bail!("{}: wrote +memory but it does not read back", subtree_control.display());
        }
        Ok(())
    }

    fn build(&mut self, placement: &LeafSpec) -> Result<Leaf> {
        if placement.levels.is_empty() {
            return Ok(Leaf { fs_path: self.base.clone(), cgroup_path: self.hierarchy.cgroup_path(&self.base) });
        }
        let mut dir = self.base.join(format!("{}-{}", self.run_name, dir_label(placement.label)));
        let depth = placement.levels.len();
        for (index, knobs) in placement.levels.iter().enumerate() {
            let level = index + 1;
            if level > 1 {
                dir = dir.join(format!("level{level}"));
            }
            std::fs::create_dir(&dir).map_err(|e| anyhow!("creating cgroup {}: {e}", dir.display()))?;
            self.created.push(dir.clone());
            if level == 1 {
                self.liveness.push(super::cleanup::hold(&dir)?);
            }
            match self.hierarchy.version {
                Version::V1 => {
                    if !dir.join("memory.stat").is_file() {
                        bail!("{}: created, but it has no memory.stat; is this the memory hierarchy?", dir.display());
                    }
                }
                Version::V2 => {
                    if !memory_available(&dir)? {
                        bail!("{}: created, but memory is not among its cgroup.controllers", dir.display());
                    }
                    if level < depth {
                        let control = dir.join("cgroup.subtree_control");
                        cgfs::write(&control, "+memory")?;
                        if !memory_delegated(&dir)? {
                            bail!("{}: wrote +memory but it does not read back", control.display());
                        }
                    }
                }
            }
            for write in writes_for(knobs, self.hierarchy.version)? {
                let file = dir.join(&write.file);
                if !file.is_file() {
                    bail!(
                        "{}: no such knob file here; the kernel lacks {} (see `faultscale env`)",
                        file.display(),
                        write.knob
                    );
                }
                cgfs::write(&file, &write.value)?;
                let read_back = cgfs::read(&file)?.trim().to_string();
                self.applied.push(AppliedKnob {
                    placement: placement.label.to_string(),
                    cgroup_path: self.hierarchy.cgroup_path(&dir),
                    knob: write.knob,
                    file: write.file,
                    written: write.value,
                    read_back,
                });
            }
        }
        Ok(Leaf { cgroup_path: self.hierarchy.cgroup_path(&dir), fs_path: dir })
    }

    /// Removes everything this run created, deepest first. Safe to call twice. A cgroup whose
    /// last task was just killed can answer EBUSY for a moment, so each rmdir is retried briefly.
    pub fn remove(&mut self) -> Result<()> {
        let mut failures = Vec::new();
        while let Some(dir) = self.created.pop() {
            if let Err(e) = remove_cgroup_dir(&dir) {
                failures.push(format!("{}: {e}", dir.display()));
            }
        }
        if self.enabled_memory_in_base {
            self.enabled_memory_in_base = false;
            let control = self.base.join("cgroup.subtree_control");
            if let Err(e) = cgfs::write(&control, "-memory") {
                failures.push(format!("{}: could not disable memory again: {e:#}", control.display()));
            }
        }
        if failures.is_empty() {
            Ok(())
        } else {
            bail!("could not remove: {}; run `faultscale cleanup` once they are empty", failures.join("; "))
        }
    }
}

/// A placement's label as it appears in its directory name: letters and digits only.
fn dir_label(label: &str) -> String {
    label.chars().filter(|c| c.is_ascii_alphanumeric()).collect()
}

/// rmdir with a short retry on EBUSY (tasks still exiting). Never recursive: a cgroup with
/// children or processes that are not ours stays.
pub fn remove_cgroup_dir(dir: &Path) -> std::io::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(e),
        }
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        if std::process::id() != self.owner {
            return;
        }
        if let Err(e) = self.remove() {
            say!("faultscale: warning: {e:#}");
        }
    }
}
