//! How much more memory a cgroup may charge: the smallest room (limit less usage) from the
//! cgroup up to its mount's root, since a charge must fit every ancestor's limit. v2 reads
//! memory.max and memory.current; v1 memory.limit_in_bytes and memory.usage_in_bytes (a v1
//! limit binds its subtree: use_hierarchy, which kernels since 6.1 force on).

use std::path::{Path, PathBuf};

use super::Version;

/// The ancestor (or the cgroup itself) that leaves the least room, and its figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Room {
    pub cgroup: PathBuf,
    pub limit_bytes: u64,
    pub usage_bytes: u64,
}

impl Room {
    pub fn bytes(&self) -> u64 {
        self.limit_bytes.saturating_sub(self.usage_bytes)
    }
}

/// v1 says "no limit" with the largest page-aligned i64 (9223372036854771712), v2 with "max".
const UNLIMITED_FROM: u64 = 1 << 62;

/// The memory limit of the cgroup `dir` itself (v2 memory.max, v1 memory.limit_in_bytes), or
/// None where it has none.
pub fn memory_limit(dir: &Path) -> Option<u64> {
    ["memory.max", "memory.limit_in_bytes"]
        .iter()
        .find_map(|file| std::fs::read_to_string(dir.join(file)).ok()?.trim().parse().ok())
        .filter(|&limit| limit < UNLIMITED_FROM)
}

/// The least room between `dir` and `mount_point` (both inclusive), or None where no cgroup
/// on the way has a limit. A file that is absent (the root has none) or unreadable sets no limit.
pub fn memory_room(version: Version, mount_point: &Path, dir: &Path) -> Option<Room> {
    let (limit_file, usage_file) = match version {
        Version::V2 => ("memory.max", "memory.current"),
        Version::V1 => ("memory.limit_in_bytes", "memory.usage_in_bytes"),
    };
    let number = |path: PathBuf| -> Option<u64> { std::fs::read_to_string(path).ok()?.trim().parse().ok() };
    let mut least: Option<Room> = None;
    for cgroup in dir.ancestors().take_while(|d| d.starts_with(mount_point)) {
        let Some(limit_bytes) = number(cgroup.join(limit_file)).filter(|&l| l < UNLIMITED_FROM) else { continue };
        let usage_bytes = number(cgroup.join(usage_file)).unwrap_or(0);
        let room = Room { cgroup: cgroup.to_path_buf(), limit_bytes, usage_bytes };
        if least.as_ref().is_none_or(|l| room.bytes() < l.bytes()) {
            least = Some(room);
        }
    }
    least
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cgroup(dir: &Path, files: &[(&str, &str)]) {
        std::fs::create_dir_all(dir).unwrap();
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }

    #[test]
    fn the_tightest_ancestor_sets_the_room_and_max_is_no_limit() {
        let mount = tempfile::tempdir().unwrap();
        let top = mount.path().join("user.slice");
        let base = top.join("faultscale");
        // The root has no memory.max; the middle allows 4 GiB with 3 in use; the base 8 GiB.
        cgroup(&top, &[("memory.max", "4294967296\n"), ("memory.current", "3221225472\n")]);
        cgroup(&base, &[("memory.max", "max\n"), ("memory.current", "1048576\n")]);
        let room = memory_room(Version::V2, mount.path(), &base).unwrap();
        assert_eq!(room.cgroup, top);
        assert_eq!(room.bytes(), 1 << 30);
        cgroup(&base, &[("memory.max", "268435456\n")]);
        assert_eq!(memory_room(Version::V2, mount.path(), &base).unwrap().bytes(), (256 << 20) - (1 << 20));
    }

    #[test]
    fn v1_reads_its_own_files_and_its_unlimited_value() {
        let mount = tempfile::tempdir().unwrap();
        let base = mount.path().join("a");
        cgroup(&base, &[("memory.limit_in_bytes", "9223372036854771712\n"), ("memory.usage_in_bytes", "5\n")]);
        assert_eq!(memory_room(Version::V1, mount.path(), &base), None);
        cgroup(mount.path(), &[("memory.limit_in_bytes", "100\n"), ("memory.usage_in_bytes", "40\n")]);
        assert_eq!(memory_room(Version::V1, mount.path(), &base).unwrap().bytes(), 60);
    }
}
