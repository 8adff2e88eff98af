//! Reading and writing cgroupfs files, each write read back, each error naming the file.

use std::fs;
use std::io::{ErrorKind, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};

pub fn read(path: &Path) -> Result<String> {
    fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// Writes `value` in one write(2), as cgroupfs expects; a partial or failed write is an error
/// that names the file.
pub fn write(path: &Path, value: &str) -> Result<()> {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .open(path)
        .with_context(|| format!("opening {} for writing", path.display()))?;
    file.write_all(value.as_bytes()).map_err(|e| anyhow!("writing {value:?} to {}: {e}", path.display()))
}

/// Whitespace-separated words of a file such as cgroup.controllers or cgroup.subtree_control.
pub fn words(path: &Path) -> Result<Vec<String>> {
    Ok(read(path)?.split_whitespace().map(str::to_string).collect())
}

/// Whether `word` is one of the words of such a file.
pub fn lists(path: &Path, word: &str) -> Result<bool> {
    Ok(words(path)?.iter().any(|w| w == word))
}

/// Looks up one counter in a `key value` file (memory.stat).
pub fn stat_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (name, value) = line.split_once(' ')?;
        if name == key { value.trim().parse().ok() } else { None }
    })
}

/// How many processes are attached to this cgroup.
pub fn process_count(cgroup_dir: &Path) -> Result<usize> {
    Ok(read(&cgroup_dir.join("cgroup.procs"))?.lines().filter(|l| !l.trim().is_empty()).count())
}

/// Whether any process is attached to this cgroup.
pub fn has_processes(cgroup_dir: &Path) -> Result<bool> {
    Ok(!read(&cgroup_dir.join("cgroup.procs"))?.trim().is_empty())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_values_match_whole_keys() {
        let text = "pgfault 10\npgmajfault 2\ntotal_pgfault 99\n";
        assert_eq!(stat_value(text, "pgfault"), Some(10));
        assert_eq!(stat_value(text, "total_pgfault"), Some(99));
        assert_eq!(stat_value(text, "fault"), None);
    }
}
