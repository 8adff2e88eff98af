//! Cgroup layout detection and the tree of cgroups one run creates.
//!
//! cgroups-rs is not used: on this project's hosts it is unsound in the ways that matter here
//! (it misses hybrid hosts, reads missing files as 0, writes subtree_control of every parent on
//! v2, escapes cgroupfs on paths with a leading `/`). What faultscale needs is mkdir, rmdir and
//! a handful of writes, each read back; that is done by hand in `fs.rs` and `tree.rs`.

pub mod cleanup;
pub mod fs;
pub mod layout;
pub mod tree;

use std::path::{Component, Path, PathBuf};

use anyhow::{Result, bail};

pub use layout::{Detected, Hierarchy, Layout, Version, detect};
pub use tree::{Leaf, Tree};

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
