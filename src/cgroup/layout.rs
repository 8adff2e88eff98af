//! Which cgroup hierarchies this process sees, from /proc/self/mountinfo and /proc/self/cgroup.
//!
//! Parsing is pure (text in, values out) so every layout can be tested from example texts;
//! `detect` is the one place that reads the live files.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// The cgroup API generation of one hierarchy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Version {
    V1,
    V2,
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Version::V1 => "v1",
            Version::V2 => "v2",
        })
    }
}

/// How the host arranged its hierarchies, the way users name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// Only cgroup2 (systemd's default since 2021).
    V2,
    /// Only v1 controller mounts.
    V1,
    /// v1 controllers and a cgroup2 mount side by side (systemd's "hybrid").
    Hybrid,
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layout::V2 => "v2 (unified)",
            Layout::V1 => "v1 (legacy)",
            Layout::Hybrid => "hybrid (v1 controllers + cgroup2)",
        })
    }
}

/// One cgroup or cgroup2 mount from mountinfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupMount {
    pub version: Version,
    pub mount_point: PathBuf,
    /// The cgroup this mount shows as its top (`/` unless a sub-tree was bind-mounted).
    pub mount_root: String,
    /// v1: the controllers bound to this hierarchy (from the super options); v2: empty.
    pub controllers: Vec<String>,
    /// The super options as mounted (v2: nsdelegate, memory_recursiveprot, ...).
    pub options: String,
}

/// Undoes mountinfo's octal escapes (`\040` is a space).
fn unescape_mountinfo(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 3 < bytes.len() && bytes[i + 1..i + 4].iter().all(|b| (b'0'..=b'7').contains(b)) {
            let value = (bytes[i + 1] - b'0') * 64 + (bytes[i + 2] - b'0') * 8 + (bytes[i + 3] - b'0');
            out.push(value);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The v1 super options that are not controller names.
const V1_NON_CONTROLLER_OPTIONS: &[&str] =
    &["rw", "ro", "noprefix", "clone_children", "xattr", "nsdelegate", "cpuset_v2_mode", "favordynmods"];

/// Extracts the cgroup mounts from /proc/self/mountinfo text.
pub fn parse_mountinfo(text: &str) -> Vec<CgroupMount> {
    let mut mounts = Vec::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        // Optional fields end at a lone "-"; the three after it are fstype, source, super options.
        let Some(separator) = fields.iter().position(|f| *f == "-") else { continue };
        if fields.len() < separator + 4 || separator < 5 {
            continue;
        }
        let version = match fields[separator + 1] {
            "cgroup" => Version::V1,
            "cgroup2" => Version::V2,
            _ => continue,
        };
        let controllers = match version {
            Version::V2 => Vec::new(),
            Version::V1 => fields[separator + 3]
                .split(',')
                .filter(|opt| !opt.contains('=') && !V1_NON_CONTROLLER_OPTIONS.contains(opt))
                .map(str::to_string)
                .collect(),
        };
        mounts.push(CgroupMount {
            version,
            mount_point: PathBuf::from(unescape_mountinfo(fields[4])),
            mount_root: unescape_mountinfo(fields[3]),
            controllers,
            options: fields[separator + 3].to_string(),
        });
    }
    mounts
}

/// One line of /proc/self/cgroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Membership {
    pub hierarchy_id: u32,
    /// v1 controllers of that hierarchy (`name=systemd` kept as is); empty for the v2 line.
    pub controllers: Vec<String>,
    pub path: String,
}

pub fn parse_proc_cgroup(text: &str) -> Vec<Membership> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let hierarchy_id = parts.next()?.parse().ok()?;
            let controllers = parts.next()?;
            let path = parts.next()?.to_string();
            Some(Membership {
                hierarchy_id,
                controllers: controllers.split(',').filter(|c| !c.is_empty()).map(str::to_string).collect(),
                path,
            })
        })
        .collect()
}

/// A hierarchy faultscale can use for the memory controller, with this process's place in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hierarchy {
    pub version: Version,
    pub mount_point: PathBuf,
    pub mount_root: String,
    /// This process's cgroup, as /proc/self/cgroup names it (relative to the hierarchy's root).
    pub own_path: String,
    /// The mount's super options.
    pub mount_options: String,
}

impl Hierarchy {
    /// Where the cgroup `path` (hierarchy-relative, as /proc/PID/cgroup names it) lies on disk,
    /// or None when this mount does not show it.
    pub fn fs_path(&self, path: &str) -> Option<PathBuf> {
        let root = self.mount_root.trim_end_matches('/');
        let relative = path.strip_prefix(root)?;
        if !relative.is_empty() && !relative.starts_with('/') {
            return None;
        }
        let relative = relative.trim_start_matches('/');
        if relative.split('/').any(|part| part == "..") {
            return None;
        }
        Some(if relative.is_empty() { self.mount_point.clone() } else { self.mount_point.join(relative) })
    }

    /// Whether `dir` is the hierarchy's true root cgroup (not just the top of a mount).
    pub fn is_root(&self, dir: &Path) -> bool {
        dir == self.mount_point && self.mount_root == "/"
    }

    /// The hierarchy-relative name of a directory under this mount (the inverse of fs_path).
    pub fn cgroup_path(&self, fs_path: &Path) -> String {
        let relative = fs_path.strip_prefix(&self.mount_point).unwrap_or(fs_path);
        let root = self.mount_root.trim_end_matches('/');
        let joined = format!("{root}/{}", relative.display());
        let trimmed = joined.trim_end_matches('/');
        if trimmed.is_empty() { "/".into() } else { trimmed.into() }
    }
}

/// The cgroup of process `pid` in `hierarchy`, as /proc/PID/cgroup names it.
pub fn cgroup_of(pid: i32, hierarchy: &Hierarchy) -> Result<String> {
    let file = format!("/proc/{pid}/cgroup");
    let text = fs::read_to_string(&file).with_context(|| format!("reading {file}"))?;
    parse_proc_cgroup(&text)
        .into_iter()
        .find(|m| match hierarchy.version {
            Version::V2 => m.hierarchy_id == 0 && m.controllers.is_empty(),
            Version::V1 => m.controllers.iter().any(|c| c == "memory"),
        })
        .map(|m| m.path)
        .with_context(|| format!("{file} has no line for the {} memory hierarchy", hierarchy.version))
}

/// Everything detection found.
#[derive(Debug, Clone)]
pub struct Detected {
    pub layout: Layout,
    pub v1_memory: Option<Hierarchy>,
    /// The cgroup2 hierarchy, whether or not it has the memory controller.
    pub v2: Option<Hierarchy>,
    /// Controllers available at the cgroup2 root (its cgroup.controllers).
    pub v2_controllers: Vec<String>,
}

impl Detected {
    /// Classifies pure inputs: the mounts, this process's memberships, and the cgroup2 root's
    /// cgroup.controllers (None when there is no cgroup2 mount or it could not be read).
    pub fn classify(
        mounts: &[CgroupMount],
        memberships: &[Membership],
        v2_controllers: Option<&str>,
    ) -> Result<Detected> {
        let v1_mounts: Vec<&CgroupMount> = mounts.iter().filter(|m| m.version == Version::V1).collect();
        let v2_mount = mounts.iter().find(|m| m.version == Version::V2);
        // A v1 mount with only name=systemd carries no controller; it still makes the host hybrid.
        let layout = match (v1_mounts.is_empty(), v2_mount.is_some()) {
            (true, true) => Layout::V2,
            (false, false) => Layout::V1,
            (false, true) => Layout::Hybrid,
            (true, false) => bail!(
                "no cgroup filesystem is mounted (none in /proc/self/mountinfo); mount cgroup2 on /sys/fs/cgroup, then run `faultscale env`"
            ),
        };

        let v1_memory = v1_mounts.iter().find(|m| m.controllers.iter().any(|c| c == "memory")).and_then(|m| {
            let membership =
                memberships.iter().find(|ms| ms.hierarchy_id != 0 && ms.controllers.iter().any(|c| c == "memory"))?;
            Some(Hierarchy {
                version: Version::V1,
                mount_point: m.mount_point.clone(),
                mount_root: m.mount_root.clone(),
                own_path: membership.path.clone(),
                mount_options: m.options.clone(),
            })
        });
        let v2 = v2_mount.and_then(|m| {
            let membership = memberships.iter().find(|ms| ms.hierarchy_id == 0 && ms.controllers.is_empty())?;
            Some(Hierarchy {
                version: Version::V2,
                mount_point: m.mount_point.clone(),
                mount_root: m.mount_root.clone(),
                own_path: membership.path.clone(),
                mount_options: m.options.clone(),
            })
        });
        let v2_controllers =
            v2_controllers.map(|text| text.split_whitespace().map(str::to_string).collect()).unwrap_or_default();
        Ok(Detected { layout, v1_memory, v2, v2_controllers })
    }

    pub fn v2_has_memory(&self) -> bool {
        self.v2.is_some() && self.v2_controllers.iter().any(|c| c == "memory")
    }

    /// The hierarchy to build in, per `--cgroup-version`.
    pub fn memory_hierarchy(&self, choice: super::VersionChoice) -> Result<Hierarchy> {
        use super::VersionChoice;
        let v2_without_memory = || match &self.v2 {
            Some(v2) => format!(
                "the cgroup2 mount at {} has no memory controller (cgroup.controllers: {:?})",
                v2.mount_point.display(),
                self.v2_controllers.join(" ")
            ),
            None => "no cgroup2 filesystem is mounted".into(),
        };
        match choice {
            VersionChoice::V2 => {
                if self.v2_has_memory() {
                    return Ok(self.v2.clone().expect("checked"));
                }
                let hint =
                    if self.v1_memory.is_some() { "; memory is on v1 here, use --cgroup-version v1" } else { "" };
                // A version this machine does not offer is the user's choice: exit 2.
                Err(crate::error::usage(anyhow::anyhow!("--cgroup-version v2: {}{hint}", v2_without_memory())))
            }
            VersionChoice::V1 => self.v1_memory.clone().ok_or_else(|| {
                let hint =
                    if self.v2_has_memory() { "; memory is on cgroup2 here, use --cgroup-version v2" } else { "" };
                crate::error::usage(anyhow::anyhow!(
                    "--cgroup-version v1: no v1 hierarchy has the memory controller mounted{hint}"
                ))
            }),
            VersionChoice::Auto => {
                if self.v2_has_memory() {
                    Ok(self.v2.clone().expect("checked"))
                } else if let Some(v1) = &self.v1_memory {
                    Ok(v1.clone())
                } else {
                    bail!(
                        "no memory controller found: no v1 memory mount, and {}; boot with cgroup_enable=memory or mount it, then check `faultscale env`",
                        v2_without_memory()
                    )
                }
            }
        }
    }
}

/// Reads the live files.
pub fn detect() -> Result<Detected> {
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").context("reading /proc/self/mountinfo")?;
    let proc_cgroup = fs::read_to_string("/proc/self/cgroup").context("reading /proc/self/cgroup")?;
    let mounts = parse_mountinfo(&mountinfo);
    let v2_controllers = mounts
        .iter()
        .find(|m| m.version == Version::V2)
        .and_then(|m| super::fs::controllers(&m.mount_point).ok())
        .map(|controllers| controllers.join(" "));
    Detected::classify(&mounts, &parse_proc_cgroup(&proc_cgroup), v2_controllers.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cgroup::VersionChoice;

    // This development machine: v1 controllers, a cgroup2 mount without memory.
    const HYBRID_MOUNTINFO: &str = "\
24 1 0:22 / /sys rw,nosuid - sysfs sysfs rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const HYBRID_CGROUP: &str = "\
9:name=systemd:/
4:memory:/process_api/5f48
1:cpu:/
0::/
";
    // systemd's unified default.
    const V2_MOUNTINFO: &str = "\
29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
";
    const V2_CGROUP: &str = "0::/user.slice/user-1000.slice/session-2.scope\n";
    // An old distribution: v1 only, cpu and cpuacct co-mounted, optional field present.
    const V1_MOUNTINFO: &str = "\
25 20 0:21 / /sys/fs/cgroup/cpu,cpuacct rw shared:7 - cgroup cgroup rw,cpu,cpuacct
26 20 0:22 / /sys/fs/cgroup/memory rw shared:8 - cgroup cgroup rw,memory
";
    const V1_CGROUP: &str = "3:memory:/user/1000\n2:cpu,cpuacct:/\n";

    #[test]
    fn hybrid_host_uses_v1_memory() {
        let d = Detected::classify(&parse_mountinfo(HYBRID_MOUNTINFO), &parse_proc_cgroup(HYBRID_CGROUP), Some(""))
            .unwrap();
        assert_eq!(d.layout, Layout::Hybrid);
        assert!(!d.v2_has_memory());
        let h = d.memory_hierarchy(VersionChoice::Auto).unwrap();
        assert_eq!(h.version, Version::V1);
        assert_eq!(h.mount_point, PathBuf::from("/sys/fs/cgroup/memory"));
        assert_eq!(h.own_path, "/process_api/5f48");
        let err = d.memory_hierarchy(VersionChoice::V2).unwrap_err().to_string();
        assert!(err.contains("/sys/fs/cgroup/unified") && err.contains("--cgroup-version v1"), "{err}");
    }

    #[test]
    fn pure_v2_with_memory() {
        let d = Detected::classify(
            &parse_mountinfo(V2_MOUNTINFO),
            &parse_proc_cgroup(V2_CGROUP),
            Some("cpuset cpu io memory pids\n"),
        )
        .unwrap();
        assert_eq!(d.layout, Layout::V2);
        let h = d.memory_hierarchy(VersionChoice::Auto).unwrap();
        assert_eq!(h.version, Version::V2);
        assert_eq!(h.own_path, "/user.slice/user-1000.slice/session-2.scope");
        assert!(h.mount_options.contains("memory_recursiveprot"));
        assert!(d.memory_hierarchy(VersionChoice::V1).unwrap_err().to_string().contains("--cgroup-version v2"));
    }

    #[test]
    fn pure_v1_with_comounted_controllers() {
        let mounts = parse_mountinfo(V1_MOUNTINFO);
        assert_eq!(mounts[0].controllers, vec!["cpu", "cpuacct"]);
        assert_eq!(mounts[0].mount_point, PathBuf::from("/sys/fs/cgroup/cpu,cpuacct"));
        let d = Detected::classify(&mounts, &parse_proc_cgroup(V1_CGROUP), None).unwrap();
        assert_eq!(d.layout, Layout::V1);
        assert_eq!(d.memory_hierarchy(VersionChoice::Auto).unwrap().own_path, "/user/1000");
        assert!(d.memory_hierarchy(VersionChoice::V2).is_err());
    }

    #[test]
    fn no_cgroup_mount_is_an_error() {
        let err = Detected::classify(&parse_mountinfo("1 0 0:1 / / rw - ext4 /dev/sda rw\n"), &[], None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("faultscale env"), "{err}");
    }

    #[test]
    fn escaped_mount_points_and_super_options() {
        let mounts = parse_mountinfo("40 31 0:37 / /mnt/my\\040cg rw - cgroup none rw,memory,name=x,clone_children\n");
        assert_eq!(mounts[0].mount_point, PathBuf::from("/mnt/my cg"));
        assert_eq!(mounts[0].controllers, vec!["memory"]);
    }

    #[test]
    fn paths_map_through_a_bind_mounted_subtree() {
        // A container that sees only /kubepods/pod1 at its /sys/fs/cgroup.
        let h = Hierarchy {
            version: Version::V2,
            mount_point: "/sys/fs/cgroup".into(),
            mount_root: "/kubepods/pod1".into(),
            own_path: "/kubepods/pod1/app".into(),
            mount_options: "rw".into(),
        };
        assert_eq!(h.fs_path("/kubepods/pod1/app").unwrap(), PathBuf::from("/sys/fs/cgroup/app"));
        assert_eq!(h.fs_path("/kubepods/pod1").unwrap(), PathBuf::from("/sys/fs/cgroup"));
        assert_eq!(h.fs_path("/kubepods/pod10"), None);
        assert_eq!(h.fs_path("/other"), None);
        assert_eq!(h.cgroup_path(Path::new("/sys/fs/cgroup/app/x")), "/kubepods/pod1/app/x");
        let plain = Hierarchy { mount_root: "/".into(), ..h };
        assert_eq!(plain.fs_path("/").unwrap(), PathBuf::from("/sys/fs/cgroup"));
        assert_eq!(plain.fs_path("/a/../../etc"), None);
        assert_eq!(plain.cgroup_path(Path::new("/sys/fs/cgroup")), "/");
        assert_eq!(plain.cgroup_path(Path::new("/sys/fs/cgroup/a/b")), "/a/b");
    }
}
