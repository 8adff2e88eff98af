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

/// The controllers a v2 cgroup offers its members: its cgroup.controllers, the one reader of
/// that file (the base's checks, layout detection and `env` all ask here).
pub fn controllers(cgroup_dir: &Path) -> Result<Vec<String>> {
    words(&cgroup_dir.join("cgroup.controllers"))
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

/// The processes attached to this cgroup: its `cgroup.procs`, the one reader of that file.
pub fn read_procs(cgroup_dir: &Path) -> Result<Vec<String>> {
    Ok(read(&cgroup_dir.join("cgroup.procs"))?
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect())
}

/// How many processes are attached to this cgroup.
pub fn process_count(cgroup_dir: &Path) -> Result<usize> {
    Ok(read_procs(cgroup_dir)?.len())
}

/// Whether any process is attached to this cgroup.
pub fn has_processes(cgroup_dir: &Path) -> Result<bool> {
    Ok(!read_procs(cgroup_dir)?.is_empty())
}

/// v1's `memory.use_hierarchy`: Some(false) for 0 (children not charged to the cgroup), None
/// where the file is absent or unreadable (the kernel always charges hierarchically then).
pub fn read_use_hierarchy(cgroup_dir: &Path) -> Option<bool> {
    let text = std::fs::read_to_string(cgroup_dir.join("memory.use_hierarchy")).ok()?;
    match text.trim() {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

/// rmdir with a short retry on EBUSY while what holds the cgroup is on its way out (a task
/// still exiting, or one reaped a moment ago). A cgroup held by a live process or by a child
/// cgroup stays busy for as long as they stay, so that is said at once, naming them, instead
/// of after five seconds of retries. Never recursive: a cgroup with children or processes that
/// are not ours stays.
pub fn remove_cgroup_dir(dir: &Path) -> std::io::Result<()> {
    remove_cgroup_dir_by(dir, |dir| std::fs::remove_dir(dir))
}

/// `remove_cgroup_dir` through a given rmdir(2): the tree's unit tests pass a fake cgroupfs's,
/// which answers EBUSY as the kernel does, so the retries and what they report run without root.
pub fn remove_cgroup_dir_by(dir: &Path, rmdir: fn(&Path) -> std::io::Result<()>) -> std::io::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match rmdir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                if let Some(holder) = lasting_holder(dir) {
                    return Err(std::io::Error::new(ErrorKind::ResourceBusy, format!("{e}: it holds {holder}")));
                }
                if Instant::now() >= deadline {
                    return Err(match unseen_holder(dir) {
                        Some(holder) => std::io::Error::new(ErrorKind::ResourceBusy, format!("{e}: it holds {holder}")),
                        None => e,
                    });
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(e),
        }
    }
}

/// PF_EXITING in /proc/PID/stat's flags (include/linux/sched.h): the task is in do_exit.
const PF_EXITING: u32 = 0x4;

/// What keeps a cgroup busy beyond a moment: a child cgroup, or a listed thread that is
/// neither exiting (PF_EXITING, a zombie) nor about to (SIGKILL pending, as a worker's
/// PR_SET_PDEATHSIG delivers it). A pid this namespace cannot see counts as leaving.
///
/// Threads, not processes: cgroup.procs lists a process by its leader, and a leader that
/// called pthread_exit is a zombie with PF_EXITING for as long as its other threads live on
/// in the cgroup (judged by the leader, such a process was "leaving" for the whole 5 s, and
/// then went unnamed); on v1 one thread alone may sit in a cgroup.
///
/// A child cgroup and a thread are both named where both hold it: named alone, the child
/// cgroup sent the user to remove it, and `faultscale cleanup` then found the thread.
fn lasting_holder(dir: &Path) -> Option<String> {
    let child = fs::read_dir(dir).ok()?.flatten().find(|e| e.file_type().is_ok_and(|t| t.is_dir()));
    let child = child.map(|c| format!("the cgroup {}", c.file_name().to_string_lossy()));
    match (child, lasting_thread(dir)) {
        (Some(child), Some(thread)) => Some(format!("{child} and {thread}")),
        (child, thread) => child.or(thread),
    }
}

/// Threads of the cgroup: cgroup.threads on v2 (every cgroup has it), tasks on v1. A thread
/// this PID namespace cannot see is left out (v1) or listed as 0 (v2): neither is kept.
fn listed_threads(dir: &Path) -> Option<Vec<i32>> {
    let tids =
        fs::read_to_string(dir.join("cgroup.threads")).or_else(|_| fs::read_to_string(dir.join("tasks"))).ok()?;
    Some(tids.split_whitespace().filter_map(|t| t.parse::<i32>().ok()).filter(|&t| t > 0).collect())
}

/// What still holds a cgroup after the retries, where no thread listed counted as lasting:
/// with none listed at all, a process of another PID namespace (a run inside `unshare -p`,
/// the holder outside it), which plain EBUSY left unsaid.
fn unseen_holder(dir: &Path) -> Option<String> {
    match listed_threads(dir)?.first() {
        None => Some("a process outside this PID namespace, which cannot list it".into()),
        Some(tid) if procfs::process::Process::new(*tid).is_ok() => {
            Some(format!("thread {tid}, still exiting after 5 s"))
        }
        Some(tid) => Some(format!("thread {tid}, which this namespace's /proc does not show")),
    }
}

/// The first thread listed in the cgroup that is not leaving, named with its process.
fn lasting_thread(dir: &Path) -> Option<String> {
    listed_threads(dir)?.into_iter().find_map(|tid| {
        // /proc/TID answers for any thread, though only leaders are listed in /proc.
        let thread = procfs::process::Process::new(tid).ok()?;
        let stat = thread.stat().ok()?;
        let status = thread.status().ok()?;
        let sigkill = 1u64 << (libc::SIGKILL - 1);
        let leaving = stat.flags & PF_EXITING != 0
            || matches!(stat.state, 'Z' | 'X')
            || (status.sigpnd | status.shdpnd) & sigkill != 0;
        if leaving {
            return None;
        }
        let pid = status.tgid;
        if pid == tid {
            return Some(format!("process {pid} ({}), which is not exiting", stat.comm));
        }
        // The process's name, as ps shows it: the thread's own may be set apart.
        let comm = procfs::process::Process::new(pid).and_then(|p| p.stat()).map(|s| s.comm).unwrap_or(stat.comm);
        Some(format!("thread {tid} of process {pid} ({comm}), which is not exiting"))
    })
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

    #[test]
    fn cgroup_procs_and_use_hierarchy_are_read_from_a_fake_cgroupfs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("cgroup.procs"), "12\n 34\n\n").unwrap();
        assert_eq!(read_procs(dir.path()).unwrap(), ["12", "34"]);
        assert_eq!((process_count(dir.path()).unwrap(), has_processes(dir.path()).unwrap()), (2, true));
        std::fs::write(dir.path().join("cgroup.procs"), "").unwrap();
        assert!(!has_processes(dir.path()).unwrap());
        assert_eq!(read_use_hierarchy(dir.path()), None, "absent: v2, or a kernel that always charges up");
        for (text, read) in [("0\n", Some(false)), ("1\n", Some(true)), ("x", None)] {
            std::fs::write(dir.path().join("memory.use_hierarchy"), text).unwrap();
            assert_eq!(read_use_hierarchy(dir.path()), read, "{text:?}");
        }
        let gone = dir.path().join("gone");
        assert!(read_procs(&gone).is_err(), "a vanished cgroup is an error, not an empty one");
    }
}
