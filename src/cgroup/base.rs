//! The base a run builds under: what `--base` asked for, where it is on disk, and whether a run
//! can use it (the rules `faultscale env` explains and the tree enforces).

use std::fmt;
use std::path::{Component, Path, PathBuf};

use anyhow::{Result, bail};

use super::fs as cgfs;
use super::{Hierarchy, Version};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum VersionChoice {
    Auto,
    V1,
    V2,
}

/// `--base`: what the user asked to build under, before it is looked up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaseSpec {
    /// The hierarchy's root (as this mount shows it).
    Root,
    /// The cgroup faultscale itself runs in.
    OwnCgroup,
    /// A cgroup path, hierarchy-relative (`/a/b`) or on disk (`/sys/fs/cgroup/memory/a/b`).
    Path(String),
}

impl BaseSpec {
    pub fn parse(text: &str) -> Result<Self> {
        Ok(match text {
            "root" => BaseSpec::Root,
            "self" => BaseSpec::OwnCgroup,
            "" => bail!("--base \"\": empty; use root, self or a cgroup path"),
            path if path.contains('\n') || path.contains('\0') => {
                bail!("--base {path:?}: a cgroup path cannot contain newlines or NUL")
            }
            path => BaseSpec::Path(path.to_string()),
        })
    }
}

/// Finds the base directory on disk and checks it is a cgroup of `hierarchy`: inside its mount
/// after resolving symlinks, no `..`, a directory holding cgroup.procs.
pub fn resolve_base(hierarchy: &Hierarchy, spec: &BaseSpec) -> Result<PathBuf> {
    let (label, candidate) = match spec {
        BaseSpec::Root => ("root".to_string(), hierarchy.fs_path(&hierarchy.mount_root)),
        BaseSpec::OwnCgroup => ("self".to_string(), hierarchy.fs_path(&hierarchy.own_path)),
        BaseSpec::Path(path) => {
            if Path::new(path).components().any(|c| c == Component::ParentDir) {
                bail!("--base {path}: `..` is not allowed; give the cgroup's full path");
            }
            let on_disk = Path::new(path);
            let candidate = if on_disk.is_absolute() && on_disk.starts_with(&hierarchy.mount_point) {
                Some(on_disk.to_path_buf())
            } else {
                hierarchy.fs_path(&format!("/{}", path.trim_start_matches('/')))
            };
            (path.clone(), candidate)
        }
    };
    let Some(candidate) = candidate else {
        bail!(
            "--base {label}: not visible under the {} mount at {}; use --base self or a path under that mount",
            hierarchy.version,
            hierarchy.mount_point.display()
        );
    };
    let resolved = std::fs::canonicalize(&candidate).map_err(|e| {
        anyhow::anyhow!(
            "--base {label}: {} does not exist ({e}); create it or pick another base (see `faultscale env`)",
            candidate.display()
        )
    })?;
    let mount = std::fs::canonicalize(&hierarchy.mount_point).unwrap_or(hierarchy.mount_point.clone());
    if !resolved.starts_with(&mount) {
        bail!(
            "--base {label}: {} resolves to {}, outside the cgroup mount {}; give a cgroup inside it",
            candidate.display(),
            resolved.display(),
            mount.display()
        );
    }
    if !resolved.is_dir() || !resolved.join("cgroup.procs").is_file() {
        bail!("--base {label}: {} is not a cgroup directory (no cgroup.procs); give a cgroup path", resolved.display());
    }
    Ok(resolved)
}

/// Why a run under a base would fail, or what it would do that the user should know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaseProblem {
    NotRoot,
    NotWritable(PathBuf),
    /// v2: the parent's cgroup.subtree_control lacks memory.
    MemoryNotEnabled,
    /// v2: the base holds processes and has not enabled memory for its children.
    HoldsProcesses,
    /// v2: below the true root the baseline cannot share the base with memory-using children.
    NotHierarchyRoot,
    /// v1: memory.use_hierarchy is 0.
    FlatHierarchy,
}

impl BaseProblem {
    /// Whether no run at all can use the base (the others only rule out some placements).
    pub fn blocks_every_run(&self) -> bool {
        matches!(self, BaseProblem::NotRoot | BaseProblem::NotWritable(_) | BaseProblem::MemoryNotEnabled)
    }
}

impl fmt::Display for BaseProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BaseProblem::NotRoot => f.write_str("not running as root: creating cgroups and moving processes needs root"),
            BaseProblem::NotWritable(base) => {
                write!(f, "{} is not writable here (read-only cgroupfs or no permission)", base.display())
            }
            BaseProblem::MemoryNotEnabled => {
                f.write_str("memory is not enabled for this cgroup: its parent's cgroup.subtree_control lacks +memory")
            }
            BaseProblem::HoldsProcesses => f.write_str(
                "it holds processes, so its children cannot get memory (no-internal-processes rule): only --cgroup root works here; move the processes to a leaf for child placements",
            ),
            BaseProblem::NotHierarchyRoot => f.write_str(
                "not the hierarchy root: the baseline can only run here without child placements (or use --no-baseline)",
            ),
            BaseProblem::FlatHierarchy => {
                f.write_str("memory.use_hierarchy is 0: children are not charged to this cgroup (old v1 semantics)")
            }
        }
    }
}

/// Whether the memory controller is available in `dir` (v2: listed in cgroup.controllers).
pub fn memory_available(dir: &Path) -> Result<bool> {
    cgfs::lists(&dir.join("cgroup.controllers"), "memory")
}

/// Whether `dir` passes memory on to its children (v2: listed in cgroup.subtree_control).
pub fn memory_delegated(dir: &Path) -> Result<bool> {
    cgfs::lists(&dir.join("cgroup.subtree_control"), "memory")
}

/// Every reason a run under `base` would fail or be limited.
pub fn problems(hierarchy: &Hierarchy, base: &Path, is_root: bool) -> Vec<BaseProblem> {
    let mut problems = Vec::new();
    if !is_root {
        problems.push(BaseProblem::NotRoot);
    }
    let c_path = std::ffi::CString::new(base.as_os_str().as_encoded_bytes()).unwrap_or_default();
    // SAFETY: a valid C string.
    if unsafe { libc::access(c_path.as_ptr(), libc::W_OK) } != 0 {
        problems.push(BaseProblem::NotWritable(base.to_path_buf()));
    }
    match hierarchy.version {
        Version::V2 => {
            if !memory_available(base).unwrap_or(false) {
                problems.push(BaseProblem::MemoryNotEnabled);
            }
            let at_root = hierarchy.is_root(base);
            let busy = cgfs::has_processes(base).unwrap_or(false);
            if !at_root && busy && !memory_delegated(base).unwrap_or(false) {
                problems.push(BaseProblem::HoldsProcesses);
            }
            if !at_root {
                problems.push(BaseProblem::NotHierarchyRoot);
            }
        }
        Version::V1 => {
            if crate::text::read_line_or(base.join("memory.use_hierarchy"), "1") == "0" {
                problems.push(BaseProblem::FlatHierarchy);
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in mount: a directory tree with cgroup.procs files, and a symlink out of it.
    fn fake_mount() -> (tempfile::TempDir, Hierarchy) {
        let dir = tempfile::tempdir().unwrap();
        let mount = dir.path().join("mount");
        let outside = dir.path().join("outside");
        for cgroup in [mount.clone(), mount.join("a"), outside.clone()] {
            std::fs::create_dir_all(&cgroup).unwrap();
            std::fs::write(cgroup.join("cgroup.procs"), "").unwrap();
        }
        std::fs::write(mount.join("a/file"), "").unwrap();
        std::os::unix::fs::symlink(&outside, mount.join("escape")).unwrap();
        let hierarchy = Hierarchy {
            version: Version::V2,
            mount_point: mount,
            mount_root: "/".into(),
            own_path: "/a".into(),
            mount_options: "rw".into(),
        };
        (dir, hierarchy)
    }

    #[test]
    fn bases_resolve_inside_the_mount_only() {
        let (_dir, h) = fake_mount();
        assert_eq!(resolve_base(&h, &BaseSpec::Root).unwrap(), std::fs::canonicalize(&h.mount_point).unwrap());
        assert!(resolve_base(&h, &BaseSpec::OwnCgroup).unwrap().ends_with("mount/a"));
        assert!(resolve_base(&h, &BaseSpec::Path("/a".into())).unwrap().ends_with("mount/a"));
        let on_disk = h.mount_point.join("a").display().to_string();
        assert!(resolve_base(&h, &BaseSpec::Path(on_disk)).unwrap().ends_with("mount/a"));
        let cases = [
            ("/escape", "outside the cgroup mount"),
            ("/a/../..", "`..` is not allowed"),
            ("/a/file", "not a cgroup directory"),
            ("/nope", "does not exist"),
        ];
        for (path, expected) in cases {
            let err = resolve_base(&h, &BaseSpec::Path(path.into())).unwrap_err().to_string();
            assert!(err.starts_with(&format!("--base {path}")) && err.contains(expected), "{path}: {err}");
        }
        for bad in ["", "a\nb", "a\0b"] {
            assert!(BaseSpec::parse(bad).is_err(), "{bad:?}");
        }
    }
}
