//! The base a run builds under: what `--base` asked for, where it is on disk, and whether a run
//! can use it (the rules `faultscale env` explains and the tree enforces).

use std::fmt;
use std::path::{Component, Path, PathBuf};

use anyhow::{Result, bail};

use super::fs as cgfs;
use super::{Hierarchy, Version};
use crate::error;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// A cgroup of faultscale's own, made for the run: in the cgroup faultscale runs in (v1),
    /// or beside it in the nearest ancestor that gives memory to its children and holds no
    /// process (v2); faultscale moves only itself into it and removes it at the end.
    New,
    /// A cgroup path, hierarchy-relative (`/a/b`) or on disk (`/sys/fs/cgroup/memory/a/b`).
    Path(String),
}

impl BaseSpec {
    pub fn parse(text: &str) -> Result<Self> {
        Ok(match text {
            "root" => BaseSpec::Root,
            "self" => BaseSpec::OwnCgroup,
            "new" => BaseSpec::New,
            "" => bail!("--base \"\": empty; use root, self, new or a cgroup path"),
            path if path.contains('\n') || path.contains('\0') => {
                bail!("--base {path:?}: a cgroup path cannot contain newlines or NUL")
            }
            path => BaseSpec::Path(path.to_string()),
        })
    }
}

/// Finds the base directory on disk and checks it is a cgroup of `hierarchy`: inside its mount
/// after resolving symlinks, no `..`, a directory holding cgroup.procs. Every error is the
/// user's `--base` naming no usable cgroup: a usage error.
pub fn resolve_base(hierarchy: &Hierarchy, spec: &BaseSpec) -> Result<PathBuf> {
    resolve(hierarchy, spec, " (see `faultscale env`)").map_err(error::usage)
}

/// `resolve_base` for `faultscale env` itself, whose errors cannot send the user to env.
pub fn resolve_base_in_env(hierarchy: &Hierarchy, spec: &BaseSpec) -> Result<PathBuf> {
    resolve(hierarchy, spec, ": root, self, new or a cgroup path").map_err(error::usage)
}

/// `advice` follows "pick another base" where the base does not exist.
fn resolve(hierarchy: &Hierarchy, spec: &BaseSpec, advice: &str) -> Result<PathBuf> {
    let (label, candidate) = match spec {
        BaseSpec::Root => ("root".to_string(), hierarchy.fs_path(&hierarchy.mount_root)),
        BaseSpec::OwnCgroup => ("self".to_string(), hierarchy.fs_path(&hierarchy.own_path)),
        BaseSpec::New => ("new".to_string(), Some(home_for_new(hierarchy)?)),
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
            "--base {label}: {} does not exist ({e}); create it or pick another base{advice}",
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

/// Where `--base new` makes its cgroup: v1 in faultscale's own cgroup (no rule against
/// processes beside children there); v2 in the nearest ancestor that already gives memory to
/// its children and holds no process (or the root), so no ancestor's subtree_control is ever
/// written and no process but faultscale is moved.
fn home_for_new(hierarchy: &Hierarchy) -> Result<PathBuf> {
    let own = hierarchy.fs_path(&hierarchy.own_path).ok_or_else(|| {
        anyhow::anyhow!(
            "--base new: this process's cgroup {} is not visible under {}",
            hierarchy.own_path,
            hierarchy.mount_point.display()
        )
    })?;
    if hierarchy.version == Version::V1 {
        return Ok(own);
    }
    let mut candidate = own.parent().map(Path::to_path_buf);
    while let Some(dir) = candidate {
        if !dir.starts_with(&hierarchy.mount_point) {
            break;
        }
        let usable = hierarchy.is_root(&dir)
            || (memory_delegated(&dir).unwrap_or(false) && !cgfs::has_processes(&dir).unwrap_or(true));
        if usable {
            return Ok(dir);
        }
        if dir == hierarchy.mount_point {
            break;
        }
        candidate = dir.parent().map(Path::to_path_buf);
    }
    bail!(
        "--base new: no ancestor of {} gives memory to its children while holding no process; run it in a delegated scope instead: systemd-run --scope -p Delegate=yes faultscale --base self ...",
        hierarchy.own_path
    )
}

/// Whether a service manager owns the cgroup tree (systemd's own test, sd_booted): then new
/// cgroups are asked of it, never made inside its slices behind its back.
pub fn systemd_manages() -> bool {
    Path::new("/run/systemd/system").is_dir()
}

/// Why a run under a base would fail, or what it would do that the user should know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaseProblem {
    NotRoot,
    NotWritable(PathBuf),
    /// On a read-only mount (a container's cgroupfs): no cgroup can be made in it, and
    /// `--base new` would be made in it too.
    ReadOnly(PathBuf),
    /// v2: the parent's cgroup.subtree_control lacks memory.
    MemoryNotEnabled,
    /// v2 below the root: processes faultscale did not start live here, so it cannot give
    /// memory to children (the no-internal-processes rule).
    HoldsProcesses(usize),
    /// v1: memory.use_hierarchy is 0.
    FlatHierarchy,
}

impl BaseProblem {
    /// Whether no run at all can use the base.
    pub fn blocks_every_run(&self) -> bool {
        !matches!(self, BaseProblem::FlatHierarchy)
    }
}

impl fmt::Display for BaseProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BaseProblem::NotRoot => {
                f.write_str("not running as root: creating cgroups and moving processes needs root")
            }
            BaseProblem::NotWritable(base) => {
                write!(f, "{} is not writable here (read-only cgroupfs or no permission)", base.display())
            }
            BaseProblem::ReadOnly(base) => write!(
                f,
                "{} is on a read-only mount (as a container's cgroupfs often is): no cgroup can be made in it; run where the cgroupfs is mounted read-write",
                base.display()
            ),
            BaseProblem::MemoryNotEnabled => {
                f.write_str("memory is not enabled for this cgroup: its parent's cgroup.subtree_control lacks +memory")
            }
            BaseProblem::HoldsProcesses(count) => write!(
                f,
                "it holds {count} process(es) faultscale did not start, so its children cannot get memory (no-internal-processes rule)"
            ),
            BaseProblem::FlatHierarchy => {
                f.write_str("memory.use_hierarchy is 0: children are not charged to this cgroup (old v1 semantics)")
            }
        }
    }
}

/// What a run under `base` can measure, in one line for `faultscale env`, with the command
/// that makes the rest work when something does not.
pub fn what_works(hierarchy: &Hierarchy, base: &Path, problems: &[BaseProblem]) -> String {
    let way_out = if systemd_manages() {
        "faultscale --base new (a delegated systemd scope of its own), or systemd-run --scope -p Delegate=yes faultscale --base self"
    } else {
        "faultscale --base new (a cgroup of its own beside this one)"
    };
    if let Some(problem) = problems.iter().find(|p| p.blocks_every_run()) {
        return match problem {
            BaseProblem::NotRoot => "nothing until run as root: sudo faultscale ...".into(),
            BaseProblem::ReadOnly(_) => "nothing while its cgroupfs is mounted read-only (any base there alike)".into(),
            _ => format!("nothing here; run: {way_out}"),
        };
    }
    let v1_only = if hierarchy.version == Version::V1 {
        "; profiles with memory.high, memory.min or memory.oom.group need cgroup v2 (or skip_on_v1)"
    } else {
        ""
    };
    if hierarchy.is_root(base) {
        format!(
            "all: the baseline `root` in the true root cgroup, child, nested:N, siblings:N and profiles below it{v1_only}"
        )
    } else if hierarchy.version == Version::V2 {
        format!(
            "all: the baseline `base` in a leaf of its own, child, nested:N, siblings:N and profiles one level per step below it (faultscale moves itself into a leaf meanwhile){v1_only}"
        )
    } else {
        format!("all: the baseline `base` in this cgroup, child, nested:N, siblings:N and profiles below it{v1_only}")
    }
}

/// Processes in `dir` other than this one.
pub fn foreign_processes(dir: &Path) -> Result<usize> {
    let own = std::process::id().to_string();
    Ok(cgfs::read_procs(dir)?.iter().filter(|p| **p != own).count())
}

/// Whether the memory controller is available in `dir` (v2: listed in cgroup.controllers).
pub fn memory_available(dir: &Path) -> Result<bool> {
    Ok(cgfs::controllers(dir)?.iter().any(|c| c == "memory"))
}

/// Whether `dir` passes memory on to its children (v2: listed in cgroup.subtree_control).
pub fn memory_delegated(dir: &Path) -> Result<bool> {
    cgfs::lists(&dir.join("cgroup.subtree_control"), "memory")
}

/// Whether `path` is on a mount made read-only (per mount: a bind mount's `ro`, whatever its
/// superblock's options say).
pub fn read_only(path: &Path) -> bool {
    nix::sys::statvfs::statvfs(path).is_ok_and(|s| s.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY))
}

/// A base on a read-only mount cannot hold the run: refused before anything is made (exit 2),
/// as `env` says. Other faults of the base are found where the run resolves it.
pub fn refuse_read_only(hierarchy: &Hierarchy, spec: &BaseSpec) -> Result<()> {
    let label = match spec {
        BaseSpec::Root => "root",
        BaseSpec::OwnCgroup => "self",
        BaseSpec::New => "new",
        BaseSpec::Path(path) => path,
    };
    match resolve_base(hierarchy, spec) {
        Ok(base) if read_only(&base) => {
            Err(error::usage(anyhow::anyhow!("--base {label}: {}", BaseProblem::ReadOnly(base))))
        }
        _ => Ok(()),
    }
}

/// Every reason a run under `base` would fail or be limited.
pub fn problems(hierarchy: &Hierarchy, base: &Path, is_root: bool) -> Vec<BaseProblem> {
    let mut problems = Vec::new();
    if !is_root {
        problems.push(BaseProblem::NotRoot);
    }
    let c_path = std::ffi::CString::new(base.as_os_str().as_encoded_bytes()).unwrap_or_default();
    // SAFETY: a valid C string.
    if read_only(base) {
        problems.push(BaseProblem::ReadOnly(base.to_path_buf()));
    } else if unsafe { libc::access(c_path.as_ptr(), libc::W_OK) } != 0 {
        problems.push(BaseProblem::NotWritable(base.to_path_buf()));
    }
    match hierarchy.version {
        Version::V2 => {
            if !memory_available(base).unwrap_or(false) {
                problems.push(BaseProblem::MemoryNotEnabled);
            }
            let others = foreign_processes(base).unwrap_or(0);
            if !hierarchy.is_root(base) && others > 0 {
                problems.push(BaseProblem::HoldsProcesses(others));
            }
        }
        Version::V1 => {
            if cgfs::read_use_hierarchy(base) == Some(false) {
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
        // env's own errors cannot send the user to env.
        let err = resolve_base(&h, &BaseSpec::Path("/nope".into())).unwrap_err().to_string();
        assert!(err.ends_with("pick another base (see `faultscale env`)"), "{err}");
        let err = resolve_base_in_env(&h, &BaseSpec::Path("/nope".into())).unwrap_err().to_string();
        assert!(err.ends_with("pick another base: root, self, new or a cgroup path"), "{err}");
        for bad in ["", "a\nb", "a\0b"] {
            assert!(BaseSpec::parse(bad).is_err(), "{bad:?}");
        }
    }
}
