//! The cgroups one run creates, and their removal on every exit path.
//!
//! Each placement gets its own top directory, `faultscale-<pid>-<nonce>-<label>`, directly in
//! the base, so `child` is exactly one level below the baseline and `nested:N` N levels:
//!
//! - At the hierarchy's true root, and on v1 anywhere, the baseline runs in the base itself
//!   and a placement's levels start at its top directory.
//! - On v2 below the true root, a cgroup cannot hold processes while its children use memory
//!   (the no-internal-processes rule). There the baseline runs in a leaf of its own,
//!   `...-base`, and each placement's top directory is a knob-less sibling of that leaf, its
//!   levels (`level1`, `level2`, ...) below: still exactly one level per step from the
//!   baseline. faultscale moves itself (and only itself) into a leaf `...-harness` first, and
//!   back at the end, so the base is left as it was found.

use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow, bail};

use super::base::{foreign_processes, memory_available, memory_delegated};
use super::fs::{self as cgfs, remove_cgroup_dir};
use super::knobs::{Knob, writes_for};
use super::lock;
use super::{Hierarchy, Version};
use crate::error;

/// What one placement needs built: a label for its directory name and notes, where it came
/// from (for errors), and its knobs per level below the base (`levels.len()` is its depth; no
/// levels is the base itself).
#[derive(Debug, Clone, Copy)]
pub struct LeafSpec<'a> {
    pub label: &'a str,
    pub origin: &'a str,
    pub levels: &'a [Vec<Knob>],
    /// `siblings:N`: N knob-less sibling cgroups under the deepest level (0: none).
    pub siblings: u32,
}

/// The cgroup one placement's workers run in.
#[derive(Debug, Clone)]
pub struct Leaf {
    pub fs_path: PathBuf,
    /// Hierarchy-relative, as /proc/PID/cgroup shows it.
    pub cgroup_path: String,
    /// `siblings:N`: the N cgroups the workers are spread over (this leaf is their parent).
    pub siblings: Vec<Leaf>,
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
    /// Directories the harness itself lives in (its leaf, a `--base new` cgroup), removed
    /// after it has moved back out, outermost last.
    own_dirs: Vec<PathBuf>,
    /// Shared locks on this run's top directories: they say "alive" to `faultscale cleanup` in
    /// any PID namespace or container, and vanish with the process however it dies.
    liveness: Vec<std::fs::File>,
    /// Set when this run added `memory` to the base's cgroup.subtree_control (v2), so it can
    /// take it away again.
    enabled_memory_in_base: bool,
    /// v2 below the true root: the baseline runs in a leaf, placements one level further.
    baseline_in_leaf: bool,
    /// The cgroup the harness moved out of, to go back to at the end.
    harness_home: Option<PathBuf>,
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
            own_dirs: Vec::new(),
            liveness: Vec::new(),
            enabled_memory_in_base: false,
            baseline_in_leaf: false,
            harness_home: None,
            applied: Vec::new(),
            owner: std::process::id(),
        }
    }

    /// The base the placements are built in (for `--base new`, the cgroup made for the run).
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// The one thing the tree changed outside its own directories, for the user to read: the
    /// base's cgroup.subtree_control, when this run added memory to it (v2).
    pub fn changed_outside(&self) -> Option<PathBuf> {
        let own_base = self.own_dirs.first().is_some_and(|first| first == &self.base);
        (self.enabled_memory_in_base && !own_base).then(|| self.base.join("cgroup.subtree_control"))
    }

    pub fn take_applied(&mut self) -> Vec<AppliedKnob> {
        std::mem::take(&mut self.applied)
    }

    /// Levels between the hierarchy's root and the cgroup the baseline runs (or would run) in:
    /// a row's memcg depth is this plus its `depth`.
    pub fn baseline_depth(&self) -> usize {
        let base = self.hierarchy.cgroup_path(&self.base);
        base.split('/').filter(|part| !part.is_empty()).count() + usize::from(self.baseline_in_leaf)
    }

    /// `--base new`: a cgroup of the run's own, made in the current base, into which the
    /// harness moves (only itself); it becomes the base and goes at the end.
    pub fn make_own_base(&mut self) -> Result<()> {
        let dir = self.base.join(format!("{}-new", self.run_name));
        self.make_own_dir(&dir)?;
        self.base = dir;
        Ok(())
    }

    fn make_own_dir(&mut self, dir: &Path) -> Result<()> {
        std::fs::create_dir(dir).map_err(|e| anyhow!("creating cgroup {}: {e}", dir.display()))?;
        self.own_dirs.push(dir.to_path_buf());
        self.liveness.push(lock::hold(dir)?);
        let home = own_cgroup_dir(&self.hierarchy)?;
        cgfs::write(&dir.join("cgroup.procs"), &std::process::id().to_string())
            .map_err(|e| anyhow!("moving faultscale itself into {}: {e:#}", dir.display()))?;
        self.harness_home.get_or_insert(home);
        Ok(())
    }

    /// Creates every placement's cgroups up front, `instances` sets of them (one per crew
    /// generation, `...-<label>-g<N>` where more than one, all alive together so no instance
    /// reuses another's freed memory), so any cgroup error ends the run before a worker
    /// exists. Every knob is mapped to this version first, so a profile that cannot be built
    /// here fails before anything is created. One `Vec<Leaf>` per instance.
    pub fn build_instances(&mut self, placements: &[LeafSpec], instances: u32) -> Result<Vec<Vec<Leaf>>> {
        for (i, a) in placements.iter().enumerate() {
            if let Some(b) = placements[i + 1..].iter().find(|b| dir_label(b.label) == dir_label(a.label)) {
                return Err(error::usage(anyhow!(
                    "--cgroup: {} and {} would share the directory name ...-{}; list one of them, or rename the profile",
                    a.origin,
                    b.origin,
                    dir_label(a.label)
                )));
            }
        }
        for placement in placements {
            for (index, level) in placement.levels.iter().enumerate() {
                writes_for(level, self.hierarchy.version)
                    .map_err(|e| error::usage(anyhow!("--cgroup {}: level {}: {e}", placement.origin, index + 1)))?;
            }
        }
        if self.hierarchy.version == Version::V2 {
            self.prepare_v2_base()?;
        }
        (1..=instances.max(1))
            .map(|instance| {
                let suffix = if instances > 1 { format!("-g{instance}") } else { String::new() };
                placements.iter().map(|p| self.build(p, &suffix)).collect()
            })
            .collect()
    }

    /// v2: the base must offer memory; below the true root it must hold no process but
    /// faultscale itself, which moves into a leaf so the base can give memory to children.
    fn prepare_v2_base(&mut self) -> Result<()> {
        if !memory_available(&self.base)? {
            return Err(error::usage(anyhow!(
                "--base {}: the memory controller is not enabled here (its parent's cgroup.subtree_control lacks memory); enable it there or pick another base",
                self.base.display()
            )));
        }
        if self.hierarchy.is_root(&self.base) {
            return self.enable_memory_in_base();
        }
        let others = foreign_processes(&self.base)?;
        if others > 0 {
            // The user's --base choice cannot work here: a usage error (exit 2), like any other.
            return Err(error::usage(anyhow!(
                "--base {}: holds {others} process(es) faultscale did not start, and cgroup v2 lets a cgroup hold processes or memory-using children, not both (no-internal-processes rule); use --base new (a cgroup of faultscale's own), or run it in a delegated scope: systemd-run --scope -p Delegate=yes faultscale --base self ...",
                self.base.display()
            )));
        }
        if others < cgfs::process_count(&self.base)? {
            let leaf = self.base.join(format!("{}-harness", self.run_name));
            self.make_own_dir(&leaf)?;
        }
        self.baseline_in_leaf = true;
        self.enable_memory_in_base()
    }

    fn enable_memory_in_base(&mut self) -> Result<()> {
        if memory_delegated(&self.base)? {
            return Ok(());
        }
        let subtree_control = self.base.join("cgroup.subtree_control");
        cgfs::write(&subtree_control, "+memory")?;
        self.enabled_memory_in_base = true;
        if !memory_delegated(&self.base)? {
            bail!("{}: wrote +memory but it does not read back", subtree_control.display());
        }
        Ok(())
    }

    fn build(&mut self, placement: &LeafSpec, suffix: &str) -> Result<Leaf> {
        if placement.levels.is_empty() && !self.baseline_in_leaf {
            return Ok(Leaf {
                fs_path: self.base.clone(),
                cgroup_path: self.hierarchy.cgroup_path(&self.base),
                siblings: Vec::new(),
            });
        }
        // From the top down, each directory with its knobs; the baseline-depth sibling that
        // tops a placement on v2 below the root has none.
        let top = self.base.join(format!("{}-{}{suffix}", self.run_name, dir_label(placement.label)));
        let mut dirs: Vec<(PathBuf, &[Knob])> = Vec::new();
        if self.baseline_in_leaf {
            dirs.push((top.clone(), &[]));
        }
        let mut dir = top;
        for (index, knobs) in placement.levels.iter().enumerate() {
            if self.baseline_in_leaf || index > 0 {
                dir = dir.join(format!("level{}", index + 1));
            }
            dirs.push((dir.clone(), knobs));
        }
        let count = dirs.len();
        for (index, (dir, knobs)) in dirs.iter().enumerate() {
            self.make_dir(dir, index + 1 < count || placement.siblings > 0, knobs, placement.label)?;
            if index == 0 {
                self.liveness.push(lock::hold(dir)?);
            }
        }
        let mut siblings = Vec::new();
        for number in 1..=placement.siblings {
            let sibling = dir.join(format!("sibling{number}"));
            self.make_dir(&sibling, false, &[], placement.label)?;
            siblings.push(Leaf {
                cgroup_path: self.hierarchy.cgroup_path(&sibling),
                fs_path: sibling,
                siblings: Vec::new(),
            });
        }
        Ok(Leaf { cgroup_path: self.hierarchy.cgroup_path(&dir), fs_path: dir, siblings })
    }

    /// One directory of a placement: created, checked to be a memory cgroup, memory passed to
    /// its children where it has some (v2), knobs written and read back.
    fn make_dir(&mut self, dir: &Path, has_children: bool, knobs: &[Knob], label: &str) -> Result<()> {
        std::fs::create_dir(dir).map_err(|e| anyhow!("creating cgroup {}: {e}", dir.display()))?;
        self.created.push(dir.to_path_buf());
        match self.hierarchy.version {
            Version::V1 => {
                if !dir.join("memory.stat").is_file() {
                    bail!("{}: created, but it has no memory.stat; is this the memory hierarchy?", dir.display());
                }
            }
            Version::V2 => {
                if !memory_available(dir)? {
                    bail!("{}: created, but memory is not among its cgroup.controllers", dir.display());
                }
                if has_children {
                    let control = dir.join("cgroup.subtree_control");
                    cgfs::write(&control, "+memory")?;
                    if !memory_delegated(dir)? {
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
                placement: label.to_string(),
                cgroup_path: self.hierarchy.cgroup_path(dir),
                knob: write.knob,
                file: write.file,
                written: write.value,
                read_back,
            });
        }
        Ok(())
    }

    /// Removes everything this run created, deepest first, and puts the harness back where it
    /// started. Safe to call twice. A cgroup whose last task was just killed can answer EBUSY
    /// for a moment, so each rmdir is retried briefly.
    pub fn remove(&mut self) -> Result<()> {
        let mut failures = Vec::new();
        while let Some(dir) = self.created.pop() {
            if let Err(e) = remove_cgroup_dir(&dir) {
                failures.push(format!("{}: {e}", dir.display()));
            }
        }
        // Memory off first: the base may take its process back only without memory children.
        if self.enabled_memory_in_base {
            self.enabled_memory_in_base = false;
            let control = self.base.join("cgroup.subtree_control");
            if let Err(e) = cgfs::write(&control, "-memory") {
                failures.push(format!("{}: could not disable memory again: {e:#}", control.display()));
            }
        }
        if let Some(home) = self.harness_home.take()
            && let Err(e) = cgfs::write(&home.join("cgroup.procs"), &std::process::id().to_string())
        {
            failures.push(format!("moving faultscale back to {}: {e:#}", home.display()));
        }
        while let Some(dir) = self.own_dirs.pop() {
            if let Err(e) = remove_cgroup_dir(&dir) {
                failures.push(format!("{}: {e}", dir.display()));
            }
        }
        self.liveness.clear();
        if failures.is_empty() {
            Ok(())
        } else {
            bail!("could not remove: {}; run `faultscale cleanup` once they are empty", failures.join("; "))
        }
    }
}

/// The directory of the cgroup this process is in.
fn own_cgroup_dir(hierarchy: &Hierarchy) -> Result<PathBuf> {
    let path = super::layout::cgroup_of(std::process::id() as i32, hierarchy)?;
    hierarchy
        .fs_path(&path)
        .ok_or_else(|| anyhow!("this process's cgroup {path} is not under {}", hierarchy.mount_point.display()))
}

/// A placement's label as it appears in its directory name: letters and digits only.
fn dir_label(label: &str) -> String {
    label.chars().filter(|c| c.is_ascii_alphanumeric()).collect()
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
