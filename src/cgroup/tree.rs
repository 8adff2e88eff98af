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
use super::fs::{self as cgfs, remove_cgroup_dir_by};
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

/// What the tree asks of the kernel beyond reading files. A plain directory is not a cgroupfs:
/// its mkdir makes no interface files, its rmdir refuses a directory holding them, a write
/// there is stored rather than acted on (`+memory`, a pid that moves its process), and the
/// test process's own cgroup is not in it. So the unit tests swap these four for a fake
/// cgroupfs's, and the tree's own logic runs there without root.
#[derive(Clone, Copy)]
struct Kernel {
    mkdir: fn(&Path) -> std::io::Result<()>,
    rmdir: fn(&Path) -> std::io::Result<()>,
    write: fn(&Path, &str) -> Result<()>,
    /// This process's cgroup, hierarchy-relative.
    own_cgroup: fn(&Hierarchy) -> Result<String>,
}

impl Kernel {
    const REAL: Kernel = Kernel {
        mkdir: |dir| std::fs::create_dir(dir),
        rmdir: |dir| std::fs::remove_dir(dir),
        write: cgfs::write,
        own_cgroup: |hierarchy| super::layout::cgroup_of(std::process::id() as i32, hierarchy),
    };
}

pub struct Tree {
    kernel: Kernel,
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
            kernel: Kernel::REAL,
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
        (self.kernel.mkdir)(dir).map_err(|e| anyhow!("creating cgroup {}: {e}", dir.display()))?;
        self.own_dirs.push(dir.to_path_buf());
        self.liveness.push(lock::hold(dir)?);
        let home = self.own_cgroup_dir()?;
        (self.kernel.write)(&dir.join("cgroup.procs"), &std::process::id().to_string())
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
        (self.kernel.write)(&subtree_control, "+memory")?;
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
        (self.kernel.mkdir)(dir).map_err(|e| anyhow!("creating cgroup {}: {e}", dir.display()))?;
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
                    (self.kernel.write)(&control, "+memory")?;
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
            (self.kernel.write)(&file, &write.value)?;
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

    /// The directory of the cgroup this process is in.
    fn own_cgroup_dir(&self) -> Result<PathBuf> {
        let path = (self.kernel.own_cgroup)(&self.hierarchy)?;
        self.hierarchy.fs_path(&path).ok_or_else(|| {
            anyhow!("this process's cgroup {path} is not under {}", self.hierarchy.mount_point.display())
        })
    }

    /// Removes everything this run created, deepest first, and puts the harness back where it
    /// started. Safe to call twice. A cgroup whose last task was just killed can answer EBUSY
    /// for a moment, so each rmdir is retried briefly.
    pub fn remove(&mut self) -> Result<()> {
        let mut failures = Vec::new();
        while let Some(dir) = self.created.pop() {
            if let Err(e) = remove_cgroup_dir_by(&dir, self.kernel.rmdir) {
                failures.push(format!("{}: {e}", dir.display()));
            }
        }
        // Memory off first: the base may take its process back only without memory children.
        if self.enabled_memory_in_base {
            self.enabled_memory_in_base = false;
            let control = self.base.join("cgroup.subtree_control");
            if let Err(e) = (self.kernel.write)(&control, "-memory") {
                failures.push(format!("{}: could not disable memory again: {e:#}", control.display()));
            }
        }
        if let Some(home) = self.harness_home.take()
            && let Err(e) = (self.kernel.write)(&home.join("cgroup.procs"), &std::process::id().to_string())
        {
            failures.push(format!("moving faultscale back to {}: {e:#}", home.display()));
        }
        while let Some(dir) = self.own_dirs.pop() {
            if let Err(e) = remove_cgroup_dir_by(&dir, self.kernel.rmdir) {
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

#[cfg(test)]
mod tests {
    use std::io::Error;

    use anyhow::Context;

    use super::*;

    const PROCS: &str = "cgroup.procs";
    const THREADS: &str = "cgroup.threads";
    const SUBTREE: &str = "cgroup.subtree_control";

    /// The interface files a fake mkdir makes: the cgroup core's, memory.stat, and the knobs the
    /// tests write, both versions' alike (each version's code reads only its own).
    const FILES: &[&str] =
        &[PROCS, THREADS, SUBTREE, "memory.stat", "memory.max", "memory.low", "memory.limit_in_bytes"];

    /// The fake's mkdir: the directory with its interface files, memory among its controllers
    /// where its parent passes memory on (v2's cgroup.controllers follows the parent's
    /// cgroup.subtree_control).
    fn mkdir(dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir(dir)?;
        for file in FILES {
            std::fs::write(dir.join(file), "")?;
        }
        let passed_on = std::fs::read_to_string(dir.parent().unwrap().join(SUBTREE)).unwrap_or_default();
        std::fs::write(dir.join("cgroup.controllers"), passed_on)
    }

    /// The fake's rmdir: EBUSY while a child cgroup or a process holds the directory, as the
    /// kernel answers; else it goes, its interface files with it. A vanished one: ENOENT.
    fn rmdir(dir: &Path) -> std::io::Result<()> {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_type()?.is_dir() || (entry.file_name() == PROCS && !lines(&entry.path()).is_empty()) {
                return Err(Error::from_raw_os_error(libc::EBUSY));
            }
            files.push(entry.path());
        }
        files.iter().try_for_each(std::fs::remove_file)?;
        std::fs::remove_dir(dir)
    }

    fn lines(file: &Path) -> Vec<String> {
        std::fs::read_to_string(file).unwrap_or_default().lines().map(str::to_string).collect()
    }

    /// The fake mount a directory is in: its outermost ancestor that is a cgroup.
    fn mount_of(dir: &Path) -> PathBuf {
        dir.ancestors().take_while(|d| d.join(PROCS).is_file()).last().unwrap().to_path_buf()
    }

    fn busy(path: &Path, value: &str) -> anyhow::Error {
        anyhow!("writing {value:?} to {}: {}", path.display(), Error::from_raw_os_error(libc::EBUSY))
    }

    /// The fake's write, acted on as the kernel does: `+memory` or `-memory` in
    /// cgroup.subtree_control, refused (EBUSY) while the cgroup holds a process below the root
    /// (v2's no-internal-processes rule); a pid in cgroup.procs moves that process out of every
    /// other cgroup of the mount, refused into a cgroup below the root that passes memory on;
    /// any other file takes the value. A file that is not there is not made.
    fn write(path: &Path, value: &str) -> Result<()> {
        let old = std::fs::read_to_string(path).with_context(|| format!("opening {} for writing", path.display()))?;
        let dir = path.parent().unwrap();
        let below_root = mount_of(dir) != dir;
        let new = match path.file_name().and_then(|n| n.to_str()) {
            Some(SUBTREE) => {
                if below_root && !lines(&dir.join(PROCS)).is_empty() {
                    return Err(busy(path, value));
                }
                let mut words: Vec<&str> = old.split_whitespace().filter(|w| *w != "memory").collect();
                match value {
                    "+memory" => words.push("memory"),
                    "-memory" => {}
                    _ => bail!("the fake cgroupfs takes +memory or -memory in {SUBTREE}, not {value:?}"),
                }
                words.join(" ")
            }
            Some(PROCS) => {
                if below_root && !words(&dir.join(SUBTREE)).is_empty() {
                    return Err(busy(path, value));
                }
                // Listed in cgroup.threads too, as a process of one thread is: the holder of a
                // busy cgroup is looked for there.
                let listed = |file: &Path, and: &str| {
                    lines(file).iter().filter(|pid| *pid != value).map(|pid| format!("{pid}\n")).collect::<String>()
                        + and
                };
                for file in walk(&mount_of(dir)).iter().flat_map(|d| [d.join(PROCS), d.join(THREADS)]) {
                    std::fs::write(&file, listed(&file, ""))?;
                }
                std::fs::write(dir.join(THREADS), listed(&dir.join(THREADS), &format!("{value}\n")))?;
                listed(path, &format!("{value}\n"))
            }
            _ => value.to_string(),
        };
        Ok(std::fs::write(path, new)?)
    }

    fn words(file: &Path) -> Vec<String> {
        std::fs::read_to_string(file).unwrap_or_default().split_whitespace().map(str::to_string).collect()
    }

    /// Every cgroup directory at and below `dir`.
    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut dirs = vec![dir.to_path_buf()];
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            if entry.file_type().unwrap().is_dir() {
                dirs.extend(walk(&entry.path()));
            }
        }
        dirs
    }

    const FAKE: Kernel = Kernel { mkdir, rmdir, write, own_cgroup: |hierarchy| Ok(hierarchy.own_path.clone()) };

    const RUN: &str = "faultscale-7-ab12";

    /// A fake mount of `version` whose root passes memory on, with this process in `/a`
    /// (below the root) or in the root itself, and `/a/other`, a sibling cgroup the run did not
    /// make.
    fn fake(version: Version, in_a: bool) -> (tempfile::TempDir, Hierarchy) {
        let dir = tempfile::tempdir().unwrap();
        let mount = dir.path().join("mount");
        mkdir(&mount).unwrap();
        std::fs::write(mount.join(SUBTREE), "memory").unwrap();
        mkdir(&mount.join("a")).unwrap();
        mkdir(&mount.join("a/other")).unwrap();
        let own = if in_a { mount.join("a") } else { mount.clone() };
        std::fs::write(own.join(PROCS), format!("{}\n", std::process::id())).unwrap();
        let own_path = if in_a { "/a" } else { "/" };
        let hierarchy = Hierarchy {
            version,
            mount_point: mount,
            mount_root: "/".into(),
            own_path: own_path.into(),
            mount_options: "rw".into(),
        };
        (dir, hierarchy)
    }

    fn tree(hierarchy: &Hierarchy, base: &Path) -> Tree {
        let mut tree = Tree::new(hierarchy.clone(), base.to_path_buf(), RUN.into());
        tree.kernel = FAKE;
        tree
    }

    fn limit(bytes: u64) -> Vec<Knob> {
        vec![Knob { name: "memory.max".into(), value: Some(bytes), ..Knob::default() }]
    }

    /// The baseline, `child` (the first of `levels`), `nested:2` and `siblings:2` (two below the
    /// first level), as the session asks for them.
    fn build(tree: &mut Tree, levels: &[Vec<Knob>; 2]) -> Vec<Leaf> {
        let spec = |label, levels, siblings| LeafSpec { label, origin: label, levels, siblings };
        let specs = [
            spec("base", &[][..], 0),
            spec("child", &levels[..1], 0),
            spec("nested:2", levels, 0),
            spec("siblings:2", &levels[..1], 2),
        ];
        tree.build_instances(&specs, 1).unwrap().pop().unwrap()
    }

    /// What is left in a cgroup directory: its child cgroups, by name.
    fn children(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_type().unwrap().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn below_the_root_on_v2_the_harness_steps_into_a_leaf_and_the_tree_goes_whole() {
        let (_dir, h) = fake(Version::V2, true);
        let (a, pid) = (h.mount_point.join("a"), std::process::id().to_string());
        let mut tree = tree(&h, &a);
        let leaves = build(&mut tree, &[limit(1 << 20), vec![]]);
        let harness = a.join(format!("{RUN}-harness"));
        assert_eq!(lines(&harness.join(PROCS)), [pid.as_str()], "faultscale entered its leaf");
        assert!(lines(&a.join(PROCS)).is_empty(), "and left the base, which now passes memory on");
        assert_eq!(words(&a.join(SUBTREE)), ["memory"]);
        assert_eq!(tree.changed_outside(), Some(a.join(SUBTREE)));
        assert_eq!(tree.baseline_depth(), 2, "the base, and the baseline's leaf in it");
        let paths: Vec<&str> = leaves.iter().map(|l| l.cgroup_path.as_str()).collect();
        let top = |label: &str| format!("/a/{RUN}-{label}");
        let expected =
            [top("base"), top("child") + "/level1", top("nested2") + "/level1/level2", top("siblings2") + "/level1"];
        assert_eq!(paths, expected);
        assert_eq!(children(&leaves[3].fs_path), ["sibling1", "sibling2"]);
        assert_eq!(std::fs::read_to_string(leaves[1].fs_path.join("memory.max")).unwrap(), "1048576");
        for knobless in [a.join(format!("{RUN}-child")), leaves[2].fs_path.clone(), leaves[0].fs_path.clone()] {
            assert_eq!(std::fs::read_to_string(knobless.join("memory.max")).unwrap(), "", "{}", knobless.display());
        }
        let applied = tree.take_applied();
        let written: Vec<(&str, &str, &str)> =
            applied.iter().map(|k| (k.placement.as_str(), k.cgroup_path.as_str(), k.read_back.as_str())).collect();
        let child = top("child") + "/level1";
        let nested = top("nested2") + "/level1";
        let siblings = top("siblings2") + "/level1";
        assert_eq!(
            written,
            [
                ("child", child.as_str(), "1048576"),
                ("nested:2", nested.as_str(), "1048576"),
                ("siblings:2", siblings.as_str(), "1048576")
            ]
        );
        tree.remove().unwrap();
        assert_eq!(children(&a), ["other"], "everything it made went, and only that");
        assert_eq!(lines(&a.join(PROCS)), [pid], "faultscale went back home");
        assert!(words(&a.join(SUBTREE)).is_empty(), "memory taken away again");
        tree.remove().unwrap();
    }

    #[test]
    fn on_v1_a_base_of_its_own_is_entered_and_left() {
        let (_dir, h) = fake(Version::V1, false);
        let pid = std::process::id().to_string();
        let mut tree = tree(&h, &h.mount_point);
        tree.make_own_base().unwrap();
        let new = h.mount_point.join(format!("{RUN}-new"));
        assert_eq!(tree.base(), new);
        assert_eq!(lines(&new.join(PROCS)), [pid.as_str()], "the cgroup.procs write landed");
        assert!(lines(&h.mount_point.join(PROCS)).is_empty());
        let leaves = build(&mut tree, &[limit(1 << 30), vec![]]);
        assert_eq!(leaves[0].fs_path, new, "on v1 the baseline runs in the base itself");
        assert_eq!(leaves[1].cgroup_path, format!("/{RUN}-new/{RUN}-child"));
        assert_eq!(std::fs::read_to_string(leaves[1].fs_path.join("memory.limit_in_bytes")).unwrap(), "1073741824");
        assert_eq!((tree.baseline_depth(), tree.changed_outside()), (1, None));
        tree.remove().unwrap();
        assert_eq!(children(&h.mount_point), ["a"]);
        assert_eq!(lines(&h.mount_point.join(PROCS)), [pid]);
    }

    #[test]
    fn a_busy_cgroup_is_kept_and_named_with_what_holds_it_and_the_rest_goes() {
        let (_dir, h) = fake(Version::V2, true);
        let a = h.mount_point.join("a");
        let mut tree = tree(&h, &a);
        let leaves = build(&mut tree, &[limit(1 << 20), vec![]]);
        // A cgroup someone else made inside one of ours, and a worker that outlived its crew.
        let intruder = leaves[1].fs_path.join("intruder");
        mkdir(&intruder).unwrap();
        let pid = std::process::id();
        write(&leaves[0].fs_path.join(PROCS), &pid.to_string()).unwrap();
        let err = format!("{:#}", tree.remove().unwrap_err());
        let busy = Error::from_raw_os_error(libc::EBUSY);
        let held = |dir: &Path, by: &str| format!("{}: {busy}: it holds {by}", dir.display());
        assert!(err.starts_with("could not remove: "), "{err}");
        assert!(err.ends_with("; run `faultscale cleanup` once they are empty"), "{err}");
        assert!(err.contains(&held(&leaves[1].fs_path, "the cgroup intruder")), "{err}");
        let child_top = a.join(format!("{RUN}-child"));
        assert!(err.contains(&held(&child_top, "the cgroup level1")), "{err}");
        assert!(err.contains(&held(&leaves[0].fs_path, &format!("process {pid} ("))), "{err}");
        assert!(err.contains("), which is not exiting"), "{err}");
        assert_eq!(children(&a), ["faultscale-7-ab12-base", "faultscale-7-ab12-child", "other"]);
        assert!(intruder.is_dir(), "what it did not make stays");
        assert_eq!(lines(&a.join(PROCS)), [pid.to_string()], "faultscale went back home all the same");
        tree.remove().unwrap();
    }

    #[test]
    fn a_cgroup_that_vanished_before_removal_is_no_error() {
        let (_dir, h) = fake(Version::V2, true);
        let a = h.mount_point.join("a");
        let mut tree = tree(&h, &a);
        let leaves = build(&mut tree, &[limit(1 << 20), vec![]]);
        rmdir(&leaves[2].fs_path).unwrap();
        rmdir(leaves[2].fs_path.parent().unwrap()).unwrap();
        tree.remove().unwrap();
        assert_eq!(children(&a), ["other"]);
    }
}
