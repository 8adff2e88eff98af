//! A kernel file kept open and read again from its start. /proc and cgroupfs files are
//! generated at each read from offset 0, so a snapshot reads each with one `pread`
//! where opening it by path took six system calls (open, statx, lseek, read, read, close):
//! about 180 a slice, most of the harness's 1.7 ms per slice on a 2-CPU VM.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// One file, opened once. A file absent at opening stays absent: the files read this way
/// (a worker's /proc entries, its cgroup's counters) do not appear later. Any other failure to
/// open (no descriptor left, no permission) is an error naming the file: read as "absent" it
/// became a worker state of "unknown" and a false "did not stop" a slice later.
#[derive(Debug)]
pub struct Reread {
    file: Option<File>,
    buffer: Vec<u8>,
}

impl Reread {
    pub fn open(path: impl AsRef<Path>) -> std::io::Result<Reread> {
        let path = path.as_ref();
        let file = match File::open(path) {
            Ok(file) => Some(file),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(std::io::Error::new(e.kind(), format!("opening {}: {e}", path.display()))),
        };
        Ok(Reread { file, buffer: Vec::new() })
    }

    /// Whether the file was there when opened.
    pub fn exists(&self) -> bool {
        self.file.is_some()
    }

    /// The file's contents now; an error where it is absent, unreadable or not text.
    pub fn read(&mut self) -> std::io::Result<&str> {
        let Some(file) = &self.file else {
            return Err(std::io::Error::from(std::io::ErrorKind::NotFound));
        };
        // Every file read this way is one record of a seq_file (a cgroup file, /proc/stat,
        // schedstat, pressure), rendered whole at each read from offset 0: a read that leaves
        // the buffer short has ended it. Reading on to an empty read, as for any file, rendered
        // the file a second time to find its end (a pread past 0 walks it again): memory.stat's
        // and /proc/stat's formatting twice a snapshot. The buffer doubles past the longest
        // contents seen and stays, so one read is the rule.
        let mut filled = 0;
        loop {
            if self.buffer.len() < filled + 4096 {
                self.buffer.resize((filled + 4096).max(2 * self.buffer.len()), 0);
            }
            let read = file.read_at(&mut self.buffer[filled..], filled as u64)?;
            filled += read;
            if filled < self.buffer.len() {
                break;
            }
        }
        std::str::from_utf8(&self.buffer[..filled]).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_cannot_be_opened_is_an_error_naming_it_and_only_an_absent_one_is_absent() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("memory.stat");
        std::fs::write(&plain, "pgfault 1\n").unwrap();
        // ENOTDIR stands for every failure but absence (EMFILE at a low open-file limit is
        // driven through the binary in tests/scale.rs).
        let err = Reread::open(plain.join("pgfault")).unwrap_err();
        assert!(err.to_string().contains("memory.stat/pgfault"), "{err}");
        assert!(!Reread::open(dir.path().join("memory.events")).unwrap().exists());
    }

    #[test]
    fn a_file_is_read_whole_each_time_and_an_absent_one_stays_absent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.stat");
        let long = "pgfault 1\n".repeat(1000);
        std::fs::write(&path, &long).unwrap();
        let mut file = Reread::open(&path).unwrap();
        assert_eq!(file.read().unwrap(), long, "longer than one chunk, read whole");
        std::fs::write(&path, "pgfault 2\n").unwrap();
        assert_eq!(file.read().unwrap(), "pgfault 2\n", "read again from the start: the new contents");
        let mut absent = Reread::open(dir.path().join("memory.events")).unwrap();
        assert!(!absent.exists());
        std::fs::write(dir.path().join("memory.events"), "max 1\n").unwrap();
        assert_eq!(absent.read().unwrap_err().kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn proc_files_give_their_current_contents_at_each_read() {
        let mut stat = Reread::open("/proc/thread-self/schedstat").unwrap();
        let first: u64 = stat.read().unwrap().split_whitespace().next().unwrap().parse().unwrap();
        let cpu_ns = || {
            let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID).unwrap();
            t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
        };
        let spun_from = cpu_ns();
        while cpu_ns() < spun_from + 5_000_000 {}
        let second: u64 = stat.read().unwrap().split_whitespace().next().unwrap().parse().unwrap();
        assert!(second > first, "schedstat's time on CPU grew: {first} -> {second}");
    }
}
